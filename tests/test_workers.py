"""The worker pool (diversity_core.workers) on a real distributed.LocalCluster."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("distributed", reason="the worker pool needs the [dask] extra")

from diversity_core.exceptions import DiversityInputError  # noqa: E402
from diversity_core.workers import (  # noqa: E402
    JobCancelledError,
    WorkerLostError,
    start_pool,
    threads_per_job,
)


@pytest.fixture(scope="module")
def pool():
    p = start_pool(workers=1, threads=1, memory_limit="2GiB")
    yield p
    p.close()


def _warn(progress):
    import warnings

    from diversity_core.exceptions import SpectrumWarning

    warnings.warn("a core warning", SpectrumWarning, stacklevel=1)
    warnings.warn("not ours", UserWarning, stacklevel=1)
    return 1


def _count(progress):
    for i in range(5):
        progress(i + 1, 5, f"step {i + 1}", point=i)
    return "done"


def _spin_until_cancelled(progress):
    i = 0
    while True:  # busy work that only a cancellation ends
        t = time.monotonic()
        while time.monotonic() - t < 0.02:
            pass
        i += 1
        progress(i, 10**9, "spinning")


def _die(progress):
    progress(0, 1, "about to die")
    os.kill(os.getpid(), signal.SIGKILL)


def _thread_limits(progress):
    from threadpoolctl import threadpool_info

    return sorted({info["num_threads"] for info in threadpool_info()})


def test_threads_per_job_divides_the_cores():
    assert threads_per_job(2, cores=2) == 1
    assert threads_per_job(1, cores=16) == 16
    assert threads_per_job(4, cores=16) == 4
    assert threads_per_job(5, cores=2) == 1
    with pytest.raises(DiversityInputError, match="jobs must be at least 1"):
        threads_per_job(0)


def test_a_job_returns_its_value_and_its_progress_payloads(pool):
    job = pool.submit(_count, label="count")
    assert job.result(timeout=60) == "done"
    reports = job.reports()
    # payloads are never dropped, in order
    assert [r.data["point"] for r in reports if r.data] == [0, 1, 2, 3, 4]
    assert reports[-1].done == reports[-1].total == 5


def test_jobs_run_with_limited_thread_pools(pool):
    limits = pool.submit(_thread_limits, label="threads").result(timeout=60)
    assert limits in ([], [1])


def test_a_cancelled_job_frees_its_worker(pool):
    job = pool.submit(_spin_until_cancelled, label="spin")
    deadline = time.monotonic() + 60
    while not job.reports() and time.monotonic() < deadline:  # wait until it runs
        time.sleep(0.05)
    job.cancel()
    with pytest.raises((JobCancelledError, distributed.client.FutureCancelledError)):
        job.result(timeout=30)
    # the only worker is free again: the next job runs at once and its CPU is idle meanwhile
    import psutil

    before = pool.client.run(lambda: sum(psutil.Process().cpu_times()[:2]))
    time.sleep(1.0)
    after = pool.client.run(lambda: sum(psutil.Process().cpu_times()[:2]))
    (worker,) = before
    assert after[worker] - before[worker] < 0.5  # a spinning job would use about 1 s
    assert pool.submit(_count, label="after").result(timeout=60) == "done"


def test_a_killed_worker_gives_a_clear_error_and_the_job_can_be_retried(pool):
    job = pool.submit(_die, label="dying job")
    with pytest.raises(WorkerLostError, match="'dying job' stopped before it finished.*try again"):
        job.result(timeout=120)
    # the nanny restarts the worker: a retry runs
    deadline = time.monotonic() + 60
    while pool.workers() < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pool.submit(_count, label="retry").result(timeout=120) == "done"


def test_an_unreachable_scheduler_fails_cleanly_and_fast():
    start = time.monotonic()
    with pytest.raises(DiversityInputError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        start_pool("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - start < 30


def test_a_jobs_core_warnings_come_back_as_text(pool):
    job = pool.submit(_warn, label="warn")
    assert job.result(timeout=60) == 1
    assert job.warnings() == ["a core warning"]


def test_the_cli_local_cluster_sizes_each_workers_blas_threads(monkeypatch):
    """`diversity score --dask local:2` on 2 workers: each worker's BLAS pools get cores // 2 threads."""
    from diversity_core.cli._score import dask_client
    from diversity_core.workers import threads_per_job

    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # inherited otherwise; never the answer below
    with dask_client(None, 2) as client:
        limits = client.run(lambda: __import__("os").environ.get("OMP_NUM_THREADS"))
        address = client.scheduler.address
        # issue 40 item 1 for the CLI's own cluster too: TLS on loopback, and a client without the
        # run's key is refused
        import distributed

        with pytest.raises((OSError, TimeoutError)):
            distributed.Client(address.replace("tls://", "tcp://"), timeout=5)
        with pytest.raises((OSError, TimeoutError, TypeError, ValueError)):
            distributed.Client(address, timeout=5)
    assert set(limits.values()) == {str(threads_per_job(2))}
    assert address.startswith("tls://127.0.0.1:")


