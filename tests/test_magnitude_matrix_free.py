"""The matrix-free magnitude path (issue 12): chosen by the memory budget, stated errors cover the truth."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from diversity_core._config import config_context
from diversity_core.exceptions import DiversityInputError, DuplicatesMergedWarning, MemoryBudgetError
from diversity_core.magnitude import (
    compare_magnitude,
    convergence_scale,
    mag_area,
    magnitude_function,
    magnitude_method,
    spread_function,
)
from diversity_core.magnitude._free import _FreeSpace, _products, _resolve_method
from diversity_core.magnitude._metric import _pairwise, _PointMetric

EPS = np.finfo(np.float64).eps


def _mixture(rng, n: int, d: int, k: int = 5) -> np.ndarray:
    centres = rng.normal(size=(k, d)) * 3.0
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d))


@pytest.fixture(scope="module")
def cloud() -> np.ndarray:
    return _mixture(np.random.default_rng(12), 1500, 8)


@pytest.fixture(scope="module")
def dense_and_free(cloud):
    dense = magnitude_function(cloud, method="dense")
    budget = int(0.6 * 24 * cloud.shape[0] ** 2)  # below the dense path's D, Z_t and factor
    with config_context(memory_budget=budget):
        assert _resolve_method("auto", cloud.shape[0], "euclidean") == "matrix-free"
        free = magnitude_function(cloud)  # method="auto"
    return dense, free


def test_auto_takes_the_matrix_free_path_under_a_small_budget(dense_and_free):
    dense, free = dense_and_free
    assert dense.method == "dense" and free.method == "matrix-free"
    assert set(free.methods[1:]) <= {"matrix-free-cg", "matrix-free-pcg"}
    assert "matrix-free-pcg" in free.methods  # the small scales are preconditioned
    assert free.to_dict()["method"] == "matrix-free" and json.dumps(free.to_dict())


def test_stated_errors_cover_the_exact_solve(dense_and_free):
    dense, free = dense_and_free
    assert free.t_conv == pytest.approx(dense.t_conv, rel=1e-7)
    # on the dense grid itself, so that only the solves differ
    cloud = _mixture(np.random.default_rng(12), 1500, 8)
    free_on_grid = magnitude_function(cloud, dense.ts, method="matrix-free")
    true = np.abs(free_on_grid.values - dense.values)
    # the dense values carry their own (stated) error too
    assert np.all(true <= free_on_grid.errors + dense.errors + 8 * EPS * dense.values)
    assert np.all(free_on_grid.exact) and free_on_grid.max_rel_error < 1e-8


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine", "tanimoto"])
def test_products_from_upper_strips_equal_the_dense_products(rng, metric):
    # many small row blocks, so that every strip serves its own rows and (transposed) the rows below
    n = 230
    X = (rng.random((n, 12)) < 0.3).astype(float) if metric == "tanimoto" else _mixture(rng, n, 6)
    if metric == "euclidean":  # a tight cluster far from the rest: its pairs take the exact recomputation
        X[:40] = 50.0 + 1e-3 * rng.normal(size=(40, 6))
    space = _FreeSpace(_PointMetric(X, metric))
    space.rows = 17
    space.blocks = [(i0, min(n, i0 + 17)) for i0 in range(0, n, 17)]
    D, _ = _pairwise(X, metric)
    P = rng.normal(size=(n, 3))
    for ts in (np.array([0.4, 0.8, 2.0]), np.array([0.3, 0.7, 1.9])):  # a grid k h, and general scales
        Q = _products(space, ts, P)
        expected = np.column_stack([np.exp(-t * D) @ P[:, j] for j, t in enumerate(ts)])
        np.testing.assert_allclose(Q, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    # the operator is exactly symmetric: its matrix, column by column, equals its transpose bit for bit
    Z = np.column_stack([_products(space, np.array([0.5]), np.eye(n)[:, [j]])[:, 0] for j in range(n)])
    assert np.array_equal(Z, Z.T)


def test_matrix_free_area_comparison_and_tconv(cloud):
    small = cloud[:600]
    dense_area = mag_area(small, n_scales=8)
    free_area = mag_area(small, n_scales=8, method="matrix-free")
    assert free_area.function.method == "matrix-free"
    assert free_area.area == pytest.approx(dense_area.area, rel=1e-8)
    assert convergence_scale(small, method="matrix-free") == pytest.approx(convergence_scale(small), rel=1e-7)
    sets = {"a": small[:300], "b": 0.8 * small[300:]}
    cd = compare_magnitude(sets, reference="a", n_scales=6)
    cf = compare_magnitude(sets, reference="a", n_scales=6, method="matrix-free")
    assert cf.mag_diff["b"] == pytest.approx(cd.mag_diff["b"], rel=1e-7)


def test_matrix_free_merges_duplicates_and_other_metrics(rng):
    X = _mixture(rng, 200, 3)
    with pytest.warns(DuplicatesMergedWarning, match="5 duplicate rows"):
        f = magnitude_function(np.vstack([X, X[:5]]), [0.5, 2.0], method="matrix-free")
    g = magnitude_function(X, [0.5, 2.0], method="dense")
    np.testing.assert_allclose(f.values, g.values, rtol=1e-9)
    X8 = _mixture(rng, 200, 8)  # the cosine distance of 3-D points makes Z_t singular
    for data, metric, kw, ts in ((X, "cityblock", {}, [1.0, 3.0]), (X, "minkowski", {"p": 1.5}, [1.0, 3.0]),
                                 (X8, "cosine", {}, [20.0, 60.0])):  # cosine distances are at most 2
        a = magnitude_function(data, ts, metric=metric, method="matrix-free", **kw)
        b = magnitude_function(data, ts, metric=metric, method="dense", **kw)
        np.testing.assert_allclose(a.values, b.values, rtol=1e-8)
        assert np.all(np.abs(a.values - b.values) <= a.errors + b.errors + 8 * EPS * b.values)
    U = X8 / np.linalg.norm(X8, axis=1, keepdims=True)
    with pytest.warns(DuplicatesMergedWarning, match="cosine distance 0"):
        magnitude_function(np.vstack([U, 3 * U[:2]]), [5.0], metric="cosine", method="matrix-free")


def test_magnitude_method_says_which_path_a_size_takes(cloud):
    budget = int(0.6 * 24 * cloud.shape[0] ** 2)
    with config_context(memory_budget=budget):
        assert magnitude_method(cloud.shape[0]) == "matrix-free"
        assert magnitude_function(cloud[:, :2], [1.0]).method == "matrix-free"
        assert magnitude_method(cloud.shape[0] // 2) == "dense"
        assert magnitude_function(cloud[: cloud.shape[0] // 2], [1.0]).method == "dense"
        assert magnitude_method(cloud.shape[0], method="dense") == "dense"
        assert magnitude_method(cloud.shape[0], "precomputed") == "dense"
    for bad, match in ((0, "n_points must be an integer >= 1"), (2.5, "n_points must be an integer")):
        with pytest.raises(DiversityInputError, match=match):
            magnitude_method(bad)
    with pytest.raises(DiversityInputError, match="unknown metric 'foo'"):
        magnitude_method(10, "foo")
    with pytest.raises(DiversityInputError, match="precomputed D is already an n x n matrix"):
        magnitude_method(10, "precomputed", method="matrix-free")


def test_method_errors(rng):
    X = rng.normal(size=(20, 2))
    with pytest.raises(DiversityInputError, match="unknown method 'sparse'"):
        magnitude_function(X, [1.0], method="sparse")
    D = np.abs(X[:, None, 0] - X[None, :, 0])
    with pytest.raises(DiversityInputError, match="precomputed D is already an n x n matrix"):
        magnitude_function(D, [1.0], metric="precomputed", method="matrix-free")
    with pytest.raises(DiversityInputError, match="derivatives and positive magnitude need the dense path"):
        magnitude_function(X, [1.0], derivatives=True, method="matrix-free")
    with config_context(memory_budget=1000):
        with pytest.raises(MemoryBudgetError, match="matrix-free magnitude of 20 points"):
            magnitude_function(X, [1.0])


def test_exact_flags_follow_the_stated_error(rng):
    f = magnitude_function(rng.normal(size=(30, 2)), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(f.exact, ~(f.ill_conditioned | f.singular))
    assert not f.exact.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = spread_function(rng.normal(size=(30, 2)), [1.0])
    assert math.isfinite(s.values[0])


def test_spread_matrix_free_equals_dense(rng):
    X = _mixture(rng, 300, 4)
    a = spread_function(X, n_scales=6, method="matrix-free")
    b = spread_function(X, n_scales=6, method="dense")
    assert a.t_conv == pytest.approx(b.t_conv, rel=1e-12)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-12)
