"""Compare page, reference role: generated groups judged against a real-data group (issue 24, item 5).

One group is the reference (real data), optionally one is the model's training set; every other
group is a generated set, evaluated with :func:`diversity_core.evaluation.evaluate` in the page's
features: precision, recall, density, coverage (and the improved P/R), FD, KD, the Vendi ratio,
memorisation against the training group (with a download of every generated item's nearest
training item), and the per-prompt and conditional Vendi scores: of each generated group by a
prompt column of the loaded table, or of the pooled groups when they are the prompts of one model.
The choices are checked here, in our own words, before the work runs through
:func:`ui.tasks.run` (a worker process, with progress); this module only lays out the core's
results.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import TABLE_EXTENSIONS, condition_columns, resolve_user_path
from diversity_core.report.figures.evaluation import EVALUATION_TITLES, evaluation_figures

from . import compute
from . import data as uidata
from .cache import shared_cache
from .data import data_dir, load_path
from .data.uploads import load_upload
from .feedback import literal, plain
from .gallery import show_items

NONE = "(none)"
#: Task store of the evaluations.
KIND = "evaluate"
#: Name of the one generated set when the other groups are prompts.
PROMPTED = "generated (all prompts)"
#: Closest generated-training pairs shown per group.
PAIRS_SHOWN = 6
#: Most flagged pairs in the table under the gallery (the CSV download has every item).
PAIRS_TABLED = 500
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
    prompt_column: Optional[str] = None


#: Neighbours of the improved precision and recall (``evaluate``'s default).
K_IMPROVED = 3
#: Data-source options the loaders take (the sidebar's column options).
_COLUMN_OPTIONS = ("group_column", "weight_column", "text_column", "smiles_column")


def _guess_reference(groups: list) -> int:
    """Index of the group that looks like real data (else the first)."""
    for i, g in enumerate(groups):
        if any(w in str(g).lower() for w in _REAL_WORDS):
            return i
    return 0


def settings_form(groups: list, seed: int, prompt_columns: tuple = ()) -> tuple:
    """``(EvaluationSettings, submitted)`` from the reference-role form.

    ``prompt_columns``: the loaded table's columns that can name each item's prompt
    (:func:`prompt_columns`); the selector offers none without them.
    """
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
        prompt_column = c3.selectbox(
            "Prompt column (optional)",
            [NONE, *prompt_columns],
            key="eval_prompt_column",
            disabled=not prompt_columns,
            help="A column of the loaded table naming each item's prompt or condition: every generated "
            "group gets its diversity within each prompt and the conditional Vendi score H(X|T) "
            "(Jalali et al. 2024). Offered for a table loaded from one file (upload or local path)."
            if prompt_columns else "No column of the loaded data can name prompts: load one table (upload or "
            "local path) with a text column of prompts beside the items.",
        )
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
    column = None if prompt_column in (None, NONE) else str(prompt_column)
    return EvaluationSettings(
        str(reference), None if train == NONE else str(train), bool(prompts), k, bool(intervals), int(seed), column
    ), submitted


def check(s: EvaluationSettings, groups: list, sizes: Dict[str, int], prompt_labels=None) -> Optional[str]:
    """A problem with the choices in our own words, or None (before any work is submitted).

    Everything :func:`~diversity_core.evaluation.evaluate` would refuse on a worker is caught
    here: the roles, the sizes of the reference, generated and training groups against k, and a
    prompt column that names a prompt for every generated item (``prompt_labels``: one per item
    of the view, None where the table has none; a str when it could not be read: the reason).
    """
    generated = generated_groups(s, groups)
    if s.train is not None and s.train == s.reference:
        return "The training set must be another group than the reference."
    if not generated:
        return (
            "No generated group is left: choose a reference (and training set) that leave at least one group."
        )
    k = max(s.k, K_IMPROVED)
    small = [g for g in [s.reference, *generated] if sizes[g] <= k + 1]
    if small:
        return (f"Groups {literal(', '.join(small))} have too few items for k = {k} neighbours: each needs at "
                f"least {k + 2}. Lower k or choose larger groups.")
    if s.train is not None and sizes[s.train] < 3:
        n_train = sizes[s.train]
        return (f"The training set {literal(s.train)} has {n_train} item{'s' if n_train != 1 else ''}; the "
                "memorisation flag scores each training item against its nearest other one and that one's own "
                "nearest other item, so it needs at least 3. Choose a larger group or no training set.")
    if s.prompt_column is not None:
        if s.prompts:
            return ("Choose one source of prompts: the prompt column, or the other groups as prompts of one model "
                    "(switch one off).")
        if isinstance(prompt_labels, str):
            return prompt_labels
        if prompt_labels is None:
            return (f"The prompt column {literal(s.prompt_column)} cannot be read from the loaded data; reload the "
                    "table, or choose no prompt column.")
        missing = int(sum(1 for v in prompt_labels if v is None))
        if missing:
            return (f"The prompt column {literal(s.prompt_column)} names no prompt for {missing} of the items "
                    "measured; fill those cells, or choose no prompt column.")
    return None


def generated_groups(s: EvaluationSettings, groups: list) -> list:
    """The groups evaluated as generated sets (all but the reference and the training set)."""
    return [g for g in groups if g not in (s.reference, s.train)]


def result_key(ctx, s: EvaluationSettings) -> tuple:
    """Key of the evaluation in the task store."""
    return (ctx.view.key, ctx.featurizer, ctx.settings.kernel, ctx.settings.kernel_params, s)


def task(ctx, s: EvaluationSettings, prompt_labels=None) -> Callable:
    """``fn(progress)`` evaluating every generated group against the reference (for :func:`ui.tasks.run`).

    ``prompt_labels``: one prompt per item of the view (the prompt column), passed as each
    generated group's ``prompts``.
    """
    view, ds = ctx.view, ctx.view.data
    groups = ds.group_names()
    labels = None if prompt_labels is None else np.asarray(prompt_labels, dtype=object).astype(str)

    def fn(progress):
        from diversity_core.evaluation import evaluate

        X = compute.features(view, ctx.featurizer, show_progress=False)
        R = _dense(X[ds.group_indices(s.reference)])
        T = None if s.train is None else _dense(X[ds.group_indices(s.train)])
        gen = generated_groups(s, groups)
        if s.prompts:
            idx = np.concatenate([ds.group_indices(g) for g in gen])
            jobs = {PROMPTED: (idx, np.asarray(ds.groups)[idx].astype(str))}
        else:
            jobs = {g: (ds.group_indices(g), None if labels is None else labels[ds.group_indices(g)]) for g in gen}
        out = {}
        for j, (name, (idx, prompts)) in enumerate(jobs.items()):

            def part(done, total, message="", _j=j, _name=name):
                progress(_j + done / max(total, 1), len(jobs), f"{_name}: {message}")

            out[name] = {
                "result": evaluate(
                    R,
                    _dense(X[idx]),
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


def _dense(X):
    """Rows of the page's features as an array: the evaluation's neighbour searches take dense features
    (n-gram text features are sparse), as ``diversity evaluate`` gives them."""
    return X.toarray() if hasattr(X, "toarray") else X


def results(value: dict) -> dict:
    """``{generated group: EvaluationResult}`` of a finished task."""
    return {g: v["result"] for g, v in value.items()}


def metrics_frame(evals: dict) -> pd.DataFrame:
    """One row per metric, one column of ``value [interval]`` per generated group, then the note.

    The kernel distance shows ``mean ± sd`` (the spread of its subsets' values, not an interval).
    """
    rows: Dict[str, dict] = {}
    for g, ev in evals.items():
        for r in ev.table_rows():
            row = rows.setdefault(r["metric"], {"metric": r["metric"]})
            ci = f" [{r['ci_low']:.4g}, {r['ci_high']:.4g}]" if r["ci_low"] is not None else ""
            sd = f" ± {r['sd']:.4g}" if r.get("sd") is not None else ""
            row[g] = f"{r['value']:.4g}{sd}{ci}"
            row.setdefault("note", r["note"])
    return pd.DataFrame(list(rows.values()), columns=["metric", *evals, "note"]).fillna("")


def _pairs(ev, ds, gen_idx: np.ndarray, train_idx: np.ndarray, group: str) -> None:
    """The set-level figure against its baseline, then the closest generated-training pairs, closest copy first.

    The gallery shows the closest PAIRS_SHOWN pairs; the table below it every flagged pair (up to
    PAIRS_TABLED), each with its distance, similarity and the training item's own
    nearest-neighbour distance.
    """
    m = ev.memorization
    top = m.top_items(PAIRS_SHOWN)
    if not top:
        return
    st.markdown(f"**{literal(group)}**: {literal(m.headline())}")
    st.caption(f"Flag: {literal(m.rule())}.")
    if m.note:
        st.warning(literal(plain(m.note)))
    notes = [f"d {t['distance']:.3g} · sim {_sim(t['similarity'])} · own NN d {t['train_radius']:.3g} · ratio "
             f"{t['ratio']:.3g}" + (" · flagged" if t["flagged"] else "") for t in top]
    st.caption("Generated items, closest copy first (distance to the nearest training item, cosine similarity, "
               "that training item's own nearest-neighbour distance, ratio):")
    show_items(ds, [int(gen_idx[t["generated"]]) for t in top], columns=PAIRS_SHOWN, notes=notes)
    st.caption("Their nearest training items, in the same order:")
    show_items(ds, [int(train_idx[t["train"]]) for t in top], columns=PAIRS_SHOWN)
    if m.n_flagged:
        flagged = m.top_items(min(m.n_flagged, PAIRS_TABLED))
        rows = [{"generated": ds.ids[int(gen_idx[t["generated"]])], "nearest training item": ds.ids[int(train_idx[t["train"]])],
                 "distance": t["distance"], "similarity": t["similarity"], "its own NN distance": t["train_radius"],
                 "ratio": t["ratio"]} for t in flagged]
        st.caption(f"Every flagged pair, closest copy first ({len(rows)} of {m.n_flagged}):")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch",
                     column_config={c: st.column_config.TextColumn(c) for c in ("generated", "nearest training item")})


def _sim(v) -> str:
    """A similarity for a caption ('–' when undefined: an all-zero row)."""
    return "–" if v is None else f"{v:.3f}"


def _items_download(ev, ds, gen_idx: np.ndarray, train_idx: np.ndarray, group: str, i: int) -> None:
    """A CSV of every generated item's nearest training item, distance, radius and flag (the core's table).

    The CSV is written on the click only (one row per generated item: no work on every rerun).
    """

    def csv() -> str:
        return ev.memorization.items_csv(generated_ids=[ds.ids[int(j)] for j in gen_idx],
                                         train_ids=[ds.ids[int(j)] for j in train_idx])

    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(group))[:60] or "group"
    st.download_button(
        f"Nearest training item of every generated item ({ev.memorization.n_generated} rows, CSV)",
        csv,
        file_name=f"memorisation-{safe}.csv",
        mime="text/csv",
        key=f"eval_items_{i}",
        help="One row per generated item, closest copy first: its id, its nearest training item and that item's "
        "id, the distance, the cosine similarity, the training item's own nearest-neighbour distance (radius), "
        "the ratio (distance / radius, the radius at least the median one) and whether it is flagged (ratio "
        "below the calibrated threshold).",
    )


def _prompt_table(ev) -> None:
    """The Vendi score within each prompt, and the conditional and information Vendi scores."""
    c = ev.conditional
    within = c.within_prompt.text() if c.within_prompt is not None else "–"
    q = f"{c.q:g}"
    st.markdown(
        f"Mean within-prompt Vendi score (order {q}) **{within}** over {c.n_prompts} prompts; "
        f"conditional Vendi score exp H_{q}(X|T) = **{c.conditional_vendi:.4g}**, information Vendi score "
        f"exp I_{q}(X;T) = **{c.information_vendi:.4g}**."
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
    for note in dict.fromkeys(n for ev in evals.values() for n in ev.settings.get("notes", [])):
        st.info(literal(plain(note)))
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
        for i, (g, v) in enumerate(out.value.items()):
            _pairs(v["result"], ds, v["indices"], train_idx, g)
            _items_download(v["result"], ds, v["indices"], train_idx, g, i)
    with_prompts = {g: ev for g, ev in evals.items() if ev.conditional is not None}
    if with_prompts:
        st.subheader("Diversity per prompt")
        for g, ev in with_prompts.items():
            if len(with_prompts) > 1 or s.prompt_column is not None:
                st.markdown(f"**{literal(g)}**" + (f" (prompts from column {literal(s.prompt_column)})"
                                                   if s.prompt_column else ""))
            _prompt_table(ev)


def section(ctx, groups: list, sizes: Dict[str, int]):
    """The reference-role section of the Compare page.

    Returns ``(evaluations, reference group, settings, items, novelty)`` for the report once
    computed (``items``: the dataset rows of the closest pairs, with a training set; ``novelty``:
    :func:`ui.novelty_ui.section`'s reports, or None; ``evaluations`` None when only they are), else None.
    """
    from . import novelty_ui, tasks

    with st.expander("Reference role: judge generated groups against real data", expanded=False):
        st.caption(
            "Choose which group is real data (and, optionally, the training set); every other group is "
            "evaluated against it in the same features: fidelity, coverage, distances, copies."
        )
        source = table_source()
        s, submitted = settings_form(groups, ctx.settings.seed, prompt_columns(source, ctx.view.data.modality))
        labels = None if s.prompt_column is None or not submitted else prompt_labels(source, s.prompt_column,
                                                                                    ctx.view.data.ids)
        problem = check(s, groups, sizes, labels)
        if problem and submitted:
            st.error(problem)
            return None
        key = result_key(ctx, s)
        out = tasks.stored(KIND, key, max_entries=4)
        if out is None and submitted and problem is None:
            out = tasks.run(KIND, key, task(ctx, s, labels), "Evaluating against the reference", max_entries=4)
        if out is not None:
            show(out, ctx, s)
        # issue 43: the novel and missing modes, their own task behind their own button
        novelty = novelty_ui.section(ctx, s.reference, generated_groups(s, groups), s.seed)
        if out is None:
            return None if novelty is None else (None, s.reference, s, None, novelty)
        items = None
        if s.train is not None:  # the dataset rows behind the closest pairs, for the report
            train_rows = ctx.view.data.group_indices(s.train)
            items = {g: (ctx.view.data, v["indices"], train_rows) for g, v in out.value.items()}
        return results(out.value), s.reference, s, items, novelty


# ---------------------------------------------------------------------------------------------
# the prompt column: a column of the loaded table, read again from its source
# ---------------------------------------------------------------------------------------------
def table_source() -> Optional[tuple]:
    """The one table file the loaded dataset was read from: ``(spec, upload)``, or None.

    ``spec`` is the sidebar's source (:func:`ui.data.requested_source`: a local path or one
    upload, with the column options), ``upload`` the uploaded file (None for a path). None for a
    demo, several uploads, a folder, a file that is not a table, or a dataset kept from before a
    failed load (its table is not the one asked for).
    """
    ss = st.session_state
    uploads = ss.get("upload") if ss.get("source") == "Upload" else None
    spec = uidata.requested_source(ss, uploads)
    if spec is None or spec[0] not in ("path", "upload") or spec != ss.get("_source_tried") or ss.get("load_error"):
        return None
    name = spec[1] if spec[0] == "path" else spec[2]
    if Path(str(name)).suffix.lower() not in TABLE_EXTENSIONS:
        return None
    upload = None
    if spec[0] == "upload":
        upload = uploads[0] if isinstance(uploads, list) else uploads
    return spec, upload


@contextlib.contextmanager
def _table_file(spec: tuple, upload):
    """A path to read the source's table from: the data-folder path, or the upload in a temporary file."""
    if spec[0] == "path":
        yield resolve_user_path(spec[1], data_dir=data_dir())
        return
    tmpdir = tempfile.mkdtemp(prefix="diversity-prompts-")
    try:
        target = Path(tmpdir) / (Path(spec[2]).name or "upload")
        upload.seek(0)
        with open(target, "wb") as fh:
            shutil.copyfileobj(upload, fh, length=1 << 22)
        yield target
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


