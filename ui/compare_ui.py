"""Compare page helpers: the settings form, the comparison task, the tables, figures and report.

The presentation layout uses public means only: ``st.set_page_config`` collapses the sidebar,
and the large type is CSS (``st.html``) scoped to the page's own keyed container, whose
``st-key-<key>`` class Streamlit documents for styling.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, replace
from typing import Callable, Optional

import pandas as pd
import streamlit as st

from diversity_core import format_q, parse_q
from diversity_core.compare import MIN_ITEMS, Comparison, GroupChoice, compare, groups_for_n, largest_n
from diversity_core.exceptions import DiversityInputError
from diversity_core.report import (
    FIGURE_TITLES,
    STEP_LEGEND,
    comparison_figures,
    presentation_style,
    ranking,
    report_html,
)
from diversity_core.report import headline_score as _lead_score
from diversity_core.rnd import MIN_VALIDATION, PAPER_TRAIN_SIZE, default_train_size, rnd_regime_warning

from . import compute, robustness_ui
from .cache import shared_cache
from .data import current_colours
from .data.folder import shown_source
from .feedback import literal, plain
from .magnitude_ui import metric_select
from .rnd_ui import show_reliability
from .state import KEEP
from .tasks import Outcome, show_notes

QS = (0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, math.inf)
NONE = "(none)"
#: Key of the container holding the results (its CSS class is ``st-key-cmp_results``).
RESULTS_KEY = "cmp_results"
PRESENTATION_CSS = f"""<style>
.st-key-{RESULTS_KEY} p, .st-key-{RESULTS_KEY} li, .st-key-{RESULTS_KEY} td, .st-key-{RESULTS_KEY} th,
.st-key-{RESULTS_KEY} label {{ font-size: 1.35rem; }}
.st-key-{RESULTS_KEY} h2, .st-key-{RESULTS_KEY} h3 {{ font-size: 2.2rem; }}
</style>"""


@dataclass(frozen=True)
class CompareSettings:
    """The form's choices (hashable: part of the result's key)."""

    qs: tuple
    n: int
    level: float
    reference: Optional[str]
    magnitude: bool
    rnd: bool
    rnd_train: int
    n_subsamples: int
    n_resamples: int
    magnitude_replicates: int
    seed: int
    metric: str = "euclidean"  # magnitude's distance (the representation's default unless chosen)
    leave_out: bool = True  # groups smaller than n are left out (and listed) rather than refused


#: Subsets per size of the magnitude spread: the core's own default (``compare``'s ``magnitude_replicates``).
MAGNITUDE_REPLICATES = inspect.signature(compare).parameters["magnitude_replicates"].default

#: Validation items every RND run keeps (``rnd_score``'s minimum with its default batch size):
#: a group needs the training items plus this many.
RND_BATCH = MIN_VALIDATION


def default_choice(sizes: dict) -> Optional[GroupChoice]:
    """The core's default: n and the groups kept (:func:`~diversity_core.compare.groups_for_n`), or None
    when fewer than two groups have enough items."""
    try:
        return groups_for_n(sizes)
    except DiversityInputError:
        return None


def group_choice(sizes: dict, s: CompareSettings) -> tuple:
    """``(GroupChoice, None)`` for the form's n and option, or ``(None, why not)`` (the core's message)."""
    try:
        return groups_for_n(sizes, n=s.n, leave_out_smaller=s.leave_out), None
    except DiversityInputError as exc:
        return None, str(exc)


def presentation_toggle() -> bool:
    """The presentation switch; when on, the sidebar collapses (and opens again when it is off)."""
    on = st.toggle("Presentation layout (wide, large type)", key="cmp_presentation", **KEEP,
                   help="For a projector: opens on the results, the sidebar hides, type and charts grow; "
                        "the link keeps it. Switch off to get the form and the sidebar back.")
    st.set_page_config(initial_sidebar_state="collapsed" if on else "auto")
    if on:
        st.html(PRESENTATION_CSS)
    return on


def settings_form(sizes: dict, seed: int, *, featurizer: str = "default", collapsed: bool = False) -> tuple:
    """Draw the form (inside a closed expander when ``collapsed``); return ``(settings, submitted)``.

    ``sizes``: items per group. n opens on the core's default (:func:`default_choice`: the
    smallest group of at least ``MIN_ITEMS`` items, the smaller groups left out and listed).
    Every widget keeps its value across pages and in the link (:data:`~ui.state.KEEP`).
    """
    groups = list(sizes)
    default = default_choice(sizes)
    smallest = min(sizes.values())
    first = default.n if default is not None else smallest
    top = max(first, largest_n(sizes))
    box = st.expander("Comparison settings", expanded=False) if collapsed else st.container()
    with box, st.form("cmp_settings"):
        c1, c2, c3 = st.columns(3)
        qs = c1.multiselect("Orders q", QS, default=[0.5, 1.0, 2.0, math.inf], format_func=format_q, key="cmp_qs",
                            **KEEP)
        n = c1.number_input("Items per group n", min_value=min(MIN_ITEMS, first), max_value=top, value=first,
                            key="cmp_n", **KEEP,
                            help=f"Every group is scored at the same n (at least {MIN_ITEMS}, to put an interval on "
                                 "it). The default keeps every group of that many items.")
        leave_out = c1.checkbox("Leave out groups smaller than n", value=True, key="cmp_leave_out", **KEEP,
                                help="The groups with fewer than n items are left out of the comparison and listed "
                                     "below the form; untick to compare every group (n is then at most the "
                                     "smallest group's size).")
        level = c2.select_slider("Confidence level", [0.8, 0.9, 0.95, 0.99], value=0.95, key="cmp_level", **KEEP)
        ref_index = 1 + groups.index(default.kept[0]) if default is not None else 0
        reference = c2.selectbox("MagDiff reference", [NONE] + groups, index=ref_index, key="cmp_reference", **KEEP,
                                 help="MagDiff = ∫ (Mag_group − Mag_reference) dt over [0, t_conv(reference)].")
        magnitude = c3.checkbox("Magnitude (MagArea, MagDiff)", value=True, key="cmp_magnitude", **KEEP)
        metric = metric_select(c3, featurizer, key="cmp_metric", label="Magnitude distance")
        rnd = c3.checkbox("RND score (slow)", value=False, key="cmp_rnd", **KEEP)
        rnd_train = c3.number_input(
            "RND training items per run", min_value=10, max_value=max(10, top - RND_BATCH),
            value=default_train_size(first), step=10, key="cmp_rnd_train", **KEEP,
            help=f"Each RND run trains on this many of the n items and validates on the rest, which must hold "
                 f"at least {RND_BATCH} items: at most n − {RND_BATCH}. The paper uses {PAPER_TRAIN_SIZE} "
                 f"(n ≥ {PAPER_TRAIN_SIZE + RND_BATCH}).")
        with st.expander("Replicates and seed"):
            e1, e2, e3, e4 = st.columns(4)
            n_subsamples = e1.number_input("n-subsets averaged", 1, 1000, 100, key="cmp_nsub", **KEEP)
            n_resamples = e2.number_input("Subsets per curve size", 3, 500, 50, key="cmp_nres", **KEEP)
            mag_reps = e3.number_input("Magnitude subsets per size", 3, 200, MAGNITUDE_REPLICATES, key="cmp_nmag",
                                       **KEEP)
            seed = e4.number_input("Seed", 0, 2**31 - 1, seed, key="cmp_seed", **KEEP)
        submitted = st.form_submit_button("Run comparison", type="primary")
    settings = CompareSettings(tuple(sorted(qs)), int(n), float(level), None if reference == NONE else reference,
                               bool(magnitude), bool(rnd), int(rnd_train), int(n_subsamples), int(n_resamples),
                               int(mag_reps), int(seed), metric, bool(leave_out))
    return settings, submitted


def check(s: CompareSettings, sizes: dict) -> Optional[str]:
    """Why these settings cannot run (None when they can): said before any work starts."""
    if not s.qs:
        return "Choose at least one order q."
    choice, problem = group_choice(sizes, s)
    if problem:
        return literal(problem)  # it may name groups: literal text
    if s.reference is not None and s.reference not in choice.kept:
        return (f"The MagDiff reference {literal(s.reference)} is left out: it has {sizes[s.reference]} items, fewer than "
                f"n = {s.n}. Choose another reference, or lower n.")
    if s.rnd and s.rnd_train + RND_BATCH > s.n:
        return (f"RND needs the training items plus {RND_BATCH} validation items in each n-subset: "
                f"{s.rnd_train} + {RND_BATCH} > n = {s.n}. Lower **RND training items per run** to at most "
                f"{max(10, s.n - RND_BATCH)}, or raise n.")
    return None


def left_out_note(sizes: dict, s: CompareSettings) -> Optional[str]:
    """The groups these settings leave out, with their sizes, as literal text (None: none, or settings that
    cannot run: :func:`check` says why)."""
    choice, _ = group_choice(sizes, s)
    return None if choice is None or choice.note is None else literal(choice.note)


def rnd_warning(ctx, s: CompareSettings) -> Optional[str]:
    """The core's RND regime warning for these settings (the MLP on the representation's features, n items per set)."""
    if not s.rnd:
        return None
    X = compute.features(ctx.view, ctx.featurizer, show_progress=False)
    return rnd_regime_warning({"train_size": s.rnd_train, "architecture": "mlp"}, input_shape=X.shape[1:],
                              n_items=s.n)


def show_rnd_warnings(cmp) -> None:
    """Each distinct regime warning of the comparison's RND settings, as literal text."""
    rnd = cmp.settings.get("rnd") or {}
    show_reliability([rnd_regime_warning(v) for v in (rnd.get("settings") or {}).values()])


