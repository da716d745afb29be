"""The public function :func:`compare`: validation once, then one private function per stage.

Stages, in order:

1. :func:`_validate`: the groups as feature matrices and every option checked (a :class:`_Job`);
2. :func:`_resolve_kernel`: data-dependent kernel parameters fixed once on the pooled groups;
3. :func:`_plan`: which subsets each group is scored on (spectral and magnitude plans);
4. :func:`_spectral_stage`: Vendi scores, IntDiv and the q-profile of every group, with intervals;
5. :func:`_spectral_rows`: their estimates, sample-size curves and profiles as result rows;
6. :func:`_magnitude_stage`: t_conv, t_cut and t_ref, then MagArea and MagDiff with intervals;
7. :func:`_rnd_stage`: the RND score of each group's first n-subset;
8. :func:`_pairwise`: the verdict on every pair of groups;
9. :func:`_settings`: everything the numbers depend on.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from .._deprecation import UNSET, renamed_argument
from .._json import to_jsonable
from .._progress import ProgressCallback, report
from .._validation import RandomLike, check_option, check_positive, check_q, check_random_state, check_scalar
from .._version import __version__
from ..exceptions import DiversityInputError, DiversityWarning, KernelDiagonalWarning, SpectrumWarning
from ..kernels import Kernel, PrecomputedKernel, get_kernel
from ._results import Comparison, CurvePoint, PairwiseDifference, ScoreEstimate, score_name
from ._scores import (
    MAX_EIGENVALUES,
    PROFILE_QS,
    SMALL_PROBLEM,
    MagnitudeScores,
    SpectralScores,
    convergence_scale_of,
    dense_rows,
    magnitude_grid,
    rnd_interval,
    rnd_of_subset,
    spectral_cost,
    spread_replicates,
)
from ._subsample import (
    INTERVAL_DESCRIPTION,
    Plan,
    SubsampleResult,
    blas_threads,
    curve_sizes,
    fit_sizes,
    magnitude_plan,
    spectral_plan,
    subsample,
    t_quantile,
    welch_df,
)

__all__ = ["compare", "MIN_ITEMS"]

#: Smallest group (and n) for which an interval can be extrapolated.
MIN_ITEMS = 10

#: Rows of one group: score name -> estimate.
_Rows = Dict[str, ScoreEstimate]


def compare(
    groups,
    *,
    kernel="cosine",
    qs: Sequence = (0.5, 1.0, 2.0, math.inf),
    reference: Optional[str] = None,
    n: Optional[int] = None,
    n_subsamples: int = 100,
    n_resamples: int = 50,
    confidence_level: float = 0.95,
    magnitude: bool = True,
    metric: str = "euclidean",
    n_scales: int = 30,
    t_cut: Optional[float] = None,
    magnitude_replicates: int = 30,
    rnd: bool = False,
    rnd_params: Optional[Mapping[str, Any]] = None,
    size_curve: bool = True,
    n_sizes: int = 8,
    featurizer: str = "default",
    sources: Optional[Mapping[str, Mapping[str, Any]]] = None,
    rng: RandomLike = None,
    progress: Optional[ProgressCallback] = None,
    on_stage: Optional[Callable[[Comparison], None]] = None,
    level=UNSET,
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
        extrapolate intervals (spectral scores). When a group's interval is extrapolated, the
        sizes of the fit get up to 4x as many where one subset is cheap (order <= ~250).
    confidence_level : float, default 0.95
        Confidence level of each interval and each pairwise verdict (``level=`` is its
        deprecated name: DeprecationWarning).
    magnitude : bool, default True
        Compute MagArea (and MagDiff with a ``reference``) and the Mag(t) curves.
    metric : {"euclidean", "cityblock", "cosine", "tanimoto"}, default "euclidean"
        Distance of the magnitude computations ("tanimoto" for fingerprints).
    n_scales : int, default 30
        Evenly spaced scales on [0, t_cut] (and on [0, t_ref]) for the trapezoid integrals.
    t_cut : float, optional
        Upper end of MagArea's interval; default the median of the groups' convergence scales.
        Give it to compare MagArea across separate comparisons.
    magnitude_replicates : int, default 30
        Subsets per size in [n/8, n/2] for the spread of MagArea; magnitude costs ``n_scales``
        factorisations per subset. Fewer make the interval wider (fewer degrees of freedom),
        not less valid.
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
    on_stage : callable, optional
        ``on_stage(partial)`` after each stage but the last, with the :class:`Comparison` of the
        stages done so far: the Vendi scores and their intervals first, then magnitude (RND comes
        last). ``partial.settings["stages_pending"]`` names the stages still to come, so a
        meeting sees the first numbers without waiting for the slowest metric. The return value
        is the full comparison, as without it.
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
    The intervals and their justification are described in the notes of
    :mod:`diversity_core.compare`: estimates average random n-subsets drawn without replacement
    (never a bootstrap with duplicates, which biases diversity scores down), and standard errors
    come from subsampling: measured on the n-subsets (finite-population correction) when a group
    holds at least 2n items, otherwise extrapolated with a power law fitted to the spreads of
    disjoint blocks of smaller sizes. Intervals and pairwise verdicts use the Student-t quantile
    with the standard error's effective degrees of freedom (its Monte Carlo noise), so a verdict
    stays calibrated when the spread was estimated from few subsets (``docs/comparisons.md``
    has the measured calibration).

    Magnitude: each group's convergence scale t_conv is computed on its first n-subset;
    MagArea's t_cut is their median (or ``t_cut``); MagDiff integrates over [0, t_ref] with
    t_ref the reference's t_conv (both areas on one evenly spaced grid whose step is at most the
    shorter interval / (n_scales - 1); the last step is integrated to t_cut or t_ref linearly).
    MagArea's estimate is that n-subset's area, its interval conditional on t_cut and
    extrapolated from ``magnitude_replicates`` subsets per size in [n/8, n/2] (package notes):
    it covers the sampling of the items at that t_cut, not a rerun with another t_cut, while
    a pairwise difference (both groups on one t_cut) is calibrated.

    Item weights of a Dataset are ignored (a :class:`DiversityWarning` says so): every subset
    is a uniform sample of items. Cost and memory: see the package notes; a kernel without a
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
    level = renamed_argument(confidence_level, level, new="confidence_level", old="level", default=0.95)
    job = _validate(
        groups, kernel=kernel, kernel_params=kernel_params, qs=qs, reference=reference, n=n,
        n_subsamples=n_subsamples, n_resamples=n_resamples, level=level, magnitude=magnitude, metric=metric,
        n_scales=n_scales, t_cut=t_cut, magnitude_replicates=magnitude_replicates, rnd=rnd, rnd_params=rnd_params,
        size_curve=size_curve, n_sizes=n_sizes, featurizer=featurizer, sources=sources, rng=rng, progress=progress,
    )
    kern = _resolve_kernel(job)
    plans = _plan(job, kern)
    tracker = _Progress(progress, plans.total)
    tracker.start()
    gens = _generators(job.seed, job.names)

    spectral = _spectral_stage(job, kern, plans.spectral, gens, tracker)
    first = {g: res.first_subset for g, res in spectral.results.items()}
    rows, curves, profiles = _spectral_rows(job, spectral.results)
    table_names = _spectral_names(job.qs)
    stages = ["spectral"] + (["magnitude"] if job.magnitude else []) + (["rnd"] if job.rnd else [])

    def assemble(mag, rnd_out, done: int) -> Comparison:
        """The comparison of the stages finished so far (``settings["stages_pending"]`` names the rest)."""
        settings = _settings(job, kern, plans, spectral, mag, rnd_out, __version__)
        if done < len(stages):
            settings = {**settings, "stages_pending": stages[done:]}
        estimates = tuple(rows[g][s] for g in job.names for s in table_names if s in rows[g])
        return Comparison(
            groups=job.names,
            group_sizes=tuple(job.sizes[g] for g in job.names),
            n=job.n,
            confidence_level=job.level,
            scores=tuple(table_names),
            estimates=estimates,
            pairwise=_pairwise(job.names, table_names, rows, job.level),
            curves=tuple(curves),
            profiles=profiles,
            magnitude_curves={} if mag is None else mag.magnitude_curves,
            spectra=spectral.spectra,
            settings=settings,
        )

    if on_stage is not None and len(stages) > 1:
        on_stage(assemble(None, None, 1))
    mag = _magnitude_stage(job, first, plans.magnitude, gens, tracker) if job.magnitude else None
    if mag is not None:
        for g in job.names:
            rows[g].update(mag.rows[g])
        curves += mag.curves
        table_names += mag.names
        if on_stage is not None and len(stages) > 2:
            on_stage(assemble(mag, None, 2))
    rnd_out = _rnd_stage(job, first, tracker) if job.rnd else None
    if rnd_out is not None:
        for g in job.names:
            rows[g]["RND"] = rnd_out.rows[g]
        table_names.append("RND")
    result = assemble(mag, rnd_out, len(stages))
    tracker.finish()
    return result


# ---------------------------------------------------------------------------------------------
# 1. validation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Job:
    """The validated inputs of one comparison (features per group, options, seed)."""

    names: Tuple[str, ...]
    X: Dict[str, Any]
    notes: Dict[str, dict]
    kern: Kernel
    sizes: Dict[str, int]
    smallest: str
    n: int
    qs: np.ndarray
    level: float
    n_subsamples: int
    n_resamples: int
    magnitude: bool
    metric: str
    n_scales: int
    t_cut: Optional[float]
    magnitude_replicates: int
    rnd: bool
    rnd_params: Dict[str, Any]
    size_curve: bool
    n_sizes: int
    reference: Optional[str]
    sources: Dict[str, Mapping[str, Any]]
    seed: int


def _validate(groups, *, kernel, kernel_params, qs, reference, n, n_subsamples, n_resamples, level, magnitude,
              metric, n_scales, t_cut, magnitude_replicates, rnd, rnd_params, size_curve, n_sizes, featurizer,
              sources, rng, progress) -> _Job:
    """Check every input once; raise :class:`DiversityInputError` with the fix on the first problem."""
    data, notes, featurizer_kernel = _split_groups(groups, featurizer, progress)
    if kernel is None:
        kernel = featurizer_kernel or "cosine"
    kern = get_kernel(kernel, **kernel_params)
    if isinstance(kern, PrecomputedKernel):
        raise DiversityInputError(
            "compare needs features: a precomputed kernel cannot be subsampled jointly with a shared "
            "kernel. Pass each group's features and a kernel name."
        )
    names = tuple(data)
    X = {g: kern.validate(data[g]) for g in names}
    for g in names:
        if X[g].shape[0] < MIN_ITEMS:
            raise DiversityInputError(
                f"group {g!r} has {X[g].shape[0]} items; compare needs at least {MIN_ITEMS} per group "
                "to put an interval on its scores."
            )
    if len({X[g].shape[1] for g in names}) > 1:
        detail = ", ".join(f"{g}: {X[g].shape[1]}" for g in names)
        raise DiversityInputError(
            f"groups must share one feature space; their feature dimensions differ ({detail})."
        )
    sizes = {g: int(X[g].shape[0]) for g in names}
    smallest = min(sizes, key=sizes.get)
    n = check_scalar(sizes[smallest] if n is None else n, "n", int, min_val=MIN_ITEMS)
    if n > sizes[smallest]:
        raise DiversityInputError(
            f"n={n} exceeds the smallest group ({smallest!r}, {sizes[smallest]} items); every group is "
            f"scored at the same n, so use n <= {sizes[smallest]}."
        )
    qs_arr = np.unique(check_q(qs))
    if qs_arr.size == 0:
        raise DiversityInputError("qs must list at least one order.")
    level = check_scalar(level, "confidence_level", float)
    if not 0.5 <= level < 1:
        raise DiversityInputError(f"confidence_level must be in [0.5, 1); got {level!r}.")
    counts = {
        name: check_scalar(value, name, int, min_val=low)
        for name, value, low in (("n_subsamples", n_subsamples, 1), ("n_resamples", n_resamples, 3),
                                 ("magnitude_replicates", magnitude_replicates, 3), ("n_scales", n_scales, 3),
                                 ("n_sizes", n_sizes, 2))
    }
    if reference is not None and str(reference) not in names:
        raise DiversityInputError(
            f"unknown reference group {reference!r}; choose one of: {', '.join(map(repr, names))}."
        )
    if magnitude:
        check_option(metric, ("euclidean", "cityblock", "cosine", "tanimoto"), "metric")
        if t_cut is not None:
            t_cut = check_positive(t_cut, "t_cut")
    return _Job(
        names=names, X=X, notes=notes, kern=kern, sizes=sizes, smallest=smallest, n=n, qs=qs_arr, level=level,
        magnitude=bool(magnitude), metric=metric, t_cut=t_cut, rnd=bool(rnd), rnd_params=dict(rnd_params or {}),
        size_curve=bool(size_curve), reference=None if reference is None else str(reference),
        sources={g: dict(v) for g, v in (sources or {}).items()}, seed=_seed_from(rng), **counts,
    )


def _split_groups(groups, featurizer: str, progress) -> Tuple[Dict[str, Any], Dict[str, dict], Optional[str]]:
    """Normalise ``groups`` to ``{name: features}``; also per-group source notes and the featurizer's kernel."""
    from ..data import Dataset

    if isinstance(groups, Dataset):
        from ..featurizers import default_kernel, featurize, resolve_featurizer

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
            from ..featurizers import featurize, resolve_featurizer

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
        from ..featurizers import default_kernel

        kernel = default_kernel(used.pop())
    return out, notes, kernel


