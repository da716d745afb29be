"""diversity_core.curation.neighbours: the nearest neighbours of a few items under the kernel."""

from __future__ import annotations

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.curation import nearest_items
from diversity_core.exceptions import DiversityInputError


@pytest.mark.parametrize("kernel", ["cosine", "rbf", "tanimoto"])
def test_neighbours_are_the_largest_kernel_values(rng, kernel):
    X = rng.random(size=(60, 5)) if kernel == "tanimoto" else rng.normal(size=(60, 5))
    K = dc.kernel_matrix(X, kernel=kernel)
    out = nearest_items(X, [4, 17], k=6, kernel=kernel)
    for a, i in enumerate((4, 17)):
        row = K[i].copy()
        row[i] = -np.inf
        expected = np.lexsort((np.arange(60), -row))[:6]  # decreasing similarity, ties by index
        assert out.indices[a].tolist() == expected.tolist()
        np.testing.assert_allclose(out.similarities[a], row[expected], rtol=0, atol=64 * np.finfo(float).eps)
    assert i not in out.indices[1] and not out.indices.flags.writeable


def test_an_exact_copy_is_the_nearest_under_a_precomputed_kernel(rng):
    X = rng.normal(size=(30, 4))
    X[9] = X[2]
    K = dc.kernel_matrix(X, kernel="cosine")
    out = nearest_items(K, 2, k=1, kernel="precomputed")
    assert out.indices.tolist() == [[9]] and out.similarities[0, 0] == pytest.approx(1.0)
    assert out.to_dict()["indices"] == [[9]]
    table = out.to_frame(ids=[f"x{i}" for i in range(30)])
    assert table.to_dict("records") == [
        {
            "item": 2,
            "id": "x2",
            "rank": 1,
            "neighbour": 9,
            "neighbour_id": "x9",
            "similarity": pytest.approx(1.0),
        }
    ]


@pytest.mark.parametrize(
    "items, k, match",
    [
        ([30], 3, r"rows of X in \[0, 30\)"),
        ([1.5], 3, "integer rows"),
        ([0], 30, "at most the number of other items"),
        ([0], 0, "k"),
    ],
)
def test_bad_requests_say_what_was_expected(rng, items, k, match):
    with pytest.raises(DiversityInputError, match=match):
        nearest_items(rng.normal(size=(30, 3)), items, k=k)
