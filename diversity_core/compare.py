r"""Compare the diversity of several groups (models, datasets, classes) at one sample size, with intervals.

:func:`compare` scores every group with every measure the project has — Vendi scores
:math:`VS_q` for a list of orders, IntDiv, MagArea on a shared :math:`t_{cut}`, MagDiff against a
named reference group and, on request, the RND score — at the **same number of items n**, and
attaches to every score an interval and to every pair of groups a verdict: is the difference
resolved at the chosen level?

Why equal n
-----------
Vendi scores and magnitude depend on the number of items: VS_q of n items converges at about
:math:`1/\sqrt n` from below, and Mag(t) grows towards n. Two groups of different sizes are
therefore compared at one n (default: the smallest group's size), never by mixing sizes. Groups
larger than n are scored on ``n_subsamples`` random subsets of n items drawn **without
replacement** (seeded) and the scores averaged; a group of exactly n items is scored once.

Why subsampling, not the ordinary bootstrap
-------------------------------------------
A bootstrap resample draws n items *with* replacement, so about 37 % of every resample are
duplicates. Duplicated items are identical items, and identical items are exactly what a
diversity score discounts: the Vendi score of a bootstrap resample is biased downwards (for
well-spread data by up to the fraction of distinct items, ~63 %), and magnitude merges
duplicates (the twin property). Resamples here are drawn without replacement, so every replicate
is a set of distinct, real items.

How the intervals are made (rate-adaptive subsampling)
------------------------------------------------------
For group g with :math:`N_g` items the target is :math:`\theta_g(n)`, the expected score of n
items drawn from the distribution behind group g. The estimate :math:`\hat\theta_g` is the mean
of the score over R random n-subsets (one when :math:`N_g = n`); its variance is, to first
order in the Hoeffding decomposition of this (incomplete) U-statistic,

.. math::

    \mathrm{Var}(\hat\theta_g) \approx \frac{n}{N_g}\, s_g(n)^2 + \frac{\widehat{\mathrm{Var}}_{sub}(n)}{R},

with :math:`s_g(m)` the standard deviation of the score of a fresh m-item sample and the second
term the Monte Carlo error of averaging only R subsets. :math:`s_g(m)` is measured by subsampling
without replacement: subsets of size m drawn from :math:`N_g` items vary less than fresh samples
by the finite-population factor, so :math:`s_g(m) = \mathrm{sd}_{sub}(m)\sqrt{(N_g-1)/(N_g-m)}`.

- When :math:`N_g \ge 2n`, :math:`s_g(n)` is measured directly on the R subsets of size n.
- Otherwise (the smallest group always) n-subsets of :math:`N_g` items carry little or no
  spread, and :math:`s_g(n)` is extrapolated from subsets of sizes :math:`m \in [N_g/8, N_g/2]`
  with a power law :math:`s_g(m) = a\, m^{\gamma}` fitted in log-log coordinates. The exponent
  is estimated from the data rather than assumed to be :math:`-1/2`, because the scores do not
  all behave like means: a Vendi score of low-dimensional data settles like a smooth statistic
  (:math:`\gamma \approx -1/2`), while MagArea — and VS when items are nearly all distinct —
  grows with m and so does its spread (:math:`\gamma > 0`; the half-sampling, or delete-d
  jackknife, estimate that assumes :math:`\gamma = -1/2` underestimates these spreads several
  fold). This is the subsampling-with-estimated-rate idea of Bertail, Politis & Romano (1999).
  :math:`\gamma` is clipped to :math:`[-1, 2]`.

The interval is :math:`\hat\theta_g \pm z_{(1+\text{level})/2}\,\mathrm{SE}_g` (normal, as the
scores are smooth functionals of the items' empirical distribution), clipped to the score's range
(VS in [1, n], MagArea >= 0). Groups are sampled independently, so a pairwise
difference has :math:`\mathrm{SE} = \sqrt{\mathrm{SE}_a^2 + \mathrm{SE}_b^2}`; it is *resolved*
when its interval excludes 0. The level applies to each pair separately (no multiplicity
correction). In simulations the standard errors come out within about 20 % of the Monte Carlo
truth, on the wide side where extrapolated (VS_q, IntDiv: ratios 1.0-1.2 for a group of exactly
n items, 0.93-1.04 measured on a group of 5n; MagArea at a fixed t_cut: 1.13-1.15;
``tests/test_compare.py`` checks VS and IntDiv).

Magnitude
---------
MagArea is cheaper to get wrong and costlier to compute (``n_scales`` factorisations of an
m x m matrix per subset), so it follows a leaner plan: each group's estimate is its first random
n-subset (the one the spectra use; a random n-subset is itself an iid n-sample, so
:math:`\mathrm{SE} = s_g(n)`), and :math:`s_g(n)` is always extrapolated from
``magnitude_replicates`` subsets per size in :math:`[n/8, n/2]`. The sample-size curve of
MagArea stops at n. :math:`t_{cut}` (median of the groups' :math:`t_{conv}` on those subsets)
and :math:`t_{ref}` are then held fixed: the intervals are conditional on them. Their own
variability moves every group's area together, so it cancels in the comparisons the intervals
are for, but an interval does not cover a rerun with a different :math:`t_{cut}` (give
``t_cut`` to fix it across comparisons).

RND has its own uncertainty: the spread of the score over its training runs on the group's
equal-n subset (:func:`diversity_core.rnd.rnd_score`); that interval covers the randomness of
the runs, not the sampling of the items.

Cost
----
Spectral scores (VS_q, IntDiv, the q-profile) come from one spectrum per replicate: with a
feature-map kernel (cosine, linear) and d < N the dual path costs O(m d^2), milliseconds at
m = 500, so the defaults (``n_subsamples=100`` subsets for the estimate, ``n_resamples=50`` per
size of the sample-size curve) take well under a second per group. Kernels without a feature map
(rbf, tanimoto, ...) slice one N x N kernel matrix per group and decompose each m x m block,
O(m^3). Above n the sample-size curve thins its replicates in proportion to the cost. Loops of
small decompositions run with one BLAS thread (threads only add overhead there).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import importlib
import io
import json
import math
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ._progress import ProgressCallback, report
from ._validation import RandomLike, check_option, check_positive, check_q, check_random_state
from .exceptions import (
    ConvergenceWarning,
    DiversityInputError,
    DiversityWarning,
    DuplicatesMergedWarning,
    KernelDiagonalWarning,
    SpectrumWarning,
)
from .kernels import Kernel, PrecomputedKernel, get_kernel

__all__ = [
    "Comparison",
    "ScoreEstimate",
    "PairwiseDifference",
    "CurvePoint",
    "compare",
    "score_name",
    "PROFILE_QS",
    "FORMAT",
]

#: Identifies the JSON layout of :meth:`Comparison.to_json`.
FORMAT = "diversity-comparison/1"

#: Orders of the q-profile drawn for every group (log-spaced 0.1 .. 10, 1 and inf included).
PROFILE_QS = tuple(float(q) for q in np.unique(np.concatenate([np.geomspace(0.1, 10.0, 21), [1.0, np.inf]])))

#: Smallest group (and n) for which an interval can be extrapolated.
MIN_ITEMS = 10

#: Matrix order up to which replicate loops run with one BLAS thread.
SMALL_PROBLEM = 400

#: Largest group whose kernel matrix is held whole (kernels without a usable feature map); above it
#: each subset's block is computed on demand and the sample-size curve stops at this size.
DENSE_MAX = 4000

#: Leading eigenvalues kept per group for the spectra figure.
MAX_EIGENVALUES = 200

#: Range of the fitted exponent gamma of the spread s(m) = a m^gamma.
GAMMA_RANGE = (-1.0, 2.0)

# score kinds whose range is bounded, for clipping the interval: (low, high or "n")
_BOUNDS = {"VS": (1.0, "n"), "MagArea": (0.0, None)}


# ---------------------------------------------------------------------------------------------
# result objects
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoreEstimate:
    """One score of one group at the equal n, with its interval.

    Attributes
    ----------
    group, score : str
        Group name and score name (``"VS_1"``, ``"IntDiv"``, ``"MagArea"``, ``"MagDiff"``, ...).
    estimate : float or None
        Mean over the ``replicates`` n-subsets (None when the score could not be computed).
    se : float or None
        Standard error of ``estimate`` (see the module notes).
    ci_low, ci_high : float or None
        The interval at the comparison's level.
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
    """

    group: str
    score: str
    estimate: Optional[float]
    se: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    n: int
    replicates: int
    interval: str
    role: str = ""
    gamma: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class PairwiseDifference:
    """The difference of one score between two groups: ``group_a - group_b``.

    ``resolved`` is True when the interval of the difference excludes 0; ``higher`` then names
    the group with the larger score (None when unresolved).
    """

    score: str
    group_a: str
    group_b: str
    difference: Optional[float]
    se: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    resolved: bool
    higher: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


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
        return {f.name: getattr(self, f.name) for f in fields(self)}


_ROW_TYPES = {"estimates": ScoreEstimate, "pairwise": PairwiseDifference, "curves": CurvePoint}


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`: plain data that serialises to JSON and CSV and reloads.

    Attributes
    ----------
    groups : tuple of str
        Group names, in input order.
    group_sizes : tuple of int
        Items in each group (before subsampling).
    n : int
        The equal number of items every score was computed on.
    level : float
        Confidence level of every interval (per interval, per pair).
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
        q-profile at n (orders :data:`PROFILE_QS`) with intervals.
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
    level: float
    scores: Tuple[str, ...]
    estimates: Tuple[ScoreEstimate, ...]
    pairwise: Tuple[PairwiseDifference, ...]
    curves: Tuple[CurvePoint, ...] = ()
    profiles: Dict[str, Dict[str, tuple]] = field(default_factory=dict)
    magnitude_curves: Dict[str, Dict[str, tuple]] = field(default_factory=dict)
    spectra: Dict[str, tuple] = field(default_factory=dict)
    settings: Dict[str, Any] = field(default_factory=dict)

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
                lo = None if p.ci_high is None else -p.ci_high
                hi = None if p.ci_low is None else -p.ci_low
                return replace(p, group_a=group_a, group_b=group_b, difference=flip, ci_low=lo, ci_high=hi)
        raise DiversityInputError(f"no pairwise difference of {score!r} between {group_a!r} and {group_b!r}.")

    def curve(self, group: str, score: str) -> List[CurvePoint]:
        """The sample-size curve of ``score`` for ``group``, by increasing size."""
        return sorted((c for c in self.curves if c.group == group and c.score == score), key=lambda c: c.size)

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

    def pairwise_rows(self, *, digits: int = 4) -> List[Dict[str, str]]:
        """One row per pairwise difference, with the verdict (display strings)."""
        rows = []
        for p in self.pairwise:
            ci = "-" if p.ci_low is None else f"[{_fmt(p.ci_low, digits)}, {_fmt(p.ci_high, digits)}]"
            rows.append({
                "score": p.score,
                "pair": f"{p.group_a} - {p.group_b}",
                "difference": _fmt(p.difference, digits),
                f"{self.level:.0%} interval": ci,
                "resolved": f"yes: {p.higher} higher" if p.resolved else "no",
            })
        return rows

    def format_table(self, *, digits: int = 4) -> str:
        """Every score (rows) of every group (columns) with its interval, as plain text."""
        header = ["score", *(f"{g} (N={size})" for g, size in zip(self.groups, self.group_sizes))]
        rows = [[r["score"], *(r[g] for g in self.groups)] for r in self.table_rows(digits=digits)]
        return _text_table(header, rows)

    def format_pairwise(self, *, digits: int = 4) -> str:
        """The pairwise differences as plain text, with the verdict."""
        rows = self.pairwise_rows(digits=digits)
        header = ["score", "pair", "difference", f"{self.level:.0%} interval", "resolved"]
        return _text_table(header, [[r[h] for h in header] for r in rows])

    # -- serialisation --------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready dict with stable keys (infinite orders written as ``"inf"``)."""
        return {
            "format": FORMAT,
            "groups": list(self.groups),
            "group_sizes": list(self.group_sizes),
            "n": self.n,
            "level": self.level,
            "scores": list(self.scores),
            "estimates": [e.to_dict() for e in self.estimates],
            "pairwise": [p.to_dict() for p in self.pairwise],
            "curves": [c.to_dict() for c in self.curves],
            "profiles": {
                g: {k: [_encode_float(v) for v in vals] for k, vals in prof.items()}
                for g, prof in self.profiles.items()
            },
            "magnitude_curves": {g: {k: list(v) for k, v in c.items()} for g, c in self.magnitude_curves.items()},
            "spectra": {g: list(v) for g, v in self.spectra.items()},
            "settings": self.settings,
        }

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
                level=float(data["level"]),
                scores=tuple(data["scores"]),
                estimates=tuple(ScoreEstimate(**e) for e in data["estimates"]),
                pairwise=tuple(PairwiseDifference(**p) for p in data["pairwise"]),
                curves=tuple(CurvePoint(**c) for c in data.get("curves", ())),
                profiles={
                    g: {k: tuple(_decode_float(v) for v in vals) for k, vals in prof.items()}
                    for g, prof in data.get("profiles", {}).items()
                },
                magnitude_curves={
                    g: {k: tuple(v) for k, v in c.items()} for g, c in data.get("magnitude_curves", {}).items()
                },
                spectra={g: tuple(v) for g, v in data.get("spectra", {}).items()},
                settings=dict(data.get("settings", {})),
            )
        except (KeyError, TypeError) as exc:
            raise DiversityInputError(f"saved comparison is incomplete or malformed: {exc}") from None

    def to_json(self, path: Union[str, Path, None] = None, *, indent: Optional[int] = 2) -> str:
        """Strict JSON text (no NaN/Infinity tokens); also written to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
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
        rows, cls = self._rows(table)
        names = [f.name for f in fields(cls)]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        for r in rows:
            writer.writerow(["" if getattr(r, k) is None else _csv_cell(getattr(r, k)) for k in names])
        text = buf.getvalue()
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @staticmethod
    def read_csv(text_or_path: Union[str, Path], *, table: str = "estimates") -> tuple:
        """The rows of a table written by :meth:`to_csv`, as ScoreEstimate/PairwiseDifference/CurvePoint."""
        cls = _table_type(table)
        text = str(text_or_path)
        if "\n" not in text and Path(text).is_file():
            text = Path(text).read_text(encoding="utf-8")
        reader = csv.DictReader(io.StringIO(text))
        expected = [f.name for f in fields(cls)]
        if reader.fieldnames != expected:
            raise DiversityInputError(f"CSV columns {reader.fieldnames} do not match the {table!r} table {expected}.")
        types = {f.name: f.type for f in fields(cls)}
        return tuple(cls(**{k: _csv_value(v, types[k]) for k, v in row.items()}) for row in reader)

    def _rows(self, table: str):
        cls = _table_type(table)
        return getattr(self, table), cls


def _table_type(table: str):
    if table not in _ROW_TYPES:
        raise DiversityInputError(f"unknown table {table!r}; choose one of: {', '.join(map(repr, _ROW_TYPES))}.")
    return _ROW_TYPES[table]


def _csv_cell(v):
    return repr(v) if isinstance(v, float) else v


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
    return text


def _encode_float(v):
    if v is None:
        return None
    return "inf" if math.isinf(v) and v > 0 else v


def _decode_float(v):
    return math.inf if v == "inf" else v


def _fmt(v: Optional[float], digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _format_estimate(e: ScoreEstimate, digits: int) -> str:
    if e.estimate is None:
        return "-"
    if e.ci_low is None:
        return _fmt(e.estimate, digits)
    return f"{_fmt(e.estimate, digits)} [{_fmt(e.ci_low, digits)}, {_fmt(e.ci_high, digits)}]"


def _text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def score_name(q: float) -> str:
    """The table name of the Vendi score of order q: ``VS_0.5``, ``VS_1``, ``VS_inf``."""
    q = float(q)
    return "VS_inf" if math.isinf(q) else f"VS_{q:g}"


# ---------------------------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------------------------
def _array_hash(X) -> str:
    """BLAKE2b digest of a feature matrix's dtype, shape and bytes (dense or CSR)."""
    h = hashlib.blake2b(digest_size=16)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        h.update(f"csr|{X.dtype.str}|{X.shape}|".encode())
        for a in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        h.update(f"{X.dtype.str}|{X.shape}|".encode())
        h.update(np.ascontiguousarray(X).tobytes())
    return h.hexdigest()


