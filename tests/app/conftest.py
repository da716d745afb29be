"""AppTest fixtures: tests run from the repository root, offline.

The pages live in ``app_pages/``, so ``AppTest.from_file("app.py")`` runs like the real server:
``app.py`` on every run, the page through its ``st.navigation``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# the app's tests need the app: without streamlit (``pip install 'diversity-explorer[app]'``) the
# whole folder is skipped, with this reason in the summary, instead of failing to collect
pytest.importorskip("streamlit", reason="the app tests need streamlit (extra [app])")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(ROOT)
