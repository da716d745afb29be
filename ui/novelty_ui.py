"""Compare page, reference role: what a generated group has that the reference lacks, and what it misses.

Issue 43, item 2: the differential spectra of :func:`diversity_core.differential.novelty_report`
(Zhang, Li & Farnia, ICML 2024) for every generated group against the reference group, in the
page's features and the sidebar's kernel: KEN both ways and RRKE with their intervals, then a
gallery per top novel mode (the generated items that load most on it) and per top missing mode
(the reference items), each with its share of the owning set's mass and whether it stands
outside the label-permutation null. The work runs through :func:`ui.tasks.run` behind a start
button (nothing runs on the page's first draw); this module only lays out the core's results.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import streamlit as st

from diversity_core.report.figures.novelty import novelty_figure

from . import compute, tasks
from .feedback import literal
from .gallery import show_items

#: Task store of the novelty reports.
KIND = "novelty"
#: Modes kept per side (the core's default).
N_MODES = 5
#: Start button's key.
START_KEY = "run_novelty"
#: Titles of the two roles.
ROLE_TITLES = {
    "novel": "Novel modes: what {g} has that {r} lacks",
    "missing": "Missing modes: what {r} has that {g} lacks",
}


def result_key(ctx, reference: str, generated: tuple, seed: int) -> tuple:
    """Key of the novelty reports in the task store (the view, features, kernel, roles, seed)."""
    return (ctx.view.key, ctx.featurizer, ctx.settings.kernel, ctx.settings.kernel_params, str(reference),
            tuple(generated), int(seed), N_MODES)


def task(ctx, reference: str, generated: tuple, seed: int) -> Callable:
    """``fn(progress)`` computing one :class:`~diversity_core.differential.NoveltyReport` per generated group.

    The value: ``{group: {"report", "generated" (dataset rows), "reference" (dataset rows)}}``.
    """
    view, ds = ctx.view, ctx.view.data
    kernel, kernel_kwargs = ctx.settings.kernel, ctx.settings.kernel_kwargs

    def fn(progress):
        from diversity_core.differential import novelty_report

        X = compute.features(view, ctx.featurizer, show_progress=False)
        ref_rows = ds.group_indices(reference)
        R = compute.dense(X[ref_rows])
        out = {}
        for j, g in enumerate(generated):
            rows = ds.group_indices(g)
            # each group's steps (spectra, intervals, each permutation of the null) on one bar for all groups
            def step(d, t, m, j=j, g=g):
                progress(j * t + d, len(generated) * t, f"{g}: {m}")

            out[g] = {"report": novelty_report(compute.dense(X[rows]), R, kernel=kernel, n_modes=N_MODES, rng=seed,
                                               progress=step, **kernel_kwargs),
                      "generated": rows, "reference": ref_rows}
        progress(len(generated), len(generated), "done")
        return out

    return fn


def _badge(mode: dict) -> str:
    """The mode's verdict against the permutation null, as a Markdown badge."""
    if mode["outside_null"] is None:
        return ":gray-badge[no null computed]"
    if mode["outside_null"]:
        return f":green-badge[outside the null] (p = {mode['p_value']:.3g})"
    return f":gray-badge[within noise] (p = {mode['p_value']:.3g})"


def _modes(rep, role: str, ds, rows, n_items: int, group: str, reference: str) -> None:
    """One bordered gallery per mode of ``role``: share, badge, the items that load most on it."""
    spec = rep.novel if role == "novel" else rep.missing
    st.markdown("**" + ROLE_TITLES[role].format(g=literal(group), r=literal(reference)) + "**")
    modes = rep.modes(role, n_items=n_items)
    if not modes:
        st.info("No mode: every eigenvalue of this difference is at most 0 (nothing of this side stands out).")
        return
    loadings = spec.loadings(spec.owner)
    owner = literal(group if spec.owner == "generated" else reference)
    for m in modes:
        j = m["mode"] - 1
        with st.container(border=True, key=f"novelty_{role}_{j}"):
            st.markdown(f"**{role.capitalize()} mode {m['mode']}** · {m['share']:.1%} of the mass of {owner} "
                        f"(eigenvalue {m['eigenvalue']:.4g}) · {_badge(m)}")
            show_items(ds, [int(rows[i]) for i in m["items"]], columns=8,
                       notes=[f"{loadings[i, j]:+.3f}" for i in m["items"]])