def _split_groups(groups, featurizer: str, progress) -> Tuple[Dict[str, Any], Dict[str, dict], Optional[str]]:
    """Normalise ``groups`` to ``{name: features}``; also per-group source notes and the featurizer's kernel."""
    from .data import Dataset

    if isinstance(groups, Dataset):
        from .featurizers import default_kernel, featurize, resolve_featurizer

        _warn_weights(groups)
        names = groups.group_names()
        if len(names) < 2:
            raise DiversityInputError(
                f"dataset {groups.name!r} has {len(names)} group(s); compare needs at least 2 "
                "(load it with a group column, or pass a dict name -> features)."
            )
        X = featurize(groups, featurizer, progress=progress)
        fname = resolve_featurizer(groups, featurizer)
        out = {g: X[groups.group_indices(g)] for g in names}
        notes = {
            g: {"source": groups.source or groups.name, "dataset_hash": groups.content_hash, "featurizer": fname}
            for g in names
        }
        return out, notes, default_kernel(fname)
    if not isinstance(groups, Mapping):
        raise DiversityInputError(
            f"groups must be a dict name -> feature array or a Dataset with groups; got {type(groups).__name__}."
        )
    if len(groups) < 2:
        raise DiversityInputError(f"compare needs at least 2 groups; got {len(groups)}.")
    out, notes, used = {}, {}, set()
    for name, X in groups.items():
        key = str(name)
        if key in out:
            raise DiversityInputError(f"two groups are both named {key!r}; give each group a distinct name.")
        if isinstance(X, Dataset):
            from .featurizers import featurize, resolve_featurizer

            _warn_weights(X)
            fname = resolve_featurizer(X, featurizer)
            used.add(fname)
            notes[key] = {"source": X.source or X.name, "dataset_hash": X.content_hash, "featurizer": fname}
            X = featurize(X, featurizer, progress=progress)
        out[key] = X
    if len(used) > 1:
        raise DiversityInputError(
            f"the groups were featurized differently ({', '.join(sorted(used))}), so their scores are not "
            "comparable; load groups of one kind or name one featurizer."
        )
    kernel = None
    if used:
        from .featurizers import default_kernel

        kernel = default_kernel(used.pop())
    return out, notes, kernel


