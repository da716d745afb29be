r"""Rows whose outer products give the pooled kernel: the three routes to :math:`C_X - \eta C_Y`.

Every quantity of the differential spectrum is a function of the two kernel covariance operators

.. math:: C_X = \frac1n \sum_{i=1}^n \phi(x_i)\phi(x_i)^\top, \qquad
          C_Y = \frac1m \sum_{j=1}^m \phi(y_j)\phi(y_j)^\top .

A *factor* is a map :math:`f` of the pooled items into :math:`\mathbb R^p` with
:math:`f(a)^\top f(b) = k(a, b)` (exactly, or in expectation for a sketch); :math:`C_X` and
:math:`C_Y` are then the p x p matrices :math:`F_X^\top F_X / n` and :math:`F_Y^\top F_Y / m`, and an
item's loading on a unit eigenvector v is :math:`f(x)^\top v = \langle \phi(x), v\rangle`.

``"features"``
    The kernel's own feature map (linear, cosine, probability product, sums of them): exact, p = d,
    the moments streamed in float64 chunks (:func:`~diversity_core.streaming._dual_moments`), O((n + m) d^2).
``"dense"``
    Any kernel: the pooled (n + m) x (n + m) kernel matrix K is factored as :math:`K = B B^\top`
    with :math:`B = U_+ S_+^{1/2}` (its eigenvectors above the support threshold): exact, p = rank K,
    O((n + m)^3) time and 5 (n + m)^2 doubles of memory, checked against the budget first.
``"rff"``
    Shift-invariant kernels (rbf, laplacian): random Fourier features of
    :mod:`diversity_core.approx.sketches` (FINC; Zhang, Jalali, Li & Farnia 2024), p = 2D,
    an estimate whose random spread is measured by splitting the D frequencies into replicates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import scipy.linalg as sla

from .._config import check_memory, fits_memory
from ..approx.sketches import _fourier
from ..distances import _as_float64
from ..entropy import support_tol
from ..exceptions import DiversityInputError
from ..kernels import Kernel, LaplacianKernel, RBFKernel
from ..streaming import _array_chunks, _dual_moments

__all__ = ["ROUTES", "DENSE_LIMIT", "Factor", "choose_route", "make_factor"]

#: The routes ``method=`` names; ``"auto"`` picks one by :func:`choose_route`'s rule.
ROUTES = ("auto", "dense", "features", "rff")

#: Pooled items up to which ``"auto"`` takes the exact dense route for a kernel without a feature map
#: (the dense eigenproblem costs (n + m)^3: about a minute at 6,000 on one busy core).
DENSE_LIMIT = 6000

#: Random Fourier frequencies of the rff route by default (2D = 2048 features), and its replicates.
DEFAULT_FREQUENCIES = 1024
DEFAULT_REPLICATES = 4


def _dense_bytes(N: int) -> float:
    """Peak bytes of the dense route: K, the eigensolver's copy, eigenvectors and workspace."""
    return 8.0 * N * N * 5


def feature_dimension(kern: Kernel, X: np.ndarray) -> Optional[int]:
    """The dimension of the kernel's feature map (from two rows), or None without one."""
    if not kern.has_feature_map:
        return None
    return int(kern.features(_as_float64(X[:2]), check_input=False).shape[1])


def choose_route(method: str, kern: Kernel, X: np.ndarray, Y: np.ndarray) -> str:
    """The route ``method`` resolves to on these sets, checked against the kernel and the memory budget.

    ``"auto"``: the feature map when the kernel has one of dimension p < n + m; else the dense
    route when the pooled items are at most :data:`DENSE_LIMIT` and its matrices fit the budget;
    else random Fourier features for the rbf and laplacian kernels. Anything else is refused with
    the options that would work.
    """
    N = X.shape[0] + Y.shape[0]
    p = feature_dimension(kern, X)
    shift_invariant = isinstance(kern, (RBFKernel, LaplacianKernel))
    if method == "auto":
        if p is not None and p < N:
            return "features"
        if N <= DENSE_LIMIT and fits_memory(_dense_bytes(N)):
            return "dense"
        if shift_invariant:
            return "rff"
        if p is not None:
            return "features"
        raise DiversityInputError(
            f"the {kern.name} kernel has no feature map and is not shift-invariant, and the {N} pooled items are "
            f"above the dense route's limit of {DENSE_LIMIT}; use a kernel with a feature map (cosine, linear), the "
            "rbf kernel (random Fourier features), or method='dense' on fewer items."
        )
    if method == "features" and p is None:
        raise DiversityInputError(
            f"method='features' needs a kernel with an explicit feature map (linear, cosine, probability_product); "
            f"the {kern.name} kernel has none. Use method='dense' or, for rbf and laplacian, method='rff'."
        )
    if method == "rff" and not shift_invariant:
        raise DiversityInputError(
            f"method='rff' needs a shift-invariant kernel (rbf or laplacian); got {kern.name}. "
            "Use method='features' for kernels with a feature map, or method='dense'."
        )
    return method


