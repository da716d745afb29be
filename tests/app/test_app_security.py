"""Issue 15, the app side: server files, Markdown in messages, the upload limit, the launcher.

Each test reproduces an attack a visitor could make on a served app and checks the refusal:
reading a server file by a link or the path box, telling a missing file from one outside the
data folder, drawing an attacker's image or link inside the app's own message box.
"""

from __future__ import annotations

import argparse
import builtins
import io
import os
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import diversity_core.data as dcdata
import ui.data as uidata
from diversity_core.cli import COMMANDS, build_parser
from diversity_core.cli import _app as cli_app
from diversity_core.data import DEFAULT_MAX_BYTES
from diversity_core.exceptions import DiversityInputError
from ui.feedback import literal

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
EVIL = "![x](http://evil/x.png) [click](http://evil)"
TURNED_OFF = "reading files from the server is turned off"


def start(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    if query:
        at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def no_reads(monkeypatch):
    """Record every load_dataset call and every open() of a path outside the repository."""
    calls = []
    real_load, real_open = dcdata.load_dataset, builtins.open
    # the server's own limits (/proc/self/cgroup, /proc/self/status) are read once per process,
    # whenever the first module needing the memory budget is imported: before the visitor's run
    from diversity_core._config import memory_budget

    memory_budget()

    def load(path, *a, **k):
        calls.append(("load_dataset", str(path)))
        return real_load(path, *a, **k)

    def guarded_open(file, *a, **k):
        if isinstance(file, (str, os.PathLike)) and str(file).startswith(("/etc", "/root", "/proc")):
            calls.append(("open", str(file)))
        return real_open(file, *a, **k)

    for module in (uidata.folder, uidata.uploads):  # the two modules that read files
        monkeypatch.setattr(module, "load_dataset", load)
    monkeypatch.setattr(builtins, "open", guarded_open)
    return calls


def _messages(at: AppTest) -> list:
    return [e.value for e in at.error] + [w.value for w in at.warning]


# ------------------------------------------------------------------------------------------
# 1. server files
# ------------------------------------------------------------------------------------------
def test_link_to_a_server_file_is_refused_without_a_data_folder(monkeypatch, no_reads):
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start({"path": "/etc/passwd"})
    assert any(TURNED_OFF in m for m in _messages(at)), _messages(at)
    assert not any("root:" in m for m in _messages(at))
    assert at.session_state["dataset"].name == "digits"
    assert at.session_state["source"] == "Demo"
    assert "path" not in at.query_params
    assert not no_reads, no_reads


def test_local_path_source_is_hidden_without_a_data_folder(monkeypatch):
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    assert "Local path" not in at.sidebar.radio(key="source").options
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(ROOT / "tests"))
    assert "Local path" in start().sidebar.radio(key="source").options


def test_path_box_refuses_everything_without_a_data_folder(monkeypatch, no_reads):
    """An old session's path (the box is hidden now) is refused before any read."""
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=240)
    at.session_state["source"] = "Local path"
    at.session_state["path"] = "/etc/passwd"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Local path" not in at.sidebar.radio(key="source").options
    assert any(TURNED_OFF in m for m in _messages(at)), _messages(at)
    assert not no_reads, no_reads
    with pytest.raises(DiversityInputError, match=TURNED_OFF):
        uidata.load_path("/etc/passwd", {})


def _load_via_box(at: AppTest, path: str) -> AppTest:
    at.sidebar.radio(key="source").set_value("Local path").run()
    at.sidebar.text_input(key="path").input(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_outside_and_missing_give_one_message(tmp_path, monkeypatch, no_reads):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "secret.csv").write_text("password,hunter2\n1,2\n")
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(data))
    outside = _load_via_box(start(), "../secret.csv")
    missing = _load_via_box(start(), "../secreT.csv")  # same length, does not exist anywhere
    m_out = [e.value for e in outside.error]
    m_missing = [e.value for e in missing.error]
    assert m_out and len(m_out) == len(m_missing)
    assert [m.replace("secret", "secreT") for m in m_out] == m_missing
    assert not any("hunter2" in m or "password" in m for m in m_out)
    assert not [c for c in no_reads if "secret" in c[1]], no_reads
    # an absolute path outside, by a link, is refused the same way and read never
    linked = start({"path": str(tmp_path / "secret.csv")})
    assert any("no such file or folder in the data folder" in e.value for e in linked.error)
    assert linked.session_state["dataset"].name == "digits"
    assert not [c for c in no_reads if "secret" in c[1]], no_reads


