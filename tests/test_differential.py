"""Differential spectra (issue 43, items 1-4): novel and missing modes, KEN, RRKE, the permutation null, the CLI.

Oracles: the explicit feature-space difference of covariances for a finite feature map, the block
matrix of Zhang, Li & Farnia (2024) decomposed by a non-symmetric eigensolver, the authors' KEN
formula (normalised entropy times positive mass) and the RRKE code's formula (minus the log of the
squared nuclear norm of K_XY / sqrt(nm)), each written out here independently of the package.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import diversity_core as dc
from diversity_core import config_context
from diversity_core.cli import main
from diversity_core.differential import (
    ModeNull,
    NoveltySpectrum,
    ken_score,
    missing_modes,
    mode_null,
    novelty_report,
    novelty_spectrum,
    rrke,
    top_mode_items,
)
from diversity_core.exceptions import DiversityInputError, MemoryBudgetError
from diversity_core.kernels import get_kernel

TOL = 1e-10


def _mixture(rng, counts, centres, scale=0.3):
    """Rows drawn around ``centres`` (one block per count), in order."""
    return np.vstack([c + scale * rng.standard_normal((k, centres.shape[1])) for k, c in zip(counts, centres)])


def _centres(k, d=6, spread=4.0, seed=1):
    return spread * np.random.default_rng(seed).standard_normal((k, d))


def _block_matrix(Kxx, Kxy, Kyy, eta):
    """The (n + m) x (n + m) matrix of the KEN paper and code (not symmetric)."""
    n, m = Kxy.shape
    top = np.hstack([Kxx / n, math.sqrt(eta) * Kxy / math.sqrt(n * m)])
    bottom = np.hstack([-math.sqrt(eta) * Kxy.T / math.sqrt(n * m), -eta * Kyy / m])
    return np.vstack([top, bottom])


# ---------------------------------------------------------------------------------------
# the block form, the feature space and the dense factor agree
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("eta", [1.0, 0.5, 2.0])
def test_block_form_equals_the_explicit_feature_space_difference(rng, eta):
    X, Y = rng.standard_normal((40, 5)), rng.standard_normal((30, 5)) + 0.5
    explicit = np.linalg.eigvalsh(X.T @ X / 40 - eta * Y.T @ Y / 30)[::-1]
    block = np.linalg.eigvals(_block_matrix(X @ X.T, X @ Y.T, Y @ Y.T, eta))
    block = np.sort(block.real[np.abs(block) > 1e-9])[::-1]
    np.testing.assert_allclose(block, explicit, rtol=0, atol=TOL)
    for method in ("features", "dense"):
        spec = novelty_spectrum(X, Y, kernel="linear", eta=eta, method=method, n_modes=5)
        nonzero = spec.eigenvalues[np.abs(spec.eigenvalues) > 1e-9]
        np.testing.assert_allclose(nonzero, explicit, rtol=0, atol=TOL, err_msg=method)
        # loadings <phi(x), v> with the explicit unit eigenvectors (same sign convention)
        w, V = np.linalg.eigh(X.T @ X / 40 - eta * Y.T @ Y / 30)
        V = V[:, ::-1]
        ref_x, ref_y = X @ V, Y @ V
        flip = np.where(ref_x.sum(axis=0) < 0, -1.0, 1.0)
        np.testing.assert_allclose(spec.loadings_generated, (ref_x * flip), atol=1e-8, err_msg=method)
        np.testing.assert_allclose(spec.loadings_reference, (ref_y * flip), atol=1e-8, err_msg=method)


def test_dense_route_matches_the_block_form_for_rbf(rng):
    X, Y = rng.standard_normal((50, 3)), rng.standard_normal((35, 3))
    kern = get_kernel("rbf", sigma=1.3)
    spec = novelty_spectrum(X, Y, kernel=kern, method="dense", eta=1.5)
    block = np.linalg.eigvals(_block_matrix(kern.gram(X), kern.gram(X, Y), kern.gram(Y), 1.5)).real
    top = np.sort(block)[::-1][:10]
    np.testing.assert_allclose(spec.eigenvalues[:10], top, atol=1e-10)
    assert spec.exact and spec.kind == "exact" and spec.method == "dense"


# ---------------------------------------------------------------------------------------
# KEN and RRKE against the reference formulas
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,method", [("linear", "features"), ("rbf", "dense"), ("cosine", "features")])
def test_ken_matches_the_paper_and_the_reference_code(rng, kernel, method):
    X = _mixture(rng, [30, 30, 20], _centres(3))
    Y = _mixture(rng, [40, 40], _centres(3)[:2])
    kern = get_kernel(kernel, sigma=2.0) if kernel == "rbf" else get_kernel(kernel)
    spec = novelty_spectrum(X, Y, kernel=kern, method=method)
    lam = np.linalg.eigvals(_block_matrix(kern.gram(X), kern.gram(X, Y), kern.gram(Y), 1.0)).real
    pos = lam[lam > 1e-12]
    paper = -(pos * np.log(pos)).sum()
    p = pos / pos.sum()
    code = -(p * np.log(p)).sum() * pos.sum()  # Categorical(probs).entropy() * sum, as the authors' code
    assert spec.ken == pytest.approx(paper, abs=TOL)
    assert spec.ken_reference_code == pytest.approx(code, abs=TOL)
    assert ken_score(X, Y, kernel=kern, method=method, n_resamples=0).value == pytest.approx(paper, abs=TOL)


@pytest.mark.parametrize("kernel,method", [("linear", "features"), ("cosine", "features"), ("rbf", "dense"),
                                           ("cosine", "dense")])
def test_rrke_matches_the_explicit_formulas(rng, kernel, method):
    X, Y = rng.standard_normal((45, 4)) + 1.0, rng.standard_normal((30, 4)) + 1.2
    kern = get_kernel(kernel, sigma=1.7) if kernel == "rbf" else get_kernel(kernel)
    Kxy = kern.gram(X, Y)
    order2 = -math.log((Kxy ** 2).sum() / (45 * 30))
    half = -math.log(np.linalg.svd(Kxy / math.sqrt(45 * 30), compute_uv=False).sum() ** 2)  # the RKE code's
    assert rrke(X, Y, kernel=kern, order=2, method=method, n_resamples=0).value == pytest.approx(order2, rel=TOL)
    assert rrke(X, Y, kernel=kern, order=0.5, method=method, n_resamples=0).value == pytest.approx(half, rel=TOL)


def test_rrke_is_zero_for_one_set_at_order_half_and_log_vs2_at_order_two(rng):
    X = rng.standard_normal((60, 5))
    assert rrke(X, X, kernel="cosine", n_resamples=0).value == pytest.approx(0.0, abs=1e-10)
    vs2 = dc.vendi_score(X, kernel="cosine", q=2)
    assert rrke(X, X, kernel="cosine", order=2, n_resamples=0).value == pytest.approx(math.log(vs2), rel=1e-10)


# ---------------------------------------------------------------------------------------
# constructed data with known answers (item 4)
# ---------------------------------------------------------------------------------------
ROUTES = [("rbf", "dense"), ("rbf", "rff"), ("cosine", "features")]


def _sketch(method):
    """A smaller sketch than the default for the tests' few items (256 frequencies, 512 features)."""
    return {"n_frequencies": 256} if method == "rff" else {}


