"""Linked selection in the real browser: a box drawn on the Projection page selects items, its CSV
downloads, "Exclude" reaches the Scores page (the restricted n), and the Curate page loads on a
demo with its table and its selection's CSV download.

Screenshots land in ``test-artifacts/e2e/selection_*.png``.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from test_browser import assert_no_traceback, goto_page, open_page, wait_idle

pytestmark = pytest.mark.e2e

SIDEBAR = '[data-testid="stSidebar"]'
N, SEED = 200, 1


def _selected_count(page) -> int:
    heading = page.get_by_text(re.compile(r"^\d+ selected items?$")).first
    heading.wait_for(timeout=30_000)
    return int(heading.inner_text().split()[0])


def _download(page, label: str) -> bytes:
    with page.expect_download() as info:
        page.get_by_role("button", name=label).click()
    path = info.value.path()
    with open(path, "rb") as fh:
        return fh.read()


def _box_select(page) -> None:
    """Pick the box tool in the chart's toolbar and drag a rectangle over the middle of the map."""
    chart = page.locator(".js-plotly-plot").first
    chart.locator(".scatterlayer .points path").first.wait_for()
    chart.hover()
    chart.locator('.modebar-btn[data-title="Box Select"]').click()
    area = chart.locator(".nsewdrag").first.bounding_box()
    x0, y0 = area["x"] + 0.2 * area["width"], area["y"] + 0.2 * area["height"]
    x1, y1 = area["x"] + 0.6 * area["width"], area["y"] + 0.7 * area["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x1, y1, steps=12)
    page.mouse.up()
    wait_idle(page)


def test_box_selection_downloads_and_exclude_reaches_scores(page, app_url, artifacts):
    open_page(page, f"{app_url}/projection?demo=digits&n={N}&seed={SEED}")
    _box_select(page)
    k = _selected_count(page)
    assert 2 <= k < N - 2
    page.screenshot(path=str(artifacts / "selection_box.png"))
    page.get_by_role("button", name=f"Exclude these {k}").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "selection_box_items.png"))
    # the CSV of the selection: one row per selected item, rows of the loaded demo (1,200 items)
    csv = pd.read_csv(io.BytesIO(_download(page, "Selected items (CSV)")))
    assert list(csv.columns) == ["row", "id", "group"] and len(csv) == k
    assert csv["row"].between(0, 1199).all() and csv["row"].is_unique

    page.get_by_role("button", name=f"Exclude these {k}").click()
    wait_idle(page)
    sidebar = page.locator(SIDEBAR)
    sidebar.get_by_text(f"{k} selected items excluded").first.wait_for(timeout=30_000)
    assert "sel=exclude" in page.url  # a small selection lives in the link
    goto_page(page, "Scores")
    page.get_by_text(f"out of n = {N - k}").first.wait_for(timeout=60_000)
    assert page.get_by_text(f"{k} selected items excluded").count() >= 2  # the sidebar and the page header
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "selection_scores_excluded.png"))
    # the link reopens the same restricted view in a new tab
    other = page.context.new_page()
    open_page(other, page.url)
    other.get_by_text(f"out of n = {N - k}").first.wait_for(timeout=60_000)
    other.close()
    # Clear in the sidebar measures every item again
    sidebar.get_by_role("button", name="Clear selection").click()
    wait_idle(page)
    page.get_by_text(f"out of n = {N}").first.wait_for(timeout=60_000)
    assert "sel=" not in page.url


def test_curate_page_table_and_selection_download(page, app_url, artifacts):
    from diversity_core.curation import select_diverse
    from diversity_core.data import load_demo
    from diversity_core.featurizers import default_kernel, featurize

    n = 150
    open_page(page, f"{app_url}/curate?demo=digits&n={n}&seed={SEED}", timeout=180_000)
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().startswith("Curate")
    # the item table (the near-duplicates' table above it takes no ticks)
    table = page.locator('[class*="st-key-curate_items_table"] [data-testid="stDataFrame"]').first
    table.wait_for(timeout=120_000)
    page.get_by_role("button", name="Selected ids (CSV)").wait_for(timeout=180_000)
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "selection_curate_top.png"))
    table.scroll_into_view_if_needed()
    # tick the first row's box (the grid is drawn on a canvas: a header row, then 35-pixel rows)
    grid = table.bounding_box()
    page.mouse.click(grid["x"] + 17, grid["y"] + 35 + 17)
    wait_idle(page)
    page.get_by_text("1 ticked row").first.wait_for(timeout=30_000)
    assert page.get_by_role("button", name="Exclude these 1").count() == 1
    page.screenshot(path=str(artifacts / "selection_curate_table.png"))

    csv = pd.read_csv(io.BytesIO(_download(page, "Selected ids (CSV)")))
    ds = load_demo("digits")
    rows = np.sort(np.random.default_rng(SEED).choice(ds.n, size=n, replace=False))
    sub = ds.subset(rows)
    expected = select_diverse(featurize(sub), 50, kernel=default_kernel("default", dataset=ds), method="greedy", rng=0)
    assert list(csv["item"]) == expected.indices.tolist()
    assert list(csv["id"].astype(str)) == [sub.ids[i] for i in expected.indices]
    # the items themselves: a zip of the 50 images as PNG files named by id (a demo has no original files)
    import zipfile

    with zipfile.ZipFile(io.BytesIO(_download(page, "Selected items (.zip)"))) as zf:
        names = zf.namelist()
    assert len(set(names)) == 50 and all(n.endswith(".png") and not n.endswith(".png.png") for n in names)

    # "Keep only these 50" sends the selection to every page
    button = page.get_by_role("button", name="Keep only these 50").last
    button.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "selection_curate_subset.png"))
    button.click()
    wait_idle(page)
    page.locator(SIDEBAR).get_by_text("Restricted to 50 selected items").first.wait_for(timeout=60_000)
    goto_page(page, "Scores")
    page.get_by_text("out of n = 50").first.wait_for(timeout=60_000)
    assert_no_traceback(page)
