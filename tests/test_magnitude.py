"""Tests of diversity_core.magnitude: closed forms, invariances, magnipy oracle values, errors, CLI."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import trapezoid
from scipy.sparse.csgraph import shortest_path
from scipy.spatial.distance import cdist

from diversity_core._config import config_context
from diversity_core.exceptions import (
    ConvergenceWarning,
    DiversityInputError,
    DiversityWarning,
    DuplicatesMergedWarning,
    MemoryBudgetError,
    NumericalError,
)
from diversity_core.magnitude import (
    ACCURACY_RTOL,
    MagnitudeFunction,
    compare_magnitude,
    convergence_scale,
    mag_area,
    mag_diff,
    magnitude_at,
    magnitude_function,
    magnitude_weights,
)
from diversity_core.magnitude._metric import _merge_duplicates
from diversity_core.magnitude._scales import _area, _convergence_scale_of, _magnitude_values

EPS = np.finfo(np.float64).eps
REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).parent / "fixtures" / "magnipy_reference.json"


def _solve_mag(D: np.ndarray, t: float) -> float:
    """Plain numpy reference: sum of Z_t^{-1} 1."""
    return float(np.linalg.solve(np.exp(-t * D), np.ones(D.shape[0])).sum())


def _mixture(rng, n: int, d: int, k: int = 3) -> np.ndarray:
    centres = rng.normal(size=(k, d)) * 3.0
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d))


# ------------------------------------------------------------------------------------------
# Closed forms
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [0.3, 1.0, 7.5])
@pytest.mark.parametrize("t", [1e-3, 0.2, 1.0, 4.0, 40.0])
def test_two_points_closed_form(d, t):
    """Two points at distance d: Mag(t) = 2 / (1 + exp(-t d))."""
    value = magnitude_at([[0.0, 0.0], [d, 0.0]], t)
    assert value == pytest.approx(2.0 / (1.0 + math.exp(-t * d)), rel=1e-10)


@pytest.mark.parametrize("t", [0.01, 0.1, 0.5, 2.0, 20.0])
def test_points_on_a_line(rng, t):
    """Points on a line with gaps g_i: Mag(t) = 1 + sum_i tanh(t g_i / 2)."""
    x = np.sort(rng.uniform(0.0, 20.0, size=40))
    gaps = np.diff(x)
    expected = 1.0 + np.tanh(t * gaps / 2.0).sum()
    assert magnitude_at(x[:, None], t) == pytest.approx(expected, rel=1e-10)
    assert magnitude_at(x[:, None], t, metric="cityblock") == pytest.approx(expected, rel=1e-10)


def test_line_function_on_grid(rng):
    """The evenly spaced grid (Z_{t_k} = Z_{t_1}^k by products) matches the closed form."""
    x = np.sort(rng.uniform(0.0, 10.0, size=60))
    f = magnitude_function(x[:, None], t_cut=5.0, n_scales=21)
    expected = 1.0 + np.tanh(np.outer(f.ts, np.diff(x)) / 2.0).sum(axis=1)
    np.testing.assert_allclose(f.values, expected, rtol=1e-10)
    assert f.values[0] == 1.0 and f.ts[0] == 0.0
    assert not f.ill_conditioned.any() and not f.singular.any()


def test_equidistant_points_convergence_scale():
    """n points at mutual distance 1: Mag = n / (1 + (n - 1) e^{-t}), so t_conv = ln(19 (n - 1))."""
    n = 12
    X = np.eye(n) / math.sqrt(2.0)
    assert convergence_scale(X) == pytest.approx(math.log(19.0 * (n - 1)), rel=1e-10)
    assert magnitude_at(X, 1.3) == pytest.approx(n / (1 + (n - 1) * math.exp(-1.3)), rel=1e-12)


def test_two_points_convergence_scale():
    """Mag(t) = 2 / (1 + e^{-t d}) = 1.9 at t = ln(19) / d."""
    assert convergence_scale([[0.0], [2.5]]) == pytest.approx(math.log(19.0) / 2.5, rel=1e-10)
    assert convergence_scale([[0.0], [2.5]], fraction=0.8) == pytest.approx(math.log(4.0) / 2.5, rel=1e-10)


def test_mag_area_two_points_trapezoid():
    """MagArea is the trapezoid rule on evenly spaced scales; area_scaled = area / t_cut."""
    d, t_cut = 1.5, 3.0
    res = mag_area([[0.0], [d]], t_cut=t_cut, n_scales=30)
    ts = np.linspace(0.0, t_cut, 30)
    expected = trapezoid(2.0 / (1.0 + np.exp(-ts * d)), ts)
    assert res.area == pytest.approx(expected, rel=1e-12)
    assert res.area_scaled == pytest.approx(expected / t_cut, rel=1e-12)
    assert res.t_cut == t_cut
    fine = mag_area([[0.0], [d]], t_cut=t_cut, n_scales=3001).area
    exact = 2.0 * (t_cut + (math.log1p(math.exp(-t_cut * d)) - math.log(2.0)) / d)
    assert fine == pytest.approx(exact, rel=1e-7)


# ------------------------------------------------------------------------------------------
# Agreement with a plain solve, invariances
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "cosine"])
def test_agrees_with_numpy_solve(rng, metric):
    X = _mixture(rng, 150, 6) + 1.0
    D = cdist(X, X, metric=metric)
    t_conv = convergence_scale(X, metric=metric)
    ts = t_conv * np.array([0.1, 0.35, 0.7, 1.0, 1.5])
    f = magnitude_function(X, ts, metric=metric)
    expected = [_solve_mag(D, t) for t in ts]
    np.testing.assert_allclose(f.values, expected, rtol=1e-9)
    assert np.all(f.errors / f.values < ACCURACY_RTOL)
    assert _solve_mag(D, t_conv) == pytest.approx(0.95 * 150, rel=1e-10)


def test_weights_solve_the_system(rng):
    X = rng.normal(size=(80, 4))
    D = cdist(X, X)
    res = magnitude_weights(X, 0.8)
    np.testing.assert_allclose(np.exp(-0.8 * D) @ res.weighting, np.ones(80), atol=1e-9)
    assert res.value == pytest.approx(res.weighting.sum(), rel=1e-12)
    np.testing.assert_array_equal(res.indices, np.arange(80))
    assert res.error >= 0 and not res.ill_conditioned and not res.singular


@pytest.mark.parametrize("c", [0.25, 3.0])
def test_scaling_distances_rescales_scales(rng, c):
    """Mag_{cD}(t) = Mag_D(c t), and so t_conv(cD) = t_conv(D) / c."""
    X = rng.normal(size=(70, 3))
    D = cdist(X, X)
    ts = np.array([0.1, 0.5, 1.0, 2.0])
    scaled = magnitude_function(c * D, ts, metric="precomputed").values
    plain = magnitude_function(D, c * ts, metric="precomputed").values
    np.testing.assert_allclose(scaled, plain, rtol=1e-11)
    assert convergence_scale(c * D, metric="precomputed") == pytest.approx(
        convergence_scale(D, metric="precomputed") / c, rel=1e-9
    )


def test_permutation_invariance(rng):
    X = rng.normal(size=(60, 3))
    perm = rng.permutation(60)
    assert magnitude_at(X[perm], 0.9) == pytest.approx(magnitude_at(X, 0.9), rel=1e-12)


def test_limits(rng):
    X = rng.normal(size=(30, 2))
    assert magnitude_at(X, 0.0) == 1.0
    assert magnitude_at(X, 1e4) == pytest.approx(30.0, rel=1e-12)
    assert magnitude_at([[1.0, 2.0]], 3.0) == 1.0


def test_function_is_monotone_on_a_cloud(rng):
    f = magnitude_function(_mixture(rng, 200, 5), n_scales=30)
    assert np.all(np.diff(f.values) > 0)
    assert f.values[-1] == pytest.approx(0.95 * 200, rel=1e-9)
    assert f.t_conv == f.ts[-1]


def test_large_n_code_paths_on_small_data(monkeypatch, rng):
    """The blocked Cholesky (used above 1 GiB) and stale-factor preconditioning give the same curve."""
    mod = importlib.import_module("diversity_core.magnitude._solvers")

    X = _mixture(rng, 300, 4)
    ref = magnitude_function(X, n_scales=12)
    monkeypatch.setattr(mod, "_LAPACK_MAX_BYTES", 1000)
    monkeypatch.setattr(mod, "_CHOL_BLOCK", 64)
    monkeypatch.setattr(mod, "_STALE_MIN_N", 0)
    f = magnitude_function(X, ref.ts)
    np.testing.assert_allclose(f.values, ref.values, rtol=1e-10)
    assert f.max_rel_error < ACCURACY_RTOL
    A = np.exp(-0.3 * cdist(X, X)).astype(np.float32)
    L = A.copy()
    assert mod._blocked_cholesky(L)
    np.testing.assert_allclose(np.tril(L).astype(np.float64), np.linalg.cholesky(A.astype(np.float64)), atol=1e-4)
    bad = np.eye(100)
    bad[50, 50] = -1.0
    assert not mod._blocked_cholesky(bad)


# ------------------------------------------------------------------------------------------
# Duplicates (twin property)
# ------------------------------------------------------------------------------------------


def test_duplicates_have_the_magnitude_of_distinct_rows(rng):
    X = rng.normal(size=(40, 3))
    repeated = np.vstack([X, X[[3, 7, 7, 20]]])[rng.permutation(44)]
    with pytest.warns(DuplicatesMergedWarning, match=r"4 duplicate rows .* 40 distinct points"):
        res = magnitude_weights(repeated, 0.7)
    assert res.n_points == 44 and res.n_distinct == 40 and res.n_merged == 4
    assert res.value == pytest.approx(magnitude_at(X, 0.7), rel=1e-12)
    # first occurrences, in input order
    _, first = np.unique(repeated, axis=0, return_index=True)
    np.testing.assert_array_equal(res.indices, np.sort(first))


def test_duplicates_in_function_and_precomputed(rng):
    X = rng.normal(size=(25, 2))
    Xd = np.vstack([X, X[:5]])
    with pytest.warns(DuplicatesMergedWarning, match="duplicate rows"):
        f = magnitude_function(Xd, n_scales=8)
    assert (f.n_points, f.n_distinct, f.n_merged) == (30, 25, 5)
    np.testing.assert_allclose(f.values, magnitude_function(X, n_scales=8).values, rtol=1e-11)
    D = cdist(Xd, Xd)
    with pytest.warns(DuplicatesMergedWarning, match="distance 0"):
        g = magnitude_function(D, f.ts, metric="precomputed")
    np.testing.assert_allclose(g.values, f.values, rtol=1e-11)


def test_cosine_merges_parallel_rows():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    with pytest.warns(DuplicatesMergedWarning, match="cosine distance 0"):
        res = magnitude_weights(X, 2.0, metric="cosine")
    assert res.n_distinct == 3
    np.testing.assert_array_equal(res.indices, [0, 1, 3])


# ------------------------------------------------------------------------------------------
# Oracle: magnipy 1.0.0 (values stored by benchmarks/magnipy_env.py)
# ------------------------------------------------------------------------------------------

_ORACLE = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("case", _ORACLE["cases"], ids=lambda c: c["name"])
def test_magnipy_oracle(case):
    data = np.asarray(case["input"])
    metric = case["metric"]
    kw = case.get("metric_kwargs", {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicatesMergedWarning)
        f = magnitude_function(data, case["ts_refined"], metric=metric, **kw)
        t_conv = convergence_scale(data, metric=metric, **kw)
        area = mag_area(data, metric=metric, **kw)
    assert f.n_distinct == case["n_distinct"]
    np.testing.assert_allclose(f.values, case["magnitude_refined"], rtol=1e-8)
    assert t_conv == pytest.approx(case["t_conv_refined"], rel=1e-7)
    assert t_conv == pytest.approx(case["t_conv"], rel=1e-5)  # magnipy's own TOMS 748 tolerance
    assert area.area == pytest.approx(case["mag_area_refined"], rel=1e-7)
    assert area.area == pytest.approx(case["mag_area"], rel=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicatesMergedWarning)
        on_magnipy_grid = magnitude_function(data, case["ts"], metric=metric, **kw)
    np.testing.assert_allclose(on_magnipy_grid.values, case["magnitude"], rtol=1e-8)


def test_magnipy_oracle_mag_diff():
    ref = _ORACLE["mag_diff"]
    res = mag_diff(np.asarray(ref["X"]), np.asarray(ref["Y"]), t_cut=ref["t_cut"], n_scales=ref["n_scales"])
    assert res.value > 0
    assert res.value == pytest.approx(ref["value"], rel=1e-8)


# ------------------------------------------------------------------------------------------
# MagArea / MagDiff / comparisons
# ------------------------------------------------------------------------------------------


def test_compare_reference_free_uses_median_t_conv(rng):
    sets = {"wide": 2.0 * rng.normal(size=(50, 3)), "mid": rng.normal(size=(50, 3)),
            "narrow": 0.5 * rng.normal(size=(50, 3))}
    comp = compare_magnitude(sets, n_scales=12)
    t_convs = {k: convergence_scale(v) for k, v in sets.items()}
    for k in sets:
        assert comp.t_conv[k] == pytest.approx(t_convs[k], rel=1e-9)
    assert comp.t_cut == pytest.approx(np.median(list(t_convs.values())), rel=1e-12)
    assert comp.t_cut_rule == "median t_conv" and comp.reference is None
    assert comp.candidates == ("wide", "mid", "narrow") and comp.mag_diff == {}
    for k in sets:
        assert comp.areas[k] == pytest.approx(mag_area(sets[k], t_cut=comp.t_cut, n_scales=12).area, rel=1e-11)
        assert comp.areas_scaled[k] == pytest.approx(comp.areas[k] / comp.t_cut, rel=1e-14)
    assert comp.areas["wide"] > comp.areas["mid"] > comp.areas["narrow"]


def test_compare_with_reference(rng):
    real = rng.normal(size=(60, 4))
    sets = {"real": real, "collapsed": 0.6 * real, "spread": 1.4 * rng.normal(size=(60, 4))}
    comp = compare_magnitude(sets, reference="real", n_scales=10)
    assert comp.t_cut == pytest.approx(comp.t_conv["real"], rel=1e-15)
    assert comp.t_cut_rule == "reference t_conv"
    assert comp.reference == "real" and comp.candidates == ("collapsed", "spread")
    assert set(comp.mag_diff) == {"collapsed", "spread"}
    for k in comp.candidates:
        diff = comp.areas[k] - comp.areas["real"]
        assert comp.mag_diff[k] == pytest.approx(diff, rel=1e-14)
        assert comp.mag_diff_scaled[k] == pytest.approx(diff / comp.t_cut, rel=1e-14)
        assert comp.mag_diff_relative[k] == pytest.approx(diff / comp.areas["real"], rel=1e-14)
    assert comp.mag_diff["collapsed"] < 0 < comp.mag_diff["spread"]
    json.dumps(comp.to_dict())


def test_mag_diff_signs_and_reference(rng):
    X, Y = rng.normal(size=(40, 2)), 0.5 * rng.normal(size=(40, 2))
    xy = mag_diff(X, Y)  # reference Y
    assert xy.reference == "Y" and xy.t_cut == pytest.approx(convergence_scale(Y), rel=1e-9)
    assert xy.value == pytest.approx(xy.area_x - xy.area_y, rel=1e-14)
    assert xy.relative == pytest.approx(xy.value / xy.area_y, rel=1e-14)
    yx = mag_diff(Y, X, reference="X")
    assert yx.t_cut == pytest.approx(xy.t_cut, rel=1e-14)
    assert yx.value == pytest.approx(-xy.value, rel=1e-12)
    assert mag_diff(X, X, t_cut=1.0).value == 0.0
    free = mag_diff(X, Y, reference=None)
    assert free.t_cut == pytest.approx(0.5 * (free.t_conv_x + free.t_conv_y), rel=1e-12)
    assert math.isnan(free.relative)


def test_progress_reports_every_scale(rng):
    calls = []
    magnitude_function(rng.normal(size=(40, 2)), n_scales=7, progress=lambda d, t, m: calls.append((d, t, m)))
    assert [c[0] for c in calls] == list(range(0, 8))
    assert all(c[1] == 7 for c in calls) and "scale 6 of 6" in calls[-1][2]
    comp_calls = []
    compare_magnitude({"a": rng.normal(size=(20, 2)), "b": rng.normal(size=(20, 2))}, n_scales=4,
                      progress=lambda d, t, m: comp_calls.append((d, t)))
    assert comp_calls[-1] == (8, 8) and all(b >= a for a, b in zip([c[0] for c in comp_calls],
                                                                     [c[0] for c in comp_calls][1:]))


def test_results_to_dict_are_json(rng):
    f = magnitude_function(rng.normal(size=(20, 2)), n_scales=5)
    assert isinstance(f, MagnitudeFunction)
    d = json.loads(json.dumps(f.to_dict()))
    assert set(d) >= {"ts", "values", "errors", "ill_conditioned", "singular", "t_conv", "n_distinct"}
    json.dumps(magnitude_weights(rng.normal(size=(5, 2)), 1.0).to_dict())
    json.dumps(mag_area(rng.normal(size=(10, 2)), t_cut=1.0).to_dict())


# ------------------------------------------------------------------------------------------
# Numerically singular / ill-conditioned: said, never jittered
# ------------------------------------------------------------------------------------------


def _circle_directions(rng, n=60):
    theta = rng.uniform(0.0, 2.0 * np.pi, n)
    return np.c_[np.cos(theta), np.sin(theta)] * rng.uniform(0.5, 2.0, n)[:, None]


def test_singular_cosine_raises_or_flags(rng):
    """exp(-t cosine) on 2-D directions is numerically singular at small t."""
    X = _circle_directions(rng)
    with pytest.raises(NumericalError, match="numerically singular at t = 0.5"):
        magnitude_at(X, 0.5, metric="cosine")
    with pytest.warns(ConvergenceWarning, match="numerically singular at 1 and ill-conditioned"):
        f = magnitude_function(X, [0.0, 0.5, 50.0, 2e4], metric="cosine")
    assert f.singular.tolist() == [False, True, False, False]
    assert math.isnan(f.values[1]) and f.ill_conditioned[2] and not f.ill_conditioned[3]
    with pytest.raises(NumericalError, match="numerically singular"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mag_area(X, t_cut=10.0, metric="cosine", n_scales=3)


def _k32_distances() -> np.ndarray:
    """Shortest-path metric of the complete bipartite graph K_{3,2} (not a Euclidean metric)."""
    A = np.zeros((5, 5))
    A[:3, 3:] = A[3:, :3] = 1.0
    return shortest_path(A, unweighted=True)


def test_invertible_indefinite_z_is_solved_by_lu():
    """Issue 14, defect 2: Z_0.2 of K_{3,2} is invertible (cond ~145) but not positive definite."""
    D = _k32_distances()
    Z = np.exp(-0.2 * D)
    assert np.linalg.eigvalsh(Z)[0] < 0 < np.linalg.eigvalsh(Z)[1] and np.linalg.cond(Z) < 200
    expected = float(np.linalg.solve(Z, np.ones(5)).sum())
    assert expected == pytest.approx(1.1801, abs=1e-4)
    res = magnitude_weights(D, 0.2, metric="precomputed")
    assert res.method == "lu" and not res.singular and not res.ill_conditioned
    assert res.value == pytest.approx(expected, rel=64 * EPS)
    assert 0 < res.error <= 1e3 * EPS * res.value
    np.testing.assert_allclose(Z @ res.weighting, np.ones(5), rtol=0, atol=16 * EPS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiversityWarning)  # neither singular nor ill-conditioned
        assert magnitude_at(D, 0.2, metric="precomputed") == pytest.approx(expected, rel=64 * EPS)
        ts = [0.0, 0.1, 0.2, 0.35, 1.0, 3.0]
        f = magnitude_function(D, ts, metric="precomputed")
    np.testing.assert_allclose(f.values[1:], [_solve_mag(D, t) for t in ts[1:]], rtol=1e-12)
    assert f.methods[2] == "lu" and not f.singular.any() and not f.ill_conditioned.any()
    t_conv = convergence_scale(D, metric="precomputed")
    assert _solve_mag(D, t_conv) == pytest.approx(0.95 * 5, rel=1e-10)


def test_singular_z_says_why(rng):
    with pytest.raises(NumericalError, match=r"singular at t = 0.5 \(LAPACK estimates its reciprocal condition"):
        magnitude_at(_circle_directions(rng), 0.5, metric="cosine")


def test_ill_conditioned_single_scale_warns(rng):
    X = _circle_directions(rng)
    with pytest.warns(ConvergenceWarning, match="estimated relative error"):
        magnitude_at(X, 50.0, metric="cosine")
    res = magnitude_weights(X, 50.0, metric="cosine")
    assert res.ill_conditioned and res.error / res.value > ACCURACY_RTOL


def test_near_duplicates_are_accurate_not_flagged(rng):
    """A near-duplicate pair makes Z nearly singular but leaves Mag well-conditioned."""
    X = np.vstack([rng.normal(size=(30, 2)), [[0.0, 0.0], [1e-13, 0.0]]])
    D = cdist(X, X)
    res = magnitude_weights(X, 1.0)
    assert not res.ill_conditioned
    pair = 2.0 / (1.0 + math.exp(-1e-13))
    assert magnitude_at(np.array([[0.0], [1e-13]]), 1.0) == pytest.approx(pair, rel=1e-12)
    assert res.value == pytest.approx(_solve_mag(D, 1.0), rel=1e-6)


# ------------------------------------------------------------------------------------------
# Input errors
# ------------------------------------------------------------------------------------------


def test_input_errors(rng):
    X = rng.normal(size=(10, 2))
    with pytest.raises(DiversityInputError, match="unknown metric 'minkowsky'"):
        magnitude_at(X, 1.0, metric="minkowsky")
    with pytest.raises(DiversityInputError, match="t must be a finite number >= 0"):
        magnitude_at(X, -1.0)
    with pytest.raises(DiversityInputError, match="NaN or infinite"):
        magnitude_at(np.array([[0.0, np.nan], [1.0, 1.0]]), 1.0)
    with pytest.raises(DiversityInputError, match="must be 2-D"):
        magnitude_at(np.arange(5.0), 1.0)
    D = cdist(X, X)
    with pytest.raises(DiversityInputError, match="must be symmetric"):
        magnitude_at(D + np.triu(np.ones_like(D)), 1.0, metric="precomputed")
    with pytest.raises(DiversityInputError, match="zero diagonal"):
        magnitude_at(D + np.eye(10), 1.0, metric="precomputed")
    with pytest.raises(DiversityInputError, match="must be square"):
        magnitude_at(D[:5], 1.0, metric="precomputed")
    bad = D.copy()
    bad[0, 1] = bad[1, 0] = 0.0
    with pytest.raises(DiversityInputError, match=r"D\[0, 1\] = 0 but rows 0 and 1 of D differ"):
        magnitude_at(bad, 1.0, metric="precomputed")
    with pytest.raises(DiversityInputError, match="all-zero rows; rows 0"):
        magnitude_at(np.vstack([np.zeros(2), X]), 1.0, metric="cosine")
    with pytest.raises(DiversityInputError, match="either ts .* or t_max"), pytest.warns(DeprecationWarning):
        magnitude_function(X, [1.0], t_max=2.0)
    with pytest.raises(DiversityInputError, match="n_scales must be an integer from 2 to 10000"):
        magnitude_function(X, n_scales=1)
    with pytest.raises(DiversityInputError, match="ts must be finite scales"):
        magnitude_function(X, [0.0, -1.0])
    with pytest.raises(DiversityInputError, match="fraction must be a number above 0 below 1"):
        convergence_scale(X, fraction=1.0)
    with pytest.raises(DiversityInputError, match="fraction \\* n_distinct > 1"):
        convergence_scale(X[:1])
    with pytest.raises(DiversityInputError, match="reference 'z' is not one of the sets"):
        compare_magnitude({"a": X, "b": X}, reference="z")
    with pytest.raises(DiversityInputError, match="non-empty mapping"):
        compare_magnitude({})
    with pytest.raises(DiversityInputError, match="unknown reference 'Z'"):
        mag_diff(X, X, reference="Z")
    with pytest.raises(DiversityInputError, match="t_cut must be a finite number > 0"):
        mag_area(X, t_cut=0.0)


# ------------------------------------------------------------------------------------------
# The package, the renamed function and the deprecated names
# ------------------------------------------------------------------------------------------

#: Values of the former ``magnitude`` (before the split into a package) on a fixed point cloud.
_OLD_VALUES = {
    "euclidean": (3.160176354532669, 15.016519458320069, 37.68730612943556),
    "cityblock": (4.75941797295796, 22.53669667160244, 39.38273425959813),
}


def test_magnitude_is_a_module():
    import diversity_core as dc
    import diversity_core.magnitude as m

    assert isinstance(m, types.ModuleType) and m.__name__ == "diversity_core.magnitude"
    assert dc.magnitude is m is importlib.import_module("diversity_core.magnitude")
    assert dc.magnitude_at is m.magnitude_at
    assert "magnitude_at" in dc.__all__ and "magnitude" not in dc.__all__ and "magnitude" not in m.__all__
    for name in m.__all__:
        assert getattr(dc, name, getattr(m, name)) is getattr(m, name)


@pytest.mark.parametrize("metric", sorted(_OLD_VALUES))
def test_magnitude_at_equals_the_old_values(metric):
    X = np.random.default_rng(7).normal(size=(40, 3))
    for t, old in zip((0.5, 2.0, 8.0), _OLD_VALUES[metric]):
        assert magnitude_at(X, t, metric=metric) == pytest.approx(old, rel=64 * EPS)
    assert convergence_scale(X) == pytest.approx(8.382213329823442, rel=1e-10)
    assert mag_area(X, n_scales=12).area == pytest.approx(211.02718541653135, rel=1e-10)


def test_deprecated_names_warn_and_forward(rng):
    import diversity_core as dc
    import diversity_core.magnitude as m

    X = rng.normal(size=(20, 2))
    expected = magnitude_at(X, 0.8)
    with pytest.warns(DeprecationWarning, match="use diversity_core.magnitude_at"):
        assert m.magnitude(X, 0.8) == expected
    with pytest.warns(DeprecationWarning, match="use diversity_core.magnitude_at"):
        assert dc.magnitude(X, 0.8, metric="euclidean") == expected  # the module itself, called
    res = magnitude_weights(X, 0.8)
    with pytest.warns(DeprecationWarning, match="use MagnitudeResult.weighting"):
        np.testing.assert_array_equal(res.weights, res.weighting)
    with pytest.warns(DeprecationWarning, match="t_max= is deprecated; use t_cut="):
        old = magnitude_function(X, t_max=2.0, n_scales=5)
    np.testing.assert_array_equal(old.values, magnitude_function(X, t_cut=2.0, n_scales=5).values)
    with pytest.raises(DiversityInputError, match="t_cut or its deprecated alias t_max, not both"), \
            pytest.warns(DeprecationWarning):
        magnitude_function(X, t_cut=1.0, t_max=2.0)
    with pytest.raises(AttributeError, match="no attribute 'magnitde'"):
        m.magnitde  # noqa: B018


def test_result_arrays_are_read_only(rng):
    X = rng.normal(size=(15, 2))
    ts = np.array([0.0, 0.5, 1.0])
    f = magnitude_function(X, ts)
    for a in (f.ts, f.values, f.errors, f.ill_conditioned, f.singular):
        assert not a.flags.writeable
    assert ts.flags.writeable  # the caller's scales are copied, not frozen
    res = magnitude_weights(X, 1.0)
    assert not res.weighting.flags.writeable and not res.indices.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        f.values[0] = 2.0


# ------------------------------------------------------------------------------------------
# Private computes shared with diversity_core.compare
# ------------------------------------------------------------------------------------------


def test_area_is_the_trapezoid_with_a_partial_last_step():
    ts = np.array([0.0, 1.0, 2.0, 3.0])
    v = np.array([1.0, 3.0, 4.0, 8.0])
    # whole steps: (1 + 3) / 2 + (3 + 4) / 2 + (4 + 8) / 2
    assert _area(ts, v, 3.0) == 2.0 + 3.5 + 6.0
    assert _area(ts, v, 2.0) == 2.0 + 3.5
    # t_end = 2.5: the value there is 4 + 0.5 * (8 - 4) = 6, and the last step adds 0.5 * (4 + 6) / 2
    assert _area(ts, v, 2.5) == pytest.approx(2.0 + 3.5 + 2.5, rel=4 * EPS)
    # inside the first step: 0.25 * (1 + 1.5) / 2
    assert _area(ts, v, 0.25) == pytest.approx(0.3125, rel=4 * EPS)
    assert _area(ts, v, 0.0) == 0.0
    # a grid end rounded just below t_end counts as the end
    assert _area(ts, v, 3.0 * (1 + 1e-14)) == 11.5


def test_mag_area_and_mag_diff_use_the_one_area(rng):
    X, Y = rng.normal(size=(30, 2)), 0.7 * rng.normal(size=(30, 2))
    res = mag_area(X, t_cut=2.0, n_scales=9)
    assert res.area == _area(res.function.ts, res.function.values, 2.0)
    d = mag_diff(X, Y, t_cut=2.0, n_scales=9)
    ts = d.function_x.ts
    assert d.value == _area(ts, d.function_x.values, 2.0) - _area(ts, d.function_y.values, 2.0)


def test_private_computes_match_the_public_functions(rng):
    X = np.vstack([rng.normal(size=(30, 3)) + 2.0, [[4.0, 4.0, 4.0]], [[2.0, 2.0, 2.0]]])  # two parallel rows
    ts = np.array([0.0, 2.0, 0.5, 1.0])
    with warnings.catch_warnings(record=True) as public:
        warnings.simplefilter("always")
        f = magnitude_function(X, ts, metric="cosine")
        t_conv = convergence_scale(X, metric="cosine")
    assert {DuplicatesMergedWarning, ConvergenceWarning} <= {w.category for w in public}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        curve = _magnitude_values(X, ts, "cosine")
        t_private = _convergence_scale_of(X, "cosine")
    # (a ResourceWarning of the memory-budget lookup is not the compute's)
    assert [w for w in caught if issubclass(w.category, (DiversityWarning, RuntimeWarning))] == []
    np.testing.assert_array_equal(curve.values, f.values)
    np.testing.assert_array_equal(curve.ts, ts)
    assert curve.n_merged == 1 and curve.n_distinct == 31 and not curve.singular.any()
    assert t_private == t_conv
    Xd = np.vstack([X[:10], X[[2, 2, 5]], -0.0 * X[:1] + X[:1]])
    rows, n_merged, keep = _merge_duplicates(Xd)
    assert n_merged == 4 and rows.shape == (10, 3)
    np.testing.assert_array_equal(keep, np.arange(10))
    np.testing.assert_array_equal(rows, X[:10])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("d", [1, 3, 384, 5000])
def test_merge_duplicates_equals_np_unique(rng, dtype, d):
    """Issue 22: the hash-and-compare dedup gives np.unique(X, axis=0)'s first occurrences."""
    X = rng.integers(-2, 3, size=(60, d)).astype(dtype)  # few distinct values: chance repeats
    X[40:50] = X[rng.integers(0, 40, 10)]
    X[X == 0] = -0.0  # every zero as -0.0 ...
    X[50] = X[3] + 0.0  # ... but here: equal to row 3 as numbers, not as bits
    X[51] = 0.0
    X[52] = -0.0
    rows, n_merged, keep = _merge_duplicates(X)
    _, first = np.unique(X + 0.0, axis=0, return_index=True)
    np.testing.assert_array_equal(keep, np.sort(first))
    assert n_merged == 60 - keep.size and rows.dtype == X.dtype
    np.testing.assert_array_equal(rows, X[keep])
    assert not np.signbit(rows[rows == 0]).any()  # -0.0 written as 0.0


