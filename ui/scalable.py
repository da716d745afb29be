"""Beyond the dense limit: the scalable path of the Scores and Spectrum pages (issue 12).

When the exact spectrum does not fit the memory budget (the core's one large-data policy,
:func:`diversity_core.approx.plan_scores`, which the CLI follows too), the pages switch to the
scalable path and say so in a badge; the same plan names the sketch and the bounds and sizes them
to the budget:

1. **First look** (:func:`first_look`, cached, well under 2 s at n = 100k): the exact spectrum of
   a seeded random subsample of :data:`SUBSAMPLE` items, labelled as such. Its measured time
   also gives the approximate time of the forced exact path (scaled as n^3).
2. **Refinement** as a background job of the app's one runner (:class:`ui.workers.BackgroundJob`:
   on a worker process when the server has them, like every long job), never blocking the page or
   a page change; :func:`refine` carries out the plan and reports each result as it comes:
   where K fits in memory, first the guaranteed bounds from the top k = 20 eigenvalues by Lanczos
   (:func:`~diversity_core.approx.iter_vendi_bounds`: seconds; its top eigenvectors fill the
   Spectrum page's galleries), then by default the estimate of the full-sample VS_q for every
   q > 0 of the q control by stochastic Lanczos quadrature
   (:func:`~diversity_core.approx.iter_vendi_slq`: batches of probes, the interval shrinking as
   they come), then the bounds from k = 50, 100, ... Where SLQ does not fit the budget, a sketch estimate
   for q >= 1 (:func:`~diversity_core.approx.vendi_estimate`) stands in. Each result replaces the
   previous one as it arrives; a **Stop** button ends the refinement at the core's next progress
   report and keeps what has arrived.
3. Moving q reads the stored estimate and bounds
   (:meth:`~diversity_core.approx.VendiBounds.bounds_at`): nothing is recomputed.

Jobs live in the process-wide store of :mod:`ui.tasks` (kind ``"scalable"``), keyed by content
(the view's key, the featurizer, the kernel), so a page change or another session finds the
running job and its latest results. The user can force the exact path, with its memory and an
approximate time shown before it starts (:func:`exact_spectrum` raises the budget to what it needs).
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import streamlit as st

import diversity_core as dc
from diversity_core import check_weights, config_context, format_bytes, format_q, memory_budget
from diversity_core.approx import ScorePlan, exact_plan, plan_scores, run_plan
from diversity_core.approx.plan import MIN_SKETCH, binary_features
from diversity_core.featurizers import resolve_featurizer
from diversity_core.workers import JobCancelledError

from . import compute, tasks, workers
from .cache import shared_cache
from .data import View
from .feedback import error_message, literal, phase_label, time_left_text
from .state import Q_GRID

#: Task kind of the refinement jobs in :func:`ui.tasks.store`.
KIND = "scalable"
#: Items in the first-look subsample (its dense spectrum takes ~0.1-0.5 s).
SUBSAMPLE = 1000
#: Lanczos steps of the refinement (top-k eigenvalues), cheap ones first.
KS = (20, 50, 100, 200, 500)
#: Seconds the bounds progression may take: no Lanczos step starts that the core predicts would overrun it.
TIME_BUDGET = 600.0
#: How the bounds see the top of the spectrum (the core's rule by default: Nystrom past the float32 matrix).
BOUNDS_METHOD = "auto"
#: Preferred sketch size (random Fourier features D, or Nystrom landmarks m), at most n / 4: a sketch
#: of rank near n costs as much as the exact path it stands in for; the plan shrinks it to the
#: budget. And the estimate's replicates.
SKETCH_SIZE = 1024
REPLICATES = 3
#: Seconds the SLQ estimate may take (no batch of probes starts that would end after it); it
#: comes after the first bounds (k = KS[0]) and before the others.
SLQ_SECONDS = 120.0
#: Seconds between two redraws of the live panels while a job runs.
POLL_SECONDS = 1.0
#: Session-state keys: views whose exact path the user forced; the job this session started last.
FORCED = "scalable_forced_exact"
_LAST_JOB = "_scalable_last_job"


# ------------------------------------------------------------------------------------------
# the decision
# ------------------------------------------------------------------------------------------
def plan(ctx) -> ScorePlan:
    """The core's plan for the page's view: an exact path, or the sized sketch and bounds beyond the budget."""
    X = compute.features(ctx.view, ctx.featurizer, show_progress=False)
    n, d = ctx.view.n, max(1, X.shape[1])
    s = ctx.settings
    kern = dc.get_kernel(s.kernel, **s.kernel_kwargs)
    return plan_scores(n, d, kernel=kern, weighted=ctx.view.data.weights is not None, approx="auto",
                       bounds_method=BOUNDS_METHOD, k=KS, sketch_size=min(SKETCH_SIZE, max(MIN_SKETCH, n // 4)),
                       n_eigenvectors=min(compute.MAX_EIGENVECTORS, n), density=compute.density(X),
                       binary=_binary(ctx.view, ctx.featurizer) if kern.name == "tanimoto" else None)


@shared_cache("results", hash_funcs=compute.HASH)
def _binary(view: View, featurizer: str) -> bool:
    """Whether the view's features are 0/1 bits (MinHash features need them)."""
    return binary_features(compute.features(view, featurizer, show_progress=False))