def _view(value: dict, ds, reference: str, featurizer: str) -> None:
    """The scores and galleries of one generated group (its selector and items slider redraw only this)."""
    groups = list(value)
    c1, c2 = st.columns(2)
    g = c1.selectbox("Generated group", groups, key="novelty_group") if len(groups) > 1 else groups[0]
    n_items = c2.slider("Items per mode", 4, 16, 8, key="novelty_items")
    v = value[g]
    rep = v["report"]
    s = rep.settings
    m1, m2, m3 = st.columns(3)
    m1.metric("KEN (novel)", f"{rep.ken.value:.4g}", help="Kernel-based entropic novelty of the generated group "
              "against the reference (Zhang, Li & Farnia 2024): 0 when it has no mode the reference lacks.")
    m1.caption(rep.ken.text())
    m2.metric("KEN (missing)", f"{rep.ken_missing.value:.4g}", help="The same with the roles swapped: how much of "
              "the reference the generated group misses.")
    m2.caption(rep.ken_missing.text())
    m3.metric(f"RRKE (order {s['rrke_order']:g})", f"{rep.rrke.value:.4g}", help="Relative Renyi kernel entropy of "
              "the generated group against the reference (Jalali et al. 2023): 0 for identical sets.")
    m3.caption(rep.rrke.text())
    null = rep.novel_null
    st.caption(f"{literal(featurizer)} features · {literal(s['kernel_description'])} · {s['method']} route ({s['kind']}) · "
               f"{s['n_generated']} generated vs {s['n_reference']} reference items · "
               f"{s['confidence_level']:.0%} intervals from {s['n_resamples']} subsets · "
               + (f"null from {null.n_permutations} label permutations (a mode is outside it when its "
                  f"eigenvalue beats the permuted sets' largest, family-wise)" if null is not None else "no null")
               + ". Pale bars: modes within noise. Under each item: its loading on the mode.")
    for note in {n.note for n in (rep.novel_null, rep.missing_null) if n is not None and n.note}:
        st.info(literal(note))
    st.plotly_chart(novelty_figure(rep, generated=g, reference=reference), key="novelty_fig",
                    config={"displaylogo": False})
    _modes(rep, "novel", ds, v["generated"], n_items, g, reference)
    _modes(rep, "missing", ds, v["reference"], n_items, g, reference)


def section(ctx, reference: str, generated: list, seed: int) -> Optional[Dict[str, tuple]]:
    """The "What is new, what is missing" section of the reference role.

    Returns ``{group: (NoveltyReport, dataset, generated rows, reference rows)}`` for the report
    once computed, else None.
    """
    st.subheader("What is new, what is missing")
    st.caption("The spectrum of the difference of the two sets' kernel covariances: its top modes are what a "
               "generated group expresses more often than the reference (novel) and, roles swapped, what it "
               "misses; each mode is shown by the items that load most on it.")
    if not generated:
        st.info("No generated group is left: choose a reference (and training set) that leave at least one group.")
        return None
    generated = tuple(generated)
    key = result_key(ctx, reference, generated, seed)
    out = tasks.stored(KIND, key, max_entries=4)
    if out is None and tasks.start_button(
        "Find novel and missing modes",
        key=START_KEY,
        hint=f"Not run yet: {len(generated)} generated group(s) against {literal(reference)}, with intervals and "
             "a permutation null.",
        primary=False,
    ):
        out = tasks.run(KIND, key, task(ctx, reference, generated, seed), "Finding novel and missing modes",
                        max_entries=4)
    if out is None:
        return None
    tasks.show_notes(out)
    ds = ctx.view.data
    st.fragment(_view)(out.value, ds, reference, ctx.featurizer)
    return {g: (v["report"], ds, v["generated"], v["reference"]) for g, v in out.value.items()}
