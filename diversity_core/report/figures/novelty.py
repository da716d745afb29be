"""The figure of a :class:`~diversity_core.differential.NoveltyReport`: the shares of its novel and missing modes.

Shared by the app's reference role on the Compare page and the HTML report (issue 43, item 2);
it is what ``NoveltyReport.plot()`` draws. One bar per kept mode with a positive eigenvalue:
its share of the owning set's mass (the generated set's for novel modes, the reference's for
missing ones), solid when the mode stands outside the label-permutation null, pale when it is
within noise (hatched when no null was computed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ._base import _go, _layout, escape_label

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["NOVELTY_COLOURS", "novelty_figure"]

#: Colour of each role's bars (Okabe-Ito: blue for what G adds, vermillion for what it misses).
NOVELTY_COLOURS = {"novel": "#0072B2", "missing": "#D55E00"}
#: Opacity of a mode within noise (a mode outside the null is drawn solid).
_NOISE_OPACITY = 0.35


def _verdict(mode: dict) -> str:
    if mode["outside_null"] is None:
        return "no null computed"
    return f"outside the null (p = {mode['p_value']:.3g})" if mode["outside_null"] else (
        f"within noise (p = {mode['p_value']:.3g})")


def novelty_figure(report, *, generated: Optional[str] = None, reference: Optional[str] = None,
                   title: Optional[str] = None, height: int = 360) -> go.Figure:
    """Bar chart of the top novel and missing modes' shares, each marked by its verdict against the null.

    Parameters
    ----------
    report : NoveltyReport
        From :func:`~diversity_core.differential.novelty_report`.
    generated, reference : str, optional
        The two sets' names, for the axis labels and the default title (escaped here).
    title : str, optional
        Heading (default: "Novel and missing modes: G against R"); escaped.
    height : int, default 360

    Returns
    -------
    plotly.graph_objects.Figure
        Two traces, ``"novel"`` and ``"missing"``; x: ``novel 1, ..., missing 1, ...``; y: the share.
    """
    go = _go()
    g = escape_label(generated) if generated is not None else "generated"
    r = escape_label(reference) if reference is not None else "reference"
    fig = go.Figure()
    for role in ("novel", "missing"):
        modes = report.modes(role, n_items=1)
        owner = g if role == "novel" else r
        fig.add_trace(go.Bar(
            x=[f"{role} {m['mode']}" for m in modes],
            y=[m["share"] for m in modes],
            name=f"{role} ({'what ' + g + ' adds' if role == 'novel' else 'what ' + g + ' misses'})",
            marker={"color": NOVELTY_COLOURS[role],
                    "opacity": [1.0 if m["outside_null"] else _NOISE_OPACITY for m in modes],
                    "pattern": {"shape": ["/" if m["outside_null"] is None else "" for m in modes]}},
            customdata=[[_verdict(m), m["eigenvalue"]] for m in modes],
            hovertemplate=(f"%{{x}}: %{{y:.1%}} of the mass of {owner}<br>eigenvalue %{{customdata[1]:.4g}}"
                           "<br>%{customdata[0]}<extra></extra>"),
        ))
    fig.update_yaxes(title_text="share of its set's mass", tickformat=".0%", rangemode="tozero")
    heading = escape_label(title) if title is not None else f"Novel and missing modes: {g} against {r}"
    return _layout(fig, title=heading, height=height)
