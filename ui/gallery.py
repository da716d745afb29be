"""Show items: image thumbnails, text snippets, molecule drawings, or ids for embeddings.

Every gallery shows the item itself first and its id second (issue 27): images and molecule
drawings with the SMILES under them, texts as their first lines, each card wrapped (nothing cut
at a column edge) with the full id, group and text on hover. The cards are one ``st.html``
block; every string from the data is HTML-escaped. Tables use :func:`content_column` for the
same reading (a text or SMILES column before the id).
"""

from __future__ import annotations

import base64
import html
import io
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import streamlit as st
from PIL import Image

from diversity_core.data import Dataset
from diversity_core.data.images import enlarge_thumbnail

from .cache import shared_cache

#: Side of a thumbnail on screen (small images are enlarged without smoothing).
THUMB_PX = 72
#: Longest text snippet shown in a gallery card or a table cell.
SNIPPET_CHARS = 320
#: Lines of a text shown in a card (the rest on hover).
TEXT_LINES = 6
#: Longest id shown whole; longer ones keep their start and end (the end tells items of one archive apart).
ID_CHARS = 40
#: Longest text in a card's hover box.
HOVER_CHARS = 1200

_CSS = """<style>
.dx-gallery{display:grid;gap:10px;margin:0 0 0.5rem 0}
.dx-card{margin:0;padding:4px;border:1px solid rgba(128,128,128,.25);border-radius:6px;min-width:0}
.dx-card img{display:block;max-width:100%;margin:0 auto;image-rendering:pixelated;background:#fff}
.dx-card img.dx-mol{image-rendering:auto}
.dx-text{font-size:.85rem;line-height:1.3;white-space:pre-line;overflow-wrap:anywhere;display:-webkit-box;
 -webkit-box-orient:vertical;-webkit-line-clamp:LINES;overflow:hidden}
.dx-main{font-family:monospace;font-size:.78rem;overflow-wrap:anywhere;margin-top:2px}
.dx-id,.dx-note{font-size:.72rem;opacity:.7;overflow-wrap:anywhere;line-height:1.25}
</style>""".replace("LINES", str(TEXT_LINES))


@shared_cache("drawings")
def molecule_png(smiles: str, size: int = 160) -> Optional[bytes]:
    """A drawing of ``smiles`` (None when RDKit cannot draw it)."""
    from diversity_core.featurizers.molecules import draw_molecule_png

    try:
        return draw_molecule_png(smiles, size=size)
    except Exception:  # noqa: BLE001 - a molecule that cannot be drawn is shown as text
        return None


