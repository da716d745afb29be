"""Solvers of Z_t w = 1: Cholesky (LAPACK or blocked), float32 factors with float64 refinement, CG.

Every solve reports an a-posteriori error estimate and reads the magnitude off with the
variational (second-order) formula :math:`\\mathbf 1^\\top w + w^\\top r`, :math:`r = \\mathbf 1 - Z w`,
whose error is :math:`r^\\top Z^{-1} r`. Solvers, cheapest first (see :meth:`_Engine.solve`):

1. conjugate gradients (CG), warm-started from the previous scale, at the well-conditioned
   large scales (one matrix-vector product per iteration);
2. CG preconditioned by the float32 Cholesky factor of a nearby scale (large ``n``);
3. a float32 Cholesky factor of :math:`Z_t` itself with float64 refinement (preconditioned CG
   whose residuals are formed in float64, so the result has float64 accuracy);
4. a float64 Cholesky factor (``scipy.linalg.cho_factor``/``cho_solve``);
5. an LU factorisation with refinement (method ``"lu"``) when :math:`Z_t` is not positive
   definite: magnitude is defined whenever :math:`Z_t` is invertible (e.g. the shortest-path
   metric of the complete bipartite graph :math:`K_{3,2}`, which does not embed in a Euclidean
   space). :math:`Z_t` is called singular only when this fails too.

Threads: the factorisations use every BLAS thread (see below); the matrix-vector products and triangular
solves of the (preconditioned) CG iterations run on one (:func:`_serial_blas`). They are
memory-bound, so a second thread gains little on a quiet machine, while on a loaded one each
of the hundreds of small multi-threaded calls waits for a descheduled partner thread: on a
2-core machine at load 9 the n = 2000 pipeline took 32 s of wall time with two threads and
2.4 s with serial products. On a machine of at most :data:`_SERIAL_FACTOR_CORES` cores the
factorisations run on one thread too (:func:`_factor_blas`): NumPy and SciPy each bundle an
OpenBLAS with its own thread pool, and with two threads per pool on two shared cores the
n = 2000, d = 10 pipeline (t_conv, 30 scales, MagArea) took 25.8 s of wall time and 7.0 s of
CPU time at load 13, against 3.7 s and 1.0 s with every call serial (issue 39).

Matrices above ``_LAPACK_MAX_BYTES`` (1 GiB; n > ~16000 in float32) are factorised by a blocked
Cholesky built on LAPACK blocks and matrix products: the OpenBLAS ``potrf`` bundled with
NumPy/SciPy crashed (segmentation fault) on 2 GB matrices.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.linalg as sla

from ._metric import _cache_rows

#: A value whose estimated relative error exceeds this is flagged ``ill_conditioned``.
ACCURACY_RTOL = 1e-8
#: Relative accuracy every solve aims for (well below :data:`ACCURACY_RTOL`).
_SOLVE_RTOL = 1e-12
#: The CG error rho / theta uses the smallest Ritz value theta, which approaches lambda_min from
#: above, so it can fall short of r^T Z^{-1} r; the stated error carries this factor of margin
#: (measured without it: true / stated up to 0.93-0.96 against float64 Cholesky).
_RITZ_MARGIN = 2.0
#: float32 entries below ~this * 2^-24 are set to zero in the (preconditioner) factor: keeps
#: the float32 Cholesky out of subnormal arithmetic; the float64 refinement is unaffected.
_F32_FLUSH = 1e-30
#: Smallest n for which a stale float32 factor is tried as a preconditioner before a new one.
_STALE_MIN_N = 4000
_EPS = float(np.finfo(np.float64).eps)

#: Machines with at most this many usable cores factorise on one BLAS thread (see the module notes).
_SERIAL_FACTOR_CORES = 2

_THREADPOOLS = None


def _serial_blas():
    """Context in which the BLAS libraries use one thread (threadpoolctl, created once)."""
    global _THREADPOOLS
    if _THREADPOOLS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _THREADPOOLS = ThreadpoolController()
        except ImportError:  # scikit-learn's dependency; without it products use the default threads
            _THREADPOOLS = False
    if _THREADPOOLS is False:
        return contextlib.nullcontext()
    return _THREADPOOLS.limit(limits=1, user_api="blas")


def _factor_blas():
    """Context of the factorisations: every BLAS thread, or one on a machine of few cores."""
    from ..workers import available_cores

    return _serial_blas() if available_cores() <= _SERIAL_FACTOR_CORES else contextlib.nullcontext()


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
    rcond: float = math.nan  # LAPACK's reciprocal condition estimate, when the LU path ran


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
        with _factor_blas():
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
        with _factor_blas():
            factor = _cholesky(self.Z, overwrite=False)
        if factor is None:
            return False
        self._factor = (factor, np.float64)
        self._factor_t = self.t
        return True

    def _apply(self, r: np.ndarray) -> np.ndarray:
        """Z = M^{-1} r with the current factor (scaled so that float32 never underflows)."""
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
        """CG on Z w = 1 (see :meth:`_pcg_serial`), with single-threaded BLAS products."""
        with _serial_blas():
            return self._pcg_serial(precondition, x0, max_iter, method, residual_tol)

    def _pcg_serial(self, precondition: bool, x0: Optional[np.ndarray], max_iter: int, method: str,
                    residual_tol: float = math.inf) -> _Solve:
        """CG on Z w = 1 with the variational estimate and a Ritz-value error estimate.

        ``value = 1^T x + x^T r`` has error ``r^T Z^{-1} r <= (r^T M^{-1} r) / lambda_min(M^{-1} Z)``;
        lambda_min is estimated by the smallest Ritz value of the CG-Lanczos tridiagonal matrix,
        and the stated error is ``_RITZ_MARGIN`` times that estimate (the stopping test uses the
        estimate itself, so the margin costs no iterations). Aborts early when the observed
        convergence rate predicts more than ``max_iter`` steps.
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
                    return self._finish(x, value, _RITZ_MARGIN * err, method, k)
                # after many steps confirm with the true residual (the recursive one drifts)
                r = b - Z @ x
                z = apply(r)
                rz_true = float(r @ z)
                value = float(x.sum() + x @ r)
                err = abs(rz_true) / theta
                small = residual_tol == math.inf or float(np.max(np.abs(r))) <= 10 * residual_tol
                if (small and err <= 10 * _SOLVE_RTOL * abs(value)) or restarts >= 2:
                    return self._finish(x, value, _RITZ_MARGIN * err, method, k)
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
                    return _Solve(value, x, _RITZ_MARGIN * err, method, k, converged=False, need=math.inf)
                need = math.log(_SOLVE_RTOL * abs(value) / err) / math.log(rate)
                if residual_tol != math.inf:  # the residual converges at the square root of that rate
                    need = max(need, 2.0 * math.log(residual_tol / float(np.max(np.abs(r)))) / math.log(rate))
                if k + need > max_iter:
                    return _Solve(value, x, _RITZ_MARGIN * err, method, k, converged=False, need=k + need)
            beta = rz_new / rz
            betas.append(beta)
            p = z + beta * p
            rz = rz_new
        if alphas:
            theta = max(_theta_min(alphas, betas), 1e-300)
            err = rz_new / theta
        return _Solve(value, x, _RITZ_MARGIN * err, method, k, converged=False)

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
        # not positive definite (or too close to singular for Cholesky): Mag(t) is defined whenever
        # Z_t is invertible, so try an LU factorisation before calling the matrix singular
        lu = self._solve_lu()
        if best is not None and best.w is not None and not (lu.w is not None and lu.error <= best.error):
            return self._finish(best.w, best.value, best.error, best.method, best.iterations)
        return lu

    def _solve_lu(self) -> _Solve:
        """LU (partial pivoting) solve with float64 refinement, for an invertible Z_t that is not positive definite.

        The value uses the same variational formula (valid for any symmetric Z), with the
        residual-based error bound |r^T Z^{-1} r| <= ||r|| ||Z^{-1} r||, Z^{-1} r from the LU
        factors. Z_t is called singular when a pivot is exactly zero, when LAPACK's estimate of
        the reciprocal condition number is below eps (no correct digit can be expected), or when
        the estimated error is as large as the value itself.
        """
        self._factor = None
        self._f32 = None
        Z = self.Z
        if Z.nbytes > _LAPACK_MAX_BYTES:  # the bundled LAPACK crashed on such sizes (see _cholesky)
            return _Solve(math.nan, None, math.inf, "singular", 0, converged=False, singular=True)
        getrf, getrs, gecon = sla.get_lapack_funcs(("getrf", "getrs", "gecon"), (Z,))
        # Z is symmetric: its transpose is the Fortran-ordered view LAPACK wants (a plain copy)
        with _factor_blas():
            lu, piv, info = getrf(Z.T)
        if info > 0:  # U[info - 1, info - 1] is exactly zero
            return _Solve(math.nan, None, math.inf, "singular", 0, converged=False, singular=True, rcond=0.0)
        anorm = float(np.max(np.sum(Z, axis=1)))  # 1-norm (= inf-norm) of the non-negative symmetric Z
        rcond = float(gecon(lu, anorm, norm="1")[0])
        if not rcond >= _EPS:
            return _Solve(math.nan, None, math.inf, "singular", 0, converged=False, singular=True, rcond=rcond)
        x = getrs(lu, piv, self.ones)[0]
        r = self.ones - Z @ x
        steps = 0
        while steps < 5:  # refinement: each step shrinks the error by about cond(Z) * eps
            z = getrs(lu, piv, r)[0]
            x += z
            r = self.ones - Z @ x
            steps += 1
            if float(np.max(np.abs(z))) <= _EPS * float(np.max(np.abs(x))):
                break
        z = getrs(lu, piv, r)[0]
        value = float(x.sum() + x @ r)
        err = float(np.linalg.norm(r) * np.linalg.norm(z))
        if not (np.isfinite(value) and err < abs(value)):
            return _Solve(math.nan, None, math.inf, "singular", steps, converged=False, singular=True, rcond=rcond)
        res = self._finish(x, value, err, "lu", steps)
        res.rcond = rcond
        return res

    def release(self) -> None:
        """Drop the factor buffers."""
        self._factor = None
        self._f32 = None