def job_key(ctx) -> tuple:
    """Content key of the view's refinement job (and of the forced-exact choice)."""
    s = ctx.settings
    return (ctx.view.key, resolve_featurizer(ctx.view.data, ctx.featurizer), s.kernel, s.kernel_params)


def forced(ctx) -> bool:
    """Whether the user forced the exact path for this view."""
    return job_key(ctx) in st.session_state.get(FORCED, set())


def active(ctx, p: ScorePlan) -> bool:
    """Whether the page takes the scalable path: beyond the budget and not forced exact."""
    return not p.exact and not forced(ctx)


def exact_budget(ctx, p: ScorePlan):
    """A context in which the exact path runs: the budget raised to what it needs when the user forced it."""
    if p.exact or not forced(ctx):
        return contextlib.nullcontext()
    return config_context(memory_budget=int(max(memory_budget(), p.dense_bytes * 1.05)))


def exact_spectrum(ctx, p: ScorePlan):
    """The exact spectrum of the page: a note and the raised budget when the user forced it past the limit."""
    forced_note(ctx, p)
    with exact_budget(ctx, p):
        return ctx.spectrum()


def _set_forced(key: tuple, on: bool) -> None:
    keys = set(st.session_state.get(FORCED, set()))
    (keys.add if on else keys.discard)(key)
    st.session_state[FORCED] = keys


# ------------------------------------------------------------------------------------------
# the first look: a subsample's exact spectrum
# ------------------------------------------------------------------------------------------
def q_orders() -> np.ndarray:
    """Orders every job computes: the profile grid and the q control's values."""
    return np.unique(np.concatenate([dc.default_q_grid(), np.asarray(Q_GRID, dtype=np.float64)]))


@shared_cache("results", hash_funcs=compute.HASH)
def resolved_kernel(view: View, featurizer: str, kernel: str, kernel_params: tuple):
    """The kernel with its bandwidth fixed on all items, as the exact path fixes it (weighted)."""
    X = compute.features(view, featurizer, show_progress=False)
    kern = dc.get_kernel(kernel, **dict(kernel_params))
    p = None if view.data.weights is None else check_weights(view.data.weights, view.n)
    return kern.resolve(kern.validate(X), p)


@dataclass(frozen=True)
class FirstLook:
    """The exact VS_q of a seeded random subsample: a first estimate, labelled as such."""

    qs: np.ndarray
    values: np.ndarray
    size: int
    n: int
    seconds: float
    spectrum: Any

    def vendi(self, q: float) -> float:
        """The subsample's VS_q (from its cached spectrum, any order)."""
        return float(self.spectrum.vendi(q))



