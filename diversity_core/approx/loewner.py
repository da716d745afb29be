r"""Guaranteed bounds on every Vendi score from a Nystrom sketch (no Lanczos, no n x n pass).

A Nystrom approximation is a projection of the kernel's feature map, so it lies below the
kernel in the positive-semidefinite (Loewner) order: :math:`\tilde K \preceq K`, and with the
item weights :math:`\tilde\rho = P^{1/2} \tilde K P^{1/2} \preceq \rho`. Weyl's inequality then
gives, for the sorted eigenvalues,

.. math:: \mu_i \le \lambda_i \quad (i = 1, \dots, n), \qquad
          \sum_i (\lambda_i - \mu_i) = r = 1 - \sum_i \mu_i ,

where :math:`\mu` are the sketch's eigenvalues (zero beyond its rank) and r is the trace the
sketch misses, known exactly. Every spectrum :math:`\lambda = \mu + \delta` with
:math:`\delta \ge 0`, :math:`\sum \delta = r` is consistent with this; over that set

- the most concentrated spectrum is :math:`\mu + r e_1` (it majorises every other: a top-j
  partial sum gains at most r), so it gives the *lower* bound on every VS_q (the Renyi entropy
  is Schur-concave for every q);
- the flattest is the water-filling :math:`\max(\mu_i, c)` with c set by the unit trace (it is
  majorised by every other), which gives the *upper* bound.

Both hold with certainty for any landmarks, any m and any kernel (only positive
semidefiniteness is used). How tight they are depends on r: the missing mass r spread over the
n - m unseen eigenvalues dominates VS_q for q < 1, while for q >= 1 a small r leaves a narrow
band. With the exact VS_2 (:func:`~diversity_core.blocked.vendi_2_exact`) the band is also
intersected with the bounds that the trace and VS_2 alone give. Cost: one sketch, O(n m d +
n m^2) time and O(chunk m + m^2) memory; no pass over K.

The bounds as functions of the eigenvalues (:func:`bounds_from_lower_eigenvalues`, re-exported
here) are the pure maths of :mod:`~diversity_core.approx._band`; this module draws the sketches.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np
import scipy.sparse as sp

from .._deprecation import UNSET, renamed_argument
from .._orders import check_q
from .._progress import ProgressCallback, report
from .._validation import check_option, check_random_state, check_scalar, check_weights
from ..blocked import vendi_2_exact
from ..entropy import default_q_grid
from ..exceptions import DiversityInputError
from ..kernels import DEFAULT_KERNEL, get_kernel
from ..sources import RowSource, as_source
from ._band import _EIG_TOL, _lower_eigenvalue_bounds, bounds_from_lower_eigenvalues
from ._results import VendiBounds
from .sketches import _RCOND, LANDMARKS, _pooled_nystrom, _sketch_eigenvalues

__all__ = ["nystrom_bounds", "bounds_from_lower_eigenvalues"]


def nystrom_bounds(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    m: int = 2000,
    q=None,
    weights=None,
    landmarks: str = "rpcholesky",
    pool: Optional[int] = None,
    replicates: int = 1,
    exact_vs2: bool = False,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    qs=UNSET,
    **kernel_params,
) -> VendiBounds:
    r"""Guaranteed bounds on VS_q for every order from Nystrom sketches (Loewner order), at any n.

    .. math:: \tilde\rho \preceq \rho \;\Rightarrow\; \mu_i \le \lambda_i, \qquad
              \mathrm{VS}_q \in \big[\mathrm{VS}_q(\mu + r e_1),\ \mathrm{VS}_q(\max(\mu, c))\big]

    Parameters
    ----------
    X : array-like of shape (n, d), sparse matrix, RowSource or path
        Items (read into memory).
    kernel : str or Kernel, default "cosine"
        The default of every function that takes a kernel (:data:`~diversity_core.kernels.DEFAULT_KERNEL`),
        so a bound or estimate is of the value the exact function gives without naming a kernel.
        Any unit-diagonal kernel with features to sketch (rbf, laplacian, tanimoto, cosine, ...).
    m : int, default 2000
        Landmarks per sketch (at most n). The band narrows as the missing trace r shrinks.
    q : float, 'inf' or sequence of orders, optional
        The orders to bound. Default :func:`~diversity_core.vendi.default_q_grid`.
    weights : array-like of shape (n,), optional
    landmarks : {"rpcholesky", "greedy", "uniform"}, default "rpcholesky"
        How landmarks are chosen (any choice gives valid bounds; pivoted Cholesky captures
        the most trace).
    pool : int, optional
        Rows the landmarks are chosen among, default ``min(n, max(4000, 4 m))``.
    replicates : int, default 1
        Independent sketches; each gives valid bounds, and their intersection is returned.
    exact_vs2 : bool, default False
        Also compute the exact VS_2 by a blocked pass over K (O(n^2 d), the cost of
        :func:`~diversity_core.blocked.vendi_2_exact`) and intersect with its bounds; VS_2 is
        then exact.
    rng : int or Generator, optional
    progress : callable, optional
        ``progress(done, total, message)``.
    qs : sequence of orders, optional
        Deprecated name of ``q`` (a :class:`DeprecationWarning`).
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    VendiBounds
        ``top_eigenvalues`` are the sketch's eigenvalues, lower bounds on the top of the
        spectrum (``settings["method"] == "nystrom"``); ``residual_mass`` is r.

    Raises
    ------
    DiversityInputError
        Bad data or options, or a precomputed kernel (no features to sketch).

    Notes
    -----
    The bounds hold with certainty up to the stated round-off (1e-9 absolute on each sketch
    eigenvalue, 1e-10 relative on the result), unlike a Nystrom *estimate*, whose bias has no
    guarantee. They are loose for q < 1 unless r is tiny (the unseen mass may be spread over
    all n - m remaining eigenvalues) and tighten with m at q >= 1. Compare
    :func:`~diversity_core.approx.vendi_bounds`: exact top eigenvalues by Lanczos (tighter,
    but O(n^2 d) per Lanczos product, far too slow at n = 100,000 on a laptop). Cost per
    replicate: O(pool m^2) for the landmarks, O(n m d + n m^2) for the sketch's spectrum.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> b = nystrom_bounds(X, kernel="rbf", sigma=1.0, m=100, q=[1.0, 2.0], rng=0)
    >>> lo, hi = b.interval(1.0)
    >>> bool(1.0 <= lo <= hi <= 300)
    True
    """
    q = renamed_argument(q, qs, new="q", old="qs")
    start = time.perf_counter()
    kern = get_kernel(kernel, **kernel_params)
    if kern.name == "precomputed":
        raise DiversityInputError(
            "nystrom_bounds sketches the items' features; a precomputed K has none here. "
            "Use vendi_bounds (Lanczos on K)."
        )
    check_option(landmarks, LANDMARKS, "landmarks")
    replicates = check_scalar(replicates, "replicates", int, min_val=1)
    qs = default_q_grid() if q is None else np.sort(check_q(q).ravel())
    generator = check_random_state(rng)
    source = as_source(X)
    if isinstance(source, RowSource):
        X = source.read()
    X = kern.validate(X)
    if not sp.issparse(X) and X.dtype != np.float64:
        # the guarantee needs K_nys below K to round-off: float32 kernel entries, amplified by
        # W^{-1/2}, would not be (the sketch's data cost is n d, small beside its n m)
        X = X.astype(np.float64)
    n, d = X.shape
    p = check_weights(weights, n)
    kern = kern.resolve(X, p)  # the weighted bandwidth of compute_spectrum: bounds of its value
    size = min(n, check_scalar(m, "m", int, min_val=1))
    pool = min(n, check_scalar(pool, "pool", int, min_val=1) if pool is not None else max(4000, 4 * size))
    steps = replicates + int(exact_vs2)
    purity = None
    if exact_vs2:  # first, so that every replicate's bounds use it
        report(progress, 0, steps, "exact VS_2 (a blocked pass over K)")
        purity = vendi_2_exact(X, kernel=kern, weights=p, method="blocked").purity
    low = np.ones(qs.size)
    high = np.full(qs.size, float(n))
    best_mu, best_r = np.zeros(0), 1.0
    for rep in range(replicates):
        report(progress, rep + int(exact_vs2), steps, f"Nystrom sketch {rep + 1} of {replicates} (m = {size})")
        child = np.random.default_rng(generator.integers(2**63))
        sketch = _pooled_nystrom(kern, X, n, size, pool, landmarks, child, rcond=_RCOND)
        mu = _sketch_eigenvalues(sketch, X, p, n, d)
        lo, hi = _lower_eigenvalue_bounds(mu, n, qs, purity, _EIG_TOL)
        low, high = np.maximum(low, lo), np.minimum(high, hi)
        r = 1.0 - float(mu.sum())
        if r < best_r:
            best_mu, best_r = mu, r
    report(progress, steps, steps, "done")
    high = np.maximum(high, low)
    top = np.maximum(best_mu - _EIG_TOL, 0.0)
    for a in (low, high, top, qs):
        a.setflags(write=False)
    settings = {"method": "nystrom", "m": size, "landmarks": landmarks, "pool": pool, "replicates": replicates,
                "captured_trace": float(1.0 - best_r), "exact_vs2": bool(exact_vs2),
                "seconds": time.perf_counter() - start}
    return VendiBounds(qs=qs, low=low, high=high, k=int(top.size), n=n, exact_orders=("2",) if exact_vs2 else (),
                       top_eigenvalues=top, residual_mass=float(max(0.0, best_r)), tolerance=_EIG_TOL,
                       kernel=kern.to_dict(), settings=settings, purity=purity)
