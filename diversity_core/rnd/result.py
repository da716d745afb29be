"""The result of :func:`~diversity_core.rnd.rnd_score`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._json import to_jsonable
from ._regime import rnd_regime_warning

_ARRAYS = ("run_scores", "curves", "mse_train", "mse_val")


@dataclass(frozen=True)
class RNDResult:
    """The RND score of a dataset, with its spread over runs and the training curves.

    Attributes
    ----------
    score : float
        The RND score, Eq. (3) of the RND paper (see :func:`rnd_score`): the mean over runs
        of each run's average of ``RND_i`` over the last ``average_last`` epochs.
    ci_low, ci_high : float
        A 95 % Student-t confidence interval for the score over runs
        (``score -/+ t_{0.975, r-1} * s / sqrt(r)``); NaN when ``runs == 1``.
    run_scores : ndarray of shape (runs,)
        Each run's average of ``RND_i`` over the averaging window.
    curves : ndarray of shape (runs, epochs)
        ``RND_i`` after epoch ``i = 1..epochs`` of every run (column ``i - 1``).
    mse_train, mse_val : ndarray of shape (runs, epochs)
        ``MSE(T, P_i; S_t)`` and ``MSE(T, P_i; S_v)`` (Eq. (1) of the paper) after every epoch.
    settings : dict
        Every setting the score depends on, with ``"auto"`` choices resolved (architecture,
        device, batch size, number of items, input shape, ...). Scores are comparable only
        between results whose settings agree. :attr:`reliability` says whether the setting is
        one where noise can outscore structured data.

    The arrays are read-only float64 copies.
    """

    score: float
    ci_low: float
    ci_high: float
    run_scores: np.ndarray = field(repr=False)
    curves: np.ndarray = field(repr=False)
    mse_train: np.ndarray = field(repr=False)
    mse_val: np.ndarray = field(repr=False)
    settings: Dict[str, Any] = field(repr=False)

    def __post_init__(self) -> None:
        """Store the arrays as read-only float64 copies."""
        for name in _ARRAYS:
            a = np.array(getattr(self, name), dtype=np.float64)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def interval(self) -> Tuple[float, float]:
        """The 95 % confidence interval ``(ci_low, ci_high)``."""
        return (self.ci_low, self.ci_high)

    @property
    def reliability(self) -> Optional[str]:
        """Why this setting may rank i.i.d. noise above structured data, or None.

        :func:`~diversity_core.rnd.rnd_regime_warning` applied to the result's own settings
        (architecture, input shape, training budget, optimizer, number of items); see ``docs/rnd.md``.
        """
        return rnd_regime_warning(self.settings)

    @property
    def std(self) -> float:
        """Standard deviation of the per-run scores (ddof=1; NaN for one run)."""
        r = self.run_scores.size
        return float(np.std(self.run_scores, ddof=1)) if r > 1 else math.nan

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys, JSON-ready under the project's convention.

        NaN (the interval and spread of a single run) is written as ``None``/``null``.
        """
        return to_jsonable(
            {
                "score": self.score,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "std": self.std,
                "run_scores": self.run_scores,
                "curves": self.curves,
                "mse_train": self.mse_train,
                "mse_val": self.mse_val,
                "settings": dict(self.settings),
            }
        )
