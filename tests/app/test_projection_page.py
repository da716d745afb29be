"""Projection page under ``AppTest`` (issue 27, items 1-2): a click opens the item with its nearest
neighbours under the kernel, its per-item numbers and "keep only these"; the 3-D view; search
highlighting; the density view of a large map with box and lasso selections (a selection on it
redraws without error; the 3-D view draws the same sample); the hover cards of every modality at
real sizes (a few thousand photographs, the 2,000 molecules of the demo), sent once per session;
UMAP as a background job that reruns and other pages leave running; errors shown as messages.
The chart's own events are browser-only (tests/e2e/test_map_browser.py)."""

from __future__ import annotations

import base64
import gc
import html
import io
import json
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from diversity_core.curation import find_duplicates, item_contributions, nearest_items, rarity_scores
from diversity_core.data import load_demo
from diversity_core.data.search import contains_any_mask
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import default_kernel, featurize
from diversity_core.projection import points_in_region
from diversity_core.workers import JobCancelledError

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
    from test_app import headline

    assert "out of **n = 9**" in headline(at).caption


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
            # the axes are named as on the 2-D map: the principal components and their shares
            scene = figures(at)[0]["layout"]["scene"]
            titles = [scene[f"{a}axis"]["title"]["text"] for a in "xyz"]
            assert titles[0].startswith("PC 1 (") and "of the variance" in titles[0]
            assert titles[1].startswith("PC 2 (") and titles[2].startswith("PC 3 (")


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


def hover_payloads(at: AppTest) -> list:
    """The data of every hover layer on the page (``{"hash": ..., "cards": ...}``; the cards on a first send only)."""
    out = []
    for el in at.get("bidi_component"):
        if el.proto.component_name == "diversity_map_hover":
            out.append(json.loads(el.proto.json))
    return out


def run_until(at: AppTest, done, timeout: float = 240.0) -> None:
    """Rerun the page (as the follow fragment's timer does in a browser) until ``done(at)``."""
    t0 = time.monotonic()
    while not done(at):
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.5)
        at.run()
        assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("demo", ["digits", "molecules", "text"])
def test_hover_cards_show_the_item(demo):
    from PIL import Image

    from ui import map_cards
    from ui.data.view import View

    _, sub = view_subset(demo, 40)
    view = View(full=sub, data=sub, indices=None, key=f"cards-{demo}", description="")
    cards = map_cards.hover_cards(view)
    pictures = map_cards.card_pictures_task(view, 0)(None)
    assert cards["kind"] == sub.modality and cards["ids"] == [str(i) for i in sub.ids] and cards["rows"] is None
    if demo == "digits":  # the thumbnail itself, pixel for pixel (small images stay lossless PNG)
        png = Image.open(io.BytesIO(base64.b64decode(pictures[3].split(",", 1)[1])))
        np.testing.assert_array_equal(np.asarray(png), np.asarray(sub.items[3])[..., 0])
    elif demo == "molecules":  # a compact drawing (text labels, merged paths) and the SMILES
        assert all(p.startswith("<svg") and "<path" in p and len(p) < 6000 for p in pictures)
        assert cards["text"] == [str(s) for s in sub.items]
    else:  # the first words of the text
        assert all(
            c and " ".join(str(t).split()).startswith(c.rstrip("…")) for c, t in zip(cards["text"], sub.items)
        )


