"""Public magnitude functions of one set: Mag at one scale, the magnitude function, t_conv."""

from __future__ import annotations

import math
import warnings
from typing import Optional, Sequence

import numpy as np

from .._progress import ProgressCallback
from .._validation import check_option, check_positive, check_scalar
from ..exceptions import ConvergenceWarning, DiversityInputError, NumericalError
from ._free import _free_curve, _free_tconv_of, _prepare_any
from ._metric import _prepare, _Space
from ._results import MagnitudeDimension, MagnitudeFunction, MagnitudeResult
from ._scales import _check_ts, _curve, _tconv, _weighting_at
from ._solvers import ACCURACY_RTOL

__all__ = ["magnitude_weights", "magnitude_at", "magnitude_function", "convergence_scale", "magnitude_dimension"]

#: Grids of ``scales=``: evenly spaced from 0, or 0 and log-spaced scales from t_end / n_scales.
SCALES = ("linear", "log")

#: magnitude_weights iterates until max |1 - Z w| <= this (Mag alone needs far less).
_WEIGHTS_RTOL = 1e-12


def _check_fraction(fraction) -> float:
    """``fraction`` in (0, 1)."""
    return check_scalar(fraction, "fraction", float, min_val=0, max_val=1, include_boundaries="neither")


def _check_n_scales(n_scales) -> int:
    """``n_scales``: a whole number from 2 to 10000 (each scale is one n x n solve)."""
    return check_scalar(n_scales, "n_scales", int, min_val=2, max_val=10_000)


def _check_scales(scales) -> str:
    """``scales``: one of :data:`SCALES`."""
    return check_option(scales, SCALES, "scales")


def _check_t_cut(t_cut, t_max, *, ts=None) -> Optional[float]:
    """The end of the interval from ``t_cut`` or its deprecated alias ``t_max`` (validated)."""
    name = "t_cut"
    if t_max is not None:
        warnings.warn(
            "t_max= is deprecated; use t_cut= (the one name for the end of the interval [0, t_cut]).",
            DeprecationWarning,
            stacklevel=3,
        )
        if t_cut is not None:
            raise DiversityInputError("give t_cut or its deprecated alias t_max, not both.")
        t_cut, name = t_max, "t_max"
    if ts is not None and t_cut is not None:
        raise DiversityInputError(f"give either ts (explicit scales) or {name} (the grid end), not both.")
    return None if t_cut is None else check_positive(t_cut, name)


def _warn_flags(func: MagnitudeFunction) -> None:
    """ConvergenceWarning naming the singular and ill-conditioned scales of a curve, if any."""
    singular, ill = func.singular, func.ill_conditioned
    if singular.any() or ill.any():
        bad = func.ts[singular | ill]
        warnings.warn(
            f"Z_t is numerically singular at {int(singular.sum())} and ill-conditioned at {int(ill.sum())} "
            f"of {func.ts.size} scales (t = {', '.join(f'{v:.3g}' for v in bad[:5])}"
            f"{', ...' if bad.size > 5 else ''}); those values are flagged in the result (singular ones are "
            "NaN). Near-duplicate points, very small scales, or a metric that is not positive definite "
            "(cosine) cause this.",
            ConvergenceWarning,
            stacklevel=3,
        )


def _function_of_space(space: _Space, ts: Optional[np.ndarray], *, n_scales: int, t_cut: Optional[float],
                       fraction: float, progress: Optional[ProgressCallback], offset: int = 0,
                       total: Optional[int] = None, t_conv: Optional[float] = None, scales: str = "linear",
                       derivatives: bool = False, positive: bool = False) -> MagnitudeFunction:
    """The magnitude function of a prepared space (consumes ``space.D``; no warnings)."""
    if space.free is not None:
        if derivatives or positive:
            raise DiversityInputError(
                f"derivatives and positive magnitude need the dense path; the {space.n} x {space.n} matrices "
                "exceed the memory budget. Raise the budget (diversity_core.set_config) or use a subset."
            )
        c = _free_curve(space.free, ts, t_cut=t_cut, n_scales=n_scales, fraction=fraction, progress=progress,
                        offset=offset, total=total, t_conv=t_conv, scales=scales)
        return MagnitudeFunction(c.ts, c.values, c.errors, c.ill_conditioned, c.singular, c.methods, c.t_conv,
                                 fraction, space.n_points, c.n_distinct, space.n_merged, space.metric,
                                 method="matrix-free")
    D, space.D = space.D, None
    c = _curve(D, ts, t_cut=t_cut, n_scales=n_scales, fraction=fraction, progress=progress, offset=offset,
               total=total, t_conv=t_conv, scales=scales, derivatives=derivatives, positive=positive)
    return MagnitudeFunction(c.ts, c.values, c.errors, c.ill_conditioned, c.singular, c.methods, c.t_conv,
                             fraction, space.n_points, c.n_distinct, space.n_merged, space.metric,
                             positive_values=c.positive, derivatives=c.derivatives)


