"""COCO-style folders: ``annotations/instances_*.json`` and the images they list.

A COCO folder holds an ``annotations`` folder of JSON files (``instances_<split>.json``, or any
``*.json`` when there is none of that name), each with ``images`` (``id``, ``file_name``),
``annotations`` (``image_id``, ``category_id``, ``bbox`` as ``[x, y, width, height]``) and
``categories`` (``id``, ``name``). An image's ``file_name`` is looked for, in order, in
``<split>/``, ``images/<split>/``, ``images/`` and the folder itself (``<split>`` is the JSON's
name without ``instances_``: ``train2017``), as the COCO downloads and most exports lay it out.

Two readings:

- **One item per image** (the default). An image with objects of several categories is counted
  once. :attr:`Dataset.groups` holds one label per item, so an image's group is its **most
  frequent category** (a tie goes to the category listed first in ``categories``), and an image
  without objects is in the group ``"(no objects)"``. The most frequent category, not the first
  annotation's, because it is the one a person would name the image by, and it is stable under
  re-ordering the annotations. Every category of every image stays available:
  :func:`image_categories` gives them per item id, and ``Dataset.detected`` says how many images
  have several.
- **One item per object crop** (``crops=True``; ``load_dataset(..., coco_crops=True)``): each
  annotation's box cut from its image (decoded once for all its boxes), grouped by the object's
  category; crowd annotations (``iscrowd``) and boxes under a pixel are skipped and listed.

Safety: each JSON file is size-checked against ``max_bytes`` (and its parsed size against the
memory budget) before it is parsed; every ``file_name`` must be a relative path without ``..``
(one that is not refuses the whole folder, naming the JSON and the image), and resolves, links
followed, to a regular file inside the dataset folder (and inside ``confine``, the data folder).
A listed image that is missing is skipped and listed. The images' total size counts against
``max_bytes``; images are decoded by :func:`~diversity_core.data.images.decode_image` (PNG, JPEG and
WebP decoders only, decoded size checked first) and kept as thumbnails by the rule of
:mod:`.images`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Optional

import numpy as np

from .._config import check_memory
from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._dataset import Dataset, SkippedItem
from ._files import check_size, decode_utf8, read_input_bytes
from ._paths import file_kind, is_within
from ._thumbnails import ThumbnailStack
from .images import _small, decode_image

#: The folder of annotation files.
ANNOTATIONS_FOLDER = "annotations"
#: The group of an image without objects.
NO_OBJECTS_GROUP = "(no objects)"
#: Parsed JSON takes several times its size in memory; checked against the budget before parsing.
_JSON_MEMORY_FACTOR = 6

_DRIVE = re.compile(r"^[A-Za-z]:")


def annotation_files(path) -> list:
    """The annotation files of a COCO folder (``instances_*.json``, else every ``*.json``); [] when none."""
    folder = Path(os.fspath(path)) / ANNOTATIONS_FOLDER
    try:
        if not folder.is_dir():
            return []
        names = sorted(e.name for e in os.scandir(folder) if e.name.lower().endswith(".json")
                       and not e.name.startswith("."))
    except OSError:
        return []
    instances = [n for n in names if n.startswith("instances_")]
    return [folder / n for n in (instances or names)]


def is_coco_folder(path) -> bool:
    """Whether ``path`` is a folder with an ``annotations`` folder holding a ``*.json`` file."""
    return bool(annotation_files(path))


def _split(json_path: Path) -> str:
    stem = json_path.stem
    return stem[len("instances_"):] if stem.startswith("instances_") else stem


def _read_json(p: Path, max_bytes: int) -> dict:
    size = p.stat().st_size
    check_size(p, size, max_bytes, what="annotation file")
    check_memory(_JSON_MEMORY_FACTOR * size, what=f"{p}: parsing this annotation file")
    try:
        obj = json.loads(decode_utf8(read_input_bytes(p, max_bytes), str(p)))
    except (ValueError, RecursionError):
        raise DiversityInputError(f"{p}: not valid JSON. Re-export the COCO annotations.") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("images"), list):
        raise DiversityInputError(f"{p}: not a COCO annotation file (no list of \"images\"). A COCO folder's "
                                  "annotations/*.json hold \"images\", \"annotations\" and \"categories\".")
    return obj


def _entries(obj: dict, key: str, fields: tuple, p: Path) -> list:
    """The records of ``obj[key]`` (a list of objects with the given fields), checked."""
    records = obj.get(key, [])
    if not isinstance(records, list):
        raise DiversityInputError(f"{p}: \"{key}\" must be a list; got {type(records).__name__}.")
    for i, r in enumerate(records):
        if not isinstance(r, dict) or any(f not in r for f in fields):
            raise DiversityInputError(f"{p}: {key} entry {i + 1} lacks {' or '.join(fields)}; the file is damaged. "
                                      "Re-export the COCO annotations.")
    return records


def _safe_file_name(name, p: Path, image_id) -> str:
    """A ``file_name`` as a relative POSIX path, or the refusal naming the JSON and the image."""
    if not isinstance(name, str) or not name.strip():
        raise DiversityInputError(f"{p}: image {image_id!r} has no file_name (a non-empty string).")
    cleaned = name.replace("\\", "/")
    if cleaned.startswith("/") or _DRIVE.match(cleaned) or ".." in PurePosixPath(cleaned).parts or "\x00" in cleaned:
        raise DiversityInputError(
            f"{p}: image {image_id!r} has an unsafe file_name {name!r} (absolute or containing '..'); a COCO "
            "file_name is relative to the dataset's image folder, so the folder is refused. Fix the annotations."
        )
    return str(PurePosixPath(cleaned))


def _locate(root: Path, split: str, rel: str, confine: Optional[Path]):
    """``(relative path, size, None)`` of the image file, or ``(None, 0, reason)``."""
    reason = "listed in the annotations but not found"
    for base in (split, f"images/{split}", "images", ""):
        candidate = root / base / rel if base else root / rel
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        real = os.path.realpath(candidate)
        if not is_within(real, root) or (confine is not None and not is_within(real, confine)):
            return None, 0, "a symbolic link that leads outside the dataset folder"
        if not stat.S_ISREG(st.st_mode):
            return None, 0, f"not a regular file (a {file_kind(st.st_mode)})"
        return candidate.relative_to(root).as_posix(), st.st_size, None
    return None, 0, reason


def _read_annotations(root: Path, max_bytes: int, confine: Optional[Path]):
    """Every image of every annotation file: ``(images, categories, skipped)``.

    ``images``: ``[(relative path, size, [(category name, bbox, annotation id, crowd)])]``.
    """
    files = annotation_files(root)
    if not files:
        raise DiversityInputError(f"{root}: no annotations/*.json; not a COCO folder.")
    images, skipped, order = [], [], {}
    for p in files:
        obj = _read_json(p, max_bytes)
        split = _split(p)
        cats = {}
        for c in _entries(obj, "categories", ("id", "name"), p):
            cats[c["id"]] = str(c["name"])
            order.setdefault(str(c["name"]), len(order))
        recs = _entries(obj, "images", ("id", "file_name"), p)
        by_id: dict = {}
        for r in recs:
            if r["id"] in by_id:
                raise DiversityInputError(f"{p}: image id {r['id']!r} is listed twice; the file is damaged.")
            by_id[r["id"]] = (_safe_file_name(r["file_name"], p, r["id"]), [])
        for i, a in enumerate(_entries(obj, "annotations", ("image_id", "category_id"), p)):
            if a["image_id"] not in by_id:
                raise DiversityInputError(f"{p}: annotation {i + 1} refers to image id {a['image_id']!r}, which is "
                                          "not in \"images\"; the file is damaged.")
            if a["category_id"] not in cats:
                raise DiversityInputError(f"{p}: annotation {i + 1} refers to category id {a['category_id']!r}, "
                                          "which is not in \"categories\"; the file is damaged.")
            by_id[a["image_id"]][1].append((cats[a["category_id"]], a.get("bbox"), a.get("id", i + 1),
                                            bool(a.get("iscrowd", 0))))
        for rel, objects in by_id.values():
            found, size, problem = _locate(root, split, rel, confine)
            if problem is not None:
                skipped.append(SkippedItem(f"{p.name}: {rel}", problem))
                continue
            images.append((found, size, objects))
        del obj
    check_size(root, sum(size for _r, size, _o in images), max_bytes, what="COCO folder's images")
    return images, order, skipped


def _main_category(objects: list, order: dict) -> str:
    """The most frequent category of an image's objects (a tie: the one listed first)."""
    if not objects:
        return NO_OBJECTS_GROUP
    counts = Counter(name for name, *_rest in objects)
    return min(counts, key=lambda c: (-counts[c], order.get(c, len(order))))


