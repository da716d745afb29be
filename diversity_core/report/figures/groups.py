"""Figures comparing groups (the Compare page and the HTML report): scores, differences, profiles, curves."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._base import PALETTE, _go, _grid, _layout, _make_subplots, _num, escape_label
from .colours import series_colours
from .vendi import q_profile_figure

if TYPE_CHECKING:
    import plotly.graph_objects as go


Interval = Tuple[str, float, Optional[float], Optional[float]]


def score_bars_figure(
    scores: Mapping[str, Sequence[Interval]],
    *,
    groups: Optional[Sequence[str]] = None,
    max_cols: int = 3,
    title: Optional[str] = "Every score, with its interval",
    height: Optional[int] = None,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """One panel per score: a bar per group (from 0) with its interval as an error bar.

    ``scores`` maps a score name to ``(group, estimate, low, high)`` rows. A group keeps its
    colour in every panel and is named in the legend (``groups`` fixes the order), so long group
    names never crowd the axes. Bars start at 0, so close scores look close:
    :func:`difference_figure` shows whether they differ. ``colours`` maps each group to its
    colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    names = list(scores)
    order = list(groups) if groups is not None else []
    order += [g for g in dict.fromkeys(r[0] for rows in scores.values() for r in rows) if g not in order]
    cmap = dict(zip(order, series_colours(order, colours)))
    rows_n, cols = _grid(len(names), max_cols)
    fig = _make_subplots(rows=rows_n, cols=cols, subplot_titles=names, vertical_spacing=0.12 / max(rows_n, 1) + 0.05,
                        horizontal_spacing=0.08)
    shown = set()
    for k, score in enumerate(names):
        r, c = divmod(k, cols)
        for g, est, low, high in scores[score]:
            v, lo, hi = _num(est), _num(low), _num(high)
            fig.add_trace(
                go.Bar(x=[escape_label(g)], y=[v], name=escape_label(g), legendgroup=escape_label(g), showlegend=g not in shown,
                       marker={"color": cmap[g]},
                       error_y={"type": "data", "symmetric": False, "array": [0.0 if math.isnan(hi) else hi - v],
                                "arrayminus": [0.0 if math.isnan(lo) else v - lo], "color": "#333",
                                "thickness": 1.5},
                       customdata=[[lo, hi]],
                       hovertemplate=escape_label(g) + "<br>" + escape_label(score) + " = %{y:.4g}<br>interval [%{customdata[0]:.4g}, "
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
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """Overlaid q-profiles ``label -> (qs, values, low, high)``, each with a shaded interval band.

    Drawn with :func:`q_profile_figure`; the band covers the finite orders q > 0; ``colours``
    maps each group to its colour (:func:`~.colours.group_colours`).
    """
    go = _go()
    fig = q_profile_figure({k: (v[0], v[1]) for k, v in profiles.items()}, title=title, height=height,
                           colours=colours)
    palette = series_colours(profiles, colours)
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
            fillcolor=palette[i], opacity=0.18, line={"width": 0}, hoverinfo="skip", showlegend=False,
            legendgroup=escape_label(label), name=f"{escape_label(label)} interval",
        ))
    return fig


