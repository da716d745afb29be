r"""The Frechet distance between Gaussians fitted to two feature sets (FID's formula).

.. math::

    \mathrm{FD} = \lVert \mu_R - \mu_G \rVert^2 + \mathrm{tr}\,\Sigma_R + \mathrm{tr}\,\Sigma_G
                  - 2\, \mathrm{tr} \big(\Sigma_R^{1/2} \Sigma_G \Sigma_R^{1/2}\big)^{1/2}

The trace of the square root is computed from a symmetric matrix, never from ``sqrtm`` of the
non-symmetric product :math:`\Sigma_R \Sigma_G` (whose complex round-off FID code discards):

- **Cholesky route** (full-rank :math:`\Sigma_R = L L^T`): :math:`L^T \Sigma_G L` is symmetric
  positive semi-definite and similar to :math:`\Sigma_R^{1/2} \Sigma_G \Sigma_R^{1/2}`, so its
  eigenvalues are the same; ``O(d^3 / 3)`` for the factor, one symmetric eigenvalue problem;
- **eigen route** (a rank-deficient covariance): :math:`\Sigma_R^{1/2} = V \sqrt{\Lambda} V^T` from
  ``eigh``, eigenvalues below the support threshold (``d eps max``) set to 0, then the eigenvalues
  of the symmetric :math:`\Sigma_R^{1/2} \Sigma_G \Sigma_R^{1/2}`;
- **primal route** (no more items than features in either set: the full sets and the subsets of
  an interval alike): with centred data
  :math:`A` (n_R x d) and :math:`B` (n_G x d),
  :math:`\mathrm{tr}(\Sigma_R^{1/2}\Sigma_G\Sigma_R^{1/2})^{1/2} = \lVert A B^T \rVert_* / \sqrt{(n_R-1)(n_G-1)}`
  (the nuclear norm: singular values of the n_R x n_G product, reduced block by block with QR so
  the larger set streams), ``O(n_R n_G d + max(n) min(n)^2)``. Its singular values are accurate to
  ``eps`` of the largest, where the eigen route's square roots of a squared scale lose half the
  digits (``sqrt(d eps)``: 2.6e-6 relative on a shift with a known answer, against 3e-14 here).

Eigenvalues of the product below the support threshold are round-off and count as zero (their
square roots, ~1e-8 of the largest each, would otherwise add up over the d - rank null
directions).
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
import scipy.linalg as sla

from .._config import chunk_rows
from .._validation import check_random_state
from ..entropy import EPS64, support_tol
from ..exceptions import NumericalError, NumericalWarning
from ._common import check_interval_options, check_sets
from ._intervals import paired_interval
from ._limits import check_work, fd_cost, fd_scale, interval_work, rescaled_frechet
from ._results import Estimate, FrechetResult

__all__ = ["frechet_distance", "Moments", "moments", "frechet_parts", "frechet_parts_of", "frechet_from_data_small",
           "FrechetParts"]


class Moments(NamedTuple):
    """Mean (d,), unbiased covariance (d, d) and number of items, all float64."""

    mean: np.ndarray
    cov: np.ndarray
    n: int


class FrechetParts(NamedTuple):
    """The terms of FD and the covariances' ranks."""

    value: float
    mean_term: float
    trace_r: float
    trace_g: float
    trace_sqrt: float
    rank_r: int
    rank_g: int


def moments(X: np.ndarray) -> Moments:
    """Mean and covariance (ddof = 1) in float64, accumulated over centred row chunks.

    Two passes (the mean, then :math:`\\sum (x - \\mu)(x - \\mu)^T` by chunks of float64 rows), so
    no ``E[x x^T] - \\mu \\mu^T`` cancellation. ``O(n d^2)``.
    """
    n, d = X.shape
    step = chunk_rows(d, 8)
    total = np.zeros(d)
    for s in range(0, n, step):
        total += np.asarray(X[s:s + step], dtype=np.float64).sum(axis=0)
    mu = total / n
    cov = np.zeros((d, d))
    for s in range(0, n, step):
        B = np.asarray(X[s:s + step], dtype=np.float64) - mu
        cov += B.T @ B
    cov /= max(n - 1, 1)
    cov = 0.5 * (cov + cov.T)
    return Moments(mu, cov, n)


