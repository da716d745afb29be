"""Metric-space magnitude: Mag(t), the magnitude function, t_conv, MagArea and MagDiff.

For a finite metric space with distances :math:`d_{ij}` and a scale :math:`t > 0` the
similarity matrix is :math:`Z_t = \\exp(-t\\,D)` (elementwise) and the magnitude is the sum of
the entries of :math:`Z_t^{-1}`, i.e. :math:`\\mathrm{Mag}(t) = \\mathbf 1^\\top w` with
:math:`Z_t w = \\mathbf 1` (Eq. (1) of [1]_; :math:`w` is the weighting of [2]_). It counts the
"effective number of distinct points" seen at scale :math:`t`: it rises from
:math:`\\mathrm{Mag}(0) := 1` to the number of distinct points as :math:`t \\to \\infty`.

What lives where
----------------
_api          :func:`magnitude_at` (one scale, a float), :func:`magnitude_weights` (with the
              weighting, its positive magnitude and an error estimate), :func:`magnitude_function`
              (the curve on a linear or log grid, with positive magnitude and optionally the
              exact derivative), :func:`convergence_scale` (:math:`t_{conv}`, Mag = ``fraction`` * n),
              :func:`magnitude_dimension` (the profile d log Mag / d log t and its maximum)
_spread       :func:`spread_function`, :func:`spread_at` (Willerton's spread)
_comparison   :func:`mag_area`, :func:`mag_diff` (signed and absolute), :func:`compare_magnitude`
              (several sets with the paper's conventions for ``t_cut``), :func:`mag_diff_matrix`
              (all pairs on one grid, magnipy's Diversipy)
_results      the frozen results: :class:`MagnitudeResult`, :class:`MagnitudeFunction`,
              :class:`MagAreaResult`, :class:`MagDiffResult`, :class:`MagnitudeComparison`,
              :class:`MagDiffMatrix`, :class:`SpreadFunction`, :class:`MagnitudeDimension`
_metric       distances of the metrics (:data:`METRICS`: ours, the Tanimoto distance of
              fingerprints, and every distance of ``scipy.spatial.distance``), validation of a
              precomputed D, duplicate and twin merging (``_merge_duplicates``), the memory-budget check
_solvers      Cholesky (LAPACK and blocked), float32 factors with float64 refinement, CG with
              error estimates (``_Engine``), :data:`ACCURACY_RTOL`
_free         the matrix-free path (``method="matrix-free"``, or "auto" over the memory
              budget): blocked Z_t products from the points, lockstep CG over the grid,
              Nyström preconditioning, error estimates; :func:`magnitude_method` (which
              path a given n takes)
_scales       the grid solve, the t_conv search, and the private computes on validated input
              (``_magnitude_values``, ``_convergence_scale_of``, ``_area``)
_curvature    point clouds on unit disks of constant curvature (the paper's Table 1; used by
              ``benchmarks/bench_magnitude_curvature.py`` and its test)

How it is computed
------------------
Exact duplicates are merged first (the twin property: a multiset has the magnitude of its
distinct points), keeping the first occurrences in input order. Each :math:`Z_t` is formed
as ``exp(-t D)`` directly (no ``exp(-D) ** t``, which underflows for distances above ~745), and
on an evenly spaced grid as :math:`Z_{t_k} = Z_{t_1}^{\\circ k}` by elementwise products.
Every solve reports an a-posteriori error estimate; the solvers are described in ``_solvers``.
Peak memory is about 20 n^2 bytes (D, Z_t and one float32 factor; 24 n^2 with a float64
factor), checked against the memory budget (:func:`diversity_core.set_config`) before any
n x n allocation. Above the budget, ``method="auto"`` takes the matrix-free path (``_free``),
which holds no n x n matrix and says so in the result (``method``, ``exact`` per scale).

Magnitude is defined whenever :math:`Z_t` is invertible: when Cholesky fails (:math:`Z_t` not
positive definite, as for some graph metrics) an LU factorisation takes over (method
``"lu"``). Only a numerically singular :math:`Z_t` (tiny ``t``, near-duplicates, or the cosine
distance of low-dimensional data at small scales) gives NaN, flagged ``singular``; values whose
estimated relative error exceeds :data:`ACCURACY_RTOL` are flagged ``ill_conditioned``. No
jitter is ever added.

``magnitude_at`` was called ``magnitude``, which shadowed this module in
``diversity_core``. The old name still works with a DeprecationWarning, both as
``diversity_core.magnitude.magnitude(X, t)`` and as a call of the module itself,
``diversity_core.magnitude(X, t)``.

References
----------
.. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
   the Diversity of Latent Representations", NeurIPS 2024.
.. [2] T. Leinster, "The magnitude of metric spaces", Documenta Mathematica 18 (2013).
"""

from __future__ import annotations

import sys
import types
import warnings

from ._api import (
    SCALES,
    convergence_scale,
    magnitude_at,
    magnitude_dimension,
    magnitude_function,
    magnitude_weights,
)
from ._comparison import compare_magnitude, mag_area, mag_diff, mag_diff_matrix
from ._free import magnitude_method
from ._metric import METRICS
from ._results import (
    MagAreaResult,
    MagDiffMatrix,
    MagDiffResult,
    MagnitudeComparison,
    MagnitudeDimension,
    MagnitudeFunction,
    MagnitudeResult,
    SpreadFunction,
)
from ._solvers import ACCURACY_RTOL
from ._spread import spread_at, spread_function

__all__ = [
    "METRICS",
    "SCALES",
    "ACCURACY_RTOL",
    "MagnitudeResult",
    "MagnitudeFunction",
    "MagAreaResult",
    "MagDiffResult",
    "MagnitudeComparison",
    "MagDiffMatrix",
    "SpreadFunction",
    "MagnitudeDimension",
    "magnitude_at",
    "magnitude_weights",
    "magnitude_function",
    "convergence_scale",
    "magnitude_dimension",
    "magnitude_method",
    "spread_function",
    "spread_at",
    "mag_area",
    "mag_diff",
    "mag_diff_matrix",
    "compare_magnitude",
]

_RENAMED = (
    "diversity_core.magnitude.magnitude and calling the module diversity_core.magnitude are deprecated; "
    "use diversity_core.magnitude_at(X_or_D, t, metric=...)."
)


def _deprecated_magnitude(X_or_D, t: float, *, metric: str = "euclidean") -> float:
    """Deprecated alias of :func:`magnitude_at`."""
    warnings.warn(_RENAMED, DeprecationWarning, stacklevel=2)
    return magnitude_at(X_or_D, t, metric=metric)


def __getattr__(name: str):
    """Module attributes kept for backwards compatibility (PEP 562)."""
    if name == "magnitude":
        return _deprecated_magnitude
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """The module, callable as the function it used to be shadowed by (deprecated)."""

    def __call__(self, X_or_D, t: float, *, metric: str = "euclidean") -> float:
        """Deprecated: ``diversity_core.magnitude(X, t)`` forwards to :func:`magnitude_at`."""
        warnings.warn(_RENAMED, DeprecationWarning, stacklevel=2)
        return magnitude_at(X_or_D, t, metric=metric)


sys.modules[__name__].__class__ = _CallableModule
