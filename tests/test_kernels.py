"""Kernels: unit diagonal, PSD, agreement with scikit-learn and the closed forms, errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import cosine_similarity, laplacian_kernel, rbf_kernel

import diversity_core as dc
from diversity_core.exceptions import DiversityInputError, KernelDiagonalWarning
from diversity_core.kernels import KERNELS, combine_kernel_matrices, get_kernel, median_distance

FEATURE_KERNELS = ["linear", "cosine", "rbf", "laplacian", "polynomial", "tanimoto"]


@pytest.mark.parametrize("name", ["cosine", "rbf", "laplacian", "polynomial", "tanimoto"])
def test_unit_diagonal_symmetric_psd(rng, name):
    X = np.abs(rng.standard_normal((40, 6)))
    K = dc.kernel_matrix(X, kernel=name)
    np.testing.assert_allclose(np.diag(K), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(K, K.T, atol=1e-15)
    assert np.linalg.eigvalsh(K).min() > -1e-12


def test_rbf_and_laplacian_match_sklearn(rng):
    X = rng.standard_normal((30, 4))
    np.testing.assert_allclose(
        dc.kernel_matrix(X, kernel="rbf", sigma=0.7), rbf_kernel(X, gamma=1 / (2 * 0.7**2)), rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(
        dc.kernel_matrix(X, kernel="laplacian", sigma=2.0), laplacian_kernel(X, gamma=0.5), rtol=1e-12
    )
    np.testing.assert_allclose(dc.kernel_matrix(X, kernel="cosine"), cosine_similarity(X), atol=1e-14)


def test_median_heuristic_is_used_and_recorded(rng):
    X = rng.standard_normal((50, 3))
    sigma = median_distance(X)
    np.testing.assert_allclose(dc.kernel_matrix(X, kernel="rbf"), dc.kernel_matrix(X, kernel="rbf", sigma=sigma))
    spec = dc.compute_spectrum(X, kernel="rbf")
    assert spec.kernel == {"name": "rbf", "sigma": pytest.approx(sigma)}


def test_median_of_identical_points_raises():
    with pytest.raises(DiversityInputError, match="explicit sigma"):
        median_distance(np.ones((5, 2)))


def test_tanimoto_on_bits():
    a = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    K = dc.kernel_matrix(a, kernel="tanimoto")
    assert K[0, 1] == pytest.approx(1 / 3)
    assert K[2, 3] == 1.0  # two empty fingerprints count as identical
    assert K[0, 2] == 0.0


def test_tanimoto_rejects_negative(rng):
    with pytest.raises(DiversityInputError, match="non-negative"):
        dc.kernel_matrix(rng.standard_normal((5, 3)), kernel="tanimoto")


def test_probability_product(rng):
    P = rng.random((20, 5))
    P /= P.sum(axis=1, keepdims=True)
    K = dc.kernel_matrix(P, kernel="probability_product")
    assert K[0, 1] == pytest.approx(np.sum(np.sqrt(P[0] * P[1])))
    with pytest.raises(DiversityInputError, match="probability vector"):
        dc.kernel_matrix(P * 2, kernel="probability_product")


def test_sum_and_product_of_kernels(rng):
    X = rng.standard_normal((25, 4))
    k = 1.0 * get_kernel("cosine") + 3.0 * get_kernel("rbf", sigma=1.0)
    Kc, Kr = dc.kernel_matrix(X, kernel="cosine"), dc.kernel_matrix(X, kernel="rbf", sigma=1.0)
    np.testing.assert_allclose(k.matrix(X), 0.25 * Kc + 0.75 * Kr, atol=1e-14)
    np.testing.assert_allclose((get_kernel("cosine") * get_kernel("rbf", sigma=1.0)).matrix(X), Kc * Kr, atol=1e-14)
    np.testing.assert_allclose(combine_kernel_matrices([Kc, Kr], weights=[1, 3]), 0.25 * Kc + 0.75 * Kr)


def test_sum_of_feature_kernels_keeps_dual_path(rng):
    X = rng.standard_normal((300, 4))
    k = get_kernel("cosine") + get_kernel("linear")
    spec = dc.compute_spectrum(X / np.linalg.norm(X, axis=1, keepdims=True), kernel=k)
    assert spec.method == "dual"


def test_combining_distinct_kernels_can_raise_vendi(rng):
    """VS paper Fig. 1b: two kernels that each see one attribute; their product sees both."""
    shape = np.repeat(np.eye(3), 3, axis=0)
    colour = np.tile(np.eye(3), (3, 1))
    K_shape, K_colour = shape @ shape.T, colour @ colour.T
    vs_shape = dc.score_K(K_shape)
    vs_prod = dc.score_K(combine_kernel_matrices([K_shape, K_colour], op="product"))
    assert vs_shape == pytest.approx(3.0)
    assert vs_prod == pytest.approx(9.0)


def test_sparse_input_cosine(rng):
    X = sp.random(50, 200, density=0.05, random_state=0, format="csr") + sp.eye(50, 200, format="csr")
    np.testing.assert_allclose(dc.kernel_matrix(X, kernel="cosine"), cosine_similarity(X), atol=1e-12)
    assert dc.compute_spectrum(X, kernel="cosine").method == "dense"


def test_precomputed_checks(rng):
    with pytest.raises(DiversityInputError, match="square"):
        dc.spectrum_from_kernel(np.ones((3, 4)))
    with pytest.raises(DiversityInputError, match="symmetric"):
        dc.spectrum_from_kernel(np.array([[1.0, 0.2], [0.5, 1.0]]))
    with pytest.raises(DiversityInputError, match="NaN"):
        dc.spectrum_from_kernel(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.warns(KernelDiagonalWarning):
        dc.compute_spectrum(2 * np.eye(3), kernel="precomputed")


def test_unknown_kernel_and_parameter():
    with pytest.raises(DiversityInputError, match="choose one of"):
        get_kernel("gaussian")
    with pytest.raises(DiversityInputError, match="unknown parameter"):
        get_kernel("cosine", sigma=1.0)
    assert set(KERNELS) >= set(FEATURE_KERNELS) | {"probability_product", "precomputed"}


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
        (np.array([[1.0, 2.0]]), "at least 2"),
        (np.array([1.0, 2.0, 3.0]), "2-D"),
        (np.array([["a", "b"], ["c", "d"]]), "numeric"),
        (np.zeros((3, 2)), "all-zero rows"),
    ],
)
def test_bad_features(X, match):
    with pytest.raises(DiversityInputError, match=match):
        dc.vendi_score(X)


def test_weights_validation():
    X = np.eye(3)
    with pytest.raises(DiversityInputError, match="negative values"):
        dc.vendi_score(X, weights=[1, -1, 1])
    with pytest.raises(DiversityInputError, match="all zero"):
        dc.vendi_score(X, weights=[0, 0, 0])
    with pytest.raises(DiversityInputError, match="expected 3"):
        dc.vendi_score(X, weights=[1, 1])


def test_baselines(rng):
    X = rng.standard_normal((40, 5))
    K = dc.kernel_matrix(X)
    assert dc.intdiv(X) == pytest.approx(1 - K.mean(), rel=1e-12)
    off = K[~np.eye(40, dtype=bool)]
    assert dc.average_similarity(X) == pytest.approx(off.mean(), rel=1e-10)
    assert dc.intdiv(X, kernel="rbf") == pytest.approx(1 - dc.kernel_matrix(X, kernel="rbf").mean(), rel=1e-12)
    assert dc.gmstds(X) == pytest.approx(np.exp(np.mean(np.log(X.std(axis=0)))), rel=1e-12)
    assert dc.gmstds(np.c_[X, np.ones(40)]) == 0.0
    w = rng.random(40)
    p = w / w.sum()
    assert dc.intdiv(X, weights=w) == pytest.approx(1 - p @ K @ p, rel=1e-12)


def test_gpu_spectrum_matches_cpu(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine")
    X = rng.standard_normal((3000, 128))
    for method in ["dual", "dense"]:
        a = dc.compute_spectrum(X, method=method, device="cuda")
        b = dc.compute_spectrum(X, method=method)
        for q in [0.5, 1, 2, np.inf]:
            assert a.vendi(q) == pytest.approx(b.vendi(q), rel=1e-6)


def test_cuda_requested_without_gpu_is_a_clear_error(rng):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(DiversityInputError, match="no CUDA device"):
        dc.compute_spectrum(rng.standard_normal((10, 3)), device="cuda")


# --------------------------------------------------------------------------------------------
# The median bandwidth never depends on the rows' order (issue 38 item 6)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def many_rows():
    g = np.random.default_rng(6)
    # two clusters of unequal spread: a positional sample of 1000 of 2500 rows moved sigma by
    # ~0.2% between orders, and the score with it
    return np.vstack([g.normal(size=(1500, 12)), 3 + 0.3 * g.normal(size=(1000, 12))])


def test_median_distance_is_permutation_invariant(many_rows):
    X = many_rows
    g = np.random.default_rng(7)
    sigmas = {median_distance(X[g.permutation(len(X))]) for _ in range(4)}
    assert len(sigmas) == 1  # bit for bit
    w = g.random(len(X))
    perm = g.permutation(len(X))
    # the same sample; the weighted median's sums may differ in the last bit (normalised weights)
    assert median_distance(X, weights=w) == pytest.approx(median_distance(X[perm], weights=w[perm]), rel=1e-14)
    # float32 data and its float64 copy are the same numbers, so the same sample
    X32 = X.astype(np.float32)
    assert median_distance(X32) == median_distance(X32.astype(np.float64))


def test_rbf_scores_are_permutation_invariant(many_rows):
    X = many_rows
    perm = np.random.default_rng(8).permutation(len(X))
    # the same sigma to the bit; what remains is the eigensolver's round-off on the permuted
    # matrix, which VS_0.5's square roots of the many tiny eigenvalues magnify (measured 1.8e-11)
    for q, rel in ((0.5, 1e-9), (1.0, 1e-12), (2.0, 1e-12)):
        a = dc.vendi_score(X, kernel="rbf", q=q)
        b = dc.vendi_score(X[perm], kernel="rbf", q=q)
        assert b == pytest.approx(a, rel=rel)


def test_streamed_sample_is_the_in_memory_sample(many_rows, tmp_path):
    """A source read in chunks picks the rows the in-memory median does (with weights too)."""
    from diversity_core.sources import as_source
    from diversity_core.spectrum import _resolve_from_source

    X = many_rows
    path = tmp_path / "x.npy"
    np.save(path, X)
    w = np.random.default_rng(9).random(len(X))
    kern = get_kernel("rbf")
    with dc.config_context(chunk_bytes=64 * 1024):
        for p in (None, w / w.sum()):
            streamed = _resolve_from_source(kern, as_source(str(path)), p)
            assert streamed.sigma == pytest.approx(median_distance(X, weights=p), rel=1e-14)


def test_rbf_metric_merged_equals_one_shot(many_rows):
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    X = torch.as_tensor(many_rows)
    whole = VendiScore("rbf", q=1.0)
    whole.update(X)
    a, b = VendiScore("rbf", q=1.0), VendiScore("rbf", q=1.0)
    a.update(X[1200:])  # the second half first: a positional sample saw other rows
    b.update(X[:1200])
    a.merge_state(b)
    assert float(a.compute()) == pytest.approx(float(whole.compute()), rel=1e-12)


def test_median_bandwidth_of_underflowing_data_says_rescale():
    """Issue 40 item 13: x1e-170 data were called "all items are identical"."""
    X = np.random.default_rng(0).normal(size=(50, 4)) * 1e-170
    with pytest.raises(DiversityInputError, match="underflow double precision; rescale|underflow double precision"):
        median_distance(X)
    with pytest.raises(DiversityInputError, match="identical"):
        median_distance(np.ones((5, 3)))