def _box(bbox, size):
    """A COCO ``[x, y, w, h]`` box as integer pixel bounds clipped to the image, or None when empty."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        return None
    try:
        x, y, w, h = (float(v) for v in bbox)
    except (TypeError, ValueError):
        return None
    if not all(np.isfinite([x, y, w, h])):
        return None
    left, top = max(0, int(np.floor(x))), max(0, int(np.floor(y)))
    right, bottom = min(size[0], int(np.ceil(x + w))), min(size[1], int(np.ceil(y + h)))
    if right - left < 1 or bottom - top < 1:
        return None
    return left, top, right, bottom


def image_categories(path, *, max_bytes: int = 1 << 30) -> dict:
    """Every category of every image of a COCO folder: ``{item id: [category, ...]}``.

    The item ids are those of :func:`load_coco` (the image's path in the folder); each image's
    categories are listed once each, most frequent first (the first is its group).

    Examples
    --------
    >>> image_categories("coco")["val2017/000000000139.jpg"]  # doctest: +SKIP
    ['person', 'chair', 'tv']
    """
    root = Path(os.path.realpath(os.fspath(path)))
    images, order, _skipped = _read_annotations(root, max_bytes, None)
    out = {}
    for rel, _size, objects in images:
        counts = Counter(name for name, *_rest in objects)
        out[rel] = sorted(counts, key=lambda c: (-counts[c], order.get(c, len(order))))
    return out


def load_coco(
    path,
    *,
    crops: bool = False,
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    confine: Optional[Path] = None,
    name: Optional[str] = None,
) -> Dataset:
    """Load a COCO folder (see the module docstring): one item per image, or per object crop.

    Parameters
    ----------
    path : str or path-like
        The folder holding ``annotations/`` and the images.
    crops : bool, default False
        One item per annotated object (its box cut from the image) instead of one per image.
    max_bytes : int
        Limit on each annotation file and on the images' total size.
    progress : callable, optional
        ``progress(done, total, message)`` while reading images.
    confine : Path, optional
        A resolved folder (the data folder) every image must lie in, links followed.
    name : str, optional
        The dataset's name (default: the folder's).

    Returns
    -------
    Dataset
        Images: ``ids`` the image paths in the folder (crops: ``"<path>#<annotation id>"``),
        ``groups`` the most frequent category (crops: the object's category).

    Raises
    ------
    DiversityInputError
        A JSON file over ``max_bytes``, not JSON or not COCO; a damaged record (an unknown image
        or category id, a repeated image id, a missing field); an unsafe ``file_name``; a corrupt
        image; fewer than 2 items.
    """
    root = Path(os.path.realpath(os.fspath(path)))
    images, order, skipped = _read_annotations(root, max_bytes, confine)
    stack, ids, groups = ThumbnailStack(), [], []
    several = 0
    for k, (rel, _size, objects) in enumerate(images):
        report(progress, k, len(images), "reading images")
        full = root / rel
        data = read_input_bytes(full, max_bytes)
        img = decode_image(data, f"{root}/{rel}")
        if not crops:
            stack.append(_small(img))
            ids.append(rel)
            groups.append(_main_category(objects, order))
            several += len({c for c, *_r in objects}) > 1
            continue
        for category, bbox, ann_id, crowd in objects:
            where = f"{rel}#{ann_id}"
            if crowd:
                skipped.append(SkippedItem(where, "a crowd annotation (iscrowd): a region of many objects"))
                continue
            box = _box(bbox, img.size)
            if box is None:
                skipped.append(SkippedItem(where, "no box of at least one pixel inside the image"))
                continue
            stack.append(_small(img.crop(box)))
            ids.append(where)
            groups.append(category)
    report(progress, len(images), len(images), "reading images")
    what = "object crops" if crops else "images"
    if stack.n < 2:
        raise DiversityInputError(f"{root}: {stack.n} {what} found ({len(skipped)} entries skipped); diversity needs "
                                  "at least 2 items.")
    note = "" if crops else f"; {several} images with objects of several categories (group: the most frequent)"
    return Dataset(
        name=name or root.name,
        modality="images",
        items=stack.array(),
        features=None,
        groups=np.asarray(groups, dtype=str),
        weights=None,
        ids=ids,
        skipped=tuple(skipped),
        source=str(root),
        detected=note,
    )
