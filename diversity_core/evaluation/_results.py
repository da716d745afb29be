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
:meth:`MemorizationResult.item_rows` and :meth:`MemorizationResult.items_csv` give the
memorisation test of every generated item as a table (``diversity evaluate --items``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np

from .._csv import csv_text
from .._deprecation import UNSET
from .._display import NotebookDisplay, format_value, short_repr
from .._json import dumps, to_jsonable
from .._stats import ConfidenceInterval, flat_interval_reader, interval_from_ends
from ..exceptions import DiversityInputError

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


@dataclass(frozen=True, init=False)
class Estimate:
    """One metric's value with its standard error and interval.

    Attributes
    ----------
    value : float
        The metric on all the items given.
    se : float or None
        Standard error (None when no interval was made).
    confidence_interval : ConfidenceInterval or None
        The interval (:class:`~diversity_core.ConfidenceInterval`: ``lo, hi =
        e.confidence_interval``, its ``level``); None without one. ``ci_low``, ``ci_high`` and
        ``level`` are its deprecated flat readers; the constructor and :meth:`to_dict` keep
        them as the saved format's keys.
    df : float or None
        Degrees of freedom of ``se`` (the interval is ``value -/+ t_df se``); inf for a normal one.
    interval : str
        How it was made (the word of :attr:`ScoreEstimate.interval
        <diversity_core.compare.ScoreEstimate>`): ``"extrapolated"`` (the subsampling engine of
        :mod:`diversity_core.compare`: spread measured on disjoint subsets and extrapolated to
        the full size), ``"binomial"`` (a proportion of independent items), ``"prompts"`` (a
        Student-t interval over prompts), or ``"none"``.
    note : str
        Why there is no interval when one was asked for (e.g. sets too small for two subset
        sizes); empty otherwise.

    The constructor takes ``(value, se, ci_low, ci_high, df, level, interval, note)`` as saved,
    or ``confidence_interval=`` in place of ``ci_low``, ``ci_high`` and ``level``.
    """

    value: float
    se: Optional[float] = None
    confidence_interval: Optional[ConfidenceInterval] = None
    df: Optional[float] = None
    interval: str = "none"
    note: str = ""

    def __init__(self, value: float, se: Optional[float] = None, ci_low=UNSET, ci_high=UNSET,
                 df: Optional[float] = None, level=UNSET, interval: str = "none", note: str = "", *,
                 confidence_interval: Optional[ConfidenceInterval] = None):
        values = dict(value=value, se=se, confidence_interval=interval_from_ends(confidence_interval, ci_low,
                                                                                 ci_high, level),
                      df=df, interval=interval, note=note)
        for k, v in values.items():
            object.__setattr__(self, k, v)

    ci_low = flat_interval_reader("Estimate", "ci_low")
    ci_high = flat_interval_reader("Estimate", "ci_high")
    level = flat_interval_reader("Estimate", "level")

    def to_dict(self) -> Dict[str, Any]:
        """The saved fields as a dict: ``value, se, ci_low, ci_high, df, level, interval, note``."""
        lo, hi = self.confidence_interval or (None, None)
        level = None if self.confidence_interval is None else self.confidence_interval.level
        return to_jsonable({"value": self.value, "se": self.se, "ci_low": lo, "ci_high": hi, "df": self.df,
                            "level": level, "interval": self.interval, "note": self.note})

    def text(self, digits: int = 4) -> str:
        """``value [low, high]`` (or the value alone), for tables."""
        v = _fmt(self.value, digits)
        lo, hi = self.confidence_interval or (None, None)
        if lo is None or hi is None or not math.isfinite(lo):
            return v
        return f"{v} [{_fmt(lo, digits)}, {_fmt(hi, digits)}]"


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

    def __repr__(self) -> str:
        return short_repr(f"PRDCResult(k={self.k}, n_reference={self.n_reference}, n_generated={self.n_generated}, "
                          f"{self.nn_method})", [
            ("precision", self.precision.text()), ("recall", self.recall.text()),
            ("density", self.density.text()), ("coverage", self.coverage.text()),
        ])

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

    def __repr__(self) -> str:
        return short_repr(f"PrecisionRecallResult(k={self.k}, n_reference={self.n_reference}, "
                          f"n_generated={self.n_generated}, {self.nn_method})",
                          [("precision", self.precision.text()), ("recall", self.recall.text())])

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

    def __repr__(self) -> str:
        return short_repr(f"FrechetResult(d={self.d}, n_reference={self.n_reference}, n_generated={self.n_generated})", [
            ("value", self.value.text()), ("mean_term", self.mean_term),
            ("ranks", f"{self.rank_reference} (reference), {self.rank_generated} (generated)"
                      + ("; rank-deficient" if self.rank_deficient else "")),
        ])

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
    """Diversity given the prompt: kernel entropies of order q (nats) and their Vendi scores (Jalali et al. 2024).

    Attributes
    ----------
    h_items, h_prompts, h_joint : float
        H_q(X), H_q(T) and H_q(X, T): Renyi entropies of order ``q`` of K_X / n, K_T / n and
        (K_X o K_T) / n (von Neumann entropies at q = 1).
    h_conditional : float
        H_q(X | T) = H_q(X, T) - H_q(T).
    mutual_information : float
        I_q(X; T) = H_q(X) + H_q(T) - H_q(X, T).
    vendi, conditional_vendi, information_vendi : float
        exp(H_q(X)) = VS_q, exp(H_q(X | T)) and exp(I_q(X; T)).
    within_prompt : Estimate
        Mean over prompts of the Vendi score (order q) of each prompt's items, with a Student-t
        interval over prompts (None when the prompts are features rather than labels).
    per_prompt : dict
        ``label -> {"n": items, "vendi": VS_q}`` (prompt labels only).
    n_prompts : int
        Distinct prompts (labels), or the numerical rank of the prompt kernel (features).
    prompt_kernel : str
        ``"categorical"`` (same label: 1, else 0) or the prompt kernel's name.
    n : int
    q : float
        The order of every entropy and score above.
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
    q: float = 1.0

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)


@dataclass(frozen=True)
class MemorizationResult:
    """Nearest training item of every generated item, and the calibrated copy flag.

    Each generated item g with nearest training item t has the ratio ``d(g, t) / max(r(t), m)``,
    r(t) being t's distance to its own nearest other training item and m the median of r (Alaa
    et al. 2022's authenticity ratio, its radius floored at the median). g is *flagged* (a likely
    copy) when its ratio is below ``threshold``, calibrated on held-out training items so that at
    most a share ``alpha`` of fresh real items is flagged.

    Attributes
    ----------
    fraction_flagged : Estimate
        Share of generated items flagged, with a binomial (Wilson) interval: the set-level figure,
        to read against ``baseline_fraction`` (:meth:`headline`).
    authenticity : float
        ``1 - fraction_flagged.value``.
    baseline_fraction : Estimate or None
        The same share for the reference items (held-out real data) against the training set:
        what an exact sampler of the data distribution scores (about ``alpha``). None without a
        reference.
    excess : float or None
        ``fraction_flagged - baseline_fraction``: the memorisation beyond the baseline.
    n_flagged, n_generated, n_train : int
    metric : {"euclidean", "cosine"}
    nn_method : {"exact", "approximate"}
    alpha : float
        The false-positive rate asked for.
    threshold : float
        The flag is ``ratio < threshold`` (at most 1).
    median_radius : float
        m, the median of the training items' radii.
    fpr_bound : float
        ``k / (n_calibration + 1)``: the flag's false-positive rate on fresh real items is at
        most this (<= alpha unless the calibration part is too small: see ``note``).
    heldout_fpr : Estimate
        Measured: the share of the check part's training items flagged, each scored against the
        training set without it (a held-out item), with its Wilson interval.
    n_calibration, n_check : int
        Training items that set the threshold, and those that measured ``heldout_fpr``.
    note : str
        Why ``fpr_bound`` exceeds ``alpha`` (too few calibration items), or why nothing can be
        flagged (``threshold`` 0: exact duplicates among held-out items); empty otherwise.
    nearest : ndarray of int, shape (n_generated,)
        Index of each generated item's nearest training item.
    distance : ndarray, shape (n_generated,)
        Its distance.
    similarity : ndarray, shape (n_generated,)
        The cosine similarity of the two items' features (NaN for an all-zero row).
    train_radius : ndarray, shape (n_generated,)
        The nearest training item's distance to its own nearest other training item.
    ratio : ndarray, shape (n_generated,)
        ``distance / max(train_radius, median_radius)`` (0 for 0 / 0, inf for d / 0): the closer
        to 0, the closer a copy.
    flagged : ndarray of bool, shape (n_generated,)

    The arrays as one row per generated item, closest copies first: :meth:`item_rows`,
    :meth:`items_csv`; the flagged ones: :meth:`flagged_items`.
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
    alpha: float
    threshold: float
    median_radius: float
    fpr_bound: float
    heldout_fpr: Estimate
    n_calibration: int
    n_check: int
    note: str
    nearest: np.ndarray = field(repr=False)
    distance: np.ndarray = field(repr=False)
    similarity: np.ndarray = field(repr=False)
    train_radius: np.ndarray = field(repr=False)
    ratio: np.ndarray = field(repr=False)
    flagged: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def __repr__(self) -> str:
        return short_repr(f"MemorizationResult(n_generated={self.n_generated}, n_train={self.n_train}, "
                          f"{self.metric}, {self.nn_method})", [
            ("flagged", _pct_interval(self.fraction_flagged)),
            ("baseline", None if self.baseline_fraction is None else _pct_interval(self.baseline_fraction)),
            ("held-out flagged", _pct_interval(self.heldout_fpr)),
            ("threshold", f"ratio < {_fmt(self.threshold)} (alpha = {self.alpha:g}, bound {_pct(self.fpr_bound)})"),
            ("note", self.note or None), ("per item", "item_rows(), flagged_items()"),
        ])

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)

    def rule(self) -> str:
        """The flag in words: the threshold, how it was set and what it costs on real items."""
        return (f"distance to the nearest training item < {_fmt(self.threshold)} x that item's own "
                f"nearest-neighbour distance (at least the median one, {_fmt(self.median_radius)}); the factor "
                f"calibrated on {self.n_calibration} held-out training items for a false-positive rate on real "
                f"items of at most {_pct(self.fpr_bound)} (alpha = {_pct(self.alpha)})")

    def headline(self) -> str:
        """The set-level figure against its baseline, then the held-out false-positive rate."""
        text = f"{_pct_interval(self.fraction_flagged)} of {self.n_generated} generated items flagged as likely copies"
        if self.baseline_fraction is not None:
            text += (f", against a baseline of {_pct_interval(self.baseline_fraction)} of the "
                     f"reference items: excess {100 * self.excess:+.1f} points")
        text += f"; held-out training items flagged: {_pct_interval(self.heldout_fpr)} of {self.n_check}"
        return text + "."

    def order(self) -> np.ndarray:
        """Generated items from the closest copy: by ratio, then distance, then position."""
        return np.lexsort((np.arange(self.n_generated), self.distance, self.ratio))

    def _pair(self, i: int) -> Dict[str, Any]:
        s = float(self.similarity[i])
        return {"generated": int(i), "train": int(self.nearest[i]), "distance": float(self.distance[i]),
                "similarity": s if math.isfinite(s) else None, "train_radius": float(self.train_radius[i]),
                "ratio": float(self.ratio[i]), "flagged": bool(self.flagged[i])}

    def top_items(self, m: int = 10) -> List[Dict[str, Any]]:
        """The ``m`` generated items closest to a training item relative to its radius, closest first.

        Keys ``generated``, ``train`` (positions), ``distance``, ``similarity``, ``train_radius``,
        ``ratio`` and ``flagged``.
        """
        return [self._pair(int(i)) for i in self.order()[:m]]

    def flagged_items(self) -> List[Dict[str, Any]]:
        """Every flagged generated item, closest copy first (keys as :meth:`top_items`)."""
        return [self._pair(int(i)) for i in self.order() if self.flagged[i]]

    #: Columns of :meth:`items_csv`, in order.
    ITEM_COLUMNS = ("generated", "generated_id", "nearest_train", "nearest_train_id", "distance", "similarity",
                    "train_radius", "ratio", "flagged")

    def item_rows(self, generated_ids=None, train_ids=None, *, order: str = "closest") -> List[Dict[str, Any]]:
        """One row per generated item: its nearest training item and the test, closest copies first.

        Parameters
        ----------
        generated_ids, train_ids : sequence of str, optional
            The items' ids (e.g. ``Dataset.ids``); default: their positions.
        order : {"closest", "input"}, default "closest"
            By ratio (then distance): the flagged items first, closest copy first; or input order.

        Returns
        -------
        list of dict
            Keys :attr:`ITEM_COLUMNS`: ``generated`` and ``nearest_train`` (0-based positions),
            their ids, ``distance`` (in ``metric``), ``similarity`` (the cosine similarity of the
            two items' features; None for an all-zero row), ``train_radius`` (the nearest
            training item's distance to its own nearest other training item), ``ratio``
            (distance / max(radius, median radius); flagged below :attr:`threshold`) and
            ``flagged``.
        """
        if order not in ("closest", "input"):
            raise DiversityInputError(f"order must be 'closest' or 'input'; got {order!r}.")
        for name, ids, n in (("generated_ids", generated_ids, self.n_generated), ("train_ids", train_ids, self.n_train)):
            if ids is not None and len(ids) != n:
                raise DiversityInputError(f"{name} must have one id per item: expected {n}, got {len(ids)}.")
        rows = []
        for i in (self.order() if order == "closest" else range(self.n_generated)):
            p = self._pair(int(i))
            t = p["train"]
            rows.append({
                "generated": p["generated"], "generated_id": str(generated_ids[i]) if generated_ids is not None else str(i),
                "nearest_train": t, "nearest_train_id": str(train_ids[t]) if train_ids is not None else str(t),
                "distance": p["distance"], "similarity": p["similarity"], "train_radius": p["train_radius"],
                "ratio": p["ratio"], "flagged": p["flagged"],
            })
        return rows

    def items_csv(self, path: Union[str, Path, None] = None, *, generated_ids=None, train_ids=None,
                  order: str = "closest") -> str:
        """The rows of :meth:`item_rows` as CSV (floats with ``repr``); also written atomically to ``path``.

        Inside :func:`~diversity_core._atomic.output_transaction` the file joins the transaction.
        """
        rows = self.item_rows(generated_ids, train_ids, order=order)  # ids neutralised against spreadsheet formulas
        text = csv_text(self.ITEM_COLUMNS, ([r[k] for k in self.ITEM_COLUMNS] for r in rows))
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text)
        return text