def _tconv_of_space(space: _Space, fraction: float) -> float:
    """t_conv of a prepared space (leaves ``space.D`` intact)."""
    if space.free is not None:
        return _free_tconv_of(space.free, fraction)
    return _tconv(space.D, fraction)


def magnitude_weights(X_or_D, t: float, *, metric: str = "euclidean", p: Optional[float] = None) -> MagnitudeResult:
    """Magnitude at one scale together with its weighting vector.

    .. math::

        Z_t = \\exp(-t D), \\qquad Z_t w = \\mathbf 1, \\qquad \\mathrm{Mag}(t) = \\mathbf 1^\\top w
        = \\sum_{ij} (Z_t^{-1})_{ij}

    (Eq. (1) of [1]_ applied to the scaled space :math:`tX`, Definition 3.2). :math:`D` holds the
    distances between the distinct points, :math:`w` is the weighting (Leinster's term [2]_).

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
        Points (rows), or a distance matrix (square, symmetric, finite, zero diagonal, >= 0).
    t : float
        Scale, ``t >= 0``; ``Mag(0) = 1`` by convention (the one-point property).
    metric : str, default "euclidean"
        One of :data:`METRICS`: "euclidean", "cityblock", "cosine", "tanimoto" (or its alias
        "jaccard": 1 - Tanimoto similarity of non-negative fingerprints), any other distance of
        ``scipy.spatial.distance`` ("minkowski", "chebyshev", "canberra", ...), or "precomputed".
    p : float, optional
        Exponent of ``metric="minkowski"`` (default 2; ``p >= 1``, ``inf`` allowed); only with it.

    Returns
    -------
    MagnitudeResult
        ``value``, the ``weighting`` w (one entry per distinct point) and an error estimate.

    Raises
    ------
    DiversityInputError
        Bad input or metric, or ``t < 0``.
    NumericalError
        :math:`Z_t` is numerically singular (its LU factorisation has a zero pivot or a
        reciprocal condition number below eps): tiny ``t``, near-duplicate points, or a
        distance that is far from positive definite. An invertible :math:`Z_t` that is not
        positive definite is solved by LU (``method="lu"``).
    MemoryBudgetError
        The n x n matrices (about 24 n^2 bytes) exceed the memory budget.

    Warns
    -----
    DuplicatesMergedWarning
        Exact duplicates (or points at distance 0) were merged.

    Notes
    -----
    Cost: the distance matrix, then one solve, O(n^3) at worst (a Cholesky factorisation) and
    O(k n^2) at well-conditioned scales (k conjugate-gradient steps). ``error`` estimates the
    absolute error of ``value``; ``ill_conditioned`` says it exceeds ``ACCURACY_RTOL * value``.

    References
    ----------
    .. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
       the Diversity of Latent Representations", NeurIPS 2024.
    .. [2] T. Leinster, "The magnitude of metric spaces", Documenta Mathematica 18 (2013).

    Examples
    --------
    Two points at distance 1: Mag(t) = 2 / (1 + exp(-t)).

    >>> r = magnitude_weights([[0.0], [1.0]], 2.0)
    >>> abs(r.value - 2 / (1 + math.exp(-2.0))) < 1e-12, r.weighting.shape
    (True, (2,))
    """
    t = check_positive(t, "t", allow_zero=True)
    space = _prepare(X_or_D, metric, p=p)
    n = space.n
    common = dict(t=t, indices=space.indices, n_points=space.n_points, n_distinct=n,
                  n_merged=space.n_merged, metric=metric)
    if t == 0.0 or n == 1:
        w = np.full(n, 1.0 / n) if t == 0.0 else np.ones(1)
        return MagnitudeResult(value=1.0, weighting=w, error=0.0, ill_conditioned=False, singular=False,
                               method="exact", **common)
    res = _weighting_at(space.D, t, _WEIGHTS_RTOL)
    if res.singular or res.w is None:
        if math.isfinite(res.rcond):
            why = f"LAPACK estimates its reciprocal condition number at {res.rcond:.2g}, below eps"
        else:
            why = "it is not positive definite and too large for the LU fallback"
        raise NumericalError(
            f"Z_t = exp(-t D) is numerically singular at t = {t:g} ({why}). Use a larger t, merge "
            "near-duplicate points, or use a positive definite metric (euclidean or cityblock)."
        )
    rel = res.error / abs(res.value) if res.value else math.inf
    return MagnitudeResult(value=res.value, weighting=res.w, error=res.error,
                           ill_conditioned=bool(rel > ACCURACY_RTOL), singular=False, method=res.method, **common)


