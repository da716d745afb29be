"""AppTest fixtures for the multipage app.

``AppTest`` re-creates Streamlit's pages manager before every run, which then sees the
``pages/`` folder and runs the requested page file alone (the legacy multipage mode) instead of
``app.py``; the real server leaves that mode for good on its first run, when ``app.py`` calls
``st.navigation``. The ``app`` fixture puts every test run in the server's steady state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _navigation_mode(monkeypatch):
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(ROOT)
