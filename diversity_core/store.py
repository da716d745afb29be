"""The result store: expensive results kept on disk, shared by the CLI, the Python API and the app.

Features from a model featurizer take a minute for a thousand images; the second run of the same
command, a new app session or a notebook reads them back in milliseconds. An entry is keyed by
what determines it: the data's content hash, the featurizer or kernel and its settings, and a
version (this package's and the model's). :func:`~diversity_core.featurizers.featurize` uses the
store for the model featurizers; :func:`get_or_compute` is the door for any other result (the
eigenvalues of a finished spectrum, for example).

What is stored
--------------
Dense arrays, CSR sparse matrices (their three arrays), JSON-like dicts and
:class:`~diversity_core.spectrum.Spectrum` results, each as one ``.npz`` file read with
``np.load(..., allow_pickle=False)``: never a pickle. Besides the arrays, every file holds a
small JSON header (what it is, its key) and a BLAKE2b checksum of the header and the arrays.

Where, and how much
-------------------
=================  =====================================================  ======================
setting            API (first match wins)                                 environment
=================  =====================================================  ======================
folder             :func:`configured` / :func:`configure` ``folder=``     ``DIVERSITY_CACHE_DIR``
bound in bytes     ``max_bytes=`` (int or ``"2G"``)                       ``DIVERSITY_CACHE_MAX_BYTES``
on or off          ``enabled=``                                           ``DIVERSITY_NO_CACHE=1``
=================  =====================================================  ======================

The default folder is the platform's user cache folder (``platformdirs.user_cache_dir``:
``~/.cache/diversity-explorer`` on Linux), the default bound :data:`DEFAULT_MAX_BYTES` (2 GiB).
The entries live in the sub-folder ``results-v1`` of that folder, which is all :func:`clear`
removes. The command line has ``--cache-dir DIR``, ``--no-cache`` and ``diversity cache info|clear``.

Safety under concurrency and failure
------------------------------------
- An entry is written to a temporary file in the same folder and renamed over its final name
  (``os.replace``): readers see a whole file or none, and two writers of the same key leave
  one whole file (the last).
- Reading an entry checks the archive and the checksum; a truncated or altered file is reported
  once (:class:`~diversity_core.exceptions.CacheWarning`), removed and recomputed.
- The bound is kept by least-recently-used eviction: a hit marks the file as used (its
  modification time), and after each write the oldest entries are removed until the folder
  holds at most ``max_bytes``. Eviction and :func:`clear` hold an exclusive lock on the file
  ``results-v1/.lock`` (``fcntl.flock``; where there is none, on Windows, without a lock: at
  worst an entry too many is removed), so two processes never evict at once. There is no index
  file to keep consistent: the folder itself is the index.
- The store never makes a computation fail: a folder that cannot be written is reported once
  and the result is returned without being kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np

from ._atomic import atomic_output
from ._config import format_bytes, parse_bytes
from ._json import to_jsonable
from .exceptions import CacheWarning, DiversityInputError, MemoryBudgetError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

__all__ = [
    "ResultStore",
    "StoreInfo",
    "get_store",
    "get_or_compute",
    "configure",
    "configured",
    "settings",
    "info",
    "clear",
    "key_digest",
    "array_digest",
    "describe",
    "DEFAULT_MAX_BYTES",
    "ENV_DIR",
    "ENV_MAX_BYTES",
    "ENV_DISABLED",
]

#: Environment variable naming the store's folder.
ENV_DIR = "DIVERSITY_CACHE_DIR"
#: Environment variable bounding the store in bytes (``"2G"``, ``"500M"`` or a number).
ENV_MAX_BYTES = "DIVERSITY_CACHE_MAX_BYTES"
#: Environment variable turning the store off (``1``, ``true``, ``yes``).
ENV_DISABLED = "DIVERSITY_NO_CACHE"
#: The default bound of the store's folder.
DEFAULT_MAX_BYTES = 2 << 30
#: The sub-folder holding the entries; a new layout gets a new name.
LAYOUT = "results-v1"
#: Temporary files older than this (seconds) are leftovers of a killed writer, removed on eviction.
STALE_SECONDS = 3600

_APP_NAME = "diversity-explorer"
_SUFFIX = ".npz"
_META = "__meta__"
_CHECKSUM = "__checksum__"
_PREFIX = "a."  # the stored arrays' member names, apart from the header and the checksum
_UNSET = object()


# ------------------------------------------------------------------------------------------
# keys
# ------------------------------------------------------------------------------------------
def _code_version() -> str:
    """The package's version (from :mod:`diversity_core._version`, below every module that records it)."""
    from ._version import __version__

    return __version__


