"""The robustness test's figure: the groups' ranks under each representation and kernel.

Drawn from a :func:`diversity_core.robustness.representation_robustness` result (the app's
Robustness page; the report and notebooks draw the same figure).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

from ..._orders import format_q
from ._base import _go, _layout, escape_label
from .colours import series_colours

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["rank_figure"]


def rank_figure(result, *, title: Optional[str] = None, height: int = 380,
                colours: Optional[Mapping[str, str]] = None) -> go.Figure:
    """The groups' ranks under each representation and kernel (1 at the top): crossing lines are rank flips.

    Parameters
    ----------
    result : RobustnessResult or MetricAgreement
        What :func:`diversity_core.robustness.representation_robustness` (or
        :func:`diversity_core.agreement.metric_agreement`, rows named by their metric) returns: its ``rows``
        (one per representation and kernel: ``label``, ``ranking``, ``estimates[group] =
        (VS, low, high)``), ``groups``, ``q`` and ``n``.
    title : str, optional
        The figure's title; default "Ranking of the groups by VS (q = ...) at n = ...".
    height : int, default 380
        Height in pixels.
    colours : mapping group -> colour, optional
        Each group's colour (:func:`~.colours.group_colours` of the dataset's groups), so a
        group has the colour it has on the other charts.

    Returns
    -------
    plotly.graph_objects.Figure
        One line per group (its rank under each row, a category on x), the hover box giving its
        VS with the interval; the y axis reversed (rank 1 at the top).

    Raises
    ------
    MissingDependencyError
        plotly is not installed (``pip install 'diversity-explorer[report]'``).
    """
    go = _go()
    x = [r.label for r in result.rows]
    fig = go.Figure()
    palette = series_colours(result.groups, colours)
    for i, g in enumerate(result.groups):
        ranks = [r.ranking.index(g) + 1 for r in result.rows]
        text = [
            # a metric agreement's rows (diversity_core.agreement) name their metric; a robustness row is VS_q
            f"{getattr(r, 'metric', '') or 'VS'} = {r.estimates[g][0]:.3g} "
            f"[{r.estimates[g][1]:.3g}, {r.estimates[g][2]:.3g}]"
            for r in result.rows
        ]
        fig.add_trace(
            go.Scatter(
                x=x,
                y=ranks,
                mode="lines+markers",
                name=escape_label(g),
                text=text,
                line={"color": palette[i], "width": 3},
                marker={"size": 12},
                hovertemplate="%{x}<br>rank %{y}<br>%{text}<extra>" + escape_label(g) + "</extra>",
            )
        )
    fig.update_yaxes(
        title="rank (1 = most diverse)", autorange="reversed", tickvals=list(range(1, len(result.groups) + 1))
    )
    fig.update_xaxes(type="category")  # the tick labels name the representation and kernel
    if title is None:
        title = f"Ranking of the groups by VS (q = {format_q(result.q)}) at n = {result.n}"
    return _layout(fig, title=title, height=height, legend=True)
