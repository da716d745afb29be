"""Output files: written whole or not at all, where the user meant, together with the other outputs of a run.

What a destination path may name (:func:`resolve_output`):

- **a regular file, a new name in an existing folder, or a symbolic link to either**: the data go to
  a hidden temporary file beside the *final* file (links followed), are flushed to disk, and the
  temporary file is renamed over the final file (``os.replace``, atomic within one file system).
  A link therefore stays a link and the file it points to is replaced; a replaced file keeps its
  permissions (and, when written by root, its owner).
- **a character device or a FIFO** (``/dev/null``, a terminal, a named pipe): written through, as a
  stream; nothing is renamed or created there. A FIFO blocks until a reader opens it, as with
  the shell's ``>``.
- **an open descriptor of this process named by a path** (``/dev/stdout``, ``/dev/stderr``,
  ``/dev/fd/N``, ``/proc/self/fd/N``): written to that descriptor at its current position.
- refused with :class:`~diversity_core.exceptions.DiversityInputError`: an empty path, a folder, a
  block device (a disk), a socket, a symbolic link loop, a missing folder, a read-only file.

Several outputs of one run are written in one :func:`output_transaction`: every output goes to its
temporary file first, and only when all were written completely are they moved into place, one
rename each. A failure while writing (a full disk, ``ulimit -f``, permissions) removes every
temporary file and leaves every previous output unchanged; the error names the user's path, never a
temporary file. :func:`atomic_write` and :func:`atomic_output` join the transaction that is active
in the calling context (a :class:`contextvars.ContextVar`, so threads and sessions never share one)
and otherwise form a transaction of their own.

Temporary files are named ``.NAME.PID.RANDOM.tmp.SUFFIX``. SIGINT, and SIGTERM and SIGHUP while a
transaction runs in the main thread (when no other handler was installed), remove them before the
process ends; those left by a process that was killed (SIGKILL, a power cut) are removed by the next
write of the same output once their process is gone or they are older than
:data:`STALE_AFTER_S` seconds.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import secrets
import signal
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional, Union

from .exceptions import DiversityInputError

__all__ = [
    "Destination",
    "OutputTransaction",
    "atomic_output",
    "atomic_write",
    "check_output_folder",
    "check_output_path",
    "output_transaction",
    "resolve_output",
]

PathLike = Union[str, os.PathLike]

#: Age in seconds after which a temporary file of ours whose process may still live is stale.
STALE_AFTER_S = 600.0

#: Longest part of a destination's name kept in its temporary file's name (names are limited to 255 bytes).
_NAME_CHARS = 120

#: ``/proc/self/fd/N``, ``/proc/thread-self/fd/N``, ``/proc/PID/fd/N``, ``/proc/PID/task/TID/fd/N``.
_FD_PATH = re.compile(r"/proc/(?:self|thread-self|(\d+)(?:/task/\d+)?)/fd/(\d+)")

#: Signals that end the process by default and after which the temporary files are removed.
_CLEANUP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))

_active: contextvars.ContextVar = contextvars.ContextVar("diversity_output_transaction", default=None)


@dataclass(frozen=True)
class Destination:
    """Where an output goes (:func:`resolve_output`).

    Attributes
    ----------
    given : str
        The path as the user wrote it (messages quote this one).
    path : Path
        ``kind == "file"``: the final file (symbolic links resolved); otherwise the path to open.
    kind : {"file", "stream", "descriptor"}
        Replaced atomically, written through (character device, FIFO), or written to an open
        descriptor of this process.
    fd : int or None
        The descriptor of ``kind == "descriptor"``.
    exists : bool
        Whether the final file exists (``kind == "file"``).
    """

    given: str
    path: Path
    kind: str
    fd: Optional[int] = None
    exists: bool = False

    def same_as(self, other: Destination) -> bool:
        """Whether both name the same file, device or descriptor."""
        if self.kind == "descriptor" or other.kind == "descriptor":
            return self.kind == other.kind and self.fd == other.fd
        if self.path == other.path:
            return True
        if self.exists and other.exists:
            with contextlib.suppress(OSError):
                return os.path.samefile(self.path, other.path)
        return False


# --------------------------------------------------------------------------------------------
# what a path names
# --------------------------------------------------------------------------------------------


def _descriptor(text: str) -> Optional[int]:
    """The descriptor number when ``text`` leads (through links) to ``/proc/<this process>/fd/N``."""
    p = os.path.abspath(text)
    for _ in range(40):
        head, tail = os.path.split(p)
        p = os.path.join(os.path.realpath(head), tail)  # /dev/fd -> /proc/<pid>/fd
        m = _FD_PATH.fullmatch(p)
        if m is not None:
            return int(m.group(2)) if m.group(1) is None or int(m.group(1)) == os.getpid() else None
        if not os.path.islink(p):
            return None
        try:
            p = os.path.normpath(os.path.join(os.path.dirname(p), os.readlink(p)))
        except OSError:
            return None
    return None


def _kind_phrase(mode: int) -> str:
    """``"a folder"``, ``"a block device"``, ... for messages."""
    for test, phrase in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                         (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                         (stat.S_ISREG, "a file")):
        if test(mode):
            return phrase
    return "not a regular file"


def resolve_output(path: PathLike, *, what: str = "the output") -> Destination:
    """Decide how ``path`` is written, or refuse it.

    Parameters
    ----------
    path : str or path-like
        The destination as the user gave it.
    what : str, default "the output"
        How messages name it (a CLI flag such as ``"--out"``).

    Returns
    -------
    Destination

    Raises
    ------
    DiversityInputError
        An empty path or one with a NUL byte, a folder, a block device, a socket, a symbolic link
        loop, a file in a folder that does not exist, a descriptor path of a closed descriptor.
    """
    text = os.fsdecode(os.fspath(path))
    if not text.strip():
        raise DiversityInputError(f"{what}: the path is empty; give a file name.")
    if "\x00" in text:
        raise DiversityInputError(f"{what}: the path contains a NUL byte; give a file name.")
    fd = _descriptor(text)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError:
            raise DiversityInputError(f"cannot write {text}: descriptor {fd} is not open in this process.") from None
        return Destination(text, Path(text), "descriptor", fd=fd, exists=True)
    final = Path(os.path.realpath(text))
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DiversityInputError(f"cannot write {text}: a symbolic link loop; fix or remove the link.") from None
        raise DiversityInputError(f"cannot write {text}: {exc.strerror or type(exc).__name__}.") from None
    if st is None:
        if not final.parent.is_dir():
            shown = final.parent if os.path.islink(text) else (os.path.dirname(text) or ".")
            raise DiversityInputError(
                f"cannot write {text}: the folder {shown} does not exist; no file was written. Create the folder first."
            )
        return Destination(text, final, "file", exists=False)
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return Destination(text, final, "file", exists=True)
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Destination(text, final, "stream", exists=True)
    if stat.S_ISDIR(mode):
        raise DiversityInputError(f"cannot write {text}: it is a folder; give a file name inside it.")
    if stat.S_ISBLK(mode):
        raise DiversityInputError(
            f"cannot write {text}: it is a block device (a disk or partition); refusing to write over it."
        )
    raise DiversityInputError(f"cannot write {text}: it is {_kind_phrase(mode)}, not a file; give a file name.")


def check_output_path(path: PathLike, *, what: str = "the output") -> Destination:
    """:func:`resolve_output` plus the permissions, for a check before any work.

    Also refuses a folder this process cannot write into and an existing file or device it may
    not write (a read-only file is not replaced behind its owner's back).
    """
    dest = resolve_output(path, what=what)
    if dest.kind == "file":
        folder = dest.path.parent
        if not os.access(folder, os.W_OK | os.X_OK):
            raise DiversityInputError(
                f"cannot write {dest.given}: the folder {folder} is not writable; choose another path."
            )
        if dest.exists and not os.access(dest.path, os.W_OK):
            raise DiversityInputError(
                f"cannot write {dest.given}: the file is read-only; make it writable or choose another path."
            )
    elif dest.kind == "stream" and not os.access(dest.path, os.W_OK):
        raise DiversityInputError(f"cannot write {dest.given}: permission denied.")
    return dest


def check_output_folder(path: PathLike, *, what: str = "the output folder") -> Path:
    """Check that ``path`` is, or can be created as, a folder this process can write into.

    Returns the path (not created). Raises :class:`DiversityInputError` for an empty path, an
    existing path that is not a folder (a file, ``/dev/full``), and a folder (or the nearest
    existing parent of a missing one) that is not writable.
    """
    text = os.fsdecode(os.fspath(path))
    if not text.strip():
        raise DiversityInputError(f"{what}: the path is empty; give a folder.")
    p = Path(text)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise DiversityInputError(f"cannot write into {text}: {exc.strerror or type(exc).__name__}.") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise DiversityInputError(f"{what} {text} is {_kind_phrase(st.st_mode)}, not a folder; give a folder.")
    existing = Path(os.path.realpath(p))
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise DiversityInputError(f"{what} {text}: {existing} is {_kind_phrase(os.stat(existing).st_mode)}, "
                                  "not a folder; give a folder.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DiversityInputError(f"cannot write into {text}: the folder {existing} is not writable; choose another.")
    return p


def make_output_folder(path: PathLike, *, what: str = "the output folder") -> Path:
    """Create ``path`` (and its parents) for outputs; created folders are removed again if the transaction fails."""
    p = check_output_folder(path, what=what)
    missing = []
    q = Path(os.path.abspath(p))
    while not q.exists():
        missing.append(q)
        q = q.parent
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DiversityInputError(f"cannot create the folder {p}: {exc.strerror or type(exc).__name__}.") from None
    tx = _active.get()
    if tx is not None:
        tx._created_folders.extend(missing)  # deepest first
    return p


# --------------------------------------------------------------------------------------------
# temporary files
# --------------------------------------------------------------------------------------------


def _stem(name: str) -> str:
    return name[:_NAME_CHARS]


def _temporary_name(final: Path) -> Path:
    """A hidden, unpredictable name beside ``final`` with this process's id (``.r.html.812.3f9a....tmp.html``)."""
    return final.with_name(f".{_stem(final.name)}.{os.getpid()}.{secrets.token_hex(6)}.tmp{final.suffix}")


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _remove_stale(final: Path) -> List[str]:
    """Remove the temporary files of earlier writes of ``final`` whose process is gone or that are old.

    Matches this module's naming (``.NAME.PID.RANDOM.tmp.SUFFIX``), its former one without a pid and
    the former ``tempfile.mkstemp`` naming of ``diversity curate`` (``.NAME.XXXXXXXX.tmp``). Returns
    the names removed.
    """
    stem = re.escape(_stem(final.name))
    ours = re.compile(rf"\.{stem}\.(?:(\d+)\.)?[0-9a-f]{{12}}\.tmp{re.escape(final.suffix)}")
    former = re.compile(rf"\.{re.escape(final.name)}\.[a-z0-9_]{{8}}\.tmp")
    prefix = f".{_stem(final.name)}."
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(final.parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        m = ours.fullmatch(entry.name)
        if m is None and former.fullmatch(entry.name) is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        pid = int(m.group(1)) if m is not None and m.group(1) else None
        if (pid is not None and not _alive(pid)) or now - st.st_mtime > STALE_AFTER_S:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def _create(tmp: Path, final: Path) -> None:
    """Create ``tmp`` exclusively (0o666 less the umask, or the mode and owner of an existing ``final``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        try:
            st = os.stat(final)
        except OSError:
            return
        if stat.S_ISREG(st.st_mode) and hasattr(os, "fchmod"):
            os.fchmod(fd, stat.S_IMODE(st.st_mode))
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
    finally:
        os.close(fd)


def _remove_quietly(tmp: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _fsync_folder(folder: Path) -> None:
    """Flush the folder entry of a rename (POSIX; best effort)."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# --------------------------------------------------------------------------------------------
# the transaction
# --------------------------------------------------------------------------------------------


@dataclass
class _Staged:
    dest: Destination
    tmp: Path
    done: bool = False


@dataclass
class OutputTransaction:
    """The outputs of one run: staged in temporary files, moved into place together by :meth:`commit`.

    Made by :func:`output_transaction`; :func:`atomic_write` and :func:`atomic_output` add to the
    active one. ``written`` lists the destinations (as given) once committed.
    """

    written: List[str] = field(default_factory=list)
    _staged: List[_Staged] = field(default_factory=list)
    _created_folders: List[Path] = field(default_factory=list)
    _handlers: dict = field(default_factory=dict)

    def stage(self, path: PathLike) -> _Staged:
        """Resolve ``path``, create its (empty) temporary file and add it to the transaction."""
        dest = resolve_output(path)
        for other in self._staged:
            if dest.same_as(other.dest):
                raise DiversityInputError(
                    f"{dest.given} is written twice in one run (also as {other.dest.given}); give each output "
                    "its own path."
                )
        if dest.kind == "file":
            if dest.exists and not os.access(dest.path, os.W_OK):
                raise DiversityInputError(
                    f"cannot write {dest.given}: the file is read-only; make it writable or choose another path."
                )
            _remove_stale(dest.path)
            tmp = _temporary_name(dest.path)
            try:
                _create(tmp, dest.path)
            except OSError as exc:
                _remove_quietly(tmp)
                raise self.failure(dest, exc) from None
        else:
            try:
                fd, name = tempfile.mkstemp(prefix=".diversity-output.", suffix=".tmp")
                os.close(fd)
            except OSError as exc:
                raise self.failure(dest, exc) from None
            tmp = Path(name)
        staged = _Staged(dest, tmp)
        self._staged.append(staged)
        return staged

    def failure(self, dest: Destination, exc: OSError, *, written=(), partial: bool = False) -> DiversityInputError:
        """The one-line error of a failed write of ``dest``: the reason and what was (not) changed."""
        reason = exc.strerror or str(exc) or type(exc).__name__
        others = [s.dest.given for s in self._staged if s.dest is not dest and s.dest.given not in written]
        if dest.kind == "file":
            state = "the previous file is unchanged" if dest.exists else "no file was written"
        else:
            state = "part of the output may have gone through" if partial else "nothing was written to it"
        text = f"cannot write {dest.given}: {reason}; {state}."
        if written:
            text += f" Already written: {', '.join(written)}."
        if others:
            text += f" Not written (unchanged): {', '.join(others)}."
        hint = " Free space or choose another path." if dest.kind == "file" else ""
        return DiversityInputError(text + hint)

    def failure_from(self, exc: OSError) -> DiversityInputError:
        """An error raised by a writer: named after the destination whose temporary file it names."""
        names = {os.fsdecode(n) for n in (exc.filename, getattr(exc, "filename2", None)) if n is not None}
        for s in self._staged:
            if str(s.tmp) in names or os.path.abspath(str(s.tmp)) in {os.path.abspath(n) for n in names}:
                return self.failure(s.dest, exc)
        reason = exc.strerror or str(exc) or type(exc).__name__
        shown = ", ".join(s.dest.given for s in self._staged) or "the outputs"
        return DiversityInputError(f"cannot write {shown}: {reason}; no output was changed. "
                                   "Free space or choose another path.")

    def _copy_to_stream(self, s: _Staged) -> None:
        """Write a staged stream output through its device, FIFO or descriptor."""
        dest = s.dest
        if dest.kind == "descriptor":
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    if stream is not None and stream.fileno() == dest.fd:
                        stream.flush()
            out, close = dest.fd, False
        else:
            out = os.open(dest.path, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
            close = True
        try:
            with open(s.tmp, "rb") as src:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    _write_all(out, chunk)
        finally:
            if close:
                os.close(out)

    def commit(self) -> List[str]:
        """Move every staged output into place: streams are written first, then each file is renamed.

        Raises :class:`DiversityInputError` naming the output that failed, those already written
        and those left unchanged; every remaining temporary file is removed.
        """
        order = [s for s in self._staged if s.dest.kind != "file"] + [s for s in self._staged if s.dest.kind == "file"]
        for s in order:
            try:
                if s.dest.kind == "file":
                    os.replace(s.tmp, s.dest.path)
                else:
                    self._copy_to_stream(s)
                    _remove_quietly(s.tmp)
            except OSError as exc:
                error = self.failure(s.dest, exc, written=tuple(self.written), partial=s.dest.kind != "file")
                self.abort()
                raise error from None
            s.done = True
            self.written.append(s.dest.given)
        for folder in dict.fromkeys(s.dest.path.parent for s in self._staged if s.dest.kind == "file"):
            _fsync_folder(folder)
        self._created_folders.clear()
        return list(self.written)

    def abort(self) -> None:
        """Remove every temporary file not yet moved into place (and folders made for them, when empty)."""
        for s in self._staged:
            if not s.done:
                _remove_quietly(s.tmp)
        for folder in self._created_folders:
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._created_folders.clear()

    # signals: SIGTERM/SIGHUP end the process through SystemExit, so the temporary files are removed
    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in _CLEANUP_SIGNALS:
            with contextlib.suppress(ValueError, OSError, TypeError):
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._handlers[sig] = signal.signal(sig, _exit_on_signal)

    def _restore_handlers(self) -> None:
        for sig, previous in self._handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, previous)
        self._handlers.clear()


def _exit_on_signal(signum, frame) -> None:
    """Handler of SIGTERM/SIGHUP during a transaction: unwind (removing temporary files), exit 128 + signum."""
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def output_transaction() -> Iterator[OutputTransaction]:
    """Write several outputs together: all of them are replaced at the end, or none is.

    Every :func:`atomic_write` / :func:`atomic_output` (and so ``Comparison.to_json(path)``,
    ``write_report``, ``export_figures``) inside the block writes a temporary file; when the block
    ends without an exception they are moved into place together (:meth:`OutputTransaction.commit`),
    otherwise all are removed. Inside another transaction the block joins it.

    Yields
    ------
    OutputTransaction
        ``written`` lists the destinations once the block has ended.

    Raises
    ------
    DiversityInputError
        A write failed (its ``OSError`` is named after the user's path, with what was left unchanged).

    Examples
    --------
    >>> with output_transaction() as tx:  # doctest: +SKIP
    ...     atomic_write("scores.json", text)
    ...     atomic_write("scores.csv", table)
    >>> tx.written  # doctest: +SKIP
    ['scores.json', 'scores.csv']
    """
    outer = _active.get()
    if outer is not None:
        yield outer
        return
    tx = OutputTransaction()
    token = _active.set(tx)
    tx._install_handlers()
    try:
        try:
            yield tx
        except OSError as exc:
            error = tx.failure_from(exc)
            tx.abort()
            raise error from None
        except BaseException:
            tx.abort()
            raise
        tx.commit()
    finally:
        _active.reset(token)
        tx._restore_handlers()


@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; moved into place when the block succeeds.

    For writers that want a file name (kaleido, ``savefig``). The temporary file exists (empty)
    when the block starts. Inside an :func:`output_transaction` it is moved into place when the
    transaction ends; otherwise when this block ends. On an exception the temporary file is
    removed and the destination is left as it was; an ``OSError`` becomes a
    :class:`DiversityInputError` that names ``path`` and says so. See the module docstring for
    devices, FIFOs, descriptors and links.
    """
    with output_transaction() as tx:
        staged = tx.stage(path)
        try:
            yield staged.tmp
        except OSError as exc:
            raise tx.failure(staged.dest, exc) from None


def atomic_write(path: PathLike, data: Union[bytes, str], *, encoding: str = "utf-8") -> Path:
    """Write ``data`` to ``path`` atomically: the old file stays whole until the new one is complete.

    Parameters
    ----------
    path : str or path-like
        The destination: a file (its folder must exist), a symbolic link (the file it points to is
        replaced), a character device or FIFO (written through), ``/dev/stdout`` and the like.
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
        missing folder) or the path is refused (:func:`resolve_output`): the temporary file is
        removed, the previous file is unchanged, and the message says so.

    Examples
    --------
    >>> atomic_write("result.json", '{"vendi": 3.2}\\n')  # doctest: +SKIP
    PosixPath('result.json')
    """
    target = Path(os.fspath(path))
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    with atomic_output(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
    return target
