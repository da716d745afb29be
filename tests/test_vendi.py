"""Vendi scores of order q: the papers' theorems, oracle values and numerical edge cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import diversity_core as dc
from diversity_core.exceptions import DiversityInputError, KernelDiagonalWarning, SpectrumWarning

QS = [0.0, 0.1, 0.5, 1.0, 2.0, np.inf]
EPS = np.finfo(np.float64).eps


def _features(seed: int, n: int, d: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d))


def hill_number(p: np.ndarray, q: float) -> float:
    """Hill number of order q of proportions p (the textbook definition)."""
    p = p[p > 0] / p.sum()
    if q == 0:
        return float(p.size)
    if q == 1:
        return float(np.exp(-np.sum(p * np.log(p))))
    if np.isinf(q):
        return float(1 / p.max())
    return float(np.sum(p**q) ** (1 / (1 - q)))


def assert_same_scores(a: dc.Spectrum, b: dc.Spectrum, rtol: float = 1e-9) -> None:
    """Equal VS_q for every q in QS, with tolerances that respect each order's conditioning.

    For q < 1 the score weighs tiny eigenvalues heavily (d(lambda^q) = q lambda^(q-1) d lambda),
    so eigenvalues near the round-off floor carry a relative error ~1e-7 into VS_0.1; the rank
    (q = 0) is only compared when no eigenvalue sits near the support threshold.
    """
    for q in [0.5, 1.0, 2.0, np.inf]:
        assert a.vendi(q) == pytest.approx(b.vendi(q), rel=rtol), q
    assert a.vendi(0.1) == pytest.approx(b.vendi(0.1), rel=max(rtol, 1e-5))
    gap = min(a.support.min() / max(a.tol, 1e-300), b.support.min() / max(b.tol, 1e-300))
    if gap > 1e6:
        assert a.vendi(0) == b.vendi(0)


data_params = st.tuples(
    st.integers(0, 2**31 - 1), st.integers(3, 40), st.integers(2, 12), st.sampled_from(["cosine", "rbf", "laplacian"])
)


# --- Theorem 3.1 (VS paper) / 4.1 (q paper) ------------------------------------------------
@pytest.mark.parametrize("q", QS)
def test_effective_number_all_dissimilar_gives_n(q):
    assert dc.vendi_score(np.eye(7), q=q) == pytest.approx(7.0, rel=1e-12)


@pytest.mark.parametrize("q", QS)
def test_effective_number_all_identical_gives_one(q):
    X = np.tile([[1.0, 2.0, 3.0]], (9, 1))
    assert dc.vendi_score(X, q=q) == pytest.approx(1.0, rel=1e-12)


@given(params=data_params, counts=st.lists(st.integers(1, 4), min_size=3, max_size=12))
def test_identical_elements_merge_into_weights(params, counts):
    """Duplicating items equals one copy each with weight proportional to its count."""
    seed, _, d, kernel = params
    n = len(counts)
    X = _features(seed, n, d)
    X_dup = np.repeat(X, counts, axis=0)
    sigma = {"sigma": 1.5} if kernel != "cosine" else {}
    a = dc.compute_spectrum(X_dup, kernel=kernel, method="dense", **sigma)
    b = dc.compute_spectrum(X, kernel=kernel, weights=np.array(counts, float), method="dense", **sigma)
    assert_same_scores(a, b, rtol=1e-8)


@given(params=data_params)
def test_permutation_symmetry(params):
    seed, n, d, kernel = params
    X = _features(seed, n, d)
    perm = np.random.default_rng(seed + 1).permutation(n)
    a = dc.compute_spectrum(X, kernel=kernel)
    b = dc.compute_spectrum(X[perm], kernel=kernel)
    assert_same_scores(a, b)


@given(seed=st.integers(0, 2**31 - 1), sizes=st.lists(st.integers(2, 15), min_size=2, max_size=4))
def test_partitioning_block_diagonal(seed, sizes):
    """VS_1 of a union of mutually dissimilar sets = exp(H(p_blocks)) * prod VS_1(S_i)^{p_i}."""
    rng = np.random.default_rng(seed)
    d = 3
    blocks = []
    for i, m in enumerate(sizes):
        B = np.zeros((m, d * len(sizes)))
        B[:, i * d:(i + 1) * d] = rng.standard_normal((m, d))  # disjoint coordinates: orthogonal sets
        blocks.append(B)
    X = np.vstack(blocks)
    p = np.array(sizes, float) / sum(sizes)
    parts = [dc.vendi_score(B, q=1) for B in blocks]
    expected = np.exp(-np.sum(p * np.log(p))) * np.prod([v**pi for v, pi in zip(parts, p)])
    assert dc.vendi_score(X, q=1) == pytest.approx(expected, rel=1e-9)


@given(sizes=st.lists(st.integers(1, 20), min_size=1, max_size=8).filter(lambda s: sum(s) >= 2))
def test_block_of_ones_is_hill_number(sizes):
    """K made of blocks of ones: eigenvalues M_i / sum M and VS_q = Hill number of order q."""
    n = sum(sizes)
    K = np.zeros((n, n))
    start = 0
    for m in sizes:
        K[start:start + m, start:start + m] = 1.0
        start += m
    spec = dc.spectrum_from_kernel(K)
    p = np.array(sizes, float) / n
    np.testing.assert_allclose(np.sort(spec.support)[::-1], np.sort(p)[::-1], rtol=1e-10, atol=1e-13)
    for q in QS:
        assert spec.vendi(q) == pytest.approx(hill_number(p, q), rel=1e-10), q


@given(params=data_params)
def test_non_increasing_in_q_and_bounds(params):
    seed, n, d, kernel = params
    spec = dc.compute_spectrum(_features(seed, n, d), kernel=kernel)
    qs = np.concatenate([[0.0], np.geomspace(0.01, 100, 60), [np.inf]])
    prof = spec.profile(qs)
    assert np.all(np.diff(prof) <= 1e-10 * prof[:-1])
    assert 1.0 - 1e-12 <= prof[-1] and prof[0] <= n + 1e-9
    vs2, vsinf = spec.vendi(2), spec.vendi(np.inf)
    assert math.sqrt(vs2) <= vsinf * (1 + 1e-12)
    assert vsinf <= vs2 * (1 + 1e-12)


@given(params=data_params, weighted=st.booleans())
def test_dual_equals_dense(params, weighted):
    seed, n, d, _ = params
    X = _features(seed, n, d)
    w = np.random.default_rng(seed).random(n) + 0.1 if weighted else None
    a = dc.compute_spectrum(X, kernel="cosine", weights=w, method="dual")
    b = dc.compute_spectrum(X, kernel="cosine", weights=w, method="dense")
    assert_same_scores(a, b)
    assert a.rank == b.rank == min(n, d)


# --- oracle: the vendi_score package ---------------------------------------------------------
@pytest.fixture(scope="module")
def vendi_pkg():
    """The ``vendi_score`` package (extra [test]): only the oracle tests skip without it."""
    return pytest.importorskip("vendi_score.vendi", reason="the oracle tests compare with vendi_score (extra [test])")


@pytest.mark.parametrize("q", [0.5, 1, 2, "inf", 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_oracle_score_K(rng, q, weighted, vendi_pkg):
    X = rng.standard_normal((60, 80))  # d > n: K is full rank, where the package is right for q < 1
    K = dc.kernel_matrix(X, kernel="rbf")
    p = None
    if weighted:
        p = rng.random(60)
        p /= p.sum()
    assert dc.score_K(K, q=q, weights=p) == pytest.approx(vendi_pkg.score_K(K, q=q, p=p), rel=1e-9)


@pytest.mark.parametrize("q", [0.5, 1, 2, "inf"])
def test_oracle_score_dual(rng, q, vendi_pkg):
    X = rng.standard_normal((500, 16))
    assert dc.score_dual(X, q=q) == pytest.approx(vendi_pkg.score_dual(X, q=q), rel=1e-9)
    assert dc.score_X(X, q=q) == pytest.approx(vendi_pkg.score_dual(X, q=q), rel=1e-9)


def test_oracle_score_X_q1_and_package_bug(rng, vendi_pkg):
    """The package's score_X ignores q; ours agrees at q = 1 and honours q elsewhere."""
    X = rng.standard_normal((100, 8))
    assert dc.score_X(X, q=1) == pytest.approx(vendi_pkg.score_X(X, q=1), rel=1e-9)
    assert vendi_pkg.score_X(X, q=2) == pytest.approx(vendi_pkg.score_X(X, q=1), rel=1e-12)  # the bug
    assert dc.score_X(X, q=2) == pytest.approx(vendi_pkg.score_dual(X, q=2), rel=1e-9)
    assert dc.score_X(X, q=2) < dc.score_X(X, q=1)


