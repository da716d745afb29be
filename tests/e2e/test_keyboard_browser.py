"""Issue 27 item 7: q presets and page switching from the keyboard, in headless Chromium.

The keys are Streamlit's own button shortcuts (``st.button(shortcut=...)``): 0, 1, 2 and I set
q; Shift + a page's place in the menu opens it; keys typed into a field stay in the field. Also
screenshots of the item-5 galleries (text cards, molecule cards with their SMILES, Curate's table
with its text column) and of the RND page's default view (item 8).
"""

from __future__ import annotations

import pytest
from test_browser import assert_no_traceback, open_page, wait_idle

pytestmark = pytest.mark.e2e


def _q_in_url(page, value: str) -> None:
    page.wait_for_function(
        f"() => new URLSearchParams(location.search).get('q') === '{value}'", timeout=30_000
    )


def test_keys_set_q_and_switch_pages(page, app_url, artifacts):
    open_page(page, f"{app_url}/?demo=digits&n=200&seed=0")
    headline = page.locator(".dx-headline").first  # the Scores headline's own component (ui.live_q)
    headline.wait_for()
    # the keys belong to buttons: the q presets under the slider, the pages in the keyboard help
    page.locator('[data-testid="stSidebar"] button', has_text="q = 2").first.wait_for()
    page.keyboard.press("2")
    _q_in_url(page, "2")
    wait_idle(page)
    assert "q = 2" in headline.inner_text()
    page.keyboard.press("i")
    _q_in_url(page, "inf")
    wait_idle(page)
    assert "q = ∞" in headline.inner_text()
    page.keyboard.press("Shift+8")  # the eighth page of the menu: Curate
    # the q set by a key survives the next full run (the slider shows it, and sends it back)
    page.wait_for_function("() => location.pathname.endsWith('/curate')", timeout=120_000)
    page.locator('[data-testid="stMain"] h1', has_text="Curate").wait_for(timeout=60_000)
    wait_idle(page, timeout=180_000)
    assert_no_traceback(page)
    assert new_q(page) == "inf"
    # a digit typed into a field is the field's: q stays at infinity
    field = page.get_by_label("Seed (first item, random order)")
    field.click()
    page.keyboard.press("End")
    page.keyboard.press("2")
    page.keyboard.press("Tab")  # the field's new value starts a run; a shortcut would have moved q
    # the run redraws the page: until it ends, the field's stale copy can stand beside the new one
    page.wait_for_function(
        """() => { const f = document.querySelectorAll('input[aria-label="Seed (first item, random order)"]');
                   return f.length === 1 && f[0].value.endsWith('2'); }""", timeout=120_000)
    wait_idle(page)
    # a later run (the URL rewritten) may again draw a stale copy beside the field: read every copy
    seeds = page.evaluate("""() => [...document.querySelectorAll('input[aria-label="Seed (first item, random order)"]')]
                                   .map(f => f.value)""")
    assert new_q(page) == "inf" and seeds and all(v.endswith("2") for v in seeds), seeds
    page.get_by_text("Keyboard shortcuts").click()
    page.get_by_text("q presets:").wait_for()
    page.screenshot(path=str(artifacts / "keyboard_help.png"))


def new_q(page) -> str:
    return page.evaluate("() => new URLSearchParams(location.search).get('q')")


@pytest.mark.parametrize("demo", ["text", "molecules"])
def test_galleries_and_curate_table_show_the_items(page, app_url, artifacts, demo):
    open_page(page, f"{app_url}/curate?demo={demo}&n=200&seed=0", timeout=180_000)
    wait_idle(page, timeout=180_000)
    assert_no_traceback(page)
    cards = page.locator(".dx-card")
    cards.first.wait_for(timeout=60_000)
    # the item itself first, the id second, the full id on hover
    first = cards.first
    main = first.locator(".dx-text" if demo == "text" else ".dx-main")
    assert main.inner_text().strip()
    assert first.get_attribute("title")
    box, ident = main.bounding_box(), first.locator(".dx-id").bounding_box()
    assert box["y"] < ident["y"]
    assert box["x"] + box["width"] <= first.bounding_box()["x"] + first.bounding_box()["width"] + 1  # wrapped
    page.locator('[data-testid="stDataFrame"]').first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"readable_curate_table_{demo}.png"))
    first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"readable_gallery_{demo}.png"))


def test_rnd_default_view_on_digits(page, app_url, artifacts):
    open_page(page, f"{app_url}/rnd?demo=digits")
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "rnd_default_digits.png"))
    assert page.get_by_text("may rank unstructured").count() == 0
    network = page.locator('[data-testid="stSelectbox"]', has_text="Network").first
    shown = network.inner_text() + " ".join(i.input_value() for i in network.locator("input").all())
    assert "MLP on the image pixels" in shown, shown
    # item 6: the training's bar is open (outside its status box), with what it does and the time left
    epochs = page.get_by_label("Epochs", exact=True)
    epochs.fill("200")
    epochs.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Run RND").click()
    bar = page.locator('[data-testid="stProgress"]', has_text="left").first
    bar.wait_for(timeout=120_000)
    assert bar.is_visible() and "Training RND" in bar.inner_text()
    assert bar.locator("xpath=ancestor::details").count() == 0  # not inside the (collapsible) status box
    page.screenshot(path=str(artifacts / "progress_open_rnd.png"))
    page.get_by_role("button", name="Cancel").click()
    wait_idle(page)
