r"""Bounds on the evaluation's counts and scales (issue 40, item 13): no call runs without end or returns NaN.

**Counts.** ``kid_subsets``, ``n_resamples`` and ``n_subsamples`` multiply work: ``evaluate(...,
kid_subsets=10**9)`` used to run for days. Each count is bounded by an estimate of the work it
asks for, in floating-point operations (flops; one call's fixed Python cost counted as
:data:`CALL_OVERHEAD` of them), at most :data:`MAX_WORK` per count: about half an hour at
50 GFLOP/s, a hundred times the defaults on FID-sized data (50,000 items, d = 2048). A count
above it is refused with the largest one allowed on these data.

**Scales.** The Frechet distance is scale-equivariant, :math:`\mathrm{FD}(cR, cG) = c^2\,
\mathrm{FD}(R, G)`, but its trace of a square root involves fourth powers of the data, which
overflow or underflow float64 beyond about :math:`2^{\pm 250}` (1e75): :func:`fd_scale` gives the
power of two that brings the data into :data:`FD_RANGE`, exactly (dividing by a power of two
changes no digit), and :func:`~diversity_core.evaluation.frechet_distance` multiplies its result
back. The kernel distance is not scale-invariant (its kernel is :math:`(\gamma x^T y + c_0)^p`):
:func:`kid_product_dtype` refuses data whose kernel sums overflow float64 (features near 1e51
with the defaults used to give ``nan``) and runs the products in float64 when float32 ones
would overflow (features near 1e19).
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from typing import Callable

import numpy as np

from ..distances import row_norms
from ..exceptions import DiversityInputError
from ._intervals import fit_sizes_for

__all__ = ["MAX_WORK", "CALL_OVERHEAD", "INTERVAL_CALL_OVERHEAD", "FD_RANGE", "check_work", "kid_work", "interval_work", "fd_cost",
           "evaluation_cost", "vendi_cost", "fd_scale", "check_fd_scale", "kid_product_dtype", "rescaled_frechet",
           "check_evaluation_limits"]

#: Most work (flops) one count parameter may ask for: about half an hour at 50 GFLOP/s.
MAX_WORK = 1e14

#: The fixed cost of one call of a metric on a subset (index draws, Python), in flops.
CALL_OVERHEAD = 2e6

#: The fixed cost of one statistic on a pair of subsets in the subsampling engine (the draws, the bundle, the
#: neighbour search's and the decompositions' set-up): measured at 5 to 50 ms for evaluate's statistics on
#: tiny sets, in flops at 50 GFLOP/s.
INTERVAL_CALL_OVERHEAD = 5e8

#: Largest absolute feature values the Frechet distance is computed on directly; data outside are
#: scaled by a power of two (:func:`fd_scale`). Fourth powers of 2^200 times n d stay finite.
FD_RANGE = (2.0**-200, 2.0**200)

_LOG_MAX = math.log(sys.float_info.max)


def check_work(name: str, count: int, per_unit: float, *, what: str) -> int:
    """``count`` when ``count * per_unit`` flops is at most :data:`MAX_WORK`, else an error with the largest count.

    Parameters
    ----------
    name : str
        The parameter, as the caller spells it (``"kid_subsets"``).
    count : int
        Its validated value.
    per_unit : float
        Estimated flops of one unit of ``count`` (one subset, one resample), overhead included.
    what : str
        What one unit is, for the message (``"subsets of 1,000 items in d = 2048"``).

    Raises
    ------
    DiversityInputError
        The estimate exceeds :data:`MAX_WORK`.
    """
    work = float(count) * float(per_unit)
    if work <= MAX_WORK:
        return count
    largest = max(int(MAX_WORK // per_unit), 0)
    raise DiversityInputError(
        f"{name} = {count:,} would take about {work:.1e} floating-point operations ({what}: about {per_unit:.1e} "
        f"each), above the {MAX_WORK:.0e} one call may do (about half an hour at 50 GFLOP/s). The largest "
        f"{name} allowed here is {largest:,}."
    )


def kid_work(m: int, d: int, degree: int, n_r: int, n_g: int) -> float:
    """Flops of one kernel-distance subset: three m x m products in d, the kernel's powers, the draws."""
    return 6.0 * m * m * d + 3.0 * m * m * (degree + 2) + 2.0 * (n_r + n_g) + CALL_OVERHEAD


