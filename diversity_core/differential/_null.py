r"""Which modes are within noise: the label-permutation null of the top eigenvalue of :math:`C_X - \eta C_Y`."""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.linalg as sla

from .._config import format_bytes, memory_budget
from .._validation import check_option, check_scalar
from ..kernels import DEFAULT_KERNEL
from ._results import ROLES, ModeNull, positive_eigenvalues
from ._routes import DEFAULT_FREQUENCIES, DEFAULT_REPLICATES, Factor
from ._spectrum import _difference, _prepare

__all__ = ["mode_null"]

#: Share of the memory budget the pooled rows of the permutations may take.
ROWS_SHARE = 0.25


def mode_null(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    eta: float = 1.0,
    role: str = "novel",
    method: str = "auto",
    n_modes: int = 10,
    n_permutations: int = 100,
    level: float = 0.95,
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    rng=None,
    **kernel_params,
) -> ModeNull:
    r"""The permutation null of the top eigenvalue, and which of the top modes stand outside it.

    Each of B permutations shuffles the labels of the n + m pooled items (n stay "candidate"), and
    records :math:`\lambda_{\max}(C_{X'} - \eta\,C_{Y'})` (``role="novel"``) or
    :math:`\lambda_{\max}(C_{Y'} - \eta\,C_{X'})` (``role="missing"``). Mode j is outside the noise
    when

    .. math:: p_j = \frac{1 + \#\{b : \lambda^{(b)}_{\max} \ge \lambda_j\}}{B + 1} \le 1 - \text{level}.

    Under :math:`H_0` (X and Y from one distribution) the labels are exchangeable, so
    :math:`P(p_1 \le \alpha) \le \alpha`; every mode is compared with the null of the *largest*
    eigenvalue, so the chance that any mode of a null pair is called real is at most 1 - level
    (family-wise), and modes below the top are judged conservatively.

    Parameters
    ----------
    X, Y, kernel, eta, method, n_frequencies, replicates, rng, **kernel_params
        As :func:`~diversity_core.differential.novelty_spectrum` (the kernel, the route and, for rff,
        the frequencies are fixed once; only the labels move).
    role : {"novel", "missing"}, default "novel"
    n_modes : int, default 10
        Observed modes judged.
    n_permutations : int, default 100
        B. The smallest p-value is 1 / (B + 1): B >= 19 for level 0.95, B >= 99 for 0.99.
    level : float in (0, 1), default 0.95

    Returns
    -------
    ModeNull

    Notes
    -----
    The pooled rows (p-dimensional) are computed once; each permutation forms the covariance of the
    smaller relabelled set, :math:`O(\min(n, m)\, p^2)`, the other by subtraction from the total, and
    the top eigenvalue (LAPACK below order 600, Lanczos above); rows wider than the pooled items are
    first reduced to n + m dimensions (a QR of the rows, the same inner products). When the pooled rows exceed a quarter of the memory budget,
    the permutations use a random subset of each set in proportion (``note`` says so): the null of
    fewer items is wider, so the verdicts are then conservative.
    """
    check_option(role, ROLES, "role")
    n_modes = check_scalar(n_modes, "n_modes", int, min_val=1)
    n_permutations = check_scalar(n_permutations, "n_permutations", int, min_val=1)
    level = check_scalar(level, "level", float, min_val=0.0, max_val=1.0, include_boundaries="neither")
    X, Y, eta, kern, factor, gen = _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng)
    own = 0 if role == "novel" else 1
    L, _ = _difference(factor, own, eta)
    observed = sla.eigvalsh(L, check_finite=False)[::-1][:n_modes]
    tops, used, note = _null_tops(factor, eta, n_permutations, gen)
    return _verdict(tops[own], observed, level, role, used, note)


