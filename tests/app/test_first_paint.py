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
    from test_app import headline

    return headline(at).value


def _sidebar_widgets(at: AppTest) -> list:
    return [w for kind in ("selectbox", "radio", "multiselect", "select_slider", "checkbox", "button")
            for w in at.sidebar.get(kind)]


def test_first_run_stops_after_the_headline_and_the_next_draws_everything(first_paint):
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.query_params["q"] = "2"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    value = _headline(at)
    from test_app import headline

    assert "q = 2" in headline(at).label  # the link's q
    assert any("Drawing the settings, the q profile" in c.value for c in at.caption)
    assert not _charts(at) and not at.dataframe                     # nothing whose code loads on first use
    assert not _sidebar_widgets(at)                                 # nor a widget's
    assert at.session_state["first_paint_held"]
    settled = {k: at.session_state[k] for k in ("demo", "featurizer", "kernel", "q", "group_select")}
    at.run()                                                        # the browser's report: a rerun
    assert not at.exception, [e.value for e in at.exception]
    assert _headline(at) == value
    assert _charts(at) and not any("Drawing the settings" in c.value for c in at.caption)
    # the sidebar drawn with the settings the held run settled
    assert {k: at.session_state[k] for k in settled} == settled
    assert at.sidebar.selectbox(key="demo").value == "digits" and at.sidebar.select_slider(key="q").value == 2.0
    assert at.sidebar.selectbox(key="kernel").value == settled["kernel"]
    at.run()                                                        # and every later run draws in full
    assert _charts(at) and _sidebar_widgets(at)


def test_a_held_run_that_stops_early_still_asks_for_its_sidebar(first_paint, monkeypatch):
    """A first Scores run that stops before its headline (here: an error) mounts the report all the same."""
    from ui import compute

    def broken(*args, **kwargs):
        raise RuntimeError("no features today")

    monkeypatch.setattr(compute, "features", broken)
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.run()
    assert any("no features today" in e.value for e in at.error)
    assert not _sidebar_widgets(at)
    assert any(c.key == "first_paint" for c in at.get("bidi_component"))  # the script that reports the drawing
    monkeypatch.undo()
    at.run()                                                        # the report's rerun
    assert _sidebar_widgets(at) and _charts(at)


def test_a_session_that_drew_a_page_in_full_never_holds(first_paint):
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.switch_page("app_pages/1_dataset.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["first_paint_drawn"]
    at.switch_page("app_pages/2_scores.py").run()
    assert _charts(at) and not any("Drawing the settings" in c.value for c in at.caption)


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv(FIRST_PAINT_ENV, "0")
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.run()
    assert _charts(at)


def test_the_run_log_has_the_held_run_and_the_full_one(first_paint, monkeypatch, tmp_path):
    """``DIVERSITY_RUN_LOG`` (the benchmarks' server timing) logs the held run too, though it ends in st.stop()."""
    import json

    from ui.runlog import RUN_LOG_ENV

    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUN_LOG_ENV, str(log))
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["demo"] = "digits"
    at.run()
    at.run()
    pages = [r for r in map(json.loads, log.read_text().splitlines()) if r["what"] == "page"]
    assert [r.get("held") for r in pages] == [True, False]
    assert len({r["session"] for r in pages}) == 1 and all(r["end"] >= r["start"] for r in pages)
