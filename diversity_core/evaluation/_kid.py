r"""The kernel distance (KID): the unbiased MMD^2 under a cubic polynomial kernel, over random subsets.

For subsets :math:`X` of the reference and :math:`Y` of the generated set, m items each,

.. math::

    \widehat{\mathrm{MMD}}^2_u = \frac{1}{m(m-1)} \sum_{i \ne j} k(x_i, x_j)
      + \frac{1}{m(m-1)} \sum_{i \ne j} k(y_i, y_j) - \frac{2}{m^2} \sum_{i, j} k(x_i, y_j),
    \qquad k(x, y) = (\gamma\, x^T y + c_0)^{p}

(Eq. (3) of Gretton et al. 2012; the kernel and the subset averaging of Binkowski et al. 2018,
with :math:`\gamma = 1/d`, :math:`c_0 = 1`, :math:`p = 3`). Each subset draws m items of each set
without replacement; the subsets are independent of each other.
"""

from __future__ import annotations

import numpy as np

from .._progress import report
from .._validation import check_random_state, check_scalar
from ._common import check_sets, mmd2_from_sums
from ._limits import check_work, kid_product_dtype, kid_work
from ._results import KernelDistanceResult

__all__ = ["kernel_distance", "mmd2_unbiased", "kid_subsets"]


def _poly(A: np.ndarray, B: np.ndarray, gamma: float, coef0: float, degree: int, *, same: bool = False) -> np.ndarray:
    """``(gamma A B^T + coef0)^degree`` in float64 (``same``: B is A, a symmetric product).

    The product runs in the rows' precision (float32 features: float32 GEMM, as the spectrum's
    dual path does); the kernel values and every sum are float64.
    """
    G = np.asarray(A @ A.T if same else A @ B.T, dtype=np.float64)
    G *= gamma
    G += coef0
    if degree == 1:
        return G
    out = G.copy()
    for _ in range(degree - 1):  # repeated products: several times faster than a float power
        out *= G
    return out


def mmd2_unbiased(X: np.ndarray, Y: np.ndarray, *, gamma: float, coef0: float, degree: int) -> float:
    """The unbiased MMD^2 of two sets of m items each (module docstring); O(m^2 d)."""
    m = X.shape[0]
    kxx = _poly(X, None, gamma, coef0, degree, same=True)
    kyy = _poly(Y, None, gamma, coef0, degree, same=True)
    kxy = _poly(X, Y, gamma, coef0, degree)
    return mmd2_from_sums(kxx.sum(), kyy.sum(), kxy.sum(), m, m, trace_x=np.trace(kxx), trace_y=np.trace(kyy))


