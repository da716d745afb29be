r"""Precision, recall, density, coverage and the improved precision and recall, from k-NN balls.

Naeem et al. (2020) and Kynkaanniemi et al. (2019): fidelity and diversity of generated items
against a reference.

With :math:`\mathrm{NND}_k(x)` the distance from x to its k-th nearest other item of its own set,
:math:`B(x, r)` the ball of radius r around x, R the reference (N items) and G the generated set
(M items):

.. math::

    \mathrm{precision} = \frac{1}{M}\sum_j 1\Big[g_j \in \bigcup_i B(r_i, \mathrm{NND}_k(r_i))\Big],\quad
    \mathrm{recall} = \frac{1}{N}\sum_i 1\Big[r_i \in \bigcup_j B(g_j, \mathrm{NND}_k(g_j))\Big]

    \mathrm{density} = \frac{1}{kM}\sum_j \sum_i 1\big[g_j \in B(r_i, \mathrm{NND}_k(r_i))\big],\quad
    \mathrm{coverage} = \frac{1}{N}\sum_i 1\big[\exists j: g_j \in B(r_i, \mathrm{NND}_k(r_i))\big]

(Eqs. (1)-(4) of Naeem et al.). The improved precision and recall of Kynkaanniemi et al. (their
Eqs. (1)-(2)) are the first two with k = 3.

Ties: every ball is closed, with the tolerance of the project's one tie rule
(:func:`~diversity_core.evaluation._neighbours.ball`): a pair is inside when
:math:`D^2 \le \mathrm{NND}_k^2 (1 + 2 (d + 2) \varepsilon)`, so a distance that ties with a
radius (integer grids, n-gram features) counts whichever way round-off broke the tie. Naeem et
al.'s ``prdc`` package compares with ``<`` on sklearn's expanded distances; away from ties (any
continuous data) both rules give the same decisions.
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .._nn import ApproximateIndex, frame_of
from .._progress import ProgressCallback
from .._validation import check_random_state
from ._common import check_interval_options, check_k, check_nn_method, check_sets
from ._intervals import paired_interval
from ._limits import check_work, interval_work, neighbour_cost
from ._neighbours import (
    Threshold,
    approx_ball_pairs,
    approx_knn,
    ball,
    kth_smallest,
    prepare_pair,
    radius_counts,
    resolve_nn_method,
)
from ._results import Estimate, PRDCResult, PrecisionRecallResult

__all__ = ["prdc", "improved_precision_recall"]

#: Order of the values :func:`prdc_values` returns.
NAMES = ("precision", "recall", "density", "coverage", "improved_precision", "improved_recall")
#: Their ranges (density is unbounded above).
BOUNDS = ((0.0, 0.0, 0.0, 0.0, 0.0, 0.0), (1.0, 1.0, np.inf, 1.0, 1.0, 1.0))


def neighbour_items(R: np.ndarray, G: np.ndarray, k: int, k_improved: int, method: str = "exact", *,
                    seed: int = 0, progress: Optional[ProgressCallback] = None) -> Dict[str, np.ndarray]:
    """Per-item decisions of both metric families (validated input; ``method`` resolved).

    Keys: ``precision``, ``density`` (count / k), ``improved_precision`` per generated item;
    ``recall``, ``coverage``, ``improved_recall`` per reference item.
    """
    ks = sorted({k, k_improved})
    ck, ci = ks.index(k), ks.index(k_improved)
    if method == "approximate":
        return _approximate_items(R, G, k, k_improved, seed)
    d = R.shape[1]
    r, g = prepare_pair(R, G)
    rad_r, _ = kth_smallest(r, None, ks, units="framed", progress=progress, message="reference k-NN radii")
    rad_g, _ = kth_smallest(g, None, ks, units="framed", progress=progress, message="generated k-NN radii")
    rad_r, rad_g = ball(rad_r, d), ball(rad_g, d)
    c = radius_counts(r, g, [
        Threshold(rad_r[:, ck], "row", ("rows", "cols")),
        Threshold(rad_g[:, ck], "col", ("rows",)),
        Threshold(rad_r[:, ci], "row", ("cols",)),
        Threshold(rad_g[:, ci], "col", ("rows",)),
    ], progress=progress, message="reference against generated")
    return {
        "precision": c[0]["cols"] > 0,
        "density": c[0]["cols"] / float(k),
        "coverage": c[0]["rows"] > 0,
        "recall": c[1]["rows"] > 0,
        "improved_precision": c[2]["cols"] > 0,
        "improved_recall": c[3]["rows"] > 0,
    }


def _approximate_items(R, G, k, k_improved, seed) -> Dict[str, np.ndarray]:
    """The decisions from NN-descent indexes (one per set): neither bound of the exact ones.

    Radii from approximate k-NN (exact distances of the candidates found, so never below the exact
    radii: balls can only grow). Each ball is tested on its centre's nearest items of the other
    set, as many as it holds (:func:`~diversity_core.evaluation._neighbours.approx_ball_pairs`):
    a pair is missed only when the index misses it. Every distance is exact, and the tie rule
    and the frame (one centre, one power of two) are the exact search's.
    """
    d = R.shape[1]
    n_r, n_g = R.shape[0], G.shape[0]
    frame = frame_of(R, G)
    kmax = max(k, k_improved)
    index_r = ApproximateIndex(R, metric="euclidean", seed=seed, k=kmax, frame=frame)
    index_g = ApproximateIndex(G, metric="euclidean", seed=seed, k=kmax, frame=frame)
    _, dr = approx_knn(R, None, kmax, seed, units="framed", frame=frame, index=index_r)
    _, dg = approx_knn(G, None, kmax, seed, units="framed", frame=frame, index=index_g)
    dr, dg = ball(dr, d), ball(dg, d)
    widest_r, widest_g = dr.max(axis=1), dg.max(axis=1)
    # pairs (reference i, generated j) inside a reference ball, and inside a generated ball
    ri, rj, rv = approx_ball_pairs(R, G, index_g, widest_r, frame)
    gj, gi, gv = approx_ball_pairs(G, R, index_r, widest_g, frame)
    out = {}
    for kk, tag in ((k, ""), (k_improved, "improved_")):
        in_r = rv <= dr[ri, kk - 1]  # g_j in the ball of r_i
        in_g = gv <= dg[gj, kk - 1]  # r_i in the ball of g_j
        per_g = np.bincount(rj[in_r], minlength=n_g)
        out[tag + "precision"] = per_g > 0
        out[tag + "recall"] = np.bincount(gi[in_g], minlength=n_r) > 0
        if not tag:
            out["density"] = per_g / float(k)
            out["coverage"] = np.bincount(ri[in_r], minlength=n_r) > 0
    return out


def prdc_values(items: Dict[str, np.ndarray]) -> np.ndarray:
    """The six metrics (:data:`NAMES` order) from per-item decisions."""
    return np.array([float(np.mean(items[name])) for name in NAMES])


def subset_scores(k: int, k_improved: int):
    """The score of a pair of subsets for the interval engine (exact search)."""
    def score(Rs, Gs):
        return prdc_values(neighbour_items(Rs, Gs, k, k_improved))
    return score


def build_results(items, estimates, k, k_improved, n_r, n_g, method):
    """``(PRDCResult, PrecisionRecallResult)`` from the items and the six estimates."""
    p = PRDCResult(
        precision=estimates[0], recall=estimates[1], density=estimates[2], coverage=estimates[3], k=k,
        n_reference=n_r, n_generated=n_g, nn_method=method,
        precision_items=np.asarray(items["precision"]), density_items=np.asarray(items["density"], dtype=np.float64),
        recall_items=np.asarray(items["recall"]), coverage_items=np.asarray(items["coverage"]),
    )
    ip = PrecisionRecallResult(
        precision=estimates[4], recall=estimates[5], k=k_improved, n_reference=n_r, n_generated=n_g,
        nn_method=method, precision_items=np.asarray(items["improved_precision"]),
        recall_items=np.asarray(items["improved_recall"]),
    )
    return p, ip


def _run(reference, generated, k, k_improved, nn_method, confidence_level, n_resamples, interval_size, rng, progress):
    """Validate, compute both families and their intervals."""
    R, G = check_sets(reference, generated)
    k = check_k(k, "k", R.shape[0], G.shape[0])
    k_improved = check_k(k_improved, "k", R.shape[0], G.shape[0])
    check_nn_method(nn_method)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    # a count whose work would run for days is refused with the largest that fits (issue 40 item 13)
    check_work("n_resamples", n_resamples,
               interval_work(R.shape[0], G.shape[0], R.shape[1], interval_size, 4 * max(k, k_improved), neighbour_cost),
               what=f"neighbour radii of subsets of at most {interval_size:,} items in d = {R.shape[1]}")
    gen = check_random_state(rng)
    method = resolve_nn_method(nn_method, (R.shape[0], G.shape[0]), R.shape[1], R.dtype.itemsize)
    items = neighbour_items(R, G, k, k_improved, method, seed=int(gen.integers(2**31 - 1)), progress=progress)
    full = prdc_values(items)
    if n_resamples:
        est, _ = paired_interval(R, G, full, subset_scores(k, k_improved), bounds=BOUNDS, level=level,
                                 n_resamples=n_resamples, interval_size=interval_size,
                                 min_items=4 * max(k, k_improved), rng=gen)
    else:

        est = [Estimate(float(v)) for v in full]
    return build_results(items, est, k, k_improved, R.shape[0], G.shape[0], method)


def prdc(
    reference,
    generated,
    *,
    k: int = 5,
    nn_method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> PRDCResult:
    r"""Precision, recall, density and coverage of generated items against a reference (Naeem et al. 2020).

    .. math::

        \mathrm{precision} = \tfrac{1}{M}\textstyle\sum_j 1[\exists i: \lVert g_j - r_i\rVert \le \mathrm{NND}_k(r_i)],\qquad
        \mathrm{density} = \tfrac{1}{kM}\textstyle\sum_j \sum_i 1[\lVert g_j - r_i\rVert \le \mathrm{NND}_k(r_i)]

        \mathrm{recall} = \tfrac{1}{N}\textstyle\sum_i 1[\exists j: \lVert r_i - g_j\rVert \le \mathrm{NND}_k(g_j)],\qquad
        \mathrm{coverage} = \tfrac{1}{N}\textstyle\sum_i 1[\min_j \lVert r_i - g_j\rVert \le \mathrm{NND}_k(r_i)]

    (Eqs. (1)-(4) of [1]_; :math:`\mathrm{NND}_k(x)` is the distance to the k-th nearest other
    item of x's own set, R has N items, G has M; balls are closed, with the tie tolerance of the
    Notes.) Precision and density measure fidelity (are generated items where the reference is?),
    recall and coverage diversity (is the reference covered?).

    Parameters
    ----------
    reference : array-like of shape (N, d)
        Real items' features (float32 stays float32 in the products).
    generated : array-like of shape (M, d)
        Generated items' features, same d.
    k : int, default 5
        Neighbours of the radii (the paper's default); a whole number.
    nn_method : {"auto", "exact", "approximate"}, default "auto"
        ``"exact"``: blocked exact search (float64 decisions, see Notes). ``"approximate"``: an
        NN-descent index (pynndescent): radii from approximate neighbours (never below the exact
        radii), each ball tested on its centre's nearest candidates of the other set (30, more
        while all of them lie inside); the values are neither bounds of the exact ones
        (``docs/evaluation.md`` states the errors measured on real features).
        ``"auto"``: exact while the largest set has at most 60,000 items and the centred copies
        of both sets fit the memory budget.
    confidence_level : float, default 0.95
    n_resamples : int, default 16
        Subsets per size for the interval (0: no interval).
    interval_size : int, default 2048
        Largest subset (items of the larger set) the interval's spread is measured on.
    rng : int or Generator, optional
        Seed of the interval's subsets and of the approximate index.
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    PRDCResult
        The four metrics as :class:`Estimate` (value and interval), per-item decisions, and
        which neighbour search ran (``nn_method``).

    Raises
    ------
    DiversityInputError
        Bad features, different d, ``k`` not below both sizes, bad options.
    MemoryBudgetError
        ``nn_method="exact"`` and the centred copies exceed the memory budget.

    Notes
    -----
    Cost: three distance products, O((N^2 + M^2 + N M) d), in row blocks (one block of
    ``chunk_bytes`` at a time) and O(N d + M d) memory for the centred copies. Products run in
    the data's precision; every decision within round-off of its radius, and every candidate of
    a k-th neighbour, is recomputed from exact float64 differences, so the result equals an
    exact float64 computation (and the ``prdc`` package to 1e-12 away from exact ties).
    Ties: a pair is inside a ball when :math:`D^2 \le \mathrm{NND}_k^2 (1 + 2 (d + 2) \varepsilon)`
    (closed balls with a tolerance of twice the round-off of both sides), so distances that tie
    with a radius in exact arithmetic count whichever way round-off broke them. Both sets are
    centred on one float64 mean and scaled by one power of two, so translating or rescaling all
    the features together (by 1e160 or 1e-170 too) changes nothing.
    The interval: the engine of :mod:`diversity_core.compare` on paired subsets of up to
    ``interval_size`` items, its spread extrapolated to (N, M) (``evaluation._intervals``).
    The radii depend on N and M (they shrink as sets grow): compare models at equal sizes.

    References
    ----------
    .. [1] M. F. Naeem, S. J. Oh, Y. Uh, Y. Choi, J. Yoo, "Reliable Fidelity and Diversity
       Metrics for Generative Models", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 4))
    >>> r = prdc(X, X, n_resamples=0)      # a set against itself
    >>> float(r.precision.value), float(r.recall.value), float(r.coverage.value)
    (1.0, 1.0, 1.0)
    """
    return _run(reference, generated, k, k, nn_method, confidence_level, n_resamples, interval_size, rng, progress)[0]


def improved_precision_recall(
    reference,
    generated,
    *,
    k: int = 3,
    nn_method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> PrecisionRecallResult:
    r"""Improved precision and recall of Kynkaanniemi et al. (2019): k-NN manifolds with closed balls.

    .. math::

        f(x, \Phi) = 1\big[\exists \phi \in \Phi: \lVert x - \phi\rVert \le \mathrm{NND}_k(\phi)\big],\qquad
        \mathrm{precision} = \tfrac{1}{M}\textstyle\sum_j f(g_j, R),\qquad
        \mathrm{recall} = \tfrac{1}{N}\textstyle\sum_i f(r_i, G)

    (Eqs. (1)-(2) of [1]_, k = 3 as there). Same parameters, cost and numerics as :func:`prdc`.

    Returns
    -------
    PrecisionRecallResult

    Notes
    -----
    Pitfall: one outlier in either set grows a large ball that can hold many items of the other
    set, inflating precision (outlier in R) or recall (outlier in G); the density and coverage of
    :func:`prdc` were designed against this.

    References
    ----------
    .. [1] T. Kynkaanniemi, T. Karras, S. Laine, J. Lehtinen, T. Aila, "Improved Precision and
       Recall Metric for Assessing Generative Models", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> float(improved_precision_recall(X, X + 100.0, n_resamples=0).precision.value)
    0.0
    """
    return _run(reference, generated, k, k, nn_method, confidence_level, n_resamples, interval_size, rng, progress)[1]
