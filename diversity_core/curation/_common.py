"""Plumbing shared by the curation tools: kernel rows on demand, kernel ranges, defaults, checks."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import scipy.sparse as sp

from .._config import chunk_rows, fits_memory, memory_budget
from .._orders import check_q
from .._validation import check_scalar
from ..distances import _row_norms
from ..exceptions import DiversityInputError
from ..kernels import CombinedKernel, Kernel, PrecomputedKernel, get_kernel

#: Orders q reported by default: the Vendi score (q = 1) and three of its cousins.
DEFAULT_QS = (0.5, 1.0, 2.0, math.inf)

#: Kernels whose values lie in [0, 1] (non-negative similarities with unit diagonal).
_NON_NEGATIVE = ("rbf", "laplacian", "tanimoto", "probability_product")


def prepare(X, kernel, kernel_params: dict) -> tuple[Kernel, object]:
    """Validated X (a normalised K for ``precomputed``) and the kernel resolved on it."""
    kern = get_kernel(kernel, **kernel_params)
    X = kern.validate(X)
    return kern.resolve(X), X


def check_qs(q) -> tuple:
    """Orders q as a tuple of floats, duplicates dropped, order kept."""
    qs = check_q(q).ravel()
    if qs.size == 0:
        raise DiversityInputError("q must name at least one order; got an empty sequence.")
    return tuple(dict.fromkeys(float(v) for v in qs))


def check_count(value, name: str, *, low: int, high: int, what: str) -> int:
    """An integer in [low, high]; ``what`` says what the upper bound is (e.g. "the number of items")."""
    v = check_scalar(value, name, int, min_val=low)
    if v > high:
        raise DiversityInputError(f"{name} must be at most {what} ({high}); got {v}.")
    return v


class KernelRows:
    """Blocks of the kernel matrix of validated X under a resolved kernel, computed on demand.

    No method ever forms the n x n matrix unless asked for all of its rows at once; callers
    size their blocks with :func:`block_rows`. With an explicit feature map Phi (cosine,
    linear, ...) a block is ``Phi[rows] Phi[cols]^T`` in the features' own precision; a
    precomputed kernel is sliced; any other kernel goes through ``Kernel.gram``.
    """

    def __init__(self, kern: Kernel, X):
        self.kern = kern
        self.X = X
        self.n = int(X.shape[0])
        self.precomputed = isinstance(kern, PrecomputedKernel)
        self.phi = None
        if not self.precomputed and kern.has_feature_map:
            phi = kern.features(X, check_input=False)
            self.phi = phi.tocsr() if sp.issparse(phi) else np.ascontiguousarray(phi)
        dtype = self.phi.dtype if self.phi is not None else np.dtype(np.float64)
        if self.phi is None and not self.precomputed and getattr(X, "dtype", None) == np.float32:
            dtype = np.dtype(np.float32)
        self.eps = float(np.finfo(dtype).eps)
        self.n_features = int(self.phi.shape[1] if self.phi is not None else X.shape[1])

    @property
    def slack(self) -> float:
        """Round-off allowance of one similarity: a dot product of d terms errs by about sqrt(d) eps."""
        return 16.0 * self.eps * math.sqrt(max(self.n_features, 1))

    def block(self, rows, cols=None) -> np.ndarray:
        """``K[rows][:, cols]`` (all columns when ``cols`` is None) as a dense float64 array."""
        if self.precomputed:
            B = self.X[rows]
            # a copy: callers write into blocks, and a slice of K would be a view of the data
            return np.array(B if cols is None else B[:, cols], dtype=np.float64)
        if self.phi is not None:
            A = self.phi[rows]
            B = self.phi if cols is None else self.phi[cols]
            G = A @ B.T
            G = G.toarray() if sp.issparse(G) else G
            return np.asarray(G, dtype=np.float64)
        Y = self.X if cols is None else self.X[cols]
        return self.kern.gram(self.X[rows], Y, check_input=False)

    def column(self, j: int) -> np.ndarray:
        """Column (= row) j of K, shape (n,)."""
        return self.block(slice(j, j + 1))[0]

    def diagonal(self) -> np.ndarray:
        """``k(x_i, x_i)`` for every item, shape (n,), in O(n d)."""
        if self.precomputed:
            return np.array(np.diagonal(self.X), dtype=np.float64)
        if self.phi is not None:
            return _row_norms(self.phi, squared=True)
        out = np.empty(self.n)
        step = 256
        for start in range(0, self.n, step):
            stop = min(self.n, start + step)
            out[start:stop] = np.diagonal(self.block(slice(start, stop), slice(start, stop)))
        return out

    def subset_matrix(self, idx: np.ndarray) -> np.ndarray:
        """The kernel matrix of the items ``idx`` (float64, symmetric; PSD to round-off)."""
        if self.phi is not None:
            P = self.phi[idx]
            P = P.toarray() if sp.issparse(P) else P
            P = np.asarray(P, dtype=np.float64)
            return P @ P.T
        K = self.block(idx, idx)
        return 0.5 * (K + K.T)

    def pair_values(self, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
        """``K[ii[m], jj[m]]`` for pairs of items, in row blocks (no n x n matrix)."""
        out = np.empty(ii.size)
        if ii.size == 0:
            return out
        if self.precomputed:
            return np.asarray(self.X[ii, jj], dtype=np.float64)
        if self.phi is not None and not sp.issparse(self.phi):
            step = max(1, chunk_rows(self.phi.shape[1], self.phi.dtype.itemsize) // 2)
            for s in range(0, ii.size, step):
                a, b = self.phi[ii[s:s + step]], self.phi[jj[s:s + step]]
                out[s:s + step] = np.einsum("ij,ij->i", a, b, dtype=np.float64)
            return out
        order = np.argsort(ii, kind="stable")
        iis, jjs = ii[order], jj[order]
        rows_per_block = 256
        starts = np.flatnonzero(np.r_[True, iis[1:] != iis[:-1]])
        # group whole rows into blocks of about rows_per_block distinct rows
        for b in range(0, starts.size, rows_per_block):
            s = starts[b]
            e = starts[b + rows_per_block] if b + rows_per_block < starts.size else iis.size
            rows, inv_r = np.unique(iis[s:e], return_inverse=True)
            cols, inv_c = np.unique(jjs[s:e], return_inverse=True)
            G = self.block(rows, cols)
            vals = np.empty(e - s)
            vals[:] = G[inv_r, inv_c]
            out[order[s:e]] = vals
        return out


def one_blas_thread():
    """Context manager limiting BLAS/LAPACK to one thread.

    The curation loops make many small and medium BLAS calls (a matrix-vector product per
    chosen item, an eigenvalue problem per curve point or left-out item, a block product per
    row block). OpenBLAS threads spin while they wait; on a machine whose cores are busy with
    other work, the default two threads made these calls 10-40x slower (a curve of 20
    eigenvalue problems up to 1000 x 1000: 65 s against 1.5 s with one thread).
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def block_rows(n_columns: int) -> int:
    """Rows per ``(rows, n_columns)`` float64 block: the streamed chunk size, within the memory budget.

    A block is allocated a few times over (the products, a comparison mask), hence the
    budget is shared by four.
    """
    by_budget = memory_budget() // (4 * 8 * max(1, n_columns))
    return max(1, min(chunk_rows(n_columns, 8, minimum=1), by_budget, max(1, n_columns)))


