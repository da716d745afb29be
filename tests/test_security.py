"""Issue 15: no server file readable by a visitor, no input that crashes or hangs, no write that destroys a result.

Each test reproduces one attack or failure of the issue. Inputs that crashed, hung or ate memory
before the fix run in a subprocess with a timeout and a memory limit, so that a regression fails
the test instead of the test run.
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diversity_core._atomic import atomic_output, atomic_write
from diversity_core._config import config_context
from diversity_core.data import load_dataset, resolve_user_path
from diversity_core.data._paths import read_regular_bytes
from diversity_core.exceptions import DiversityInputError, MemoryBudgetError

#: A marker standing for the content of a private file; no message may contain it.
SECRET = "s3cr3t-Token"
PASSWD = f"root:x:0:0:{SECRET}:/root:/bin/bash\ndaemon:x:1:1:{SECRET}:/usr/sbin:/usr/sbin/nologin\n"


def run_cli(*args, cwd=None, fsize=None, memory=3 << 30, timeout=240):
    """``diversity ARGS`` in a subprocess under a memory limit (and a file size limit)."""

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-m", "diversity_core.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=timeout, preexec_fn=limits,
    )


def run_python(code: str, *, memory=2 << 30, timeout=60):
    """A snippet in a subprocess under a memory limit."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory)),
    )


def pil_image():
    """``PIL.Image``, or skip the test: image files need Pillow (extra [images])."""
    return pytest.importorskip("PIL.Image", reason="image files need Pillow (extra [images])")