def key_digest(key_parts: Any) -> str:
    """The hex digest naming the entry of ``key_parts``.

    Parameters
    ----------
    key_parts : dict, list, tuple, str, int, float, bool or None
        Everything the result depends on: content hashes, names, settings, versions; nested
        freely. Dict order does not matter; tuples and lists are the same.

    Returns
    -------
    str
        40 hex digits: BLAKE2b of the canonical JSON of ``key_parts``, this package's version
        and the store's layout.

    Raises
    ------
    DiversityInputError
        When a part is not JSON-like (an array, an object): pass its digest instead
        (:func:`array_digest`, ``Dataset.content_hash``).

    Examples
    --------
    >>> key_digest({"a": 1, "b": [2, 3]}) == key_digest({"b": (2, 3), "a": 1})
    True
    """
    try:
        text = json.dumps([LAYOUT, _code_version(), to_jsonable(key_parts)], sort_keys=True,
                          separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise DiversityInputError(
            f"store key parts must be JSON-like (dicts, lists, strings, numbers, None); {exc}. "
            "Pass a digest of arrays or datasets instead (array_digest(X), dataset.content_hash)."
        ) from None
    return hashlib.blake2b(text.encode(), digest_size=20).hexdigest()


def array_digest(X) -> str:
    """A BLAKE2b digest of an array's or a sparse matrix's dtype, shape and values, for store keys.

    Examples
    --------
    >>> array_digest(np.zeros(3)) == array_digest(np.zeros(3))
    True
    >>> array_digest(np.zeros(3)) == array_digest(np.zeros(3, dtype=np.float32))
    False
    """
    h = hashlib.blake2b(digest_size=16)
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        X = X.tocsr()
        h.update(f"csr|{X.shape}|".encode())
        parts = (X.data, X.indices, X.indptr)
    else:
        parts = (np.asarray(X),)
    for a in parts:
        _hash_array(h, a)
    return h.hexdigest()


def _hash_array(h, a: np.ndarray, chunk_rows: int = 1 << 14) -> None:
    """Feed an array's dtype, shape and bytes to ``h`` (chunks keep memory-mapped inputs cheap)."""
    h.update(f"{a.dtype.str}|{a.shape}|".encode())
    if a.ndim == 0 or a.shape[0] == 0:
        h.update(np.ascontiguousarray(a).tobytes())
        return
    for start in range(0, a.shape[0], chunk_rows):
        h.update(np.ascontiguousarray(a[start : start + chunk_rows]).tobytes())


# ------------------------------------------------------------------------------------------
# values <-> (arrays, header)
# ------------------------------------------------------------------------------------------
def _is_sparse(value) -> bool:
    return hasattr(value, "tocsr") and hasattr(value, "format") and hasattr(value, "nnz")


def _exact_json(obj) -> bool:
    """Whether ``obj`` comes back equal from JSON (no tuples, inf, NaN or objects)."""
    try:
        return json.loads(json.dumps(to_jsonable(obj), allow_nan=False)) == obj
    except (TypeError, ValueError):
        return False


def _storable(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind in "biufcU"


def _encode(value) -> Optional[tuple]:
    """``(arrays, header)`` for a storable value, None for one the store does not keep."""
    if isinstance(value, np.ndarray):
        return ({"X": value}, {"type": "ndarray"}) if _storable(value) else None
    if _is_sparse(value):
        if value.format != "csr" or not _storable(value.data):
            return None
        cls = "csr_array" if "array" in type(value).__name__ else "csr_matrix"
        return ({"data": value.data, "indices": value.indices, "indptr": value.indptr},
                {"type": "csr", "class": cls, "shape": [int(s) for s in value.shape]})
    if isinstance(value, dict):
        return ({}, {"type": "json", "value": value}) if _exact_json(value) else None
    spectrum = sys.modules.get(f"{__package__}.spectrum")
    if spectrum is not None and type(value) is spectrum.Spectrum:
        arrays = {"eigenvalues": value.eigenvalues}
        if value.eigenvectors is not None:
            arrays["eigenvectors"] = value.eigenvectors
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)
                  if f.name not in ("eigenvalues", "eigenvectors")}
        if not (_exact_json(fields) and all(_storable(a) for a in arrays.values())):
            return None
        return arrays, {"type": "spectrum", "fields": fields}
    return None


