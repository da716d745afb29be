"""Interval arithmetic shared by every result that reports uncertainty.

:class:`ConfidenceInterval` is the one type of a returned interval, shaped like SciPy's (the
``confidence_interval`` of ``scipy.stats.bootstrap``) and public as
``diversity_core.ConfidenceInterval``. Every estimate carries its interval under one name,
``confidence_interval`` (the comparisons' :class:`~diversity_core.compare.ScoreEstimate` and
:class:`~diversity_core.compare.PairwiseDifference`, the evaluations'
:class:`~diversity_core.evaluation.Estimate`, :class:`~diversity_core.rnd.RNDResult` and the
subsampling engine's result); results with one interval per order give it by
``.interval(q)`` (the sketch and SLQ estimates, and the guaranteed bounds of
:mod:`diversity_core.approx`, kind ``"bound"``). The flat ``ci_low``/``ci_high`` (and an
evaluation estimate's ``level``) are deprecated readers of it (:func:`flat_interval_reader`).
"""

from __future__ import annotations

import math
from typing import Any, Optional, Union

import numpy as np
from scipy.special import ndtri

from ._deprecation import UNSET, warn_renamed
from .exceptions import DiversityInputError

__all__ = ["ConfidenceInterval", "INTERVAL_KINDS", "normal_quantile", "t_interval"]

#: What an interval can be: a statistical interval around an estimate, or a guaranteed range.
INTERVAL_KINDS = ("estimate", "bound")

_End = Union[float, np.ndarray, None]


class ConfidenceInterval(tuple):
    """Ends ``(low, high)`` of an interval, with its confidence ``level`` and its ``kind``.

    A 2-tuple like the ``confidence_interval`` of ``scipy.stats.bootstrap``: ``lo, hi =
    interval`` unpacks it, ``interval[0]`` is the low end, ``np.asarray(interval)`` stacks the ends.

    Parameters
    ----------
    low, high : float, ndarray of shape (k,) or None
        The ends: floats for one number, arrays for k scores at once (the subsampling engine's
        result). NaN ends: no interval could be made (an RND score of one run).
    level : float or None, default None
        The two-sided confidence level, in (0, 1]; 1.0 for a guaranteed range. None when it was
        not recorded (rows read back from a CSV table, which has no level column).
    kind : {"estimate", "bound"}, default "estimate"
        ``"estimate"``: a statistical interval around an estimate, at ``level``; ``"bound"``: a
        range certain to contain the value (level 1.0; :meth:`bound` makes one).

    Attributes
    ----------
    low, high, level, kind
        As given (read-only).

    Notes
    -----
    Equality and hashing are the tuple's: an interval equals any ``(low, high)`` with the same
    ends, whatever its level and kind (they describe the interval; the ends are its value). A row
    read back from a CSV table (no level column) thus equals the row that was written.

    Examples
    --------
    >>> ci = ConfidenceInterval(0.9, 1.3, level=0.95)
    >>> lo, hi = ci
    >>> (lo, hi, ci.level, ci.kind)
    (0.9, 1.3, 0.95, 'estimate')
    >>> ConfidenceInterval.bound(2.0, 3.0)
    ConfidenceInterval(low=2.0, high=3.0, level=1.0, kind='bound')
    """

    #: The names of the ends, as a named tuple's ``_fields`` (``(low, high)`` is what iterates).
    _fields = ("low", "high")

    def __new__(cls, low: _End, high: _End, level: Optional[float] = None, kind: str = "estimate"):
        if kind not in INTERVAL_KINDS:
            raise DiversityInputError(f"kind must be one of {', '.join(map(repr, INTERVAL_KINDS))}; got {kind!r}.")
        if level is not None:
            level = float(level)
            if not 0.0 < level <= 1.0:
                raise DiversityInputError(f"level must be in (0, 1] (1 for a guaranteed range); got {level!r}.")
        if kind == "bound":
            if level not in (None, 1.0):
                raise DiversityInputError(f"a guaranteed range (kind 'bound') has level 1.0; got {level!r}.")
            level = 1.0
        self = super().__new__(cls, (low, high))
        self.__dict__.update(level=level, kind=kind)  # beside the ends; read-only through __setattr__
        return self

    @classmethod
    def bound(cls, low: _End, high: _End) -> ConfidenceInterval:
        """A range certain to contain the value: level 1.0, kind ``"bound"``."""
        return cls(low, high, level=1.0, kind="bound")

    @property
    def low(self) -> _End:
        """The low end."""
        return self[0]

    @property
    def high(self) -> _End:
        """The high end."""
        return self[1]

    def _replace(self, **changes: Any) -> ConfidenceInterval:
        """A copy with ``low``, ``high``, ``level`` or ``kind`` changed (as a named tuple's ``_replace``)."""
        unknown = set(changes) - {"low", "high", "level", "kind"}
        if unknown:
            raise DiversityInputError(f"unknown interval fields {sorted(unknown)}; choose among low, high, level, kind.")
        now = {"low": self[0], "high": self[1], "level": self.level, "kind": self.kind}
        return type(self)(**{**now, **changes})

    def _asdict(self) -> dict:
        """``{"low": ..., "high": ..., "level": ..., "kind": ...}``."""
        return {"low": self[0], "high": self[1], "level": self.level, "kind": self.kind}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ConfidenceInterval is read-only; use ._replace({name}=...) for a changed copy.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ConfidenceInterval is read-only.")

    def __repr__(self) -> str:
        return f"ConfidenceInterval(low={self[0]!r}, high={self[1]!r}, level={self.level!r}, kind={self.kind!r})"

    def __reduce__(self):
        # pickling (results travel to and from worker processes) and copy keep the level and kind
        return (type(self), (self[0], self[1], self.level, self.kind))


