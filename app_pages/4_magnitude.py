"""Magnitude: the effective number of distinct points seen at each scale t, per group."""

import streamlit as st

from ui import magnitude_ui, tasks
from ui.page import header

ctx = header(
    "Magnitude",
    "Mag(t) counts the effective number of distinct points when distances are looked at with scale t: "
    "it rises from 1 (everything blurred into one point) to the number of distinct points; a curve that "
    "rises early and high belongs to a more diverse set, and MagArea, the area under it up to a shared "
    "t_cut, sums that up in one number.",
    uses_kernel=False,
)
view = ctx.view

settings = magnitude_ui.settings_form(view, ctx.featurizer)
caveat = magnitude_ui.size_caveat(view, settings)  # as the Scores page: MagArea grows with the items
if caveat:
    st.warning(caveat, icon=":material/straighten:")
problem = magnitude_ui.equal_n_problem(view, settings)
if problem:
    st.error(problem)
    st.stop()
key = magnitude_ui.result_key(view, ctx.featurizer, settings)
out = tasks.stored("magnitude", key)
if out is None and ((not magnitude_ui.needs_click(view) and not tasks.cancelled("magnitude", key)) or tasks.start_button(
    "Compute magnitude", key="mag_run",
    hint=f"{view.n} items: magnitude solves one n × n system per scale and set, so it starts on demand.",
)):
    out = tasks.run("magnitude", key, magnitude_ui.task(view, ctx.featurizer, settings), "Computing magnitude")
if out is not None:
    if settings.equal_n:
        magnitude_ui.show_equal_n(out, view)
    else:
        magnitude_ui.show(out)

st.subheader("Magnitude dimension")
st.markdown("How fast magnitude grows with the scale: d log Mag / d log t, the local dimension the points show at "
            "scale t. Its maximum, the **magnitude dimension**, is close to the intrinsic dimension of the data.")
dkey = magnitude_ui.dimension_key(view, ctx.featurizer, settings)
dims = tasks.stored("magnitude_dimension", dkey)
out_of_reach = magnitude_ui.dimension_out_of_reach(view, settings)
if out_of_reach:
    st.info(out_of_reach)
else:
    if dims is None and ((not magnitude_ui.needs_click(view) and not tasks.cancelled("magnitude_dimension", dkey))
                         or tasks.start_button("Compute the magnitude dimension", key="mag_dim_run", primary=False,
                                               hint="One more magnitude curve per set, with its exact slope.")):
        dims = tasks.run("magnitude_dimension", dkey, magnitude_ui.dimension_task(view, ctx.featurizer, settings),
                         "Computing the magnitude dimension")
    if dims is not None:
        magnitude_ui.show_dimension(dims)
st.caption("Distances between the chosen representation's vectors; exact duplicates are merged first (a "
           "multiset has the magnitude of its distinct points). t_conv is where Mag reaches 95 % of the "
           "distinct points.")
