"""Exception and warning types raised by :mod:`diversity_core`.

Every error a user can cause is a :class:`DiversityInputError` (a ``ValueError``) whose
message says what was expected, what arrived and what to do; a decomposition that fails
numerically is a :class:`NumericalError`. Warnings have their own classes so callers can
filter them precisely.
"""

from __future__ import annotations

__all__ = [
    "DiversityError",
    "DiversityInputError",
    "NumericalError",
    "MemoryBudgetError",
    "MissingDependencyError",
    "DiversityWarning",
    "KernelDiagonalWarning",
    "SpectrumWarning",
    "DuplicatesMergedWarning",
    "ConvergenceWarning",
    "NumericalWarning",
    "CacheWarning",
    "UnusedWeightsWarning",
]


class DiversityError(Exception):
    """Base class of every exception raised on purpose by the project."""


class DiversityInputError(DiversityError, ValueError):
    """Bad data or a bad parameter; the message says how to fix it."""


class NumericalError(DiversityError, ArithmeticError):
    """A decomposition or solve failed, or its result cannot be trusted."""


class MemoryBudgetError(DiversityInputError):
    """An allocation would exceed the memory budget; the message names the size, the budget and the way out."""


class MissingDependencyError(DiversityError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class DiversityWarning(UserWarning):
    """Base class of the project's warnings."""


class KernelDiagonalWarning(DiversityWarning):
    """The kernel's diagonal was not 1 and the matrix was rescaled."""


class SpectrumWarning(DiversityWarning):
    """Small negative eigenvalues (round-off) were clipped to zero."""


class DuplicatesMergedWarning(DiversityWarning):
    """Exact duplicate points were merged before a computation."""


class ConvergenceWarning(DiversityWarning):
    """An iterative method stopped before reaching its tolerance."""


class NumericalWarning(DiversityWarning):
    """A result was computed but is numerically delicate (ill-conditioned, approximate solve)."""


class CacheWarning(DiversityWarning):
    """The on-disk result store failed for one result (a corrupt entry, a folder that cannot be written).

    The result was computed instead; the store never makes a computation fail.
    """


class UnusedWeightsWarning(DiversityWarning):
    """A checkpoint holds weights the network built for it does not use (e.g. a task head)."""
