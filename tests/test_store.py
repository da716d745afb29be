"""The on-disk result store: keys, round trips, corruption, LRU eviction, concurrent writers, the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core import store
from diversity_core.exceptions import CacheWarning, DiversityInputError
from diversity_core.store import ResultStore, array_digest, key_digest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def rs(folder):
    return ResultStore(folder)


def _entries(rs: ResultStore) -> list:
    return sorted((rs.folder / store.LAYOUT).glob("*.npz"))


def _only_entry(rs: ResultStore) -> Path:
    (path,) = _entries(rs)
    return path


class Counter:
    """A compute function that counts its calls."""

    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


# ------------------------------------------------------------------------------------------
# keys
# ------------------------------------------------------------------------------------------
def test_key_ignores_dict_order_and_tuple_vs_list():
    assert key_digest({"a": 1, "b": (2, 3)}) == key_digest({"b": [2, 3], "a": 1})
    assert key_digest({"a": 1}) != key_digest({"a": 2})
    assert key_digest({"a": np.float64(0.5)}) == key_digest({"a": 0.5})
    assert len(key_digest("x")) == 40


def test_key_refuses_objects_with_advice():
    with pytest.raises(DiversityInputError, match=r"JSON-like.*array_digest"):
        key_digest({"X": object()})


def test_array_digest_sees_values_dtype_shape_and_sparsity():
    X = np.arange(6.0).reshape(2, 3)
    assert array_digest(X) == array_digest(X.copy(order="F"))
    assert array_digest(X) != array_digest(X.reshape(3, 2))
    assert array_digest(X) != array_digest(X.astype(np.float32))
    Y = X.copy()
    Y[1, 2] += 1e-12
    assert array_digest(X) != array_digest(Y)
    S = sp.csr_matrix(X)
    assert array_digest(S) == array_digest(S.tocoo()) != array_digest(X)


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    np.array([True, False]),
    np.array(["a", "bc"]),
    np.zeros((0, 5)),
], ids=["float32", "fortran", "bool", "unicode", "empty"])
def test_arrays_round_trip(rs, value):
    assert rs.put({"k": 1}, value)
    out = ResultStore(rs.folder).get({"k": 1})
    assert out.dtype == value.dtype and out.shape == value.shape
    np.testing.assert_array_equal(out, value)


@pytest.mark.parametrize("cls", [sp.csr_matrix, sp.csr_array])
def test_csr_round_trips_as_its_three_arrays(rs, cls):
    S = cls(sp.random(40, 30, density=0.2, format="csr", random_state=1, dtype=np.float32))
    rs.put("sparse", S)
    out = rs.get("sparse")
    assert type(out) is type(S) and out.dtype == S.dtype and out.shape == S.shape
    np.testing.assert_array_equal(out.toarray(), S.toarray())
    with np.load(_only_entry(rs), allow_pickle=False) as z:  # plain arrays, no pickle
        assert {"a.data", "a.indices", "a.indptr"} <= set(z.files)


def test_json_and_spectrum_round_trip(rs, rng):
    from diversity_core.spectrum import compute_spectrum

    rs.put("meta", {"n": 3, "names": ["a", "b"], "x": 0.25, "none": None})
    assert rs.get("meta") == {"n": 3, "names": ["a", "b"], "x": 0.25, "none": None}
    spec = compute_spectrum(rng.normal(size=(30, 5)), kernel="rbf", n_eigenvectors=3)
    assert rs.put("spectrum", spec)
    back = rs.get("spectrum")
    assert type(back) is type(spec) and back.eigenvectors.shape == (30, 3)
    np.testing.assert_array_equal(back.eigenvalues, spec.eigenvalues)
    assert back.kernel == spec.kernel and back.method == spec.method and back.tol == spec.tol
    assert back.vendi(2.0) == spec.vendi(2.0)


def test_values_it_cannot_keep_are_returned_unstored(rs):
    for value in (np.array([object()], dtype=object), {"t": (1, 2)}, {"x": float("nan")},
                  sp.coo_matrix(np.eye(3)), "text"):
        assert rs.put("v", value) is False
        assert rs.get_or_compute("v", lambda v=value: v) is value
    assert _entries(rs) == []


# ------------------------------------------------------------------------------------------
# hits and misses
# ------------------------------------------------------------------------------------------
def test_hit_after_miss_and_new_key_for_any_change(rs):
    compute = Counter(np.arange(5.0))
    parts = {"data": "hash-1", "kernel": "cosine", "version": "1"}
    first = rs.get_or_compute(parts, compute)
    again = ResultStore(rs.folder).get_or_compute(parts, compute)  # another process, the same folder
    assert compute.calls == 1
    np.testing.assert_array_equal(first, again)
    for change in ({"data": "hash-2"}, {"kernel": "rbf"}, {"version": "2"}):
        rs.get_or_compute({**parts, **change}, compute)
    assert compute.calls == 4 and len(_entries(rs)) == 4


def test_package_version_is_part_of_every_key(monkeypatch):
    before = key_digest("x")
    monkeypatch.setattr(store, "_code_version", lambda: "999.0")
    assert key_digest("x") != before


def test_missing_folder_is_an_empty_store(tmp_path):
    rs = ResultStore(tmp_path / "not" / "yet")
    assert rs.get("x", default="none") == "none"
    assert rs.info().entries == 0 and not (tmp_path / "not").exists()
    assert rs.clear().entries == 0 and rs.evict() == 0


# ------------------------------------------------------------------------------------------
# corruption
# ------------------------------------------------------------------------------------------
def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_payload(path: Path) -> None:
    data = bytearray(path.read_bytes())
    i = data.index(np.float64(12345.678).tobytes())  # inside the stored array
    data[i + 3] ^= 0xFF
    path.write_bytes(bytes(data))


def _flip_everywhere(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(7, len(data), 97):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def _pickle(path: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps({"X": np.arange(3)}))


def _garbage(path: Path) -> None:
    path.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _flip_payload, _flip_everywhere, _pickle, _garbage])
def test_corrupt_entry_is_reported_once_removed_and_recomputed(rs, damage):
    value = np.full((50, 20), 12345.678)
    compute = Counter(value)
    rs.get_or_compute("k", compute)
    damage(_only_entry(rs))
    with pytest.warns(CacheWarning, match=r"corrupt or truncated.*removed and will be recomputed"):
        out = rs.get_or_compute("k", compute)
    np.testing.assert_array_equal(out, value)
    assert compute.calls == 2
    damage(_only_entry(rs))  # corrupt again: the same entry is not reported twice
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert rs.get("k") is None
        np.testing.assert_array_equal(rs.get_or_compute("k", compute), value)
        np.testing.assert_array_equal(rs.get("k"), value)  # rewritten, whole
    assert compute.calls == 3


def test_entry_renamed_to_another_key_is_corrupt(rs):
    rs.put("a", np.arange(3))
    path = _only_entry(rs)
    os.replace(path, path.with_name(key_digest("b") + ".npz"))
    with pytest.warns(CacheWarning, match="another key"):
        assert rs.get("b") is None


def test_unwritable_folder_is_reported_once_and_results_still_returned(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    rs = ResultStore(blocker)
    with pytest.warns(CacheWarning, match=r"cannot write to the result store.*--cache-dir") as caught:
        for i in range(3):
            assert rs.get_or_compute({"i": i}, lambda i=i: np.arange(i)).size == i
    assert len([w for w in caught if issubclass(w.category, CacheWarning)]) == 1


# ------------------------------------------------------------------------------------------
# the bound: least recently used first
# ------------------------------------------------------------------------------------------
def _age(rs: ResultStore, key, seconds: float) -> None:
    path = rs.folder / store.LAYOUT / f"{key_digest(key)}.npz"
    os.utime(path, (seconds, seconds))


def test_eviction_removes_least_recently_used_until_under_the_bound(folder):
    big = ResultStore(folder)
    for name in "abc":
        big.put(name, np.zeros(10_000))
    size = max(p.stat().st_size for p in _entries(big))
    for t, name in enumerate("abc"):
        _age(big, name, 1_000_000 + t)  # written a, b, c
    rs = ResultStore(folder, max_bytes=int(3.5 * size))
    assert rs.get("a") is not None  # a is now the most recently used
    rs.put("d", np.ones(10_000))
    kept = {name for name in "abcd" if rs.get(name) is not None}
    assert kept == {"a", "c", "d"}
    assert rs.info().bytes <= rs.max_bytes
    # a lower bound, applied by evict(): the newest entries stay
    small = ResultStore(folder, max_bytes=int(1.5 * size))
    for t, name in enumerate("cad"):
        _age(small, name, 2_000_000 + t)
    assert small.evict() == 2
    assert [name for name in "acd" if small.get(name) is not None] == ["d"]


def test_entry_larger_than_the_bound_is_not_kept(folder):
    rs = ResultStore(folder, max_bytes="1K")
    assert rs.put("big", np.zeros(1000)) is False
    assert rs.put("small", np.zeros(10)) is True


def _dead_pid() -> int:
    """The pid of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _temporary(rs: ResultStore, pid: int, size: int = 7) -> Path:
    path = rs.folder / store.LAYOUT / f".{key_digest(('t', pid, size))}.npz.{pid}.{os.urandom(6).hex()}.tmp.npz"
    path.write_bytes(b"p" * size)
    return path


