"""Data in: loaders for embeddings, images, text and molecules, and demo datasets.

What lives where
----------------
- :mod:`._dataset`: :class:`Dataset` (what every loader returns) and :class:`SkippedItem`.
- :mod:`._load`: :func:`load_dataset` (the one entry point) and :func:`detect_modality`.
- :mod:`.hf_datasets`: Hugging Face ``datasets`` on disk (``save_to_disk`` folders, Hub Parquet shards)
  read with pyarrow alone: :func:`is_hf_source`, :func:`load_hf_dataset`.
- :mod:`.vectors_media`: a table of vectors beside their images (bytes or file paths) or texts:
  :func:`find_media_columns`, :func:`load_vectors_media`.
- :mod:`.embeddings`: ``.npy`` (memory-mapped when large), ``.npz``, ``.csv``/``.tsv``/``.jsonl``, ``.parquet``.
- :mod:`.images`: folders and ``.zip`` archives of PNG/JPEG/WebP, ``.npy`` image arrays,
  companion embeddings.
- :mod:`.text`: ``.txt`` (a line each) and tables with a text column.
- :mod:`.molecules`: ``.smi``/``.smiles``, tables with a SMILES column, ``.sdf``; RDKit canonical SMILES.
- :mod:`.webdataset`: WebDataset ``.tar`` shards (a brace pattern, a folder, one shard), streamed member by
  member with the size limits of zips; :mod:`.coco`: COCO folders (``annotations/*.json`` and images), one
  item per image or per object crop; :mod:`._thumbnails`: thumbnails gathered into one preallocated array.
- :mod:`.demos`: :data:`DEMOS`, :func:`load_demo`, :func:`list_demos`.
- :mod:`._files` / :mod:`._tables`: size limits, zip safety, encodings, never-unpickling
  ``.npy``/``.npz`` readers, delimiter sniffing, and row bookkeeping for error messages.
- :mod:`._paths`: :func:`resolve_user_path` (the data-folder policy for paths a visitor of a
  served app types) and reading only regular files, within a byte limit.

Every problem with the input raises :class:`~diversity_core.exceptions.DiversityInputError`
naming the file and the row or entry; entries that can be dropped safely (invalid SMILES, blank
lines, non-image files) are skipped and listed in ``Dataset.skipped``.
"""

from __future__ import annotations

from ._dataset import MODALITIES, THUMBNAIL_SIDE, Dataset, GroupRows, SkippedItem, capped_rows
from ._files import DEFAULT_MAX_BYTES
from ._load import DetectedColumns, condition_columns, detect_columns, detect_modality, load_dataset
from ._paths import resolve_user_path
from ._tables import TABLE_EXTENSIONS
from .demos import DEMOS, DemoSpec, list_demos, load_demo
from .hf_datasets import is_hf_source, load_hf_dataset
from .vectors_media import find_media_columns, load_vectors_media

__all__ = [
    "Dataset",
    "SkippedItem",
    "GroupRows",
    "capped_rows",
    "load_dataset",
    "condition_columns",
    "detect_modality",
    "detect_columns",
    "DetectedColumns",
    "resolve_user_path",
    "load_demo",
    "list_demos",
    "DEMOS",
    "DemoSpec",
    "MODALITIES",
    "THUMBNAIL_SIDE",
    "DEFAULT_MAX_BYTES",
    "TABLE_EXTENSIONS",
    "is_hf_source",
    "load_hf_dataset",
    "find_media_columns",
    "load_vectors_media",
]
