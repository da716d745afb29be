"""Issue 42 items 4, 7 and 8: Hugging Face datasets on disk and bring-your-own vectors with media.

Real instances are built with ``datasets`` itself (offline, its cache in ``tmp_path``) and read
back through the API (``load_dataset``), the CLI (``diversity score``) and the detection helpers;
hostile instances (a struct path to /etc/passwd, a traversal split name, oversized files and
images, PostScript bytes, media paths outside the folder) are refused with clear messages.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from diversity_core._config import config_context
from diversity_core.data import detect_columns, detect_modality, is_hf_source, load_dataset
from diversity_core.exceptions import DiversityInputError, MemoryBudgetError

pytest.importorskip("pyarrow", reason="Hugging Face formats need pyarrow (extra [parquet])")
pytest.importorskip("PIL", reason="images need Pillow (extra [images])")

CLASSES = ["cat", "dog", "bird"]
LABELS = [0, 1, 2, 0, 1, 2, 0, 1]


@pytest.fixture
def hf(tmp_path, monkeypatch):
    """The ``datasets`` module, offline, with its cache in ``tmp_path``."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-home" / "datasets"))
    datasets = pytest.importorskip("datasets", reason="building the instances needs datasets (test extra)")
    datasets.disable_progress_bars()
    return datasets


