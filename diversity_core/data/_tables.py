"""Tables (.csv, .tsv, .jsonl, .parquet) for the loaders, with row/line bookkeeping for messages.

A :class:`Table` wraps a :class:`pandas.DataFrame` and knows how to name row ``i`` in an error
message ("data.csv row 4 (line 5)"). Column helpers turn a group or weight column into arrays
or raise naming the offending rows. Parquet needs pyarrow (the extra ``[parquet]``), imported when
a Parquet file is read: without it that read raises :class:`~diversity_core.exceptions.MissingDependencyError`
naming the extra.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import operator
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Sequence as _SequenceABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np

from .._config import check_memory, chunk_rows
from .._optional import require
from ..exceptions import DiversityInputError
from ._files import check_file, decode_head, decode_utf8, open_input, read_input_bytes
from ._paths import read_head

#: Extensions read as tables.
TABLE_EXTENSIONS = (".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".parquet", ".pq")

#: Column names recognised as item identifiers (file names for image companions).
ID_COLUMNS = ("id", "ids", "name", "names", "file", "filename", "file_name", "path", "image")

#: Delimiters tried when sniffing a delimited text table, in order of preference.
DELIMITERS = (",", "\t", ";", "|")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", " ": "space"}

#: Copies of a table's values that loading holds at its peak, for the columns that are not
#: gathered into the one float64 matrix (integers, booleans: the parsed column, the pandas frame,
#: the float64 feature matrix), used to check the reader's peak against the memory budget.
DECODE_COPIES = 3

#: Characters read to sniff a delimiter.
_SNIFF_CHARS = 1 << 16

#: A column name shown in messages must look like a name; anything else (e.g. the first line of a
#: file that is not a table) is named by its position, so messages never quote file content.
_NAME_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_ .\-]{0,39}")


def column_label(name, position: int) -> str:
    """``'smiles'`` for a name-like column name, else ``column 3`` (1-based position)."""
    text = str(name)
    return repr(text) if _NAME_LIKE.fullmatch(text) else f"column {position + 1}"


def column_phrase(name, position: int) -> str:
    """``"column 'smiles'"`` or ``"column 3"``, for a sentence."""
    label = column_label(name, position)
    return label if label.startswith("column ") else f"column {label}"


def columns_text(columns) -> str:
    """The columns of a table for a message: name-like names quoted, others by position."""
    return ", ".join(column_label(c, i) for i, c in enumerate(columns))


def delimiter_name(delimiter: str) -> str:
    """``","`` -> ``"comma"``."""
    return _DELIMITER_NAMES.get(delimiter, repr(delimiter))


def is_text_column(col) -> bool:
    """Whether a column holds text: strings that are not all numbers (lists and dicts are not text)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(col) or col.dtype == bool:
        return False
    values = col.dropna()
    if not len(values):
        return False
    if isinstance(values.iloc[0], (list, tuple, np.ndarray, dict)):
        return False
    return bool(pd.to_numeric(values, errors="coerce").isna().any())


def _field_counts(sample: str, delimiter: str, complete: bool) -> list:
    """Fields per non-blank record of ``sample`` (the last record dropped when the sample is cut)."""
    try:
        records = [r for r in csv.reader(io.StringIO(sample), delimiter=delimiter) if any(c.strip() for c in r)]
    except csv.Error:
        return []
    if not complete and len(records) > 1:
        records = records[:-1]
    return [len(r) for r in records]


def sniff_delimiter(text: str, default: Optional[str], candidates: Sequence[str] = DELIMITERS) -> Optional[str]:
    """The delimiter of a delimited text table, judged from its first 64 KiB.

    ``default`` (the extension's delimiter) is kept when it splits every record of the sample
    into the same number (> 1) of fields. Otherwise the first candidate that does so, over at
    least two records including the header, is returned (so a one-column table whose cells hold
    commas, but whose header does not, stays one column). ``default`` (``None`` when there is
    none) when nothing splits the sample consistently.
    """
    complete = len(text) <= _SNIFF_CHARS
    sample = text[:_SNIFF_CHARS]
    if default is not None:
        counts = _field_counts(sample, default, complete)
        if counts and min(counts) == max(counts) > 1:
            return default
    for delim in candidates:
        if delim == default:
            continue
        counts = _field_counts(sample, delim, complete)
        if len(counts) >= 2 and min(counts) == max(counts) > 1:
            return delim
    return default


def _first_rows(rows: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f", ... ({len(rows)} in all)" if len(rows) > limit else "")


