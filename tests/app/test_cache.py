"""The app's shared caches (ui/cache.py): bounded in bytes, one computation per key, read-only results."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from diversity_core._config import config_context
from ui import cache
from ui.cache import ENTRY_OVERHEAD, SharedCache, nbytes, shared_cache


@dataclass(frozen=True)
class Result:
    values: np.ndarray
    extra: dict


def _array(kib: int, fill: float = 0.0) -> np.ndarray:
    return np.full(kib * 128, fill)  # 128 float64 = 1 KiB


# ------------------------------------------------------------------------------------------
# sizes
# ------------------------------------------------------------------------------------------
def test_nbytes_measures_arrays_sparse_frames_bytes_and_dataclasses():
    X = np.zeros((10, 7), dtype=np.float32)
    assert nbytes(X) == 280
    S = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    assert nbytes(S) == S.data.nbytes + S.indices.nbytes + S.indptr.nbytes
    df = pd.DataFrame({"a": np.arange(1000), "b": ["x" * 20] * 1000})
    assert nbytes(df) == int(df.memory_usage(deep=True).sum())
    assert nbytes(b"\x00" * 5000) == 5000
    r = Result(values=_array(8), extra={"K": _array(4), "labels": ["a", "b"]})
    assert 12 * 1024 <= nbytes(r) < 13 * 1024
    # an array held twice counts once; a view of a counted array counts nothing more
    a = _array(16)
    assert nbytes((a, a, a[:100])) < 17 * 1024


def test_nbytes_leaves_out_what_the_arguments_hold():
    full = _array(64)
    assert nbytes({"data": full, "n": 3}, exclude=(full,)) < 1024
    assert nbytes(Result(values=full[::2], extra={}), exclude=(Result(full, {}),)) < 1024
    assert nbytes(Result(values=full.copy(), extra={}), exclude=(full,)) >= 64 * 1024


# ------------------------------------------------------------------------------------------
# the bound in bytes
# ------------------------------------------------------------------------------------------
def test_bytes_bound_evicts_least_recently_used():
    c = SharedCache("t", max_bytes=3 * (8 * 1024 + ENTRY_OVERHEAD) + 100)
    for i in range(3):
        c.put(i, _array(8, i))
    assert c.info()["entries"] == 3
    assert c.get(0) is not None  # 0 is now the most recent: 1 goes first
    c.put(3, _array(8, 3))
    assert 1 not in c and all(k in c for k in (0, 2, 3))
    info = c.info()
    assert info["bytes"] <= info["limit_bytes"]


def test_oversize_value_is_returned_but_not_kept():
    c = SharedCache("t", max_bytes=16 * 1024)
    calls = []

    def big():
        calls.append(1)
        return _array(64, 7.0)

    out = c.get_or_compute("big", big)
    assert out.shape == (64 * 128,) and out[0] == 7.0
    assert "big" not in c and c.info()["entries"] == 0
    c.get_or_compute("big", big)
    assert len(calls) == 2  # not cached: computed again


def test_pool_follows_the_memory_budget():
    c = SharedCache("t", share=0.5)
    with config_context(memory_budget=1 << 20):
        for i in range(3):
            c.put(i, _array(256, i))  # 256 KiB each, pool of 512 KiB
        assert c.info()["limit_bytes"] == 1 << 19
        assert c.info()["entries"] == 1
    with config_context(memory_budget=1 << 30):
        c.put(3, _array(256))
        assert c.info()["entries"] == 2


def test_max_entries_also_bounds():
    c = SharedCache("t", max_bytes=1 << 30, max_entries=2)
    for i in range(4):
        c.put(i, i)
    assert c.info()["entries"] == 2 and 3 in c and 2 in c


# ------------------------------------------------------------------------------------------
# one computation per key
# ------------------------------------------------------------------------------------------
def test_concurrent_same_key_computes_once():
    c = SharedCache("t", max_bytes=1 << 24)
    calls = []
    gate = threading.Event()

    def slow():
        calls.append(1)
        gate.wait(5)
        return _array(4, 3.0)

    out: list = []
    threads = [threading.Thread(target=lambda: out.append(c.get_or_compute("k", slow))) for _ in range(8)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join(10)
    assert len(calls) == 1
    assert len(out) == 8 and all(o is out[0] for o in out)


def test_concurrent_different_keys_run_in_parallel():
    """A slow key does not hold up another key (the pool's lock is not held while computing)."""
    c = SharedCache("t", max_bytes=1 << 24)
    gate = threading.Event()
    slow = threading.Thread(target=lambda: c.get_or_compute("slow", lambda: gate.wait(5)))
    slow.start()
    assert c.get_or_compute("fast", lambda: 42) == 42
    gate.set()
    slow.join(10)


def test_error_reaches_every_waiter_and_is_not_cached():
    c = SharedCache("t", max_bytes=1 << 24)
    calls = []
    gate = threading.Event()

    def fails():
        calls.append(1)
        gate.wait(5)
        raise ValueError("bad input")

    errors: list = []

    def ask():
        try:
            c.get_or_compute("k", fails)
        except ValueError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join(10)
    assert errors == ["bad input"] * 4 and len(calls) == 1
    assert c.get_or_compute("k", lambda: 5) == 5  # the failure was not kept


def test_stopped_first_caller_hands_over_to_a_waiter():
    """A rerun stops the computing session (a BaseException): a waiting session computes instead."""

    class Stop(BaseException):
        pass

    c = SharedCache("t", max_bytes=1 << 24)
    started = threading.Event()
    release = threading.Event()
    calls = []

    def first():
        calls.append("first")
        started.set()
        release.wait(5)
        raise Stop()

    stopped = []
    t1 = threading.Thread(target=lambda: stopped.append(pytest.raises(Stop, c.get_or_compute, "k", first)))
    t1.start()
    started.wait(5)
    out = []
    t2 = threading.Thread(target=lambda: out.append(c.get_or_compute("k", lambda: calls.append("second") or 9)))
    t2.start()
    release.set()
    t1.join(10)
    t2.join(10)
    assert out == [9] and calls == ["first", "second"] and stopped


# ------------------------------------------------------------------------------------------
# read-only results and the decorator
# ------------------------------------------------------------------------------------------
def test_results_are_read_only_and_containers_fresh():
    calls = []

    @shared_cache("results")
    def make(n: int) -> dict:
        calls.append(n)
        return {"K": np.eye(n), "labels": ["a"] * n, "result": Result(np.ones(n), {"v": np.zeros(n)})}

    make.clear()
    first = make(3)
    with pytest.raises(ValueError, match="read-only"):
        first["K"][0, 0] = 5.0
    with pytest.raises(ValueError, match="read-only"):
        first["result"].extra["v"][0] = 1.0
    first.pop("K")  # a page may pop from the returned dict, as with st.cache_data
    first["labels"].append("b")
    second = make(3)
    assert "K" in second and second["labels"] == ["a"] * 3
    assert calls == [3]
    make.clear()
    make(3)
    assert calls == [3, 3]


def test_decorator_keys_by_hash_funcs_and_leaves_out_underscored_parameters():
    calls = []

    @dataclass(frozen=True)
    class Thing:
        key: str
        payload: list

    @shared_cache("results", hash_funcs={Thing: lambda t: t.key})
    def f(thing: Thing, k: int = 2, _big=None):
        calls.append((thing.key, k))
        return k

    f.clear()
    assert f(Thing("a", [1]), _big=np.zeros(10)) == 2
    assert f(Thing("a", [2]), k=2, _big=np.ones(10)) == 2  # same key, same defaults: a hit
    assert f(Thing("b", [1])) == 2 and f(Thing("a", [1]), 3) == 3
    assert calls == [("a", 2), ("b", 2), ("a", 3)]
    with pytest.raises(TypeError, match="cannot be a cache key"):
        f(Thing("a", [1]), k=np.zeros(2))


def test_pools_are_the_core_cache_class():
    """One cache class (issue 39 item 6): a pool is the core's MemoryCache, sizes by the core's nbytes."""
    import diversity_core

    assert issubclass(SharedCache, diversity_core.MemoryCache) and isinstance(cache.pool("data"), SharedCache)
    assert nbytes is diversity_core.nbytes


def test_unknown_pool_is_refused():
    with pytest.raises(ValueError, match="unknown cache pool"):
        cache.pool("nope")


def test_app_wrappers_use_the_shared_pools():
    """Spectra, datasets and drawings are cached in the pools, not in Streamlit's entry-bounded caches."""
    from ui import compute, data, gallery

    assert compute.spectrum.__module__ == "ui.compute"
    for fn, name in ((compute._spectrum_and_notes, "results"), (compute.heatmap, "results"),
                     (compute._preprocessed, "features"), (data.loading._demo, "data"), (data.view._view, "data"),
                     (data.working_dataset, "data"), (gallery.molecule_png, "drawings")):
        assert fn.pool == name
    ds = data.loading._demo("digits")
    assert data.loading._demo("digits") is ds
    assert cache.cache_info()["data"]["bytes"] >= nbytes(ds)


# ------------------------------------------------------------------------------------------
# long tasks (ui.tasks): byte-bounded stores, one computation per task in flight
# ------------------------------------------------------------------------------------------
def test_task_store_is_bounded_in_bytes_and_read_only():
    from ui import tasks

    s = tasks.Store(max_entries=4, name="t")
    with config_context(memory_budget=int(3 * (64 * 1024 + 2 * ENTRY_OVERHEAD) / cache.POOL_SHARES["tasks"])):
        for i in range(4):
            s.put(i, tasks.Outcome(value={"curve": _array(64, i)}))
        assert s.info()["entries"] <= 3 and 0 not in s and 3 in s
    out = s.get(3)
    with pytest.raises(ValueError, match="read-only"):
        out.value["curve"][0] = 1.0


def test_second_session_waits_for_the_task_in_flight():
    from ui import tasks

    kind, key = "test-inflight", ("view", 1)
    assert tasks._claim(kind, key) is None  # this thread computes
    reports, got = [], []
    waiter = threading.Thread(target=lambda: got.append(
        tasks._wait_or_claim(kind, key, tasks.MAX_ENTRIES, lambda *a: reports.append(a))))
    waiter.start()
    waiter.join(0.6)
    assert waiter.is_alive() and reports  # waiting, and saying so through the progress bar
    outcome = tasks.Outcome(value=np.arange(3))
    tasks.store(kind).put(key, outcome)
    tasks._release(kind, key)
    waiter.join(5)
    assert got and got[0].value.tolist() == [0, 1, 2]


def test_task_that_stopped_hands_over_to_the_waiting_session():
    from ui import tasks

    kind, key = "test-handover", ("view", 2)
    assert tasks._claim(kind, key) is None
    got = []
    waiter = threading.Thread(target=lambda: got.append(
        tasks._wait_or_claim(kind, key, tasks.MAX_ENTRIES, lambda *a: None)))
    waiter.start()
    tasks._release(kind, key)  # failed or cancelled: nothing stored
    waiter.join(5)
    assert got == [None]  # the waiting session now computes it itself...
    assert tasks._claim(kind, key) is not None  # ...and holds the claim
    tasks._release(kind, key)