def _warn_weights(dataset) -> None:
    if dataset.weights is not None:
        warnings.warn(
            DiversityWarning(
                f"dataset {dataset.name!r} has item weights; compare ignores them (every subset is a uniform "
                "sample of items). Use vendi_score(..., weights=...) for a weighted score."
            ),
            stacklevel=4,
        )


def _check_int(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise DiversityInputError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _seed_from(rng: RandomLike) -> int:
    """A recorded integer seed: the int given, or one drawn from the Generator / fresh entropy."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise DiversityInputError(f"rng must be a non-negative int seed; got {rng}.")
        return int(rng)
    return int(check_random_state(rng).integers(2**63 - 1))


# ---------------------------------------------------------------------------------------------
# per-replicate statistics
# ---------------------------------------------------------------------------------------------
class _SpectralStats:
    """VS_q for the table orders, IntDiv and the q-profile of a subset of one group's items.

    Computed once per group: the kernel's feature map Phi when it has one and d < N (a replicate
    then takes the dual path on its rows, O(m d^2)), otherwise the N x N kernel matrix (a
    replicate slices it and decomposes the m x m block, O(m^3)). Both normalise the spectrum
    the way :func:`~diversity_core.spectrum.compute_spectrum` does (eigenvalues of
    ``K / m`` renormalised to sum 1, the same support threshold), so the numbers equal
    ``compute_spectrum(X[idx], kernel=...)``.
    """

    def __init__(self, X, kern: Kernel, qs: np.ndarray):
        self.qs = np.concatenate([qs, np.asarray(PROFILE_QS)])
        self.n_table = qs.size
        N = X.shape[0]
        self.dual = kern.has_feature_map and X.shape[1] < N
        if self.dual:
            self.Phi = kern.feature_map(X)
            if sp.issparse(self.Phi):
                self.Phi = sp.csr_matrix(self.Phi)
            self._linear = get_kernel("linear")
            self.K = None
        elif N > DENSE_MAX:
            self.K = None  # too large to hold: each subset's block is computed on demand
            self.X, self.kern = X, kern
        elif kern.has_feature_map:
            Phi = kern.feature_map(X)
            G = Phi @ Phi.T
            self.K = np.asarray(G.toarray() if sp.issparse(G) else G, dtype=np.float64)
        else:
            self.K = np.asarray(kern._matrix(X), dtype=np.float64)
        self.cost_power = 1 if self.dual else 3
        self.d = X.shape[1]

    def single_thread(self, m: int) -> bool:
        """Many small eigenproblems (order <= SMALL_PROBLEM): BLAS threads cost more than they give."""
        order = min(m, self.d) if self.dual else m
        return order <= SMALL_PROBLEM

    def block(self, idx: np.ndarray) -> np.ndarray:
        """The kernel matrix of the items ``idx`` (a fresh array)."""
        if self.K is not None:
            return self.K[np.ix_(idx, idx)]
        return np.array(self.kern._matrix(self.X[idx]), dtype=np.float64)

    def warn_diagonal(self, group: str) -> None:
        """Warn once when the kernel's diagonal is not 1 (e.g. the linear kernel on non-unit rows)."""
        if self.dual:
            P = self.Phi
            diag = np.asarray(P.multiply(P).sum(axis=1)).ravel() if sp.issparse(P) else np.einsum("ij,ij->i", P, P)
        elif self.K is None:
            diag = np.diagonal(self.block(np.arange(min(self.X.shape[0], 200))))
        else:
            diag = np.diagonal(self.K)
        bad = int(np.count_nonzero(np.abs(diag - 1.0) > 1e-6))
        if bad:
            warnings.warn(
                KernelDiagonalWarning(
                    f"group {group!r}: the kernel's diagonal is not 1 for {bad} items; each spectrum is "
                    "renormalised to sum 1 (use the cosine kernel for unit-norm similarities)."
                ),
                stacklevel=3,
            )

    def spectrum(self, idx: np.ndarray):
        from .spectrum import compute_spectrum, spectrum_from_eigenvalues

        if self.dual:
            return compute_spectrum(self.Phi[idx], kernel=self._linear, method="auto")
        M = self.block(idx)
        M *= 1.0 / idx.size
        lam = scipy.linalg.eigh(M, eigvals_only=True, overwrite_a=True, check_finite=False, driver="evr")
        return spectrum_from_eigenvalues(lam, n=idx.size)

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        spec = self.spectrum(idx)
        vs = spec.profile(self.qs)
        if self.dual:
            P = self.Phi[idx]
            mean = np.asarray(P.mean(axis=0), dtype=np.float64).ravel()
            div = 1.0 - float(mean @ mean)
        else:
            div = 1.0 - float(self.block(idx).mean())
        return np.concatenate([vs[: self.n_table], [div], vs[self.n_table :]])