def _warn_weights(dataset) -> None:
    """Item weights are ignored by compare: say so (pointing at the caller of compare)."""
    if dataset.weights is not None:
        warnings.warn(
            DiversityWarning(
                f"dataset {dataset.name!r} has item weights; compare ignores them (every subset is a uniform "
                "sample of items). Use vendi_score(..., weights=...) for a weighted score."
            ),
            stacklevel=5,
        )


def _seed_from(rng: RandomLike) -> int:
    """A recorded integer seed: the int given, or one drawn from the Generator / fresh entropy."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise DiversityInputError(f"rng must be a non-negative int seed; got {rng}.")
        return int(rng)
    return int(check_random_state(rng).integers(2**63 - 1))


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


# ---------------------------------------------------------------------------------------------
# 2. kernel, 3. plans, progress
# ---------------------------------------------------------------------------------------------
def _resolve_kernel(job: _Job) -> Kernel:
    """One kernel for every group: data-dependent defaults (the rbf bandwidth) fixed on the pooled items."""
    X = [job.X[g] for g in job.names]
    pooled = sp.vstack([sp.csr_matrix(x) for x in X]) if any(sp.issparse(x) for x in X) else np.concatenate(X)
    return job.kern.resolve(pooled)


@dataclass(frozen=True)
class _Plans:
    """The subsets every group is scored on, and the number of evaluations in all."""

    spectral: Dict[str, Plan]
    magnitude: Dict[str, Plan]
    total: int


def _plan(job: _Job, kern: Kernel) -> _Plans:
    """Spectral and magnitude plans of every group (curve sizes, replicates per size)."""
    spectral, mag = {}, {}
    for g in job.names:
        N = job.sizes[g]
        sizes = curve_sizes(N, job.n_sizes)
        sizes = sizes if job.size_curve else fit_sizes(N, sizes)
        sizes, cost_power = spectral_cost(kern, N, job.X[g].shape[1], job.n, sizes)
        spread = spread_replicates(kern, N, job.X[g].shape[1], fit_sizes(N, sizes), job.n_resamples)
        spectral[g] = spectral_plan(N, job.n, job.n_subsamples, job.n_resamples, sizes, cost_power, spread)
        if job.magnitude:
            mag[g] = magnitude_plan(N, job.n, job.magnitude_replicates, job.n_sizes, job.size_curve)
    total = sum(p.work for p in spectral.values())
    if job.magnitude:
        total += len(job.names) + sum(p.work for p in mag.values())
    if job.rnd:
        total += len(job.names)
    return _Plans(spectral, mag, total)


def _generators(seed: int, names: Sequence[str]) -> Dict[str, np.random.Generator]:
    """One independent stream per group: group i draws from ``SeedSequence(seed).spawn(groups)[i]``."""
    return {g: np.random.default_rng(s) for g, s in zip(names, np.random.SeedSequence(seed).spawn(len(names)))}


class _Progress:
    """Counts finished evaluations and reports them as ``progress(done, total, message)``."""

    def __init__(self, callback: Optional[ProgressCallback], total: int):
        self.callback, self.total, self.done = callback, total, 0

    def start(self) -> None:
        """Report 0 of the total."""
        report(self.callback, 0, self.total, "starting")

    def ticker(self, message: str) -> Callable[[int], None]:
        """A ``tick(k)`` that counts k more evaluations under ``message``."""

        def tick(k: int) -> None:
            self.done += k
            report(self.callback, self.done, self.total, message)

        return tick

    def finish(self) -> None:
        """Report the total as done."""
        report(self.callback, self.total, self.total, "done")


# ---------------------------------------------------------------------------------------------
# 4.-5. spectral scores
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _SpectralOutcome:
    """Engine results, leading eigenvalues of the first n-subset and spectrum path, per group."""

    results: Dict[str, SubsampleResult]
    spectra: Dict[str, tuple]
    paths: Dict[str, str]


def _spectral_stage(job: _Job, kern: Kernel, plans: Dict[str, Plan], gens, tracker: _Progress) -> _SpectralOutcome:
    """VS_q, IntDiv and the q-profile of every group on its plan's subsets, with intervals."""
    results, spectra, paths = {}, {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpectrumWarning)
        for g in job.names:
            stat = SpectralScores(job.X[g], kern, job.qs)
            stat.warn_diagonal(g, stacklevel=3)
            paths[g] = stat.path
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", KernelDiagonalWarning)  # said once above
                res = subsample(stat, plans[g], gens[g], confidence_level=job.level, bounds=stat.bounds(job.n),
                                tick=tracker.ticker(f"Vendi scores of {g}"))
                spec = stat.spectrum(res.first_subset)
            spectra[g] = tuple(float(v) for v in spec.support[:MAX_EIGENVALUES])
            results[g] = res
    return _SpectralOutcome(results, spectra, paths)


