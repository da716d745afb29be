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
"""

from __future__ import annotations

import contextlib
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator

from ._config import fits_memory
from ._optional import require

__all__ = ["NN_METHODS", "EXACT_MAX_N", "choose_nn_method", "block_threads", "run_blocks"]

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
