"""RND: diversity as the generalisation gap of a network distilling a random network."""

import streamlit as st

from ui import rnd_ui, tasks
from ui.page import header

ctx = header(
    "RND score",
    "A predictor network learns to imitate a frozen random network on a random training split; on diverse "
    "data what it learns transfers poorly to the held-out items, so the normalised gap "
    "RND = (MSE_val − MSE_train) / (MSE_val + MSE_train) is large, and about 0 when the items barely vary. "
    "No kernel is involved.",
    features=False,
    uses_kernel=False,
)
view = ctx.view

settings = rnd_ui.settings_form(view, ctx.featurizer)
# groups (or a pooled set) too small for a meaningful score: said before training and beside the result
rnd_ui.show_reliability([rnd_ui.small_groups_warning(view, settings)])
key = rnd_ui.result_key(view, ctx.featurizer, settings)
out = tasks.stored("rnd", key)
warning = st.empty()  # the setting's warning before training; a result shows its own
if out is None:
    with warning.container():
        message = rnd_ui.regime_warning(view, ctx.featurizer, settings)
        rnd_ui.show_reliability([message])
        if message:
            rnd_ui.offer_reliable(view, ctx.featurizer, settings)
if out is None and tasks.start_button(
    "Run RND", key="rnd_run",
    hint="Choose the settings and press **Run RND**: training takes from seconds (a few runs of an MLP) to "
         "minutes (many runs of a CNN); a progress bar follows every epoch and the curves grow as they train.",
):
    out = tasks.run("rnd", key, rnd_ui.task(view, ctx.featurizer, settings), "Training RND", expanded=True,
                    on_data=rnd_ui.LiveCurves(settings))
if out is not None:
    warning.empty()
    rnd_ui.show(out, settings)