class _MagnitudeStats:
    """MagArea on [0, t_cut], the area on [0, t_ref] (for MagDiff) and Mag(t) on the grid, of a subset."""

    cost_power = 3

    def single_thread(self, m: int) -> bool:
        return False

    def __init__(self, X, metric: str, ts: np.ndarray, t_cut: float, t_ref: Optional[float]):
        self.X = X
        self.metric = metric
        self.ts = ts
        self.t_cut = t_cut
        self.t_ref = t_ref
        self.n_singular = 0
        self.n_merged = 0

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        mag_mod = importlib.import_module(".magnitude", __package__)  # the package exports a function "magnitude"

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DuplicatesMergedWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            func = mag_mod.magnitude_function(_rows(self.X, idx), ts=self.ts, metric=self.metric)
        mag = np.asarray(func.values, dtype=np.float64)
        if func.singular.any():
            self.n_singular += 1
        self.n_merged = max(self.n_merged, int(func.n_merged))
        out = [_area(self.ts, mag, self.t_cut)]
        if self.t_ref is not None:
            out.append(_area(self.ts, mag, self.t_ref))
        return np.concatenate([out, mag])


def _rows(X, idx):
    """Dense float64 rows of X (magnitude needs dense distances)."""
    R = X[idx]
    return np.asarray(R.toarray() if sp.issparse(R) else R, dtype=np.float64)


def _area(ts: np.ndarray, values: np.ndarray, t_end: float) -> float:
    """Trapezoid integral over [0, t_end] of a curve sampled on ``ts`` (linear in the last partial step)."""
    k = int(np.searchsorted(ts, t_end * (1 + 1e-12), side="right"))
    area = float(np.trapezoid(values[:k], ts[:k]))
    if k < ts.size and t_end > ts[k - 1]:
        frac = (t_end - ts[k - 1]) / (ts[k] - ts[k - 1])
        v_end = values[k - 1] + frac * (values[k] - values[k - 1])
        area += 0.5 * (t_end - ts[k - 1]) * (values[k - 1] + v_end)
    return area


def _convergence_scale(X: np.ndarray, metric: str) -> float:
    mag_mod = importlib.import_module(".magnitude", __package__)  # the package exports a function "magnitude"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DuplicatesMergedWarning)
        return float(mag_mod.convergence_scale(X, metric=metric))


# ---------------------------------------------------------------------------------------------
# subsampling engine
# ---------------------------------------------------------------------------------------------
def curve_sizes(N: int, n_sizes: int = 8) -> np.ndarray:
    """Subset sizes of a sample-size curve: ``n_sizes`` log-spaced sizes from ~N/16 (>= 3) to N."""
    lo = max(3.0, N / 16.0)
    return np.unique(np.round(np.geomspace(lo, N, max(int(n_sizes), 2))).astype(int))


def fit_sizes(M: int, sizes: np.ndarray) -> np.ndarray:
    """The sizes in [M/8, M/2] (at least 3 items) used to fit the spread's power law."""
    sizes = np.asarray(sizes)
    fit = sizes[(sizes >= M / 8.0) & (sizes <= M / 2.0) & (sizes >= 3)]
    if fit.size < 2:
        fit = sizes[(sizes <= M / 2.0) & (sizes >= 3)]
    return fit


@dataclass
class _Plan:
    """Which subsets one group is scored on.

    ``n_point`` n-subsets for the estimate (the whole group when N == n), ``reps[m]`` random
    m-subsets for each curve size m, and ``fit_limit`` M: the spread is fitted on sizes in
    [M/8, M/2].
    """

    N: int
    n: int
    n_point: int
    reps: Dict[int, int]
    fit_limit: int

    @property
    def work(self) -> int:
        return (1 if self.N == self.n else self.n_point) + sum(self.reps.values())


def _spectral_plan(N: int, n: int, n_point: int, n_rep: int, sizes, cost_power: int) -> _Plan:
    """Spectral scores: ``n_rep`` subsets per size up to n, fewer above (cost ~ m^cost_power), 1 at N."""
    reps = {}
    for m in map(int, sizes):
        if m >= N:
            if N > n:
                reps[m] = 1  # when N == n the estimate's subset is the whole group
        elif m <= n:
            reps[m] = n_rep
        else:
            reps[m] = int(max(3, min(n_rep, round(n_rep * (n / m) ** cost_power))))
    return _Plan(N, n, n_point, reps, N)


def _magnitude_plan(N: int, n: int, n_rep: int, n_sizes: int, size_curve: bool) -> _Plan:
    """Magnitude: one n-subset for the estimate; ``n_rep`` subsets per size up to n/2, 3 above; sizes <= n."""
    sizes = curve_sizes(n, n_sizes)
    if not size_curve:
        sizes = fit_sizes(n, sizes)
    reps = {}
    for m in map(int, sizes):
        if m >= n:
            continue  # the n-subset of the estimate is the curve's point at n
        reps[m] = n_rep if m <= n / 2 else 3
    return _Plan(N, n, 1, reps, n)


@contextlib.contextmanager
def _blas_threads(single: bool):
    """One BLAS thread for loops of many small decompositions (threads only add overhead there)."""
    if not single:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


@dataclass
class _GroupReplicates:
    N: int
    n: int
    point: np.ndarray  # (R, k) scores of the n-subsets
    by_size: Dict[int, np.ndarray]  # size -> (B, k)


