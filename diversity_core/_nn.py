"""The one rule that picks the nearest-neighbour search for ``method="auto"``, and its thread count.

Used by every neighbour search of the project: the near-duplicate and rarity searches of
:mod:`diversity_core.curation` and the k-NN radii and memorisation tests of
:mod:`diversity_core.evaluation`.

``"auto"`` is exact when both hold:

- the largest set searched has at most :data:`EXACT_MAX_N` items (beyond it a pynndescent
  index, once built, is faster than the O(n^2 d) exact search);
- the copies of the data the exact search holds fit the memory budget
  (:func:`diversity_core.set_config`); its streamed blocks are sized by ``chunk_bytes``.

Otherwise ``"approximate"`` (pynndescent), or ``"exact"`` when pynndescent is not installed
(which then raises :class:`~diversity_core.exceptions.MemoryBudgetError` when over the budget).

The module also holds the project's one approximate search (:func:`approximate_candidates`): the
data as an NN-descent index should see them (:func:`index_space`: centred in float64 and scaled
by a power of two before float32, or unit rows, or bits) and the index's candidates. Callers
refine the candidates exactly with the distances of :mod:`diversity_core.distances` (the
evaluation) or the kernel (curation).
"""

from __future__ import annotations

import contextlib
import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from ._config import chunk_rows, fits_memory
from ._optional import require
from .distances import _power_of_two_exponents, _scale_rows, _unit_rows

__all__ = ["NN_METHODS", "EXACT_MAX_N", "choose_nn_method", "block_threads", "run_blocks", "Frame", "frame_of",
           "index_space", "approximate_candidates", "ApproximateIndex", "APPROX_MIN_NEIGHBOURS"]

#: Values of every ``method`` / ``nn_method`` option of a neighbour search.
NN_METHODS = ("auto", "exact", "approximate")

#: Largest set ``"auto"`` searches exactly. At n = 50,000 (d = 64) the exact duplicate search
#: took 24-35 s and the exact neighbours 57-74 s on a busy 2-core machine, while a fresh process
#: spends 40-100 s compiling the index (numba) before it searches in 6-18 s; at n = 50,000 and
#: d = 2,048 the blocked float32 search of the evaluation takes a few minutes on 2 cores
#: (``benchmarks/bench_evaluation.py``): the exact search wins up to about this size.
EXACT_MAX_N = 60_000


def choose_nn_method(method: str, largest: int, exact_bytes: float = 0.0) -> str:
    """``"auto"`` resolved by the module's rule; other values come back unchanged.

    Parameters
    ----------
    method : {"auto", "exact", "approximate"}
    largest : int
        Items of the largest set searched.
    exact_bytes : float, default 0
        Memory the exact search holds besides its streamed blocks (its copies of the data).

    Returns
    -------
    str
        ``"exact"`` or ``"approximate"`` (for ``"auto"``), else ``method``.
    """
    if method != "auto":
        return method
    if largest <= EXACT_MAX_N and fits_memory(float(exact_bytes)):
        return "exact"
    try:
        require("pynndescent", purpose="approximate nearest neighbours")
    except ImportError:
        return "exact"
    return "approximate"


