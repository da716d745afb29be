"""The server's data-folder policy and the "Local path" source.

Reading files from the server is off unless the person starting the server names a data
folder: ``diversity app --data-dir DIR`` (or ``streamlit run app.py`` with the environment
variable :data:`DATA_DIR_ENV` set). Every typed or linked path then goes through
:func:`diversity_core.data.resolve_user_path` (inside that folder, or one refusal message for
everything else) before anything touches the file system; without a folder the "Local path"
source is hidden and every path is refused.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import Dataset, is_hf_source, load_dataset, resolve_user_path
from diversity_core.data.coco import is_coco_folder
from diversity_core.data.webdataset import (
    SHARD_SUFFIXES,
    is_brace_pattern,
    resolve_pattern,
    shard_pattern,
    shards_stamp,
)

from ..cache import shared_cache
from ..state import SOURCES
from .file_groups import combine_as_groups, group_files

#: The environment variable naming the folder visitors may read from (unset: none).
DATA_DIR_ENV = "DIVERSITY_DATA_DIR"
LOCAL_SOURCE = "Local path"
#: Most files the data folder's picker lists (a folder of thousands is typed, not browsed).
PICKER_MAX = 500


def data_dir() -> Optional[Path]:
    """The data folder visitors may read from (``$DIVERSITY_DATA_DIR``), or None: reading is off."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value) if value else None


def sources() -> tuple:
    """The data sources the sidebar offers: "Local path" only when a data folder is set."""
    return SOURCES if data_dir() is not None else tuple(s for s in SOURCES if s != LOCAL_SOURCE)


def refuse_local_path(ss) -> None:
    """Before the sidebar: a link's or an old session's local path, with reading turned off, is
    refused (one message, nothing read) and the source falls back to the demo."""
    if ss.get("source") != LOCAL_SOURCE or data_dir() is not None:
        return
    path = (ss.get("path") or "").strip()
    try:
        resolve_user_path(path or ".", data_dir=None)
    except DiversityError as exc:
        ss["load_error"] = f"Could not load {path!r}: {exc}" if path else f"Could not load a local path: {exc}"
    ss["source"] = "Demo"
    ss["path"] = ""
    # the demo counts as tried, so loading it does not clear the refusal; the loaded dataset (the
    # default demo on a first run) stays
    ss["_source_tried"] = ("demo", ss.get("demo"))


def folder_files() -> list:
    """Files and folders of the data folder a visitor may pick (relative paths, no hidden entries).

    A Hugging Face dataset folder (``save_to_disk``, Parquet shards) is one entry: its own files are
    not listed.
    """
    root = data_dir()
    if root is None:
        return []
    try:
        base = root.resolve(strict=True)
        out = []
        for dirpath, dirnames, filenames in os.walk(base):  # links are not followed
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = Path(dirpath).relative_to(base)
            if rel.parts:
                out.append(rel.as_posix() + "/")
                if _maybe_hf(filenames, dirnames) and is_hf_source(dirpath):  # one dataset: its files not listed
                    dirnames[:], filenames = [], []
            out.extend((rel / f).as_posix() for f in sorted(filenames) if not f.startswith("."))
            pattern = shard_pattern(f for f in filenames if f.lower().endswith(SHARD_SUFFIXES) and not f.startswith("."))
            if pattern:  # WebDataset shards: their brace pattern too
                out.append((rel / pattern).as_posix())
            if len(out) >= PICKER_MAX:
                return out[:PICKER_MAX]
        return out
    except OSError:
        return []


def _maybe_hf(filenames: list, dirnames: list) -> bool:
    """Whether a folder may be a Hugging Face dataset (checked then with ``is_hf_source``): its marks."""
    names = set(filenames)
    return bool({"dataset_dict.json", "state.json"} & names) or "data" in dirnames or any(
        f.endswith((".parquet", ".pq")) for f in filenames)


def _picked() -> None:
    """The picker's choice becomes the path box's value (the box stays editable)."""
    ss = st.session_state
    choice = ss.get("_path_pick")
    if choice:
        ss["path"] = choice.rstrip("/")


