"""Diversity Explorer's compute core: diversity of datasets and generative-model outputs.

No Streamlit anywhere in this package; the app, the CLI and Python users share it.

Where things live
-----------------
kernels       similarity kernels with unit diagonal (cosine, rbf, tanimoto, ...) and their combinations
spectrum      the eigenvalue spectrum of the density matrix, dense O(n^3) or dual O(n d^2), CPU or CUDA
vendi         Vendi scores of every order q from a spectrum; drop-ins for the ``vendi_score`` package
baselines     IntDiv, average similarity, GMStds
data          loading embeddings, images, text and molecules into a Dataset; the demo datasets
magnitude     metric-space magnitude (a package): Mag(t) by magnitude_at, t_conv, MagArea, MagDiff,
              spread, the magnitude dimension, MagDiff matrices
rnd           the RND score (random network distillation; torch, from the extra [rnd])
compare       comparisons of groups at equal n, with intervals and pairwise verdicts
report        the self-contained HTML report (Jinja2), the plotly figures, PNG/SVG export (kaleido);
              extra [report], imported only when used
featurizers   features for each modality (pixels, EfficientNet-Lite0, n-grams, MiniLM, Morgan) and a registry
exceptions    DiversityInputError, NumericalError, MemoryBudgetError and the named warnings
set_config    the memory budget (also DIVERSITY_MEMORY_BUDGET); get_config, config_context
approx        guaranteed bounds on every VS_q (Lanczos; Nystrom at any n) and sketch estimates (Nystrom, RFF, MinHash)
curation      per-item contributions, near-duplicates, rarity, most-diverse subsets
cli           the ``diversity`` command
compat        drop-in replacements for other packages: ``compat.vendi`` for ``vendi_score`` (not imported here)

Quick start
-----------
>>> import numpy as np, diversity_core as dc
>>> X = np.random.default_rng(0).normal(size=(500, 32))
>>> spec = dc.compute_spectrum(X, kernel="cosine")      # computed once
>>> vs1, vs_inf = spec.vendi(1.0), spec.vendi("inf")    # every order from the cache
"""

from ._config import config_context, get_config, set_config
from .approx import (
    VendiBounds,
    VendiEstimate,
    iter_vendi_bounds,
    nystrom_bounds,
    vendi_bounds,
    vendi_estimate,
    vs_inf_exact,
)
from .baselines import average_similarity, baseline_scores, gmstds, intdiv
from .blocked import VS2Result, vendi_2_exact
from .compare import Comparison, compare
from .curation import (
    ContributionResult,
    DuplicateResult,
    RarityResult,
    SelectionComparison,
    SelectionResult,
    compare_selections,
    find_duplicates,
    item_contributions,
    rarity_scores,
    select_diverse,
)
from .data import DEMOS, Dataset, SkippedItem, list_demos, load_dataset, load_demo
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
from .featurizers import FEATURIZERS, default_kernel, featurize, list_featurizers
from .kernels import KERNELS, Kernel, combine_kernel_matrices, get_kernel, kernel_matrix, median_distance
from .magnitude import (
    MagAreaResult,
    MagDiffMatrix,
    MagDiffResult,
    MagnitudeComparison,
    MagnitudeDimension,
    MagnitudeFunction,
    MagnitudeResult,
    SpreadFunction,
    compare_magnitude,
    convergence_scale,
    mag_area,
    mag_diff,
    mag_diff_matrix,
    magnitude_at,
    magnitude_dimension,
    magnitude_function,
    magnitude_weights,
    spread_at,
    spread_function,
)
from .rnd import PAPER_PRESET, RNDResult, rnd_score
from .spectrum import Spectrum, compute_spectrum, spectrum_from_eigenvalues, spectrum_from_kernel
from .vendi import (
    default_q_grid,
    q_profile,
    score,
    score_dual,
    score_K,
    score_X,
    vendi_from_eigenvalues,
    vendi_score,
)

__version__ = "0.1.0"

__all__ = [
    # configuration
    "set_config",
    "get_config",
    "config_context",
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
]
