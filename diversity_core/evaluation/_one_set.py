r"""Intervals of one-set metrics of the pack from the subsampling engine of :mod:`diversity_core.compare`.

A reference-free metric T(X) (the RKE mode count, the truncated Vendi score, DCScore, the lexical
scores) is a statistic of subsets of one set: the engine
(:func:`~diversity_core.compare._subsample.subsample`) scores the disjoint blocks of random
partitions at sizes m in [M/8, M/2] (M capped by ``interval_size``), fits the spread
:math:`s(m) = a\,m^\gamma`, extrapolates it to the full set and returns :math:`T \pm t_\nu s(N)`
clipped to the metric's range: the same engine and sizes as the two-set metrics of
:mod:`._intervals` (:func:`~diversity_core.evaluation._intervals.fit_sizes_for` with both sets the
same), so a one-set interval costs a few dozen evaluations on at most ``interval_size`` items.

The value is the metric on all N items; metrics that grow with n (mode counts, DCScore) are
compared at equal n, as the Vendi scores of :mod:`diversity_core.compare` are.
"""

from __future__ import annotations

from typing import Callable, List, Sequence

import numpy as np

from ..compare._subsample import Plan, subsample
from ._intervals import estimates_from, fit_sizes_for
from ._results import Estimate

__all__ = ["one_set_interval"]


class _SubsetStatistic:
    """The engine's statistic: the scores of the subset ``idx`` of one set (the full scores at N)."""

    def __init__(self, n: int, full: np.ndarray, score: Callable[[np.ndarray], Sequence[float]]):
        self.n = n
        self.full = full
        self.score = score

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        if idx.size == self.n:
            return self.full
        return np.asarray(self.score(idx), dtype=np.float64)

    def single_thread(self, m: int) -> bool:
        return m <= 400


def one_set_interval(
    n: int,
    full: Sequence[float],
    score: Callable[[np.ndarray], Sequence[float]],
    *,
    bounds: tuple,
    level: float,
    n_resamples: int,
    interval_size: int,
    min_items: int,
    rng: np.random.Generator,
) -> List[Estimate]:
    """Estimates with intervals for the k scores ``score(idx)`` of subsets of one set of n items.

    ``full`` holds the scores on all items; ``score`` takes sorted item indices. Every estimate
    has interval ``"none"`` and a ``note`` when the set is too small for two subset sizes of at
    least ``min_items`` items.
    """
    full = np.asarray(full, dtype=np.float64)
    M, sizes, _ = fit_sizes_for(n, n, interval_size, min_items)
    if not sizes:
        note = (f"no interval: the subsets must hold at least {min_items} items at two sizes, each at most half "
                f"of the set; the set has {n} items (about {2 * min_items + 2} are needed). Give the set more items.")
        return [Estimate(float(v), note=note) for v in full]
    plan = Plan(N=n, n=n, n_point=1, reps={m: int(n_resamples) for m in sizes}, fit_limit=M)
    lo_b, hi_b = (np.asarray(b, dtype=np.float64) for b in bounds)
    res = subsample(_SubsetStatistic(n, full, score), plan, rng, confidence_level=level, bounds=(lo_b, hi_b))
    return estimates_from(full, res, level)
