"""Validation shared by the evaluation functions: the feature sets, k, the interval options."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .._validation import check_features, check_option, check_scalar
from ..exceptions import DiversityInputError
from ._neighbours import NN_METHODS


def check_sets(reference, generated, *, min_samples: int = 2, names=("reference", "generated")) -> Tuple[np.ndarray, np.ndarray]:
    """Both feature matrices validated (dense, finite, float32/float64 kept), with the same d."""
    R = check_features(reference, name=names[0], min_samples=min_samples)
    G = check_features(generated, name=names[1], min_samples=min_samples)
    if R.shape[1] != G.shape[1]:
        raise DiversityInputError(
            f"{names[0]} and {names[1]} must have the same number of features; got {R.shape[1]} and {G.shape[1]}. "
            "Embed both with the same featurizer."
        )
    return R, G


def check_k(k, name: str, *sizes: int) -> int:
    """A neighbour count 1 <= k < every set's size."""
    k = check_scalar(k, name, int, min_val=1)
    smallest = min(sizes)
    if k >= smallest:
        raise DiversityInputError(
            f"{name} = {k} needs more than {k} items in every set; the smallest has {smallest}. Lower {name}."
        )
    return k


def check_interval_options(confidence_level, n_resamples, interval_size) -> tuple:
    """``(level, n_resamples, interval_size)`` checked: level in (0, 1), n_resamples >= 3 (or 0: no interval)."""
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    n_resamples = check_scalar(n_resamples, "n_resamples", int, min_val=0)
    if 0 < n_resamples < 3:
        raise DiversityInputError(f"n_resamples must be 0 (no interval) or at least 3; got {n_resamples}.")
    interval_size = check_scalar(interval_size, "interval_size", int, min_val=16)
    return level, n_resamples, interval_size


def check_nn_method(nn_method: str) -> str:
    """One of :data:`NN_METHODS`."""
    return check_option(nn_method, NN_METHODS, "nn_method")


def check_quality(quality, n: int, name: str = "quality") -> Optional[np.ndarray]:
    """Non-negative finite quality scores, one per item (float64), or None."""
    if quality is None:
        return None
    try:
        q = np.asarray(quality, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise DiversityInputError(f"{name} must be numbers; got non-numeric values.") from None
    if q.size != n:
        raise DiversityInputError(f"{name} must have one score per item: expected {n}, got {q.size}.")
    if not np.isfinite(q).all():
        raise DiversityInputError(f"{name} contains NaN or infinite values; remove or impute them.")
    if (q < 0).any():
        bad = np.flatnonzero(q < 0)
        raise DiversityInputError(
            f"{name} must be non-negative (a quality score, e.g. in [0, 1]); got {bad.size} negative values "
            f"(rows {', '.join(str(int(i)) for i in bad[:5])}). Rescale the scores."
        )
    return q


def mmd2_from_sums(sxx: float, syy: float, sxy: float, n: int, m: int, *, trace_x: float, trace_y: float,
                   unbiased: bool = True) -> float:
    """MMD^2 from the kernel sums of two sets: the one formula behind KID and CMMD.

    ``sxx`` = sum_ij k(x_i, x_j) over all n^2 pairs (its diagonal sums to ``trace_x``), ``syy``
    likewise for the m items of Y, ``sxy`` = sum_ij k(x_i, y_j). Unbiased (the U-statistic of
    Gretton et al. 2012, Eq. 3): the diagonals are left out and each mean is over the n(n-1)
    ordered pairs of distinct items; biased (the V-statistic): every mean over all pairs.
    """
    if unbiased:
        return float((sxx - trace_x) / (n * (n - 1.0)) + (syy - trace_y) / (m * (m - 1.0))
                     - 2.0 * sxy / (n * float(m)))
    return float(sxx / (n * float(n)) + syy / (m * float(m)) - 2.0 * sxy / (n * float(m)))
