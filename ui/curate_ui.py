"""Curate page helpers: the tasks (see :mod:`ui.tasks`), the item table, the figures, the downloads.

Every computation is the core's (:mod:`diversity_core.curation`); this module only keys the
tasks by their inputs, joins the core's per-item tables and draws them.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import streamlit as st

from diversity_core import format_q, frame_csv, q_key
from diversity_core.curation import (
    SelectionComparison,
    find_duplicates,
    item_contributions,
    rarity_scores,
    select_diverse,
)
from diversity_core.curation.selection import METHODS
from diversity_core.report.figures.curation import SELECTION_LABELS
from diversity_core.report.figures.curation import selection_figure as core_selection_figure

from . import compute
from .data import selection_buttons
from .gallery import TEXT_ROW_HEIGHT, content_column, content_config, show_items

#: Views of at most this many items are analysed (contributions, rarity, duplicates) without a click:
#: the first view of the page must not wait on work the user did not start (issue 27, item 6). At
#: 3000 the three tasks kept the molecules demo's first view (2000 items) waiting 15 s; at 500 they
#: take about a second (tests/app/test_readable.py times it).
AUTO_MAX_ITEMS = 500
#: Selections of at most this many items out of a view of at most AUTO_MAX_ITEMS start by themselves.
AUTO_MAX_K = 200
#: Orders every result reports besides the current q.
BASE_QS = (0.5, 1.0, 2.0, float("inf"))
METHOD_LABELS = SELECTION_LABELS
#: Duplicate groups drawn as galleries at a time (a box pages through the rest; the table lists all of them).
MAX_GROUPS_SHOWN = 12


def orders(q: float) -> tuple:
    """The orders computed: the base orders and the current q, ascending."""
    return tuple(sorted(set(BASE_QS) | {float(q)}))


def _features(view, featurizer: str):
    """The view's features from the core's cache (no progress: the page header computed them)."""
    return compute.features(view, featurizer, show_progress=False)


def _steps(progress, part: int, parts: int, what: str) -> Callable:
    """A progress callback mapping one step's ``(done, total)`` onto its share of ``parts`` steps."""

    def report(done, total, message=""):
        frac = (part + (done / total if total else 1.0)) / parts
        progress(int(round(1000 * frac)), 1000, f"{what}: {message}" if message else what)

    return report


# ------------------------------------------------------------------------------------------
# per-item analysis: contributions and rarity
# ------------------------------------------------------------------------------------------
def analysis_key(ctx) -> tuple:
    """Key of the contributions and rarity of the view (``"curate_items"`` task store)."""
    return (ctx.view.key, ctx.featurizer, ctx.settings.kernel, ctx.settings.kernel_params, orders(ctx.settings.q))


def analysis_task(ctx, n_neighbors: int) -> Callable:
    """``fn(progress)`` computing ``(ContributionResult, RarityResult)`` for :func:`ui.tasks.run`."""
    s, view = ctx.settings, ctx.view

    def fn(progress):
        X = _features(view, ctx.featurizer)
        contrib = item_contributions(X, kernel=s.kernel, q=orders(s.q), weights=view.data.weights,
                                     progress=_steps(progress, 0, 2, "contributions"), **s.kernel_kwargs)
        rare = rarity_scores(X, kernel=s.kernel, n_neighbors=n_neighbors,
                             progress=_steps(progress, 1, 2, "rarity"), **s.kernel_kwargs)
        return contrib, rare

    return fn


def neighbors_for(n: int) -> int:
    """Neighbours of the rarity score: 10, or fewer on tiny views (at most n - 1)."""
    return max(1, min(10, n - 1))


def item_table(view, contrib, rare, dup, q: float) -> pd.DataFrame:
    """One row per item: ``item``, the item itself (``text``, ``SMILES`` or ``image``, when it has one), ``id``,
    ``group``, contribution at q, ``rarity``, ``duplicate group``."""
    ds = view.data
    table = contrib.to_frame(ids=ds.ids)
    col = f"contribution_{q_key(q)}"
    table = table[["item", "id", col]].rename(columns={col: f"contribution (q = {format_q(q)})"})
    content = content_column(ds, table["item"])
    if content is not None:
        table.insert(1, content[0], content[1])
    if ds.groups is not None:
        table.insert(list(table.columns).index("id") + 1, "group", [str(g) for g in ds.groups])
    table["rarity"] = rare.to_frame()["rarity"].to_numpy()
    if dup is not None:
        groups = pd.Series(dup.labels, dtype="Int64")
        table["duplicate group"] = groups.where(groups >= 0).to_numpy()
    return table


