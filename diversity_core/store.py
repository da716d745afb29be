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
small JSON header (what it is, its key, each array's dtype and shape) and a MAC of the header and
the arrays (see *Other users* below).

Where, and how much
-------------------
=================  =====================================================  ======================
setting            API (first match wins)                                 environment
=================  =====================================================  ======================
folder             :func:`configured` / :func:`configure` ``folder=``     ``DIVERSITY_CACHE_DIR``
bound in bytes     ``max_bytes=`` (int or ``"2G"``)                       ``DIVERSITY_CACHE_MAX_BYTES``
on or off          ``enabled=``                                           ``DIVERSITY_NO_CACHE=1``
shared key         ``key_file=`` (a team's or a cluster's store)          ``DIVERSITY_CACHE_KEY_FILE``
=================  =====================================================  ======================

The default folder is the platform's user cache folder (``platformdirs.user_cache_dir``:
``~/.cache/diversity-explorer`` on Linux), the default bound :data:`DEFAULT_MAX_BYTES` (2 GiB).
The entries live in the sub-folder ``results-v1`` of that folder, which is all :func:`clear`
removes. The command line has ``--cache-dir DIR``, ``--no-cache`` and ``diversity cache info|clear``.

Safety under concurrency and failure
------------------------------------
- An entry is written to a temporary file in the same folder (``.KEY.npz.PID.RANDOM.tmp.npz``)
  and renamed over its final name: readers see a whole file or none, and two writers of the same
  key leave one whole file (the last).
- Reading an entry checks the archive (its members' CRCs), a budget (every member's size is
  checked against the sizes the header declares, the bound and the memory budget *before* it is
  read; compressed members are refused: the store writes none) and a MAC; a truncated or
  altered file is reported once (:class:`~diversity_core.exceptions.CacheWarning`), removed and
  recomputed.
- The bound is kept by least-recently-used eviction: a hit marks the file as used (its
  modification time), and after each write the oldest entries are removed until the folder
  holds at most ``max_bytes``. Eviction and :func:`clear` hold an exclusive lock on the file
  ``results-v1/.lock`` (``fcntl.flock``), waited for at most :data:`LOCK_TIMEOUT_S` seconds:
  a process that holds it longer is reported once and the store goes on without the lock (at
  worst an entry too many is removed). There is no index file: the folder itself is the index.
- Temporary files of writers that were killed (SIGKILL, a server stopped mid-write) are counted
  by :func:`info` and removed by :func:`clear` and by eviction once their process is gone (or,
  on a folder shared between machines, after :data:`STALE_SECONDS`).
- The store never makes a computation fail: a folder that cannot be written is reported once
  and the result is returned without being kept.

Other users
-----------
Every entry carries an HMAC-SHA256 of its header and of every array, keyed by a secret that
only the store's owner can read: by default a per-user key file ``store-key-UID`` in the store's
folder, created on first use (32 random bytes, mode 0600). An entry written by anyone without the
key (another user with write access to a shared folder, a forged file) is ignored with one
:class:`~diversity_core.exceptions.CacheWarning` and recomputed. Entries are created 0600 and
folders 0700. A store shared by a team or a cluster takes its key from its configuration
(``key_file=`` / ``DIVERSITY_CACHE_KEY_FILE``: a file holding the team's secret, mode 0600 and
owned by the user who reads it; each member keeps a copy); its entries are then created 0640
and its folders 0770, for the group. The store never follows a symbolic link inside its
folder, never opens a FIFO or device as an entry, never blocks on one, and removes only
files it made: entries and temporary files by their name, regular files only, and (with a
per-user key) only those owned by the current user. See ``docs/security.md``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import sys
import threading
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Union

import numpy as np

from ._atomic import _alive
from ._config import format_bytes, memory_budget, parse_bytes
from ._json import to_jsonable
from ._version import __version__
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
    "ENV_KEY_FILE",
]

#: Environment variable naming the store's folder.
ENV_DIR = "DIVERSITY_CACHE_DIR"
#: Environment variable bounding the store in bytes (``"2G"``, ``"500M"`` or a number).
ENV_MAX_BYTES = "DIVERSITY_CACHE_MAX_BYTES"
#: Environment variable turning the store off (``1``, ``true``, ``yes``).
ENV_DISABLED = "DIVERSITY_NO_CACHE"
#: Environment variable naming the key file of a store shared by a team or a cluster.
ENV_KEY_FILE = "DIVERSITY_CACHE_KEY_FILE"
#: The default bound of the store's folder.
DEFAULT_MAX_BYTES = 2 << 30
#: The sub-folder holding the entries; a new layout gets a new name.
LAYOUT = "results-v1"
#: Temporary files older than this (seconds) are leftovers of a killed writer even when their pid lives
#: (it may have been reused, or belong to another machine sharing the folder).
STALE_SECONDS = 3600
#: Longest wait (seconds) for the folder's lock; past it the store goes on without the lock, with a warning.
LOCK_TIMEOUT_S = 10.0

