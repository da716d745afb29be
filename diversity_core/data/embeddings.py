"""Embeddings: ``.npy``, ``.npz`` (named arrays), ``.csv``/``.tsv``/``.jsonl``, ``.parquet``.

- ``.npy``: one 2-D numeric array (N x d), memory-mapped when larger than 64 MiB; never
  unpickled. Groups and weights need a format with named fields (``.npz`` or a table).
- ``.npz``: the feature array is the only 2-D array, or the one named ``features``,
  ``embeddings``, ``X`` or ``x``; ``group_column`` / ``weight_column`` name 1-D arrays (arrays
  named ``groups``, ``weights`` and ``ids`` are picked up without being named).
- Tables: every numeric column is a feature, except the group, weight and id columns
  (``id``, ``name``, ``file``, ``filename``, ``path``); or a single list-valued column (Parquet or
  JSON lists) holding each row's vector. Any other non-numeric column is an error.

Large files are streamed rather than loaded (:mod:`diversity_core.sources`): an ``.npy`` file
through :func:`~._files.npy_layout` / :func:`~._files.read_npy_rows`, a Parquet file batch by
batch through :func:`parquet_layout` / :func:`parquet_batch_features`, with the same column rules.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from .._optional import require
from ..exceptions import DiversityInputError, DiversityWarning
from ._dataset import Dataset
from ._files import load_npy, load_npz
from ._tables import (
    ID_COLUMNS,
    RowIds,
    Table,
    check_weight_values,
    first_rows,
    groups_from_column,
    ids_from_column,
    read_table,
    weights_from_column,
)

FEATURE_ARRAY_NAMES = ("features", "embeddings", "embedding", "X", "x", "arr_0")
GROUP_ARRAY_NAMES = ("groups", "group", "labels")
WEIGHT_ARRAY_NAMES = ("weights", "weight")
ID_ARRAY_NAMES = ("ids", "names", "files", "filenames")


def check_feature_array(X: np.ndarray, source: str, row_where=None, *, min_items: int = 2) -> np.ndarray:
    """Validate an N x d numeric feature array read from ``source`` (messages name rows)."""
    if row_where is None:

        def row_where(rows):
            return "rows " + first_rows([int(r) + 1 for r in rows])

    if X.dtype.hasobject or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DiversityInputError(
            f"{source}: the features must be numbers; got dtype {X.dtype}. Save a numeric array."
        )
    if np.issubdtype(X.dtype, np.complexfloating):
        raise DiversityInputError(f"{source}: complex-valued features are not supported; use real numbers.")
    if X.ndim == 1:
        raise DiversityInputError(
            f"{source}: expected a 2-D array (items x features); got a 1-D array of length {X.shape[0]}. "
            "Save it as X.reshape(-1, 1) for a single feature."
        )
    if X.ndim != 2:
        raise DiversityInputError(
            f"{source}: expected a 2-D array (items x features); got shape {tuple(X.shape)}. "
            "For images use modality='images'; otherwise flatten each item to one row."
        )
    n, d = X.shape
    if n == 0:
        raise DiversityInputError(f"{source}: the array has no rows; there is nothing to measure.")
    if d == 0:
        raise DiversityInputError(f"{source}: the array has no feature columns.")
    if n < min_items:
        raise DiversityInputError(
            f"{source}: a single item; diversity needs at least {min_items} items. Add more rows."
        )
    if X.dtype not in (np.float32, np.float64):
        X = np.asarray(X, dtype=np.float64)
    bad_rows = []
    step = max(1, (1 << 24) // max(d, 1))  # chunked, so memory-mapped inputs stay cheap
    for start in range(0, n, step):
        block = np.asarray(X[start : start + step])
        finite = np.isfinite(block).all(axis=1)
        if not finite.all():
            bad_rows.extend((np.flatnonzero(~finite) + start).tolist())
            if len(bad_rows) > 5:
                break
    if bad_rows:
        raise DiversityInputError(
            f"{source}: NaN or infinite values at {row_where(bad_rows)}. Remove or impute those rows."
        )
    return X


def _pick_feature_array(arrays: dict, path: Path, reserved: set) -> str:
    candidates = [k for k, v in arrays.items() if k not in reserved and v.ndim >= 2]
    if len(candidates) == 1:
        return candidates[0]
    for name in FEATURE_ARRAY_NAMES:
        if name in arrays and name not in reserved:
            return name
    listing = ", ".join(f"{k} {tuple(v.shape)}" for k, v in arrays.items())
    raise DiversityInputError(
        f"{path}: cannot tell which array holds the features ({listing}). "
        "Name it 'features' (np.savez(path, features=X, groups=g))."
    )


def _named_1d(arrays: dict, name: str, n: int, path: Path, role: str) -> np.ndarray:
    if name not in arrays:
        raise DiversityInputError(
            f"{path}: no array named {name!r} (the {role} array); the arrays are: "
            f"{', '.join(repr(k) for k in arrays)}."
        )
    a = arrays[name]
    if a.ndim != 1 or a.shape[0] != n:
        raise DiversityInputError(
            f"{path}: the {role} array {name!r} has shape {tuple(a.shape)}; expected one value per item ({n},). "
            "The lengths of items and their groups/weights must match."
        )
    return a


def _first_present(arrays: dict, names) -> Optional[str]:
    for name in names:
        if name in arrays:
            return name
    return None


def read_npz_dataset(path: Path, max_bytes: int, group_column=None, weight_column=None):
    """Features, groups, weights and ids from an ``.npz`` archive."""
    arrays = load_npz(path, max_bytes)
    group_name = group_column or _first_present(arrays, GROUP_ARRAY_NAMES)
    weight_name = weight_column or _first_present(arrays, WEIGHT_ARRAY_NAMES)
    id_name = _first_present(arrays, ID_ARRAY_NAMES)
    reserved = {k for k in (group_name, weight_name, id_name) if k}
    feat_name = _pick_feature_array(arrays, path, reserved)
    X = arrays[feat_name]
    n = X.shape[0] if X.ndim else 0
    groups = weights = ids = None
    if group_name is not None:
        g = _named_1d(arrays, group_name, n, path, "group")
        groups = np.asarray([str(v) for v in g.tolist()], dtype=str)
    if weight_name is not None:
        w = _named_1d(arrays, weight_name, n, path, "weight")
        if not np.issubdtype(w.dtype, np.number):
            raise DiversityInputError(f"{path}: the weight array {weight_name!r} is not numeric ({w.dtype}).")
        weights = check_weight_values(
            np.asarray(w, dtype=np.float64),
            lambda rows: "rows " + first_rows([int(r) + 1 for r in rows]),
            str(path),
            weight_name,
        )
    if id_name is not None:
        ids = [str(v) for v in _named_1d(arrays, id_name, n, path, "id").tolist()]
    unused = sorted(set(arrays) - reserved - {feat_name})
    if unused:
        warnings.warn(
            f"{path.name}: ignored arrays {', '.join(unused)} (features are {feat_name!r}).",
            DiversityWarning,
            stacklevel=3,
        )
    return X, groups, weights, ids, feat_name


def _list_column_matrix(table: Table, name: str) -> np.ndarray:
    col = table.df[name]
    lengths = []
    rows = []
    for i, v in enumerate(col.to_numpy()):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            raise DiversityInputError(
                f"{table.where(i)}: the vector column {name!r} is empty. Remove the row or fill it in."
            )
        try:
            arr = np.asarray(v, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise DiversityInputError(
                f"{table.where(i)}: the vector column {name!r} holds non-numeric values. "
                "Each entry must be a list of numbers."
            ) from None
        lengths.append(arr.shape[0])
        rows.append(arr)
        if arr.shape[0] != lengths[0]:
            raise DiversityInputError(
                f"{table.path}: ragged rows: {table.where(i)} has a vector of length {arr.shape[0]} in column "
                f"{name!r} but the first row has {lengths[0]}. Every vector needs the same length."
            )
    return np.vstack(rows) if rows else np.empty((0, 0))


def _is_list_column(col) -> bool:
    for v in col.to_numpy()[:20]:
        if v is None:
            continue
        if isinstance(v, (list, tuple, np.ndarray)):
            return True
        return False
    return False


def read_table_features(table: Table, *, group_column=None, weight_column=None, exclude=(), id_column="auto"):
    """Feature matrix, groups, weights and ids from a table (numeric columns or one list column)."""
    import pandas as pd

    df = table.df
    reserved = [c for c in (group_column, weight_column) if c]
    for c in reserved:
        table.column(c, "group" if c == group_column else "weight")
    id_col = table.find_column(ID_COLUMNS) if id_column == "auto" else id_column
    if id_col is not None and id_col not in reserved:
        reserved.append(id_col)
    reserved.extend(c for c in exclude if c in df.columns)
    candidates = [c for c in df.columns if c not in reserved]
    list_cols = [c for c in candidates if _is_list_column(df[c])]
    if list_cols:
        if len(candidates) != 1:
            raise DiversityInputError(
                f"{table.path}: found a vector column ({list_cols[0]!r}) next to other columns "
                f"({', '.join(repr(c) for c in candidates if c != list_cols[0])}). Use one list column "
                "or numeric columns, and name groups/weights with group_column/weight_column."
            )
        X = _list_column_matrix(table, list_cols[0])
    else:
        if not candidates:
            raise DiversityInputError(
                f"{table.path}: no feature columns besides the group/weight/id columns."
            )
        for c in candidates:
            col = df[c]
            if col.dtype == bool or pd.api.types.is_numeric_dtype(col):
                continue
            numeric = pd.to_numeric(col, errors="coerce")
            bad = np.flatnonzero(numeric.isna().to_numpy() & col.notna().to_numpy())
            if bad.size:
                i = int(bad[0])
                raise DiversityInputError(
                    f"{table.path}: column {c!r} is not numeric ({col.iloc[i]!r} at {table.where(i)}). "
                    "Drop it, or name it with group_column= if it holds groups."
                )
            df[c] = numeric
        X = df[candidates].to_numpy(dtype=np.float64)
    X = check_feature_array(X, str(table.path), table.rows_text)
    groups = groups_from_column(table, group_column) if group_column else None
    weights = weights_from_column(table, weight_column) if weight_column else None
    ids = ids_from_column(table, id_col) if id_col is not None else None
    return X, groups, weights, ids


def load_embeddings(
    path: Path,
    *,
    group_column: Optional[str] = None,
    weight_column: Optional[str] = None,
    max_bytes: int,
    name: Optional[str] = None,
    table: Optional[Table] = None,
) -> Dataset:
    """Load an embeddings file (see the module docstring); ``table``: the file already parsed."""
    suffix = path.suffix.lower()
    ids = None
    if suffix == ".npy":
        if group_column or weight_column:
            raise DiversityInputError(
                f"{path}: an .npy file holds a single array, so it has no {'group' if group_column else 'weight'} "
                "column. Save named arrays with np.savez(path, features=X, groups=g, weights=w), or use a table."
            )
        X = check_feature_array(load_npy(path, max_bytes), str(path))
        groups = weights = None
    elif suffix == ".npz":
        X, groups, weights, ids, feat_name = read_npz_dataset(path, max_bytes, group_column, weight_column)
        X = check_feature_array(X, f"{path} (array {feat_name!r})")
    else:
        table = table if table is not None else read_table(path, max_bytes)
        X, groups, weights, ids = read_table_features(
            table, group_column=group_column, weight_column=weight_column
        )
    if ids is None:
        ids = RowIds(X.shape[0])  # "row 1", ... made when read: no string per row held
    return Dataset(
        name=name or path.name,
        modality="embeddings",
        items=None,
        features=X,
        groups=groups,
        weights=weights,
        ids=ids,
        skipped=(),
        source=str(path),
    )


def read_companion(path: Path, max_bytes: int):
    """Read a companion embeddings file: ``(X, ids_or_None)``; ids come from an id column/array."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return check_feature_array(load_npy(path, max_bytes), str(path), min_items=1), None
    if suffix == ".npz":
        X, _groups, _weights, ids, feat_name = read_npz_dataset(path, max_bytes)
        return check_feature_array(X, f"{path} (array {feat_name!r})", min_items=1), ids
    table = read_table(path, max_bytes)
    X, _groups, _weights, ids = read_table_features(table)
    return X, ids


