"""Byte-bounded caches shared by every session, computing each missing value once.

Streamlit's ``st.cache_data``/``st.cache_resource`` bound a cache by its number of entries, so
eight cached feature matrices may hold eight gigabytes. Here every cached function belongs to a
**pool**: a least-recently-used :class:`cachetools.LRUCache` bounded in **bytes**, where the size
of a value is what it holds (:func:`nbytes`: numpy buffers, the three arrays of a sparse
matrix, a DataFrame's ``memory_usage(deep=True)``, bytes and strings, and everything inside
result dataclasses, dicts, lists and tuples). Each pool takes a share of the one memory budget
(:func:`diversity_core._config.memory_budget`, half the machine's memory unless set):

==========  =====  ============================================================================
pool        share  holds
==========  =====  ============================================================================
data        0.20   loaded demos and files, searched datasets, working views (:mod:`ui.data`)
features    0.10   preprocessed features (:mod:`ui.compute`; raw features live in the core's
                   feature cache, :data:`diversity_core.featurizers.CACHE_SHARE` = 0.25)
results     0.05   spectra, baselines, heatmap matrices, PCA maps, scale notes
drawings    0.01   molecule drawings, PNG bytes (:mod:`ui.gallery`)
tasks       0.05   per kind of long task (magnitude, RND, UMAP, sweeps, comparisons; :mod:`ui.tasks`)
==========  =====  ============================================================================

With the core's feature cache the app keeps at most about 0.7 of the budget in caches (the
task pools count once per kind). A value larger than its whole pool is returned but not kept;
a changed budget (``set_config``, ``DIVERSITY_MEMORY_BUDGET``) resizes a pool at its next
insertion, dropping the least recently used entries that no longer fit.

Arrays reachable from a call's arguments are not counted again in its result (a view that is
the whole loaded dataset costs nothing beyond it). Memory-mapped arrays count zero: the
operating system pages them in from their file and drops them under memory pressure.

**Shared by every session.** The pools live at module level, like ``st.cache_resource``: keys
name content (a view's key, a dataset's content hash, the settings), never a session, and each
pool's lock guards every access (Streamlit runs each session's script in its own thread).

**In-flight de-duplication.** When several sessions ask for the same missing key at once, the
first computes it and the others wait for its result instead of computing it again. When the
first one fails with an error, the others raise that error too; when it is stopped instead
(a rerun or a Cancel press stops a session's script), the next waiting session computes.

**Read-only results.** Every numpy array inside a cached value is made read-only; dicts, lists
and tuples are copied (shallowly, their arrays shared) on every return, so a page may ``pop``
from a returned dict without changing what other sessions get, as with ``st.cache_data``.

A spinner (``spinner=``) is drawn only on a miss, as ``show_spinner`` of Streamlit's caches.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import mmap
import sys
import threading
from typing import Any, Callable, Hashable, Optional

import numpy as np
import scipy.sparse as sp
import streamlit as st
from cachetools import LRUCache

from diversity_core._config import memory_budget
from diversity_core._inflight import MISSING, compute_once

#: Share of the memory budget each pool may hold (see the module docstring).
POOL_SHARES = {"data": 0.20, "features": 0.10, "results": 0.05, "drawings": 0.01, "tasks": 0.05}
#: Bytes counted for every entry on top of its value (its key and the cache's bookkeeping), so a
#: pool of tiny values (None, a short string) stays bounded in entries too.
ENTRY_OVERHEAD = 512
#: The arrays a scipy sparse matrix or array holds, by format (csr/csc/bsr, coo, dia).
_SPARSE_ARRAYS = ("data", "indices", "indptr", "row", "col", "offsets")
#: Deepest nesting :func:`nbytes` and the read-only pass follow (deeper parts count as their shell).
_MAX_DEPTH = 32


# ------------------------------------------------------------------------------------------
# sizes
# ------------------------------------------------------------------------------------------
def _mapped(a: np.ndarray) -> bool:
    """Whether ``a`` views a memory-mapped file (``np.load(mmap_mode=...)``, ``np.memmap``)."""
    base = a
    while base is not None:
        if isinstance(base, (np.memmap, mmap.mmap)):
            return True
        base = getattr(base, "base", None)
    return False


def _views_seen(a: np.ndarray, seen: set) -> bool:
    """Whether ``a`` is a view into an array already counted or excluded (its memory is theirs)."""
    base = a.base
    while isinstance(base, np.ndarray):
        if id(base) in seen:
            return True
        base = base.base
    return False


def _size(value: Any, seen: set, depth: int) -> int:
    """Bytes held by ``value`` beyond the objects whose ids are in ``seen`` (which it extends)."""
    if value is None or isinstance(value, (bool, int, float, complex)):
        return 0
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        if _mapped(value) or _views_seen(value, seen):
            return 0
        n = int(value.nbytes)
        if value.dtype == object and depth < _MAX_DEPTH:
            n += sum(_size(x, seen, depth + 1) for x in value.flat)
        return n
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, memoryview):
        return int(value.nbytes)
    if isinstance(value, str):
        return sys.getsizeof(value)
    if sp.issparse(value):
        parts = [getattr(value, name, None) for name in _SPARSE_ARRAYS]
        return sum(_size(a, seen, depth + 1) for a in parts if isinstance(a, np.ndarray))
    if type(value).__module__.startswith("pandas") and hasattr(value, "memory_usage"):
        usage = value.memory_usage(deep=True)
        return int(usage.sum()) if hasattr(usage, "sum") else int(usage)
    if depth >= _MAX_DEPTH:
        return sys.getsizeof(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sys.getsizeof(value) + sum(_size(getattr(value, f.name), seen, depth + 1)
                                          for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(_size(k, seen, depth + 1) + _size(v, seen, depth + 1)
                                          for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sys.getsizeof(value) + sum(_size(x, seen, depth + 1) for x in value)
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return sys.getsizeof(value) + sum(_size(v, seen, depth + 1) for v in attrs.values())
    return sys.getsizeof(value)


def _collect(value: Any, seen: set, depth: int) -> None:
    """Add the ids of the arrays and containers reachable from ``value`` to ``seen``.

    Sequences of scalars or strings (a dataset's texts and ids) are taken whole, not walked: a
    result sharing some of those strings counts them (an overestimate), and excluding a large
    argument stays O(1) per sequence.
    """
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return
    if sp.issparse(value):
        for name in _SPARSE_ARRAYS:
            a = getattr(value, name, None)
            if isinstance(a, np.ndarray):
                seen.add(id(a))
        return
    if depth >= _MAX_DEPTH:
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple)):
        first = value[0] if len(value) else None
        children = [] if first is None or isinstance(first, (bool, int, float, str, bytes)) else list(value)
    else:
        attrs = getattr(value, "__dict__", None)
        children = list(attrs.values()) if isinstance(attrs, dict) else []
    for child in children:
        _collect(child, seen, depth + 1)


def nbytes(value: Any, *, exclude: tuple = ()) -> int:
    """Bytes a cached value holds in memory, not counting what ``exclude`` already holds.

    Parameters
    ----------
    value : object
        A numpy array (its buffer; zero when memory-mapped), a sparse matrix (its arrays), a
        DataFrame or Series (``memory_usage(deep=True)``), bytes, a string, or a dataclass,
        dict, list, tuple or set of those (the sum over their contents, each object once).
    exclude : tuple, default=()
        Objects held elsewhere (a call's arguments): they and everything inside them count zero.

    Returns
    -------
    int
        The size in bytes.

    Examples
    --------
    >>> nbytes(np.zeros((10, 10)))
    800
    """
    seen: set = set()
    for obj in exclude:
        _collect(obj, seen, 0)
    return _size(value, seen, 0)


# ------------------------------------------------------------------------------------------
# read-only results
# ------------------------------------------------------------------------------------------
def _freeze(value: Any, seen: set, depth: int = 0) -> None:
    """Make every numpy array reachable from ``value`` read-only."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
        return
    if sp.issparse(value):
        for name in _SPARSE_ARRAYS:
            a = getattr(value, name, None)
            if isinstance(a, np.ndarray):
                a.setflags(write=False)
        return
    if depth >= _MAX_DEPTH:
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = list(value)
    else:
        return
    for child in children:
        _freeze(child, seen, depth + 1)


def _fresh(value: Any, depth: int = 0) -> Any:
    """``value`` with its dicts, lists and tuples copied (arrays and other objects shared)."""
    if depth >= _MAX_DEPTH:
        return value
    if type(value) is dict:
        return {k: _fresh(v, depth + 1) for k, v in value.items()}
    if type(value) is list:
        return [_fresh(v, depth + 1) for v in value]
    if type(value) is tuple:
        return tuple(_fresh(v, depth + 1) for v in value)
    return value


# ------------------------------------------------------------------------------------------
# pools
# ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Entry:
    """A cached value and the bytes counted for it."""

    value: Any
    size: int


class SharedCache:
    """A least-recently-used cache bounded in bytes, thread-safe, computing each missing key once.

    Parameters
    ----------
    name : str
        The pool's name (messages, :func:`cache_info`).
    share : float, optional
        Share of :func:`~diversity_core._config.memory_budget` the pool may hold; read again at
        every insertion, so the pool follows a changed budget.
    max_bytes : int, optional
        A fixed limit in bytes instead of a share (tests).
    max_entries : int, optional
        Also keep at most this many entries (least recently used dropped first).
    """

    def __init__(self, name: str, share: Optional[float] = None, *, max_bytes: Optional[int] = None,
                 max_entries: Optional[int] = None):
        if (share is None) == (max_bytes is None):
            raise ValueError("give exactly one of share and max_bytes.")
        self.name = name
        self.share = share
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._data: LRUCache = LRUCache(maxsize=self.limit(), getsizeof=lambda e: e.size)
        self._flights: dict = {}

    def limit(self) -> int:
        """Bytes this pool may hold now."""
        if self.max_bytes is not None:
            return max(1, int(self.max_bytes))
        return max(1, int(memory_budget() * self.share))

    def _resize(self) -> None:
        """Follow a changed budget: keep the most recent entries that fit (caller holds the lock)."""
        limit = self.limit()
        if self._data.maxsize == limit:
            return
        new = LRUCache(maxsize=limit, getsizeof=lambda e: e.size)
        for key in list(self._data):  # least to most recently used: re-inserting keeps the order
            entry = self._data[key]
            if entry.size <= limit:
                new[key] = entry
        self._data = new

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (``default`` when absent), marked as most recently used."""
        with self._lock:
            entry = self._data.get(key)
        return default if entry is None else _fresh(entry.value)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def put(self, key: Hashable, value: Any, *, exclude: tuple = ()) -> bool:
        """Keep ``value`` (its arrays made read-only) under ``key``; False when larger than the pool."""
        _freeze(value, set())
        size = ENTRY_OVERHEAD + nbytes(value, exclude=exclude)
        with self._lock:
            self._resize()
            if size > self._data.maxsize:
                self._data.pop(key, None)
                return False
            self._data[key] = _Entry(value, size)
            if self.max_entries is not None:
                while len(self._data) > self.max_entries:
                    self._data.popitem()
        return True

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any], *, spinner: Optional[str] = None,
                       exclude: tuple = ()) -> Any:
        """The value under ``key``, computed by ``compute()`` on a miss (once, whoever asks meanwhile).

        ``spinner`` is drawn while this call waits or computes (never on a hit). ``exclude``:
        objects not counted in the value's size (the call's arguments).
        """
        with self._lock:
            entry = self._data.get(key)
        if entry is not None:
            return _fresh(entry.value)
        if spinner:
            with st.spinner(spinner):
                return _fresh(self._compute_once(key, compute, exclude))
        return _fresh(self._compute_once(key, compute, exclude))

    def _compute_once(self, key: Hashable, compute: Callable[[], Any], exclude: tuple) -> Any:
        """Compute ``key``, or wait for the thread already computing it (:func:`~diversity_core._inflight.compute_once`)."""

        def lookup():
            entry = self._data.get(key)
            return MISSING if entry is None else entry.value

        return compute_once(key, self._lock, self._flights, lookup, compute,
                            lambda value: self.put(key, value, exclude=exclude))

    def clear(self, prefix: Optional[Hashable] = None) -> None:
        """Forget every entry, or those whose key is a tuple starting with ``prefix``."""
        with self._lock:
            if prefix is None:
                self._data.clear()
                return
            for key in [k for k in self._data if isinstance(k, tuple) and k and k[0] == prefix]:
                del self._data[key]

    def values(self) -> list:
        """The cached values, least to most recently used (a snapshot; none is marked as used)."""
        with self._lock:
            return [entry.value for entry in self._data.values()]

    def info(self) -> dict:
        """``entries``, ``bytes`` held and ``limit_bytes``."""
        with self._lock:
            return {"entries": len(self._data), "bytes": int(self._data.currsize),
                    "limit_bytes": int(self._data.maxsize)}


_pools_lock = threading.Lock()
_pools: dict = {}


def pool(name: str) -> SharedCache:
    """The process-wide pool ``name`` (one of :data:`POOL_SHARES`), created on first use."""
    if name not in POOL_SHARES:
        raise ValueError(f"unknown cache pool {name!r}; choose one of: {', '.join(POOL_SHARES)}.")
    with _pools_lock:
        if name not in _pools:
            _pools[name] = SharedCache(name, POOL_SHARES[name])
        return _pools[name]


def cache_info() -> dict:
    """Every pool's :meth:`SharedCache.info`, by name (the pools used so far)."""
    with _pools_lock:
        pools = dict(_pools)
    return {name: p.info() for name, p in pools.items()}


def clear_caches() -> None:
    """Forget every cached value of every pool."""
    with _pools_lock:
        pools = list(_pools.values())
    for p in pools:
        p.clear()


# ------------------------------------------------------------------------------------------
# the decorator
# ------------------------------------------------------------------------------------------
def _hashable(value: Any, hash_funcs: dict, name: str, where: str) -> Hashable:
    """A hashable stand-in for an argument: ``hash_funcs`` by type, else the value itself."""
    for cls, fn in hash_funcs.items():
        if isinstance(value, cls):
            return (cls.__name__, fn(value))
    if isinstance(value, list):
        return ("list", tuple(_hashable(v, hash_funcs, name, where) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _hashable(v, hash_funcs, name, where)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{where}: argument {name!r} ({type(value).__name__}) cannot be a cache key; give "
                        f"hash_funcs for its type, or name the parameter '_{name}' to leave it out.") from None
    return value


def shared_cache(pool_name: str, *, spinner: Optional[str] = None, hash_funcs: Optional[dict] = None):
    """Cache a function's results in the byte-bounded, shared pool ``pool_name``.

    Parameters
    ----------
    pool_name : str
        One of :data:`POOL_SHARES` (``"data"``, ``"features"``, ``"results"``, ``"drawings"``,
        ``"tasks"``).
    spinner : str, optional
        Text of the spinner drawn on a miss (nothing on a hit).
    hash_funcs : dict, optional
        ``{type: fn}``: arguments of that type are keyed by ``fn(argument)`` (e.g. a view by its
        key), as in Streamlit's caches. Parameters whose names start with ``_`` are left out of
        the key; every other argument must be hashable (lists and dicts are converted).

    Returns
    -------
    callable
        The decorator. The wrapped function has ``clear()`` (forget its results) and ``pool``.

    Notes
    -----
    The key is the function's qualified name and its bound arguments, defaults applied, so
    ``f(x)`` and ``f(x, k=default)`` share one entry.
    """
    hash_funcs = dict(hash_funcs or {})

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func)
        name = f"{func.__module__}.{func.__qualname__}"

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            key = (name,) + tuple(_hashable(v, hash_funcs, p, name)
                                  for p, v in bound.arguments.items() if not p.startswith("_"))
            return pool(pool_name).get_or_compute(key, lambda: func(*bound.args, **bound.kwargs),
                                                  spinner=spinner, exclude=tuple(bound.arguments.values()))

        wrapper.clear = lambda: pool(pool_name).clear(name)
        wrapper.pool = pool_name
        return wrapper

    return decorate
