"""The order q of a Vendi score: parsed in one place, formatted in one place.

An order is a number in [0, inf]. Users write infinity as ``inf``, ``infinity`` or ``∞``
(and the ``vendi_score`` package passes the string ``'inf'``); JSON and CSV keys write it as
``inf``; labels in the app and the report show ``∞``.
"""

from __future__ import annotations

import math

import numpy as np

from .exceptions import DiversityInputError

__all__ = ["parse_q", "check_q", "format_q", "q_key"]

_INF_WORDS = ("inf", "+inf", "infinity", "+infinity", "∞")


def parse_q(value) -> float:
    """One order q from a number or a string (``'2'``, ``'0.5'``, ``'inf'``, ``'∞'``).

    Raises
    ------
    DiversityInputError
        When the value is not a number >= 0 or infinity.
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _INF_WORDS:
            return math.inf
    if isinstance(value, bool):
        raise DiversityInputError(f"order q must be a number >= 0 or 'inf'; got {value!r}.")
    try:
        q = float(value)
    except (TypeError, ValueError):
        raise DiversityInputError(f"order q must be a number >= 0 or 'inf'; got {value!r}.") from None
    if math.isnan(q) or q < 0:
        raise DiversityInputError(f"order q must be a number >= 0 or 'inf'; got {value!r}.")
    return q


def check_q(q) -> np.ndarray:
    """Orders q in [0, inf] as a float array, from a number, a string or a sequence of them."""
    values = np.atleast_1d(np.asarray(q, dtype=object))
    return np.array([parse_q(v) for v in values.ravel()], dtype=np.float64).reshape(values.shape)


def format_q(q) -> str:
    """A label for people: ``0``, ``0.5``, ``1``, ``∞``."""
    q = float(q)
    return "∞" if math.isinf(q) else f"{q:g}"


def q_key(q) -> str:
    """A stable machine key (JSON, CSV, URL): ``0``, ``0.5``, ``1``, ``inf``."""
    q = float(q)
    return "inf" if math.isinf(q) else f"{q:g}"