def align_companion(
    companion: Path, X: np.ndarray, companion_ids: Optional[list], item_ids: list, source: str
) -> np.ndarray:
    """Rows of companion embeddings ``X`` in the order of ``item_ids``.

    With ids in the companion file, rows are matched by file name (the full relative path, or
    the base name when that is unique); without ids, by row order (lengths must agree).
    """
    n = len(item_ids)
    if companion_ids is None:
        if X.shape[0] != n:
            raise DiversityInputError(
                f"{companion}: {X.shape[0]} embedding rows for {n} items in {source}; the lengths must "
                "match when rows are aligned by order. Add an id/filename column to align by name."
            )
        return X
    index: dict[str, int] = {}
    for i, cid in enumerate(companion_ids):
        key = str(cid).replace("\\", "/").strip()
        if key in index:
            raise DiversityInputError(
                f"{companion}: the id {key!r} appears twice (rows {index[key] + 1} and {i + 1}); ids must be unique."
            )
        index[key] = i
    basenames: dict[str, list] = {}
    for key, i in index.items():
        basenames.setdefault(key.rsplit("/", 1)[-1], []).append(i)
    rows = []
    missing = []
    for item in item_ids:
        key = str(item)
        if key in index:
            rows.append(index[key])
            continue
        base = key.rsplit("/", 1)[-1]
        hits = basenames.get(base, [])
        if len(hits) == 1:
            rows.append(hits[0])
        else:
            missing.append(key)
    if missing:
        raise DiversityInputError(
            f"{companion}: no embedding row for {len(missing)} of the {n} items of {source} "
            f"(e.g. {', '.join(repr(m) for m in missing[:3])}). Add rows whose id/filename matches those files."
        )
    unused = sorted(set(range(X.shape[0])) - set(rows))
    if unused:
        names = [companion_ids[i] for i in unused[:3]]
        raise DiversityInputError(
            f"{companion}: {len(unused)} embedding rows name no item of {source} "
            f"(e.g. {', '.join(repr(str(m)) for m in names)}). The lengths of items and embeddings must match; "
            "remove those rows or add the missing items."
        )
    return np.asarray(X[np.asarray(rows)])


