"""diversity_core.preprocess: standardise, PCA, L2, and the feature-scale warning (issue 16, item 9)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import diversity_core as dc
from diversity_core.exceptions import DiversityInputError
from diversity_core.preprocess import parse_steps, preprocess, scale_spread, scale_warning

EPS = np.finfo(np.float64).eps


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def wine_like(rng, n=178):
    """13 features on the unit scale and one (like wine's proline) in the thousands."""
    X = rng.normal(size=(n, 13))
    X[:, 12] = 750.0 + 300.0 * rng.normal(size=n)
    return X


def test_standardize_gives_z_scores_and_zero_for_constant_features(rng):
    X = rng.normal(size=(50, 4)) * [1.0, 10.0, 1000.0, 0.0] + 5.0
    Z = preprocess(X, steps="standardize")
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=100 * EPS * 1000)
    np.testing.assert_allclose(Z.std(axis=0)[:3], 1.0, rtol=100 * EPS)
    assert np.all(Z[:, 3] == 0.0)


def test_one_large_column_no_longer_decides_the_score(rng):
    """Raw, the column in the thousands makes every cosine ~1 (VS_1 near 1); standardised, the
    items are many distinct ones again."""
    X = wine_like(rng)
    raw = dc.vendi_score(X, kernel="cosine")
    standardised = dc.vendi_score(preprocess(X, steps="standardize"), kernel="cosine")
    assert raw < 1.2
    assert standardised > 5 * raw


def test_pca_keeps_k_dimensions_and_the_variance_order(rng):
    X = rng.normal(size=(40, 6)) * [10.0, 5.0, 1.0, 0.5, 0.1, 0.01]
    P = preprocess(X, steps="pca", n_components=3)
    assert P.shape == (40, 3)
    var = P.var(axis=0)
    assert var[0] >= var[1] >= var[2]
    # k >= rank keeps every distance between items
    full = preprocess(X, steps="pca", n_components=6)
    D = lambda A: np.linalg.norm(A[:, None] - A[None], axis=-1)  # noqa: E731
    np.testing.assert_allclose(D(full), D(X), atol=1e3 * EPS * np.abs(X).max())


def test_l2_rows_have_unit_norm_dense_and_sparse(rng):
    X = rng.normal(size=(10, 5))
    X[3] = 0.0
    L = preprocess(X, steps="l2")
    norms = np.linalg.norm(L, axis=1)
    np.testing.assert_allclose(np.delete(norms, 3), 1.0, rtol=10 * EPS)
    assert norms[3] == 0.0
    S = preprocess(sp.csr_matrix(X), steps="l2")
    assert sp.issparse(S)
    np.testing.assert_allclose(S.toarray(), L, rtol=10 * EPS)


def test_steps_run_in_a_fixed_order():
    assert parse_steps("l2,standardise") == ("standardize", "l2")
    assert parse_steps(["pca", "standardize"]) == ("standardize", "pca")
    assert parse_steps("none") == () and parse_steps(None) == ()


def test_errors(rng):
    with pytest.raises(DiversityInputError, match="unknown preprocessing step 'whiten'; choose one of"):
        preprocess(rng.normal(size=(5, 2)), steps="whiten")
    with pytest.raises(DiversityInputError, match="'pca' step needs n_components"):
        preprocess(rng.normal(size=(5, 2)), steps="pca")
    with pytest.raises(DiversityInputError, match="standardize would densify these sparse features"):
        preprocess(sp.csr_matrix(np.eye(3)), steps="standardize")


def test_scale_warning_names_the_features_and_the_fix(rng):
    X = wine_like(rng)
    assert scale_spread(X) > 100
    message = scale_warning(X)
    assert "orders of magnitude" in message and "feature 12" in message and "Standardise" in message
    assert scale_warning(preprocess(X, steps="standardize")) is None
    assert scale_spread(sp.csr_matrix(X)) == 1.0


def test_cli_inspect_warns_on_scales_and_accepts_preprocess(tmp_path, rng, capsys):
    from diversity_core.cli import main

    path = tmp_path / "wine.npy"
    np.save(path, wine_like(rng))
    with pytest.warns(dc.DiversityWarning, match=r"orders of magnitude.*--preprocess standardize"):
        assert main(["inspect", str(path)]) == 0
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", dc.DiversityWarning)
        assert main(["inspect", str(path), "--preprocess", "standardize"]) == 0
    assert main(["inspect", str(path), "--preprocess", "whiten"]) == 2
    assert "unknown preprocessing step 'whiten'" in capsys.readouterr().err
