"""The :class:`Dataset` every loader and demo returns, and :class:`SkippedItem`."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

import numpy as np

from ..exceptions import DiversityInputError
from ._tables import RowIds

#: The modalities a :class:`Dataset` can hold.
MODALITIES = ("embeddings", "images", "text", "molecules")

#: Longest side of the thumbnails kept for image galleries.
THUMBNAIL_SIDE = 64


@dataclass(frozen=True)
class SkippedItem:
    """An input entry the loader could not use.

    Attributes
    ----------
    where : str
        The file and the line, row, record or archive entry (e.g. ``"mols.smi line 12"``).
    reason : str
        Why it was skipped (e.g. ``"invalid SMILES 'C1CC'"``).
    """

    where: str
    reason: str

    def to_dict(self) -> dict:
        return {"where": self.where, "reason": self.reason}


def _frozen(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """Mark an array read-only (cached datasets are shared between callers)."""
    if a is not None and isinstance(a, np.ndarray) and a.flags.writeable:
        a.setflags(write=False)
    return a


def _hash_update_array(h, a: np.ndarray, chunk_rows: int = 1 << 14) -> None:
    h.update(f"{a.dtype.str}|{a.shape}|".encode())
    if a.ndim == 0 or a.shape[0] == 0:
        h.update(np.ascontiguousarray(a).tobytes())
        return
    for start in range(0, a.shape[0], chunk_rows):  # chunks keep memory-mapped inputs cheap
        h.update(np.ascontiguousarray(a[start : start + chunk_rows]).tobytes())


def _hash_update_strings(h, values: Sequence[str]) -> None:
    h.update(f"{len(values)}|".encode())
    for s in values:
        b = str(s).encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)


def content_hash(
    modality: str,
    items: Any,
    features: Optional[np.ndarray],
    groups: Optional[np.ndarray],
    weights: Optional[np.ndarray],
    ids: Sequence[str],
) -> str:
    """A stable BLAKE2b digest of a dataset's content (not its name or source path).

    Two files with the same content get the same hash, so caches keyed by it are shared.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(f"diversity-dataset-v1|{modality}|".encode())
    for label, value in (("items", items), ("features", features), ("groups", groups), ("weights", weights)):
        h.update(f"|{label}:".encode())
        if value is None:
            h.update(b"none")
        elif isinstance(value, np.ndarray) and value.dtype.kind not in "OUS":
            _hash_update_array(h, value)
        else:
            _hash_update_strings(h, [str(v) for v in value])
    h.update(b"|ids:")
    _hash_update_strings(h, ids)
    return h.hexdigest()


