"""Distances for magnitude: the metrics, validation of a precomputed D, and merging of duplicates.

Magnitude of a multiset is the magnitude of its distinct points (the twin property), and two
points at distance 0 make :math:`Z_t` singular, so every path merges them: exact duplicate rows
by :func:`_merge_duplicates` before any distance is computed, and rows at distance 0 from an
earlier row (parallel rows under the cosine distance, rows equal after centring) afterwards.
The first occurrence is kept, in input order.

Metrics: the Euclidean, cityblock and cosine distances and the Tanimoto (Jaccard) distance
:math:`1 - \\langle a, b\\rangle / (\\|a\\|^2 + \\|b\\|^2 - \\langle a, b\\rangle)` of fingerprints are
computed by :mod:`diversity_core.distances` (by matrix products, with exact recomputation
where those cancel); every other name of
``scipy.spatial.distance`` (``minkowski`` with ``p``, ``chebyshev``, ``canberra``, ...) goes to
``scipy.spatial.distance.cdist`` row block by row block. The same block functions serve the
matrix-free path, which never holds D (:func:`_distance_rows`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp
import scipy.spatial.distance as _ssd
from scipy.spatial.distance import cdist

from .._config import check_memory
from .._validation import check_distance_matrix, check_features, check_option, check_scalar
from ..distances import (  # noqa: F401 - _cache_rows: imported from here by _solvers and _spread
    _cache_rows,
    _fingerprint_scale,
    _gram,
    _squared_distances,
    _squared_from_centred,
    _sum_squares,
    _symmetrize_upper,
    _tanimoto_from_gram,
    _tanimoto_norms,
    _unit_rows,
)
from ..exceptions import DiversityInputError, DuplicatesMergedWarning

#: The distances of ``scipy.spatial.distance`` (its own list when it exposes one).
_SCIPY_METRICS = tuple(sorted(getattr(_ssd, "_METRICS_NAMES", (
    "braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine", "dice", "euclidean",
    "hamming", "jaccard", "jensenshannon", "mahalanobis", "minkowski", "rogerstanimoto", "russellrao",
    "seuclidean", "sokalsneath", "sqeuclidean", "yule"))))
#: Distances computed here rather than by ``cdist`` ("jaccard" is the Tanimoto distance, which
#: equals SciPy's Jaccard distance on binary vectors and extends it to counts).
_OWN_METRICS = ("euclidean", "cityblock", "cosine", "tanimoto", "jaccard")
#: Distances accepted by ``metric=``: ours, then the rest of SciPy's, then "precomputed".
METRICS = _OWN_METRICS + tuple(m for m in _SCIPY_METRICS if m not in _OWN_METRICS) + ("precomputed",)

#: n x n float64 arrays a magnitude computation holds at once: D (or exp(-h D)), Z_t and one
#: Cholesky factor (float32, or float64 when the float32 one fails).
_DENSE_ARRAYS = 3
#: Rows per block in the blocked O(n^2) passes (bounds temporaries to ~_BLOCK * n entries).
_BLOCK = 512
#: Squared Euclidean distances below this share of ``|x - c|^2 + |y - c|^2`` (c the centre) are
#: recomputed from the differences (:func:`diversity_core.distances._squared_distances`): the
#: others keep a relative error near 1e-14, which ``exp(-t D)`` at large t needs (the kernels'
#: default share, 1e-6, allows about 1e-10).
_MAGNITUDE_SHARE = 1e-2
#: Columns hashed per pass of :func:`_row_hashes` (0.6 MiB of a 150-row float64 block: in cache).
_HASH_COLUMNS = 512


@dataclass
class _Space:
    """Validated distinct points: their distance matrix (owned, float64, C order) and bookkeeping."""

    D: Optional[np.ndarray]
    indices: np.ndarray
    n_points: int
    metric: str
    free: Optional[object] = None  # the matrix-free products (``_free._FreeSpace``) when D is not held

    @property
    def n(self) -> int:
        return self.indices.size

    @property
    def n_merged(self) -> int:
        return self.n_points - self.n


def _rows_text(rows: np.ndarray, limit: int = 5, ids: Optional[Sequence] = None) -> str:
    """The first row numbers of ``rows`` as text ("3, 7, ... (12 in all)"), or the items' ``ids``."""
    shown = ", ".join(str(int(r)) if ids is None else str(ids[int(r)]) for r in rows[:limit])
    return shown + (f", ... ({rows.size} in all)" if rows.size > limit else "")


