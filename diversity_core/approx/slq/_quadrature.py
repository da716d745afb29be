r"""The maths of stochastic Lanczos quadrature: recurrences, Gauss and Gauss-Radau rules, error terms.

For a symmetric A and a vector z, Lanczos from z gives a tridiagonal T_m with
:math:`z^T f(A) z \approx \|z\|^2 e_1^T f(T_m) e_1` (the m-node Gauss rule of the spectral
measure :math:`\mu_z = \sum_i (u_i^T z)^2 \delta_{\lambda_i}`). Adding one node at a lower
bound a of the spectrum gives the (m+1)-node Gauss-Radau rule
(:math:`\tilde T_{m+1}` with last diagonal entry :math:`a + \beta_m^2 [(T_m - a)^{-1}]_{mm}`).
Their errors are

.. math:: \int f\,d\mu - G_m = \frac{f^{(2m)}(\eta)}{(2m)!} \int \pi_m^2\,d\mu, \qquad
          \int f\,d\mu - R_{m+1} = \frac{f^{(2m+1)}(\xi)}{(2m+1)!} \int (x - a)\,\pi_m^2\,d\mu

(Golub & Meurant 1994, 2010, Thm 6.4), with :math:`\eta, \xi` inside the spectrum's hull. For
:math:`f(x) = x^q` (q > 0) and :math:`f(x) = -x \log x` every derivative has a constant sign on
(0, inf), so with a = 0 the two rules bracket the integral: :math:`R \le \int f d\mu \le G` when
the 2m-th derivative is negative (0 < q < 1, q = 1, 2 < q < 3, ...) and the other way round
otherwise; for integer q < 2m both are exact. :func:`quadrature_bracket` returns both.

:class:`LanczosBatch` runs independent recurrences for many start vectors at once (one product
with A per step for all of them), with full reorthogonalisation; :class:`BlockKrylov` builds an
orthonormal basis of the block Krylov space :math:`K_s(A, \Omega)` and the projection
:math:`T = V^T A V`, from which the Lanczos coefficients of any vector of :math:`K_s` are read
without further products with A (:func:`lanczos_coefficients` on T).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import scipy.linalg

__all__ = ["spectral_values", "quadrature_bracket", "perturbation_bound", "support_bound", "trace_range",
           "LanczosBatch", "BlockKrylov", "lanczos_coefficients"]

#: A Lanczos coefficient beta below this share of the largest |alpha| is a breakdown: the Krylov
#: space of that vector is invariant, its Gauss rule exact.
_BREAKDOWN = 1e-12


# ---------------------------------------------------------------------------------------
# the spectral functions and what their traces may be
# ---------------------------------------------------------------------------------------
def spectral_values(x: np.ndarray, qs: np.ndarray) -> np.ndarray:
    r"""``f_q(x)`` for each order: :math:`x^q`, and :math:`-x \log x` at q = 1 (0 at 0); x < 0 read as 0.

    Returns an array of shape ``(len(qs),) + x.shape``.
    """
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    out = np.empty((len(qs),) + x.shape)
    for i, q in enumerate(qs):
        if q == 1.0:
            with np.errstate(divide="ignore", invalid="ignore"):
                out[i] = np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), 0.0)
        else:
            out[i] = x**q
    return out


def trace_range(q: float, n: int) -> tuple[float, float]:
    """The values ``tr f_q(rho)`` can take for a density matrix of order n (VS_q in [1, n])."""
    if q == 1.0:
        return 0.0, math.log(n)
    ends = (1.0, float(n) ** (1.0 - q))
    return min(ends), max(ends)


def perturbation_bound(S: float, n: int, qs: np.ndarray, lam_max: float = 1.0) -> np.ndarray:
    r"""Bound on :math:`|\mathrm{tr} f(A) - \mathrm{tr} f(B)|` for PSD A, B with :math:`\|A - B\|_* \le S`.

    Lidskii: the sorted eigenvalues move by :math:`\delta_i` with :math:`\sum |\delta_i| \le S`.
    With the modulus of continuity :math:`\omega` of f on :math:`[0, \lambda]` (concave;
    :math:`\lambda` = ``lam_max`` + S bounds both spectra), the change is at most
    :math:`\sum \omega(\delta_i) \le n\, \omega(S / n)`: :math:`n^{1-q} S^q` for q < 1 (Hoelder),
    :math:`S \log(n / S)` for q = 1 (while S/n <= 1/e), :math:`q \lambda^{q-1} S` for q > 1.
    """
    out = np.zeros(len(qs))
    if not S > 0:
        return out
    top = min(1.0, lam_max) + S
    for i, q in enumerate(qs):
        if q < 1.0:
            out[i] = n ** (1.0 - q) * S**q
        elif q == 1.0:
            t = S / n
            out[i] = S * math.log(1.0 / t) if t <= math.exp(-1.0) else S * (1.0 + math.log(n))
        else:
            out[i] = q * top ** (q - 1.0) * S
    return out


def support_bound(tol: float, n: int, qs: np.ndarray) -> np.ndarray:
    r"""Most the eigenvalues at or below the support threshold ``tol`` add to ``tr f``: :math:`n f(tol)`.

    The exact path drops them (:func:`~diversity_core.entropy.support_tol`); the estimate of the
    full trace differs from that value by at most this much (f increasing on [0, tol], tol < 1/e).
    """
    return n * spectral_values(np.array([tol]), qs)[:, 0]


# ---------------------------------------------------------------------------------------
# Gauss and Gauss-Radau rules from Lanczos coefficients
# ---------------------------------------------------------------------------------------
def _tridiagonal(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Stack of symmetric tridiagonal matrices (v, m, m) from ``alpha`` (v, m) and ``beta`` (v, m - 1)."""
    v, m = alpha.shape
    T = np.zeros((v, m, m))
    idx = np.arange(m)
    T[:, idx, idx] = alpha
    if m > 1:
        T[:, idx[:-1], idx[1:]] = beta
        T[:, idx[1:], idx[:-1]] = beta
    return T