def first_words(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (never mid-word)."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return (cut if cut else text[: limit - 1]) + "…"


def middle(ident, limit: int = ID_CHARS) -> str:
    """``ident`` whole, or its start and its end around "…" (the end, a file name, stays visible).

    Examples
    --------
    >>> middle("faces/very_long_folder_name/crying_face_holding_back_tears.png", 30)
    'faces/very…ding_back_tears.png'
    """
    ident = str(ident)
    if len(ident) <= limit:
        return ident
    tail = (limit - 1) * 2 // 3
    head = limit - 1 - tail
    return ident[:head] + "…" + ident[-tail:]


def snippet(text, limit: int = SNIPPET_CHARS) -> str:
    """The first lines of ``text`` (line breaks kept, blank lines dropped), cut between words."""
    lines = [" ".join(line.split()) for line in str(text).splitlines()]
    out = "\n".join(line for line in lines if line)
    if len(out) <= limit:
        return out
    cut = out[: limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 2 else cut) + "…"


#: Largest table (items x pixels of one image) whose rows get a thumbnail column: the 1200 digits
#: (8 x 8) are 77 kB of pixels; 2000 RGB images of 64 x 64 would send 24 MB of PNGs.
TABLE_THUMBS_MAX_PIXELS = 2_000_000


def content_column(ds: Dataset, indices: Sequence[int]) -> Optional[tuple]:
    """``(name, values)`` of a table column showing the items themselves, or None.

    Texts give their first lines, molecules their SMILES, images a small PNG (a data URL) when
    the table is small enough (:data:`TABLE_THUMBS_MAX_PIXELS`); embeddings have no item to show.
    """
    idx = [int(i) for i in indices]
    if ds.modality == "text":
        return "text", [snippet(ds.items[i]) for i in idx]
    if ds.modality == "molecules":
        return "SMILES", [str(ds.items[i]) for i in idx]
    if ds.modality == "images" and len(idx) * int(np.prod(np.shape(ds.items[0]))) <= TABLE_THUMBS_MAX_PIXELS:
        return "image", [_src(_png(enlarge_thumbnail(ds.items[i], 32))) for i in idx]
    return None


def content_config(name: str) -> dict:
    """Column settings of :func:`content_column`'s column (wide; ``row_height`` lets text wrap)."""
    if name == "image":
        return {name: st.column_config.ImageColumn(name, width="small", help="The item itself; its id is the next column.")}
    return {name: st.column_config.TextColumn(name, width="large", help="The item itself; its id is the next column.")}


#: Row height of tables with a text column: three wrapped lines.
TEXT_ROW_HEIGHT = 66


def _png(img: np.ndarray) -> bytes:
    """PNG bytes of an image array (values outside 0-255 clipped, as ``st.image(clamp=True)``)."""
    a = np.asarray(img)
    if a.dtype != np.uint8:
        a = np.clip(a * 255.0 if a.size and float(np.nanmax(a)) <= 1.0 else a, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def _src(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _card(ds: Dataset, i: int, note: Optional[str]) -> str:
    """One item: the item itself (picture and/or text), then its id, group and note."""
    esc = html.escape
    ident = str(ds.ids[i])
    hover = [ident]
    group = None
    if ds.groups is not None and len(ds.group_names()) > 1:
        group = str(ds.groups[i])
        hover.append(f"group: {group}")
    body = []
    if ds.modality == "images":
        body.append(f'<img src="{_src(_png(enlarge_thumbnail(ds.items[i], THUMB_PX)))}" alt="{esc(middle(ident))}">')
    elif ds.modality == "molecules":
        smiles = str(ds.items[i])
        png = molecule_png(smiles)
        if png is not None:
            body.append(f'<img class="dx-mol" src="{_src(png)}" alt="{esc(smiles[:200])}">')
        body.append(f'<div class="dx-main">{esc(smiles)}</div>')
        hover.append(smiles)
    elif ds.modality == "text":
        body.append(f'<div class="dx-text">{esc(snippet(ds.items[i]))}</div>')
        hover.append(first_words(ds.items[i], HOVER_CHARS))
    body.append(f'<div class="dx-id">{esc(middle(ident))}</div>')
    extra = " · ".join(p for p in (first_words(group, 40) if group else None, note) if p)
    if extra:
        body.append(f'<div class="dx-note">{esc(extra)}</div>')
    return f'<figure class="dx-card" title="{esc(chr(10).join(hover))}">{"".join(body)}</figure>'


def gallery_html(ds: Dataset, indices: Sequence[int], *, columns: int = 8,
                 notes: Optional[Sequence[Optional[str]]] = None) -> str:
    """The cards of the items at ``indices`` as one HTML block (every data string escaped)."""
    idx = [int(i) for i in indices]
    notes = list(notes) if notes is not None else [None] * len(idx)
    cols = max(1, min(int(columns), 4 if ds.modality == "text" else int(columns)))
    cards = "".join(_card(ds, i, note) for i, note in zip(idx, notes))
    return (f'{_CSS}<div class="dx-gallery" style="grid-template-columns:repeat({cols},minmax(0,1fr))">'
            f"{cards}</div>")


def show_items(
    ds: Dataset,
    indices: Sequence[int],
    *,
    columns: int = 8,
    notes: Optional[Sequence[str]] = None,
) -> None:
    """Draw the items at ``indices`` of ``ds`` in the way that suits their modality.

    Images, molecules and texts become cards (:func:`gallery_html`: at most 4 a row for texts);
    embeddings, which have no item to show, a table of ids. ``notes`` adds one short string per
    item to its caption (e.g. an eigenvector entry).
    """
    idx = [int(i) for i in indices]
    if not idx:
        st.caption("No items to show.")
        return
    notes = list(notes) if notes is not None else [None] * len(idx)
    if ds.modality in ("images", "molecules", "text"):
        st.html(gallery_html(ds, idx, columns=columns, notes=notes))
        return
    table = {"id": [ds.ids[i] for i in idx]}
    if ds.groups is not None and len({str(ds.groups[i]) for i in idx}) > 1:
        table["group"] = [str(ds.groups[i]) for i in idx]
    table["row"] = idx
    if any(n is not None for n in notes):
        table["note"] = [n or "" for n in notes]
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch",
                 column_config={"id": st.column_config.TextColumn("id", width="medium"),
                                "group": st.column_config.TextColumn("group", width="medium")})
    st.caption("An embeddings file holds vectors only; items are named by their id.")