_APP_NAME = "diversity-explorer"
_SUFFIX = ".npz"
_META = "__meta__"
_MAC = "__mac__"
_OLD_CHECKSUM = "__checksum__"  # entries written before the MAC: replaced quietly when ours
_PREFIX = "a."  # the stored arrays' member names, apart from the header and the MAC
_UNSET = object()
#: Names the store makes: entries, and its temporary files (``.KEY.npz.PID.RANDOM.tmp.npz``).
_ENTRY_NAME = re.compile(r"[0-9a-f]{40}\.npz")
_TEMP_NAME = re.compile(r"\.[0-9a-f]{40}\.npz\.(\d+)\.[0-9a-f]{12}\.tmp\.npz")
_LOCK_NAME = ".lock"
#: Largest header (bytes) and largest ``.npy`` header of a member (numpy's own ``max_header_size``).
_META_MAX = 16 << 20
_NPY_HEADER_MAX = 10_000 + 256
_MEMBERS_MAX = 16
_KEY_MIN, _KEY_MAX = 16, 4096
_MAC_DOMAIN = b"diversity-explorer result store MAC v1\0"

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
#: Operations relative to an open folder (no path is looked up twice, no link followed on the way).
_DIR_FD = (os.open in os.supports_dir_fd and os.unlink in os.supports_dir_fd and os.stat in os.supports_dir_fd
           and os.rename in os.supports_dir_fd and os.scandir in os.supports_fd and bool(_O_DIRECTORY))


def _euid() -> Optional[int]:
    return os.geteuid() if hasattr(os, "geteuid") else None


# ------------------------------------------------------------------------------------------
# keys
# ------------------------------------------------------------------------------------------
def _code_version() -> str:
    """The package's version (from :mod:`diversity_core._version`, below every module that records it)."""
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


def _mac(secret: bytes, header_bytes: bytes, arrays: dict) -> bytes:
    """HMAC-SHA256 under ``secret`` of the header and of every array (its name, dtype, shape and bytes)."""
    h = hmac.new(secret, _MAC_DOMAIN + len(header_bytes).to_bytes(8, "little") + header_bytes, hashlib.sha256)
    for name in sorted(arrays):
        h.update(len(name).to_bytes(8, "little") + name.encode())
        _hash_array(h, np.asarray(arrays[name]))
    return h.digest()


def _declared(arrays: dict) -> dict:
    """The header's record of each array: ``{name: {"dtype": "<f8", "shape": [3, 4]}}``."""
    return {name: {"dtype": a.dtype.str, "shape": [int(s) for s in a.shape]} for name, a in arrays.items()}


class _Corrupt(Exception):
    """An entry that cannot be read back as written."""


class _Foreign(Exception):
    """An entry whose MAC does not verify under this store's key: forged, or written with another key."""


class _OldFormat(Exception):
    """An entry written before entries carried a MAC."""


class _Unusable(Exception):
    """The store's folder or key cannot be used safely; the message says why and what to do."""