@shared_cache("results", hash_funcs=compute.HASH)
def first_look(view: View, featurizer: str, kernel: str, kernel_params: tuple, size: int = SUBSAMPLE) -> FirstLook:
    """Exact spectrum of ``size`` random items (seed 0) under the resolved kernel (cached)."""
    X = compute.features(view, featurizer, show_progress=False)
    kern = resolved_kernel(view, featurizer, kernel, kernel_params)
    n = view.n
    idx = np.sort(np.random.default_rng(0).choice(n, size=min(size, n), replace=False))
    w = None if view.data.weights is None else view.data.weights[idx]
    # a fixed, small size: its dense matrices (16 MB at 1000 items) run even under a tiny budget;
    # eigenvalues only (the fast LAPACK driver), which is all a profile needs
    need = exact_plan(idx.size, max(1, X.shape[1]), kernel=kern).dense_bytes
    t0 = time.perf_counter()
    with config_context(memory_budget=int(max(memory_budget(), need))):
        spec = dc.compute_spectrum(X[idx], kernel=kern, weights=w, method="dense")
    seconds = time.perf_counter() - t0
    qs = q_orders()
    values = spec.profile(qs)
    for a in (qs, values):
        a.setflags(write=False)
    return FirstLook(qs=qs, values=values, size=int(idx.size), n=n, seconds=seconds, spectrum=spec)


# ------------------------------------------------------------------------------------------
# the refinement job (the app's one job runner)
# ------------------------------------------------------------------------------------------
#: Label of the refinement jobs (their worker task's name, their errors).
LABEL = "Refining beyond the dense limit"


@dataclass(frozen=True)
class Snapshot:
    """What a job has produced so far (read by the pages; never mutated)."""

    state: str  # "running", "done", "stopped", "failed"
    stage: str
    message: str
    fraction: float
    bounds: Any
    estimate: Any
    error: str
    seconds: float
    stop_requested: bool
    time_left: Optional[float] = None

    @property
    def running(self) -> bool:
        return self.state == "running"


def snapshot(job: workers.BackgroundJob) -> Snapshot:
    """A refinement job's latest ``bounds`` and ``estimate`` (its reports' payloads, :func:`refine`),
    its progress and how it ended: ``done``, ``stopped`` (Stop pressed: what arrived stays) or
    ``failed`` (its error, in the app's words)."""
    data = job.data()
    report = job.progress()
    done, total, message = report if report is not None else (0.0, 0.0, "starting")
    fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 0.0
    state, error = "running", ""
    if job.done():
        exc = job.error()
        if isinstance(exc, JobCancelledError):
            state, message = "stopped", "stopped"
        elif exc is not None:
            state, error = "failed", error_message(LABEL, exc)
        else:
            state, message, fraction = "done", "done", 1.0
            value, _ = job.outcome()
            data.update({k: v for k, v in (value or {}).items() if v is not None})
    return Snapshot(state=state, stage=phase_label(message), message=message, fraction=fraction,
                    bounds=data.get("bounds"), estimate=data.get("estimate"), error=error, seconds=job.seconds(),
                    stop_requested=job.cancelled and state == "running",
                    time_left=job.time_left() if state == "running" else None)


def refine(X, kern, weights, p: ScorePlan, progress) -> dict:
    """The refinement job: the core carries out the plan (:func:`~diversity_core.approx.run_plan`).

    A plain function (no Streamlit), safe on a worker process. Asks for the q control's orders
    (:data:`~ui.state.Q_GRID`) with the guaranteed band beside the estimate, in the core's
    refinement schedule: the first Lanczos bounds (galleries, an interval within seconds), the SLQ
    estimate (else a sketch's), then the rest of the bounds. Each result is reported as it comes,
    ``progress(done, total, message, bounds=...)`` or ``(..., estimate=...)``; raising in
    ``progress`` (JobCancelledError) stops the job and propagates. Returns the last of each,
    ``{"bounds": ..., "estimate": ...}`` (None where none came).
    """
    last = {"bounds": None, "estimate": None}
    report = [0, 1, ""]

    def core_progress(done: int, total: int, message: str = "") -> None:
        report[:] = [done, total, message]
        progress(done, total, message)

    for step in run_plan(X, p, kernel=kern, q=Q_GRID, weights=weights, rng=0, time_budget=TIME_BUDGET,
                         max_seconds=SLQ_SECONDS, n_eigenvectors=compute.MAX_EIGENVECTORS, replicates=REPLICATES,
                         companions=True, progress=core_progress):
        last[step.part] = step.result
        progress(*report, **{step.part: step.result})
    return last


