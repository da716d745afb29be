"""RND: diversity as the generalisation gap of a network distilling a random network."""

import streamlit as st

from ui import compute, rnd_ui
from ui.page import header

ctx = header(
    "RND score",
    "A predictor network learns to imitate a frozen random network on a random training split; on diverse "
    "data what it learns transfers poorly to the held-out items, so the normalised gap "
    "RND = (MSE_val − MSE_train) / (MSE_val + MSE_train) is large, and about 0 when the items barely vary. "
    "No kernel is involved.",
    features=False,
)
view = ctx.view

settings = rnd_ui.settings_form(view)
key = rnd_ui.result_key(view, ctx.featurizer, settings)
out = compute.stored("rnd", key)
if st.button("Run RND", type="primary", key="rnd_run"):
    out = rnd_ui.run(view, ctx.featurizer, settings)
if out is None:
    st.info("Choose the settings and press **Run RND**: training takes from seconds (a few runs of an MLP) "
            "to minutes (many runs of a CNN); a progress bar follows every epoch.")
else:
    rnd_ui.show(out, settings)
