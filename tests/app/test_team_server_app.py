"""Issue 40, item 14: a task whose worker process died offers **Try again** at once, with its error."""

from __future__ import annotations

from pathlib import Path

from test_app import assert_clean, metric, start

from diversity_core.data import load_demo
from diversity_core.workers import WorkerLostError


def _flaky_run_job(monkeypatch, task: str):
    """``ui.workers.run_job`` whose first job labelled ``task`` loses its worker (as a killed worker's job
    does); the list of that task's calls."""
    from ui import workers

    real, calls = workers.run_job, []

    def run_job(fn, progress, label, on_data=None):
        if label != task:
            return real(fn, progress, label, on_data)
        calls.append(label)
        if len(calls) == 1:
            raise WorkerLostError(f"the worker process running '{label}' stopped before it finished (it may have "
                                  "run out of memory or been killed); try again, or with less data or a smaller "
                                  "memory budget.")
        return real(fn, progress, label, on_data)

    monkeypatch.setattr(workers, "run_job", run_job)
    return calls


def test_a_lost_worker_offers_try_again_at_once_and_it_runs_the_task(monkeypatch):
    from ui import tasks

    tasks.clear_stores()
    calls = _flaky_run_job(monkeypatch, "Training RND")
    ds = load_demo("digits")
    at = start({"group": [ds.group_names()[0]]})
    at.switch_page("app_pages/5_rnd.py").run()
    at.selectbox(key="rnd_arch").set_value("mlp")
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(2)
    at.number_input(key="rnd_last").set_value(1)
    at.number_input(key="rnd_runs").set_value(2)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert any("stopped before it finished" in e.value for e in at.error), [e.value for e in at.error]
    # the same run offers the retry (before issue 40 only a later rerun, or a reload, drew a button again)
    retry = [b for b in at.button if b.key == "retry_rnd"]
    assert len(retry) == 1 and retry[0].label == "Try again"
    retry[0].click().run()
    assert_clean(at)
    # one press: the task ran again (no second click on "Run RND"), and its result is on the page
    assert calls == ["Training RND", "Training RND"]
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "RND score").value
    assert not [b for b in at.button if b.key == "retry_rnd"]
    tasks.clear_stores()


def test_a_task_that_starts_by_itself_runs_again_on_try_again(monkeypatch):
    from ui import tasks

    tasks.clear_stores()
    calls = _flaky_run_job(monkeypatch, "Computing magnitude")
    ds = load_demo("digits")
    at = start({"group": [ds.group_names()[0]], "n": "60"})
    at.switch_page("app_pages/4_magnitude.py").run()
    assert_clean(at)
    assert any("stopped before it finished" in e.value for e in at.error), [e.value for e in at.error]
    retry = [b for b in at.button if b.key == "retry_magnitude"]
    assert len(retry) == 1, [b.key for b in at.button]
    retry[0].click().run()
    assert_clean(at)
    assert calls == ["Computing magnitude", "Computing magnitude"]
    assert not any("stopped before it finished" in e.value for e in at.error), [e.value for e in at.error]
    tasks.clear_stores()


def test_a_background_task_whose_worker_died_offers_try_again(monkeypatch):
    """UMAP runs in the background, followed by a fragment: when its worker dies the fragment says so with a
    Try again button (the page's own start button is not drawn while the task runs)."""
    import threading
    import time

    from streamlit.testing.v1 import AppTest

    from diversity_core.workers import JobCancelledError
    from ui import map_ui, tasks

    calls, release = [], threading.Event()

    def umap_task(*args, **kwargs):
        def fn(progress):
            calls.append(1)
            if len(calls) == 1:
                raise WorkerLostError("the worker process running 'UMAP' stopped before it finished (it may have "
                                      "run out of memory or been killed); try again.")
            while not release.is_set():  # the second run waits until the test ends
                progress(0, 1, "waiting")
                time.sleep(0.05)
            raise JobCancelledError("cancelled")

        return fn

    monkeypatch.setattr(map_ui, "umap_task", umap_task)
    tasks.store("umap").clear()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=240)
    at.query_params.update({"demo": "digits", "n": "120", "seed": "1"})
    at.run()
    at.switch_page("app_pages/6_projection.py").run()
    at.radio(key="proj_method").set_value("UMAP").run()
    [b for b in at.button if b.key == "umap_run"][0].click().run()
    try:
        deadline = time.monotonic() + 120
        while not any("stopped before it finished" in e.value for e in at.error):
            assert time.monotonic() < deadline, "the lost worker was never reported"
            time.sleep(0.1)
            at.run()
        assert_clean(at)
        retry = [b for b in at.button if b.key == "retry_background_umap"]
        assert len(retry) == 1 and retry[0].label == "Try again", [b.key for b in at.button]
        retry[0].click().run()
        assert_clean(at)
        while len(calls) < 2:  # started again by the one press
            assert time.monotonic() < deadline, calls
            time.sleep(0.05)
        assert not any("stopped before it finished" in e.value for e in at.error)
    finally:
        release.set()
        tasks.store("umap").clear()
