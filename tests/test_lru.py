"""The one in-memory cache (diversity_core._lru): bounded in bytes, each buffer once, thread-safe (issue 39 item 6)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core._config import config_context
from diversity_core._lru import MemoryCache, _parts, nbytes

KIB = 1024


def _array(kib: int, fill: float = 0.0) -> np.ndarray:
    return np.full(kib * 128, fill)  # 128 float64 = 1 KiB


def _expected_bytes(c: MemoryCache) -> int:
    """What the cache should count: every distinct buffer of its values once, plus the overheads."""
    values = c.values()
    held: dict = {}
    for value in values:
        held.update(_parts(value))
    return sum(size for _owner, size in held.values()) + c.entry_overhead * len(values)


# ------------------------------------------------------------------------------------------
# sizes
# ------------------------------------------------------------------------------------------
def test_nbytes_counts_each_buffer_once_and_maps_as_nothing(tmp_path):
    a = _array(16)
    assert nbytes(a) == 16 * KIB
    assert 16 * KIB < nbytes((a, a[:10], a[::2])) < 17 * KIB  # a, once (views keep it alive), and the tuple
    assert nbytes(a[:10]) == 16 * KIB
    S = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    assert nbytes(S) == S.data.nbytes + S.indices.nbytes + S.indptr.nbytes
    np.save(tmp_path / "m.npy", a)
    assert nbytes(np.load(tmp_path / "m.npy", mmap_mode="r")) == 0


# ------------------------------------------------------------------------------------------
# the bound in bytes and the LRU order
# ------------------------------------------------------------------------------------------
def test_byte_bound_evicts_the_least_recently_used():
    c = MemoryCache("t", max_bytes=3 * 8 * KIB + 100)
    for i in range(3):
        assert c.put(i, _array(8, i))
    assert c.info() == {"entries": 3, "bytes": 3 * 8 * KIB, "limit_bytes": 3 * 8 * KIB + 100}
    assert c.get(0)[0] == 0.0  # 0 is now the most recent: 1 goes first
    c.put(3, _array(8, 3))
    assert 1 not in c and all(k in c for k in (0, 2, 3))
    c.get_or_compute(2, lambda: pytest.fail("a hit computes nothing"))  # 2 now the most recent
    c.put(4, _array(8, 4))
    assert 0 not in c and all(k in c for k in (2, 3, 4))
    assert c.values()[-1][0] == 4.0 and len(c) == 3
    assert c.info()["bytes"] == 3 * 8 * KIB <= c.info()["limit_bytes"]


def test_a_value_larger_than_the_cache_is_returned_but_not_kept():
    c = MemoryCache("t", max_bytes=16 * KIB)
    c.put("small", _array(4))
    calls = []
    out = c.get_or_compute("big", lambda: calls.append(1) or _array(64, 7.0))
    assert out[0] == 7.0 and "big" not in c and "small" in c
    c.get_or_compute("big", lambda: calls.append(1) or _array(64, 7.0))
    assert len(calls) == 2
    assert c.put("small", _array(64)) is False and "small" not in c  # a key re-put too large goes


def test_limit_follows_the_memory_budget_and_max_entries():
    c = MemoryCache("t", 0.5)
    with config_context(memory_budget=1 << 20):
        for i in range(3):
            c.put(i, _array(256, i))  # 256 KiB each, 512 KiB allowed
        assert c.info()["limit_bytes"] == 1 << 19 and c.info()["entries"] == 2
    with config_context(memory_budget=1 << 30):
        c.put(3, _array(256))
        assert c.info()["entries"] == 3
    with config_context(memory_budget=1 << 19):  # a smaller budget: the next insertion drops what no longer fits
        c.put(4, _array(1))
        assert c.info()["entries"] == 1 and 4 in c
    d = MemoryCache("t", max_bytes=1 << 30, max_entries=2, entry_overhead=100)
    for i in range(4):
        d.put(i, i)
    assert list(d.values()) == [2, 3] and d.info()["bytes"] == 2 * 100  # ints hold nothing of their own
    with pytest.raises(ValueError, match="exactly one of share and max_bytes"):
        MemoryCache("t", 0.5, max_bytes=10)


# ------------------------------------------------------------------------------------------
# shared buffers (what a cache sizing each value once, on insertion, gets wrong)
# ------------------------------------------------------------------------------------------
def test_shared_buffers_count_once_while_any_entry_holds_them():
    X = _array(64)  # 64 KiB
    c = MemoryCache("t", max_bytes=100 * KIB)
    c.put("full", X)
    c.put("head", X[:10])  # a view: X again, not 64 KiB more
    assert c.info() == {"entries": 2, "bytes": 64 * KIB, "limit_bytes": 100 * KIB}
    c.put("pair", {"a": X, "b": X[5:]})  # X again, and the dict's own few hundred bytes
    assert 64 * KIB < c.info()["bytes"] == _expected_bytes(c) < 65 * KIB
    c.put("other", _array(30))  # 94 KiB and the dict in all: fits, nothing goes
    assert c.info()["entries"] == 4 and 94 * KIB < c.info()["bytes"] < 95 * KIB
    c.clear("nothing")  # a prefix no key has
    c.put("full", None)  # the entry that brought X goes; "head" and "pair" still keep X alive
    assert 94 * KIB < c.info()["bytes"] == _expected_bytes(c) < 95 * KIB
    c.put("head", None)
    c.put("pair", None)  # the last holder of X went: X is no longer counted
    assert c.info()["bytes"] == 30 * KIB == _expected_bytes(c)


def test_eviction_frees_a_shared_buffer_only_with_its_last_holder():
    X = _array(60)
    c = MemoryCache("t", max_bytes=100 * KIB)
    c.put("a", X)
    c.put("b", X[:1])
    c.put("c", _array(30))  # 90 KiB: fits
    assert all(k in c for k in "abc") and c.info()["bytes"] == 90 * KIB
    c.put("d", _array(30))  # 120 KiB: "a" goes, but "b" keeps X: "b" goes too, then it fits
    assert [k for k in "abcd" if k in c] == ["c", "d"]
    assert c.info()["bytes"] == 60 * KIB == _expected_bytes(c)


# ------------------------------------------------------------------------------------------
# read-only values, users
# ------------------------------------------------------------------------------------------
def test_kept_values_are_read_only():
    c = MemoryCache("t", max_bytes=1 << 20)
    S = sp.random(20, 20, density=0.2, format="csr", random_state=0)
    c.put("k", {"X": np.ones(3), "S": S})
    with pytest.raises(ValueError, match="read-only"):
        c.get("k")["X"][0] = 2.0
    assert not S.data.flags.writeable and not S.indices.flags.writeable


def test_private_entries_go_with_their_last_user():
    who = {"now": "s1"}
    c = MemoryCache("t", max_bytes=1 << 20, user=lambda: who["now"])
    c.put("mine", _array(1), private=True)
    c.put("shared", _array(1))
    c.put("both", _array(1), private=True)
    who["now"] = "s2"
    c.get("both")
    assert c.release_user("s1") == 1 and "mine" not in c and "both" in c and "shared" in c
    assert c.release_user("s2") == 1 and c.info()["entries"] == 1


# ------------------------------------------------------------------------------------------
# threads
# ------------------------------------------------------------------------------------------
def test_concurrent_misses_compute_once():
    c = MemoryCache("t", max_bytes=1 << 20)
    calls, out = [], []
    gate = threading.Event()

    def slow():
        calls.append(1)
        gate.wait(5)
        return _array(4, 3.0)

    threads = [threading.Thread(target=lambda: out.append(c.get_or_compute("k", slow))) for _ in range(8)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join(10)
    assert len(calls) == 1 and len(out) == 8 and all(o is out[0] for o in out)


def test_threads_keep_the_byte_count_exact_and_bounded():
    """Smoke test: threads putting, reading and computing entries that share buffers."""
    bases = [_array(8, i) for i in range(4)]
    c = MemoryCache("t", max_bytes=40 * KIB, entry_overhead=64)
    errors: list = []
    seen: list = []

    def work(t: int) -> None:
        rng = np.random.default_rng(t)
        try:
            for _ in range(300):
                key = int(rng.integers(0, 24))
                base = bases[key % 4]
                op = rng.integers(0, 3)
                if op == 0:
                    c.put(key, (base[: key + 1], base) if key % 3 else _array(2, key))
                elif op == 1:
                    c.get(key)
                else:
                    c.get_or_compute(key, lambda k=key, b=base: {"view": b[k:], "own": _array(1, k)})
                info = c.info()
                seen.append(info["bytes"] <= info["limit_bytes"])
        except Exception as exc:  # noqa: BLE001 - collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can: races show up
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    assert all(seen) and len(seen) == 8 * 300
    assert c.info()["bytes"] == _expected_bytes(c) <= c.info()["limit_bytes"]
