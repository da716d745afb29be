"""The server's worker pool: heavy jobs run in worker processes, not in Streamlit's script threads.

One :class:`~diversity_core.workers.JobPool` per server process, started in the background
when the app first runs (the first page never waits for it), shared by every session:

- ``DIVERSITY_SCHEDULER=ADDRESS`` (``diversity app --scheduler ADDRESS``): the jobs go to that
  Dask cluster;
- otherwise ``DIVERSITY_WORKERS`` (``diversity app --workers N``): ``auto`` (the default) starts
  a LocalCluster of one worker process per core, each job's BLAS threads limited to its share;
  ``0`` runs jobs in the script thread, as a single-user tool would (the tests' default).

The local cluster speaks TLS with a key made for it (no other account of the machine can send it
code), has no dashboard, and ends with the server (:func:`diversity_core.workers.start_pool`).

:func:`run_job` is what :mod:`ui.tasks` calls: it submits ``fn(progress)``, feeds the page's
progress bar from the job's reports, and cancels the job when Streamlit stops the script (a
Cancel press, a rerun that changed the inputs, or the session ending).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import streamlit as st

from diversity_core.exceptions import DiversityInputError
from diversity_core.workers import JobPool, start_pool

from .serve import JOB_THREADS_ENV

#: The folder holding ``app.py`` and the ``ui`` package.
APP_DIR = Path(__file__).resolve().parents[1]
WORKERS_ENV = "DIVERSITY_WORKERS"
SCHEDULER_ENV = "DIVERSITY_SCHEDULER"
#: Niceness of the local worker processes: a page's own drawing (a q change, a first render) gets the
#: CPU before the jobs of other sessions, which use what is left.
JOB_NICENESS = 10
#: Seconds between two polls of a running job (each may draw the progress bar).
POLL_INTERVAL = 0.1
#: Seconds between two no-op draws while a job reports nothing: each is a point where Streamlit
#: can stop the script (Cancel, rerun, session end), which cancels the job.
HEARTBEAT_INTERVAL = 0.5
#: Seconds :func:`pool` waits by default for the pool to finish starting.
START_WAIT = 60.0



def _read_job_threads() -> Optional[int]:
    """:data:`JOB_THREADS_ENV`, removed from the environment: worker processes started later from
    this one size their own thread pools and must not read it."""
    raw = os.environ.pop(JOB_THREADS_ENV, "").strip()
    return max(1, int(raw)) if raw.isdigit() else None


#: BLAS threads of a job run in this process; None (not a server started by ``ui.serve``): left alone.
JOB_THREADS: Optional[int] = _read_job_threads()

_lock = threading.Lock()
_pool: Optional[JobPool] = None
_error: Optional[str] = None
_started: Optional[threading.Event] = None


def configured_workers() -> Optional[int]:
    """Worker processes asked for: None for "auto" (one per core), 0 for none (jobs in the script thread)."""
    raw = os.environ.get(WORKERS_ENV, "auto").strip().lower()
    if raw in ("", "auto"):
        return None
    if raw in ("0", "off", "no", "false"):
        return 0
    try:
        n = int(raw)
    except ValueError:
        raise DiversityInputError(f"{WORKERS_ENV}={raw!r}: use auto, 0 (no worker processes) or a number "
                                  "of workers.") from None
    if n < 0:
        raise DiversityInputError(f"{WORKERS_ENV}={raw!r}: the number of workers cannot be negative.")
    return n


def enabled() -> bool:
    """Whether heavy jobs go to worker processes."""
    return bool(os.environ.get(SCHEDULER_ENV)) or configured_workers() != 0


#: Set when a job asks for the pool: a start put off by ``ensure_started(delay=...)`` begins at once.
_wanted = threading.Event()


def _start(started: threading.Event, delay: float = 0.0) -> None:
    """Start the pool (in a background thread) after ``delay`` s or when a job asks for it; remember
    the error message when it fails."""
    global _pool, _error
    _wanted.wait(delay)
    try:
        address = os.environ.get(SCHEDULER_ENV) or None
        # the local workers import the jobs' functions from this app's folder (its ``ui`` package)
        # and run at a lower CPU priority than the server's drawing (JOB_NICENESS)
        pool = start_pool(address, workers=None if address else configured_workers(), pythonpath=[str(APP_DIR)],
                          nice=JOB_NICENESS)
    except Exception as exc:  # noqa: BLE001 - shown to every session that needs the pool
        error, pool = f"The worker processes could not start: {exc}", None
    else:
        error = None
    with _lock:
        if _started is started:  # not shut down meanwhile
            _pool, _error = pool, error
            pool = None
    if pool is not None:  # shut down while it started: nobody will use it
        pool.close()
    started.set()


def ensure_started(delay: float = 0.0) -> None:
    """Start the pool in the background once per server process (cheap after the first call).

    With ``delay``, the start waits that many seconds, or until a job asks for the pool
    (:func:`pool`): the workers' imports then do not share the cores with the browser drawing
    the first page.
    """
    global _started
    if not enabled():
        return
    if delay <= 0:
        _wanted.set()
    with _lock:
        if _started is not None:
            return
        _started = started = threading.Event()
    threading.Thread(target=_start, args=(started, delay), name="diversity-worker-pool", daemon=True).start()


def pool(wait: float = START_WAIT) -> Optional[JobPool]:
    """The running pool (waiting up to ``wait`` s for it to start); None when jobs run in the script thread
    (no workers asked for, or still starting after ``wait``).

    Raises
    ------
    DiversityInputError
        The pool could not start (an unreachable scheduler, for example).
    """
    if not enabled():
        return None
    ensure_started()
    started = _started
    if started is not None:
        started.wait(wait)
    if _error is not None:
        raise DiversityInputError(_error)
    return _pool


def status() -> str:
    """One line on where jobs run (for the sidebar's About box)."""
    if not enabled():
        return "Jobs run in the app's own process."
    if _error is not None:
        return _error
    if _pool is None:
        return "Worker processes are starting."
    return f"Jobs run on {_pool.workers()} worker process(es), {_pool.threads} thread(s) each, at {_pool.address}."


_threads_lock = threading.Lock()
_jobs_here = 0  # jobs running in this process's threads now


def _blas_threads(n: int) -> None:
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n, user_api="blas")  # kept: not a context, the new process-wide count


