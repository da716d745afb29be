"""Tests of diversity_core.metrics_table (issue 42, item 2): every metric of every set as one tidy table.

The values and intervals are the comparison engine's own for the same seed, every row is at the
same n, the best set per metric is named, highlighted by ``.style`` and drawn by ``.plot()``,
and bad requests (unknown metric, small sets, mismatched dimensions) are refused clearly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.compare import compare
from diversity_core.exceptions import DiversityInputError
from diversity_core.metrics_table import DEFAULT_METRICS, MetricsTable, metrics_table

HOSTILE = '<script>alert("x")</script>'
FAST = {"n_subsamples": 10, "n_resamples": 8, "magnitude_replicates": 8, "n_scales": 10}


def _sets(seed: int = 0, d: int = 6) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "wide": rng.normal(size=(70, d)) + 0.3,
        "narrow": rng.normal(size=(90, d)) * np.r_[1.0, 0.05 * np.ones(d - 1)] + 0.3,
        HOSTILE: rng.normal(size=(80, d)) + 0.3,
    }


@pytest.fixture(scope="module")
def table() -> MetricsTable:
    return metrics_table(_sets(), metrics=["VS_1", "vs_inf", "IntDiv", "MagArea", "MagDiff"], reference="wide",
                         rng=5, **FAST)


def test_values_and_intervals_are_the_comparison_engines_own(table):
    cmp = compare(_sets(), qs=(1.0, math.inf), reference="wide", rng=5, size_curve=False, **FAST)
    assert table.metrics == ("VS_1", "VS_inf", "IntDiv", "MagArea", "MagDiff")
    frame = table.to_frame()
    assert len(frame) == 3 * 5
    for row in frame.itertuples():
        e = cmp.estimate(row.group, row.score)
        assert row.value == e.estimate
        if row.kind == "estimate":
            lo, hi = e.confidence_interval
            assert (row.low, row.high, row.se) == (lo, hi, e.se)
            assert row.level == 0.95
        else:  # the reference's MagDiff is 0 by definition
            assert row.score == "MagDiff" and row.group == "wide" and row.value == row.low == row.high == 0.0
    assert frame.loc[frame.score == "VS_inf", "q"].tolist() == [math.inf] * 3
    assert frame.loc[frame.score == "IntDiv", "q"].isna().all()


def test_every_row_is_at_the_same_n(table):
    assert table.n == 70  # the smallest set
    assert set(table.frame["n"]) == {70}
    sub = metrics_table(_sets(), metrics=["VS_1"], n=40, rng=1, **FAST)
    assert set(sub.frame["n"]) == {40} and sub.n == 40
    assert sub.comparison.n == 40


def test_a_table_column_order_follows_the_convention(table):
    assert list(table.frame.columns[:8]) == ["group", "score", "q", "value", "low", "high", "level", "kind"]
    assert {"se", "n", "method", "higher_is_better", "best"} <= set(table.frame.columns)
    assert table.frame["higher_is_better"].all()


def test_the_best_set_per_metric_is_named_and_resolved():
    rng = np.random.default_rng(3)
    sets = {"spread": rng.normal(size=(80, 8)), "collapsed": 0.05 * rng.normal(size=(80, 8)) + 1.0}
    t = metrics_table(sets, metrics=["VS_1", "IntDiv"], rng=0, **FAST)
    assert t.best == {"VS_1": "spread", "IntDiv": "spread"}
    assert t.resolved == {"VS_1": True, "IntDiv": True}
    assert t.frame.loc[t.frame.best, "group"].tolist() == ["spread", "spread"]


def test_unresolved_lead_is_said(table):
    # "wide" and the hostile set come from one distribution: whoever leads VS_1 does not lead resolvedly
    assert table.best["VS_1"] in ("wide", HOSTILE)
    assert table.resolved["VS_1"] is False
    assert table.resolved["MagDiff"] is None


def test_dataset_with_groups_gives_one_set_per_group():
    from diversity_core.data import Dataset

    X = np.concatenate([v for v in _sets().values()])
    groups = np.repeat(["a", "b", "c"], [70, 90, 80])
    ds = Dataset(name="d", modality="embeddings", items=None, features=X, groups=groups, weights=None,
                 ids=[str(i) for i in range(len(X))])
    t = metrics_table(ds, metrics=["VS_2"], rng=0, n_subsamples=5, n_resamples=5)
    assert t.sets == ("a", "b", "c") and t.metrics == ("VS_2",)
    ref = compare(ds, qs=(2.0,), magnitude=False, rng=0, n_subsamples=5, n_resamples=5, size_curve=False)
    assert t.frame["value"].tolist() == [ref.estimate(g, "VS_2").estimate for g in ("a", "b", "c")]


def test_leave_out_smaller_names_the_sets_left_out():
    sets = _sets()
    sets["tiny"] = np.ones((4, 6))
    with pytest.raises(DiversityInputError, match=r"at least 10 items.*'tiny' \(4 items\).*leave_out_smaller=True"):
        metrics_table(sets, metrics=["VS_1"], **FAST)
    t = metrics_table(sets, metrics=["VS_1"], leave_out_smaller=True, rng=0, **FAST)
    assert t.left_out == {"tiny": 4} and "tiny" not in t.sets and t.n == 70
    assert "left out: tiny (4)" in repr(t)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metrics": ["VS_1", "diversity"]}, r"unknown metric 'diversity'; choose 'VS_<q>'.*'IntDiv', 'MagArea'"),
        ({"metrics": ["VS_-1"]}, r"unknown metric 'VS_-1'"),
        ({"metrics": []}, r"at least one metric"),
        ({"metrics": ["MagDiff"]}, r"pass reference=<set name>"),
        ({"metrics": ["VS_1"], "reference": "nope"}, r"unknown reference set 'nope'"),
        ({"metrics": ["VS_1"], "n": 85}, r"n=85 exceeds 'wide' \(70 items\)"),
    ],
)
def test_bad_requests_are_refused_clearly(kwargs, match):
    with pytest.raises(DiversityInputError, match=match):
        metrics_table(_sets(), **kwargs)


def test_bad_sets_are_refused_clearly():
    rng = np.random.default_rng(0)
    with pytest.raises(DiversityInputError, match=r"feature dimensions differ \(a: 5, b: 6\)"):
        metrics_table({"a": rng.normal(size=(20, 5)), "b": rng.normal(size=(20, 6))})
    with pytest.raises(DiversityInputError, match=r"at least 2 sets"):
        metrics_table({"a": rng.normal(size=(20, 5))})
    with pytest.raises(DiversityInputError, match=r"'b' \(9 items\)"):
        metrics_table({"a": rng.normal(size=(20, 5)), "b": rng.normal(size=(9, 5))})
    with pytest.raises(DiversityInputError, match=r"must be a 2-D array"):
        metrics_table({"a": rng.normal(size=(20, 5)), "b": rng.normal(size=20)})
    with pytest.raises(DiversityInputError, match=r"dict name -> feature array or a Dataset"):
        metrics_table([rng.normal(size=(20, 5))])


def test_repr_is_short_and_names_the_best(table):
    text = repr(table)
    assert len(text.splitlines()) <= 10 and len(text) < 1200
    assert text.startswith("MetricsTable(3 sets x 5 metrics, n=70, level=0.95)")
    assert f"best IntDiv: {table.best['IntDiv']}" in text


def test_style_highlights_the_best_and_escapes_names(table):
    pytest.importorskip("jinja2")
    html = table.style.to_html()
    assert HOSTILE not in html and "&lt;script&gt;" in html
    assert "higher is better for every metric" in html
    assert "VS_1 ↑" in html
    css = html[: html.index("</style>")]
    for j, m in enumerate(table.metrics):  # the best set's cell of every metric is in the bold rule, no other
        i = table.sets.index(table.best[m])
        assert f"_row{i}_col{j}" in css
    assert css.count("_row") == len(table.metrics)
    wide = table.wide()
    assert list(wide.columns) == list(table.metrics) and list(wide.index) == list(table.sets)


def test_repr_html_escapes_names_and_stars_the_best(table):
    html = table._repr_html_()
    assert HOSTILE not in html and "&lt;script&gt;alert" in html
    assert html.count("★") == len(table.metrics) + 1  # one per metric, one in the caption


def test_plot_is_the_score_panels_with_the_best_set_in_each_title(table):
    pytest.importorskip("plotly")
    from diversity_core.report.figures import comparison_figures

    fig = table.plot()
    report = comparison_figures(table.comparison)["scores"]
    # the same bars as the report's score panels, for the metrics of the table
    ours = {(t.xaxis, t.name): (tuple(t.y), tuple(t.error_y.array)) for t in fig.data}
    theirs = {(t.xaxis, t.name): (tuple(t.y), tuple(t.error_y.array)) for t in report.data}
    assert len(ours) == 15 and ours == {k: v for k, v in theirs.items() if k[0] in {a for a, _ in ours}}
    assert len(theirs) == 18  # the comparison also has MagDiff_rel, not asked for here
    titles = [a.text for a in fig.layout.annotations]
    assert titles[2].startswith("IntDiv ↑ best: <b>")
    assert all(HOSTILE not in t for t in titles)
    assert any("&lt;script&gt;" in t.name for t in fig.data)


def test_default_metrics_and_public_name():
    assert dc.metrics_table is metrics_table and dc.MetricsTable is MetricsTable
    assert "metrics_table" in dc.__all__ and "MetricsTable" in dc.__all__
    assert DEFAULT_METRICS == ("VS_1", "VS_inf", "IntDiv", "MagArea")


@pytest.mark.requires("torch")
def test_rnd_rows_are_the_comparisons():
    params = {"runs": 3, "epochs": 4, "average_last": 2, "train_size": 40, "batch_size": 10, "device": "cpu"}
    sets = {k: v for k, v in list(_sets().items())[:2]}
    t = metrics_table(sets, metrics=["RND"], rnd_params=params, rng=2, n_subsamples=5, n_resamples=5)
    cmp = compare(sets, qs=(1.0,), magnitude=False, rnd=True, rnd_params=params, rng=2, n_subsamples=5,
                  n_resamples=5, size_curve=False)
    assert t.metrics == ("RND",)
    for row in t.frame.itertuples():
        e = cmp.estimate(row.group, "RND")
        assert (row.value, row.low, row.high, row.method) == (e.estimate, *e.confidence_interval, "rnd runs")
