"""Issue 41, item 10 on the Projection page: colouring by the top eigenvector of a pixel set (a
non-negative kernel, a one-sign eigenvector) says that it is the mean direction, and the map's
colour scale spans the entries' own range."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from test_projection_page import assert_clean, figures, start


def test_top_eigenvector_caption_and_colour_range():
    at = start("digits")
    at.selectbox(key="proj_colour").set_value("eigenvector 1").run()
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert any("mean direction" in c and "Eigenvector 1" in c for c in captions), captions
    (marker,) = [t["marker"] for t in figures(at)[0]["data"] if "cmin" in t.get("marker", {})]
    values = marker["color"]
    if isinstance(values, dict):  # plotly's binary encoding
        values = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
    assert (min(values) > 0) == (max(values) > 0)  # one sign: the case, before drawn as one colour
    assert marker["cmin"] == pytest.approx(min(values)) and marker["cmax"] == pytest.approx(max(values))
