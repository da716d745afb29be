"""``load_dataset``: one entry point that picks the loader from the path and the options."""

from __future__ import annotations

import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np

from .._progress import ProgressCallback
from .._validation import check_option
from ..exceptions import DiversityError, DiversityInputError
from ._dataset import MODALITIES, Dataset, SkippedItem
from ._files import DEFAULT_MAX_BYTES, PathLike, _npy_header, check_file, check_max_bytes, check_path
from ._paths import read_head, resolve_user_path, stat_input
from ._tables import (
    ID_COLUMNS,
    TABLE_EXTENSIONS,
    _group_candidates,
    column_phrase,
    delimiter_name,
    detect_group_column,
    is_text_column,
    read_table,
    sniff_delimiter,
)
from .coco import is_coco_folder, load_coco
from .demos import load_demo
from .embeddings import companion_features, load_embeddings
from .hf_datasets import hf_columns, hf_modality, is_hf_source, load_hf_dataset
from .images import IMAGE_EXTENSIONS, load_images
from .molecules import SMI_EXTENSIONS, SMILES_COLUMN_NAMES, load_molecules
from .text import TEXT_COLUMN_NAMES, _pick_text_column, load_text
from .vectors_media import find_media_columns, load_vectors_media, media_columns_for, media_group_column
from .webdataset import detect_shards, is_brace_pattern, is_shard_source, load_webdataset, resolve_pattern

_TEXT_EXTENSIONS = (".txt", ".text")


def _npy_ndim(path: Path, max_bytes: int) -> int:

    check_file(path, max_bytes)
    with open(path, "rb") as fh:
        shape, _fortran, _dtype = _npy_header(fh, str(path))
    return len(shape)


def _header_table(p: Path, max_bytes: int):
    """A ``.txt`` file that is really a tab- or comma-separated table with a SMILES or text header.

    ``(modality, table)`` when the first line names a SMILES column (or a text column) and the
    file splits into the same number of fields on every line; ``(None, None)`` otherwise.
    """
    check_file(p, max_bytes)
    head = read_head(p, 1 << 16).decode("utf-8-sig", errors="replace")
    delimiter = sniff_delimiter(head, None, candidates=("\t", ","))
    if delimiter is None:
        return None, None
    first = next((ln for ln in head.splitlines() if ln.strip()), "")
    names = [c.strip().lower() for c in first.split(delimiter)]
    modality = None
    if any(n in SMILES_COLUMN_NAMES for n in names):
        modality, table = "molecules", read_table(p, max_bytes, delimiter=delimiter)
    elif any(n in TEXT_COLUMN_NAMES for n in names):
        table = read_table(p, max_bytes, delimiter=delimiter)
        col = table.find_column(TEXT_COLUMN_NAMES)
        if col is not None and is_text_column(table.df[col]):
            modality = "text"
    if modality is None:
        return None, None
    table.notes = [f"{delimiter_name(delimiter)}-separated (sniffed from the content)"]
    return modality, table


def detect_modality(
    path: PathLike,
    *,
    text_column: Optional[str] = None,
    smiles_column: Optional[str] = None,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    data_dir: Optional[PathLike] = None,
) -> str:
    """The modality ``load_dataset(..., modality="auto")`` would choose for ``path``.

    Rules, in order: WebDataset shards (a brace pattern ``name-{000000..000009}.tar``, a ``.tar``
    file, a folder of them) hold images, or text when their first sample has a ``.txt`` member and
    no image; a COCO folder (``annotations/*.json``), another folder or a ``.zip`` holds images;
    ``.npy`` with 3 or 4 axes holds images, with 2 axes embeddings; ``.npz`` embeddings; ``.smi``/``.smiles``/``.sdf`` molecules;
    ``.txt`` text (one item per line), unless its first line is a tab- or comma-separated header
    naming a SMILES column (molecules) or a text column (text); a table with ``smiles_column``
    (or a column named ``smiles``) molecules, with ``text_column`` (or a column named ``text``,
    ``caption``, ... that holds text, not numbers) text, with only numeric or list columns
    (besides group/weight/id) embeddings, and with one string column text. The delimiter of a
    delimited table is sniffed from its content, whatever its extension. A Hugging Face dataset on
    disk holds what its columns hold (an image column images, then SMILES, text, vectors), and a
    table with a vector column beside image bytes, image paths or text holds images or text.
    ``data_dir`` as in :func:`load_dataset`.
    """
    max_bytes = check_max_bytes(max_bytes)
    p = _resolve(path, data_dir)
    modality, _table, _why = _detect(
        p,
        text_column=text_column,
        smiles_column=smiles_column,
        group_column=group_column,
        weight_column=weight_column,
        max_bytes=max_bytes,
    )
    return modality