def test_file_inside_the_data_folder_loads(tmp_path, monkeypatch):
    X = np.random.default_rng(0).normal(size=(40, 5))
    np.save(tmp_path / "emb.npy", X)
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    at = _load_via_box(start(), "emb.npy")
    assert not at.error
    ds = at.session_state["dataset"]
    assert (ds.name, ds.n) == ("emb.npy", 40)
    assert at.query_params["path"] == "emb.npy"
    again = start({"path": "emb.npy"})  # the link reopens it
    assert again.session_state["dataset"].n == 40
    # the picker lists the folder and fills the box
    assert at.sidebar.selectbox(key="_path_pick").options == ["emb.npy"]


def test_symlink_out_of_the_data_folder_is_refused(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    np.save(tmp_path / "outside.npy", np.eye(3))
    (data / "link.npy").symlink_to(tmp_path / "outside.npy")
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(data))
    at = _load_via_box(start(), "link.npy")
    assert any("no such file or folder in the data folder" in e.value for e in at.error)
    assert at.session_state["dataset"].name == "digits"


def test_cli_app_command(tmp_path, monkeypatch):
    assert "app" in COMMANDS
    monkeypatch.setenv(cli_app.DATA_DIR_ENV, "/")  # inherited: must not turn reading on
    args = build_parser().parse_args(["app"])
    argv, env = cli_app.streamlit_command(args)
    assert cli_app.DATA_DIR_ENV not in env
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert argv[argv.index("--server.maxUploadSize") + 1] == str(DEFAULT_MAX_BYTES >> 20)
    assert argv[1:3] == ["-m", "ui.serve"] and Path(argv[3]) == ROOT / "app.py"
    args = build_parser().parse_args(["app", "--data-dir", str(tmp_path), "--port", "9000", "--address", "0.0.0.0"])
    argv, env = cli_app.streamlit_command(args)
    assert env[cli_app.DATA_DIR_ENV] == str(tmp_path.resolve())
    assert argv[argv.index("--server.port") + 1] == "9000"
    assert cli_app.DATA_DIR_ENV == uidata.DATA_DIR_ENV
    with pytest.raises(DiversityInputError, match="not a folder"):
        cli_app.streamlit_command(argparse.Namespace(data_dir=str(tmp_path / "nope"), port=1, address="x"))


def test_default_bind_address_is_loopback():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    assert '"--server.address", "127.0.0.1"' in (ROOT / "dev.py").read_text()


# ------------------------------------------------------------------------------------------
# 2. Markdown in messages
# ------------------------------------------------------------------------------------------
def test_literal_escapes_links_and_images():
    text = literal(EVIL)
    assert not re.search(r"(?<!\\)[\[\]!]", text), text  # every bracket and ! escaped
    assert "http://" not in text  # no autolink
    assert literal(":material/home: x*y*") == "\\:material\\/home\\: x\\*y\\*"  # issue 26 item 14: "/" too
    assert text.replace("\\", "").replace("\u2060", "") == EVIL  # escapes and invisible joiners (issue 26)
    assert literal("a\nb") == "a b"


def test_path_in_a_link_is_shown_as_literal_text(tmp_path, monkeypatch):
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start({"path": EVIL})
    shown = [e.value for e in at.error]
    assert shown and all("![x](" not in m and "[click](" not in m for m in shown), shown
    assert any("\\!\\[x\\](h\u2060ttp\\:" in m for m in shown), shown  # a joiner stops GFM's autolink (issue 26)
    # the same inside a data folder (the refusal quotes the path)
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    at = start({"path": EVIL})
    shown = [e.value for e in at.error]
    assert shown and all("![x](" not in m and "[click](" not in m for m in shown), shown


def test_demo_name_in_a_link_is_shown_as_literal_text():
    at = start({"demo": EVIL})
    shown = [w.value for w in at.warning]
    assert any("does not exist" in m for m in shown), shown
    assert all("![x](" not in m and "[click](" not in m for m in shown), shown


