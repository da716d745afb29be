"""The sidebar's search: a substring, a SMARTS substructure, scaffold groups, a weight range."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import Dataset

from ..cache import shared_cache


@dataclass(frozen=True)
class Search:
    """The sidebar's search: a substring in a column, a SMARTS pattern, scaffold groups (``top`` kept)."""

    column: str = "item"
    text: str = ""
    smarts: str = ""
    scaffolds: Optional[int] = None  # regroup molecules by their Bemis-Murcko scaffold, the top ones kept
    weights: tuple = (None, None)  # keep items whose weight lies in [low, high] (None: no bound)

    @property
    def active(self) -> bool:
        return bool(self.text or self.smarts or self.scaffolds) or self.weights != (None, None)

    def describe(self) -> str:
        """The search in words (for the view's description)."""
        parts = []
        if self.text:
            parts.append(f"{self.column} contains '{self.text}'")
        if self.smarts:
            parts.append(f"substructure {self.smarts}")
        if self.scaffolds:
            parts.append(f"grouped by scaffold (top {self.scaffolds})")
        if self.weights != (None, None):
            low, high = self.weights
            parts.append(f"weight in [{'-∞' if low is None else f'{low:g}'}, {'∞' if high is None else f'{high:g}'}]")
        return ", ".join(parts)


@dataclass(frozen=True)
class Searched:
    """The result of a search: the dataset pages measure, or the reason the search was set aside."""

    data: Dataset
    error: str = ""
    rows: Optional[np.ndarray] = None  # row in the searched dataset's source of each item (None: the same rows)


#: Fewest matching items a search may leave (every score needs two).
MIN_MATCHES = 2


@shared_cache("data", spinner="Searching the items…", hash_funcs={Dataset: lambda d: d.content_hash})
def working_dataset(full: Dataset, search: Search) -> Searched:
    """``full`` filtered by ``search`` (and regrouped by scaffold); ``full`` itself with an error on failure.

    The matching lives in :mod:`diversity_core.data.search`; an invalid SMARTS pattern, or a search
    that leaves fewer than two items, is reported and the search set aside.
    """
    from diversity_core.data import search as dsearch

    if not search.active:
        return Searched(full)
    try:
        ds = full
        if search.scaffolds:
            ds = replace(ds, groups=dsearch.scaffold_labels(ds, top=search.scaffolds), content_hash="")
        keep = np.ones(ds.n, dtype=bool)
        if search.text:
            keep &= dsearch.contains_mask(ds, search.text, column=search.column)
        if search.smarts:
            keep &= dsearch.substructure_mask(ds, search.smarts)
        if search.weights != (None, None) and ds.weights is not None:
            keep &= dsearch.range_mask(ds, low=search.weights[0], high=search.weights[1])
    except DiversityError as exc:
        from ..feedback import plain

        return Searched(full, plain(f"Search set aside: {exc}"))
    if int(keep.sum()) < MIN_MATCHES:
        return Searched(full, f"Search set aside: {int(keep.sum())} of {full.n} items match "
                              f"{search.describe()}; the scores need at least {MIN_MATCHES}.")
    if keep.all():
        return Searched(ds)
    rows = np.flatnonzero(keep)
    rows.setflags(write=False)
    return Searched(replace(ds.subset(keep), content_hash=""), rows=rows)

def current_search() -> Search:
    """The sidebar's search (its widgets' session-state keys, see :func:`ui.sidebar._search_section`)."""
    ss = st.session_state
    molecules = ss["dataset"].modality == "molecules"
    return Search(column=ss.get("search_col") or "item", text=(ss.get("search_text") or "").strip(),
                  smarts=(ss.get("search_smarts") or "").strip() if molecules else "",
                  scaffolds=int(ss.get("search_scaffold_top") or 8) if molecules and ss.get("search_scaffold") else None,
                  weights=_weight_range(ss))


def _weight_range(ss) -> tuple:
    """The sidebar's weight range ``(low, high)`` when the dataset has weights, else ``(None, None)``."""
    if ss["dataset"].weights is None:
        return (None, None)
    return tuple(None if ss.get(k) is None else float(ss[k]) for k in ("weight_min", "weight_max"))


def searched() -> Searched:
    """The loaded dataset after the sidebar's search."""
    return working_dataset(st.session_state["dataset"], current_search())