def magnitude_at(X_or_D, t: float, *, metric: str = "euclidean", p: Optional[float] = None) -> float:
    """Magnitude of the points (or distances) at scale ``t``: the sum of the entries of Z_t^{-1}.

    .. math::

        \\mathrm{Mag}(t) = \\sum_{ij} (Z_t^{-1})_{ij}, \\qquad (Z_t)_{ij} = e^{-t\\, d_{ij}}

    (Eq. (1) and Definition 3.2 of [1]_), over the distinct points; ``Mag(0) = 1``. See
    :func:`magnitude_weights` for the weighting and an error estimate, and for parameters,
    errors and costs. (Formerly ``magnitude``, a name that shadowed the module.)

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    t : float
        Scale ``t >= 0``.
    metric : str, default "euclidean"
        One of :data:`METRICS`: "euclidean", "cityblock", "cosine", "tanimoto" (or its alias
        "jaccard": 1 - Tanimoto similarity of non-negative fingerprints), any other distance of
        ``scipy.spatial.distance`` ("minkowski", "chebyshev", "canberra", ...), or "precomputed".
    p : float, optional
        Exponent of ``metric="minkowski"`` (default 2; ``p >= 1``, ``inf`` allowed); only with it.

    Returns
    -------
    float

    Raises
    ------
    DiversityInputError, NumericalError, MemoryBudgetError
        As :func:`magnitude_weights`.

    Warns
    -----
    DuplicatesMergedWarning
        Duplicates were merged. ``ConvergenceWarning`` when the value is ill-conditioned.

    References
    ----------
    .. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
       the Diversity of Latent Representations", NeurIPS 2024.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [3.0]])   # gaps 1 and 2 on a line
    >>> v = magnitude_at(X, 0.7)
    >>> bool(abs(v - (1 + math.tanh(0.35) + math.tanh(0.7))) < 1e-12)
    True
    """
    res = magnitude_weights(X_or_D, t, metric=metric, p=p)
    if res.ill_conditioned:
        warnings.warn(
            f"Mag({t:g}) = {res.value:.12g} has an estimated relative error of {res.error / abs(res.value):.2g} "
            f"(above {ACCURACY_RTOL:g}): Z_t is ill-conditioned (near-duplicates or a very small t).",
            ConvergenceWarning,
            stacklevel=2,
        )
    return res.value


