r"""CMMD (Jayasumana et al., CVPR 2024): the MMD^2 of CLIP embeddings under a Gaussian kernel, times 1000.

For reference embeddings :math:`x_1..x_n`, generated :math:`y_1..y_m` and
:math:`k(x, y) = \exp(-\lVert x - y\rVert^2 / (2\sigma^2))`, :math:`\sigma = 10`:

.. math::

    \mathrm{CMMD} = s\,\Big[\frac{1}{n(n-1)}\sum_{i \ne j} k(x_i, x_j)
      + \frac{1}{m(m-1)}\sum_{i \ne j} k(y_i, y_j) - \frac{2}{nm}\sum_{i, j} k(x_i, y_j)\Big],
    \qquad s = 1000

the unbiased estimator (Eq. (3) of [1], after Gretton et al. 2012, Lemma 6) with the scale of
their Sec. 5. The released code (google-research ``cmmd/distance.py``, ``mmd``) takes each term
as the mean over *all* pairs, diagonal included: the biased V-statistic
:math:`\frac{1}{n^2}\sum_{ij} k(x_i, x_j) + \frac{1}{m^2}\sum_{ij} k(y_i, y_j) - \frac{2}{nm}\sum_{ij} k(x_i, y_j)`,
which exceeds the unbiased one by :math:`s\,(1 - \bar k_{xx})/(n-1) + s\,(1 - \bar k_{yy})/(m-1)`
(:math:`\bar k` the off-diagonal means). ``estimator="biased"`` gives that number. Every kernel
value is the project's rbf kernel (:class:`~diversity_core.kernels.RBFKernel`), summed in blocks.

References
----------
[1] S. Jayasumana, S. Ramalingam, A. Veit, D. Glasner, A. Chakrabarti, S. Kumar, "Rethinking FID:
    Towards a Better Evaluation Metric for Image Generation", CVPR 2024.
"""

from __future__ import annotations

import numpy as np

from .._config import chunk_rows
from .._validation import check_option, check_random_state, check_scalar
from ..blocked import _blocked_sums, _ordered_map, _pair_kernel, _workers
from ..kernels import get_kernel
from ..sources import chunk_bounds
from ._common import check_interval_options, check_sets, mmd2_from_sums
from ._intervals import paired_interval
from ._pack_results import CMMDResult
from ._results import Estimate

__all__ = ["cmmd", "mmd2_rbf", "ESTIMATORS"]

#: The MMD^2 estimators: the paper's U-statistic and the released code's V-statistic.
ESTIMATORS = ("unbiased", "biased")

#: Rows per square block of K within one set (an 8 MiB float64 block per thread).
_BLOCK = 1024


def _within_sum(X: np.ndarray, kern) -> float:
    """:math:`\\sum_{ij} k(x_i, x_j)` over all pairs (diagonal included), by blocks on and above the diagonal."""
    n = X.shape[0]
    p = np.full(n, 1.0)
    s1, _, _ = _blocked_sums(_pair_kernel(kern, X), n, p, _BLOCK, None, _workers())
    return s1


def _cross_sum(X: np.ndarray, Y: np.ndarray, kern) -> float:
    """:math:`\\sum_{ij} k(x_i, y_j)`, by row blocks of X."""
    bounds = chunk_bounds(X.shape[0], chunk_rows(Y.shape[0], 8, minimum=16))  # one chunk_bytes block per thread
    parts = _ordered_map(lambda ab: float(kern.gram(X[ab[0]:ab[1]], Y, check_input=False).sum()), bounds, _workers())
    return float(sum(parts))


def mmd2_rbf(X: np.ndarray, Y: np.ndarray, kern, estimator: str) -> float:
    """MMD^2 of validated sets under a unit-diagonal kernel (module docstring); O((n + m)^2 d).

    ``"unbiased"`` drops the diagonals (each k(x, x) = 1); ``"biased"`` keeps them.
    """
    n, m = X.shape[0], Y.shape[0]
    sxx, syy, sxy = _within_sum(X, kern), _within_sum(Y, kern), _cross_sum(X, Y, kern)
    return mmd2_from_sums(sxx, syy, sxy, n, m, trace_x=float(n), trace_y=float(m), unbiased=estimator == "unbiased")