def companion_features(embeddings, item_ids: list, max_bytes: int, source: str) -> np.ndarray:
    """Read a companion embeddings file and align its rows with ``item_ids`` (see :func:`align_companion`)."""
    comp = Path(os.fspath(embeddings)).expanduser()
    if not comp.exists():
        raise DiversityInputError(f"{comp}: no such companion embeddings file; check the path.")
    X, comp_ids = read_companion(comp, max_bytes)
    return align_companion(comp, X, comp_ids, item_ids, source)


# --------------------------------------------------------------------------------------------
# Parquet, streamed batch by batch
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParquetLayout:
    """Which columns of a Parquet file hold the features, and the matrix they make.

    Attributes
    ----------
    path : Path
    columns : tuple of str
        The feature columns, read in this order.
    vector : bool
        True when ``columns`` is one list (or fixed-size list) column holding each row's vector.
    n, d : int
        Rows and features.
    dtype : numpy.dtype
        float32 when every feature value is float32, else float64.
    row_groups : tuple of int
        Rows of each row group.
    """

    path: Path
    columns: tuple
    vector: bool
    n: int
    d: int
    dtype: np.dtype
    row_groups: tuple


def _parquet_file(path: Path):
    """An open ``pyarrow.parquet.ParquetFile`` or a clear error.

    Read through a 1 MiB buffered stream without pre-buffering: pyarrow then holds a few
    pages, not whole column chunks, while it decodes a batch.
    """
    pq = require("pyarrow.parquet", purpose="reading Parquet files")

    try:
        return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    except Exception as exc:  # pyarrow raises many types for corrupt files
        raise DiversityInputError(
            f"{path}: cannot read the Parquet file ({type(exc).__name__}: {exc}). "
            "It may be truncated or not Parquet; re-export it."
        ) from None


