"""Projection: the items on a 2-D map (PCA at once, UMAP on demand); select points to see them."""

import streamlit as st

from diversity_core.projection import UMAP_METRICS
from diversity_core.report.figures import projection_figure
from ui import compute, tasks
from ui.data import selection_buttons, selection_csv
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
    "directions the Spectrum page shows); hover a point for its item, click it to see the item below, or pick "
    "the lasso or box in the chart's toolbar to select several.",
)
view = ctx.view
data = view.data

spec = ctx.spectrum()  # its eigenvectors colour the map


@st.fragment
def projection_map() -> None:
    """The map and what is selected on it: its controls and selections redraw only this part."""
    c1, c2, c3 = st.columns([1, 1, 2])
    method = c1.radio("Map", ["PCA", "UMAP"], horizontal=True, key="proj_method", **KEEP)
    k = 0 if spec.eigenvectors is None else spec.eigenvectors.shape[1]
    colour_options = (["group"] if data.groups is not None else ["none"]) + [f"eigenvector {j + 1}" for j in range(k)]
    colour = c2.selectbox("Colour by", colour_options, key="proj_colour", **KEEP)
    if method == "PCA":
        projection = attempt(lambda: compute.pca(view, ctx.featurizer), "PCA")
        axes = ("PC 1", "PC 2")
        if projection is not None and projection.explained_variance_ratio is not None:
            evr = projection.explained_variance_ratio
            axes = (f"PC 1 ({evr[0]:.1%} of the variance)", f"PC 2 ({evr[1]:.1%})")
    else:
        projection, axes = umap_map(c3), ("UMAP 1", "UMAP 2")
    if projection is not None:
        selected_items(projection, method, colour, axes)


def umap_map(box):
    """The stored UMAP map of the view, or the button that computes it (settings in ``box``)."""
    with box.expander("UMAP settings", expanded=False):
        metric = st.selectbox("Metric", UMAP_METRICS, index=1 if ctx.settings.kernel == "cosine" else 0,
                              key="umap_metric", **KEEP)
        neighbours = st.slider("Neighbours", 2, 100, 15, key="umap_neighbours", **KEEP)
        min_dist = st.slider("Minimum distance", 0.0, 1.0, 0.1, 0.05, key="umap_min_dist", **KEEP)
    key = compute.umap_key(view, ctx.featurizer, metric, neighbours, min_dist)
    out = tasks.stored("umap", key)
    if out is None and tasks.start_button(
        "Compute UMAP", key="umap_run",
        hint="UMAP runs on demand: the first run in a process compiles UMAP's code (~30 s), later runs take "
             "seconds on demo data.",
    ):
        out = tasks.run("umap", key, compute.umap_task(view, ctx.featurizer, metric, neighbours, min_dist), "UMAP")
    return None if out is None else out.value


def selected_items(projection, method: str, colour: str, axes: tuple) -> None:
    """The map, then the items selected on it (kept while only the colour changes)."""
    if colour.startswith("eigenvector"):
        j = int(colour.split()[-1]) - 1
        values, categorical, title = spec.eigenvectors[:, j], False, f"eigenvector {j + 1}"
    else:
        values, categorical, title = compute.optional_group_labels(view), True, "group"
    fig = projection_figure(projection.coords, color=values, categorical=categorical,
                            hover=compute.hover_labels(data), color_title=title, axis_titles=axes,
                            title=f"{method} of {data.n} items ({ctx.featurizer} features)")
    # the selection is the page's own state: redrawing the map (other colours) keeps it
    ss = st.session_state
    signature = (view.key, method, colour)
    previous = ss.get("proj_selected", []) if ss.get("_proj_view") == view.key else []
    # the chart's key names the view: a selection made on other items never comes back as this view's
    event = st.plotly_chart(compute.mark_selected(fig, previous), key=f"projection_{method}_{view.key}",
                            on_select="rerun", selection_mode=("points", "box", "lasso"))
    selected = compute.keep_selection(previous, compute.selected_items(event), signature, ss.get("_proj_signature"))
    ss["proj_selected"], ss["_proj_signature"], ss["_proj_view"] = selected, signature, view.key
    if not selected:
        st.caption("Click a point to see that item here, or pick the lasso or box in the chart's toolbar and draw "
                   "around several (drag alone moves the map); a double click clears the selection.")
        return
    st.subheader(f"{len(selected)} selected item{'s' if len(selected) != 1 else ''}")
    show_items(data, selected[:SHOW_MAX], columns=min(8, max(4, len(selected))))
    if len(selected) > SHOW_MAX:
        st.caption(f"The first {SHOW_MAX} are shown.")
    selection_buttons(view, selected, key="proj_use", what="the selected items")
    st.download_button("Selected items (CSV)", selection_csv(view, selected), file_name="selected_items.csv",
                       mime="text/csv", key="proj_csv", on_click="ignore",
                       help="Row (0-based, in the file as loaded), id and group of each selected item.")


projection_map()
q_local()  # q appears only in the settings line (a q view)
