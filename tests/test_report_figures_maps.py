"""The maps and the robustness rank chart as core figures (issue 39, items 7-8): pure functions of arrays.

``map_figure`` / ``map_3d_figure`` (the Projection page's maps, moved out of ``ui/map_ui.py``) and
``rank_figure`` (the Robustness page's chart, moved out of ``ui/robustness_ui.py``) are drawn here
from plain arrays and a hand-made result, without Streamlit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from diversity_core.exceptions import DiversityInputError
from diversity_core.report import figures as F
from diversity_core.report.figures import maps as M

go = pytest.importorskip("plotly.graph_objects", reason="the figures need plotly (extra [report])")

RING = "#d62728"


def points(fig) -> list:
    return [t for t in fig.data if t.type in ("scatter", "scattergl", "scatter3d") and not t.name.startswith("matches")]


def items_of(traces) -> np.ndarray:
    return np.concatenate([np.asarray(t.customdata, dtype=np.int64).ravel() for t in traces])


# ------------------------------------------------------------------------------------------
# the 2-D map
# ------------------------------------------------------------------------------------------
def test_small_map_draws_every_item_in_its_groups_colour_with_its_hover_text(rng):
    XY = rng.normal(size=(12, 2))
    groups = ["a", "<b>"] * 6
    hover = [f"<b>item {i}</b>" for i in range(12)]
    fig = F.map_figure(XY, color=groups, categorical=True, hover=hover, color_title="group",
                       axis_titles=("PC 1", "PC 2"), title="map")
    a, b = points(fig)
    assert {a.type, b.type} == {"scatter"}  # few points: SVG
    assert (a.name, b.name) == ("a", "&lt;b&gt;")  # group names escaped, hover taken as markup
    assert (a.marker.color, b.marker.color) == F.PALETTE[:2]
    np.testing.assert_array_equal(a.customdata, np.arange(0, 12, 2))
    np.testing.assert_array_equal(b.x, XY[1::2, 0])
    assert list(b.text) == hover[1::2] and b.hovertemplate.startswith("%{text}<br>")
    assert fig.layout.xaxis.title.text == "PC 1" and fig.layout.dragmode == "pan"


def test_large_map_is_webgl_with_small_light_markers(rng):
    n = M.CROWDED + 1
    fig = F.map_figure(rng.normal(size=(n, 2)))
    (trace,) = points(fig)
    assert isinstance(trace, go.Scattergl) and trace.marker.size == 2.5 and trace.marker.opacity == 0.45
    mid = F.map_figure(rng.normal(size=(F.WEBGL_THRESHOLD + 1, 2)))
    (trace,) = points(mid)
    assert trace.type == "scattergl" and trace.marker.opacity == 0.8  # WebGL, markers as projection_figure's
    assert points(F.map_figure(rng.normal(size=(F.WEBGL_THRESHOLD, 2))))[0].type == "scatter"


def test_continuous_colour_is_centred_on_zero(rng):
    values = np.array([-0.5, 0.1, 2.0, -1.0])
    fig = F.map_figure(rng.normal(size=(4, 2)), color=values, categorical=False, color_title="eigenvector 1")
    (trace,) = fig.data
    assert (trace.marker.cmin, trace.marker.cmax) == (-2.0, 2.0)
    np.testing.assert_array_equal(trace.marker.color, values)
    assert "eigenvector 1 = %{marker.color:.3g}" in trace.hovertemplate


def test_density_view_draws_the_counts_under_the_sampled_items(rng):
    n = 500
    XY = rng.normal(size=(n, 2))
    sample = np.sort(rng.choice(n, size=40, replace=False))
    groups = np.where(np.arange(n) % 3 == 0, "x", "y")
    hover = [f"h{i}" for i in sample]
    fig = F.map_figure(XY, color=groups, categorical=True, hover=hover, sample=sample)
    heat = fig.data[0]
    assert heat.type == "heatmap" and heat.name == "density"  # the image under the points
    assert int(np.asarray(heat.customdata).sum()) == n  # every item counted, not only the sample
    assert np.asarray(heat.customdata).shape == M.DENSITY_BINS[::-1]
    pts = points(fig)
    assert all(t.type == "scattergl" and t.marker.opacity == 0.3 for t in pts)
    drawn = items_of(pts)
    assert sorted(drawn.tolist()) == sample.tolist()  # the sampled items, not the sample's rows
    for t in pts:  # each point in its item's group, with that item's hover text
        assert {groups[i] for i in t.customdata} == {t.name}
        assert list(t.text) == [f"h{i}" for i in t.customdata]


def test_cards_turn_plotly_hover_off_on_the_points_only(rng):
    n = 300
    sample = np.arange(0, n, 10)
    fig = F.map_figure(rng.normal(size=(n, 2)), sample=sample, hover_box=False)
    assert all(t.hoverinfo == "none" and t.hovertemplate is None for t in points(fig))
    assert fig.data[0].hovertemplate == "%{customdata} items here<extra></extra>"  # the cells keep their counts
    on = F.map_figure(rng.normal(size=(n, 2)))
    assert on.data[0].hoverinfo is None and on.data[0].hovertemplate


def test_crowded_map_travels_compact_and_hovers_the_same_text(rng):
    """Issue 41, item 13: the 100,000-point map's figure was 73 bytes a point of JSON (float64
    coordinates, each point's whole hover text), parsed twice by Streamlit's chart before plotly
    drew. Above CROWDED points the coordinates are float32 (binary in the JSON) and the hover text
    all points share at their ends moves into the template: the hover box reads the same."""
    pio = pytest.importorskip("plotly.io")
    n = M.CROWDED + 1
    XY = rng.normal(size=(n, 2)) * 10
    groups = np.where(np.arange(n) % 3 == 0, "a", "b")
    hover = [f"<b>row {i + 1}</b>" for i in range(n)]
    near, matches = np.array([5, 9, 20_000]), np.array([1, 2, 3])
    fig = F.map_figure(XY, color=groups, hover=hover, highlight=matches, neighbours=near)
    for t in fig.data:
        assert t.x.dtype == np.float32 and t.y.dtype == np.float32, t.name
    a, b = points(fig)[:2]
    for t in (a, b):
        assert t.hovertemplate.startswith("<b>row %{text}</b><br>")
        shown = [t.hovertemplate.split("<br>")[0].replace("%{text}", x) for x in t.text]
        assert shown == [hover[i] for i in t.customdata]  # every point's hover text, as given
        np.testing.assert_array_equal(t.x, XY[t.customdata, 0].astype(np.float32))
    ring = fig.data[-1]  # the rings sit on their points, to the float32 bit
    np.testing.assert_array_equal(ring.x, XY[near, 0].astype(np.float32))
    spec = pio.to_json(fig, validate=False)
    assert '"dtype":"f4"' in spec
    assert len(spec) / n < 30  # 73 bytes a point before
    small = F.map_figure(XY[:100], hover=hover[:100])  # a map of few points is drawn as before
    assert small.data[0].x.dtype == np.float64 and list(small.data[0].text) == hover[:100]
    # the 3-D map of as many points likewise, its rings on their points
    XYZ = np.column_stack([XY, XY[:, 0] - XY[:, 1]])
    fig3 = F.map_3d_figure(XYZ, color=groups, hover=hover, highlight=matches, neighbours=near)
    for t in fig3.data:
        assert {t.x.dtype, t.y.dtype, t.z.dtype} == {np.dtype(np.float32)}, t.name
    t = fig3.data[0]
    assert t.hovertemplate.startswith("<b>row %{text}</b><br>")
    assert [f"<b>row {x}</b>" for x in t.text] == [hover[i] for i in t.customdata]
    np.testing.assert_array_equal(fig3.data[-1].z, XYZ[near, 2].astype(np.float32))
    assert len(pio.to_json(fig3, validate=False)) / n < 35


@pytest.mark.parametrize("texts, ends", [
    (["<b>row 1</b>", "<b>row 22</b>"], ("<b>row ", "</b>")),
    (["x<i>1</i>", "x<i>2</i>"], ("x<i>", "</i>")),
    (["<b>1", "<b>2"], ("<b>", "")),
    (["<br>1", "<br>2", "<b>3"], ("", "")),  # not inside a tag: "<b"
    (["&amp;x", "&lt;x"], ("", "x")),  # not inside an entity: "amp;" / "lt;"
    (["1&amp;z", "2&amp;z"], ("", "&amp;z")),
    (["a%{b}1c", "a%{b}2c"], ("a", "c")),  # no template syntax
    (["ab", "ab"], ("ab", "")),
    (["abc", "abxbc"], ("ab", "c")),  # the ends do not overlap in the shortest
    ([], ("", "")),
])
def test_shared_hover_ends_split_no_markup(texts, ends):
    head, tail = M._shared_ends(texts)
    assert (head, tail) == ends
    assert all(t.startswith(head) and t.endswith(tail) and len(head) + len(tail) <= len(t) for t in texts)


def test_highlight_rings_the_matches_and_counts_them_all(rng, monkeypatch):
    XY = rng.normal(size=(50, 2))
    matches = np.array([3, 7, 11, 40])
    fig = F.map_figure(XY, highlight=matches)
    ring = fig.data[-1]
    assert ring.name == "matches (4)" and ring.type == "scattergl" and ring.hoverinfo == "skip"
    assert ring.marker.line.color == RING and ring.marker.color == "rgba(0,0,0,0)"
    np.testing.assert_array_equal(ring.customdata, matches)
    np.testing.assert_array_equal(ring.x, XY[matches, 0])
    monkeypatch.setattr(M, "HIGHLIGHT_MAX", 2)
    ring = F.map_figure(XY, highlight=matches).data[-1]
    assert ring.name == "matches (4)" and list(ring.customdata) == [3, 7]
    assert len(F.map_figure(XY, highlight=np.array([], dtype=np.int64)).data) == 1  # no matches: no ring


def test_neighbours_of_a_clicked_item_are_ringed_on_top_and_stay_visible(rng):
    """Issue 41, item 11: a clicked item's nearest neighbours are marked on the map (all of them,
    sampled or not), above the search's rings, undimmed by a selection."""
    XY = rng.normal(size=(60, 2))
    near = np.array([4, 17, 33])
    fig = F.map_figure(XY, highlight=np.array([1, 2]), neighbours=near)
    matches, ring = fig.data[-2:]
    assert matches.name == "matches (2)"
    assert ring.name == "neighbours (3)" and ring.type == "scattergl" and ring.hoverinfo == "skip"
    assert ring.marker.color == "rgba(0,0,0,0)" and ring.marker.line.color == M.NEIGHBOUR_RING
    assert ring.marker.line.color != RING and ring.marker.size > matches.marker.size
    assert ring.unselected.marker.opacity == 1  # a selection's dimming leaves the rings readable
    np.testing.assert_array_equal(ring.customdata, near)
    np.testing.assert_array_equal(ring.x, XY[near, 0])
    np.testing.assert_array_equal(ring.y, XY[near, 1])
    assert [t.name for t in points(fig)] == ["all items", "neighbours (3)"]
    # a density view rings them whether or not they are in the sample
    dense = F.map_figure(XY, sample=np.array([0, 4, 5]), neighbours=near)
    np.testing.assert_array_equal(dense.data[-1].customdata, near)
    # none: no ring
    for empty in (None, np.array([], dtype=np.int64)):
        assert not any(t.name.startswith("neighbours") for t in F.map_figure(XY, neighbours=empty).data)
    # the 3-D map rings them too
    XYZ = rng.normal(size=(60, 3))
    ring3 = F.map_3d_figure(XYZ, neighbours=near).data[-1]
    assert ring3.type == "scatter3d" and ring3.name == "neighbours (3)"
    np.testing.assert_array_equal(ring3.z, XYZ[near, 2])
    with pytest.raises(DiversityInputError, match=r"neighbours names items outside 0 \.\. 59"):
        F.map_figure(XY, neighbours=[3, 60])


