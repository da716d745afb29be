"""Scores: the Vendi score at the chosen order q, its q-profile, baselines and per-group scores."""

import math

import pandas as pd
import streamlit as st

from diversity_core import default_q_grid
from diversity_core.report.figures import bar_figure, sensitivity_figure
from ui import compute, first_paint, live_q, robustness_ui, scalable, shared_figures
from ui.feedback import attempt
from ui.fragments import current_q, current_q_label, q_local, q_view
from ui.page import header
from ui.sensitivity import sweep_controls
from ui.state import q_options

ctx = header(
    "Scores",
    "The Vendi score VS_q is the **effective number of distinct items**: between 1 (all items identical) "
    "and n (all dissimilar) under the chosen kernel; the order q sets how much rare kinds of items count "
    "(small q: every kind counts; large q: only the dominant ones).",
)
s, view = ctx.settings, ctx.view


def draw_baselines() -> None:
    """IntDiv, average similarity, GMStds (and n-gram diversity): the core's baseline scores, which
    need no spectrum, so they show past the dense limit too."""
    base = attempt(lambda: compute.baselines(*ctx.kernel_args), "Computing the baselines")
    if not base:
        return
    constant = base.pop("gmstds_constant", 0)
    nonconstant = base.pop("gmstds_nonconstant", None)
    dims = compute.features(view, ctx.featurizer, show_progress=False).shape[1]
    gm_help = "Geometric mean of the per-feature standard deviations; 0 when a feature is constant."
    labels = {"intdiv": ("IntDiv", "1 − mean similarity over all pairs (MOSES); 0 when all items are identical."),
              "average_similarity": ("Average similarity", "Mean k(x, y) over pairs of distinct items."),
              "gmstds": ("GMStds", gm_help),
              "ngram_diversity": ("n-gram diversity", "Distinct / total n-grams, averaged over n = 1..4.")}
    cols = st.columns(len(base))
    for col, (key, value) in zip(cols, base.items()):
        name, help_text = labels.get(key, (key, ""))
        col.metric(name, f"{value:.4f}", help=help_text)
        if key == "gmstds" and constant:
            col.caption(f"0: {constant} constant feature{'s' if constant != 1 else ''} of {dims} (one alone "
                        f"makes it 0); over the {dims - constant} others it is {nonconstant:.4f}")


if view.data.modality == "images" and ctx.featurizer == "pixels" and robustness_ui.background(view).dominated:
    # pixel scores ruled by a shared background: say so, with the network features one click away
    robustness_ui.background_panel(view, ctx.featurizer)
plan = scalable.plan(ctx)
if scalable.active(ctx, plan):
    # beyond the dense limit: a subsample's first look now, estimates and guaranteed bounds as they arrive
    scalable.draw_badge(plan)
    first = scalable.first_look(*ctx.kernel_args)
    scalable.scores_panel(ctx, scalable.ensure_job(ctx), first)
    scalable.force_exact_control(ctx, plan, first)
    draw_baselines()
    st.caption("Per-group scores and the kernel sweep need the exact spectrum: compute it exactly "
               "above, or take a subsample in the sidebar.")
    first_paint.stop()
spec = scalable.exact_spectrum(ctx, plan)
groups = attempt(lambda: compute.group_spectra(*ctx.kernel_args), "Computing per-group spectra") or {}
# what reads q is drawn in q views: moving q redraws them from the cached spectra, nothing else runs


@q_view("scores_headline")
def headline() -> None:
    q, label = current_q(), current_q_label()
    vs_q = spec.vendi(q)
    c1, c2, c3, c4 = st.columns([1.4, 1, 1, 1])
    with c1:
        # the headline (label, value, caption) is the component's own: the browser redraws it as q moves
        live_q.live_headline(q_options(q), spec.vendi, view.n, q)
    c2.metric("VS₁ (Shannon, q = 1)", f"{spec.vendi(1.0):.2f}", help="The Vendi score of Friedman & Dieng.")
    c3.metric("VS∞ (q = ∞)", f"{spec.vendi(math.inf):.2f}", help="1 / the largest eigenvalue: the dominant mode's share.")
    c4.metric("Rank (q = 0)", f"{spec.rank}", help="Number of eigenvalues in the support (VS₀).")
    # image groups: the representation check's verdict comes before any ranking (issue 41, item 1)
    check = robustness_ui.ranking_check(view, ctx.featurizer, s.kernel, q, s.seed) if groups else None
    st.markdown(compute.reading(vs_q, view.n, {g: gs.vendi(q) for g, gs in groups.items()}, label,
                                sizes={g: gs.n for g, gs in groups.items()}, check=check))


headline()
if groups:
    robustness_ui.ranking_check_button(
        robustness_ui.ranking_check(view, ctx.featurizer, s.kernel, current_q(), s.seed), view, s.seed
    )

draw_baselines()

if first_paint.holding():
    # a session's first run stops here: the headline shows before the charts' and widgets' code has loaded
    first_paint.hold("the q profile, the per-group scores and the kernel sweep")

qs = default_q_grid()
profiles = {"all selected items": (qs, spec.profile(qs))}
for name, gs in groups.items():
    profiles[name] = (qs, gs.profile(qs))


@q_view("scores_profile")
def profile() -> None:
    # the curves are built once per content for every session (ui.shared_figures); q adds its mark
    st.plotly_chart(shared_figures.q_profile(profiles, q=current_q(), n=view.n, colours=view.colours), key="q_profile")


@q_view("scores_groups")
def per_group(intdivs: dict) -> None:
    label = current_q_label()
    table = pd.DataFrame(compute.score_rows(spec, groups, intdivs, current_q()))
    st.dataframe(table, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in table.columns[2:]})
    st.plotly_chart(shared_figures.figure(bar_figure, table["group"], table.iloc[:, 2], y_title=f"VS (q = {label})",
                                          title=f"Vendi score per group at q = {label}", colours=view.colours),
                    key="group_bars")


profile()
if groups:
    st.subheader("Per group")
    per_group(attempt(lambda: compute.group_baselines(*ctx.kernel_args), "Computing per-group IntDiv") or {})
    st.caption("Every group uses the kernel fixed on all selected items (the same bandwidth), so the scores "
               "compare; a group's VS is out of its own size.")

st.subheader("Kernel sensitivity")
st.markdown("How much does the conclusion depend on the kernel? The sweep recomputes every group's spectrum "
            "over a range of RBF bandwidths (or Morgan radii for molecules); where curves cross, the ranking "
            "of the groups depends on that choice.")
result = sweep_controls(ctx)


@q_view("scores_sensitivity")
def sensitivity() -> None:
    q = current_q()
    current = dict(s.kernel_params).get("sigma") if s.kernel in ("rbf", "laplacian") else None
    st.plotly_chart(
        shared_figures.figure(
            sensitivity_figure, result.values, result.vendi(q), result.groups, parameter=result.parameter,
            reference=result.reference, current=current, q=q, colours=view.colours,
            title=f"VS (q = {current_q_label()}) against the {result.kernel} {result.parameter}"),
        key="sensitivity",
    )


if result is not None:
    sensitivity()
q_local()
