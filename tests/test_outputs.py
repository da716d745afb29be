"""Issue 26 items 1-5 and 17: where outputs go, all outputs of a run together, signals, exit codes; dev.py's stamp.

Each test reproduces one failure of the issue. Devices are made with ``mknod`` inside the test's
own folder (root only): the real ``/dev/null`` and ``/dev/stdout`` are never written to, so a
regression cannot damage the machine.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from diversity_core import _atomic
from diversity_core._atomic import atomic_write, output_transaction, resolve_output
from diversity_core.cli import main as cli_main
from diversity_core.exceptions import DiversityInputError

ROOT = Path(__file__).resolve().parents[1]
COMPARE_FAST = ("--no-magnitude", "--no-size-curve", "--n-subsamples", "2")


def run_cli(*args, cwd=None, fsize=None, timeout=240):
    """``diversity ARGS`` in a subprocess (with a file size limit when given)."""

    def limits():
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([sys.executable, "-m", "diversity_core.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, preexec_fn=limits,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


def mknod_or_skip(path: Path, kind: int, major: int, minor: int) -> Path:
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"mknod needs root and the capability: {exc}")
    return path


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("diversity: error: "), err
    assert "Traceback" not in err and ".tmp" not in err
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test when ``compare`` or ``curate`` starts loading data (a refusal must come first)."""
    from diversity_core.cli import _compare, _curate

    monkeypatch.setattr(_compare, "_load_groups", lambda args: pytest.fail("compare loaded its data"))
    monkeypatch.setattr(_curate, "dataset_from_args", lambda args: pytest.fail("curate loaded its data"))


@pytest.fixture
def groups(tmp_path):
    rng = np.random.default_rng(3)
    np.save(tmp_path / "g1.npy", rng.normal(size=(30, 4)))
    np.save(tmp_path / "g2.npy", rng.normal(size=(30, 4)) * 2)
    return tmp_path


# --------------------------------------------------------------------------------------------
# item 1: devices, FIFOs, descriptors and links
# --------------------------------------------------------------------------------------------


