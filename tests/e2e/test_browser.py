"""The real app in headless Chromium: a page link opened on a fresh server, every page, the q
slider, uploads good and bad, an RND run, the Compare page's presentation layout.

Screenshots of each page land in ``test-artifacts/e2e/`` (a CI artifact).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.e2e

PAGES = ["Dataset", "Scores", "Spectrum", "Magnitude", "RND", "Projection", "Compare", "Curate", "Robustness"]


#: True once no script run has been going for a second (Streamlit's running indicator stayed away).
IDLE = """() => {
  const now = performance.now();
  if (document.querySelector('[data-testid="stStatusWidget"]')) { window.__idleSince = null; return false; }
  if (!window.__idleSince) { window.__idleSince = now; }
  return now - window.__idleSince > 1000;
}"""


def wait_idle(page, timeout: float = 90_000) -> None:
    """Wait until the script run finishes (the running indicator gone for a second)."""
    page.evaluate("() => { window.__idleSince = null; }")
    page.wait_for_function(IDLE, timeout=timeout, polling=100)


#: True once no held first run is on the page: a session's first Scores run stops after its headline
#: (``ui.first_paint``, caption "Drawing the settings, ..."), and the browser's report reruns it in full.
NOT_HELD = "() => !document.body.innerText.includes('Drawing the settings, ')"


def open_page(page, url: str, timeout: float = 120_000) -> None:
    """Load ``url`` and wait for its page's title and the end of the script run (and of the rerun
    that draws a held first run in full)."""
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=timeout)
    wait_idle(page, timeout)
    page.wait_for_function(NOT_HELD, timeout=timeout, polling=100)
    wait_idle(page, timeout)


def headline(page) -> tuple[str, str]:
    """(label, value) of the Scores page's q headline: its own component's (``ui.live_q``), or the
    metric the scalable path draws beyond the dense limit (``ui.scalable``)."""
    live = page.locator(".dx-headline")
    metric = page.locator('[data-testid="stMetric"]', has_text="Vendi score (q =")
    live.or_(metric).first.wait_for()
    if live.count():
        return (live.first.locator(".dx-headline-label-text").inner_text(),
                live.first.locator(".dx-headline-value").inner_text())
    label = metric.first.locator('[data-testid="stMetricLabel"]').inner_text()
    value = metric.first.locator('[data-testid="stMetricValue"]').inner_text()
    return label, value


def goto_page(page, title: str) -> None:
    # a nav link's text is its material icon's name, then the title
    page.locator('[data-testid="stSidebarNavLink"]', has_text=re.compile(rf"{re.escape(title)}\s*$")).first.click()
    wait_idle(page)


def assert_no_traceback(page) -> None:
    text = page.locator("body").inner_text()
    assert "Traceback" not in text
    assert page.locator('[data-testid="stException"]').count() == 0


#: True when the sidebar lies on the screen (a collapsed one is moved out of view, left of it).
SIDEBAR_SHOWN = """() => { const r = document.querySelector('[data-testid="stSidebar"]').getBoundingClientRect();
  return r.right > 0 && r.width > 0; }"""


def test_page_url_on_a_fresh_server(page, fresh_app_url, artifacts):
    """A link to a page, opened as the server's first visit, runs app.py (sidebar, navigation) and
    then that page; other page links work the same."""
    open_page(page, f"{fresh_app_url}/spectrum?demo=shapes&q=2")
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().startswith("Spectrum")
    assert page.locator('[data-testid="stSidebarNavLink"]').count() == len(PAGES)
    assert page.locator('[data-testid="stSidebar"]').get_by_text("Settings").first.is_visible()
    assert "/spectrum" in page.url and "demo=shapes" in page.url
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "fresh_server_spectrum.png"), full_page=True)
    goto_page(page, "Scores")
    assert headline(page)[0] == "Vendi score (q = 2)"
    for url_path, title in (("rnd", "RND score"), ("compare", "Compare")):
        open_page(page, f"{fresh_app_url}/{url_path}?demo=shapes")
        assert page.locator('[data-testid="stMain"] h1').first.inner_text().startswith(title)
        assert_no_traceback(page)


def test_every_page_renders(page, app_url, artifacts):
    open_page(page, app_url)
    for title in PAGES:
        goto_page(page, title)
        page.locator('[data-testid="stMain"] h1, [data-testid="stMain"] h2').first.wait_for()
        assert_no_traceback(page)
        page.screenshot(path=str(artifacts / f"page_{title.lower()}.png"), full_page=True)


#: Logs [what, batch] in window.__order as the held first run and its rerun draw: ``batch`` counts the
#: observer's callbacks, so two things drawn in one React commit share it.
ORDER_LOG = r"""
window.__order = [];
const state = {};
let batch = 0;
new MutationObserver(() => {
  batch += 1;
  const now = {
    headline: [...document.querySelectorAll('.dx-headline-label-text')].some(e => e.textContent.includes('Vendi score (q =')),
    widget: !!document.querySelector('[data-testid=stSidebar] [data-testid=stSelectbox]'),
    chart: !!document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot'),
  };
  for (const [k, v] of Object.entries(now)) {
    if (v !== !!state[k]) { window.__order.push([k + (v ? ' on' : ' off'), batch]); state[k] = v; }
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def test_first_paint_shows_the_headline_before_the_sidebar_and_keeps_it(page, app_url, artifacts):
    """Issue 22, cold start: a session's first Scores run draws the headline alone (no sidebar widget,
    no chart); the browser's report reruns it, and the headline stays on the page throughout."""
    page.add_init_script(ORDER_LOG)
    open_page(page, f"{app_url}/?demo=digits")
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.wait_for()
    page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    order = page.evaluate("window.__order")
    first = {what: batch for what, batch in reversed(order)}
    events = [what for what, _ in order]
    # the headline drawn alone first, then the sidebar's widgets and the charts by the rerun
    assert events[0] == "headline on" and first["headline on"] < first["widget on"], order
    assert first["headline on"] < first["chart on"], order
    assert "headline off" not in events, order  # on the page throughout
    page.screenshot(path=str(artifacts / "first_paint_full.png"))
    assert_no_traceback(page)


def test_moving_q_changes_headline(page, app_url, artifacts):
    open_page(page, app_url)
    goto_page(page, "Scores")
    label0, value0 = headline(page)
    assert "q = 1" in label0
    # the slider's keyboard handle is a visually hidden range input, as for a keyboard user
    slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
    slider.focus()
    page.keyboard.press("ArrowRight")
    # the browser draws the next q's headline from the table the page sent (ui.live_q) ...
    page.wait_for_function("() => window.__dxLiveQShown === '1.25'")
    live = headline(page)
    assert live[0] == "Vendi score (q = 1.25)"
    wait_idle(page)
    assert headline(page) == live  # ... and the server's rerun draws the same
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    wait_idle(page)
    label1, value1 = headline(page)
    assert label1 == "Vendi score (q = 1.75)"  # 1 -> 1.25 -> 1.5 -> 1.75
    assert float(value1) < float(value0)  # VS_q is non-increasing in q
    assert "q=1.75" in page.url  # the URL carries the setting (written by the slider's callback)
    # only the q views reran (ui.fragments): the settings line and the per-group bars follow q too
    main = page.locator('[data-testid="stMain"]')
    assert main.get_by_text("q = 1.75").count() >= 1
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

    open_page(page, app_url)
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


def _set_number(page, label: str, value: int) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(str(value))
    field.press("Enter")
    wait_idle(page)


def test_rnd_run_shows_and_keeps_its_result(page, app_url, artifacts):
    """Issue 16: the curves grow, then the result shows (no error) and stays on the next runs."""
    open_page(page, f"{app_url}/rnd?demo=digits&group=all+ten+classes")
    _set_number(page, "Training items per run", 100)
    _set_number(page, "Epochs", 4)
    _set_number(page, "Average the last … epochs", 2)
    _set_number(page, "Runs", 3)
    page.get_by_role("button", name="Run RND").click()
    wait_idle(page, timeout=300_000)
    assert_no_traceback(page)
    score = page.locator('[data-testid="stMetric"]', has_text="RND score").first
    score.wait_for()
    value = score.locator('[data-testid="stMetricValue"]').inner_text()
    page.screenshot(path=str(artifacts / "rnd_result.png"), full_page=True)
    # another run of the script (q moved in the sidebar) shows the stored result, no new training
    slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
    slider.focus()
    page.keyboard.press("ArrowRight")
    wait_idle(page)
    assert_no_traceback(page)
    assert score.locator('[data-testid="stMetricValue"]').inner_text() == value
    assert page.get_by_role("button", name="Run RND").count() == 0


def test_compare_presentation_layout(page, app_url, artifacts):
    """The presentation switch collapses the sidebar and enlarges the type; off, the sidebar returns."""
    open_page(page, f"{app_url}/compare?demo=digits&n=200&seed=1")
    assert page.evaluate(SIDEBAR_SHOWN)
    page.get_by_role("button", name="Run comparison").click()
    wait_idle(page, timeout=300_000)
    assert_no_traceback(page)
    page.get_by_text("Every score, every group").first.wait_for()
    page.screenshot(path=str(artifacts / "compare_result.png"), full_page=True)
    page.get_by_text("Presentation layout (wide, large type)").click()
    wait_idle(page)
    page.wait_for_function(f"() => !({SIDEBAR_SHOWN})()")
    # the table's type grows to 1.35rem (20 px and more) once its rerun has drawn it: waited for, as the
    # cell read right after the layout's rerun can be one the redraw is replacing (font size "" -> NaN)
    page.wait_for_function("() => { const e = document.querySelector('.st-key-cmp_results td');"
                           " return !!e && parseFloat(getComputedStyle(e).fontSize) >= 20; }", timeout=60_000)
    assert_no_traceback(page)
    page.screenshot(path=str(artifacts / "compare_presentation.png"), full_page=True)
    page.get_by_text("Presentation layout (wide, large type)").click()
    wait_idle(page)
    page.wait_for_function(SIDEBAR_SHOWN)
