"""File plumbing for the loaders: size limits, safe ``.npy``/``.npz`` reading, zip safety, encodings.

Nothing here interprets the content; the format modules (:mod:`.embeddings`, :mod:`.images`,
:mod:`.text`, :mod:`.molecules`) call these helpers so that every file-level failure raises the
same :class:`~diversity_core.exceptions.DiversityInputError`, naming the file and what to do.
"""

from __future__ import annotations

import codecs
import io
import os
import posixpath
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional, Union

import numpy as np

from .._config import check_memory
from ..exceptions import DiversityInputError
from ._paths import file_kind, human_bytes, read_regular_bytes, stat_input

PathLike = Union[str, os.PathLike]

#: Default largest input the loaders accept, in bytes (1 GiB). A folder or zip counts its
#: images' total (uncompressed) size. Pass ``max_bytes=`` / ``--max-bytes`` to change it.
DEFAULT_MAX_BYTES = 1 << 30

#: ``.npy`` files larger than this are memory-mapped instead of read into memory.
MMAP_THRESHOLD_BYTES = 64 << 20


def check_max_bytes(max_bytes) -> int:
    """Validate the ``max_bytes`` option (a positive integer)."""
    try:
        value = int(max_bytes)
    except (TypeError, ValueError):
        raise DiversityInputError(f"max_bytes must be a positive integer; got {max_bytes!r}.") from None
    if value <= 0 or value != max_bytes:
        raise DiversityInputError(f"max_bytes must be a positive integer; got {max_bytes!r}.")
    return value


def check_path(path: PathLike) -> Path:
    """Return ``path`` as a :class:`Path` that exists, or raise a clear error.

    An empty path is refused (``Path("")`` would be the current folder), and a symbolic link
    loop is named as such rather than reported missing.
    """
    raw = os.fspath(path)
    if not str(raw).strip():
        raise DiversityInputError("the path is empty; give a file or folder.")
    p = Path(raw).expanduser()
    stat_input(p)
    return p


def check_size(path: Path, size: int, max_bytes: int, *, what: str = "file") -> None:
    """Raise when ``size`` exceeds the configured limit."""
    if size > max_bytes:
        shown, limit = human_bytes(size), human_bytes(max_bytes)
        if shown == limit:  # rounding hides the difference: exact counts
            shown, limit = f"{size} bytes", f"{max_bytes} bytes"
        raise DiversityInputError(
            f"{path}: the {what} is {shown}, over the size limit of {limit}. "
            "Raise the limit with max_bytes= (CLI: --max-bytes) if you trust the file, or load a subsample."
        )


def check_file(path: Path, max_bytes: int) -> int:
    """Check that ``path`` is a regular, non-empty file within the size limit; return its size."""
    st = stat_input(path)
    if stat.S_ISDIR(st.st_mode):
        raise DiversityInputError(f"{path}: expected a file, found a folder.")
    if not stat.S_ISREG(st.st_mode):
        raise DiversityInputError(
            f"{path}: not a regular file (a {file_kind(st.st_mode)}); only regular files are read."
        )
    size = st.st_size
    if size == 0:
        raise DiversityInputError(f"{path}: the file is empty; there is nothing to measure.")
    check_size(path, size, max_bytes)
    return size


# --------------------------------------------------------------------------------------------
# text decoding
# --------------------------------------------------------------------------------------------

_BOMS = {
    b"\xff\xfe\x00\x00": "UTF-32-LE",
    b"\x00\x00\xfe\xff": "UTF-32-BE",
    b"\xff\xfe": "UTF-16-LE",
    b"\xfe\xff": "UTF-16-BE",
}


def decode_utf8(data: bytes, where: str) -> str:
    """Decode bytes as UTF-8 (a leading BOM is dropped) or raise naming the line and column.

    Other encodings are not guessed: the message says where the first undecodable byte is and
    how to re-save the file.
    """
    for bom, name in _BOMS.items():
        if data.startswith(bom):
            raise DiversityInputError(
                f"{where}: the file is encoded as {name}, not UTF-8. Re-save it as UTF-8 "
                f"(e.g. `iconv -f {name} -t UTF-8 in > out`)."
            )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise DiversityInputError(
            f"{where}: not valid UTF-8 (byte 0x{data[start]:02x} at line {line}, column {column}). "
            "Re-save the file as UTF-8 (e.g. `iconv -f latin1 -t UTF-8 in > out`)."
        ) from None


