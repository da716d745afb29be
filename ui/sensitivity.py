"""The kernel-sensitivity sweep on the Scores page, a task of :mod:`ui.tasks` (auto when small)."""

from __future__ import annotations

from typing import Optional

import streamlit as st

from diversity_core.data import capped_rows
from diversity_core.sensitivity import (
    DEFAULT_RADII,
    SensitivityResult,
    bandwidth_sweep,
    fingerprint_radius_sweep,
)

from . import compute, tasks
from .feedback import literal

#: Items per set the sweep uses at most (a seeded subsample beyond it).
SWEEP_MAX = 600
#: Sweeps of at most this many items in all start without a click (a fraction of a second); larger
#: ones wait for the button, so the first view of the Scores page never waits for a sweep nobody asked
#: for (on the digits demo, 4 x 300 items, it was most of a new server's first render).
AUTO_MAX = 400


def sweep_controls(ctx) -> Optional[SensitivityResult]:
    """Draw the sweep's controls; return its result when computed (now or earlier)."""
    view, s = ctx.view, ctx.settings
    ds = view.data
    groups = compute.optional_group_labels(view)
    molecules = ds.modality == "molecules"
    # a group of one item has no spectrum to sweep (a selection or a search can leave one)
    chosen = capped_rows(groups, ds.n, SWEEP_MAX, min_items=2)
    idx = chosen.rows
    if chosen.left_out:
        if idx.size == 0:
            st.info("The kernel sweep needs a group of at least 2 items; every group here has one.")
            return None
        st.caption("Left out of the sweep (a single item): " + literal(", ".join(map(str, chosen.left_out))) + ".")
    if groups is None:
        sets, largest = 1, ds.n
    else:
        sets, largest = len(chosen.sizes), max(chosen.sizes.values())
    kind = "radius" if molecules else ("laplacian" if s.kernel == "laplacian" else "rbf")
    key = (view.key, ctx.featurizer, kind, SWEEP_MAX, idx.size)
    what = ("Morgan fingerprint radii " + ", ".join(map(str, DEFAULT_RADII)) + " under the Tanimoto kernel"
            if molecules else f"{kind.upper()} bandwidths from 1/8 to 8 times the median distance")
    out = tasks.stored("sensitivity", key)
    auto = idx.size <= AUTO_MAX and not tasks.cancelled("sensitivity", key)
    if out is None and (auto or tasks.start_button(
        f"Run the sweep over {what}", key="run_sweep", primary=False,
        hint=f"Not run yet: one dense eigendecomposition per set and value "
             f"({sets} set(s) of up to {min(largest, SWEEP_MAX)} items).",
    )):
        w = None if ds.weights is None else ds.weights[idx]
        g = None if groups is None else groups[idx]
        if molecules:
            smiles = [ds.items[i] for i in idx]
            fn = lambda p: fingerprint_radius_sweep(smiles, groups=g, weights=w, progress=p)  # noqa: E731
        else:
            X = compute.dense(compute.features(view, ctx.featurizer, show_progress=False))[idx]
            fn = lambda p: bandwidth_sweep(X, kernel=kind, groups=g, weights=w, progress=p)  # noqa: E731
        out = tasks.run("sensitivity", key, fn, f"Sweeping {what}")
    if out is None:
        return None
    _note(idx.size < ds.n, sets)
    return out.value


def _note(sampled: bool, sets: int) -> None:
    if sampled:
        st.caption(f"The sweep uses a seeded subsample of at most {SWEEP_MAX} items per set "
                   f"({sets} set(s)); the scores above use every selected item.")