def _sets(seed, *, new=25):
    """R from three clusters; G from the same three (fresh draws) plus ``new`` items of a fourth, last."""
    rng = np.random.default_rng(seed)
    C = _centres(4, seed=seed + 100) + 3.0  # away from the origin: cosine separates them too
    R = _mixture(rng, [40, 40, 40], C[:3])
    G = np.vstack([_mixture(rng, [35, 35, 35], C[:3]), _mixture(rng, [new], C[3:])])
    return G, R


@pytest.mark.parametrize("kernel,method", ROUTES)
def test_a_new_cluster_is_the_top_novel_mode(kernel, method):
    G, R = _sets(0)
    spec = novelty_spectrum(G, R, kernel=kernel, method=method, rng=0, **_sketch(method))
    cluster = set(range(105, 130))
    assert set(top_mode_items(spec, 0, 25).tolist()) == cluster
    # its share is about the cluster's frequency in G (25 / 130), and well above the next mode's
    assert spec.shares[0] > 0.12 and spec.eigenvalues[0] > 4 * spec.eigenvalues[1]
    null = mode_null(G, R, kernel=kernel, method=method, n_permutations=39, rng=0, **_sketch(method))
    assert null.outside[0] and null.n_outside >= 1


@pytest.mark.parametrize("kernel,method", ROUTES)
def test_a_dropped_cluster_is_the_top_missing_mode(kernel, method):
    G, R = _sets(1)
    # swap the roles: the reference has the fourth cluster, the generated set lacks it
    spec = missing_modes(R, G, kernel=kernel, method=method, rng=0, **_sketch(method))
    assert spec.role == "missing" and spec.owner == "reference"
    assert set(spec.top_items(0, 25).tolist()) == set(range(105, 130))
    assert spec.loadings_reference[105:, 0].min() > spec.loadings_reference[:105, 0].max()


