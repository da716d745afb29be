"""MagArea, MagDiff and comparisons of several sets on a common interval [0, t_cut]."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from .._config import fits_memory
from .._progress import ProgressCallback, report
from .._validation import check_option, check_positive
from ..exceptions import DiversityInputError, NumericalError
from ._api import (
    _check_fraction,
    _check_n_scales,
    _function_of_space,
    _tconv_of_space,
    _warn_flags,
    magnitude_function,
)
from ._free import _prepare_any
from ._metric import _DENSE_ARRAYS
from ._results import MagAreaResult, MagDiffMatrix, MagDiffResult, MagnitudeComparison, MagnitudeFunction
from ._scales import _area, _check_ts

__all__ = ["mag_area", "mag_diff", "compare_magnitude", "mag_diff_matrix"]


def _check_curve(func: MagnitudeFunction, name: str) -> None:
    """Refuse to integrate a curve with numerically singular (NaN) scales."""
    if func.singular.any():
        bad = func.ts[func.singular]
        raise NumericalError(
            f"the magnitude function of {name} is numerically singular at t = "
            f"{', '.join(f'{v:.3g}' for v in bad[:5])}; its area would be unreliable. Merge near-duplicate "
            "points, use a positive definite metric (euclidean, cityblock), or integrate over larger scales."
        )


def mag_area(
    X_or_D,
    *,
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
    p: Optional[float] = None,
    method: str = "auto",
) -> MagAreaResult:
    """MagArea: the area under the magnitude function on [0, t_cut] (Definition 3.3 of [1]_).

    .. math::

        \\mathrm{MagArea} = \\int_0^{t_{cut}} \\mathrm{Mag}(t)\\, dt
        \\approx \\sum_{k=1}^{m-1} \\frac{h}{2} (\\mathrm{Mag}(t_{k-1}) + \\mathrm{Mag}(t_k)),
        \\qquad t_k = k h, \\; h = \\frac{t_{cut}}{m - 1}

    Parameters
    ----------
    X_or_D : array-like of shape (n, d), or (n, n) with ``metric="precomputed"``
    t_cut : float, optional
        Upper end of the interval; default: this set's own ``t_conv``. To compare sets, give them
        the same ``t_cut`` (see :func:`compare_magnitude`).
    n_scales : int, default 30
        Evenly spaced scales on ``[0, t_cut]`` (the trapezoid nodes).
    fraction : float, default 0.95
        For ``t_conv`` when ``t_cut`` is not given.
    metric : str, default "euclidean"
        A name of :data:`METRICS` (see :func:`magnitude_function`).
    p : float, optional
        Exponent of ``metric="minkowski"``.
    progress : callable, optional
    method : {"auto", "dense", "matrix-free"}, default "auto"
        As :func:`magnitude_function`.

    Returns
    -------
    MagAreaResult
        ``area`` (the raw integral) and ``area_scaled = area / t_cut``.

    Raises
    ------
    DiversityInputError
        Bad input or parameters.
    NumericalError
        The curve is numerically singular at some scale of the grid.

    Notes
    -----
    Cost: that of :func:`magnitude_function` with ``n_scales`` scales. ``magnipy``'s
    ``Magnipy(X).MagArea()`` is the raw integral with its own t_conv and 30 scales.

    Examples
    --------
    Two points at distance 1 integrated over [0, 1] with many nodes: 2 ln((1 + e) / 2).

    >>> r = mag_area([[0.0], [1.0]], t_cut=1.0, n_scales=2001)
    >>> abs(r.area - 2 * math.log((1 + math.e) / 2)) < 1e-6
    True
    """
    n_scales = _check_n_scales(n_scales)
    if t_cut is not None:
        t_cut = check_positive(t_cut, "t_cut")
    func = magnitude_function(X_or_D, None, n_scales=n_scales, t_cut=t_cut, fraction=fraction, metric=metric,
                              progress=progress, p=p, method=method)
    _check_curve(func, "X")
    end = float(func.ts[-1])
    area = _area(func.ts, func.values, end)
    return MagAreaResult(area=area, area_scaled=area / end, t_cut=end, function=func)


def mag_diff(
    X,
    Y,
    *,
    reference: Optional[str] = "Y",
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
    p: Optional[float] = None,
    ts: Optional[Sequence[float]] = None,
    method: str = "auto",
) -> MagDiffResult:
    """MagDiff: the integral of Mag_X - Mag_Y over [0, t_cut] (Definition 3.4 of [1]_).

    .. math::

        \\mathrm{MagDiff}(X, Y) = \\int_0^{t_{cut}} (\\mathrm{Mag}_X(t) - \\mathrm{Mag}_Y(t))\\, dt,
        \\qquad t_{cut} = t_{conv}(\\text{reference})

    Both curves are evaluated on the same ``n_scales`` evenly spaced scales (or on ``ts``),
    so the trapezoid rule needs no interpolation: curves whose own grids differ (each set's
    ``[0, t_conv]``) are re-evaluated on the common grid, never interpolated. Positive means X is
    more diverse than Y over the interval. ``absolute`` is the area between the curves,
    :math:`\\int |\\mathrm{Mag}_X - \\mathrm{Mag}_Y|` (magnipy's default).

    Parameters
    ----------
    X, Y : array-like of shape (n_x, d) and (n_y, d), or distance matrices with "precomputed"
        The candidate X and (by default) the reference Y; same distance, same feature space.
    reference : {"Y", "X"} or None, default "Y"
        Whose ``t_conv`` is ``t_cut``, and whose area ``relative`` divides by. ``None``: the median
        (mean) of both ``t_conv`` (the reference-free convention) and no ``relative``.
    t_cut : float, optional
        Explicit upper end (overrides the ``reference`` rule; ``relative`` still uses its area).
    n_scales : int, default 30
    fraction : float, default 0.95
    metric : str, default "euclidean"
        A name of :data:`METRICS` (see :func:`magnitude_function`).
    progress : callable, optional
    p : float, optional
        Exponent of ``metric="minkowski"``.
    ts : sequence of float, optional
        An explicit common grid (e.g. the union of two curves' grids); the integrals run over
        ``[min ts, max ts]`` and ``t_cut = max ts``. Excludes ``t_cut``.
    method : {"auto", "dense", "matrix-free"}, default "auto"
        As :func:`magnitude_function`.

    Returns
    -------
    MagDiffResult
        ``value`` (raw integral), ``value_scaled`` (/ ``t_cut``), ``relative`` (/ reference area),
        ``absolute`` (area between the curves) and ``absolute_scaled``.

    Raises
    ------
    DiversityInputError
        Bad input or ``reference``.
    NumericalError
        A curve is numerically singular on the grid.

    Notes
    -----
    Cost: two :func:`convergence_scale` runs (none when ``t_cut`` is given) and two magnitude
    functions. ``magnipy``'s ``MagDiff`` integrates ``|Mag_X - Mag_Y|`` after
    interpolating both curves; this is the signed integral of the paper.

    Examples
    --------
    >>> r = mag_diff([[0.0], [1.0]], [[0.0], [1.0]], t_cut=2.0)
    >>> r.value
    0.0
    """
    if reference is not None:
        check_option(reference, ("X", "Y"), "reference")
    comp = compare_magnitude({"X": X, "Y": Y}, reference=reference, t_cut=t_cut, n_scales=n_scales,
                             fraction=fraction, metric=metric, progress=progress, p=p, ts=ts,
                             method=method)
    value = comp.areas["X"] - comp.areas["Y"]
    fx, fy = comp.functions["X"], comp.functions["Y"]
    absolute = _area(fx.ts, np.abs(fx.values - fy.values), comp.t_cut)
    rel = math.nan
    if reference is not None:
        ref_area = comp.areas[reference]
        rel = value / ref_area if ref_area else math.nan
    return MagDiffResult(
        value=value, value_scaled=value / comp.t_cut, relative=rel, t_cut=comp.t_cut, reference=reference,
        area_x=comp.areas["X"], area_y=comp.areas["Y"], t_conv_x=comp.t_conv["X"], t_conv_y=comp.t_conv["Y"],
        function_x=comp.functions["X"], function_y=comp.functions["Y"],
        absolute=absolute, absolute_scaled=absolute / comp.t_cut,
    )


def _sub_progress(progress: Optional[ProgressCallback], offset: int, total: int, label: str) -> Optional[Callable]:
    """A progress callback for one part of a larger task (offset into the total, labelled)."""
    if progress is None:
        return None

    def inner(done: int, _total: int, message: str) -> None:
        progress(offset + done, total, f"{label}: {message}")

    return inner


def compare_magnitude(
    sets: Mapping[str, Any],
    *,
    reference: Optional[str] = None,
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    progress: Optional[ProgressCallback] = None,
    p: Optional[float] = None,
    ts: Optional[Sequence[float]] = None,
    method: str = "auto",
    ids: Optional[Mapping[str, Sequence]] = None,
) -> MagnitudeComparison:
    """MagArea of several sets on a common interval, and MagDiff against a reference ([1]_, Sec. 3.4).

    .. math::

        t_{cut} = \\begin{cases} t_{conv}(\\text{reference}) & \\text{with a reference} \\\\
        \\operatorname{median}_i t_{conv}(X_i) & \\text{without} \\end{cases}, \\qquad
        \\mathrm{MagDiff}_i = \\int_0^{t_{cut}} (\\mathrm{Mag}_{X_i} - \\mathrm{Mag}_{\\text{ref}})\\, dt

    Every set's curve is evaluated on the same ``n_scales`` evenly spaced scales on
    ``[0, t_cut]``, so areas are comparable and differences are exact on the grid.

    Parameters
    ----------
    sets : mapping of str to array-like
        Named point sets (rows are points) or, with ``metric="precomputed"``, distance matrices.
    reference : str, optional
        Name of the reference set. Without one: reference-free (areas only, median rule).
    t_cut : float, optional
        Explicit common ``t_cut`` (skips the ``t_conv`` computations).
    n_scales : int, default 30
    fraction : float, default 0.95
    metric : str, default "euclidean"
        A name of :data:`METRICS` (see :func:`magnitude_function`).
    p : float, optional
        Exponent of ``metric="minkowski"``.
    progress : callable, optional
        ``progress(done, total, message)`` over all sets.
    p : float, optional
        Exponent of ``metric="minkowski"``.
    ts : sequence of float, optional
        An explicit common grid instead of ``n_scales`` scales on ``[0, t_cut]`` (rule
        ``"given ts"``, ``t_cut = max ts``). Excludes ``t_cut``.
    method : {"auto", "dense", "matrix-free"}, default "auto"
        As :func:`magnitude_function`.
    ids : mapping of str to sequence, optional
        The items' names of some sets (file names, ids; one per row): the warning about merged
        duplicates names those items rather than their row numbers.

    Returns
    -------
    MagnitudeComparison
        Roles (``reference``, ``candidates``), ``t_cut`` and its rule, each set's ``t_conv``,
        ``areas`` (raw) and ``areas_scaled`` (/ ``t_cut``), and for candidates ``mag_diff``,
        ``mag_diff_scaled``, ``mag_diff_relative`` (/ the reference's area) and
        ``mag_diff_absolute`` (the area between the curves).

    Raises
    ------
    DiversityInputError
        Empty ``sets``, a non-string name, an unknown ``reference``, bad data, ``ids`` of
        another set or of another length.
    NumericalError
        A curve is numerically singular on the common grid.

    Notes
    -----
    Cost: one :func:`convergence_scale` per set (none with ``t_cut``) and one magnitude
    function per set. Distance matrices are rebuilt for the second pass rather than all kept
    in memory at once when they are large.

    Examples
    --------
    >>> c = compare_magnitude({"a": [[0.0], [1.0]], "b": [[0.0], [2.0]]}, reference="a")
    >>> c.candidates, bool(c.mag_diff["b"] > 0)
    (('b',), True)
    """
    if not isinstance(sets, Mapping) or len(sets) == 0:
        raise DiversityInputError("sets must be a non-empty mapping of name -> points (e.g. {'model A': X}).")
    names = tuple(sets)
    for k in names:
        if not isinstance(k, str):
            raise DiversityInputError(f"set names must be strings; got {k!r}.")
    if reference is not None and reference not in sets:
        raise DiversityInputError(
            f"reference {reference!r} is not one of the sets: {', '.join(repr(k) for k in names)}."
        )
    ids = _check_ids(ids, sets)
    n_scales = _check_n_scales(n_scales)
    fraction = _check_fraction(fraction)
    if ts is not None:
        if t_cut is not None:
            raise DiversityInputError("give either ts (an explicit common grid) or t_cut, not both.")
        grid = np.sort(_check_ts(ts))
        if grid.size < 2 or grid[-1] <= 0:
            raise DiversityInputError("ts must hold at least two scales and a positive one to integrate over.")
        t_cut = float(grid[-1])
        n_scales = grid.size
    elif t_cut is not None:
        t_cut = check_positive(t_cut, "t_cut")

    spaces: dict = {}
    keep_bytes = 0
    # distance matrices from the t_conv pass are kept for the curves while they fit in the
    # memory budget beside the working arrays of the largest set (D, Z_t and a factor)
    n_max = max(_n_rows(sets[k]) for k in names)
    working = _DENSE_ARRAYS * 8.0 * n_max * n_max
    t_conv: dict = {k: None for k in names}
    need_tconv = t_cut is None
    total = (n_scales - 1 + (1 if need_tconv else 0)) * len(names)
    done = 0
    if need_tconv:
        for name in names:
            space = _prepare_any(sets[name], metric, p=p, name=name, method=method, ids=ids.get(name))
            if space.n * fraction <= 1.0:
                raise DiversityInputError(
                    f"set {name!r} has {space.n} distinct point(s): its convergence scale needs "
                    f"fraction * n > 1. Give t_cut or more points."
                )
            report(progress, done, total, f"{name}: finding the convergence scale")
            t_conv[name] = _tconv_of_space(space, fraction)  # leaves space.D intact
            held = 0 if space.D is None else space.D.nbytes  # a matrix-free space holds no n x n matrix
            if fits_memory(keep_bytes + held + working) or space.D is None:
                spaces[name] = space
                keep_bytes += held
            done += 1
            report(progress, done, total, f"{name}: t_conv = {t_conv[name]:.6g}")
        if reference is not None:
            t_cut, rule = float(t_conv[reference]), "reference t_conv"
        else:
            t_cut, rule = float(np.median([t_conv[k] for k in names])), "median t_conv"
    else:
        rule = "given" if ts is None else "given ts"
    ts = np.linspace(0.0, t_cut, n_scales) if ts is None else grid
    functions: dict = {}
    for name in names:
        space = spaces.pop(name, None)
        if space is None:
            # the first pass (if any) already warned about duplicates
            space = _prepare_any(sets[name], metric, p=p, name=name, warn=not need_tconv, method=method,
                                 ids=ids.get(name))
        sub = _sub_progress(progress, done, total, name)
        functions[name] = _function_of_space(space, ts, n_scales=n_scales, t_cut=None, fraction=fraction,
                                             progress=sub, total=n_scales - 1, t_conv=t_conv[name])
        done += n_scales - 1
        _warn_flags(functions[name])
        _check_curve(functions[name], repr(name))
    areas = {k: _area(ts, functions[k].values, t_cut) for k in names}
    areas_scaled = {k: areas[k] / t_cut for k in names}
    candidates = tuple(k for k in names if k != reference)
    diffs: dict = {}
    diffs_scaled: dict = {}
    diffs_rel: dict = {}
    diffs_abs: dict = {}
    if reference is not None:
        ref_area = areas[reference]
        for k in candidates:
            diffs[k] = areas[k] - ref_area
            diffs_scaled[k] = diffs[k] / t_cut
            diffs_rel[k] = diffs[k] / ref_area if ref_area else math.nan
            gap = np.abs(functions[k].values - functions[reference].values)
            diffs_abs[k] = _area(ts, gap, t_cut)
    return MagnitudeComparison(
        names=names, reference=reference, candidates=candidates, t_cut=float(t_cut), t_cut_rule=rule,
        t_conv=t_conv, areas=areas, areas_scaled=areas_scaled, mag_diff=diffs, mag_diff_scaled=diffs_scaled,
        mag_diff_relative=diffs_rel, functions=functions, mag_diff_absolute=diffs_abs,
    )


def mag_diff_matrix(
    sets: Mapping[str, Any],
    *,
    reference: Optional[str] = None,
    t_cut: Optional[float] = None,
    n_scales: int = 30,
    fraction: float = 0.95,
    metric: str = "euclidean",
    p: Optional[float] = None,
    ts: Optional[Sequence[float]] = None,
    progress: Optional[ProgressCallback] = None,
    method: str = "auto",
    ids: Optional[Mapping[str, Sequence]] = None,
) -> MagDiffMatrix:
    """MagDiff between every pair of sets, all curves on one common grid (magnipy's ``Diversipy``).

    .. math::

        M_{ij} = \\int_0^{t_{cut}} (\\mathrm{Mag}_{X_i}(t) - \\mathrm{Mag}_{X_j}(t))\\, dt, \\qquad
        A_{ij} = \\int_0^{t_{cut}} |\\mathrm{Mag}_{X_i}(t) - \\mathrm{Mag}_{X_j}(t)|\\, dt

    with ``t_cut`` chosen as in :func:`compare_magnitude` (the reference's ``t_conv``, else the
    median ``t_conv``, else given).

    Parameters
    ----------
    sets : mapping of str to array-like
        Named point sets (or distance matrices with ``metric="precomputed"``).
    reference, t_cut, n_scales, fraction, metric, p, ts, progress, method, ids
        As :func:`compare_magnitude`.

    Returns
    -------
    MagDiffMatrix
        The signed (antisymmetric) ``values`` and the ``absolute`` (symmetric) matrices, both also
        divided by ``t_cut``, and the underlying comparison.

    Raises
    ------
    DiversityInputError, NumericalError
        As :func:`compare_magnitude`.

    Notes
    -----
    Cost: one magnitude function per set (and one ``t_conv`` per set unless ``t_cut`` or ``ts``
    is given); the k^2 integrals are then free. ``Diversipy(Xs).MagDiffs()`` returns
    ``absolute_scaled`` (its ``scale=True`` default) on the grid of its median ``t_conv``.

    Examples
    --------
    >>> m = mag_diff_matrix({"a": [[0.0], [1.0]], "b": [[0.0], [2.0]]}, t_cut=1.0)
    >>> bool(m.values[1, 0] > 0), bool(m.absolute[0, 1] == m.absolute[1, 0])
    (True, True)
    """
    comp = compare_magnitude(sets, reference=reference, t_cut=t_cut, n_scales=n_scales, fraction=fraction,
                             metric=metric, progress=progress, p=p, ts=ts, method=method, ids=ids)
    names = comp.names
    k = len(names)
    ts_grid = comp.functions[names[0]].ts
    values = np.zeros((k, k))
    absolute = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            gap = comp.functions[names[i]].values - comp.functions[names[j]].values
            values[i, j] = comp.areas[names[i]] - comp.areas[names[j]]
            values[j, i] = -values[i, j]
            absolute[i, j] = absolute[j, i] = _area(ts_grid, np.abs(gap), comp.t_cut)
    return MagDiffMatrix(names=names, values=values, absolute=absolute, values_scaled=values / comp.t_cut,
                         absolute_scaled=absolute / comp.t_cut, t_cut=comp.t_cut, t_cut_rule=comp.t_cut_rule,
                         comparison=comp)


def _check_ids(ids, sets: Mapping[str, Any]) -> dict:
    """``ids`` as a dict set name -> names, each naming one set's rows (``{}`` without ids)."""
    if ids is None:
        return {}
    if not isinstance(ids, Mapping):
        raise DiversityInputError("ids must map a set's name to its items' names (e.g. {'model A': ['a.png', ...]}).")
    out = {}
    for k, v in ids.items():
        if k not in sets:
            raise DiversityInputError(f"ids name a set {k!r} that is not one of the sets.")
        if v is None:
            continue
        if len(v) != _n_rows(sets[k]):
            raise DiversityInputError(f"ids of set {k!r}: {len(v)} names for {_n_rows(sets[k])} rows; give one per row.")
        out[k] = v
    return out


def _n_rows(data: Any) -> int:
    """Rows of a data set before validation (0 when it has no length)."""
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(data)
    except TypeError:
        return 0
