"""Issue 38 item 1 (and issue 40 item 13, VendiScore): float32 features are the exact values they hold.

A float32 value is an exact float64 number. Every exact path converts float32 rows to float64
block by block, multiplies in float64 and uses float64's support threshold, so VS_q of float32
data equals VS_q of their float64 copy, for every q (q = 0, the rank, included: the rank of the
stored values). Before the fix the threshold used float32's eps (``m eps32 lambda_max``) and the
products ran in float32: digits pixels lost 6 of 61 eigenvalues on the dual path, 12 on the dense
one, and a decaying float32 embedding 150 of 256; VendiScore on float32 batches was 5% off.
"""

import math

import numpy as np
import pytest

import diversity_core as dc
from diversity_core import entropy
from diversity_core.compare._scores import SpectralScores
from diversity_core.data.demos import _digits_arrays
from diversity_core.distances import _gram
from diversity_core.entropy import EPS64, computation_eps
from diversity_core.evaluation._vendi import vendi_of
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import get_kernel

QS = [0.5, 1.0, 2.0, math.inf]
#: The target of issue 38: float32 data score as their float64 copy to 1e-6 (the paths below are
#: in fact bit-identical in memory; the streamed path sums other chunks, so round-off differs).
RTOL = 1e-6


@pytest.fixture(scope="module")
def digits32():
    """scikit-learn's 1,797 8 x 8 digits (pixels 0..16) as float32: rank 61 (three pixels are always 0)."""
    return _digits_arrays()[0].reshape(1797, 64).astype(np.float32)


@pytest.fixture(scope="module")
def embedding32():
    """A float32 embedding of 600 items with a decaying spectrum (singular values e^{-i/25}, i < 256)."""
    rng = np.random.default_rng(38)
    n, d = 600, 256
    U = np.linalg.qr(rng.normal(size=(n, d)))[0]
    V = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = (U * np.exp(-np.arange(d) / 25.0)) @ V.T + 0.05 * rng.normal(size=d)  # a common offset, as embeddings have
    return X.astype(np.float32)


@pytest.fixture(params=["digits", "embedding"])
def data32(request, digits32, embedding32):
    return digits32 if request.param == "digits" else embedding32


def _close(a, b, rtol=RTOL):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=0)


# --- the exact paths: float32 data score as their float64 copy -------------------------------------
@pytest.mark.parametrize("method", ["dual", "dense"])
def test_spectrum_of_float32_equals_its_float64_copy(data32, method):
    X64 = data32.astype(np.float64)
    a = dc.compute_spectrum(data32, method=method)
    b = dc.compute_spectrum(X64, method=method)
    _close(a.profile(QS), b.profile(QS))
    # q = 0, the rank, is that of the stored values: the float64 copy's, exactly
    assert a.rank == b.rank and a.vendi(0) == b.vendi(0)
    assert a.eps == EPS64 and a.tol == pytest.approx(b.tol, rel=1e-12)


def test_vendi_score_of_float32_equals_its_float64_copy(data32):
    X64 = data32.astype(np.float64)
    for q in QS:
        assert dc.vendi_score(data32, q=q) == pytest.approx(dc.vendi_score(X64, q=q), rel=RTOL)


def test_digits_rank_is_the_pixels_rank(digits32):
    # three of the 64 pixels are 0 in every image: rank 61 in float32 as in float64, on both paths
    # (before: 55 on the dual path and 49 on the dense one, from the float32 threshold)
    assert np.linalg.matrix_rank(digits32.astype(np.float64)) == 61
    for method in ("dual", "dense"):
        assert dc.compute_spectrum(digits32, method=method).vendi(0) == 61


def test_streamed_float32_file_equals_in_memory_float64(embedding32, tmp_path):
    path = tmp_path / "emb32.npy"
    np.save(path, embedding32)
    with dc.config_context(chunk_bytes=16 * 1024, memory_budget="64MB"):  # 16 rows of 256 float32 a chunk
        spec = dc.compute_spectrum(str(path))
    assert spec.execution == "streamed" and spec.method == "dual" and spec.eps == EPS64
    ref = dc.compute_spectrum(embedding32.astype(np.float64))
    _close(spec.profile(QS), ref.profile(QS))
    assert spec.rank == ref.rank


def test_compare_adapter_on_float32_equals_float64_spectrum(embedding32):
    qs = np.array(QS)
    idx = np.sort(np.random.default_rng(1).choice(600, 400, replace=False))
    for X32 in (embedding32, embedding32[:200]):  # a dual group (d < N), and a kernel-matrix group (N <= d)
        kern = get_kernel("cosine")
        stat = SpectralScores(kern.validate(X32), kern, qs)
        assert stat.dual == (X32.shape[0] > X32.shape[1])
        sub = idx if stat.dual else np.arange(0, 200, 2)
        ref = dc.compute_spectrum(X32[sub].astype(np.float64))
        got = stat(sub)
        _close(got[: qs.size], ref.profile(qs))
        _close(stat.spectrum(sub).profile(qs), ref.profile(qs))


def test_evaluation_vendi_of_float32_equals_float64(embedding32):
    kern = get_kernel("cosine")
    for X32 in (embedding32, embedding32[:200]):  # dual (d < n) and n x n
        for q in QS:
            a = vendi_of(X32, kern, q)
            assert a == pytest.approx(vendi_of(X32.astype(np.float64), kern, q), rel=RTOL)
            assert a == pytest.approx(dc.vendi_score(X32.astype(np.float64), q=q), rel=RTOL)


