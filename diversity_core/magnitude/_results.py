"""Result dataclasses of the magnitude computations (frozen, read-only arrays, JSON-ready ``to_dict``)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Optional

import numpy as np

from .._display import NotebookDisplay, format_value, frame_row, require_plotly, short_repr
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


def _tidy(rows):
    from .._display import tidy_frame

    return tidy_frame(rows)


def _size(f: Any) -> str:
    """``"200 points (3 merged), euclidean"``: the input of a magnitude curve."""
    merged = f" ({f.n_merged} merged)" if f.n_merged else ""
    return f"{f.n_points} points{merged}, metric {f.metric}"


def _curve_rows(score: str, ts, values, exact=None, errors=None, group=None) -> list:
    """Tidy rows of a curve on a grid of scales: one per scale t (extra column ``t``).

    Exact where the error estimate is within :data:`ACCURACY_RTOL`; elsewhere kind
    ``"estimate"`` with ``value -/+ error`` (level NaN: an error estimate, not a confidence level).
    """
    from .._stats import ConfidenceInterval

    rows = []
    for j, t in enumerate(np.asarray(ts, dtype=np.float64)):
        value = float(values[j])
        if exact is None or exact[j]:
            rows.append(frame_row(score, value, group=group, t=float(t)))
        else:
            err = float(errors[j]) if errors is not None else math.nan
            rows.append(frame_row(score, value, ConfidenceInterval(value - err, value + err), group=group,
                                  t=float(t)))
    return rows


def _magnitude_plot(curves: dict, *, t_conv=None, t_cut=None, sizes=None, title=None):
    """``magnitude_figure`` as the app draws it (the one Mag(t) figure)."""
    require_plotly("plot()")
    from ..report.figures import magnitude_figure

    kwargs = {} if title is None else {"title": title}
    return magnitude_figure(curves, t_conv=t_conv, t_cut=t_cut, sizes=sizes, **kwargs)


#: The label of a single curve on the magnitude figures.
_CURVE = "Mag(t)"


@dataclass(frozen=True, repr=False)
class MagnitudeResult(NotebookDisplay):
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

    # -- display (no figure: one scale; MagnitudeFunction.plot draws the curve) -------------------
    def __repr__(self) -> str:
        flag = " (ill-conditioned)" if self.ill_conditioned else ""
        return short_repr(
            f"MagnitudeResult(t={format_value(self.t)}, {_size(self)})",
            [("Mag(t)", f"{format_value(self.value)} +/- {self.error:.2g}{flag}"),
             ("positive magnitude", self.positive_magnitude),
             ("weighting", self.weighting), ("solver", self.method)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row, score ``"magnitude"`` at scale ``t`` (extra columns ``t``, ``error``)."""
        row = _curve_rows("magnitude", [self.t], [self.value], [not self.ill_conditioned], [self.error])[0]
        row["error"] = float(self.error)
        return _tidy([row])