@shared_cache("data", spinner="Reading the table's columns…")
def _columns(spec: tuple, modality: str, _upload=None) -> tuple:
    """String columns of the table with a value in every row (the data layer's group-column candidates).

    The columns the loader used (group, weight, text, SMILES; the text column also when it was
    found by its name) are left out.
    """
    options = dict(spec[-1])
    with _table_file(spec, _upload) as path:
        return tuple(condition_columns(path, modality=modality, **{k: options.get(k) for k in _COLUMN_OPTIONS}))


def prompt_columns(source: Optional[tuple], modality: str) -> tuple:
    """The columns of the loaded table that can name prompts (none without a table source)."""
    if source is None:
        return ()
    try:
        return _columns(source[0], modality, _upload=source[1])
    except (DiversityError, OSError, ValueError):
        return ()


@shared_cache("data", spinner="Reading the prompt column…")
def _labels_by_id(spec: tuple, column: str, _upload=None) -> dict:
    """``item id -> prompt`` from the table loaded again with ``column`` as its group column."""
    options = {**{k: v for k, v in spec[-1] if k in _COLUMN_OPTIONS}, "group_column": column}
    if spec[0] == "path":
        ds = load_path(spec[1], options)
    else:
        ds = load_upload(spec[2], _upload, options)
    return dict(zip(ds.ids, (str(g) for g in ds.groups)))


def prompt_labels(source: Optional[tuple], column: str, ids) -> Optional[object]:
    """One prompt per item (``ids``: the view's item ids; None where the column has none).

    The table is read again with ``column`` as its group column (the loaders' own rows and ids,
    so the rows line up with the loaded items); a str is the reason it could not be read.
    """
    if source is None:
        return None
    try:
        by_id = _labels_by_id(source[0], column, _upload=source[1])
    except DiversityError as exc:
        return f"The prompt column {literal(column)} could not be read: {literal(plain(str(exc)))}"
    return [by_id.get(i) for i in ids]