def png(path: Path, colour=(200, 30, 30), size=(8, 8), fmt="PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pil_image().new("RGB", size, colour).save(path, format=fmt)
    return path


def png_bytes(colour, size=(4, 4)) -> bytes:
    buf = io.BytesIO()
    pil_image().new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def data_dir(tmp_path) -> Path:
    """A served data folder with an image folder and a table; a private file beside it."""
    root = tmp_path / "served"
    for i in range(3):
        png(root / "imgs" / f"{i}.png", (40 + 80 * i, 0, 0))  # none all black: those are skipped (issue 26)
    (root / "x.csv").write_text("a,b\n1,2\n3,4\n5,7\n")
    (tmp_path / "private.txt").write_text(PASSWD)
    return root


# --------------------------------------------------------------------------------------------
# 1. the data-folder policy, and messages that never quote a file
# --------------------------------------------------------------------------------------------


class TestDataFolderPolicy:
    def test_inside_paths_resolve(self, data_dir):
        assert resolve_user_path("x.csv", data_dir=data_dir) == (data_dir / "x.csv").resolve()
        assert resolve_user_path("imgs/../x.csv", data_dir=data_dir) == (data_dir / "x.csv").resolve()
        assert resolve_user_path(str(data_dir / "imgs"), data_dir=data_dir) == (data_dir / "imgs").resolve()

    def test_local_paths_off_without_a_data_folder(self, data_dir):
        with pytest.raises(DiversityInputError, match="turned off"):
            resolve_user_path("x.csv", data_dir=None)

    @pytest.mark.parametrize("path", ["", "   ", "a\x00b"])
    def test_empty_and_nul_paths(self, data_dir, path):
        with pytest.raises(DiversityInputError, match="empty|NUL"):
            resolve_user_path(path, data_dir=data_dir)

    def test_outside_gives_one_message_whether_or_not_the_file_exists(self, data_dir, tmp_path):
        (data_dir / "link.csv").symlink_to(tmp_path / "private.txt")
        (data_dir / "dangling.csv").symlink_to(tmp_path / "nothing.txt")
        os.chmod(tmp_path / "private.txt", 0o000)
        try:
            messages = {}
            for label, path in {
                "existing, relative": "../private.txt",
                "missing, relative": "../nothing.txt",
                "existing, absolute": str(tmp_path / "private.txt"),
                "missing, absolute": str(tmp_path / "nothing.txt"),
                "symlink out": "link.csv",
                "dangling symlink": "dangling.csv",
                "missing inside": "nothing.csv",
            }.items():
                with pytest.raises(DiversityInputError) as info:
                    resolve_user_path(path, data_dir=data_dir)
                messages[label] = str(info.value).replace(repr(path), "PATH")
        finally:
            os.chmod(tmp_path / "private.txt", 0o644)
        assert len(set(messages.values())) == 1, messages
        assert "no such file or folder in the data folder" in next(iter(messages.values()))

    def test_hidden_entries_are_not_served(self, data_dir):
        (data_dir / ".env").write_text("TOKEN=" + SECRET)
        with pytest.raises(DiversityInputError, match="no such file or folder in the data folder"):
            resolve_user_path(".env", data_dir=data_dir)

    def test_load_dataset_confined(self, data_dir, tmp_path):
        ds = load_dataset("x.csv", data_dir=data_dir)
        assert ds.n == 3 and ds.modality == "embeddings"
        with pytest.raises(DiversityInputError, match="in the data folder"):
            load_dataset("../private.txt", data_dir=data_dir)
        with pytest.raises(DiversityInputError, match="in the data folder"):
            load_dataset("imgs", data_dir=data_dir, embeddings="../private.txt")

    def test_links_out_of_a_served_folder_are_skipped(self, data_dir, tmp_path):
        outside = png(tmp_path / "elsewhere" / "private.png", (1, 2, 3))
        (data_dir / "imgs" / "z.png").symlink_to(outside)
        ds = load_dataset("imgs", data_dir=data_dir)
        assert ds.n == 3
        assert [(s.where, s.reason) for s in ds.skipped] == [
            ("imgs/z.png", "a symbolic link that leads outside the data folder")
        ]
        # a local user (no data folder) follows the link
        assert load_dataset(data_dir / "imgs").n == 4


class TestMessagesNeverQuoteFiles:
    """An error or a skip reason names the row, column or entry, never the text found there."""

    def _message(self, fn) -> str:
        with pytest.raises(DiversityInputError) as info:
            fn()
        return str(info.value)

    @pytest.mark.requires("rdkit")
    def test_passwd_as_smiles_lists_no_lines(self, tmp_path):
        path = tmp_path / "p.smi"
        path.write_text(PASSWD + "CCO\nCCN\n")
        ds = load_dataset(path)
        lengths = [len(line.split()[0]) for line in PASSWD.splitlines()]
        assert [s.reason for s in ds.skipped] == [f"invalid SMILES ({k} characters)" for k in lengths]
        assert SECRET not in json.dumps(ds.summary())

    @pytest.mark.requires("rdkit")
    def test_passwd_as_smiles_with_too_few_molecules(self, tmp_path):
        path = tmp_path / "p.smi"
        path.write_text(PASSWD)
        assert SECRET not in self._message(lambda: load_dataset(path))

    @pytest.mark.parametrize("kwargs", [
        {"smiles_column": "smiles"}, {"text_column": "text"}, {"modality": "molecules"}, {"modality": "embeddings"},
        {"modality": "text", "text_column": "x"}, {"weight_column": "w"}, {"group_column": "g"},
    ])
    def test_passwd_as_a_table_names_columns_by_position(self, tmp_path, kwargs):
        path = tmp_path / "p.csv"
        path.write_text(PASSWD)
        try:
            ds = load_dataset(path, **kwargs)
        except DiversityInputError as exc:
            assert SECRET not in str(exc)
        else:
            assert SECRET not in json.dumps([s.to_dict() for s in ds.skipped])

    def test_non_numeric_weights_name_the_row(self, tmp_path):
        path = tmp_path / "w.csv"
        path.write_text(f"a,w\n1,2\n2,{SECRET}\n3,1\n")
        message = self._message(lambda: load_dataset(path, weight_column="w"))
        assert SECRET not in message and "w.csv row 2 (line 3)" in message

    def test_npy_signature_error_quotes_no_bytes(self, tmp_path):
        path = tmp_path / "p.npy"
        path.write_text(SECRET * 4)
        message = self._message(lambda: load_dataset(path))
        assert SECRET[:6] not in message and "signature" in message

    def test_csv_parse_error_quotes_no_line(self, tmp_path):
        path = tmp_path / "q.csv"
        path.write_text(f'a,b\n1,"{SECRET}\n')
        assert SECRET not in self._message(lambda: load_dataset(path))

    @pytest.mark.requires("rdkit")
    def test_sdf_weight_error_quotes_no_value(self, tmp_path):
        from rdkit import Chem

        blocks = []
        for smi in ("CCO", "CCN"):
            mol = Chem.MolFromSmiles(smi)
            mol.SetProp("w", SECRET)
            blocks.append(Chem.MolToMolBlock(mol) + f">  <w>\n{SECRET}\n\n$$$$\n")
        path = tmp_path / "m.sdf"
        path.write_text("".join(blocks))
        assert SECRET not in self._message(lambda: load_dataset(path, weight_column="w"))


# --------------------------------------------------------------------------------------------
# 2. atomic writes: a failed write keeps the previous result
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_groups(tmp_path_factory):
    folder = tmp_path_factory.mktemp("groups")
    rng = np.random.default_rng(3)
    np.save(folder / "a.npy", rng.normal(size=(30, 4)))
    np.save(folder / "b.npy", rng.normal(size=(30, 4)) * 2)
    return folder


class TestAtomicWrites:
    @pytest.mark.parametrize("flag,name", [
        pytest.param("--out", "report.html", marks=pytest.mark.requires("plotly", "jinja2")),
        ("--json", "cmp.json"), ("--csv", "cmp.csv")])
    def test_file_size_limit_keeps_the_previous_file(self, two_groups, flag, name):
        """``ulimit -f`` cuts the write short: exit 2, the previous file whole, no temporary file left."""
        previous = "previous good result\n" * 50
        target = two_groups / name
        target.write_text(previous)
        res = run_cli("compare", "a.npy", "b.npy", "--no-magnitude", "--no-size-curve", "--n-subsamples", "2",
                      flag, name, cwd=two_groups, fsize=256)
        assert res.returncode == 2, res.stderr
        assert f"cannot write {name}" in res.stderr and "previous file is unchanged" in res.stderr
        assert "Traceback" not in res.stderr
        assert target.read_text() == previous
        assert not [p for p in os.listdir(two_groups) if ".tmp" in p]

    def test_atomic_write_replaces_and_keeps_permissions(self, tmp_path):
        target = tmp_path / "out.txt"
        target.write_text("old")
        os.chmod(target, 0o640)
        atomic_write(target, "new")
        assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640
        atomic_write(tmp_path / "fresh.bin", b"\x00\x01")
        assert (tmp_path / "fresh.bin").read_bytes() == b"\x00\x01"

    def test_a_failing_writer_leaves_the_old_file(self, tmp_path):
        target = tmp_path / "fig.png"
        target.write_bytes(b"old figure")
        with pytest.raises(RuntimeError, match="renderer died"):
            with atomic_output(target) as tmp:
                tmp.write_bytes(b"half a fig")
                raise RuntimeError("renderer died")
        assert target.read_bytes() == b"old figure"
        assert os.listdir(tmp_path) == ["fig.png"]

    def test_missing_folder_is_our_error(self, tmp_path):
        with pytest.raises(DiversityInputError, match="cannot write .*no file was written"):
            atomic_write(tmp_path / "no" / "such" / "folder.json", "{}")

    def test_write_report_and_export_figure_are_atomic(self, tmp_path, monkeypatch):
        """The report writers go through the atomic helper (a failing rename leaves the old file)."""
        from diversity_core.report import export as export_module
        from diversity_core.report import html as html_module

        target = tmp_path / "r.html"
        target.write_text("old report")
        monkeypatch.setattr(html_module, "report_html", lambda cmp, **kw: "new report")

        def full_disk(src, dst):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", full_disk)
        with pytest.raises(DiversityInputError, match="No space left on device; the previous file is unchanged"):
            html_module.write_report(None, target)
        assert target.read_text() == "old report"
        monkeypatch.setattr(export_module, "figure_bytes", lambda fig, **kw: b"new png")
        (tmp_path / "f.png").write_bytes(b"old png")
        with pytest.raises(DiversityInputError, match="previous file is unchanged"):
            export_module.export_figure(None, tmp_path / "f.png")
        assert (tmp_path / "f.png").read_bytes() == b"old png"
        assert sorted(os.listdir(tmp_path)) == ["f.png", "r.html"]


# --------------------------------------------------------------------------------------------
# 3. only PNG, JPEG and WebP decoders
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("PIL")
class TestImageFormats:
    def test_postscript_named_png_never_reaches_ghostscript(self, tmp_path, monkeypatch):
        from PIL import EpsImagePlugin

        def trap(self):
            raise AssertionError("the EPS decoder was used")

        monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", trap)
        png(tmp_path / "imgs" / "a.png")
        (tmp_path / "imgs" / "b.png").write_bytes(
            b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n(/etc/passwd) (r) file\nshowpage\n"
        )
        with pytest.raises(DiversityInputError, match=r"b\.png: cannot be read as an image \(not PNG, JPEG or WebP\)"):
            load_dataset(tmp_path / "imgs")

    @pytest.mark.parametrize("fmt", ["TIFF", "BMP", "GIF"])
    def test_other_formats_named_png_are_refused(self, tmp_path, fmt):
        png(tmp_path / "imgs" / "a.png")
        png(tmp_path / "imgs" / "b.png", fmt=fmt)
        with pytest.raises(DiversityInputError, match="not PNG, JPEG or WebP"):
            load_dataset(tmp_path / "imgs")

    def test_a_png_named_jpg_still_loads(self, tmp_path):
        png(tmp_path / "imgs" / "a.jpg")
        png(tmp_path / "imgs" / "b.webp", (0, 9, 9))
        assert load_dataset(tmp_path / "imgs").n == 2


# --------------------------------------------------------------------------------------------
# 4. molecule size limits
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("rdkit")
class TestMoleculeSize:
    def test_20000_atom_chain_is_skipped_not_a_segfault(self, tmp_path):
        """RDKit segfaulted (exit 139) on this 20 KB file."""
        (tmp_path / "chain.smi").write_text("C" * 20000 + "\nCCO\nCCN\n")
        res = run_cli("inspect", "chain.smi", "--format", "json", cwd=tmp_path)
        assert res.returncode == 0, (res.returncode, res.stderr[-500:])
        summary = json.loads(res.stdout)
        assert summary["n_items"] == 2
        assert summary["skipped"]["examples"] == [
            {"where": "chain.smi line 1", "reason": "SMILES too long (20000 characters; the limit is 10000)"}
        ]

    def test_atom_count_is_checked_before_rdkit(self, tmp_path, monkeypatch):
        from rdkit import Chem

        parsed = []
        real = Chem.MolFromSmiles
        monkeypatch.setattr(Chem, "MolFromSmiles", lambda s, *a: parsed.append(len(s)) or real(s, *a))
        big = "[CH2]" * 1500  # 7,500 characters, under the length limit, 1,500 atoms
        (tmp_path / "m.smi").write_text(f"{big}\nCCO\nCCN\n")
        ds = load_dataset(tmp_path / "m.smi")
        assert ds.skipped[0].reason == "molecule too large (1500 atoms; the limit is 1000)"
        assert len(big) not in parsed

    def test_sdf_counts_line_is_checked_before_rdkit(self, tmp_path):
        from rdkit import Chem

        small = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO")) + "$$$$\n"
        huge = Chem.MolToMolBlock(Chem.MolFromSmiles("C" * 1200)) + "$$$$\n"
        (tmp_path / "m.sdf").write_text(small + huge + small)
        ds = load_dataset(tmp_path / "m.sdf")
        assert ds.n == 2 and "molecule too large (1200 atoms" in ds.skipped[0].reason

    def test_drawing_is_bounded(self):
        from diversity_core.featurizers.molecules import MAX_DRAW_ATOMS, draw_molecule, draw_molecule_png

        start = time.perf_counter()
        svg = draw_molecule("C" * 1000)
        data = draw_molecule_png("C" * 1000, size=(120, 80))
        assert time.perf_counter() - start < 5  # drawing it took 7 s (10,000 atoms: 5 minutes)
        assert "too large to draw" in svg and f"the limit is {MAX_DRAW_ATOMS}" in svg
        assert pil_image().open(io.BytesIO(data)).size == (120, 80)
        assert "too large" not in draw_molecule("c1ccccc1O")

    def test_fingerprints_refuse_oversized_smiles(self):
        from diversity_core.featurizers.molecules import morgan_fingerprints

        with pytest.raises(DiversityInputError, match="molecule 1: SMILES too long"):
            morgan_fingerprints(["CCO", "C" * 20000])


# --------------------------------------------------------------------------------------------
# 5. only regular files, with a byte limit
# --------------------------------------------------------------------------------------------


class TestSpecialFiles:
    def test_fifo_and_dev_zero_in_an_image_folder(self, tmp_path):
        """A FIFO hung the loader; a link to /dev/zero read until memory ran out."""
        folder = tmp_path / "imgs"
        png(folder / "a.png")
        png(folder / "b.png", (0, 0, 255))
        os.mkfifo(folder / "fifo.png")
        (folder / "zero.png").symlink_to("/dev/zero")
        (folder / "loop.png").symlink_to("loop.png")
        code = (
            "import json; from diversity_core.data import load_dataset\n"
            f"ds = load_dataset({str(folder)!r})\n"
            "print(json.dumps([ds.n, [[s.where, s.reason] for s in ds.skipped]]))"
        )
        res = run_python(code)
        assert res.returncode == 0, res.stderr[-800:]
        n, skipped = json.loads(res.stdout)
        assert n == 2
        assert skipped == [
            ["imgs/fifo.png", "not a regular file (a FIFO (named pipe))"],
            ["imgs/loop.png", "a symbolic link loop"],
            ["imgs/zero.png", "not a regular file (a character device)"],
        ]

    def test_fifo_as_a_data_file(self, tmp_path):
        os.mkfifo(tmp_path / "x.csv")
        res = run_python(
            "from diversity_core.data import load_dataset\n"
            "from diversity_core.exceptions import DiversityInputError\n"
            f"try:\n    load_dataset({str(tmp_path / 'x.csv')!r})\n"
            "except DiversityInputError as e:\n    print(e)\n"
        )
        assert "not a regular file (a FIFO (named pipe))" in res.stdout, res.stderr[-500:]

    def test_reads_stop_at_the_limit(self, tmp_path):
        path = tmp_path / "big.bin"
        path.write_bytes(b"x" * 1000)
        with pytest.raises(DiversityInputError, match="more than 100 B were read"):
            read_regular_bytes(path, 100)
        assert read_regular_bytes(path, 1000) == b"x" * 1000
        with pytest.raises(DiversityInputError, match="character device"):
            read_regular_bytes("/dev/zero", 100)


# --------------------------------------------------------------------------------------------
# 6. inputs that escaped the error handling, and parameter extremes
# --------------------------------------------------------------------------------------------


class TestEscapes:
    def test_deeply_nested_jsonl(self, tmp_path):
        (tmp_path / "d.jsonl").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
        with pytest.raises(DiversityInputError, match="line 1: the JSON is nested too deeply"):
            load_dataset(tmp_path / "d.jsonl")

    def test_huge_json_integer(self, tmp_path):
        (tmp_path / "d.jsonl").write_text('{"a": ' + "9" * 5000 + "}\n{\"a\": 1}\n")
        with pytest.raises(DiversityInputError, match="line 1: a number on this line cannot be read"):
            load_dataset(tmp_path / "d.jsonl")

    @pytest.mark.parametrize("exc", [NotImplementedError("codec"), KeyError("x"), IndexError("y"), ZeroDivisionError()])
    def test_any_decoder_exception_is_ours(self, tmp_path, monkeypatch, exc):
        png(tmp_path / "imgs" / "a.png")
        png(tmp_path / "imgs" / "b.png")

        def broken(self):
            raise exc

        monkeypatch.setattr("PIL.PngImagePlugin.PngImageFile.load", broken)
        with pytest.raises(DiversityInputError, match=rf"truncated or corrupt \({type(exc).__name__}\)"):
            load_dataset(tmp_path / "imgs")

    def test_unsupported_zip_method_is_ours(self, tmp_path):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("a.png", png_bytes((1, 2, 3)))
            z.writestr("b.png", png_bytes((3, 2, 1)))
        data = bytearray(buf.getvalue())
        # mark every entry as compressed with method 99 (AES), which zipfile cannot read
        for sig, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
            start = 0
            while (start := data.find(sig, start)) != -1:
                data[start + offset:start + offset + 2] = (99).to_bytes(2, "little")
                start += 4
        (tmp_path / "x.zip").write_bytes(bytes(data))
        with pytest.raises(DiversityInputError, match="unsupported compression method"):
            load_dataset(tmp_path / "x.zip")


@pytest.fixture(scope="module")
def extreme_inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extremes")
    rng = np.random.default_rng(5)
    np.save(folder / "a.npy", rng.normal(size=(40, 5)))
    np.save(folder / "b.npy", rng.normal(size=(40, 5)))
    np.save(folder / "huge.npy", rng.normal(size=(40, 5)) * 1e200)
    np.save(folder / "rnd.npy", rng.normal(size=(300, 5)))
    df = pd.DataFrame(rng.normal(size=(40, 3)), columns=["x", "y", "z"])
    df["w"] = 1e308
    df.to_csv(folder / "w.csv", index=False)
    np.savetxt(folder / "w308.txt", np.full(40, 1e308))
    return folder


@pytest.mark.parametrize("args,message", [
    (("compare", "a.npy", "b.npy", "--n-scales", "1000000000"), "--n-scales must be between 3 and 10000"),
    (("magnitude", "a.npy", "--n-scales", "1000000000"), "n_scales must be an integer from 2 to 10000"),
    (("rnd", "rnd.npy", "--lr", "1e308", "--runs", "2", "--epochs", "3", "--average-last", "2"), "--lr must be"),
    (("magnitude", "huge.npy"), "feature values reach 3."),
    (("compare", "huge.npy", "a.npy"), "group 'huge': feature values reach"),
    (("score", "w.csv", "--weights", "w"), "their sum overflows"),
    (("score", "a.npy", "--weights", "w308.txt"), "their sum overflows"),
    (("score", "a.npy", "--kernel", "polynomial", "--degree", "1000"), "--degree must be between 1 and 100"),
    (("score", "a.npy", "--kernel", "polynomial", "--gamma", "1e300"), "polynomial kernel overflows"),
    (("score", "a.npy", "--kernel", "rbf", "--sigma", "1e-300"), "--sigma must lie in"),
])
def test_parameter_extremes_exit_2(extreme_inputs, args, message):
    """Each of these crashed (exit 1 or a killed process); now it is our one-line error, exit 2."""
    res = run_cli(*args, cwd=extreme_inputs)
    assert res.returncode == 2, (res.returncode, res.stderr[-800:])
    assert message in res.stderr and "Traceback" not in res.stderr


def test_magnitude_table_prints_infinite_values(extreme_inputs):
    res = run_cli("magnitude", "a.npy", "--t-cut", "1e308", cwd=extreme_inputs)
    assert res.returncode == 0, res.stderr[-800:]


# --------------------------------------------------------------------------------------------
# 7. decoded size against the memory budget, before reading
# --------------------------------------------------------------------------------------------


class TestDecodedSize:
    def test_parquet_rows_checked_from_metadata(self, tmp_path, monkeypatch):
        """A few hundred KB of Parquet holding millions of rows is refused before it is decoded."""
        pa = pytest.importorskip("pyarrow", reason="Parquet files need pyarrow (extra [parquet])")
        import pyarrow.parquet as pq

        path = tmp_path / "rows.parquet"
        pq.write_table(pa.table({"x": np.zeros(4_000_000), "y": np.zeros(4_000_000)}), path, compression="zstd")
        assert path.stat().st_size < 1 << 20
        monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: pytest.fail("the data was read"))
        with config_context(memory_budget="50M"):  # read into one matrix, its peak is 101 MiB (issue 40 item 9)
            with pytest.raises(MemoryBudgetError, match="4000000 rows x 2 columns"):
                load_dataset(path)

    def test_csv_rows_checked_before_parsing(self, tmp_path):
        path = tmp_path / "many.csv"
        path.write_text("a,b,c\n" + "1,2,3\n" * 300_000)
        with config_context(memory_budget="10M"):
            with pytest.raises(MemoryBudgetError, match="300002 rows x 3 columns"):
                load_dataset(path)

    def test_image_pixels_checked_from_the_header(self, tmp_path):
        folder = tmp_path / "imgs"
        png(folder / "a.png")
        pil_image().new("L", (6000, 6000)).save(folder / "big.png")
        assert (folder / "big.png").stat().st_size < 1 << 20
        with config_context(memory_budget="40M"):
            with pytest.raises(MemoryBudgetError, match="decoding this 6000 x 6000 image"):
                load_dataset(folder)