def _warn_merged(name: str, dropped: np.ndarray, n_distinct: int, what: str,
                 ids: Optional[Sequence] = None) -> None:
    """Say which rows were merged into earlier ones (DuplicatesMergedWarning).

    With ``ids`` (the items' names: file names, ids) the message names the items rather than
    their row numbers (issue 41, item 11): "rows 120, 121" means nothing to the reader of a folder.
    """
    if ids is None:
        which = f"rows {_rows_text(dropped)} repeat earlier rows"
    else:
        what = what.replace("rows", "items").replace("row", "item")
        which = f"{_rows_text(dropped, ids=ids)} repeat earlier items"
    warnings.warn(
        f"{name} has {dropped.size} {what} ({which}); "
        f"magnitude is computed on the {n_distinct} distinct points (the twin property). "
        "Drop the repeats to silence this warning.",
        DuplicatesMergedWarning,
        stacklevel=4,
    )


def _check_dense_memory(n: int) -> None:
    """Refuse, before any n x n allocation, a magnitude computation over the memory budget."""
    check_memory(
        _DENSE_ARRAYS * 8.0 * n * n,
        what=f"magnitude of {n} points ({_DENSE_ARRAYS} float64 {n} x {n} arrays: D, Z_t and a Cholesky factor)",
        hint="Use a random subset of the points.",
    )


def _merge_duplicates(X: np.ndarray) -> tuple:
    """Distinct rows of a validated float64 ``X``, first occurrences in input order: ``(rows, n_merged, keep)``.

    ``rows`` is a new array (``-0.0`` turned into ``0.0``, so that equal rows compare equal),
    ``keep`` the input row of each distinct row.
    """
    keep = _first_distinct_rows(X)
    if keep.size == X.shape[0]:
        return X + 0.0, 0, keep
    rows = X[keep]  # a copy; -0.0 + 0.0 is +0.0, so one in-place addition normalises the zeros
    rows += 0.0
    return rows, X.shape[0] - keep.size, keep