def _run_replicates(stat, plan: _Plan, rng, tick: Callable[[int], None],
                    first_idx: Optional[np.ndarray] = None) -> Tuple[_GroupReplicates, np.ndarray]:
    """Evaluate ``stat`` on the plan's subsets; returns the replicates and the first n-subset."""
    N, n = plan.N, plan.n
    if N == n:
        point_idx = [np.arange(N)]
    else:
        point_idx = [] if first_idx is None else [first_idx]
        while len(point_idx) < plan.n_point:
            point_idx.append(np.sort(rng.choice(N, n, replace=False)))
    point = []
    by_size = {}
    with _blas_threads(stat.single_thread(n)):
        for idx in point_idx:
            point.append(stat(idx))
            tick(1)
    for m, count in plan.reps.items():
        vals = []
        with _blas_threads(stat.single_thread(m)):
            for _ in range(count):
                idx = np.arange(N) if m >= N else np.sort(rng.choice(N, m, replace=False))
                vals.append(stat(idx))
                tick(1)
        by_size[m] = np.asarray(vals)
    if N == n:
        by_size.setdefault(N, np.asarray(point[:1]))
    return _GroupReplicates(N, n, np.asarray(point), by_size), point_idx[0]


def _population_sd(values: np.ndarray, m: int, N: int) -> np.ndarray:
    """Spread of the score of a fresh m-sample from the spread of m-subsets of N items (fpc)."""
    if values.shape[0] < 3 or m >= N:
        return np.full(values.shape[1], np.nan)
    return np.std(values, axis=0, ddof=1) * math.sqrt((N - 1) / (N - m))


def _power_fit(reps: _GroupReplicates, sizes: Sequence[int]):
    """Per score: (log a, gamma) of s(m) = a m^gamma over ``sizes``; NaN where not estimable."""
    k = reps.point.shape[1]
    intercept = np.full(k, np.nan)
    gamma = np.full(k, np.nan)
    if len(sizes) == 0:
        return intercept, gamma
    logs = np.log(np.asarray(sizes, dtype=np.float64))
    sds = np.array([_population_sd(reps.by_size[int(m)], int(m), reps.N) for m in sizes]).reshape(len(sizes), k)
    for j in range(k):
        ok = np.isfinite(sds[:, j]) & (sds[:, j] > 0)
        if ok.sum() >= 2:
            x, y = logs[ok], np.log(sds[ok, j])
            g = float(np.clip(np.polyfit(x, y, 1)[0], *GAMMA_RANGE))
            gamma[j] = g
            intercept[j] = float(np.mean(y - g * x))
        elif ok.sum() == 1:
            gamma[j] = 0.0
            intercept[j] = float(np.log(sds[ok, j][0]))
        elif np.all(np.isfinite(sds[:, j])):
            gamma[j] = 0.0
            intercept[j] = -np.inf  # every subset scored the same: no spread
    return intercept, gamma


def _predict_sd(intercept: np.ndarray, gamma: np.ndarray, m: int) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(intercept + gamma * math.log(m))


@dataclass
class _GroupSummary:
    estimate: np.ndarray
    se: np.ndarray
    method: str
    gamma: np.ndarray
    replicates: int
    curve: List[Tuple[int, np.ndarray, np.ndarray, int]]  # (size, mean, sd, reps)


def _summarise(reps: _GroupReplicates, plan: _Plan) -> _GroupSummary:
    """Estimate, standard error and sample-size curve of every score of one group.

    R n-subsets averaged: SE^2 = (n/N) s(n)^2 + Var_sub/R; a single random n-subset is an iid
    n-sample, so SE = s(n). s(n) is measured on the n-subsets when N >= 2n and R >= 3, else
    extrapolated with the power law fitted on sizes in [M/8, M/2].
    """
    N, n = reps.N, reps.n
    R = reps.point.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        estimate = reps.point.mean(axis=0)
        usable = [m for m in fit_sizes(plan.fit_limit, np.asarray(sorted(reps.by_size)))
                  if reps.by_size[int(m)].shape[0] >= 3]
        intercept, gamma = _power_fit(reps, usable)
        if N >= 2 * n and R >= 3:
            s_n = _population_sd(reps.point, n, N)
            method = "measured"
        else:
            s_n = _predict_sd(intercept, gamma, n)
            method = "extrapolated"
        if R > 1:
            se = np.sqrt((n / N) * s_n**2 + reps.point.var(axis=0, ddof=1) / R)
        else:
            se = s_n
        curve = []
        for m in sorted(reps.by_size):
            vals = reps.by_size[m]
            measured = _population_sd(vals, m, N) if m <= N / 2 else np.full(estimate.size, np.nan)
            sd = np.where(np.isfinite(measured), measured, _predict_sd(intercept, gamma, m))
            curve.append((int(m), vals.mean(axis=0), sd, int(vals.shape[0])))
        if n not in reps.by_size and n < N:
            curve.append((int(n), estimate, s_n, int(R)))
            curve.sort(key=lambda c: c[0])
    return _GroupSummary(estimate, se, method, gamma, R, curve)


