"""Projection page helpers: maps of any size, hover cards, and the item a click opens.

- Maps of up to :data:`SCATTER_MAX` items are drawn point by point (WebGL above 3,000 points);
  larger ones as a density image (:func:`diversity_core.projection.density_grid`) with a seeded
  sample of points on top, which carries hover and lets the box and lasso select; the items a
  box or lasso holds are found in the coordinates (:func:`diversity_core.projection.points_in_region`),
  so a selection is exact at any size.
- Hover cards: plotly's hover boxes hold text only, so :func:`hover_layer` mounts a small
  ``st.components.v2`` script beside the chart that listens to the chart's ``plotly_hover``
  events (plotly.js's public event API) and shows the item: its thumbnail, its molecule drawing
  and SMILES, or its first lines of text. The cards travel with the page (no request per hover,
  nothing from the network); views whose cards exceed :data:`CARD_BYTES` keep plotly's text hover.
- A click opens the item with its nearest neighbours under the current kernel
  (:func:`diversity_core.curation.nearest_items`), its per-item numbers from the Curate page's
  tasks (contributions, rarity, near-duplicate group) and "keep only these" into the selection.
"""

from __future__ import annotations

import base64
import io
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core._orders import format_q, q_key
from diversity_core.curation import default_threshold, nearest_items
from diversity_core.projection import density_grid, points_in_region, project
from diversity_core.report.figures import projection_figure

from . import compute, curate_ui, tasks
from .cache import shared_cache
from .data import View, selection_buttons
from .feedback import literal
from .gallery import molecule_png, show_items

#: Largest map drawn point by point; larger maps are a density image with a sample of points on top.
SCATTER_MAX = 200_000
#: Points drawn over a density view (they carry hover and make the box and lasso work).
DENSITY_SAMPLE = 20_000
#: Cells of the density image (x, y).
DENSITY_BINS = (480, 320)
#: Bytes of hover cards a page carries at most (thumbnails, drawings, text); beyond, text hover only.
CARD_BYTES = 8_000_000
#: Molecules drawn for hover cards at most: RDKit takes 5-16 ms a drawing (measured on a busy
#: 2-core machine), so larger views show the SMILES alone on hover and the drawing on a click.
CARD_DRAWINGS_MAX = 500
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
    """Whether a map of ``n`` items is drawn as a density image."""
    return n > SCATTER_MAX