def ticked_items(table: pd.DataFrame, event) -> list:
    """The view's items of the rows ticked in the item table (``event`` of ``st.dataframe(on_select=...)``).

    Streamlit reports ticked rows by their position in the frame as built (sorting on screen
    does not change it); the ``item`` column maps a position to the view's item.
    """
    try:
        rows = list(event.selection.rows)
    except (AttributeError, KeyError):
        return []
    items = table["item"].to_numpy()
    return [int(items[r]) for r in rows if 0 <= int(r) < items.size]


# ------------------------------------------------------------------------------------------
# near-duplicates
# ------------------------------------------------------------------------------------------
def duplicates_key(ctx, threshold: float) -> tuple:
    """Key of the near-duplicate groups at ``threshold`` (``"curate_duplicates"`` task store)."""
    return analysis_key(ctx) + (round(float(threshold), 6),)


def duplicates_task(ctx, threshold: float) -> Callable:
    """``fn(progress)`` computing the :class:`~diversity_core.curation.DuplicateResult`."""
    s, view = ctx.settings, ctx.view

    def fn(progress):
        X = _features(view, ctx.featurizer)
        return find_duplicates(X, kernel=s.kernel, threshold=threshold, weights=view.data.weights,
                               q=orders(s.q), rng=0, progress=progress, **s.kernel_kwargs)

    return fn