def fd_cost(m_r: int, m_g: int, d: int) -> float:
    """Flops of the Frechet distance of two sets of m_r and m_g items: moments' or primal route."""
    small = min(m_r, m_g)
    moments = 2.0 * (m_r + m_g) * d * d + 12.0 * d**3
    primal = 2.0 * m_r * m_g * d + 4.0 * max(m_r, m_g) * small * small + 2.0 * (m_r + m_g) * d * d
    return (moments if small > d else primal) + CALL_OVERHEAD


def vendi_cost(n: int, d: int) -> float:
    """Flops of one Vendi score of n items in d: the cheaper of the dense and the dual spectrum."""
    return min(2.0 * n * n * d + 4.0 * n**3, 2.0 * n * d * d + 4.0 * d**3) + CALL_OVERHEAD


def neighbour_cost(m_r: int, m_g: int, d: int) -> float:
    """Flops of the exact neighbour radii and counts of PRDC and improved P/R on one pair of subsets."""
    return 2.0 * d * (m_r * m_r + m_g * m_g + 2.0 * m_r * m_g) + CALL_OVERHEAD


def vendi_ratio_cost(m_r: int, m_g: int, d: int) -> float:
    """Flops of the Vendi ratio on one pair of subsets: two Vendi scores at the smaller size."""
    return 2.0 * vendi_cost(min(m_r, m_g), d)


def evaluation_cost(m_r: int, m_g: int, d: int) -> float:
    """Flops of ``evaluate``'s interval score on one pair of subsets: neighbours, FD, the Vendi ratio."""
    neighbours = 2.0 * d * (m_r * m_r + m_g * m_g + 2.0 * m_r * m_g)
    m = min(m_r, m_g)
    return neighbours + fd_cost(m_r, m_g, d) + 2.0 * vendi_cost(m, d)


