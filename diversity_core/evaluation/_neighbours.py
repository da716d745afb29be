r"""Exact k-nearest-neighbour radii and radius tests between two feature sets, in row blocks.

Every metric of :mod:`diversity_core.evaluation` that looks at neighbours (precision, recall,
density, coverage, the improved precision and recall, memorisation) reduces to two questions
about squared Euclidean distances :math:`D^2_{ij} = \lVert a_i - b_j \rVert^2`:

- the k-th smallest distance of every row (a k-NN radius; within one set the item itself is
  left out, its exact duplicates are not), and the index of the nearest;
- for every pair, whether :math:`D^2_{ij}` is below a per-row or per-column threshold (a radius).

Both are answered **exactly in float64** while the n x m distances are formed with fast
products in the data's precision (float32 data: float32 GEMM, twice the speed of float64):

1. both sets are centred on one common centre c (distances do not move, and the products lose
   far fewer digits on data far from the origin) and each row block of :math:`A` gives
   :math:`\tilde D^2 = \lVert a\rVert^2 + \lVert b\rVert^2 - 2 a b^T` in one GEMM and nothing
   else: the columns are stored as :math:`[-2b, 1, \lVert b\rVert^2]` and each row block is
   formed as :math:`[a, \lVert a\rVert^2, 1]` (the two norms ride along as two extra inner
   terms; the elementwise passes that added them cost a third of the search);
2. the error of each value is bounded by
   :math:`|\tilde D^2_{ij} - D^2_{ij}| \le \tau_{ij} = (c_1 \sqrt d + c_2)\,\varepsilon\,(\lVert a_i\rVert^2 + \lVert b_j\rVert^2)`
   (:func:`band`; the project's round-off allowance of a d-term dot product, with a margin);
3. a decision whose approximate value lies within the band of its threshold is *ambiguous*:
   those few pairs (typically a few per million) are recomputed from their exact float64
   differences, and so is every candidate of a k-th smallest value (all entries within two bands
   of the approximate k-th value, which provably contain the exact k nearest).

The result is the answer of an exact float64 computation, at the speed of the data's precision;
for float64 data the band is about 1e-13 of the values and the recomputation is nearly empty.

Every set lives in one :class:`~diversity_core._nn.Frame` (centred on one float64 mean, scaled
by one power of two so that the largest centred entry lies in [0.5, 1)); the exact values are
:func:`diversity_core.distances._framed_paired_squared_distances` of the rows, the one formula of
every neighbour path (exact, blocked, approximate). Features of 1e160 or 1e-170 are searched like
features near 1, and every decision is unchanged by translating or rescaling all sets together.

**Ties** (one rule for every radius test, :func:`ball`): a pair is inside the ball of radius
:math:`\mathrm{NND}_k` when :math:`D^2 \le \mathrm{NND}_k^2 (1 + \rho)`, with
:math:`\rho = 2 (d + 2) \varepsilon_{64}` (:func:`tie_tolerance`), the closed ball with a
tolerance of twice the round-off of both sides (the float64 squared distance of a d-term
difference errs by at most about :math:`(d + 2) \varepsilon / 2` of its value). Pairs whose exact
distance ties with the radius (integer grids; n-gram features, where documents that share no
n-gram all lie :math:`\sqrt 2` apart up to the rounding of their normalisation) are inside,
whichever way round-off broke the tie; only pairs between :math:`(1 + \rho)` and
:math:`(1 + 2\rho)` times the radius could be decided either way.

Memory: the centred copies of both sets (``n (d + 2)`` values each, the data's precision) and one
block of ``rows x m`` values (the chunk size of :func:`diversity_core.set_config`) per thread of
the search. Time: ``O(n m d)`` for the products plus ``O(n m)`` elementwise work, both spread
over the cores: each thread runs whole blocks with a single-threaded GEMM
(:func:`diversity_core._nn.block_threads`), so no core waits through another's elementwise
work. Blocks are not split further across threads: a GEMM of fewer rows re-packs the other set
more often per product (measured: 167-row blocks against 50,000 rows ran at 2/3 the speed of
335-row blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from .._config import check_memory, chunk_rows
from .._nn import (
    NN_METHODS,
    ApproximateIndex,
    Frame,
    block_threads,
    choose_nn_method,
    frame_of,
    run_blocks,
)
from .._progress import ProgressCallback, report
from ..distances import _framed_paired_squared_distances, _squared_distances
from ..exceptions import DiversityInputError

__all__ = ["NN_METHODS", "Prepared", "prepare_pair", "resolve_nn_method", "kth_smallest", "radius_counts", "band",
           "approx_knn", "approx_ball_pairs", "brute_knn", "tie_tolerance", "ball", "Threshold", "UNITS"]

#: What :func:`kth_smallest` and :func:`approx_knn` return: squared distances or distances in the
#: data's units, or squared distances in the search's frame (``2**-2e`` times the squared ones).
UNITS = ("squared", "distance", "framed")


#: Round-off allowance of one squared distance, in units of eps * (|a|^2 + |b|^2): ``C1 sqrt(d) + C2``.
#: A blocked dot product of d terms errs by about sqrt(d) eps |a||b| (the project's ``slack`` rule);
#: C1 = 16 is its margin, C2 covers the rounding of the centred operands and of the sums.
_C1, _C2 = 16.0, 8.0


@dataclass
class Prepared:
    """Rows ready for blocked distances: the originals (exact recomputation) and centred copies.

    ``B`` holds the framed rows ``c = (X - centre) 2^-e`` (:class:`~diversity_core._nn.Frame`)
    in the products' precision, in the layout of the right-hand side of a product,
    ``[-2 c, 1, |c|^2]`` (``d + 2`` columns; scaling by -2 is exact); ``sq`` the squared row norms
    in float64 (of the rounded rows, so that ``sq_i + sq_j - 2 c_i . c_j`` is consistent), ``eps``
    the products' machine epsilon, ``exponent`` the frame's e (exact values: :meth:`pairs`).
    """

    X: np.ndarray
    B: np.ndarray
    sq: np.ndarray
    eps: float
    exponent: int = 0

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.B.shape[1]) - 2

    @property
    def dtype(self) -> np.dtype:
        return self.B.dtype

    def pairs(self, other: Prepared, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
        """Exact framed squared distances of the rows ``ii`` of this set to the rows ``jj`` of ``other``."""
        return exact_pairs(self.X, other.X, ii, jj, exponent=self.exponent)

    def left(self, rows) -> np.ndarray:
        """The rows ``rows`` in the layout of the left-hand side, ``[c, |c|^2, 1]`` (exact: -2 c times -1/2)."""
        Bs = self.B[rows]
        d = self.d
        L = np.empty_like(Bs)
        np.multiply(Bs[:, :d], -0.5, out=L[:, :d])
        L[:, d] = Bs[:, d + 1]
        L[:, d + 1] = 1.0
        return L


def _compute_dtype(*arrays) -> np.dtype:
    """float32 when every set is float32 (fast products), else float64."""
    return np.dtype(np.float32) if all(a.dtype == np.float32 for a in arrays) else np.dtype(np.float64)


def _centre_rows(X: np.ndarray, frame: Frame, dtype) -> Tuple[np.ndarray, np.ndarray]:
    """``[-2 c, 1, |c|^2]`` of the framed rows c in ``dtype`` and their squared norms (float64), by row chunks."""
    n, d = X.shape
    B = np.empty((n, d + 2), dtype=dtype)
    sq = np.empty(n)
    step = chunk_rows(d, 8)
    for s in range(0, n, step):
        block = frame.rows(X[s:s + step], dtype)
        rounded = block.astype(np.float64, copy=False)
        sq[s:s + step] = np.einsum("ij,ij->i", rounded, rounded)
        np.multiply(block, -2.0, out=B[s:s + step, :d])
        B[s:s + step, d] = 1.0
        B[s:s + step, d + 1] = sq[s:s + step]
    return B, sq


def prepared_bytes(sizes: Sequence[int], d: int, itemsize: int) -> float:
    """Bytes of the centred copies of sets of these sizes (``d + 2`` columns each)."""
    return float(sum(sizes)) * (d + 2) * itemsize


def prepare_pair(*sets: np.ndarray, centre_on: int = 0) -> Tuple[Prepared, ...]:
    """Framed copies of validated sets (same number of columns), centred on the mean of ``sets[centre_on]``.

    The products run in float32 when every set is float32, else in float64. The copies are
    checked against the memory budget. Every set shares one :class:`~diversity_core._nn.Frame`.
    """
    dtype = _compute_dtype(*sets)
    d = sets[0].shape[1]
    check_memory(prepared_bytes([s.shape[0] for s in sets], d, dtype.itemsize),
                 what="the centred copies of the feature sets for the neighbour search",
                 hint="Use nn_method='approximate' (pynndescent), or fewer or lower-dimensional features.")
    frame = frame_of(*sets, centre_on=centre_on)
    eps = float(np.finfo(dtype).eps)
    out = []
    for S in sets:
        B, sq = _centre_rows(S, frame, dtype)
        out.append(Prepared(X=S, B=B, sq=sq, eps=eps, exponent=frame.exponent))
    return tuple(out)


def tie_tolerance(d: int) -> float:
    """Relative tolerance of the tie rule: ``2 (d + 2) eps`` of float64 (module docstring, **Ties**)."""
    return 2.0 * (int(d) + 2) * float(np.finfo(np.float64).eps)


def ball(radii_sq: np.ndarray, d: int) -> np.ndarray:
    """Thresholds of the closed balls of squared radii ``radii_sq``: ``D^2 <= ball`` is inside (the tie rule)."""
    return np.asarray(radii_sq, dtype=np.float64) * (1.0 + tie_tolerance(d))


def to_units(values: np.ndarray, exponent: int, units: str) -> np.ndarray:
    """Framed squared distances in ``units`` (:data:`UNITS`); refuses squared values the float64 range cannot hold.

    Raises
    ------
    DiversityInputError
        ``units="squared"`` and a nonzero squared distance overflows (features near 1e154 or
        beyond) or underflows (near 1e-154): ask for ``"distance"`` or rescale the features.
    """
    if units == "framed" or exponent == 0:
        return values if units != "distance" else np.sqrt(values)
    if units == "distance":
        return np.ldexp(np.sqrt(values), exponent)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(values, 2 * exponent)
    lost = (values > 0) & ~((out >= np.finfo(np.float64).tiny) & np.isfinite(out))
    if lost.any():
        raise DiversityInputError(
            "squared distances of these features leave double precision (features near 1e154 or beyond, or "
            "near 1e-154 or below); the neighbour metrics are scale-free: rescale the features by one factor "
            "(c * X for every set)."
        )
    return out


def band(a: Prepared) -> float:
    """Relative round-off allowance of one approximate squared distance (see the module docstring).

    The two norm terms of the product add at most ``2 eps (|a|^2 + |b|^2)`` to the d-term dot
    product's error, inside ``C2``.
    """
    return (_C1 * math.sqrt(a.d) + _C2) * a.eps


def resolve_nn_method(method: str, sizes: Sequence[int], d: int, itemsize: int) -> str:
    """``"auto"`` resolved by the project's one rule (:func:`diversity_core._nn.choose_nn_method`).

    The exact search holds the centred copies of the sets (:func:`prepared_bytes`).
    """
    return choose_nn_method(method, max(sizes), prepared_bytes(sizes, d, itemsize))


def block_rows(m: int, itemsize: int) -> int:
    """Rows per block of an ``rows x m`` distance block: about one chunk (``chunk_bytes``), at least 16."""
    return max(16, min(chunk_rows(m, itemsize, minimum=16), 8192))


def _approx_block(a: Prepared, b: Prepared, rows, cols: Optional[slice] = None) -> np.ndarray:
    """Approximate squared distances of the rows ``rows`` of a to the rows ``cols`` of b (default all).

    One GEMM in the products' precision, ``[c_a, |c_a|^2, 1] [-2 c_b, 1, |c_b|^2]^T``; ``rows`` a
    slice or an index array. Values within round-off of 0 may come out slightly negative: every
    decision near them is within the band and recomputed exactly.
    """
    Bb = b.B if cols is None else b.B[cols]
    return a.left(rows) @ Bb.T


def exact_pairs(A: np.ndarray, B: np.ndarray, ii: np.ndarray, jj: np.ndarray, *, exponent: int = 0) -> np.ndarray:
    """``||2^-exponent (A[ii[t]] - B[jj[t]])||^2`` in float64 from the exact differences (the project's one formula).

    :func:`diversity_core.distances._framed_paired_squared_distances`.
    """
    return _framed_paired_squared_distances(A, B, ii, jj, exponent=exponent)


#: Extra candidates per row the symmetric within-set search keeps beyond the k nearest.
POOL_EXTRA = 11


def _cut(vk: np.ndarray, tau: np.ndarray, dtype) -> np.ndarray:
    """``vk + 2 tau`` in the products' dtype, rounded up (a float32 cut must not lose a candidate)."""
    cut = (np.asarray(vk, dtype=np.float64) + 2.0 * tau).astype(dtype)
    return np.nextafter(cut, np.inf, dtype=dtype) if dtype == np.float32 else cut


def _finish(a: Prepared, b: Prepared, rows: np.ndarray, ii: np.ndarray, jj: np.ndarray, ks, values, nearest) -> None:
    """Exact k-th values and nearest index of the rows ``rows`` from their candidates.

    ``ii`` indexes ``rows`` (local), ``jj`` the rows of b; every row has at least max(ks)
    candidates, among them all of its exact k nearest.
    """
    exact = a.pairs(b, rows[ii], jj)
    order = np.lexsort((jj, exact, ii))
    ii, jj, exact = ii[order], jj[order], exact[order]
    first = np.searchsorted(ii, np.arange(rows.size))
    for c, k in enumerate(ks):
        values[rows, c] = exact[first + k - 1]
    nearest[rows] = jj[first]


def _kth_rows(a: Prepared, b: Prepared, own: bool, ks, rows: np.ndarray, tol: float, sq_b_max: float,
              values, nearest) -> None:
    """:func:`kth_smallest` for the rows ``rows`` of a against every row of b (one block)."""
    kmax = int(max(ks))
    S = _approx_block(a, b, rows)
    r = S.shape[0]
    if own:
        S[np.arange(r), rows] = np.inf
    kth = sorted({k - 1 for k in ks} | {0})
    vk = np.partition(S, kth, axis=1)[:, kmax - 1]
    # every entry errs by at most tau_i = tol (sq_a_i + sq_b_max): the exact k-th value lies within
    # tau_i of vk, and every row whose exact distance is at most it lies below vk + 2 tau_i
    cut = _cut(vk, tol * (a.sq[rows] + sq_b_max), S.dtype)
    ii, jj = np.nonzero(S <= cut[:, None])
    del S
    _finish(a, b, rows, ii, jj, ks, values, nearest)


def _kth_blocks(a: Prepared, b: Prepared, own: bool, ks, rows: np.ndarray, tol: float, sq_b_max: float,
                values, nearest, progress, message: str) -> None:
    """:func:`_kth_rows` over the rows ``rows`` in blocks, on the search's threads (disjoint rows each)."""
    with block_threads() as threads:
        step = block_rows(b.n, a.dtype.itemsize)
        n_blocks = -(-rows.size // step)

        def work(start):
            _kth_rows(a, b, own, ks, rows[start:start + step], tol, sq_b_max, values, nearest)

        def consume(start, _):
            report(progress, start // step + 1, n_blocks, message)

        run_blocks(range(0, rows.size, step), work, consume, threads)


#: Random rows whose distances give every row a first cut in the within-set search.
CUT_SAMPLE = 1024


def _initial_cuts(a: Prepared, L: int) -> np.ndarray:
    """For every row, the L-th smallest approximate distance to a fixed random sample of other rows.

    An upper bound of the row's L-th smallest distance to all rows (up to round-off, which only
    costs a full search of the row: :func:`_kth_within` checks completeness).
    """
    n = a.n
    s = min(n, CUT_SAMPLE)
    idx = np.sort(np.random.default_rng(0).choice(n, s, replace=False))
    sample = Prepared(X=a.X, B=np.ascontiguousarray(a.B[idx]), sq=a.sq[idx], eps=a.eps)
    position = np.full(n, -1, dtype=np.intp)
    position[idx] = np.arange(s)
    cuts = np.empty(n, dtype=a.dtype)

    def work(start):
        stop = min(n, start + step)
        S = _approx_block(a, sample, slice(start, stop))
        own = np.flatnonzero(position[start:stop] >= 0)
        S[own, position[start + own]] = np.inf
        cuts[start:stop] = np.partition(S, L - 1, axis=1)[:, L - 1]

    with block_threads() as threads:
        step = block_rows(s, a.dtype.itemsize)
        run_blocks(range(0, n, step), work, lambda *_: None, threads)
    return cuts


def _group_order(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Stable order by (group, value): ``np.lexsort((values, group))``.

    float32 values: one stable sort of an int64 key, the group in the high 32 bits and the
    value's bits, mapped to an order-preserving unsigned integer, in the low 32 (7x faster than
    lexsort's two sorts; the merges of the within-set search run on the calling thread).
    """
    if values.dtype != np.float32:
        return np.lexsort((values, group))
    bits = values.view(np.int32).astype(np.int64)
    ordered = np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits) + (1 << 31)
    return np.argsort((group.astype(np.int64) << 32) | ordered, kind="stable")


def _merge_pairs(pool_v: np.ndarray, pool_i: np.ndarray, cuts: np.ndarray, rows: np.ndarray, vals: np.ndarray,
                 idx: np.ndarray) -> None:
    """Keep in each row's pool the L smallest of its entries and of the new pairs (row, value, index).

    Every pool row holds L slots (unused: inf, index -1); the row's cut becomes its pool's largest
    value when that is lower.
    """
    if rows.size == 0:
        return
    L = pool_v.shape[1]
    seen = np.zeros(pool_v.shape[0], dtype=bool)
    seen[rows] = True
    u = np.flatnonzero(seen)
    position = np.empty(pool_v.shape[0], dtype=np.intp)
    position[u] = np.arange(u.size)
    group = np.concatenate([np.repeat(np.arange(u.size), L), position[rows]])
    all_v = np.concatenate([pool_v[u].ravel(), vals])
    all_i = np.concatenate([pool_i[u].ravel(), idx])
    order = _group_order(group, all_v)
    first = np.searchsorted(group[order], np.arange(u.size))
    sel = order[(first[:, None] + np.arange(L)).ravel()]
    pool_v[u] = all_v[sel].reshape(u.size, L)
    pool_i[u] = all_i[sel].reshape(u.size, L)
    cuts[u] = np.minimum(cuts[u], pool_v[u, L - 1])


def _kth_within(a: Prepared, ks, tol: float, progress, message: str) -> tuple:
    """Within-set k-th values by the upper triangle of blocks only (half the products).

    Block b gives the rows of b against the columns from b on; those values also serve the later
    rows (by symmetry). Each row keeps a pool of its L = kmax + POOL_EXTRA smallest approximate
    values. Only the entries at most the row's current cut enter the pool (one comparison per
    entry, no sort of the blocks): the cut starts at the L-th smallest distance to a random
    sample of rows (:func:`_initial_cuts`) and falls to the pool's largest as the pool fills.
    A row is complete when its pool holds every entry up to its final cut (the approximate k-th
    value plus two bands): its pool's largest exceeds that cut, and the filter's cut was not
    below it; the rare other rows are searched again in full.
    """
    n = a.n
    kmax = int(max(ks))
    L = min(kmax + POOL_EXTRA, n - 1)
    dtype = a.dtype
    pool_v = np.full((n, L), np.inf, dtype=dtype)
    pool_i = np.full((n, L), -1, dtype=np.intp)
    cuts = _initial_cuts(a, L)
    filter_cut = cuts.copy()  # lowest cut each row's filter used (entries above it never entered)

    def work(start):
        stop = min(n, start + step)
        r = stop - start
        # the cuts as this block's filter reads them (other blocks lower them meanwhile)
        used = cuts[start:].copy()
        S = _approx_block(a, a, slice(start, stop), slice(start, n))
        S[np.arange(r), np.arange(r)] = np.inf
        # this block's rows against the columns from ``start`` on
        ii, jj = np.nonzero(S <= used[:r, None])
        rows, vals, idx = [ii + start], [S[ii, jj]], [jj + start]
        if stop < n:  # the later rows against this block's rows (by symmetry)
            later = S[:, r:]
            ii, jj = np.nonzero(later <= used[None, r:])
            rows.append(jj + stop)
            vals.append(later[ii, jj])
            idx.append(ii + start)
        return used, np.concatenate(rows), np.concatenate(vals), np.concatenate(idx)

    def consume(start, result):
        used, rows, vals, idx = result
        np.minimum(filter_cut[start:], used, out=filter_cut[start:])
        _merge_pairs(pool_v, pool_i, cuts, rows, vals, idx)
        done[0] += 1
        report(progress, done[0], n_blocks, message)

    with block_threads() as threads:
        step = block_rows(n, dtype.itemsize)
        n_blocks = -(-n // step)
        done = [0]
        run_blocks(range(0, n, step), work, consume, threads)
    order = np.argsort(pool_v, axis=1, kind="stable")
    pool_v = np.take_along_axis(pool_v, order, axis=1)
    pool_i = np.take_along_axis(pool_i, order, axis=1)
    sq_max = float(a.sq.max())
    cut = _cut(pool_v[:, kmax - 1], tol * (a.sq + sq_max), dtype)
    complete = (pool_v[:, -1] > cut) & (cut <= filter_cut)
    values = np.empty((n, len(ks)))
    nearest = np.empty(n, dtype=np.intp)
    ok = np.flatnonzero(complete)
    ii, cc = np.nonzero(pool_v[ok] <= cut[ok, None])
    _finish(a, a, ok, ii, pool_i[ok][ii, cc], ks, values, nearest)
    redo = np.flatnonzero(~complete)
    if redo.size:
        _kth_blocks(a, a, True, ks, redo, tol, sq_max, values, nearest, None, message)
    return values, nearest


def kth_smallest(
    a: Prepared,
    b: Optional[Prepared],
    ks: Sequence[int],
    *,
    units: str = "squared",
    progress: Optional[ProgressCallback] = None,
    message: str = "nearest neighbours",
) -> Tuple[np.ndarray, np.ndarray]:
    """Exact k-th smallest squared distance from every row of a to the rows of b, for each k in ``ks``.

    ``b=None`` searches a within itself, leaving each row out of its own neighbours (its exact
    duplicates stay in), over the upper triangle of blocks only. Returns ``(values, nearest)``:
    ``values`` of shape (n, len(ks)), float64, in ``units`` (:data:`UNITS`: squared distances,
    distances, or the frame's squared distances, which radius tests take), and ``nearest`` of
    shape (n,), the index of the nearest row (ties: smaller index).

    Raises
    ------
    DiversityInputError
        ``units="squared"`` and the squared distances leave the float64 range (:func:`to_units`).
    """
    own = b is None
    b = a if own else b
    n, m = a.n, b.n
    kmax = int(max(ks))
    if kmax > m - (1 if own else 0):
        raise DiversityInputError(
            f"k = {kmax} nearest neighbours need at least {kmax + (1 if own else 0)} items; got {m}."
        )
    tol = band(a)
    if own and n > block_rows(m, a.dtype.itemsize):
        values, nearest = _kth_within(a, list(ks), tol, progress, message)
        return to_units(values, a.exponent, units), nearest
    values = np.empty((n, len(ks)))
    nearest = np.empty(n, dtype=np.intp)
    sq_b_max = float(b.sq.max()) if m else 0.0
    _kth_blocks(a, b, own, list(ks), np.arange(n), tol, sq_b_max, values, nearest, progress, message)
    return to_units(values, a.exponent, units), nearest


@dataclass(frozen=True)
class Threshold:
    """A radius test ``D2_ij <= theta`` (framed squared distances), theta per row or per column of the pairs.

    ``theta`` comes from :func:`ball` (the tie rule). ``counts`` says which counts the caller
    needs: ``"rows"`` (per row of a: how many columns pass), ``"cols"`` (per column: how many
    rows pass), or both.
    """

    theta: np.ndarray
    per: str  # "row" or "col"
    counts: Tuple[str, ...]


def _counts_for(S, theta, per, strict):
    """Boolean decisions of one threshold on a block (approximate values)."""
    th = theta[:, None] if per == "row" else theta[None, :]
    return np.less(S, th) if strict else np.less_equal(S, th)


def _count(mask: np.ndarray, axis: int) -> np.ndarray:
    """True entries of a boolean block along ``axis`` (bytes summed into int32: faster than count_nonzero)."""
    return mask.view(np.uint8).sum(axis=axis, dtype=np.int32)


def radius_counts(
    a: Prepared,
    b: Prepared,
    thresholds: Sequence[Threshold],
    *,
    progress: Optional[ProgressCallback] = None,
    message: str = "radius tests",
) -> list:
    """Exact counts of the pairs passing each radius test (``D2 <= theta``), per row of a and/or per column of b.

    For each threshold returns a dict with ``"rows"`` (shape (n,), int64) and/or ``"cols"``
    (shape (m,), int64). Decisions within the round-off band of their threshold are recomputed
    from exact float64 differences (module docstring).
    """
    n, m = a.n, b.n
    tol = band(a)
    sq_a_max, sq_b_max = float(a.sq.max()), float(b.sq.max())
    out = [{c: np.zeros(n if c == "rows" else m, dtype=np.int64) for c in t.counts} for t in thresholds]
    # the band of each threshold, per row or per column: tol (sq_i + max sq of the other side)
    bands = [tol * ((b.sq + sq_a_max) if t.per == "col" else (a.sq + sq_b_max)) for t in thresholds]
    with block_threads() as threads:
        _radius_blocks(a, b, thresholds, out, bands, threads, progress, message)
    return out


def _radius_blocks(a, b, thresholds, out, bands, threads, progress, message) -> None:
    """The block loop of :func:`radius_counts` (adds into ``out``) on ``threads`` threads.

    Each block adds its rows' counts itself (disjoint rows); its per-column counts are added on
    the calling thread.
    """
    n = a.n
    step = block_rows(b.n, a.dtype.itemsize)
    n_blocks = -(-n // step)

    def work(start):
        rows = slice(start, min(n, start + step))
        S = _approx_block(a, b, rows)
        cols = []
        for t, acc, bnd in zip(thresholds, out, bands):
            theta = t.theta[rows] if t.per == "row" else t.theta
            tb = bnd[rows] if t.per == "row" else bnd
            lo = (theta - tb).astype(S.dtype)
            hi = (theta + tb).astype(S.dtype)
            if S.dtype == np.float32:
                lo = np.nextafter(lo, -np.inf, dtype=S.dtype)
                hi = np.nextafter(hi, np.inf, dtype=S.dtype)
            sure = _counts_for(S, lo, t.per, True)
            maybe = _counts_for(S, hi, t.per, False)
            sure_rows = _count(sure, 1)
            maybe_rows = _count(maybe, 1)
            if "rows" in acc:
                acc["rows"][rows] += sure_rows
            col_counts = _count(sure, 0).astype(np.int64) if "cols" in acc else None
            flagged = np.flatnonzero(maybe_rows > sure_rows)
            if flagged.size:
                amb = maybe[flagged] & ~sure[flagged]
                li, jj = np.nonzero(amb)
                ii = flagged[li]
                exact = a.pairs(b, ii + start, jj)
                th_pair = theta[ii] if t.per == "row" else theta[jj]
                ok = exact <= th_pair
                if "rows" in acc:
                    np.add.at(acc["rows"], ii[ok] + start, 1)
                if col_counts is not None:
                    np.add.at(col_counts, jj[ok], 1)
            cols.append(col_counts)
            del sure, maybe
        return cols

    def consume(start, cols):
        for acc, col_counts in zip(out, cols):
            if col_counts is not None:
                acc["cols"] += col_counts
        report(progress, start // step + 1, n_blocks, message)

    run_blocks(range(0, n, step), work, consume, threads)


# ---------------------------------------------------------------------------------------------
# approximate search (pynndescent), for data whose framed copies exceed the memory budget
# ---------------------------------------------------------------------------------------------
#: Candidates per query the approximate radius tests look at.
APPROX_CANDIDATES = 30


def approx_knn(X: np.ndarray, Y: Optional[np.ndarray], k: int, seed: int, *, units: str = "squared",
               frame: Optional[Frame] = None, index: Optional[ApproximateIndex] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Approximate k nearest rows of Y (or of X itself, leaving each row out) for every row of X.

    Returns ``(indices, values)``, shape (n, k), by increasing distance (ties: smaller index),
    ``values`` in ``units`` (:data:`UNITS`). The candidates come from the project's one
    approximate search (:class:`diversity_core._nn.ApproximateIndex` of the base set, built here
    unless ``index`` is given: an NN-descent index of the rows centred in float64 and scaled by a
    power of two, then float32) and are ranked by their exact distances (:func:`exact_pairs`, in
    ``frame``: by default the frame of the base set, or of Y and X together), so every returned
    value is an exact distance of a true pair and the k-th is never below the exact k-th
    nearest distance.

    pynndescent marks a neighbour it did not find with index -1; those entries are never used.
    A row left with fewer than k neighbours is searched exactly instead (:func:`brute_knn`).
    """
    own = Y is None
    base = X if own else Y
    if frame is None:
        frame = frame_of(X) if own else frame_of(Y, X)
    if index is None:
        index = ApproximateIndex(base, metric="euclidean", seed=seed, k=k, frame=frame)
    cand = index.graph() if own else index.query(X, k)
    idx, d2 = _ranked(X, base, cand, k, own, frame)
    return idx, to_units(d2, frame.exponent, units)


def _ranked(X, base, cand, k, own, frame) -> Tuple[np.ndarray, np.ndarray]:
    """The k nearest of each row's candidates by exact framed distances; rows left short searched exactly."""
    n = X.shape[0]
    missing = cand < 0
    safe = np.where(missing, 0, cand)
    ii = np.repeat(np.arange(n), cand.shape[1])
    d2 = exact_pairs(X, base, ii, safe.ravel(), exponent=frame.exponent).reshape(cand.shape)
    d2[missing] = np.inf
    if cand.shape[1] < k:  # the index holds fewer neighbours than asked for: every row exactly
        return brute_knn(X, base, k, exclude=np.arange(n) if own else None, frame=frame)
    order = np.lexsort((safe, d2), axis=1)[:, :k]
    idx, d2 = np.take_along_axis(safe, order, axis=1), np.take_along_axis(d2, order, axis=1)
    short = np.flatnonzero(~np.isfinite(d2[:, -1]))  # fewer than k neighbours found
    if short.size:
        idx[short], d2[short] = brute_knn(X[short], base, k, exclude=short if own else None, frame=frame)
    return idx, d2


def approx_ball_pairs(centres: np.ndarray, others: np.ndarray, index: ApproximateIndex, radii: np.ndarray,
                      frame: Frame, *, start: int = APPROX_CANDIDATES) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (centre i, other j, framed D^2) with ``D^2 <= radii[i]`` among the candidates of an index of ``others``.

    Each centre asks the index for its ``start`` nearest others; a centre whose candidates all
    lie inside its ball (the ball may hold more) asks again for four times as many, up to all
    of them. So a pair is missed only when the index misses it among the nearest others of its
    centre, never because a ball holds more than ``start`` items. Distances are exact
    (:func:`exact_pairs`); each pair appears once.
    """
    n_o = others.shape[0]
    rows = np.arange(centres.shape[0])
    c = start
    found_i, found_j, found_v = [], [], []
    while rows.size:
        cand = index.query(centres[rows], c)
        valid = cand >= 0
        safe = np.where(valid, cand, 0)
        ii = np.repeat(rows, cand.shape[1])
        d2 = exact_pairs(centres, others, ii, safe.ravel(), exponent=frame.exponent).reshape(cand.shape)
        inside = valid & (d2 <= radii[rows, None])
        li, lj = np.nonzero(inside)
        found_i.append(rows[li])
        found_j.append(safe[li, lj])
        found_v.append(d2[li, lj])
        if cand.shape[1] >= n_o:
            break
        rows = rows[inside.sum(axis=1) == cand.shape[1]]  # every candidate inside: the ball may hold more
        c *= 4
    i, j, v = np.concatenate(found_i), np.concatenate(found_j), np.concatenate(found_v)
    _, first = np.unique(i.astype(np.int64) * n_o + j, return_index=True)
    return i[first], j[first], v[first]


def brute_knn(A: np.ndarray, B: np.ndarray, k: int, *, exclude: Optional[np.ndarray] = None,
              frame: Optional[Frame] = None, extra: int = 16) -> Tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of B for every row of A: ``(indices, framed squared distances)`` by increasing distance.

    For the few rows the approximate index leaves short. B is read in chunks (one ``len(A) x
    rows`` block of float64 at a time, about ``chunk_bytes``) whose distances come from the
    project's centred, cancellation-safe :func:`diversity_core.distances._squared_distances` on
    the framed rows; each row keeps its ``k + extra`` smallest, and those candidates are
    recomputed by :func:`exact_pairs` (ties: smaller index). ``exclude[i]`` is a row of B left
    out for row i (the row itself when A is part of B).
    """
    frame = frame_of(B, A) if frame is None else frame
    m, nb = A.shape[0], B.shape[0]
    L = min(nb, k + extra)
    a = frame.rows(A)
    zero = np.zeros(A.shape[1])
    cand_i = np.empty((m, 0), dtype=np.intp)
    cand_v = np.empty((m, 0))
    step = chunk_rows(max(m, B.shape[1]), 8, minimum=16)
    for s in range(0, nb, step):
        D = _squared_distances(a, frame.rows(B[s:s + step]), centre=zero)
        cols = np.arange(s, s + D.shape[1])
        if exclude is not None:
            D[cols[None, :] == np.asarray(exclude)[:, None]] = np.inf
        vals = np.concatenate([cand_v, D], axis=1)
        inds = np.concatenate([cand_i, np.broadcast_to(cols, D.shape)], axis=1)
        if vals.shape[1] > L:
            keep = np.argpartition(vals, L - 1, axis=1)[:, :L]
            vals, inds = np.take_along_axis(vals, keep, axis=1), np.take_along_axis(inds, keep, axis=1)
        cand_v, cand_i = vals, inds
    ii = np.repeat(np.arange(m), cand_i.shape[1])
    exact = exact_pairs(A, B, ii, cand_i.ravel(), exponent=frame.exponent).reshape(cand_i.shape)
    exact[~np.isfinite(cand_v)] = np.inf  # the excluded rows
    order = np.lexsort((cand_i, exact), axis=1)[:, :k]
    return np.take_along_axis(cand_i, order, axis=1), np.take_along_axis(exact, order, axis=1)
