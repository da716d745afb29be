r"""Memorisation and novelty: each generated item's nearest training item, and the authenticity rule.

The rule (Alaa et al. 2022, Sec. 3.3, "authenticity"): generated item g, with nearest training
item :math:`t^* = \arg\min_t d(g, t)`, is *flagged* as a likely copy when

.. math:: d(g, t^*) < d\big(t^*, \mathrm{NN}_{\mathrm{train}}(t^*)\big)

i.e. it sits closer to a training item than that item's own nearest other training item does:
closer than the training data themselves put two distinct points there. The share of flagged
items is the *memorised fraction*; one minus it is Alaa et al.'s authenticity.

Baseline. Even an exact sampler of the data distribution is flagged often: a fresh point competes
with a training point's nearest training neighbour on nearly equal terms. Held-out Gaussian data
against 2,000 training items were flagged at 0.59 (d = 2), 0.39 (d = 8), 0.22 (d = 32), 0.15
(d = 128) and 0.10 (d = 512): the share falls with dimension (hubs, training points that are
nearest to many others, have small radii). The memorisation worth worrying about is the excess
over that baseline, which is why the reference set (held-out real data), when given, is scored by
the same rule.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._progress import ProgressCallback
from .._stats import normal_quantile
from .._validation import check_features, check_option, check_random_state, check_scalar
from ..distances import _unit_rows
from ..exceptions import DiversityInputError
from ._common import check_nn_method
from ._neighbours import approx_knn, kth_smallest, prepare_pair, resolve_nn_method
from ._results import Estimate, MemorizationResult

__all__ = ["memorization"]

METRICS = ("euclidean", "cosine")


def wilson(k: int, n: int, level: float) -> Estimate:
    """A proportion k / n with its Wilson score interval at ``level``."""
    p = k / n
    z = normal_quantile(level)
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return Estimate(p, se=math.sqrt(p * (1 - p) / n), ci_low=max(0.0, centre - half), ci_high=min(1.0, centre + half),
                    df=math.inf, level=level, interval="binomial")


def _unit(X: np.ndarray) -> np.ndarray:
    """Rows scaled to unit norm (cosine: Euclidean distance on unit rows is sqrt(2 - 2 cos))."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    if (norms == 0).any():
        bad = np.flatnonzero(norms == 0)
        raise DiversityInputError(
            f"metric='cosine' is undefined for all-zero rows; {bad.size} rows are zero (first: {int(bad[0])}). "
            "Drop them or use metric='euclidean'."
        )
    return _unit_rows(X)[0]


def nearest_training(T, S, *, method: str, seed: int, progress=None, train_radius=None):
    """``(train_radius, nearest, distance)`` of the rows of S against training set T (validated, same metric).

    ``train_radius[t]`` is training item t's distance to its nearest other training item (passed
    back in to score a second set without recomputing it).
    """
    if method == "approximate":
        if train_radius is None:
            _, dt = approx_knn(T, None, 1, seed)
            train_radius = np.sqrt(dt[:, 0])
        idx, d2 = approx_knn(S, T, 1, seed)
        return train_radius, idx[:, 0], np.sqrt(d2[:, 0])
    t, s = prepare_pair(T, S)
    if train_radius is None:
        r2, _ = kth_smallest(t, None, [1], progress=progress, message="training nearest neighbours")
        train_radius = np.sqrt(r2[:, 0])
    d2, nearest = kth_smallest(s, t, [1], progress=progress, message="nearest training items")
    return train_radius, nearest, np.sqrt(d2[:, 0])


