"""Matrix-free magnitude: conjugate gradients with Z_t products computed from the points.

When the n x n matrices do not fit the memory budget (n = 50,000 would need 20 GB per scale),
``method="auto"`` solves :math:`Z_t w = \\mathbf 1` without ever holding D or Z_t:

- every product :math:`Z_t P` is computed from the upper triangle, row block by row block: the
  distances of a block of rows to itself and to the points after it (one GEMM for the Euclidean
  distance, ``cdist`` otherwise), then ``exp(-t D_strip)``, which multiplies ``p`` for the
  block's own rows and, transposed, for the rows below it, for every scale that is still
  iterating. Each distance is computed once per pass (half the work of full rows), and the
  operator is exactly symmetric, as CG assumes. The scales of a grid iterate
  in lockstep so that one distance block serves all of them; on an evenly spaced grid
  :math:`Z_{kh} = E^{\\circ k}`, :math:`E = e^{-hD}`, so each further scale costs one
  elementwise product instead of an ``exp``. Blocks are spread over the cores with threads
  (NumPy and the single-threaded BLAS release the GIL).
- the small, ill-conditioned scales are preconditioned by a Nyström approximation of
  :math:`Z_t` on ``_LANDMARKS`` landmark points: :math:`\\hat Z = C W^{-1} C^\\top`,
  :math:`M = \\hat Z + \\nu I` with :math:`\\nu` the mean of the residual spectrum,
  :math:`(n - \\operatorname{tr}\\hat Z)/(n - m)` (:math:`Z_t - \\hat Z` is positive
  semidefinite, and its trace is known because :math:`Z_t` has a unit diagonal).
- the value is read off with the variational formula :math:`\\mathbf 1^\\top x + x^\\top r`
  whose error :math:`r^\\top Z^{-1} r \\le (r^\\top M^{-1} r) / \\lambda_{min}(M^{-1} Z)` is
  estimated with the smallest Ritz value of the CG-Lanczos matrix (as the dense solvers do). A
  scale stops at an estimated relative error of ``_FREE_RTOL``; one that has not reached it
  after ``_FREE_MAX_ITER`` products keeps its last value and error estimate, and is flagged.
- the convergence scale: five scales around the mean-field guess solved in lockstep, then
  inverse quadratic interpolation of :math:`\\log(n - \\mathrm{Mag}(t))` (nearly linear in t)
  with warm-started solves, stopped at a relative step of ``_FREE_TCONV_RTOL``.

All products are in float64, so the values are as accurate as the stated error estimates.
Memory: the points, one distance block per thread (``_FREE_BLOCK_BYTES``), a few n-vectors per
scale (and one accumulator of the products per thread) and the Nyström factors (n x
``_LANDMARKS`` per preconditioned scale).
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import numpy as np

from .._config import check_memory, fits_memory, memory_budget
from .._progress import ProgressCallback, report
from .._validation import check_option, check_scalar
from ..exceptions import DiversityInputError, NumericalError
from ._metric import (
    _DENSE_ARRAYS,
    _check_metric,
    _check_points,
    _merge_duplicates,
    _PointMetric,
    _prepare,
    _Space,
    _warn_merged,
)
from ._scales import _Curve, _curve_grid, _grid, _guess_sample, _mean_field_guess_rows
from ._solvers import _EPS, _RITZ_MARGIN, ACCURACY_RTOL, _serial_blas, _theta_min

#: Values of ``method=``.
METHODS = ("auto", "dense", "matrix-free")

#: Estimated relative error at which a scale stops iterating.
_FREE_RTOL = 1e-10
#: Products with Z_t after which a scale stops anyway (its value is then flagged).
_FREE_MAX_ITER = 300
#: Bytes of one distance block per thread.
_FREE_BLOCK_BYTES = 32 << 20
#: Landmarks of the Nyström preconditioner.
_LANDMARKS = 256
#: A scale is preconditioned when the Nyström part dominates: lambda_max(Z_hat) > this * nu.
_PRECONDITION_RATIO = 20.0
#: The secant iteration for t_conv stops at this relative step.
_FREE_TCONV_RTOL = 1e-8

#: Metrics for which a zero distance means equal rows (already merged), so no scan for twins.
_STRICT = frozenset({"euclidean", "cityblock", "minkowski", "chebyshev", "seuclidean", "mahalanobis",
                     "sqeuclidean", "canberra", "braycurtis", "tanimoto", "jaccard"})


class _FreeSpace:
    """Distinct points and the blocked, threaded products with Z_t = exp(-t D)."""

    def __init__(self, pm: _PointMetric):
        self.pm = pm
        self.n = pm.n
        self.workers = max(1, min(os.cpu_count() or 1, 8))
        # a block holds the distances and one or two Z_t of its rows (3 arrays per thread); each
        # scale holds x, r, p, M^-1 r, its columns of P and Q and one Q column per thread (30
        # scales reserved, the default grid); the Nyström factors are the landmark distances and,
        # in float32, n x _LANDMARKS per preconditioned scale (about 10 of 30 on the test clouds;
        # 12 are reserved)
        m = min(_LANDMARKS, self.n)
        fixed = (8.0 * 30 * (6 + self.workers) + 8.0 * m + 12 * 4.0 * m) * self.n
        per_block = max(8 * self.n * 8.0, min(float(_FREE_BLOCK_BYTES), (memory_budget() - fixed) / (3 * self.workers)))
        self.rows = int(max(8, min(self.n, per_block // (8 * max(self.n, 1)))))
        self.blocks = [(i0, min(self.n, i0 + self.rows)) for i0 in range(0, self.n, self.rows)]
        check_memory(3.0 * self.workers * self.rows * self.n * 8 + fixed,
                     what=f"matrix-free magnitude of {self.n} points (distance blocks of {self.rows} rows)",
                     hint="Use a random subset of the points.")
        self.passes = 0  # passes over all the distances (the cost unit)
        self._landmarks: Optional[np.ndarray] = None
        self._DS: Optional[np.ndarray] = None

    def _map(self, fn) -> list:
        """``fn(i0, i1)`` over the row blocks on ``workers`` threads with single-threaded BLAS."""
        self.passes += 1
        with _serial_blas():
            if self.workers == 1 or len(self.blocks) == 1:
                return [fn(i0, i1) for i0, i1 in self.blocks]
            with ThreadPoolExecutor(self.workers) as pool:
                return list(pool.map(lambda b: fn(*b), self.blocks))

    def products(self, ts: np.ndarray, P: np.ndarray, h: Optional[float] = None,
                 ks: Optional[np.ndarray] = None) -> np.ndarray:
        """``Q[:, j] = Z_{ts[j]} P[:, j]`` for ascending ``ts``, one pass over the distances.

        Only the upper triangle is computed: the strip ``Z[i0:i1, i0:]`` of a row block serves
        its own rows and, transposed, the rows below (half the distances and exponentials of a
        full pass, and an exactly symmetric operator). Each thread sums into its own ``Q``.
        With ``h`` and integers ``ks`` (``ts = ks * h``), Z_{kh} = E^k by elementwise products.
        """
        sums: list = []
        local = threading.local()

        def block(i0: int, i1: int) -> None:
            """The strip of rows i0:i1 in every product."""
            Q = getattr(local, "Q", None)
            if Q is None:
                Q = local.Q = np.zeros(P.shape, order="F")
                sums.append(Q)  # list.append is atomic
            b = i1 - i0
            D = self.pm.strip(i0, i1)

            def add(j: int, Z: np.ndarray) -> None:
                """Z_strip P[:, j] into rows i0:i1, Z_strip^T P[i0:i1, j] into the rows below."""
                Q[i0:i1, j] += Z @ P[i0:, j]
                if b < Z.shape[1]:
                    Q[i1:, j] += Z[:, b:].T @ P[i0:i1, j]

            if h is not None:
                E = np.exp(np.multiply(D, -h, out=D), out=D)
                Z = E.copy()
                k = 1
                for j, kj in enumerate(ks):
                    while k < kj:
                        np.multiply(Z, E, out=Z)
                        k += 1
                    add(j, Z)
            else:
                Z = np.empty_like(D)
                for j, t in enumerate(ts):
                    np.multiply(D, -t, out=Z)
                    np.exp(Z, out=Z)
                    add(j, Z)

        self._map(block)
        Q = sums[0]
        for other in sums[1:]:
            Q += other
        return Q

    def rows_at(self, idx: np.ndarray) -> np.ndarray:
        """Distance rows of the points ``idx`` (len(idx) x n)."""
        out = np.empty((idx.size, self.n))
        for a in range(0, idx.size, self.rows):
            sub = idx[a:a + self.rows]
            out[a:a + sub.size] = self.pm.rows_of(sub, sub)
        return out

    def landmark_distances(self) -> tuple:
        """``(S, D[:, S])``: ``_LANDMARKS`` evenly spaced landmark points and their distance columns."""
        if self._landmarks is None:
            m = min(_LANDMARKS, self.n)
            S = np.unique(np.linspace(0, self.n - 1, m).astype(np.intp))
            self._landmarks = S
            self._DS = np.ascontiguousarray(self.rows_at(S).T)  # D is symmetric
        return self._landmarks, self._DS

    def twins(self) -> np.ndarray:
        """Rows at distance 0 from an earlier row (one pass; only for metrics where that can happen)."""
        later = np.zeros(self.n, dtype=bool)
        if self.pm.metric in _STRICT:
            return later

        def block(i0: int, i1: int) -> None:
            """Mark the later row of each zero distance in rows i0:i1."""
            D = self.pm.rows(i0, i1)
            rows, cols = np.nonzero(D == 0)
            rows += i0
            later[rows[cols < rows]] = True

        self._map(block)
        return later


class _Nystrom:
    """M = U diag(lam) U^T + nu (I - U U^T) ~ Z_t from landmark columns; applies M^{-1}."""

    def __init__(self, C: np.ndarray, W: np.ndarray, n: int):
        s, V = np.linalg.eigh(W)
        keep = s > 1e3 * _EPS * s[-1]
        B = C @ (V[:, keep] / np.sqrt(s[keep]))  # Z_hat = B B^T
        lam, Q = np.linalg.eigh(B.T @ B)
        ok = lam > 1e3 * _EPS * lam[-1]
        lam, Q = lam[ok], Q[:, ok]
        # orthonormal columns, kept in float32: a preconditioner only needs to be a fixed
        # symmetric positive definite operator, and this halves its memory
        self.U = (B @ (Q / np.sqrt(lam))).astype(np.float32)
        m = lam.size
        # Z - Z_hat is PSD with trace n - tr(Z_hat): nu is its mean eigenvalue off range(U)
        self.nu = max((n - float(lam.sum())) / max(n - m, 1), 1e-3 * _EPS)
        self.lam = lam + self.nu  # M = Z_hat + nu I on range(U)
        self.ratio = float(lam[-1]) / self.nu if m else 0.0

    def apply(self, r: np.ndarray) -> np.ndarray:
        """M^{-1} r = r / nu + U ((lam)^{-1} - 1 / nu) U^T r."""
        c = (self.U.T @ r.astype(np.float32)).astype(np.float64)
        return r / self.nu + (self.U @ (c * (1.0 / self.lam - 1.0 / self.nu)).astype(np.float32)).astype(np.float64)


def _preconditioner(space: _FreeSpace, t: float) -> Optional[_Nystrom]:
    """A Nyström preconditioner at scale t when the low-rank part dominates Z_t, else None."""
    S, DS = space.landmark_distances()
    if S.size < 8 or S.size >= space.n:
        return None
    with _serial_blas():
        C = np.exp(-t * DS)
        W = C[S]
        W = 0.5 * (W + W.T)
        try:
            pre = _Nystrom(C, W, space.n)
        except np.linalg.LinAlgError:
            return None
    return pre if pre.ratio > _PRECONDITION_RATIO else None


class _Lane:
    """The CG state of one scale."""

    def __init__(self, n: int, pre: Optional[_Nystrom], x0: Optional[np.ndarray]):
        self.pre = pre
        self.x = np.zeros(n) if x0 is None else x0.copy()
        self.r: Optional[np.ndarray] = None if x0 is not None else np.ones(n)
        self.p: Optional[np.ndarray] = None
        self.rz = 0.0
        self.alphas: list = []
        self.betas: list = []
        self.theta = math.inf
        self.k = 0
        self.value = math.nan
        self.error = math.inf
        self.done = False
        self.failed = False

    def z(self, r: np.ndarray) -> np.ndarray:
        """M^{-1} r (the identity without a preconditioner)."""
        return self.pre.apply(r) if self.pre is not None else r

    def start(self) -> None:
        """First search direction from the initial residual."""
        zr = self.z(self.r)
        self.rz = float(self.r @ zr)
        self.p = zr

    def step(self, q: np.ndarray) -> None:
        """One CG step given q = Z p."""
        pq = float(self.p @ q)
        if not (pq > 0 and np.isfinite(pq)):
            self.done = self.failed = True
            return
        a = self.rz / pq
        self.x += a * self.p
        self.r -= a * q
        zr = self.z(self.r)
        rz_new = float(self.r @ zr)
        self.alphas.append(a)
        self.k += 1
        self.value = float(self.x.sum() + self.x @ self.r)
        self.theta = min(self.theta, 1.0 / self.alphas[0])
        self.error = _RITZ_MARGIN * rz_new / self.theta
        if self.error <= _FREE_RTOL * abs(self.value) or self.k >= _FREE_MAX_ITER:
            self.theta = max(_theta_min(self.alphas, self.betas), 1e-300)
            self.error = _RITZ_MARGIN * rz_new / self.theta
            if self.error <= _FREE_RTOL * abs(self.value) or self.k >= _FREE_MAX_ITER:
                self.done = True
                return
        if not (rz_new > 0 and np.isfinite(rz_new)):
            self.done = self.failed = True
            return
        beta = rz_new / self.rz
        self.betas.append(beta)
        self.p = zr + beta * self.p
        self.rz = rz_new


def _grid_step(ts: np.ndarray) -> tuple:
    """``(h, ks)`` when the positive ``ts`` are integer multiples k h of their smallest, else ``(None, None)``."""
    h = ts[0]
    ks = ts / h
    kr = np.rint(ks)
    if np.allclose(ks, kr, rtol=0, atol=1e-9) and kr[-1] <= 4096:
        return h, kr.astype(np.int64)
    return None, None


def _solve_scales(space: _FreeSpace, ts: np.ndarray, x0s: Optional[list] = None,
                  progress: Optional[ProgressCallback] = None, offset: int = 0,
                  total: Optional[int] = None) -> list:
    """Lockstep (preconditioned) CG at the ascending positive scales ``ts``; returns the lanes."""
    n = space.n
    lanes = [_Lane(n, _preconditioner(space, float(t)), None if x0s is None else x0s[j]) for j, t in enumerate(ts)]
    # warm-started lanes need their first residual 1 - Z x0: one pass for all of them
    warm = [j for j, ln in enumerate(lanes) if ln.r is None]
    if warm:
        Q = _products(space, ts[warm], np.column_stack([lanes[j].x for j in warm]))
        for c, j in enumerate(warm):
            lanes[j].r = 1.0 - Q[:, c]
    for ln in lanes:
        ln.start()
    done_before = 0
    while True:
        active = [j for j, ln in enumerate(lanes) if not ln.done]
        if not active:
            break
        Q = _products(space, ts[active], np.column_stack([lanes[j].p for j in active]))
        for c, j in enumerate(active):
            lanes[j].step(Q[:, c])
        finished = sum(ln.done for ln in lanes)
        if progress is not None and total is not None and finished > done_before:
            report(progress, offset + finished, total, f"matrix-free: {finished} of {len(lanes)} scales solved "
                   f"({space.passes} passes over the distances)")
            done_before = finished
    return lanes


def _products(space: _FreeSpace, ts: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Z_t P for ascending ``ts``, by powers of exp(-hD) when the scales are multiples of one h."""
    h, ks = _grid_step(ts) if ts.size > 1 else (None, None)
    return space.products(ts, np.asfortranarray(P), h=h, ks=ks)  # contiguous columns for the products


