"""The self-contained HTML report of a comparison, its figures, and their export as PNG/SVG.

Where things live
-----------------
html       ``report_html`` and ``write_report``: one offline HTML file rendered from the Jinja2
           template ``templates/report.html.j2`` (autoescaped), plotly.js embedded once
figures    the plotly figure builders shared by the app and the report (``figures.comparison``:
           the figures of a Comparison, ``FIGURE_TITLES``, ``presentation_style``)
export     ``figure_bytes``, ``export_figure``, ``export_figures``: PNG/SVG through kaleido

plotly, jinja2 and kaleido are optional (``pip install 'diversity-explorer[report]'``): they are
imported when a figure, a report or an export is made, never when this package is imported.
"""

from .._config import CHROMIUM_PATH  # noqa: F401 - importable from here as before the split
from .export import export_figure, export_figures, figure_bytes
from .figures.comparison import FIGURE_TITLES, comparison_figures, presentation_style
from .html import report_html, write_report

__all__ = [
    "FIGURE_TITLES",
    "comparison_figures",
    "report_html",
    "write_report",
    "figure_bytes",
    "export_figure",
    "export_figures",
    "presentation_style",
]
