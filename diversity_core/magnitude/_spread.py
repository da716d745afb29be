"""Willerton's spread: a size of a metric space that needs no linear solve.

:math:`E_t = \\sum_i 1 / \\sum_j e^{-t d_{ij}}` is a lower bound-like companion of magnitude
(equal to it for homogeneous spaces, where every row of :math:`Z_t` has the same sum) that
costs one pass over the distances per scale. The private computes read the distances row
block by row block (from a dense D or from the points), so they never need more than one
block of :math:`Z_t`.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np
from scipy.optimize import brentq

from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._api import _check_fraction, _check_n_scales, _check_scales, _check_t_cut
from ._free import _prepare_any
from ._metric import _cache_rows
from ._results import SpreadFunction
from ._scales import _check_ts, _grid

__all__ = ["spread_function", "spread_at"]

#: brentq on log t for the spread's t_conv stops at this absolute tolerance (relative in t).
_LOG_XTOL = 1e-13


def _spread_values(rows: Callable[[int, int], np.ndarray], n: int, ts: np.ndarray,
                   progress: Optional[ProgressCallback] = None) -> np.ndarray:
    """E_t at every scale of ``ts`` from the distance rows ``rows(i0, i1)`` (one pass over them).

    Each block of rows is read once and exponentiated at every scale; ``E_0 = 1``.
    """
    out = np.zeros(ts.size)
    pos = np.flatnonzero(ts > 0)
    out[ts == 0] = 1.0
    if n == 1:
        out[:] = 1.0
        return out
    step = min(_cache_rows(n), n)
    buf = np.empty((step, n))
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        blk = rows(i0, i1)
        b = buf[: i1 - i0]
        for k in pos:
            np.multiply(blk, -ts[k], out=b)
            np.exp(b, out=b)
            out[k] += float(np.sum(1.0 / b.sum(axis=1)))
        report(progress, i1, n, f"spread: rows {i1} of {n}")
    return out


def _spread_tconv(rows: Callable[[int, int], np.ndarray], n: int, fraction: float, d_ref: float) -> float:
    """The scale with E_t = fraction * n (E_t increases from 1 to n), by brentq on log t."""
    target = fraction * n

    def f(logt: float) -> float:
        return float(_spread_values(rows, n, np.array([math.exp(logt)]))[0]) - target

    lo = hi = math.log(1.0 / d_ref)
    for _ in range(200):
        if f(hi) > 0:
            break
        lo, hi = hi, hi + math.log(4.0)
    while f(lo) > 0:
        lo -= math.log(4.0)
    return math.exp(brentq(f, lo, hi, xtol=_LOG_XTOL, rtol=4 * np.finfo(float).eps, maxiter=200))


def spread_function(
    X_or_D,
    ts: Optional[Sequence[float]] = None,
    *,
    n_scales: int = 30,
    t_cut: Optional[float] = None,
    scales: str = "linear",
    fraction: float = 0.95,
    metric: str = "euclidean",
    p: Optional[float] = None,
    progress: Optional[ProgressCallback] = None,
    method: str = "auto",
) -> SpreadFunction:
    """Willerton's spread on a grid of scales.

    .. math::

        E_t = \\sum_{i=1}^{n} \\frac{1}{\\sum_{j=1}^{n} e^{-t\\, d_{ij}}}

    (Definition 2 of [1]_) over the distinct points: 1 at t = 0, increasing to n. It equals
    magnitude for homogeneous spaces and needs no linear solve (one O(n^2) pass per scale).

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    ts : sequence of float, optional
        Explicit scales ``t >= 0``. Excludes ``t_cut``.
    n_scales : int, default 30
    t_cut : float, optional
        End of the default grid; default: the spread's own convergence scale,
        :math:`E_{t_{conv}} = ` ``fraction`` * n (magnipy's ``Magnipy(X, method="spread")``).
    scales : {"linear", "log"}, default "linear"
        As :func:`magnitude_function`.
    fraction : float, default 0.95
    metric : str, default "euclidean"
        A name of :data:`METRICS`.
    p : float, optional
        Exponent of ``metric="minkowski"``.
    progress : callable, optional
    method : {"auto", "dense", "matrix-free"}, default "auto"
        "matrix-free" reads the distances row block by row block from the points (no n x n
        matrix); "auto" does so when D does not fit the memory budget.

    Returns
    -------
    SpreadFunction

    Raises
    ------
    DiversityInputError
        Bad input, metric or scales.
    MemoryBudgetError
        The distance matrix exceeds the memory budget.

    Warns
    -----
    DuplicatesMergedWarning
        Duplicates were merged (spread is taken over the distinct points, as magnitude).

    References
    ----------
    .. [1] S. Willerton, "Spread: a measure of the size of metric spaces", International
       Journal of Computational Geometry & Applications 25 (2015).

    Examples
    --------
    Two points at distance 1: E_t = 2 / (1 + e^{-t}), equal to their magnitude.

    >>> s = spread_function([[0.0], [1.0]], ts=[0.0, 1.0])
    >>> float(s.values[0]), bool(abs(s.values[1] - 2 / (1 + math.exp(-1.0))) < 1e-12)
    (1.0, True)
    """
    grid = _check_ts(ts) if ts is not None else None
    t_cut = _check_t_cut(t_cut, None, ts=grid)
    n_scales = _check_n_scales(n_scales)
    fraction = _check_fraction(fraction)
    scales = _check_scales(scales)
    space = _prepare_any(X_or_D, metric, p=p, method=method)
    n = space.n
    D = space.D
    rows = space.free.pm.rows if D is None else (lambda i0, i1: D[i0:i1])

    t_conv = None
    if grid is None:
        if t_cut is None:
            if n * fraction <= 1.0:
                raise DiversityInputError(
                    f"the default grid ends at the spread's t_conv, which needs fraction * n_distinct > 1; got "
                    f"{fraction:g} * {n}. Give ts or t_cut."
                )
            sample = D if D is not None else space.free.rows_at(np.unique(np.linspace(0, n - 1, 256).astype(int)))
            positive = sample[sample > 0]
            t_conv = _spread_tconv(rows, n, fraction, float(np.median(positive)))
            t_cut = t_conv
        grid = _grid(t_cut, n_scales, scales)
    values = _spread_values(rows, n, grid, progress)
    return SpreadFunction(ts=grid, values=values, t_conv=t_conv, fraction=fraction, n_points=space.n_points,
                          n_distinct=n, n_merged=space.n_merged, metric=space.metric)


def spread_at(X_or_D, t: float, *, metric: str = "euclidean", p: Optional[float] = None) -> float:
    """Willerton's spread :math:`E_t = \\sum_i 1 / \\sum_j e^{-t d_{ij}}` at one scale.

    See :func:`spread_function` for the definition, parameters and errors.

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    t : float
        Scale ``t >= 0``.
    metric : str, default "euclidean"
    p : float, optional

    Returns
    -------
    float

    Examples
    --------
    Three points pairwise at distance 1 (homogeneous): E_t = 3 / (1 + 2 e^{-t}) = Mag(t).

    >>> D = 1.0 - np.eye(3)
    >>> bool(abs(spread_at(D, 2.0, metric="precomputed") - 3 / (1 + 2 * math.exp(-2.0))) < 1e-12)
    True
    """
    return float(spread_function(X_or_D, [t], metric=metric, p=p).values[0])