def test_hover_cards_reach_a_few_thousand_photographs(tmp_path, monkeypatch):
    """3,000 photographs (64 px crops of scikit-learn's sample photos): a card with its thumbnail for every
    item (a WebP of 48 px, ~0.5 KB), made in the background and sent once, within the budget."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    from ui import card_pictures, map_cards

    n = 3000
    photos, rng = load_sample_images().images, np.random.default_rng(0)
    crops = np.empty((n, 64, 64, 3), dtype=np.uint8)
    for k in range(n):
        im = photos[k % 2]
        y, x = rng.integers(0, im.shape[0] - 160), rng.integers(0, im.shape[1] - 160)
        crops[k] = np.asarray(Image.fromarray(im[y : y + 160, x : x + 160]).resize((64, 64), Image.BILINEAR))
    np.save(tmp_path / "photos.npy", crops)
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(map_cards, "CARD_WAIT_S", 0.0)  # always the background path
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"path": "photos.npy"})
    at.switch_page(PAGE).run()  # straight to the map (the Dataset page's summary of 3,000 images is not tested here)
    assert_clean(at)
    run_until(at, lambda at: any("img" in p.get("cards", {}) for p in hover_payloads(at)))
    [payload] = hover_payloads(at)
    cards = payload["cards"]
    assert len(cards["ids"]) == len(cards["img"]) == n and cards["rows"] is None
    sizes = []
    for uri in cards["img"]:
        assert uri.startswith("data:image/webp;base64,")
        data = base64.b64decode(uri.split(",", 1)[1])
        sizes.append(len(data))
    thumb = Image.open(io.BytesIO(base64.b64decode(cards["img"][7].split(",", 1)[1])))
    assert max(thumb.size) == card_pictures.CARD_THUMB_PX
    assert sum(len(u) for u in cards["img"]) < map_cards.CARD_BYTES and np.mean(sizes) < 1500
    # the next run sends the cards' hash only: the browser keeps them
    at.run()
    assert_clean(at)
    assert hover_payloads(at) == [{"hash": payload["hash"]}]
    # a browser that lacks them asks again (its "missing" trigger clears what was sent)
    at.session_state["_map_cards_sent"] = set()
    at.run()
    assert hover_payloads(at)[0].get("cards", {}).get("img") == cards["img"]


def test_hover_cards_of_every_molecule_of_the_demo():
    """The molecules demo (2,000): every item's card has its drawing and its SMILES (drawn in the
    background, the SMILES at once)."""
    ds = load_demo("molecules")
    at = start("molecules", ds.n)
    first = hover_payloads(at)
    assert len(first) == 1 and first[0]["cards"]["text"] == [str(s) for s in ds.items]
    run_until(at, lambda at: any("svg" in p.get("cards", {}) for p in hover_payloads(at)))
    cards = hover_payloads(at)[0]["cards"]
    assert cards["ids"] == [str(i) for i in ds.ids] and cards["text"] == [str(s) for s in ds.items]
    assert len(cards["svg"]) == ds.n and all(s.startswith("<svg") and "<path" in s for s in cards["svg"])
    assert not any("being made in the background" in c.value for c in at.caption)


def test_cards_beyond_the_budget_say_how_far_they_reach(monkeypatch):
    from ui import map_cards

    monkeypatch.setattr(map_cards, "CARD_BYTES", 6_000)
    at = start("text")
    assert not hover_payloads(at)
    [note] = [c.value for c in at.caption if c.value.startswith("Hovering a point shows its first lines")]
    limit = int(re.search(r"up to ([\d,]+) drawn items", note).group(1).replace(",", ""))
    assert 0 < limit < N and f"this map draws {N:,}" in note and "Keep only these" in note
    # plotly's own hover text stays on
    assert all(t.get("hoverinfo") != "none" for t in figures(at)[0]["data"])


# ------------------------------------------------------------------------------------------
# maps of any size: a selection on a density view, the 3-D view's sample, hover text per drawn point
# ------------------------------------------------------------------------------------------
def test_a_selection_on_a_density_map_redraws_it(monkeypatch):
    """A click or lasso on a density view marks the sampled points; the heatmap (counts in its
    customdata, no selectedpoints) is left alone instead of failing the page."""
    from ui import map_ui

    monkeypatch.setattr(map_ui, "SCATTER_MAX", 50)
    monkeypatch.setattr(map_ui, "DENSITY_SAMPLE", 40)
    at = start()
    points = [t for t in figures(at)[0]["data"] if t["type"] == "scattergl"]
    chosen = [int(v) for v in values(points[0]["customdata"]).ravel()[:2]] + [0]  # two drawn, one not
    at.session_state["proj_selected"] = chosen
    at.session_state["_proj_signature"] = None  # as after the lasso's rerun
    at.run()
    assert_clean(at)
    assert at.subheader[0].value == "3 selected items"
    traces = figures(at)[0]["data"]
    [heat] = [t for t in traces if t["type"] == "heatmap"]
    assert "selectedpoints" not in heat
    marked = [
        int(values(t["customdata"]).ravel()[j]) for t in traces if t["type"] == "scattergl" for j in t["selectedpoints"]
    ]
    assert sorted(marked) == sorted(set(chosen) & set(np.concatenate([values(t["customdata"]).ravel()
                                                                        for t in points]).tolist()))


def test_3d_view_of_a_large_map_draws_the_sample_and_its_hover_text_only(monkeypatch):
    from ui import compute, map_ui

    monkeypatch.setattr(map_ui, "SCATTER_MAX", 50)
    monkeypatch.setattr(map_ui, "DENSITY_SAMPLE", 40)
    labelled = []
    real = compute.hover_labels
    monkeypatch.setattr(compute, "hover_labels", lambda ds, *a, **k: labelled.append(ds.n) or real(ds, *a, **k))
    map_ui.hover_text.clear()
    at = start()
    at.toggle(key="proj_3d").set_value(True).run()
    assert_clean(at)
    traces = [t for t in figures(at)[0]["data"] if t["type"] == "scatter3d"]
    assert sum(values(t["x"]).size for t in traces) == 40
    items = np.concatenate([values(t["customdata"]).ravel() for t in traces])
    assert np.unique(items).size == 40 and items.max() < N
    assert all(len(t["text"]) == values(t["x"]).size for t in traces)
    assert any("draws a seeded sample of 40" in c.value for c in at.caption)
    assert labelled and max(labelled) == 40  # hover labels for the drawn points, never all N


def test_region_items_is_the_union_of_every_box_and_lasso():
    from types import SimpleNamespace

    from ui import map_ui

    coords = np.random.default_rng(0).uniform(-3, 3, size=(2000, 2))
    square = {"x": [-2, -1, -1, -2], "y": [-2, -2, -1, -1]}
    tri = {"x": [1, 2.5, 1], "y": [1, 1, 2.5]}
    box = {"x": [0.5, -0.5], "y": [2.9, 2.0]}
    event = SimpleNamespace(selection={"points": [], "box": [box], "lasso": [square, tri]})
    expected = set(points_in_region(coords, lasso=(square["x"], square["y"])).tolist())
    expected |= set(points_in_region(coords, lasso=(tri["x"], tri["y"])).tolist())
    expected |= set(points_in_region(coords, box=(-0.5, 0.5, 2.0, 2.9)).tolist())
    got = map_ui.region_items(coords, event)
    assert got == sorted(expected) and len(got) > 100
    with pytest.raises(DiversityInputError, match="at least 3 finite vertices"):
        map_ui.region_items(coords, SimpleNamespace(selection={"box": [], "lasso": [{"x": [0, 1], "y": [0, 1]}]}))


# ------------------------------------------------------------------------------------------
# errors on the map reach the user as messages
# ------------------------------------------------------------------------------------------
def test_a_lasso_of_two_vertices_is_an_error_message(monkeypatch):
    from types import SimpleNamespace

    from ui import map_ui

    real = map_ui.region_items
    lasso = SimpleNamespace(selection={"points": [], "box": [], "lasso": [{"x": [0.0, 1.0], "y": [0.0, 1.0]}]})
    monkeypatch.setattr(map_ui, "region_items", lambda coords, event: real(coords, lasso))
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "digits", "n": str(N), "seed": str(SEED)})
    at.run()
    at.session_state["_proj_event"] = lasso  # as the chart's callback keeps it (issue 41, item 6)
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any(e.value.startswith("Selection\\: a lasso needs at least 3 finite vertices") for e in at.error)
    assert figures(at)  # the map is still there


def test_neighbour_and_hover_card_failures_are_error_messages(monkeypatch):
    from ui import map_cards, map_ui

    def fail(*a, **k):
        raise DiversityInputError("the index is broken")

    monkeypatch.setattr(map_ui, "nearest_items", fail)
    monkeypatch.setattr(map_cards, "card_plan", fail)
    map_ui.neighbours.clear()
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "digits", "n": str(N), "seed": str(SEED)})
    at.run()
    at.switch_page(PAGE).run()
    at.session_state["proj_selected"] = [5]
    at.session_state["_proj_signature"] = None
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value.replace("\\:", ":") for e in at.error]  # shown as literal text
    assert "Hover cards: the index is broken" in errors and "Nearest neighbours: the index is broken" in errors
    assert figures(at) and at.subheader[0].value == "1 selected item"  # the map and the item stay
    assert [b.label for b in at.button if b.key == "proj_nn_restrict"] == ["Keep only these 1"]  # the item alone


# ------------------------------------------------------------------------------------------
# UMAP in the background
# ------------------------------------------------------------------------------------------
class SlowUmap:
    """A stand-in for the UMAP task: reports epochs until released, then returns a map."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = self.reports = 0
        self.cancelled = self.finished = False

    def task(self, view, featurizer, metric, n_neighbors, min_dist, dims):
        from diversity_core.projection import project
        from ui import compute

        def fn(progress):
            self.calls += 1
            k = 0
            try:
                while not self.release.is_set():
                    progress(20 + min(k, 79), 100, f"optimising the layout: epoch {k} of 200")
                    self.reports += 1
                    k += 1
                    time.sleep(0.05)
            except JobCancelledError:
                self.cancelled = True
                raise
            out = project(compute.features(view, featurizer, show_progress=False), n_components=dims)
            self.finished = True
            return out

        return fn


