"""Compare in the real browser on categorical data with many small groups (issue 41 item 5): 30
chemical classes, 3 singletons and 14 classes under 10 items. The page opens on n = 10 with the 14
small classes left out and listed, and the comparison runs without one change by hand.

Screenshot: ``test-artifacts/e2e/compare_small_groups.png``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_browser import assert_no_traceback, goto_page, open_page, wait_idle

pytestmark = pytest.mark.e2e

#: 3 singletons, 14 classes under 10 items in all, 16 of 10 items or more.
SIZES = [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7] + [10, 11, 12, 14, 15, 18, 20, 22, 25, 30, 35, 40, 45, 50, 60, 80]
RESULTS = ".st-key-cmp_results"


def _classes_csv(path):
    rng = np.random.default_rng(41)
    lines = ["f1,f2,f3,f4,chemical_class"]
    for i, size in enumerate(SIZES):
        for row in rng.normal(size=(size, 4)):
            lines.append(",".join(f"{v:.5f}" for v in row) + f",class {i:02d}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_leaves_out_the_small_classes_and_runs(page, app_url, tmp_path, artifacts):
    table = _classes_csv(tmp_path / "chemical_classes.csv")
    # few subsets and no magnitude: the test is about the groups, not the scores' cost
    open_page(page, f"{app_url}/compare?cmp_magnitude=false&cmp_qs=1&cmp_nsub=2&cmp_nres=3")
    page.locator('[data-testid="stSidebar"]').get_by_text("Upload", exact=True).click()
    wait_idle(page)
    page.locator('[data-testid="stSidebar"] input[type="file"]').set_input_files(str(table))
    wait_idle(page)
    goto_page(page, "Compare")
    main = page.locator('[data-testid="stMain"]')
    note = main.locator('[data-testid="stAlert"]', has_text="Left out 14 groups with fewer than n = 10 items").first
    note.wait_for()
    text = note.inner_text()
    assert "class 00 (1)" in text and "class 13 (7)" in text and "class 14" not in text
    assert page.get_by_label("Items per group n", exact=True).input_value() == "10"
    page.get_by_role("button", name="Run comparison").click()
    results = page.locator(RESULTS)
    results.get_by_text("Every score, every group").first.wait_for(timeout=300_000)
    wait_idle(page, timeout=300_000)
    assert_no_traceback(page)
    assert main.locator('[data-testid="stAlert"][data-baseweb="notification"]',
                        has_text=re.compile("needs at least")).count() == 0
    body = results.inner_text()
    assert "n = 10 items per group" in body and "Left out 14 groups" in body
    # the tables are canvases: the settings line names the group that set n
    assert "n = 10 items per group (smallest group (class 14))" in body
    page.set_viewport_size({"width": 1400, "height": 1800})
    wait_idle(page)
    page.screenshot(path=str(artifacts / "compare_small_groups.png"), full_page=True)