class RowIds(_SequenceABC):
    """The ids ``"row 1"``, ..., ``"row n"`` of a table's rows, each made when it is read.

    A list of n Python strings takes about 70 bytes a row: 2.8 GB for 40 million rows, more
    than four times their two float64 features. This sequence holds only ``n``; it indexes
    (ints, numpy ints, slices), iterates, and compares equal to the list of the same strings.
    """

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [f"row {j + 1}" for j in range(*i.indices(self.n))]
        j = operator.index(i)
        if j < 0:
            j += self.n
        if not 0 <= j < self.n:
            raise IndexError(f"row index {i} out of range for {self.n} rows")
        return f"row {j + 1}"

    def __iter__(self) -> Iterator[str]:
        return (f"row {j}" for j in range(1, self.n + 1))

    def __contains__(self, value) -> bool:
        return self.index_of(value) is not None

    def index_of(self, value) -> Optional[int]:
        """Position of ``value`` (``"row 7"`` -> 6), or None."""
        m = re.fullmatch(r"row ([1-9][0-9]*)", value) if isinstance(value, str) else None
        return int(m.group(1)) - 1 if m and int(m.group(1)) <= self.n else None

    def index(self, value, start: int = 0, stop: Optional[int] = None) -> int:
        j = self.index_of(value)
        if j is None or j < start or (stop is not None and j >= stop):
            raise ValueError(f"{value!r} is not in the row ids")
        return j

    def count(self, value) -> int:
        return int(value in self)

    def __eq__(self, other) -> bool:
        if isinstance(other, RowIds):
            return self.n == other.n
        if isinstance(other, (list, tuple)):
            return len(other) == self.n and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # like the list it stands for

    def __add__(self, other) -> list:
        return list(self) + list(other)

    def __radd__(self, other) -> list:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return f"RowIds({self.n})"

    def __reduce__(self):
        return (RowIds, (self.n,))


@dataclass
class Table:
    """A parsed table plus what is needed to point at its rows in messages.

    A delimited text table keeps its first 64 KiB (``head``), not its text: its records are read
    again from the file when a message needs a line number (``text``, when given, is used
    instead). ``matrix``: the table's floating-point columns gathered in one C-ordered float64
    array, which those columns of ``df`` view (the feature matrix of a numeric table, no copy).
    """

    df: object  # pandas.DataFrame (pandas is imported lazily)
    path: Path
    kind: str  # "csv" | "jsonl" | "parquet"
    text: Optional[str] = None  # decoded text of csv/tsv files, for line numbers
    delimiter: str = ","
    line_numbers: Optional[list] = None  # jsonl: physical line of each row
    notes: list = field(default_factory=list)  # what was detected or changed while reading (for Dataset.detected)
    head: Optional[str] = None  # csv/tsv: the first 64 KiB of the text (for the header)
    max_bytes: int = 0  # csv/tsv: the size limit the file is read again under
    matrix: Optional[np.ndarray] = field(default=None, repr=False)  # the float columns, one float64 array
    _csv_lines: Optional[list] = field(default=None, repr=False)

    @property
    def n_rows(self) -> int:
        return len(self.df)

    @contextlib.contextmanager
    def _lines(self) -> Iterator:
        """The records' text line by line: ``text`` when kept, else the file read again as it streams."""
        if self.text is not None or self.kind != "csv":
            yield io.StringIO(self.text or "")
            return
        with open_input(self.path, self.max_bytes) as raw, \
                io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as fh:
            try:
                yield fh
            except UnicodeDecodeError:
                decode_utf8(read_input_bytes(self.path, self.max_bytes), str(self.path))  # names line and column
                raise

    def _csv_line_numbers(self) -> list:
        """Physical starting line of each data record (blank lines skipped, as pandas does)."""
        if self._csv_lines is None:
            starts: list[int] = []
            with self._lines() as lines:
                reader = csv.reader(lines, delimiter=self.delimiter)
                previous = 0
                for record in reader:
                    if record and any(cell.strip() for cell in record):
                        starts.append(previous + 1)
                    previous = reader.line_num
            self._csv_lines = starts[1:]  # drop the header
        return self._csv_lines

    def row_label(self, i: int) -> str:
        """Label of data row ``i`` (0-based) without the file name: ``"row 4 (line 5)"``, ``"line 7"``."""
        if self.kind == "csv":
            lines = self._csv_line_numbers()
            line = f" (line {lines[i]})" if i < len(lines) else ""
            return f"row {i + 1}{line}"
        if self.kind == "jsonl" and self.line_numbers is not None:
            return f"line {self.line_numbers[i]}"
        return f"row {i + 1}"

    def where(self, i: int) -> str:
        """Human-readable location of data row ``i`` (0-based): ``"data.csv row 4 (line 5)"``."""
        return f"{self.path.name} {self.row_label(i)}"

    def rows_text(self, rows: Sequence[int], limit: int = 5) -> str:
        shown = "; ".join(self.where(int(r)) for r in rows[:limit])
        return shown + (f"; ... ({len(rows)} in all)" if len(rows) > limit else "")

    def check_ragged(self) -> None:
        """Raise if a csv/tsv record has a different number of fields than the header."""
        if self.kind != "csv":
            return
        with self._lines() as lines:
            self._check_ragged(csv.reader(lines, delimiter=self.delimiter))

    def _check_ragged(self, reader) -> None:
        width = None
        previous = 0
        try:
            for record in reader:
                start = previous + 1
                previous = reader.line_num
                if not record or not any(cell.strip() for cell in record):
                    continue
                if width is None:
                    width = len(record)
                    continue
                if len(record) != width:
                    raise DiversityInputError(
                        f"{self.path}: ragged rows: line {start} has {len(record)} fields but the header has "
                        f"{width}. Every row needs one value per column; fix or remove that line."
                    )
        except csv.Error as exc:
            if "field limit" in str(exc):
                return  # a very long cell (a document): pandas parses it and reports ragged rows itself
            raise DiversityInputError(
                f"{self.path}: not a readable delimited table (line {reader.line_num}: {exc}). "
                "Check the quoting of that line."
            ) from None

    def width(self) -> int:
        """Fields of the header record of a csv/tsv table (0 when it has none)."""
        head = self.head if self.text is None else self.text[:_SNIFF_CHARS]
        try:
            for record in csv.reader(io.StringIO((head or "")[:_SNIFF_CHARS]), delimiter=self.delimiter):
                if record and any(cell.strip() for cell in record):
                    return len(record)
        except csv.Error:
            return 1
        return 0

    def column(self, name: str, role: str) -> object:
        """The column ``name``, or an error listing the available columns."""
        if name not in self.df.columns:
            raise DiversityInputError(
                f"{self.path}: no column named {name!r} (the {role} column); the columns are: "
                f"{columns_text(self.df.columns)}."
            )
        return self.df[name]

    def find_column(self, candidates: Sequence[str]) -> Optional[str]:
        """The first column whose name matches one of ``candidates`` (case-insensitive)."""
        lower = {str(c).lower(): c for c in self.df.columns}
        for cand in candidates:
            if cand.lower() in lower:
                return lower[cand.lower()]
        return None


