"""The Streamlit app under ``AppTest``: every page on every demo, headline numbers against the
core, the q control, uploads and paths that fail, and the URL round trip."""

from __future__ import annotations

import functools
import io
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import diversity_core as dc
from diversity_core.data import list_demos, load_demo
from diversity_core.featurizers import default_kernel, featurize

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = [
    "app_pages/1_dataset.py",
    "app_pages/2_scores.py",
    "app_pages/3_spectrum.py",
    "app_pages/4_magnitude.py",
    "app_pages/5_rnd.py",
    "app_pages/6_projection.py",
    "app_pages/7_compare.py",
    "app_pages/8_curate.py",
    "app_pages/9_robustness.py",
]
HEADLINE = "Vendi score (q = "


def start(query: dict | None = None, timeout: float = 240) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=timeout)
    if query:
        at.query_params.update(query)
    at.run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    """No uncaught exception reached the page."""
    assert not at.exception, [e.value for e in at.exception]


def headline(at: AppTest):
    """The page's q headline: the exact Scores page's own component (``ui.live_q``), or a metric
    (the estimates of ``ui.scalable``); ``.label``, ``.value`` and, for the component, ``.caption``."""
    found = [m for m in at.metric if m.label.startswith(HEADLINE)]
    found += [_live_headline(data) for data in live_data(at)]
    assert len(found) == 1, ([m.label for m in at.metric], len(live_data(at)))
    return found[0]


def _live_headline(data: dict) -> SimpleNamespace:
    """The texts the headline component draws for the q the server drew, as ``st.metric`` would
    give them (the caption in markdown: ``**`` around its bold part)."""
    value, share = data["texts"][data["current"]]
    lead, bold = data["caption"]
    return SimpleNamespace(label=f"{data['prefix']}{data['current']})", value=value,
                           help=data["help"].replace("{q}", data["current"]),
                           caption=f"{lead}**{bold}**" + (f" {share}" if share else ""))


def live_data(at: AppTest) -> list:
    """The data of every headline component (``ui.live_q``) on the page."""
    import json

    return [json.loads(el.proto.json) for el in at.get("bidi_component")
            if el.proto.component_name == "diversity_live_q"]


def metric(at: AppTest, label: str):
    found = [m for m in at.metric if m.label == label]
    assert len(found) == 1, [m.label for m in at.metric]
    return found[0]


@functools.lru_cache(maxsize=8)
def core_spectrum(name: str, kernel: str | None = None) -> dc.Spectrum:
    ds = load_demo(name)
    X = featurize(ds)
    return dc.compute_spectrum(X, kernel=kernel or default_kernel("default", dataset=ds))


# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("demo", list_demos())
def test_every_page_runs_on_each_demo(demo):
    """Each page of the app runs without an exception and without an error on every demo."""
    at = start({"demo": demo, "n": "120", "seed": "1"})
    assert at.session_state["dataset"].name == demo
    for page in PAGES:
        at.switch_page(page).run()
        assert_clean(at)
        assert not at.error, (page, [e.value for e in at.error])
        assert at.title, page  # every page draws its title and explanation
        assert at.markdown, page


def test_headline_numbers_equal_the_core():
    at = start()
    spec = core_spectrum("digits")
    n = load_demo("digits").n
    assert headline(at).label == "Vendi score (q = 1)"
    assert headline(at).value == f"{spec.vendi(1.0):.2f}"
    assert metric(at, "VS₁ (Shannon, q = 1)").value == f"{spec.vendi(1.0):.2f}"
    assert metric(at, "VS∞ (q = ∞)").value == f"{spec.vendi(np.inf):.2f}"
    assert metric(at, "Rank (q = 0)").value == f"{spec.rank}"
    assert f"out of **n = {n}**" in headline(at).caption
    X = featurize(load_demo("digits"))
    assert metric(at, "IntDiv").value == f"{dc.intdiv(X, kernel='cosine'):.4f}"


