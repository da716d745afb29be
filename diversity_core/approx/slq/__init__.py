"""Full-sample Vendi scores at any n by stochastic Lanczos quadrature.

- :mod:`._api`: :func:`vendi_slq`, :func:`iter_vendi_slq` (progressive, budgeted, cancellable).
- :mod:`._result`: :class:`VendiSLQ` (estimate, interval, and the parts of its half-width).
- :mod:`._quadrature`: the maths (Lanczos recurrences, Gauss and Gauss-Radau brackets, error terms).

The products with the kernel come from :mod:`diversity_core.approx._operators`.
"""

from ._api import DEFAULT_QS, iter_vendi_slq, vendi_slq
from ._result import TARGET, VendiSLQ

__all__ = ["vendi_slq", "iter_vendi_slq", "VendiSLQ", "TARGET", "DEFAULT_QS"]
