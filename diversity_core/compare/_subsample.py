r"""The subsampling engine of :func:`~diversity_core.compare.compare`: subsets, spread, interval.

A *statistic* maps the indices of a subset of one group's N items to a vector of k scores
(:mod:`._scores` holds them). The engine

1. plans which subsets to score (:class:`Plan`): R random n-subsets for the estimate (the
   whole group when N = n) and B m-subsets for each size m of the sample-size curve (the
   disjoint blocks of random partitions for m <= N/2);
2. evaluates the statistic on them, drawn **without replacement** from one seeded generator;
3. turns the replicates into an estimate, a standard error with its effective degrees of
   freedom, and an interval :math:`\hat\theta \pm t_{\nu,(1+\text{level})/2}\,\mathrm{SE}`
   clipped to each score's range, returned as a :class:`SubsampleResult` shaped like SciPy's
   ``scipy.stats.bootstrap`` result (``confidence_interval`` with ``low``/``high``,
   ``standard_error``).

The standard error, to first order in the Hoeffding decomposition of the subset average
(see the notes of :mod:`diversity_core.compare`):

.. math::

    \mathrm{SE}^2 = \frac{n}{N}\, s(n)^2 + \frac{\widehat{\mathrm{Var}}_{sub}(n)}{R}

with :math:`s(m)` the spread of a fresh m-sample. :math:`s(n)` is measured on the n-subsets
when :math:`N \ge 2n` (and R >= 3), with the finite-population factor
:math:`\sqrt{(N-1)/(N-n)}`; otherwise it is extrapolated with the power law
:math:`s(m) = a\,m^\gamma` fitted in log-log coordinates on sizes in [M/8, M/2]
(rate-adaptive subsampling, Bertail, Politis & Romano 1999), :math:`\gamma` clipped to
:data:`GAMMA_RANGE`, each :math:`s(m)` the pooled within-partition spread of disjoint blocks
(unbiased for any statistic, no finite-population factor). A single random n-subset is an iid
n-sample, so its SE is :math:`s(n)`. The SE's Monte Carlo noise (delta method, kurtosis of the
replicates) gives its effective degrees of freedom :math:`\nu` (Satterthwaite).
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass
from typing import Callable, Dict, NamedTuple, Optional, Protocol, Sequence, Tuple

import numpy as np
from scipy.special import stdtrit

from .._stats import ConfidenceInterval  # re-exported: the one interval type lives in the plumbing

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
    "blas_threads",
    "t_quantile",
    "welch_df",
]

#: Range of the fitted exponent gamma of the spread s(m) = a m^gamma.
GAMMA_RANGE = (-1.0, 2.0)

#: The interval method in words (recorded in every comparison's settings).
INTERVAL_DESCRIPTION = (
    "Every score is computed at the same n. A group larger than n is scored on random n-subsets drawn "
    "without replacement (no bootstrap: duplicated items would bias diversity scores down) and the scores "
    "are averaged. Standard errors come from subsampling: measured on the n-subsets with the finite-population "
    "correction when a group holds at least 2n items, otherwise extrapolated from subsets of N/8 to N/2 items "
    "with a fitted power law s(m) = a m^gamma (rate-adaptive subsampling), each s(m) measured on the disjoint "
    "blocks of random partitions of the group. SE^2 = (n/N) s(n)^2 + (Monte Carlo variance of the subset "
    "average). The SE's own Monte Carlo noise gives effective degrees of freedom (Satterthwaite), and "
    "intervals are estimate +/- t_df SE at the chosen level; a pairwise difference is resolved when its "
    "interval (SE combined in quadrature, groups independent, Welch-Satterthwaite degrees of freedom) "
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


def spectral_plan(N: int, n: int, n_point: int, n_rep: int, sizes, cost_power: int,
                  spread_rep: Optional[Dict[int, int]] = None) -> Plan:
    """Spectral scores: ``n_rep`` subsets per size up to n, fewer above (cost ~ m^cost_power), 1 at N.

    When the spread at n will be extrapolated (N < 2n, or fewer than 3 n-subsets), the sizes
    of the power-law fit get ``spread_rep[m]`` subsets instead (when larger than ``n_rep``):
    the fit's Monte Carlo noise is what limits the interval there.
    """
    extrapolated = N < 2 * n or n_point < 3
    fit = set(map(int, fit_sizes(N, np.asarray(sizes)))) if extrapolated and spread_rep else set()
    reps = {}
    for m in map(int, sizes):
        if m >= N:
            if N > n:
                reps[m] = 1  # when N == n the estimate's subset is the whole group
        elif m <= n:
            reps[m] = max(n_rep, int(spread_rep.get(m, 0))) if m in fit else n_rep
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
class SizePoint(NamedTuple):
    """One size of the sample-size curve: mean and fresh-sample spread of every score."""

    size: int
    mean: np.ndarray
    sd: np.ndarray
    replicates: int


@dataclass(frozen=True)
class SubsampleResult:
    """Estimate, standard error and interval of k scores of one group (read-only arrays).

    Shaped like the result of ``scipy.stats.bootstrap``: ``confidence_interval`` is a
    :class:`~diversity_core.ConfidenceInterval` ``(low, high)`` at ``confidence_level``,
    ``standard_error`` the SE; ``subsample_distribution`` holds the scores
    of the n-subsets (the counterpart of ``bootstrap_distribution``, one row per subset).

    Attributes
    ----------
    estimate : ndarray of shape (k,)
        Mean of the scores over the n-subsets.
    standard_error : ndarray of shape (k,)
        Standard error of ``estimate`` (NaN where it could not be estimated).
    confidence_interval : ConfidenceInterval
        (:class:`diversity_core.ConfidenceInterval`, arrays of shape (k,), its ``level`` the
        ``confidence_level``) ``estimate -/+ t_df SE``, clipped to the scores' ranges.
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
    df : ndarray of shape (k,)
        Effective degrees of freedom of ``standard_error`` (Satterthwaite; inf when the SE has
        no Monte Carlo noise, NaN where there is no SE); the interval uses the Student-t
        quantile with these degrees of freedom.
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
    df: np.ndarray


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
    point, by_size, labels, first = _run_replicates(statistic, plan, rng, tick or _no_tick, first_subset)
    return _summarise(point, by_size, labels, first, plan, confidence_level, bounds)