def test_the_headline_is_the_components_own():
    """Issue 39 item 10: the exact Scores headline is drawn by its own component (``ui.live_q``), not
    by an ``st.metric`` whose DOM a script rewrites; its script and styles name no Streamlit test id."""
    from ui import live_q

    at = start()
    assert not [m.label for m in at.metric if m.label.startswith(HEADLINE)]
    assert len(live_data(at)) == 1
    n = load_demo("digits").n
    assert headline(at).label == "Vendi score (q = 1)" and headline(at).help.endswith(f"out of n = {n}.")
    assert "data-testid" not in live_q._JS + live_q._CSS and "stMetric" not in live_q._JS


@pytest.mark.parametrize("q, label", [(2.0, "2"), (0.5, "0.5"), (math.inf, "∞"), (0.0, "0")])
def test_changing_q_changes_the_headline(q, label):
    at = start()
    before = headline(at).value
    at.sidebar.select_slider(key="q").set_value(q).run()
    assert_clean(at)
    spec = core_spectrum("digits")
    assert headline(at).label == f"Vendi score (q = {label})"
    expected = f"{spec.vendi(q):.2f}"
    assert headline(at).value == expected
    assert headline(at).value != before
    assert at.query_params["q"] == ("inf" if math.isinf(q) else f"{q:g}")
    # the table the browser draws the next headlines from (ui.live_q), before q moved, holds
    # for this q exactly what the page's own run drew after it moved
    assert live_texts(start())[label] == [headline(at).value, _share(at)]


def live_texts(at: AppTest) -> dict:
    """The live headline's table on the page: ``{q label: [value, share]}``."""
    found = live_data(at)
    assert len(found) == 1
    return found[0]["texts"]


def _share(at: AppTest) -> str:
    """The ``(x%)`` at the end of the headline's caption."""
    caption = headline(at).caption
    return caption[caption.rindex("("):]


def test_per_group_table_uses_the_core():
    at = start({"demo": "shapes", "q": "2"})
    table = at.dataframe[0].value
    ds = load_demo("shapes")
    X = featurize(ds)
    assert list(table["group"]) == ds.group_names()
    for group, value in zip(table["group"], table["VS (q = 2)"]):
        expected = dc.compute_spectrum(X[ds.group_indices(group)], kernel="cosine").vendi(2.0)
        assert value == pytest.approx(expected, rel=1e-9)


def _npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_bad_upload_shows_an_error_and_keeps_the_dataset():
    at = start()
    before = headline(at).value
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("broken.npy", b"this is not a numpy file").run()
    assert_clean(at)
    assert any("Could not load the upload 'broken.npy'" in e.value for e in at.error)
    assert at.session_state["dataset"].name == "digits"
    assert headline(at).value == before


def test_good_upload_is_measured_like_the_core():
    X = np.random.default_rng(0).normal(size=(60, 6))
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("emb.npy", _npy_bytes(X)).run()
    assert_clean(at)
    assert not at.error
    ds = at.session_state["dataset"]
    assert (ds.name, ds.n, ds.modality) == ("emb.npy", 60, "embeddings")
    assert headline(at).value == f"{dc.compute_spectrum(X, kernel='cosine').vendi(1.0):.2f}"
    assert at.query_params.get("source") == "upload"


def test_bad_path_shows_an_error_and_keeps_the_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(tmp_path))  # local paths are off without a data folder
    at = start()
    at.sidebar.radio(key="source").set_value("Local path").run()
    at.sidebar.text_input(key="path").input(str(tmp_path / "missing.npy")).run()
    assert_clean(at)
    assert any("Could not load" in e.value and "missing.npy" in e.value for e in at.error)
    assert at.session_state["dataset"].name == "digits"
    assert headline(at).label == "Vendi score (q = 1)"