def _one_thread():
    """One BLAS/LAPACK thread: decompositions on a busy machine run several times faster so."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _clipped_sqrt_sum(w: np.ndarray, d: int) -> float:
    """Sum of the square roots of the eigenvalues above the support threshold."""
    top = float(w.max()) if w.size else 0.0
    if top <= 0:
        return 0.0
    keep = w > support_tol(d, top, EPS64)
    return float(np.sqrt(w[keep]).sum())


def _rank(w: np.ndarray, d: int) -> int:
    """Numerical rank from eigenvalues (the support rule)."""
    top = float(w.max()) if w.size else 0.0
    return int(np.count_nonzero(w > support_tol(d, top, EPS64))) if top > 0 else 0


def _trace_sqrt(S1: np.ndarray, S2: np.ndarray, n1: int, n2: int) -> tuple:
    """``tr (S1^1/2 S2 S1^1/2)^1/2`` and the ranks of S1, S2 (Cholesky route, else eigen route)."""
    d = S1.shape[0]
    with _one_thread():
        full = n1 > d and n2 > d
        if full:
            try:
                L = np.linalg.cholesky(S1)
            except np.linalg.LinAlgError:
                full = False
            else:
                piv = np.diag(L) ** 2
                full = bool(piv.min() > support_tol(d, float(np.max(np.diag(S1))), EPS64))
        if full:
            # L^T S2 L is similar to S1^1/2 S2 S1^1/2; symmetrised against round-off
            P = L.T @ (S2 @ L)
            P = 0.5 * (P + P.T)
            w = sla.eigh(P, eigvals_only=True, driver="evd", check_finite=False)
            # L is invertible, so rank(L^T S2 L) = rank(S2)
            return _clipped_sqrt_sum(w, d), d, _rank(w, d)
        try:
            w1, V1 = sla.eigh(S1, driver="evd", check_finite=False)
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise NumericalError(f"the eigendecomposition of the reference covariance failed: {exc}") from None
        rank_r = _rank(w1, d)
        top = float(w1.max()) if w1.size else 0.0
        w1 = np.where(w1 > support_tol(d, top, EPS64), w1, 0.0)
        H = (V1 * np.sqrt(w1)) @ V1.T
        P = H @ S2 @ H
        P = 0.5 * (P + P.T)
        w = sla.eigh(P, eigvals_only=True, driver="evd", check_finite=False)
        return _clipped_sqrt_sum(w, d), rank_r, _rank_of(S2)


def _rank_of(S: np.ndarray) -> int:
    """Numerical rank of a symmetric PSD matrix (eigenvalues, one thread)."""
    w = sla.eigh(S, eigvals_only=True, driver="evd", check_finite=False)
    return _rank(w, S.shape[0])


def frechet_parts(m_r: Moments, m_g: Moments) -> FrechetParts:
    """FD and its terms from the two sets' moments (validated, same d).

    With fewer items than features in either set, call :func:`frechet_parts_of` with the data
    instead: the moments' eigen route is only accurate to about ``sqrt(d eps)`` there.
    """
    ts, rank_r, rank_g = _trace_sqrt(m_r.cov, m_g.cov, m_r.n, m_g.n)
    return _parts(m_r, m_g, ts, rank_r, rank_g)


def _parts(m_r: Moments, m_g: Moments, ts: float, rank_r: int, rank_g: int) -> FrechetParts:
    """FD from the moments and the trace of the square root."""
    diff = m_r.mean - m_g.mean
    mean_term = float(diff @ diff)
    tr_r, tr_g = float(np.trace(m_r.cov)), float(np.trace(m_g.cov))
    value = mean_term + tr_r + tr_g - 2.0 * ts
    # the exact FD is >= 0; a negative value is round-off of near-identical sets
    return FrechetParts(max(value, 0.0), mean_term, tr_r, tr_g, ts, rank_r, rank_g)


def frechet_parts_of(R: np.ndarray, G: np.ndarray) -> FrechetParts:
    r"""FD and its terms of two validated sets: the primal route when a set has no more items than features.

    With ``min(n_R, n_G) <= d`` a covariance is singular, and the eigen route takes square roots
    of eigenvalues of :math:`\Sigma_R^{1/2}\Sigma_G\Sigma_R^{1/2}`, a squared scale whose
    round-off (``d eps max``) becomes ``sqrt(d eps)`` relative in the trace (2.6e-6 on a shift
    with a known answer). The primal route takes the singular values of the centred cross
    product :math:`A B^T` instead (:func:`_nuclear_norm_cross`), accurate to ``eps`` of the
    largest, without forming an n x n matrix of the larger set.
    """
    m_r, m_g = moments(R), moments(G)
    d = R.shape[1]
    if min(m_r.n, m_g.n) > d:
        return frechet_parts(m_r, m_g)
    ts = _nuclear_norm_cross(R, m_r.mean, G, m_g.mean) / np.sqrt((m_r.n - 1) * (m_g.n - 1))
    with _one_thread():
        rank_r, rank_g = _rank_of(m_r.cov), _rank_of(m_g.cov)
    return _parts(m_r, m_g, ts, rank_r, rank_g)


def _nuclear_norm_cross(R: np.ndarray, mu_r: np.ndarray, G: np.ndarray, mu_g: np.ndarray) -> float:
    r""":math:`\lVert (R - \mu_R)(G - \mu_G)^T \rVert_*` without squaring its singular values.

    The smaller set's m centred rows are held; the larger set's rows stream in float64 chunks,
    each chunk's m-column block of the cross product reduced by a QR factorisation (TSQR: the
    stacked R factors have the singular values of the whole block column). ``O(n m d + n m^2)``
    time, ``O(m^2 + chunk)`` memory beyond the held rows.
    """
    if R.shape[0] > G.shape[0]:
        R, mu_r, G, mu_g = G, mu_g, R, mu_r
    S = np.asarray(R, dtype=np.float64) - mu_r  # the smaller set, m x d
    m = S.shape[0]
    step = max(chunk_rows(max(S.shape[1], m), 8), m)
    top = np.zeros((0, m))
    with _one_thread():
        for s in range(0, G.shape[0], step):
            block = (np.asarray(G[s:s + step], dtype=np.float64) - mu_g) @ S.T
            stacked = np.vstack([top, block])
            top = np.linalg.qr(stacked, mode="r") if stacked.shape[0] > m else stacked
        sv = sla.svdvals(top, check_finite=False)
    return float(sv.sum())


def frechet_from_data_small(R: np.ndarray, G: np.ndarray) -> float:
    """FD of two small sets (the subsets of an interval): :func:`frechet_parts_of`'s value."""
    return frechet_parts_of(R, G).value


