"""Backward-compatible home of the plotly figure builders; they live in :mod:`diversity_core.report.figures`.

``from diversity_core.figures import q_profile_figure`` keeps working; new code imports from
``diversity_core.report.figures``. Importing this module does not import plotly.
"""

from .report import figures as _figures
from .report.figures import *  # noqa: F403 - this module only re-exports

__all__ = list(_figures.__all__)