def _finish_lane(ln: _Lane, n: int) -> tuple:
    """``(value, error, converged)`` with the rounding floor sqrt(n) eps |x|^T Z |x| (see _Engine._finish)."""
    neg = float(-ln.x[ln.x < 0].sum())
    absq = abs(ln.value) + 4.0 * neg * (1.0 + 1e-6) + 4.0 * neg * neg
    err = ln.error + math.sqrt(n) * _EPS * absq
    converged = (not ln.failed) and ln.error <= _FREE_RTOL * abs(ln.value)
    return ln.value, err, converged


def _free_tconv(space: _FreeSpace, fraction: float, guess: float) -> float:
    """Root of g(t) = log(n - Mag(t)) - log(n - target) from lockstep solves around ``guess``.

    g is nearly linear near t_conv (n - Mag ~ C exp(-a t)). A first round solves five scales
    around the guess in lockstep (they share every pass over the distances), widening until
    the root is bracketed; then each round interpolates the root through the three points
    with the smallest |g| (inverse quadratic, or linear within the bracket) and solves there,
    warm-started from the nearest weighting, until the step is below ``_FREE_TCONV_RTOL``.
    """
    n = space.n
    target = fraction * n
    gap = math.log(n - target)
    pts: list = []  # (t, g, x)

    def add(ts_new: np.ndarray, warm: Optional[list] = None) -> None:
        """Solve at ``ts_new`` (lockstep) and record (t, g, weighting)."""
        for t, ln in zip(ts_new, _solve_scales(space, np.sort(ts_new), warm)):
            if ln.failed or not np.isfinite(ln.value):
                continue
            g = math.log(n - ln.value) - gap if ln.value < n else -math.inf
            pts.append((float(t), g, ln.x))

    add(guess * np.array([0.8, 0.9, 1.0, 1.1, 1.25]))
    for _ in range(40):
        below = [q for q in pts if q[1] > 0]  # Mag < target: t too small
        above = [q for q in pts if q[1] <= 0]
        if below and above:
            break
        if not pts:
            raise NumericalError("the matrix-free solves failed around the convergence scale.")
        if below:
            t_max = max(q[0] for q in pts)
            add(t_max * np.array([1.3, 1.7, 2.2]))
        else:
            t_min = min(q[0] for q in pts)
            add(t_min * np.array([0.45, 0.6, 0.77]))
    else:
        raise NumericalError(f"could not bracket the convergence scale (Mag(t) = {fraction:g} n) matrix-free.")
    for _ in range(30):
        finite = [q for q in pts if np.isfinite(q[1])]
        lo = max((q for q in finite if q[1] > 0), key=lambda q: q[0])
        hi = min((q for q in finite if q[1] <= 0), key=lambda q: q[0])
        near = sorted(finite, key=lambda q: abs(q[1]))[:3]
        t_new = math.nan
        gs = [q[1] for q in near]
        if len(near) == 3 and len(set(gs)) == 3:  # inverse quadratic interpolation t(g) at g = 0
            (t0, g0, _), (t1, g1, _), (t2, g2, _) = near
            t_new = (t0 * g1 * g2 / ((g0 - g1) * (g0 - g2)) + t1 * g0 * g2 / ((g1 - g0) * (g1 - g2))
                     + t2 * g0 * g1 / ((g2 - g0) * (g2 - g1)))
        if not (lo[0] < t_new < hi[0]):
            t_new = lo[0] - lo[1] * (hi[0] - lo[0]) / (hi[1] - lo[1])
        closest = min(finite, key=lambda q: abs(q[0] - t_new))
        if abs(t_new - closest[0]) <= _FREE_TCONV_RTOL * t_new or hi[0] - lo[0] <= _FREE_TCONV_RTOL * t_new:
            return t_new
        add(np.array([t_new]), [closest[2]])
    raise NumericalError(
        f"the matrix-free search for the convergence scale (Mag(t) = {fraction:g} n) did not converge."
    )


