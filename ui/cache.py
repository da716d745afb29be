"""Byte-bounded caches shared by every session, computing each missing value once.

Streamlit's ``st.cache_data``/``st.cache_resource`` bound a cache by its number of entries, so
eight cached feature matrices may hold eight gigabytes. Here every cached function belongs to a
**pool**: a :class:`SharedCache`, the core's one in-memory cache
(:class:`diversity_core.MemoryCache`, also the core's feature cache) with the app's sessions, a
spinner and fresh containers. A pool is a least-recently-used mapping bounded in **bytes**, where
the size of a value is what it holds (:func:`diversity_core.nbytes`: numpy buffers, the three
arrays of a sparse matrix, a DataFrame's ``memory_usage(deep=True)``, bytes and strings, and
everything inside result dataclasses, dicts, lists and tuples). Each pool takes a share of the one
memory budget (:func:`diversity_core.memory_budget`, half the machine's memory unless set):

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

**Every copy counts** (issue 40 item 10). A pool counts every buffer its values hold, once
however many of its entries hold it: a working view that *is* the loaded dataset counts that
dataset, since the entry keeps it alive after the session dropped it (these were counted as
nothing when they were "the call's argument", and every upload stayed in memory). A view of an
array counts the whole array it views. Memory-mapped arrays count zero: the operating system
pages them in from their file and drops them under memory pressure.

**Shared by every session.** The pools live at module level, like ``st.cache_resource``: keys
name content (a view's key, a dataset's content hash, the settings), never a session, and each
pool's lock guards every access (Streamlit runs each session's script in its own thread).

**A session's own entries go with it.** An entry computed from one visitor's upload
(:func:`register_private`: :mod:`ui.data.uploads` names what comes from an upload) remembers the
sessions that used it; when a session ends (a session-scoped ``st.cache_resource`` token,
released by Streamlit when the session disconnects: :func:`track_session`), the private
entries no other live session used are dropped, and so is the session's loaded dataset.

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

import functools
import gc
import inspect
import threading
import weakref
from typing import Any, Callable, Hashable, Optional

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from diversity_core import MISSING, MemoryCache
from diversity_core import nbytes as nbytes  # the pools' size rule (the core's), named here too

#: Share of the memory budget each pool may hold (see the module docstring).
POOL_SHARES = {"data": 0.20, "features": 0.10, "results": 0.05, "drawings": 0.01, "tasks": 0.05}
#: Bytes counted for every entry on top of its value (its key and the cache's bookkeeping), so a
#: pool of tiny values (None, a short string) stays bounded in entries too.
ENTRY_OVERHEAD = 512
#: Deepest nesting the containers of a returned value are copied to.
_MAX_DEPTH = 32


# ------------------------------------------------------------------------------------------
# fresh containers on every return
# ------------------------------------------------------------------------------------------
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
#: Every cache made (the pools and the task stores), for :func:`end_session`.
_instances: weakref.WeakSet = weakref.WeakSet()


def _session() -> Optional[str]:
    """The current session, looked up at each call (tests replace :func:`session_id`)."""
    return session_id()


class SharedCache(MemoryCache):
    """A pool: the core's :class:`~diversity_core.MemoryCache` with the app's sessions, spinner and fresh containers.

    The core class bounds it in bytes, counting every buffer its values hold once however many
    entries hold it (a view that is a whole loaded dataset, an argument of the call, counts that
    dataset: the entry keeps it alive), keeps it thread-safe and computes each missing key once.
    Here its users are the Streamlit sessions: an entry made from one session's data
    (``private``, see :func:`register_private`) goes when the last session that used it ends
    (:func:`end_session`); every value is returned with fresh dicts, lists and tuples.

    Parameters
    ----------
    name : str
        The pool's name (messages, :func:`cache_info`).
    share : float, optional
        Share of :func:`~diversity_core.memory_budget` the pool may hold; read again at every
        insertion, so the pool follows a changed budget.
    max_bytes : int, optional
        A fixed limit in bytes instead of a share (tests).
    max_entries : int, optional
        Also keep at most this many entries (least recently used dropped first).
    """

    def __init__(self, name: str, share: Optional[float] = None, *, max_bytes: Optional[int] = None,
                 max_entries: Optional[int] = None):
        super().__init__(name, share, max_bytes=max_bytes, max_entries=max_entries,
                         entry_overhead=ENTRY_OVERHEAD, user=_session)
        _instances.add(self)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (``default`` when absent), marked as most recently used."""
        value = super().get(key, MISSING)
        return default if value is MISSING else _fresh(value)

    def put(self, key: Hashable, value: Any, *, exclude: tuple = (), private: bool = False) -> bool:
        """Keep ``value`` (its arrays made read-only) under ``key``; False when larger than the pool.

        Every buffer ``value`` holds counts, once per pool (``exclude`` is accepted for
        compatibility and ignored: what a call's arguments hold is kept alive by the entry, so
        it counts). ``private``: made from one session's data (freed when its sessions end).
        """
        del exclude
        return super().put(key, value, private=private)

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any], *, spinner: Optional[str] = None,
                       exclude: tuple = (), private: bool = False) -> Any:
        """The value under ``key``, computed by ``compute()`` on a miss (once, whoever asks meanwhile).

        ``spinner`` is drawn while this call waits or computes (never on a hit). ``private``: as
        in :meth:`put`.
        """
        del exclude
        value = super().get(key, MISSING)
        if value is MISSING:
            if spinner:
                with st.spinner(spinner):
                    value = super().get_or_compute(key, compute, private=private)
            else:
                value = super().get_or_compute(key, compute, private=private)
        return _fresh(value)

    def release_session(self, sid: str) -> int:
        """Forget that session ``sid`` used the entries; drop the private ones no other session used."""
        return self.release_user(sid)


