"""Issue 42, items 5, 6 and 8: WebDataset shards and COCO folders through the API and the CLI.

The shards are written by the ``webdataset`` library itself (``ShardWriter``), the COCO folders
are plain COCO JSON with real PNG files; hostile instances are crafted with :mod:`tarfile`.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from diversity_core.data import detect_modality, load_dataset
from diversity_core.data import webdataset as wdsmod
from diversity_core.data.coco import image_categories
from diversity_core.exceptions import DiversityInputError

wds = pytest.importorskip("webdataset", reason="the WebDataset tests build shards with the webdataset library")
Image = pytest.importorskip("PIL.Image", reason="the image formats need Pillow (extra [images])")

CLASSES = ("cat", "dog", "emu")


def _png(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def _pixels(rng, n, side=12):
    return rng.integers(1, 255, size=(n, side, side, 3), dtype=np.uint8)


@pytest.fixture
def shards(tmp_path, rng):
    """16 samples in 3 shards: a PNG, a class integer, a caption; the first sample's JSON names its class."""
    folder = tmp_path / "shards"
    folder.mkdir()
    pixels = _pixels(rng, 16)
    with wds.ShardWriter(str(folder / "train-%06d.tar"), maxcount=6, verbose=0) as sink:
        for i in range(16):
            sample = {"__key__": f"sample{i:04d}", "png": _png(pixels[i]), "cls": i % 3,
                      "txt": f"a photo number {i} of a {CLASSES[i % 3]}"}
            if i < 3:
                sample["json"] = {"class_name": CLASSES[i % 3]}
            sink.write(sample)
    return folder, pixels


def test_brace_pattern_streams_images_with_named_classes(shards):
    folder, pixels = shards
    ds = load_dataset(str(folder / "train-{000000..000002}.tar"))
    assert ds.modality == "images" and ds.n == 16
    assert ds.ids[0] == "train-000000.tar:sample0000" and ds.ids[-1] == "train-000002.tar:sample0015"
    # .cls integers named by the names the JSON members give them
    assert list(ds.groups) == [CLASSES[i % 3] for i in range(16)]
    # thumbnails at the images' own size (12 px <= 64), pixel for pixel
    assert ds.items.shape == (16, 12, 12, 3)
    np.testing.assert_array_equal(ds.items, pixels)
    assert "WebDataset shards (3 shards) with images" in ds.detected
    assert detect_modality(str(folder / "train-{000000..000002}.tar")) == "images"


def test_folder_and_single_shard(shards):
    folder, _pixels_ = shards
    by_pattern = load_dataset(str(folder / "train-{000000..000002}.tar"))
    by_folder = load_dataset(folder)
    assert by_folder.content_hash == by_pattern.content_hash
    one = load_dataset(folder / "train-000001.tar")
    assert one.n == 6 and one.ids[0] == "train-000001.tar:sample0006"


def test_captions_as_text(shards):
    folder, _pixels_ = shards
    ds = load_dataset(folder, modality="text")
    assert ds.modality == "text" and ds.items[1] == "a photo number 1 of a dog"
    assert list(ds.groups[:3]) == list(CLASSES)


def test_text_only_shards_are_detected_as_text(tmp_path):
    path = tmp_path / "text-000000.tar"
    with wds.TarWriter(str(path)) as sink:
        for i in range(5):
            sink.write({"__key__": f"k{i}", "txt": f"sentence {i}", "json": {"label": "even" if i % 2 == 0 else "odd"}})
    assert detect_modality(path) == "text"
    ds = load_dataset(path)
    assert ds.items == [f"sentence {i}" for i in range(5)]
    assert list(ds.groups) == ["even", "odd", "even", "odd", "even"]


