"""metric_agreement (issue 43, item 6): the groups' ranking under every metric, rank flips with their intervals.

The constructed pair where the metrics provably disagree (cosine kernel, d = 40):

- A: half of the items near-copies of one direction, half spread in every direction. The copies
  carry an eigenvalue of about 1/2 of K/n, so VS_inf = 1/lambda_max is about 2, while the spread half
  adds ~30 small eigenvalues that VS_0.5 (and VS_1, IntDiv) count.
- B: three tight, mutually orthogonal clusters of equal size: K/n has three eigenvalues of 1/3,
  so every VS_q is about 3.

Hence VS_inf ranks B > A and VS_0.5 ranks A > B, both by far more than their intervals.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from diversity_core import MetricAgreement, metric_agreement
from diversity_core.agreement import DEFAULT_METRICS, MetricScores
from diversity_core.compare import compare
from diversity_core.evaluation import dcscore, rke_mode_count
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import get_kernel
from diversity_core.robustness import RepresentationScores

D = 40


def duplicates_and_spread(rng, n=60):
    dup = np.tile(np.eye(D)[0], (n // 2, 1)) + 0.01 * rng.normal(size=(n // 2, D))
    return np.vstack([dup, rng.normal(size=(n - n // 2, D))])


def three_clusters(rng, n=60):
    return np.vstack([np.tile(np.eye(D)[k + 1], (n // 3, 1)) + 0.01 * rng.normal(size=(n // 3, D)) for k in range(3)])


@pytest.fixture
def rng():
    return np.random.default_rng(1)


@pytest.fixture
def disagreeing(rng):
    return {"A": duplicates_and_spread(rng), "B": three_clusters(rng)}


@pytest.fixture
def result(disagreeing):
    return metric_agreement(disagreeing, rng=0)


def test_the_constructed_sets_are_what_the_docstring_says(result):
    vs_inf, vs_half = result.row("VS_inf"), result.row("VS_0.5")
    assert vs_inf.estimates["B"][0] == pytest.approx(3.0, rel=0.02)
    assert 1.7 < vs_inf.estimates["A"][0] < 2.3
    assert vs_half.estimates["A"][0] > 3 * vs_half.estimates["B"][0]


def test_two_metrics_that_disagree_give_a_resolved_flip(result):
    assert result.metrics == DEFAULT_METRICS
    assert result.row("VS_inf").ranking == ("B", "A")
    assert result.row("VS_0.5").ranking == ("A", "B")
    assert result.verdict == "depends" and result.depends_on == "metric"
    (flip,) = result.flips
    assert flip.resolved and flip.differs == "metric"
    assert "VS_inf" in (flip.where_higher, flip.where_lower)
    # both differences' intervals exclude 0, with opposite signs
    d_hi = result.row(flip.where_higher).difference(flip.higher, flip.lower)
    d_lo = result.row(flip.where_lower).difference(flip.higher, flip.lower)
    assert d_hi[1] > 0 and d_lo[2] < 0
    assert result.summary().startswith("The ranking depends on the metric: ")
    assert "ranks A > B" in result.summary() and "ranks B > A" in result.summary()
    (line,) = result.flip_lines()
    assert "both orders resolved" in line and "VS_inf: A - B = -" in line


def test_sets_from_one_distribution_have_no_resolved_flip():
    for seed in (0, 1, 2):
        g = np.random.default_rng(seed)
        sets = {"a": g.normal(size=(80, 12)), "b": g.normal(size=(80, 12)), "c": g.normal(size=(80, 12))}
        res = metric_agreement(sets, n_subsamples=10, n_resamples=10, rng=seed)
        assert res.verdict in ("stable", "unresolved"), res.summary()
        assert not any(f.resolved for f in res.flips)


def test_values_are_the_engines_own(disagreeing):
    res = metric_agreement(disagreeing, metrics=["VS_1", "IntDiv", "RKE_MC", "DCScore"], kernel="rbf",
                           n_subsamples=10, n_resamples=10, rng=3)
    sigma = res.kernel["sigma"]
    kern = get_kernel("rbf", sigma=sigma)
    cmp = compare(disagreeing, kernel=kern, qs=(1.0,), n_subsamples=10, n_resamples=10, magnitude=False,
                  size_curve=False, rng=3)
    for e in cmp.estimates:
        assert res.row(e.score).estimates[e.group][0] == e.estimate
        assert res.row(e.score).estimates[e.group][1:] == tuple(e.confidence_interval)
    for p in cmp.pairwise:
        assert res.row(p.score).difference(p.group_a, p.group_b)[0] == p.difference
    for g, X in disagreeing.items():  # n = the set's size: the pack metric on all of it
        assert res.row("RKE_MC").estimates[g][0] == pytest.approx(
            rke_mode_count(X, kernel=kern, n_resamples=0).mode_count.value, rel=1e-12)
        assert res.row("DCScore").estimates[g][0] == pytest.approx(
            dcscore(X, kernel=kern, n_resamples=0).value.value, rel=1e-12)
    assert all(r.kernel == "rbf" for r in res.rows)


def test_pack_pairs_are_resolved_by_the_comparisons_rule(result, disagreeing):
    """A pack metric's difference: the SEs in quadrature, Welch-Satterthwaite df, resolved when 0 is outside."""
    import math

    from diversity_core.compare._subsample import t_quantile, welch_df

    row = result.row("DCScore")
    assert row.source == "pack"
    ests = {g: dcscore(X, kernel="cosine", rng=np.random.default_rng(0), n_resamples=20).value
            for g, X in disagreeing.items()}
    a, b = ests["A"], ests["B"]
    assert row.estimates["A"] == (a.value, *a.confidence_interval)
    se = math.hypot(a.se, b.se)
    half = float(t_quantile(0.95, welch_df((a.se, b.se), (a.df, b.df)))) * se
    d, lo, hi = row.difference("A", "B")
    assert (d, lo, hi) == pytest.approx((a.value - b.value, a.value - b.value - half, a.value - b.value + half))
    assert row.is_resolved("A", "B") == (lo > 0 or hi < 0)
    assert row.difference("B", "A") == pytest.approx((-d, -hi, -lo))