def kernel_range(kern: Kernel, diagonal: Optional[np.ndarray]) -> tuple[float, float]:
    """The interval the kernel's values lie in: [0, 1], [-1, 1], or unbounded (linear on raw rows)."""
    if isinstance(kern, CombinedKernel):
        parts = [kernel_range(k, diagonal) for k in kern.kernels]
        if any(math.isinf(p[1]) for p in parts):
            return (-math.inf, math.inf)
        return (0.0, 1.0) if all(p[0] >= 0 for p in parts) else (-1.0, 1.0)
    if kern.name in _NON_NEGATIVE:
        return (0.0, 1.0)
    if kern.name == "linear":
        unit = diagonal is not None and diagonal.size and np.allclose(diagonal, 1.0, rtol=0, atol=1e-6)
        return (-1.0, 1.0) if unit else (-math.inf, math.inf)
    return (-1.0, 1.0)


def dense_fits(n: int, copies: int = 2) -> bool:
    """Whether ``copies`` n x n float64 matrices fit the memory budget."""
    return fits_memory(float(copies) * n * n * 8)


def readonly(*arrays) -> None:
    """Make result arrays read-only."""
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)


def ids_column(ids, n: int) -> Optional[list]:
    """Item labels for a table: ``ids`` checked to have one entry per item, or None."""
    if ids is None:
        return None
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise DiversityInputError(f"ids must have one label per item: expected {n}, got {len(ids)}.")
    return ids
