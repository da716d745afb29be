"""One computation per key in flight (diversity_core._inflight), shared by the feature cache and the app's caches."""

from __future__ import annotations

import threading
import time

import pytest

from diversity_core._inflight import MISSING, compute_once


def _cache():
    lock, flights, data = threading.Lock(), {}, {}
    return lock, flights, data


def test_concurrent_callers_share_one_computation_and_its_error():
    lock, flights, data = _cache()
    calls = []

    def slow(value):
        def compute():
            calls.append(1)
            time.sleep(0.2)
            if isinstance(value, Exception):
                raise value
            return value
        return compute

    def run(compute, out):
        try:
            out.append(compute_once("k", lock, flights, lambda: data.get("k", MISSING), compute,
                                    lambda v: data.__setitem__("k", v)))
        except Exception as exc:  # noqa: BLE001
            out.append(exc)

    for value in (None, ValueError("boom")):  # None is a value like any other
        data.clear()
        calls.clear()
        out: list = []
        threads = [threading.Thread(target=run, args=(slow(value), out)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(calls) == 1 and len(out) == 4
        assert all(o is value for o in out)
        assert not flights
    assert "k" not in data  # the failure is not stored


def test_a_reentrant_call_computes_instead_of_deadlocking():
    lock, flights, data = _cache()

    def outer():
        return compute_once("k", lock, flights, lambda: data.get("k", MISSING), lambda: 2, lambda v: None) + 1

    assert compute_once("k", lock, flights, lambda: data.get("k", MISSING), outer,
                        lambda v: data.__setitem__("k", v)) == 3
    assert data == {"k": 3}


def test_a_stopped_leader_hands_over_to_the_next_caller():
    lock, flights, data = _cache()
    started, release = threading.Event(), threading.Event()

    def stopped():
        started.set()
        release.wait()
        raise KeyboardInterrupt

    def first():
        with pytest.raises(KeyboardInterrupt):
            compute_once("k", lock, flights, lambda: data.get("k", MISSING), stopped, lambda v: data.__setitem__("k", v))

    t = threading.Thread(target=first)
    t.start()
    started.wait()
    out = []
    waiter = threading.Thread(target=lambda: out.append(
        compute_once("k", lock, flights, lambda: data.get("k", MISSING), lambda: 7, lambda v: data.__setitem__("k", v))))
    waiter.start()
    time.sleep(0.05)
    release.set()
    t.join()
    waiter.join()
    assert out == [7] and data == {"k": 7}
