"""Magnitude page helpers: the settings, the task (see :mod:`ui.tasks`) and the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core.featurizers import default_kernel
from diversity_core.figures import magnitude_figure
from diversity_core.magnitude import compare_magnitude

from . import compute
from .state import KEEP
from .tasks import Outcome, show_notes

#: Sets of at most this many items in all are computed without a click.
AUTO_MAX_ITEMS = 1500
METRICS = {"euclidean": "Euclidean", "cityblock": "L1 (city block)", "cosine": "cosine distance",
           "tanimoto": "Tanimoto (Jaccard) distance"}
#: The distance selectors' first option: the representation's own distance (:func:`default_metric`).
AUTO = "auto"


def default_metric(featurizer: str) -> str:
    """The distance a representation is meant for: Tanimoto for fingerprints, Euclidean otherwise.

    Fingerprints are the representations whose kernel is the Tanimoto kernel (``morgan``); their
    Euclidean distance counts differing bits and ranks a focused series above a diverse library.
    """
    return "tanimoto" if default_kernel(featurizer) == "tanimoto" else "euclidean"


def resolve_metric(choice: str, featurizer: str) -> str:
    """The distance in effect: the user's explicit choice, or the representation's default."""
    return default_metric(featurizer) if choice == AUTO else choice


def metric_select(container, featurizer: str, *, key: str, label: str = "Distance") -> str:
    """A distance selectbox whose first option follows the representation; returns the distance in effect."""
    default = default_metric(featurizer)
    choice = container.selectbox(
        label, [AUTO] + list(METRICS), key=key, **KEEP,
        format_func=lambda m: f"{METRICS[default]} (default for {featurizer})" if m == AUTO else METRICS[m],
        help="Magnitude's distance between the representation's vectors. The default follows the representation: "
             "the Tanimoto distance for fingerprints, the Euclidean distance otherwise.")
    return resolve_metric(choice, featurizer)
NO_REFERENCE = "(none: t_cut = median of the t_conv)"
ALL = "all selected items"


@dataclass(frozen=True)
class MagnitudeSettings:
    metric: str
    n_scales: int
    per_group: bool
    reference: Optional[str]


def settings_form(view, featurizer: str) -> MagnitudeSettings:
    """Draw the magnitude settings; the distance defaults to the representation's (:func:`default_metric`)."""
    groups = view.data.group_names()
    c1, c2, c3 = st.columns(3)
    metric = metric_select(c1, featurizer, key="mag_metric")
    n_scales = c1.slider("Scales on [0, t_cut]", 10, 100, 30, 5, key="mag_scales", **KEEP)
    per_group = c2.checkbox("One curve per group", value=bool(groups), disabled=not groups, key="mag_per_group", **KEEP)
    reference = NO_REFERENCE
    if per_group and groups:
        reference = c3.selectbox("Reference group (MagDiff)", [NO_REFERENCE] + groups, key="mag_reference", **KEEP,
                                 help="With a reference, t_cut is its t_conv and every other group gets "
                                      "MagDiff = ∫ (Mag_group − Mag_reference) dt over [0, t_cut].")
    return MagnitudeSettings(metric, int(n_scales), bool(per_group and groups),
                             None if reference == NO_REFERENCE else reference)


def result_key(view, featurizer: str, s: MagnitudeSettings) -> tuple:
    """The key of the magnitude result in the ``"magnitude"`` task store."""
    return (view.key, featurizer, s)


def _sets(view, featurizer: str, per_group: bool) -> dict:
    X = compute.dense(compute.features(view, featurizer, show_progress=False))
    ds = view.data
    if per_group:
        return {g: X[ds.group_indices(g)] for g in ds.group_names()}
    return {ALL: X}


def needs_click(view) -> bool:
    """Whether the computation waits for a click (large views)."""
    return view.n > AUTO_MAX_ITEMS


def task(view, featurizer: str, s: MagnitudeSettings) -> Callable:
    """``fn(progress)`` computing the magnitude curves of every set (for :func:`ui.tasks.run`)."""

    def fn(progress):
        return compare_magnitude(_sets(view, featurizer, s.per_group), reference=s.reference,
                                 n_scales=s.n_scales, metric=s.metric, progress=progress)

    return fn


def show(out: Outcome) -> None:
    """The curves, the table of MagArea (and MagDiff) per set, the core's notes."""
    c = out.value
    curves = {k: (f.ts, f.values) for k, f in c.functions.items()}
    sizes = {k: f.n_distinct for k, f in c.functions.items()}
    st.plotly_chart(magnitude_figure(curves, t_conv=c.t_conv, t_cut=c.t_cut, sizes=sizes,
                                     title=f"Mag(t) on [0, t_cut]; t_cut = {c.t_cut:.4g} ({c.t_cut_rule})"),
                    key="magnitude_curves")
    rows = []
    for k, f in c.functions.items():
        row = {"set": k, "items": f.n_points, "distinct": f.n_distinct, "t_conv": c.t_conv.get(k),
               "MagArea": c.areas[k], "MagArea / t_cut": c.areas_scaled[k]}
        if c.reference is not None:
            row["MagDiff vs reference"] = c.mag_diff.get(k, 0.0 if k == c.reference else np.nan)
            row["MagDiff / reference area"] = c.mag_diff_relative.get(k, 0.0 if k == c.reference else np.nan)
        row["flagged scales"] = int(np.count_nonzero(f.ill_conditioned | f.singular))
        rows.append(row)
    table = pd.DataFrame(rows)
    fmt = {col: st.column_config.NumberColumn(format="%.4g") for col in table.columns
           if col not in ("set", "items", "distinct", "flagged scales")}
    st.dataframe(table, hide_index=True, width="stretch", column_config=fmt)
    if len(rows) > 1:
        best = max(c.areas, key=c.areas.get)
        st.caption(f"Largest MagArea on the shared interval: **{best}**. "
                   + (f"MagDiff > 0 means more diverse than the reference **{c.reference}**."
                      if c.reference else "Choose a reference group for MagDiff."))
    show_notes(out)
