"""Issue 41, item 10: a map coloured by an eigenvector is scaled to the entries' own range, and the
rule that says when the top eigenvector is the items' mean direction."""

from __future__ import annotations

import numpy as np
import pytest

from diversity_core.exceptions import DiversityInputError
from diversity_core.report.figures import map_3d_figure, map_figure, projection_figure
from diversity_core.report.figures.items import value_colour_scale
from diversity_core.spectrum import is_mean_direction, spectrum_from_kernel

#: The issue's eigenvector 1: every entry negative, -0.033 .. -0.019.
ONE_SIGN = np.linspace(-0.033, -0.019, 40)


def test_one_sign_entries_get_a_scale_fitted_to_their_range():
    """Before: RdBu from -0.033 to +0.033, every point the same pale red."""
    scale = value_colour_scale(ONE_SIGN)
    assert scale["cmin"] == pytest.approx(-0.033) and scale["cmax"] == pytest.approx(-0.019)
    assert scale["colorscale"] != "RdBu"


def test_both_signs_keep_a_diverging_scale_centred_on_zero():
    scale = value_colour_scale(np.array([-0.4, 0.1, 0.3]))
    assert scale == {"colorscale": "RdBu", "cmin": -0.4, "cmax": 0.4}
    # a sliver of the other sign (2% of the range) is not "both signs"
    scale = value_colour_scale(np.array([-0.001, 0.02, 0.05]))
    assert scale["colorscale"] != "RdBu" and scale["cmin"] == pytest.approx(-0.001)


def test_constant_or_empty_values_give_a_valid_range():
    scale = value_colour_scale(np.full(5, 0.2))
    assert scale["cmin"] < 0.2 < scale["cmax"]
    assert value_colour_scale(np.array([np.nan]))["cmin"] < value_colour_scale(np.array([np.nan]))["cmax"]


@pytest.mark.parametrize("draw", ["2d", "2d-sample", "3d"])
def test_map_figures_use_the_data_range(draw):
    rng = np.random.default_rng(0)
    n = ONE_SIGN.size
    if draw == "3d":
        fig = map_3d_figure(rng.normal(size=(n, 3)), color=ONE_SIGN, color_title="eigenvector 1")
    elif draw == "2d":
        fig = map_figure(rng.normal(size=(n, 2)), color=ONE_SIGN, color_title="eigenvector 1")
    else:
        fig = map_figure(rng.normal(size=(n, 2)), color=ONE_SIGN, color_title="eigenvector 1",
                         sample=np.arange(n))
    (marker,) = [t.marker for t in fig.data if t.type != "heatmap"]
    assert marker.cmin == pytest.approx(-0.033) and marker.cmax == pytest.approx(-0.019)


def test_projection_figure_scale_follows_the_same_rule():
    fig = projection_figure(np.zeros((40, 2)), color=ONE_SIGN)
    assert fig.data[0].marker.cmax == pytest.approx(-0.019)


def test_mean_direction_rule():
    assert is_mean_direction(ONE_SIGN)
    assert is_mean_direction(-ONE_SIGN)  # the sign convention does not matter
    assert not is_mean_direction(np.array([0.5, -0.5, 0.2, -0.1]))  # a contrast
    near = np.full(100, 0.1)
    near[0] = -0.01  # one entry of the other sign: cosine 0.998
    assert is_mean_direction(near)
    assert not is_mean_direction(near, threshold=0.999)


def test_top_eigenvector_of_a_non_negative_kernel_is_the_mean_direction():
    """Perron-Frobenius: the cosine kernel of non-negative features (pixels) has a one-sign top
    eigenvector, the second one is a contrast."""
    X = np.abs(np.random.default_rng(1).normal(size=(30, 5)))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    spec = spectrum_from_kernel(X @ X.T, n_eigenvectors=2)
    assert is_mean_direction(spec.eigenvectors[:, 0])
    assert not is_mean_direction(spec.eigenvectors[:, 1])


@pytest.mark.parametrize("bad", [[1.0], [np.nan, 1.0], []])
def test_mean_direction_rejects_bad_input(bad):
    with pytest.raises(DiversityInputError):
        is_mean_direction(bad)


def test_mean_direction_rejects_bad_threshold():
    with pytest.raises(DiversityInputError, match="threshold"):
        is_mean_direction(ONE_SIGN, threshold=1.5)
