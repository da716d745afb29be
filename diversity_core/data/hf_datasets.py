"""Hugging Face ``datasets`` on disk, read with pyarrow alone (``datasets`` is never imported, nothing is downloaded).

Three layouts are recognised:

- a folder written by ``Dataset.save_to_disk``: ``dataset_info.json`` (the features), ``state.json``
  (the ``data-*.arrow`` files, Arrow IPC streams, in order);
- a folder written by ``DatasetDict.save_to_disk``: ``dataset_dict.json`` (``{"splits": [...]}``)
  and one such folder per split;
- Hub-style Parquet: a folder of shards (``train-00000-of-00002.parquet``, possibly under
  ``data/`` or ``<config>/<split>/``) or one ``.parquet`` file, written by ``datasets`` (its
  ``huggingface`` schema metadata) or holding an image column as the ``{bytes, path}`` struct.

The modality follows the columns: an image column (the ``Image`` feature, or the ``{bytes, path}``
struct) gives images, a SMILES column (:data:`~.molecules.SMILES_COLUMN_NAMES`) molecules, a string
column text, and a list or fixed-size array of floats the features (of the items, or the items
themselves when nothing else is there). The groups are a label column (a ``ClassLabel`` is read as
its class names, never as integers; otherwise a column named ``label``, ``class``, ...), or the
splits when there is no label column and more than one split; ``group_column="split"`` chooses the
splits. Every item's id names its split and row (``"train row 3"``).

Safety, as for every loader: the Arrow and Parquet files are size-checked before any is read
(their total, and a Parquet file's uncompressed size, against ``max_bytes``), a Parquet footer is
first read in a child process (:func:`~._tables._probe_parquet`), split and file names from the
JSON files must be plain names (a ``../`` is refused) and every file must lie inside the dataset's
folder (and the data folder, with ``data_dir=``); image bytes go through the PNG/JPEG/WebP decoders
of :mod:`.images` with the decoded size checked against the memory budget, and the ``path`` of an
image struct is never opened (it names a file on the machine that wrote the dataset).
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from .._optional import require
from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._dataset import MODALITIES, Dataset, SkippedItem
from ._files import check_size
from ._paths import is_within, read_regular_bytes
from ._tables import GROUP_COLUMN_NAMES, _probe_parquet, check_weight_values
from .embeddings import companion_features
from .images import IMAGE_EXTENSIONS
from .molecules import SMILES_COLUMN_NAMES, _canonicalise_all
from .text import TEXT_COLUMN_NAMES
from .vectors_media import VECTOR_COLUMN_NAMES, ImageReader, vector_matrix, vector_row

__all__ = ["HFSource", "hf_source", "is_hf_source", "hf_columns", "hf_modality", "load_hf_dataset", "SPLIT_GROUP"]

#: ``group_column=`` value that makes the splits the groups.
SPLIT_GROUP = "split"

#: The JSON files of a ``save_to_disk`` folder are small: larger ones are refused unread.
_JSON_LIMIT = 16 << 20
#: A split or data-file name: what ``datasets`` writes (``\w+(\.\w+)*``, file names with ``-``).
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}")
#: ``train-00000-of-00002`` (Hub shards); ``0000`` (the Hub's converted Parquet, split = folder).
_SHARD = re.compile(r"(?P<split>[A-Za-z0-9_.]+?)-\d+-of-\d+")
_DIGITS = re.compile(r"\d+")
_KNOWN_SPLITS = ("train", "test", "validation", "valid", "val", "dev", "eval")
#: The order of the splits of Parquet shards (the others follow, by name), as the Hub shows them.
_SPLIT_ORDER = ("train", "validation", "valid", "val", "dev", "test", "eval")
#: Folders below a shard folder that are searched for Parquet files, and how many entries at most.
_SHARD_DEPTH, _SHARD_LISTING = 3, 10_000
#: Reads the column-chunk metadata of every Parquet file named on its command line (:func:`_probe_all`).
_PROBE_ALL = ("import sys, pyarrow.parquet as pq\nfor a in sys.argv[1:]:\n    m = pq.ParquetFile(a).metadata\n"
              "    [m.row_group(g).column(j) for g in range(m.num_row_groups) for j in range(m.num_columns)]\n")
#: Rows read from an Arrow or Parquet file at a time.
_BATCH_ROWS = 1024
#: The most bytes one Parquet batch may decode to, bounded from the footer (:func:`_parquet_batch_rows`).
_BATCH_BYTES = 256 << 20


@dataclass(frozen=True)
class HFSource:
    """A Hugging Face dataset on disk: its layout, its splits and their files, its features.

    ``kind``: ``"save_to_disk"`` (one split of Arrow files), ``"dataset_dict"`` (several) or
    ``"parquet"``; ``splits``: ``((split, (file, ...)), ...)``; ``features``: the ``features``
    mapping of ``dataset_info.json`` or of the ``huggingface`` schema metadata (may be empty).
    """

    kind: str
    root: Path
    splits: tuple
    features: dict

    @property
    def files(self) -> list:
        """Every data file, split after split."""
        return [f for _split, files in self.splits for f in files]

    def describe(self) -> str:
        """The layout and its splits, for ``Dataset.detected``."""
        what = {"save_to_disk": "a Hugging Face dataset folder (save_to_disk)",
                "dataset_dict": "a Hugging Face DatasetDict folder (save_to_disk)",
                "parquet": "Hugging Face Parquet"}[self.kind]
        names = [s for s, _f in self.splits]
        return f"{what}, {len(names)} split{'s' if len(names) != 1 else ''} ({', '.join(names)})"


# --------------------------------------------------------------------------------------------
# finding the layout
# --------------------------------------------------------------------------------------------


def _read_json(path: Path, shown: str) -> object:
    try:
        data = read_regular_bytes(path, _JSON_LIMIT, shown=shown)
        return json.loads(data.decode("utf-8"))
    except DiversityInputError:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise DiversityInputError(f"{shown}: not valid JSON; the dataset folder is damaged. Save it again.") from None


def _safe_name(name, what: str, where: str) -> str:
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or ".." in name:
        shown = repr(name)[:80]
        raise DiversityInputError(
            f"{where}: the {what} {shown} is not a plain name (a path such as '../x' or 'a/b' is refused: it could "
            "lead outside the dataset's folder). Rename it as datasets does (letters, digits, '_', '-', '.')."
        )
    return name


def _member(root: Path, name: str, where: str, *, folder: bool) -> Path:
    """``root/name`` when it is a regular file (or a folder) inside ``root`` (links followed), else a refusal."""
    p = root / name
    real_root = os.path.realpath(root)
    try:
        real = os.path.realpath(p, strict=True)
        mode = os.stat(real).st_mode
    except (OSError, ValueError, RuntimeError):
        raise DiversityInputError(f"{where}: {name!r} is missing; the dataset folder is incomplete.") from None
    if not is_within(real, real_root):
        raise DiversityInputError(f"{where}: {name!r} leads outside the dataset's folder; it is never read.")
    if folder and not stat.S_ISDIR(mode):
        raise DiversityInputError(f"{where}: {name!r} is not a folder.")
    if not folder and not stat.S_ISREG(mode):
        raise DiversityInputError(f"{where}: {name!r} is not a regular file; only regular files are read.")
    return p


def _arrow_split(folder: Path, shown: str) -> tuple:
    """The Arrow files of a ``Dataset.save_to_disk`` folder, from its ``state.json``."""
    state = _read_json(_member(folder, "state.json", shown, folder=False), f"{shown}/state.json")
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not entries:
        raise DiversityInputError(f"{shown}/state.json names no data files; the dataset folder is damaged.")
    files = []
    for entry in entries:
        name = entry.get("filename") if isinstance(entry, dict) else None
        _safe_name(name, "data file", f"{shown}/state.json")
        files.append(_member(folder, name, shown, folder=False))
    return tuple(files)


def _features_of(info) -> dict:
    features = info.get("features") if isinstance(info, dict) else None
    return features if isinstance(features, dict) else {}


def _list_parquet(root: Path) -> list:
    """Parquet files below ``root`` (at most :data:`_SHARD_DEPTH` folders deep, links not followed).

    Empty when ``root`` holds images at its top level (an image folder, not shards).
    """
    found, seen = [], 0
    base = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).parts) - base
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if depth < _SHARD_DEPTH else []
        if depth == 0 and any(Path(f).suffix.lower() in IMAGE_EXTENSIONS for f in filenames):
            return []
        for f in sorted(filenames):
            seen += 1
            if f.lower().endswith((".parquet", ".pq")) and not f.startswith(".") and _regular(Path(dirpath) / f):
                found.append(Path(dirpath) / f)
        if seen > _SHARD_LISTING:
            return []
    return found


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (links followed): a FIFO named ``*.parquet`` would block a reader."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _parquet_schema(path: Path):
    pq = require("pyarrow.parquet", purpose="reading Hugging Face Parquet files")
    if not _regular(path):
        return None
    try:
        return pq.read_schema(path)
    except Exception:  # noqa: BLE001 - not Parquet, or damaged: the ordinary readers say so
        return None


def _hf_metadata(schema) -> Optional[dict]:
    meta = schema.metadata or {}
    raw = meta.get(b"huggingface")
    if raw is None:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    info = value.get("info") if isinstance(value, dict) else None
    return info if isinstance(info, dict) else {}


def _is_image_struct(t) -> bool:
    import pyarrow as pa

    if not pa.types.is_struct(t):
        return False
    names = {t.field(i).name for i in range(t.num_fields)}
    if "bytes" not in names or not names <= {"bytes", "path"}:
        return False
    b = t.field("bytes").type
    return pa.types.is_binary(b) or pa.types.is_large_binary(b)


def _split_of(file: Path, root: Path) -> str:
    """The split a shard belongs to: ``train-00000-of-00002`` -> train; ``train/0000`` -> train."""
    stem = file.name.rsplit(".", 1)[0]
    m = _SHARD.fullmatch(stem)
    if m:
        return m.group("split")
    if stem.lower() in _KNOWN_SPLITS:
        return stem
    if _DIGITS.fullmatch(stem) and file.parent != root:
        return file.parent.name
    return "train"


def _parquet_source(p: Path, files: list) -> Optional[HFSource]:
    schema = _parquet_schema(files[0])
    if schema is None:
        return None
    info = _hf_metadata(schema)
    named = all(_SHARD.fullmatch(f.name.rsplit(".", 1)[0]) for f in files)
    if info is None and not named and not any(_is_image_struct(f.type) for f in schema):
        return None
    root = p if p.is_dir() else p.parent
    splits: dict = {}
    for f in files:
        splits.setdefault(_split_of(f, root), []).append(f)
    order = sorted(splits, key=lambda s: (_SPLIT_ORDER.index(s) if s in _SPLIT_ORDER else len(_SPLIT_ORDER), s))
    return HFSource("parquet", p, tuple((s, tuple(splits[s])) for s in order), _features_of(info or {}))


def hf_source(path) -> Optional[HFSource]:
    """The Hugging Face dataset at ``path``, or None when it is not one.

    Reads only names, the small JSON files and Parquet schemas, never the data.

    Parameters
    ----------
    path : str or Path
        A folder (``save_to_disk``, ``DatasetDict.save_to_disk``, Parquet shards) or a
        ``.parquet`` file.

    Returns
    -------
    HFSource or None

    Raises
    ------
    DiversityInputError
        A recognised dataset folder whose JSON names a split or file that is not a plain name
        (``../``), a file outside the folder, or a missing file.
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except (OSError, ValueError):
        return None
    shown = str(p)
    if stat.S_ISDIR(mode):
        if (p / "dataset_dict.json").is_file():
            spec = _read_json(_member(p, "dataset_dict.json", shown, folder=False), f"{shown}/dataset_dict.json")
            names = spec.get("splits") if isinstance(spec, dict) else None
            if not isinstance(names, list) or not names:
                raise DiversityInputError(f"{shown}/dataset_dict.json names no splits; the folder is damaged.")
            splits, features = [], {}
            for name in names:
                _safe_name(name, "split name", f"{shown}/dataset_dict.json")
                sub = _member(p, name, shown, folder=True)
                splits.append((name, _arrow_split(sub, f"{shown}/{name}")))
                if not features and (sub / "dataset_info.json").is_file():
                    info = _member(sub, "dataset_info.json", f"{shown}/{name}", folder=False)
                    features = _features_of(_read_json(info, f"{shown}/{name}/dataset_info.json"))
            return HFSource("dataset_dict", p, tuple(splits), features)
        if (p / "state.json").is_file() and (p / "dataset_info.json").is_file():
            files = _arrow_split(p, shown)
            info = _member(p, "dataset_info.json", shown, folder=False)
            features = _features_of(_read_json(info, f"{shown}/dataset_info.json"))
            return HFSource("save_to_disk", p, (("train", files),), features)
        files = _list_parquet(p)
        return _parquet_source(p, files) if files else None
    if stat.S_ISREG(mode) and p.suffix.lower() in (".parquet", ".pq"):
        return _parquet_source(p, [p])
    return None