def test_core_errors_reach_the_user_without_traceback():
    """tanimoto needs non-negative features; these embeddings have negative ones: an error message, no
    exception. (A kernel undefined on a representation, e.g. probability_product on pixels, is not
    offered at all: issue 26, item 11.)"""
    X = np.random.default_rng(0).normal(size=(60, 6))
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("emb.npy", _npy_bytes(X)).run()
    at.sidebar.selectbox(key="kernel").set_value("tanimoto").run()
    assert_clean(at)
    assert any("non-negative" in e.value for e in at.error), [e.value for e in at.error]
    at.sidebar.selectbox(key="kernel").set_value("cosine").run()
    assert_clean(at)
    assert headline(at).value == f"{dc.compute_spectrum(X, kernel='cosine').vendi(1.0):.2f}"


def test_query_string_round_trip():
    ds = load_demo("shapes")
    groups = ds.group_names()[:2]
    query = {"demo": "shapes", "feat": "pixels", "kernel": "rbf", "sigma": "2.5", "q": "inf", "n": "300",
             "seed": "3", "group": groups}
    at = start(query)
    ss = at.session_state
    assert (ss["demo"], ss["kernel"], ss["sigma_auto"], ss["sigma"], ss["q"]) == ("shapes", "rbf", False, 2.5, math.inf)
    assert (ss["subsample_on"], ss["subsample_n"], ss["subsample_seed"], ss["groups"]) == (True, 300, 3, groups)
    assert headline(at).label == "Vendi score (q = ∞)"
    assert at.query_params == query  # the URL the app writes is the one it read
    value = headline(at).value

    at.sidebar.select_slider(key="q").set_value(0.5).run()
    assert at.query_params["q"] == "0.5"
    # a copied link reopens the same view, on another page too
    copied = dict(at.query_params)
    again = start(copied)
    assert headline(again).label == "Vendi score (q = 0.5)"
    assert headline(again).value == headline(at).value
    again.switch_page("app_pages/3_spectrum.py").run()
    assert_clean(again)
    assert again.session_state["groups"] == groups
    assert value != headline(at).value


def test_settings_survive_page_changes():
    at = start()
    at.sidebar.select_slider(key="q").set_value(3.0).run()  # reruns the q views only (ui.fragments)
    at.run()  # AppTest's tree then holds only what they drew: a full run brings the sidebar back
    at.sidebar.selectbox(key="kernel").set_value("rbf").run()
    for page in ("app_pages/1_dataset.py", "app_pages/6_projection.py", "app_pages/2_scores.py"):
        at.switch_page(page).run()
        assert_clean(at)
        assert at.session_state["q"] == 3.0
        assert at.session_state["kernel"] == "rbf"
    assert headline(at).label == "Vendi score (q = 3)"


def test_magnitude_page_matches_the_core():
    from diversity_core.magnitude import compare_magnitude

    ds = load_demo("digits")
    groups = ds.group_names()[:2]
    at = start({"group": groups})
    at.switch_page("app_pages/4_magnitude.py").run()
    assert_clean(at)
    assert not at.dataframe  # 600 items: nothing runs before the click (the first view never waits)
    at.button(key="mag_run").click().run()
    assert_clean(at)
    table = at.dataframe[0].value
    X = featurize(ds)
    expected = compare_magnitude({g: X[ds.group_indices(g)] for g in groups})
    assert list(table["set"]) == groups
    for g, area in zip(table["set"], table["MagArea"]):
        assert area == pytest.approx(expected.areas[g], rel=1e-9)


def test_rnd_page_runs_and_matches_the_core():
    from diversity_core.rnd import rnd_score

    ds = load_demo("digits")
    group = ds.group_names()[0]
    at = start({"group": [group]})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    at.selectbox(key="rnd_arch").set_value("mlp")
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(4)
    at.number_input(key="rnd_last").set_value(2)
    at.number_input(key="rnd_runs").set_value(2)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    X = featurize(ds)[ds.group_indices(group)]
    expected = rnd_score(X, train_size=100, epochs=4, average_last=2, runs=2, architecture="mlp", rng=0)
    assert metric(at, "RND score").value == f"{expected.score:.4f}"
    # the result is kept: a rerun shows it without training again
    at.run()
    assert metric(at, "RND score").value == f"{expected.score:.4f}"


