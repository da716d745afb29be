"""Interval arithmetic shared by every result that reports uncertainty."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from scipy.special import ndtri

__all__ = ["normal_quantile", "t_interval"]


def normal_quantile(level: float) -> float:
    """The two-sided standard-normal quantile z with P(|Z| <= z) = level (1.96 for 0.95)."""
    return float(ndtri(0.5 + level / 2.0))


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` and its two-sided Student-t interval at ``level``.

    The interval is ``mean ± t_{level, r-1} s / sqrt(r)`` over the r values
    (``scipy.stats.t.interval``); with fewer than two values its ends are NaN.

    Returns
    -------
    mean, low, high : float
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, math.nan
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    if se == 0:
        return mean, mean, mean
    low, high = stats.t.interval(level, x.size - 1, loc=mean, scale=se)
    return mean, float(low), float(high)
