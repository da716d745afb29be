"""Guaranteed bounds on VS_q (diversity_core.approx.bounds): they must contain the exact value, always."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diversity_core._config import config_context
from diversity_core._json import dumps
from diversity_core.approx import (
    VendiBounds,
    bounds_from_eigenvalues,
    bounds_method,
    iter_vendi_bounds,
    vendi_bounds,
    vs_inf_exact,
)
from diversity_core.entropy import vendi_from_eigenvalues
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import kernel_matrix
from diversity_core.spectrum import compute_spectrum, spectrum_from_kernel

QS = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.5, 2.0, 3.0, 10.0, np.inf])
#: the bounds are certain; this slack only absorbs the exact path's own round-off
RTOL = 1e-9


def _thresholded_profile(lam: np.ndarray, qs) -> np.ndarray:
    """VS_q of a probability vector with the Spectrum's support rule (n eps lambda_max)."""
    lam = np.sort(lam)[::-1]
    tol = lam.size * np.finfo(np.float64).eps * lam[0]
    kept = lam[lam > tol]
    return vendi_from_eigenvalues(kept / kept.sum(), qs, normalized=True)


def _contains(low, high, exact) -> np.ndarray:
    return (low <= exact * (1 + RTOL)) & (exact <= high * (1 + RTOL))