def test_growing_sizes_become_64_px_thumbnails(tmp_path, rng):
    """Images of different sizes: every thumbnail 64 x 64, as for an image folder."""
    path = tmp_path / "mixed.tar"
    small, large = _pixels(rng, 1, 10)[0], rng.integers(1, 255, size=(80, 90), dtype=np.uint8)
    with wds.TarWriter(str(path)) as sink:
        sink.write({"__key__": "a", "png": _png(small)})
        sink.write({"__key__": "b", "png": _png(large)})  # grayscale and larger: RGB, resized
        sink.write({"__key__": "c", "png": _png(small)})
    ds = load_dataset(path)
    assert ds.items.shape == (3, 64, 64, 3) and ds.groups is None
    np.testing.assert_array_equal(ds.items[0], ds.items[2])
    folder = tmp_path / "same_as_folder"
    folder.mkdir()
    for name, a in (("a", small), ("b", large), ("c", small)):
        Image.fromarray(a).save(folder / f"{name}.png")
    np.testing.assert_array_equal(ds.items, load_dataset(folder).items)


def test_inside_the_data_folder_only(shards, tmp_path):
    folder, _pixels_ = shards
    ds = load_dataset("shards/train-{000000..000001}.tar", data_dir=tmp_path)
    assert ds.n == 12
    inner = tmp_path / "inner"
    inner.mkdir()
    with pytest.raises(DiversityInputError, match="no such file or folder in the data folder"):
        load_dataset("../shards/train-{000000..000001}.tar", data_dir=inner)
    with pytest.raises(DiversityInputError, match="not a plain file name"):
        load_dataset(str(folder / "{..,train-000000.tar}"))
    with pytest.raises(DiversityInputError, match="braces may only stand in the shards' file name"):
        load_dataset(str(tmp_path / "{shards,x}" / "train-{000000..000001}.tar"))
    with pytest.raises(DiversityInputError, match="more than 100000 shards"):
        load_dataset(str(folder / "train-{0..99999999}.tar"))
    with pytest.raises(DiversityInputError, match="shard 'train-000003.tar' does not exist"):
        load_dataset(str(folder / "train-{000000..000007}.tar"))
    # a shard that is a link out of the pattern's folder
    (tmp_path / "elsewhere").mkdir()
    (folder / "train-000000.tar").rename(tmp_path / "elsewhere" / "train-000000.tar")
    (folder / "train-000000.tar").symlink_to(tmp_path / "elsewhere" / "train-000000.tar")
    with pytest.raises(DiversityInputError, match="leads outside its folder"):
        load_dataset(str(folder / "train-{000000..000001}.tar"))


# ------------------------------------------------------------------------------------------
# hostile shards
# ------------------------------------------------------------------------------------------
def _tar(path: Path, members, fmt=tarfile.GNU_FORMAT, gz=False) -> Path:
    """A shard of ``(TarInfo, bytes or None)`` members, written without the library's checks."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    payload = raw.getvalue()
    path.write_bytes(gzip.compress(payload) if gz else payload)
    return path


def _member(name, data=None, kind=tarfile.REGTYPE, **attrs):
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in attrs.items():
        setattr(info, k, v)
    return info, data


@pytest.fixture
def png_bytes(rng):
    return [_png(a) for a in _pixels(rng, 3)]


@pytest.mark.parametrize("name", ["../evil.png", "/etc/evil.png", "a/../../evil.png"])
def test_traversal_member_names_are_refused(tmp_path, png_bytes, name):
    shard = _tar(tmp_path / "bad.tar", [_member("ok.png", png_bytes[0]), _member(name, png_bytes[1])])
    with pytest.raises(DiversityInputError, match=r"bad\.tar: member .* has an unsafe path"):
        load_dataset(shard)


@pytest.mark.parametrize("kind, words", [(tarfile.SYMTYPE, "is a symbolic link"), (tarfile.LNKTYPE, "is a hard link"),
                                         (tarfile.CHRTYPE, "is a device"), (tarfile.FIFOTYPE, "is a FIFO")])
def test_link_and_device_members_are_refused(tmp_path, png_bytes, kind, words):
    shard = _tar(tmp_path / "links.tar", [_member("a.png", png_bytes[0]), _member("b.png", png_bytes[1]),
                                          _member("c.png", kind=kind, linkname="/etc/passwd")])
    with pytest.raises(DiversityInputError, match=rf"links\.tar: member 'c\.png' {words}"):
        load_dataset(shard)


def test_oversized_member_is_refused(tmp_path, png_bytes, monkeypatch):
    shard = _tar(tmp_path / "big.tar", [_member("a.png", png_bytes[0]), _member("b.png", png_bytes[1]),
                                        _member("c.json", b"[" + b"0," * 3000 + b"0]")])
    monkeypatch.setattr(wdsmod, "MAX_MEMBER_BYTES", 4096)
    with pytest.raises(DiversityInputError, match=r"big\.tar: member 'c\.json' declares 5\.9 KiB, over the limit"):
        load_dataset(shard)


def test_huge_declared_size_is_refused_before_reading(tmp_path, png_bytes):
    """A header claiming 64 GiB in a file of a few KiB: refused from the header, nothing allocated."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        info, data = _member("a.png", png_bytes[0])
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        bomb = tarfile.TarInfo("b.png")
        bomb.size = 64 << 30
        raw.write(bomb.tobuf(format=tarfile.GNU_FORMAT))
        tf.offset = raw.tell()
    (tmp_path / "bomb.tar").write_bytes(raw.getvalue() + b"\0" * 4096)
    with pytest.raises(DiversityInputError, match=r"bomb\.tar: member 'b\.png' declares 64\.0 GiB"):
        load_dataset(tmp_path / "bomb.tar")


