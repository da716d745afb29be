"""The neighbour searches of the evaluation: one "auto" rule, the filtered within-set search, pynndescent."""

import importlib.util

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from diversity_core import config_context
from diversity_core._nn import EXACT_MAX_N
from diversity_core.curation._search import resolve_method
from diversity_core.evaluation import prdc
from diversity_core.evaluation._neighbours import kth_smallest, prepare_pair, resolve_nn_method

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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_within_set_search_is_exact_with_duplicates_and_many_blocks(dtype):
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
