"""Issue 16 in the real browser: behaviours only the frontend shows (tag clicks, the URL the
browser keeps, point clicks, a cancel during a run, the presentation view at projector sizes).

Screenshots land in ``test-artifacts/e2e/meeting_*.png``.
"""

from __future__ import annotations

import contextlib
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from test_browser import assert_no_traceback, goto_page, open_page, wait_idle

pytestmark = pytest.mark.e2e

SIDEBAR = '[data-testid="stSidebar"]'


def test_group_filter_takes_two_tag_clicks_in_a_row(page, app_url, artifacts):
    """Item 3: the second tag's x answered only after a click elsewhere (ui.sidebar.render_sidebar
    says why the filter sits high)."""
    open_page(page, f"{app_url}/?demo=digits")
    sidebar = page.locator(SIDEBAR)
    # the tags are drawn once the sidebar's script run reaches the filter: wait for all four
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stSidebar\"] button[aria-label^=\"Remove \"]')"
        ".length === 4", timeout=30_000)
    removes = sidebar.get_by_role("button", name=re.compile(r"^Remove "))
    assert removes.count() == 4
    # two x clicks in a row, without waiting for the run in between or clicking elsewhere
    sidebar.get_by_role("button", name="Remove all ten classes").click()
    sidebar.get_by_role("button", name="Remove mode dropping (classes 0-2)").click(timeout=10_000)
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stSidebar\"] button[aria-label^=\"Remove \"]')"
        ".length === 2", timeout=15_000)
    assert "group=" in page.url
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "meeting_groups.png"), full_page=True)


@pytest.mark.parametrize("demo", ["digits", "text", "shapes"])
def test_group_tags_show_whole_names(page, app_url, artifacts, demo):
    """Item 17: no group tag is cut (an ellipsis mid-word); every tag is visible in its box."""
    open_page(page, f"{app_url}/?demo={demo}")
    tags = page.locator(f"{SIDEBAR} [data-tag] > span[title]")
    # wait for the group widget's tags: the first run's URL rewrite starts another run, and on a server
    # that has served other tests the page can be idle for a moment before the sidebar is drawn again
    tags.nth(3).wait_for(timeout=60_000)
    assert tags.count() >= 4
    cut_tags = ("els => els.filter(e => e.scrollWidth > e.clientWidth + 1"
                " || getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth)"
                ".map(e => e.title)")
    # the tags are measured once the sidebar's layout has settled: drawn during a run, they can
    # be laid out in a narrower box for a moment (seen once in CI on a busy machine)
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_function(f"() => ({cut_tags})([...document.querySelectorAll("
                               f"'{SIDEBAR} [data-tag] > span[title]')]).length === 0", timeout=30_000)
    cut = tags.evaluate_all(cut_tags)
    assert cut == [], cut
    # the box grows with its tags: the last tag lies inside it, not scrolled away
    hidden = tags.evaluate_all("els => els.filter(e => { const r = e.getBoundingClientRect();"
                               " const box = e.closest('.react-aria-ComboBox').getBoundingClientRect();"
                               " return r.bottom > box.bottom + 1; }).map(e => e.title)")
    assert hidden == [], hidden
    page.locator(SIDEBAR).screenshot(path=str(artifacts / f"meeting_group_tags_{demo}.png"))


def _slider_value(page, label: str) -> str:
    return page.locator('[data-testid="stSlider"]', has_text=label).first.locator(
        'input[type="range"]').first.get_attribute("value")


def test_page_widgets_live_in_the_link_and_across_pages(page, app_url, artifacts):
    """Item 5: eigenvectors and heatmap sort survive a page change, and a copied link reopens them."""
    open_page(page, f"{app_url}/spectrum?demo=digits")
    handle = page.get_by_role("slider", name="Eigenvectors").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    page.get_by_text("top eigenvector", exact=True).click()
    wait_idle(page)
    # both choices in the link before it is copied (the radio's rerun can end after the slider's)
    page.wait_for_function("() => location.search.includes('spectrum_k=5')"
                           " && /heatmap_sort=top/.test(location.search)", timeout=30_000)
    goto_page(page, "Scores")
    goto_page(page, "Spectrum")
    assert _slider_value(page, "Eigenvectors") == "5"
    copied = page.url
    other = page.context.new_page()
    open_page(other, copied)
    assert _slider_value(other, "Eigenvectors") == "5"
    assert other.get_by_role("radio", name="top eigenvector").is_checked()
    other.screenshot(path=str(artifacts / "meeting_link_spectrum.png"), full_page=True)
    other.close()


def test_projection_click_selects_and_colour_keeps_it(page, app_url, artifacts):
    """Item 12: a click on a point shows that item; changing "colour by" keeps the selection."""
    open_page(page, f"{app_url}/projection?demo=digits&n=200&seed=1")
    point = page.locator(".js-plotly-plot .scatterlayer .points path").first
    point.wait_for()
    box = point.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wait_idle(page)
    page.get_by_text(re.compile(r"^1 selected item")).first.wait_for(timeout=20_000)
    page.screenshot(path=str(artifacts / "meeting_projection_click.png"), full_page=True)
    page.get_by_label("Colour by").first.click()
    page.get_by_role("option", name="eigenvector 1", exact=True).click()
    wait_idle(page)
    assert page.get_by_text(re.compile(r"^1 selected item")).count() >= 1
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "meeting_projection_click_recoloured.png"), full_page=True)


def test_cancel_stops_a_long_task(page, app_url, artifacts):
    """Item 18: every long task has a Cancel button; pressing it stops the work and keeps nothing."""
    open_page(page, f"{app_url}/rnd?demo=digits&group=all+ten+classes&rnd_epochs=500&rnd_runs=100&rnd_arch=mlp")
    page.get_by_role("button", name="Run RND").click()
    cancel = page.get_by_role("button", name=re.compile("Cancel"))
    cancel.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    cancel.click()
    page.get_by_text("Cancelled: nothing was kept").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stMetric"]', has_text="RND score").count() == 0
    assert page.get_by_role("button", name="Run RND").count() == 1
    page.screenshot(path=str(artifacts / "meeting_cancelled.png"), full_page=True)


@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080)])
def test_presentation_opens_on_results(browser, app_url, artifacts, width, height):
    """Item 16: a link with the presentation mode opens on the headline comparison (no click),
    with large chart type and only the resolved pairs; the mode stays in the link."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, f"{app_url}/compare?demo=digits&n=200&seed=1&cmp_presentation=true&cmp_magnitude=false"
                        "&cmp_nsub=5&cmp_nres=5", timeout=300_000)
        page.get_by_text("most to least diverse").first.wait_for(timeout=300_000)
        wait_idle(page, timeout=300_000)
        assert_no_traceback(page)
        assert page.get_by_role("button", name="Run comparison").is_visible() is False  # the form is folded
        assert "cmp_presentation=true" in page.url
        tick = page.locator(".js-plotly-plot .xtick text").first
        tick.wait_for()
        assert float(tick.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 20
        page.screenshot(path=str(artifacts / f"meeting_presentation_{width}x{height}.png"))
        page.screenshot(path=str(artifacts / f"meeting_presentation_{width}x{height}_full.png"), full_page=True)
    finally:
        context.close()