# --------------------------------------------------------------------------------------------
# 12. zip entries with the same name
# --------------------------------------------------------------------------------------------


def test_zip_entries_with_one_name_are_distinct_items(tmp_path):
    path = tmp_path / "dup.zip"
    with pytest.warns(UserWarning, match="Duplicate name"):
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("set/a.png", png_bytes((255, 0, 0)))
            z.writestr("set/a.png", png_bytes((0, 255, 0)))
            z.writestr("set/b.png", png_bytes((0, 0, 255)))
    ds = load_dataset(path)
    assert ds.ids == ["set/a.png", "set/a.png (2)", "set/b.png"]
    assert ds.items[:, 0, 0, :].tolist() == [[255, 0, 0], [0, 255, 0], [0, 0, 255]]
    from diversity_core.data.images import iter_original_images

    originals = [np.asarray(im)[0, 0].tolist() for im in iter_original_images(ds)]
    assert originals == [[255, 0, 0], [0, 255, 0], [0, 0, 255]]


# --------------------------------------------------------------------------------------------
# minor items
# --------------------------------------------------------------------------------------------


class TestMinor:
    def test_same_file_twice(self, extreme_inputs):
        res = run_cli("compare", "a.npy", "a.npy", "--no-magnitude", "--no-size-curve", cwd=extreme_inputs)
        assert res.returncode == 2 and "a.npy is given twice (the same file)" in res.stderr
        res = run_cli("compare", "a.npy", "a.npy", "--names", "A", "B", "--no-magnitude", "--no-size-curve",
                      "--n-subsamples", "2", "--format", "json", cwd=extreme_inputs)
        assert res.returncode == 0, res.stderr[-800:]
        assert json.loads(res.stdout)["groups"] == ["A", "B"]

    def test_empty_path_is_refused(self, tmp_path):
        png(tmp_path / "a.png")
        png(tmp_path / "b.png")
        with pytest.raises(DiversityInputError, match="the path is empty"):
            load_dataset("")
        res = run_cli("score", "", cwd=tmp_path)
        assert res.returncode == 2 and "the path is empty" in res.stderr

    def test_symlink_loop_is_named(self, tmp_path):
        (tmp_path / "a.npy").symlink_to(tmp_path / "b.npy")
        (tmp_path / "b.npy").symlink_to(tmp_path / "a.npy")
        with pytest.raises(DiversityInputError, match="a symbolic link loop"):
            load_dataset(tmp_path / "a.npy")

    def test_size_message_shows_the_difference(self, tmp_path):
        path = tmp_path / "x.npy"
        np.save(path, np.zeros((64, 16)))
        size = path.stat().st_size
        with pytest.raises(DiversityInputError, match=rf"is {size} bytes, over the size limit of {size - 1} bytes"):
            load_dataset(path, max_bytes=size - 1)

    def test_trailing_bytes_after_an_npy_array(self, tmp_path):
        path = tmp_path / "x.npy"
        with open(path, "wb") as fh:
            np.save(fh, np.ones((4, 3)))
            np.save(fh, np.zeros((4, 3)))
        with pytest.raises(DiversityInputError, match="bytes follow the array the header announces"):
            load_dataset(path)


