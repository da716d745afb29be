"""Row sources: a feature matrix read as consecutive blocks of rows, never whole.

Everything that has an explicit feature map needs only ``Phi^T diag(p) Phi``, a sum over rows,
so the data never have to be in memory at once (issue 11). A :class:`RowSource` knows its
shape and dtype and yields its rows in order, in chunks of a chosen size:

- :class:`ArraySource`: an in-memory array (dense or sparse); chunks are views;
- :class:`NpySource`: a 2-D ``.npy`` file, read with plain file reads (a memory map would
  count every page it touched in the process's resident memory);
- :class:`ParquetSource`: a Parquet file, batch by batch (a list column, or numeric columns);
- :class:`ShardSource`: a folder of ``.npy`` shards with the same number of columns, in name order;
- :class:`DaskSource`: a ``dask.array.Array``, one block computed at a time.

:func:`open_source` opens a path; :func:`as_source` accepts anything
:func:`~diversity_core.spectrum.compute_spectrum` does and returns ``None`` for ordinary
in-memory arrays (which keep their in-memory path). A file-backed ``numpy.memmap`` is read
through its file like an :class:`NpySource`.

A chunk is valid until the next one is read (readers reuse one buffer); consumers that keep
rows copy them. Validation of the values (finite, what the kernel needs) is the consumer's, per
chunk, so a file is read once.

File sources travel to Dask workers inside the task graph. Their paths are made absolute when
the source is opened (a relative path would be read relative to each process's working folder),
and unpickling restores the fields as they were, without looking at any file: the scheduler
unpickles the graph too, and re-opening the file there (relative to the scheduler's folder) failed
the whole run with "Error during deserialization of the task graph" (issue 26, item 16).
:func:`check_workers_see` asks every worker, before anything is submitted, whether it sees the
files, and names the workers that do not.
"""

from __future__ import annotations

import abc
import math
import mmap
import os
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from ._config import check_memory, chunk_rows
from ._optional import require
from .exceptions import DiversityInputError

__all__ = [
    "check_workers_see",
    "RowSource",
    "ArraySource",
    "NpySource",
    "ParquetSource",
    "ShardSource",
    "DaskSource",
    "open_source",
    "as_source",
    "is_dask_array",
    "chunk_bounds",
]


