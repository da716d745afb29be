"""Issue 22: figures built once per content for every session (``ui.shared_figures``)."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from diversity_core import default_q_grid
from diversity_core.report.figures import bar_figure, q_profile_figure
from ui import shared_figures
from ui.cache import clear_caches

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def counted(monkeypatch):
    """q_profile_figure, counting its builds."""
    calls = []

    @functools.wraps(q_profile_figure)
    def builder(*args, **kwargs):
        calls.append(kwargs.get("q"))
        return q_profile_figure(*args, **kwargs)

    clear_caches()
    yield builder, calls
    clear_caches()


def _profiles(seed=0):
    qs = default_q_grid()
    rng = np.random.default_rng(seed)
    return {"all selected items": (qs, np.sort(rng.uniform(1, 50, qs.size))[::-1]),
            "a & <b>": (qs.copy(), np.sort(rng.uniform(1, 20, qs.size))[::-1])}


def _same(a, b) -> bool:
    """Two figures hold the same plotly JSON."""
    return json.loads(pio.to_json(a, validate=False)) == json.loads(pio.to_json(b, validate=False))


def test_equal_inputs_build_once(counted):
    builder, calls = counted
    first = shared_figures.figure(builder, _profiles(), q=2.0, n=300)
    again = shared_figures.figure(builder, _profiles(), q=2.0, n=300)  # new arrays, same content
    assert calls == [2.0]
    # what it returns is what the builder builds, each caller its own figure
    direct = q_profile_figure(_profiles(), q=2.0, n=300)
    assert _same(first, direct) and _same(again, direct) and again is not first
    assert first.layout.template.layout.font.color == direct.layout.template.layout.font.color
    # changing one caller's figure changes neither the next caller's nor the kept one
    again.data[0].y[0] = -1.0
    again.layout.title.text = "changed"
    assert _same(shared_figures.figure(builder, _profiles(), q=2.0, n=300), direct)


@pytest.mark.parametrize("change", ["q", "n", "value", "label", "order", "dtype"])
def test_any_change_of_the_inputs_builds_another(counted, change):
    builder, calls = counted
    base = shared_figures.figure(builder, _profiles(), q=2.0, n=300)
    profiles, q, n = _profiles(), 2.0, 300
    if change == "q":
        q = math.inf
    elif change == "n":
        n = 301
    elif change == "value":
        profiles["a & <b>"][1][-1] += 1e-12
    elif change == "label":
        profiles = {"all selected items": profiles["all selected items"], "a & <c>": profiles["a & <b>"]}
    elif change == "order":
        profiles = dict(reversed(list(profiles.items())))  # the legend's order changes
    elif change == "dtype":
        profiles = {k: (qs, v.astype(np.float32)) for k, (qs, v) in profiles.items()}
    other = shared_figures.figure(builder, profiles, q=q, n=n)
    assert len(calls) == 2 and not _same(other, base)
    assert _same(other, q_profile_figure(profiles, q=q, n=n))


def test_q_profile_builds_the_curves_once_for_every_q(monkeypatch):
    import diversity_core.report.figures as F

    clear_caches()
    built = []
    real = F.q_profile_figure

    @functools.wraps(real)
    def counting(*args, **kwargs):
        built.append(kwargs.get("q"))
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "q_profile_figure", counting)
    for q in (1.0, 2.0, 0.0, math.inf, 0.5, 2.0):
        fig = shared_figures.q_profile(_profiles(), q=q, n=300)
        assert _same(fig, real(_profiles(), q=q, n=300)), q
    assert built == [None]  # the curves once, without q; every mark added to a copy
    fig.layout.shapes = ()  # a caller's change stays in its own figure
    assert _same(shared_figures.q_profile(_profiles(), q=2.0, n=300), real(_profiles(), q=2.0, n=300))
    clear_caches()


def test_series_are_keyed_by_name_and_values():
    clear_caches()
    labels, values = pd.Series(["x", "y"], name="group"), pd.Series([1.0, 2.0], name="VS")
    key = shared_figures.digest(labels, values, y_title="VS")
    assert shared_figures.digest(labels.copy(), values.copy(), y_title="VS") == key
    assert shared_figures.digest(labels, values.rename("other"), y_title="VS") != key
    assert shared_figures.digest(labels, values + 1, y_title="VS") != key
    assert shared_figures.digest(labels, values, y_title="VS ") != key
    assert _same(shared_figures.figure(bar_figure, labels, values, y_title="VS"),
                 bar_figure(labels, values, y_title="VS"))
    clear_caches()


def test_an_unknown_argument_type_is_refused():
    with pytest.raises(TypeError, match="cannot key"):
        shared_figures.digest(object())


def _chart_specs(at: AppTest) -> dict:
    return {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_two_sessions_at_the_same_q_draw_the_same_charts():
    clear_caches()
    sessions = []
    for _ in range(2):
        at = AppTest.from_file(APP, default_timeout=240)
        at.query_params.update({"demo": "shapes"})
        at.run()
        at.sidebar.select_slider(key="q").set_value(2.0).run()
        assert not at.exception, [e.value for e in at.exception]
        sessions.append(at)
    first, second = (_chart_specs(at) for at in sessions)
    assert first and first == second
    # the profile carries the chosen q (its dashed line's label)
    texts = [a.get("text") for spec in first.values() for a in spec["layout"].get("annotations", [])]
    assert "q = 2" in texts
    clear_caches()