def _row_hashes(X: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of finite X that equal rows share (``-0.0`` and ``0.0`` alike).

    Integer arithmetic modulo 2^64 on the bits of each value (after ``+ 0.0``, which turns
    ``-0.0`` into ``0.0``): a xor-shift mixes each value's high and low bits, a fixed odd
    multiplier per column weighs it, and the row sum is order-free, so equal rows hash equally
    whatever the summation order. Column blocks of :data:`_HASH_COLUMNS` keep the temporaries in
    cache: O(n d), one read of X.
    """
    n, d = X.shape
    uint = np.dtype(f"u{X.dtype.itemsize}")
    mult = np.random.default_rng(0x5EED).integers(1, 2**63, size=d, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    h = np.zeros(n, dtype=np.uint64)
    # buffers reused by every column block (no allocation, no page faults, in cache)
    step = min(d, _HASH_COLUMNS)
    vals = np.empty((n, step), dtype=X.dtype)
    widen = X.dtype.itemsize != 8
    bits = np.empty((n, step), dtype=np.uint64) if widen else vals.view(uint)
    tmp = np.empty((n, step), dtype=np.uint64)
    for c0 in range(0, d, step):
        w = min(d, c0 + step) - c0
        v, b, t = vals[:, :w], bits[:, :w], tmp[:, :w]
        np.add(X[:, c0:c0 + w], 0.0, out=v)  # -0.0 + 0.0 = +0.0
        if widen:
            np.copyto(b, v.view(uint))  # 32-bit patterns widened to 64 bits
        np.right_shift(b, np.uint64(29), out=t)
        np.bitwise_xor(b, t, out=b)
        np.multiply(b, mult[c0:c0 + w], out=b)
        h += b.sum(axis=1, dtype=np.uint64)
    return h


def _first_distinct_rows(X: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row of finite X, ascending.

    Rows are grouped by :func:`_row_hashes` and compared exactly within a group (a collision of
    distinct rows costs one comparison, never a wrong merge). ``np.unique(X, axis=0)`` gave the
    same answer but builds a structured dtype with one field per column: 6.4 s for 150 n-gram
    rows of 2^18 columns (issue 22).
    """
    n = X.shape[0]
    if n <= 1:
        return np.arange(n)
    h = _row_hashes(X)
    order = np.argsort(h, kind="stable")  # stable: members of a group in ascending row order
    hs = h[order]
    starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
    ends = np.r_[starts[1:], n]
    distinct = np.ones(n, dtype=bool)
    for s, e in zip(starts[ends - starts > 1], ends[ends - starts > 1]):
        firsts: list = []
        for i in order[s:e]:
            for j in firsts:
                if np.array_equal(X[i], X[j]):  # float equality: -0.0 == 0.0
                    distinct[i] = False
                    break
            else:
                firsts.append(i)
    return np.flatnonzero(distinct)


def _zero_distance_twins(D: np.ndarray) -> np.ndarray:
    """Boolean mask of rows at distance 0 from an earlier row (first occurrences kept)."""
    n = D.shape[0]
    later = np.zeros(n, dtype=bool)
    for i0 in range(0, n, _BLOCK):
        i1 = min(n, i0 + _BLOCK)
        rows, cols = np.divmod(np.flatnonzero(D[i0:i1] == 0), n)
        rows += i0
        pick = cols < rows
        if pick.any():
            later[rows[pick]] = True
    return later


def _check_metric(metric, p) -> tuple:
    """Validated ``(metric, p)``: a name of :data:`METRICS`; ``p`` only with "minkowski" (default 2, ``p >= 1``)."""
    if not isinstance(metric, str):
        raise DiversityInputError(f"metric must be a string, one of: {', '.join(METRICS)}; got {metric!r}.")
    check_option(metric, METRICS, "metric")
    if metric != "minkowski":
        if p is not None:
            raise DiversityInputError(f"p is the exponent of metric='minkowski'; got p={p!r} with metric={metric!r}.")
        return metric, None
    if p is None:
        return metric, 2.0
    p_val = float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else math.nan
    if p_val == math.inf:
        return metric, p_val
    return metric, check_scalar(p, "p", float, min_val=1)


class _PointMetric:
    """Rows of the distance matrix of validated distinct points, computed block by block on demand.

    ``rows(i0, i1)`` is ``D[i0:i1]`` (float64, ``i1 - i0`` x n). The dense path builds D from
    these blocks for the metrics without a faster exactly symmetric formula; the matrix-free
    path calls it at every product with Z_t and never holds D.
    """

    def __init__(self, X: np.ndarray, metric: str, p: Optional[float] = None):
        self.X = np.ascontiguousarray(X)
        self.metric = metric
        self.n = X.shape[0]
        self.kwargs: dict = {}
        if metric == "euclidean":
            self.Xc = self.X - self.X.mean(axis=0)
            self.sq = _sum_squares(self.Xc)
        elif metric == "cosine":
            self.U = _unit_rows_checked(self.X)
        elif metric in ("tanimoto", "jaccard"):
            _check_fingerprints(self.X, metric)
            self.X = _fingerprint_scale(self.X)[0]
            self.sq = _tanimoto_norms(self.X)
        elif metric == "minkowski":
            self.kwargs = {"p": p}
        elif metric == "seuclidean":  # the variances of all the points, not of each block pair (as pdist)
            self.kwargs = {"V": np.var(self.X, axis=0, ddof=1) if self.n > 1 else np.ones(X.shape[1])}
            if np.any(self.kwargs["V"] == 0):
                raise DiversityInputError(
                    "the seuclidean distance divides by each feature's variance; some features are constant. "
                    "Drop them or use metric='euclidean'."
                )
        elif metric == "mahalanobis":
            cov = np.atleast_2d(np.cov(self.X.T))
            try:
                VI = np.linalg.inv(cov)
            except np.linalg.LinAlgError:
                VI = None
            if VI is None or not np.isfinite(VI).all() or self.n <= X.shape[1]:
                raise DiversityInputError(
                    f"the mahalanobis distance needs an invertible covariance matrix (more points than the "
                    f"{X.shape[1]} features, none a combination of the others); got {self.n} points. "
                    "Use metric='seuclidean' or 'euclidean'."
                )
            self.kwargs = {"VI": VI}

    def rows(self, i0: int, i1: int) -> np.ndarray:
        """``D[i0:i1]`` (a new array; the diagonal entries in it are 0)."""
        return self.rows_of(slice(i0, i1), np.arange(i0, i1))

    def strip(self, i0: int, i1: int) -> np.ndarray:
        """``D[i0:i1, i0:]``: rows i0:i1 from their diagonal block on (the upper triangle's strip).

        The diagonal block is made exactly symmetric, so the strips of all row blocks define one
        exactly symmetric matrix (each pair's distance is computed once).
        """
        out = self.rows_of(slice(i0, i1), np.arange(i0, i1), j0=i0)
        b = i1 - i0
        diag = out[:, :b]
        diag[...] = np.triu(diag) + np.triu(diag, 1).T
        return out

    def rows_of(self, sel, idx: np.ndarray, j0: int = 0) -> np.ndarray:
        """``D[idx, j0:]`` where ``sel`` selects the same rows (a slice, or ``idx`` itself)."""
        m = self.metric
        if m == "euclidean":
            # centred once in __init__; pairs that cancel are recomputed from their differences
            out = _squared_from_centred(self.Xc[sel], self.Xc[j0:], self.sq[sel], self.sq[j0:],
                                        share=_MAGNITUDE_SHARE,
                                        self_offset=sel.start - j0 if isinstance(sel, slice) else None)
            np.sqrt(out, out=out)
        elif m == "cosine":
            out = _gram(self.U[sel], self.U[j0:])
            np.subtract(1.0, out, out=out)
            np.clip(out, 0.0, 2.0, out=out)
        elif m in ("tanimoto", "jaccard"):
            out = _tanimoto_distance(_gram(self.X[sel], self.X[j0:]), self.sq[sel], self.sq[j0:])
        else:
            out = cdist(self.X[sel], self.X[j0:], metric=m, **self.kwargs)
            np.maximum(out, 0.0, out=out)  # round-off below 0 (correlation)
        on = idx >= j0
        out[np.flatnonzero(on), idx[on] - j0] = 0.0
        return out


def _unit_rows_checked(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (the cosine distance, at any magnitude); all-zero rows are refused."""
    U, norms = _unit_rows(X)
    bad = norms == 0
    if bad.any():
        raise DiversityInputError(
            f"the cosine distance is undefined for all-zero rows; rows {_rows_text(np.flatnonzero(bad))} "
            "are zero. Drop them or use metric='euclidean'."
        )
    return U


def _check_fingerprints(X: np.ndarray, metric: str) -> None:
    """The Tanimoto distance needs non-negative features (bits or counts)."""
    if X.size and float(X.min()) < 0:
        rows = np.flatnonzero((X < 0).any(axis=1))
        raise DiversityInputError(
            f"the {metric} (Tanimoto) distance needs non-negative features (fingerprint bits or counts); "
            f"rows {_rows_text(rows)} have negative values. Use metric='euclidean' for signed embeddings."
        )


def _tanimoto_distance(G: np.ndarray, sq_rows: np.ndarray, sq_cols: np.ndarray) -> np.ndarray:
    """1 - G / (|a|^2 + |b|^2 - G) in place of the Gram block G (two all-zero rows: distance 0), clipped to [0, 1]."""
    G = _tanimoto_from_gram(G, sq_rows, sq_cols)  # similarity 1 for two all-zero rows
    np.subtract(1.0, G, out=G)
    np.clip(G, 0.0, 1.0, out=G)
    return G


def _pairwise(X: np.ndarray, metric: str, p: Optional[float] = None) -> tuple:
    """Distance matrix (n x n, float64, C order, exactly symmetric, zero diagonal).

    Returns ``(D, twins)`` where ``twins`` marks rows at distance 0 from an earlier row.
    """
    n = X.shape[0]
    if metric == "euclidean":
        return _euclidean(X)
    if metric == "cityblock":
        D = np.empty((n, n))
        for i0 in range(0, n, _BLOCK):  # |a - b| = |b - a| term by term: exactly symmetric
            i1 = min(n, i0 + _BLOCK)
            cdist(X[i0:i1], X, metric="cityblock", out=D[i0:i1])
    elif metric == "cosine":
        U = _unit_rows_checked(X)
        D = _gram(U)  # syrk (blocks mirrored beyond GRAM_BLOCK_ROWS): exactly symmetric
        np.subtract(1.0, D, out=D)
        np.clip(D, 0.0, 2.0, out=D)
    elif metric in ("tanimoto", "jaccard"):
        _check_fingerprints(X, metric)
        X = _fingerprint_scale(X)[0]
        G = _gram(X)  # syrk: exactly symmetric (and exact for 0/1 bits and small counts)
        sq = np.diag(G).copy()
        D = _tanimoto_distance(G, sq, sq)
    else:  # any other distance of scipy.spatial.distance, row block by row block
        pm = _PointMetric(X, metric, p)
        D = np.empty((n, n))
        for i0 in range(0, n, _BLOCK):
            i1 = min(n, i0 + _BLOCK)
            D[i0:i1] = pm.rows(i0, i1)
        _symmetrize_upper(D)  # cdist need not round D[i, j] and D[j, i] alike
        bad = ~np.isfinite(D)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise DiversityInputError(
                f"the {metric} distance is undefined (NaN or infinite) between rows {i} and {j} (e.g. an "
                f"all-zero or constant row). Drop such rows or choose another metric."
            )
    np.fill_diagonal(D, 0.0)
    return D, _zero_distance_twins(D)


def _euclidean(X: np.ndarray) -> tuple:
    """Euclidean distances of validated float64 rows and the rows at distance 0 from an earlier row: ``(D, twins)``.

    Centred squared distances by one product, the pairs below :data:`_MAGNITUDE_SHARE` of their
    squared distances to the centre recomputed from the differences (so exact duplicates, and
    rows equal after centring, come out at exactly 0).
    """
    D = _squared_distances(X, share=_MAGNITUDE_SHARE)
    np.sqrt(D, out=D)
    np.fill_diagonal(D, 0.0)
    return D, _zero_distance_twins(D)


def _distances(X_or_D: np.ndarray, metric: str, p: Optional[float] = None) -> tuple:
    """``(D, twins)`` of validated float64 rows (or a validated D, copied) after the memory check.

    Sparse rows (text n-grams: a few dozen of 2^18 columns set) keep their sparsity under the
    Euclidean metric: the products and the exact recomputation of near pairs (duplicates
    included, at exactly 0) run on CSR, O(nnz) per pair instead of O(d); other metrics densify.
    """
    n = X_or_D.shape[0]
    _check_dense_memory(n)
    if metric == "precomputed":
        D = np.array(X_or_D, dtype=np.float64, order="C")  # a copy: the solver overwrites D
        return D, _zero_distance_twins(D)
    if sp.issparse(X_or_D):
        if metric == "euclidean":
            return _euclidean(X_or_D)
        X_or_D = X_or_D.toarray()
    return _pairwise(np.ascontiguousarray(X_or_D), metric, p)


def _drop_twins(D: np.ndarray, twins: np.ndarray) -> tuple:
    """``(D, sub)``: the distance matrix without the rows and columns ``twins`` marks, and the rows kept."""
    sub = np.flatnonzero(~twins)
    if sub.size == D.shape[0]:
        return D, sub
    return np.ascontiguousarray(D[np.ix_(sub, sub)]), sub


def _check_pseudometric(D: np.ndarray, twins: np.ndarray) -> None:
    """A zero distance between two items must leave them interchangeable (equal rows of D)."""
    scale = float(D.max())
    for j in np.flatnonzero(twins)[:1000]:
        i = int(np.flatnonzero(D[j, :j] == 0)[0])
        if not np.allclose(D[i], D[j], rtol=1e-12, atol=1e-12 * scale):
            raise DiversityInputError(
                f"D[{i}, {j}] = 0 but rows {i} and {j} of D differ; a zero distance must make two "
                "items interchangeable (D is not a pseudometric). Fix D or merge those items."
            )


#: Largest |value| of a point's coordinate: squared distances of larger values overflow float64.
_MAX_ABS = 1e150


def _check_points(X_or_D, name: str) -> np.ndarray:
    """Validated float64 points whose squared distances stay finite."""
    X = check_features(X_or_D, name=name, min_samples=1, dtype=(np.float64,))
    big = float(np.max(np.abs(X))) if X.size else 0.0
    if big > _MAX_ABS:
        raise DiversityInputError(
            f"{name} has values up to {big:.3g}; distances between such points overflow double precision. "
            "Rescale the data: the magnitude of c * X at scale t equals that of X at scale c * t."
        )
    return X


def _prepare(X_or_D, metric: str, *, p: Optional[float] = None, name: str = "X", warn: bool = True,
             ids: Optional[Sequence] = None) -> _Space:
    """Validate once, merge duplicates (saying so when ``warn``), and build the distances of the distinct points.

    ``metric`` and ``p`` are validated here (:func:`_check_metric`); ``ids`` name the items in
    the warning (row numbers without).
    """
    metric, p = _check_metric(metric, p)
    if metric == "precomputed":
        early = isinstance(X_or_D, np.ndarray) and X_or_D.ndim == 2
        if early:  # before the validation's own n x n temporaries
            _check_dense_memory(X_or_D.shape[0])
        D = np.ascontiguousarray(check_distance_matrix(X_or_D, min_samples=1))  # a new float64 array
        n_points = D.shape[0]
        if not early:
            _check_dense_memory(n_points)
        twins = _zero_distance_twins(D)
        if twins.any():
            _check_pseudometric(D, twins)
        D, keep = _drop_twins(D, twins)
        if warn and twins.any():
            _warn_merged(name, np.flatnonzero(twins), keep.size, "items at distance 0 from another", ids=ids)
        return _Space(D=D, indices=keep, n_points=n_points, metric=metric)

    X = _check_points(X_or_D, name)
    n_points = X.shape[0]
    X, n_merged, keep = _merge_duplicates(X)
    if warn and n_merged:
        _warn_merged(name, np.setdiff1d(np.arange(n_points), keep), keep.size, "duplicate rows", ids=ids)
    D, twins = _distances(X, metric, p)
    if twins.any():  # e.g. parallel rows under the cosine distance, or rows equal after centring
        D, sub = _drop_twins(D, twins)
        if warn:
            _warn_merged(name, keep[twins], sub.size, f"rows at {metric} distance 0 from an earlier row", ids=ids)
        keep = keep[sub]
    return _Space(D=D, indices=keep, n_points=n_points, metric=metric)
