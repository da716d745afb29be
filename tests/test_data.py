"""Loaders, the Dataset object, demo datasets and ``diversity inspect`` (issue 4).

Every format round-trips through a small file written into ``tmp_path``; every bad input of
the issue's list raises :class:`DiversityInputError` with a message naming the file and entry.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diversity_core.cli import main as cli_main
from diversity_core.data import (
    DEMOS,
    Dataset,
    SkippedItem,
    _files,
    detect_modality,
    list_demos,
    load_dataset,
    load_demo,
)
from diversity_core.exceptions import DiversityInputError, DiversityWarning

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def pil_image():
    """``PIL.Image``, or skip the test: image files need Pillow (extra [images])."""
    return pytest.importorskip("PIL.Image", reason="image files need Pillow (extra [images])")


def write_png(path: Path, colour=(200, 30, 30), size=(12, 10), fmt="PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pil_image().new("RGB", size, colour).save(path, format=fmt)
    return path


def png_bytes(colour=(0, 0, 255), size=(8, 8)) -> bytes:
    buf = io.BytesIO()
    pil_image().new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def image_folder(tmp_path) -> Path:
    root = tmp_path / "imgs"
    write_png(root / "cats" / "a.png", (250, 0, 0))
    write_png(root / "cats" / "b.jpg", (0, 250, 0), fmt="JPEG")
    write_png(root / "dogs" / "c.webp", (0, 0, 250), fmt="WEBP")
    write_png(root / "dogs" / "d.png", (250, 250, 0))
    (root / "dogs" / "notes.txt").write_text("not an image")
    return root


# --------------------------------------------------------------------------------------------
# embeddings: round trips
# --------------------------------------------------------------------------------------------


class TestEmbeddingsRoundTrip:
    def test_npy(self, tmp_path, rng):
        X = rng.normal(size=(20, 5))
        np.save(tmp_path / "x.npy", X)
        ds = load_dataset(tmp_path / "x.npy")
        assert ds.modality == "embeddings" and ds.items is None
        np.testing.assert_array_equal(ds.features, X)
        assert ds.ids[0] == "row 1" and ds.n == 20 and ds.groups is None and ds.weights is None

    def test_large_npy_is_memory_mapped(self, tmp_path, rng, monkeypatch):
        X = rng.normal(size=(30, 4)).astype(np.float32)
        np.save(tmp_path / "big.npy", X)
        monkeypatch.setattr(_files, "MMAP_THRESHOLD_BYTES", 0)
        ds = load_dataset(tmp_path / "big.npy")
        assert isinstance(ds.features, np.memmap)
        assert ds.features.dtype == np.float32
        np.testing.assert_array_equal(ds.features, X)

    def test_npz_named_arrays(self, tmp_path, rng):
        X = rng.normal(size=(6, 3))
        g = np.array(["a", "a", "b", "b", "b", "c"])
        w = np.arange(1.0, 7.0)
        ids = np.array([f"item{i}" for i in range(6)])
        np.savez(tmp_path / "e.npz", features=X, groups=g, weights=w, ids=ids)
        ds = load_dataset(tmp_path / "e.npz")
        np.testing.assert_array_equal(ds.features, X)
        assert ds.group_names() == ["a", "b", "c"]
        np.testing.assert_array_equal(ds.weights, w)
        assert ds.ids == list(ids)

    def test_npz_group_column_names_an_array(self, tmp_path, rng):
        np.savez(tmp_path / "e.npz", emb=rng.normal(size=(4, 2)), model=np.array(["x", "y", "x", "y"]))
        ds = load_dataset(tmp_path / "e.npz", group_column="model")
        assert ds.group_names() == ["x", "y"]

    def test_npz_unused_arrays_warn(self, tmp_path, rng):
        np.savez(tmp_path / "e.npz", features=rng.normal(size=(4, 2)), extra=np.arange(3))
        with pytest.warns(DiversityWarning, match="ignored arrays extra"):
            load_dataset(tmp_path / "e.npz")

    @pytest.mark.parametrize("ext,sep", [(".csv", ","), (".tsv", "\t")])
    def test_csv_tsv_with_group_and_weight(self, tmp_path, rng, ext, sep):
        X = np.round(rng.normal(size=(8, 3)), 6)
        df = pd.DataFrame(X, columns=["f1", "f2", "f3"])
        df["model"] = ["m1"] * 4 + ["m2"] * 4
        df["w"] = np.arange(1, 9)
        path = tmp_path / f"e{ext}"
        df.to_csv(path, sep=sep, index=False)
        ds = load_dataset(path, group_column="model", weight_column="w")
        np.testing.assert_allclose(ds.features, X)
        assert ds.summary()["groups"] == {"m1": 4, "m2": 4}
        np.testing.assert_array_equal(ds.weights, np.arange(1.0, 9.0))

    @pytest.mark.requires("pyarrow")
    def test_parquet_numeric_columns_and_id(self, tmp_path, rng):
        X = rng.normal(size=(5, 4))
        df = pd.DataFrame(X, columns=list("abcd"))
        df.insert(0, "id", [f"f{i}.png" for i in range(5)])
        df.to_parquet(tmp_path / "e.parquet")
        ds = load_dataset(tmp_path / "e.parquet")
        np.testing.assert_array_equal(ds.features, X)
        assert ds.ids == [f"f{i}.png" for i in range(5)]

    @pytest.mark.requires("pyarrow")
    def test_parquet_list_column(self, tmp_path, rng):
        X = rng.normal(size=(5, 7))
        pd.DataFrame({"embedding": list(X), "model": list("aabbb")}).to_parquet(tmp_path / "e.parquet")
        ds = load_dataset(tmp_path / "e.parquet", group_column="model")
        np.testing.assert_allclose(ds.features, X)
        assert ds.group_names() == ["a", "b"]

    def test_jsonl_numeric_fields(self, tmp_path):
        rows = [{"x": 1.0, "y": 2.0}, {"x": 3.0, "y": 4.0}, {"x": 0.0, "y": 1.0}]
        (tmp_path / "e.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        ds = load_dataset(tmp_path / "e.jsonl")
        np.testing.assert_array_equal(ds.features, [[1, 2], [3, 4], [0, 1]])


# --------------------------------------------------------------------------------------------
# images: round trips
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("PIL")
class TestImagesRoundTrip:
    def test_folder_subfolders_are_groups(self, image_folder):
        calls = []
        ds = load_dataset(image_folder, progress=lambda d, t, m: calls.append((d, t)))
        assert ds.modality == "images"
        assert ds.ids == ["cats/a.png", "cats/b.jpg", "dogs/c.webp", "dogs/d.png"]
        assert ds.group_names() == ["cats", "dogs"]
        assert ds.items.dtype == np.uint8 and ds.items.shape == (4, 10, 12, 3)
        np.testing.assert_array_equal(ds.items[0, 0, 0], [250, 0, 0])
        assert abs(int(ds.items[2, 5, 5, 2]) - 250) <= 3  # lossy WebP
        assert [s.reason for s in ds.skipped] == ["not an image file (.txt)"]
        assert calls[-1] == (4, 4)

    def test_zip_with_top_folder(self, tmp_path):
        zpath = tmp_path / "imgs.zip"
        with zipfile.ZipFile(zpath, "w") as zf:
            zf.writestr("data/red/1.png", png_bytes((255, 0, 0)))
            zf.writestr("data/red/2.png", png_bytes((250, 0, 0)))
            zf.writestr("data/blue/3.png", png_bytes((0, 0, 255)))
            zf.writestr("__MACOSX/data/._1.png", b"junk")
        ds = load_dataset(zpath)
        assert ds.group_names() == ["blue", "red"]
        assert ds.ids == ["data/blue/3.png", "data/red/1.png", "data/red/2.png"]
        assert [s.reason for s in ds.skipped] == ["hidden or system file"]

    def test_npy_grayscale_uint8(self, tmp_path, rng):
        arr = rng.integers(0, 256, size=(5, 8, 8), dtype=np.uint8)
        np.save(tmp_path / "imgs.npy", arr)
        ds = load_dataset(tmp_path / "imgs.npy")
        assert ds.modality == "images" and ds.items.shape == (5, 8, 8, 1)
        np.testing.assert_array_equal(ds.items[..., 0], arr)

    def test_npy_float_rgb_scaled(self, tmp_path, rng):
        arr = rng.uniform(0, 1, size=(3, 6, 6, 3))
        np.save(tmp_path / "imgs.npy", arr)
        ds = load_dataset(tmp_path / "imgs.npy", modality="images")
        np.testing.assert_array_equal(ds.items, np.rint(arr * 255).astype(np.uint8))

    def test_large_images_become_64px_thumbnails(self, tmp_path):
        write_png(tmp_path / "big" / "a.png", size=(200, 120))
        write_png(tmp_path / "big" / "b.png", size=(30, 30))
        ds = load_dataset(tmp_path / "big")
        assert ds.items.shape == (2, 64, 64, 3)
        assert ds.groups is None

    def test_companion_embeddings_by_file_name(self, image_folder, tmp_path, rng):
        X = rng.normal(size=(4, 3))
        names = ["d.png", "c.webp", "b.jpg", "a.png"]  # base names, shuffled order
        df = pd.DataFrame(X, columns=["e1", "e2", "e3"])
        df.insert(0, "filename", names)
        df.to_csv(tmp_path / "emb.csv", index=False)
        ds = load_dataset(image_folder, embeddings=tmp_path / "emb.csv")
        order = [names.index(i.split("/")[-1]) for i in ds.ids]
        np.testing.assert_allclose(ds.features, X[order])

    def test_companion_embeddings_by_row_order(self, image_folder, tmp_path, rng):
        X = rng.normal(size=(4, 3))
        np.save(tmp_path / "emb.npy", X)
        ds = load_dataset(image_folder, embeddings=tmp_path / "emb.npy")
        np.testing.assert_array_equal(ds.features, X)


# --------------------------------------------------------------------------------------------
# text: round trips
# --------------------------------------------------------------------------------------------


class TestTextRoundTrip:
    def test_txt_one_item_per_line(self, tmp_path):
        (tmp_path / "t.txt").write_text("first line\n\n  second line  \nthird\n", encoding="utf-8")
        ds = load_dataset(tmp_path / "t.txt")
        assert ds.modality == "text"
        assert ds.items == ["first line", "second line", "third"]
        assert ds.ids == ["line 1", "line 3", "line 4"]
        assert ds.skipped == (SkippedItem("t.txt line 2", "empty line"),)

    def test_txt_with_bom(self, tmp_path):
        (tmp_path / "t.txt").write_bytes("\ufeffcafé au lait\nthé\n".encode())
        assert load_dataset(tmp_path / "t.txt").items == ["café au lait", "thé"]

    def test_csv_text_and_group_columns(self, tmp_path):
        df = pd.DataFrame({"caption": ["a dog", "a cat", "", "a bird"], "model": ["A", "A", "B", "B"]})
        df.to_csv(tmp_path / "t.csv", index=False)
        ds = load_dataset(tmp_path / "t.csv", group_column="model")
        assert ds.items == ["a dog", "a cat", "a bird"]
        assert list(ds.groups) == ["A", "A", "B"]
        assert ds.skipped[0].where == "t.csv row 3 (line 4)"

    @pytest.mark.parametrize("ext", [".tsv", ".jsonl", pytest.param(".parquet", marks=pytest.mark.requires("pyarrow"))])
    def test_other_tables(self, tmp_path, ext):
        df = pd.DataFrame({"id": [1, 2, 3], "body": ["x y", "y z", "z w"], "w": [1.0, 0.5, 2.0]})
        path = tmp_path / f"t{ext}"
        if ext == ".tsv":
            df.to_csv(path, sep="\t", index=False)
        elif ext == ".jsonl":
            df.to_json(path, orient="records", lines=True)
        else:
            df.to_parquet(path)
        ds = load_dataset(path, text_column="body", weight_column="w")
        assert ds.items == ["x y", "y z", "z w"]
        np.testing.assert_array_equal(ds.weights, [1.0, 0.5, 2.0])


# --------------------------------------------------------------------------------------------
# molecules: round trips
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("rdkit")
class TestMoleculesRoundTrip:
    def test_smi_invalid_skipped_with_line_numbers(self, tmp_path):
        (tmp_path / "m.smi").write_text("OCC ethanol\nC1CC\nc1ccccc1 benzene\n\nnot_a_smiles x\nCC(=O)O\n")
        ds = load_dataset(tmp_path / "m.smi")
        assert ds.modality == "molecules"
        assert ds.items == ["CCO", "c1ccccc1", "CC(=O)O"]
        assert ds.ids == ["ethanol", "benzene", "line 6"]
        assert [s.where for s in ds.skipped] == ["m.smi line 2", "m.smi line 5"]
        assert ds.skipped[0].reason == "invalid SMILES (4 characters)"  # the entry's text is never quoted
        assert ds.summary()["skipped"]["reasons"] == {"invalid SMILES": 2}

    def test_smi_with_header_and_group(self, tmp_path):
        (tmp_path / "m.smi").write_text("smiles name model\nCCO a M1\nCCN b M1\nCCC c M2\n")
        ds = load_dataset(tmp_path / "m.smi", group_column="model")
        assert ds.ids == ["a", "b", "c"] and list(ds.groups) == ["M1", "M1", "M2"]

    def test_csv_smiles_group_weight(self, tmp_path):
        df = pd.DataFrame(
            {"SMILES": ["C(C)O", "c1ccccc1", "XX", "CCN"], "set": list("aabb"), "w": [1, 2, 3, 4]}
        )
        df.to_csv(tmp_path / "m.csv", index=False)
        ds = load_dataset(tmp_path / "m.csv", group_column="set", weight_column="w")
        assert ds.items == ["CCO", "c1ccccc1", "CCN"]
        assert list(ds.groups) == ["a", "a", "b"]
        np.testing.assert_array_equal(ds.weights, [1.0, 2.0, 4.0])
        assert ds.skipped[0].where == "m.csv row 3 (line 4)"

    def test_sdf_with_property_groups_and_bad_record(self, tmp_path):
        from rdkit import Chem

        path = tmp_path / "m.sdf"
        with Chem.SDWriter(str(path)) as w:
            for smi, name, grp in [
                ("CCO", "ethanol", "g1"),
                ("c1ccncc1", "pyridine", "g2"),
                ("CC", "ethane", "g2"),
            ]:
                m = Chem.MolFromSmiles(smi)
                m.SetProp("_Name", name)
                m.SetProp("series", grp)
                w.write(m)
        text = path.read_text()
        block = Chem.MolToMolBlock(Chem.MolFromSmiles("CC"))
        bad = block.replace("    0.0000    0.0000    0.0000 C ", "    0.0000    0.0000    0.0000 Xx", 1)
        assert bad != block  # an unknown element symbol: RDKit cannot parse the record
        path.write_text(text + bad + ">  <series>\ng1\n\n$$$$\n")
        ds = load_dataset(path, group_column="series")
        assert ds.items == ["CCO", "c1ccncc1", "CC"]
        assert ds.ids == ["ethanol", "pyridine", "ethane"]
        assert list(ds.groups) == ["g1", "g2", "g2"]
        assert len(ds.skipped) == 1 and ds.skipped[0].where.startswith("m.sdf record 4 (line ")


class TestDetectModality:
    @pytest.mark.parametrize(
        "columns,expected",
        [
            pytest.param({"SMILES": ["CCO", "CCN"]}, "molecules", marks=pytest.mark.requires("rdkit")),
            ({"caption": ["a b", "c d"], "model": ["x", "y"]}, "text"),
            ({"review": ["good", "bad"]}, "text"),
            ({"f1": [1.0, 2.0], "f2": [3.0, 4.0], "file": ["a", "b"]}, "embeddings"),
        ],
    )
    def test_tables(self, tmp_path, columns, expected):
        pd.DataFrame(columns).to_csv(tmp_path / "d.csv", index=False)
        assert detect_modality(tmp_path / "d.csv") == expected
        assert load_dataset(tmp_path / "d.csv").modality == expected

    def test_files_and_folders(self, tmp_path, image_folder):
        np.save(tmp_path / "i.npy", np.zeros((2, 4, 4), dtype=np.uint8))
        np.save(tmp_path / "e.npy", np.zeros((2, 4)))
        assert detect_modality(tmp_path / "i.npy") == "images"
        assert detect_modality(tmp_path / "e.npy") == "embeddings"
        assert detect_modality(image_folder) == "images"

    def test_text_companion_embeddings_by_row_order(self, tmp_path, rng):
        (tmp_path / "t.txt").write_text("one\ntwo\nthree\n")
        X = rng.normal(size=(3, 4))
        np.save(tmp_path / "emb.npy", X)
        ds = load_dataset(tmp_path / "t.txt", embeddings=tmp_path / "emb.npy")
        np.testing.assert_array_equal(ds.features, X)


class TestDetectionFromContent:
    """Issue 15 item 10 (and issue 16 item 15): the content decides, and the dataset says what was detected."""

    @pytest.mark.parametrize("name", ["output", "content", "text", "body", "response", "prompt", "caption"])
    def test_numeric_column_with_a_text_name_is_a_feature(self, tmp_path, rng, name):
        X = rng.normal(size=(30, 3))
        pd.DataFrame(X, columns=[name, "b", "c"]).to_csv(tmp_path / "d.csv", index=False)
        ds = load_dataset(tmp_path / "d.csv")
        assert ds.modality == "embeddings" and detect_modality(tmp_path / "d.csv") == "embeddings"
        np.testing.assert_allclose(ds.features, X, rtol=1e-12)
        assert ds.detected == "a table with 3 numeric or vector columns: embeddings"
        forced = load_dataset(tmp_path / "d.csv", modality="text", text_column=name)
        assert forced.modality == "text" and forced.detected == "text (modality='text' given)"

    def test_comma_separated_tsv(self, tmp_path, rng):
        X = rng.normal(size=(10, 2))
        pd.DataFrame(X, columns=["a", "b"]).to_csv(tmp_path / "d.tsv", index=False)
        ds = load_dataset(tmp_path / "d.tsv")
        assert ds.modality == "embeddings" and ds.features.shape == (10, 2)
        assert "comma-separated (sniffed from the content; the .tsv extension suggests tabs)" in ds.detected
        assert "comma-separated" in ds.summary()["detected"]

    def test_semicolon_csv(self, tmp_path):
        (tmp_path / "d.csv").write_text("a;b\n1.5;2\n3;4\n5;6\n")
        ds = load_dataset(tmp_path / "d.csv")
        assert ds.features.shape == (3, 2) and "semicolon-separated" in ds.detected

    def test_one_column_tsv_with_commas_stays_text(self, tmp_path):
        (tmp_path / "d.tsv").write_text("text\nHello, world\nGood, morning\nSee, you\n")
        ds = load_dataset(tmp_path / "d.tsv")
        assert ds.modality == "text" and ds.items == ["Hello, world", "Good, morning", "See, you"]

    def test_jsonl_with_object_values_is_flattened(self, tmp_path, rng):
        X = rng.normal(size=(8, 2))
        lines = [json.dumps({"id": f"r{i}", "emb": {"x": float(a), "y": float(b)}}) for i, (a, b) in enumerate(X)]
        (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
        ds = load_dataset(tmp_path / "d.jsonl")
        assert ds.modality == "embeddings" and ds.ids[:2] == ["r0", "r1"]
        np.testing.assert_allclose(ds.features, X, rtol=1e-12)
        assert "nested JSON objects flattened into 2 columns ('emb.x', 'emb.y')" in ds.detected

    @pytest.mark.requires("rdkit")
    def test_tab_separated_txt_with_a_smiles_header(self, tmp_path):
        rows = ["CCO", "CCN", "c1ccccc1", "CC(=O)O"] * 25
        (tmp_path / "m.txt").write_text("smiles\tname\n" + "".join(f"{s}\tm{i}\n" for i, s in enumerate(rows)))
        ds = load_dataset(tmp_path / "m.txt")
        assert ds.modality == "molecules" and ds.n == 100 and detect_modality(tmp_path / "m.txt") == "molecules"
        assert ds.detected == (
            "a .txt file whose header names a SMILES column: molecules; tab-separated (sniffed from the content)"
        )

    def test_plain_txt_stays_one_item_per_line(self, tmp_path):
        (tmp_path / "t.txt").write_text("Hello, world\nGood, morning\nSee, you\n")
        ds = load_dataset(tmp_path / "t.txt")
        assert ds.modality == "text" and ds.n == 3 and ds.detected == "a .txt file: text, one item per line"

    def test_inspect_prints_what_was_detected(self, tmp_path, rng, capsys):
        pd.DataFrame(rng.normal(size=(4, 2)), columns=["a", "b"]).to_csv(tmp_path / "d.tsv", index=False)
        assert cli_main(["inspect", str(tmp_path / "d.tsv")]) == 0
        assert "detected:  a table with 2 numeric or vector columns: embeddings; comma-separated" in (
            capsys.readouterr().out
        )

    @pytest.mark.parametrize("command", ["score", "magnitude", "rnd", "compare", "inspect"])
    def test_every_command_has_modality(self, command):
        from diversity_core.cli import build_parser

        args = build_parser().parse_args([command, "f.csv", "--modality", "text"])
        assert args.modality == "text"


# --------------------------------------------------------------------------------------------
# bad input: every case of the list
# --------------------------------------------------------------------------------------------


class TestBadInput:
    @pytest.mark.parametrize("name", ["e.csv", "t.txt", "x.npy", "m.smi", "e.parquet"])
    def test_empty_file(self, tmp_path, name):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(DiversityInputError, match=rf"{name}: the file is empty"):
            load_dataset(tmp_path / name)

    def test_blank_text_file(self, tmp_path):
        (tmp_path / "t.txt").write_text("\n  \n")
        with pytest.raises(DiversityInputError, match="only blank space"):
            load_dataset(tmp_path / "t.txt")

    def test_header_only_csv(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,b\n")
        with pytest.raises(DiversityInputError, match="e.csv: the table has a header but no data rows"):
            load_dataset(tmp_path / "e.csv")

    def test_single_item_npy(self, tmp_path):
        np.save(tmp_path / "x.npy", np.ones((1, 3)))
        with pytest.raises(DiversityInputError, match="x.npy: a single item; diversity needs at least 2"):
            load_dataset(tmp_path / "x.npy")

    def test_single_item_text(self, tmp_path):
        (tmp_path / "t.txt").write_text("only one\n\n")
        with pytest.raises(DiversityInputError, match=r"a single text item \(line 1\).*1 empty entries"):
            load_dataset(tmp_path / "t.txt")

    @pytest.mark.requires("rdkit")
    def test_single_valid_molecule(self, tmp_path):
        (tmp_path / "m.smi").write_text("CCO\nC1CC\n")
        with pytest.raises(
            DiversityInputError, match=r"a single valid molecule.*m.smi line 2: invalid SMILES"
        ):
            load_dataset(tmp_path / "m.smi")

    def test_single_image(self, tmp_path):
        write_png(tmp_path / "one" / "a.png")
        with pytest.raises(DiversityInputError, match=r"a single image \(a.png\)"):
            load_dataset(tmp_path / "one")
        with pytest.raises(DiversityInputError, match="a single image; .*Load the folder"):
            load_dataset(tmp_path / "one" / "a.png")

    def test_ragged_rows_csv(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,b,c\n1,2,3\n4,5\n6,7,8\n")
        with pytest.raises(
            DiversityInputError, match="e.csv: ragged rows: line 3 has 2 fields but the header has 3"
        ):
            load_dataset(tmp_path / "e.csv")
        (tmp_path / "f.csv").write_text("a,b\n1,2\n3,4,5\n")
        with pytest.raises(DiversityInputError, match="ragged rows: line 3 has 3 fields"):
            load_dataset(tmp_path / "f.csv")

    @pytest.mark.requires("pyarrow")
    def test_ragged_list_column(self, tmp_path):
        pd.DataFrame({"emb": [[1.0, 2.0], [3.0], [4.0, 5.0]]}).to_parquet(tmp_path / "e.parquet")
        with pytest.raises(
            DiversityInputError, match=r"ragged rows: e.parquet row 2 has a vector of length 1"
        ):
            load_dataset(tmp_path / "e.parquet")

    def test_ragged_smi_with_header(self, tmp_path):
        (tmp_path / "m.smi").write_text("smiles name group\nCCO a\nCCN b g\n")
        with pytest.raises(DiversityInputError, match="ragged rows: line 2 has 2 fields"):
            load_dataset(tmp_path / "m.smi")

    def test_nan_in_csv(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,b\n1,2\n3,nan\n5,6\n")
        with pytest.raises(DiversityInputError, match=r"NaN or infinite values at e.csv row 2 \(line 3\)"):
            load_dataset(tmp_path / "e.csv")

    def test_inf_in_npy(self, tmp_path):
        X = np.ones((4, 2))
        X[3, 1] = np.inf
        np.save(tmp_path / "x.npy", X)
        with pytest.raises(DiversityInputError, match=r"x.npy: NaN or infinite values at rows 4\."):
            load_dataset(tmp_path / "x.npy")

    def test_nan_pixels(self, tmp_path):
        arr = np.zeros((3, 4, 4))
        arr[1, 0, 0] = np.nan
        np.save(tmp_path / "i.npy", arr)
        with pytest.raises(DiversityInputError, match=r"NaN or infinite pixel values in images \(rows 2\)"):
            load_dataset(tmp_path / "i.npy")

    def test_non_numeric_column(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,b,c\n1,2,3\n4,oops,6\n")
        with pytest.raises(DiversityInputError, match=r"column 'b' is not numeric \(at e.csv row 2"):  # the cell is never quoted
            load_dataset(tmp_path / "e.csv", modality="embeddings")

    def test_non_numeric_weights(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,w\n1,2\n4,heavy\n")
        with pytest.raises(DiversityInputError, match="weight column 'w' is not numeric"):
            load_dataset(tmp_path / "e.csv", weight_column="w")

    @pytest.mark.parametrize(
        "kwargs,match",
        [
            (
                {"group_column": "model"},
                r"no column named 'model' \(the group column\); the columns are: 'a', 'b'",
            ),
            ({"weight_column": "w"}, r"no column named 'w' \(the weight column\)"),
            ({"text_column": "body"}, r"no column named 'body' \(the text column\)"),
            ({"smiles_column": "smi"}, r"no column named 'smi' \(the SMILES column\)"),
        ],
    )
    def test_missing_named_column(self, tmp_path, kwargs, match):
        (tmp_path / "e.csv").write_text("a,b\n1,2\n3,4\n")
        with pytest.raises(DiversityInputError, match=match):
            load_dataset(tmp_path / "e.csv", **kwargs)

    def test_missing_npz_group_array(self, tmp_path):
        np.savez(tmp_path / "e.npz", features=np.ones((3, 2)))
        with pytest.raises(DiversityInputError, match=r"no array named 'model' \(the group array\)"):
            load_dataset(tmp_path / "e.npz", group_column="model")

    @pytest.mark.requires("rdkit")
    def test_missing_sdf_property(self, tmp_path):
        from rdkit import Chem

        with Chem.SDWriter(str(tmp_path / "m.sdf")) as w:
            for s in ("CCO", "CCN"):
                w.write(Chem.MolFromSmiles(s))
        with pytest.raises(DiversityInputError, match=r"m.sdf record 1: no SD property 'series'"):
            load_dataset(tmp_path / "m.sdf", group_column="series")

    def test_mismatched_lengths_companion(self, image_folder, tmp_path):
        np.save(tmp_path / "emb.npy", np.ones((3, 2)))
        with pytest.raises(
            DiversityInputError, match=r"emb.npy: 3 embedding rows for 4 items .* lengths must match"
        ):
            load_dataset(image_folder, embeddings=tmp_path / "emb.npy")

    def test_companion_names_missing_and_extra(self, image_folder, tmp_path):
        pd.DataFrame({"file": ["a.png", "b.jpg", "c.webp", "zzz.png"], "e": [1, 2, 3, 4]}).to_csv(
            tmp_path / "emb.csv", index=False
        )
        with pytest.raises(
            DiversityInputError, match=r"no embedding row for 1 of the 4 items .*'dogs/d.png'"
        ):
            load_dataset(image_folder, embeddings=tmp_path / "emb.csv")

    def test_mismatched_lengths_npz_weights(self, tmp_path):
        np.savez(tmp_path / "e.npz", features=np.ones((3, 2)), weights=np.ones(4))
        with pytest.raises(
            DiversityInputError, match=r"weight array 'weights' has shape \(4,\); expected .* must match"
        ):
            load_dataset(tmp_path / "e.npz")

    def test_negative_weights(self, tmp_path):
        (tmp_path / "e.csv").write_text("a,w\n1,1\n2,-1\n3,2\n4,-0.5\n")
        with pytest.raises(
            DiversityInputError, match=r"2 negative values at e.csv row 2 \(line 3\); e.csv row 4 \(line 5\)"
        ):
            load_dataset(tmp_path / "e.csv", weight_column="w")

    def test_all_zero_weights(self, tmp_path):
        (tmp_path / "t.csv").write_text("text,w\nab,0\ncd,0\n")
        with pytest.raises(DiversityInputError, match="t.csv: the weight column 'w' is all zero"):
            load_dataset(tmp_path / "t.csv", weight_column="w")

    def test_unreadable_image(self, image_folder):
        (image_folder / "cats" / "broken.png").write_bytes(b"this is not a png at all")
        with pytest.raises(DiversityInputError, match=r"cats/broken.png: cannot be read as an image"):
            load_dataset(image_folder)

    def test_truncated_image(self, image_folder):
        data = png_bytes(size=(64, 64))
        (image_folder / "cats" / "cut.png").write_bytes(data[: len(data) // 2])
        with pytest.raises(DiversityInputError, match=r"cats/cut.png: the image is truncated or corrupt"):
            load_dataset(image_folder)

    def test_truncated_image_in_zip(self, tmp_path):
        data = png_bytes(size=(64, 64))
        with zipfile.ZipFile(tmp_path / "i.zip", "w") as zf:
            zf.writestr("a.png", data)
            zf.writestr("b.png", data[:60])
        with pytest.raises(DiversityInputError, match=r"i.zip:b.png: the image is truncated or corrupt"):
            load_dataset(tmp_path / "i.zip")

    def test_latin1_text(self, tmp_path):
        (tmp_path / "t.txt").write_bytes("hello\ncaf\u00e9 cr\u00e8me\n".encode("latin-1"))
        with pytest.raises(
            DiversityInputError, match=r"t.txt: not valid UTF-8 \(byte 0xe9 at line 2, column 4\)"
        ):
            load_dataset(tmp_path / "t.txt")

    def test_utf16_csv(self, tmp_path):
        (tmp_path / "t.csv").write_bytes("text\nab\ncd\n".encode("utf-16"))
        with pytest.raises(DiversityInputError, match="t.csv: the file is encoded as UTF-16-LE, not UTF-8"):
            load_dataset(tmp_path / "t.csv")

    @pytest.mark.parametrize("member", ["../evil.png", "/abs/evil.png", "ok/../../evil.png", "C:/evil.png"])
    def test_zip_unsafe_paths(self, tmp_path, member):
        with zipfile.ZipFile(tmp_path / "i.zip", "w") as zf:
            zf.writestr("a.png", png_bytes())
            zf.writestr(zipfile.ZipInfo(member), png_bytes())
        with pytest.raises(DiversityInputError, match=rf"i.zip: entry '{member}' has an unsafe path"):
            load_dataset(tmp_path / "i.zip")

    def test_file_over_size_limit(self, tmp_path, rng):
        np.save(tmp_path / "x.npy", rng.normal(size=(100, 10)))
        with pytest.raises(
            DiversityInputError, match=r"x.npy: the file is .* over the size limit of 1.0 KiB.*max_bytes"
        ):
            load_dataset(tmp_path / "x.npy", max_bytes=1024)

    def test_folder_over_size_limit(self, image_folder):
        with pytest.raises(DiversityInputError, match="the folder's images is .* over the size limit"):
            load_dataset(image_folder, max_bytes=100)

    def test_zip_bomb_guard(self, tmp_path):
        with zipfile.ZipFile(tmp_path / "i.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("a.png", png_bytes())
            zf.writestr("b.bin", b"\0" * 200_000)
        assert (tmp_path / "i.zip").stat().st_size < 10_000
        with pytest.raises(DiversityInputError, match="the uncompressed archive is .* over the size limit"):
            load_dataset(tmp_path / "i.zip", max_bytes=50_000)

    def test_pickled_npy_never_loaded(self, tmp_path):
        np.save(tmp_path / "p.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        with pytest.raises(
            DiversityInputError, match="p.npy: it holds pickled Python objects, which are never loaded"
        ):
            load_dataset(tmp_path / "p.npy")

    def test_pickled_npz_never_loaded(self, tmp_path):
        np.savez(tmp_path / "p.npz", features=np.ones((3, 2)), meta=np.array([object()], dtype=object))
        with pytest.raises(
            DiversityInputError, match=r"p.npz \(array 'meta'\): it holds pickled Python objects"
        ):
            load_dataset(tmp_path / "p.npz")

    def test_truncated_npy(self, tmp_path):
        np.save(tmp_path / "x.npy", np.ones((50, 4)))
        data = (tmp_path / "x.npy").read_bytes()
        (tmp_path / "x.npy").write_bytes(data[:300])
        with pytest.raises(DiversityInputError, match=r"x.npy: the .npy file is truncated"):
            load_dataset(tmp_path / "x.npy")

    def test_not_an_npy(self, tmp_path):
        (tmp_path / "x.npy").write_bytes(b"hello world, not numpy")
        with pytest.raises(DiversityInputError, match=r"x.npy: not a valid .npy file"):
            load_dataset(tmp_path / "x.npy")

    def test_invalid_json_line(self, tmp_path):
        (tmp_path / "t.jsonl").write_text('{"text": "a"}\n{"text": oops}\n')
        with pytest.raises(DiversityInputError, match=r"t.jsonl line 2: not valid JSON"):
            load_dataset(tmp_path / "t.jsonl")

    def test_missing_file_and_unknown_format(self, tmp_path):
        with pytest.raises(DiversityInputError, match="no such file or folder"):
            load_dataset(tmp_path / "nope.csv")
        (tmp_path / "x.weird").write_text("1 2 3")
        with pytest.raises(DiversityInputError, match=r"cannot tell what kind of data a .weird file holds"):
            load_dataset(tmp_path / "x.weird")

    def test_bad_options(self, tmp_path):
        np.save(tmp_path / "x.npy", np.ones((3, 2)))
        with pytest.raises(DiversityInputError, match="unknown modality 'audio'"):
            load_dataset(tmp_path / "x.npy", modality="audio")
        with pytest.raises(DiversityInputError, match="max_bytes must be a positive integer"):
            load_dataset(tmp_path / "x.npy", max_bytes=-5)
        with pytest.raises(
            DiversityInputError, match="an .npy file holds a single array, so it has no group"
        ):
            load_dataset(tmp_path / "x.npy", group_column="g")

    def test_channels_first_hint(self, tmp_path):
        np.save(tmp_path / "i.npy", np.zeros((4, 3, 8, 8), dtype=np.uint8))
        with pytest.raises(DiversityInputError, match=r"channels first\? use np.moveaxis"):
            load_dataset(tmp_path / "i.npy")


# --------------------------------------------------------------------------------------------
# the Dataset object
# --------------------------------------------------------------------------------------------


class TestDataset:
    def test_hash_is_content_based(self, tmp_path, rng):
        X = rng.normal(size=(5, 3))
        np.save(tmp_path / "a.npy", X)
        np.save(tmp_path / "b.npy", X)
        X2 = X.copy()
        X2[0, 0] += 1e-9
        np.save(tmp_path / "c.npy", X2)
        a, b, c = (load_dataset(tmp_path / f"{n}.npy") for n in "abc")
        assert a.content_hash == b.content_hash != c.content_hash
        assert len(a.content_hash) == 32

    def test_subset_summary_and_read_only(self):
        ds = load_demo("digits")
        sub = ds.subset(np.arange(0, 1200, 100))
        assert sub.n == 12 and sub.items.shape == (12, 8, 8, 1)
        assert sub.content_hash != ds.content_hash
        mask = np.zeros(ds.n, dtype=bool)
        mask[:3] = True
        assert ds.subset(mask).ids == ds.ids[:3]
        s = ds.summary()
        assert s["n_items"] == 1200 and sum(s["groups"].values()) == 1200
        assert s["skipped"] == {"count": 0, "reasons": {}, "examples": []}
        json.dumps(s)
        with pytest.raises(ValueError, match="read-only"):
            ds.items[0, 0, 0, 0] = 1
        g = ds.select_group("mode dropping (classes 0-2)")
        assert g.n == 300 and g.group_names() == ["mode dropping (classes 0-2)"]
        with pytest.raises(DiversityInputError, match="unknown group 'nope'"):
            ds.group_indices("nope")
        with pytest.raises(DiversityInputError, match="out of range"):
            ds.subset([5000])

    def test_constructor_checks_lengths(self):
        with pytest.raises(DiversityInputError, match="groups has 2 rows but there are 3 items"):
            Dataset("x", "text", ["a", "b", "c"], None, np.array(["g", "h"]), None, ["1", "2", "3"])


# --------------------------------------------------------------------------------------------
# demos
# --------------------------------------------------------------------------------------------


class TestDemos:
    def test_registry(self):
        assert list_demos() == ["digits", "shapes", "molecules", "text", "icons"]
        assert list_demos("images") == ["digits", "shapes", "icons"]
        assert set(DEMOS) == set(list_demos())
        with pytest.raises(DiversityInputError, match="unknown demo 'mnist'; choose one of"):
            load_demo("mnist")

    @pytest.mark.parametrize("name", ["digits", pytest.param("shapes", marks=pytest.mark.requires("PIL")),
                                      pytest.param("molecules", marks=pytest.mark.requires("rdkit")), "text"])
    def test_each_demo(self, name):
        ds = load_demo(name)
        assert ds is load_demo(name)  # cached
        assert ds.modality == DEMOS[name].modality
        assert 2 <= ds.n <= 2000 and len(ds.group_names()) >= 4
        assert ds.source == f"demo:{name}" and not ds.skipped
        if ds.modality == "images":
            assert ds.items.dtype == np.uint8 and max(ds.items.shape[1:3]) <= 64
        assert load_dataset(f"demo:{name}") is ds

    def test_digits_are_read_without_importing_scikit_learn(self):
        """The demo reads scikit-learn's digits file directly: the app's first page skips a 1.4 s import."""
        import subprocess
        import sys

        code = ("import sys; from diversity_core.data.demos import _digits_arrays; images, target = "
                "_digits_arrays(); assert images.shape == (1797, 8, 8) and target.shape == (1797,); "
                "print('sklearn' in sys.modules)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "False"
        from sklearn.datasets import load_digits

        from diversity_core.data.demos import _digits_arrays

        images, target = _digits_arrays()
        bunch = load_digits()
        np.testing.assert_array_equal(images, bunch.images)
        np.testing.assert_array_equal(target, bunch.target)

    def test_digits_groups(self):
        ds = load_demo("digits")
        assert ds.group_names() == [
            "all ten classes",
            "mode dropping (classes 0-2)",
            "mode collapse (5 images + noise)",
            "imbalanced (class 9 at 1%)",
        ]
        collapse = ds.group_indices("mode collapse (5 images + noise)")
        base = {i.split("+")[0] for i in np.asarray(ds.ids)[collapse]}
        assert len(base) == 5

    @pytest.mark.requires("rdkit")
    def test_molecules_from_rdkit_files(self):
        from rdkit import Chem

        ds = load_demo("molecules")
        assert all(Chem.MolToSmiles(Chem.MolFromSmiles(s)) == s for s in ds.items[:50])
        dup = ds.select_group("NCI + injected duplicates")
        assert len(set(dup.items)) == dup.n - 5 * 29

    def test_text_demo(self):
        ds = load_demo("text")
        docs = ds.select_group("Python docs sentences (pydoc_data)")
        assert docs.n == 300 and all(s.endswith(".") and s[0].isupper() for s in docs.items)


# --------------------------------------------------------------------------------------------
# diversity inspect
# --------------------------------------------------------------------------------------------


class TestInspectCLI:
    @pytest.mark.requires("rdkit")
    def test_table(self, tmp_path, capsys):
        (tmp_path / "m.smi").write_text("CCO\nbad(\nCCN\nc1ccccc1\n")
        assert cli_main(["inspect", str(tmp_path / "m.smi")]) == 0
        out = capsys.readouterr().out
        assert "items:     3" in out and "skipped:   1 (invalid SMILES: 1)" in out
        assert "m.smi line 2: invalid SMILES (4 characters)" in out

    def test_json_with_groups(self, tmp_path, capsys):
        df = pd.DataFrame(
            {"a": [1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.5], "model": ["x", "y", "y"], "w": [1, 1, 2]}
        )
        df.to_csv(tmp_path / "e.csv", index=False)
        code = cli_main(
            [
                "inspect",
                str(tmp_path / "e.csv"),
                "--group-column",
                "model",
                "--weight-column",
                "w",
                "--format",
                "json",
            ]
        )
        assert code == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["groups"] == {"x": 1, "y": 2}
        assert summary["weights"] == {"x": 1.0, "y": 3.0}
        assert summary["n_features"] == 2 and summary["modality"] == "embeddings"

    @pytest.mark.requires("PIL")
    def test_demo_and_error_exit_code(self, tmp_path, capsys):
        assert cli_main(["inspect", "demo:shapes"]) == 0
        assert "4 shapes x 4 colours (balanced)" in capsys.readouterr().out
        (tmp_path / "e.csv").write_text("a,b\n1,2\n3\n")
        assert cli_main(["inspect", str(tmp_path / "e.csv")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("diversity: error: ") and "ragged rows" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# issue 16 item 13: a string group column is found when none is named
# --------------------------------------------------------------------------------------------
class TestGroupColumnDetection:
    @pytest.mark.parametrize("name", ["target", "label", "class", "model", "Group"])
    def test_named_string_column_becomes_the_groups(self, tmp_path, rng, name):
        X = rng.normal(size=(12, 3))
        df = pd.DataFrame(X, columns=["a", "b", "c"])
        df[name] = ["x", "y", "z"] * 4
        df.to_csv(tmp_path / "t.csv", index=False)
        ds = load_dataset(tmp_path / "t.csv")
        assert ds.modality == "embeddings"
        assert ds.group_names() == ["x", "y", "z"]
        np.testing.assert_allclose(ds.features, X, rtol=1e-12)
        assert f"groups from column '{name}' (detected" in ds.detected

    def test_low_cardinality_string_column_without_a_group_name(self, tmp_path, rng):
        df = pd.DataFrame(rng.normal(size=(20, 2)), columns=["a", "b"])
        df["origin"] = ["gpt", "human"] * 10
        df.to_csv(tmp_path / "t.csv", index=False)
        ds = load_dataset(tmp_path / "t.csv")
        assert ds.group_names() == ["gpt", "human"]
        assert "groups from column 'origin'" in ds.detected

    def test_text_table_keeps_its_text_and_finds_the_model_column(self, tmp_path):
        rows = [("the cat sat", "A"), ("a dog ran", "A"), ("birds sing", "B"), ("fish swim", "B")]
        pd.DataFrame(rows, columns=["sentence", "model"]).to_csv(tmp_path / "t.csv", index=False)
        ds = load_dataset(tmp_path / "t.csv")
        assert ds.modality == "text" and ds.items[0] == "the cat sat"
        assert list(ds.groups) == ["A", "A", "B", "B"]

    def test_no_detection_where_nothing_is_clear(self, tmp_path, rng):
        # a named group column wins; an explicit one is used as given; ids, numbers and mostly
        # distinct strings are never groups; a lone string column of a text table stays the text
        df = pd.DataFrame(rng.normal(size=(6, 2)), columns=["a", "b"])
        df["id"] = [f"i{k}" for k in range(6)]
        df["note"] = [f"n{k}" for k in range(6)]
        df.to_csv(tmp_path / "ids.csv", index=False)
        with pytest.raises(DiversityInputError, match="column 'note' is not numeric"):
            load_dataset(tmp_path / "ids.csv")
        (tmp_path / "e.csv").write_text("a,b,c\n1,2,3\n4,oops,6\n")
        with pytest.raises(DiversityInputError, match=r"column 'b' is not numeric"):
            load_dataset(tmp_path / "e.csv", modality="embeddings")
        pd.DataFrame({"text": ["same", "same", "other", "other"]}).to_csv(tmp_path / "s.csv", index=False)
        ds = load_dataset(tmp_path / "s.csv")
        assert ds.modality == "text" and ds.groups is None and ds.n == 4
        df = pd.DataFrame(rng.normal(size=(8, 2)), columns=["a", "b"])
        df["model"], df["split"] = ["m", "n"] * 4, ["tr", "te"] * 4
        df.to_csv(tmp_path / "two.csv", index=False)
        with pytest.raises(DiversityInputError, match="column 'split' is not numeric"):  # 'model' was taken
            load_dataset(tmp_path / "two.csv")
        df.drop(columns="split").to_csv(tmp_path / "given.csv", index=False)
        ds = load_dataset(tmp_path / "given.csv", group_column="model")
        assert ds.group_names() == ["m", "n"] and "detected: a string column" not in ds.detected


@pytest.mark.requires("rdkit", "PIL")
def test_items_file_for_each_modality():
    import io
    import zipfile

    from diversity_core.data import load_demo
    from diversity_core.data.export import items_file

    text = load_demo("text")
    content, ext, _ = items_file(text, [3, 1])
    assert ext == ".txt" and content.decode().splitlines() == [" ".join(str(text.items[i]).split()) for i in (3, 1)]
    mols = load_demo("molecules")
    content, ext, _ = items_file(mols, [0, 5])
    assert ext == ".smi" and content.decode().splitlines()[1].split("\t")[0] == mols.items[5]
    shapes = load_demo("shapes")
    content, ext, mime = items_file(shapes, [2, 0, 7])
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
        names = zf.namelist()
    assert ext == ".zip" and mime == "application/zip" and len(names) == 3
    # a demo has no original files: PNG files of its pixels, named by id (issue 41 item 9)
    assert names[0] == "blue_circle_3.png" and all("/" not in n for n in names)


# --------------------------------------------------------------------------------------------
# issue 26 item 6: a cell longer than the csv module's field limit (131,072 characters)
# --------------------------------------------------------------------------------------------
class TestLongCsvField:
    def test_a_10_mb_cell_is_read(self, tmp_path, capsys):
        path = tmp_path / "docs.csv"
        path.write_text('id,text\n1,"' + "a" * 10_000_000 + '"\n2,hello world\n3,foo bar\n')
        ds = load_dataset(path)
        assert ds.modality == "text" and ds.n == 3 and len(ds.items[0]) == 10_000_000
        assert ds.ids[1] == "row 2 (line 3)"
        assert cli_main(["inspect", str(path)]) == 0
        assert "items:     3" in capsys.readouterr().out
