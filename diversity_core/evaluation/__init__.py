"""Generative-model evaluation next to diversity: fidelity, coverage, distances, copies, prompts.

Reference-based metrics on any feature matrices (R real, G generated), each a public function
that validates and then computes, returning a frozen result with ``to_dict()``; intervals come
from the subsampling engine of :mod:`diversity_core.compare` wherever the metric is a sample
statistic. :func:`evaluate` runs them all in one pass and is what ``diversity evaluate`` calls.

What lives where
----------------
_prdc           :func:`prdc` (precision, recall, density, coverage; Naeem et al. 2020) and
                :func:`improved_precision_recall` (Kynkaanniemi et al. 2019)
_frechet        :func:`frechet_distance` (FID's formula on the given features; Cholesky/eigen
                routes for the trace of the square root, rank-deficiency reported)
_kid            :func:`kernel_distance` (KID: unbiased polynomial-kernel MMD^2 over subsets)
_vendi          :func:`vendi_ratio` (VS(G) / VS(R) at equal n), :func:`quality_weighted_vendi`
                (qVS = mean quality x VS; Nguyen & Dieng 2024)
_conditional    :func:`conditional_vendi` (H(X|T), I(X;T) and the within-prompt mean; Jalali et
                al. 2024)
_memorization   :func:`memorization` (nearest training item; authenticity rule of Alaa et al. 2022)
_api            :func:`evaluate` (all of the above, MagDiff included)
_neighbours     blocked exact k-NN radii and radius tests (fast products, float64 decisions),
                and the pynndescent fallback (rows it leaves short searched exactly)
_intervals      paired subsets for the subsampling engine, sized on the smaller set when needed
_limits         the counts' work bounds and the scale guards of FD and KD (no run without end, no NaN)
_results        :class:`Estimate` and the result classes, :class:`EvaluationResult` (JSON, CSV),
                the per-item memorisation table (:meth:`MemorizationResult.items_csv`)

The metric pack (issue 43): the kernel and k-NN metrics papers now report, on the project's kernels,
spectra and neighbour radii, each with an interval where it is a sample statistic
_rke            :func:`rke_mode_count` (RKE-MC of Jalali et al. 2023 = VS_2, by :func:`~diversity_core.vendi_2_exact`)
_truncated      :func:`truncated_vendi` (Ospanov & Farnia 2024) and :func:`truncated_entropy` (TCE/TIE of
                ``image-diversity``)
_dcscore        :func:`dcscore` (trace of the row-softmax of K / tau; Zhu et al. 2025)
_cmmd           :func:`cmmd` (RBF MMD^2 x 1000, sigma = 10; Jayasumana et al. 2024), unbiased or the
                released code's biased estimator
_clipped        :func:`clipped_density_coverage` (Salvy et al. 2025)
_probabilistic  :func:`probabilistic_precision_recall` (Park & Kim 2023)
_lexical        :func:`lexical_diversity` (compression ratio, n-gram diversity, self-BLEU) of texts
_one_set        intervals of one-set metrics from the subsampling engine
_pack_results   the pack's result classes
_pack           :func:`metric_pack` (every metric of the pack for G against R, as ``diversity evaluate --pack``)

See ``docs/evaluation.md`` for every formula, what each metric is sensitive to and its pitfalls.
"""

from ._api import evaluate
from ._clipped import clipped_density_coverage
from ._cmmd import cmmd
from ._conditional import conditional_vendi
from ._dcscore import dcscore
from ._frechet import frechet_distance
from ._kid import kernel_distance
from ._lexical import lexical_diversity
from ._memorization import memorization
from ._pack import MetricPackResult, metric_pack
from ._pack_results import (
    ClippedDensityCoverageResult,
    CMMDResult,
    DCScoreResult,
    LexicalDiversityResult,
    ProbabilisticPRResult,
    RKEResult,
    TruncatedEntropyResult,
    TruncatedVendiResult,
)
from ._prdc import improved_precision_recall, prdc
from ._probabilistic import probabilistic_precision_recall
from ._results import (
    ConditionalVendiResult,
    Estimate,
    EvaluationResult,
    FrechetResult,
    KernelDistanceResult,
    MemorizationResult,
    PRDCResult,
    PrecisionRecallResult,
    QualityVendiResult,
    VendiRatioResult,
)
from ._rke import rke_mode_count
from ._truncated import truncated_entropy, truncated_vendi
from ._vendi import quality_weighted_vendi, vendi_ratio

__all__ = [
    "evaluate",
    "prdc",
    "improved_precision_recall",
    "frechet_distance",
    "kernel_distance",
    "vendi_ratio",
    "quality_weighted_vendi",
    "conditional_vendi",
    "memorization",
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
    # the metric pack
    "rke_mode_count",
    "truncated_vendi",
    "truncated_entropy",
    "dcscore",
    "cmmd",
    "clipped_density_coverage",
    "probabilistic_precision_recall",
    "lexical_diversity",
    "metric_pack",
    "MetricPackResult",
    "RKEResult",
    "TruncatedVendiResult",
    "TruncatedEntropyResult",
    "DCScoreResult",
    "CMMDResult",
    "ClippedDensityCoverageResult",
    "ProbabilisticPRResult",
    "LexicalDiversityResult",
]
