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

Every long job of the app is a :class:`BackgroundJob`, the one job runner: on a worker when the
server has them, else in this process. :func:`run_job` is what :func:`ui.tasks.run` calls: it
starts ``fn(progress)``, feeds the page's progress bar from the job's reports, and cancels the job
when Streamlit stops the script (a Cancel press, a rerun that changed the inputs, or the session
ending). :func:`start_background` starts one that outlives the script run (``ui.tasks``'
background tasks, ``ui.scalable``'s refinement), polled by the page.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

import streamlit as st

from diversity_core.exceptions import DiversityInputError
from diversity_core.workers import JobCancelledError, JobPool, Progress, start_pool

from .feedback import PhaseClock
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
    """``fn(progress)`` as a :class:`BackgroundJob` followed to its end: ``(value, warning messages)``.

    On a worker when the server has them; else here, in the script thread, as a single-user tool
    would (the reports are then drawn as they come). Progress reports arrive in ``progress``;
    their payloads (``progress(..., **data)``) in ``on_data(data)``. When Streamlit stops the
    script meanwhile (Cancel, a rerun, the session ending), the job is cancelled before the stop
    goes on.
    """
    # local workers still starting are not waited for: the job runs here (the first page of a
    # new server never waits for their start); a cluster asked for by name is always used
    p = pool(wait=START_WAIT if os.environ.get(SCHEDULER_ENV) else 0)
    job = BackgroundJob(label, None if p is None else p.submit(fn, label=label))

    def draw() -> bool:
        """Draw the reports that arrived; whether there were any."""
        new = job.reports()
        for r in new:
            progress(r.done, r.total, r.message)
            if r.data and on_data is not None:
                on_data(r.data)
        return bool(new)

    if p is None:
        job.run_here(fn, draw)
        return job.outcome()
    heartbeat = st.empty()
    last_draw = time.monotonic()
    try:
        while not job.done():
            if draw():
                last_draw = time.monotonic()
            elif time.monotonic() - last_draw >= HEARTBEAT_INTERVAL:
                heartbeat.empty()  # a point where Streamlit may stop this script (and so the job)
                last_draw = time.monotonic()
            time.sleep(POLL_INTERVAL)
        draw()
        return job.outcome()
    except BaseException:
        job.cancel()
        raise


def shutdown() -> Any:
    """Close the pool (tests): running jobs are cancelled, a LocalCluster stops."""
    global _pool, _error, _started
    with _lock:
        p, _pool, _error, _started = _pool, None, None, None
    if p is not None:
        p.close()


# ------------------------------------------------------------------------------------------
# the app's one job runner: every long job is a BackgroundJob
# ------------------------------------------------------------------------------------------
def _supersede(unread: list, data: dict) -> None:
    """Drop from the unread reports the payloads that ``data`` replaces (a refinement's bounds carry
    eigenvectors: an unwatched job keeps only the latest of each, as :meth:`BackgroundJob.data` does)."""
    for i, (arrived, r) in enumerate(unread):
        if r.data and not r.data.keys().isdisjoint(data):
            kept = {k: v for k, v in r.data.items() if k not in data}
            unread[i] = (arrived, replace(r, data=kept or None))


class BackgroundJob:
    """A job of the app: polled, never awaited; the one runner behind :mod:`ui.tasks` and :mod:`ui.scalable`.

    It runs on a worker process when the server has them (``job``, a
    :class:`diversity_core.workers.Job`), else in a thread of this process
    (:func:`start_background`), or in the calling thread itself (:meth:`run_here`: the
    foreground tasks of :func:`run_job` when there are no workers). The same reads serve all
    three:

    - :meth:`reports` the reports that arrived since the last read
      (:class:`~diversity_core.workers.Progress`, their ``data`` payloads kept), :meth:`progress`
      the latest ``(done, total, message)``, :meth:`data` the latest value of each payload's
      keyword (``progress(done, total, message, bounds=...)`` leaves ``data()["bounds"]``);
    - :meth:`time_left` from the app's one estimator (:class:`ui.feedback.PhaseClock`),
      :meth:`seconds` the time it has run;
    - :meth:`done`, :meth:`outcome` (``(value, warning messages)``, or its error raised),
      :meth:`error` (that error, or None) and :meth:`cancel` (the job stops at its next progress
      report; :attr:`cancelled` says it was asked to).

    Several sessions may read one job (a content-keyed store shares it): reads take a lock.
    """

    def __init__(self, label: str, job=None):
        self.label = label
        self.started = time.monotonic()
        self._job = job  # a diversity_core.workers.Job, or None for this process
        self._lock = threading.Lock()  # the reports not read yet (appended by the job's thread)
        self._read_lock = threading.RLock()  # one reader at a time
        self._reports: list = []  # (arrival time, Progress) not read yet
        self._last: Optional[Progress] = None
        self._data: dict = {}
        self._clock = PhaseClock()
        self._listener: Optional[Callable[[], Any]] = None
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._ended: Optional[float] = None
        self._settled = False
        self._value: Any = None
        self._notes: list = []
        self._error: Optional[BaseException] = None

    # the job in this process -----------------------------------------------------------
    def _report(self, done, total, message: str = "", **data) -> None:
        """The ``progress(done, total, message, **data)`` callback of a job run in this process."""
        if self._cancel.is_set():
            raise JobCancelledError("cancelled")
        with self._lock:
            if data:
                _supersede(self._reports, data)
            self._reports.append((time.monotonic(), Progress(float(done), float(total), str(message), data or None)))
        if self._listener is not None:
            self._listener()

    def _run(self, fn: Callable) -> None:
        try:
            with job_threads():
                self._value = fn(self._report)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the outcome
            self._error = exc
        finally:
            self._ended = time.monotonic()
            self._settled = True
            self._finished.set()

    def run_here(self, fn: Callable, listener: Optional[Callable[[], Any]] = None) -> None:
        """Run ``fn(progress)`` in the calling thread; ``listener()`` after each of its reports (it may
        read them with :meth:`reports`). Returns when the job ends (read :meth:`outcome`)."""
        self._listener = listener
        self._run(fn)

    # what the page reads ---------------------------------------------------------------
    def _fetch(self) -> None:
        """Move a worker's new reports to the unread ones (caller holds the read lock)."""
        if self._job is None:
            return
        try:
            new = self._job.reports()
        except Exception:  # noqa: BLE001 - the cluster went away: the outcome says why
            new = []
        now = time.monotonic()
        with self._lock:
            for r in new:
                if r.data:
                    _supersede(self._reports, r.data)
                self._reports.append((now, r))

    def reports(self) -> list:
        """The reports that arrived since the last call, oldest first (never blocks long)."""
        with self._read_lock:
            self._fetch()
            with self._lock:
                new, self._reports = self._reports, []
            for arrived, r in new:
                self._clock.report(r.done, r.total, r.message, arrived)
                self._last = r
                if r.data:
                    self._data.update(r.data)
            return [r for _, r in new]

    def progress(self) -> Optional[tuple]:
        """The latest report ``(done, total, message)`` (None before the first)."""
        self.reports()
        last = self._last
        return None if last is None else (last.done, last.total, last.message)

    def data(self) -> dict:
        """The latest value of each payload keyword the job has reported (``{}`` before any)."""
        with self._read_lock:
            self.reports()
            return dict(self._data)

    def time_left(self) -> Optional[float]:
        """Seconds left of the current phase at its measured throughput (None until measurable)."""
        last = self._last
        return None if last is None else self._clock.left(last.done, last.total, time.monotonic())

    def seconds(self) -> float:
        """Seconds since the job started, until it ended."""
        self._settle()
        end = self._ended if self._ended is not None else time.monotonic()
        return end - self.started

    def done(self) -> bool:
        """Whether the job has finished (a value, an error or a cancellation)."""
        return self._job.done() if self._job is not None else self._finished.is_set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def _settle(self) -> None:
        """Read a finished worker job's outcome once (each ``result()`` would fetch it again)."""
        if self._settled or self._job is None or not self._job.done():
            return
        with self._read_lock:
            if self._settled:
                return
            if self._cancel.is_set():
                self._error = JobCancelledError("cancelled")
            else:
                try:
                    self._value, self._notes = self._job.result(), self._job.warnings()
                except BaseException as exc:  # noqa: BLE001 - handed to whoever reads the outcome
                    self._error = exc
            self._ended, self._settled = time.monotonic(), True

    def outcome(self) -> tuple:
        """``(value, warning messages)`` of a finished job (waits for it); raises the job's own error
        (:class:`~diversity_core.workers.JobCancelledError` after :meth:`cancel`)."""
        if self._job is None:
            self._finished.wait()
        else:
            while not self._job.done():
                time.sleep(POLL_INTERVAL)
            self._settle()
        if self._error is not None:
            raise self._error
        return self._value, list(self._notes)

    def error(self) -> Optional[BaseException]:
        """The error a finished job raised (None while it runs, and when it succeeded)."""
        if not self.done():
            return None
        self._settle()
        return self._error

    def cancel(self) -> None:
        """Stop the job (at its next progress report); nothing is kept. A finished job keeps its outcome."""
        if self._job is not None and self._job.done():
            self._settle()  # finished before: its value stays
        self._cancel.set()
        if self._job is not None and not self._settled:
            self._job.cancel()


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