def _pct_interval(e: Estimate) -> str:
    """``value [low, high]`` of a share as percentages (``n/a`` for a missing end)."""
    lo, hi = e.confidence_interval or (None, None)
    return f"{_pct(e.value)} [{_pct(lo)}, {_pct(hi)}]"


def _pct(v) -> str:
    """A share as a percentage for the memorisation texts (2 significant digits below 10 %)."""
    if v is None:
        return "n/a"
    v = 100.0 * float(v)
    return f"{v:.2g}%" if abs(v) < 10 else f"{v:.1f}%"


@dataclass(frozen=True)
class EvaluationResult(NotebookDisplay):
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

    def _metrics(self) -> List[tuple]:
        """``(metric, Estimate, note, sd)`` for every metric computed, in table order."""
        out: List[tuple] = []

        def add(name: str, est: Union[Estimate, float, None], note: str = "", sd: Optional[float] = None) -> None:
            if est is None:
                return
            out.append((name, est if isinstance(est, Estimate) else Estimate(float(est)), note, sd))

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
            add("kernel_distance", Estimate(kd.mean, interval="subset sd"),
                f"mean ± sd over {kd.n_subsets} subsets of {kd.subset_size}, Binkowski et al. 2018",
                sd=None if not math.isfinite(kd.std) else kd.std)
        v = self.vendi
        add("vendi_generated", v.vs_generated, f"VS_{v.q:g} at n={v.n}")
        add("vendi_reference", v.vs_reference, f"VS_{v.q:g} at n={v.n}")
        add("vendi_ratio", v.ratio, "VS(G) / VS(R)")
        if self.magdiff is not None:
            add("magdiff", self.magdiff["value"], f"MagDiff(G, R) on {self.magdiff['n']} items each")
            add("magdiff_relative", self.magdiff["relative"], "/ MagArea(R)")
        if self.memorization is not None:
            m = self.memorization
            add("memorized_fraction", m.fraction_flagged,
                f"{m.n_flagged} of {m.n_generated} flagged: ratio < {m.threshold:.3g}, calibrated at alpha = {m.alpha:g}")
            add("authenticity", m.authenticity)
            if m.baseline_fraction is not None:
                add("memorized_baseline", m.baseline_fraction, "reference items against train, same rule")
                add("memorized_excess", m.excess, "flagged - baseline")
            add("memorized_heldout_fpr", m.heldout_fpr, f"held-out training items flagged, of {m.n_check}")
        if self.conditional is not None:
            c = self.conditional
            add("within_prompt_vendi", c.within_prompt, f"VS_{c.q:g} mean over {c.n_prompts} prompts")
            add("conditional_vendi", c.conditional_vendi, f"exp H_{c.q:g}(X|T), Jalali et al. 2024")
            add("information_vendi", c.information_vendi, f"exp I_{c.q:g}(X;T)")
        if self.quality is not None:
            add("quality_vendi", self.quality.qvs, f"mean quality {self.quality.mean_quality:.4g} x VS")
        return out

    def table_rows(self) -> List[Dict[str, Any]]:
        """One row per metric: ``metric``, ``value``, ``se``, ``sd``, ``ci_low``, ``ci_high``, ``interval``, ``note``.

        ``sd`` is a spread shown as ``value ± sd`` (the kernel distance's standard deviation over
        its subsets, not a standard error); None for every other metric.
        """
        rows: List[Dict[str, Any]] = []
        for name, e, note, sd in self._metrics():
            lo, hi = e.confidence_interval or (None, None)
            rows.append({"metric": name, "value": e.value, "se": e.se, "sd": sd, "ci_low": lo,
                         "ci_high": hi, "interval": e.interval, "note": note})
        return rows

    # -- notebook display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        """At most ten lines: the sizes, then the headline metrics with their intervals."""
        p = self.prdc
        fields_ = [
            ("precision / recall", f"{p.precision.text()} / {p.recall.text()}"),
            ("density / coverage", f"{p.density.text()} / {p.coverage.text()}"),
            ("frechet_distance", self.frechet.value.text()),
            ("vendi_ratio", f"{self.vendi.ratio.text()} (VS_{self.vendi.q:g} at n={self.vendi.n})"),
        ]
        if self.kernel_distance is not None:
            kd = self.kernel_distance
            fields_.append(("kernel_distance", f"{format_value(kd.mean)} ± {format_value(kd.std)}"))
        if self.magdiff is not None:
            fields_.append(("magdiff", format_value(self.magdiff["value"])))
        if self.memorization is not None:
            fields_.append(("memorized_fraction", _pct_interval(self.memorization.fraction_flagged)))
        if self.conditional is not None:
            fields_.append(("conditional_vendi", format_value(self.conditional.conditional_vendi)))
        if self.quality is not None:
            fields_.append(("quality_vendi", format_value(self.quality.qvs)))
        fields_.append(("all metrics", f"{len(self._metrics())} rows in to_frame()"))
        return short_repr(f"EvaluationResult(n_reference={self.n_reference}, n_generated={self.n_generated}, "
                          f"d={self.d})", fields_)

    def to_frame(self):
        """A tidy pandas DataFrame: one row per metric (the rows of :meth:`table_rows`).

        Columns of :mod:`diversity_core._display`: ``score`` (the metric), ``value``, ``low``,
        ``high``, ``level``, ``kind`` (``"estimate"`` with an interval, and for a number averaged
        over random subsets without one; ``"exact"`` for a number computed on the sets as given),
        then ``se``, ``sd``, ``method`` (how the interval was made) and ``note``.
        """
        from .._display import frame_row, tidy_frame

        # numbers averaged over random subsets (the larger set's Vendi score at n, MagDiff) are estimates
        # even without an interval; exact only when no subset was drawn
        v = self.vendi
        subsampled = {"vendi_generated": v.n < self.n_generated, "vendi_reference": v.n < self.n_reference}
        if self.magdiff is not None:
            drawn = (int(self.magdiff.get("n_reference", 0)) < self.n_reference
                     or int(self.magdiff.get("n_generated", 0)) < self.n_generated)
            subsampled.update(magdiff=drawn, magdiff_relative=drawn)
        rows = []
        for name, e, note, sd in self._metrics():
            ci = e.confidence_interval
            has = ci is not None and ci[0] is not None and math.isfinite(ci[0])
            kind = "estimate" if has or e.interval not in ("none", "") or subsampled.get(name) else "exact"
            rows.append(frame_row(name, e.value, ci if has else None, kind=kind, se=e.se, sd=sd,
                                  method=e.interval, note=note))
        return tidy_frame(rows)

    def plot(self, kind: str = "fidelity_diversity", *, name: str = "generated", reference: Optional[str] = None):
        """The figure of the report and the Compare page's reference role for this one generated set.

        ``kind``: ``"fidelity_diversity"`` (precision/recall and density/coverage planes, default)
        or ``"vendi_ratio"`` (:data:`~diversity_core.report.figures.evaluation.EVALUATION_TITLES`);
        ``name`` labels the set, ``reference`` names the reference in the title. The figure is
        :func:`~diversity_core.report.figures.evaluation.evaluation_figures`' own.
        """
        from .._display import require_plotly
        from ..report.figures.evaluation import EVALUATION_TITLES, evaluation_figures

        require_plotly("EvaluationResult.plot()")
        if kind not in EVALUATION_TITLES:
            raise DiversityInputError(f"unknown figure {kind!r}; choose one of: {', '.join(map(repr, EVALUATION_TITLES))}.")
        return evaluation_figures({str(name): self}, reference=reference)[kind]

    def to_csv(self, path: Union[str, Path, None] = None) -> str:
        """The table of :meth:`table_rows` as CSV (floats with ``repr``, empty cells for missing)."""
        names = ["metric", "value", "se", "sd", "ci_low", "ci_high", "interval", "note"]
        text = csv_text(names, ([r[k] for k in names] for r in self.table_rows()))
        if path is not None:
            from .._atomic import atomic_write

            atomic_write(path, text)
        return text
