"""Near-duplicate groups under a kernel (or a distance), and what they cost the diversity scores.

Two items are near-duplicates when their kernel similarity is at least a threshold (or their
Euclidean distance at most eps). Groups are the connected components of those pairs; each
keeps one representative (its medoid). The scores of the data with every other member
removed sit beside the original ones, so the cost of the duplicates is one subtraction.

Default thresholds (similarity under the kernel)
------------------------------------------------
=====================  =======  ==============================================================
kernel                 default  why
=====================  =======  ==============================================================
cosine                 0.99     angle under 8 degrees; raw-pixel digits, whose natural nearest
                                neighbours are near 0.97, have under 1 % of items above it
rbf                    0.99     distance under 0.14 bandwidths (0.14 median distances)
laplacian              0.9      L1 distance under 0.1 bandwidths
tanimoto               0.85     a fingerprint with one bit more (>= 6 bits set) or one bit
                                less (>= 7 bits set): one substructure added or lost
linear                 0.9      n-gram overlap (text): a punctuation mark or last word added or
                                dropped keeps >= 0.93 on 9-token sentences; a one-word typo
                                inside a short sentence drops to 0.6-0.9 (lower the threshold,
                                or use sentence embeddings with cosine, to catch those)
probability_product    0.99     Bhattacharyya coefficient
polynomial, combined,  0.99
precomputed
=====================  =======  ==============================================================

The linear kernel on rows that are not unit-norm has no scale, so it needs an explicit
threshold.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._nn import NN_METHODS
from .._progress import ProgressCallback, report
from .._validation import check_option, check_positive, check_random_state, check_scalar, check_weights
from ..baselines import _intdiv
from ..distances import _centred, _euclidean_distances, _paired_squared_distances, _squared_from_centred
from ..exceptions import DiversityInputError
from ..spectrum import compute_spectrum
from ._common import (
    DEFAULT_QS,
    KernelRows,
    block_rows,
    check_qs,
    dense_fits,
    kernel_range,
    one_blas_thread,
    prepare,
    readonly,
)
from ._search import APPROX_NEIGHBORS, knn_graph_approximate, pairs_above, resolve_method
from .results import DuplicateResult

__all__ = ["find_duplicates", "DEFAULT_THRESHOLDS", "default_threshold"]

METHODS = NN_METHODS

#: Default similarity threshold per kernel name (module docstring).
DEFAULT_THRESHOLDS = {
    "cosine": 0.99,
    "rbf": 0.99,
    "laplacian": 0.9,
    "tanimoto": 0.85,
    "linear": 0.9,
    "probability_product": 0.99,
    "polynomial": 0.99,
    "precomputed": 0.99,
    "combined": 0.99,
}


def default_threshold(kernel="cosine") -> float:
    """The default near-duplicate similarity threshold of a kernel (see :data:`DEFAULT_THRESHOLDS`)."""
    name = kernel if isinstance(kernel, str) else kernel.name
    return DEFAULT_THRESHOLDS.get(name, 0.99)


def find_duplicates(
    X,
    *,
    kernel="cosine",
    threshold: Optional[float] = None,
    eps: Optional[float] = None,
    weights=None,
    method: str = "auto",
    n_neighbors: int = APPROX_NEIGHBORS,
    q=DEFAULT_QS,
    scores: bool = True,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> DuplicateResult:
    r"""Groups of near-duplicate items, a representative for each, and the scores without them.

    A pair (i, j) is a near-duplicate when :math:`k(x_i, x_j) \ge \tau` (``threshold``), or
    when :math:`\|x_i - x_j\| \le \varepsilon` (``eps``, Euclidean on the rows of X). Groups
    are the connected components of the graph of those pairs; each keeps its medoid.

    Parameters
    ----------
    X : array-like of shape (n, d), or (n, n) with ``kernel="precomputed"``
    kernel : str or Kernel, default "cosine"
        Similarity of the pairs, the representatives and the scores.
    threshold : float, optional
        Similarity threshold in the kernel's range (``(-1, 1]`` for cosine, ``(0, 1]`` for
        rbf, tanimoto, ...). Default: :func:`default_threshold` of the kernel.
    eps : float, optional
        Use a Euclidean distance bound instead of a similarity threshold (not with ``threshold``).
    weights : array-like of shape (n,), optional
        Item weights of the scores (the kept items' weights are renormalised).
    method : {"auto", "exact", "approximate"}, default "auto"
        ``"exact"``: every pair, streamed by blocks of rows (O(n^2 d / 2) time, one block of
        memory). ``"approximate"``: the nearest candidates of each item from a pynndescent index
        (the project's one approximate search, ``diversity_core._nn``), checked exactly.
        ``"auto"``: exact up to 60,000 items.
    n_neighbors : int, default 15
        Candidates per item of the approximate search (at least 30 are checked: the index's
        graph never holds fewer).
    q : float or sequence, default (0.5, 1, 2, inf)
        Orders of the scores reported.
    scores : bool, default True
        Compute ``VS_q`` and IntDiv with and without the duplicates. ``VS_q`` is skipped
        (``None``) when its spectrum would need an n x n matrix beyond the memory budget.
    rng : int or Generator, optional
        Seed of the approximate index.
    progress : callable, optional
        ``progress(done, total, message)``.
    **kernel_params
        Kernel parameters, e.g. ``sigma=1.0``.

    Returns
    -------
    DuplicateResult

    Raises
    ------
    DiversityInputError
        A threshold outside the kernel's range, both or an invalid ``eps``, bad options or data.
    MissingDependencyError
        ``method="approximate"`` without pynndescent.

    Notes
    -----
    Similarities are compared with an allowance of ``16 sqrt(d) eps`` for round-off, so
    ``threshold=1`` finds exact copies. The approximate search misses a pair only when
    neither item is among the other's candidates; a group of near-copies stays connected as
    long as each member finds one other.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.001], [-1.0, 0.3]])
    >>> dup = find_duplicates(X, threshold=0.999, scores=False)
    >>> [g.tolist() for g in dup.groups], dup.representatives.tolist(), dup.removable.tolist()
    ([[0, 2]], [0], [2])
    """
    check_option(method, METHODS, "method")
    if threshold is not None and eps is not None:
        raise DiversityInputError("give either threshold (a similarity) or eps (a distance), not both.")
    qs = check_qs(q)
    n_neighbors = check_scalar(n_neighbors, "n_neighbors", int, min_val=1)
    kern, X = prepare(X, kernel, kernel_params)
    n = X.shape[0]
    p = check_weights(weights, n)
    seed = int(check_random_state(rng).integers(2**31 - 1))
    rows = KernelRows(kern, X)
    if eps is not None:
        if rows.precomputed:
            raise DiversityInputError("eps is a distance between feature rows; a precomputed kernel has none. "
                                      "Use threshold instead.")
        eps = check_positive(eps, "eps", allow_zero=True)
        criterion, value = "distance", eps
    else:
        criterion, value = "similarity", _check_threshold(threshold, kern, rows)
    method = resolve_method(method, n)
    k_cand = min(n_neighbors, n - 1)
    if method == "exact":
        with one_blas_thread():
            ii, jj, V = _pairs_exact(rows, criterion, value, progress)
    else:
        ii, jj, V = _pairs_approximate(rows, criterion, value, k_cand, seed, progress)
    labels, groups = _components(ii, jj, n)
    reps = np.array([_medoid(rows, g, criterion) for g in groups], dtype=np.intp)
    keep = labels < 0
    keep[reps] = True
    pairs = np.column_stack([ii, jj]) if ii.size else np.zeros((0, 2), dtype=np.intp)
    result = dict(
        n=n, criterion=criterion, threshold=float(value), method=method, pairs=pairs, pair_values=V,
        labels=labels, groups=tuple(groups), representatives=reps, keep=keep, qs=qs, kernel=kern.to_dict(),
        n_neighbors=k_cand if method == "approximate" else None,
    )
    if scores:
        result.update(_scores(kern, X, rows, p, keep, qs, progress))
    readonly(pairs, V, labels, reps, keep, *groups, result.get("vendi_original"), result.get("vendi_deduplicated"))
    return DuplicateResult(**result)


def _check_threshold(threshold, kern, rows: KernelRows) -> float:
    """The similarity threshold: the kernel's default, or a value inside the kernel's range."""
    lo, hi = kernel_range(kern, rows.diagonal() if kern.name == "linear" else None)
    if threshold is None:
        if math.isinf(hi):
            raise DiversityInputError(
                "the linear kernel on rows that are not unit-norm has no scale for a default threshold; "
                "pass threshold= explicitly, or use the cosine kernel."
            )
        return default_threshold(kern)
    t = check_scalar(threshold, "threshold", float)
    if not (lo < t <= hi):
        raise DiversityInputError(
            f"threshold must lie in the {kern.name} kernel's range ({lo:g}, {hi:g}] to separate pairs; got {t!r}. "
            f"Near-duplicates have similarities close to {hi:g} (default {default_threshold(kern):g})."
        )
    return t


#: Relative allowance on the squared distances of the block pass: above the expansion's error
#: for pairs it does not recompute (about sqrt(d) eps / 1e-6, see ``distances._squared_distances``).
#: Pairs inside it are candidates, decided on their exact distances.
_CANDIDATE_RTOL = 1e-4


def _pairs_exact(rows: KernelRows, criterion: str, value: float, progress):
    """Every pair over the threshold, streamed by blocks (no n x n matrix)."""
    if criterion == "similarity":
        return pairs_above(rows.block, rows.n, value - rows.slack, progress, "comparing pairs")
    # -|x - y|^2 (the sign makes "close" large, like a similarity), on the data centred on one
    # common mean: distances do not depend on where the data sit (X + 1000 found ~40 false pairs
    # with the uncentred expansion, whose error grows with |x|^2)
    # (centred and squared once; sparse rows stay where they are, their near pairs recomputed)
    A, sq = _centred(rows.X, None if sp.issparse(rows.X) else np.asarray(rows.X, dtype=np.float64).mean(axis=0))

    def neg_sq_dist(r, c):
        return _squared_from_centred(A[r], A[c], sq[r], sq[c], scale=-1.0, self_offset=r.start - c.start)

    cut = -(value * value) * (1.0 + _CANDIDATE_RTOL)
    ii, jj, _ = pairs_above(neg_sq_dist, rows.n, cut, progress, "comparing pairs")
    D = _pair_distances(rows.X, ii, jj)
    ok = _within(D, value, rows.slack)
    return ii[ok], jj[ok], D[ok]


def _within(D: np.ndarray, eps: float, slack: float) -> np.ndarray:
    """Exact distances at most eps, allowing the round-off of a sum of d squares (relative ``slack``)."""
    return D <= eps * (1.0 + slack)


def _pairs_approximate(rows: KernelRows, criterion: str, value: float, k: int, seed: int, progress):
    """Pairs over the threshold among each item's nearest candidates from the NN-descent index."""
    graph = knn_graph_approximate(rows, k, seed, progress, distance=criterion == "distance")
    valid = graph >= 0
    ii = np.repeat(np.arange(rows.n), valid.sum(axis=1))
    jj = graph[valid]
    a, b = np.minimum(ii, jj), np.maximum(ii, jj)
    key = np.unique(a.astype(np.int64) * rows.n + b)
    ii, jj = (key // rows.n).astype(np.intp), (key % rows.n).astype(np.intp)
    if criterion == "similarity":
        V = rows.pair_values(ii, jj)
        ok = V >= value - rows.slack
    else:
        D = _pair_distances(rows.X, ii, jj)
        ok = _within(D, value, rows.slack)
        V = D
    return ii[ok], jj[ok], V[ok]


def _pair_distances(X, ii, jj) -> np.ndarray:
    """Euclidean distances of the pairs (ii[m], jj[m]) from their exact differences."""
    return np.sqrt(_paired_squared_distances(X, X, ii, jj))


def _components(ii: np.ndarray, jj: np.ndarray, n: int) -> tuple[np.ndarray, list]:
    """Connected components with two or more items: labels (-1 for none), members per group.

    Groups are numbered by decreasing size, then by their smallest member.
    """
    labels = np.full(n, -1, dtype=np.intp)
    if ii.size == 0:
        return labels, []
    graph = sp.coo_matrix((np.ones(ii.size, dtype=np.int8), (ii, jj)), shape=(n, n)).tocsr()
    _, comp = connected_components(graph, directed=False)
    sizes = np.bincount(comp)
    order = np.argsort(comp, kind="stable")
    bounds = np.flatnonzero(np.r_[True, comp[order][1:] != comp[order][:-1], True])
    groups = [order[bounds[b]:bounds[b + 1]] for b in range(bounds.size - 1)]
    groups = [np.sort(g) for g in groups if sizes[comp[g[0]]] >= 2]
    groups.sort(key=lambda g: (-g.size, int(g[0])))
    for gi, g in enumerate(groups):
        labels[g] = gi
    return labels, groups


def _medoid(rows: KernelRows, members: np.ndarray, criterion: str) -> int:
    """The member with the largest total similarity (smallest total distance) to the others."""
    if members.size <= 2:
        return int(members[0])
    total = np.zeros(members.size)
    step = block_rows(members.size)
    for s in range(0, members.size, step):
        sub = members[s:s + step]
        if criterion == "similarity":
            total[s:s + step] = rows.block(sub, members).sum(axis=1)
        else:
            total[s:s + step] = -_euclidean_distances(rows.X[sub], rows.X[members]).sum(axis=1)
    return int(members[np.argmax(total)])  # argmax keeps the first (smallest) index on ties


def _scores(kern, X, rows: KernelRows, p, keep: np.ndarray, qs: tuple, progress) -> dict:
    """VS_q and IntDiv of all items and of the kept ones (VS only where the spectrum fits the budget)."""
    n = rows.n
    out = {}
    d = X.shape[1]
    dual = kern.has_feature_map and d < n and not rows.precomputed
    idx = np.flatnonzero(keep)
    pk = None if p is None else p[idx]
    if pk is not None and pk.sum() <= 0:
        raise DiversityInputError("every item kept after deduplication has weight 0; the scores are undefined.")
    report(progress, 0, 2, "scores with and without duplicates")
    if dual or dense_fits(n):
        spec_all = compute_spectrum(X, kernel=kern, weights=p)
        spec_kept = compute_spectrum(X[idx][:, idx] if rows.precomputed else X[idx], kernel=kern, weights=pk) \
            if idx.size >= 2 else None
        out["vendi_original"] = np.asarray(spec_all.profile(np.asarray(qs)), dtype=np.float64)
        out["vendi_deduplicated"] = (np.asarray(spec_kept.profile(np.asarray(qs)), dtype=np.float64)
                                     if spec_kept is not None else np.ones(len(qs)))
    report(progress, 1, 2, "scores with and without duplicates")
    out["intdiv_original"] = _intdiv_blocked(kern, X, rows, None if p is None else p, np.arange(n))
    out["intdiv_deduplicated"] = _intdiv_blocked(kern, X, rows, pk, idx)
    report(progress, 2, 2, "scores with and without duplicates")
    return out


def _intdiv_blocked(kern, X, rows: KernelRows, p, idx: np.ndarray) -> float:
    """IntDiv = 1 - p^T K p of the items ``idx`` (uniform p when None), without an n x n matrix."""
    m = idx.size
    w = np.full(m, 1.0 / m) if p is None else p / p.sum()
    if rows.phi is not None or (not rows.precomputed and dense_fits(m, copies=1)):
        Xs = X[idx] if not rows.precomputed else None
        if Xs is not None:
            return _intdiv(kern, Xs, w)
    total = 0.0
    step = block_rows(m)
    for s in range(0, m, step):
        total += float(w[s:s + step] @ rows.block(idx[s:s + step], idx) @ w)
    return 1.0 - total
