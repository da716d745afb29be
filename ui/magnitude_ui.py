"""Magnitude page helpers: the settings, the task (see :mod:`ui.tasks`) and the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core.compare import Comparison, GroupChoice, compare, groups_for_n
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import default_kernel
from diversity_core.magnitude import (
    MagDiffMatrix,
    compare_magnitude,
    mag_diff_matrix,
    magnitude_dimension,
    magnitude_method,
)
from diversity_core.report.figures import (
    bar_figure,
    mag_diff_heatmap,
    magnitude_dimension_figure,
    magnitude_figure,
)

from . import compute
from .data import current_colours
from .feedback import literal
from .state import KEEP
from .tasks import Outcome, show_notes

#: Sets of at most this many items in all are computed without a click (a few seconds at most:
#: a page's first view never waits long on a job the user did not start, as on Curate).
AUTO_MAX_ITEMS = 500
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
    equal_n: bool = False  # every group on subsets of one n (compare's subsampling engine)


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
    sizes = group_sizes(view)
    equal_n = False
    if per_group and len(set(sizes.values())) > 1:
        equal_n = c2.checkbox(
            "Equal n (as Compare)", value=False, key="mag_equal_n", **KEEP,
            help="Score every group on random subsets of the same n items (the smallest group of at least "
                 "10 items; smaller groups are left out and listed), with an interval: the subsampling Compare "
                 "uses. Mag(t) grows towards the number of distinct points, so MagArea of groups of different sizes "
                 "compares sizes as much as diversity.")
    return MagnitudeSettings(metric, int(n_scales), bool(per_group and groups),
                             None if reference == NO_REFERENCE else reference, bool(equal_n))


def group_sizes(view) -> dict:
    """Items per group of the view (empty without groups)."""
    ds = view.data
    return {g: int(ds.group_indices(g).size) for g in ds.group_names()}


def size_caveat(view, s: MagnitudeSettings) -> Optional[str]:
    """The Scores page's caveat for groups of different sizes, for MagArea (None: one size, or equal n)."""
    sizes = group_sizes(view)
    if not s.per_group or s.equal_n or len(set(sizes.values())) < 2:
        return None
    return (f"The groups differ in size ({min(sizes.values()):,} to {max(sizes.values()):,} items) and Mag(t) grows "
            "towards the number of distinct points, so these MagAreas are not compared at equal n: tick **Equal n "
            "(as Compare)** to score every group on subsets of the same n, with intervals (or use **Compare**).")


def result_key(view, featurizer: str, s: MagnitudeSettings) -> tuple:
    """The key of the magnitude result in the ``"magnitude"`` task store."""
    return (view.key, featurizer, s)


def _set_rows(view, per_group: bool) -> dict:
    """The sets measured: each group's rows, or ``{ALL: None}`` (every item)."""
    ds = view.data
    return {g: ds.group_indices(g) for g in ds.group_names()} if per_group else {ALL: None}


def _sets(view, featurizer: str, per_group: bool) -> dict:
    X = compute.dense(compute.features(view, featurizer, show_progress=False))
    return {name: X if rows is None else X[rows] for name, rows in _set_rows(view, per_group).items()}


class _SetIds:
    """The names (``Dataset.ids``: file names, ids) of one set's items, read when a warning names them."""

    def __init__(self, ids, rows):
        self.ids, self.rows = ids, rows

    def __len__(self) -> int:
        return len(self.ids) if self.rows is None else len(self.rows)

    def __getitem__(self, j):
        return self.ids[int(j if self.rows is None else self.rows[j])]


def _set_ids(view, per_group: bool) -> dict:
    """Each set's item names, so the core's duplicate warning names items rather than rows (issue 41, item 11)."""
    return {name: _SetIds(view.data.ids, rows) for name, rows in _set_rows(view, per_group).items()}


def needs_click(view) -> bool:
    """Whether the computation waits for a click (large views)."""
    return view.n > AUTO_MAX_ITEMS


