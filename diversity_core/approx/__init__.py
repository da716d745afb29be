"""Vendi scores beyond the dense limit: guaranteed bounds, full-sample SLQ estimates, sketch estimates.

- :mod:`~diversity_core.approx.bounds`: :func:`vendi_bounds`, :func:`iter_vendi_bounds`
  (progressive, Lanczos), :func:`vs_inf_exact` (VS_inf = 1 / lambda_max by Lanczos).
- :mod:`~diversity_core.approx.loewner`: :func:`nystrom_bounds` (guaranteed bounds from a
  Nystrom sketch's eigenvalues, lower bounds in the PSD order: any n, no pass over K).
- :mod:`~diversity_core.approx.slq`: :func:`vendi_slq`, :func:`iter_vendi_slq` (estimates of the
  full-sample VS_q for q in (0, inf] by stochastic Lanczos quadrature with a deflated head, with
  intervals: probes' t-interval plus quadrature and rounding bounds), :class:`VendiSLQ`.
- :mod:`~diversity_core.approx._operators`: :func:`kernel_operator` (matrix-free products
  ``rho @ V`` for many vectors per pass over K: float32 tiles, numpy threads, torch/CUDA, Dask).
- :mod:`~diversity_core.approx.sketches`: :func:`vendi_estimate` (Nystrom, random Fourier
  features, Tanimoto random features; error bars from independent replicates).
- :mod:`~diversity_core.approx.plan`: :func:`plan_scores` (the large-data policy: which path,
  which sketch and which sizes fit the memory budget, as a :class:`ScorePlan`), :func:`exact_plan`
  (whether the exact path fits the memory budget, by the rule of ``method="auto"``).
- :mod:`~diversity_core.approx.run`: :func:`run_plan` (carries out a :class:`ScorePlan` beyond the
  exact paths, yielding a :class:`PlanStep` as each result improves: the orders each estimator
  takes, the plan's sizes, the refinement schedule), :func:`run_plan_to_end` (its last results).
- :mod:`~diversity_core.approx._band`: the bound maths on given eigenvalues,
  :func:`bounds_from_eigenvalues` (exact top eigenvalues) and
  :func:`bounds_from_lower_eigenvalues` (lower bounds in the PSD order).
- :mod:`~diversity_core.approx._results`: :class:`VendiBounds`, :class:`VendiEstimate`, :class:`ExactPlan`.

Imports point one way: ``_band`` <- ``_results`` <- ``sketches`` <- ``loewner`` <- ``bounds`` <- ``plan``;
``_operators`` <- ``slq`` <- ``plan`` <- ``run``;
:mod:`diversity_core.vendi` calls :func:`vs_inf_exact` and nothing here imports it. Intervals
are :class:`~diversity_core.ConfidenceInterval` ``(low, high)``: ``.interval(q)`` on both
results, ``.vendi(q)`` a float where there is a point value (:class:`VendiEstimate`).
"""

from ._band import bounds_from_eigenvalues, bounds_from_lower_eigenvalues
from ._operators import KernelOperator, kernel_operator
from ._results import ExactPlan, VendiBounds, VendiEstimate
from .bounds import BOUND_METHODS, DEFAULT_KS, bounds_method, iter_vendi_bounds, vendi_bounds, vs_inf_exact
from .loewner import nystrom_bounds
from .plan import ScorePlan, exact_plan, plan_scores
from .run import PlanResult, PlanStep, run_plan, run_plan_to_end
from .sketches import ESTIMATORS, vendi_estimate
from .slq import VendiSLQ, iter_vendi_slq, vendi_slq

__all__ = [
    "VendiBounds",
    "VendiEstimate",
    "ExactPlan",
    "exact_plan",
    "plan_scores",
    "ScorePlan",
    "run_plan",
    "run_plan_to_end",
    "PlanStep",
    "PlanResult",
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
    "vendi_slq",
    "iter_vendi_slq",
    "VendiSLQ",
    "kernel_operator",
    "KernelOperator",
]
