r"""The Vendi scores of evaluation: of G relative to R at equal n, and quality-weighted.

Vendi ratio
    :math:`\mathrm{VS}_q(G) / \mathrm{VS}_q(R)` with both scores at the same number of items n
    (the Vendi score grows with n, so unequal sizes would decide the ratio): n is the smaller
    set's size, and the larger set is scored on ``n_subsamples`` random n-subsets, averaged.
    Above 1: the generated set is more diverse than the reference under the kernel.

Quality-weighted Vendi score
    :math:`\mathrm{qVS}_q = \big(\tfrac{1}{n}\sum_i s(x_i)\big)\, \mathrm{VS}_q` (Nguyen & Dieng 2024,
    Eq. (5)): the mean quality times the diversity, so that a set of varied but poor items and a
    set of good but near-identical items both score low.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._orders import parse_q
from .._validation import check_random_state, check_scalar
from ..distances import _as_float64
from ..kernels import Kernel, get_kernel
from ..spectrum import _kernel_spectrum, compute_spectrum
from ..streaming import _array_chunks, _dual_moments
from ._common import check_interval_options, check_quality, check_sets
from ._frechet import _one_thread
from ._intervals import paired_interval
from ._limits import check_work, interval_work, vendi_ratio_cost
from ._results import Estimate, QualityVendiResult, VendiRatioResult

__all__ = ["vendi_ratio", "quality_weighted_vendi"]

#: Items per set the data-dependent kernel parameters (the rbf median bandwidth) are resolved on.
RESOLVE_ITEMS = 1000


def resolve_kernel(kernel, kernel_params: dict, *sets: np.ndarray, rng: Optional[np.random.Generator] = None) -> Kernel:
    """The kernel with its data-dependent parameters fixed once on a pooled sample of the sets."""
    kern = get_kernel(kernel, **kernel_params)
    gen = rng if rng is not None else np.random.default_rng(0)
    parts = []
    for S in sets:
        idx = np.sort(gen.choice(S.shape[0], min(RESOLVE_ITEMS, S.shape[0]), replace=False))
        parts.append(np.asarray(S[idx]))
    pooled = kern.validate(np.vstack(parts))
    return kern.resolve(pooled)


def vendi_of(X: np.ndarray, kern: Kernel, q: float) -> float:
    """VS_q of validated X under a resolved kernel.

    With a feature map Phi of dimension d < n the d x d dual matrix ``Phi^T Phi`` (the dual path's
    chunked sums, :func:`~diversity_core.streaming._dual_moments`), else the n x n kernel matrix;
    every product is in float64 (float32 rows are converted chunk by chunk, exactly), the
    eigenvalue problem runs with one LAPACK thread (several times faster on a busy machine) and the
    spectrum's support rule (float64's) decides which eigenvalues count.
    """
    n = X.shape[0]
    if n == 1:
        return 1.0
    d = _feature_dimension(X, kern)
    if d is not None and d < n:
        M = _dual_moments(_array_chunks(X), kern, None, n=n, d=X.shape[1], validate=False).gram
        M *= d  # _kernel_spectrum divides by the order of the matrix it is given
    elif d is not None:
        P = kern.features(_as_float64(X), check_input=False)
        P = np.ascontiguousarray(P.toarray() if hasattr(P, "toarray") else P, dtype=np.float64)
        M = P @ P.T
    else:
        M = kern.gram(X, check_input=False)
    with _one_thread():
        spec = _kernel_spectrum(0.5 * (M + M.T), None, kernel=kern.to_dict())
    return float(spec.vendi(q))


def _feature_dimension(X, kern: Kernel):
    """The dimension of the kernel's feature map on X (from two rows), or None without one."""
    if not kern.has_feature_map:
        return None
    return int(kern.features(_as_float64(X[:2]), check_input=False).shape[1])


def equal_n_scores(R, G, kern: Kernel, q: float, n_subsamples: int, gen: np.random.Generator) -> tuple:
    """``(VS(G), VS(R), n)`` at n = the smaller size; the larger set averaged over n-subsets."""
    n = min(R.shape[0], G.shape[0])

    def at_n(X):
        if X.shape[0] == n:
            return vendi_of(X, kern, q)
        vals = [vendi_of(X[np.sort(gen.choice(X.shape[0], n, replace=False))], kern, q) for _ in range(n_subsamples)]
        return float(np.mean(vals))

    return at_n(G), at_n(R), n


def ratio_subset_score(kern: Kernel, q: float, seed: int):
    """The interval engine's score of a pair of subsets: VS(G_sub) / VS(R_sub) at equal size."""
    gen = np.random.default_rng(seed)

    def score(Rs, Gs):
        m = min(Rs.shape[0], Gs.shape[0])
        if Gs.shape[0] > m:
            Gs = Gs[np.sort(gen.choice(Gs.shape[0], m, replace=False))]
        if Rs.shape[0] > m:
            Rs = Rs[np.sort(gen.choice(Rs.shape[0], m, replace=False))]
        return [vendi_of(Gs, kern, q) / vendi_of(Rs, kern, q)]

    return score


