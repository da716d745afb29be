r"""Most-diverse subsets of size k: greedy Vendi / log-determinant selection, k-centre and random baselines.

Greedy, ``objective="vs2"``
    Adds the item that maximises :math:`\mathrm{VS}_2` of the chosen set S (uniform weights).
    With :math:`\rho_S = K_S / \mathrm{tr} K_S`, :math:`\mathrm{VS}_2 = 1 / \mathrm{tr}\,\rho_S^2
    = (\sum_{a \in S} K_{aa})^2 / \sum_{a, b \in S} K_{ab}^2`, so the gain of a candidate i is exact
    and needs only :math:`s_i = \sum_{a \in S} K_{ai}^2`: choose
    :math:`\arg\min_i (F + 2 s_i + K_{ii}^2) / (T + K_{ii})^2` (F, T the sums over S), i.e. the
    item least similar, in squares, to everything chosen. O(n d) per step for the kernel
    column of the new item, O(n) memory.

Greedy, ``objective="logdet"``
    Adds the item maximising :math:`\log\det K_{S \cup i}`: the fast greedy MAP inference of
    a DPP (Chen, Zhang & Zhou, NeurIPS 2018, Alg. 1). An incremental Cholesky factor keeps
    each candidate's residual variance :math:`d_i^2 = K_{ii} - \|c_i\|^2`; adding j updates
    :math:`e_i = (K_{ji} - \langle c_j, c_i\rangle)/d_j`, :math:`d_i^2 \leftarrow d_i^2 - e_i^2`.
    O(n k) per step (O(n k^2) in all), O(n k) memory. When every remaining residual falls
    below :math:`\sqrt{\varepsilon}\max_i K_{ii}` the chosen items span the kernel's feature
    space (its rank is reached, e.g. d items under cosine on d features) and every further
    log-determinant is -inf; the remaining items are then chosen by the VS_2 rule.

Greedy, ``objective="qvs2"`` (needs ``quality``)
    Adds the item maximising the quality-weighted :math:`\mathrm{qVS}_2 = \bar s_S\,\mathrm{VS}_2(S)`
    (Nguyen & Dieng, ICML 2024): :math:`\arg\max_i (Q + s_i)(T + K_{ii})^2 / (F + 2 s_i' + K_{ii}^2)`
    with Q the chosen items' total quality and :math:`s_i'` the sum above; it starts from the
    highest-quality item (the best singleton). O(n d) per step, like ``"vs2"``.

k-centre
    Farthest-point traversal (Gonzalez 1985) in the kernel's distance
    :math:`\sqrt{K_{ii} + K_{jj} - 2 K_{ij}}`: each step adds the item farthest from the chosen set.

Random
    A uniformly random order.

Greedy and k-centre start from the same seeded random item. Every selection comes with its
``VS_q`` and IntDiv curve against k, evaluated at about ``n_points`` prefix sizes from the
prefix's k x k kernel matrix.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import scipy.sparse as sp

from .._config import check_memory
from .._progress import ProgressCallback, report
from .._validation import check_option, check_random_state, check_scalar
from ..exceptions import DiversityInputError
from ..spectrum import spectrum_from_eigenvalues
from ._common import DEFAULT_QS, KernelRows, check_count, check_qs, one_blas_thread, prepare, readonly
from .results import SelectionComparison, SelectionResult

__all__ = ["select_diverse", "compare_selections", "METHODS", "OBJECTIVES"]

METHODS = ("greedy", "kcenter", "random")
OBJECTIVES = ("vs2", "logdet", "qvs2")


def select_diverse(
    X,
    k: int,
    *,
    kernel="cosine",
    method: str = "greedy",
    objective: str = "vs2",
    q=DEFAULT_QS,
    n_points: int = 20,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    quality=None,
    **kernel_params,
) -> SelectionResult:
    r"""Choose k items that keep as much diversity as possible, in selection order.

    Parameters
    ----------
    X : array-like of shape (n, d), or (n, n) with ``kernel="precomputed"``
        The candidates.
    k : int
        Number of items to choose, 1 <= k <= n.
    kernel : str or Kernel, default "cosine"
    method : {"greedy", "kcenter", "random"}, default "greedy"
        ``"greedy"`` maximises the ``objective`` one item at a time; ``"kcenter"``
        (farthest point) and ``"random"`` are the baselines.
    objective : {"vs2", "logdet"}, default "vs2"
        Greedy objective: ``"vs2"`` the Vendi score of order 2 (exact one-step gain, O(n d)
        per step), ``"logdet"`` the log-determinant of the chosen kernel matrix (DPP MAP,
        incremental Cholesky, O(n k) per step), ``"qvs2"`` the quality-weighted VS_2 (needs
        ``quality``). See the module docstring.
    q : float or sequence, default (0.5, 1, 2, inf)
        Orders of the ``VS_q`` curve.
    n_points : int, default 20
        Number of prefix sizes the curve is evaluated at (evenly spaced from 1 to k).
    rng : int or Generator, optional
        Seed of the first item (greedy, k-centre) or of the order (random).
    progress : callable, optional
        ``progress(done, total, message)``, every 1 % of the items.
    quality : array-like of shape (n,), optional
        Non-negative quality score per item, for ``objective="qvs2"`` (required there).
    **kernel_params
        Kernel parameters, e.g. ``sigma=1.0``.

    Returns
    -------
    SelectionResult

    Raises
    ------
    DiversityInputError
        ``k`` outside [1, n], unknown method or objective, bad data.
    MemoryBudgetError
        The log-determinant's k x n factor or the curve's k x k matrix exceed the memory budget.

    Notes
    -----
    Time: O(n d) per step for the new item's kernel column (every method but random), plus
    O(n k) per step for ``"logdet"``. Memory: O(n) (``"vs2"``, k-centre), O(n k) (``"logdet"``),
    and O(k^2) for the curve. n = 50,000 candidates, k = 1,000: see
    ``benchmarks/results/curation.json``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.99, 0.1], [0.0, 1.0], [0.1, 0.99]])
    >>> sel = select_diverse(X, 2, rng=0)
    >>> sorted(int(i) // 2 for i in sel.indices)        # one item from each direction
    [0, 1]
    """
    check_option(method, METHODS, "method")
    check_option(objective, OBJECTIVES, "objective")
    qs = check_qs(q)
    kern, X = prepare(X, kernel, kernel_params)
    n = X.shape[0]
    k = check_count(k, "k", low=1, high=n, what="the number of items")
    n_points = check_scalar(n_points, "n_points", int, min_val=1)
    gen = check_random_state(rng)
    quality = _check_quality(quality, objective, n)
    rows = KernelRows(kern, X)
    with one_blas_thread():
        return _select(rows, k, method, objective, qs, n_points, gen, progress, quality)


def compare_selections(
    X,
    k: int,
    *,
    kernel="cosine",
    methods: Sequence[str] = METHODS,
    objective: str = "vs2",
    q=DEFAULT_QS,
    n_points: int = 20,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    quality=None,
    **kernel_params,
) -> SelectionComparison:
    """Selections of size k by several methods, with their ``VS_q`` curves on the same grid.

    Every method gets the same seed, so greedy and k-centre start from the same item. The
    parameters are those of :func:`select_diverse`; ``methods`` lists the methods to run.

    Returns
    -------
    SelectionComparison

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200, 5))
    >>> cmp = compare_selections(X, 20, rng=0)
    >>> cmp.methods
    ['greedy', 'kcenter', 'random']
    """
    if isinstance(methods, str) or len(methods) == 0:
        raise DiversityInputError(f"methods must be a non-empty list of {', '.join(METHODS)}; got {methods!r}.")
    for m in methods:
        check_option(m, METHODS, "method")
    check_option(objective, OBJECTIVES, "objective")
    qs = check_qs(q)
    kern, X = prepare(X, kernel, kernel_params)
    n = X.shape[0]
    k = check_count(k, "k", low=1, high=n, what="the number of items")
    n_points = check_scalar(n_points, "n_points", int, min_val=1)
    seed = int(check_random_state(rng).integers(2**63 - 1))
    quality = _check_quality(quality, objective, n)
    rows = KernelRows(kern, X)
    out = {}
    with one_blas_thread():
        for m in dict.fromkeys(methods):
            out[m] = _select(rows, k, m, objective, qs, n_points, np.random.default_rng(seed), progress, quality)
    return SelectionComparison(selections=out)


def _check_quality(quality, objective: str, n: int) -> Optional[np.ndarray]:
    """Quality scores for ``objective="qvs2"``: n non-negative finite numbers (float64)."""
    if objective != "qvs2":
        if quality is not None:
            raise DiversityInputError("quality applies to objective='qvs2' only; pass objective='qvs2'.")
        return None
    if quality is None:
        raise DiversityInputError("objective='qvs2' needs quality: one non-negative score per item.")
    s = np.asarray(quality, dtype=np.float64).ravel()
    if s.size != n or not np.isfinite(s).all() or (s < 0).any():
        raise DiversityInputError(
            f"quality must hold {n} finite non-negative scores (one per item); got {s.size} values"
            f"{'' if s.size != n else ' with negative or non-finite ones'}."
        )
    return s


def _select(rows: KernelRows, k, method, objective, qs, n_points, gen, progress, quality=None) -> SelectionResult:
    """Run one method on checked inputs and evaluate its curve."""
    n = rows.n
    n_logdet = None
    if method == "random":
        order = gen.permutation(n)[:k].astype(np.intp)
    else:
        first = int(gen.integers(n))
        if method == "kcenter":
            order = _kcenter(rows, k, first, progress)
        else:
            order, n_logdet = _greedy(rows, k, objective, first, progress, quality)
    ks, vendi, intdiv = _curve(rows, order, qs, n_points)
    readonly(order, ks, vendi, intdiv)
    return SelectionResult(
        indices=order, method=method, objective=objective if method == "greedy" else None, n=n, qs=qs,
        curve_k=ks, curve_vendi=vendi, curve_intdiv=intdiv, n_logdet=n_logdet, kernel=rows.kern.to_dict(),
    )


def _greedy(rows: KernelRows, k: int, objective: str, first: int, progress,
            quality: Optional[np.ndarray] = None) -> tuple[np.ndarray, Optional[int]]:
    """Greedy VS_2 or log-determinant selection (module docstring); returns the order and n_logdet."""
    n = rows.n
    diag = rows.diagonal()
    order = np.empty(k, dtype=np.intp)
    s2 = np.zeros(n)  # sum over the chosen items of K_ai^2
    F = 0.0  # sum over chosen pairs of K_ab^2
    T = 0.0  # sum over chosen items of K_aa
    logdet = objective == "logdet"
    n_logdet = None
    if logdet:
        check_memory(k * n * 8.0, what=f"the {k} x {n} incremental Cholesky factor",
                     hint="Choose fewer items, or objective='vs2' (O(n) memory).")
        C = np.empty((k, n))
        d2 = diag.astype(np.float64, copy=True)
        # residual variances below sqrt(eps) * max K_ii are round-off of the rank being reached
        tol = math.sqrt(rows.eps) * float(np.max(diag))
    # with a constant diagonal (unit-diagonal kernels, up to round-off) the VS_2 criterion is
    # monotone in s_i
    constant = float(np.ptp(diag)) <= 64.0 * rows.eps * float(np.max(np.abs(diag)))
    every = max(1, k // 100)
    j = first
    if quality is not None:  # qvs2: the best singleton (qVS_2 of one item is its quality)
        j = int(np.argmax(quality))
        Q = 0.0
        chosen = np.zeros(n, dtype=bool)
    for t in range(k):
        order[t] = j
        if t == k - 1:
            break
        col = rows.column(j)
        if quality is not None:
            Q += quality[j]
            chosen[j] = True
        F += 2.0 * s2[j] + diag[j] ** 2
        T += diag[j]
        s2[j] = np.inf  # never chosen again; inf survives the additions below
        s2 += col * col
        nxt = -1
        if logdet and n_logdet is None:
            e = col - C[:t, j] @ C[:t] if t else col
            e /= math.sqrt(d2[j])
            C[t] = e
            d2 -= e * e
            d2[j] = -np.inf  # chosen items stay at -inf
            cand = int(np.argmax(d2))
            if d2[cand] > tol:
                nxt = cand
            else:
                n_logdet = t + 1
                del C
        if nxt < 0 and quality is not None:
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = (Q + quality) * (T + diag) ** 2 / (F + 2.0 * s2 + diag * diag)
            gain[chosen] = -np.inf
            nxt = int(np.argmax(np.nan_to_num(gain, nan=-np.inf, posinf=np.inf)))
        if nxt < 0:
            if constant:
                nxt = int(np.argmin(s2))
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    nxt = int(np.argmin((F + 2.0 * s2 + diag * diag) / (T + diag) ** 2))
        j = nxt
        if (t + 1) % every == 0:
            report(progress, t + 1, k, "choosing items")
    report(progress, k, k, "choosing items")
    if logdet and n_logdet is None:
        n_logdet = k
    return order, n_logdet


def _kcenter(rows: KernelRows, k: int, first: int, progress) -> np.ndarray:
    """Farthest-point traversal in the kernel distance sqrt(K_ii + K_jj - 2 K_ij)."""
    n = rows.n
    diag = rows.diagonal()
    order = np.empty(k, dtype=np.intp)
    nearest = np.full(n, np.inf)  # squared kernel distance to the closest chosen item
    every = max(1, k // 100)
    j = first
    for t in range(k):
        order[t] = j
        nearest[j] = -np.inf  # never chosen again; -inf survives the minimum below
        if t == k - 1:
            break
        d2 = rows.column(j)
        d2 *= -2.0
        d2 += diag
        d2 += diag[j]
        np.minimum(nearest, d2, out=nearest)
        j = int(np.argmax(nearest))
        if (t + 1) % every == 0:
            report(progress, t + 1, k, "choosing items")
    report(progress, k, k, "choosing items")
    return order


def _curve(rows: KernelRows, order: np.ndarray, qs: tuple, n_points: int):
    """VS_q and IntDiv of the prefixes of ``order`` at about n_points sizes.

    From the selection's k x k kernel matrix, or, with dense features of dimension d < m, from
    the d x d dual matrix of each m-prefix (the spectrum's own dual path, O(m d^2)).
    """
    k = order.size
    ks = np.unique(np.round(np.linspace(1, k, min(n_points, k))).astype(np.intp))
    P = None
    if rows.phi is not None and not sp.issparse(rows.phi) and rows.phi.shape[1] < k:
        P = np.asarray(rows.phi[order], dtype=np.float64)
        K = None
    else:
        check_memory(2.0 * k * k * 8, what=f"the {k} x {k} kernel matrix of the selection")
        K = rows.subset_matrix(order)
    vendi = np.empty((ks.size, len(qs)))
    intdiv = np.empty(ks.size)
    q_arr = np.asarray(qs)
    for a, m in enumerate(ks):
        if P is None:
            M = K[:m, :m]
            total = float(M.sum())
        else:
            Pm = P[:m]
            M = Pm.T @ Pm if Pm.shape[1] < m else Pm @ Pm.T
            col = Pm.sum(axis=0)
            total = float(col @ col)  # sum of the prefix's kernel matrix, 1^T P P^T 1
        spec = spectrum_from_eigenvalues(np.linalg.eigvalsh(M) / m, n=int(m))
        vendi[a] = spec.profile(q_arr)
        intdiv[a] = 1.0 - total / (m * m)
    return ks, vendi, intdiv