def ensure_job(ctx) -> workers.BackgroundJob:
    """The view's refinement job from the store, started when there is none.

    A failed job is returned as it is, so that its error is shown; "Try again" starts over
    (restarting it on every rerun would hide an error that recurs and repeat the work forever).
    """
    key = job_key(ctx)
    job = tasks.store(KIND).get(key)
    return job if job is not None else _start(ctx, key)


def _start(ctx, key: tuple) -> workers.BackgroundJob:
    """Start a job (first stopping this session's previous one on other data: two would share the CPU).

    :func:`refine` runs on a worker process when the server has them, else in a thread of this one
    (:func:`ui.workers.start_background`); its arguments travel to the worker.
    """
    ss = st.session_state
    previous = tasks.store(KIND).get(ss.get(_LAST_JOB)) if ss.get(_LAST_JOB) not in (None, key) else None
    if previous is not None:
        previous.cancel()
    X = compute.features(ctx.view, ctx.featurizer, show_progress=False)
    kern = resolved_kernel(*ctx.kernel_args)
    job = workers.start_background(functools.partial(refine, X, kern, ctx.view.data.weights, plan(ctx)), LABEL)
    tasks.store(KIND).put(key, job)
    ss[_LAST_JOB] = key
    return job


# ------------------------------------------------------------------------------------------
# reading the results at an order q (no recomputation)
# ------------------------------------------------------------------------------------------
def bounds_at(bounds, q: float) -> tuple[float, float]:
    """``(low, high)`` at q from stored bounds (:meth:`~diversity_core.approx.VendiBounds.bounds_at`)."""
    lo, hi = bounds.bounds_at([q])
    return float(lo[0]), float(hi[0])


def estimate_at(estimate, q: float) -> Optional[tuple[float, float, float]]:
    """``(value, low, high)`` of the estimate at q, or None (q < 1, or an order it did not compute)."""
    if estimate is None or q not in estimate.qs:
        return None
    return (estimate.vendi(q), *estimate.interval(q))


def estimate_text(value: float, lo: float, hi: float) -> str:
    """An estimate with its 95% interval as ``value ± half-width``."""
    return f"{value:.2f} ± {0.5 * (hi - lo):.2f}"


def interval_text(lo: float, hi: float) -> str:
    """A band for people: one number when it is exact to the digits shown, else ``lo – hi``."""
    if hi <= lo * (1 + 5e-4):
        return f"{0.5 * (lo + hi):.2f}"
    return f"{lo:.2f} – {hi:.2f}"


def is_slq(estimate) -> bool:
    """Whether an estimate is the SLQ estimate of the full-sample value (else a sketch's)."""
    return getattr(estimate, "method", "") == "slq"


def estimate_label(estimate) -> str:
    """How an estimate is named: ``SLQ, estimate of the full-sample value (64 probes, k = 512)`` or the sketch's label."""
    if is_slq(estimate):
        return f"SLQ, estimate of the full-sample value ({estimate.probes} probes, k = {estimate.k})"
    return sketch_label(estimate)


def estimate_note(estimate) -> str:
    """What an estimate's interval means, in one line."""
    if is_slq(estimate):
        # the label already says "estimate of the full-sample value" (estimate_label)
        return "its 95% interval adds bounds on the quadrature and rounding errors to the probes' spread"
    return "sketch estimate: its error bar shows the sketch's spread, not its bias"


def sketch_label(estimate) -> str:
    """``Nyström m = 1024, 3 replicates`` or ``RFF D = 1024, 3 replicates``."""
    st_ = estimate.settings
    reps = st_.get("replicates", 0)
    if estimate.method == "nystrom":
        return f"Nyström m = {st_.get('m')}, {reps} replicates"
    name = "random Fourier features" if estimate.method == "rff" else "MinHash features"
    return f"{name} D = {st_.get('D')}, {reps} replicates"


