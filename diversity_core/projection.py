"""Two-dimensional maps of a dataset's features: PCA (immediate) and UMAP (on demand).

PCA uses scikit-learn (``TruncatedSVD`` for sparse input, which cannot be centred without
densifying). UMAP comes from ``umap-learn``, imported only inside :func:`project` because its
first import compiles numba code for about 30 s. Both are seeded, so the same data and
settings always give the same map.

Public names: :func:`project`, :class:`Projection`, :data:`METHODS`.
"""

from __future__ import annotations

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

__all__ = ["project", "Projection", "METHODS", "UMAP_METRICS"]

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
        return to_jsonable({
            "method": self.method,
            "coords": self.coords,
            "explained_variance_ratio": self.explained_variance_ratio,
            "settings": self.settings,
        })


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


def _umap(X, n_components: int, seed: int, n_neighbors: int, min_dist: float, metric: str):
    import warnings

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
        ``progress(done, total, message)``: 0/2 before, 1/2 after importing, 2/2 when done.

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
    report(progress, 0, 2, "importing umap-learn (the first import compiles for ~30 s)")
    require("umap", purpose="UMAP projections")  # timed apart from the fit

    report(progress, 1, 2, f"fitting UMAP on {n} items")
    if metric == "jaccard" and sp.issparse(X):
        X = X.toarray()
    coords = _umap(X, n_components, seed, n_neighbors, float(min_dist), metric)
    coords.setflags(write=False)
    report(progress, 2, 2, "done")
    settings = {
        "n_components": n_components,
        "n_neighbors": n_neighbors,
        "min_dist": float(min_dist),
        "metric": metric,
        "seed": seed,
    }
    return Projection(coords, "umap", None, settings)
