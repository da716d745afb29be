"""The Projection map's hover cards: what each card holds, what the page can carry, and the layer that shows them.

Plotly's hover boxes hold text only, so :func:`hover_layer` mounts a small ``st.components.v2``
script beside the chart that listens to the chart's ``plotly_hover`` events (plotly.js's public
event API) and shows the item: its thumbnail, its molecule drawing and SMILES, or its first lines
of text. The cards of the drawn points (every item, or a density view's sample:
:func:`ui.map_ui.sample_size`) travel with the page once per session (later runs send only their
hash; nothing from the network, no request per hover) within :data:`CARD_BYTES`; their pictures
come from :mod:`ui.card_pictures`. Pictures that take more than :data:`CARD_WAIT_S` to make are
made by a background task (the text of the cards is there at once). Views whose cards exceed
the budget keep plotly's text hover, and the page says up to how many items the cards reach and
how to narrow the view.
"""

from __future__ import annotations

import hashlib
import time
from typing import Optional

import numpy as np
import streamlit as st
from streamlit.components.v2 import component

from . import compute, tasks
from .cache import shared_cache
from .card_pictures import CARD_DRAWING_PX, CARD_THUMB_PX, CARD_WEBP_QUALITY, pictures
from .data import View
from .gallery import first_words
from .map_ui import density_sample, sample_size

#: Bytes of hover cards a page carries at most (thumbnails, drawings, text); beyond, text hover only.
CARD_BYTES = 8_000_000
#: Seconds of picture making (thumbnails, drawings) a page run waits for; more runs in the background.
CARD_WAIT_S = 1.5
#: Characters of text a hover card shows.
CARD_TEXT_CHARS = 280


def _drawn(view: View, size: int) -> np.ndarray:
    return np.arange(view.n) if not size else density_sample(view, size)


def _card_texts(ds, rows) -> tuple:
    """``(ids, groups or None, text)`` of the cards of ``rows``: the SMILES, or the first words of the text."""
    ids = [str(ds.ids[i]) for i in rows]
    groups = None if ds.groups is None else [str(ds.groups[i]) for i in rows]
    if ds.modality == "molecules":
        text = [str(ds.items[i]) for i in rows]
    elif ds.modality == "text":
        text = [first_words(ds.items[i], CARD_TEXT_CHARS) for i in rows]
    else:
        text = [""] * len(rows)
    return ids, groups, text


_PROBE = 24


@shared_cache("drawings", hash_funcs=compute.HASH)
def card_plan(view: View, size: int = 0) -> Optional[dict]:
    """What the hover cards of the drawn items cost, measured on a few of them (None: no cards for embeddings).

    ``{"bytes": per card, "seconds": to make one card's picture, "drawn": items drawn}``
    (:func:`card_limit`: the cards :data:`CARD_BYTES` holds).
    """
    ds = view.data
    if ds.modality == "embeddings":
        return None
    rows = _drawn(view, size)
    probe = rows[np.unique(np.linspace(0, rows.size - 1, min(_PROBE, rows.size)).astype(np.int64))]
    pics, seconds = [], 0.0
    if ds.modality in ("images", "molecules"):
        pics = pictures(ds.modality, [ds.items[probe[0]]])  # untimed: the first one imports the encoders
        t0 = time.perf_counter()
        pics += pictures(ds.modality, [ds.items[i] for i in probe[1:]])
        seconds = (time.perf_counter() - t0) / max(1, probe.size - 1)
    ids, groups, text = _card_texts(ds, probe)
    total = sum(len(v) for v in pics) + sum(len(v) for v in ids) + sum(len(v) for v in text)
    total += 0 if groups is None else sum(len(v) for v in groups)
    per = total / max(1, probe.size) + 16  # quotes, commas, the row number
    return {"bytes": per, "seconds": seconds, "drawn": int(rows.size)}


