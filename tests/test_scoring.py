"""Per-group scoring (:func:`diversity_core.scoring.score_groups`), shared by the CLI and the app."""

from __future__ import annotations

import json

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.scoring import score_groups
from diversity_core.sources import NpySource


@pytest.fixture
def two_groups(rng):
    X = np.vstack([rng.standard_normal((40, 3)), 4.0 * rng.standard_normal((30, 3))])
    labels = np.array(["A"] * 40 + ["B"] * 30)
    return X, labels, rng.random(70) + 0.1


def test_every_group_uses_the_weighted_bandwidth_fixed_on_all_items(two_groups):
    X, labels, w = two_groups
    rows = score_groups(X, labels, kernel="rbf", weights=w)
    assert [r.group for r in rows] == ["all", "A", "B"]
    whole = dc.compute_spectrum(X, kernel="rbf", weights=w)
    sigma = whole.kernel["sigma"]
    assert rows[0].kernel == whole.kernel and all(r.kernel["sigma"] == sigma for r in rows)
    for q in (0.5, 1.0, 2.0, np.inf):
        assert rows[0].vendi(q) == pytest.approx(whole.vendi(q), rel=1e-12)
    for r, idx in ((rows[1], labels == "A"), (rows[2], labels == "B")):
        spec = dc.compute_spectrum(X[idx], kernel="rbf", sigma=sigma, weights=w[idx])
        assert r.vendi(1.0) == pytest.approx(spec.vendi(1.0), rel=1e-12) and r.n == idx.sum()
        assert r.intdiv == pytest.approx(dc.intdiv(X[idx], kernel="rbf", sigma=sigma, weights=w[idx]), rel=1e-12)
        assert r.method == "dense" and r.execution == "in-memory" and r.rank == spec.rank


def test_intdiv_comes_out_of_the_dual_pass(two_groups):
    X, labels, w = two_groups
    rows = score_groups(X, labels, kernel="cosine", weights=w, include_all=False)
    assert [r.group for r in rows] == ["A", "B"] and rows[0].method == "dual"
    idx = labels == "A"
    assert rows[0].intdiv == pytest.approx(dc.intdiv(X[idx], weights=w[idx]), abs=1e-14)


def test_small_groups_raise_or_are_left_out(rng):
    X = rng.standard_normal((6, 2))
    labels = ["a", "a", "a", "b", "c", "c"]
    with pytest.raises(dc.DiversityInputError, match="group 'b' has 1 item"):
        score_groups(X, labels)
    assert [r.group for r in score_groups(X, labels, small_groups="skip")] == ["all", "a", "c"]
    with pytest.raises(dc.DiversityInputError, match="unknown small_groups"):
        score_groups(X, labels, small_groups="drop")
    with pytest.raises(dc.DiversityInputError, match="one label per item"):
        score_groups(X, labels[:4])


def test_only_q2_beyond_the_dense_limit_is_scored_by_blocks(rng):
    X = rng.standard_normal((200, 3))
    with dc.config_context(memory_budget="100K"):
        (row,) = score_groups(X, kernel="rbf", qs=[2])
        with pytest.raises(dc.MemoryBudgetError, match="vendi_2_exact"):
            score_groups(X, kernel="rbf", qs=[1, 2])
    assert row.method == "blocked" and row.spectrum is None and row.rank is None
    assert row.vendi(2) == pytest.approx(dc.vendi_score(X, kernel="rbf", q=2), rel=1e-10)
    low, high = row.vs_inf_bounds
    assert low <= dc.vendi_score(X, kernel="rbf", q="inf") <= high
    with pytest.raises(dc.DiversityInputError, match="scored by blocks"):
        row.vendi(1.0)
    out = json.loads(json.dumps(row.to_dict([2])))
    assert list(out) == ["group", "n", "method", "execution", "rank", "vendi", "vs_inf_bounds", "intdiv", "kernel"]


def test_a_source_is_streamed_all_together(rng, tmp_path):
    X = rng.standard_normal((300, 5))
    np.save(tmp_path / "x.npy", X)
    (row,) = score_groups(NpySource(tmp_path / "x.npy"), qs=[1.0])
    assert row.execution == "streamed" and row.method == "dual"
    assert row.vendi(1.0) == pytest.approx(dc.vendi_score(X), rel=1e-12)
    assert row.intdiv == pytest.approx(dc.intdiv(X), rel=1e-12)
    assert list(row.to_dict([1.0])) == ["group", "n", "method", "execution", "rank", "vendi", "intdiv", "kernel"]
    with pytest.raises(dc.DiversityInputError, match="scored all together"):
        score_groups(NpySource(tmp_path / "x.npy"), np.zeros(300))


def test_a_precomputed_kernel_is_split_on_both_sides(rng):
    X = rng.standard_normal((20, 3))
    K = dc.kernel_matrix(X, kernel="rbf", sigma=1.0)
    rows = score_groups(K, ["a"] * 12 + ["b"] * 8, kernel="precomputed")
    expected = dc.vendi_score(X[12:], kernel="rbf", sigma=1.0, q=1.0)
    assert rows[2].vendi(1.0) == pytest.approx(expected, rel=1e-10)
