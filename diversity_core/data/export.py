"""The items themselves, written out for a user to act on: a selection as a file of items.

Text as lines, molecules as a SMILES file (``.smi``: SMILES, a tab, the id), images as a zip of
PNG files named by selection rank and id. Other modalities (embeddings, tables) have no item
file beyond the CSV of ids.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Optional, Sequence

import numpy as np

from .._optional import require
from ._dataset import Dataset

__all__ = ["item_file_type", "items_file"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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
        image = require("PIL.Image", purpose="writing the selected images")
        ids = ds.ids
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for rank, i in enumerate(idx, start=1):
                pixels = np.asarray(ds.items[i])
                if pixels.ndim == 3 and pixels.shape[2] == 1:
                    pixels = pixels[:, :, 0]
                png = io.BytesIO()
                image.fromarray(np.ascontiguousarray(pixels.astype(np.uint8))).save(png, format="PNG")
                # names from ids are made safe (no folders, no odd characters): rank first keeps them unique
                name = _UNSAFE.sub("_", str(ids[i])).strip("._")[:60] or "item"
                zf.writestr(f"{rank:05d}_{name}.png", png.getvalue())
        content = buf.getvalue()
    else:
        return None
    return (content, *_FILE_TYPES[ds.modality])