def is_hf_source(path) -> bool:
    """Whether ``path`` is a Hugging Face dataset on disk (:func:`hf_source`), never raising."""
    try:
        return hf_source(path) is not None
    except DiversityInputError:
        return True  # recognised, and refused when loaded


# --------------------------------------------------------------------------------------------
# the columns
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Roles:
    modality: str
    image: Optional[str]
    text: Optional[str]
    smiles: Optional[str]
    vector: Optional[str]
    group: Optional[str]  # a column, SPLIT_GROUP, or None
    weight: Optional[str]
    class_names: Optional[tuple]


def _is_string(t) -> bool:
    import pyarrow as pa

    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_vector(t) -> bool:
    import pyarrow as pa

    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        v = t.value_type
        return pa.types.is_floating(v) or pa.types.is_integer(v)
    return False


def _class_names(features: dict, name: str) -> Optional[tuple]:
    spec = features.get(name)
    if isinstance(spec, dict) and spec.get("_type") == "ClassLabel" and isinstance(spec.get("names"), list):
        return tuple(str(n) for n in spec["names"])
    return None


def _first_named(names: list, candidates) -> Optional[str]:
    lower = {n.lower(): n for n in names}
    return next((lower[c.lower()] for c in candidates if c.lower() in lower), None)


def _roles(schema, features: dict, *, modality: str, group_column, weight_column, text_column, smiles_column,
           n_splits: int, where: str) -> _Roles:
    """Which column plays which part (see the module docstring)."""
    import pyarrow as pa

    names = [f.name for f in schema]
    types = {f.name: f.type for f in schema}
    for opt, value in (("group_column", group_column), ("weight_column", weight_column),
                       ("text_column", text_column), ("smiles_column", smiles_column)):
        if value is not None and value not in names and not (opt == "group_column" and value == SPLIT_GROUP):
            raise DiversityInputError(
                f"{where}: no column named {value!r} ({opt}); the columns are: {', '.join(names)}"
                + (f", or {SPLIT_GROUP!r} for the splits." if opt == "group_column" else ".")
            )
    images = [n for n in names if (isinstance(features.get(n), dict) and features[n].get("_type") == "Image")
              or _is_image_struct(types[n])]
    vectors = [n for n in names if _is_vector(types[n])]
    labels = [n for n in names if _class_names(features, n) is not None]
    group = group_column
    if group is None:
        group = _first_named(labels, GROUP_COLUMN_NAMES) or (labels[0] if labels else None)
        if group is None:
            cand = _first_named(names, GROUP_COLUMN_NAMES)
            if cand is not None and (_is_string(types[cand]) or pa.types.is_integer(types[cand])):
                group = cand
        if group is None and n_splits > 1:
            group = SPLIT_GROUP
    used = {group, weight_column}
    strings = [n for n in names if _is_string(types[n]) and n not in used]
    smiles = smiles_column or _first_named(strings, SMILES_COLUMN_NAMES)
    text = text_column
    if text is None:
        rest = [s for s in strings if s != smiles]
        text = _first_named(rest, TEXT_COLUMN_NAMES) or (rest[0] if len(rest) == 1 else None)
    vector = _first_named(vectors, VECTOR_COLUMN_NAMES) or (vectors[0] if vectors else None)
    image = images[0] if images else None
    if modality == "auto":
        if image is not None:
            modality = "images"
        elif smiles is not None:
            modality = "molecules"
        elif text is not None:
            modality = "text"
        elif vector is not None:
            modality = "embeddings"
        else:
            raise DiversityInputError(
                f"{where}: no column to measure: no image, text, SMILES or vector column among "
                f"{', '.join(names)}. Name one with text_column= or smiles_column=."
            )
    needed = {"images": image, "text": text, "molecules": smiles, "embeddings": vector}[modality]
    if needed is None:
        raise DiversityInputError(
            f"{where}: modality={modality!r} but no {modality[:-1] if modality != 'molecules' else 'SMILES'} "
            f"column was found among {', '.join(names)}."
        )
    class_names = None if group in (None, SPLIT_GROUP) else _class_names(features, group)
    return _Roles(modality, image if modality == "images" else None, text if modality == "text" else None,
                  smiles if modality == "molecules" else None, vector, group, weight_column, class_names)