def background_warning(ctx) -> None:
    """For images scored on their pixels: the warning (with the network features one click away)
    when a constant background carries most of the pixel similarity
    (:func:`~diversity_core.robustness.background_dominance`, as on the Scores page)."""
    view = ctx.view
    if view.data.modality == "images" and ctx.featurizer == "pixels" and robustness_ui.background(view).dominated:
        robustness_ui.background_panel(view, ctx.featurizer)


def result_key(ctx, s: CompareSettings) -> tuple:
    """The key of the comparison in the ``"compare"`` task store (RND's split only when RND runs)."""
    s = s if s.rnd else replace(s, rnd_train=0)
    return (ctx.view.key, ctx.featurizer, ctx.settings.kernel, ctx.settings.kernel_params, s)


def task(ctx, s: CompareSettings) -> Callable:
    """``fn(progress)`` comparing every group of the view (for :func:`ui.tasks.run`).

    Each finished stage but the last travels as a progress payload (``stage``: the partial
    comparison's JSON), which :class:`StageView` draws while the next stage runs.
    """
    view, ds = ctx.view, ctx.view.data

    def fn(progress):
        last = [0, 1, ""]

        def report(done, total, message=""):
            last[:] = [done, total, message]
            progress(done, total, message)

        X = compute.features(view, ctx.featurizer, show_progress=False)
        # the core's rule: the groups smaller than n are left out when the form says so
        sizes = {g: int(ds.group_indices(g).size) for g in ds.group_names()}
        groups = groups_for_n(sizes, n=s.n, leave_out_smaller=s.leave_out).kept
        data = {g: X[ds.group_indices(g)] for g in groups}
        sources = source_notes(ds, groups, view.full.content_hash, ctx.featurizer)
        return compare(data, kernel=ctx.settings.kernel, qs=list(s.qs), reference=s.reference, n=s.n, confidence_level=s.level,
                       magnitude=s.magnitude, metric=s.metric, rnd=s.rnd, n_subsamples=s.n_subsamples,
                       n_resamples=s.n_resamples,
                       magnitude_replicates=s.magnitude_replicates,
                       # rnd_score's own batch size (full batch for the MLP): batches of 50 put the
                       # default training in the regime where noise outscores data (rnd_regime_warning)
                       rnd_params={"train_size": s.rnd_train} if s.rnd else None,
                       sources=sources, rng=s.seed, progress=report,
                       on_stage=lambda partial: progress(*last, stage=partial.to_json(indent=None)),
                       **ctx.settings.kernel_kwargs)

    return fn


