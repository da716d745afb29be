"""Issue 39 item 10: the Scores headline component (``ui.live_q``) owns what it draws."""

from __future__ import annotations

import math

from ui import live_q


def test_the_script_and_styles_touch_no_streamlit_test_id():
    # the headline is the component's own markup: nothing of Streamlit's DOM is selected by test id
    assert "data-testid" not in live_q._JS and "data-testid" not in live_q._CSS
    assert "stMetric" not in live_q._JS and "stCaption" not in live_q._JS
    assert ".dx-headline" in live_q._CSS


def test_headline_data_holds_every_option_and_the_q_drawn():
    data = live_q.headline_data([0.0, 1.0, math.inf], lambda q: 10.0 / (1.0 + q if math.isfinite(q) else 5.0),
                                20, 1.3)
    # the q the server drew has its row even when it is not one of the slider's options
    assert data["current"] == "1.3" and set(data["texts"]) == {"0", "1", "∞", "1.3"}
    assert data["texts"]["1"] == ["5.00", "(25.0%)"]
    assert data["texts"]["∞"] == ["2.00", "(10.0%)"]
    assert data["prefix"] + data["current"] + ")" == "Vendi score (q = 1.3)"
    assert data["help"] == "Effective number of distinct items at order q = {q}, out of n = 20."
    assert data["caption"] == ["effective number of distinct items, out of ", "n = 20"]
