"""Shared fixtures: an explicit random generator, hypothesis profiles, and the ``requires`` marker.

The core's tests run with ``pip install .`` alone. A test that needs an optional package says so
with ``@pytest.mark.requires("pyarrow")`` (or ``pytest.importorskip(..., reason=...)`` inside it) and
is skipped without it, the reason naming the extra to install; a test module that needs one
throughout skips itself with ``pytest.importorskip`` after its imports (``tests/app/`` does so in
its conftest).
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest
from hypothesis import settings

from diversity_core._optional import EXTRAS

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# AppTest runs the app inside the test process: its jobs run in the script thread unless a test
# starts worker processes itself (tests/app/test_workers_app.py; the browser tests' server has them)
os.environ.setdefault("DIVERSITY_WORKERS", "0")
# and it has no browser to report that a first run was drawn (ui.first_paint): every run draws in full
# (the browser tests' server sets it back to 1)
os.environ.setdefault("DIVERSITY_FIRST_PAINT", "0")


@pytest.fixture(autouse=True, scope="session")
def _result_store_folder(tmp_path_factory):
    """The on-disk result store of this test session: a temporary folder, never the user's cache."""
    folder = tmp_path_factory.mktemp("result-store")
    previous = os.environ.get("DIVERSITY_CACHE_DIR")
    os.environ["DIVERSITY_CACHE_DIR"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("DIVERSITY_CACHE_DIR", None)
    else:
        os.environ["DIVERSITY_CACHE_DIR"] = previous


@pytest.fixture(autouse=True)
def _keep_the_main_module():
    """Give ``__main__`` back after a test: an AppTest run leaves the app's script there
    (Streamlit's script runner installs it), and worker processes started later by
    ``multiprocessing``'s spawn (a Dask LocalCluster in the test process) would run the whole
    app as their ``__main__``, outside a Streamlit runtime."""
    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so every test is reproducible."""
    return np.random.default_rng(20231122)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires(*modules): skipped unless these optional modules are installed (the reason names the extra)"
    )


def pytest_runtest_setup(item):
    for mark in item.iter_markers("requires"):
        for module in mark.args:
            top = module.split(".")[0]
            if importlib.util.find_spec(top) is None:
                extra = EXTRAS.get(top, "all")
                pytest.skip(f"needs {top}: pip install 'diversity-explorer[{extra}]'")
