"""The Projection map in the real browser (issue 41, items 6 and 11): every new box, lasso or click
on the map replaces the selection the panel shows (a second box, a box right after a click), a
clicked item's nearest neighbours are ringed on the map, and the text hover card of a point at the
map's right edge opens to the left of the pointer, inside the chart and the window.

Each step waits for the state it expects (the panel's heading, the figure's traces); the items a
box holds are computed from the chart's own axes. Screenshots land in
``test-artifacts/e2e/map_reselect_*.png``.
"""

from __future__ import annotations

import re

import pytest
from test_browser import assert_no_traceback, open_page, wait_idle

pytestmark = pytest.mark.e2e

N, SEED = 200, 1
#: Selected items the panel shows at most (app_pages/6_projection.py's SHOW_MAX).
SHOW_MAX = 48
CHART = ".js-plotly-plot"
#: The items whose points lie inside a rectangle of the page (pixels), from the chart's axes: how many lie
#: inside it shrunk by ``m`` pixels and grown by ``m`` (the mouse's pixels are rounded), and their ids (a
#: demo's ids repeat: its "+ noise" copies carry their original's).
IN_BOX = """([x0, y0, x1, y1, m]) => { const g = document.querySelector('.js-plotly-plot');
  const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis, r = g.getBoundingClientRect();
  const inner = new Set(), outer = new Set(), innerIds = new Set(), outerIds = new Set();
  for (const t of g._fullData) {
    if (!String(t.type).startsWith('scatter') || !t.customdata || !t.text) continue;
    for (let j = 0; j < t.x.length; j++) {
      const px = r.left + xa._offset + xa.l2p(t.x[j]), py = r.top + ya._offset + ya.l2p(t.y[j]);
      const id = /<b>(.*?)<\\/b>/.exec(String(t.text[j]))[1];
      const item = Number(t.customdata[j]);
      if (px > x0 - m && px < x1 + m && py > y0 - m && py < y1 + m) { outer.add(item); outerIds.add(id); }
      if (px > x0 + m && px < x1 - m && py > y0 + m && py < y1 - m) { inner.add(item); innerIds.add(id); }
    } }
  return [inner.size, outer.size, Array.from(innerIds), Array.from(outerIds)]; }"""
#: The panel shows a selection of at least the inner items, within the outer ones: its heading's count
#: and its gallery's ids (the first ``most`` items).
PANEL_SHOWS = """([nIn, nOut, inner, outer, most]) => { const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return false;
  const h = Array.from(main.querySelectorAll('h1, h2, h3, h4')).map(e => e.textContent.trim())
    .find(t => /^\\d+ selected items?/.test(t));
  if (!h) return false;
  const k = parseInt(h, 10);
  const shown = Array.from(main.querySelectorAll('figure.dx-card')).map(f => f.title.split('\\n')[0]);
  return k >= nIn && k <= nOut && shown.length === Math.min(k, most)
    && shown.every(i => outer.includes(i)) && (k > most || inner.every(i => shown.includes(i))); }"""
#: What the panel shows now (for a failure's message).
PANEL_NOW = """() => { const main = document.querySelector('[data-testid="stMain"]');
  return [Array.from(main.querySelectorAll('h1, h2, h3, h4')).map(e => e.textContent.trim()),
          Array.from(main.querySelectorAll('figure.dx-card')).map(f => f.title.split('\\n')[0])]; }"""
#: The ids of the items of the figure's neighbour ring (null while it has none).
RING_IDS = """() => { const g = document.querySelector('.js-plotly-plot'); if (!g || !g._fullData) return null;
  const ring = g._fullData.find(t => /^neighbours/.test(t.name || '')); if (!ring) return null;
  const id = new Map();
  for (const t of g._fullData) if (t.customdata && t.text)
    for (let j = 0; j < t.customdata.length; j++) id.set(Number(t.customdata[j]), /<b>(.*?)<\\/b>/.exec(String(t.text[j]))[1]);
  return Array.from(ring.customdata).map(i => id.get(Number(i))); }"""
#: The ids of the item cards the page's gallery shows (the first line of each card's title).
PANEL_IDS = """() => Array.from(document.querySelectorAll('[data-testid="stMain"] figure.dx-card'))
  .map(f => f.title.split('\\n')[0])"""
#: The hover layer has hooked the chart's events.
HOVER_READY = "() => { const g = document.querySelector('.js-plotly-plot'); return !!g && g.dataset.dxHover === 'ready'; }"


def _tool(page, title: str) -> None:
    """Pick a tool of the chart's toolbar (the chart may have been drawn anew since the last one)."""
    chart = page.locator(CHART).first
    chart.locator(".scatterlayer .points path").first.wait_for()
    chart.hover()
    chart.locator(f'.modebar-btn[data-title="{title}"]').click()


def _box(page, fx0: float, fy0: float, fx1: float, fy1: float) -> tuple:
    """Drag a box over the part of the map between the fractions given; what lies inside it (:data:`IN_BOX`,
    3 pixels from its edges)."""
    _tool(page, "Box Select")
    area = page.locator(CHART).first.locator(".nsewdrag").first.bounding_box()
    x0, y0 = area["x"] + fx0 * area["width"], area["y"] + fy0 * area["height"]
    x1, y1 = area["x"] + fx1 * area["width"], area["y"] + fy1 * area["height"]
    ids = page.evaluate(IN_BOX, [x0, y0, x1, y1, 3])
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=12)
    page.mouse.up()
    return tuple(ids)


