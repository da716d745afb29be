"""Plotly figure builders: pure functions of arrays and results, returning ``go.Figure``.

No Streamlit here: the app draws these figures with ``st.plotly_chart`` and the HTML report
embeds the same figures, so a chart looks the same in both places. plotly is optional
(``pip install 'diversity-explorer[report]'``) and is imported when a figure is built, not when
this package is imported.

=========================  ===============================================================
builder                    draws
=========================  ===============================================================
q_profile_figure           VS_q against q (log axes, q = 0 and q = inf at the ends), the
                           chosen q marked, the bounds 1 and n
q_profile_marker           the chosen q's mark alone (plotly JSON), to add to a figure built
                           without q
vendi_bounds_figure        the q-profile beyond the dense limit: a first-look curve, the
                           guaranteed band, estimates with error bars
spectrum_figure            eigenvalues of the density matrix (log scale) and their
                           cumulative mass
kernel_heatmap             a kernel matrix, optionally with group boundaries
sensitivity_figure         VS against a kernel parameter, one curve per group
magnitude_figure           Mag(t) curves with t_conv marked and a shared t_cut
magnitude_dimension_figure the magnitude dimension profile d log Mag / d log t, maxima marked
mag_diff_heatmap           all-pairs MagDiff (signed or absolute) as an annotated heatmap
rnd_figure                 RND_i per epoch: each run, their mean, the averaging window
projection_figure          a 2-D map of the items, WebGL above a few thousand points
map_figure                 the map of any size: every point, or a density image with a
                           sample of points on top; search matches ringed
map_3d_figure              the 3-D map in the same colours, every point or a sample
rank_figure                the groups' ranks under each representation and kernel (the
                           robustness test, and every metric's: metric_agreement): crossing
                           lines are rank flips
novelty_figure             the shares of a set's novel and missing modes against a reference,
                           solid outside the permutation null, pale within noise
selection_figure           VS of the greedy, k-centre and random subsets against their size
bar_figure                 one value per label, optionally with an interval
histogram_figure           a histogram of one quantity
score_bars_figure          groups' scores with intervals, one panel per score
difference_figure          pairwise differences with intervals (forest plot)
q_profile_bands_figure     overlaid q-profiles with interval bands
spectra_overlay_figure     several groups' eigenvalues on one axis
sample_size_figure         each score against the number of items
comparison_figures         every figure of a Comparison, keyed as in FIGURE_TITLES
=========================  ===============================================================

Where things live: ``_base`` (palette, layout, axis helpers), ``colours`` (one colour per group,
the same on every chart: :func:`group_colours`), ``vendi`` (q-profile, spectrum,
kernel matrix, sensitivity), ``curves`` (magnitude, RND), ``items`` (projection, bars,
histogram), ``maps`` (the maps of any size, 2-D and 3-D), ``robustness`` (the rank chart),
``groups`` (the comparison builders), ``comparison`` (the figures of a Comparison), ``novelty``
(novel and missing modes), ``curation`` (the diverse subsets).

Group, file and item names are escaped by the builders (:func:`escape_label`): plotly renders
some HTML, links included, in labels, legends and hover boxes. The ``hover`` of
``projection_figure``, ``map_figure`` and ``map_3d_figure`` is the one argument taken as markup
(its caller escapes the user text inside it).

Every builder takes keyword-only styling arguments (``title``, ``height``) and leaves the
data untouched; plotting infinite orders uses positions at the ends of the axis with tick
labels ``0`` and ``∞`` (:func:`diversity_core._orders.format_q`).
"""

from ..._orders import format_q
from ._base import PALETTE, WEBGL_THRESHOLD, escape_label, q_axis_position
from .colours import POOLED_COLOUR, POOLED_LABEL, group_colours, series_colours
from .comparison import FIGURE_TITLES, comparison_figures, presentation_style
from .curation import selection_figure
from .curves import magnitude_dimension_figure, magnitude_figure, rnd_figure
from .groups import (
    difference_figure,
    mag_diff_heatmap,
    q_profile_bands_figure,
    sample_size_figure,
    score_bars_figure,
    spectra_overlay_figure,
)
from .items import bar_figure, histogram_figure, projection_figure
from .maps import map_3d_figure, map_figure
from .novelty import novelty_figure
from .robustness import rank_figure
from .vendi import (
    kernel_heatmap,
    q_profile_figure,
    q_profile_marker,
    sensitivity_figure,
    spectrum_figure,
    vendi_bounds_figure,
)

__all__ = [
    "PALETTE",
    "POOLED_COLOUR",
    "POOLED_LABEL",
    "group_colours",
    "series_colours",
    "WEBGL_THRESHOLD",
    "q_axis_position",
    "escape_label",
    "format_q",
    "q_profile_figure",
    "q_profile_marker",
    "vendi_bounds_figure",
    "spectrum_figure",
    "kernel_heatmap",
    "magnitude_figure",
    "magnitude_dimension_figure",
    "mag_diff_heatmap",
    "rnd_figure",
    "projection_figure",
    "map_figure",
    "map_3d_figure",
    "rank_figure",
    "novelty_figure",
    "selection_figure",
    "bar_figure",
    "sensitivity_figure",
    "histogram_figure",
    "score_bars_figure",
    "q_profile_bands_figure",
    "spectra_overlay_figure",
    "sample_size_figure",
    "difference_figure",
    "FIGURE_TITLES",
    "comparison_figures",
    "presentation_style",
]
