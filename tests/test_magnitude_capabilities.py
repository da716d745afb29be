"""Tests of the magnipy capabilities of diversity_core.magnitude (issue 14) and the Tanimoto distance (issue 16).

Spread, the magnitude dimension profile, positive magnitude, every scipy distance with Minkowski
p, MagDiff on a common grid (signed and absolute), the all-pairs MagDiff matrix and log grids:
exact small cases, invariances, and magnipy 1.0.0's values (stored by
``benchmarks/magnipy_env.py fixtures``).
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist, squareform

import diversity_core
from diversity_core.exceptions import DiversityInputError, DuplicatesMergedWarning
from diversity_core.magnitude import (
    METRICS,
    compare_magnitude,
    convergence_scale,
    mag_diff,
    mag_diff_matrix,
    magnitude_at,
    magnitude_dimension,
    magnitude_function,
    magnitude_weights,
    spread_at,
    spread_function,
)

EPS = np.finfo(np.float64).eps
_ORACLE = json.loads((Path(__file__).parent / "fixtures" / "magnipy_reference.json").read_text())


def _solve_mag(D: np.ndarray, t: float) -> float:
    """Plain numpy reference: sum of Z_t^{-1} 1."""
    return float(np.linalg.solve(np.exp(-t * D), np.ones(D.shape[0])).sum())


# ------------------------------------------------------------------------------------------
# Spread
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.3, 1.0, 4.0])
def test_spread_two_points_and_homogeneous_spaces_equal_magnitude(t):
    assert spread_at([[0.0], [1.0]], t) == pytest.approx(2 / (1 + math.exp(-t)), rel=8 * EPS)
    D = 1.0 - np.eye(5)  # homogeneous: every row of Z_t has the same sum
    assert spread_at(D, t, metric="precomputed") == pytest.approx(5 / (1 + 4 * math.exp(-t)), rel=8 * EPS)
    assert spread_at(D, t, metric="precomputed") == pytest.approx(magnitude_at(D, t, metric="precomputed"),
                                                                  rel=1e-12)


def test_spread_definition_limits_and_duplicates(rng):
    X = rng.normal(size=(40, 3))
    D = cdist(X, X)
    ts = np.array([0.0, 0.5, 2.0, 1e4])
    s = spread_function(X, ts)
    expected = [np.sum(1.0 / np.exp(-t * D).sum(axis=1)) for t in ts]
    np.testing.assert_allclose(s.values, expected, rtol=1e-13)
    assert s.values[0] == 1.0 and s.values[-1] == pytest.approx(40, rel=1e-12)
    assert np.all(np.diff(s.values) > 0)
    with pytest.warns(DuplicatesMergedWarning, match="3 duplicate rows"):
        dup = spread_function(np.vstack([X, X[:3]]), ts)
    np.testing.assert_allclose(dup.values, s.values, rtol=1e-14)
    assert dup.n_merged == 3 and dup.n_points == 43


def test_spread_magnipy_oracle():
    ref = _ORACLE["spread"]
    X = np.asarray(ref["X"])
    np.testing.assert_allclose(spread_function(X, ref["ts_explicit"]).values, ref["values_explicit"], rtol=1e-12)
    np.testing.assert_allclose(spread_function(X, ref["ts"]).values, ref["values"], rtol=1e-12)
    own = spread_function(X)
    assert own.t_conv == pytest.approx(ref["t_conv"], rel=1e-5)  # magnipy's TOMS 748 tolerance
    assert own.values[-1] == pytest.approx(0.95 * X.shape[0], rel=1e-12)
    assert own.ts.size == 30 and own.ts[0] == 0.0


# ------------------------------------------------------------------------------------------
# Magnitude dimension and the exact derivative
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.5, 1.0, 3.0])
def test_dimension_profile_two_points_closed_form(t):
    # Mag = 2 / (1 + e^{-t}): d log Mag / d log t = t e^{-t} / (1 + e^{-t})
    r = magnitude_dimension([[0.0], [1.0]], ts=[0.0, t])
    assert r.profile[0] == 0.0
    assert r.profile[1] == pytest.approx(t * math.exp(-t) / (1 + math.exp(-t)), rel=1e-12)
    deriv = r.function.derivatives[1]
    assert deriv == pytest.approx(2 * math.exp(-t) / (1 + math.exp(-t)) ** 2, rel=1e-12)


def test_derivative_matches_finite_differences(rng):
    X = rng.normal(size=(60, 3))
    ts = np.array([0.4, 1.1, 3.0])
    f = magnitude_function(X, ts, derivatives=True)
    h = 1e-5
    for t, d in zip(ts, f.derivatives):
        fd = (magnitude_at(X, t + h) - magnitude_at(X, t - h)) / (2 * h)
        assert d == pytest.approx(fd, rel=1e-6)
    plain = magnitude_function(X, ts)
    assert plain.derivatives is None and plain.dimension_profile is None
    np.testing.assert_allclose(plain.values, f.values, rtol=1e-12)


def test_dimension_magnipy_oracle():
    ref = _ORACLE["dimension"]
    X = np.asarray(ref["X"])
    r = magnitude_dimension(X, ts=ref["ts"])
    # magnipy's central differences with h = 1e-4 in log t carry an O(h^2) ~ 1e-8 error
    np.testing.assert_allclose(r.profile, ref["profile_central_h1e-4"], rtol=1e-6)
    # the log grid is magnipy's: 0, then geomspace(t_conv / n, t_conv, n - 1)
    own = magnitude_dimension(X, t_cut=ref["magnipy_t_conv"], scales="log", n_scales=30)
    np.testing.assert_allclose(own.ts, ref["magnipy_log_grid"], rtol=1e-14)
    np.testing.assert_allclose(own.function.values, ref["magnipy_magnitude_on_log_grid"], rtol=1e-8)
    # magnipy's secant slopes sit between the exact slopes at their two ends (a smooth profile)
    # and its dimension (their maximum) is within the profile's variation between grid points
    assert abs(own.dimension - ref["magnipy_dimension"]) < 0.05 * own.dimension
    assert own.dimension == pytest.approx(float(np.max(own.profile)))
    assert own.t_dimension in own.ts


def test_dimension_of_a_line_and_a_square_grow_with_the_dimension():
    line = np.linspace(0, 10, 101)[:, None]
    xs = np.linspace(0, 10, 11)
    square = np.array([[a, b] for a in xs for b in xs])
    d1 = magnitude_dimension(line, t_cut=20.0).dimension
    d2 = magnitude_dimension(square, t_cut=20.0).dimension
    # finite samples stay below the dimension of the space they sample (0.93 and 1.48 here)
    assert 0.8 < d1 < 1.0 and 1.3 < d2 < 2.0 and d2 > d1 + 0.3


# ------------------------------------------------------------------------------------------
# Positive magnitude
# ------------------------------------------------------------------------------------------


def test_positive_magnitude_magnipy_oracle():
    ref = _ORACLE["positive_magnitude"]
    X = np.asarray(ref["X"])
    f = magnitude_function(X, ref["ts"], positive=True)
    assert magnitude_function(X, ref["ts"]).positive_values is None
    np.testing.assert_allclose(f.values, ref["magnitude"], rtol=1e-8)
    np.testing.assert_allclose(f.positive_values, ref["values"], rtol=1e-8)
    assert np.any(f.positive_values > f.values + 1e-6)  # some weightings have negative entries
    assert np.all(f.positive_values >= f.values - 1e-9)


def test_positive_magnitude_of_one_weighting(rng):
    X = rng.normal(size=(30, 2))
    r = magnitude_weights(X, 0.7)
    assert r.positive_magnitude == pytest.approx(float(np.sum(np.maximum(r.weighting, 0))), rel=1e-15)
    assert r.to_dict()["positive_magnitude"] == r.positive_magnitude
    two = magnitude_weights([[0.0], [1.0]], 1.0)  # both weights positive
    assert two.positive_magnitude == pytest.approx(two.value, rel=1e-15)


# ------------------------------------------------------------------------------------------
# Metrics: scipy's names, Minkowski p, Tanimoto
# ------------------------------------------------------------------------------------------


def test_metrics_list_is_scipy_plus_ours():
    assert {"euclidean", "cityblock", "cosine", "tanimoto", "jaccard", "minkowski", "chebyshev", "canberra",
            "braycurtis", "seuclidean", "mahalanobis", "precomputed"} <= set(METRICS)
    with pytest.raises(DiversityInputError, match="unknown metric 'manhatan'; choose one of: 'euclidean'"):
        magnitude_at([[0.0], [1.0]], 1.0, metric="manhatan")


@pytest.mark.parametrize("metric,kw", [("minkowski", {"p": 1.5}), ("minkowski", {"p": 3}), ("chebyshev", {}),
                                       ("canberra", {}), ("braycurtis", {}), ("sqeuclidean", {}),
                                       ("seuclidean", {}), ("mahalanobis", {})])
def test_scipy_metrics_equal_their_precomputed_pdist(rng, metric, kw):
    X = rng.uniform(0.5, 3.0, size=(25, 3))
    D = squareform(pdist(X, metric, **kw))  # pdist: seuclidean/mahalanobis from all the points
    for t in (0.5, 2.0):
        ours = magnitude_at(X, t, metric=metric, **kw)
        assert ours == pytest.approx(magnitude_at(D, t, metric="precomputed"), rel=1e-9)
        assert ours == pytest.approx(_solve_mag(D, t), rel=1e-8)


def test_minkowski_p_defaults_and_validation(rng):
    X = rng.normal(size=(20, 3))
    assert magnitude_at(X, 1.0, metric="minkowski") == pytest.approx(magnitude_at(X, 1.0), rel=1e-10)
    assert magnitude_at(X, 1.0, metric="minkowski", p=1) == pytest.approx(
        magnitude_at(X, 1.0, metric="cityblock"), rel=1e-10)
    assert magnitude_at(X, 1.0, metric="minkowski", p=math.inf) == pytest.approx(
        magnitude_at(X, 1.0, metric="chebyshev"), rel=1e-10)
    with pytest.raises(DiversityInputError, match="p is the exponent of metric='minkowski'"):
        magnitude_at(X, 1.0, p=3)
    with pytest.raises(DiversityInputError, match="p must be a number >= 1"):
        magnitude_at(X, 1.0, metric="minkowski", p=0.5)


def test_tanimoto_distance_exact_and_equal_to_scipy_jaccard_on_bits(rng):
    a, b = np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])  # |a & b| / |a | b| = 1 / 3
    t = 1.3
    d = 2.0 / 3.0
    expected = 2 / (1 + math.exp(-t * d))
    assert magnitude_at(np.vstack([a, b]), t, metric="tanimoto") == pytest.approx(expected, rel=8 * EPS)
    B = (rng.random((40, 64)) < 0.3).astype(float)
    J = cdist(B.astype(bool), B.astype(bool), "jaccard")
    for metric in ("tanimoto", "jaccard"):
        assert magnitude_at(B, t, metric=metric) == pytest.approx(magnitude_at(J, t, metric="precomputed"),
                                                                  rel=1e-12)
    # counts: 1 - <a, b> / (|a|^2 + |b|^2 - <a, b>), the Tanimoto kernel's distance
    C = rng.integers(0, 4, size=(30, 16)).astype(float)
    C = C[np.unique(C, axis=0, return_index=True)[1]]
    G = C @ C.T
    sq = np.diag(G)
    T = 1.0 - G / (sq[:, None] + sq[None, :] - G)
    np.fill_diagonal(T, 0.0)
    assert magnitude_at(C, t, metric="tanimoto") == pytest.approx(_solve_mag(T, t), rel=1e-10)


def test_tanimoto_refuses_negative_features_and_merges_equal_fingerprints():
    with pytest.raises(DiversityInputError, match="non-negative features"):
        magnitude_at([[1.0, -1.0], [0.0, 1.0]], 1.0, metric="tanimoto")
    B = np.array([[1, 0, 1, 0], [1, 0, 1, 0], [0, 1, 1, 0]], dtype=float)
    with pytest.warns(DuplicatesMergedWarning, match="1 duplicate rows"):
        assert magnitude_at(B, 2.0, metric="jaccard") == pytest.approx(2 / (1 + math.exp(-2.0 * 2 / 3)), rel=1e-14)


def test_undefined_scipy_distance_says_which_rows(rng):
    X = np.vstack([np.ones(3), rng.normal(size=(5, 3))])  # a constant row: correlation undefined
    with pytest.raises(DiversityInputError, match="correlation distance is undefined"):
        magnitude_at(X, 1.0, metric="correlation")


# ------------------------------------------------------------------------------------------
# MagDiff on a common grid, absolute areas, the all-pairs matrix
# ------------------------------------------------------------------------------------------


def test_mag_diff_on_the_union_of_two_grids_magnipy_oracle():
    ref = _ORACLE["mag_diff_grids"]
    X, Y = np.asarray(ref["X"]), np.asarray(ref["Y"])
    union = np.union1d(ref["ts_x"], ref["ts_y"])
    res = mag_diff(X, Y, ts=union)
    assert res.absolute == pytest.approx(ref["absolute"], rel=1e-8)
    assert res.t_cut == union[-1]
    assert res.absolute >= abs(res.value) - 1e-12


def test_absolute_mag_diff_exact_on_crossing_curves():
    # Mag_X - Mag_Y changes sign on the grid: absolute is the trapezoid of |difference|
    X = [[0.0], [1.0]]
    Y = [[0.0], [0.5], [10.0]]
    ts = np.linspace(0.0, 3.0, 7)
    fx = magnitude_function(X, ts).values
    fy = magnitude_function(Y, ts).values
    res = mag_diff(X, Y, ts=ts)
    gap = np.abs(fx - fy)
    assert res.absolute == pytest.approx(float(np.sum(0.5 * (gap[1:] + gap[:-1]) * np.diff(ts))), rel=1e-13)
    assert res.value == pytest.approx(float(np.trapezoid(fx - fy, ts)), rel=1e-12)
    assert res.absolute_scaled == pytest.approx(res.absolute / 3.0)


def test_diversipy_matrix_magnipy_oracle():
    ref = _ORACLE["diversipy"]
    sets = {f"s{i}": np.asarray(x) for i, x in enumerate(ref["Xs"])}
    m = mag_diff_matrix(sets, ts=ref["ts"])
    np.testing.assert_allclose(m.absolute_scaled, ref["magdiffs_scaled"], rtol=1e-8, atol=1e-12)
    auto = mag_diff_matrix(sets)
    assert auto.t_cut == pytest.approx(float(np.median(ref["auto_t_convs"])), rel=1e-5)
    np.testing.assert_allclose(auto.absolute_scaled, ref["auto_magdiffs_scaled"], rtol=1e-4)


def test_mag_diff_matrix_structure(rng):
    sets = {"a": rng.normal(size=(30, 2)), "b": 0.5 * rng.normal(size=(25, 2)), "c": 2 * rng.normal(size=(20, 2))}
    m = mag_diff_matrix(sets, t_cut=3.0, n_scales=10)
    np.testing.assert_array_equal(m.values, -m.values.T)
    np.testing.assert_array_equal(m.absolute, m.absolute.T)
    assert np.all(m.absolute >= np.abs(m.values) - 1e-12) and np.all(np.diag(m.absolute) == 0)
    comp = compare_magnitude(sets, reference="a", t_cut=3.0, n_scales=10)
    assert m.values[1, 0] == pytest.approx(comp.mag_diff["b"], rel=1e-14)
    assert m.absolute[2, 0] == pytest.approx(comp.mag_diff_absolute["c"], rel=1e-14)
    assert json.dumps(m.to_dict())
    assert not m.absolute.flags.writeable


# ------------------------------------------------------------------------------------------
# Log grids and the public names
# ------------------------------------------------------------------------------------------


def test_log_grid(rng):
    X = rng.normal(size=(30, 2))
    t_conv = convergence_scale(X)
    f = magnitude_function(X, scales="log", n_scales=12)
    expected = np.concatenate([[0.0], np.geomspace(t_conv / 12, t_conv, 11)])
    np.testing.assert_allclose(f.ts, expected, rtol=1e-12)
    np.testing.assert_allclose(f.values, magnitude_function(X, expected).values, rtol=1e-10)
    with pytest.raises(DiversityInputError, match="unknown scales 'geometric'"):
        magnitude_function(X, scales="geometric")


def test_new_names_are_exported():
    for name in ("spread_function", "spread_at", "magnitude_dimension", "mag_diff_matrix", "SpreadFunction",
                 "MagnitudeDimension", "MagDiffMatrix"):
        assert name in diversity_core.__all__ and hasattr(diversity_core, name)


def test_results_are_json_and_read_only(rng):
    X = rng.normal(size=(20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = magnitude_dimension(X, n_scales=6)
        s = spread_function(X, n_scales=6)
    for r in (d, s, d.function):
        assert json.dumps(r.to_dict())
    assert not d.profile.flags.writeable and not s.values.flags.writeable
    assert not magnitude_function(X, [1.0], positive=True).positive_values.flags.writeable


def test_cli_minkowski_p_and_tanimoto(tmp_path, rng):
    import subprocess
    import sys

    X = rng.normal(size=(30, 3))
    np.save(tmp_path / "x.npy", X)
    B = (rng.random((30, 32)) < 0.3).astype(float)
    B = B[np.unique(B, axis=0, return_index=True)[1]]
    np.save(tmp_path / "b.npy", B)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "diversity_core.cli", "magnitude", *args, "--format", "json",
                               "--n-scales", "5"], capture_output=True, text=True, timeout=120,
                              cwd=Path(__file__).resolve().parents[1])

    out = cli(str(tmp_path / "x.npy"), "--metric", "minkowski", "--p", "1.5")
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(out.stdout)["sets"]
    assert entry["t_conv"] == pytest.approx(convergence_scale(X, metric="minkowski", p=1.5), rel=1e-9)
    out = cli(str(tmp_path / "b.npy"), "--metric", "tanimoto")
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(out.stdout)["sets"]
    assert entry["t_conv"] == pytest.approx(convergence_scale(B, metric="tanimoto"), rel=1e-9)
    out = cli(str(tmp_path / "x.npy"), "--p", "3")
    assert out.returncode == 2 and "p is the exponent of metric='minkowski'" in out.stderr
