"""The large-data policy (:func:`diversity_core.approx.plan_scores`): each branch, from the sizes alone,
and the sized sketches running within the budget they were sized to (issue 21 item 3, issue 23 item 5)."""

from __future__ import annotations

import dataclasses
import json
import re
import tracemalloc

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.approx import exact_plan, plan_scores, vendi_bounds, vendi_estimate
from diversity_core.approx.plan import CLI_NAMES, MIN_SKETCH, PATHS

MiB = 1 << 20


# ------------------------------------------------------------------------------------------
# the exact paths
# ------------------------------------------------------------------------------------------
def test_dual_when_the_kernel_has_a_feature_map():
    p = plan_scores(100_000, 64, kernel="cosine", memory_budget="1G")
    assert (p.path, p.method, p.exact) == ("dual", "dual", True)
    assert "feature map" in p.reason and p.sketch is None and p.bounds is None


def test_streamed_dual_for_rows_from_a_source():
    p = plan_scores(100_000, 64, kernel="cosine", streamed=True, memory_budget="1G")
    assert (p.path, p.method) == ("streamed", "dual")


def test_dense_when_its_matrices_fit():
    p = plan_scores(1000, 8, kernel="rbf", memory_budget="1G")
    assert (p.path, p.method) == ("dense", "dense")
    assert p.dense_bytes == 2 * 8 * 1000**2
    assert plan_scores(1000, 8, kernel="rbf", n_eigenvectors=3, memory_budget="1G").dense_bytes == 5 * 8 * 1000**2
    # rows streamed from a source must be read before the dense path runs
    assert plan_scores(1000, 8, kernel="rbf", streamed=True, memory_budget="1G").dense_bytes == 2 * 8e6 + 8 * 8000


def test_dense_when_the_dual_sums_do_not_fit_but_the_dense_matrices_do():
    # d < n, but 3 d^2 x 8 = 54 MB of dual sums against 2 n^2 x 8 = 41 MB of dense matrices
    p = plan_scores(1600, 1500, kernel="cosine", memory_budget="50M")
    assert (p.path, p.method) == ("dense", "dense")


def test_blocked_vs2_when_only_q2_is_asked_beyond_the_dense_limit():
    p = plan_scores(4000, 16, kernel="rbf", q=[2], memory_budget="40M")
    assert (p.path, p.method, p.exact) == ("blocked", None, True)
    # a kernel with features takes its dual path instead; any other order needs a spectrum
    assert plan_scores(4000, 16, kernel="cosine", q=[2], memory_budget="40M").path == "dual"
    with pytest.raises(dc.MemoryBudgetError, match="memory budget"):
        plan_scores(4000, 16, kernel="rbf", q=[1, 2], memory_budget="40M")


def test_exact_only_refusal_is_the_spectrum_rules_own():
    with pytest.raises(dc.MemoryBudgetError) as planned:
        plan_scores(1200, 3, kernel="rbf", memory_budget="20M")
    with dc.config_context(memory_budget="20M"), pytest.raises(dc.MemoryBudgetError) as computed:
        dc.compute_spectrum(np.zeros((1200, 3)), kernel="rbf", sigma=1.0)
    assert str(planned.value) == str(computed.value)
    assert "vendi_2_exact" in str(planned.value) and "--approx" in str(planned.value)


def test_forced_methods_follow_the_spectrum_rule():
    assert plan_scores(500, 8, kernel="rbf", method="dense").reason == "method='dense' asked for"
    assert plan_scores(500, 8, kernel="cosine", method="dual", streamed=True).path == "streamed"
    with pytest.raises(dc.DiversityInputError, match="feature map"):
        plan_scores(500, 8, kernel="rbf", method="dual")
    with pytest.raises(dc.MemoryBudgetError, match="memory budget"):
        plan_scores(4000, 8, kernel="rbf", method="dense", approx="auto", memory_budget="40M")


@pytest.mark.parametrize("n, d, kernel, budget", [(1200, 64, "rbf", "20M"), (1200, 64, "cosine", "20M"),
                                                  (500, 64, "rbf", "20M"), (100_000, 64, "rbf", "1G")])
def test_the_exact_decision_is_exact_plans(n, d, kernel, budget):
    with dc.config_context(memory_budget=budget):
        old = exact_plan(n, d, kernel=kernel, n_eigenvectors=10)
        new = plan_scores(n, d, kernel=kernel, n_eigenvectors=10, approx="auto")
    assert new.exact == old.fits and (new.method == old.method or not old.fits)
    assert new.dense_bytes == old.dense_bytes and new.budget == old.budget


