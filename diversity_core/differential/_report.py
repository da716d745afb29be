"""``novelty_report``: novel and missing modes, KEN both ways, RRKE, intervals and the nulls in one pass."""

from __future__ import annotations

import time
from typing import Optional

from .._progress import DETAIL_SEPARATOR, ProgressCallback, report
from .._validation import check_scalar
from ..evaluation._common import check_interval_options
from ..kernels import DEFAULT_KERNEL
from ._null import _null_tops, _verdict
from ._results import NoveltyReport
from ._routes import DEFAULT_FREQUENCIES, DEFAULT_REPLICATES
from ._scores import _interval, _ken, _rrke
from ._spectrum import _novelties, _prepare

__all__ = ["novelty_report"]


def novelty_report(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    eta: float = 1.0,
    method: str = "auto",
    n_modes: int = 5,
    n_permutations: int = 100,
    rrke_order: float = 0.5,
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> NoveltyReport:
    r"""What a candidate set X has that a reference Y lacks, and what it misses: the CLI's and the app's one call.

    Computes on one route (:func:`~diversity_core.differential.novelty_spectrum`), with the kernel
    and the covariance moments shared: the novel spectrum (:math:`C_X - \eta C_Y`), the missing one
    (:math:`C_Y - \eta C_X`), :math:`\mathrm{KEN}_\eta(X|Y)` and :math:`\mathrm{KEN}_\eta(Y|X)`,
    RRKE(X || Y) of order ``rrke_order`` (:func:`~diversity_core.differential.rrke`), the three scores'
    intervals from one run of the subsampling engine, and the permutation null of both top
    eigenvalues (:func:`~diversity_core.differential.mode_null`; ``n_permutations=0``: none).

    Parameters
    ----------
    X, Y : array-like of shape (n, d) and (m, d)
        Candidate (generated) and reference items.
    n_modes : int, default 5
        Modes kept in each spectrum (loadings, galleries, verdicts).
    n_permutations : int, default 100
    rrke_order : {0.5, 2}, default 0.5
    progress : callable, optional
        ``progress(done, total, message)``: one step for the spectra, one for the intervals, one
        per permutation of the null (its stage named before the detail separator).
    Others
        As :func:`novelty_spectrum`, :func:`ken_score` and :func:`mode_null`.

    Returns
    -------
    NoveltyReport

    Notes
    -----
    Cost: one route (see :func:`novelty_spectrum`), two p x p eigendecompositions, about 3 x
    ``n_resamples`` routes on subsets of at most ``interval_size`` items, and ``n_permutations`` x
    :math:`O(\min(n, m) p^2 + p^3)`. ``settings["timings"]`` records each part (seconds).
    """
    n_modes = check_scalar(n_modes, "n_modes", int, min_val=1)
    n_permutations = check_scalar(n_permutations, "n_permutations", int, min_val=0)
    rrke_order = check_scalar(rrke_order, "rrke_order", float)
    if rrke_order not in (0.5, 2.0):
        from ..exceptions import DiversityInputError

        raise DiversityInputError(f"rrke_order must be 0.5 or 2; got {rrke_order}.")
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    timings = {}
    total = 2 + n_permutations
    report(progress, 0, total, "the novelty spectra")
    t0 = time.perf_counter()
    X, Y, eta, kern, factor, gen = _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng)
    moments = (factor.moments(0), factor.moments(1))
    timings["moments"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    kd = kern.to_dict()
    novel, missing = _novelties(factor, (0, 1), eta, n_modes, level, kd, moments=moments)
    timings["spectra"] = round(time.perf_counter() - t0, 3)
    report(progress, 1, total, "intervals of KEN and RRKE")
    t0 = time.perf_counter()
    full = [novel.ken, missing.ken, _rrke(factor, rrke_order, moments)]

    def score(f):
        m = (f.moments(0), f.moments(1))
        return [_ken(f, eta, 0, m), _ken(f, eta, 1, m), _rrke(f, rrke_order, m)]

    ken, ken_missing, rr = _interval(factor, kern, full, score, level, n_resamples, interval_size, gen)
    timings["intervals"] = round(time.perf_counter() - t0, 3)
    novel_null = missing_null = None
    if n_permutations:
        t0 = time.perf_counter()
        report(progress, 2, total, "the permutation null")

        def tick(b):
            report(progress, 2 + b, total, f"the permutation null{DETAIL_SEPARATOR}{b} of {n_permutations} relabellings")

        tops, used, note = _null_tops(factor, eta, n_permutations, gen, tick=tick if progress is not None else None)
        novel_null = _verdict(tops[0], novel.eigenvalues[:n_modes], level, "novel", used, note,
                              dim=novel.dim)
        missing_null = _verdict(tops[1], missing.eigenvalues[:n_modes], level, "missing", used, note, dim=missing.dim)
        timings["null"] = round(time.perf_counter() - t0, 3)
    settings = {"kernel": kd, "kernel_description": kern.describe(), "eta": eta, "method": factor.route,
                "kind": novel.kind, "n_modes": n_modes, "n_permutations": n_permutations, "rrke_order": rrke_order,
                "confidence_level": level, "n_resamples": n_resamples, "interval_size": interval_size,
                "n_generated": int(X.shape[0]), "n_reference": int(Y.shape[0]), "timings": timings,
                **factor.settings}
    report(progress, total, total, "done")
    return NoveltyReport(novel=novel, missing=missing, ken=ken, ken_missing=ken_missing, rrke=rr,
                         novel_null=novel_null, missing_null=missing_null, settings=settings)