def _decode(arrays: dict, header: dict):
    """The value stored as ``(arrays, header)`` (raises on anything unexpected)."""
    kind = header["type"]
    if kind == "ndarray":
        return arrays["X"]
    if kind == "csr":
        import scipy.sparse as sp

        cls = sp.csr_array if header["class"] == "csr_array" else sp.csr_matrix
        return cls((arrays["data"], arrays["indices"], arrays["indptr"]), shape=tuple(header["shape"]))
    if kind == "json":
        return header["value"]
    if kind == "spectrum":
        from .spectrum import Spectrum

        for a in arrays.values():
            a.setflags(write=False)
        return Spectrum(eigenvalues=arrays["eigenvalues"], eigenvectors=arrays.get("eigenvectors"),
                        **header["fields"])
    raise ValueError(f"unknown entry type {kind!r}")


def _checksum(header_bytes: bytes, arrays: dict) -> bytes:
    h = hashlib.blake2b(header_bytes, digest_size=16)
    for name in sorted(arrays):
        h.update(name.encode() + b"|")
        _hash_array(h, np.asarray(arrays[name]))
    return h.digest()


class _Corrupt(Exception):
    """An entry that cannot be read back as written."""


# ------------------------------------------------------------------------------------------
# the store
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreInfo:
    """What a store's folder holds.

    Attributes
    ----------
    folder : str
        The store's folder (the entries are in its ``results-v1`` sub-folder).
    entries : int
        Number of entries.
    bytes : int
        Bytes they take on disk.
    max_bytes : int
        The bound: least recently used entries are removed beyond it.
    enabled : bool
        Whether the store is in use (False under ``--no-cache`` / ``DIVERSITY_NO_CACHE=1``).
    """

    folder: str
    entries: int
    bytes: int
    max_bytes: int
    enabled: bool = True

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (stable keys)."""
        return dataclasses.asdict(self)


class ResultStore:
    """A folder of results, bounded in bytes, safe for concurrent processes.

    Most code uses the configured store through :func:`get_or_compute`, :func:`get_store`,
    :func:`info` and :func:`clear`; build one directly to use another folder.

    Parameters
    ----------
    folder : str or path-like
        The store's folder; created on the first write.
    max_bytes : int or str, default DEFAULT_MAX_BYTES
        The bound on the bytes of all entries (``"2G"``, ``"500M"`` or a number).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> store.get_or_compute({"result": "demo"}, lambda: np.arange(3))
    array([0, 1, 2])
    >>> store.get({"result": "demo"})   # read back from disk
    array([0, 1, 2])
    """

    def __init__(self, folder: Union[str, os.PathLike], *, max_bytes: Union[int, str] = DEFAULT_MAX_BYTES):
        self.folder = Path(os.fspath(folder)).expanduser()
        self.max_bytes = _check_max_bytes(max_bytes, "max_bytes")
        self._entries = self.folder / LAYOUT
        self._reported: set = set()
        self._reported_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ResultStore({str(self.folder)!r}, max_bytes={self.max_bytes})"

    # -- public ------------------------------------------------------------------------------
    def get(self, key_parts: Any, default: Any = None) -> Any:
        """The value stored under ``key_parts`` (marked as recently used), else ``default``.

        A corrupt entry is reported once (:class:`~diversity_core.exceptions.CacheWarning`),
        removed, and counts as missing.
        """
        value = self._get(key_digest(key_parts))
        return default if value is _UNSET else value

    def put(self, key_parts: Any, value: Any, *, label: str = "") -> bool:
        """Keep ``value`` under ``key_parts``; True when it was written.

        Values the store does not keep (objects, object arrays, non-CSR sparse matrices, dicts
        that do not survive JSON, one larger than the whole bound) and failed writes (reported
        once) return False. ``label`` describes the entry in its header (e.g.
        ``"features efficientnet_lite0"``).
        """
        return self._put(key_digest(key_parts), value, label)

    def get_or_compute(self, key_parts: Any, compute: Callable[[], Any], *, label: str = "") -> Any:
        """The value stored under ``key_parts``, else ``compute()``, kept for next time and returned."""
        key = key_digest(key_parts)
        value = self._get(key)
        if value is not _UNSET:
            return value
        value = compute()
        self._put(key, value, label)
        return value

    def info(self, *, enabled: bool = True) -> StoreInfo:
        """Entries and bytes in the folder, and the bound (nothing is created)."""
        found = self._scan()
        return StoreInfo(folder=str(self.folder), entries=len(found), bytes=sum(s for _, s, _ in found),
                         max_bytes=self.max_bytes, enabled=enabled)

    def clear(self) -> StoreInfo:
        """Remove every entry; returns what was removed (``entries``, ``bytes``)."""
        if not self._entries.is_dir():
            return StoreInfo(str(self.folder), 0, 0, self.max_bytes)
        removed = freed = 0
        with self._locked():
            for _, size, path in self._scan():
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
                    freed += size
            self._remove_stale_temporaries(max_age=STALE_SECONDS)
        return StoreInfo(str(self.folder), removed, freed, self.max_bytes)

    def evict(self) -> int:
        """Remove the least recently used entries until the folder holds at most ``max_bytes``.

        Returns the number of entries removed. Runs after every write; call it after lowering
        the bound.
        """
        if not self._entries.is_dir():
            return 0
        with self._locked():
            found = sorted(self._scan())
            total = sum(size for _, size, _ in found)
            removed = 0
            for _, size, path in found:
                if total <= self.max_bytes:
                    break
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
                total -= size
            self._remove_stale_temporaries(max_age=STALE_SECONDS)
        return removed

    # -- reading -----------------------------------------------------------------------------
    def _path(self, key: str) -> Path:
        return self._entries / f"{key}{_SUFFIX}"

    def _get(self, key: str) -> Any:
        path = self._path(key)
        try:
            f = open(path, "rb")  # noqa: SIM115 - closed below, after the checks
        except (FileNotFoundError, NotADirectoryError):
            return _UNSET
        except OSError as exc:
            self._report(("folder", str(self._entries)), f"cannot read the result store at {self._entries} "
                         f"({exc.strerror or exc}); results are computed instead. Check its permissions, "
                         f"or choose another folder with {ENV_DIR} / --cache-dir.")
            return _UNSET
        with f:
            identity = os.fstat(f.fileno()).st_ino
            try:
                value = self._read(f, key)
            except Exception as exc:  # noqa: BLE001 - any failure to read back is a corrupt entry
                self._discard(path, identity)
                self._report(("corrupt", key), f"the stored result {path.name} in {self._entries} is corrupt "
                             f"or truncated ({_reason(exc)}); it was removed and will be recomputed.")
                return _UNSET
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return value

    @staticmethod
    def _read(f, key: str) -> Any:
        with np.load(f, allow_pickle=False) as z:
            names = set(z.files)
            if _META not in names or _CHECKSUM not in names:
                raise _Corrupt("no header")
            header_bytes = z[_META].tobytes()
            arrays = {n[len(_PREFIX):]: z[n] for n in names if n.startswith(_PREFIX)}
            if _checksum(header_bytes, arrays) != z[_CHECKSUM].tobytes():
                raise _Corrupt("checksum mismatch")
        header = json.loads(header_bytes.decode())
        if header.get("key") != key:
            raise _Corrupt("written for another key")
        return _decode(arrays, header)

    def _discard(self, path: Path, identity: int) -> None:
        """Remove a corrupt entry, unless a writer has replaced it in the meantime."""
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == identity:
                path.unlink()

    # -- writing -----------------------------------------------------------------------------
    def _put(self, key: str, value: Any, label: str) -> bool:
        encoded = _encode(value)
        if encoded is None:
            return False
        arrays, header = encoded
        header = {**header, "key": key, "label": label, "created": time.time()}
        header_bytes = json.dumps(to_jsonable(header), sort_keys=True).encode()
        members = {_PREFIX + name: np.ascontiguousarray(a) for name, a in arrays.items()}
        if sum(a.nbytes for a in members.values()) + len(header_bytes) > self.max_bytes:
            return False
        members[_META] = np.frombuffer(header_bytes, dtype=np.uint8)
        members[_CHECKSUM] = np.frombuffer(_checksum(header_bytes, arrays), dtype=np.uint8)
        try:
            self._entries.mkdir(parents=True, exist_ok=True)
            with atomic_output(self._path(key)) as tmp, open(tmp, "wb") as f:
                np.savez(f, **members)
            self.evict()
        except (OSError, DiversityInputError) as exc:
            self._report(("folder", str(self._entries)), f"cannot write to the result store at {self._entries} "
                         f"({_reason(exc)}); results are computed but not kept. Free space, or choose another "
                         f"folder with {ENV_DIR} / --cache-dir (or turn the store off with {ENV_DISABLED}=1).")
            return False
        return True

    # -- the folder --------------------------------------------------------------------------
    def _scan(self) -> list:
        """``(last used in ns, bytes, path)`` of every entry (temporary files excluded)."""
        found = []
        try:
            with os.scandir(self._entries) as it:
                for e in it:
                    if e.name.startswith(".") or not e.name.endswith(_SUFFIX):
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat()
                        found.append((st.st_mtime_ns, st.st_size, Path(e.path)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return found

    def _remove_stale_temporaries(self, *, max_age: float) -> None:
        """Remove temporary files left by writers killed before their rename."""
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(self._entries) as it:
            for e in it:
                if e.name.startswith(".") and ".tmp" in e.name:
                    with contextlib.suppress(OSError):
                        if now - e.stat().st_mtime > max_age:
                            os.unlink(e.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on ``results-v1/.lock`` shared by every process using the folder."""
        fd = os.open(self._entries / ".lock", os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _report(self, what: tuple, message: str) -> None:
        """Warn once per store and ``what``."""
        with self._reported_lock:
            if what in self._reported:
                return
            self._reported.add(what)
        warnings.warn(message, CacheWarning, stacklevel=4)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _check_max_bytes(value, where: str) -> int:
    try:
        return parse_bytes(value)
    except MemoryBudgetError:
        raise DiversityInputError(
            f"{where} must be a positive size in bytes or e.g. '2G', '500M'; got {value!r}."
        ) from None


# ------------------------------------------------------------------------------------------
# the configured store
# ------------------------------------------------------------------------------------------
_lock = threading.Lock()
_global: dict = {}
_local = threading.local()
_stores: dict = {}


def _overrides() -> dict:
    return {**_global, **getattr(_local, "overrides", {})}


def _options(folder, max_bytes, enabled) -> dict:
    """Validated overrides (``_UNSET`` and None leave a setting alone)."""
    out = {}
    if folder not in (_UNSET, None):
        out["folder"] = Path(os.fspath(folder)).expanduser()
    if max_bytes not in (_UNSET, None):
        out["max_bytes"] = _check_max_bytes(max_bytes, "max_bytes")
    if enabled not in (_UNSET, None):
        out["enabled"] = bool(enabled)
    return out


def _default_folder() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(_APP_NAME, appauthor=False))