# ------------------------------------------------------------------------------------------
# beyond them: bounds and sketches, sized to the budget
# ------------------------------------------------------------------------------------------
def test_auto_gives_lanczos_bounds_and_a_companion_estimate_while_the_matrix_fits():
    p = plan_scores(1200, 64, kernel="rbf", approx="auto", n_eigenvectors=10, memory_budget="20M")
    # beyond the dense path the default estimate is SLQ (issue 23), the guaranteed bounds beside it
    assert (p.path, p.exact, p.method) == ("slq", False, None)
    assert p.slq.sized == "budget" and p.slq.peak_bytes <= 20 * MiB
    assert plan_scores(1200, 64, kernel="rbf", approx="auto", q=[0.0], memory_budget="20M").path == "bounds"
    assert (p.bounds.method, p.bounds.storage) == ("lanczos", "float64")
    assert p.bounds.ks == (20, 50, 100, 200) and p.bounds.kwargs() == {"method": "lanczos", "k": [20, 50, 100, 200]}
    assert p.sketch.method == "rff" and p.sketch.sized == "budget" and p.sketch.peak_bytes <= 20 * MiB
    assert "over the memory budget" in p.reason
    assert plan_scores(1200, 64, kernel="rbf", approx="auto", memory_budget="10M").bounds.storage == "float32"


def test_auto_takes_the_exact_path_when_it_fits():
    assert plan_scores(500, 64, kernel="rbf", approx="auto", memory_budget="20M").path == "dense"


def test_nystrom_bounds_past_the_float32_matrix_are_sized_to_the_budget():
    small = plan_scores(4000, 16, kernel="rbf", approx="bounds", memory_budget="40M").bounds
    large = plan_scores(4000, 16, kernel="rbf", approx="bounds", memory_budget="1G").bounds
    assert small.method == "nystrom" and small.sized == "budget" and MIN_SKETCH <= small.m < 2000
    assert small.peak_bytes <= 40 * MiB and small.kwargs() == {"method": "nystrom", "m": small.m}
    assert (large.method, large.storage) == ("lanczos", "float64")   # 1 GB holds the 4000 x 4000 matrix
    assert plan_scores(4000, 16, kernel="rbf", approx="bounds", bounds_method="nystrom",
                       memory_budget="1G").bounds.m == 2000


@pytest.mark.parametrize("approx, kernel", [("nystrom", "rbf"), ("rff", "rbf"), ("rff", "laplacian"),
                                            ("tanimoto_rf", "tanimoto"), ("nystrom", "tanimoto")])
def test_each_sketch_grows_with_the_budget_up_to_its_default(approx, kernel):
    plans = [plan_scores(4000, 128, kernel=kernel, approx=approx, density=0.05, memory_budget=b)
             for b in ("20M", "40M", "60M", "4G")]
    sizes = [p.sketch.size for p in plans]
    assert all(p.path == "sketch" and p.sketch.method == approx for p in plans)
    assert sizes == sorted(sizes) and MIN_SKETCH <= sizes[0] < 1024 and sizes[-1] == 1024
    assert [p.sketch.sized for p in plans][-1] == "default" and plans[0].sketch.sized == "budget"
    for p, b in zip(plans, (20, 40, 60, 4096)):
        assert p.sketch.peak_bytes <= b * MiB
    # a large budget changes nothing: the configured chunk, the estimator's default size
    assert plans[-1].sketch.chunk_bytes == dc.get_config()["chunk_bytes"]
    assert plans[0].sketch.chunk_bytes < dc.get_config()["chunk_bytes"]


def test_weights_and_dense_fingerprints_take_more_memory():
    kw = {"kernel": "tanimoto", "approx": "tanimoto_rf", "memory_budget": "20M"}
    assert plan_scores(4000, 2048, density=0.02, **kw).sketch.size > plan_scores(4000, 2048, **kw).sketch.size
    kw = {"kernel": "rbf", "approx": "rff", "memory_budget": "20M"}
    assert plan_scores(4000, 16, weighted=True, **kw).sketch.peak_bytes <= 20 * MiB
    assert plan_scores(4000, 16, weighted=True, **kw).sketch.chunk_bytes < plan_scores(4000, 16, **kw).sketch.chunk_bytes


def test_the_sketch_of_auto_follows_the_kernel_and_the_bits():
    def sketch(kernel, **kw):
        return plan_scores(5000, 256, kernel=kernel, approx="auto", memory_budget="100M", **kw).sketch.method

    assert sketch("rbf") == "rff" and sketch("laplacian") == "rff" and sketch("polynomial") == "nystrom"
    assert sketch("tanimoto") == "tanimoto_rf" and sketch("tanimoto", binary=False) == "nystrom"
    assert plan_scores(2000, 2000, kernel="precomputed", approx="auto", memory_budget="20M").sketch is None


def test_sketch_size_is_the_auto_rules_preference():
    p = plan_scores(4000, 16, kernel="rbf", approx="rff", sketch_size=128, memory_budget="1G")
    assert (p.sketch.size, p.sketch.sized) == (128, "default")