def test_equal_n_takes_the_smallest_group(rng):
    sets = {"big": rng.normal(size=(90, 8)), "small": rng.normal(size=(30, 8))}
    res = metric_agreement(sets, metrics=["VS_1", "RKE_MC"], n_subsamples=5, n_resamples=5, rng=0)
    assert res.n == 30 and res.group_sizes == (90, 30)
    assert set(res.to_frame()["n"]) == {30}
    kern = get_kernel("cosine")
    assert res.row("RKE_MC").estimates["small"][0] == pytest.approx(
        rke_mode_count(sets["small"], kernel=kern, n_resamples=0).mode_count.value, rel=1e-12)


def test_several_representations_flip_on_the_representation(disagreeing):
    swapped = {"A": disagreeing["B"], "B": disagreeing["A"]}
    res = metric_agreement(disagreeing, metrics=["VS_0.5"], representations={"swapped": swapped},
                           representation="given", n_subsamples=10, n_resamples=10, rng=0)
    assert [r.label for r in res.rows] == ["VS_0.5 · given", "VS_0.5 · swapped"]
    assert res.verdict == "depends" and res.depends_on == "representation"
    assert res.summary().startswith("The ranking depends on the representation")


def test_texts_add_the_lexical_metrics_in_their_direction(rng):
    words = [f"w{i}" for i in range(400)]
    varied = [" ".join(rng.choice(words, 12)) for _ in range(40)]
    repeated = ["the cat sat on the mat and the dog sat on the log"] * 20 + [
        " ".join(rng.choice(words, 12)) for _ in range(20)]
    sets = {"varied": rng.normal(size=(40, 6)), "repeated": rng.normal(size=(40, 6))}
    res = metric_agreement(sets, texts={"varied": varied, "repeated": repeated}, n_subsamples=5, n_resamples=5,
                           rng=0)
    assert res.metrics[-3:] == ("compression_ratio", "ngram_diversity", "self_BLEU")
    for m in ("compression_ratio", "self_BLEU"):
        row = res.row(m)
        assert not row.higher_is_better and row.representation == "texts"
        assert row.estimates["repeated"][0] > row.estimates["varied"][0]
        assert row.ranking == ("varied", "repeated")  # lower is more diverse
        assert row.order("varied", "repeated") == 1
    assert res.row("ngram_diversity").ranking == ("varied", "repeated")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"metrics": ["VS_1", "Simpson"]}, "unknown metric 'Simpson'"),
        ({"metrics": ["self_BLEU"]}, "read the items' texts"),
        ({"representations": {"other": {"A": np.ones((60, 3))}}}, "same groups"),
        ({"n": 500}, "n=500|exceeds|smaller"),
    ],
)
def test_bad_input_says_what_to_do(disagreeing, kwargs, match):
    with pytest.raises(DiversityInputError, match=match):
        metric_agreement(disagreeing, **kwargs)


