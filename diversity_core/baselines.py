"""Baseline diversity measures shown beside the Vendi scores (DESIGN §1.1).

- IntDiv (MOSES): ``1 - sum_ij p_i p_j K_ij`` (uniform p: ``1 - mean(K)``);
- average pairwise similarity over distinct pairs;
- GMStds: geometric mean of the per-feature standard deviations (optionally over the
  non-constant features, :func:`constant_features` counts the others);
- n-gram diversity for text (distinct / total n-grams) lives in
  :func:`diversity_core.featurizers.text.ngram_diversity`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from ._config import chunk_rows, fits_memory
from ._validation import check_features, check_weights
from .distances import _as_float64, _row_norms
from .kernels import PrecomputedKernel, get_kernel
from .sources import chunk_bounds

__all__ = ["intdiv", "average_similarity", "gmstds", "constant_features", "baseline_scores"]


def _weighted_sums(X, kernel, weights, kernel_params):
    """Validate, then return (p^T K p, sum_i p_i^2 K_ii, sum_i p_i^2) with p the normalised weights."""
    kern = get_kernel(kernel, **kernel_params)
    X = kern.validate(X)
    n = X.shape[0]
    p = check_weights(weights, n)
    p = np.full(n, 1.0 / n) if p is None else p
    return _kernel_sums(kern.resolve(X, p), X, p)


def _kernel_sums(kern, X, p: np.ndarray) -> tuple[float, float, float]:
    """(p^T K p, sum_i p_i^2 K_ii, sum_i p_i^2) for a resolved kernel, validated X and weights p."""
    if kern.has_feature_map:
        # p^T K p = ||Phi^T p||^2: O(n d) instead of O(n^2 d); the features of float64 rows (float32
        # rows converted exactly, chunk by chunk), so float32 data give their float64 copy's value
        v, diag = None, np.empty(X.shape[0])
        step = chunk_rows(X.shape[1], 8)
        for start in range(0, X.shape[0], step):
            Phi = kern.features(_as_float64(X[start:start + step]), check_input=False)
            part = np.asarray(Phi.T @ p[start:start + step], dtype=np.float64).ravel()
            v = part if v is None else v + part
            diag[start:start + step] = _row_norms(Phi, squared=True)  # K_ii = ||phi_i||^2
        quad = float(v @ v)
    elif not isinstance(kern, PrecomputedKernel) and not fits_memory(8.0 * X.shape[0] ** 2):
        return _blocked_kernel_sums(kern, X, p)
    else:
        K = X if isinstance(kern, PrecomputedKernel) else kern.gram(X, check_input=False)
        quad = float(p @ K @ p)
        diag = np.diagonal(K)
    return quad, float(np.dot(p * p, diag)), float(np.dot(p, p))


def _blocked_kernel_sums(kern, X, p: np.ndarray) -> tuple[float, float, float]:
    """:func:`_kernel_sums` by blocks of K, for an n x n matrix over the memory budget.

    The blocks of :func:`~diversity_core.blocked.vendi_2_exact`: the baselines never need the dense K.
    """
    from .blocked import _blocked_sums, _budget_block_rows, _pair_kernel, _workers

    workers = _workers()
    rows = _budget_block_rows(workers)
    block = _pair_kernel(kern, X)
    quad = _blocked_sums(block, X.shape[0], p, rows, None, workers)[0]
    diag = sum(float(np.dot(p[a:b] * p[a:b], np.diagonal(block((a, b), (a, b), True))))
               for a, b in chunk_bounds(X.shape[0], rows))
    return quad, diag, float(np.dot(p, p))


def _intdiv(kern, X, p: Optional[np.ndarray] = None) -> float:
    """IntDiv = 1 - p^T K p for a resolved kernel and validated X (uniform p when None)."""
    n = X.shape[0]
    return 1.0 - _kernel_sums(kern, X, np.full(n, 1.0 / n) if p is None else p)[0]


def intdiv(X, *, kernel="cosine", weights=None, **kernel_params) -> float:
    r"""Internal diversity of MOSES: :math:`1 - \sum_{ij} p_i p_j K_{ij}`.

    With uniform weights :math:`1 - \frac{1}{n^2}\sum_{ij} K_{ij}` (the diagonal included,
    as in MOSES). 0 when all items are identical.

    Notes
    -----
    O(n d) with a feature-map kernel (:math:`\|\Phi^T p\|^2`), O(n^2 d) otherwise, by blocks of K
    when the n x n matrix is over the memory budget (it is never needed whole).

    Examples
    --------
    >>> import numpy as np
    >>> intdiv(np.eye(4))
    0.75
    """
    quad, _, _ = _weighted_sums(X, kernel, weights, kernel_params)
    return 1.0 - quad


def average_similarity(X, *, kernel="cosine", weights=None, **kernel_params) -> float:
    r"""Average similarity over pairs of distinct items.

    :math:`\sum_{i \ne j} p_i p_j K_{ij} / \sum_{i \ne j} p_i p_j`; uniform weights give the
    mean of the off-diagonal entries of K.
    """
    quad, diag_term, pp = _weighted_sums(X, kernel, weights, kernel_params)
    return (quad - diag_term) / (1.0 - pp)


def _feature_stds(X: np.ndarray, p: Optional[np.ndarray]) -> np.ndarray:
    """Per-feature standard deviations of validated dense X (weighted when p is given)."""
    if p is None:
        return X.std(axis=0)
    mean = p @ X
    return np.sqrt(np.maximum(p @ (X - mean) ** 2, 0.0))


def constant_features(X, *, weights: Optional[np.ndarray] = None) -> int:
    """Number of features with zero (weighted) standard deviation, the ones that make GMStds 0."""
    X = np.asarray(check_features(X), dtype=np.float64)
    return int(np.count_nonzero(_feature_stds(X, check_weights(weights, X.shape[0])) == 0))


def gmstds(X, *, weights: Optional[np.ndarray] = None, skip_constant: bool = False) -> float:
    r"""Geometric mean of the per-feature standard deviations (GMStds).

    :math:`\exp(\frac{1}{d}\sum_k \log \sigma_k)`. Weighted standard deviations when weights
    are given.

    Parameters
    ----------
    X : array-like of shape (n, d), dense
    weights : array-like of shape (n,), optional
    skip_constant : bool, default False
        One constant feature (:math:`\sigma_k = 0`, e.g. a border pixel that is always black)
        makes the geometric mean 0 whatever the other features do. ``True`` takes the mean over
        the non-constant features only (0 when every feature is constant);
        :func:`constant_features` counts the ones left out.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 1.0, 5.0], [2.0, 1.0, 1.0]])
    >>> gmstds(X), gmstds(X, skip_constant=True)
    (0.0, 1.414213562373095)
    """
    X = check_features(X)
    X = np.asarray(X, dtype=np.float64)
    p = check_weights(weights, X.shape[0])
    std = _feature_stds(X, p)
    if skip_constant:
        std = std[std > 0]
        if std.size == 0:
            return 0.0
    elif np.any(std == 0):
        return 0.0
    return float(np.exp(np.mean(np.log(std))))


def baseline_scores(X, *, kernel="cosine", weights=None, **kernel_params) -> dict[str, float]:
    """IntDiv, average similarity and GMStds in one dict (GMStds only for dense features).

    The kernel's data-dependent defaults (the median bandwidth) are fixed on X as
    :func:`~diversity_core.spectrum.compute_spectrum` fixes them; the n x n kernel matrix is
    never needed whole (blocks of it past the memory budget). GMStds is :func:`gmstds`'s
    definition: 0 when a feature is constant.
    """
    quad, diag_term, pp = _weighted_sums(X, kernel, weights, kernel_params)
    out = {"intdiv": 1.0 - quad, "average_similarity": (quad - diag_term) / (1.0 - pp)}
    if not sp.issparse(X) and get_kernel(kernel, **kernel_params).name != "precomputed":
        out["gmstds"] = gmstds(X, weights=weights)
    return out