def card_limit(plan: dict) -> int:
    """Cards of the measured size that :data:`CARD_BYTES` holds."""
    return int(CARD_BYTES // plan["bytes"])


@shared_cache("drawings", hash_funcs=compute.HASH)
def hover_cards(view: View, size: int = 0) -> Optional[dict]:
    """The text of the hover cards of the items a map draws (None for embeddings; see :func:`page_cards`
    for the budget).

    ``{"kind": modality, "rows": item of each card (None: card i is item i), "ids": [...],
    "groups": [...] or None, "text": [...], "hash": ...}``: the SMILES of molecules, the first
    words of texts. Their pictures come from :func:`card_pictures`.
    """
    ds = view.data
    if ds.modality == "embeddings":
        return None
    rows = _drawn(view, size)
    ids, groups, text = _card_texts(ds, rows)
    digest = hashlib.blake2b(f"{view.key}|{size}|{ds.n}".encode(), digest_size=12).hexdigest()
    return {"kind": ds.modality, "rows": None if not size else rows.tolist(), "ids": ids, "groups": groups,
            "text": text, "hash": digest}


def card_pictures_key(view: View, size: int) -> tuple:
    """The key of the cards' pictures in the ``"map_cards"`` task store."""
    return (view.key, int(size), CARD_THUMB_PX, CARD_DRAWING_PX, CARD_WEBP_QUALITY)


def card_pictures_task(view: View, size: int):
    """``fn(progress)`` making the pictures of the cards of the drawn items (for a worker or a thread)."""
    ds = view.data
    kind = ds.modality
    items = [ds.items[i] for i in _drawn(view, size)]

    def fn(progress):
        return pictures(kind, items, progress)

    return fn


def card_pictures(view: View, size: int, plan: dict) -> Optional[list]:
    """The pictures of the hover cards (one per drawn item), or None while a background task makes them.

    Made here when that takes at most :data:`CARD_WAIT_S` (measured on a few); otherwise a
    background task of the session makes them, its progress drawn here, and the page reruns
    when they are ready (the cards show their text meanwhile).
    """
    key = card_pictures_key(view, size)
    out = tasks.finished("map_cards", key)
    if out is not None:
        return out.value
    if plan["seconds"] * plan["drawn"] <= CARD_WAIT_S:
        with st.spinner("Preparing the hover cards…"):
            value = card_pictures_task(view, size)(None)
        tasks.store("map_cards").put(key, tasks.Outcome(value))
        return value
    running = tasks.background("map_cards")
    if running is None or running[0] != key:
        tasks.start_background("map_cards", key, card_pictures_task(view, size), "Hover-card pictures")
    tasks.follow("map_cards", "Hover-card pictures")
    return None


def page_cards(view: View) -> tuple:
    """``(cards, note)`` for the map of the view: the hover cards of its drawn points with their
    pictures (None: plotly's text hover), and what the page says about them (None: nothing)."""
    size = sample_size(view.n)
    plan = card_plan(view, size)
    if plan is None:
        return None, None
    what = {"images": "thumbnail", "molecules": "drawing and SMILES", "text": "first lines"}[view.data.modality]
    limit = card_limit(plan)
    if limit < plan["drawn"]:
        return None, (
            f"Hovering a point shows its {what} on maps of up to {limit:,} drawn items here "
            f"(the page carries at most {CARD_BYTES / 1e6:.0f} MB of cards); this map draws "
            f"{plan['drawn']:,}, so hovering shows the item's id and group. To see the items, narrow the "
            "view: the sidebar's search, or a box or lasso around a region and Keep only these. A click "
            "still opens any item."
        )
    cards = hover_cards(view, size)
    if cards is None or view.data.modality not in ("images", "molecules"):
        return cards, None
    pics = card_pictures(view, size, plan)
    if pics is None:
        return cards, f"The {what.split()[0]}s of the hover cards are being made in the background; meanwhile " \
                      "hovering shows the id" + (" and the SMILES." if view.data.modality == "molecules" else ".")
    key = "img" if view.data.modality == "images" else "svg"
    return dict(cards, **{key: pics, "hash": cards["hash"] + "p"}), None



_HOVER_JS = r"""
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const anchor = parentElement;
  // the cards travel once per session: later runs send their hash, and the cards are kept here
  const store = (window.__dxCardStore = window.__dxCardStore || new Map());
  const hash = data && data.hash;
  if (data && data.cards) {
    const c = data.cards;
    c.pos = c.rows ? new Map(c.rows.map((r, j) => [r, j])) : null;
    store.delete(hash);
    store.set(hash, c);
    while (store.size > 4) store.delete(store.keys().next().value);
  }
  const cards = hash ? store.get(hash) || null : null;
  window.__dxCardHash = hash;  // the set of cards this map shows (its tests wait on that set's pictures)
  if (hash && !cards) setTriggerValue("missing", hash);  // a new page of the same session: send them again
  let card = document.getElementById("dx-hover-card");
  if (!card) {
    card = document.createElement("div");
    card.id = "dx-hover-card";
    card.setAttribute("role", "tooltip");
    card.style.cssText = "position:fixed;z-index:100000;display:none;pointer-events:none;max-width:300px;" +
      "background:#fff;color:#222;border:1px solid #bbb;border-radius:6px;padding:6px 8px;" +
      "box-shadow:0 2px 10px rgba(0,0,0,.18);font:13px/1.35 sans-serif;";
    document.body.appendChild(card);
  }
  let mouse = { x: 0, y: 0 };
  const track = (e) => { mouse = { x: e.clientX, y: e.clientY }; };
  document.addEventListener("mousemove", track, true);
  const hide = () => { card.style.display = "none"; };
  const show = (ev, gd) => {
    const p = ev && ev.points && ev.points[0];
    // the set the map shows now: a handler of an earlier run may still fire (its cards without pictures)
    const cs = store.get(window.__dxCardHash) || cards;
    if (!p || !cs) return;
    // only points are items: a density view's cells carry their counts
    if (p.data && p.data.type && !String(p.data.type).startsWith("scatter")) { hide(); return; }
    let i = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
    i = Number(i);
    if (!Number.isInteger(i) || i < 0) return;
    const j = cs.pos ? cs.pos.get(i) : i;
    if (j === undefined || j >= cs.ids.length) { hide(); return; }
    card.replaceChildren();
    card.dataset.item = String(i);
    const svg = cs.svg && cs.svg[j];
    const src = (cs.img && cs.img[j]) || (svg ? "data:image/svg+xml;charset=utf-8," + encodeURIComponent(svg) : "");
    if (src) {
      const img = document.createElement("img");
      img.src = src;
      img.alt = cs.ids[j];
      img.style.cssText = cs.kind === "images"
        ? "width:112px;height:112px;object-fit:contain;image-rendering:pixelated;display:block;margin-bottom:4px;"
        : "width:160px;height:160px;display:block;margin-bottom:4px;";
      card.appendChild(img);
    }
    if (cs.text[j]) {
      const t = document.createElement("div");
      t.className = "dx-card-text";
      t.textContent = cs.text[j];
      t.style.cssText = cs.kind === "molecules" ? "font-family:monospace;word-break:break-all;" : "white-space:normal;";
      card.appendChild(t);
    }
    const id = document.createElement("div");
    id.className = "dx-card-id";
    id.textContent = cs.ids[j] + (cs.groups ? " · " + cs.groups[j] : "");
    id.style.cssText = "color:#666;font-size:11px;margin-top:3px;word-break:break-all;";
    card.appendChild(id);
    const e = ev.event || {};
    const x = e.clientX ?? mouse.x, y = e.clientY ?? mouse.y;
    // measured at the window's left edge, at its full width (where the last card stood, it would
    // shrink to the room left there); then beside the pointer, on the side where it fits
    card.style.left = "0px";
    card.style.top = "0px";
    card.style.display = "block";
    const w = card.offsetWidth, h = card.offsetHeight;
    const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
    const r = gd && gd.getBoundingClientRect ? gd.getBoundingClientRect() : { left: 0, right: vw };
    const lo = Math.max(4, r.left), hi = Math.min(vw, r.right) - 4;  // within the chart and the window
    let left = x + 16 + w <= hi ? x + 16 : x - 16 - w;  // right of the pointer, else left of it
    left = Math.max(lo, Math.min(hi - w, left));
    let top = y + 16 + h <= vh - 4 ? y + 16 : y - 16 - h;  // below the pointer, else above it
    top = Math.max(4, Math.min(vh - h - 4, top));
    card.style.left = left + "px";
    card.style.top = top + "px";
  };
  const attach = () => {
    const plots = Array.from(document.querySelectorAll(".js-plotly-plot")).filter(
      (p) => p.compareDocumentPosition(anchor) & Node.DOCUMENT_POSITION_FOLLOWING);
    const gd = plots[plots.length - 1];
    if (!gd || typeof gd.on !== "function" || !cards || gd.__dxCards === cards) return;
    if (gd.__dxHandlers) {
      gd.removeListener("plotly_hover", gd.__dxHandlers[0]);
      gd.removeListener("plotly_unhover", gd.__dxHandlers[1]);
    }
    gd.__dxCards = cards;
    const onHover = (ev) => show(ev, gd);
    gd.__dxHandlers = [onHover, hide];
    gd.on("plotly_hover", onHover);
    gd.on("plotly_unhover", hide);
    gd.dataset.dxHover = "ready";
  };
  attach();
  const timer = setInterval(attach, 300);
  return () => {
    clearInterval(timer);
    document.removeEventListener("mousemove", track, true);
    hide();
  };
}
"""

_HOVER = None
#: Session-state key of the hashes of the cards this session's browser holds.
_SENT = "_map_cards_sent"


def _cards_missing() -> None:
    """The browser lacks cards it was sent (a reload of the page): send them again."""
    st.session_state[_SENT] = set()


def hover_layer(cards: Optional[dict], *, key: str) -> None:
    """Mount the hover cards of the chart drawn just above (nothing when ``cards`` is None).

    The cards go to the browser once per session; later runs (a click, a colour) send their
    hash, which the browser looks up (and asks for them again when it lacks them).
    """
    global _HOVER
    if cards is None:
        return
    if _HOVER is None:
        _HOVER = component("diversity_map_hover", js=_HOVER_JS, isolate_styles=False)
    ss = st.session_state
    sent = ss.get(_SENT)
    if not isinstance(sent, set):
        sent = ss[_SENT] = set()
    digest = cards["hash"]
    payload = {"hash": digest}
    if digest not in sent:
        payload["cards"] = {k: v for k, v in cards.items() if k != "hash"}
    _HOVER(data=payload, key=key, height="content", on_missing_change=_cards_missing)
    sent.add(digest)
