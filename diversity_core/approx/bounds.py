r"""Guaranteed bounds on every Vendi score from the exact top of the spectrum, by Lanczos.

The k largest eigenvalues of the density matrix rho come from Lanczos
(:func:`scipy.sparse.linalg.eigsh`) on a stored or matrix-free kernel operator, with the exact
VS_2 from the same pass; the bounds they imply on every VS_q (majorisation and log-convexity of
the tail's power sums) are the pure maths of :mod:`~diversity_core.approx._band`
(:func:`bounds_from_eigenvalues`, re-exported here). :func:`vendi_bounds` also dispatches to the
Nystrom bounds of :mod:`~diversity_core.approx.loewner` where Lanczos would recompute K at every
product; :func:`vs_inf_exact` is the k = 1 case (VS_inf = 1 / lambda_max).
"""

from __future__ import annotations

import math
import time
from typing import Iterator, Optional, Sequence

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

from .._config import check_memory, fits_memory, memory_budget
from .._deprecation import UNSET, renamed_argument
from .._orders import check_q
from .._progress import ProgressCallback, report
from .._validation import check_kernel_matrix, check_option, check_random_state, check_scalar, check_weights
from ..blocked import vendi_2_exact
from ..entropy import EPS64, default_q_grid
from ..exceptions import DiversityInputError, NumericalError
from ..kernels import DEFAULT_KERNEL, PrecomputedKernel, _row_blocks, get_kernel, normalize_diagonal
from ..sources import RowSource, as_source
from ..spectrum import compute_spectrum
from ._band import _bounds, bounds_from_eigenvalues
from ._results import VendiBounds
from .loewner import nystrom_bounds

__all__ = ["vendi_bounds", "iter_vendi_bounds", "bounds_from_eigenvalues", "bounds_method", "vs_inf_exact",
           "DEFAULT_KS", "BOUND_METHODS"]

#: How the bounds get the top of the spectrum: exact Ritz values, or a sketch's lower bounds.
BOUND_METHODS = ("auto", "lanczos", "nystrom")

#: Largest n for which the Nystrom bounds add the exact VS_2 pass by default.
EXACT_VS2_MAX_N = 50_000

#: The progression of k: each step reuses the previous Ritz vectors as its starting vector.
DEFAULT_KS = (20, 50, 100, 200, 500, 1000, 2000)

#: Relative error of one stored kernel entry: float32 storage, or float64 kernel evaluation.
_STORAGE_RTOL = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 1e-13}


# ---------------------------------------------------------------------------------------
# the operator: rho as a stored matrix (float64 or float32) or matrix-free blocks of K
# ---------------------------------------------------------------------------------------
class _DensityOperator:
    """rho = diag(sqrt p) K diag(sqrt p) for Lanczos: stored when it fits the budget, else in blocks.

    Building it (or one matrix-free pass) also gives ``purity = sum rho_ij^2`` and the trace.
    """

    def __init__(self, kern, X, p, *, storage: str, block_rows: int):
        self.kern, self.X, self.n = kern, X, X.shape[0]
        self.w = np.full(self.n, 1.0 / self.n) if p is None else p
        self.sw = np.sqrt(self.w)
        self.blocks = _row_blocks(self.n, block_rows)
        self.storage = storage
        self.R = None
        self.matvecs = 0
        if storage in ("float64", "float32"):
            dtype = np.dtype(storage)
            self.R = np.empty((self.n, self.n), dtype=dtype)
            purity = trace = 0.0
            for rows in self.blocks:
                B = self._block(rows)
                purity += float(np.einsum("ij,ij->", B, B))
                trace += float(np.trace(B[:, rows]))
                self.R[rows] = B
            self.purity, self.trace = purity, trace
        else:
            self.purity = self.trace = None
        self.rtol = _STORAGE_RTOL[np.dtype(np.float32 if storage == "float32" else np.float64)]

    def _block(self, rows) -> np.ndarray:
        """Rows ``rows`` of rho, float64."""
        B = self.kern.gram(self.X[rows], self.X, check_input=False)
        B *= self.sw[rows, None]
        B *= self.sw[None, :]
        return B

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """Rho V, block by block (float64 products; float32 entries are converted per block)."""
        V = np.asarray(V, dtype=np.float64).reshape(self.n, -1)
        out = np.empty_like(V)
        self.matvecs += V.shape[1]
        if self.storage == "float64":
            return self.R @ V
        purity = trace = 0.0
        for rows in self.blocks:
            B = self.R[rows].astype(np.float64) if self.R is not None else self._block(rows)
            if self.R is None and self.purity is None:
                purity += float(np.einsum("ij,ij->", B, B))
                trace += float(np.trace(B[:, rows]))
            out[rows] = B @ V
        if self.R is None and self.purity is None:
            self.purity, self.trace = purity, trace
        return out

    def linear_operator(self) -> LinearOperator:
        """A scipy LinearOperator (symmetric, float64)."""
        return LinearOperator((self.n, self.n), matvec=lambda v: self.matmat(v)[:, 0], matmat=self.matmat,
                              dtype=np.float64)