def test_shard_with_very_many_members_is_a_shard_bomb(tmp_path, png_bytes, monkeypatch):
    members = [_member("a.png", png_bytes[0]), _member("b.png", png_bytes[1])]
    members += [_member(f"x{i}.zzz", b"") for i in range(60)]
    shard = _tar(tmp_path / "many.tar", members)
    monkeypatch.setattr(wdsmod, "MAX_MEMBERS_PER_SHARD", 50)
    with pytest.raises(DiversityInputError, match=r"many\.tar: a shard bomb: more than 50 members"):
        load_dataset(shard)


def test_compressed_shard_bomb_is_refused(tmp_path, png_bytes):
    """A .tar.gz of a few KiB that expands to 3 MiB: refused at the size limit, never held."""
    members = [_member("a.png", png_bytes[0]), _member("b.png", png_bytes[1])]
    members += [_member(f"z{i}.txt", b"\0" * (1 << 20)) for i in range(3)]
    shard = _tar(tmp_path / "bomb.tar.gz", members, gz=True)
    assert shard.stat().st_size < 50_000
    with pytest.raises(DiversityInputError, match=r"bomb\.tar\.gz.*(size limit|shard bomb)"):
        load_dataset(shard, max_bytes=2 << 20)


def test_huge_metadata_header_is_refused(tmp_path, png_bytes):
    shard = _tar(tmp_path / "pax.tar", [_member("a.png", png_bytes[0]),
                                        _member("b.png", png_bytes[1], pax_headers={"comment": "x" * (2 << 20)})],
                 fmt=tarfile.PAX_FORMAT)
    with pytest.raises(DiversityInputError, match=r"pax\.tar: a member's metadata header .* declares 2\.0 MiB"):
        load_dataset(shard)


def test_shards_over_max_bytes_are_refused(shards):
    folder, _pixels_ = shards
    with pytest.raises(DiversityInputError, match="shards' total .* over the size limit"):
        load_dataset(folder, max_bytes=10_000)


def test_damaged_members_are_named(tmp_path, png_bytes):
    dup = _tar(tmp_path / "dup.tar", [_member("a.png", png_bytes[0]), _member("a.png", png_bytes[1])])
    with pytest.raises(DiversityInputError, match=r"dup\.tar: member 'a\.png': sample 'a' already has a \.png"):
        load_dataset(dup)
    bad_cls = _tar(tmp_path / "cls.tar", [_member("a.png", png_bytes[0]), _member("a.cls", b"cat"),
                                          _member("b.png", png_bytes[1])])
    with pytest.raises(DiversityInputError, match=r"cls\.tar:a\.cls: a \.cls member must hold one integer"):
        load_dataset(bad_cls)
    corrupt = _tar(tmp_path / "corrupt.tar", [_member("a.png", png_bytes[0]), _member("b.png", png_bytes[1][:-40])])
    with pytest.raises(DiversityInputError, match=r"corrupt\.tar:b\.png: the image is truncated or corrupt"):
        load_dataset(corrupt)
    not_tar = tmp_path / "plain.tar"
    not_tar.write_bytes(b"this is not a tar file" * 50)
    with pytest.raises(DiversityInputError, match=r"plain\.tar: not a valid tar shard"):
        load_dataset(not_tar)


