r"""The subsampling engine of :func:`~diversity_core.compare.compare`: subsets, spread, interval.

A *statistic* maps the indices of a subset of one group's N items to a vector of k scores
(:mod:`._scores` holds them). The engine

1. plans which subsets to score (:class:`Plan`): R random n-subsets for the estimate (the
   whole group when N = n) and B random m-subsets for each size m of the sample-size curve;
2. evaluates the statistic on them, drawn **without replacement** from one seeded generator;
3. turns the replicates into an estimate, a standard error, and an interval
   :math:`\hat\theta \pm z_{(1+\text{level})/2}\,\mathrm{SE}` clipped to each score's range,
   returned as a :class:`SubsampleResult` shaped like SciPy's ``scipy.stats.bootstrap``
   result (``confidence_interval`` with ``low``/``high``, ``standard_error``).

The standard error, to first order in the Hoeffding decomposition of the subset average
(see the notes of :mod:`diversity_core.compare`):

.. math::

    \mathrm{SE}^2 = \frac{n}{N}\, s(n)^2 + \frac{\widehat{\mathrm{Var}}_{sub}(n)}{R},
    \qquad s(m) = \mathrm{sd}_{sub}(m)\sqrt{(N-1)/(N-m)}

with :math:`s(m)` the spread of a fresh m-sample (finite-population correction of the spread
of m-subsets). :math:`s(n)` is measured on the n-subsets when :math:`N \ge 2n` (and R >= 3),
otherwise extrapolated with the power law :math:`s(m) = a\,m^\gamma` fitted in log-log
coordinates on sizes in [M/8, M/2] (rate-adaptive subsampling, Bertail, Politis & Romano 1999),
:math:`\gamma` clipped to :data:`GAMMA_RANGE`. A single random n-subset is an iid n-sample,
so its SE is :math:`s(n)`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, NamedTuple, Optional, Protocol, Sequence, Tuple

import numpy as np

from .._stats import normal_quantile

__all__ = [
    "GAMMA_RANGE",
    "INTERVAL_DESCRIPTION",
    "Statistic",
    "Plan",
    "ConfidenceInterval",
    "SizePoint",
    "SubsampleResult",
    "curve_sizes",
    "fit_sizes",
    "spectral_plan",
    "magnitude_plan",
    "subsample",
]

#: Range of the fitted exponent gamma of the spread s(m) = a m^gamma.
GAMMA_RANGE = (-1.0, 2.0)

#: The interval method in words (recorded in every comparison's settings).
INTERVAL_DESCRIPTION = (
    "Every score is computed at the same n. A group larger than n is scored on random n-subsets drawn "
    "without replacement (no bootstrap: duplicated items would bias diversity scores down) and the scores "
    "are averaged. Standard errors come from subsampling with the finite-population correction: measured "
    "on the n-subsets when a group holds at least 2n items, otherwise extrapolated from subsets of N/8 to "
    "N/2 items with a fitted power law s(m) = a m^gamma (rate-adaptive subsampling). SE^2 = (n/N) s(n)^2 + "
    "(Monte Carlo variance of the subset average). Intervals are estimate +/- z SE at the chosen level; a "
    "pairwise difference is resolved when its interval (SE combined in quadrature, groups independent) "
    "excludes 0. The level holds per interval and per pair, without a multiplicity correction."
)


class Statistic(Protocol):
    """What the engine evaluates: k scores of a subset, given by the indices of its items."""

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        """The k scores of the items ``idx`` (sorted indices into the group)."""

    def single_thread(self, m: int) -> bool:
        """Whether subsets of m items are best scored with one BLAS thread."""


# ---------------------------------------------------------------------------------------------
# plans
# ---------------------------------------------------------------------------------------------
def curve_sizes(N: int, n_sizes: int = 8) -> np.ndarray:
    """Subset sizes of a sample-size curve: ``n_sizes`` log-spaced sizes from ~N/16 (>= 3) to N."""
    lo = max(3.0, N / 16.0)
    return np.unique(np.round(np.geomspace(lo, N, max(int(n_sizes), 2))).astype(int))


def fit_sizes(M: int, sizes: np.ndarray) -> np.ndarray:
    """The sizes in [M/8, M/2] (at least 3 items) used to fit the spread's power law."""
    sizes = np.asarray(sizes)
    fit = sizes[(sizes >= M / 8.0) & (sizes <= M / 2.0) & (sizes >= 3)]
    if fit.size < 2:
        fit = sizes[(sizes <= M / 2.0) & (sizes >= 3)]
    return fit


@dataclass(frozen=True)
class Plan:
    """Which subsets one group is scored on.

    ``n_point`` n-subsets for the estimate (the whole group when N == n), ``reps[m]`` random
    m-subsets for each curve size m, and ``fit_limit`` M: the spread is fitted on sizes in
    [M/8, M/2].
    """

    N: int
    n: int
    n_point: int
    reps: Dict[int, int]
    fit_limit: int

    @property
    def work(self) -> int:
        """Number of statistic evaluations the plan costs."""
        return (1 if self.N == self.n else self.n_point) + sum(self.reps.values())