def task(view, featurizer: str, s: MagnitudeSettings) -> Callable:
    """``fn(progress)`` computing the magnitude curves of every set (for :func:`ui.tasks.run`).

    With several sets it is :func:`~diversity_core.magnitude.mag_diff_matrix` (whose comparison
    is :func:`~diversity_core.magnitude.compare_magnitude`'s): the all-pairs MagDiff costs nothing more.
    """

    if s.equal_n:
        return equal_n_task(view, featurizer, s)

    def fn(progress):
        sets = _sets(view, featurizer, s.per_group)
        compute_ = mag_diff_matrix if len(sets) > 1 else compare_magnitude
        return compute_(sets, reference=s.reference, n_scales=s.n_scales, metric=s.metric, progress=progress,
                        ids=_set_ids(view, s.per_group))

    return fn


def equal_n_task(view, featurizer: str, s: MagnitudeSettings) -> Callable:
    """``fn(progress)``: MagArea (and MagDiff) of every group at one n, through :func:`~diversity_core.compare.compare`.

    The groups kept and n follow the core's rule (:func:`~diversity_core.compare.groups_for_n`);
    the intervals are compare's subsampling intervals. Only the order q = 1 of the Vendi score
    comes along (compare scores it anyway; it is cheap and not shown here).
    """

    def fn(progress):
        choice = groups_for_n(group_sizes(view))
        X = compute.features(view, featurizer, show_progress=False)
        ds = view.data
        reference = s.reference if s.reference in choice.kept else None
        return compare({g: X[ds.group_indices(g)] for g in choice.kept}, kernel=default_kernel(featurizer), qs=(1.0,),
                       n=choice.n, reference=reference, metric=s.metric, n_scales=s.n_scales, n_subsamples=1,
                       n_resamples=3, size_curve=False, rng=0, progress=progress)

    return fn


def equal_n_problem(view, s: MagnitudeSettings) -> Optional[str]:
    """Why equal n cannot run on these groups (fewer than two of enough items), as literal text; None when it can."""
    if not s.equal_n:
        return None
    try:
        groups_for_n(group_sizes(view))
    except DiversityInputError as exc:
        return literal(str(exc))
    return None


def show_equal_n(out: Outcome, view) -> None:
    """MagArea (and MagDiff) per group at the equal n with intervals, the left-out groups, the resolved pairs."""
    cmp: Comparison = out.value
    mag = cmp.settings.get("magnitude") or {}
    st.caption(f"Every group scored at the same **n = {cmp.n}** items (one random n-subset each; intervals from "
               f"{cmp.confidence_level:.0%} subsampling, as on **Compare**) · MagArea on [0, t_cut = "
               f"{mag.get('t_cut', float('nan')):.4g}] ({literal(str(mag.get('t_cut_rule', '')))}; "
               f"{literal(str(mag.get('metric', '')))} distance)")
    left = {g: v for g, v in group_sizes(view).items() if g not in cmp.groups}
    if left:
        st.caption(literal(GroupChoice(n=cmp.n, kept=tuple(cmp.groups), left_out=left).note))
    rows = []
    for g, size in zip(cmp.groups, cmp.group_sizes):
        e = cmp.estimate(g, "MagArea")
        lo, hi = e.confidence_interval or (None, None)
        row = {"group": g, "items": size, "n": cmp.n, "MagArea": e.estimate, "low": lo, "high": hi}
        if cmp.reference is not None:
            d = cmp.estimate(g, "MagDiff")
            row["MagDiff vs reference"] = d.estimate
        rows.append(row)
    table = pd.DataFrame(rows)
    st.dataframe(table, hide_index=True, width="stretch", key="magnitude_equal_n_table",
                 column_config={c: st.column_config.NumberColumn(format="%.4g") for c in table.columns
                                if c not in ("group", "items", "n")})
    st.plotly_chart(bar_figure(table["group"], table["MagArea"], low=table["low"], high=table["high"],
                               y_title="MagArea", title=f"MagArea at n = {cmp.n} ({cmp.confidence_level:.0%} interval)",
                               colours=current_colours()),
                    key="magnitude_equal_n_bars")
    pairs = [p for p in cmp.pairwise if p.score == "MagArea"]
    resolved = [p for p in pairs if p.resolved]
    st.markdown(f"**{len(resolved)} of {len(pairs)}** pairs of groups differ in MagArea at the "
                f"{cmp.confidence_level:.0%} level" + (": " + "; ".join(
                    f"{literal(p.higher)} > {literal(p.group_b if p.higher == p.group_a else p.group_a)}"
                    for p in resolved) if resolved else "."))
    show_notes(out)


