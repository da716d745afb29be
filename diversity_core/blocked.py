r"""Exact VS_2 for any kernel without an eigendecomposition, by blocked kernel evaluation.

The Vendi score of order 2 needs only the Frobenius norm of the density matrix
(Eq. (3) of [1] with q = 2):

.. math:: \mathrm{VS}_2 = \frac{1}{\sum_i \lambda_i^2} = \frac{1}{\|\rho\|_F^2}
          = \frac{(\sum_i p_i K_{ii})^2}{\sum_{ij} p_i p_j K_{ij}^2}

(uniform weights: :math:`1 / \|K/n\|_F^2`; the numerator is 1 for a unit diagonal). The sum
runs over blocks of K computed one at a time, so the time is O(n^2 d) and the memory
O(block^2 + block d): no n x n matrix, no eigendecomposition. The same pass gives
:math:`\sum_{ij} p_i p_j K_{ij}`, hence IntDiv.

Since :math:`\lambda_{\max}^2 \le \sum_i \lambda_i^2 \le \lambda_{\max}`, it also bounds the
order-infinity score: :math:`\sqrt{\mathrm{VS}_2} \le \mathrm{VS}_\infty \le \mathrm{VS}_2`, and
so every :math:`\mathrm{VS}_q` with :math:`q \ge 2` (VS_q is non-increasing in q).

With a feature map (cosine, linear, ...) and d < n the d x d dual matrix C gives the same
number in O(n d^2): :math:`\|\rho\|_F = \|C\|_F`.

References
----------
.. [1] Pasarkar & Dieng, "Cousins of the Vendi Score: A Family of Similarity-Based Diversity
   Metrics for Science and Machine Learning".
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from ._config import config_context, fits_memory, get_config, memory_budget
from ._display import NotebookDisplay, format_interval, format_kernel, frame_row, short_repr
from ._progress import ProgressCallback, report
from ._validation import check_kernel_matrix, check_option, check_scalar, check_weights
from .exceptions import DiversityInputError
from .kernels import PrecomputedKernel, get_kernel, normalize_diagonal
from .sources import DaskSource, RowSource, as_source, chunk_bounds
from .spectrum import _resolve_from_source
from .streaming import _array_chunks, _check_chunk, _dask_moments, _dual_moments

__all__ = ["VS2Result", "vendi_2_exact"]

METHODS = ("auto", "blocked", "dual")

#: Default rows per block of K: a 2048 x 2048 float64 block is 32 MiB, large enough for BLAS
#: to run at full speed and for the Python loop over blocks to cost nothing.
BLOCK_ROWS = 2048

#: float32 holds every integer up to 2^24 exactly, so products of integer rows whose squared
#: norms stay below it (fingerprint bits, counts) are exact in single precision.
_FLOAT32_EXACT = float(1 << 24)


@dataclass(frozen=True, repr=False)
class VS2Result(NotebookDisplay):
    """Exact Vendi score of order 2 and the bounds it implies on VS_inf.

    Attributes
    ----------
    vs2 : float
        :math:`\\mathrm{VS}_2 = (\\operatorname{tr}\\rho)^2 / \\|\\rho\\|_F^2`.
    vs_inf_lower, vs_inf_upper : float
        ``sqrt(vs2) <= VS_inf <= vs2``; the same interval holds every VS_q with q >= 2.
    purity : float
        :math:`\\sum_i \\lambda_i^2` of the normalised density matrix (``1 / vs2``).
    trace : float
        :math:`\\sum_i p_i K_{ii}` before normalisation (1 for a unit-diagonal kernel).
    intdiv : float
        IntDiv :math:`1 - \\sum_{ij} p_i p_j K_{ij}` from the same pass.
    n : int
    kernel : dict
        The resolved kernel.
    method : {"blocked", "dual"}
    execution : {"in-memory", "streamed", "dask"}
    weighted : bool
    """

    vs2: float
    vs_inf_lower: float
    vs_inf_upper: float
    purity: float
    trace: float
    intdiv: float
    n: int
    kernel: dict = field(default_factory=dict)
    method: str = "blocked"
    execution: str = "in-memory"
    weighted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "vs2": self.vs2,
            "vs_inf_bounds": [self.vs_inf_lower, self.vs_inf_upper],
            "purity": self.purity,
            "trace": self.trace,
            "intdiv": self.intdiv,
            "n": self.n,
            "kernel": self.kernel,
            "method": self.method,
            "execution": self.execution,
            "weighted": self.weighted,
        }

    # -- display (no figure: the app and the report draw none for VS_2 alone) ---------------------
    def __repr__(self) -> str:
        from ._stats import ConfidenceInterval

        return short_repr(
            f"VS2Result(n={self.n}, method={self.method!r}, kernel={format_kernel(self.kernel)})",
            [("VS_2", format_interval(self.vs2)),
             ("VS_inf", format_interval(None, ConfidenceInterval.bound(self.vs_inf_lower, self.vs_inf_upper))),
             ("IntDiv", format_interval(self.intdiv)), ("purity", self.purity), ("trace", self.trace),
             ("run", f"{self.execution}, {'weighted' if self.weighted else 'uniform'}")],
        )

    def to_frame(self):
        """Tidy DataFrame: VS_2 (exact), the bounds on VS_inf (kind ``"bound"``, value NaN) and IntDiv (exact)."""
        from ._display import tidy_frame
        from ._stats import ConfidenceInterval

        return tidy_frame([
            frame_row("vendi", self.vs2, q=2.0),
            frame_row("vendi", math.nan, ConfidenceInterval.bound(self.vs_inf_lower, self.vs_inf_upper), q=math.inf),
            frame_row("intdiv", self.intdiv),
        ])


def vendi_2_exact(
    X,
    *,
    kernel="cosine",
    weights=None,
    method: str = "auto",
    block_rows: Optional[int] = None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> VS2Result:
    r"""Exact VS_2 of any kernel, in blocks, with the implied bounds on VS_inf.

    .. math:: \mathrm{VS}_2 = \frac{(\sum_i p_i K_{ii})^2}{\sum_{ij} p_i p_j K_{ij}^2},
              \qquad \sqrt{\mathrm{VS}_2} \le \mathrm{VS}_\infty \le \mathrm{VS}_2

    Parameters
    ----------
    X : array-like of shape (n, d), RowSource, dask.array.Array, path, or (n, n) with ``kernel="precomputed"``
        As for :func:`~diversity_core.spectrum.compute_spectrum`; data that are not in memory
        are read in two nested streamed passes when they do not fit the memory budget.
    kernel : str or Kernel, default "cosine"
    weights : array-like of shape (n,), optional
    method : {"auto", "blocked", "dual"}, default "auto"
        ``"dual"``: from the d x d matrix of a feature map, O(n d^2); ``"blocked"``: blocks of
        K, O(n^2 d); ``"auto"``: dual when the kernel has a feature map and d < n.
    block_rows : int, optional
        Rows per block of K (default 2048, blocks of 32 MiB, fewer when the memory budget is
        smaller than four such blocks).
    progress : callable, optional
        ``progress(done, total, message)`` per block of K.
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    VS2Result

    Raises
    ------
    DiversityInputError
        Bad data, weights or options.

    Notes
    -----
    Blocked: time O(n^2 d) (n^2 / 2 kernel evaluations: only blocks on and above the diagonal),
    memory O(block_rows^2 + block_rows d) per thread (one per CPU, each with a single-threaded
    BLAS) plus the data (or one outer block of them when they are streamed). Integer-valued data whose squared row norms stay below 2^24 (binary
    fingerprints) are multiplied in float32, which is exact for them and twice as fast.

    Examples
    --------
    >>> import numpy as np
    >>> vendi_2_exact(np.eye(4)).vs2
    4.0
    """
    kern = get_kernel(kernel, **kernel_params)
    check_option(method, METHODS, "method")
    workers = _workers()
    if block_rows is None:
        rows = _budget_block_rows(workers)
    else:
        rows = check_scalar(block_rows, "block_rows", int, min_val=2)
    if isinstance(kern, PrecomputedKernel):
        if method == "dual":
            raise DiversityInputError("method='dual' needs features; a precomputed K uses method='blocked'.")
        K = normalize_diagonal(check_kernel_matrix(X))
        p = _probabilities(check_weights(weights, K.shape[0]), K.shape[0])
        sums = _blocked_sums(lambda a, b, same: np.array(K[a[0]:a[1], b[0]:b[1]]), K.shape[0], p, rows, progress)
        return _result(*sums, n=K.shape[0], kernel={"name": "precomputed"}, method="blocked",
                       execution="in-memory", weighted=weights is not None)
    source = as_source(X)
    if isinstance(source, RowSource) and source.in_memory:
        X, source = source.read(), None
    if source is None:
        X = kern.validate(_compact_integers(X))
        n, d = X.shape
        kern = kern.resolve(X, check_weights(weights, n))
    else:
        n, d = source.n, source.d
        if n < 2:
            raise DiversityInputError(f"{source.name} needs at least 2 items to measure diversity; got {n}.")
        kern = _resolve_from_source(kern, source, check_weights(weights, n))
    p = check_weights(weights, n)
    if method == "auto":
        method = "dual" if kern.has_feature_map and d < n else "blocked"
    if method == "dual" and not kern.has_feature_map:
        raise DiversityInputError(
            f"method='dual' needs a kernel with an explicit feature map (linear, cosine, probability_product "
            f"or sums of them); the {kern.name} kernel has none. Use method='blocked'."
        )
    execution = "in-memory" if source is None else ("dask" if isinstance(source, DaskSource) else "streamed")
    if method == "dual":
        if source is None:
            moments = _dual_moments(_array_chunks(X), kern, p, n=n, d=d, validate=False, mean=True)
        elif execution == "dask":
            moments = _dask_moments(source.X, kern, p, mean=True, progress=progress)
        else:
            moments = _dual_moments(source.chunks(), kern, p, n=n, d=d, validate=True, mean=True,
                                    name=source.name, progress=progress)
        C = moments.gram
        sums = (float(moments.mean @ moments.mean), float(np.sum(C * C)), float(np.trace(C)))
    else:
        pu = _probabilities(p, n)
        if source is not None and fits_memory(4.0 * n * d * 8):
            # the rows fit with room to spare: read them once instead of n / block passes
            X, source = kern.validate(_compact_integers(source.read())), None
        if source is None:
            sums = _blocked_sums(_pair_kernel(kern, X), n, pu, rows, progress, workers)
        else:
            sums = _streamed_blocked_sums(kern, source, pu, rows, progress, workers)
    return _result(*sums, n=n, kernel=kern.to_dict(), method=method, execution=execution, weighted=p is not None)


# ---------------------------------------------------------------------------------------
# private computation
# ---------------------------------------------------------------------------------------
def _budget_block_rows(workers: int) -> int:
    """Rows per block of K within the memory budget.

    A block and its temporaries (distances, masks) take about four block-sized arrays, and each
    worker thread holds one block.
    """
    return max(2, min(BLOCK_ROWS, math.isqrt(int(memory_budget() // (32 * workers)))))


def _probabilities(p: Optional[np.ndarray], n: int) -> np.ndarray:
    """Checked weights, or uniform 1/n."""
    return np.full(n, 1.0 / n) if p is None else p


def _result(s1: float, s2: float, trace: float, *, n, kernel, method, execution, weighted) -> VS2Result:
    """VS2Result from ``sum p p K``, ``sum p p K^2`` and ``sum p K_ii``."""
    if not (s2 > 0 and trace > 0):
        raise DiversityInputError("the kernel is zero on these items; VS_2 is undefined.")
    vs2 = trace * trace / s2
    return VS2Result(
        vs2=float(vs2), vs_inf_lower=float(math.sqrt(vs2)), vs_inf_upper=float(vs2), purity=float(s2 / trace**2),
        trace=float(trace), intdiv=float(1.0 - s1), n=int(n), kernel=kernel, method=method, execution=execution,
        weighted=bool(weighted),
    )


def _compact_integers(X):
    """Integer-valued dense data as float32 when float32 products of its rows are exact (else X itself).

    Binary fingerprints as float64 (or uint8) become float32: half the memory, and the
    single-precision GEMM, twice as fast, returns the same integers.
    """
    if sp.issparse(X) or not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype == np.float32:
        return X
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_) or np.issubdtype(X.dtype, np.complexfloating):
        return X
    integer = not np.issubdtype(X.dtype, np.floating)
    for start, stop in chunk_bounds(X.shape[0], max(1, (16 << 20) // max(1, X.shape[1] * 8))):
        block = np.asarray(X[start:stop], dtype=np.float64)
        if not integer and not np.array_equal(block, np.rint(block)):
            return X
        if block.size and np.einsum("ij,ij->i", block, block).max() > _FLOAT32_EXACT:
            return X
    return X.astype(np.float32)


#: Largest share of non-zero values at which the left operand of the block products is kept
#: sparse: CSR x dense costs nnz x rows instead of d x rows x rows (Morgan fingerprints set
#: 2-3% of their bits; at 3% this ran 3x faster than the float32 GEMM on this 2-core machine).
_SPARSE_SHARE = 0.05


def _sparse_rows(kern, X):
    """X as CSR when the kernel takes sparse rows and X is mostly zeros, else None."""
    if not kern.accepts_sparse or sp.issparse(X) or X.size == 0:
        return None
    nonzero = sum(int(np.count_nonzero(X[a:b])) for a, b in chunk_bounds(X.shape[0], 1 << 14))
    return sp.csr_matrix(X) if nonzero <= _SPARSE_SHARE * X.size else None


def _columns_view(rows) -> np.ndarray:
    """Rows as the transposed view of a C-ordered (d x m) array: the layout CSR x dense reads.

    From CSR the dense transpose is written directly (zeros plus the non-zeros; ``order="C"``
    because the CSC transpose's default ``toarray`` is Fortran-ordered, which made the CSR x dense
    loop read across rows: 2048 Morgan fingerprints against 2048, 92 ms against 58 ms); from
    dense rows it is one copy. Transposing a dense block per pair cost more than its product.
    """
    if sp.issparse(rows):
        return rows.T.toarray(order="C").T
    return np.ascontiguousarray(rows.T).T


def _pair_kernel(kern, X):
    """``f(rows_a, rows_b, same)``: the block of K between two row ranges of validated X."""
    left = _sparse_rows(kern, X)

    def block(a, b, same):
        if left is not None:
            return kern.gram(left[a[0]:a[1]], _columns_view(left[b[0]:b[1]]), check_input=False)
        if same:
            return kern.gram(X[a[0]:a[1]], check_input=False)
        return kern.gram(X[a[0]:a[1]], X[b[0]:b[1]], check_input=False)

    return block


def _block_sums(K: np.ndarray, pa: np.ndarray, pb: np.ndarray, same: bool) -> tuple[float, float, float]:
    """``(pa^T K pb, pa^T (K o K) pb, pa^T diag K)`` of one block (K may be overwritten)."""
    t = float(pa @ np.diagonal(K)) if same else 0.0
    if pa[0] == pa[-1] == pb[0] == pb[-1] and np.all(pa == pa[0]) and np.all(pb == pb[0]):
        # uniform weights: one summation pass and one BLAS dot product, instead of two
        # matrix-vector products and a squaring pass
        flat = K.reshape(-1)
        scale = float(pa[0]) * float(pb[0])
        return scale * float(flat.sum()), scale * float(flat @ flat), t
    s1 = float(pa @ (K @ pb))
    np.square(K, out=K)
    s2 = float(pa @ (K @ pb))
    return s1, s2, t


def _workers() -> int:
    """Threads for the block loop: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _ordered_map(fn, items: list, workers: int) -> Iterator:
    """``fn`` over ``items``, results in order, on ``workers`` threads each with a one-thread BLAS.

    The elementwise work on a block (distances, exp, sums) is single-threaded in numpy, which
    releases the GIL in it: two blocks at a time on two threads keep both cores busy, where one
    block with a two-thread BLAS left one idle outside the product. The caller's memory budget
    and chunk size (thread-local in a ``config_context``) are carried into the threads.
    """
    if workers <= 1 or len(items) < 2:
        yield from map(fn, items)
        return
    from threadpoolctl import threadpool_limits

    cfg = get_config()

    def call(item):
        with config_context(memory_budget=cfg["memory_budget"], chunk_bytes=cfg["chunk_bytes"]):
            return fn(item)

    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(call, items)


