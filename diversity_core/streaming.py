"""The dual path in row chunks: ``Phi^T diag(p) Phi`` summed over chunks, in memory, from disk or on Dask.

With an explicit feature map ``K = Phi Phi^T`` every quantity the Vendi scores need is a sum
over items (DESIGN §1.1):

.. math:: C = \\sum_i p_i\\, \\phi(x_i) \\phi(x_i)^T, \\qquad
          m = \\sum_i p_i\\, \\phi(x_i), \\qquad \\operatorname{tr} C = \\sum_i p_i k(x_i, x_i),

so the rows can be read chunk by chunk and never held together: memory O(chunk * d + d^2),
time O(n d^2). Every product is formed in float64 and added into a float64 accumulator, so
rounding does not grow with n beyond one chunk's. float32 rows are exact float64 numbers: a
float32 chunk is converted to float64 in pieces of at most ``chunk_bytes`` before its feature map
and product (a float32 product errs by ~sqrt(d) eps32 of an entry, which hid most of the spectrum
of float32 embeddings, issue 38), so float32 data give the matrix of their float64 copy and the
float64 support threshold. ``m`` gives IntDiv (``1 - ||m||^2``) in the same pass.

Eigenvectors map back to items in a second pass, ``u = diag(sqrt p) Phi v / ||.||``.

On Dask, each block's ``(C_b, m_b)`` is a task and the d x d partial sums are added in a tree:
only d x d matrices travel between workers and the client.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from ._config import check_memory, chunk_rows
from ._optional import require
from ._progress import ProgressCallback, report
from .distances import _as_float64
from .entropy import computation_eps
from .exceptions import DiversityInputError
from .sources import chunk_bounds

__all__: list[str] = []


@dataclass(frozen=True)
class _Moments:
    """The dual path's sums: ``gram = Phi^T diag(p) Phi`` (d x d float64), ``mean = Phi^T p`` (or None).

    ``eps`` is the support rule's eps of the computation (:func:`~diversity_core.entropy.computation_eps`):
    float64's, since every product is formed in float64 whatever the rows' dtype.
    """

    gram: np.ndarray
    mean: Optional[np.ndarray]
    n: int
    eps: float


def _array_chunks(X, rows: Optional[int] = None) -> Iterator[tuple[int, object]]:
    """Row chunks (views; CSR row slices) of an in-memory validated matrix, about ``chunk_bytes`` each."""
    if rows is None:
        if sp.issparse(X):
            # a CSR chunk takes about 12 bytes per stored value (value and column index)
            per_row = max(1, int(math.ceil(12 * X.nnz / max(1, X.shape[0]))))
            rows = chunk_rows(per_row, 1)
        else:
            # float64 values per row: a float32 chunk is converted to float64 before its product
            rows = chunk_rows(X.shape[1], 8)
    for start, stop in chunk_bounds(X.shape[0], rows):
        yield start, X[start:stop]


def _check_chunk(kern, block, start: int, name: str):
    """``kern.validate`` on one chunk, naming its rows when it fails."""
    try:
        if block.shape[0] == 1 and not sp.issparse(block):
            # the kernels validate two or more items; one row is checked as a pair with itself
            return kern.validate(np.repeat(np.asarray(block), 2, axis=0))[:1]
        return kern.validate(block)
    except DiversityInputError as exc:
        stop = start + block.shape[0]
        values = block.data if sp.issparse(block) else np.asarray(block)
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all() and not sp.issparse(block):
            bad = np.flatnonzero(~np.isfinite(values).all(axis=1)) + start + 1
            shown = ", ".join(str(int(r)) for r in bad[:5]) + (f", ... ({bad.size} in all)" if bad.size > 5 else "")
            raise DiversityInputError(
                f"{name} contains NaN or infinite values in rows {shown} (counted from 1); remove or impute those rows."
            ) from None
        raise DiversityInputError(f"{name}, rows {start + 1} to {stop}: {exc}") from None


def _float64_pieces(block) -> Iterator[tuple[int, object]]:
    """``(offset, rows)`` of a validated chunk as float64: float32 values converted exactly.

    A dense float32 chunk is converted in pieces of at most ``chunk_bytes`` of float64 (a chunk
    read from a float32 file holds twice the rows of a float64 one); float64 and CSR chunks come
    whole (CSR converted at once: its values are a fraction of the chunk).
    """
    if sp.issparse(block) or block.dtype == np.float64:
        yield 0, _as_float64(block)
        return
    for a, b in chunk_bounds(block.shape[0], chunk_rows(block.shape[1], 8)):
        yield a, _as_float64(block[a:b])


def _chunk_moments(kern, block, pw: Optional[np.ndarray], *, mean: bool, device: str = "cpu"):
    """``(Phi^T diag(w) Phi, Phi^T w or None)`` of validated float64 rows; ``w = 1`` when ``pw`` is None."""
    Phi = kern.features(block, check_input=False)
    if sp.issparse(Phi):
        Phi = sp.csr_matrix(Phi)
        Phi_w = Phi if pw is None else sp.csr_matrix(Phi.multiply(np.sqrt(pw)[:, None]))
        G = (Phi_w.T @ Phi_w).tocoo()
        s = None
        if mean:
            s = np.asarray(Phi.sum(axis=0) if pw is None else Phi.T @ pw, dtype=np.float64).ravel()
        return G, s
    Phi = np.ascontiguousarray(Phi, dtype=np.float64)
    if device == "cuda":
        import torch

        T = torch.as_tensor(Phi, device="cuda", dtype=torch.float64)
        if pw is not None:
            T = T * torch.as_tensor(np.sqrt(pw), device="cuda", dtype=torch.float64)[:, None]
        G = (T.T @ T).cpu().numpy()
    else:
        Phi_w = Phi if pw is None else Phi * np.sqrt(pw)[:, None]
        with np.errstate(over="ignore"):  # products beyond 1.8e308: the spectrum's scale guard says so
            G = Phi_w.T @ Phi_w  # one float64 SYRK (d x d output)
    s = None
    if mean:
        s = Phi.sum(axis=0) if pw is None else Phi.T @ pw
    return G, s


def _accumulate(C: np.ndarray, G) -> None:
    """C += G for a dense or sparse (COO) chunk product."""
    if sp.issparse(G):
        # a COO product of CSR matrices has no repeated (row, col), so fancy += is exact
        C[G.row, G.col] += G.data
    else:
        C += G


def _dual_moments(
    chunks: Iterable[tuple[int, object]],
    kern,
    p: Optional[np.ndarray],
    *,
    n: int,
    d: int,
    validate: bool,
    mean: bool = False,
    device: str = "cpu",
    name: str = "X",
    progress: Optional[ProgressCallback] = None,
) -> _Moments:
    """Sum the chunks' dual moments (uniform weights: divided by n at the end)."""
    C = None
    s = np.zeros(0) if mean else None
    done = 0
    for start, block in chunks:
        if validate:
            block = _check_chunk(kern, block, start, name)
        rows = block.shape[0]
        for offset, piece in _float64_pieces(block):
            a = start + offset
            pw = None if p is None else p[a : a + piece.shape[0]]
            G, sb = _chunk_moments(kern, piece, pw, mean=mean, device=device)
            if C is None:
                dim = G.shape[0]
                check_memory(8.0 * dim * dim * 3, what=f"the {dim} x {dim} dual matrix and its eigensolver",
                             hint="The dual path needs features of dimension d < n; use the dense path for wide data.")
                C = np.zeros((dim, dim), dtype=np.float64)
                if mean:
                    s = np.zeros(dim, dtype=np.float64)
            _accumulate(C, G)
            if mean:
                s += sb
        done += rows
        report(progress, done, n, "streaming rows")
    if C is None:
        raise DiversityInputError("no rows to read; the data are empty.")
    if done != n:
        raise DiversityInputError(f"{name}: read {done} rows but expected {n}; the data changed while read.")
    if p is None:
        C *= 1.0 / n
        if mean:
            s *= 1.0 / n
    return _Moments(gram=C, mean=s, n=n, eps=computation_eps("float64"))