def chunk_bounds(n: int, rows: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive chunks of ``rows`` rows covering ``range(n)``.

    A last chunk of a single row is merged into the one before, so that every chunk of data
    with two or more rows has at least two (the kernels' validation asks for two items).
    """
    rows = max(1, int(rows))
    bounds = [(s, min(s + rows, n)) for s in range(0, n, rows)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] == 1:
        last = bounds.pop()
        bounds[-1] = (bounds[-1][0], last[1])
    return bounds


def _rebatch(pieces: Iterable[np.ndarray], bounds: Sequence[tuple[int, int]]) -> Iterator[tuple[int, np.ndarray]]:
    """Cut a stream of consecutive row blocks, starting at ``bounds[0][0]``, into the chunks ``bounds``.

    A piece that covers a chunk is yielded as a view (no copy); pieces that must be joined are
    copied first, since a reader may reuse its buffer for the next piece.
    """
    targets = iter(bounds)
    current = next(targets, None)
    pending: list[np.ndarray] = []
    have = 0
    for piece in pieces:
        while current is not None and piece.shape[0]:
            start, stop = current
            need = (stop - start) - have
            if not pending and piece.shape[0] >= need:
                yield start, piece[:need]
                piece = piece[need:]
            else:
                take = np.array(piece[:need], copy=True)
                pending.append(take)
                have += take.shape[0]
                piece = piece[take.shape[0]:]
                if have < stop - start:
                    continue
                yield start, np.concatenate(pending)
                pending, have = [], 0
            current = next(targets, None)
        if current is None:
            return
    if current is not None:
        raise DiversityInputError(
            f"the data ended at row {current[0] + have} before the {current[1]} rows announced; "
            "the file changed while it was read, or its metadata is wrong."
        )


class RowSource(abc.ABC):
    """A feature matrix of ``n`` rows and ``d`` columns read as consecutive chunks of rows.

    Attributes
    ----------
    n, d : int
    dtype : numpy.dtype
        The dtype of the chunks as stored (the kernels convert integers and booleans to float64).
    name : str
        What to call it in messages (a path, or "array").
    """

    n: int
    d: int
    dtype: np.dtype
    name: str

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, d)``."""
        return (self.n, self.d)

    @property
    def in_memory(self) -> bool:
        """Whether the rows are already in memory (reading them costs no I/O)."""
        return False

    @property
    def nbytes(self) -> int:
        """Bytes of the whole matrix at its dtype."""
        return int(self.n) * int(self.d) * np.dtype(self.dtype).itemsize

    def default_chunk_rows(self) -> int:
        """Rows per chunk so that one chunk takes about ``chunk_bytes`` (see :func:`~diversity_core.set_config`)."""
        return chunk_rows(self.d, np.dtype(self.dtype).itemsize)

    def chunks(self, rows: Optional[int] = None, *, start: int = 0) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, block)`` for consecutive blocks of ``rows`` rows from row ``start`` on.

        The last block may differ in size (see :func:`chunk_bounds`). A block is valid until
        the next one is read.
        """
        start = int(start)
        bounds = [(a + start, b + start) for a, b in chunk_bounds(self.n - start, rows or self.default_chunk_rows())]
        return self._chunks(bounds)

    @abc.abstractmethod
    def _chunks(self, bounds: Sequence[tuple[int, int]]) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, rows start:stop)`` for each of ``bounds``, in order."""

    def take(self, rows) -> np.ndarray:
        """The rows at the sorted indices ``rows`` (a copy), in one pass."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, self.d), dtype=self.dtype)
        done = 0
        for start, block in self.chunks():
            stop = start + block.shape[0]
            hi = np.searchsorted(rows, stop)
            if hi > done:
                out[done:hi] = block[rows[done:hi] - start].toarray() if sp.issparse(block) else block[
                    rows[done:hi] - start]
                done = hi
            if done == rows.size:
                break
        return out

    def read(self) -> np.ndarray:
        """All rows as one in-memory array, after checking the memory budget."""
        check_memory(
            self.nbytes,
            what=f"reading all {self.n} x {self.d} values of {self.name} into memory",
            hint="Use a kernel with a feature map (cosine, linear), which streams the rows.",
        )
        out = np.empty((self.n, self.d), dtype=self.dtype)
        for start, block in self.chunks():
            out[start : start + block.shape[0]] = block
        return out

    def to_dask(self, rows: Optional[int] = None):
        """A ``dask.array.Array`` whose tasks read the rows themselves (workers must see the file)."""
        da = require("dask.array", purpose="Dask arrays")
        dask = require("dask", purpose="Dask arrays")
        parts = [
            da.from_delayed(dask.delayed(_read_bounds)(self, start, stop), shape=(stop - start, self.d),
                            dtype=self.dtype)
            for start, stop in self._dask_bounds(rows)
        ]
        return da.concatenate(parts, axis=0)

    def _dask_bounds(self, rows: Optional[int]) -> list[tuple[int, int]]:
        """Row ranges of the Dask blocks."""
        return chunk_bounds(self.n, rows or self.default_chunk_rows())

    def _read_range(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as a fresh array (a Dask task runs this)."""
        for _, block in self._chunks([(start, stop)]):
            return np.array(block, copy=True)
        return np.empty((0, self.d), dtype=self.dtype)

    def describe(self) -> str:
        """One line: kind, path and shape."""
        return f"{type(self).__name__}({self.name}, {self.n} x {self.d} {np.dtype(self.dtype).name})"

    def files(self) -> list:
        """The files a process must read to get the rows (absolute paths; none for in-memory data)."""
        return []

    def __repr__(self) -> str:
        return self.describe()


def _absolute(path) -> Path:
    """``path`` with ``~`` expanded, made absolute against this process's working folder."""
    return Path(os.path.abspath(Path(os.fspath(path)).expanduser()))


def _unseen(paths: list) -> list:
    """The paths this process cannot open for reading (run on each Dask worker)."""
    out = []
    for p in paths:
        try:
            with open(p, "rb"):
                pass
        except OSError as exc:
            out.append((str(p), exc.strerror or type(exc).__name__))
    return out


def check_workers_see(client, source: RowSource) -> None:
    """Raise when a worker of the Dask ``client`` cannot read the files of ``source``.

    The tasks of :meth:`RowSource.to_dask` read the files on the workers, at the same absolute
    path as here. This asks every worker first, so that a path a worker cannot see is one
    message naming the worker and the file, not a failure deep inside a task.

    Parameters
    ----------
    client : distributed.Client
    source : RowSource

    Raises
    ------
    DiversityInputError
        Naming each worker that cannot open a file, the first file and the reason.
    """
    paths = [str(p) for p in source.files()]
    if not paths:
        return
    answers = client.run(_unseen, paths)
    missing = {worker: found for worker, found in answers.items() if found}
    if not missing:
        return
    shown = "; ".join(f"{worker} cannot read {found[0][0]} ({found[0][1]})"
                      + (f" and {len(found) - 1} more file(s)" if len(found) > 1 else "")
                      for worker, found in sorted(missing.items()))
    raise DiversityInputError(
        f"{len(missing)} of the {len(answers)} Dask worker(s) cannot see the data: {shown}. The workers read the "
        "files themselves, at the same absolute path as this machine: put them on a file system every worker "
        "shares, or compute on this machine."
    )


def _read_bounds(source: RowSource, start: int, stop: int) -> np.ndarray:
    """Module-level reader for Dask tasks (pickled with the source, which holds only a path)."""
    return source._read_range(start, stop)


class ArraySource(RowSource):
    """An in-memory dense or sparse matrix; chunks are views (sparse: row slices)."""

    def __init__(self, X, *, name: str = "array"):
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise DiversityInputError(f"{name} must be 2-D (items x features); got shape {X.shape}.")
        self.X = X
        self.n, self.d = (int(s) for s in X.shape)
        self.dtype = np.dtype(X.dtype)
        self.name = name

    @property
    def in_memory(self) -> bool:
        """Whether the rows are already in memory (see :class:`RowSource`)."""
        return True

    def _chunks(self, bounds):
        for start, stop in bounds:
            yield start, self.X[start:stop]

    def take(self, rows) -> np.ndarray:
        """The rows ``rows`` as an array (see :meth:`RowSource.take`)."""
        block = self.X[np.asarray(rows, dtype=np.int64)]
        return block.toarray() if sp.issparse(block) else np.array(block)

    def read(self):
        """Every row as one array (see :meth:`RowSource.read`)."""
        return self.X


class NpySource(RowSource):
    """A 2-D ``.npy`` file read with plain file reads into one reused buffer.

    Parameters
    ----------
    path : str or path-like
        A C-ordered 2-D numeric ``.npy`` file (any size; only its header is read here).
    """

    def __init__(self, path, *, _layout=None):
        from .data._files import npy_layout

        self.path = _absolute(path)  # workers and the scheduler run in other folders
        if not self.path.exists():
            raise DiversityInputError(f"{self.path}: no such file; check the path.")
        self.layout = _layout or npy_layout(self.path)
        self.n, self.d = self.layout.shape
        self.dtype = self.layout.dtype.newbyteorder("=") if not self.layout.dtype.isnative else self.layout.dtype
        self.name = str(self.path)

    def _chunks(self, bounds):
        from .data._files import read_npy_rows

        if not bounds:
            return
        size = max(stop - start for start, stop in bounds)
        buffer = np.empty((size, self.d), dtype=self.layout.dtype)
        with open(self.path, "rb", buffering=0) as fh:
            for start, stop in bounds:
                block = read_npy_rows(self.layout, start, stop, out=buffer, fh=fh)
                if not self.layout.dtype.isnative:
                    block = block.astype(self.dtype)
                yield start, block

    def take(self, rows) -> np.ndarray:
        """The rows ``rows`` as an array (see :meth:`RowSource.take`)."""
        from .data._files import read_npy_rows

        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, self.d), dtype=self.layout.dtype)
        with open(self.path, "rb", buffering=0) as fh:
            for i, r in enumerate(rows):
                read_npy_rows(self.layout, int(r), int(r) + 1, out=out[i : i + 1], fh=fh)
        return out.astype(self.dtype, copy=False)

    def files(self) -> list:
        """The ``.npy`` file (see :meth:`RowSource.files`)."""
        return [self.path]

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        # the fields as they were: nothing is checked or read (the scheduler unpickles this too)
        self.__dict__.update(state)


