"""Which paths a loader may open, and how a file is read without hanging or reading without end.

Two concerns live here:

- **The data-folder policy** for paths typed by someone who is not the machine's owner (a
  visitor of a served app): :func:`resolve_user_path` resolves symbolic links and refuses
  anything outside the configured data folder, and refuses every path when no data folder is
  configured. Its refusal never says whether a file outside the folder exists: a missing file,
  a file outside, a hidden file and an unreadable one all get the same message.
- **Reading only regular files**: :func:`stat_input` turns ``stat`` failures into clear errors
  (a symbolic link loop is named as such), :func:`read_regular_bytes` opens a file without
  blocking (a FIFO named ``*.png`` cannot hang the reader), checks on the open descriptor that it
  is a regular file (not a device such as ``/dev/zero``, a socket or a FIFO) and reads at most a
  given number of bytes.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Optional, Union

from ..exceptions import DiversityInputError

PathLike = Union[str, os.PathLike]

__all__ = ["resolve_user_path", "is_within", "stat_input", "read_regular_bytes", "read_head", "file_kind",
           "human_bytes"]


def human_bytes(n: int) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - loop always returns


def _not_found(shown: str) -> DiversityInputError:
    """The one refusal of the data-folder policy (the same for missing, outside, hidden and unreadable)."""
    return DiversityInputError(
        f"{shown!r}: no such file or folder in the data folder. Paths are relative to the data folder; "
        "files outside it cannot be opened."
    )


def _data_root(data_dir: PathLike) -> Path:
    """The data folder, resolved; a configuration error (not a visitor's) when it is not a folder."""
    try:
        root = Path(os.path.realpath(os.fspath(data_dir), strict=True))
    except (OSError, ValueError) as exc:
        raise DiversityInputError(f"the configured data folder {os.fspath(data_dir)!r} cannot be opened ({exc}).") from None
    if not root.is_dir():
        raise DiversityInputError(f"the configured data folder {str(root)!r} is not a folder.")
    return root


def is_within(path: PathLike, root: PathLike) -> bool:
    """Whether ``path`` is ``root`` or lies below it (both taken as given; resolve them first)."""
    p, r = Path(path), Path(root)
    return p == r or r in p.parents


def resolve_user_path(path: PathLike, *, data_dir: Optional[PathLike]) -> Path:
    """Resolve a path given by a visitor inside ``data_dir``, or refuse it.

    Parameters
    ----------
    path : str or path-like
        Relative to ``data_dir`` (an absolute path is accepted only when it lies inside it).
        ``~`` is not expanded.
    data_dir : str, path-like or None
        The folder a visitor may read from. ``None`` means reading server files is turned off:
        every path is refused.

    Returns
    -------
    Path
        The resolved path (symbolic links followed), an existing file or folder inside
        ``data_dir``.

    Raises
    ------
    DiversityInputError
        When ``data_dir`` is ``None``; when ``path`` is empty, holds a NUL byte, names a hidden
        entry (a part starting with ``.``), resolves (through ``..`` or symbolic links) outside
        ``data_dir``, does not exist, cannot be examined, or is neither a regular file nor a
        folder (a FIFO, socket or device). All of these but the first two give
        the same message, which names only the path as given, so a refusal never tells whether
        a file exists outside the folder.

    Notes
    -----
    Symbolic links inside the folder are followed as long as their target stays inside it. The
    check and the later open are not atomic: a visitor who can also write into the data folder
    could swap a link in between. Loaders given ``data_dir=`` re-check every member of a folder.

    Examples
    --------
    >>> resolve_user_path("../../etc/passwd", data_dir="/srv/data")  # doctest: +SKIP
    Traceback (most recent call last):
    DiversityInputError: '../../etc/passwd': no such file or folder in the data folder. ...
    """
    if data_dir is None:
        raise DiversityInputError(
            "reading files from the server is turned off (no data folder is configured); upload the file instead."
        )
    raw = os.fspath(path)
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    if not raw.strip():
        raise DiversityInputError("the path is empty; give a file or folder inside the data folder.")
    if "\x00" in raw:
        raise DiversityInputError("the path contains a NUL character; give a file or folder inside the data folder.")
    root = _data_root(data_dir)
    return _resolve_inside(raw, root)


def _resolve_inside(raw: str, root: Path) -> Path:
    """``raw`` resolved below ``root`` (which is resolved), or the policy's one refusal."""
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = Path(os.path.realpath(candidate, strict=True))
    except (OSError, ValueError, RuntimeError):
        # missing, a loop, a permission problem on the way, or outside: one message for all
        raise _not_found(raw) from None
    if not is_within(resolved, root):
        raise _not_found(raw)
    relative = resolved.relative_to(root).parts
    if any(part.startswith(".") for part in relative):
        raise _not_found(raw)
    try:
        mode = os.stat(resolved).st_mode
    except OSError:
        raise _not_found(raw) from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        # a FIFO, socket or device holds no data to serve: the one refusal, not a message of its own
        # that quoted the server's absolute path (issue 26, item 14)
        raise _not_found(raw)
    return resolved


def file_kind(mode: int) -> str:
    """A word for a non-regular file type: ``"FIFO"``, ``"character device"``, ..."""
    for test, word in (
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return word
    return "special file"


def stat_input(path: PathLike, *, shown: Optional[str] = None) -> os.stat_result:
    """``os.stat(path)`` (links followed) with one clear error per failure.

    A missing path, a symbolic link loop, a path through a file, a name too long and a
    permission problem are each named; the message quotes ``shown`` (default: the path).
    """
    shown = str(path) if shown is None else shown
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise DiversityInputError(f"{shown}: a symbolic link to a missing file; check the link.") from None
        raise DiversityInputError(f"{shown}: no such file or folder; check the path.") from None
    except PermissionError:
        raise DiversityInputError(f"{shown}: permission denied; the file cannot be read.") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DiversityInputError(
                f"{shown}: a symbolic link loop (the link points, directly or through others, back to itself)."
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise DiversityInputError(f"{shown}: no such file or folder (a part of the path is a file).") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise DiversityInputError(f"{shown}: the path is too long.") from None
        raise DiversityInputError(f"{shown}: cannot be examined ({exc.strerror or type(exc).__name__}).") from None
    except ValueError:  # an embedded NUL byte
        raise DiversityInputError(f"{shown!r}: not a valid path.") from None


def read_head(path: PathLike, n: int, *, shown: Optional[str] = None) -> bytes:
    """The first ``n`` bytes (or fewer) of a regular file, with the checks of :func:`read_regular_bytes`."""
    return _read(path, n, shown=shown, whole=False)


def read_regular_bytes(path: PathLike, limit: int, *, shown: Optional[str] = None) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them, or a clear error.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO does not wait for a writer), its type
    is checked on the open descriptor with ``fstat`` (so a file swapped for a device between a
    listing and the read is still caught), and at most ``limit + 1`` bytes are read: a file
    that grows past the limit, or a ``/proc`` file whose size ``stat`` reports as 0, is refused
    instead of read without end.
    """
    return _read(path, limit, shown=shown, whole=True)


def _read(path: PathLike, limit: int, *, shown: Optional[str], whole: bool) -> bytes:
    """Read a regular file: all of it (refusing more than ``limit`` bytes) or its first ``limit`` bytes."""
    shown = str(path) if shown is None else shown
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    stat_input(path, shown=shown)  # the clear message for missing files and loops
    try:
        fd = os.open(path, flags)
    except PermissionError:
        raise DiversityInputError(f"{shown}: permission denied; the file cannot be read.") from None
    except OSError as exc:
        raise DiversityInputError(f"{shown}: cannot be opened ({exc.strerror or type(exc).__name__}).") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DiversityInputError(
                f"{shown}: not a regular file (a {file_kind(st.st_mode)}); only regular files are read."
            )
        chunks, total = [], 0
        stop = limit + 1 if whole else limit
        while total < stop:
            try:
                chunk = os.read(fd, min(1 << 20, stop - total))
            except OSError as exc:
                raise DiversityInputError(
                    f"{shown}: read error ({exc.strerror or type(exc).__name__})."
                ) from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if whole and total > limit:
            raise DiversityInputError(
                f"{shown}: more than {human_bytes(limit)} were read (the size limit); the file is larger than "
                "it claims or still growing. Raise the limit with max_bytes= (CLI: --max-bytes) if you trust it."
            )
        return b"".join(chunks)
    finally:
        os.close(fd)