def test_the_sign_convention_makes_the_owning_loadings_sum_non_negative():
    G, R = _sets(2)
    for spec in (novelty_spectrum(G, R, kernel="cosine"), missing_modes(R, G, kernel="cosine")):
        own = spec.loadings(spec.owner)
        assert np.all(own.sum(axis=0) >= 0)


def _one_distribution(seed, n=60):
    """Two sets of n items drawn i.i.d. from one mixture of three clusters (labels drawn, not stratified)."""
    rng = np.random.default_rng(seed)
    C = _centres(3, d=4, seed=7) + 2.0
    return [C[rng.integers(0, 3, n)] + 0.8 * rng.standard_normal((n, 4)) for _ in range(2)]


def test_one_distribution_finds_no_mode_outside_the_null_in_95_percent_of_seeds():
    """Issue 43, item 4: G and R from one distribution, no mode called real in at least 38 of 40 seeds (level 0.99)."""
    called = 0
    for seed in range(40):
        G, R = _one_distribution(1000 + seed)
        called += mode_null(G, R, kernel="cosine", n_permutations=99, level=0.99, n_modes=5, rng=seed).n_outside > 0
    assert called <= 2, f"{called} of 40 seeds found a mode outside the null"


def test_the_null_is_calibrated_at_its_level():
    """At level 0.95 about 5% of null pairs call a mode (family-wise), and the top mode's p-value is uniform.

    Measured: 7 of 100 seeds (binomial sd 2.2); an anti-conservative null (e.g. the observed pair left out of
    exchangeability) would call many more, and a stratified draw (equal cluster counts in G and R) far fewer.
    """
    called, ps = 0, []
    for seed in range(100):
        G, R = _one_distribution(seed)
        res = mode_null(G, R, kernel="cosine", n_permutations=39, n_modes=5, rng=seed)
        called += res.n_outside > 0
        ps.append(res.p_values[0])
    assert called <= 12
    assert 0.4 < np.mean(ps) < 0.6


def test_the_null_reports_its_threshold_and_p_values(rng):
    G, R = _sets(3)
    res = mode_null(G, R, kernel="cosine", n_permutations=19, rng=0)
    assert isinstance(res, ModeNull) and res.n_permutations == 19 and res.level == 0.95
    assert res.p_values[0] == pytest.approx(1 / 20)
    assert res.observed[0] > res.threshold >= np.quantile(res.null, 0.5)
    assert set(res.to_dict()) >= {"threshold", "p_values", "outside", "null", "note"}


def test_the_null_subsamples_when_the_pooled_rows_exceed_the_budget(rng):
    G, R = rng.standard_normal((400, 8)), rng.standard_normal((400, 8))
    with config_context(memory_budget=8 * 800 * 8 * 2 * 2):  # half of what the rows need at a quarter share
        res = mode_null(G, R, kernel="linear", n_permutations=5, rng=0)
    assert res.n_generated < 400 and "conservative" in res.note


