"""Sketch estimates of VS_q (diversity_core.approx.sketches): feature maps, tail rule, streaming, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core._json import dumps
from diversity_core.approx import VendiEstimate, vendi_estimate
from diversity_core.approx.sketches import _fourier, _minhash, _nystrom
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import get_kernel
from diversity_core.spectrum import compute_spectrum


@pytest.fixture
def blobs(rng):
    centres = rng.normal(scale=4.0, size=(8, 5))
    return centres[rng.integers(8, size=400)] + rng.normal(scale=0.5, size=(400, 5))


@pytest.fixture
def bits(rng):
    return (rng.random((300, 128)) < 0.15).astype(float)


@pytest.mark.parametrize("name", ["rbf", "laplacian"])
def test_fourier_features_are_unit_norm_and_unbiased(name, blobs, rng):
    kern = get_kernel(name, sigma=2.0)
    X = blobs[:60]
    sketch = _fourier(kern, X.shape[1], 20000, rng)
    Phi = sketch.features(X)
    np.testing.assert_allclose(np.sum(Phi**2, axis=1), 1.0, atol=1e-12)
    # Monte Carlo error of one entry ~ 1 / sqrt(2 D)
    assert np.max(np.abs(Phi @ Phi.T - kern.gram(X))) < 0.05


def test_minhash_features_are_unit_norm_and_unbiased(bits, rng):
    kern = get_kernel("tanimoto")
    X = bits[:50]
    sketch = _minhash(kern, X.shape[1], 20000, rng)
    Phi = sketch.features(X)
    np.testing.assert_allclose(np.sum(Phi**2, axis=1), 1.0, atol=1e-12)
    assert np.max(np.abs(Phi @ Phi.T - kern.gram(X))) < 0.05
    # sparse rows and an empty fingerprint (identical to itself, unrelated to the others)
    Xe = np.vstack([X[:5], np.zeros((1, X.shape[1]))])
    Phi_s = sketch.features(sp.csr_matrix(Xe))
    np.testing.assert_allclose(Phi_s[:5], Phi[:5])
    assert abs(Phi_s[5] @ Phi_s[5] - 1.0) < 1e-12 and np.max(np.abs(Phi_s[:5] @ Phi_s[5])) < 0.05


@pytest.mark.parametrize("rule", ["rpcholesky", "greedy", "uniform"])
def test_nystrom_is_below_the_kernel(rule, blobs, rng):
    kern = get_kernel("rbf").resolve(blobs)
    X = blobs[:150]
    sketch = _nystrom(kern, X, 40, rule, rng)
    Phi = sketch.features(X)
    K = kern.gram(X)
    # K - K_nys is PSD (a Schur complement), so every eigenvalue of K_nys is at most K's (Weyl)
    assert np.linalg.eigvalsh(K - Phi @ Phi.T).min() > -1e-9
    assert np.all(np.linalg.eigvalsh(Phi @ Phi.T)[::-1][:40] <= np.linalg.eigvalsh(K)[::-1][:40] + 1e-9)


def test_nystrom_with_every_landmark_is_exact(blobs):
    X = blobs[:120]
    exact = compute_spectrum(X, kernel="rbf", sigma=3.0).profile([1.0, 2.0, np.inf])
    est = vendi_estimate(X, kernel="rbf", sigma=3.0, method="nystrom", m=120, landmarks="uniform",
                         replicates=2, rng=0)
    np.testing.assert_allclose(est.value, exact, rtol=1e-6)
    assert est.settings["captured_trace"] == pytest.approx(1.0, abs=1e-8)


@pytest.mark.parametrize("method", ["rff", "nystrom"])
def test_estimates_are_close_on_a_clustered_set(method, blobs):
    exact = compute_spectrum(blobs, kernel="rbf", sigma=1.0).profile([1.0, 2.0, np.inf])
    est = vendi_estimate(blobs, kernel="rbf", sigma=1.0, method=method, m=200 if method == "nystrom" else None,
                         D=1024 if method == "rff" else None, replicates=3, rng=1)
    # q >= 2 is set by the top eigenvalues, which both sketches find; q = 1 also needs the tail
    # (m = 200 is only ~2.4 VS_1 here, far below the 60-80 VS_1 that 5% takes)
    np.testing.assert_allclose(est.value[1:], exact[1:], rtol=0.05)
    assert est.value[0] == pytest.approx(exact[0], rel=0.25)
    assert isinstance(est, VendiEstimate) and est.method == method
    assert np.all(est.low <= est.value) and np.all(est.value <= est.high)


def test_tanimoto_estimates(bits):
    exact = compute_spectrum(bits, kernel="tanimoto").profile([2.0, np.inf])
    est = vendi_estimate(bits, kernel="tanimoto", q=[2.0, "inf"], D=2048, replicates=3, rng=0)
    assert est.method == "tanimoto_rf"
    np.testing.assert_allclose(est.value, exact, rtol=0.15)
    dense = vendi_estimate(bits, kernel="tanimoto", q=[2.0], D=256, replicates=2, rng=5)
    sparse = vendi_estimate(sp.csr_matrix(bits), kernel="tanimoto", q=[2.0], D=256, replicates=2, rng=5)
    np.testing.assert_allclose(dense.value, sparse.value, rtol=1e-12)


def test_streamed_and_dask_equal_in_memory(blobs, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, blobs)
    for method in ("rff", "nystrom"):
        kw = {"D": 128} if method == "rff" else {"m": 50}
        a = vendi_estimate(blobs, kernel="rbf", sigma=1.0, method=method, replicates=2, rng=3, **kw)
        b = vendi_estimate(str(path), kernel="rbf", sigma=1.0, method=method, replicates=2, rng=3, **kw)
        np.testing.assert_allclose(a.replicates, b.replicates, rtol=1e-9)
    da = pytest.importorskip("dask.array")
    c = vendi_estimate(da.from_array(blobs, chunks=(100, 5)), kernel="rbf", sigma=1.0, method="rff", D=128,
                       replicates=2, rng=3)
    a = vendi_estimate(blobs, kernel="rbf", sigma=1.0, method="rff", D=128, replicates=2, rng=3)
    np.testing.assert_allclose(a.replicates, c.replicates, rtol=1e-9)


def test_orders_below_one_are_refused(blobs):
    with pytest.raises(DiversityInputError, match="q >= 1; got q = 0.5.*vendi_bounds"):
        vendi_estimate(blobs, kernel="rbf", q=[0.5, 1.0])


def test_method_must_fit_the_kernel(blobs, bits):
    with pytest.raises(DiversityInputError, match="rbf and laplacian"):
        vendi_estimate(bits, kernel="tanimoto", method="rff")
    with pytest.raises(DiversityInputError, match="is for the tanimoto kernel"):
        vendi_estimate(blobs, kernel="rbf", method="tanimoto_rf")
    with pytest.raises(DiversityInputError, match="binary fingerprints"):
        vendi_estimate(bits * 3, kernel="tanimoto", method="tanimoto_rf")
    with pytest.raises(DiversityInputError, match="Nystrom setting"):
        vendi_estimate(blobs, kernel="rbf", method="rff", m=10)
    with pytest.raises(DiversityInputError, match="method must be one of|unknown method|method"):
        vendi_estimate(blobs, kernel="rbf", method="sketchy")


def test_estimate_result(blobs):
    est = vendi_estimate(blobs, kernel="rbf", method="rff", D=64, q=[1, 2, "inf"], replicates=3, rng=0)
    assert est.replicates.shape == (3, 3) and est.value.flags.writeable is False
    assert est.stderr[0] == pytest.approx(est.replicates[:, 0].std(ddof=1) / np.sqrt(3))
    lo, hi = est.interval("inf")
    assert lo <= est.vendi("inf") <= hi
    assert "truncated" in est.target and est.settings["features"] == 128
    payload = json.loads(dumps(est.to_dict()))
    assert payload["qs"] == ["1", "2", "inf"] and payload["method"] == "rff"
    with pytest.raises(DiversityInputError, match="was not computed"):
        est.vendi(3)


def test_streamed_chunks_are_sized_by_the_sketch_width(blobs, tmp_path, monkeypatch):
    # the features of a chunk are as wide as the sketch (2D columns): a streamed file is read in
    # chunks sized by that width, as an in-memory array is, not by its own few columns
    from diversity_core._config import chunk_rows, config_context
    from diversity_core.sources import RowSource

    path = tmp_path / "x.npy"
    np.save(path, blobs)
    asked = []
    original = RowSource.chunks

    def spy(self, rows=None, **kw):
        asked.append(rows)
        return original(self, rows, **kw)

    monkeypatch.setattr(RowSource, "chunks", spy)
    with config_context(memory_budget="40M"):
        vendi_estimate(str(path), kernel="rbf", sigma=1.0, method="rff", D=512, replicates=1, rng=0)
        cap = chunk_rows(1024, 8)
    assert asked and all(rows == cap for rows in asked)  # the file's own 5 columns would allow far more


def test_confidence_level_vocabulary(blobs):
    """``confidence_level`` (SciPy's name) is the parameter and attribute; ``level`` warns and means the same."""
    from diversity_core._stats import ConfidenceInterval

    kw = {"kernel": "rbf", "method": "rff", "D": 32, "q": [1.0], "replicates": 3, "rng": 0}
    est = vendi_estimate(blobs, confidence_level=0.8, **kw)
    assert est.confidence_level == 0.8 and est.to_dict()["level"] == 0.8  # the JSON key is unchanged
    assert isinstance(est.interval(1.0), ConfidenceInterval)
    with pytest.warns(DeprecationWarning, match=r"level= is deprecated; use confidence_level="):
        old = vendi_estimate(blobs, level=0.8, **kw)
    assert old.interval(1.0) == est.interval(1.0)
    with pytest.warns(DeprecationWarning, match=r"VendiEstimate\.level is deprecated"):
        assert est.level == 0.8
    with pytest.warns(DeprecationWarning), pytest.raises(DiversityInputError, match="not both"):
        vendi_estimate(blobs, confidence_level=0.8, level=0.9, **kw)
    with pytest.raises(DiversityInputError, match="confidence_level"):
        vendi_estimate(blobs, confidence_level=1.5, **kw)
