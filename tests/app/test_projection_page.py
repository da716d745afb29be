"""Projection page under ``AppTest`` (issue 27, items 1-2): a click opens the item with its nearest
neighbours under the kernel, its per-item numbers and "keep only these"; the 3-D view; search
highlighting; the density view of a large map with box and lasso selections; the hover cards of
every modality. The chart's own events are browser-only (tests/e2e/test_map_browser.py)."""

from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from diversity_core.curation import item_contributions, nearest_items, rarity_scores
from diversity_core.data import load_demo
from diversity_core.featurizers import default_kernel, featurize
from diversity_core.projection import points_in_region

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/6_projection.py"
N, SEED = 120, 1


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def start(demo: str = "digits", n: int = N) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": demo, "n": str(n), "seed": str(SEED)})
    at.run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    return at


def view_subset(name: str, n: int = N):
    ds = load_demo(name)
    rows = np.sort(np.random.default_rng(SEED).choice(ds.n, size=n, replace=False))
    return ds, ds.subset(rows)


def figures(at: AppTest) -> list:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def values(a) -> np.ndarray:
    """A trace's array as plotly's JSON carries it (a list, or typed: dtype + base64 bytes)."""
    if isinstance(a, dict) and "bdata" in a:
        shape = [int(v) for v in str(a.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(a["bdata"]), dtype=np.dtype(a["dtype"])).reshape(shape)
    return np.asarray(a)


def test_click_opens_the_item_with_its_neighbours_numbers_and_keep_only_these():
    at = start()
    item = 7
    at.session_state["proj_selected"] = [item]
    at.session_state["_proj_signature"] = None  # as after the click's rerun
    at.run()
    assert_clean(at)
    assert at.subheader[0].value == "1 selected item"
    # the neighbours and their similarities are the core's, under the app's kernel
    full, sub = view_subset("digits")
    kernel = default_kernel("default", dataset=full)
    X = featurize(sub)
    nn = nearest_items(X, item, k=8, kernel=kernel)
    gallery = " ".join(h.proto.body for h in at.get("html")) + " ".join(c.value for c in at.caption)
    shown = [float(v) for v in re.findall(r"sim (-?\d+\.\d+)", gallery)]
    np.testing.assert_allclose(shown, nn.similarities[0], atol=6e-4)  # shown with 3 decimals, in this order
    places = [gallery.find(html.escape(sub.ids[j])) for j in nn.indices[0]]
    assert all(p >= 0 for p in places) and places == sorted(places)
    # its contribution and rarity are the Curate page's numbers
    metrics = {m.label: m.value for m in at.metric}
    contrib = item_contributions(X, kernel=kernel, q=(0.5, 1.0, 2.0, float("inf"))).contribution(1.0)[item]
    assert float(metrics["contribution (q = 1)"]) == pytest.approx(contrib, rel=1e-3, abs=1e-6)
    assert float(metrics["rarity"]) == pytest.approx(
        rarity_scores(X, kernel=kernel, n_neighbors=10).scores[item], rel=1e-3
    )
    assert metrics["near-duplicate group"] == "none" or metrics["near-duplicate group"].startswith("group ")
    # "keep only these 9" restricts every page to the item and its neighbours
    [keep] = [b for b in at.button if b.key == "proj_nn_restrict"]
    assert keep.label == "Keep only these 9"
    keep.click().run()
    assert_clean(at)
    at.switch_page("app_pages/2_scores.py").run()
    assert any("out of **n = 9**" in c.value for c in at.caption)


def test_3d_view_and_search_highlighting():
    at = start("text")
    word = "the"
    _, sub = view_subset("text")
    expected = sum(word in f"{i} {g} {t}".lower() for i, g, t in zip(sub.ids, sub.groups, sub.items))
    at.text_input(key="proj_highlight").input(word).run()
    assert_clean(at)
    assert any(c.value.startswith(f"**{expected}** items match") for c in at.caption)
    for dims in (2, 3):
        at.toggle(key="proj_3d").set_value(dims == 3).run()
        assert_clean(at)
        traces = figures(at)[0]["data"]
        ringed = [t for t in traces if t.get("name", "").startswith("matches")]
        assert len(ringed) == 1 and values(ringed[0]["x"]).size == expected
        items = [t for t in traces if t not in ringed]
        assert {t["type"] for t in items} == ({"scatter3d"} if dims == 3 else {"scatter"})
        assert sum(values(t["x"]).size for t in items) == N
        if dims == 3:
            assert all(values(t["x"]).size == values(t["z"]).size for t in items)


def test_large_maps_are_a_density_view_and_a_box_or_lasso_selects_exactly(monkeypatch):
    from ui import map_ui

    monkeypatch.setattr(map_ui, "SCATTER_MAX", 50)
    monkeypatch.setattr(map_ui, "DENSITY_SAMPLE", 40)
    at = start()
    traces = figures(at)[0]["data"]
    heat = [t for t in traces if t["type"] == "heatmap"]
    points = [t for t in traces if t["type"] == "scattergl"]
    assert len(heat) == 1 and int(np.nansum(values(heat[0]["customdata"]).astype(float))) == N
    assert sum(values(t["x"]).size for t in points) == 40  # the sample, carrying the items' indices
    items = np.concatenate([values(t["customdata"]).ravel() for t in points])
    assert items.min() >= 0 and items.max() < N and np.unique(items).size == 40
    assert any("grey image counts the items" in c.value for c in at.caption)
    # what the chart reports for a box or a lasso: every item inside, not only the sampled points
    coords = np.random.default_rng(0).normal(size=(500, 2))
    box = SimpleNamespace(selection={"points": [], "box": [{"x": [-1, 0.5], "y": [0.8, -0.2]}], "lasso": []})
    assert map_ui.region_items(coords, box) == points_in_region(coords, box=(-1, 0.5, -0.2, 0.8)).tolist()
    xs, ys = [-1, 1, 1, -1], [-1, -1, 1, 1]
    lasso = SimpleNamespace(selection={"points": [], "box": [], "lasso": [{"x": xs, "y": ys}]})
    inside = np.flatnonzero((np.abs(coords) < 1).all(axis=1)).tolist()
    assert map_ui.region_items(coords, lasso) == inside and len(inside) > 100
    assert (
        map_ui.region_items(coords, SimpleNamespace(selection={"points": [], "box": [], "lasso": []})) == []
    )


@pytest.mark.parametrize("demo", ["digits", "molecules", "text"])
def test_hover_cards_show_the_item(demo, monkeypatch):
    from PIL import Image

    from ui import map_ui
    from ui.data.view import View

    _, sub = view_subset(demo, 40)
    cards = map_ui.hover_cards(View(full=sub, data=sub, indices=None, key=f"cards-{demo}", description=""))
    assert cards["kind"] == sub.modality and cards["ids"] == [str(i) for i in sub.ids]
    if demo == "digits":  # the thumbnail itself, pixel for pixel
        png = Image.open(io.BytesIO(base64.b64decode(cards["img"][3].split(",", 1)[1])))
        np.testing.assert_array_equal(np.asarray(png), np.asarray(sub.items[3])[..., 0])
    elif demo == "molecules":  # the drawing and the SMILES
        assert all(u.startswith("data:image/png;base64,") for u in cards["img"])
        assert cards["text"] == [str(s) for s in sub.items]
        # too many molecules to draw for the first view: the SMILES alone (the drawing on a click)
        monkeypatch.setattr(map_ui, "CARD_DRAWINGS_MAX", 10)
        many = map_ui.hover_cards(View(full=sub, data=sub, indices=None, key="cards-many", description=""))
        assert not any(many["img"]) and many["text"] == cards["text"]
    else:  # the first words of the text
        assert all(
            c and " ".join(str(t).split()).startswith(c.rstrip("…")) for c, t in zip(cards["text"], sub.items)
        )
        assert not any(cards["img"])
