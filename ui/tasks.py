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
failure the progress bar and the status box go before the error is shown.

Outcomes live in thread-safe stores shared by all sessions, one per kind of task, each bounded
in bytes (the ``"tasks"`` share of the memory budget, :mod:`ui.cache`) and in entries: their
keys name content, not sessions, so a result computed once is shown to every session that asks
for the same inputs. When a second session starts a task another session is computing, it
waits for that outcome (its status box says so) instead of computing it again; if the first
one fails or is cancelled, the waiting session computes it itself.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional

import streamlit as st

from diversity_core import DiversityWarning

from . import workers
from .cache import POOL_SHARES, SharedCache
from .feedback import ProgressBar, error_message, literal, plain, show_error

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
    if pressed:
        slot.empty()
    return pressed


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
        return None
    return shared


def show_notes(outcome: Outcome) -> None:
    """The core's warnings during the task, one info box each."""
    for note in outcome.notes:
        st.info(literal(plain(note)))
