"""Metric-space magnitude: Mag(t), the magnitude function, t_conv, MagArea and MagDiff.

For a finite metric space with distances :math:`d_{ij}` and a scale :math:`t > 0` the
similarity matrix is :math:`Z_t = \\exp(-t\\,D)` (elementwise) and the magnitude is the sum of
the entries of :math:`Z_t^{-1}`, i.e. :math:`\\mathrm{Mag}(t) = \\mathbf 1^\\top w` with
:math:`Z_t w = \\mathbf 1` (Eq. (1) of [1]_). It counts the "effective number of distinct
points" seen at scale :math:`t`: it rises from :math:`\\mathrm{Mag}(0) := 1` to the number of
distinct points as :math:`t \\to \\infty`.

What lives here
---------------
- :func:`magnitude`, :func:`magnitude_weights`: one scale (a float; or the weights too).
- :func:`magnitude_function`: the curve on a grid of scales (:class:`MagnitudeFunction`).
- :func:`convergence_scale`: :math:`t_{conv}`, where Mag reaches ``fraction`` of the cardinality.
- :func:`mag_area`, :func:`mag_diff`: MagArea and MagDiff with an explicit ``t_cut``.
- :func:`compare_magnitude`: several sets with the paper's conventions for ``t_cut``.

How it is computed
------------------
Exact duplicates are merged first (the twin property: a multiset has the magnitude of its
distinct points), keeping the first occurrences in input order. Each :math:`Z_t` is formed
as ``exp(-t D)`` directly (no ``exp(-D) ** t``, which underflows for distances above ~745), and
on an evenly spaced grid as :math:`Z_{t_k} = Z_{t_1}^{\\circ k}` by elementwise products.
Every solve reports an a-posteriori error estimate and the magnitude is read off with the
variational (second-order) formula :math:`\\mathbf 1^\\top w + w^\\top r`, :math:`r = \\mathbf 1 - Z w`,
whose error is :math:`r^\\top Z^{-1} r`. Solvers, cheapest first:

1. conjugate gradients (CG), warm-started from the previous scale, at the well-conditioned
   large scales (one matrix-vector product per iteration);
2. CG preconditioned by the float32 Cholesky factor of a nearby scale (large ``n``);
3. a float32 Cholesky factor of :math:`Z_t` itself with float64 refinement (preconditioned CG
   whose residuals are formed in float64, so the result has float64 accuracy);
4. a float64 Cholesky factor (``scipy.linalg.cho_factor``/``cho_solve``).

Matrices above 1 GiB (n > ~16000 in float32) are factorised by a blocked Cholesky built on
LAPACK blocks and matrix products: the OpenBLAS ``potrf`` bundled with NumPy/SciPy crashed
(segmentation fault) on 2 GB matrices. Peak memory is about 20 n^2 bytes (D, Z_t and one
float32 factor): 8 GB at n = 20000.

When even the float64 factorisation fails (numerically singular :math:`Z_t`: tiny ``t``,
near-duplicates, or a metric that is not positive definite such as the cosine distance at
small scales) the value is NaN and flagged; values whose estimated relative error exceeds
:data:`ACCURACY_RTOL` are flagged ``ill_conditioned``. No jitter is ever added.

References
----------
.. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
   the Diversity of Latent Representations", NeurIPS 2024.
.. [2] T. Leinster, "The magnitude of metric spaces", Documenta Mathematica 18 (2013).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np
import scipy.linalg as sla
from scipy.integrate import trapezoid
from scipy.optimize import brentq
from scipy.spatial.distance import cdist

from ._progress import ProgressCallback, report
from ._validation import check_distance_matrix, check_features, check_option, check_positive
from .exceptions import ConvergenceWarning, DiversityInputError, DuplicatesMergedWarning, NumericalError

__all__ = [
    "METRICS",
    "ACCURACY_RTOL",
    "MagnitudeResult",
    "MagnitudeFunction",
    "MagAreaResult",
    "MagDiffResult",
    "MagnitudeComparison",
    "magnitude",
    "magnitude_weights",
    "magnitude_function",
    "convergence_scale",
    "mag_area",
    "mag_diff",
    "compare_magnitude",
]

#: Distances accepted by ``metric=``.
METRICS = ("euclidean", "cityblock", "cosine", "precomputed")

#: A value whose estimated relative error exceeds this is flagged ``ill_conditioned``.
ACCURACY_RTOL = 1e-8

#: Relative accuracy every solve aims for (well below :data:`ACCURACY_RTOL`).
_SOLVE_RTOL = 1e-12
#: magnitude_weights iterates until max |1 - Z w| <= this (Mag alone needs far less).
_WEIGHTS_RTOL = 1e-12
#: Newton on t_conv stops when the relative step is below this.
_TCONV_XTOL = 1e-12
#: float32 entries below ~this * 2^-24 are set to zero in the (preconditioner) factor: keeps
#: the float32 Cholesky out of subnormal arithmetic; the float64 refinement is unaffected.
_F32_FLUSH = 1e-30
#: Rows per block in the blocked O(n^2) passes (bounds temporaries to ~_BLOCK * n entries).
_BLOCK = 512
#: Smallest n for which a stale float32 factor is tried as a preconditioner before a new one.
_STALE_MIN_N = 4000
#: Per grid step, the CG steps predicted by a failed trial shrink by about this factor (the
#: conditioning of Z_t improves with t); CG is tried again once the prediction fits the budget.
_CG_NEED_DECAY = 0.85
#: Bytes of one row block in multi-pass elementwise loops: small enough to stay in cache
#: between the passes (they are memory-bound otherwise).
_CACHE_BYTES = 2 << 20
_EPS = float(np.finfo(np.float64).eps)


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    """Plain Python (lists, floats, None for NaN) for ``to_dict``."""
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return None if math.isnan(f) else f
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


@dataclass(frozen=True)
class MagnitudeResult:
    """Magnitude at one scale with its weighting, from :func:`magnitude_weights`.

    Attributes
    ----------
    t : float
        The scale.
    value : float
        :math:`\\mathrm{Mag}(t) = \\sum_i w_i` (NaN when :math:`Z_t` is numerically singular).
    weights : ndarray of shape (n_distinct,)
        The weighting :math:`w` with :math:`Z_t w = \\mathbf 1` (residual at most 1e-12 in each
        entry when the system is well-conditioned), one entry per distinct point.
    indices : ndarray of shape (n_distinct,)
        Row of the input each weight belongs to (the first occurrence of each distinct point).
    error : float
        Estimated absolute error of ``value`` (solver error plus a rounding floor).
    ill_conditioned, singular : bool
        ``error / value > ACCURACY_RTOL``; the float64 Cholesky factorisation failed.
    method : str
        Solver that produced the value (``"exact"``, ``"cg"``, ``"pcg-float32"``,
        ``"cholesky-float32"``, ``"cholesky-float64"``, ``"singular"``).
    n_points, n_distinct, n_merged : int
        Input rows, distinct points, and duplicates merged.
    metric : str
    """

    t: float
    value: float
    weights: np.ndarray
    indices: np.ndarray
    error: float
    ill_conditioned: bool
    singular: bool
    method: str
    n_points: int
    n_distinct: int
    n_merged: int
    metric: str

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class MagnitudeFunction:
    """A magnitude function evaluated on a grid of scales, from :func:`magnitude_function`.

    Attributes
    ----------
    ts, values : ndarray of shape (m,)
        Scales (ascending) and :math:`\\mathrm{Mag}(t)`; ``Mag(0) = 1``. NaN where singular.
    errors : ndarray of shape (m,)
        Estimated absolute error of each value.
    ill_conditioned, singular : ndarray of bool, shape (m,)
        Relative error estimate above :data:`ACCURACY_RTOL`; float64 Cholesky failed (NaN value).
    methods : tuple of str
        Solver used at each scale (see :class:`MagnitudeResult`).
    t_conv : float or None
        Convergence scale when it was computed (default grid), else ``None``.
    fraction : float
        ``Mag(t_conv) = fraction * n_distinct``.
    n_points, n_distinct, n_merged : int
    metric : str
    """

    ts: np.ndarray
    values: np.ndarray
    errors: np.ndarray
    ill_conditioned: np.ndarray
    singular: np.ndarray
    methods: tuple
    t_conv: Optional[float]
    fraction: float
    n_points: int
    n_distinct: int
    n_merged: int
    metric: str

    @property
    def max_rel_error(self) -> float:
        """Largest estimated relative error over the finite values."""
        ok = np.isfinite(self.values) & (self.values != 0)
        if not ok.any():
            return float("nan")
        return float(np.max(self.errors[ok] / np.abs(self.values[ok])))

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        out = {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}
        out["max_rel_error"] = _jsonable(self.max_rel_error)
        return out


@dataclass(frozen=True)
class MagAreaResult:
    """MagArea (Definition 3.3 of [1]), from :func:`mag_area`.

    Attributes
    ----------
    area : float
        :math:`\\int_0^{t_{cut}} \\mathrm{Mag}(t)\\,dt` (trapezoid rule on evenly spaced scales).
    area_scaled : float
        ``area / t_cut`` (the mean magnitude over the interval).
    t_cut : float
    function : MagnitudeFunction
        The curve the area was computed from.
    """

    area: float
    area_scaled: float
    t_cut: float
    function: MagnitudeFunction

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class MagDiffResult:
    """MagDiff (Definition 3.4 of [1]) of a candidate X against Y, from :func:`mag_diff`.

    Attributes
    ----------
    value : float
        :math:`\\int_0^{t_{cut}} (\\mathrm{Mag}_X(t) - \\mathrm{Mag}_Y(t))\\,dt`; positive means X
        is more diverse than Y over the interval.
    value_scaled : float
        ``value / t_cut``.
    relative : float
        ``value`` divided by the reference's area (NaN without a reference).
    t_cut : float
    reference : {"X", "Y"} or None
        Whose ``t_conv`` fixed ``t_cut`` (``None``: the median of both, or ``t_cut`` was given).
    area_x, area_y : float
        MagArea of X and Y on ``[0, t_cut]``.
    t_conv_x, t_conv_y : float or None
    function_x, function_y : MagnitudeFunction
    """

    value: float
    value_scaled: float
    relative: float
    t_cut: float
    reference: Optional[str]
    area_x: float
    area_y: float
    t_conv_x: Optional[float]
    t_conv_y: Optional[float]
    function_x: MagnitudeFunction
    function_y: MagnitudeFunction

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class MagnitudeComparison:
    """Several sets compared with the paper's conventions, from :func:`compare_magnitude`.

    Attributes
    ----------
    names : tuple of str
        The sets, in input order.
    reference : str or None
        The reference set, or ``None`` for a reference-free comparison.
    candidates : tuple of str
        The other sets (all of them without a reference).
    t_cut : float
        Common upper end of the integration interval ``[0, t_cut]``.
    t_cut_rule : {"given", "reference t_conv", "median t_conv"}
    t_conv : dict of str to float or None
        Each set's convergence scale (``None`` when ``t_cut`` was given).
    areas, areas_scaled : dict of str to float
        MagArea on ``[0, t_cut]`` and MagArea / ``t_cut``.
    mag_diff, mag_diff_scaled, mag_diff_relative : dict of str to float
        For each candidate (only with a reference): the integral of ``Mag_candidate - Mag_reference``,
        that over ``t_cut``, and that over the reference's area.
    functions : dict of str to MagnitudeFunction
    """

    names: tuple
    reference: Optional[str]
    candidates: tuple
    t_cut: float
    t_cut_rule: str
    t_conv: dict
    areas: dict
    areas_scaled: dict
    mag_diff: dict
    mag_diff_scaled: dict
    mag_diff_relative: dict
    functions: dict = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return {k: _jsonable(getattr(self, k)) for k in self.__dataclass_fields__}


# --------------------------------------------------------------------------------------------
# Input: validation, duplicates, distances
# --------------------------------------------------------------------------------------------


@dataclass
class _Space:
    """Validated distinct points: their distance matrix (owned, float64, C order) and bookkeeping."""

    D: Optional[np.ndarray]
    indices: np.ndarray
    n_points: int
    metric: str

    @property
    def n(self) -> int:
        return self.indices.size

    @property
    def n_merged(self) -> int:
        return self.n_points - self.n


def _rows_text(rows: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    return shown + (f", ... ({rows.size} in all)" if rows.size > limit else "")


def _warn_merged(name: str, dropped: np.ndarray, n_distinct: int, what: str) -> None:
    warnings.warn(
        f"{name} has {dropped.size} {what} (rows {_rows_text(dropped)} repeat earlier rows); "
        f"magnitude is computed on the {n_distinct} distinct points (the twin property). "
        "Drop the repeats to silence this warning.",
        DuplicatesMergedWarning,
        stacklevel=4,
    )


def _cache_rows(n: int) -> int:
    """Rows of an n-column float64 block that fit in ``_CACHE_BYTES``."""
    return max(8, _CACHE_BYTES // (8 * max(n, 1)))


def _zero_distance_twins(D: np.ndarray) -> np.ndarray:
    """Boolean mask of rows at distance 0 from an earlier row (first occurrences kept)."""
    n = D.shape[0]
    later = np.zeros(n, dtype=bool)
    for i0 in range(0, n, _BLOCK):
        i1 = min(n, i0 + _BLOCK)
        rows, cols = np.divmod(np.flatnonzero(D[i0:i1] == 0), n)
        rows += i0
        pick = cols < rows
        if pick.any():
            later[rows[pick]] = True
    return later


def _pairwise(X: np.ndarray, metric: str) -> tuple:
    """Distance matrix (n x n, float64, C order, exactly symmetric, zero diagonal).

    Returns ``(D, twins)`` where ``twins`` marks rows at distance 0 from an earlier row (or
    ``None`` when the metric's construction rules them out cheaply).
    """
    n = X.shape[0]
    if metric == "euclidean":
        return _euclidean(X)
    if metric == "cityblock":
        D = np.empty((n, n))
        for i0 in range(0, n, _BLOCK):  # |a - b| = |b - a| term by term: exactly symmetric
            i1 = min(n, i0 + _BLOCK)
            cdist(X[i0:i1], X, metric="cityblock", out=D[i0:i1])
    else:  # cosine
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        bad = norms == 0
        if bad.any():
            raise DiversityInputError(
                f"the cosine distance is undefined for all-zero rows; rows {_rows_text(np.flatnonzero(bad))} "
                "are zero. Drop them or use metric='euclidean'."
            )
        U = X / norms[:, None]
        D = U @ U.T  # numpy uses syrk for A @ A.T: exactly symmetric
        np.subtract(1.0, D, out=D)
        np.clip(D, 0.0, 2.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D, _zero_distance_twins(D)


def _euclidean(X: np.ndarray) -> tuple:
    """Euclidean distances by one GEMM, with exact recomputation where cancellation could bite.

    ``|x - y|^2 = |x|^2 + |y|^2 - 2 x.y`` (on centred data) loses relative accuracy when the
    squared distance is small against the squared norms; those pairs (ratio below 1e-2, where
    the relative error would exceed ~1e-13) are recomputed from the differences. Returns
    ``(D, twins)``: zero distances can only come from the recomputed pairs.
    """
    Xc = X - X.mean(axis=0)
    sq = np.einsum("ij,ij->i", Xc, Xc)
    D = Xc @ Xc.T  # syrk: exactly symmetric, and sq_i + sq_j below is symmetric too
    n = X.shape[0]
    twins = np.zeros(n, dtype=bool)
    fallback = False
    step = min(_cache_rows(n), n)
    S = np.empty((step, n))
    mask = np.empty((step, n), dtype=bool)
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        block, Sb, mb = D[i0:i1], S[: i1 - i0], mask[: i1 - i0]
        np.add.outer(sq[i0:i1], sq, out=Sb)
        block *= -2.0
        block += Sb
        Sb *= 1e-2
        np.less(block, Sb, out=mb)  # includes the diagonal and any negative round-off
        rows, cols = np.divmod(np.flatnonzero(mb), n)
        if rows.size > 0.05 * block.size:
            block[...] = cdist(Xc[i0:i1], Xc, metric="sqeuclidean")
            fallback = True
        elif rows.size:
            diff = Xc[rows + i0] - Xc[cols]
            vals = np.einsum("ij,ij->i", diff, diff)
            block[rows, cols] = vals
            zero = (vals == 0.0) & (cols < rows + i0)
            twins[rows[zero] + i0] = True
        np.sqrt(block, out=block)
    if fallback:
        _symmetrize_upper(D)
        np.fill_diagonal(D, 0.0)
        return D, _zero_distance_twins(D)
    np.fill_diagonal(D, 0.0)
    return D, twins


def _symmetrize_upper(D: np.ndarray) -> None:
    """Copy the upper triangle onto the lower one, blockwise (exact symmetry)."""
    n = D.shape[0]
    for i0 in range(0, n, _BLOCK):
        i1 = min(n, i0 + _BLOCK)
        D[i1:, i0:i1] = D[i0:i1, i1:].T
        blk = D[i0:i1, i0:i1]
        iu = np.triu_indices(i1 - i0, 1)
        blk[iu[1], iu[0]] = blk[iu]


def _prepare(X_or_D, metric: str, *, name: str = "X") -> _Space:
    """Validate once, merge duplicates, and build the distance matrix of the distinct points."""
    check_option(metric, METRICS, "metric")
    if metric == "precomputed":
        D = check_distance_matrix(X_or_D, min_samples=1)
        D = np.ascontiguousarray(D, dtype=np.float64)
        n_points = D.shape[0]
        twins = _zero_distance_twins(D)
        keep = np.flatnonzero(~twins)
        if twins.any():
            # a zero distance between distinct items must leave them identical (a pseudometric)
            for j in np.flatnonzero(twins)[:1000]:
                i = int(np.flatnonzero(D[j, :j] == 0)[0])
                if not np.allclose(D[i], D[j], rtol=1e-12, atol=1e-12 * float(D.max())):
                    raise DiversityInputError(
                        f"D[{i}, {j}] = 0 but rows {i} and {j} of D differ; a zero distance must make two "
                        "items interchangeable (D is not a pseudometric). Fix D or merge those items."
                    )
            _warn_merged(name, np.flatnonzero(twins), keep.size, "items at distance 0 from another")
            D = np.ascontiguousarray(D[np.ix_(keep, keep)])
        return _Space(D=D, indices=keep, n_points=n_points, metric=metric)

    X = check_features(X_or_D, name=name, min_samples=1, dtype=(np.float64,))
    X = X + 0.0  # a copy with -0.0 turned into 0.0, so that np.unique sees equal rows as equal
    n_points = X.shape[0]
    _, first = np.unique(X, axis=0, return_index=True)
    keep = np.sort(first)
    if keep.size < n_points:
        dropped = np.setdiff1d(np.arange(n_points), keep)
        _warn_merged(name, dropped, keep.size, "duplicate rows")
        X = X[keep]
    D, twins = _pairwise(np.ascontiguousarray(X), metric)
    if twins.any():  # e.g. parallel rows under the cosine distance, or -0.0 vs 0.0
        sub = np.flatnonzero(~twins)
        _warn_merged(name, keep[twins], sub.size, f"rows at {metric} distance 0 from an earlier row")
        keep = keep[sub]
        D = np.ascontiguousarray(D[np.ix_(sub, sub)])
    return _Space(D=D, indices=keep, n_points=n_points, metric=metric)


# --------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------


@dataclass
class _Solve:
    """One solve of Z_t w = 1."""

    value: float
    w: Optional[np.ndarray]
    error: float
    method: str
    iterations: int = 0
    converged: bool = True
    singular: bool = False
    need: float = 0.0  # predicted total steps when CG gave up early


def _theta_min(alphas: list, betas: list) -> float:
    """Smallest Ritz value of the (preconditioned) operator from the CG coefficients (Lanczos)."""
    k = len(alphas)
    a = np.asarray(alphas)
    d = 1.0 / a
    if k > 1:
        b = np.asarray(betas[: k - 1])
        d[1:] += b / a[:-1]
        e = np.sqrt(b) / a[:-1]
        return float(sla.eigvalsh_tridiagonal(d, e, select="i", select_range=(0, 0))[0])
    return float(d[0])


#: Matrices larger than this are factorised by :func:`_blocked_cholesky` (LAPACK ``potrf`` of
#: the OpenBLAS bundled with NumPy/SciPy crashed on 2 GB matrices on the reference machine).
_LAPACK_MAX_BYTES = 1 << 30
#: Block size of :func:`_blocked_cholesky` and its triangular solves.
_CHOL_BLOCK = 1024


def _blocked_cholesky(A: np.ndarray) -> bool:
    """In-place lower Cholesky factor of a C-ordered symmetric matrix (right-looking, blocked).

    Only the lower triangle of ``A`` is read and written (the upper one is left as it was).
    Diagonal blocks go to LAPACK (``scipy.linalg.cholesky``), panels to ``solve_triangular`` and
    the trailing updates to matrix products, all on operands of at most ``_CHOL_BLOCK`` x n
    entries. Returns False when a diagonal block is not positive definite.
    """
    n = A.shape[0]
    b = _CHOL_BLOCK
    for k0 in range(0, n, b):
        k1 = min(n, k0 + b)
        try:
            L11 = sla.cholesky(A[k0:k1, k0:k1], lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return False
        if not np.isfinite(L11[-1, -1]):
            return False
        A[k0:k1, k0:k1] = L11
        if k1 == n:
            break
        # L21 = A21 L11^{-T}, i.e. L11 L21^T = A21^T
        L21 = sla.solve_triangular(L11, A[k1:, k0:k1].T, lower=True, check_finite=False).T
        A[k1:, k0:k1] = L21
        for j0 in range(k1, n, b):  # A22 -= L21 L21^T on and below the diagonal blocks
            j1 = min(n, j0 + b)
            A[j0:, j0:j1] -= L21[j0 - k1:] @ L21[j0 - k1 : j1 - k1].T
    return True


def _blocked_cho_solve(L: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Solve (L L^T) x = r with the lower factor from :func:`_blocked_cholesky`."""
    n = L.shape[0]
    b = _CHOL_BLOCK
    y = np.array(r, dtype=L.dtype)
    for k0 in range(0, n, b):  # forward: L y = r
        k1 = min(n, k0 + b)
        if k0:
            y[k0:k1] -= L[k0:k1, :k0] @ y[:k0]
        y[k0:k1] = sla.solve_triangular(L[k0:k1, k0:k1], y[k0:k1], lower=True, check_finite=False)
    starts = list(range(0, n, b))
    for k0 in reversed(starts):  # backward: L^T x = y
        k1 = min(n, k0 + b)
        if k1 < n:
            y[k0:k1] -= L[k1:, k0:k1].T @ y[k1:]
        y[k0:k1] = sla.solve_triangular(L[k0:k1, k0:k1], y[k0:k1], lower=True, trans="T", check_finite=False)
    return y


def _cholesky(A: np.ndarray, *, overwrite: bool) -> Optional[tuple]:
    """Cholesky factor of symmetric ``A`` as ``(kind, factor, lower)``; None if not PD.

    LAPACK through ``cho_factor`` up to ``_LAPACK_MAX_BYTES``, the blocked version above it.
    """
    if A.nbytes <= _LAPACK_MAX_BYTES:
        try:
            # A.T is the Fortran-ordered view of the symmetric A: factorised in place when allowed
            c, lower = sla.cho_factor(A.T if overwrite else A, lower=True, overwrite_a=overwrite,
                                      check_finite=False)
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(c[-1, -1]):
            return None
        return ("lapack", c, lower)
    L = A if overwrite else A.copy()
    if not _blocked_cholesky(L):
        return None
    return ("blocked", L, True)


def _cho_apply(factor: tuple, r: np.ndarray) -> np.ndarray:
    """Solve with a factor from :func:`_cholesky` (in the factor's precision)."""
    kind, c, lower = factor
    if kind == "lapack":
        return sla.cho_solve((c, lower), r, check_finite=False)
    return _blocked_cho_solve(c, r)


class _Engine:
    """Holds D, the current Z_t and at most one factor; solves Z_t w = 1 at increasing scales.

    Memory: D (or the grid step E = exp(-h D), which replaces it), Z, and one factor buffer
    (float32, or float64 on fallback): about 20 n^2 bytes.
    """

    def __init__(self, D: np.ndarray):
        self.D = D
        self.E: Optional[np.ndarray] = None
        self.n = D.shape[0]
        self.Z = np.empty_like(D)
        self.t: Optional[float] = None
        self.ones = np.ones(self.n)
        self._f32: Optional[np.ndarray] = None
        self._factor = None  # ((kind, factor, lower), dtype) of the last factorisation
        self._factor_t: Optional[float] = None
        self.last_cg_need: Optional[float] = None  # predicted CG steps of the last failed trial
        # iteration budgets. A float32 Cholesky costs n^3 / 3 flops at a high rate, a CG step one
        # memory-bound product with Z (8 n^2 bytes); on two cores their ratio is about n / 300, and
        # the factor path adds ~5 products of its own. CG pays up to that many steps; a step
        # preconditioned by a stale factor costs about two products, and beats a fresh
        # factorisation only for larger n.
        self.budget_cg = int(np.clip(self.n // 300 + 5, 10, 300))
        self.budget_stale = int(np.clip(self.budget_cg // 2, 4, 150)) if self.n >= _STALE_MIN_N else 0

    # -- forming Z ------------------------------------------------------------------------
    def form(self, t: float) -> None:
        """Z = exp(-t D), formed directly."""
        np.multiply(self.D, -t, out=self.Z)
        np.exp(self.Z, out=self.Z)
        self.t = t

    def start_grid(self, h: float) -> None:
        """Replace D by E = exp(-h D) (D is no longer needed) and set Z = E."""
        np.multiply(self.D, -h, out=self.D)
        np.exp(self.D, out=self.D)
        self.E, self.D = self.D, None
        np.copyto(self.Z, self.E)
        self.t = h

    def step_grid(self, t: float) -> None:
        """Z(t + h) = Z(t) * E, elementwise."""
        np.multiply(self.Z, self.E, out=self.Z)
        self.t = t

    def derivative(self, w: np.ndarray) -> float:
        """Mag'(t) = w^T (D o Z_t) w, blockwise through a cache-sized buffer (no n x n temporary)."""
        step = min(_cache_rows(self.n), self.n)
        buf = np.empty((step, self.n))
        total = 0.0
        for i0 in range(0, self.n, step):
            i1 = min(self.n, i0 + step)
            blk = buf[: i1 - i0]
            np.multiply(self.D[i0:i1], self.Z[i0:i1], out=blk)
            total += float(w[i0:i1] @ (blk @ w))
        return total

    # -- preconditioners --------------------------------------------------------------------
    def _factor32(self) -> bool:
        """Float32 Cholesky factor of the current Z (in a reused buffer). False if not PD."""
        self._factor = None
        if self._f32 is None:
            self._f32 = np.empty((self.n, self.n), dtype=np.float32)
        F = self._f32
        flush = np.float32(_F32_FLUSH)
        step = min(2 * _cache_rows(self.n), self.n)
        for i0 in range(0, self.n, step):
            i1 = min(self.n, i0 + step)
            blk = F[i0:i1]
            np.copyto(blk, self.Z[i0:i1], casting="same_kind")
            # (x + f) - f rounds every x below f * 2^-24 (all float32 subnormals) to exactly 0
            # and moves the others by at most ulp(f): harmless in a preconditioner
            np.add(blk, flush, out=blk)
            np.subtract(blk, flush, out=blk)
        factor = _cholesky(F, overwrite=True)
        if factor is None:
            return False
        self._factor = (factor, np.float32)
        self._factor_t = self.t
        return True

    def _factor64(self) -> bool:
        """Float64 Cholesky factor of the current Z (frees the float32 buffer). False if not PD."""
        self._factor = None
        self._f32 = None
        factor = _cholesky(self.Z, overwrite=False)
        if factor is None:
            return False
        self._factor = (factor, np.float64)
        self._factor_t = self.t
        return True

    def _apply(self, r: np.ndarray) -> np.ndarray:
        """z = M^{-1} r with the current factor (scaled so that float32 never underflows)."""
        factor, dtype = self._factor
        if dtype is np.float64:
            return _cho_apply(factor, r)
        s = float(np.max(np.abs(r)))
        if s == 0.0 or not np.isfinite(s):
            return np.zeros_like(r)
        y = _cho_apply(factor, (r / s).astype(np.float32))
        return y.astype(np.float64) * s

    # -- (preconditioned) conjugate gradients ---------------------------------------------
    def _pcg(self, precondition: bool, x0: Optional[np.ndarray], max_iter: int, method: str,
             residual_tol: float = math.inf) -> _Solve:
        """CG on Z w = 1 with the variational estimate and a Ritz-value error estimate.

        ``value = 1^T x + x^T r`` has error ``r^T Z^{-1} r <= (r^T M^{-1} r) / lambda_min(M^{-1} Z)``;
        lambda_min is estimated by the smallest Ritz value of the CG-Lanczos tridiagonal matrix.
        Aborts early when the observed convergence rate predicts more than ``max_iter`` steps.
        With a finite ``residual_tol`` it also iterates until ``max |1 - Z x| <= residual_tol``
        (the weights themselves, not just Mag, to that accuracy).
        """
        Z, b = self.Z, self.ones
        apply = self._apply if precondition else (lambda v: v)
        if x0 is None:
            x = np.zeros(self.n)
            r = b.copy()
        else:
            y = Z @ x0
            xy = float(x0 @ y)
            if not (xy > 0 and np.isfinite(xy)):
                return _Solve(math.nan, None, math.inf, method, 0, converged=False)
            alpha0 = float(b @ x0) / xy  # best multiple of the warm start in the Z-norm
            x = alpha0 * x0
            r = b - alpha0 * y
        z = apply(r)
        rz = float(r @ z)
        p = z.copy()
        alphas: list = []
        betas: list = []
        rzs = [rz]
        theta = math.inf  # smallest Ritz value; only decreases, so a stale one underestimates err
        restarts = 0
        k = 0
        while k < max_iter:
            q = Z @ p
            pq = float(p @ q)
            if not (pq > 0 and np.isfinite(pq)):
                return _Solve(math.nan, None, math.inf, method, k, converged=False)
            a = rz / pq
            x += a * p
            r -= a * q
            z = apply(r)
            rz_new = float(r @ z)
            alphas.append(a)
            k += 1
            value = float(x.sum() + x @ r)
            theta = min(theta, 1.0 / alphas[0])
            err = rz_new / theta
            small = residual_tol == math.inf or float(np.max(np.abs(r))) <= residual_tol
            if small and err <= _SOLVE_RTOL * abs(value):  # a candidate: refresh the Ritz value
                theta = max(_theta_min(alphas, betas), 1e-300)
                err = rz_new / theta
            if small and err <= _SOLVE_RTOL * abs(value):
                if k <= 10 and restarts == 0:
                    return self._finish(x, value, err, method, k)
                # after many steps confirm with the true residual (the recursive one drifts)
                r = b - Z @ x
                z = apply(r)
                rz_true = float(r @ z)
                value = float(x.sum() + x @ r)
                err = abs(rz_true) / theta
                small = residual_tol == math.inf or float(np.max(np.abs(r))) <= 10 * residual_tol
                if (small and err <= 10 * _SOLVE_RTOL * abs(value)) or restarts >= 2:
                    return self._finish(x, value, err, method, k)
                restarts += 1
                rz = rz_true
                p = z.copy()
                alphas, betas, rzs = [], [], [rz]
                continue
            if rz_new <= 0 or not np.isfinite(rz_new):
                return _Solve(math.nan, None, math.inf, method, k, converged=False)
            rzs.append(rz_new)
            if len(rzs) >= 4:  # predict the remaining steps from the observed rate
                rate = (rzs[-1] / rzs[-4]) ** (1.0 / 3.0)
                if rate >= 1.0:
                    return _Solve(value, x, err, method, k, converged=False, need=math.inf)
                need = math.log(_SOLVE_RTOL * abs(value) / err) / math.log(rate)
                if residual_tol != math.inf:  # the residual converges at the square root of that rate
                    need = max(need, 2.0 * math.log(residual_tol / float(np.max(np.abs(r)))) / math.log(rate))
                if k + need > max_iter:
                    return _Solve(value, x, err, method, k, converged=False, need=k + need)
            beta = rz_new / rz
            betas.append(beta)
            p = z + beta * p
            rz = rz_new
        if alphas:
            theta = max(_theta_min(alphas, betas), 1e-300)
            err = rz_new / theta
        return _Solve(value, x, err, method, k, converged=False)

    def _finish(self, x: np.ndarray, value: float, err: float, method: str, k: int) -> _Solve:
        """Add the rounding floor sqrt(n) eps |x|^T Z |x| of the float64 residuals.

        (The probabilistic rounding-error bound of an n-term sum; the worst case n eps is
        orders of magnitude pessimistic: at n = 20000 the solves agreed with a float64 Cholesky
        solve to 2e-16 where n eps |x|^T Z |x| / Mag was 1e-8.)

        With x = x+ - x- and Z x ~ 1 (Z >= 0 elementwise, entries <= 1):
        |x|^T Z |x| = x^T Z x + 4 x-^T Z x + 4 x-^T Z x- <= |value| + 4 s (1 + tol) + 4 s^2,
        s = sum(x-), which needs no extra product with Z.
        """
        neg = float(-x[x < 0].sum())
        absq = abs(value) + 4.0 * neg * (1.0 + 1e-6) + 4.0 * neg * neg
        floor = math.sqrt(self.n) * _EPS * absq
        return _Solve(value, x, err + floor, method, k, converged=True)

    # -- strategy -------------------------------------------------------------------------
    def solve(self, x_prev: Optional[np.ndarray] = None, *, try_cg: bool = True,
              residual_tol: float = math.inf) -> _Solve:
        """Solve at the current Z with the cheapest solver that reaches the tolerance."""
        rt = residual_tol
        self.last_cg_need = None
        if try_cg:
            res = self._pcg(False, x_prev, self.budget_cg, "cg", rt)
            if res.converged:
                return res
            self.last_cg_need = res.need or math.inf
        if (self.budget_stale and self._factor is not None and self._factor[1] is np.float32
                and self._factor_t != self.t):
            res = self._pcg(True, x_prev, self.budget_stale, "pcg-float32", rt)
            if res.converged:
                return res
        best: Optional[_Solve] = None
        if self._factor32():
            res = self._pcg(True, None, 40, "cholesky-float32", rt)
            if res.converged:
                return res
            best = res
        if self._factor64():
            res = self._pcg(True, None, 20, "cholesky-float64", rt)
            self._factor = None  # a float64 factor is not kept as a preconditioner
            if res.w is not None:
                if not res.converged:
                    res = self._finish(res.w, res.value, res.error, res.method, res.iterations)
                return res
        if best is not None and best.w is not None:
            return self._finish(best.w, best.value, best.error, best.method, best.iterations)
        return _Solve(math.nan, None, math.inf, "singular", 0, converged=False, singular=True)

    def release(self) -> None:
        """Drop the factor buffers."""
        self._factor = None
        self._f32 = None


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
    kk = min(k + 1, n)
    sample = np.unique(np.linspace(0, n - 1, min(rows, n)).astype(np.intp))
    block = D[sample]
    near = np.partition(block, kk - 1, axis=1)[:, :kk] if kk < n else block
    positive = near[near > 0]
    if positive.size == 0:
        return 1.0
    goal = target / n * sample.size
    lo, hi = 1e-6 / float(np.median(positive)), 1e6 / float(positive.min())

    def f(logt: float) -> float:
        s = np.exp(-math.exp(logt) * near).sum(axis=1)  # includes the diagonal 1
        return float(np.sum(1.0 / s)) - goal

    if f(math.log(lo)) >= 0 or f(math.log(hi)) <= 0:
        return 1.0 / float(np.median(positive))
    return math.exp(brentq(f, math.log(lo), math.log(hi), xtol=1e-3))


def _evaluate(engine: _Engine, t: float, x_prev: Optional[np.ndarray]) -> _Solve:
    engine.form(t)
    return engine.solve(x_prev)


def _convergence_scale(engine: _Engine, fraction: float) -> float:
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
    try:
        arr = np.asarray(ts, dtype=np.float64)
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
                total: int) -> tuple:
    """Mag at sorted ascending ``ts`` (D may be consumed). Returns arrays and methods."""
    m = ts.size
    values = np.empty(m)
    errors = np.zeros(m)
    singular = np.zeros(m, dtype=bool)
    methods = ["exact"] * m
    positive = np.flatnonzero(ts > 0)
    values[ts == 0] = 1.0
    h = _evenly_spaced(ts)
    x_prev = x_prev2 = None
    t_prev = t_prev2 = None
    use_cg = False
    cg_need = None  # predicted steps of the last failed CG trial, decayed per scale
    last_t = None
    for count, i in enumerate(positive):
        t = float(ts[i])
        if last_t is not None and t == last_t:
            values[i], errors[i], singular[i], methods[i] = values[i - 1], errors[i - 1], singular[i - 1], methods[i - 1]
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
            res = engine.solve(guess, try_cg=try_cg)
            if engine.last_cg_need is not None:  # capped: CG is tried again within ~8 scales
                cg_need = min(engine.last_cg_need, 4.0 * engine.budget_cg)
            if res.singular:
                values[i], errors[i], singular[i], methods[i] = math.nan, math.nan, True, "singular"
                x_prev = x_prev2 = None
            else:
                values[i], errors[i], methods[i] = res.value, res.error, res.method
                x_prev, x_prev2 = res.w, x_prev
                t_prev, t_prev2 = t, t_prev
                use_cg = res.method == "cg"
        report(progress, offset + count + 1, total, f"scale {count + 1} of {positive.size} (t = {t:.4g})")
    engine.release()
    return values, errors, singular, tuple(methods)


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


def _function_from_space(space: _Space, ts: Optional[np.ndarray], *, n_scales: int, t_max: Optional[float],
                         fraction: float, progress: Optional[ProgressCallback], offset: int = 0,
                         total: Optional[int] = None, t_conv: Optional[float] = None) -> MagnitudeFunction:
    """The magnitude function of a prepared space (consumes ``space.D``)."""
    n = space.n
    need_tconv = ts is None and t_max is None
    m = n_scales - 1 if ts is None else int(np.count_nonzero(ts > 0))
    if total is None:
        total = m + (1 if need_tconv else 0)
    if n == 1:
        grid = np.linspace(0.0, t_max if t_max is not None else 1.0, n_scales) if ts is None else np.sort(ts)
        report(progress, offset + total, total, "one distinct point")
        ones = np.ones(grid.size)
        return MagnitudeFunction(grid, ones, np.zeros(grid.size), np.zeros(grid.size, bool),
                                 np.zeros(grid.size, bool), ("exact",) * grid.size, t_conv, fraction,
                                 space.n_points, 1, space.n_merged, space.metric)
    engine = _Engine(space.D)
    space.D = None  # the engine owns it now (and overwrites it on an evenly spaced grid)
    if need_tconv:
        report(progress, offset, total, "finding the convergence scale")
        t_conv = _convergence_scale(engine, fraction)
        offset += 1
        report(progress, offset, total, f"convergence scale t_conv = {t_conv:.6g}")
        grid = np.linspace(0.0, t_conv, n_scales)
    elif ts is None:
        grid = np.linspace(0.0, t_max, n_scales)
    else:
        grid = ts
    order = np.argsort(grid, kind="stable")
    sorted_ts = grid[order]
    values, errors, singular, methods = _solve_grid(engine, sorted_ts, progress, offset, total)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    values, errors, singular = values[inv], errors[inv], singular[inv]
    methods = tuple(methods[j] for j in inv)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.isfinite(values) & (values != 0), errors / np.abs(values), np.inf)
    ill = (rel > ACCURACY_RTOL) & ~singular
    if singular.any() or ill.any():
        bad = grid[singular | ill]
        warnings.warn(
            f"Z_t is numerically singular at {int(singular.sum())} and ill-conditioned at {int(ill.sum())} "
            f"of {grid.size} scales (t = {', '.join(f'{v:.3g}' for v in bad[:5])}{', ...' if bad.size > 5 else ''}); "
            "those values are flagged in the result (singular ones are NaN). Near-duplicate points, very "
            "small scales, or a metric that is not positive definite (cosine) cause this.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return MagnitudeFunction(grid, values, errors, ill, singular, methods, t_conv, fraction,
                             space.n_points, n, space.n_merged, space.metric)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _check_fraction(fraction) -> float:
    f = check_positive(fraction, "fraction")
    if not 0 < f < 1:
        raise DiversityInputError(f"fraction must lie strictly between 0 and 1; got {fraction!r}.")
    return f


def _check_n_scales(n_scales) -> int:
    if isinstance(n_scales, bool) or not isinstance(n_scales, (int, np.integer)) or n_scales < 2:
        raise DiversityInputError(f"n_scales must be an integer >= 2; got {n_scales!r}.")
    return int(n_scales)


def _tconv_of_space(space: _Space, fraction: float) -> float:
    if space.n * fraction <= 1.0:
        raise DiversityInputError(
            f"the convergence scale needs fraction * n_distinct > 1 = Mag(0); got {fraction:g} * {space.n}. "
            "Use more distinct points or a larger fraction."
        )
    engine = _Engine(space.D)
    try:
        return _convergence_scale(engine, fraction)
    finally:
        engine.release()


def magnitude_weights(X_or_D, t: float, *, metric: str = "euclidean") -> MagnitudeResult:
    """Magnitude at one scale together with its weighting vector.

    .. math::

        Z_t = \\exp(-t D), \\qquad Z_t w = \\mathbf 1, \\qquad \\mathrm{Mag}(t) = \\mathbf 1^\\top w
        = \\sum_{ij} (Z_t^{-1})_{ij}

    (Eq. (1) of [1]_ applied to the scaled space :math:`tX`, Definition 3.2). :math:`D` holds the
    distances between the distinct points, :math:`w` is the weighting.

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
        Points (rows), or a distance matrix (square, symmetric, finite, zero diagonal, >= 0).
    t : float
        Scale, ``t >= 0``; ``Mag(0) = 1`` by convention (the one-point property).
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"

    Returns
    -------
    MagnitudeResult

    Raises
    ------
    DiversityInputError
        Bad input or metric, or ``t < 0``.
    NumericalError
        :math:`Z_t` is numerically singular (float64 Cholesky fails): tiny ``t``,
        near-duplicate points, or a distance that is not positive definite.

    Warns
    -----
    DuplicatesMergedWarning
        Exact duplicates (or points at distance 0) were merged.

    Notes
    -----
    Cost: the distance matrix, then one solve, O(n^3) at worst (a Cholesky factorisation) and
    O(k n^2) at well-conditioned scales (k conjugate-gradient steps). ``error`` estimates the
    absolute error of ``value``; ``ill_conditioned`` says it exceeds ``ACCURACY_RTOL * value``.

    Examples
    --------
    Two points at distance 1: Mag(t) = 2 / (1 + exp(-t)).

    >>> r = magnitude_weights([[0.0], [1.0]], 2.0)
    >>> abs(r.value - 2 / (1 + math.exp(-2.0))) < 1e-12, r.weights.shape
    (True, (2,))
    """
    t = check_positive(t, "t", allow_zero=True)
    space = _prepare(X_or_D, metric)
    n = space.n
    common = dict(t=t, indices=space.indices, n_points=space.n_points, n_distinct=n,
                  n_merged=space.n_merged, metric=metric)
    if t == 0.0 or n == 1:
        w = np.full(n, 1.0 / n) if t == 0.0 else np.ones(1)
        return MagnitudeResult(value=1.0, weights=w, error=0.0, ill_conditioned=False, singular=False,
                               method="exact", **common)
    engine = _Engine(space.D)
    engine.form(t)
    res = engine.solve(None, try_cg=True, residual_tol=_WEIGHTS_RTOL)
    engine.release()
    if res.singular or res.w is None:
        raise NumericalError(
            f"Z_t = exp(-t D) is numerically singular at t = {t:g} (its float64 Cholesky factorisation "
            "failed). Use a larger t, merge near-duplicate points, or use a positive definite metric "
            "(euclidean or cityblock)."
        )
    rel = res.error / abs(res.value) if res.value else math.inf
    return MagnitudeResult(value=res.value, weights=res.w, error=res.error, ill_conditioned=bool(rel > ACCURACY_RTOL),
                           singular=False, method=res.method, **common)


def magnitude(X_or_D, t: float, *, metric: str = "euclidean") -> float:
    """Magnitude of the points (or distances) at scale ``t``: the sum of the entries of Z_t^{-1}.

    .. math::

        \\mathrm{Mag}(t) = \\sum_{ij} (Z_t^{-1})_{ij}, \\qquad (Z_t)_{ij} = e^{-t\\, d_{ij}}

    (Eq. (1) and Definition 3.2 of [1]_), over the distinct points; ``Mag(0) = 1``. See
    :func:`magnitude_weights` for the weighting and an error estimate, and for parameters,
    errors and costs.

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    t : float
        Scale ``t >= 0``.
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"

    Returns
    -------
    float

    Raises
    ------
    DiversityInputError, NumericalError
        As :func:`magnitude_weights`.

    Warns
    -----
    DuplicatesMergedWarning
        Duplicates were merged. ``ConvergenceWarning`` when the value is ill-conditioned.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0]])   # gaps 1 and 2 on a line
    >>> v = magnitude(X, 0.7)
    >>> bool(abs(v - (1 + math.tanh(0.35) + math.tanh(0.7))) < 1e-12)
    True
    """
    res = magnitude_weights(X_or_D, t, metric=metric)
    if res.ill_conditioned:
        warnings.warn(
            f"Mag({t:g}) = {res.value:.12g} has an estimated relative error of {res.error / abs(res.value):.2g} "
            f"(above {ACCURACY_RTOL:g}): Z_t is ill-conditioned (near-duplicates or a very small t).",
            ConvergenceWarning,
            stacklevel=2,
        )
    return res.value


def magnitude_function(
    X_or_D,
    ts: Optional[Sequence[float]] = None,
    *,
    n_scales: int = 30,
    t_max: Optional[float] = None,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
) -> MagnitudeFunction:
    """The magnitude function t -> Mag(t) on a grid of scales (Definition 3.2 of [1]_).

    .. math::

        \\mathrm{Mag}(t) = \\mathbf 1^\\top Z_t^{-1} \\mathbf 1, \\quad Z_t = e^{-tD}, \\quad
        \\mathrm{Mag}(0) := 1, \\quad \\lim_{t\\to\\infty} \\mathrm{Mag}(t) = n

    Default grid as in [1]_: ``n_scales`` evenly spaced scales on ``[0, t_conv]`` (see
    :func:`convergence_scale`), or on ``[0, t_max]`` when ``t_max`` is given.

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    ts : sequence of float, optional
        Explicit scales ``t >= 0`` (any order; duplicates allowed). Excludes ``t_max``.
    n_scales : int, default 30
        Number of grid scales (including t = 0) when ``ts`` is not given.
    t_max : float, optional
        Upper end of the default grid instead of ``t_conv``.
    fraction : float, default 0.95
        ``t_conv`` solves ``Mag(t_conv) = fraction * n`` (only used for the default grid).
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"
    progress : callable, optional
        ``progress(done, total, message)``: the convergence scale, then "scale i of m".

    Returns
    -------
    MagnitudeFunction
        Values with per-scale error estimates and flags; ``t_conv`` when it was computed.

    Raises
    ------
    DiversityInputError
        Bad input, metric, scales, ``n_scales < 2``, or both ``ts`` and ``t_max``.
    NumericalError
        ``t_conv`` could not be found.

    Warns
    -----
    DuplicatesMergedWarning
        Duplicates were merged.
    ConvergenceWarning
        Some scales are numerically singular (NaN) or ill-conditioned (flagged).

    Notes
    -----
    Cost: one O(n^2 d) distance matrix; ``t_conv`` by Newton steps near ``t_conv``, where
    :math:`Z_t` is well-conditioned and CG needs a few O(n^2) products; then one solve per
    scale: CG at the large scales, float32 Cholesky factorisations (O(n^3 / 3), about half the
    float64 cost) refined to float64 accuracy at the small ones. On an evenly spaced grid
    :math:`Z_{t_k} = Z_{t_1}^{\\circ k}` costs one elementwise product per scale instead of an
    ``exp``. Memory: about 20 n^2 bytes (8 GB at n = 20000).

    Examples
    --------
    >>> f = magnitude_function([[0.0], [1.0]], ts=[0.0, 1.0])
    >>> float(f.values[0]), bool(abs(f.values[1] - 2 / (1 + math.exp(-1.0))) < 1e-12)
    (1.0, True)
    """
    if ts is not None and t_max is not None:
        raise DiversityInputError("give either ts (explicit scales) or t_max (grid end), not both.")
    n_scales = _check_n_scales(n_scales)
    grid = _check_ts(ts) if ts is not None else None
    if t_max is not None:
        t_max = check_positive(t_max, "t_max")
    fraction = _check_fraction(fraction)
    space = _prepare(X_or_D, metric)
    if grid is None and t_max is None and space.n > 1 and space.n * fraction <= 1.0:
        raise DiversityInputError(
            f"the default grid ends at t_conv, which needs fraction * n_distinct > 1; got {fraction:g} * "
            f"{space.n}. Give ts or t_max."
        )
    return _function_from_space(space, grid, n_scales=n_scales, t_max=t_max, fraction=fraction,
                                progress=progress)


def convergence_scale(X_or_D, *, fraction: float = 0.95, metric: str = "euclidean") -> float:
    """The convergence scale t_conv with Mag(t_conv) = fraction * n (Definition 3.5 of [1]_).

    .. math::

        \\mathrm{Mag}(t_{conv}) = n - \\varepsilon, \\qquad \\varepsilon = (1 - \\mathrm{fraction})\\, n,

    with :math:`n` the number of distinct points. Found by a safeguarded Newton iteration on
    :math:`g(t) = \\log(n - \\mathrm{Mag}(t)) - \\log\\varepsilon` with the exact derivative

    .. math::

        \\mathrm{Mag}'(t) = w^\\top (D \\circ Z_t)\\, w, \\qquad Z_t w = \\mathbf 1 .

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    fraction : float, default 0.95
        In (0, 1), with ``fraction * n > 1``.
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"

    Returns
    -------
    float

    Raises
    ------
    DiversityInputError
        Bad input, or ``fraction * n_distinct <= 1``.
    NumericalError
        No convergence (a magnitude function that does not increase to ``n``).

    Notes
    -----
    The iteration starts at a mean-field estimate from each point's 32 nearest neighbours
    (exact for homogeneous spaces) and only moves up by at most a factor 4 per step, so
    :math:`Z_t` is never formed at a scale far above ``t_conv`` (where ``exp(-tD)`` turns
    subnormal and factorisations slow down). Near ``t_conv`` :math:`Z_t` is well-conditioned
    and each step costs a few O(n^2) CG products. It stops when the Newton step is below
    1e-12 relative. ``magnipy`` uses TOMS 748 with ``rtol=1e-5`` from a probe at t = 10.

    Examples
    --------
    Two points at distance d: Mag(t) = 2 / (1 + exp(-t d)) = 1.9 at t = ln(19) / d.

    >>> abs(convergence_scale([[0.0], [2.0]]) - math.log(19) / 2) < 1e-10
    True
    """
    fraction = _check_fraction(fraction)
    space = _prepare(X_or_D, metric)
    return _tconv_of_space(space, fraction)


def _trapezoid(values: np.ndarray, ts: np.ndarray) -> float:
    return float(trapezoid(values, ts))


def _check_curve(func: MagnitudeFunction, name: str) -> None:
    if func.singular.any():
        bad = func.ts[func.singular]
        raise NumericalError(
            f"the magnitude function of {name} is numerically singular at t = "
            f"{', '.join(f'{v:.3g}' for v in bad[:5])}; its area would be unreliable. Merge near-duplicate "
            "points, use a positive definite metric (euclidean, cityblock), or integrate over larger scales."
        )


def mag_area(
    X_or_D,
    *,
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
) -> MagAreaResult:
    """MagArea: the area under the magnitude function on [0, t_cut] (Definition 3.3 of [1]_).

    .. math::

        \\mathrm{MagArea} = \\int_0^{t_{cut}} \\mathrm{Mag}(t)\\, dt
        \\approx \\sum_{k=1}^{m-1} \\frac{h}{2} (\\mathrm{Mag}(t_{k-1}) + \\mathrm{Mag}(t_k)),
        \\qquad t_k = k h, \\; h = \\frac{t_{cut}}{m - 1}

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    t_cut : float, optional
        Upper end of the interval; default: this set's own ``t_conv``. To compare sets, give them
        the same ``t_cut`` (see :func:`compare_magnitude`).
    n_scales : int, default 30
        Evenly spaced scales on ``[0, t_cut]`` (the trapezoid nodes).
    fraction : float, default 0.95
        For ``t_conv`` when ``t_cut`` is not given.
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"
    progress : callable, optional

    Returns
    -------
    MagAreaResult
        ``area`` (the raw integral) and ``area_scaled = area / t_cut``.

    Raises
    ------
    DiversityInputError
        Bad input or parameters.
    NumericalError
        The curve is numerically singular at some scale of the grid.

    Notes
    -----
    Cost: that of :func:`magnitude_function` with ``n_scales`` scales. ``magnipy``'s
    ``Magnipy(X).MagArea()`` is the raw integral with its own t_conv and 30 scales.

    Examples
    --------
    Two points at distance 1 integrated over [0, 1] with many nodes: 2 ln((1 + e) / 2).

    >>> r = mag_area([[0.0], [1.0]], t_cut=1.0, n_scales=2001)
    >>> abs(r.area - 2 * math.log((1 + math.e) / 2)) < 1e-6
    True
    """
    n_scales = _check_n_scales(n_scales)
    if t_cut is not None:
        t_cut = check_positive(t_cut, "t_cut")
    func = magnitude_function(X_or_D, None, n_scales=n_scales, t_max=t_cut, fraction=fraction, metric=metric,
                              progress=progress)
    _check_curve(func, "X")
    end = float(func.ts[-1])
    area = _trapezoid(func.values, func.ts)
    return MagAreaResult(area=area, area_scaled=area / end, t_cut=end, function=func)


def mag_diff(
    X,
    Y,
    *,
    reference: Optional[str] = "Y",
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
) -> MagDiffResult:
    """MagDiff: the integral of Mag_X - Mag_Y over [0, t_cut] (Definition 3.4 of [1]_).

    .. math::

        \\mathrm{MagDiff}(X, Y) = \\int_0^{t_{cut}} (\\mathrm{Mag}_X(t) - \\mathrm{Mag}_Y(t))\\, dt,
        \\qquad t_{cut} = t_{conv}(\\text{reference})

    Both curves are evaluated on the same ``n_scales`` evenly spaced scales, so the trapezoid
    rule needs no interpolation. Positive means X is more diverse than Y over the interval.

    Parameters
    ----------
    X, Y : array-like of shape (n_x, d) and (n_y, d), or distance matrices with "precomputed"
        The candidate X and (by default) the reference Y; same distance, same feature space.
    reference : {"Y", "X"} or None, default "Y"
        Whose ``t_conv`` is ``t_cut``, and whose area ``relative`` divides by. ``None``: the median
        (mean) of both ``t_conv`` (the reference-free convention) and no ``relative``.
    t_cut : float, optional
        Explicit upper end (overrides the ``reference`` rule; ``relative`` still uses its area).
    n_scales : int, default 30
    fraction : float, default 0.95
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"
    progress : callable, optional

    Returns
    -------
    MagDiffResult
        ``value`` (raw integral), ``value_scaled`` (/ ``t_cut``), ``relative`` (/ reference area).

    Raises
    ------
    DiversityInputError
        Bad input or ``reference``.
    NumericalError
        A curve is numerically singular on the grid.

    Notes
    -----
    Cost: two :func:`convergence_scale` runs (none when ``t_cut`` is given) and two magnitude
    functions. ``magnipy``'s ``MagDiff`` integrates ``|Mag_X - Mag_Y|`` after
    interpolating both curves; this is the signed integral of the paper.

    Examples
    --------
    >>> r = mag_diff([[0.0], [1.0]], [[0.0], [1.0]], t_cut=2.0)
    >>> r.value
    0.0
    """
    if reference is not None:
        check_option(reference, ("X", "Y"), "reference")
    comp = compare_magnitude({"X": X, "Y": Y}, reference=reference, t_cut=t_cut, n_scales=n_scales,
                             fraction=fraction, metric=metric, progress=progress)
    value = comp.areas["X"] - comp.areas["Y"]
    rel = math.nan
    if reference is not None:
        ref_area = comp.areas[reference]
        rel = value / ref_area if ref_area else math.nan
    return MagDiffResult(
        value=value, value_scaled=value / comp.t_cut, relative=rel, t_cut=comp.t_cut, reference=reference,
        area_x=comp.areas["X"], area_y=comp.areas["Y"], t_conv_x=comp.t_conv["X"], t_conv_y=comp.t_conv["Y"],
        function_x=comp.functions["X"], function_y=comp.functions["Y"],
    )


def _sub_progress(progress: Optional[ProgressCallback], offset: int, total: int, label: str) -> Optional[Callable]:
    if progress is None:
        return None

    def inner(done: int, _total: int, message: str) -> None:
        progress(offset + done, total, f"{label}: {message}")

    return inner


def compare_magnitude(
    sets: Mapping[str, Any],
    *,
    reference: Optional[str] = None,
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
) -> MagnitudeComparison:
    """MagArea of several sets on a common interval, and MagDiff against a reference ([1]_, Sec. 3.4).

    .. math::

        t_{cut} = \\begin{cases} t_{conv}(\\text{reference}) & \\text{with a reference} \\\\
        \\operatorname{median}_i t_{conv}(X_i) & \\text{without} \\end{cases}, \\qquad
        \\mathrm{MagDiff}_i = \\int_0^{t_{cut}} (\\mathrm{Mag}_{X_i} - \\mathrm{Mag}_{\\text{ref}})\\, dt

    Every set's curve is evaluated on the same ``n_scales`` evenly spaced scales on
    ``[0, t_cut]``, so areas are comparable and differences are exact on the grid.

    Parameters
    ----------
    sets : mapping of str to array-like
        Named point sets (rows are points) or, with ``metric="precomputed"``, distance matrices.
    reference : str, optional
        Name of the reference set. Without one: reference-free (areas only, median rule).
    t_cut : float, optional
        Explicit common ``t_cut`` (skips the ``t_conv`` computations).
    n_scales : int, default 30
    fraction : float, default 0.95
    metric : {"euclidean", "cityblock", "cosine", "precomputed"}, default "euclidean"
    progress : callable, optional
        ``progress(done, total, message)`` over all sets.

    Returns
    -------
    MagnitudeComparison
        Roles (``reference``, ``candidates``), ``t_cut`` and its rule, each set's ``t_conv``,
        ``areas`` (raw) and ``areas_scaled`` (/ ``t_cut``), and for candidates ``mag_diff``,
        ``mag_diff_scaled`` and ``mag_diff_relative`` (/ the reference's area).

    Raises
    ------
    DiversityInputError
        Empty ``sets``, a non-string name, an unknown ``reference``, bad data.
    NumericalError
        A curve is numerically singular on the common grid.

    Notes
    -----
    Cost: one :func:`convergence_scale` per set (none with ``t_cut``) and one magnitude
    function per set. Distance matrices are rebuilt for the second pass rather than all kept
    in memory at once when they are large.

    Examples
    --------
    >>> c = compare_magnitude({"a": [[0.0], [1.0]], "b": [[0.0], [2.0]]}, reference="a")
    >>> c.candidates, bool(c.mag_diff["b"] > 0)
    (('b',), True)
    """
    if not isinstance(sets, Mapping) or len(sets) == 0:
        raise DiversityInputError("sets must be a non-empty mapping of name -> points (e.g. {'model A': X}).")
    names = tuple(sets)
    for k in names:
        if not isinstance(k, str):
            raise DiversityInputError(f"set names must be strings; got {k!r}.")
    if reference is not None and reference not in sets:
        raise DiversityInputError(
            f"reference {reference!r} is not one of the sets: {', '.join(repr(k) for k in names)}."
        )
    n_scales = _check_n_scales(n_scales)
    fraction = _check_fraction(fraction)
    if t_cut is not None:
        t_cut = check_positive(t_cut, "t_cut")

    spaces: dict = {}
    keep_bytes = 0
    t_conv: dict = {k: None for k in names}
    need_tconv = t_cut is None
    total = (n_scales - 1 + (1 if need_tconv else 0)) * len(names)
    done = 0
    if need_tconv:
        for name in names:
            space = _prepare(sets[name], metric, name=name)
            if space.n * fraction <= 1.0:
                raise DiversityInputError(
                    f"set {name!r} has {space.n} distinct point(s): its convergence scale needs "
                    f"fraction * n > 1. Give t_cut or more points."
                )
            report(progress, done, total, f"{name}: finding the convergence scale")
            t_conv[name] = _tconv_of_space(space, fraction)  # leaves space.D intact
            if keep_bytes + space.D.nbytes <= (1 << 30):
                spaces[name] = space
                keep_bytes += space.D.nbytes
            done += 1
            report(progress, done, total, f"{name}: t_conv = {t_conv[name]:.6g}")
        if reference is not None:
            t_cut, rule = float(t_conv[reference]), "reference t_conv"
        else:
            t_cut, rule = float(np.median([t_conv[k] for k in names])), "median t_conv"
    else:
        rule = "given"
    ts = np.linspace(0.0, t_cut, n_scales)
    functions: dict = {}
    for name in names:
        space = spaces.pop(name, None)
        if space is None:
            with warnings.catch_warnings():
                if need_tconv:  # already warned about duplicates in the first pass
                    warnings.simplefilter("ignore", DuplicatesMergedWarning)
                space = _prepare(sets[name], metric, name=name)
        sub = _sub_progress(progress, done, total, name)
        functions[name] = _function_from_space(space, ts, n_scales=n_scales, t_max=None, fraction=fraction,
                                               progress=sub, total=n_scales - 1, t_conv=t_conv[name])
        done += n_scales - 1
        _check_curve(functions[name], repr(name))
    areas = {k: _trapezoid(functions[k].values, ts) for k in names}
    areas_scaled = {k: areas[k] / t_cut for k in names}
    candidates = tuple(k for k in names if k != reference)
    diffs: dict = {}
    diffs_scaled: dict = {}
    diffs_rel: dict = {}
    if reference is not None:
        ref_area = areas[reference]
        for k in candidates:
            diffs[k] = areas[k] - ref_area
            diffs_scaled[k] = diffs[k] / t_cut
            diffs_rel[k] = diffs[k] / ref_area if ref_area else math.nan
    return MagnitudeComparison(
        names=names, reference=reference, candidates=candidates, t_cut=float(t_cut), t_cut_rule=rule,
        t_conv=t_conv, areas=areas, areas_scaled=areas_scaled, mag_diff=diffs, mag_diff_scaled=diffs_scaled,
        mag_diff_relative=diffs_rel, functions=functions,
    )
