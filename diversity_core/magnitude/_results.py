"""Result dataclasses of the magnitude computations (frozen, read-only arrays, JSON-ready ``to_dict``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Optional

import numpy as np

from .._json import to_jsonable

__all__ = [
    "MagnitudeResult",
    "MagnitudeFunction",
    "MagAreaResult",
    "MagDiffResult",
    "MagnitudeComparison",
    "MagDiffMatrix",
    "SpreadFunction",
    "MagnitudeDimension",
]


def _plain(value: Any) -> Any:
    """JSON-native form of a field: nested results through their ``to_dict``, the rest by ``to_jsonable``."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return to_jsonable(value)


def _fields_dict(obj: Any) -> dict:
    """``{field: JSON-native value}`` of a result dataclass."""
    return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}


def _freeze(obj: Any) -> None:
    """Make every array field of ``obj`` read-only."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, np.ndarray):
            value.setflags(write=False)


@dataclass(frozen=True)
class MagnitudeResult:
    """Magnitude at one scale with its weighting, from :func:`magnitude_weights`.

    Attributes
    ----------
    t : float
        The scale.
    value : float
        :math:`\\mathrm{Mag}(t) = \\sum_i w_i`.
    weighting : ndarray of shape (n_distinct,)
        The weighting :math:`w` with :math:`Z_t w = \\mathbf 1` (Leinster's term; residual at
        most 1e-12 in each entry when the system is well-conditioned), one entry per distinct
        point. (``weights`` is a deprecated alias: "weights" are item probabilities elsewhere.)
    indices : ndarray of shape (n_distinct,)
        Row of the input each entry of the weighting belongs to (the first occurrence of each
        distinct point).
    error : float
        Estimated absolute error of ``value`` (solver error plus a rounding floor).
    ill_conditioned, singular : bool
        ``error / value > ACCURACY_RTOL``; :math:`Z_t` is numerically singular (never true on a
        returned result: :func:`magnitude_weights` raises instead).
    method : str
        Solver that produced the value (``"exact"``, ``"cg"``, ``"pcg-float32"``,
        ``"cholesky-float32"``, ``"cholesky-float64"``, or ``"lu"`` for an invertible
        :math:`Z_t` that is not positive definite).
    n_points, n_distinct, n_merged : int
        Input rows, distinct points, and duplicates merged.
    metric : str
    """

    t: float
    value: float
    weighting: np.ndarray
    indices: np.ndarray
    error: float
    ill_conditioned: bool
    singular: bool
    method: str
    n_points: int
    n_distinct: int
    n_merged: int
    metric: str

    def __post_init__(self) -> None:
        _freeze(self)

    @property
    def weights(self) -> np.ndarray:
        """Deprecated alias of :attr:`weighting`."""
        warnings.warn(
            "MagnitudeResult.weights is deprecated; use MagnitudeResult.weighting (the magnitude weighting w "
            "with Z_t w = 1; 'weights' means item probabilities elsewhere in diversity_core).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.weighting

    @property
    def positive_magnitude(self) -> float:
        """Positive magnitude: the sum of the positive entries of the weighting."""
        return float(self.weighting[self.weighting > 0].sum())

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        out = _fields_dict(self)
        out["positive_magnitude"] = to_jsonable(self.positive_magnitude)
        return out


@dataclass(frozen=True)
class MagnitudeFunction:
    """A magnitude function evaluated on a grid of scales, from :func:`magnitude_function`.

    Attributes
    ----------
    ts, values : ndarray of shape (m,)
        Scales and :math:`\\mathrm{Mag}(t)`; ``Mag(0) = 1``. NaN where singular.
    errors : ndarray of shape (m,)
        Estimated absolute error of each value.
    ill_conditioned, singular : ndarray of bool, shape (m,)
        Relative error estimate above :data:`ACCURACY_RTOL`; :math:`Z_t` numerically singular
        (NaN value).
    methods : tuple of str
        Solver used at each scale (see :class:`MagnitudeResult`).
    t_conv : float or None
        Convergence scale when it was computed (default grid), else ``None``.
    fraction : float
        ``Mag(t_conv) = fraction * n_distinct``.
    n_points, n_distinct, n_merged : int
    metric : str
    positive_values : ndarray of shape (m,) or None
        Positive magnitude when asked for (``positive=True``): the sum of the positive entries
        of the weighting at each scale (equal to ``values`` where the weighting is non-negative).
    derivatives : ndarray of shape (m,) or None
        :math:`\\mathrm{Mag}'(t) = w^\\top (D \\circ Z_t)\\, w` when asked for (``derivatives=True``).
    method : {"dense", "matrix-free"}
        How the curve was computed. Matrix-free values are conjugate-gradient iterates whose
        ``errors`` are a-posteriori estimates (no factorisation confirms them); see ``exact``.
    """

    ts: np.ndarray
    values: np.ndarray
    errors: np.ndarray
    ill_conditioned: np.ndarray
    singular: np.ndarray
    methods: tuple
    t_conv: Optional[float]
    fraction: float
    n_points: int
    n_distinct: int
    n_merged: int
    metric: str
    positive_values: Optional[np.ndarray] = None
    derivatives: Optional[np.ndarray] = None
    method: str = "dense"

    def __post_init__(self) -> None:
        _freeze(self)

    @property
    def exact(self) -> np.ndarray:
        """Per scale: whether the value is accurate to :data:`ACCURACY_RTOL` by its error estimate.

        True where the scale is neither singular nor ill-conditioned; False marks an approximate
        value whose ``errors`` entry bounds its error.
        """
        out = ~(self.ill_conditioned | self.singular)
        out.setflags(write=False)
        return out

    @property
    def dimension_profile(self) -> Optional[np.ndarray]:
        """The magnitude dimension profile, or None without ``derivatives``.

        The slope :math:`d \\log \\mathrm{Mag} / d \\log t = t\\,\\mathrm{Mag}'(t) / \\mathrm{Mag}(t)` (0 at t = 0).
        """
        if self.derivatives is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(self.ts > 0, self.ts * self.derivatives / self.values, 0.0)
        out.setflags(write=False)
        return out

    @property
    def max_rel_error(self) -> float:
        """Largest estimated relative error over the finite values."""
        ok = np.isfinite(self.values) & (self.values != 0)
        if not ok.any():
            return float("nan")
        return float(np.max(self.errors[ok] / np.abs(self.values[ok])))

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        out = _fields_dict(self)
        out["max_rel_error"] = to_jsonable(self.max_rel_error)
        out["exact"] = to_jsonable(self.exact)
        return out


@dataclass(frozen=True)
class MagAreaResult:
    """MagArea (Definition 3.3 of [1]), from :func:`mag_area`.

    Attributes
    ----------
    area : float
        :math:`\\int_0^{t_{cut}} \\mathrm{Mag}(t)\\,dt` (trapezoid rule on evenly spaced scales).
    area_scaled : float
        ``area / t_cut`` (the mean magnitude over the interval).
    t_cut : float
    function : MagnitudeFunction
        The curve the area was computed from.
    """

    area: float
    area_scaled: float
    t_cut: float
    function: MagnitudeFunction

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)


@dataclass(frozen=True)
class MagDiffResult:
    """MagDiff (Definition 3.4 of [1]) of a candidate X against Y, from :func:`mag_diff`.

    Attributes
    ----------
    value : float
        :math:`\\int_0^{t_{cut}} (\\mathrm{Mag}_X(t) - \\mathrm{Mag}_Y(t))\\,dt`; positive means X
        is more diverse than Y over the interval.
    value_scaled : float
        ``value / t_cut``.
    relative : float
        ``value`` divided by the reference's area (NaN without a reference).
    t_cut : float
    reference : {"X", "Y"} or None
        Whose ``t_conv`` fixed ``t_cut`` (``None``: the median of both, or ``t_cut`` was given).
    area_x, area_y : float
        MagArea of X and Y on ``[0, t_cut]``.
    t_conv_x, t_conv_y : float or None
    function_x, function_y : MagnitudeFunction
    absolute : float
        :math:`\\int_0^{t_{cut}} |\\mathrm{Mag}_X(t) - \\mathrm{Mag}_Y(t)|\\,dt` (trapezoid rule on the
        common grid; magnipy's ``MagDiff`` with ``absolute_area=True``).
    absolute_scaled : float
        ``absolute / t_cut``.
    """

    value: float
    value_scaled: float
    relative: float
    t_cut: float
    reference: Optional[str]
    area_x: float
    area_y: float
    t_conv_x: Optional[float]
    t_conv_y: Optional[float]
    function_x: MagnitudeFunction
    function_y: MagnitudeFunction
    absolute: float = math.nan
    absolute_scaled: float = math.nan

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)


@dataclass(frozen=True)
class MagnitudeComparison:
    """Several sets compared with the paper's conventions, from :func:`compare_magnitude`.

    Attributes
    ----------
    names : tuple of str
        The sets, in input order.
    reference : str or None
        The reference set, or ``None`` for a reference-free comparison.
    candidates : tuple of str
        The other sets (all of them without a reference).
    t_cut : float
        Common upper end of the integration interval ``[0, t_cut]``.
    t_cut_rule : {"given", "reference t_conv", "median t_conv"}
    t_conv : dict of str to float or None
        Each set's convergence scale (``None`` when ``t_cut`` was given).
    areas, areas_scaled : dict of str to float
        MagArea on ``[0, t_cut]`` and MagArea / ``t_cut``.
    mag_diff, mag_diff_scaled, mag_diff_relative : dict of str to float
        For each candidate (only with a reference): the integral of ``Mag_candidate - Mag_reference``,
        that over ``t_cut``, and that over the reference's area.
    functions : dict of str to MagnitudeFunction
    mag_diff_absolute : dict of str to float
        For each candidate: the integral of ``|Mag_candidate - Mag_reference|``.
    """

    names: tuple
    reference: Optional[str]
    candidates: tuple
    t_cut: float
    t_cut_rule: str
    t_conv: dict
    areas: dict
    areas_scaled: dict
    mag_diff: dict
    mag_diff_scaled: dict
    mag_diff_relative: dict
    functions: dict = field(repr=False)
    mag_diff_absolute: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)


@dataclass(frozen=True)
class MagDiffMatrix:
    """MagDiff between every pair of sets on one common grid, from :func:`mag_diff_matrix`.

    Attributes
    ----------
    names : tuple of str
    values : ndarray of shape (k, k)
        ``values[i, j]`` = :math:`\\int_0^{t_{cut}} (\\mathrm{Mag}_i - \\mathrm{Mag}_j)\\,dt` (antisymmetric).
    absolute : ndarray of shape (k, k)
        :math:`\\int_0^{t_{cut}} |\\mathrm{Mag}_i - \\mathrm{Mag}_j|\\,dt` (symmetric; magnipy's
        ``Diversipy.MagDiffs`` with ``scale=False``).
    values_scaled, absolute_scaled : ndarray of shape (k, k)
        The same divided by ``t_cut`` (``Diversipy.MagDiffs()`` defaults to ``absolute_scaled``).
    t_cut : float
    t_cut_rule : str
        As :class:`MagnitudeComparison`.
    comparison : MagnitudeComparison
        Areas, convergence scales and curves.
    """

    names: tuple
    values: np.ndarray
    absolute: np.ndarray
    values_scaled: np.ndarray
    absolute_scaled: np.ndarray
    t_cut: float
    t_cut_rule: str
    comparison: MagnitudeComparison = field(repr=False)

    def __post_init__(self) -> None:
        _freeze(self)

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)


@dataclass(frozen=True)
class SpreadFunction:
    """Willerton's spread on a grid of scales, from :func:`spread_function`.

    Attributes
    ----------
    ts, values : ndarray of shape (m,)
        Scales and :math:`E_t = \\sum_i 1 / \\sum_j e^{-t d_{ij}}` (``E_0 = 1``).
    t_conv : float or None
        The scale with ``E_t = fraction * n_distinct`` when the grid ends there.
    fraction : float
    n_points, n_distinct, n_merged : int
    metric : str
    """

    ts: np.ndarray
    values: np.ndarray
    t_conv: Optional[float]
    fraction: float
    n_points: int
    n_distinct: int
    n_merged: int
    metric: str

    def __post_init__(self) -> None:
        _freeze(self)

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)


@dataclass(frozen=True)
class MagnitudeDimension:
    """The magnitude dimension profile and the magnitude dimension, from :func:`magnitude_dimension`.

    Attributes
    ----------
    ts : ndarray of shape (m,)
    profile : ndarray of shape (m,)
        :math:`t\\,\\mathrm{Mag}'(t) / \\mathrm{Mag}(t)` at each scale, from the exact derivative
        (0 at t = 0, NaN where singular).
    dimension : float
        The largest value of the profile on the grid.
    t_dimension : float
        The scale where it is reached.
    function : MagnitudeFunction
        The curve with its ``derivatives``.
    """

    ts: np.ndarray
    profile: np.ndarray
    dimension: float
    t_dimension: float
    function: MagnitudeFunction = field(repr=False)

    def __post_init__(self) -> None:
        _freeze(self)

    def to_dict(self) -> dict:
        """JSON-ready dictionary with stable keys."""
        return _fields_dict(self)
