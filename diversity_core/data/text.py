"""Text: ``.txt`` (one item per line) or a table (``.csv``/``.tsv``/``.jsonl``/``.parquet``) with a text column.

Files must be UTF-8 (a BOM is fine); anything else is reported with the line and column of the
first undecodable byte. Blank lines and empty cells are skipped and reported; lines are kept as
they are apart from the trailing newline and surrounding whitespace.

The text column is ``text_column`` when given, else the first column named ``text``,
``sentence``, ``caption``, ``content``, ``body``, ``response``, ``completion``, ``output`` or
``prompt`` (in that order, so a table of prompts and responses is read as its responses), leaving
out the group and weight columns (``diversity evaluate --prompt-column prompt`` passes the prompt
column as the group column: it is never the text); else the only non-numeric column that is
neither the group nor the weight column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from ..exceptions import DiversityInputError
from ._dataset import Dataset, SkippedItem
from ._files import read_text_file
from ._tables import Table, columns_text, groups_from_column, is_text_column, read_table, weights_from_column
from .embeddings import companion_features

TEXT_COLUMN_NAMES = (
    "text",
    "sentence",
    "sentences",
    "caption",
    "captions",
    "content",
    "body",
    "response",
    "completion",
    "output",
    # last: in a table of prompts and responses, the items are the responses
    "prompt",
)


def _pick_text_column(table: Table, text_column, group_column, weight_column) -> str:
    import pandas as pd

    if text_column is not None:
        table.column(text_column, "text")
        return text_column
    # the group and weight columns (evaluate's prompt and quality columns) are never the text
    reserved = {str(c).lower() for c in (group_column, weight_column) if c}
    found = table.find_column([c for c in TEXT_COLUMN_NAMES if c not in reserved])
    if found is not None and str(found).lower() not in reserved and is_text_column(table.df[found]):
        return found
    candidates = [
        c
        for c in table.df.columns
        if c not in (group_column, weight_column) and not pd.api.types.is_numeric_dtype(table.df[c])
    ]
    if len(candidates) == 1:
        return candidates[0]
    raise DiversityInputError(
        f"{table.path}: cannot tell which column holds the text (columns: {columns_text(table.df.columns)}). "
        "Name it with text_column= (CLI: --text-column)."
    )


def load_text(
    path: Path,
    *,
    text_column: Optional[str] = None,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    embeddings=None,
    max_bytes: int,
    name: Optional[str] = None,
    table: Optional[Table] = None,
) -> Dataset:
    """Load text items (see the module docstring); ``table``: the file already parsed."""
    skipped: list = []
    groups = weights = None
    suffix = path.suffix.lower()
    if table is None and suffix in (".txt", ".text", ""):
        if group_column or weight_column or text_column:
            raise DiversityInputError(
                f"{path}: a .txt file has one item per line and no columns; use a .csv/.jsonl/.parquet file "
                "for text, group or weight columns."
            )
        lines = read_text_file(path, max_bytes).splitlines()
        texts, ids = [], []
        for lineno, line in enumerate(lines, start=1):
            s = line.strip()
            if not s:
                skipped.append(SkippedItem(f"{path.name} line {lineno}", "empty line"))
                continue
            texts.append(s)
            ids.append(f"line {lineno}")
    else:
        table = table if table is not None else read_table(path, max_bytes)
        col_name = _pick_text_column(table, text_column, group_column, weight_column)
        col = table.df[col_name]
        keep, texts, ids = [], [], []
        for i, v in enumerate(col.to_numpy()):
            if v is None or (isinstance(v, float) and np.isnan(v)) or not str(v).strip():
                skipped.append(SkippedItem(table.where(i), f"empty text in column {col_name!r}"))
                continue
            keep.append(i)
            texts.append(str(v).strip())
            ids.append(table.row_label(i))
        keep = np.asarray(keep, dtype=np.intp)
        if group_column:
            groups = groups_from_column(table, group_column, keep)
        if weight_column:
            weights = weights_from_column(table, weight_column, keep)
    if not texts:
        raise DiversityInputError(f"{path}: no non-empty text items; there is nothing to measure.")
    if len(texts) < 2:
        raise DiversityInputError(
            f"{path}: a single text item ({ids[0]}); diversity needs at least 2 items"
            + (f" ({len(skipped)} empty entries were skipped)." if skipped else ".")
        )
    features = None if embeddings is None else companion_features(embeddings, ids, max_bytes, str(path))
    return Dataset(
        name=name or path.name,
        modality="text",
        items=texts,
        features=features,
        groups=groups,
        weights=weights,
        ids=ids,
        skipped=tuple(skipped),
        source=str(path),
    )
