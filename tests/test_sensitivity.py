"""diversity_core.sensitivity: Vendi scores over kernel bandwidths and fingerprint radii."""

from __future__ import annotations

import numpy as np
import pytest

from diversity_core import compute_spectrum, median_distance
from diversity_core.exceptions import DiversityInputError
from diversity_core.sensitivity import DEFAULT_FACTORS, bandwidth_sweep, fingerprint_radius_sweep


def test_default_bandwidths_are_multiples_of_the_median_distance(rng):
    X = rng.normal(size=(40, 5))
    r = bandwidth_sweep(X)
    med = median_distance(X)
    assert r.reference == pytest.approx(med)
    np.testing.assert_allclose(r.values, np.array(DEFAULT_FACTORS) * med)
    assert r.groups == ("all items",) and r.sizes == (40,)
    assert r.parameter == "sigma" and r.kernel == "rbf"


def test_scores_equal_the_spectrum_at_each_bandwidth(rng):
    X = rng.normal(size=(30, 4))
    r = bandwidth_sweep(X, sigmas=[0.5, 2.0])
    for j, sigma in enumerate([0.5, 2.0]):
        spec = compute_spectrum(X, kernel="rbf", sigma=sigma)
        assert r.vendi(1.0)[0, j] == pytest.approx(spec.vendi(1.0), rel=1e-12)
        assert r.vendi("inf")[0, j] == pytest.approx(spec.vendi(np.inf), rel=1e-12)


def test_small_bandwidth_approaches_n_and_large_approaches_one(rng):
    X = rng.normal(size=(25, 3))
    scores = bandwidth_sweep(X, sigmas=[1e-3, 1e4]).vendi(1.0)[0]
    assert scores[0] == pytest.approx(25.0, rel=1e-6)
    assert scores[1] == pytest.approx(1.0, rel=1e-4)


def test_vs_is_non_increasing_in_the_bandwidth(rng):
    X = rng.normal(size=(30, 3))
    scores = bandwidth_sweep(X).vendi(1.0)[0]
    assert np.all(np.diff(scores) <= 1e-9 * scores[:-1])


def test_groups_share_one_bandwidth(rng):
    X = np.vstack([rng.normal(size=(20, 3)), 0.1 * rng.normal(size=(15, 3))])
    groups = ["wide"] * 20 + ["narrow"] * 15
    r = bandwidth_sweep(X, groups=groups, factors=(0.5, 1.0))
    assert r.groups == ("wide", "narrow") and r.sizes == (20, 15)
    np.testing.assert_allclose(r.values, np.array([0.5, 1.0]) * median_distance(X))
    expected = compute_spectrum(X[20:], kernel="rbf", sigma=float(r.values[1])).vendi(1.0)
    assert r.vendi(1.0)[1, 1] == pytest.approx(expected, rel=1e-12)
    assert np.all(r.vendi(1.0)[0] > r.vendi(1.0)[1])  # the wide group is more diverse at every bandwidth


def test_laplacian_uses_the_l1_median(rng):
    X = rng.normal(size=(20, 3))
    r = bandwidth_sweep(X, kernel="laplacian", factors=(1.0,))
    assert r.values[0] == pytest.approx(median_distance(X, metric="cityblock"))


@pytest.mark.requires("rdkit")
def test_radius_sweep_matches_morgan_tanimoto():
    from diversity_core.featurizers.molecules import morgan_fingerprints

    smiles = ["CCO", "CCN", "c1ccccc1", "c1ccccc1O", "CC(=O)O", "CCCC"]
    r = fingerprint_radius_sweep(smiles, radii=(1, 2), groups=["a", "a", "b", "b", "a", "b"])
    assert r.parameter == "radius" and r.kernel == "tanimoto" and r.reference == 2.0
    np.testing.assert_array_equal(r.values, [1.0, 2.0])
    F = morgan_fingerprints(smiles, radius=2)
    idx = [2, 3, 5]
    expected = compute_spectrum(F[idx], kernel="tanimoto").vendi(1.0)
    assert r.vendi(1.0)[1, 1] == pytest.approx(expected, rel=1e-12)


def test_progress_reaches_the_total(rng):
    calls = []
    bandwidth_sweep(rng.normal(size=(10, 2)), factors=(1.0, 2.0), groups=["a"] * 5 + ["b"] * 5,
                    progress=lambda d, t, m: calls.append((d, t)))
    assert calls[-1] == (4, 4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kernel": "cosine"}, "unknown sweep kernel 'cosine'"),
        ({"sigmas": [1.0, -2.0]}, "sigma must be a finite number > 0"),
        ({"sigmas": []}, "at least one bandwidth"),
        ({"groups": ["a"] * 9}, "one entry per item"),
        ({"groups": ["a"] * 9 + ["b"]}, "'b' has fewer"),
    ],
)
def test_bad_parameters_raise(rng, kwargs, match):
    with pytest.raises(DiversityInputError, match=match):
        bandwidth_sweep(rng.normal(size=(10, 2)), **kwargs)


def test_to_dict(rng):
    d = bandwidth_sweep(rng.normal(size=(10, 2)), factors=(1.0,)).to_dict(qs=(1.0, 2.0))
    assert set(d) == {"parameter", "kernel", "values", "groups", "sizes", "reference", "scores"}
    assert set(d["scores"]) == {"1", "2"}  # q_key: one spelling of an order in every JSON
