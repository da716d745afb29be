"""Beyond the dense limit in the real app (issue 12): a server whose memory budget (20 MB) is below
the dense path of the digits demo under the rbf kernel shows the scalable path's badge, then the
guaranteed band in the q-profile. The screenshot lands in ``test-artifacts/e2e/scalable_scores.png``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from test_browser import assert_no_traceback, headline, open_page

pytestmark = pytest.mark.e2e

_spec = importlib.util.spec_from_file_location("_e2e_conftest", Path(__file__).with_name("conftest.py"))
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)


@pytest.fixture(scope="module")
def small_budget_url():
    """The app served with DIVERSITY_MEMORY_BUDGET=20M (the 1200-item dense path needs 58 MB)."""
    old = os.environ.get("DIVERSITY_MEMORY_BUDGET")
    os.environ["DIVERSITY_MEMORY_BUDGET"] = "20M"
    try:
        with _conftest._server("streamlit_scalable.log") as url:
            yield url
    finally:
        if old is None:
            os.environ.pop("DIVERSITY_MEMORY_BUDGET", None)
        else:
            os.environ["DIVERSITY_MEMORY_BUDGET"] = old


def test_badge_then_band_beyond_the_dense_limit(browser, small_budget_url, artifacts):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:"))
                  else route.abort())
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, f"{small_budget_url}/?demo=digits&kernel=rbf")  # the Scores page is the default
        main = page.locator('[data-testid="stMain"]')
        main.get_by_text("Scalable path: n = 1200 is beyond the dense limit").first.wait_for()
        assert headline(page)[0] == "Vendi score (q = 1)"
        # the live panel redraws as results arrive: the band from the top-k eigenvalues replaces the first look
        main.get_by_text("Bounds from the top").first.wait_for(timeout=180_000)
        value = headline(page)[1]
        # the SLQ estimate of the full-sample value with its half-width (issue 23), a guaranteed interval,
        # or one exact number
        assert (value.startswith("≈") and "±" in value) or "–" in value or value.replace(".", "").isdigit(), value
        page.locator('[data-testid="stPlotlyChart"]').first.get_by_text("guaranteed bounds").first.wait_for()
        assert_no_traceback(page)
        page.screenshot(path=str(artifacts / "scalable_scores.png"), full_page=True)
        # Stop ends the refinement and keeps the band
        stop = main.get_by_role("button", name="Stop")
        if stop.count():
            stop.first.click()
            main.get_by_text("Refinement stopped").first.wait_for(timeout=120_000)
        else:
            main.get_by_text("Refinement done").first.wait_for()
        main.get_by_text("Bounds from the top").first.wait_for()
        assert_no_traceback(page)
    finally:
        context.close()
