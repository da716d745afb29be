"""Projection page helpers: maps of any size, hover cards, and the item a click opens.

- Maps of up to :data:`SCATTER_MAX` items are drawn point by point (WebGL above 3,000 points);
  larger ones as a density image (:func:`diversity_core.projection.density_grid`) with a seeded
  sample of :data:`DENSITY_SAMPLE` points on top, which carries hover and lets the box and lasso
  select; the items the boxes and lassos hold are found in the coordinates
  (:func:`diversity_core.projection.points_in_regions`), so a selection is exact at any size. The
  3-D view draws the same sample above :data:`SCATTER_MAX` (it has no density image).
- Hover cards: plotly's hover boxes hold text only, so :func:`hover_layer` mounts a small
  ``st.components.v2`` script beside the chart that listens to the chart's ``plotly_hover``
  events (plotly.js's public event API) and shows the item: its thumbnail, its molecule drawing
  and SMILES, or its first lines of text. The cards of the drawn points travel with the page
  once per session (later runs send only their hash; nothing from the network, no request per
  hover) within :data:`CARD_BYTES`: thumbnails at most :data:`CARD_THUMB_PX` px (PNG for small
  images, WebP for photographs, ~0.5 KB), molecules as compact SVG drawings (~2 KB). Pictures
  that take more than :data:`CARD_WAIT_S` to make are made by a background task (the text of the
  cards is there at once). Views whose cards exceed the budget keep plotly's text hover, and the
  page says up to how many items the cards reach and how to narrow the view.
- A click opens the item with its nearest neighbours under the current kernel
  (:func:`diversity_core.curation.nearest_items`), its per-item numbers from the Curate page's
  tasks (contributions, rarity, near-duplicate group) and "keep only these" into the selection.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import time
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core import format_q, q_key
from diversity_core.curation import default_threshold, nearest_items
from diversity_core.data.search import contains_any_mask
from diversity_core.projection import density_grid, points_in_regions, project
from diversity_core.report.figures import projection_figure

from . import compute, curate_ui, tasks
from .cache import shared_cache
from .data import View, selection_buttons
from .feedback import attempt, literal
from .gallery import molecule_png, show_items

#: Largest map drawn point by point; larger maps are a density image with a sample of points on top.
SCATTER_MAX = 200_000
#: Points drawn over a density view, and in a 3-D view above :data:`SCATTER_MAX` (they carry hover
#: and make the box and lasso work; plotly's WebGL keeps 20,000 points interactive on a laptop GPU).
DENSITY_SAMPLE = 20_000
#: Cells of the density image (x, y).
DENSITY_BINS = (480, 320)
#: Bytes of hover cards a page carries at most (thumbnails, drawings, text); beyond, text hover only.
CARD_BYTES = 8_000_000
#: Longest side of a hover card's thumbnail, px: larger images are shrunk to it (the card shows it at 112 px).
CARD_THUMB_PX = 48
#: Images up to this side are PNG in the cards (lossless, ~100-300 bytes); larger ones WebP.
CARD_PNG_PX = 32
#: WebP quality of the cards' thumbnails (~0.4 KB for a 48 px photograph).
CARD_WEBP_QUALITY = 70
#: Side of a molecule's drawing in the cards, px (an SVG, shown at 160 px).
CARD_DRAWING_PX = 120
#: Seconds of picture making (thumbnails, drawings) a page run waits for; more runs in the background.
CARD_WAIT_S = 1.5
#: Characters of text a hover card shows.
CARD_TEXT_CHARS = 280
#: Neighbours shown for a clicked item.
NEIGHBOURS_K = 8
#: Highlighted search matches drawn at most (the count is exact).
HIGHLIGHT_MAX = 50_000


# ------------------------------------------------------------------------------------------
# maps
# ------------------------------------------------------------------------------------------
@shared_cache("results", spinner="Computing the 3-D PCA map…", hash_funcs=compute.HASH)
def pca_3d(view: View, featurizer: str):
    """The view's PCA map in three dimensions."""
    return project(
        compute.features(view, featurizer, show_progress=False), method="pca", n_components=3, rng=0
    )


def umap_key(view: View, featurizer: str, metric: str, n_neighbors: int, min_dist: float, dims: int) -> tuple:
    """The key of a UMAP map in the ``"umap"`` task store (the 2-D key is :func:`ui.compute.umap_key`'s)."""
    key = compute.umap_key(view, featurizer, metric, n_neighbors, min_dist)
    return key if dims == 2 else key + (int(dims),)


