"""The app's heavy jobs on worker processes (ui.workers on a real distributed.LocalCluster)."""

from __future__ import annotations

import pytest
from test_app import assert_clean, metric, start

pytest.importorskip("distributed", reason="worker processes need the [dask] extra")

from diversity_core.data import load_demo  # noqa: E402
from diversity_core.featurizers import featurize  # noqa: E402


@pytest.fixture
def worker_pool(monkeypatch):
    from ui import tasks, workers

    monkeypatch.setenv(workers.WORKERS_ENV, "1")
    workers.shutdown()
    tasks.clear_stores()
    assert workers.pool() is not None  # started (a job arriving before that runs in the script thread)
    yield workers
    workers.shutdown()
    tasks.clear_stores()


def test_rnd_trains_on_a_worker_process_and_matches_the_core(worker_pool):
    from diversity_core.rnd import rnd_score

    ds = load_demo("digits")
    group = ds.group_names()[0]
    at = start({"group": [group]})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    at.selectbox(key="rnd_arch").set_value("mlp")
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(4)
    at.number_input(key="rnd_last").set_value(2)
    at.number_input(key="rnd_runs").set_value(2)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    pool = worker_pool.pool()
    assert pool.workers() == 1
    # the job ran on the worker, not in the script thread: the scheduler has seen its key
    prefixes = pool.client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert "training-rnd" in prefixes, prefixes
    X = featurize(ds)[ds.group_indices(group)]
    expected = rnd_score(X, train_size=100, epochs=4, average_last=2, runs=2, architecture="mlp", rng=0)
    assert metric(at, "RND score").value == f"{expected.score:.4f}"
    # the live curves arrived as payloads and were drawn in the status box, then the final chart
    assert len(at.get("plotly_chart")) >= 2


def test_an_unreachable_scheduler_is_a_clear_error_on_the_page(monkeypatch):
    from ui import tasks, workers

    monkeypatch.setenv(workers.SCHEDULER_ENV, "tcp://127.0.0.1:9")
    workers.shutdown()
    tasks.clear_stores()
    try:
        ds = load_demo("digits")
        at = start({"group": [ds.group_names()[0]]})
        at.switch_page("app_pages/5_rnd.py").run()
        at.selectbox(key="rnd_arch").set_value("mlp")
        at.number_input(key="rnd_epochs").set_value(2)
        at.number_input(key="rnd_runs").set_value(2)
        at.button(key="rnd_run").click().run()
        assert_clean(at)
        # one line, no traceback (the page escapes the colons of the address for markdown)
        assert any("cannot reach the Dask scheduler at tcp" in e.value and "127.0.0.1" in e.value
                   and "Traceback" not in e.value for e in at.error), [e.value for e in at.error]
    finally:
        workers.shutdown()


def test_cli_app_passes_workers_and_scheduler_to_the_server():
    from diversity_core.cli import _app as cli_app
    from diversity_core.cli import build_parser
    from ui import workers

    assert (cli_app.WORKERS_ENV, cli_app.SCHEDULER_ENV) == (workers.WORKERS_ENV, workers.SCHEDULER_ENV)
    _, env = cli_app.streamlit_command(build_parser().parse_args(["app"]))
    assert env[cli_app.WORKERS_ENV] == "auto" and cli_app.SCHEDULER_ENV not in env
    _, env = cli_app.streamlit_command(build_parser().parse_args(
        ["app", "--workers", "0", "--scheduler", "tcp://127.0.0.1:8786"]))
    assert env[cli_app.WORKERS_ENV] == "0" and env[cli_app.SCHEDULER_ENV] == "tcp://127.0.0.1:8786"


def test_cli_app_with_an_unreachable_scheduler_exits_2_with_one_line():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "diversity_core.cli", "app", "--scheduler", "tcp://127.0.0.1:9"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in lines[0], done.stderr