def test_oracle_score_with_similarity_function(rng, vendi_pkg):
    samples = list(rng.integers(0, 5, size=(30, 4)))

    def k(a, b):
        return float(np.mean(a == b))

    for q in [1, 2]:
        assert dc.score(samples, k, q=q) == pytest.approx(vendi_pkg.score(samples, k, q=q), rel=1e-9)


def test_package_inflates_q_below_one_on_rank_deficient_data(rng, vendi_pkg):
    """With n > d the package keeps round-off eigenvalues, so its VS_0.1 is wrong; ours = exact rank."""
    X = rng.standard_normal((300, 5))
    K = dc.kernel_matrix(X, kernel="cosine")
    ours = dc.score_K(K, q=0.0)
    assert ours == 5.0
    assert dc.score_K(K, q=0.1) <= 5.0
    assert vendi_pkg.score_K(K, q=0.1) > 5.0  # round-off eigenvalues counted by the package


# --- numerical cases -------------------------------------------------------------------------
def test_exact_duplicates(rng):
    X = rng.standard_normal((10, 4))
    X2 = np.vstack([X, X])
    for q in QS:
        assert dc.vendi_score(X2, q=q, method="dense") == pytest.approx(dc.vendi_score(X, q=q), rel=1e-9)


def test_rank_deficient_n_greater_than_d(rng):
    X = rng.standard_normal((400, 6))
    spec = dc.compute_spectrum(X, kernel="cosine", method="dense")
    assert spec.rank == 6
    assert spec.vendi(0) == 6.0
    assert spec.vendi(0.1) == pytest.approx(dc.compute_spectrum(X, method="dual").vendi(0.1), rel=1e-9)