# ------------------------------------------------------------------------------------------
# sessions
# ------------------------------------------------------------------------------------------
_private_rules: list = []


def register_private(rule: Callable[[Any], bool]) -> None:
    """Treat a cached call as one session's own when ``rule(argument)`` holds for one of its arguments.

    :mod:`ui.data.uploads` registers "a dataset, search result or view of an upload": what is
    computed from a visitor's upload serves that visitor's session, and goes when it ends.
    """
    if rule not in _private_rules:
        _private_rules.append(rule)


def is_private(arguments) -> bool:
    """Whether a call with these arguments makes a session's own entry (:func:`register_private`)."""
    return any(rule(a) for a in arguments for rule in list(_private_rules))


def session_id() -> Optional[str]:
    """The id of the session whose script runs in this thread (None outside a script run)."""
    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def end_session(sid: str) -> int:
    """Release session ``sid`` from every cache: its private entries go; returns how many went.

    Called when the session ends (:func:`track_session`); what the freed entries held is
    returned to the system (:func:`ui.data.uploads.release_memory` does the same for a refused
    upload).
    """
    gone = sum(c.release_session(sid) for c in list(_instances))
    if gone:
        _trim()
    return gone


def _trim() -> None:
    """Collect garbage and give freed heap pages back to the system (glibc ``malloc_trim``)."""
    import ctypes

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


class _SessionToken:
    """Lives as long as one session (a session-scoped resource); its release ends the session here."""

    def __init__(self, sid: str, state: Any):
        self.sid, self.state = sid, state


#: Session-state keys dropped when a session ends: its loaded dataset (reloaded, from the upload
#: Streamlit still holds, if the visitor's browser reconnects) and the source it was loaded from.
SESSION_DROPS = ("dataset", "_source_tried")


def _session_ended(token: _SessionToken) -> None:
    """A session disconnected: free its private cache entries and its loaded dataset."""
    state = token.state
    for key in SESSION_DROPS:
        try:
            if state is not None and key in state:
                del state[key]
        except Exception:  # noqa: BLE001 - a state already torn down holds nothing
            pass
    token.state = None
    end_session(token.sid)


def _new_token() -> _SessionToken:
    ctx = get_script_run_ctx(suppress_warning=True)
    return _SessionToken(ctx.session_id, ctx.session_state)


try:  # session-scoped resources came with Streamlit 1.5x; before them a session's end is not seen here
    _session_token: Optional[Callable] = st.cache_resource(scope="session", on_release=_session_ended,
                                                           show_spinner=False)(_new_token)
except TypeError:  # pragma: no cover - an older Streamlit
    _session_token = None


def track_session() -> None:
    """Make this run's session known, so that its end frees what it alone used (once per run).

    A session-scoped ``st.cache_resource`` holds a token per session; Streamlit releases it
    when the session disconnects, and :func:`_session_ended` then drops the session's loaded
    dataset and the private entries of every cache (:func:`end_session`).
    """
    if _session_token is not None and session_id() is not None:
        _session_token()


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
                                                  spinner=spinner, private=is_private(bound.arguments.values()))

        wrapper.clear = lambda: pool(pool_name).clear(name)
        wrapper.pool = pool_name
        return wrapper

    return decorate