class StageView:
    """Draws the comparison's finished stages while the next ones run (``on_data`` of :func:`ui.tasks.run`).

    The Vendi scores with their intervals come first (``compare(on_stage=...)``), so a meeting
    sees them before magnitude (and RND) have finished.
    """

    def __init__(self):
        self.slot = None  # made at the first stage, inside the task's status box

    def __call__(self, data: dict) -> None:
        if "stage" not in data:
            return
        if self.slot is None:
            self.slot = st.empty()
        cmp = Comparison.from_json(data["stage"])
        pending = ", ".join(cmp.settings.get("stages_pending", ()))
        with self.slot.container():
            st.caption(f"Ready so far; still computing: {literal(pending)}." if pending else "Ready.")
            _headline(cmp)
            _table(table_frame(cmp), False, hide_index=True)


@shared_cache("results", spinner="Writing the report…")
def _report(_cmp, _ds, key: tuple, presentation: bool, _evaluation=None) -> str:
    """The HTML report of the comparison stored under ``key`` (the arguments with ``_`` are not hashed).

    ``_evaluation``: ``(evaluations, reference name, closest-pair rows, novelty)`` of the page's reference
    role (its settings are part of ``key``; ``novelty``: :func:`ui.novelty_ui.section`'s reports or None).
    """
    evals, reference, items, novelty = _evaluation if _evaluation else (None, None, None, None)
    return report_html(_cmp, datasets=_ds, presentation=presentation, evaluations=evals,
                       evaluation_reference=reference, evaluation_items=items,
                       novelty={g: v[0] for g, v in novelty.items()} if novelty else None,
                       novelty_items={g: v[1:] for g, v in novelty.items()} if novelty else None)


