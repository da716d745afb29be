"""The app makes no request beyond its own server (issue 26, item 15), and shows user text as
typed in a real browser (item 14).

Every request the browser makes is routed: one to 127.0.0.1 or localhost goes on, any other is
recorded and refused. Before the fix each page asked ``fonts.gstatic.com`` for the favicon (the
``:material/diversity_3:`` page icon is drawn from Google's icon server); the app's icon is now a
file of the checkout (``static/favicon.svg``) that Streamlit serves itself. The Material icons of
the navigation come from the font bundled with Streamlit, and the theme uses its bundled fonts.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode, urlparse

import pytest

pytestmark = pytest.mark.e2e

#: The app's pages by URL path (``app.py``'s PAGES).
PAGES = ["dataset", "vendi", "spectrum", "magnitude", "rnd", "projection", "compare", "curate", "robustness"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
#: Seconds to keep listening after a page finished drawing (late fonts, icons, lazy chunks).
SETTLE_S = 3.0


def _is_local(url: str) -> bool:
    return url.startswith(("data:", "blob:")) or urlparse(url).hostname in LOCAL_HOSTS


@pytest.fixture
def recorded(browser):
    """``(page, external)``: a page whose every non-local request is refused and listed."""
    external: list = []
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def route(r) -> None:
        if _is_local(r.request.url):
            r.continue_()
        else:
            external.append(f"{r.request.resource_type} {r.request.url}")
            r.abort()

    context.route("**/*", route)
    # requests the router may not see (a service worker's, a prefetch) are listed too
    context.on("request", lambda req: None if _is_local(req.url) else external.append(f"seen {req.url}"))
    page = context.new_page()
    page.set_default_timeout(120_000)
    yield page, external
    context.close()


def _open(page, url: str) -> None:
    """Load ``url``; wait for the page's title and for Streamlit's running indicator to go."""
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    deadline = time.time() + 120
    quiet_since = None
    while time.time() < deadline:
        running = page.locator('[data-testid="stStatusWidget"]').count() > 0
        quiet_since = None if running else (quiet_since or time.time())
        if quiet_since and time.time() - quiet_since > SETTLE_S:
            return
        time.sleep(0.2)


def test_no_page_requests_anything_beyond_the_server(recorded, app_url):
    page, external = recorded
    for path in PAGES:
        _open(page, f"{app_url}/{path}?demo=digits&n=150&seed=1")
        assert not external, (path, external)
    icons = page.evaluate("() => [...document.querySelectorAll('link[rel~=\"icon\"]')].map(l => l.href)")
    assert icons and all(_is_local(h) for h in icons), icons  # the favicon is the server's own file
    assert page.evaluate("(u) => fetch(u).then(r => r.status)", icons[0]) == 200


def test_user_text_is_shown_as_typed(recorded, app_url):
    """A demo name from a link holding every kind of Streamlit Markdown is shown character for character."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))
    from test_hardening_app import STREAMLIT_MARKDOWN

    page, external = recorded
    typed = " ; ".join(STREAMLIT_MARKDOWN)
    _open(page, f"{app_url}/vendi?{urlencode({'demo': typed})}")
    warning = page.locator('[data-testid="stAlertContentWarning"]', has_text="does not exist").first
    shown = warning.inner_text().replace("\u2060", "")  # the invisible joiners of ui.feedback.literal
    assert f"The link asks for a demo named {typed!r}, which does not exist" in shown, shown
    drawn = warning.locator("img, svg, a, .katex, [data-testid='stIconMaterial'], span[style]")
    assert drawn.count() == 0, [drawn.nth(i).evaluate("e => e.outerHTML") for i in range(drawn.count())]
    assert not external, external