def bounds_source(b) -> str:
    """Where a band comes from, in words (Lanczos top-k with the exact VS₂, or a Nyström sketch)."""
    settings = b.settings
    if settings.get("method") == "nystrom":
        return (f"a Nyström sketch (m = {settings['m']}, {settings['captured_trace']:.1%} of the trace"
                + (", exact VS₂)" if settings.get("exact_vs2") else ")"))
    return f"the top {b.k} eigenvalues and the exact VS₂" if b.k else "the exact VS₂ alone"


def badge_text(snap: Snapshot, first: FirstLook, q: float) -> str:
    """The one line that says which numbers are shown and where they come from."""
    label = format_q(q)
    if is_slq(snap.estimate) and estimate_at(snap.estimate, q) is not None:
        v, lo, hi = estimate_at(snap.estimate, q)
        line = (f"SLQ, estimate of the full-sample value: VS_{label} ≈ {v:.2f} "
                f"(95% interval [{lo:.2f}, {hi:.2f}], {snap.estimate.probes} probes)")
    elif snap.bounds is not None:
        lo, hi = bounds_at(snap.bounds, q)
        source = bounds_source(snap.bounds)
        line = f"Bounds from {source}: VS_{label} in [{lo:.2f}, {hi:.2f}]"
    elif snap.estimate is not None and estimate_at(snap.estimate, q) is not None:
        v, lo, hi = estimate_at(snap.estimate, q)
        line = f"{sketch_label(snap.estimate)}: VS_{label} ≈ {estimate_text(v, lo, hi)}"
    else:
        line = f"Subsample estimate ({first.size} of {first.n} items): VS_{label} ≈ {first.vendi(q):.2f}"
    return line


# ------------------------------------------------------------------------------------------
# drawing
# ------------------------------------------------------------------------------------------
def draw_badge(p: ScorePlan) -> None:
    """The visible switch: why the page is on the scalable path."""
    st.badge(f"Scalable path: n = {p.n} is beyond the dense limit", icon=":material/speed:", color="orange")
    st.caption(f"The exact spectrum would need {format_bytes(p.dense_bytes)}, over the memory budget of "
               f"{format_bytes(p.budget)}; the page shows guaranteed bounds and estimates with error bars instead.")


def force_exact_control(ctx, p: ScorePlan, first: FirstLook) -> None:
    """The button that forces the exact path, with its memory and approximate time shown first."""
    seconds = p.dense_seconds(first.seconds, first.size)  # the app's exact path keeps eigenvectors
    when = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
    label = f"Compute exact instead ({format_bytes(p.dense_bytes)}, about {when})"
    if st.button(label, key="scalable_force_exact", icon=":material/memory:",
                 help=f"Approximate time: twice the subsample's measured {first.seconds:.2f} s (eigenvectors), scaled as n³ "
                      f"({first.size} → {p.n} items). Memory: the dense path's matrices, over the budget of "
                      f"{format_bytes(p.budget)}; the page waits while it runs."):
        job = tasks.store(KIND).get(job_key(ctx))
        if job is not None:
            job.cancel()
        _set_forced(job_key(ctx), True)
        st.rerun()


def forced_note(ctx, p: ScorePlan) -> None:
    """On the forced exact path: say so, with the way back."""
    if p.exact or not forced(ctx):
        return
    st.badge(f"Exact path forced beyond the memory budget ({format_bytes(p.dense_bytes)})",
             icon=":material/memory:", color="violet")
    if st.button("Back to the scalable path", key="scalable_back"):
        _set_forced(job_key(ctx), False)
        st.rerun()