def _item_vectors(chunks, kern, p: Optional[np.ndarray], V: np.ndarray, *, n: int, validate: bool,
                  name: str = "X") -> np.ndarray:
    """Unit eigenvectors of rho in item space, ``u = diag(sqrt p) Phi v / ||.||``, one streamed pass."""
    check_memory(8.0 * n * V.shape[1], what=f"the {n} x {V.shape[1]} item eigenvectors",
                 hint="Ask for fewer eigenvectors (n_eigenvectors).")
    U = np.empty((n, V.shape[1]), dtype=np.float64)
    for start, block in chunks:
        if validate:
            block = _check_chunk(kern, block, start, name)
        _block_vectors_into(U, start, kern, block, None if p is None else p[start : start + block.shape[0]], V)
    return _unit_columns(U)


def _block_vectors_into(U: np.ndarray, start: int, kern, block, pw, V) -> None:
    """Write ``diag(sqrt pw) Phi_block V`` into the rows of U from ``start`` (float32 rows converted to float64)."""
    Phi = kern.features(_as_float64(block), check_input=False)
    part = Phi @ V
    part = np.asarray(part.toarray() if sp.issparse(part) else part, dtype=np.float64)
    if pw is not None:
        part *= np.sqrt(pw)[:, None]
    U[start : start + part.shape[0]] = part