def spectral_plan(N: int, n: int, n_point: int, n_rep: int, sizes, cost_power: int) -> Plan:
    """Spectral scores: ``n_rep`` subsets per size up to n, fewer above (cost ~ m^cost_power), 1 at N."""
    reps = {}
    for m in map(int, sizes):
        if m >= N:
            if N > n:
                reps[m] = 1  # when N == n the estimate's subset is the whole group
        elif m <= n:
            reps[m] = n_rep
        else:
            reps[m] = int(max(3, min(n_rep, round(n_rep * (n / m) ** cost_power))))
    return Plan(N, n, n_point, reps, N)


def magnitude_plan(N: int, n: int, n_rep: int, n_sizes: int, size_curve: bool) -> Plan:
    """Magnitude: one n-subset for the estimate; ``n_rep`` subsets per size up to n/2, 3 above; sizes <= n."""
    sizes = curve_sizes(n, n_sizes)
    if not size_curve:
        sizes = fit_sizes(n, sizes)
    reps = {}
    for m in map(int, sizes):
        if m >= n:
            continue  # the n-subset of the estimate is the curve's point at n
        reps[m] = n_rep if m <= n / 2 else 3
    return Plan(N, n, 1, reps, n)


# ---------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------
class ConfidenceInterval(NamedTuple):
    """Ends of the interval of every score (arrays of shape (k,)), as in ``scipy.stats.bootstrap``."""

    low: np.ndarray
    high: np.ndarray


class SizePoint(NamedTuple):
    """One size of the sample-size curve: mean and fresh-sample spread of every score."""

    size: int
    mean: np.ndarray
    sd: np.ndarray
    replicates: int


@dataclass(frozen=True)
class SubsampleResult:
    """Estimate, standard error and interval of k scores of one group (read-only arrays).

    Shaped like the result of ``scipy.stats.bootstrap``: ``confidence_interval`` is a named
    tuple ``(low, high)``, ``standard_error`` the SE; ``subsample_distribution`` holds the scores
    of the n-subsets (the counterpart of ``bootstrap_distribution``, one row per subset).

    Attributes
    ----------
    estimate : ndarray of shape (k,)
        Mean of the scores over the n-subsets.
    standard_error : ndarray of shape (k,)
        Standard error of ``estimate`` (NaN where it could not be estimated).
    confidence_interval : ConfidenceInterval
        ``estimate -/+ z SE`` at ``confidence_level``, clipped to the scores' ranges.
    confidence_level : float
        The two-sided level of the interval.
    method : {"measured", "extrapolated"}
        Whether s(n) was measured on the n-subsets or extrapolated with the power law.
    gamma : ndarray of shape (k,)
        Fitted exponent of the spread s(m) = a m^gamma (NaN where not estimable).
    replicates : int
        Number of n-subsets R.
    subsample_distribution : ndarray of shape (R, k)
        The scores of each n-subset.
    first_subset : ndarray of shape (n,)
        Sorted indices of the first n-subset (the whole group when N = n).
    curve : tuple of SizePoint
        The sample-size curve, by increasing size.
    """

    estimate: np.ndarray
    standard_error: np.ndarray
    confidence_interval: ConfidenceInterval
    confidence_level: float
    method: str
    gamma: np.ndarray
    replicates: int
    subsample_distribution: np.ndarray
    first_subset: np.ndarray
    curve: Tuple[SizePoint, ...]


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------
def subsample(
    statistic: Statistic,
    plan: Plan,
    rng: np.random.Generator,
    *,
    confidence_level: float,
    bounds: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    first_subset: Optional[np.ndarray] = None,
    tick: Optional[Callable[[int], None]] = None,
) -> SubsampleResult:
    """Score the plan's subsets and summarise them into an estimate, SE and interval.

    ``bounds`` gives each score's range ``(low, high)`` (arrays of shape (k,), infinite where
    unbounded) for clipping the interval. ``first_subset`` fixes the first n-subset (the one
    another statistic of the same group used); the rest are drawn from ``rng`` in a fixed
    order, so a seed reproduces every subset. ``tick(1)`` is called after each evaluation.
    """
    point, by_size, first = _run_replicates(statistic, plan, rng, tick or _no_tick, first_subset)
    return _summarise(point, by_size, first, plan, confidence_level, bounds)


def _no_tick(k: int) -> None:
    """A progress tick that does nothing."""


@contextlib.contextmanager
def _blas_threads(single: bool):
    """One BLAS thread for loops of many small decompositions (threads only add overhead there)."""
    if not single:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _run_replicates(statistic: Statistic, plan: Plan, rng, tick: Callable[[int], None],
                    first_idx: Optional[np.ndarray]) -> Tuple[np.ndarray, Dict[int, np.ndarray], np.ndarray]:
    """Evaluate the statistic on the plan's subsets: (R, k) n-subset scores, size -> (B, k), first subset."""
    N, n = plan.N, plan.n
    if N == n:
        point_idx = [np.arange(N)]
    else:
        point_idx = [] if first_idx is None else [first_idx]
        while len(point_idx) < plan.n_point:
            point_idx.append(np.sort(rng.choice(N, n, replace=False)))
    point = []
    by_size = {}
    with _blas_threads(statistic.single_thread(n)):
        for idx in point_idx:
            point.append(statistic(idx))
            tick(1)
    for m, count in plan.reps.items():
        vals = []
        with _blas_threads(statistic.single_thread(m)):
            for _ in range(count):
                idx = np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))
                vals.append(statistic(idx))
                tick(1)
        by_size[m] = np.asarray(vals)
    point = np.asarray(point)
    if N == n:
        by_size.setdefault(N, point[:1])
    return point, by_size, point_idx[0]