def test_a_delayed_pool_start_begins_at_once_when_a_job_asks(monkeypatch):
    # ui.workers: the app puts the pool's start off for 10 s after the first page; a job cuts it short
    import ui.workers as uw

    calls = []
    monkeypatch.setenv(uw.WORKERS_ENV, "2")
    monkeypatch.delenv(uw.SCHEDULER_ENV, raising=False)
    monkeypatch.setattr(uw, "start_pool", lambda *a, **k: calls.append(time.monotonic()) or _FakePool())
    monkeypatch.setattr(uw, "_wanted", threading.Event())
    uw.shutdown()
    try:
        t0 = time.monotonic()
        uw.ensure_started(delay=60.0)
        time.sleep(0.3)
        assert calls == []  # still waiting
        assert uw.pool(wait=10.0) is not None  # a job asks: it starts now
        assert calls and calls[0] - t0 < 5.0
    finally:
        uw.shutdown()


class _FakePool:
    def close(self):
        pass


def test_the_pools_key_is_made_in_a_private_folder_that_is_removed(monkeypatch):
    """Without `cryptography`, `openssl` makes the pool's TLS key in a 0700 folder, gone once read."""
    import shutil
    import stat
    import tempfile

    from distributed.security import Security

    from diversity_core import workers

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")

    def no_cryptography(cls, **kwargs):
        raise ImportError("cryptography")

    monkeypatch.setattr(Security, "temporary", classmethod(no_cryptography))
    folders = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        folder = real_mkdtemp(*args, **kwargs)
        folders.append((folder, stat.S_IMODE(os.stat(folder).st_mode)))
        return folder

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    cert, key = workers._credentials()
    assert "BEGIN CERTIFICATE" in cert and "PRIVATE KEY" in key
    [(folder, mode)] = folders
    assert mode == 0o700 and not os.path.exists(folder)


def test_the_pool_ends_when_the_process_that_started_it_is_killed():
    """The pool's process (and its workers) end with their parent, even when it is killed (SIGKILL)."""
    import subprocess
    import sys

    psutil = pytest.importorskip("psutil")
    code = ("import time; from diversity_core.workers import start_pool\n"
            "p = start_pool(workers=1, threads=1)\n"
            "print(p.cluster.pid, flush=True)\n"
            "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        cluster = psutil.Process(int(parent.stdout.readline()))
        tree = [cluster, *cluster.children(recursive=True)]
        assert len(tree) >= 2  # the pool's process and its worker
        parent.kill()
        parent.wait()

        def running(proc) -> bool:  # a zombie waiting to be reaped by whoever adopted it has ended
            try:
                return proc.status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return False

        deadline = time.monotonic() + 90  # a bound on a busy machine, polled
        while any(running(proc) for proc in tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [proc for proc in tree if running(proc)]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
