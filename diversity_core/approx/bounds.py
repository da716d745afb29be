r"""Guaranteed bounds on every Vendi score from the exact top of the spectrum.

Given the k largest eigenvalues :math:`l_1 \ge \dots \ge l_k` of the density matrix rho (Lanczos,
:func:`scipy.sparse.linalg.eigsh`, on a matrix-free or stored kernel operator), the remaining
mass :math:`r = 1 - \sum_{i \le k} l_i` lies in the other :math:`m = n - k` eigenvalues, each in
:math:`[0, l_k]`. When VS_2 is known exactly (one more pass over K, or the same pass that stores
it) the tail's sum of squares :math:`s = \sum_i \lambda_i^2 - \sum_{i \le k} l_i^2` is known too.
Every VS_q is then bounded by the extremes of the tail power sum
:math:`T_q = \sum_{\text{tail}} x^q` under these constraints:

- majorisation (the Renyi entropy is Schur-concave): the flattest tail (``r / m`` each) and the
  most concentrated one (``floor(r / l_k)`` copies of ``l_k`` plus the remainder) are the
  extremes over all tails with sum r and entries in ``[0, l_k]``;
- log-convexity of :math:`g(q) = \log T_q` in q (Lyapunov's inequality): chords lie above g,
  tangents below, and :math:`g'(q) \le \log l_k`; with :math:`g(1) = \log r`,
  :math:`g(2) = \log s` and :math:`g(0) \le \log m` this gives the bounds that use s.

The derivation, with every inequality, is in ``docs/approximations.md``. The top eigenvalues
carry an absolute tolerance (the Lanczos residual plus the storage error of the operator), which
is propagated by evaluating every bound at the worst corner of the box of inputs it allows.
"""

from __future__ import annotations

import math
import time
from typing import Iterator, Optional, Sequence

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from .._config import fits_memory, memory_budget
from .._orders import check_q
from .._progress import ProgressCallback, report
from .._validation import check_option, check_scalar, check_weights
from ..exceptions import DiversityInputError, NumericalError
from ..kernels import PrecomputedKernel, _row_blocks, get_kernel, normalize_diagonal
from ..sources import RowSource, as_source
from ._results import VendiBounds

__all__ = ["vendi_bounds", "iter_vendi_bounds", "bounds_from_eigenvalues", "bounds_method", "DEFAULT_KS",
           "BOUND_METHODS"]

#: How the bounds get the top of the spectrum: exact Ritz values, or a sketch's lower bounds.
BOUND_METHODS = ("auto", "lanczos", "nystrom")

#: Largest n for which the Nystrom bounds add the exact VS_2 pass by default.
EXACT_VS2_MAX_N = 50_000

#: The progression of k: each step reuses the previous Ritz vectors as its starting vector.
DEFAULT_KS = (20, 50, 100, 200, 500, 1000, 2000)

#: Relative widening of every final bound: covers the round-off of the logarithms and sums here.
_ROUNDOFF = 1e-10

#: Relative error of one stored kernel entry: float32 storage, or float64 kernel evaluation.
_STORAGE_RTOL = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 1e-13}


# ---------------------------------------------------------------------------------------
# the bounds: pure functions of (top eigenvalues, tolerance, n, S2)
# ---------------------------------------------------------------------------------------
def bounds_from_eigenvalues(top, n: int, qs, *, purity: Optional[float] = None, tolerance: float = 0.0,
                            eps: float = float(np.finfo(np.float64).eps)) -> tuple[np.ndarray, np.ndarray]:
    r"""Bounds on VS_q from the k largest eigenvalues of a density matrix (trace 1) of n items.

    Parameters
    ----------
    top : array-like of shape (k,)
        The k largest eigenvalues (any order; k may be 0), each known to within ``tolerance``.
    n : int
        Size of the matrix (number of items).
    qs : float or sequence
        Orders in [0, inf].
    purity : float, optional
        The exact :math:`\sum_i \lambda_i^2` (``1 / VS_2``), which tightens every bound.
    tolerance : float, default 0
        Absolute error allowed on each of ``top`` (and relative ``tolerance / max(top)`` on purity).
    eps : float
        Machine epsilon of the matrix's precision: VS_0 counts eigenvalues above
        ``n * eps * lambda_max``, the rule of :class:`~diversity_core.spectrum.Spectrum`.

    Returns
    -------
    low, high : ndarray
        ``low <= VS_q <= high`` for each order, non-increasing in q over the given orders.

    Examples
    --------
    >>> lo, hi = bounds_from_eigenvalues([0.5, 0.5], 2, [1.0])   # the whole spectrum: exact
    >>> round(float(lo[0]), 9), round(float(hi[0]), 9)
    (2.0, 2.0)
    """
    top = np.sort(np.asarray(top, dtype=np.float64).ravel())[::-1]
    n = check_scalar(n, "n", int, min_val=1)
    if top.size > n or (top.size and (not np.isfinite(top).all() or top[-1] < -tolerance)):
        raise DiversityInputError(f"top must hold at most n = {n} finite non-negative eigenvalues.")
    qs = check_q(qs).ravel()
    order = np.argsort(qs, kind="stable")
    low, high = _bounds(top, n, qs[order], purity, float(tolerance), eps)
    out_lo, out_hi = np.empty_like(low), np.empty_like(high)
    out_lo[order], out_hi[order] = low, high
    return out_lo, out_hi


