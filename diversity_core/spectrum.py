"""The eigenvalue spectrum of the density matrix, computed once per (data, kernel).

The density matrix is :math:`\\rho = \\mathrm{diag}(\\sqrt p)\\, K\\, \\mathrm{diag}(\\sqrt p)`
(``K / n`` for uniform weights). Its eigenvalues are the cached object of the project: every
Vendi score of every order q follows from them in O(n) (:mod:`diversity_core.vendi`).

Two exact paths (DESIGN §1.1):

- ``"dense"``: form the n x n matrix and call LAPACK's symmetric eigensolver, O(n^3);
- ``"dual"``: when ``K = Phi Phi^T`` with an explicit feature map of dimension d < n, the
  non-zero eigenvalues of ``rho`` equal those of ``Phi^T diag(p) Phi`` (d x d), O(n d^2),
  accumulated over row chunks (:mod:`diversity_core.streaming`), so X may be an array, a file
  streamed from disk or a Dask array (:mod:`diversity_core.sources`).

``method="auto"`` takes the dual path when the kernel has a feature map and d < n; otherwise the
dense path when its n x n matrices fit the memory budget (:func:`diversity_core.set_config`);
otherwise it raises :class:`~diversity_core.exceptions.MemoryBudgetError` naming the options.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ._config import check_memory, fits_memory
from ._display import (
    HEADLINE_QS,
    NotebookDisplay,
    format_kernel,
    order_lines,
    order_rows,
    require_plotly,
    short_repr,
)
from ._progress import ProgressCallback, report
from ._validation import check_kernel_matrix, check_option, check_weights
from .distances import _as_float64
from .entropy import EPS64, computation_eps, default_q_grid, support_tol, vendi_from_eigenvalues
from .exceptions import DiversityInputError, KernelDiagonalWarning, NumericalError, SpectrumWarning
from .kernels import (
    MEDIAN_SAMPLE,
    PrecomputedKernel,
    get_kernel,
    median_sample_rows,
    normalize_diagonal,
    row_keys,
)
from .sources import DaskSource, RowSource, as_source
from .streaming import (
    _array_chunks,
    _dask_item_vectors,
    _dask_moments,
    _dual_moments,
    _item_vectors,
    _Moments,
)

__all__ = ["Spectrum", "compute_spectrum", "spectrum_from_kernel", "spectrum_from_eigenvalues", "is_mean_direction"]

METHODS = ("auto", "dense", "dual")
DEVICES = ("cpu", "cuda", "auto")
#: Where the data were when the spectrum was computed.
EXECUTIONS = ("in-memory", "streamed", "dask")

# scikit-learn's _check_psd_eigenvalues thresholds, relative to the largest eigenvalue:
# below -significant the matrix is not PSD (error); between -significant and -small the
# negatives are round-off worth a warning; above -small they are clipped silently.
_SIGNIFICANT_NEG = {np.dtype(np.float64): 1e-5, np.dtype(np.float32): 5e-3}
_SMALL_NEG = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 2e-7}


def _eigenvector_ends(vectors: np.ndarray, j: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Items with the ``m`` largest and ``m`` smallest entries of column j of ``vectors`` (unchecked)."""
    u = vectors[:, j]
    order = np.argsort(u, kind="stable")
    m = min(m, u.size // 2 or 1)
    return order[::-1][:m], order[:m]


#: Cosine with the all-ones direction above which an eigenvector counts as the mean direction.
MEAN_DIRECTION_COSINE = 0.95


def is_mean_direction(vector, *, threshold: float = MEAN_DIRECTION_COSINE) -> bool:
    """Whether an eigenvector (one entry per item) points along the items' mean direction.

    The top eigenvector of a kernel with non-negative entries (cosine of non-negative features,
    an RBF) usually has all its entries of one sign: it measures how typical each item is, not a
    contrast between two kinds of items, and colouring a map by it shows no split (issue 41,
    item 10). Pure: no kernel is computed.

    Parameters
    ----------
    vector : array-like of shape (n,)
        The eigenvector's entries (any scale, any sign convention).
    threshold : float
        The cosine with the all-ones direction ``1/sqrt(n)`` at or above which the vector counts
        as the mean direction even when a few entries take the other sign.

    Returns
    -------
    bool
        True when every non-zero entry has the same sign or the absolute cosine with the
        all-ones direction reaches ``threshold``.

    Examples
    --------
    >>> is_mean_direction([-0.019, -0.033, -0.025])
    True
    >>> is_mean_direction([0.5, -0.5, 0.1])
    False
    """
    v = np.asarray(vector, dtype=np.float64).ravel()
    if v.size < 2 or not np.all(np.isfinite(v)):
        raise DiversityInputError(
            f"is_mean_direction needs at least 2 finite entries; got {v.size} entries"
            + ("" if np.all(np.isfinite(v)) else " with NaN or infinity") + ". Pass one eigenvector's entries."
        )
    if not 0.0 < float(threshold) <= 1.0:
        raise DiversityInputError(f"threshold must lie in (0, 1] (a cosine); got {threshold!r}.")
    return _is_mean_direction(v, float(threshold))


def _is_mean_direction(v: np.ndarray, threshold: float) -> bool:
    nonzero = v[np.abs(v) > np.finfo(np.float64).eps * float(np.max(np.abs(v), initial=0.0))]
    if nonzero.size and bool(np.all(nonzero > 0) or np.all(nonzero < 0)):
        return True
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        return False
    cosine = abs(float(np.sum(v, dtype=np.float64))) / (norm * math.sqrt(v.size))
    return bool(cosine >= threshold)


@dataclass(frozen=True, repr=False)
class Spectrum(NotebookDisplay):
    """Eigenvalues (and optionally top eigenvectors) of a density matrix.

    Attributes
    ----------
    eigenvalues : ndarray of shape (m,)
        Eigenvalues of rho in descending order, clipped to >= 0, zero below the support
        threshold ``tol``, summing to 1. ``m`` is n (dense) or d (dual).
    n : int
        Number of items.
    method : {"dense", "dual"}
        The path that computed them.
    kernel : dict
        The resolved kernel (name and parameters, bandwidths included).
    eigenvectors : ndarray of shape (n, k) or None
        Unit-norm eigenvectors of rho in item space for the k largest eigenvalues
        (column j belongs to ``eigenvalues[j]``); ``None`` unless requested.
    tol : float
        Support threshold: eigenvalues at or below it count as zero. It is
        ``m * eps * max(eigenvalue)`` (:func:`~diversity_core.entropy.support_tol`, the rule of
        ``numpy.linalg.matrix_rank``), with ``eps`` of the computation (float64's on every path
        here, float32 data included). ``rank`` (= VS_0) counts the eigenvalues above it.
    trace : float
        Trace of rho before renormalisation (1 when ``k(x, x) = 1`` for every item).
    n_clipped : int
        Number of negative eigenvalues (round-off) set to zero.
    weighted : bool
        Whether non-uniform weights were used.
    device : str
        Where the decomposition ran.
    exact : bool
        Whether the eigenvalues are those of rho up to round-off (every path of this module);
        approximations (Nystrom, bounds) set it to False.
    execution : {"in-memory", "streamed", "dask"}
        Where the data were: in memory, read from disk chunk by chunk, or in a Dask array
        reduced on the current Dask scheduler.
    eps : float
        The ``eps`` of ``tol``, for recomputations by the same rule: the relative round-off of
        the computation (:func:`~diversity_core.entropy.computation_eps`). float64's on every
        path of this module: float32 features are exact float64 numbers, converted block by
        block and multiplied in float64, so they get their float64 copy's spectrum.
    """

    eigenvalues: np.ndarray
    n: int
    method: str
    kernel: dict = field(default_factory=dict)
    eigenvectors: Optional[np.ndarray] = None
    tol: float = 0.0
    trace: float = 1.0
    n_clipped: int = 0
    weighted: bool = False
    device: str = "cpu"
    exact: bool = True
    execution: str = "in-memory"
    eps: float = EPS64

    @property
    def support(self) -> np.ndarray:
        """The eigenvalues above the support threshold (the ones every VS_q sums over)."""
        return self.eigenvalues[self.eigenvalues > self.tol]

    @property
    def rank(self) -> int:
        """Numerical rank: the number of eigenvalues in the support (equals VS_0)."""
        return int(np.count_nonzero(self.eigenvalues > self.tol))

    def vendi(self, q=1.0) -> float:
        """Vendi score of order q from the cached eigenvalues, O(m). See :func:`vendi_from_eigenvalues`."""
        return vendi_from_eigenvalues(self.support, q, normalized=True)

    def profile(self, qs) -> np.ndarray:
        """Vendi scores for many orders at once (the q-profile), O(m) per order."""
        return vendi_from_eigenvalues(self.support, np.atleast_1d(qs), normalized=True)

    def eigenvector_ends(self, j: int, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the items with the ``m`` largest and the ``m`` smallest entries of eigenvector ``j``.

        The galleries of the VS paper (Fig. 6): the two ends of a top eigenvector show the
        direction of variation it stands for. Needs ``n_eigenvectors > j`` at computation.
        """
        if self.eigenvectors is None or not 0 <= j < self.eigenvectors.shape[1]:
            kept = 0 if self.eigenvectors is None else self.eigenvectors.shape[1]
            raise DiversityInputError(
                f"eigenvector {j} was not kept ({kept} kept); compute the spectrum with n_eigenvectors > {j}."
            )
        return _eigenvector_ends(self.eigenvectors, j, m)

    def to_dict(self, *, include_eigenvectors: bool = False) -> dict[str, Any]:
        """JSON-ready dict of the spectrum (eigenvectors only on request)."""
        out = {
            "n": self.n,
            "method": self.method,
            "kernel": self.kernel,
            "eigenvalues": self.eigenvalues.tolist(),
            "tol": self.tol,
            "rank": self.rank,
            "trace": self.trace,
            "n_clipped": self.n_clipped,
            "weighted": self.weighted,
            "device": self.device,
            "exact": self.exact,
            "execution": self.execution,
        }
        if include_eigenvectors and self.eigenvectors is not None:
            out["eigenvectors"] = self.eigenvectors.tolist()
        return out

    # -- display (a notebook's repr, HTML table, tidy frame and figure) --------------------------
    def __repr__(self) -> str:
        vs = self.profile(HEADLINE_QS)
        return short_repr(
            f"Spectrum(n={self.n}, method={self.method!r}, kernel={format_kernel(self.kernel)})",
            [*order_lines(HEADLINE_QS, vs), ("eigenvalues", self.eigenvalues),
             ("support", f"{self.rank} eigenvalues above tol={self.tol:.3g}; trace {self.trace:.6g}"),
             ("eigenvectors", None if self.eigenvectors is None else f"{self.eigenvectors.shape[1]} kept"),
             ("run", f"{self.device}, {self.execution}, {'weighted' if self.weighted else 'uniform'}, "
                     f"{self.n_clipped} clipped")],
        )

    def to_frame(self, q=HEADLINE_QS):
        """Tidy DataFrame of VS_q at the orders ``q`` (default 0, 1, 2, inf), one row per order.

        Columns ``score`` (``"vendi"``), ``q``, ``value``, ``low``, ``high`` (= value), ``level``
        (1.0), ``kind`` (``"exact"``, or ``"estimate"`` for an approximate spectrum); see
        :mod:`diversity_core._display`.
        """
        from ._display import tidy_frame

        qs = np.atleast_1d(np.asarray(q, dtype=np.float64))
        vs = self.profile(qs)
        kind = "exact" if self.exact else "estimate"
        return tidy_frame(order_rows("vendi", qs, vs, kind=kind))

    def plot(self, kind: str = "spectrum", *, q=None):
        """The app's and the report's figure of this spectrum (plotly, from the extra ``[report]``).

        Parameters
        ----------
        kind : {"spectrum", "q_profile"}
            ``"spectrum"``: the eigenvalues and their cumulative mass
            (:func:`~diversity_core.report.figures.spectrum_figure`); ``"q_profile"``: VS_q on the
            default grid of orders (:func:`~diversity_core.report.figures.q_profile_figure`).
        q : float, optional
            The order marked on the q-profile.

        Returns
        -------
        plotly.graph_objects.Figure

        Raises
        ------
        MissingDependencyError
            When plotly is not installed.
        """
        check_option(kind, ("spectrum", "q_profile"), "kind")
        require_plotly("Spectrum.plot()")
        if kind == "spectrum":
            from .report.figures import spectrum_figure

            return spectrum_figure(self.eigenvalues)
        from .report.figures import q_profile_figure

        qs = default_q_grid()
        return q_profile_figure((qs, self.profile(qs)), q=q, n=self.n)


# ---------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------
def compute_spectrum(
    X,
    *,
    kernel="cosine",
    weights=None,
    method: str = "auto",
    n_eigenvectors: int = 0,
    device: str = "cpu",
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> Spectrum:
    r"""Eigenvalue spectrum of the density matrix of X under a kernel.

    .. math:: \rho = \mathrm{diag}(\sqrt p)\, K\, \mathrm{diag}(\sqrt p), \qquad
              K_{ij} = k(x_i, x_j)

    (Eq. (1)-(2) of [1]; weighted form of [2]). With an explicit feature map
    :math:`K = \Phi \Phi^T` the non-zero eigenvalues of rho equal those of the d x d matrix
    :math:`\Phi^T \mathrm{diag}(p) \Phi` ([1], Sec. 3, "dual").

    Parameters
    ----------
    X : array-like of shape (n, d), RowSource, dask.array.Array, path, or (n, n) with ``kernel="precomputed"``
        Item features, or a kernel matrix. float32 features are kept in float32 and converted
        to float64 (exactly) chunk by chunk for every product: the spectrum is that of their
        float64 copy.
        A :class:`~diversity_core.sources.RowSource`, a path to a ``.npy`` / ``.parquet`` file
        or a folder of ``.npy`` shards (:func:`~diversity_core.sources.open_source`), and a
        file-backed ``numpy.memmap`` are streamed in row chunks, never loaded whole; a
        ``dask.array.Array`` is reduced on the current Dask scheduler (a ``distributed.Client``
        when one is active).
    kernel : str or Kernel, default "cosine"
        See :func:`diversity_core.kernels.get_kernel`.
    weights : array-like of shape (n,), optional
        Non-negative item weights (renormalised to probabilities). Default uniform.
    method : {"auto", "dense", "dual"}, default "auto"
        ``"auto"``: dual when the kernel has a feature map and d < n; else dense when its n x n
        matrices fit the memory budget; else :class:`MemoryBudgetError` naming the options.
    n_eigenvectors : int, default 0
        Number of top eigenvectors (item space) to keep, for galleries.
    device : {"cpu", "cuda", "auto"}, default "cpu"
        ``"cuda"`` computes the Gram product and eigendecomposition with torch on the GPU, in
        float64 whatever the features' dtype; ``"auto"`` uses the GPU when torch sees one.
    progress : callable, optional
        ``progress(done, total, message)``.
    **kernel_params
        Kernel parameters, e.g. ``sigma=1.0``.

    Returns
    -------
    Spectrum

    Raises
    ------
    DiversityInputError
        Bad data, weights or options; a kernel that is not PSD beyond round-off.
    MemoryBudgetError
        The dense path's n x n matrices exceed the memory budget (``method="dense"``, or
        ``"auto"`` with a kernel that has no feature map); the message names the size, the
        budget and the options.
    NumericalError
        The eigensolver failed to converge.

    Warns
    -----
    KernelDiagonalWarning
        The kernel's diagonal is not 1 (e.g. linear kernel on non-unit rows); the eigenvalues
        are renormalised to sum 1.
    SpectrumWarning
        Negative round-off eigenvalues above 1e-12 of the largest were clipped.

    Notes
    -----
    Cost: dual O(n d^2) + O(d^3), memory O(chunk d + d^2) (chunks of ``chunk_bytes``, see
    :func:`~diversity_core.set_config`), products in float64 summed in float64; dense O(n^2 d)
    for K plus O(n^3) for the eigenvalues (O(n^3) with a larger constant when eigenvectors are
    requested), memory two n x n float64 matrices (five with eigenvectors; n = 20000 needs
    6.4 GB) and, for float32 features, their float64 copy, checked against the memory budget
    first.

    Support: eigenvalues at or below ``m eps64 lambda_max`` are round-off
    (:func:`~diversity_core.entropy.support_tol`); float32 data are the exact values they hold,
    so VS_q of float32 features equals VS_q of their float64 copy for every q, and VS_0 (the
    rank) is the rank of those stored values.

    References
    ----------
    .. [1] Friedman & Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
       Learning", TMLR 2023.
    .. [2] Pasarkar & Dieng, "Cousins of the Vendi Score".

    Examples
    --------
    >>> import numpy as np
    >>> round(compute_spectrum(np.eye(3)).vendi(1.0), 12)  # three orthogonal items
    3.0
    """
    return _compute_spectrum(
        X, kernel=kernel, weights=weights, method=method, n_eigenvectors=n_eigenvectors, device=device,
        progress=progress, kernel_params=kernel_params,
    )[0]


def _compute_spectrum(
    X, *, kernel, weights, method, n_eigenvectors, device, progress, kernel_params, mean: bool = False
) -> tuple[Spectrum, Optional[_Moments]]:
    """:func:`compute_spectrum`, plus the dual moments (``Phi^T p`` with ``mean=True``; None when dense)."""
    kern = get_kernel(kernel, **kernel_params)
    check_option(method, METHODS, "method")
    device = _check_device(device)
    if isinstance(kern, PrecomputedKernel):
        return spectrum_from_kernel(
            X, weights=weights, n_eigenvectors=n_eigenvectors, device=device, progress=progress
        ), None
    source = as_source(X)
    if isinstance(source, RowSource) and source.in_memory:
        X, source = source.read(), None
    if source is not None:
        return _source_spectrum(source, kern, weights, method, n_eigenvectors, device, progress, mean)
    X = kern.validate(X)
    n, d = X.shape
    p = check_weights(weights, n)
    n_eigenvectors = _check_n_eigenvectors(n_eigenvectors, n)
    kern = kern.resolve(X, p)  # the weighted median bandwidth: weights as counts = repeated rows
    # float32 rows take a float64 copy on the dense path (counted like rows still to be read)
    method = _choose_method(method, kern, n, d, n_eigenvectors, in_memory=X.dtype == np.float64)
    report(progress, 0, 2, f"forming the {method} matrix")
    moments = None
    if method == "dual":
        moments = _dual_moments(_array_chunks(X), kern, p, n=n, d=d, validate=False, mean=mean, device=device)
        M, eps = moments.gram, moments.eps
    else:
        # float32 values are exact float64 numbers: the kernel sees their float64 copy (its bytes are
        # in the dense path's memory check), so K, and the float64 support threshold, are the copy's
        with np.errstate(over="ignore"):  # products beyond 1.8e308: the scale guard (_check_scale) says so
            K = kern.gram(_as_float64(X), check_input=False)
        M, eps = _density_from_kernel(K, p), computation_eps("float64")
        del K
    report(progress, 1, 2, "eigendecomposition")
    k = n_eigenvectors if method == "dense" else min(n_eigenvectors, M.shape[0])
    lam, vecs = _eigh(M, k, device)
    if method == "dual" and vecs is not None:
        vecs = _item_vectors(_array_chunks(X), kern, p, vecs, n=n, validate=False)
    # warnings point at the caller of compute_spectrum: _finish <- here <- compute_spectrum <- caller
    spec = _finish(lam, vecs, n=n, method=method, kernel=kern.to_dict(), p=p, eps=eps, device=device, stacklevel=4)
    report(progress, 2, 2, "done")
    return spec, moments


def _source_spectrum(source, kern, weights, method, n_eigenvectors, device, progress, mean):
    """The spectrum of rows streamed from a source (dual), or read into memory when dense fits."""
    n, d = source.n, source.d
    if n < 2:
        raise DiversityInputError(f"{source.name} needs at least 2 items to measure diversity; got {n}.")
    p = check_weights(weights, n)
    n_eigenvectors = _check_n_eigenvectors(n_eigenvectors, n)
    kern = _resolve_from_source(kern, source, p)
    method = _choose_method(method, kern, n, d, n_eigenvectors, in_memory=False)
    if method == "dense":
        # the rows fit (checked with the n x n matrices); the in-memory path validates them
        return _compute_spectrum(
            source.read(), kernel=kern, weights=p, method="dense", n_eigenvectors=n_eigenvectors,
            device=device, progress=progress, kernel_params={}, mean=mean,
        )
    if isinstance(source, DaskSource):
        moments = _dask_moments(source.X, kern, p, mean=mean, progress=progress)
        execution = "dask"
    else:
        moments = _dual_moments(source.chunks(), kern, p, n=n, d=d, validate=True, mean=mean, device=device,
                                name=source.name, progress=progress)
        execution = "streamed"
    lam, vecs = _eigh(moments.gram, min(n_eigenvectors, moments.gram.shape[0]), device)
    if vecs is not None:
        if execution == "dask":
            vecs = _dask_item_vectors(source.X, kern, p, vecs)
        else:
            vecs = _item_vectors(source.chunks(), kern, p, vecs, n=n, validate=True, name=source.name)
    spec = _finish(lam, vecs, n=n, method="dual", kernel=kern.to_dict(), p=p, eps=moments.eps, device=device,
                   execution=execution, stacklevel=5)
    report(progress, n, n, "done")
    return spec, moments


def _needs_data(kern) -> bool:
    """Whether a kernel has parameters still to be fixed on the data (a None anywhere in its parameters)."""

    def has_none(value) -> bool:
        if value is None:
            return True
        if isinstance(value, dict):
            return any(has_none(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return any(has_none(v) for v in value)
        return False

    return has_none(kern.get_params())


def _resolve_from_source(kern, source, p: Optional[np.ndarray] = None):
    """The kernel resolved on the rows an in-memory computation would look at (median-heuristic sample)."""
    if not _needs_data(kern):
        return kern
    rows = median_sample_rows(_source_row_keys(source) if source.n > MEDIAN_SAMPLE else source.n,
                              MEDIAN_SAMPLE, p)
    sample = source.take(np.arange(source.n) if rows is None else rows)
    # the sample's weights (renormalised by median_distance), so the bandwidth equals the in-memory one
    sample_p = None if p is None else (p if rows is None else p[rows])
    return kern.resolve(kern.validate(sample), sample_p)


def _source_row_keys(source) -> np.ndarray:
    """:func:`~diversity_core.kernels.row_keys` of a source's rows, in one streamed pass (on Dask, a graph)."""
    if isinstance(source, DaskSource):
        X = source.X
        keys = X.map_blocks(lambda b: row_keys(b)[:, None], dtype=np.uint64, chunks=(X.chunks[0], (1,)))
        return np.asarray(keys.compute()).ravel()
    keys = np.empty(source.n, dtype=np.uint64)
    for start, block in source.chunks():
        keys[start:start + block.shape[0]] = row_keys(block)
    return keys


def _dense_bytes(n: int, n_eigenvectors: int) -> float:
    """Peak bytes of the dense path: K, LAPACK's copy, and with eigenvectors syevd's output and workspace."""
    return 8.0 * n * n * (5 if n_eigenvectors else 2)


def _choose_method(method: str, kern, n: int, d: int, n_eigenvectors: int, *, in_memory: bool = True) -> str:
    """Resolve ``"auto"`` and check the choice against the kernel and the memory budget.

    ``"auto"``: dual when the kernel has a feature map and d < n; dense when its matrices (and
    rows not yet in memory) fit the budget; otherwise :class:`MemoryBudgetError`. This last
    branch is where paths that need no n x n matrix for kernels without features plug in.
    """
    # rows not yet in memory are read (as float64 once validated) before the dense path runs
    need = _dense_bytes(n, n_eigenvectors) + (0.0 if in_memory else 8.0 * n * d)
    if method == "auto":
        if kern.has_feature_map and d < n:
            return "dual"
        if fits_memory(need):
            return "dense"
    elif method == "dual":
        if not kern.has_feature_map:
            raise DiversityInputError(
                f"method='dual' needs a kernel with an explicit feature map (linear, cosine, "
                f"probability_product or sums of them); the {kern.name} kernel has none. Use method='dense'."
            )
        return "dual"
    features = "" if kern.has_feature_map else (
        "a kernel with a feature map (cosine, linear, probability_product) takes the exact dual path at any n, "
        "streamed in chunks; "
    )
    check_memory(
        need,
        what=f"the dense spectrum of n = {n} items under the {kern.name} kernel (the {n} x {n} kernel matrix "
        "and the eigensolver's working copies)",
        hint=f"Options: {features}diversity_core.vendi_slq(X, kernel={kern.name!r}, q=...) estimates the "
        "full-sample VS_q for every q > 0 with a confidence interval (1% relative by default), the plan's "
        "choice, with guaranteed bounds beside it (CLI: --approx auto, or --approx slq); "
        f"vendi_2_exact(X, kernel={kern.name!r}) computes VS_2 exactly, with bounds on VS_inf, in blocks "
        "without the matrix (CLI: --q 2); diversity_core.vendi_bounds gives guaranteed bounds on every "
        "VS_q (CLI: --approx bounds). The sketches (vendi_estimate; CLI: --approx nystrom|rff|tanimoto_rf) "
        "are far off on flat spectra (60-80% seen) and are not the first choice.",
    )
    return "dense"


def spectrum_from_kernel(
    K,
    *,
    weights=None,
    n_eigenvectors: int = 0,
    device: str = "cpu",
    progress: Optional[ProgressCallback] = None,
) -> Spectrum:
    """Spectrum of a precomputed kernel matrix K (n x n), dense path.

    K is validated (square, finite, symmetric, positive diagonal); a non-unit diagonal is
    rescaled to 1 with a :class:`KernelDiagonalWarning`; a matrix that is not PSD beyond
    round-off raises :class:`DiversityInputError`. Cost O(n^3).
    """
    device = _check_device(device)
    K = normalize_diagonal(check_kernel_matrix(K), warn=True)
    n = K.shape[0]
    p = check_weights(weights, n)
    n_eigenvectors = _check_n_eigenvectors(n_eigenvectors, n)
    check_memory(
        _dense_bytes(n, n_eigenvectors) - 8.0 * n * n,
        what=f"the eigensolver's working copies of the {n} x {n} kernel matrix",
        hint="Pass features with a kernel instead of K (a feature kernel takes the dual path).",
    )
    report(progress, 0, 1, "eigendecomposition")
    spec = _kernel_spectrum(K, p, kernel={"name": "precomputed"}, n_eigenvectors=n_eigenvectors, device=device)
    report(progress, 1, 1, "done")
    return spec


def spectrum_from_eigenvalues(eigenvalues, *, n: Optional[int] = None) -> Spectrum:
    """Wrap given eigenvalues of a density matrix (e.g. from another tool) as a Spectrum.

    Negative values beyond round-off raise; the values are renormalised to sum 1.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64).ravel())
    if lam.size == 0 or not np.isfinite(lam).all() or not lam[-1] > 0:
        raise DiversityInputError("eigenvalues must be finite numbers, at least one of them positive.")
    return _finish(lam / lam.sum(), None, n=n or lam.size, method="given", kernel={}, p=None,
                   eps=computation_eps("float64"), device="cpu")


# ---------------------------------------------------------------------------------------
# private computation
# ---------------------------------------------------------------------------------------
def _kernel_spectrum(
    K: np.ndarray,
    p: Optional[np.ndarray] = None,
    *,
    kernel: Optional[dict] = None,
    n_eigenvectors: int = 0,
    device: str = "cpu",
    eps: float = EPS64,
) -> Spectrum:
    """Spectrum of a checked kernel matrix (overwritten in place) and checked weights; no validation."""
    lam, vecs = _eigh(_density_from_kernel(K, p), n_eigenvectors, device)
    return _finish(lam, vecs, n=K.shape[0], method="dense", kernel=kernel or {}, p=p, eps=eps, device=device)


def _check_device(device: str) -> str:
    """Resolve 'auto' and check that CUDA is there when asked for."""
    check_option(device, DEVICES, "device")
    if device == "cpu":
        return "cpu"
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        if device == "cuda":
            raise DiversityInputError("device='cuda' needs torch; it is not installed.") from None
        return "cpu"
    available = torch.cuda.is_available()
    if device == "cuda" and not available:
        raise DiversityInputError("device='cuda' was asked for but torch sees no CUDA device; use device='cpu'.")
    return "cuda" if available else "cpu"


def _check_n_eigenvectors(k, n: int) -> int:
    """Validate the number of eigenvectors to keep."""
    if int(k) != k or k < 0:
        raise DiversityInputError(f"n_eigenvectors must be a non-negative integer; got {k!r}.")
    return int(min(int(k), n))


def _density_from_kernel(K: np.ndarray, p: Optional[np.ndarray]) -> np.ndarray:
    """Rho = diag(sqrt p) K diag(sqrt p) (K / n when uniform), in place on K."""
    K = np.asarray(K, dtype=np.float64)
    if p is None:
        K *= 1.0 / K.shape[0]
    else:
        s = np.sqrt(p)
        K *= s[:, None]
        K *= s[None, :]
    return K


#: A density (or dual) matrix whose trace is below this kept fewer than 52 bits of its products:
#: they underflowed (float64's smallest normal number over its eps, about 1e-292).
_UNDERFLOW_TRACE = float(np.finfo(np.float64).tiny) / EPS64


def _check_scale(M) -> None:
    """Refuse a matrix whose products overflowed or underflowed float64: the one scale guard of every path.

    Validated features are finite, so a non-finite matrix means products beyond 1.8e308 (values
    near 1e154 and beyond under the linear kernel); a trace below :data:`_UNDERFLOW_TRACE` means
    products that underflowed (values near 1e-146 and below): both would otherwise end in a failed
    eigensolver or a "degenerate kernel". O(m^2), against the decomposition's O(m^3).
    """
    if not hasattr(M, "trace") or isinstance(M, np.ndarray):
        M = np.asarray(M)  # a torch tensor (the GPU path) keeps its own trace and sum
    trace = float(M.trace())
    # one summation pass, no n x n temporary: NaN and inf propagate into the sum
    finite = math.isfinite(trace) and math.isfinite(float(M.sum()))
    if finite and trace > _UNDERFLOW_TRACE:
        return
    raise DiversityInputError(
        f"the kernel's products of these features {'underflow' if finite else 'overflow'} double precision "
        f"(the density matrix's trace is {trace:.3g}): the features are too "
        + ("small (or all zero)" if finite else "large")
        + " for the kernel's products (values near 1e-146 or below, 1e154 or above, under the linear kernel). "
        "Rescale them: c * X has the same Vendi score under the linear and cosine kernels (the cosine "
        "kernel takes any finite scale)."
    )


def _eigh(M, n_vectors: int, device: str):
    """Ascending eigenvalues of symmetric M and the top ``n_vectors`` eigenvectors, always in float64.

    The GPU path decomposes in float64 too (a tensor of another dtype is converted first), so
    the float64 support threshold holds on every device.
    """
    _check_scale(M)
    if device == "cuda":
        import torch

        T = torch.as_tensor(M).to(device="cuda", dtype=torch.float64)
        if n_vectors:
            lam, vecs = torch.linalg.eigh(T)
            return lam.cpu().numpy(), vecs[:, -n_vectors:].cpu().numpy()
        return torch.linalg.eigvalsh(T).cpu().numpy(), None
    try:
        # numpy's LAPACK (syevd): the matrix was formed by numpy's BLAS, and handing over to
        # SciPy's separately bundled OpenBLAS leaves two thread pools spinning against each
        # other on a small machine (the d = 512 dual path ran 2x slower that way).
        if n_vectors:
            lam, vecs = np.linalg.eigh(M)
            return lam, np.ascontiguousarray(vecs[:, -n_vectors:])
        return np.linalg.eigvalsh(M), None
    except np.linalg.LinAlgError as exc:
        raise NumericalError(f"the symmetric eigensolver failed: {exc}") from exc


def _finish(lam, vecs, *, n, method, kernel, p, eps, device, execution: str = "in-memory",
            stacklevel: int = 3) -> Spectrum:
    """Check PSD, clip, threshold and renormalise raw ascending eigenvalues into a Spectrum.

    ``stacklevel``: the warnings' level, counted from here, of the public function's caller.
    """
    lam = np.asarray(lam, dtype=np.float64)[::-1].copy()
    if vecs is not None:
        vecs = np.ascontiguousarray(vecs[:, ::-1])
    lmax = float(lam[0]) if lam.size else 0.0
    if not lmax > 0:
        raise NumericalError("the density matrix has no positive eigenvalue; the kernel is degenerate.")
    dtype = np.dtype(np.float32) if eps > EPS64 else np.dtype(np.float64)
    lmin = float(lam[-1])
    n_clipped = int(np.count_nonzero(lam < 0))
    if lmin < -_SIGNIFICANT_NEG[dtype] * lmax:
        raise DiversityInputError(
            "the kernel matrix is not positive semidefinite: its smallest eigenvalue is "
            f"{lmin:.3g}, {(-lmin / lmax):.2e} of the largest. A Vendi score needs a PSD similarity; "
            "use one of the built-in kernels or project K onto the PSD cone."
        )
    if lmin < -_SMALL_NEG[dtype] * lmax:
        warnings.warn(
            f"{n_clipped} negative eigenvalue(s) down to {lmin:.3g} ({(-lmin / lmax):.1e} of the largest) "
            "were treated as round-off and set to 0.",
            SpectrumWarning,
            stacklevel=stacklevel,
        )
    np.maximum(lam, 0.0, out=lam)
    trace = float(lam.sum())
    # unit-diagonal kernels give trace 1 up to round-off of the precision the matrix was formed in
    if abs(trace - 1.0) > max(1e-6, 1e3 * eps):
        warnings.warn(
            f"k(x, x) != 1 for some items (trace of the density matrix {trace:.6g}); the eigenvalues "
            "were renormalised to sum 1. Use a kernel with unit diagonal (e.g. cosine) to avoid this.",
            KernelDiagonalWarning,
            stacklevel=stacklevel,
        )
    lam /= trace
    tol = support_tol(lam.size, float(lam[0]), eps)
    lam[lam <= tol] = 0.0
    lam /= lam.sum()
    lam.setflags(write=False)
    if vecs is not None:
        vecs.setflags(write=False)
    return Spectrum(
        eigenvalues=lam, n=int(n), method=method, kernel=kernel, eigenvectors=vecs, tol=float(tol),
        trace=trace, n_clipped=n_clipped, weighted=p is not None, device=device, execution=execution,
        eps=float(eps),
    )