# ---- the reader's peak against the memory budget (issue 26 item 7, issue 40 item 9) ------------

#: Bytes a table holds per row besides its values when it has a column of strings (the rows'
#: ids or items as Python strings, pandas' bookkeeping). A table of numbers alone names its rows
#: with :class:`RowIds`, which holds no string per row.
ROW_BYTES = 64

#: Bytes per string (BYTE_ARRAY) value of a Parquet file besides its characters: a Python ``str``
#: object in the pandas column and its offset in the Arrow buffer.
_STRING_BYTES = 72

#: Bytes per cell of a list column (a NumPy array or list object per row) besides its values.
_LIST_CELL_BYTES = 112

#: Peak of parsing a delimited text table, in float64 copies of its values: pandas' tokenizer
#: holds each column's parsed chunks and their concatenation, then the frame's block; the float
#: columns are then gathered into one C-ordered matrix (:func:`_gather_floats`). Measured as the
#: peak resident memory over the interpreter's: 3.2 copies on 150,000 x 8 (tests/test_memory_bounds.py).
CSV_PEAK_COPIES = 3.5

#: Bytes a string column's characters take once parsed, per byte of text (a Python ``str`` per
#: cell and the tokenizer's copy of the text while it parses).
_TEXT_COPIES = 3.0


#: What pyarrow's reader holds besides the chunk it decodes (its buffered stream, the compressed
#: pages, its threads' arenas): 10 MB more than three chunks on 10 M x 2 float64.
_PARQUET_READER_BYTES = 16 << 20


def _transient_bytes(meta, floats: int) -> float:
    """Bytes of the one column chunk the Parquet reader decodes at a time.

    Three float64 copies of it (pyarrow's decoded column, its conversion, the pages its allocator
    keeps until the read ends) and :data:`_PARQUET_READER_BYTES`: 1.5 M x 2 float64 in row groups
    of 1 Mi rows peaked 21 MB above the 24 MB matrix, 10 M x 2 36 MB above its 160 MB.
    """
    if not floats:
        return 0.0
    largest = max((int(meta.row_group(g).num_rows) for g in range(int(meta.num_row_groups))), default=0)
    return 3.0 * 8.0 * min(largest, chunk_rows(1)) + _PARQUET_READER_BYTES


