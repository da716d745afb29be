"""One job runner and one time-left estimator in the app (issue 39, items 3 and 7).

Every long job of the app is a :class:`ui.workers.BackgroundJob` (the foreground tasks of
``ui.tasks.run``, the background ones of ``ui.tasks.start_background`` and the refinement of
``ui.scalable``): it keeps its reports' payloads on a worker and in a thread of this process, and
its time left comes from the one estimator of ``ui.feedback`` that the progress bars use too.
"""

from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest

import ui.scalable as scalable
from diversity_core.workers import JobCancelledError
from ui import feedback, tasks, workers


def _wait_done(job: workers.BackgroundJob, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not job.done():
        assert time.monotonic() < end, "the job did not end"
        time.sleep(0.02)


def _gated(before, after, value):
    """``(fn, gate)``: a job ``fn`` that sends the reports ``before`` (``(done, total, message, payload)``),
    waits for ``gate``, sends ``after`` and returns ``value``."""
    gate = threading.Event()

    def fn(progress):
        for done, total, message, data in before:
            progress(done, total, message, **data)
        gate.wait(10)
        for done, total, message, data in after:
            progress(done, total, message, **data)
        return value

    return fn, gate


def _wait_for(condition, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


# ------------------------------------------------------------------------------------------
# the one estimator (pure)
# ------------------------------------------------------------------------------------------
def test_time_left_is_the_throughput_since_the_phases_first_report():
    assert feedback.time_left((100.0, 50), 104.0, 150, 200) == pytest.approx(2.0)  # 100 steps in 4 s, 50 to go
    assert feedback.time_left((100.0, 50), 101.0, 60, 200) is None  # under MEASURE_S of measured work
    assert feedback.time_left((100.0, 50), 110.0, 50, 200) is None  # no step measured yet
    assert feedback.time_left((100.0, 50), 110.0, 200, 200) is None  # the phase is complete
    assert feedback.time_left((0.0, 0), 10.0, 5, 0) is None  # no total
    assert feedback.time_left_text(7.9) == "a few seconds left"
    assert feedback.time_left_text(150.0) == f"about {feedback.format_duration(150.0)} left"


def test_a_phase_is_the_total_with_the_stage_before_the_detail():
    # numbers masked: one phase; the words after a colon are part of the stage (UMAP's graph, then its layout)
    assert feedback.phase(30, "epoch 3/30") == feedback.phase(30, "epoch 4/30")
    assert feedback.phase(100, "UMAP on 1000 items: the neighbour graph") != feedback.phase(
        100, "UMAP on 1000 items: the layout")
    assert feedback.phase(4, "pixels features · reading") == feedback.phase(4, "pixels features · 40 s left")
    assert feedback.phase(4, "scoring") != feedback.phase(5, "scoring")  # a new total: a new phase
    clock = feedback.PhaseClock()
    assert clock.left(1, 10, 0.0) is None and clock.elapsed(5.0) == 0.0
    clock.report(0, 10, "step 0", 1.0)
    clock.report(4, 10, "step 4", 5.0)
    assert clock.elapsed(5.0) == 4.0 and clock.left(4, 10, 5.0) == pytest.approx(6.0)
    clock.report(4, 10, "another stage", 6.0)  # its steps are measured from here
    assert clock.left(4, 10, 9.0) is None and clock.left(7, 10, 9.0) == pytest.approx(3.0)


#: UMAP's reports (done, total, time, message): the same as tests/app/test_progress.py gives the bar.
UMAP = ((0, 100, 0.0, "importing umap-learn (the first import compiles for ~30 s)"),
        (10, 100, 30.0, "UMAP on 1000 items: the neighbour graph"),
        (10, 100, 33.0, "UMAP on 1000 items: the neighbour graph"),
        (20, 100, 34.0, "UMAP on 1000 items: the layout"),
        (30, 100, 38.0, "UMAP on 1000 items: the layout"))


def test_a_job_and_a_progress_bar_give_the_same_time_left(monkeypatch):
    # the job's estimator cut the phases at the colon: the layout's first step was priced by the graph's
    clock = [0.0]
    monkeypatch.setattr(workers, "time", types.SimpleNamespace(monotonic=lambda: clock[0], sleep=time.sleep))
    job, seen = workers.BackgroundJob("umap"), []

    def fn(progress):
        for done, total, t, message in UMAP:
            clock[0] = t
            progress(done, total, message)

    job.run_here(fn, lambda: (job.reports(), seen.append(job.time_left())))
    bar = feedback.ProgressBar("UMAP")
    said = [bar._eta(done, total, t, message) for done, total, t, message in UMAP]
    assert seen[:4] == [None] * 4 and not any(" left" in s for s in said[:4])
    assert seen[4] == pytest.approx(28.0)  # (38 - 34) s for 10 epochs, 70 to go
    assert said[4].endswith(feedback.time_left_text(seen[4]))


# ------------------------------------------------------------------------------------------
# the one runner, in a thread of this process (DIVERSITY_WORKERS=0, the tests' default)
# ------------------------------------------------------------------------------------------
def test_a_background_job_keeps_its_payloads_and_the_latest_of_each():
    fn, gate = _gated([(1, 3, "bounds k = 20", {"bounds": "b20"})],
                      [(2, 3, "SLQ batch 1", {"estimate": "e1"}), (3, 3, "bounds k = 50", {"bounds": "b50"})],
                      {"bounds": "b50", "estimate": "e1"})
    job = workers.start_background(fn, "payloads")
    _wait_for(lambda: job.data())
    assert job.data() == {"bounds": "b20"} and not job.done()  # read while it runs
    assert job.progress() == (1.0, 3.0, "bounds k = 20")
    gate.set()
    _wait_done(job)
    assert [(r.done, r.data) for r in job.reports()] == [(2.0, {"estimate": "e1"}), (3.0, {"bounds": "b50"})]
    assert job.data() == {"bounds": "b50", "estimate": "e1"}
    assert job.outcome() == ({"bounds": "b50", "estimate": "e1"}, [])
    assert job.error() is None and not job.cancelled


def test_an_unwatched_job_keeps_only_the_latest_payload_of_each_keyword():
    """Bounds carry eigenvectors: reports nobody read yet must not hold every one of them."""
    fn, gate = _gated([], [(1, 3, "bounds k = 20", {"bounds": "b20"}), (2, 3, "SLQ", {"estimate": "e1"}),
                           (3, 3, "bounds k = 50", {"bounds": "b50"})], None)
    job = workers.start_background(fn, "unwatched")
    gate.set()
    _wait_done(job)
    held = [r.data for _, r in job._reports]
    assert held == [None, {"estimate": "e1"}, {"bounds": "b50"}]
    assert job.data() == {"bounds": "b50", "estimate": "e1"}


def test_cancel_stops_a_background_job_at_its_next_report_and_keeps_what_arrived():
    started = threading.Event()

    def fn(progress):
        progress(0, 1, "first", bounds="kept")
        started.set()
        while True:
            progress(0, 1, "looping")
            time.sleep(0.01)

    job = workers.start_background(fn, "cancel")
    assert started.wait(10)
    job.cancel()
    _wait_done(job)
    assert job.cancelled and isinstance(job.error(), JobCancelledError)
    with pytest.raises(JobCancelledError):
        job.outcome()
    assert job.data() == {"bounds": "kept"}


def test_a_failed_background_job_raises_its_own_error():
    def fn(progress):
        progress(0, 1, "starting")
        raise ValueError("the sketch ran out of landmarks")

    job = workers.start_background(fn, "failing")
    _wait_done(job)
    assert isinstance(job.error(), ValueError)
    with pytest.raises(ValueError, match="ran out of landmarks"):
        job.outcome()


def test_a_foreground_job_without_workers_runs_here_and_draws_each_report_and_payload():
    drawn, payloads = [], []

    def fn(progress):
        progress(1, 2, "half", curve=[1.0])
        progress(2, 2, "all", curve=[1.0, 2.0])
        return threading.current_thread().name

    value, notes = workers.run_job(fn, lambda d, t, m="": drawn.append((d, t, m)), "fg", payloads.append)
    assert value == threading.current_thread().name and notes == []  # the calling thread, as before
    assert drawn == [(1, 2, "half"), (2, 2, "all")]
    assert payloads == [{"curve": [1.0]}, {"curve": [1.0, 2.0]}]

    def failing(progress):
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        workers.run_job(failing, lambda *a: None, "fg")


def test_a_refinement_jobs_snapshot_follows_its_payloads():
    refine_like, gate = _gated([(1, 4, "Lanczos k = 20", {"bounds": "B20"})], [(2, 4, "SLQ batch 1", {"estimate": "E1"})],
                               {"bounds": "B20", "estimate": "E1"})
    job = workers.start_background(refine_like, scalable.LABEL)
    _wait_for(lambda: job.data())
    snap = scalable.snapshot(job)
    assert (snap.state, snap.bounds, snap.estimate, snap.fraction, snap.message) == (
        "running", "B20", None, 0.25, "Lanczos k = 20")
    job.cancel()
    assert scalable.snapshot(job).stop_requested  # "stopping after the current step"
    gate.set()
    _wait_done(job)
    snap = scalable.snapshot(job)
    assert (snap.state, snap.bounds, snap.estimate) == ("stopped", "B20", None)  # what arrived stays

    gate.set()  # the same job again, run to its end
    job = workers.start_background(refine_like, scalable.LABEL)
    _wait_done(job)
    snap = scalable.snapshot(job)
    assert (snap.state, snap.bounds, snap.estimate, snap.fraction) == ("done", "B20", "E1", 1.0)

    def failing(progress):
        progress(0, 1, "starting", bounds="B0")
        raise ValueError("the sketch ran out of landmarks")

    job = workers.start_background(failing, scalable.LABEL)
    _wait_done(job)
    snap = scalable.snapshot(job)
    assert snap.state == "failed" and snap.bounds == "B0"
    assert snap.error.startswith(scalable.LABEL) and "the sketch ran out of landmarks" in snap.error


# ------------------------------------------------------------------------------------------
# the refinement on a real worker pool (one local worker process)
# ------------------------------------------------------------------------------------------
@pytest.fixture
def worker_pool(monkeypatch):
    pytest.importorskip("distributed", reason="worker processes need the [dask] extra")
    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    workers.shutdown()
    tasks.clear_stores()
    assert workers.pool() is not None  # started (a job arriving before that runs in the script thread)
    yield workers
    for job in tasks.store(scalable.KIND).values():
        if job is not None:
            job.cancel()
    workers.shutdown()
    tasks.clear_stores()


def test_the_scores_page_refines_on_a_worker_process_not_in_a_server_thread(worker_pool, monkeypatch):
    from test_app import assert_clean, start
    from test_scalable import SCORES, _exact_spectrum, _shown

    monkeypatch.setenv("DIVERSITY_MEMORY_BUDGET", "20M")  # the digits demo is past the dense limit
    monkeypatch.setattr(scalable, "SKETCH_SIZE", 128)
    monkeypatch.setattr(scalable, "KS", (20, 50))
    at = start({"demo": "digits", "kernel": "rbf"})
    at.switch_page(SCORES).run()
    assert_clean(at)
    [job] = [j for j in tasks.store(scalable.KIND).values() if j is not None]
    end = time.monotonic() + 180
    while scalable.snapshot(job).bounds is None:  # the first bounds (k = 20): seconds of the job's work
        assert time.monotonic() < end and not job.done(), scalable.snapshot(job)
        time.sleep(0.5)
    # it runs on the worker: the scheduler has its task, and this process has no thread of it
    pool = worker_pool.pool()
    prefixes = pool.client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert "refining-beyond-the-dense-limit" in prefixes, prefixes
    assert not [t.name for t in threading.enumerate() if t.name.startswith(("scalable-", "diversity-background"))]
    # its payloads come back while it runs: a band that holds the exact value, shown on the page
    b = scalable.snapshot(job).bounds
    exact = _exact_spectrum().profile(b.qs)
    assert np.all(b.low <= exact * (1 + 1e-9)) and np.all(exact <= b.high * (1 + 1e-9))
    at.run()
    assert_clean(at)
    assert "Bounds from" in _shown(at) or "SLQ" in _shown(at)
    if not job.done():  # Stop cancels the worker's job; what arrived stays
        at.button(key="scalable_stop").click().run()
        assert_clean(at)
        assert job.cancelled and job.done()
        snap = scalable.snapshot(job)
        assert snap.state == "stopped" and snap.bounds is not None
        at.run()
        assert "Refinement stopped" in " ".join(i.value for i in at.info)
    else:
        assert scalable.snapshot(job).state == "done"
