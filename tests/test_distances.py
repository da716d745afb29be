"""The distances module (issue 21 item 1, issue 26 items 9-10): one home for squared distances,
cosine, Tanimoto and row norms, and the properties every caller inherits from it:
distances that do not depend on where the data sit, and norms that neither overflow nor underflow."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import diversity_core as dc
from diversity_core import distances
from diversity_core.baselines import intdiv
from diversity_core.curation import find_duplicates, rarity_scores
from diversity_core.distances import (
    cosine_distances,
    cosine_similarity,
    euclidean_distances,
    row_norms,
    squared_euclidean_distances,
    tanimoto_distances,
    tanimoto_similarity,
)
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import get_kernel
from diversity_core.magnitude import magnitude_function
from diversity_core.magnitude._metric import _pairwise, _PointMetric
from diversity_core.projection import project

EPS = np.finfo(np.float64).eps


def exact_squared(X, Y):
    """Squared distances from the differences (the reference)."""
    return ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)


# --- oracles ---------------------------------------------------------------------------------
def test_squared_distances_match_differences_and_are_symmetric(rng):
    X = rng.standard_normal((60, 7)) * 3 + 50.0
    X[40:45] = X[:5] + 1e-9 * rng.standard_normal((5, 7))  # near-duplicates far from the origin
    X[50] = X[0]
    D2 = squared_euclidean_distances(X)
    np.testing.assert_allclose(D2, exact_squared(X, X), rtol=1e-9, atol=0)
    np.testing.assert_array_equal(D2, D2.T)
    assert np.all(np.diagonal(D2) == 0) and D2[0, 50] == 0
    np.testing.assert_allclose(euclidean_distances(X[:9], X), np.sqrt(exact_squared(X[:9], X)), rtol=1e-9, atol=0)


def test_squared_distances_of_sparse_rows_match_dense(rng):
    B = sp.random(40, 300, density=0.05, random_state=1, format="csr") * 7
    B = sp.vstack([B, B[:3]]).tocsr()  # exact copies: distance exactly 0
    dense = B.toarray()
    D2 = squared_euclidean_distances(B)
    np.testing.assert_allclose(D2, exact_squared(dense, dense), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(D2, D2.T)
    assert D2[0, 40] == 0 and D2[2, 42] == 0
    np.testing.assert_allclose(squared_euclidean_distances(B[:5], dense), D2[:5], rtol=1e-12, atol=1e-12)


def test_direct_recomputation_of_a_tight_cluster_stays_exactly_symmetric(rng, monkeypatch):
    # nearly every pair cancels: blocks are recomputed whole (cdist), mirrored for exact symmetry
    X = 1e3 + 1e-7 * rng.standard_normal((300, 4))
    X[::2] += 5.0  # two far clusters: centring alone does not help
    monkeypatch.setattr(distances, "_CACHE_BYTES", 8 * 300 * 16)
    D2 = distances._squared_distances(X)
    np.testing.assert_array_equal(D2, D2.T)
    np.testing.assert_allclose(D2, exact_squared(X, X), rtol=1e-12, atol=0)


def test_cosine_matches_the_definition(rng):
    X, Y = rng.standard_normal((30, 5)), rng.standard_normal((8, 5))
    ref = (X @ Y.T) / np.linalg.norm(X, axis=1)[:, None] / np.linalg.norm(Y, axis=1)[None, :]
    np.testing.assert_allclose(cosine_similarity(X, Y), ref, rtol=0, atol=8 * EPS)
    np.testing.assert_allclose(cosine_similarity(sp.csr_matrix(X), Y), ref, rtol=0, atol=8 * EPS)
    D = cosine_distances(X)
    assert np.all(np.diagonal(D) == 0) and D.min() >= 0 and D.max() <= 2


def test_tanimoto_matches_jaccard_on_bits_and_counts(rng):
    B = (rng.random((50, 64)) < 0.2).astype(np.float64)
    B[[4, 9]] = 0.0  # empty fingerprints: identical to each other, unlike everything else
    S = tanimoto_similarity(B)
    full = np.flatnonzero(B.any(axis=1))
    np.testing.assert_allclose(S[np.ix_(full, full)], 1 - cdist(B[full], B[full], "jaccard"), rtol=0, atol=4 * EPS)
    assert S[4, 9] == 1.0 and S[4, 0] == 0.0
    np.testing.assert_array_equal(tanimoto_similarity(sp.csr_matrix(B)), S)
    C = rng.integers(0, 4, (20, 30)).astype(np.float32)
    G, sq = C.astype(np.float64) @ C.T.astype(np.float64), (C.astype(np.float64) ** 2).sum(1)
    ref = G / (sq[:, None] + sq[None, :] - G)
    np.fill_diagonal(ref, 1.0)
    np.testing.assert_allclose(tanimoto_similarity(C), ref, rtol=0, atol=4 * EPS)
    # scale-free, even where the products would overflow or underflow
    np.testing.assert_allclose(tanimoto_similarity(B * 1e200), S, rtol=0, atol=4 * EPS)
    np.testing.assert_allclose(tanimoto_similarity(B * 1e-200), S, rtol=0, atol=4 * EPS)
    D = tanimoto_distances(B)
    assert np.all(np.diagonal(D) == 0) and D[4, 9] == 0.0


def test_errors_say_what_to_do(rng):
    X = rng.standard_normal((5, 3))
    with pytest.raises(DiversityInputError, match="same number of features; got 3 and 2"):
        squared_euclidean_distances(X, X[:, :2])
    with pytest.raises(DiversityInputError, match=r"rows 1 of X are zero.*Drop them"):
        cosine_similarity(np.vstack([X[:1], np.zeros((1, 3))]))
    with pytest.raises(DiversityInputError, match="non-negative features.*cosine"):
        tanimoto_similarity(X)
    with pytest.raises(DiversityInputError, match="overflow double precision.*rescale"):
        squared_euclidean_distances(X * 1e300)


# --- scale guards (issue 26 item 10) -----------------------------------------------------------
@pytest.mark.parametrize("factor", [1e160, 1e300, 1e-300, 1e-310])
def test_row_norms_neither_overflow_nor_underflow(rng, factor):
    X = rng.standard_normal((20, 6))
    ref = np.linalg.norm(X, axis=1)
    # the scaled data carry their own rounding (subnormals keep fewer digits)
    tol = 4 * EPS if factor > 1e-305 else 1e-8
    np.testing.assert_allclose(row_norms(X * factor) / factor, ref, rtol=tol)
    np.testing.assert_allclose(row_norms(sp.csr_matrix(X * factor)) / factor, ref, rtol=tol)
    np.testing.assert_allclose(cosine_similarity(X * factor), cosine_similarity(X), rtol=0, atol=1e-7 if factor < 1e-305 else 8 * EPS)


def test_only_exactly_zero_rows_have_norm_zero(rng):
    X = rng.standard_normal((6, 4)) * 1e-300
    X[2] = 0.0
    X[4] = [0.0, 5e-324, 0.0, 0.0]  # the smallest subnormal
    norms = row_norms(X)
    assert np.flatnonzero(norms == 0).tolist() == [2]
    assert norms[4] == 5e-324
    with pytest.raises(DiversityInputError, match=r"all-zero rows \(rows 2\)"):
        dc.vendi_score(X, kernel="cosine")


def test_row_norms_squared_and_float32(rng):
    X = rng.standard_normal((10, 5)).astype(np.float32) * np.float32(1e30)
    np.testing.assert_allclose(row_norms(X, squared=True), (X.astype(np.float64) ** 2).sum(1), rtol=1e-12)
    assert np.isinf(row_norms(np.full((1, 2), 1e300), squared=True)[0])


def test_cosine_scores_are_scale_free(rng):
    """intdiv(c X) = intdiv(X) and rarity_scores(c X) = rarity_scores(X): cosine has no scale
    (before: 1.0 at c = 1e160, every norm overflowed; an all-zero-rows error at c = 1e-300)."""
    X = rng.standard_normal((40, 6))
    for c in (1e160, 1e-300):
        assert intdiv(X * c) == pytest.approx(intdiv(X), rel=1e-12)
        np.testing.assert_allclose(rarity_scores(X * c, n_neighbors=3).scores, rarity_scores(X, n_neighbors=3).scores,
                                   rtol=0, atol=1e-12)
        assert dc.vendi_score(X * c) == pytest.approx(dc.vendi_score(X), rel=1e-10)
    f = magnitude_function(X * 1e-300, [1.0, 4.0], metric="cosine")
    np.testing.assert_allclose(f.values, magnitude_function(X, [1.0, 4.0], metric="cosine").values, rtol=1e-9)


def test_rbf_with_an_underflowing_bandwidth_is_refused(rng):
    X = rng.standard_normal((10, 3))
    with pytest.raises(DiversityInputError, match=r"sigma=1e-300 is too small.*sigma=None for the median"):
        dc.vendi_score(X, kernel="rbf", sigma=1e-300)
    with pytest.raises(DiversityInputError, match="too small for the laplacian kernel"):
        get_kernel("laplacian", sigma=1e-320).gram(X)


# --- translation invariance of every path (issue 26 item 9) ------------------------------------
def _shifted(seed: int, n: int, d: int, power: int):
    """Data X0 and the same data translated far away, Y = X0 + c (X0 = Y - c exactly: Sterbenz)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (3.0 ** -np.arange(d))  # distinct variances: PCA axes defined
    X[-3:] = X[:3] + 1e-6 * rng.standard_normal((3, d))  # near-duplicates
    X[-4] = X[3]  # an exact duplicate
    c = 10.0**power * rng.uniform(1, 2, d) * rng.choice([-1.0, 1.0], d)
    Y = X + c
    return Y - c, Y


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(12, 30), d=st.integers(2, 5), power=st.integers(3, 6))
def test_every_path_is_translation_invariant(seed, n, d, power):
    X0, Y = _shifted(seed, n, d, power)
    # kernels: rbf (fixed and median bandwidth) and laplacian
    for name, params in (("rbf", {"sigma": 0.7}), ("rbf", {}), ("laplacian", {"sigma": 0.7})):
        kern = get_kernel(name, **params)
        np.testing.assert_allclose(kern.gram(Y), kern.gram(X0), rtol=0, atol=1e-8)
        np.testing.assert_allclose(kern.gram(Y[:5], Y), kern.gram(X0[:5], X0), rtol=0, atol=1e-8)
    # magnitude distances, dense and matrix-free, and the twins they find
    (DY, tY), (D0, t0) = _pairwise(Y, "euclidean"), _pairwise(X0, "euclidean")
    np.testing.assert_allclose(DY, D0, rtol=1e-9, atol=0)
    np.testing.assert_array_equal(tY, t0)
    np.testing.assert_allclose(_PointMetric(Y, "euclidean").rows(0, n), D0, rtol=1e-9, atol=0)
    # near-duplicates by distance (exact decisions) and by rbf similarity
    for eps in (0.0, 1e-5):
        a = find_duplicates(Y, kernel="rbf", sigma=0.7, eps=eps, scores=False)
        b = find_duplicates(X0, kernel="rbf", sigma=0.7, eps=eps, scores=False)
        np.testing.assert_array_equal(a.pairs, b.pairs)
        np.testing.assert_allclose(a.pair_values, b.pair_values, rtol=1e-12, atol=0)
        assert a.representatives.tolist() == b.representatives.tolist()
    # neighbour search (rarity) under the rbf kernel
    np.testing.assert_allclose(rarity_scores(Y, kernel="rbf", sigma=0.7, n_neighbors=3).scores,
                               rarity_scores(X0, kernel="rbf", sigma=0.7, n_neighbors=3).scores, rtol=0, atol=1e-8)
    # PCA coordinates, up to the sign of each axis
    pY, p0 = project(Y), project(X0)
    evr = p0.explained_variance_ratio
    assume(abs(evr[0] - evr[1]) > 1e-3)
    signs = np.sign(np.sum(pY.coords * p0.coords, axis=0))
    np.testing.assert_allclose(pY.coords * signs, p0.coords, rtol=0, atol=1e-7)


