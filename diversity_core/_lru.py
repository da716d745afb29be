"""The one in-memory cache of the core and the app: least recently used, bounded in bytes.

:class:`MemoryCache` is the feature cache of :func:`diversity_core.featurizers.featurize` and,
through ``ui.cache.SharedCache``, every pool of the app. It is

- **bounded in bytes**, a share of :func:`~diversity_core._config.memory_budget` read again at
  every insertion (or a fixed number of bytes), and optionally in entries; the least recently
  used entries go first, and a value larger than the whole cache is returned but not kept;
- **counting every buffer once** (:func:`nbytes`): an entry's size is not fixed when it is
  inserted, as in ``cachetools``, but follows the other entries. Two entries holding one array (a
  working view that *is* the loaded dataset, a slice of a cached matrix) count it once, and it
  stays counted until the last of them goes. ``cachetools.Cache`` sizes each value once, on
  insertion, and sums those sizes, so it counts a shared buffer twice, or not at all when the
  entry that paid for it goes first; this class keeps, for every buffer, how many entries hold it;
- **thread-safe** (one lock guards every access) and **computing each missing key once**
  (:meth:`MemoryCache.get_or_compute` through :func:`~diversity_core._inflight.compute_once`):
  threads asking for a key being computed wait for that result;
- **read-only**: every numpy array inside a kept value (sparse matrices' arrays included) is
  made read-only, so no caller changes what the others get;
- **aware of its users** (optional): given ``user`` (a function naming who asks now: the app
  passes the Streamlit session), an entry remembers who used it, and a ``private`` entry goes
  when the last of them is released (:meth:`MemoryCache.release_user`).

Nothing here imports Streamlit.
"""

from __future__ import annotations

import dataclasses
import mmap
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Optional

import numpy as np
import scipy.sparse as sp

from ._config import memory_budget
from ._inflight import MISSING, compute_once

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


def _array_part(a: np.ndarray) -> tuple:
    """``(owner, bytes)``: the object holding ``a``'s memory and its size (a view holds all of it alive).

    The owner is the last array of ``a``'s ``base`` chain, or the bytes or buffer under it; a
    memory-mapped array holds nothing (the operating system pages its file in and out).
    """
    if _mapped(a):
        return a, 0
    root = a
    while isinstance(root, np.ndarray) and isinstance(root.base, np.ndarray):
        root = root.base
    under = root.base
    if isinstance(under, (bytes, bytearray)):
        return under, len(under)
    return root, int(root.nbytes)


def _walk(value: Any, parts: dict, visited: set, depth: int) -> None:
    """Add ``id(owner) -> (owner, bytes)`` to ``parts`` for every piece of memory ``value`` holds."""
    if value is None or isinstance(value, (bool, int, float, complex)) or id(value) in visited:
        return
    visited.add(id(value))
    if isinstance(value, np.ndarray):
        owner, size = _array_part(value)
        parts.setdefault(id(owner), (owner, size))
        if value.dtype == object and depth < _MAX_DEPTH:
            for x in value.flat:
                _walk(x, parts, visited, depth + 1)
        return
    if isinstance(value, (bytes, bytearray)):
        parts.setdefault(id(value), (value, len(value)))
        return
    if isinstance(value, memoryview):
        parts.setdefault(id(value), (value, int(value.nbytes)))
        return
    if isinstance(value, str):
        parts.setdefault(id(value), (value, sys.getsizeof(value)))
        return
    if sp.issparse(value):
        for name in _SPARSE_ARRAYS:
            a = getattr(value, name, None)
            if isinstance(a, np.ndarray):
                _walk(a, parts, visited, depth + 1)
        return
    if type(value).__module__.startswith("pandas") and hasattr(value, "memory_usage"):
        usage = value.memory_usage(deep=True)
        parts.setdefault(id(value), (value, int(usage.sum()) if hasattr(usage, "sum") else int(usage)))
        return
    parts.setdefault(id(value), (value, sys.getsizeof(value)))
    if depth >= _MAX_DEPTH:
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        children = [x for kv in value.items() for x in kv]
    elif isinstance(value, (list, tuple, set, frozenset)):
        children = value
    else:
        attrs = getattr(value, "__dict__", None)
        children = list(attrs.values()) if isinstance(attrs, dict) else ()
    for child in children:
        _walk(child, parts, visited, depth + 1)