def magnitude_function(
    X_or_D,
    ts: Optional[Sequence[float]] = None,
    *,
    n_scales: int = 30,
    t_cut: Optional[float] = None,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
    t_max: Optional[float] = None,
    p: Optional[float] = None,
    scales: str = "linear",
    derivatives: bool = False,
    positive: bool = False,
    method: str = "auto",
) -> MagnitudeFunction:
    """The magnitude function t -> Mag(t) on a grid of scales (Definition 3.2 of [1]_).

    .. math::

        \\mathrm{Mag}(t) = \\mathbf 1^\\top Z_t^{-1} \\mathbf 1, \\quad Z_t = e^{-tD}, \\quad
        \\mathrm{Mag}(0) := 1, \\quad \\lim_{t\\to\\infty} \\mathrm{Mag}(t) = n

    Default grid as in [1]_: ``n_scales`` evenly spaced scales on ``[0, t_conv]`` (see
    :func:`convergence_scale`), or on ``[0, t_cut]`` when ``t_cut`` is given.

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    ts : sequence of float, optional
        Explicit scales ``t >= 0`` (any order; duplicates allowed). Excludes ``t_cut``.
    n_scales : int, default 30
        Number of grid scales (including t = 0) when ``ts`` is not given.
    t_cut : float, optional
        Upper end of the default grid instead of ``t_conv``.
    fraction : float, default 0.95
        ``t_conv`` solves ``Mag(t_conv) = fraction * n`` (only used for the default grid).
    metric : str, default "euclidean"
        One of :data:`METRICS`: "euclidean", "cityblock", "cosine", "tanimoto" (or its alias
        "jaccard": 1 - Tanimoto similarity of non-negative fingerprints), any other distance of
        ``scipy.spatial.distance`` ("minkowski", "chebyshev", "canberra", ...), or "precomputed".
    p : float, optional
        Exponent of ``metric="minkowski"`` (default 2; ``p >= 1``, ``inf`` allowed); only with it.
    progress : callable, optional
        ``progress(done, total, message)``: the convergence scale, then "scale i of m".
    t_max : float, optional
        Deprecated alias of ``t_cut`` (DeprecationWarning).
    p : float, optional
        Exponent of ``metric="minkowski"``.
    scales : {"linear", "log"}, default "linear"
        The default grid: ``n_scales`` evenly spaced scales from 0, or 0 followed by
        ``n_scales - 1`` log-spaced scales from ``t_end / n_scales`` to ``t_end`` (magnipy's
        ``log_scale=True`` grid). Ignored with ``ts``.
    derivatives : bool, default False
        Also compute the exact derivative :math:`\\mathrm{Mag}'(t) = w^\\top (D \\circ Z_t) w`
        at every scale (``derivatives`` and ``dimension_profile`` of the result); the weighting
        is then solved to a residual of 1e-11 and each :math:`Z_t` formed from D.
    positive : bool, default False
        Also compute the positive magnitude :math:`\\sum_i \\max(w_i, 0)` at every scale
        (``positive_values``; magnipy's ``positive_magnitude=True``), from the weighting solved
        to a residual of 1e-11 (Mag alone needs a less accurate weighting).
    method : {"auto", "dense", "matrix-free"}, default "auto"
        "dense" holds D, Z_t and a factor (about 24 n^2 bytes); "matrix-free" never holds an
        n x n matrix: conjugate gradients with Z_t products computed from the points block by
        block (Nyström-preconditioned at small scales), error estimates from the CG-Lanczos
        Ritz values, ``method="matrix-free"`` on the result. "auto" is dense while those
        matrices fit the memory budget (:func:`diversity_core.set_config`).

    Returns
    -------
    MagnitudeFunction
        Values with per-scale error estimates and flags; ``t_conv`` when it was computed.

    Raises
    ------
    DiversityInputError
        Bad input, metric, scales, ``n_scales < 2``, or both ``ts`` and ``t_cut``.
    NumericalError
        ``t_conv`` could not be found.
    MemoryBudgetError
        The n x n matrices (about 24 n^2 bytes) exceed the memory budget.

    Warns
    -----
    DuplicatesMergedWarning
        Duplicates were merged.
    ConvergenceWarning
        Some scales are numerically singular (NaN) or ill-conditioned (flagged).

    Notes
    -----
    Cost: one O(n^2 d) distance matrix; ``t_conv`` by Newton steps near ``t_conv``, where
    :math:`Z_t` is well-conditioned and CG needs a few O(n^2) products; then one solve per
    scale: CG at the large scales, float32 Cholesky factorisations (O(n^3 / 3), about half the
    float64 cost) refined to float64 accuracy at the small ones. On an evenly spaced grid
    :math:`Z_{t_k} = Z_{t_1}^{\\circ k}` costs one elementwise product per scale instead of an
    ``exp``. Memory: about 20 n^2 bytes (8 GB at n = 20000), 24 n^2 when a float64 factor is
    needed.

    References
    ----------
    .. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
       the Diversity of Latent Representations", NeurIPS 2024.

    Examples
    --------
    >>> f = magnitude_function([[0.0], [1.0]], ts=[0.0, 1.0])
    >>> float(f.values[0]), bool(abs(f.values[1] - 2 / (1 + math.exp(-1.0))) < 1e-12)
    (1.0, True)
    """
    grid = _check_ts(ts) if ts is not None else None
    t_cut = _check_t_cut(t_cut, t_max, ts=grid)
    n_scales = _check_n_scales(n_scales)
    fraction = _check_fraction(fraction)
    scales = _check_scales(scales)
    space = _prepare_any(X_or_D, metric, p=p, method=method)
    if grid is None and t_cut is None and space.n > 1 and space.n * fraction <= 1.0:
        raise DiversityInputError(
            f"the default grid ends at t_conv, which needs fraction * n_distinct > 1; got {fraction:g} * "
            f"{space.n}. Give ts or t_cut."
        )
    func = _function_of_space(space, grid, n_scales=n_scales, t_cut=t_cut, fraction=fraction, progress=progress,
                              scales=scales, derivatives=bool(derivatives), positive=bool(positive))
    _warn_flags(func)
    return func


