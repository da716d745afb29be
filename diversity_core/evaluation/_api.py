"""``evaluate``: every reference-based metric of one generated set, in one pass over the data."""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from dataclasses import replace
from typing import Optional

import numpy as np

from .._orders import parse_q
from .._progress import ProgressCallback, report
from .._validation import check_features, check_option, check_random_state, check_scalar
from ..exceptions import DiversityError, DiversityInputError
from ..magnitude import mag_diff
from ._common import check_interval_options, check_k, check_nn_method, check_quality, check_sets
from ._conditional import check_prompts, conditional_vendi
from ._frechet import frechet_from_data_small, frechet_parts_of, frechet_result, warn_rank
from ._intervals import paired_interval
from ._kid import kernel_distance
from ._limits import check_evaluation_limits
from ._memorization import METRICS, _memorization
from ._neighbours import resolve_nn_method
from ._prdc import BOUNDS, build_results, neighbour_items, prdc_values
from ._results import Estimate, EvaluationResult
from ._vendi import _ratio_result, equal_n_scores, quality_weighted_vendi, ratio_subset_score, resolve_kernel

__all__ = ["evaluate"]


def evaluate(
    reference,
    generated,
    *,
    train=None,
    prompts=None,
    quality=None,
    k: int = 5,
    k_improved: int = 3,
    kernel="cosine",
    q: float = 1.0,
    nn_method: str = "auto",
    kid_subsets: int = 100,
    kid_subset_size: int = 1000,
    magnitude: bool = True,
    magnitude_n: int = 1000,
    memorization_metric: str = "euclidean",
    memorization_alpha: float = 0.01,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    n_subsamples: int = 10,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> EvaluationResult:
    r"""Evaluate generated items against a reference: fidelity, diversity, distances, copies, prompts.

    Computes, on one pair of feature matrices (R real, G generated):

    - precision, recall, density, coverage (k = 5) and the improved precision and recall
      (k = 3), with the neighbour radii and tests shared (:func:`prdc`,
      :func:`improved_precision_recall`);
    - the Frechet distance (:func:`frechet_distance`) and the kernel distance
      (:func:`kernel_distance`);
    - the Vendi score of G relative to R at equal n (:func:`vendi_ratio`) and, when
      ``magnitude``, MagDiff of G against R (:func:`diversity_core.magnitude.mag_diff`) on random
      subsets of ``magnitude_n`` items;
    - with ``train``: each generated item's nearest training item and the memorised share
      (:func:`memorization`, the reference as its baseline);
    - with ``prompts``: the conditional and information Vendi scores and the mean within-prompt
      Vendi score (:func:`conditional_vendi`);
    - with ``quality``: the quality-weighted Vendi score of G (:func:`quality_weighted_vendi`).

    Parameters
    ----------
    reference : array-like of shape (N, d)
        Real items' features.
    generated : array-like of shape (M, d)
        Generated items' features (same featurizer, same d).
    train : array-like of shape (T, d), optional
        The model's training items.
    prompts : array-like of shape (M,) or (M, d_T), optional
        Each generated item's prompt label (or prompt features).
    quality : array-like of shape (M,), optional
        Non-negative quality score of each generated item.
    k, k_improved : int, default 5 and 3
        Neighbours of the PRDC radii and of the improved precision and recall.
    kernel : str or Kernel, default "cosine"
        Kernel of every Vendi score (parameters in ``kernel_params``, data-dependent ones fixed
        once on R and G pooled).
    q : float, default 1
        Order of every Vendi score: the ratio, the quality-weighted score, and the conditional,
        information and within-prompt scores (kernel entropies of order q).
    nn_method : {"auto", "exact", "approximate"}, default "auto"
        Neighbour search (see :func:`prdc`); the one used is in ``settings["nn_method"]``.
    kid_subsets, kid_subset_size : int, default 100 and 1000
        Subsets of the kernel distance (``kid_subsets=0`` skips it).
    magnitude : bool, default True
        Also compute MagDiff (on subsets of ``magnitude_n`` items of each set).
    memorization_metric : {"euclidean", "cosine"}, default "euclidean"
    memorization_alpha : float in (0, 1), default 0.01
        The copy flag's false-positive rate on fresh real items, at most: its threshold is
        calibrated on held-out training items (:func:`memorization`).
    confidence_level, n_resamples, interval_size
        Intervals of the sample statistics (PRDC, FD, Vendi ratio), from one run of the
        subsampling engine on paired subsets (``n_resamples=0``: none).
    n_subsamples : int, default 10
        n-subsets of the larger set in the Vendi ratio.
    rng : int or Generator, optional
        Seed of every random choice (subsets, indexes).
    progress : callable, optional
        ``progress(done, total, message)``, one stage after another.

    Returns
    -------
    EvaluationResult

    Raises
    ------
    DiversityInputError
        Bad features or options, different d, columns of the wrong length.
    MemoryBudgetError
        An allocation over the memory budget (``nn_method="exact"`` on sets whose centred
        copies do not fit, the joint kernel of prompt features).

    Notes
    -----
    Cost, N = M = 50,000 and d = 2048 (FID-sized): three blocked distance products
    (3 x 1e13 flops in float32 for float32 features), two covariances and one 2048 x 2048
    eigenvalue problem (FD), 100 KD subsets (1.2e12 flops), two dual Vendi spectra; memory about
    the two centred copies (0.8 GB for float32) plus one block. ``benchmarks/bench_evaluation.py``
    measures it; ``settings["timings"]`` records each part (wall-clock seconds) and
    ``settings["cpu_timings"]`` its CPU seconds (every thread of this process).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> R, G = rng.normal(size=(300, 8)), rng.normal(size=(300, 8))
    >>> ev = evaluate(R, G, magnitude=False, kid_subsets=10, kid_subset_size=100, n_resamples=0, rng=0)
    >>> 0.5 < ev.prdc.precision.value <= 1.0
    True
    """
    R, G = check_sets(reference, generated)
    n_r, n_g, d = R.shape[0], G.shape[0], R.shape[1]
    k = check_k(k, "k", n_r, n_g)
    k_improved = check_k(k_improved, "k_improved", n_r, n_g)
    check_nn_method(nn_method)
    check_option(memorization_metric, METRICS, "memorization_metric")
    memorization_alpha = check_scalar(memorization_alpha, "memorization_alpha", float, min_val=0.0, max_val=1.0,
                                      include_boundaries="neither")
    qv = parse_q(q)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    kid_subsets = check_scalar(kid_subsets, "kid_subsets", int, min_val=0)
    kid_subset_size = check_scalar(kid_subset_size, "kid_subset_size", int, min_val=2)
    magnitude_n = check_scalar(magnitude_n, "magnitude_n", int, min_val=3)
    n_subsamples = check_scalar(n_subsamples, "n_subsamples", int, min_val=1)
    # scales where FD or KD overflow, and counts asking for days of work, refused before any work (issue 40)
    check_evaluation_limits(R, G, kid_subsets=kid_subsets, kid_subset_size=kid_subset_size, n_resamples=n_resamples,
                            interval_size=interval_size, n_subsamples=n_subsamples, min_items=4 * max(k, k_improved))
    T = None
    if train is not None:
        T = check_features(train, name="train", min_samples=3)
        if T.shape[1] != d:
            raise DiversityInputError(f"train and generated must have the same number of features; got {T.shape[1]} and {d}.")
    s = check_quality(quality, n_g)
    gen = check_random_state(rng)
    kern = resolve_kernel(kernel, kernel_params, R, G, rng=gen)
    if prompts is not None:

        check_prompts(prompts, n_g)
    method = resolve_nn_method(nn_method, (n_r, n_g), d, R.dtype.itemsize)
    stages = ["neighbours", "frechet distance", "kernel distance", "vendi ratio", "intervals"]
    stages += ["magdiff"] * magnitude + ["memorisation"] * (T is not None) + ["prompts"] * (prompts is not None)
    stages += ["quality"] * (s is not None)
    timings: dict = {}
    cpu_timings: dict = {}
    clock = _Clock(progress, stages, timings, cpu_timings)

    with clock("neighbours"):
        items = neighbour_items(R, G, k, k_improved, method, seed=int(gen.integers(2**31 - 1)))
        full_prdc = prdc_values(items)
    with clock("frechet distance"):
        parts = frechet_parts_of(R, G)
        warn_rank(parts.rank_r, parts.rank_g, d, n_r, n_g, stacklevel=3)
    kd = None
    if kid_subsets:
        with clock("kernel distance"):
            kd = kernel_distance(R, G, n_subsets=kid_subsets, subset_size=kid_subset_size, rng=gen)
    with clock("vendi ratio"):
        vs_g, vs_r, n_eq = equal_n_scores(R, G, kern, qv, n_subsamples, gen)
    full = np.concatenate([full_prdc, [parts.value, vs_g / vs_r]])
    with clock("intervals"):
        estimates, info = _intervals(R, G, full, k, k_improved, kern, qv, level, n_resamples, interval_size, gen)
    prdc_res, improved = build_results(items, estimates[:6], k, k_improved, n_r, n_g, method)
    fd = frechet_result(R, G, parts, level, n_resamples, interval_size, gen, estimate=estimates[6])
    vendi = replace(_ratio_result(R, G, kern, qv, vs_g, vs_r, n_eq, n_subsamples, level, 0, interval_size, gen),
                    ratio=estimates[7])
    magdiff = None
    notes = []
    if magnitude:
        with clock("magdiff"):
            magdiff, note = _magdiff(R, G, magnitude_n, gen)
            if note:
                notes.append(note)
    mem = None
    if T is not None:
        with clock("memorisation"):
            mem = _memorization(G, T, R, memorization_metric, nn_method, level, int(gen.integers(2**31 - 1)), None,
                                alpha=memorization_alpha)
            if mem.note:
                notes.append(f"memorisation: {mem.note}")
    cond = None
    if prompts is not None:
        with clock("prompts"):
            cond = conditional_vendi(G, prompts, kernel=kern, q=qv, confidence_level=level)
    qual = None
    if s is not None:
        with clock("quality"):
            qual = quality_weighted_vendi(G, s, kernel=kern, q=qv)
    if n_resamples and info.get("reason"):
        notes.append(f"no intervals for precision, recall, density, coverage, FD and the Vendi ratio: {info['reason']}")
    report(progress, len(stages), len(stages), "done")
    settings = {
        "k": k, "k_improved": k_improved, "kernel": kern.to_dict(), "kernel_description": kern.describe(),
        "q": qv, "nn_method": method, "nn_method_requested": nn_method, "confidence_level": level,
        "n_resamples": n_resamples, "interval_size": interval_size, "interval": info,
        "kid_subsets": kid_subsets, "kid_subset_size": kid_subset_size, "magnitude_n": magnitude_n if magnitude else None,
        "memorization_rule": mem.rule() if mem is not None else None,
        "memorization_alpha": memorization_alpha if T is not None else None,
        "memorization_metric": memorization_metric if T is not None else None,
        "n_train": None if T is None else int(T.shape[0]), "dtype": str(R.dtype),
        "seed": rng if isinstance(rng, (int, np.integer)) else None, "timings": timings, "cpu_timings": cpu_timings, "notes": notes,
    }
    return EvaluationResult(
        prdc=prdc_res, improved=improved, frechet=fd, kernel_distance=kd, vendi=vendi, magdiff=magdiff,
        memorization=mem, conditional=cond, quality=qual, n_reference=int(n_r), n_generated=int(n_g), d=int(d),
        settings=settings,
    )


class _Clock:
    """Times each stage and reports it to the progress callback."""

    def __init__(self, progress, stages, timings, cpu):
        self.progress, self.stages, self.timings, self.cpu = progress, stages, timings, cpu
        self.done = 0

    def __call__(self, name: str):

        @contextlib.contextmanager
        def stage():
            report(self.progress, self.done, len(self.stages), name)
            t0, c0 = time.perf_counter(), time.process_time()
            yield
            self.timings[name] = round(time.perf_counter() - t0, 3)
            # CPU seconds of this process (every thread): what the stage costs on a machine shared with others
            self.cpu[name] = round(time.process_time() - c0, 3)
            self.done += 1

        return stage()


def _intervals(R, G, full, k, k_improved, kern, qv, level, n_resamples, interval_size, gen):
    """One run of the subsampling engine for the eight sample statistics (6 PRDC, FD, Vendi ratio)."""
    if not n_resamples:
        return [Estimate(float(v)) for v in full], {"sizes": [], "reason": "n_resamples = 0"}
    ratio = ratio_subset_score(kern, qv, int(gen.integers(2**31 - 1)))

    def score(Rs, Gs):
        vals = prdc_values(neighbour_items(Rs, Gs, k, k_improved))
        return np.concatenate([vals, [frechet_from_data_small(Rs, Gs)], ratio(Rs, Gs)])

    lo = np.array(BOUNDS[0] + (0.0, 0.0))
    hi = np.array(BOUNDS[1] + (np.inf, np.inf))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # subsets' rank-deficient covariances are expected
        return paired_interval(R, G, full, score, bounds=(lo, hi), level=level, n_resamples=n_resamples,
                               interval_size=interval_size, min_items=4 * max(k, k_improved), rng=gen)


def _magdiff(R, G, m: int, gen) -> tuple:
    """MagDiff of G against R on random subsets of at most m items each; (dict or None, note)."""
    ir = np.sort(gen.choice(R.shape[0], min(m, R.shape[0]), replace=False))
    ig = np.sort(gen.choice(G.shape[0], min(m, G.shape[0]), replace=False))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = mag_diff(np.asarray(G[ig], dtype=np.float64), np.asarray(R[ir], dtype=np.float64), reference="Y")
    except DiversityError as exc:
        return None, f"MagDiff skipped: {exc}"
    out = {"value": res.value, "relative": res.relative, "t_cut": res.t_cut, "area_generated": res.area_x,
           "area_reference": res.area_y, "n": int(min(ir.size, ig.size)), "n_reference": int(ir.size),
           "n_generated": int(ig.size)}
    if not all(math.isfinite(v) for v in (res.value, res.t_cut)):
        return out, "MagDiff is not finite on these subsets"
    return out, ""