# ---------------------------------------------------------------------------------------
# random Fourier features converge to the exact rbf answer
# ---------------------------------------------------------------------------------------
def test_rff_eigenvalues_converge_to_the_exact_rbf_ones_within_the_stated_bound():
    """|lambda_hat - lambda| <= 2 sqrt(1 + eta) ||K_f_hat - K_f||^(1/2) (Weyl), and the error falls like D^(-1/2)."""
    G, R = _sets(4, new=20)
    sigma = 3.0
    exact = novelty_spectrum(G, R, kernel="rbf", sigma=sigma, method="dense").eigenvalues[:3]
    n, m = G.shape[0], R.shape[0]
    P = np.vstack([G, R])
    kern = get_kernel("rbf", sigma=sigma)
    w = np.r_[np.full(n, 1 / math.sqrt(n)), np.full(m, 1 / math.sqrt(m))]
    Kf = kern.gram(P) * np.outer(w, w)
    errors = {}
    for D in (8, 64, 512):
        errs = []
        for seed in range(3):
            spec = novelty_spectrum(G, R, kernel="rbf", sigma=sigma, method="rff", n_frequencies=D, replicates=4,
                                    rng=seed)
            assert spec.kind == "estimate" and spec.ken_interval() is not None
            err = np.abs(spec.eigenvalues[:3] - exact)
            # the sketch's own kernel: the same frequencies, drawn the same way from the same seed
            from diversity_core.approx.sketches import _fourier

            gen = np.random.default_rng(seed)
            gen.choice(n, min(1000, n), replace=False), gen.choice(m, min(1000, m), replace=False)
            F = _fourier(kern, P.shape[1], D, gen).features(P, check_input=False)
            Kf_hat = (F @ F.T) * np.outer(w, w)
            bound = 2 * math.sqrt(2.0) * math.sqrt(np.linalg.norm(Kf_hat - Kf, 2))
            assert err.max() <= bound
            np.testing.assert_allclose(spec.eigenvalues[:3], np.sort(np.linalg.eigvals(
                np.diag(np.r_[np.ones(n), -np.ones(m)]) @ Kf_hat).real)[::-1][:3], atol=1e-10)
            errs.append(err.mean())
            if D == 64 and seed == 0:  # RRKE of the sketch (from its moments) against the RKE code's formula on it
                Kxy = F[:n] @ F[n:].T
                half = -math.log(np.linalg.svd(Kxy / math.sqrt(n * m), compute_uv=False).sum() ** 2)
                got = rrke(G, R, kernel="rbf", sigma=sigma, method="rff", n_frequencies=D, n_resamples=0, rng=seed)
                # from the moments the small singular values keep about half the digits (sqrt(eps) ~ 1e-8), far
                # below the sketch's own error (its eigenvalues' se is ~1e-2 here)
                assert got.value == pytest.approx(half, rel=1e-6)
        errors[D] = float(np.mean(errs))
    assert errors[64] < errors[8] and errors[512] < errors[64]
    assert errors[512] < errors[8] / 4  # 64 times the frequencies: about 8 times smaller expected


# ---------------------------------------------------------------------------------------
# results, intervals, validation
# ---------------------------------------------------------------------------------------
def test_ken_score_has_an_extrapolated_interval(rng):
    G, R = _sets(5)
    est = ken_score(G, R, kernel="cosine", n_resamples=4, interval_size=120, rng=0)
    lo, hi = est.confidence_interval
    assert est.interval == "extrapolated" and lo <= est.value <= hi
    none = ken_score(G, R, kernel="cosine", n_resamples=0)
    assert none.confidence_interval is None and "n_resamples = 0" in none.note


def test_the_result_to_dict_is_json_ready(rng):
    G, R = _sets(6)
    spec = novelty_spectrum(G, R, kernel="cosine", n_modes=3)
    assert isinstance(spec, NoveltySpectrum)
    d = json.loads(json.dumps(spec.to_dict(include_loadings=True)))
    assert d["role"] == "novel" and d["kind"] == "exact" and len(d["shares"]) == 3
    assert len(d["loadings_generated"]) == G.shape[0]


def test_the_report_lists_modes_with_ids(rng):
    G, R = _sets(7)
    rep = novelty_report(G, R, kernel="cosine", n_modes=2, n_permutations=19, n_resamples=0, rng=0)
    ids = [f"g{i}" for i in range(G.shape[0])]
    modes = rep.modes("novel", n_items=3, generated_ids=ids)
    assert modes[0]["outside_null"] and all(i.startswith("g") for i in modes[0]["ids"])
    assert int(modes[0]["ids"][0][1:]) >= 105
    assert json.loads(json.dumps(rep.to_dict(generated_ids=ids)))["novel_modes"][0]["mode"] == 1


def test_lazy_public_names():
    assert dc.novelty_spectrum is novelty_spectrum and dc.rrke is rrke and dc.NoveltyReport.__name__ == "NoveltyReport"


