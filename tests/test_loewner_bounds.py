"""Guaranteed bounds from a Nystrom sketch (diversity_core.approx.loewner): Weyl + majorisation.

The sketch lies below K in the PSD order, so its eigenvalues bound the true ones from below;
the bounds must contain the exact value for every dataset, kernel, landmark rule and order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bounds import QS, _contains, _thresholded_profile, datasets

from diversity_core._config import config_context
from diversity_core.approx import bounds_from_lower_eigenvalues, nystrom_bounds, vendi_bounds
from diversity_core.approx._band import _water_fill
from diversity_core.exceptions import DiversityInputError
from diversity_core.spectrum import compute_spectrum


@st.composite
def spectra_with_lower_bounds(draw):
    """A probability vector and Weyl lower bounds on it: the spectrum of a PSD matrix below it."""
    n = draw(st.integers(2, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    A = rng.normal(size=(n, draw(st.integers(1, n))))
    rho = A @ A.T
    rho /= np.trace(rho)
    # a projection of rho's square root onto a random subspace: rho_nys = B P B^T <= rho
    w, U = np.linalg.eigh(rho)
    B = U * np.sqrt(np.clip(w, 0, None))
    Q, _ = np.linalg.qr(rng.normal(size=(n, draw(st.integers(0, n)) or 1)))
    mu = np.linalg.eigvalsh(B @ Q @ Q.T @ B.T)[::-1]
    return np.sort(np.clip(w, 0, None))[::-1], np.clip(mu, 0, None)


@given(spectra_with_lower_bounds(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_lower_eigenvalue_bounds_contain_exact(case, with_purity):
    lam, mu = case
    lam = lam / lam.sum()
    purity = float(np.sum(lam**2)) if with_purity else None
    low, high = bounds_from_lower_eigenvalues(mu, lam.size, QS, purity=purity)
    exact = _thresholded_profile(lam, QS)
    assert _contains(low, high, exact).all(), QS[~_contains(low, high, exact)]


def test_water_fill_is_flattest_with_unit_mass():
    flat = _water_fill(np.array([0.5, 0.2]), 5)
    assert flat.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.sort(flat)[::-1], [0.5, 0.2, 0.1, 0.1, 0.1])
    # nothing missing: the spectrum is mu itself, and both bounds are exact
    lam = np.array([0.4, 0.3, 0.2, 0.1])
    low, high = bounds_from_lower_eigenvalues(lam, 4, [0.5, 1.0, 2.0, np.inf], tolerance=0.0)
    np.testing.assert_allclose(low, high, rtol=1e-9)


def test_no_lower_bounds_give_the_trivial_band():
    low, high = bounds_from_lower_eigenvalues([], 10, [1.0, np.inf])
    np.testing.assert_allclose(low, [1.0, 1.0])
    np.testing.assert_allclose(high, [10.0, 10.0], rtol=1e-9)


@given(datasets(), st.sampled_from(["rpcholesky", "greedy", "uniform"]), st.integers(2, 40))
@settings(max_examples=40, deadline=None)
def test_nystrom_bounds_contain_exact_on_random_datasets(data, landmarks, m):
    X, kind, params = data
    exact = compute_spectrum(X, kernel=kind, method="dense", **params).profile(QS)
    b = nystrom_bounds(X, kernel=kind, m=m, q=QS, landmarks=landmarks, rng=0, **params)
    assert _contains(b.low, b.high, exact).all(), QS[~_contains(b.low, b.high, exact)]
    assert b.settings["method"] == "nystrom" and 0 <= b.residual_mass <= 1


def test_nystrom_bounds_with_weights_float32_and_exact_vs2(rng):
    X = (rng.normal(size=(400, 6)) + rng.integers(0, 4, size=(400, 1)) * 3).astype(np.float32)
    w = rng.uniform(0.1, 5.0, size=400)
    exact = compute_spectrum(X.astype(np.float64), kernel="rbf", sigma=1.5, weights=w, method="dense").profile(QS)
    b = nystrom_bounds(X, kernel="rbf", sigma=1.5, weights=w, m=60, q=QS, replicates=2, exact_vs2=True, rng=1)
    assert _contains(b.low, b.high, exact).all()
    lo2, hi2 = b.interval(2.0)
    assert hi2 / lo2 - 1 < 1e-8 and b.exact_orders == ("2",)


def test_bands_narrow_as_m_grows(rng):
    X = rng.normal(size=(800, 3))
    widths = [nystrom_bounds(X, kernel="rbf", sigma=1.0, m=m, q=[1.0], rng=0).width(1.0) for m in (20, 80, 300)]
    assert widths[0] > widths[1] > widths[2]


def test_auto_takes_nystrom_beyond_the_float32_matrix(rng):
    X = rng.normal(size=(1500, 4))
    with config_context(memory_budget=4 * 1500 * 1500):     # below the float32 matrix's 1.25 x
        b = vendi_bounds(X, kernel="rbf", sigma=1.0, q=[1.0, 2.0], m=200, rng=0)
    assert b.settings["method"] == "nystrom" and b.settings["exact_vs2"] is True
    assert vendi_bounds(X, kernel="rbf", sigma=1.0, q=[1.0], k=20, rng=0).settings["method"] == "lanczos"
    exact = compute_spectrum(X, kernel="rbf", sigma=1.0, method="dense").profile([1.0, 2.0])
    assert _contains(b.low, b.high, exact).all()


def test_nystrom_bounds_refuse_what_they_cannot_sketch(rng):
    K = np.eye(5)
    with pytest.raises(DiversityInputError, match="precomputed"):
        nystrom_bounds(K, kernel="precomputed")
    with pytest.raises(DiversityInputError, match="storage"):
        vendi_bounds(rng.normal(size=(20, 2)), kernel="rbf", method="nystrom", storage="float32")
    with pytest.raises(DiversityInputError, match="at most n"):
        bounds_from_lower_eigenvalues([0.6, 0.6], 2, [1.0])


def test_bounds_at_other_orders_use_the_lower_bound_rule(rng):
    X = rng.normal(size=(500, 3))
    b = nystrom_bounds(X, kernel="rbf", sigma=1.0, m=80, q=[1.0, 2.0], exact_vs2=True, rng=0)
    lo, hi = b.bounds_at([1.0, 2.0, 0.5, np.inf])
    np.testing.assert_allclose(lo[:2], b.low, rtol=1e-12)
    np.testing.assert_allclose(hi[:2], b.high, rtol=1e-12)
    exact = compute_spectrum(X, kernel="rbf", sigma=1.0, method="dense").profile([0.5, np.inf])
    assert _contains(lo[2:], hi[2:], exact).all()


@given(datasets(), st.integers(3, 30))
@settings(max_examples=15, deadline=None)
def test_nystrom_estimates_carry_a_range_that_holds_the_full_sample_value(data, m):
    from diversity_core.approx import vendi_estimate

    X, kind, params = data
    qs = [1.0, 2.0, np.inf]
    exact = compute_spectrum(X, kernel=kind, method="dense", **params).profile(qs)
    e = vendi_estimate(X, kernel=kind, method="nystrom", m=m, q=qs, replicates=2, rng=0, **params)
    assert _contains(e.guaranteed_low, e.guaranteed_high, exact).all()
    assert not e.guaranteed_low.flags.writeable
    assert e.to_dict()["guaranteed_high"] == e.guaranteed_high.tolist()


def test_random_feature_estimates_claim_no_guaranteed_range(rng):
    from diversity_core.approx import vendi_estimate

    e = vendi_estimate(rng.normal(size=(200, 3)), kernel="rbf", sigma=1.0, method="rff", D=32, replicates=2, rng=0)
    assert e.guaranteed(1.0) is None and e.to_dict()["guaranteed_low"] is None