def _resolve(path: PathLike, data_dir: Optional[PathLike]) -> Path:
    """The path to open: inside ``data_dir`` when one is given, else any existing path."""
    if is_brace_pattern(path):  # WebDataset shards: the pattern's folder resolved, the shards when read
        return resolve_pattern(path, data_dir=data_dir)
    if data_dir is not None:
        return resolve_user_path(path, data_dir=data_dir)
    return check_path(path)


def _detect(p: Path, *, text_column, smiles_column, group_column, weight_column, max_bytes):
    """``(modality, table, why)``; the table is returned when it had to be read, so it is read once."""
    if is_shard_source(p):
        modality, why = detect_shards(p, max_bytes=max_bytes)
        return modality, None, why
    st = stat_input(p)
    hf = hf_modality(p, group_column=group_column, weight_column=weight_column, text_column=text_column,
                     smiles_column=smiles_column)
    if hf is not None:  # a Hugging Face dataset folder or Parquet (hf_datasets)
        return hf[0], None, hf[1]
    if stat.S_ISDIR(st.st_mode):
        if is_coco_folder(p):
            return "images", None, "a COCO folder (annotations/*.json and images): images"
        return "images", None, "a folder: images (sub-folders are the groups)"
    suffix = p.suffix.lower()
    if suffix == ".zip":
        return "images", None, "a .zip archive: images"
    if suffix in IMAGE_EXTENSIONS:
        raise DiversityInputError(
            f"{p}: a single image; diversity needs at least 2 items. Load the folder (or a .zip) that holds it."
        )
    if suffix == ".npy":
        ndim = _npy_ndim(p, max_bytes)
        modality = "images" if ndim in (3, 4) else "embeddings"
        return modality, None, f"an .npy array with {ndim} axes: {modality}"
    if suffix == ".npz":
        return "embeddings", None, "an .npz archive: embeddings"
    if suffix in SMI_EXTENSIONS or suffix == ".sdf":
        return "molecules", None, f"a {suffix} file: molecules"
    if suffix in _TEXT_EXTENSIONS:
        modality, table = _header_table(p, max_bytes)
        if modality == "molecules":
            return modality, table, f"a {suffix} file whose header names a SMILES column: molecules"
        if modality == "text":
            return modality, table, f"a {suffix} file whose header names a text column: text"
        return "text", None, f"a {suffix} file: text, one item per line"
    if smiles_column:
        return "molecules", None, f"smiles_column={smiles_column!r} given: molecules"
    if text_column:
        return "text", None, f"text_column={text_column!r} given: text"
    if suffix in TABLE_EXTENSIONS:
        table = read_table(p, max_bytes)
        columns = list(table.df.columns)
        media = find_media_columns(table, group_column=group_column, weight_column=weight_column)
        if media is not None:  # vectors with their images or texts (vectors_media)
            return media.modality, table, media.describe(columns)
        found = table.find_column(SMILES_COLUMN_NAMES)
        if found is not None and is_text_column(table.df[found]):
            return "molecules", table, f"{column_phrase(found, columns.index(found))} holds SMILES: molecules"
        found = table.find_column(TEXT_COLUMN_NAMES)
        if found is not None and is_text_column(table.df[found]):
            return "text", table, f"{column_phrase(found, columns.index(found))} holds text: text"

        id_col = table.find_column(ID_COLUMNS)
        rest = [c for c in table.df.columns if c not in (group_column, weight_column, id_col)]
        strings = [c for c in rest if is_text_column(table.df[c])]
        if len(strings) == 1 and len(rest) == 1:
            return "text", table, "a table with one string column: text"
        return "embeddings", table, f"a table with {len(rest)} numeric or vector columns: embeddings"
    raise _unknown(p, suffix)


