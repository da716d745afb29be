"""Score-side results in a notebook (issue 42, item 1): short reprs, HTML tables, tidy frames, plots.

The helpers of :mod:`diversity_core._display`, then each public score-side result: its repr is at
most ten lines and bounded on a large result, ``_repr_html_`` escapes a hostile group name,
``to_frame()`` holds the object's numbers, ``.plot()`` is the report's figure for the object.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from diversity_core import ConfidenceInterval
from diversity_core._display import (
    FRAME_COLUMNS,
    MAX_REPR_LINES,
    NotebookDisplay,
    format_array,
    format_interval,
    frame_row,
    html_table,
    short_repr,
    tidy_frame,
)

HOSTILE = '<script>alert("x")</script>'


def _check_repr(obj, *, max_chars: int = 1200) -> str:
    text = repr(obj)
    assert len(text.splitlines()) <= MAX_REPR_LINES, text
    assert len(text) <= max_chars, (len(text), text)
    return text


# --- the helpers --------------------------------------------------------------------------------


def test_format_array_shows_shape_and_a_few_values_only():
    text = format_array(np.arange(10_000, dtype=float))
    assert text == "array(shape=(10000,), [0, 1, 2, 3, ...])"
    assert format_array(np.array([0.5, 0.25])) == "array(shape=(2,), [0.5, 0.25])"


def test_short_repr_is_bounded_whatever_the_fields():
    fields = {f"f{i}": np.random.default_rng(i).normal(size=1000) for i in range(30)}
    fields["long"] = "x" * 5000
    text = short_repr("Thing(n=1000)", fields)
    lines = text.splitlines()
    assert len(lines) == MAX_REPR_LINES
    assert lines[-1] == "  ... (23 more)"  # 31 fields, 8 shown
    assert max(map(len, lines)) <= 100


def test_short_repr_skips_none():
    assert short_repr("T()", {"a": None, "b": 2.0}) == "T()\n  b: 2"


def test_format_interval_kinds():
    assert format_interval(12.0, ConfidenceInterval(11.0, 13.5, level=0.95)) == "12 [11, 13.5] (estimate, 95%)"
    assert format_interval(3.0, ConfidenceInterval.bound(2.0, 4.0)) == "3 [2, 4] (bound)"
    assert format_interval(4.2) == "4.2 (exact)"


def test_frame_row_follows_the_convention():
    est = frame_row("vendi", 3.0, ConfidenceInterval(2.0, 4.0, level=0.9), group="a", q=1.0)
    assert est == {"group": "a", "score": "vendi", "q": 1.0, "value": 3.0, "low": 2.0, "high": 4.0,
                   "level": 0.9, "kind": "estimate"}
    exact = frame_row("vendi", 5.0)
    assert (exact["low"], exact["high"], exact["level"], exact["kind"]) == (5.0, 5.0, 1.0, "exact")
    bound = frame_row("vendi", 5.0, (4.0, 6.0))
    assert (bound["level"], bound["kind"]) == (1.0, "bound")
    point = frame_row("rnd", 0.3, kind="estimate")
    assert math.isnan(point["low"]) and point["kind"] == "estimate"


def test_tidy_frame_columns_and_optional_group_q():
    frame = tidy_frame([frame_row("vendi", 3.0, q=1.0), frame_row("vendi", 2.0, q=math.inf, n=7)])
    assert list(frame.columns) == ["score", "q", "value", "low", "high", "level", "kind", "n"]
    assert frame["q"].tolist() == [1.0, math.inf]
    frame = tidy_frame([frame_row("mag_area", 3.0, group="g")])
    assert list(frame.columns) == [c for c in FRAME_COLUMNS if c != "q"]


def test_html_table_escapes_every_user_string():
    frame = tidy_frame([frame_row("vendi", 3.0, group=HOSTILE, q=1.0), frame_row("vendi", 2.0, q=2.0)])
    frame[HOSTILE] = 1
    out = html_table(frame, caption=HOSTILE)
    assert "<script>" not in out
    assert out.count("&lt;script&gt;") == 3  # the caption, a cell, a column name
    assert ">nan<" not in out  # an empty group is an empty cell


def test_html_table_cuts_long_frames():
    out = html_table([frame_row("x", float(i)) for i in range(100)], max_rows=5)
    assert out.count("<tr>") == 1 + 5 + 1 and "95 more rows" in out


def test_notebook_display_mixin():
    class Thing(NotebookDisplay):
        def __repr__(self):
            return short_repr(f"Thing(name={HOSTILE!r})", {"v": 1.0})

        def to_frame(self):
            return tidy_frame([frame_row("v", 1.0, group=HOSTILE)])

    out = Thing()._repr_html_()
    assert "<script>" not in out and "Thing(name=" in out


# --- the score-side results -----------------------------------------------------------------------

N = 240


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(N, 12))


@pytest.fixture(scope="module")
def sets():
    rng = np.random.default_rng(1)
    return {HOSTILE: rng.normal(size=(60, 4)), "b": 0.5 * rng.normal(size=(50, 4)), "c": rng.normal(size=(40, 4))}


@pytest.fixture(scope="module")
def results(X, sets):
    """One of each score-side result (small sizes)."""
    import diversity_core as dc
    from diversity_core.approx import plan_scores

    qs = np.r_[0.0, np.geomspace(0.1, 10.0, 30), 1.0, 2.0, np.inf]
    out = {
        "Spectrum": dc.compute_spectrum(X, kernel="rbf"),
        "VS2Result": dc.vendi_2_exact(X, kernel="rbf"),
        # hundreds of eigenvalues: the repr printed every one (issue 42)
        "VendiBounds": dc.vendi_bounds(X, kernel="rbf", k=200, q=np.unique(qs)),
        "VendiEstimate": dc.vendi_estimate(X, kernel="rbf", method="nystrom", m=60, rng=0),
        "VendiSLQ": dc.vendi_slq(X, kernel="rbf", k=16, probes=8, rng=0),
    }
    plan = plan_scores(N, 12, kernel="rbf", q=[0.5, 1.0, 2.0], approx="slq", k=16, probes=8)
    out["PlanResult"] = dc.PlanResult(plan=plan, bounds=out["VendiBounds"], estimate=out["VendiSLQ"])
    rng = np.random.default_rng(2)
    out["RNDResult"] = dc.RNDResult(0.3, 0.2, 0.4, rng.random(5), rng.random((5, 300)), rng.random((5, 300)),
                                    rng.random((5, 300)), {"average_last": 10, "epochs": 300, "confidence": 0.95})
    Y, Z = sets[HOSTILE], sets["b"]
    out["MagnitudeResult"] = dc.magnitude_weights(Y, t=1.0)
    out["MagnitudeFunction"] = dc.magnitude_function(Y)
    out["MagAreaResult"] = dc.mag_area(Y)
    out["MagDiffResult"] = dc.mag_diff(Y, Z)
    out["MagnitudeComparison"] = dc.compare_magnitude(sets, reference=HOSTILE)
    out["MagDiffMatrix"] = dc.mag_diff_matrix(sets)
    out["MagnitudeDimension"] = dc.magnitude_dimension(Y, n_scales=20)
    out["SpreadFunction"] = dc.spread_function(Y)
    groups = np.array([HOSTILE if i % 3 == 0 else f"g{i % 9}" for i in range(N)])
    out["Dataset"] = dc.Dataset(name=HOSTILE, modality="embeddings", items=None, features=X, groups=groups,
                                weights=None, ids=[f"<b>row {i}</b>" for i in range(N)])
    return out


ALL = ("Spectrum", "VS2Result", "VendiBounds", "VendiEstimate", "VendiSLQ", "PlanResult", "RNDResult",
       "MagnitudeResult", "MagnitudeFunction", "MagAreaResult", "MagDiffResult", "MagnitudeComparison",
       "MagDiffMatrix", "MagnitudeDimension", "SpreadFunction", "Dataset")
FRAMED = tuple(name for name in ALL if name != "Dataset")
PLOTTED = ("Spectrum", "VendiBounds", "VendiEstimate", "VendiSLQ", "PlanResult", "RNDResult", "MagnitudeFunction",
           "MagAreaResult", "MagDiffResult", "MagnitudeComparison", "MagDiffMatrix", "MagnitudeDimension")


@pytest.mark.parametrize("name", ALL)
def test_repr_is_short(results, name):
    text = _check_repr(results[name], max_chars=600)
    assert text.startswith(f"{name}(")
    assert "\n" in text  # a title line, then the headline numbers one per line
    assert "\n  " in text and "[[" not in text  # fields indented; no matrix printed


def test_vendi_bounds_repr_no_longer_lists_its_eigenvalues(results):
    b = results["VendiBounds"]
    assert b.top_eigenvalues.size >= 200
    text = _check_repr(b, max_chars=600)  # was 103 lines and 7,676 characters with 300 eigenvalues
    assert "top_eigenvalues: array(shape=(" in text and "VS_inf: [" in text and "(bound)" in text


@pytest.mark.parametrize("name", ALL)
def test_repr_html_escapes_user_strings(results, name):
    out = results[name]._repr_html_()
    assert out.startswith("<table") and "<script" not in out and "<b>" not in out
    if name in ("MagnitudeComparison", "MagDiffMatrix", "Dataset"):
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in out


def test_dataset_html_lists_groups_with_counts_and_ids(results):
    ds = results["Dataset"]
    out = ds._repr_html_()
    assert out.count("<tr>") == 1 + len(ds.group_names())  # the header, one row per group
    assert ds.group_names()[0] == HOSTILE and "<td style=\"padding:0 0.6em;text-align:right\">80</td>" in out
    assert "&lt;b&gt;row 0&lt;/b&gt;, &lt;b&gt;row 3&lt;/b&gt;" in out  # the group's first ids
    text = repr(ds)
    assert "groups: " in text and "(80)" in text and "ids: '<b>row 0</b>'" in text


@pytest.mark.parametrize("name", FRAMED)
def test_to_frame_follows_the_convention(results, name):
    frame = results[name].to_frame()
    standard = [c for c in FRAME_COLUMNS if c in frame.columns]
    assert list(frame.columns[: len(standard)]) == standard
    assert {"score", "value", "low", "high", "level", "kind"} <= set(frame.columns)
    assert set(frame["kind"]) <= {"exact", "bound", "estimate"} and len(frame) > 0
    for c in ("value", "low", "high", "level"):
        assert frame[c].dtype == np.float64


def test_frames_hold_the_objects_numbers(results):
    spec = results["Spectrum"]
    f = spec.to_frame()
    np.testing.assert_array_equal(f["q"], [0.0, 1.0, 2.0, np.inf])
    np.testing.assert_array_equal(f["value"], spec.profile([0.0, 1.0, 2.0, np.inf]))
    assert (f["kind"] == "exact").all() and (f["low"] == f["value"]).all()

    b = results["VendiBounds"]
    f = b.to_frame()
    np.testing.assert_array_equal(f["q"], b.qs)
    np.testing.assert_array_equal(f["low"], b.low)
    np.testing.assert_array_equal(f["high"], b.high)
    assert f["value"].isna().all() and (f["kind"] == "bound").all() and (f["level"] == 1.0).all()

    for name in ("VendiEstimate", "VendiSLQ"):
        e = results[name]
        f = e.to_frame()
        np.testing.assert_array_equal(f["value"], e.value)
        np.testing.assert_array_equal(f["low"], e.low)
        np.testing.assert_array_equal(f["high"], e.high)
        assert (f["level"] == e.confidence_level).all() and (f["kind"] == "estimate").all()

    p = results["PlanResult"].to_frame()
    assert list(p["part"].unique()) == ["estimate", "bounds"]
    assert len(p) == results["VendiSLQ"].qs.size + results["VendiBounds"].qs.size

    v2 = results["VS2Result"]
    f = v2.to_frame().set_index("score")
    assert f.loc["intdiv", "value"] == v2.intdiv
    vendi = f.loc["vendi"].set_index("q")
    assert vendi.loc[2.0, "value"] == v2.vs2
    assert (vendi.loc[np.inf, "low"], vendi.loc[np.inf, "high"]) == (v2.vs_inf_lower, v2.vs_inf_upper)

    r = results["RNDResult"]
    row = r.to_frame().iloc[0]
    assert (row["score"], row["value"], row["low"], row["high"], row["level"], row["kind"]) == (
        "rnd", 0.3, 0.2, 0.4, 0.95, "estimate")

    m = results["MagnitudeFunction"]
    f = m.to_frame()
    np.testing.assert_array_equal(f["t"], m.ts)
    np.testing.assert_array_equal(f["value"], m.values)
    np.testing.assert_array_equal(f["error"], m.errors)

    a = results["MagAreaResult"].to_frame().set_index("score")
    assert a.loc["mag_area", "value"] == results["MagAreaResult"].area

    c = results["MagnitudeComparison"]
    f = c.to_frame()
    areas = f[f["score"] == "mag_area"].set_index("group")["value"]
    assert areas.to_dict() == pytest.approx(c.areas, rel=0, abs=0)
    diffs = f[f["score"] == "mag_diff"].set_index("group")["value"]
    assert diffs.to_dict() == c.mag_diff

    mm = results["MagDiffMatrix"]
    f = mm.to_frame()
    assert len(f) == len(mm.names) * (len(mm.names) - 1)
    row = f[(f["group"] == HOSTILE) & (f["against"] == "b")].iloc[0]
    assert row["value"] == mm.values[0, 1] and row["absolute"] == mm.absolute[0, 1]

    d = results["MagnitudeDimension"]
    assert d.to_frame()["value"].tolist() == [d.dimension]
    s = results["SpreadFunction"]
    np.testing.assert_array_equal(s.to_frame()["value"], s.values)
    mr = results["MagnitudeResult"].to_frame().iloc[0]
    assert (mr["value"], mr["t"]) == (results["MagnitudeResult"].value, 1.0)


def _report_figure(name, obj):
    """The figure the app / report builds for ``obj``, called here the way they call it."""
    from diversity_core.report import figures as F

    if name == "Spectrum":
        return F.spectrum_figure(obj.eigenvalues)
    if name == "VendiBounds":
        return F.vendi_bounds_figure(None, obj, n=obj.n)
    if name in ("VendiEstimate", "VendiSLQ"):
        from diversity_core.approx._results import estimate_label

        return F.vendi_bounds_figure(None, None, obj, n=obj.n, estimate_label=estimate_label(obj))
    if name == "PlanResult":
        from diversity_core.approx._results import estimate_label

        return F.vendi_bounds_figure(None, obj.bounds, obj.estimate, n=obj.plan.n,
                                     estimate_label=estimate_label(obj.estimate))
    if name == "RNDResult":
        return F.rnd_figure(obj.curves, average_last=10, total_epochs=300)
    if name == "MagnitudeFunction":
        return F.magnitude_figure({"Mag(t)": (obj.ts, obj.values)}, t_conv={"Mag(t)": obj.t_conv},
                                  sizes={"Mag(t)": obj.n_distinct})
    if name == "MagAreaResult":
        f = obj.function
        return F.magnitude_figure({"Mag(t)": (f.ts, f.values)}, t_conv={"Mag(t)": f.t_conv}, t_cut=obj.t_cut,
                                  sizes={"Mag(t)": f.n_distinct})
    if name == "MagDiffResult":
        fx, fy = obj.function_x, obj.function_y
        return F.magnitude_figure({"X": (fx.ts, fx.values), "Y": (fy.ts, fy.values)},
                                  t_conv={"X": obj.t_conv_x, "Y": obj.t_conv_y}, t_cut=obj.t_cut,
                                  sizes={"X": fx.n_distinct, "Y": fy.n_distinct})
    if name == "MagnitudeComparison":  # as ui/magnitude_ui.show
        return F.magnitude_figure({k: (f.ts, f.values) for k, f in obj.functions.items()}, t_conv=obj.t_conv,
                                  t_cut=obj.t_cut, sizes={k: f.n_distinct for k, f in obj.functions.items()},
                                  title=f"Mag(t) on [0, t_cut]; t_cut = {obj.t_cut:.4g} ({obj.t_cut_rule})")
    if name == "MagDiffMatrix":  # as ui/magnitude_ui._pairs, signed and raw
        return F.mag_diff_heatmap(obj.values, obj.names, absolute=False,
                                  title=f"MagDiff on [0, t_cut = {obj.t_cut:.4g}]")
    if name == "MagnitudeDimension":
        return F.magnitude_dimension_figure({"Mag(t)": (obj.ts, obj.profile)},
                                            maxima={"Mag(t)": (obj.t_dimension, obj.dimension)})
    raise AssertionError(name)


@pytest.mark.parametrize("name", PLOTTED)
def test_plot_is_the_reports_figure(results, name):
    pytest.importorskip("plotly")
    import plotly.graph_objects as go

    fig = results[name].plot()
    assert isinstance(fig, go.Figure)
    assert fig.to_json() == _report_figure(name, results[name]).to_json()


def test_spectrum_plots_its_q_profile(results):
    pytest.importorskip("plotly")
    from diversity_core import default_q_grid
    from diversity_core.report.figures import q_profile_figure

    spec = results["Spectrum"]
    qs = default_q_grid()
    want = q_profile_figure((qs, spec.profile(qs)), q=2.0, n=spec.n)
    assert spec.plot("q_profile", q=2.0).to_json() == want.to_json()
    from diversity_core.exceptions import DiversityInputError

    with pytest.raises(DiversityInputError, match="unknown kind 'bars'"):
        spec.plot("bars")


def test_plots_escape_group_names(results):
    pytest.importorskip("plotly")
    for name in ("MagnitudeComparison", "MagDiffMatrix"):
        assert "<script>" not in repr(results[name].plot().to_dict())


@pytest.mark.parametrize("name", PLOTTED)
def test_plot_without_plotly_names_the_extra(results, name, monkeypatch):
    import sys

    from diversity_core.exceptions import MissingDependencyError

    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(MissingDependencyError, match=r"diversity-explorer\[report\]"):
        results[name].plot()


def test_no_plot_where_the_app_draws_none(results):
    for name in ("VS2Result", "MagnitudeResult", "SpreadFunction", "Dataset"):
        assert not hasattr(results[name], "plot")


def test_html_table_aligns_text_left_numbers_right_and_leaves_missing_cells_empty():
    import pandas as pd

    from diversity_core._display import html_table

    out = html_table(pd.DataFrame({"group": ["a", None], "q": [1.0, float("nan")], "value": [2.5, 3.0]}))
    assert '<td style="padding:0 0.6em;text-align:left">a</td>' in out
    assert '<td style="padding:0 0.6em;text-align:right">1</td>' in out
    assert "nan" not in out.lower() and "None" not in out
    assert out.count('<td style="padding:0 0.6em;text-align:right"></td>') == 1  # the q that no row has