@pytest.mark.parametrize("kwargs,match", [
    ({"eta": 0.0}, "eta"),
    ({"method": "exact"}, "method"),
    ({"method": "rff", "kernel": "cosine"}, "shift-invariant"),
    ({"method": "features", "kernel": "rbf"}, "feature map"),
    ({"n_modes": 0}, "n_modes"),
])
def test_bad_options_are_refused(rng, kwargs, match):
    with pytest.raises(DiversityInputError, match=match):
        novelty_spectrum(rng.standard_normal((10, 3)), rng.standard_normal((10, 3)), **kwargs)


def test_other_refusals(rng):
    X, Y = rng.standard_normal((10, 3)), rng.standard_normal((12, 4))
    with pytest.raises(DiversityInputError, match="same number of features"):
        novelty_spectrum(X, Y)
    with pytest.raises(DiversityInputError, match="order must be one of"):
        rrke(X, X, order=1.0)
    with pytest.raises(DiversityInputError, match="role"):
        mode_null(X, X, role="both")
    spec = novelty_spectrum(X, X + 1.0, n_modes=2)
    with pytest.raises(DiversityInputError, match="mode 2 was not kept"):
        top_mode_items(spec, 2, 3)
    with pytest.raises(DiversityInputError, match="side must be one of"):
        spec.top_items(0, 3, side="both")


def test_the_dense_route_checks_the_memory_budget(rng):
    X, Y = rng.standard_normal((300, 3)), rng.standard_normal((300, 3))
    with config_context(memory_budget="1M"), pytest.raises(MemoryBudgetError, match="dense route on 600 pooled items"):
        novelty_spectrum(X, Y, kernel="rbf", method="dense")


# ---------------------------------------------------------------------------------------
# diversity evaluate --novelty
# ---------------------------------------------------------------------------------------
FAST = ["--kid-subsets", "4", "--kid-subset-size", "20", "--no-magnitude", "--n-resamples", "0"]


@pytest.fixture
def pair(tmp_path):
    G, R = _sets(8)
    np.save(tmp_path / "G.npy", G)
    np.save(tmp_path / "R.npy", R)
    return tmp_path


def test_cli_prints_the_novel_and_missing_modes(pair, capsys):
    code = main(["evaluate", str(pair / "G.npy"), "--reference", str(pair / "R.npy"), "--kernel", "cosine",
                 "--novelty", "--novelty-permutations", "19", *FAST])
    out = capsys.readouterr().out
    assert code == 0
    assert "KEN (generated | reference)" in out and "RRKE order 0.5" in out
    novel = out[out.index("# novel modes"):out.index("# missing modes")]
    first = novel.splitlines()[3]
    assert "outside" in first
    # the dataset's ids of the new cluster's items (rows 106-130, one-based)
    ids = [int(s.split()[-1]) for s in first.split("outside")[1].split(",")]
    assert all(106 <= i <= 130 for i in ids)


def test_cli_json_holds_the_novelty_report(pair, capsys):
    code = main(["evaluate", str(pair / "G.npy"), "--reference", str(pair / "R.npy"), "--kernel", "cosine",
                 "--novelty", "--novelty-permutations", "0", "--format", "json", *FAST])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    nov = res["settings"]["novelty"]
    assert nov["novel_modes"][0]["outside_null"] is None and nov["settings"]["method"] == "features"
    assert nov["ken"]["value"] > 0 and "rrke" in nov


def test_cli_without_novelty_has_none(pair, capsys):
    assert main(["evaluate", str(pair / "G.npy"), "--reference", str(pair / "R.npy"), "--format", "json", *FAST]) == 0
    assert "novelty" not in json.loads(capsys.readouterr().out)["settings"]


@pytest.mark.parametrize("flag,value", [("--novelty-eta", "0"), ("--novelty-modes", "0"), ("--novelty-permutations", "-1")])
def test_cli_refuses_bad_novelty_options_before_any_work(pair, capsys, flag, value):
    code = main(["evaluate", str(pair / "G.npy"), "--reference", str(pair / "missing.npy"), "--novelty", flag, value,
                 *FAST])
    assert code == 2 and flag in capsys.readouterr().err  # refused before the (missing) reference is read
