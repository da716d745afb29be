"""Neighbour search under a kernel: exact in row blocks, or approximate with an NN-descent index.

Exact searches stream the kernel matrix in blocks of rows sized by the memory budget's chunk
(``_config.chunk_rows``): pairs above a threshold cost O(n^2 d / 2), the k nearest neighbours
of every item O(n^2 d), and neither holds more than one block. The approximate search is the
project's one NN-descent search (:func:`diversity_core._nn.approximate_candidates`: Dong,
Charikar & Li, WWW 2011, through pynndescent) under the metric the kernel implies (Euclidean
for rbf, L1 for laplacian, cosine, Jaccard for Tanimoto on bits), on rows centred in float64
and scaled by a power of two where the metric allows; the kernel is then recomputed exactly on
the candidate pairs it returns.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import scipy.sparse as sp

from .._nn import EXACT_MAX_N, approximate_candidates, choose_nn_method  # noqa: F401 - EXACT_MAX_N re-exported
from .._progress import ProgressCallback, report
from ..distances import _row_norms
from ..exceptions import DiversityInputError
from ._common import KernelRows, block_rows

#: Candidate neighbours per item the approximate duplicate search asks the index for.
APPROX_NEIGHBORS = 15


def resolve_method(method: str, n: int) -> str:
    """``"auto"`` resolved by the project's one rule (:func:`diversity_core._nn.choose_nn_method`).

    The exact searches stream kernel rows in blocks and hold no copy of the data.
    """
    return choose_nn_method(method, n)


def pairs_above(
    scores: Callable, n: int, cut: float, progress: Optional[ProgressCallback], message: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs i < j with ``scores(rows, cols)[i, j] >= cut``, streaming the upper triangle by blocks.

    Returns the row indices, column indices and scores of the pairs.
    """
    step = block_rows(n)
    found_i, found_j, found_s = [], [], []
    n_blocks = -(-n // step)
    for b, start in enumerate(range(0, n, step)):
        stop = min(n, start + step)
        S = scores(slice(start, stop), slice(start, n))
        r, c = np.nonzero(S >= cut)
        upper = c > r  # column offset start: global column c + start > global row r + start
        r, c = r[upper], c[upper]
        found_i.append(r + start)
        found_j.append(c + start)
        found_s.append(S[r, c])
        report(progress, b + 1, n_blocks, message)
    return (np.concatenate(found_i).astype(np.intp), np.concatenate(found_j).astype(np.intp),
            np.concatenate(found_s).astype(np.float64))


def knn_exact(
    rows: KernelRows, k: int, progress: Optional[ProgressCallback], message: str
) -> tuple[np.ndarray, np.ndarray]:
    """The k most similar other items of every item, exactly, by blocks of rows: (indices, similarities).

    Each row is sorted by decreasing similarity (ties by index).
    """
    n = rows.n
    step = block_rows(n)
    idx = np.empty((n, k), dtype=np.intp)
    sim = np.empty((n, k))
    n_blocks = -(-n // step)
    for b, start in enumerate(range(0, n, step)):
        stop = min(n, start + step)
        S = rows.block(slice(start, stop))
        local = np.arange(stop - start)
        S[local, local + start] = -np.inf  # an item is not its own neighbour
        # the k largest sit after position n - k once partitioned (no negated copy of the block)
        part = np.argpartition(S, n - k, axis=1)[:, n - k:]
        vals = np.take_along_axis(S, part, axis=1)
        # decreasing similarity, ties broken by the smaller index
        order = np.lexsort((part, -vals), axis=1)
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        sim[start:stop] = np.take_along_axis(vals, order, axis=1)
        report(progress, b + 1, n_blocks, message)
    return idx, sim


def _nn_space(rows: KernelRows, metric_for_distance: bool):
    """The data and pynndescent metric whose nearest neighbours are the kernel's most similar items."""
    if metric_for_distance:
        return rows.X, "euclidean"
    kern = rows.kern
    if rows.precomputed:
        raise DiversityInputError(
            "the approximate search needs features, not a precomputed kernel matrix; use method='exact'."
        )
    if rows.phi is not None:
        norms = _row_norms(rows.phi)
        if not np.allclose(norms, 1.0, rtol=0, atol=1e-5):
            raise DiversityInputError(
                f"the approximate search needs unit-norm features for the {kern.name} kernel (its values are "
                "then cosine similarities); use the cosine kernel or method='exact'."
            )
        return rows.phi, "cosine"
    if kern.name == "rbf":
        return rows.X, "euclidean"  # exp(-|x-y|^2 / 2 sigma^2) falls with the Euclidean distance
    if kern.name == "laplacian":
        return rows.X, "manhattan"  # exp(-|x-y|_1 / sigma) falls with the L1 distance
    if kern.name == "tanimoto":
        data = rows.X.data if sp.issparse(rows.X) else rows.X
        if np.all((data == 0) | (data == 1)):
            return rows.X, "jaccard"  # Tanimoto of 0/1 vectors is the Jaccard index
        # for non-negative counts Tanimoto <= cos / (2 - cos), so the most Tanimoto-similar
        # items are among the most cosine-similar ones: cosine neighbours are good candidates
        return rows.X, "cosine"
    raise DiversityInputError(
        f"the approximate search has no metric for the {kern.name} kernel; use method='exact' or one of "
        "cosine, linear (unit-norm rows), probability_product, rbf, laplacian, tanimoto."
    )


def knn_graph_approximate(
    rows: KernelRows, k: int, seed: int, progress: Optional[ProgressCallback], *, distance: bool = False
) -> np.ndarray:
    """Candidate neighbours (n, >= k where the index holds them) of every item from an NN-descent index.

    -1 pads short rows. The candidates are in the index's order (approximate); callers rank them
    by the kernel's exact values.
    """
    data, metric = _nn_space(rows, distance)
    report(progress, 0, 2, "building the nearest-neighbour index")
    graph = approximate_candidates(data, None, k=k, metric=metric, seed=seed)
    report(progress, 1, 2, "checking the candidates exactly")
    return graph


def knn_approximate(
    rows: KernelRows, k: int, seed: int, progress: Optional[ProgressCallback]
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate k most similar items (indices, exact similarities), sorted by decreasing similarity.

    Every candidate of the index (at least ``APPROX_MIN_NEIGHBOURS`` per item) is scored by the
    kernel exactly and the k most similar kept (ties: smaller index). Rows the index could not
    fill are completed with the exact search of those rows.
    """
    graph = knn_graph_approximate(rows, k, seed, progress)
    n = rows.n
    if graph.shape[1] < k:  # the index holds fewer neighbours than asked for (tiny n)
        graph = np.hstack([graph, np.full((n, k - graph.shape[1]), -1, dtype=graph.dtype)])
    valid = graph >= 0
    ii = np.repeat(np.arange(n), valid.sum(axis=1))
    sim = np.full(graph.shape, -np.inf)
    sim[valid] = rows.pair_values(ii, graph[valid])
    order = np.lexsort((np.where(valid, graph, n), -sim), axis=1)[:, :k]
    graph = np.take_along_axis(graph, order, axis=1)
    sim = np.take_along_axis(sim, order, axis=1)
    for i in np.flatnonzero((graph < 0).any(axis=1)):
        S = rows.block(slice(i, i + 1))[0]
        S[i] = -np.inf
        top = np.lexsort((np.arange(n), -S))[:k]
        graph[i], sim[i] = top, S[top]
    report(progress, 2, 2, "checking the candidates exactly")
    return graph, sim