class TestDestinations:
    def test_a_character_device_is_written_through_not_replaced(self, tmp_path):
        null = mknod_or_skip(tmp_path / "null", stat.S_IFCHR, 1, 3)
        atomic_write(null, "report")
        assert stat.S_ISCHR(os.stat(null).st_mode)
        assert os.listdir(tmp_path) == ["null"]

    @pytest.mark.requires("plotly", "jinja2")
    def test_cli_out_to_a_device_keeps_the_device(self, groups):
        null = mknod_or_skip(groups / "null", stat.S_IFCHR, 1, 3)
        assert cli_main(["compare", str(groups / "g1.npy"), str(groups / "g2.npy"), *COMPARE_FAST,
                         "--out", str(null), "--json", str(null.with_name("c.json"))]) == 0
        assert stat.S_ISCHR(os.stat(null).st_mode)
        assert json.loads((groups / "c.json").read_text())["groups"] == ["g1", "g2"]

    def test_a_full_device_is_exit_2(self, groups, capsys):
        full = mknod_or_skip(groups / "full", stat.S_IFCHR, 1, 7)
        code = cli_main(["compare", str(groups / "g1.npy"), str(groups / "g2.npy"), *COMPARE_FAST,
                         "--json", str(full)])
        assert code == 2
        assert f"cannot write {full}: No space left on device" in one_line_error(capsys.readouterr().err)
        assert stat.S_ISCHR(os.stat(full).st_mode)

    def test_a_fifo_is_written_through(self, tmp_path):
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        received = []
        reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
        reader.start()
        try:
            atomic_write(fifo, b"through the pipe")
            reader.join(10)
        finally:
            if reader.is_alive():  # a regression replaced the FIFO: release the blocked reader
                with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
                    pass
        assert received == [b"through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.listdir(tmp_path) == ["pipe"]

    def test_a_symlink_stays_a_link_and_its_file_is_replaced(self, tmp_path):
        (tmp_path / "data").mkdir()
        real = tmp_path / "data" / "report.html"
        real.write_text("old")
        os.chmod(real, 0o640)
        link = tmp_path / "latest.html"
        link.symlink_to(real)
        atomic_write(link, "new")
        assert link.is_symlink() and os.readlink(link) == str(real)
        assert real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640
        dangling = tmp_path / "next.html"
        dangling.symlink_to(tmp_path / "data" / "next-target.html")
        atomic_write(dangling, "created")
        assert dangling.is_symlink() and (tmp_path / "data" / "next-target.html").read_text() == "created"
        assert sorted(os.listdir(tmp_path / "data")) == ["next-target.html", "report.html"]

    def test_a_link_to_a_descriptor_writes_to_it(self, tmp_path):
        """``/proc/self/fd/1`` (behind a link, as ``/dev/stdout`` is) is the process's stdout, not a file."""
        link = tmp_path / "to-stdout"
        link.symlink_to("/proc/self/fd/1")
        code = ("import sys; from diversity_core._atomic import atomic_write; print('before', flush=True); "
                f"atomic_write({str(link)!r}, 'the report\\n'); atomic_write('/proc/self/fd/1', 'again\\n')")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        assert res.stdout == "before\nthe report\nagain\n"
        assert link.is_symlink() and os.listdir(tmp_path) == ["to-stdout"]
        assert resolve_output("/dev/stdout").kind == "descriptor" and resolve_output("/dev/fd/2").fd == 2

    @pytest.mark.parametrize("kind", ["empty", "folder", "block", "loop", "missing folder"])
    def test_refused(self, tmp_path, kind):
        path = {"empty": "", "folder": str(tmp_path), "missing folder": str(tmp_path / "no" / "r.html")}.get(kind)
        if kind == "block":
            path = mknod_or_skip(tmp_path / "disk", stat.S_IFBLK, 7, 200)
        if kind == "loop":
            path = tmp_path / "a"
            path.symlink_to(tmp_path / "b")
            (tmp_path / "b").symlink_to(path)
        match = {"empty": "the path is empty", "folder": "it is a folder", "block": "block device",
                 "loop": "symbolic link loop", "missing folder": "does not exist"}[kind]
        with pytest.raises(DiversityInputError, match=match):
            atomic_write(path, "x")
        if kind == "block":
            assert stat.S_ISBLK(os.stat(path).st_mode)


# --------------------------------------------------------------------------------------------
# item 2: an output that is one of the inputs
# --------------------------------------------------------------------------------------------


class TestOutputIsAnInput:
    @pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
    def test_compare_refuses_before_any_work(self, groups, how, capsys, no_work):
        target = groups / "g1.npy"
        before = target.read_bytes()
        out = {"same": target, "symlink": groups / "link.html", "hardlink": groups / "hard.html"}[how]
        if how == "symlink":
            out.symlink_to(target)
        elif how == "hardlink":
            os.link(target, out)
        assert cli_main(["compare", str(target), str(groups / "g2.npy"), "--out", str(out)]) == 2
        assert "is the input" in one_line_error(capsys.readouterr().err)
        assert target.read_bytes() == before

    def test_curate_refuses_its_input_and_two_outputs_in_one_file(self, groups, capsys, no_work):
        data = groups / "g1.npy"
        before = data.read_bytes()
        assert cli_main(["curate", str(data), "--items-out", str(data)]) == 2
        assert "--items-out" in one_line_error(capsys.readouterr().err)
        assert data.read_bytes() == before
        out = groups / "x.csv"
        out.write_text("old")
        assert cli_main(["curate", str(data), "--select", "3", "--out", str(out), "--items-out", str(out)]) == 2
        assert "name the same file" in one_line_error(capsys.readouterr().err)
        assert out.read_text() == "old"


# --------------------------------------------------------------------------------------------
# item 3: all outputs of a run together
# --------------------------------------------------------------------------------------------


class TestTransaction:
    @pytest.mark.requires("plotly", "jinja2")
    def test_file_size_limit_keeps_every_previous_output(self, groups):
        """``ulimit -f``: the HTML report cannot be written, so the JSON and CSV keep the old run too."""
        old = {name: f"previous {name}\n" for name in ("cmp.json", "cmp.csv", "report.html")}
        for name, text in old.items():
            (groups / name).write_text(text)
        res = run_cli("compare", "g1.npy", "g2.npy", *COMPARE_FAST, "--json", "cmp.json", "--csv", "cmp.csv",
                      "--out", "report.html", cwd=groups, fsize=1 << 20)
        assert res.returncode == 2, res.stderr
        line = one_line_error(res.stderr)
        assert "cannot write report.html: File too large; the previous file is unchanged" in line
        assert "Not written (unchanged): cmp.json, cmp.csv" in line
        assert {name: (groups / name).read_text() for name in old} == old
        assert not [p for p in os.listdir(groups) if ".tmp" in p]

    def test_a_failure_inside_the_block_changes_nothing(self, tmp_path):
        (tmp_path / "a.json").write_text("old a")
        with pytest.raises(RuntimeError, match="renderer died"):
            with output_transaction():
                atomic_write(tmp_path / "a.json", "new a")
                atomic_write(tmp_path / "b.csv", "new b")
                raise RuntimeError("renderer died")
        assert sorted(os.listdir(tmp_path)) == ["a.json"] and (tmp_path / "a.json").read_text() == "old a"

    def test_a_failed_rename_says_what_was_written(self, tmp_path, monkeypatch):
        for name in ("a.json", "b.csv"):
            (tmp_path / name).write_text("old")
        real_replace = os.replace
        calls = []

        def second_fails(src, dst):
            calls.append(dst)
            if len(calls) == 2:
                raise OSError(errno.EIO, "Input/output error")
            real_replace(src, dst)

        monkeypatch.setattr(_atomic.os, "replace", second_fails)
        with pytest.raises(DiversityInputError, match=r"cannot write .*b\.csv: Input/output error; the previous "
                                                      r"file is unchanged\. Already written: .*a\.json\."):
            with output_transaction():
                atomic_write(tmp_path / "a.json", "new")
                atomic_write(tmp_path / "b.csv", "new")
        assert (tmp_path / "a.json").read_text() == "new" and (tmp_path / "b.csv").read_text() == "old"
        assert sorted(os.listdir(tmp_path)) == ["a.json", "b.csv"]

    def test_the_same_destination_twice_is_refused(self, tmp_path):
        link = tmp_path / "link.json"
        link.symlink_to(tmp_path / "a.json")
        with pytest.raises(DiversityInputError, match="written twice"):
            with output_transaction():
                atomic_write(tmp_path / "a.json", "1")
                atomic_write(link, "2")
        assert os.listdir(tmp_path) == ["link.json"]


# --------------------------------------------------------------------------------------------
# item 4: signals, stale temporary files, an empty path
# --------------------------------------------------------------------------------------------


class TestTemporaries:
    def test_sigterm_during_a_write_removes_the_temporary_file(self, tmp_path):
        code = (
            "import os, signal, time\n"
            "from diversity_core._atomic import atomic_output\n"
            f"with atomic_output({str(tmp_path / 'r.html')!r}) as tmp:\n"
            "    tmp.write_text('half')\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert res.returncode == 128 + signal.SIGTERM, res.stderr
        assert os.listdir(tmp_path) == []

    def test_stale_temporaries_of_the_output_are_removed(self, tmp_path):
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        old = time.time() - 2 * _atomic.STALE_AFTER_S
        files = [  # (name, made old, removed)
            (f".r.html.{dead.pid}.0123456789ab.tmp.html", False, True),  # its process is gone
            (".r.html.0123456789ab.tmp.html", True, True),  # the former naming, old
            (".r.html.abcd_123.tmp", True, True),  # the former naming of curate's CSV files, old
            (f".r.html.{os.getpid()}.0123456789ab.tmp.html", False, False),  # a live writer's, recent
            (".other.html.0123456789ab.tmp.html", True, False),  # another output's
            ("r.html.bak", True, False),  # not a temporary file of ours
        ]
        for name, make_old, _removed in files:
            (tmp_path / name).write_text("x")
            if make_old:
                os.utime(tmp_path / name, (old, old))
        atomic_write(tmp_path / "r.html", "new")
        assert sorted(os.listdir(tmp_path)) == sorted([n for n, _o, removed in files if not removed] + ["r.html"])

    @pytest.mark.parametrize("argv", [["compare", "g1.npy", "g2.npy", "--out", ""],
                                      ["compare", "g1.npy", "g2.npy", "--figures", ""],
                                      ["curate", "g1.npy", "--items-out", ""]])
    def test_an_empty_output_path_is_refused(self, groups, argv, capsys, monkeypatch, no_work):
        monkeypatch.chdir(groups)
        assert cli_main(argv) == 2
        assert "the path is empty" in one_line_error(capsys.readouterr().err)


# --------------------------------------------------------------------------------------------
# item 5: every failed output is exit 2 with one line naming the user's path
# --------------------------------------------------------------------------------------------


class TestExitCodes:
    @pytest.mark.parametrize("target, match", [("/dev/full", "is a character device, not a folder"),
                                               ("file", "is a file, not a folder")])
    def test_figures_must_be_a_folder(self, groups, target, match, capsys, no_work):
        if target == "file":
            target = str(groups / "existing.png")
            Path(target).write_bytes(b"png")
        assert cli_main(["compare", str(groups / "g1.npy"), str(groups / "g2.npy"), "--figures", target]) == 2
        assert match in one_line_error(capsys.readouterr().err)

    def test_a_read_only_folder_is_refused_before_any_work(self, groups, capsys, monkeypatch, no_work):
        ro = groups / "ro"
        ro.mkdir()
        real_access = os.access
        monkeypatch.setattr(_atomic.os, "access", lambda p, mode: False if Path(p) == ro else real_access(p, mode))
        assert cli_main(["curate", str(groups / "g1.npy"), "--items-out", str(ro / "items.csv")]) == 2
        assert "is not writable" in one_line_error(capsys.readouterr().err)
        assert cli_main(["compare", str(groups / "g1.npy"), str(groups / "g2.npy"), "--figures", str(ro / "f")]) == 2
        assert "is not writable" in one_line_error(capsys.readouterr().err)

    def test_an_oserror_names_the_users_path_not_the_temporary_file(self, groups, capsys, monkeypatch):
        def denied(tmp, final):
            raise PermissionError(errno.EACCES, "Permission denied", str(tmp))

        monkeypatch.setattr(_atomic, "_create", denied)
        out = groups / "items.csv"
        assert cli_main(["curate", str(groups / "g1.npy"), "--items-out", str(out)]) == 2
        line = one_line_error(capsys.readouterr().err)
        assert f"cannot write {out}: Permission denied; no file was written" in line

    def test_a_writer_error_naming_a_temporary_file_is_named_after_the_output(self, tmp_path, monkeypatch):
        """kaleido (or any writer given a temporary path) failing with an OSError about that path."""
        from diversity_core.report import export as export_module

        class FakePio:
            @staticmethod
            def write_images(figs, paths, **kw):
                raise PermissionError(errno.EACCES, "Permission denied", str(paths[1]))

        class Fig:
            class layout:
                width = height = None

        monkeypatch.setattr(export_module, "_prepare_kaleido", lambda: None)
        monkeypatch.setattr(export_module, "require", lambda name, purpose=None: FakePio)
        monkeypatch.setattr(export_module, "comparison_figures", lambda cmp, presentation=False: {"a": Fig(), "b": Fig()})
        with pytest.raises(DiversityInputError, match=r"cannot write .*figs/b\.png: Permission denied") as info:
            export_module.export_figures(None, tmp_path / "figs")
        assert ".tmp" not in str(info.value)
        assert os.listdir(tmp_path) == []  # the folder made for the figures is removed again


# --------------------------------------------------------------------------------------------
# item 17: dev.py's install stamp and banner (dev.py imported as a module; nothing is installed)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def dev(tmp_path):
    spec = importlib.util.spec_from_file_location("dev_under_test", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "diversity-explorer"\n[project.optional-dependencies]\n'
        'app = ["streamlit"]\nrnd = ["torch"]\nall = ["diversity-explorer[app,rnd]"]\ntest = ["pytest"]\n'
    )
    venv = tmp_path / "venv"
    venv.mkdir()
    return module, root, venv


class TestDevStamp:
    def test_an_installed_superset_satisfies_a_subset(self, dev):
        module, root, venv = dev
        assert module.install_needed("all", venv=venv, root=root) == (True, frozenset({"all"}))
        module.write_stamp({"all", "test"}, venv=venv, root=root)
        assert module.install_needed("all", venv=venv, root=root)[0] is False
        assert module.install_needed("app", venv=venv, root=root)[0] is False  # inside "all"
        assert module.install_needed("all,test", venv=venv, root=root)[0] is False

    def test_new_extras_or_a_changed_pyproject_install_again(self, dev):
        module, root, venv = dev
        module.write_stamp({"app"}, venv=venv, root=root)
        assert module.install_needed("app,rnd", venv=venv, root=root) == (True, frozenset({"app", "rnd"}))
        (root / "pyproject.toml").write_text((root / "pyproject.toml").read_text() + "# changed\n")
        assert module.install_needed("app", venv=venv, root=root) == (True, frozenset({"app"}))

    def test_the_stamp_of_an_older_dev_py_counts(self, dev):
        module, root, venv = dev
        (venv / ".setup-stamp-all-test").write_text(module.pyproject_digest(root))
        assert module.install_needed("all", venv=venv, root=root)[0] is False

    def test_the_banner_shows_the_address_that_answers(self, dev):
        module = dev[0]
        assert module.app_url([]) == "http://127.0.0.1:8501"
        assert module.app_url(["--server.port", "9000"]) == "http://127.0.0.1:9000"
        assert module.app_url(["--server.address=0.0.0.0", "--server.port=80"]) == "http://127.0.0.1:80"
        assert module.app_url(["--server.address", "::1"]) == "http://[::1]:8501"