def png(seed: int, size=(8, 8)) -> bytes:
    """PNG bytes of a small random RGB picture (never all black)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    a = rng.integers(16, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a, "RGB").save(buf, "PNG")
    return buf.getvalue()


def pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def image_dataset(hf, n=8, *, vectors=False):
    """A ``datasets.Dataset`` with an Image column, a ClassLabel and (optionally) a float vector column."""
    blobs = [png(i) for i in range(n)]
    data = {"image": [{"bytes": b, "path": None} for b in blobs], "label": LABELS[:n]}
    feats = {"image": hf.Image(), "label": hf.ClassLabel(names=CLASSES)}
    if vectors:
        data["embedding"] = [[float(i), float(i % 3), 1.0] for i in range(n)]
        feats["embedding"] = hf.Sequence(hf.Value("float32"))
    return hf.Dataset.from_dict(data, features=hf.Features(feats)), blobs


# ------------------------------------------------------------------------------------------
# save_to_disk / DatasetDict.save_to_disk
# ------------------------------------------------------------------------------------------
def test_save_to_disk_images_with_class_names_thumbnails_and_vectors(hf, tmp_path):
    ds, blobs = image_dataset(hf, vectors=True)
    ds.save_to_disk(str(tmp_path / "pets"))
    assert is_hf_source(tmp_path / "pets")
    out = load_dataset(tmp_path / "pets")
    assert out.modality == "images" and out.n == 8
    assert list(out.groups) == [CLASSES[k] for k in LABELS]  # the class names, not integers
    assert out.group_names() == CLASSES
    np.testing.assert_array_equal(out.items, np.stack([pixels(b) for b in blobs]))  # 8 x 8: kept as they are
    np.testing.assert_array_equal(out.features, np.array([[i, i % 3, 1.0] for i in range(8)]))
    assert out.ids[0] == "row 1"
    assert "save_to_disk" in out.detected and "'label'" in out.detected and "class names" in out.detected
    assert detect_modality(tmp_path / "pets") == "images"
    cols = detect_columns(tmp_path / "pets")
    assert cols.group_column == "label" and "split" in cols.columns


def test_dataset_dict_splits_text_and_split_groups(hf, tmp_path):
    texts = ["a red car", "a blue boat", "two dogs", "a small cat", "rain at night", "a tall tree"]
    feats = hf.Features({"text": hf.Value("string"), "label": hf.ClassLabel(names=["pos", "neg"])})
    train = hf.Dataset.from_dict({"text": texts[:4], "label": [0, 1, 0, 1]}, features=feats)
    test = hf.Dataset.from_dict({"text": texts[4:], "label": [1, 0]}, features=feats)
    hf.DatasetDict({"train": train, "test": test}).save_to_disk(str(tmp_path / "dd"))
    out = load_dataset(tmp_path / "dd")
    assert out.modality == "text" and out.items == texts
    assert list(out.groups) == ["pos", "neg", "pos", "neg", "neg", "pos"]
    assert out.ids[:1] + out.ids[4:5] == ["train row 1", "test row 1"]
    by_split = load_dataset(tmp_path / "dd", group_column="split")
    assert by_split.group_names() == ["train", "test"]
    # without a label column the splits are the groups
    hf.DatasetDict({"train": train.remove_columns("label"), "test": test.remove_columns("label")}).save_to_disk(
        str(tmp_path / "nolabel"))
    assert load_dataset(tmp_path / "nolabel").group_names() == ["train", "test"]


def test_molecules_and_embeddings_columns(hf, tmp_path):
    pytest.importorskip("rdkit", reason="molecules need RDKit (extra [molecules])")
    smi = ["CCO", "c1ccccc1", "CC(=O)O", "CCN"]
    hf.Dataset.from_dict({"smiles": smi, "label": ["a", "b", "a", "b"]}).save_to_disk(str(tmp_path / "mols"))
    mols = load_dataset(tmp_path / "mols")
    assert mols.modality == "molecules" and mols.n == 4 and mols.group_names() == ["a", "b"]
    X = np.arange(12, dtype=np.float64).reshape(6, 2) + 1.0
    feats = hf.Features({"emb": hf.Sequence(hf.Value("float64"), length=2), "label": hf.ClassLabel(names=["x", "y"])})
    hf.Dataset.from_dict({"emb": X.tolist(), "label": [0, 1] * 3}, features=feats).save_to_disk(str(tmp_path / "vec"))
    emb = load_dataset(tmp_path / "vec")
    assert emb.modality == "embeddings" and emb.group_names() == ["x", "y"]
    np.testing.assert_array_equal(emb.features, X)


def test_reading_needs_neither_datasets_nor_the_network(hf, tmp_path):
    image_dataset(hf)[0].save_to_disk(str(tmp_path / "pets"))
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n    raise OSError('network used')\n"
        "socket.socket.connect = refuse\nsocket.create_connection = refuse\n"
        "from diversity_core.data import load_dataset\n"
        f"ds = load_dataset({str(tmp_path / 'pets')!r})\n"
        "assert 'datasets' not in sys.modules, 'datasets was imported'\n"
        "print(ds.n, ','.join(ds.group_names()))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["8", "cat,dog,bird"]


# ------------------------------------------------------------------------------------------
# Hub-style Parquet
# ------------------------------------------------------------------------------------------
def hub_repo(hf, root: Path) -> tuple:
    """``root/data/{train-0000{0,1}-of-00002,test-00000-of-00001}.parquet`` and a README, as the Hub lays them out."""
    ds, blobs = image_dataset(hf, 8)
    (root / "data").mkdir(parents=True)
    for i in range(2):
        ds.shard(2, i, contiguous=True).to_parquet(str(root / "data" / f"train-0000{i}-of-00002.parquet"))
    ds.select(range(3)).to_parquet(str(root / "data" / "test-00000-of-00001.parquet"))
    (root / "README.md").write_text("---\nlicense: mit\n---\n")
    return ds, blobs


def test_hub_parquet_shards_splits_and_class_names(hf, tmp_path):
    _ds, blobs = hub_repo(hf, tmp_path / "repo")
    out = load_dataset(tmp_path / "repo")
    assert out.modality == "images" and out.n == 11
    assert list(out.groups) == [CLASSES[k] for k in LABELS] + [CLASSES[k] for k in LABELS[:3]]
    np.testing.assert_array_equal(out.items[:8], np.stack([pixels(b) for b in blobs]))
    assert out.ids[0] == "train row 1" and out.ids[8] == "test row 1"
    assert load_dataset(tmp_path / "repo", group_column="split").group_names() == ["train", "test"]
    # the shard folder itself, and one shard file written by datasets
    assert load_dataset(tmp_path / "repo" / "data").n == 11
    one = load_dataset(tmp_path / "repo" / "data" / "test-00000-of-00001.parquet")
    assert one.n == 3 and one.group_names() == CLASSES


def test_unknown_column_names_the_columns(hf, tmp_path):
    image_dataset(hf)[0].save_to_disk(str(tmp_path / "pets"))
    with pytest.raises(DiversityInputError, match=r"no column named 'kind' \(group_column\).*'split'"):
        load_dataset(tmp_path / "pets", group_column="kind")


# ------------------------------------------------------------------------------------------
# hostile instances
# ------------------------------------------------------------------------------------------
@pytest.fixture
def opened(monkeypatch):
    """Every path opened through ``open`` or ``os.open`` (the loaders' two ways to read a file)."""
    seen = []
    real_open, real_os_open = builtins.open, os.open

    def guarded_open(file, *a, **k):
        seen.append(str(file))
        return real_open(file, *a, **k)

    def guarded_os_open(file, *a, **k):
        seen.append(str(file))
        return real_os_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    return seen


def test_image_struct_path_is_never_opened(hf, tmp_path, opened):
    # datasets itself would read the path into bytes (Image.encode_example): the struct is written
    # as it is, and dataset_info.json then names it an Image, as a hostile author would
    struct = hf.Features({"image": {"bytes": hf.Value("binary"), "path": hf.Value("string")},
                          "label": hf.ClassLabel(names=CLASSES)})

    def save(rows, name):
        hf.Dataset.from_dict(rows, features=struct).save_to_disk(str(tmp_path / name))
        info = json.loads((tmp_path / name / "dataset_info.json").read_text())
        info["features"]["image"] = {"_type": "Image"}
        (tmp_path / name / "dataset_info.json").write_text(json.dumps(info))

    save({"image": [{"bytes": None, "path": "/etc/passwd"}] * 3, "label": [0, 1, 2]}, "evil")
    opened.clear()
    with pytest.raises(DiversityInputError, match="no usable items.*only a path, which is never opened"):
        load_dataset(tmp_path / "evil")
    assert not [p for p in opened if "passwd" in p], opened
    # mixed: the rows with bytes load, the path-only row is skipped and listed
    save({"image": [{"bytes": png(1), "path": None}, {"bytes": None, "path": "/etc/passwd"},
                    {"bytes": png(2), "path": "/etc/passwd"}], "label": [0, 1, 2]}, "mixed")
    out = load_dataset(tmp_path / "mixed")
    assert out.n == 2 and len(out.skipped) == 1 and "never opened" in out.skipped[0].reason
    assert not [p for p in opened if "passwd" in p], opened


def test_traversal_split_name_is_refused(hf, tmp_path):
    ds, _ = image_dataset(hf)
    hf.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "dd"))
    ds.save_to_disk(str(tmp_path / "outside"))
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "../outside"]}))
    with pytest.raises(DiversityInputError, match=r"split name '\.\./outside' is not a plain name"):
        load_dataset(tmp_path / "dd")
    # a data file name in state.json too
    state = json.loads((tmp_path / "outside" / "state.json").read_text())
    state["_data_files"] = [{"filename": "../dd/train/data-00000-of-00001.arrow"}]
    (tmp_path / "outside" / "state.json").write_text(json.dumps(state))
    with pytest.raises(DiversityInputError, match="data file .* is not a plain name"):
        load_dataset(tmp_path / "outside")


