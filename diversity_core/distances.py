"""Distances, similarities and row norms: the numerical primitives under kernels, magnitude and curation.

One home for the arithmetic every pairwise computation shares (the role of scikit-learn's
``utils/extmath.py`` and ``metrics/pairwise.py``):

=============================  ===============================================================
function                       what it computes
=============================  ===============================================================
row_norms                      ``||x_i||`` (or its square) of dense or sparse rows, without
                               overflow or underflow: rows of 1e160 or 1e-300 are exact
squared_euclidean_distances    ``||x_i - y_j||^2`` on centred data, cancelling pairs recomputed
euclidean_distances            its square root
cosine_similarity              ``<x, y> / (||x|| ||y||)`` of safely normalised rows
cosine_distances               ``1 - cosine_similarity``, clipped to [0, 2]
tanimoto_similarity            ``<a, b> / (||a||^2 + ||b||^2 - <a, b>)`` of fingerprints (bits or
                               counts), dense or sparse
tanimoto_distances             ``1 - tanimoto_similarity``, clipped to [0, 1]
=============================  ===============================================================

Public functions validate their input and call the private ``_`` functions, which internal
callers (kernels, magnitude, curation) use directly on validated data. Every product of two
row sets goes through :func:`_gram`, which forms it in row blocks (see :data:`GRAM_BLOCK_ROWS`).

The module imports only numpy and SciPy, so the core's import stays fast.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ._config import chunk_rows
from ._validation import check_features
from .exceptions import DiversityInputError

__all__ = [
    "row_norms",
    "squared_euclidean_distances",
    "euclidean_distances",
    "cosine_similarity",
    "cosine_distances",
    "tanimoto_similarity",
    "tanimoto_distances",
]

#: Rows per block of every pairwise product. numpy's bundled OpenBLAS crashes (segfault) in the
#: multithreaded symmetric product ``X @ X.T`` from n = 16000 rows (issue 16), and scikit-learn's
#: ``euclidean_distances`` calls that same product; so products are formed block by block, each
#: far below that size. Blocks also bound the temporaries of the elementwise work to
#: ``GRAM_BLOCK_ROWS x m`` values.
GRAM_BLOCK_ROWS = 4096

#: Squared distances below this share of ``||x - c||^2 + ||y - c||^2`` are recomputed from exact
#: differences (see :func:`_squared_distances`); the others keep a relative error of about
#: ``sqrt(d) eps / _CANCELLATION_SHARE``.
_CANCELLATION_SHARE = 1e-6

#: A row block with more than this share of pairs to recompute is recomputed whole from the
#: differences (one ``cdist`` call instead of a gather per pair).
_DIRECT_SHARE = 0.05

#: Values per temporary when pairs are recomputed from their differences (32 MB of float64).
_PAIR_CHUNK_VALUES = 1 << 22

#: Bytes of one row block in the elementwise passes over an n x m result: small enough to stay
#: in cache between the passes (they are memory-bound otherwise). A cache size, not a budget.
_CACHE_BYTES = 2 << 20


# ---------------------------------------------------------------------------------------------
# blocks and products
# ---------------------------------------------------------------------------------------------
def _dense(X):
    """Dense view of X (sparse input densified)."""
    return X.toarray() if sp.issparse(X) else X


def _row_blocks(n: int, size: Optional[int] = None) -> list:
    """Consecutive row slices of at most ``size`` (default :data:`GRAM_BLOCK_ROWS`) rows covering ``range(n)``."""
    size = GRAM_BLOCK_ROWS if size is None else size
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def _cache_rows(m: int) -> int:
    """Rows of an m-column float64 block that fit in ``_CACHE_BYTES`` (at least 8)."""
    return max(8, _CACHE_BYTES // (8 * max(m, 1)))


def _as_float64(block):
    """A block of rows as float64 (dense or CSR): float32 values converted exactly, float64 as it is."""
    if block.dtype == np.float64:
        return block
    return block.astype(np.float64)


def _gram(A, B=None) -> np.ndarray:
    """A B^T as a dense float64 array (sparse-aware), formed in row blocks, every product in float64.

    ``B=None`` is the symmetric product: up to ``GRAM_BLOCK_ROWS`` rows one SYRK (half the
    work of a general product, and exactly symmetric), beyond it the blocks on and above the
    diagonal, mirrored; so no product ever has more than ``GRAM_BLOCK_ROWS`` rows.

    float32 operands are exact float64 numbers: their row blocks are converted to float64 one
    block at a time and multiplied in float64 (issue 38: a float32 product errs by about
    ``sqrt(d) eps32`` of an entry, which hid most of the spectrum of float32 embeddings), so
    float32 data give their float64 copy's matrix at the cost of one block's copy.
    """
    sym = B is None
    B = A if sym else B
    n, m = A.shape[0], B.shape[0]
    if sp.issparse(A) or sp.issparse(B):
        # sparse products do not reach BLAS; row blocks only bound the sparse temporaries. A
        # dense right operand is transposed once into C order, which scipy's CSR x dense loop
        # reads row by row (1.6x faster than the transposed view)
        Bt = _as_float64(B.T if sp.issparse(B) else np.ascontiguousarray(B.T))
        G = np.empty((n, m), dtype=np.float64)
        for rows in _row_blocks(n):
            part = _as_float64(A[rows]) @ Bt
            G[rows] = part.toarray() if sp.issparse(part) else np.asarray(part)
        return G
    direct = A.dtype == np.float64 and B.dtype == np.float64
    if not direct:
        return _gram_upcast(A, None if sym else B)
    if n <= GRAM_BLOCK_ROWS and m <= GRAM_BLOCK_ROWS:
        return np.asarray(A @ B.T, dtype=np.float64)
    G = np.empty((n, m), dtype=np.float64)
    if not sym:
        for rows in _row_blocks(n):
            np.matmul(A[rows], B.T, out=G[rows])
        return G
    blocks = _row_blocks(n)
    for i, rows in enumerate(blocks):
        for cols in blocks[i:]:
            np.matmul(A[rows], A[cols].T, out=G[rows, cols])
            if cols != rows:
                G[cols, rows] = G[rows, cols].T
    return G


def _gram_upcast(A, B=None) -> np.ndarray:
    """:func:`_gram` of dense operands that are not both float64: row blocks converted to float64, then multiplied.

    The blocks are those of the float64 path (so float32 data and their float64 copy give the
    same matrix, bit for bit while a block's float64 copy fits the streaming chunk size),
    fewer rows when one block's float64 copy of d columns would exceed
    :func:`~diversity_core.set_config`'s ``chunk_bytes``. Temporaries: two blocks of float64 rows.
    """
    sym = B is None
    B = A if sym else B
    n, m, d = A.shape[0], B.shape[0], A.shape[1]
    size = min(GRAM_BLOCK_ROWS, chunk_rows(d, 8))
    G = np.empty((n, m), dtype=np.float64)
    if sym:
        blocks = _row_blocks(n, size)
        for i, rows in enumerate(blocks):
            a = _as_float64(A[rows])
            np.matmul(a, a.T, out=G[rows, rows])  # one SYRK on the diagonal: exactly symmetric
            for cols in blocks[i + 1:]:
                np.matmul(a, _as_float64(A[cols]).T, out=G[rows, cols])
                G[cols, rows] = G[rows, cols].T
        return G
    for cols in _row_blocks(m, size):
        b = _as_float64(B[cols]).T
        for rows in _row_blocks(n, size):
            np.matmul(_as_float64(A[rows]), b, out=G[rows, cols])
    return G


def _symmetrize_upper(D: np.ndarray) -> None:
    """Copy the upper triangle of a square D onto the lower one, blockwise (exact symmetry)."""
    n = D.shape[0]
    step = _cache_rows(n)
    for i0 in range(0, n, step):
        i1 = min(n, i0 + step)
        D[i1:, i0:i1] = D[i0:i1, i1:].T
        blk = D[i0:i1, i0:i1]
        iu = np.triu_indices(i1 - i0, 1)
        blk[iu[1], iu[0]] = blk[iu]


# ---------------------------------------------------------------------------------------------
# row norms that neither overflow nor underflow
# ---------------------------------------------------------------------------------------------
#: Sums of squares of float64 rows inside [2^-510, 2^512] are accurate: no square overflowed, and
#: every square that underflowed is below eps^2 of the sum. Rows outside are rescaled first.
_SAFE_SQ = (2.0**-510, 2.0**512)
#: Norms inside these ranges have reciprocals that are normal numbers of the rows' dtype, so
#: ``x * (1 / ||x||)`` needs no rescaling; rows outside are first rescaled by a power of two.
_SAFE_NORM = {np.dtype(np.float64): (2.0**-255, 2.0**255), np.dtype(np.float32): (2.0**-60, 2.0**60)}


def _row_max_abs(X, rows: np.ndarray) -> np.ndarray:
    """``max_k |X[i, k]|`` of the rows ``rows`` (dense or CSR), float64."""
    sub = X[rows]
    if sp.issparse(sub):
        sub = sub.tocsr()
        out = np.zeros(rows.size)
        nz = np.diff(sub.indptr) > 0
        if nz.any():
            out[nz] = np.maximum.reduceat(np.abs(sub.data), sub.indptr[:-1][nz])
        return out
    return np.maximum(sub.max(axis=1), -sub.min(axis=1)).astype(np.float64)


def _power_of_two_exponents(values: np.ndarray) -> np.ndarray:
    """``e`` with ``values * 2^-e`` in [0.5, 1) (0 for zeros): scaling by ``2^-e`` is exact."""
    return np.frexp(values)[1]


def _sum_squares(X) -> np.ndarray:
    """``sum_k X[i, k]^2`` of every row in float64 (dense rows accumulated in float64 too)."""
    if sp.issparse(X):
        X = X.tocsr()
        data = np.asarray(X.data, dtype=np.float64)
        counts = np.diff(X.indptr)
        out = np.zeros(X.shape[0])
        nz = counts > 0
        if nz.any():
            out[nz] = np.add.reduceat(data * data, X.indptr[:-1][nz])
        return out
    return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def _scale_rows(X, rows: np.ndarray, exponents: np.ndarray):
    """X with the rows ``rows`` multiplied by ``2^-exponents`` (exact: only the exponent bits change); a copy."""
    if sp.issparse(X):
        X = X.tocsr(copy=True)
        e = np.zeros(X.shape[0], dtype=np.int64)
        e[rows] = exponents
        X.data = np.ldexp(X.data, -np.repeat(e, np.diff(X.indptr))).astype(X.dtype, copy=False)
        return X
    out = np.array(X, copy=True)
    out[rows] = np.ldexp(X[rows], -exponents[:, None]).astype(X.dtype, copy=False)
    return out


def _row_norms(X, *, squared: bool = False) -> np.ndarray:
    """Euclidean norms (or squared norms) of the rows of validated dense or CSR X, float64, no over/underflow."""
    with np.errstate(over="ignore", under="ignore"):  # the rows concerned are summed again below
        return _row_norms_unchecked(X, squared)


def _row_norms_unchecked(X, squared: bool) -> np.ndarray:
    """:func:`_row_norms` (over/underflow warnings are the caller's)."""
    sq = _sum_squares(X)
    # squares accumulate in float64 (float32 rows never leave its range); float64 rows whose sum
    # left the accurate range (overflowed to inf, or underflowed: 1e-300 squares to 0) are summed
    # again after an exact power-of-two rescaling by their largest entry
    bad = np.flatnonzero(~((sq >= _SAFE_SQ[0]) & (sq <= _SAFE_SQ[1])))
    if bad.size:
        e = _power_of_two_exponents(_row_max_abs(X, bad))
        sub = X[bad]
        sub_sq = _sum_squares(_scale_rows(sub, np.arange(bad.size), e))
        if squared:
            sq[bad] = np.ldexp(sub_sq, 2 * e)  # may overflow: a squared norm above 1.8e308 is inf
        else:
            norms = np.sqrt(sq)
            norms[bad] = np.ldexp(np.sqrt(sub_sq), e)
            return norms
    return sq if squared else np.sqrt(sq)


def _unit_rows(X) -> tuple:
    """``(U, norms)``: the rows divided by their norms (dtype and sparsity kept; zero rows stay zero), and the norms.

    Rows whose norm's reciprocal would leave the dtype's normal range are first rescaled by a
    power of two (exact), so rows of 1e160 or 1e-300 normalise like any others.
    """
    norms = _row_norms(X)
    dtype = X.dtype
    lo, hi = _SAFE_NORM.get(np.dtype(dtype), _SAFE_NORM[np.dtype(np.float64)])
    out = np.flatnonzero(((norms < lo) | (norms > hi)) & (norms > 0))
    scaled = norms
    if out.size:
        e = _power_of_two_exponents(norms[out])
        X = _scale_rows(X, out, e)
        scaled = norms.copy()
        scaled[out] = np.ldexp(norms[out], -e)
    inv = np.zeros_like(scaled)
    np.divide(1.0, scaled, out=inv, where=scaled > 0)
    inv = inv.astype(dtype, copy=False)
    if sp.issparse(X):
        X = X.tocsr()
        U = X.copy()
        U.data = X.data * np.repeat(inv, np.diff(X.indptr))
        return U, norms
    return X * inv[:, None], norms


# ---------------------------------------------------------------------------------------------
# squared Euclidean distances
# ---------------------------------------------------------------------------------------------
def _paired_squared_distances(A, B, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``||A[a[m]] - B[b[m]]||^2`` for each pair m from the exact differences (dense or CSR), float64."""
    out = np.empty(a.size)
    d = A.shape[1]
    step = max(1, _PAIR_CHUNK_VALUES // max(d, 1)) if not sp.issparse(A) else 1 << 16
    for s in range(0, a.size, step):
        diff = A[a[s:s + step]] - B[b[s:s + step]]
        if sp.issparse(diff):
            out[s:s + step] = _sum_squares(sp.csr_matrix(diff))
        else:
            diff = np.asarray(diff, dtype=np.float64)
            out[s:s + step] = np.einsum("ij,ij->i", diff, diff)
    return out


def _check_overflow(sq: np.ndarray) -> None:
    """Refuse data whose squared distances overflow double precision (the result would be NaN)."""
    if np.isfinite(sq).all():
        return
    raise DiversityInputError(
        "squared Euclidean distances of these data overflow double precision (values near 1e154 or "
        "beyond); rescale the features: distances of c * X are c times those of X, and the rbf "
        "kernel of c * X with bandwidth c * sigma equals that of X with sigma."
    )


def _squared_distances(X, Y=None, *, scale: float = 1.0, centre=None, share: float = _CANCELLATION_SHARE) -> np.ndarray:
    """``scale * ||x_i - y_j||^2`` (float64), free of cancellation; ``scale`` may be negative.

    The expansion ``||x||^2 + ||y||^2 - 2 <x, y>`` loses the digits that ``||x||^2`` has and
    ``||x - y||^2`` has not: near-duplicates far from the origin (spread 1e-7 of their offset)
    came out as noise, negative eigenvalues included (issue 15, item 13). Distances do not
    change under translation, so dense data are first centred (on the mean of X, or on
    ``centre`` when given, so that blocks of one data set share it), which removes a common
    offset. Pairs still much closer than their distance to the centre (below ``share`` of
    ``||x - c||^2 + ||y - c||^2``: near-duplicates inside one of several far-apart clusters,
    and every exact duplicate) are recomputed from their exact differences, O(d) each; the rest
    keep a relative error of about ``sqrt(d) eps / share``. Sparse data are not centred (that
    would densify them); their near pairs are recomputed the same way.

    ``scale`` (the RBF kernel's ``-1 / (2 sigma^2)``) rides on the O(n d) operands rather than
    costing a pass over the n x m result; with ``Y=None`` the result is exactly symmetric.
    """
    sym = Y is None
    sparse = sp.issparse(X) or (not sym and sp.issparse(Y))
    if not sparse and centre is None:
        centre = np.asarray(X, dtype=np.float64).mean(axis=0)
    A, nx = _centred(X, None if sparse else centre)
    if sym:
        return _squared_from_centred(A, None, nx, nx, scale=scale, share=share)
    B, ny = _centred(Y, None if sparse else centre)
    return _squared_from_centred(A, B, nx, ny, scale=scale, share=share)


def _centred(X, centre) -> tuple:
    """``(X - centre, ||X - centre||^2)`` in float64, for :func:`_squared_from_centred`.

    ``centre=None`` leaves the rows where they are, as float64 CSR with sorted, summed indices
    (so that ``a - b`` and ``b - a`` sum their squares alike): sparse data. Data whose squared
    norms overflow are refused.
    """
    if centre is None:
        A = sp.csr_matrix(X, dtype=np.float64, copy=True)
        A.sum_duplicates()
    else:
        A = np.asarray(_dense(X), dtype=np.float64) - centre
    sq = _sum_squares(A)
    _check_overflow(sq)
    return A, sq


def _squared_from_centred(A, B, nx: np.ndarray, ny: np.ndarray, *, scale: float = 1.0,
                          share: float = _CANCELLATION_SHARE, self_offset: Optional[int] = None) -> np.ndarray:
    """``scale * ||a_i - b_j||^2`` of already centred rows with squared norms ``nx``, ``ny`` (``B=None``: A itself).

    See :func:`_squared_distances`; callers that keep centred rows (the matrix-free magnitude
    path, the blocks of the duplicate search) call this per block of rows. ``self_offset=k``
    says that ``a_i`` is ``b_{i+k}`` (a block of rows against a range of the same rows): those
    entries are set to 0 rather than recomputed (``B=None`` implies ``k = 0``).
    """
    sym = B is None
    if sym:
        self_offset = 0
    Bm = A if sym else B
    n, m = A.shape[0], Bm.shape[0]
    if scale == 0.0:  # the limit of an infinite bandwidth: no pass over anything
        return np.zeros((n, m))
    sparse = sp.issparse(A) or sp.issparse(Bm)
    sx, sy = scale * nx, scale * ny
    # symmetric: one SYRK, scaled per block; otherwise the factor -2 scale goes on the A side
    out = _gram(A) if sym else _gram(A * (-2.0 * scale), Bm)
    tol = share * abs(scale)
    ny_max = float(ny.max()) if ny.size else 0.0
    step = _cache_rows(m)
    buf = np.empty((min(step, n), m)) if sym else None
    direct = False
    for start in range(0, n, step):
        rows = slice(start, min(n, start + step))
        block = out[rows]
        if sym:
            block *= -2.0 * scale
            b = buf[: block.shape[0]]
            np.add.outer(sx[rows], sy, out=b)  # sx_i + sy_j as one sum: exact symmetry
            block += b
        else:
            block += sx[rows, None]
            block += sy[None, :]
        # round-off may cross zero: clip to the sign of scale (distances are >= 0)
        if scale > 0:
            np.maximum(block, 0.0, out=block)
        else:
            np.minimum(block, 0.0, out=block)
        if self_offset is not None:  # a row's distance to itself is 0: set, and not screened below
            local = np.arange(block.shape[0])
            local = local[(local + start + self_offset >= 0) & (local + start + self_offset < m)]
            block[local, local + start + self_offset] = 0.0
        # screen with a per-row bound (one comparison pass), then the exact pairwise criterion
        bound = tol * (nx[rows] + ny_max)
        near = block <= bound[:, None] if scale > 0 else block >= -bound[:, None]
        if self_offset is not None:
            near[local, local + start + self_offset] = False
        if not near.any():
            continue
        hit = np.flatnonzero(near.any(axis=1))
        ii, jj = np.nonzero(near[hit])
        ii = hit[ii]
        keep = np.abs(block[ii, jj]) <= tol * (nx[rows][ii] + ny[jj])
        ii, jj = ii[keep], jj[keep]
        if not sparse and ii.size > _DIRECT_SHARE * block.size:
            # mostly close pairs (a tight cluster far from the centre): every difference, in C
            cdist(A[rows], Bm, metric="sqeuclidean", out=block)
            if scale != 1.0:
                block *= scale
            direct = True
        elif ii.size:
            block[ii, jj] = scale * _paired_squared_distances(A, Bm, ii + start, jj)
    if sym and direct:
        # cdist and the per-pair sums may round a pair and its mirror differently
        _symmetrize_upper(out)
    return out


def squared_euclidean_distances(X, Y=None) -> np.ndarray:
    r"""Squared Euclidean distances between the rows of X (and Y), accurate for near-duplicates.

    .. math:: D^2_{ij} = \|x_i - y_j\|^2 = \|\tilde x_i\|^2 + \|\tilde y_j\|^2 - 2 \langle \tilde x_i, \tilde y_j \rangle

    with :math:`\tilde x = x - c` the rows centred on the mean c of X (dense data). Pairs whose
    squared distance is below :math:`10^{-6} (\|\tilde x_i\|^2 + \|\tilde y_j\|^2)`, where the
    expansion cancels, are recomputed from their differences, so distances do not depend on
    where the data sit (X and X + 1000 give the same distances to the data's own precision).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    Y : array-like or sparse matrix of shape (m, d), optional
        Default: X itself (the result is then exactly symmetric with a zero diagonal).

    Returns
    -------
    ndarray of shape (n, m), float64

    Raises
    ------
    DiversityInputError
        Non-finite or non-numeric input, different numbers of features, or squared distances
        that overflow double precision.

    Notes
    -----
    Cost O(n m d) for the product (in row blocks) plus O(d) per recomputed pair; memory one
    n x m float64 array. Sparse data are not centred (that would densify them).

    Examples
    --------
    >>> import numpy as np
    >>> squared_euclidean_distances(np.array([[0.0, 0.0], [3.0, 4.0]]))
    array([[ 0., 25.],
           [25.,  0.]])
    """
    X, Y = _check_pair(X, Y)
    return _squared_distances(X, Y)


def euclidean_distances(X, Y=None) -> np.ndarray:
    r"""Euclidean distances :math:`\|x_i - y_j\|` between the rows of X (and Y).

    The square root of :func:`squared_euclidean_distances` (same accuracy, cost and errors).

    Examples
    --------
    >>> import numpy as np
    >>> float(euclidean_distances(np.array([[1e8, 0.0], [1e8 + 3.0, 4.0]]))[0, 1])
    5.0
    """
    X, Y = _check_pair(X, Y)
    return _euclidean_distances(X, Y)


def _euclidean_distances(X, Y=None, *, centre=None, share: float = _CANCELLATION_SHARE) -> np.ndarray:
    """``||x_i - y_j||`` of validated rows (see :func:`_squared_distances`), in place on the squares."""
    D = _squared_distances(X, Y, centre=centre, share=share)
    return np.sqrt(D, out=D)


# ---------------------------------------------------------------------------------------------
# cosine
# ---------------------------------------------------------------------------------------------
def _cosine_similarity(X, Y=None) -> np.ndarray:
    """``<x, y> / (||x|| ||y||)`` of validated rows without all-zero ones; unit diagonal when ``Y=None``."""
    U, _ = _unit_rows(X)
    if Y is None:
        S = _gram(U)
        np.fill_diagonal(S, 1.0)
        return S
    return _gram(U, _unit_rows(Y)[0])


def _refuse_zero_rows(X, name: str) -> None:
    """All-zero rows have no direction: say which ones."""
    zero = np.flatnonzero(_row_norms(X) == 0)
    if zero.size:
        shown = ", ".join(str(int(r)) for r in zero[:5]) + (f", ... ({zero.size} in all)" if zero.size > 5 else "")
        raise DiversityInputError(
            f"cosine similarity is undefined for all-zero rows; rows {shown} of {name} are zero. "
            "Drop them or use a Euclidean distance."
        )


def cosine_similarity(X, Y=None) -> np.ndarray:
    r"""Cosine similarity of the rows of X (and Y).

    .. math:: S_{ij} = \frac{\langle x_i, y_j \rangle}{\|x_i\| \|y_j\|}

    Scale-free at any magnitude: each row is divided by its norm after an exact power-of-two
    rescaling when its norm would overflow or underflow (rows of 1e160 or 1e-300 give the same
    similarities as the same rows near 1).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    Y : array-like or sparse matrix of shape (m, d), optional
        Default: X itself (unit diagonal).

    Returns
    -------
    ndarray of shape (n, m), float64

    Raises
    ------
    DiversityInputError
        All-zero rows (only rows that are exactly zero), or invalid input.

    Notes
    -----
    Cost O(n d) for the norms plus O(n m d) for the product.

    Examples
    --------
    >>> import numpy as np
    >>> round(float(cosine_similarity(np.array([[1e-300, 0.0], [1e-300, 1e-300]]))[0, 1]), 6)
    0.707107
    """
    X, Y = _check_pair(X, Y)
    _refuse_zero_rows(X, "X")
    if Y is not None:
        _refuse_zero_rows(Y, "Y")
    return _cosine_similarity(X, Y)


def cosine_distances(X, Y=None) -> np.ndarray:
    r"""Cosine distance :math:`1 - S_{ij}` (see :func:`cosine_similarity`), clipped to [0, 2].

    Examples
    --------
    >>> import numpy as np
    >>> float(cosine_distances(np.array([[1.0, 0.0], [-2.0, 0.0]]))[0, 1])
    2.0
    """
    D = cosine_similarity(X, Y)
    np.subtract(1.0, D, out=D)
    np.clip(D, 0.0, 2.0, out=D)
    if Y is None:
        np.fill_diagonal(D, 0.0)
    return D


# ---------------------------------------------------------------------------------------------
# Tanimoto
# ---------------------------------------------------------------------------------------------
def _fingerprint_scale(X, Y=None) -> tuple:
    """X and Y multiplied by one power of two when their largest value would overflow or underflow the products.

    The Tanimoto similarity is scale-free (``T(ca, cb) = T(a, b)``) and a power of two changes
    no digit, so bits and small counts, the usual fingerprints, pass through untouched.
    """
    top = max(_max_value(X), 0.0 if Y is None else _max_value(Y))
    if top == 0.0 or 2.0**-255 <= top <= 2.0**255:
        return X, Y
    e = np.array([_power_of_two_exponents(np.array([top]))[0]])

    def scaled(A):
        return _scale_rows(A, np.arange(A.shape[0]), np.repeat(e, A.shape[0]))

    return scaled(X), None if Y is None else scaled(Y)


def _max_value(X) -> float:
    """Largest entry of a validated non-negative dense or sparse matrix (0 when empty)."""
    data = X.data if sp.issparse(X) else X
    return float(data.max()) if data.size else 0.0


def _tanimoto_norms(X) -> np.ndarray:
    """``||a||^2`` of fingerprint rows, float64: exact for bits and counts whose squares sum below 2^53."""
    return _sum_squares(X)


def _tanimoto_from_gram(G: np.ndarray, sq_x: np.ndarray, sq_y: np.ndarray) -> np.ndarray:
    """``<a, b> / (|a|^2 + |b|^2 - <a, b>)`` in place on the products G, by row blocks; 1 where both rows are empty.

    For non-negative rows the denominator is at least (|a|^2 + |b|^2) / 2, so it vanishes only
    for two empty rows: those pairs are set afterwards instead of masked in every pass.
    """
    empty_x, empty_y = np.flatnonzero(sq_x <= 0), np.flatnonzero(sq_y <= 0)
    step = _cache_rows(G.shape[1])
    for start in range(0, G.shape[0], step):
        rows = slice(start, min(G.shape[0], start + step))
        block = G[rows]
        denom = np.add.outer(sq_x[rows], sq_y)
        denom -= block
        if empty_y.size:
            denom[:, empty_y] = np.where(denom[:, empty_y] > 0, denom[:, empty_y], 1.0)
        np.divide(block, denom, out=block)
    if empty_x.size and empty_y.size:
        G[np.ix_(empty_x, empty_y)] = 1.0
    return G


def _tanimoto_similarity(X, Y=None) -> np.ndarray:
    """Tanimoto similarity of validated non-negative rows (dense or CSR); unit diagonal when ``Y=None``."""
    X, Y = _fingerprint_scale(X, Y)
    sq_x = _tanimoto_norms(X)
    if Y is None:
        S = _tanimoto_from_gram(_gram(X), sq_x, sq_x)
        np.fill_diagonal(S, 1.0)
        return S
    return _tanimoto_from_gram(_gram(X, Y), sq_x, _tanimoto_norms(Y))


def _check_fingerprints(X, name: str) -> None:
    """Tanimoto needs non-negative features: say which rows are not."""
    data = X.data if sp.issparse(X) else X
    if data.size and float(data.min()) < 0:
        raise DiversityInputError(
            f"the Tanimoto similarity needs non-negative features (fingerprint bits or counts); {name} has "
            "negative values. Use the cosine similarity or a Euclidean distance for signed embeddings."
        )


def tanimoto_similarity(X, Y=None) -> np.ndarray:
    r"""Tanimoto (Jaccard) similarity of non-negative rows: bits or counts, dense or sparse.

    .. math:: T(a, b) = \frac{\langle a, b \rangle}{\|a\|^2 + \|b\|^2 - \langle a, b \rangle}

    On binary fingerprints this is :math:`|a \cap b| / |a \cup b|`. Two all-zero rows count as
    identical (similarity 1); an all-zero row and any other have similarity 0.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), non-negative
    Y : array-like or sparse matrix of shape (m, d), optional
        Default: X itself (unit diagonal).

    Returns
    -------
    ndarray of shape (n, m), float64, values in [0, 1]

    Raises
    ------
    DiversityInputError
        Negative values, or invalid input.

    Notes
    -----
    Cost O(n m d) for the products (sparse products stay sparse) plus O(n m). Exact for bits
    and small counts in either precision; values too large or too small for the products are
    rescaled by one power of two first (the similarity is scale-free).

    Examples
    --------
    >>> import numpy as np
    >>> float(tanimoto_similarity(np.array([[1, 1, 0, 0], [1, 1, 1, 0]]))[0, 1])
    0.6666666666666666
    """
    X, Y = _check_pair(X, Y)
    _check_fingerprints(X, "X")
    if Y is not None:
        _check_fingerprints(Y, "Y")
    return _tanimoto_similarity(X, Y)


def tanimoto_distances(X, Y=None) -> np.ndarray:
    r"""Tanimoto distance :math:`1 - T(a, b)` (see :func:`tanimoto_similarity`), clipped to [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> float(tanimoto_distances(np.array([[1, 0], [0, 1]]))[0, 1])
    1.0
    """
    D = tanimoto_similarity(X, Y)
    np.subtract(1.0, D, out=D)
    np.clip(D, 0.0, 1.0, out=D)
    if Y is None:
        np.fill_diagonal(D, 0.0)
    return D


# ---------------------------------------------------------------------------------------------
# row norms (public) and validation
# ---------------------------------------------------------------------------------------------
def row_norms(X, *, squared: bool = False) -> np.ndarray:
    r"""Euclidean norm :math:`\|x_i\| = \sqrt{\sum_k x_{ik}^2}` of each row, without overflow or underflow.

    Squares accumulate in float64. Rows whose sum of squares would overflow (entries near
    1e160) or underflow (entries near 1e-300) are rescaled by a power of two (exact) before
    squaring, so only rows that are exactly zero have norm 0.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    squared : bool, default False
        Return :math:`\|x_i\|^2` (infinite when it exceeds the largest double, 1.8e308).

    Returns
    -------
    ndarray of shape (n,), float64

    Notes
    -----
    Cost O(n d) (O(nnz) for sparse input), plus O(d) per rescaled row.

    Examples
    --------
    >>> import numpy as np
    >>> row_norms(np.array([[3e200, 4e200], [3e-310, 4e-310]]))
    array([5.e+200, 5.e-310])
    """
    X = check_features(X, min_samples=1, allow_sparse=True)
    return _row_norms(X, squared=squared)


def _check_pair(X, Y):
    """X (and Y) validated as feature matrices with the same number of columns."""
    X = check_features(X, min_samples=1, allow_sparse=True)
    if Y is None:
        return X, None
    Y = check_features(Y, name="Y", min_samples=1, allow_sparse=True)
    if Y.shape[1] != X.shape[1]:
        raise DiversityInputError(
            f"X and Y must have the same number of features; got {X.shape[1]} and {Y.shape[1]}."
        )
    return X, Y


# ---------------------------------------------------------------------------------------------
# exact pairs of the neighbour searches
# ---------------------------------------------------------------------------------------------
def _framed_paired_squared_distances(A, B, a: np.ndarray, b: np.ndarray, *, exponent: int = 0) -> np.ndarray:
    """``||2^-exponent (A[a[m]] - B[b[m]])||^2`` for each pair m, from float64 differences of dense rows.

    The value every neighbour decision of the project rests on (exact k-NN radii, radius tests,
    the refinement of approximate candidates): float32 rows are converted to float64 before they
    are subtracted, and both rows are scaled by ``2^-exponent`` first (exact: only the exponent
    changes), so rows of 1e160 neither overflow nor, at 1e-170, underflow. The sum of squares is
    :func:`_paired_squared_distances`'s; its relative error is at most about ``(d + 2) eps / 2``.
    """
    out = np.empty(a.size)
    d = A.shape[1]
    step = max(1, _PAIR_CHUNK_VALUES // max(2 * d, 1))
    for s in range(0, a.size, step):
        rows_a = np.asarray(A[a[s:s + step]], dtype=np.float64)
        rows_b = np.asarray(B[b[s:s + step]], dtype=np.float64)
        if exponent:
            rows_a, rows_b = np.ldexp(rows_a, -exponent), np.ldexp(rows_b, -exponent)
        same = np.arange(rows_a.shape[0])
        out[s:s + step] = _paired_squared_distances(rows_a, rows_b, same, same)
    return out
