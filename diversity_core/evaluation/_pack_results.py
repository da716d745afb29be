"""Frozen results of the metric pack (issue 43 item 5), each with a ``to_dict()`` of stable keys.

Every value that is a sample statistic is an :class:`~diversity_core.evaluation.Estimate` (value,
standard error, :class:`~diversity_core.ConfidenceInterval`); per-item arrays are read-only and
left out of ``to_dict()``, as in :mod:`diversity_core.evaluation._results`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np

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


@dataclass(frozen=True)
class RKEResult:
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


@dataclass(frozen=True)
class TruncatedVendiResult:
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


@dataclass(frozen=True)
class TruncatedEntropyResult:
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


@dataclass(frozen=True)
class DCScoreResult:
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


@dataclass(frozen=True)
class CMMDResult:
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


@dataclass(frozen=True)
class ClippedDensityCoverageResult:
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


@dataclass(frozen=True)
class ProbabilisticPRResult:
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


@dataclass(frozen=True)
class LexicalDiversityResult:
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
