"""Issue 40, items 4-7: the result store against other users, links, special files, bombs and leftovers.

The two-user tests run a second user (``nobody``, uid 65534) in a subprocess that imports the
package and then calls ``os.setuid``; they are skipped where this process cannot change uid (not
root). The folder they share is made writable for that user on purpose: a misconfigured shared
folder is the case the MAC has to survive.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from test_store import Counter  # a compute function that counts its calls

from diversity_core import store
from diversity_core.exceptions import CacheWarning
from diversity_core.store import ResultStore, key_digest

ROOT = Path(__file__).resolve().parents[1]
OTHER_UID = 65534  # nobody

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="a second user needs os.setuid, which only root may call here",
)
posix_only = pytest.mark.skipif(os.name != "posix", reason="symbolic links, FIFOs, modes and flock are POSIX")

FOREIGN = r"not written with this store's key"


def _cache_warnings(caught) -> list:
    return [w for w in caught if issubclass(w.category, CacheWarning)]


def _entry(folder: Path, parts) -> Path:
    return folder / store.LAYOUT / f"{key_digest(parts)}.npz"


def _run(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (a hang fails the test instead of hanging the suite)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the store blocked: the process did not end within {timeout} s ({exc.stderr!r})")


# the second user: imports as root, then drops to uid 65534 and runs the action given
_AS_OTHER_USER = """
    import json, os, sys, pathlib, hashlib, hmac, secrets, warnings, zipfile  # the stdlib may be unreadable later
    import numpy as np
    from diversity_core import store
    from diversity_core.store import ResultStore, key_digest
    os.setgroups([])
    os.setgid({uid})
    os.setuid({uid})
    folder = pathlib.Path(sys.argv[1])
    {action}