def _spectral_names(qs: np.ndarray) -> List[str]:
    """Table names of the spectral scores, in the order of :class:`SpectralScores` outputs."""
    return [score_name(q) for q in qs] + ["IntDiv"]


def _spectral_rows(job: _Job, results: Dict[str, SubsampleResult]):
    """Rows ``{group: {score: ScoreEstimate}}``, curve points and q-profiles of the spectral scores."""
    names = _spectral_names(job.qs)
    nt = len(names)
    rows: Dict[str, _Rows] = {}
    curves: List[CurvePoint] = []
    profiles: Dict[str, Dict[str, tuple]] = {}
    for g in job.names:
        res = results[g]
        rows[g] = {name: _estimate_row(g, res, j, name, job.n) for j, name in enumerate(names)}
        ci = res.confidence_interval
        profiles[g] = {
            "q": tuple(PROFILE_QS),
            "mean": tuple(float(v) for v in res.estimate[nt:]),
            "ci_low": tuple(float(v) for v in ci.low[nt:]),
            "ci_high": tuple(float(v) for v in ci.high[nt:]),
        }
        for p in res.curve:
            for j, name in enumerate(names):
                curves.append(CurvePoint(g, name, int(p.size), _opt(p.mean[j]), _opt(p.sd[j]), int(p.replicates)))
    return rows, curves, profiles


