"""Comparison, evaluation and curation results in a notebook (issue 42, item 1).

Each result's repr is at most ten lines and bounded however large the result (``repr(compare(...))``
was 40,484 characters on one line for three groups), ``_repr_html_`` is a compact table with every
user string escaped, ``to_frame()`` is a tidy frame holding the object's own numbers, and
``.plot()`` is the very figure the report and the app draw for it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import diversity_core as dc
from diversity_core._display import MAX_REPR_LINES
from diversity_core.exceptions import DiversityInputError

HOSTILE = '<script>alert("x")</script>'


def _bounded(obj, max_chars: int = 1200) -> str:
    text = repr(obj)
    assert len(text.splitlines()) <= MAX_REPR_LINES, text
    assert len(text) <= max_chars, (len(text), text)
    return text


def _same_figure(a, b) -> None:
    assert a.to_json() == b.to_json()


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cmp():
    rng = np.random.default_rng(0)
    groups = {"a": rng.normal(size=(60, 8)) + 0.2, HOSTILE: rng.normal(size=(80, 8)) + 0.2,
              "c": 0.3 * rng.normal(size=(70, 8)) + 1.0}
    return dc.compare(groups, reference="a", rng=0, n_subsamples=10, n_resamples=8, magnitude_replicates=8,
                      n_scales=10)


def test_comparison_repr_is_short(cmp):
    text = _bounded(cmp)
    assert text.splitlines()[0] == "Comparison(3 groups, n=60, 8 scores, level=0.95)"
    assert "VS_1: a " in text and "more: 2 more scores" in text
    assert "differences resolved at 95%" in text


def test_comparison_repr_is_bounded_with_many_groups_and_scores():
    rng = np.random.default_rng(1)
    groups = {f"group number {i} with a long name": rng.normal(size=(20, 4)) for i in range(12)}
    big = dc.compare(groups, qs=(0, 0.5, 1, 2, 3, 5, math.inf), rng=0, n_subsamples=3, n_resamples=4,
                     magnitude=False, size_curve=False)
    _bounded(big)


def test_comparison_html_escapes_group_names(cmp):
    html = cmp._repr_html_()
    assert HOSTILE not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; (N=80)" in html
    assert html.count("<tr>") == 1 + len(cmp.scores)  # header and one row per score


def test_comparison_to_frame_holds_its_estimates(cmp):
    frame = cmp.to_frame()
    assert list(frame.columns[:8]) == ["group", "score", "q", "value", "low", "high", "level", "kind"]
    assert len(frame) == len(cmp.estimates)
    for row in frame.itertuples():
        e = cmp.estimate(row.group, row.score)
        assert row.value == e.estimate and row.n == cmp.n and row.method == e.interval
        if row.kind == "estimate":
            assert (row.low, row.high, row.level) == (*e.confidence_interval, 0.95)
        else:
            assert e.role == "reference" and row.score.startswith("MagDiff") and row.low == row.high == 0.0
    assert frame.loc[frame.score == "VS_inf", "q"].tolist() == [math.inf] * 3
    pairs = cmp.to_frame("pairwise")
    assert len(pairs) == len(cmp.pairwise)
    p = cmp.pair("VS_1", "a", "c")
    row = pairs[(pairs.score == "VS_1") & (pairs.group_a == "a") & (pairs.group_b == "c")].iloc[0]
    assert (row.value, row.low, row.high, row.resolved) == (p.difference, *p.confidence_interval, p.resolved)
    with pytest.raises(DiversityInputError, match="unknown table 'curves'; choose 'estimates' or 'pairwise'"):
        cmp.to_frame("curves")


def test_comparison_plot_is_the_reports_figure(cmp):
    pytest.importorskip("plotly")
    from diversity_core.report.figures import comparison_figures

    figures = comparison_figures(cmp)
    _same_figure(cmp.plot(), figures["scores"])
    _same_figure(cmp.plot("magnitude"), figures["magnitude"])
    with pytest.raises(DiversityInputError, match="no 'map' figure for this comparison; choose one of: 'scores'"):
        cmp.plot("map")


# ---------------------------------------------------------------------------------------------
# EvaluationResult
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def evaluation():
    from diversity_core.evaluation import evaluate

    rng = np.random.default_rng(2)
    return evaluate(rng.normal(size=(120, 8)), rng.normal(size=(100, 8)), train=rng.normal(size=(120, 8)), rng=0,
                    kid_subsets=10)


def test_evaluation_repr_is_short(evaluation):
    text = _bounded(evaluation)
    assert text.startswith("EvaluationResult(n_reference=120, n_generated=100, d=8)")
    assert f"precision / recall: {evaluation.prdc.precision.text()}" in text
    for part in (evaluation.prdc, evaluation.improved, evaluation.frechet, evaluation.memorization):
        _bounded(part, max_chars=500)
    assert repr(evaluation.prdc).splitlines()[1] == f"  precision: {evaluation.prdc.precision.text()}"


def test_evaluation_to_frame_is_its_table(evaluation):
    frame = evaluation.to_frame()
    rows = evaluation.table_rows()
    assert frame["score"].tolist() == [r["metric"] for r in rows]
    for row, r in zip(frame.itertuples(), rows):
        assert row.value == r["value"]
        if r["ci_low"] is not None and math.isfinite(r["ci_low"]):
            assert row.kind == "estimate" and (row.low, row.high) == (r["ci_low"], r["ci_high"])
    precision = frame[frame.score == "precision"].iloc[0]
    assert precision.level == evaluation.prdc.precision.confidence_interval.level
    assert frame[frame.score == "authenticity"].iloc[0].kind == "exact"
    html = evaluation._repr_html_()
    assert html.count("<tr>") == 1 + len(rows)


def test_evaluation_plot_is_the_reports_figure(evaluation):
    pytest.importorskip("plotly")
    from diversity_core.report.figures.evaluation import evaluation_figures

    figures = evaluation_figures({HOSTILE: evaluation}, reference="real")
    _same_figure(evaluation.plot(name=HOSTILE, reference="real"), figures["fidelity_diversity"])
    _same_figure(evaluation.plot("vendi_ratio", name=HOSTILE, reference="real"), figures["vendi_ratio"])
    assert HOSTILE not in evaluation.plot(name=HOSTILE).to_json()
    with pytest.raises(DiversityInputError, match="unknown figure 'map'"):
        evaluation.plot("map")


# ---------------------------------------------------------------------------------------------
# curation
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def features():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 8))
    return np.concatenate([X, X[:50] + 1e-9])


def test_curation_reprs_are_short_for_large_results(features):
    results = [
        dc.item_contributions(features, method="first_order"),
        dc.find_duplicates(features),
        dc.rarity_scores(features),
        dc.select_diverse(features, 300, rng=0),
        dc.compare_selections(features, 300, rng=0),
    ]
    for r in results:
        text = _bounded(r, max_chars=800)
        assert "\n" in text and "..." not in text.splitlines()[0]
    assert "indices: array(shape=(300,)" in repr(results[3])
    assert repr(results[1]).startswith("DuplicateResult(n=650, 50 groups, 50 removable)")


def test_curation_summary_tables_and_existing_frames(features):
    dup = dc.find_duplicates(features)
    s = dup.summary_frame()
    assert s[(s.group == "deduplicated") & (s.score == "removable")].value.item() == 50
    assert (s.kind == "exact").all()
    vs = s[(s.score == "vendi") & (s.group == "original")]
    assert vs.value.tolist() == list(dup.vendi_original) and vs.q.tolist() == list(dup.qs)
    ids = [f"item {i}" for i in range(len(features))]
    assert list(dup.to_frame(ids=ids).columns[:2]) == ["item", "id"]  # the per-item frames are unchanged
    contrib = dc.item_contributions(features[:100])
    assert contrib.to_frame(ids=ids[:100]).shape == (100, 2 + len(contrib.qs))
    c = contrib.summary_frame()
    assert c[c.score == "vendi"].value.tolist() == list(contrib.vendi)
    rare = dc.rarity_scores(features[:100])
    assert rare.summary_frame().set_index("score").value["rarity_max"] == rare.scores.max()
    assert "<table" in contrib._repr_html_() and "<table" in rare._repr_html_() and "<table" in dup._repr_html_()


def test_selection_comparison_html_escapes_and_plot_is_the_curate_pages(features):
    pytest.importorskip("plotly")
    from diversity_core.curation import SelectionComparison
    from diversity_core.report.figures.curation import SELECTION_LABELS, selection_figure

    sel = dc.compare_selections(features[:200], 20, rng=0)
    _same_figure(sel.plot(), selection_figure(sel.selections, 1.0))
    _same_figure(sel.plot(q=2), selection_figure(sel.selections, 2.0))
    names = [t.name for t in sel.plot().data]
    assert names == [SELECTION_LABELS[m] for m in sel.methods]
    one = sel.selections["greedy"]
    _same_figure(one.plot(), selection_figure({"greedy": one}, 1.0))
    with pytest.raises(DiversityInputError, match="order q=3 was not computed"):
        one.plot(q=3)
    hostile = SelectionComparison(selections={HOSTILE: one})
    assert HOSTILE not in hostile._repr_html_() and "&lt;script&gt;" in hostile._repr_html_()
    assert HOSTILE not in hostile.plot().to_json()
    frame = sel.summary_frame()
    assert frame[(frame.group == "greedy") & (frame.score == "vendi") & (frame.q == 1.0)].value.item() == one.vendi(1)


def test_the_curate_page_draws_the_cores_selection_figure(features):
    pytest.importorskip("streamlit")
    pytest.importorskip("plotly")
    from ui import curate_ui

    sel = dc.compare_selections(features[:200], 20, rng=0)
    _same_figure(curate_ui.selection_figure(sel, 1.0), sel.plot())


def test_other_curation_plots_use_the_core_builders(features):
    pytest.importorskip("plotly")
    from diversity_core.report.figures import bar_figure, histogram_figure

    rare = dc.rarity_scores(features[:100])
    assert rare.plot().data[0].x.tolist() == histogram_figure(rare.scores).data[0].x.tolist()
    contrib = dc.item_contributions(features[:100])
    assert contrib.plot(q="inf").data[0].x.tolist() == contrib.contribution("inf").tolist()
    dup = dc.find_duplicates(features)
    fig = dup.plot(max_groups=5)
    assert list(fig.data[0].y) == [2] * 5 and "largest 5 of 50" in fig.layout.title.text
    assert type(fig) is type(bar_figure(["a"], [1]))


# ---------------------------------------------------------------------------------------------
# RobustnessResult (the Robustness page's and `diversity robustness`'s result)
# ---------------------------------------------------------------------------------------------
def test_robustness_result_in_a_notebook():
    from diversity_core.report.figures import rank_figure
    from diversity_core.robustness import representation_robustness

    rng = np.random.default_rng(3)
    groups = np.repeat(["a", HOSTILE, "c"], 40)
    X = rng.normal(size=(120, 6)) * np.repeat([1.0, 0.5, 2.0], 40)[:, None]
    res = representation_robustness({"raw": X, "squared": X**2}, groups, kernels=["cosine", "rbf"],
                                    n=30, n_subsamples=5, n_resamples=5)
    text = _bounded(res, 900)
    assert text.startswith("RobustnessResult(verdict=")
    frame = res.to_frame()
    assert len(frame) == len(res.rows) * 3
    for r in res.rows:
        for g in res.groups:
            row = frame[(frame.group == g) & (frame.representation == r.representation) & (frame.kernel == r.kernel)]
            est, lo, hi = r.estimates[g]
            assert row.value.item() == est and row.low.item() == lo and row.high.item() == hi
            assert row["rank"].item() == r.ranking.index(g) + 1
    html = res._repr_html_()
    assert HOSTILE not in html and "&lt;script&gt;" in html
    _same_figure(res.plot(), rank_figure(res))
