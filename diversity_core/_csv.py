"""CSV exports: one writer for every table the project writes (issue 40, item 12).

A spreadsheet opening a CSV file runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a
formula (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``, DDE): an id, a group name or a note taken
from a user's file must not become one. Following OWASP's "CSV Injection" recommendation, a
**text** cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a single
quote in front (``'=1+2``: shown as text); the ``csv`` module quotes cells holding the delimiter,
quotes or line breaks. Numbers stay numbers: ints and floats are written as they are (floats by
``repr``, so they read back exactly), and a text cell that is a plain decimal number (``-1.5``,
``+3``, ``-2e-05``) is not touched either: it cannot be a formula.

The quote is reversible: a text cell that already starts with quotes followed by one of those
characters gets one more, and :func:`restore_cell` removes exactly one, so reading an export back
(:meth:`~diversity_core.compare.Comparison.read_csv`) gives the original text.

- :func:`csv_cell`: one value as the text of a cell, neutralised;
- :func:`csv_text`: a header and rows as CSV text (``"\\n"`` line ends);
- :func:`frame_csv`: a pandas DataFrame as CSV text, its text cells neutralised;
- :func:`restore_cell`: a cell read back, its neutralising quote removed.
"""

from __future__ import annotations

import math
import re
from numbers import Integral, Real
from typing import Any, Iterable, Sequence

__all__ = ["FORMULA_PREFIXES", "csv_cell", "csv_text", "frame_csv", "restore_cell"]

#: First characters a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

# a plain decimal number: harmless in a spreadsheet, left as it is
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _dangerous(text: str) -> bool:
    """Whether ``text`` (after any leading quotes) starts like a formula and is not a plain number."""
    rest = text.lstrip("'")
    return rest[:1] in FORMULA_PREFIXES and _NUMBER.fullmatch(rest) is None


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: None blank, numbers as they are (floats by ``repr``), text neutralised.

    Examples
    --------
    >>> [csv_cell(v) for v in (None, 3, -1.5, "-1.5", "=1+2", "@SUM(A1)", "ok", True)]
    ['', 3, '-1.5', '-1.5', "'=1+2", "'@SUM(A1)", 'ok', True]
    """
    if value is None:
        return ""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return repr(float(value))
    text = str(value)
    return "'" + text if _dangerous(text) else text


def restore_cell(text: str) -> str:
    """A cell read back from :func:`csv_text`: the quote :func:`csv_cell` put in front removed.

    Examples
    --------
    >>> [restore_cell(csv_cell(s)) for s in ("=1+2", "'=x", "-3", "it's")]
    ['=1+2', "'=x", '-3', "it's"]
    """
    return text[1:] if text.startswith("'") and _dangerous(text[1:]) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A header and rows as CSV text, every cell through :func:`csv_cell`; ``"\\n"`` line ends.

    Cells holding a comma, a double quote, a line feed or a carriage return are quoted (RFC 4180;
    the ``csv`` module's writer leaves a lone carriage return unquoted when rows end in ``"\\n"``,
    and a reader then splits the row there).

    Parameters
    ----------
    header : sequence of str
    rows : iterable of sequences
        One sequence of values per row (None for a blank cell).

    Returns
    -------
    str

    Examples
    --------
    >>> print(csv_text(["id", "x"], [["=cmd", -2.0], ["a,b", None]]), end="")
    id,x
    '=cmd,-2.0
    "a,b",
    """
    lines = [_line(header)]
    lines.extend(_line(row) for row in rows)
    return "".join(lines)


def _line(row: Sequence[Any]) -> str:
    """One CSV record, ended by ``"\\n"``."""
    cells = [_quoted(str(csv_cell(v))) for v in row]
    if cells == [""]:
        cells = ['""']  # a lone blank cell: an empty line would be skipped by readers
    return ",".join(cells) + "\n"


def _quoted(text: str) -> str:
    """``text`` quoted when it holds a delimiter, a quote or a line break (RFC 4180)."""
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def frame_csv(frame) -> str:
    """A pandas DataFrame as CSV text (no index, ``"\\n"`` line ends) through :func:`csv_text`.

    Missing values (NaN, None, ``pd.NA``) are blank cells, as ``DataFrame.to_csv`` writes them;
    the column names and text cells are neutralised, numbers written as they are.
    """
    columns = [str(c) for c in frame.columns]
    return csv_text(columns, ([_missing_to_none(v) for v in row]
                              for row in frame.itertuples(index=False, name=None)))


def _missing_to_none(value: Any) -> Any:
    """None for a missing value (NaN, None, ``pd.NA``, ``NaT``), else the value."""
    if value is None or (isinstance(value, Real) and not isinstance(value, Integral) and math.isnan(value)):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value
