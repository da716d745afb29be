"""Issue 41 on the pages: a group's colour on every chart (item 8), no server path on the Dataset
page and the Highlight text in a shared link (item 11)."""

from __future__ import annotations

import json

import numpy as np
from test_app import assert_clean, start

from diversity_core.data import load_demo
from diversity_core.report.figures import POOLED_COLOUR, POOLED_LABEL, group_colours


def _chart(at, title_start: str) -> dict:
    found = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = ((spec.get("layout") or {}).get("title") or {}).get("text") or ""
        if title.startswith(title_start):
            found.append(spec)
    assert len(found) == 1, title_start
    return found[0]


def _line_colours(spec: dict) -> dict:
    return {t["name"]: t["line"]["color"] for t in spec["data"] if t.get("mode") == "lines"}


def _bar_colours(spec: dict) -> dict:
    (bar,) = [t for t in spec["data"] if t["type"] == "bar"]
    return dict(zip(bar["x"], bar["marker"]["color"]))


def test_a_group_has_one_colour_on_every_chart_of_the_scores_and_dataset_pages():
    """Before: the q-profile put "all selected items" first in the palette's first colour, so each
    group's curve had the colour of the next group's bar; a group filter recoloured every group."""
    names = load_demo("digits").group_names()
    shown = names[3:6]
    at = start({"demo": "digits", "n": "150", "seed": "1", "group": shown})
    at.switch_page("app_pages/2_scores.py").run()
    assert_clean(at)
    want = group_colours(names)
    curves = _line_colours(_chart(at, "Vendi score against the order q"))
    bars = _bar_colours(_chart(at, "Vendi score per group"))
    assert curves[POOLED_LABEL] == POOLED_COLOUR
    for g in shown:
        assert curves[g] == bars[g] == want[g], (g, curves, bars)
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    counts = _bar_colours(_chart(at, "Items per group"))
    assert {g: counts[g] for g in shown} == {g: want[g] for g in shown}


def test_dataset_page_names_the_file_inside_the_data_folder_never_its_server_path(tmp_path, monkeypatch):
    """Before: "Source: /srv/.../sprites/emb.npy" showed visitors where the data lies on the server."""
    import ui.data as uidata

    (tmp_path / "sprites").mkdir()
    np.save(tmp_path / "sprites" / "emb.npy", np.random.default_rng(0).normal(size=(30, 4)))
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    at = start({"path": "sprites/emb.npy"})
    assert at.session_state["dataset"].n == 30
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    texts = [e.value for kind in ("caption", "markdown", "info", "warning", "error", "success")
             for e in at.get(kind)]
    assert any("Source: data folder: sprites/emb.npy" in t.replace("\\", "") for t in texts), texts
    assert not [t for t in texts if str(tmp_path) in t]


def test_highlight_text_is_in_the_shared_link_and_restored_from_it():
    """Before: the Highlight box was not bound to the URL: a copied link lost what was ringed."""
    at = start({"demo": "digits", "n": "150", "seed": "1"})
    at.switch_page("app_pages/6_projection.py").run()
    assert_clean(at)
    # the browser writes a bound widget's value into the URL under this key (as "Colour by")
    assert at.text_input(key="proj_highlight").proto.query_param_key == "proj_highlight"
    assert at.selectbox(key="proj_colour").proto.query_param_key == "proj_colour"
    again = start({"demo": "digits", "n": "150", "seed": "1", "proj_highlight": "row 1"})
    again.switch_page("app_pages/6_projection.py").run()
    assert_clean(again)
    assert again.text_input(key="proj_highlight").value == "row 1"
