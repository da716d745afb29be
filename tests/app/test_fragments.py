"""Issue 22, item 5: O(n) controls redraw their fragment, never the page (``ui.fragments``).

Moving q on the Scores page reruns its q views only: the page's body (the view, the cached
spectra, the baselines) does not run, yet the headline, the reading, the profile and the
per-group table follow q and the URL carries it. The page's other O(n) controls (items per end,
sorting, colour, method, display options) are drawn inside an ``st.fragment``.

AppTest runs a widget's change as a full run, except when a callback names fragments
(``st.rerun(scope=keys)``, which the q slider does): then its tree holds what those fragments drew.
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

import diversity_core as dc
from diversity_core.data import load_demo
from diversity_core.featurizers import featurize
from ui import fragments

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def start(query: dict | None = None, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update(query or {})
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def page_runs(monkeypatch):
    """How often the page's body ran (each run prepares the view) and looked up each cached wrapper."""
    import ui.page
    from ui import compute

    calls = {"view": 0, "spectrum": 0, "group_spectra": 0, "baselines": 0}

    def counted(name, fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return inner

    monkeypatch.setattr(ui.page, "current_view", counted("view", ui.page.current_view))
    for name in ("spectrum", "group_spectra", "baselines"):
        monkeypatch.setattr(compute, name, counted(name, getattr(compute, name)))
    return calls


def headline(at: AppTest):
    from test_app import headline as scores_headline

    return scores_headline(at)


def test_moving_q_reruns_the_q_views_only(page_runs):
    ds = load_demo("shapes")
    X = featurize(ds)
    spec = dc.compute_spectrum(X, kernel="cosine")
    at = start({"demo": "shapes"})
    assert page_runs["view"] >= 1 and page_runs["spectrum"] >= 1 and page_runs["group_spectra"] == 1
    for q, label in ((2.0, "2"), (math.inf, "∞"), (0.5, "0.5")):
        before = dict(page_runs)
        t0 = time.perf_counter()
        at.sidebar.select_slider(key="q").set_value(q).run()
        elapsed = time.perf_counter() - t0
        assert not at.exception, [e.value for e in at.exception]
        assert page_runs == before, "moving q ran the page (or looked up a spectrum) again"
        assert headline(at).label == f"Vendi score (q = {label})"
        assert headline(at).value == f"{spec.vendi(q):.2f}"
        assert at.query_params["q"] == ("inf" if math.isinf(q) else f"{q:g}")
        reading = [m.value for m in at.markdown if m.value.startswith("**Reading:**")]
        assert reading and f"VS at q = {label}" in reading[0]
        assert any(f"q = {label}" in c.value for c in at.caption)  # the settings line under the title
        (table,) = [d.value for d in at.dataframe if "group" in d.value.columns]
        for group, value in zip(table["group"], table[f"VS (q = {label})"]):
            expected = dc.compute_spectrum(X[ds.group_indices(group)], kernel="cosine").vendi(q)
            assert value == pytest.approx(expected, rel=1e-9)
        assert elapsed < 5
        assert not at.sidebar.select_slider  # the tree holds what the q views drew, nothing else
        at.run()  # a full run (as a page change would) draws the whole page with the new q
        assert page_runs["view"] == before["view"] + 1
        assert headline(at).label == f"Vendi score (q = {label})"
        assert at.sidebar.select_slider(key="q").value == q


def test_moving_q_reruns_the_page_where_q_changes_a_computation(page_runs):
    """Curate keys its contributions by q: there, moving q reruns the page (nothing is stale)."""
    at = start({"demo": "digits", "n": "120", "seed": "1"}, page="app_pages/8_curate.py")
    runs = page_runs["view"]
    at.sidebar.select_slider(key="q").set_value(2.0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert page_runs["view"] == runs + 1
    assert any("VS (q = 2) of all items" in c.value for c in at.caption)


class _State(dict):
    """A session state for :func:`ui.fragments.q_changed` outside a script run."""

    __getattr__ = dict.__getitem__


class _Rerun(Exception):
    pass


@pytest.mark.parametrize("local, views, expected", [
    (False, ["settings_line", "scores_headline"], "app"),  # q read outside q views: the whole app
    (True, ["settings_line", "scores_headline"], ["settings_line", "scores_headline"]),
    (True, [], None),  # nothing on the page reads q: only the slider's own fragment reruns
])
def test_q_changed_picks_what_reruns(monkeypatch, local, views, expected):
    import ui.state

    written = []
    fake = type("St", (), {})()
    fake.session_state = _State({fragments.Q_LOCAL: local, fragments.Q_VIEWS: list(views), "q": 2.0})

    def rerun(scope="app"):
        raise _Rerun(scope)

    fake.rerun = rerun
    monkeypatch.setattr(fragments, "st", fake)
    monkeypatch.setattr(ui.state, "write_query_params", lambda: written.append(True))
    if expected is None:
        fragments.q_changed()
    else:
        with pytest.raises(_Rerun) as info:
            fragments.q_changed()
        assert info.value.args[0] == expected
    assert written == [True]  # the URL follows q before anything reruns


# ------------------------------------------------------------------------------------------
# the other O(n) controls live in fragments
# ------------------------------------------------------------------------------------------
WIDGETS = ("slider", "select_slider", "radio", "selectbox", "checkbox", "dataframe", "plotly_chart")


@pytest.fixture
def in_fragment(monkeypatch):
    """For each keyed widget or chart drawn: whether it was drawn inside an ``st.fragment``."""
    depth = [0]
    seen: dict = {}
    real_fragment = st.fragment

    def fragment(func=None, **kwargs):
        if func is None:
            return lambda f: fragment(f, **kwargs)

        @functools.wraps(func)
        def body(*args, **kw):
            depth[0] += 1
            try:
                return func(*args, **kw)
            finally:
                depth[0] -= 1

        return real_fragment(body, **kwargs)

    def spy(real):
        @functools.wraps(real)
        def record(*args, **kwargs):
            if kwargs.get("key") is not None:
                seen[str(kwargs["key"])] = depth[0] > 0
            return real(*args, **kwargs)

        return record

    monkeypatch.setattr(st, "fragment", fragment)
    for name in WIDGETS:  # columns and the sidebar call the class's methods, st.<name> its own bound one
        monkeypatch.setattr(DeltaGenerator, name, spy(getattr(DeltaGenerator, name)))
        monkeypatch.setattr(st, name, spy(getattr(st, name)))
    return seen


def test_o_n_controls_are_drawn_in_fragments(in_fragment):
    at = start({"demo": "digits", "n": "150", "seed": "1", "group": load_demo("digits").group_names()[:3],
                "mag_scales": "10"})
    assert in_fragment["q"] is True
    assert in_fragment["kernel"] is False and in_fragment["featurizer"] is False  # they change the view
    for page, keys in (("app_pages/3_spectrum.py", ("spectrum_k", "spectrum_m", "heatmap_sort", "heatmap")),
                       ("app_pages/6_projection.py", ("proj_method", "proj_colour")),
                       ("app_pages/8_curate.py", ("curate_m", "curate_method", "curate_curves")),
                       ("app_pages/4_magnitude.py", ("mag_pairs_kind", "mag_pairs_scaled"))):
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
        for key in keys:
            assert in_fragment.get(key) is True, (page, key, in_fragment.get(key))
    projection = [k for k in in_fragment if k.startswith("projection_PCA_")]
    assert projection and all(in_fragment[k] for k in projection)
    table = [k for k in in_fragment if k.startswith("curate_items_table_")]
    assert table and all(in_fragment[k] for k in table)
    assert in_fragment["curate_k"] is False  # k changes what is computed

