"""Issue 22, the cold start: a session's first Scores run shows the headline alone (``ui.first_paint``).

AppTest has no browser to report the drawing, so these tests run the report's rerun themselves
(the next ``at.run()``); the browser tests and ``benchmarks/bench_cold_start.py`` run the real one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.first_paint import FIRST_PAINT_ENV

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def first_paint(monkeypatch):
    monkeypatch.setenv(FIRST_PAINT_ENV, "1")


def _charts(at: AppTest) -> list:
    return list(at.get("plotly_chart"))


def _headline(at: AppTest) -> str:
    return next(m.value for m in at.metric if m.label.startswith("Vendi score (q ="))


def test_first_run_stops_after_the_headline_and_the_next_draws_everything(first_paint):
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    value = _headline(at)
    assert any("Drawing the q profile" in c.value for c in at.caption)
    assert not _charts(at) and not at.dataframe                     # nothing whose code loads on first use
    assert at.session_state["first_paint_held"]
    at.run()                                                        # the browser's report: a rerun
    assert not at.exception, [e.value for e in at.exception]
    assert _headline(at) == value
    assert _charts(at) and not any("Drawing the q profile" in c.value for c in at.caption)
    at.run()                                                        # and every later run draws in full
    assert _charts(at)


def test_a_session_that_drew_a_page_in_full_never_holds(first_paint):
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.switch_page("app_pages/1_dataset.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["first_paint_drawn"]
    at.switch_page("app_pages/2_scores.py").run()
    assert _charts(at) and not any("Drawing the q profile" in c.value for c in at.caption)


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(FIRST_PAINT_ENV, "0")
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.run()
    assert _charts(at)
