"""The core carries out its own plans (issue 39 item 3): :func:`diversity_core.approx.run_plan`.

The CLI (``diversity score --approx ...``) and the app (``ui.scalable.refine``) both run a
:class:`~diversity_core.approx.ScorePlan` through ``run_plan``: the same numbers as calling the
estimators directly with the plan's sizes, the orders split once (SLQ q > 0, sketches q >= 1, the
bounds the rest), the refinement schedule, cancellation, and one answer for one plan.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import diversity_core as dc
from diversity_core.approx import (
    PlanStep,
    plan_scores,
    run_plan,
    run_plan_to_end,
    vendi_bounds,
    vendi_estimate,
    vendi_slq,
)
from diversity_core.approx import run as run_module
from diversity_core.approx.plan import binary_features
from diversity_core.exceptions import DiversityInputError
from diversity_core.workers import JobCancelledError

SIGMA = 1.5
BUDGET = "20M"  # n = 1200: the dense path (23 MB) does not fit, SLQ and the Lanczos matrix do


@pytest.fixture(scope="module")
def X300():
    return np.random.default_rng(1).standard_normal((300, 6))


@pytest.fixture(scope="module")
def X1200():
    return np.random.default_rng(2).standard_normal((1200, 8))


def _same(a, b):
    """Two results of the same estimator with the same numbers (bit for bit)."""
    assert type(a) is type(b)
    np.testing.assert_array_equal(a.qs, b.qs)
    np.testing.assert_array_equal(a.low, b.low)
    np.testing.assert_array_equal(a.high, b.high)


# ------------------------------------------------------------------------------------------
# the same numbers as the direct calls with the plan's kwargs (the CLI's old behaviour)
# ------------------------------------------------------------------------------------------
def test_slq_path_is_vendi_slq_with_the_plans_sizes(X300):
    p = plan_scores(300, 6, kernel="rbf", q=[0.5, 1.0, 2.0], approx="slq", k=32, probes=16)
    got = run_plan_to_end(X300, p, kernel="rbf", q=[0.5, 1.0, 2.0], sigma=SIGMA)
    with p.context():
        want = vendi_slq(X300, kernel="rbf", q=[0.5, 1.0, 2.0], rng=0, sigma=SIGMA, **p.slq.kwargs())
    _same(got.estimate, want)
    assert got.bounds is None and got.estimate.probes == want.probes


@pytest.mark.parametrize("bounds_method", ["lanczos", "nystrom"])
def test_bounds_path_is_vendi_bounds_with_the_plans_sizes(X300, bounds_method):
    p = plan_scores(300, 6, kernel="rbf", approx="bounds", bounds_method=bounds_method, m=100, k=50)
    got = run_plan_to_end(X300, p, kernel="rbf", sigma=SIGMA)
    with p.context("bounds"):
        want = vendi_bounds(X300, kernel="rbf", q=p.qs or None, rng=0, sigma=SIGMA, **p.bounds.kwargs())
    _same(got.bounds, want)
    assert got.estimate is None and got.bounds.settings["method"] == bounds_method


@pytest.mark.parametrize("approx, size", [("rff", {"D": 64}), ("nystrom", {"m": 30})])
def test_sketch_path_is_vendi_estimate_with_the_plans_sizes(X300, approx, size):
    p = plan_scores(300, 6, kernel="rbf", approx=approx, **size)
    got = run_plan_to_end(X300, p, kernel="rbf", q=[0.5, 1.0, 2.0], replicates=3, sigma=SIGMA)
    with p.context("sketch"):
        want = vendi_estimate(X300, kernel="rbf", q=[1.0, 2.0], replicates=3, rng=0, sigma=SIGMA,
                              **p.sketch.kwargs())
    _same(got.estimate, want)
    assert got.estimate.method == approx


# ------------------------------------------------------------------------------------------
# which orders each part takes
# ------------------------------------------------------------------------------------------
def test_auto_splits_the_orders_q0_from_the_bounds_only(X1200):
    qs = [0.0, 0.5, 1.0, 2.0, math.inf]
    p = plan_scores(1200, 8, kernel="rbf", q=qs, approx="auto", k=[20], probes=8, memory_budget=BUDGET)
    assert p.path == "slq" and p.bounds is not None
    got = run_plan_to_end(X1200, p, kernel="rbf", q=qs, sigma=SIGMA)
    assert got.estimate.method == "slq" and 0.0 not in got.estimate.qs
    assert got.estimate.qs.tolist() == [0.5, 1.0, 2.0, math.inf]
    assert got.bounds.qs.tolist() == [0.0]  # the order SLQ leaves out, and only it
    # no q = 0 asked: no bounds at all (nothing left for them to answer)
    assert run_plan_to_end(X1200, p, kernel="rbf", q=[1.0], sigma=SIGMA).bounds is None
    # the app's guaranteed band: every order and the profile's grid
    band = run_plan_to_end(X1200, p, kernel="rbf", q=[1.0], companions=True, sigma=SIGMA).bounds
    assert set(dc.default_q_grid()) | {1.0} <= set(band.qs)


def test_sketches_take_q_at_least_1_and_slq_q_above_0(X300):
    sketch = plan_scores(300, 6, kernel="rbf", approx="rff", D=32)
    got = run_plan_to_end(X300, sketch, kernel="rbf", q=[0.0, 0.5, 1.0, 2.0], replicates=2, sigma=SIGMA)
    assert got.estimate.qs.tolist() == [1.0, 2.0] and got.bounds is None
    with pytest.raises(DiversityInputError, match=r"q >= 1.*approx=bounds"):
        run_plan(X300, sketch, kernel="rbf", q=[0.0, 0.5])
    slq = plan_scores(300, 6, kernel="rbf", approx="slq", k=16, probes=4)
    with pytest.raises(DiversityInputError, match=r"q > 0.*--approx bounds"):
        run_plan(X300, slq, kernel="rbf", q=[0.0], names={"approx": "--approx"})
    exact = plan_scores(300, 6, kernel="rbf")
    with pytest.raises(DiversityInputError, match="exact path"):
        run_plan(X300, exact, kernel="rbf")


# ------------------------------------------------------------------------------------------
# the refinement schedule
# ------------------------------------------------------------------------------------------
def test_refinement_first_bounds_then_slq_then_growing_k(X1200):
    p = plan_scores(1200, 8, kernel="rbf", approx="auto", k=[20, 50], probes=8, memory_budget=BUDGET)
    assert p.path == "slq" and p.bounds.ks == (20, 50)
    steps = list(run_plan(X1200, p, kernel="rbf", q=[0.0, 1.0, 2.0], companions=True, sigma=SIGMA))
    assert all(isinstance(s, PlanStep) for s in steps)
    parts = [s.part for s in steps]
    first_estimate = parts.index("estimate")
    assert [s.result.k for s in steps[:first_estimate]] == [0, 20]  # galleries before SLQ
    ks = [s.result.k for s in steps if s.part == "bounds"]
    assert ks == sorted(set(ks)) and ks[-1] == 50  # never back to weaker bounds
    assert parts[first_estimate:].count("bounds") >= 1 and parts[-1] == "bounds"
    for part in ("bounds", "estimate"):
        finals = [s.final for s in steps if s.part == part]
        assert finals[-1] and not any(finals[:-1])
    # whatever ran before, the final bounds are those of one direct call
    with p.context("bounds"):
        want = vendi_bounds(X1200, kernel="rbf", q=steps[-1].result.qs, rng=0, sigma=SIGMA, **p.bounds.kwargs())
    _same(steps[-1].result, want)


def test_nystrom_refinement_grows_m_up_to_the_plans(X1200, monkeypatch):
    monkeypatch.setattr(run_module, "NYSTROM_MS", (100, 300))
    p = plan_scores(1200, 8, kernel="rbf", approx="bounds", bounds_method="nystrom", m=450)
    steps = list(run_plan(X1200, p, kernel="rbf", q=[0.0, 1.0, 2.0], sigma=SIGMA))
    assert [s.result.settings["m"] for s in steps] == [100, 300, 450]  # the plan's m comes last
    # the last is vendi_bounds' own (its exact VS_2 pass included), as the CLI computes it
    with p.context("bounds"):
        want = vendi_bounds(X1200, kernel="rbf", q=[0.0, 1.0, 2.0], rng=0, sigma=SIGMA, **p.bounds.kwargs())
    _same(steps[-1].result, want)
    assert "2" in steps[-1].result.exact_orders
    assert [s.result.settings["m"] for s in run_plan(X1200, p, kernel="rbf", refine=False, sigma=SIGMA)] == [450]


def test_each_result_comes_as_soon_as_it_is_computed(X1200):
    # not held back until the next step is computed (the k = 50 bounds before Lanczos starts k = 100)
    p = plan_scores(1200, 8, kernel="rbf", approx="bounds", bounds_method="lanczos", k=[20, 50, 100])
    events = []
    for step in run_plan(X1200, p, kernel="rbf", q=[1.0], sigma=SIGMA,
                         progress=lambda done, total, message: events.append(message)):
        events.append(f"k = {step.result.k}" + (" final" if step.final else ""))
    assert events.index("k = 50") < next(i for i, e in enumerate(events) if "top 100" in e)
    assert events.index("k = 20") < next(i for i, e in enumerate(events) if "top 50" in e)
    assert [e for e in events if e.startswith("k =")] == ["k = 0", "k = 20", "k = 50", "k = 100 final"]


def test_progress_is_one_scale_named_by_part_and_cancels(X1200):
    p = plan_scores(1200, 8, kernel="rbf", approx="auto", k=[20, 50], probes=8, memory_budget=BUDGET)
    seen = []
    list(run_plan(X1200, p, kernel="rbf", q=[0.0, 1.0], sigma=SIGMA, progress=lambda *a: seen.append(a)))
    fractions = [done / total for done, total, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    stages = {dc.split_message(message)[0] for _, _, message in seen}
    assert stages <= set(run_module.PARTS.values()) and "SLQ estimate" in stages

    def cancel(done, total, message):
        if message.startswith("SLQ estimate"):
            raise JobCancelledError("cancelled")

    it = run_plan(X1200, p, kernel="rbf", q=[0.0, 1.0], sigma=SIGMA, progress=cancel)
    with pytest.raises(JobCancelledError):
        list(it)


# ------------------------------------------------------------------------------------------
# MinHash only on bits (the CLI's count fingerprints once got tanimoto_rf, which then refused)
# ------------------------------------------------------------------------------------------
def test_count_fingerprints_get_a_sketch_that_runs_and_a_wrong_plan_is_refused_first():
    rng = np.random.default_rng(3)
    counts = sp.csr_matrix((rng.random((400, 64)) < 0.1) * rng.integers(1, 4, size=(400, 64)), dtype=np.float64)
    p = plan_scores(400, 64, kernel="tanimoto", approx="auto", binary=binary_features(counts), sketch_size=64,
                    density=counts.nnz / (400 * 64), memory_budget="2M")
    assert p.sketch is not None and p.sketch.method == "nystrom"
    got = run_plan_to_end(counts, p, kernel="tanimoto", q=[1.0, 2.0], replicates=2, companions=True)
    assert got.estimate.method == "nystrom" and got.estimate.qs.tolist() == [1.0, 2.0]
    # a plan made as if the counts were bits: refused before any part runs (not after the bounds and SLQ)
    wrong = plan_scores(400, 64, kernel="tanimoto", approx="auto", sketch_size=64, density=counts.nnz / (400 * 64),
                        memory_budget="2M")
    assert wrong.sketch.method == "tanimoto_rf"
    with pytest.raises(DiversityInputError, match="binary_features"):
        run_plan(counts, wrong, kernel="tanimoto", q=[1.0], companions=True)


# ------------------------------------------------------------------------------------------
# one plan, one answer: the CLI and the app
# ------------------------------------------------------------------------------------------
def test_the_cli_and_the_apps_refine_give_the_same_numbers_for_one_plan(X1200, tmp_path):
    scalable = pytest.importorskip("ui.scalable")
    path = tmp_path / "X.npy"
    np.save(path, X1200)
    qs = [q for q in scalable.Q_GRID if q <= 2.0 or math.isinf(q)]
    res = subprocess.run([sys.executable, "-m", "diversity_core.cli", "--memory-budget", BUDGET, "score", str(path),
                          "--kernel", "rbf", "--sigma", str(SIGMA), "--approx", "auto", "--k", "50", "--probes", "8",
                          "--format", "json", "--q", *map(str, qs)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    cli = json.loads(res.stdout)
    p = plan_scores(1200, 8, kernel="rbf", sigma=SIGMA, q=qs, approx="auto", k=50, probes=8, memory_budget=BUDGET)
    assert cli["plan"] == json.loads(json.dumps(p.to_dict()))
    kern = dc.get_kernel("rbf", sigma=SIGMA)
    reports = []
    app = scalable.refine(X1200, kern, None, p, lambda *a, **kw: reports.append(kw))
    assert {next(iter(kw)) for kw in reports if kw} == {"bounds", "estimate"}
    est = app["estimate"]
    assert est.method == cli["method"] == "slq"
    shared = [q for q in qs if q > 0]
    assert [dc.q_key(q) for q in shared] == cli["qs"]
    assert [est.vendi(q) for q in shared] == cli["value"]
    assert [est.interval(q)[0] for q in shared] == cli["low"] and [est.interval(q)[1] for q in shared] == cli["high"]
    b = app["bounds"]
    assert b.k == cli["bounds"]["k"] == 50
    assert b.top_eigenvalues.tolist() == cli["bounds"]["top_eigenvalues"]
    assert list(b.interval(0.0)) == [cli["bounds"]["low"][0], cli["bounds"]["high"][0]]


def test_refine_lets_a_cancellation_through(X1200):
    scalable = pytest.importorskip("ui.scalable")
    p = plan_scores(1200, 8, kernel="rbf", approx="auto", k=[20, 50], probes=8, memory_budget=BUDGET)
    got = []

    def progress(done, total, message, **data):
        got.append(data)
        if "estimate" in data:
            raise JobCancelledError("cancelled")

    with pytest.raises(JobCancelledError):
        scalable.refine(X1200, dc.get_kernel("rbf", sigma=SIGMA), None, p, progress)
    assert [d["bounds"].k for d in got if "bounds" in d] == [0, 20]  # what arrived before Stop
