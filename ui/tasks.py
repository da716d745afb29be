"""Long tasks (magnitude, RND, UMAP, kernel sweeps, comparisons): one pattern for every page.

1. The page draws its settings, makes the task's **key** from its inputs (the view's key, the
   featurizer, the settings) and asks :func:`stored` for a finished result.
2. When there is none, the task starts by itself (small inputs), from :func:`start_button`, or
   from a form's submit button.
3. :func:`run` computes ``fn(progress)`` inside ``st.status`` with a progress bar fed by the
   core's ``progress(done, total, message)`` callback, collects the core's warnings, and keeps
   the :class:`Outcome` under its key **before** anything else is drawn, so a finished task is
   never lost to a later drawing error or a rerun.
4. The page shows the outcome (now, and on every later run with the same inputs).

Every running task shows a **Cancel** button: pressing it makes Streamlit stop the script at
its next progress report and rerun it; that rerun says the task was cancelled, keeps nothing,
and a task that would start by itself waits for a click instead (:func:`cancelled`). On a
failure the progress bar and the status box go before the error is shown.

Outcomes live in bounded, thread-safe stores shared by all sessions (``st.cache_resource``):
their keys name content, not sessions, so a result computed once is shown to every session
that asks for the same inputs.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional

import streamlit as st
from cachetools import LRUCache

from diversity_core import DiversityWarning

from .feedback import ProgressBar, error_message, literal, plain, show_error

#: Outcomes kept per kind of task (least recently used dropped first).
MAX_ENTRIES = 16


@dataclass(frozen=True)
class Outcome:
    """A finished task: its ``value`` and the core's warnings raised meanwhile (``notes``, once each)."""

    value: Any
    notes: tuple = ()


class Store:
    """A bounded, thread-safe least-recently-used mapping (one per kind of task)."""

    def __init__(self, max_entries: int):
        self._data: LRUCache = LRUCache(maxsize=int(max_entries))
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value under ``key`` (None when absent), marked as most recently used."""
        with self._lock:
            return self._data.get(key)

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used entry when full."""
        with self._lock:
            self._data[key] = value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data


@st.cache_resource(show_spinner=False)
def store(kind: str, max_entries: int = MAX_ENTRIES) -> Store:
    """The process-wide store of the task ``kind`` (``"magnitude"``, ``"rnd"``, ``"umap"``, ...)."""
    return Store(max_entries)


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


def run(
    kind: str,
    key: Hashable,
    fn: Callable[[Callable], Any],
    label: str,
    *,
    max_entries: int = MAX_ENTRIES,
    expanded: bool = False,
) -> Optional[Outcome]:
    """Compute ``fn(progress)`` under ``st.status``; keep and return its :class:`Outcome`.

    ``fn`` may draw into the status box (e.g. a live chart; ``expanded=True`` opens it). An
    error is shown as ``st.error`` (the core's message, no traceback) and gives None; nothing
    is stored then. Warnings of the core (:class:`~diversity_core.DiversityWarning`) become the
    outcome's ``notes``.
    """
    ss = st.session_state
    ss.setdefault(_CANCELLED, {}).pop(kind, None)
    ss[_RUNNING] = (kind, key)
    box = st.empty()
    with box.container():
        cancel_slot = st.empty()
        cancel_slot.button("Cancel", key=_cancel_key(kind), icon=":material/cancel:",
                           help="Stop this computation (at its next progress step); nothing is kept.")
        status = st.status(label, expanded=expanded)
    with status:
        bar = ProgressBar(label)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = fn(bar)
            except Exception as exc:  # noqa: BLE001 - every failure reaches the user as a message
                failure = error_message(label, exc)
                value = None
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
    notes = tuple(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, DiversityWarning)))
    outcome = Outcome(value=value, notes=notes)
    store(kind, max_entries).put(key, outcome)
    return outcome


def show_notes(outcome: Outcome) -> None:
    """The core's warnings during the task, one info box each."""
    for note in outcome.notes:
        st.info(literal(plain(note)))
