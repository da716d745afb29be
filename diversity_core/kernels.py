"""Similarity kernels with unit diagonal (DESIGN §1.2).

Every kernel is a small frozen object with

- ``matrix(X)``: the n x n kernel matrix K (float64, ``K_ii = 1`` where the kernel guarantees it);
- ``feature_map(X)``: an explicit feature matrix Phi with ``K = Phi Phi^T`` when the kernel has
  a finite one (linear, cosine, probability product, sums of those), else ``None``. The
  spectrum uses it for the O(n d^2) dual path;
- ``resolve(X)``: the same kernel with data-dependent defaults fixed (the median-distance
  bandwidth), so a result can record exactly which kernel produced it.

Kernels combine with ``+`` (weighted sum, weights renormalised so the diagonal stays 1) and
``*`` (elementwise product); a number times a kernel sets its weight in a sum:
``0.3 * get_kernel("cosine") + 0.7 * get_kernel("rbf")``. The VS paper's Fig. 1b shows why
combining kernels can raise the Vendi score. For kernels computed on different
representations of the same items, see :func:`combine_kernel_matrices`.

Available names: ``linear, cosine, rbf, laplacian, polynomial, tanimoto,
probability_product, precomputed``.
"""

from __future__ import annotations

import abc
import math
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, Optional, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ._config import check_memory
from ._validation import check_features, check_kernel_matrix, check_option, check_positive, check_weights
from .distances import (  # noqa: F401 - GRAM_BLOCK_ROWS, _row_blocks, _squared_distances: imported from here by others
    GRAM_BLOCK_ROWS,
    _as_float64,
    _dense,
    _gram,
    _row_blocks,
    _row_norms,
    _squared_distances,
    _tanimoto_similarity,
    _unit_rows,
    row_norms,
)
from .exceptions import DiversityInputError, KernelDiagonalWarning

__all__ = [
    "Kernel",
    "LinearKernel",
    "CosineKernel",
    "RBFKernel",
    "LaplacianKernel",
    "PolynomialKernel",
    "TanimotoKernel",
    "ProbabilityProductKernel",
    "PrecomputedKernel",
    "CombinedKernel",
    "KERNELS",
    "get_kernel",
    "kernel_matrix",
    "median_distance",
    "DEFAULT_KERNEL",
    "median_sample_rows",
    "row_keys",
    "row_norms",
    "normalize_diagonal",
    "combine_kernel_matrices",
]

#: The kernel of every function that takes one and is not told which: exact scores, bounds,
#: estimates, plans, curation and comparisons alike, so that an approximate answer obtained
#: without naming a kernel is of the value the exact function gives without naming one. Cosine
#: is the Vendi paper's default for embeddings and has a feature map (the dual path at any n).
DEFAULT_KERNEL = "cosine"

#: Largest number of rows the median heuristic looks at (a seeded subsample beyond it).
MEDIAN_SAMPLE = 1000


