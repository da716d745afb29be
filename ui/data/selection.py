"""The linked selection: items picked on one page, kept or dropped on every page."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from diversity_core import frame_csv

from .search import MIN_MATCHES

if TYPE_CHECKING:
    from .view import View

#: What a selection does to the view: keep only its rows, or drop them.
SELECTION_MODES = ("restrict", "exclude")
#: Session-state key of the selection in effect, and of one a link carried (bound on first use).
SELECTION_KEY = "selection"
SELECTION_LINK_KEY = "_selection_link"


@dataclass(frozen=True)
class Selection:
    """The linked selection: rows of the loaded dataset every page keeps (``restrict``) or drops (``exclude``).

    ``rows`` are 0-based row numbers of the dataset as loaded (before the search, group filter
    and subsample), sorted; ``dataset`` is that dataset's content hash, so a selection never
    applies to another dataset. The empty selection (``mode=""``) changes nothing.
    """

    mode: str = ""
    rows: tuple = ()
    dataset: str = ""

    @property
    def active(self) -> bool:
        """Whether the selection changes the view (an empty exclusion does not)."""
        return self.mode == "restrict" or (self.mode == "exclude" and bool(self.rows))

    @property
    def key(self) -> str:
        """A short digest naming the selection in cache keys."""
        digest = hashlib.blake2b(np.asarray(self.rows, dtype=np.int64).tobytes(), digest_size=8).hexdigest()
        return f"{self.mode}:{len(self.rows)}:{digest}:{self.dataset}"

    def summary(self) -> str:
        """The selection in words, as the sidebar shows it."""
        n = len(self.rows)
        noun = "item" if n == 1 else "items"
        return f"Restricted to {n} selected {noun}" if self.mode == "restrict" else f"{n} selected {noun} excluded"

    def describe(self, *, kept: int, dropped: int) -> str:
        """What the selection did to one view (for the view's description)."""
        if self.mode == "restrict":
            return f"restricted to {kept} selected item{'s' if kept != 1 else ''}"
        return f"{dropped} selected item{'s' if dropped != 1 else ''} excluded"

    def keeps(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask: which of the items at loaded ``rows`` the selection keeps."""
        inside = np.isin(np.asarray(rows, dtype=np.int64), np.asarray(self.rows, dtype=np.int64))
        return inside if self.mode == "restrict" else ~inside

    def combined(self, mode: str, rows) -> Selection:
        """This selection followed by "keep only ``rows``" or "drop ``rows``".

        The pages already show the view under this selection, so a new selection refines it:
        restricting twice keeps the intersection, excluding twice drops the union, and a mix
        keeps the restricted rows less the excluded ones.
        """
        if mode not in SELECTION_MODES:
            raise ValueError(f"selection mode must be one of {SELECTION_MODES}; got {mode!r}.")
        new = {int(r) for r in rows}
        old = set(self.rows)
        if not self.active:
            out_mode, out = mode, new
        elif self.mode == "restrict":
            out_mode, out = "restrict", (old & new if mode == "restrict" else old - new)
        else:
            out_mode, out = ("restrict", new - old) if mode == "restrict" else ("exclude", old | new)
        return Selection(mode=out_mode, rows=tuple(sorted(out)), dataset=self.dataset)


def current_selection() -> Selection:
    """The selection in effect on the loaded dataset (the empty one when none, or when it names another dataset).

    A selection a link carried (``sel=`` in the URL, read by :func:`ui.state.read_query_params`)
    is bound to the dataset loaded on the session's first run; rows beyond it are dropped.
    """
    ss = st.session_state
    ds = ss.get("dataset")
    if ds is None:
        return Selection()
    link = ss.pop(SELECTION_LINK_KEY, None)
    if link is not None and not ss.get("load_error"):  # rows of a source that failed to load name nothing here
        mode, rows = link
        rows = tuple(sorted({int(r) for r in rows if 0 <= int(r) < ds.n}))
        ss[SELECTION_KEY] = Selection(mode=mode, rows=rows, dataset=ds.content_hash) if rows else Selection()
    sel = ss.get(SELECTION_KEY)
    if not isinstance(sel, Selection) or sel.dataset != ds.content_hash:
        return Selection()
    return sel


def use_selection(mode: str, rows) -> None:
    """Apply "keep only" (``restrict``) or "drop" (``exclude``) the loaded ``rows`` on every page.

    Combined with the selection in effect (:meth:`Selection.combined`); meant as a button's
    ``on_click``, so the sidebar and the page of the same run see the new view. The whole app
    reruns, also when the button sits in a fragment (every page measures another view now).
    """
    ss = st.session_state
    base = current_selection()
    base = replace(base, dataset=ss["dataset"].content_hash)
    ss[SELECTION_KEY] = base.combined(mode, rows)
    st.rerun()


def clear_selection() -> None:
    """Every page measures the whole view again."""
    st.session_state[SELECTION_KEY] = Selection()
    st.session_state.pop(SELECTION_LINK_KEY, None)


def selection_buttons(view: View, indices, *, key: str, what: str = "these items",
                      modes: tuple = SELECTION_MODES) -> None:
    """Buttons that send the view's items at ``indices`` to every page: keep only them, or drop them.

    ``key`` prefixes the buttons' keys (one set per place they are drawn); ``what`` names the
    items in the buttons' help; ``modes`` picks the buttons (``("exclude",)``: only the drop).
    A button that would leave fewer than two items is disabled and says why.
    """
    idx = [int(i) for i in indices]
    if not idx:
        return
    rows = tuple(int(r) for r in view.loaded_rows(idx))
    n = len(rows)
    shown = [m for m in SELECTION_MODES if m in modes]
    cols = iter(st.columns([1] * len(shown) + [4 - len(shown)]))
    if "restrict" in shown:
        next(cols).button(f"Keep only these {n}", key=f"{key}_restrict", icon=":material/filter_alt:",
                          on_click=use_selection, args=("restrict", rows), disabled=n < MIN_MATCHES,
                          help=f"Measure only {what} on every page (the sidebar shows it and clears it)."
                               + (f" The scores need at least {MIN_MATCHES} items." if n < MIN_MATCHES else ""))
    if "exclude" in shown:
        too_many = n > view.n - MIN_MATCHES
        next(cols).button(f"Exclude these {n}", key=f"{key}_exclude", icon=":material/filter_alt_off:",
                          on_click=use_selection, args=("exclude", rows), disabled=too_many,
                          help=f"Measure every page without {what}: what happens to VS if they are dropped?"
                               + (f" The scores need at least {MIN_MATCHES} items left." if too_many else ""))
    next(cols).caption("Used on every page: the sidebar shows the selection in effect and clears it.")


def selection_csv(view: View, indices) -> bytes:
    """CSV of the view's items at ``indices``: ``row`` (in the loaded dataset), ``id`` (and ``group``)."""
    import pandas as pd

    idx = [int(i) for i in indices]
    table = pd.DataFrame({"row": view.loaded_rows(idx), "id": [view.data.ids[i] for i in idx]})
    if view.data.groups is not None:
        table["group"] = [str(view.data.groups[i]) for i in idx]
    return frame_csv(table).encode("utf-8")