def test_near_duplicates_are_continuous(rng):
    X = rng.standard_normal((20, 5))
    Xn = np.vstack([X, X + 1e-9 * rng.standard_normal(X.shape)])
    for q in [1.0, 2.0, np.inf]:
        assert dc.vendi_score(Xn, q=q, method="dense") == pytest.approx(dc.vendi_score(X, q=q), rel=1e-6)


@pytest.mark.parametrize("delta", [1e-10, -1e-10, 1e-8, -1e-6, 1e-3])
def test_q_near_one_matches_high_precision(rng, delta):
    mpmath = pytest.importorskip("mpmath", reason="the high-precision reference needs mpmath (extra [test])")
    lam = rng.random(50) ** 3
    lam /= lam.sum()
    q = 1.0 + delta
    with mpmath.workdps(60):
        # normalise in high precision: a float sum off 1 by eps moves the textbook formula by eps/|q-1|
        total = mpmath.fsum(mpmath.mpf(x) for x in lam)
        power_sum = mpmath.fsum((mpmath.mpf(x) / total) ** mpmath.mpf(q) for x in lam)
        ref = mpmath.exp(mpmath.log(power_sum) / (1 - mpmath.mpf(q)))
    got = dc.vendi_from_eigenvalues(lam, q)
    assert abs(got - float(ref)) <= 50 * EPS * float(ref)


def test_q_near_one_continuous_with_shannon(rng):
    spec = dc.compute_spectrum(rng.standard_normal((200, 10)))
    for q in [1 - 1e-10, 1 + 1e-10]:
        assert spec.vendi(q) == pytest.approx(spec.vendi(1.0), rel=1e-9)


def test_huge_q_is_finite_and_tends_to_inf_order(rng):
    spec = dc.compute_spectrum(rng.standard_normal((200, 10)))
    v = spec.vendi(1e6)
    assert np.isfinite(v)
    assert v == pytest.approx(spec.vendi(np.inf), rel=1e-5)
    assert v >= spec.vendi(np.inf)