def _literal_frame(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every string (cells, column and index labels) escaped: ``st.table`` renders Markdown."""
    def esc(v):
        return literal(v) if isinstance(v, str) else v

    return df.map(esc).rename(columns=esc, index=esc)


def _table(df: pd.DataFrame, presentation: bool, *, hide_index: bool) -> None:
    if presentation:  # an HTML table, whose type grows with the page's CSS; group names as plain text
        # st.table always draws an index: the first column takes its place, never the frame's raw row numbers
        st.table(_literal_frame(df.set_index(df.columns[0]) if hide_index else df))
    else:
        st.dataframe(df, hide_index=hide_index, width="stretch")


def score_label(name: str) -> str:
    """The app's one notation for a score: ``VS_inf`` -> ``VS (q = ∞)``, ``VS_1`` -> ``VS (q = 1)``."""
    if name.startswith("VS_"):
        return f"VS (q = {format_q(parse_q(name[3:]))})"
    return {"MagDiff_rel": "MagDiff / reference area"}.get(name, name)


def _decimals(values) -> int:
    """Decimals that give the largest |value| of a row four significant digits (0 to 6)."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    if not finite:
        return 4
    return int(min(6, max(0, 3 - math.floor(math.log10(max(finite))))))


def table_frame(cmp) -> pd.DataFrame:
    """Every score (rows) of every group (columns), one precision per row: ``estimate [low, high]``."""
    rows = {}
    for name in cmp.scores:
        cells, values = {}, []
        for g in cmp.groups:
            try:
                e = cmp.estimate(g, name)
            except Exception:  # noqa: BLE001 - a score that does not apply to this group
                e = None
            cells[g] = e
            if e is not None:
                values += [e.estimate, *(e.confidence_interval or (None, None))]
        d = _decimals(values)
        row = {}
        for g, size in zip(cmp.groups, cmp.group_sizes):
            e = cells[g]
            if e is None or e.estimate is None:
                text = "reference" if e is not None and e.role == "reference" else "-"
            elif e.role == "reference":
                text = "reference"
            elif e.confidence_interval is None:
                text = f"{e.estimate:.{d}f}"
            else:
                lo, hi = e.confidence_interval
                text = f"{e.estimate:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"
            row[f"{g} (N={size})"] = text
        rows[score_label(name)] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("score")


def magnitude_line(cmp) -> str:
    """The magnitude scales the table used (t_cut decides MagArea, so it is said where it is shown)."""
    mag = cmp.settings.get("magnitude")
    if not mag:
        return ""
    line = (f" · MagArea on [0, t_cut], **t_cut = {mag['t_cut']:.4g}** ({literal(mag['t_cut_rule'])}; "
            f"{literal(mag['metric'])} distance)")
    if mag.get("t_ref") is not None:
        line += f" · MagDiff on [0, {mag['t_ref']:.4g}] (t_conv of the reference)"
    return line


def source_notes(ds, groups, dataset_hash: str, featurizer: str) -> dict:
    """What the comparison records of each group's data (its JSON export and report carry it): the
    source as visitors see it (:func:`ui.data.folder.shown_source`), never where a file lies on the server."""
    return {g: {"dataset": ds.name, "source": shown_source(ds.source), "dataset_hash": dataset_hash,
                "featurizer": featurizer} for g in groups}


def headline_score(cmp) -> str:
    """The score the headline shows: the core's (VS at q = 1 when computed, else the first score)."""
    return _lead_score(cmp)


def _headline(cmp) -> None:
    """One column per group of the headline score, best first, and the resolved steps between them
    (the core's :func:`~diversity_core.report.ranking`, whose text the report's summary leads with too)."""
    ranked = ranking(cmp, headline_score(cmp))
    score, rows = ranked.score, ranked.rows
    st.subheader(f"{score_label(score)} at n = {cmp.n}: most to least diverse")
    cols = st.columns(max(1, len(rows)))
    for col, (g, e) in zip(cols, rows):
        ci = ("" if e.confidence_interval is None else f"{cmp.confidence_level:.0%} interval "
              f"[{e.confidence_interval.low:.2f}, {e.confidence_interval.high:.2f}]")
        # markdown, not st.metric: long group names wrap instead of being cut, and the number is large
        col.markdown(f"**{literal(g)}**")
        col.markdown(f"## {e.estimate:.2f}")
        if ci:
            col.caption(ci)
    st.markdown(f"{ranked.text(literal)} (**{ranked.count_text()}** on {score_label(score)})")
    st.caption(plain(STEP_LEGEND) + ".")


def _large(fig, size: int = 22):
    """Projector type on a figure: ticks, legends, axis titles and bar labels."""
    presentation_style(fig, font_size=size)
    fig.update_xaxes(tickfont_size=size, title_font_size=size)
    fig.update_yaxes(tickfont_size=size, title_font_size=size)
    fig.update_layout(legend_font_size=size, title_font_size=size + 4)
    fig.update_traces(textfont_size=size, selector={"type": "bar"})
    return fig


def _figures(cmp, presentation: bool) -> None:
    """The comparison's figures (drawn in a fragment: their download format redraws only them)."""
    fmt = st.radio("Figure download format (camera button of each chart)", ["png", "svg"], horizontal=True,
                   key="cmp_figfmt", **KEEP)
    figs = comparison_figures(cmp, presentation=presentation, colours=current_colours())
    config = {"displaylogo": False, "toImageButtonOptions": {"format": fmt, "scale": 2}}
    if presentation:
        for name, fig in figs.items():
            st.subheader(FIGURE_TITLES[name])
            st.plotly_chart(_large(fig), key=f"cmp_fig_{name}", config=config)
    else:
        for tab, (name, fig) in zip(st.tabs([FIGURE_TITLES[k] for k in figs]), figs.items()):
            tab.plotly_chart(fig, key=f"cmp_fig_{name}", config=config)


def show(out: Outcome, ctx, key: tuple, presentation: bool, evaluation=None) -> None:
    """The settings line, the tables, the figures (with their download format) and the downloads.

    In presentation mode: the headline comparison first, the pairwise table reduced to the
    resolved pairs (all of them in an expander), large type on every chart. ``evaluation``: the
    reference role's ``(evaluations, reference, settings, items)`` (:func:`ui.evaluation_ui.section`),
    added to the report.
    """
    cmp = out.value
    # the core's rules may quote a group name: literal text
    st.caption(f"n = **{cmp.n}** items per group ({literal(cmp.settings['n_rule'])}) · kernel "
               f"{literal(cmp.settings['kernel_description'])} · {cmp.confidence_level:.0%} intervals · seed {cmp.settings['seed']}"
               + (f" · MagDiff reference **{literal(cmp.reference)}**" if cmp.reference else "") + magnitude_line(cmp))
    ds = ctx.view.data
    left = {g: int(ds.group_indices(g).size) for g in ds.group_names() if g not in cmp.groups}
    if left:
        st.caption(literal(GroupChoice(n=cmp.n, kept=tuple(cmp.groups), left_out=left).note))
    show_notes(out)
    show_rnd_warnings(cmp)
    background_warning(ctx)
    if presentation:
        _headline(cmp)

    st.subheader("Every score, every group")
    _table(table_frame(cmp), presentation, hide_index=False)
    st.subheader("Pairwise differences")
    pairs = pd.DataFrame(cmp.pairwise_rows())
    if not pairs.empty:
        pairs["score"] = pairs["score"].map(score_label)
    if presentation and not pairs.empty:
        resolved = pairs[pairs["resolved"] != "no"]
        if resolved.empty:
            st.markdown("No pair of groups is resolved at this level.")
        else:
            _table(resolved, presentation, hide_index=True)
        with st.expander(f"All {len(pairs)} pairs"):
            st.dataframe(pairs, hide_index=True, width="stretch")
    else:
        _table(pairs, presentation, hide_index=True)
    with st.expander("How the intervals are made"):
        st.write(plain(cmp.settings["interval_description"]))

    st.fragment(_figures)(cmp, presentation)

    st.subheader("Take it to the meeting")
    # the reference role's results (``evaluation_ui.section``) join the report when computed
    novelty = evaluation[4] if evaluation is not None and len(evaluation) > 4 else None  # issue 43
    eval_key = None if evaluation is None else (evaluation[1], tuple(evaluation[0] or ()), evaluation[2],
                                                tuple(novelty or ()))
    report = _report(cmp, ctx.view.data, key + (eval_key,), presentation,
                     None if evaluation is None else (evaluation[0], evaluation[1], evaluation[3], novelty))
    d1, d2, d3 = st.columns(3)
    d1.download_button("Download report (HTML)", report, file_name="diversity-comparison.html", mime="text/html",
                       type="primary", key="cmp_dl_report")
    d2.download_button("Download comparison (JSON)", cmp.to_json(), file_name="diversity-comparison.json",
                       mime="application/json", key="cmp_dl_json")
    d3.download_button("Download table (CSV)", cmp.to_csv(), file_name="diversity-comparison.csv", mime="text/csv",
                       key="cmp_dl_csv")
    st.caption("The report is one self-contained HTML file (works offline): settings and data hashes, the tables, "
               "every figure with PNG/SVG buttons, and a gallery per group.")