def status_panel(job: workers.BackgroundJob, snap: Snapshot, key: tuple) -> None:
    """Progress of the refinement with its Stop button, or how it ended (``key``: the job's in the store)."""
    if snap.running:
        c1, c2 = st.columns([5, 1])
        with c1.container(border=True):
            # a progress bar, not st.status: a status box shows "complete" once each script run ends,
            # while this work goes on in the background between runs
            left = "" if snap.time_left is None else f", {time_left_text(snap.time_left)}"
            st.progress(snap.fraction, text=f":material/progress_activity: Refining in the background — "
                                            f"{literal(snap.message)} · {snap.seconds:.0f} s{left}")
        c2.button("Stop", key="scalable_stop", icon=":material/stop_circle:", on_click=job.cancel,
                  disabled=snap.stop_requested,
                  help="Stop refining at the next step; the numbers that have arrived stay.")
        if snap.stop_requested:
            st.caption("Stopping after the current step…")
    elif snap.state == "stopped":
        st.info("Refinement stopped; the numbers below are the last ones that arrived.", icon=":material/stop_circle:")
        _restart_button(key, "Refine again", "scalable_restart")
    elif snap.state == "failed":
        st.error(literal(snap.error))
        _restart_button(key, "Try again", "scalable_retry")
    else:
        st.caption(f"Refinement done in {snap.seconds:.0f} s.")


def band_figure(snap: Snapshot, first: FirstLook, q: float, n: int):
    """The q-profile: the subsample's curve, the guaranteed band, the estimates with their error bars."""
    from diversity_core.report.figures import vendi_bounds_figure

    return vendi_bounds_figure((f"subsample of {first.size} (first look)", first.qs, first.values), snap.bounds,
                               snap.estimate, q=q, n=n, estimate_qs=Q_GRID,
                               estimate_label=estimate_label(snap.estimate) if snap.estimate is not None else "")


def _restart_button(job_key: tuple, label: str, key: str) -> None:
    """A button that drops the job from the store, so that the next run starts it over."""
    if st.button(label, key=key, help="Start the refinement over."):
        tasks.store(KIND).put(job_key, None)
        st.rerun()


def headline_text(snap: Snapshot, first: FirstLook, q: float, n: int) -> tuple[str, str]:
    """``(value, source)`` of the headline at q: the SLQ estimate, else the band, else a sketch's estimate, else the subsample."""
    est = estimate_at(snap.estimate, q)
    if is_slq(snap.estimate) and est is not None:
        return f"≈ {estimate_text(*est)}", f"{estimate_label(snap.estimate)}: {estimate_note(snap.estimate)}"
    if snap.bounds is not None:
        return interval_text(*bounds_at(snap.bounds, q)), f"guaranteed bounds, {bounds_source(snap.bounds)}"
    if est is not None:
        return f"≈ {estimate_text(*est)}", "estimate with a 95% error bar"
    return f"≈ {first.vendi(q):.2f}", f"subsample estimate, {first.size} of {n} items"


def scores_panel(ctx, job: workers.BackgroundJob, first: FirstLook) -> None:
    """The live part of the Scores page: headline numbers, progress, the band chart (redrawn while it runs)."""
    live = snapshot(job).running

    @st.fragment(run_every=POLL_SECONDS if live else None)
    def panel():
        snap = snapshot(job)
        if live and not snap.running:
            st.rerun()  # finished: redraw the page once more, without the timer
        q, label, n = ctx.settings.q, ctx.settings.q_label, ctx.view.n
        st.markdown(f"**{literal(badge_text(snap, first, q))}**")
        c1, c2, c3, c4 = st.columns([1.4, 1.2, 1, 1])
        head, src = headline_text(snap, first, q, n)
        c1.metric(f"Vendi score (q = {label})", head, help=f"Out of n = {n} items; {src}.")
        c1.caption(f"{src}, out of **n = {n}**")
        est = estimate_at(snap.estimate, q)
        if is_slq(snap.estimate) and est is not None:
            # the SLQ estimate is the headline; the guaranteed band sits beside it
            if snap.bounds is not None:
                c2.metric(f"Guaranteed band (q = {label})", interval_text(*bounds_at(snap.bounds, q)),
                          help="Certain to contain the full-sample value; wide where the spectrum is flat.")
                c2.caption(f"Bounds from {bounds_source(snap.bounds)}")
        elif est is not None:
            c2.metric(f"Estimate (q = {label})", estimate_text(*est),
                      help=f"{estimate_label(snap.estimate)}; 95% t-interval over the replicates. "
                           f"Target: {snap.estimate.target}.")
            c2.caption(f"{estimate_label(snap.estimate)}: {estimate_note(snap.estimate)}")
        elif snap.estimate is not None:
            why = ("SLQ estimates every q > 0; q = 0 is a rank" if is_slq(snap.estimate)
                   else "Sketch estimates cover q ≥ 1 only")
            c2.metric(f"Estimate (q = {label})", "—", help=f"{why}; below, see the bounds.")
        if snap.bounds is not None:
            if "2" in snap.bounds.exact_orders:
                c3.metric("VS₂ (exact)", interval_text(*bounds_at(snap.bounds, 2.0)), help="By one pass over K in blocks.")
            if "inf" in snap.bounds.exact_orders:
                c4.metric("VS∞ (Lanczos)", interval_text(*bounds_at(snap.bounds, math.inf)),
                          help="1 / the largest eigenvalue, with the solver's tolerance.")
        status_panel(job, snap, job_key(ctx))
        st.plotly_chart(band_figure(snap, first, q, n), key="q_profile")

    panel()


