"""Two-dimensional maps of a dataset's features: PCA (immediate) and UMAP (on demand).

Maps too large to draw point by point are aggregated here (:func:`density_grid`, a 2-D
histogram in O(n)), and a box or lasso drawn on such a map names its items
(:func:`points_in_region`; several boxes and lassos drawn one after another with
:func:`points_in_regions`), so selections stay exact at any size.

PCA uses scikit-learn (``TruncatedSVD`` for sparse input, which cannot be centred without
densifying). UMAP comes from ``umap-learn``, imported only inside :func:`project` because its
first import compiles numba code for about 30 s. Both are seeded, so the same data and
settings always give the same map.

Public names: :func:`project`, :class:`Projection`, :data:`METHODS`, :func:`density_grid`,
:class:`DensityGrid`, :func:`points_in_region`, :func:`points_in_regions`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp

from ._json import to_jsonable
from ._optional import require
from ._progress import ProgressCallback, report
from ._validation import RandomLike, check_features, check_option, check_random_state
from .distances import _row_norms
from .exceptions import DiversityInputError

__all__ = [
    "project",
    "Projection",
    "METHODS",
    "UMAP_METRICS",
    "density_grid",
    "DensityGrid",
    "points_in_region",
    "points_in_regions",
]

#: Projection methods :func:`project` accepts.
METHODS = ("pca", "umap")
#: Metrics UMAP is offered with here (umap-learn accepts more).
UMAP_METRICS = ("euclidean", "cosine", "manhattan", "jaccard")


@dataclass(frozen=True)
class Projection:
    """Coordinates of every item in a low-dimensional map.

    Attributes
    ----------
    coords : ndarray of shape (n, n_components)
        One row per item, in the order of the input.
    method : {"pca", "umap"}
    explained_variance_ratio : ndarray of shape (n_components,) or None
        Share of the variance each PCA axis carries (``None`` for UMAP).
    settings : dict
        Every setting the map depends on (seed included).
    """

    coords: np.ndarray = field(repr=False)
    method: str
    explained_variance_ratio: Optional[np.ndarray] = field(default=None, repr=False)
    settings: Dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for name in ("coords", "explained_variance_ratio"):
            a = getattr(self, name)
            if a is not None:
                a = np.array(a, dtype=np.float64)
                a.setflags(write=False)
                object.__setattr__(self, name, a)

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.coords.shape[0])

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys (the project's JSON convention)."""
        return to_jsonable(
            {
                "method": self.method,
                "coords": self.coords,
                "explained_variance_ratio": self.explained_variance_ratio,
                "settings": self.settings,
            }
        )


def _seed(rng: RandomLike) -> int:
    """A 31-bit seed from ``rng`` (scikit-learn and umap-learn want an int)."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise DiversityInputError(f"rng must be a non-negative seed; got {rng}.")
        return int(rng) % (2**31 - 1)
    return int(check_random_state(rng).integers(2**31 - 1))


def _pca(X, n_components: int, seed: int):
    from sklearn.decomposition import PCA, TruncatedSVD

    if sp.issparse(X):
        model = TruncatedSVD(n_components=n_components, random_state=seed)
        coords = model.fit_transform(X)
        total = float(_row_norms(X, squared=True).sum())  # ||X||_F^2, the uncentred total variance
        evr = model.singular_values_**2 / total if total > 0 else np.zeros(n_components)
        return coords, np.asarray(evr, dtype=np.float64), "truncated_svd"
    model = PCA(n_components=n_components, random_state=seed, svd_solver="auto")
    # centred here, in float64, before scikit-learn sees the data: for n >> d its "auto" solver
    # ("covariance_eigh") forms X^T X - n mu mu^T, which cancels for data far from the origin
    # (coordinates off by 1e-3 of their size at an offset of 1e5 spreads). Coordinates do not
    # change under translation, so centring first loses nothing.
    Xd = np.asarray(X, dtype=np.float64)
    coords = model.fit_transform(Xd - Xd.mean(axis=0))
    return coords, np.asarray(model.explained_variance_ratio_, dtype=np.float64), "pca"


class _EpochReport:
    """A file for umap-learn's tqdm bar: each "done/total" it writes becomes a progress report."""

    def __init__(self, progress: Optional[ProgressCallback], start: int, span: int, total: int):
        self.progress, self.start, self.span, self.total = progress, start, span, total

    def write(self, text: str) -> None:
        found = re.findall(r"(\d+)/(\d+)", str(text))
        if found:
            done, epochs = (int(v) for v in found[-1])
            if epochs:
                report(
                    self.progress,
                    self.start + (self.span * done) // epochs,
                    self.total,
                    f"optimising the layout: epoch {done} of {epochs}",
                )

    def flush(self) -> None:
        pass