def _ritz(op: _DensityOperator, k: int, v0, rng) -> tuple[np.ndarray, np.ndarray, float]:
    """Top-k Ritz values (descending), vectors, and the residual norm ||rho V - V Theta||_F."""
    if v0 is None:
        v0 = rng.standard_normal(op.n)
    ncv = min(op.n, max(2 * k + 1, 20))
    try:
        theta, V = eigsh(op.linear_operator(), k=k, which="LA", v0=v0, ncv=ncv, tol=1e-10)
    except (ArpackError, ArpackNoConvergence) as exc:
        raise NumericalError(f"the Lanczos solver (scipy eigsh, k = {k}) failed: {exc}") from exc
    idx = np.argsort(theta)[::-1]
    theta, V = theta[idx], V[:, idx]
    R = op.matmat(V) - V * theta[None, :]
    return theta, V, float(np.linalg.norm(R))


# ---------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------
def iter_vendi_bounds(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    ks: Sequence[int] = DEFAULT_KS,
    q=None,
    weights=None,
    time_budget: Optional[float] = None,
    storage: str = "auto",
    n_eigenvectors: int = 0,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    qs=UNSET,
    **kernel_params,
) -> Iterator[VendiBounds]:
    """Progressive guaranteed bounds: yields a :class:`VendiBounds` for k = 0 and then each k of ``ks``.

    The first result (k = 0) uses only the trace and the exact VS_2; each later one adds the
    top-k eigenvalues from Lanczos, started from the previous Ritz vectors. The progression
    stops before a step whose predicted time would overrun ``time_budget`` (seconds), or when k
    reaches n - 1; stop consuming the iterator to stop earlier. Parameters as for
    :func:`vendi_bounds` (``qs`` is the deprecated name of ``q``).
    """
    # a plain function around the generator: the deprecated name warns at the call, not at the first next()
    q = renamed_argument(q, qs, new="q", old="qs")
    return _iter_vendi_bounds(X, kernel=kernel, ks=ks, q=q, weights=weights, time_budget=time_budget,
                              storage=storage, n_eigenvectors=n_eigenvectors, rng=rng, progress=progress,
                              **kernel_params)


