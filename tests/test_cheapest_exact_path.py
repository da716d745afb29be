"""The cheapest exact path for the orders asked: VS_inf from the top eigenvalue (issue 39 item 4).

VS_inf = 1 / lambda_max needs only the top eigenvalue of rho (Lanczos), where the dense spectrum
costs O(n^3); from :data:`~diversity_core.approx.plan.LANCZOS_FROM` items (measured in
benchmarks/bench_vs_inf_path.py), or past the dense limit, the plan takes it when only q = inf, or
q = 2 and inf, is asked. Its value must equal the dense spectrum's within the solver's stated
tolerance.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.approx.plan import BLOCKED_FROM, EXACT_PATHS, LANCZOS_FROM, PATHS, plan_scores
from diversity_core.exceptions import DiversityInputError
from diversity_core.scoring import score_groups


def _clustered(n: int, d: int, seed: int = 0) -> np.ndarray:
    g = np.random.default_rng(seed)
    centres = g.standard_normal((6, d))
    return centres[g.integers(0, 6, n)] + g.standard_normal((n, d)) / 2.0


# --------------------------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------------------------
def test_vs_inf_alone_takes_the_lanczos_path_even_when_dense_fits():
    """16,000 x 384 under rbf, q = inf: the dense O(n^3) spectrum fits a large budget, but VS_inf
    needs only lambda_max."""
    plan = plan_scores(16_000, 384, kernel="rbf", q=[np.inf], memory_budget="64G")
    assert plan.path == "lanczos" and plan.exact and plan.method is None
    assert "cheaper" in plan.reason and "float64" in plan.reason
    assert plan_scores(LANCZOS_FROM, 8, kernel="rbf", q="inf", memory_budget="64G").path == "lanczos"
    assert plan_scores(LANCZOS_FROM - 1, 8, kernel="rbf", q="inf", memory_budget="64G").path == "dense"
    # q = 2 and inf together: VS_2 from the same operator, no spectrum
    both = plan_scores(16_000, 384, kernel="laplacian", q=[2, "inf"], memory_budget="64G")
    assert both.path == "lanczos" and "VS_2 from the same operator" in both.reason
    # q = 2 alone keeps its single blocked pass (cheaper than Lanczos)
    assert plan_scores(16_000, 384, kernel="rbf", q=[2], memory_budget="64G").path == "blocked"
    # another order, or eigenvectors, need the spectrum
    assert plan_scores(16_000, 384, kernel="rbf", q=[1, "inf"], memory_budget="64G").path == "dense"
    gallery = plan_scores(16_000, 384, kernel="rbf", q="inf", n_eigenvectors=2, memory_budget="64G")
    assert gallery.path == "dense"
    assert plan_scores(16_000, 384, kernel="rbf", memory_budget="64G").path == "dense"
    # a kernel with a feature map and d < n keeps its cheaper dual path (0.04 s against Lanczos' 1 s
    # at n = 4,000, d = 384); with d >= n it has no dual path and takes Lanczos too
    assert plan_scores(16_000, 384, kernel="cosine", q="inf").path == "dual"
    assert plan_scores(2_000, 4_096, kernel="cosine", q="inf", memory_budget="64G").path == "lanczos"
    assert "lanczos" in EXACT_PATHS and set(EXACT_PATHS) < set(PATHS)
    assert LANCZOS_FROM >= 2 and BLOCKED_FROM >= 2


def test_vs_inf_beyond_the_dense_budget_is_exact_not_refused():
    """Past the dense limit the plan used to have no exact path for q = inf (a refusal, or an estimate
    with approx="auto"); the top eigenvalue needs the operator in float32 or by blocks only."""
    plan = plan_scores(300, 384, kernel="rbf", q="inf", memory_budget="1M")
    assert plan.path == "lanczos" and "exceed the budget" in plan.reason and plan.dense_bytes > 2**20
    huge = plan_scores(200_000, 384, kernel="rbf", q="inf", memory_budget="4G")
    assert huge.path == "lanczos" and "blocks of K" in huge.reason
    auto = plan_scores(200_000, 384, kernel="rbf", q="inf", approx="auto", memory_budget="4G")
    assert auto.path == "lanczos"
    # rows of a source that do not fit in memory: no exact path (the other paths' refusal)
    with pytest.raises(dc.MemoryBudgetError):
        plan_scores(10_000_000, 384, kernel="rbf", q="inf", streamed=True, memory_budget="4G")


# --------------------------------------------------------------------------------------------
# the values: equal to the dense spectrum's within the stated tolerance
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_lanczos_path_equals_the_dense_spectrum(dtype, weighted, kernel):
    X = _clustered(LANCZOS_FROM + 100, 16).astype(dtype)
    w = np.random.default_rng(1).random(X.shape[0]) if weighted else None
    (res,) = score_groups(X, kernel=kernel, qs=[2, np.inf], weights=w)
    (ref,) = score_groups(X, kernel=kernel, qs=[1, 2, np.inf], weights=w)   # another order: the spectrum
    assert res.method == "lanczos" and ref.method == "dense" and res.spectrum is None
    top = res.top
    # the Ritz value is within the solver's tolerance of the true lambda_max (eigenvalues of rho)
    assert abs(1.0 / res.vendi(np.inf) - 1.0 / ref.vendi(np.inf)) <= top.tolerance
    assert top.tolerance < 1e-9 / ref.vendi(np.inf)
    low, high = res.vs_inf_interval
    assert low <= ref.vendi(np.inf) <= high
    assert res.vendi(2) == pytest.approx(ref.vendi(2), rel=1e-11)
    assert res.intdiv == pytest.approx(ref.intdiv, rel=1e-12) and res.kernel == ref.kernel
    row = res.to_dict([2, "inf"])
    assert row["method"] == "lanczos" and row["rank"] is None and row["vs_inf_interval"] == [low, high]
    with pytest.raises(DiversityInputError, match="top eigenvalue"):
        res.vendi(1.0)


def test_lanczos_path_per_group_and_precomputed():
    X = _clustered(2 * LANCZOS_FROM, 12, seed=3)
    labels = np.array(["big"] * (LANCZOS_FROM + 50) + ["small"] * (LANCZOS_FROM - 50))
    rows = score_groups(X, labels, kernel="rbf", qs="inf")
    refs = score_groups(X, labels, kernel="rbf", qs=[1, "inf"])
    assert [r.method for r in rows] == ["lanczos", "lanczos", "dense"]
    for r, ref in zip(rows, refs):
        tolerance = r.top.tolerance if r.top is not None else 1e-15
        assert abs(1.0 / r.vendi("inf") - 1.0 / ref.vendi("inf")) <= tolerance
    K = dc.kernel_matrix(X, kernel="rbf")
    (res,) = score_groups(K, kernel="precomputed", qs="inf")
    (ref,) = score_groups(K, kernel="precomputed", qs=[1, "inf"])
    assert res.method == "lanczos"
    assert abs(1.0 / res.vendi("inf") - 1.0 / ref.vendi("inf")) <= res.top.tolerance


@pytest.mark.parametrize("budget", ["4M", "2500K", "1M"])
def test_lanczos_path_past_the_dense_budget(budget):
    """Where the dense matrices (5.8 MB) do not fit: the float64 operator (4M), float32 (2500K) or blocks of K
    recomputed at each product (1M)."""
    X = _clustered(LANCZOS_FROM + 100, 16, seed=2)
    (ref,) = score_groups(X, kernel="rbf", qs=[1, "inf"])
    with dc.config_context(memory_budget=budget):
        (res,) = score_groups(X, kernel="rbf", qs="inf")
    assert res.method == "lanczos"
    assert res.top.settings["matrix"] == {"4M": "float64", "2500K": "float32", "1M": "matrix-free"}[budget]
    assert abs(1.0 / res.vendi("inf") - 1.0 / ref.vendi("inf")) <= res.top.tolerance
    assert res.intdiv == pytest.approx(ref.intdiv, rel=1e-12)


def test_cli_score_q_inf_takes_the_lanczos_path(tmp_path):
    X = _clustered(LANCZOS_FROM + 20, 8, seed=4)
    path = tmp_path / "x.npy"
    np.save(path, X)
    res = subprocess.run([sys.executable, "-m", "diversity_core.cli", "score", str(path), "--kernel", "rbf",
                          "--q", "inf", "--format", "json"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["results"][0]
    assert row["method"] == "lanczos"
    ref = dc.compute_spectrum(X, kernel="rbf", method="dense").vendi(np.inf)
    low, high = row["vs_inf_interval"]
    assert low <= ref <= high and row["vendi"]["inf"] == pytest.approx(ref, rel=1e-10)


# --------------------------------------------------------------------------------------------
# vendi_score follows the same rule; vs_inf_exact bounds the value compute_spectrum gives
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q", [2.0, np.inf])
def test_vendi_score_takes_the_path_without_a_spectrum(q, monkeypatch):
    import diversity_core.vendi as vendi_module

    X = _clustered(LANCZOS_FROM + 100, 16, seed=5).astype(np.float32)
    w = np.random.default_rng(6).random(X.shape[0]) ** 3
    ref = dc.compute_spectrum(X, kernel="rbf", weights=w, method="dense")

    def refused(*args, **kwargs):
        raise AssertionError("vendi_score computed a spectrum for q = 2 or inf past the crossover")

    monkeypatch.setattr(vendi_module, "compute_spectrum", refused)
    value = dc.vendi_score(X, kernel="rbf", q=q, weights=w)
    assert value == pytest.approx(ref.vendi(q), rel=1e-10)
    # below the crossovers the spectrum is cheaper, and is computed
    with pytest.raises(AssertionError, match="computed a spectrum"):
        dc.vendi_score(X[: min(LANCZOS_FROM, BLOCKED_FROM) - 1], kernel="rbf", q=q)


def test_weighted_vs_inf_beyond_the_dense_budget_uses_the_spectrum_bandwidth():
    """The Lanczos operator resolved the rbf bandwidth without the weights (1.7% off here), so
    vendi_score past the dense limit and vs_inf_exact gave another kernel's VS_inf."""
    from diversity_core.approx import vs_inf_exact

    g = np.random.default_rng(0)
    X = g.normal(size=(300, 8))
    w = g.random(300) ** 4
    ref = dc.compute_spectrum(X, kernel="rbf", weights=w, method="dense").vendi(np.inf)
    assert vs_inf_exact(X, kernel="rbf", weights=w) == pytest.approx(ref, rel=1e-10)
    with dc.config_context(memory_budget="1M"):
        assert dc.vendi_score(X, kernel="rbf", q=np.inf, weights=w) == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize("method", ["nystrom_bounds", "nystrom_estimate", "rff_estimate"])
def test_weighted_sketches_use_the_spectrum_bandwidth(method):
    """Nystrom bounds and the sketch estimates resolved the rbf bandwidth without the weights,
    so their intervals were of another kernel's VS_q than compute_spectrum's."""
    from diversity_core.approx import nystrom_bounds, vendi_estimate

    g = np.random.default_rng(0)
    X = g.normal(size=(300, 8))
    w = g.random(300) ** 4
    ref = dc.compute_spectrum(X, kernel="rbf", weights=w, method="dense")
    if method == "nystrom_bounds":
        res = nystrom_bounds(X, kernel="rbf", weights=w, m=50, q=[1])
    else:
        res = vendi_estimate(X, kernel="rbf", weights=w, q=[1], method=method.split("_")[0], rng=0)
    assert res.kernel["sigma"] == pytest.approx(ref.kernel["sigma"], rel=1e-12)