@contextlib.contextmanager
def job_threads():
    """Around a job run in this process: every core's BLAS thread while any such job runs.

    Only in a server started by ``ui.serve`` (:data:`JOB_THREADS` set), whose own threads use
    one BLAS thread; the count is process-wide, so it goes back to one when the last job ends
    (a count, not each job's saved value: two jobs ending in either order leave one thread).
    """
    threads = JOB_THREADS
    if threads is None:
        yield
        return
    global _jobs_here
    with _threads_lock:
        _jobs_here += 1
        if _jobs_here == 1:
            _blas_threads(threads)
    try:
        yield
    finally:
        with _threads_lock:
            _jobs_here -= 1
            if _jobs_here == 0:
                _blas_threads(1)


def run_job(fn: Callable, progress: Callable, label: str, on_data: Optional[Callable] = None) -> tuple:
    """``fn(progress)`` on a worker (or here when there are none): ``(value, warning messages)``.

    Progress reports arrive in ``progress``; their payloads (``progress(..., **data)``) in
    ``on_data(data)``. When Streamlit stops the script meanwhile (Cancel, a rerun, the session
    ending), the job is cancelled before the stop goes on.
    """
    # local workers still starting are not waited for: the job runs here (the first page of a
    # new server never waits for their start); a cluster asked for by name is always used
    p = pool(wait=START_WAIT if os.environ.get(SCHEDULER_ENV) else 0)
    if p is None:
        with job_threads():
            return fn(_local_progress(progress, on_data)), []
    job = p.submit(fn, label=label)
    heartbeat = st.empty()
    last_draw = time.monotonic()
    try:
        while True:
            reports = job.reports()
            for r in reports:
                progress(r.done, r.total, r.message)
                if r.data and on_data is not None:
                    on_data(r.data)
            if job.done():
                break
            if not reports and time.monotonic() - last_draw >= HEARTBEAT_INTERVAL:
                heartbeat.empty()  # a point where Streamlit may stop this script (and so the job)
                last_draw = time.monotonic()
            elif reports:
                last_draw = time.monotonic()
            time.sleep(POLL_INTERVAL)
        for r in job.reports():
            if r.data and on_data is not None:
                on_data(r.data)
        value = job.result()
    except BaseException:
        job.cancel()
        raise
    return value, job.warnings()


def _local_progress(progress: Callable, on_data: Optional[Callable]) -> Callable:
    """The ``progress(done, total, message, **data)`` a job gets when it runs in the script thread."""

    def report(done, total, message: str = "", **data) -> None:
        progress(done, total, message)
        if data and on_data is not None:
            on_data(data)

    return report