def _log_sum(logs) -> float:
    """Log of a sum of exp(logs) (-inf entries allowed)."""
    logs = np.asarray(logs, dtype=np.float64)
    if logs.size == 0 or not np.isfinite(logs.max()):
        return -math.inf
    top = logs.max()
    return float(top + math.log(np.exp(logs - top).sum()))


def _log(x: float) -> float:
    """Log x with log 0 = -inf."""
    return math.log(x) if x > 0 else -math.inf


def _greedy(r: float, c: float, m: int) -> tuple[float, float, float]:
    """The most concentrated tail: ``(j, c_eff, rem)`` with j copies of c_eff and a remainder.

    ``c_eff = max(c, r / m)`` keeps the construction monotone in r and c even at corners of the
    tolerance box where r > m c (no such tail exists there; the flat one is then the answer).
    """
    c = max(c, r / m)
    j = min(math.floor(r / c * (1 + 1e-15)), m) if c > 0 else 0
    rem = max(r - j * c, 0.0)
    if j == m:
        rem = 0.0
    return float(j), c, rem


def _tail_log_power(q: float, r: float, c: float, m: int, s: Optional[float]) -> tuple[list, list]:
    """Candidate lower and upper bounds on ``log T_q`` (tail of m entries in [0, c], sum r, squares s).

    Each candidate is monotone in each of r, c and s, so its worst case over a box of inputs is
    at a corner; the caller takes every candidate's worst corner first and the best candidate
    after (the maximum of two bounds monotone in opposite directions is not monotone).
    Slots that do not apply hold -inf (lower) or +inf (upper).
    """
    if r <= 0 or m == 0:
        return [-math.inf] * 4, [-math.inf] * 3
    lr, lc, lm = math.log(r), _log(c), math.log(m)
    uniform = lm + q * (lr - lm)
    j, ce, rem = _greedy(r, c, m)
    greedy = _log_sum([_log(j) + q * _log(ce), q * _log(rem) if rem > 0 else -math.inf])
    lows = [uniform if q > 1 else greedy, -math.inf, -math.inf, -math.inf]
    highs = [greedy if q > 1 else uniform, math.inf, math.inf]
    if s is not None and s > 0:
        ls = math.log(s)
        if q > 2:
            lows[1] = ls + (q - 2) * (ls - lr)              # tangent at 2, slope >= secant(1, 2)
            if c > 0:
                highs[1] = ls + (q - 2) * lc                # slope <= log max <= log c
        elif q > 1:
            highs[1] = (2 - q) * lr + (q - 1) * ls          # chord between 1 and 2
            if c > 0:
                lows[1] = ls + (q - 2) * lc                 # tangent at 2, slope <= log c
        else:
            lows[1] = lr + (1 - q) * (lr - ls)              # tangent at 1, slope <= secant(1, 2)
            if c > 0:
                lows[2] = ls + (q - 2) * lc                 # tangent at 2, slope <= log c
            highs[2] = (1 - q / 2) * lm + (q / 2) * ls      # chord between 0 (g(0) <= log m) and 2
    return lows, highs


def _neg_xlogx_range(a: float, b: float) -> tuple[float, float]:
    """``(min, max)`` of -x log x over [a, b] (0 <= a <= b); its maximum is at 1/e."""
    def f(x):
        return -x * math.log(x) if x > 0 else 0.0

    fa, fb = f(a), f(b)
    hi = max(fa, fb, f(1 / math.e) if a <= 1 / math.e <= b else -math.inf)
    return min(fa, fb), hi