def umap_task(view: View, featurizer: str, metric: str, n_neighbors: int, min_dist: float, dims: int):
    """``fn(progress)`` computing the view's UMAP map in ``dims`` dimensions (for :func:`ui.tasks.run`)."""
    if dims == 2:
        return compute.umap_task(view, featurizer, metric, n_neighbors, min_dist)

    def fn(progress):
        X = compute.features(view, featurizer, show_progress=False)
        return project(
            X,
            method="umap",
            n_components=dims,
            metric=metric,
            n_neighbors=n_neighbors,
            min_dist=min_dist,
            rng=0,
            progress=progress,
        )

    return fn


def is_density(n: int) -> bool:
    """Whether a map of ``n`` items is drawn as a density image (a sample of points in 3-D)."""
    return n > SCATTER_MAX


def sample_size(n: int) -> int:
    """Points of a map of ``n`` items drawn as a sample (0: every point is drawn)."""
    return min(n, DENSITY_SAMPLE) if is_density(n) else 0


@shared_cache("results", hash_funcs=compute.HASH)
def density_sample(view: View, size: int) -> np.ndarray:
    """The seeded sample of ``size`` items drawn over a density view (sorted)."""
    rng = np.random.default_rng(0)
    return np.sort(rng.choice(view.n, size=min(view.n, int(size)), replace=False))


def drawn_items(view: View) -> Optional[np.ndarray]:
    """The items a map of the view draws as points: None for all of them, else the seeded sample."""
    size = sample_size(view.n)
    return density_sample(view, size) if size else None