def _estimate_row(group: str, res: SubsampleResult, j: int, name: str, n: int) -> ScoreEstimate:
    """The estimate of score ``j`` of an engine result, with its (clipped) interval."""
    se = float(res.standard_error[j])
    gamma = res.gamma[j] if res.method == "extrapolated" else np.nan
    return ScoreEstimate(
        group=group, score=name, estimate=_opt(res.estimate[j]), se=_opt(se),
        ci_low=_opt(res.confidence_interval.low[j]), ci_high=_opt(res.confidence_interval.high[j]),
        n=int(n), replicates=int(res.replicates), interval=res.method if math.isfinite(se) else "none",
        role="", gamma=_opt(gamma), df=_opt_df(res.df[j]),
    )


def _opt(v) -> Optional[float]:
    """A finite float, or None for NaN and infinities (a score that could not be computed)."""
    v = float(v)
    return v if math.isfinite(v) else None


def _opt_df(v) -> Optional[float]:
    """Degrees of freedom as a float (inf kept: an SE without Monte Carlo noise), None for NaN."""
    v = float(v)
    return None if math.isnan(v) else v


def _df_of(row: ScoreEstimate) -> float:
    """A row's degrees of freedom; inf (the normal quantile) when none was recorded."""
    return math.inf if row.df is None else float(row.df)