def comparison(value):
    """The :class:`~diversity_core.magnitude.MagnitudeComparison` of a magnitude task's value."""
    return value.comparison if isinstance(value, MagDiffMatrix) else value


def show(out: Outcome) -> None:
    """The curves, the table of MagArea (and MagDiff) per set, the all-pairs MagDiff, the core's notes."""
    c = comparison(out.value)
    curves = {k: (f.ts, f.values) for k, f in c.functions.items()}
    sizes = {k: f.n_distinct for k, f in c.functions.items()}
    st.plotly_chart(magnitude_figure(curves, t_conv=c.t_conv, t_cut=c.t_cut, sizes=sizes,
                                     title=f"Mag(t) on [0, t_cut]; t_cut = {c.t_cut:.4g} ({c.t_cut_rule})",
                                     colours=current_colours()),
                    key="magnitude_curves")
    rows = []
    for k, f in c.functions.items():
        row = {"set": k, "items": f.n_points, "distinct": f.n_distinct, "t_conv": c.t_conv.get(k),
               "MagArea": c.areas[k], "MagArea / t_cut": c.areas_scaled[k]}
        if c.reference is not None:
            row["MagDiff vs reference"] = c.mag_diff.get(k, 0.0 if k == c.reference else np.nan)
            row["MagDiff / reference area"] = c.mag_diff_relative.get(k, 0.0 if k == c.reference else np.nan)
        row["flagged scales"] = int(np.count_nonzero(f.ill_conditioned | f.singular))
        row["solver"] = f.method
        row["max rel. error"] = f.max_rel_error
        rows.append(row)
    table = pd.DataFrame(rows)
    fmt = {col: st.column_config.NumberColumn(format="%.4g") for col in table.columns
           if col not in ("set", "items", "distinct", "flagged scales", "solver", "max rel. error")}
    fmt["solver"] = st.column_config.TextColumn(width="small", help="dense: Cholesky/CG on the n × n matrices; "
                                                "matrix-free: conjugate gradients on blocks of distances.")
    fmt["max rel. error"] = st.column_config.NumberColumn(
        format="%.1e", help="The largest stated error of Mag(t) over the scales, relative to the value.")
    st.dataframe(table, hide_index=True, width="stretch", column_config=fmt)
    free = [literal(k) for k, f in c.functions.items() if f.method == "matrix-free"]
    if free:
        st.info(f"Beyond the dense limit for {', '.join(free)}: the n × n matrices of a scale would exceed the "
                "memory budget, so those curves come from the matrix-free solver (conjugate gradients on blocks of "
                "distances, never holding the matrix). Each value carries its stated error; 'max rel. error' in "
                "the table is the largest, relative to the value.")
    if len(rows) > 1:
        best = max(c.areas, key=c.areas.get)
        st.caption(f"Largest MagArea on the shared interval: **{literal(best)}**. "
                   + (f"MagDiff > 0 means more diverse than the reference **{literal(c.reference)}**."
                      if c.reference else "Choose a reference group for MagDiff."))
    if isinstance(out.value, MagDiffMatrix):
        show_pairs(out.value)
    show_notes(out)


def show_pairs(m: MagDiffMatrix) -> None:
    """The all-pairs MagDiff heatmap (magnipy's Diversipy), signed or absolute, raw or divided by t_cut.

    Drawn in a fragment: its two display options redraw only the heatmap and its table.
    """
    st.fragment(_pairs)(m)


