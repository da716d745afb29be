r"""Memorisation and novelty: each generated item's nearest training item, and a calibrated copy flag.

The statistic. Generated item g has a nearest training item :math:`t^* = \arg\min_t d(g, t)`;
:math:`r(t)` is training item t's distance to its own nearest other training item (its radius)
and m the median radius. The *ratio*

.. math:: \rho(g) = d(g, t^*) \,/\, \max\big(r(t^*), m\big)

is the distance to t* in units of t*'s radius, floored at the median one. Alaa et al. (2022,
Sec. 3.3, "authenticity") flag g when :math:`d(g, t^*) / r(t^*) < 1`: closer to t* than the
training data themselves put two distinct points there. The floor keeps near-copies of training
items in dense regions (a small radius) findable: without it a copy at half the median radius of
an item whose own radius is a third of the median has ratio 1.5.

Why Alaa's rule is not a per-item copy flag. An exact sampler of the data distribution is
flagged often: a fresh point competes with a training point's nearest training neighbour on
nearly equal terms. Held-out real items were flagged at 0.59 (Gaussians, d = 2) to 0.10
(Gaussians, d = 512), 0.15 (d = 128), 0.45 (8 x 8 digits), 0.36 (Morgan fingerprints), 0.46
(n-gram text features), 0.44 to 0.50 (MiniLM embeddings) and 0.52 (game sprites). The share of a set
against the same share of held-out real items (the baseline) means something; one item's flag
does not.

The calibrated flag (split-conformal: Vovk, Gammerman & Shafer 2005; Angelopoulos & Bates 2021).
A part of the training set, chosen by a seeded key of each item's content (seeded, independent of
the row order), is the *calibration part*; the rest is the *check part*. Each training item h is
scored as a held-out item would be: by :math:`\rho` against the training set without h (its
nearest other training item t, and t's radius among the items other than h). A fresh real item
scored against the training set and a training item scored against the others are (up to one
item of training-set size) exchangeable, so with the n calibration scores sorted,
:math:`s_{(1)} \le \dots \le s_{(n)}`, and :math:`k = \lfloor \alpha (n + 1) \rfloor`,

.. math:: \mathrm{flagged}(g) = 1\big[\rho(g) < \tau\big],\qquad \tau = \min(s_{(k)}, 1),

flags a fresh real item with probability at most :math:`k / (n + 1) \le \alpha` (the
finite-sample correction of conformal prediction; ties only lower it, and so does the cap at 1,
which keeps every flagged item closer to t* than t*'s floored radius). The check part measures
it: the share of its items flagged, with a Wilson interval, is the *held-out false-positive
rate*. With fewer than :math:`1/\alpha - 1` calibration items k would be 0: the smallest score is
used and the bound :math:`1 / (n + 1) > \alpha` is stated in the result's note. When more than a
share alpha of held-out items have an exact duplicate among the other training items (binary
fingerprints), :math:`\tau = 0` and nothing is flagged: the features cannot tell a copy from a
fresh item at that rate.

Recall. A copy of a training item t with noise of norm e is at distance at most e from the
training set, so it is flagged whenever :math:`e < \tau m` (and, beyond, when
:math:`e < \tau r(t)`). In ``benchmarks/bench_memorization_fpr.py`` :math:`\tau` is 0.9 on
Gaussians (d = 128), 0.49 to 0.59 on the digits, 0.64 to 0.68 on n-gram text and about 0.6 on
MiniLM embeddings, at a measured false-positive rate of about 1 % on fresh items: near-copies
with noise of half the median radius are found (recall 0.97 to 1.0; docs/evaluation.md).
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
from ..kernels import row_keys
from ._common import check_nn_method
from ._neighbours import approx_knn, kth_smallest, prepare_pair, resolve_nn_method
from ._results import Estimate, MemorizationResult

__all__ = ["memorization"]

METRICS = ("euclidean", "cosine")

#: Default false-positive rate of the per-item flag on held-out training items.
ALPHA = 0.01
#: Default share of the training items in the calibration part (the rest: the check part).
CALIBRATION_FRACTION = 0.5


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


def ratio(distance: np.ndarray, radius: np.ndarray, median: float) -> np.ndarray:
    """The memorisation statistic ``distance / max(radius, median)`` (0 for 0 / 0, inf for d / 0 with d > 0)."""
    distance = np.asarray(distance, dtype=np.float64)
    radius = np.maximum(np.asarray(radius, dtype=np.float64), median)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(radius > 0, distance / radius, np.where(distance > 0, np.inf, 0.0))


def split_order(T: np.ndarray, seed: int) -> np.ndarray:
    """The training items ordered by a seeded key of their content (:func:`~diversity_core.kernels.row_keys`).

    The calibration part is a prefix of this order: a seeded random split that does not depend
    on the order of the rows (identical rows get identical keys and identical scores), nor on
    whether the values arrived as float32 or float64.
    """
    return np.argsort(row_keys(T, seed=int(seed) % (1 << 64)), kind="stable")


def calibrate(scores: np.ndarray, alpha: float) -> tuple:
    """``(threshold, bound)`` of the flag ``ratio < threshold`` from the held-out scores of the calibration part.

    ``threshold`` is the k-th smallest score, :math:`k = \\lfloor \\alpha (n + 1) \\rfloor` (at
    least 1), capped at 1; a fresh item exchangeable with them is flagged with probability at
    most ``bound = k / (n + 1)``.
    """
    n = scores.size
    k = max(1, int(math.floor(alpha * (n + 1) + 1e-9)))
    threshold = min(float(np.partition(scores, k - 1)[k - 1]), 1.0)
    return threshold, k / (n + 1)


def training_neighbours(T, prepared, *, method: str, seed: int, progress=None) -> tuple:
    """``(nearest, r1, r2)`` of every training item among the others (at least 3 items).

    The index and distance of its nearest other training item, and its second-nearest distance.
    """
    if method == "approximate":
        idx, d2 = approx_knn(T, None, 2, seed)
        dist = np.sqrt(d2)
        return idx[:, 0], dist[:, 0], dist[:, 1]
    values, nearest = kth_smallest(prepared, None, [1, 2], progress=progress, message="training nearest neighbours")
    dist = np.sqrt(values)
    return nearest, dist[:, 0], dist[:, 1]


def heldout_ratios(nearest: np.ndarray, r1: np.ndarray, r2: np.ndarray, median: float) -> np.ndarray:
    """Each training item's ratio as a held-out item: against the training set without it.

    Item h's nearest other item t = ``nearest[h]`` is at ``r1[h]``; t's radius without h is its
    second-nearest distance when h is t's nearest, else its nearest distance.
    """
    own = nearest[nearest] == np.arange(nearest.size)
    return ratio(r1, np.where(own, r2[nearest], r1[nearest]), median)


def nearest_in(T, S, prepared_t, prepared_s, *, method: str, seed: int, progress=None) -> tuple:
    """``(nearest, distance)``: each row of S's nearest training item."""
    if method == "approximate":
        idx, d2 = approx_knn(S, T, 1, seed)
        return idx[:, 0], np.sqrt(d2[:, 0])
    d2, nearest = kth_smallest(prepared_s, prepared_t, [1], progress=progress, message="nearest training items")
    return nearest, np.sqrt(d2[:, 0])


