"""The self-contained HTML report of a comparison, its figures, and their export as PNG/SVG.

Where things live
-----------------
html       ``report_html`` and ``write_report``: one offline HTML file rendered from the Jinja2
           template ``templates/report.html.j2`` (autoescaped), plotly.js embedded once
figures    the plotly figure builders shared by the app and the report (``figures.comparison``:
           the figures of a Comparison, ``FIGURE_TITLES``, ``presentation_style``)
_ranking   ``ranking`` (``Ranking``, ``headline_score``): the groups ranked on one score with the resolved steps between
           neighbours, the one ranking text of the report's summary and the presentation layout
export     ``figure_bytes``, ``export_figure``, ``export_figures``: PNG/SVG through kaleido

plotly, jinja2 and kaleido are optional (``pip install 'diversity-explorer[report]'``): they are
imported when a figure, a report or an export is made, never when this package is imported.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the submodule holding it. Nothing is imported with the package: the app's Scores
#: page needs only ``figures`` and would otherwise import the comparison machinery with ``html``
#: (and with it SciPy's optimize and integrate for magnitude) on a server's first page.
_LAZY = {
    "CHROMIUM_PATH": "diversity_core._config",
    "FIGURE_TITLES": "diversity_core.report.figures.comparison",
    "comparison_figures": "diversity_core.report.figures.comparison",
    "presentation_style": "diversity_core.report.figures.comparison",
    "Ranking": "diversity_core.report._ranking",
    "ranking": "diversity_core.report._ranking",
    "headline_score": "diversity_core.report._ranking",
    "STEP_LEGEND": "diversity_core.report._ranking",
    "report_html": "diversity_core.report.html",
    "write_report": "diversity_core.report.html",
    "figure_bytes": "diversity_core.report.export",
    "export_figure": "diversity_core.report.export",
    "export_figures": "diversity_core.report.export",
}

__all__ = [
    "FIGURE_TITLES",
    "comparison_figures",
    "report_html",
    "write_report",
    "figure_bytes",
    "export_figure",
    "export_figures",
    "presentation_style",
    "Ranking",
    "ranking",
    "headline_score",
    "STEP_LEGEND",
]


def __getattr__(name: str) -> Any:
    """Import a public name the first time it is asked for (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    """The public names and what is already bound."""
    return sorted(set(globals()) | set(__all__))