def _unit_columns(U: np.ndarray) -> np.ndarray:
    """Columns scaled to unit norm (zero columns left as they are)."""
    norms = np.linalg.norm(U, axis=0)
    norms[norms == 0] = 1.0
    U /= norms
    return U


# ---------------------------------------------------------------------------------------
# Dask: one task per row block, d x d partial sums added in a tree
# ---------------------------------------------------------------------------------------
def _block_moments(block, kern, pw, start: int, mean: bool):
    """A Dask task: validate one block and return its ``(G, s)`` (float64, dense; float32 rows converted)."""
    block = _check_chunk(kern, np.asarray(block) if not sp.issparse(block) else block, start, "dask array")
    G = s = None
    for offset, piece in _float64_pieces(block):
        Gp, sp_ = _chunk_moments(kern, piece, None if pw is None else pw[offset : offset + piece.shape[0]],
                                 mean=mean)
        Gp = np.asarray(Gp.toarray() if sp.issparse(Gp) else Gp, dtype=np.float64)
        G = Gp if G is None else G + Gp
        if mean:
            s = sp_ if s is None else s + sp_
    return G, s


def _add_moments(a, b):
    """A Dask task: the sum of two partial ``(G, s)``."""
    G = a[0] + b[0]
    s = None if a[1] is None else a[1] + b[1]
    return G, s


def _block_vectors(block, kern, pw, V):
    """A Dask task: ``diag(sqrt pw) Phi_block V`` for one block."""
    block = np.asarray(block) if not sp.issparse(block) else block
    U = np.empty((block.shape[0], V.shape[1]), dtype=np.float64)
    _block_vectors_into(U, 0, kern, block, pw, V)
    return U


def _dask_blocks(X):
    """``(delayed block, start, stop)`` for the row blocks of a Dask array (columns in one block)."""
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    offsets = np.cumsum((0,) + tuple(int(c) for c in X.chunks[0]))
    blocks = X.to_delayed()[:, 0]
    return [(blk, int(offsets[i]), int(offsets[i + 1])) for i, blk in enumerate(blocks) if offsets[i + 1] > offsets[i]]


def _dask_moments(X, kern, p: Optional[np.ndarray], *, mean: bool = False,
                  progress: Optional[ProgressCallback] = None) -> _Moments:
    """Dual moments of a Dask array, computed on the current Dask scheduler (a distributed client if one is set)."""
    dask = require("dask", purpose="Dask arrays")
    n = int(X.shape[0])
    parts = [
        dask.delayed(_block_moments, pure=True)(blk, kern, None if p is None else p[a:b], a, mean)
        for blk, a, b in _dask_blocks(X)
    ]
    if not parts:
        raise DiversityInputError("the Dask array has no rows.")
    report(progress, 0, n, f"computing {len(parts)} blocks on Dask")
    while len(parts) > 1:
        paired = [dask.delayed(_add_moments, pure=True)(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        parts = paired + ([parts[-1]] if len(parts) % 2 else [])
    G, s = dask.compute(parts[0])[0]
    report(progress, n, n, "Dask blocks done")
    if p is None:
        G = G * (1.0 / n)
        s = None if s is None else s * (1.0 / n)
    return _Moments(gram=np.asarray(G, dtype=np.float64), mean=s, n=n, eps=computation_eps("float64"))


def _dask_item_vectors(X, kern, p: Optional[np.ndarray], V: np.ndarray) -> np.ndarray:
    """Item eigenvectors of a Dask array: one task per block, gathered on the client (n x k)."""
    dask = require("dask", purpose="Dask arrays")
    n = int(X.shape[0])
    check_memory(8.0 * n * V.shape[1], what=f"the {n} x {V.shape[1]} item eigenvectors",
                 hint="Ask for fewer eigenvectors (n_eigenvectors).")
    parts = [
        dask.delayed(_block_vectors, pure=True)(blk, kern, None if p is None else p[a:b], V)
        for blk, a, b in _dask_blocks(X)
    ]
    blocks = dask.compute(*parts)
    return _unit_columns(np.vstack(blocks))
