"""Issue 27 item 6: a task's progress bar says what it does and the time left from measured
throughput (the bar's placement, open above the task's box, is checked in the browser:
tests/e2e/test_keyboard_browser.py::test_rnd_default_view_on_digits)."""

from __future__ import annotations

from ui.feedback import ProgressBar


def test_time_left_comes_from_the_throughput_after_the_first_report():
    bar = ProgressBar("Training")
    assert bar._eta(50, 200, 100.0) == ""  # the first report: imports and loading before it do not count
    assert bar._eta(60, 200, 101.0) == ""  # under 2 s of measured work: no guess
    # 50 -> 150 items in 4 s: 0.04 s an item, 50 left: 2 s, "a few seconds"
    assert bar._eta(150, 200, 104.0) == " · 4 s so far, a few seconds left"
    # 250 s of work for 100 items: 2.5 s an item, 50 left: 125 s
    slow = ProgressBar("Training")
    slow._eta(0, 150, 0.0)
    assert slow._eta(100, 150, 250.0) == " · 4.2 min so far, about 2.5 min left"
    # no progress yet after the first report: the time so far only
    stuck = ProgressBar("Waiting")
    stuck._eta(0, 1, 0.0)
    assert stuck._eta(0, 1, 5.0) == " · 5 s so far"