# ------------------------------------------------------------------------------------------
# the key
# ------------------------------------------------------------------------------------------
def _check_key_file(fd: int, path: Path) -> bytes:
    """The secret in the open key file ``fd``, after checking it is ours alone."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _Unusable(f"the store's key file {path} is not a regular file")
    euid = _euid()
    if euid is not None and st.st_uid != euid:
        raise _Unusable(f"the store's key file {path} belongs to another user (uid {st.st_uid}); only its "
                        "owner may use it. Remove it (a new key is made) or give your own copy")
    if os.name == "posix" and stat.S_IMODE(st.st_mode) & 0o077:
        raise _Unusable(f"the store's key file {path} can be read or written by others (mode "
                        f"{stat.S_IMODE(st.st_mode):04o}); run `chmod 600 {path}`")
    if st.st_size > _KEY_MAX:
        raise _Unusable(f"the store's key file {path} is larger than {_KEY_MAX} bytes; it is not a key")
    data = os.read(fd, _KEY_MAX + 1).strip()
    if len(data) < _KEY_MIN:
        raise _Unusable(f"the store's key file {path} holds fewer than {_KEY_MIN} bytes; make one with "
                        f"`python -c \"import secrets; print(secrets.token_hex(32))\" > {path}` (mode 0600)")
    return data


def _open_key(path: Path) -> int:
    try:
        return os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _Unusable(f"the store's key file {path} is a symbolic link; the store follows none") from None
        raise _Unusable(f"cannot read the store's key file {path} ({exc.strerror or exc})") from None


def _create_key(path: Path, mode: int = 0o600) -> None:
    """Write a new random key to ``path`` (mode 0600) unless another process made one first."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, mode)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)
            os.write(fd, (secrets.token_hex(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # never replaces a key made meanwhile
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, mode)
                with contextlib.suppress(OSError):
                    os.write(fd, tmp.read_bytes())
                os.close(fd)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _load_key(path: Path, *, create: bool) -> bytes:
    """The secret in ``path``, made first when ``create`` and missing (raises :class:`_Unusable`)."""
    try:
        fd = _open_key(path)
    except FileNotFoundError:
        if not create:
            raise _Unusable(f"the store's key file {path} ({ENV_KEY_FILE}) does not exist; copy the team's key "
                            "there (mode 0600), or unset it for a per-user key") from None
        try:
            _create_key(path)
            fd = _open_key(path)
        except OSError as exc:
            raise _Unusable(f"cannot create the store's key file {path} ({exc.strerror or exc})") from None
    try:
        return _check_key_file(fd, path)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------------
# the folder: every operation relative to the open entries folder, never through a link
# ------------------------------------------------------------------------------------------
class _Folder:
    """The open ``results-v1`` folder (a descriptor where the platform has ``dir_fd``)."""

    def __init__(self, path: Path, fd: Optional[int]):
        self.path, self.fd = path, fd

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        if self.fd is not None:
            return os.open(name, flags, mode, dir_fd=self.fd)
        return os.open(self.path / name, flags, mode)

    def lstat(self, name: str) -> os.stat_result:
        if self.fd is not None:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        return os.lstat(self.path / name)

    def unlink(self, name: str) -> None:
        if self.fd is not None:
            os.unlink(name, dir_fd=self.fd)
        else:
            os.unlink(self.path / name)

    def replace(self, src: str, dst: str) -> None:
        if self.fd is not None:
            os.rename(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)  # POSIX rename replaces dst
        else:
            os.replace(self.path / src, self.path / dst)

    def names(self) -> list:
        """``(name, lstat)`` of every regular file in the folder."""
        out = []
        with os.scandir(self.fd if self.fd is not None else self.path) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        out.append((e.name, st))
        return out


def _kind(mode: int) -> str:
    for test, phrase in ((stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                         (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                         (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return phrase
    return "not a regular file"


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
    temporaries : int
        Temporary files in the folder: writes under way, or left by writers that were killed
        (:func:`clear` removes those).
    temporary_bytes : int
        Bytes they take.
    key_file : str
        The file holding the key of the entries' MACs (the per-user default, or the configured one).
    """

    folder: str
    entries: int
    bytes: int
    max_bytes: int
    enabled: bool = True
    temporaries: int = 0
    temporary_bytes: int = 0
    key_file: str = ""

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (stable keys)."""
        return dataclasses.asdict(self)


class ResultStore:
    """A folder of results, bounded in bytes, safe for concurrent processes and against other users.

    Most code uses the configured store through :func:`get_or_compute`, :func:`get_store`,
    :func:`info` and :func:`clear`; build one directly to use another folder.

    Parameters
    ----------
    folder : str or path-like
        The store's folder; created on the first write.
    max_bytes : int or str, default DEFAULT_MAX_BYTES
        The bound on the bytes of all entries (``"2G"``, ``"500M"`` or a number).
    key_file : str or path-like, optional
        The file holding the secret that keys the entries' MACs, for a store shared by a team or
        a cluster (mode 0600, owned by the user; entries are then made 0640, folders 0770). By
        default a per-user key ``store-key-UID`` in ``folder``, made on first use (entries 0600,
        folders 0700).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> store.get_or_compute({"result": "demo"}, lambda: np.arange(3))
    array([0, 1, 2])
    >>> store.get({"result": "demo"})   # read back from disk
    array([0, 1, 2])
    """

    def __init__(self, folder: Union[str, os.PathLike], *, max_bytes: Union[int, str] = DEFAULT_MAX_BYTES,
                 key_file: Union[str, os.PathLike, None] = None):
        self.folder = Path(os.fspath(folder)).expanduser()
        self.max_bytes = _check_max_bytes(max_bytes, "max_bytes")
        self._entries = self.folder / LAYOUT
        self._shared = key_file is not None
        euid = _euid()
        self.key_file = (Path(os.fspath(key_file)).expanduser() if self._shared
                         else self.folder / f"store-key-{euid if euid is not None else 'user'}")
        self._dir_mode, self._file_mode = (0o770, 0o640) if self._shared else (0o700, 0o600)
        self._secret_value: Optional[bytes] = None
        self._lock_stuck = False
        self._reported: set = set()
        self._reported_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ResultStore({str(self.folder)!r}, max_bytes={self.max_bytes})"

    # -- public ------------------------------------------------------------------------------
    def get(self, key_parts: Any, default: Any = None) -> Any:
        """The value stored under ``key_parts`` (marked as recently used), else ``default``.

        A corrupt entry is reported once (:class:`~diversity_core.exceptions.CacheWarning`),
        removed, and counts as missing. An entry not written with this store's key (forged, or
        another user's) counts as missing too: reported once per store and left in place (the
        next write of its key replaces it).
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
        """Entries and bytes in the folder, its temporary files, and the bound (nothing is created)."""
        entries = temporaries = []
        try:
            with self._open_folder(create=False) as d:
                if d is not None:
                    listed = d.names()
                    entries = [st for name, st in listed if _ENTRY_NAME.fullmatch(name)]
                    temporaries = [st for name, st in listed if _TEMP_NAME.fullmatch(name)]
        except (_Unusable, OSError) as exc:
            self._report_folder(exc, "read")
        return StoreInfo(folder=str(self.folder), entries=len(entries), bytes=sum(st.st_size for st in entries),
                         max_bytes=self.max_bytes, enabled=enabled, temporaries=len(temporaries),
                         temporary_bytes=sum(st.st_size for st in temporaries), key_file=str(self.key_file))

    def clear(self) -> StoreInfo:
        """Remove every entry, and the temporary files of writers that are gone.

        Returns what was removed: ``entries`` and ``bytes`` of the entries, ``temporaries`` and
        ``temporary_bytes`` of the temporary files. Only files the store made are removed (see the
        module's *Other users*).
        """
        removed = freed = temps = temp_bytes = 0
        try:
            with self._open_folder(create=False) as d, self._locked(d):
                if d is not None:
                    for name, st in d.names():
                        if _ENTRY_NAME.fullmatch(name) and self._remove(d, name, st):
                            removed, freed = removed + 1, freed + st.st_size
                    temps, temp_bytes = self._remove_temporaries(d)
        except (_Unusable, OSError) as exc:
            self._report_folder(exc, "clear")
        return StoreInfo(folder=str(self.folder), entries=removed, bytes=freed, max_bytes=self.max_bytes,
                         temporaries=temps, temporary_bytes=temp_bytes, key_file=str(self.key_file))

    def evict(self) -> int:
        """Remove the least recently used entries until the folder holds at most ``max_bytes``.

        Returns the number of entries removed. Runs after every write; call it after lowering
        the bound. Also removes the temporary files of writers that are gone.
        """
        try:
            with self._open_folder(create=False) as d, self._locked(d):
                return 0 if d is None else self._evict(d)
        except (_Unusable, OSError) as exc:
            self._report_folder(exc, "clean up")
            return 0

    def _evict(self, d: _Folder) -> int:
        found = sorted((st.st_mtime_ns, name, st) for name, st in d.names()
                       if _ENTRY_NAME.fullmatch(name) and self._removable(st))
        total = sum(st.st_size for _, _, st in found)
        removed = 0
        for _, name, st in found:
            if total <= self.max_bytes:
                break
            if self._remove(d, name, st):
                removed += 1
            total -= st.st_size
        self._remove_temporaries(d)
        return removed

    # -- the folder --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _open_folder(self, *, create: bool) -> Iterator[Optional[_Folder]]:
        """The entries folder, opened without following a link (None when missing and not ``create``)."""
        made = False
        if create:
            os.makedirs(self.folder, mode=self._dir_mode, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(self._entries, self._dir_mode)
                made = True
        try:
            st = os.lstat(self._entries)
        except (FileNotFoundError, NotADirectoryError):
            yield None
            return
        if not stat.S_ISDIR(st.st_mode):
            raise _Unusable(f"{self._entries} is {_kind(st.st_mode)}, not the store's folder; the store follows "
                            "no link and uses no other file there. Remove it (the store makes a new folder)")
        if not _DIR_FD:
            yield _Folder(self._entries, None)
            return
        try:
            fd = os.open(self._entries, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _Unusable(f"{self._entries} was replaced by a link or a file; remove it") from None
            raise
        try:
            if create:
                fst = os.fstat(fd)
                mode = stat.S_IMODE(fst.st_mode)
                # one we just made (whatever the umask), or one an older version made 0755
                if fst.st_uid == _euid() and (made or (mode == 0o755 and not self._shared)) \
                        and mode & 0o777 != self._dir_mode:
                    os.fchmod(fd, self._dir_mode | (mode & stat.S_ISGID))  # a group folder's setgid bit stays
            yield _Folder(self._entries, fd)
        finally:
            os.close(fd)

    def _removable(self, st: os.stat_result) -> bool:
        """Whether the store may remove a file: a regular file, and (with a per-user key) ours."""
        euid = _euid()
        return stat.S_ISREG(st.st_mode) and (self._shared or euid is None or st.st_uid == euid)

    def _remove(self, d: _Folder, name: str, st: os.stat_result) -> bool:
        """Unlink ``name`` if it is still the file ``st`` describes and the store may remove it."""
        if not self._removable(st):
            return False
        try:
            now = d.lstat(name)
            if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev) or not self._removable(now):
                return False
            d.unlink(name)
        except OSError:
            return False
        return True

    def _remove_temporaries(self, d: _Folder) -> tuple:
        """Remove the temporary files of writers that are gone.

        Gone: their process no longer runs on this machine, or they are older than
        :data:`STALE_SECONDS` (a reused pid, another machine). Returns ``(count, bytes)`` removed.
        """
        now, count, size = time.time(), 0, 0
        for name, st in d.names():
            m = _TEMP_NAME.fullmatch(name)
            if m is None:
                continue
            pid = int(m.group(1))
            gone = pid != os.getpid() and not _alive(pid)
            if (gone or now - st.st_mtime > STALE_SECONDS) and self._remove(d, name, st):
                count, size = count + 1, size + st.st_size
        return count, size

    @contextlib.contextmanager
    def _locked(self, d: Optional[_Folder]) -> Iterator[None]:
        """An exclusive lock on ``results-v1/.lock``, waited for at most :data:`LOCK_TIMEOUT_S` seconds.

        A lock that cannot be had (held longer by another process, a ``.lock`` that is a link or a
        FIFO) is reported once; the block then runs without it.
        """
        if d is None or fcntl is None:
            yield
            return
        try:
            fd = d.open(_LOCK_NAME, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, 0o600)
        except OSError as exc:
            self._report(("lock",), f"cannot use the result store's lock {self._entries / _LOCK_NAME} "
                         f"({'a symbolic link' if exc.errno == errno.ELOOP else exc.strerror or exc}); the store "
                         "goes on without it. Remove that file.")
            yield
            return
        try:
            st = os.fstat(fd)
            lock_mode = 0o660 if self._shared else 0o600
            if stat.S_ISREG(st.st_mode) and st.st_uid == _euid() and stat.S_IMODE(st.st_mode) != lock_mode:
                with contextlib.suppress(OSError):
                    os.fchmod(fd, lock_mode)  # whatever the umask (or an older version's 0644)
            if not stat.S_ISREG(st.st_mode):
                self._report(("lock",), f"the result store's lock {self._entries / _LOCK_NAME} is "
                             f"{_kind(st.st_mode)}; the store goes on without it. Remove it.")
            elif not self._flock(fd):
                self._report(("lock",), f"another process has held the result store's lock "
                             f"{self._entries / _LOCK_NAME} for more than {LOCK_TIMEOUT_S:g} s; the store goes "
                             "on without it (at worst an entry too many is evicted). Stop that process.")
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _flock(self, fd: int) -> bool:
        """Take the lock within :data:`LOCK_TIMEOUT_S` (one try once it was found stuck)."""
        deadline = time.monotonic() + (0.0 if self._lock_stuck else LOCK_TIMEOUT_S)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_stuck = False
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self._lock_stuck = True
                    return False
                time.sleep(0.02)
            except OSError:
                return False

    def _report_folder(self, exc: BaseException, doing: str) -> None:
        self._report(("folder", str(self._entries)), f"cannot {doing} the result store at {self._entries} "
                     f"({_reason(exc)}); results are computed instead. Check its permissions, or choose "
                     f"another folder with {ENV_DIR} / --cache-dir.")

    # -- the key -----------------------------------------------------------------------------
    def _secret(self) -> Optional[bytes]:
        """The key of the entries' MACs, loaded (or made) once; None, reported once, when unusable."""
        if self._secret_value is None:
            try:
                self._secret_value = _load_key(self.key_file, create=not self._shared)
            except _Unusable as exc:
                self._report(("key",), f"{exc}; results are computed but not read from or kept in the store.")
                return None
        return self._secret_value

    # -- reading -----------------------------------------------------------------------------
    def _get(self, key: str) -> Any:
        name = f"{key}{_SUFFIX}"
        try:
            with self._open_folder(create=False) as d:
                if d is None:
                    return _UNSET
                try:
                    fd = d.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
                except (FileNotFoundError, NotADirectoryError):
                    return _UNSET
                except OSError as exc:
                    if exc.errno != errno.ELOOP:
                        raise
                    self._report(("special", key), f"the stored result {name} in {self._entries} is a symbolic "
                                 "link; the store follows none: it is ignored and the result recomputed.")
                    return _UNSET
                with open(fd, "rb", closefd=True) as f:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):
                        self._report(("special", key), f"the stored result {name} in {self._entries} is "
                                     f"{_kind(st.st_mode)}, not a file: it is ignored and the result recomputed.")
                        return _UNSET
                    secret = self._secret()
                    if secret is None:
                        return _UNSET
                    value = self._read_checked(d, f, name, key, st, secret)
                    if value is not _UNSET and os.utime in os.supports_fd:
                        with contextlib.suppress(OSError):
                            os.utime(fd)  # most recently used
                    return value
        except (_Unusable, OSError) as exc:
            self._report_folder(exc, "read")
            return _UNSET

    def _read_checked(self, d: _Folder, f, name: str, key: str, st: os.stat_result, secret: bytes) -> Any:
        """The entry's value, or ``_UNSET`` after reporting a bad one (a corrupt one of ours is removed).

        An entry that does not verify under this store's key is ignored, never removed: it may be
        another user's (the next write of this key replaces it).
        """
        try:
            return self._read(f, key, st, secret)
        except (_OldFormat, _Foreign) as exc:
            if isinstance(exc, _OldFormat) and self._removable(st):
                return _UNSET  # written by an earlier version of this store: replaced by the next write
            reason = "it has no MAC" if isinstance(exc, _OldFormat) else str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure to read back is a corrupt entry
            removed = self._remove(d, name, st)
            self._report(("corrupt", key), f"the stored result {name} in {self._entries} is corrupt or truncated "
                         f"({_reason(exc)}); it was {'removed' if removed else 'ignored'} and will be recomputed.")
            return _UNSET
        owner = f"uid {st.st_uid}" if os.name == "posix" else "unknown"
        self._report(("foreign",), f"the stored result {name} in {self._entries} (owner: {owner}) was not written "
                     f"with this store's key {self.key_file} ({reason}): it was forged, or written by another user "
                     "or with another key. It is ignored and the result recomputed; other such entries are ignored "
                     f"without a warning. A store shared by a team needs one key ({ENV_KEY_FILE}, see "
                     "docs/security.md).")
        return _UNSET

    def _budget(self) -> int:
        with contextlib.suppress(Exception):
            return min(self.max_bytes, memory_budget())
        return self.max_bytes

    def _read(self, f, key: str, st: os.stat_result, secret: bytes) -> Any:
        """Check the archive, its sizes and its MAC, then decode (raises on anything unexpected).

        Every member's size is checked against the header's declared dtype and shape and against
        the budget before it is read: nothing is decompressed (the store writes no compressed
        member) and nothing larger than the file on disk is allocated.
        """
        budget = self._budget()
        if st.st_size > budget:
            raise _Corrupt(f"{st.st_size} bytes, more than the store's bound or the memory budget ({budget})")
        with zipfile.ZipFile(f) as zf:
            infos = zf.infolist()
            if len(infos) > _MEMBERS_MAX:
                raise _Corrupt(f"{len(infos)} members")
            members = {}
            for i in infos:
                if not i.filename.endswith(".npy") or i.filename[:-4] in members:
                    raise _Corrupt(f"an unexpected member {i.filename!r}")
                if i.compress_type != zipfile.ZIP_STORED or i.flag_bits & 0x1:
                    raise _Corrupt(f"a compressed or encrypted member {i.filename!r} (the store writes none)")
                if i.file_size != i.compress_size or i.file_size > st.st_size:
                    raise _Corrupt(f"member {i.filename!r} declares {i.file_size} bytes in a file of {st.st_size}")
                members[i.filename[:-4]] = i
            if _MAC not in members:
                raise _OldFormat() if _OLD_CHECKSUM in members else _Corrupt("no MAC")
            if _META not in members:
                raise _Corrupt("no header")
            if members[_META].file_size > _META_MAX + _NPY_HEADER_MAX or members[_MAC].file_size > 1024:
                raise _Corrupt("a header larger than the store writes")
            header_bytes = _read_member(zf, members[_META], "|u1", None).tobytes()
            mac = _read_member(zf, members[_MAC], "|u1", None).tobytes()
            try:
                header = json.loads(header_bytes.decode())
                declared = header["arrays"]
                if not isinstance(declared, dict):
                    raise TypeError("'arrays' is not a dict")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise _Corrupt(f"an unreadable header ({_reason(exc)})") from None
            names = {n[len(_PREFIX):] for n in members if n.startswith(_PREFIX)}
            if names != set(declared) or len(members) != len(names) + 2:
                raise _Corrupt("its members differ from those its header declares")
            sizes = {name: _declared_nbytes(declared[name]) for name in names}
            if sum(sizes.values()) > budget:
                raise _Corrupt(f"its arrays declare {sum(sizes.values())} bytes, more than the budget ({budget})")
            for name in names:
                size = members[_PREFIX + name].file_size
                if not sizes[name] <= size <= sizes[name] + _NPY_HEADER_MAX:
                    raise _Corrupt(f"member {name!r} holds {size} bytes for an array of {sizes[name]}")
            arrays = {name: _read_member(zf, members[_PREFIX + name], declared[name]["dtype"],
                                         declared[name]["shape"]) for name in names}
        if not hmac.compare_digest(_mac(secret, header_bytes, arrays), mac):
            raise _Foreign("its MAC does not verify")
        if header.get("key") != key:
            raise _Corrupt("written for another key")
        return _decode(arrays, header)

    # -- writing -----------------------------------------------------------------------------
    def _put(self, key: str, value: Any, label: str) -> bool:
        encoded = _encode(value)
        if encoded is None:
            return False
        arrays, header = encoded
        arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
        header = {**header, "key": key, "label": label, "created": time.time(), "arrays": _declared(arrays)}
        header_bytes = json.dumps(to_jsonable(header), sort_keys=True).encode()
        if sum(a.nbytes for a in arrays.values()) + len(header_bytes) > self.max_bytes or \
                len(header_bytes) > _META_MAX:
            return False
        try:
            with self._open_folder(create=True) as d:
                secret = self._secret()
                if secret is None:
                    return False
                members = {_PREFIX + name: a for name, a in arrays.items()}
                members[_META] = np.frombuffer(header_bytes, dtype=np.uint8)
                members[_MAC] = np.frombuffer(_mac(secret, header_bytes, arrays), dtype=np.uint8)
                self._write(d, f"{key}{_SUFFIX}", members)
            self.evict()
        except (OSError, _Unusable) as exc:
            self._report(("folder", str(self._entries)), f"cannot write to the result store at {self._entries} "
                         f"({_reason(exc)}); results are computed but not kept. Free space, or choose another "
                         f"folder with {ENV_DIR} / --cache-dir (or turn the store off with {ENV_DISABLED}=1).")
            return False
        return True

    def _write(self, d: _Folder, name: str, members: dict) -> None:
        """Write ``members`` to a new temporary file (mode 0600 / 0640) and rename it over ``name``."""
        tmp = f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp{_SUFFIX}"
        fd = d.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY,
                    self._file_mode)
        try:
            with open(fd, "wb", closefd=True) as f:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, self._file_mode)  # whatever the umask
                np.savez(f, **members)
            d.replace(tmp, name)
        except BaseException:
            with contextlib.suppress(OSError):
                d.unlink(tmp)
            raise

    def _report(self, what: tuple, message: str) -> None:
        """Warn once per store and ``what``."""
        with self._reported_lock:
            if what in self._reported:
                return
            self._reported.add(what)
        warnings.warn(message, CacheWarning, stacklevel=4)


def _declared_nbytes(record) -> int:
    """Bytes of an array the header declares (raises :class:`_Corrupt` for a malformed record)."""
    try:
        dtype = np.dtype(record["dtype"]) if isinstance(record["dtype"], str) else None
        shape = record["shape"]
        if dtype is None or dtype.kind not in "biufcU" or not isinstance(shape, list) or len(shape) > 32 \
                or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 1 << 62 for s in shape):
            raise ValueError
    except (TypeError, ValueError, KeyError):
        raise _Corrupt(f"a malformed array record {str(record)[:80]}") from None
    n = dtype.itemsize
    for s in shape:
        n *= s
    return n


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: str, shape) -> np.ndarray:
    """Read one ``.npy`` member (no pickle), after checking its own header against the store's.

    The ``.npy`` header's dtype and shape must be those the store's header declares (``shape``
    None: any 1-d length that fits the member), so nothing larger than the member is allocated.
    """
    fmt = np.lib.format
    with zf.open(info) as m:
        version = fmt.read_magic(m)
        if version == (1, 0):
            got_shape, fortran, got_dtype = fmt.read_array_header_1_0(m, max_header_size=_NPY_HEADER_MAX)
        elif version == (2, 0):
            got_shape, fortran, got_dtype = fmt.read_array_header_2_0(m, max_header_size=_NPY_HEADER_MAX)
        else:
            raise _Corrupt(f"member {info.filename!r} has .npy version {version}")
        if got_dtype.hasobject or got_dtype.str != np.dtype(dtype).str or \
                (list(got_shape) != list(shape) if shape is not None else len(got_shape) != 1):
            raise _Corrupt(f"member {info.filename!r} is {got_dtype.str} {got_shape}, not what its header declares")
        nbytes = got_dtype.itemsize * int(np.prod(got_shape, dtype=np.int64))
        if nbytes > info.file_size:
            raise _Corrupt(f"member {info.filename!r} declares {nbytes} bytes in {info.file_size}")
        buf = bytearray(nbytes)
        view, got = memoryview(buf), 0
        while got < nbytes:
            n = m.readinto(view[got:])
            if not n:
                raise _Corrupt(f"member {info.filename!r} ends after {got} of {nbytes} bytes")
            got += n
        if m.read(1):  # also reaches the end, where the member's CRC is checked
            raise _Corrupt(f"member {info.filename!r} holds more than its array")
    return np.frombuffer(buf, dtype=got_dtype).reshape(got_shape, order="F" if fortran else "C")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (_Unusable, _Corrupt)):
        return str(exc)
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


def _options(folder, max_bytes, enabled, key_file=None) -> dict:
    """Validated overrides (``_UNSET`` and None leave a setting alone)."""
    out = {}
    if folder not in (_UNSET, None):
        out["folder"] = Path(os.fspath(folder)).expanduser()
    if key_file not in (_UNSET, None):
        out["key_file"] = Path(os.fspath(key_file)).expanduser().absolute()
    if max_bytes not in (_UNSET, None):
        out["max_bytes"] = _check_max_bytes(max_bytes, "max_bytes")
    if enabled not in (_UNSET, None):
        out["enabled"] = bool(enabled)
    return out


def _default_folder() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir(_APP_NAME, appauthor=False))


