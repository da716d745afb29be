r"""Full-sample Vendi scores at any n by stochastic Lanczos quadrature (SLQ) with a deflated head.

.. math:: \mathrm{tr} f(\rho) = \underbrace{\mathrm{tr}\big(Q^T f(\rho) Q\big)}_{\text{head}}
          + \underbrace{\mathbb{E}_g\, g^T P f(\rho) P g}_{\text{tail}}, \qquad P = I - Q Q^T

(the Hutch++ split of Meyer, Musco, Musco & Woodruff 2021, in the Krylov-aware form of Chen &
Hallman 2023): Q is an orthonormal basis of the block Krylov space :math:`K_s(\rho, \Omega)`,
which holds the top of the spectrum; the head is computed on Q's Ritz vectors by Lanczos
quadrature read from the same block Krylov run (no further products), the tail by Rademacher
probes :math:`g` projected by P, each with its own Lanczos quadrature on rho (Ubaru, Chen & Saad
2017). Every quadrature is bracketed by its Gauss and Gauss-Radau rules (node 0), which holds
for :math:`x^q` and :math:`-x \log x` at every step (:mod:`._quadrature`). Then

- VS_q = (tr rho^q)^{1/(1-q)} for q in (0, inf), q != 1; VS_1 = exp(-tr rho log rho);
- VS_inf = 1 / lambda_max from the top Ritz value of the head;
- q = 0 (the rank) is refused: x^0 jumps at 0, no quadrature sees it; the bounds cover it.
"""

from __future__ import annotations

import math
import time
from typing import Iterator, Optional

import numpy as np
import scipy.linalg

from ..._config import check_memory
from ..._orders import check_q, q_key
from ..._progress import ProgressCallback, report
from ..._stats import t_interval
from ..._validation import check_random_state, check_scalar
from ...entropy import support_tol
from ...exceptions import DiversityInputError
from ...kernels import DEFAULT_KERNEL
from .._operators import KernelOperator, kernel_operator
from ._quadrature import (
    BlockKrylov,
    LanczosBatch,
    lanczos_coefficients,
    perturbation_bound,
    quadrature_bracket,
    spectral_values,
    support_bound,
    trace_range,
)
from ._result import TARGET, VendiSLQ

__all__ = ["vendi_slq", "iter_vendi_slq", "DEFAULT_QS", "HEAD_STEPS"]

#: Orders estimated by default.
DEFAULT_QS = (0.5, 1.0, 2.0, math.inf)
#: Most continuation steps of the head's block Krylov space (its quadrature depth): Ritz vectors
#: near eigenvectors converge in a few, and its basis holds block x (k / block + HEAD_STEPS) columns.
HEAD_STEPS = 16
#: Fewest blocks of the head: ``block`` is lowered to k / 4 when needed.
_MIN_BLOCKS = 4
#: Share of a time budget (``max_seconds``) the head's own passes may take.
_HEAD_SHARE = 0.4
#: Lanczos steps every probe takes before its quadrature may be judged converged.
_MIN_STEPS = 6
#: The head's continuation stops once its quadrature brackets are below this share of the
#: statistical and rounding parts of the half-width.
_HEAD_NEGLIGIBLE = 0.02
#: Factor on the latest pass's time in the prediction of the next one (a time budget is not overrun).
_PASS_MARGIN = 1.05
#: Steps between two convergence checks of a batch.
_CHECK_EVERY = 3
#: A batch's quadrature is converged when its bracket is below this share of the statistical
#: half-width and the rounding bound (or a quarter of the requested tolerance).
_QUAD_SHARE = 0.3