# ------------------------------------------------------------------------------------------
# the 3-D map
# ------------------------------------------------------------------------------------------
def test_3d_map_draws_groups_in_the_2d_maps_colours(rng):
    XYZ = rng.normal(size=(30, 3))
    groups = ["p", "q", "r"] * 10
    fig = F.map_3d_figure(XYZ, color=groups, categorical=True, hover=[f"t{i}" for i in range(30)],
                          color_title="group", axis_titles=("a", "b", "c"), title="3-D")
    traces = points(fig)
    assert [t.type for t in traces] == ["scatter3d"] * 3
    assert [t.marker.color for t in traces] == list(F.PALETTE[:3])
    assert all(t.marker.size == 4 and t.marker.opacity == 0.8 for t in traces)  # few points: large
    np.testing.assert_array_equal(traces[1].customdata, np.arange(1, 30, 3))
    np.testing.assert_array_equal(traces[1].z, XYZ[1::3, 2])
    assert list(traces[1].text) == [f"t{i}" for i in range(1, 30, 3)]
    assert fig.layout.scene.zaxis.title.text == "c" and fig.layout.height == 640


def test_3d_map_of_a_sample_with_continuous_colour_and_highlight(rng):
    n = 20_000
    XYZ = rng.normal(size=(n, 3))
    values = rng.normal(size=n)
    sample = np.sort(rng.choice(n, size=12_000, replace=False))
    fig = F.map_3d_figure(XYZ, color=values, categorical=False, color_title="eigenvector 2", sample=sample,
                          highlight=np.array([5, 9]), hover_box=False)
    trace, ring = fig.data
    np.testing.assert_array_equal(trace.customdata, sample)
    np.testing.assert_array_equal(trace.marker.color, values[sample])
    assert trace.marker.cmax == pytest.approx(np.abs(values).max())  # the scale of every item
    assert trace.marker.size == 2 and trace.hoverinfo == "none"  # 10,000 drawn or more: small points
    assert ring.name == "matches (2)" and ring.marker.size == 6 and ring.marker.line.color == RING
    np.testing.assert_array_equal(ring.x, XYZ[[5, 9], 0])  # rings sampled or not