def settings() -> dict:
    """The store's effective settings: ``folder``, ``max_bytes``, ``enabled`` and ``key_file``.

    API overrides (:func:`configured`, then :func:`configure`) win over the environment
    (``DIVERSITY_CACHE_DIR``, ``DIVERSITY_CACHE_MAX_BYTES``, ``DIVERSITY_NO_CACHE``,
    ``DIVERSITY_CACHE_KEY_FILE``), which wins over the defaults (the user cache folder,
    :data:`DEFAULT_MAX_BYTES`, enabled, and None: a per-user key in the store's folder).

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
    if "key_file" not in chosen:
        env = os.environ.get(ENV_KEY_FILE, "").strip()
        chosen["key_file"] = Path(env).expanduser().absolute() if env else None
    return chosen


def configure(*, folder=None, max_bytes=None, enabled=None, key_file=None) -> None:
    """Set the store's folder, bound, use or key for this process (None leaves a setting as it is).

    Parameters
    ----------
    folder : str or path-like, optional
        The store's folder (over ``DIVERSITY_CACHE_DIR``).
    max_bytes : int or str, optional
        The bound in bytes or e.g. ``"2G"`` (over ``DIVERSITY_CACHE_MAX_BYTES``).
    enabled : bool, optional
        False turns the store off: nothing is read or written (over ``DIVERSITY_NO_CACHE``).
    key_file : str or path-like, optional
        The key file of a store shared by a team or a cluster (over ``DIVERSITY_CACHE_KEY_FILE``):
        it holds the shared secret, mode 0600 and owned by the user. Worker processes started
        later inherit the environment variable, not this setting: on a cluster, set the variable.
    """
    new = _options(folder, max_bytes, enabled, key_file)
    with _lock:
        _global.update(new)


@contextlib.contextmanager
def configured(*, folder=None, max_bytes=None, enabled=None, key_file=None) -> Iterator[None]:
    """Change the store's settings in this thread for a block (``with configured(enabled=False): ...``)."""
    old = dict(getattr(_local, "overrides", {}))
    _local.overrides = {**old, **_options(folder, max_bytes, enabled, key_file)}
    try:
        yield
    finally:
        _local.overrides = old


