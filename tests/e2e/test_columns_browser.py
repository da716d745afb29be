"""The sidebar's column options in the real browser (issue 41 item 7): two CSV files one after the
other, each with its own group column. The boxes offer each file's columns with the detected one
chosen, and the second file loads without "no column named 'section'" (before: the first file's
column carried over, typed into free-text boxes that stayed blank when a column was detected).

Screenshot: ``test-artifacts/issue41/column_options.png``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT
from playwright.sync_api import expect
from test_browser import assert_no_traceback, open_page, wait_idle

pytestmark = pytest.mark.e2e
SIDEBAR = '[data-testid="stSidebar"]'


def _csv(path, group: str, names: list, seed: int):
    rng = np.random.default_rng(seed)
    lines = [f"f1,f2,f3,{group}"]
    for name in names:
        for row in rng.normal(size=(15, 3)):
            lines.append(",".join(f"{v:.5f}" for v in row) + f",{name}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _box(page, label: str):
    return page.locator(f'{SIDEBAR} [data-testid="stSelectbox"]', has_text=label).first


def test_each_file_gets_its_own_columns(page, app_url, tmp_path):
    first = _csv(tmp_path / "packages.csv", "section", ["net", "math", "text"], seed=1)
    second = _csv(tmp_path / "sprites.csv", "faction", ["elves", "orcs"], seed=2)
    open_page(page, app_url)
    sidebar = page.locator(SIDEBAR)
    sidebar.get_by_text("Upload", exact=True).click()
    wait_idle(page)
    sidebar.locator('input[type="file"]').set_input_files(str(first))
    wait_idle(page)
    sidebar.get_by_text("Column options", exact=True).click()
    expect(_box(page, "Group column").locator("input")).to_have_value("section")
    # the detected column is chosen; the list offers this file's columns
    _box(page, "Group column").locator("input").click()
    page.get_by_role("option", name="section", exact=True).wait_for()
    assert page.get_by_role("option").all_inner_texts() == ["f1", "f2", "f3", "section"]
    page.keyboard.press("Escape")
    # the next file: remove the first, upload the second
    sidebar.locator('[data-testid="stFileChipDeleteBtn"]').first.click()
    wait_idle(page)
    sidebar.locator('input[type="file"]').set_input_files(str(second))
    wait_idle(page)
    expect(_box(page, "Group column").locator("input")).to_have_value("faction", timeout=60_000)
    sidebar.get_by_text("2 groups", exact=False).first.wait_for()
    assert_no_traceback(page)
    assert "no column named" not in page.locator("body").inner_text()
    assert "Loading failed" not in sidebar.inner_text()
    expect(_box(page, "Weight column").locator("input")).to_have_value("none")
    out = ROOT / "test-artifacts" / "issue41"
    out.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out / "column_options.png"), full_page=True)
