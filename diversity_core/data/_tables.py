"""Tables (.csv, .tsv, .jsonl, .parquet) for the loaders, with row/line bookkeeping for messages.

A :class:`Table` wraps a :class:`pandas.DataFrame` and knows how to name row ``i`` in an error
message ("data.csv row 4 (line 5)"). Column helpers turn a group or weight column into arrays
or raise naming the offending rows. Parquet needs pyarrow (the extra ``[parquet]``), imported when
a Parquet file is read: without it that read raises :class:`~diversity_core.exceptions.MissingDependencyError`
naming the extra.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from .._config import check_memory
from ..exceptions import DiversityInputError
from ._files import check_file, decode_utf8, read_input_bytes

#: Extensions read as tables.
TABLE_EXTENSIONS = (".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".parquet", ".pq")

#: Column names recognised as item identifiers (file names for image companions).
ID_COLUMNS = ("id", "ids", "name", "names", "file", "filename", "file_name", "path", "image")

#: Delimiters tried when sniffing a delimited text table, in order of preference.
DELIMITERS = (",", "\t", ";", "|")
_DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe", " ": "space"}

#: Copies of a table's values that loading holds at its peak (the parsed table, the pandas frame,
#: the float64 feature matrix), used to check its decoded size against the memory budget.
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


@dataclass
class Table:
    """A parsed table plus what is needed to point at its rows in messages."""

    df: object  # pandas.DataFrame (pandas is imported lazily)
    path: Path
    kind: str  # "csv" | "jsonl" | "parquet"
    text: Optional[str] = None  # decoded text of csv/tsv files, for line numbers
    delimiter: str = ","
    line_numbers: Optional[list] = None  # jsonl: physical line of each row
    notes: list = field(default_factory=list)  # what was detected or changed while reading (for Dataset.detected)
    _csv_lines: Optional[list] = field(default=None, repr=False)

    @property
    def n_rows(self) -> int:
        return len(self.df)

    def _csv_line_numbers(self) -> list:
        """Physical starting line of each data record (blank lines skipped, as pandas does)."""
        if self._csv_lines is None:
            starts: list[int] = []
            reader = csv.reader(io.StringIO(self.text or ""), delimiter=self.delimiter)
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
        reader = csv.reader(io.StringIO(self.text or ""), delimiter=self.delimiter)
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
        try:
            for record in csv.reader(io.StringIO((self.text or "")[:_SNIFF_CHARS]), delimiter=self.delimiter):
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


# ---- decoded size against the memory budget (issue 26 item 7) --------------------------------

#: Bytes a loaded table holds per row besides its values: the row's id (``"row N"``, a Python
#: string) and pandas' bookkeeping. Measured with ``diversity inspect`` on Parquet files of 1 and 2
#: million rows: about 56 B per row and 28 B per float value.
ROW_BYTES = 64

#: Bytes per string (BYTE_ARRAY) value of a Parquet file besides its characters: a Python ``str``
#: object in the pandas column and its offset in the Arrow buffer.
_STRING_BYTES = 72

#: Bytes per cell of a list column (a NumPy array or list object per row) besides its values.
_LIST_CELL_BYTES = 112


def parquet_decoded_bytes(meta) -> tuple:
    """``(bytes, values)`` a Parquet file takes once loaded, from its metadata alone.

    ``meta`` is a ``pyarrow.parquet.FileMetaData``. Every column chunk counts its leaf values
    (``num_values``: a list column counts every element, not one per row): numbers at
    ``8 * DECODE_COPIES`` bytes each, strings at :data:`_STRING_BYTES` plus twice their mean
    uncompressed length; a list column adds :data:`_LIST_CELL_BYTES` per row, and every row
    :data:`ROW_BYTES`. Nothing is decompressed, so a file of a few hundred KB that decodes to
    gigabytes is sized in milliseconds.
    """
    rows = int(meta.num_rows)
    nbytes = float(rows) * ROW_BYTES
    values = 0
    schema = meta.schema
    for j in range(int(meta.num_columns)):
        repeated = int(getattr(schema.column(j), "max_repetition_level", 0) or 0) > 0
        if repeated:
            nbytes += float(rows) * _LIST_CELL_BYTES
        for g in range(int(meta.num_row_groups)):
            chunk = meta.row_group(g).column(j)
            count = int(chunk.num_values)
            values += count
            if str(chunk.physical_type) in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
                mean = float(chunk.total_uncompressed_size) / max(count, 1)
                nbytes += count * (_STRING_BYTES + 2.0 * mean)
            else:
                nbytes += count * 8.0 * DECODE_COPIES
    return nbytes, values


def _check_decoded_size(path: Path, rows: int, columns: int, kind: str, *, nbytes=None, values=None) -> None:
    """Refuse a table whose values would not fit the memory budget, before it is parsed.

    ``nbytes`` (and the count of ``values``) when known better than ``rows x columns`` numbers
    plus :data:`ROW_BYTES` per row (Parquet: :func:`parquet_decoded_bytes`).
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
    import subprocess
    import sys

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


def _read_parquet(path: Path) -> Table:
    """A Parquet file, its size checked from the metadata before any data is read."""
    import pandas as pd

    from .._optional import require

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
        df = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - as above
        raise DiversityInputError(
            f"{path}: cannot read the Parquet file ({type(exc).__name__}). "
            "It may be truncated or not Parquet; re-export it."
        ) from None
    df.columns = [str(c) for c in df.columns]
    return Table(df=df, path=path, kind="parquet")


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


def _read_delimited(path: Path, max_bytes: int, default: Optional[str]) -> Table:
    """A delimited text table; the delimiter is sniffed from the content (the extension only suggests one)."""
    import pandas as pd

    text = decode_utf8(read_input_bytes(path, max_bytes), str(path))
    _allow_csv_fields(len(text) + 1)
    delimiter = sniff_delimiter(text, default) or ","
    notes = []
    if default is not None and delimiter != default:
        notes.append(
            f"{delimiter_name(delimiter)}-separated (sniffed from the content; the {path.suffix} extension "
            f"suggests {delimiter_name(default)}s)"
        )
    elif default is None:
        notes.append(f"{delimiter_name(delimiter)}-separated (sniffed from the content)")
    table = Table(df=None, path=path, kind="csv", text=text, delimiter=delimiter, notes=notes)
    table.check_ragged()
    _check_decoded_size(path, text.count("\n") + 1, table.width(), "delimited text")
    try:
        with warnings.catch_warnings():
            # pandas warns, and drops values, when a row is longer than the header
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(io.StringIO(text), sep=delimiter, index_col=False)
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
    table.df = df
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