def _store_for(chosen: dict) -> ResultStore:
    key_file = chosen.get("key_file")
    key = (str(chosen["folder"]), chosen["max_bytes"], None if key_file is None else str(key_file))
    with _lock:
        if key not in _stores:  # one object per folder, bound and key: warnings are given once
            _stores[key] = ResultStore(chosen["folder"], max_bytes=chosen["max_bytes"], key_file=key_file)
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
        Once per entry, when a stored entry is corrupt (it is recomputed); once per store, when
        an entry was not written with the store's key (forged, another user's: it is ignored and
        recomputed); once per folder, when the folder cannot be written or its lock is held too
        long (the result is returned without being kept, or the store goes on without the lock).

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
    """Remove every entry of the configured store's folder, and the temporary files of writers that are gone.

    Returns the entries and bytes removed (and the temporary files: ``temporaries``, ``temporary_bytes``).
    """
    return _store_for(settings()).clear()


def describe(store_info: StoreInfo) -> str:
    """One line for people: ``'3 entries, 12.4 MiB of 2 GiB in /home/me/.cache/diversity-explorer'``."""
    used = format_bytes(store_info.bytes)
    return (f"{store_info.entries} entr{'y' if store_info.entries == 1 else 'ies'}, {used} of "
            f"{format_bytes(store_info.max_bytes)} in {store_info.folder}")