def map_title(at: AppTest) -> str:
    return figures(at)[0]["layout"]["title"]["text"]


def test_umap_runs_in_the_background_across_reruns_and_pages(monkeypatch):
    from ui import map_ui, tasks

    slow = SlowUmap()
    monkeypatch.setattr(map_ui, "umap_task", slow.task)
    tasks.store("umap").clear()  # no map kept by an earlier test
    at = start()
    at.radio(key="proj_method").set_value("UMAP").run()
    assert_clean(at)
    assert map_title(at).startswith("PCA of")  # PCA at once
    [run] = [b for b in at.button if b.key == "umap_run"]
    run.click().run()
    assert_clean(at)
    t0 = time.monotonic()
    while slow.reports < 3:
        assert time.monotonic() - t0 < 60
        time.sleep(0.1)
    at.run()
    assert map_title(at).startswith("PCA of") and any("PCA map is shown until" in c.value for c in at.caption)
    bars = [p.proto.text for p in at.get("progress")]
    assert any(t.startswith("UMAP (in the background) — optimising the layout: epoch") for t in bars), bars
    # clicks, other controls and another page leave it running
    at.session_state["proj_selected"] = [3]
    at.session_state["_proj_signature"] = None
    at.run()
    at.selectbox(key="proj_colour").set_value("eigenvector 1").run()
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    before = slow.reports
    time.sleep(0.5)
    assert slow.reports > before and not slow.cancelled  # still reporting, on another page
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert not slow.cancelled and slow.calls == 1
    slow.release.set()
    run_until(at, lambda at: map_title(at).startswith("UMAP of"), timeout=120)
    assert_clean(at)
    assert slow.calls == 1 and slow.finished and not slow.cancelled and not at.get("progress")