def parquet_decoded_bytes(meta) -> tuple:
    """``(bytes, values)``: the peak memory of reading a Parquet file, from its metadata alone.

    ``meta`` is a ``pyarrow.parquet.FileMetaData``. Every column chunk counts its leaf values
    (``num_values``: a list column counts every element, not one per row). Float columns are
    read column chunk by column chunk into one preallocated float64 matrix
    (:func:`_parquet_frame`): 8 bytes per value, plus one chunk in flight (:func:`_transient_bytes`). Other numbers take
    ``8 * DECODE_COPIES`` bytes each (they go through pandas), strings :data:`_STRING_BYTES`
    plus twice their mean uncompressed length; a list column adds :data:`_LIST_CELL_BYTES` per
    row, and a table with strings :data:`ROW_BYTES` per row. Nothing is decompressed, so a file
    of a few hundred KB that decodes to gigabytes is sized in milliseconds.
    """
    rows = int(meta.num_rows)
    nbytes = 0.0
    values = 0
    floats = 0
    strings = False
    schema = meta.schema
    for j in range(int(meta.num_columns)):
        repeated = int(getattr(schema.column(j), "max_repetition_level", 0) or 0) > 0
        if repeated:
            nbytes += float(rows) * _LIST_CELL_BYTES
        physical = str(schema.column(j).physical_type)
        if physical in ("FLOAT", "DOUBLE") and not repeated:
            floats += 1
        for g in range(int(meta.num_row_groups)):
            chunk = meta.row_group(g).column(j)
            count = int(chunk.num_values)
            values += count
            if physical in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
                strings = True
                mean = float(chunk.total_uncompressed_size) / max(count, 1)
                nbytes += count * (_STRING_BYTES + 2.0 * mean)
            elif physical in ("FLOAT", "DOUBLE") and not repeated:
                nbytes += count * 8.0
            else:
                nbytes += count * 8.0 * DECODE_COPIES
    if strings or floats < int(meta.num_columns):
        nbytes += float(rows) * ROW_BYTES
    return nbytes + _transient_bytes(meta, floats), values


def delimited_peak_bytes(rows: int, columns: int, *, text_bytes: int = 0) -> float:
    """The peak memory of parsing a delimited text table of ``rows x columns`` values.

    :data:`CSV_PEAK_COPIES` float64 copies of the values; a table with string columns adds
    :data:`ROW_BYTES` per row and :data:`_TEXT_COPIES` bytes per byte of its text
    (``text_bytes``: the file's size, 0 for a table of numbers alone).
    """
    nbytes = float(rows) * float(max(columns, 1)) * 8.0 * CSV_PEAK_COPIES
    if text_bytes:
        nbytes += float(rows) * ROW_BYTES + _TEXT_COPIES * float(text_bytes)
    return nbytes


def _check_decoded_size(path: Path, rows: int, columns: int, kind: str, *, nbytes=None, values=None) -> None:
    """Refuse a table whose reading would not fit the memory budget, before it is parsed.

    ``nbytes``: the reader's peak (:func:`parquet_decoded_bytes`, :func:`delimited_peak_bytes`);
    by default ``rows x columns`` numbers at ``8 * DECODE_COPIES`` bytes plus :data:`ROW_BYTES`
    per row.
    """
    if nbytes is None:
        nbytes = float(rows) * (float(max(columns, 1)) * 8.0 * DECODE_COPIES + ROW_BYTES)
    extra = f" ({values} values)" if values is not None and values != rows * columns else ""
    check_memory(
        nbytes,
        what=f"{path}: loading {rows} rows x {columns} columns{extra} of this {kind} file",
        hint="Load a subsample of the rows.",
    )


_CSV_LIMIT_LOCK = threading.Lock()


def _allow_csv_fields(nbytes: int) -> None:
    """Let the csv module read fields as long as the text being read (at most ``max_bytes``).

    Its default field limit (131,072 characters) made a table with one long cell (a document)
    fail with ``csv.Error`` outside the loaders' size policy; the text is already bounded by
    ``max_bytes``, so no field can be longer. The limit is process-wide and only ever raised.
    """
    with _CSV_LIMIT_LOCK:
        if csv.field_size_limit() < nbytes:
            csv.field_size_limit(min(int(nbytes), 2**31 - 1))


#: Reads every column chunk's metadata of the Parquet file named by argv[1] (``_probe_parquet``).
_PARQUET_PROBE = ("import sys, pyarrow.parquet as pq; m = pq.ParquetFile(sys.argv[1]).metadata; "
                  "[m.row_group(g).column(j) for g in range(m.num_row_groups) for j in range(m.num_columns)]")