def _tail_entropy(r: float, c: float, m: int, s: Optional[float]) -> tuple[list, list]:
    """Candidate bounds on the tail entropy ``-sum x log x`` (see :func:`_tail_log_power`)."""
    if r <= 0 or m == 0:
        return [0.0] * 3, [0.0]
    hi = r * math.log(m / r)                                # flat tail
    j, ce, rem = _greedy(r, c, m)
    greedy = -(j * ce * _log(ce) if j else 0.0) - (rem * math.log(rem) if rem > 0 else 0.0)
    lows = [greedy, -r * _log(c) if 0 < c < 1 else -math.inf, -math.inf]   # x log x <= x log c
    if s is not None and s > 0:
        lows[2] = -r * math.log(s / r)                      # g'(1) <= g(2) - g(1)
    return lows, [hi]


def _worst(candidates, corners) -> tuple[float, float]:
    """Best bound after the worst corner: max over candidates of the min over corners (and for uppers)."""
    lows, highs = zip(*(candidates(*corner) for corner in corners))
    lo = max(min(col) for col in zip(*lows))
    hi = min(max(col) for col in zip(*highs))
    return lo, hi


def _corners(lo: float, hi: float) -> tuple[float, ...]:
    """The two ends of an interval (one when they coincide)."""
    return (lo,) if lo == hi else (lo, hi)


def _box(rs, cs, s_lo, s_hi) -> list:
    """Every corner ``(r, c, s)`` of the box of inputs (s None when the purity is unknown)."""
    ss = (None,) if s_lo is None else _corners(s_lo, s_hi)
    return [(r, c, s) for r in rs for c in cs for s in ss]


def _bounds(top, n, qs, purity, delta, eps):
    """Bounds for sorted orders; see :func:`bounds_from_eigenvalues`."""
    k = top.size
    m = n - k
    t_lo = np.maximum(top - delta, 0.0)
    t_hi = np.minimum(top + delta, 1.0)
    # the tail's mass, cap and sum of squares, each as an interval
    # 1 - sum(top) cancels: allow the summation's round-off (k + 4) eps on r
    r_err = (k + 4) * eps
    r_lo = max(0.0, 1.0 - float(t_hi.sum()) - r_err)
    r_hi = min(1.0, max(0.0, 1.0 - float(t_lo.sum()) + r_err))
    # any upper bound on the tail's entries serves as the cap: lambda_{k+1} <= lambda_k <= l_k + delta
    c_hi = float(t_hi[-1]) if k else 1.0
    s_lo = s_hi = None
    if purity is not None:
        dp = delta * 4.0 * max(1.0, float(top[0]) if k else 1.0) + 1e-15
        s_lo = max(0.0, purity - dp - float(np.sum(t_hi**2)))
        s_hi = max(0.0, purity + dp - float(np.sum(t_lo**2)))
        if not k:
            # lambda_max^2 <= sum lambda^2: every eigenvalue is at most sqrt(purity)
            c_hi = min(c_hi, math.sqrt(purity + dp))
    # The Spectrum drops eigenvalues at or below tol = n eps lambda_max (round-off) before
    # scoring: the tail may hold up to z of such mass, so the lower bounds count only the mass
    # above it (r_sup) and the top values above it, and the final band widens by ~z.
    tol_hi = n * eps * (float(t_hi[0]) if k else 1.0)
    z = m * tol_hi
    r_sup = max(0.0, r_lo - z)
    low = np.empty(qs.size)
    high = np.empty(qs.size)
    for i, q in enumerate(qs):
        if q == 0:
            low[i], high[i] = _rank_bounds(t_lo, t_hi, n, m, r_lo, c_hi, s_hi, eps)
        elif math.isinf(q):
            if k:
                low[i], high[i] = 1.0 / t_hi[0], (1.0 / t_lo[0] if t_lo[0] > 0 else float(n))
            elif purity is not None:
                dp = 1e-15 + 1e-12 * purity
                low[i], high[i] = 1.0 / math.sqrt(purity + dp), 1.0 / max(purity - dp, 1.0 / n)
            else:
                low[i], high[i] = 1.0, float(n)
        elif q == 1:
            h_lo = h_hi = 0.0
            for a, b in zip(t_lo, t_hi):
                lo_i, hi_i = _neg_xlogx_range(a, b)
                h_lo += lo_i
                h_hi += hi_i
            tail_lo, tail_hi = _worst(lambda r, c, s: _tail_entropy(r, c, m, s),
                                      _box(_corners(r_sup, r_hi), (c_hi,), s_lo, s_hi))
            low[i], high[i] = math.exp(h_lo + tail_lo), math.exp(h_hi + tail_hi)
        else:
            # q < 1: values at or below tol are dropped (they would only add to the sum)
            kept = t_lo > (tol_hi if q < 1 else 0.0)
            p_lo = _log_sum(q * np.log(t_lo[kept])) if k else -math.inf
            p_hi = _log_sum(q * np.log(t_hi[t_hi > 0])) if k else -math.inf
            tail_lo, tail_hi = _worst(lambda r, c, s, q=q: _tail_log_power(q, r, c, m, s),
                                      _box(_corners(r_sup if q < 1 else r_lo, r_hi), (c_hi,),
                                           s_lo, s_hi))
            s_sum_lo = _log_sum([p_lo, tail_lo])
            s_sum_hi = _log_sum([p_hi, tail_hi])
            a, b = s_sum_lo / (1 - q), s_sum_hi / (1 - q)
            lo_v, hi_v = (math.exp(min(a, b)), math.exp(max(a, b)))
            low[i], high[i] = lo_v, hi_v
    # every VS_q lies in [1, n]
    np.clip(low, 1.0, n, out=low)
    np.clip(high, 1.0, n, out=high)
    return _finish_band(low, high, qs, n, _ROUNDOFF + 10.0 * z)