def test_umap_background_job_stops_on_cancel_and_at_session_end(monkeypatch):
    from ui import map_ui, tasks, workers

    slow = SlowUmap()
    monkeypatch.setattr(map_ui, "umap_task", slow.task)
    tasks.store("umap").clear()  # no map kept by an earlier test
    at = start()
    at.radio(key="proj_method").set_value("UMAP").run()
    [b for b in at.button if b.key == "umap_run"][0].click().run()
    at.run()
    [cancel] = [b for b in at.button if b.key == "cancel_background_umap"]
    cancel.click().run()
    assert_clean(at)
    t0 = time.monotonic()
    while not slow.cancelled:
        assert time.monotonic() - t0 < 30
        time.sleep(0.1)
    assert any(b.key == "umap_run" for b in at.button) and map_title(at).startswith("PCA of")
    # the session's end (its state dropped) cancels what it still runs
    stop = threading.Event()

    def forever(progress):
        while True:
            progress(0, 1, "")
            time.sleep(0.02)

    holder = tasks._SessionJobs()
    job = workers.start_background(forever, "forever")
    holder.jobs["umap"] = ("k", job)
    del holder
    gc.collect()
    t0 = time.monotonic()
    while not job.done():
        assert time.monotonic() - t0 < 10
        stop.wait(0.05)
    assert job.cancelled
    with pytest.raises(JobCancelledError):
        job.outcome()


# ------------------------------------------------------------------------------------------
# what the app asks of the core
# ------------------------------------------------------------------------------------------
def test_search_and_duplicate_groups_come_from_the_core():
    from ui import map_ui

    _, sub = view_subset("text")
    for query in ("the", "DOG", "  "):
        assert map_ui.matching_items(sub, query).tolist() == np.flatnonzero(contains_any_mask(sub, query)).tolist()
    assert map_ui.matching_items(sub, "  ").size == 0
    assert contains_any_mask(sub, "pydoc", columns=("group",)).sum() == sum("pydoc" in str(g).lower()
                                                                            for g in sub.groups)
    with pytest.raises(DiversityInputError, match="unknown text column 'weight'"):
        contains_any_mask(sub, "a", columns=("weight",))
    X = np.vstack([np.eye(6), np.eye(6)[:2]])  # items 0 and 6, 1 and 7 are duplicates
    dup = find_duplicates(X, kernel="cosine", threshold=0.99)
    assert dup.group_of(0).tolist() == [0, 6] and dup.group_of(7).tolist() == [1, 7]
    assert dup.group_of(3).size == 0
    with pytest.raises(DiversityInputError, match="item must be in"):
        dup.group_of(8)