# ---------------------------------------------------------------------------------------------
# 6. magnitude
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _MagnitudeOutcome:
    """MagArea (and MagDiff) rows, curve points, Mag(t) curves and the magnitude settings."""

    names: List[str]
    rows: Dict[str, _Rows]
    curves: List[CurvePoint]
    magnitude_curves: Dict[str, Dict[str, tuple]]
    settings: Dict[str, Any] = field(default_factory=dict)


def _magnitude_stage(job: _Job, first: Dict[str, np.ndarray], plans: Dict[str, Plan], gens,
                     tracker: _Progress) -> _MagnitudeOutcome:
    """MagArea on a shared t_cut and MagDiff against the reference, with intervals."""
    names, n, reference = job.names, job.n, job.reference
    t_conv = {}
    with blas_threads(n <= SMALL_PROBLEM):
        for g in names:
            t_conv[g] = convergence_scale_of(job.X[g], first[g], job.metric)
            tracker.ticker(f"convergence scale of {g}")(1)
    t_cut, t_cut_rule = job.t_cut, "given"
    if t_cut is None:
        t_cut = float(np.median([t_conv[g] for g in names]))
        t_cut_rule = "median of the groups' t_conv (MagArea)"
    t_ref = float(t_conv[reference]) if reference is not None else None
    grid = magnitude_grid(t_cut, t_ref, job.n_scales)
    k = 2 if t_ref is not None else 1  # outputs before the Mag(t) values
    results, singular, merged = {}, {}, {}
    rows: Dict[str, _Rows] = {g: {} for g in names}
    curves: List[CurvePoint] = []
    magnitude_curves = {}
    for g in names:
        stat = MagnitudeScores(job.X[g], job.metric, grid, t_cut, t_ref)
        res = subsample(stat, plans[g], gens[g], confidence_level=job.level, bounds=stat.bounds(n),
                        first_subset=first[g], tick=tracker.ticker(f"magnitude of {g}"))
        results[g] = res
        singular[g], merged[g] = stat.n_singular, stat.n_merged
        magnitude_curves[g] = {"t": tuple(float(t) for t in grid),
                               "mag": tuple(float(v) for v in res.subsample_distribution[0, k:])}
        rows[g]["MagArea"] = _estimate_row(g, res, 0, "MagArea", n)
        for p in res.curve:
            curves.append(CurvePoint(g, "MagArea", int(p.size), _opt(p.mean[0]), _opt(p.sd[0]), int(p.replicates)))
    out = ["MagArea"]
    if reference is not None:
        for g in names:
            rows[g].update(_magdiff_rows(g, results[g], results[reference], reference, n, job.level))
        out += ["MagDiff", "MagDiff_rel"]
    settings = {
        "metric": job.metric,
        "t_conv": {g: t_conv[g] for g in names},
        "t_conv_rule": "convergence scale (Mag = 0.95 n) of each group's first n-subset",
        "t_cut": t_cut,
        "t_cut_rule": t_cut_rule,
        "t_ref": t_ref,
        "t_ref_rule": None if t_ref is None else f"t_conv of the reference {reference!r} (MagDiff)",
        "n_scales": job.n_scales,
        "scales": [float(t) for t in grid],
        "replicates_per_size": {g: {str(m): c for m, c in plans[g].reps.items()} for g in names},
        "estimate_rule": "one random n-subset per group (the one the spectra use); SE = s(n) extrapolated "
        "from subsets of n/8 to n/2 items with a fitted power law",
        "singular_evaluations": singular,
        "duplicates_merged": merged,
        "interval_method": {g: results[g].method for g in names},
    }
    return _MagnitudeOutcome(out, rows, curves, magnitude_curves, settings)