def convergence_scale(X_or_D, *, fraction: float = 0.95, metric: str = "euclidean",
                      p: Optional[float] = None, method: str = "auto") -> float:
    """The convergence scale t_conv with Mag(t_conv) = fraction * n (Definition 3.5 of [1]_).

    .. math::

        \\mathrm{Mag}(t_{conv}) = n - \\varepsilon, \\qquad \\varepsilon = (1 - \\mathrm{fraction})\\, n,

    with :math:`n` the number of distinct points. Found by a safeguarded Newton iteration on
    :math:`g(t) = \\log(n - \\mathrm{Mag}(t)) - \\log\\varepsilon` with the exact derivative

    .. math::

        \\mathrm{Mag}'(t) = w^\\top (D \\circ Z_t)\\, w, \\qquad Z_t w = \\mathbf 1 .

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    fraction : float, default 0.95
        In (0, 1), with ``fraction * n > 1``.
    metric : str, default "euclidean"
        One of :data:`METRICS`: "euclidean", "cityblock", "cosine", "tanimoto" (or its alias
        "jaccard": 1 - Tanimoto similarity of non-negative fingerprints), any other distance of
        ``scipy.spatial.distance`` ("minkowski", "chebyshev", "canberra", ...), or "precomputed".
    p : float, optional
        Exponent of ``metric="minkowski"`` (default 2; ``p >= 1``, ``inf`` allowed); only with it.

    method : {"auto", "dense", "matrix-free"}, default "auto"
        As :func:`magnitude_function`.

    Returns
    -------
    float

    Raises
    ------
    DiversityInputError
        Bad input, or ``fraction * n_distinct <= 1``.
    NumericalError
        No convergence (a magnitude function that does not increase to ``n``).
    MemoryBudgetError
        The n x n matrices exceed the memory budget.

    Notes
    -----
    The iteration starts at a mean-field estimate from each point's 24 nearest neighbours
    (exact for homogeneous spaces) and only moves up by at most a factor 4 per step, so
    :math:`Z_t` is never formed at a scale far above ``t_conv`` (where ``exp(-tD)`` turns
    subnormal and factorisations slow down). Near ``t_conv`` :math:`Z_t` is well-conditioned
    and each step costs a few O(n^2) CG products. It stops when the Newton step is below
    1e-12 relative. ``magnipy`` uses TOMS 748 with ``rtol=1e-5`` from a probe at t = 10.

    References
    ----------
    .. [1] K. Limbeck, R. Andreeva, R. Sarkar, B. Rieck, "Metric Space Magnitude for Evaluating
       the Diversity of Latent Representations", NeurIPS 2024.

    Examples
    --------
    Two points at distance d: Mag(t) = 2 / (1 + exp(-t d)) = 1.9 at t = ln(19) / d.

    >>> abs(convergence_scale([[0.0], [2.0]]) - math.log(19) / 2) < 1e-10
    True
    """
    fraction = _check_fraction(fraction)
    space = _prepare_any(X_or_D, metric, p=p, method=method)
    return _tconv_of_space(space, fraction)