def pair_similarity(G: np.ndarray, T: np.ndarray, nearest: np.ndarray, distance: np.ndarray, metric: str) -> np.ndarray:
    """Cosine similarity of each generated item and its nearest training item (NaN for an all-zero row).

    From the exact distances: ``1 - d^2 / 2`` on unit rows (``metric="cosine"``), else
    ``(|g|^2 + |t|^2 - d^2) / (2 |g| |t|)``.
    """
    if metric == "cosine":
        return np.clip(1.0 - distance * distance / 2.0, -1.0, 1.0)
    sq_g = np.einsum("ij,ij->i", G, G, dtype=np.float64)
    sq_t = np.einsum("ij,ij->i", T, T, dtype=np.float64)[nearest]
    with np.errstate(divide="ignore", invalid="ignore"):
        sim = (sq_g + sq_t - distance * distance) / (2.0 * np.sqrt(sq_g * sq_t))
    return np.clip(np.where((sq_g > 0) & (sq_t > 0), sim, np.nan), -1.0, 1.0)


def memorization(
    generated,
    train,
    *,
    reference=None,
    metric: str = "euclidean",
    alpha: float = ALPHA,
    calibration_fraction: float = CALIBRATION_FRACTION,
    nn_method: str = "auto",
    confidence_level: float = 0.95,
    rng=None,
    progress: Optional[ProgressCallback] = None,
) -> MemorizationResult:
    r"""Nearest training item of every generated item, a calibrated copy flag, and the share flagged.

    .. math::

        t^*(g) = \arg\min_{t \in \mathrm{train}} d(g, t),\qquad
        \rho(g) = \frac{d(g, t^*)}{\max(r(t^*), m)},\qquad
        \mathrm{flagged}(g) = 1[\rho(g) < \tau]

    with r(t) a training item's distance to its nearest other training item, m the median of
    r, and :math:`\tau` calibrated on held-out training items so that at most a share ``alpha``
    of fresh real items is flagged (split-conformal; module docstring). The statistic is Alaa et
    al.'s authenticity ratio [1]_ with the radius floored at the median; their rule is
    ``d / r < 1``.

    Parameters
    ----------
    generated : array-like of shape (M, d)
    train : array-like of shape (T, d)
        The model's training items (at least 3).
    reference : array-like of shape (N, d), optional
        Held-out real items, scored by the same rule: the baseline an exact sampler reaches
        (about ``alpha``).
    metric : {"euclidean", "cosine"}, default "euclidean"
        ``"cosine"`` normalises the rows first (the order of Euclidean distances on unit rows is
        that of cosine similarities); distances are then ``sqrt(2 - 2 cos)``.
    alpha : float in (0, 1), default 0.01
        The flag's false-positive rate on fresh samples of the training distribution, at most
        (marginally over the draw of the calibration items).
    calibration_fraction : float in (0, 1), default 0.5
        Share of the training items whose held-out ratios set the threshold; the others measure
        the held-out false-positive rate.
    nn_method : {"auto", "exact", "approximate"}, default "auto"
        As :func:`~diversity_core.evaluation.prdc`.
    confidence_level : float, default 0.95
        Of the Wilson intervals of the flagged shares.
    rng : int or Generator, optional
        Key of the calibration split and seed of the approximate index (default 0: the same
        flags on every call).
    progress : callable, optional

    Returns
    -------
    MemorizationResult
        Per generated item: ``nearest``, ``distance``, ``similarity``, ``train_radius``,
        ``ratio``, ``flagged``; the flagged share with its interval, the baseline and the
        excess; ``alpha``, ``threshold``, ``median_radius``, ``fpr_bound`` and the measured
        ``heldout_fpr``.

    Raises
    ------
    DiversityInputError
        Bad features or options, different numbers of features, fewer than 3 training items.

    Notes
    -----
    Cost: the training set against itself (two nearest neighbours each) and each scored set
    against it, O((T^2 + M T + N T) d), exact in float64 decisions (see
    :func:`~diversity_core.evaluation.prdc`), plus one hash of every training item. A training
    item's held-out score is taken against the other T - 1 items, a fresh item's against all T:
    exchangeable up to that one item. The interval of the flagged share covers the sampling of
    generated items for a fixed training set and threshold.

    References
    ----------
    .. [1] A. M. Alaa, B. van Breugel, E. Saveliev, M. van der Schaar, "How Faithful is your
       Synthetic Data? Sample-level Metrics for Evaluating and Auditing Generative Models",
       ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.random.default_rng(0).normal(size=(400, 64))
    >>> r = memorization(T[:5] + 1e-9, T)               # five near-copies of training items
    >>> r.n_flagged, [int(i) for i in r.nearest], r.alpha, r.fpr_bound <= 0.01
    (5, [0, 1, 2, 3, 4], 0.01, True)
    """
    check_option(metric, METRICS, "metric")
    check_nn_method(nn_method)
    alpha = check_scalar(alpha, "alpha", float, min_val=0.0, max_val=1.0, include_boundaries="neither")
    fraction = check_scalar(calibration_fraction, "calibration_fraction", float, min_val=0.0, max_val=1.0,
                            include_boundaries="neither")
    G = check_features(generated, name="generated", min_samples=1)
    T = check_features(train, name="train", min_samples=3)
    R = None if reference is None else check_features(reference, name="reference", min_samples=1)
    for name, S in (("generated", G), ("reference", R)):
        if S is not None and S.shape[1] != T.shape[1]:
            raise DiversityInputError(
                f"{name} and train must have the same number of features; got {S.shape[1]} and {T.shape[1]}."
            )
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    seed = 0 if rng is None else int(check_random_state(rng).integers(2**31 - 1))
    return _memorization(G, T, R, metric, nn_method, level, seed, progress, alpha=alpha,
                         calibration_fraction=fraction)