def _magdiff_rows(g: str, res: SubsampleResult, ref: SubsampleResult, reference: str, n: int,
                 level: float) -> _Rows:
    """MagDiff = area_g - area_ref on [0, t_ref] and MagDiff_rel = MagDiff / area_ref, SEs in quadrature.

    Degrees of freedom by Welch-Satterthwaite from the two areas' SE components.
    """
    if g == reference:
        values = (("MagDiff", 0.0, None, None), ("MagDiff_rel", 0.0, None, None))
    else:
        a_ref, se_ref, df_ref = float(ref.estimate[1]), float(ref.standard_error[1]), float(ref.df[1])
        a_g, se_g, df_g = float(res.estimate[1]), float(res.standard_error[1]), float(res.df[1])
        diff = a_g - a_ref
        # delta method for the ratio (a_g - a_ref) / a_ref = a_g / a_ref - 1
        rel = (se_g / a_ref, a_g * se_ref / a_ref**2)
        values = (
            ("MagDiff", diff, math.hypot(se_g, se_ref), welch_df((se_g, se_ref), (df_g, df_ref))),
            ("MagDiff_rel", diff / a_ref, math.hypot(*rel), welch_df(rel, (df_g, df_ref))),
        )
    rows = {}
    for name, est, err, df in values:
        ok = err is not None and math.isfinite(err)
        q = float(t_quantile(level, df)) if ok else math.nan
        rows[name] = ScoreEstimate(
            group=g, score=name, estimate=_opt(est), se=err if ok else None,
            ci_low=est - q * err if ok else None, ci_high=est + q * err if ok else None,
            n=int(n), replicates=int(res.replicates), interval=res.method if ok else "none",
            role="reference" if g == reference else "candidate", gamma=None, df=_opt_df(df) if ok else None,
        )
    return rows


