r"""Matrix-free products with the density matrix, for many vectors at once.

:func:`kernel_operator` returns a :class:`KernelOperator` whose :meth:`~KernelOperator.matmat`
computes

.. math:: \rho V = D^{1/2} K D^{1/2} V, \qquad D = \mathrm{diag}(p)\ (p_i = 1/n \text{ unweighted})

for an (n, b) block V without ever holding K: each call is one pass over the tiles of K on and
above the diagonal (each off-diagonal tile serves twice, ``K_ab V_b`` and ``K_ab^T V_a``), so a
pass costs n^2 / 2 kernel evaluations and 2 n^2 b multiply-adds, and holds a few tiles.

Backends (``device`` / where the rows are):

- **numpy** (default): tiles on one thread per CPU, each with a one-thread BLAS (the elementwise
  work of a tile releases the GIL). ``precision="float32"``: tiles and their products in single
  precision, each tile's product added to a float64 accumulator; ``"float64"``: both in double.
  RBF tiles are formed directly in float32 from centred rows (the factor -1/(2 sigma^2) on the
  O(t d) operands); Tanimoto tiles use float32 products of bits or CSR rows (exact for
  fingerprints, :mod:`diversity_core.blocked`); other kernels evaluate ``Kernel.gram`` on the
  tile. Kernels with a feature map (cosine, linear, ...) skip K: ``Phi (Phi^T V)``, O(n d b).
- **torch** (``device="cuda"``, or ``"torch-cpu"`` for tests): the same tiles as torch tensors
  on the device (rbf, laplacian, tanimoto and polynomial natively; other kernels' tiles are
  formed by numpy and moved).
- **dask** (a ``dask.array.Array`` or :class:`~diversity_core.sources.DaskSource`): one task per
  pair of row blocks on the current scheduler (a ``distributed.Client`` when one is active);
  each task forms its tile where its rows are and returns the two (t, b) products, which are
  added on the client. What travels: V (n x b, float32) to every task and the products back.

``precomputed`` kernels (an n x n array or a ``numpy.memmap`` of K) are read tile by tile,
rescaled to a unit diagonal.

The operator states its own rounding (:attr:`KernelOperator.entry_rtol`): a bound on the
relative error of each entry of rho as the products see it (tile rounding, and the float32
inner products, about sqrt(terms) eps: a product sums at most ``PRODUCT_CHUNK`` = 128 terms in
the tiles' precision, the partial sums in float64), which the SLQ estimator turns into a
bound on the trace of a matrix function.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, Optional

import numpy as np
import scipy.sparse as sp

from .._config import check_memory, memory_budget
from .._validation import check_kernel_matrix, check_option, check_scalar, check_weights
from ..blocked import (
    _FLOAT32_EXACT,
    _columns_view,
    _compact_integers,
    _ordered_map,
    _pair_kernel,
    _sparse_rows,
    _workers,
)
from ..distances import _tanimoto_from_gram
from ..exceptions import DiversityInputError
from ..kernels import (
    DEFAULT_KERNEL,
    PrecomputedKernel,
    RBFKernel,
    TanimotoKernel,
    get_kernel,
    normalize_diagonal,
)
from ..sources import DaskSource, RowSource, as_source
from ..spectrum import _resolve_from_source
from ..streaming import _check_chunk

__all__ = ["KernelOperator", "kernel_operator", "PRECISIONS", "OPERATOR_DEVICES"]

#: Precision of the tiles of K and of their products with V.
PRECISIONS = ("float32", "float64")
#: Where the tiles are formed: numpy threads ("cpu"), torch on a GPU ("cuda"), torch on the CPU
#: ("torch-cpu", the same code as "cuda", for tests), or "auto" (cuda when torch sees one).
OPERATOR_DEVICES = ("auto", "cpu", "cuda", "torch-cpu")
#: Largest tile side: a 2048 x 2048 float32 tile is 16 MiB.
TILE_ROWS = 2048
#: Terms a tile's product sums in the tiles' precision before a float64 addition: the float32
#: rounding grows as sqrt(PRODUCT_CHUNK) (:func:`_gemm_rtol`). 128 costs no more than 512 with 32
#: vectors (11.3 ms against 12.9 ms a 2048 x 2048 tile, one thread) and 6% more with 96, and
#: nearly halves the rounding term of SLQ's interval (eps32 (2 + 11.3) against eps32 (2 + 22.6)).
PRODUCT_CHUNK = 128

#: Largest squared norms of integer fingerprints whose intersections int8 and int16 hold exactly.
_INT8_EXACT = float(np.iinfo(np.int8).max)
_INT16_EXACT = float(np.iinfo(np.int16).max)

_EPS32 = float(np.finfo(np.float32).eps)
_EPS64 = float(np.finfo(np.float64).eps)


class KernelOperator:
    """Products with rho = D^1/2 K D^1/2 (``matmat``) or K (``kernel_matmat``), K never stored.

    Built by :func:`kernel_operator`. Attributes: ``n``; ``kernel`` (the resolved kernel's
    dict); ``backend`` (``"features"``, ``"numpy"``, ``"torch"``, ``"dask"``); ``precision``;
    ``tile`` (rows per tile); ``entry_rtol`` (relative error bound of each entry of rho as the
    products see it); ``passes`` and ``columns`` (products so far: passes over K, and vectors);
    ``seconds`` (time spent in products).
    """

    def __init__(self, *, n: int, kernel: dict, sqrt_p: np.ndarray, product: Callable, backend: str,
                 precision: str, tile: int, entry_rtol: float, device: str = "cpu"):
        self.n = int(n)
        self.kernel = kernel
        self.sqrt_p = sqrt_p
        self._product = product
        self.backend = backend
        self.precision = precision
        self.tile = int(tile)
        self.entry_rtol = float(entry_rtol)
        self.device = device
        self.passes = 0
        self.columns = 0
        self.seconds = 0.0

    def kernel_matmat(self, V) -> np.ndarray:
        """``K @ V`` for V of shape (n,) or (n, b), float64 (one pass over K)."""
        V = np.asarray(V, dtype=np.float64)
        one = V.ndim == 1
        V = V.reshape(self.n, -1)
        t0 = time.perf_counter()
        out = self._product(V)
        self.seconds += time.perf_counter() - t0
        self.passes += 1
        self.columns += V.shape[1]
        return out[:, 0] if one else out

    def matmat(self, V) -> np.ndarray:
        """``rho @ V = sqrt(p) * (K @ (sqrt(p) * V))`` for V of shape (n,) or (n, b), float64."""
        V = np.asarray(V, dtype=np.float64)
        s = self.sqrt_p if V.ndim == 1 else self.sqrt_p[:, None]
        return s * self.kernel_matmat(s * V)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (no data)."""
        return {"n": self.n, "kernel": self.kernel, "backend": self.backend, "precision": self.precision,
                "device": self.device, "tile": self.tile, "entry_rtol": self.entry_rtol, "passes": self.passes,
                "columns": self.columns, "seconds": self.seconds}


