"""How public result objects show themselves in a notebook: short reprs, HTML tables, tidy frames.

The one place for display helpers (issue 42, item 1). A result object builds its ``__repr__``
with :func:`short_repr` (at most :data:`MAX_REPR_LINES` lines; an array is shown by its shape and
first few values, :func:`format_array`, never in full), gets ``_repr_html_`` from
:class:`NotebookDisplay` (a compact table of its :meth:`to_frame`, every user string escaped by
:func:`html_table`), and draws itself with ``.plot()`` by calling the figure builder the app and
the report use (:mod:`diversity_core.report.figures`), after :func:`require_plotly`.

Tidy-frame convention
---------------------
``to_frame()`` returns a pandas DataFrame with one row per (group, score, q) and the columns
:data:`FRAME_COLUMNS`, in this order:

=========  =================================================================================
column     meaning
=========  =================================================================================
group      the group (set, model, split) the row is about; left out when the result has none
score      what is measured: ``"vendi"``, ``"magnitude"``, ``"mag_area"``, ``"rnd"``, ...
q          the order q of a Vendi score (``inf`` for q = infinity); left out when no row has one
value      the number itself (float64)
low, high  the interval's ends; for an exact number both equal ``value``
level      the interval's two-sided confidence level; 1.0 for an exact number and for a bound,
           NaN when it was not recorded
kind       ``"exact"`` (computed exactly, no interval), ``"bound"`` (a range certain to contain
           the value; ``value`` is its point when there is one, NaN for bounds alone) or
           ``"estimate"`` (a statistical interval around ``value``)
=========  =================================================================================

Orders q in reprs and tables: the headline orders :data:`HEADLINE_QS` that a result has (all of
its orders in ``to_frame()``), named by :func:`~diversity_core._orders.q_key` (``VS_inf``).

A result may add columns after these (a scale ``t``, a count ``n``, ...). Build rows with
:func:`frame_row` (it takes a :class:`~diversity_core.ConfidenceInterval` and fills ``low``,
``high``, ``level`` and ``kind`` from it) and the frame with :func:`tidy_frame`. pandas and
plotly are imported inside the functions that need them, so importing this module costs nothing.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, Iterable, Optional

import numpy as np

__all__ = [
    "FRAME_COLUMNS",
    "KINDS",
    "MAX_REPR_LINES",
    "NotebookDisplay",
    "HEADLINE_QS",
    "format_array",
    "format_kernel",
    "format_interval",
    "format_value",
    "frame_row",
    "html_table",
    "order_lines",
    "order_rows",
    "require_plotly",
    "short_repr",
    "tidy_frame",
]

#: The columns of every tidy frame, in order (``group`` and ``q`` only when some row has them).
FRAME_COLUMNS = ("group", "score", "q", "value", "low", "high", "level", "kind")
#: What a row's number is: computed exactly, a guaranteed range's point, or a statistical estimate.
KINDS = ("exact", "bound", "estimate")
#: The most lines a result's ``__repr__`` has.
MAX_REPR_LINES = 10
#: The most rows an HTML table shows (the rest is counted in a last line).
MAX_HTML_ROWS = 40
#: How many leading values of an array a repr shows.
ARRAY_HEAD = 4
#: The longest a repr line may be before it is cut with an ellipsis.
MAX_LINE = 100
#: The orders q a repr shows (those the result has), and the rows of a Spectrum's ``to_frame()``.
HEADLINE_QS = (0.0, 1.0, 2.0, math.inf)


def format_value(x: Any, digits: int = 4) -> str:
    """A number as a short string: ``4`` significant digits, ``inf``, ``nan``; anything else by ``str``.

    Examples
    --------
    >>> format_value(12.345678), format_value(float("inf")), format_value(3)
    ('12.35', 'inf', '3')
    """
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.{digits}g}"
    return str(x)


def format_array(a: Any, *, head: int = ARRAY_HEAD) -> str:
    """An array by its shape and first few values: ``array(shape=(500,), [0.12, 0.03, 0.01, 0.008, ...])``.

    Never longer than ``head`` values, whatever the size of ``a``; ``None`` is ``"None"``.
    """
    if a is None:
        return "None"
    arr = np.asarray(a)
    if arr.ndim == 0:
        return format_value(arr.item())
    flat = arr.ravel()
    shown = ", ".join(format_value(v.item() if hasattr(v, "item") else v) for v in flat[:head])
    more = ", ..." if flat.size > head else ""
    return f"array(shape={arr.shape}, [{shown}{more}])"


def format_interval(value: Any, interval: Any = None, *, kind: Optional[str] = None) -> str:
    """``value [low, high] (kind, level)``: a number with its interval, as the reprs show it.

    ``interval`` is a :class:`~diversity_core.ConfidenceInterval` (its ``level`` and ``kind`` are
    used) or a ``(low, high)`` pair (then ``kind``, default ``"bound"``); ``None``: exact.
    ``value`` None with an interval: the range alone (bounds without a point value).

    Examples
    --------
    >>> from diversity_core import ConfidenceInterval
    >>> format_interval(12.0, ConfidenceInterval(11.0, 13.5, level=0.95))
    '12 [11, 13.5] (estimate, 95%)'
    >>> format_interval(4.2)
    '4.2 (exact)'
    """
    if interval is None:
        return f"{format_value(value)} ({kind or 'exact'})"
    low, high = interval
    kind = getattr(interval, "kind", None) or kind or "bound"
    level = getattr(interval, "level", None)
    tail = f"{kind}, {level:.0%}" if kind == "estimate" and level is not None else kind
    head = "" if value is None else f"{format_value(value)} "
    return f"{head}[{format_value(low)}, {format_value(high)}] ({tail})"


def format_kernel(kernel: Any) -> str:
    """A resolved kernel dict as ``rbf(sigma=1.23)``; a plain name as is, an empty dict as ``"?"``."""
    if not isinstance(kernel, Mapping):
        return str(kernel) if kernel else "?"
    params = ", ".join(f"{k}={format_value(v)}" for k, v in kernel.items()
                       if k != "name" and isinstance(v, (int, float, str, np.number)))
    return f"{kernel.get('name', '?')}({params})"


def order_lines(qs: Any, value: Any, low: Any = None, high: Any = None, *, kind: str = "exact",
                level: Optional[float] = None, qs_shown: Sequence[float] = HEADLINE_QS) -> list:
    """Repr fields ``("VS_1", "12 [11, 13] (estimate, 95%)")`` for the headline orders among ``qs``.

    ``value`` None: bounds alone (``[low, high] (bound)``). At most four orders are shown; when
    ``qs`` holds fewer than three of :data:`HEADLINE_QS`, its first, middle and last join them.
    """
    from ._orders import q_key
    from ._stats import ConfidenceInterval

    qs = np.asarray(qs, dtype=np.float64)
    picks = [int(np.flatnonzero(qs == q)[0]) for q in qs_shown if np.any(qs == q)]
    if len(picks) < 3 and qs.size:  # few headline orders on this grid: its ends and middle too
        picks = sorted(set(picks) | {0, qs.size // 2, qs.size - 1})
    fields = []
    for j in picks[:4]:
        interval = None
        if low is not None and high is not None:
            ends = (float(low[j]), float(high[j]))
            interval = (ConfidenceInterval.bound(*ends) if kind == "bound"
                        else ConfidenceInterval(*ends, level=level, kind="estimate"))
        text = format_interval(None if value is None else float(value[j]), interval, kind=kind)
        fields.append((f"VS_{q_key(qs[j])}", text))
    return fields


def order_rows(score: str, qs: Any, value: Any, low: Any = None, high: Any = None, *, kind: str = "exact",
               level: Optional[float] = None, group: Any = None, **extra: Any) -> list:
    """Tidy rows (:func:`frame_row`), one per order of ``qs``; ``value`` None: NaN (bounds alone).

    ``extra`` columns are given per order (arrays of the length of ``qs``) or as one value.
    """
    from ._stats import ConfidenceInterval

    qs = np.asarray(qs, dtype=np.float64)
    rows = []
    for j, q in enumerate(qs):
        interval = None
        if low is not None and high is not None:
            ends = (float(low[j]), float(high[j]))
            interval = (ConfidenceInterval.bound(*ends) if kind == "bound"
                        else ConfidenceInterval(*ends, level=level, kind="estimate"))
        more = {k: (v[j] if isinstance(v, (np.ndarray, list, tuple)) else v) for k, v in extra.items()}
        rows.append(frame_row(score, math.nan if value is None else value[j], interval, group=group,
                              q=float(q), kind=kind, **more))
    return rows


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def short_repr(title: str, fields: Any = (), *, max_lines: int = MAX_REPR_LINES) -> str:
    """A repr of at most ``max_lines`` lines: ``title`` then one ``name: value`` line per field.

    Parameters
    ----------
    title : str
        The first line, e.g. ``"Spectrum(n=500, kernel='cosine')"``.
    fields : mapping or sequence of (name, value)
        The lines after the title. A value that is an array (or a list longer than a few
        items) is shown by :func:`format_array`; a float by :func:`format_value`; a string as is.
        ``None`` values are skipped. Lines longer than :data:`MAX_LINE` are cut.
    max_lines : int
        The most lines in all; extra fields are dropped with a last ``... (k more)`` line.
    """
    items = list(fields.items()) if isinstance(fields, Mapping) else list(fields)
    lines = [_cut(title)]
    items = [(name, value) for name, value in items if value is not None]
    room = max_lines - 1
    if len(items) > room:
        items, dropped = items[: room - 1], len(items) - (room - 1)
    else:
        dropped = 0
    for name, value in items:
        if isinstance(value, np.ndarray) or (isinstance(value, (list, tuple)) and len(value) > ARRAY_HEAD
                                             and not isinstance(value, str)):
            text = format_array(value)
        elif isinstance(value, (float, np.floating, int, np.integer)):
            text = format_value(value)
        else:
            text = str(value)
        text = text.replace("\n", " ")
        lines.append(_cut(f"  {name}: {text}"))
    if dropped:
        lines.append(f"  ... ({dropped} more)")
    return "\n".join(lines)


def frame_row(score: str, value: Any, interval: Any = None, *, group: Any = None, q: Any = None,
              kind: Optional[str] = None, **extra: Any) -> dict:
    """One row of a tidy frame (see the module docstring).

    ``interval``: a :class:`~diversity_core.ConfidenceInterval` (``low``, ``high``, ``level`` and
    ``kind`` come from it), a ``(low, high)`` pair (``kind`` default ``"bound"``, level 1.0), or
    ``None`` for an exact number (``low = high = value``, level 1.0, kind ``"exact"``). ``kind``
    overrides (e.g. ``"estimate"`` for a point estimate without an interval). ``extra`` columns
    follow the standard ones.
    """
    value = float(value) if value is not None else math.nan
    if interval is None:
        kind = kind or "exact"
        low = high = math.nan if kind == "estimate" else value
        level = math.nan if kind == "estimate" else 1.0
    else:
        low, high = (math.nan if end is None else float(end) for end in interval)
        kind = kind or getattr(interval, "kind", None) or "bound"
        level = getattr(interval, "level", None)
        level = 1.0 if kind == "bound" else (math.nan if level is None else float(level))
    row = {"group": group, "score": score, "q": q, "value": value, "low": low, "high": high,
           "level": level, "kind": kind}
    row.update(extra)
    return row


def tidy_frame(rows: Iterable[Mapping]):
    """A pandas DataFrame of ``rows`` with the standard columns first, ``group``/``q`` kept only when used.

    ``q`` is a float column (``inf`` for q = infinity); ``value``, ``low``, ``high`` and ``level`` are float64.
    """
    import pandas as pd

    rows = [dict(r) for r in rows]
    extra = []
    for r in rows:
        extra += [k for k in r if k not in FRAME_COLUMNS and k not in extra]
    columns = [c for c in FRAME_COLUMNS if c not in ("group", "q") or any(r.get(c) is not None for r in rows)]
    frame = pd.DataFrame([{c: r.get(c) for c in columns + extra} for r in rows], columns=columns + extra)
    for c in ("value", "low", "high", "level") + (("q",) if "q" in columns else ()):
        frame[c] = frame[c].astype("float64")
    return frame


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating, int, np.integer, bool, np.bool_)):
        return format_value(value)
    if value is None:
        return ""
    return str(value)


def _missing(value: Any) -> bool:
    """Whether a text cell holds no value (None, or the NaN pandas puts in an empty text column)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def html_table(frame_or_rows: Any, *, caption: Optional[str] = None, max_rows: int = MAX_HTML_ROWS) -> str:
    """A compact HTML table of a DataFrame (or a list of row dicts), every string escaped.

    Group names, captions and column names are user text (a group can be called
    ``<script>...``): each goes through :func:`html.escape`. Numbers are shown by
    :func:`format_value`; past ``max_rows`` rows a last row says how many were left out.
    """
    if isinstance(frame_or_rows, Sequence) and not hasattr(frame_or_rows, "columns"):
        frame_or_rows = tidy_frame(frame_or_rows) if frame_or_rows else None
    esc = html.escape
    parts = ['<table class="diversity-result" style="border-collapse:collapse;font-size:0.9em">']
    if caption:
        parts.append(f'<caption style="text-align:left;font-weight:bold">{esc(str(caption))}</caption>')
    if frame_or_rows is None or len(frame_or_rows) == 0:
        parts.append("<tr><td><em>no rows</em></td></tr></table>")
        return "".join(parts)
    from pandas.api.types import is_numeric_dtype

    frame = frame_or_rows
    cols = list(frame.columns)
    text_cols = [not is_numeric_dtype(frame[c]) for c in cols]
    parts.append("<thead><tr>" + "".join(f'<th style="text-align:left;padding:0 0.6em">{esc(str(c))}</th>'
                                         for c in cols) + "</tr></thead><tbody>")
    for row in frame.head(max_rows).itertuples(index=False, name=None):
        # a missing cell (no q for IntDiv, no point value for bounds alone) is left empty; text reads from
        # the left and numbers from the right, whatever the notebook's stylesheet does with a bare <td>
        cells = ("" if _missing(v) else _cell(v) for v in row)
        parts.append("<tr>" + "".join(
            f'<td style="padding:0 0.6em;text-align:{"left" if text else "right"}">{esc(c)}</td>'
            for c, text in zip(cells, text_cols)) + "</tr>")
    if len(frame) > max_rows:
        parts.append(f'<tr><td colspan="{len(cols)}"><em>... {len(frame) - max_rows} more rows '
                     f"(.to_frame() has them all)</em></td></tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def require_plotly(what: str = "plot()"):
    """``plotly.graph_objects``, or :class:`~diversity_core.exceptions.MissingDependencyError` naming the extra."""
    from ._optional import require

    return require("plotly.graph_objects", purpose=what)


class NotebookDisplay:
    """Mixin: ``_repr_html_`` from ``to_frame()``, with the repr's first line as the caption.

    A class using it defines ``to_frame()`` (a tidy frame, see the module docstring) and
    ``__repr__`` (by :func:`short_repr`); ``_display_caption()`` may be overridden.
    """

    __slots__ = ()

    def _display_caption(self) -> str:
        return repr(self).splitlines()[0]

    def _repr_html_(self) -> str:
        return html_table(self.to_frame(), caption=self._display_caption())  # type: ignore[attr-defined]
