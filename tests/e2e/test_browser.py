"""The real app in headless Chromium: every page, the q slider, uploads good and bad.

Screenshots of each page land in ``test-artifacts/e2e/`` (a CI artifact).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

PAGES = ["Dataset", "Scores", "Spectrum", "Magnitude", "RND", "Projection", "Compare"]


def wait_idle(page, timeout: float = 90_000) -> None:
    """Wait until the script run finishes (Streamlit's running indicator is gone)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout
    )
    page.wait_for_timeout(300)


def headline(page) -> tuple[str, str]:
    """(label, value) of the Scores page's headline metric."""
    metric = page.locator('[data-testid="stMetric"]', has_text="Vendi score (q =").first
    metric.wait_for()
    label = metric.locator('[data-testid="stMetricLabel"]').inner_text()
    value = metric.locator('[data-testid="stMetricValue"]').inner_text()
    return label, value


def goto_page(page, title: str) -> None:
    # a nav link's text is its material icon's name, then the title
    page.locator('[data-testid="stSidebarNavLink"]', has_text=re.compile(rf"{re.escape(title)}\s*$")).first.click()
    wait_idle(page)


def assert_no_traceback(page) -> None:
    text = page.locator("body").inner_text()
    assert "Traceback" not in text
    assert page.locator('[data-testid="stException"]').count() == 0


def test_every_page_renders(page, app_url, artifacts):
    page.goto(app_url)
    wait_idle(page)
    for title in PAGES:
        goto_page(page, title)
        page.locator('[data-testid="stMain"] h1, [data-testid="stMain"] h2').first.wait_for()
        assert_no_traceback(page)
        page.screenshot(path=str(artifacts / f"page_{title.lower()}.png"), full_page=True)


def test_moving_q_changes_headline(page, app_url, artifacts):
    page.goto(app_url)
    wait_idle(page)
    goto_page(page, "Scores")
    label0, value0 = headline(page)
    assert "q = 1" in label0
    # the slider's keyboard handle is a visually hidden range input, as for a keyboard user
    slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
    slider.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_idle(page)
    label1, value1 = headline(page)
    assert label1 != label0
    assert float(value1) < float(value0)  # VS_q is non-increasing in q
    assert "q=" in page.url  # the URL carries the setting
    page.screenshot(path=str(artifacts / "scores_after_q.png"), full_page=True)
    # the chosen q survives a round trip through other pages
    goto_page(page, "Spectrum")
    goto_page(page, "Scores")
    assert headline(page) == (label1, value1)


def _choose_upload(page) -> None:
    page.locator('[data-testid="stSidebar"]').get_by_text("Upload", exact=True).click()
    wait_idle(page)


def test_upload_embeddings_then_bad_file(page, app_url, tmp_path, artifacts):
    X = np.random.default_rng(0).standard_normal((50, 6))
    good = tmp_path / "small_embeddings.npy"
    np.save(good, X)
    bad = tmp_path / "broken.npy"
    bad.write_bytes(b"\x93NUMPY this is not an array")

    page.goto(app_url)
    wait_idle(page)
    goto_page(page, "Scores")
    _choose_upload(page)
    page.locator('[data-testid="stSidebar"] input[type="file"]').set_input_files(str(good))
    wait_idle(page)
    page.get_by_text("small_embeddings").first.wait_for()
    label, value = headline(page)
    import diversity_core as dc

    assert float(value) == pytest.approx(dc.vendi_score(X, q=1.0), abs=0.006)
    page.screenshot(path=str(artifacts / "upload_good.png"), full_page=True)

    page.locator('[data-testid="stSidebar"] input[type="file"]').set_input_files(str(bad))
    wait_idle(page)
    error = page.locator('[data-testid="stMain"] [data-testid="stAlert"]', has_text="broken.npy").first
    error.wait_for()
    assert "broken.npy" in error.inner_text()
    assert_no_traceback(page)
    # the previous dataset stays loaded and scored
    assert page.get_by_text("small_embeddings").first.is_visible()
    page.screenshot(path=str(artifacts / "upload_bad.png"), full_page=True)