@shared_cache("results", spinner="Computing the kernel matrix of a subsample…", hash_funcs=compute.HASH)
def heatmap(view: View, featurizer: str, kernel: str, kernel_params: tuple, sort: str, order_key: tuple,
            _top: Optional[np.ndarray] = None, max_items: int = compute.HEATMAP_MAX, seed: int = 0) -> dict:
    """The kernel matrix of a seeded subsample, ordered by group or by ``_top`` (the top Lanczos eigenvector).

    ``order_key`` names ``_top`` for the cache (the job's key and its k).
    """
    kern = resolved_kernel(view, featurizer, kernel, kernel_params)
    return compute.kernel_sample(view.data, compute.features(view, featurizer, show_progress=False), _top, sort,
                                 {"kernel": kern}, max_items, seed)


def spectrum_panel(job: workers.BackgroundJob, n: int, key: tuple):
    """The live part of the Spectrum page: the top eigenvalues so far and the progress (``key``: the job's).

    Returns the bounds of this run (their Ritz vectors feed the galleries); a later Lanczos step
    redraws the whole page so the galleries follow.
    """
    from diversity_core.report.figures import spectrum_figure

    start = snapshot(job)
    shown_k = None if start.bounds is None else start.bounds.k

    @st.fragment(run_every=POLL_SECONDS if start.running else None)
    def panel():
        snap = snapshot(job)
        k = None if snap.bounds is None else snap.bounds.k
        if (start.running and not snap.running) or k != shown_k:
            st.rerun()
        status_panel(job, snap, key)
        if snap.bounds is None or not snap.bounds.k:
            st.info("The top eigenvalues appear here once the first Lanczos step ends.", icon=":material/hourglass:")
            return
        b = snap.bounds
        if b.settings.get("method") == "nystrom":
            st.plotly_chart(spectrum_figure(b.top_eigenvalues, title=f"Lower bounds on the {b.k} largest eigenvalues "
                                            f"(Nyström, m = {b.settings['m']})"), key="spectrum")
            st.caption(f"At {n} items each Lanczos product would be a pass over the whole kernel matrix, so the "
                       "spectrum comes from a Nyström sketch, which lies below the kernel: each value is a lower "
                       f"bound on the true eigenvalue, and the other eigenvalues share the remaining mass "
                       f"{b.residual_mass:.4f}. No eigenvectors here, so no galleries.")
            return
        st.plotly_chart(spectrum_figure(b.top_eigenvalues, title=f"The {b.k} largest eigenvalues (Lanczos)"),
                        key="spectrum")
        st.caption(f"The top {b.k} of {n} eigenvalues of the density matrix, each to within {b.tolerance:.1e}; "
                   f"the other {n - b.k} share the remaining mass {b.residual_mass:.4f} (in the cumulative panel, "
                   "the curve stops short of 1 by that much).")

    panel()
    return start.bounds