def test_other_members_and_samples_without_images_are_skipped(tmp_path, png_bytes):
    shard = _tar(tmp_path / "mixed.tar", [_member("a.png", png_bytes[0]), _member("a.npy", b"x"),
                                          _member("b.txt", b"only text"), _member("c.png", png_bytes[1]),
                                          _member("README", b"hello")])
    ds = load_dataset(shard)
    assert ds.ids == ["mixed.tar:a", "mixed.tar:c"]
    reasons = {s.where: s.reason for s in ds.skipped}
    assert reasons == {"mixed.tar:a.npy": "not an image, text or class member (.npy)",
                       "mixed.tar:b": "a sample without an image (.jpg/.jpeg/.png/.webp)",
                       "mixed.tar:README": "no extension, so no sample key"}


# ------------------------------------------------------------------------------------------
# COCO
# ------------------------------------------------------------------------------------------
def make_coco(root: Path, rng, *, file_names=None) -> dict:
    """A COCO folder: 6 PNG images of 40 x 50 px in val2017/, annotations/instances_val2017.json.

    Image k has these categories (1 cat, 2 dog, 3 emu): 0 [cat], 1 [cat, dog, dog] (group dog),
    2 [dog, cat] (a tie: cat, listed first), 3 none, 4 [emu] (crowd), 5 [emu, cat, emu].
    """
    (root / "annotations").mkdir(parents=True)
    (root / "val2017").mkdir()
    pixels = rng.integers(1, 255, size=(6, 40, 50, 3), dtype=np.uint8)
    cats_of = [[1], [1, 2, 2], [2, 1], [], [3], [3, 1, 3]]
    images, annotations = [], []
    for k in range(6):
        name = f"{k:012d}.png"
        Image.fromarray(pixels[k]).save(root / "val2017" / name)
        images.append({"id": 100 + k, "file_name": (file_names or {}).get(k, name), "width": 50, "height": 40})
        for j, c in enumerate(cats_of[k]):
            annotations.append({"id": 1000 + len(annotations), "image_id": 100 + k, "category_id": c,
                                "bbox": [3 + j, 4, 20, 10 + j], "iscrowd": int(k == 4)})
    doc = {"images": images, "annotations": annotations,
           "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "emu"}]}
    (root / "annotations" / "instances_val2017.json").write_text(json.dumps(doc))
    return {"pixels": pixels, "doc": doc}


def test_coco_one_item_per_image(tmp_path, rng):
    made = make_coco(tmp_path / "coco", rng)
    ds = load_dataset(tmp_path / "coco")
    assert ds.modality == "images" and ds.n == 6
    assert ds.ids == [f"val2017/{k:012d}.png" for k in range(6)]
    assert list(ds.groups) == ["cat", "dog", "cat", "(no objects)", "emu", "emu"]
    assert ds.items.shape == (6, 40, 50, 3)
    np.testing.assert_array_equal(ds.items, made["pixels"])
    assert "a COCO folder" in ds.detected and "3 images with objects of several categories" in ds.detected
    assert image_categories(tmp_path / "coco")["val2017/000000000005.png"] == ["emu", "cat"]
    assert detect_modality(tmp_path / "coco") == "images"


def test_coco_object_crops(tmp_path, rng):
    made = make_coco(tmp_path / "coco", rng)
    ds = load_dataset(tmp_path / "coco", coco_crops=True)
    kept = [a for a in made["doc"]["annotations"] if not a["iscrowd"]]
    assert ds.n == len(kept) == 9
    names = {1: "cat", 2: "dog", 3: "emu"}
    assert list(ds.groups) == [names[a["category_id"]] for a in kept]
    assert ds.ids[0] == "val2017/000000000000.png#1000"
    assert [s.reason for s in ds.skipped] == ["a crowd annotation (iscrowd): a region of many objects"]
    # every crop is its box of the source pixels; the sizes differ, so 64 x 64 thumbnails
    assert ds.items.shape == (9, 64, 64, 3)
    x, y, w, h = kept[0]["bbox"]
    crop = Image.fromarray(made["pixels"][0][y:y + h, x:x + w]).resize((64, 64), Image.Resampling.BILINEAR,
                                                                         reducing_gap=3.0)
    np.testing.assert_array_equal(ds.items[0], np.asarray(crop))
    with pytest.raises(DiversityInputError, match="coco_crops applies to COCO folders"):
        load_dataset(tmp_path / "coco" / "val2017", coco_crops=True)


@pytest.mark.parametrize("bad", ["../outside.png", "/etc/passwd", "val2017/../../outside.png"])
def test_coco_file_name_escaping_the_folder_is_refused(tmp_path, rng, bad):
    Image.fromarray(np.full((8, 8, 3), 9, np.uint8)).save(tmp_path / "outside.png")
    make_coco(tmp_path / "coco", rng, file_names={2: bad})
    with pytest.raises(DiversityInputError, match=r"instances_val2017\.json: image 102 has an unsafe file_name"):
        load_dataset(tmp_path / "coco")


def test_coco_links_out_and_missing_files_are_skipped(tmp_path, rng):
    Image.fromarray(np.full((8, 8, 3), 9, np.uint8)).save(tmp_path / "outside.png")
    make_coco(tmp_path / "coco", rng)
    (tmp_path / "coco" / "val2017" / "000000000001.png").unlink()
    (tmp_path / "coco" / "val2017" / "000000000001.png").symlink_to(tmp_path / "outside.png")
    (tmp_path / "coco" / "val2017" / "000000000002.png").unlink()
    ds = load_dataset(tmp_path / "coco")
    assert ds.n == 4
    assert {s.where: s.reason for s in ds.skipped} == {
        "instances_val2017.json: 000000000001.png": "a symbolic link that leads outside the dataset folder",
        "instances_val2017.json: 000000000002.png": "listed in the annotations but not found"}


def test_coco_json_is_size_checked_before_parsing(tmp_path, rng, monkeypatch):
    make_coco(tmp_path / "coco", rng)
    parsed = []
    monkeypatch.setattr(json, "loads", lambda *a, **k: parsed.append(1))
    with pytest.raises(DiversityInputError, match=r"instances_val2017\.json: the annotation file is .* over the size"):
        load_dataset(tmp_path / "coco", max_bytes=500)
    assert not parsed


def test_coco_damaged_annotations_are_named(tmp_path, rng):
    made = make_coco(tmp_path / "coco", rng)
    doc = made["doc"]
    doc["annotations"][0]["category_id"] = 99
    (tmp_path / "coco" / "annotations" / "instances_val2017.json").write_text(json.dumps(doc))
    with pytest.raises(DiversityInputError, match="annotation 1 refers to category id 99"):
        load_dataset(tmp_path / "coco")


def test_coco_inside_the_data_folder(tmp_path, rng):
    make_coco(tmp_path / "coco", rng)
    assert load_dataset("coco", data_dir=tmp_path).n == 6
    with pytest.raises(DiversityInputError, match="does not apply to WebDataset shards or COCO folders"):
        load_dataset("coco", data_dir=tmp_path, group_column="x")


# ------------------------------------------------------------------------------------------
# the CLI
# ------------------------------------------------------------------------------------------
def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "diversity_core.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_scores_shards_and_coco(shards, tmp_path, rng):
    folder, _pixels_ = shards
    res = run_cli("score", "shards/train-{000000..000002}.tar", "--q", "1", "--format", "json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    rows = {r["group"]: r["n"] for r in json.loads(res.stdout)["results"]}
    assert rows["cat"] == 6 and rows["dog"] == 5 and rows["emu"] == 5
    api = load_dataset(folder)
    assert sum(rows[g] for g in api.group_names()) == api.n
    doc = make_coco(tmp_path / "coco", rng)["doc"]
    doc["annotations"].append({"id": 9, "image_id": 103, "category_id": 2, "bbox": [0, 0, 5, 5]})  # 2 per group
    (tmp_path / "coco" / "annotations" / "instances_val2017.json").write_text(json.dumps(doc))
    res = run_cli("score", tmp_path / "coco", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert {r["group"]: r["n"] for r in json.loads(res.stdout)["results"]} == {"all": 6, "cat": 2, "dog": 2, "emu": 2}
    crops = load_dataset(tmp_path / "coco", coco_crops=True)
    res = run_cli("score", tmp_path / "coco", "--coco-crops", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    by_group = {r["group"]: r["n"] for r in json.loads(res.stdout)["results"]}
    assert by_group["all"] == crops.n and crops.n > 6  # one item per object, not per image
    res = run_cli("inspect", tmp_path / "coco", "--coco-crops")
    assert res.returncode == 0 and str(crops.n) in res.stdout, res.stderr
    bad = _tar(tmp_path / "bad.tar", [_member("../a.png", b"x")])
    res = run_cli("score", bad)
    assert res.returncode == 2
    assert "has an unsafe path" in res.stderr and "Traceback" not in res.stderr


def test_background_check_takes_crops_that_are_not_square(tmp_path, rng):
    """COCO crops of one box size (12 x 9 px) stay at their size: the Scores page's background check
    (:func:`~diversity_core.robustness.background_dominance`) reshaped them as squares and failed."""
    from diversity_core.robustness import background_dominance

    made = make_coco(tmp_path / "coco", rng)
    for a in made["doc"]["annotations"]:
        a["bbox"] = [1, 2, 12, 9]
    (tmp_path / "coco" / "annotations" / "instances_val2017.json").write_text(json.dumps(made["doc"]))
    ds = load_dataset(tmp_path / "coco", coco_crops=True)
    assert ds.items.shape == (9, 9, 12, 3)
    report = background_dominance(ds.items, groups=ds.groups)
    assert report.sampled == 9 and 0.0 <= report.background_fraction <= 1.0


@pytest.mark.parametrize("order", ["gray_first", "rgb_first"])
def test_thumbnail_blocks_follow_the_image_folder_rule(tmp_path, rng, order):
    """Blocks of 2 rows: a size change and a grayscale/RGB mix across blocks give what an image folder gives."""
    from diversity_core.data._thumbnails import ThumbnailStack

    arrays = [rng.integers(1, 255, size=(9, 9), dtype=np.uint8), rng.integers(1, 255, size=(9, 9), dtype=np.uint8),
              rng.integers(1, 255, size=(9, 9, 3), dtype=np.uint8), rng.integers(1, 255, size=(7, 11, 3), dtype=np.uint8),
              rng.integers(1, 255, size=(9, 9), dtype=np.uint8)]
    if order == "rgb_first":
        arrays = arrays[::-1]
    folder = tmp_path / "images"
    folder.mkdir()
    stack = ThumbnailStack(block_rows=2)
    for k, a in enumerate(arrays):
        Image.fromarray(a).save(folder / f"{k}.png")
        stack.append(Image.fromarray(a))
    out = stack.array()
    assert out.shape == (5, 64, 64, 3)
    np.testing.assert_array_equal(out, load_dataset(folder).items)


def test_shard_pattern_of_consecutive_shards():
    assert wdsmod.shard_pattern(["b-09.tar", "b-10.tar", "b-11.tar"]) == "b-{09..11}.tar"
    assert wdsmod.expand_braces(wdsmod.shard_pattern(["x7.tgz", "x8.tgz"])) == ["x7.tgz", "x8.tgz"]
    assert wdsmod.shard_pattern(["a-000.tar", "a-002.tar"]) is None  # a gap
    assert wdsmod.shard_pattern(["a-000.tar", "b-001.tar"]) is None
    assert wdsmod.shard_pattern(["a-000.tar"]) is None
