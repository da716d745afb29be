r"""Intervals of two-sample metrics from the subsampling engine of :mod:`diversity_core.compare`.

A two-sample metric T(R, G) (precision, FD, the Vendi ratio, ...) is a statistic of *pairs* of
subsets. The generated items are the engine's group (N = n_G items); generated item t carries
the *bundle* of reference items at positions ``[t n_R / n_G, (t + 1) n_R / n_G)`` of one random
permutation of the reference, so a subset of m generated items comes with about
``m n_R / n_G`` reference items, and disjoint generated subsets come with disjoint reference
subsets. The engine (:func:`~diversity_core.compare._subsample.subsample`) then does what it does
for one group: it scores the disjoint blocks of random partitions at sizes m in [M/8, M/2],
fits the spread :math:`s(m) = a\,m^\gamma` (log-log least squares), extrapolates it to the full
sets and returns :math:`T \pm t_\nu s(N)` with Satterthwaite degrees of freedom, clipped to the
metric's range.

``M`` is capped by ``interval_size`` (items of the larger subset), so the interval costs a fixed
amount of work however large the sets: a few dozen evaluations of the metric on at most
``interval_size`` items. The extrapolation from subsets that small to the full sets is the
interval's main assumption (it holds for smooth statistics, whose spread falls like
:math:`m^{-1/2}`; the fitted :math:`\gamma` is reported in the settings).
"""

from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence

import numpy as np

from ..compare._subsample import Plan, subsample
from ._results import Estimate

__all__ = ["paired_interval", "bundle"]


def bundle(idx: np.ndarray, perm_r: np.ndarray, n_r: int, n_g: int) -> np.ndarray:
    """The reference items that come with the generated items ``idx`` (sorted)."""
    starts = (idx.astype(np.int64) * n_r) // n_g
    ends = ((idx.astype(np.int64) + 1) * n_r) // n_g
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.intp)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(total)
    return np.sort(perm_r[offsets])


class _PairedStatistic:
    """The engine's statistic: scores of a generated subset and its reference bundle."""

    def __init__(self, R, G, perm_r, full: np.ndarray, score: Callable):
        self.R, self.G = R, G
        self.perm_r = perm_r
        self.full = full
        self.score = score

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        n_g = self.G.shape[0]
        if idx.size == n_g:
            return self.full
        r = bundle(idx, self.perm_r, self.R.shape[0], n_g)
        return np.asarray(self.score(self.R[r], self.G[idx]), dtype=np.float64)

    def single_thread(self, m: int) -> bool:
        return m <= 400


def fit_sizes_for(n_r: int, n_g: int, interval_size: int, min_items: int) -> tuple:
    """``(M, sizes, reason)``: the fit limit in generated items, the subset sizes, and why there are none.

    The sizes are M/8, M/4 and M/2 generated items (M capped so that no subset of either set
    exceeds ``interval_size`` items), keeping those whose subsets hold at least ``min_items``
    items of each set. When fewer than two qualify (sets of very different sizes, or a small
    one), the sizes are made to fit the *smaller* set instead: log-spaced from the least size
    that gives both subsets ``min_items`` items to the largest that keeps them within half of
    each set and within ``interval_size``. Only when even that leaves fewer than two sizes are
    there none, and ``reason`` says why (in words, with what to change); it is empty otherwise.
    """
    scale = max(n_g, n_r) / n_g  # items of the larger subset per generated item
    M = int(min(n_g, math.floor(interval_size / scale)))
    sizes = np.unique(np.round(np.geomspace(max(M / 8.0, 1.0), max(M / 2.0, 1.0), 3)).astype(int))
    ok = [int(m) for m in sizes if m <= n_g // 2 and min(m, (m * n_r) // n_g) >= min_items]
    if len(ok) >= 2:
        return M, tuple(ok), ""
    # sized on the smaller set: m generated items come with floor(m n_r / n_g) reference items
    lo = max(min_items, -(-min_items * n_g // n_r))  # least m whose subsets both hold min_items
    hi = min(n_g // 2, int(math.floor(interval_size / scale)))
    if hi > lo:
        fit = np.unique(np.round(np.geomspace(lo, hi, 3)).astype(int))
        fit = [int(m) for m in fit if lo <= m <= hi]
        if len(fit) >= 2:
            return 2 * hi, tuple(fit), ""
    small, name = (n_g, "generated") if n_g <= n_r else (n_r, "reference")
    if math.floor(interval_size / scale) <= lo:
        need = int(math.ceil((lo + 1) * scale))
        return M, (), (f"the subsets would need at least {min_items} items of each set; with {n_r} reference and "
                       f"{n_g} generated items that makes subsets of {need} items of the larger set, above "
                       f"interval_size = {interval_size}. Raise interval_size to at least {need}.")
    return M, (), (f"the subsets must hold at least {min_items} items of each set at two sizes, each at most half "
                   f"of its set; the {name} set has {small} items (about {2 * min_items + 2} are needed, with the "
                   f"other set in proportion). Give the {name} set more items.")


def estimates_from(full: np.ndarray, res, level: float) -> List[Estimate]:
    """One :class:`Estimate` per score: its value on all items and the subsampling fit's interval.

    ``res``: what :func:`~diversity_core.compare._subsample.subsample` returned for these scores;
    a score whose standard error is not finite gets no interval (``"none"``).
    """
    out: List[Estimate] = []
    for j, v in enumerate(full):
        se = float(res.standard_error[j])
        ok = math.isfinite(se)
        out.append(Estimate(
            value=float(v), se=se if ok else None,
            ci_low=float(res.confidence_interval.low[j]) if ok else None,
            ci_high=float(res.confidence_interval.high[j]) if ok else None,
            df=float(res.df[j]) if ok else None, level=float(level),
            interval="extrapolated" if ok else "none",
        ))
    return out


def paired_interval(
    R: np.ndarray,
    G: np.ndarray,
    full: Sequence[float],
    score: Callable,
    *,
    bounds: tuple,
    level: float,
    n_resamples: int,
    interval_size: int,
    min_items: int,
    rng: np.random.Generator,
    tick: Optional[Callable[[int], None]] = None,
) -> tuple:
    """Estimates with intervals for the k scores of ``score(R_sub, G_sub)`` (module docstring).

    ``full`` holds the scores on all items (the estimate). Returns ``(estimates, info)`` with
    ``info`` the fitted exponents, sizes and replicates (for the settings); every estimate has
    interval ``"none"`` and a ``note`` saying why when the sets are too small for two fit sizes
    (:func:`fit_sizes_for`).
    """
    full = np.asarray(full, dtype=np.float64)
    n_r, n_g = R.shape[0], G.shape[0]
    M, sizes, reason = fit_sizes_for(n_r, n_g, interval_size, min_items)
    if not sizes:
        note = f"no interval: {reason}"
        return [Estimate(float(v), note=note) for v in full], {"sizes": [], "reason": reason}
    perm_r = rng.permutation(n_r)
    plan = Plan(N=n_g, n=n_g, n_point=1, reps={m: int(n_resamples) for m in sizes}, fit_limit=M)
    stat = _PairedStatistic(R, G, perm_r, full, score)
    lo_b, hi_b = (np.asarray(b, dtype=np.float64) for b in bounds)
    res = subsample(stat, plan, rng, confidence_level=level, bounds=(lo_b, hi_b), tick=tick)
    out = estimates_from(full, res, level)
    info = {"sizes": list(sizes), "replicates_per_size": int(n_resamples), "fit_limit": int(M),
            "gamma": [None if not math.isfinite(g) else float(g) for g in res.gamma]}
    return out, info
