"""Carrying out a :class:`~diversity_core.approx.plan.ScorePlan` beyond the exact paths.

- :func:`run_plan` runs what :func:`~diversity_core.approx.plan_scores` decided (SLQ, guaranteed
  bounds by Lanczos or Nystrom, a sketch estimate, and ``approx="auto"``'s combinations) and
  yields a :class:`PlanStep` each time a result improves. It owns, once for the CLI and the app:
  which orders each estimator takes (SLQ q > 0, sketches q >= 1, the bounds the orders the
  estimate leaves out, q = 0), the sizes (the plan's), and the refinement schedule (the first
  Lanczos step before the estimate, for the galleries; then the estimate; then the bounds'
  progression of k, or Nystrom sketches of growing m up to the plan's).
- :func:`run_plan_to_end` runs it to the end and returns the last results (:class:`PlanResult`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
import scipy.sparse as sp

from .._display import NotebookDisplay, order_lines, require_plotly, short_repr
from .._orders import check_q
from .._progress import DETAIL_SEPARATOR, ProgressCallback
from .._validation import check_scalar
from ..entropy import default_q_grid
from ..exceptions import DiversityInputError
from ..kernels import DEFAULT_KERNEL
from .bounds import iter_vendi_bounds, vendi_bounds
from .loewner import nystrom_bounds
from .plan import API_NAMES, ScorePlan, _knob, binary_features
from .sketches import vendi_estimate
from .slq import iter_vendi_slq

__all__ = ["run_plan", "run_plan_to_end", "PlanStep", "PlanResult", "NYSTROM_MS", "PARTS"]

#: Landmarks of the Nystrom bounds' refinement, in turn, below the plan's m (which comes last).
NYSTROM_MS = (500, 1000, 2000)
#: The parts a step reports, and how a progress message names each (its stage, before
#: :data:`~diversity_core.DETAIL_SEPARATOR`).
PARTS = {"bounds": "guaranteed bounds", "slq": "SLQ estimate", "estimate": "sketch estimate"}
#: Share of the progress bar the first Lanczos step takes, and where the estimate's share ends
#: when bounds follow it.
_FIRST_SHARE, _ESTIMATE_END = 0.1, 0.55
#: Steps of the overall progress scale.
_SCALE = 1000


@dataclass(frozen=True)
class PlanStep:
    """One result of :func:`run_plan`, better than the previous one of the same part.

    Attributes
    ----------
    part : {"bounds", "estimate"}
        Guaranteed bounds (:class:`~diversity_core.approx.VendiBounds`), or an estimate
        (:class:`~diversity_core.approx.VendiSLQ` or :class:`~diversity_core.approx.VendiEstimate`).
    result : VendiBounds, VendiSLQ or VendiEstimate
    final : bool
        Whether it is the last result of its part.
    """

    part: str
    result: Any
    final: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"part": self.part, "final": self.final, "result": self.result.to_dict()}


@dataclass(frozen=True, repr=False)
class PlanResult(NotebookDisplay):
    """The last results of :func:`run_plan` (:func:`run_plan_to_end`).

    Attributes
    ----------
    plan : ScorePlan
    bounds : VendiBounds or None
        The guaranteed bounds, where the plan runs them for the orders asked.
    estimate : VendiSLQ, VendiEstimate or None
        The estimate (its ``qs`` are the orders it took).
    """

    plan: ScorePlan
    bounds: Any = None
    estimate: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"plan": self.plan.to_dict(),
                "bounds": None if self.bounds is None else self.bounds.to_dict(),
                "estimate": None if self.estimate is None else self.estimate.to_dict()}

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        p, fields = self.plan, []
        for part, result in (("estimate", self.estimate), ("bounds", self.bounds)):
            if result is not None:
                fields.append((part, repr(result).splitlines()[0]))
        e = self.estimate
        if e is not None:
            fields += order_lines(e.qs, e.value, e.low, e.high, kind="estimate", level=e.confidence_level)
        elif self.bounds is not None:
            b = self.bounds
            fields += order_lines(b.qs, None, b.low, b.high, kind="bound")
        return short_repr(f"PlanResult(path={p.path!r}, n={p.n}, d={p.d}, kernel={p.kernel!r})",
                          [("reason", p.reason), *fields])

    def to_frame(self):
        """Tidy DataFrame: the estimate's rows, then the bounds' rows, with a column ``part``."""
        import pandas as pd

        frames = [r.to_frame().assign(part=part) for part, r in (("estimate", self.estimate), ("bounds", self.bounds))
                  if r is not None]
        if not frames:
            from .._display import tidy_frame

            return tidy_frame([])
        return pd.concat(frames, ignore_index=True)

    def plot(self, *, q=None):
        """The app's figure: the guaranteed band and the estimate against q (``vendi_bounds_figure``).

        ``q`` marks an order. Returns a plotly Figure; raises MissingDependencyError without plotly,
        DiversityInputError when the plan ran neither part (an exact path).
        """
        if self.bounds is None and self.estimate is None:
            raise DiversityInputError(f"the plan's path {self.plan.path!r} ran no bounds or estimate to draw; "
                                      "an exact path gives a Spectrum (its .plot() draws the q-profile).")
        require_plotly("PlanResult.plot()")
        from ..report.figures import vendi_bounds_figure
        from ._results import estimate_label

        label = estimate_label(self.estimate) if self.estimate is not None else "estimate"
        return vendi_bounds_figure(None, self.bounds, self.estimate, q=q, n=self.plan.n, estimate_label=label)


def run_plan(
    X,
    plan: ScorePlan,
    *,
    kernel=DEFAULT_KERNEL,
    q=None,
    weights=None,
    rng=0,
    time_budget: Optional[float] = None,
    max_seconds: Optional[float] = None,
    n_eigenvectors: int = 0,
    replicates: int = 5,
    landmarks: str = "rpcholesky",
    rtol: Optional[float] = 0.01,
    precision: str = "auto",
    device: str = "cpu",
    refine: bool = True,
    companions: bool = False,
    names: Optional[dict] = None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> Iterator[PlanStep]:
    r"""Carry out an approximate ScorePlan, yielding each result as it improves.

    Parameters
    ----------
    X : array-like of shape (n, d), sparse matrix, RowSource, dask.array.Array, or (n, n) K
        The items the plan was made for (as each estimator takes them).
    plan : ScorePlan
        From :func:`~diversity_core.approx.plan_scores`, beyond the exact paths (path ``"slq"``,
        ``"bounds"`` or ``"sketch"``).
    kernel : str or Kernel, default "cosine"
        The plan's kernel (a resolved kernel object, or a name with ``**kernel_params``).
    q : float, 'inf' or sequence of orders, optional
        The orders asked for; default the plan's (every order of
        :func:`~diversity_core.default_q_grid` when it names none). Each part takes its own:
        SLQ the orders q > 0, a sketch the orders q >= 1, the bounds every order on path
        ``"bounds"`` and, beside an estimate, the orders it leaves out (q = 0).
    weights : array-like of shape (n,), optional
    rng : int or Generator, default 0
        An int seeds each part alike, so a part's result does not depend on the schedule.
    time_budget : float, optional
        Seconds of each progression of the Lanczos bounds (no step starts that would overrun it).
    max_seconds : float, optional
        Seconds of the SLQ estimate (no batch of probes starts that would end after it).
    n_eigenvectors : int, default 0
        Ritz vectors kept on the Lanczos bounds (galleries).
    replicates, landmarks : int, str
        Sketch estimates: independent sketches (default 5), Nystrom landmark rule.
    rtol, precision, device :
        SLQ's settings (:func:`~diversity_core.approx.vendi_slq`).
    refine : bool, default True
        The refinement schedule: where an estimate runs beside Lanczos bounds of several steps,
        the first step comes first (seconds; its eigenvectors fill galleries), and Nystrom bounds
        come from sketches of growing m (:data:`NYSTROM_MS` below the plan's m, then the plan's).
        False: each part once at the plan's sizes (the final results are the same).
    companions : bool, default False
        Also run what the plan sized beside its path where no asked order needs it: the bounds on
        every asked order and on :func:`~diversity_core.default_q_grid` (a guaranteed band, also
        beside an estimate), and a sketch estimate beside the bounds.
    names : dict, optional
        How messages name the knobs (:data:`~diversity_core.approx.plan.CLI_NAMES` for the CLI).
    progress : callable, optional
        ``progress(done, total, message)`` on one scale for the whole plan; the message's stage
        (before :data:`~diversity_core.DETAIL_SEPARATOR`) is one of :data:`PARTS`' values.
        Raising in it cancels (the exception propagates).
    **kernel_params
        e.g. ``sigma=0.5``.

    Yields
    ------
    PlanStep
        ``part`` ``"bounds"`` (their k never decreases) or ``"estimate"``; ``final`` on each part's last.

    Raises
    ------
    DiversityInputError
        An exact plan (compute the spectrum instead), no asked order the plan's path can give
        (SLQ: q > 0; a sketch: q >= 1), or a MinHash sketch (``tanimoto_rf``) planned for
        in-memory X that is not 0/1 (checked before any part runs).

    Notes
    -----
    The cost is that of the parts (:func:`~diversity_core.approx.vendi_slq`,
    :func:`~diversity_core.approx.vendi_bounds`, :func:`~diversity_core.approx.vendi_estimate`);
    ``refine`` adds the first Lanczos step again (seconds) and the smaller Nystrom sketches.
    Each part runs in ``plan.context(part)`` (the plan's budget and chunk size).

    Examples
    --------
    >>> import numpy as np
    >>> from diversity_core.approx import plan_scores
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> p = plan_scores(300, 4, kernel="rbf", q=[1.0], approx="slq", k=32, probes=8)
    >>> steps = list(run_plan(X, p, kernel="rbf", sigma=1.0))
    >>> steps[-1].part, steps[-1].final, steps[-1].result.qs.tolist()
    ('estimate', True, [1.0])
    """
    if not isinstance(plan, ScorePlan):
        raise DiversityInputError(f"plan must be a ScorePlan from plan_scores; got {type(plan).__name__}.")
    if plan.exact:
        raise DiversityInputError(
            f"the plan takes the exact path {plan.path!r}: compute the spectrum (compute_spectrum, vendi_score); "
            "run_plan carries out the approximate paths (approx='auto' beyond the budget, 'slq', 'bounds', a sketch)."
        )
    # the caller's orders in the caller's order (each estimator sorts its own)
    qs = np.asarray(plan.qs if q is None and plan.qs else default_q_grid() if q is None else
                    list(dict.fromkeys(check_q(q).ravel().tolist())), dtype=np.float64)
    if qs.size == 0:
        raise DiversityInputError("q must name at least one order (a number >= 0 or 'inf').")
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    knobs = dict(API_NAMES, **(names or {}))
    orders = _orders(plan, qs, bool(companions), knobs)
    if "sketch" in orders and plan.sketch.method == "tanimoto_rf" and (isinstance(X, np.ndarray) or sp.issparse(X)) \
            and not binary_features(X):
        # refused before the parts ahead of the sketch run (minutes at large n), not after them
        raise DiversityInputError(
            "the plan's sketch is tanimoto_rf (MinHash), which needs 0/1 bits, but X holds other values (counts?). "
            "Make the plan with binary=binary_features(X) (it then sketches by Nystrom), or binarize X."
        )
    settings = {"kernel": kernel, "weights": weights, "rng": rng, "time_budget": time_budget,
                "max_seconds": max_seconds, "n_eigenvectors": n_eigenvectors, "replicates": replicates,
                "landmarks": landmarks, "rtol": rtol, "precision": precision, "device": device,
                "kernel_params": kernel_params}
    return _run(X, plan, orders, settings, bool(refine), progress)


def run_plan_to_end(X, plan: ScorePlan, **kwargs) -> PlanResult:
    """Run :func:`run_plan` to the end (``refine=False`` unless given) and return its last results.

    Parameters as for :func:`run_plan`.

    Returns
    -------
    PlanResult
        ``bounds`` and ``estimate``: the final result of each part the plan ran (or None).
    """
    kwargs.setdefault("refine", False)
    last = {"bounds": None, "estimate": None}
    for step in run_plan(X, plan, **kwargs):
        last[step.part] = step.result
    return PlanResult(plan=plan, bounds=last["bounds"], estimate=last["estimate"])


# ---------------------------------------------------------------------------------------
# the orders each part takes
# ---------------------------------------------------------------------------------------
def _orders(plan: ScorePlan, qs: np.ndarray, companions: bool, knobs: dict) -> dict:
    """``{"slq" | "sketch" | "bounds": orders}`` for the parts that run (an empty dict entry is left out)."""
    parts = {}
    if plan.path == "slq":
        kept = qs[qs > 0]
        if kept.size == 0:
            raise DiversityInputError(
                "SLQ estimates VS_q for orders q > 0 only (q = 0 counts eigenvalues above a threshold); for q = 0 "
                f"use guaranteed bounds ({_knob(knobs, 'approx', 'bounds')})."
            )
        parts["slq"] = kept
    elif plan.path == "sketch" or (plan.path == "bounds" and companions and plan.sketch is not None):
        kept = qs[qs >= 1]
        if kept.size:
            parts["sketch"] = kept
        elif plan.path == "sketch":
            raise DiversityInputError(
                "sketch estimates need an order q >= 1 (they are 10-90% off below it); below 1 use guaranteed "
                f"bounds ({_knob(knobs, 'approx', 'bounds')})."
            )
    if plan.bounds is not None:
        if companions:
            # a guaranteed band: the asked orders and the profile's grid (bounds cost O(k) per order)
            parts["bounds"] = np.unique(np.concatenate([qs, default_q_grid()]))
            return parts
        covered = parts.get("slq", parts.get("sketch")) if plan.path != "bounds" else None
        bounded = qs if covered is None else qs[~np.isin(qs, covered)]
        if bounded.size:
            parts["bounds"] = bounded
    return parts


# ---------------------------------------------------------------------------------------
# the schedule
# ---------------------------------------------------------------------------------------
def _run(X, plan: ScorePlan, orders: dict, s: dict, refine: bool, progress) -> Iterator[PlanStep]:
    """The generator of :func:`run_plan` on checked inputs."""
    b = plan.bounds if "bounds" in orders else None
    lanczos = b is not None and b.method == "lanczos"
    estimate = "slq" if "slq" in orders else "sketch" if "sketch" in orders else None
    first = refine and lanczos and estimate is not None and len(b.ks) > 1
    start = 0.0
    shown = [-1]  # the k of the last bounds yielded: they never go back to a smaller k
    if first:
        # k = ks[0] costs seconds where K fits in memory, and the galleries need its eigenvectors
        yield from _lanczos(X, plan, b.ks[:1], orders["bounds"], s, _share(progress, "bounds", 0.0, _FIRST_SHARE),
                            shown, final=False)
        start = _FIRST_SHARE
    end = _ESTIMATE_END if b is not None else 1.0
    if estimate == "slq":
        yield from _slq(X, plan, orders["slq"], s, _share(progress, "slq", start, end))
        start = end
    elif estimate == "sketch":
        yield from _sketch(X, plan, orders["sketch"], s, _share(progress, "estimate", start, end))
        start = end
    if b is None:
        return
    if lanczos:
        # the whole progression again (its first step is seconds): the final bounds are those of one
        # vendi_bounds call, whatever ran before
        yield from _lanczos(X, plan, b.ks, orders["bounds"], s, _share(progress, "bounds", start, 1.0), shown,
                            final=True)
        return
    # Nystrom: past the float32 matrix each Lanczos product would be a pass over K
    n = plan.n
    ms = [m for m in NYSTROM_MS if m < min(n, b.m)] + [b.m] if refine else [b.m]
    for i, m in enumerate(ms):
        share = _share(progress, "bounds", start + (1 - start) * i / len(ms), start + (1 - start) * (i + 1) / len(ms))
        last = i == len(ms) - 1
        with plan.context("bounds"):
            if last:
                # vendi_bounds' own rule (the exact VS_2 pass where n allows), as a direct call gives
                result = vendi_bounds(X, kernel=s["kernel"], q=orders["bounds"], weights=s["weights"],
                                      method="nystrom", m=m, rng=s["rng"], progress=share, **s["kernel_params"])
            else:
                result = nystrom_bounds(X, kernel=s["kernel"], m=m, q=orders["bounds"], weights=s["weights"],
                                        rng=s["rng"], progress=share, **s["kernel_params"])
        yield PlanStep(part="bounds", result=result, final=last)


def _lanczos(X, plan: ScorePlan, ks, qs, s: dict, progress, shown: list, *, final: bool) -> Iterator[PlanStep]:
    """Lanczos bounds over the steps ``ks``: each one whose k is above the last shown; the last marked ``final``."""
    it = _in_context(plan, "bounds", lambda: iter_vendi_bounds(
        X, kernel=s["kernel"], ks=list(ks), q=qs, weights=s["weights"], time_budget=s["time_budget"],
        n_eigenvectors=s["n_eigenvectors"], rng=s["rng"], progress=progress, **s["kernel_params"]))
    for result in it:
        last = _last(result)
        if result.k > shown[0] or (last and final and result.k >= shown[0]):
            shown[0] = result.k
            yield PlanStep(part="bounds", result=result, final=last and final)


def _slq(X, plan: ScorePlan, qs, s: dict, progress) -> Iterator[PlanStep]:
    """The SLQ estimate batch by batch (:func:`~diversity_core.approx.iter_vendi_slq`)."""
    it = _in_context(plan, None, lambda: iter_vendi_slq(
        X, kernel=s["kernel"], q=qs, weights=s["weights"], rtol=s["rtol"], max_seconds=s["max_seconds"],
        precision=s["precision"], device=s["device"], rng=s["rng"], progress=progress, **plan.slq.kwargs(),
        **s["kernel_params"]))
    for result in it:
        yield PlanStep(part="estimate", result=result, final=_last(result))


def _sketch(X, plan: ScorePlan, qs, s: dict, progress) -> Iterator[PlanStep]:
    """The plan's sketch estimate for the orders q >= 1."""
    with plan.context("sketch"):
        result = vendi_estimate(X, kernel=s["kernel"], q=qs, replicates=s["replicates"], landmarks=s["landmarks"],
                                weights=s["weights"], rng=s["rng"], progress=progress, **plan.sketch.kwargs(),
                                **s["kernel_params"])
    yield PlanStep(part="estimate", result=result, final=True)


def _in_context(plan: ScorePlan, part: Optional[str], make) -> Iterator:
    """The items of the iterator ``make()``, each computed inside ``plan.context(part)`` (not while yielded)."""
    with plan.context(part):
        it = make()
    while True:
        with plan.context(part):
            try:
                item = next(it)
            except StopIteration:
                return
        yield item


def _last(result) -> bool:
    """Whether a progression's result is its last: the estimators say why they stopped on it alone.

    (Reading one result ahead instead would hold each one back until the next step is computed.)
    """
    return bool(result.settings.get("stopped"))


def _share(progress, part: str, low: float, high: float):
    """A part's progress callback mapped onto ``[low, high]`` of the plan's scale, its stage named."""
    if progress is None:
        return None
    label = PARTS[part]

    def report(done: int, total: int, message: str = "") -> None:
        frac = done / total if total else 0.0
        at = low + (high - low) * min(max(frac, 0.0), 1.0)
        progress(int(math.floor(at * _SCALE)), _SCALE, f"{label}{DETAIL_SEPARATOR}{message}" if message else label)

    return report
