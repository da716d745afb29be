r"""The bound maths: bands on every Vendi score from partial knowledge of the spectrum.

Pure functions of eigenvalues (no data, no kernel), shared by the Lanczos bounds
(:mod:`~diversity_core.approx.bounds`), the Nystrom bounds (:mod:`~diversity_core.approx.loewner`),
the sketch estimates' guaranteed ranges (:mod:`~diversity_core.approx.sketches`) and
:meth:`~diversity_core.approx.VendiBounds.bounds_at`; they sit below all of them.

**From the exact top of the spectrum** (:func:`bounds_from_eigenvalues`). Given the k largest
eigenvalues :math:`l_1 \ge \dots \ge l_k` of the density matrix rho (Lanczos,
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

**From eigenvalue lower bounds** (:func:`bounds_from_lower_eigenvalues`): given
:math:`\mu_i \le \lambda_i` with missing mass :math:`r = 1 - \sum_i \mu_i`, the most
concentrated consistent spectrum :math:`\mu + r e_1` gives the lower bound and the water-filled
:math:`\max(\mu_i, c)` the upper bound (majorisation; :mod:`~diversity_core.approx.loewner`).

Every bound counts only eigenvalues above the support threshold of
:func:`~diversity_core.entropy.support_tol` (``n eps lambda_max``), the rule of
:class:`~diversity_core.spectrum.Spectrum`.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._deprecation import UNSET, renamed_argument
from .._orders import check_q
from .._validation import check_scalar
from ..entropy import EPS64, support_tol, vendi_from_eigenvalues
from ..exceptions import DiversityInputError

__all__ = ["bounds_from_eigenvalues", "bounds_from_lower_eigenvalues"]

#: Relative widening of every final bound: covers the round-off of the logarithms and sums here.
_ROUNDOFF = 1e-10

#: Absolute error allowed on each sketch eigenvalue of the trace-1 density (the round-off of
#: k(X, Z) W^{-1/2} with W's eigenvalues kept above ``sketches._RCOND`` times its largest, and of
#: the m x m eigensolver): measured below 1e-12; the margin costs nothing visible.
_EIG_TOL = 1e-9


# ---------------------------------------------------------------------------------------
# bounds from the exact top eigenvalues (and the purity)
# ---------------------------------------------------------------------------------------
def bounds_from_eigenvalues(top, n: int, q=None, *, purity: Optional[float] = None, tolerance: float = 0.0,
                            eps: float = EPS64, qs=UNSET) -> tuple[np.ndarray, np.ndarray]:
    r"""Bounds on VS_q from the k largest eigenvalues of a density matrix (trace 1) of n items.

    Parameters
    ----------
    top : array-like of shape (k,)
        The k largest eigenvalues (any order; k may be 0), each known to within ``tolerance``.
    n : int
        Size of the matrix (number of items).
    q : float, 'inf' or sequence
        Orders in [0, inf] (required).
    purity : float, optional
        The exact :math:`\sum_i \lambda_i^2` (``1 / VS_2``), which tightens every bound.
    tolerance : float, default 0
        Absolute error allowed on each of ``top`` (and relative ``tolerance / max(top)`` on purity).
    eps : float
        Machine epsilon of the matrix's precision: VS_0 counts eigenvalues above
        ``n * eps * lambda_max`` (:func:`~diversity_core.entropy.support_tol`), the rule of
        :class:`~diversity_core.spectrum.Spectrum`.
    qs : float or sequence, optional
        Deprecated name of ``q`` (a :class:`DeprecationWarning`).

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
    qs = _required_orders(renamed_argument(q, qs, new="q", old="qs"))
    top = np.sort(np.asarray(top, dtype=np.float64).ravel())[::-1]
    n = check_scalar(n, "n", int, min_val=1)
    if top.size > n or (top.size and (not np.isfinite(top).all() or top[-1] < -tolerance)):
        raise DiversityInputError(f"top must hold at most n = {n} finite non-negative eigenvalues.")
    order = np.argsort(qs, kind="stable")
    low, high = _bounds(top, n, qs[order], purity, float(tolerance), eps)
    out_lo, out_hi = np.empty_like(low), np.empty_like(high)
    out_lo[order], out_hi[order] = low, high
    return out_lo, out_hi