def path_input(container) -> None:
    """The "Local path" source's controls: a picker of the data folder and a path box (key ``path``)."""
    files = folder_files()
    if files:
        container.selectbox(f"Files in the data folder ({len(files)})", files, index=None,
                            placeholder="pick a file or folder", key="_path_pick", on_change=_picked)
    container.text_input("Local path (inside the data folder)", key="path", placeholder="embeddings.npy",
                         help="A file or folder inside the data folder the server was started with; paths "
                              "outside it are refused. WebDataset shards: a folder of .tar shards or a pattern "
                              "such as shards/train-{000000..000009}.tar.")
    if coco_path(st.session_state.get("path") or ""):
        container.checkbox("COCO: one item per object crop", key="coco_crops",
                           help="Off: one item per image, grouped by its most frequent category. On: each "
                                "annotated object's box, grouped by its category.")


def coco_path(path: str) -> bool:
    """Whether ``path`` (as typed) is a COCO folder inside the data folder (False when it is refused)."""
    root = data_dir()
    if root is None or not path.strip():
        return False
    try:
        return is_coco_folder(resolve_user_path(path.strip(), data_dir=root))
    except DiversityError:
        return False


@shared_cache("data", spinner="Reading the file…")
def _path(path: str, stamp: tuple, options: tuple, root: str) -> Dataset:
    return load_dataset(path, data_dir=root, **dict(options))


def load_path(path: str, options: dict, root: Optional[Path] = None) -> Dataset:
    """Load a file or folder inside the data folder (cached by path, modification time and size).

    ``path`` is resolved by :func:`~diversity_core.data.resolve_user_path` inside ``root`` (default:
    :func:`data_dir`) before anything else; with no data folder every path is refused.
    """
    root = data_dir() if root is None else root
    if root is not None and is_brace_pattern(path):  # WebDataset shards: the pattern's folder inside the data folder
        p = resolve_pattern(path, data_dir=root)
    else:
        p = resolve_user_path(path, data_dir=root)  # refuses before any stat, listing or open
    if options.get("coco_crops") and not is_coco_folder(p):
        options = {k: v for k, v in options.items() if k != "coco_crops"}
    try:
        return _load_inside(p, options, root)
    except DiversityError as exc:
        # the loaders name files by their resolved, absolute path: said relative to the data folder,
        # so no message shows where the folder lies on the server (issue 26, item 14)
        raise type(exc)(inside_folder(str(exc), root)) from None


def inside_folder(message: str, root: Path) -> str:
    """``message`` with the data folder's absolute path left out (``/srv/data/a.npy`` -> ``a.npy``)."""
    base = str(Path(root).resolve())
    return message.replace(base + os.sep, "").replace(base, "the data folder")


def shown_source(source: str, root: Optional[Path] = None) -> str:
    """A dataset's source as visitors see it: never where a file lies on the server (issue 41, item 11).

    A file or folder inside the data folder (``root``, default :func:`data_dir`) is named by its
    path relative to it, an upload by its file name(s), a demo by its name; any other path by its
    last part alone.

    >>> shown_source("/srv/data/sprites/a.npy", Path("/srv/data"))
    'data folder: sprites/a.npy'
    >>> shown_source("upload:table.csv")
    'upload: table.csv'
    """
    text = str(source)
    if text.startswith("upload:"):
        return "upload: " + text[len("upload:"):]
    if not text or text.startswith("demo:"):
        return text
    root = data_dir() if root is None else root
    if root is not None:
        try:
            rel = Path(text).resolve().relative_to(Path(root).resolve())
        except (ValueError, OSError):
            rel = None
        if rel is not None:
            return "data folder" + ("" if rel == Path(".") else f": {rel.as_posix()}")
    return Path(text).name or "a file"


def _load_inside(p: Path, options: dict, root: Path) -> Dataset:
    """Load a resolved path inside the data folder (cached by path, modification time and size)."""
    try:
        st_ = p.stat()
        stamp = (st_.st_mtime_ns, st_.st_size)
    except OSError:
        stamp = (0, 0)  # load_dataset reports the problem with its own message
    stamp = stamp + shards_stamp(p)  # WebDataset shards: each shard's time and size
    files = group_files(p)
    if files:  # a folder of embedding files: one group per file
        stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
        return _folder(str(p), stamp, tuple(sorted(options.items())), str(root))
    return _path(str(p), stamp, tuple(sorted(options.items())), str(root))


@shared_cache("data", spinner="Reading the files…")
def _folder(path: str, stamp: tuple, options: tuple, root: str) -> Dataset:
    files = group_files(Path(path))
    # every member is re-checked against the data folder (a link in it may lead out)
    parts = {f.stem: load_dataset(str(f), data_dir=root, **dict(options)) for f in files}
    return combine_as_groups(parts, name=Path(path).name, source=path)