# ---------------------------------------------------------------------------------------------
# 7. RND
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _RNDOutcome:
    """The RND row of every group and the RND settings."""

    rows: Dict[str, ScoreEstimate]
    settings: Dict[str, Any]


def _rnd_stage(job: _Job, first: Dict[str, np.ndarray], tracker: _Progress) -> _RNDOutcome:
    """RND of each group's first n-subset, with the Student-t interval over runs."""
    results, rows = {}, {}
    for i, g in enumerate(job.names):
        Xg = dense_rows(job.X[g], first[g])
        res = rnd_of_subset(Xg, params=job.rnd_params, seed=job.seed, index=i)
        results[g] = res
        se, lo, hi = rnd_interval(res.run_scores, job.level)
        rows[g] = ScoreEstimate(
            group=g, score="RND", estimate=float(res.score), se=se, ci_low=lo, ci_high=hi, n=int(Xg.shape[0]),
            replicates=int(res.run_scores.size), interval="rnd runs" if se is not None else "none",
            role="", gamma=None, df=float(res.run_scores.size - 1) if se is not None else None,
        )
        tracker.ticker(f"RND of {g}")(1)
    settings = {
        "settings": {g: results[g].settings for g in job.names},
        "interval_rule": "Student-t interval over the runs on the group's first n-subset (run-to-run "
        "variability only; the items are fixed)",
    }
    return _RNDOutcome(rows, settings)


