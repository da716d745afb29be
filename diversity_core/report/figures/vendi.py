"""Figures of one dataset's Vendi scores: the q-profile, the spectrum, the kernel matrix, kernel sensitivity."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

import numpy as np

from ..._orders import format_q
from ._base import (
    _Q0_POS,
    _QINF_POS,
    PALETTE,
    Curve,
    _add_line,
    _go,
    _hline,
    _layout,
    _log_ticks,
    _make_subplots,
    _vline,
    _vline_parts,
    escape_label,
    q_axis_position,
)
from .colours import series_colours

if TYPE_CHECKING:
    import plotly.graph_objects as go


def _as_curves(profiles) -> dict:
    """Accept one ``(qs, values)`` pair or a mapping label -> pair."""
    if isinstance(profiles, Mapping):
        return dict(profiles)
    return {"VS_q": profiles}


def q_profile_marker(q: float) -> tuple:
    """The mark of the chosen order on :func:`q_profile_figure`: (shape, annotation) as plotly JSON.

    A dashed vertical line at q (q = 0 and q = inf at the axis ends) labelled ``q = ...``; the
    figure built with ``q=`` ends its ``layout.shapes`` and ``layout.annotations`` with these two,
    so a figure built without q plus this mark is the figure built with it.
    """
    return _vline_parts(float(q_axis_position(q)), log=True, text=f"q = {format_q(q)}", color="#D55E00",
                        dash="dash", width=2)


def q_profile_figure(
    profiles: Union[Curve, Mapping[str, Curve]],
    *,
    q: Optional[float] = None,
    n: Optional[int] = None,
    title: Optional[str] = "Vendi score against the order q",
    height: int = 420,
    colours: Optional[Mapping[str, str]] = None,
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
    colours : mapping label -> colour, optional
        Each group's colour (:func:`~.colours.group_colours` of the dataset's groups), so a
        group has one colour on every chart; the pooled series is neutral grey.
    """
    go = _go()
    fig = go.Figure()
    curves = _as_curves(profiles)
    palette = series_colours(curves, colours)
    for i, (label, (qs, values)) in enumerate(curves.items()):
        qs = np.asarray(qs, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(q_axis_position(qs), kind="stable")
        qs, values = qs[order], values[order]
        finite = np.isfinite(qs) & (qs > 0)
        colour = palette[i]
        fig.add_trace(
            go.Scatter(
                x=qs[finite],
                y=values[finite],
                mode="lines",
                name=escape_label(label),
                line={"color": colour, "width": 2},
                hovertemplate="q = %{x:.3g}<br>VS_q = %{y:.4g}<extra>" + escape_label(label) + "</extra>",
                legendgroup=escape_label(label),
            )
        )
        ends = ~finite
        if ends.any():
            fig.add_trace(
                go.Scatter(
                    x=q_axis_position(qs[ends]),
                    y=values[ends],
                    mode="markers",
                    name=escape_label(label),
                    marker={"color": colour, "size": 8, "symbol": "diamond"},
                    text=[format_q(v) for v in qs[ends]],
                    hovertemplate="q = %{text}<br>VS_q = %{y:.4g}<extra>" + escape_label(label) + "</extra>",
                    legendgroup=escape_label(label),
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
        _add_line(fig, *q_profile_marker(q))
    tickvals = [_Q0_POS, 0.01, 0.1, 1.0, 10.0, 100.0, _QINF_POS]
    ticktext = ["0", "0.01", "0.1", "1", "10", "100", "∞"]
    fig.update_xaxes(type="log", title="order q", tickvals=tickvals, ticktext=ticktext,
                     range=[math.log10(_Q0_POS) - 0.15, math.log10(_QINF_POS) + 0.15])
    fig.update_yaxes(type="log", title="VS_q (effective number of distinct items)", tickvals=_log_ticks(1.0, top),
                     range=[-0.05, math.log10(top) + 0.08])
    return _layout(fig, title=title, height=height, legend=len(curves) > 1)


def vendi_bounds_figure(
    reference: Optional[tuple] = None,
    bounds=None,
    estimate=None,
    *,
    q: Optional[float] = None,
    n: Optional[int] = None,
    estimate_label: str = "estimate",
    estimate_qs: Optional[Sequence[float]] = None,
    title: Optional[str] = "Vendi score against the order q (beyond the dense limit)",
    height: int = 420,
) -> go.Figure:
    """The q-profile beyond the dense limit: a reference curve, the guaranteed band, the estimates.

    Parameters
    ----------
    reference : (label, qs, values), optional
        A first-look curve (e.g. a subsample's exact profile), drawn dotted and grey.
    bounds : VendiBounds, optional
        The band between ``low`` and ``high`` at its orders (Lanczos top-k or a Nystrom sketch,
        named in the legend).
    estimate : VendiEstimate, optional
        Point estimates with their replicate intervals as error bars, at the orders of
        ``estimate_qs`` (default: all of the estimate's orders).
    q, n : optional
        The chosen order, and the number of items (as :func:`q_profile_figure`).
    estimate_label : str
        The estimates' legend entry (e.g. the sketch and its settings).
    """
    go = _go()
    label, qs, values = reference if reference is not None else ("", np.empty(0), np.empty(0))
    fig = q_profile_figure({label: (qs, values)} if reference is not None else {}, q=q, n=n, title=title,
                           height=height)
    for trace in fig.data:
        trace.line.dash = "dot"
        trace.line.color = "#999999"
        if trace.marker is not None:
            trace.marker.color = "#999999"
    if bounds is not None:
        x = q_axis_position(bounds.qs)
        name = (f"guaranteed bounds (Nyström, m = {bounds.settings['m']})"
                if bounds.settings.get("method") == "nystrom" else f"guaranteed bounds (top {bounds.k} eigenvalues)")
        fig.add_trace(go.Scatter(x=x, y=bounds.low, mode="lines", line={"width": 1, "color": "#0072B2"},
                                 name=name, legendgroup="band", showlegend=False,
                                 hovertemplate="lower bound %{y:.4g}<extra></extra>"))
        fig.add_trace(go.Scatter(x=x, y=bounds.high, mode="lines", line={"width": 1, "color": "#0072B2"},
                                 fill="tonexty", fillcolor="rgba(0, 114, 178, 0.25)", name=name, legendgroup="band",
                                 hovertemplate="upper bound %{y:.4g}<extra></extra>"))
    if estimate is not None:
        keep = np.ones(estimate.qs.size, bool) if estimate_qs is None else np.isin(estimate.qs, np.asarray(estimate_qs))
        fig.add_trace(go.Scatter(
            x=q_axis_position(estimate.qs[keep]), y=estimate.value[keep], mode="markers",
            name=escape_label(estimate_label), marker={"color": "#D55E00", "size": 7},
            error_y={"type": "data", "symmetric": False, "array": (estimate.high - estimate.value)[keep],
                     "arrayminus": (estimate.value - estimate.low)[keep], "color": "#D55E00"},
            hovertemplate="estimate %{y:.4g}<extra></extra>"))
    fig.update_layout(showlegend=True)
    return fig


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
    go = _go()
    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = np.sort(lam[lam > 0])[::-1]
    if max_points is not None:
        lam = lam[: int(max_points)]
    idx = np.arange(1, lam.size + 1)
    cum = np.cumsum(lam)
    fig = _make_subplots(rows=1, cols=2, subplot_titles=("eigenvalue λ_i", "cumulative mass of the i largest eigenvalues"),
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
    go = _go()
    K = np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    text = None
    if hover is not None:
        h = [escape_label(s) for s in hover]
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
        short = [escape_label(s if len(s) <= 32 else s[:31] + "…") for s in names]  # cut, then escape
        fig.update_xaxes(tickvals=mids, ticktext=short, tickangle=-30)
        fig.update_yaxes(tickvals=mids, ticktext=short)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain")
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
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """VS_q against a kernel parameter, one curve per set (rows of ``scores``).

    ``reference`` marks the parameter's default (median-distance bandwidth, radius 2),
    ``current`` the value the rest of the app uses; ``colours`` maps each group to its colour
    (:func:`~.colours.group_colours`).
    """
    go = _go()
    x = np.asarray(values, dtype=np.float64)
    S = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    fig = go.Figure()
    palette = series_colours(labels, colours)
    for i, label in enumerate(labels):
        fig.add_trace(go.Scatter(x=x, y=S[i], mode="lines+markers", name=escape_label(label),
                                 line={"color": palette[i], "width": 2},
                                 hovertemplate=f"{parameter} = " + "%{x:.4g}<br>VS = %{y:.4g}<extra>" + escape_label(label) + "</extra>"))
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
