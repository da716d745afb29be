r"""Scores of the top of a spectrum: the t-truncated Vendi score and the truncated Gaussian entropy (TCE/TIE).

t-truncated Vendi score (Ospanov & Farnia 2024)
    With :math:`\lambda_1 \ge \lambda_2 \ge \dots` the eigenvalues of K/n (a probability vector),
    keep the t largest and spread the rest of the mass evenly over them:

    .. math:: \tilde\lambda_i = \lambda_i + \frac{1 - \sum_{j \le t} \lambda_j}{t}\quad (i \le t),\qquad
              \mathrm{VS}_q^{(t)} = \mathrm{VS}_q(\tilde\lambda)

    (Definition of the t-truncated Vendi statistic of [1]; their ``truncated_vendi.py`` adds the
    tail mass the same way). The Hill number is :func:`~diversity_core.vendi_from_eigenvalues`,
    the spectrum :func:`~diversity_core.compute_spectrum`: nothing is restated.

Truncated entropy (the ``image-diversity`` package: TCE on CLIP, TIE on Inception features)
    The differential entropy of a Gaussian restricted to the top t principal directions of the
    embeddings' covariance :math:`\Sigma` (ddof = 1):

    .. math:: \mathrm{TE}_t = \frac{t}{2}\log(2\pi e) + \frac12\sum_{i \le t}\log \lambda_i(\Sigma)

    (``ClipMetrics.truncated_entropy`` / ``InceptionMetrics.truncated_entropy`` of
    ``image-diversity`` 0.1.6, t = ``n_eigs`` = 20 by default, the eigenvalues by LOBPCG on
    ``torch.cov``; here by a dense symmetric eigensolver on the float64 covariance of
    :func:`~diversity_core.evaluation._frechet.moments`).

References
----------
[1] A. Ospanov, F. Farnia, "Do Vendi Scores Converge with Finite Samples? Truncated Vendi Score
    for Finite-Sample Convergence Guarantees", UAI 2025 (arXiv:2410.21719, 2024).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._orders import parse_q
from .._validation import check_features, check_random_state, check_scalar
from ..entropy import vendi_from_eigenvalues
from ..exceptions import DiversityInputError
from ..spectrum import compute_spectrum
from ._common import check_interval_options
from ._frechet import _one_thread, moments
from ._one_set import one_set_interval
from ._pack_results import TruncatedEntropyResult, TruncatedVendiResult
from ._results import Estimate
from ._rke import resolved_kernel

__all__ = ["truncated_vendi", "truncated_entropy", "truncate_spectrum", "gaussian_entropy_top"]

#: log(2 pi e): the entropy of a unit Gaussian is half of it per dimension.
_LOG_2PIE = math.log(2.0 * math.pi * math.e)


def truncate_spectrum(eigenvalues: np.ndarray, t: int) -> np.ndarray:
    """The t-truncated probability vector: the top ``min(t, len)`` eigenvalues plus the tail's mass shared evenly.

    ``eigenvalues``: a probability vector's positive entries (a spectrum's support), any order.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))[::-1]
    top = lam[:t].copy()
    tail = max(0.0, 1.0 - float(top.sum()))
    top += tail / top.size
    return top


def _truncated_vs(X, kern, t: int, q: float) -> tuple:
    """``(VS_q^(t), VS_q, truncated vector, tail mass)`` of validated X under a resolved kernel."""
    spec = compute_spectrum(X, kernel=kern)
    support = spec.support
    lam_t = truncate_spectrum(support, t)
    tail = max(0.0, 1.0 - float(np.sort(support)[::-1][:t].sum()))
    return float(vendi_from_eigenvalues(lam_t, q)), float(spec.vendi(q)), lam_t, tail


def truncated_vendi(
    X,
    *,
    t: int = 100,
    q: float = 1.0,
    kernel="cosine",
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    **kernel_params,
) -> TruncatedVendiResult:
    r"""The t-truncated Vendi score (Ospanov & Farnia 2024): VS_q of the top t eigenvalues with the tail spread over them.

    .. math:: \mathrm{VS}_q^{(t)} = \exp\Big(\frac{1}{1-q}\log\sum_{i=1}^{t}\tilde\lambda_i^{\,q}\Big),\qquad
              \tilde\lambda_i = \lambda_i + \frac{1}{t}\Big(1 - \sum_{j=1}^{t}\lambda_j\Big)

    (Definition 2 of [1]_; :math:`\lambda_1 \ge \lambda_2 \ge \dots` the eigenvalues of K/n;
    q = 1 is the Shannon form). It lies between 1 and t.

    Parameters
    ----------
    X : array-like of shape (n, d)
    t : int, default 100
        Eigenvalues kept. At or above the spectrum's rank nothing is truncated (the value is VS_q).
    q : float, default 1
    kernel : str or Kernel, default "cosine"
        Data-dependent parameters (the rbf bandwidth) are fixed once on all of X.
    confidence_level, n_resamples, interval_size, rng
        As :func:`rke_mode_count`.
    **kernel_params

    Returns
    -------
    TruncatedVendiResult

    Raises
    ------
    DiversityInputError
        Bad features, kernel, q or t < 1.

    Notes
    -----
    Sensitive to: how the mass spreads over the t leading directions of variation; the long
    tail of small eigenvalues, which with an infinite-dimensional kernel (rbf) keeps VS_1
    growing with n, is flattened into them, so the score converges with n = O(t) samples
    (Theorem 2 of [1]_) where VS_1 may not. Misleads when t is below the number of real modes
    (they are merged into the even tail share) or compared across different t.
    Cost: one spectrum (dual O(n d^2 + d^3) for feature kernels, dense O(n^3) otherwise), then O(t).

    References
    ----------
    .. [1] A. Ospanov, F. Farnia, "Do Vendi Scores Converge with Finite Samples? Truncated Vendi
       Score for Finite-Sample Convergence Guarantees", UAI 2025.

    Examples
    --------
    >>> import numpy as np
    >>> round(truncated_vendi(np.eye(6), t=3, n_resamples=0).value.value, 12)   # 6 modes seen through 3
    3.0
    """
    Xv, kern = resolved_kernel(X, kernel, kernel_params)
    t = check_scalar(t, "t", int, min_val=1)
    qv = parse_q(q)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    value, vs, lam_t, tail = _truncated_vs(Xv, kern, t, qv)
    if n_resamples:
        est = one_set_interval(Xv.shape[0], [value], lambda idx: [_truncated_vs(Xv[idx], kern, t, qv)[0]],
                               bounds=((1.0,), (float(t),)), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=8, rng=gen)[0]
    else:
        est = Estimate(value)
    return TruncatedVendiResult(value=est, vendi=vs, t=int(t), t_used=int(lam_t.size), tail_mass=tail, q=float(qv),
                                n=int(Xv.shape[0]), kernel=kern.to_dict(), eigenvalues=lam_t)