@dataclass(frozen=True)
class DetectedColumns:
    """A table's columns and the ones :func:`load_dataset` takes when none is named.

    ``columns`` is empty for a source without columns (an array, images, plain text lines).
    Each role is a column name or None (the loader never guesses a weight column).
    """

    columns: tuple = ()
    group_column: Optional[str] = None
    weight_column: Optional[str] = None
    text_column: Optional[str] = None
    smiles_column: Optional[str] = None

    def as_options(self) -> dict:
        """The detected roles as :func:`load_dataset` keyword arguments (the unset ones left out)."""
        roles = ("group_column", "weight_column", "text_column", "smiles_column")
        return {r: getattr(self, r) for r in roles if getattr(self, r) is not None}


def detect_columns(path: PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES,
                   data_dir: Optional[PathLike] = None) -> DetectedColumns:
    """The columns of a table and the roles :func:`load_dataset` gives them when none is named.

    The same detection the loader runs (its modality sniffing and group-column rule), for a form
    that offers the file's columns with the detected ones chosen (issue 41, item 7). Reads the
    table once; a source without columns gives an empty :class:`DetectedColumns`.

    Parameters
    ----------
    path : str or Path
        A file or folder, as for :func:`load_dataset`.
    max_bytes : int
        Refuse a file larger than this (as the loader does).
    data_dir : str or Path, optional
        Confine ``path`` to this folder (as the loader does).

    Returns
    -------
    DetectedColumns

    Examples
    --------
    >>> detect_columns("scores.csv").group_column  # doctest: +SKIP
    'model'
    """
    max_bytes = check_max_bytes(max_bytes)
    return _detect_columns(_resolve(path, data_dir), max_bytes)


def _detect_columns(p: Path, max_bytes: int) -> DetectedColumns:
    hf = hf_columns(p)
    if hf is not None:  # a Hugging Face dataset: its columns and "split"
        return DetectedColumns(hf[0], group_column=hf[1])
    modality, table, _why = _detect(p, text_column=None, smiles_column=None, group_column=None,
                                    weight_column=None, max_bytes=max_bytes)
    media = None if table is None or modality != "images" else find_media_columns(table)
    if media is not None:  # vectors with images: the table's columns, the media and vectors not a group
        return DetectedColumns(tuple(str(c) for c in table.df.columns), group_column=media_group_column(table, media))
    if table is None or modality == "images":
        return DetectedColumns()
    smiles = table.find_column(SMILES_COLUMN_NAMES) if modality == "molecules" else None
    text = None
    if modality == "text":
        try:
            text = _pick_text_column(table, None, None, None)
        except DiversityInputError:
            text = None
    group = _find_group_column(table, modality, None, text, smiles)
    return DetectedColumns(tuple(str(c) for c in table.df.columns), group_column=group, text_column=text,
                           smiles_column=smiles)


def _unknown(p: Path, suffix: str) -> DiversityInputError:
    return DiversityInputError(
        f"{p}: cannot tell what kind of data a {suffix or 'file without extension'} file holds. "
        "Supported: .npy .npz .csv .tsv .parquet .jsonl (embeddings/text/molecules), a folder or .zip of "
        "images, WebDataset .tar shards or a COCO folder (images), .txt (text), .smi .smiles .sdf (molecules); "
        "or pass modality= explicitly."
    )