@dataclass(frozen=True, eq=False)
class Factor:
    """Rows ``f(item)`` with ``f(a) . f(b) = k(a, b)`` for the two sets (see the module docstring).

    Attributes
    ----------
    route : {"dense", "features", "rff"}
    sets : tuple of two ndarrays
        The validated sets (candidate first).
    kernel : Kernel or None
        The kernel whose ``features`` give the rows (the resolved kernel, or the Fourier sketch);
        None on the dense route, whose rows are ``B``.
    B : ndarray of shape (n + m, r) or None
        The dense route's factor of the pooled kernel matrix.
    dim : int
        p, the rows' dimension.
    exact : bool
        False for the Fourier sketch.
    settings : dict
        What the route used (frequencies, replicates, the rank kept, ...).
    """

    route: str
    sets: tuple
    kernel: Optional[Kernel]
    B: Optional[np.ndarray]
    dim: int
    exact: bool
    settings: dict = field(default_factory=dict)

    def sizes(self) -> tuple:
        return self.sets[0].shape[0], self.sets[1].shape[0]

    def moments(self, which: int) -> np.ndarray:
        """:math:`F_S^\\top F_S / |S|` of set ``which`` (0: candidate, 1: reference), float64, p x p."""
        if self.B is not None:
            Fs = self._dense_rows(which)
            return (Fs.T @ Fs) / Fs.shape[0]
        S = self.sets[which]
        return _dual_moments(_array_chunks(S), self.kernel, None, n=S.shape[0], d=S.shape[1], validate=False).gram

    def r_factor(self, which: int) -> np.ndarray:
        """An upper-triangular R with ``R^T R`` = :meth:`moments` (QR of the rows over sqrt(|S|), chunk by chunk).

        Unlike a square root of the moments, R keeps the rows' own accuracy (the moments square their
        condition number): what the nuclear norm of order-1/2 RRKE needs.
        """
        if self.B is not None:
            Fs = self._dense_rows(which)
            R = sla.qr(Fs, mode="r", check_finite=False)[0]
            return R / np.sqrt(Fs.shape[0])
        S = self.sets[which]
        R = None
        for _, block in _array_chunks(S):
            F = self.kernel.features(_as_float64(block), check_input=False)
            F = np.asarray(F.toarray() if hasattr(F, "toarray") else F, dtype=np.float64)
            R = sla.qr(F if R is None else np.vstack([R, F]), mode="r", check_finite=False)[0]
            R = R[: min(R.shape)]
        return R / np.sqrt(S.shape[0])

    def project(self, which: int, V: np.ndarray) -> np.ndarray:
        """Loadings ``f(s)^T V`` of every item of set ``which`` on the columns of V (chunked)."""
        if self.B is not None:
            return self._dense_rows(which) @ V
        S = self.sets[which]
        out = np.empty((S.shape[0], V.shape[1]), dtype=np.float64)
        for start, block in _array_chunks(S):
            out[start:start + block.shape[0]] = self.kernel.features(_as_float64(block), check_input=False) @ V
        return out

    def rows(self, which: int, idx: Optional[np.ndarray] = None) -> np.ndarray:
        """The rows of set ``which`` (those in ``idx``), dense float64."""
        if self.B is not None:
            F = self._dense_rows(which)
            return F if idx is None else F[idx]
        S = self.sets[which] if idx is None else self.sets[which][idx]
        F = self.kernel.features(_as_float64(S), check_input=False)
        return np.ascontiguousarray(F.toarray() if hasattr(F, "toarray") else F, dtype=np.float64)

    def _dense_rows(self, which: int) -> np.ndarray:
        n = self.sets[0].shape[0]
        return self.B[:n] if which == 0 else self.B[n:]


def make_factor(route: str, kern: Kernel, X: np.ndarray, Y: np.ndarray, *, n_frequencies: int = DEFAULT_FREQUENCIES,
                replicates: int = DEFAULT_REPLICATES, rng: Optional[np.random.Generator] = None) -> Factor:
    """The :class:`Factor` of a resolved kernel on validated sets along ``route`` (not ``"auto"``)."""
    if route == "features":
        p = feature_dimension(kern, X)
        check_memory(8.0 * p * p * 4, what=f"the {p} x {p} covariance matrices of the feature route",
                     hint="Use method='dense' for features wider than the number of items.")
        return Factor("features", (X, Y), kern, None, p, True, {})
    if route == "rff":
        D = int(n_frequencies)
        check_memory(8.0 * (2 * D) ** 2 * 4, what=f"the {2 * D} x {2 * D} covariance matrices of {D} Fourier frequencies",
                     hint="Use fewer frequencies (n_frequencies).")
        gen = rng if rng is not None else np.random.default_rng(0)
        sketch = _fourier(kern, X.shape[1], D, gen)
        return Factor("rff", (X, Y), sketch, None, 2 * D, False,
                      {"n_frequencies": D, "n_features": 2 * D, "replicates": int(replicates)})
    # dense: K = B B^T over the pooled items
    N = X.shape[0] + Y.shape[0]
    check_memory(_dense_bytes(N), what=f"the dense route on {N} pooled items (the {N} x {N} kernel matrix and its "
                 "eigenvectors)", hint="Use a kernel with a feature map (cosine, linear) or, for rbf and laplacian, "
                 "method='rff', which work at any n.")
    P = np.vstack([_as_float64(X), _as_float64(Y)])
    K = kern.gram(P, check_input=False)
    K = 0.5 * (K + K.T)
    w, U = sla.eigh(K, overwrite_a=True, check_finite=False)
    top = float(w[-1]) if w.size else 0.0
    keep = w > support_tol(N, max(top, 0.0))
    B = U[:, keep] * np.sqrt(w[keep])
    return Factor("dense", (X, Y), None, np.ascontiguousarray(B), int(B.shape[1]), True,
                  {"rank": int(B.shape[1]), "n_clipped": int(np.count_nonzero(w < -support_tol(N, max(top, 0.0))))})