def _umap(X, n_components: int, seed: int, n_neighbors: int, min_dist: float, metric: str, epochs=None):
    umap = require("umap", purpose="UMAP projections")  # the first import compiles numba code (~30 s)

    with warnings.catch_warnings():
        # umap-learn warns that a fixed random_state disables parallelism: that is the point.
        warnings.filterwarnings("ignore", message=".*n_jobs.*overridden.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        model = umap.UMAP(
            n_components=n_components,
            n_neighbors=n_neighbors,
            min_dist=min_dist,
            metric=metric,
            random_state=seed,
            low_memory=True,
            # the epochs' bar, written to a file that reports progress (None: no bar)
            tqdm_kwds=None if epochs is None else {"disable": False, "file": epochs, "mininterval": 0.5},
        )
        return np.asarray(model.fit_transform(X), dtype=np.float64)


def project(
    X,
    *,
    method: str = "pca",
    n_components: int = 2,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    metric: str = "euclidean",
    rng: RandomLike = 0,
    progress: Optional[ProgressCallback] = None,
) -> Projection:
    """Project items to ``n_components`` dimensions with PCA or UMAP.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Item features (the featurizer's output).
    method : {"pca", "umap"}, default "pca"
        ``"pca"``: principal components (``TruncatedSVD``, uncentred, for sparse input);
        cost O(n d min(n, d)), immediate on demo data. ``"umap"``: UMAP
        (McInnes et al. 2018); its first import compiles for ~30 s.
    n_components : int, default 2
        Dimension of the map (at most ``min(n, d)`` for PCA).
    n_neighbors, min_dist, metric
        UMAP's parameters (ignored by PCA); ``metric`` in :data:`UMAP_METRICS`.
    rng : None, int or numpy.random.Generator, default 0
        Seed; the same seed gives the same map.
    progress : callable, optional
        ``progress(done, total, message)``: out of 100 for UMAP (0 before importing, 10 once
        imported, 20-99 along the layout's epochs, 100 when done); 0/1 and 1/1 for PCA.

    Returns
    -------
    Projection

    Raises
    ------
    DiversityInputError
        Fewer than 3 items, bad parameters, or umap-learn missing for ``method="umap"``.

    Examples
    --------
    >>> import numpy as np
    >>> project(np.eye(4), n_components=2).coords.shape
    (4, 2)
    """
    check_option(method, METHODS, "projection method")
    X = check_features(X, min_samples=3, allow_sparse=True)
    n, d = X.shape
    if isinstance(n_components, bool) or int(n_components) != n_components or n_components < 1:
        raise DiversityInputError(f"n_components must be a positive integer; got {n_components!r}.")
    n_components = int(n_components)
    seed = _seed(rng)
    if method == "pca":
        if n_components > min(n, d):
            raise DiversityInputError(
                f"PCA gives at most min(n, d) = {min(n, d)} components; got n_components={n_components}."
            )
        report(progress, 0, 1, "PCA")
        coords, evr, solver = _pca(X, n_components, seed)
        report(progress, 1, 1, "done")
        coords = np.ascontiguousarray(coords, dtype=np.float64)
        coords.setflags(write=False)
        return Projection(coords, "pca", evr, {"n_components": n_components, "solver": solver, "seed": seed})

    check_option(metric, UMAP_METRICS, "UMAP metric")
    if isinstance(n_neighbors, bool) or int(n_neighbors) != n_neighbors or n_neighbors < 2:
        raise DiversityInputError(f"n_neighbors must be an integer >= 2; got {n_neighbors!r}.")
    if not 0.0 <= float(min_dist) <= 1.0:
        raise DiversityInputError(f"min_dist must be in [0, 1]; got {min_dist!r}.")
    n_neighbors = int(min(int(n_neighbors), n - 1))
    if n <= n_components + 1:
        raise DiversityInputError(
            f"UMAP needs more than n_components + 1 = {n_components + 1} items; got {n}."
        )
    report(progress, 0, 100, "importing umap-learn (the first import compiles for ~30 s)")
    require("umap", purpose="UMAP projections")  # timed apart from the fit

    report(progress, 10, 100, f"UMAP on {n} items: the neighbour graph")
    if metric == "jaccard" and sp.issparse(X):
        X = X.toarray()
    epochs = None if progress is None else _EpochReport(progress, 20, 79, 100)
    coords = _umap(X, n_components, seed, n_neighbors, float(min_dist), metric, epochs)
    coords.setflags(write=False)
    report(progress, 100, 100, "done")
    settings = {
        "n_components": n_components,
        "n_neighbors": n_neighbors,
        "min_dist": float(min_dist),
        "metric": metric,
        "seed": seed,
    }
    return Projection(coords, "umap", None, settings)