def _population_sd(values: np.ndarray, m: int, N: int) -> np.ndarray:
    """Spread of the score of a fresh m-sample from the spread of m-subsets of N items (fpc)."""
    if values.shape[0] < 3 or m >= N:
        return np.full(values.shape[1], np.nan)
    return np.std(values, axis=0, ddof=1) * math.sqrt((N - 1) / (N - m))


def _power_fit(by_size: Dict[int, np.ndarray], N: int, k: int, sizes: Sequence[int]):
    """Per score: (log a, gamma) of s(m) = a m^gamma over ``sizes``; NaN where not estimable."""
    intercept = np.full(k, np.nan)
    gamma = np.full(k, np.nan)
    if len(sizes) == 0:
        return intercept, gamma
    logs = np.log(np.asarray(sizes, dtype=np.float64))
    sds = np.array([_population_sd(by_size[int(m)], int(m), N) for m in sizes]).reshape(len(sizes), k)
    for j in range(k):
        ok = np.isfinite(sds[:, j]) & (sds[:, j] > 0)
        if ok.sum() >= 2:
            x, y = logs[ok], np.log(sds[ok, j])
            g = float(np.clip(np.polyfit(x, y, 1)[0], *GAMMA_RANGE))
            gamma[j] = g
            intercept[j] = float(np.mean(y - g * x))
        elif ok.sum() == 1:
            gamma[j] = 0.0
            intercept[j] = float(np.log(sds[ok, j][0]))
        elif np.all(np.isfinite(sds[:, j])):
            gamma[j] = 0.0
            intercept[j] = -np.inf  # every subset scored the same: no spread
    return intercept, gamma


def _predict_sd(intercept: np.ndarray, gamma: np.ndarray, m: int) -> np.ndarray:
    """The power law a m^gamma at size m."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(intercept + gamma * math.log(m))


def _summarise(point: np.ndarray, by_size: Dict[int, np.ndarray], first: np.ndarray, plan: Plan,
               level: float, bounds) -> SubsampleResult:
    """Estimate, standard error, interval and sample-size curve of every score of one group.

    R n-subsets averaged: SE^2 = (n/N) s(n)^2 + Var_sub/R; a single random n-subset is an iid
    n-sample, so SE = s(n). s(n) is measured on the n-subsets when N >= 2n and R >= 3, else
    extrapolated with the power law fitted on sizes in [M/8, M/2].
    """
    N, n = plan.N, plan.n
    R, k = point.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        estimate = point.mean(axis=0)
        usable = [m for m in fit_sizes(plan.fit_limit, np.asarray(sorted(by_size))) if by_size[int(m)].shape[0] >= 3]
        intercept, gamma = _power_fit(by_size, N, k, usable)
        if N >= 2 * n and R >= 3:
            s_n = _population_sd(point, n, N)
            method = "measured"
        else:
            s_n = _predict_sd(intercept, gamma, n)
            method = "extrapolated"
        if R > 1:
            se = np.sqrt((n / N) * s_n**2 + point.var(axis=0, ddof=1) / R)
        else:
            se = s_n
        curve = []
        for m in sorted(by_size):
            vals = by_size[m]
            measured = _population_sd(vals, m, N) if m <= N / 2 else np.full(k, np.nan)
            sd = np.where(np.isfinite(measured), measured, _predict_sd(intercept, gamma, m))
            curve.append(SizePoint(int(m), vals.mean(axis=0), sd, int(vals.shape[0])))
        if n not in by_size and n < N:
            curve.append(SizePoint(int(n), estimate, s_n, int(R)))
            curve.sort(key=lambda c: c.size)
        # normal interval: the scores are smooth functionals of the items' empirical distribution
        z = normal_quantile(level)
        low, high = estimate - z * se, estimate + z * se
        if bounds is not None:
            lo_b, hi_b = (np.asarray(b, dtype=np.float64) for b in bounds)
            low = np.minimum(np.maximum(low, lo_b), hi_b)
            high = np.minimum(np.maximum(high, lo_b), hi_b)
    for a in (estimate, se, low, high, gamma, point, first, *(c.mean for c in curve), *(c.sd for c in curve)):
        a.setflags(write=False)
    return SubsampleResult(
        estimate=estimate,
        standard_error=se,
        confidence_interval=ConfidenceInterval(low, high),
        confidence_level=float(level),
        method=method,
        gamma=gamma,
        replicates=int(R),
        subsample_distribution=point,
        first_subset=first,
        curve=tuple(curve),
    )
