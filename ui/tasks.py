"""Long tasks (magnitude, RND, UMAP, kernel sweeps, comparisons): one pattern for every page.

1. The page draws its settings, makes the task's **key** from its inputs (the view's key, the
   featurizer, the settings) and asks :func:`stored` for a finished result.
2. When there is none, the task starts by itself (small inputs), from :func:`start_button`, or
   from a form's submit button.
3. :func:`run` computes ``fn(progress)`` under ``st.status``, with a progress bar (open above
   the box, with what the core is doing and the time left) fed by the core's
   ``progress(done, total, message)`` callback, collects the core's warnings, and keeps
   the :class:`Outcome` under its key **before** anything else is drawn, so a finished task is
   never lost to a later drawing error or a rerun.
4. The page shows the outcome (now, and on every later run with the same inputs).

Every running task shows a **Cancel** button: pressing it makes Streamlit stop the script at
its next progress report and rerun it; that rerun says the task was cancelled, keeps nothing,
and a task that would start by itself waits for a click instead (:func:`cancelled`). On a
failure the progress bar and the status box go before the error is shown. When the failure is
a worker process that died (killed, out of memory), a **Try again** button comes with the error
at once (:func:`try_again`): pressing it starts the same task again, as its start button would.

Outcomes live in thread-safe stores shared by all sessions, one per kind of task, each bounded
in bytes (the ``"tasks"`` share of the memory budget, :mod:`ui.cache`) and in entries: their
keys name content, not sessions, so a result computed once is shown to every session that asks
for the same inputs. When a second session starts a task another session is computing, it
waits for that outcome (its status box says so) instead of computing it again; if the first
one fails or is cancelled, the waiting session computes it itself.

**Background tasks** (UMAP of 100,000 items: minutes) do not hold the page: :func:`start_background`
starts the job and returns at once, the page goes on (showing what it has meanwhile), and
:func:`follow` draws its progress and a Cancel button in a fragment that redraws itself every
:data:`FOLLOW_INTERVAL` seconds. The job belongs to the session, not to a script run: reruns, clicks
and other pages leave it running; only its Cancel button, a new start of the same kind, or the
session ending (its state dropped) stop it. When it finishes, its outcome is kept like
:func:`run`'s (:func:`finished` finds it) and the page reruns to show it.

Both kinds run through the app's one job runner, :class:`ui.workers.BackgroundJob` (on a worker
process when the server has them), and say the time left with its one estimator
(:class:`ui.feedback.PhaseClock`); the refinement of :mod:`ui.scalable` runs through it too.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional

import streamlit as st

from diversity_core import DiversityWarning, format_duration
from diversity_core.workers import JobCancelledError, WorkerLostError

from . import workers
from .cache import POOL_SHARES, SharedCache
from .feedback import ProgressBar, error_message, literal, plain, show_error, time_left_text

#: Outcomes kept per kind of task (least recently used dropped first).
MAX_ENTRIES = 16


@dataclass(frozen=True)
class Outcome:
    """A finished task: its ``value`` and the core's warnings raised meanwhile (``notes``, once each)."""

    value: Any
    notes: tuple = ()


