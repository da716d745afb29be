"""Differential spectra: what a candidate set G has that a reference R lacks, and what it misses.

The spectrum of the difference of two kernel covariance operators, :math:`C_G - \\eta\\, C_R`
(Zhang, Li & Farnia, ICML 2024): its positive eigenvalues are the modes G expresses more than eta
times as often as R, their eigenvectors pick the items of each mode; with the roles swapped, the
modes G misses. Every public function validates and then calls a private compute; results are
frozen dataclasses with ``to_dict()``.

What lives where
----------------
_routes     the three exact or estimated routes to the covariances: the kernel's feature map (O(n d^2)),
            the dense factor of the pooled kernel matrix (O(n^3), within the memory budget) and random
            Fourier features for rbf and laplacian (FINC; an estimate with the sketch's standard errors)
_spectrum   :func:`novelty_spectrum`, :func:`missing_modes`, :func:`top_mode_items` (the galleries)
_scores     :func:`ken_score` (KEN) and :func:`rrke` (relative Renyi kernel entropy), with intervals from
            the subsampling engine at equal n
_null       :func:`mode_null`: the label-permutation null of the top eigenvalue; which modes are noise
_report     :func:`novelty_report`: all of the above in one pass (``diversity evaluate --novelty``)
_results    :class:`NoveltySpectrum`, :class:`ModeNull`, :class:`NoveltyReport`

See ``docs/evaluation.md`` ("Novelty and missing modes") for the formulas and when they mislead.
"""

from ._null import mode_null
from ._report import novelty_report
from ._results import ModeNull, NoveltyReport, NoveltySpectrum
from ._scores import ken_score, rrke
from ._spectrum import missing_modes, novelty_spectrum, top_mode_items

__all__ = [
    "novelty_spectrum",
    "missing_modes",
    "top_mode_items",
    "ken_score",
    "rrke",
    "mode_null",
    "novelty_report",
    "NoveltySpectrum",
    "ModeNull",
    "NoveltyReport",
]