def memorization(
    generated,
    train,
    *,
    reference=None,
    metric: str = "euclidean",
    nn_method: str = "auto",
    confidence_level: float = 0.95,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> MemorizationResult:
    r"""Nearest training item of every generated item, and the share flagged as copies.

    .. math::

        t^*(g) = \arg\min_{t \in \mathrm{train}} d(g, t),\qquad
        \mathrm{flagged}(g) = 1\big[d(g, t^*) < d(t^*, \mathrm{NN}_{\mathrm{train}}(t^*))\big]

    (the authenticity test of Alaa et al. 2022, Sec. 3.3 of [1]_; module docstring).

    Parameters
    ----------
    generated : array-like of shape (M, d)
    train : array-like of shape (T, d)
        The model's training items (at least 2).
    reference : array-like of shape (N, d), optional
        Held-out real items, scored by the same rule: the baseline an exact sampler reaches.
    metric : {"euclidean", "cosine"}, default "euclidean"
        ``"cosine"`` normalises the rows first (the order of Euclidean distances on unit rows is
        that of cosine similarities); distances are then ``sqrt(2 - 2 cos)``.
    nn_method : {"auto", "exact", "approximate"}, default "auto"
        As :func:`~diversity_core.evaluation.prdc`.
    confidence_level : float, default 0.95
        Of the Wilson interval of the flagged share.
    rng : int or Generator, optional
        Seed of the approximate index.
    progress : callable, optional

    Returns
    -------
    MemorizationResult
        Per generated item: ``nearest``, ``distance``, ``train_radius``, ``flagged``; the
        flagged share with its interval, the baseline and the excess.

    Notes
    -----
    Cost: the training set against itself and each scored set against it, O((T^2 + M T + N T) d),
    exact in float64 decisions (see :func:`~diversity_core.evaluation.prdc`). Exact copies
    (distance 0) are always flagged unless their training item has an exact duplicate in the
    training set (radius 0). The interval covers the sampling of generated items for a fixed
    training set.

    References
    ----------
    .. [1] A. M. Alaa, B. van Breugel, E. Saveliev, M. van der Schaar, "How Faithful is your
       Synthetic Data? Sample-level Metrics for Evaluating and Auditing Generative Models",
       ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.random.default_rng(0).normal(size=(50, 3))
    >>> r = memorization(T[:5] + 1e-9, T)               # five near-copies of training items
    >>> r.n_flagged, [int(i) for i in r.nearest]
    (5, [0, 1, 2, 3, 4])
    """
    check_option(metric, METRICS, "metric")
    check_nn_method(nn_method)
    G = check_features(generated, name="generated", min_samples=1)
    T = check_features(train, name="train", min_samples=2)
    R = None if reference is None else check_features(reference, name="reference", min_samples=1)
    for name, S in (("generated", G), ("reference", R)):
        if S is not None and S.shape[1] != T.shape[1]:
            raise DiversityInputError(
                f"{name} and train must have the same number of features; got {S.shape[1]} and {T.shape[1]}."
            )
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    seed = int(check_random_state(rng).integers(2**31 - 1))
    return _memorization(G, T, R, metric, nn_method, level, seed, progress)


def _memorization(G, T, R, metric, nn_method, level, seed, progress) -> MemorizationResult:
    """The computation on validated input."""
    if metric == "cosine":
        G, T = _unit(G), _unit(T)
        R = None if R is None else _unit(R)
    sizes = (T.shape[0], G.shape[0]) + (() if R is None else (R.shape[0],))
    method = resolve_nn_method(nn_method, sizes, T.shape[1], T.dtype.itemsize)
    radius, nearest, dist = nearest_training(T, G, method=method, seed=seed, progress=progress)
    flagged = dist < radius[nearest]
    k = int(flagged.sum())
    frac = wilson(k, G.shape[0], level)
    base = excess = None
    if R is not None:
        _, near_r, dist_r = nearest_training(T, R, method=method, seed=seed, progress=progress, train_radius=radius)
        kb = int((dist_r < radius[near_r]).sum())
        base = wilson(kb, R.shape[0], level)
        excess = frac.value - base.value
    return MemorizationResult(
        fraction_flagged=frac, authenticity=1.0 - frac.value, baseline_fraction=base, excess=excess,
        n_flagged=k, n_generated=int(G.shape[0]), n_train=int(T.shape[0]), metric=metric, nn_method=method,
        nearest=np.asarray(nearest, dtype=np.intp), distance=dist, train_radius=radius[nearest], flagged=flagged,
    )
