"""Issue 42, items 5, 6 and 8 in the app: WebDataset shards and COCO folders from the data folder.

The "Local path" source reads a brace pattern of shards, a folder of shards and a COCO folder
inside ``--data-dir`` (the same loader as the API and the CLI); a COCO folder offers its object
crops; hostile shards and patterns leading out of the data folder are refused with the loader's
message, the previous dataset kept.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import ui.data as uidata

wds = pytest.importorskip("webdataset", reason="the WebDataset tests build shards with the webdataset library")
Image = pytest.importorskip("PIL.Image", reason="the image formats need Pillow (extra [images])")

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


def _png(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def data(tmp_path, monkeypatch):
    """A data folder with 12 samples in 2 shards (classes from .cls, named by JSON) and a COCO folder."""
    rng = np.random.default_rng(7)
    shards = tmp_path / "shards"
    shards.mkdir()
    with wds.ShardWriter(str(shards / "train-%06d.tar"), maxcount=6, verbose=0) as sink:
        for i in range(12):
            sink.write({"__key__": f"s{i:03d}", "png": _png(rng.integers(1, 255, (10, 10, 3), dtype=np.uint8)),
                        "cls": i % 2, "json": {"class_name": ("cat", "dog")[i % 2]}})
    coco = tmp_path / "coco"
    (coco / "annotations").mkdir(parents=True)
    (coco / "images").mkdir()
    images, annotations = [], []
    for k in range(4):
        Image.fromarray(rng.integers(1, 255, (30, 40, 3), dtype=np.uint8)).save(coco / "images" / f"{k}.png")
        images.append({"id": k, "file_name": f"{k}.png"})
        for j in range(2):
            annotations.append({"id": 10 * k + j, "image_id": k, "category_id": 1 + k % 2, "bbox": [j, j, 12, 9]})
    (coco / "annotations" / "instances_val.json").write_text(json.dumps(
        {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "car"}, {"id": 2, "name": "bus"}]}))
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    return tmp_path


def _load_via_box(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.sidebar.radio(key="source").set_value("Local path").run()
    at.sidebar.text_input(key="path").input(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_brace_pattern_and_folder_of_shards_load(data):
    at = _load_via_box("shards/train-{000000..000001}.tar")
    assert not at.error, [e.value for e in at.error]
    ds = at.session_state["dataset"]
    assert (ds.name, ds.n, ds.modality) == ("train-{000000..000001}.tar", 12, "images")
    assert ds.group_names() == ["cat", "dog"]
    assert ds.items.shape == (12, 10, 10, 3)  # the thumbnails, at the images' own size
    assert ds.ids[6] == "train-000001.tar:s006"
    folder = _load_via_box("shards").session_state["dataset"]
    assert folder.content_hash == ds.content_hash
    picker = at.sidebar.selectbox(key="_path_pick").options
    assert "shards/" in picker and "shards/train-{000000..000001}.tar" in picker


def test_coco_folder_by_image_and_by_crop(data):
    at = _load_via_box("coco")
    assert not at.error, [e.value for e in at.error]
    ds = at.session_state["dataset"]
    assert (ds.n, ds.group_names()) == (4, ["car", "bus"])
    assert ds.items.shape == (4, 30, 40, 3)
    at.sidebar.checkbox(key="coco_crops").check().run()
    assert not at.exception and not at.error
    crops = at.session_state["dataset"]
    assert crops.n == 8 and crops.ids[1] == "images/0.png#1"
    assert crops.items.shape[1:3] == (9, 12)  # every box 12 x 9 px: kept at its size


def test_hostile_shards_and_patterns_are_refused(data):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        info = tarfile.TarInfo("../../etc/evil.png")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"abc"))
    (data / "bad.tar").write_bytes(raw.getvalue())
    at = _load_via_box("bad.tar")
    messages = [e.value for e in at.error]
    assert any("has an unsafe path" in m for m in messages), messages
    assert at.session_state["dataset"].name == "digits"
    outside = _load_via_box("../shards/train-{000000..000001}.tar")
    assert any("no such file or folder in the data folder" in e.value for e in outside.error)
    assert outside.session_state["dataset"].name == "digits"
