"""Linked selection under ``AppTest``: items picked on the Projection or Curate page restrict every
page to them, or are excluded from every page, and the Scores page then shows the Vendi score of
exactly that subset (computed here with the core); the sidebar shows it and clears it; small
selections live in the link, large ones say they do not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import diversity_core as dc
from diversity_core.curation import find_duplicates, select_diverse
from diversity_core.data import load_demo
from diversity_core.featurizers import default_kernel, featurize
from ui.data import Selection
from ui.state import LINK_MAX_ROWS, format_rows, parse_rows, parse_selection

APP = str(Path(__file__).resolve().parents[2] / "app.py")
N, SEED = 120, 1


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def start(page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "digits", "n": str(N), "seed": str(SEED), **(query or {})})
    at.run()
    at.switch_page(page).run()
    assert_clean(at)
    return at


def subsample_rows() -> np.ndarray:
    """Rows of the loaded digits demo in the app's view (``n=N``, ``seed=SEED``), in view order."""
    return np.sort(np.random.default_rng(SEED).choice(load_demo("digits").n, size=N, replace=False))


def core_vendi(rows) -> float:
    """VS_1 of the digits items at ``rows`` under the app's default representation and kernel."""
    ds = load_demo("digits")
    sub = ds.subset(np.asarray(rows))
    return dc.vendi_score(featurize(sub), kernel=default_kernel("default", dataset=ds), q=1.0)


def scores_headline(at: AppTest) -> tuple[float, int]:
    """(VS, n) the Scores page shows."""
    at.switch_page("app_pages/2_scores.py").run()
    assert_clean(at)
    from test_app import headline

    found = headline(at)  # the headline component's texts (ui.live_q)
    n = int(found.caption.split("**n = ")[1].split("**")[0])
    return float(found.value), n


def button(at: AppTest, key: str):
    found = [b for b in at.button if b.key == key]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]


def sidebar_text(at: AppTest) -> str:
    return " ".join(str(m.value) for m in at.sidebar.markdown) + " " + " ".join(str(c.value) for c in at.sidebar.caption)


def select_on_projection(at: AppTest, items: list) -> None:
    """What a click or lasso leaves behind: the page's selected items (the chart's event is browser-only)."""
    at.session_state["proj_selected"] = list(items)
    at.session_state["_proj_signature"] = None  # as after a redraw: the page keeps the selection
    at.run()
    assert_clean(at)
    assert at.subheader[0].value == f"{len(items)} selected items"


# ------------------------------------------------------------------------------------------
def test_exclude_from_projection_changes_every_page_to_the_rest():
    at = start("app_pages/6_projection.py")
    before, n0 = scores_headline(at)
    assert n0 == N
    at.switch_page("app_pages/6_projection.py").run()
    dropped = list(range(10))
    select_on_projection(at, dropped)
    button(at, "proj_use_exclude").click().run()
    assert_clean(at)
    assert at.session_state["selection"].mode == "exclude"
    rows = subsample_rows()
    assert at.session_state["selection"].rows == tuple(int(r) for r in rows[:10])
    assert "10 selected items excluded" in sidebar_text(at)
    vs, n = scores_headline(at)
    assert n == N - 10
    expected = core_vendi(rows[10:])
    assert vs == pytest.approx(expected, abs=0.005)
    assert f"{vs:.2f}" != f"{before:.2f}"
    # every page's header says what it measures
    assert any("10 selected items excluded" in c.value for c in at.caption)
    # the link carries it (10 rows), and Clear in the sidebar measures everything again
    assert at.query_params["sel"] == f"exclude:{format_rows(rows[:10])}"
    button(at, "selection_clear").click().run()
    assert_clean(at)
    assert scores_headline(at) == (before, N)
    assert "sel" not in at.query_params


def test_restrict_from_projection_equals_the_subset():
    at = start("app_pages/6_projection.py")
    # two items of each group: every page (per-group spectra, the sensitivity sweep) has a group to measure
    groups = load_demo("digits").groups[subsample_rows()]
    chosen = sorted(int(i) for g in dict.fromkeys(groups) for i in np.flatnonzero(groups == g)[:2])
    select_on_projection(at, chosen)
    button(at, "proj_use_restrict").click().run()
    assert_clean(at)
    assert "Restricted to 8 selected items" in sidebar_text(at)
    vs, n = scores_headline(at)
    assert n == len(chosen)
    assert vs == pytest.approx(core_vendi(subsample_rows()[chosen]), abs=0.005)
    at.switch_page("app_pages/6_projection.py").run()
    # a second selection on the restricted view refines it: excluding one group's two items leaves 6
    first = [j for j, i in enumerate(chosen) if groups[i] == groups[chosen[0]]]
    select_on_projection(at, first)
    button(at, "proj_use_exclude").click().run()
    assert_clean(at)
    sel = at.session_state["selection"]
    kept = [i for j, i in enumerate(chosen) if j not in first]
    assert sel.mode == "restrict" and sel.rows == tuple(int(r) for r in subsample_rows()[kept])
    assert scores_headline(at)[1] == 6