def _probe_parquet(path: Path) -> None:
    """Read the file's column-chunk metadata in a child process first; raise if that process dies.

    A malformed footer can make pyarrow throw inside C++ code that cannot pass the error on
    (pyarrow 26: "Definition level histogram size mismatch" while building a column chunk's
    metadata): the process is aborted. A visitor's upload must not stop the server, so the
    metadata is first read where an abort only ends the child (about 0.3 s).
    """
    try:
        done = subprocess.run([sys.executable, "-c", _PARQUET_PROBE, str(path)], capture_output=True,
                              timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        raise DiversityInputError(f"{path}: reading the Parquet file's metadata took over 120 s; "
                                  "re-export it.") from None
    if done.returncode != 0:
        raise DiversityInputError(
            f"{path}: cannot read the Parquet file (its metadata is malformed). "
            "It may be truncated or not Parquet; re-export it."
        )


def _float_frame(matrix: np.ndarray, names: list, rest, order: list):
    """A frame whose columns ``names`` view ``matrix`` (no copy), the columns of ``rest``, in ``order``."""
    import pandas as pd

    frame = pd.DataFrame(matrix, columns=names, copy=False)
    if rest is not None and len(rest.columns):
        frame = pd.concat([frame, rest.reset_index(drop=True)], axis=1)
    return frame[order] if list(frame.columns) != order else frame


def _gather_floats(df) -> tuple:
    """``(df, matrix)``: the float columns of ``df`` moved into one C-ordered float64 array.

    The returned frame's float columns view ``matrix``, so the feature matrix of a numeric table
    is that array itself (:func:`~.embeddings.read_table_features`), not a second copy beside
    the frame. ``matrix`` is None when ``df`` has no float column (or duplicated names).
    """
    import pandas as pd

    names = [c for c in df.columns if pd.api.types.is_float_dtype(df[c])]
    if not names or df.columns.duplicated().any():
        return df, None
    matrix = np.empty((len(df), len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        matrix[:, j] = df[name].to_numpy()
    order = list(df.columns)
    rest = df.drop(columns=names)
    del df  # the caller drops its frame too: the parsed columns are freed
    return _float_frame(matrix, names, rest, order), matrix


def _parquet_index_columns(schema) -> set:
    """Columns pandas stored as the frame's index (``pd.read_parquet`` makes them the index, not columns)."""
    try:
        meta = schema.pandas_metadata or {}
    except Exception:  # noqa: BLE001 - malformed pandas metadata: no index columns
        return set()
    return {c for c in meta.get("index_columns", ()) if isinstance(c, str)}


def _read_parquet_column(pf, group: int, name: str, out: np.ndarray) -> None:
    """Column ``name`` of row group ``group`` into ``out``: one column chunk decoded at a time.

    A column chunk larger than :func:`~diversity_core._config.chunk_rows` rows is read in
    batches of that many rows (a file written as one row group of millions of rows).
    """
    rows = out.shape[0]
    step = chunk_rows(1)
    if rows <= step:
        out[:] = pf.read_row_group(group, columns=[name]).column(0).to_numpy()
        return
    start = 0
    for batch in pf.iter_batches(batch_size=step, row_groups=[group], columns=[name], use_pandas_metadata=False):
        out[start:start + batch.num_rows] = batch.column(0).to_numpy(zero_copy_only=False)
        start += batch.num_rows


def _parquet_frame(pf, n: int) -> tuple:
    """``(df, matrix)`` of an open Parquet file: float columns read batch by batch into one matrix.

    The float columns go straight into a preallocated C-ordered float64 array, one column chunk
    (row group x column) at a time (pyarrow decodes it, its values are copied into place, it is
    dropped; :func:`_read_parquet_column`); the other columns (strings, integers, lists) are
    read through pandas. ``(None, None)`` when the file has no float column.
    """
    import pyarrow as pa

    schema = pf.schema_arrow
    names = [str(f.name) for f in schema]
    index = _parquet_index_columns(schema)
    floats = [str(f.name) for f in schema if pa.types.is_floating(f.type) and str(f.name) not in index]
    if not floats or len(set(names)) != len(names):
        return None, None
    matrix = np.empty((n, len(floats)), dtype=np.float64)
    start = 0
    for g in range(pf.metadata.num_row_groups):
        stop = start + int(pf.metadata.row_group(g).num_rows)
        for j, name in enumerate(floats):
            _read_parquet_column(pf, g, name, matrix[start:stop, j])
        start = stop
    if start != n:
        raise DiversityInputError(f"{pf.metadata.num_rows} rows announced, {start} read")
    pa.default_memory_pool().release_unused()  # pyarrow's allocator keeps freed pages otherwise
    others = [c for c in names if c not in floats and c not in index]
    rest = pf.read(columns=others).to_pandas() if others else None
    if rest is not None:
        rest = rest[[c for c in rest.columns if str(c) in others]]
    return _float_frame(matrix, floats, rest, [c for c in names if c not in index]), matrix


def _read_parquet(path: Path) -> Table:
    """A Parquet file, its reading peak checked from the metadata before any data is read."""
    import pandas as pd


    pq = require("pyarrow.parquet", purpose="reading Parquet files")
    _probe_parquet(path)
    try:
        meta = pq.ParquetFile(path).metadata
        rows, columns = int(meta.num_rows), int(meta.num_columns)
        nbytes, values = parquet_decoded_bytes(meta)
    except Exception as exc:  # pyarrow raises many types for corrupt files; their text may quote the file
        raise DiversityInputError(
            f"{path}: cannot read the Parquet file ({type(exc).__name__}). "
            "It may be truncated or not Parquet; re-export it."
        ) from None
    _check_decoded_size(path, rows, columns, "Parquet", nbytes=nbytes, values=values)
    try:
        df, matrix = _parquet_frame(pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20), rows)
        if df is None:
            df = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - as above
        raise DiversityInputError(
            f"{path}: cannot read the Parquet file ({type(exc).__name__}). "
            "It may be truncated or not Parquet; re-export it."
        ) from None
    df.columns = [str(c) for c in df.columns]
    return Table(df=df, path=path, kind="parquet", matrix=matrix)


def _read_jsonl(path: Path, max_bytes: int) -> Table:
    """A JSON Lines file: one object per line; nested objects are flattened into ``a.b`` columns."""
    import pandas as pd

    text = decode_utf8(read_input_bytes(path, max_bytes), str(path))
    _check_decoded_size(path, text.count("\n") + 1, 1, "JSON Lines")
    records, lines = [], []
    keys: dict = {}
    nested = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DiversityInputError(
                f"{path} line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}). "
                "Each line of a .jsonl file must be one JSON object."
            ) from None
        except RecursionError:
            raise DiversityInputError(
                f"{path} line {lineno}: the JSON is nested too deeply to read. "
                "Each line of a .jsonl file must be one flat JSON object."
            ) from None
        except ValueError:  # e.g. an integer with more digits than Python converts
            raise DiversityInputError(
                f"{path} line {lineno}: a number on this line cannot be read (too many digits)."
            ) from None
        if not isinstance(obj, dict):
            raise DiversityInputError(
                f'{path} line {lineno}: expected a JSON object ({{"text": ...}}), got {type(obj).__name__}.'
            )
        if not nested and any(isinstance(v, dict) for v in obj.values()):
            nested = True
        for k in obj:
            keys[k] = None
        records.append(obj)
        lines.append(lineno)
    _check_decoded_size(path, len(records), len(keys), "JSON Lines")
    notes = []
    try:
        if nested:
            df = pd.json_normalize(records, sep=".")
            flat = [c for c in df.columns if c not in keys]
            notes.append(f"nested JSON objects flattened into {len(flat)} columns ({columns_text(flat[:5])}"
                         + (", ..." if len(flat) > 5 else "") + ")")
        else:
            df = pd.DataFrame.from_records(records)
    except RecursionError:
        raise DiversityInputError(f"{path}: the JSON objects are nested too deeply to read.") from None
    df.columns = [str(c) for c in df.columns]
    return Table(df=df, path=path, kind="jsonl", line_numbers=lines, notes=notes)


def _count_lines(path: Path, max_bytes: int) -> int:
    """Lines of a text file (newlines + 1), counted as it streams past."""
    count = 1
    with open_input(path, max_bytes) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


def _head_has_strings(head: str, delimiter: str) -> bool:
    """Whether a data cell among the first records of a delimited table is not a number."""
    try:
        records = list(csv.reader(io.StringIO(head[:_SNIFF_CHARS]), delimiter=delimiter))[1:-1] or []
    except csv.Error:
        return True
    for record in records:
        for cell in record:
            cell = cell.strip()
            if not cell:
                continue
            try:
                float(cell)
            except ValueError:
                return True
    return False


def _read_delimited(path: Path, max_bytes: int, default: Optional[str]) -> Table:
    """A delimited text table; the delimiter is sniffed from the content (the extension only suggests one).

    The text is never held whole: its first 64 KiB decide the delimiter and the header, the
    ragged-row check and pandas read the file as it streams, and the float columns are gathered
    into one float64 matrix (:func:`_gather_floats`). The peak of that parse is checked against
    the memory budget first (:func:`delimited_peak_bytes`).
    """
    import pandas as pd

    size = check_file(path, max_bytes)
    want = 4 * _SNIFF_CHARS + 8  # at least _SNIFF_CHARS + 1 characters when the file is longer
    raw = read_head(path, want)
    head = decode_head(raw, str(path), final=len(raw) < want)
    _allow_csv_fields(size + 1)
    delimiter = sniff_delimiter(head, default) or ","
    notes = []
    if default is not None and delimiter != default:
        notes.append(
            f"{delimiter_name(delimiter)}-separated (sniffed from the content; the {path.suffix} extension "
            f"suggests {delimiter_name(default)}s)"
        )
    elif default is None:
        notes.append(f"{delimiter_name(delimiter)}-separated (sniffed from the content)")
    table = Table(df=None, path=path, kind="csv", head=head[: _SNIFF_CHARS + 1], delimiter=delimiter, notes=notes,
                  max_bytes=max_bytes)
    table.check_ragged()
    rows, width = _count_lines(path, max_bytes), table.width()
    strings = size if _head_has_strings(head, delimiter) else 0
    _check_decoded_size(path, rows, width, "delimited text",
                        nbytes=delimited_peak_bytes(rows, width, text_bytes=strings))
    try:
        with warnings.catch_warnings():
            # pandas warns, and drops values, when a row is longer than the header
            warnings.simplefilter("error", pd.errors.ParserWarning)
            with open_input(path, max_bytes) as fh:
                df = pd.read_csv(fh, sep=delimiter, index_col=False, encoding="utf-8-sig")
    except pd.errors.ParserWarning:
        raise DiversityInputError(
            f"{path}: ragged rows: some rows have more fields than the header. Every row needs one value per "
            "column; fix or remove those lines."
        ) from None
    except pd.errors.EmptyDataError:
        raise DiversityInputError(f"{path}: the file has no rows or columns.") from None
    except pd.errors.ParserError as exc:
        # pandas' messages may quote the file; only its counts are repeated
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            raise DiversityInputError(
                f"{path}: ragged rows: line {m.group(2)} has {m.group(3)} fields but the header has "
                f"{m.group(1)}. Every row needs one value per column; fix or remove that line."
            ) from None
        m = re.search(r"EOF inside string starting at row (\d+)", str(exc))
        detail = f" (a quoted field opened at data row {int(m.group(1)) + 1} is never closed)" if m else ""
        raise DiversityInputError(
            f"{path}: cannot be parsed as a {delimiter_name(delimiter)}-separated table{detail}. "
            "Check its quoting, or re-export it."
        ) from None
    except (ValueError, OverflowError, MemoryError) as exc:
        raise DiversityInputError(
            f"{path}: cannot be parsed as a {delimiter_name(delimiter)}-separated table ({type(exc).__name__})."
        ) from None
    df.columns = [str(c) for c in df.columns]
    table.df, table.matrix = _gather_floats(df)
    return table


def read_table(path: Path, max_bytes: int, *, delimiter: Optional[str] = None) -> Table:
    """Read a .csv/.tsv/.jsonl/.parquet file into a :class:`Table`, with clear errors.

    Delimited text (any other extension, e.g. ``.csv``, ``.tsv``, ``.txt``) has its delimiter
    sniffed from the content (:func:`sniff_delimiter`); ``delimiter`` forces one. The number of
    values (rows x columns, from the Parquet metadata or the text) is checked against the memory
    budget before the table is parsed.
    """
    check_file(path, max_bytes)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        table = _read_parquet(path)
    elif suffix in (".jsonl", ".ndjson"):
        table = _read_jsonl(path, max_bytes)
    else:
        default = delimiter
        if default is None:
            default = "\t" if suffix in (".tsv", ".tab") else "," if suffix == ".csv" else None
        table = _read_delimited(path, max_bytes, default)
        if delimiter is not None:
            table.notes = [f"{delimiter_name(delimiter)}-separated (given)"]
    if table.n_rows == 0:
        raise DiversityInputError(f"{path}: the table has a header but no data rows.")
    return table


# --------------------------------------------------------------------------------------------
# group / weight / id columns
# --------------------------------------------------------------------------------------------


#: Column names read as groups when no group column is named (case-insensitive, in this order).
GROUP_COLUMN_NAMES = ("group", "groups", "label", "labels", "class", "target", "category", "model")
#: Most distinct values an unnamed string column may hold to be read as groups (and at most half
#: the rows: a column of mostly distinct strings names items, not groups).
MAX_DETECTED_GROUPS = 50


def _group_candidates(table: Table, exclude: Sequence[str]) -> list:
    """String columns that could hold groups: every value present and not a number, no lists."""
    import pandas as pd

    id_col = table.find_column(ID_COLUMNS)
    out = []
    for name in table.df.columns:
        col = table.df[name]
        if name in exclude or name == id_col or col.isna().any() or not is_text_column(col):
            continue
        text = col.astype(str).str.strip()
        # a column with any number in it is a feature column with a typo, not a group column
        if (text == "").any() or pd.to_numeric(text, errors="coerce").notna().any():
            continue
        out.append(name)
    return out


def detect_group_column(table: Table, *, exclude: Sequence[str] = (), keep_one: bool = False) -> Optional[str]:
    """The string column of ``table`` that holds each row's group, or None when none is clear.

    Candidates are string columns with a value in every row and no number among them (ids,
    ``exclude`` and list columns left out). One named like :data:`GROUP_COLUMN_NAMES` (``group``,
    ``label``, ``class``, ``target``, ``model``, ...) is chosen first; otherwise the only
    candidate with 2 to :data:`MAX_DETECTED_GROUPS` distinct values, at most half the rows.
    ``keep_one`` leaves at least one other string column (the text or SMILES of the table).
    """
    candidates = _group_candidates(table, exclude)
    if keep_one and len(candidates) < 2:
        return None
    lower = {str(c).lower(): c for c in candidates}
    for name in GROUP_COLUMN_NAMES:
        if name in lower:
            return lower[name]
    n = len(table.df)
    most = min(MAX_DETECTED_GROUPS, n // 2)
    few = [c for c in candidates if 2 <= table.df[c].astype(str).str.strip().nunique() <= most]
    return few[0] if len(few) == 1 else None


def groups_from_column(table: Table, name: str, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Group labels (str) from column ``name``; missing labels raise naming the rows."""
    col = table.column(name, "group")
    missing = np.flatnonzero(col.isna().to_numpy() | (col.astype(str).str.strip() == "").to_numpy())
    if keep is not None:
        missing = missing[np.isin(missing, keep)]
    if missing.size:
        raise DiversityInputError(
            f"{table.path}: the group column {name!r} is empty at {table.rows_text(missing)}. "
            "Give every row a group, or drop those rows."
        )
    values = col.astype(str).str.strip().to_numpy()
    return values.astype(str) if keep is None else values[keep].astype(str)


def check_weight_values(w: np.ndarray, where_rows, source: str, name: str) -> np.ndarray:
    """Validate raw weights (finite, non-negative, not all zero); ``where_rows(rows)`` names rows."""
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise DiversityInputError(
            f"{source}: the weight column {name!r} has missing, NaN or infinite values at {where_rows(bad)}. "
            "Fix or drop those rows."
        )
    neg = np.flatnonzero(w < 0)
    if neg.size:
        raise DiversityInputError(
            f"{source}: weights must be non-negative; the weight column {name!r} has {neg.size} negative "
            f"values at {where_rows(neg)}. Drop or fix those rows."
        )
    if not np.any(w > 0):
        raise DiversityInputError(
            f"{source}: the weight column {name!r} is all zero; at least one item needs a positive weight "
            "(or leave out the weight column for uniform weights)."
        )
    with np.errstate(over="ignore"):
        total = float(np.sum(w, dtype=np.float64))
    if not np.isfinite(total):
        raise DiversityInputError(
            f"{source}: the weights of column {name!r} are too large: their sum overflows "
            "float64. Weights are relative; divide them all by a common factor."
        )
    return w.astype(np.float64)


def weights_from_column(table: Table, name: str, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Non-negative float weights from column ``name``, validated with row numbers."""
    import pandas as pd

    col = table.column(name, "weight")
    numeric = pd.to_numeric(col, errors="coerce")
    nonnum = np.flatnonzero(numeric.isna().to_numpy() & col.notna().to_numpy())
    if nonnum.size:
        raise DiversityInputError(
            f"{table.path}: the weight column {name!r} is not numeric (at {table.rows_text(nonnum)}). "
            "Weights must be numbers."
        )
    w = numeric.to_numpy(dtype=np.float64)
    rows = np.arange(len(w)) if keep is None else np.asarray(keep)
    w = w[rows]

    def where_rows(bad):
        return table.rows_text(rows[bad])

    return check_weight_values(w, where_rows, str(table.path), name)


def ids_from_column(table: Table, name: str) -> list:
    col = table.column(name, "id")
    return [str(v) for v in col.to_numpy()]


def first_rows(rows: Sequence[int], limit: int = 5) -> str:
    """``[1, 2, 3]`` -> ``"1, 2, 3"`` with an ellipsis and a count past ``limit``."""
    return _first_rows(list(rows), limit)