def quadrature_bracket(alpha: np.ndarray, beta: np.ndarray, weight: np.ndarray, qs: np.ndarray,
                       lower: float = 0.0, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    r"""Two values bracketing :math:`z^T f_q(A) z` for each vector and order: the Gauss and Gauss-Radau rules.

    Parameters
    ----------
    alpha : ndarray of shape (v, m)
        Lanczos diagonals of v recurrences after m steps.
    beta : ndarray of shape (v, m)
        Off-diagonals; ``beta[:, m - 1]`` couples the m-th Lanczos vector to the next one and
        enters only the Radau rule.
    weight : ndarray of shape (v,)
        :math:`\|z\|^2` of each start vector.
    qs : ndarray
        Orders (finite, > 0).
    lower : float, default 0
        A lower bound of A's spectrum, the Radau node (0 for a PSD A); lowered below the
        smallest Ritz value when round-off puts one under it.
    upper : float, default inf
        An upper bound of A's spectrum, used only where the rules do not bracket (below).

    Returns
    -------
    gauss, radau : ndarray of shape (len(qs), v)
        The m-node Gauss and (m+1)-node Gauss-Radau rules; the integral lies between them.

    Notes
    -----
    The rules bracket the integral when the 2m-th and (2m+1)-th derivatives of f have opposite
    constant signs on (0, inf): for :math:`x^q` when q <= 1 or 2m > q. Otherwise (large q, few
    steps) the pair returned is the moment bracket
    :math:`[M_r^{q-p} / M_p^{q-r},\ u^{q-r} M_r]` with p = 2m - 2, r = 2m - 1 (log-convexity of
    :math:`j \mapsto \log M_j`, and :math:`x^q \le u^{q-r} x^r` on [0, u]) from the moments the
    Gauss rule reproduces exactly (degree <= 2m - 1).
    """
    v, m = alpha.shape
    qs = np.asarray(qs, dtype=np.float64)
    theta, U = np.linalg.eigh(_tridiagonal(alpha, beta[:, : m - 1]))
    w = U[:, 0, :] ** 2
    gauss = np.einsum("vk,qvk->qv", w, spectral_values(theta, qs)) * weight
    # Radau: one node at a <= spectrum; a Ritz value under a (round-off on a PSD A) lowers a
    a = np.minimum(lower, theta.min(axis=1) * (1.0 + 1e-9) - 1e-300)
    gap = np.maximum(theta - a[:, None], 1e-300)
    last = np.einsum("vk,vk->v", U[:, m - 1, :] ** 2, 1.0 / gap)
    extra = a + beta[:, m - 1] ** 2 * last
    Tr = np.zeros((v, m + 1, m + 1))
    Tr[:, :m, :m] = _tridiagonal(alpha, beta[:, : m - 1])
    Tr[:, m, m] = extra
    Tr[:, m - 1, m] = Tr[:, m, m - 1] = beta[:, m - 1]
    finite = np.isfinite(extra)
    radau = gauss.copy()
    if finite.any():
        th, Ur = np.linalg.eigh(Tr[finite])
        radau[:, finite] = np.einsum("vk,qvk->qv", Ur[:, 0, :] ** 2, spectral_values(th, qs)) * weight[finite]
    loose = (qs > 1.0) & (2 * m <= qs)
    if loose.any():
        # the moments M_j = sum w theta^j of the Gauss rule are exact up to j = 2m - 1
        p, r = 2 * m - 2, 2 * m - 1
        pos = np.maximum(theta, 0.0)
        mp = np.einsum("vk,vk->v", w, pos**p)
        mr = np.einsum("vk,vk->v", w, pos**r)
        for i in np.flatnonzero(loose):
            q = qs[i]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
                lo = np.where((mp > 0) & (mr > 0), np.exp((q - p) * np.log(np.where(mr > 0, mr, 1.0))
                                                          - (q - r) * np.log(np.where(mp > 0, mp, 1.0))), 0.0)
                hi = upper ** (q - r) * mr if math.isfinite(upper) else np.full(v, np.inf)
            gauss[i], radau[i] = lo * weight, np.maximum(hi, lo) * weight
    return gauss, radau


# ---------------------------------------------------------------------------------------
# Lanczos recurrences
# ---------------------------------------------------------------------------------------
class LanczosBatch:
    """Independent Lanczos recurrences from the columns of Z, advanced together by one product per step.

    ``vectors()`` gives the (dim, v) block to multiply by A; ``advance(A @ vectors())`` takes one
    step (full reorthogonalisation, twice, of each recurrence against its own basis). A start
    vector of norm 0 contributes weight 0. ``alpha``/``beta`` (v, steps) fill as steps are taken;
    the basis grows as they do (most recurrences stop well before ``max_steps``).
    """

    def __init__(self, Z: np.ndarray, max_steps: int, rng: np.random.Generator):
        dim, v = Z.shape
        self.dim, self.v, self.max_steps, self.rng = dim, v, int(max_steps), rng
        norms = np.linalg.norm(Z, axis=0)
        self.weight = norms**2
        self.U = np.zeros((v, min(self.max_steps, 8) + 1, dim))
        start = Z.T.copy()
        empty = norms <= 0
        if empty.any():
            start[empty] = rng.standard_normal((int(empty.sum()), dim))
            norms = np.where(empty, np.linalg.norm(start, axis=1), norms)
        self.U[:, 0] = start / norms[:, None]
        self.alpha = np.zeros((v, self.max_steps))
        self.beta = np.zeros((v, self.max_steps))
        self.steps = 0

    @property
    def active(self) -> bool:
        return self.steps < self.max_steps

    def vectors(self) -> np.ndarray:
        """The current Lanczos vectors, shape (dim, v)."""
        return self.U[:, self.steps].T

    def advance(self, W: np.ndarray) -> None:
        """One step, given ``W = A @ vectors()`` of shape (dim, v)."""
        j = self.steps
        w = np.array(W.T, dtype=np.float64)
        u = self.U[:, j]
        a = np.einsum("vd,vd->v", u, w)
        self.alpha[:, j] = a
        w -= a[:, None] * u
        if j > 0:
            w -= self.beta[:, j - 1][:, None] * self.U[:, j - 1]
        basis = self.U[:, : j + 1]
        for _ in range(2):
            c = np.matmul(basis, w[:, :, None])
            w -= np.matmul(basis.transpose(0, 2, 1), c)[:, :, 0]
        b = np.linalg.norm(w, axis=1)
        scale = np.max(np.abs(self.alpha[:, : j + 1]), axis=1)
        broken = b <= _BREAKDOWN * np.maximum(scale, 1e-300)
        if broken.any():
            # an invariant subspace: the rule is exact; go on from a fresh vector orthogonal to
            # the basis, decoupled (beta = 0), which the first component never sees
            b[broken] = 0.0
            fresh = self.rng.standard_normal((int(broken.sum()), self.dim))
            sub = basis[broken]
            for _ in range(2):
                fresh -= np.matmul(sub.transpose(0, 2, 1), np.matmul(sub, fresh[:, :, None]))[:, :, 0]
            w[broken] = fresh / np.linalg.norm(fresh, axis=1)[:, None]
        self.beta[:, j] = b
        if j + 1 >= self.U.shape[1]:
            grown = np.zeros((self.v, min(self.max_steps, 2 * j) + 1, self.dim))
            grown[:, : j + 1] = self.U[:, : j + 1]
            self.U = grown
        self.U[:, j + 1] = np.where(broken[:, None], w, w / np.where(b > 0, b, 1.0)[:, None])
        self.steps = j + 1

    def bracket(self, qs: np.ndarray, upper: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
        """``(gauss, radau)`` of shape (len(qs), v) after the steps taken (at least one); see :func:`quadrature_bracket`."""
        m = self.steps
        return quadrature_bracket(self.alpha[:, :m], self.beta[:, :m], self.weight, qs, upper=upper)


def lanczos_coefficients(T: np.ndarray, Y: np.ndarray, steps: int,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` of shape (v, steps) of Lanczos on the small symmetric T from the columns of Y."""
    batch = LanczosBatch(Y, steps, rng)
    while batch.active:
        batch.advance(T @ batch.vectors())
    return batch.alpha, batch.beta


class BlockKrylov:
    r"""An orthonormal basis V of the block Krylov space :math:`K_t(A, \Omega)` and :math:`T = V^T A V`.

    Block t is formed from the product of block t - 1 (block Lanczos with full
    reorthogonalisation, twice); columns whose residual vanishes are dropped (pivoted QR), so the
    blocks may shrink and the space may become invariant (``exhausted``: then T is A restricted
    to it, exactly). T is block tridiagonal: the diagonal block i and the block below it come
    from the product ``A V_i``. After p products there are p + 1 blocks, and for a vector x of
    :math:`K_s` (blocks 0..s-1) the matrix T reproduces :attr:`exact_steps` ``= p + 1 - s`` steps
    of Lanczos on A from x, with no further product.
    """

    def __init__(self, Omega: np.ndarray, max_blocks: int):
        n, b = Omega.shape
        self.n, self.b, self.max_blocks = n, b, max(1, int(max_blocks))
        self.cap = min(n, b * self.max_blocks)            # the basis grows up to this many columns
        self.V = np.zeros((n, min(self.cap, b * 12)))
        self._diag: list = []
        self._below: list = []
        Q = self._orth(Omega, None, 1.0)[:, : self.cap]
        self.V[:, : Q.shape[1]] = Q
        self.starts = [0, Q.shape[1]]
        self.exhausted = Q.shape[1] == 0

    @property
    def blocks(self) -> int:
        """Blocks formed so far."""
        return len(self.starts) - 1

    @property
    def products(self) -> int:
        """Products with A taken so far."""
        return len(self._diag)

    @property
    def active(self) -> bool:
        """Whether another product would form another block."""
        return not self.exhausted and self.blocks < self.max_blocks

    def exact_steps(self, s: int) -> float:
        """Lanczos steps on A that T reproduces for vectors of the first s blocks (inf once exhausted)."""
        return math.inf if self.exhausted else max(0, self.blocks - s)

    def columns(self, blocks: int) -> int:
        """Columns of V in the first ``blocks`` blocks."""
        return self.starts[min(blocks, self.blocks)]

    def vectors(self) -> np.ndarray:
        """The newest block (n, b_i): the next one to multiply by A."""
        return self.V[:, self.starts[-2]: self.starts[-1]]

    def _orth(self, R: np.ndarray, basis: Optional[np.ndarray], size: float) -> np.ndarray:
        """Orthonormal columns spanning R (already orthogonal to ``basis``), dropping directions below 1e-10 ``size``.

        A plain QR first; a pivoted one when a column nearly vanished (rank detection), and one
        more projection against ``basis`` when the kept columns lost digits to cancellation.
        """
        if R.shape[1] == 0 or not size > 0:
            return R[:, :0]
        Q, Rr = np.linalg.qr(R)
        d = np.abs(np.diagonal(Rr))
        if d.min(initial=np.inf) <= 1e-8 * size:
            Q, Rr, _ = scipy.linalg.qr(R, mode="economic", pivoting=True)
            d = np.abs(np.diagonal(Rr))
        keep = int(np.sum(d > 1e-10 * size))
        Q = Q[:, :keep]
        if basis is not None and basis.shape[1] and keep and d[:keep].min() < 1e-4 * size:
            Q -= basis @ (basis.T @ Q)
            Q, _ = np.linalg.qr(Q)
        return Q

    def advance(self, W: np.ndarray) -> None:
        """Take ``W = A @ vectors()``: the diagonal block of T, and the next block with the block below."""
        c0, c1 = self.starts[-2], self.starts[-1]
        basis = self.V[:, :c1]
        W = np.asarray(W, dtype=np.float64)
        C = basis.T @ W
        R = W - basis @ C
        C2 = basis.T @ R
        R -= basis @ C2
        D = (C + C2)[c0:c1]
        self._diag.append(0.5 * (D + D.T))
        room = self.cap - c1
        if not self.active or room == 0:
            self.exhausted = self.exhausted or c1 >= self.n
            self._below.append(np.zeros((0, c1 - c0)))
            return
        size = float(np.linalg.norm(W)) / math.sqrt(max(1, W.shape[1]))
        Q = self._orth(R, basis, size)[:, :room]
        k = Q.shape[1]
        if c1 + k > self.V.shape[1]:
            grown = np.zeros((self.n, min(self.cap, max(c1 + k, 2 * self.V.shape[1]))))
            grown[:, :c1] = self.V[:, :c1]
            self.V = grown
        self.V[:, c1: c1 + k] = Q
        self._below.append(Q.T @ W)
        self.starts.append(c1 + k)
        if k == 0:
            self.starts.pop()
            self.exhausted = True

    def matrix(self) -> np.ndarray:
        """Block tridiagonal T over the blocks formed (the last block's own diagonal is 0 until multiplied)."""
        c = self.starts[-1]
        T = np.zeros((c, c))
        for i, D in enumerate(self._diag):
            a0, a1 = self.starts[i], self.starts[i + 1]
            T[a0:a1, a0:a1] = D
            B = self._below[i]
            if B.shape[0]:
                T[a1: a1 + B.shape[0], a0:a1] = B
                T[a0:a1, a1: a1 + B.shape[0]] = B.T
        return T
