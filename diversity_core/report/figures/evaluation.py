"""Figures of generated groups evaluated against one reference: the fidelity-diversity plane, the Vendi ratio.

Shared by the app's reference role on the Compare page and the HTML report. Each builder takes
``{group name: EvaluationResult}`` (every group against the same reference) and draws each
estimate with its interval as error bars (none where the metric has no interval).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Mapping, Optional

from ._base import _colour, _go, _layout, _make_subplots, _num, escape_label

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["EVALUATION_TITLES", "evaluation_figures", "fidelity_diversity_plane", "vendi_ratio_figure"]

#: Heading of each figure, by name.
EVALUATION_TITLES = {
    "fidelity_diversity": "Fidelity and diversity against the reference",
    "vendi_ratio": "Vendi score relative to the reference",
}


def _bars(est) -> tuple:
    """``(value, minus, plus)`` of an Estimate (NaN error bars without an interval)."""
    v = _num(est.value)
    lo, hi = est.confidence_interval or (None, None)
    if lo is None or hi is None:
        return v, float("nan"), float("nan")
    return v, v - float(lo), float(hi) - v


def fidelity_diversity_plane(evals: Mapping, *, reference: Optional[str] = None) -> go.Figure:
    """Precision (x) against recall (y) and density (x) against coverage (y), one marker per group.

    Fidelity on the horizontal axes (are generated items where the reference is?), diversity on
    the vertical ones (is the reference covered?): a fresh sample of the reference itself sits
    near the upper right (density near 1). Error bars: the estimates' intervals.
    """
    go = _go()
    fig = _make_subplots(
        rows=1, cols=2, subplot_titles=("precision vs recall (k-NN balls)", "density vs coverage")
    )
    for i, (name, ev) in enumerate(evals.items()):
        p = ev.prdc
        for col, (xe, ye) in enumerate(((p.precision, p.recall), (p.density, p.coverage)), start=1):
            x, xm, xp = _bars(xe)
            y, ym, yp = _bars(ye)
            fig.add_trace(
                go.Scatter(
                    x=[x],
                    y=[y],
                    mode="markers",
                    name=escape_label(name),
                    legendgroup=str(i),
                    showlegend=col == 1,
                    marker={"size": 12, "color": _colour(i)},
                    error_x={"type": "data", "symmetric": False, "array": [xp], "arrayminus": [xm]},
                    error_y={"type": "data", "symmetric": False, "array": [yp], "arrayminus": [ym]},
                    hovertemplate=f"{escape_label(name)}<br>%{{x:.4g}}, %{{y:.4g}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="precision (fidelity)", range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(title_text="recall (diversity)", range=[0, 1.05], row=1, col=1)
    fig.update_xaxes(title_text="density (fidelity)", rangemode="tozero", row=1, col=2)
    fig.update_yaxes(title_text="coverage (diversity)", range=[0, 1.05], row=1, col=2)
    title = None if reference is None else f"Against the reference {escape_label(reference)}"
    return _layout(fig, title=title, height=440)


def vendi_ratio_figure(evals: Mapping, *, reference: Optional[str] = None) -> go.Figure:
    """VS(G) / VS(R) at equal n per group with its interval; a line at 1 (as diverse as the reference)."""
    go = _go()
    names = list(evals)
    vals = [_bars(evals[g].vendi.ratio) for g in names]
    fig = go.Figure(
        go.Bar(
            x=[escape_label(g) for g in names],
            y=[v for v, _, _ in vals],
            marker={"color": [_colour(i) for i in range(len(names))]},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [p for _, _, p in vals],
                "arrayminus": [m for _, m, _ in vals],
            },
            hovertemplate="%{x}: %{y:.4g}<extra></extra>",
        )
    )
    fig.add_hline(y=1.0, line_dash="dot", line_color="#888")
    fig.update_yaxes(title_text="VS(generated) / VS(reference)", rangemode="tozero")
    title = None if reference is None else f"Relative to {escape_label(reference)}"
    return _layout(fig, title=title, height=380, legend=False)


def evaluation_figures(evals: Mapping, *, reference: Optional[str] = None) -> Dict[str, go.Figure]:
    """Every figure of :data:`EVALUATION_TITLES` (empty without groups)."""
    if not evals:
        return {}
    return {
        "fidelity_diversity": fidelity_diversity_plane(evals, reference=reference),
        "vendi_ratio": vendi_ratio_figure(evals, reference=reference),
    }
