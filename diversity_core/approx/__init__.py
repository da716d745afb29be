"""Vendi scores beyond the dense limit: guaranteed bounds and sketch estimates with error bars.

- :mod:`~diversity_core.approx.bounds`: :func:`vendi_bounds`, :func:`iter_vendi_bounds`
  (progressive), :func:`bounds_from_eigenvalues` (the bound maths on given eigenvalues).
- :mod:`~diversity_core.approx.loewner`: :func:`nystrom_bounds` (guaranteed bounds from a
  Nystrom sketch's eigenvalues, lower bounds in the PSD order: any n, no pass over K),
  :func:`bounds_from_lower_eigenvalues`.
- :mod:`~diversity_core.approx.sketches`: :func:`vendi_estimate` (Nystrom, random Fourier
  features, Tanimoto random features; error bars from independent replicates),
  :func:`vs_inf_exact` (VS_inf = 1 / lambda_max by Lanczos).
- :mod:`~diversity_core.approx.plan`: :func:`exact_plan` (whether the exact path fits the memory
  budget, by the rule of ``method="auto"``; what forcing it would take).
- :mod:`~diversity_core.approx._results`: :class:`VendiBounds`, :class:`VendiEstimate`, :class:`ExactPlan`.
"""

from ._results import ExactPlan, VendiBounds, VendiEstimate
from .bounds import (
    BOUND_METHODS,
    DEFAULT_KS,
    bounds_from_eigenvalues,
    bounds_method,
    iter_vendi_bounds,
    vendi_bounds,
)
from .loewner import bounds_from_lower_eigenvalues, nystrom_bounds
from .plan import exact_plan
from .sketches import ESTIMATORS, vendi_estimate, vs_inf_exact

__all__ = [
    "VendiBounds",
    "VendiEstimate",
    "ExactPlan",
    "exact_plan",
    "vendi_bounds",
    "iter_vendi_bounds",
    "bounds_from_eigenvalues",
    "bounds_method",
    "nystrom_bounds",
    "bounds_from_lower_eigenvalues",
    "BOUND_METHODS",
    "DEFAULT_KS",
    "vendi_estimate",
    "vs_inf_exact",
    "ESTIMATORS",
]
