"""Server-side timing of script runs, for the multi-session benchmark (benchmarks/bench_sessions.py).

With ``DIVERSITY_RUN_LOG=FILE`` set in the server's environment, every script run (the whole
page) and every fragment run appends one JSON line to FILE when it ends::

    {"session": "...", "what": "page" | "fragment:<name>", "page": "...", "start": t0, "end": t1,
     "cpu": seconds of this thread's CPU time, "q": the order q the run drew}

``start``/``end`` are ``time.time()`` seconds; the session is a random id kept in the session's
state. Unset (the default), :func:`timed` costs one environment lookup.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator, Optional

import streamlit as st

RUN_LOG_ENV = "DIVERSITY_RUN_LOG"
_SESSION_KEY = "_run_log_session"
_lock = threading.Lock()


def start() -> Optional[tuple]:
    """Mark the start of a run (None when ``DIVERSITY_RUN_LOG`` is unset): pass it to :func:`end`.

    The session's id is read here: once a run has called ``st.stop()``, every read of the session
    state raises, and :func:`end` runs after it (a held first run, ``ui.first_paint``).
    """
    if not os.environ.get(RUN_LOG_ENV):
        return None
    return time.time(), time.thread_time(), st.session_state.setdefault(_SESSION_KEY, uuid.uuid4().hex[:12])


def end(mark: Optional[tuple], what: str, page: str = "", **detail) -> None:
    """Append the run that began at ``mark`` (``what``: ``"page"`` or ``"fragment:NAME"``) to the log.

    ``detail`` (JSON values, e.g. the order q the run drew) is written with it.
    """
    path = os.environ.get(RUN_LOG_ENV)
    if mark is None or not path:
        return
    line = json.dumps({"session": mark[2], "what": what, "page": page, "start": mark[0], "end": time.time(),
                       "cpu": time.thread_time() - mark[1], **detail})
    with _lock, open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


@contextmanager
def timed(what: str, page: str = "", **detail) -> Iterator[None]:
    """Log the run of the block (a fragment's body) when ``DIVERSITY_RUN_LOG`` is set; runs that stop early are not logged."""
    mark = start()
    yield
    end(mark, what, page, **detail)