def _no_tick(k: int) -> None:
    """A progress tick that does nothing."""


@functools.lru_cache(maxsize=1)
def _threadpool_controller():
    """One ``threadpoolctl.ThreadpoolController`` per process (finding the BLAS libraries costs ~15 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def blas_threads(single: bool):
    """One BLAS thread for loops of many small decompositions (threads only add overhead there)."""
    if not single:
        yield
        return
    with _threadpool_controller().limit(limits=1, user_api="blas"):
        yield


def _run_replicates(statistic: Statistic, plan: Plan, rng, tick: Callable[[int], None],
                    first_idx: Optional[np.ndarray]):
    """Evaluate the statistic on the plan's subsets.

    Returns the (R, k) n-subset scores, ``size -> (B, k)`` scores, ``size -> (B,)`` partition
    labels (sizes up to N/2) and the first n-subset. The m-subsets of a size m <= N/2 are the
    disjoint blocks of random partitions of the group (floor(N/m) blocks each, the last
    partition used in part), so the blocks of one partition are independent fresh m-samples.
    """
    N, n = plan.N, plan.n
    if N == n:
        point_idx = [np.arange(N)]
    else:
        point_idx = [] if first_idx is None else [first_idx]
        while len(point_idx) < plan.n_point:
            point_idx.append(np.sort(rng.choice(N, n, replace=False)))
    point = []
    by_size, labels = {}, {}
    with blas_threads(statistic.single_thread(n)):
        for idx in point_idx:
            point.append(statistic(idx))
            tick(1)
    for m, count in plan.reps.items():
        vals, lab = [], []
        blocks = N // m
        with blas_threads(statistic.single_thread(m)):
            for r in range(count):
                if m >= N:
                    idx = np.arange(N)
                elif blocks >= 2:
                    if r % blocks == 0:
                        perm = rng.permutation(N)
                    b = r % blocks
                    idx = np.sort(perm[b * m : (b + 1) * m])
                    lab.append(r // blocks)
                else:
                    idx = np.sort(rng.choice(N, m, replace=False))
                vals.append(statistic(idx))
                tick(1)
        by_size[m] = np.asarray(vals)
        if lab:
            labels[m] = np.asarray(lab)
    point = np.asarray(point)
    if N == n:
        by_size.setdefault(N, point[:1])
    return point, by_size, labels, point_idx[0]


def _population_sd(values: np.ndarray, m: int, N: int) -> np.ndarray:
    """Spread of the score of a fresh m-sample from the spread of m-subsets of N items (fpc).

    Exact for statistics that are means; for non-linear ones the finite-population factor
    over-corrects (higher-order terms shrink by about 1 - (m/N)^2, not 1 - m/N). Used only
    for the n-subsets of a group of at least 2n items.
    """
    if values.shape[0] < 3 or m >= N:
        return np.full(values.shape[1], np.nan)
    return np.std(values, axis=0, ddof=1) * math.sqrt((N - 1) / (N - m))


def _block_sd(values: np.ndarray, labels: Optional[np.ndarray]) -> Tuple[np.ndarray, int]:
    """Spread of the score of a fresh m-sample from disjoint blocks, and its degrees of freedom.

    The blocks of one random partition are independent m-samples of the group's distribution,
    so the pooled within-partition variance sum_p sum_i (T_pi - mean_p)^2 / sum_p (K_p - 1) is
    unbiased for s(m)^2 for any statistic, with no finite-population factor.
    """
    k = values.shape[1]
    if labels is None:
        return np.full(k, np.nan), 0
    ss = np.zeros(k)
    df = 0
    for p in np.unique(labels):
        v = values[labels == p]
        if v.shape[0] >= 2:
            ss += np.sum((v - v.mean(axis=0)) ** 2, axis=0)
            df += v.shape[0] - 1
    if df < 2:
        return np.full(k, np.nan), df
    return np.sqrt(ss / df), df


def _excess_kurtosis(values: np.ndarray) -> np.ndarray:
    """Per column, the sample excess kurtosis G2 (unbiased for normal data); NaN below 4 rows or no spread."""
    B = values.shape[0]
    if B < 4:
        return np.full(values.shape[1], np.nan)
    dev = values - values.mean(axis=0)
    m2 = np.mean(dev**2, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        g2 = np.mean(dev**4, axis=0) / m2**2 - 3.0
    # G2 = ((B + 1) g2 + 6) (B - 1) / ((B - 2)(B - 3)) removes g2's small-sample bias
    return ((B + 1) * g2 + 6.0) * (B - 1) / ((B - 2) * (B - 3))


def _var_log_sd(B: int, kurtosis: np.ndarray) -> np.ndarray:
    """Variance of log s from B replicates: Var(s^2)/sigma^4 = 2/(B-1) + kappa/B (delta method), over 4.

    ``kurtosis`` is the excess kurtosis kappa of the replicates' distribution (0 for a normal
    one); it is clipped to [-1, 50] so one odd estimate cannot make the spread look exact.
    """
    kappa = np.clip(np.nan_to_num(kurtosis, nan=0.0), -1.0, 50.0)
    return (2.0 / (B - 1) + kappa / B) / 4.0


class _PowerLaw:
    r"""The spread s(m) = a m^gamma fitted per score in log-log coordinates, with its uncertainty.

    Fitted by least squares on the sizes where a spread was measured; gamma clipped to
    :data:`GAMMA_RANGE`. Each measured log s(m_i) carries the Monte Carlo variance v_i of
    :func:`_var_log_sd` (one pooled kurtosis per score), so a prediction
    :math:`\log \hat s(m_0) = \sum_i c_i \log \hat s(m_i)` has variance :math:`\sum_i c_i^2 v_i`
    with the least-squares weights :math:`c_i = 1/k + (x_0 - \bar x)(x_i - \bar x)/S_{xx}`
    (x = log m), or :math:`c_i = 1/k` when gamma was clipped (then fixed).
    """

    def __init__(self, by_size: Dict[int, np.ndarray], labels: Dict[int, np.ndarray], k: int,
                 sizes: Sequence[int]):
        """Fit every score's power law on ``sizes`` (spreads of disjoint blocks, :func:`_block_sd`)."""
        self.intercept = np.full(k, np.nan)
        self.gamma = np.full(k, np.nan)
        self._fits = [None] * k  # per score: (log sizes, variances of log s, gamma clipped?)
        if len(sizes) == 0:
            return
        logs = np.log(np.asarray(sizes, dtype=np.float64))
        spreads = [_block_sd(by_size[int(m)], labels.get(int(m))) for m in sizes]
        sds = np.array([sd for sd, _ in spreads]).reshape(len(sizes), k)
        counts = np.array([df + 1 for _, df in spreads])  # v_i as for df + 1 independent replicates
        kurt = np.array([_excess_kurtosis(by_size[int(m)]) for m in sizes]).reshape(len(sizes), k)
        for j in range(k):
            ok = np.isfinite(sds[:, j]) & (sds[:, j] > 0)
            if ok.sum() == 0:
                if np.all(np.isfinite(sds[:, j])):
                    self.gamma[j] = 0.0
                    self.intercept[j] = -np.inf  # every subset scored the same: no spread
                    self._fits[j] = (logs[:1], np.zeros(1), True)
                continue
            # one kurtosis per score, pooled over the sizes (weights B - 1): per size it is too noisy
            kj = kurt[ok, j]
            fin = np.isfinite(kj)
            pooled = float(np.average(kj[fin], weights=counts[ok][fin] - 1)) if fin.any() else 0.0
            v = np.array([_var_log_sd(int(B), np.array(pooled)) for B in counts[ok]], dtype=np.float64)
            x, y = logs[ok], np.log(sds[ok, j])
            if ok.sum() >= 2:
                raw = float(np.polyfit(x, y, 1)[0])
                g = float(np.clip(raw, *GAMMA_RANGE))
                clipped = g != raw
            else:
                g, clipped = 0.0, True
            self.gamma[j] = g
            self.intercept[j] = float(np.mean(y - g * x))
            self._fits[j] = (x, v, clipped)

    def predict(self, m: int) -> Tuple[np.ndarray, np.ndarray]:
        """(s(m), variance of log s(m)) per score; NaN where not estimable."""
        x0 = math.log(m)
        with np.errstate(invalid="ignore", over="ignore"):
            sd = np.exp(self.intercept + self.gamma * x0)
        var = np.full(self.gamma.shape, np.nan)
        for j, fit in enumerate(self._fits):
            if fit is None:
                continue
            x, v, clipped = fit
            c = np.full(x.size, 1.0 / x.size)
            if not clipped:
                dx = x - x.mean()
                c += (x0 - x.mean()) * dx / np.sum(dx**2)
            var[j] = float(np.sum(c**2 * v))
        return sd, var


