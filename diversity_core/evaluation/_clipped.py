r"""Clipped density and clipped coverage (Salvy, Talbot & Thirion 2025): k-NN fidelity and coverage robust to outliers.

With :math:`\mathrm{NND}_k(r)` the distance from a reference item to its k-th nearest other
reference item, :math:`\tilde\rho(r) = \min(\mathrm{NND}_k(r), \operatorname{median}_i \mathrm{NND}_k(r_i))`
the radius clipped at the median radius, R the reference (N items) and G the generated set (M):

.. math::

    \mathrm{CD} = \min\Big(1,\ \frac{\frac1M \sum_j \min\big(1, \frac1k \#\{i : g_j \in B(r_i, \tilde\rho(r_i))\}\big)}
                                 {\frac1N \sum_l \min\big(1, \frac1k \#\{i \ne l : r_l \in B(r_i, \tilde\rho(r_i))\}\big)}\Big)

    y = \frac1N \sum_i \frac1k \min\big(k, \#\{j : g_j \in B(r_i, \mathrm{NND}_k(r_i))\}\big),\qquad
    \mathrm{CC} = \frac{\#\{m \in \{0..M\} : f(m) < y\}}{M + 1}

with :math:`f(m)` the expected value of y when m of the generated items are drawn from the
reference distribution and the rest are useless (every rank of a good item among the k-NN balls
uniform):

.. math::

    f(m) = \frac1k \sum_{j=0}^{m} \min(j, k) \binom{m}{j} \frac{B(k + j,\ N + m - k - j)}{B(k,\ N - k)}
    \quad (m \ge k),\qquad f(m) = 0\ (m < k)

(Sec. 3 of [1]; their ``ClippedDensityCoverage`` class computes f in logs over every m and
looks y up with ``searchsorted``: here f is non-decreasing, so a bisection finds the same count
with O(log M) evaluations). Clipping each item's contribution at 1 stops one generated item in
a dense region from counting k times; clipping the radii stops a reference outlier's huge ball
from vouching for bad items; the divisor calibrates the density so that R against itself
scores 1, and f calibrates the coverage to the share of good items.

Every ball is closed with the project's one tie rule (:func:`~diversity_core.evaluation._neighbours.ball`);
the authors' coverage compares with ``<`` and their density with ``<=``: on continuous data
both give the same decisions. The radii and radius tests are the exact blocked search of
:mod:`._neighbours` (the one :func:`~diversity_core.evaluation.prdc` uses).

References
----------
[1] N. Salvy, H. Talbot, B. Thirion, "Enhanced Generative Model Evaluation with Clipped Density
    and Coverage", arXiv:2507.01761 (2025).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

from .._progress import ProgressCallback
from .._validation import check_random_state
from ._common import check_interval_options, check_k, check_sets
from ._intervals import paired_interval
from ._neighbours import Threshold, ball, kth_smallest, prepare_pair, radius_counts
from ._pack_results import ClippedDensityCoverageResult
from ._results import Estimate

__all__ = ["clipped_density_coverage", "expected_clipped_coverage", "calibrate_coverage"]


def expected_clipped_coverage(m: int, k: int, n_reference: int) -> float:
    """f(m) of the module docstring: the expected raw clipped coverage with m good generated items."""
    if m < k:
        return 0.0
    j = np.arange(1, m + 1, dtype=np.float64)  # j = 0 contributes min(0, k) = 0
    log_terms = (np.log(np.minimum(j, k)) + gammaln(m + 1.0) - gammaln(j + 1.0) - gammaln(m - j + 1.0)
                 + betaln(k + j, n_reference + m - k - j) - betaln(k, n_reference - k))
    return float(np.exp(logsumexp(log_terms))) / k


def calibrate_coverage(y: float, k: int, n_reference: int, n_generated: int) -> float:
    """``#{m in 0..M : f(m) < y} / (M + 1)``: the share of good items whose expected coverage is below y.

    f is non-decreasing in m, so the count is the first m with f(m) >= y, found by bisection.
    """
    lo, hi = 0, n_generated + 1  # the first m with f(m) >= y lies in [lo, hi]; hi = M + 1: none
    while lo < hi:
        mid = (lo + hi) // 2
        if expected_clipped_coverage(mid, k, n_reference) >= y:
            hi = mid
        else:
            lo = mid + 1
    return lo / (n_generated + 1.0)


def clipped_items(R: np.ndarray, G: np.ndarray, k: int, progress=None) -> dict:
    """Per-item values of validated sets: ``density`` (G), ``coverage`` (R), ``reference_density`` (R), ``median``."""
    d = R.shape[1]
    r, g = prepare_pair(R, G)
    rad, _ = kth_smallest(r, None, [k], units="framed", progress=progress, message="reference k-NN radii")
    rad = rad[:, 0]
    med = float(np.median(np.sqrt(rad)))  # the median of the distances, as the authors take it
    clipped = np.minimum(np.sqrt(rad), med) ** 2
    c = radius_counts(r, g, [Threshold(ball(clipped, d), "row", ("cols",)), Threshold(ball(rad, d), "row", ("rows",))],
                      progress=progress, message="reference against generated")
    own = radius_counts(r, r, [Threshold(ball(clipped, d), "row", ("cols",))], progress=progress,
                        message="reference against itself")
    return {
        "density": np.minimum(c[0]["cols"] / float(k), 1.0),
        "coverage": np.minimum(c[1]["rows"], k) / float(k),
        "reference_density": np.minimum((own[0]["cols"] - 1) / float(k), 1.0),  # each item is in its own ball
        "median": float(np.ldexp(med, r.exponent)),
    }


def clipped_values(items: dict, k: int, n_r: int, n_g: int, can_exceed_one: bool) -> tuple:
    """``(clipped density, clipped coverage, density ratio, raw coverage, reference density)``."""
    ref = float(np.mean(items["reference_density"]))
    ratio = float(np.mean(items["density"])) / ref if ref > 0 else float("inf")
    density = ratio if can_exceed_one else min(ratio, 1.0)
    raw = float(np.mean(items["coverage"]))
    return density, calibrate_coverage(raw, k, n_r, n_g), ratio, raw, ref


def clipped_density_coverage(
    reference,
    generated,
    *,
    k: int = 5,
    can_exceed_one: bool = False,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> ClippedDensityCoverageResult:
    r"""Clipped density and clipped coverage of generated items against a reference (Salvy et al. 2025).

    .. math::

        \mathrm{CD} = \min\Big(1, \frac{\overline{\min(1, c_G(g)/k)}}{\overline{\min(1, c_R(r)/k)}}\Big),
        \qquad \mathrm{CC} = \frac{\#\{m \le M : f(m) < \overline{\min(k, n_G(r))/k}\}}{M + 1}

    (Sec. 3 of [1]_; :math:`c_G(g)` the number of reference balls of radius
    :math:`\min(\mathrm{NND}_k, \mathrm{median\ NND}_k)` holding g, :math:`c_R(r)` the same for a
    reference item in the other reference items' balls, :math:`n_G(r)` the generated items in
    r's k-NN ball, f the expected raw coverage with m good items: module docstring). Both read
    as an equivalent share of good generated items, in [0, 1].

    Parameters
    ----------
    reference : array-like of shape (N, d)
    generated : array-like of shape (M, d)
    k : int, default 5
        Neighbours of the radii (the authors' default).
    can_exceed_one : bool, default False
        Keep the density ratio above 1 (the authors' ``can_exceed_one``): generated items packed
        more densely than the reference's own.
    confidence_level, n_resamples, interval_size, rng, progress
        As :func:`~diversity_core.evaluation.prdc`.

    Returns
    -------
    ClippedDensityCoverageResult

    Raises
    ------
    DiversityInputError
        Bad features, different d, ``k`` not below both sizes.
    MemoryBudgetError
        The centred copies of the sets exceed the memory budget.

    Notes
    -----
    Sensitive to: the share of generated items that land where reference items are (density)
    and the share of the reference's neighbourhoods reached (coverage), each calibrated so that
    replacing a share p of good items by useless ones lowers it by about p. Robust to a few
    outliers in either set, unlike precision and recall; misleads, like every k-NN metric, when
    the features do not separate good from bad items, and across unequal N (the radii shrink as
    sets grow: compare models at equal sizes).
    Cost: three blocked distance passes, O((N^2 + N M) d) (R within itself twice, R against G
    once), O((N + M) d) memory; the calibration is O(M log M).

    References
    ----------
    .. [1] N. Salvy, H. Talbot, B. Thirion, "Enhanced Generative Model Evaluation with Clipped
       Density and Coverage", arXiv:2507.01761 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> r = clipped_density_coverage(X, X, n_resamples=0)       # a set against itself
    >>> float(r.clipped_density.value)
    1.0
    """
    R, G = check_sets(reference, generated)
    k = check_k(k, "k", R.shape[0], G.shape[0])
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    items = clipped_items(R, G, k, progress)
    can = bool(can_exceed_one)
    density, coverage, ratio, raw, ref = clipped_values(items, k, R.shape[0], G.shape[0], can)
    if n_resamples:
        def score(Rs, Gs):
            return clipped_values(clipped_items(Rs, Gs, k), k, Rs.shape[0], Gs.shape[0], can)[:2]

        est, _ = paired_interval(R, G, [density, coverage], score,
                                 bounds=((0.0, 0.0), (np.inf if can else 1.0, 1.0)), level=level,
                                 n_resamples=n_resamples, interval_size=interval_size, min_items=4 * k, rng=gen)
    else:
        est = [Estimate(density), Estimate(coverage)]
    return ClippedDensityCoverageResult(
        clipped_density=est[0], clipped_coverage=est[1], density_ratio=ratio, coverage_raw=raw,
        reference_density=ref, median_radius=items["median"], k=int(k), n_reference=int(R.shape[0]),
        n_generated=int(G.shape[0]), density_items=items["density"], coverage_items=items["coverage"],
    )