# ---------------------------------------------------------------------------------------
# private compute
# ---------------------------------------------------------------------------------------
def _pooled_rows(factor: Factor, gen) -> tuple:
    """``(F, n, m, note)``: the pooled rows of both sets (a proportional subset when over the share of the budget)."""
    n, m = factor.sizes()
    N, p = n + m, factor.dim
    allowed = ROWS_SHARE * memory_budget()
    need = 8.0 * N * p * 2  # the rows and one relabelled set's copy
    note = ""
    if need > allowed:
        frac = allowed / need
        n_use, m_use = max(2, int(n * frac)), max(2, int(m * frac))
        ix = np.sort(gen.choice(n, n_use, replace=False))
        iy = np.sort(gen.choice(m, m_use, replace=False))
        note = (f"the permutations used {n_use} of {n} candidate and {m_use} of {m} reference items (the pooled rows of "
                f"all would take {format_bytes(need)}, over a quarter of the memory budget): a wider null, so the verdicts "
                "are conservative")
    else:
        ix = iy = None
        n_use, m_use = n, m
    F = np.vstack([factor.rows(0, ix), factor.rows(1, iy)])
    if F.shape[1] > F.shape[0]:
        # wider than the pooled items (a large sketch on few items): the rows R^T of F^T = Q R have the
        # same inner products F F^T in N dimensions, so every relabelling's spectrum is the same
        F = np.ascontiguousarray(sla.qr(F.T, mode="r", check_finite=False)[0][: F.shape[0]].T)
    return F, n_use, m_use, note


#: Order from which the null's top eigenvalue comes from Lanczos (ARPACK) rather than LAPACK.
LANCZOS_FROM = 600


def _top_eigenvalue(L: np.ndarray, gen) -> float:
    """The largest eigenvalue of a symmetric matrix: LAPACK's for small orders, Lanczos beyond (O(p^2) per step)."""
    p = L.shape[0]
    if p < LANCZOS_FROM:
        return float(sla.eigvalsh(L, subset_by_index=[p - 1, p - 1], check_finite=False)[0])
    from scipy.sparse.linalg import eigsh

    return float(eigsh(L, k=1, which="LA", tol=1e-10, v0=gen.standard_normal(p), return_eigenvectors=False)[0])


def _null_tops(factor: Factor, eta: float, B: int, gen, tick=None) -> tuple:
    """``((novel tops, missing tops), (n, m) used, note)``: the top eigenvalue of each difference under B relabellings.

    ``tick(b)``, when given, is called after each relabelling (progress).
    """
    F, n, m, note = _pooled_rows(factor, gen)
    N, p = F.shape
    total = F.T @ F
    small, size = (0, n) if n <= m else (1, m)
    tops = np.empty((2, B))
    for b in range(B):
        idx = gen.permutation(N)[:size] if small == 0 else gen.permutation(N)[n:]
        Fs = F[idx]
        Cs = Fs.T @ Fs
        rest = total - Cs
        Cx, Cy = (Cs / n, rest / m) if small == 0 else (rest / n, Cs / m)
        for r, (A, Bm) in enumerate(((Cx, Cy), (Cy, Cx))):
            L = A - eta * Bm
            tops[r, b] = _top_eigenvalue(0.5 * (L + L.T), gen)
        if tick is not None:
            tick(b + 1)
    return tops, (n, m), note


def _verdict(null: np.ndarray, observed: np.ndarray, level: float, role: str, used: tuple, note: str,
             dim: Optional[int] = None) -> ModeNull:
    """The p-values and verdicts of the observed top eigenvalues against the null of the largest one."""
    observed = np.asarray(observed, dtype=np.float64)
    counts = (null[None, :] >= observed[:, None]).sum(axis=1)
    p_values = (1.0 + counts) / (null.size + 1.0)
    positive = np.zeros(observed.size, dtype=bool)
    positive[: positive_eigenvalues(observed, dim or observed.size).size] = True
    outside = (p_values <= 1.0 - level + 1e-12) & positive
    threshold = float(np.quantile(null, level, method="higher"))
    return ModeNull(null=null.copy(), threshold=threshold, observed=observed, p_values=p_values, outside=outside,
                    level=float(level), role=role, n_generated=int(used[0]), n_reference=int(used[1]), note=note)
