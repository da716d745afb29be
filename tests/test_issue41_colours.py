"""Issue 41, item 8 (one colour per group on every chart) and item 11 (duplicates named by their items)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from diversity_core.exceptions import DiversityInputError, DuplicatesMergedWarning
from diversity_core.magnitude import compare_magnitude
from diversity_core.report.figures import (
    PALETTE,
    POOLED_COLOUR,
    POOLED_LABEL,
    bar_figure,
    group_colours,
    magnitude_figure,
    q_profile_figure,
    series_colours,
)

pytest.importorskip("plotly")

NAMES = [f"class {i:02d}" for i in range(30)]


# ---------------------------------------------------------------------------------------------
# item 8: the mapping
# ---------------------------------------------------------------------------------------------
def test_group_colours_follow_the_dataset_order_and_are_stable_under_subsets():
    full = group_colours(NAMES)
    assert [full[g] for g in NAMES[: len(PALETTE)]] == list(PALETTE)
    # a chart showing some groups (in its own order, the pooled series first) colours each as the full map does
    shown = [POOLED_LABEL, NAMES[20], NAMES[3], NAMES[14]]
    assert series_colours(shown, full) == [full[g] for g in shown]
    assert full[POOLED_LABEL] == POOLED_COLOUR


def test_colours_are_distinct_beyond_the_palette_and_never_the_pooled_one():
    full = group_colours(NAMES)
    groups = [full[g] for g in NAMES]
    assert len(set(groups)) == len(NAMES) > len(PALETTE)
    assert POOLED_COLOUR not in groups
    assert all(len(c) == 7 and c.startswith("#") for c in groups)
    # without a mapping one chart still gives 30 groups 30 colours (the palette cycled before: 12)
    assert len(set(series_colours(NAMES))) == len(NAMES)
    # a label the mapping does not name takes a colour no other series of the chart has
    partial = {NAMES[0]: PALETTE[1]}
    cols = series_colours([NAMES[0], "new group"], partial)
    assert cols[0] == PALETTE[1] and cols[1] != PALETTE[1]


def test_group_colours_refuses_one_name():
    with pytest.raises(DiversityInputError, match="list of group names"):
        group_colours("class 00")


# ---------------------------------------------------------------------------------------------
# item 8: the figures
# ---------------------------------------------------------------------------------------------
def _trace_colour(fig, name):
    (trace,) = [t for t in fig.data if t.name == name and t.showlegend is not False]
    return trace.line.color


def test_pooled_series_is_neutral_and_a_group_keeps_its_colour_on_two_charts():
    qs = np.array([0.5, 1.0, 2.0])
    curves = {POOLED_LABEL: (qs, [5.0, 4.0, 3.0]), "b": (qs, [3.0, 2.5, 2.0]), "c": (qs, [2.0, 1.5, 1.2])}
    # before: "all selected items" took the palette's first colour and each group the next one
    plain = q_profile_figure(curves)
    assert _trace_colour(plain, POOLED_LABEL) == POOLED_COLOUR
    assert _trace_colour(plain, "b") == PALETTE[0]
    colours = group_colours(["a", "b", "c"])
    profile = q_profile_figure(curves, colours=colours)
    bars = bar_figure(["c", "b"], [1.2, 2.0], colours=colours)
    mag = magnitude_figure({"b": (qs, qs), "c": (qs, qs)}, colours=colours)
    bar_colour = dict(zip(bars.data[0].x, bars.data[0].marker.color))
    for g in ("b", "c"):
        assert _trace_colour(profile, g) == bar_colour[g] == _trace_colour(mag, g) == colours[g]


def test_bars_beyond_the_palette_share_no_colour():
    fig = bar_figure(NAMES[:15], np.arange(15.0))
    assert len(set(fig.data[0].marker.color)) == 15


# ---------------------------------------------------------------------------------------------
# item 11 (a): the duplicate warning names the items
# ---------------------------------------------------------------------------------------------
def _duplicates():
    X = np.random.default_rng(0).normal(size=(8, 3))
    X[5] = X[1]
    X[6] = X[2]
    return X


def _message(**kwargs) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compare_magnitude({"sprites": _duplicates()}, n_scales=5, **kwargs)
    (w,) = [w for w in caught if issubclass(w.category, DuplicatesMergedWarning)]
    return str(w.message)


def test_duplicate_warning_names_the_items_by_their_ids():
    ids = [f"sprite_{i}.png" for i in range(8)]
    text = _message(ids={"sprites": ids})
    assert "sprite_5.png, sprite_6.png repeat earlier items" in text, text
    assert "2 duplicate items" in text and "rows" not in text
    # plain arrays keep row numbers
    assert "rows 5, 6 repeat earlier rows" in _message()


def test_ids_of_the_wrong_length_are_refused():
    with pytest.raises(DiversityInputError, match="3 names for 8 rows"):
        compare_magnitude({"sprites": _duplicates()}, n_scales=5, ids={"sprites": ["a", "b", "c"]})