def kernel_operator(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    weights=None,
    precision: str = "float32",
    device: str = "cpu",
    tile: Optional[int] = None,
    **kernel_params,
) -> KernelOperator:
    r"""A matrix-free operator for rho = D^1/2 K D^1/2 that multiplies many vectors per pass over K.

    .. math:: \rho V = D^{1/2} K D^{1/2} V = \sum_{a \le b} \big(E_a K_{ab} D_b^{1/2} V_b
              + [a \ne b]\, E_b K_{ab}^T D_a^{1/2} V_a\big)

    (E_a: the rows of tile a, scaled by D_a^{1/2}), tile by tile, each tile of K formed once.

    Parameters
    ----------
    X : array-like (n, d), sparse matrix, RowSource, path, dask.array.Array, or (n, n) K
        Items; files are read into memory (each pass needs every row), a Dask array stays on
        its workers. With ``kernel="precomputed"`` X is K itself (an array or a ``numpy.memmap``,
        read tile by tile; a non-unit diagonal is rescaled, as everywhere in the core).
    kernel : str or Kernel, default "cosine"
        The default of every function that takes a kernel (:data:`~diversity_core.kernels.DEFAULT_KERNEL`),
        so a bound or estimate is of the value the exact function gives without naming a kernel.
        Any kernel; data-dependent parameters (the median bandwidth) are fixed on X with the
        weights, as the exact path fixes them.
    weights : array-like of shape (n,), optional
        Item probabilities p (normalised); uniform 1/n by default.
    precision : {"float32", "float64"}, default "float32"
        Tiles of K and their products with V in single precision (twice as fast; each tile's
        product accumulated in float64) or double.
    device : {"cpu", "cuda", "auto", "torch-cpu"}, default "cpu"
        ``"cuda"``: torch on the GPU; ``"auto"``: cuda when torch sees one; ``"torch-cpu"``: the
        torch code on the CPU. Ignored for Dask arrays and kernels with a feature map.
    tile : int, optional
        Rows per tile (default 2048, fewer when four tiles per thread would take more than a
        quarter of the memory budget).
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    KernelOperator

    Raises
    ------
    DiversityInputError
        Bad data, weights or options (a precomputed K that is not square, symmetric and finite).
    MemoryBudgetError
        The rows (or their float32 copy) do not fit the memory budget.

    Notes
    -----
    One pass: n^2 / 2 kernel evaluations (O(n^2 d)) and 2 n^2 b multiply-adds; memory: the rows,
    a few tiles per thread (4 t^2 values) and the (n, b) block in and out. The entries of K as
    the products see them carry a relative error of at most :attr:`KernelOperator.entry_rtol`
    (float32: eps32 (2 + sqrt(min(t, 128))) plus, for the rbf tiles, eps32 times the largest exponent;
    float64: 1e-13).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> op = kernel_operator(X, kernel="rbf", sigma=1.0, precision="float64")
    >>> K = get_kernel("rbf", sigma=1.0).gram(X)
    >>> V = np.ones((50, 2))
    >>> bool(np.allclose(op.kernel_matmat(V), K @ V))
    True
    """
    check_option(precision, PRECISIONS, "precision")
    check_option(device, OPERATOR_DEVICES, "device")
    if tile is not None:
        tile = check_scalar(tile, "tile", int, min_val=2)
    kern = get_kernel(kernel, **kernel_params)
    if isinstance(kern, PrecomputedKernel):
        return _precomputed_operator(X, weights, precision, tile)
    source = as_source(X)
    if isinstance(source, DaskSource):
        n = source.n
        p = check_weights(weights, n)
        kern = _resolve_from_source(kern, source, p)
        return _dask_operator(source, kern, p, precision, tile)
    if isinstance(source, RowSource):
        check_memory(8.0 * source.n * source.d, what=f"the {source.n} x {source.d} rows of {source.name}",
                     hint="Each pass needs every row: give a Dask array to keep them on the workers.")
        X = source.read()
    X = kern.validate(X)
    n = X.shape[0]
    p = check_weights(weights, n)
    kern = kern.resolve(X, p)
    sqrt_p = np.sqrt(np.full(n, 1.0 / n) if p is None else p)
    if kern.has_feature_map:
        return _feature_operator(X, kern, sqrt_p)
    device = _torch_device(device)
    workers = 1 if device != "cpu" else _workers()
    t = tile or _tile_rows(n, workers)
    t = min(t, n)
    if device != "cpu":
        product, rtol = _torch_product(X, kern, precision, t, device)
        return KernelOperator(n=n, kernel=kern.to_dict(), sqrt_p=sqrt_p, product=product, backend="torch",
                              precision=precision, tile=t, entry_rtol=rtol, device=device)
    block, rtol = _numpy_blocks(X, kern, precision, t)
    product = _tiled_product(block, n, t, precision, workers)
    return KernelOperator(n=n, kernel=kern.to_dict(), sqrt_p=sqrt_p, product=product, backend="numpy",
                          precision=precision, tile=t, entry_rtol=rtol)