@dataclass(frozen=True)
class Dataset:
    """A loaded collection of items, ready to featurize and measure.

    Attributes
    ----------
    name : str
        Display name (the file name or the demo's name).
    modality : {"embeddings", "images", "text", "molecules"}
        What the items are.
    items : ndarray, list of str or None
        ``images``: uint8 thumbnails, shape (N, H, W, C) with H, W <= 64 and C in {1, 3};
        ``text``: the N strings; ``molecules``: N canonical SMILES; ``embeddings``: ``None``.
    features : ndarray of shape (N, d) or None
        Numeric features: the embeddings themselves, or companion embeddings of images/text.
        May be memory-mapped (read-only) for large ``.npy`` inputs.
    groups : ndarray of shape (N,) of str or None
        Group (e.g. model or sub-folder) of each item.
    weights : ndarray of shape (N,) or None
        Non-negative item weights as given (not normalised); ``None`` means uniform.
    ids : list of str
        Where each item came from: a file name, ``"line 12"``, ``"row 3"``, ...
    skipped : tuple of SkippedItem
        Entries that were not loaded, with the reason.
    source : str
        The path (or ``"demo:<name>"``) the dataset was read from.
    content_hash : str
        Stable digest of items, features, groups, weights and ids (computed when left empty);
        the key for caches of spectra and features.
    detected : str
        How the loader read the source: the modality and why (e.g. ``"embeddings: 3 numeric
        columns"``), plus what it detected or changed on the way (a sniffed delimiter, flattened
        JSON objects). Empty for datasets built directly. Not part of the content hash.

    Arrays are made read-only: cached datasets are shared, copy before modifying.
    """

    name: str
    modality: str
    items: Any
    features: Optional[np.ndarray]
    groups: Optional[np.ndarray]
    weights: Optional[np.ndarray]
    ids: list
    skipped: tuple = ()
    source: str = ""
    content_hash: str = field(default="")
    detected: str = ""

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise DiversityInputError(
                f"unknown modality {self.modality!r}; choose one of: {', '.join(MODALITIES)}."
            )
        n = len(self.ids)
        if self.modality == "embeddings":
            if self.features is None:
                raise DiversityInputError("an embeddings dataset needs features.")
        elif self.items is None or len(self.items) != n:
            got = "no items" if self.items is None else f"{len(self.items)} items"
            raise DiversityInputError(f"dataset {self.name!r}: {got} for {n} ids.")
        for label, value in (("features", self.features), ("groups", self.groups), ("weights", self.weights)):
            if value is not None and len(value) != n:
                raise DiversityInputError(
                    f"dataset {self.name!r}: {label} has {len(value)} rows but there are {n} items."
                )
        if self.modality == "images":
            items = np.asarray(self.items)
            if items.ndim != 4 or items.dtype != np.uint8 or items.shape[-1] not in (1, 3):
                raise DiversityInputError(
                    f"dataset {self.name!r}: image items must be a uint8 array N x H x W x C with C in (1, 3); "
                    f"got {items.dtype} {tuple(items.shape)}."
                )
            object.__setattr__(self, "items", _frozen(items))
        else:
            object.__setattr__(self, "items", None if self.items is None else list(self.items))
        _frozen(self.features)
        _frozen(self.groups)
        _frozen(self.weights)
        if not isinstance(self.ids, RowIds):  # "row 1", ... made when read: kept as it is
            object.__setattr__(self, "ids", [str(i) for i in self.ids])
        object.__setattr__(self, "skipped", tuple(self.skipped))
        if not self.content_hash:
            object.__setattr__(
                self,
                "content_hash",
                content_hash(self.modality, self.items, self.features, self.groups, self.weights, self.ids),
            )

    # ----------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of items."""
        return len(self.ids)

    def __len__(self) -> int:
        return self.n

    def group_names(self) -> list[str]:
        """The distinct groups in order of first appearance (``[]`` when there are no groups)."""
        if self.groups is None:
            return []
        return list(dict.fromkeys(str(g) for g in self.groups))

    def group_indices(self, group: str) -> np.ndarray:
        """Indices of the items of ``group``."""
        if self.groups is None:
            raise DiversityInputError(f"dataset {self.name!r} has no groups.")
        names = self.group_names()
        if group not in names:
            raise DiversityInputError(
                f"unknown group {group!r}; choose one of: {', '.join(repr(g) for g in names)}."
            )
        return np.flatnonzero(self.groups == group)

    def select_group(self, group: str) -> Dataset:
        """The sub-dataset of one group (named ``"<name> / <group>"``)."""
        sub = self.subset(self.group_indices(group))
        return replace(sub, name=f"{self.name} / {group}", content_hash="")

    def subset(self, indices) -> Dataset:
        """A new dataset with the items at ``indices`` (integers or a boolean mask), in that order."""
        idx = np.asarray(indices)
        if idx.dtype == bool:
            if idx.shape != (self.n,):
                raise DiversityInputError(f"a boolean mask must have {self.n} entries; got {idx.shape}.")
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.intp)
        elif not np.issubdtype(idx.dtype, np.integer):
            raise DiversityInputError("subset indices must be integers or a boolean mask.")
        idx = idx.reshape(-1)
        if idx.size and (idx.min() < -self.n or idx.max() >= self.n):
            raise DiversityInputError(f"subset indices out of range for {self.n} items.")
        if self.modality == "images":
            items = np.asarray(self.items)[idx]
        elif self.items is None:
            items = None
        else:
            items = [self.items[i] for i in idx]
        return Dataset(
            name=self.name,
            modality=self.modality,
            items=items,
            features=None if self.features is None else np.asarray(self.features[idx]),
            groups=None if self.groups is None else self.groups[idx],
            weights=None if self.weights is None else self.weights[idx],
            ids=[self.ids[i] for i in idx],
            skipped=self.skipped,
            source=self.source,
            detected=self.detected,
        )

    def summary(self, *, max_examples: int = 10) -> dict:
        """What was loaded, per group, and what was skipped and why (JSON-ready, stable keys)."""
        if self.groups is None:
            counts = {"(all)": self.n}
        else:
            c = Counter(str(g) for g in self.groups)
            counts = {g: int(c[g]) for g in self.group_names()}
        weight_sums = None
        if self.weights is not None:
            if self.groups is None:
                weight_sums = {"(all)": float(np.sum(self.weights))}
            else:
                weight_sums = {g: float(np.sum(self.weights[self.groups == g])) for g in self.group_names()}
        reasons = Counter(_reason_kind(s.reason) for s in self.skipped)
        item_shape = None
        if self.modality == "images":
            item_shape = list(np.asarray(self.items).shape[1:])
        return {
            "name": self.name,
            "modality": self.modality,
            "detected": self.detected,
            "source": self.source,
            "n_items": self.n,
            "n_features": None if self.features is None else int(self.features.shape[1]),
            "item_shape": item_shape,
            "groups": counts,
            "weights": weight_sums,
            "skipped": {
                "count": len(self.skipped),
                "reasons": dict(reasons),
                "examples": [s.to_dict() for s in self.skipped[:max_examples]],
            },
            "content_hash": self.content_hash,
        }

    def __repr__(self) -> str:
        from .._display import short_repr

        groups = f", groups={len(self.group_names())}" if self.groups is not None else ""
        feats = f", features={tuple(self.features.shape)}" if self.features is not None else ""
        title = (f"Dataset(name={self.name!r}, modality={self.modality!r}, n={self.n}{feats}{groups}, "
                 f"skipped={len(self.skipped)})")
        counts = self._group_counts()
        shown = ", ".join(f"{g!r} ({c})" for g, c in list(counts.items())[:_SHOWN])
        more = f", ... ({len(counts) - _SHOWN} more)" if len(counts) > _SHOWN else ""
        ids = ", ".join(repr(i) for i in self.ids[:3]) + (", ..." if self.n > 3 else "")
        return short_repr(title, [("groups", shown + more if counts else None), ("ids", ids),
                                  ("source", self.source or None), ("detected", self.detected or None)])

    def _group_counts(self) -> dict:
        """Items per group, in order of first appearance (empty without groups)."""
        if self.groups is None:
            return {}
        c = Counter(str(g) for g in self.groups)
        return {g: int(c[g]) for g in self.group_names()}

    def _repr_html_(self) -> str:
        """A notebook's table: one row per group with its count and first ids (every string escaped)."""
        from .._display import html_table

        if self.groups is None:
            rows = [{"group": "(all)", "n": self.n, "first ids": ", ".join(self.ids[:3])}]
        else:
            rows = []
            for g, count in self._group_counts().items():
                first = [self.ids[i] for i in np.flatnonzero(self.groups == g)[:3]]
                rows.append({"group": g, "n": count, "first ids": ", ".join(first)})
        import pandas as pd

        return html_table(pd.DataFrame(rows), caption=repr(self).splitlines()[0])