def iter_vendi_slq(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    q=DEFAULT_QS,
    weights=None,
    probes: int = 64,
    batch: int = 32,
    k: int = 512,
    block: int = 64,
    steps: int = 30,
    rtol: Optional[float] = 0.01,
    max_seconds: Optional[float] = None,
    confidence_level: float = 0.95,
    precision: str = "auto",
    device: str = "cpu",
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> Iterator[VendiSLQ]:
    """Progressive SLQ estimates: one :class:`VendiSLQ` per batch of probes, the interval shrinking.

    The first result comes after the head (the block Krylov space) and the first ``batch``
    probes; each later one adds ``batch`` probes. The progression stops when every order's
    relative half-width is at most ``rtol``, when ``probes`` probes are used, or before a batch
    whose predicted time would overrun ``max_seconds`` (inside a batch, the Lanczos steps stop
    when the time is up, and the wider quadrature brackets say so). ``progress`` is called once
    per pass over K; raising in it cancels. Parameters as for :func:`vendi_slq`.
    """
    qs = _check_orders(q)
    probes = check_scalar(probes, "probes", int, min_val=2)
    batch = min(check_scalar(batch, "batch", int, min_val=2), probes)
    k = check_scalar(k, "k", int, min_val=0)
    block = check_scalar(block, "block", int, min_val=1)
    steps = check_scalar(steps, "steps", int, min_val=2)
    if rtol is not None:
        rtol = check_scalar(rtol, "rtol", float, min_val=0.0, include_boundaries="neither")
    if max_seconds is not None:
        max_seconds = check_scalar(max_seconds, "max_seconds", float, min_val=0.0, include_boundaries="neither")
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    generator = check_random_state(rng)
    if precision == "auto":
        # x^q with q < 1 is steep near 0, where float32 rounding of K moves the small eigenvalues
        precision = "float64" if np.any(qs < 1.0) else "float32"
    start = time.perf_counter()
    op = kernel_operator(X, kernel=kernel, weights=weights, precision=precision, device=device, **kernel_params)
    n = op.n
    # at least _MIN_BLOCKS blocks: the first block is random, the top of the spectrum comes from the others
    block = min(block, n, max(1, math.ceil(k / _MIN_BLOCKS))) if k else min(block, n)
    s = 0 if k == 0 else max(1, math.ceil(min(k, n) / block))
    head_cols = min(n, block * (s + min(steps, HEAD_STEPS))) if s else 0
    need = 8.0 * n * (head_cols + batch * (steps + 1) + 4 * (block + batch))
    check_memory(need, what=f"the Lanczos vectors of SLQ (n = {n}, k = {k}, {steps} steps, batches of {batch})",
                 hint="Lower k, steps or batch.")
    settings = {"k": k, "block": block, "max_steps": steps, "batch": batch, "max_probes": probes, "rtol": rtol,
                "max_seconds": max_seconds, **{key: v for key, v in op.to_dict().items() if key != "kernel"}}
    return _iterate(op, qs, probes=probes, batch=batch, s=s, block=block, steps=steps, rtol=rtol,
                    max_seconds=max_seconds, level=level, rng=generator, progress=progress, start=start,
                    settings=settings)


def vendi_slq(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    q=DEFAULT_QS,
    weights=None,
    probes: int = 64,
    batch: int = 32,
    k: int = 512,
    block: int = 64,
    steps: int = 30,
    rtol: Optional[float] = 0.01,
    max_seconds: Optional[float] = None,
    confidence_level: float = 0.95,
    precision: str = "auto",
    device: str = "cpu",
    rng=None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> VendiSLQ:
    r"""Estimate VS_q of the full sample at any n, with an interval, by stochastic Lanczos quadrature.

    .. math:: \widehat{\mathrm{tr} f(\rho)} = \sum_{i \le k} y_i^T f(\rho) y_i
              + \frac{1}{p} \sum_{j \le p} g_j^T P f(\rho) P g_j,\qquad
              \mathrm{VS}_q = \big(\mathrm{tr}\,\rho^q\big)^{1/(1-q)},\quad
              \mathrm{VS}_1 = e^{-\mathrm{tr}\,\rho \log \rho}

    with :math:`\rho = D^{1/2} K D^{1/2}` (K / n unweighted), :math:`y_i` the Ritz vectors of
    the block Krylov space :math:`K_s(\rho, \Omega)` of dimension k, P the projector onto its
    complement and :math:`g_j` Rademacher probes; every term :math:`z^T f(\rho) z` by Lanczos
    quadrature (Gauss rule, bracketed by the Gauss-Radau rule with a node at 0).

    Parameters
    ----------
    X : array-like (n, d), sparse matrix, RowSource, path, dask.array.Array, or (n, n) K
        Items (see :func:`~diversity_core.approx.kernel_operator`: files are read into memory,
        Dask arrays stay on the workers, a precomputed K may be a ``numpy.memmap``).
    kernel : str or Kernel, default "cosine"
        The default of every function that takes a kernel (:data:`~diversity_core.kernels.DEFAULT_KERNEL`),
        so a bound or estimate is of the value the exact function gives without naming a kernel.
        Any kernel (the one of the exact path; bandwidths fixed on X with the weights).
    q : float, "inf" or sequence, default (0.5, 1, 2, inf)
        Orders in (0, inf]. q = 0 (the rank of rho) is refused: use
        :func:`~diversity_core.approx.vendi_bounds` (``--approx bounds``).
    weights : array-like of shape (n,), optional
    probes : int, default 64
        Most Rademacher probes (at least 2; the progression stops earlier at ``rtol``).
    batch : int, default 32
        Probes per batch: they share each pass over K, and one result comes per batch.
    k : int, default 512
        Dimension of the deflated head (rounded up to whole blocks, at most n): larger k removes
        more of the top of the spectrum from the probes' variance. 0: plain Hutchinson.
    block : int, default 64
        Block size of the head's Krylov space (s = ceil(k / block) blocks; lowered to k / 4 so
        that there are at least 4: the first block is random, the top of the spectrum comes
        from the products).
    steps : int, default 30
        Most Lanczos steps per probe (and, up to 16, continuation steps of the head); a batch stops
        earlier once its quadrature brackets are below 0.3 of the statistical half-width plus the
        rounding bound.
    rtol : float or None, default 0.01
        Stop adding probes once every order's relative half-width ``(high - low) / (2 value)``
        is at most this (None: use all ``probes``).
    max_seconds : float, optional
        Time budget: the head stops growing before its passes would take more than 40% of it
        (a smaller head is still exact; the probes need the rest), no batch starts that is
        predicted to overrun it, and a running batch stops its Lanczos steps before a pass
        predicted to end after it (the prediction: the latest pass with the work since the one
        before it, plus 5%).
    confidence_level : float, default 0.95
        Level of the t-interval over the probes.
    precision : {"auto", "float32", "float64"}, default "auto"
        Tiles of K and their products in single precision (float64 accumulation; the rounding
        is stated and enters the interval) or double (about twice the time). ``"auto"``:
        float64 when an order below 1 is asked (x^q is steep near 0, where float32 rounding of K
        moves the many small eigenvalues), float32 otherwise.
    device : {"cpu", "cuda", "auto", "torch-cpu"}, default "cpu"
        Where the tiles of K are formed (see :func:`~diversity_core.approx.kernel_operator`).
    rng : int or Generator, optional
        The head's start block and the probes.
    progress : callable, optional
        ``progress(done, total, message)`` once per pass over K; raising in it cancels.
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    VendiSLQ
        ``.vendi(q)``, ``.interval(q)``; ``target`` says it is an estimate of the full-sample
        value; ``probes``, ``steps``, ``k`` and the three parts of the half-width are stated.

    Raises
    ------
    DiversityInputError
        q = 0 (the message names ``vendi_bounds`` / ``--approx bounds``), bad data or options.
    MemoryBudgetError
        The rows or the Lanczos vectors do not fit the memory budget.

    Notes
    -----
    **Error model.** On the trace, half-width = t-interval over the probes (the head is fixed
    given Omega; the tail is unbiased for tr(P f(rho) P)) + half the Gauss / Gauss-Radau
    brackets of the head and of the mean probe (a bound on the quadrature error: for
    :math:`x^q` and :math:`-x \log x` the two rules bracket the integral at every step, Golub &
    Meurant) + a bound on what the operator's rounding (:attr:`KernelOperator.entry_rtol`) and
    the support threshold can change (Lidskii and the modulus of continuity of f; see
    :func:`._quadrature.perturbation_bound`). The interval maps through the monotone
    :math:`T \mapsto T^{1/(1-q)}`. VS_inf: the top Ritz value theta of the head (a lower bound
    on lambda_max) and its residual r give ``[1 / (theta + r), 1 / theta]``, assuming no
    eigenvalue above theta was missed by the random start block.

    **What is hard.** For q < 1 near rank deficiency (smooth kernels on low-dimensional data),
    :math:`x^q` has an unbounded derivative at 0: the brackets close slowly, and eigenvalues
    below the float32 rounding level (1e-7 of the largest) are not resolved, which the rounding
    term states (use ``precision="float64"`` to shrink it). q = 0 counts eigenvalues above a
    threshold, a discontinuous function: bounds only.

    **Cost.** Passes over K: s - 1 for the head, then per batch at most ``steps`` passes with
    ``batch`` vectors, plus ``block`` while the head's continuation rides on the first batch's
    passes (until its brackets are below 2% of the statistical and rounding parts); a pass is
    O(n^2 d) kernel evaluations (half of K) and O(n^2 b) multiply-adds. Memory
    O(n (k + steps (block + batch))).

    References
    ----------
    .. [1] Ubaru, Chen & Saad, "Fast estimation of tr(f(A)) via stochastic Lanczos quadrature",
       SIAM J. Matrix Anal. Appl. 38(4), 2017.
    .. [2] Meyer, Musco, Musco & Woodruff, "Hutch++: optimal stochastic trace estimation", SOSA 2021.
    .. [3] Chen & Hallman, "Krylov-aware stochastic trace estimation", SIAM J. Matrix Anal.
       Appl. 44(3), 2023.
    .. [4] Golub & Meurant, "Matrices, Moments and Quadrature with Applications", Princeton
       University Press, 2010 (Gauss and Gauss-Radau bounds, ch. 6-7).
    .. [5] Friedman & Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
       Learning", TMLR 2023.

    Examples
    --------
    >>> import numpy as np
    >>> est = vendi_slq(np.eye(6), kernel="rbf", sigma=0.01, q=[1.0, 2.0], k=0, rng=0)
    >>> round(est.vendi(1.0), 6), round(est.vendi(2.0), 6)
    (6.0, 6.0)
    """
    *_, last = iter_vendi_slq(X, kernel=kernel, q=q, weights=weights, probes=probes, batch=batch, k=k, block=block,
                              steps=steps, rtol=rtol, max_seconds=max_seconds, confidence_level=confidence_level,
                              precision=precision, device=device, rng=rng, progress=progress, **kernel_params)
    return last


def _check_orders(q) -> np.ndarray:
    """Ascending orders in (0, inf]; q = 0 refused with the reason and the way out."""
    qs = np.unique(check_q(q).ravel())
    if qs.size == 0:
        raise DiversityInputError("q must name at least one order (a number > 0 or 'inf').")
    if np.any(qs == 0):
        raise DiversityInputError(
            "SLQ does not estimate VS_0: it is the rank of rho (the number of eigenvalues above the support "
            "threshold), a count that no quadrature of a smooth function sees. Use vendi_bounds (CLI: --approx "
            "bounds) for guaranteed bounds on VS_0, or leave q = 0 out."
        )
    return qs


# ---------------------------------------------------------------------------------------
# the progression
# ---------------------------------------------------------------------------------------
def _iterate(op: KernelOperator, qs: np.ndarray, *, probes: int, batch: int, s: int, block: int, steps: int,
             rtol: Optional[float], max_seconds: Optional[float], level: float, rng: np.random.Generator,
             progress, start: float, settings: dict) -> Iterator[VendiSLQ]:
    """Head, then batches of probes; a result after each batch (see :func:`iter_vendi_slq`)."""
    n = op.n
    finite = qs[np.isfinite(qs)]
    batches = math.ceil(probes / batch)
    total = max(1, s - 1 + steps * batches)
    passes = [0]
    last_pass = [0.0]     # seconds of the latest pass and the work after the one before: the prediction of the next
    prev_end = [None]

    def run(blocks: list) -> np.ndarray:
        report(progress, passes[0], total, f"SLQ: pass {passes[0] + 1} over K")
        t0 = time.perf_counter()
        W = op.matmat(np.hstack(blocks) if len(blocks) > 1 else blocks[0])
        end = time.perf_counter()
        # the checks and brackets between two passes count too (100,000 items: passes alone under-predicted
        # a 900 s budget by 4 s)
        last_pass[0] = end - (t0 if prev_end[0] is None else prev_end[0])
        prev_end[0] = end
        passes[0] += 1
        return W

    def out_of_time(share: float = 1.0) -> bool:
        # the budget is kept, not overrun by a pass: stop before a pass predicted to end after it (with 5% for
        # the passes' spread and the result's assembly)
        return max_seconds is not None and time.perf_counter() - start + _PASS_MARGIN * last_pass[0] > share * max_seconds

    head = BlockKrylov(rng.standard_normal((n, block)), max_blocks=s + min(steps, HEAD_STEPS)) if s else None
    while head is not None and head.blocks < s and head.active:
        if head.blocks >= 2 and out_of_time(_HEAD_SHARE):
            # a smaller head is still a Krylov space and the split still exact: stop it before a pass that
            # would take the head past its share of the budget (the probes' Lanczos steps need the rest)
            s = head.blocks
            settings["head_cut"] = f"the head was kept to {_HEAD_SHARE:.0%} of the time budget: {s} blocks"
            break
        head.advance(run([head.vectors()]))
    state = _State(finite.size)
    head_live = head is not None and head.active
    head_est = _HeadEstimate.empty(finite.size) if head is None else None
    done = 0
    last_seconds = None
    while done < probes:
        t0 = time.perf_counter()
        v = min(batch, probes - done)
        g = rng.choice(np.array([-1.0, 1.0]), size=(n, v))
        if head is not None:
            # P g with P = I - Q Q^T, Q the basis of K_s (read afresh: the basis array grows)
            Q = head.V[:, : head.columns(s)]
            z = g - Q @ (Q.T @ g)
            del Q
        else:
            z = g
        lz = LanczosBatch(z, steps, rng)
        floor = None    # the rounding bound, from the largest Ritz value at the batch's first check
        while lz.active or head_live:
            cols = ([lz.vectors()] if lz.active else []) + ([head.vectors()] if head_live else [])
            W = run(cols)
            if lz.active:
                lz.advance(W[:, : lz.v])
                W = W[:, lz.v:]
            if head_live:
                head.advance(W)
                head_live = head.active
            j = lz.steps
            check_tail = j >= _MIN_STEPS and (j % _CHECK_EVERY == 0 or not lz.active)
            if out_of_time() and j >= 2:
                lz.max_steps = lz.steps
                head_live = False
            elif check_tail or (head_live and j >= 2):
                # the tail first (cheap); the head's brackets only once the tail's are small enough
                if floor is None:
                    top = _top(head, head_est, state, lz)
                    floor = _rounding(op, finite, *top)
                tail = lz.bracket(finite, sum(top)) if finite.size else (np.zeros((0, v)), np.zeros((0, v)))
                if check_tail and _converged(state, tail, None, finite, rtol, level, floor):
                    lz.max_steps = lz.steps
                    if head_live:
                        head_est = _head_estimate(head, s, finite, rng, steps, sum(top))
                        head_live = not _converged(state, tail, head_est, finite, rtol, level, floor)
                elif head_live:
                    # the head's brackets close long before the probes' (on 20,000 fingerprints after 9
                    # steps: 6e-5 against 0.018 on the entropy): once negligible, its block stops riding
                    # on the passes, which then carry the probes alone (a 100,000-item pass: 41 s -> 30 s);
                    # judged after every step from the second (one small eigenproblem each)
                    head_est = _head_estimate(head, s, finite, rng, steps, sum(top))
                    head_live = not _head_negligible(state, tail, head_est, finite, level, floor)
        top = _top(head, head_est, state, lz)
        if head is not None and (head_est is None or head_est.steps != (
                math.inf if head.exhausted else min(head.exact_steps(s), steps))):
            head_est = _head_estimate(head, s, finite, rng, steps, sum(top))
        tail = lz.bracket(finite, sum(top)) if finite.size else (np.zeros((0, v)), np.zeros((0, v)))
        state.add(tail, lz)
        done += v
        last_seconds = time.perf_counter() - t0
        settings.setdefault("batches", []).append(int(lz.steps))
        res = _result(op, qs, finite, state, head, head_est, s, level, settings, start)
        stop = ""
        if done >= probes:
            stop = "probes"
        elif max_seconds is not None and time.perf_counter() - start + last_seconds > max_seconds:
            stop = f"time budget: the next batch was predicted to end after {max_seconds:g} s"
        else:
            # an order is done when its interval is narrow enough, or when more probes would not
            # narrow it (the quadrature and rounding bounds dominate its half-width)
            narrow = np.zeros(qs.size, bool) if rtol is None else (res.high - res.low) <= 2.0 * rtol * res.value
            floored = res.statistical <= _QUAD_SHARE * (res.quadrature + res.rounding)
            if rtol is not None and np.all(narrow | floored):
                stop = (f"rtol {rtol:g} reached" if np.all(narrow) else
                        "more probes would not narrow the intervals (rtol reached, or the quadrature and rounding "
                        "bounds dominate)")
        if stop:
            res.settings["stopped"] = stop
            report(progress, total, total, "done")
            yield res
            return
        yield res


class _State:
    """The probes' quadrature brackets so far (per order, per probe)."""

    def __init__(self, m: int):
        self.lo = np.zeros((m, 0))
        self.hi = np.zeros((m, 0))
        self.top: list = []      # (theta, residual) of each batch's largest Ritz value
        self.steps = 0

    def add(self, tail, lz: LanczosBatch) -> None:
        g, r = tail
        self.lo = np.hstack([self.lo, np.minimum(g, r)])
        self.hi = np.hstack([self.hi, np.maximum(g, r)])
        self.steps = max(self.steps, lz.steps)
        self.top.append(_tail_top(lz))

    @property
    def probes(self) -> int:
        return self.lo.shape[1]


class _HeadEstimate:
    """The head's part of the trace (bracket per order) and the top Ritz value with its residual."""

    def __init__(self, lo, hi, theta, residual, steps, rank):
        self.lo, self.hi, self.theta, self.residual, self.steps, self.rank = lo, hi, theta, residual, steps, rank

    @classmethod
    def empty(cls, m: int):
        return cls(np.zeros(m), np.zeros(m), None, None, 0, 0)


def _head_estimate(head: BlockKrylov, s: int, qs: np.ndarray, rng, max_steps: int,
                   upper: float = math.inf) -> _HeadEstimate:
    """Brackets of sum_i y_i^T f(rho) y_i over the Ritz vectors y_i of K_s, from T alone."""
    T = head.matrix()
    cs = head.columns(s)
    r = head.exact_steps(s)
    top = _head_top(head)
    if head.exhausted:
        # T is rho on an invariant subspace holding K_s: the head is exact
        w, U = np.linalg.eigh(T)
        share = np.sum(U[:cs] ** 2, axis=0)
        value = spectral_values(w, qs) @ share if qs.size else np.zeros(0)
        return _HeadEstimate(value, value.copy(), *top, math.inf, cs)
    if r < 1 or cs == 0:
        return _HeadEstimate(np.zeros(qs.size), np.array([trace_range(q, head.n)[1] for q in qs]), *top, 0, cs)
    theta, Y = np.linalg.eigh(T[:cs, :cs])
    Y0 = np.zeros((T.shape[0], cs))
    Y0[:cs] = Y
    r = int(min(r, max_steps))
    alpha, beta = lanczos_coefficients(T, Y0, r, rng)
    if not qs.size:
        return _HeadEstimate(np.zeros(0), np.zeros(0), *top, r, cs)
    g, rr = quadrature_bracket(alpha, beta, np.ones(cs), qs, upper=upper)
    return _HeadEstimate(np.minimum(g, rr).sum(axis=1), np.maximum(g, rr).sum(axis=1), *top, r, cs)


def _head_top(head: BlockKrylov) -> tuple[float, float]:
    """The largest Ritz value over the multiplied blocks and its residual norm (0 once exhausted)."""
    T = head.matrix()
    c = head.columns(head.products)
    w, U = scipy.linalg.eigh(T[:c, :c], subset_by_index=[c - 1, c - 1])
    y = U[:, -1]
    residual = 0.0 if head.exhausted else float(np.linalg.norm(T[c:, :c] @ y))
    return float(w[-1]), residual


def _tail_top(lz: LanczosBatch) -> tuple[float, float]:
    """The largest Ritz value of a batch's probes and its residual ``beta_m |u_m|``."""
    m = lz.steps
    T = np.zeros((lz.v, m, m))
    idx = np.arange(m)
    T[:, idx, idx] = lz.alpha[:, :m]
    if m > 1:
        T[:, idx[:-1], idx[1:]] = T[:, idx[1:], idx[:-1]] = lz.beta[:, : m - 1]
    w, U = np.linalg.eigh(T)
    j = int(np.argmax(w[:, -1]))
    return float(w[j, -1]), float(abs(lz.beta[j, m - 1] * U[j, m - 1, -1]))


def _trace_tolerance(qs: np.ndarray, trace: np.ndarray, rtol: float) -> np.ndarray:
    """The trace-space half-width that gives a relative half-width rtol on VS_q."""
    scale = np.where(qs == 1.0, 1.0, np.abs(1.0 - qs) * np.abs(trace))
    return rtol * scale


def _mids(state: _State, tail) -> np.ndarray:
    """Midpoints of every probe's bracket (per order, per probe): the probes so far and the running batch's ``tail``."""
    g, r = tail
    return 0.5 * (np.hstack([state.lo, np.minimum(g, r)]) + np.hstack([state.hi, np.maximum(g, r)]))


def _statistical(mid: np.ndarray, level: float) -> np.ndarray:
    """The statistical half-width per order from the probes' midpoints :func:`_mids`."""
    return np.array([_half_width(row, level) for row in mid])


def _head_negligible(state: _State, tail, head: _HeadEstimate, qs: np.ndarray, level: float,
                     floor: np.ndarray) -> bool:
    """Whether the head's brackets are at most :data:`_HEAD_NEGLIGIBLE` of the statistical and rounding parts.

    Those parts do not shrink with more steps, so more head steps could not narrow the interval.
    """
    if not qs.size:
        return True
    stat = _statistical(_mids(state, tail), level)
    return bool(np.all(0.5 * (head.hi - head.lo) <= _HEAD_NEGLIGIBLE * (stat + floor)))


def _converged(state: _State, tail, head: Optional[_HeadEstimate], qs: np.ndarray, rtol, level,
               floor: np.ndarray) -> bool:
    """Whether the quadrature brackets (mean probe, and the head when given) are small enough.

    Small enough: below 0.3 of the other parts of the half-width (the statistical one, with
    the probes so far, and the rounding ``floor``), or a quarter of the requested tolerance.
    """
    if not qs.size:
        return True
    g, r = tail
    quad = 0.5 * np.abs(g - r).mean(axis=1)
    mid = _mids(state, tail)
    head_mid = np.zeros(qs.size)
    if head is not None:
        quad = quad + 0.5 * (head.hi - head.lo)
        head_mid = 0.5 * (head.lo + head.hi)
    stat = _statistical(mid, level)
    target = _trace_tolerance(qs, head_mid + mid.mean(axis=1), rtol if rtol is not None else 0.01)
    return bool(np.all(quad <= np.maximum(_QUAD_SHARE * (stat + floor), 0.25 * target)))


def _top(head, head_est, state: _State, lz: Optional[LanczosBatch] = None) -> tuple[float, float]:
    """``(theta, residual)``: the largest Ritz value seen (the head's, else the probes') and its residual."""
    if head is not None and head.products:
        return _head_top(head)
    tops = list(state.top) + ([_tail_top(lz)] if lz is not None and lz.steps else [])
    return max(tops) if tops else (1.0, 0.0)


def _rounding(op: KernelOperator, qs: np.ndarray, theta: float, resid: float) -> np.ndarray:
    """Bound on the trace change from the operator's rounding and from the support threshold."""
    n = op.n
    norm_rho = math.sqrt(max(min(1.0, theta + resid), 0.0))          # ||rho||_F <= sqrt(lambda_max)
    S = math.sqrt(n) * op.entry_rtol * norm_rho                        # ||E||_* <= sqrt(n) ||E||_F
    lam_top = min(1.0, theta + resid + op.entry_rtol * norm_rho)
    return perturbation_bound(S, n, qs, lam_top) + support_bound(support_tol(n, lam_top), n, qs)


def _half_width(values: np.ndarray, level: float) -> float:
    """Half-width of the t-interval of the mean of ``values``."""
    _, lo, hi = t_interval(values, level)
    return 0.5 * (hi - lo) if math.isfinite(lo) else math.inf


def _vs(trace: float, q: float) -> float:
    """VS_q from tr f_q(rho) (the entropy at q = 1)."""
    return math.exp(trace) if q == 1.0 else trace ** (1.0 / (1.0 - q))


def _result(op: KernelOperator, qs: np.ndarray, finite: np.ndarray, state: _State, head, head_est, s: int,
            level: float, settings: dict, start: float) -> VendiSLQ:
    """Assemble the estimate after the probes so far."""
    n = op.n
    m = qs.size
    out = {key: np.zeros(m) for key in ("value", "low", "high", "trace", "trace_low", "trace_high", "stderr",
                                        "statistical", "quadrature", "rounding")}
    # the largest eigenvalue: the head's top Ritz value (else the probes'), with its residual
    if head_est is not None and head_est.theta is not None:
        theta, resid = head_est.theta, head_est.residual
    else:
        theta, resid = _top(None, None, state)
    norm_rho = math.sqrt(max(min(1.0, theta + resid), 0.0))
    rounding = _rounding(op, finite, theta, resid)
    mid = 0.5 * (state.lo + state.hi)
    quad_tail = 0.5 * (state.hi - state.lo).mean(axis=1)
    for i, q in enumerate(finite):
        j = int(np.flatnonzero(qs == q)[0])
        head_mid = 0.5 * (head_est.lo[i] + head_est.hi[i])
        est = head_mid + float(mid[i].mean())
        se = float(mid[i].std(ddof=1)) / math.sqrt(mid.shape[1]) if mid.shape[1] > 1 else math.inf
        stat = _half_width(mid[i], level)
        quad = 0.5 * (head_est.hi[i] - head_est.lo[i]) + float(quad_tail[i])
        half = stat + quad + float(rounding[i])
        lo_range, hi_range = trace_range(q, n)
        t_est = min(max(est, lo_range), hi_range)
        t_lo, t_hi = max(est - half, lo_range), min(est + half, hi_range)
        a, b = _vs(t_lo, q), _vs(t_hi, q)
        out["value"][j] = _vs(t_est, q)
        out["low"][j], out["high"][j] = min(a, b), max(a, b)
        out["trace"][j], out["trace_low"][j], out["trace_high"][j] = est, t_lo, t_hi
        out["stderr"][j], out["statistical"][j], out["quadrature"][j] = se, stat, quad
        out["rounding"][j] = float(rounding[i])
    if np.isinf(qs[-1]):
        # VS_inf = 1 / lambda_max, lambda_max in [theta, theta + r] (+ the operator's rounding)
        e = op.entry_rtol * norm_rho
        lam_lo, lam_hi = max(theta - e, 1.0 / n), min(theta + resid + e, 1.0)
        out["value"][-1] = 1.0 / min(max(theta, 1.0 / n), 1.0)
        out["low"][-1], out["high"][-1] = 1.0 / lam_hi, 1.0 / lam_lo
        out["trace"][-1], out["trace_low"][-1], out["trace_high"][-1] = theta, lam_lo, lam_hi
        out["quadrature"][-1], out["rounding"][-1] = resid, e
    for a in out.values():
        a.setflags(write=False)
    qs_out = qs.copy()
    qs_out.setflags(write=False)
    info = dict(settings)
    info.update(op.to_dict())
    info.pop("kernel", None)
    info.update(head_steps=None if head_est is None else (head_est.steps if math.isfinite(head_est.steps)
                                                          else "exact"),
                head_exhausted=bool(head is not None and head.exhausted), passes=op.passes,
                products_seconds=op.seconds, seconds=time.perf_counter() - start, stopped="",
                lambda_max=theta, orders=[q_key(q) for q in qs])
    info["batches"] = list(settings.get("batches", []))
    return VendiSLQ(qs=qs_out, probes=state.probes, steps=state.steps, k=0 if head_est is None else head_est.rank,
                    n=n, confidence_level=level, target=TARGET, kernel=op.kernel, settings=info, **out)