@dataclass(frozen=True)
class DensityGrid:
    """Items per cell of a regular grid over a 2-D map.

    Attributes
    ----------
    counts : ndarray of shape (ny, nx)
        Items in each cell, rows along y (the orientation of an image and of ``go.Heatmap``).
    x_edges, y_edges : ndarray of shape (nx + 1,), (ny + 1,)
        The cells' edges.
    """

    counts: np.ndarray = field(repr=False)
    x_edges: np.ndarray = field(repr=False)
    y_edges: np.ndarray = field(repr=False)

    @property
    def x_centres(self) -> np.ndarray:
        """The cells' centres along x."""
        return 0.5 * (self.x_edges[1:] + self.x_edges[:-1])

    @property
    def y_centres(self) -> np.ndarray:
        """The cells' centres along y."""
        return 0.5 * (self.y_edges[1:] + self.y_edges[:-1])


def density_grid(coords, *, bins=(400, 300), extent=None) -> DensityGrid:
    """Count the items of a 2-D map in a ``bins[0]`` x ``bins[1]`` grid (a density view of any size).

    Parameters
    ----------
    coords : array-like of shape (n, 2)
        The map's coordinates (e.g. :attr:`Projection.coords`).
    bins : (int, int), default (400, 300)
        Cells along x and along y.
    extent : (x0, x1, y0, y1), optional
        The area counted (default: the coordinates' range); items outside it are not counted.

    Returns
    -------
    DensityGrid

    Raises
    ------
    DiversityInputError
        Coordinates that are not finite n x 2 numbers, or bins that are not two positive integers.

    Notes
    -----
    One pass of integer arithmetic and ``np.bincount``: O(n) time, O(nx ny) memory; a
    million points take tens of milliseconds, the same aggregation datashader performs for a
    single-colour point plot.

    Examples
    --------
    >>> density_grid([[0.0, 0.0], [1.0, 1.0], [1.0, 0.9]], bins=(2, 2)).counts.tolist()
    [[1, 0], [0, 2]]
    """
    XY = _check_map(coords)
    if len(bins) != 2 or any(isinstance(b, bool) or int(b) != b or b < 1 for b in bins):
        raise DiversityInputError(f"bins must be two positive integers (cells along x and y); got {bins!r}.")
    nx, ny = int(bins[0]), int(bins[1])
    if extent is None:
        x0, x1 = (float(XY[:, 0].min()), float(XY[:, 0].max())) if len(XY) else (0.0, 1.0)
        y0, y1 = (float(XY[:, 1].min()), float(XY[:, 1].max())) if len(XY) else (0.0, 1.0)
    else:
        x0, x1, y0, y1 = (float(v) for v in extent)
    if x1 <= x0:
        x0, x1 = x0 - 0.5, x0 + 0.5
    if y1 <= y0:
        y0, y1 = y0 - 0.5, y0 + 0.5
    return _density(XY, nx, ny, x0, x1, y0, y1)


def _density(XY: np.ndarray, nx: int, ny: int, x0: float, x1: float, y0: float, y1: float) -> DensityGrid:
    ix = np.floor((XY[:, 0] - x0) * (nx / (x1 - x0))).astype(np.int64)
    iy = np.floor((XY[:, 1] - y0) * (ny / (y1 - y0))).astype(np.int64)
    ix[XY[:, 0] == x1] = nx - 1  # the right and top edges belong to the last cell
    iy[XY[:, 1] == y1] = ny - 1
    inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
    counts = np.bincount(iy[inside] * nx + ix[inside], minlength=nx * ny).reshape(ny, nx)
    return DensityGrid(counts, np.linspace(x0, x1, nx + 1), np.linspace(y0, y1, ny + 1))


