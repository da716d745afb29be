"""The neighbour searches of curation and evaluation: one "auto" rule, the filtered within-set search, pynndescent.

Every test that imports pynndescent lives in this file: pytest-xdist keeps a file in one process,
so numba compiles pynndescent's NN-descent (about a minute, not cacheable) once, and in a fresh
environment its cacheable functions too (the import alone took 50 s in a fresh clone's CI).
"""

import importlib.util

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import spearmanr
from sklearn.datasets import load_digits

from diversity_core import config_context
from diversity_core._nn import EXACT_MAX_N
from diversity_core.curation import find_duplicates, rarity_scores
from diversity_core.curation._search import resolve_method
from diversity_core.evaluation import prdc
from diversity_core.evaluation._neighbours import kth_smallest, prepare_pair, resolve_nn_method
from diversity_core.exceptions import DiversityInputError

HAS_PYNNDESCENT = importlib.util.find_spec("pynndescent") is not None


def test_one_auto_rule_for_curation_and_evaluation():
    assert resolve_method("auto", 1000) == resolve_nn_method("auto", (1000, 900), 64, 4) == "exact"
    assert resolve_method("exact", 10**6) == "exact"
    if HAS_PYNNDESCENT:
        # beyond the size limit, both searches go approximate; beyond the budget, the evaluation does
        assert resolve_method("auto", EXACT_MAX_N + 1) == "approximate"
        assert resolve_nn_method("auto", (EXACT_MAX_N + 1, 10), 8, 4) == "approximate"
        with config_context(memory_budget="1M"):
            assert resolve_nn_method("auto", (5000, 5000), 64, 4) == "approximate"
    else:
        assert resolve_method("auto", EXACT_MAX_N + 1) == "exact"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_within_set_search_is_exact_with_duplicates_and_many_blocks(dtype, threads, monkeypatch):
    # blocks on one thread, and on two threads whose pools merge in whatever order they finish
    monkeypatch.setattr("diversity_core.workers.available_cores", lambda: threads)
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(6, 24)) * 4
    X = (centres[rng.integers(6, size=700)] + rng.normal(size=(700, 24))).astype(dtype)
    X[50:60] = X[40]  # exact duplicates: their k-th distances are 0
    X += 300.0  # far from the origin (the centring matters)
    (a,) = prepare_pair(X)
    with config_context(chunk_bytes="40K"):  # blocks of ~16 rows: the filtered multi-block path
        values, nearest = kth_smallest(a, None, [1, 3, 5])
    D = cdist(X.astype(np.float64), X.astype(np.float64), "sqeuclidean")
    np.fill_diagonal(D, np.inf)
    ref = np.sort(D, axis=1)[:, [0, 2, 4]]
    np.testing.assert_allclose(values, ref, rtol=1e-12, atol=1e-9)
    assert np.all(D[np.arange(700), nearest] == D.min(axis=1))
    assert np.all(values[[40, *range(50, 60)], 0] == 0.0)


def test_a_failing_block_stops_the_search_and_cancels_the_rest():
    import threading
    import time

    from diversity_core._nn import run_blocks

    started = []
    lock = threading.Lock()

    def work(start):
        with lock:
            started.append(start)
        time.sleep(0.01)
        return start

    def consume(start, result):
        assert result == start  # results come back in block order
        if start == 3:
            raise KeyboardInterrupt  # what a cancelled job's progress callback raises

    with pytest.raises(KeyboardInterrupt):
        run_blocks(range(200), work, consume, threads=2)
    assert len(started) < 20  # the blocks not started were cancelled, not run to the end


@pytest.mark.slow
@pytest.mark.skipif(not HAS_PYNNDESCENT, reason="pynndescent is not installed")
def test_pynndescent_path_beyond_the_budget_states_its_method():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(5, 8)) * 6
    R = centres[rng.integers(5, size=600)] + rng.normal(size=(600, 8))
    G = centres[rng.integers(5, size=500)] + rng.normal(size=(500, 8)) + 0.3
    exact = prdc(R, G, n_resamples=0)
    with config_context(memory_budget="20K"):  # the centred copies (70 KB) do not fit
        approx = prdc(R, G, n_resamples=0, rng=0)
    assert exact.nn_method == "exact" and approx.nn_method == "approximate"
    for name in ("precision", "recall", "density", "coverage"):
        e, a = getattr(exact, name).value, getattr(approx, name).value
        assert abs(a - e) <= 0.05 * max(e, 0.1), (name, a, e)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_PYNNDESCENT, reason="pynndescent is not installed")
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_injected_copies_are_found_by_the_approximate_search(metric):
    from diversity_core.evaluation import memorization

    rng = np.random.default_rng(11)
    T = rng.normal(size=(2000, 32)).astype(np.float32)
    fresh = rng.normal(size=(400, 32)).astype(np.float32)
    src = rng.choice(2000, 200, replace=False)
    G = np.vstack([fresh, T[src] + rng.normal(scale=1e-4, size=(200, 32)).astype(np.float32)])
    r = memorization(G, T, reference=rng.normal(size=(500, 32)), metric=metric, nn_method="approximate", rng=0)
    assert r.nn_method == "approximate"
    assert r.flagged[400:].mean() >= 0.99  # recall of the injected copies
    assert (r.nearest[400:] == src).mean() >= 0.99
    assert r.excess > 0.1


