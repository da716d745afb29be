"""Fixtures that start the real app and drive it in Debian's headless Chromium (DESIGN §4).

The browser tests fail, never skip, when Chromium or Playwright is missing: the README's test
command installs both.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts" / "e2e"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Folder for screenshots (kept as CI artifacts)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextlib.contextmanager
def _server(log_name: str) -> Iterator[str]:
    """Run the app's server as ``diversity app`` does (``python -m ui.serve app.py``: ``streamlit run``
    with the first page's modules preloaded) on a free loopback port; yield its URL once it answers."""
    port = _free_port()
    log = ARTIFACTS / log_name
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # the real server runs its heavy jobs on worker processes, as `diversity app` does
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
           "DIVERSITY_WORKERS": "auto", "DIVERSITY_FIRST_PAINT": "1"}
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ui.serve", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited early with code {proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail(f"streamlit did not answer on {url} within 120 s; see {log}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def app_url():
    """The app served once for the session's tests."""
    with _server("streamlit.log") as url:
        yield url


@pytest.fixture
def fresh_app_url():
    """A server of its own whose first visitor has not arrived yet (a link opened cold)."""
    with _server("streamlit_fresh.log") as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium driven by Playwright (fails, does not skip, when missing).

    Module-scoped: Playwright's sync API runs an event loop while open, and other test modules
    (the report's browser test) start their own.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's 'chromium' package (dev.py test does).")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed; pip install -e '.[test]' (dev.py test does).")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh browser page with a desktop-sized viewport; non-loopback requests are blocked."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:"))
                  else route.abort())
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()
