"""Projection page helpers: the maps of any size, what a selection on them holds, and the item a click opens.

- Maps of up to :data:`SCATTER_MAX` items are drawn point by point; larger ones as a density
  image with a seeded sample of :data:`DENSITY_SAMPLE` points on top (:func:`drawn_items`), which
  carries hover and lets the box and lasso select; the items the boxes and lassos hold are found
  in the coordinates (:func:`diversity_core.projection.points_in_regions`), so a selection is
  exact at any size. Each selection reaches the page through the chart's callback
  (:func:`selection_callback`, :func:`new_selection`): the figure marks the selection and the
  clicked item's neighbours, so it changes with them, and a chart's event would otherwise
  belong to the figure drawn last. The 3-D view draws the same sample above :data:`SCATTER_MAX`. The figures
  themselves are the core's (:func:`diversity_core.report.figures.map_figure`,
  :func:`~diversity_core.report.figures.map_3d_figure`), so the report and notebooks draw the
  same maps.
- The hover cards of the drawn points are :mod:`ui.map_cards`'s (their pictures
  :mod:`ui.card_pictures`'s).
- A click opens the item with its nearest neighbours under the current kernel
  (:func:`diversity_core.curation.nearest_items`), its per-item numbers from the Curate page's
  tasks (contributions, rarity, near-duplicate group) and "keep only these" into the selection.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import streamlit as st

from diversity_core import format_q, q_key
from diversity_core.curation import default_threshold, nearest_items
from diversity_core.data.images import enlarge_thumbnail
from diversity_core.data.search import contains_any_mask
from diversity_core.projection import points_in_regions, project

from . import compute, curate_ui, tasks
from .cache import shared_cache
from .data import View, selection_buttons
from .feedback import attempt, literal
from .gallery import first_words, molecule_png, show_items

#: Largest map drawn point by point; larger maps are a density image with a sample of points on top.
SCATTER_MAX = 200_000
#: Points drawn over a density view, and in a 3-D view above :data:`SCATTER_MAX` (they carry hover
#: and make the box and lasso work; plotly's WebGL keeps 20,000 points interactive on a laptop GPU).
DENSITY_SAMPLE = 20_000
#: Neighbours shown for a clicked item (and ringed on the map).
NEIGHBOURS_K = 8
#: Session-state key of the map's selection event since the page's last run (:func:`selection_callback`).
_EVENT = "_proj_event"
#: Session-state key of the boxes and lassos of the map's last selection event.
_REGIONS = "_proj_regions"


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


@shared_cache("results", hash_funcs=compute.HASH)
def hover_text(view: View, size: int = 0) -> list:
    """Plotly's hover text of the items a map draws (:func:`ui.compute.hover_labels`, kept per view):
    every item, or (``size``) the seeded sample of :func:`density_sample` only."""
    ds = view.data
    return compute.hover_labels(ds if not size else ds.subset(density_sample(view, size)))


# ------------------------------------------------------------------------------------------
# selections
# ------------------------------------------------------------------------------------------
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


def selection_callback(chart_key: str):
    """The map's ``on_select`` callback: it keeps the event of the chart the user selected on.

    Streamlit names a chart by its figure, and the figure marks the selection (and a clicked
    item's neighbours), so the figure a run draws is not the one the user selected on: the
    chart's return value, the new figure's, would drop the selection (issue 41, item 6: every
    other box or lasso, and each one after a click). The callback runs before the page, for the
    chart that was acted on; :func:`new_selection` reads what it kept.
    """

    def keep() -> None:
        st.session_state[_EVENT] = st.session_state.get(chart_key)

    return keep


def _regions(event) -> tuple:
    """The boxes and lassos of a selection event, as plain values (comparable)."""
    try:
        selection = event.selection
        shapes = list(selection.get("box") or []) + list(selection.get("lasso") or [])
    except (AttributeError, KeyError, TypeError):
        return ()
    return tuple((tuple(s.get("x") or ()), tuple(s.get("y") or ())) for s in shapes)


def new_selection(coords: np.ndarray) -> Optional[list]:
    """The items of the selection made on the map since the last run (empty: the user deselected),
    or None when none was made; a lasso it cannot use is shown as an error and read as its points.

    A click on a chart that keeps a box or lasso (plotly keeps them in the chart's layout and sends
    them with the click's point) selects the clicked point: its event carries the same regions as
    the last one and new points.
    """
    ss = st.session_state
    if _EVENT not in ss:
        return None
    event = ss.pop(_EVENT)
    regions, before = _regions(event), ss.get(_REGIONS)
    ss[_REGIONS] = regions
    points = compute.selected_items(event)
    if regions and regions == before and points:
        return points
    return attempt(lambda: region_items(coords, event), "Selection") or points


def matching_items(ds, text: str) -> np.ndarray:
    """Items whose id, group or content (the text, the SMILES) contains ``text`` (case-insensitive),
    by :func:`diversity_core.data.search.contains_any_mask`."""
    return np.flatnonzero(contains_any_mask(ds, str(text)))


# ------------------------------------------------------------------------------------------
# the clicked item
# ------------------------------------------------------------------------------------------
@shared_cache("results", hash_funcs=compute.HASH)
def neighbours(view: View, featurizer: str, kernel: str, kernel_params: tuple, item: int, k: int):
    """The ``k`` nearest neighbours of ``item`` under the kernel (a :class:`~diversity_core.curation.Neighbours`)."""
    X = compute.features(view, featurizer, show_progress=False)
    return nearest_items(X, [int(item)], k=min(int(k), view.n - 1), kernel=kernel, **dict(kernel_params))


def item_neighbours(ctx, item: int):
    """The clicked item's :data:`NEIGHBOURS_K` nearest neighbours under the kernel (None, with the
    error shown, when they cannot be found): the item panel lists them and the map rings them."""
    s = ctx.settings
    return attempt(
        lambda: neighbours(ctx.view, ctx.featurizer, s.kernel, s.kernel_params, int(item), NEIGHBOURS_K),
        "Nearest neighbours",
    )


def show_item(ds, i: int) -> None:
    """One item, large: the image, the drawing and its SMILES, or the whole text."""
    if ds.modality == "images":
        st.image(enlarge_thumbnail(ds.items[i], 160), clamp=True)
    elif ds.modality == "molecules":
        png = molecule_png(str(ds.items[i]), size=240)
        if png is not None:
            st.image(png)
        st.code(str(ds.items[i]), language=None, wrap_lines=True)
    elif ds.modality == "text":
        st.markdown(literal(first_words(ds.items[i], 1200)))
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


def item_panel(ctx, item: int, nn) -> None:
    """The clicked item, its nearest neighbours under the kernel (``nn``, :func:`item_neighbours`; None
    when they could not be found), its numbers, and "keep only these"."""
    view, s = ctx.view, ctx.settings
    ds = view.data
    left, right = st.columns([1, 3])
    with left:
        show_item(ds, item)
    with right:
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