def spectra_overlay_figure(
    spectra: Mapping[str, Sequence[float]],
    *,
    max_points: Optional[int] = 100,
    title: Optional[str] = "Leading eigenvalues of each group's density matrix",
    height: int = 400,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """Eigenvalues (descending, log scale) of several groups on one axis (``colours``: each group's)."""
    go = _go()
    fig = go.Figure()
    palette = series_colours(spectra, colours)
    for i, (label, lam) in enumerate(spectra.items()):
        lam = np.asarray(lam, dtype=np.float64)
        lam = np.sort(lam[lam > 0])[::-1]
        if max_points is not None:
            lam = lam[: int(max_points)]
        fig.add_trace(go.Scatter(
            x=np.arange(1, lam.size + 1), y=lam, mode="lines+markers" if lam.size <= 60 else "lines",
            name=escape_label(label), line={"color": palette[i], "width": 2}, marker={"size": 4},
            hovertemplate="i = %{x}<br>λ_i = %{y:.3e}<extra>" + escape_label(label) + "</extra>",
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
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """One panel per score: ``score -> {label: (sizes, mean, sd)}``, mean ± sd bands, n marked.

    A curve that has flattened by the group's size says the score has settled; ``n`` (the
    comparison's equal size) is drawn as a dashed line; ``colours`` maps each group to its colour
    (:func:`~.colours.group_colours`).
    """
    go = _go()
    names = list(curves)
    order = list(dict.fromkeys(label for per in curves.values() for label in per))
    palette = series_colours(order, colours)
    rows_n, cols = _grid(len(names), max_cols)
    fig = _make_subplots(rows=rows_n, cols=cols, subplot_titles=names, vertical_spacing=0.16 / max(rows_n, 1) + 0.06,
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
                mode="lines", fillcolor=palette[i], opacity=0.15, line={"width": 0}, hoverinfo="skip",
                showlegend=False,
                legendgroup=escape_label(label)), row=r + 1, col=c + 1)
            fig.add_trace(go.Scatter(
                x=x, y=m, mode="lines+markers", name=escape_label(label), line={"color": palette[i], "width": 2},
                marker={"size": 5}, legendgroup=escape_label(label), showlegend=k == 0,
                hovertemplate="m = %{x}<br>" + escape_label(score) + " = %{y:.4g}<extra>" + escape_label(label) + "</extra>"),
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
    go = _go()
    names = list(differences)
    labels_of = {s: [escape_label(p) for p, *_ in differences[s]] for s in names}
    layout: list = []  # rows of score names
    for s in names:
        if layout and len(layout[-1]) < max_cols and labels_of[layout[-1][0]] == labels_of[s]:
            layout[-1].append(s)
        else:
            layout.append([s])
    rows_n = max(len(layout), 1)
    cols = max((len(r) for r in layout), default=1)
    titles = [row[c] if c < len(row) else "" for row in layout for c in range(cols)]
    fig = _make_subplots(rows=rows_n, cols=cols, subplot_titles=titles, shared_yaxes=True,
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


def mag_diff_heatmap(
    values: np.ndarray,
    names: Sequence[str],
    *,
    absolute: bool = False,
    title: Optional[str] = "MagDiff between every pair of sets",
    height: Optional[int] = None,
) -> go.Figure:
    """All-pairs MagDiff as an annotated heatmap (magnipy's ``Diversipy``).

    ``values[i, j]`` is the MagDiff of row set i against column set j
    (:class:`~diversity_core.magnitude.MagDiffMatrix`'s ``values``, antisymmetric: red where the row is
    more diverse, blue where the column is, on a scale centred at 0), or with ``absolute=True`` the
    symmetric integral of the absolute gap (one colour scale from 0). Each cell prints its value.
    """
    go = _go()
    M = np.asarray(values, dtype=np.float64)
    labels = [escape_label(s) for s in names]
    k = len(labels)
    if M.shape != (k, k):
        raise ValueError(f"values must be a {k} x {k} matrix for {k} names; got shape {M.shape}.")
    top = float(np.nanmax(np.abs(M))) if M.size and np.isfinite(M).any() else 1.0
    top = top if top > 0 else 1.0
    scale = dict(colorscale="Viridis", zmin=0.0, zmax=top) if absolute else dict(colorscale="RdBu_r", zmin=-top,
                                                                                   zmax=top, zmid=0.0)
    text = [[f"{M[i, j]:.3g}" for j in range(k)] for i in range(k)]
    fig = go.Figure(go.Heatmap(
        z=M, x=labels, y=labels, text=text, texttemplate="%{text}", **scale,
        colorbar={"title": "|MagDiff|" if absolute else "MagDiff"},
        hovertemplate="%{y} vs %{x}<br>" + ("∫|Mag_row − Mag_col| dt" if absolute else "∫(Mag_row − Mag_col) dt")
                      + " = %{z:.4g}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title="row set")
    fig.update_xaxes(title="column set", side="bottom")
    return _layout(fig, title=title, height=height or max(320, 90 + 60 * k), legend=False)