@dataclass(frozen=True, repr=False)
class MagnitudeFunction(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        flagged = int(np.count_nonzero(~self.exact))
        return short_repr(
            f"MagnitudeFunction({self.ts.size} scales, {_size(self)}, method={self.method!r})",
            [("t_conv", "not computed" if self.t_conv is None
              else f"{format_value(self.t_conv)} (Mag = {self.fraction:g} n)"),
             ("ts", self.ts), ("values", self.values),
             ("accuracy", f"max rel. error {self.max_rel_error:.2g}; {flagged} scale(s) flagged")],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per scale t, score ``"magnitude"`` (kind ``"estimate"`` where flagged).

        Extra columns ``t`` and ``error``.
        """
        rows = _curve_rows("magnitude", self.ts, self.values, self.exact, self.errors)
        for row, err in zip(rows, self.errors):
            row["error"] = float(err)
        return _tidy(rows)

    def plot(self):
        """The app's Mag(t) figure of this curve, t_conv marked (``magnitude_figure``)."""
        return _magnitude_plot({_CURVE: (self.ts, self.values)}, t_conv={_CURVE: self.t_conv},
                               sizes={_CURVE: self.n_distinct})


@dataclass(frozen=True, repr=False)
class MagAreaResult(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        f = self.function
        return short_repr(
            f"MagAreaResult(t_cut={format_value(self.t_cut)}, {_size(f)})",
            [("MagArea", self.area), ("MagArea / t_cut", self.area_scaled),
             ("function", repr(f).splitlines()[0])],
        )

    def to_frame(self):
        """Tidy DataFrame: ``mag_area`` and ``mag_area_scaled`` (exact; extra column ``t_cut``)."""
        return _tidy([frame_row("mag_area", self.area, t_cut=self.t_cut),
                      frame_row("mag_area_scaled", self.area_scaled, t_cut=self.t_cut)])

    def plot(self):
        """The app's Mag(t) figure of the curve with the integration limit t_cut (``magnitude_figure``)."""
        f = self.function
        return _magnitude_plot({_CURVE: (f.ts, f.values)}, t_conv={_CURVE: f.t_conv}, t_cut=self.t_cut,
                               sizes={_CURVE: f.n_distinct})


@dataclass(frozen=True, repr=False)
class MagDiffResult(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        rule = f"t_conv of {self.reference}" if self.reference else "median t_conv or given"
        return short_repr(
            f"MagDiffResult(t_cut={format_value(self.t_cut)} ({rule}))",
            [("MagDiff(X, Y)", self.value), ("MagDiff / t_cut", self.value_scaled),
             ("relative", self.relative), ("|MagDiff|", self.absolute),
             ("MagArea", f"X {format_value(self.area_x)}, Y {format_value(self.area_y)}"),
             ("X", _size(self.function_x)), ("Y", _size(self.function_y))],
        )

    def to_frame(self):
        """Tidy DataFrame: each set's MagArea (groups ``X``, ``Y``), then MagDiff and its scaled forms (exact)."""
        return _tidy([frame_row("mag_area", self.area_x, group="X", t_cut=self.t_cut),
                      frame_row("mag_area", self.area_y, group="Y", t_cut=self.t_cut),
                      frame_row("mag_diff", self.value, t_cut=self.t_cut),
                      frame_row("mag_diff_scaled", self.value_scaled, t_cut=self.t_cut),
                      frame_row("mag_diff_relative", self.relative, t_cut=self.t_cut),
                      frame_row("mag_diff_absolute", self.absolute, t_cut=self.t_cut)])

    def plot(self):
        """The app's Mag(t) figure of X and Y on the shared interval (``magnitude_figure``)."""
        fx, fy = self.function_x, self.function_y
        return _magnitude_plot({"X": (fx.ts, fx.values), "Y": (fy.ts, fy.values)},
                               t_conv={"X": self.t_conv_x, "Y": self.t_conv_y}, t_cut=self.t_cut,
                               sizes={"X": fx.n_distinct, "Y": fy.n_distinct})


@dataclass(frozen=True, repr=False)
class MagnitudeComparison(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        shown = list(self.names)[:5]
        areas = ", ".join(f"{name!r} {format_value(self.areas[name])}" for name in shown)
        more = f", ... ({len(self.names) - len(shown)} more)" if len(self.names) > len(shown) else ""
        diffs = ", ".join(f"{name!r} {format_value(self.mag_diff[name])}" for name in self.candidates[:5]
                          if name in self.mag_diff)
        return short_repr(
            f"MagnitudeComparison({len(self.names)} sets, reference={self.reference!r})",
            [("t_cut", f"{format_value(self.t_cut)} ({self.t_cut_rule})"),
             ("MagArea", areas + more), ("MagDiff vs reference", diffs or None)],
        )

    def to_frame(self):
        """Tidy DataFrame: per set (``group``) its MagArea, and each candidate's MagDiff.

        Rows ``mag_area`` and ``mag_area_scaled`` for every set; ``mag_diff``, ``mag_diff_scaled``,
        ``mag_diff_relative`` and ``mag_diff_absolute`` for each candidate against the reference.
        All exact; extra columns ``t_cut`` and ``t_conv``.
        """
        rows = []
        for name in self.names:
            extra = {"t_cut": self.t_cut, "t_conv": self.t_conv.get(name)}
            rows += [frame_row("mag_area", self.areas[name], group=name, **extra),
                     frame_row("mag_area_scaled", self.areas_scaled[name], group=name, **extra)]
            for score, values in (("mag_diff", self.mag_diff), ("mag_diff_scaled", self.mag_diff_scaled),
                                  ("mag_diff_relative", self.mag_diff_relative),
                                  ("mag_diff_absolute", self.mag_diff_absolute)):
                if name in values:
                    rows.append(frame_row(score, values[name], group=name, **extra))
        frame = _tidy(rows)
        frame["t_conv"] = frame["t_conv"].astype("float64")
        return frame

    def plot(self):
        """The app's Mag(t) figure of every set on [0, t_cut] (``magnitude_figure``, as the magnitude page)."""
        return _magnitude_plot({k: (f.ts, f.values) for k, f in self.functions.items()}, t_conv=self.t_conv,
                               t_cut=self.t_cut, sizes={k: f.n_distinct for k, f in self.functions.items()},
                               title=f"Mag(t) on [0, t_cut]; t_cut = {self.t_cut:.4g} ({self.t_cut_rule})")


@dataclass(frozen=True, repr=False)
class MagDiffMatrix(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        return short_repr(
            f"MagDiffMatrix({len(self.names)} sets, t_cut={format_value(self.t_cut)} ({self.t_cut_rule}))",
            [("names", ", ".join(map(repr, self.names[:6])) + (", ..." if len(self.names) > 6 else "")),
             ("values", self.values), ("absolute", self.absolute)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per ordered pair of sets, score ``"mag_diff"`` (exact).

        ``group`` is the row set, extra column ``against`` the column set, then ``absolute``,
        ``value_scaled`` and ``absolute_scaled``.
        """
        rows = []
        for i, a in enumerate(self.names):
            for j, b in enumerate(self.names):
                if i != j:
                    rows.append(frame_row("mag_diff", self.values[i, j], group=a, against=b,
                                          absolute=float(self.absolute[i, j]),
                                          value_scaled=float(self.values_scaled[i, j]),
                                          absolute_scaled=float(self.absolute_scaled[i, j])))
        return _tidy(rows)

    def plot(self, *, absolute: bool = False, scaled: bool = False):
        """The app's all-pairs heatmap (``mag_diff_heatmap``): signed or ``absolute``, raw or ``scaled`` by t_cut."""
        require_plotly("MagDiffMatrix.plot()")
        from ..report.figures import mag_diff_heatmap

        values = (self.absolute_scaled if scaled else self.absolute) if absolute else \
            (self.values_scaled if scaled else self.values)
        return mag_diff_heatmap(values, self.names, absolute=absolute,
                                title=f"{'|MagDiff|' if absolute else 'MagDiff'} on [0, t_cut = {self.t_cut:.4g}]"
                                      + (" / t_cut" if scaled else ""))


@dataclass(frozen=True, repr=False)
class SpreadFunction(NotebookDisplay):
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

    # -- display (no figure: the app and the report draw no spread curve) -------------------------
    def __repr__(self) -> str:
        return short_repr(
            f"SpreadFunction({self.ts.size} scales, {_size(self)})",
            [("t_conv", "not reached" if self.t_conv is None
              else f"{format_value(self.t_conv)} (E_t = {self.fraction:g} n)"),
             ("ts", self.ts), ("values", self.values)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row per scale t, score ``"spread"`` (exact; extra column ``t``)."""
        return _tidy(_curve_rows("spread", self.ts, self.values))


@dataclass(frozen=True, repr=False)
class MagnitudeDimension(NotebookDisplay):
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

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        f = self.function
        return short_repr(
            f"MagnitudeDimension({self.ts.size} scales, {_size(f)})",
            [("dimension", f"{format_value(self.dimension)} at t = {format_value(self.t_dimension)}"),
             ("ts", self.ts), ("profile", self.profile)],
        )

    def to_frame(self):
        """Tidy DataFrame: one row, score ``"magnitude_dimension"`` (exact on the grid; extra ``t_dimension``)."""
        return _tidy([frame_row("magnitude_dimension", self.dimension, t_dimension=self.t_dimension)])

    def plot(self):
        """The app's magnitude dimension profile, its maximum marked (``magnitude_dimension_figure``)."""
        require_plotly("MagnitudeDimension.plot()")
        from ..report.figures import magnitude_dimension_figure

        return magnitude_dimension_figure({_CURVE: (self.ts, self.profile)},
                                          maxima={_CURVE: (self.t_dimension, self.dimension)})