@st.composite
def spectra(draw):
    """A probability vector (some shapes: flat, geometric, sparse support) and a k."""
    n = draw(st.integers(2, 80))
    shape = draw(st.sampled_from(["dirichlet", "geometric", "support"]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if shape == "dirichlet":
        lam = rng.dirichlet(np.full(n, draw(st.floats(0.05, 3.0))))
    elif shape == "geometric":
        lam = np.exp(-draw(st.floats(0.01, 3.0)) * np.arange(n))
    else:
        lam = np.zeros(n)
        r = draw(st.integers(1, n))
        lam[:r] = rng.uniform(size=r)
    lam = np.sort(lam / lam.sum())[::-1]
    k = draw(st.integers(0, n))
    return lam, k


@given(spectra(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_bounds_contain_exact_for_every_q(case, with_purity):
    lam, k = case
    purity = float(np.sum(lam**2)) if with_purity else None
    low, high = bounds_from_eigenvalues(lam[:k], lam.size, QS, purity=purity)
    exact = _thresholded_profile(lam, QS)
    assert _contains(low, high, exact).all(), (k, QS[~_contains(low, high, exact)])


@given(spectra(), st.floats(1e-9, 1e-3))
@settings(max_examples=100, deadline=None)
def test_bounds_hold_with_perturbed_top_values(case, delta):
    # the top values are only known to within delta: any perturbation within it is covered
    lam, k = case
    rng = np.random.default_rng(k)
    top = np.clip(lam[:k] + rng.uniform(-delta, delta, size=k), 0, None)
    low, high = bounds_from_eigenvalues(top, lam.size, QS, purity=float(np.sum(lam**2)), tolerance=delta)
    assert _contains(low, high, _thresholded_profile(lam, QS)).all()


def test_whole_spectrum_gives_exact_values():
    lam = np.array([0.4, 0.3, 0.2, 0.1])
    low, high = bounds_from_eigenvalues(lam, 4, QS, purity=float(np.sum(lam**2)))
    exact = vendi_from_eigenvalues(lam, QS, normalized=True)
    np.testing.assert_allclose(low, exact, rtol=1e-8)
    np.testing.assert_allclose(high, exact, rtol=1e-8)


def test_k_zero_with_purity_brackets_vs2_and_vs_inf():
    # Part 1's interval: sqrt(VS_2) <= VS_inf <= VS_2, and VS_2 itself exact
    lam = np.array([0.5, 0.2, 0.2, 0.1])
    purity = float(np.sum(lam**2))
    low, high = bounds_from_eigenvalues([], 4, [2.0, np.inf], purity=purity)
    assert low[0] == pytest.approx(1 / purity) and high[0] == pytest.approx(1 / purity)
    assert low[1] <= 2.0 <= high[1]
    assert low[1] == pytest.approx(np.sqrt(1 / purity), rel=1e-8)


def test_rank_bounds():
    lam = np.array([0.5, 0.3, 0.1, 0.05, 0.05])
    low, high = bounds_from_eigenvalues(lam[:2], 5, [0.0])
    # 0.2 of mass left, each piece <= 0.3: at least one more eigenvalue; at most all five
    assert low[0] == 3 and high[0] == 5


def test_bounds_reject_bad_input():
    with pytest.raises(DiversityInputError, match="at most n"):
        bounds_from_eigenvalues([0.5, 0.3, 0.2], 2, [1.0])
    with pytest.raises(DiversityInputError, match="storage must be one of"):
        vendi_bounds(np.eye(4), kernel="rbf", storage="disk")


@st.composite
def datasets(draw):
    """A small random dataset (clusters at random scales) and a kernel without a feature map."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(30, 90))
    kind = draw(st.sampled_from(["rbf", "laplacian", "tanimoto"]))
    if kind == "tanimoto":
        X = (rng.random((n, 64)) < draw(st.floats(0.05, 0.4))).astype(float)
        return X, kind, {}
    centres = rng.normal(size=(draw(st.integers(1, 6)), 5)) * draw(st.floats(0.1, 5.0))
    X = centres[rng.integers(len(centres), size=n)] + rng.normal(scale=0.3, size=(n, 5))
    return X, kind, {"sigma": draw(st.sampled_from([None, 0.3, 3.0]))}


@given(datasets(), st.sampled_from(["float64", "float32", "matrix-free"]))
@settings(max_examples=30, deadline=None)
def test_vendi_bounds_contain_exact_on_random_datasets(data, storage):
    X, kind, params = data
    exact = compute_spectrum(X, kernel=kind, method="dense", **params).profile(QS)
    for b in iter_vendi_bounds(X, kernel=kind, ks=[3, 10], q=QS, storage=storage, rng=0, **params):
        assert _contains(b.low, b.high, exact).all(), (b.k, QS[~_contains(b.low, b.high, exact)])


def test_bounds_tighten_as_k_grows(rng):
    X = rng.normal(size=(300, 4))
    widths = [b.width(1.0) for b in iter_vendi_bounds(X, kernel="rbf", ks=[5, 20, 60], q=[1.0], rng=0)]
    assert widths[0] >= widths[1] >= widths[2] >= widths[3]
    assert widths[3] < 0.5 * widths[1]


def test_vendi_bounds_result(rng):
    X = rng.normal(size=(200, 3))
    b = vendi_bounds(X, kernel="rbf", k=30, q=[0.5, 1.0, 2.0, "inf"], rng=0)
    assert isinstance(b, VendiBounds) and b.k == 30 and b.settings["ks"] == [20, 30]
    assert b.exact_orders == ("2", "inf")
    spec = compute_spectrum(X, kernel="rbf")
    lo, hi = b.interval(2)
    assert lo == pytest.approx(spec.vendi(2), rel=1e-8) and hi == pytest.approx(spec.vendi(2), rel=1e-8)
    lo, hi = b.interval("inf")
    assert lo == pytest.approx(spec.vendi(np.inf), rel=1e-8) and hi == pytest.approx(spec.vendi(np.inf), rel=1e-8)
    assert b.low.flags.writeable is False
    with pytest.raises(DiversityInputError, match="was not computed"):
        b.interval(3.0)
    payload = json.loads(dumps(b.to_dict()))
    assert payload["qs"][-1] == "inf" and payload["k"] == 30
    assert payload["purity"] == pytest.approx(b.purity)  # what bounds_at needs besides the eigenvalues


def test_weights_and_precomputed(rng):
    X = rng.normal(size=(120, 3))
    w = rng.uniform(0.1, 1.0, size=120)
    exact = compute_spectrum(X, kernel="rbf", sigma=1.0, weights=w).profile(QS)
    b = vendi_bounds(X, kernel="rbf", sigma=1.0, weights=w, k=15, q=QS, rng=0)
    assert _contains(b.low, b.high, exact).all()
    K = kernel_matrix(X, kernel="rbf", sigma=1.0)
    exact_k = spectrum_from_kernel(K).profile(QS)
    b = vendi_bounds(K, kernel="precomputed", k=15, q=QS, rng=0)
    assert _contains(b.low, b.high, exact_k).all()


def test_time_budget_stops_the_progression(rng):
    X = rng.normal(size=(400, 3))
    b = vendi_bounds(X, kernel="rbf", k=200, q=[1.0], time_budget=1e-6, rng=0)
    assert b.k == 0 and "time budget" in b.settings["stopped"]
    lo, hi = b.interval(1.0)
    assert 1.0 <= lo <= hi <= 400


def test_vs_inf_exact(rng):
    X = rng.normal(size=(150, 4))
    assert vs_inf_exact(X, kernel="laplacian") == pytest.approx(
        compute_spectrum(X, kernel="laplacian").vendi(np.inf), rel=1e-9
    )


def test_vs_inf_exact_stays_exact_beyond_the_float32_matrix(rng):
    # where vendi_bounds(method="auto") would take Nystrom lower bounds, VS_inf must still come
    # from Lanczos (matrix-free products), not from a sketch's upper bound
    X = rng.normal(size=(300, 6))
    exact = compute_spectrum(X, kernel="rbf").vendi(np.inf)
    with config_context(memory_budget=200_000):
        assert bounds_method(X, "rbf") == "nystrom"
        assert vs_inf_exact(X, kernel="rbf", rng=0) == pytest.approx(exact, rel=1e-9)


def test_interval_is_the_pair_and_vendi_is_deprecated(rng):
    """``.interval(q)`` gives the bounds as a ConfidenceInterval; the old tuple-returning ``.vendi(q)`` warns."""
    from diversity_core._stats import ConfidenceInterval
    from diversity_core.compare import ConfidenceInterval as FromCompare

    X = rng.normal(size=(80, 3))
    b = vendi_bounds(X, kernel="rbf", k=5, q=[1.0, 2.0], rng=0)
    ci = b.interval(1.0)
    assert isinstance(ci, ConfidenceInterval) and FromCompare is ConfidenceInterval
    assert (ci.low, ci.high) == (float(b.low[0]), float(b.high[0]))
    assert b.width(1.0) == ci.high / ci.low - 1.0 and b.contains(1.0, ci.low)
    with pytest.warns(DeprecationWarning, match=r"VendiBounds\.vendi\(q\) is deprecated; use VendiBounds\.interval"):
        assert b.vendi(1.0) == ci


def test_support_rule_is_shared(rng):
    """The bounds count VS_0 with the Spectrum's threshold m eps max (one function, entropy.support_tol)."""
    from diversity_core.entropy import EPS64, support_tol

    assert support_tol(7, 0.25, EPS64) == 7 * EPS64 * 0.25
    X = rng.normal(size=(40, 2))  # rank 2 under the cosine kernel: VS_0 = 2
    spec = compute_spectrum(X, kernel="cosine", method="dense")
    assert spec.eps == EPS64 and spec.tol == pytest.approx(support_tol(40, spec.eigenvalues[0]), rel=1e-12)
    lo, hi = bounds_from_eigenvalues(spec.eigenvalues, 40, [0.0])
    assert lo[0] == hi[0] == spec.rank == 2
