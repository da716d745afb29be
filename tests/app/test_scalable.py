"""Beyond the dense limit (issue 12, the app): with a small memory budget the digits demo under the
rbf kernel takes the scalable path; the badge says so, the guaranteed band contains the exact value,
Stop keeps what has arrived, moving q reads the stored bounds, and the exact path can be forced.

The budget comes from ``DIVERSITY_MEMORY_BUDGET`` (20 MB: the 1200-item dense path needs 58 MB,
Lanczos's stored float64 matrix 14 MB); the sketch and the Lanczos steps are made small so each
test stays well under 30 s.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import time

import numpy as np
import pytest
from test_app import assert_clean, headline, start
from threadpoolctl import threadpool_limits

import diversity_core as dc
import ui.scalable as scalable
from diversity_core.approx import exact_plan, iter_vendi_bounds, plan_scores
from diversity_core.data import load_demo
from diversity_core.featurizers import featurize
from ui import tasks, workers

SCORES, SPECTRUM = "app_pages/2_scores.py", "app_pages/3_spectrum.py"
#: The core module that carries out the plan (ui.scalable.refine runs it): the tests slow or count its steps there.
RUN = importlib.import_module("diversity_core.approx.run")
QUERY = {"demo": "digits", "kernel": "rbf"}
BUDGET = "20M"


@pytest.fixture(autouse=True)
def _small_budget(monkeypatch):
    """A budget below the dense path of the demo, small sketches, and no job left from another test."""
    monkeypatch.setenv("DIVERSITY_MEMORY_BUDGET", BUDGET)
    monkeypatch.setattr(scalable, "SKETCH_SIZE", 128)
    monkeypatch.setattr(scalable, "KS", (20, 50))
    tasks.clear_stores()
    # one BLAS thread: on a shared machine an oversubscribed threaded LAPACK made the forced dense
    # path 10x slower; the times these tests check do not depend on it
    with threadpool_limits(limits=1):
        yield
    for job in list(tasks.store(scalable.KIND).values()):
        if job is not None:
            job.cancel()
    tasks.clear_stores()


@functools.lru_cache(maxsize=1)
def _exact_spectrum() -> dc.Spectrum:
    X = featurize(load_demo("digits"))
    kern = dc.get_kernel("rbf")
    kern = kern.resolve(kern.validate(X))
    with dc.config_context(memory_budget="2G"):
        return dc.compute_spectrum(X, kernel=kern)


def _job() -> workers.BackgroundJob:
    jobs = [j for j in tasks.store(scalable.KIND).values() if j is not None]
    assert len(jobs) == 1
    return jobs[0]


def _wait(at, until, timeout: float = 25.0):
    """Rerun the page (as its timer would) until ``until(snapshot)`` holds."""
    end = time.monotonic() + timeout
    while True:
        snap = scalable.snapshot(_job())
        if until(snap):
            at.run()
            assert_clean(at)
            return snap
        assert time.monotonic() < end, (snap.state, snap.stage, snap.message, snap.error)
        time.sleep(0.3)


def _scores():
    at = start(QUERY)
    at.switch_page(SCORES).run()
    assert_clean(at)
    return at


def _shown(at) -> str:
    return " ".join(m.value for m in at.markdown) + " " + " ".join(c.value for c in at.caption)


def _headline(snap, q: float) -> str:
    """The headline at q: the SLQ estimate of the full-sample value when it covers q (issue 23), else the band."""
    est = scalable.estimate_at(snap.estimate, q)
    if scalable.is_slq(snap.estimate) and est is not None:
        return f"≈ {scalable.estimate_text(*est)}"
    return scalable.interval_text(*scalable.bounds_at(snap.bounds, q))


def test_core_plan_matches_the_exact_paths_decision():
    with dc.config_context(memory_budget=BUDGET):
        assert exact_plan(1200, 64, kernel="rbf", n_eigenvectors=10).method is None
        assert exact_plan(1200, 64, kernel="cosine", n_eigenvectors=10).method == "dual"
        assert exact_plan(500, 64, kernel="rbf").method == "dense"
        with pytest.raises(dc.MemoryBudgetError, match="memory budget"):
            dc.compute_spectrum(np.zeros((1200, 3)), kernel="rbf", sigma=1.0, n_eigenvectors=10)


def test_bounds_keep_ritz_vectors_and_evaluate_any_order():
    X = np.random.default_rng(0).normal(size=(300, 4))
    *_, b = iter_vendi_bounds(X, kernel="rbf", sigma=1.0, ks=[10], q=[0.5, 1.0, 2.0], n_eigenvectors=3, rng=0)
    spec = dc.compute_spectrum(X, kernel="rbf", sigma=1.0, n_eigenvectors=3)
    assert b.eigenvectors.shape == (300, 3) and not b.eigenvectors.flags.writeable
    np.testing.assert_allclose(np.abs(np.sum(b.eigenvectors * spec.eigenvectors, axis=0)), 1.0, atol=1e-6)
    lo, hi = b.bounds_at([0.5, 1.0, 2.0, 3.3])
    np.testing.assert_array_equal(lo[:3], b.low)
    np.testing.assert_array_equal(hi[:3], b.high)
    assert lo[3] <= spec.vendi(3.3) <= hi[3]


def test_badge_first_look_then_a_band_that_contains_the_exact_value():
    at = _scores()
    shown = _shown(at)
    assert "Scalable path: n = 1200 is beyond the dense limit" in shown
    assert "over the memory budget of 20 MiB" in shown
    # the first numbers: a subsample's exact VS, labelled as such (or, on a fast machine, later ones)
    assert "Subsample estimate (1000 of 1200 items)" in shown or "Bounds from" in shown or "SLQ" in shown
    assert headline(at).label == "Vendi score (q = 1)"
    snap = _wait(at, lambda s: s.state == "done")
    spec = _exact_spectrum()
    b = snap.bounds
    assert b.k == 50 and snap.estimate is not None
    exact = spec.profile(b.qs)
    assert np.all(b.low <= exact * (1 + 1e-9)) and np.all(exact <= b.high * (1 + 1e-9))
    lo, hi = scalable.bounds_at(b, 1.0)
    # the headline is the SLQ estimate of the full-sample value, its interval holding the exact value
    assert headline(at).value == _headline(snap, 1.0) and headline(at).value.startswith("≈")
    _, elo, ehi = scalable.estimate_at(snap.estimate, 1.0)
    assert elo <= spec.vendi(1.0) <= ehi
    assert "estimate of the full-sample value" in _shown(at)
    assert any(m.label == "Guaranteed band (q = 1)" and m.value == scalable.interval_text(lo, hi) for m in at.metric)
    assert "Bounds from the top 50 eigenvalues and the exact VS₂" in _shown(at)
    fig = at.get("plotly_chart")[0].proto.spec
    assert "guaranteed bounds (top 50 eigenvalues)" in fig and "SLQ" in fig
    # the Spectrum page: Lanczos eigenvalues, galleries from the Ritz vectors, a subsampled heatmap
    at.switch_page(SPECTRUM).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    shown = _shown(at)
    assert "Ritz vectors of the top 50 eigenvalues from Lanczos on all 1200 items" in shown
    assert "subsample of 400 of the 1200 items" in shown
    assert scalable.snapshot(_job()).bounds is b  # the page changes found the finished job


def test_stop_ends_the_refinement_and_keeps_what_arrived(monkeypatch):
    real = RUN.iter_vendi_bounds

    def slow(*args, progress=None, **kwargs):
        for b in real(*args, progress=progress, **kwargs):
            yield b
            for _ in range(400):  # a long step, reporting progress like the core does
                progress(0, 1, "a slow step")
                time.sleep(0.05)

    monkeypatch.setattr(RUN, "iter_vendi_bounds", slow)
    at = _scores()
    _wait(at, lambda s: s.bounds is not None)
    assert any(b.key == "scalable_stop" for b in at.button)
    at.button(key="scalable_stop").click().run()
    assert_clean(at)
    snap = _wait(at, lambda s: s.state == "stopped", timeout=10)
    assert _job().done() and _job().cancelled  # the job itself has ended, not only its display
    assert snap.bounds is not None and snap.bounds.k == 0  # the step that had arrived is kept
    assert "Refinement stopped" in " ".join(i.value for i in at.info)
    lo, hi = scalable.bounds_at(snap.bounds, 1.0)
    assert headline(at).value == _headline(snap, 1.0)
    assert not any(b.key == "scalable_stop" for b in at.button)
    spec = _exact_spectrum()
    assert lo <= spec.vendi(1.0) <= hi


def test_moving_q_reads_the_stored_bounds(monkeypatch):
    calls = {"bounds": 0, "estimate": 0}
    real_bounds, real_estimate = RUN.iter_vendi_bounds, RUN.iter_vendi_slq

    def counted_bounds(*args, **kwargs):
        calls["bounds"] += 1
        return real_bounds(*args, **kwargs)

    def counted_estimate(*args, **kwargs):
        calls["estimate"] += 1
        return real_estimate(*args, **kwargs)

    monkeypatch.setattr(RUN, "iter_vendi_bounds", counted_bounds)
    monkeypatch.setattr(RUN, "iter_vendi_slq", counted_estimate)
    at = _scores()
    snap = _wait(at, lambda s: s.state == "done")
    job = _job()
    before = dict(calls)
    assert before == {"bounds": 2, "estimate": 1}  # k = KS[0], the SLQ estimate, then the other k
    for q, label in ((2.0, "2"), (0.5, "0.5"), (math.inf, "∞"), (3.0, "3")):
        t0 = time.perf_counter()
        at.sidebar.select_slider(key="q").set_value(q).run()
        assert_clean(at)
        assert time.perf_counter() - t0 < 10
        assert headline(at).label == f"Vendi score (q = {label})"
        assert headline(at).value == _headline(snap, q)
    assert calls == before and _job() is job


def test_force_exact_shows_memory_and_time_first_then_the_exact_value():
    at = _scores()
    button = at.button(key="scalable_force_exact")
    assert "Compute exact instead (" in button.label and "MiB, about" in button.label
    assert "Approximate time" in button.help
    button.click().run()
    assert_clean(at)
    spec = _exact_spectrum()
    assert headline(at).value == f"{spec.vendi(1.0):.2f}"
    assert "Exact path forced beyond the memory budget" in _shown(at)
    assert _job().cancelled  # the refinement no longer competes for the CPU
    at.button(key="scalable_back").click().run()
    assert_clean(at)
    assert "Scalable path: n = 1200" in _shown(at)


def test_past_the_float32_matrix_the_band_comes_from_nystrom_sketches(monkeypatch):
    # the core's decision at 100,000 items (not even the float32 matrix fits), on the small demo
    monkeypatch.setattr(scalable, "BOUNDS_METHOD", "nystrom")
    monkeypatch.setattr(RUN, "NYSTROM_MS", (100, 300))
    at = _scores()
    snap = _wait(at, lambda s: s.state == "done")
    b = snap.bounds
    # the sketches grow (100, 300) up to the m the plan sized to the budget, which comes last (the
    # app once stopped at the schedule's 300), with vendi_bounds' exact VS_2 pass as in the CLI
    m = plan_scores(1200, 64, kernel="rbf", approx="auto", bounds_method="nystrom", k=scalable.KS, sketch_size=128,
                    n_eigenvectors=10, memory_budget=BUDGET).bounds.m
    assert 300 < m < 1200 and b.settings["method"] == "nystrom" and b.settings["m"] == m
    exact = _exact_spectrum().profile(b.qs)
    assert np.all(b.low <= exact * (1 + 1e-9)) and np.all(exact <= b.high * (1 + 1e-9))
    assert headline(at).value == _headline(snap, 1.0)
    assert f"Bounds from a Nyström sketch (m = {m}" in _shown(at)
    # VS_2 exact by its blocked pass, no Lanczos here: VS_inf is not labelled exact
    labels = {metric.label for metric in at.metric}
    assert "VS₂ (exact)" in labels and "VS∞ (Lanczos)" not in labels
    names = {t.get("name") for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]}
    assert f"guaranteed bounds (Nyström, m = {m})" in names
    at.switch_page(SPECTRUM).run()
    assert_clean(at)
    assert "Lower bounds on the" in at.get("plotly_chart")[0].proto.spec
    assert "no galleries" in _shown(at).lower()


def test_a_failed_refinement_shows_its_error_and_starts_over_only_when_asked(monkeypatch):
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        raise ValueError("the sketch ran out of landmarks")

    monkeypatch.setattr(RUN, "iter_vendi_slq", failing)
    at = _scores()
    _wait(at, lambda s: s.state == "failed")
    for _ in range(3):  # reruns (a q change, the panel's last redraw) keep the failed job and show its error
        at.run()
        assert_clean(at)
    assert len(calls) == 1
    assert any("the sketch ran out of landmarks" in e.value for e in at.error)
    at.button(key="scalable_retry").click().run()
    assert_clean(at)
    _wait(at, lambda s: s.state == "failed")
    assert len(calls) == 2


def test_the_refinement_runs_the_cores_plan_sized_to_the_budget(monkeypatch):
    # at 12 MB the page's preferred sketch (D = n / 4 = 300) does not fit: the job runs what the
    # core's plan_scores sizes, as the CLI does, and Lanczos holds the float32 matrix
    monkeypatch.setenv("DIVERSITY_MEMORY_BUDGET", "12M")
    monkeypatch.setattr(scalable, "SKETCH_SIZE", 1024)
    at = _scores()
    snap = _wait(at, lambda s: s.state == "done")
    p = plan_scores(1200, 64, kernel="rbf", approx="auto", k=scalable.KS, sketch_size=300, n_eigenvectors=10,
                    memory_budget="12M")
    # the estimate is SLQ's (issue 23), sized to the budget by the same plan
    assert snap.estimate.method == "slq" and snap.estimate.k <= p.slq.k and p.slq.peak_bytes <= 12 * 2**20
    assert snap.bounds.settings["matrix"] == p.bounds.storage == "float32"
    assert snap.bounds.k == p.bounds.ks[-1] == 50
    spec = _exact_spectrum()
    exact = spec.profile(snap.bounds.qs)
    assert np.all(snap.bounds.low <= exact * (1 + 1e-9)) and np.all(exact <= snap.bounds.high * (1 + 1e-9))


def test_the_first_bounds_and_their_eigenvectors_come_before_the_slq_estimate(monkeypatch):
    # the Spectrum page's galleries need the top eigenvectors: k = KS[0] runs first (seconds), then
    # SLQ (up to SLQ_SECONDS), then the other k
    order = []
    real_report = workers.BackgroundJob._report

    def report(self, *args, **data):  # the job's payloads, in the order they arrive
        if "bounds" in data:
            order.append(("bounds", data["bounds"].k))
        if "estimate" in data and not any(o[0] == "estimate" for o in order):
            order.append(("estimate", None))
        return real_report(self, *args, **data)

    monkeypatch.setattr(workers.BackgroundJob, "_report", report)
    at = _scores()
    snap = _wait(at, lambda s: s.state == "done")
    assert snap.estimate.method == "slq"
    first_estimate = order.index(("estimate", None))
    assert order[:first_estimate] == [("bounds", 0), ("bounds", scalable.KS[0])], order  # k = 0: exact VS_2 only
    ks = [k for what, k in order[first_estimate + 1:]]
    assert ks and min(ks) >= scalable.KS[0] and ks == sorted(ks), order  # never back to weaker bounds
    assert snap.bounds.eigenvectors is not None and snap.bounds.k > scalable.KS[0]
