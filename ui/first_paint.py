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

The held run draws no sidebar widgets either (:func:`sidebar`). The frontend loads each widget's
code (slider, multiselect, number input, ...) on first use, and the main area's elements waited
for that wave: in a cold browser the headline's ``Metric`` code was requested only once the
sidebar's had arrived, 1.1 s after the run's messages (``docs/team.md``, "A cold start"). The
held run settles every setting from the session state as the sidebar would, through
:class:`Unseen`, and the rerun draws the sidebar with the charts.
"""

from __future__ import annotations

import os
from typing import Any

import streamlit as st
from streamlit.components.v2 import component

#: Environment variable: ``0`` draws every run in full.
FIRST_PAINT_ENV = "DIVERSITY_FIRST_PAINT"

_HELD = "first_paint_held"
_DRAWN = "first_paint_drawn"
_UNSEEN = "first_paint_unseen"  # this run hid its sidebar: it must end with the report's script

# Two animation frames after the mount: the run's elements are laid out and painted by then.
_JS = r"""
export default function (component) {
  const { setTriggerValue } = component;
  requestAnimationFrame(() => requestAnimationFrame(() => setTriggerValue("painted", true)));
}
"""

_COMPONENT = None


def pending() -> bool:
    """Whether the session has neither held a run nor drawn a page in full: its next Scores run holds."""
    if os.environ.get(FIRST_PAINT_ENV, "1") == "0":
        return False
    ss = st.session_state
    return not (ss.get(_HELD) or ss.get(_DRAWN))


def sidebar(holds: bool) -> Any:
    """Where this run's sidebar draws: ``st.sidebar``, or :class:`Unseen` in a held run.

    ``holds``: whether the page about to run stops after its headline when :func:`pending` (the
    Scores page); a page that never holds draws its sidebar on its first run as on any other.
    """
    ss = st.session_state
    if holds and pending():
        # the session holds once, from here: whatever stops this run asks for the rerun (stop())
        ss[_HELD] = ss[_UNSEEN] = True
        return Unseen()
    ss[_UNSEEN] = False
    return st.sidebar


def holding() -> bool:
    """Whether this run is a held first run (its sidebar unseen): the page stops after its headline."""
    return bool(st.session_state.get(_UNSEEN))


class Unseen:
    """``st.sidebar`` for a held run: each widget returns the value it would show, nothing is drawn.

    A widget with a key returns its session-state value (every sidebar widget has one, set by
    ``ui.state.init_state`` before the sidebar runs); one without returns its default. Its callback
    does not run (nothing was changed). Containers return another ``Unseen``; text is dropped.
    Only the calls the sidebar makes exist, so a new one fails in the tests instead of drawing.
    """

    def _value(self, kwargs: dict, default: Any) -> Any:
        key = kwargs.get("key")
        return st.session_state[key] if key is not None and key in st.session_state else default

    def radio(self, label, options, index=0, **kwargs):
        return self._value(kwargs, None if index is None else list(options)[index])

    selectbox = radio

    def multiselect(self, label, options, default=None, **kwargs):
        return self._value(kwargs, list(default or []))

    def checkbox(self, label, value=False, **kwargs):
        return self._value(kwargs, value)

    def text_input(self, label, value="", **kwargs):
        return self._value(kwargs, value)

    def number_input(self, label, min_value=None, max_value=None, value="min", **kwargs):
        return self._value(kwargs, min_value if value == "min" else value)

    def file_uploader(self, label, type=None, accept_multiple_files=False, **kwargs):  # noqa: A002 - st's name
        return [] if accept_multiple_files else None

    def button(self, label, **kwargs) -> bool:
        return False

    def expander(self, *args, **kwargs) -> Unseen:
        return Unseen()

    container = expander

    def columns(self, spec, **kwargs) -> list:
        return [Unseen() for _ in range(spec if isinstance(spec, int) else len(spec))]

    def _drop(self, *args, **kwargs) -> None:
        return None

    header = caption = markdown = html = info = warning = error = _drop


def hold(rest: str) -> None:
    """Stop this run after what it drew; the browser's report of the drawing reruns the page in full.

    ``rest`` names what the full run adds, for the caption shown meanwhile.
    """
    st.caption(f"Drawing the settings, {rest}…")
    _report_when_drawn()
    st.stop()


def stop() -> None:
    """``st.stop()``; a held run that stops before its headline (an error, a page beyond the dense
    limit) still asks for the rerun that draws its sidebar."""
    if holding():
        _report_when_drawn()
    st.stop()


def _report_when_drawn() -> None:
    """Mount the script that reports the drawn run (its trigger reruns the page)."""
    global _COMPONENT
    if _COMPONENT is None:
        _COMPONENT = component("diversity_first_paint", js=_JS)
    _COMPONENT(key="first_paint", on_painted_change=_reported)


def drawn() -> None:
    """Record that a full run of a page completed (``app.py``): this session holds no page after it."""
    st.session_state[_DRAWN] = True


def _reported() -> None:
    """The browser drew the held run: its rerun, now under way, draws the page in full."""
