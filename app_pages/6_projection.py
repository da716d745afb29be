"""Projection: the items on a map (PCA at once, UMAP in the background, 2-D or 3-D); hover shows an item, a click opens it."""

import streamlit as st

from diversity_core.projection import UMAP_METRICS
from diversity_core.report.figures import map_3d_figure, map_figure
from diversity_core.spectrum import is_mean_direction
from ui import compute, map_cards, map_ui, tasks
from ui.data import selection_buttons, selection_csv
from ui.data.search import meaning_box
from ui.feedback import attempt
from ui.fragments import q_local
from ui.gallery import show_items
from ui.page import header
from ui.state import KEEP

#: Selected items shown at most.
SHOW_MAX = 48

ctx = header(
    "Projection",
    "Each point is an item placed so that similar items lie close together: separate clusters are distinct "
    "kinds of items, a dense blob is repetition. Colour by group or by an eigenvector's entries (the "
    "directions the Spectrum page shows); hover a point to see its item, click it to open it with its nearest "
    "neighbours, or pick the lasso or box in the chart's toolbar to select several.",
)
view = ctx.view
data = view.data

spec = ctx.spectrum()  # its eigenvectors colour the map


@st.fragment
def projection_map() -> None:
    """The map and what is selected on it: its controls and selections redraw only this part."""
    c1, c2, c3, c4 = st.columns([1, 1, 1, 2])
    method = c1.radio("Map", ["PCA", "UMAP"], horizontal=True, key="proj_method", **KEEP)
    dims = 3 if c1.toggle("3-D", key="proj_3d", help="Rotate with the mouse; select on the 2-D map.") else 2
    k = 0 if spec.eigenvectors is None else spec.eigenvectors.shape[1]
    colour_options = (["group"] if data.groups is not None else ["none"]) + [
        f"eigenvector {j + 1}" for j in range(k)
    ]
    colour = c2.selectbox("Colour by", colour_options, key="proj_colour", **KEEP)
    query = c3.text_input(
        "Highlight",
        key="proj_highlight",
        placeholder="id, group or text",
        help="Ring the items whose id, group, text or SMILES contains this (the sidebar's search "
        "keeps only them instead).",
        **KEEP,  # in the URL like the page's other controls: a shared link keeps what is ringed
    )
    meaning_box(view, ctx.featurizer, key="proj_meaning")  # a text, an image or an item: the best matches
    projection, shown, axes = None, method, ("UMAP 1", "UMAP 2", "UMAP 3")
    if method == "UMAP":
        projection = umap_map(c4, dims)
        if projection is None:  # PCA at once, while UMAP is computed (or not asked for yet)
            st.caption("The PCA map is shown until the UMAP map is ready.")
    if projection is None:
        shown = "PCA"
        projection = attempt(
            lambda: compute.pca(view, ctx.featurizer) if dims == 2 else map_ui.pca_3d(view, ctx.featurizer),
            "PCA",
        )
        axes = ("PC 1", "PC 2", "PC 3")
        if projection is not None and projection.explained_variance_ratio is not None:
            evr = projection.explained_variance_ratio
            axes = tuple(f"PC {i + 1} ({share:.1%}{' of the variance' if i == 0 else ''})"
                         for i, share in enumerate(evr[:3]))
    if projection is not None:
        selected_items(projection, shown, colour, axes, query)


def umap_map(box, dims: int):
    """The UMAP map of the view when it is ready; else its background task's progress, or the button
    that starts it (settings in ``box``). None until the map is ready."""
    with box.expander("UMAP settings", expanded=False):
        metric = st.selectbox(
            "Metric",
            UMAP_METRICS,
            index=1 if ctx.settings.kernel == "cosine" else 0,
            key="umap_metric",
            **KEEP,
        )
        neighbours = st.slider("Neighbours", 2, 100, 15, key="umap_neighbours", **KEEP)
        min_dist = st.slider("Minimum distance", 0.0, 1.0, 0.1, 0.05, key="umap_min_dist", **KEEP)
    key = map_ui.umap_key(view, ctx.featurizer, metric, neighbours, min_dist, dims)
    out = tasks.finished("umap", key)
    if out is not None:
        return out.value
    running = tasks.background("umap")
    if running is None or running[0] != key:
        other = " A UMAP with other settings is running: starting this one cancels it." if running else ""
        if tasks.start_button(
            f"Compute {'3-D ' if dims == 3 else ''}UMAP",
            key="umap_run",
            hint="UMAP runs in the background, with progress, and the PCA map stays meanwhile: clicks, "
            "selections and other pages leave it running (only its Cancel button stops it). The first run "
            "in a process compiles UMAP's code (~30 s), then demo data takes seconds and 100,000 items a "
            "few minutes." + other,
        ):
            tasks.start_background(
                "umap", key, map_ui.umap_task(view, ctx.featurizer, metric, neighbours, min_dist, dims), "UMAP"
            )
    tasks.follow("umap", "UMAP")
    return None


