"""The working view pages measure, and its cache key.

Pages work on a :class:`View`: the dataset after the sidebar's search (:func:`~.search.working_dataset`:
a substring, a SMARTS substructure, molecules regrouped by scaffold), restricted to the selected
groups and subsampled (seeded), then restricted to, or cleared of, the linked selection
(:class:`~.selection.Selection`: rows of the loaded dataset picked on the Projection or Curate page).
``View.key`` names it in every cache (the dataset's content hash plus every filter), so no array
is hashed on a rerun.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core.data import Dataset

from ..cache import shared_cache
from .search import MIN_MATCHES, Search, current_search, working_dataset
from .selection import Selection, current_selection


@dataclass(frozen=True)
class View:
    """The dataset pages measure: ``full`` restricted to ``indices`` (None: all of it)."""

    full: Dataset
    data: Dataset
    indices: Optional[np.ndarray]
    key: str
    description: str
    preprocess: tuple = ()  # (steps, n_components) applied to every representation's features
    loaded: Optional[Dataset] = None  # the dataset as loaded, when a search changed it (``full`` is the result)
    rows: Optional[np.ndarray] = None  # row in the loaded dataset of each item of ``data`` (None: the same rows)
    selection_note: str = ""  # why the linked selection was set aside on this view (empty: applied or none)

    @property
    def n(self) -> int:
        return self.data.n

    def loaded_rows(self, indices) -> np.ndarray:
        """Rows of the loaded dataset of the view's items at ``indices`` (0-based positions in ``data``)."""
        idx = np.asarray(indices, dtype=np.intp).reshape(-1)
        return idx.copy() if self.rows is None else self.rows[idx]

    @property
    def groups(self) -> list:
        return self.data.group_names()

    @property
    def colours(self) -> dict:
        """Each group's colour on every chart, by its place among the dataset's groups (not the view's).

        The groups of the loaded dataset first, then any the search made (scaffold groups), so a
        group keeps its colour whichever groups a page, a filter or a chart shows.
        """
        from diversity_core.report.figures.colours import group_colours  # the figures' package, on demand

        names = [] if self.loaded is None else self.loaded.group_names()
        return group_colours(list(dict.fromkeys([*names, *self.full.group_names()])))


def view_hash(view: View) -> str:
    """Cache key of a view (``hash_funcs`` of every cached wrapper)."""
    return view.key

@shared_cache("data", hash_funcs={Dataset: lambda d: d.content_hash})
def _view(full: Dataset, groups: Optional[tuple], subsample: Optional[int], seed: int,
          preprocess: tuple, search: Search, loaded: Optional[Dataset], selection: Selection,
          _rows: Optional[np.ndarray] = None) -> View:
    # ``_rows`` (the search's rows of the loaded dataset) follows from ``loaded`` and ``search``
    idx = np.arange(full.n)
    parts = [search.describe()] if search.active and full is not loaded else []
    if groups is not None and full.groups is not None:
        keep = np.isin(np.asarray(full.groups).astype(str), np.asarray(groups, dtype=str))
        idx = idx[keep]
        parts.append(f"{len(groups)} of {len(full.group_names())} groups")
    if subsample is not None and subsample < idx.size:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(idx, size=int(subsample), replace=False))
        parts.append(f"a random subsample of {subsample} (seed {seed})")
    # the linked selection comes last: "exclude these" drops exactly those items from what was on screen
    source_rows = np.arange(full.n) if _rows is None else np.asarray(_rows)
    note = ""
    if selection.active:
        keep = selection.keeps(source_rows[idx])
        kept = int(keep.sum())
        if kept < MIN_MATCHES:
            note = (f"Selection set aside: it leaves {kept} of the {idx.size} items on screen; the scores need at "
                    f"least {MIN_MATCHES}. Clear it, or change the groups or subsample.")
        elif kept < idx.size:
            parts.append(selection.describe(kept=kept, dropped=idx.size - kept))
            idx = idx[keep]
    applied = selection.key if selection.active and not note else ""
    if idx.size == full.n:
        data, indices = full, None
    else:
        data, indices = full.subset(idx), idx
    rows = None if indices is None and _rows is None else source_rows[idx]
    if rows is not None:
        rows.setflags(write=False)
    key_src = (f"{full.content_hash}|{groups}|{subsample if indices is not None else None}|{seed}|{preprocess}"
               f"|{applied}")
    key = hashlib.blake2b(key_src.encode(), digest_size=12).hexdigest()
    description = f"{full.name}: {data.n} items" + (f" ({', '.join(parts)})" if parts else "")
    return View(full=full, data=data, indices=indices, key=key, description=description, preprocess=preprocess,
                loaded=None if loaded is None or loaded is full else loaded, rows=rows, selection_note=note)

def current_colours() -> dict:
    """Each group's colour on every chart (:attr:`View.colours` of the current view; {} before a dataset)."""
    if st.session_state.get("dataset") is None:
        return {}
    return current_view().colours


def current_view() -> View:
    """The working view of the loaded dataset under the sidebar's group filter and subsample."""
    from ..state import settings

    loaded = st.session_state["dataset"]
    search = current_search()
    result = working_dataset(loaded, search)
    full = result.data
    s = settings()
    groups = s.groups
    if groups is not None and full.groups is not None:
        valid = set(full.group_names())
        groups = tuple(g for g in groups if g in valid) or None
    return _view(full, groups, s.subsample, s.seed, s.preprocess, search, loaded,
                 selection=current_selection(), _rows=result.rows)