@pytest.mark.filterwarnings("ignore::diversity_core.exceptions.KernelDiagonalWarning")  # linear: ||x|| != 1
@pytest.mark.parametrize("kernel", ["cosine", "linear"])
def test_metric_float32_batches_equal_one_shot(data32, kernel):
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    m = VendiScore(kernel=kernel, q=QS)
    for start in range(0, data32.shape[0], 128):
        m.update(torch.from_numpy(data32[start:start + 128]))
    one_shot = dc.compute_spectrum(data32.astype(np.float64), kernel=kernel).profile(QS)
    _close(m.compute().numpy(), one_shot)


# --- the products: float32 operands are multiplied in float64 --------------------------------------
def test_gram_of_float32_is_the_float64_copys_bit_for_bit(monkeypatch, embedding32):
    from diversity_core import distances

    A = embedding32[:300]
    B = embedding32[300:420]
    for rows in (4096, 64):  # one product, and the blocked path
        monkeypatch.setattr(distances, "GRAM_BLOCK_ROWS", rows)
        np.testing.assert_array_equal(_gram(A), _gram(A.astype(np.float64)))
        np.testing.assert_array_equal(_gram(A, B), _gram(A.astype(np.float64), B.astype(np.float64)))


@pytest.mark.parametrize("kernel", ["cosine", "linear", "probability_product"])
def test_kernel_matrix_of_float32_is_the_float64_copys(kernel, embedding32):
    X = embedding32[:100]
    if kernel == "probability_product":  # probability rows (sums within float32 round-off of 1)
        P = np.exp(X.astype(np.float64))
        X = (P / P.sum(axis=1, keepdims=True)).astype(np.float32)
    kern = get_kernel(kernel)
    np.testing.assert_allclose(kern.gram(X), kern.gram(X.astype(np.float64)), rtol=0, atol=4 * EPS64)


# --- the rule: the computation's precision, never the input's dtype -------------------------------
def test_support_eps_follows_the_computation_not_the_dtype():
    assert not hasattr(entropy, "precision_eps")
    assert computation_eps() == EPS64 == computation_eps("float64")
    assert computation_eps("float32") == float(np.finfo(np.float32).eps)
    # a float32 product states its entry error (eps32 (2 + sqrt(t))), above float32's eps
    assert computation_eps("float32", entry_rtol=1e-6) == 1e-6
    for wrong in (np.float32, np.dtype(np.float32), "float16"):
        with pytest.raises(DiversityInputError, match="not the data's dtype"):
            computation_eps(wrong)


# --- VendiScore: one set of scale guards (issue 40 item 13) ----------------------------------------
@pytest.mark.parametrize("scale", [1e160, 1e-170, 1e-300])
def test_metric_cosine_takes_any_finite_scale(scale):
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    X = np.random.default_rng(3).normal(size=(50, 8))
    m = VendiScore(kernel="cosine", q=QS)
    m.update(torch.from_numpy(X[:20] * scale))
    m.update(torch.from_numpy(X[20:] * scale))
    _close(m.compute().numpy(), [dc.vendi_score(X, q=q) for q in QS], rtol=1e-12)
    _close(m.compute().numpy(), [dc.vendi_score(X * scale, q=q) for q in QS], rtol=1e-12)


@pytest.mark.parametrize(("scale", "way"), [(1e160, "overflow"), (1e-170, "underflow")])
def test_linear_products_beyond_float64_are_a_clear_error(scale, way):
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    X = np.random.default_rng(3).normal(size=(50, 8)) * scale
    m = VendiScore(kernel="linear")
    m.update(torch.from_numpy(X))
    with pytest.raises(DiversityInputError, match=f"{way} double precision.*Rescale"):
        m.compute()
    # the one-shot score says the same (before: NumericalError, "eigensolver failed" / "degenerate")
    with pytest.raises(DiversityInputError, match=f"{way} double precision.*Rescale"):
        dc.vendi_score(X, kernel="linear")


def test_metric_batches_of_another_width_are_refused_at_update():
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    m = VendiScore(kernel="rbf")
    m.update(torch.randn(8, 8, dtype=torch.float64))
    with pytest.raises(DiversityInputError, match="4 columns but earlier batches had 8"):
        m.update(torch.randn(8, 4, dtype=torch.float64))
    assert int(m.n_items) == 8  # the refused batch left the state as it was


@pytest.mark.parametrize("kernel", ["cosine", "linear"])
def test_metric_weights_summing_beyond_float64_are_a_clear_error(kernel):
    torch = pytest.importorskip("torch")
    from diversity_core.metrics import VendiScore

    m = VendiScore(kernel=kernel)
    for _ in range(2):
        m.update(torch.randn(5, 8, dtype=torch.float64), weights=torch.full((5,), 1e308, dtype=torch.float64))
    with pytest.raises(DiversityInputError, match="weights of the items seen sum to inf.*divide them"):
        m.compute()


def test_baselines_of_float32_equal_their_float64_copy(data32):
    """IntDiv and the other baselines normalised float32 cosine rows in float32 (6e-10 off)."""
    X32 = data32
    X64 = X32.astype(np.float64)
    assert dc.intdiv(X32) == dc.intdiv(X64)
    assert dc.baseline_scores(X32) == dc.baseline_scores(X64)