def test_rnd_result_survives_slow_epochs(monkeypatch):
    """Issue 16, blocker 1: with epochs slower than the live chart's redraw interval, the last live
    frame equalled the finished chart, Streamlit raised StreamlitDuplicateElementId and the
    training was lost. A finished run shows its result, on that run and the next ones."""
    import time

    import ui.rnd_ui as rnd_ui

    train = rnd_ui.rnd_score

    def slow(X, *, on_epoch=None, **kwargs):
        def each(curves):
            time.sleep(0.45)  # slower than the redraw interval (0.4 s): every epoch is drawn
            on_epoch(curves)

        return train(X, on_epoch=None if on_epoch is None else each, **kwargs)

    monkeypatch.setattr(rnd_ui, "rnd_score", slow)
    ds = load_demo("digits")
    groups = ds.group_names()[:2]
    at = start({"group": groups})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    at.selectbox(key="rnd_arch").set_value("mlp")
    at.checkbox(key="rnd_per_group").check()  # groups of 300 open pooled (fewer than MIN_ITEMS)
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(3)
    at.number_input(key="rnd_last").set_value(2)
    at.number_input(key="rnd_runs").set_value(2)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    shown = list(at.dataframe[0].value["group"])
    assert shown == groups
    scores = list(at.dataframe[0].value["RND score"])
    at.run()  # kept: the next run shows the same result without training again
    assert_clean(at)
    assert list(at.dataframe[0].value["RND score"]) == scores
    assert not [b for b in at.button if b.key == "rnd_run"]  # no "Run RND" prompt: the stored result is shown


def test_long_tasks_store_their_result_before_drawing(monkeypatch):
    """ui.tasks.run keeps the outcome under its key even when the page fails while drawing it."""
    from ui import tasks

    at = AppTest.from_string(
        """
import streamlit as st
from ui import tasks

def fn(progress):
    progress(1, 2, "half")
    progress(2, 2, "done")
    return 42

out = tasks.run("test_task", ("k", 1), fn, "A task")
st.write(out.value)
raise RuntimeError("drawing failed")
""",
        default_timeout=30,
    )
    at.run()
    assert at.exception  # the page failed after the task finished ...
    assert tasks.stored("test_task", ("k", 1)).value == 42  # ... and the result is kept


def test_every_page_runs_on_an_upload_without_groups():
    X = np.random.default_rng(1).normal(size=(70, 5))
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("plain.npy", _npy_bytes(X)).run()
    assert at.session_state["dataset"].groups is None
    for page in PAGES:
        at.switch_page(page).run()
        assert_clean(at)
        assert not at.error, (page, [e.value for e in at.error])
    at.switch_page("app_pages/4_magnitude.py").run()
    assert list(at.dataframe[0].value["set"]) == ["all selected items"]


def test_dataset_page_lists_skipped_entries():
    smi = b"CCO\nnot_a_smiles\nc1ccccc1\nCCN\nCC(=O)O\n"
    at = start()
    at.switch_page("app_pages/1_dataset.py").run()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("mols.smi", smi).run()
    assert_clean(at)
    assert at.session_state["dataset"].n == 4
    assert metric(at, "Skipped on loading").value == "1"
    assert any("1 entries were skipped" in w.value for w in at.warning)


def test_selected_points_map_to_items():
    from ui.compute import selected_items

    class Event:
        selection = {"points": [{"customdata": 7, "point_index": 0}, {"customdata": [3]}, {"customdata": 7}]}

    class Selection:
        def __init__(self, d):
            self.points = d["points"]

    event = Event()
    event.selection = Selection(Event.selection)
    assert selected_items(event) == [7, 3]
    assert selected_items(object()) == []
