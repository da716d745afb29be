"""Figures of the curation results: the score curve of most-diverse subsets, as the Curate page draws it.

The Curate page (``ui/curate_ui.py``) and ``SelectionComparison.plot()`` /
``SelectionResult.plot()`` draw this one figure. The results are read by duck typing
(``selections``, ``curve_k``, ``curve(q)``), not imported: the curation results draw themselves
with it, and the import graph stays without a cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from ..._orders import format_q
from ._base import _colour, _go, _layout, escape_label

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["SELECTION_LABELS", "selection_figure"]

#: How each selection method is named on the page and in the figure's legend.
SELECTION_LABELS = {"greedy": "greedy (VS_2)", "kcenter": "k-centre", "random": "random"}


def selection_figure(selections: Mapping[str, Any], q: float, *,
                     labels: Optional[Mapping[str, str]] = None) -> go.Figure:
    """VS_q of every method's first k items against k (one line per method).

    ``selections`` maps a method name to its ``SelectionResult`` (``SelectionComparison.selections``);
    ``labels`` names the methods in the legend (default :data:`SELECTION_LABELS`, else the name).
    """
    go = _go()
    labels = SELECTION_LABELS if labels is None else labels
    fig = go.Figure()
    for i, (name, sel) in enumerate(selections.items()):
        fig.add_trace(go.Scatter(x=sel.curve_k, y=sel.curve(q), mode="lines+markers",
                                 name=escape_label(labels.get(name, name)), line=dict(color=_colour(i))))
    # the white template, title and legend of every other figure (the default grey one before)
    _layout(fig, title=f"VS (q = {format_q(q)}) of the first k items chosen", height=380)
    fig.update_layout(xaxis_title="k", yaxis_title=f"VS_{format_q(q)}")
    return fig
