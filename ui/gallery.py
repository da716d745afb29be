"""Show items: image thumbnails, text snippets, molecule drawings, or ids for embeddings."""

from __future__ import annotations

from typing import Optional, Sequence

import pandas as pd
import streamlit as st

from diversity_core.data import Dataset
from diversity_core.data.images import enlarge_thumbnail

from .cache import shared_cache

#: Side of a thumbnail on screen (small images are enlarged without smoothing).
THUMB_PX = 72
#: Longest text snippet shown in a gallery.
SNIPPET_CHARS = 180


@shared_cache("drawings")
def molecule_png(smiles: str, size: int = 160) -> Optional[bytes]:
    """A drawing of ``smiles`` (None when RDKit cannot draw it)."""
    from diversity_core.featurizers.molecules import draw_molecule_png

    try:
        return draw_molecule_png(smiles, size=size)
    except Exception:  # noqa: BLE001 - a molecule that cannot be drawn is shown as text
        return None


def _words(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (never mid-word)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return (cut if cut else text[: limit - 1]) + "…"


def _tail(ident: str, limit: int) -> str:
    """The end of an id (a zip member's file name), where items of one archive differ."""
    ident = str(ident)
    if len(ident) <= limit:
        return ident
    name = ident.replace("\\", "/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return name if len(name) <= limit else "…" + name[-(limit - 1):]


def _caption(ds: Dataset, i: int, extra: Optional[str]) -> str:
    """A short caption: the item's id (its distinct end), its group and a note, cut between words."""
    parts = [_tail(ds.ids[i], 24)]
    if ds.groups is not None and len(ds.group_names()) > 1:
        parts.append(_words(ds.groups[i], 28))
    if extra:
        parts.append(extra)
    return " · ".join(parts)


def show_items(
    ds: Dataset,
    indices: Sequence[int],
    *,
    columns: int = 8,
    notes: Optional[Sequence[str]] = None,
) -> None:
    """Draw the items at ``indices`` of ``ds`` in the way that suits their modality.

    ``notes`` adds one short string per item to its caption (e.g. an eigenvector entry).
    """
    idx = [int(i) for i in indices]
    if not idx:
        st.caption("No items to show.")
        return
    notes = list(notes) if notes is not None else [None] * len(idx)
    if ds.modality == "images":
        images = [enlarge_thumbnail(ds.items[i], THUMB_PX) for i in idx]
        for start in range(0, len(idx), columns):
            cols = st.columns(columns)
            for col, i, img, note in zip(cols, idx[start:], images[start:start + columns], notes[start:]):
                col.image(img, caption=_caption(ds, i, note), clamp=True)
    elif ds.modality == "molecules":
        for start in range(0, len(idx), columns):
            cols = st.columns(columns)
            for col, i, note in zip(cols, idx[start:start + columns], notes[start:]):
                png = molecule_png(ds.items[i])
                if png is None:
                    col.code(ds.items[i])
                    col.caption(_caption(ds, i, note))
                else:
                    col.image(png, caption=_caption(ds, i, note))
    else:
        table = {"id": [ds.ids[i] for i in idx]}
        if ds.groups is not None and len({str(ds.groups[i]) for i in idx}) > 1:
            table["group"] = [str(ds.groups[i]) for i in idx]
        if ds.modality == "text":
            table["text"] = [_snippet(ds.items[i]) for i in idx]
        else:
            table["row"] = idx
        if any(n is not None for n in notes):
            table["note"] = [n or "" for n in notes]
        st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch",
                     column_config={"id": st.column_config.TextColumn("id", width="small"),
                                    "group": st.column_config.TextColumn("group", width="medium"),
                                    "text": st.column_config.TextColumn("text", width="large")})
        if ds.modality == "embeddings":
            st.caption("An embeddings file holds vectors only; items are named by their id.")


def _snippet(text: str) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= SNIPPET_CHARS else t[: SNIPPET_CHARS - 1] + "…"