def interval_work(n_r: int, n_g: int, d: int, interval_size: int, min_items: int,
                  cost: Callable[[int, int, int], float]) -> float:
    """Flops of one resample of the subsampling intervals: the score at each fit size (0 without sizes).

    The sizes are the interval engine's (:func:`~diversity_core.evaluation._intervals.fit_sizes_for`):
    m generated items with about ``m n_R / n_G`` reference items each.
    """
    _, sizes, _ = fit_sizes_for(n_r, n_g, interval_size, min_items)
    return float(sum(cost(max(1, (m * n_r) // n_g), m, d) + 2.0 * (n_r + n_g) + INTERVAL_CALL_OVERHEAD
                     for m in sizes))


def _max_abs(X: np.ndarray) -> float:
    return float(np.max(np.abs(X))) if X.size else 0.0


def fd_scale(R: np.ndarray, G: np.ndarray) -> float:
    """The power of two to divide both sets by before the Frechet distance (1.0 inside :data:`FD_RANGE`).

    Brings the largest absolute value to [0.5, 1): exact, and FD scales by its square.
    """
    top = max(_max_abs(R), _max_abs(G))
    if top == 0.0 or FD_RANGE[0] <= top <= FD_RANGE[1]:
        return 1.0
    return math.ldexp(1.0, math.frexp(top)[1])


def check_fd_scale(R: np.ndarray, G: np.ndarray) -> None:
    """Refuse data outside :data:`FD_RANGE` where the caller cannot rescale the Frechet distance itself."""
    top = max(_max_abs(R), _max_abs(G))
    if top == 0.0 or FD_RANGE[0] <= top <= FD_RANGE[1]:
        return
    raise DiversityInputError(
        f"feature values reach {top:.3g}, outside [{FD_RANGE[0]:.1e}, {FD_RANGE[1]:.1e}], where the Frechet "
        "distance's fourth powers of the data overflow or underflow float64. Divide both sets by a constant (e.g. "
        "their largest value): precision, recall, density, coverage, the memorisation test and cosine Vendi scores "
        "are unchanged, and FD scales by the constant's square (frechet_distance rescales exactly by itself)."
    )


def kid_product_dtype(R: np.ndarray, G: np.ndarray, *, gamma: float, coef0: float, degree: int, m: int):
    """The dtype of the kernel distance's products, after refusing data whose kernel sums overflow float64.

    Every kernel value is at most :math:`B = (\\gamma \\max\\|x\\|^2 + |c_0|)^p` and each of the three
    sums of a subset adds m^2 of them: :math:`4 m^2 B` must be finite. float32 features keep float32
    products unless :math:`\\max\\|x\\|^2` would overflow float32 (then float64, exactly as before
    otherwise).

    Raises
    ------
    DiversityInputError
        The sums overflow float64 (names the largest value and what to do).
    """
    top = max(float(row_norms(R).max()), float(row_norms(G).max()))
    if top == 0.0:
        log_base = math.log(abs(coef0)) if coef0 != 0 else -math.inf
    else:
        log_sq = 2.0 * math.log(top)
        terms = [math.log(gamma) + log_sq] + ([math.log(abs(coef0))] if coef0 != 0 else [])
        log_base = max(terms) + math.log1p(math.exp(min(terms) - max(terms))) if len(terms) == 2 else terms[0]
    log_sums = degree * log_base + math.log(4.0 * m * m)
    if (top > 0 and 2.0 * math.log(top) > _LOG_MAX - 1.0) or log_sums > _LOG_MAX - 1.0:
        raise DiversityInputError(
            f"the kernel distance's polynomial kernel (gamma x.y + coef0)^{degree} overflows float64 on these data: "
            f"rows reach a norm of {top:.3g} (gamma {gamma:.3g}, coef0 {coef0:g}), so its sums over {m} x {m} "
            f"items reach about e^{log_sums:.0f}. The kernel distance depends on the scale: divide both sets by a "
            "constant (e.g. their largest value), or skip it (kid_subsets=0, --kid-subsets 0)."
        )
    both32 = R.dtype == np.float32 and G.dtype == np.float32
    return np.float32 if both32 and top * top < float(np.finfo(np.float32).max) / 4 else np.float64


def rescaled_frechet(result, scale: float):
    """A :class:`FrechetResult` computed on data divided by ``scale``, back on the data's scale (times scale^2).

    Raises
    ------
    DiversityInputError
        A value beyond float64 on the data's scale (the data's FD exceeds 1.8e308).
    """

    def back(v):
        if v is None:
            return None
        out = float(v) * scale * scale
        if not math.isfinite(out):
            raise DiversityInputError(
                f"the Frechet distance of these data is about {float(v):.3g} x {scale:.3g}^2, beyond float64 "
                "(1.8e308). Divide both sets by a constant (e.g. their largest value): FD scales by its square."
            )
        return out

    est = result.value
    lo, hi = est.confidence_interval or (None, None)
    value = replace(est, value=back(est.value), se=back(est.se), ci_low=back(lo), ci_high=back(hi))
    return replace(result, value=value, mean_term=back(result.mean_term), trace_reference=back(result.trace_reference),
                   trace_generated=back(result.trace_generated), trace_sqrt=back(result.trace_sqrt))


def check_evaluation_limits(R: np.ndarray, G: np.ndarray, *, kid_subsets: int, kid_subset_size: int,
                            n_resamples: int, interval_size: int, n_subsamples: int, min_items: int) -> None:
    """``evaluate``'s scale and count guards, before any work (validated sets and counts).

    The scale of the data for the Frechet distance (:func:`check_fd_scale`) and the kernel
    distance (:func:`kid_product_dtype`, with its defaults gamma = 1/d, coef0 = 1, degree 3); the
    work of ``kid_subsets``, ``n_resamples`` (every interval statistic on each fit size) and
    ``n_subsamples`` (Vendi scores of the larger set's n-subsets), each at most :data:`MAX_WORK`.
    """
    n_r, n_g, d = R.shape[0], G.shape[0], R.shape[1]
    check_fd_scale(R, G)
    if kid_subsets:
        m = min(kid_subset_size, n_r, n_g)
        kid_product_dtype(R, G, gamma=1.0 / d, coef0=1.0, degree=3, m=m)
        check_work("kid_subsets", kid_subsets, kid_work(m, d, 3, n_r, n_g),
                   what=f"kernel-distance subsets of {m:,} items of each set in d = {d}")
    if n_resamples:
        per = interval_work(n_r, n_g, d, interval_size, min_items, evaluation_cost)
        if per:
            check_work("n_resamples", n_resamples, per,
                       what=f"resamples of every interval statistic on subsets of at most {interval_size:,} items")
    if n_r != n_g:
        n = min(n_r, n_g)
        check_work("n_subsamples", n_subsamples, vendi_cost(n, d) + 2.0 * max(n_r, n_g),
                   what=f"Vendi scores of {n:,}-item subsets of the larger set in d = {d}")