def interval_from_ends(interval: Optional[ConfidenceInterval], low=UNSET, high=UNSET, level=UNSET,
                       ) -> Optional[ConfidenceInterval]:
    """The interval a result stores, from its ``confidence_interval=`` and the flat ``ci_low``/``ci_high``/``level``.

    The flat arguments are the saved format's keys (``to_dict()``, CSV columns), so the results'
    constructors keep taking them; :data:`~diversity_core._deprecation.UNSET` means not given.
    Given ends replace those of ``interval`` (``dataclasses.replace(e, ci_low=..., ci_high=...)``
    keeps working), keeping its level unless ``level`` is given. No interval (None) when both
    ends are None.
    """
    if not isinstance(interval, (ConfidenceInterval, type(None))):
        if isinstance(interval, tuple) and len(interval) == 2:
            interval = ConfidenceInterval(*interval)
        else:
            raise DiversityInputError(
                f"confidence_interval must be a ConfidenceInterval, a (low, high) pair or None; got {interval!r}.")
    if low is UNSET and high is UNSET and level is UNSET:
        return interval
    lo, hi = (None, None) if interval is None else interval
    lo = lo if low is UNSET else low
    hi = hi if high is UNSET else high
    if lo is None and hi is None:
        return None
    if level is UNSET:
        level = None if interval is None else interval.level
    kind = "estimate" if interval is None else interval.kind
    return ConfidenceInterval(lo, hi, level=level, kind=kind)


def flat_interval_reader(owner: str, name: str) -> property:
    """Deprecated reader ``owner.name`` (``ci_low``, ``ci_high`` or ``level``) of ``confidence_interval``.

    Returns the end (or the level) of ``self.confidence_interval``, None without an interval,
    with a :class:`DeprecationWarning` naming the new spelling.
    """
    part = {"ci_low": "low", "ci_high": "high", "level": "level"}[name]

    def read(self):
        warn_renamed(f"{owner}.{name}", f"{owner}.confidence_interval.{part}",
                     why="the one interval type on every estimate, None without an interval")
        ci = self.confidence_interval
        return None if ci is None else getattr(ci, part)

    read.__name__ = name
    read.__doc__ = f"Deprecated: ``confidence_interval.{part}`` (None without an interval)."
    return property(read)


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
