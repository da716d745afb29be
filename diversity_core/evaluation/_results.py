"""Frozen results of :mod:`diversity_core.evaluation`, each with a ``to_dict()`` of stable keys.

- :class:`Estimate`: one number with its standard error and interval (or none);
- :class:`PRDCResult`, :class:`PrecisionRecallResult`: precision, recall, density, coverage
  (Naeem et al. 2020) and the improved precision and recall (Kynkaanniemi et al. 2019);
- :class:`FrechetResult`, :class:`KernelDistanceResult`: FD and KD on the given features;
- :class:`VendiRatioResult`, :class:`QualityVendiResult`, :class:`ConditionalVendiResult`: the
  Vendi scores of evaluation (relative to the reference, quality-weighted, per prompt);
- :class:`MemorizationResult`: nearest training items and the authenticity rule;
- :class:`EvaluationResult`: all of them for one generated set, with JSON and CSV writers.

Per-item arrays (which generated item lies in the reference manifold, its nearest training item,
...) are read-only attributes; ``to_dict()`` leaves them out (they are as long as the data).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np

from .._json import dumps, to_jsonable

__all__ = [
    "FORMAT",
    "Estimate",
    "PRDCResult",
    "PrecisionRecallResult",
    "FrechetResult",
    "KernelDistanceResult",
    "VendiRatioResult",
    "QualityVendiResult",
    "ConditionalVendiResult",
    "MemorizationResult",
    "EvaluationResult",
]

#: Identifies the JSON layout of :meth:`EvaluationResult.to_json`.
FORMAT = "diversity-evaluation/1"


def _scalar_dict(obj) -> Dict[str, Any]:
    """The fields of a result that are not arrays, nested results as their ``to_dict()``."""
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            continue
        out[f.name] = v.to_dict() if hasattr(v, "to_dict") else v
    return to_jsonable(out)


def _freeze(obj) -> None:
    """Make the array fields read-only."""
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, np.ndarray):
            v.setflags(write=False)


@dataclass(frozen=True)
class Estimate:
    """One metric's value with its standard error and interval.

    Attributes
    ----------
    value : float
        The metric on all the items given.
    se : float or None
        Standard error (None when no interval was made).
    ci_low, ci_high : float or None
        The interval at ``level``.
    df : float or None
        Degrees of freedom of ``se`` (the interval is ``value -/+ t_df se``); inf for a normal one.
    level : float or None
    interval : str
        How it was made: ``"extrapolated"`` (the subsampling engine of
        :mod:`diversity_core.compare`: spread measured on disjoint subsets and extrapolated to
        the full size), ``"binomial"`` (a proportion of independent items), ``"prompts"`` (a
        Student-t interval over prompts), or ``"none"``.
    """

    value: float
    se: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    df: Optional[float] = None
    level: Optional[float] = None
    interval: str = "none"

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict (field order)."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})

    def text(self, digits: int = 4) -> str:
        """``value [low, high]`` (or the value alone), for tables."""
        v = _fmt(self.value, digits)
        if self.ci_low is None or self.ci_high is None or not math.isfinite(self.ci_low):
            return v
        return f"{v} [{_fmt(self.ci_low, digits)}, {_fmt(self.ci_high, digits)}]"


def _fmt(v, digits: int = 4) -> str:
    """A number for a table: 4 significant digits, 'nan' for missing."""
    if v is None:
        return ""
    v = float(v)
    if math.isnan(v):
        return "nan"
    return f"{v:.{digits}g}"


@dataclass(frozen=True)
class PRDCResult:
    """Precision, recall, density and coverage (Naeem et al. 2020) of generated G against reference R.

    Attributes
    ----------
    precision, recall, density, coverage : Estimate
    k : int
        Neighbours of the k-NN radii.
    n_reference, n_generated : int
    nn_method : {"exact", "approximate"}
        How the neighbours were found (exact blocked search, or an NN-descent index).
    precision_items : ndarray of bool, shape (n_generated,)
        Whether each generated item lies inside some reference item's k-NN ball.
    density_items : ndarray, shape (n_generated,)
        How many reference balls contain each generated item, divided by k.
    recall_items : ndarray of bool, shape (n_reference,)
        Whether each reference item lies inside some generated item's k-NN ball.
    coverage_items : ndarray of bool, shape (n_reference,)
        Whether each reference item's k-NN ball holds a generated item.
    """

    precision: Estimate
    recall: Estimate
    density: Estimate
    coverage: Estimate
    k: int
    n_reference: int
    n_generated: int
    nn_method: str
    precision_items: np.ndarray = field(repr=False)
    density_items: np.ndarray = field(repr=False)
    recall_items: np.ndarray = field(repr=False)
    coverage_items: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class PrecisionRecallResult:
    """Improved precision and recall (Kynkaanniemi et al. 2019) of generated G against reference R.

    ``precision_items`` (per generated item) and ``recall_items`` (per reference item) say which
    items fall inside the other set's k-NN manifold (balls closed: distance <= radius).
    """

    precision: Estimate
    recall: Estimate
    k: int
    n_reference: int
    n_generated: int
    nn_method: str
    precision_items: np.ndarray = field(repr=False)
    recall_items: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class FrechetResult:
    """The Frechet distance between Gaussians fitted to R and G (FID's formula on the given features).

    Attributes
    ----------
    value : Estimate
        :math:`\\lVert\\mu_R - \\mu_G\\rVert^2 + \\mathrm{tr}\\,\\Sigma_R + \\mathrm{tr}\\,\\Sigma_G - 2\\,\\mathrm{tr}\\,(\\Sigma_R^{1/2}\\Sigma_G\\Sigma_R^{1/2})^{1/2}`.
    mean_term : float
        :math:`\\lVert\\mu_R - \\mu_G\\rVert^2`.
    trace_reference, trace_generated, trace_sqrt : float
        :math:`\\mathrm{tr}\\,\\Sigma_R`, :math:`\\mathrm{tr}\\,\\Sigma_G` and the trace of the square root.
    rank_reference, rank_generated : int
        Numerical ranks of the covariances (eigenvalues above ``d eps max``).
    rank_deficient : bool
        Whether either covariance has rank below d (fewer items than features, or collinear
        features): the estimate is then dominated by the sample size, not the distributions.
    d, n_reference, n_generated : int
    """

    value: Estimate
    mean_term: float
    trace_reference: float
    trace_generated: float
    trace_sqrt: float
    rank_reference: int
    rank_generated: int
    rank_deficient: bool
    d: int
    n_reference: int
    n_generated: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields, the estimate as a dict."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class KernelDistanceResult:
    """The kernel distance (KID): unbiased MMD^2 under a polynomial kernel, averaged over subsets.

    Attributes
    ----------
    mean, std : float
        Mean and standard deviation (ddof = 1) of the subsets' unbiased MMD^2, as Binkowski et
        al. report it. ``std`` is the spread of one subset's estimate, not a standard error.
    values : ndarray, shape (n_subsets,)
        Each subset's MMD^2.
    n_subsets, subset_size : int
    degree, gamma, coef0 : float
        The kernel :math:`k(x, y) = (\\gamma\\, x^T y + c_0)^{degree}`.
    """

    mean: float
    std: float
    n_subsets: int
    subset_size: int
    degree: int
    gamma: float
    coef0: float
    values: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars (the per-subset values left out)."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class VendiRatioResult:
    """The Vendi score of G relative to R: VS_q(G) / VS_q(R) at an equal number of items n.

    ``vs_generated`` and ``vs_reference`` are at n items each (the larger set averaged over
    ``n_subsamples`` random n-subsets).
    """

    ratio: Estimate
    vs_generated: float
    vs_reference: float
    n: int
    q: float
    kernel: Dict[str, Any]
    n_subsamples: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class QualityVendiResult:
    """The quality-weighted Vendi score qVS_q = mean quality x VS_q (Nguyen & Dieng 2024)."""

    qvs: float
    vs: float
    mean_quality: float
    q: float
    n: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class ConditionalVendiResult:
    """Diversity given the prompt: von Neumann entropies (nats) and their Vendi scores (Jalali et al. 2024).

    Attributes
    ----------
    h_items, h_prompts, h_joint : float
        H(X), H(T) and H(X, T): entropies of K_X / n, K_T / n and (K_X o K_T) / n.
    h_conditional : float
        H(X | T) = H(X, T) - H(T).
    mutual_information : float
        I(X; T) = H(X) + H(T) - H(X, T).
    vendi, conditional_vendi, information_vendi : float
        exp(H(X)), exp(H(X | T)) and exp(I(X; T)).
    within_prompt : Estimate
        Mean over prompts of the Vendi score of each prompt's items, with a Student-t interval
        over prompts (None when the prompts are features rather than labels).
    per_prompt : dict
        ``label -> {"n": items, "vendi": VS}`` (prompt labels only).
    n_prompts : int
        Distinct prompts (labels), or the numerical rank of the prompt kernel (features).
    prompt_kernel : str
        ``"categorical"`` (same label: 1, else 0) or the prompt kernel's name.
    """

    h_items: float
    h_prompts: float
    h_joint: float
    h_conditional: float
    mutual_information: float
    vendi: float
    conditional_vendi: float
    information_vendi: float
    within_prompt: Optional[Estimate]
    per_prompt: Dict[str, Dict[str, float]]
    n_prompts: int
    prompt_kernel: str
    n: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class MemorizationResult:
    """Nearest training item of every generated item, and the authenticity rule (Alaa et al. 2022).

    A generated item g is *flagged* (a likely copy) when it is closer to its nearest training item
    t than t is to its own nearest other training item: :math:`d(g, t) < d(t, NN_{train}(t))`.

    Attributes
    ----------
    fraction_flagged : Estimate
        Share of generated items flagged, with a binomial (Wilson) interval.
    authenticity : float
        ``1 - fraction_flagged.value``.
    baseline_fraction : Estimate or None
        The same share for the reference items (held-out real data) against the training set:
        what an exact sampler of the data distribution scores (far from zero: 0.1 to 0.6 for
        Gaussian data, falling with dimension). None without a reference.
    excess : float or None
        ``fraction_flagged - baseline_fraction``: the memorisation beyond the baseline.
    n_flagged, n_generated, n_train : int
    metric : {"euclidean", "cosine"}
    nn_method : {"exact", "approximate"}
    nearest : ndarray of int, shape (n_generated,)
        Index of each generated item's nearest training item.
    distance : ndarray, shape (n_generated,)
        Its distance.
    train_radius : ndarray, shape (n_generated,)
        The nearest training item's distance to its own nearest other training item.
    flagged : ndarray of bool, shape (n_generated,)
    """

    fraction_flagged: Estimate
    authenticity: float
    baseline_fraction: Optional[Estimate]
    excess: Optional[float]
    n_flagged: int
    n_generated: int
    n_train: int
    metric: str
    nn_method: str
    nearest: np.ndarray = field(repr=False)
    distance: np.ndarray = field(repr=False)
    train_radius: np.ndarray = field(repr=False)
    flagged: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)

    def top_items(self, m: int = 10) -> List[Dict[str, Any]]:
        """The ``m`` generated items closest to a training item, relative to its radius."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(self.train_radius > 0, self.distance / self.train_radius,
                             np.where(self.distance > 0, np.inf, 0.0))
        order = np.lexsort((np.arange(ratio.size), ratio))[:m]
        return [{"generated": int(i), "train": int(self.nearest[i]), "distance": float(self.distance[i]),
                 "train_radius": float(self.train_radius[i]), "ratio": float(ratio[i]),
                 "flagged": bool(self.flagged[i])} for i in order]


