"""The result of :func:`~diversity_core.rnd.rnd_score`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .._deprecation import UNSET, warn_renamed
from .._display import NotebookDisplay, format_interval, frame_row, require_plotly, short_repr
from .._json import to_jsonable
from .._stats import ConfidenceInterval, flat_interval_reader, interval_from_ends
from ..exceptions import DiversityInputError
from ._regime import rnd_regime_warning

_ARRAYS = ("run_scores", "curves", "mse_train", "mse_val")


@dataclass(frozen=True, init=False, repr=False)
class RNDResult(NotebookDisplay):
    """The RND score of a dataset, with its spread over runs and the training curves.

    Attributes
    ----------
    score : float
        The RND score, Eq. (3) of the RND paper (see :func:`rnd_score`): the mean over runs
        of each run's average of ``RND_i`` over the last ``average_last`` epochs.
    confidence_interval : ConfidenceInterval
        A 95 % Student-t confidence interval for the score over runs
        (``score -/+ t_{0.975, r-1} * s / sqrt(r)``; :class:`~diversity_core.ConfidenceInterval`,
        ``lo, hi = r.confidence_interval``, its ``level`` that of ``settings["confidence"]``);
        NaN ends when ``runs == 1``. ``ci_low``/``ci_high`` are its deprecated flat readers and
        ``interval`` its deprecated tuple; the constructor and :meth:`to_dict` keep the flat
        ``ci_low``/``ci_high`` (the saved format's keys).
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

    The arrays are read-only float64 copies. The constructor takes ``(score, ci_low, ci_high,
    run_scores, curves, mse_train, mse_val, settings)`` as saved, or ``confidence_interval=`` in
    place of the two ends.
    """

    score: float
    confidence_interval: ConfidenceInterval
    run_scores: np.ndarray = field(repr=False)
    curves: np.ndarray = field(repr=False)
    mse_train: np.ndarray = field(repr=False)
    mse_val: np.ndarray = field(repr=False)
    settings: Dict[str, Any] = field(repr=False)

    def __init__(self, score: float, ci_low: float = UNSET, ci_high: float = UNSET, run_scores=UNSET,
                 curves=UNSET, mse_train=UNSET, mse_val=UNSET, settings: Dict[str, Any] = UNSET, *,
                 confidence_interval: Optional[ConfidenceInterval] = None):
        values = dict(score=score, run_scores=run_scores, curves=curves, mse_train=mse_train, mse_val=mse_val,
                      settings=settings)
        missing = [k for k, v in values.items() if v is UNSET]
        if missing:
            raise TypeError(f"RNDResult() missing required arguments: {', '.join(missing)}")
        level = settings.get("confidence") if isinstance(settings, dict) else None
        ci = interval_from_ends(confidence_interval, ci_low, ci_high,
                                UNSET if confidence_interval is not None else level)
        if ci is None:
            raise TypeError("RNDResult() needs its interval: ci_low and ci_high, or confidence_interval=.")
        object.__setattr__(self, "confidence_interval", ci)
        for name, v in values.items():
            if name in _ARRAYS:  # read-only float64 copies
                v = np.array(v, dtype=np.float64)
                v.setflags(write=False)
            object.__setattr__(self, name, v)

    ci_low = flat_interval_reader("RNDResult", "ci_low")
    ci_high = flat_interval_reader("RNDResult", "ci_high")

    @property
    def interval(self) -> Tuple[float, float]:
        """Deprecated: the interval as a tuple; use :attr:`confidence_interval` (which unpacks the same)."""
        warn_renamed("RNDResult.interval", "RNDResult.confidence_interval",
                     why="the one interval type on every estimate; .interval names how an interval was made")
        return self.confidence_interval

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
                "ci_low": self.confidence_interval.low,
                "ci_high": self.confidence_interval.high,
                "std": self.std,
                "run_scores": self.run_scores,
                "curves": self.curves,
                "mse_train": self.mse_train,
                "mse_val": self.mse_val,
                "settings": dict(self.settings),
            }
        )

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        runs, epochs = self.curves.shape if self.curves.ndim == 2 else (self.run_scores.size, 0)
        arch = self.settings.get("architecture")
        return short_repr(
            f"RNDResult(runs={runs}, epochs={epochs}" + (f", architecture={arch!r})" if arch else ")"),
            [("score", format_interval(self.score, self.confidence_interval)),
             ("std over runs", self.std),
             ("run_scores", self.run_scores),
             ("averaged over", f"the last {self.settings['average_last']} epochs"
              if "average_last" in self.settings else None),
             ("reliability", self._reliability_or_none())],
        )

    def _reliability_or_none(self) -> Optional[str]:
        """:attr:`reliability`, or None where the settings cannot say (a repr never raises)."""
        try:
            return self.reliability
        except DiversityInputError:
            return None

    def to_frame(self):
        """Tidy DataFrame: one row, score ``"rnd"``, the t-interval over runs (kind ``"estimate"``).

        Extra columns ``std`` and ``runs``. NaN ends for one run.
        """
        from .._display import tidy_frame

        return tidy_frame([frame_row("rnd", self.score, self.confidence_interval, std=self.std,
                                     runs=int(self.run_scores.size))])

    def plot(self):
        """The app's figure of the training curves: RND_i per epoch, each run and their mean (``rnd_figure``).

        Returns a plotly Figure; raises MissingDependencyError without plotly.
        """
        require_plotly("RNDResult.plot()")
        from ..report.figures.curves import rnd_figure

        return rnd_figure(self.curves, average_last=self.settings.get("average_last"),
                          total_epochs=self.settings.get("epochs"))