def load_dataset(
    path: PathLike,
    *,
    modality: str = "auto",
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    text_column: Optional[str] = None,
    smiles_column: Optional[str] = None,
    embeddings: Optional[PathLike] = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Optional[ProgressCallback] = None,
    data_dir: Optional[PathLike] = None,
    coco_crops: bool = False,
) -> Dataset:
    """Load a dataset from a file or folder, with one clear error for any problem.

    Parameters
    ----------
    path : str or path-like
        A file, a folder of images or a ``.zip`` of images. ``"demo:<name>"`` loads a demo
        (see :func:`load_demo`). A Hugging Face dataset on disk (a ``save_to_disk`` folder, Hub
        Parquet shards: :mod:`~diversity_core.data.hf_datasets`) is read with pyarrow alone, its
        label column's class names (or ``group_column="split"``: its splits) the groups; a table
        with a vector column beside image bytes, image paths or text loads those items with the
        vectors as ``features`` (:mod:`~diversity_core.data.vectors_media`).
    modality : {"auto", "embeddings", "images", "text", "molecules"}, default "auto"
        What the file holds; ``"auto"`` follows :func:`detect_modality`, which looks at the
        content (a sniffed delimiter, numeric or text columns), not only the extension. What
        was detected is in ``Dataset.detected``; pass ``modality=`` to force a reading.
    group_column, weight_column : str, optional
        Column (table), array (``.npz``) or SD property (``.sdf``) with each item's group (e.g.
        ``model``) and non-negative weight. Sub-folders are the groups of an image folder.
    text_column, smiles_column : str, optional
        The column holding the text / SMILES of a table (found by name when omitted).
    embeddings : str or path-like, optional
        Companion embeddings for images (or text/molecules) computed elsewhere, aligned by file
        name (id/filename column) or by row order. Stored as ``Dataset.features``.
    max_bytes : int, default 1 GiB
        Size limit of the input (a folder: its images' total; a zip: its uncompressed total).
    progress : callable, optional
        ``progress(done, total, message)`` while reading images or parsing molecules.
    data_dir : str or path-like, optional
        Confine reading to this folder: ``path`` and ``embeddings`` are resolved with
        :func:`~diversity_core.data.resolve_user_path` (relative to ``data_dir``, symbolic links
        followed, nothing outside it), and members of an image folder whose links lead outside
        it are skipped. ``None`` (the default) reads any path, as a local user may; a served
        app calls :func:`~diversity_core.data.resolve_user_path` first, which refuses every
        path when no data folder is configured.
    coco_crops : bool, default False
        A COCO folder (``annotations/*.json`` and images, :mod:`~diversity_core.data.coco`) is read
        as one item per object crop instead of one per image. WebDataset shards (a brace pattern
        such as ``shards/name-{000000..000009}.tar``, a folder of ``.tar`` shards or one shard,
        :mod:`~diversity_core.data.webdataset`) are detected and streamed shard by shard.

    Returns
    -------
    Dataset

    Raises
    ------
    DiversityInputError
        For every problem with the input: missing or empty file, fewer than 2 items, ragged rows,
        NaN/inf, non-numeric feature columns, a missing named column, mismatched lengths,
        negative or all-zero weights, unreadable images, text that is not UTF-8, unsafe zip
        entries, a file over ``max_bytes``, pickled ``.npy``/``.npz``, a FIFO or device instead
        of a regular file, a symbolic link loop, molecules over the size limits of
        :mod:`~diversity_core.data.molecules`, a SMILES column or ``.smi`` file whose non-empty
        entries are mostly not SMILES (the message gives the counts and what they look like). The message names the file and the row, column
        or entry (by position: it never quotes the file's content), and says what to do.
    MemoryBudgetError
        When the decoded values (rows x columns, or an image's pixels) would not fit the
        memory budget (:func:`diversity_core.set_config`); checked before they are read.

    Notes
    -----
    Invalid SMILES, blank text lines, non-image files and all-black images (their pixel features
    are zero, undefined under cosine) in an image folder are not errors: they are skipped and
    listed in ``Dataset.skipped``.

    Examples
    --------
    >>> ds = load_dataset("demo:digits")
    >>> ds.modality, ds.group_names()[0]
    ('images', 'all ten classes')
    """
    max_bytes = check_max_bytes(max_bytes)
    check_option(modality, ("auto",) + MODALITIES, "modality")
    if isinstance(path, str) and path.startswith("demo:"):
        return load_demo(path[len("demo:") :])
    p = _resolve(path, data_dir)
    confine = None
    if data_dir is not None:
        confine = resolve_user_path(".", data_dir=data_dir)
        if embeddings is not None:
            embeddings = resolve_user_path(embeddings, data_dir=data_dir)
    if is_hf_source(p):  # a Hugging Face dataset folder or Parquet: its own reader (hf_datasets)
        ds = load_hf_dataset(p, modality=modality, group_column=group_column, weight_column=weight_column,
                             text_column=text_column, smiles_column=smiles_column, embeddings=embeddings,
                             max_bytes=max_bytes, progress=progress, confine=confine)
        return skip_black_images(ds) if ds.modality == "images" and ds.features is None else ds
    table = None
    if modality == "auto":
        modality, table, why = _detect(
            p,
            text_column=text_column,
            smiles_column=smiles_column,
            group_column=group_column,
            weight_column=weight_column,
            max_bytes=max_bytes,
        )
    else:
        why = f"{modality} (modality={modality!r} given)"
        suffix = p.suffix.lower()
        reads_table = suffix in TABLE_EXTENSIONS or (modality == "molecules" and suffix in _TEXT_EXTENSIONS)
        if modality != "images" and reads_table and p.is_file():
            table = read_table(p, max_bytes)  # read here so its notes (a sniffed delimiter) are reported
    media = media_columns_for(p, table, modality, text_column=text_column, smiles_column=smiles_column,
                              group_column=group_column, weight_column=weight_column, embeddings=embeddings,
                              max_bytes=max_bytes)
    if media is not None:  # vectors with their images or texts: the vectors are the features (vectors_media)
        return load_vectors_media(p, *media, group_column=group_column, weight_column=weight_column,
                                  max_bytes=max_bytes, progress=progress, confine=confine)
    found = None
    if group_column is None and table is not None and modality != "images":
        found = _find_group_column(table, modality, weight_column, text_column, smiles_column)
    if is_shard_source(p) or is_coco_folder(p):
        ds = _load_shards_or_coco(p, modality, (group_column, weight_column, text_column, smiles_column), embeddings,
                                  coco_crops, max_bytes, progress, confine)
        why += ds.detected
    else:
        if coco_crops:
            raise DiversityInputError(f"{p}: coco_crops applies to COCO folders (annotations/*.json and images) only.")
        ds = _load(p, modality, table, found or group_column, weight_column, text_column, smiles_column, embeddings,
                   max_bytes, progress, confine)
    notes = list(table.notes) if table is not None else []
    if found is not None:
        columns = list(table.df.columns)
        notes.append(f"groups from {column_phrase(found, columns.index(found))} (detected: a string column "
                     f"with {len(ds.group_names())} distinct values; group_column= chooses another)")
    detected = why + "".join(f"; {n}" for n in notes)
    return replace(ds, detected=detected)