def cmmd(
    reference,
    generated,
    *,
    sigma: float = 10.0,
    scale: float = 1000.0,
    estimator: str = "unbiased",
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
) -> CMMDResult:
    r"""CMMD of Jayasumana et al. (2024): scale x MMD^2 under a Gaussian kernel, on CLIP-style embeddings.

    .. math::

        \mathrm{CMMD} = s\Big[\tfrac{1}{n(n-1)}\textstyle\sum_{i \ne j} k(x_i, x_j)
          + \tfrac{1}{m(m-1)}\sum_{i \ne j} k(y_i, y_j) - \tfrac{2}{nm}\sum_{i,j} k(x_i, y_j)\Big],
        \quad k(x, y) = e^{-\lVert x - y\rVert^2 / (2\sigma^2)}

    (Eq. (3) of [1]_, :math:`\sigma = 10`, :math:`s = 1000`; R = x has n items, G = y has m).

    Parameters
    ----------
    reference, generated : array-like of shape (n, d) and (m, d)
        Embeddings of both sets by one encoder (the paper: CLIP ViT-L/14@336px image embeddings,
        L2-normalised).
    sigma : float, default 10
        Kernel bandwidth (the paper's fixed value; it suits unit-norm embeddings, whose distances
        are at most 2, only in that the kernel stays smooth: do not pick it per data set).
    scale : float, default 1000
    estimator : {"unbiased", "biased"}, default "unbiased"
        ``"unbiased"``: the paper's U-statistic (can be slightly negative for sets from one
        distribution). ``"biased"``: the V-statistic of the released code (``cmmd/distance.py``),
        diagonals included, always >= 0 and larger by about :math:`s (1 - \bar k)(1/(n-1) + 1/(m-1))`.
    confidence_level, n_resamples, interval_size, rng
        As :func:`~diversity_core.evaluation.prdc` (paired subsets of both sets).

    Returns
    -------
    CMMDResult

    Raises
    ------
    DiversityInputError
        Bad features, different d, sigma or scale not positive, unknown estimator.

    Notes
    -----
    Sensitive to: any difference between the two distributions the Gaussian kernel sees (a
    characteristic kernel: 0 in expectation only for equal distributions), with no Gaussian
    assumption (unlike FD) and, unbiased, no dependence of its expectation on n. Misleads when
    the embeddings are not unit-norm or not CLIP-like: with sigma fixed at 10 and distances far
    below it, every kernel value is near 1 and MMD^2 behaves like a squared mean difference;
    values are comparable only under one encoder, sigma and scale.
    Cost: O((n + m)^2 d) kernel evaluations in blocks (1024 x 1024 within a set, one ``chunk_bytes``
    block of rows across; threads over blocks), O(m d) memory beyond the data and the blocks;
    n = m = 20,000 at d = 512 is about 8e11 flops.

    References
    ----------
    .. [1] S. Jayasumana et al., "Rethinking FID: Towards a Better Evaluation Metric for Image
       Generation", CVPR 2024.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 4))
    >>> round(cmmd(X, X, estimator="biased", n_resamples=0).value.value, 12)   # a set against itself
    0.0
    """
    R, G = check_sets(reference, generated)
    sigma = check_scalar(sigma, "sigma", float, min_val=0.0, include_boundaries="neither")
    scale = check_scalar(scale, "scale", float, min_val=0.0, include_boundaries="neither")
    check_option(estimator, ESTIMATORS, "estimator")
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    kern = get_kernel("rbf", sigma=sigma)
    value = scale * mmd2_rbf(R, G, kern, estimator)
    if n_resamples:
        est = paired_interval(R, G, [value], lambda Rs, Gs: [scale * mmd2_rbf(Rs, Gs, kern, estimator)],
                              bounds=((-np.inf,), (np.inf,)), level=level, n_resamples=n_resamples,
                              interval_size=interval_size, min_items=8, rng=gen)[0][0]
    else:
        est = Estimate(value)
    return CMMDResult(value=est, estimator=estimator, sigma=float(sigma), scale=float(scale),
                      n_reference=int(R.shape[0]), n_generated=int(G.shape[0]))