@functools.lru_cache(maxsize=1)
def _controller():
    """One ``threadpoolctl.ThreadpoolController`` per process (finding the BLAS libraries costs ~15 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def block_threads() -> Iterator[int]:
    """Context manager: the threads a blocked search runs its blocks on, each with one BLAS thread.

    Yields their count: the BLAS threads allowed now (an outer limit such as a worker job's
    share stays), at most the cores this process may use. With one, BLAS is left as it is.

    A blocked search is a GEMM per block plus elementwise work on its result (comparisons,
    partitions, candidate lists) that numpy runs on one core. Blocks on their own threads, each
    GEMM single-threaded, keep every core busy through both; BLAS threads inside one block
    leave all but one core idle through the elementwise part (measured: a third of the time of
    the 50,000 x 2,048 evaluation's neighbour stage).
    """
    from .workers import available_cores

    ctl = _controller()
    blas = [int(info.get("num_threads") or 1) for info in ctl.info() if info.get("user_api") == "blas"]
    threads = max(1, min([available_cores()] + blas))
    if threads == 1:
        yield 1
        return
    with ctl.limit(limits=1, user_api="blas"):
        yield threads


def run_blocks(starts: Iterable[int], work: Callable, consume: Callable, threads: int) -> None:
    """``consume(start, work(start))`` for each block start, in order; ``work`` on ``threads`` threads.

    ``consume`` runs on the calling thread (where shared results are merged and progress is
    reported); an exception from either stops the search and cancels the blocks not started.
    """
    if threads <= 1:
        for start in starts:
            consume(start, work(start))
        return
    starts = list(starts)
    pool = ThreadPoolExecutor(threads, thread_name_prefix="nn-block")
    try:
        for start, result in zip(starts, pool.map(work, starts)):
            consume(start, result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# the frame of a Euclidean search, and the one approximate search (pynndescent)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """Where a Euclidean search places the rows: ``(x - centre) * 2**-exponent``.

    Distances do not move under the translation, and the power of two changes no digit (it only
    moves the exponent), so every distance of the framed rows is ``2**-exponent`` times the
    original one, with the rows' largest centred entry in [0.5, 1): neither products nor squares
    overflow or underflow (rows of 1e160 or 1e-170 are searched like rows near 1), and float32
    copies keep 24 bits of the data's *spread* rather than of their offset.
    """

    centre: np.ndarray
    exponent: int

    def rows(self, X, dtype=np.float64) -> np.ndarray:
        """The framed rows of dense X, in ``dtype`` (computed in float64)."""
        out = np.asarray(X, dtype=np.float64) - self.centre
        if self.exponent:
            out = np.ldexp(out, -self.exponent)
        return out.astype(dtype, copy=False)


def frame_of(*sets, centre_on: int = 0) -> Frame:
    """The :class:`Frame` of dense sets searched together: the float64 mean of ``sets[centre_on]``.

    The exponent makes the largest ``|x - centre|`` over every set lie in [0.5, 1) (0 when every
    row sits on the centre). Row chunks keep the float64 temporaries within ``chunk_bytes``.
    """
    base = sets[centre_on]
    n, d = base.shape
    step = chunk_rows(d, 8)
    total = np.zeros(d)
    for s in range(0, n, step):
        total += np.asarray(base[s:s + step], dtype=np.float64).sum(axis=0)
    centre = total / max(n, 1)
    top = 0.0
    for S in sets:
        for s in range(0, S.shape[0], step):
            block = np.abs(np.asarray(S[s:s + step], dtype=np.float64) - centre)
            if block.size:
                top = max(top, float(block.max()))
    exponent = int(_power_of_two_exponents(np.array([top]))[0]) if top > 0 else 0
    return Frame(centre=centre, exponent=exponent)


#: Fewest neighbours per item of an NN-descent graph and of a query: an index built or queried
#: for one or a few neighbours explores too little of the data and finds the true ones far less often.
APPROX_MIN_NEIGHBOURS = 30

#: pynndescent metrics whose distances do not move under a translation of every row.
_TRANSLATION_INVARIANT = ("euclidean", "sqeuclidean", "manhattan")


def index_space(base, query=None, *, metric: str = "euclidean") -> Tuple[object, Optional[object]]:
    """``(base, query)`` as the NN-descent index should see them under ``metric``: neighbours unchanged.

    - ``euclidean`` / ``manhattan`` on dense rows: both sets in the :class:`Frame` of ``base``
      (centred on its float64 mean, scaled by a power of two), then float32. Uncentred float32
      rows at an offset of 1e4 with a spread of 1e-3 hold about one significant bit of their
      differences; framed rows hold 24. Sparse rows are only scaled (centring would densify them).
    - ``cosine``: the rows divided by their norms (overflow-safe, :func:`distances._unit_rows`).
    - ``jaccard``: the rows as they are (bits; float32 holds 0/1 exactly).
    """
    if metric in _TRANSLATION_INVARIANT and not sp.issparse(base):
        frame = frame_of(base) if query is None else frame_of(base, query)
        return frame.rows(base, np.float32), None if query is None else frame.rows(query, np.float32)
    if metric in _TRANSLATION_INVARIANT or metric == "cosine":
        if metric == "cosine":
            def prep(A):
                return _unit_rows(A)[0]
        else:
            data = [abs(S).max() if S.nnz else 0.0 for S in ((base,) if query is None else (base, query))]
            top = float(max(data))
            e = int(_power_of_two_exponents(np.array([top]))[0]) if top > 0 else 0

            def prep(A):
                return _scale_rows(A, np.arange(A.shape[0]), np.full(A.shape[0], e)) if e else A
        out = []
        for A in (base, query):
            if A is None:
                out.append(None)
                continue
            A = prep(A)
            out.append(A.astype(np.float32) if sp.issparse(A) else np.ascontiguousarray(A, dtype=np.float32))
        return out[0], out[1]
    cast = (lambda A: A.astype(np.float32)) if sp.issparse(base) else (
        lambda A: np.ascontiguousarray(A, dtype=np.float32))
    return cast(base), None if query is None else cast(query)


class ApproximateIndex:
    """An NN-descent index of ``base`` under ``metric`` (pynndescent), built once, queried as often as needed.

    Built on Dong, Charikar & Li, "Efficient k-nearest neighbor graph construction for generic
    similarity measures", WWW 2011. The rows are given to the index in :func:`index_space`
    (``frame``, when given, places the Euclidean rows; default the frame of ``base``). The graph
    has at least :data:`APPROX_MIN_NEIGHBOURS` neighbours per row and every query asks for at
    least as many: more candidates than the caller keeps, which it ranks by exact distances or
    kernel values. Indices are ints, -1 where the index found no neighbour (pynndescent marks
    them so: a sparse graph, an early stop), the found ones first, in the index's order.
    """

    def __init__(self, base, *, metric: str, seed: int, k: int = 1, frame: Optional[Frame] = None,
                 query_epsilon: float = 0.2):
        pynndescent = require("pynndescent", purpose="the approximate nearest-neighbour search")
        self.metric, self.frame, self.query_epsilon = metric, frame, query_epsilon
        data = self._space(base)
        self.n = int(data.shape[0])
        self.degree = max(2, min(self.n - 1, max(int(k), APPROX_MIN_NEIGHBOURS) + 1))
        self._index = pynndescent.NNDescent(data, metric=metric, n_neighbors=self.degree, random_state=int(seed),
                                            low_memory=True, verbose=False)

    def _space(self, X):
        if self.frame is not None and self.metric in _TRANSLATION_INVARIANT and not sp.issparse(X):
            return self.frame.rows(X, np.float32)
        if self.frame is None and self.metric in _TRANSLATION_INVARIANT and not sp.issparse(X):
            self.frame = frame_of(X)
            return self.frame.rows(X, np.float32)
        return index_space(X, metric=self.metric)[0]

    def graph(self) -> np.ndarray:
        """The neighbour graph of the base rows, each row's own index removed (shape (n, degree))."""
        idx, _ = self._index.neighbor_graph
        idx = np.asarray(idx, dtype=np.intp)
        return _clean(np.where(idx == np.arange(self.n)[:, None], -1, idx), self.n)

    def query(self, Q, k: int) -> np.ndarray:
        """Candidate neighbours (rows of the base) of the rows of Q: at least ``min(n, k, 30)`` per row asked."""
        kq = min(self.n, max(int(k), APPROX_MIN_NEIGHBOURS))
        idx, _ = self._index.query(self._space(Q), k=kq, epsilon=self.query_epsilon)
        return _clean(np.asarray(idx, dtype=np.intp), self.n)


def _clean(idx: np.ndarray, n: int) -> np.ndarray:
    """Out-of-range entries as -1, the found ones first in each row (stable)."""
    idx = np.where((idx < 0) | (idx >= n), -1, idx)
    order = np.argsort(idx < 0, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


def approximate_candidates(base, query=None, *, k: int, metric: str, seed: int) -> np.ndarray:
    """Candidate neighbours (rows of ``base``) of every row of ``query`` from one :class:`ApproximateIndex`.

    ``query=None``: the neighbour graph of ``base`` itself, each row's own index removed. Returns
    an int array of shape (rows, >= k when the index holds that many), -1 where none was found.
    Euclidean rows of both sets are placed in one frame (:func:`frame_of` of both).
    """
    frame = None
    if metric in _TRANSLATION_INVARIANT and not sp.issparse(base):
        frame = frame_of(base) if query is None else frame_of(base, query)
    index = ApproximateIndex(base, metric=metric, seed=seed, k=k, frame=frame)
    return index.graph() if query is None else index.query(query, k)
