"""Figures of the items and of plain summaries: the 2-D projection, bars with intervals, histograms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._base import PALETTE, WEBGL_THRESHOLD, _go, _layout, escape_label
from .colours import series_colours

if TYPE_CHECKING:
    import plotly.graph_objects as go


#: Both signs are "material" when the smaller side reaches this share of the larger (issue 41, item 10).
DIVERGING_SHARE = 0.1


def value_colour_scale(values) -> dict:
    """Plotly marker colour settings for one number per item, scaled to the values' own range.

    A diverging scale (``RdBu``) centred on 0 when the values take both signs materially (the
    smaller side at least :data:`DIVERGING_SHARE` of the larger); otherwise a sequential scale
    (``Viridis``) from the smallest to the largest value, so values of one sign (an eigenvector
    entries -0.033 .. -0.019, issue 41 item 10) are not all painted the same colour.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return {"colorscale": "Viridis", "cmin": 0.0, "cmax": 1.0}
    lo, hi = float(v.min()), float(v.max())
    if lo < 0 < hi and min(-lo, hi) >= DIVERGING_SHARE * max(-lo, hi):
        lim = max(-lo, hi)
        return {"colorscale": "RdBu", "cmin": -lim, "cmax": lim}
    if lo == hi:
        pad = abs(lo) * 1e-6 or 1e-12
        lo, hi = lo - pad, hi + pad
    return {"colorscale": "Viridis", "cmin": lo, "cmax": hi}


def projection_figure(
    coords: np.ndarray,
    *,
    color: Optional[Sequence] = None,
    categorical: Optional[bool] = None,
    hover: Optional[Sequence[str]] = None,
    color_title: str = "",
    axis_titles: Tuple[str, str] = ("dimension 1", "dimension 2"),
    webgl: Optional[bool] = None,
    marker_size: Optional[float] = None,
    title: Optional[str] = None,
    height: int = 560,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """A 2-D map of the items; point ``i`` carries ``customdata = i`` (its row in ``coords``).

    ``color`` is one group label per item (``categorical``, one trace per group) or one
    number per item (a continuous colour scale, e.g. an eigenvector's loadings). WebGL
    (``go.Scattergl``) is used above :data:`WEBGL_THRESHOLD` points unless ``webgl`` says;
    ``colours`` maps each group to its colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    XY = np.asarray(coords, dtype=np.float64)
    n = XY.shape[0]
    use_gl = n > WEBGL_THRESHOLD if webgl is None else bool(webgl)
    trace = go.Scattergl if use_gl else go.Scatter
    size = marker_size or (4 if n > 5000 else 6 if n > 1000 else 8)
    # a numpy string array, not a list: plotly validates a list of strings item by item (0.5 s for
    # 100,000 hover texts, measured) and copies a numpy array whole
    text = None if hover is None else np.asarray([str(h) for h in hover], dtype=str)
    fig = go.Figure()
    index = np.arange(n)
    if color is not None and categorical is None:
        categorical = not np.issubdtype(np.asarray(color).dtype, np.number)
    if color is None or categorical:
        raw_of = {}
        if color is None:
            labels = np.full(n, "all items")
        else:  # each distinct label escaped once
            names, codes = np.unique(np.asarray([str(c) for c in color]), return_inverse=True)
            raw_of = {escape_label(c): str(c) for c in names}
            labels = np.asarray([escape_label(c) for c in names])[codes.ravel()]
        order = list(dict.fromkeys(labels.tolist()))
        palette = series_colours([raw_of.get(x, x) for x in order], colours)
        for i, label in enumerate(order):
            sel = labels == label
            fig.add_trace(trace(
                x=XY[sel, 0], y=XY[sel, 1], mode="markers", name=label,
                marker={"color": palette[i], "size": size, "opacity": 0.8},
                customdata=index[sel], text=None if text is None else text[sel],
                hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>") + f"{label}<extra></extra>",
            ))
    else:
        values = np.asarray(color, dtype=np.float64)
        fig.add_trace(trace(
            x=XY[:, 0], y=XY[:, 1], mode="markers", name=color_title or "value",
            marker={"color": values, **value_colour_scale(values), "size": size,
                    "opacity": 0.85, "colorbar": {"title": color_title}},
            customdata=index, text=text,
            hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>")
            + f"{color_title or 'value'} = " + "%{marker.color:.3g}<extra></extra>",
        ))
    fig.update_xaxes(title=axis_titles[0], zeroline=False)
    fig.update_yaxes(title=axis_titles[1], zeroline=False)
    fig = _layout(fig, title=title, height=height, legend=color is None or bool(categorical))
    # a click selects its point (plotly emits "plotly_selected" for a click under clickmode
    # "event+select"); Streamlit's chart (1.67) turns clickmode to "event" whenever the drag
    # mode is "lasso" or "select", so the map opens in pan mode, with lasso and box in the toolbar
    fig.update_layout(dragmode="pan", clickmode="event+select")
    return fig


def bar_figure(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    low: Optional[Sequence[float]] = None,
    high: Optional[Sequence[float]] = None,
    y_title: str = "",
    title: Optional[str] = None,
    reference: Optional[float] = None,
    height: int = 360,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """One bar per label, optionally with an interval ``[low, high]`` and a reference line.

    ``colours`` maps each group to its colour (:func:`~.colours.group_colours`), so a group's
    bar has the colour of its curves on the other charts.
    """
    go = _go()
    raw = [str(s) for s in labels]
    labels = [escape_label(s) for s in raw]
    v = np.asarray(values, dtype=np.float64)
    error_y = None
    if low is not None and high is not None:
        lo = np.asarray(low, dtype=np.float64)
        hi = np.asarray(high, dtype=np.float64)
        error_y = {"type": "data", "symmetric": False, "array": np.nan_to_num(hi - v),
                   "arrayminus": np.nan_to_num(v - lo), "color": "#333"}
    fig = go.Figure(
        go.Bar(x=labels, y=v, marker={"color": series_colours(raw, colours)}, error_y=error_y,
               hovertemplate="%{x}<br>%{y:.4g}<extra></extra>",
               text=None if error_y else [f"{x:.3g}" for x in v], textposition="outside", cliponaxis=False)
    )
    if reference is not None:
        fig.add_hline(y=float(reference), line={"color": "#888", "dash": "dot"})
    fig.update_yaxes(title=y_title)
    fig.update_xaxes(tickangle=-20 if max((len(s) for s in raw), default=0) > 12 else 0)
    return _layout(fig, title=title, height=height, legend=False)


def histogram_figure(
    values: Sequence[float],
    *,
    x_title: str = "",
    title: Optional[str] = None,
    nbins: int = 40,
    height: int = 300,
) -> go.Figure:
    """A histogram of one quantity (e.g. the norms of embeddings)."""
    go = _go()
    fig = go.Figure(go.Histogram(x=np.asarray(values, dtype=np.float64), nbinsx=nbins,
                                 marker={"color": PALETTE[0]}))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="items")
    return _layout(fig, title=title, height=height, legend=False)