def vendi_ratio(
    reference,
    generated,
    *,
    kernel="cosine",
    q: float = 1.0,
    n_subsamples: int = 10,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    **kernel_params,
) -> VendiRatioResult:
    r"""The Vendi score of generated items relative to the reference, at an equal number of items.

    .. math:: \rho_q = \frac{\mathrm{VS}_q(G_n)}{\mathrm{VS}_q(R_n)},\qquad
              \mathrm{VS}_q = \exp\Big(\frac{1}{1-q}\log\sum_i \lambda_i^q\Big)

    with :math:`\lambda_i` the eigenvalues of :math:`K/n` (Eq. (1) of Friedman & Dieng; order q of
    Pasarkar & Dieng) and :math:`G_n, R_n` sets of n items, n the smaller size.

    Parameters
    ----------
    reference, generated : array-like of shape (N, d) and (M, d)
    kernel : str or Kernel, default "cosine"
        Its data-dependent parameters (rbf bandwidth) are fixed once on both sets pooled.
    q : float, default 1
    n_subsamples : int, default 10
        n-subsets of the larger set averaged.
    confidence_level, n_resamples, interval_size, rng
        As :func:`~diversity_core.evaluation.prdc`.
    **kernel_params

    Returns
    -------
    VendiRatioResult

    Notes
    -----
    Cost: one spectrum per set and subset: with a feature map of dimension d < n, the d x d dual
    matrix, O(n d^2 + d^3) (d = 2048, n = 50,000: seconds); otherwise the n x n kernel, O(n^3).
    Pitfall: the ratio measures diversity only; a generator of varied nonsense scores high.
    Read it next to precision or density.

    Examples
    --------
    >>> import numpy as np
    >>> r = vendi_ratio(np.eye(4), np.eye(4)[[0, 0, 1, 1]], n_resamples=0)
    >>> round(r.ratio.value, 6)                       # 2 distinct items against 4
    0.5
    """
    R, G = check_sets(reference, generated)
    qv = parse_q(q)
    n_subsamples = check_scalar(n_subsamples, "n_subsamples", int, min_val=1)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    check_work("n_resamples", n_resamples,
               interval_work(R.shape[0], G.shape[0], R.shape[1], interval_size, 8, vendi_ratio_cost),
               what=f"Vendi ratios of subsets of at most {interval_size:,} items in d = {R.shape[1]}")
    check_work("n_subsamples", n_subsamples, vendi_ratio_cost(R.shape[0], G.shape[0], R.shape[1]),
               what=f"pairs of Vendi scores of {min(R.shape[0], G.shape[0]):,} items in d = {R.shape[1]}")
    gen = check_random_state(rng)
    kern = resolve_kernel(kernel, kernel_params, R, G, rng=gen)
    vs_g, vs_r, n = equal_n_scores(R, G, kern, qv, n_subsamples, gen)
    return _ratio_result(R, G, kern, qv, vs_g, vs_r, n, n_subsamples, level, n_resamples, interval_size, gen)


def _ratio_result(R, G, kern, qv, vs_g, vs_r, n, n_subsamples, level, n_resamples, interval_size, gen):
    """The result with its interval (validated input)."""
    ratio = vs_g / vs_r
    if n_resamples:
        est, _ = paired_interval(R, G, [ratio], ratio_subset_score(kern, qv, int(gen.integers(2**31 - 1))),
                                 bounds=((0.0,), (np.inf,)), level=level, n_resamples=n_resamples,
                                 interval_size=interval_size, min_items=8, rng=gen)
        est = est[0]
    else:
        est = Estimate(ratio)
    return VendiRatioResult(ratio=est, vs_generated=vs_g, vs_reference=vs_r, n=int(n), q=float(qv),
                            kernel=kern.to_dict(), n_subsamples=int(n_subsamples))


def quality_weighted_vendi(X, quality, *, kernel="cosine", q: float = 1.0, **kernel_params) -> QualityVendiResult:
    r"""The quality-weighted Vendi score: mean quality times the Vendi score (Nguyen & Dieng 2024).

    .. math:: \mathrm{qVS}_q(x_1, \dots, x_n) = \Big(\frac{1}{n}\sum_{i=1}^n s(x_i)\Big)\, \mathrm{VS}_q(x_1, \dots, x_n)

    (Eq. (5) of [1]_, s a non-negative quality score, e.g. a classifier's confidence or an
    aesthetic score in [0, 1]).

    Parameters
    ----------
    X : array-like of shape (n, d)
    quality : array-like of shape (n,)
        Non-negative finite scores.
    kernel : str or Kernel, default "cosine"
    q : float, default 1
    **kernel_params

    Returns
    -------
    QualityVendiResult

    Notes
    -----
    Cost: one spectrum (see :func:`~diversity_core.vendi.vendi_score`) plus O(n). The scale of
    the scores sets the scale of qVS: compare qVS only under one quality model.
    :func:`~diversity_core.curation.select_diverse` with ``objective="qvs2"`` picks a subset that
    maximises qVS_2 greedily.

    References
    ----------
    .. [1] Q. Nguyen, A. B. Dieng, "Quality-Weighted Vendi Scores And Their Application To
       Diverse Experimental Design", ICML 2024.

    Examples
    --------
    >>> import numpy as np
    >>> round(quality_weighted_vendi(np.eye(3), [1.0, 0.5, 0.0]).qvs, 12)   # mean quality 0.5, VS = 3
    1.5
    """
    kern = get_kernel(kernel, **kernel_params)
    Xv = kern.validate(X)
    n = Xv.shape[0]
    s = check_quality(quality, n)
    qv = parse_q(q)
    kern = kern.resolve(Xv)
    vs = float(compute_spectrum(Xv, kernel=kern).vendi(qv))
    mean_q = float(np.mean(s))
    return QualityVendiResult(qvs=mean_q * vs, vs=vs, mean_quality=mean_q, q=float(qv), n=int(n))