def t_quantile(level: float, df) -> np.ndarray:
    """Two-sided Student-t quantile at ``level`` for (possibly fractional) ``df``; normal for df = inf.

    ``df`` below 1 is raised to 1 (the Cauchy quantile) so one unstable spread cannot give an
    unbounded interval; NaN stays NaN.
    """
    df = np.asarray(df, dtype=np.float64)
    return stdtrit(np.where(np.isnan(df), np.nan, np.maximum(df, 1.0)), 0.5 + level / 2.0)


def welch_df(se: Sequence[float], df: Sequence[float]) -> float:
    """Welch-Satterthwaite degrees of freedom of sqrt(sum se_i^2): (sum se_i^2)^2 / sum(se_i^4 / df_i)."""
    se2 = np.square(np.asarray(se, dtype=np.float64))
    df = np.asarray(df, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = float(np.sum(np.where(se2 > 0, se2**2 / df, 0.0)))
    num = float(np.sum(se2)) ** 2
    if not math.isfinite(den) or math.isnan(num):
        return math.nan
    return math.inf if den == 0 else num / den


def _summarise(point: np.ndarray, by_size: Dict[int, np.ndarray], labels: Dict[int, np.ndarray],
               first: np.ndarray, plan: Plan, level: float, bounds) -> SubsampleResult:
    """Estimate, standard error, degrees of freedom, interval and sample-size curve of every score.

    R n-subsets averaged: SE^2 = (n/N) s(n)^2 + Var_sub/R; a single random n-subset is an iid
    n-sample, so SE = s(n). s(n) is measured on the n-subsets when N >= 2n and R >= 3, else
    extrapolated with the power law fitted on sizes in [M/8, M/2]. The SE's own Monte Carlo
    noise is turned into effective degrees of freedom (Satterthwaite: SE^2 behaves like a
    scaled chi^2_nu / nu with nu = 2 / relative variance of SE^2), and the interval is
    estimate +/- t_nu SE.
    """
    N, n = plan.N, plan.n
    R, k = point.shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        estimate = point.mean(axis=0)
        usable = [m for m in fit_sizes(plan.fit_limit, np.asarray(sorted(by_size))) if _block_sd(
            by_size[int(m)], labels.get(int(m)))[1] >= 2]
        law = _PowerLaw(by_size, labels, k, usable)
        # relative variance of Var_sub, the spread of the R n-subsets: 2/(R-1) + kappa/R
        rv_point = 4.0 * _var_log_sd(R, _excess_kurtosis(point)) if R >= 3 else np.full(k, np.nan)
        if N >= 2 * n and R >= 3:
            s_n = _population_sd(point, n, N)
            method = "measured"
            # both terms of SE^2 are multiples of Var_sub: one relative variance
            rv = rv_point
        else:
            s_n, var_log = law.predict(n)
            method = "extrapolated"
            rv_s = 4.0 * var_log  # relative variance of s(n)^2
        if R > 1:
            a = (n / N) * s_n**2
            b = point.var(axis=0, ddof=1) / R
            se = np.sqrt(a + b)
            if method == "extrapolated":
                # independent terms: relative variances add with the squared shares
                rv = (a**2 * rv_s + b**2 * np.nan_to_num(rv_point, nan=2.0 / max(R - 1, 1))) / (a + b) ** 2
        else:
            se = s_n
            rv = rv_s
        df = np.where(rv > 0, 2.0 / rv, np.inf)
        df[~np.isfinite(se)] = np.nan
        curve = []
        for m in sorted(by_size):
            vals = by_size[m]
            measured = _block_sd(vals, labels.get(m))[0]
            sd = np.where(np.isfinite(measured), measured, law.predict(m)[0])
            curve.append(SizePoint(int(m), vals.mean(axis=0), sd, int(vals.shape[0])))
        if n not in by_size and n < N:
            curve.append(SizePoint(int(n), estimate, s_n, int(R)))
            curve.sort(key=lambda c: c.size)
        # Student-t interval: normal in the limit of an exactly known SE (the scores are smooth
        # functionals of the items' empirical distribution), wider by the SE's Monte Carlo noise
        q = t_quantile(level, df)
        low, high = estimate - q * se, estimate + q * se
        if bounds is not None:
            lo_b, hi_b = (np.asarray(b, dtype=np.float64) for b in bounds)
            low = np.minimum(np.maximum(low, lo_b), hi_b)
            high = np.minimum(np.maximum(high, lo_b), hi_b)
    gamma = law.gamma
    for a in (estimate, se, df, low, high, gamma, point, first, *(c.mean for c in curve), *(c.sd for c in curve)):
        a.setflags(write=False)
    return SubsampleResult(
        estimate=estimate,
        standard_error=se,
        confidence_interval=ConfidenceInterval(low, high, level=float(level)),
        confidence_level=float(level),
        method=method,
        gamma=gamma,
        replicates=int(R),
        subsample_distribution=point,
        first_subset=first,
        curve=tuple(curve),
        df=df,
    )
