"""Issue 39, item 3: the Scores page's baselines are the core's ``baseline_scores``, the API's answer.

- GMStds on an image set with a constant pixel is the core's (0: one constant feature makes the
  geometric mean 0), the same figure as ``dc.baseline_scores``; the caption says why and gives
  the core's mean over the other features. It was the app's own non-constant mean.
- The baselines need no spectrum: past the dense limit (the digits demo under rbf with a 20 MB
  budget, as in test_scalable) IntDiv is shown, equal to the core's under that budget. It was
  withheld ("needs the exact spectrum").
"""

from __future__ import annotations

import numpy as np
import pytest
from test_app import _npy_bytes, assert_clean, metric, start

import diversity_core as dc
import ui.scalable as scalable
from diversity_core.data import load_demo
from diversity_core.featurizers import featurize
from ui import tasks

SCORES = "app_pages/2_scores.py"
BASELINES = {"intdiv": "IntDiv", "average_similarity": "Average similarity", "gmstds": "GMStds"}


def _digits_with_a_constant_pixel() -> np.ndarray:
    """The digits demo's pixels (a seeded 300-item subsample), one pixel black in every image."""
    X = featurize(load_demo("digits"))
    X = X[np.sort(np.random.default_rng(0).choice(X.shape[0], size=300, replace=False))].copy()
    X[:, 0] = 0.0
    return X


def test_gmstds_with_a_constant_pixel_is_the_cores():
    X = _digits_with_a_constant_pixel()
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("digits.npy", _npy_bytes(X)).run()
    at.sidebar.selectbox(key="kernel").set_value("rbf").run()
    at.switch_page(SCORES).run()
    assert_clean(at)
    core = dc.baseline_scores(X, kernel="rbf")
    assert core["gmstds"] == 0.0  # the core's definition: a constant feature makes it 0
    for key, label in BASELINES.items():
        assert metric(at, label).value == f"{core[key]:.4f}", label  # GMStds was the app's own (0.1551)
    nonconstant = dc.gmstds(X, skip_constant=True)
    assert any("1 constant feature of 64" in c.value and f"{nonconstant:.4f}" in c.value for c in at.caption)


@pytest.fixture
def _past_the_dense_limit(monkeypatch):
    """test_scalable's setting: a budget below the demo's dense path, small sketches, no job left."""
    monkeypatch.setenv("DIVERSITY_MEMORY_BUDGET", "20M")
    monkeypatch.setattr(scalable, "SKETCH_SIZE", 128)
    monkeypatch.setattr(scalable, "KS", (20, 50))
    tasks.clear_stores()
    yield
    for job in list(tasks.store(scalable.KIND).values()):
        if job is not None:
            job.cancel()
    tasks.clear_stores()


@pytest.mark.usefixtures("_past_the_dense_limit")
def test_intdiv_is_shown_past_the_dense_limit():
    at = start({"demo": "digits", "kernel": "rbf"})
    at.switch_page(SCORES).run()
    assert_clean(at)
    with dc.config_context(memory_budget="20M"):
        core = dc.baseline_scores(featurize(load_demo("digits")), kernel="rbf")
    assert metric(at, "IntDiv").value == f"{core['intdiv']:.4f}"  # was withheld
    assert metric(at, "Average similarity").value == f"{core['average_similarity']:.4f}"
    assert any("Per-group scores and the kernel sweep need the exact spectrum" in c.value for c in at.caption)