def test_file_and_group_names_are_shown_as_literal_text(tmp_path, monkeypatch):
    """An upload named like a Markdown image, whose group column holds a link, fails to load:
    the error box quotes both as text."""
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    body = f"x,y,group\n1,2,{EVIL.replace(',', ' ')}\n".encode()
    at.sidebar.file_uploader(key="upload").upload(f"{EVIL}.npy", body).run()
    shown = [e.value for e in at.error]
    assert shown, "the broken upload must show an error"
    assert all("![x](" not in m and "[click](" not in m for m in shown), shown
    # a group name inside a core message (attempt/require) is escaped the same way
    from ui import feedback

    box = []
    monkeypatch.setattr(feedback.st, "error", lambda body, icon=None: box.append(body))
    feedback.attempt(lambda: (_ for _ in ()).throw(DiversityInputError(f"group {EVIL!r} is empty")),
                     "Measuring")
    assert box and "![x](" not in box[0] and r"\[click\]" in box[0]


def test_group_names_from_the_data_are_literal_on_the_pages(monkeypatch):
    """A table whose group column holds Markdown: the Scores reading, the Dataset page's tabs and
    captions show the name as text."""
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(1)
    rows = ["a,b,c,group"] + [f"{x:.3f},{y:.3f},{z:.3f},{EVIL if i % 2 else 'plain'}"
                              for i, (x, y, z) in enumerate(rng.normal(size=(40, 3)))]
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("group").run()
    at.sidebar.file_uploader(key="upload").upload("t.csv", "\n".join(rows).encode()).run()
    assert not at.exception, [e.value for e in at.exception]
    assert EVIL in at.session_state["dataset"].group_names()
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert any(literal(EVIL) in m for m in shown), shown  # the Scores reading names the group
    at.switch_page("app_pages/1_dataset.py").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption] + [t.label for t in at.tabs]
    assert literal(EVIL) in [t.label for t in at.tabs]
    assert all("![x](" not in m and "[click](" not in m for m in shown), shown


# ------------------------------------------------------------------------------------------
# 3. one upload limit
# ------------------------------------------------------------------------------------------
def test_upload_limit_and_loader_limit_agree():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == DEFAULT_MAX_BYTES == uidata.MAX_UPLOAD_BYTES
    assert cli_app.upload_limit_mb() == config["server"]["maxUploadSize"]


def test_rejected_upload_leaves_no_temporary_file(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(DiversityInputError):
        uidata.load_upload("broken.npy", io.BytesIO(b"not numpy"), {})
    assert list(tmp_path.iterdir()) == []


def test_refused_upload_is_freed(monkeypatch):
    """A refused upload is let go: its file object closed and the failed load's memory collected;
    a later change of options retries it without an exception, and the demo stays loaded."""
    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    freed = []
    real = uidata.discard_uploads

    def spy(upload):
        freed.extend(upload if isinstance(upload, list) else [upload])
        real(upload)

    monkeypatch.setattr(uidata.loading, "discard_uploads", spy)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("broken.npy", b"x" * 100_000).run()
    assert any("Could not load the upload" in e.value for e in at.error)
    assert [f.name for f in freed] == ["broken.npy"] and all(f.closed for f in freed)
    assert not any(isinstance(at.session_state[k], (bytes, bytearray)) for k in ("dataset", "load_error", "_source_tried"))
    assert at.session_state["dataset"].name == "digits"
    at.sidebar.text_input(key="group_column").input("g").run()  # a new attempt on the freed upload
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["dataset"].name == "digits"


def test_comparison_exports_name_no_server_path(tmp_path, monkeypatch):
    """The comparison's JSON and report record each group's source as visitors see it (relative to the
    data folder), not the server's absolute path."""
    from diversity_core.data import load_dataset
    from ui.compare_ui import source_notes

    rng = np.random.default_rng(0)
    rows = ["x,y,model"] + [f"{a:.3f},{b:.3f},{'ab'[i % 2]}" for i, (a, b) in enumerate(rng.normal(size=(40, 2)))]
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "t.csv").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    ds = load_dataset(tmp_path / "runs" / "t.csv", group_column="model")
    assert str(tmp_path) in ds.source
    notes = source_notes(ds, ["a", "b"], ds.content_hash, "embeddings")
    assert {n["source"] for n in notes.values()} == {"data folder: runs/t.csv"}
    assert str(tmp_path) not in repr(notes)
