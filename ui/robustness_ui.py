"""The Robustness page: the groups' ranking under every representation and kernel, and the pixel-background check.

The numbers come from :func:`diversity_core.robustness.representation_robustness` (one
comparison at equal n per representation and kernel, with intervals), run as a task of
:mod:`ui.tasks` on the server's workers: features that are not at hand (a network's features
for a new dataset) are computed there, with progress, and kept in the feature cache and the
persistent store, so the rest of the app reads them afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd
import streamlit as st

from diversity_core import DETAIL_SEPARATOR, format_q
from diversity_core.data import capped_rows
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import FEATURIZERS, default_kernel, featurize, get_featurizer, kernel_support
from diversity_core.report.figures import rank_figure
from diversity_core.robustness import (
    BackgroundReport,
    background_dominance,
    default_kernels,
    representation_robustness,
)

from . import compute, tasks
from .cache import shared_cache
from .data import View, current_colours, view_hash
from .feedback import literal
from .tasks import Outcome, show_notes

#: Items per group the robustness test reads at most (a seeded subsample beyond it): a kernel without a
#: feature map (rbf) slices one N x N matrix per group.
GROUP_MAX = 2000
#: The network featurizer the background warning offers.
NETWORK = "efficientnet_lite0"
#: Kernels offered on every representation (those defined on its features).
KERNELS = ("cosine", "linear", "rbf", "laplacian", "tanimoto")
#: Orders offered.
Q_CHOICES = (0.5, 1.0, 2.0, float("inf"))
#: Session-state key of the chosen "representation · kernel" pairs.
PAIRS_KEY = "robustness_pairs"
#: Session-state key of the dataset those pairs were chosen for.
PAIRS_FOR = "robustness_pairs_for"
#: Key of the container holding the results (browser tests read inside it).
RESULTS_KEY = "robustness_results"


def label(rep: str, kernel: str) -> str:
    """``"pixels · cosine"``."""
    return f"{rep} · {kernel}"


def pair_options(ds) -> list:
    """Every installed representation of the dataset with every kernel defined on it, as labels."""
    out = []
    for rep in compute.featurizer_options(ds):
        own = FEATURIZERS[rep].kernel
        for k in dict.fromkeys((own, *KERNELS)):
            if kernel_support(rep, k) is None and not (k == "tanimoto" and rep != "morgan"):
                out.append(label(rep, k))
    return out


def at_hand(view: View, rep: str) -> bool:
    """Whether ``rep``'s features need no long run: cheap to compute, or already in a cache.

    ``rep`` may be a parameterised name (``hf:<folder>``, the sidebar's own model)."""
    return not get_featurizer(rep).persist or compute.features_at_hand(view, rep) is not None


def default_pairs(view: View) -> list:
    """Each representation at hand with its own kernel and the RBF kernel; for images the network's too.

    Raw pixels against a network's features is the comparison that decides an image ranking (issue
    27: pixels ranked emoji vendors by their white background), so for images the network
    featurizer (:data:`NETWORK`, when installed) is chosen even when its features are not computed
    yet: the test computes them in the background, with progress, when it runs.
    """
    ds = view.data
    options = pair_options(ds)
    installed = compute.featurizer_options(ds)
    reps = [r for r in installed if at_hand(view, r) or (ds.modality == "images" and r == NETWORK)]
    return [p for r in reps for k in default_kernels(r) if (p := label(r, k)) in options]


def add_network() -> None:
    """The background warning's button: network features for the whole app, and in this test."""
    ss = st.session_state
    ss["featurizer"] = NETWORK
    ss["kernel"] = default_kernel(NETWORK)
    pairs = list(ss.get(PAIRS_KEY) or [])
    ss[PAIRS_KEY] = pairs + [
        p for p in (label(NETWORK, k) for k in default_kernels(NETWORK)) if p not in pairs
    ]


@shared_cache("results", spinner="Checking the images' background…", hash_funcs={View: view_hash})
def background(view: View) -> BackgroundReport:
    """:func:`~diversity_core.robustness.background_dominance` of the view's images (cached)."""
    return background_dominance(view.data.items, groups=view.data.groups)


def background_panel(view: View, featurizer: str) -> Optional[BackgroundReport]:
    """For images: a warning with the network features one click away when a background dominates."""
    if view.data.modality != "images":
        return None
    report = background(view)
    if not report.dominated:
        st.caption(literal(report.message()))
        return report
    st.warning(literal(report.message()), icon=":material/wallpaper:")
    if NETWORK in compute.featurizer_options(view.data) and featurizer != NETWORK:
        cached = at_hand(view, NETWORK)
        st.button(
            f"Use network features ({NETWORK})",
            on_click=add_network,
            type="primary",
            key="use_network",
            help="Switches the app's representation to the network's features and adds them to the test below"
            + ("" if cached else "; they are computed in the background when you run it")
            + ".",
        )
    return report


def settings(view: View) -> tuple:
    """The chosen ``[(representation, kernel), ...]`` and order q (the page's own widgets)."""
    ss = st.session_state
    options = pair_options(view.data)
    if ss.get(PAIRS_FOR) != view.full.content_hash:
        ss[PAIRS_FOR] = view.full.content_hash
        ss[PAIRS_KEY] = default_pairs(view)
    ss[PAIRS_KEY] = [p for p in ss.get(PAIRS_KEY) or [] if p in options]
    c1, c2 = st.columns([4, 1])
    chosen = c1.multiselect(
        "Representations and kernels",
        options,
        key=PAIRS_KEY,
        help="Each pair scores every group at the same n, with an interval. Representations whose "
        "features are not computed yet are computed in the background when you run the test.",
    )
    sidebar_q = float(ss.get("q", 1.0))
    q = c2.selectbox(
        "Order q",
        Q_CHOICES,
        index=Q_CHOICES.index(sidebar_q) if sidebar_q in Q_CHOICES else 1,
        format_func=format_q,
        key="robustness_q",
        help="Opens at the sidebar's q when it is one of these.",
    )
    pairs = [tuple(p.split(" · ", 1)) for p in chosen]
    missing = sorted({r for r, _ in pairs if not at_hand(view, r)})
    if missing:
        st.caption(
            "Computed in the background when you run the test (then kept for every page): "
            + literal(", ".join(missing))
            + " features."
        )
    return pairs, float(q)


def _min_items() -> int:
    """Compare's smallest group (imported here: ``diversity_core.compare`` brings SciPy's optimizers,
    which the Scores page, drawing the background warning, does not need)."""
    from diversity_core.compare import MIN_ITEMS

    return MIN_ITEMS


def groups_used(view: View) -> tuple:
    """``(row indices, group names left out for having fewer than the comparison's minimum items)``.

    The groups kept follow Compare's rule (:func:`~diversity_core.compare.groups_for_n`: the groups
    smaller than its default n, the smallest group of at least ``MIN_ITEMS`` items, are left out).
    """
    from diversity_core.compare import groups_for_n

    labels = np.asarray(view.data.groups).astype(str)
    names, counts = np.unique(labels, return_counts=True)
    try:
        least = groups_for_n(dict(zip(names.tolist(), counts.tolist()))).n
    except DiversityInputError:  # fewer than two groups of enough items: all left out (the page says so)
        return np.empty(0, dtype=np.intp), sorted(names.tolist())
    chosen = capped_rows(labels, labels.size, GROUP_MAX, min_items=least)
    return chosen.rows, sorted(chosen.left_out)


def result_key(view: View, pairs: list, q: float, seed: int) -> tuple:
    """The key of the test in the ``"robustness"`` task store."""
    return (view.key, tuple(pairs), q, seed, GROUP_MAX)


def task(view: View, pairs: list, q: float, seed: int) -> Callable:
    """``fn(progress)`` for :func:`ui.tasks.run`: the missing features, then every comparison."""
    def fn(progress):
        ds = view.data
        reps = list(dict.fromkeys(r for r, _ in pairs))
        features = {}
        for rep in reps:
            # computed on this worker when missing (kept in the feature cache and the store), with its progress
            featurize(
                ds,
                rep,
                copy=False,
                # one phase per representation ("<rep> features", the stage before the separator): the
                # bar measures its time left apart from the comparisons' (ui.feedback.ProgressBar)
                progress=lambda d, t, m, rep=rep: progress(
                    d, t, f"{rep} features{DETAIL_SEPARATOR}{m}" if m else f"{rep} features"
                ),
            )
            features[rep] = compute.features(view, rep, show_progress=False)
        kept_pos, _small = groups_used(view)
        kernels = {r: [k for rr, k in pairs if rr == r] for r in reps}
        return representation_robustness(
            {r: X[kept_pos] for r, X in features.items()},
            np.asarray(ds.groups).astype(str)[kept_pos],
            kernels=kernels,
            q=q,
            rng=seed,
            progress=progress,
            images=ds.items[kept_pos] if ds.modality == "images" else None,
        )

    return fn


# ------------------------------------------------------------------------------------------
# the Scores page's ranking check (issue 41, item 1)
# ------------------------------------------------------------------------------------------
#: What the Scores page says instead of an image ranking nobody has checked: the measurements behind
#: the rule (benchmarks/image_default_evidence.py; Noto and Twemoji emoji, 9 categories each).
UNCHECKED_WHY = (
    "on two real emoji sets, pixels and a network's features reversed 14 and 10 of 36 pairs of "
    "categories, both orders resolved"
)


@dataclass(frozen=True)
class RankingCheck:
    """The representation check behind an image set's group ranking on the Scores page.

    ``pairs``: the (representation, kernel) pairs it scores (the Robustness page's default pairs
    and the page's own); ``key``: its key in the ``"robustness"`` task store; ``outcome``: the
    stored result, None while it has not run; ``q``: the order it scores.
    """

    pairs: tuple
    key: tuple
    q: float
    outcome: Optional[Outcome] = None

    @property
    def result(self):
        """The :class:`~diversity_core.robustness.RobustnessResult`, or None while it has not run."""
        return None if self.outcome is None else self.outcome.value

    @property
    def why(self) -> str:
        """Why a ranking waits for the check (:data:`UNCHECKED_WHY`)."""
        return UNCHECKED_WHY


def ranking_check(view: View, featurizer: str, kernel: str, q: float, seed: int) -> Optional[RankingCheck]:
    """The check a ranking of image groups needs before the Scores page states it, or None.

    None when there is nothing to check: not images, fewer than two groups the comparison can
    score, or a single representation installed. Otherwise the pairs are the Robustness page's
    defaults (both kernels on pixels and on the network's features) plus the page's own
    representation and kernel, at the page's q, so a test run on either page serves both.
    """
    if view.data.modality != "images" or len(view.groups) < 2:
        return None
    pairs = [tuple(p.split(" · ", 1)) for p in default_pairs(view)]
    if (featurizer, kernel) not in pairs:
        pairs.insert(0, (featurizer, kernel))
    if len({r for r, _ in pairs}) < 2:
        return None
    rows, _left_out = groups_used(view)
    if len(set(view.data.groups[rows].tolist()) if rows.size else ()) < 2:
        return None
    key = result_key(view, pairs, q, seed)
    return RankingCheck(pairs=tuple(pairs), key=key, q=q, outcome=tasks.stored("robustness", key))


def ranking_check_button(check: Optional[RankingCheck], view: View, seed: int) -> None:
    """Under the Scores headline: the button that runs the check the reading waits for."""
    if check is None or check.outcome is not None:
        return
    missing = sorted({r for r, _ in check.pairs if not at_hand(view, r)})
    hint = (
        f"The group ranking is stated once it is checked under {len(check.pairs)} representations and "
        f"kernels at the same n (q = {format_q(check.q)}), as on the Robustness page"
        + (f"; {literal(', '.join(missing))} features are computed first" if missing else "")
        + "."
    )
    if tasks.start_button("Check the ranking", key="scores_check", hint=hint, primary=False):
        out = tasks.run(
            "robustness",
            check.key,
            task(view, list(check.pairs), check.q, seed),
            "Scoring the groups under every representation and kernel",
        )
        if out is not None:
            st.rerun()


def headline(result) -> None:
    """The verdict in words: a warning when the ranking depends on the representation, the kernel or both."""
    text = literal(result.summary())
    if result.verdict == "depends":
        st.warning(f"**Rank flip.** {text}", icon=":material/swap_vert:")
    elif result.verdict == "unresolved":
        st.info(text, icon=":material/help:")
    else:
        st.success(text, icon=":material/check_circle:")


def table_frame(result) -> pd.DataFrame:
    """One row per representation and kernel; per group its rank, score and interval."""
    rows = []
    for r in result.rows:
        row = {"representation · kernel": r.label}
        for g in result.groups:
            est, lo, hi = r.estimates[g]
            row[g] = f"#{r.ranking.index(g) + 1}  {est:.2f} [{lo:.2f}, {hi:.2f}]"
        rows.append(row)
    return pd.DataFrame(rows)


def show(out: Outcome, left_out: list) -> None:
    """The headline, the rank chart, the table with intervals and the flips."""
    result = out.value
    with st.container(key=RESULTS_KEY):
        headline(result)
        sizes = ", ".join(f"{g}: {n}" for g, n in zip(result.groups, result.group_sizes))
        st.caption(
            f"Every score at the same **n = {result.n}** items per group (groups larger than n are subsampled "
            f"without replacement and averaged; sizes {literal(sizes)}), each with its "
            f"{result.confidence_level:.0%} interval. Scores of different representations are on different "
            "scales: compare the ranks."
        )
        if left_out:
            st.caption(f"Left out (fewer than {_min_items()} items): " + literal(", ".join(left_out)) + ".")
        st.plotly_chart(rank_figure(result, colours=current_colours()), key="robustness_ranks")
        frame = table_frame(result)
        st.dataframe(frame, hide_index=True, width="stretch")
        if result.flips:
            lines = [
                f"- **{literal(f.higher)}** above **{literal(f.lower)}** under {literal(f.where_higher)}, below it "
                f"under {literal(f.where_lower)}"
                + (" (both orders resolved)" if f.resolved else " (within the intervals)")
                for f in result.flips
            ]
            st.markdown("**Rank flips**\n\n" + "\n".join(lines))

        show_notes(out)


# ------------------------------------------------------------------------------------------
# which metrics agree (issue 43, item 6): the ranking under every metric, one representation and kernel
# ------------------------------------------------------------------------------------------
#: Session-state key of the chosen metrics.
METRICS_KEY = "agreement_metrics"
#: Session-state key of the representations the metrics are tried on.
METRIC_REPS_KEY = "agreement_representations"
#: Key of the container holding the metric test's results.
AGREEMENT_RESULTS_KEY = "agreement_results"


def metric_options(view: View) -> tuple:
    """``(every metric offered, the default ones)``: the text metrics only for text data; MagArea opt-in (slow)."""
    from diversity_core.agreement import DEFAULT_METRICS, TEXT_METRICS

    text = view.data.modality == "text"
    extra = ("VS_2", "TCE", "MagArea")
    options = (*DEFAULT_METRICS, *extra, *(TEXT_METRICS if text else ()))
    return options, (*DEFAULT_METRICS, *(TEXT_METRICS if text else ()))


def metric_settings(view: View) -> list:
    """The chosen metrics (the section's own multiselect)."""
    options, default = metric_options(view)
    ss = st.session_state
    ss[METRICS_KEY] = [m for m in ss.get(METRICS_KEY, default) if m in options]
    return st.multiselect(
        "Metrics",
        options,
        key=METRICS_KEY,
        help="Every group is scored under each metric at the same n, with an interval, on each representation "
        "chosen below (one kernel: the first representation's own). MagArea is slow.",
    )


def metric_representations(view: View, featurizer: str) -> list:
    """The representations the metrics are tried on (the section's own multiselect; the sidebar's first).

    Every installed representation of the data is offered ("and every representation already
    offered", issue 43 item 6): one row per metric and representation, flips between them named.
    """
    options = compute.featurizer_options(view.data)
    ss = st.session_state
    ss[METRIC_REPS_KEY] = [r for r in ss.get(METRIC_REPS_KEY, [featurizer]) if r in options] or [featurizer]
    missing = [r for r in ss[METRIC_REPS_KEY] if not at_hand(view, r)]
    chosen = st.multiselect(
        "Representations",
        options,
        key=METRIC_REPS_KEY,
        help="Each metric is scored on each representation chosen (one kernel for all: the first one's own). "
        "Features not computed yet are computed when the test runs.",
    )
    if missing:
        st.caption("Computed when you run the test (then kept for every page): " + literal(", ".join(missing))
                   + " features.")
    return chosen


def metrics_key(view: View, featurizers, metrics: list, seed: int) -> tuple:
    """The key of the metric test in the ``"agreement"`` task store."""
    reps = (featurizers,) if isinstance(featurizers, str) else tuple(featurizers)
    return (view.key, reps, tuple(metrics), seed, GROUP_MAX)


def metrics_task(view: View, featurizers, metrics: list, seed: int) -> Callable:
    """``fn(progress)`` for :func:`ui.tasks.run`: each representation's features when missing, then every metric."""
    from diversity_core.agreement import metric_agreement

    reps = [featurizers] if isinstance(featurizers, str) else list(featurizers)

    def fn(progress):
        ds = view.data
        kept_pos, _small = groups_used(view)
        labels = np.asarray(ds.groups).astype(str)[kept_pos]
        names = list(dict.fromkeys(labels.tolist()))
        sets = {}
        for rep in reps:
            featurize(ds, rep, copy=False,
                      progress=lambda d, t, m, rep=rep: progress(d, t, f"{rep} features{DETAIL_SEPARATOR}{m}"
                                                                  if m else f"{rep} features"))
            X = compute.features(view, rep, show_progress=False)
            sets[rep] = {g: X[kept_pos[labels == g]] for g in names}
        texts = None
        if ds.modality == "text":
            items = list(ds.items)
            texts = {g: [str(items[i]) for i in kept_pos[labels == g]] for g in names}
        first = reps[0]
        return metric_agreement(sets[first], metrics=metrics, representation=first,
                                representations={r: sets[r] for r in reps[1:]} or None, texts=texts,
                                kernel=default_kernel(first), rng=seed, progress=progress)

    return fn


def metrics_table_frame(result) -> pd.DataFrame:
    """One row per metric; per group its rank, value and interval (↓: lower is more diverse)."""
    return result.wide()


def show_metrics(out: Outcome) -> None:
    """The verdict, the rank chart, the table with intervals and the flips with theirs."""
    result = out.value
    with st.container(key=AGREEMENT_RESULTS_KEY):
        text = literal(result.summary())
        if result.verdict == "depends":
            st.warning(f"**Rank flip.** {text}", icon=":material/swap_vert:")
        elif result.verdict == "unresolved":
            st.info(text, icon=":material/help:")
        else:
            st.success(text, icon=":material/check_circle:")
        st.caption(
            f"Every value at the same **n = {result.n}** items per group, each with its "
            f"{result.confidence_level:.0%} interval; one kernel for every kernel metric "
            f"({literal(str(result.kernel.get('name', '')))}). Metrics are on different scales: compare the ranks. "
            "↓: lower is more diverse."
            + (" Skipped: " + literal("; ".join(f"{m} ({why})" for m, why in result.skipped.items()))
               if result.skipped else "")
        )
        st.plotly_chart(result.plot(colours=current_colours()), key="agreement_ranks")
        st.dataframe(metrics_table_frame(result), hide_index=True, width="stretch")
        if result.flips:
            st.markdown("**Rank flips between metrics**\n\n" + "\n".join(f"- {literal(line)}"
                                                                         for line in result.flip_lines()))
        show_notes(out)
