"""Thumbnails gathered one image at a time, for loaders that stream (WebDataset shards, COCO crops).

:class:`ThumbnailStack` applies the thumbnail rule of :mod:`.images` (images all of one size and
at most 64 px a side are kept as they are, otherwise every one becomes 64 x 64; a grayscale
collection keeps one channel, anything else is RGB) without holding a list of decoded images: each
thumbnail is copied into a preallocated block as it arrives, and the blocks are copied into the
one result array at the end, each freed as soon as it is copied. Peak memory is the thumbnails'
own size plus one block, which is what lets 100,000 small images stream in a fraction of a GiB.
"""

from __future__ import annotations

import numpy as np

from .._optional import require
from ._dataset import THUMBNAIL_SIDE
from .images import thumbnail_array

#: Thumbnails per block (pages of a block are only touched, so only resident, as it fills).
BLOCK_ROWS = 4096


class ThumbnailStack:
    """Append decoded PIL images (RGB or L, each at most ``THUMBNAIL_SIDE`` a side); :meth:`array` stacks them."""

    def __init__(self, block_rows: int = BLOCK_ROWS):
        self._block_rows = int(block_rows)
        self._blocks: list = []
        self._fill = 0
        self._shape = None  # (h, w) while every thumbnail has the same native size
        self._gray = True
        self._resized = False
        self.n = 0

    def append(self, img) -> None:
        """Add one image (a PIL image in mode RGB or L, as :func:`~.images.decode_image` returns)."""
        a = np.asarray(img, dtype=np.uint8)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.shape[-1] == 3 and self._gray:
            self._gray = False
            self._blocks = [np.repeat(b, 3, axis=-1) for b in self._blocks]
        if a.shape[-1] == 1 and not self._gray:
            a = np.repeat(a, 3, axis=-1)
        size = a.shape[:2]
        if not self._resized:
            if self._shape is None:
                self._shape = size
            elif size != self._shape:
                self._resize_all()
        if self._resized and size != (THUMBNAIL_SIDE, THUMBNAIL_SIDE):
            a = _resize(a)
        if not self._blocks or self._fill == self._blocks[-1].shape[0]:
            self._blocks.append(np.empty((self._block_rows,) + a.shape, dtype=np.uint8))
            self._fill = 0
        self._blocks[-1][self._fill] = a
        self._fill += 1
        self.n += 1

    def _resize_all(self) -> None:
        """Sizes differ: every thumbnail so far becomes 64 x 64 (as :mod:`.images` does for such a set)."""
        self._resized = True
        side = THUMBNAIL_SIDE
        resized = []
        for k, block in enumerate(self._blocks):
            rows = self._fill if k == len(self._blocks) - 1 else block.shape[0]
            out = np.empty((block.shape[0], side, side, block.shape[-1]), dtype=np.uint8)
            for i in range(rows):
                out[i] = _resize(block[i])
            resized.append(out)
            self._blocks[k] = None  # freed before the next block is resized
        self._blocks = resized

    def array(self) -> np.ndarray:
        """The thumbnails as one uint8 array N x H x W x C; the blocks are released."""
        if not self._blocks:
            return np.empty((0, 1, 1, 1), dtype=np.uint8)
        shape = self._blocks[0].shape[1:]
        out = np.empty((self.n,) + shape, dtype=np.uint8)
        start = 0
        for k in range(len(self._blocks)):
            block = self._blocks[k]
            rows = min(block.shape[0], self.n - start)
            out[start:start + rows] = block[:rows]
            start += rows
            self._blocks[k] = None
        self._blocks, self._fill = [], 0
        return out


def _resize(a: np.ndarray) -> np.ndarray:
    """One H x W x C uint8 thumbnail resized to 64 x 64 (the bilinear resize of :func:`~.images.thumbnail_array`)."""
    Image = require("PIL.Image", purpose="loading images")

    img = Image.fromarray(a[:, :, 0], mode="L") if a.shape[-1] == 1 else Image.fromarray(a, mode="RGB")
    return thumbnail_array(img, THUMBNAIL_SIDE)
