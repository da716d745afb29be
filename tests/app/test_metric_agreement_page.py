"""The Robustness page's "Under every metric" part under ``AppTest`` (issue 43, item 6): on the icons demo the
groups' order under VS_0.5 reverses under VS_1 (both orders resolved), the page says the ranking depends on the
metric, draws the rank chart, and its table holds the core's own numbers; the representation test is untouched."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from diversity_core.agreement import DEFAULT_METRICS, metric_agreement
from diversity_core.data import load_demo
from diversity_core.featurizers import default_kernel, featurize

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/9_robustness.py"


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_icons_rank_flip_between_metrics():
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "icons"})
    at.run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert any(s.value == "Under every metric" for s in at.subheader)
    assert tuple(at.multiselect(key="agreement_metrics").value) == DEFAULT_METRICS
    assert at.button(key="run_robustness")  # the representation test is still there
    assert not at.get("plotly_chart")  # nothing runs on the first view

    at.multiselect(key="agreement_metrics").set_value(["VS_0.5", "VS_1"]).run()
    at.button(key="run_agreement").click().run()
    assert_clean(at)
    warnings = [w.value for w in at.warning]
    assert any("Rank flip." in w and "The ranking depends on the metric" in w for w in warnings), warnings
    assert len(at.get("plotly_chart")) == 1
    assert any("Rank flips between metrics" in m.value and "both orders resolved" in m.value for m in at.markdown)

    ds = load_demo("icons")
    featurizer = at.session_state["featurizer"] if at.session_state["featurizer"] != "default" else "pixels"
    X = featurize(ds, featurizer)
    labels = np.asarray(ds.groups).astype(str)
    names = list(dict.fromkeys(labels.tolist()))
    expected = metric_agreement({g: X[labels == g] for g in names}, metrics=["VS_0.5", "VS_1"],
                                representation=featurizer, kernel=default_kernel(featurizer),
                                rng=int(at.session_state["subsample_seed"]))
    table = at.dataframe[0].value
    assert list(table["metric"]) == ["VS_0.5", "VS_1"]
    assert table.equals(expected.wide())
    assert expected.verdict == "depends"


def test_metrics_on_several_representations():
    """Every representation the app offers can be chosen: one row per metric and representation, as the core's."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "text", "n": "150", "seed": "2"})
    at.run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    featurizer = at.session_state["featurizer"]
    reps = at.multiselect(key="agreement_representations")
    assert reps.value == [featurizer] and len(reps.options) >= 2
    other = next(r for r in reps.options if r != featurizer)
    reps.set_value([featurizer, other]).run()
    at.multiselect(key="agreement_metrics").set_value(["VS_1", "IntDiv"]).run()
    at.button(key="run_agreement").click().run()
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 4  # two metrics on each of two representations
    assert any(other in str(v) for v in table.iloc[:, 0]), table