# --------------------------------------------------------------------------------------------
# Preparation and the curve
# --------------------------------------------------------------------------------------------


def _n_input_rows(X_or_D) -> int:
    """Rows of the input before validation (0 when unknown)."""
    shape = getattr(X_or_D, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(X_or_D)
    except TypeError:
        return 0


def magnitude_method(n_points: int, metric: str = "euclidean", *, method: str = "auto") -> str:
    """The path that ``method`` takes for ``n_points`` points under the current memory budget.

    ``"dense"`` while D, Z_t and a Cholesky factor (about 24 n^2 bytes) fit the budget
    (:func:`diversity_core.set_config`), else ``"matrix-free"`` (conjugate gradients on blocks of
    distances, :mod:`~diversity_core.magnitude._free`). Derivatives, positive magnitude and the
    magnitude dimension need ``"dense"``. Nothing is computed; n counts the points before
    duplicates are merged, so the answer errs towards ``"matrix-free"``.

    Parameters
    ----------
    n_points : int
        Number of points (rows of X).
    metric : str, default="euclidean"
        A name of :data:`METRICS`; ``"precomputed"`` is always dense.
    method : {"auto", "dense", "matrix-free"}, default="auto"
        As in :func:`magnitude_function`.

    Returns
    -------
    str
        ``"dense"`` or ``"matrix-free"``.

    Examples
    --------
    >>> from diversity_core import config_context
    >>> from diversity_core.magnitude import magnitude_method
    >>> with config_context(memory_budget="1G"):
    ...     magnitude_method(1000), magnitude_method(100_000)
    ('dense', 'matrix-free')
    """
    n = check_scalar(n_points, "n_points", int, min_val=1)
    metric, _ = _check_metric(metric, None)
    return _resolve_method(method, n, metric)


def _resolve_method(method: str, n: int, metric: str) -> str:
    """"dense" or "matrix-free" for n points: ``auto`` is dense while D, Z_t and a factor fit the budget."""
    check_option(method, METHODS, "method")
    if metric == "precomputed":
        if method == "matrix-free":
            raise DiversityInputError(
                "method='matrix-free' computes distances from the points; a precomputed D is already an n x n "
                "matrix. Use method='dense' (or 'auto')."
            )
        return "dense"
    if method != "auto":
        return method
    return "dense" if fits_memory(_DENSE_ARRAYS * 8.0 * n * n) else "matrix-free"


def _prepare_any(X_or_D, metric: str, *, p=None, name: str = "X", warn: bool = True,
                 method: str = "auto", ids=None) -> _Space:
    """:func:`_prepare` (dense D) or the matrix-free preparation, by :func:`_resolve_method` (``ids``: the warnings' names)."""
    metric, p = _check_metric(metric, p)
    if _resolve_method(method, _n_input_rows(X_or_D), metric) == "dense":
        return _prepare(X_or_D, metric, p=p, name=name, warn=warn, ids=ids)
    X = _check_points(X_or_D, name)
    n_points = X.shape[0]
    X, n_merged, keep = _merge_duplicates(X)
    if warn and n_merged:
        _warn_merged(name, np.setdiff1d(np.arange(n_points), keep), keep.size, "duplicate rows", ids=ids)
    space = _FreeSpace(_PointMetric(X, metric, p))
    twins = space.twins()
    if twins.any():
        sub = np.flatnonzero(~twins)
        if warn:
            _warn_merged(name, keep[twins], sub.size, f"rows at {metric} distance 0 from an earlier row", ids=ids)
        keep = keep[sub]
        space = _FreeSpace(_PointMetric(X[sub], metric, p))
    return _Space(D=None, indices=keep, n_points=n_points, metric=metric, free=space)


def _free_tconv_of(space: _FreeSpace, fraction: float) -> float:
    """t_conv of a matrix-free space (mean-field start, then the secant iteration)."""
    n = space.n
    if n * fraction <= 1.0:
        raise DiversityInputError(
            f"the convergence scale needs fraction * n_distinct > 1 = Mag(0); got {fraction:g} * {n}. "
            "Use more distinct points or a larger fraction."
        )
    sample = _guess_sample(n)
    guess = _mean_field_guess_rows(space.rows_at(sample), n, fraction * n)
    return _free_tconv(space, fraction, guess)


def _free_curve(space: _FreeSpace, ts: Optional[np.ndarray] = None, *, t_cut: Optional[float] = None,
                n_scales: int = 30, fraction: float = 0.95, progress: Optional[ProgressCallback] = None,
                offset: int = 0, total: Optional[int] = None, t_conv: Optional[float] = None,
                scales: str = "linear") -> _Curve:
    """The magnitude function of a matrix-free space (as ``_scales._curve``)."""
    n = space.n
    need_tconv = ts is None and t_cut is None
    m = n_scales - 1 if ts is None else int(np.count_nonzero(ts > 0))
    if total is None:
        total = m + (1 if need_tconv else 0)
    if n == 1:
        grid = _grid(t_cut if t_cut is not None else 1.0, n_scales, scales) if ts is None else np.sort(ts)
        report(progress, offset + total, total, "one distinct point")
        zeros = np.zeros(grid.size, dtype=bool)
        return _Curve(grid, np.ones(grid.size), np.zeros(grid.size), zeros, zeros.copy(),
                      ("exact",) * grid.size, t_conv, 1, 0)
    grid, t_conv, offset = _curve_grid(ts, t_cut, n_scales, scales, t_conv, lambda: _free_tconv_of(space, fraction),
                                       progress, offset, total, " (matrix-free)")
    values = np.ones(grid.size)
    errors = np.zeros(grid.size)
    methods = ["exact"] * grid.size
    pos = np.unique(grid[grid > 0])
    if pos.size:
        lanes = _solve_scales(space, pos, progress=progress, offset=offset, total=total)
        for t, ln in zip(pos, lanes):
            value, err, _ = _finish_lane(ln, n)
            at = grid == t
            values[at], errors[at] = value, err
            for i in np.flatnonzero(at):
                methods[i] = "matrix-free-pcg" if ln.pre is not None else "matrix-free-cg"
    singular = ~np.isfinite(values)
    values[singular] = math.nan
    errors[singular] = math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.isfinite(values) & (values != 0), errors / np.abs(values), np.inf)
    ill = (rel > ACCURACY_RTOL) & ~singular
    return _Curve(grid, values, errors, ill, singular, tuple(methods), t_conv, n, 0)
