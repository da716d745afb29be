"""diversity_core.projection: PCA and UMAP maps, seeded and validated."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core.exceptions import DiversityInputError
from diversity_core.projection import Projection, project


def test_pca_matches_scikit_learn(rng):
    from sklearn.decomposition import PCA

    X = rng.normal(size=(80, 6)) @ np.diag([5.0, 3.0, 1.0, 0.5, 0.1, 0.1])
    p = project(X)
    ref = PCA(n_components=2, random_state=0).fit(X)
    assert isinstance(p, Projection)
    assert p.coords.shape == (80, 2)
    np.testing.assert_allclose(np.abs(p.coords), np.abs(ref.transform(X)), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(p.explained_variance_ratio, ref.explained_variance_ratio_, rtol=1e-12)
    assert p.explained_variance_ratio[0] > p.explained_variance_ratio[1]
    assert not p.coords.flags.writeable


def test_pca_of_sparse_input_uses_truncated_svd(rng):
    X = sp.random(50, 30, density=0.2, random_state=0, format="csr")
    p = project(X, n_components=3)
    assert p.coords.shape == (50, 3)
    assert p.settings["solver"] == "truncated_svd"
    assert np.all(p.explained_variance_ratio >= 0) and p.explained_variance_ratio.sum() <= 1 + 1e-12


def test_pca_is_deterministic(rng):
    X = rng.normal(size=(40, 5))
    np.testing.assert_array_equal(project(X, rng=3).coords, project(X, rng=3).coords)


def test_progress_is_reported(rng):
    calls = []
    project(rng.normal(size=(20, 3)), progress=lambda d, t, m: calls.append((d, t)))
    assert calls[0] == (0, 1) and calls[-1] == (1, 1)


@pytest.mark.slow
def test_umap_is_seeded_and_separates_clusters(rng):
    pytest.importorskip("umap")
    a = rng.normal(size=(60, 8))
    b = rng.normal(size=(60, 8)) + 20.0
    X = np.vstack([a, b])
    p1 = project(X, method="umap", n_neighbors=10, rng=7)
    p2 = project(X, method="umap", n_neighbors=10, rng=7)
    np.testing.assert_array_equal(p1.coords, p2.coords)
    assert p1.method == "umap" and p1.explained_variance_ratio is None
    assert p1.settings == {
        "n_components": 2,
        "n_neighbors": 10,
        "min_dist": 0.1,
        "metric": "euclidean",
        "seed": 7,
    }
    gap = np.linalg.norm(p1.coords[:60].mean(0) - p1.coords[60:].mean(0))
    spread = max(p1.coords[:60].std(0).max(), p1.coords[60:].std(0).max())
    assert gap > 3 * spread


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "tsne"}, "unknown projection method 'tsne'"),
        ({"n_components": 0}, "n_components must be a positive integer"),
        ({"n_components": 9}, r"at most min\(n, d\) = 4"),
        ({"method": "umap", "metric": "hamming"}, "unknown UMAP metric 'hamming'"),
        ({"method": "umap", "n_neighbors": 1}, "n_neighbors must be an integer >= 2"),
        ({"method": "umap", "min_dist": 2.0}, r"min_dist must be in \[0, 1\]"),
        ({"rng": -1}, "non-negative seed"),
    ],
)
def test_bad_parameters_raise(rng, kwargs, match):
    with pytest.raises(DiversityInputError, match=match):
        project(rng.normal(size=(10, 4)), **kwargs)


def test_too_few_items_raise():
    with pytest.raises(DiversityInputError, match="at least 3 items"):
        project(np.eye(2))


def test_to_dict_has_stable_keys(rng):
    d = project(rng.normal(size=(10, 3))).to_dict()
    assert set(d) == {"method", "coords", "explained_variance_ratio", "settings"}
    assert len(d["coords"]) == 10


# ------------------------------------------------------------------------------------------
# maps of any size: the density grid and the items inside a box or a lasso
# ------------------------------------------------------------------------------------------
def test_density_grid_counts_every_point_once(rng):
    from diversity_core.projection import density_grid

    XY = rng.normal(size=(5000, 2))
    g = density_grid(XY, bins=(40, 30))
    assert g.counts.shape == (30, 40) and g.counts.sum() == 5000  # the edges' points included
    ref, _, _ = np.histogram2d(XY[:, 1], XY[:, 0], bins=(g.y_edges, g.x_edges))
    assert (np.abs(ref - g.counts) <= 1).all() and np.abs(
        ref - g.counts
    ).sum() <= 10  # round-off at edges only
    clipped = density_grid(XY, bins=(4, 4), extent=(0, 1, 0, 1))
    assert clipped.counts.sum() == int(((XY >= 0) & (XY <= 1)).all(axis=1).sum())
    with pytest.raises(DiversityInputError, match="bins must be two positive integers"):
        density_grid(XY, bins=(0, 3))
    with pytest.raises(DiversityInputError, match="n x 2"):
        density_grid(np.zeros((3, 3)))


def test_points_in_region_box_and_lasso(rng):
    from diversity_core.projection import points_in_region

    XY = rng.uniform(-2, 2, size=(4000, 2))
    box = points_in_region(XY, box=(1, -1, -0.5, 0.5))  # corners in any order
    assert box.tolist() == np.flatnonzero((np.abs(XY[:, 0]) <= 1) & (np.abs(XY[:, 1]) <= 0.5)).tolist()
    t = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    disc = points_in_region(XY, lasso=(np.cos(t), np.sin(t)))
    inside = np.hypot(XY[:, 0], XY[:, 1])
    assert set(np.flatnonzero(inside < 0.999)) <= set(disc) <= set(np.flatnonzero(inside < 1.0))
    # a triangle: exactly the points on its inner side of the three edges
    tri = points_in_region(XY, lasso=([0, 2, 0], [0, 0, 2]))
    assert tri.tolist() == np.flatnonzero((XY[:, 0] > 0) & (XY[:, 1] > 0) & (XY.sum(axis=1) < 2)).tolist()
    with pytest.raises(DiversityInputError, match="exactly one of box"):
        points_in_region(XY)
    with pytest.raises(DiversityInputError, match="at least 3 finite vertices"):
        points_in_region(XY, lasso=([0, 1], [0, 1]))


def test_points_in_regions_is_the_union(rng):
    from diversity_core.projection import points_in_region, points_in_regions

    XY = rng.uniform(-2, 2, size=(3000, 2))
    boxes = [(-2, -1, -2, -1), (0, 1, 0, 1)]
    lassos = [([0, 2, 0], [0, 0, 2]), ([-2, -0.5, -2], [2, 2, 0.5])]
    expected = set()
    for b in boxes:
        expected |= set(points_in_region(XY, box=b).tolist())
    for la in lassos:
        expected |= set(points_in_region(XY, lasso=la).tolist())
    got = points_in_regions(XY, boxes=boxes, lassos=lassos)
    assert got.tolist() == sorted(expected) and got.size > 300
    assert points_in_regions(XY).size == 0
    with pytest.raises(DiversityInputError, match="at least 3 finite vertices"):
        points_in_regions(XY, lassos=[([0, 1], [0, 1])])


# ------------------------------------------------------------------------------------------
# UMAP's progress: the layout's epochs reach the callback (the app's background job shows them)
# ------------------------------------------------------------------------------------------
#: umap-learn's own bar format (umap_.py, UMAP.fit), whose "done/total" the report reads.
UMAP_BAR = "{desc}: {percentage:3.0f}%| {bar} {n_fmt}/{total_fmt} [{elapsed}]"


def test_epoch_reports_from_umaps_progress_bar():
    from tqdm import tqdm

    from diversity_core.projection import _EpochReport

    calls = []
    report = _EpochReport(lambda d, t, m: calls.append((d, t, m)), 20, 79, 100)
    for _ in tqdm(range(200), file=report, disable=False, mininterval=0, miniters=1, desc="Epochs completed",
                  bar_format=UMAP_BAR):
        pass
    done = [d for d, _, _ in calls]
    assert len(calls) > 100 and done == sorted(done) and done[0] == 20
    assert calls[-1] == (99, 100, "optimising the layout: epoch 200 of 200")
    assert all(t == 100 and m.startswith("optimising the layout: epoch ") for _, t, m in calls)


@pytest.mark.slow
def test_umap_reports_its_epochs(rng):
    pytest.importorskip("umap")
    calls = []
    X = rng.normal(size=(150, 6))
    project(X, method="umap", n_neighbors=10, progress=lambda d, t, m: calls.append((d, t, m)))
    epochs = [(d, m) for d, t, m in calls if "epoch" in m]
    assert len(epochs) >= 2 and epochs[-1][0] == 99 and re.search(r"epoch (\d+) of \1$", epochs[-1][1])
    done = [d for d, _, _ in calls]
    assert done == sorted(done) and calls[0][0] == 0 and calls[-1] == (100, 100, "done")
