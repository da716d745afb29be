"""Renamed parameters and attributes: one warning, one rule for giving both names.

The public vocabulary has one name per concept (``weights`` for item probabilities,
``confidence_level`` for an interval's level, as in SciPy); an older name keeps working for a
while with a :class:`DeprecationWarning` that names the new one.
"""

from __future__ import annotations

import warnings
from typing import Any

from .exceptions import DiversityInputError

__all__ = ["UNSET", "renamed_argument", "warn_renamed"]


class _Unset:
    """Sentinel type of a deprecated argument that was not given."""

    def __repr__(self) -> str:
        return "<unset>"


#: Default of a deprecated keyword argument: tells "not given" from an explicit None.
UNSET: Any = _Unset()


def warn_renamed(old: str, new: str, *, why: str = "same meaning: the name used everywhere else in diversity_core",
                 stacklevel: int = 2) -> None:
    """DeprecationWarning naming the new name; ``stacklevel`` 1 is the function calling this one, 2 its caller."""
    warnings.warn(f"{old} is deprecated; use {new} ({why}).", DeprecationWarning, stacklevel=stacklevel + 1)


def renamed_argument(value, old_value, *, new: str, old: str, default=None, stacklevel: int = 2):
    """The value of a renamed keyword argument: ``value``, or the deprecated ``old_value`` with a warning.

    ``old_value`` is :data:`UNSET` when the old name was not used. Giving both names (the new
    one other than its ``default``) raises :class:`DiversityInputError`. ``stacklevel`` 1 is the
    function calling this one, 2 (the default) its caller: the user's line when a public
    function calls this.
    """
    if old_value is UNSET:
        return value
    warn_renamed(f"{old}=", f"{new}=", stacklevel=stacklevel + 1)
    given = value is not default
    if given and isinstance(value, (int, float)) and isinstance(default, (int, float)):
        given = value != default  # a number equal to the default cannot be told from the default
    if given:
        raise DiversityInputError(f"give {new}= or its deprecated alias {old}=, not both.")
    return old_value