#: How many groups a Dataset's repr names.
_SHOWN = 5


def _reason_kind(reason: str) -> str:
    """The reason up to its first colon or quote: ``"invalid SMILES 'x'"`` -> ``"invalid SMILES"``."""
    for sep in (":", " '", ' "', " ("):
        pos = reason.find(sep)
        if pos > 0:
            reason = reason[:pos]
    return reason.strip()


@dataclass(frozen=True)
class GroupRows:
    """Rows chosen per group by :func:`capped_rows`.

    ``rows``: sorted row indices; ``left_out``: the groups with too few items; ``sizes``: the
    rows kept per group, in order of first appearance (empty without groups).
    """

    rows: np.ndarray
    left_out: tuple
    sizes: dict


def capped_rows(groups: Optional[np.ndarray], n: int, cap: int, *, min_items: int = 1, seed: int = 0) -> GroupRows:
    """At most ``cap`` rows of each group, groups of fewer than ``min_items`` rows left out.

    Parameters
    ----------
    groups : ndarray of shape (n,), optional
        Each row's group; None: one set of all ``n`` rows.
    n : int
        The number of rows.
    cap : int
        The most rows kept of a group (a seeded random subset beyond it, in row order).
    min_items : int, default 1
        Groups with fewer rows are left out (and named in ``left_out``).
    seed : int, default 0
        The same call gives the same rows.

    Returns
    -------
    GroupRows

    Examples
    --------
    >>> sel = capped_rows(np.array(["a", "b", "a", "c", "a"]), 5, 2, min_items=2)
    >>> sel.left_out, sel.sizes
    (('b', 'c'), {'a': 2})
    """
    if cap < 1 or min_items < 1:
        raise DiversityInputError(f"cap and min_items must be at least 1; got {cap} and {min_items}.")
    rng = np.random.default_rng(seed)
    if groups is None:
        rows = np.arange(n) if n <= cap else np.sort(rng.choice(n, size=cap, replace=False))
        return GroupRows(rows, (), {})
    groups = np.asarray(groups)
    keep, left_out, sizes = [], [], {}
    for g in dict.fromkeys(groups.tolist()):
        idx = np.flatnonzero(groups == g)
        if idx.size < min_items:
            left_out.append(g)
            continue
        chosen = idx if idx.size <= cap else np.sort(rng.choice(idx, size=cap, replace=False))
        keep.append(chosen)
        sizes[g] = int(chosen.size)
    rows = np.sort(np.concatenate(keep)) if keep else np.empty(0, dtype=np.intp)
    return GroupRows(rows, tuple(left_out), sizes)