def _finish_band(low: np.ndarray, high: np.ndarray, qs: np.ndarray, n: int, widen: float) -> tuple:
    """Monotone in q, widened by ``widen`` for round-off, integers at q = 0, within [1, n]."""
    # VS_q is non-increasing in q: a lower bound at a larger order bounds every smaller one
    low = np.maximum.accumulate(low[::-1])[::-1]
    high = np.minimum.accumulate(high)
    low *= 1.0 - widen
    high *= 1.0 + widen
    zero = qs == 0  # VS_0 counts the nonzero eigenvalues: an integer
    low[zero] = np.ceil(low[zero] * (1 - 1e-9))
    high[zero] = np.floor(high[zero] * (1 + 1e-9))
    low = np.clip(low, 1.0, n)
    return low, np.clip(np.maximum(high, low), 1.0, n)


def _rank_bounds(t_lo, t_hi, n, m, r_lo, c_hi, s_hi, eps) -> tuple[float, float]:
    """Bounds on the number of eigenvalues above the support threshold ``n eps lambda_max``."""
    lmax_hi = float(t_hi[0]) if t_hi.size else 1.0
    tol_hi = n * eps * lmax_hi
    tol_lo = n * eps * (float(t_lo[0]) if t_lo.size else 0.0)
    top_lo = int(np.count_nonzero(t_lo > tol_hi))
    top_hi = int(np.count_nonzero(t_hi > tol_lo))
    tail_lo = 0.0
    above = r_lo - m * tol_hi     # mass of the tail entries above the threshold
    if m and above > 0 and c_hi > 0:
        tail_lo = math.ceil(above / c_hi)
        if s_hi:
            # Cauchy-Schwarz on the entries above the threshold: (sum x)^2 <= count * sum x^2
            tail_lo = max(tail_lo, math.ceil(above * above / s_hi * (1 - 1e-12)))
    return float(max(1, top_lo + min(tail_lo, m))), float(top_hi + m)