def _parts(value: Any) -> dict:
    """``{id(owner): (owner, bytes)}``: every piece of memory reachable from ``value``, each once."""
    parts: dict = {}
    _walk(value, parts, set(), 0)
    return parts


def nbytes(value: Any, *, exclude: tuple = ()) -> int:
    """Bytes a value holds in memory, each buffer once, not counting what ``exclude`` already holds.

    Parameters
    ----------
    value : object
        A numpy array (the whole buffer it views: a view keeps its base alive; zero when
        memory-mapped), a sparse matrix (its arrays), a DataFrame or Series
        (``memory_usage(deep=True)``), bytes, a string, or a dataclass, dict, list, tuple or set
        of those (the sum over their contents, each buffer once).
    exclude : tuple, default=()
        Objects whose memory is not counted (and everything inside them).

    Returns
    -------
    int
        The size in bytes.

    Examples
    --------
    >>> import numpy as np
    >>> nbytes(np.zeros((10, 10)))
    800
    >>> a = np.zeros(100)
    >>> nbytes(a[:10]) == a.nbytes  # a view keeps all of its base alive
    True
    """
    skip = _parts(tuple(exclude)) if exclude else {}
    return sum(size for key, (_owner, size) in _parts(value).items() if key not in skip)


# ------------------------------------------------------------------------------------------
# read-only values
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


# ------------------------------------------------------------------------------------------
# the cache
# ------------------------------------------------------------------------------------------
class _Entry:
    """A kept value, the memory it holds (``parts``: owner id -> (owner, bytes)) and the users that used it."""

    __slots__ = ("value", "parts", "private", "users")

    def __init__(self, value: Any, parts: dict, private: bool, users: set):
        self.value, self.parts, self.private, self.users = value, parts, private, users


