"""Diversity Explorer's compute core: diversity of datasets and generative-model outputs.

No Streamlit anywhere in this package; the app, the CLI and Python users share it.

Where things live
-----------------
distances     distances, similarities and row norms under kernels, magnitude and curation
kernels       similarity kernels with unit diagonal (cosine, rbf, tanimoto, ...) and their combinations
entropy       Hill numbers: the Vendi score of order q from eigenvalues
spectrum      the eigenvalue spectrum of the density matrix, dense O(n^3) or dual O(n d^2), CPU or CUDA
vendi         Vendi scores of every order q from a spectrum; drop-ins for the ``vendi_score`` package
baselines     IntDiv, average similarity, GMStds
data          loading embeddings, images, text and molecules into a Dataset; the demo datasets
magnitude     metric-space magnitude (a package): Mag(t) by magnitude_at, t_conv, MagArea, MagDiff,
              spread, the magnitude dimension, MagDiff matrices
rnd           the RND score (random network distillation; torch, from the extra [rnd])
compare       comparisons of groups at equal n, with intervals and pairwise verdicts; ConfidenceInterval,
              the one interval type of every estimate (``.confidence_interval``)
metrics_table every requested metric of every set at equal n as one tidy DataFrame, the best set per
              metric highlighted (``.style``) and drawn (``.plot()``)
agreement     metric_agreement: the groups' ranking under every metric (and representation) at equal n,
              with the rank flips between metrics and their intervals
report        the self-contained HTML report (Jinja2), the plotly figures, PNG/SVG export (kaleido);
              extra [report], imported only when used
featurizers   features for each modality (pixels, EfficientNet-Lite0, n-grams, MiniLM, Morgan) and a registry
exceptions    DiversityInputError, NumericalError, MemoryBudgetError and the named warnings
set_config    every setting in one place: the memory budget (also DIVERSITY_MEMORY_BUDGET), the result
              store (folder, bound, use, key file) and model downloads; get_config, config_context
helpers       parse_q / format_q / q_key (orders q), frame_csv, format_bytes, format_duration,
              memory_budget, compute_once, MemoryCache / nbytes (the one byte-bounded cache): shared by
              the app and the CLI (their modules stay private)
approx        guaranteed bounds on every VS_q (Lanczos; Nystrom at any n), full-sample SLQ estimates (vendi_slq)
              and sketch estimates (Nystrom, RFF, MinHash)
curation      per-item contributions, near-duplicates, rarity, most-diverse subsets
evaluation    PRDC, FD, KD, memorisation, and the metric pack: RKE mode count, truncated Vendi, TCE/TIE,
              DCScore, CMMD, clipped density/coverage, probabilistic P/R, lexical diversity of texts
differential  what a generated set has that a reference lacks and what it misses: the novelty spectrum
              (C_G - eta C_R), KEN, RRKE, the modes' galleries and their permutation null
semantic_search  search: items ranked by similarity to a text or an image (a CLIP-style hf: folder) or to
              one of the items ("find similar")
sources       row sources read in blocks (arrays, .npy, memmaps, Parquet, shards, Dask); ``streaming``
              the dual path over them; ``blocked`` exact VS_2 for any kernel by blocks
preprocess    standardise, L2-normalise, PCA; ``projection`` 2-D maps (PCA, UMAP); ``sensitivity``
              scores against the kernel's scale
store         the on-disk result store shared by the CLI, the API and the app; ``workers`` worker processes
cli           the ``diversity`` command
compat        drop-in replacements for other packages: ``compat.vendi`` for ``vendi_score``

Importing this package is cheap: every name below is imported from its module the first time it
is used (PEP 562), so ``import diversity_core`` loads neither SciPy's solvers nor scikit-learn,
pandas, pyarrow or torch, and ``diversity --help`` answers at once. ``from diversity_core import
compute_spectrum`` loads what that function's module needs, and nothing else.

Quick start
-----------
>>> import numpy as np, diversity_core as dc
>>> X = np.random.default_rng(0).normal(size=(500, 32))
>>> spec = dc.compute_spectrum(X, kernel="cosine")      # computed once
>>> vs1, vs_inf = spec.vendi(1.0), spec.vendi("inf")    # every order from the cache
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

from ._version import __version__
from .exceptions import (
    ConvergenceWarning,
    DiversityError,
    DiversityInputError,
    DiversityWarning,
    DuplicatesMergedWarning,
    KernelDiagonalWarning,
    MemoryBudgetError,
    MissingDependencyError,
    NumericalError,
    NumericalWarning,
    SpectrumWarning,
)

#: Module (relative to this package) -> the public names it provides, imported on first use.
_LAZY_MODULES: dict[str, tuple[str, ...]] = {
    "_settings": ("set_config", "get_config", "config_context"),
    "_config": ("memory_budget", "format_bytes", "configure_environment"),
    # general-purpose helpers the app, the CLI and the core share (the modules stay private)
    "_orders": ("parse_q", "format_q", "q_key"),
    "_csv": ("frame_csv",),
    "_progress": ("DETAIL_SEPARATOR", "split_message"),
    "_validation": ("check_weights",),
    "_inflight": ("compute_once", "MISSING"),
    "_stats": ("ConfidenceInterval",),
    "_lru": ("MemoryCache", "nbytes"),
    "featurizers._runtime": ("format_duration",),
    "kernels": ("KERNELS", "Kernel", "get_kernel", "kernel_matrix", "median_distance",
                "combine_kernel_matrices"),
    "spectrum": ("Spectrum", "compute_spectrum", "spectrum_from_kernel", "spectrum_from_eigenvalues"),
    "vendi": ("vendi_score", "vendi_from_eigenvalues", "q_profile", "default_q_grid",
              "score", "score_K", "score_X", "score_dual"),
    "blocked": ("vendi_2_exact", "VS2Result"),
    "approx": ("vendi_bounds", "nystrom_bounds", "iter_vendi_bounds", "vendi_estimate", "vs_inf_exact",
               "VendiBounds", "VendiEstimate", "vendi_slq", "iter_vendi_slq", "VendiSLQ",
               "run_plan", "run_plan_to_end", "PlanStep", "PlanResult"),
    "baselines": ("intdiv", "average_similarity", "gmstds", "baseline_scores"),
    "magnitude": ("magnitude_at", "magnitude_weights", "magnitude_function", "convergence_scale",
                  "mag_area", "mag_diff", "compare_magnitude", "mag_diff_matrix", "magnitude_dimension",
                  "spread_function", "spread_at", "MagDiffMatrix", "MagnitudeDimension", "SpreadFunction",
                  "MagnitudeResult", "MagnitudeFunction", "MagAreaResult", "MagDiffResult",
                  "MagnitudeComparison"),
    "rnd": ("rnd_score", "RNDResult", "PAPER_PRESET"),
    "compare": ("compare", "Comparison"),
    "differential": ("novelty_spectrum", "missing_modes", "top_mode_items", "ken_score", "rrke", "mode_null",
                     "novelty_report", "NoveltySpectrum", "ModeNull", "NoveltyReport"),
    "metrics_table": ("metrics_table", "MetricsTable"),
    "agreement": ("metric_agreement", "MetricAgreement"),
    # the metric pack of diversity_core.evaluation (issue 43 item 5)
    "evaluation": ("rke_mode_count", "truncated_vendi", "truncated_entropy", "dcscore", "cmmd",
                   "clipped_density_coverage", "probabilistic_precision_recall", "lexical_diversity",
                   "metric_pack"),
    "data": ("Dataset", "SkippedItem", "load_dataset", "load_demo", "list_demos", "DEMOS"),
    "featurizers": ("FEATURIZERS", "featurize", "list_featurizers", "default_kernel"),
    "curation": ("item_contributions", "find_duplicates", "rarity_scores", "select_diverse",
                 "compare_selections", "ContributionResult", "DuplicateResult", "RarityResult",
                 "SelectionResult", "SelectionComparison"),
    "semantic_search": ("search", "SearchResult"),
}

#: Public name -> the module that defines it.
_LAZY: dict[str, str] = {name: module for module, names in _LAZY_MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import a public name, or a submodule, the first time it is asked for (PEP 562)."""
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # binds itself on this package
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the submodules and what is already bound (for ``dir()`` and completion)."""
    import pkgutil

    submodules = {m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return sorted(set(globals()) | set(__all__) | submodules)


class _CoreModule(types.ModuleType):
    """The package's module type: a public function keeps its name over a subpackage of that name.

    The import system binds every submodule on its parent when it is first imported. Were
    ``diversity_core.compare`` (the subpackage) imported before ``diversity_core.compare`` (the
    function) was first asked for, the module would take the function's place; it is kept out.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CoreModule

