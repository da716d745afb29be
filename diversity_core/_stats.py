"""Interval arithmetic shared by every result that reports uncertainty.

:class:`ConfidenceInterval` is the one type of a returned interval, shaped like SciPy's (the
``confidence_interval`` of ``scipy.stats.bootstrap``): the comparisons' subsampling intervals,
the sketch estimates' t-intervals and the guaranteed bounds of :mod:`diversity_core.approx`.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Union

import numpy as np
from scipy.special import ndtri

__all__ = ["ConfidenceInterval", "normal_quantile", "t_interval"]


class ConfidenceInterval(NamedTuple):
    """Ends ``(low, high)`` of an interval, as in ``scipy.stats.bootstrap``'s result.

    Floats for one order (:meth:`~diversity_core.approx.VendiEstimate.interval`,
    :meth:`~diversity_core.approx.VendiBounds.interval`), arrays of shape (k,) for k scores
    (:class:`~diversity_core.compare._subsample.SubsampleResult`). A named tuple: ``lo, hi =
    interval`` unpacks it. Guaranteed bounds are intervals at confidence 1.
    """

    low: Union[float, np.ndarray]
    high: Union[float, np.ndarray]


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
    # scipy.stats takes ~0.8 s to import; only computing an interval needs it, not the interval type
    from scipy import stats

    low, high = stats.t.interval(level, x.size - 1, loc=mean, scale=se)
    return mean, float(low), float(high)
