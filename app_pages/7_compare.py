"""Compare: every score of every group at one n, with intervals, pairwise verdicts and a report."""

import streamlit as st

from ui import compare_ui, evaluation_ui, tasks
from ui.compare_ui import RESULTS_KEY
from ui.feedback import literal
from ui.fragments import q_local
from ui.page import header
from ui.rnd_ui import show_reliability

ctx = header(
    "Compare",
    "Which group is more diverse, and by how much? Every score is computed at the **same number of items n** "
    "(groups larger than n are subsampled without replacement and averaged), each with an interval, and each "
    "pair of groups is called **resolved** only when the interval of its difference excludes 0.",
)
q_local()  # the orders compared are the page's own; the sidebar's q appears only in the settings line
ds = ctx.view.data
groups = ds.group_names()
if len(groups) < 2:
    st.info("Compare needs at least two groups: load a dataset with a group column (or sub-folders), "
            "or select two or more groups in the sidebar.")
    st.stop()
sizes = {g: int(ds.group_indices(g).size) for g in groups}
if ds.weights is not None:
    st.caption("This dataset has item weights; the comparison ignores them (every subset is a uniform sample).")

if compare_ui.default_choice(sizes) is None:
    st.info(f"Compare needs at least two groups of at least {compare_ui.MIN_ITEMS} items (to put an interval on "
            f"their scores); these have {literal(', '.join(f'{g}: {sizes[g]}' for g in groups))}.")
    st.stop()

presentation = compare_ui.presentation_toggle()
settings, submitted = compare_ui.settings_form(sizes, ctx.settings.seed, featurizer=ctx.featurizer,
                                                collapsed=presentation)
problem = compare_ui.check(settings, sizes)
if problem and (submitted or presentation):
    st.error(problem)  # our own words, group names as literal text (compare_ui.check)
    st.stop()
left_out = compare_ui.left_out_note(sizes, settings)
# the reference role (issue 24): one group is real data, the others are judged against it
evaluation = evaluation_ui.section(ctx, groups, sizes)
key = compare_ui.result_key(ctx, settings)
out = tasks.stored("compare", key, max_entries=8)
warning = st.empty()  # said before training; a result says it with its own settings
if out is None:
    with warning.container():
        show_reliability([compare_ui.rnd_warning(ctx, settings)])
# a presentation opens on its results: a link with the mode on computes them without a click
if out is None and (submitted or (presentation and not tasks.cancelled("compare", key))):
    # open, with each stage's scores shown as soon as they are ready (Vendi first, then magnitude)
    out = tasks.run("compare", key, compare_ui.task(ctx, settings), "Comparing the groups", max_entries=8,
                    expanded=True, on_data=compare_ui.StageView())
if out is None:
    compare_ui.background_warning(ctx)  # pixel features ruled by a constant background: before a run too
    if left_out:
        st.warning(left_out, icon=":material/filter_alt:")
    st.info(f"{len(groups)} groups ({literal(', '.join(f'{g}: {sizes[g]}' for g in groups))}). Choose the settings and "
            "press **Run comparison**; results stay cached for these settings.")
    st.stop()
warning.empty()
with st.container(key=RESULTS_KEY):
    compare_ui.show(out, ctx, key, presentation, evaluation)