def shutdown() -> Any:
    """Close the pool (tests): running jobs are cancelled, a LocalCluster stops."""
    global _pool, _error, _started
    with _lock:
        p, _pool, _error, _started = _pool, None, None, None
    if p is not None:
        p.close()


# ------------------------------------------------------------------------------------------
# background jobs: they go on after the script run that started them
# ------------------------------------------------------------------------------------------
class BackgroundJob:
    """A job that outlives the script run that started it (reruns, other pages): polled, never awaited.

    It runs on a worker process when the server has them, else in a thread of this process.
    :meth:`progress` gives its latest report, :meth:`done` whether it finished and
    :meth:`outcome` its ``(value, warning messages)`` (or raises its error); only
    :meth:`cancel` stops it. :func:`start_background` starts one.
    """

    def __init__(self, label: str, job=None):
        self.label = label
        self.started = time.monotonic()
        self._job = job  # a diversity_core.workers.Job, or None for a thread of this process
        self._lock = threading.Lock()
        self._reports: list = []  # the thread's reports not read yet
        self._last = None  # the latest report: (done, total, message)
        self._first: Optional[tuple] = None  # (time, done) of the stage's first report: the throughput's origin
        self._stage = ""
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None

    # the thread of this process -------------------------------------------------------
    def _report(self, done, total, message: str = "", **data) -> None:
        if self._cancel.is_set():
            from diversity_core.workers import JobCancelledError

            raise JobCancelledError("cancelled")
        with self._lock:
            self._reports.append((float(done), float(total), str(message)))

    def _run(self, fn: Callable) -> None:
        try:
            with job_threads():
                self._value = fn(self._report)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the outcome
            self._error = exc
        finally:
            self._finished.set()

    # what the page reads -----------------------------------------------------------
    def progress(self) -> Optional[tuple]:
        """The latest report ``(done, total, message)`` (None before the first)."""
        if self._job is not None:
            new = [(r.done, r.total, r.message) for r in self._job.reports()]
        else:
            with self._lock:
                new, self._reports = self._reports, []
        for report in new:
            # the throughput is measured within one stage of the job (UMAP: its import, its neighbour
            # graph, then its epochs): a new stage, named by its message's words, starts it again
            stage = _stage(report[2])
            if self._first is None or stage != self._stage:
                self._first, self._stage = (time.monotonic(), report[0]), stage
            self._last = report
        return self._last

    def time_left(self) -> Optional[float]:
        """Seconds left at the throughput measured since the first report (None until measurable)."""
        last, first = self._last, self._first
        if last is None or first is None:
            return None
        done, total, _ = last
        t0, done0 = first
        now = time.monotonic()
        if now - t0 < 2.0 or done <= done0 or total <= 0 or done >= total:
            return None
        return (now - t0) / (done - done0) * (total - done)

    def done(self) -> bool:
        """Whether the job has finished (a value, an error or a cancellation)."""
        return self._job.done() if self._job is not None else self._finished.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def outcome(self) -> tuple:
        """``(value, warning messages)`` of a finished job; raises the job's own error."""
        if self._job is not None:
            value = self._job.result()
            return value, self._job.warnings()
        self._finished.wait()
        if self._error is not None:
            raise self._error
        return self._value, []

    def cancel(self) -> None:
        """Stop the job (at its next progress report); nothing is kept."""
        self._cancel.set()
        if self._job is not None:
            self._job.cancel()


def _stage(message: str) -> str:
    """The stage a progress message names: its words before any colon, numbers left out."""
    import re

    return re.sub(r"[\d,.]+", "#", str(message).split(":")[0]).strip()


def start_background(fn: Callable, label: str) -> BackgroundJob:
    """Start ``fn(progress)`` as a :class:`BackgroundJob` and return at once.

    On a worker process when the server has them (a cluster named by address is waited for;
    local workers still starting are not, as in :func:`run_job`), else in a daemon thread of
    this process.
    """
    p = pool(wait=START_WAIT if os.environ.get(SCHEDULER_ENV) else 0)
    if p is not None:
        return BackgroundJob(label, p.submit(fn, label=label))
    job = BackgroundJob(label)
    threading.Thread(target=job._run, args=(fn,), name=f"diversity-background-{label}", daemon=True).start()
    return job