def _schema_of(src: HFSource):
    import pyarrow as pa

    first = src.files[0]
    if src.kind == "parquet":
        return _parquet_schema(first)
    try:
        with pa.memory_map(str(first)) as mm:
            return _open_arrow(mm).schema
    except DiversityInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types; their text may quote the file
        raise DiversityInputError(f"{first}: cannot read the Arrow file ({type(exc).__name__}); it may be "
                                  "truncated or not written by datasets. Save the dataset again.") from None


def hf_modality(path, *, group_column=None, weight_column=None, text_column=None,
                smiles_column=None) -> Optional[tuple]:
    """``(modality, why)`` :func:`load_hf_dataset` reads at ``path``, or None when it is not a Hugging Face dataset."""
    src = hf_source(path)
    if src is None:
        return None
    schema = _schema_of(src)
    if schema is None:
        return None
    features = src.features or _features_of(_hf_metadata(schema) or {})
    roles = _roles(schema, features, modality="auto", group_column=group_column, weight_column=weight_column,
                   text_column=text_column, smiles_column=smiles_column, n_splits=len(src.splits),
                   where=str(src.root))
    return roles.modality, _detected(src, roles)


def hf_columns(path) -> Optional[tuple]:
    """``(columns, group_column, modality)`` of a Hugging Face dataset, or None when ``path`` is not one.

    The column names (and ``"split"``), the group column the loader takes when none is named,
    and the modality it reads; from the schema alone, no data read.
    """
    src = hf_source(path)
    if src is None:
        return None
    schema = _schema_of(src)
    if schema is None:
        return None
    features = src.features or _features_of(_hf_metadata(schema) or {})
    roles = _roles(schema, features, modality="auto", group_column=None, weight_column=None, text_column=None,
                   smiles_column=None, n_splits=len(src.splits), where=str(src.root))
    names = tuple(f.name for f in schema)
    return names + ((SPLIT_GROUP,) if SPLIT_GROUP not in names else ()), roles.group, roles.modality


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _open_arrow(mm):
    """An Arrow IPC reader of an open file: the stream format ``datasets`` writes, or the file format."""
    import pyarrow as pa

    try:
        return pa.ipc.open_stream(mm)
    except pa.ArrowInvalid:
        mm.seek(0)
        return pa.ipc.open_file(mm)


