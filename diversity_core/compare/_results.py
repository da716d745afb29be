"""The result of :func:`~diversity_core.compare.compare`: plain rows that round-trip through JSON and CSV.

- :class:`ScoreEstimate`: one score of one group at the equal n, with its interval;
- :class:`PairwiseDifference`: one score's difference between two groups, with the verdict;
- :class:`CurvePoint`: one point of a sample-size curve;
- :class:`Comparison`: all of them, plus the q-profiles, Mag(t) curves, spectra and settings.

JSON follows the project's one convention (:mod:`diversity_core._json`: infinities as
``"inf"``/``"-inf"``, NaN as ``null``); :meth:`Comparison.from_json` restores the object exactly.
CSV holds one table per file, floats written with ``repr`` so they read back exactly.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .._csv import csv_text, restore_cell
from .._deprecation import UNSET, warn_renamed
from .._display import NotebookDisplay, html_table, short_repr
from .._json import dumps, from_json_float, to_jsonable
from .._orders import q_key
from .._stats import ConfidenceInterval, flat_interval_reader, interval_from_ends
from ..exceptions import DiversityInputError

__all__ = ["FORMAT", "ScoreEstimate", "PairwiseDifference", "CurvePoint", "Comparison", "score_name"]

#: Identifies the JSON layout of :meth:`Comparison.to_json`.
FORMAT = "diversity-comparison/1"


def score_name(q: float) -> str:
    """The table name of the Vendi score of order q: ``VS_0.5``, ``VS_1``, ``VS_inf``."""
    return f"VS_{q_key(q)}"


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, init=False)
class ScoreEstimate:
    """One score of one group at the equal n, with its interval.

    Attributes
    ----------
    group, score : str
        Group name and score name (``"VS_1"``, ``"IntDiv"``, ``"MagArea"``, ``"MagDiff"``, ...).
    estimate : float or None
        Mean over the ``replicates`` n-subsets (None when the score could not be computed).
    se : float or None
        Standard error of ``estimate`` (see the package notes of :mod:`diversity_core.compare`).
    confidence_interval : ConfidenceInterval or None
        The interval at the comparison's level (:class:`~diversity_core.ConfidenceInterval`:
        ``lo, hi = e.confidence_interval``, its ``level``); None without one. ``ci_low`` and
        ``ci_high`` are its deprecated flat readers; the constructor, :meth:`to_dict` and the
        CSV table keep them as the saved format's keys (files already saved reload).
    n : int
        Items per subset (the equal n).
    replicates : int
        Number of n-subsets averaged.
    interval : str
        How the interval was made: ``"measured"`` (spread measured at n), ``"extrapolated"``
        (spread extrapolated from smaller subsets), ``"rnd runs"``, or ``"none"``.
    role : str
        For MagDiff: ``"candidate"`` or ``"reference"``; empty otherwise.
    gamma : float or None
        The fitted exponent of the spread when the interval was extrapolated.
    df : float or None
        Effective degrees of freedom of ``se`` (inf when it has no Monte Carlo noise); the
        interval is ``estimate -/+ t_df se``. None in comparisons saved before it was recorded
        (their intervals used the normal quantile).

    The constructor takes the fields in the saved order ``(group, score, estimate, se, ci_low,
    ci_high, n, replicates, interval, role, gamma, df)``, or ``confidence_interval=`` in place
    of the two ends.
    """

    group: str
    score: str
    estimate: Optional[float]
    se: Optional[float]
    confidence_interval: Optional[ConfidenceInterval]
    n: int
    replicates: int
    interval: str
    role: str = ""
    gamma: Optional[float] = None
    df: Optional[float] = None

    def __init__(self, group: str, score: str, estimate: Optional[float], se: Optional[float], ci_low=UNSET,
                 ci_high=UNSET, n: int = UNSET, replicates: int = UNSET, interval: str = UNSET, role: str = "",
                 gamma: Optional[float] = None, df: Optional[float] = None, *,
                 confidence_interval: Optional[ConfidenceInterval] = None):
        _set_fields(self, group=group, score=score, estimate=estimate, se=se,
                    confidence_interval=interval_from_ends(confidence_interval, ci_low, ci_high), n=n,
                    replicates=replicates, interval=interval, role=role, gamma=gamma, df=df)

    ci_low = flat_interval_reader("ScoreEstimate", "ci_low")
    ci_high = flat_interval_reader("ScoreEstimate", "ci_high")

    def to_dict(self) -> Dict[str, Any]:
        """The saved fields as a dict: the interval as ``ci_low``/``ci_high`` (column order)."""
        return _flat_dict(self)


@dataclass(frozen=True, init=False)
class PairwiseDifference:
    """The difference of one score between two groups: ``group_a - group_b``.

    ``resolved`` is True when the interval of the difference excludes 0; ``higher`` then names
    the group with the larger score (None when unresolved). The interval,
    ``confidence_interval`` (:class:`~diversity_core.ConfidenceInterval`, None without one;
    ``ci_low``/``ci_high`` its deprecated flat readers), is ``difference -/+ t_df se`` with
    ``df`` the Welch-Satterthwaite degrees of freedom of the two groups' standard errors (None
    in comparisons saved before it was recorded). The constructor takes the fields in the saved
    order ``(score, group_a, group_b, difference, se, ci_low, ci_high, resolved, higher, df)``,
    or ``confidence_interval=`` in place of the two ends.
    """

    score: str
    group_a: str
    group_b: str
    difference: Optional[float]
    se: Optional[float]
    confidence_interval: Optional[ConfidenceInterval]
    resolved: bool
    higher: Optional[str]
    df: Optional[float] = None

    def __init__(self, score: str, group_a: str, group_b: str, difference: Optional[float], se: Optional[float],
                 ci_low=UNSET, ci_high=UNSET, resolved: bool = UNSET, higher: Optional[str] = UNSET,
                 df: Optional[float] = None, *, confidence_interval: Optional[ConfidenceInterval] = None):
        _set_fields(self, score=score, group_a=group_a, group_b=group_b, difference=difference, se=se,
                    confidence_interval=interval_from_ends(confidence_interval, ci_low, ci_high),
                    resolved=resolved, higher=higher, df=df)

    ci_low = flat_interval_reader("PairwiseDifference", "ci_low")
    ci_high = flat_interval_reader("PairwiseDifference", "ci_high")

    def to_dict(self) -> Dict[str, Any]:
        """The saved fields as a dict: the interval as ``ci_low``/``ci_high`` (column order)."""
        return _flat_dict(self)


@dataclass(frozen=True)
class CurvePoint:
    """One point of a sample-size curve: a score's mean over random subsets of ``size`` items.

    ``sd`` is the estimated standard deviation of the score of a fresh sample of that size
    (measured with the finite-population correction up to half the group, extrapolated above).
    """

    group: str
    score: str
    size: int
    mean: Optional[float]
    sd: Optional[float]
    replicates: int

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict (field order)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_ROW_TYPES = {"estimates": ScoreEstimate, "pairwise": PairwiseDifference, "curves": CurvePoint}


# ---------------------------------------------------------------------------------------------
# the comparison
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison(NotebookDisplay):
    """The result of :func:`compare`: plain data that serialises to JSON and CSV and reloads.

    Attributes
    ----------
    groups : tuple of str
        Group names, in input order.
    group_sizes : tuple of int
        Items in each group (before subsampling).
    n : int
        The equal number of items every score was computed on.
    confidence_level : float
        Confidence level of every interval (per interval, per pair). ``level`` is its deprecated
        name; the JSON key of :meth:`to_dict` stays ``"level"`` (files already saved reload).
    scores : tuple of str
        Score names in table order.
    estimates : tuple of ScoreEstimate
        One per (group, score) that applies.
    pairwise : tuple of PairwiseDifference
        One per score and unordered pair of groups (MagDiff excluded: it is already a
        difference against the reference).
    curves : tuple of CurvePoint
        The sample-size curves: each score against the subset size, per group.
    profiles : dict
        ``group -> {"q": (...), "mean": (...), "ci_low": (...), "ci_high": (...)}``: the
        q-profile at n (orders :data:`~diversity_core.compare.PROFILE_QS`) with intervals.
    magnitude_curves : dict
        ``group -> {"t": (...), "mag": (...)}``: Mag(t) at n averaged over subsets (empty
        without magnitude).
    spectra : dict
        ``group -> (...)``: leading eigenvalues of the density matrix of one n-subset.
    settings : dict
        Everything the numbers depend on: resolved kernel, orders, n, seeds, replicate counts,
        magnitude scales (t_conv per group, t_cut, t_ref), roles, data sources and hashes,
        package version, and the interval method in words.
    """

    groups: Tuple[str, ...]
    group_sizes: Tuple[int, ...]
    n: int
    confidence_level: float
    scores: Tuple[str, ...]
    estimates: Tuple[ScoreEstimate, ...]
    pairwise: Tuple[PairwiseDifference, ...]
    curves: Tuple[CurvePoint, ...] = ()
    profiles: Dict[str, Dict[str, tuple]] = field(default_factory=dict)
    magnitude_curves: Dict[str, Dict[str, tuple]] = field(default_factory=dict)
    spectra: Dict[str, tuple] = field(default_factory=dict)
    settings: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # every interval carries the comparison's level (rows rebuilt from JSON have none of their own)
        for name in ("estimates", "pairwise"):
            rows = tuple(_at_level(r, self.confidence_level) for r in getattr(self, name))
            object.__setattr__(self, name, rows)

    # -- look-ups ------------------------------------------------------------------------------
    def estimate(self, group: str, score: str) -> ScoreEstimate:
        """The estimate of ``score`` for ``group``."""
        for e in self.estimates:
            if e.group == group and e.score == score:
                return e
        raise DiversityInputError(
            f"no estimate of {score!r} for group {group!r}; groups: {', '.join(self.groups)}; "
            f"scores: {', '.join(self.scores)}."
        )

    def pair(self, score: str, group_a: str, group_b: str) -> PairwiseDifference:
        """The difference ``group_a - group_b`` of ``score`` (either order)."""
        for p in self.pairwise:
            if p.score == score and (p.group_a, p.group_b) == (group_a, group_b):
                return p
            if p.score == score and (p.group_a, p.group_b) == (group_b, group_a):
                flip = None if p.difference is None else -p.difference
                ci = p.confidence_interval
                if ci is not None:
                    ci = ci._replace(low=None if ci.high is None else -ci.high,
                                     high=None if ci.low is None else -ci.low)
                return replace(p, group_a=group_a, group_b=group_b, difference=flip, confidence_interval=ci)
        raise DiversityInputError(f"no pairwise difference of {score!r} between {group_a!r} and {group_b!r}.")

    def curve(self, group: str, score: str) -> List[CurvePoint]:
        """The sample-size curve of ``score`` for ``group``, by increasing size."""
        return sorted((c for c in self.curves if c.group == group and c.score == score), key=lambda c: c.size)

    @property
    def level(self) -> float:
        """Deprecated name of :attr:`confidence_level`."""
        warn_renamed("Comparison.level", "Comparison.confidence_level")
        return self.confidence_level

    @property
    def reference(self) -> Optional[str]:
        """The reference group of MagDiff (None when no reference was named)."""
        return self.settings.get("reference")

    # -- text ----------------------------------------------------------------------------------
    def table_rows(self, *, digits: int = 4) -> List[Dict[str, str]]:
        """One row per score: ``{"score": ..., <group>: "estimate [low, high]", ...}`` (display strings)."""
        rows = []
        for s in self.scores:
            row = {"score": s}
            for g in self.groups:
                try:
                    e = self.estimate(g, s)
                except DiversityInputError:
                    row[g] = "-"
                    continue
                row[g] = "reference" if e.role == "reference" else _format_estimate(e, digits)
            rows.append(row)
        return rows

    def table_header(self) -> List[str]:
        """Column titles of :meth:`format_table`: ``score`` and ``<group> (N=<size>)`` per group."""
        return ["score", *(f"{g} (N={size})" for g, size in zip(self.groups, self.group_sizes))]

    def pairwise_rows(self, *, digits: int = 4) -> List[Dict[str, str]]:
        """One row per pairwise difference, with the verdict (display strings)."""
        rows = []
        for p in self.pairwise:
            lo, hi = p.confidence_interval or (None, None)
            ci = "-" if lo is None else f"[{_fmt(lo, digits)}, {_fmt(hi, digits)}]"
            rows.append({
                "score": p.score,
                "pair": f"{p.group_a} - {p.group_b}",
                "difference": _fmt(p.difference, digits),
                f"{self.confidence_level:.0%} interval": ci,
                "resolved": f"yes: {p.higher} higher" if p.resolved else "no",
            })
        return rows

    def pairwise_header(self) -> List[str]:
        """Column titles of :meth:`format_pairwise` (the keys of :meth:`pairwise_rows`)."""
        return ["score", "pair", "difference", f"{self.confidence_level:.0%} interval", "resolved"]

    def format_table(self, *, digits: int = 4) -> str:
        """Every score (rows) of every group (columns) with its interval, as plain text."""
        from .._table import format_table

        rows = [[r["score"], *(r[g] for g in self.groups)] for r in self.table_rows(digits=digits)]
        return format_table(self.table_header(), rows)

    def format_pairwise(self, *, digits: int = 4) -> str:
        """The pairwise differences as plain text, with the verdict."""
        from .._table import format_table

        header = self.pairwise_header()
        return format_table(header, [[r[h] for h in header] for r in self.pairwise_rows(digits=digits)])

    # -- notebook display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        """At most ten lines: the groups and n, each score's estimates (as many as fit), the verdicts."""
        title = (f"Comparison({len(self.groups)} groups, n={self.n}, {len(self.scores)} scores, "
                 f"level={self.confidence_level:g})")
        fields_ = [("groups", ", ".join(f"{g} (N={size})" for g, size in zip(self.groups, self.group_sizes)))]
        shown = 6
        for row in self.table_rows(digits=4)[:shown]:
            fields_.append((row["score"], "; ".join(f"{g} {row[g]}" for g in self.groups)))
        if len(self.scores) > shown:
            fields_.append(("more", f"{len(self.scores) - shown} more scores: to_frame() has them all"))
        resolved = sum(p.resolved for p in self.pairwise)
        fields_.append(("pairwise", f"{resolved} of {len(self.pairwise)} differences resolved at "
                                    f"{self.confidence_level:.0%} (format_pairwise())"))
        return short_repr(title, fields_)

    def _repr_html_(self) -> str:
        """The table of :meth:`format_table` (scores by groups, ``estimate [low, high]``); names escaped."""
        import pandas as pd

        header = self.table_header()
        rows = [[r["score"], *(r[g] for g in self.groups)] for r in self.table_rows(digits=4)]
        resolved = sum(p.resolved for p in self.pairwise)
        caption = (f"Comparison at n = {self.n}, {self.confidence_level:.0%} intervals; {resolved} of "
                   f"{len(self.pairwise)} pairwise differences resolved")
        return html_table(pd.DataFrame(rows, columns=header), caption=caption)

    def to_frame(self, table: str = "estimates"):
        """A tidy pandas DataFrame: one row per group and score (``"estimates"``) or per pair (``"pairwise"``).

        ``"estimates"``: the columns of :mod:`diversity_core._display` (``group``, ``score``, ``q``
        for the Vendi scores, ``value``, ``low``, ``high``, ``level``, ``kind``: ``"estimate"``, or
        ``"exact"`` for the reference's MagDiff of 0), then ``se``, ``n``, ``replicates``,
        ``method`` (how the interval was made: the rows' ``interval``), ``role`` and ``df``.
        ``"pairwise"``: ``score``, ``value`` (the difference ``group_a - group_b``), ``low``,
        ``high``, ``level``, ``kind``, then ``group_a``, ``group_b``, ``se``, ``df``,
        ``resolved`` and ``higher``.
        """
        from .._display import frame_row, tidy_frame
        from .._orders import parse_q

        if table not in ("estimates", "pairwise"):
            raise DiversityInputError(f"unknown table {table!r}; choose 'estimates' or 'pairwise'.")
        rows = []
        if table == "estimates":
            for e in self.estimates:
                exact = e.role == "reference" and e.score.startswith("MagDiff")
                q = parse_q(e.score[3:]) if e.score.startswith("VS_") else None
                rows.append(frame_row(e.score, e.estimate, None if exact else e.confidence_interval, group=e.group,
                                      q=q, kind="exact" if exact else "estimate", se=e.se, n=e.n,
                                      replicates=e.replicates, method=e.interval, role=e.role, df=e.df))
        else:
            for p in self.pairwise:
                rows.append(frame_row(p.score, p.difference, p.confidence_interval, kind="estimate",
                                      group_a=p.group_a, group_b=p.group_b, se=p.se, df=p.df, resolved=p.resolved,
                                      higher=p.higher))
        return tidy_frame(rows)

    def plot(self, kind: str = "scores"):
        """The figure of the report and the Compare page: ``"scores"`` (default), ``"differences"``, ...

        ``kind`` is a key of :data:`~diversity_core.report.figures.FIGURE_TITLES` (``"scores"``,
        ``"differences"``, ``"q_profile"``, ``"magnitude"``, ``"spectra"``, ``"sample_size"``);
        the figure is :func:`~diversity_core.report.figures.comparison_figures`' own.
        """
        from .._display import require_plotly
        from ..report.figures.comparison import FIGURE_TITLES, comparison_figures

        require_plotly("Comparison.plot()")
        figures = comparison_figures(self)
        if kind not in figures:
            known = [k for k in FIGURE_TITLES if k in figures]
            raise DiversityInputError(f"no {kind!r} figure for this comparison; choose one of: "
                                      f"{', '.join(map(repr, known))}.")
        return figures[kind]

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict with stable keys (infinite orders written as ``"inf"``, NaN as None)."""
        return to_jsonable({
            "format": FORMAT,
            "groups": self.groups,
            "group_sizes": self.group_sizes,
            "n": self.n,
            "level": self.confidence_level,
            "scores": self.scores,
            "estimates": [e.to_dict() for e in self.estimates],
            "pairwise": [p.to_dict() for p in self.pairwise],
            "curves": [c.to_dict() for c in self.curves],
            "profiles": self.profiles,
            "magnitude_curves": self.magnitude_curves,
            "spectra": self.spectra,
            "settings": self.settings,
        })

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        """Rebuild a Comparison from :meth:`to_dict` output."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            got = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise DiversityInputError(f"not a saved comparison: expected format {FORMAT!r}, got {got!r}.")
        try:
            return cls(
                groups=tuple(data["groups"]),
                group_sizes=tuple(int(s) for s in data["group_sizes"]),
                n=int(data["n"]),
                confidence_level=float(data["level"]),
                scores=tuple(data["scores"]),
                estimates=tuple(_row_from_dict(ScoreEstimate, e) for e in data["estimates"]),
                pairwise=tuple(_row_from_dict(PairwiseDifference, p) for p in data["pairwise"]),
                curves=tuple(_row_from_dict(CurvePoint, c) for c in data.get("curves", ())),
                profiles={g: _floats_by_key(prof) for g, prof in data.get("profiles", {}).items()},
                magnitude_curves={g: _floats_by_key(c) for g, c in data.get("magnitude_curves", {}).items()},
                spectra={g: tuple(from_json_float(v) for v in vals) for g, vals in data.get("spectra", {}).items()},
                settings=dict(data.get("settings", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DiversityInputError(f"saved comparison is incomplete or malformed: {exc}") from None

    def to_json(self, path: Union[str, Path, None] = None, *, indent: Optional[int] = 2) -> str:
        """Strict JSON text (no NaN/Infinity tokens); also written to ``path`` when given."""
        text = dumps(self.to_dict(), indent=indent)
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text + "\n")  # a failed write leaves the previous file whole
        return text

    @classmethod
    def from_json(cls, text_or_path: Union[str, Path]) -> Comparison:
        """Reload from JSON text or a path written by :meth:`to_json`."""
        text = str(text_or_path)
        if not text.lstrip().startswith("{"):
            path = Path(text_or_path)
            if not path.is_file():
                raise DiversityInputError(f"{path}: no such file (expected a comparison saved with to_json).")
            text = path.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DiversityInputError(f"not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def to_csv(self, path: Union[str, Path, None] = None, *, table: str = "estimates") -> str:
        """One table as CSV text: ``"estimates"`` (default), ``"pairwise"`` or ``"curves"``.

        Empty cells stand for missing values. Written to ``path`` when given; read back with
        :meth:`read_csv`.
        """
        names = list(_columns(_table_type(table)))
        # text cells that start like a formula get a quote (diversity_core._csv); read_csv removes it
        text = csv_text(names, ([r.to_dict()[k] for k in names] for r in getattr(self, table)))
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text)  # a failed write leaves the previous file whole
        return text

    @staticmethod
    def read_csv(text_or_path: Union[str, Path], *, table: str = "estimates") -> tuple:
        """The rows of a table written by :meth:`to_csv`, as ScoreEstimate/PairwiseDifference/CurvePoint."""
        cls = _table_type(table)
        text = str(text_or_path)
        if "\n" not in text and Path(text).is_file():
            text = Path(text).read_text(encoding="utf-8")
        reader = csv.DictReader(io.StringIO(text))
        types = _columns(cls)
        expected = list(types)
        required = [f.name for f in fields(cls) if f.default is MISSING]  # the interval: two columns
        got = list(reader.fieldnames or [])
        # a table written before trailing optional columns (df) existed reads back with their defaults
        if got != expected[: len(got)] or len(got) < len(required) + ("confidence_interval" in required):
            raise DiversityInputError(f"CSV columns {reader.fieldnames} do not match the {table!r} table {expected}.")
        return tuple(cls(**{k: _csv_value(v, types[k]) for k, v in row.items()}) for row in reader)


# ---------------------------------------------------------------------------------------------
# private helpers
# ---------------------------------------------------------------------------------------------
def _table_type(table: str):
    """The row class of a table name, or an error listing the tables."""
    if table not in _ROW_TYPES:
        raise DiversityInputError(f"unknown table {table!r}; choose one of: {', '.join(map(repr, _ROW_TYPES))}.")
    return _ROW_TYPES[table]


def _columns(cls) -> Dict[str, str]:
    """The saved columns of a row class and their types: its fields, the interval as ``ci_low``, ``ci_high``."""
    out: Dict[str, str] = {}
    for f in fields(cls):
        if f.name == "confidence_interval":
            out.update(ci_low="Optional[float]", ci_high="Optional[float]")
        else:
            out[f.name] = str(f.type)
    return out


def _flat_dict(row) -> Dict[str, Any]:
    """A row's saved form: its fields in column order, the interval as its two ends (None without one)."""
    lo, hi = row.confidence_interval or (None, None)
    ends = {"ci_low": lo, "ci_high": hi}
    return {k: ends[k] if k in ends else getattr(row, k) for k in _columns(type(row))}


def _set_fields(row, **values) -> None:
    """The fields of a frozen row whose constructor also takes the saved format's flat interval."""
    missing = [k for k, v in values.items() if v is UNSET]
    if missing:
        raise TypeError(f"{type(row).__name__}() missing required arguments: {', '.join(missing)}")
    for k, v in values.items():
        object.__setattr__(row, k, v)


def _at_level(row, level: float):
    """The row with its interval at ``level`` (unchanged when it has none or already has a level)."""
    ci = row.confidence_interval
    if ci is None or ci.level is not None:
        return row
    return replace(row, confidence_interval=ci._replace(level=level))


def _row_from_dict(cls, data: Mapping[str, Any]):
    """A row rebuilt from its JSON dict: float fields decoded (``"inf"`` back to inf), None kept."""
    floats = {k for k, t in _columns(cls).items() if "float" in t}
    return cls(**{k: (None if v is None else from_json_float(v)) if k in floats else v for k, v in data.items()})


def _floats_by_key(values: Mapping[str, Any]) -> Dict[str, tuple]:
    """``{key: [numbers]}`` from JSON back to ``{key: (floats)}``."""
    return {k: tuple(from_json_float(v) for v in vals) for k, vals in values.items()}


def _csv_value(text: str, typ: str):
    """Parse one CSV cell by the dataclass field's annotation (a string under PEP 563)."""
    if text == "":
        return None if "Optional" in typ else ""
    if "bool" in typ:
        return text == "True"
    if "int" in typ:
        return int(text)
    if "float" in typ:
        return float(text)
    return restore_cell(text)  # the quote a formula-like text cell was given on writing


def _fmt(v: Optional[float], digits: int) -> str:
    """A number to ``digits`` significant digits, ``-`` when missing."""
    return "-" if v is None else f"{v:.{digits}g}"


def _format_estimate(e: ScoreEstimate, digits: int) -> str:
    """``estimate [low, high]`` (or the estimate alone without an interval)."""
    if e.estimate is None:
        return "-"
    if e.confidence_interval is None or e.confidence_interval.low is None:
        return _fmt(e.estimate, digits)
    lo, hi = e.confidence_interval
    return f"{_fmt(e.estimate, digits)} [{_fmt(lo, digits)}, {_fmt(hi, digits)}]"
