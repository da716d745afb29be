"""Blocked computation (issue 11, issue 16 blocker 2, issue 15 item 13): exact VS_2 by blocks,
blocked kernel products, cancellation-free squared distances."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import diversity_core as dc
import diversity_core.distances as distances_module  # where GRAM_BLOCK_ROWS lives
from diversity_core._config import _physical_memory, config_context
from diversity_core.blocked import VS2Result, _compact_integers, vendi_2_exact
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import _gram, _squared_distances, get_kernel


def dense_vs2(K, weights=None):
    """The dense formula: VS_2 = (tr rho)^2 / ||rho||_F^2 with rho = diag(sqrt p) K diag(sqrt p)."""
    n = K.shape[0]
    p = np.full(n, 1.0 / n) if weights is None else weights / weights.sum()
    rho = np.sqrt(p)[:, None] * K * np.sqrt(p)[None, :]
    return np.trace(rho) ** 2 / np.sum(rho * rho)


@pytest.fixture
def fingerprints(rng):
    return (rng.random((701, 128)) < 0.1).astype(np.float64)


@pytest.mark.parametrize("kernel", ["rbf", "laplacian", "tanimoto", "polynomial"])
@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
def test_blocked_vs2_equals_dense_formula(rng, fingerprints, kernel, weighted):
    X = fingerprints if kernel == "tanimoto" else rng.standard_normal((701, 5))
    w = rng.random(701) if weighted else None
    kern = dc.get_kernel(kernel)
    K = kern.resolve(kern.validate(X), w).gram(X)  # the weighted median bandwidth, as the scores use
    res = vendi_2_exact(X, kernel=kernel, weights=w, block_rows=128)  # 128 does not divide 701
    assert isinstance(res, VS2Result) and res.method == "blocked"
    assert res.vs2 == pytest.approx(dense_vs2(K, w), rel=1e-12)
    p = np.full(701, 1 / 701) if w is None else w / w.sum()
    assert res.intdiv == pytest.approx(1.0 - p @ K @ p, rel=1e-12)
    assert res.vs_inf_lower == pytest.approx(np.sqrt(res.vs2)) and res.vs_inf_upper == res.vs2


@pytest.mark.parametrize("kernel", ["rbf", "tanimoto"])
def test_bounds_hold_for_vs_inf_and_every_q_above_2(rng, fingerprints, kernel):
    X = fingerprints if kernel == "tanimoto" else rng.standard_normal((300, 4))
    res = vendi_2_exact(X, kernel=kernel)
    spec = dc.compute_spectrum(X, kernel=kernel)
    assert spec.vendi(2) == pytest.approx(res.vs2, rel=1e-10)
    for q in (2.0, 3.0, 10.0, np.inf):
        assert res.vs_inf_lower * (1 - 1e-12) <= spec.vendi(q) <= res.vs_inf_upper * (1 + 1e-12)


def test_dual_method_for_feature_kernels(rng):
    X = rng.standard_normal((500, 6))
    w = rng.random(500)
    dual = vendi_2_exact(X, kernel="cosine", weights=w)
    blocked = vendi_2_exact(X, kernel="cosine", weights=w, method="blocked", block_rows=97)
    assert dual.method == "dual" and blocked.method == "blocked"
    assert dual.vs2 == pytest.approx(blocked.vs2, rel=1e-12)
    assert dual.intdiv == pytest.approx(blocked.intdiv, rel=1e-10)
    assert dual.vs2 == pytest.approx(dc.vendi_score(X, weights=w, q=2), rel=1e-12)


def test_identity_and_precomputed():
    assert vendi_2_exact(np.eye(5)).vs2 == pytest.approx(5.0)
    K = np.full((4, 4), 0.5) + 0.5 * np.eye(4)
    res = vendi_2_exact(K, kernel="precomputed", block_rows=3)
    assert res.vs2 == pytest.approx(dense_vs2(K))


def test_streamed_nested_passes_equal_in_memory(rng, tmp_path):
    X = rng.standard_normal((900, 5))
    w = rng.random(900)
    np.save(tmp_path / "x.npy", X)
    ref = vendi_2_exact(X, kernel="rbf", weights=w)
    # a budget too small for the rows: an outer block in memory, the rest streamed past it
    with config_context(memory_budget="200K", chunk_bytes="4K"):
        res = vendi_2_exact(tmp_path / "x.npy", kernel="rbf", weights=w, block_rows=64)
    assert res.execution == "streamed"
    assert res.kernel == ref.kernel  # the bandwidth fixed on the same rows
    assert res.vs2 == pytest.approx(ref.vs2, rel=1e-12)
    assert res.intdiv == pytest.approx(ref.intdiv, rel=1e-12)


def test_integer_data_multiply_exactly_in_float32(fingerprints):
    compact = _compact_integers(fingerprints)
    assert compact.dtype == np.float32
    as_bytes = _compact_integers(fingerprints.astype(np.uint8))
    assert as_bytes.dtype == np.float32
    assert _compact_integers(fingerprints + 0.5).dtype == np.float64
    big = np.full((3, 2), 4000.0)  # squared norms 3.2e7 > 2^24: float32 would round
    assert _compact_integers(big).dtype == np.float64
    exact = dc.kernel_matrix(fingerprints, kernel="tanimoto")
    np.testing.assert_array_equal(dc.kernel_matrix(compact, kernel="tanimoto"), exact)
    assert vendi_2_exact(fingerprints.astype(np.uint8), kernel="tanimoto").vs2 == pytest.approx(
        dense_vs2(exact), rel=1e-13)


@pytest.mark.parametrize("density", [0.02, 0.3], ids=["sparse-rows", "dense-rows"])
def test_tanimoto_with_empty_fingerprints(rng, density, monkeypatch):
    B = (rng.random((300, 256)) < density).astype(np.float64)
    B[[3, 100, 250]] = 0.0  # empty fingerprints: similarity 1 to each other, 0 to the rest
    K = dc.kernel_matrix(B, kernel="tanimoto")
    assert K[3, 100] == 1.0 and K[3, 4] == 0.0
    monkeypatch.setattr(distances_module, "GRAM_BLOCK_ROWS", 64)
    np.testing.assert_array_equal(get_kernel("tanimoto").gram(B[:70], B), K[:70])
    res = vendi_2_exact(B, kernel="tanimoto", block_rows=64)
    assert res.vs2 == pytest.approx(dense_vs2(K), rel=1e-12)


def test_errors(rng):
    X = rng.standard_normal((20, 3))
    with pytest.raises(DiversityInputError, match="feature map"):
        vendi_2_exact(X, kernel="rbf", method="dual")
    with pytest.raises(DiversityInputError, match="block_rows"):
        vendi_2_exact(X, kernel="rbf", block_rows=1)
    with pytest.raises(DiversityInputError, match="method"):
        vendi_2_exact(X, method="eigen")


# --- blocked kernel products (issue 16, blocker 2) -----------------------------------------
@pytest.mark.parametrize("kernel", ["linear", "cosine", "rbf", "laplacian", "tanimoto", "polynomial"])
def test_blocked_gram_equals_one_block(rng, monkeypatch, kernel):
    X = np.abs(rng.standard_normal((203, 6)))
    Y = np.abs(rng.standard_normal((150, 6)))
    kern = get_kernel(kernel).resolve(X)
    K, C = kern.gram(X), kern.gram(X, Y)
    monkeypatch.setattr(distances_module, "GRAM_BLOCK_ROWS", 32)
    np.testing.assert_allclose(kern.gram(X), K, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(kern.gram(X, Y), C, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(kern.gram(X), kern.gram(X).T, rtol=0, atol=1e-15)


def test_rbf_matrix_is_exactly_symmetric(rng, monkeypatch):
    X = rng.standard_normal((150, 4)) + 10.0
    monkeypatch.setattr(distances_module, "GRAM_BLOCK_ROWS", 40)
    K = dc.kernel_matrix(X, kernel="rbf")
    np.testing.assert_array_equal(K, K.T)


def test_gram_blocks_are_symmetric_and_float64(rng, monkeypatch):
    monkeypatch.setattr(distances_module, "GRAM_BLOCK_ROWS", 50)
    A = rng.standard_normal((130, 4)).astype(np.float32)
    G = _gram(A)
    assert G.dtype == np.float64
    np.testing.assert_array_equal(G, G.T)
    np.testing.assert_allclose(G, (A @ A.T).astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif((_physical_memory() or 0) < 8 << 30, reason="needs 8 GB of memory for a 16000 x 16000 matrix")
def test_large_symmetric_product_does_not_crash():
    """numpy's OpenBLAS segfaulted in the multithreaded SYRK X @ X.T from n = 16000 (issue 16)."""
    script = textwrap.dedent(
        """
        import numpy as np
        import diversity_core as dc
        X = np.random.default_rng(0).standard_normal((16000, 384))
        K = dc.kernel_matrix(X, kernel="linear")
        assert K.shape == (16000, 16000) and abs(K[5, 7] - X[5] @ X[7]) < 1e-9
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"exit {res.returncode}: {res.stderr[-2000:]}"


# --- squared distances without cancellation (issue 15, item 13) -----------------------------
def test_rbf_on_near_duplicates_far_from_the_origin(rng):
    Z = rng.standard_normal((300, 8))
    offset = 1e3 * np.ones(8)
    X = offset + 1e-4 * Z  # spread 1e-7 of the offset
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not PSD", no clipped negative eigenvalues
        shifted = dc.compute_spectrum(X, kernel="rbf")
    centred = dc.compute_spectrum(Z, kernel="rbf")
    assert shifted.kernel["sigma"] == pytest.approx(1e-4 * centred.kernel["sigma"], rel=1e-8)
    for q in (0.5, 1.0, 2.0, np.inf):
        # the data themselves carry relative errors of about 1e-16 * 1e3 / 1e-4 = 1e-9
        assert shifted.vendi(q) == pytest.approx(centred.vendi(q), rel=1e-8)


def test_squared_distances_of_two_far_clusters_of_near_duplicates(rng):
    Z = rng.standard_normal((40, 5)) * 1e-5
    X = np.vstack([Z[:20] + 1e3, Z[20:] - 1e3])  # the mean is far from both clusters
    D2 = _squared_distances(X)
    exact = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(D2, exact, rtol=1e-12, atol=0)
    assert np.all(np.diagonal(D2) == 0)
    np.testing.assert_allclose(_squared_distances(X[:7], X[5:]), exact[:7, 5:], rtol=1e-12, atol=0)