def test_arrow_file_linked_outside_the_data_folder_is_refused(hf, tmp_path):
    data = tmp_path / "data"
    image_dataset(hf)[0].save_to_disk(str(data / "pets"))
    image_dataset(hf)[0].save_to_disk(str(tmp_path / "secret"))
    arrow = data / "pets" / "data-00000-of-00001.arrow"
    arrow.unlink()
    arrow.symlink_to(tmp_path / "secret" / "data-00000-of-00001.arrow")
    with pytest.raises(DiversityInputError, match="leads outside the dataset's folder"):
        load_dataset("pets", data_dir=data)


def test_oversized_arrow_file_and_parquet_are_refused(hf, tmp_path):
    ds, _ = image_dataset(hf)
    ds.save_to_disk(str(tmp_path / "pets"))
    size = (tmp_path / "pets" / "data-00000-of-00001.arrow").stat().st_size
    with pytest.raises(DiversityInputError, match="over the size limit"):
        load_dataset(tmp_path / "pets", max_bytes=size - 1)
    # a Parquet file that is small on disk but large uncompressed (a compression bomb)
    import pyarrow as pa
    import pyarrow.parquet as pq

    zeros = pa.array([png(0) + bytes(4 << 20)] * 4, type=pa.binary())  # a PNG, then 4 MiB of padding
    table = pa.table({"image": pa.StructArray.from_arrays([zeros, pa.array([None] * 4, pa.string())],
                                                          names=["bytes", "path"])})
    pq.write_table(table, tmp_path / "bomb.parquet", compression="zstd")  # one value, dictionary-encoded
    assert (tmp_path / "bomb.parquet").stat().st_size < 1 << 20
    with pytest.raises(DiversityInputError, match="decoded data is .* over the size limit|the images hold more than"):
        load_dataset(tmp_path / "bomb.parquet", max_bytes=8 << 20)
    pq.write_table(table, tmp_path / "plain.parquet", compression="zstd", use_dictionary=False)
    with pytest.raises(DiversityInputError, match="uncompressed Parquet data is .* over the size limit"):
        load_dataset(tmp_path / "plain.parquet", max_bytes=8 << 20)