class Store:
    """A thread-safe least-recently-used mapping bounded in bytes and entries (one per kind of task).

    Its byte limit is the ``"tasks"`` share of the memory budget (:data:`ui.cache.POOL_SHARES`);
    an outcome larger than that is shown but not kept. Arrays of kept outcomes are read-only.
    """

    def __init__(self, max_entries: int, name: str = "tasks"):
        self._data = SharedCache(name, POOL_SHARES["tasks"], max_entries=int(max_entries))

    def get(self, key: Hashable) -> Any:
        """The value under ``key`` (None when absent), marked as most recently used."""
        return self._data.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used entries beyond the limits."""
        self._data.put(key, value)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def info(self) -> dict:
        """``entries``, ``bytes`` held and ``limit_bytes``."""
        return self._data.info()

    def values(self) -> list:
        """The kept values (a snapshot)."""
        return self._data.values()

    def clear(self) -> None:
        """Forget every kept value."""
        self._data.clear()


_stores_lock = threading.Lock()
_stores: dict = {}
#: Tasks being computed, by (kind, key): set when their outcome is stored (or they stopped).
_running: dict = {}


def store(kind: str, max_entries: int = MAX_ENTRIES) -> Store:
    """The process-wide store of the task ``kind`` (``"magnitude"``, ``"rnd"``, ``"umap"``, ...)."""
    with _stores_lock:
        if (kind, max_entries) not in _stores:
            _stores[kind, max_entries] = Store(max_entries, name=f"tasks:{kind}")
        return _stores[kind, max_entries]


def clear_stores() -> None:
    """Forget the outcomes of every kind of task (tests; a server restart does the same)."""
    with _stores_lock:
        stores = list(_stores.values())
    for s in stores:
        s.clear()


#: Session-state key of the keys of cancelled tasks (kind -> key).
_CANCELLED = "_tasks_cancelled"
#: Session-state key of the task running in this session (kind, key), while it runs.
_RUNNING = "_tasks_running"
#: Session-state key of the start button pressed in this script run (its key), read by the task it starts.
_PRESSED = "_tasks_pressed"
#: Session-state key of the start button a **Try again** press stands for, on the run that follows it.
_RETRY = "_tasks_retry"
#: Session-state key of the start buttons of the session's background tasks (kind -> button key).
_STARTED_BY = "_tasks_started_by"


def _cancel_key(kind: str) -> str:
    return f"cancel_{kind}"


def stored(kind: str, key: Hashable, *, max_entries: int = MAX_ENTRIES) -> Optional[Outcome]:
    """The finished outcome of ``kind`` for ``key`` (None when not computed yet, or evicted).

    On the run that follows a press of the task's **Cancel** button, says so once.
    """
    ss = st.session_state
    running = ss.get(_RUNNING)
    if running is not None and running[0] == kind and ss.get(_cancel_key(kind)):
        ss.setdefault(_CANCELLED, {})[kind] = running[1]
        ss[_RUNNING] = None
        st.warning("Cancelled: nothing was kept. Start it again when you are ready.")
    return store(kind, max_entries).get(key)


def cancelled(kind: str, key: Hashable) -> bool:
    """Whether the task ``kind`` with ``key`` was cancelled in this session (it then waits for a click)."""
    return st.session_state.get(_CANCELLED, {}).get(kind) == key


def start_button(label: str, *, key: str, hint: str = "", primary: bool = True) -> bool:
    """Draw ``hint`` (an info box) and a button; True on the run where it is pressed.

    Both sit in one placeholder that is cleared when the button is pressed, so the task's
    status and then its result take their place.
    """
    slot = st.empty()
    with slot.container():
        if hint:
            st.info(hint)
        pressed = st.button(label, type="primary" if primary else "secondary", key=key)
    ss = st.session_state
    if ss.get(_RETRY) == key:  # the run after a Try again press standing for this button (try_again)
        ss.pop(_RETRY, None)
        pressed = True
    if pressed:
        slot.empty()
        ss[_PRESSED] = key
    return pressed


def try_again(kind: str, start_key: Optional[str]) -> None:
    """A **Try again** button under the error of a task whose worker process died.

    Pressing it reruns the page and starts the task again: through its start button ``start_key``
    (as if pressed), or by itself for a task that starts without a click (``start_key`` None).
    """
    st.button("Try again", key=f"retry_{kind}", icon=":material/refresh:", on_click=_retry, args=(start_key,),
              help="The worker process that died has been replaced: run the same computation again.")


def _retry(start_key: Optional[str]) -> None:
    """A **Try again** press, before the rerun it causes: that rerun presses the start button ``start_key``."""
    if start_key is not None:
        st.session_state[_RETRY] = start_key


class _LostWorker(str):
    """The error message of a background task whose worker died, with the start button to press again."""

    start_key: Optional[str] = None


def _claim(kind: str, key: Hashable) -> Optional[threading.Event]:
    """None when this thread now computes (kind, key); else the event of the thread computing it."""
    with _stores_lock:
        event = _running.get((kind, key))
        if event is None:
            _running[kind, key] = threading.Event()
        return event


def _release(kind: str, key: Hashable) -> None:
    """Wake the sessions waiting for (kind, key): its outcome is stored, or it stopped."""
    with _stores_lock:
        event = _running.pop((kind, key), None)
    if event is not None:
        event.set()


def _wait_or_claim(kind: str, key: Hashable, max_entries: int, bar: ProgressBar) -> Optional[Outcome]:
    """The outcome another session is computing for the same inputs, once stored; None when this
    session is to compute it (nobody else is, or the other one failed or was cancelled)."""
    while True:
        event = _claim(kind, key)
        if event is None:
            return None
        # every report draws, which lets a rerun or a Cancel press stop this session's wait
        while not event.wait(0.25):
            bar(0, 1, "another session is computing the same; waiting for its result")
        outcome = store(kind, max_entries).get(key)
        if outcome is not None:
            return outcome


def run(
    kind: str,
    key: Hashable,
    fn: Callable[[Callable], Any],
    label: str,
    *,
    max_entries: int = MAX_ENTRIES,
    expanded: bool = False,
    on_data: Optional[Callable[[dict], None]] = None,
) -> Optional[Outcome]:
    """Compute ``fn(progress)`` under ``st.status``; keep and return its :class:`Outcome`.

    ``fn`` runs on a worker process when the server has them (:mod:`ui.workers`), so it must not
    draw: it reports through ``progress(done, total, message, **data)``, and ``on_data(data)``
    draws the payloads here, inside the status box (e.g. a live chart; ``expanded=True`` opens
    it). An error is shown as ``st.error`` (the core's message, no traceback) and gives None;
    nothing is stored then. Warnings of the core (:class:`~diversity_core.DiversityWarning`) become the
    outcome's ``notes``. When another session is computing the same task (same ``kind`` and
    ``key``), this one waits for its outcome instead of computing it again.
    """
    ss = st.session_state
    start_key = ss.pop(_PRESSED, None)  # the start button pressed for this task (None: it started by itself)
    lost = False  # the failure is a worker process that died: offer to try again at once
    ss.setdefault(_CANCELLED, {}).pop(kind, None)
    ss[_RUNNING] = (kind, key)
    box = st.empty()
    with box.container():
        cancel_slot = st.empty()
        cancel_slot.button("Cancel", key=_cancel_key(kind), icon=":material/cancel:",
                           help="Stop this computation (at its next progress step); nothing is kept.")
        # the bar stays open above the status box, whether or not the box is (issue 27, item 6)
        bar = ProgressBar(label)
        status = st.status(label, expanded=expanded)
    with status:
        shared = _wait_or_claim(kind, key, max_entries, bar)
        if shared is None:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        # on a worker process when the server has them (ui.workers), else here
                        value, remote_notes = workers.run_job(fn, bar, label, on_data)
                    except Exception as exc:  # noqa: BLE001 - every failure reaches the user as a message
                        failure = error_message(label, exc)
                        lost = isinstance(exc, WorkerLostError)
                        value = None
                    else:
                        failure = None
                if failure is None:
                    notes = tuple(dict.fromkeys([*remote_notes, *(str(w.message) for w in caught
                                                                  if issubclass(w.category, DiversityWarning))]))
                    shared = Outcome(value=value, notes=notes)
                    store(kind, max_entries).put(key, shared)
            finally:
                _release(kind, key)
        else:
            failure = None
        bar.empty()
        if failure is None:
            status.update(label=f"{label}: done", state="complete", expanded=False)
    ss[_RUNNING] = None
    cancel_slot.empty()
    if failure is not None:
        # the status box goes with its bar (a bar stuck at 99 % and its label above the error mislead)
        box.empty()
        show_error(failure)
        if lost:
            try_again(kind, start_key)
        return None
    return shared


def show_notes(outcome: Outcome) -> None:
    """The core's warnings during the task, one info box each."""
    for note in outcome.notes:
        st.info(literal(plain(note)))