def _required_orders(q) -> np.ndarray:
    """The orders ``q`` of a band function as a flat array; None (not given) is an error."""
    if q is None:
        raise DiversityInputError("give the orders q (a number >= 0, 'inf', or a sequence of them).")
    return check_q(q).ravel()


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
    tol_hi = support_tol(n, float(t_hi[0]) if k else 1.0, eps)
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
    # the threshold moves with lambda_max: the highest possible one for the count's lower bound
    tol_hi = support_tol(n, lmax_hi, eps)
    tol_lo = support_tol(n, float(t_lo[0]) if t_lo.size else 0.0, eps)
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
# bounds from eigenvalue lower bounds (Loewner order)
# ---------------------------------------------------------------------------------------
def bounds_from_lower_eigenvalues(mu, n: int, q=None, *, purity: Optional[float] = None,
                                  tolerance: float = _EIG_TOL, qs=UNSET) -> tuple[np.ndarray, np.ndarray]:
    r"""Bounds on VS_q from eigenvalue lower bounds :math:`\mu_i \le \lambda_i` of a trace-1 density.

    .. math:: \mathrm{VS}_q(\mu + r e_1) \le \mathrm{VS}_q(\lambda) \le
              \mathrm{VS}_q(\max(\mu, c)), \qquad r = 1 - \textstyle\sum_i \mu_i

    Parameters
    ----------
    mu : array-like of shape (k,)
        Lower bounds on the k largest eigenvalues, in the sense of Weyl's inequality (the
        eigenvalues of a matrix below rho in the PSD order, e.g. a Nystrom sketch's), k <= n.
    n : int
        Number of items (the size of rho).
    q : float, 'inf' or sequence
        Orders in [0, inf] (required).
    purity : float, optional
        The exact :math:`\sum_i \lambda_i^2` (``1 / VS_2``): the band is intersected with the
        bounds from the trace and VS_2 alone.
    tolerance : float, default 1e-9
        Absolute error allowed on each of ``mu``; they are lowered by it first.
    qs : float or sequence, optional
        Deprecated name of ``q`` (a :class:`DeprecationWarning`).

    Returns
    -------
    low, high : ndarray
        ``low <= VS_q <= high`` for each order, non-increasing in q.

    Examples
    --------
    >>> lo, hi = bounds_from_lower_eigenvalues([0.5, 0.5], 2, [1.0], tolerance=0.0)
    >>> round(float(lo[0]), 6), round(float(hi[0]), 6)    # the band is widened by 1e-10 for round-off
    (2.0, 2.0)
    """
    qs_arr = _required_orders(renamed_argument(q, qs, new="q", old="qs"))
    mu = np.sort(np.asarray(mu, dtype=np.float64).ravel())[::-1]
    n = check_scalar(n, "n", int, min_val=1)
    if mu.size > n or (mu.size and (not np.isfinite(mu).all() or mu[-1] < 0 or mu.sum() > 1 + 1e-6)):
        raise DiversityInputError(
            f"mu must hold at most n = {n} finite non-negative values summing to at most 1."
        )
    order = np.argsort(qs_arr, kind="stable")
    low, high = _lower_eigenvalue_bounds(mu, n, qs_arr[order], purity, float(tolerance))
    out_lo, out_hi = np.empty_like(low), np.empty_like(high)
    out_lo[order], out_hi[order] = low, high
    return out_lo, out_hi


def _water_fill(mu: np.ndarray, n: int) -> np.ndarray:
    """``max(mu_i, c)`` over n entries (mu padded with zeros) with c making the sum 1."""
    a = np.zeros(n)
    a[n - mu.size:] = np.sort(mu)              # ascending
    above = np.cumsum(a[::-1])[::-1]            # above[j] = sum of a[j:]
    j = np.arange(1, n + 1)
    # raise the j smallest entries to c_j = (1 - sum of the rest) / j; the first j whose c_j
    # does not exceed the next entry is the water level (c_j >= a[j-1] then holds as well)
    rest = np.append(above[1:], 0.0)
    c = (1.0 - rest) / j
    nxt = np.append(a[1:], np.inf)
    level = float(c[int(np.argmax(c <= nxt))])
    return np.maximum(a, level)


def _lower_eigenvalue_bounds(mu, n, qs, purity, tol):
    """Bounds for sorted orders; see :func:`bounds_from_lower_eigenvalues`."""
    eps = EPS64
    mu = np.maximum(mu - tol, 0.0)
    mu = mu[mu > 0]
    # 1 - sum(mu) cancels: allow the summation's round-off on r
    r = min(1.0, max(0.0, 1.0 - float(mu.sum())) + (mu.size + 4) * eps)
    concentrated = mu.copy() if mu.size else np.zeros(1)
    concentrated[0] += r
    # the spectrum's support threshold (n eps lambda_max, the rule of Spectrum) only removes
    # mass from the truth: drop the concentrated vector's entries below its own threshold,
    # which is at least the true one (lambda_1 <= mu_1 + r)
    concentrated = concentrated[concentrated > support_tol(n, concentrated[0], eps)]
    flat = _water_fill(mu, n)
    low = vendi_from_eigenvalues(concentrated / concentrated.sum(), qs, normalized=True)
    high = vendi_from_eigenvalues(flat / flat.sum(), qs, normalized=True)
    low, high = np.atleast_1d(low).astype(np.float64), np.atleast_1d(high).astype(np.float64)
    if purity is not None:
        # the trace-and-VS_2 bounds of :func:`bounds_from_eigenvalues` with k = 0
        lo2, hi2 = _bounds(np.empty(0), n, qs, purity, 0.0, eps)
        low, high = np.maximum(low, lo2), np.minimum(high, hi2)
    return _finish_band(low, high, qs, n, _ROUNDOFF)