def test_oversized_image_is_refused_before_decoding(hf, tmp_path):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4000, 4000), (200, 10, 10)).save(buf, "PNG")  # ~48 MB decoded, a few KB on disk
    feats = hf.Features({"image": hf.Image()})
    rows = {"image": [{"bytes": buf.getvalue(), "path": None}, {"bytes": png(1), "path": None}]}
    hf.Dataset.from_dict(rows, features=feats).save_to_disk(str(tmp_path / "big"))
    with config_context(memory_budget="20M"), pytest.raises(MemoryBudgetError, match="4000 x 4000"):
        load_dataset(tmp_path / "big")
    # and the image bytes count toward max_bytes like the files that hold them
    with pytest.raises(DiversityInputError, match="over the size limit|more than"):
        load_dataset(tmp_path / "big", max_bytes=len(buf.getvalue()) // 2)


def test_postscript_image_bytes_are_refused(hf, tmp_path):
    ps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\nnewpath 0 0 moveto showpage\n"
    feats = hf.Features({"image": hf.Image()})
    rows = {"image": [{"bytes": png(1), "path": None}, {"bytes": ps, "path": "x.png"}]}
    hf.Dataset.from_dict(rows, features=feats).save_to_disk(str(tmp_path / "ps"))
    with pytest.raises(DiversityInputError, match="row 2: cannot be read as an image .not PNG, JPEG or WebP"):
        load_dataset(tmp_path / "ps")


# ------------------------------------------------------------------------------------------
# the CLI
# ------------------------------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "diversity_core.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_cli_scores_a_dataset_dict_by_class_name(hf, tmp_path):
    ds, _ = image_dataset(hf, vectors=True)
    hf.DatasetDict({"train": ds, "test": ds.select(range(6))}).save_to_disk(str(tmp_path / "dd"))
    res = run_cli("score", tmp_path / "dd", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["results"]
    assert {r["group"]: r["n"] for r in rows} == {"all": 14, "cat": 5, "dog": 5, "bird": 4}
    res = run_cli("score", tmp_path / "dd", "--group-column", "split", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert {r["group"]: r["n"] for r in json.loads(res.stdout)["results"]} == {"all": 14, "train": 8, "test": 6}


def test_cli_refuses_a_hostile_dataset_in_one_line(hf, tmp_path):
    ds, _ = image_dataset(hf)
    hf.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "dd"))
    (tmp_path / "dd" / "dataset_dict.json").write_text(json.dumps({"splits": ["../../etc"]}))
    res = run_cli("score", tmp_path / "dd")
    assert res.returncode == 2
    assert "not a plain name" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------
# bring-your-own vectors with media (item 7)
# ------------------------------------------------------------------------------------------
def test_vectors_with_image_bytes_parquet_and_fixed_size_arrays(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.arange(18, dtype=np.float32).reshape(6, 3) / 7
    blobs = [png(i) for i in range(6)]
    vec = pa.FixedSizeListArray.from_arrays(pa.array(X.reshape(-1)), 3)
    pq.write_table(pa.table({"vector": vec, "picture": pa.array(blobs, pa.binary()),
                             "model": ["A", "B"] * 3}), tmp_path / "atlas.parquet")
    out = load_dataset(tmp_path / "atlas.parquet")
    assert out.modality == "images" and out.group_names() == ["A", "B"]
    np.testing.assert_array_equal(out.features, X.astype(np.float64))
    np.testing.assert_array_equal(out.items, np.stack([pixels(b) for b in blobs]))
    assert "vectors with media" in out.detected and "'picture'" in out.detected
    assert detect_modality(tmp_path / "atlas.parquet") == "images"
    assert detect_columns(tmp_path / "atlas.parquet").group_column == "model"


def test_vectors_with_image_paths_jsonl_relative_to_the_table(tmp_path):
    (tmp_path / "imgs").mkdir()
    blobs = [png(i) for i in range(4)]
    for i, b in enumerate(blobs):
        (tmp_path / "imgs" / f"{i}.png").write_bytes(b)
    rows = [{"file": f"imgs/{i}.png", "embedding": [float(i), 1.0], "label": "ab"[i % 2]} for i in range(4)]
    (tmp_path / "vecs.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = load_dataset(tmp_path / "vecs.jsonl")
    assert out.modality == "images" and out.ids == [f"imgs/{i}.png" for i in range(4)]
    assert list(out.groups) == ["a", "b", "a", "b"]
    np.testing.assert_array_equal(out.features, [[i, 1.0] for i in range(4)])
    np.testing.assert_array_equal(out.items, np.stack([pixels(b) for b in blobs]))


def test_vectors_with_text_csv_lists(tmp_path):
    df = pd.DataFrame({"text": ["a red car", "a blue car", "a dog", "a cat"],
                       "embedding": ["[0.1, 0.2]", "[0.2, 0.1]", "[1.0, 0.0]", "[0.0, 1.0]"]})
    df.to_csv(tmp_path / "t.csv", index=False)
    out = load_dataset(tmp_path / "t.csv")
    assert out.modality == "text" and out.items == list(df["text"])
    np.testing.assert_array_equal(out.features, [[0.1, 0.2], [0.2, 0.1], [1.0, 0.0], [0.0, 1.0]])
    # the text column named, as the app's column boxes do, keeps the vectors
    assert load_dataset(tmp_path / "t.csv", text_column="text").features.shape == (4, 2)


@pytest.mark.parametrize("where", ["../outside.png", "/etc/passwd.png", "imgs/link.png", "imgs/missing.png"])
def test_media_path_outside_the_folder_is_refused(tmp_path, where, opened):
    table_dir = tmp_path / "data"
    (table_dir / "imgs").mkdir(parents=True)
    (table_dir / "imgs" / "0.png").write_bytes(png(0))
    (tmp_path / "outside.png").write_bytes(png(1))
    (table_dir / "imgs" / "link.png").symlink_to(tmp_path / "outside.png")
    rows = [{"path": "imgs/0.png", "embedding": [0.0, 1.0]}, {"path": where, "embedding": [1.0, 0.0]}]
    (table_dir / "t.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    opened.clear()
    with pytest.raises(DiversityInputError, match="media path .* is not an image file inside the table's folder"):
        load_dataset(table_dir / "t.jsonl")
    with pytest.raises(DiversityInputError, match="is not an image file inside the data folder"):
        load_dataset("t.jsonl", data_dir=table_dir)
    assert not [p for p in opened if p.endswith("outside.png") or "passwd" in p], opened


def test_media_path_may_leave_the_tables_folder_inside_the_data_folder(tmp_path):
    (tmp_path / "imgs").mkdir()
    (tmp_path / "tables").mkdir()
    for i in range(3):
        (tmp_path / "imgs" / f"{i}.png").write_bytes(png(i))
    rows = [{"path": f"../imgs/{i}.png", "embedding": [float(i), 1.0]} for i in range(3)]
    (tmp_path / "tables" / "t.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = load_dataset("tables/t.jsonl", data_dir=tmp_path)
    assert out.modality == "images" and out.n == 3
    with pytest.raises(DiversityInputError, match="inside the table's folder"):
        load_dataset(tmp_path / "tables" / "t.jsonl")  # without a data folder: the table's own folder only


def test_ragged_vectors_and_postscript_media_are_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"embedding": [[1.0, 2.0], [1.0]], "text": ["a", "b"]}), tmp_path / "r.parquet")
    with pytest.raises(DiversityInputError, match="ragged vectors.*row 2"):
        load_dataset(tmp_path / "r.parquet")
    ps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\nshowpage\n"
    pq.write_table(pa.table({"embedding": [[1.0, 2.0], [2.0, 1.0]], "image": pa.array([png(0), ps], pa.binary())}),
                   tmp_path / "ps.parquet")
    with pytest.raises(DiversityInputError, match="row 2: cannot be read as an image .not PNG, JPEG or WebP"):
        load_dataset(tmp_path / "ps.parquet")


def test_vectors_beside_groups_or_smiles_keep_their_reading(tmp_path):
    """A vector column beside a model column is embeddings with groups, beside SMILES molecules: not text."""
    vectors = [np.arange(3.0) + i for i in range(6)]
    pd.DataFrame({"model": ["A", "B"] * 3, "embedding": vectors}).to_parquet(tmp_path / "g.parquet")
    out = load_dataset(tmp_path / "g.parquet")
    assert out.modality == "embeddings" and out.group_names() == ["A", "B"]
    pd.DataFrame({"run": ["r1", "r2"] * 3, "embedding": vectors}).to_parquet(tmp_path / "r.parquet")
    assert load_dataset(tmp_path / "r.parquet").modality == "embeddings"  # repeated values: groups, not texts
    pytest.importorskip("rdkit", reason="molecules need RDKit (extra [molecules])")
    smiles = ["CCO", "CCN", "c1ccccc1", "CC(=O)O", "CCC", "CCCl"]
    pd.DataFrame({"smiles": smiles, "fp": vectors}).to_parquet(tmp_path / "m.parquet")
    assert load_dataset(tmp_path / "m.parquet").modality == "molecules"


def test_truncated_arrow_file_is_refused_naming_it(hf, tmp_path):
    image_dataset(hf)[0].save_to_disk(str(tmp_path / "pets"))
    arrow = tmp_path / "pets" / "data-00000-of-00001.arrow"
    with open(arrow, "r+b") as fh:
        fh.truncate(300)
    with pytest.raises(DiversityInputError, match=r"data-00000-of-00001\.arrow: cannot read the Arrow file"):
        load_dataset(tmp_path / "pets", progress=lambda *a: None)
