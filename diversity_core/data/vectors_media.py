"""Bring-your-own vectors with media: a table of embeddings beside the images or texts they embed.

A table (``.parquet``, ``.jsonl``, ``.csv``/``.tsv``, read by :func:`~._tables.read_table`) with

- a **vector column**: a list column (Parquet lists or fixed-size arrays, JSON lists) or, in a
  delimited file, a column of ``[0.1, 0.2, ...]`` strings; every row the same length;
- a **media column**: image bytes (a binary column, or the ``{bytes, path}`` struct Hugging Face
  writes), a file path of a PNG/JPEG/WebP image, or text,

loads as an ``images`` or ``text`` :class:`~._dataset.Dataset` whose ``features`` are the
vectors (the featurizer ``"default"`` then uses them) and whose items (thumbnails, strings) drive
the galleries and hover cards, the way Embedding Atlas shows precomputed embeddings.

Safety: image bytes are decoded only by the PNG/JPEG/WebP decoders of :mod:`.images`, after
the decoded size is checked against the memory budget; the path inside a ``{bytes, path}``
struct is never opened; a media path is resolved relative to the table's folder and must stay
inside the data folder (``load_dataset(..., data_dir=)``) or, without one, inside the table's own
folder (an uploaded table cannot make the server read its other files); every image read counts
toward ``max_bytes``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional, Sequence

import numpy as np

from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError
from ._dataset import Dataset, SkippedItem
from ._paths import human_bytes, is_within, read_regular_bytes
from ._tables import (
    GROUP_COLUMN_NAMES,
    ID_COLUMNS,
    TABLE_EXTENSIONS,
    Table,
    column_phrase,
    detect_group_column,
    is_text_column,
    read_table,
    weights_from_column,
)
from ._thumbnails import ThumbnailStack
from .embeddings import check_feature_array
from .images import IMAGE_EXTENSIONS, _small, decode_image
from .molecules import SMILES_COLUMN_NAMES
from .text import TEXT_COLUMN_NAMES

__all__ = ["MediaColumns", "find_media_columns", "media_columns_for", "media_group_column", "load_vectors_media",
           "ImageReader",
           "vector_row", "vector_matrix"]

#: Column names preferred for the vectors when a table has several list columns.
VECTOR_COLUMN_NAMES = ("embedding", "embeddings", "vector", "vectors", "features", "feature", "emb", "clip")

#: What a media column holds.
MEDIA_KINDS = ("image_bytes", "image_path", "text")


@dataclass(frozen=True)
class MediaColumns:
    """The columns of a vectors-with-media table: ``vector``, ``media`` and what it holds (``kind``)."""

    vector: str
    media: str
    kind: str

    @property
    def modality(self) -> str:
        """``"text"`` or ``"images"``: what the loaded dataset holds."""
        return "text" if self.kind == "text" else "images"

    def describe(self, columns: Sequence) -> str:
        """What ``Dataset.detected`` says of these columns (named by position when not name-like)."""
        cols = list(columns)
        what = {"image_bytes": "image bytes", "image_path": "image file paths", "text": "text"}[self.kind]
        return (f"vectors with media: the vectors of {column_phrase(self.vector, cols.index(self.vector))} are "
                f"the features, {column_phrase(self.media, cols.index(self.media))} holds {what}")


# --------------------------------------------------------------------------------------------
# cells
# --------------------------------------------------------------------------------------------


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _image_blob(v):
    """The bytes of an image cell (raw bytes, or the ``bytes`` of a ``{bytes, path}`` struct), else None.

    The struct's ``path`` is never used: it names a file on the machine that wrote the table.
    """
    if isinstance(v, dict):
        v = v.get("bytes")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v) if len(v) else None
    return None


def _is_bytes_column(col) -> bool:
    for v in col.to_numpy()[:20]:
        if _missing(v):
            continue
        if isinstance(v, (bytes, bytearray, memoryview)):
            return True
        return isinstance(v, dict) and "bytes" in v and set(v) <= {"bytes", "path"}
    return False


def _is_path_column(col) -> bool:
    """Every non-empty value a string ending in an image extension (and at least one such value)."""
    values = [v for v in col.to_numpy() if not _missing(v)]
    if not values or not all(isinstance(v, str) for v in values):
        return False
    return all(PurePosixPath(v.strip().replace("\\", "/")).suffix.lower() in IMAGE_EXTENSIONS for v in values)


def vector_row(v, where: str, column: str) -> np.ndarray:
    """One vector cell as a 1-D float64 array: a list, an array, or a ``"[0.1, 0.2]"`` string."""
    if isinstance(v, str):
        text = v.strip()
        if not (text.startswith("[") and text.endswith("]")):
            raise DiversityInputError(f"{where}: the vector column {column!r} holds text, not a list of numbers.")
        try:
            v = json.loads(text)
        except (ValueError, RecursionError):
            raise DiversityInputError(
                f"{where}: the vector column {column!r} is not a list of numbers such as [0.1, 0.2]."
            ) from None
    try:
        arr = np.asarray(v, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise DiversityInputError(
            f"{where}: the vector column {column!r} holds non-numeric values; each entry must be a list of numbers."
        ) from None
    return arr


def _is_vector_column(col) -> bool:
    values = [v for v in col.to_numpy()[:20] if not _missing(v)]
    if not values:
        return False
    first = values[0]
    if isinstance(first, (list, tuple, np.ndarray)):
        try:
            np.asarray(first, dtype=np.float64)
        except (TypeError, ValueError):
            return False
        return True
    if isinstance(first, str):  # a delimited file: "[0.1, 0.2, ...]"
        return all(isinstance(v, str) and v.strip().startswith("[") and v.strip().endswith("]")
                   for v in values) and _parses(values[0])
    return False


def _parses(text: str) -> bool:
    try:
        return np.asarray(json.loads(text), dtype=np.float64).ndim == 1
    except (ValueError, TypeError, RecursionError):
        return False


# --------------------------------------------------------------------------------------------
# detection
# --------------------------------------------------------------------------------------------


def find_media_columns(table: Table, *, text_column: Optional[str] = None, group_column: Optional[str] = None,
                       weight_column: Optional[str] = None) -> Optional[MediaColumns]:
    """The vector and media columns of ``table``, or None when it is not a vectors-with-media table.

    The vector column is a list column (or a delimited file's ``[...]`` strings); several: the
    one named like :data:`VECTOR_COLUMN_NAMES`, else the first. The media column, in this
    order: ``text_column`` when named; image bytes; image file paths (every value ends in
    ``.png``/``.jpg``/``.jpeg``/``.webp``); a text column found by name
    (:data:`~.text.TEXT_COLUMN_NAMES`); the only other string column, unless it looks like groups
    (named like :data:`~._tables.GROUP_COLUMN_NAMES`, or half its values or more repeated). SMILES
    columns are never media (a table of SMILES and fingerprints stays molecules).

    Parameters
    ----------
    table : Table
        The table as read.
    text_column, group_column, weight_column : str, optional
        The loader's column options (never taken as the vectors or the media but ``text_column``).

    Returns
    -------
    MediaColumns or None
    """
    df = table.df
    reserved = {c for c in (group_column, weight_column) if c}
    vectors = [c for c in df.columns if c not in reserved and c != text_column and _is_vector_column(df[c])]
    if not vectors:
        return None
    lower = {str(c).lower(): c for c in vectors}
    vector = next((lower[n] for n in VECTOR_COLUMN_NAMES if n in lower), vectors[0])
    smiles = {str(c).lower() for c in SMILES_COLUMN_NAMES}
    rest = [c for c in df.columns if c not in reserved and c not in vectors and str(c).lower() not in smiles]
    if text_column is not None:
        if text_column not in df.columns:
            return None
        return MediaColumns(vector, text_column, "text")
    for c in rest:
        if _is_bytes_column(df[c]):
            return MediaColumns(vector, c, "image_bytes")
    for c in rest:
        if _is_path_column(df[c]):
            return MediaColumns(vector, c, "image_path")
    by_name = table.find_column([n for n in TEXT_COLUMN_NAMES if n.lower() not in {str(r).lower() for r in reserved}])
    if by_name is not None and by_name in rest and is_text_column(df[by_name]):
        return MediaColumns(vector, by_name, "text")
    # the only other string column, unless it looks like groups (a group name, or values that repeat:
    # a table of vectors and their model or class is embeddings with groups, not text)
    id_col = table.find_column(ID_COLUMNS)
    groups = {n.lower() for n in GROUP_COLUMN_NAMES}
    strings = [c for c in rest if c != id_col and is_text_column(df[c])]
    if len(strings) == 1 and str(strings[0]).lower() not in groups:
        values = df[strings[0]].dropna().astype(str)
        if values.nunique() > len(values) // 2:
            return MediaColumns(vector, strings[0], "text")
    return None


# --------------------------------------------------------------------------------------------
# images from bytes, within the size limit
# --------------------------------------------------------------------------------------------


class ImageReader:
    """Decodes images one at a time into small PIL images, counting the bytes against ``max_bytes``.

    Each image goes through :func:`~.images.decode_image` (PNG/JPEG/WebP only, the decoded size
    checked against the memory budget) and is shrunk right away (:func:`~.images._small`), so a
    large collection never sits in memory at full size. :meth:`thumbnails` stacks them.
    """

    def __init__(self, source: str, max_bytes: int):
        self.source, self.max_bytes, self.read = source, max_bytes, 0
        self.stack = ThumbnailStack()

    def add(self, data: bytes, where: str) -> None:
        """Decode one image (``where`` names it in messages) and keep its thumbnail."""
        self.read += len(data)
        if self.read > self.max_bytes:
            raise DiversityInputError(
                f"{self.source}: the images hold more than {human_bytes(self.max_bytes)} (the size limit; "
                f"reached at {where}). Raise the limit with max_bytes= (CLI: --max-bytes) if you trust the "
                "data, or load a subsample."
            )
        self.stack.append(_small(decode_image(data, where)))

    def thumbnails(self) -> np.ndarray:
        """The images read, as uint8 thumbnails N x H x W x C (the rule of :mod:`.images`)."""
        return self.stack.array()


def vector_matrix(rows: list, where: list, column: str, source: str) -> np.ndarray:
    """Stack per-row vectors (1-D arrays) into an N x d float64 matrix; ragged rows name the row."""
    if not rows:
        raise DiversityInputError(f"{source}: no vectors in column {column!r}.")
    d = rows[0].shape[0]
    for r, w in zip(rows, where):
        if r.shape[0] != d:
            raise DiversityInputError(
                f"{source}: ragged vectors: {w} has a vector of length {r.shape[0]} in column {column!r} but "
                f"the first row has {d}. Every vector needs the same length."
            )
    X = np.vstack(rows) if d else np.empty((len(rows), 0))
    return check_feature_array(X, source)


# --------------------------------------------------------------------------------------------
# media paths
# --------------------------------------------------------------------------------------------


def _media_root(path: Path, confine: Optional[Path]) -> Path:
    return Path(os.path.realpath(confine if confine is not None else path.parent))


def resolve_media_path(raw: str, table_dir: Path, root: Path, where: str, *, in_data_folder: bool) -> Path:
    """A media path resolved relative to the table's folder, inside ``root``, or one refusal.

    Missing, outside ``root`` (through ``..``, an absolute path or a symbolic link) and not an
    image file all get the same message, which names the path as given and never tells whether
    a file outside exists.
    """
    text = raw.strip()
    inside = "the data folder" if in_data_folder else "the table's folder"
    refusal = DiversityInputError(
        f"{where}: the media path {text!r} is not an image file inside {inside}. Media paths are relative to "
        f"the table's folder and must stay inside {inside}; files outside it are never opened."
    )
    if not text or "\x00" in text:
        raise refusal
    candidate = Path(text.replace("\\", "/"))
    if not candidate.is_absolute():
        candidate = table_dir / candidate
    try:
        resolved = Path(os.path.realpath(candidate, strict=True))
    except (OSError, ValueError, RuntimeError):
        raise refusal from None
    if not is_within(resolved, root) or resolved.suffix.lower() not in IMAGE_EXTENSIONS:
        raise refusal
    if any(part.startswith(".") for part in resolved.relative_to(root).parts):
        raise refusal
    return resolved


def media_columns_for(path: Path, table: Optional[Table], modality: str, *, text_column=None, smiles_column=None,
                      group_column=None, weight_column=None, embeddings=None, max_bytes: int):
    """``(table, columns)`` when ``path`` is a vectors-with-media table that ``modality`` reads, else None.

    ``table``: the table when already read (it is read here otherwise, for a table file and the
    modalities ``images`` and ``text``). Companion ``embeddings=`` or a ``smiles_column`` take the
    ordinary loaders' path.
    """
    if embeddings is not None or smiles_column is not None or modality not in ("images", "text"):
        return None
    if table is None:
        if path.suffix.lower() not in TABLE_EXTENSIONS or not path.is_file():
            return None
        table = read_table(path, max_bytes)
    columns = find_media_columns(table, text_column=text_column, group_column=group_column,
                                 weight_column=weight_column)
    if columns is None or columns.modality != modality:
        return None
    return table, columns


def media_group_column(table: Table, columns: MediaColumns, weight_column: Optional[str] = None) -> Optional[str]:
    """The group column of a vectors-with-media table when none is named.

    :func:`~._tables.detect_group_column`'s rule, the media, vector and weight columns left out.
    """
    return detect_group_column(table, exclude=[c for c in (columns.media, columns.vector, weight_column) if c])


# --------------------------------------------------------------------------------------------
# the loader
# --------------------------------------------------------------------------------------------


def load_vectors_media(
    path: Path,
    table: Table,
    columns: MediaColumns,
    *,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    confine: Optional[Path] = None,
) -> Dataset:
    """Load a vectors-with-media table (see the module docstring).

    Parameters
    ----------
    path : Path
        The table's file.
    table : Table
        The table as read.
    columns : MediaColumns
        Its vector and media columns (:func:`find_media_columns`).
    group_column, weight_column : str, optional
        Each row's group and weight; without a group column :func:`media_group_column` looks for one.
    max_bytes : int
        The most image bytes read (paths) or decoded (bytes), in all.
    progress : callable, optional
        ``progress(done, total, message)`` while reading images.
    confine : Path, optional
        The resolved data folder media paths must stay inside (default: the table's folder).

    Returns
    -------
    Dataset
        ``images`` (thumbnails) or ``text`` items, the vectors as ``features``.

    Raises
    ------
    DiversityInputError
        A media path outside the folder or missing, image bytes that are not PNG/JPEG/WebP,
        ragged or non-numeric vectors, more image bytes than ``max_bytes``, fewer than 2 items.
    """
    df = table.df
    for name, role in ((group_column, "group"), (weight_column, "weight")):
        if name:
            table.column(name, role)
    found = None
    if group_column is None:
        group_column = found = media_group_column(table, columns, weight_column)
    media = df[columns.media].to_numpy()
    vec = df[columns.vector].to_numpy()
    n = len(df)
    skipped, keep, rows, wheres, ids = [], [], [], [], []
    reader = ImageReader(str(path), max_bytes) if columns.modality == "images" else None
    texts = []
    root = _media_root(path, confine)
    table_dir = Path(os.path.realpath(path.parent))
    for i in range(n):
        where = table.where(i)
        v = media[i]
        if columns.kind == "text":
            if _missing(v) or not str(v).strip():
                skipped.append(SkippedItem(where, f"empty text in column {columns.media!r}"))
                continue
        elif columns.kind == "image_bytes":
            if _image_blob(v) is None:
                reason = ("no image bytes (the image's path is never opened)" if isinstance(v, dict)
                          else f"no image in column {columns.media!r}")
                skipped.append(SkippedItem(where, reason))
                continue
        elif _missing(v) or not str(v).strip():
            skipped.append(SkippedItem(where, f"no image path in column {columns.media!r}"))
            continue
        cell = vec[i]
        if not isinstance(cell, (list, tuple, np.ndarray, str)) and _missing(cell):
            raise DiversityInputError(
                f"{where}: the vector column {columns.vector!r} is empty. Remove the row or fill it in."
            )
        rows.append(vector_row(vec[i], where, columns.vector))
        wheres.append(where)
        keep.append(i)
    if len(keep) < 2:
        raise DiversityInputError(
            f"{path}: {len(keep)} rows with media in column {columns.media!r}; diversity needs at least 2 items"
            + (f" ({len(skipped)} rows were skipped, e.g. {skipped[0].where}: {skipped[0].reason})." if skipped
               else ".")
        )
    X = vector_matrix(rows, wheres, columns.vector, str(path))
    for k, i in enumerate(keep):
        v = media[i]
        if columns.kind == "text":
            texts.append(str(v).strip())
            ids.append(table.row_label(i))
            continue
        report(progress, k, len(keep), "reading images")
        if columns.kind == "image_bytes":
            reader.add(_image_blob(v), wheres[k])
            ids.append(table.row_label(i))
        else:
            file = resolve_media_path(str(v), table_dir, root, wheres[k], in_data_folder=confine is not None)
            data = read_regular_bytes(file, max(reader.max_bytes - reader.read, 0), shown=str(v).strip())
            reader.add(data, f"{wheres[k]} ({str(v).strip()})")
            ids.append(str(v).strip())
    keep_idx = np.asarray(keep, dtype=np.intp)
    id_col = table.find_column(ID_COLUMNS)
    if id_col is not None and id_col not in (columns.media, columns.vector) and columns.kind != "image_path":
        ids = [str(df[id_col].iloc[i]) for i in keep]
    groups = None
    if group_column:
        col = df[group_column].to_numpy()
        groups = np.asarray(["" if _missing(col[i]) else str(col[i]).strip() for i in keep], dtype=str)
        empty = np.flatnonzero(groups == "")
        if empty.size:
            raise DiversityInputError(
                f"{path}: the group column {group_column!r} is empty at {wheres[int(empty[0])]}. "
                "Give every row a group, or drop those rows."
            )
    weights = weights_from_column(table, weight_column, keep_idx) if weight_column else None
    if reader is not None:
        report(progress, len(keep), len(keep), "reading images")
        items = reader.thumbnails()
    else:
        items = texts
    cols = list(df.columns)
    notes = [columns.describe(cols)] + list(table.notes)
    if found is not None:
        notes.append(f"groups from {column_phrase(found, cols.index(found))} (detected; group_column= chooses another)")
    return Dataset(name=path.name, modality=columns.modality, items=items, features=X, groups=groups,
                   weights=weights, ids=ids, skipped=tuple(skipped), source=str(path), detected="; ".join(notes))