"""


def _as_other_user(action: str, *args: str) -> str:
    code = textwrap.dedent(_AS_OTHER_USER).format(uid=OTHER_UID, action=textwrap.dedent(action).strip())
    done = _run(code, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def shared_folder():
    """A store folder the second user can reach (pytest's own temporary folders are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="store-two-users-"))
    base.chmod(0o755)
    try:
        yield base / "store"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _grant_other_users(folder: Path) -> None:
    """A misconfigured shared folder: everyone may write in the store's folders."""
    folder.chmod(0o777)
    (folder / store.LAYOUT).chmod(0o777)


# ------------------------------------------------------------------------------------------
# 40.4: entries are unforgeable by other users
# ------------------------------------------------------------------------------------------
@posix_only
def test_entries_folders_and_key_are_private_to_their_owner(tmp_path):
    rs = ResultStore(tmp_path / "s")
    rs.put("a", np.arange(3))
    mode = lambda p: stat.S_IMODE(os.lstat(p).st_mode)  # noqa: E731
    assert mode(rs.folder / store.LAYOUT) == 0o700
    assert mode(_entry(rs.folder, "a")) == 0o600
    assert mode(rs.key_file) == 0o600 and rs.key_file.parent == rs.folder
    assert len(rs.key_file.read_text().strip()) == 64  # 32 random bytes, in hex
    assert rs.info().key_file == str(rs.key_file)


@posix_only
def test_a_folder_an_older_version_made_0755_becomes_private(tmp_path):
    entries = tmp_path / "s" / store.LAYOUT
    entries.mkdir(parents=True, mode=0o755)
    entries.chmod(0o755)
    ResultStore(tmp_path / "s").put("a", np.arange(3))
    assert stat.S_IMODE(entries.stat().st_mode) == 0o700


def test_entry_written_with_another_key_is_ignored_once_and_recomputed(tmp_path):
    """Another user's store (another key) writing into this folder cannot plant a result."""
    folder = tmp_path / "s"
    mine = ResultStore(folder)
    other_key = tmp_path / "other.key"
    other_key.write_text("b" * 64)
    other_key.chmod(0o600)
    theirs = ResultStore(folder, key_file=other_key)
    right = Counter(np.full(4, 9.22))
    for i in range(3):
        theirs.put(("vs", i), np.ones(4))  # what the other writes under our keys
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            np.testing.assert_array_equal(mine.get_or_compute(("vs", i), right), np.full(4, 9.22))
    assert right.calls == 3
    (w,) = _cache_warnings(caught)  # one warning for all of them
    assert "was forged, or written by another user or with another key" in str(w.message)
    assert FOREIGN in str(w.message) and store.ENV_KEY_FILE in str(w.message)
    for i in range(3):  # recomputed and kept under our key
        np.testing.assert_array_equal(ResultStore(folder).get(("vs", i)), np.full(4, 9.22))


@pytest.mark.parametrize("mac_name", ["__mac__", "__checksum__"])
def test_forged_entry_with_a_recomputed_unkeyed_checksum_is_ignored(tmp_path, mac_name):
    """The issue's forgery: a valid header, arrays of one's choice and a recomputed BLAKE2b checksum,
    as the MAC or as the checksum of the format before it."""
    import hashlib
    import json

    rs = ResultStore(tmp_path / "s")
    rs.put("vs", np.array([9.22]))
    path = _entry(rs.folder, "vs")
    header = json.dumps({"type": "ndarray", "key": key_digest("vs"), "label": "", "created": 0.0,
                         "arrays": {"X": {"dtype": "<f8", "shape": [1]}}}, sort_keys=True).encode()
    forged = np.array([1.0])
    h = hashlib.blake2b(header, digest_size=16)
    h.update(b"X|")
    store._hash_array(h, forged)
    np.savez(path.with_suffix(".new.npz"), **{"a.X": forged, "__meta__": np.frombuffer(header, np.uint8),
                                              mac_name: np.frombuffer(h.digest(), np.uint8)})
    os.replace(path.with_suffix(".new.npz"), path)
    compute = Counter(np.array([9.22]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(ResultStore(rs.folder).get_or_compute("vs", compute), [9.22])
    assert compute.calls == 1
    # a forged MAC is reported; an entry of ours in the format before the MAC is replaced quietly
    assert [FOREIGN in str(w.message) for w in _cache_warnings(caught)] == ([True] if mac_name == "__mac__" else [])


@posix_only
@needs_root
def test_two_users_a_forged_entry_is_ignored_with_one_warning_and_recomputed(shared_folder):
    """Issue 40.4: user B forged entries in A's store; A's run printed B's value with no warning."""
    folder = shared_folder
    right = Counter(np.array([9.22]))
    rs = ResultStore(folder)
    np.testing.assert_array_equal(rs.get_or_compute("VS_1", right), [9.22])
    _grant_other_users(folder)
    out = _as_other_user("""
        try:
            (folder / f"store-key-{sys.argv[2]}").read_bytes()
            print("key readable")
        except PermissionError:
            print("key unreadable")
        except FileNotFoundError:
            print("no key")
        import tempfile
        mine = ResultStore(tempfile.mkdtemp())  # B's own store, B's own key
        for parts in ("VS_1", "VS_2"):
            mine.put(parts, np.array([1.0]))
            name = f"{key_digest(parts)}.npz"
            os.replace(mine.folder / store.LAYOUT / name, folder / store.LAYOUT / name)
        import shutil
        shutil.rmtree(mine.folder)
    """, str(folder), str(os.geteuid()))
    assert _entry(folder, "VS_1").stat().st_uid == OTHER_UID  # B's file now sits under A's key
    fresh = ResultStore(folder)  # a new run of user A
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(fresh.get_or_compute("VS_1", right), [9.22])
        np.testing.assert_array_equal(fresh.get_or_compute("VS_2", lambda: np.array([4.5])), [4.5])
    assert right.calls == 2
    (w,) = _cache_warnings(caught)
    assert FOREIGN in str(w.message) and f"uid {OTHER_UID}" in str(w.message)
    assert out.splitlines()[0] == "key unreadable"  # B could not have made A's MAC
    assert _entry(folder, "VS_1").stat().st_uid == os.geteuid()  # A's recomputed entry replaced it
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        np.testing.assert_array_equal(ResultStore(folder).get("VS_1"), [9.22])


# ------------------------------------------------------------------------------------------
# the shared key of a team's or a cluster's store
# ------------------------------------------------------------------------------------------
def _key_file(path: Path, secret: str = "team-secret-" + "7" * 40, mode: int = 0o600) -> Path:
    path.write_text(secret + "\n")
    path.chmod(mode)
    return path


@posix_only
def test_shared_key_lets_members_read_each_others_entries(tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    folder.chmod(0o2770)  # the team's folder: its group, setgid
    alice = ResultStore(folder, key_file=_key_file(tmp_path / "alice.key"))
    bob = ResultStore(folder, key_file=_key_file(tmp_path / "bob.key"))  # his own copy of the secret
    alice.put("spectrum", np.arange(4.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        np.testing.assert_array_equal(bob.get("spectrum"), np.arange(4.0))
    assert stat.S_IMODE(_entry(folder, "spectrum").stat().st_mode) == 0o640  # for the group
    assert stat.S_IMODE((folder / store.LAYOUT).stat().st_mode) == 0o2770  # the setgid bit stays
    assert stat.S_IMODE((folder / store.LAYOUT / ".lock").stat().st_mode) == 0o660
    assert not list(folder.glob("store-key-*"))  # no per-user key is made
    mine = ResultStore(folder)  # a per-user key: the team's entries are foreign
    with pytest.warns(CacheWarning, match=FOREIGN):
        assert mine.get("spectrum") is None


@posix_only
@pytest.mark.parametrize("problem, match", [
    ("missing", r"does not exist; copy the team's key"),
    ("readable", r"can be read or written by others \(mode 0644\); run `chmod 600"),
    ("link", r"is a symbolic link"),
    ("short", r"fewer than 16 bytes"),
])
def test_unusable_key_file_is_reported_once_and_the_store_is_bypassed(tmp_path, problem, match):
    key = tmp_path / "team.key"
    if problem == "readable":
        _key_file(key, mode=0o644)
    elif problem == "link":
        (tmp_path / "real.key").write_text("x" * 64)
        (tmp_path / "real.key").chmod(0o600)
        key.symlink_to(tmp_path / "real.key")
    elif problem == "short":
        _key_file(key, secret="short")
    rs = ResultStore(tmp_path / "s", key_file=key)
    compute = Counter(np.arange(3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            np.testing.assert_array_equal(rs.get_or_compute("k", compute), np.arange(3))
    (w,) = _cache_warnings(caught)
    assert re.search(match, str(w.message)), w.message
    assert compute.calls == 2 and rs.info().entries == 0


@posix_only
@needs_root
def test_key_file_of_another_user_is_refused(tmp_path):
    key = _key_file(tmp_path / "team.key")
    os.chown(key, OTHER_UID, OTHER_UID)
    with pytest.warns(CacheWarning, match=rf"belongs to another user \(uid {OTHER_UID}\)"):
        ResultStore(tmp_path / "s", key_file=key).get_or_compute("k", lambda: np.arange(3))


@posix_only
def test_key_file_setting_and_workers_sharing_a_store(tmp_path, monkeypatch):
    """The key is configuration: configure()/configured() and DIVERSITY_CACHE_KEY_FILE, which worker
    processes (a Dask worker, a second CLI run) inherit."""
    key = _key_file(tmp_path / "team.key")
    folder = tmp_path / "shared"
    monkeypatch.setenv(store.ENV_DIR, str(folder))
    monkeypatch.setenv(store.ENV_KEY_FILE, str(key))
    assert store.settings()["key_file"] == key and store.get_store().key_file == key
    with store.configured(key_file=tmp_path / "other.key"):
        assert store.get_store().key_file == tmp_path / "other.key"
    worker = _run("""
        import numpy as np
        from diversity_core import store
        store.get_or_compute("features", lambda: np.full(3, 2.5))
        print(store.get_store().key_file)
    """)
    assert worker.returncode == 0 and worker.stdout.strip() == str(key), worker.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        np.testing.assert_array_equal(store.get_or_compute("features", lambda: None), np.full(3, 2.5))


# ------------------------------------------------------------------------------------------
# 40.5: no links followed, nothing blocks, only the store's own files removed
# ------------------------------------------------------------------------------------------
@posix_only
def test_symlinked_entries_folder_is_not_followed_by_clear_evict_or_writes(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    precious = [victim / f"{key_digest(i)}.npz" for i in range(3)] + [victim / ".lock"]
    for p in precious:
        p.write_bytes(b"precious")
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / store.LAYOUT).symlink_to(victim)
    rs = ResultStore(folder, max_bytes=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert rs.clear().entries == 0
        assert rs.evict() == 0
        assert rs.get_or_compute(0, lambda: np.arange(3)).size == 3
        assert rs.info().entries == 0
    assert [p.read_bytes() for p in precious] == [b"precious"] * 4
    assert sorted(p.name for p in victim.iterdir()) == sorted(p.name for p in precious)
    assert any("symbolic link" in str(w.message) for w in _cache_warnings(caught))


@posix_only
def test_lock_symlink_is_not_followed(tmp_path):
    rs = ResultStore(tmp_path / "s")
    rs.put("a", np.arange(3))
    target = tmp_path / "not-a-lock"
    (rs.folder / store.LAYOUT / ".lock").unlink()
    (rs.folder / store.LAYOUT / ".lock").symlink_to(target)
    with pytest.warns(CacheWarning, match=r"lock.*a symbolic link"):
        assert rs.put("b", np.arange(4))
    assert not target.exists()  # O_CREAT through the link would have made it


@posix_only
def test_fifo_at_an_entry_path_does_not_hang(tmp_path):
    folder = tmp_path / "s"
    ResultStore(folder).put("warm", np.arange(2))  # the folder and its key exist
    os.mkfifo(_entry(folder, "k"))
    done = _run("""
        import sys, warnings
        import numpy as np
        from diversity_core.store import ResultStore
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(ResultStore(sys.argv[1]).get_or_compute("k", lambda: np.arange(5)).sum())
        print(*[str(w.message) for w in caught], sep="\\n")
    """, str(folder), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "10" and "is a FIFO, not a file" in done.stdout
    assert stat.S_ISREG(os.lstat(_entry(folder, "k")).st_mode)  # the next write replaced the FIFO


@posix_only
def test_a_held_lock_times_out_and_the_store_goes_on(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    rs = ResultStore(tmp_path / "s")
    rs.put("a", np.arange(3))
    holder = os.open(rs.folder / store.LAYOUT / ".lock", os.O_RDWR)  # a stuck process holding the lock
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        done = _run("""
            import sys, warnings
            import numpy as np
            from diversity_core import store
            store.LOCK_TIMEOUT_S = 0.2
            rs = store.ResultStore(sys.argv[1])
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                print(all(rs.put(("b", i), np.arange(4)) for i in range(3)), rs.clear().entries)
            print(*[str(w.message) for w in caught], sep="\\n")
        """, str(rs.folder), timeout=60)
    finally:
        os.close(holder)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True 4" and len(lines) == 2  # one warning
    assert "another process has held the result store's lock" in lines[1]


@posix_only
@needs_root
def test_two_users_links_fifos_and_foreign_files_in_a_shared_folder(shared_folder, tmp_path):
    """Issue 40.5 with a second user: B swaps the entries folder for a link to A's files, plants a
    FIFO and a file of B's own under entry names; A's runs, eviction and `cache clear` neither
    follow, block nor remove anything that is not the store's."""
    from diversity_core.cli import main

    folder = shared_folder
    rs = ResultStore(folder)
    rs.put("a", np.arange(3))
    _grant_other_users(folder)
    _as_other_user("""
        entries = folder / store.LAYOUT
        os.mkfifo(entries / f"{key_digest('fifo')}.npz")
        (entries / f"{key_digest('bs')}.npz").write_bytes(b"B's own file")
    """, str(folder))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = _run("""
            import sys
            import numpy as np
            from diversity_core.store import ResultStore
            print(ResultStore(sys.argv[1]).get_or_compute("fifo", lambda: np.arange(5)).sum())
        """, str(folder), timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "10", done.stderr
        assert main(["cache", "clear", "--cache-dir", str(folder)]) == 0
    theirs = _entry(folder, "bs")
    assert theirs.read_bytes() == b"B's own file"  # not the store's: B's, kept
    # B replaces the entries folder by a link to A's files
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / f"{key_digest('x')}.npz").write_bytes(b"A's precious file")
    _as_other_user(f"""
        os.rename(folder / store.LAYOUT, folder / "moved")
        os.symlink({str(victim)!r}, folder / store.LAYOUT)
    """, str(folder))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["cache", "clear", "--cache-dir", str(folder)]) == 0
        assert ResultStore(folder, max_bytes=10).get_or_compute("y", lambda: np.arange(2)).size == 2
    assert (victim / f"{key_digest('x')}.npz").read_bytes() == b"A's precious file"
    assert any("symbolic link" in str(w.message) for w in _cache_warnings(caught))


# ------------------------------------------------------------------------------------------
# 40.6: reading an entry is budgeted
# ------------------------------------------------------------------------------------------
def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _bomb(path: Path, key: str, inflated: int) -> None:
    """A small deflated member that inflates to ``inflated`` bytes, under a header declaring 8 bytes."""
    import json

    header = json.dumps({"type": "ndarray", "key": key, "label": "", "created": 0.0,
                         "arrays": {"X": {"dtype": "<f8", "shape": [1]}}}, sort_keys=True).encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("a.X.npy", "w") as m:
            np.lib.format.write_array_header_1_0(m, {"descr": "<f8", "fortran_order": False,
                                                     "shape": (inflated // 8,)})
            chunk = bytes(1 << 20)
            for _ in range(inflated >> 20):
                m.write(chunk)
        for name, data in (("__meta__", header), ("__mac__", bytes(32)), ("__checksum__", bytes(16))):
            with zf.open(f"{name}.npy", "w") as m:
                np.lib.format.write_array(m, np.frombuffer(data, np.uint8))


def test_deflated_bomb_is_refused_before_decompressing(tmp_path):
    rs = ResultStore(tmp_path / "s")
    rs.put("k", np.arange(3.0))
    path = _entry(rs.folder, "k")
    _bomb(path, key_digest("k"), 64 << 20)
    assert path.stat().st_size < 1 << 20  # about 64 KiB on disk
    fresh = ResultStore(rs.folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        peak = _peak_bytes(lambda: np.testing.assert_array_equal(fresh.get_or_compute("k", lambda: np.arange(3.0)),
                                                                 np.arange(3.0)))
    assert peak < 8 << 20  # it used to inflate all 64 MiB (1.56 GB for the file)
    (w,) = _cache_warnings(caught)
    assert "compressed or encrypted member" in str(w.message)


def test_member_declaring_a_huge_array_is_refused_before_allocating(tmp_path):
    rs = ResultStore(tmp_path / "s")
    rs.put("k", np.arange(3.0))
    path = _entry(rs.folder, "k")
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    # the array member's own .npy header now declares 1 GiB of data in a file of a few hundred bytes
    head = np.lib.format.header_data_from_array_1_0(np.zeros(1))
    head["shape"] = (1 << 27,)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, head)
    members["a.X.npy"] = buf.getvalue() + np.arange(3.0).tobytes()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    fresh = ResultStore(rs.folder)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        peak = _peak_bytes(lambda: fresh.get("k"))
    assert peak < 8 << 20  # numpy allocates the array its .npy header declares before reading it
    (w,) = _cache_warnings(caught)
    assert re.search(r"corrupt or truncated.*not what its header declares", str(w.message))


def test_entry_larger_than_the_budget_is_not_read(tmp_path):
    rs = ResultStore(tmp_path / "s")
    rs.put("k", np.zeros(10_000))
    small = ResultStore(rs.folder, max_bytes="4K")
    with pytest.warns(CacheWarning, match=r"more than the store's bound or the memory budget"):
        assert small.get("k") is None


# ------------------------------------------------------------------------------------------
# 40.7: temporaries of killed writers are counted and cleared
# ------------------------------------------------------------------------------------------
@posix_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_writer_killed_mid_write_leaves_a_temporary_that_info_counts_and_clear_removes(tmp_path, sig):
    from diversity_core.cli import main

    folder = tmp_path / "s"
    done = _run(f"""
        import os, sys
        import numpy as np
        from diversity_core import store

        def savez_then_die(f, **members):  # killed in the middle of writing the entry
            f.write(b"PK" + bytes(5 << 20))
            f.flush()
            os.kill(os.getpid(), {int(sig)})

        store.np.savez = savez_then_die
        store.ResultStore(sys.argv[1]).put("big", np.zeros(1 << 20))
    """, str(folder))
    assert done.returncode == -sig
    shown = ResultStore(folder).info()
    assert (shown.entries, shown.temporaries) == (0, 1) and shown.temporary_bytes >= 5 << 20
    assert main(["cache", "clear", "--cache-dir", str(folder)]) == 0
    assert ResultStore(folder).info().temporaries == 0
    assert not [p for p in (folder / store.LAYOUT).iterdir() if ".tmp" in p.name]
