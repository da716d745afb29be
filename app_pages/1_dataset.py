"""Dataset: what was loaded, how many items per group, what was skipped and why."""

import pandas as pd
import streamlit as st

import ui.data as uidata
from diversity_core.report.figures import bar_figure, histogram_figure
from ui import compute
from ui.feedback import attempt, literal, plain, show_warning
from ui.gallery import show_items
from ui.page import header

#: Items previewed per group.
PREVIEW = 16

ctx = header(
    "Dataset",
    "The items every page measures: a preview of each group, the number of items per group, and the "
    "entries that could not be loaded; all scores below are computed on the selected groups and subsample.",
    features=False,
    uses_kernel=False,
)
view = ctx.view
full = view.full
summary = full.summary()

c1, c2, c3, c4 = st.columns(4)
c1.metric("Items loaded", f"{(view.loaded or full).n}")
c2.metric("Items selected", f"{view.n}")
c3.metric("Groups", f"{len(summary['groups']) if full.groups is not None else 0}")
c4.metric("Skipped on loading", f"{summary['skipped']['count']}")
st.caption(f"Source: {literal(uidata.shown_source(full.source))} · modality: **{full.modality}**"
           + (f" · {summary['n_features']} feature dimensions" if summary["n_features"] else "")
           + (f" · item shape {summary['item_shape']}" if summary["item_shape"] else "")
           + f" · content hash `{full.content_hash[:12]}`")
if full.detected:  # how the loader read the file: modality, delimiter, the group column it found
    st.caption(f"Read as: {literal(plain(full.detected))}")

counts = summary["groups"]
left, right = st.columns([3, 2])
with left:
    st.plotly_chart(bar_figure(list(counts), list(counts.values()), y_title="items", title="Items per group",
                               colours=view.colours),
                    key="group_counts")
with right:
    table = pd.DataFrame({"group": list(counts), "items": list(counts.values())})
    if summary["weights"]:
        table["total weight"] = [summary["weights"][g] for g in counts]
    st.dataframe(table, hide_index=True, width="stretch")

st.subheader("Preview")
data = view.data
names = data.group_names() or [None]
tabs = st.tabs([literal(g) if g is not None else "all items" for g in names])  # tab labels are Markdown
for tab, g in zip(tabs, names):
    with tab:
        idx = (data.group_indices(g) if g is not None else range(data.n))[:PREVIEW]
        show_items(data, idx, columns=8)

if data.features is not None:
    st.subheader("Embeddings")
    X = attempt(lambda: compute.features(view, "embeddings"), "Reading the embeddings")
    if X is not None:
        c1, c2 = st.columns([1, 2])
        c1.dataframe(pd.DataFrame({"property": list(compute.feature_summary(X)),
                                   "value": [str(v) for v in compute.feature_summary(X).values()]}),
                     hide_index=True, width="stretch")
        c2.plotly_chart(histogram_figure(compute.norms(X), x_title="Euclidean norm of the embedding",
                                         title="Norms of the embeddings"), key="norms")

st.subheader("Skipped on loading")
skipped = full.skipped
if not skipped:
    st.success("Every entry was loaded; nothing was skipped.")
else:
    reasons = summary["skipped"]["reasons"]
    show_warning(f"{len(skipped)} entries were skipped: "
                 + ", ".join(f"{count} × {reason}" for reason, count in reasons.items()) + ".")
    st.dataframe(pd.DataFrame([s.to_dict() for s in skipped[:500]]), hide_index=True, width="stretch")
    if len(skipped) > 500:
        st.caption(f"The first 500 of {len(skipped)} are listed.")
