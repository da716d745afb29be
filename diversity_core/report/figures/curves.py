"""Curves of one dataset: the magnitude function Mag(t) and the RND training curves RND_i."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Tuple, Union

import numpy as np

from ._base import Curve, _go, _layout, _vline, escape_label
from .colours import series_colours

if TYPE_CHECKING:
    import plotly.graph_objects as go


def magnitude_figure(
    curves: Mapping[str, Curve],
    *,
    t_conv: Optional[Mapping[str, float]] = None,
    t_cut: Optional[float] = None,
    sizes: Optional[Mapping[str, int]] = None,
    title: Optional[str] = "Magnitude function Mag(t)",
    height: int = 440,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """Mag(t) against the scale t, one curve per set.

    ``t_conv`` marks each curve's convergence scale (Mag = 0.95 n), ``t_cut`` the shared
    integration limit of MagArea, ``sizes`` draws each set's limit n as a faint line;
    ``colours`` maps each group to its colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    fig = go.Figure()
    t_end = max((float(np.nanmax(np.asarray(ts, dtype=np.float64))) for ts, _ in curves.values()), default=1.0)
    if t_cut is not None and np.isfinite(t_cut):
        t_end = max(t_end, float(t_cut))
    x_max = 1.1 * t_end
    palette = series_colours(curves, colours)
    for i, (label, (ts, values)) in enumerate(curves.items()):
        colour = palette[i]
        fig.add_trace(
            go.Scatter(x=np.asarray(ts, dtype=np.float64), y=np.asarray(values, dtype=np.float64),
                       mode="lines", name=escape_label(label), line={"color": colour, "width": 2}, legendgroup=escape_label(label),
                       hovertemplate="t = %{x:.4g}<br>Mag = %{y:.4g}<extra>" + escape_label(label) + "</extra>")
        )
        if t_conv is not None and t_conv.get(label) is not None and np.isfinite(t_conv[label]):
            # t_conv on the t axis; beyond the drawn range, an arrow at the right edge says where
            tc = float(t_conv[label])
            inside = tc <= x_max
            fig.add_trace(
                go.Scatter(x=[tc if inside else x_max], y=[0.0], mode="markers", cliponaxis=False,
                           marker={"color": colour, "size": 12, "symbol": "triangle-up" if inside else "triangle-right",
                                   "line": {"color": "white", "width": 1}},
                           name=f"t_conv ({escape_label(label)})", legendgroup=escape_label(label), showlegend=False,
                           hovertemplate=f"t_conv = {tc:.4g}" + ("" if inside else " (beyond the plot)")
                           + f"<extra>{escape_label(label)}</extra>")
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
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """RND_i against the epoch: every run faintly, the mean over runs boldly.

    ``curves`` is (runs, epochs) or a mapping label -> (runs, epochs); epochs not yet run may
    be NaN (a curve drawn while training). ``average_last`` shades the averaging window of the
    score; ``total_epochs`` fixes the x range so a growing curve does not rescale; ``colours``
    maps each group to its colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    sets = dict(curves) if isinstance(curves, Mapping) else {"RND_i": curves}
    fig = go.Figure()
    epochs_seen = 1
    palette = series_colours(sets, colours)
    for i, (label, C) in enumerate(sets.items()):
        C = np.atleast_2d(np.asarray(C, dtype=np.float64))
        epochs = np.arange(1, C.shape[1] + 1)
        epochs_seen = max(epochs_seen, C.shape[1])
        colour = palette[i]
        if C.shape[0] > 1:
            for r in range(C.shape[0]):
                fig.add_trace(go.Scatter(x=epochs, y=C[r], mode="lines", line={"color": colour, "width": 0.7},
                                         opacity=0.25, showlegend=False, hoverinfo="skip", legendgroup=escape_label(label)))
        with np.errstate(all="ignore"):
            mean = np.array([np.nan if np.all(np.isnan(col)) else np.nanmean(col) for col in C.T])
        fig.add_trace(go.Scatter(x=epochs, y=mean, mode="lines+markers" if C.shape[1] <= 30 else "lines",
                                 name=escape_label(label), line={"color": colour, "width": 2.5}, marker={"size": 4},
                                 legendgroup=escape_label(label),
                                 hovertemplate="epoch %{x}<br>mean RND_i = %{y:.4f}<extra>" + escape_label(label) + "</extra>"))
    last = int(total_epochs or epochs_seen)
    if average_last:
        fig.add_vrect(x0=last - int(average_last) + 0.5, x1=last + 0.5, fillcolor="#999", opacity=0.12,
                      line_width=0, annotation_text="averaged", annotation_position="top left")
    fig.add_hline(y=0.0, line={"color": "#888", "width": 1})
    fig.update_xaxes(title="epoch i", range=[0.5, last + 0.5])
    fig.update_yaxes(title="RND_i (normalised gap)")
    return _layout(fig, title=title, height=height, legend=len(sets) > 1)


def magnitude_dimension_figure(
    profiles: Mapping[str, Curve],
    *,
    maxima: Optional[Mapping[str, Tuple[float, float]]] = None,
    title: Optional[str] = "Magnitude dimension profile d log Mag / d log t",
    height: int = 400,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """The magnitude dimension profile against the scale t (log axis), one curve per set.

    ``profiles`` maps a label to ``(ts, profile)`` (:class:`~diversity_core.magnitude.MagnitudeDimension`'s
    ``ts`` and ``profile``); scales t <= 0 have no place on the log axis and are left out, NaN
    values (singular scales) leave gaps. ``maxima`` maps a label to ``(t_dimension, dimension)``
    and marks each set's magnitude dimension, the profile's largest value; ``colours`` maps each
    group to its colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    fig = go.Figure()
    palette = series_colours(profiles, colours)
    for i, (label, (ts, values)) in enumerate(profiles.items()):
        ts = np.asarray(ts, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        keep = ts > 0
        colour = palette[i]
        fig.add_trace(go.Scatter(x=ts[keep], y=values[keep], mode="lines+markers", name=escape_label(label),
                                 line={"color": colour, "width": 2}, marker={"size": 4}, legendgroup=escape_label(label),
                                 hovertemplate="t = %{x:.4g}<br>dim = %{y:.4g}<extra>" + escape_label(label) + "</extra>"))
        if maxima is not None and label in maxima and np.isfinite(maxima[label][1]):
            t_dim, dim = (float(v) for v in maxima[label])
            fig.add_trace(go.Scatter(x=[t_dim], y=[dim], mode="markers", showlegend=False, legendgroup=escape_label(label),
                                     marker={"color": colour, "size": 12, "symbol": "star",
                                             "line": {"color": "white", "width": 1}},
                                     hovertemplate=f"magnitude dimension {dim:.4g} at t = {t_dim:.4g}"
                                                   f"<extra>{escape_label(label)}</extra>"))
    fig.update_xaxes(title="scale t (log; ★ the maximum, the magnitude dimension)", type="log")
    fig.update_yaxes(title="d log Mag / d log t", rangemode="tozero")
    return _layout(fig, title=title, height=height, legend=True)
