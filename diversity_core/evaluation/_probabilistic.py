r"""Probabilistic precision and recall (Park & Kim, ICCV 2023): k-NN supports with soft, equal-sized balls.

Every item of a set carries a ball of one common radius :math:`a\,R` (:math:`R` the set's mean
k-NN distance) and a score that falls linearly from 1 at its centre to 0 at the edge; an item
of the other set is in the support with the probability that at least one ball accepts it:

.. math::

    f(y; x) = \max\Big(0,\ 1 - \frac{\lVert y - x\rVert}{a R_X}\Big),\qquad
    \mathrm{P\text{-}precision} = \frac1M \sum_j \Big[1 - \prod_i \big(1 - f(g_j; r_i)\big)\Big]

    \mathrm{P\text{-}recall} = \frac1N \sum_i \Big[1 - \prod_j \big(1 - f(r_i; g_j)\big)\Big]\quad
    (f \text{ with } R_Y \text{ for the generated balls})

with :math:`R_X = \frac1N \sum_i \mathrm{NND}_k(r_i)`, :math:`R_Y` the same over G, a = 1.2 and
k = 4 (Eqs. (5)-(8) of [1]; their ``compute_pprecision_precall``, whose ``kth = 4`` is the 4th
nearest other item). Equal radii stop one outlier's large ball from vouching for many items.
The k-NN radii are the exact blocked search of :mod:`._neighbours`; the pairwise distances are
:func:`~diversity_core.distances._squared_distances` (float64, free of cancellation), by blocks
of reference rows of one ``chunk_bytes`` each.

References
----------
[1] D. Park, S. Kim, "Probabilistic Precision and Recall Towards Reliable Evaluation of Generative
    Models", ICCV 2023.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._config import chunk_rows
from .._progress import ProgressCallback, report
from .._validation import check_random_state, check_scalar
from ..blocked import _ordered_map, _workers
from ..distances import _squared_distances
from ..sources import chunk_bounds
from ._common import check_interval_options, check_k, check_sets
from ._intervals import paired_interval
from ._neighbours import kth_smallest, prepare_pair
from ._pack_results import ProbabilisticPRResult
from ._results import Estimate

__all__ = ["probabilistic_precision_recall"]

def probabilistic_items(R: np.ndarray, G: np.ndarray, k: int, a: float, progress=None) -> dict:
    """Per-item probabilities of validated sets: ``precision`` (G), ``recall`` (R), and the radii."""
    r, g = prepare_pair(R, G)
    rad_r, _ = kth_smallest(r, None, [k], units="distance", progress=progress, message="reference k-NN radii")
    rad_g, _ = kth_smallest(g, None, [k], units="distance", progress=progress, message="generated k-NN radii")
    big_r, big_g = a * float(rad_r.mean()), a * float(rad_g.mean())
    centre = np.asarray(R, dtype=np.float64).mean(axis=0)
    bounds = chunk_bounds(R.shape[0], chunk_rows(G.shape[0], 8, minimum=16))  # one chunk_bytes block per thread

    def one(ab):
        D = _squared_distances(R[ab[0]:ab[1]], G, centre=centre)
        np.sqrt(D, out=D)
        # 1 - f = min(D / (a R), 1): the product runs over the balls of the other set
        A = np.multiply(D, 1.0 / big_r)
        np.minimum(A, 1.0, out=A)
        keep_g = A.prod(axis=0)  # over the reference balls, per generated item
        np.multiply(D, 1.0 / big_g, out=D)
        np.minimum(D, 1.0, out=D)
        return keep_g, D.prod(axis=1)  # over the generated balls, per reference item

    miss_g = np.ones(G.shape[0])
    miss_r = np.empty(R.shape[0])
    for done, (ab, (keep_g, keep_r)) in enumerate(zip(bounds, _ordered_map(one, bounds, _workers())), start=1):
        miss_g *= keep_g
        miss_r[ab[0]:ab[1]] = keep_r
        report(progress, done, len(bounds), "probabilistic balls")
    return {"precision": 1.0 - miss_g, "recall": 1.0 - miss_r, "radius_reference": big_r / a,
            "radius_generated": big_g / a}


def probabilistic_precision_recall(
    reference,
    generated,
    *,
    k: int = 4,
    a: float = 1.2,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> ProbabilisticPRResult:
    r"""Probabilistic precision and recall of generated items against a reference (Park & Kim 2023).

    .. math::

        \mathrm{P\text{-}precision} = \frac1M \sum_j \Big[1 - \prod_i \min\Big(1, \frac{\lVert g_j - r_i\rVert}{a R_X}\Big)\Big],
        \qquad
        \mathrm{P\text{-}recall} = \frac1N \sum_i \Big[1 - \prod_j \min\Big(1, \frac{\lVert r_i - g_j\rVert}{a R_Y}\Big)\Big]

    (Eqs. (5)-(8) of [1]_: :math:`1 - \min(1, \lVert y - x\rVert / (a R))` is the linear scoring
    rule of one ball, :math:`R_X, R_Y` the mean k-NN distances of R and G).

    Parameters
    ----------
    reference : array-like of shape (N, d)
    generated : array-like of shape (M, d)
    k : int, default 4
        Neighbours of the radii (the paper's default).
    a : float, default 1.2
        Ball radius in units of the mean k-NN distance (> 0; the paper's default).
    confidence_level, n_resamples, interval_size, rng, progress
        As :func:`~diversity_core.evaluation.prdc`.

    Returns
    -------
    ProbabilisticPRResult

    Raises
    ------
    DiversityInputError
        Bad features, different d, ``k`` not below both sizes, ``a`` not positive.
    MemoryBudgetError
        The centred copies of the sets exceed the memory budget (the k-NN search).

    Notes
    -----
    Sensitive to: fidelity (precision) and coverage of the reference (recall) with soft
    memberships, so a generated item near the edge of the support counts a little rather than
    all or nothing; one radius per set makes it robust to outliers that inflate the improved
    precision and recall of Kynkaanniemi et al. Misleads on data whose density varies strongly
    (one radius is too small in sparse regions and too large in dense ones) and across unequal
    set sizes (the radii shrink as sets grow).
    Cost: two k-NN searches (O((N^2 + M^2) d)) and all N M distances by blocks of reference rows
    (one ``chunk_bytes`` block, 64 MiB by default, per thread), O(N M d) time.

    References
    ----------
    .. [1] D. Park, S. Kim, "Probabilistic Precision and Recall Towards Reliable Evaluation of
       Generative Models", ICCV 2023.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> r = probabilistic_precision_recall(X, X + 100.0, n_resamples=0)   # disjoint supports
    >>> float(r.precision.value), float(r.recall.value)
    (0.0, 0.0)
    """
    R, G = check_sets(reference, generated)
    k = check_k(k, "k", R.shape[0], G.shape[0])
    a = check_scalar(a, "a", float, min_val=0.0, include_boundaries="neither")
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    items = probabilistic_items(R, G, k, a, progress)
    full = [float(items["precision"].mean()), float(items["recall"].mean())]
    if n_resamples:
        def score(Rs, Gs):
            it = probabilistic_items(Rs, Gs, k, a)
            return [float(it["precision"].mean()), float(it["recall"].mean())]

        est, _ = paired_interval(R, G, full, score, bounds=((0.0, 0.0), (1.0, 1.0)), level=level,
                                 n_resamples=n_resamples, interval_size=interval_size, min_items=4 * k, rng=gen)
    else:
        est = [Estimate(full[0]), Estimate(full[1])]
    return ProbabilisticPRResult(
        precision=est[0], recall=est[1], k=int(k), a=float(a), radius_reference=items["radius_reference"],
        radius_generated=items["radius_generated"], n_reference=int(R.shape[0]), n_generated=int(G.shape[0]),
        precision_items=items["precision"], recall_items=items["recall"],
    )
