"""diversity_core.report.figures: plotly builders are pure functions of arrays (no Streamlit)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from diversity_core import compute_spectrum, default_q_grid
from diversity_core.report import figures as F

go = pytest.importorskip("plotly.graph_objects", reason="the figures need plotly (extra [report])")


def test_q_axis_puts_zero_and_infinity_at_the_ends():
    pos = F.q_axis_position([0.0, 0.01, 1.0, 100.0, math.inf])
    assert pos[0] < 0.01 and pos[-1] > 100.0
    np.testing.assert_array_equal(pos[1:4], [0.01, 1.0, 100.0])
    assert F.format_q(math.inf) == "∞" and F.format_q(0.5) == "0.5" and F.format_q(1.0) == "1"


def test_q_profile_marks_q_and_the_bounds(rng):
    spec = compute_spectrum(rng.normal(size=(30, 5)))
    qs = default_q_grid()
    fig = F.q_profile_figure((qs, spec.profile(qs)), q=2.0, n=30)
    line, ends = fig.data
    assert np.all(np.isfinite(line.x)) and np.all(np.asarray(line.x) > 0)
    assert list(ends.text) == ["0", "∞"]
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    texts = {a.text: a for a in fig.layout.annotations}
    assert {"q = 2", "n = 30 (all distinct)", "1 (all identical)"} <= set(texts)
    # plotly places annotations on log axes at log10 of the value
    assert texts["q = 2"].x == pytest.approx(math.log10(2.0))
    assert texts["n = 30 (all distinct)"].y == pytest.approx(math.log10(30.0))


def test_spectrum_figure_shows_support_and_cumulative_mass():
    fig = F.spectrum_figure([0.5, 0.3, 0.2, 0.0])
    lam, cum = fig.data[0], fig.data[1]
    np.testing.assert_allclose(lam.y, [0.5, 0.3, 0.2])
    np.testing.assert_allclose(cum.y, [0.5, 0.8, 1.0])


def test_heatmap_draws_group_boundaries():
    fig = F.kernel_heatmap(np.eye(4), labels=["a", "a", "b", "b"], hover=list("wxyz"))
    assert isinstance(fig.data[0], go.Heatmap)
    assert len(fig.layout.shapes) == 2  # one vertical and one horizontal line between a and b
    assert list(fig.layout.xaxis.ticktext) == ["a", "b"]


def test_projection_uses_webgl_above_the_threshold_and_keeps_item_indices(rng):
    small = F.projection_figure(rng.normal(size=(10, 2)), color=list("aabbbaabba"))
    assert all(isinstance(t, go.Scatter) for t in small.data)
    got = sorted(int(i) for t in small.data for i in t.customdata)
    assert got == list(range(10))
    a = next(t for t in small.data if t.name == "a")
    np.testing.assert_array_equal(a.customdata, [0, 1, 5, 6, 9])
    big = F.projection_figure(rng.normal(size=(F.WEBGL_THRESHOLD + 1, 2)))
    assert isinstance(big.data[0], go.Scattergl)


def test_projection_with_continuous_colour(rng):
    fig = F.projection_figure(rng.normal(size=(5, 2)), color=np.linspace(-1, 1, 5), color_title="eigenvector 1")
    (trace,) = fig.data
    assert trace.marker.cmin == -1 and trace.marker.cmax == 1


def test_magnitude_figure_marks_t_conv_and_t_cut():
    ts = np.linspace(0, 2, 5)
    fig = F.magnitude_figure({"a": (ts, ts + 1), "b": (ts, ts / 2 + 1)}, t_conv={"a": 1.0, "b": 9.0}, t_cut=2.0)
    markers = [t for t in fig.data if t.mode == "markers"]
    assert [m.x[0] for m in markers] == [1.0, pytest.approx(2.2)]  # b's t_conv lies beyond: drawn at the edge
    assert markers[1].marker.symbol == "triangle-right"
    assert any(a.text == "t_cut = 2" for a in fig.layout.annotations)


def test_rnd_figure_draws_a_growing_curve():
    curves = np.full((3, 10), np.nan)
    curves[:, :4] = 0.2
    fig = F.rnd_figure(curves, average_last=3, total_epochs=10)
    mean = fig.data[-1]
    np.testing.assert_allclose(mean.y[:4], 0.2)
    assert np.all(np.isnan(np.asarray(mean.y[4:], dtype=float)))
    assert tuple(fig.layout.xaxis.range) == (0.5, 10.5)


def test_bar_figure_with_intervals():
    fig = F.bar_figure(["a", "b"], [1.0, 2.0], low=[0.5, 1.5], high=[1.5, 3.0])
    np.testing.assert_allclose(fig.data[0].error_y.array, [0.5, 1.0])
    np.testing.assert_allclose(fig.data[0].error_y.arrayminus, [0.5, 0.5])


def test_sensitivity_figure_marks_default_and_current():
    fig = F.sensitivity_figure([0.5, 1.0, 2.0], np.array([[5.0, 3.0, 1.5]]), ["all"], reference=1.0, current=2.0)
    texts = {a.text: a.x for a in fig.layout.annotations}
    assert texts["default"] == pytest.approx(0.0) and texts["in use"] == pytest.approx(math.log10(2.0))


def test_figures_serialise_to_json(rng):
    spec = compute_spectrum(rng.normal(size=(20, 4)))
    qs = default_q_grid()
    for fig in (F.q_profile_figure((qs, spec.profile(qs)), q=math.inf, n=20), F.spectrum_figure(spec.eigenvalues),
                F.histogram_figure(rng.normal(size=50))):
        assert "Infinity" not in fig.to_json()


def test_figures_live_only_in_the_report_package():
    """The old ``diversity_core.figures`` alias is gone: the builders have one home."""
    import importlib.util

    from diversity_core._orders import format_q

    assert importlib.util.find_spec("diversity_core.figures") is None
    assert F.format_q is format_q


def test_missing_plotly_names_the_extra(monkeypatch):
    from diversity_core.exceptions import MissingDependencyError

    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)  # importing it now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"plotly is needed for figures.*diversity-explorer\[report\]"):
        F.histogram_figure([1.0, 2.0])


def test_magnitude_dimension_figure_leaves_out_t_zero_and_marks_the_maximum():
    fig = F.magnitude_dimension_figure({"a": ([0.0, 0.5, 1.0, 2.0], [0.0, 0.4, 0.9, 0.7])}, maxima={"a": (1.0, 0.9)})
    line, star = fig.data
    np.testing.assert_array_equal(line.x, [0.5, 1.0, 2.0])
    assert (star.x[0], star.y[0]) == (1.0, 0.9)
    assert fig.layout.xaxis.type == "log"


def test_mag_diff_heatmap_centres_signed_values_and_prints_them():
    M = np.array([[0.0, 2.5], [-2.5, 0.0]])
    fig = F.mag_diff_heatmap(M, ["x", "y"])
    (heat,) = fig.data
    assert heat.zmid == 0.0 and heat.zmin == -2.5 and heat.zmax == 2.5
    assert heat.text[0][1] == "2.5" and list(heat.x) == ["x", "y"]
    fig = F.mag_diff_heatmap(np.abs(M), ["x", "y"], absolute=True)
    assert fig.data[0].zmin == 0.0
    with pytest.raises(ValueError, match="2 x 2 matrix"):
        F.mag_diff_heatmap(np.zeros((3, 3)), ["x", "y"])


# ------------------------------------------------------------------------------------------
# issue 15: group names never become links or markup in a chart
# ------------------------------------------------------------------------------------------
LINK = '<a href="http://evil">x</a>'
MD = "[x](http://evil)"


def _evil_figures(rng):
    names = [LINK, MD, "a & b"]
    curve = (np.linspace(0, 1, 5), np.linspace(1, 3, 5))
    yield F.magnitude_figure({g: curve for g in names}, t_conv={g: 0.5 for g in names}, t_cut=1.0)
    yield F.magnitude_dimension_figure({g: curve for g in names}, maxima={g: (0.5, 1.0) for g in names})
    yield F.rnd_figure({g: rng.normal(size=(2, 4)) for g in names})
    yield F.bar_figure(names, [1.0, 2.0, 3.0])
    yield F.projection_figure(rng.normal(size=(6, 2)), color=names * 2)
    qs = np.array([0.5, 1.0, 2.0])
    yield F.q_profile_figure({g: (qs, np.array([3.0, 2.0, 1.5])) for g in names})
    yield F.sensitivity_figure(np.array([0.5, 1.0]), np.ones((3, 2)) * 2, labels=names, parameter="sigma")
    yield F.kernel_heatmap(np.eye(3), labels=names, hover=names)
    yield F.score_bars_figure({"VS_1": [(g, 2.0, 1.5, 2.5) for g in names]})
    yield F.q_profile_bands_figure({g: (qs, np.array([3.0, 2.0, 1.5]), np.ones(3), np.full(3, 4.0)) for g in names},
                                   n=10)
    yield F.spectra_overlay_figure({g: [0.5, 0.3, 0.2] for g in names})
    yield F.sample_size_figure({"VS_1": {g: ([2, 4], [1.5, 2.0], [0.1, 0.1]) for g in names}}, n=4)
    yield F.difference_figure({"VS_1": [(f"{LINK} − {MD}", 0.5, 0.1, 0.9, True)]})
    yield F.mag_diff_heatmap(np.zeros((3, 3)), names)


def test_user_strings_reach_plotly_escaped(rng):
    for fig in _evil_figures(rng):
        text = repr(fig.to_dict())  # to_json writes "<" as \u003c
        assert "<a " not in text and "</a>" not in text, text[:300]
        assert "&lt;a href" in text
        assert "a &amp; b" in text or "a & b" not in text  # an ampersand is an entity, not markup
    assert F.escape_label(LINK) == '&lt;a href="http://evil"&gt;x&lt;/a&gt;'


def test_vendi_bounds_figure_draws_the_band_and_the_estimates():
    from diversity_core.approx import vendi_bounds, vendi_estimate

    X = np.random.default_rng(0).normal(size=(200, 3))
    b = vendi_bounds(X, kernel="rbf", k=10, q=[0.0, 0.5, 1.0, 2.0, np.inf], rng=0)
    e = vendi_estimate(X, kernel="rbf", q=[1.0, 2.0, 3.3], method="rff", D=64, replicates=3, rng=0)
    fig = F.vendi_bounds_figure(("subsample <b>", b.qs, b.low), b, e, q=1.0, n=200, estimate_qs=[1.0, 2.0],
                                estimate_label="RFF D = 64")
    *ref, low, high, est = fig.data
    assert ref and all(t.name == "subsample &lt;b&gt;" and t.line.dash == "dot" for t in ref)
    assert low.name == high.name == "guaranteed bounds (top 10 eigenvalues)" and est.name == "RFF D = 64"
    np.testing.assert_array_equal(low.y, b.low)
    np.testing.assert_array_equal(high.y, b.high)
    assert high.fill == "tonexty"
    np.testing.assert_allclose(est.y, e.value[:2])  # q = 3.3 is not among estimate_qs
    np.testing.assert_allclose(est.error_y.array, (e.high - e.value)[:2])
    assert len(F.vendi_bounds_figure(bounds=b).data) == 2  # the band alone