def test_tiny_negative_eigenvalues_are_clipped(rng):
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    lam = np.array([3.0, 2.0, 1.0, 0.0, 0.0, -1e-10])
    K = (Q * lam) @ Q.T
    d = np.sqrt(np.diag(K))
    K = K / np.outer(d, d)
    with pytest.warns(SpectrumWarning, match="set to 0"):
        spec = dc.spectrum_from_kernel(K)
    assert spec.n_clipped >= 1
    assert np.all(spec.eigenvalues >= 0)
    assert spec.eigenvalues.sum() == pytest.approx(1.0, abs=1e-14)


def test_significantly_negative_kernel_raises():
    K = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])
    with pytest.raises(DiversityInputError, match="not positive semidefinite"):
        dc.spectrum_from_kernel(K)


def test_non_unit_diagonal_is_rescaled_with_warning(rng):
    X = rng.standard_normal((30, 4))
    K = dc.kernel_matrix(X, kernel="cosine")
    s = rng.random(30) + 0.5
    K2 = K * np.outer(s, s)
    with pytest.warns(KernelDiagonalWarning, match="diagonal is not 1"):
        v = dc.score_K(K2, q=2)
    assert v == pytest.approx(dc.score_K(K, q=2), rel=1e-10)


def test_linear_kernel_on_unnormalised_rows_warns(rng):
    X = 3.0 * rng.standard_normal((50, 4))
    with pytest.warns(KernelDiagonalWarning, match="renormalised"):
        dc.vendi_score(X, kernel="linear")


def test_float32_dual_close_to_float64(rng):
    X = rng.standard_normal((3000, 64))
    a = dc.compute_spectrum(X.astype(np.float32))
    b = dc.compute_spectrum(X)
    for q in [0.5, 1, 2, np.inf]:
        assert a.vendi(q) == pytest.approx(b.vendi(q), rel=1e-5)


# --- API behaviour ---------------------------------------------------------------------------
def test_profile_reuses_spectrum_and_matches_single_orders(rng):
    spec = dc.compute_spectrum(rng.standard_normal((100, 5)))
    qs, prof = dc.q_profile(spec)
    assert qs[0] == 0 and np.isinf(qs[-1])
    np.testing.assert_allclose(prof, [spec.vendi(q) for q in qs], rtol=1e-14)


@pytest.mark.parametrize("bad", [-1, float("nan"), "abc", [1, -2]])
def test_bad_q_raises(bad):
    with pytest.raises(DiversityInputError, match="order q"):
        dc.vendi_from_eigenvalues([0.5, 0.5], bad)


def test_vendi_score_rejects_several_q():
    with pytest.raises(DiversityInputError, match="q_profile"):
        dc.vendi_score(np.eye(3), q=[1, 2])


def test_inf_string_accepted():
    assert dc.vendi_from_eigenvalues([0.5, 0.25, 0.25], "inf") == 2.0


def test_eigenvectors_dual_match_dense(rng):
    X = rng.standard_normal((80, 5))
    a = dc.compute_spectrum(X, method="dual", n_eigenvectors=3)
    b = dc.compute_spectrum(X, method="dense", n_eigenvectors=3)
    for j in range(3):
        assert abs(a.eigenvectors[:, j] @ b.eigenvectors[:, j]) == pytest.approx(1.0, abs=1e-8)


def test_no_warning_for_clean_input(rng):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dc.compute_spectrum(rng.standard_normal((100, 5)), kernel="rbf").vendi(0.5)


@pytest.mark.parametrize("func", ["score_K", "score_X", "score"])
def test_p_is_a_deprecated_alias_of_weights(rng, func):
    """``weights`` is the one name for item probabilities; the package's ``p=`` warns and means the same."""
    X = rng.standard_normal((12, 3))
    w = rng.random(12)
    args = {"score_K": (dc.kernel_matrix(X, kernel="rbf"),), "score_X": (X,),
            "score": (list(X), lambda a, b: float(np.exp(-np.sum((a - b) ** 2))))}[func]
    f = getattr(dc, func)
    expected = f(*args, q=2, weights=w)
    with pytest.warns(DeprecationWarning, match=r"p= is deprecated; use weights="):
        assert f(*args, q=2, p=w) == expected
    with pytest.warns(DeprecationWarning), pytest.raises(DiversityInputError, match=r"give weights= or .* p=, not both"):
        f(*args, q=2, weights=w, p=w)
    assert f(*args, 2, w) == expected  # the third positional argument is the weights, as in the package