# ---------------------------------------------------------------------------------------------
# the public function
# ---------------------------------------------------------------------------------------------
def compare(
    groups,
    *,
    kernel="cosine",
    qs: Sequence = (0.5, 1.0, 2.0, math.inf),
    reference: Optional[str] = None,
    n: Optional[int] = None,
    n_subsamples: int = 100,
    n_resamples: int = 50,
    level: float = 0.95,
    magnitude: bool = True,
    metric: str = "euclidean",
    n_scales: int = 30,
    t_cut: Optional[float] = None,
    magnitude_replicates: int = 10,
    rnd: bool = False,
    rnd_params: Optional[Mapping[str, Any]] = None,
    size_curve: bool = True,
    n_sizes: int = 8,
    featurizer: str = "default",
    sources: Optional[Mapping[str, Mapping[str, Any]]] = None,
    rng: RandomLike = None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> Comparison:
    r"""Score several groups at the same n, with intervals and a pairwise verdict per score.

    For every group: :math:`VS_q` for each order in ``qs`` (Eq. (1) of [1], orders of [2]),
    IntDiv :math:`= 1 - \frac{1}{n^2}\sum_{ij} K_{ij}`, MagArea
    :math:`= \int_0^{t_{cut}} \mathrm{Mag}(t)\,dt` with :math:`t_{cut}` the median of the
    groups' convergence scales, MagDiff :math:`= \int_0^{t_{ref}} (\mathrm{Mag}_g -
    \mathrm{Mag}_{ref})\,dt` against the ``reference`` group with :math:`t_{ref}` the reference's
    convergence scale (Sec. 3 of [3]), and the RND score [4] when ``rnd=True``.

    Parameters
    ----------
    groups : dict name -> array-like of shape (N_g, d), or Dataset
        The groups' features (dense, or CSR for text n-grams), or a
        :class:`~diversity_core.data.Dataset` with groups (featurized with ``featurizer``).
        Dict values may also be Datasets (one per group).
    kernel : str, Kernel or None, default "cosine"
        The similarity of the Vendi scores and IntDiv. ``None`` takes the featurizer's kernel
        (Dataset input). Data-dependent parameters (the rbf median-distance bandwidth) are fixed
        once on the pooled groups, so every group is measured with the same kernel.
    qs : sequence of float, default (0.5, 1, 2, inf)
        Orders of the Vendi scores in the table.
    reference : str, optional
        The reference group of MagDiff (role ``"reference"``; every other group is a
        ``"candidate"``). Without one, MagDiff is not computed.
    n : int, optional
        The equal number of items; default (and maximum) the smallest group's size.
    n_subsamples : int, default 100
        Random n-subsets averaged for the estimate of a group larger than n (spectral scores).
    n_resamples : int, default 50
        Random subsets per size of the sample-size curve, which also gives the spread used to
        extrapolate intervals (spectral scores).
    level : float, default 0.95
        Confidence level of each interval and each pairwise verdict.
    magnitude : bool, default True
        Compute MagArea (and MagDiff with a ``reference``) and the Mag(t) curves.
    metric : {"euclidean", "cityblock", "cosine"}, default "euclidean"
        Distance of the magnitude computations.
    n_scales : int, default 30
        Evenly spaced scales on [0, t_cut] (and on [0, t_ref]) for the trapezoid integrals.
    t_cut : float, optional
        Upper end of MagArea's interval; default the median of the groups' convergence scales.
        Give it to compare MagArea across separate comparisons.
    magnitude_replicates : int, default 10
        Subsets per size in [n/8, n/2] for the spread of MagArea; magnitude costs ``n_scales``
        factorisations per subset.
    rnd : bool, default False
        Also compute the RND score of each group's first n-subset.
    rnd_params : dict, optional
        Keyword arguments for :func:`~diversity_core.rnd.rnd_score` (``runs``, ``epochs``, ...).
    size_curve : bool, default True
        Compute the sample-size curves (~``n_sizes`` sizes up to each group's size). Without
        them only the sizes needed for the intervals are evaluated.
    n_sizes : int, default 8
        Sizes on each sample-size curve.
    featurizer : str, default "default"
        Featurizer for Dataset input (see :func:`diversity_core.featurizers.featurize`).
    sources : dict, optional
        ``group -> {"source": ..., "hash": ...}`` notes recorded in the settings (the CLI passes
        file names and content hashes).
    rng : None, int or numpy.random.Generator
        Seed of every subset; the integer seed used is recorded in ``settings["seed"]``.
    progress : callable, optional
        ``progress(done, total, message)``.
    **kernel_params
        Kernel parameters, e.g. ``sigma=0.5``.

    Returns
    -------
    Comparison

    Raises
    ------
    DiversityInputError
        Fewer than 2 groups, a group with fewer than 10 items, ``n`` larger than the smallest
        group, an unknown reference, a precomputed kernel, bad parameters.

    Notes
    -----
    The intervals and their justification are described in the module docstring: estimates
    average random n-subsets drawn without replacement (never a bootstrap with duplicates, which
    biases diversity scores down), and standard errors come from subsampling with the
    finite-population correction, measured at n when a group holds at least 2n items and
    extrapolated with a fitted power law otherwise.

    Magnitude: each group's convergence scale t_conv is computed on its first n-subset;
    MagArea's t_cut is their median (or ``t_cut``); MagDiff integrates over [0, t_ref] with
    t_ref the reference's t_conv (both areas on one evenly spaced grid whose step is at most the
    shorter interval / (n_scales - 1); the last step is integrated to t_cut or t_ref linearly).
    MagArea's estimate is that n-subset's area, its interval conditional on t_cut and
    extrapolated from ``magnitude_replicates`` subsets per size in [n/8, n/2] (module notes).

    Item weights of a Dataset are ignored (a :class:`DiversityWarning` says so): every subset
    is a uniform sample of items. Cost and memory: see the module notes; a kernel without a
    feature map holds one N x N float64 matrix per group while that group is scored.

    References
    ----------
    .. [1] Friedman & Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
       Learning", TMLR 2023.
    .. [2] Pasarkar & Dieng, "Cousins of the Vendi Score".
    .. [3] Limbeck, Andreeva, Sarkar & Rieck, "Metric Space Magnitude for Evaluating the
       Diversity of Latent Representations".
    .. [4] "A Flexible Measurement of Diversity in Datasets with Random Network Distillation".
    .. [5] Bertail, Politis & Romano, "On subsampling estimators with unknown rate of
       convergence", JASA 94 (1999).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> cmp = compare({"a": rng.normal(size=(200, 8)), "b": rng.normal(size=(300, 8))},
    ...               magnitude=False, rng=0)
    >>> cmp.n, cmp.pair("VS_1", "a", "b").resolved
    (200, False)
    """
    from . import __version__

    data, notes, featurizer_kernel = _split_groups(groups, featurizer, progress)
    if kernel is None:
        kernel = featurizer_kernel or "cosine"
    kern = get_kernel(kernel, **kernel_params)
    if isinstance(kern, PrecomputedKernel):
        raise DiversityInputError(
            "compare needs features: a precomputed kernel cannot be subsampled jointly with a shared "
            "kernel. Pass each group's features and a kernel name."
        )
    names = list(data)
    X = {g: kern._check(data[g]) for g in names}
    for g in names:
        if X[g].shape[0] < MIN_ITEMS:
            raise DiversityInputError(
                f"group {g!r} has {X[g].shape[0]} items; compare needs at least {MIN_ITEMS} per group "
                "to put an interval on its scores."
            )
    dims = {X[g].shape[1] for g in names}
    if len(dims) > 1:
        detail = ", ".join(f"{g}: {X[g].shape[1]}" for g in names)
        raise DiversityInputError(
            f"groups must share one feature space; their feature dimensions differ ({detail})."
        )
    sizes = {g: int(X[g].shape[0]) for g in names}
    smallest = min(sizes, key=sizes.get)
    if n is None:
        n = sizes[smallest]
    n = _check_int(n, "n", MIN_ITEMS)
    if n > sizes[smallest]:
        raise DiversityInputError(
            f"n={n} exceeds the smallest group ({smallest!r}, {sizes[smallest]} items); every group is "
            f"scored at the same n, so use n <= {sizes[smallest]}."
        )
    qs_arr = np.unique(check_q(qs))
    if qs_arr.size == 0:
        raise DiversityInputError("qs must list at least one order.")
    level = float(level)
    if not 0.5 <= level < 1:
        raise DiversityInputError(f"level must be in [0.5, 1); got {level!r}.")
    n_subsamples = _check_int(n_subsamples, "n_subsamples", 1)
    n_resamples = _check_int(n_resamples, "n_resamples", 3)
    magnitude_replicates = _check_int(magnitude_replicates, "magnitude_replicates", 3)
    n_scales = _check_int(n_scales, "n_scales", 3)
    n_sizes = _check_int(n_sizes, "n_sizes", 2)
    if reference is not None and str(reference) not in names:
        raise DiversityInputError(
            f"unknown reference group {reference!r}; choose one of: {', '.join(map(repr, names))}."
        )
    reference = None if reference is None else str(reference)
    if magnitude:
        check_option(metric, ("euclidean", "cityblock", "cosine"), "metric")
        if t_cut is not None:
            t_cut = check_positive(t_cut, "t_cut")
    seed = _seed_from(rng)
    streams = np.random.SeedSequence(seed).spawn(len(names))
    gens = {g: np.random.default_rng(s) for g, s in zip(names, streams)}

    # one kernel for every group: data-dependent defaults fixed on the pooled items
    pooled = sp.vstack([sp.csr_matrix(X[g]) for g in names]) if any(sp.issparse(X[g]) for g in names) \
        else np.concatenate([X[g] for g in names])
    kern = kern.resolve(pooled)
    del pooled

    # plans and progress
    plans = {}
    mag_plans = {}
    for g in names:
        cs = curve_sizes(sizes[g], n_sizes)
        cs = cs if size_curve else fit_sizes(sizes[g], cs)
        dense = not (kern.has_feature_map and X[g].shape[1] < sizes[g])
        if dense and sizes[g] > DENSE_MAX:  # O(m^3) per subset: the curve stops at DENSE_MAX items
            cs = np.unique(np.concatenate([cs[cs <= DENSE_MAX], [max(n, DENSE_MAX)]]))
        plans[g] = _spectral_plan(sizes[g], n, n_subsamples, n_resamples, cs, 1 if not dense else 3)
        if magnitude:
            mag_plans[g] = _magnitude_plan(sizes[g], n, magnitude_replicates, n_sizes, size_curve)
    total = sum(p.work for p in plans.values())
    if magnitude:
        total += len(names) + sum(p.work for p in mag_plans.values())
    if rnd:
        total += len(names)
    done = [0]

    def ticker(message):
        def tick(k):
            done[0] += k
            report(progress, done[0], total, message)
        return tick

    report(progress, 0, total, "starting")

    # spectral scores
    summaries: Dict[str, _GroupSummary] = {}
    spectra: Dict[str, tuple] = {}
    first_idx: Dict[str, np.ndarray] = {}
    paths: Dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpectrumWarning)
        for g in names:
            stat = _SpectralStats(X[g], kern, qs_arr)
            stat.warn_diagonal(g)
            paths[g] = "dual O(m d^2)" if stat.dual else "kernel matrix O(m^3)"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", KernelDiagonalWarning)
                reps, first_idx[g] = _run_replicates(stat, plans[g], gens[g], ticker(f"Vendi scores of {g}"))
                spec = stat.spectrum(first_idx[g])
            spectra[g] = tuple(float(v) for v in spec.support[:MAX_EIGENVALUES])
            summaries[g] = _summarise(reps, plans[g])

    z = float(_normal_quantile(0.5 + level / 2))
    table_names = [score_name(q) for q in qs_arr] + ["IntDiv"]
    score_rows: Dict[str, Dict[str, dict]] = {g: {} for g in names}
    curve_rows: List[CurvePoint] = []
    profiles: Dict[str, Dict[str, tuple]] = {}
    nt = qs_arr.size + 1
    for g in names:
        s = summaries[g]
        for j, name in enumerate(table_names):
            score_rows[g][name] = _row(g, s, j, name, n, z)
        prof_est = s.estimate[nt:]
        prof_se = s.se[nt:]
        lo, hi = _clip("VS", prof_est - z * prof_se, prof_est + z * prof_se, n)
        profiles[g] = {
            "q": tuple(PROFILE_QS),
            "mean": tuple(float(v) for v in prof_est),
            "ci_low": tuple(float(v) for v in lo),
            "ci_high": tuple(float(v) for v in hi),
        }
        for size, mean, sd, nrep in s.curve:
            for j, name in enumerate(table_names):
                curve_rows.append(CurvePoint(g, name, int(size), _opt(mean[j]), _opt(sd[j]), int(nrep)))

    settings: Dict[str, Any] = {
        "package": "diversity_core",
        "version": __version__,
        "kernel": kern.to_dict(),
        "kernel_description": kern.describe().removesuffix("()"),
        "spectrum_path": paths,
        "q": [("inf" if math.isinf(q) else float(q)) for q in qs_arr],
        "n": n,
        "n_rule": "given" if n != sizes[smallest] else f"smallest group ({smallest})",
        "level": level,
        "seed": seed,
        "seed_rule": "group i (input order) draws its subsets from numpy.random.SeedSequence(seed).spawn(groups)[i]",
        "n_subsamples": n_subsamples,
        "n_resamples": n_resamples,
        "size_curve": bool(size_curve),
        "curve_sizes": {g: sorted(plans[g].reps) for g in names},
        "interval_method": {g: summaries[g].method for g in names},
        "interval_description": INTERVAL_DESCRIPTION,
        "reference": reference,
        "roles": {g: ("reference" if g == reference else "candidate") for g in names} if reference else {},
        "sources": {g: {**notes.get(g, {}), **dict((sources or {}).get(g, {})), "features_hash": _array_hash(X[g]),
                        "items": sizes[g], "dimension": int(X[g].shape[1])} for g in names},
        "magnitude": None,
        "rnd": None,
    }

    # magnitude
    magnitude_curves: Dict[str, Dict[str, tuple]] = {}
    if magnitude:
        mag_names = _magnitude_scores(
            names, X, first_idx, n, gens, mag_plans, metric, n_scales, reference, t_cut, z,
            score_rows, curve_rows, magnitude_curves, settings, ticker,
        )
        table_names += mag_names
    if rnd:
        _rnd_scores(names, X, first_idx, dict(rnd_params or {}), seed, level, score_rows, settings, ticker)
        table_names.append("RND")

    estimates = tuple(
        ScoreEstimate(**score_rows[g][s]) for g in names for s in table_names if s in score_rows[g]
    )
    pairwise = _pairwise(names, table_names, score_rows, z)
    report(progress, total, total, "done")
    return Comparison(
        groups=tuple(names),
        group_sizes=tuple(sizes[g] for g in names),
        n=n,
        level=level,
        scores=tuple(table_names),
        estimates=estimates,
        pairwise=pairwise,
        curves=tuple(curve_rows),
        profiles=profiles,
        magnitude_curves=magnitude_curves,
        spectra=spectra,
        settings=_jsonable(settings),
    )


