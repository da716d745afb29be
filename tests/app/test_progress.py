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


def test_a_new_total_or_phase_restarts_the_measurement():
    """The robustness task: features first (740 images), then 4 comparisons; the images' throughput
    must not price the comparisons, nor a slow import before a phase's first report count."""
    bar = ProgressBar("Scoring")
    bar._eta(0, 740, 0.0, "efficientnet_lite0 features · loading EfficientNet-Lite0")
    assert bar._eta(740, 740, 40.0, "efficientnet_lite0 features · done in 40.0 s") == ""
    # a new total: the comparisons' first report is their origin; nothing measured yet, the time so far only
    assert bar._eta(0, 4, 41.0, "scoring the groups · pixels · cosine") == " · 41 s so far"
    # 30 s later the first comparison is done: 30 s a step, 3 left (not 41 s for 740 images and 1 step)
    assert bar._eta(1, 4, 71.0, "scoring the groups · pixels · rbf") == " · 71 s so far, about 1.5 min left"
    # a new stage with the same total also restarts: a 30 s import reported before it does not count
    umap = ProgressBar("Map")
    umap._eta(0, 100, 0.0, "importing umap-learn (the first import compiles for ~30 s)")
    assert umap._eta(10, 100, 30.0, "UMAP on 1000 items: the neighbour graph") == " · 30 s so far"
    assert umap._eta(10, 100, 33.0, "UMAP on 1000 items: the neighbour graph") == " · 33 s so far"  # no step yet
    assert umap._eta(20, 100, 34.0, "UMAP on 1000 items: the layout") == " · 34 s so far"  # another stage
    # 20 -> 30 in 4 s: 70 left at 0.4 s each, 28 s (said rounded)
    assert umap._eta(30, 100, 38.0, "UMAP on 1000 items: the layout") == " · 38 s so far, about 30 s left"


def test_numbers_in_a_message_stay_in_one_phase():
    from ui.feedback import phase_label

    assert phase_label("run 3/10, epoch 7/30") == phase_label("run 4/10, epoch 1/30")
    assert phase_label("scale 2 of 12 (t = 0.25)") == phase_label("scale 3 of 12 (t = 1e-3)")
    assert phase_label("pixels features · reading") == phase_label("pixels features · about 40 s left")
    assert phase_label("pixels features · reading") != phase_label("scoring the groups · pixels · cosine")
    bar = ProgressBar("Training")
    bar._eta(0, 300, 0.0, "epoch 0/30 of all 10 runs")
    assert bar._eta(100, 300, 4.0, "epoch 10/30 of all 10 runs") == " · 4 s so far, about 10 s left"  # 8 s
