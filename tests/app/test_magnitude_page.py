"""The Magnitude page: the distance follows the representation (issue 16, item 10), the magnitude
dimension profile and the all-pairs MagDiff heatmap (issue 14), each against the core."""

from __future__ import annotations

import numpy as np
import pytest
from test_app import assert_clean, start

from diversity_core.data import load_demo
from diversity_core.exceptions import DuplicatesMergedWarning
from diversity_core.featurizers import featurize
from diversity_core.magnitude import compare_magnitude

NCI, CHEMBL = "NCI screening set (diverse)", "ChEMBL congeneric series (focused)"


def _tables(at, column: str) -> list:
    """The dataframes shown whose first column is ``column`` (AppTest does not record a dataframe's key)."""
    return [d.value for d in at.dataframe if len(d.value.columns) and d.value.columns[0] == column]


def _page(query: dict, page: str):
    at = start(query)
    at.switch_page(page).run()
    assert_clean(at)
    return at


def _computed(at):
    """Press the magnitude page's run buttons (views over magnitude_ui.AUTO_MAX_ITEMS items wait for them)."""
    for key in ("mag_run", "mag_dim_run"):
        if any(b.key == key for b in at.button):
            at.button(key=key).click().run()
            assert_clean(at)
    return at


def test_distance_defaults_follow_the_representation():
    from ui.magnitude_ui import default_metric, resolve_metric

    assert default_metric("morgan") == "tanimoto"
    assert default_metric("pixels") == "euclidean"
    assert resolve_metric("auto", "morgan") == "tanimoto"
    assert resolve_metric("cosine", "morgan") == "cosine"  # an explicit choice is kept


def test_molecules_rank_the_diverse_nci_set_above_the_focused_chembl_series():
    ds = load_demo("molecules")
    X = np.asarray(featurize(ds, "morgan"), dtype=float)
    sets = {g: X[ds.group_indices(g)] for g in (NCI, CHEMBL)}
    core = compare_magnitude(sets, n_scales=12, metric="tanimoto")
    assert core.areas[NCI] > core.areas[CHEMBL]
    at = _page({"demo": "molecules", "group": [NCI, CHEMBL], "mag_scales": "12"}, "app_pages/4_magnitude.py")
    assert at.selectbox(key="mag_metric").value == "auto"
    if any(b.key == "mag_run" for b in at.button):  # 1,000 items: computed without a click
        at.button(key="mag_run").click().run()
    assert_clean(at)
    table = at.dataframe[0].value.set_index("set")
    assert table.loc[NCI, "MagArea"] > table.loc[CHEMBL, "MagArea"]
    for g in (NCI, CHEMBL):
        assert table.loc[g, "MagArea"] == pytest.approx(core.areas[g], rel=1e-9)
    # an explicit choice is kept across pages
    at.selectbox(key="mag_metric").set_value("euclidean").run()
    at.switch_page("app_pages/2_scores.py").run()
    at.switch_page("app_pages/4_magnitude.py").run()
    assert_clean(at)
    assert at.selectbox(key="mag_metric").value == "euclidean"


def test_compare_measures_fingerprints_with_the_tanimoto_distance():
    at = _page({"demo": "molecules", "group": [NCI, CHEMBL], "cmp_n": "60", "cmp_qs": ["1"], "cmp_nsub": "3",
                "cmp_nres": "3", "cmp_nmag": "3"}, "app_pages/7_compare.py")
    assert at.selectbox(key="cmp_metric").value == "auto"
    at.button[0].click()  # the form's submit button
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "tanimoto distance" in shown


def test_magnitude_dimension_and_all_pairs_magdiff_equal_the_core():
    from diversity_core.magnitude import mag_diff_matrix, magnitude_dimension

    ds = load_demo("digits")
    groups = ds.group_names()[:3]
    X = np.asarray(featurize(ds), dtype=float)
    sets = {g: X[ds.group_indices(g)] for g in groups}
    at = _computed(_page({"group": groups, "mag_scales": "10"}, "app_pages/4_magnitude.py"))
    assert not at.error, [e.value for e in at.error]
    core = mag_diff_matrix(sets, n_scales=10, metric="euclidean")
    (shown,) = _tables(at, groups[0])
    assert list(shown.index) == list(core.names)
    np.testing.assert_allclose(shown.to_numpy(), core.values, rtol=1e-9, atol=1e-9)
    at.radio(key="mag_pairs_kind").set_value("absolute").run()
    at.checkbox(key="mag_pairs_scaled").check().run()
    np.testing.assert_allclose(_tables(at, groups[0])[0].to_numpy(), core.absolute_scaled, rtol=1e-9, atol=1e-9)
    (dims,) = _tables(at, "set")[1:]
    dims = dims.set_index("set")
    for g in groups:
        d = magnitude_dimension(sets[g], n_scales=10, metric="euclidean")
        assert dims.loc[g, "magnitude dimension"] == pytest.approx(d.dimension, rel=1e-9)
        assert dims.loc[g, "at t"] == pytest.approx(d.t_dimension, rel=1e-9)


def test_magnitude_dimension_waits_for_a_click_on_large_views(monkeypatch):
    import ui.magnitude_ui as magnitude_ui

    monkeypatch.setattr(magnitude_ui, "AUTO_MAX_ITEMS", 100)
    at = _page({"group": load_demo("digits").group_names()[:1], "mag_scales": "11"}, "app_pages/4_magnitude.py")
    assert not [d for d in _tables(at, "set") if "magnitude dimension" in d.columns]
    at.button(key="mag_dim_run").click().run()
    assert_clean(at)
    (dims,) = [d for d in _tables(at, "set") if "magnitude dimension" in d.columns]
    assert dims.shape[0] == 1
    assert not at.get("subheader") or "MagDiff between every pair of groups" not in [h.value for h in at.subheader]


def test_beyond_the_dense_limit_the_table_names_the_matrix_free_solver(monkeypatch):
    # 1200 digits: the dense path needs 24 n^2 = 35 MB, over a 25 MB budget; the matrix-free one fits
    from diversity_core._config import config_context

    monkeypatch.setenv("DIVERSITY_MEMORY_BUDGET", "25M")
    at = _page({"demo": "digits", "mag_scales": "10"}, "app_pages/4_magnitude.py")
    at.checkbox(key="mag_per_group").uncheck().run()
    if any(b.key == "mag_run" for b in at.button):
        at.button(key="mag_run").click().run()
    (table,) = [d for d in _tables(at, "set") if "solver" in d.columns]
    row = table.set_index("set").iloc[0]
    assert row["solver"] == "matrix-free" and row["items"] == 1200
    assert 0 < row["max rel. error"] < 1e-8
    assert any("matrix-free solver" in i.value for i in at.info)
    X = np.asarray(featurize(load_demo("digits")), dtype=float)
    with config_context(memory_budget="25M"), pytest.warns(DuplicatesMergedWarning):
        core = compare_magnitude({"all": X}, n_scales=10)
    assert core.functions["all"].method == "matrix-free"
    assert row["MagArea"] == pytest.approx(core.areas["all"], rel=1e-9)
    # the dimension profile needs the dense path: the page says so instead of starting it
    assert not at.error, [e.value for e in at.error]
    assert any("only the dense solver gives" in i.value for i in at.info)
    assert not any(b.key == "mag_dim_run" for b in at.button)
    # per group (about 120 items each) both are in reach again
    at.checkbox(key="mag_per_group").check().run()
    assert_clean(at)
    assert not any("only the dense solver gives" in i.value for i in at.info)