def settings() -> dict:
    """The store's effective settings: ``folder``, ``max_bytes`` and ``enabled``.

    API overrides (:func:`configured`, then :func:`configure`) win over the environment
    (``DIVERSITY_CACHE_DIR``, ``DIVERSITY_CACHE_MAX_BYTES``, ``DIVERSITY_NO_CACHE``), which wins
    over the defaults (the user cache folder, :data:`DEFAULT_MAX_BYTES`, enabled).

    Raises
    ------
    DiversityInputError
        When ``DIVERSITY_CACHE_MAX_BYTES`` is not a size.
    """
    chosen = _overrides()
    if "folder" not in chosen:
        env = os.environ.get(ENV_DIR, "").strip()
        chosen["folder"] = Path(env).expanduser() if env else _default_folder()
    if "max_bytes" not in chosen:
        env = os.environ.get(ENV_MAX_BYTES, "").strip()
        chosen["max_bytes"] = _check_max_bytes(env, ENV_MAX_BYTES) if env else DEFAULT_MAX_BYTES
    if "enabled" not in chosen:
        chosen["enabled"] = os.environ.get(ENV_DISABLED, "").strip().lower() not in ("1", "true", "yes", "on")
    return chosen


def configure(*, folder=None, max_bytes=None, enabled=None) -> None:
    """Set the store's folder, bound or use for this process (None leaves a setting as it is).

    Parameters
    ----------
    folder : str or path-like, optional
        The store's folder (over ``DIVERSITY_CACHE_DIR``).
    max_bytes : int or str, optional
        The bound in bytes or e.g. ``"2G"`` (over ``DIVERSITY_CACHE_MAX_BYTES``).
    enabled : bool, optional
        False turns the store off: nothing is read or written (over ``DIVERSITY_NO_CACHE``).
    """
    new = _options(folder, max_bytes, enabled)
    with _lock:
        _global.update(new)