def map_figure(
    projection,
    *,
    color,
    categorical: bool,
    hover,
    color_title: str,
    axes: tuple,
    title: str,
    cards: bool,
    highlight: Optional[np.ndarray],
    sample: Optional[np.ndarray] = None,
):
    """The 2-D map: every point, or (``sample`` given) a density image with those points on top.

    Each point's ``customdata`` is its item; ``hover`` holds one label per drawn point (per
    item, or per sampled item). With ``cards`` plotly's own hover box is turned off (the hover
    layer shows the item instead); ``highlight`` rings the items matching a search.
    """
    import plotly.graph_objects as go

    XY = projection.coords[:, :2]
    if sample is None:
        big = XY.shape[0] > 20_000  # smaller, lighter points keep the crowded regions readable
        fig = projection_figure(
            XY,
            color=color,
            categorical=categorical,
            hover=hover,
            color_title=color_title,
            axis_titles=axes,
            title=title,
            marker_size=2.5 if big else None,
        )
        if big:
            fig.update_traces(marker_opacity=0.45)
    else:
        fig = projection_figure(
            XY[sample],
            color=None if color is None else [color[i] for i in sample],
            categorical=categorical,
            hover=hover,
            color_title=color_title,
            axis_titles=axes,
            title=title,
            webgl=True,
            marker_size=2.5,
        )
        for trace in fig.data:  # the sample's rows -> the items
            trace.customdata = np.asarray(sample)[np.asarray(trace.customdata, dtype=np.int64)]
            trace.marker.opacity = 0.3
        grid = density_grid(XY, bins=DENSITY_BINS)
        fig.add_trace(
            go.Heatmap(
                x=grid.x_centres,
                y=grid.y_centres,
                z=np.where(grid.counts > 0, np.log10(np.maximum(grid.counts, 1)) + 1, np.nan),
                customdata=grid.counts,
                colorscale="Greys",
                zmin=0.5,
                showscale=False,
                name="density",
                hovertemplate="%{customdata} items here<extra></extra>",
                hoverongaps=False,
            )
        )
        fig.data = (fig.data[-1],) + tuple(fig.data[:-1])  # the image under the points
    if cards:
        for trace in fig.data:
            if trace.type in ("scatter", "scattergl"):
                trace.hovertemplate = None
                trace.hoverinfo = "none"
    if highlight is not None and highlight.size:
        shown = highlight[:HIGHLIGHT_MAX]
        fig.add_trace(
            go.Scattergl(
                x=XY[shown, 0],
                y=XY[shown, 1],
                mode="markers",
                name=f"matches ({highlight.size})",
                marker={"size": 11, "color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 2}},
                customdata=shown,
                hoverinfo="skip",
            )
        )
    return fig


def figure_3d(
    projection,
    *,
    color,
    categorical: bool,
    hover,
    color_title: str,
    title: str,
    cards: bool,
    highlight: Optional[np.ndarray] = None,
    sample: Optional[np.ndarray] = None,
    axes: tuple = ("1", "2", "3"),
):
    """The 3-D map in the 2-D map's colours (rotate with the mouse; selection works on the 2-D map).

    With ``sample`` only those items are drawn (``hover``: one label per sampled item), as on
    the 2-D density view: WebGL's 3-D scatter has no density image and slows past ~10^5 points.
    """
    import plotly.graph_objects as go

    from diversity_core.report.figures import PALETTE, escape_label

    items = np.arange(projection.coords.shape[0]) if sample is None else np.asarray(sample, dtype=np.int64)
    XYZ = projection.coords[items]
    n = XYZ.shape[0]
    # small, lighter points from 10,000 on (a density view's 20,000-point sample included): larger
    # ones merged each cluster into one solid blob (looked at on a 1,000,000-item map)
    size = 2 if n >= 10_000 else 3 if n > 2000 else 4
    opacity = 0.5 if n >= 10_000 else 0.8
    fig = go.Figure()
    text = None if hover is None else np.asarray(hover, dtype=object)
    if color is None or categorical:
        labels = np.asarray(["all items"] * n if color is None else [escape_label(color[i]) for i in items])
        for g, label in enumerate(dict.fromkeys(labels.tolist())):
            sel = labels == label
            fig.add_trace(
                go.Scatter3d(
                    x=XYZ[sel, 0],
                    y=XYZ[sel, 1],
                    z=XYZ[sel, 2],
                    mode="markers",
                    name=label,
                    marker={"size": size, "opacity": opacity, "color": PALETTE[g % len(PALETTE)]},
                    customdata=items[sel],
                    text=None if text is None else text[sel],
                    hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>")
                    + f"{label}<extra></extra>",
                )
            )
    else:
        values = np.asarray(color, dtype=np.float64)
        lim = float(np.nanmax(np.abs(values))) if values.size else 1.0
        fig.add_trace(
            go.Scatter3d(
                x=XYZ[:, 0],
                y=XYZ[:, 1],
                z=XYZ[:, 2],
                mode="markers",
                name=color_title,
                marker={
                    "size": size,
                    "color": values[items],
                    "colorscale": "RdBu",
                    "cmin": -lim,
                    "cmax": lim,
                    "colorbar": {"title": color_title},
                },
                customdata=items,
                text=text,
                hovertemplate=("%{text}<br>" if text is not None else "item %{customdata}<br>")
                + f"{color_title} = "
                + "%{marker.color:.3g}<extra></extra>",
            )
        )
    if cards:
        fig.update_traces(hovertemplate=None, hoverinfo="none")
    if highlight is not None and highlight.size:
        shown = highlight[:HIGHLIGHT_MAX]
        all_xyz = projection.coords
        fig.add_trace(
            go.Scatter3d(
                x=all_xyz[shown, 0],
                y=all_xyz[shown, 1],
                z=all_xyz[shown, 2],
                mode="markers",
                name=f"matches ({highlight.size})",
                marker={"size": size + 4, "color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 2}},
                customdata=shown,
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        title=title,
        height=640,
        margin=dict(l=0, r=0, t=50, b=0),
        scene=dict(xaxis_title=axes[0], yaxis_title=axes[1], zaxis_title=axes[2] if len(axes) > 2 else "3"),
    )
    return fig


def region_items(coords: np.ndarray, event) -> list:
    """The items inside the boxes and lassos of a chart's selection event, all of them (empty when none).

    Raises
    ------
    DiversityInputError
        A lasso of fewer than 3 vertices (the page shows it with :func:`ui.feedback.attempt`).
    """
    try:
        selection = event.selection
        boxes, lassos = list(selection.get("box") or []), list(selection.get("lasso") or [])
    except (AttributeError, KeyError, TypeError):
        return []
    if not boxes and not lassos:
        return []
    return points_in_regions(
        np.asarray(coords)[:, :2],
        boxes=[(min(b["x"]), max(b["x"]), min(b["y"]), max(b["y"])) for b in boxes],
        lassos=[(la["x"], la["y"]) for la in lassos],
    ).tolist()


def matching_items(ds, text: str) -> np.ndarray:
    """Items whose id, group or content (the text, the SMILES) contains ``text`` (case-insensitive),
    by :func:`diversity_core.data.search.contains_any_mask`."""
    return np.flatnonzero(contains_any_mask(ds, str(text)))


# ------------------------------------------------------------------------------------------
# hover cards
# ------------------------------------------------------------------------------------------
@shared_cache("results", hash_funcs=compute.HASH)
def hover_text(view: View, size: int = 0) -> list:
    """Plotly's hover text of the items a map draws (:func:`ui.compute.hover_labels`, kept per view):
    every item, or (``size``) the seeded sample of :func:`density_sample` only."""
    ds = view.data
    return compute.hover_labels(ds if not size else ds.subset(density_sample(view, size)))


def _drawn(view: View, size: int) -> np.ndarray:
    return np.arange(view.n) if not size else density_sample(view, size)


def _thumbnail_uri(img) -> str:
    """A hover card's thumbnail as a data URI: PNG up to :data:`CARD_PNG_PX` px, else a WebP of at
    most :data:`CARD_THUMB_PX` px a side (the aspect ratio kept)."""
    from PIL import Image

    a = np.asarray(img)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    im = Image.fromarray(np.ascontiguousarray(a.astype(np.uint8)))
    buf = io.BytesIO()
    if max(im.size) <= CARD_PNG_PX:
        im.save(buf, format="PNG")
        mime = "png"
    else:
        if max(im.size) > CARD_THUMB_PX:
            im.thumbnail((CARD_THUMB_PX, CARD_THUMB_PX), Image.BILINEAR)
        im.save(buf, format="WEBP", quality=CARD_WEBP_QUALITY)
        mime = "webp"
    return f"data:image/{mime};base64," + base64.b64encode(buf.getvalue()).decode("ascii")


_SVG_ELEMENT = re.compile(r"<(path|text|ellipse|polygon|polyline|circle|rect)\b([^>]*?)(/>|>(.*?)</\1>)", re.S)
_SVG_ATTR = re.compile(r"([\w:-]+)='([^']*)'")
_SVG_LINE = re.compile(r"M(-?[\d.]+,-?[\d.]+)((?:L-?[\d.]+,-?[\d.]+)+)")


def _compact_svg(svg: str, side: int) -> str:
    """RDKit's SVG of a molecule, compact: the paths of each colour merged into one, the atom labels
    as plain ``<text>``, no header or background (~2 KB instead of ~11 KB; the same picture)."""
    strokes: dict = {}
    fills: dict = {}
    parts = []
    for m in _SVG_ELEMENT.finditer(svg):
        tag, attrs, body = m.group(1), dict(_SVG_ATTR.findall(m.group(2))), m.group(4) or ""
        style = dict(kv.split(":", 1) for kv in attrs.get("style", "").split(";") if ":" in kv)
        if tag == "path" and "d" in attrs:
            d = re.sub(r"\.0(?=\D|$)", "", re.sub(r"\s*([A-Za-z])\s*", r"\1", attrs["d"]).strip())
            fill = style.get("fill", attrs.get("fill", "none"))
            if fill != "none":
                fills.setdefault(fill, []).append(d)
            else:
                width = style.get("stroke-width", "1px").replace("px", "")
                group = strokes.setdefault((style.get("stroke", "#000000"), width), [])
                line = _SVG_LINE.fullmatch(d)
                if line and group and group[-1].endswith("L" + line.group(1)):
                    d = line.group(2)  # continues the previous line: no new "M"
                group.append(d)
        elif tag == "text":
            anchor = style.get("text-anchor", "start")
            parts.append(
                f"<text x='{attrs.get('x', 0)}' y='{attrs.get('y', 0)}' font-size='"
                f"{style.get('font-size', '10px').replace('px', '')}' fill='{style.get('fill', '#000000')}'"
                + ("" if anchor == "start" else f" text-anchor='{anchor}'")
                + f">{body}</text>"
            )
        elif tag != "rect":  # the background rectangle is dropped; radicals, highlights kept
            parts.append(re.sub(r"\s+class='[^']*'", "", m.group(0)))
    paths = [f"<path d='{''.join(ds)}' stroke='{c}' stroke-width='{w}' fill='none'/>"
             for (c, w), ds in strokes.items()]
    paths += [f"<path d='{''.join(ds)}' fill='{c}'/>" for c, ds in fills.items()]
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {side} {side}' font-family='sans-serif'>"
            + "".join(paths) + "".join(parts) + "</svg>")


def _molecule_svg(smiles: str) -> str:
    """A compact SVG drawing of ``smiles`` for a hover card ("" when it cannot be drawn: the card shows the SMILES)."""
    try:
        from rdkit import Chem
        from rdkit.Chem.Draw import rdMolDraw2D

        from diversity_core.data.molecules import quiet_rdkit
        from diversity_core.featurizers.molecules import drawing_problem

        if drawing_problem(smiles) is not None:
            return ""
        with quiet_rdkit():
            mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            return ""
        # text labels, not glyph outlines (noFreetype): a tenth of the bytes
        drawer = rdMolDraw2D.MolDraw2DSVG(CARD_DRAWING_PX, CARD_DRAWING_PX, -1, -1, True)
        drawer.drawOptions().clearBackground = False
        drawer.drawOptions().minFontSize = 9
        rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
        drawer.FinishDrawing()
        return _compact_svg(drawer.GetDrawingText(), CARD_DRAWING_PX)
    except Exception:  # noqa: BLE001 - a molecule that cannot be drawn is shown by its SMILES
        return ""


def _pictures(kind: str, items: list, progress=None) -> list:
    """The cards' pictures of ``items``: thumbnails (data URIs) or molecule drawings (SVG text)."""
    out = []
    for j, item in enumerate(items):
        out.append(_thumbnail_uri(item) if kind == "images" else _molecule_svg(str(item)))
        if progress is not None and (j + 1) % 100 == 0:
            progress(j + 1, len(items), f"{j + 1:,} of {len(items):,} {'thumbnails' if kind == 'images' else 'drawings'}")
    return out


def _card_texts(ds, rows) -> tuple:
    """``(ids, groups or None, text)`` of the cards of ``rows``: the SMILES, or the first words of the text."""
    ids = [str(ds.ids[i]) for i in rows]
    groups = None if ds.groups is None else [str(ds.groups[i]) for i in rows]
    if ds.modality == "molecules":
        text = [str(ds.items[i]) for i in rows]
    elif ds.modality == "text":
        text = [_first_words(ds.items[i], CARD_TEXT_CHARS) for i in rows]
    else:
        text = [""] * len(rows)
    return ids, groups, text


#: Items whose cards are made to measure their bytes and time (spread over the drawn items).
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
        pics = _pictures(ds.modality, [ds.items[probe[0]]])  # untimed: the first one imports the encoders
        t0 = time.perf_counter()
        pics += _pictures(ds.modality, [ds.items[i] for i in probe[1:]])
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
        return _pictures(kind, items, progress)

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
    pictures = card_pictures(view, size, plan)
    if pictures is None:
        return cards, f"The {what.split()[0]}s of the hover cards are being made in the background; meanwhile " \
                      "hovering shows the id" + (" and the SMILES." if view.data.modality == "molecules" else ".")
    key = "img" if view.data.modality == "images" else "svg"
    return dict(cards, **{key: pictures, "hash": cards["hash"] + "p"}), None


def _first_words(text, limit: int) -> str:
    t = " ".join(str(text).split())
    if len(t) <= limit:
        return t
    cut = t[: limit - 1].rsplit(" ", 1)[0]
    return (cut or t[: limit - 1]) + "…"


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
  const show = (ev) => {
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
    card.style.display = "block";
    const w = card.offsetWidth, h = card.offsetHeight;
    card.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, x + 16)) + "px";
    card.style.top = Math.max(4, Math.min(window.innerHeight - h - 4, y + 16)) + "px";
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
    gd.__dxHandlers = [show, hide];
    gd.on("plotly_hover", show);
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
        from streamlit.components.v2 import component

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


# ------------------------------------------------------------------------------------------
# the clicked item
# ------------------------------------------------------------------------------------------
@shared_cache("results", hash_funcs=compute.HASH)
def neighbours(view: View, featurizer: str, kernel: str, kernel_params: tuple, item: int, k: int):
    """The ``k`` nearest neighbours of ``item`` under the kernel (a :class:`~diversity_core.curation.Neighbours`)."""
    X = compute.features(view, featurizer, show_progress=False)
    return nearest_items(X, [int(item)], k=min(int(k), view.n - 1), kernel=kernel, **dict(kernel_params))


def show_item(ds, i: int) -> None:
    """One item, large: the image, the drawing and its SMILES, or the whole text."""
    from diversity_core.data.images import enlarge_thumbnail

    if ds.modality == "images":
        st.image(enlarge_thumbnail(ds.items[i], 160), clamp=True)
    elif ds.modality == "molecules":
        png = molecule_png(str(ds.items[i]), size=240)
        if png is not None:
            st.image(png)
        st.code(str(ds.items[i]), language=None, wrap_lines=True)
    elif ds.modality == "text":
        st.markdown(literal(_first_words(ds.items[i], 1200)))
    group = "" if ds.groups is None else f" · group **{literal(ds.groups[i])}**"
    st.caption(f"{literal(ds.ids[i])}{group}")


def item_numbers(ctx, item: int, started: bool) -> Optional[dict]:
    """The item's contribution, rarity and near-duplicate group from the Curate page's tasks.

    Computed here (on a worker, with progress) when ``started`` or when the view is small
    enough for the Curate page to compute them unasked; None when not available.
    """
    s = ctx.settings
    akey = curate_ui.analysis_key(ctx)
    threshold = float(default_threshold(s.kernel))
    dkey = curate_ui.duplicates_key(ctx, threshold)
    analysis, dup = tasks.stored("curate_items", akey), tasks.stored("curate_duplicates", dkey)
    if analysis is None and (started or ctx.view.n <= curate_ui.AUTO_MAX_ITEMS):
        analysis = tasks.run(
            "curate_items",
            akey,
            curate_ui.analysis_task(ctx, curate_ui.neighbors_for(ctx.view.n)),
            "Contributions and rarity",
        )
    if dup is None and (started or ctx.view.n <= curate_ui.AUTO_MAX_ITEMS):
        dup = tasks.run(
            "curate_duplicates", dkey, curate_ui.duplicates_task(ctx, threshold), "Near-duplicates"
        )
    if analysis is None:
        return None
    contrib, rare = analysis.value
    out = {
        f"contribution (q = {format_q(s.q)})": float(
            contrib.to_frame()[f"contribution_{q_key(s.q)}"].iloc[item]
        ),
        "rarity": float(rare.to_frame()["rarity"].iloc[item]),
    }
    if dup is not None:
        label = int(dup.value.labels[item])
        out["near-duplicate group"] = (
            "none" if label < 0 else f"group {label} ({dup.value.group_of(item).size} items)"
        )
        out["_threshold"] = threshold
    return out


def item_panel(ctx, item: int) -> None:
    """The clicked item, its nearest neighbours under the kernel, its numbers, and "keep only these"."""
    view, s = ctx.view, ctx.settings
    ds = view.data
    left, right = st.columns([1, 3])
    with left:
        show_item(ds, item)
    with right:
        nn = attempt(
            lambda: neighbours(view, ctx.featurizer, s.kernel, s.kernel_params, int(item), NEIGHBOURS_K),
            "Nearest neighbours",
        )
        idx = [] if nn is None else nn.indices[0].tolist()
        if nn is not None:
            sim = nn.similarities[0].tolist()
            st.markdown(
                f"**Its {len(idx)} nearest neighbours** under the {s.kernel} kernel (similarity below each):"
            )
            show_items(ds, idx, columns=min(8, max(4, len(idx))), notes=[f"sim {v:.3f}" for v in sim])
    started = st.session_state.get("proj_numbers_started") == view.key
    numbers = item_numbers(ctx, item, started)
    if numbers is None:
        if st.button(
            "Compute its contribution, rarity and near-duplicate group",
            key="proj_numbers",
            help="The Curate page's per-item analysis of the whole view (runs on a worker, with progress; "
            "the Curate page reuses it).",
        ):
            st.session_state["proj_numbers_started"] = view.key
            st.rerun(scope="fragment")
    else:
        threshold = numbers.pop("_threshold", None)
        cols = st.columns(len(numbers))
        for col, (name, value) in zip(cols, numbers.items()):
            col.metric(name, value if isinstance(value, str) else f"{value:.4g}")
        st.caption(
            "Contribution: how much VS drops without this item (negative: VS grows without it); rarity: one "
            "minus its mean similarity to its nearest neighbours"
            + (
                f"; near-duplicates: similarity ≥ {threshold:.3f}, as on the Curate page."
                if threshold
                else "."
            )
        )
    selection_buttons(view, [int(item)] + idx, key="proj_nn",
                      what="this item and its nearest neighbours" if idx else "this item")