@dataclass(frozen=True)
class EvaluationResult:
    """Every evaluation of one generated set against a reference (and optionally a training set).

    Attributes
    ----------
    prdc : PRDCResult
    improved : PrecisionRecallResult
    frechet : FrechetResult
    kernel_distance : KernelDistanceResult or None
    vendi : VendiRatioResult
    magdiff : dict or None
        MagDiff of G against R (``value``, ``relative``, ``t_cut``, ``area_x``, ``area_y``, ``n``)
        from :func:`diversity_core.magnitude.mag_diff` on random subsets; None when skipped.
    memorization : MemorizationResult or None
    conditional : ConditionalVendiResult or None
    quality : QualityVendiResult or None
    n_reference, n_generated, d : int
    settings : dict
        Every parameter, the seed, the neighbour method and the timings (seconds) per part.
    """

    prdc: PRDCResult
    improved: PrecisionRecallResult
    frechet: FrechetResult
    kernel_distance: Optional[KernelDistanceResult]
    vendi: VendiRatioResult
    magdiff: Optional[Dict[str, Any]]
    memorization: Optional[MemorizationResult]
    conditional: Optional[ConditionalVendiResult]
    quality: Optional[QualityVendiResult]
    n_reference: int
    n_generated: int
    d: int
    settings: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """Stable keys: ``format``, sizes, one entry per metric family, ``settings``."""
        out = {"format": FORMAT}
        out.update(_scalar_dict(self))
        return out

    def to_json(self, path: Union[str, Path, None] = None, *, indent: Optional[int] = 2) -> str:
        """Strict JSON text (infinities as strings, NaN as null); also written atomically to ``path``."""
        text = dumps(self.to_dict(), indent=indent)
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text + "\n")
        return text

    def table_rows(self) -> List[Dict[str, Any]]:
        """One row per metric: ``metric``, ``value``, ``se``, ``ci_low``, ``ci_high``, ``interval``, ``note``."""
        rows: List[Dict[str, Any]] = []

        def add(name: str, est: Union[Estimate, float, None], note: str = "") -> None:
            if est is None:
                return
            e = est if isinstance(est, Estimate) else Estimate(float(est))
            rows.append({"metric": name, "value": e.value, "se": e.se, "ci_low": e.ci_low,
                         "ci_high": e.ci_high, "interval": e.interval, "note": note})

        p, ip = self.prdc, self.improved
        add("precision", p.precision, f"k={p.k}, Naeem et al. 2020")
        add("recall", p.recall, f"k={p.k}")
        add("density", p.density, f"k={p.k}")
        add("coverage", p.coverage, f"k={p.k}")
        add("improved_precision", ip.precision, f"k={ip.k}, Kynkaanniemi et al. 2019")
        add("improved_recall", ip.recall, f"k={ip.k}")
        fd = self.frechet
        add("frechet_distance", fd.value, "rank-deficient covariance" if fd.rank_deficient else f"d={fd.d}")
        if self.kernel_distance is not None:
            kd = self.kernel_distance
            add("kernel_distance", Estimate(kd.mean, se=kd.std, interval="subset sd"),
                f"{kd.n_subsets} subsets of {kd.subset_size}; se column = subset sd")
        v = self.vendi
        add("vendi_generated", v.vs_generated, f"VS_{v.q:g} at n={v.n}")
        add("vendi_reference", v.vs_reference, f"VS_{v.q:g} at n={v.n}")
        add("vendi_ratio", v.ratio, "VS(G) / VS(R)")
        if self.magdiff is not None:
            add("magdiff", self.magdiff["value"], f"MagDiff(G, R) on {self.magdiff['n']} items each")
            add("magdiff_relative", self.magdiff["relative"], "/ MagArea(R)")
        if self.memorization is not None:
            m = self.memorization
            add("memorized_fraction", m.fraction_flagged, f"{m.n_flagged} of {m.n_generated} flagged, Alaa et al. 2022")
            add("authenticity", m.authenticity)
            if m.baseline_fraction is not None:
                add("memorized_baseline", m.baseline_fraction, "reference items against train")
                add("memorized_excess", m.excess, "flagged - baseline")
        if self.conditional is not None:
            c = self.conditional
            add("within_prompt_vendi", c.within_prompt, f"mean over {c.n_prompts} prompts")
            add("conditional_vendi", c.conditional_vendi, "exp H(X|T), Jalali et al. 2024")
            add("information_vendi", c.information_vendi, "exp I(X;T)")
        if self.quality is not None:
            add("quality_vendi", self.quality.qvs, f"mean quality {self.quality.mean_quality:.4g} x VS")
        return rows

    def to_csv(self, path: Union[str, Path, None] = None) -> str:
        """The table of :meth:`table_rows` as CSV (floats with ``repr``, empty cells for missing)."""
        names = ["metric", "value", "se", "ci_low", "ci_high", "interval", "note"]
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        for r in self.table_rows():
            writer.writerow(["" if r[k] is None else (repr(float(r[k])) if isinstance(r[k], (float, np.floating))
                                                      else r[k]) for k in names])
        text = buf.getvalue()
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text)
        return text
