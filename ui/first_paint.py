"""A session's first page shows its headline in a run of its own; the charts and tables follow at once.

Streamlit's frontend loads the code of most elements (plotly's 4.7 MB, the data grid, ...) the
first time a run uses them, and draws none of a run's elements until it can draw all of them. On
this project's 2-core machine a cold Scores page showed its headline 5.3 s after navigation
although the server had sent it at 2.4 s: the rest went into loading and compiling the charts'
code (``docs/team.md``, "A cold start").

So a session's first full run of a page that asks (:func:`pending`) stops after its headline
(:func:`hold`), with a small ``st.components.v2`` script in place of the charts. Once the browser
has drawn that run, the script reports it and the report's rerun draws the page in full; the
charts' code then loads while the headline is on screen. A session holds at most once: the run
after a hold draws everything, whatever caused it, so a browser that never reports still gets
the whole page on its next interaction. ``DIVERSITY_FIRST_PAINT=0`` turns it off (the app tests
set it: ``AppTest`` has no browser to report).
"""

from __future__ import annotations

import os

import streamlit as st

#: Environment variable: ``0`` draws every run in full.
FIRST_PAINT_ENV = "DIVERSITY_FIRST_PAINT"

_HELD = "first_paint_held"
_DRAWN = "first_paint_drawn"

# Two animation frames after the mount: the run's elements are laid out and painted by then.
_JS = r"""
export default function (component) {
  const { setTriggerValue } = component;
  requestAnimationFrame(() => requestAnimationFrame(() => setTriggerValue("painted", true)));
}
"""

_COMPONENT = None


def pending() -> bool:
    """Whether this run is the session's first of a page and should stop after its headline."""
    if os.environ.get(FIRST_PAINT_ENV, "1") == "0":
        return False
    ss = st.session_state
    return not (ss.get(_HELD) or ss.get(_DRAWN))


def hold(rest: str) -> None:
    """Stop this run after what it drew; the browser's report of the drawing reruns the page in full.

    ``rest`` names what the full run adds, for the caption shown meanwhile.
    """
    global _COMPONENT
    st.session_state[_HELD] = True
    st.caption(f"Drawing {rest}…")
    if _COMPONENT is None:
        from streamlit.components.v2 import component

        _COMPONENT = component("diversity_first_paint", js=_JS)
    _COMPONENT(key="first_paint", on_painted_change=_reported)
    st.stop()


def drawn() -> None:
    """Record that a full run of a page completed (``app.py``): this session holds no page after it."""
    st.session_state[_DRAWN] = True


def _reported() -> None:
    """The browser drew the held run: its rerun, now under way, draws the page in full."""