def test_stale_temporaries_are_removed_fresh_ones_kept(rs):
    rs.put("a", np.arange(3))
    entries = rs.folder / store.LAYOUT
    stale, fresh, orphan = _temporary(rs, os.getpid()), _temporary(rs, os.getpid()), _temporary(rs, _dead_pid())
    os.utime(stale, (1, 1))
    others = [entries / ".x.npz.aaaa.tmp.npz", entries / "notes.txt"]  # not names the store makes
    for p in others:
        p.write_bytes(b"theirs")
        os.utime(p, (1, 1))
    rs.evict()
    assert not stale.exists() and fresh.exists()
    assert not orphan.exists()  # its writer was killed: no need to wait an hour
    assert all(p.exists() for p in others)
    assert rs.info().entries == 1  # temporaries never count as entries


def test_temporaries_of_killed_writers_are_counted_and_cleared(rs):
    """Issue 40.7: leftovers of a killed writer were invisible to `cache info` and kept by `cache clear`."""
    rs.put("a", np.arange(3))
    orphans = [_temporary(rs, _dead_pid(), size=1000), _temporary(rs, _dead_pid(), size=2000)]
    live = _temporary(rs, os.getpid(), size=500)  # a write under way in this process
    shown = rs.info()
    assert (shown.entries, shown.temporaries, shown.temporary_bytes) == (1, 3, 3500)
    removed = rs.clear()
    assert (removed.entries, removed.temporaries, removed.temporary_bytes) == (1, 2, 3000)
    assert not any(p.exists() for p in orphans) and live.exists()
    assert rs.info().temporaries == 1


