"""Robustness: does the groups' ranking survive a change of representation or kernel?"""

import streamlit as st

from diversity_core.compare import MIN_ITEMS
from ui import robustness_ui, tasks
from ui.feedback import literal
from ui.page import header

ctx = header(
    "Robustness",
    "A ranking of groups is a statement **under a similarity**: a representation (pixels, a network's features, "
    "n-grams, fingerprints) and a kernel on it. Here every group is scored under every representation and kernel "
    "you choose, at the same n and with intervals; where two groups swap places, the conclusion depends on "
    "that choice.",
    features=False,
    uses_kernel=False,
)
view = ctx.view
if len(view.groups) < 2:
    st.info(
        "The robustness test ranks groups: load a dataset with a group column (or sub-folders), or select two "
        "or more groups in the sidebar."
    )
    st.stop()
robustness_ui.background_panel(view, ctx.featurizer)
pairs, q = robustness_ui.settings(view)
rows, left_out = robustness_ui.groups_used(view)
if len(set(view.data.groups[rows].tolist()) if rows.size else ()) < 2:
    st.info(f"The test needs two groups of at least {MIN_ITEMS} items; "
            f"left out: {literal(', '.join(left_out))}.")
    st.stop()
key = robustness_ui.result_key(view, pairs, q, ctx.settings.seed) if pairs else None
out = tasks.stored("robustness", key) if pairs else None
if not pairs:
    st.info("Choose at least one representation and kernel above.")
elif out is None and tasks.start_button(
    "Test the ranking",
    key="run_robustness",
    hint=f"Not run yet: {len(pairs)} comparison(s) at equal n, one per representation and kernel.",
):
    out = tasks.run(
        "robustness",
        key,
        robustness_ui.task(view, pairs, q, ctx.settings.seed),
        "Scoring the groups under every representation and kernel",
        expanded=True,
    )
if out is not None:
    robustness_ui.show(out, left_out)

st.subheader("Under every metric")
st.caption("The same groups ranked by every diversity metric, on each representation chosen: where two groups "
           "swap places between metrics, the conclusion depends on the metric.")
metrics = robustness_ui.metric_settings(view)
reps = robustness_ui.metric_representations(view, ctx.featurizer)
if metrics and reps:
    mkey = robustness_ui.metrics_key(view, reps, metrics, ctx.settings.seed)
    mout = tasks.stored("agreement", mkey)
    if mout is None and tasks.start_button(
        "Test the metrics",
        key="run_agreement",
        hint=f"Not run yet: {len(metrics)} metric(s) at equal n, with intervals.",
    ):
        mout = tasks.run(
            "agreement",
            mkey,
            robustness_ui.metrics_task(view, reps, metrics, ctx.settings.seed),
            "Scoring the groups under every metric",
            expanded=True,
        )
    if mout is not None:
        robustness_ui.show_metrics(mout)
else:
    st.info("Choose at least one metric and one representation above.")
