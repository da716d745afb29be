"""Backward-compatible home of the plotly figure builders; they live in :mod:`diversity_core.report.figures`.

``from diversity_core.figures import q_profile_figure`` keeps working; new code imports from
``diversity_core.report.figures``. Importing this module does not import plotly.
"""

from .report.figures import (
    PALETTE,
    WEBGL_THRESHOLD,
    bar_figure,
    difference_figure,
    format_q,
    histogram_figure,
    kernel_heatmap,
    magnitude_figure,
    projection_figure,
    q_axis_position,
    q_profile_bands_figure,
    q_profile_figure,
    rnd_figure,
    sample_size_figure,
    score_bars_figure,
    sensitivity_figure,
    spectra_overlay_figure,
    spectrum_figure,
)

__all__ = [
    "PALETTE",
    "WEBGL_THRESHOLD",
    "q_axis_position",
    "format_q",
    "q_profile_figure",
    "spectrum_figure",
    "kernel_heatmap",
    "magnitude_figure",
    "rnd_figure",
    "projection_figure",
    "bar_figure",
    "sensitivity_figure",
    "histogram_figure",
    "score_bars_figure",
    "q_profile_bands_figure",
    "spectra_overlay_figure",
    "sample_size_figure",
    "difference_figure",
]
