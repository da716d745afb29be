"""Rarity: how far each item is from its nearest neighbours under the kernel (outliers, long tail)."""

from __future__ import annotations

from typing import Optional

from .._progress import ProgressCallback
from .._validation import check_option, check_random_state
from ._common import KernelRows, check_count, one_blas_thread, prepare, readonly
from ._search import knn_approximate, knn_exact, resolve_method
from .results import RarityResult

__all__ = ["rarity_scores"]

METHODS = ("auto", "exact", "approximate")


def rarity_scores(
    X,
    *,
    kernel="cosine",
    n_neighbors: int = 10,
    method: str = "auto",
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> RarityResult:
    r"""Each item's rarity: one minus its mean similarity to its k nearest neighbours.

    .. math:: r_i = 1 - \frac{1}{k} \sum_{j \in N_k(i)} k(x_i, x_j)

    where :math:`N_k(i)` are the k items most similar to :math:`x_i` (itself excluded). An
    item with k exact copies scores 0; an outlier scores near 1 (up to 2 for kernels with
    negative values, such as cosine). High scores are the long tail a curator looks at;
    low scores the crowded regions.

    Parameters
    ----------
    X : array-like of shape (n, d), or (n, n) with ``kernel="precomputed"``
    kernel : str or Kernel, default "cosine"
    n_neighbors : int, default 10
        k, at most n - 1.
    method : {"auto", "exact", "approximate"}, default "auto"
        ``"exact"``: blocks of rows of the kernel matrix, O(n^2 d) time and one block of memory.
        ``"approximate"``: a pynndescent index, the neighbours' similarities then computed
        exactly. ``"auto"``: exact up to 60,000 items.
    rng : int or Generator, optional
        Seed of the approximate index.
    progress : callable, optional
        ``progress(done, total, message)``.
    **kernel_params
        Kernel parameters, e.g. ``sigma=1.0``.

    Returns
    -------
    RarityResult

    Raises
    ------
    DiversityInputError
        ``n_neighbors`` outside [1, n - 1], bad options or data.
    MissingDependencyError
        ``method="approximate"`` without pynndescent.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 0.01], [1.0, -0.01], [0.0, 1.0]])
    >>> int(rarity_scores(X, n_neighbors=2).rarest(1)[0])
    3
    """
    check_option(method, METHODS, "method")
    kern, X = prepare(X, kernel, kernel_params)
    n = X.shape[0]
    k = check_count(n_neighbors, "n_neighbors", low=1, high=n - 1, what="the number of items minus one")
    seed = int(check_random_state(rng).integers(2**31 - 1))
    rows = KernelRows(kern, X)
    method = resolve_method(method, n)
    if method == "exact":
        with one_blas_thread():
            idx, sim = knn_exact(rows, k, progress, "nearest neighbours")
    else:
        idx, sim = knn_approximate(rows, k, seed, progress)
    scores = 1.0 - sim.mean(axis=1)
    readonly(scores, idx, sim)
    return RarityResult(scores=scores, neighbors=idx, similarities=sim, n_neighbors=k, method=method,
                        kernel=kern.to_dict())