@pytest.mark.parametrize("budget", ["20M", "40M", "60M"])
def test_sized_sketches_and_bounds_run_within_the_budget(rng, budget):
    X = rng.standard_normal((4000, 16))
    kw = {"kernel": "rbf", "sigma": 4.0}
    # first calls import scipy.stats and the like: their module objects are not the sketch's memory
    vendi_estimate(X[:100], q=[1, 2], replicates=2, rng=0, method="nystrom", m=10, **kw)
    vendi_bounds(X[:100], q=[1, 2], rng=0, method="nystrom", m=10, **kw)
    for approx in ("nystrom", "rff", "bounds"):
        p = plan_scores(4000, 16, approx=approx, q=[1, 2], memory_budget=budget, **kw)
        part = "bounds" if approx == "bounds" else "sketch"
        tracemalloc.start()
        try:
            with p.context(part):
                if approx == "bounds":
                    res = vendi_bounds(X, q=[1, 2], rng=0, exact_vs2=False, **p.bounds.kwargs(), **kw)
                else:
                    res = vendi_estimate(X, q=[1, 2], replicates=2, rng=0, **p.sketch.kwargs(), **kw)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert res.n == 4000
        # measured: within the model, which is sized to 90% of the budget
        assert peak <= min(1.05 * getattr(p, part).peak_bytes, p.budget), (approx, peak / MiB, getattr(p, part))


# ------------------------------------------------------------------------------------------
# the user's sizes and the messages
# ------------------------------------------------------------------------------------------
def test_a_given_size_is_honoured_or_refused_with_the_largest_that_fits():
    p = plan_scores(4000, 16, kernel="rbf", approx="nystrom", m=300, memory_budget="40M")
    assert (p.sketch.size, p.sketch.sized) == (300, "given")
    with pytest.raises(dc.MemoryBudgetError, match=r"m = 2000 needs about .* the largest m that fits is \d+: "
                                                   r"use m=\d+ or less, or raise memory_budget") as api:
        plan_scores(4000, 16, kernel="rbf", approx="nystrom", m=2000, memory_budget="40M")
    best = int(re.search(r"use m=(\d+)", str(api.value)).group(1))
    assert plan_scores(4000, 16, kernel="rbf", approx="nystrom", m=best, memory_budget="40M").sketch.size == best
    with pytest.raises(dc.MemoryBudgetError, match=r"use --D \d+ or less, or raise --memory-budget"):
        plan_scores(4000, 16, kernel="rbf", approx="rff", D=4000, memory_budget="40M", names=CLI_NAMES)
    with pytest.raises(dc.DiversityInputError, match="Nystrom setting"):
        plan_scores(4000, 16, kernel="rbf", approx="rff", m=100)


@pytest.mark.parametrize("approx", ["nystrom", "rff", "bounds", "auto"])
def test_nothing_fits_names_the_knobs(approx):
    with pytest.raises(dc.MemoryBudgetError, match=r"Raise --memory-budget to at least .*--m .*--D ") as cli:
        plan_scores(4000, 16, kernel="rbf", approx=approx, memory_budget="1M", names=CLI_NAMES)
    assert "even" in str(cli.value) and f"= {MIN_SKETCH}" in str(cli.value)
    with pytest.raises(dc.MemoryBudgetError, match=r"Raise memory_budget .* with m \(Nystrom landmarks\) or D "):
        plan_scores(4000, 16, kernel="rbf", approx=approx, memory_budget="1M")


def test_lanczos_steps_that_fit_and_a_given_k():
    p = plan_scores(1200, 64, kernel="rbf", approx="bounds", k=(20, 50, 500, 1000), memory_budget="20M")
    assert p.bounds.ks == (20, 50) and p.bounds.sized == "budget"   # 1000 vectors of 1200 do not fit beside K
    with pytest.raises(dc.MemoryBudgetError, match=r"k = 500 .* the largest k that fits is 200: use --k 200"):
        plan_scores(1200, 64, kernel="rbf", approx="bounds", k=500, memory_budget="20M", names=CLI_NAMES)
    assert plan_scores(30, 3, kernel="rbf", approx="bounds", k=200, memory_budget="1G").bounds.ks == (20,)


def test_precomputed_kernels_have_lanczos_bounds_only():
    p = plan_scores(2000, 2000, kernel="precomputed", approx="bounds", memory_budget="20M")
    assert p.bounds.method == "lanczos"
    with pytest.raises(dc.DiversityInputError, match="precomputed"):
        plan_scores(2000, 2000, kernel="precomputed", approx="bounds", bounds_method="nystrom", memory_budget="20M")