def test_near_duplicates_do_not_depend_on_the_offset(rng):
    """Issue 26 item 9: on X + 1000 the eps search reported ~40 pairs at eps 2e-5 whose stated
    distances were ~1e-3 (the uncentred expansion's error grows with |x|^2); X and X + 100 gave none."""
    X = rng.standard_normal((200, 64)) * 5
    X[150:190] = X[:40] + 1e-3 * rng.standard_normal((40, 64)) / 8  # pairs at distance ~1e-3
    found = {c: find_duplicates(X + c, kernel="rbf", eps=2e-5, scores=False) for c in (0.0, 100.0, 1000.0)}
    assert [len(r.pairs) for r in found.values()] == [0, 0, 0]
    wider = [find_duplicates(X + c, kernel="rbf", eps=2e-3, scores=False) for c in (0.0, 1000.0)]
    assert len(wider[0].pairs) == 40
    np.testing.assert_array_equal(wider[0].pairs, wider[1].pairs)
    np.testing.assert_allclose(wider[1].pair_values, wider[0].pair_values, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# issue 39 item 1 / issue 38 item 3: every neighbour path of the evaluation is translation invariant
# (the approximate path: tests/test_nearest_neighbours.py, where pynndescent is imported)
# ---------------------------------------------------------------------------------------------
def _offset_pair(seed, spread, n=400, d=8, offset=1e4):
    """``(X0, Y)``: Y = X0 + offset with every difference of rows bit-identical (Sterbenz: Y - offset is exact)."""
    r = np.random.default_rng(seed)
    Y = offset + spread * r.standard_normal((n, d))
    return Y - offset, Y


@pytest.mark.parametrize("spread", [1e-3, 1e-4])
def test_every_neighbour_path_is_translation_invariant(spread):
    from diversity_core import config_context
    from diversity_core.evaluation import prdc
    from diversity_core.evaluation._neighbours import brute_knn, kth_smallest, prepare_pair

    X0, Y = _offset_pair(5, spread)
    D = cdist(X0, X0, "sqeuclidean")
    np.fill_diagonal(D, np.inf)
    want = np.sort(D, axis=1)[:, [0, 2, 4]]
    for X in (X0, Y):
        (a,) = prepare_pair(X)
        single, _ = kth_smallest(a, None, [1, 3, 5])
        with config_context(chunk_bytes="16K"):  # blocks of 16 rows: the blocked within-set path
            blocked, _ = kth_smallest(a, None, [1, 3, 5])
        r, g = prepare_pair(X[:150], X[150:])
        cross, _ = kth_smallest(g, r, [1, 3, 5])
        idx, brute = brute_knn(X[:40], X, 5, exclude=np.arange(40))
        np.testing.assert_allclose(single, want, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(blocked, single)
        Dc = cdist(X0[150:], X0[:150], "sqeuclidean")
        np.testing.assert_allclose(cross, np.sort(Dc, axis=1)[:, [0, 2, 4]], rtol=1e-12, atol=0)
        # brute_knn returns framed squared distances: the frame's power of two, 2^-2e
        e = np.frexp(np.abs(X - X.mean(axis=0)).max())[1]
        np.testing.assert_allclose(np.ldexp(brute, 2 * e), np.sort(D[:40], axis=1)[:, :5], rtol=1e-12, atol=0)
    values = [prdc(R, G, k=5, n_resamples=0) for R, G in ((X0[:200], X0[200:]), (Y[:200], Y[200:]))]
    for name in ("precision", "recall", "density", "coverage"):
        assert getattr(values[0], name).value == getattr(values[1], name).value, name