def gaussian_entropy_top(X: np.ndarray, t: int) -> tuple:
    """``(TE_t, top eigenvalues)`` of validated X: the module's truncated Gaussian entropy, in nats.

    Raises
    ------
    DiversityInputError
        When one of the t largest eigenvalues is not positive (a covariance of rank below t).
    """
    cov = moments(X).cov
    d = cov.shape[0]
    with _one_thread():  # one LAPACK thread: several times faster on a busy machine (as FD's)
        lam = scipy.linalg.eigh(cov, eigvals_only=True, subset_by_index=[d - t, d - 1])[::-1]
    tol = d * np.finfo(np.float64).eps * max(float(lam[0]), 0.0)
    if not lam[-1] > tol:
        rank = int(np.count_nonzero(lam > tol))
        raise DiversityInputError(
            f"the truncated entropy takes the log of the t = {t} largest covariance eigenvalues, but the covariance "
            f"of these {X.shape[0]} items has only {rank} above round-off (fewer items than t + 1, or collinear "
            f"features). Lower t to at most {max(rank, 1)}."
        )
    return 0.5 * t * _LOG_2PIE + 0.5 * float(np.log(lam).sum()), lam


def truncated_entropy(
    X,
    *,
    t: int = 20,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
) -> TruncatedEntropyResult:
    r"""Truncated entropy of the embeddings' covariance: TCE on CLIP features, TIE on Inception features.

    .. math:: \mathrm{TE}_t = \frac{t}{2}\log(2\pi e) + \frac12\sum_{i=1}^{t}\log\lambda_i,\qquad
              \lambda_1 \ge \dots \ge \lambda_t \text{ the largest eigenvalues of }
              \Sigma = \tfrac{1}{n-1}\textstyle\sum_j (x_j - \bar x)(x_j - \bar x)^T

    The differential entropy (nats) of the Gaussian fitted to the features, restricted to its t
    leading principal directions: the ``image-diversity`` package's Truncated CLIP Entropy and
    Truncated Inception Entropy (``truncated_entropy``; t = its ``n_eigs`` = 20) on the features
    given, whatever the encoder.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Embeddings (CLIP ViT-B/32 image features for TCE, Inception pool3 for TIE).
    t : int, default 20
        Leading eigenvalues kept; at most d and below n.
    confidence_level, n_resamples, interval_size, rng
        As :func:`rke_mode_count`.

    Returns
    -------
    TruncatedEntropyResult

    Raises
    ------
    DiversityInputError
        Bad features; ``t >= n`` or ``t > d``; a covariance of rank below t.

    Notes
    -----
    Sensitive to: the spread (variance) along the t main directions of the embedding, on a log
    scale: doubling every item's distance from the mean adds ``t log 2``. Blind to anything
    outside those t directions and to multimodality (a Gaussian fit); a scale-dependent number in
    nats, comparable only under one encoder and one t. Can be negative.
    Cost: O(n d^2) for the covariance (float64, centred chunks) and O(d^3) for its eigenvalues.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(2000, 3))
    >>> r = truncated_entropy(X, t=3, n_resamples=0)
    >>> bool(abs(r.value.value - 1.5 * np.log(2 * np.pi * np.e)) < 0.1)     # a unit Gaussian in 3-D
    True
    """
    Xv = check_features(X, name="X", min_samples=2)
    n, d = Xv.shape
    t = check_scalar(t, "t", int, min_val=1)
    if t >= n or t > d:
        raise DiversityInputError(
            f"t = {t} eigenvalues need more than t items and at least t features; got {n} items of {d} features. "
            f"Lower t to at most {min(n - 1, d)}."
        )
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    value, lam = gaussian_entropy_top(Xv, t)
    if n_resamples:
        est = one_set_interval(n, [value], lambda idx: [gaussian_entropy_top(Xv[idx], t)[0]],
                               bounds=((-np.inf,), (np.inf,)), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=max(8, 2 * t), rng=gen)[0]
    else:
        est = Estimate(value)
    return TruncatedEntropyResult(value=est, t=int(t), n=int(n), d=int(d), eigenvalues=np.asarray(lam))