def test_one_group_is_refused(rng):
    with pytest.raises(DiversityInputError, match="at least 2 groups"):
        metric_agreement({"a": rng.normal(size=(30, 4))})


def test_tce_on_too_few_dimensions_is_skipped_with_its_reason(rng):
    sets = {"a": rng.normal(size=(40, 5)), "b": rng.normal(size=(40, 5))}
    res = metric_agreement(sets, metrics=["VS_1", "TCE"], n_subsamples=5, n_resamples=5, rng=0)
    assert "TCE" in res.skipped and res.metrics == ("VS_1",)


def test_rows_share_the_robustness_interface(result):
    assert all(isinstance(r, MetricScores) and isinstance(r, RepresentationScores) for r in result.rows)
    json.dumps(result.to_dict())
    assert result.to_dict()["verdict"] == "depends"


def test_repr_html_frame_and_plot():
    rng = np.random.default_rng(1)
    sets = {"<script>x</script>": duplicates_and_spread(rng), "B": three_clusters(rng)}
    res = metric_agreement(sets, metrics=["VS_0.5", "VS_inf"], n_subsamples=10, n_resamples=10, rng=0)
    assert isinstance(res, MetricAgreement)
    text = repr(res)
    assert len(text.splitlines()) <= 10 and text.startswith("MetricAgreement(2 groups x 2 rows, n=60")
    page = res._repr_html_()
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page and "Rank flips" in page
    frame = res.to_frame()
    assert list(frame.columns[:8]) == ["group", "score", "q", "value", "low", "high", "level", "kind"]
    assert len(frame) == 4 and set(frame["rank"]) == {1, 2}
    assert frame.loc[frame["score"] == "VS_inf", "q"].iloc[0] == np.inf
    pytest.importorskip("plotly")
    fig = res.plot()
    assert len(fig.data) == 2 and list(fig.data[0].x) == ["VS_0.5", "VS_inf"]
    assert fig.data[0].text[1].startswith("VS_inf = ")
    assert "every metric" in fig.layout.title.text


def test_cli_metrics_table_json_and_bad_metric(capsys, tmp_path):
    from diversity_core.cli import main

    rng = np.random.default_rng(1)
    X = np.vstack([duplicates_and_spread(rng), three_clusters(rng)])
    groups = np.repeat(["A", "B"], 60)
    path = tmp_path / "sets.csv"
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(D)])
    frame.insert(0, "group", groups)
    frame.to_csv(path, index=False)
    args = ["robustness", str(path), "--group-column", "group", "--n-subsamples", "10", "--n-resamples", "10"]
    assert main([*args, "--metrics", "VS_0.5", "VS_inf", "--kernels", "cosine"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("The ranking depends on the metric: ")
    assert "Rank flips:" in out and "VS_inf: A - B = -" in out
    assert main([*args, "--metrics", "VS_0.5", "VS_inf", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "depends" and [r["metric"] for r in data["rows"]] == ["VS_0.5", "VS_inf"]
    assert main([*args, "--metrics", "VS_1", "Simpson"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("diversity: error: unknown metric 'Simpson'")


def test_a_text_dataset_ranks_its_groups_with_its_texts():
    from diversity_core.data import load_demo

    ds = load_demo("text")
    res = metric_agreement(ds, metrics=["VS_1", "self_BLEU"], n_subsamples=5, n_resamples=5, rng=0)
    assert [r.label for r in res.rows] == ["VS_1", "self_BLEU"]
    assert res.representations == ("ngram", "texts") and res.groups == tuple(ds.group_names())
    assert res.row("self_BLEU").source == "pack" and not res.row("self_BLEU").higher_is_better
