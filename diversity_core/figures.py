"""Plotly figure builders: pure functions of arrays and results, returning ``go.Figure``.

No Streamlit here: the app draws these figures with ``st.plotly_chart`` and the HTML report
embeds the same figures, so a chart looks the same in both places.

=========================  ===============================================================
builder                    draws
=========================  ===============================================================
q_profile_figure           VS_q against q (log axes, q = 0 and q = inf at the ends), the
                           chosen q marked, the bounds 1 and n
spectrum_figure            eigenvalues of the density matrix (log scale) and their
                           cumulative mass
kernel_heatmap             a kernel matrix, optionally with group boundaries
magnitude_figure           Mag(t) curves with t_conv marked and a shared t_cut
rnd_figure                 RND_i per epoch: each run, their mean, the averaging window
projection_figure          a 2-D map of the items, WebGL above a few thousand points
bar_figure                 one value per label, optionally with an interval
sensitivity_figure         VS against a kernel parameter, one curve per group
histogram_figure           a histogram of one quantity
=========================  ===============================================================

Every builder takes keyword-only styling arguments (``title``, ``height``) and leaves the
data untouched; plotting infinite orders uses positions at the ends of the axis with tick
labels ``0`` and ``∞``.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = [
    "PALETTE",
    "WEBGL_THRESHOLD",
    "q_axis_position",
    "format_q",
    "q_profile_figure",
    "spectrum_figure",
    "kernel_heatmap",
    "magnitude_figure",
    "rnd_figure",
    "projection_figure",
    "bar_figure",
    "sensitivity_figure",
    "histogram_figure",
]

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


def _layout(fig: go.Figure, *, title: Optional[str], height: int, legend: bool = True) -> go.Figure:
    fig.update_layout(
        template="plotly_white",
        title=None if title is None else {"text": title, "x": 0.0, "xanchor": "left"},
        height=height,
        margin={"l": 60, "r": 20, "t": 50 if title else 20, "b": 110 if legend else 50},
        showlegend=legend,
        legend={"orientation": "h", "yanchor": "top", "y": -0.16, "yref": "paper", "x": 0.0, "xanchor": "left"},
        hovermode="closest",
    )
    return fig


def _colour(i: int) -> str:
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
    fig.add_hline(y=float(y), line={"color": color, "dash": dash, "width": width})
    if text:
        fig.add_annotation(x=1.0, xref="paper", y=math.log10(y) if log else float(y), yref="y", text=text,
                           showarrow=False, xanchor="right", yanchor="top" if below else "bottom",
                           font={"color": color, "size": 11})


def _vline(fig: go.Figure, x: float, *, log: bool = False, text: Optional[str] = None, color: str = "#888",
           dash: str = "dot", width: float = 1.5, top: bool = True) -> None:
    """A vertical line with a label; on a log axis the label's x must be log10(x) (plotly's rule)."""
    fig.add_vline(x=float(x), line={"color": color, "dash": dash, "width": width})
    if text:
        fig.add_annotation(x=math.log10(x) if log else float(x), y=1.0 if top else 0.0, xref="x", yref="paper",
                           text=text, showarrow=False, xanchor="left", yanchor="top" if top else "bottom",
                           font={"color": color, "size": 11}, xshift=3)


def format_q(q: float) -> str:
    """A compact label for an order: ``0``, ``0.5``, ``1``, ``∞``."""
    q = float(q)
    if math.isinf(q):
        return "∞"
    return f"{q:g}"


def q_axis_position(q) -> np.ndarray:
    """Where an order sits on the q-profile's log axis (0 and inf moved to the axis ends)."""
    q = np.asarray(q, dtype=np.float64)
    pos = np.where(np.isinf(q), _QINF_POS, q)
    pos = np.where(pos <= 0, _Q0_POS, pos)
    return np.clip(pos, _Q0_POS, _QINF_POS)


def _as_curves(profiles) -> dict:
    """Accept one ``(qs, values)`` pair or a mapping label -> pair."""
    if isinstance(profiles, Mapping):
        return dict(profiles)
    return {"VS_q": profiles}