def _note(threshold: float, bound: float, alpha: float, n_cal: int, fraction: float) -> str:
    """Why the flag falls short of alpha, or flags nothing; empty when neither."""
    notes = []
    if bound > alpha + 1e-12:
        need = math.ceil(1 / alpha) - 1
        notes.append(f"only {n_cal} calibration items: the flag's false-positive bound is 1/{n_cal + 1} = "
                     f"{bound:.2%}, above alpha = {alpha:.2%}; {need} calibration items (about "
                     f"{math.ceil(need / fraction)} training items) reach it")
    if threshold == 0:
        notes.append(f"more than alpha = {alpha:.2%} of the held-out training items have an exact duplicate among "
                     "the other training items (distance 0): nothing can be flagged at this rate; these features "
                     "cannot tell a copy from a fresh item (raise alpha or use finer features)")
    return "; ".join(notes) + ("." if notes else "")


def _memorization(G, T, R, metric, nn_method, level, seed, progress, *, alpha=ALPHA,
                  calibration_fraction=CALIBRATION_FRACTION) -> MemorizationResult:
    """The computation on validated input (T of at least 3 items)."""
    order = split_order(T, seed)
    if metric == "cosine":
        G, T = _unit(G), _unit(T)
        R = None if R is None else _unit(R)
    n_t = T.shape[0]
    sizes = (n_t, G.shape[0]) + (() if R is None else (R.shape[0],))
    method = resolve_nn_method(nn_method, sizes, T.shape[1], T.dtype.itemsize)
    sets = (T, G) + (() if R is None else (R,))
    prepared = prepare_pair(*sets) if method == "exact" else (None,) * len(sets)
    nn_t, r1, r2 = training_neighbours(T, prepared[0], method=method, seed=seed, progress=progress)
    median = float(np.median(r1))
    held = heldout_ratios(nn_t, r1, r2, median)
    n_cal = min(max(int(round(calibration_fraction * n_t)), 1), n_t - 1)
    threshold, bound = calibrate(held[order[:n_cal]], alpha)
    check = held[order[n_cal:]]
    heldout = wilson(int((check < threshold).sum()), check.size, level)
    nearest, dist = nearest_in(T, G, prepared[0], prepared[1], method=method, seed=seed, progress=progress)
    rho = ratio(dist, r1[nearest], median)
    flagged = rho < threshold
    k = int(flagged.sum())
    frac = wilson(k, G.shape[0], level)
    base = excess = None
    if R is not None:
        near_r, dist_r = nearest_in(T, R, prepared[0], prepared[2], method=method, seed=seed, progress=progress)
        base = wilson(int((ratio(dist_r, r1[near_r], median) < threshold).sum()), R.shape[0], level)
        excess = frac.value - base.value
    return MemorizationResult(
        fraction_flagged=frac, authenticity=1.0 - frac.value, baseline_fraction=base, excess=excess,
        n_flagged=k, n_generated=int(G.shape[0]), n_train=int(n_t), metric=metric, nn_method=method,
        alpha=alpha, threshold=float(threshold), median_radius=median, fpr_bound=bound, heldout_fpr=heldout,
        n_calibration=int(n_cal), n_check=int(check.size), note=_note(threshold, bound, alpha, n_cal,
                                                                     calibration_fraction),
        nearest=np.asarray(nearest, dtype=np.intp), distance=dist,
        similarity=pair_similarity(G, T, nearest, dist, metric), train_radius=r1[nearest], ratio=rho,
        flagged=flagged,
    )