# ---------------------------------------------------------------------------------------
# sizes
# ---------------------------------------------------------------------------------------
def _tile_rows(n: int, workers: int) -> int:
    """Rows per tile: :data:`TILE_ROWS`, fewer when four float64 tiles per thread exceed a quarter of the budget."""
    rows = math.isqrt(max(4, int(memory_budget() // (4 * 32 * max(1, workers)))))
    return max(2, min(TILE_ROWS, rows, n))


def _gemm_rtol(precision: str, t: int) -> float:
    """Relative error of one tile's entries and of its products (typical-case sqrt(terms) eps).

    A tile's product sums at most :data:`PRODUCT_CHUNK` terms in the tiles' precision (the
    chunks' sums are added in float64), then a float32 product is rounded once more.
    """
    eps = _EPS32 if precision == "float32" else _EPS64
    base = 2.0 * eps if precision == "float32" else 1e-13
    return base + eps * math.sqrt(min(t, PRODUCT_CHUNK))


def _tile_products(K: np.ndarray, Wa: np.ndarray, Wb: np.ndarray, same: bool) -> tuple:
    """``(K @ Wb, K.T @ Wa or None)`` in float64, each summed over chunks of :data:`PRODUCT_CHUNK` terms.

    The products run in the tile's precision; their partial sums over PRODUCT_CHUNK terms are
    added in float64, so a float32 product's rounding grows as sqrt(PRODUCT_CHUNK), not
    sqrt(t) (see :func:`_gemm_rtol`).
    """
    t_a, t_b = K.shape
    Ya = np.zeros((t_a, Wb.shape[1]), dtype=np.float64)
    for c in range(0, t_b, PRODUCT_CHUNK):
        Ya += K[:, c:c + PRODUCT_CHUNK] @ Wb[c:c + PRODUCT_CHUNK]
    if same:
        return Ya, None
    # K^T W_a as (W_a^T K)^T: BLAS reads K row by row (a 2048 x 2048 float32 tile, 32 vectors: 14 ms
    # for both products against 17 ms with K's transpose as the operand)
    Yb = np.zeros((Wa.shape[1], t_b), dtype=np.float64)
    for r in range(0, t_a, PRODUCT_CHUNK):
        Yb += Wa[r:r + PRODUCT_CHUNK].T @ K[r:r + PRODUCT_CHUNK]
    return Ya, Yb.T


def _bounds(n: int, t: int) -> list[tuple[int, int]]:
    return [(a, min(n, a + t)) for a in range(0, n, t)]


# ---------------------------------------------------------------------------------------
# kernels with a feature map: Phi (Phi^T V)
# ---------------------------------------------------------------------------------------
def _feature_operator(X, kern, sqrt_p) -> KernelOperator:
    """K V = Phi (Phi^T V) in float64, O(n d b) per product."""
    Phi = kern.features(X, check_input=False)
    check_memory(8.0 * Phi.shape[0] * Phi.shape[1], what=f"the {Phi.shape[0]} x {Phi.shape[1]} feature matrix")

    def product(V):
        return np.asarray(Phi @ np.asarray(Phi.T @ V), dtype=np.float64)

    return KernelOperator(n=X.shape[0], kernel=kern.to_dict(), sqrt_p=sqrt_p, product=product, backend="features",
                          precision="float64", tile=X.shape[0], entry_rtol=1e-13 + _EPS64 * math.sqrt(X.shape[1]))


# ---------------------------------------------------------------------------------------
# numpy tiles
# ---------------------------------------------------------------------------------------
class _RBFTiles:
    """RBF tiles ``exp(s_i + s_j + <c_i, -2 scale c_j>)`` of centred rows (c = x - mean, s = scale ||c||^2).

    In the tiles' precision from the start: the product of the O(t d) operands, two broadcast
    additions and the exponential, with no pass over a float64 tile (distances are translation
    invariant; centring removes a common offset, and the exponent's rounding, about eps times
    its terms, is stated in ``exponent_rtol``).
    """

    def __init__(self, X, kern: RBFKernel, dtype):
        X = np.asarray(X.toarray() if sp.issparse(X) else X)
        dtype = np.dtype(dtype)
        check_memory((8.0 + 2 * dtype.itemsize) * X.shape[0] * X.shape[1],
                     what=f"the centred {dtype.name} copies of the {X.shape[0]} rows")
        self.C, self.C2, self.s = _rbf_parts(X, kern, dtype, X.mean(axis=0, dtype=np.float64))
        self.exponent_rtol = _rbf_exponent_rtol(dtype, X.shape[1], float(np.max(np.abs(self.s), initial=0.0)))

    def __call__(self, a, b, same: bool) -> np.ndarray:
        return _rbf_tile(self.C[a[0]:a[1]], self.C2[b[0]:b[1]], self.s[a[0]:a[1]], self.s[b[0]:b[1]], same)


def _rbf_parts(X, kern: RBFKernel, dtype, centre: np.ndarray) -> tuple:
    """``(C, C2, s)`` of rows X: centred rows, centred rows times -2 scale, and scale ||c||^2, in ``dtype``."""
    C = np.asarray(X, dtype=np.float64) - centre
    scale = kern._scale()     # -1 / (2 sigma^2)
    sq = np.einsum("ij,ij->i", C, C)
    return C.astype(dtype), (C * (-2.0 * scale)).astype(dtype), (scale * sq).astype(dtype)


def _rbf_exponent_rtol(dtype, d: int, s_max: float) -> float:
    """Relative error of an RBF tile's entries from the rounding of its exponent (``s_max = max |scale| ||c||^2``).

    The exponent's terms reach |s_i| + |s_j| + 2 |scale <c_i, c_j>| <= 2 (|s_i| + |s_j|): their
    rounding (and the d-term product's, sqrt(d) eps typically) is an absolute error on the
    exponent, a relative one on the entry.
    """
    return float(np.finfo(dtype).eps) * (3.0 + math.sqrt(d)) * 2.0 * s_max


def _rbf_tile(Ca, C2b, sa, sb, same: bool) -> np.ndarray:
    """The RBF tile ``exp(min(0, s_a + s_b + Ca C2b^T))`` in the operands' precision (unit diagonal when same)."""
    E = Ca @ C2b.T
    E += sa[:, None]
    E += sb[None, :]
    np.minimum(E, 0.0, out=E)     # a distance is >= 0: rounding may not make an entry exceed 1
    np.exp(E, out=E)
    if same:
        np.fill_diagonal(E, 1.0)
    return E


def _tanimoto_parts(kern, X) -> Optional[tuple]:
    """``(rows, sq)`` of fingerprints for float32 Tanimoto tiles, or None when float32 would not be exact.

    Rows: CSR when X is sparse or mostly zeros (``blocked``'s rule), else dense float32; the CSR
    values are int8 when every squared norm is at most 127, int16 when at most 2^15 - 1, else
    float32. sq: the squared norms in float32. Exact when every value is an integer and every
    squared norm is at most 2^23: then every intersection <a, b> and every |a|^2 + |b|^2 - <a, b>
    is an integer below 2^24, which float32 holds, and the tile's one rounding is the division's.
    In int8 or int16, every partial sum of <a, b> is at most ||a|| ||b|| <= max |a|^2
    (Cauchy-Schwarz on the summed coordinates), so it cannot overflow. The integer loops are
    faster than float32's on Morgan fingerprints (2048 bits, 31 set; a 2048 x 2048 tile: 92 ms
    in float32, 36 ms in int16 with the dense operand Fortran-ordered; C-ordered, 15.7 ms in
    int16 and 13.0 ms in int8; a pass over 100,000 with 32 vectors: 25.7 s in int16, 22.6 s in int8).
    """
    if not isinstance(kern, TanimotoKernel):
        return None
    rows = X if sp.issparse(X) else (_sparse_rows(kern, X) if isinstance(X, np.ndarray) else None)
    rows = sp.csr_matrix(rows) if rows is not None else np.asarray(X)
    values = rows.data if sp.issparse(rows) else rows
    if values.size and not np.array_equal(values, np.rint(values)):
        return None
    sq = (np.asarray(rows.multiply(rows).sum(axis=1), dtype=np.float64).ravel() if sp.issparse(rows)
          else np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    top = float(sq.max()) if sq.size else 0.0
    if top > _FLOAT32_EXACT / 2:
        return None
    if not sp.issparse(rows):
        dtype = np.float32
    else:
        # the narrowest integer type that holds every intersection (Morgan fingerprints of 2048 bits, 31
        # set: at most 105 per row, int8; a 2048 x 2048 tile's intersections 13.0 ms against 15.7 in int16)
        dtype = np.int8 if top <= _INT8_EXACT else np.int16 if top <= _INT16_EXACT else np.float32
    return rows.astype(dtype), sq.astype(np.float32)


def _tanimoto_tile(rows_a, sq_a, rows_b, sq_b, same: bool) -> np.ndarray:
    """The float32 Tanimoto tile of two row blocks (:func:`_tanimoto_parts`): exact intersections, then the formula."""
    if sp.issparse(rows_a):
        # CSR x the C-ordered dense transpose, which scipy's loop reads row by row; int8 or int16 on both
        # sides stays integer, the wider of the two (exact, see _tanimoto_parts); a float32 block on either
        # side makes it float32
        G = rows_a @ (_columns_view(rows_b).T if sp.issparse(rows_b) else np.ascontiguousarray(rows_b.T))
        G = G.astype(np.float32, copy=False)
    else:
        G = rows_a @ (rows_b.T.toarray() if sp.issparse(rows_b) else rows_b.T).astype(np.float32, copy=False)
    G = _tanimoto_from_gram(G, sq_a, sq_b)     # <a, b> / (|a|^2 + |b|^2 - <a, b>), in place, in float32
    if same:
        np.fill_diagonal(G, 1.0)
    return G


class _TanimotoTiles:
    """Tanimoto tiles of fingerprint rows in float32 (:func:`_tanimoto_tile`)."""

    def __init__(self, parts: tuple):
        self.rows, self.sq = parts

    def __call__(self, a, b, same: bool) -> np.ndarray:
        rows_a = self.rows[a[0]:a[1]]
        rows_b = rows_a if same else self.rows[b[0]:b[1]]
        return _tanimoto_tile(rows_a, self.sq[a[0]:a[1]], rows_b, self.sq[b[0]:b[1]], same)


def _numpy_blocks(X, kern, precision: str, t: int) -> tuple[Callable, float]:
    """``block(a, b, same)`` giving the tile K[a, b] in ``precision``, and the entries' relative error."""
    rtol = _gemm_rtol(precision, t)
    if isinstance(kern, RBFKernel):
        tiles = _RBFTiles(X, kern, precision)
        return tiles, rtol + tiles.exponent_rtol
    parts = _tanimoto_parts(kern, X) if precision == "float32" else None
    if parts is not None:
        # fingerprints: int8, int16 or float32 intersections are exact, one rounding in the division (a
        # pass over 100,000 Morgan fingerprints with 96 vectors: 40.6 s in int16; 81.6 s in float32)
        return _TanimotoTiles(parts), rtol
    # Kernel.gram on the tile (Tanimoto in float64 or with non-integer values: CSR products, blocked's rule)
    pair = _pair_kernel(kern, _compact_integers(X))
    dtype = np.dtype(precision)

    def block(a, b, same):
        return np.asarray(pair(a, b, same), dtype=dtype)

    return block, rtol


def _tiled_product(block: Callable, n: int, t: int, precision: str, workers: int) -> Callable:
    """``product(V) = K V``: tiles on and above the diagonal on ``workers`` threads, float64 accumulation."""
    bounds = _bounds(n, t)
    pairs = [(a, b) for i, a in enumerate(bounds) for b in bounds[i:]]
    dtype = np.dtype(precision)

    def product(V: np.ndarray) -> np.ndarray:
        W = np.ascontiguousarray(V, dtype=dtype)
        out = np.zeros((n, V.shape[1]), dtype=np.float64)

        def one(pair):
            a, b = pair
            same = a == b
            return _tile_products(block(a, b, same), W[a[0]:a[1]], W[b[0]:b[1]], same)

        for (a, b), (Ya, Yb) in zip(pairs, _ordered_map(one, pairs, workers)):
            out[a[0]:a[1]] += Ya
            if Yb is not None:
                out[b[0]:b[1]] += Yb
        return out

    return product


# ---------------------------------------------------------------------------------------
# precomputed K (array or memmap)
# ---------------------------------------------------------------------------------------
def _precomputed_operator(K, weights, precision: str, tile: Optional[int]) -> KernelOperator:
    """Tiles read from K (rescaled to a unit diagonal), in ``precision``."""
    if isinstance(K, np.memmap):
        if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] < 2:
            raise DiversityInputError(f"a precomputed K must be square with at least 2 rows; got shape {K.shape}.")
        d = np.array(np.diagonal(K), dtype=np.float64)
        if not np.all(np.isfinite(d)) or np.any(d <= 0):
            raise DiversityInputError("K must have a positive, finite diagonal (k(x, x) > 0); a similarity matrix "
                                      "has ones on its diagonal.")
        s = 1.0 / np.sqrt(d)
        if np.any(np.abs(d - 1.0) > 1e-10):
            normalize_diagonal(np.diag(d), warn=True)   # the one warning of the rescaling
        checked = False
    else:
        K = normalize_diagonal(check_kernel_matrix(K))
        s = None
        checked = True
    n = K.shape[0]
    p = check_weights(weights, n)
    sqrt_p = np.sqrt(np.full(n, 1.0 / n) if p is None else p)
    workers = _workers()
    t = min(n, tile or _tile_rows(n, workers))
    dtype = np.dtype(precision)
    seen: set = set()

    def block(a, b, same):
        B = np.array(K[a[0]:a[1], b[0]:b[1]], dtype=np.float64)
        if not checked and (a, b) not in seen:
            # a memmap is checked tile by tile on the first pass (finite; symmetric within round-off)
            mirror = np.array(K[b[0]:b[1], a[0]:a[1]], dtype=np.float64).T
            if not (np.isfinite(B).all() and np.allclose(B, mirror, rtol=1e-6, atol=1e-8)):
                raise DiversityInputError(f"K is not finite and symmetric in rows {a[0] + 1}-{a[1]}, columns "
                                          f"{b[0] + 1}-{b[1]}; a kernel matrix is symmetric.")
            seen.add((a, b))
        if s is not None:
            B *= s[a[0]:a[1], None]
            B *= s[None, b[0]:b[1]]
        return B.astype(dtype, copy=False)

    product = _tiled_product(block, n, t, precision, workers)
    return KernelOperator(n=n, kernel={"name": "precomputed"}, sqrt_p=sqrt_p, product=product, backend="numpy",
                          precision=precision, tile=t, entry_rtol=_gemm_rtol(precision, t))


# ---------------------------------------------------------------------------------------
# torch (CUDA, or the CPU for tests)
# ---------------------------------------------------------------------------------------
def _torch_device(device: str) -> str:
    """``"cpu"`` (numpy), ``"cuda"`` or ``"torch-cpu"``; ``"auto"`` is cuda when torch sees one."""
    if device == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError:
        if device == "auto":
            return "cpu"
        raise DiversityInputError(f"device={device!r} needs torch; it is not installed. Use device='cpu'.") from None
    if device == "torch-cpu":
        return "torch-cpu"
    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise DiversityInputError("device='cuda' was asked for but torch sees no CUDA device; use device='cpu'.")
    return "cuda" if available else "cpu"


def _torch_product(X, kern, precision: str, t: int, device: str) -> tuple[Callable, float]:
    """``product(V) = K V`` with torch tiles on ``device`` (float64 accumulation on the device)."""
    import torch

    dev = torch.device("cuda" if device == "cuda" else "cpu")
    tdtype = torch.float32 if precision == "float32" else torch.float64
    n = X.shape[0]
    name = kern.name
    rtol = _gemm_rtol(precision, t)
    dense = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if name in ("rbf", "laplacian", "polynomial", "tanimoto"):
        centre = dense.mean(axis=0) if name == "rbf" else 0.0
        Xt = torch.as_tensor(dense - centre, dtype=tdtype, device=dev)
        sq = (Xt * Xt).sum(dim=1)
        if name == "rbf":
            scale = kern._scale()
            rtol += _rbf_exponent_rtol(np.dtype(precision), dense.shape[1], abs(scale) * float(sq.max()))
        elif name == "polynomial":
            gamma, coef0, degree = float(kern.gamma), float(kern.coef0), int(kern.degree)
            selfv = torch.as_tensor(np.sqrt(kern._self_values(dense)), dtype=tdtype, device=dev)

        def tile(a, b, same):
            A, B = Xt[a[0]:a[1]], Xt[b[0]:b[1]]
            if name == "rbf":
                E = (A @ B.T) * (-2.0 * scale) + scale * sq[a[0]:a[1], None] + scale * sq[None, b[0]:b[1]]
                E = torch.exp(torch.clamp(E, max=0.0))
            elif name == "laplacian":
                E = torch.exp(-torch.cdist(A, B, p=1) / float(kern.sigma))
            elif name == "polynomial":
                E = (gamma * (A @ B.T) + coef0) ** degree / (selfv[a[0]:a[1], None] * selfv[None, b[0]:b[1]])
            else:
                G = A @ B.T
                den = sq[a[0]:a[1], None] + sq[None, b[0]:b[1]] - G
                E = torch.where(den > 0, G / torch.where(den > 0, den, torch.ones_like(den)), torch.ones_like(den))
            if same:
                E.fill_diagonal_(1.0)
            return E
    else:
        block = _pair_kernel(kern, _compact_integers(X))

        def tile(a, b, same):
            return torch.as_tensor(np.asarray(block(a, b, same)), dtype=tdtype, device=dev)

    bounds = _bounds(n, t)

    def product(V: np.ndarray) -> np.ndarray:
        W = torch.as_tensor(V, dtype=tdtype, device=dev)
        out = torch.zeros((n, V.shape[1]), dtype=torch.float64, device=dev)
        for i, a in enumerate(bounds):
            for b in bounds[i:]:
                K = tile(a, b, a == b)
                # partial sums over PRODUCT_CHUNK terms, added in float64 (as _tile_products)
                Wa, Wb = W[a[0]:a[1]], W[b[0]:b[1]]
                for c in range(0, b[1] - b[0], PRODUCT_CHUNK):
                    out[a[0]:a[1]] += (K[:, c:c + PRODUCT_CHUNK] @ Wb[c:c + PRODUCT_CHUNK]).double()
                if a != b:
                    for r in range(0, a[1] - a[0], PRODUCT_CHUNK):
                        out[b[0]:b[1]] += (K[r:r + PRODUCT_CHUNK].T @ Wa[r:r + PRODUCT_CHUNK]).double()
        return out.cpu().numpy()

    return product, rtol


# ---------------------------------------------------------------------------------------
# Dask: one task per pair of row blocks
# ---------------------------------------------------------------------------------------
def _dask_prepare(kern, block, start: int, precision: str, centre):
    """Task: one row block validated once and kept in the form its tiles use (persisted on its worker).

    RBF: the centred rows, their -2 scale multiple and scale ||c||^2 in ``precision``
    (:func:`_rbf_parts`); Tanimoto in float32: ``("tanimoto", (rows, sq))`` when float32 is
    exact (:func:`_tanimoto_parts`: int8, int16 or float32 rows, chosen per block; a tile of two
    kinds takes the wider); other kernels: the validated rows.
    """
    A = _check_chunk(kern, block, start, "dask block")
    if isinstance(kern, RBFKernel):
        return _rbf_parts(A, kern, np.dtype(precision), centre)
    parts = _tanimoto_parts(kern, A) if precision == "float32" else None
    return ("tanimoto", parts) if parts is not None else A


def _dask_tile(kern, PA, PB, WA, WB, same: bool, precision: str):
    """Task: the tile k(A, B) of two prepared blocks times the blocks of V; ``(K W_B, K^T W_A)`` in float32.

    The float64 partial sums of :func:`_tile_products` travel back rounded to float32 (half the
    bytes; one more rounding, stated in the operator's ``entry_rtol``) when the tiles are float32.
    """
    if isinstance(kern, RBFKernel):
        K = _rbf_tile(PA[0], PB[1], PA[2], PB[2], same)
    elif isinstance(PA, tuple) and isinstance(PB, tuple):
        K = _tanimoto_tile(*PA[1], *PB[1], same)
    else:
        # a block whose fingerprints float32 would not hold exactly: both through Kernel.gram
        PA, PB = (P[1][0] if isinstance(P, tuple) else P for P in (PA, PB))
        K = kern.gram(PA, check_input=False) if same else kern.gram(PA, PB, check_input=False)
        K = np.asarray(K, dtype=np.dtype(precision))
    Ya, Yb = _tile_products(K, WA, WB, same)
    dtype = np.dtype(precision)
    return Ya.astype(dtype, copy=False), (None if Yb is None else Yb.astype(dtype, copy=False))


def _distributed_client():
    """The active ``distributed.Client`` (the one ``dask.compute`` uses), or None."""
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:          # no client: the local scheduler runs the graph
        return None


def _dask_operator(source: DaskSource, kern, p, precision: str, tile: Optional[int]) -> KernelOperator:
    """Tiles formed on the Dask workers where the row blocks are; the products added on the client."""
    import dask

    X = source.X
    n = source.n
    # the row chunks are the tiles: a chunk sized for reading (100,000 x 64 float64 rows is one
    # 51 MB chunk) would make a 100,000 x 100,000 tile on one worker
    t = tile or TILE_ROWS
    if max(int(c) for c in X.chunks[0]) > t:
        X = X.rechunk({0: t})
    offsets = np.cumsum((0,) + tuple(int(c) for c in X.chunks[0]))
    bounds = [(int(offsets[i]), int(offsets[i + 1])) for i in range(len(offsets) - 1)]
    blocks = X.to_delayed().ravel()
    centre = None
    rtol = _gemm_rtol(precision, max(b - a for a, b in bounds))
    if isinstance(kern, RBFKernel):
        # one centre for every tile (distances do not depend on it; the float32 rounding does)
        centre = np.asarray(X.mean(axis=0, dtype=np.float64).compute())
        spread = float((((X - centre) ** 2).sum(axis=1)).max().compute())
        rtol += _rbf_exponent_rtol(np.dtype(precision), source.d, abs(kern._scale()) * spread)
    if precision == "float32":
        rtol += _EPS32          # the products travel back in float32
    # every block is read, validated and prepared once and kept on its worker: a pass then runs
    # only the tiles (without this, each pass re-read the rows and re-centred them for every tile)
    prepared = dask.persist(*[dask.delayed(_dask_prepare, pure=True)(kern, blocks[i], bounds[i][0], precision, centre)
                              for i in range(len(bounds))])
    sqrt_p = np.sqrt(np.full(n, 1.0 / n) if p is None else p)
    dtype = np.dtype(precision)
    pairs = [(i, j) for i in range(len(bounds)) for j in range(i, len(bounds))]

    def product(V: np.ndarray) -> np.ndarray:
        W = np.ascontiguousarray(V, dtype=dtype)
        client = _distributed_client()
        if client is not None:
            # V's blocks go to the workers once each (scattered), not inside the task graph through the
            # scheduler: 25 MB at n = 100,000 and 64 vectors, and distributed's "large graph" warning)
            Wb = client.scatter([W[a:b] for a, b in bounds])
        else:
            Wb = [dask.delayed(W[a:b]) for a, b in bounds]
        tasks = [dask.delayed(_dask_tile, pure=True)(kern, prepared[i], prepared[j], Wb[i], Wb[j], i == j, precision)
                 for i, j in pairs]
        results = dask.compute(*tasks)
        out = np.zeros((n, V.shape[1]), dtype=np.float64)
        for (i, j), (Ya, Yb) in zip(pairs, results):
            out[bounds[i][0]:bounds[i][1]] += Ya
            if Yb is not None:
                out[bounds[j][0]:bounds[j][1]] += Yb
        return out

    return KernelOperator(n=n, kernel=kern.to_dict(), sqrt_p=sqrt_p, product=product, backend="dask",
                          precision=precision, tile=max(b - a for a, b in bounds), entry_rtol=rtol, device="dask")
