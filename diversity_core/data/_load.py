"""``load_dataset``: one entry point that picks the loader from the path and the options."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from .._progress import ProgressCallback
from .._validation import check_option
from ..exceptions import DiversityInputError
from ._dataset import MODALITIES, Dataset
from ._files import DEFAULT_MAX_BYTES, PathLike, check_file, check_max_bytes, check_path
from ._tables import TABLE_EXTENSIONS, read_table
from .embeddings import load_embeddings
from .images import IMAGE_EXTENSIONS, load_images
from .molecules import SMI_EXTENSIONS, SMILES_COLUMN_NAMES, load_molecules
from .text import TEXT_COLUMN_NAMES, load_text

_TEXT_EXTENSIONS = (".txt", ".text")


def _npy_ndim(path: Path, max_bytes: int) -> int:
    from ._files import _npy_header

    check_file(path, max_bytes)
    with open(path, "rb") as fh:
        shape, _fortran, _dtype = _npy_header(fh, str(path))
    return len(shape)


def detect_modality(
    path: PathLike,
    *,
    text_column: Optional[str] = None,
    smiles_column: Optional[str] = None,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """The modality ``load_dataset(..., modality="auto")`` would choose for ``path``.

    Rules, in order: a folder or ``.zip`` holds images; ``.npy`` with 3 or 4 axes holds images,
    with 2 axes embeddings; ``.npz`` embeddings; ``.smi``/``.smiles``/``.sdf`` molecules;
    ``.txt`` text; a table with ``smiles_column`` (or a column named ``smiles``) molecules, with
    ``text_column`` (or a column named ``text``, ``caption``, ...) text, with only numeric or list
    columns (besides group/weight/id) embeddings, and with one string column text.
    """
    modality, _table = _detect(
        check_path(path),
        text_column=text_column,
        smiles_column=smiles_column,
        group_column=group_column,
        weight_column=weight_column,
        max_bytes=check_max_bytes(max_bytes),
    )
    return modality


def _detect(p: Path, *, text_column, smiles_column, group_column, weight_column, max_bytes):
    """``(modality, table)``; the table is returned when it had to be read, so it is read once."""
    if p.is_dir():
        return "images", None
    suffix = p.suffix.lower()
    if suffix == ".zip":
        return "images", None
    if suffix in IMAGE_EXTENSIONS:
        raise DiversityInputError(
            f"{p}: a single image; diversity needs at least 2 items. Load the folder (or a .zip) that holds it."
        )
    if suffix == ".npy":
        return "images" if _npy_ndim(p, max_bytes) in (3, 4) else "embeddings", None
    if suffix == ".npz":
        return "embeddings", None
    if suffix in SMI_EXTENSIONS or suffix == ".sdf":
        return "molecules", None
    if suffix in _TEXT_EXTENSIONS:
        return "text", None
    if smiles_column:
        return "molecules", None
    if text_column:
        return "text", None
    if suffix in TABLE_EXTENSIONS:
        import pandas as pd

        table = read_table(p, max_bytes)
        if table.find_column(SMILES_COLUMN_NAMES) is not None:
            return "molecules", table
        if table.find_column(TEXT_COLUMN_NAMES) is not None:
            return "text", table
        from ._tables import ID_COLUMNS

        id_col = table.find_column(ID_COLUMNS)
        rest = [c for c in table.df.columns if c not in (group_column, weight_column, id_col)]
        strings = []
        for c in rest:
            col = table.df[c]
            if pd.api.types.is_numeric_dtype(col) or col.dtype == bool:
                continue
            first = col.dropna()
            if len(first) and isinstance(first.iloc[0], (list, tuple, np.ndarray)):
                continue
            if pd.to_numeric(col, errors="coerce").notna().sum() == col.notna().sum():
                continue
            strings.append(c)
        if len(strings) == 1 and len(rest) == 1:
            return "text", table
        return "embeddings", table
    raise DiversityInputError(
        f"{p}: cannot tell what kind of data a {suffix or 'file without extension'} file holds. "
        "Supported: .npy .npz .csv .tsv .parquet .jsonl (embeddings/text/molecules), a folder or .zip of "
        "images, .txt (text), .smi .smiles .sdf (molecules); or pass modality= explicitly."
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
) -> Dataset:
    """Load a dataset from a file or folder, with one clear error for any problem.

    Parameters
    ----------
    path : str or path-like
        A file, a folder of images or a ``.zip`` of images. ``"demo:<name>"`` loads a demo
        (see :func:`load_demo`).
    modality : {"auto", "embeddings", "images", "text", "molecules"}, default "auto"
        What the file holds; ``"auto"`` follows :func:`detect_modality`.
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

    Returns
    -------
    Dataset

    Raises
    ------
    DiversityInputError
        For every problem with the input: missing or empty file, fewer than 2 items, ragged rows,
        NaN/inf, non-numeric feature columns, a missing named column, mismatched lengths,
        negative or all-zero weights, unreadable images, text that is not UTF-8, unsafe zip
        entries, a file over ``max_bytes``, pickled ``.npy``/``.npz``. The message names the file
        and the row or entry, and says what to do.

    Notes
    -----
    Invalid SMILES, blank text lines and non-image files in an image folder are not errors: they
    are skipped and listed in ``Dataset.skipped``.

    Examples
    --------
    >>> ds = load_dataset("demo:digits")
    >>> ds.modality, ds.group_names()[0]
    ('images', 'all ten classes')
    """
    max_bytes = check_max_bytes(max_bytes)
    check_option(modality, ("auto",) + MODALITIES, "modality")
    if isinstance(path, str) and path.startswith("demo:"):
        from .demos import load_demo

        return load_demo(path[len("demo:") :])
    p = check_path(path)
    table = None
    if modality == "auto":
        modality, table = _detect(
            p,
            text_column=text_column,
            smiles_column=smiles_column,
            group_column=group_column,
            weight_column=weight_column,
            max_bytes=max_bytes,
        )
    if modality == "embeddings":
        for opt, value in (
            ("text_column", text_column),
            ("smiles_column", smiles_column),
            ("embeddings", embeddings),
        ):
            if value is not None:
                raise DiversityInputError(f"{opt} does not apply to embeddings files; leave it out.")
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
        return load_images(p, embeddings=embeddings, max_bytes=max_bytes, progress=progress)
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
