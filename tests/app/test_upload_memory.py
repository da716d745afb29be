"""Issue 40 item 10: the server's memory stays bounded however many distinct files are uploaded.

A working view or a search result that *is* the loaded upload was counted as almost nothing by
the byte-bounded pools (its arrays were "the call's argument"), so every upload stayed in the
"data" pool, past its session's end. Now a pool counts every buffer its entries keep alive, and
what an upload alone made goes when its session ends (``ui.cache.end_session``, called by
Streamlit through a session-scoped resource when the session disconnects).
"""

from __future__ import annotations

import gc
import io
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from diversity_core.data import Dataset
from ui import cache
from ui.cache import ENTRY_OVERHEAD, SharedCache, shared_cache
from ui.data.uploads import from_upload

APP = str(Path(__file__).resolve().parents[2] / "app.py")
#: The session id of every AppTest run (streamlit.testing.v1.local_script_runner).
APPTEST_SESSION = "test session id"


def _upload(i: int, n: int = 200, d: int = 16) -> Dataset:
    X = np.random.default_rng(i).normal(size=(n, d))
    return Dataset(name=f"u{i}.npy", modality="embeddings", items=None, features=X, groups=None, weights=None,
                   ids=[f"row {j + 1}" for j in range(n)], source=f"upload:u{i}.npy")


@pytest.fixture
def fresh_pools():
    cache.clear_caches()
    yield
    cache.clear_caches()


def test_an_entry_that_is_its_argument_counts_what_it_keeps_alive(fresh_pools, monkeypatch):
    """N distinct uploads through a wrapper returning its argument (as the working view does): bounded."""
    limit = 4 * (200 * 16 * 8) + 8 * ENTRY_OVERHEAD + 40_000
    c = SharedCache("t", max_bytes=limit)
    monkeypatch.setattr(cache, "pool", lambda name: c)

    @shared_cache("data", hash_funcs={Dataset: lambda d: d.content_hash})
    def view(full: Dataset, groups=None) -> dict:
        return {"full": full, "groups": groups}

    for i in range(20):
        ds = _upload(i)
        assert view(ds)["full"] is ds
        del ds  # the session moves on to its next upload: only the cache holds the old one
        info = c.info()
        assert info["bytes"] <= info["limit_bytes"]
    # each entry counts its dataset: the pool keeps a few, not twenty (it kept all at ~1 KiB each)
    assert 2 <= c.info()["entries"] <= 5
    assert c.info()["bytes"] >= c.info()["entries"] * 200 * 16 * 8
    gc.collect()
    alive = [o for o in gc.get_objects() if type(o) is Dataset and o.source.startswith("upload:u")]
    assert len(alive) == c.info()["entries"]


def test_shared_buffers_count_once_and_leave_with_their_last_entry():
    c = SharedCache("t", max_bytes=1 << 20)
    X = np.zeros(10_000)  # 80,000 bytes
    c.put("a", {"x": X})
    one = c.info()["bytes"]
    c.put("b", (X[:10], X[5:]))  # views of X: X is already counted
    assert c.info()["bytes"] - one < 1024
    c.clear("x")  # no such prefix: nothing goes
    assert c.info()["entries"] == 2
    c.put("a", None)
    assert c.info()["bytes"] > 80_000  # "b" still keeps X alive
    c.put("b", None)
    assert c.info()["bytes"] < 2 * ENTRY_OVERHEAD + 1024


def test_a_finished_session_frees_what_its_uploads_made(fresh_pools, monkeypatch):
    current = {"sid": "s1"}
    monkeypatch.setattr(cache, "session_id", lambda: current["sid"])

    @shared_cache("data", hash_funcs={Dataset: lambda d: d.content_hash})
    def view(full: Dataset) -> dict:
        return {"full": full, "n": full.n}

    @shared_cache("data")
    def demo(name: str) -> np.ndarray:
        return np.ones(1000)

    demo("digits")
    for i in range(3):
        view(_upload(i))
    shared = _upload(99)
    view(shared)
    current["sid"] = "s2"
    view(shared)  # another session uses the same content: it stays for that one
    demo("digits")
    assert cache.pool("data").info()["entries"] == 5
    assert cache.end_session("s1") == 3
    assert cache.pool("data").info()["entries"] == 2  # the demo (shared by design) and the upload s2 uses
    assert cache.end_session("s2") == 1
    info = cache.pool("data").info()
    assert info["entries"] == 1 and info["bytes"] < 8000 + 2 * ENTRY_OVERHEAD


def test_from_upload_names_datasets_views_and_search_results():
    from ui.data.search import Searched

    up = _upload(1)
    assert from_upload(up) and from_upload(Searched(up)) and not from_upload("upload:x")
    assert not from_upload(Dataset(name="d", modality="embeddings", items=None, features=np.zeros((2, 2)), groups=None,
                                   weights=None, ids=["a", "b"], source="demo:digits"))


def _csv(i: int, rows: int = 120, cols: int = 6) -> bytes:
    X = np.random.default_rng(500 + i).normal(size=(rows, cols))
    out = io.StringIO()
    np.savetxt(out, X, delimiter=",", header=",".join(f"f{j}" for j in range(cols)), comments="", fmt="%.10g")
    return out.getvalue().encode()


def test_uploads_in_the_app_stay_bounded_and_go_with_their_session(fresh_pools):
    from streamlit.runtime.caching import clear_session_resource_cache

    # every AppTest of a process has the same session id: release the token an earlier app test of
    # this process left (a server gives each session its own id, so this is the tests' concern only)
    clear_session_resource_cache(APPTEST_SESSION)
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    if not [r for r in at.sidebar.radio if r.key == "source"]:
        at.run()  # a first Scores run holds the sidebar (ui.first_paint)
    at.sidebar.radio(key="source").set_value("Upload").run()
    for i in range(3):
        at.sidebar.file_uploader(key="upload").upload(f"u{i}.csv", _csv(i)).run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state["dataset"].name == f"u{i}.csv"
    pools = cache.cache_info()
    assert all(p["bytes"] <= p["limit_bytes"] for p in pools.values())
    # the data pool counts the uploads its views keep alive (their features, 120 x 6 float64 each)
    assert pools["data"]["bytes"] >= 3 * 120 * 6 * 8

    def upload_entries() -> int:
        return sum(from_upload(v) or (isinstance(v, dict) and any(from_upload(x) for x in v.values()))
                   for name in cache.cache_info() for v in cache.pool(name).values())

    assert upload_entries() >= 3
    # the session disconnects: Streamlit releases its session-scoped resources (what the server does)
    clear_session_resource_cache(APPTEST_SESSION)
    assert upload_entries() == 0
    assert "dataset" not in at.session_state
    del at
    gc.collect()
    # only the last run's page namespace (its ``ctx``) may still name the last upload: AppTest keeps
    # it; a server drops it with the session's script runner
    alive = [o.name for o in gc.get_objects() if type(o) is Dataset and o.source.startswith("upload:")]
    assert set(alive) <= {"u2.csv"}, alive