def _blocked_sums(block_of, n: int, p: np.ndarray, rows: int, progress,
                  workers: int = 1) -> tuple[float, float, float]:
    """Sums over the blocks of K on and above the diagonal (off-diagonal blocks count twice)."""
    bounds = chunk_bounds(n, rows)
    pairs = [(a, b) for i, a in enumerate(bounds) for b in bounds[i:]]

    def one(pair):
        a, b = pair
        return a == b, _block_sums(block_of(a, b, a == b), p[a[0]:a[1]], p[b[0]:b[1]], a == b)

    s1 = s2 = trace = 0.0
    for done, (same, (b1, b2, t)) in enumerate(_ordered_map(one, pairs, workers), start=1):
        factor = 1.0 if same else 2.0
        s1 += factor * b1
        s2 += factor * b2
        trace += t
        report(progress, done, len(pairs), "kernel blocks")
    return s1, s2, trace


def _streamed_blocked_sums(kern, source, p: np.ndarray, rows: int, progress,
                           workers: int = 1) -> tuple[float, float, float]:
    """Blocked sums when the rows do not fit: an outer block in memory, the rows after it streamed.

    Each ordered pair of rows is counted once: pairs inside an outer block by the in-memory
    blocked sum, pairs between it and later rows twice through the streamed inner pass.
    """
    n, d = source.n, source.d
    outer = max(rows, int(memory_budget() // (8 * 8 * max(1, d))) // rows * rows)
    s1 = s2 = trace = 0.0
    n_outer = -(-n // outer)
    for k, (a0, XI) in enumerate(source.chunks(outer)):
        XI = _compact_integers(np.array(_check_chunk(kern, XI, a0, source.name)))
        a1 = a0 + XI.shape[0]
        inner = _blocked_sums(_pair_kernel(kern, XI), XI.shape[0], p[a0:a1], rows, None, workers)
        s1, s2, trace = s1 + inner[0], s2 + inner[1], trace + inner[2]
        if a1 < n:
            sparse = _sparse_rows(kern, XI)
            left = XI if sparse is None else sparse
            for b0, XJ in source.chunks(rows, start=a1):
                XJ = _compact_integers(_check_chunk(kern, XJ, b0, source.name))
                if sparse is not None:
                    XJ = _columns_view(XJ)
                pb = p[b0 : b0 + XJ.shape[0]]

                def cross(c, XJ=XJ, pb=pb, left=left, a0=a0):
                    K = kern.gram(left[c[0]:c[1]], XJ, check_input=False)
                    return _block_sums(K, p[a0 + c[0] : a0 + c[1]], pb, False)

                for b1, b2, _ in _ordered_map(cross, chunk_bounds(XI.shape[0], rows), workers):
                    s1 += 2.0 * b1
                    s2 += 2.0 * b2
        report(progress, k + 1, n_outer, "outer blocks")
    return s1, s2, trace