def _is_numeric_type(t) -> bool:
    import pyarrow as pa

    return pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)


def _is_vector_type(t) -> bool:
    import pyarrow as pa

    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) and _is_numeric_type(
        t.value_type
    )


def parquet_layout(path: Path, *, column: Optional[str] = None, exclude=()) -> ParquetLayout:
    """Find the feature columns of a Parquet file from its schema (and, for list columns, one row).

    The rules are those of :func:`read_table_features`: one list column holding each row's
    vector, or every numeric column; id columns, ``exclude`` (group and weight columns) and
    pandas' index columns are left out. ``column`` names the feature column explicitly.
    """
    pf = _parquet_file(path)
    schema = pf.schema_arrow
    names = [str(f.name) for f in schema]
    if column is not None:
        if column not in names:
            raise DiversityInputError(
                f"{path}: no column named {column!r}; the columns are: {', '.join(repr(c) for c in names)}."
            )
        candidates = [column]
    else:
        lower_ids = {c.lower() for c in ID_COLUMNS}
        skip = set(exclude)
        candidates = [
            c for c in names
            if c not in skip and c.lower() not in lower_ids and not c.startswith("__index_level_")
        ]
    types = {c: schema.field(c).type for c in candidates}
    vectors = [c for c in candidates if _is_vector_type(types[c])]
    if vectors:
        if len(candidates) != 1:
            raise DiversityInputError(
                f"{path}: found a vector column ({vectors[0]!r}) next to other columns "
                f"({', '.join(repr(c) for c in candidates if c != vectors[0])}). Use one list column "
                "or numeric columns, and name groups/weights with group_column/weight_column."
            )
        name = vectors[0]
        t = types[name]
        if hasattr(t, "list_size"):
            d = int(t.list_size)
        else:
            first = next(pf.iter_batches(batch_size=1, columns=[name]), None)
            d = 0 if first is None or first.num_rows == 0 or first.column(0)[0].as_py() is None else len(
                first.column(0)[0].as_py()
            )
        value_type = t.value_type
        floats32 = str(value_type) == "float"
        columns = (name,)
    else:
        if not candidates:
            raise DiversityInputError(f"{path}: no feature columns besides the group/weight/id columns.")
        bad = [c for c in candidates if not _is_numeric_type(types[c])]
        if bad:
            raise DiversityInputError(
                f"{path}: column {bad[0]!r} is not numeric ({types[bad[0]]}). "
                "Drop it, or name it with group_column= if it holds groups."
            )
        d = len(candidates)
        floats32 = all(str(types[c]) == "float" for c in candidates)
        columns = tuple(candidates)
    n = int(pf.metadata.num_rows)
    if d == 0:
        raise DiversityInputError(f"{path}: the feature vectors are empty; there is nothing to measure.")
    groups = tuple(int(pf.metadata.row_group(i).num_rows) for i in range(pf.metadata.num_row_groups))
    return ParquetLayout(
        path=path, columns=columns, vector=bool(vectors), n=n, d=int(d),
        dtype=np.dtype(np.float32 if floats32 else np.float64), row_groups=groups,
    )