@contextlib.contextmanager
def configured(*, folder=None, max_bytes=None, enabled=None) -> Iterator[None]:
    """Change the store's settings in this thread for a block (``with configured(enabled=False): ...``)."""
    old = dict(getattr(_local, "overrides", {}))
    _local.overrides = {**old, **_options(folder, max_bytes, enabled)}
    try:
        yield
    finally:
        _local.overrides = old


def _store_for(chosen: dict) -> ResultStore:
    key = (str(chosen["folder"]), chosen["max_bytes"])
    with _lock:
        if key not in _stores:  # one object per folder and bound: warnings are given once
            _stores[key] = ResultStore(chosen["folder"], max_bytes=chosen["max_bytes"])
        return _stores[key]


def get_store() -> Optional[ResultStore]:
    """The configured :class:`ResultStore`, or None when the store is turned off."""
    chosen = settings()
    return _store_for(chosen) if chosen["enabled"] else None


def get_or_compute(key_parts: Any, compute: Callable[[], Any], *, label: str = "") -> Any:
    """The result stored under ``key_parts``, else ``compute()``, kept on disk for next time.

    Parameters
    ----------
    key_parts : JSON-like
        Everything the result depends on: the data's content hash (``Dataset.content_hash``,
        :func:`array_digest`), the method and its settings, the version of any model. This
        package's version is added by :func:`key_digest`.
    compute : callable
        Computes the result when it is not stored: an ndarray, a CSR matrix, a JSON-like
        dict or a :class:`~diversity_core.spectrum.Spectrum`. Other values are returned
        without being kept.
    label : str, optional
        A description kept in the entry's header (``"spectrum cosine"``).

    Returns
    -------
    The stored or computed value. A stored array is a fresh, writable array.

    Warns
    -----
    CacheWarning
        Once per entry, when a stored entry is corrupt (it is recomputed); once per folder,
        when the folder cannot be written (the result is returned without being kept).

    Examples
    --------
    >>> import tempfile
    >>> with configured(folder=tempfile.mkdtemp()):
    ...     a = get_or_compute({"result": "squares", "n": 4}, lambda: np.arange(4) ** 2)
    ...     b = get_or_compute({"result": "squares", "n": 4}, lambda: None)  # not called
    >>> b
    array([0, 1, 4, 9])
    """
    key_digest(key_parts)  # validate even when the store is off
    store = get_store()
    if store is None:
        return compute()
    return store.get_or_compute(key_parts, compute, label=label)


def info() -> StoreInfo:
    """The configured store's :class:`StoreInfo` (also when it is turned off)."""
    chosen = settings()
    return _store_for(chosen).info(enabled=chosen["enabled"])


def clear() -> StoreInfo:
    """Remove every entry of the configured store's folder; returns the entries and bytes removed."""
    return _store_for(settings()).clear()


def describe(store_info: StoreInfo) -> str:
    """One line for people: ``'3 entries, 12.4 MiB of 2 GiB in /home/me/.cache/diversity-explorer'``."""
    used = format_bytes(store_info.bytes)
    return (f"{store_info.entries} entr{'y' if store_info.entries == 1 else 'ies'}, {used} of "
            f"{format_bytes(store_info.max_bytes)} in {store_info.folder}")