def kid_subsets(R: np.ndarray, G: np.ndarray, *, n_subsets: int, subset_size: int, gamma: float,
                coef0: float, degree: int, rng: np.random.Generator, progress=None, dtype=None) -> np.ndarray:
    """MMD^2 of ``n_subsets`` independent pairs of random subsets of ``subset_size`` items each.

    ``dtype``: of the products (default float32 for float32 features; see
    :func:`~diversity_core.evaluation._limits.kid_product_dtype`).
    """
    out = np.empty(n_subsets)
    every = max(1, n_subsets // 20)
    if dtype is None:
        dtype = np.float32 if R.dtype == np.float32 and G.dtype == np.float32 else np.float64
    for s in range(n_subsets):
        ir = np.sort(rng.choice(R.shape[0], subset_size, replace=False))
        ig = np.sort(rng.choice(G.shape[0], subset_size, replace=False))
        out[s] = mmd2_unbiased(np.asarray(R[ir], dtype=dtype), np.asarray(G[ig], dtype=dtype),
                               gamma=gamma, coef0=coef0, degree=degree)
        if (s + 1) % every == 0:
            report(progress, s + 1, n_subsets, "kernel distance subsets")
    return out


def kernel_distance(
    reference,
    generated,
    *,
    n_subsets: int = 100,
    subset_size: int = 1000,
    degree: int = 3,
    gamma=None,
    coef0: float = 1.0,
    rng=None,
    progress=None,
):
    r"""The kernel distance (KID): unbiased MMD^2 under a polynomial kernel, mean and sd over subsets.

    .. math::

        \mathrm{KD} = \frac{1}{S}\sum_{s=1}^{S} \widehat{\mathrm{MMD}}^2_u(R_s, G_s),\qquad
        k(x, y) = \big(\gamma\, x^T y + c_0\big)^{p}

    with :math:`\widehat{\mathrm{MMD}}^2_u` the unbiased estimator (Lemma 6 of Gretton et al. [2]_;
    module docstring) on random subsets :math:`R_s, G_s` of m items each, and
    :math:`\gamma = 1/d, c_0 = 1, p = 3` (Binkowski et al. [1]_, Sec. 4.2).

    Parameters
    ----------
    reference, generated : array-like of shape (N, d) and (M, d)
    n_subsets : int, default 100
    subset_size : int, default 1000
        m; capped at the smaller set's size.
    degree : int, default 3
    gamma : float, optional
        Default 1 / d.
    coef0 : float, default 1
    rng : int or Generator, optional
        Seed of the subsets.
    progress : callable, optional

    Returns
    -------
    KernelDistanceResult
        ``mean``, ``std`` (ddof = 1) and the per-subset values.

    Raises
    ------
    DiversityInputError
        Bad features or options; data whose kernel sums overflow float64 (features near 1e51 with
        the defaults: the kernel distance depends on the scale, so divide the data by a constant);
        ``n_subsets`` whose estimated work exceeds :data:`~diversity_core.evaluation._limits.MAX_WORK`
        (the message gives the largest allowed).

    Notes
    -----
    Cost: O(S m^2 d) (three m x m products per subset, in the features' precision; kernel values and
    sums in float64); n_subsets = 100 of 1,000 items at d = 2048 is about 1.2e12 flops. Unlike FD the estimator is unbiased: its expectation does not
    depend on m, it can be negative (sets from one distribution average 0), and values at
    different m are comparable. ``std`` is the spread of one subset's value, the figure KID papers
    report; the standard error of the mean is smaller but the subsets overlap, so it is not
    ``std / sqrt(S)``.

    References
    ----------
    .. [1] M. Binkowski, D. J. Sutherland, M. Arbel, A. Gretton, "Demystifying MMD GANs",
       ICLR 2018.
    .. [2] A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Scholkopf, A. Smola, "A Kernel
       Two-Sample Test", JMLR 13 (2012).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 8))
    >>> r = kernel_distance(X, X + 3.0, n_subsets=5, subset_size=100, rng=0)
    >>> r.mean > 1.0
    True
    """
    R, G = check_sets(reference, generated)
    n_subsets = check_scalar(n_subsets, "n_subsets", int, min_val=1)
    subset_size = check_scalar(subset_size, "subset_size", int, min_val=2)
    degree = check_scalar(degree, "degree", int, min_val=1, max_val=100)
    coef0 = check_scalar(coef0, "coef0", float)
    d = R.shape[1]
    gamma = 1.0 / d if gamma is None else check_scalar(gamma, "gamma", float, min_val=0.0, include_boundaries="neither")
    m = min(subset_size, R.shape[0], G.shape[0])
    # scale and count guards (issue 40): sums that overflow float64 and days of work are refused
    dtype = kid_product_dtype(R, G, gamma=gamma, coef0=coef0, degree=degree, m=m)
    check_work("n_subsets", n_subsets, kid_work(m, d, degree, R.shape[0], G.shape[0]),
               what=f"subsets of {m:,} items of each set in d = {d}")
    gen = check_random_state(rng)
    vals = kid_subsets(R, G, n_subsets=n_subsets, subset_size=m, gamma=gamma, coef0=coef0, degree=degree,
                       rng=gen, progress=progress, dtype=dtype)
    std = float(vals.std(ddof=1)) if vals.size > 1 else float("nan")
    return KernelDistanceResult(mean=float(vals.mean()), std=std, n_subsets=int(n_subsets), subset_size=int(m),
                                degree=int(degree), gamma=float(gamma), coef0=float(coef0), values=vals)