# ---------------------------------------------------------------------------------------------
# 8. pairwise verdicts, 9. settings
# ---------------------------------------------------------------------------------------------
def _pairwise(names: Sequence[str], table_names: Sequence[str], rows: Dict[str, _Rows],
              level: float) -> Tuple[PairwiseDifference, ...]:
    """Every score's difference for every pair of groups; resolved when its interval excludes 0.

    Groups are sampled independently, so the SE of a difference is the two SEs in quadrature,
    with the Welch-Satterthwaite degrees of freedom of the pair; the interval is
    difference -/+ t_df SE.
    """
    out = []
    for score in table_names:
        if score.startswith("MagDiff"):
            continue  # already a difference against the reference
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                ra, rb = rows[a].get(score), rows[b].get(score)
                if ra is None or rb is None:
                    continue
                if None in (ra.estimate, rb.estimate, ra.se, rb.se):
                    out.append(PairwiseDifference(score, a, b, None, None, None, None, False, None))
                    continue
                diff = ra.estimate - rb.estimate
                se = math.hypot(ra.se, rb.se)
                df = welch_df((ra.se, rb.se), (_df_of(ra), _df_of(rb)))
                q = float(t_quantile(level, df))
                lo, hi = diff - q * se, diff + q * se
                resolved = bool(lo > 0 or hi < 0)
                higher = (a if diff > 0 else b) if resolved else None
                out.append(PairwiseDifference(score, a, b, diff, se, lo, hi, resolved, higher, _opt_df(df)))
    return tuple(out)


def _settings(job: _Job, kern: Kernel, plans: _Plans, spectral: _SpectralOutcome,
              mag: Optional[_MagnitudeOutcome], rnd_out: Optional[_RNDOutcome], version: str) -> Dict[str, Any]:
    """Everything the numbers depend on, as JSON-native types."""
    names, reference = job.names, job.reference
    settings: Dict[str, Any] = {
        "package": "diversity_core",
        "version": version,
        "kernel": kern.to_dict(),
        "kernel_description": kern.describe().removesuffix("()"),
        "spectrum_path": spectral.paths,
        "q": job.qs,
        "n": job.n,
        "n_rule": "given" if job.n != job.sizes[job.smallest] else f"smallest group ({job.smallest})",
        "level": job.level,
        "seed": job.seed,
        "seed_rule": "group i (input order) draws its subsets from numpy.random.SeedSequence(seed).spawn(groups)[i]",
        "n_subsamples": job.n_subsamples,
        "n_resamples": job.n_resamples,
        "size_curve": job.size_curve,
        "curve_sizes": {g: sorted(plans.spectral[g].reps) for g in names},
        "interval_method": {g: spectral.results[g].method for g in names},
        "interval_description": INTERVAL_DESCRIPTION,
        "reference": reference,
        "roles": {g: ("reference" if g == reference else "candidate") for g in names} if reference else {},
        "sources": {
            g: {**job.notes.get(g, {}), **job.sources.get(g, {}), "features_hash": _array_hash(job.X[g]),
                "items": job.sizes[g], "dimension": int(job.X[g].shape[1])}
            for g in names
        },
        "magnitude": None if mag is None else mag.settings,
        "rnd": None if rnd_out is None else rnd_out.settings,
    }
    return to_jsonable(settings)