def points_in_region(coords, *, box=None, lasso=None) -> np.ndarray:
    """Indices of the map's points inside a box or a lasso (what a selection drawn on a map holds).

    Parameters
    ----------
    coords : array-like of shape (n, 2)
    box : (x0, x1, y0, y1), optional
        A rectangle (either corner order).
    lasso : (xs, ys), optional
        A closed polygon's vertices (even-odd rule: a point on a self-crossing loop's inner
        part is outside, as plotly draws it).

    Returns
    -------
    ndarray of int
        Increasing indices of the points inside (edges count as inside for a box).

    Raises
    ------
    DiversityInputError
        Neither or both of ``box`` and ``lasso``, or a lasso of fewer than 3 vertices.

    Notes
    -----
    O(n) for a box; O(n v) for a lasso of v vertices, on the points inside its bounding box only.

    Examples
    --------
    >>> points_in_region([[0, 0], [2, 2], [5, 5]], box=(1, 3, 1, 3)).tolist()
    [1]
    """
    XY = _check_map(coords)
    if (box is None) == (lasso is None):
        raise DiversityInputError(
            "points_in_region needs exactly one of box=(x0, x1, y0, y1) or lasso=(xs, ys)."
        )
    if box is not None:
        x0, x1, y0, y1 = (float(v) for v in box)
        x0, x1 = min(x0, x1), max(x0, x1)
        y0, y1 = min(y0, y1), max(y0, y1)
        hit = (XY[:, 0] >= x0) & (XY[:, 0] <= x1) & (XY[:, 1] >= y0) & (XY[:, 1] <= y1)
        return np.flatnonzero(hit)
    xs, ys = (np.asarray(v, dtype=np.float64).ravel() for v in lasso)
    if xs.size != ys.size or xs.size < 3 or not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise DiversityInputError(
            f"a lasso needs at least 3 finite vertices (xs and ys of equal length); got {xs.size}."
        )
    return _in_polygon(XY, xs, ys)


def points_in_regions(coords, *, boxes=(), lassos=()) -> np.ndarray:
    """Indices of the map's points inside any of several boxes and lassos (their union).

    What a chart's selection holds after several boxes or lassos were drawn one after another
    (plotly keeps each of them in its selection event).

    Parameters
    ----------
    coords : array-like of shape (n, 2)
    boxes : sequence of (x0, x1, y0, y1)
        Rectangles, as for :func:`points_in_region`.
    lassos : sequence of (xs, ys)
        Closed polygons, as for :func:`points_in_region`.

    Returns
    -------
    ndarray of int
        Increasing indices of the points inside at least one region (empty when there are none).

    Raises
    ------
    DiversityInputError
        A lasso of fewer than 3 vertices, or coordinates that are not finite n x 2 numbers.

    Examples
    --------
    >>> points_in_regions([[0, 0], [2, 2], [5, 5]], boxes=[(1, 3, 1, 3), (4, 6, 4, 6)]).tolist()
    [1, 2]
    """
    XY = _check_map(coords)
    hit = np.zeros(XY.shape[0], dtype=bool)
    for box in boxes:
        hit[points_in_region(XY, box=box)] = True
    for lasso in lassos:
        hit[points_in_region(XY, lasso=lasso)] = True
    return np.flatnonzero(hit)


def _in_polygon(XY: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    cand = np.flatnonzero(
        (XY[:, 0] >= xs.min()) & (XY[:, 0] <= xs.max()) & (XY[:, 1] >= ys.min()) & (XY[:, 1] <= ys.max())
    )
    px, py = XY[cand, 0], XY[cand, 1]
    inside = np.zeros(cand.size, dtype=bool)
    xj, yj = xs[-1], ys[-1]
    for xi, yi in zip(xs, ys):  # ray casting: count the edges a ray towards +x crosses
        crosses = (yi > py) != (yj > py)
        if crosses.any():
            with np.errstate(divide="ignore", invalid="ignore"):
                x_at = xi + (py - yi) * (xj - xi) / (yj - yi)
            inside ^= crosses & (px < x_at)
        xj, yj = xi, yi
    return cand[inside]


def _check_map(coords) -> np.ndarray:
    XY = np.asarray(coords, dtype=np.float64)
    if XY.ndim != 2 or XY.shape[1] != 2:
        raise DiversityInputError(f"map coordinates must be an n x 2 array; got shape {XY.shape}.")
    if not np.isfinite(XY).all():
        raise DiversityInputError(
            "map coordinates must be finite; drop or fix the rows with NaN or infinity."
        )
    return XY