def _panel_shows(page, ids: tuple, artifacts, name: str) -> None:
    """Wait until the panel shows the box's items (its heading's count, its gallery's first SHOW_MAX)."""
    n_in, n_out, inner, outer = ids
    assert n_in >= 2, "the box must hold at least two items"
    try:
        page.wait_for_function(PANEL_SHOWS, arg=[*ids, SHOW_MAX], timeout=60_000)
        wait_idle(page)
        page.wait_for_function(PANEL_SHOWS, arg=[*ids, SHOW_MAX], timeout=30_000)
    except Exception as exc:  # noqa: BLE001 - say what the panel shows instead
        page.screenshot(path=str(artifacts / f"map_reselect_{name}_failed.png"))
        headings, shown = page.evaluate(PANEL_NOW)
        raise AssertionError(f"{name}: the panel shows {headings} and {len(shown)} items, not the box's "
                             f"{n_in}-{n_out} items {sorted(outer)[:10]}...: {exc}") from None


def test_every_new_selection_replaces_the_panel_and_a_click_rings_its_neighbours(page, app_url, artifacts):
    open_page(page, f"{app_url}/projection?demo=digits&n={N}&seed={SEED}")
    first = _box(page, 0.1, 0.1, 0.55, 0.6)
    _panel_shows(page, first, artifacts, "first_box")
    page.screenshot(path=str(artifacts / "map_reselect_first_box.png"))
    # a second, different box replaces it (it was dropped: the panel vanished, the map kept the first)
    second = _box(page, 0.6, 0.3, 0.95, 0.95)  # begun outside the first (a drag inside one may move it)
    assert set(second[3]) != set(first[3])
    _panel_shows(page, second, artifacts, "second_box")
    page.screenshot(path=str(artifacts / "map_reselect_second_box.png"))
    # a click opens one item; its nearest neighbours, as the panel lists them, are ringed on the map
    _tool(page, "Pan")
    area = page.locator(CHART).first.locator(".nsewdrag").first.bounding_box()
    centres = page.locator(f"{CHART} .scatterlayer .points path").evaluate_all(
        "ps => ps.map(p => { const r = p.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })")
    x, y = next((x, y) for x, y in centres  # a point outside both boxes (the chart keeps the second)
                if x < area["x"] + 0.55 * area["width"] and y > area["y"] + 0.65 * area["height"])
    page.mouse.click(x, y)
    page.get_by_text(re.compile(r"^1 selected item$")).first.wait_for(timeout=60_000)
    page.get_by_text("nearest neighbours").first.wait_for(timeout=60_000)
    wait_idle(page)
    page.wait_for_function(RING_IDS, timeout=30_000)
    neighbours = page.evaluate(PANEL_IDS)
    assert len(neighbours) == 8
    assert sorted(page.evaluate(RING_IDS)) == sorted(neighbours)
    page.mouse.move(2, 2)
    page.screenshot(path=str(artifacts / "map_reselect_click_neighbours.png"))
    # a box right after the click replaces the clicked item (and its ring goes)
    third = _box(page, 0.05, 0.3, 0.6, 0.9)
    _panel_shows(page, third, artifacts, "box_after_click")
    page.wait_for_function(f"() => !({RING_IDS})()", timeout=30_000)
    page.screenshot(path=str(artifacts / "map_reselect_box_after_click.png"))
    assert_no_traceback(page)


def test_text_hover_card_at_the_right_edge_stays_inside_the_chart(page, app_url, artifacts):
    open_page(page, f"{app_url}/projection?demo=text&n={N}&seed={SEED}")
    page.wait_for_function(HOVER_READY, timeout=30_000)
    points = page.locator(f"{CHART} .scatterlayer .points path")
    points.first.wait_for()
    boxes = points.evaluate_all("ps => ps.map(p => { const r = p.getBoundingClientRect(); "
                                "return [r.x + r.width / 2, r.y + r.height / 2]; })")
    for x, y in sorted(boxes, key=lambda b: -b[0])[:2]:  # the rightmost points, one after the other
        page.mouse.move(x - 8, y)
        page.mouse.move(x, y, steps=4)
        card = page.locator("#dx-hover-card")
        card.wait_for(state="visible", timeout=10_000)
        page.wait_for_function("() => document.querySelector('#dx-hover-card .dx-card-text')", timeout=10_000)
        c = card.bounding_box()
        chart = page.locator(CHART).first.bounding_box()
        width, height = page.evaluate("() => [document.documentElement.clientWidth, "
                                      "document.documentElement.clientHeight]")
        # inside the chart's width and the window, and beside the pointer, not over it
        assert c["x"] >= chart["x"] - 1 and c["x"] + c["width"] <= min(chart["x"] + chart["width"], width) + 1
        assert c["y"] >= 0 and c["y"] + c["height"] <= height + 1
        assert not (c["x"] <= x <= c["x"] + c["width"] and c["y"] <= y <= c["y"] + c["height"])
        assert c["width"] >= 120  # the card keeps its width (it is not squeezed against the edge)
    page.screenshot(path=str(artifacts / "map_reselect_hover_right_edge.png"))
    assert_no_traceback(page)