def count(n: int, word: str, words: str = "") -> str:
    """``"1 group"``, ``"3 groups"``: ``n`` and the word in the number it takes (``words``: an irregular plural)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def duplicates_frame(view, dup) -> pd.DataFrame:
    """Every item of every duplicate group (the core's table: its group, the group's size, whether it is the
    item kept, its closest pair), the group named ``duplicate group`` as in the item table."""
    return dup.to_frame(ids=view.data.ids).rename(columns={"group": "duplicate group"})


def show_duplicates(view, dup, q: float) -> None:
    """Scores with and without the duplicates, the table of every group (and its CSV), then the groups'
    galleries (representative first), :data:`MAX_GROUPS_SHOWN` at a time."""
    st.markdown(f"**{count(dup.n_groups, 'group')}** {'holds' if dup.n_groups == 1 else 'hold'} "
                f"**{count(dup.n_in_groups, 'item')}**; removing all but one of each drops "
                f"**{count(dup.n_removable, 'item')}**.")
    if dup.vendi_original is not None:
        cols = st.columns(len(dup.qs) + 1)
        for col, qq, before, after in zip(cols, dup.qs, dup.vendi_original, dup.vendi_deduplicated):
            col.metric(f"VS (q = {format_q(qq)}) without duplicates", f"{after:.3f}",
                       delta=f"{after - before:+.3f} vs {before:.3f}", delta_color="off")
        if dup.intdiv_original is not None:
            cols[-1].metric("IntDiv without duplicates", f"{dup.intdiv_deduplicated:.4f}",
                            delta=f"{dup.intdiv_deduplicated - dup.intdiv_original:+.4f} vs {dup.intdiv_original:.4f}",
                            delta_color="off")
    else:
        st.caption("The scores without duplicates were skipped: this kernel's spectrum would need a dense "
                   "matrix beyond the memory budget.")
    if not dup.n_groups:
        return
    st.caption("Drop the near-duplicates on every page (all but the first item of each group), e.g. to see the "
               "scores of the deduplicated set on the Scores or Spectrum page:")
    selection_buttons(view, dup.removable, key="curate_dups", modes=("exclude",),
                      what="the near-duplicates (all but the first of each group)")
    best = duplicates_frame(view, dup)
    value = "max_similarity" if "max_similarity" in best.columns else "min_distance"
    st.caption(f"Every group, one row per item (largest group first; the representative is kept), "
               f"{count(len(best), 'row')}:")
    st.dataframe(best, hide_index=True, width="stretch", height=min(400, 38 + 35 * len(best)),
                 key="curate_dup_table")
    st.download_button(f"Duplicate groups (CSV, {count(dup.n_groups, 'group')})",
                       frame_csv(best).encode("utf-8"), file_name="near_duplicates.csv", mime="text/csv",
                       key="curate_dup_csv", on_click="ignore")
    pages = -(-dup.n_groups // MAX_GROUPS_SHOWN)
    page = 0
    if pages > 1:
        page = st.selectbox(
            "Groups shown", range(pages), key="curate_dup_page",
            format_func=lambda p: f"groups {p * MAX_GROUPS_SHOWN + 1}-{min(dup.n_groups, (p + 1) * MAX_GROUPS_SHOWN)} "
                                  f"of {dup.n_groups}")
    closest = dict(zip(best["item"], best[value]))
    first = page * MAX_GROUPS_SHOWN
    shown = range(first, min(dup.n_groups, first + MAX_GROUPS_SHOWN))
    for g in shown:
        members, rep = dup.groups[g], dup.representatives[g]
        order = [int(rep)] + [int(i) for i in members if i != rep]
        with st.container(border=True):
            st.caption(f"Group {g} · {count(members.size, 'item')} · the first is kept")
            show_items(view.data, order, columns=8,
                       notes=["kept"] + [f"{closest[i]:.3f}" for i in order[1:]])


# ------------------------------------------------------------------------------------------
# most-diverse subsets
# ------------------------------------------------------------------------------------------
def selection_key(ctx, k: int, seed: int) -> tuple:
    """Key of the selections of size k by every method (``"curate_selection"`` task store)."""
    return analysis_key(ctx) + (int(k), int(seed))


def selection_task(ctx, k: int, seed: int) -> Callable:
    """``fn(progress)`` giving a :class:`SelectionComparison`: ``select_diverse`` per method, same seed.

    Each method runs as :func:`select_diverse` with ``rng=seed``, so the selection shown (and
    downloaded) is exactly what the core returns for those settings.
    """
    s, view = ctx.settings, ctx.view

    def fn(progress):
        X = _features(view, ctx.featurizer)
        out = {m: select_diverse(X, k, kernel=s.kernel, method=m, q=orders(s.q), rng=seed,
                                 progress=_steps(progress, j, len(METHODS), METHOD_LABELS[m]), **s.kernel_kwargs)
               for j, m in enumerate(METHODS)}
        return SelectionComparison(selections=out)

    return fn


def selection_figure(comparison: SelectionComparison, q: float):
    """VS_q of every method's first k items against k: the core's figure (``SelectionComparison.plot``)."""
    return core_selection_figure(comparison.selections, q, labels=METHOD_LABELS)


def selection_frame(view, sel, *, with_items: bool = False) -> pd.DataFrame:
    """The selected items: ``rank``, ``item`` (0-based in the view), ``id`` (and ``group``).

    ``with_items`` adds the items themselves (``text`` or ``SMILES``) before the id, for the screen.
    """
    table = sel.to_frame(ids=view.data.ids)
    content = content_column(view.data, sel.indices) if with_items else None
    if content is not None:
        table.insert(list(table.columns).index("id"), content[0], content[1])
    if view.data.groups is not None:
        table["group"] = [str(view.data.groups[i]) for i in sel.indices]
    return table


def table_options(view) -> dict:
    """``st.dataframe`` options for a table of items: the item column (text, SMILES, thumbnail) set up,
    text rows tall enough to wrap three lines."""
    content = content_column(view.data, [0] if view.n else [])
    if content is None:
        return {}
    options = {"column_config": content_config(content[0])}
    if view.data.modality == "text":
        options["row_height"] = TEXT_ROW_HEIGHT
    return options


def selection_csv(view, sel) -> bytes:
    """The CSV download of the selection (UTF-8)."""
    return frame_csv(selection_frame(view, sel)).encode("utf-8")