__all__ = [
    # configuration
    "set_config",
    "get_config",
    "config_context",
    "memory_budget",
    "format_bytes",
    "configure_environment",
    # helpers shared by the app and the CLI: orders q, CSV export, progress messages, weights, caches
    "parse_q",
    "format_q",
    "q_key",
    "frame_csv",
    "DETAIL_SEPARATOR",
    "split_message",
    "format_duration",
    "check_weights",
    "compute_once",
    "MISSING",
    "MemoryCache",
    "nbytes",
    # kernels
    "KERNELS",
    "Kernel",
    "get_kernel",
    "kernel_matrix",
    "median_distance",
    "combine_kernel_matrices",
    # spectrum and Vendi scores
    "Spectrum",
    "compute_spectrum",
    "spectrum_from_kernel",
    "spectrum_from_eigenvalues",
    "vendi_score",
    "vendi_from_eigenvalues",
    "q_profile",
    "default_q_grid",
    # vendi_score-compatible names
    "score",
    "score_K",
    "score_X",
    "score_dual",
    # beyond the dense limit: exact VS_2 / VS_inf, guaranteed bounds, estimates with error bars
    "vendi_2_exact",
    "VS2Result",
    "vendi_bounds",
    "nystrom_bounds",
    "iter_vendi_bounds",
    "vendi_estimate",
    "vs_inf_exact",
    "VendiBounds",
    "VendiEstimate",
    "vendi_slq",
    "iter_vendi_slq",
    "VendiSLQ",
    "run_plan",
    "run_plan_to_end",
    "PlanStep",
    "PlanResult",
    # baselines
    "intdiv",
    "average_similarity",
    "gmstds",
    "baseline_scores",
    # magnitude (diversity_core.magnitude is the module)
    "magnitude_at",
    "magnitude_weights",
    "magnitude_function",
    "convergence_scale",
    "mag_area",
    "mag_diff",
    "compare_magnitude",
    "mag_diff_matrix",
    "magnitude_dimension",
    "spread_function",
    "spread_at",
    "MagDiffMatrix",
    "MagnitudeDimension",
    "SpreadFunction",
    "MagnitudeResult",
    "MagnitudeFunction",
    "MagAreaResult",
    "MagDiffResult",
    "MagnitudeComparison",
    # RND
    "rnd_score",
    "RNDResult",
    "PAPER_PRESET",
    # comparisons
    "compare",
    "Comparison",
    "ConfidenceInterval",
    # differential spectra: novel and missing modes against a reference
    "novelty_spectrum",
    "missing_modes",
    "top_mode_items",
    "ken_score",
    "rrke",
    "mode_null",
    "novelty_report",
    "NoveltySpectrum",
    "ModeNull",
    "NoveltyReport",
    "metrics_table",
    "MetricsTable",
    "metric_agreement",
    "MetricAgreement",
    # the metric pack: kernel, spectrum, k-NN and lexical metrics of evaluation papers
    "rke_mode_count",
    "truncated_vendi",
    "truncated_entropy",
    "dcscore",
    "cmmd",
    "clipped_density_coverage",
    "probabilistic_precision_recall",
    "lexical_diversity",
    "metric_pack",
    # data and featurizers
    "Dataset",
    "SkippedItem",
    "load_dataset",
    "load_demo",
    "list_demos",
    "DEMOS",
    "FEATURIZERS",
    "featurize",
    "list_featurizers",
    "default_kernel",
    # errors and warnings
    "DiversityError",
    "DiversityInputError",
    "NumericalError",
    "MemoryBudgetError",
    "MissingDependencyError",
    "NumericalWarning",
    "DiversityWarning",
    "KernelDiagonalWarning",
    "SpectrumWarning",
    "DuplicatesMergedWarning",
    "ConvergenceWarning",
    "__version__",
    # curation
    "item_contributions",
    "find_duplicates",
    "rarity_scores",
    "select_diverse",
    "compare_selections",
    "ContributionResult",
    "DuplicateResult",
    "RarityResult",
    "SelectionResult",
    "SelectionComparison",
    # finding items: text-to-image search and "find similar"
    "search",
    "SearchResult",
]