def test_clear_reports_what_it_removed(rs):
    rs.put("a", np.zeros(100))
    rs.put("b", np.zeros(100))
    before = rs.info()
    removed = rs.clear()
    assert (removed.entries, removed.bytes) == (2, before.bytes)
    assert rs.info().entries == 0 and rs.get("a") is None


# ------------------------------------------------------------------------------------------
# settings: API over environment over defaults
# ------------------------------------------------------------------------------------------
def test_settings_from_environment_and_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv(store.ENV_DIR, str(tmp_path / "env"))
    monkeypatch.setenv(store.ENV_MAX_BYTES, "3M")
    monkeypatch.delenv(store.ENV_DISABLED, raising=False)
    chosen = store.settings()
    assert chosen == {"folder": tmp_path / "env", "max_bytes": 3 << 20, "enabled": True, "key_file": None}
    with store.configured(folder=tmp_path / "api", max_bytes="1G"):
        assert store.get_store().folder == tmp_path / "api" and store.get_store().max_bytes == 1 << 30
        with store.configured(enabled=False):
            assert store.get_store() is None
            assert store.info().enabled is False and store.info().folder == str(tmp_path / "api")
    assert store.get_store().folder == tmp_path / "env"
    monkeypatch.setenv(store.ENV_DISABLED, "1")
    assert store.get_store() is None
    monkeypatch.setenv(store.ENV_MAX_BYTES, "lots")
    with pytest.raises(DiversityInputError, match="DIVERSITY_CACHE_MAX_BYTES must be a positive size"):
        store.settings()