class _MemmapSource(NpySource):
    """A file-backed ``numpy.memmap`` read through its file (its pages are never touched)."""

    def __init__(self, X: np.memmap):
        from .data._files import NpyLayout

        path = Path(X.filename)
        layout = NpyLayout(path=path, shape=(int(X.shape[0]), int(X.shape[1])), dtype=np.dtype(X.dtype),
                           offset=int(X.offset))
        super().__init__(path, _layout=layout)


class ParquetSource(RowSource):
    """A Parquet file read batch by batch (see :func:`~diversity_core.data.embeddings.parquet_layout`).

    Parameters
    ----------
    path : str or path-like
    column : str, optional
        The feature column (a list column) when the file has several candidates.
    exclude : sequence of str
        Columns that are not features (groups, weights).
    """

    def __init__(self, path, *, column: Optional[str] = None, exclude: Sequence[str] = ()):
        from .data.embeddings import parquet_layout

        self.path = _absolute(path)  # workers and the scheduler run in other folders
        if not self.path.exists():
            raise DiversityInputError(f"{self.path}: no such file; check the path.")
        self.column = column
        self.exclude = tuple(exclude)
        self.layout = parquet_layout(self.path, column=column, exclude=self.exclude)
        self.n, self.d, self.dtype = self.layout.n, self.layout.d, self.layout.dtype
        self.name = str(self.path)

    def default_chunk_rows(self) -> int:
        """An eighth of ``chunk_bytes`` per chunk: decoding a batch holds several times its size."""
        return max(64, super().default_chunk_rows() // 8)

    def _batches(self, rows: int, first_group: int = 0):
        """Feature blocks of at most ``rows`` rows, from row group ``first_group`` on."""
        from .data.embeddings import _parquet_file, parquet_batch_features

        pf = _parquet_file(self.path)
        groups = list(range(first_group, len(self.layout.row_groups)))
        start = sum(self.layout.row_groups[:first_group])
        for batch in pf.iter_batches(batch_size=max(1, rows), row_groups=groups, columns=list(self.layout.columns),
                                     use_threads=False):
            yield parquet_batch_features(batch, self.layout, start)
            start += batch.num_rows

    def _chunks(self, bounds):
        if not bounds:
            return
        rows = max(stop - start for start, stop in bounds)
        first = bounds[0][0]
        # skip whole row groups before the first requested row
        group, offset = 0, 0
        while group < len(self.layout.row_groups) and offset + self.layout.row_groups[group] <= first:
            offset += self.layout.row_groups[group]
            group += 1
        pieces = self._batches(rows, group)
        if first > offset:
            pieces = _skip_rows(pieces, first - offset)
        yield from _rebatch(pieces, bounds)

    def _dask_bounds(self, rows):
        # one task per row group (a group is the unit Parquet reads), split when larger than ``rows``
        rows = rows or self.default_chunk_rows()
        bounds, start = [], 0
        for size in self.layout.row_groups:
            bounds += [(start + a, start + b) for a, b in chunk_bounds(size, rows)]
            start += size
        return [b for b in bounds if b[1] > b[0]]

    def files(self) -> list:
        """The Parquet file (see :meth:`RowSource.files`)."""
        return [self.path]

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        # the fields as they were: nothing is checked or read (the scheduler unpickles this too)
        self.__dict__.update(state)


def _skip_rows(pieces: Iterable[np.ndarray], k: int) -> Iterator[np.ndarray]:
    """Drop the first ``k`` rows of a stream of blocks."""
    for piece in pieces:
        if k >= piece.shape[0]:
            k -= piece.shape[0]
            continue
        yield piece[k:]
        k = 0


class ShardSource(RowSource):
    """A folder of 2-D ``.npy`` shards with the same columns and dtype, concatenated in name order.

    Name the shards so that they sort in order (``part-0000.npy``, ``part-0001.npy``, ...).
    """

    def __init__(self, folder):
        from .data._files import npy_layout

        self.path = _absolute(folder)  # workers and the scheduler run in other folders
        if not self.path.is_dir():
            raise DiversityInputError(f"{self.path}: expected a folder of .npy shards.")
        files = sorted(p for p in self.path.iterdir() if p.suffix.lower() == ".npy" and p.is_file())
        if not files:
            raise DiversityInputError(
                f"{self.path}: no .npy shards in this folder; save the rows as part-0000.npy, part-0001.npy, ..."
            )
        self.layouts = [npy_layout(f) for f in files]
        first = self.layouts[0]
        for lay in self.layouts[1:]:
            if lay.shape[1] != first.shape[1] or lay.dtype != first.dtype:
                raise DiversityInputError(
                    f"{lay.path}: {lay.shape[1]} columns of {lay.dtype}, but {first.path.name} has "
                    f"{first.shape[1]} of {first.dtype}; every shard needs the same columns and dtype."
                )
        self.n = int(sum(lay.shape[0] for lay in self.layouts))
        self.d = int(first.shape[1])
        self.dtype = first.dtype.newbyteorder("=") if not first.dtype.isnative else first.dtype
        self.name = str(self.path)

    def _pieces(self, rows: int, first: int) -> Iterator[np.ndarray]:
        """Consecutive blocks from row ``first`` on, each inside one shard."""
        offset = 0
        for lay in self.layouts:
            m = lay.shape[0]
            if offset + m > first and m:
                src = NpySource(lay.path, _layout=lay)
                lo = max(0, first - offset)
                for _start, block in src._chunks([(a, min(a + rows, m)) for a in range(lo, m, rows)]):
                    yield block
            offset += m

    def _chunks(self, bounds):
        if not bounds:
            return
        rows = max(stop - start for start, stop in bounds)
        # pieces are views of each shard's reused buffer: _rebatch copies when it concatenates
        # and yields a piece itself only when it is exactly one chunk, consumed before the next read
        yield from _rebatch(self._pieces(rows, bounds[0][0]), bounds)

    def _dask_bounds(self, rows):
        rows = rows or self.default_chunk_rows()
        bounds, start = [], 0
        for lay in self.layouts:
            bounds += [(start + a, start + b) for a, b in chunk_bounds(lay.shape[0], rows)]
            start += lay.shape[0]
        return [b for b in bounds if b[1] > b[0]]

    def files(self) -> list:
        """The shards (see :meth:`RowSource.files`)."""
        return [lay.path for lay in self.layouts]

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        # the fields as they were (shard layouts included): nothing is listed, checked or read
        self.__dict__.update(state)


class DaskSource(RowSource):
    """A 2-D ``dask.array.Array`` read one row block at a time (computed on the current scheduler)."""

    def __init__(self, X):
        if X.ndim != 2:
            raise DiversityInputError(f"a Dask array of features must be 2-D (items x features); got shape {X.shape}.")
        if any(math.isnan(c) for c in X.chunks[0]):
            raise DiversityInputError(
                "the Dask array has unknown chunk sizes; call X.compute_chunk_sizes() first."
            )
        self.X = X.rechunk({1: -1}) if X.numblocks[1] > 1 else X
        self.n, self.d = (int(s) for s in X.shape)
        self.dtype = np.dtype(X.dtype)
        self.name = "dask array"

    def _chunks(self, bounds):
        offsets = np.cumsum((0,) + tuple(self.X.chunks[0]))

        def pieces():
            for i in range(len(self.X.chunks[0])):
                if offsets[i + 1] > bounds[0][0]:
                    block = np.asarray(self.X.blocks[i].compute())
                    lo = max(0, bounds[0][0] - offsets[i])
                    yield block[lo:]

        yield from _rebatch(pieces(), bounds)

    def take(self, rows) -> np.ndarray:
        """The rows ``rows`` as an array (see :meth:`RowSource.take`)."""
        return np.asarray(self.X[np.asarray(rows, dtype=np.int64)].compute())

    def to_dask(self, rows=None):
        """The rows as a dask array (see :meth:`RowSource.to_dask`)."""
        return self.X


def is_dask_array(X) -> bool:
    """Whether X is a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    module = type(X).__module__ or ""
    if not module.startswith("dask"):
        return False
    import dask.array as da

    return isinstance(X, da.Array)


def open_source(path, *, column: Optional[str] = None, exclude: Sequence[str] = ()) -> RowSource:
    """Open a file or folder of features for streaming.

    Parameters
    ----------
    path : str or path-like
        A 2-D ``.npy`` file, a ``.parquet``/``.pq`` file (one list column, or numeric columns),
        or a folder of ``.npy`` shards.
    column : str, optional
        Parquet only: the feature column.
    exclude : sequence of str
        Parquet only: columns that are not features (groups, weights).

    Returns
    -------
    RowSource

    Raises
    ------
    DiversityInputError
        A missing path, another format, or a file that is not a 2-D numeric matrix.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "X.npy"); np.save(path, np.eye(3))
    >>> open_source(path).shape
    (3, 3)
    """
    p = _absolute(path)
    if not p.exists():
        raise DiversityInputError(f"{p}: no such file or folder; check the path.")
    if p.is_dir():
        return ShardSource(p)
    suffix = p.suffix.lower()
    if column is not None and suffix not in (".parquet", ".pq"):
        raise DiversityInputError(f"column= applies to Parquet files only; {p.name} is {suffix or 'not'} one.")
    if suffix == ".npy":
        return NpySource(p)
    if suffix in (".parquet", ".pq"):
        return ParquetSource(p, column=column, exclude=exclude)
    raise DiversityInputError(
        f"{p}: cannot stream a {suffix or 'file without extension'} file; streaming reads .npy, "
        ".parquet and folders of .npy shards. Load other formats with load_dataset."
    )


def as_source(X) -> Optional[RowSource]:
    """The :class:`RowSource` for X when X is not an ordinary in-memory array, else ``None``.

    Sources pass through; a path (str or path-like) is opened with :func:`open_source`; a Dask
    array becomes a :class:`DaskSource`; a file-backed ``numpy.memmap`` of a whole C-ordered
    2-D file is read through its file. Everything else (arrays, sparse matrices, lists)
    returns ``None`` and keeps the in-memory path.
    """
    if isinstance(X, RowSource):
        return X
    if isinstance(X, (str, os.PathLike)):
        return open_source(X)
    if is_dask_array(X):
        return DaskSource(X)
    if (
        isinstance(X, np.memmap)
        and isinstance(X.base, mmap.mmap)
        and X.ndim == 2
        and X.flags.c_contiguous
        and getattr(X, "filename", None)
    ):
        return _MemmapSource(X)
    return None
