"""Several files read as one dataset, one group per file (a folder of them, or several uploads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from diversity_core import DiversityError
from diversity_core.data import Dataset, is_hf_source

#: Files a folder may hold to be read as one group per file (like ``diversity compare A.npy B.npy``).
GROUP_FILE_SUFFIXES = (".npy", ".parquet", ".csv", ".tsv", ".npz")


def combine_as_groups(parts: dict, name: str, source: str) -> Dataset:
    """One dataset whose groups are the given datasets (group name -> Dataset), in order.

    Every part must hold the same modality (and, with features, the same dimension); a part's own
    groups become ``"<part>: <group>"``.
    """
    names = list(parts)
    first = parts[names[0]]
    for g, d in parts.items():
        if d.modality != first.modality:
            raise DiversityError(f"{g!r} holds {d.modality} but {names[0]!r} holds {first.modality}; "
                                 "files combined as groups must hold the same kind of items.")
        if (d.features is None) != (first.features is None) or (
                d.features is not None and d.features.shape[1] != first.features.shape[1]):
            dims = [None if x.features is None else x.features.shape[1] for x in parts.values()]
            raise DiversityError(f"files combined as groups need features of one dimension; got {dims} "
                                 f"for {names}.")
    groups, ids, weights = [], [], []
    for g, d in parts.items():
        own = None if d.groups is None else np.asarray(d.groups).astype(str)
        groups.extend([g] * d.n if own is None else [f"{g}: {x}" for x in own])
        ids.extend(f"{g} · {i}" for i in d.ids)
        weights.append(np.ones(d.n) if d.weights is None else np.asarray(d.weights, dtype=float))
    features = None if first.features is None else np.concatenate([np.asarray(d.features) for d in parts.values()])
    if first.items is None:
        items = None
    elif isinstance(first.items, np.ndarray):
        shapes = {d.items.shape[1:] for d in parts.values()}
        if len(shapes) > 1:
            raise DiversityError(f"images combined as groups need one size; got {sorted(shapes)}.")
        items = np.concatenate([d.items for d in parts.values()])
    else:
        items = [x for d in parts.values() for x in d.items]
    any_weights = any(d.weights is not None for d in parts.values())
    skipped = tuple(sk for d in parts.values() for sk in d.skipped)
    return Dataset(name=name, modality=first.modality, items=items, features=features,
                   groups=np.asarray(groups, dtype=str), weights=np.concatenate(weights) if any_weights else None,
                   ids=ids, skipped=skipped, source=source)


def group_files(path: Path) -> list:
    """The files of a folder that hold one group each (empty when it is not such a folder)."""
    if not path.is_dir() or is_hf_source(path):  # Hugging Face Parquet shards are one dataset
        return []
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if len(files) >= 2 and all(p.suffix.lower() in GROUP_FILE_SUFFIXES for p in files):
        return files
    return []
