"""Issue 42 items 4, 7 and 8 in the app: Hugging Face datasets and vectors with media from the data folder.

A ``save_to_disk`` folder and a Hub repository of Parquet shards are each one entry of the data
folder's picker (their own files are not listed), load with the class names as groups and
thumbnails in the Dataset page's gallery; a table of vectors beside image files loads its images
as thumbnails and its vectors as the features; a hostile dataset (a traversal split name) is
refused with the loader's message and the previous dataset stays.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import ui.data as uidata
from ui.data.file_groups import group_files

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CLASSES = ["cat", "dog", "bird"]
LABELS = [0, 1, 2, 0, 1, 2]


@pytest.fixture
def hf(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-home" / "datasets"))
    datasets = pytest.importorskip("datasets", reason="building the instances needs datasets (test extra)")
    datasets.disable_progress_bars()
    return datasets


def png(seed: int) -> bytes:
    from PIL import Image

    a = np.random.default_rng(seed).integers(16, 256, size=(8, 8, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a, "RGB").save(buf, "PNG")
    return buf.getvalue()


def pets(hf):
    feats = hf.Features({"image": hf.Image(), "label": hf.ClassLabel(names=CLASSES)})
    rows = {"image": [{"bytes": png(i), "path": None} for i in range(6)], "label": LABELS}
    return hf.Dataset.from_dict(rows, features=feats)


def start(path: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.run()
    at.sidebar.radio(key="source").set_value("Local path").run()
    at.sidebar.text_input(key="path").input(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def gallery(at: AppTest) -> str:
    return " ".join(h.proto.body for h in at.get("html"))


def test_picker_lists_each_dataset_once_and_loads_it_with_class_names(hf, tmp_path, monkeypatch):
    data = tmp_path / "data"
    pets(hf).save_to_disk(str(data / "pets"))
    (data / "hub" / "data").mkdir(parents=True)
    for i in range(2):
        pets(hf).shard(2, i, contiguous=True).to_parquet(str(data / "hub" / "data" / f"train-0000{i}-of-00002.parquet"))
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(data))
    files = uidata.folder_files()
    assert "pets/" in files and "hub/" in files
    assert not [f for f in files if f.startswith(("pets/", "hub/")) and f not in ("pets/", "hub/")], files
    assert group_files(data / "hub" / "data") == []  # shards are one dataset, not one group per file

    for name in ("pets", "hub"):
        at = start(name)
        assert not at.error, [e.value for e in at.error]
        ds = at.session_state["dataset"]
        assert ds.modality == "images" and ds.n == 6
        assert ds.group_names() == CLASSES  # class names, not integers
        at.switch_page("app_pages/1_dataset.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert [t.label for t in at.tabs][:3] == CLASSES
        assert gallery(at).count('src="data:image/png;base64,') >= 6  # the thumbnails drawn
        assert any("Hugging Face" in c.value for c in at.caption)


def test_vectors_with_image_files_become_features_and_thumbnails(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "imgs").mkdir(parents=True)
    rows = []
    for i in range(6):
        (data / "imgs" / f"{i}.png").write_bytes(png(i))
        rows.append({"path": f"imgs/{i}.png", "embedding": [float(i), 1.0, float(i % 2)], "model": "AB"[i % 2]})
    (data / "atlas.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(data))
    at = start("atlas.jsonl")
    assert not at.error, [e.value for e in at.error]
    ds = at.session_state["dataset"]
    assert ds.modality == "images" and ds.group_names() == ["A", "B"]
    np.testing.assert_array_equal(ds.features, [[i, 1.0, i % 2] for i in range(6)])
    at.switch_page("app_pages/1_dataset.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert gallery(at).count('src="data:image/png;base64,') >= 6


def test_hostile_dataset_is_refused_and_the_previous_one_stays(hf, tmp_path, monkeypatch):
    data = tmp_path / "data"
    hf.DatasetDict({"train": pets(hf)}).save_to_disk(str(data / "evil"))
    (data / "evil" / "dataset_dict.json").write_text(json.dumps({"splits": ["../../etc"]}))
    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(data))
    at = start("evil")
    assert any("not a plain name" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["dataset"].name == "digits"
