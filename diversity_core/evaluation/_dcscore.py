r"""DCScore (Zhu et al. 2025): diversity as classification, the trace of the row-softmax of K / tau.

Each item is a class of its own; item i is "classified" by the softmax of its similarities,

.. math::

    P_{ij} = \frac{\exp(K_{ij}/\tau)}{\sum_{l=1}^{n} \exp(K_{il}/\tau)},\qquad
    \mathrm{DCScore} = \operatorname{tr} P = \sum_{i=1}^{n} P_{ii}

(Eqs. (4)-(5) of [1]; the authors' ``calculate_dcscore_by_embedding`` with ``kernel_type="cs"``
is the cosine kernel, tau = 1). n distinct items (K = I) give
:math:`n\,e^{1/\tau}/(e^{1/\tau} + n - 1)`, identical items give 1.

References
----------
[1] Y. Zhu, Y. Shi, X. Zhang, Z. Wang, "Measuring Diversity in Synthetic Datasets", ICML 2025.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._config import chunk_rows
from .._progress import ProgressCallback, report
from .._validation import check_random_state, check_scalar
from ..blocked import _ordered_map, _workers
from ..distances import _as_float64
from ._common import check_interval_options
from ._one_set import one_set_interval
from ._pack_results import DCScoreResult
from ._results import Estimate
from ._rke import resolved_kernel

__all__ = ["dcscore"]


def _block_of(X, kern):
    """``rows -> K[rows, :]`` (float64): from the feature map when there is one (one product per block)."""
    if kern.has_feature_map:
        F = kern.features(_as_float64(X), check_input=False)
        F = np.ascontiguousarray(F.toarray() if hasattr(F, "toarray") else F, dtype=np.float64)
        return lambda a, b: F[a:b] @ F.T
    return lambda a, b: kern.gram(X[a:b], X, check_input=False)


def dcscore_items(X, kern, tau: float, progress=None) -> np.ndarray:
    """:math:`P_{ii}` of validated X under a resolved kernel, by row blocks of K (log-sum-exp per row)."""
    n = X.shape[0]
    step = max(16, min(n, chunk_rows(n, 8, minimum=16)))
    block = _block_of(X, kern)
    starts = list(range(0, n, step))

    def one(a):
        b = min(n, a + step)
        S = block(a, b)
        S /= tau
        diag = S[np.arange(b - a), np.arange(a, b)].copy()
        top = S.max(axis=1)
        S -= top[:, None]
        np.exp(S, out=S)
        return np.exp(diag - top) / S.sum(axis=1)

    out = np.empty(n)
    for done, (a, vals) in enumerate(zip(starts, _ordered_map(one, starts, _workers())), start=1):
        out[a:a + vals.size] = vals
        report(progress, done, len(starts), "DCScore rows")
    return out


def dcscore(
    X,
    *,
    kernel="cosine",
    tau: float = 1.0,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> DCScoreResult:
    r"""DCScore of Zhu et al. (2025): the trace of the row-softmax of K / tau, an effective number of items in [1, n].

    .. math:: \mathrm{DCScore} = \sum_{i=1}^{n} \frac{\exp(K_{ii}/\tau)}{\sum_{l} \exp(K_{il}/\tau)}

    (Eqs. (4)-(5) of [1]_: each item classified among all of them by a softmax over its kernel
    row at temperature :math:`\tau`).

    Parameters
    ----------
    X : array-like of shape (n, d)
    kernel : str or Kernel, default "cosine"
        The paper's default (L2-normalised embeddings, inner product).
    tau : float, default 1
        Softmax temperature (> 0): small tau sharpens every row, so any item distinct from its
        neighbours counts ~1.
    confidence_level, n_resamples, interval_size, rng
        As :func:`rke_mode_count`.
    progress : callable, optional
    **kernel_params

    Returns
    -------
    DCScoreResult
        The score and each item's :math:`P_{ii}`.

    Raises
    ------
    DiversityInputError
        Bad features, kernel, or tau not positive.

    Notes
    -----
    Sensitive to: near-duplicates (an item with a twin gets :math:`P_{ii} \le 1/2` at small tau)
    and to the temperature, which sets the similarity scale that counts. Misleads when tau is
    large relative to the kernel's range: with cosine similarities in [-1, 1] and tau = 1 every
    row is nearly uniform and the score of n distinct items is only about
    :math:`n e/(e + n - 1) \approx e` for large n, so differences between sets are squeezed near
    its floor; lower tau (0.05-0.1) for a usable range. It grows with n: compare at equal n.
    Cost: O(n^2 d) time in row blocks of K (one ``chunk_bytes`` block at a time, threads over
    blocks), O(n d) memory.

    References
    ----------
    .. [1] Y. Zhu, Y. Shi, X. Zhang, Z. Wang, "Measuring Diversity in Synthetic Datasets", ICML 2025.

    Examples
    --------
    >>> import numpy as np
    >>> round(dcscore(np.eye(3), tau=1.0, n_resamples=0).value.value, 12) == round(3 * np.e / (np.e + 2), 12)
    True
    """
    Xv, kern = resolved_kernel(X, kernel, kernel_params)
    tau = check_scalar(tau, "tau", float, min_val=0.0, include_boundaries="neither")
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    items = dcscore_items(Xv, kern, tau, progress)
    value = float(items.sum())
    if n_resamples:
        est = one_set_interval(Xv.shape[0], [value], lambda idx: [float(dcscore_items(Xv[idx], kern, tau).sum())],
                               bounds=((1.0,), (float(Xv.shape[0]),)), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=8, rng=gen)[0]
    else:
        est = Estimate(value)
    return DCScoreResult(value=est, tau=float(tau), n=int(Xv.shape[0]), kernel=kern.to_dict(), items=items)
