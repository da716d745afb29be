"""Tables (.csv, .tsv, .jsonl, .parquet) for the loaders, with row/line bookkeeping for messages.

A :class:`Table` wraps a :class:`pandas.DataFrame` and knows how to name row ``i`` in an error
message ("data.csv row 4 (line 5)"). Column helpers turn a group or weight column into arrays
or raise naming the offending rows.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ..exceptions import DiversityInputError
from ._files import check_file, decode_utf8

#: Extensions read as tables.
TABLE_EXTENSIONS = (".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".parquet", ".pq")

#: Column names recognised as item identifiers (file names for image companions).
ID_COLUMNS = ("id", "ids", "name", "names", "file", "filename", "file_name", "path", "image")


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

    def column(self, name: str, role: str) -> object:
        """The column ``name``, or an error listing the available columns."""
        if name not in self.df.columns:
            cols = ", ".join(repr(str(c)) for c in self.df.columns)
            raise DiversityInputError(
                f"{self.path}: no column named {name!r} (the {role} column); the columns are: {cols}."
            )
        return self.df[name]

    def find_column(self, candidates: Sequence[str]) -> Optional[str]:
        """The first column whose name matches one of ``candidates`` (case-insensitive)."""
        lower = {str(c).lower(): c for c in self.df.columns}
        for cand in candidates:
            if cand.lower() in lower:
                return lower[cand.lower()]
        return None


def read_table(path: Path, max_bytes: int) -> Table:
    """Read a .csv/.tsv/.jsonl/.parquet file into a :class:`Table`, with clear errors."""
    import pandas as pd

    check_file(path, max_bytes)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types for corrupt files
            raise DiversityInputError(
                f"{path}: cannot read the Parquet file ({type(exc).__name__}: {exc}). "
                "It may be truncated or not Parquet; re-export it."
            ) from None
        df.columns = [str(c) for c in df.columns]
        table = Table(df=df, path=path, kind="parquet")
    elif suffix in (".jsonl", ".ndjson"):
        text = decode_utf8(path.read_bytes(), str(path))
        records, lines = [], []
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
            if not isinstance(obj, dict):
                raise DiversityInputError(
                    f'{path} line {lineno}: expected a JSON object ({{"text": ...}}), got {type(obj).__name__}.'
                )
            records.append(obj)
            lines.append(lineno)
        df = pd.DataFrame.from_records(records)
        df.columns = [str(c) for c in df.columns]
        table = Table(df=df, path=path, kind="jsonl", line_numbers=lines)
    else:
        delimiter = "\t" if suffix in (".tsv", ".tab") else ","
        text = decode_utf8(path.read_bytes(), str(path))
        table = Table(df=None, path=path, kind="csv", text=text, delimiter=delimiter)
        table.check_ragged()
        try:
            df = pd.read_csv(io.StringIO(text), sep=delimiter, index_col=False)
        except pd.errors.EmptyDataError:
            raise DiversityInputError(f"{path}: the file has no rows or columns.") from None
        except pd.errors.ParserError as exc:
            m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
            detail = (
                f"line {m.group(2)} has {m.group(3)} fields but the header has {m.group(1)}"
                if m
                else str(exc).strip()
            )
            raise DiversityInputError(
                f"{path}: ragged rows: {detail}. Every row needs one value per column; fix or remove that line."
            ) from None
        df.columns = [str(c) for c in df.columns]
        table.df = df
    if table.n_rows == 0:
        raise DiversityInputError(f"{path}: the table has a header but no data rows.")
    return table


# --------------------------------------------------------------------------------------------
# group / weight / id columns
# --------------------------------------------------------------------------------------------


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
    return w.astype(np.float64)


def weights_from_column(table: Table, name: str, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Non-negative float weights from column ``name``, validated with row numbers."""
    import pandas as pd

    col = table.column(name, "weight")
    numeric = pd.to_numeric(col, errors="coerce")
    nonnum = np.flatnonzero(numeric.isna().to_numpy() & col.notna().to_numpy())
    if nonnum.size:
        first = col.iloc[int(nonnum[0])]
        raise DiversityInputError(
            f"{table.path}: the weight column {name!r} is not numeric (e.g. {first!r} at "
            f"{table.where(int(nonnum[0]))}). Weights must be numbers."
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