def test_merge_duplicates_survives_hash_collisions(rng, monkeypatch):
    from diversity_core.magnitude import _metric

    X = rng.integers(0, 2, size=(30, 4)).astype(np.float64)
    _, first = np.unique(X, axis=0, return_index=True)
    monkeypatch.setattr(_metric, "_row_hashes", lambda A: np.zeros(A.shape[0], dtype=np.uint64))
    np.testing.assert_array_equal(_merge_duplicates(X)[2], np.sort(first))


# ------------------------------------------------------------------------------------------
# Memory budget
# ------------------------------------------------------------------------------------------


def test_memory_budget_refuses_large_matrices(rng):
    X = rng.normal(size=(300, 2))  # 3 float64 300 x 300 arrays: 2.1 MB
    with config_context(memory_budget="1M"):
        with pytest.raises(MemoryBudgetError, match=r"magnitude of 300 points \(3 float64 300 x 300 arrays"):
            magnitude_at(X, 1.0)
        with pytest.raises(MemoryBudgetError, match="over the memory budget of 1 MiB"):
            magnitude_function(cdist(X, X), [1.0], metric="precomputed")
        with pytest.raises(MemoryBudgetError, match="magnitude of 300 points"):
            _magnitude_values(X, np.array([1.0]), "euclidean")
        assert magnitude_at(X[:150], 1.0) == pytest.approx(magnitude_at(X[:150], 1.0))  # 540 kB fits


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diversity_core.cli", "magnitude", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_cli_table_and_json(tmp_path, rng):
    path = tmp_path / "points.npy"
    X = rng.normal(size=(50, 3))
    np.save(path, X)
    out = _cli(str(path), "--n-scales", "6")
    assert out.returncode == 0, out.stderr
    assert "t_conv" in out.stdout and "MagArea" in out.stdout and "Mag[all]" in out.stdout
    out = _cli(str(path), "--n-scales", "6", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (entry,) = data["sets"]
    assert entry["t_conv"] == pytest.approx(convergence_scale(X), rel=1e-9)
    assert entry["mag_area"] == pytest.approx(mag_area(X, n_scales=6).area, rel=1e-9)
    assert len(entry["curve"]["t"]) == 6 and entry["curve"]["magnitude"][0] == 1.0


def test_cli_groups_and_reference(tmp_path, rng):
    path = tmp_path / "groups.csv"
    rows = ["model,a,b"]
    for i in range(90):
        g = ("real", "small", "large")[i % 3]
        s = {"real": 1.0, "small": 0.5, "large": 2.0}[g]
        a, b = rng.normal(size=2) * s
        rows.append(f"{g},{float(a)!r},{float(b)!r}")
    path.write_text("\n".join(rows) + "\n")
    out = _cli(str(path), "--group-column", "model", "--reference", "real", "--n-scales", "5", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    roles = {s["name"]: s["role"] for s in data["sets"]}
    assert roles == {"real": "reference", "small": "candidate", "large": "candidate"}
    assert data["t_cut_rule"] == "reference t_conv" and data["reference"] == "real"
    by = {s["name"]: s for s in data["sets"]}
    assert data["t_cut"] == by["real"]["t_conv"]
    assert by["small"]["mag_diff"] < 0 < by["large"]["mag_diff"] and by["real"]["mag_diff"] is None
    table = _cli(str(path), "--group-column", "model", "--reference", "real", "--n-scales", "5")
    assert table.returncode == 0 and "MagDiff/ref" in table.stdout and "reference" in table.stdout


def test_cli_errors_exit_2(tmp_path, rng):
    path = tmp_path / "points.npy"
    np.save(path, rng.normal(size=(10, 2)))
    out = _cli(str(path), "--reference", "x")
    assert out.returncode == 2 and out.stderr.strip().splitlines()[-1].startswith("diversity: error: --reference")
    out = _cli(str(path), "--n-scales", "1")
    assert out.returncode == 2 and "n_scales must be an integer from 2 to 10000" in out.stderr
    assert "Traceback" not in out.stderr


def _float64_cholesky_magnitude(X: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Mag(t) by float64 Cholesky with two refinement steps and the variational formula (the reference)."""
    import scipy.linalg

    from diversity_core.magnitude._metric import _euclidean

    D, _ = _euclidean(X)
    ones = np.ones(X.shape[0])
    out = np.ones(ts.size)
    for j, t in enumerate(ts):
        if t > 0:
            Z = np.exp(-t * D)
            factor = scipy.linalg.cho_factor(Z)
            w = scipy.linalg.cho_solve(factor, ones)
            for _ in range(2):
                w += scipy.linalg.cho_solve(factor, ones - Z @ w)
            out[j] = w.sum() + w @ (ones - Z @ w)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_dense_stated_errors_cover_float64_cholesky(seed):
    # the CG error estimate uses the smallest Ritz value, which approaches lambda_min from above;
    # without a margin the stated error fell short of the true one on some of these clouds
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(300, 700)), int(rng.choice([2, 5, 16]))
    X = (rng.normal(size=(5, d)) * 3)[rng.integers(0, 5, n)] + rng.normal(size=(n, d))
    f = magnitude_function(X, method="dense")
    assert "cg" in f.methods
    truth = _float64_cholesky_magnitude(X, np.asarray(f.ts))
    true = np.abs(f.values - truth)
    assert np.all(true <= f.errors + 4 * np.finfo(float).eps * truth)