# --------------------------------------------------------------------------------------------
# issue 26 item 7: a Parquet file is sized from its metadata, with its ids and list cells
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("pyarrow")
class TestParquetDecodedWidth:
    def test_millions_of_rows_count_their_ids(self, tmp_path, monkeypatch):
        """A few hundred KB holding millions of rows: each row's id counts too (40 M rows peaked at 5 GB)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = tmp_path / "rows.parquet"
        pq.write_table(pa.table({"x": np.zeros(4_000_000), "y": np.zeros(4_000_000)}), path, compression="zstd")
        monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: pytest.fail("the data was read"))
        started = time.perf_counter()
        # issue 40 item 9: the two float columns go straight into one float64 matrix, 61 MiB, with one
        # decoded column chunk of 1 Mi rows (3 x 8 MiB) and pyarrow's reader (16 MiB) in flight; row ids
        # are made when read
        with config_context(memory_budget="70M"):
            with pytest.raises(MemoryBudgetError, match=r"4000000 rows x 2 columns of this Parquet file needs 101 MiB"):
                load_dataset(path)
        assert time.perf_counter() - started < 1.0

    def test_a_list_column_counts_every_value(self, tmp_path, monkeypatch):
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = tmp_path / "vectors.parquet"
        vectors = pa.array(list(np.zeros((4000, 512), dtype=np.float32)), type=pa.list_(pa.float32()))
        pq.write_table(pa.table({"embedding": vectors}), path)
        monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: pytest.fail("the data was read"))
        with config_context(memory_budget="20M"):  # the former estimate (4000 x 1 values) was 94 KiB
            with pytest.raises(MemoryBudgetError, match=r"4000 rows x 1 columns \(2048000 values\)"):
                load_dataset(path)


# --------------------------------------------------------------------------------------------
# issue 26 item 8: the default memory budget follows the limits the process really has
# --------------------------------------------------------------------------------------------


def _fake_cgroups(tmp_path) -> tuple:
    """A v2 group ``/a/b`` limited to 2 GiB (its parent has no limit) and a v1 group ``/x`` limited to 3 GiB."""
    root = tmp_path / "cgroup"
    (root / "a" / "b").mkdir(parents=True)
    (root / "memory.max").write_text("max\n")
    (root / "a" / "memory.max").write_text("max\n")
    (root / "a" / "b" / "memory.max").write_text(f"{2 << 30}\n")
    (root / "memory" / "x").mkdir(parents=True)
    (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (root / "memory" / "x" / "memory.limit_in_bytes").write_text(f"{3 << 30}\n")
    proc = tmp_path / "cgroup-of-self"
    proc.write_text("4:memory:/x\n3:cpu,cpuacct:/x\n0::/a/b\n")
    return root, proc


class TestMemoryLimits:
    def test_cgroup_limits_v1_and_v2(self, tmp_path):
        from diversity_core._config import memory_limits

        root, proc = _fake_cgroups(tmp_path)
        limits = {lim.source: lim for lim in memory_limits(cgroup_root=str(root), proc_cgroup=str(proc))}
        assert limits["cgroup v2 memory.max"].limit == 2 << 30
        assert limits["cgroup v2 memory.max"].where.endswith("a/b/memory.max")
        assert limits["cgroup v1 memory.limit_in_bytes"].limit == 3 << 30
        (root / "a" / "b" / "memory.max").write_text("max\n")
        (root / "memory" / "x" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        sources = [lim.source for lim in memory_limits(cgroup_root=str(root), proc_cgroup=str(proc))]
        assert not [s for s in sources if s.startswith("cgroup")]

    def test_the_default_budget_is_half_the_tightest_limit(self, tmp_path, monkeypatch):
        from diversity_core import _config

        root, proc = _fake_cgroups(tmp_path)
        monkeypatch.delenv("DIVERSITY_MEMORY_BUDGET", raising=False)
        monkeypatch.setattr(_config, "CGROUP_ROOT", str(root))
        monkeypatch.setattr(_config, "PROC_CGROUP", str(proc))
        monkeypatch.setitem(_config._global, "memory_budget", None)
        _config._derived_budget.cache_clear()
        try:
            tightest = min(lim.available for lim in _config.memory_limits())
            assert _config.memory_budget() == tightest // 2 <= 1 << 30
            if tightest == 2 << 30:
                assert _config.budget_source().startswith("half of cgroup v2 memory.max 2 GiB, the tightest limit")
        finally:
            _config._derived_budget.cache_clear()

    def test_rlimit_as_is_followed_and_inspect_says_so(self, tmp_path):
        """Under ``prlimit --as=2.5G``: a budget within the limit, named by ``diversity inspect``."""
        limit = 5 << 29  # 2.5 GiB
        np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(18_000, 4)))
        res = run_cli("inspect", "x.npy", "--format", "json", cwd=tmp_path, memory=limit, timeout=120)
        assert res.returncode == 0, res.stderr
        budget = json.loads(res.stdout)["memory_budget"]
        assert budget["bytes"] < limit // 2 and budget["source"].startswith("half of RLIMIT_AS 2.5 GiB less ")
        # the dense rbf spectrum of 18,000 items (a 2.4 GiB matrix) is refused with the options, not an allocation error
        res = run_cli("score", "x.npy", "--kernel", "rbf", cwd=tmp_path, memory=limit, timeout=120)
        assert res.returncode == 2
        assert "over the memory budget" in res.stderr and "ran out of memory" not in res.stderr
