"""Issue 39, item 3: ``baseline_scores`` is the one answer the app, the API and the report share.

- It never needs the n x n kernel matrix whole: past the memory budget a kernel without a
  feature map (rbf, laplacian) is summed by blocks of K, to the dense values (it raised
  MemoryBudgetError, so the app could not show IntDiv past the dense limit).
- It fixes the bandwidth as ``compute_spectrum`` does, so a client needs no spectrum for it.
- Its GMStds is :func:`gmstds`'s definition: 0 with a constant feature.
"""

from __future__ import annotations

import numpy as np
import pytest

import diversity_core as dc


@pytest.fixture(scope="module")
def X() -> np.ndarray:
    X = np.random.default_rng(0).normal(size=(400, 6))
    X[:, 2] = 1.0  # a constant feature
    return X


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
@pytest.mark.parametrize("weighted", [False, True])
def test_baselines_under_a_small_budget_equal_the_dense_ones(X, kernel, weighted):
    w = np.random.default_rng(1).random(X.shape[0]) if weighted else None
    dense = dc.baseline_scores(X, kernel=kernel, weights=w)
    # 400 x 400 float64 = 1.2 MiB, over the budget: several blocks of rows and columns
    with dc.config_context(memory_budget=300_000):
        with pytest.raises(dc.MemoryBudgetError):
            dc.get_kernel(kernel).gram(X)
        blocked = dc.baseline_scores(X, kernel=kernel, weights=w)
        single = dc.intdiv(X, kernel=kernel, weights=w), dc.average_similarity(X, kernel=kernel, weights=w)
    assert blocked.keys() == dense.keys()
    for key in dense:
        assert blocked[key] == pytest.approx(dense[key], rel=1e-12, abs=1e-14), key
    assert single == pytest.approx((dense["intdiv"], dense["average_similarity"]), rel=1e-12)


def test_baselines_fix_the_bandwidth_as_the_spectrum_does(X):
    w = np.random.default_rng(2).random(X.shape[0])
    spec = dc.compute_spectrum(X, kernel="rbf", weights=w, n_eigenvectors=0)
    resolved = dc.baseline_scores(X, kernel="rbf", weights=w, sigma=spec.kernel["sigma"])
    assert dc.baseline_scores(X, kernel="rbf", weights=w) == resolved


def test_gmstds_of_the_baselines_is_the_core_definition(X):
    scores = dc.baseline_scores(X, kernel="rbf")
    assert scores["gmstds"] == dc.gmstds(X) == 0.0
    assert dc.gmstds(X, skip_constant=True) > 0.0