INTERVAL_DESCRIPTION = (
    "Every score is computed at the same n. A group larger than n is scored on random n-subsets drawn "
    "without replacement (no bootstrap: duplicated items would bias diversity scores down) and the scores "
    "are averaged. Standard errors come from subsampling with the finite-population correction: measured "
    "on the n-subsets when a group holds at least 2n items, otherwise extrapolated from subsets of N/8 to "
    "N/2 items with a fitted power law s(m) = a m^gamma (rate-adaptive subsampling). SE^2 = (n/N) s(n)^2 + "
    "(Monte Carlo variance of the subset average). Intervals are estimate +/- z SE at the chosen level; a "
    "pairwise difference is resolved when its interval (SE combined in quadrature, groups independent) "
    "excludes 0. The level holds per interval and per pair, without a multiplicity correction."
)


def _normal_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def _opt(v) -> Optional[float]:
    v = float(v)
    return v if math.isfinite(v) else None


def _kind(score: str) -> str:
    return "VS" if score.startswith("VS_") else score


def _clip(kind: str, lo, hi, n: int):
    bounds = _BOUNDS.get(kind)
    if bounds is None:
        return lo, hi
    low, high = bounds
    high = float(n) if high == "n" else high
    lo = np.maximum(lo, low)
    hi = np.maximum(hi, low)
    if high is not None:
        lo = np.minimum(lo, high)
        hi = np.minimum(hi, high)
    return lo, hi


