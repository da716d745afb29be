r"""KEN and RRKE: the scores of the differential spectra, with intervals from the subsampling engine.

KEN (Zhang, Li & Farnia, ICML 2024)
    :math:`\mathrm{KEN}_\eta(X \mid Y) = -\sum_{\lambda_i > 0} \lambda_i \log \lambda_i` over the
    positive eigenvalues of :math:`C_X - \eta C_Y` (Shannon entropy of the novel modes' frequencies,
    unnormalised). The authors' code prints :math:`S\,H(\lambda_+/S) = \mathrm{KEN} + S\log S` with
    :math:`S = \sum_{\lambda_i>0}\lambda_i`; both are on :class:`~diversity_core.differential.NoveltySpectrum`.

RRKE (Jalali, Li & Farnia, NeurIPS 2023)
    Order 1/2 (the paper's, and its code's ``compute_rrke``):
    :math:`\mathrm{RRKE}(X \Vert Y) = -\log \lVert C_X^{1/2} C_Y^{1/2}\rVert_*^2`, minus the log of the
    kernel covariances' fidelity; :math:`\lVert C_X^{1/2} C_Y^{1/2}\rVert_*` is the sum of the singular
    values of :math:`K_{XY}/\sqrt{nm}`. Order 2:
    :math:`-\log \operatorname{tr}(C_X C_Y) = -\log \big(\tfrac{1}{nm}\sum_{i,j} k(x_i, y_j)^2\big)`
    (since :math:`\lVert C_X^{1/2}C_Y^{1/2}\rVert_F^2 = \operatorname{tr}(C_X C_Y)`), the order-2
    cross-entropy of the two covariances: O(n m d) or O(d^2) from the moments, no decomposition.
    For identical sets under a unit-diagonal kernel, order 1/2 is 0 (fidelity 1) and order 2 is the
    set's own order-2 RKE, :math:`-\log\operatorname{tr} C_X^2 = \log \mathrm{VS}_2`.
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np
import scipy.linalg as sla

from .._validation import check_scalar
from ..evaluation._common import check_interval_options
from ..evaluation._intervals import paired_interval
from ..evaluation._results import Estimate
from ..kernels import DEFAULT_KERNEL
from ._results import ken_from_eigenvalues
from ._routes import DEFAULT_FREQUENCIES, DEFAULT_REPLICATES, Factor, make_factor
from ._spectrum import _prepare

__all__ = ["ken_score", "rrke", "RRKE_ORDERS"]

#: The RRKE orders: 1/2 (the paper's fidelity form) and 2 (the trace form).
RRKE_ORDERS = (0.5, 2.0)

#: Fewest items of each set in a subset of the intervals.
MIN_ITEMS = 20


def ken_score(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    eta: float = 1.0,
    method: str = "auto",
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    **kernel_params,
) -> Estimate:
    r"""KEN of a candidate set X against a reference Y, with an interval.

    .. math:: \mathrm{KEN}_\eta(X \mid Y) = -\sum_{\lambda_i > 0} \lambda_i \log \lambda_i,
              \qquad \lambda_i \in \operatorname{spec}(C_X - \eta\, C_Y)

    (the Kernel-based Entropic Novelty of [1]; natural log). 0 when X expresses nothing more than
    :math:`\eta` times as often as Y; for k equally frequent novel modes of total frequency S it is
    :math:`S \log(k / S)`.

    Parameters
    ----------
    X, Y : array-like of shape (n, d) and (m, d)
        Candidate (generated) and reference items.
    kernel, eta, method, n_frequencies, replicates, rng, **kernel_params
        As :func:`~diversity_core.differential.novelty_spectrum`.
    confidence_level, n_resamples, interval_size
        The interval from the project's subsampling engine at equal n (``evaluation``'s paired
        subsets: KEN on disjoint subsets at three sizes up to ``interval_size`` items, the spread
        extrapolated to the full sets; ``n_resamples=0``: none).

    Returns
    -------
    Estimate
        ``value`` on all items; ``se``, ``confidence_interval`` (``interval="extrapolated"``), or a
        ``note`` saying why there is none. On the rff route the interval is of the sketch's KEN
        (its own sketch error is :attr:`NoveltySpectrum.ken_se`).

    Notes
    -----
    Cost: one route (see :func:`novelty_spectrum`) on all items plus about 3 x n_resamples on
    subsets. KEN is biased upward at finite n (noise gives small positive eigenvalues even when X and
    Y come from one distribution): compare KEN at equal n, and use :func:`mode_null` to tell modes
    from noise.

    References
    ----------
    [1] J. Zhang, C. T. Li, F. Farnia. An Interpretable Evaluation of Entropy-based Novelty of
        Generative Models. ICML 2024.
    """
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    X, Y, eta, kern, factor, gen = _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng)
    full = _ken(factor, eta)
    return _interval(factor, kern, [full], lambda f: [_ken(f, eta)], level, n_resamples, interval_size, gen)[0]


def rrke(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    order: float = 0.5,
    method: str = "auto",
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    **kernel_params,
) -> Estimate:
    r"""Relative Rényi kernel entropy of X against Y, with an interval.

    .. math:: \mathrm{RRKE}_{1/2}(X \Vert Y) = -\log \big\lVert C_X^{1/2} C_Y^{1/2} \big\rVert_*^2
              = -\log \Big(\sum_i \sigma_i\big(K_{XY}/\sqrt{nm}\big)\Big)^2,
    .. math:: \mathrm{RRKE}_2(X \Vert Y) = -\log \operatorname{tr}(C_X C_Y)
              = -\log \Big(\frac{1}{nm}\sum_{i,j} k(x_i, y_j)^2\Big)

    Order 1/2 is the definition of [1] and of its code (minus the log of the fidelity of the two
    kernel covariance operators: 0 when they are equal, growing as X and Y share fewer modes);
    order 2 is the trace form :math:`\lVert C_X^{1/2} C_Y^{1/2}\rVert_F^2 = \operatorname{tr}(C_X C_Y)`.

    Parameters
    ----------
    order : {0.5, 2}, default 0.5
    Others
        As :func:`ken_score` (``eta`` plays no part).

    Returns
    -------
    Estimate
        inf when the two sets are orthogonal under the kernel.

    Notes
    -----
    Cost on the feature route: order 2, the two d x d moments (O((n + m) d^2)); order 1/2, the two sets'
    R factors by a QR streamed over row chunks (O((n + m) d^2)) and one d x d SVD of
    :math:`R_X R_Y^\top`, whose singular values are those of :math:`C_X^{1/2} C_Y^{1/2}` (the moments'
    square roots would lose half the digits of the small singular values). Dense: the same on the
    pooled kernel's factor (O((n + m)^3)). Random Fourier features: from the 2D x 2D moments (one
    eigendecomposition of C_X and the eigenvalues of :math:`C_X^{1/2} C_Y C_X^{1/2}`, O(D^3), no second
    pass over the rows; the small singular values keep about half their digits, a relative error near
    1e-8, far below the sketch's own error).

    References
    ----------
    [1] M. Jalali, C. T. Li, F. Farnia. An Information-Theoretic Evaluation of Generative Models in
        Learning Multi-modal Distributions. NeurIPS 2023.
    """
    order = check_scalar(order, "order", float)
    if order not in RRKE_ORDERS:
        from ..exceptions import DiversityInputError

        raise DiversityInputError(f"order must be one of {RRKE_ORDERS} (1/2: the paper's fidelity form, 2: the trace "
                                  f"form); got {order}.")
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    X, Y, _, kern, factor, gen = _prepare(X, Y, kernel, kernel_params, 1.0, method, n_frequencies, replicates, rng)
    full = _rrke(factor, order)
    return _interval(factor, kern, [full], lambda f: [_rrke(f, order)], level, n_resamples, interval_size, gen)[0]


# ---------------------------------------------------------------------------------------
# private compute
# ---------------------------------------------------------------------------------------
def _ken(factor: Factor, eta: float, own: int = 0, moments=None) -> float:
    """KEN of the factor's set ``own`` against the other, from the p x p difference's eigenvalues."""
    C0, C1 = moments if moments is not None else (factor.moments(0), factor.moments(1))
    C_own, C_other = (C0, C1) if own == 0 else (C1, C0)
    L = C_own - eta * C_other
    w = sla.eigvalsh(0.5 * (L + L.T), check_finite=False)
    return ken_from_eigenvalues(w, w.size)


def _rrke_from_moments(C0: np.ndarray, C1: np.ndarray, order: float) -> float:
    """RRKE of order 2 from the two p x p covariances: ``-log tr(C0 C1)``."""
    t = float(np.sum(C0 * C1))  # tr(C0 C1) for symmetric C0, C1
    return -math.log(t) if t > 0 else math.inf


def _rrke(factor: Factor, order: float, moments=None) -> float:
    """RRKE of order 2 from the moments; of order 1/2 from the rows' R factors (see :meth:`Factor.r_factor`)."""
    if order == 2.0:
        C0, C1 = moments if moments is not None else (factor.moments(0), factor.moments(1))
        return _rrke_from_moments(C0, C1, order)
    if factor.exact:
        # ||C_X^{1/2} C_Y^{1/2}||_* = ||R_X R_Y^T||_*: both are the singular values of A_X A_Y^T (A: the scaled rows)
        M = factor.r_factor(0) @ factor.r_factor(1).T
        nuclear = float(np.sum(sla.svdvals(M, check_finite=False)))
    else:
        # a sketch is accurate to ~1/sqrt(D) anyway: from the moments (no second pass over the rows), as
        # sum_i sqrt(mu_i) over the eigenvalues mu of R_0 C_1 R_0^T (R_0 = diag(sqrt w) V^T, C_0 = V diag(w) V^T),
        # which are the squared singular values of C_0^{1/2} C_1^{1/2}: one eigh with vectors and one without
        C0, C1 = moments if moments is not None else (factor.moments(0), factor.moments(1))
        w, V = sla.eigh(0.5 * (C0 + C0.T), check_finite=False)
        R0 = V.T * np.sqrt(np.clip(w, 0.0, None))[:, None]
        mu = sla.eigvalsh(R0 @ C1 @ R0.T, check_finite=False)
        nuclear = float(np.sqrt(np.clip(mu, 0.0, None)).sum())
    return -2.0 * math.log(nuclear) if nuclear > 0 else math.inf


def _sub_factor(factor: Factor, kern, Xs, Ys) -> Factor:
    """The same route and kernel (the same Fourier frequencies) on subsets of the two sets."""
    if factor.B is None:
        return Factor(factor.route, (Xs, Ys), factor.kernel, None, factor.dim, factor.exact, factor.settings)
    return make_factor("dense", kern, Xs, Ys)


def _interval(factor: Factor, kern, full: list, score: Callable, level: float, n_resamples: int,
              interval_size: int, gen) -> list:
    """Estimates of the statistics ``score(factor)`` with intervals from paired subsets (evaluation's engine)."""
    if not n_resamples:
        return [Estimate(float(v), note="no interval: n_resamples = 0") for v in full]
    X, Y = factor.sets

    def stat(Rs, Gs):
        return score(_sub_factor(factor, kern, Gs, Rs))

    bounds = (np.full(len(full), -np.inf), np.full(len(full), np.inf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimates, _ = paired_interval(Y, X, full, stat, bounds=bounds, level=level, n_resamples=n_resamples,
                                       interval_size=interval_size, min_items=MIN_ITEMS, rng=gen)
    return estimates