def test_default_folder_is_the_user_cache_folder(monkeypatch):
    from platformdirs import user_cache_dir

    monkeypatch.delenv(store.ENV_DIR, raising=False)
    assert store.settings()["folder"] == Path(user_cache_dir("diversity-explorer", appauthor=False))
    assert store.settings()["max_bytes"] == store.DEFAULT_MAX_BYTES == 2 << 30


def test_no_cache_computes_every_time_and_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv(store.ENV_DIR, str(tmp_path))
    monkeypatch.setenv(store.ENV_DISABLED, "1")
    compute = Counter(np.arange(3))
    store.get_or_compute("k", compute)
    store.get_or_compute("k", compute)
    assert compute.calls == 2 and list(tmp_path.iterdir()) == []
    monkeypatch.delenv(store.ENV_DISABLED)
    store.get_or_compute("k", compute)
    store.get_or_compute("k", compute)
    assert compute.calls == 3


# ------------------------------------------------------------------------------------------
# concurrent writers: two processes
# ------------------------------------------------------------------------------------------
_WRITER = textwrap.dedent("""
    import pathlib, sys, time, warnings
    import numpy as np
    from diversity_core.exceptions import CacheWarning
    from diversity_core.store import ResultStore

    warnings.simplefilter("error", CacheWarning)  # a partial or corrupt file read back fails the run
    folder, me, meeting, bound = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), int(sys.argv[4])
    rs = ResultStore(folder, max_bytes=bound)
    (meeting / me).touch()
    deadline = time.time() + 60
    while len(list(meeting.iterdir())) < 2 and time.time() < deadline:  # start together
        time.sleep(0.002)
    for rep in range(3):
        for i in range(12):
            for key in (("shared", i), (me, i)):
                value = np.full((300, 40), float(i))
                rs.put(key, value)
                got = rs.get(("shared", (i + 5) % 12))  # read what the other writer may be writing
                assert got is None or (got.shape == (300, 40) and got[0, 0] == (i + 5) % 12), got
    print("ok")
""")


def _run_writers(folder: Path, bound: int) -> None:
    meeting = folder.parent / "meeting"
    meeting.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(folder), name, str(meeting), str(bound)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for name in ("one", "two")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "ok", err


