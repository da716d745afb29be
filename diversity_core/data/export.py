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

__all__ = ["items_file"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


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
        return "".join(" ".join(str(ds.items[i]).split()) + "\n" for i in idx).encode("utf-8"), ".txt", "text/plain"
    if ds.modality == "molecules":
        ids = ds.ids
        lines = ("{}\t{}\n".format(str(ds.items[i]).strip(), " ".join(str(ids[i]).split())) for i in idx)
        return "".join(lines).encode("utf-8"), ".smi", "chemical/x-daylight-smiles"
    if ds.modality == "images":
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
        return buf.getvalue(), ".zip", "application/zip"
    return None
