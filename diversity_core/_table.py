"""Plain-text tables: one printer shared by every ``diversity`` command and the text renderings of results."""

from __future__ import annotations

from typing import Sequence

__all__ = ["format_table"]


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]], *, rule: bool = True) -> str:
    """Left-aligned columns two spaces apart under a header (and a rule of dashes).

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequences
        One sequence of cells per row, as many as ``header``; cells are shown with ``str``.
    rule : bool, default True
        Draw a line of dashes under the header.

    Returns
    -------
    str
        The lines joined by newlines (no final newline), trailing blanks removed.

    Examples
    --------
    >>> print(format_table(["score", "a"], [["VS_1", "3.2"], ["IntDiv", "0.71"]]))
    score   a
    ------  ----
    VS_1    3.2
    IntDiv  0.71
    """
    header = [str(h) for h in header]
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    if rule:
        lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)