def _row(group: str, s: _GroupSummary, j: int, name: str, n: int, z: float) -> dict:
    est, se = float(s.estimate[j]), float(s.se[j])
    lo, hi = _clip(_kind(name), est - z * se, est + z * se, n)
    g = s.gamma[j] if s.method == "extrapolated" else np.nan
    return {
        "group": group, "score": name, "estimate": _opt(est), "se": _opt(se), "ci_low": _opt(lo), "ci_high": _opt(hi),
        "n": int(n), "replicates": int(s.replicates), "interval": s.method if math.isfinite(se) else "none",
        "role": "", "gamma": _opt(g),
    }


def _pairwise(names, table_names, score_rows, z) -> Tuple[PairwiseDifference, ...]:
    out = []
    for score in table_names:
        if score.startswith("MagDiff"):
            continue  # already a difference against the reference
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                ra, rb = score_rows[a].get(score), score_rows[b].get(score)
                if ra is None or rb is None:
                    continue
                if None in (ra["estimate"], rb["estimate"], ra["se"], rb["se"]):
                    out.append(PairwiseDifference(score, a, b, None, None, None, None, False, None))
                    continue
                diff = ra["estimate"] - rb["estimate"]
                se = math.hypot(ra["se"], rb["se"])
                lo, hi = diff - z * se, diff + z * se
                resolved = bool(lo > 0 or hi < 0)
                higher = (a if diff > 0 else b) if resolved else None
                out.append(PairwiseDifference(score, a, b, diff, se, lo, hi, resolved, higher))
    return tuple(out)


def _magnitude_grid(t_cut: float, t_ref: Optional[float], n_scales: int) -> np.ndarray:
    """Evenly spaced scales from 0 covering [0, t_cut] (and [0, t_ref]) with step <= shorter / (n_scales - 1).

    Without a reference this is exactly ``n_scales`` scales on [0, t_cut] (the paper's grid).
    """
    if t_ref is None or t_ref == t_cut:
        return np.linspace(0.0, t_cut, n_scales)
    short, long = sorted((t_cut, t_ref))
    h = short / (n_scales - 1)
    m = int(math.ceil(long / h - 1e-9)) + 1
    return np.arange(m) * h


def _magnitude_scores(names, X, first_idx, n, gens, plans, metric, n_scales, reference, t_cut, z,
                      score_rows, curve_rows, magnitude_curves, settings, ticker) -> List[str]:
    """MagArea (and MagDiff vs the reference) with intervals; fills the rows, curves and settings."""
    t_conv = {}
    for g in names:
        t_conv[g] = _convergence_scale(_rows(X[g], first_idx[g]), metric)
        ticker(f"convergence scale of {g}")(1)
    t_cut_rule = "given"
    if t_cut is None:
        t_cut = float(np.median([t_conv[g] for g in names]))
        t_cut_rule = "median of the groups' t_conv (MagArea)"
    t_ref = float(t_conv[reference]) if reference is not None else None
    grid = _magnitude_grid(t_cut, t_ref, n_scales)
    summaries = {}
    singular, merged = {}, {}
    k = 2 if t_ref is not None else 1
    for g in names:
        stat = _MagnitudeStats(X[g], metric, grid, t_cut, t_ref)
        reps, _ = _run_replicates(stat, plans[g], gens[g], ticker(f"magnitude of {g}"), first_idx=first_idx[g])
        s = _summarise(reps, plans[g])
        summaries[g] = s
        singular[g] = stat.n_singular
        merged[g] = stat.n_merged
        magnitude_curves[g] = {"t": tuple(float(t) for t in grid), "mag": tuple(float(v) for v in reps.point[0, k:])}
        score_rows[g]["MagArea"] = _row(g, s, 0, "MagArea", n, z)
        for size, mean, sd, nrep in s.curve:
            curve_rows.append(CurvePoint(g, "MagArea", int(size), _opt(mean[0]), _opt(sd[0]), int(nrep)))
    out = ["MagArea"]
    if reference is not None:
        ref = summaries[reference]
        a_ref, se_ref = float(ref.estimate[1]), float(ref.se[1])
        for g in names:
            s = summaries[g]
            if g == reference:
                rows = (("MagDiff", 0.0, None), ("MagDiff_rel", 0.0, None))
            else:
                a_g, se_g = float(s.estimate[1]), float(s.se[1])
                diff = a_g - a_ref
                rows = (
                    ("MagDiff", diff, math.hypot(se_g, se_ref)),
                    ("MagDiff_rel", diff / a_ref, math.hypot(se_g / a_ref, a_g * se_ref / a_ref**2)),
                )
            for name, est, err in rows:
                ok = err is not None and math.isfinite(err)
                score_rows[g][name] = {
                    "group": g, "score": name, "estimate": _opt(est), "se": err if ok else None,
                    "ci_low": est - z * err if ok else None, "ci_high": est + z * err if ok else None,
                    "n": int(n), "replicates": int(s.replicates),
                    "interval": s.method if ok else "none",
                    "role": "reference" if g == reference else "candidate", "gamma": None,
                }
        out += ["MagDiff", "MagDiff_rel"]
    settings["magnitude"] = {
        "metric": metric,
        "t_conv": {g: t_conv[g] for g in names},
        "t_conv_rule": "convergence scale (Mag = 0.95 n) of each group's first n-subset",
        "t_cut": t_cut,
        "t_cut_rule": t_cut_rule,
        "t_ref": t_ref,
        "t_ref_rule": None if t_ref is None else f"t_conv of the reference {reference!r} (MagDiff)",
        "n_scales": n_scales,
        "scales": [float(t) for t in grid],
        "replicates_per_size": {g: {str(m): c for m, c in plans[g].reps.items()} for g in names},
        "estimate_rule": "one random n-subset per group (the one the spectra use); SE = s(n) extrapolated "
        "from subsets of n/8 to n/2 items with a fitted power law",
        "singular_evaluations": singular,
        "duplicates_merged": merged,
        "interval_method": {g: summaries[g].method for g in names},
    }
    return out


def _rnd_scores(names, X, first_idx, params, seed, level, score_rows, settings, ticker) -> None:
    """RND of each group's first n-subset, with the interval over runs."""
    from scipy import stats as st

    from .rnd import rnd_score

    results = {}
    for i, g in enumerate(names):
        Xg = _rows(X[g], first_idx[g])
        res = rnd_score(Xg, rng=np.random.SeedSequence([seed, 7, i]).generate_state(1)[0].item(),
                        progress=None, **params)
        results[g] = res
        runs = res.run_scores.size
        if runs > 1:
            se = float(np.std(res.run_scores, ddof=1) / math.sqrt(runs))
            t = float(st.t.ppf(0.5 + level / 2, runs - 1))
            lo, hi = res.score - t * se, res.score + t * se
        else:
            se = lo = hi = None
        score_rows[g]["RND"] = {
            "group": g, "score": "RND", "estimate": float(res.score), "se": se, "ci_low": lo, "ci_high": hi,
            "n": int(Xg.shape[0]), "replicates": int(runs), "interval": "rnd runs" if se is not None else "none",
            "role": "", "gamma": None,
        }
        ticker(f"RND of {g}")(1)
    settings["rnd"] = {
        "settings": {g: results[g].settings for g in names},
        "interval_rule": "Student-t interval over the runs on the group's first n-subset (run-to-run "
        "variability only; the items are fixed)",
    }


def _jsonable(obj):
    """Settings as JSON-native types (tuples to lists, numpy scalars to Python, inf to 'inf')."""
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    return obj
