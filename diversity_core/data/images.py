"""Images: a folder or ``.zip`` of PNG/JPEG/WebP files, or an ``.npy`` array N x H x W (x C).

- Sub-folders become groups (the file's parent folder relative to the root; files at the top
  level are the group ``"(top level)"`` when other files sit in sub-folders). A zip whose entries
  all sit in one top-level folder uses that folder as its root.
- Every image is decoded completely, so a truncated or corrupt file raises an error naming it.
  Files that are not images (by extension) and hidden/system files are skipped and reported.
- Only PNG, JPEG and WebP decoders are used, whatever the file is named: a file named ``.png``
  that holds PostScript, a TIFF or anything else is refused, never handed to another decoder
  (Pillow would pass EPS to Ghostscript). The decoded size (width x height x channels, read from
  the header) is checked against the memory budget before the pixels are decoded.
- Only regular files are read (after following links): a FIFO, a device (``/dev/zero``), a
  socket, a broken link or a link loop in a folder is skipped with the reason, and no file is
  read past the size limit (``max_bytes`` counts the bytes actually read, not only the sizes
  ``stat`` reports). Entries of a zip are read by their directory record, so two entries with
  the same name are two items (the second id gets `` (2)``).
- Items are uint8 thumbnails for galleries and the pixel featurizer: images that are all the same
  size and at most 64 px a side are kept as they are; otherwise each is resized (stretched) to
  64 x 64. Grayscale collections keep one channel; anything else becomes RGB (transparent
  areas are composited on white; the alpha channel of an ``.npy`` array is dropped).
- ``.npy`` arrays may be uint8, integers in [0, 255], booleans, or floats in [0, 1] (scaled by
  255) or [0, 255]; 3-D arrays are grayscale.
- Companion embeddings (``embeddings=``, e.g. CLIP/DINOv2/Inception features computed elsewhere)
  align by file name when the companion has an id/filename column (``.npz``: an ``ids`` array),
  otherwise by row order, in which the items are listed (sorted relative paths).
"""

from __future__ import annotations

import errno
import io
import os
import stat
import warnings
from pathlib import Path, PurePosixPath
from typing import Iterator, Optional

import numpy as np

from .._config import check_memory
from .._optional import require
from .._progress import ProgressCallback, report
from ..exceptions import DiversityInputError, MemoryBudgetError
from ._dataset import THUMBNAIL_SIDE, Dataset, SkippedItem
from ._files import DEFAULT_MAX_BYTES, check_size, load_npy, open_zip, safe_member_name
from ._paths import file_kind, is_within, read_regular_bytes
from .embeddings import companion_features

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp")

#: The only Pillow decoders used (never Ghostscript for EPS, never the dozens of other plugins).
PIL_FORMATS = ("PNG", "JPEG", "WEBP")

#: Bytes per pixel and channel of the modes a PNG/JPEG/WebP decodes to (16-bit PNGs, 32-bit ints).
_MODE_BYTES = {"I;16": 2, "I;16B": 2, "I;16L": 2, "I": 4, "F": 4}
TOP_LEVEL_GROUP = "(top level)"
_SYSTEM_NAMES = {".ds_store", "thumbs.db", "desktop.ini"}


def _is_hidden(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return any(p.startswith(".") or p == "__MACOSX" for p in parts) or parts[-1].lower() in _SYSTEM_NAMES


def decode_image(data: bytes, where: str):
    """Decode PNG/JPEG/WebP bytes completely into an RGB or L PIL image; raise naming ``where`` on failure.

    Only the decoders in :data:`PIL_FORMATS` are tried. The decoded size is checked against the
    memory budget from the header, before any pixel is decoded; every exception of a decoder
    (including ``the not-implemented error`` for unsupported variants) becomes a
    :class:`~diversity_core.exceptions.DiversityInputError` whose message quotes nothing from the file.
    """
    Image = require("PIL.Image", purpose="loading images")
    UnidentifiedImageError = require("PIL", purpose="loading images").UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=list(PIL_FORMATS))
            width, height = img.size
            channels = len(img.getbands())
            check_memory(
                2.0 * width * height * channels * _MODE_BYTES.get(img.mode, 1),
                what=f"{where}: decoding this {width} x {height} image",
            )
            img.load()
    except MemoryBudgetError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        reason = "too many pixels" if not isinstance(exc, UnidentifiedImageError) else "not PNG, JPEG or WebP"
        raise DiversityInputError(
            f"{where}: cannot be read as an image ({reason}). Re-export it as PNG/JPEG/WebP or remove it."
        ) from None
    except Exception as exc:  # noqa: BLE001 - decoders raise OSError, SyntaxError, the not-implemented error, ...
        raise DiversityInputError(
            f"{where}: the image is truncated or corrupt ({type(exc).__name__}). Re-export it or remove it."
        ) from None
    try:
        return _to_rgb_or_l(img)
    except Exception as exc:  # noqa: BLE001 - a mode conversion Pillow does not support
        raise DiversityInputError(
            f"{where}: the image's pixel format cannot be converted ({type(exc).__name__}). Re-export it as 8-bit RGB."
        ) from None