# ------------------------------------------------------------------------------------------
# background tasks: kept by the session, followed from a fragment
# ------------------------------------------------------------------------------------------
#: Seconds between two looks at a running background task (its fragment's ``run_every``).
FOLLOW_INTERVAL = 1.0
#: Session-state key of the session's background tasks (:class:`_SessionJobs`).
_BACKGROUND = "_tasks_background"


class _SessionJobs:
    """The session's background tasks: kind -> ``(key, BackgroundJob | Outcome | failure message)``.

    Held in the session's state: when the session ends and its state is dropped, the jobs still
    running are cancelled (``weakref.finalize``; the finaliser holds the mapping, not this object).
    """

    def __init__(self):
        self.jobs: dict = {}
        weakref.finalize(self, _cancel_all, self.jobs)


def _cancel_all(jobs: dict) -> None:
    for _key, job in list(jobs.values()):
        if isinstance(job, workers.BackgroundJob) and not job.done():
            job.cancel()


def _session_jobs() -> dict:
    ss = st.session_state
    holder = ss.get(_BACKGROUND)
    if not isinstance(holder, _SessionJobs):
        holder = ss[_BACKGROUND] = _SessionJobs()
    return holder.jobs


def start_background(kind: str, key: Hashable, fn: Callable[[Callable], Any], label: str) -> bool:
    """Start ``fn(progress)`` as the session's background task of ``kind`` and return at once.

    A task of the same kind still running (other inputs) is cancelled first: one per kind and
    session. False (with the error shown) when the job could not start.
    """
    jobs = _session_jobs()
    st.session_state.setdefault(_STARTED_BY, {})[kind] = st.session_state.pop(_PRESSED, None)
    previous = jobs.pop(kind, None)
    if previous is not None and isinstance(previous[1], workers.BackgroundJob):
        previous[1].cancel()
    try:
        job = workers.start_background(fn, label)
    except Exception as exc:  # noqa: BLE001 - every failure reaches the user as a message
        show_error(error_message(label, exc))
        return False
    jobs[kind] = (key, job)
    return True


