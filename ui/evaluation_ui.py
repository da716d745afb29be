"""Compare page, reference role: generated groups judged against a real-data group (issue 24, item 5).

One group is the reference (real data), optionally one is the model's training set; every other
group is a generated set, evaluated with :func:`diversity_core.evaluation.evaluate` in the page's
features: precision, recall, density, coverage (and the improved P/R), FD, KD, the Vendi ratio,
memorisation against the training group, and, when the other groups are the prompts of one
model, the per-prompt and conditional Vendi scores. The work runs through :func:`ui.tasks.run`
(a worker process, with progress); this module only lays out the core's results.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core.report.figures.evaluation import EVALUATION_TITLES, evaluation_figures

from . import compute
from .feedback import literal
from .gallery import show_items

NONE = "(none)"
#: Task store of the evaluations.
KIND = "evaluate"
#: Name of the one generated set when the other groups are prompts.
PROMPTED = "generated (all prompts)"
#: Closest generated-training pairs shown per group.
PAIRS_SHOWN = 6
#: Words a reference group's name often holds (the form's first guess).
_REAL_WORDS = ("real", "reference", "ref", "data", "true", "gt")


@dataclass(frozen=True)
class EvaluationSettings:
    """The form's choices (hashable: part of the result's key)."""

    reference: str
    train: Optional[str]
    prompts: bool
    k: int
    intervals: bool
    seed: int


def _guess_reference(groups: list) -> int:
    """Index of the group that looks like real data (else the first)."""
    for i, g in enumerate(groups):
        if any(w in str(g).lower() for w in _REAL_WORDS):
            return i
    return 0


def settings_form(groups: list, seed: int) -> tuple:
    """``(EvaluationSettings, submitted)`` from the reference-role form."""
    with st.form("eval_form", border=False):
        c1, c2 = st.columns(2)
        reference = c1.selectbox(
            "Reference group (real data)",
            groups,
            index=_guess_reference(groups),
            key="eval_reference",
            help="The real items every other group is judged against.",
        )
        train = c2.selectbox(
            "Training set (optional, for memorisation)",
            [NONE] + groups,
            key="eval_train",
            help="The model's training items: each generated item's nearest one, and the share "
            "of generated items closer to it than the training set's own neighbours are.",
        )
        c3, c4, c5 = st.columns(3)
        prompts = c3.toggle(
            "The other groups are prompts of one model",
            value=False,
            key="eval_prompts",
            help="Pool the generated groups into one set and report diversity within each "
            "prompt and the conditional Vendi score H(X|T) (Jalali et al. 2024).",
        )
        k = int(
            c4.number_input(
                "k (neighbours of precision/recall)", min_value=1, max_value=50, value=5, key="eval_k"
            )
        )
        intervals = c5.toggle(
            "Intervals",
            value=True,
            key="eval_intervals",
            help="Subsampling intervals of precision, recall, density, coverage, FD and the "
            "Vendi ratio (a fixed extra cost).",
        )
        submitted = st.form_submit_button("Evaluate against the reference", type="primary")
    return EvaluationSettings(
        str(reference), None if train == NONE else str(train), bool(prompts), k, bool(intervals), int(seed)
    ), submitted


def check(s: EvaluationSettings, groups: list, sizes: Dict[str, int]) -> Optional[str]:
    """A problem with the choices in our own words, or None."""
    generated = generated_groups(s, groups)
    if s.train is not None and s.train == s.reference:
        return "The training set must be another group than the reference."
    if not generated:
        return (
            "No generated group is left: choose a reference (and training set) that leave at least one group."
        )
    small = [g for g in [s.reference, *generated] if sizes[g] <= s.k + 1]
    if small:
        return f"Groups {literal(', '.join(small))} have too few items for k = {s.k} neighbours."
    return None


def generated_groups(s: EvaluationSettings, groups: list) -> list:
    """The groups evaluated as generated sets (all but the reference and the training set)."""
    return [g for g in groups if g not in (s.reference, s.train)]


def result_key(ctx, s: EvaluationSettings) -> tuple:
    """Key of the evaluation in the task store."""
    return (ctx.view.key, ctx.featurizer, ctx.settings.kernel, ctx.settings.kernel_params, s)


def task(ctx, s: EvaluationSettings) -> Callable:
    """``fn(progress)`` evaluating every generated group against the reference (for :func:`ui.tasks.run`)."""
    view, ds = ctx.view, ctx.view.data
    groups = ds.group_names()

    def fn(progress):
        from diversity_core.evaluation import evaluate

        X = compute.features(view, ctx.featurizer, show_progress=False)
        R = X[ds.group_indices(s.reference)]
        T = None if s.train is None else X[ds.group_indices(s.train)]
        gen = generated_groups(s, groups)
        if s.prompts:
            idx = np.concatenate([ds.group_indices(g) for g in gen])
            jobs = {PROMPTED: (idx, np.asarray(ds.groups)[idx].astype(str))}
        else:
            jobs = {g: (ds.group_indices(g), None) for g in gen}
        out = {}
        for j, (name, (idx, prompts)) in enumerate(jobs.items()):

            def part(done, total, message="", _j=j, _name=name):
                progress(_j + done / max(total, 1), len(jobs), f"{_name}: {message}")

            out[name] = {
                "result": evaluate(
                    R,
                    X[idx],
                    train=T,
                    prompts=prompts,
                    k=s.k,
                    kernel=ctx.settings.kernel,
                    n_resamples=16 if s.intervals else 0,
                    magnitude=False,
                    rng=s.seed,
                    progress=part,
                    **ctx.settings.kernel_kwargs,
                ),
                "indices": np.asarray(idx),
            }
        progress(len(jobs), len(jobs), "done")
        return out

    return fn


def results(value: dict) -> dict:
    """``{generated group: EvaluationResult}`` of a finished task."""
    return {g: v["result"] for g, v in value.items()}


def metrics_frame(evals: dict) -> pd.DataFrame:
    """One row per metric, one column of ``value [interval]`` per generated group, then the note."""
    rows: Dict[str, dict] = {}
    for g, ev in evals.items():
        for r in ev.table_rows():
            row = rows.setdefault(r["metric"], {"metric": r["metric"]})
            ci = f" [{r['ci_low']:.4g}, {r['ci_high']:.4g}]" if r["ci_low"] is not None else ""
            row[g] = f"{r['value']:.4g}{ci}"
            row.setdefault("note", r["note"])
    return pd.DataFrame(list(rows.values()), columns=["metric", *evals, "note"]).fillna("")


def _pairs(ev, ds, gen_idx: np.ndarray, train_idx: np.ndarray, group: str) -> None:
    """The closest generated-training pairs: the generated items, then their nearest training items."""
    top = ev.memorization.top_items(PAIRS_SHOWN)
    if not top:
        return
    st.markdown(
        f"**{literal(group)}**: {ev.memorization.n_flagged} of {ev.memorization.n_generated} generated "
        f"items flagged ({ev.memorization.fraction_flagged.value:.1%})."
    )
    notes = [f"ratio {t['ratio']:.3g}" + (" · flagged" if t["flagged"] else "") for t in top]
    st.caption(
        "Generated items, closest first (distance to the nearest training item / that item's own "
        "nearest-neighbour distance; below 1 is flagged):"
    )
    show_items(ds, [int(gen_idx[t["generated"]]) for t in top], columns=PAIRS_SHOWN, notes=notes)
    st.caption("Their nearest training items, in the same order:")
    show_items(ds, [int(train_idx[t["train"]]) for t in top], columns=PAIRS_SHOWN)


def _prompt_table(ev) -> None:
    """The Vendi score within each prompt, and the conditional and information Vendi scores."""
    c = ev.conditional
    within = c.within_prompt.text() if c.within_prompt is not None else "–"
    st.markdown(
        f"Mean within-prompt Vendi score **{within}** over {c.n_prompts} prompts; "
        f"conditional Vendi score exp H(X|T) = **{c.conditional_vendi:.4g}**, information Vendi score "
        f"exp I(X;T) = **{c.information_vendi:.4g}**."
    )
    rows = [{"prompt": name, "items": p["n"], "Vendi score": p["vendi"]} for name, p in c.per_prompt.items()]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        width="stretch",
        column_config={"prompt": st.column_config.TextColumn("prompt")},
    )


def show(out, ctx, s: EvaluationSettings) -> None:
    """The table, the fidelity-diversity plane and Vendi ratio, the memorisation gallery, the prompts."""
    from .tasks import show_notes

    ds = ctx.view.data
    evals = results(out.value)
    first = next(iter(evals.values()))
    st.caption(
        f"Reference **{literal(s.reference)}** ({first.n_reference} items)"
        + (f" · training set **{literal(s.train)}**" if s.train else "")
        + f" · neighbour search: {literal(first.settings['nn_method'])} · k = {s.k} · "
        f"{first.settings['confidence_level']:.0%} intervals" + ("" if s.intervals else " off")
    )
    show_notes(out)
    st.dataframe(
        metrics_frame(evals),
        hide_index=True,
        width="stretch",
        column_config={"metric": st.column_config.TextColumn("metric", pinned=True)},
    )
    figs = evaluation_figures(evals, reference=s.reference)
    for tab, (name, fig) in zip(st.tabs([EVALUATION_TITLES[n] for n in figs]), figs.items()):
        with tab:
            st.plotly_chart(fig, key=f"eval_fig_{name}", config={"displaylogo": False})
    if s.train is not None:
        st.subheader("Memorisation: closest generated-training pairs")
        train_idx = ds.group_indices(s.train)
        for g, v in out.value.items():
            _pairs(v["result"], ds, v["indices"], train_idx, g)
    for ev in evals.values():
        if ev.conditional is not None:
            st.subheader("Diversity per prompt")
            _prompt_table(ev)


def section(ctx, groups: list, sizes: Dict[str, int]):
    """The reference-role section of the Compare page.

    Returns ``(evaluations, reference group, settings, items)`` for the report once computed
    (``items``: the dataset rows of the closest pairs, with a training set), else None.
    """
    from . import tasks

    with st.expander("Reference role: judge generated groups against real data", expanded=False):
        st.caption(
            "Choose which group is real data (and, optionally, the training set); every other group is "
            "evaluated against it in the same features: fidelity, coverage, distances, copies."
        )
        s, submitted = settings_form(groups, ctx.settings.seed)
        problem = check(s, groups, sizes)
        if problem and submitted:
            st.error(problem)
            return None
        key = result_key(ctx, s)
        out = tasks.stored(KIND, key, max_entries=4)
        if out is None and submitted and problem is None:
            out = tasks.run(KIND, key, task(ctx, s), "Evaluating against the reference", max_entries=4)
        if out is None:
            return None
        show(out, ctx, s)
        items = None
        if s.train is not None:  # the dataset rows behind the closest pairs, for the report
            train_rows = ctx.view.data.group_indices(s.train)
            items = {g: (ctx.view.data, v["indices"], train_rows) for g, v in out.value.items()}
        return results(out.value), s.reference, s, items
