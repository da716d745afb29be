r"""The RKE mode count (Jalali, Li & Farnia, NeurIPS 2023): the Vendi score of order 2.

For n items with kernel matrix K of unit diagonal (every kernel of :mod:`diversity_core.kernels`
but ``linear``), the Renyi kernel entropy of order 2 and its mode count are

.. math::

    \mathrm{RKE}(X) = -\log \big\lVert \tfrac1n K \big\rVert_F^2 ,\qquad
    \mathrm{RKE\text{-}MC}(X) = e^{\mathrm{RKE}(X)} = \frac{1}{\lVert K/n \rVert_F^2}
    = \frac{n^2}{\sum_{ij} k(x_i, x_j)^2}

(Sec. 4 of [1]; their code's ``compute_rke_mc_frobenius_norm`` returns :math:`\lVert K/n\rVert_F^2`).
Since :math:`\lVert K/n\rVert_F^2 = \sum_i \lambda_i^2` over the eigenvalues of K/n, this IS the
Vendi score of order 2, :math:`\mathrm{VS}_2 = 1/\sum_i \lambda_i^2` (Pasarkar & Dieng), so the
mode count is computed by :func:`~diversity_core.vendi_2_exact` (blocks of K, O(n^2 d), no
eigendecomposition; the dual d x d route for feature kernels) and nothing here restates it.
With a diagonal that is not 1 (the ``linear`` kernel on rows that are not unit-norm) VS_2 is
:math:`(\operatorname{tr} K)^2 / \lVert K\rVert_F^2`: the mode count of K scaled to a unit mean diagonal.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._progress import ProgressCallback
from .._validation import check_random_state
from ..blocked import vendi_2_exact
from ..kernels import get_kernel
from ._common import check_interval_options
from ._one_set import one_set_interval
from ._pack_results import RKEResult
from ._results import Estimate

__all__ = ["rke_mode_count"]


def resolved_kernel(X, kernel, kernel_params: dict):
    """``(validated X, kernel with its data-dependent parameters fixed on all of X)``.

    Subsets of the interval reuse the kernel resolved here (one rbf bandwidth for every subset).
    """
    kern = get_kernel(kernel, **kernel_params)
    Xv = kern.validate(X)
    return Xv, kern.resolve(Xv)


def _vs2(X, kern, method: str, progress=None):
    """``(VS_2, method used)`` of validated X under a resolved kernel."""
    res = vendi_2_exact(X, kernel=kern, method=method, progress=progress)
    return float(res.vs2), res.method


def rke_mode_count(
    X,
    *,
    kernel="cosine",
    method: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> RKEResult:
    r"""The RKE mode count of Jalali et al. (2023): :math:`1/\lVert K/n\rVert_F^2`, the Vendi score of order 2.

    .. math::

        \mathrm{RKE\text{-}MC}(x_1, \dots, x_n) = \frac{1}{\lVert K/n\rVert_F^2}
        = \exp\big(H_2(\lambda)\big) = \mathrm{VS}_2,\qquad
        H_2(\lambda) = -\log\sum_i \lambda_i^2

    (Sec. 4 of [1]_; :math:`K_{ij} = k(x_i, x_j)` with unit diagonal, :math:`\lambda` the
    eigenvalues of K/n). It counts the modes the kernel resolves: m well-separated equal
    clusters (kernel near 0 between them, near 1 within) give m.

    Parameters
    ----------
    X : array-like of shape (n, d)
    kernel : str or Kernel, default "cosine"
        The project's one default kernel, so that the mode count equals ``vendi_score(X, q=2)``
        called the same way. The paper uses the Gaussian kernel: ``kernel="rbf"``
        (:math:`\exp(-\lVert x - y\rVert^2 / (2\sigma^2))`; ``sigma``, a keyword, defaults to
        the median pairwise distance, fixed once on all of X).
    method : {"auto", "blocked", "dual"}, default "auto"
        As :func:`~diversity_core.vendi_2_exact` (dual for feature kernels with d < n).
    confidence_level : float, default 0.95
    n_resamples : int, default 16
        Subsets per size for the interval (0: no interval).
    interval_size : int, default 2048
        Largest subset the interval's spread is measured on.
    rng : int or Generator, optional
        Seed of the interval's subsets.
    progress : callable, optional
    **kernel_params
        e.g. ``sigma=10.0`` (the bandwidths of the paper's experiments are fixed numbers).

    Returns
    -------
    RKEResult
        ``mode_count`` (an :class:`Estimate`), ``entropy`` = log of it, the resolved kernel.

    Raises
    ------
    DiversityInputError
        Bad features, kernel or options.

    Notes
    -----
    Sensitive to: the number and balance of modes at the kernel's scale (the bandwidth decides
    what counts as one mode: a tiny sigma gives n, a huge one 1). Order 2 weighs large modes more
    than VS_1 does, so rare modes move it little; it converges at n = O(1/eps^2) whatever the
    kernel (Ospanov & Farnia), which is why it is preferred to VS_1 on small samples. It grows
    with n until the modes are resolved: compare sets at equal n.
    Cost: O(n^2 d) time in blocks of K (O(n d^2) with a feature kernel and d < n), memory one
    block; the interval adds a few dozen evaluations on at most ``interval_size`` items.

    References
    ----------
    .. [1] M. Jalali, C. T. Li, F. Farnia, "An Information-Theoretic Evaluation of Generative
       Models in Learning Multi-modal Distributions", NeurIPS 2023.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.repeat(np.eye(3) * 100.0, 4, axis=0)      # 3 far-apart modes of 4 copies each
    >>> round(rke_mode_count(X, kernel="rbf", sigma=1.0, n_resamples=0).mode_count.value, 12)
    3.0
    """
    Xv, kern = resolved_kernel(X, kernel, kernel_params)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    vs2, used = _vs2(Xv, kern, method, progress)
    if n_resamples:
        est = one_set_interval(Xv.shape[0], [vs2], lambda idx: [_vs2(Xv[idx], kern, method)[0]],
                               bounds=((1.0,), (np.inf,)), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=8, rng=gen)[0]
    else:
        est = Estimate(vs2)
    return RKEResult(mode_count=est, entropy=math.log(vs2), n=int(Xv.shape[0]), kernel=kern.to_dict(), method=used)