def _check_sizes(src: HFSource, max_bytes: int, confine: Optional[Path]) -> None:
    """Every file inside the data folder and the total within ``max_bytes``, before any data is read."""
    total = 0
    for f in src.files:
        real = os.path.realpath(f)
        if confine is not None and not is_within(real, confine):
            raise DiversityInputError(f"{src.root}: {f.name!r} leads outside the data folder; it is never read.")
        st = os.stat(real)
        check_size(f, st.st_size, max_bytes, what="file")
        total += st.st_size
    what = "dataset's Arrow files" if src.kind != "parquet" else "dataset's Parquet files"
    check_size(src.root, total, max_bytes, what=what)
    if src.kind == "parquet":
        pq = require("pyarrow.parquet", purpose="reading Hugging Face Parquet files")
        _probe_all(src.files)
        uncompressed = 0
        for f in src.files:
            meta = pq.ParquetFile(f).metadata
            uncompressed += sum(int(meta.row_group(g).total_byte_size) for g in range(meta.num_row_groups))
        check_size(src.root, uncompressed, max_bytes, what="dataset's uncompressed Parquet data")


def _probe_all(files: list) -> None:
    """Read every Parquet footer's column-chunk metadata in one child process first.

    As :func:`~._tables._probe_parquet` does for one file (a malformed footer can abort pyarrow),
    for all the shards at once; on a failure each file is probed alone, so the message names it.
    """
    import subprocess
    import sys

    code = _PROBE_ALL
    try:
        done = subprocess.run([sys.executable, "-c", code, *map(str, files)], capture_output=True, timeout=600,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
        ok = done.returncode == 0
    except subprocess.TimeoutExpired:
        ok = False
    if not ok:
        for f in files:
            _probe_parquet(f)


def _batches(src: HFSource, file: Path, columns: list, max_bytes: int, state: dict) -> Iterator:
    """Record batches of ``columns`` from one file; the bytes decoded so far counted against ``max_bytes``."""
    import pyarrow as pa

    try:
        if src.kind == "parquet":
            pq = require("pyarrow.parquet", purpose="reading Hugging Face Parquet files")
            pf = pq.ParquetFile(file, pre_buffer=False, buffer_size=1 << 20)
            it = pf.iter_batches(batch_size=_parquet_batch_rows(pf.metadata, max_bytes), columns=columns,
                                 use_pandas_metadata=False)
            mm = None
        else:
            mm = pa.memory_map(str(file))
            reader = _open_arrow(mm)
            it = iter(reader) if isinstance(reader, pa.ipc.RecordBatchStreamReader) else (
                reader.get_batch(i) for i in range(reader.num_record_batches))
        try:
            for batch in it:
                batch = batch.select(columns)
                state["bytes"] += int(batch.nbytes)
                if state["bytes"] > max_bytes:
                    check_size(src.root, state["bytes"], max_bytes, what="dataset's decoded data")
                yield batch
        finally:
            if mm is not None:
                mm.close()
    except DiversityInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types; their text may quote the file
        kind = "Parquet" if src.kind == "parquet" else "Arrow"
        raise DiversityInputError(f"{file}: cannot read the {kind} file ({type(exc).__name__}); it may be "
                                  "truncated or damaged. Save the dataset again.") from None


def _parquet_batch_rows(meta, max_bytes: int) -> int:
    """Rows per batch so that one batch decodes to at most :data:`_BATCH_BYTES` (or ``max_bytes``).

    A dictionary-encoded column stores a repeated value once: 4 rows of one 4 MiB value take 4 MiB
    uncompressed but decode to 16 MiB, so the footer's sizes do not bound what a batch decodes. A
    value is never larger than its column chunk uncompressed, which bounds a row by the largest
    chunk; the decoded bytes are counted batch by batch against ``max_bytes`` (:func:`_batches`).
    """
    largest = 1
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        for j in range(rg.num_columns):
            largest = max(largest, int(rg.column(j).total_uncompressed_size))
    return int(max(1, min(_BATCH_ROWS, min(_BATCH_BYTES, max_bytes) // largest)))


def _count_rows(src: HFSource) -> int:
    """The rows of every file (Parquet: from the footers; Arrow: the batches' lengths, memory-mapped)."""
    import pyarrow as pa

    total = 0
    for f in src.files:
        if src.kind == "parquet":
            total += int(require("pyarrow.parquet", purpose="reading Parquet").ParquetFile(f).metadata.num_rows)
            continue
        with pa.memory_map(str(f)) as mm:
            reader = _open_arrow(mm)
            if isinstance(reader, pa.ipc.RecordBatchStreamReader):
                total += sum(b.num_rows for b in reader)
            else:
                total += sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    return total


def _label_text(value, class_names: Optional[tuple], where: str, column: str) -> str:
    if value is None:
        return ""
    if class_names is not None:
        k = int(value)
        if k == -1:
            return "(no label)"
        if not 0 <= k < len(class_names):
            raise DiversityInputError(
                f"{where}: label {k} in column {column!r} is outside its {len(class_names)} class names. "
                "Fix the label or the ClassLabel's names."
            )
        return class_names[k]
    return str(value).strip()


def load_hf_dataset(
    path,
    *,
    modality: str = "auto",
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    text_column: Optional[str] = None,
    smiles_column: Optional[str] = None,
    embeddings=None,
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    confine: Optional[Path] = None,
) -> Dataset:
    """Load a Hugging Face dataset on disk (see the module docstring) without importing ``datasets``.

    Parameters
    ----------
    path : str or Path
        A ``save_to_disk`` folder, a ``DatasetDict.save_to_disk`` folder, a folder of Hub
        Parquet shards or one such ``.parquet`` file (:func:`hf_source`).
    modality : {"auto", "embeddings", "images", "text", "molecules"}
        ``"auto"`` follows the columns.
    group_column : str, optional
        A column (a ``ClassLabel`` is read as its names) or ``"split"``; default: the label
        column, else the splits when there are several.
    weight_column, text_column, smiles_column : str, optional
        As for :func:`~diversity_core.data.load_dataset`.
    embeddings : path, optional
        Companion embeddings aligned by the items' ids or by row order.
    max_bytes : int
        Refuse files (each, and in all, a Parquet file also uncompressed) and image bytes over this.
    progress : callable, optional
        ``progress(done, total, message)`` while reading.
    confine : Path, optional
        The resolved data folder every file must stay inside.

    Returns
    -------
    Dataset

    Raises
    ------
    DiversityInputError
        Unsafe names, files outside the folder, files over the size limit, image bytes that are
        not PNG/JPEG/WebP, images without bytes (their path is never opened), missing columns,
        fewer than 2 items.
    MemoryBudgetError
        An image whose decoded size would not fit the memory budget.
    """
    src = hf_source(path)
    if src is None:
        raise DiversityInputError(f"{path}: not a Hugging Face dataset folder or Parquet file.")
    if modality not in ("auto",) + MODALITIES:
        raise DiversityInputError(f"unknown modality {modality!r}; choose one of: auto, {', '.join(MODALITIES)}.")
    where = str(src.root)
    _check_sizes(src, max_bytes, confine)
    schema = _schema_of(src)
    if schema is None:
        raise DiversityInputError(f"{src.files[0]}: cannot read the Parquet file's schema; re-export it.")
    features = src.features or _features_of(_hf_metadata(schema) or {})
    roles = _roles(schema, features, modality=modality, group_column=group_column, weight_column=weight_column,
                   text_column=text_column, smiles_column=smiles_column, n_splits=len(src.splits), where=where)
    item_col = roles.image or roles.text or roles.smiles
    columns = [c for c in dict.fromkeys((item_col, roles.vector, roles.group, roles.weight))
               if c is not None and c != SPLIT_GROUP]
    reader = ImageReader(where, max_bytes) if roles.modality == "images" else None
    texts, vectors, groups, weights, ids, wheres, skipped = [], [], [], [], [], [], []
    state = {"bytes": 0}
    total = 0
    if progress is not None and roles.modality == "images":
        try:
            total = _count_rows(src)
        except Exception:  # noqa: BLE001 - a damaged file: reading it below says so, naming it
            total = 0
    many = len(src.splits) > 1
    done = 0
    for split, files in src.splits:
        row = 0
        for file in files:
            for batch in _batches(src, file, columns, max_bytes, state):
                cols = {name: batch.column(name) for name in columns}
                item_values = _item_values(cols[item_col], roles) if item_col else None
                vec_values = cols[roles.vector].to_pylist() if roles.vector else None
                group_values = cols[roles.group].to_pylist() if roles.group in cols else None
                weight_values = cols[roles.weight].to_pylist() if roles.weight else None
                for j in range(batch.num_rows):
                    row += 1
                    label = f"{split} row {row}" if many or split != "train" else f"row {row}"
                    at = f"{Path(where).name} {label}"
                    if item_values is not None:
                        value, problem = item_values[j]
                        if problem is not None:
                            skipped.append(SkippedItem(at, problem))
                            continue
                    if roles.vector:
                        if vec_values[j] is None:
                            if roles.modality == "embeddings":
                                skipped.append(SkippedItem(at, f"no vector in column {roles.vector!r}"))
                                continue
                            raise DiversityInputError(
                                f"{at}: the vector column {roles.vector!r} is empty; fill it in or drop the row.")
                        vectors.append(vector_row(vec_values[j], at, roles.vector))
                    if roles.modality == "images":
                        if done % 64 == 0:
                            report(progress, done, total, "reading images")
                        reader.add(value, at)
                    elif roles.modality in ("text", "molecules"):
                        texts.append(value)
                    if roles.group == SPLIT_GROUP:
                        groups.append(split)
                    elif group_values is not None:
                        groups.append(_label_text(group_values[j], roles.class_names, at, roles.group))
                    if weight_values is not None:
                        weights.append(np.nan if weight_values[j] is None else float(weight_values[j]))
                    ids.append(label)
                    wheres.append(at)
                    done += 1
    return _finish(src, roles, reader, texts, vectors, groups, weights, ids, wheres, skipped, embeddings,
                   max_bytes, progress)


def _item_values(col, roles: _Roles) -> list:
    """``[(value, problem)]`` per row of the item column: the image bytes or the text, or why it is skipped."""
    if roles.modality == "images":
        import pyarrow as pa

        if pa.types.is_struct(col.type):
            blobs = col.field("bytes").to_pylist()
            paths = col.field("path").to_pylist() if col.type.get_field_index("path") >= 0 else [None] * len(blobs)
        else:
            blobs, paths = col.to_pylist(), [None] * len(col)
        out = []
        for b, p in zip(blobs, paths):
            if b:
                out.append((bytes(b), None))
            elif p:
                out.append((None, "the image has no bytes, only a path, which is never opened (it names a file "
                                  "on the machine that wrote the dataset); save the dataset with embedded images"))
            else:
                out.append((None, f"no image in column {roles.image!r}"))
        return out
    name = roles.text or roles.smiles
    return [(str(v).strip(), None) if v is not None and str(v).strip() else (None, f"empty value in column {name!r}")
            for v in col.to_pylist()]


def _finish(src, roles, reader, texts, vectors, groups, weights, ids, wheres, skipped, embeddings, max_bytes,
            progress) -> Dataset:
    where = str(src.root)
    name = src.root.name
    if roles.modality == "molecules":
        texts, keep = _canonicalise_all(texts, wheres, progress, skipped)
        ids = [ids[i] for i in keep]
        vectors = [vectors[i] for i in keep] if vectors else vectors
        groups = [groups[i] for i in keep] if groups else groups
        weights = [weights[i] for i in keep] if weights else weights
        wheres = [wheres[i] for i in keep]
    n = len(ids)
    if n < 2:
        detail = ""
        if skipped:
            detail = f" ({len(skipped)} rows were skipped, e.g. {skipped[0].where}: {skipped[0].reason})"
        raise DiversityInputError(
            f"{where}: {'no usable items' if n == 0 else 'a single usable item'}; diversity needs at least 2{detail}."
        )
    features = vector_matrix(vectors, wheres, roles.vector, where) if roles.vector else None
    if embeddings is not None:
        features = companion_features(embeddings, ids, max_bytes, where)
    if roles.modality == "embeddings":
        items = None
    elif roles.modality == "images":
        report(progress, n, n, "reading images")
        items = reader.thumbnails()
    else:
        items = texts
    group_array = None
    if groups:
        group_array = np.asarray(groups, dtype=str)
        empty = np.flatnonzero(group_array == "")
        if empty.size:
            raise DiversityInputError(
                f"{where}: the group column {roles.group!r} is empty at {wheres[int(empty[0])]}. "
                "Give every row a group, or choose another with group_column=."
            )
    w = None
    if roles.weight:
        w = check_weight_values(np.asarray(weights, dtype=np.float64),
                                lambda rows: ", ".join(wheres[int(r)] for r in rows[:5]), where, roles.weight)
    return Dataset(name=name, modality=roles.modality, items=items, features=features, groups=group_array,
                   weights=w, ids=ids, skipped=tuple(skipped), source=where, detected=_detected(src, roles))


def _detected(src: HFSource, roles: _Roles) -> str:
    """What ``Dataset.detected`` says of a Hugging Face source: the layout, the columns and the groups."""
    item = roles.image or roles.text or roles.smiles
    out = f"{src.describe()}: {roles.modality}" + (f" from column {item!r}" if item else "")
    if roles.vector and roles.modality != "embeddings":
        out += f"; the vectors of column {roles.vector!r} are the features"
    elif roles.vector:
        out += f" from column {roles.vector!r}"
    if roles.group == SPLIT_GROUP:
        out += "; groups are the splits"
    elif roles.group:
        kind = "its class names" if roles.class_names is not None else "its values"
        out += f"; groups from column {roles.group!r} ({kind}; group_column='split' groups by split)"
    return out