#: Odd 64-bit constants of the splitmix64 finaliser (Steele, Lea & Flood 2014), which turns a
#: row's bits into a key that looks uniform.
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 values (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + _MIX[0]
        z = (z ^ (z >> np.uint64(30))) * _MIX[1]
        z = (z ^ (z >> np.uint64(27))) * _MIX[2]
        return z ^ (z >> np.uint64(31))


def row_keys(X, seed: int = 0) -> np.ndarray:
    """A 64-bit key per row that depends on the row's values (and ``seed``) alone, never on its position.

    Each value is taken as float64 (a float32 value is the same number, so float32 data and its
    float64 copy get the same keys; -0.0 counts as 0.0), salted by its column, mixed
    (splitmix64) and summed modulo 2**64 across the columns: integer sums are exact in any
    order, so the key does not depend on BLAS, blocking or where the row sits. O(n d) integer
    operations, in row blocks. Identical rows get identical keys. A non-zero ``seed`` gives
    another, independent ordering of the same rows (a seeded content-fixed random split).
    """
    n, d = X.shape
    salt = _mix64(np.arange(d, dtype=np.uint64))
    keys = np.empty(n, dtype=np.uint64)
    step = max(1, (1 << 18) // max(d, 1))
    for start in range(0, n, step):
        block = X[start:start + step]
        block = block.toarray() if sp.issparse(block) else block
        bits = (np.asarray(block, dtype=np.float64) + 0.0).view(np.uint64)
        with np.errstate(over="ignore"):
            keys[start:start + step] = _mix64(bits ^ salt).sum(axis=1, dtype=np.uint64)
    if seed:
        keys ^= _mix64(np.asarray([seed], dtype=np.uint64))[0]
    return _mix64(keys)


def median_sample_rows(keys, max_samples: int = MEDIAN_SAMPLE, weights=None) -> Optional[np.ndarray]:
    """Sorted rows the median heuristic looks at: ``None`` (all of them) up to ``max_samples`` rows.

    ``keys`` are the rows' :func:`row_keys` (or, for backward compatibility, the number of rows,
    which gives a positional seeded sample). Above ``max_samples`` rows the sample is the
    ``max_samples`` rows of smallest key: a pseudo-random sample fixed by the rows' contents, so
    the bandwidth, and every score that uses it, does not change when the rows are permuted or
    a set is split and merged, and data streamed from disk reads exactly the rows an in-memory
    computation would use. Equal keys (identical rows) are ordered by their ``weights`` (any
    positive rescaling of the weights keeps that order), so even copies of one row that carry
    different weights are chosen independently of their positions.
    """
    if np.ndim(keys) == 0:  # a row count: the positional sample of earlier versions
        n = int(keys)
        if n <= max_samples:
            return None
        return np.sort(np.random.default_rng(0).choice(n, size=max_samples, replace=False))
    keys = np.asarray(keys)
    if keys.shape[0] <= max_samples:
        return None
    if weights is None:
        # equal keys are identical rows, interchangeable
        idx = np.argpartition(keys, max_samples - 1)[:max_samples]
    else:
        idx = np.lexsort((np.asarray(weights, dtype=np.float64), keys))[:max_samples]
    return np.sort(idx)


def median_distance(
    X, *, metric: str = "euclidean", max_samples: int = MEDIAN_SAMPLE, weights=None
) -> float:
    r"""Median of the pairwise distances between distinct rows of ``X``.

    The bandwidth default of the RBF and Laplacian kernels (the "median heuristic"). Above
    ``max_samples`` rows a sample of that size chosen by the rows' contents is used
    (:func:`median_sample_rows`), so the value is deterministic, does not depend on the rows'
    order, and costs O(n d + max_samples^2 d).

    With item ``weights`` p, the pair (i, j) counts with weight :math:`p_i p_j`: the weighted
    median of the distances, so weights that are counts give exactly the median of the data
    with each row repeated that many times (pairs of copies are at distance 0 and, like every
    zero distance, left out).

    Raises
    ------
    DiversityInputError
        If every pair of rows is identical (no positive distance to take the median of).
    """
    X = check_features(X, min_samples=2, allow_sparse=True)
    p = None if weights is None else check_weights(weights, X.shape[0])
    idx = median_sample_rows(row_keys(X) if X.shape[0] > max_samples else X.shape[0], max_samples, p)
    if idx is not None:
        X = X[idx]
        p = None if p is None else p[idx]
    X = X.toarray() if sp.issparse(X) else X
    if metric == "euclidean":
        D = np.sqrt(_squared_distances(X))
    elif metric in ("cityblock", "manhattan", "l1"):
        D = _cityblock(np.ascontiguousarray(X, dtype=np.float64))
    else:  # any other metric scikit-learn knows (imported here: the core imports without it)
        from sklearn.metrics import pairwise_distances

        D = pairwise_distances(np.asarray(X, dtype=np.float64), metric=metric)
    iu = np.triu_indices_from(D, k=1)
    upper = D[iu]
    keep = upper > 0
    if p is not None:
        keep &= (p[iu[0]] > 0) & (p[iu[1]] > 0)
    if not keep.any():
        if np.ptp(X, axis=0).max() > 0:  # distinct rows whose squared distances underflow to 0
            raise DiversityInputError(
                f"the distances between these items underflow double precision (values differ by at most "
                f"{np.ptp(X, axis=0).max():.3g}); rescale the features: distances of c * X are c times those "
                "of X, and the rbf kernel of c * X with bandwidth c * sigma equals that of X with sigma."
            )
        raise DiversityInputError(
            "all items are identical, so the median-distance bandwidth is undefined; "
            "pass an explicit sigma."
        )
    if p is None:
        return float(np.median(upper[keep]))
    return _weighted_median(upper[keep], (p[iu[0]] * p[iu[1]])[keep])


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """Weighted median: the middle of the values each repeated by its weight (mid-point on a tie, as np.median)."""
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[order])
    half = 0.5 * cum[-1]
    i = int(np.searchsorted(cum, half * (1 - 1e-12)))
    if abs(cum[i] - half) <= 1e-12 * cum[-1] and i + 1 < v.size:
        return float(0.5 * (v[i] + v[i + 1]))
    return float(v[i])


def normalize_diagonal(K: np.ndarray, *, rtol: float = 1e-10, warn: bool = True) -> np.ndarray:
    """Rescale K to unit diagonal, ``K_ij / sqrt(K_ii K_jj)``, warning when it was not 1.

    The rescaled matrix is the cosine-normalised kernel; it stays PSD when K is.
    """
    d = np.diagonal(K).astype(np.float64)
    off = np.abs(d - 1.0)
    if np.all(off <= rtol):
        return K
    if warn:

        warnings.warn(
            f"the kernel's diagonal is not 1 (k(x, x) ranges over [{d.min():.6g}, {d.max():.6g}]); "
            "K was rescaled to K_ij / sqrt(K_ii K_jj).",
            KernelDiagonalWarning,
            stacklevel=3,
        )
    s = 1.0 / np.sqrt(d)
    return K * s[:, None] * s[None, :]


def _cityblock(X: np.ndarray) -> np.ndarray:
    """L1 distances of the rows of float64 X: blocks on and above the diagonal, mirrored (exactly symmetric).

    L1 distances sum ``|x_k - y_k|`` term by term, so they have no cancellation to correct.
    """
    D = np.empty((X.shape[0], X.shape[0]), dtype=np.float64)
    blocks = _row_blocks(X.shape[0])
    for i, rows in enumerate(blocks):
        for cols in blocks[i:]:
            D[rows, cols] = cdist(X[rows], X[cols], metric="cityblock")
            if cols != rows:
                D[cols, rows] = D[rows, cols].T
    return D


@dataclass(frozen=True)
class Kernel(abc.ABC):
    """Base class: a positive semidefinite similarity with unit diagonal."""

    name = "kernel"
    weight: float = field(default=1.0, kw_only=True, repr=False)

    # -- public API: the kernel protocol ---------------------------------------------------
    def validate(self, X):
        """X checked for this kernel (numeric, finite, 2-D; sparse kept where supported).

        Everything else in the protocol accepts ``check_input=False`` for arrays that already
        went through this method.
        """
        return self._check(X)

    def gram(self, X, Y=None, *, check_input: bool = True) -> np.ndarray:
        """Kernel matrix ``K_ij = k(x_i, y_j)`` (float64); ``Y=None`` gives the n x n matrix of X.

        Data-dependent defaults (the median bandwidth) are fixed on X; call :meth:`resolve`
        first to fix them once for several calls (blocked products, Nystrom landmarks).
        float32 rows are exact float64 numbers and give their float64 copy's matrix (products
        in float64, block by block). Cost O(n m d).
        """
        if check_input:
            X = self._check(X)
            Y = None if Y is None else self._check(Y)
        if Y is not None and Y.shape[1] != X.shape[1]:
            raise DiversityInputError(
                f"X and Y must have the same number of features; got {X.shape[1]} and {Y.shape[1]}."
            )
        n = X.shape[0]
        m = n if Y is None else Y.shape[0]
        check_memory(
            8.0 * n * m,
            what=f"the {n} x {m} {self.name} kernel matrix",
            hint="Compute it in blocks of rows (kernel.gram(X[rows], X)); for Vendi scores use a kernel "
            "with a feature map (cosine, linear), which works at any n, or vendi_2_exact for VS_2.",
        )
        kern = self.resolve(X)
        if Y is None:
            return kern._matrix(X)
        return kern._cross(X, Y)

    def features(self, X, *, check_input: bool = True):
        """Explicit features Phi with ``K = Phi Phi^T``, or None when the kernel has no finite one."""
        if not self.has_feature_map:
            return None
        return self._feature_map(self._check(X) if check_input else X)

    def matrix(self, X) -> np.ndarray:
        """Kernel matrix of the rows of X (n x n, float64); same as ``gram(X)``."""
        return self.gram(X)

    def feature_map(self, X) -> Optional[np.ndarray]:
        """Explicit features Phi with K = Phi Phi^T, or None; same as ``features(X)``."""
        return self.features(X)

    def _feature_map(self, X):
        """Feature map of already validated X (kernels with ``has_feature_map`` override it)."""
        return None

    def resolve(self, X, weights=None) -> Kernel:
        """The kernel with data-dependent defaults (bandwidths) fixed on X (weighted by item ``weights``)."""
        return self

    @property
    def has_feature_map(self) -> bool:
        """Whether :meth:`feature_map` returns features (enables the dual path)."""
        return False

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse CSR input is handled without densifying."""
        return False

    def get_params(self) -> dict[str, Any]:
        """The kernel's parameters (weight excluded)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "weight"}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description: ``{"name": ..., **params}``."""
        return {"name": self.name, **self.get_params()}

    def describe(self) -> str:
        """Short human-readable description, e.g. ``rbf(sigma=1.2)``."""
        params = ", ".join(
            f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in self.get_params().items()
            if v is not None
        )
        return f"{self.name}({params})"

    # -- combination -----------------------------------------------------------------------
    def __add__(self, other: Kernel) -> CombinedKernel:
        if not isinstance(other, Kernel):
            return NotImplemented
        return CombinedKernel(tuple(_terms(self, "sum")) + tuple(_terms(other, "sum")), op="sum")

    def __mul__(self, other):
        if isinstance(other, Kernel):
            return CombinedKernel(
                tuple(_terms(self, "product")) + tuple(_terms(other, "product")), op="product"
            )
        if isinstance(other, (int, float, np.floating, np.integer)):
            return replace(self, weight=check_positive(other, "kernel weight"))
        return NotImplemented

    __rmul__ = __mul__

    # -- private ---------------------------------------------------------------------------
    def _check(self, X):
        """Validate X for this kernel.

        Sparse rows (n-gram features) are densified, within the memory budget, for a kernel that
        needs dense ones (issue 26, item 11: rbf on n-grams was refused).
        """
        X = check_features(X, allow_sparse=True)
        if sp.issparse(X) and not self.accepts_sparse:
            n, d = X.shape
            check_memory(8.0 * n * d, what=f"the {n} x {d} sparse features densified for the {self.name} kernel",
                         hint="Use a kernel that reads sparse features (cosine, linear, polynomial, tanimoto), "
                         "or dense embeddings (e.g. the 'minilm' featurizer).")
            X = X.toarray()
        return X

    @abc.abstractmethod
    def _matrix(self, X) -> np.ndarray:
        """Compute K on validated X with resolved parameters."""

    def _cross(self, X, Y) -> np.ndarray:
        """Compute k(x_i, y_j) on validated X, Y with resolved parameters."""
        raise DiversityInputError(f"the {self.name} kernel has no cross-kernel k(x, y) between two sets.")


def _terms(kernel: Kernel, op: str) -> Sequence[Kernel]:
    """Flatten nested combinations of the same operation."""
    if isinstance(kernel, CombinedKernel) and kernel.op == op and kernel.weight == 1.0:
        return kernel.kernels
    return (kernel,)


@dataclass(frozen=True)
class LinearKernel(Kernel):
    r"""Linear kernel :math:`k(x, y) = \langle x, y \rangle`.

    Its diagonal is ``||x||^2``; the Vendi score renormalises the spectrum and warns when the
    rows are not unit-norm (use ``cosine`` for the normalised version).
    """

    name = "linear"

    @property
    def has_feature_map(self) -> bool:
        """Whether the kernel has an explicit feature map (see :class:`Kernel`)."""
        return True

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse input is handled without densifying (see :class:`Kernel`)."""
        return True

    def _feature_map(self, X):
        return X

    def _matrix(self, X):
        return _gram(X)

    def _cross(self, X, Y):
        return _gram(X, Y)


@dataclass(frozen=True)
class CosineKernel(Kernel):
    r"""Cosine similarity :math:`k(x, y) = \langle x, y \rangle / (\|x\| \|y\|)`.

    The VS paper's default for embeddings; feature map ``x / ||x||`` (dimension d).
    """

    name = "cosine"

    @property
    def has_feature_map(self) -> bool:
        """Whether the kernel has an explicit feature map (see :class:`Kernel`)."""
        return True

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse input is handled without densifying (see :class:`Kernel`)."""
        return True

    def _feature_map(self, X):
        # x / ||x|| with norms that neither overflow nor underflow: rows of 1e160 or 1e-300 keep
        # their directions, and only rows that are exactly zero are refused
        U, norms = _unit_rows(X)
        if np.any(norms == 0):
            rows = np.flatnonzero(norms == 0)
            raise DiversityInputError(
                f"cosine similarity is undefined for all-zero rows (rows {', '.join(map(str, rows[:5]))}"
                f"{'...' if rows.size > 5 else ''}); drop them or use the rbf kernel."
            )
        return U

    def _matrix(self, X):
        # float32 rows are exact float64 numbers: normalised in float64 (a float32 x / ||x|| rounds
        # every entry), the same matrix as their float64 copy's (issue 38)
        K = _gram(self._feature_map(_as_float64(X)))
        np.fill_diagonal(K, 1.0)
        return K

    def _cross(self, X, Y):
        return _gram(self._feature_map(_as_float64(X)), self._feature_map(_as_float64(Y)))


@dataclass(frozen=True)
class RBFKernel(Kernel):
    r"""Gaussian kernel :math:`k(x, y) = \exp(-\|x - y\|^2 / (2 \sigma^2))`.

    ``sigma=None`` takes the median pairwise Euclidean distance (:func:`median_distance`).
    """

    name = "rbf"
    sigma: Optional[float] = None

    def resolve(self, X, weights=None):
        """The kernel with data-dependent defaults fixed on X (see :meth:`Kernel.resolve`)."""
        if self.sigma is not None:
            return self
        return replace(self, sigma=median_distance(_dense(check_features(X, allow_sparse=True)), weights=weights))

    def _matrix(self, X):
        K = _squared_distances(X, scale=self._scale())
        np.exp(K, out=K)
        np.fill_diagonal(K, 1.0)
        return K

    def _cross(self, X, Y):
        E = _squared_distances(X, Y, scale=self._scale())
        return np.exp(E, out=E)

    def _scale(self) -> float:
        """-1 / (2 sigma^2): the factor of the squared distance in the exponent."""
        sigma = check_positive(self.sigma, "sigma")
        two_s2 = 2.0 * sigma * sigma
        # below sigma ~ 1e-154, 2 sigma^2 underflows to 0 (or its reciprocal overflows): refuse
        # with the reason rather than a ZeroDivisionError or an infinite exponent
        if not (two_s2 > 0.0 and math.isfinite(1.0 / two_s2)):
            raise DiversityInputError(
                f"sigma={sigma:.3g} is too small for the rbf kernel: 1 / (2 sigma^2) overflows double precision, "
                "and every pair of distinct items would have similarity 0 (K = I). Pass a sigma on the scale of "
                "the distances between items, or sigma=None for the median distance."
            )
        return -1.0 / two_s2


@dataclass(frozen=True)
class LaplacianKernel(Kernel):
    r"""Laplacian kernel :math:`k(x, y) = \exp(-\|x - y\|_1 / \sigma)`.

    ``sigma=None`` takes the median pairwise L1 distance.
    """

    name = "laplacian"
    sigma: Optional[float] = None

    def resolve(self, X, weights=None):
        """The kernel with data-dependent defaults fixed on X (see :meth:`Kernel.resolve`)."""
        if self.sigma is not None:
            return self
        X = _dense(check_features(X, allow_sparse=True))
        return replace(self, sigma=median_distance(X, metric="cityblock", weights=weights))

    def _matrix(self, X):
        return self._kernel(_cityblock(np.ascontiguousarray(_dense(X), dtype=np.float64)))

    def _cross(self, X, Y):
        X = np.ascontiguousarray(_dense(X), dtype=np.float64)
        Y = np.ascontiguousarray(_dense(Y), dtype=np.float64)
        D = np.empty((X.shape[0], Y.shape[0]), dtype=np.float64)
        for rows in _row_blocks(X.shape[0]):
            cdist(X[rows], Y, metric="cityblock", out=D[rows])
        return self._kernel(D)

    def _kernel(self, D: np.ndarray) -> np.ndarray:
        """exp(-D / sigma), in place on the L1 distances."""
        sigma = check_positive(self.sigma, "sigma")
        if not math.isfinite(1.0 / sigma):  # a subnormal sigma: 0 * inf would put NaN on the diagonal
            raise DiversityInputError(
                f"sigma={sigma:.3g} is too small for the laplacian kernel: 1 / sigma overflows double precision. "
                "Pass a sigma on the scale of the L1 distances between items, or sigma=None for their median."
            )
        D *= -1.0 / sigma
        np.exp(D, out=D)
        return D


@dataclass(frozen=True)
class PolynomialKernel(Kernel):
    r"""Normalised polynomial kernel.

    :math:`k(x, y) = p(x, y) / \sqrt{p(x, x) p(y, y)}` with
    :math:`p(x, y) = (\gamma \langle x, y \rangle + c_0)^{\mathrm{degree}}`; ``gamma=None``
    means ``1 / d``. The normalisation gives the unit diagonal and keeps K PSD.
    """

    name = "polynomial"
    degree: int = 3
    gamma: Optional[float] = None
    coef0: float = 1.0

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse input is handled without densifying (see :class:`Kernel`)."""
        return True

    def resolve(self, X, weights=None):
        """The kernel with data-dependent defaults fixed on X (see :meth:`Kernel.resolve`)."""
        if self.gamma is not None:
            return self
        return replace(self, gamma=1.0 / X.shape[1])

    def _raw(self, A, B=None) -> np.ndarray:
        """Unnormalised p(a, b) = (gamma <a, b> + coef0)^degree."""
        if int(self.degree) != self.degree or self.degree < 1:
            raise DiversityInputError(f"degree must be a positive integer; got {self.degree!r}.")
        if self.coef0 < 0:
            raise DiversityInputError(f"coef0 must be >= 0 for a PSD kernel; got {self.coef0!r}.")
        P = _gram(A, B)
        P *= check_positive(self.gamma, "gamma")
        P += self.coef0
        P **= int(self.degree)
        return P

    def _self_values(self, A) -> np.ndarray:
        """p(a, a) for each row, refusing zeros (the normalisation divides by them)."""
        sq = _row_norms(A, squared=True)
        d = (check_positive(self.gamma, "gamma") * sq + self.coef0) ** int(self.degree)
        if np.any(d <= 0):
            raise DiversityInputError(
                "the polynomial kernel is zero on some all-zero rows; use coef0 > 0 or drop those rows."
            )
        return d

    def _matrix(self, X):
        P = self._raw(X)
        d = np.diagonal(P).copy()
        if np.any(d <= 0):
            raise DiversityInputError(
                "the polynomial kernel is zero on some all-zero rows; use coef0 > 0 or drop those rows."
            )
        s = 1.0 / np.sqrt(d)
        P *= s[:, None]
        P *= s[None, :]
        np.fill_diagonal(P, 1.0)
        return P

    def _cross(self, X, Y):
        P = self._raw(X, Y)
        P /= np.sqrt(self._self_values(X))[:, None]
        P /= np.sqrt(self._self_values(Y))[None, :]
        return P


@dataclass(frozen=True)
class TanimotoKernel(Kernel):
    r"""Tanimoto (Jaccard) similarity of non-negative vectors.

    :math:`k(a, b) = \langle a, b \rangle / (\|a\|^2 + \|b\|^2 - \langle a, b \rangle)`; on
    binary fingerprints this is |a & b| / |a | b|. Two all-zero rows count as identical
    (similarity 1). The Tanimoto kernel is PSD on binary vectors.
    """

    name = "tanimoto"

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse input is handled without densifying (see :class:`Kernel`)."""
        return True

    def _check(self, X):
        X = super()._check(X)
        data = X.data if sp.issparse(X) else X
        if data.size and np.min(data) < 0:
            raise DiversityInputError(
                "the tanimoto kernel needs non-negative features (fingerprint bits or counts); "
                "got negative values."
            )
        return X

    def _matrix(self, X):
        return _tanimoto_similarity(X)

    def _cross(self, X, Y):
        return _tanimoto_similarity(X, Y)


@dataclass(frozen=True)
class ProbabilityProductKernel(Kernel):
    r"""Probability product (Bhattacharyya) kernel of class-probability vectors.

    :math:`k(x, x') = \sum_y \sqrt{p(y|x) p(y|x')}`; each row of X is a probability
    vector. Feature map :math:`\sqrt{p(\cdot|x)}`.
    """

    name = "probability_product"

    @property
    def has_feature_map(self) -> bool:
        """Whether the kernel has an explicit feature map (see :class:`Kernel`)."""
        return True

    def _check(self, X):
        X = super()._check(X)
        if np.min(X) < 0:
            raise DiversityInputError(
                "the probability_product kernel needs probability vectors; got negative entries."
            )
        sums = X.sum(axis=1, dtype=np.float64)
        bad = np.abs(sums - 1.0) > 1e-6
        if np.any(bad):
            rows = np.flatnonzero(bad)
            raise DiversityInputError(
                "each row must be a probability vector summing to 1 for the probability_product kernel; "
                f"rows {', '.join(map(str, rows[:5]))} sum to {', '.join(f'{s:.4g}' for s in sums[rows[:5]])}. "
                "Apply softmax or divide each row by its sum."
            )
        return X

    def _feature_map(self, X):
        return np.sqrt(X)

    def _matrix(self, X):
        K = _gram(np.sqrt(_as_float64(X)))  # float64 square roots of float32 values, as for their float64 copy
        np.fill_diagonal(K, 1.0)
        return K

    def _cross(self, X, Y):
        return _gram(np.sqrt(_as_float64(X)), np.sqrt(_as_float64(Y)))


@dataclass(frozen=True)
class PrecomputedKernel(Kernel):
    """A kernel matrix supplied by the user: X is K itself (n x n).

    Checked for symmetry and finiteness; a non-unit diagonal is rescaled with a
    :class:`~diversity_core.exceptions.KernelDiagonalWarning`; PSD is checked by the spectrum.
    """

    name = "precomputed"

    def _check(self, X):
        return normalize_diagonal(check_kernel_matrix(X))

    def _matrix(self, X):
        return np.array(X, dtype=np.float64, copy=True)


@dataclass(frozen=True)
class CombinedKernel(Kernel):
    r"""Weighted sum or elementwise product of kernels on the same features.

    Sum: :math:`k = \sum_i w_i k_i / \sum_i w_i` (weights renormalised so the diagonal stays 1).
    Product: :math:`k = \prod_i k_i` (Schur product theorem: PSD, unit diagonal).
    A sum of kernels that all have feature maps has the feature map
    :math:`[\sqrt{w_1/W}\,\Phi_1, \dots]`.
    """

    name = "combined"
    kernels: tuple = ()
    op: str = "sum"

    def __post_init__(self):
        check_option(self.op, ("sum", "product"), "kernel combination")
        if len(self.kernels) < 1 or not all(isinstance(k, Kernel) for k in self.kernels):
            raise DiversityInputError("a combined kernel needs one or more Kernel objects.")

    @property
    def has_feature_map(self) -> bool:
        """Whether the kernel has an explicit feature map (see :class:`Kernel`)."""
        return self.op == "sum" and all(k.has_feature_map for k in self.kernels)

    @property
    def accepts_sparse(self) -> bool:
        """Whether sparse input is handled without densifying (see :class:`Kernel`)."""
        return all(k.accepts_sparse for k in self.kernels)

    def _weights(self) -> np.ndarray:
        """Term weights normalised to sum 1."""
        w = np.array([k.weight for k in self.kernels], dtype=np.float64)
        return w / w.sum()

    def resolve(self, X, weights=None):
        """The kernel with data-dependent defaults fixed on X (see :meth:`Kernel.resolve`)."""
        return replace(self, kernels=tuple(k.resolve(X, weights) for k in self.kernels))

    def _feature_map(self, X):
        if not self.has_feature_map:
            return None
        parts = [k._feature_map(k._check(X)) for k in self.kernels]
        scaled = [p * math.sqrt(w) for p, w in zip(parts, self._weights())]
        if any(sp.issparse(p) for p in scaled):
            return sp.hstack([sp.csr_matrix(p) for p in scaled], format="csr")
        return np.hstack(scaled)

    def _matrix(self, X):
        Ks = [k._matrix(k._check(X)) for k in self.kernels]
        return combine_kernel_matrices(Ks, weights=self._weights(), op=self.op)

    def _cross(self, X, Y):
        Ks = [k._cross(k._check(X), k._check(Y)) for k in self.kernels]
        return combine_kernel_matrices(Ks, weights=self._weights(), op=self.op)

    def get_params(self):
        """The combination's operation and its terms with their normalised weights."""
        return {
            "op": self.op,
            "kernels": [{**k.to_dict(), "weight": float(w)} for k, w in zip(self.kernels, self._weights())],
        }

    def describe(self) -> str:
        """Short description, e.g. ``0.3*cosine() + 0.7*rbf(sigma=1.2)``."""
        if self.op == "sum":
            return " + ".join(f"{w:.3g}*{k.describe()}" for k, w in zip(self.kernels, self._weights()))
        return " * ".join(k.describe() for k in self.kernels)


def combine_kernel_matrices(
    Ks: Sequence[np.ndarray], *, weights: Optional[Sequence[float]] = None, op: str = "sum"
) -> np.ndarray:
    r"""Combine kernel matrices of the same items, e.g. computed on different representations.

    ``op="sum"``: :math:`K = \sum_i w_i K_i / \sum_i w_i`; ``op="product"``: elementwise product
    (weights ignored). Both preserve PSD and the unit diagonal.
    """
    check_option(op, ("sum", "product"), "kernel combination")
    if len(Ks) == 0:
        raise DiversityInputError("combine_kernel_matrices needs at least one matrix.")
    shape = np.shape(Ks[0])
    if any(np.shape(K) != shape for K in Ks):
        raise DiversityInputError(
            f"kernel matrices must all have the same shape; got {[np.shape(K) for K in Ks]}."
        )
    if op == "product":
        out = np.array(Ks[0], dtype=np.float64, copy=True)
        for K in Ks[1:]:
            out *= K
        return out
    w = np.ones(len(Ks)) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (len(Ks),) or np.any(w < 0) or w.sum() <= 0:
        raise DiversityInputError("weights must be one non-negative number per matrix, not all zero.")
    w = w / w.sum()
    out = np.zeros(shape, dtype=np.float64)
    for wi, K in zip(w, Ks):
        out += wi * np.asarray(K, dtype=np.float64)
    return out


#: Registry of kernel names to classes.
KERNELS: dict[str, type[Kernel]] = {
    cls.name: cls
    for cls in (
        LinearKernel,
        CosineKernel,
        RBFKernel,
        LaplacianKernel,
        PolynomialKernel,
        TanimotoKernel,
        ProbabilityProductKernel,
        PrecomputedKernel,
    )
}


def get_kernel(kernel=DEFAULT_KERNEL, **params) -> Kernel:
    """Return a :class:`Kernel` from a name and its parameters (or pass a Kernel through).

    Parameters
    ----------
    kernel : str or Kernel
        One of ``linear, cosine, rbf, laplacian, polynomial, tanimoto, probability_product,
        precomputed``, or a Kernel object (then ``params`` must be empty).
    **params
        The kernel's parameters, e.g. ``sigma`` for rbf/laplacian; ``None`` values are ignored.

    Examples
    --------
    >>> get_kernel("rbf", sigma=0.5).describe()
    'rbf(sigma=0.5)'
    """
    params = {k: v for k, v in params.items() if v is not None}
    if isinstance(kernel, Kernel):
        if params:
            raise DiversityInputError(
                f"kernel parameters {sorted(params)} given with a Kernel object; set them on the object."
            )
        return kernel
    if not isinstance(kernel, str):
        raise DiversityInputError(f"kernel must be a name or a Kernel; got {type(kernel).__name__}.")
    cls = KERNELS.get(kernel)
    if cls is None:
        check_option(kernel, KERNELS, "kernel")
    valid = {f.name for f in fields(cls) if f.name != "weight"}
    unknown = set(params) - valid
    if unknown:
        raise DiversityInputError(
            f"unknown parameter(s) {sorted(unknown)} for the {kernel} kernel; "
            f"valid: {sorted(valid) if valid else 'none'}."
        )
    return cls(**params)


def kernel_matrix(X, *, kernel=DEFAULT_KERNEL, **params) -> np.ndarray:
    """Kernel matrix K (n x n, float64) of the rows of X.

    Cost: O(n^2 d) for the pairwise products plus O(n^2) elementwise work.
    """
    return get_kernel(kernel, **params).matrix(X)