# ------------------------------------------------------------------------------------------
# checked inputs
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"coords": np.zeros((5, 1))}, r"n x 2 array .*got shape \(5, 1\)"),
        ({"color": ["a"] * 4}, r"color must give one value per item \(5\); got 4"),
        ({"hover": ["h"] * 5, "sample": [0, 1]}, r"one label per drawn point \(2: the sample\); got 5"),
        ({"sample": [0, 5]}, r"sample names items outside 0 \.\. 4 .*got 0 \.\. 5"),
        ({"highlight": [0.5]}, r"highlight must be a 1-D array of item indices"),
    ],
)
def test_bad_inputs_are_refused_with_what_to_do(kwargs, match):
    args = {"coords": np.zeros((5, 2)), **kwargs}
    with pytest.raises(DiversityInputError, match=match):
        F.map_figure(args.pop("coords"), **args)


def test_3d_map_needs_three_columns():
    with pytest.raises(DiversityInputError, match=r"n x 3 array"):
        F.map_3d_figure(np.zeros((4, 2)))


# ------------------------------------------------------------------------------------------
# the robustness rank chart
# ------------------------------------------------------------------------------------------
def test_rank_figure_draws_each_groups_rank_under_each_representation():
    from diversity_core.robustness import RepresentationScores, RobustnessResult

    rows = (
        RepresentationScores("pixels", "cosine", {"a<x>": (1.0, 0.9, 1.1), "b": (2.0, 1.8, 2.2)}, ("b", "a<x>")),
        RepresentationScores("net", "rbf", {"a<x>": (3.0, 2.9, 3.1), "b": (2.5, 2.4, 2.6)}, ("a<x>", "b")),
    )
    result = RobustnessResult(groups=("a<x>", "b"), group_sizes=(40, 40), n=40, q=math.inf,
                              confidence_level=0.95, rows=rows)
    fig = F.rank_figure(result)
    a, b = fig.data
    assert a.name == "a&lt;x&gt;" and list(a.x) == ["pixels · cosine", "net · rbf"]
    assert list(a.y) == [2, 1] and list(b.y) == [1, 2]  # the lines cross: a rank flip
    assert (a.line.color, b.line.color) == F.PALETTE[:2]
    assert list(a.text) == ["VS = 1 [0.9, 1.1]", "VS = 3 [2.9, 3.1]"]
    assert fig.layout.yaxis.autorange == "reversed" and list(fig.layout.yaxis.tickvals) == [1, 2]
    assert fig.layout.title.text == "Ranking of the groups by VS (q = ∞) at n = 40"
    assert F.rank_figure(result, title="mine").layout.title.text == "mine"