def parquet_batch_features(batch, layout: ParquetLayout, start: int) -> np.ndarray:
    """The feature rows of one record batch (or table) read from ``layout.columns``; ``start``: its first row."""
    rows = batch.num_rows
    if layout.vector:
        import pyarrow.compute as pc

        col = batch.column(0)
        if hasattr(col, "combine_chunks"):
            col = col.combine_chunks()
        if col.null_count:
            i = int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise DiversityInputError(
                f"{layout.path} row {start + i + 1}: the vector column {layout.columns[0]!r} is empty. "
                "Remove the row or fill it in."
            )
        lengths = np.asarray(pc.list_value_length(col), dtype=np.int64)
        ragged = np.flatnonzero(lengths != layout.d)
        if ragged.size:
            i = int(ragged[0])
            raise DiversityInputError(
                f"{layout.path}: ragged rows: row {start + i + 1} has a vector of length {lengths[i]} in column "
                f"{layout.columns[0]!r} but the first row has {layout.d}. Every vector needs the same length."
            )
        values = col.flatten()
        if values.null_count:
            raise DiversityInputError(
                f"{layout.path}: the vector column {layout.columns[0]!r} holds missing values "
                f"between rows {start + 1} and {start + rows}; fill them in."
            )
        X = values.to_numpy(zero_copy_only=False).reshape(rows, layout.d)
    else:
        parts = []
        for j in range(len(layout.columns)):
            col = batch.column(j)
            if hasattr(col, "combine_chunks"):
                col = col.combine_chunks()
            parts.append(np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
                         if col.null_count else col.to_numpy(zero_copy_only=False))
        X = np.column_stack(parts) if parts else np.empty((rows, 0))
    if X.dtype != layout.dtype:
        X = X.astype(layout.dtype)
    return X


def parquet_column(path: Path, name: str) -> np.ndarray:
    """One column of a Parquet file, read whole (a group or weight column: n values)."""
    pf = _parquet_file(path)
    names = [str(f.name) for f in pf.schema_arrow]
    if name not in names:
        raise DiversityInputError(
            f"{path}: no column named {name!r}; the columns are: {', '.join(repr(c) for c in names)}."
        )
    return pf.read(columns=[name]).column(0).to_numpy(zero_copy_only=False)