def test_two_processes_writing_same_and_different_keys(folder):
    _run_writers(folder, store.DEFAULT_MAX_BYTES)
    rs = ResultStore(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        for owner in ("shared", "one", "two"):
            for i in range(12):
                np.testing.assert_array_equal(rs.get((owner, i)), np.full((300, 40), float(i)))
    assert rs.info().entries == 36
    assert not [p for p in (folder / store.LAYOUT).iterdir() if ".tmp" in p.name]


def test_two_processes_evicting_at_once_leave_only_whole_entries(folder):
    bound = 10 * (300 * 40 * 8 + 2000)  # about ten entries of the 36
    _run_writers(folder, bound)
    rs = ResultStore(folder, max_bytes=bound)
    assert rs.info().bytes <= bound and 0 < rs.info().entries <= 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        for owner in ("shared", "one", "two"):
            for i in range(12):
                got = rs.get((owner, i))
                assert got is None or float(got[0, 0]) == i


# ------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------
def test_cli_cache_info_and_clear(tmp_path, capsys):
    from diversity_core.cli import main

    ResultStore(tmp_path).put("a", np.zeros(1000))
    assert main(["--cache-dir", str(tmp_path), "cache", "info", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["folder"] == str(tmp_path) and shown["entries"] == 1 and shown["bytes"] > 8000
    assert shown["max_bytes"] == store.DEFAULT_MAX_BYTES and shown["enabled"] is True
    assert main(["cache", "info", "--cache-dir", str(tmp_path), "--no-cache"]) == 0  # flags after the command
    out = capsys.readouterr().out
    assert re.search(r"entries +1\n", out) and str(tmp_path) in out and re.search(r"in use +no", out)
    assert re.search(r"temporary +0 files", out) and re.search(r"key file +" + re.escape(str(tmp_path)), out)
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("removed 1 entry, freed ") and ResultStore(tmp_path).info().entries == 0
    assert main(["--cache-dir", str(tmp_path), "cache", "clear", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed_entries"] == 0
    assert store.settings()["folder"] != tmp_path  # the flags hold for that run only


def test_cli_flags_are_documented_and_checked(tmp_path, capsys):
    from diversity_core.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "--cache-dir DIR" in text and "--no-cache" in text and "cache" in text
    (tmp_path / "f").write_text("x")
    assert main(["--cache-dir", str(tmp_path / "f"), "cache", "info"]) == 2
    assert "is a file; give a folder" in capsys.readouterr().err


def test_cli_score_keeps_features_and_no_cache_skips_the_store(tmp_path, capsys):
    from diversity_core.cli import main

    folder = tmp_path / "c"
    from diversity_core.featurizers import clear_cache

    clear_cache()
    assert main(["--no-cache", "--cache-dir", str(folder), "score", "demo:text", "--featurizer", "ngram"]) == 0
    assert ResultStore(folder).info().entries == 0
    uncached = capsys.readouterr().out
    clear_cache()  # the features are in memory now: forget them, as a new process would
    assert main(["score", "demo:text", "--featurizer", "ngram", "--cache-dir", str(folder)]) == 0
    first = capsys.readouterr().out
    assert ResultStore(folder).info().entries >= 1
    clear_cache()
    assert main(["score", "demo:text", "--featurizer", "ngram", "--cache-dir", str(folder)]) == 0
    assert capsys.readouterr().out == first == uncached


def test_app_command_passes_the_store_settings():
    import argparse

    from diversity_core.cli._app import store_environment

    assert store_environment(argparse.Namespace()) == {}
    env = store_environment(argparse.Namespace(cache_dir="/tmp/x", no_cache=True))
    assert env == {"DIVERSITY_CACHE_DIR": str(Path("/tmp/x").resolve()), "DIVERSITY_NO_CACHE": "1"}


@pytest.mark.requires("streamlit")
def test_app_command_hands_the_flags_to_the_app(tmp_path, monkeypatch):
    from diversity_core.cli import build_parser
    from diversity_core.cli._app import streamlit_command

    monkeypatch.setenv("DIVERSITY_CACHE_DIR", "/elsewhere")
    args = build_parser(["app"]).parse_args(["--cache-dir", str(tmp_path), "app", "--no-cache"])
    _, env = streamlit_command(args)
    assert env["DIVERSITY_CACHE_DIR"] == str(tmp_path.resolve()) and env["DIVERSITY_NO_CACHE"] == "1"
    _, env = streamlit_command(build_parser(["app"]).parse_args(["app"]))
    assert env["DIVERSITY_CACHE_DIR"] == "/elsewhere" and "DIVERSITY_NO_CACHE" not in env  # inherited