# ---------------------------------------------------------------------------------------
# the operator: rho as a stored matrix (float64 or float32) or matrix-free blocks of K
# ---------------------------------------------------------------------------------------
class _DensityOperator:
    """rho = diag(sqrt p) K diag(sqrt p) for Lanczos: stored when it fits the budget, else in blocks.

    Building it (or one matrix-free pass) also gives ``purity = sum rho_ij^2`` and the trace.
    """

    def __init__(self, kern, X, p, *, storage: str, block_rows: int):
        self.kern, self.X, self.n = kern, X, X.shape[0]
        self.w = np.full(self.n, 1.0 / self.n) if p is None else p
        self.sw = np.sqrt(self.w)
        self.blocks = _row_blocks(self.n, block_rows)
        self.storage = storage
        self.R = None
        self.matvecs = 0
        if storage in ("float64", "float32"):
            dtype = np.dtype(storage)
            self.R = np.empty((self.n, self.n), dtype=dtype)
            purity = trace = 0.0
            for rows in self.blocks:
                B = self._block(rows)
                purity += float(np.einsum("ij,ij->", B, B))
                trace += float(np.trace(B[:, rows]))
                self.R[rows] = B
            self.purity, self.trace = purity, trace
        else:
            self.purity = self.trace = None
        self.rtol = _STORAGE_RTOL[np.dtype(np.float32 if storage == "float32" else np.float64)]

    def _block(self, rows) -> np.ndarray:
        """Rows ``rows`` of rho, float64."""
        B = self.kern.gram(self.X[rows], self.X, check_input=False)
        B *= self.sw[rows, None]
        B *= self.sw[None, :]
        return B

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """Rho V, block by block (float64 products; float32 entries are converted per block)."""
        V = np.asarray(V, dtype=np.float64).reshape(self.n, -1)
        out = np.empty_like(V)
        self.matvecs += V.shape[1]
        if self.storage == "float64":
            return self.R @ V
        purity = trace = 0.0
        for rows in self.blocks:
            B = self.R[rows].astype(np.float64) if self.R is not None else self._block(rows)
            if self.R is None and self.purity is None:
                purity += float(np.einsum("ij,ij->", B, B))
                trace += float(np.trace(B[:, rows]))
            out[rows] = B @ V
        if self.R is None and self.purity is None:
            self.purity, self.trace = purity, trace
        return out

    def linear_operator(self) -> LinearOperator:
        """A scipy LinearOperator (symmetric, float64)."""
        return LinearOperator((self.n, self.n), matvec=lambda v: self.matmat(v)[:, 0], matmat=self.matmat,
                              dtype=np.float64)


def _ritz(op: _DensityOperator, k: int, v0, rng) -> tuple[np.ndarray, np.ndarray, float]:
    """Top-k Ritz values (descending), vectors, and the residual norm ||rho V - V Theta||_F."""
    if v0 is None:
        v0 = rng.standard_normal(op.n)
    ncv = min(op.n, max(2 * k + 1, 20))
    try:
        theta, V = eigsh(op.linear_operator(), k=k, which="LA", v0=v0, ncv=ncv, tol=1e-10)
    except (ArpackError, ArpackNoConvergence) as exc:
        raise NumericalError(f"the Lanczos solver (scipy eigsh, k = {k}) failed: {exc}") from exc
    idx = np.argsort(theta)[::-1]
    theta, V = theta[idx], V[:, idx]
    R = op.matmat(V) - V * theta[None, :]
    return theta, V, float(np.linalg.norm(R))