def test_curate_sends_its_selection_and_duplicates():
    """Curate: "keep only" the k most diverse, and "exclude" the near-duplicates, reach the Scores page."""
    at = start("app_pages/8_curate.py")
    rows = subsample_rows()
    ds = load_demo("digits")
    X = featurize(ds.subset(rows))
    kernel = default_kernel("default", dataset=ds)
    sel = select_diverse(X, 50, kernel=kernel, method="greedy", rng=0)
    button(at, "curate_sel_restrict").click().run()
    assert_clean(at)
    vs, n = scores_headline(at)
    assert n == 50
    assert vs == pytest.approx(core_vendi(rows[sel.indices]), abs=0.005)

    at = start("app_pages/8_curate.py")
    dup = find_duplicates(X, kernel=kernel)
    assert dup.n_removable > 0  # the mode-collapse group holds near-copies
    button(at, "curate_dups_exclude").click().run()
    assert_clean(at)
    vs, n = scores_headline(at)
    assert n == N - dup.n_removable
    assert vs == pytest.approx(core_vendi(rows[dup.keep]), abs=0.005)
    q1 = dup.qs.index(1.0)
    assert vs == pytest.approx(dup.vendi_deduplicated[q1], abs=0.005)


def test_curate_ticked_rows_open_in_the_gallery_and_reach_every_page():
    """Rows ticked in the item table (the table's selection state) show their items and can be excluded."""
    at = start("app_pages/6_projection.py")
    view_key = at.session_state["_proj_view"]  # the view's key, which also keys the Curate table
    at.switch_page("app_pages/8_curate.py").run()
    assert_clean(at)
    assert not [b for b in at.button if b.key == "curate_rows_exclude"]  # nothing ticked yet
    table = [d.value for d in at.dataframe if "rarity" in d.value.columns][0]
    ticked = [0, 3, 7]
    at.session_state[f"curate_items_table_{view_key}"] = {"selection": {"rows": ticked, "columns": [], "cells": []}}
    at.run()
    assert_clean(at)
    assert any(c.value == "3 ticked rows" for c in at.caption)
    button(at, "curate_rows_exclude").click().run()
    assert_clean(at)
    items = table["item"].to_numpy()[ticked]
    rows = subsample_rows()
    assert at.session_state["selection"].rows == tuple(sorted(int(r) for r in rows[items]))
    vs, n = scores_headline(at)
    assert n == N - 3
    assert vs == pytest.approx(core_vendi(np.delete(rows, items)), abs=0.005)


def test_link_carries_a_small_selection_and_names_a_large_one():
    rows = subsample_rows()
    at = start("app_pages/2_scores.py", {"sel": f"exclude:{format_rows(rows[:5])}"})
    assert scores_headline(at)[1] == N - 5
    assert at.query_params["sel"] == f"exclude:{format_rows(rows[:5])}"
    # a restriction of more rows than a link holds stays in the session and says so
    at = start("app_pages/2_scores.py", {"n": "1200"})
    big = tuple(range(LINK_MAX_ROWS + 50))
    at.session_state["selection"] = Selection("restrict", big, load_demo("digits").content_hash)
    at.run()
    assert_clean(at)
    assert scores_headline(at)[1] == len(big)
    assert "sel" not in at.query_params
    assert "Not in the link" in sidebar_text(at)


def test_a_selection_leaving_one_item_is_set_aside():
    at = start("app_pages/2_scores.py", {"sel": "restrict:1199"})
    vs, n = scores_headline(at)
    assert n == N  # row 1199 is not in this subsample: nothing left, so the selection is set aside
    assert any("Selection set aside" in str(w.value) for w in at.sidebar.warning)


# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows, text", [((3,), "3"), ((3, 17, 18, 19, 20), "3,17-20"), ((0, 1, 5, 7, 8), "0-1,5,7-8")])
def test_rows_round_trip_through_the_link(rows, text):
    assert format_rows(rows) == text
    assert parse_rows(text) == rows


@pytest.mark.parametrize("text", ["", "x:1", "restrict:", "exclude:a", "exclude:5-2", "restrict:-3"])
def test_invalid_link_selection_is_ignored(text):
    assert parse_selection(text) is None


def test_selections_combine_like_filters():
    r = Selection().combined("restrict", [1, 2, 3, 4])
    assert (r.mode, r.rows) == ("restrict", (1, 2, 3, 4))
    assert r.combined("restrict", [2, 3, 9]).rows == (2, 3)
    assert r.combined("exclude", [1, 9]) == Selection("restrict", (2, 3, 4))
    x = Selection().combined("exclude", [5])
    assert x.combined("exclude", [6]) == Selection("exclude", (5, 6))
    assert x.combined("restrict", [4, 5, 6]) == Selection("restrict", (4, 6))
    assert not Selection("exclude", ()).active and Selection("restrict", (1,)).active
    np.testing.assert_array_equal(x.keeps(np.array([4, 5, 6])), [True, False, True])
    with pytest.raises(ValueError, match="selection mode must be one of"):
        r.combined("keep", [1])


def test_link_selection_of_a_source_that_failed_is_dropped():
    """A link whose file cannot be read falls back to the demo; its row numbers name nothing there."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"path": "elsewhere/embeddings.npy", "sel": "exclude:0-4"})
    at.run()
    assert not at.exception
    assert at.session_state["load_error"]
    assert "sel" not in at.query_params
    assert not [b for b in at.sidebar.button if b.key == "selection_clear"]


def test_a_restriction_leaving_a_lone_group_item_keeps_the_scores_page_clean():
    at = start("app_pages/6_projection.py")
    groups = load_demo("digits").groups[subsample_rows()]
    labels = list(dict.fromkeys(groups))
    # three items of the first group, one of the second: the sweep leaves the lone one out
    chosen = sorted([int(i) for i in np.flatnonzero(groups == labels[0])[:3]]
                    + [int(np.flatnonzero(groups == labels[1])[0])])
    select_on_projection(at, chosen)
    button(at, "proj_use_restrict").click().run()
    assert_clean(at)
    at.switch_page("app_pages/2_scores.py").run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert any("Left out of the sweep (a single item)" in c.value for c in at.caption)
