"""Parts of a page that redraw without the page: ``st.fragment`` for the O(n) controls.

The order q, the items per end of a gallery, a sort, a colour, a display option change what is
drawn, never what is computed. Drawn inside an ``st.fragment``, such a control reruns only its
fragment: nothing else of the page runs, so nothing is computed or looked up again.

The order q lives in the shared sidebar (and in the URL), far from what it changes. Its slider
sits in a fragment of its own, and the output that reads q is drawn in **q views**: fragments
with a key (:func:`q_view`), which read q from the session state (:func:`current_q`) each time
they run. A page whose every use of q is a q view says so (:func:`q_local`); moving q then reruns
that page's q views only (``st.rerun(scope=keys)`` from the slider's callback,
:func:`q_changed`). On any other page it reruns the whole app, as every sidebar setting does.
"""

from __future__ import annotations

import functools
from typing import Callable

import streamlit as st
from streamlit.errors import StreamlitAPIException

from diversity_core import format_q

from . import runlog

#: Session-state keys: the q views drawn on the current page's last full run, and whether that
#: page reads q in q views only.
Q_VIEWS = "_q_views"
Q_LOCAL = "_q_local"


def begin_page() -> None:
    """Forget the previous page's q views (``app.py``, on every full run, before the page)."""
    st.session_state[Q_VIEWS] = []
    st.session_state[Q_LOCAL] = False


def current_q() -> float:
    """The order q now (a q view's own rerun sees the slider's new value)."""
    return float(st.session_state["q"])


def current_q_label() -> str:
    """The order q now, as the app writes it (``∞`` for infinity)."""
    return format_q(current_q())


def q_view(key: str) -> Callable:
    """Decorator: a fragment named ``key`` that moving q reruns, on a page that calls :func:`q_local`.

    The function must read q through :func:`current_q` (never a snapshot of the settings) and
    draw from values computed outside it: its rerun costs what it draws.
    """

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def body(*args, **kwargs):
            views = st.session_state.setdefault(Q_VIEWS, [])
            if key not in views:
                views.append(key)
            with runlog.timed(f"fragment:{key}", q=str(current_q())):
                return func(*args, **kwargs)

        return st.fragment(body, key=key)

    return decorate


def q_local() -> None:
    """Declare that this page reads q only in q views: moving q reruns them and nothing else."""
    st.session_state[Q_LOCAL] = True


def q_changed() -> None:
    """The q slider's callback: mirror q in the URL, then rerun the q views (or the app).

    The URL is written here because ``app.py`` does not run on a fragment's rerun. On a page
    that declared itself q-local with no q view (nothing on it reads q) only the slider's own
    fragment reruns.
    """
    from .state import write_query_params

    write_query_params()
    ss = st.session_state
    if not ss.get(Q_LOCAL):
        st.rerun()
    keys = list(dict.fromkeys(ss.get(Q_VIEWS) or ()))
    if keys:
        try:
            st.rerun(scope=keys)
        except StreamlitAPIException:  # a view the last run did not draw: the whole page redraws
            st.rerun()