def _iter_vendi_bounds(X, *, kernel, ks, q, weights, time_budget, storage, n_eigenvectors, rng, progress,
                       **kernel_params) -> Iterator[VendiBounds]:
    """The generator of :func:`iter_vendi_bounds`."""
    start = time.perf_counter()
    kern = get_kernel(kernel, **kernel_params)
    generator = check_random_state(rng)
    qs = default_q_grid() if q is None else np.sort(check_q(q).ravel())
    if storage not in ("auto", "float64", "float32", "matrix-free"):
        raise DiversityInputError(
            f"storage must be one of 'auto', 'float64', 'float32', 'matrix-free'; got {storage!r}."
        )
    ks = sorted({check_scalar(k, "k", int, min_val=1) for k in np.atleast_1d(ks)})
    n_eigenvectors = check_scalar(n_eigenvectors, "n_eigenvectors", int, min_val=0)
    if time_budget is not None:
        time_budget = check_scalar(time_budget, "time_budget", float, min_val=0.0, include_boundaries="neither")
    if isinstance(kern, PrecomputedKernel):
        K = normalize_diagonal(check_kernel_matrix(X))
        n = K.shape[0]
        p = check_weights(weights, n)
        X, kern = np.arange(n, dtype=np.float64)[:, None], _IndexKernel(K)
    else:
        source = as_source(X)
        if isinstance(source, RowSource):
            X = source.read()
        X = kern.validate(X)
        n = X.shape[0]
        p = check_weights(weights, n)
        kern = kern.resolve(X, p)  # the weighted bandwidth of compute_spectrum, so the bounds are of its value
    if storage == "auto":
        storage = _auto_storage(n)
    elif storage != "matrix-free":
        check_memory(np.dtype(storage).itemsize * n * n, what=f"the {n} x {n} density matrix in {storage}",
                     hint="Use storage='matrix-free' (blocks of K recomputed at every Lanczos step).")
    report(progress, 0, 1, f"forming the {n} x {n} density matrix ({storage})")
    # a block of rows of K and its temporaries (distances, the product) take ~4 block-sized arrays
    op = _DensityOperator(kern, X, p, storage=storage,
                          block_rows=max(1, min(2048, int(memory_budget() // (32.0 * n)))))
    pass_seconds = 0.0
    if op.purity is None:
        # matrix-free: the exact VS_2 pass (half of K by symmetry, float32/CSR for fingerprints)
        # gives the purity; a Lanczos product costs about twice that pass (all of K)
        t0 = time.perf_counter()
        if isinstance(kern, _IndexKernel):
            op.matmat(generator.standard_normal((n, 1)))
        else:
            vs2 = vendi_2_exact(X, kernel=kern, weights=p, method="blocked")
            op.purity, op.trace = vs2.purity * vs2.trace**2, vs2.trace
        pass_seconds = 2.0 * (time.perf_counter() - t0)
    trace = op.trace
    purity = op.purity / (trace * trace)
    eps = EPS64
    settings = {"method": "lanczos", "matrix": storage, "ks": [], "seconds": 0.0, "stopped": "",
                "time_budget": time_budget}

    def result(top, tolerance, vectors=None, stopped=""):
        top = np.asarray(top, dtype=np.float64) / trace
        tolerance = tolerance / trace
        low, high = _bounds(top, n, qs, purity, tolerance, eps)
        exact = ("2", "inf") if top.size else ("2",)
        settings.update(seconds=time.perf_counter() - start, stopped=stopped)
        frozen_top = top.copy()
        frozen_top.setflags(write=False)
        for a in (low, high):
            a.setflags(write=False)
        qs_out = qs.copy()
        qs_out.setflags(write=False)
        if vectors is not None:
            vectors = np.ascontiguousarray(vectors[:, :n_eigenvectors])
            vectors.setflags(write=False)
        return VendiBounds(qs=qs_out, low=low, high=high, k=int(top.size), n=n, exact_orders=exact,
                           top_eigenvalues=frozen_top, residual_mass=float(max(0.0, 1.0 - top.sum())),
                           tolerance=float(tolerance), kernel=kern.to_dict(), settings=dict(settings),
                           purity=float(purity), eigenvectors=vectors)

    ks = [k for k in ks if k < n - 1]
    # each result is yielded once the next step is decided, so it says why the progression ended
    current = ([], 0.0, None)  # (top, tolerance, vectors) of the last completed step
    v0 = None
    last_seconds, last_k = None, None
    for i, k in enumerate(ks):
        elapsed = time.perf_counter() - start
        if time_budget is not None:
            # predicted cost: ARPACK's matrix products grow about linearly in k (ncv = 2k + 1),
            # its orthogonalisation quadratically; a matrix-free pass costs pass_seconds each
            if last_seconds is not None:
                predicted = last_seconds * (k / last_k) ** 1.5
            else:
                predicted = pass_seconds * 3 * k + 1e-9 * n * k * k
            if elapsed + predicted > time_budget:
                yield result(*current, stopped=f"time budget: k = {k} predicted {predicted:.1f} s")
                return
        yield result(*current)
        report(progress, i, len(ks), f"Lanczos: top {k} eigenvalues")
        t0 = time.perf_counter()
        theta, V, res = _ritz(op, k, v0, generator)
        last_seconds, last_k = time.perf_counter() - t0, k
        v0 = V.sum(axis=1)
        settings["ks"] = settings["ks"] + [k]
        current = (theta, res + op.rtol * math.sqrt(op.purity) * 4.0, V if n_eigenvectors else None)
    yield result(*current, stopped="last k" if ks else "k must stay below n - 1")
    report(progress, len(ks), len(ks), "done")


def vendi_bounds(
    X,
    *,
    kernel=DEFAULT_KERNEL,
    k=200,
    q=None,
    weights=None,
    time_budget: Optional[float] = None,
    storage: str = "auto",
    method: str = "auto",
    m: int = 2000,
    exact_vs2: Optional[bool] = None,
    n_eigenvectors: int = 0,
    rng=None,
    progress: Optional[ProgressCallback] = None,
    qs=UNSET,
    **kernel_params,
) -> VendiBounds:
    r"""Guaranteed bounds on VS_q for every order, from the top of the spectrum (Lanczos or Nystrom).

    Lanczos (below) uses the exact top-k eigenvalues and the exact VS_2; Nystrom uses eigenvalue
    lower bounds from a sketch (``method``), and ``k``, ``time_budget``, ``storage`` and
    ``n_eigenvectors`` are Lanczos settings it does not use.

    .. math:: \lambda = (l_1, \dots, l_k, \underbrace{x_1, \dots, x_{n-k}}_{\sum x = r,\ 0 \le x \le l_k,\
              \sum x^2 = s}), \qquad \mathrm{VS}_q \in [\min_x, \max_x]\ \mathrm{VS}_q(\lambda)

    Parameters
    ----------
    X : array-like of shape (n, d), RowSource, path, or (n, n) with ``kernel="precomputed"``
        Items (Lanczos reads them into memory: its operator needs them at every step).
    kernel : str or Kernel, default "cosine"
        The default of every function that takes a kernel (:data:`~diversity_core.kernels.DEFAULT_KERNEL`),
        so a bound or estimate is of the value the exact function gives without naming a kernel.
        Any kernel; meant for those without a feature map (rbf, laplacian, tanimoto, precomputed).
    k : int or sequence of int, default 200
        Number of top eigenvalues. An int runs the progression of :data:`DEFAULT_KS` up to k
        (cheap steps first, so a time budget still leaves a result); a sequence gives the steps.
    q : float, 'inf' or sequence of orders, optional
        The orders to bound. Default :func:`~diversity_core.vendi.default_q_grid` (0 to 100, 1 and inf).
    weights : array-like of shape (n,), optional
    time_budget : float, optional
        Seconds; no step starts whose predicted time would overrun it. The result is the last
        completed step (at worst k = 0: the bounds from the trace and VS_2 alone).
    storage : {"auto", "float64", "float32", "matrix-free"}, default "auto"
        How the Lanczos operator holds rho: the n x n matrix in float64 or float32 (the storage
        error, relative 2^-24 per entry, is added to the tolerance) when it fits the memory
        budget, else blocks of K recomputed at every product.
    method : {"auto", "lanczos", "nystrom"}, default "auto"
        ``"lanczos"``: the exact top-k eigenvalues (above). ``"nystrom"``: eigenvalue lower
        bounds from a Nystrom sketch with m landmarks (Loewner order,
        :func:`~diversity_core.approx.loewner.nystrom_bounds`): no pass over K, looser at q < 1.
        ``"auto"``: Nystrom when the kernel has features and ``storage="auto"`` would have to go
        matrix-free (not even the float32 matrix fits the memory budget), where each Lanczos
        product is a full O(n^2 d) pass; otherwise Lanczos.
    m : int, default 2000
        Landmarks of the Nystrom sketch (``method="nystrom"``).
    exact_vs2 : bool, optional
        Nystrom: also compute the exact VS_2 by one blocked pass over K. Default: when
        n <= 50,000 (the pass is O(n^2 d); about 2.5 minutes at n = 100,000, d = 64 on 2 cores).
        Lanczos always computes it.
    n_eigenvectors : int, default 0
        Number of top Ritz vectors (eigenvectors of rho in item space) to keep on the result,
        for galleries (at most k; Lanczos only).
    rng : int or Generator, optional
        Lanczos starting vector, or the Nystrom landmarks.
    progress : callable, optional
        ``progress(done, total, message)``, once per step.
    qs : sequence of orders, optional
        Deprecated name of ``q`` (a :class:`DeprecationWarning`).
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    VendiBounds
        ``.interval(q) -> ConfidenceInterval(low, high)``; ``settings`` says which method ran and, for Lanczos, how far
        the progression got and why it stopped.

    Raises
    ------
    DiversityInputError
        Bad data or options.
    MemoryBudgetError
        ``storage="float64"`` or ``"float32"`` asked for a matrix beyond the budget.
    NumericalError
        The Lanczos solver failed (``method="lanczos"``).

    Notes
    -----
    The bounds hold with certainty given that the Ritz values are the k largest eigenvalues to
    within the stated tolerance (the residual norm of the Ritz pairs plus the storage error):
    Lanczos from a random start finds them unless an eigenvalue is missed entirely, which the
    residual test cannot see. With Lanczos VS_inf is exact (1 / l_1) and VS_2 is exact; with
    Nystrom VS_2 is exact when ``exact_vs2`` is on, and VS_inf is a band. Lanczos cost: forming the
    matrix O(n^2 d) once; each step O(n^2) per product, about 2k to 6k products, plus ARPACK's
    O(n k^2) orthogonalisation; matrix-free, every product costs a pass O(n^2 d) over K.

    Examples
    --------
    >>> import numpy as np
    >>> b = vendi_bounds(np.eye(5), kernel="rbf", sigma=0.01, k=2, q=[1.0])
    >>> [round(v, 6) for v in b.interval(1.0)]
    [5.0, 5.0]
    """
    q = renamed_argument(q, qs, new="q", old="qs")
    check_option(method, BOUND_METHODS, "method")
    if method == "auto":
        method = bounds_method(X, kernel, storage=storage, **kernel_params)
    if method == "nystrom":
        if storage != "auto":
            raise DiversityInputError(f"storage={storage!r} is a Lanczos setting; method='nystrom' stores no matrix.")
        n = _n_items(X)
        return nystrom_bounds(X, kernel=kernel, m=m, q=q, weights=weights, rng=rng, progress=progress,
                              exact_vs2=(n <= EXACT_VS2_MAX_N) if exact_vs2 is None else bool(exact_vs2),
                              **kernel_params)
    ks = _steps(k)
    *_, last = _iter_vendi_bounds(X, kernel=kernel, ks=ks, q=q, weights=weights, time_budget=time_budget,
                                 storage=storage, n_eigenvectors=n_eigenvectors, rng=rng, progress=progress,
                                 **kernel_params)
    return last


def _n_items(X) -> int:
    """Number of rows of an array, sparse matrix, RowSource or path, without reading the rows."""
    source = as_source(X)
    if source is not None:
        return int(source.n)
    return int(np.shape(X)[0])


def bounds_method(X, kernel=DEFAULT_KERNEL, *, storage: str = "auto", **kernel_params) -> str:
    """How ``vendi_bounds(method="auto")`` sees the top of the spectrum for these items.

    ``"nystrom"`` where Lanczos would have to recompute K at every product (not even the
    float32 n x n matrix fits the memory budget) and the kernel has items to sketch; else
    ``"lanczos"``. Reads only the number of items.

    Examples
    --------
    >>> import numpy as np
    >>> bounds_method(np.zeros((100, 3)), "rbf")
    'lanczos'
    """
    kern = get_kernel(kernel, **kernel_params)
    if storage != "auto" or kern.name == "precomputed":
        return "lanczos"
    return "nystrom" if _auto_storage(_n_items(X)) == "matrix-free" else "lanczos"


def _auto_storage(n: int) -> str:
    """``storage="auto"`` of the Lanczos operator: the n x n matrix in float64, else float32, else matrix-free."""
    # the matrix and a quarter more for the operator's temporaries
    return "float64" if fits_memory(8.0 * n * n * 1.25) else "float32" if fits_memory(4.0 * n * n * 1.25) \
        else "matrix-free"


def _steps(k) -> list[int]:
    """The progression up to an int k (the default steps below it, then k), or the given steps."""
    if np.ndim(k) == 0:
        k = check_scalar(k, "k", int, min_val=1)
        return [s for s in DEFAULT_KS if s < k] + [k]
    return [check_scalar(v, "k", int, min_val=1) for v in k]


class _IndexKernel:
    """A precomputed K seen through item indices, so the operator can take blocks ``K[rows]``."""

    has_feature_map = False
    name = "precomputed"

    def __init__(self, K: np.ndarray):
        self.K = K

    def gram(self, A, B=None, *, check_input: bool = False) -> np.ndarray:
        """Rows of K for the items whose indices are in the first column of A (all columns: B)."""
        rows = A[:, 0].astype(np.intp)
        cols = slice(None) if B is None else B[:, 0].astype(np.intp)
        return np.array(self.K[rows][:, cols], dtype=np.float64)

    def to_dict(self) -> dict:
        """JSON-ready description."""
        return {"name": "precomputed"}


def vs_inf_exact(X, *, kernel=DEFAULT_KERNEL, weights=None, storage: str = "auto", rng=None,
                 progress: Optional[ProgressCallback] = None, **kernel_params) -> float:
    """Exact VS_inf = 1 / lambda_max for any kernel, by Lanczos on the kernel operator.

    The operator is the n x n matrix when it fits the memory budget (float64, else float32),
    otherwise blocks of K recomputed at each product (O(n^2 d) per product; about 20-60 products).
    Returns the Ritz value's score; its tolerance is in ``vendi_bounds(..., k=1)``.

    Examples
    --------
    >>> import numpy as np
    >>> round(vs_inf_exact(np.eye(4), kernel="rbf", sigma=0.01), 9)
    4.0
    """
    # always Lanczos: method="auto" would take Nystrom lower bounds past the float32 matrix,
    # whose 1 / mu_1 only bounds VS_inf from above
    b = vendi_bounds(X, kernel=kernel, k=[1], q=[np.inf], weights=weights, storage=storage, method="lanczos",
                     rng=rng, progress=progress, **kernel_params)
    if b.k < 1:
        # two items: Lanczos needs k < n - 1; the dense path is trivial here
        return compute_spectrum(X, kernel=kernel, weights=weights, method="dense", **kernel_params).vendi(np.inf)
    return 1.0 / float(b.top_eigenvalues[0])