def background(kind: str) -> Optional[tuple]:
    """``(key, job)`` of the session's background task of ``kind`` still running (None when none)."""
    entry = _session_jobs().get(kind)
    if entry is None or not isinstance(entry[1], workers.BackgroundJob):
        return None
    return entry


def finished(kind: str, key: Hashable, *, max_entries: int = MAX_ENTRIES) -> Optional[Outcome]:
    """The outcome of ``kind`` for ``key``: from the shared store (:func:`stored`), or the one this
    session's background task left (kept here too, in case the store could not hold it)."""
    out = stored(kind, key, max_entries=max_entries)
    if out is not None:
        return out
    entry = _session_jobs().get(kind)
    if entry is not None and entry[0] == key and isinstance(entry[1], Outcome):
        return entry[1]
    return None


def follow(kind: str, label: str, *, max_entries: int = MAX_ENTRIES) -> None:
    """The session's background task of ``kind``: progress and Cancel while it runs, its error when it
    failed; when it finishes, keep its outcome and rerun the page (which then shows it).

    Drawn in a fragment that redraws itself every :data:`FOLLOW_INTERVAL` s: following a job
    costs one small redraw a second, never the page around it. Nothing is drawn (and nothing
    polls) when the session has no such task.
    """
    entry = _session_jobs().get(kind)
    if entry is None:
        return
    if isinstance(entry[1], str):  # it failed: said until the next start
        _show_failure(kind, entry[1])
    elif isinstance(entry[1], workers.BackgroundJob):
        _follow(kind, label, max_entries)


def _show_failure(kind: str, message: str) -> None:
    """A background task's error; with **Try again** when its worker died (the task's entry goes then)."""
    show_error(message)
    if isinstance(message, _LostWorker):
        if st.button("Try again", key=f"retry_background_{kind}", icon=":material/refresh:", on_click=_retry,
                     args=(message.start_key,),
                     help="The worker process that died has been replaced: run the same computation again."):
            # pressed in the fragment that follows the task: the whole page runs again, and starts it
            _session_jobs().pop(kind, None)
            st.rerun(scope="app")


def _background_text(label: str, job: workers.BackgroundJob, report: Optional[tuple]) -> str:
    message = report[2] if report is not None else "starting"
    text = f"{label} (in the background) — {message} · {format_duration(job.seconds())} so far"
    left = job.time_left()
    if left is not None and " left" not in message:
        text += f", {time_left_text(left)}"
    return text


@st.fragment(run_every=FOLLOW_INTERVAL)
def _follow(kind: str, label: str, max_entries: int) -> None:
    jobs = _session_jobs()
    entry = jobs.get(kind)
    if entry is None:
        return
    key, job = entry
    if isinstance(job, str):  # it failed: said until the next start
        _show_failure(kind, job)
        return
    if not isinstance(job, workers.BackgroundJob):  # finished: the page shows it
        return
    if job.done():
        try:
            value, notes = job.outcome()
        except JobCancelledError:
            jobs.pop(kind, None)
            return
        except Exception as exc:  # noqa: BLE001 - every failure reaches the user as a message
            message = error_message(label, exc)
            if isinstance(exc, WorkerLostError):
                message = _LostWorker(message)
                message.start_key = st.session_state.get(_STARTED_BY, {}).get(kind)
            jobs[kind] = (key, message)
            _show_failure(kind, message)
            return
        outcome = Outcome(value=value, notes=tuple(dict.fromkeys(notes)))
        store(kind, max_entries).put(key, outcome)
        jobs[kind] = (key, outcome)
        st.rerun()  # the page shows the outcome
    report = job.progress()
    frac = 0.0 if report is None or report[1] <= 0 else min(max(report[0] / report[1], 0.0), 1.0)
    st.progress(frac, text=_background_text(label, job, report))
    if st.button("Cancel", key=f"cancel_background_{kind}", icon=":material/cancel:",
                 help="Stop this computation; nothing is kept. Other clicks and pages leave it running."):
        job.cancel()
        jobs.pop(kind, None)
        st.rerun()