@shared_cache("results", hash_funcs=compute.HASH)
def density_sample(view: View, n: int) -> np.ndarray:
    """The seeded sample of items drawn over a density view (sorted)."""
    rng = np.random.default_rng(0)
    return np.sort(rng.choice(n, size=min(n, DENSITY_SAMPLE), replace=False))


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

    Each point's ``customdata`` is its item. With ``cards`` plotly's own hover box is turned off
    (the hover layer shows the item instead); ``highlight`` rings the items matching a search.
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
        sub = lambda v: None if v is None else [v[i] for i in sample]  # noqa: E731
        fig = projection_figure(
            XY[sample],
            color=sub(color),
            categorical=categorical,
            hover=sub(hover),
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
):
    """The 3-D map in the 2-D map's colours (rotate with the mouse; selection works on the 2-D map)."""
    import plotly.graph_objects as go

    from diversity_core.report.figures import PALETTE, escape_label

    XYZ = projection.coords
    n = XYZ.shape[0]
    size = 2 if n > 20_000 else 3 if n > 2000 else 4
    fig = go.Figure()
    text = None if hover is None else np.asarray(hover, dtype=object)
    if color is None or categorical:
        labels = np.asarray(["all items"] * n if color is None else [escape_label(c) for c in color])
        for g, label in enumerate(dict.fromkeys(labels.tolist())):
            sel = labels == label
            fig.add_trace(
                go.Scatter3d(
                    x=XYZ[sel, 0],
                    y=XYZ[sel, 1],
                    z=XYZ[sel, 2],
                    mode="markers",
                    name=label,
                    marker={"size": size, "opacity": 0.8, "color": PALETTE[g % len(PALETTE)]},
                    customdata=np.flatnonzero(sel),
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
                    "color": values,
                    "colorscale": "RdBu",
                    "cmin": -lim,
                    "cmax": lim,
                    "colorbar": {"title": color_title},
                },
                customdata=np.arange(n),
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
        fig.add_trace(
            go.Scatter3d(
                x=XYZ[shown, 0],
                y=XYZ[shown, 1],
                z=XYZ[shown, 2],
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
        scene=dict(xaxis_title="1", yaxis_title="2", zaxis_title="3"),
    )
    return fig


def region_items(coords: np.ndarray, event) -> list:
    """The items inside the last box or lasso of a chart's selection event (empty when none)."""
    try:
        selection = event.selection
        boxes, lassos = list(selection.get("box") or []), list(selection.get("lasso") or [])
    except (AttributeError, KeyError, TypeError):
        return []
    XY = np.asarray(coords)[:, :2]
    if lassos:
        last = lassos[-1]
        return points_in_region(XY, lasso=(last["x"], last["y"])).tolist()
    if boxes:
        last = boxes[-1]
        xs, ys = last["x"], last["y"]
        return points_in_region(XY, box=(min(xs), max(xs), min(ys), max(ys))).tolist()
    return []


def matching_items(ds, text: str) -> np.ndarray:
    """Items whose id, group or content (the text, the SMILES) contains ``text`` (case-insensitive)."""
    needle = str(text).strip().lower()
    if not needle:
        return np.zeros(0, dtype=np.int64)
    columns = [ds.ids]
    if ds.groups is not None:
        columns.append(ds.groups)
    if ds.modality in ("text", "molecules"):
        columns.append(ds.items)
    hit = np.zeros(ds.n, dtype=bool)
    for col in columns:
        hit |= np.char.find(np.char.lower(np.asarray(col, dtype=str)), needle) >= 0
    return np.flatnonzero(hit)


# ------------------------------------------------------------------------------------------
# hover cards
# ------------------------------------------------------------------------------------------
@shared_cache("results", hash_funcs=compute.HASH)
def hover_text(view: View) -> list:
    """Plotly's hover text of every item of the view (:func:`ui.compute.hover_labels`, kept per view)."""
    return compute.hover_labels(view.data)


def _png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _thumbnail_png(img) -> bytes:
    from PIL import Image

    a = np.asarray(img)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(a.astype(np.uint8))).save(buf, format="PNG", optimize=False)
    return buf.getvalue()


@shared_cache("drawings", spinner="Preparing the hover cards…", hash_funcs=compute.HASH)
def hover_cards(view: View) -> Optional[dict]:
    """What hovering each item of the view shows, or None when the cards exceed :data:`CARD_BYTES`.

    ``{"kind": modality, "ids": [...], "groups": [...] or None, "img": [data URI or ""],
    "text": [...]}``, one entry per item in view order.
    """
    ds = view.data
    n = ds.n
    if ds.modality == "embeddings":
        return None
    img, text = [""] * n, [""] * n
    if ds.modality == "images":
        if (len(_thumbnail_png(ds.items[0])) * 4 // 3 + 60) * n > CARD_BYTES:
            return None
        img = [_png_uri(_thumbnail_png(ds.items[i])) for i in range(n)]
    elif ds.modality == "molecules":
        if (len(str(ds.items[0])) + 60) * n > CARD_BYTES:
            return None
        text = [str(s) for s in ds.items]
        if n <= CARD_DRAWINGS_MAX:
            for i in range(n):
                png = molecule_png(text[i])
                img[i] = "" if png is None else _png_uri(png)
    else:
        if (CARD_TEXT_CHARS + 60) * n > CARD_BYTES:
            return None
        text = [_first_words(ds.items[i], CARD_TEXT_CHARS) for i in range(n)]
    if sum(len(s) for s in img) + sum(len(s) for s in text) > CARD_BYTES:
        return None
    groups = None if ds.groups is None else [str(g) for g in ds.groups]
    return {"kind": ds.modality, "ids": [str(i) for i in ds.ids], "groups": groups, "img": img, "text": text}


def _first_words(text, limit: int) -> str:
    t = " ".join(str(text).split())
    if len(t) <= limit:
        return t
    cut = t[: limit - 1].rsplit(" ", 1)[0]
    return (cut or t[: limit - 1]) + "…"


_HOVER_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  const anchor = parentElement;
  const cards = data && data.cards;
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
  const show = (ev) => {
    const p = ev && ev.points && ev.points[0];
    if (!p || !cards) return;
    let i = Array.isArray(p.customdata) ? p.customdata[0] : p.customdata;
    i = Number(i);
    if (!Number.isInteger(i) || i < 0 || i >= cards.ids.length) return;
    card.replaceChildren();
    card.dataset.item = String(i);
    if (cards.img[i]) {
      const img = document.createElement("img");
      img.src = cards.img[i];
      img.alt = cards.ids[i];
      img.style.cssText = cards.kind === "images"
        ? "width:112px;height:112px;object-fit:contain;image-rendering:pixelated;display:block;margin-bottom:4px;"
        : "width:160px;height:160px;display:block;margin-bottom:4px;";
      card.appendChild(img);
    }
    if (cards.text[i]) {
      const t = document.createElement("div");
      t.className = "dx-card-text";
      t.textContent = cards.text[i];
      t.style.cssText = cards.kind === "molecules" ? "font-family:monospace;word-break:break-all;" : "white-space:normal;";
      card.appendChild(t);
    }
    const id = document.createElement("div");
    id.className = "dx-card-id";
    id.textContent = cards.ids[i] + (cards.groups ? " · " + cards.groups[i] : "");
    id.style.cssText = "color:#666;font-size:11px;margin-top:3px;word-break:break-all;";
    card.appendChild(id);
    const e = ev.event || {};
    const x = e.clientX ?? mouse.x, y = e.clientY ?? mouse.y;
    card.style.display = "block";
    const w = card.offsetWidth, h = card.offsetHeight;
    card.style.left = Math.max(4, Math.min(window.innerWidth - w - 4, x + 16)) + "px";
    card.style.top = Math.max(4, Math.min(window.innerHeight - h - 4, y + 16)) + "px";
  };
  const hide = () => { card.style.display = "none"; };
  const attach = () => {
    const plots = Array.from(document.querySelectorAll(".js-plotly-plot")).filter(
      (p) => p.compareDocumentPosition(anchor) & Node.DOCUMENT_POSITION_FOLLOWING);
    const gd = plots[plots.length - 1];
    if (!gd || typeof gd.on !== "function" || gd.__dxCards === cards) return;
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


def hover_layer(cards: Optional[dict], *, key: str) -> None:
    """Mount the hover cards of the chart drawn just above (nothing when ``cards`` is None)."""
    global _HOVER
    if cards is None:
        return
    if _HOVER is None:
        from streamlit.components.v2 import component

        _HOVER = component("diversity_map_hover", js=_HOVER_JS, isolate_styles=False)
    _HOVER(data={"cards": cards}, key=key, height="content")


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
            "none" if label < 0 else f"group {label} ({int(np.sum(dup.value.labels == label))} items)"
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
        nn = neighbours(view, ctx.featurizer, s.kernel, s.kernel_params, int(item), NEIGHBOURS_K)
        idx, sim = nn.indices[0].tolist(), nn.similarities[0].tolist()
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
    selection_buttons(view, [int(item)] + idx, key="proj_nn", what="this item and its nearest neighbours")
