"""Frozen results of the metric pack (issue 43 item 5), each with a ``to_dict()`` of stable keys.

Every value that is a sample statistic is an :class:`~diversity_core.evaluation.Estimate` (value,
standard error, :class:`~diversity_core.ConfidenceInterval`); per-item arrays are read-only and
left out of ``to_dict()``, as in :mod:`diversity_core.evaluation._results`.

In a notebook (issue 42, item 1) each result shows a repr of at most ten lines (the headline
numbers with their intervals, arrays by their shape), an HTML table (``_repr_html_``) and a tidy
``to_frame()`` (the convention of :mod:`diversity_core._display`): one row per number, ``kind``
``"estimate"`` with the interval's level where the number carries an interval, ``"exact"``
otherwise, then the columns ``se``, ``method`` (how the interval was made) and ``note``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from .._display import NotebookDisplay, format_array, format_interval, format_kernel, format_value, short_repr
from ._results import Estimate, _freeze, _scalar_dict

__all__ = [
    "RKEResult",
    "TruncatedVendiResult",
    "TruncatedEntropyResult",
    "DCScoreResult",
    "CMMDResult",
    "ClippedDensityCoverageResult",
    "ProbabilisticPRResult",
    "LexicalDiversityResult",
]


def _has_interval(est: Estimate) -> bool:
    """Whether ``est`` carries an interval with finite ends."""
    ci = est.confidence_interval
    return ci is not None and all(end is not None and math.isfinite(float(end)) for end in ci)


def _estimate_text(est: Optional[Estimate]) -> str:
    """``value [low, high] (estimate, 95%)``, or the value alone with why it has no interval."""
    if est is None:
        return "-"
    if _has_interval(est):
        return format_interval(est.value, est.confidence_interval)
    return f"{format_value(est.value)} ({est.note})" if est.note else format_interval(est.value)


def _estimate_row(score: str, est: Estimate, *, group: Any = None, q: Any = None, estimate: bool = False,
                  **extra: Any) -> Dict[str, Any]:
    """A tidy row of an Estimate: ``"estimate"`` with its interval (level included) when it has one.

    Without an interval it is ``"exact"``, unless an interval method was recorded or the value is
    an estimate however computed (``estimate``: on a random subset, by a random sketch): then an
    ``"estimate"`` without ends.
    """
    from .._display import frame_row

    if _has_interval(est):
        interval, kind = est.confidence_interval, None
    else:
        interval = None
        kind = "estimate" if estimate or est.interval not in ("none", "") else "exact"
    return frame_row(score, est.value, interval, group=group, q=q, kind=kind, se=est.se, method=est.interval,
                     note=est.note, **extra)


def _exact_row(score: str, value: Any, *, group: Any = None, q: Any = None, **extra: Any) -> Dict[str, Any]:
    """A tidy row of a number computed exactly (no interval)."""
    from .._display import frame_row

    return frame_row(score, value, None, group=group, q=q, se=None, method="none", note="", **extra)


def _frame(rows: List[Dict[str, Any]]):
    from .._display import tidy_frame

    return tidy_frame(rows)


@dataclass(frozen=True, repr=False)
class RKEResult(NotebookDisplay):
    """The RKE mode count (Jalali et al. 2023): 1 / ||K/n||_F^2, the Vendi score of order 2.

    Attributes
    ----------
    mode_count : Estimate
        RKE-MC :math:`= 1/\\lVert K/n\\rVert_F^2 = \\mathrm{VS}_2`.
    entropy : float
        The order-2 Renyi kernel entropy :math:`\\log \\mathrm{RKE\\text{-}MC}` (nats).
    n : int
    kernel : dict
        The resolved kernel (the rbf bandwidth included).
    method : {"blocked", "dual"}
        How :func:`~diversity_core.vendi_2_exact` summed ``K o K``.
    """

    mode_count: Estimate
    entropy: float
    n: int
    kernel: Dict[str, Any]
    method: str

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"RKEResult(n={self.n}, kernel={format_kernel(self.kernel)}, method={self.method!r})", [
            ("mode_count", _estimate_text(self.mode_count)),
            ("entropy", f"{format_value(self.entropy)} nats (order-2 Renyi kernel entropy)"),
        ])

    def to_frame(self):
        """Tidy rows ``RKE mode count`` (its interval) and ``RKE entropy`` (nats, exact), with ``n``."""
        return _frame([_estimate_row("RKE mode count", self.mode_count, n=self.n),
                       _exact_row("RKE entropy", self.entropy, n=self.n)])


@dataclass(frozen=True, repr=False)
class TruncatedVendiResult(NotebookDisplay):
    """The t-truncated Vendi score (Ospanov & Farnia): VS_q of the top t eigenvalues plus the tail's share.

    Attributes
    ----------
    value : Estimate
    vendi : float
        The untruncated VS_q of the same spectrum.
    t : int
        Eigenvalues kept (the truncation asked for).
    t_used : int
        ``min(t, rank)``: with t at or above the rank nothing is truncated and the value is VS_q.
    tail_mass : float
        :math:`1 - \\sum_{i \\le t} \\lambda_i`, spread evenly over the t kept eigenvalues.
    q : float
    n : int
    kernel : dict
    eigenvalues : ndarray, shape (t_used,)
        The truncated probability vector the score is the Hill number of.
    """

    value: Estimate
    vendi: float
    t: int
    t_used: int
    tail_mass: float
    q: float
    n: int
    kernel: Dict[str, Any]
    eigenvalues: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars (the eigenvalues left out)."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"TruncatedVendiResult(t={self.t}, t_used={self.t_used}, q={format_value(self.q)}, "
                          f"n={self.n}, kernel={format_kernel(self.kernel)})", [
            ("value", _estimate_text(self.value)),
            ("vendi", f"{format_value(self.vendi)} (untruncated VS_q)"),
            ("tail_mass", self.tail_mass),
            ("eigenvalues", format_array(self.eigenvalues)),
        ])

    def to_frame(self):
        """Tidy rows ``truncated Vendi`` (its interval), ``Vendi (untruncated)`` and ``tail mass``, with ``t``, ``t_used``, ``n``."""
        extra = dict(t=self.t, t_used=self.t_used, n=self.n)
        return _frame([_estimate_row("truncated Vendi", self.value, q=float(self.q), **extra),
                       _exact_row("Vendi (untruncated)", self.vendi, q=float(self.q), **extra),
                       _exact_row("tail mass", self.tail_mass, **extra)])


@dataclass(frozen=True, repr=False)
class TruncatedEntropyResult(NotebookDisplay):
    """The truncated Gaussian entropy of the embeddings' covariance (TCE on CLIP, TIE on Inception features).

    Attributes
    ----------
    value : Estimate
        :math:`\\tfrac{t}{2}\\log(2\\pi e) + \\tfrac12 \\sum_{i \\le t} \\log \\lambda_i` (nats).
    t : int
    n, d : int
    eigenvalues : ndarray, shape (t,)
        The t largest eigenvalues of the covariance (ddof = 1), descending.
    """

    value: Estimate
    t: int
    n: int
    d: int
    eigenvalues: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars (the eigenvalues left out)."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"TruncatedEntropyResult(t={self.t}, n={self.n}, d={self.d})", [
            ("value", f"{_estimate_text(self.value)} nats"),
            ("eigenvalues", format_array(self.eigenvalues)),
        ])

    def to_frame(self):
        """One tidy row ``truncated entropy`` (nats, its interval), with ``t``, ``n``, ``d``."""
        return _frame([_estimate_row("truncated entropy", self.value, t=self.t, n=self.n, d=self.d)])


@dataclass(frozen=True, repr=False)
class DCScoreResult(NotebookDisplay):
    """DCScore (Zhu et al. 2025): the trace of the row-softmax of K / tau, in [1, n].

    Attributes
    ----------
    value : Estimate
    tau : float
    n : int
    kernel : dict
    items : ndarray, shape (n,)
        :math:`P_{ii}`: the probability that item i is classified as itself (its share of the score).
    """

    value: Estimate
    tau: float
    n: int
    kernel: Dict[str, Any]
    items: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars (the per-item values left out)."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"DCScoreResult(tau={format_value(self.tau)}, n={self.n}, "
                          f"kernel={format_kernel(self.kernel)})", [
            ("value", _estimate_text(self.value)),
            ("items", format_array(self.items)),
        ])

    def to_frame(self):
        """One tidy row ``DCScore`` (its interval), with ``tau`` and ``n``."""
        return _frame([_estimate_row("DCScore", self.value, tau=self.tau, n=self.n)])


@dataclass(frozen=True, repr=False)
class CMMDResult(NotebookDisplay):
    """CMMD (Jayasumana et al. 2024): scale x MMD^2 under the Gaussian kernel of bandwidth sigma.

    Attributes
    ----------
    value : Estimate
    estimator : {"unbiased", "biased"}
        ``"unbiased"``: the U-statistic (diagonals left out; the paper's estimator);
        ``"biased"``: the V-statistic of the paper's released code (every mean over all pairs).
    sigma, scale : float
    n_reference, n_generated : int
    """

    value: Estimate
    estimator: str
    sigma: float
    scale: float
    n_reference: int
    n_generated: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"CMMDResult({self.estimator}, sigma={format_value(self.sigma)}, "
                          f"scale={format_value(self.scale)}, n_reference={self.n_reference}, "
                          f"n_generated={self.n_generated})", [("value", _estimate_text(self.value))])

    def to_frame(self):
        """One tidy row ``CMMD`` (its interval), with ``estimator``, ``sigma``, ``scale`` and the sizes."""
        return _frame([_estimate_row("CMMD", self.value, estimator=self.estimator, sigma=self.sigma,
                                     scale=self.scale, n_reference=self.n_reference,
                                     n_generated=self.n_generated)])


@dataclass(frozen=True, repr=False)
class ClippedDensityCoverageResult(NotebookDisplay):
    """Clipped density and clipped coverage (Salvy et al. 2025) of generated G against reference R.

    Attributes
    ----------
    clipped_density : Estimate
        Mean clipped per-item density of G, divided by the same mean for R itself; capped at 1
        unless ``can_exceed_one``.
    clipped_coverage : Estimate
        The calibrated coverage: the share of good generated items whose expected clipped
        coverage equals the one measured.
    density_ratio : float
        The clipped density before the cap at 1.
    coverage_raw : float
        The clipped coverage before calibration: mean over R of min(#G in the ball, k) / k.
    reference_density : float
        The mean clipped density of R in itself (the divisor of the density).
    median_radius : float
        The median k-NN radius of R, the cap of every reference radius (feature units).
    k, n_reference, n_generated : int
    density_items : ndarray, shape (n_generated,)
        Each generated item's clipped density min(#clipped reference balls holding it / k, 1).
    coverage_items : ndarray, shape (n_reference,)
        Each reference item's min(#G in its k-NN ball, k) / k.
    """

    clipped_density: Estimate
    clipped_coverage: Estimate
    density_ratio: float
    coverage_raw: float
    reference_density: float
    median_radius: float
    k: int
    n_reference: int
    n_generated: int
    density_items: np.ndarray = field(repr=False)
    coverage_items: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"ClippedDensityCoverageResult(k={self.k}, n_reference={self.n_reference}, "
                          f"n_generated={self.n_generated})", [
            ("clipped_density", _estimate_text(self.clipped_density)),
            ("clipped_coverage", _estimate_text(self.clipped_coverage)),
            ("density_ratio / coverage_raw", f"{format_value(self.density_ratio)} / "
                                             f"{format_value(self.coverage_raw)} (before cap / calibration)"),
            ("reference_density", self.reference_density),
            ("median_radius", self.median_radius),
            ("density_items", format_array(self.density_items)),
            ("coverage_items", format_array(self.coverage_items)),
        ])

    def to_frame(self):
        """Tidy rows: the clipped density and coverage (their intervals), then the exact intermediates.

        ``density ratio`` (before the cap at 1), ``raw coverage`` (before calibration),
        ``reference density`` and ``median radius``; columns ``k``, ``n_reference``, ``n_generated``.
        """
        extra = dict(k=self.k, n_reference=self.n_reference, n_generated=self.n_generated)
        return _frame([_estimate_row("clipped density", self.clipped_density, **extra),
                       _estimate_row("clipped coverage", self.clipped_coverage, **extra),
                       _exact_row("density ratio", self.density_ratio, **extra),
                       _exact_row("raw coverage", self.coverage_raw, **extra),
                       _exact_row("reference density", self.reference_density, **extra),
                       _exact_row("median radius", self.median_radius, **extra)])


@dataclass(frozen=True, repr=False)
class ProbabilisticPRResult(NotebookDisplay):
    """Probabilistic precision and recall (Park & Kim 2023) of generated G against reference R.

    Attributes
    ----------
    precision, recall : Estimate
    k : int
    a : float
        The radius factor: every ball has radius ``a`` times the mean k-NN distance of its set.
    radius_reference, radius_generated : float
        The mean k-NN distances :math:`R_X, R_Y` (feature units).
    n_reference, n_generated : int
    precision_items : ndarray, shape (n_generated,)
        :math:`1 - \\prod_i (1 - f(g_j; r_i))`: each generated item's probability of lying in the
        reference support.
    recall_items : ndarray, shape (n_reference,)
    """

    precision: Estimate
    recall: Estimate
    k: int
    a: float
    radius_reference: float
    radius_generated: float
    n_reference: int
    n_generated: int
    precision_items: np.ndarray = field(repr=False)
    recall_items: np.ndarray = field(repr=False)

    def __post_init__(self):
        _freeze(self)

    def to_dict(self) -> Dict[str, Any]:
        """Scalars and estimates (per-item arrays left out)."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"ProbabilisticPRResult(k={self.k}, a={format_value(self.a)}, "
                          f"n_reference={self.n_reference}, n_generated={self.n_generated})", [
            ("precision", _estimate_text(self.precision)),
            ("recall", _estimate_text(self.recall)),
            ("radii", f"{format_value(self.radius_reference)} (reference), "
                      f"{format_value(self.radius_generated)} (generated)"),
            ("precision_items", format_array(self.precision_items)),
            ("recall_items", format_array(self.recall_items)),
        ])

    def to_frame(self):
        """Tidy rows ``P-precision``, ``P-recall`` (their intervals) and the two mean k-NN radii (exact)."""
        extra = dict(k=self.k, a=self.a, n_reference=self.n_reference, n_generated=self.n_generated)
        return _frame([_estimate_row("P-precision", self.precision, **extra),
                       _estimate_row("P-recall", self.recall, **extra),
                       _exact_row("radius reference", self.radius_reference, **extra),
                       _exact_row("radius generated", self.radius_generated, **extra)])


@dataclass(frozen=True, repr=False)
class LexicalDiversityResult(NotebookDisplay):
    """Lexical diversity of a set of texts: compression ratio, n-gram diversity, self-BLEU.

    Attributes
    ----------
    compression_ratio : Estimate
        UTF-8 bytes of the texts joined by spaces over the bytes of their gzip stream (higher:
        more repetitive, less diverse).
    ngram_diversity : Estimate
        :math:`\\sum_{n=1}^{N} \\#\\text{unique } n\\text{-grams} / \\#n\\text{-grams}`, in (0, N]
        (higher: more diverse).
    self_bleu : Estimate or None
        Mean BLEU-4 of each text against all the others (higher: more homogeneous); None when not
        asked for.
    n : int
        Texts.
    max_n : int
        N, the largest n-gram order of the n-gram diversity (BLEU is always BLEU-4).
    """

    compression_ratio: Estimate
    ngram_diversity: Estimate
    self_bleu: Optional[Estimate]
    n: int
    max_n: int

    def to_dict(self) -> Dict[str, Any]:
        """All fields."""
        return _scalar_dict(self)

    def __repr__(self) -> str:
        return short_repr(f"LexicalDiversityResult(n={self.n}, max_n={self.max_n})", [
            ("compression_ratio", _estimate_text(self.compression_ratio)),
            ("ngram_diversity", _estimate_text(self.ngram_diversity)),
            ("self_bleu", None if self.self_bleu is None else _estimate_text(self.self_bleu)),
        ])

    def to_frame(self):
        """Tidy rows ``compression ratio``, ``n-gram diversity`` and ``self-BLEU`` (when computed), with ``n`` and ``max_n``."""
        extra = dict(n=self.n, max_n=self.max_n)
        rows = [_estimate_row("compression ratio", self.compression_ratio, **extra),
                _estimate_row("n-gram diversity", self.ngram_diversity, **extra)]
        if self.self_bleu is not None:
            rows.append(_estimate_row("self-BLEU", self.self_bleu, **extra))
        return _frame(rows)
