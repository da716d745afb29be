"""Scales: the grid of a magnitude function, the convergence scale t_conv, and the area under a curve.

The private computes here take validated float64 input and never warn: the public functions
in :mod:`._api` and :mod:`._area` validate, merge duplicates and turn the flags returned here
into warnings. :func:`_magnitude_values`, :func:`_convergence_scale_of` and :func:`_area` are
also what the subsampling comparisons (:mod:`diversity_core.compare`) call per replicate.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

import numpy as np
from scipy.integrate import trapezoid
from scipy.optimize import brentq

from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError, NumericalError
from ._metric import _distances, _drop_twins
from ._solvers import ACCURACY_RTOL, _Engine, _Solve

#: Newton on t_conv stops when the relative step is below this.
_TCONV_XTOL = 1e-12
#: Largest residual |1 - Z_t w| of the weighting when Mag'(t) = w^T (D o Z_t) w is wanted: the
#: derivative is linear in the error of w (Mag itself is quadratic in it).
_DERIV_RESIDUAL = 1e-11
#: Per grid step, the CG steps predicted by a failed trial shrink by about this factor (the
#: conditioning of Z_t improves with t); CG is tried again once the prediction fits the budget.
_CG_NEED_DECAY = 0.85


class _Curve(NamedTuple):
    """Mag(t) on a grid with its per-scale flags, as computed (no warnings issued)."""

    ts: np.ndarray
    values: np.ndarray
    errors: np.ndarray
    ill_conditioned: np.ndarray
    singular: np.ndarray
    methods: tuple
    t_conv: Optional[float]
    n_distinct: int
    n_merged: int
    positive: Optional[np.ndarray] = None
    derivatives: Optional[np.ndarray] = None


# --------------------------------------------------------------------------------------------
# Convergence scale
# --------------------------------------------------------------------------------------------


def _mean_field_guess(D: np.ndarray, target: float, k: int = 24, rows: int = 256) -> float:
    """Scale where mean_i 1 / (1 + sum_{j in kNN(i)} exp(-t d_ij)) = target / n.

    Exact for homogeneous spaces (equal row sums of Z_t), and close to t_conv otherwise (it
    treats each point's neighbourhood on its own). Uses ``rows`` evenly spaced sample rows; it
    is only the Newton starting point.
    """
    n = D.shape[0]
    return _mean_field_guess_rows(D[_guess_sample(n, rows)], n, target, k)


def _guess_sample(n: int, rows: int = 256) -> np.ndarray:
    """The evenly spaced sample rows of :func:`_mean_field_guess`."""
    return np.unique(np.linspace(0, n - 1, min(rows, n)).astype(np.intp))


def _mean_field_guess_rows(block: np.ndarray, n: int, target: float, k: int = 24) -> float:
    """:func:`_mean_field_guess` from the distance rows ``block`` of the sample points (of n)."""
    kk = min(k + 1, n)
    near = np.partition(block, kk - 1, axis=1)[:, :kk] if kk < n else block
    positive = near[near > 0]
    if positive.size == 0:
        return 1.0
    goal = target / n * block.shape[0]
    lo, hi = 1e-6 / float(np.median(positive)), 1e6 / float(positive.min())

    def f(logt: float) -> float:
        s = np.exp(-math.exp(logt) * near).sum(axis=1)  # includes the diagonal 1
        return float(np.sum(1.0 / s)) - goal

    if f(math.log(lo)) >= 0 or f(math.log(hi)) <= 0:
        return 1.0 / float(np.median(positive))
    return math.exp(brentq(f, math.log(lo), math.log(hi), xtol=1e-3))


def _evaluate(engine: _Engine, t: float, x_prev: Optional[np.ndarray]) -> _Solve:
    """Form Z_t and solve Z_t w = 1 (warm-started from ``x_prev``)."""
    engine.form(t)
    return engine.solve(x_prev)


def _newton_tconv(engine: _Engine, fraction: float) -> float:
    """Safeguarded Newton on g(t) = log(n - Mag(t)) - log(n - target), bracketing from below.

    g is nearly linear at the scales where Mag approaches n (n - Mag ~ C exp(-a t)), so Newton
    converges in a handful of steps; its derivative uses the exact Mag'(t) = w^T (D o Z_t) w.
    Steps are capped at a factor 4 upward and kept inside the bracket once one is known;
    Z_t is never formed at a scale far above the current estimate.
    """
    n = engine.n
    target = fraction * n
    gap_target = math.log(n - target)
    t = _mean_field_guess(engine.D, target)
    lo, hi = 0.0, math.inf
    x_prev = None
    for _ in range(100):
        res = _evaluate(engine, t, x_prev)
        if res.singular or res.w is None:
            lo = t  # numerically singular only happens below t_conv
            t_new = min(4.0 * t, 0.5 * (t + hi)) if math.isfinite(hi) else 4.0 * t
            t = t_new
            continue
        x_prev = res.w
        mag = res.value
        if mag >= target:
            hi = min(hi, t)
        else:
            lo = max(lo, t)
        if mag >= n:  # round-off at the saturated end: step down
            t = 0.5 * (lo + t)
            continue
        deriv = engine.derivative(res.w)
        g = math.log(n - mag) - gap_target
        dg = -deriv / (n - mag)
        t_new = t - g / dg if dg < 0 and np.isfinite(dg) else math.nan
        if not np.isfinite(t_new) or t_new <= lo or t_new >= hi or t_new > 4.0 * t:
            if math.isfinite(hi):
                t_new = math.sqrt(lo * hi) if lo > 0 else 0.5 * hi
            else:
                t_new = 4.0 * t
        # stop when the step is below 1e-12 relative or below what Mag's own error can resolve
        noise = 2.0 * res.error / deriv if deriv > 0 else 0.0
        if abs(t_new - t) <= _TCONV_XTOL * t + noise:
            return t_new
        t = t_new
    raise NumericalError(
        f"could not find the convergence scale (Mag(t) = {fraction:g} n) in 100 steps; last bracket "
        f"[{lo:.6g}, {hi:.6g}]. The magnitude function may not be increasing for these distances."
    )


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


def _check_ts(ts) -> np.ndarray:
    """Validate explicit scales: a non-empty 1-D sequence of finite t >= 0, returned as a new float64 array."""
    try:
        arr = np.array(ts, dtype=np.float64)
    except (TypeError, ValueError):
        raise DiversityInputError("ts must be a sequence of numbers (scales t >= 0).") from None
    if arr.ndim != 1 or arr.size == 0:
        raise DiversityInputError(f"ts must be a non-empty 1-D sequence of scales; got shape {arr.shape}.")
    if not np.isfinite(arr).all() or np.any(arr < 0):
        raise DiversityInputError("ts must be finite scales t >= 0; got negative, NaN or infinite values.")
    return arr


def _evenly_spaced(ts: np.ndarray) -> Optional[float]:
    """The step h if the positive scales are h, 2h, 3h, ... (to rounding), else None."""
    pos = ts[ts > 0]
    if pos.size < 2:
        return None
    h = pos[0]
    k = pos / h
    if np.allclose(k, np.arange(1, pos.size + 1), rtol=0, atol=1e-9):
        return h
    return None


def _solve_grid(engine: _Engine, ts: np.ndarray, progress: Optional[ProgressCallback], offset: int,
                total: int, derivatives: bool = False, positive: bool = False) -> tuple:
    """Mag at sorted ascending ``ts`` (D may be consumed unless ``derivatives``).

    Returns ``(values, errors, singular, methods, pos, derivs)``: the positive magnitude (sum
    of the positive entries of the weighting) when ``positive`` and Mag'(t) when
    ``derivatives`` (else None), both from the weighting solved to a residual of
    ``_DERIV_RESIDUAL`` (Mag alone only needs the weighting to about the square root of its
    own accuracy: its error is quadratic in the weighting's).
    """
    m = ts.size
    values = np.empty(m)
    errors = np.zeros(m)
    singular = np.zeros(m, dtype=bool)
    pos_mag = np.ones(m) if positive else None
    derivs = np.zeros(m) if derivatives else None
    methods = ["exact"] * m
    scaled = np.flatnonzero(ts > 0)
    values[ts == 0] = 1.0
    # Mag'(t) = w^T (D o Z_t) w needs D: then every Z_t is formed from D instead of by the
    # elementwise powers of exp(-h D) (which overwrite D)
    h = None if derivatives else _evenly_spaced(ts)
    rt = _DERIV_RESIDUAL if (derivatives or positive) else math.inf
    x_prev = x_prev2 = None
    t_prev = t_prev2 = None
    use_cg = False
    cg_need = None  # predicted steps of the last failed CG trial, decayed per scale
    last_t = None
    for count, i in enumerate(scaled):
        t = float(ts[i])
        if last_t is not None and t == last_t:
            values[i], errors[i], singular[i], methods[i] = values[i - 1], errors[i - 1], singular[i - 1], methods[i - 1]
            if pos_mag is not None:
                pos_mag[i] = pos_mag[i - 1]
            if derivs is not None:
                derivs[i] = derivs[i - 1]
        else:
            if h is not None:
                if count == 0:
                    engine.start_grid(h)
                else:
                    engine.step_grid(t)
            else:
                engine.form(t)
            last_t = t
            guess = x_prev
            if x_prev2 is not None:  # linear extrapolation of the weighting in t
                guess = x_prev + (x_prev - x_prev2) * ((t - t_prev) / (t_prev - t_prev2))
            if cg_need is not None:
                cg_need *= _CG_NEED_DECAY
            try_cg = use_cg or (_cg_promising(engine, x_prev) and (cg_need is None or cg_need <= engine.budget_cg))
            res = engine.solve(guess, try_cg=try_cg, residual_tol=rt)
            if engine.last_cg_need is not None:  # capped: CG is tried again within ~8 scales
                cg_need = min(engine.last_cg_need, 4.0 * engine.budget_cg)
            if res.singular:
                values[i], errors[i], singular[i], methods[i] = math.nan, math.nan, True, "singular"
                if pos_mag is not None:
                    pos_mag[i] = math.nan
                if derivs is not None:
                    derivs[i] = math.nan
                x_prev = x_prev2 = None
            else:
                values[i], errors[i], methods[i] = res.value, res.error, res.method
                if pos_mag is not None:
                    pos_mag[i] = float(res.w[res.w > 0].sum())
                if derivs is not None:
                    derivs[i] = engine.derivative(res.w)
                x_prev, x_prev2 = res.w, x_prev
                t_prev, t_prev2 = t, t_prev
                use_cg = res.method == "cg"
        report(progress, offset + count + 1, total, f"scale {count + 1} of {scaled.size} (t = {t:.4g})")
    engine.release()
    return values, errors, singular, tuple(methods), pos_mag, derivs


def _cg_promising(engine: _Engine, x_prev: Optional[np.ndarray]) -> bool:
    """Whether plain CG is worth a try at the next scale, from the previous weighting.

    kappa = sqrt(n) |w| / Mag is a lower bound on cond(Z) (two Rayleigh quotients with w); on
    test point clouds CG needed about 9 kappa steps for a 1e-12 relative error in Mag. The
    trial itself aborts early when its observed rate says it will not pay.
    """
    if x_prev is None:
        return False
    mag = float(x_prev.sum())
    if not mag > 0:
        return False
    kappa = math.sqrt(engine.n) * float(np.linalg.norm(x_prev)) / mag
    return 9.0 * kappa <= engine.budget_cg


def _grid(t_end: float, n_scales: int, scales: str) -> np.ndarray:
    """``n_scales`` scales from 0 to ``t_end``.

    Evenly spaced ("linear"), or 0 followed by ``n_scales - 1`` log-spaced scales from
    ``t_end / n_scales`` ("log", magnipy's log grid).
    """
    if scales == "log":
        return np.concatenate([[0.0], np.geomspace(t_end / n_scales, t_end, n_scales - 1)])
    return np.linspace(0.0, t_end, n_scales)


def _curve_grid(ts: Optional[np.ndarray], t_cut: Optional[float], n_scales: int, scales: str,
                t_conv: Optional[float], find_tconv: Callable[[], float], progress: Optional[ProgressCallback],
                offset: int, total: int, where: str = "") -> tuple:
    """``(grid, t_conv, offset)``: ``ts``, else a grid to ``t_cut``, else to ``find_tconv()`` (one progress step)."""
    if ts is not None:
        return ts, t_conv, offset
    if t_cut is not None:
        return _grid(t_cut, n_scales, scales), t_conv, offset
    report(progress, offset, total, f"finding the convergence scale{where}")
    t_conv = find_tconv()
    report(progress, offset + 1, total, f"convergence scale t_conv = {t_conv:.6g}")
    return _grid(t_conv, n_scales, scales), t_conv, offset + 1


def _curve(D: np.ndarray, ts: Optional[np.ndarray] = None, *, t_cut: Optional[float] = None, n_scales: int = 30,
           fraction: float = 0.95, progress: Optional[ProgressCallback] = None, offset: int = 0,
           total: Optional[int] = None, t_conv: Optional[float] = None, scales: str = "linear",
           derivatives: bool = False, positive: bool = False) -> _Curve:
    """Mag of the distinct points with distances ``D`` (consumed); no warnings.

    On ``ts`` (any order), else on ``n_scales`` scales (``scales``) on ``[0, t_cut]``, else on
    ``[0, t_conv(fraction)]``.
    """
    n = D.shape[0]
    need_tconv = ts is None and t_cut is None
    m = n_scales - 1 if ts is None else int(np.count_nonzero(ts > 0))
    if total is None:
        total = m + (1 if need_tconv else 0)
    if n == 1:
        grid = _grid(t_cut if t_cut is not None else 1.0, n_scales, scales) if ts is None else np.sort(ts)
        report(progress, offset + total, total, "one distinct point")
        zeros = np.zeros(grid.size, dtype=bool)
        return _Curve(grid, np.ones(grid.size), np.zeros(grid.size), zeros, zeros.copy(),
                      ("exact",) * grid.size, t_conv, 1, 0, np.ones(grid.size) if positive else None,
                      np.zeros(grid.size) if derivatives else None)
    engine = _Engine(D)  # the engine owns D now (and overwrites it on an evenly spaced grid)
    grid, t_conv, offset = _curve_grid(ts, t_cut, n_scales, scales, t_conv, lambda: _newton_tconv(engine, fraction),
                                       progress, offset, total)
    order = np.argsort(grid, kind="stable")
    values, errors, singular, methods, pos_mag, derivs = _solve_grid(engine, grid[order], progress, offset, total,
                                                                     derivatives, positive)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    values, errors, singular = values[inv], errors[inv], singular[inv]
    if pos_mag is not None:
        pos_mag = pos_mag[inv]
    if derivs is not None:
        derivs = derivs[inv]
    methods = tuple(methods[j] for j in inv)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.isfinite(values) & (values != 0), errors / np.abs(values), np.inf)
    ill = (rel > ACCURACY_RTOL) & ~singular
    return _Curve(grid, values, errors, ill, singular, methods, t_conv, n, 0, pos_mag, derivs)


def _weighting_at(D: np.ndarray, t: float, residual_tol: float) -> _Solve:
    """Solve Z_t w = 1 at one scale t > 0 for the distinct points with distances ``D`` (left intact)."""
    engine = _Engine(D)
    try:
        engine.form(t)
        return engine.solve(None, try_cg=True, residual_tol=residual_tol)
    finally:
        engine.release()


def _tconv(D: np.ndarray, fraction: float) -> float:
    """t_conv of the distinct points with distances ``D`` (left intact)."""
    n = D.shape[0]
    if n * fraction <= 1.0:
        raise DiversityInputError(
            f"the convergence scale needs fraction * n_distinct > 1 = Mag(0); got {fraction:g} * {n}. "
            "Use more distinct points or a larger fraction."
        )
    engine = _Engine(D)
    try:
        return _newton_tconv(engine, fraction)
    finally:
        engine.release()


def _magnitude_values(X_or_D: np.ndarray, ts: np.ndarray, metric: str, p: Optional[float] = None) -> _Curve:
    """Mag(t) on ``ts`` of validated float64 rows without duplicate rows (or a validated D); no warnings.

    Rows at distance 0 from an earlier one (parallel rows under the cosine distance, or items
    at distance 0 in a D) are merged silently and counted in ``n_merged``. ``X_or_D`` is not
    modified. Singular scales are NaN and flagged, never raised.
    """
    D, twins = _distances(X_or_D, metric, p)
    D, _ = _drop_twins(D, twins)
    return _curve(D, np.asarray(ts, dtype=np.float64))._replace(n_merged=int(np.count_nonzero(twins)))


def _convergence_scale_of(X_or_D: np.ndarray, metric: str, fraction: float = 0.95,
                          p: Optional[float] = None) -> float:
    """t_conv of validated float64 rows without duplicate rows (or a validated D); no warnings.

    Raises DiversityInputError when ``fraction * n_distinct <= 1`` and NumericalError when the
    search fails.
    """
    D, twins = _distances(X_or_D, metric, p)
    D, _ = _drop_twins(D, twins)
    return _tconv(D, fraction)


# --------------------------------------------------------------------------------------------
# Area under a curve
# --------------------------------------------------------------------------------------------


def _area(ts: np.ndarray, values: np.ndarray, t_end: float) -> float:
    """Trapezoid integral over [0, t_end] of a curve sampled on ascending ``ts`` (from 0), linear in a last partial step.

    The nodes up to ``t_end`` (with a relative slack of 1e-12 for a rounded grid end) are
    integrated by the trapezoid rule; when ``t_end`` falls strictly between two nodes the last
    partial step integrates the linear interpolant, i.e. the trapezoid on
    ``[t_k, t_end]`` with the interpolated end value.
    """
    k = int(np.searchsorted(ts, t_end * (1 + 1e-12), side="right"))
    area = float(trapezoid(values[:k], ts[:k]))
    if k < ts.size and t_end > ts[k - 1]:
        frac = (t_end - ts[k - 1]) / (ts[k] - ts[k - 1])
        v_end = values[k - 1] + frac * (values[k] - values[k - 1])
        area += 0.5 * (t_end - ts[k - 1]) * (values[k - 1] + v_end)
    return area