#: Why an all-black image is skipped (issue 26, item 13: one such image failed its whole folder).
BLACK_IMAGE_REASON = ("an all-black image (every pixel 0): its pixel features are all zero, a vector without a "
                      "direction, on which the cosine kernel is undefined")


def condition_columns(
    path: PathLike,
    *,
    modality: str,
    text_column: Optional[str] = None,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    smiles_column: Optional[str] = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> list:
    r"""Columns of a table file that could hold each row's prompt or condition.

    String columns with a value in every row and no number among them (the candidates of the
    group column), leaving out the id column and the columns the loader uses: those named, and
    for text the text column it finds by its name.

    Parameters
    ----------
    path : path-like
        A table file (CSV, TSV, Parquet, JSON lines).
    modality : str
        What the table holds (as :func:`load_dataset` read it).
    text_column, group_column, weight_column, smiles_column : str, optional
        The loader's column options.
    max_bytes : int
        The largest file read.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = f.write_text("prompt,text\ncat,a small cat\ndog,a big dog\n")
    >>> condition_columns(f, modality="text")
    ['prompt']
    """
    check_option(modality, MODALITIES, "modality")
    max_bytes = check_max_bytes(max_bytes)
    p = check_path(path)
    check_file(p, max_bytes)
    table = read_table(p, max_bytes)
    used = [c for c in (text_column, group_column, weight_column, smiles_column) if c]
    if modality == "text":
        try:
            used.append(_pick_text_column(table, text_column, group_column, weight_column))
        except DiversityError:
            pass  # no text column found: every string column is a candidate
    return [str(c) for c in _group_candidates(table, used)]


def skip_black_images(ds: Dataset) -> Dataset:
    """``ds`` without its all-black images, each listed in ``Dataset.skipped`` with the reason.

    An image whose pixels are all 0 has all-zero pixel features, and the cosine similarity
    of a zero vector is undefined: one such image made every score of its folder fail. It
    carries no content to measure, so it is skipped like a non-image file, and the rest of
    the folder loads. Fewer than 2 images left is an error naming the counts.

    Parameters
    ----------
    ds : Dataset
        An image dataset (``items`` of shape (N, H, W) or (N, H, W, C)).

    Returns
    -------
    Dataset
        ``ds`` itself when no image is all black.
    """
    items = np.asarray(ds.items)
    black = ~items.reshape(items.shape[0], -1).any(axis=1)
    if not black.any():
        return ds
    keep = np.flatnonzero(~black)
    if keep.size < 2:
        raise DiversityInputError(
            f"{ds.source}: {int(black.sum())} of the {ds.n} images are all black (every pixel 0), which leaves "
            f"{keep.size}; diversity needs at least 2 images with content."
        )
    source = Path(ds.source)
    sep = {".zip": ":", ".npy": " "}.get(source.suffix.lower(), "/")  # an archive's entry, an array's row, a file
    skipped = tuple(SkippedItem(f"{source.name}{sep}{ds.ids[i]}", BLACK_IMAGE_REASON) for i in np.flatnonzero(black))
    return replace(ds.subset(keep), skipped=tuple(ds.skipped) + skipped)


def _find_group_column(table, modality, weight_column, text_column, smiles_column) -> Optional[str]:
    """The table's group column when none is named (:func:`~._tables.detect_group_column`).

    The column of the items (text, SMILES) is never taken: named, it is excluded; found by its
    name, too; otherwise another string column must remain for it.
    """
    exclude = [c for c in (weight_column, text_column, smiles_column) if c]
    keep_one = False
    if modality in ("text", "molecules") and not (text_column or smiles_column):
        items = table.find_column(TEXT_COLUMN_NAMES if modality == "text" else SMILES_COLUMN_NAMES)
        if items is None:
            keep_one = True
        else:
            exclude.append(items)
    return detect_group_column(table, exclude=exclude, keep_one=keep_one)


def _refuse_text_columns(table, group_column, weight_column) -> None:
    """Name a non-numeric feature column and its first bad row by position, quoting no cell.

    :func:`~diversity_core.data.embeddings.read_table_features` makes the same check but its
    message shows the cell (and the header, the first line of any file read as a table).
    """
    import pandas as pd


    id_col = table.find_column(ID_COLUMNS)
    for position, name in enumerate(table.df.columns):
        col = table.df[name]
        if name in (group_column, weight_column, id_col) or pd.api.types.is_numeric_dtype(col) or col.dtype == bool:
            continue
        values = col.dropna()
        if len(values) and isinstance(values.iloc[0], (list, tuple, np.ndarray)):
            continue
        bad = np.flatnonzero(pd.to_numeric(col, errors="coerce").isna().to_numpy() & col.notna().to_numpy())
        if bad.size:
            raise DiversityInputError(
                f"{table.path}: {column_phrase(name, position)} is not numeric (at {table.where(int(bad[0]))}). "
                "Drop it, or name it with group_column= if it holds groups."
            )


def _load_shards_or_coco(p, modality, column_options, embeddings, coco_crops, max_bytes, progress,
                         confine) -> Dataset:
    """WebDataset shards (:mod:`.webdataset`) or a COCO folder (:mod:`.coco`): their groups come from the data."""
    names = ("group_column", "weight_column", "text_column", "smiles_column")
    for opt, value in zip(names, column_options):
        if value is not None:
            raise DiversityInputError(f"{opt} does not apply to WebDataset shards or COCO folders (their classes or "
                                      "categories are the groups); leave it out.")
    if is_shard_source(p):
        if coco_crops:
            raise DiversityInputError(f"{p}: coco_crops applies to COCO folders only, not to WebDataset shards.")
        ds = load_webdataset(p, modality=modality, max_bytes=max_bytes, progress=progress, data_dir=confine)
    else:
        if modality not in ("auto", "images"):
            raise DiversityInputError(f"{p}: a COCO folder holds images; modality={modality!r} does not apply.")
        ds = load_coco(p, crops=coco_crops, max_bytes=max_bytes, progress=progress, confine=confine)
    if embeddings is not None:
        ds = replace(ds, features=companion_features(embeddings, ds.ids, max_bytes, str(p)), content_hash="")
    return skip_black_images(ds) if ds.modality == "images" else ds


def _load(p, modality, table, group_column, weight_column, text_column, smiles_column, embeddings,
          max_bytes, progress, confine) -> Dataset:
    """Call the loader of ``modality``."""
    if modality == "embeddings":
        for opt, value in (
            ("text_column", text_column),
            ("smiles_column", smiles_column),
            ("embeddings", embeddings),
        ):
            if value is not None:
                raise DiversityInputError(f"{opt} does not apply to embeddings files; leave it out.")
        if table is not None:
            _refuse_text_columns(table, group_column, weight_column)
        return load_embeddings(
            p, group_column=group_column, weight_column=weight_column, max_bytes=max_bytes, table=table
        )
    if modality == "images":
        for opt, value in (
            ("text_column", text_column),
            ("smiles_column", smiles_column),
            ("group_column", group_column),
            ("weight_column", weight_column),
        ):
            if value is not None:
                raise DiversityInputError(
                    f"{opt} does not apply to images (sub-folders are the groups); leave it out."
                )
        ds = load_images(p, embeddings=embeddings, max_bytes=max_bytes, progress=progress, confine=confine)
        return skip_black_images(ds)
    if modality == "text":
        if smiles_column is not None:
            raise DiversityInputError("smiles_column does not apply to text; use text_column.")
        return load_text(
            p,
            text_column=text_column,
            group_column=group_column,
            weight_column=weight_column,
            embeddings=embeddings,
            max_bytes=max_bytes,
            table=table,
        )
    if text_column is not None:
        raise DiversityInputError("text_column does not apply to molecules; use smiles_column.")
    return load_molecules(
        p,
        smiles_column=smiles_column,
        group_column=group_column,
        weight_column=weight_column,
        embeddings=embeddings,
        max_bytes=max_bytes,
        progress=progress,
        table=table,
    )