# ---------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------
def iter_vendi_bounds(
    X,
    *,
    kernel="rbf",
    ks: Sequence[int] = DEFAULT_KS,
    qs=None,
    weights=None,
    time_budget: Optional[float] = None,
    storage: str = "auto",
    n_eigenvectors: int = 0,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> Iterator[VendiBounds]:
    """Progressive guaranteed bounds: yields a :class:`VendiBounds` for k = 0 and then each k of ``ks``.

    The first result (k = 0) uses only the trace and the exact VS_2; each later one adds the
    top-k eigenvalues from Lanczos, started from the previous Ritz vectors. The progression
    stops before a step whose predicted time would overrun ``time_budget`` (seconds), or when k
    reaches n - 1; stop consuming the iterator to stop earlier. Parameters as for
    :func:`vendi_bounds`.
    """
    from .._validation import check_random_state
    from ..vendi import default_q_grid

    start = time.perf_counter()
    kern = get_kernel(kernel, **kernel_params)
    generator = check_random_state(rng)
    qs = default_q_grid() if qs is None else np.sort(check_q(qs).ravel())
    if storage not in ("auto", "float64", "float32", "matrix-free"):
        raise DiversityInputError(
            f"storage must be one of 'auto', 'float64', 'float32', 'matrix-free'; got {storage!r}."
        )
    ks = sorted({check_scalar(k, "k", int, min_val=1) for k in np.atleast_1d(ks)})
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    if time_budget is not None:
        time_budget = check_scalar(time_budget, "time_budget", float, min_val=0.0, include_boundaries="neither")
    if isinstance(kern, PrecomputedKernel):
        from .._validation import check_kernel_matrix

        K = normalize_diagonal(check_kernel_matrix(X))
        n = K.shape[0]
        p = check_weights(weights, n)
        X, kern = np.arange(n, dtype=np.float64)[:, None], _IndexKernel(K)
    else:
        source = as_source(X)
        if isinstance(source, RowSource):
            X = source.read()
        X = kern.validate(X)
        n = X.shape[0]
        p = check_weights(weights, n)
        kern = kern.resolve(X)
    if storage == "auto":
        storage = _auto_storage(n)
    elif storage != "matrix-free":
        from .._config import check_memory

        check_memory(np.dtype(storage).itemsize * n * n, what=f"the {n} x {n} density matrix in {storage}",
                     hint="Use storage='matrix-free' (blocks of K recomputed at every Lanczos step).")
    report(progress, 0, 1, f"forming the {n} x {n} density matrix ({storage})")
    # a block of rows of K and its temporaries (distances, the product) take ~4 block-sized arrays
    op = _DensityOperator(kern, X, p, storage=storage,
                          block_rows=max(1, min(2048, int(memory_budget() // (32.0 * n)))))
    pass_seconds = 0.0
    if op.purity is None:
        # matrix-free: the exact VS_2 pass (half of K by symmetry, float32/CSR for fingerprints)
        # gives the purity; a Lanczos product costs about twice that pass (all of K)
        from ..blocked import vendi_2_exact

        t0 = time.perf_counter()
        if isinstance(kern, _IndexKernel):
            op.matmat(generator.standard_normal((n, 1)))
        else:
            vs2 = vendi_2_exact(X, kernel=kern, weights=p, method="blocked")
            op.purity, op.trace = vs2.purity * vs2.trace**2, vs2.trace
        pass_seconds = 2.0 * (time.perf_counter() - t0)
    trace = op.trace
    purity = op.purity / (trace * trace)
    eps = float(np.finfo(np.float64).eps)
    settings = {"method": "lanczos", "matrix": storage, "ks": [], "seconds": 0.0, "stopped": "",
                "time_budget": time_budget}

    def result(top, tolerance, vectors=None, stopped=""):
        top = np.asarray(top, dtype=np.float64) / trace
        tolerance = tolerance / trace
        low, high = _bounds(top, n, qs, purity, tolerance, eps)
        exact = ("2", "inf") if top.size else ("2",)
        settings.update(seconds=time.perf_counter() - start, stopped=stopped)
        frozen_top = top.copy()
        frozen_top.setflags(write=False)
        for a in (low, high):
            a.setflags(write=False)
        qs_out = qs.copy()
        qs_out.setflags(write=False)
        if vectors is not None:
            vectors = np.ascontiguousarray(vectors[:, :n_eigenvectors])
            vectors.setflags(write=False)
        return VendiBounds(qs=qs_out, low=low, high=high, k=int(top.size), n=n, exact_orders=exact,
                           top_eigenvalues=frozen_top, residual_mass=float(max(0.0, 1.0 - top.sum())),
                           tolerance=float(tolerance), kernel=kern.to_dict(), settings=dict(settings),
                           purity=float(purity), eigenvectors=vectors)

    ks = [k for k in ks if k < n - 1]
    # each result is yielded once the next step is decided, so it says why the progression ended
    current = ([], 0.0, None)  # (top, tolerance, vectors) of the last completed step
    v0 = None
    last_seconds, last_k = None, None
    for i, k in enumerate(ks):
        elapsed = time.perf_counter() - start
        if time_budget is not None:
            # predicted cost: ARPACK's matrix products grow about linearly in k (ncv = 2k + 1),
            # its orthogonalisation quadratically; a matrix-free pass costs pass_seconds each
            if last_seconds is not None:
                predicted = last_seconds * (k / last_k) ** 1.5
            else:
                predicted = pass_seconds * 3 * k + 1e-9 * n * k * k
            if elapsed + predicted > time_budget:
                yield result(*current, stopped=f"time budget: k = {k} predicted {predicted:.1f} s")
                return
        yield result(*current)
        report(progress, i, len(ks), f"Lanczos: top {k} eigenvalues")
        t0 = time.perf_counter()
        theta, V, res = _ritz(op, k, v0, generator)
        last_seconds, last_k = time.perf_counter() - t0, k
        v0 = V.sum(axis=1)
        settings["ks"] = settings["ks"] + [k]
        current = (theta, res + op.rtol * math.sqrt(op.purity) * 4.0, V if n_eigenvectors else None)
    yield result(*current, stopped="last k" if ks else "k must stay below n - 1")
    report(progress, len(ks), len(ks), "done")


def vendi_bounds(
    X,
    *,
    kernel="rbf",
    k=200,
    qs=None,
    weights=None,
    time_budget: Optional[float] = None,
    storage: str = "auto",
    method: str = "auto",
    m: int = 2000,
    exact_vs2: Optional[bool] = None,
    n_eigenvectors: int = 0,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> VendiBounds:
    r"""Guaranteed bounds on VS_q for every order, from the top of the spectrum (Lanczos or Nystrom).

    Lanczos (below) uses the exact top-k eigenvalues and the exact VS_2; Nystrom uses eigenvalue
    lower bounds from a sketch (``method``), and ``k``, ``time_budget``, ``storage`` and
    ``n_eigenvectors`` are Lanczos settings it does not use.

    .. math:: \lambda = (l_1, \dots, l_k, \underbrace{x_1, \dots, x_{n-k}}_{\sum x = r,\ 0 \le x \le l_k,\
              \sum x^2 = s}), \qquad \mathrm{VS}_q \in [\min_x, \max_x]\ \mathrm{VS}_q(\lambda)

    Parameters
    ----------
    X : array-like of shape (n, d), RowSource, path, or (n, n) with ``kernel="precomputed"``
        Items (Lanczos reads them into memory: its operator needs them at every step).
    kernel : str or Kernel, default "rbf"
        Any kernel; meant for those without a feature map (rbf, laplacian, tanimoto, precomputed).
    k : int or sequence of int, default 200
        Number of top eigenvalues. An int runs the progression of :data:`DEFAULT_KS` up to k
        (cheap steps first, so a time budget still leaves a result); a sequence gives the steps.
    qs : sequence of orders, optional
        Default :func:`~diversity_core.vendi.default_q_grid` (0 to 100, 1 and inf).
    weights : array-like of shape (n,), optional
    time_budget : float, optional
        Seconds; no step starts whose predicted time would overrun it. The result is the last
        completed step (at worst k = 0: the bounds from the trace and VS_2 alone).
    storage : {"auto", "float64", "float32", "matrix-free"}, default "auto"
        How the Lanczos operator holds rho: the n x n matrix in float64 or float32 (the storage
        error, relative 2^-24 per entry, is added to the tolerance) when it fits the memory
        budget, else blocks of K recomputed at every product.
    method : {"auto", "lanczos", "nystrom"}, default "auto"
        ``"lanczos"``: the exact top-k eigenvalues (above). ``"nystrom"``: eigenvalue lower
        bounds from a Nystrom sketch with m landmarks (Loewner order,
        :func:`~diversity_core.approx.loewner.nystrom_bounds`): no pass over K, looser at q < 1.
        ``"auto"``: Nystrom when the kernel has features and ``storage="auto"`` would have to go
        matrix-free (not even the float32 matrix fits the memory budget), where each Lanczos
        product is a full O(n^2 d) pass; otherwise Lanczos.
    m : int, default 2000
        Landmarks of the Nystrom sketch (``method="nystrom"``).
    exact_vs2 : bool, optional
        Nystrom: also compute the exact VS_2 by one blocked pass over K. Default: when
        n <= 50,000 (the pass is O(n^2 d); about 2.5 minutes at n = 100,000, d = 64 on 2 cores).
        Lanczos always computes it.
    n_eigenvectors : int, default 0
        Number of top Ritz vectors (eigenvectors of rho in item space) to keep on the result,
        for galleries (at most k; Lanczos only).
    rng : int or Generator, optional
        Lanczos starting vector, or the Nystrom landmarks.
    progress : callable, optional
        ``progress(done, total, message)``, once per step.
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    VendiBounds
        ``.vendi(q) -> (low, high)``; ``settings`` says which method ran and, for Lanczos, how far
        the progression got and why it stopped.

    Raises
    ------
    DiversityInputError
        Bad data or options.
    MemoryBudgetError
        ``storage="float64"`` or ``"float32"`` asked for a matrix beyond the budget.
    NumericalError
        The Lanczos solver failed (``method="lanczos"``).

    Notes
    -----
    The bounds hold with certainty given that the Ritz values are the k largest eigenvalues to
    within the stated tolerance (the residual norm of the Ritz pairs plus the storage error):
    Lanczos from a random start finds them unless an eigenvalue is missed entirely, which the
    residual test cannot see. With Lanczos VS_inf is exact (1 / l_1) and VS_2 is exact; with
    Nystrom VS_2 is exact when ``exact_vs2`` is on, and VS_inf is a band. Lanczos cost: forming the
    matrix O(n^2 d) once; each step O(n^2) per product, about 2k to 6k products, plus ARPACK's
    O(n k^2) orthogonalisation; matrix-free, every product costs a pass O(n^2 d) over K.

    Examples
    --------
    >>> import numpy as np
    >>> b = vendi_bounds(np.eye(5), kernel="rbf", sigma=0.01, k=2, qs=[1.0])
    >>> [round(v, 6) for v in b.vendi(1.0)]
    [5.0, 5.0]
    """
    check_option(method, BOUND_METHODS, "method")
    if method == "auto":
        method = bounds_method(X, kernel, storage=storage, **kernel_params)
    if method == "nystrom":
        from .loewner import nystrom_bounds

        if storage != "auto":
            raise DiversityInputError(f"storage={storage!r} is a Lanczos setting; method='nystrom' stores no matrix.")
        n = _n_items(X)
        return nystrom_bounds(X, kernel=kernel, m=m, qs=qs, weights=weights, rng=rng, progress=progress,
                              exact_vs2=(n <= EXACT_VS2_MAX_N) if exact_vs2 is None else bool(exact_vs2),
                              **kernel_params)
    ks = _steps(k)
    *_, last = iter_vendi_bounds(X, kernel=kernel, ks=ks, qs=qs, weights=weights, time_budget=time_budget,
                                 storage=storage, n_eigenvectors=n_eigenvectors, rng=rng, progress=progress,
                                 **kernel_params)
    return last


def _n_items(X) -> int:
    """Number of rows of an array, sparse matrix, RowSource or path, without reading the rows."""
    source = as_source(X)
    if source is not None:
        return int(source.n)
    return int(np.shape(X)[0])


def bounds_method(X, kernel="rbf", *, storage: str = "auto", **kernel_params) -> str:
    """How ``vendi_bounds(method="auto")`` sees the top of the spectrum for these items.

    ``"nystrom"`` where Lanczos would have to recompute K at every product (not even the
    float32 n x n matrix fits the memory budget) and the kernel has items to sketch; else
    ``"lanczos"``. Reads only the number of items.

    Examples
    --------
    >>> import numpy as np
    >>> bounds_method(np.zeros((100, 3)), "rbf")
    'lanczos'
    """
    kern = get_kernel(kernel, **kernel_params)
    if storage != "auto" or kern.name == "precomputed":
        return "lanczos"
    return "nystrom" if _auto_storage(_n_items(X)) == "matrix-free" else "lanczos"


def _auto_storage(n: int) -> str:
    """``storage="auto"`` of the Lanczos operator: the n x n matrix in float64, else float32, else matrix-free."""
    # the matrix and a quarter more for the operator's temporaries
    return "float64" if fits_memory(8.0 * n * n * 1.25) else "float32" if fits_memory(4.0 * n * n * 1.25) \
        else "matrix-free"


def _steps(k) -> list[int]:
    """The progression up to an int k (the default steps below it, then k), or the given steps."""
    if np.ndim(k) == 0:
        k = check_scalar(k, "k", int, min_val=1)
        return [s for s in DEFAULT_KS if s < k] + [k]
    return [check_scalar(v, "k", int, min_val=1) for v in k]


class _IndexKernel:
    """A precomputed K seen through item indices, so the operator can take blocks ``K[rows]``."""

    has_feature_map = False
    name = "precomputed"

    def __init__(self, K: np.ndarray):
        self.K = K

    def gram(self, A, B=None, *, check_input: bool = False) -> np.ndarray:
        """Rows of K for the items whose indices are in the first column of A (all columns: B)."""
        rows = A[:, 0].astype(np.intp)
        cols = slice(None) if B is None else B[:, 0].astype(np.intp)
        return np.array(self.K[rows][:, cols], dtype=np.float64)

    def to_dict(self) -> dict:
        """JSON-ready description."""
        return {"name": "precomputed"}

