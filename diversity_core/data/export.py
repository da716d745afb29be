"""The items themselves, written out for a user to act on: a selection as a file of items.

Text as lines, molecules as a SMILES file (``.smi``: SMILES, a tab, the id), images as a zip of
the original files, byte for byte under their own names (a name met twice gets `` (2)`` before
its extension); images without original files (a demo, an ``.npy`` array) become PNG files of
their pixels named by id. Other modalities (embeddings, tables) have no item file beyond the CSV
of ids; :func:`items_file_note` says what each file holds.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Optional, Sequence

import numpy as np

from .._optional import require
from ._dataset import Dataset

__all__ = ["item_file_type", "items_file", "items_file_note"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Characters never kept in a zip member's name (folders, drive letters, control characters).
_NOT_IN_NAMES = re.compile(r"[\x00-\x1f\x7f/\\:]+")
#: An image file's extension at the end of an id, also before a zip's `` (2)`` of a second entry of one name.
_IMAGE_SUFFIX = re.compile(r"\.(?:png|jpe?g|webp)((?: \(\d+\))?)$", re.IGNORECASE)


#: ``(extension, mime type)`` of the item file of each modality that has one.
_FILE_TYPES = {"text": (".txt", "text/plain"), "molecules": (".smi", "chemical/x-daylight-smiles"),
               "images": (".zip", "application/zip")}


def item_file_type(modality: str) -> Optional[tuple[str, str]]:
    """``(extension, mime type)`` of :func:`items_file` for a modality, or None (no item file).

    Known without writing anything, so a page can offer the file and write it only when asked.

    Examples
    --------
    >>> item_file_type("molecules"), item_file_type("embeddings")
    (('.smi', 'chemical/x-daylight-smiles'), None)
    """
    return _FILE_TYPES.get(modality)


def items_file(ds: Dataset, indices: Sequence[int]) -> Optional[tuple[bytes, str, str]]:
    """The items at ``indices`` (in that order) as ``(content, extension, mime type)``, or None.

    Parameters
    ----------
    ds : Dataset
    indices : sequence of int
        Row positions in ``ds``, in the order to write (e.g. selection order).

    Returns
    -------
    tuple or None
        ``(bytes, ".txt" | ".smi" | ".zip", mime)``; None for modalities without item files.

    Examples
    --------
    >>> from diversity_core.data import Dataset
    >>> ds = Dataset(name="t", modality="text", items=["a b", "c\\nd"], features=None, groups=None,
    ...              weights=None, ids=["line 1", "line 2"])
    >>> items_file(ds, [1, 0])
    (b'c d\\na b\\n', '.txt', 'text/plain')
    """
    idx = [int(i) for i in indices]
    if ds.modality == "text":
        # line breaks inside an item become spaces: one item per line
        content = "".join(" ".join(str(ds.items[i]).split()) + "\n" for i in idx).encode("utf-8")
    elif ds.modality == "molecules":
        ids = ds.ids
        lines = ("{}\t{}\n".format(str(ds.items[i]).strip(), " ".join(str(ids[i]).split())) for i in idx)
        content = "".join(lines).encode("utf-8")
    elif ds.modality == "images":
        content = _images_zip(ds, idx)
    else:
        return None
    return (content, *_FILE_TYPES[ds.modality])


def items_file_note(ds: Dataset) -> str:
    """What :func:`items_file` writes for this dataset, in words (shown beside its download).

    Examples
    --------
    >>> from diversity_core.data import Dataset
    >>> ds = Dataset(name="t", modality="embeddings", items=None, features=np.eye(3), groups=None,
    ...              weights=None, ids=["a", "b", "c"])
    >>> items_file_note(ds)
    'Embeddings have no item file: the CSV lists the selected ids (rows of the input).'
    """
    from .images import original_source_kind

    if ds.modality == "text":
        return "One text per line (line breaks inside a text become spaces)."
    if ds.modality == "molecules":
        return "One molecule per line: its SMILES, a tab, its id."
    if ds.modality == "images":
        kind = original_source_kind(ds)
        if kind in ("folder", "zip"):
            return ("A zip of the original image files, unchanged, under their own names "
                    "(a name met twice gets ' (2)'); the CSV gives each one's rank.")
        if kind == "npy":
            return "A zip of PNG files of the array's rows at full resolution, named by row; the CSV gives the ranks."
        return ("A zip of PNG files of the thumbnails shown (the original files are not available: "
                f"{'a demo' if str(ds.source).startswith('demo:') else 'the source is gone'}), named by id.")
    return f"{ds.modality.capitalize()} have no item file: the CSV lists the selected ids (rows of the input)."


def _unique(name: str, seen: dict) -> str:
    """``name``, or ``stem (k).ext`` for its k-th occurrence (counted case-insensitively)."""
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, dot + ext) if dot and stem else (name, "")
    k = 1
    candidate = name
    while candidate.lower() in seen:
        k += 1
        candidate = f"{stem} ({k}){ext}"
    seen[candidate.lower()] = True
    return candidate


def _images_zip(ds: Dataset, idx: list) -> bytes:
    """The zip of :func:`items_file` for images: the original files, or PNG files of the pixels."""
    from .images import iter_original_images, original_files, original_source_kind

    buf = io.BytesIO()
    seen: dict = {}
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        originals = original_files(ds, idx)
        for name, data in originals or ():
            zf.writestr(_unique(_NOT_IN_NAMES.sub("_", name).strip(" .") or "item", seen), data)
        full = iter_original_images(ds.subset(idx)) if originals is None and original_source_kind(ds) == "npy" else None
        pictures = full if full is not None else (np.asarray(ds.items[i]) for i in idx)
        for i, picture in zip(idx, pictures if originals is None else ()):
            image = require("PIL.Image", purpose="writing the selected images")
            pixels = np.asarray(picture)
            if pixels.ndim == 3 and pixels.shape[2] == 1:
                pixels = pixels[:, :, 0]
            png = io.BytesIO()
            image.fromarray(np.ascontiguousarray(pixels.astype(np.uint8))).save(png, format="PNG")
            # names from ids are made safe (no folders, no odd characters), an image extension is not doubled
            stem = _IMAGE_SUFFIX.sub(r"\1", str(ds.ids[i]))
            name = _UNSAFE.sub("_", stem).strip("._")[:60] or "item"
            zf.writestr(_unique(f"{name}.png", seen), png.getvalue())
    return buf.getvalue()
