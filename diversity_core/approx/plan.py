"""Where the exact path stops: the decision of ``method="auto"``, for callers that pick a scalable path.

:func:`exact_plan` asks the spectrum module's own rule (dual when the kernel has a feature map
and d < n; dense when its n x n matrices fit the memory budget) without computing anything, so an
application can switch to :func:`~diversity_core.approx.vendi_bounds` and
:func:`~diversity_core.approx.vendi_estimate` exactly where the exact path would refuse.
"""

from __future__ import annotations

from .._config import memory_budget
from .._validation import check_scalar
from ..exceptions import MemoryBudgetError
from ..kernels import get_kernel
from ._results import ExactPlan

__all__ = ["exact_plan"]


def exact_plan(n: int, d: int, *, kernel="rbf", n_eigenvectors: int = 0, **kernel_params) -> ExactPlan:
    """The exact path ``compute_spectrum(method="auto")`` would take for n items of dimension d.

    Parameters
    ----------
    n, d : int
        Number of items and feature dimension (for ``kernel="precomputed"``, d = n).
    kernel : str or Kernel, default "rbf"
    n_eigenvectors : int, default 0
        Eigenvectors the caller will ask for (they raise the dense path's memory).
    **kernel_params
        e.g. ``sigma=0.5`` (no effect on the decision; accepted so a caller can pass its settings).

    Returns
    -------
    ExactPlan
        ``method`` is ``"dual"``, ``"dense"`` or None (beyond the memory budget); ``dense_bytes``
        is what forcing the dense path would take.

    Notes
    -----
    Nothing is computed: the rule and the memory estimate are those of
    :func:`~diversity_core.spectrum.compute_spectrum`, evaluated on the sizes alone, against the
    current budget (:func:`~diversity_core.set_config`, ``DIVERSITY_MEMORY_BUDGET``).

    Examples
    --------
    >>> from diversity_core import config_context
    >>> with config_context(memory_budget="1G"):
    ...     exact_plan(100_000, 64, kernel="rbf").method is None
    True
    >>> exact_plan(100_000, 64, kernel="cosine").method
    'dual'
    """
    from ..spectrum import _choose_method, _dense_bytes

    n = check_scalar(n, "n", int, min_val=1)
    d = check_scalar(d, "d", int, min_val=1)
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    kern = get_kernel(kernel, **kernel_params)
    try:
        method = _choose_method("auto", kern, n, d, n_eigenvectors)
    except MemoryBudgetError:
        method = None
    return ExactPlan(method=method, n=n, d=d, kernel=kern.name, dense_bytes=float(_dense_bytes(n, n_eigenvectors)),
                     budget=memory_budget())