def selected_items(projection, method: str, colour: str, axes: tuple, query: str) -> None:
    """The map, then the items selected on it (kept while only the colour changes)."""
    if colour.startswith("eigenvector"):
        j = int(colour.split()[-1]) - 1
        values, categorical, title = spec.eigenvectors[:, j], False, f"eigenvector {j + 1}"
        if is_mean_direction(values):  # issue 41, item 10: a one-sign vector shows no contrast
            st.caption(
                f"Eigenvector {j + 1} is the **mean direction**: its entries (from {values.min():.3g} to "
                f"{values.max():.3g}) nearly all share one sign, so its colour shows how typical each item is "
                "(how close to the average item), not a split between two kinds of items; the colour scale "
                "runs over these values only. The next eigenvectors show the directions of contrast."
            )
    else:
        values, categorical, title = compute.optional_group_labels(view), True, "group"
    cards, card_note = attempt(lambda: map_cards.page_cards(view), "Hover cards") or (None, None)
    sample = map_ui.drawn_items(view)  # None: every point is drawn
    hover = map_ui.hover_text(view, map_ui.sample_size(data.n))  # the drawn points' only
    matches = map_ui.matching_items(data, query)
    if query.strip():
        st.caption(
            f"**{matches.size}** item{'s' if matches.size != 1 else ''} match '{query.strip()}' (ringed in red)."
        )
        selection_buttons(view, matches, key="proj_matches", what="the matching items")
    caption = f"{method} of {data.n:,} items ({ctx.featurizer} features)"
    if projection.coords.shape[1] == 3:
        fig = map_3d_figure(
            projection.coords,
            color=values,
            categorical=categorical,
            hover=hover,
            color_title=title,
            title=caption,
            hover_box=cards is None,
            highlight=matches,
            sample=sample,
            colours=view.colours,
            axis_titles=axes,
        )
        st.plotly_chart(fig, key=f"projection3d_{method}_{view.key}")
        map_cards.hover_layer(cards, key=f"proj_hover3d_{view.key}")
        if card_note:
            st.caption(card_note)
        if sample is not None:
            st.caption(
                f"{data.n:,} items: the 3-D view draws a seeded sample of {sample.size:,} of them (WebGL's 3-D "
                "scatter slows past about 100,000 points); the 2-D map counts every item."
            )
        st.caption("Drag to rotate, scroll to zoom. Turn 3-D off to select items on the map.")
        return
    # the selection is the page's own state, set by the chart's callback (the figure marks it and the
    # clicked item's neighbours, so each selection draws a new chart: its return value would drop it)
    ss = st.session_state
    if ss.get("_proj_view") != view.key:  # a selection made on other items is not this view's
        ss["proj_selected"], ss["_proj_marked"] = [], []
    picked = map_ui.new_selection(projection.coords)
    if picked is not None:
        ss["proj_selected"] = picked
    selected = list(ss.get("proj_selected", []))
    nn = map_ui.item_neighbours(ctx, selected[0]) if len(selected) == 1 else None
    near = [] if nn is None else nn.indices[0].tolist()
    fig = map_figure(
        projection.coords,
        color=values,
        categorical=categorical,
        hover=hover,
        color_title=title,
        axis_titles=axes,
        title=caption,
        hover_box=cards is None,
        highlight=matches,
        neighbours=near,
        sample=sample,
        colours=view.colours,
    )
    if sample is not None:
        st.caption(
            f"{data.n:,} items: the grey image counts the items in each cell (darker: more); the "
            f"{sample.size:,} coloured points are a seeded sample. A box or lasso selects every item inside it."
        )
    # a chart drawn as before keeps showing the selection just made on it (and stays the same chart:
    # a double click clears it); a chart drawn anew marks the selection
    drawn = (view.key, method, colour, query.strip(), tuple(near))
    if picked is None or drawn != ss.get("_proj_drawn"):
        ss["_proj_marked"] = selected
    chart_key = f"projection_{method}_{view.key}"  # names the view: no selection of other items comes back
    st.plotly_chart(
        compute.mark_selected(fig, ss.get("_proj_marked", [])),
        key=chart_key,
        on_select=map_ui.selection_callback(chart_key),
        selection_mode=("points", "box", "lasso"),
    )
    ss["_proj_drawn"], ss["_proj_view"] = drawn, view.key
    map_cards.hover_layer(cards, key=f"proj_hover_{view.key}")
    if card_note:
        st.caption(card_note)
    if not selected:
        st.caption(
            "Click a point to open that item with its nearest neighbours, or pick the lasso or box in the "
            "chart's toolbar and draw around several (drag alone moves the map); a double click clears the "
            "selection."
        )
        return
    st.subheader(f"{len(selected)} selected item{'s' if len(selected) != 1 else ''}")
    if len(selected) == 1:
        map_ui.item_panel(ctx, selected[0], nn)
        return
    show_items(data, selected[:SHOW_MAX], columns=min(8, max(4, len(selected))))
    if len(selected) > SHOW_MAX:
        st.caption(f"The first {SHOW_MAX} are shown.")
    selection_buttons(view, selected, key="proj_use", what="the selected items")
    st.download_button(
        "Selected items (CSV)",
        selection_csv(view, selected),
        file_name="selected_items.csv",
        mime="text/csv",
        key="proj_csv",
        on_click="ignore",
        help="Row (0-based, in the file as loaded), id and group of each selected item.",
    )


projection_map()
q_local()  # q appears only in the settings line (a q view)