def _pairs(m: MagDiffMatrix) -> None:
    st.subheader("MagDiff between every pair of groups")
    c1, c2 = st.columns(2)
    kind = c1.radio("Value", ["signed", "absolute"], horizontal=True, key="mag_pairs_kind", **KEEP,
                    help="Signed: ∫ (Mag_row − Mag_column) dt, > 0 when the row group is more diverse. Absolute: "
                         "∫ |Mag_row − Mag_column| dt, how far apart the curves are (magnipy's MagDiffs).")
    scaled = c2.checkbox("Divide by t_cut", value=False, key="mag_pairs_scaled", **KEEP,
                         help="The mean gap per unit of scale, comparable across datasets (magnipy's default).")
    absolute = kind == "absolute"
    values = (m.absolute_scaled if scaled else m.absolute) if absolute else (m.values_scaled if scaled else m.values)
    st.plotly_chart(mag_diff_heatmap(values, m.names, absolute=absolute,
                                     title=f"{'|MagDiff|' if absolute else 'MagDiff'} on [0, t_cut = {m.t_cut:.4g}]"
                                           + (" / t_cut" if scaled else "")), key="magnitude_pairs")
    st.dataframe(pd.DataFrame(values, index=list(m.names), columns=list(m.names)), width="stretch",
                 column_config={g: st.column_config.NumberColumn(format="%.4g") for g in m.names},
                 key="magnitude_pairs_table")


def dimension_key(view, featurizer: str, s: MagnitudeSettings) -> tuple:
    """The key of the magnitude dimension in the ``"magnitude_dimension"`` task store."""
    return (view.key, featurizer, s.metric, s.n_scales, s.per_group)


def dimension_out_of_reach(view, s: MagnitudeSettings) -> Optional[str]:
    """Why the magnitude dimension cannot be computed here (a set beyond the dense path), else None."""
    sizes = {name: view.n if rows is None else rows.size for name, rows in _set_rows(view, s.per_group).items()}
    large = [g for g, n in sizes.items() if magnitude_method(int(n), s.metric) != "dense"]
    if not large:
        return None
    return (f"The magnitude dimension needs the exact slope of Mag(t), which only the dense solver gives, and "
            f"{', '.join(literal(g) for g in large)} ({max(sizes[g] for g in large)} items) is beyond what its n × n "
            "matrices allow under the memory budget. Select fewer items (sidebar), or raise the budget "
            "(DIVERSITY_MEMORY_BUDGET) if this machine has the memory.")


def dimension_task(view, featurizer: str, s: MagnitudeSettings) -> Callable:
    """``fn(progress)`` computing the magnitude dimension profile of every set (log grid up to its t_conv)."""

    def fn(progress):
        sets = _sets(view, featurizer, s.per_group)
        out = {}
        for i, (name, X) in enumerate(sets.items()):
            def step(done, total, message="", i=i, name=name):
                # one bar for all sets: each set's own fraction lands in its share
                progress(i * 1000 + int(1000 * done / max(total, 1)), 1000 * len(sets), f"{name}: {message}")
            out[name] = magnitude_dimension(X, n_scales=s.n_scales, metric=s.metric, progress=step)
        return out

    return fn


def show_dimension(out: Outcome) -> None:
    """The magnitude dimension profiles and, per set, the magnitude dimension and where it is reached."""
    dims = out.value
    st.plotly_chart(magnitude_dimension_figure({k: (d.ts, d.profile) for k, d in dims.items()},
                                               maxima={k: (d.t_dimension, d.dimension) for k, d in dims.items()},
                                               colours=current_colours()),
                    key="magnitude_dimension")
    table = pd.DataFrame([{"set": k, "magnitude dimension": d.dimension, "at t": d.t_dimension}
                          for k, d in dims.items()])
    st.dataframe(table, hide_index=True, width="stretch", key="magnitude_dimension_table",
                 column_config={c: st.column_config.NumberColumn(format="%.4g") for c in ("magnitude dimension",
                                                                                           "at t")})
    show_notes(out)
