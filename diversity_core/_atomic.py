"""Output files written whole or not at all: a temporary file in the same folder, then ``os.replace``.

A report, a JSON or CSV export or a figure is first written to a hidden temporary file next to
its destination, flushed to disk, and only then renamed over the destination (``os.replace`` is
atomic on POSIX and Windows within one file system). When the write fails (disk full, a file
size limit such as ``ulimit -f``, a read-only folder), the temporary file is removed and the
previous file at the destination, if any, is left exactly as it was; the error says so.

A new file gets the usual permissions (``0o666`` less the umask); a replaced file keeps the
permissions it had.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Iterator, Union

from .exceptions import DiversityInputError

__all__ = ["atomic_write", "atomic_output"]

PathLike = Union[str, os.PathLike]


def _failure(path: Path, exc: OSError) -> DiversityInputError:
    """The error of a failed write (the reason, and that the previous file is intact)."""
    reason = exc.strerror or type(exc).__name__
    previous = "the previous file is unchanged" if path.exists() else "no file was written"
    return DiversityInputError(f"cannot write {path}: {reason}; {previous}. Free space or choose another path.")


def _temporary_name(path: Path) -> Path:
    """A hidden, unpredictable name beside ``path`` that keeps its suffix (``.report.html.3f9a....tmp.html``)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp{path.suffix}")


def _create(tmp: Path, target: Path) -> int:
    """Create ``tmp`` exclusively (mode 0o666 less the umask, or the mode of an existing ``target``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        st = os.stat(target)
    except OSError:
        return fd
    if stat.S_ISREG(st.st_mode) and hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
    return fd


def _remove_quietly(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _fsync_folder(folder: Path) -> None:
    """Flush the folder entry of the rename (POSIX; best effort)."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: PathLike, data: Union[bytes, str], *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` atomically: the old file stays whole until the new one is complete.

    Parameters
    ----------
    path : str or path-like
        The destination. Its folder must exist.
    data : bytes or str
        The content; ``str`` is encoded with ``encoding``.
    encoding : str, default "utf-8"

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    DiversityInputError
        When the write fails (``ENOSPC``, ``EFBIG`` from a file size limit, permissions, a
        missing folder): the temporary file is removed, the previous file is unchanged, and the
        message says so.

    Examples
    --------
    >>> atomic_write("result.json", '{"vendi": 3.2}\\n')  # doctest: +SKIP
    PosixPath('result.json')
    """
    target = Path(os.fspath(path))
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    with atomic_output(target) as tmp:
        fd = os.open(tmp, os.O_WRONLY | getattr(os, "O_BINARY", 0))
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
    return target


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; moved over ``path`` when the block succeeds.

    For writers that want a file name (kaleido, ``savefig``). The temporary file exists (empty)
    when the block starts. On any exception in the block it is removed and the destination is
    left as it was; an ``OSError`` becomes a :class:`DiversityInputError` that says so.
    """
    target = Path(os.fspath(path))
    tmp = _temporary_name(target)
    try:
        os.close(_create(tmp, target))
    except OSError as exc:
        raise _failure(target, exc) from None
    try:
        yield tmp
        os.replace(tmp, target)
    except OSError as exc:
        _remove_quietly(tmp)
        raise _failure(target, exc) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fsync_folder(target.parent)