class MemoryCache:
    """A least-recently-used cache bounded in bytes, each buffer counted once, thread-safe.

    Parameters
    ----------
    name : str
        The cache's name (messages, ``info``).
    share : float, optional
        Share of :func:`~diversity_core._config.memory_budget` the cache may hold; read again at
        every insertion, so the cache follows a changed budget (the least recently used entries
        that no longer fit go at the next insertion).
    max_bytes : int, optional
        A fixed limit in bytes instead of a share. Give exactly one of ``share`` and ``max_bytes``.
    max_entries : int, optional
        Also keep at most this many entries.
    entry_overhead : int, default 0
        Bytes counted for every entry on top of its value (its key and the bookkeeping), so a
        cache of tiny values stays bounded in entries too.
    user : callable, optional
        ``user()`` names who asks now (None: nobody in particular); each entry remembers the
        users that put or read it, for :meth:`release_user`.

    Raises
    ------
    ValueError
        Both or neither of ``share`` and ``max_bytes``.

    Notes
    -----
    The size of the cache is the sum, over the distinct buffers its values hold (:func:`nbytes`'s
    owners: an array's base, a sparse matrix's arrays, bytes, strings, a DataFrame), of their
    sizes, plus ``entry_overhead`` per entry. Each buffer carries the number of entries holding
    it: it is counted when the first of them comes and uncounted when the last goes. Every
    operation is O(parts of the value) under the lock; a computation runs outside it.

    Examples
    --------
    >>> import numpy as np
    >>> c = MemoryCache("demo", max_bytes=1000)
    >>> a = np.zeros(100)  # 800 bytes
    >>> c.put("a", a) and c.put("b", a[:10])  # a view of the same buffer: counted once
    True
    >>> c.info()
    {'entries': 2, 'bytes': 800, 'limit_bytes': 1000}
    >>> c.put("c", np.ones(50))  # 400 more bytes: "a" goes, then "b", which still holds a's buffer
    True
    >>> c.info()
    {'entries': 1, 'bytes': 400, 'limit_bytes': 1000}
    """

    def __init__(self, name: str, share: Optional[float] = None, *, max_bytes: Optional[int] = None,
                 max_entries: Optional[int] = None, entry_overhead: int = 0,
                 user: Optional[Callable[[], Optional[Hashable]]] = None):
        if (share is None) == (max_bytes is None):
            raise ValueError("give exactly one of share and max_bytes.")
        self.name = name
        self.share = share
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.entry_overhead = int(entry_overhead)
        self._user = user
        self._lock = threading.Lock()
        self._data: OrderedDict = OrderedDict()  # least to most recently used
        self._held: dict = {}  # id(owner) -> [entries holding it, bytes, owner]
        self._bytes = 0
        self._flights: dict = {}

    def limit(self) -> int:
        """Bytes this cache may hold now."""
        if self.max_bytes is not None:
            return max(1, int(self.max_bytes))
        return max(1, int(memory_budget() * self.share))

    # -- bookkeeping (the caller holds the lock) ---------------------------------------------
    def _remove(self, key: Hashable) -> None:
        entry = self._data.pop(key)
        self._bytes -= self.entry_overhead
        for part in entry.parts:
            held = self._held[part]
            held[0] -= 1
            if held[0] == 0:
                self._bytes -= held[1]
                del self._held[part]

    def _insert(self, key: Hashable, entry: _Entry) -> None:
        self._data[key] = entry
        self._bytes += self.entry_overhead
        for part, (owner, size) in entry.parts.items():
            held = self._held.get(part)
            if held is None:
                self._held[part] = [1, size, owner]  # the owner stays referenced: its id stays its own
                self._bytes += size
            else:
                held[0] += 1

    def _evict(self) -> None:
        """Drop the least recently used entries until the cache fits its limits (the newest stays)."""
        limit = self.limit()
        while len(self._data) > 1 and (self._bytes > limit
                                       or (self.max_entries is not None and len(self._data) > self.max_entries)):
            self._remove(next(iter(self._data)))

    def _current_user(self) -> Optional[Hashable]:
        return None if self._user is None else self._user()

    def _hit(self, key: Hashable) -> Any:
        """The value under ``key``, marked as most recently used and as used by the current user; else MISSING."""
        entry = self._data.get(key)
        if entry is None:
            return MISSING
        self._data.move_to_end(key)
        user = self._current_user()
        if user is not None:
            entry.users.add(user)
        return entry.value

    # -- the mapping -------------------------------------------------------------------------
    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (``default`` when absent), marked as most recently used."""
        with self._lock:
            value = self._hit(key)
        return default if value is MISSING else value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def put(self, key: Hashable, value: Any, *, private: bool = False) -> bool:
        """Keep ``value`` (its arrays made read-only) under ``key``; False when larger than the whole cache.

        Every buffer ``value`` holds counts, once however many entries hold it. ``private``: the
        entry goes when the last user that used it is released (:meth:`release_user`).
        """
        _freeze(value, set())
        parts = _parts(value)
        alone = self.entry_overhead + sum(size for _owner, size in parts.values())
        user = self._current_user()
        with self._lock:
            if key in self._data:
                self._remove(key)
            if alone > self.limit():
                return False
            self._insert(key, _Entry(value, parts, private, {user} if user is not None else set()))
            self._evict()
        return True

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any], *, private: bool = False) -> Any:
        """The value under ``key``, computed by ``compute()`` on a miss, once whoever asks meanwhile.

        Threads asking for ``key`` while it is computed wait for that result; when the
        computation raises an error they raise it too, when it is stopped otherwise (a
        ``BaseException``) the next waiting thread computes
        (:func:`~diversity_core._inflight.compute_once`). ``private``: as in :meth:`put`.
        """
        return compute_once(key, self._lock, self._flights, lambda: self._hit(key), compute,
                            lambda value: self.put(key, value, private=private))

    def clear(self, prefix: Optional[Hashable] = None) -> None:
        """Forget every entry, or those whose key is a tuple starting with ``prefix``."""
        with self._lock:
            keys = [k for k in self._data if prefix is None or (isinstance(k, tuple) and k and k[0] == prefix)]
            for key in keys:
                self._remove(key)

    def release_user(self, user: Hashable) -> int:
        """Forget that ``user`` used the entries; drop the private ones no other user used. Returns how many went."""
        with self._lock:
            gone = []
            for key, entry in self._data.items():
                if user in entry.users:
                    entry.users.discard(user)
                    if entry.private and not entry.users:
                        gone.append(key)
            for key in gone:
                self._remove(key)
        return len(gone)

    def values(self) -> list:
        """The kept values, least to most recently used (a snapshot; none is marked as used)."""
        with self._lock:
            return [entry.value for entry in self._data.values()]

    def info(self) -> dict:
        """``entries``, ``bytes`` held (every buffer once) and ``limit_bytes``."""
        with self._lock:
            return {"entries": len(self._data), "bytes": int(self._bytes), "limit_bytes": int(self.limit())}


__all__ = ["MemoryCache", "nbytes"]