def warn_rank(rank_r: int, rank_g: int, d: int, n_r: int, n_g: int, stacklevel: int = 3) -> None:
    """NumericalWarning when a covariance is rank-deficient (the FD then depends mostly on n)."""
    if rank_r >= d and rank_g >= d:
        return
    warnings.warn(
        f"the covariances have ranks {rank_r} (reference, {n_r} items) and {rank_g} (generated, {n_g} items) "
        f"in d = {d} features: rank-deficient, so the Frechet distance is dominated by the sample sizes. "
        "Use more items than features (FID uses at least 10,000 for d = 2048) or reduce d (PCA).",
        NumericalWarning, stacklevel=stacklevel,
    )


def frechet_distance(
    reference,
    generated,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
):
    r"""The Frechet distance between Gaussians fitted to two feature sets (the formula of FID).

    .. math::

        \mathrm{FD} = \lVert \mu_R - \mu_G \rVert_2^2 + \mathrm{tr}\,\Sigma_R + \mathrm{tr}\,\Sigma_G
                      - 2\,\mathrm{tr}\big(\Sigma_R^{1/2}\,\Sigma_G\,\Sigma_R^{1/2}\big)^{1/2}

    (Eq. (6) of Heusel et al. [1]_, the Frechet (2-Wasserstein) distance of
    :math:`N(\mu_R, \Sigma_R)` and :math:`N(\mu_G, \Sigma_G)`; covariances with ddof = 1). On
    Inception-v3 pool features this is FID; here it is computed on whatever features are given.

    Parameters
    ----------
    reference, generated : array-like of shape (N, d) and (M, d)
    confidence_level, n_resamples, interval_size, rng
        The interval, as :func:`~diversity_core.evaluation.prdc` (``n_resamples=0``: none).

    Returns
    -------
    FrechetResult

    Raises
    ------
    DiversityInputError
        Bad features or options; ``n_resamples`` whose estimated work exceeds
        :data:`~diversity_core.evaluation._limits.MAX_WORK` (the message gives the largest
        allowed); an FD beyond float64 (data near 1e155). Data whose largest value lies outside
        :data:`~diversity_core.evaluation._limits.FD_RANGE` (about 1e-60 to 1e60) are divided by a
        power of two first and the result multiplied back by its square: exact, as FD is
        scale-equivariant.

    Warns
    -----
    NumericalWarning
        A covariance is rank-deficient (fewer items than features, or collinear features).

    Notes
    -----
    Cost: O((N + M) d^2) for the covariances (float64, two passes), O(d^3) for the trace of the
    square root (module docstring: a Cholesky factor and one symmetric eigenvalue problem; no
    ``sqrtm`` of the non-symmetric product). Pitfalls: FD is biased upwards by about
    :math:`\mathrm{tr}(\Sigma)\,(1/N + 1/M)`-sized terms, so it depends on N and M: compare models at
    equal sizes (FID uses 50,000); it sees only the first two moments of the features.

    References
    ----------
    .. [1] M. Heusel, H. Ramsauer, T. Unterthiner, B. Nessler, S. Hochreiter, "GANs Trained by a
       Two Time-Scale Update Rule Converge to a Local Nash Equilibrium", NeurIPS 2017.
    .. [2] D. C. Dowson, B. V. Landau, "The Frechet distance between multivariate normal
       distributions", J. Multivariate Anal. 12 (1982).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> round(frechet_distance(X, X + [2.0, 0.0, 0.0], n_resamples=0).value.value, 9)   # a shift: |mu|^2
    4.0
    """
    R, G = check_sets(reference, generated)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    # count and scale guards (issue 40, _limits): days of resamples refused; data near 1e100 or 1e-100
    # divided by a power of two (exact), the result multiplied back by its square
    check_work("n_resamples", n_resamples, interval_work(R.shape[0], G.shape[0], R.shape[1], interval_size, 8, fd_cost),
               what=f"Frechet distances of subsets of at most {interval_size:,} items in d = {R.shape[1]}")
    scale = fd_scale(R, G)
    if scale != 1.0:
        R, G = R / scale, G / scale
    gen = check_random_state(rng)
    parts = frechet_parts_of(R, G)
    warn_rank(parts.rank_r, parts.rank_g, R.shape[1], R.shape[0], G.shape[0])
    result = frechet_result(R, G, parts, level, n_resamples, interval_size, gen)
    return result if scale == 1.0 else rescaled_frechet(result, scale)


def frechet_result(R, G, parts: FrechetParts, level, n_resamples, interval_size, gen, estimate=None):
    """The result from the parts, with the interval unless ``estimate`` is given (validated input)."""
    if estimate is None:
        if n_resamples:
            estimate = paired_interval(R, G, [parts.value], lambda a, b: [frechet_from_data_small(a, b)],
                                       bounds=((0.0,), (np.inf,)), level=level, n_resamples=n_resamples,
                                       interval_size=interval_size, min_items=8, rng=gen)[0][0]
        else:
            estimate = Estimate(parts.value)
    d = R.shape[1]
    return FrechetResult(
        value=estimate, mean_term=parts.mean_term, trace_reference=parts.trace_r, trace_generated=parts.trace_g,
        trace_sqrt=parts.trace_sqrt, rank_reference=parts.rank_r, rank_generated=parts.rank_g,
        rank_deficient=bool(parts.rank_r < d or parts.rank_g < d), d=int(d), n_reference=int(R.shape[0]),
        n_generated=int(G.shape[0]),
    )
