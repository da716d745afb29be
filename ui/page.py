"""What every page starts with: a title, one sentence on what its numbers mean, the context."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from diversity_core import get_kernel

from . import compute
from .data import View, current_view
from .feedback import literal, require, show_warning
from .fragments import current_q_label, q_local, q_view
from .state import Settings, settings

#: Above this many items, pages mention that a kernel without a feature map is slow.
DENSE_HINT = 4000


@dataclass(frozen=True)
class Context:
    """The view, the settings and the features a page works on."""

    view: View
    settings: Settings
    featurizer: str

    @property
    def kernel_args(self) -> tuple:
        """``(view, featurizer, kernel, kernel_params)``, the arguments of the cached wrappers."""
        return (self.view, self.featurizer, self.settings.kernel, self.settings.kernel_params)

    def spectrum(self):
        """The cached spectrum of the view (a hint first when it needs the slow dense path)."""
        n = self.view.n
        if n > DENSE_HINT and not get_kernel(self.settings.kernel).has_feature_map:
            st.caption(f"The {self.settings.kernel} kernel has no finite feature map, so the spectrum needs a dense "
                       f"{n} × {n} eigendecomposition (O(n³)); a subsample in the sidebar makes it faster.")
        spec = require(lambda: compute.spectrum(*self.kernel_args), "Computing the spectrum")
        for note in compute.spectrum_notes(*self.kernel_args):
            st.caption(f"Note from the computation: {literal(note)}")
        return spec


def header(title: str, explanation: str, *, features: bool = True, uses_kernel: bool = True) -> Context:
    """Draw the page's title and explanation; return its context (features computed if asked).

    The settings line shows only what the page uses (no kernel or q where none is involved; q
    in a q view of :mod:`ui.fragments`, so moving q redraws it alone); raw features whose scales differ by orders of magnitude get a warning with the fix.
    """
    st.title(title)
    st.markdown(explanation)
    view = require(current_view, "Preparing the data")
    s = settings()
    featurizer = require(lambda: compute.resolve_featurizer(view.data, s.featurizer), "Choosing the representation")
    kernel = s.kernel + "".join(f", {k} = {v:g}" if isinstance(v, float) else f", {k} = {v}" for k, v in s.kernel_params)
    prep = ""
    if view.preprocess:
        steps, k = view.preprocess
        prep = " · preprocessed: " + " → ".join(f"PCA to {k}" if st_ == "pca" else st_ for st_ in steps)
    # the description names the file (a visitor's upload): literal text, like every user string
    line = f"{literal(view.description)} · representation **{literal(featurizer)}**{prep}"
    if uses_kernel:
        @q_view("settings_line")
        def settings_line() -> None:
            st.caption(f"{line} · kernel **{kernel}** · q = {current_q_label()}")

        settings_line()
    else:
        st.caption(line)
        q_local()  # nothing on a page without a kernel reads q
    if features:
        require(lambda: compute.features(view, featurizer), f"Computing {featurizer} features")
        if not view.preprocess:
            note = compute.scale_note(view, featurizer)
            if note:
                show_warning(note, icon=":material/straighten:")
    return Context(view=view, settings=s, featurizer=featurizer)
