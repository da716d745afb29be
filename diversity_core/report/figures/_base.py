"""Shared styling of the figures: palette, layout, axis helpers, the q axis, and plotly on demand.

plotly is optional (``pip install 'diversity-explorer[report]'``): :func:`_go` and
:func:`_make_subplots` import it when a figure is built, so importing the figure modules does
not import plotly.
"""

from __future__ import annotations

import functools
import html
import math
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

import numpy as np

from ..._optional import require

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: Colours of successive groups (colour-blind-safe qualitative palette, Okabe-Ito order).
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
    "#999999",
    "#332288",
    "#117733",
    "#882255",
)
#: Above this many points, scatter plots use WebGL (``go.Scattergl``).
WEBGL_THRESHOLD = 3000

# q = 0 and q = inf have no place on a log axis: draw them this far beyond the grid's ends.
_Q_MIN, _Q_MAX = 0.01, 100.0
_Q0_POS, _QINF_POS = 0.004, 250.0

Curve = Tuple[Sequence[float], Sequence[float]]


@functools.lru_cache(maxsize=1)
def _white_template():
    """Plotly's ``plotly_white`` layout alone (axes, grid, fonts, colourway, colour scales).

    Its per-trace-type defaults are left out: the traces set what matters themselves, and
    assigning the whole named template validates and copies them all, 35 ms a figure on the
    development machine, most of a q change's redraw; the layout alone takes a few.
    """
    import plotly.io as pio

    return _go().layout.Template(layout=pio.templates["plotly_white"].layout)


def _layout(fig: go.Figure, *, title: Optional[str], height: int, legend: bool = True) -> go.Figure:
    """The common layout: white template, title on the left, legend below the plot."""
    # each property assigned directly: ``update_layout`` parses a path for every key and batches
    # the update (12-23 ms a figure against 6-7 ms here, measured; the app builds up to four
    # figures per q change)
    layout = fig.layout
    # the template is plotly's own layout, validated once (:func:`_white_template`): it is set the
    # way plotly sets its default template (``BaseFigure._initialize_layout_template``), without
    # validating and copying it again for every figure (10 ms of each figure's build, measured)
    layout._validate = False
    try:
        layout.template = _white_template()
    finally:
        layout._validate = fig._validate
    layout.title = None if title is None else {"text": title, "x": 0.0, "xanchor": "left"}
    layout.height = height
    layout.margin = {"l": 60, "r": 20, "t": 50 if title else 20, "b": 110 if legend else 50}
    layout.showlegend = legend
    layout.legend = {"orientation": "h", "yanchor": "top", "y": -0.16, "yref": "paper", "x": 0.0, "xanchor": "left"}
    layout.hovermode = "closest"
    return fig


def escape_label(text) -> str:
    """``text`` (a group, file or item name) as plotly must receive it to show it literally.

    Plotly renders a subset of HTML in titles, legends, tick labels, hover boxes, bar texts and
    annotations, links (``<a href>``) included: ``&``, ``<`` and ``>`` become entities, which it
    draws as the characters themselves. Every user string given to a builder goes through here.

    Examples
    --------
    >>> escape_label('<a href="http://evil">x</a> & co')
    '&lt;a href="http://evil"&gt;x&lt;/a&gt; &amp; co'
    """
    return html.escape(str(text), quote=False)


def _colour(i: int) -> str:
    """Colour of the i-th group, cycling through :data:`PALETTE`."""
    return PALETTE[i % len(PALETTE)]


def _log_ticks(lo: float, hi: float) -> list:
    """Readable tick values 1, 2, 5, 10, 20, ... covering [lo, hi] on a log axis."""
    lo, hi = max(float(lo), 1e-300), max(float(hi), float(lo))
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mantissas in ((1, 2, 5), (1, 3), (1,)):
        ticks = [m * 10.0**e for e in range(first, last + 1) for m in mantissas]
        ticks = [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]
        if len(ticks) <= 12:
            return ticks
    step = max(1, (last - first) // 10)
    return [10.0**e for e in range(first, last + 1, step)]


def _hline(fig: go.Figure, y: float, *, log: bool = False, text: Optional[str] = None, color: str = "#888",
           dash: str = "dot", width: float = 1.0, below: bool = False) -> None:
    """A horizontal line with a label at the right end (log10(y) for the label on a log axis)."""
    # the shape fig.add_hline makes, added directly: add_hline walks the figure's subplots on
    # every call (a quarter of the q-profile's build time); these figures have one pair of axes
    fig.add_shape(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=float(y), y1=float(y),
                  line={"color": color, "dash": dash, "width": width})
    if text:
        fig.add_annotation(x=1.0, xref="paper", y=math.log10(y) if log else float(y), yref="y", text=text,
                           showarrow=False, xanchor="right", yanchor="top" if below else "bottom",
                           font={"color": color, "size": 11})


def _vline_parts(x: float, *, log: bool = False, text: Optional[str] = None, color: str = "#888",
                 dash: str = "dot", width: float = 1.5, top: bool = True) -> Tuple[dict, Optional[dict]]:
    """The shape and the label (None without ``text``) of :func:`_vline`, as plotly JSON."""
    # what fig.add_vline makes (see _hline); on a log axis the label's x is log10(x) (plotly's rule)
    shape = {"type": "line", "xref": "x", "x0": float(x), "x1": float(x), "yref": "y domain", "y0": 0, "y1": 1,
             "line": {"color": color, "dash": dash, "width": width}}
    label = None
    if text:
        label = {"x": math.log10(x) if log else float(x), "y": 1.0 if top else 0.0, "xref": "x", "yref": "paper",
                 "text": text, "showarrow": False, "xanchor": "left", "yanchor": "top" if top else "bottom",
                 "font": {"color": color, "size": 11}, "xshift": 3}
    return shape, label


def _add_line(fig: go.Figure, shape: dict, label: Optional[dict]) -> None:
    """Add a line's shape and its label (None: no label) to ``fig``."""
    fig.add_shape(**shape)
    if label is not None:
        fig.add_annotation(**label)


def _vline(fig: go.Figure, x: float, **style) -> None:
    """A vertical line with a label (the keywords of :func:`_vline_parts`)."""
    _add_line(fig, *_vline_parts(x, **style))


def q_axis_position(q) -> np.ndarray:
    """Where an order sits on the q-profile's log axis (0 and inf moved to the axis ends)."""
    q = np.asarray(q, dtype=np.float64)
    pos = np.where(np.isinf(q), _QINF_POS, q)
    pos = np.where(pos <= 0, _Q0_POS, pos)
    return np.clip(pos, _Q0_POS, _QINF_POS)


def _grid(n_panels: int, max_cols: int = 3) -> Tuple[int, int]:
    """(rows, columns) of a panel grid at most ``max_cols`` wide."""
    cols = max(1, min(max_cols, n_panels))
    return int(math.ceil(n_panels / cols)), cols


def _num(v) -> float:
    """A float, with None (a missing value) as NaN."""
    return math.nan if v is None else float(v)


def _go():
    """``plotly.graph_objects``, imported on first use (MissingDependencyError names the extra)."""
    return require("plotly.graph_objects", purpose="figures")


def _make_subplots(**kwargs) -> go.Figure:
    """``plotly.subplots.make_subplots(**kwargs)``, plotly imported on first use."""
    return require("plotly.subplots", purpose="figures").make_subplots(**kwargs)