def magnitude_dimension(
    X_or_D,
    ts: Optional[Sequence[float]] = None,
    *,
    n_scales: int = 30,
    t_cut: Optional[float] = None,
    scales: str = "log",
    fraction: float = 0.95,
    metric: str = "euclidean",
    p: Optional[float] = None,
    progress: Optional[ProgressCallback] = None,
) -> MagnitudeDimension:
    """The magnitude dimension profile and the magnitude dimension.

    .. math::

        \\dim_{\\mathrm{Mag}}(t) = \\frac{d \\log \\mathrm{Mag}(t)}{d \\log t}
        = \\frac{t\\, \\mathrm{Mag}'(t)}{\\mathrm{Mag}(t)}, \\qquad
        \\mathrm{Mag}'(t) = w^\\top (D \\circ Z_t)\\, w, \\qquad Z_t w = \\mathbf 1,

        \\dim_{\\mathrm{Mag}} = \\max_t \\dim_{\\mathrm{Mag}}(t)

    (the instantaneous growth rate of magnitude, Meckes [2]_; the profile and its maximum as
    in [1]_). :math:`\\mathrm{Mag}'` follows from differentiating :math:`Z_t w = \\mathbf 1`:
    :math:`Z_t w' = (D \\circ Z_t) w`, so :math:`\\mathbf 1^\\top w' = w^\\top (D \\circ Z_t) w`
    (:math:`Z_t` symmetric).

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    ts : sequence of float, optional
        Explicit scales (any order). Excludes ``t_cut``.
    n_scales : int, default 30
    t_cut : float, optional
        End of the default grid instead of ``t_conv``.
    scales : {"log", "linear"}, default "log"
        The default grid (see :func:`magnitude_function`).
    fraction : float, default 0.95
    metric : str, default "euclidean"
        As :func:`magnitude_function`.
    p : float, optional
        Exponent of ``metric="minkowski"``.
    progress : callable, optional

    Returns
    -------
    MagnitudeDimension
        ``profile`` at every scale (0 at t = 0), ``dimension`` (its largest value on the grid),
        ``t_dimension`` and the ``function`` with its ``derivatives``.

    Raises
    ------
    DiversityInputError, NumericalError, MemoryBudgetError
        As :func:`magnitude_function`.

    Notes
    -----
    Cost: that of :func:`magnitude_function` plus one O(n^2) pass per scale for the
    derivative. magnipy estimates the slope by finite differences instead: secants between
    neighbouring grid points placed at their log-midpoints (default), or central differences
    with a step ``h`` in log t (``exact=True``); its magnitude dimension is the maximum of that
    profile, as here. The exact derivative has no step error (central differences carry
    ``O(h^2)``), and the profile is reported at the grid scales themselves.

    References
    ----------
    .. [1] R. Andreeva, K. Limbeck, B. Rieck, R. Sarkar, "Metric Space Magnitude and
       Generalisation in Neural Networks", TAG-ML workshop, ICML 2023.
    .. [2] M. W. Meckes, "Magnitude, diversity, capacities, and dimensions of metric spaces",
       Potential Analysis 42 (2015).

    Examples
    --------
    Two points at distance 1: Mag = 2 / (1 + e^{-t}), slope t e^{-t} / (1 + e^{-t}).

    >>> r = magnitude_dimension([[0.0], [1.0]], ts=[1.0])
    >>> bool(abs(r.profile[0] - math.exp(-1) / (1 + math.exp(-1))) < 1e-10)
    True
    """
    grid = _check_ts(ts) if ts is not None else None
    t_cut = _check_t_cut(t_cut, None, ts=grid)
    n_scales = _check_n_scales(n_scales)
    fraction = _check_fraction(fraction)
    scales = _check_scales(scales)
    space = _prepare(X_or_D, metric, p=p)
    if grid is None and t_cut is None and space.n > 1 and space.n * fraction <= 1.0:
        raise DiversityInputError(
            f"the default grid ends at t_conv, which needs fraction * n_distinct > 1; got {fraction:g} * "
            f"{space.n}. Give ts or t_cut."
        )
    func = _function_of_space(space, grid, n_scales=n_scales, t_cut=t_cut, fraction=fraction, progress=progress,
                              scales=scales, derivatives=True)
    _warn_flags(func)
    profile = np.array(func.dimension_profile)
    finite = np.isfinite(profile)
    if finite.any():
        k = int(np.argmax(np.where(finite, profile, -np.inf)))
        dimension, t_dim = float(profile[k]), float(func.ts[k])
    else:
        dimension, t_dim = math.nan, math.nan
    return MagnitudeDimension(ts=np.array(func.ts), profile=profile, dimension=dimension, t_dimension=t_dim,
                              function=func)
