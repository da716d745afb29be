"""Curate: which items add diversity, which are near-duplicates, which k items keep the most of it."""

import streamlit as st

from diversity_core.curation import default_threshold
from diversity_core.curation.selection import METHODS
from diversity_core.data.export import item_file_type, items_file, items_file_note
from ui import curate_ui, tasks
from ui.data import selection_buttons
from ui.gallery import show_items
from ui.page import header
from ui.state import KEEP

ctx = header(
    "Curate",
    "From a score to what to do about it: each item's contribution is how much VS_q drops when it is "
    "removed (negative for redundant items), rarity is one minus its mean similarity to its nearest "
    "neighbours, near-duplicates are groups above a similarity threshold, and the greedy selection keeps "
    "the k items that hold the most diversity.",
)
view, s = ctx.view, ctx.settings
data = view.data
auto = view.n <= curate_ui.AUTO_MAX_ITEMS

# -- near-duplicates first: the item table shows each item's group ------------------------
st.subheader("Near-duplicates")
threshold = st.slider("Similarity threshold (a pair at or above it is a near-duplicate)", 0.5, 1.0,
                      float(default_threshold(s.kernel)), 0.005, format="%.3f", key="curate_threshold", **KEEP)
dkey = curate_ui.duplicates_key(ctx, threshold)
dup_out = tasks.stored("curate_duplicates", dkey)
if dup_out is None and ((auto and not tasks.cancelled("curate_duplicates", dkey)) or tasks.start_button(
        "Find near-duplicates", key="curate_dup_run",
        hint=f"{view.n} items: the search compares every pair, so it starts on demand.")):
    dup_out = tasks.run("curate_duplicates", dkey, curate_ui.duplicates_task(ctx, threshold),
                        "Finding near-duplicates")
dup = None if dup_out is None else dup_out.value
dup_slot = st.container()

# -- contributions and rarity ----------------------------------------------------------------
st.subheader("Items: contribution and rarity")
akey = curate_ui.analysis_key(ctx)
items_out = tasks.stored("curate_items", akey)
if items_out is None and ((auto and not tasks.cancelled("curate_items", akey)) or tasks.start_button(
        "Compute contributions and rarity", key="curate_items_run",
        hint=f"{view.n} items: one eigenvalue problem per item, so it starts on demand.")):
    items_out = tasks.run("curate_items", akey, curate_ui.analysis_task(ctx, curate_ui.neighbors_for(view.n)),
                          "Computing contributions and rarity")


@st.fragment
def items_view(contrib, rare) -> None:
    """The item table and the galleries: ticking rows, sorting and items per gallery redraw only this part."""
    table = curate_ui.item_table(view, contrib, rare, dup, s.q)
    # keyed by the view: ticked rows of another view's table never come back as this one's
    ticked = st.dataframe(table, hide_index=True, width="stretch", key=f"curate_items_table_{view.key}",
                          on_select="rerun", selection_mode="multi-row", **curate_ui.table_options(view))
    st.caption(f"Contributions by {contrib.method.replace('_', ' ')} leave-one-out ({contrib.spectrum_method} path); "
               f"VS (q = {s.q_label}) of all items is {contrib.vendi[contrib.qs.index(s.q)]:.3f}. "
               "Click a column header to sort; tick rows (left edge) to see those items and use them on every page.")
    picked = curate_ui.ticked_items(table, ticked)
    if picked:
        st.caption(f"{len(picked)} ticked row{'s' if len(picked) != 1 else ''}" + (", the first 32 shown" if len(picked) > 32 else ""))
        show_items(data, picked[:32], columns=8)
        selection_buttons(view, picked, key="curate_rows", what="the ticked rows")
    m = st.slider("Items per gallery", 4, 32, 8, 4, key="curate_m", **KEEP)
    c = contrib.contribution(s.q)
    for label, idx in (("Adding the most diversity", contrib.top(m, q=s.q)),
                       ("Most redundant", contrib.bottom(m, q=s.q))):
        st.caption(label)
        show_items(data, idx, columns=8, notes=[f"{c[i]:+.3g}" for i in idx])


if items_out is not None:
    items_view(*items_out.value)
    tasks.show_notes(items_out)

with dup_slot:
    if dup is not None:
        curate_ui.show_duplicates(view, dup, s.q)
        tasks.show_notes(dup_out)

# -- the k most diverse items ------------------------------------------------------------------
st.subheader("Select the k most diverse")
c1, c2, c3 = st.columns(3)
k = c1.slider("k", 1, view.n, min(50, view.n), key="curate_k", **KEEP)
seed = int(c3.number_input("Seed (first item, random order)", 0, 2**31 - 1, 0, key="curate_seed", **KEEP))
skey = curate_ui.selection_key(ctx, k, seed)
sel_out = tasks.stored("curate_selection", skey)
if sel_out is None and ((auto and k <= curate_ui.AUTO_MAX_K and not tasks.cancelled("curate_selection", skey))
                        or tasks.start_button("Select", key="curate_select_run",
                                              hint=f"Choosing {k} of {view.n} items by every method starts on demand.")):
    sel_out = tasks.run("curate_selection", skey, curate_ui.selection_task(ctx, k, seed), "Selecting items")


@st.fragment
def selection_view(box, comparison) -> None:
    """The method (drawn in ``box``) and its selection: every method is computed, so choosing one redraws only this."""
    method = box.radio("Method", list(METHODS), format_func=curate_ui.METHOD_LABELS.get, horizontal=True,
                       key="curate_method", **KEEP)
    if comparison is None:
        return
    sel = comparison.selections[method]
    st.plotly_chart(curate_ui.selection_figure(comparison, s.q), key="curate_curves")
    st.dataframe(curate_ui.selection_frame(view, sel, with_items=True), hide_index=True, width="stretch",
                 key="curate_selected", **curate_ui.table_options(view))
    d1, d2 = st.columns(2)
    d1.download_button("Selected ids (CSV)", curate_ui.selection_csv(view, sel), file_name=f"selected_{method}_{k}.csv",
                       mime="text/csv", key="curate_csv", on_click="ignore")
    file_type = item_file_type(data.modality)
    if file_type is not None:  # written only when the button is pressed (a zip of images takes seconds)
        ext, mime = file_type
        d2.download_button(f"Selected items ({ext})", lambda: items_file(data, sel.indices)[0],
                           file_name=f"selected_{method}_{k}{ext}", mime=mime, key="curate_items", on_click="ignore")
    (d2 if file_type is not None else d1).caption(items_file_note(data))
    show_items(data, sel.indices[:32], columns=8, notes=[f"#{r + 1}" for r in range(min(32, sel.k))])
    selection_buttons(view, sel.indices, key="curate_sel", what=f"the {k} items chosen by {curate_ui.METHOD_LABELS[method]}")


selection_view(c2, None if sel_out is None else sel_out.value)
if sel_out is not None:
    tasks.show_notes(sel_out)