def _to_rgb_or_l(img):
    Image = require("PIL.Image", purpose="loading images")

    if img.mode in ("RGB", "L"):
        return img
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(img, dtype=np.float64)
        top = a.max() if a.size and a.max() > 255 else 255.0
        return Image.fromarray(np.clip(a / top * 255.0, 0, 255).astype(np.uint8), mode="L")
    if img.mode == "1":
        return img.convert("L")
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return img.convert("RGB")


def thumbnail_array(img, side: int) -> np.ndarray:
    """Resize a PIL image to ``side`` x ``side`` (antialiased) and return an H x W x C uint8 array."""
    Image = require("PIL.Image", purpose="loading images")

    if img.size != (side, side):
        img = img.resize((side, side), Image.Resampling.BILINEAR, reducing_gap=3.0)
    a = np.asarray(img, dtype=np.uint8)
    return a[:, :, None] if a.ndim == 2 else a


def enlarge_thumbnail(img: np.ndarray, px: int) -> np.ndarray:
    """A thumbnail enlarged by an integer factor to about ``px`` pixels (nearest neighbour keeps pixels sharp).

    A single-channel image comes back 2-D (H x W), ready for PIL or ``st.image``.
    """
    a = np.asarray(img)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    factor = max(1, px // max(a.shape[0], a.shape[1]))
    if factor > 1:
        a = np.repeat(np.repeat(a, factor, axis=0), factor, axis=1)
    return a


def _stack_thumbnails(images: list, where: str) -> np.ndarray:
    """Thumbnails of equal shape: native when all equal and small, else 64 x 64."""
    grayscale = all(im.mode == "L" for im in images)
    if not grayscale:
        images = [im.convert("RGB") if im.mode != "RGB" else im for im in images]
    sizes = {im.size for im in images}
    if len(sizes) == 1 and max(next(iter(sizes))) <= THUMBNAIL_SIDE:
        arrays = [np.asarray(im, dtype=np.uint8) for im in images]
        out = np.stack(arrays)
        return out[..., None] if out.ndim == 3 else out
    return np.stack([thumbnail_array(im, THUMBNAIL_SIDE) for im in images])


# --------------------------------------------------------------------------------------------
# listing entries of a folder or an archive
# --------------------------------------------------------------------------------------------


def _entry_problem(full: Path, confine: Optional[Path]):
    """``(size, None)`` for a regular file to read, ``(0, reason)`` for one to skip."""
    try:
        st = os.stat(full)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return 0, "a symbolic link loop"
        if exc.errno == errno.ENOENT:
            return 0, "a broken symbolic link"
        return 0, f"cannot be examined ({exc.strerror or type(exc).__name__})"
    if not stat.S_ISREG(st.st_mode):
        return 0, f"not a regular file (a {file_kind(st.st_mode)})"
    if confine is not None and not is_within(os.path.realpath(full), confine):
        return 0, "a symbolic link that leads outside the data folder"
    return st.st_size, None


def _list_folder(root: Path, max_bytes: int, confine: Optional[Path] = None):
    entries, skipped, total = [], [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            full = Path(dirpath) / fn
            rel = full.relative_to(root).as_posix()
            if _is_hidden(rel):
                skipped.append(SkippedItem(f"{root.name}/{rel}", "hidden or system file"))
                continue
            if full.suffix.lower() not in IMAGE_EXTENSIONS:
                skipped.append(
                    SkippedItem(f"{root.name}/{rel}", f"not an image file ({full.suffix or 'no extension'})")
                )
                continue
            size, problem = _entry_problem(full, confine)
            if problem is not None:
                skipped.append(SkippedItem(f"{root.name}/{rel}", problem))
                continue
            total += size
            entries.append(rel)
    check_size(root, total, max_bytes, what="folder's images")
    return sorted(entries), skipped


def _list_zip(zf, path: Path):
    """``([(rel, id, info)], skipped)``: image entries by their directory record, with distinct ids."""
    entries, skipped = [], []
    for info in zf.infolist():
        if info.is_dir():
            continue
        rel = safe_member_name(info.filename, path)
        if _is_hidden(rel):
            skipped.append(SkippedItem(f"{path.name}:{info.filename}", "hidden or system file"))
            continue
        if PurePosixPath(rel).suffix.lower() not in IMAGE_EXTENSIONS:
            suffix = PurePosixPath(rel).suffix or "no extension"
            skipped.append(SkippedItem(f"{path.name}:{info.filename}", f"not an image file ({suffix})"))
            continue
        entries.append((rel, info))
    # a stable sort keeps entries that share a name in archive order
    entries.sort(key=lambda e: e[0])
    seen: dict = {}
    out = []
    for rel, info in entries:
        seen[info.filename] = seen.get(info.filename, 0) + 1
        k = seen[info.filename]
        out.append((rel, info.filename if k == 1 else f"{info.filename} ({k})", info))
    return out, skipped


def _read_zip_entry(zf, info, path: Path) -> bytes:
    """The bytes of one zip entry, read by its directory record (not by its name)."""
    try:
        return zf.read(info)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, zlib.error, EOFError, the not-implemented error (method), RuntimeError (encrypted)
        raise DiversityInputError(
            f"{path}: entry {info.filename!r} cannot be read ({type(exc).__name__}); the archive may be truncated, "
            "encrypted or use an unsupported compression method."
        ) from None


def _groups_for(rels: list, strip_prefix: str = "") -> Optional[np.ndarray]:
    parents = []
    for rel in rels:
        r = rel[len(strip_prefix) :] if strip_prefix and rel.startswith(strip_prefix) else rel
        parent = PurePosixPath(r).parent.as_posix()
        parents.append(TOP_LEVEL_GROUP if parent in ("", ".") else parent)
    if all(p == TOP_LEVEL_GROUP for p in parents):
        return None
    return np.asarray(parents, dtype=str)


def _common_top_folder(rels: list) -> str:
    tops = {PurePosixPath(r).parts[0] for r in rels}
    if len(tops) == 1 and all(len(PurePosixPath(r).parts) > 1 for r in rels):
        return next(iter(tops)) + "/"
    return ""


# --------------------------------------------------------------------------------------------
# .npy arrays of images
# --------------------------------------------------------------------------------------------


def array_to_uint8(arr: np.ndarray, where: str) -> np.ndarray:
    """Validate an image array N x H x W (x C) and convert it to uint8 N x H x W x C (C in {1, 3})."""
    if arr.dtype.hasobject or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise DiversityInputError(f"{where}: image arrays must be numeric; got dtype {arr.dtype}.")
    if arr.ndim not in (3, 4):
        raise DiversityInputError(
            f"{where}: expected images as N x H x W or N x H x W x C; got shape {tuple(arr.shape)}."
        )
    if arr.ndim == 4 and arr.shape[-1] not in (1, 3, 4):
        hint = " (channels first? use np.moveaxis(a, 1, -1))" if arr.shape[1] in (1, 3, 4) else ""
        raise DiversityInputError(
            f"{where}: the last axis must hold 1, 3 or 4 channels; got shape {tuple(arr.shape)}{hint}."
        )
    n = arr.shape[0]
    if n == 0:
        raise DiversityInputError(f"{where}: the array holds no images.")
    if n < 2:
        raise DiversityInputError(f"{where}: a single image; diversity needs at least 2 items.")
    if arr.ndim == 3:
        arr = arr[..., None]
    if arr.shape[-1] == 4:
        arr = arr[..., :3]
    if arr.dtype == np.uint8:
        return np.asarray(arr)
    if arr.dtype == bool:
        return np.asarray(arr, dtype=np.uint8) * 255
    a = np.asarray(arr, dtype=np.float64)
    finite = np.isfinite(a).reshape(n, -1).all(axis=1)
    if not finite.all():
        rows = np.flatnonzero(~finite)[:5] + 1
        raise DiversityInputError(
            f"{where}: NaN or infinite pixel values in images (rows {', '.join(map(str, rows))}). Fix them."
        )
    lo, hi = float(a.min()), float(a.max())
    if lo < 0 or hi > 255:
        raise DiversityInputError(
            f"{where}: pixel values must lie in [0, 1] or [0, 255]; got [{lo:.3g}, {hi:.3g}]. Rescale them."
        )
    if np.issubdtype(arr.dtype, np.floating) and hi <= 1.0:
        a = a * 255.0
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def _array_thumbnails(arr: np.ndarray) -> np.ndarray:
    Image = require("PIL.Image", purpose="loading images")

    n, h, w, c = arr.shape
    if max(h, w) <= THUMBNAIL_SIDE:
        return np.ascontiguousarray(arr)
    out = []
    for i in range(n):
        img = Image.fromarray(arr[i, :, :, 0] if c == 1 else arr[i], mode="L" if c == 1 else "RGB")
        out.append(thumbnail_array(img, THUMBNAIL_SIDE))
    return np.stack(out)


# --------------------------------------------------------------------------------------------
# public loader
# --------------------------------------------------------------------------------------------


def load_images(
    path: Path,
    *,
    embeddings=None,
    max_bytes: int,
    progress: Optional[ProgressCallback] = None,
    name: Optional[str] = None,
    confine: Optional[Path] = None,
) -> Dataset:
    """Load a folder, a zip or an ``.npy`` array of images (see the module docstring).

    ``confine``: a resolved folder; members of an image folder whose links lead outside it are
    skipped (``load_dataset(..., data_dir=)`` passes the data folder).
    """
    skipped: list = []
    groups = None
    if path.suffix.lower() == ".npy" and path.is_file():
        arr = array_to_uint8(load_npy(path, max_bytes), str(path))
        items = _array_thumbnails(arr)
        ids = [f"row {i + 1}" for i in range(items.shape[0])]
    else:
        pil_images = []
        if path.is_dir():
            rels, skipped = _list_folder(path, max_bytes, confine)
            total = len(rels)
            budget = max_bytes  # bytes actually read, whatever stat said
            for i, rel in enumerate(rels):
                report(progress, i, total, "reading images")
                data = read_regular_bytes(path / rel, budget, shown=f"{path}/{rel}")
                budget -= len(data)
                pil_images.append(_small(decode_image(data, f"{path}/{rel}")))
            ids = rels
            groups = _groups_for(rels)
        elif path.suffix.lower() == ".zip":
            with open_zip(path, max_bytes) as zf:
                entries, skipped = _list_zip(zf, path)
                total = len(entries)
                for i, (_rel, member, info) in enumerate(entries):
                    report(progress, i, total, "reading images")
                    data = _read_zip_entry(zf, info, path)
                    pil_images.append(_small(decode_image(data, f"{path}:{member}")))
            rels = [rel for rel, _m, _i in entries]
            ids = [m for _r, m, _i in entries]
            groups = _groups_for(rels, _common_top_folder(rels))
        else:
            raise DiversityInputError(
                f"{path}: images must be a folder, a .zip or an .npy array; got {path.suffix or 'no extension'}."
            )
        if not pil_images:
            found = f" ({len(skipped)} other files were skipped)" if skipped else ""
            raise DiversityInputError(
                f"{path}: no PNG/JPEG/WebP images found{found}. Put image files (sub-folders become groups) there."
            )
        if len(pil_images) < 2:
            raise DiversityInputError(f"{path}: a single image ({ids[0]}); diversity needs at least 2 items.")
        items = _stack_thumbnails(pil_images, str(path))
        report(progress, len(pil_images), len(pil_images), "reading images")
    features = None if embeddings is None else companion_features(embeddings, ids, max_bytes, str(path))
    return Dataset(
        name=name or path.name,
        modality="images",
        items=items,
        features=features,
        groups=groups,
        weights=None,
        ids=ids,
        skipped=tuple(skipped),
        source=str(path),
    )


def _small(img):
    """Shrink large decoded images right away so a big folder never sits in memory at full size."""
    if max(img.size) > THUMBNAIL_SIDE:
        Image = require("PIL.Image", purpose="loading images")

        return img.resize((THUMBNAIL_SIDE, THUMBNAIL_SIDE), Image.Resampling.BILINEAR, reducing_gap=3.0)
    return img


def iter_original_images(dataset: Dataset, max_bytes: Optional[int] = None) -> Optional[Iterator]:
    """Full-resolution PIL images of an image dataset, re-read from its source, in dataset order.

    Returns ``None`` when the source is not a folder, zip or ``.npy`` file that still exists
    (e.g. a demo), in which case callers use the thumbnails in ``dataset.items``.
    """
    limit = max_bytes or DEFAULT_MAX_BYTES
    src = Path(dataset.source) if dataset.source and not dataset.source.startswith("demo:") else None
    if src is None or not src.exists():
        return None
    if src.is_dir():
        if not all((src / i).is_file() for i in dataset.ids):
            return None
        return (decode_image(read_regular_bytes(src / i, limit, shown=f"{src}/{i}"), f"{src}/{i}")
                for i in dataset.ids)
    if src.suffix.lower() == ".zip":
        def gen():
            with open_zip(src, limit) as zf:
                entries, _skipped = _list_zip(zf, src)
                by_id = {m: info for _rel, m, info in entries}
                for member in dataset.ids:
                    if member not in by_id:
                        raise DiversityInputError(f"{src}: entry {member!r} is no longer in the archive.")
                    yield decode_image(_read_zip_entry(zf, by_id[member], src), f"{src}:{member}")

        return gen()
    if src.suffix.lower() == ".npy":
        try:
            rows = [int(i.split()[-1]) - 1 for i in dataset.ids]
        except ValueError:
            return None
        Image = require("PIL.Image", purpose="loading images")

        arr = array_to_uint8(load_npy(src, limit), str(src))

        def gen_npy():
            for r in rows:
                a = arr[r]
                yield (
                    Image.fromarray(a[:, :, 0], mode="L")
                    if a.shape[-1] == 1
                    else Image.fromarray(a, mode="RGB")
                )

        return gen_npy()
    return None


def original_source_kind(dataset: Dataset) -> Optional[str]:
    """The kind of file an image dataset was read from: ``"folder"``, ``"zip"`` or ``"npy"``, or None.

    None for a demo, a dataset built in memory, or a source moved or deleted since loading.
    """
    src = Path(dataset.source) if dataset.source and not dataset.source.startswith("demo:") else None
    if dataset.modality != "images" or src is None or not src.exists():
        return None
    if src.is_dir():
        return "folder"
    return {".zip": "zip", ".npy": "npy"}.get(src.suffix.lower())


def original_files(dataset: Dataset, indices, max_bytes: Optional[int] = None) -> Optional[list]:
    """``[(file name, bytes)]`` of the files the images at ``indices`` were read from, byte for byte.

    The name is the file's own (its last path part; a zip's second entry of one name keeps that
    name). Returns None when the source is not a folder or zip that still holds every one of them
    (a demo, an ``.npy`` array, a file moved since loading); callers then write the pixels.
    """
    limit = max_bytes or DEFAULT_MAX_BYTES
    kind = original_source_kind(dataset)
    ids = [str(dataset.ids[int(i)]) for i in indices]
    src = Path(dataset.source)
    out = []
    if kind == "folder":
        if not all((src / i).is_file() for i in ids):
            return None
        for i in ids:
            data = read_regular_bytes(src / i, limit, shown=f"{src}/{i}")
            limit -= len(data)
            out.append((PurePosixPath(i).name, data))
        return out
    if kind == "zip":
        with open_zip(src, limit) as zf:
            entries, _skipped = _list_zip(zf, src)
            by_id = {m: (rel, info) for rel, m, info in entries}
            if not all(i in by_id for i in ids):
                return None
            for i in ids:
                rel, info = by_id[i]
                out.append((PurePosixPath(rel).name, _read_zip_entry(zf, info, src)))
        return out
    return None