@pytest.mark.parametrize("kwargs, match", [
    ({"approx": "sketchy"}, "unknown approx 'sketchy'; choose one of"),
    ({"method": "fast"}, "unknown method"),
    ({"bounds_method": "arpack"}, "unknown bounds_method"),
    ({"m": 0}, "m must be an integer >= 1"),
    ({"density": 2.0}, "density must be a number"),
    ({"q": []}, "at least one order"),
    ({"memory_budget": "lots"}, "memory size"),
])
def test_options_are_checked(kwargs, match):
    with pytest.raises(dc.DiversityInputError, match=match):
        plan_scores(100, 3, **kwargs)


def test_the_plan_is_a_frozen_json_ready_record():
    p = plan_scores(4000, 16, kernel="rbf", approx="auto", memory_budget="40M")
    assert p.path in PATHS
    out = json.loads(json.dumps(p.to_dict()))
    assert out["path"] == "slq" and out["slq"]["k"] == p.slq.k and out["bounds"]["m"] == p.bounds.m
    assert out["sketch"]["method"] == "rff"
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.path = "dense"
    assert p.dense_seconds(0.5, 1000) == pytest.approx(2 * 0.5 * 4**3)
    with p.context("sketch"):
        assert dc.get_config()["memory_budget"] == p.budget
        assert dc.get_config()["chunk_bytes"] == p.sketch.chunk_bytes


# --------------------------------------------------------------------------------------------
# The cheapest exact path for the orders asked (issue 39 item 4)
# --------------------------------------------------------------------------------------------
def test_vs2_alone_takes_the_blocked_path_even_when_dense_fits():
    """16,000 x 384 under rbf, q = 2: the dense O(n^3) spectrum fitted a large budget and took
    longer than 15 minutes; VS_2 needs only ||K||_F, O(n^2 d) by blocks."""
    from diversity_core.approx.plan import BLOCKED_FROM

    plan = plan_scores(16_000, 384, kernel="rbf", q=[2], memory_budget="64G")
    assert plan.path == "blocked" and "cheaper" in plan.reason
    assert plan_scores(BLOCKED_FROM, 8, kernel="rbf", q=[2], memory_budget="64G").path == "blocked"
    # another order, or eigenvectors, need the spectrum
    assert plan_scores(16_000, 384, kernel="rbf", q=[1, 2], memory_budget="64G").path == "dense"
    assert plan_scores(16_000, 384, kernel="rbf", q=[2], n_eigenvectors=4, memory_budget="64G").path == "dense"
    # a kernel with a feature map keeps its cheaper dual path
    assert plan_scores(16_000, 384, kernel="cosine", q=[2]).path == "dual"


def test_blocked_vs2_equals_the_spectrum_value():
    from diversity_core.scoring import score_groups

    X = np.random.default_rng(2).normal(size=(700, 24))
    (res,) = score_groups(X, kernel="rbf", qs=[2.0])
    assert res.method == "blocked"
    assert res.blocked.vs2 == pytest.approx(dc.vendi_score(X, kernel="rbf", q=2, method="dense"), rel=1e-12)


# --------------------------------------------------------------------------------------------
# One test of "bits" for every caller of the plan (issue 39 item 3: count fingerprints got a
# MinHash plan from the CLI, which vendi_estimate then refused)
# --------------------------------------------------------------------------------------------
def test_binary_features_on_arrays_sparse_and_sources(tmp_path):
    import scipy.sparse as sp

    from diversity_core.approx.plan import binary_features
    from diversity_core.sources import as_source

    bits = (np.random.default_rng(0).random((300, 40)) < 0.1).astype(np.float64)
    counts = bits.copy()
    counts[7, 3] = 2.0
    assert binary_features(bits) and not binary_features(counts)
    assert binary_features(sp.csr_matrix(bits)) and not binary_features(sp.csr_matrix(counts))
    np.save(tmp_path / "c.npy", counts)
    with dc.config_context(chunk_bytes=4096):
        assert not binary_features(as_source(str(tmp_path / "c.npy")))


def test_cli_plans_no_minhash_sketch_for_count_fingerprints(tmp_path):
    from diversity_core.cli._score import _plan

    g = np.random.default_rng(1)
    counts = g.poisson(0.05, size=(6000, 256)).astype(np.float64)
    counts[counts.sum(1) == 0, 0] = 1
    args = type("Args", (), dict(kernel="tanimoto", method="auto", approx="auto", bounds_method="auto", m=None,
                                 D=None, k=None, probes=None, steps=None, sigma=None, gamma=None, degree=None,
                                 coef0=None))()
    with dc.config_context(memory_budget="100M"):
        plan = _plan(args, counts, 6000, 256, [1.0], None, streamed=False)
    assert plan.sketch is not None and plan.sketch.method == "nystrom"
    bits = (counts > 0).astype(np.float64)
    with dc.config_context(memory_budget="100M"):
        plan = _plan(args, bits, 6000, 256, [1.0], None, streamed=False)
    assert plan.sketch.method == "tanimoto_rf"
