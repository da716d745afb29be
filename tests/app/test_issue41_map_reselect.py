"""Issue 41, items 6 and 11 under ``AppTest``: the map's selection comes through the chart's
callback, so a new box or lasso replaces the selection whatever the figure drawn since (a click's
neighbour rings, a marked selection), and a clicked item's nearest neighbours, as its panel lists
them, are ringed on the map. The chart's own events are the browser's
(tests/e2e/test_map_reselect_browser.py); here the callback's kept event is set as the callback sets it.
"""

from __future__ import annotations

import numpy as np
from streamlit.util import AttributeDictionary
from test_projection_page import assert_clean, figures, start, values, view_subset

from diversity_core.curation import nearest_items
from diversity_core.featurizers import default_kernel, featurize
from diversity_core.projection import points_in_regions


def ring(at) -> list:
    traces = [t for t in figures(at)[0]["data"] if str(t.get("name", "")).startswith("neighbours")]
    return [] if not traces else [int(v) for v in values(traces[0]["customdata"]).ravel()]


def coords(at) -> np.ndarray:
    """Each item's map position, from the drawn points (their customdata is the item)."""
    out = {}
    for t in figures(at)[0]["data"]:
        if t["type"] in ("scatter", "scattergl") and not str(t.get("name", "")).startswith(("neighbours", "matches")):
            for i, x, y in zip(values(t["customdata"]).ravel(), values(t["x"]), values(t["y"])):
                out[int(i)] = (float(x), float(y))
    return np.asarray([out[i] for i in range(len(out))])


def box_event(x0, x1, y0, y1, points=()) -> AttributeDictionary:
    """The chart's event for one box (and ``points``), as the chart's callback keeps it."""
    return AttributeDictionary({"selection": AttributeDictionary(
        {"points": [{"customdata": int(i)} for i in points], "point_indices": [],
         "box": [{"xref": "x", "yref": "y", "x": [x0, x1], "y": [y0, y1]}], "lasso": []})})


def test_click_rings_its_neighbours_and_a_new_box_replaces_it():
    at = start()
    item = 7
    at.session_state["proj_selected"] = [item]  # as the click's callback leaves it
    at.run()
    assert_clean(at)
    assert at.subheader[0].value == "1 selected item"
    full, sub = view_subset("digits")
    nn = nearest_items(featurize(sub), item, k=8, kernel=default_kernel("default", dataset=full))
    assert sorted(ring(at)) == sorted(nn.indices[0].tolist())  # the panel's neighbours, ringed
    XY = coords(at)
    # a box made on that chart (its figure, with the rings, is not the one the next run draws)
    x0, x1 = np.quantile(XY[:, 0], [0.2, 0.7])
    y0, y1 = np.quantile(XY[:, 1], [0.2, 0.7])
    expected = points_in_regions(XY, boxes=[(x0, x1, y0, y1)]).tolist()
    assert len(expected) >= 2
    at.session_state["_proj_event"] = box_event(x0, x1, y0, y1)
    at.run()
    assert_clean(at)
    assert at.subheader[0].value == f"{len(expected)} selected items"
    assert sorted(at.session_state["proj_selected"]) == sorted(expected)
    assert ring(at) == []  # no clicked item: no rings
    # a second, different box replaces it, the map drawn since notwithstanding
    x0, x1 = np.quantile(XY[:, 0], [0.5, 0.95])
    second = points_in_regions(XY, boxes=[(x0, x1, y0, y1)]).tolist()
    assert sorted(second) != sorted(expected)
    at.session_state["_proj_event"] = box_event(x0, x1, y0, y1)
    at.run()
    assert_clean(at)
    assert sorted(at.session_state["proj_selected"]) == sorted(second)
    # a click on that chart: plotly sends the box it keeps with the clicked point, which is the selection
    clicked = next(i for i in range(len(XY)) if i not in second)
    at.session_state["_proj_event"] = box_event(x0, x1, y0, y1, points=[clicked])
    at.run()
    assert_clean(at)
    assert at.session_state["proj_selected"] == [clicked] and at.subheader[0].value == "1 selected item"
    assert len(ring(at)) == 8
    # an empty event (a double click) clears it
    at.session_state["_proj_event"] = AttributeDictionary({"selection": AttributeDictionary(
        {"points": [], "point_indices": [], "box": [], "lasso": []})})
    at.run()
    assert_clean(at)
    assert at.session_state["proj_selected"] == [] and not at.subheader