def decode_head(data: bytes, where: str, *, final: bool) -> str:
    """Decode the first bytes of a UTF-8 file (``final``: they are the whole file), as :func:`decode_utf8`.

    A multi-byte character cut at the end of a head that is not the whole file is left out
    instead of reported.
    """
    if any(data.startswith(bom) for bom in _BOMS):
        decode_utf8(data[:4], where)  # raises, naming the encoding
    try:
        return codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=final)
    except UnicodeDecodeError:
        return decode_utf8(data, where)  # raises, naming the line and column


class _Bounded(io.RawIOBase):
    """A binary file read through without holding it: refuses more than ``limit`` bytes."""

    def __init__(self, fh, limit: int, where: str):
        self._fh, self._limit, self._where, self._read = fh, limit, where, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._fh.readinto(buffer)
        self._read += n or 0
        if self._read > self._limit:
            raise DiversityInputError(
                f"{self._where}: more than {human_bytes(self._limit)} were read (the size limit); the file is "
                "larger than it claims or still growing. Raise the limit with max_bytes= (CLI: --max-bytes) "
                "if you trust it."
            )
        return n

    def close(self) -> None:
        self._fh.close()
        super().close()


def open_input(path: Path, max_bytes: int) -> io.BufferedReader:
    """A regular input file opened for streaming (binary, 1 MiB buffer) within the size limit.

    The checks of :func:`read_input_bytes` (a regular file, checked again on the open
    descriptor; opened without waiting on a FIFO; never more than ``max_bytes`` read), without
    the file's bytes held in memory: tables are parsed from it as it is read.
    """
    check_file(path, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise DiversityInputError(f"{path}: cannot be opened ({exc.strerror or type(exc).__name__}).") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise DiversityInputError(f"{path}: not a regular file (a {file_kind(st.st_mode)}); only regular files are read.")
    return io.BufferedReader(_Bounded(io.FileIO(fd, "rb"), max_bytes, str(path)), buffer_size=1 << 20)


def read_input_bytes(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular, non-empty input file within the size limit (see :func:`check_file`)."""
    check_file(path, max_bytes)
    return read_regular_bytes(path, max_bytes)


def read_text_file(path: Path, max_bytes: int) -> str:
    """Read a whole text file as UTF-8 after the size checks."""
    text = decode_utf8(read_input_bytes(path, max_bytes), str(path))
    if not text.strip():
        raise DiversityInputError(f"{path}: the file holds only blank space; there is nothing to measure.")
    return text


# --------------------------------------------------------------------------------------------
# .npy / .npz, never unpickled
# --------------------------------------------------------------------------------------------

_PICKLE_HINT = (
    "it holds pickled Python objects, which are never loaded (unpickling can run arbitrary code). "
    "Save a plain numeric array instead, e.g. np.save(path, np.asarray(X, dtype=np.float32))."
)


def _npy_header(fh, where: str):
    """Read an .npy header: (shape, fortran_order, dtype)."""
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(fh)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(fh)
        raise ValueError(f"unsupported .npy version {version}")
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises ValueError, SyntaxError, TokenError, ...
        # numpy's messages quote the header bytes; name the problem without the file's content
        raise DiversityInputError(
            f"{where}: not a valid .npy file ({_npy_problem(exc)}). Save arrays with numpy.save."
        ) from None


def _npy_problem(exc: BaseException) -> str:
    """What is wrong with an .npy header, in words that quote nothing from the file."""
    text = str(exc)
    if "magic string" in text or isinstance(exc, EOFError):
        return "it does not start with the .npy signature"
    if "version" in text:
        return "unsupported .npy format version"
    return "its header cannot be parsed"


def _check_npy_dtype(dtype: np.dtype, where: str) -> None:
    if dtype.hasobject:
        raise DiversityInputError(f"{where}: {_PICKLE_HINT}")


def _npy_count(shape, where: str) -> int:
    """Number of elements a header announces, refusing counts that overflow."""
    count = 1
    for dim in shape:
        count *= int(dim)
    if count >= 1 << 62:
        raise DiversityInputError(f"{where}: the .npy header announces an impossible shape {tuple(shape)}.")
    return count


def load_npy(path: Path, max_bytes: int, *, mmap_threshold: Optional[int] = None) -> np.ndarray:
    """Load an ``.npy`` array with ``allow_pickle=False``; memory-map it when large.

    The header is read first, so object arrays are rejected before any data is touched, and a
    truncated file is reported as such.
    """
    if mmap_threshold is None:
        mmap_threshold = MMAP_THRESHOLD_BYTES
    size = check_file(path, max_bytes)
    with open(path, "rb") as fh:
        shape, fortran, dtype = _npy_header(fh, str(path))
        offset = fh.tell()
    _check_npy_dtype(dtype, str(path))
    expected = offset + _npy_count(shape, str(path)) * dtype.itemsize
    if size > expected:
        raise DiversityInputError(
            f"{path}: {size - expected} bytes follow the array the header announces (shape {tuple(shape)} of "
            f"{dtype}); they would be ignored. Several arrays saved into one file? Save them with numpy.savez."
        )
    if size < expected:
        raise DiversityInputError(
            f"{path}: the .npy file is truncated (header announces shape {tuple(shape)} of {dtype}, "
            f"{human_bytes(expected)}, but the file has {human_bytes(size)}). Re-export it."
        )
    try:
        if size >= mmap_threshold:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise DiversityInputError(f"{path}: cannot read the .npy file ({exc}).") from None


@dataclass(frozen=True)
class NpyLayout:
    """Where the rows of a 2-D ``.npy`` file lie: shape, dtype and the byte offset of row 0."""

    path: Path
    shape: tuple
    dtype: np.dtype
    offset: int

    @property
    def row_bytes(self) -> int:
        """Bytes per row."""
        return int(self.shape[1]) * self.dtype.itemsize


def npy_layout(path: Path, *, where: Optional[str] = None) -> NpyLayout:
    """Read and check the header of a 2-D numeric ``.npy`` file without touching its data.

    No size limit applies (the rows are streamed, never loaded whole); pickled, structured,
    truncated, Fortran-ordered and non-2-D files are refused with a message saying what to do.
    """
    where = where or str(path)
    if path.is_dir():
        raise DiversityInputError(f"{where}: expected an .npy file, found a folder.")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        shape, fortran, dtype = _npy_header(fh, where)
        offset = fh.tell()
    _check_npy_dtype(dtype, where)
    if dtype.fields is not None or not (np.issubdtype(dtype, np.number) or dtype == np.bool_):
        raise DiversityInputError(
            f"{where}: the array has dtype {dtype}; a feature matrix must be numeric. Save a float array."
        )
    if np.issubdtype(dtype, np.complexfloating):
        raise DiversityInputError(f"{where}: complex-valued features are not supported; use real numbers.")
    if len(shape) != 2:
        raise DiversityInputError(
            f"{where}: expected a 2-D array (items x features); got shape {tuple(shape)}. "
            "Flatten each item to one row."
        )
    if fortran and shape[0] > 1 and shape[1] > 1:
        raise DiversityInputError(
            f"{where}: the array is stored column by column (Fortran order), so its rows cannot be "
            "streamed. Re-save it with np.save(path, np.ascontiguousarray(X))."
        )
    expected = offset + int(shape[0]) * int(shape[1]) * dtype.itemsize
    if size < expected:
        raise DiversityInputError(
            f"{where}: the .npy file is truncated (header announces shape {tuple(shape)} of {dtype}, "
            f"{human_bytes(expected)}, but the file has {human_bytes(size)}). Re-export it."
        )
    return NpyLayout(path=path, shape=(int(shape[0]), int(shape[1])), dtype=dtype, offset=int(offset))


def read_npy_rows(layout: NpyLayout, start: int, stop: int, *, out: Optional[np.ndarray] = None,
                  fh=None) -> np.ndarray:
    """Rows ``start:stop`` of a C-ordered ``.npy`` file, read with plain file reads.

    Plain reads, not a memory map: the pages of a mapped file count in the process's resident
    memory once touched, while pages read this way stay in the kernel's page cache. ``out``
    (a C-contiguous buffer of at least that many rows) is filled and a view of it returned;
    ``fh``, an open unbuffered handle on the file, saves reopening it.
    """
    rows = max(0, int(stop) - int(start))
    d = layout.shape[1]
    if out is None:
        buf = np.empty((rows, d), dtype=layout.dtype)
    else:
        buf = out[:rows]
    view = memoryview(buf.reshape(-1).view(np.uint8))
    own = fh is None
    handle = open(layout.path, "rb", buffering=0) if own else fh
    try:
        handle.seek(layout.offset + int(start) * layout.row_bytes)
        done = 0
        while done < view.nbytes:
            got = handle.readinto(view[done:])
            if not got:
                raise DiversityInputError(
                    f"{layout.path}: the file ended early while reading rows {start + 1} to {stop}; "
                    "it changed or is truncated."
                )
            done += got
    finally:
        if own:
            handle.close()
    return buf


def load_npz(path: Path, max_bytes: int) -> dict[str, np.ndarray]:
    """Load every array of an ``.npz`` archive with ``allow_pickle=False``.

    Each member's header is inspected before it is read, so a pickled member is named and
    rejected without being loaded; the archive's uncompressed total counts against ``max_bytes``.
    """
    check_file(path, max_bytes)
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, OSError, ValueError, the not-implemented error ...
        raise DiversityInputError(
            f"{path}: not a valid .npz archive ({type(exc).__name__}). Save arrays with numpy.savez."
        ) from None
    arrays: dict[str, np.ndarray] = {}
    with zf:
        infos = [i for i in zf.infolist() if not i.filename.endswith("/")]  # is_dir() fails on empty names
        if not infos:
            raise DiversityInputError(f"{path}: the .npz archive holds no arrays.")
        total = sum(i.file_size for i in infos)
        check_size(path, total, max_bytes, what="uncompressed archive")
        check_memory(total, what=f"{path}: the arrays of the .npz archive ({len(infos)} arrays)")
        for info in infos:
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            where = f"{path} (array {name!r})"
            try:
                with zf.open(info) as fh:
                    _shape, _fortran, dtype = _npy_header(fh, where)
                _check_npy_dtype(dtype, where)
                with zf.open(info) as fh:
                    data = io.BytesIO(fh.read())
                arrays[name] = np.load(data, allow_pickle=False)
            except DiversityInputError:
                raise
            except Exception as exc:  # noqa: BLE001 - BadZipFile, zlib.error, the not-implemented error (method), RuntimeError (encrypted), ...
                raise DiversityInputError(
                    f"{where}: cannot read this array ({type(exc).__name__}); the archive may be truncated, "
                    "encrypted or use an unsupported compression method. Re-export it."
                ) from None
    return arrays


# --------------------------------------------------------------------------------------------
# zip archives
# --------------------------------------------------------------------------------------------

_DRIVE = re.compile(r"^[A-Za-z]:")


def safe_member_name(name: str, archive: Path) -> str:
    """Return a zip member's normalised relative path, or raise for absolute paths and ``..``.

    Members are never extracted to disk, but a name that would escape the archive's folder is
    a sign of a crafted archive (zip-slip), so the whole archive is refused.
    """
    if not name.strip("/"):
        raise DiversityInputError(f"{archive}: an entry has an empty name; the archive is damaged. Re-create it.")
    cleaned = name.replace("\\", "/")
    parts = PurePosixPath(cleaned).parts
    if cleaned.startswith("/") or _DRIVE.match(cleaned) or ".." in parts:
        raise DiversityInputError(
            f"{archive}: entry {name!r} has an unsafe path (absolute or containing '..'). "
            "Re-create the archive with relative paths only (e.g. `cd folder && zip -r ../images.zip .`)."
        )
    return posixpath.normpath(cleaned)


def open_zip(path: Path, max_bytes: int) -> zipfile.ZipFile:
    """Open a zip archive after the size, validity and member-path checks."""
    check_file(path, max_bytes)
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, OSError, ValueError, the not-implemented error ...
        raise DiversityInputError(f"{path}: not a valid zip archive ({type(exc).__name__}).") from None
    infos = zf.infolist()
    try:
        for info in infos:
            safe_member_name(info.filename, path)
        check_size(path, sum(i.file_size for i in infos), max_bytes, what="uncompressed archive")
    except DiversityInputError:
        zf.close()
        raise
    return zf
