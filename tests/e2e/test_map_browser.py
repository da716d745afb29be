"""The Projection map in the real browser (issue 27, items 1-2): hovering a point shows the item
(thumbnail, molecule drawing and SMILES, first lines of text), a click opens it with its nearest
neighbours and "keep only these", and a 100,000-point map draws, answers hover, and a lasso on it
reaches the Scores page. Timings live in benchmarks/bench_map.py; these tests assert states.

Screenshots land in ``test-artifacts/e2e/map_*.png``.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from conftest import _server
from test_browser import assert_no_traceback, goto_page, open_page, wait_idle

pytestmark = pytest.mark.e2e

SIDEBAR = '[data-testid="stSidebar"]'
N, SEED = 200, 1
#: The hover layer has hooked the chart's events.
HOVER_READY = "() => { const g = document.querySelector('.js-plotly-plot'); return !!g && g.dataset.dxHover === 'ready'; }"
#: The hover cards the map shows now have their pictures (thumbnails, drawings; made in the background
#: when they take a while: the cards show their text meanwhile, as an earlier set of the store does).
PICTURES_READY = """() => { const s = window.__dxCardStore;
  const c = s && s.get(window.__dxCardHash);  // the set the map shows now, not an earlier text-only one
  return !!c && (c.img || c.svg || []).some(Boolean); }"""
#: The chart's first trace is drawn with every point (WebGL above 3,000).
DRAWN = """(n) => { const g = document.querySelector('.js-plotly-plot');
  return !!g && !!g._fullData && g._fullData.some(t => (t.x || []).length === n) && !!g.querySelector('canvas, .points'); }"""
#: The hover text plotly carries for the item a card shows (customdata -> text of that point).
POINT_TEXT = """(i) => { const g = document.querySelector('.js-plotly-plot');
  for (const t of g._fullData) { const cd = t.customdata || [];
    for (let j = 0; j < cd.length; j++) if (Number(cd[j]) === i) return String(t.text[j]); } return null; }"""


def _hover(page, nth: int = 5) -> dict:
    point = page.locator(".js-plotly-plot .scatterlayer .points path").nth(nth)
    point.wait_for()
    box = point.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=4)
    return box


@pytest.mark.parametrize("demo", ["digits", "molecules", "text"])
def test_hover_shows_the_item(page, app_url, artifacts, demo):
    open_page(page, f"{app_url}/projection?demo={demo}&n={N}&seed={SEED}")
    page.wait_for_function(HOVER_READY, timeout=30_000)
    if demo != "text":
        page.wait_for_function(PICTURES_READY, timeout=120_000)
        page.wait_for_function(HOVER_READY, timeout=30_000)
    _hover(page)
    card = page.locator("#dx-hover-card")
    card.wait_for(state="visible", timeout=10_000)
    item = int(card.get_attribute("data-item"))
    plotly_text = re.sub(r"<[^>]+>", " ", page.evaluate(POINT_TEXT, item))  # the same item's id and text
    ident = card.locator(".dx-card-id").inner_text().split(" · ")[0]
    assert ident.replace("&", "&amp;") in plotly_text.replace("&amp;", "&amp;")
    images = card.locator("img")
    if demo in ("digits", "molecules"):  # the thumbnail / the drawing, decoded by the browser
        assert images.count() == 1
        assert images.first.evaluate("img => img.complete && img.naturalWidth > 0")
    if demo == "molecules":  # and its SMILES
        smiles = card.locator(".dx-card-text").inner_text()
        assert smiles and " " not in smiles and smiles in plotly_text.replace(" ", "")
    if demo == "text":  # the first words of the sentence
        text = card.locator(".dx-card-text").inner_text()
        assert images.count() == 0 and " ".join(text.split()[:4]) in " ".join(plotly_text.split())
    page.screenshot(path=str(artifacts / f"map_hover_{demo}.png"))
    page.mouse.move(2, 2)
    card.wait_for(state="hidden", timeout=10_000)
    if demo == "digits":
        # a rerun sends the cards' hash only: the browser's copy answers the next hover
        sent = page.evaluate("() => window.__dxCardStore.size")
        box = page.get_by_role("textbox", name="Highlight")
        box.fill("zzz-no-such-item")
        box.press("Enter")
        wait_idle(page)
        page.get_by_text(re.compile(r"0 items match")).first.wait_for(timeout=30_000)
        page.wait_for_function(HOVER_READY, timeout=30_000)
        _hover(page, 9)
        card.wait_for(state="visible", timeout=10_000)
        assert card.locator("img").count() == 1
        assert page.evaluate("() => window.__dxCardStore.size") == sent


def test_click_opens_the_item_with_its_neighbours(page, app_url, artifacts):
    open_page(page, f"{app_url}/projection?demo=digits&n={N}&seed={SEED}")
    page.wait_for_function(HOVER_READY, timeout=30_000)
    point = page.locator(".js-plotly-plot .scatterlayer .points path").first
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_idle(page)
    page.get_by_text(re.compile(r"^1 selected item")).first.wait_for(timeout=30_000)
    page.get_by_text("nearest neighbours").first.wait_for(timeout=60_000)
    keep = page.get_by_role("button", name="Keep only these 9")
    keep.wait_for(timeout=120_000)  # after the item's contribution, rarity and duplicate group
    assert page.get_by_text(re.compile(r"sim -?\d\.\d{3}")).count() == 8
    for label in ("rarity", "near-duplicate group"):
        assert page.locator('[data-testid="stMetricLabel"]', has_text=label).count() == 1
    page.mouse.move(2, 2)
    keep.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "map_click_neighbours.png"))
    keep.click()
    wait_idle(page)
    page.locator(SIDEBAR).get_by_text("Restricted to 9 selected items").first.wait_for(timeout=60_000)
    assert_no_traceback(page)


# ------------------------------------------------------------------------------------------
# a 100,000-point map, served from a data folder
# ------------------------------------------------------------------------------------------
BIG = 100_000


@pytest.fixture(scope="module")
def big_app_url(tmp_path_factory):
    """A server whose data folder holds 100,000 embeddings in 12 clusters."""
    folder = tmp_path_factory.mktemp("bigmap")
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(12, 16)) * 4
    X = centres[rng.integers(0, 12, size=BIG)] + rng.normal(size=(BIG, 16))
    np.save(folder / "big.npy", X.astype(np.float32))
    before = os.environ.get("DIVERSITY_DATA_DIR")
    os.environ["DIVERSITY_DATA_DIR"] = str(folder)
    try:
        with _server("streamlit_bigmap.log") as url:
            yield url
    finally:
        if before is None:
            os.environ.pop("DIVERSITY_DATA_DIR", None)
        else:
            os.environ["DIVERSITY_DATA_DIR"] = before


def test_100k_map_hover_and_lasso_reach_scores(page, big_app_url, artifacts):
    open_page(page, f"{big_app_url}/projection?path=big.npy", timeout=300_000)
    page.wait_for_function(DRAWN, arg=BIG, timeout=120_000)
    chart = page.locator(".js-plotly-plot").first
    area = chart.locator(".nsewdrag").first.bounding_box()
    # hover: the pixel of an item's point, computed from the chart's own axes
    xy = page.evaluate("""() => { const g = document.querySelector('.js-plotly-plot'); const t = g._fullData[0];
        const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis, r = g.getBoundingClientRect();
        return [r.left + xa._offset + xa.l2p(t.x[123]), r.top + ya._offset + ya.l2p(t.y[123])]; }""")
    page.mouse.move(xy[0] - 6, xy[1] - 6)
    page.mouse.move(xy[0], xy[1], steps=3)
    box = page.locator(".js-plotly-plot .hoverlayer .hovertext").first
    box.wait_for(state="attached", timeout=15_000)
    # the item's whole hover text, though its shared ends travel in the trace's template (issue 41, item 13)
    assert re.match(r"row \d+", box.text_content()), box.text_content()
    page.screenshot(path=str(artifacts / "map_100k.png"))
    # lasso around the middle of the map
    chart.hover()
    chart.locator('.modebar-btn[data-title="Lasso Select"]').click()
    cx, cy, rx, ry = (
        area["x"] + area["width"] / 2,
        area["y"] + area["height"] / 2,
        area["width"] / 4,
        area["height"] / 4,
    )
    page.mouse.move(cx + rx, cy)
    page.mouse.down()
    for a in np.linspace(0, 2 * np.pi, 24)[1:]:
        page.mouse.move(cx + rx * np.cos(a), cy + ry * np.sin(a), steps=2)
    page.mouse.up()
    wait_idle(page)
    heading = page.get_by_text(re.compile(r"^\d+ selected items")).first
    heading.wait_for(timeout=60_000)
    k = int(heading.inner_text().split()[0])
    assert 10 < k < BIG - 10
    page.screenshot(path=str(artifacts / "map_100k_lasso.png"))
    page.get_by_role("button", name=f"Exclude these {k}").click()
    wait_idle(page)
    page.locator(SIDEBAR).get_by_text(f"{k} selected items excluded").first.wait_for(timeout=60_000)
    goto_page(page, "Scores")
    page.get_by_text(f"out of n = {BIG - k}").first.wait_for(timeout=180_000)
    assert_no_traceback(page)