class _HoleyIndex:
    """A pynndescent index whose graph and queries lose neighbours (index -1), as a sparse graph does."""

    real = None

    def __init__(self, data, **kwargs):
        self._index = self.real(data, **kwargs)

    @property
    def neighbor_graph(self):
        idx, dist = self._index.neighbor_graph
        idx = idx.copy()
        idx[::7, 1:] = -1  # every 7th row keeps only itself
        return idx, dist

    def query(self, X, k, **kwargs):
        idx, dist = self._index.query(X, k=k, **kwargs)
        idx = idx.copy()
        idx[::5, 2:] = -1  # every 5th query finds two neighbours
        idx[3, :] = -1  # one finds none
        return idx, dist


@pytest.mark.skipif(not HAS_PYNNDESCENT, reason="pynndescent is not installed")
def test_missing_approximate_neighbours_are_searched_exactly(monkeypatch):
    import pynndescent

    from diversity_core.evaluation._neighbours import approx_knn

    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(300, 5)), rng.normal(size=(250, 5))
    monkeypatch.setattr(_HoleyIndex, "real", pynndescent.NNDescent)
    monkeypatch.setattr(pynndescent, "NNDescent", _HoleyIndex)
    for A, B, own in ((X, Y, False), (X, None, True)):
        idx, d2 = approx_knn(A, B, 4, seed=0)
        base = A if own else B
        D = cdist(A, base, "sqeuclidean")
        if own:
            np.fill_diagonal(D, np.inf)
        assert idx.min() >= 0 and np.all(np.diff(d2, axis=1) >= 0)
        np.testing.assert_allclose(d2, D[np.arange(A.shape[0])[:, None], idx], rtol=1e-12, atol=1e-12)
        holes = np.arange(0, A.shape[0], 7 if own else 5)
        # the rows that lost neighbours got their exact k nearest
        np.testing.assert_allclose(d2[holes], np.sort(D[holes], axis=1)[:, :4], rtol=1e-12, atol=1e-12)
        if own:
            assert np.all(idx != np.arange(A.shape[0])[:, None])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_PYNNDESCENT, reason="pynndescent is not installed")
def test_curation_approximate_search_matches_exact(rng):
    """One index build (the rbf kernel's Euclidean metric) serves duplicates and rarity."""
    digits = load_digits().data
    src = rng.choice(digits.shape[0], size=50, replace=False)
    X = np.vstack([digits, digits[src] + rng.normal(scale=0.1, size=(50, digits.shape[1]))])
    exact = find_duplicates(X, kernel="rbf", scores=False, method="exact")
    approx = find_duplicates(X, kernel="rbf", scores=False, method="approximate", rng=0)
    assert approx.method == "approximate" and approx.n_neighbors == 15
    assert set(map(tuple, approx.pairs.tolist())) == set(map(tuple, exact.pairs.tolist()))
    assert [g.tolist() for g in approx.groups] == [g.tolist() for g in exact.groups]
    r_exact = rarity_scores(X, kernel="rbf", method="exact")
    r_approx = rarity_scores(X, kernel="rbf", method="approximate", rng=0)
    assert np.mean(r_approx.neighbors[:, 0] == r_exact.neighbors[:, 0]) >= 0.99
    np.testing.assert_allclose(r_approx.scores, r_exact.scores, atol=0.02)
    assert spearmanr(r_approx.scores, r_exact.scores)[0] >= 0.99


@pytest.mark.skipif(not HAS_PYNNDESCENT, reason="pynndescent is not installed")
def test_curation_approximate_refuses_kernels_without_a_metric(rng):
    with pytest.raises(DiversityInputError, match="no metric"):
        find_duplicates(rng.standard_normal((20, 3)), kernel="polynomial", method="approximate")