def q_profile_figure(
    profiles: Union[Curve, Mapping[str, Curve]],
    *,
    q: Optional[float] = None,
    n: Optional[int] = None,
    title: Optional[str] = "Vendi score against the order q",
    height: int = 420,
) -> go.Figure:
    """The q-profile: VS_q against q on log axes, non-increasing in q.

    Parameters
    ----------
    profiles : (qs, values) or mapping label -> (qs, values)
        Orders (may include 0 and inf, drawn at the axis ends) and the scores.
    q : float, optional
        The chosen order, marked with a vertical line.
    n : int, optional
        Number of items: the upper bound n is drawn beside the lower bound 1.
    """
    fig = go.Figure()
    curves = _as_curves(profiles)
    for i, (label, (qs, values)) in enumerate(curves.items()):
        qs = np.asarray(qs, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(q_axis_position(qs), kind="stable")
        qs, values = qs[order], values[order]
        finite = np.isfinite(qs) & (qs > 0)
        colour = _colour(i)
        fig.add_trace(
            go.Scatter(
                x=qs[finite],
                y=values[finite],
                mode="lines",
                name=str(label),
                line={"color": colour, "width": 2},
                hovertemplate="q = %{x:.3g}<br>VS_q = %{y:.4g}<extra>" + str(label) + "</extra>",
                legendgroup=str(label),
            )
        )
        ends = ~finite
        if ends.any():
            fig.add_trace(
                go.Scatter(
                    x=q_axis_position(qs[ends]),
                    y=values[ends],
                    mode="markers",
                    name=str(label),
                    marker={"color": colour, "size": 8, "symbol": "diamond"},
                    text=[format_q(v) for v in qs[ends]],
                    hovertemplate="q = %{text}<br>VS_q = %{y:.4g}<extra>" + str(label) + "</extra>",
                    legendgroup=str(label),
                    showlegend=False,
                )
            )
    _hline(fig, 1.0, log=True, text="1 (all identical)")
    top = 1.0
    for _qs, values in curves.values():
        finite = np.asarray(values, dtype=np.float64)
        finite = finite[np.isfinite(finite)]
        if finite.size:
            top = max(top, float(finite.max()))
    if n is not None:
        top = max(top, float(n))
        _hline(fig, float(n), log=True, text=f"n = {int(n)} (all distinct)", below=True)
    if q is not None:
        _vline(fig, float(q_axis_position(q)), log=True, text=f"q = {format_q(q)}", color="#D55E00",
               dash="dash", width=2)
    tickvals = [_Q0_POS, 0.01, 0.1, 1.0, 10.0, 100.0, _QINF_POS]
    ticktext = ["0", "0.01", "0.1", "1", "10", "100", "∞"]
    fig.update_xaxes(type="log", title="order q", tickvals=tickvals, ticktext=ticktext,
                     range=[math.log10(_Q0_POS) - 0.15, math.log10(_QINF_POS) + 0.15])
    fig.update_yaxes(type="log", title="VS_q (effective number of distinct items)", tickvals=_log_ticks(1.0, top),
                     range=[-0.05, math.log10(top) + 0.08])
    return _layout(fig, title=title, height=height, legend=len(curves) > 1)


def spectrum_figure(
    eigenvalues: Sequence[float],
    *,
    max_points: Optional[int] = None,
    title: Optional[str] = "Eigenvalues of the density matrix",
    height: int = 380,
) -> go.Figure:
    """Eigenvalues (descending, log scale) beside their cumulative mass.

    Only the eigenvalues in the support (> 0) are drawn; ``max_points`` limits both panels to
    the leading eigenvalues.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = np.sort(lam[lam > 0])[::-1]
    if max_points is not None:
        lam = lam[: int(max_points)]
    idx = np.arange(1, lam.size + 1)
    cum = np.cumsum(lam)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("eigenvalue λ_i", "cumulative mass of the i largest eigenvalues"),
                        horizontal_spacing=0.1)
    fig.add_trace(
        go.Scatter(x=idx, y=lam, mode="lines+markers" if lam.size <= 60 else "lines", name="λ_i",
                   line={"color": PALETTE[0]}, marker={"size": 5},
                   hovertemplate="i = %{x}<br>λ_i = %{y:.3e}<extra></extra>"),
        row=1, col=1,
    )
    fig.add_trace(
        go.Scatter(x=idx, y=cum, mode="lines", name="cumulative", line={"color": PALETTE[2]},
                   hovertemplate="first %{x} eigenvalues<br>mass = %{y:.3f}<extra></extra>"),
        row=1, col=2,
    )
    for level in (0.5, 0.9):
        if cum.size and cum[-1] >= level:
            k = int(np.searchsorted(cum, level) + 1)
            fig.add_trace(
                go.Scatter(x=[k], y=[cum[k - 1]], mode="markers+text", text=[f"{level:.0%} in {k}"],
                           textposition="bottom right" if level < 0.75 else "top left", marker={"color": PALETTE[5], "size": 8},
                           showlegend=False, hoverinfo="skip"),
                row=1, col=2,
            )
    fig.update_yaxes(type="log", row=1, col=1, exponentformat="power",
                     tickvals=_log_ticks(float(lam.min()), float(lam.max())) if lam.size else None)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    fig.update_xaxes(title="index i (log scale)", type="log", row=1, col=1)
    fig.update_xaxes(title="i (log scale)", type="log", row=1, col=2)
    return _layout(fig, title=title, height=height, legend=False)


def kernel_heatmap(
    K: np.ndarray,
    *,
    labels: Optional[Sequence[str]] = None,
    hover: Optional[Sequence[str]] = None,
    title: Optional[str] = "Kernel matrix",
    height: int = 560,
) -> go.Figure:
    """A kernel matrix as a heatmap (rows and columns in the order given).

    ``labels`` (one group per row, already sorted so groups are contiguous) draws a line at
    each group boundary and names the groups on the axis; ``hover`` names the items.
    """
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    text = None
    if hover is not None:
        h = [str(s) for s in hover]
        text = [[f"{h[i]} × {h[j]}" for j in range(n)] for i in range(n)] if n <= 400 else None
    fig = go.Figure(
        go.Heatmap(
            z=K,
            x=np.arange(n),
            y=np.arange(n),
            colorscale="Viridis",
            zmin=float(min(0.0, np.min(K))) if K.size else 0.0,
            zmax=1.0,
            colorbar={"title": "k(x_i, x_j)"},
            text=text,
            hovertemplate=("%{text}<br>" if text is not None else "i = %{y}, j = %{x}<br>") + "k = %{z:.3f}<extra></extra>",
        )
    )
    if labels is not None:
        lab = [str(s) for s in labels]
        starts = [0] + [i for i in range(1, n) if lab[i] != lab[i - 1]]
        ends = starts[1:] + [n]
        for s in starts[1:]:
            for line in ({"type": "line", "x0": s - 0.5, "x1": s - 0.5, "y0": -0.5, "y1": n - 0.5},
                         {"type": "line", "y0": s - 0.5, "y1": s - 0.5, "x0": -0.5, "x1": n - 0.5}):
                fig.add_shape(**line, line={"color": "white", "width": 1.5})
        mids = [(a + b - 1) / 2 for a, b in zip(starts, ends)]
        names = [lab[a] for a in starts]
        short = [s if len(s) <= 32 else s[:31] + "…" for s in names]
        fig.update_xaxes(tickvals=mids, ticktext=short, tickangle=-30)
        fig.update_yaxes(tickvals=mids, ticktext=short)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain")
    return _layout(fig, title=title, height=height, legend=False)


def magnitude_figure(
    curves: Mapping[str, Curve],
    *,
    t_conv: Optional[Mapping[str, float]] = None,
    t_cut: Optional[float] = None,
    sizes: Optional[Mapping[str, int]] = None,
    title: Optional[str] = "Magnitude function Mag(t)",
    height: int = 440,
) -> go.Figure:
    """Mag(t) against the scale t, one curve per set.

    ``t_conv`` marks each curve's convergence scale (Mag = 0.95 n), ``t_cut`` the shared
    integration limit of MagArea, ``sizes`` draws each set's limit n as a faint line.
    """
    fig = go.Figure()
    t_end = max((float(np.nanmax(np.asarray(ts, dtype=np.float64))) for ts, _ in curves.values()), default=1.0)
    if t_cut is not None and np.isfinite(t_cut):
        t_end = max(t_end, float(t_cut))
    x_max = 1.1 * t_end
    for i, (label, (ts, values)) in enumerate(curves.items()):
        colour = _colour(i)
        fig.add_trace(
            go.Scatter(x=np.asarray(ts, dtype=np.float64), y=np.asarray(values, dtype=np.float64),
                       mode="lines", name=str(label), line={"color": colour, "width": 2}, legendgroup=str(label),
                       hovertemplate="t = %{x:.4g}<br>Mag = %{y:.4g}<extra>" + str(label) + "</extra>")
        )
        if t_conv is not None and t_conv.get(label) is not None and np.isfinite(t_conv[label]):
            # t_conv on the t axis; beyond the drawn range, an arrow at the right edge says where
            tc = float(t_conv[label])
            inside = tc <= x_max
            fig.add_trace(
                go.Scatter(x=[tc if inside else x_max], y=[0.0], mode="markers", cliponaxis=False,
                           marker={"color": colour, "size": 12, "symbol": "triangle-up" if inside else "triangle-right",
                                   "line": {"color": "white", "width": 1}},
                           name=f"t_conv ({label})", legendgroup=str(label), showlegend=False,
                           hovertemplate=f"t_conv = {tc:.4g}" + ("" if inside else " (beyond the plot)")
                           + f"<extra>{label}</extra>")
            )
        if sizes is not None and label in sizes:
            fig.add_hline(y=float(sizes[label]), line={"color": colour, "dash": "dot", "width": 1}, opacity=0.5)
    if t_cut is not None and np.isfinite(t_cut):
        _vline(fig, float(t_cut), text=f"t_cut = {t_cut:.3g}", color="#444", dash="dash", top=True)
    fig.update_xaxes(title="scale t (▲ t_conv of each curve)", range=[0.0, x_max])
    fig.update_yaxes(title="Mag(t)", rangemode="tozero")
    return _layout(fig, title=title, height=height, legend=True)


def rnd_figure(
    curves: Union[np.ndarray, Mapping[str, np.ndarray]],
    *,
    average_last: Optional[int] = None,
    total_epochs: Optional[int] = None,
    title: Optional[str] = "Generalisation gap RND_i per epoch",
    height: int = 400,
) -> go.Figure:
    """RND_i against the epoch: every run faintly, the mean over runs boldly.

    ``curves`` is (runs, epochs) or a mapping label -> (runs, epochs); epochs not yet run may
    be NaN (a curve drawn while training). ``average_last`` shades the averaging window of the
    score; ``total_epochs`` fixes the x range so a growing curve does not rescale.
    """
    sets = dict(curves) if isinstance(curves, Mapping) else {"RND_i": curves}
    fig = go.Figure()
    epochs_seen = 1
    for i, (label, C) in enumerate(sets.items()):
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        epochs = np.arange(1, C.shape[1] + 1)
        epochs_seen = max(epochs_seen, C.shape[1])
        colour = _colour(i)
        if C.shape[0] > 1:
            for r in range(C.shape[0]):
                fig.add_trace(go.Scatter(x=epochs, y=C[r], mode="lines", line={"color": colour, "width": 0.7},
                                         opacity=0.25, showlegend=False, hoverinfo="skip", legendgroup=str(label)))
        with np.errstate(all="ignore"):
            mean = np.array([np.nan if np.all(np.isnan(col)) else np.nanmean(col) for col in C.T])
        fig.add_trace(go.Scatter(x=epochs, y=mean, mode="lines+markers" if C.shape[1] <= 30 else "lines",
                                 name=str(label), line={"color": colour, "width": 2.5}, marker={"size": 4},
                                 legendgroup=str(label),
                                 hovertemplate="epoch %{x}<br>mean RND_i = %{y:.4f}<extra>" + str(label) + "</extra>"))
    last = int(total_epochs or epochs_seen)
    if average_last:
        fig.add_vrect(x0=last - int(average_last) + 0.5, x1=last + 0.5, fillcolor="#999", opacity=0.12,
                      line_width=0, annotation_text="averaged", annotation_position="top left")
    fig.add_hline(y=0.0, line={"color": "#888", "width": 1})
    fig.update_xaxes(title="epoch i", range=[0.5, last + 0.5])
    fig.update_yaxes(title="RND_i (normalised gap)")
    return _layout(fig, title=title, height=height, legend=len(sets) > 1)


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
) -> go.Figure:
    """A 2-D map of the items; point ``i`` carries ``customdata = i`` (its row in ``coords``).

    ``color`` is one group label per item (``categorical``, one trace per group) or one
    number per item (a continuous colour scale, e.g. an eigenvector's loadings). WebGL
    (``go.Scattergl``) is used above :data:`WEBGL_THRESHOLD` points unless ``webgl`` says.
    """
    XY = np.asarray(coords, dtype=np.float64)
    n = XY.shape[0]
    use_gl = n > WEBGL_THRESHOLD if webgl is None else bool(webgl)
    trace = go.Scattergl if use_gl else go.Scatter
    size = marker_size or (4 if n > 5000 else 6 if n > 1000 else 8)
    text = None if hover is None else [str(h) for h in hover]
    fig = go.Figure()
    index = np.arange(n)
    if color is not None and categorical is None:
        categorical = not np.issubdtype(np.asarray(color).dtype, np.number)
    if color is None or categorical:
        labels = np.asarray(["all items"] * n if color is None else [str(c) for c in color])
        for i, label in enumerate(dict.fromkeys(labels.tolist())):
            sel = labels == label
            fig.add_trace(trace(
                x=XY[sel, 0], y=XY[sel, 1], mode="markers", name=label,
                marker={"color": _colour(i), "size": size, "opacity": 0.8},
                customdata=index[sel], text=None if text is None else [text[j] for j in index[sel]],
                hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>") + f"{label}<extra></extra>",
            ))
    else:
        values = np.asarray(color, dtype=np.float64)
        lim = float(np.nanmax(np.abs(values))) if values.size else 1.0
        fig.add_trace(trace(
            x=XY[:, 0], y=XY[:, 1], mode="markers", name=color_title or "value",
            marker={"color": values, "colorscale": "RdBu", "cmin": -lim, "cmax": lim, "size": size,
                    "opacity": 0.85, "colorbar": {"title": color_title}},
            customdata=index, text=text,
            hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>")
            + f"{color_title or 'value'} = " + "%{marker.color:.3g}<extra></extra>",
        ))
    fig.update_xaxes(title=axis_titles[0], zeroline=False)
    fig.update_yaxes(title=axis_titles[1], zeroline=False)
    fig = _layout(fig, title=title, height=height, legend=color is None or bool(categorical))
    fig.update_layout(dragmode="lasso")
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
) -> go.Figure:
    """One bar per label, optionally with an interval ``[low, high]`` and a reference line."""
    labels = [str(s) for s in labels]
    v = np.asarray(values, dtype=np.float64)
    error_y = None
    if low is not None and high is not None:
        lo = np.asarray(low, dtype=np.float64)
        hi = np.asarray(high, dtype=np.float64)
        error_y = {"type": "data", "symmetric": False, "array": np.nan_to_num(hi - v),
                   "arrayminus": np.nan_to_num(v - lo), "color": "#333"}
    fig = go.Figure(
        go.Bar(x=labels, y=v, marker={"color": [_colour(i) for i in range(len(labels))]}, error_y=error_y,
               hovertemplate="%{x}<br>%{y:.4g}<extra></extra>",
               text=None if error_y else [f"{x:.3g}" for x in v], textposition="outside", cliponaxis=False)
    )
    if reference is not None:
        fig.add_hline(y=float(reference), line={"color": "#888", "dash": "dot"})
    fig.update_yaxes(title=y_title)
    fig.update_xaxes(tickangle=-20 if max((len(s) for s in labels), default=0) > 12 else 0)
    return _layout(fig, title=title, height=height, legend=False)


def sensitivity_figure(
    values: Sequence[float],
    scores: np.ndarray,
    labels: Sequence[str],
    *,
    parameter: str = "sigma",
    reference: Optional[float] = None,
    current: Optional[float] = None,
    q: Optional[float] = None,
    log_x: Optional[bool] = None,
    title: Optional[str] = None,
    height: int = 400,
) -> go.Figure:
    """VS_q against a kernel parameter, one curve per set (rows of ``scores``).

    ``reference`` marks the parameter's default (median-distance bandwidth, radius 2),
    ``current`` the value the rest of the app uses.
    """
    x = np.asarray(values, dtype=np.float64)
    S = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    fig = go.Figure()
    for i, label in enumerate(labels):
        fig.add_trace(go.Scatter(x=x, y=S[i], mode="lines+markers", name=str(label),
                                 line={"color": _colour(i), "width": 2},
                                 hovertemplate=f"{parameter} = " + "%{x:.4g}<br>VS = %{y:.4g}<extra>" + str(label) + "</extra>"))
    if log_x is None:
        log_x = parameter == "sigma"
    if reference is not None:
        _vline(fig, float(reference), log=log_x, text="default")
    if current is not None and (reference is None or not np.isclose(current, reference)):
        _vline(fig, float(current), log=log_x, text="in use", color="#D55E00", dash="dash", top=False)
    if log_x and x.size and np.all(x > 0):
        fig.update_xaxes(title=parameter, type="log", tickvals=_log_ticks(float(x.min()), float(x.max())))
    else:
        fig.update_xaxes(title=parameter, type="linear")
    qlabel = "" if q is None else f" (q = {format_q(q)})"
    finite = S[np.isfinite(S)]
    hi = float(finite.max()) if finite.size else 10.0
    fig.update_yaxes(title=f"Vendi score{qlabel}", type="log", tickvals=_log_ticks(1.0, hi))
    return _layout(fig, title=title, height=height, legend=len(labels) > 1)


def histogram_figure(
    values: Sequence[float],
    *,
    x_title: str = "",
    title: Optional[str] = None,
    nbins: int = 40,
    height: int = 300,
) -> go.Figure:
    """A histogram of one quantity (e.g. the norms of embeddings)."""
    fig = go.Figure(go.Histogram(x=np.asarray(values, dtype=np.float64), nbinsx=nbins,
                                 marker={"color": PALETTE[0]}))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="items")
    return _layout(fig, title=title, height=height, legend=False)


# ---------------------------------------------------------------------------------------------
# Comparisons of groups (the Compare page and the HTML report, diversity_core.report)
# ---------------------------------------------------------------------------------------------
Interval = Tuple[str, float, Optional[float], Optional[float]]


def _grid(n_panels: int, max_cols: int = 3) -> Tuple[int, int]:
    cols = max(1, min(max_cols, n_panels))
    return int(math.ceil(n_panels / cols)), cols


def _num(v) -> float:
    return math.nan if v is None else float(v)


def score_bars_figure(
    scores: Mapping[str, Sequence[Interval]],
    *,
    groups: Optional[Sequence[str]] = None,
    max_cols: int = 3,
    title: Optional[str] = "Every score, with its interval",
    height: Optional[int] = None,
) -> go.Figure:
    """One panel per score: a bar per group (from 0) with its interval as an error bar.

    ``scores`` maps a score name to ``(group, estimate, low, high)`` rows. A group keeps its
    colour in every panel and is named in the legend (``groups`` fixes the order), so long group
    names never crowd the axes. Bars start at 0, so close scores look close:
    :func:`difference_figure` shows whether they differ.
    """
    names = list(scores)
    order = list(groups) if groups is not None else list(dict.fromkeys(r[0] for rows in scores.values() for r in rows))
    rows_n, cols = _grid(len(names), max_cols)
    fig = make_subplots(rows=rows_n, cols=cols, subplot_titles=names, vertical_spacing=0.12 / max(rows_n, 1) + 0.05,
                        horizontal_spacing=0.08)
    shown = set()
    for k, score in enumerate(names):
        r, c = divmod(k, cols)
        for g, est, low, high in scores[score]:
            i = order.index(g) if g in order else len(order)
            v, lo, hi = _num(est), _num(low), _num(high)
            fig.add_trace(
                go.Bar(x=[str(g)], y=[v], name=str(g), legendgroup=str(g), showlegend=g not in shown,
                       marker={"color": _colour(i)},
                       error_y={"type": "data", "symmetric": False, "array": [0.0 if math.isnan(hi) else hi - v],
                                "arrayminus": [0.0 if math.isnan(lo) else v - lo], "color": "#333",
                                "thickness": 1.5},
                       customdata=[[lo, hi]],
                       hovertemplate=str(g) + "<br>" + score + " = %{y:.4g}<br>interval [%{customdata[0]:.4g}, "
                       "%{customdata[1]:.4g}]<extra></extra>"),
                row=r + 1, col=c + 1,
            )
            shown.add(g)
        fig.update_xaxes(showticklabels=False, row=r + 1, col=c + 1)
    if height is None:
        height = 260 * rows_n + 110
    fig = _layout(fig, title=title, height=height, legend=True)
    fig.update_layout(barmode="overlay")
    return fig


def q_profile_bands_figure(
    profiles: Mapping[str, Tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]]],
    *,
    n: Optional[int] = None,
    title: Optional[str] = "q-profiles with intervals",
    height: int = 440,
) -> go.Figure:
    """Overlaid q-profiles ``label -> (qs, values, low, high)``, each with a shaded interval band.

    Drawn with :func:`q_profile_figure`; the band covers the finite orders q > 0.
    """
    fig = q_profile_figure({k: (v[0], v[1]) for k, v in profiles.items()}, title=title, height=height)
    # the bounds are drawn here: on a log axis a shape takes the value itself but an annotation
    # takes log10 of it (an annotation at y = n would stretch the axis to 10^n)
    fig.layout.shapes = ()
    fig.layout.annotations = ()
    for value, text, anchor in ((1.0, "1 (all identical)", "top"),
                                (None if n is None else float(n), f"n = {n} (all distinct)", "bottom")):
        if value is not None:
            fig.add_hline(y=value, line={"color": "#888", "dash": "dot", "width": 1})
            fig.add_annotation(x=1.0, xref="paper", y=math.log10(value), yref="y", text=text, showarrow=False,
                               xanchor="right", yanchor=anchor, font={"color": "#666"})
    top = max([1.0] + [float(np.nanmax(np.asarray(v[3], dtype=np.float64))) for v in profiles.values()]
              + [float(n) if n is not None else 1.0])
    fig.update_yaxes(range=[-0.05, math.log10(top) + 0.1], autorange=False, tickvals=None)
    for i, (label, (qs, _values, low, high)) in enumerate(profiles.items()):
        qs = np.asarray(qs, dtype=np.float64)
        lo = np.asarray(low, dtype=np.float64)
        hi = np.asarray(high, dtype=np.float64)
        ok = np.isfinite(qs) & (qs > 0) & np.isfinite(lo) & np.isfinite(hi)
        order = np.argsort(qs[ok])
        x, lo_s, hi_s = qs[ok][order], lo[ok][order], hi[ok][order]
        fig.add_trace(go.Scatter(
            x=np.concatenate([x, x[::-1]]), y=np.concatenate([hi_s, lo_s[::-1]]), fill="toself", mode="lines",
            fillcolor=_colour(i), opacity=0.18, line={"width": 0}, hoverinfo="skip", showlegend=False,
            legendgroup=str(label), name=f"{label} interval",
        ))
    return fig


def spectra_overlay_figure(
    spectra: Mapping[str, Sequence[float]],
    *,
    max_points: Optional[int] = 100,
    title: Optional[str] = "Leading eigenvalues of each group's density matrix",
    height: int = 400,
) -> go.Figure:
    """Eigenvalues (descending, log scale) of several groups on one axis."""
    fig = go.Figure()
    for i, (label, lam) in enumerate(spectra.items()):
        lam = np.asarray(lam, dtype=np.float64)
        lam = np.sort(lam[lam > 0])[::-1]
        if max_points is not None:
            lam = lam[: int(max_points)]
        fig.add_trace(go.Scatter(
            x=np.arange(1, lam.size + 1), y=lam, mode="lines+markers" if lam.size <= 60 else "lines",
            name=str(label), line={"color": _colour(i), "width": 2}, marker={"size": 4},
            hovertemplate="i = %{x}<br>λ_i = %{y:.3e}<extra>" + str(label) + "</extra>",
        ))
    fig.update_yaxes(type="log", title="eigenvalue λ_i", exponentformat="power")
    fig.update_xaxes(title="index i")
    return _layout(fig, title=title, height=height, legend=True)


def sample_size_figure(
    curves: Mapping[str, Mapping[str, Tuple[Sequence[float], Sequence[float], Sequence[float]]]],
    *,
    n: Optional[int] = None,
    max_cols: int = 3,
    title: Optional[str] = "Each score against the number of items",
    height: Optional[int] = None,
) -> go.Figure:
    """One panel per score: ``score -> {label: (sizes, mean, sd)}``, mean ± sd bands, n marked.

    A curve that has flattened by the group's size says the score has settled; ``n`` (the
    comparison's equal size) is drawn as a dashed line.
    """
    names = list(curves)
    order = list(dict.fromkeys(label for per in curves.values() for label in per))
    rows_n, cols = _grid(len(names), max_cols)
    fig = make_subplots(rows=rows_n, cols=cols, subplot_titles=names, vertical_spacing=0.16 / max(rows_n, 1) + 0.06,
                        horizontal_spacing=0.08)
    for k, score in enumerate(names):
        r, c = divmod(k, cols)
        for label, (sizes, mean, sd) in curves[score].items():
            i = order.index(label)
            x = np.asarray(sizes, dtype=np.float64)
            m = np.asarray([_num(v) for v in mean])
            s = np.nan_to_num(np.asarray([_num(v) for v in sd]))
            fig.add_trace(go.Scatter(
                x=np.concatenate([x, x[::-1]]), y=np.concatenate([m + s, (m - s)[::-1]]), fill="toself",
                mode="lines", fillcolor=_colour(i), opacity=0.15, line={"width": 0}, hoverinfo="skip",
                showlegend=False,
                legendgroup=str(label)), row=r + 1, col=c + 1)
            fig.add_trace(go.Scatter(
                x=x, y=m, mode="lines+markers", name=str(label), line={"color": _colour(i), "width": 2},
                marker={"size": 5}, legendgroup=str(label), showlegend=k == 0,
                hovertemplate="m = %{x}<br>" + score + " = %{y:.4g}<extra>" + str(label) + "</extra>"),
                row=r + 1, col=c + 1)
        if n is not None:
            fig.add_vline(x=float(n), line={"color": "#444", "dash": "dash", "width": 1}, row=r + 1, col=c + 1)
        fig.update_xaxes(type="log", dtick=math.log10(2), tickformat="d",
                         title="items m" if r == rows_n - 1 else None, row=r + 1, col=c + 1)
    if height is None:
        height = 300 * rows_n + 130
    fig = _layout(fig, title=title, height=height, legend=True)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.6 / rows_n, "x": 0.0},
                      margin={"b": 110})
    return fig


def difference_figure(
    differences: Mapping[str, Sequence[Tuple[str, Optional[float], Optional[float], Optional[float], bool]]],
    *,
    max_cols: int = 3,
    title: Optional[str] = "Pairwise differences with intervals (resolved when the interval excludes 0)",
    height: Optional[int] = None,
) -> go.Figure:
    """Forest plot per score: ``score -> [(pair label, difference, low, high, resolved)]``.

    Resolved differences are drawn solid, unresolved ones hollow and grey; 0 is marked. Panels
    with the same pairs share a row and its labels.
    """
    names = list(differences)
    labels_of = {s: [str(p) for p, *_ in differences[s]] for s in names}
    layout: list = []  # rows of score names
    for s in names:
        if layout and len(layout[-1]) < max_cols and labels_of[layout[-1][0]] == labels_of[s]:
            layout[-1].append(s)
        else:
            layout.append([s])
    rows_n = max(len(layout), 1)
    cols = max((len(r) for r in layout), default=1)
    titles = [row[c] if c < len(row) else "" for row in layout for c in range(cols)]
    fig = make_subplots(rows=rows_n, cols=cols, subplot_titles=titles, shared_yaxes=True,
                        vertical_spacing=0.12 / rows_n + 0.05, horizontal_spacing=0.04)
    row_heights = []
    for r, row in enumerate(layout):
        row_heights.append(40 * len(labels_of[row[0]]) + 90)
        for c, score in enumerate(row):
            rows = list(differences[score])
            d = np.array([_num(x) for _, x, _, _, _ in rows])
            lo = np.array([_num(x) for _, _, x, _, _ in rows])
            hi = np.array([_num(x) for _, _, _, x, _ in rows])
            resolved = [bool(x) for *_, x in rows]
            fig.add_trace(go.Scatter(
                x=d, y=labels_of[score], mode="markers", showlegend=False, name=score,
                marker={"color": [PALETTE[5] if ok else "#888" for ok in resolved], "size": 10,
                        "symbol": ["circle" if ok else "circle-open" for ok in resolved]},
                error_x={"type": "data", "symmetric": False, "array": np.nan_to_num(hi - d),
                         "arrayminus": np.nan_to_num(d - lo), "color": "#555", "thickness": 1.5},
                customdata=np.stack([lo, hi], axis=-1) if rows else None,
                hovertemplate="%{y}<br>difference %{x:.4g}<br>interval [%{customdata[0]:.4g}, "
                "%{customdata[1]:.4g}]<extra>" + score + "</extra>"), row=r + 1, col=c + 1)
            fig.add_vline(x=0.0, line={"color": "#444", "width": 1}, row=r + 1, col=c + 1)
        fig.update_yaxes(autorange="reversed", row=r + 1, col=1)
    if height is None:
        height = int(sum(row_heights)) + 80
    return _layout(fig, title=title, height=height, legend=False)


__all__ += [
    "score_bars_figure",
    "q_profile_bands_figure",
    "spectra_overlay_figure",
    "sample_size_figure",
    "difference_figure",
]
