"""Score adapters of :func:`~diversity_core.compare.compare`: what one replicate computes on one subset.

- :class:`SpectralScores`: VS_q of the table orders, IntDiv and the q-profile, from one
  spectrum per subset (dual path O(m d^2) with a feature map and d < N, else the m x m kernel
  block O(m^3));
- :class:`MagnitudeScores`: MagArea on [0, t_cut], the area on [0, t_ref] (MagDiff) and Mag(t)
  on the grid; the magnitude maths it needs sits in one marked section below;
- :func:`rnd_of_subset` / :func:`rnd_interval`: the RND score of a group's first n-subset and
  its Student-t interval over runs.

Each adapter is a statistic of :func:`._subsample.subsample` (called with sorted item indices,
returns a vector of scores) and states the range of each score (``bounds``) for clipping the
intervals. Replicates call the private, unchecked computes of the core (the data were validated
once by :func:`compare`).
"""

from __future__ import annotations

import math
import warnings
from typing import Dict, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from .._stats import t_interval
from ..baselines import _intdiv
from ..distances import _as_float64
from ..exceptions import KernelDiagonalWarning
from ..kernels import Kernel, get_kernel
from ..magnitude._metric import _merge_duplicates
from ..magnitude._scales import _area, _convergence_scale_of, _magnitude_values
from ..spectrum import Spectrum, _kernel_spectrum

__all__ = [
    "PROFILE_QS",
    "SMALL_PROBLEM",
    "DENSE_MAX",
    "MAX_EIGENVALUES",
    "spectral_cost",
    "spread_replicates",
    "SPREAD_FACTOR",
    "SpectralScores",
    "MagnitudeScores",
    "magnitude_grid",
    "rnd_of_subset",
    "rnd_interval",
    "dense_rows",
]

#: Orders of the q-profile drawn for every group (log-spaced 0.1 .. 10, 1 and inf included).
PROFILE_QS = tuple(float(q) for q in np.unique(np.concatenate([np.geomspace(0.1, 10.0, 21), [1.0, np.inf]])))

#: Matrix order up to which replicate loops run with one BLAS thread.
SMALL_PROBLEM = 400

#: Most replicates per fit size of an extrapolated spread, as a multiple of ``n_resamples``.
SPREAD_FACTOR = 4

#: Largest group whose kernel matrix is held whole (kernels without a usable feature map); above it
#: each subset's block is computed on demand and the sample-size curve stops at this size.
DENSE_MAX = 4000

#: Leading eigenvalues kept per group for the spectra figure.
MAX_EIGENVALUES = 200

_LINEAR = get_kernel("linear")
_PRECOMPUTED = get_kernel("precomputed")


def dense_rows(X, idx: np.ndarray) -> np.ndarray:
    """Dense float64 rows ``idx`` of X (magnitude and RND need dense features)."""
    R = X[idx]
    return np.asarray(R.toarray() if sp.issparse(R) else R, dtype=np.float64)


def magnitude_rows(X, idx: np.ndarray, metric: str):
    """Rows ``idx`` of X for magnitude: float64 CSR for sparse X under the Euclidean metric, else dense.

    Densifying 150 text rows of 2^18 n-gram columns made a 300 MB array per subset, and the
    duplicate merge and distances then cost O(n d) each (most of a text comparison's time);
    the sparse Euclidean distances are exact and cost O(nnz).
    """
    if sp.issparse(X) and metric == "euclidean":
        return sp.csr_matrix(X[idx], dtype=np.float64)
    return dense_rows(X, idx)


# ---------------------------------------------------------------------------------------------
# Vendi scores of every order and IntDiv
# ---------------------------------------------------------------------------------------------
def _uses_dual(kern: Kernel, N: int, d: int) -> bool:
    """The dual path: a feature map of dimension below the group's size."""
    return kern.has_feature_map and d < N


def spectral_cost(kern: Kernel, N: int, d: int, n: int, sizes: np.ndarray) -> Tuple[np.ndarray, int]:
    """The curve sizes a group's spectra can afford and the cost exponent of one replicate.

    Dual path: O(m d^2), exponent 1. Kernel blocks: O(m^3), exponent 3; above
    :data:`DENSE_MAX` items the group's matrix is not held, and its curve stops at DENSE_MAX
    (or n, if larger).
    """
    if _uses_dual(kern, N, d):
        return sizes, 1
    if N > DENSE_MAX:
        sizes = np.unique(np.concatenate([sizes[sizes <= DENSE_MAX], [max(n, DENSE_MAX)]]))
    return sizes, 3


def _features_spectrum(P) -> Spectrum:
    """Spectrum of the linear kernel on feature rows P (m x d): the dual path when d < m.

    When d < m the non-zero eigenvalues of K / m = P P^T / m equal those of the d x d matrix
    P^T P / m. :func:`~diversity_core.spectrum._kernel_spectrum` divides the matrix it is given
    by its order, so it receives P^T P scaled by d / m. Every product is in float64 (float32 rows
    are converted, exactly), and the support threshold is float64's, as
    :func:`~diversity_core.spectrum.compute_spectrum` does.
    """
    m, d = P.shape
    if d >= m:
        return _kernel_spectrum(_LINEAR.gram(P, check_input=False), None)
    P = _as_float64(P)
    if sp.issparse(P):
        C = (P.T @ P).toarray()
    else:
        P = np.ascontiguousarray(P)
        C = P.T @ P  # one SYRK
    C *= d / m
    return _kernel_spectrum(C, None)


def spread_replicates(kern: Kernel, N: int, d: int, sizes, n_rep: int) -> Dict[int, int]:
    """Subsets per size for an extrapolated spread: ``SPREAD_FACTOR * n_rep`` where one replicate is cheap.

    The extrapolated standard error is limited by the Monte Carlo noise of the spreads it is
    fitted on (about 0.18 in log units with 50 subsets per size, 0.09 with 200). A replicate
    decomposes a matrix of order min(m, d) (dual path) or m; the factor is
    ``(SMALL_PROBLEM / order)^3`` clipped to [1, SPREAD_FACTOR], so replicates of order up to
    ~250 get the full factor and those of order >= SMALL_PROBLEM keep ``n_rep``.
    """
    dual = _uses_dual(kern, N, d)
    out = {}
    for m in map(int, sizes):
        order = min(m, d) if dual else m
        factor = float(np.clip((SMALL_PROBLEM / max(order, 1)) ** 3, 1.0, SPREAD_FACTOR))
        out[m] = int(round(n_rep * factor))
    return out


class SpectralScores:
    """VS_q for the table orders, IntDiv and the q-profile of a subset of one group's items.

    Prepared once per group: the kernel's feature map Phi when it has one and d < N (a
    replicate then takes the dual path on its rows, O(m d^2)), otherwise the N x N kernel
    matrix (a replicate slices it and decomposes the m x m block, O(m^3)), or, above
    :data:`DENSE_MAX` items, nothing (each block is computed on demand). The spectra are
    normalised the way :func:`~diversity_core.spectrum.compute_spectrum` does (eigenvalues of
    ``K / m`` renormalised to sum 1, the same support threshold), so a replicate equals
    ``compute_spectrum(X[idx], kernel=kern).profile(qs)``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (N, d)
        The group's features, validated by the kernel.
    kern : Kernel
        The resolved kernel (bandwidths fixed on the pooled groups).
    qs : ndarray
        The table's orders.
    """

    def __init__(self, X, kern: Kernel, qs: np.ndarray):
        self.qs = np.concatenate([qs, np.asarray(PROFILE_QS)])
        self.n_table = qs.size
        N, self.d = X.shape
        self.dual = _uses_dual(kern, N, self.d)
        self.K = self.Phi = None
        if self.dual:
            # float32 rows are exact float64 numbers: the feature map (x / ||x|| for cosine) in float64,
            # so a replicate equals the spectrum of their float64 copy
            Phi = kern.features(_as_float64(X), check_input=False)
            self.Phi = sp.csr_matrix(Phi) if sp.issparse(Phi) else Phi
        elif N > DENSE_MAX:
            self.X, self.kern = X, kern  # too large to hold: each subset's block is computed on demand
        else:
            self.K = kern.gram(X, check_input=False)
        self.N = N
        self.cost_power = 1 if self.dual else 3

    @property
    def path(self) -> str:
        """The spectrum path in words (recorded in the settings)."""
        return "dual O(m d^2)" if self.dual else "kernel matrix O(m^3)"

    def bounds(self, n: int) -> Tuple[np.ndarray, np.ndarray]:
        """Range of each score: every VS_q in [1, n]; IntDiv in [0, 1] for a unit diagonal.

        IntDiv = 1 - p^T K p and K is PSD, so 0 <= p^T K p <= max_i K_ii: at most 1 always.
        """
        k = self.qs.size + 1
        low, high = np.ones(k), np.full(k, float(n))
        low[self.n_table] = 0.0 if self._bad_diagonal() == 0 else -np.inf
        high[self.n_table] = 1.0
        return low, high

    def _bad_diagonal(self) -> int:
        """How many items' kernel diagonal is not 1 (of the first 200 when K is formed on demand)."""
        if self.dual:
            P = self.Phi
            diag = np.asarray(P.multiply(P).sum(axis=1)).ravel() if sp.issparse(P) else np.einsum("ij,ij->i", P, P)
        elif self.K is None:
            diag = np.diagonal(self.block(np.arange(min(self.N, 200))))
        else:
            diag = np.diagonal(self.K)
        return int(np.count_nonzero(np.abs(diag - 1.0) > 1e-6))

    def single_thread(self, m: int) -> bool:
        """Many small eigenproblems (order <= SMALL_PROBLEM): BLAS threads cost more than they give."""
        order = min(m, self.d) if self.dual else m
        return order <= SMALL_PROBLEM

    def block(self, idx: np.ndarray) -> np.ndarray:
        """The kernel matrix of the items ``idx`` (a fresh array)."""
        if self.K is not None:
            return self.K[np.ix_(idx, idx)]
        return np.array(self.kern.gram(self.X[idx], check_input=False), dtype=np.float64)

    def warn_diagonal(self, group: str, stacklevel: int = 2) -> None:
        """Warn once when the kernel's diagonal is not 1 (e.g. the linear kernel on non-unit rows)."""
        bad = self._bad_diagonal()
        if bad:
            warnings.warn(
                KernelDiagonalWarning(
                    f"group {group!r}: the kernel's diagonal is not 1 for {bad} items; each spectrum is "
                    "renormalised to sum 1 (use the cosine kernel for unit-norm similarities)."
                ),
                stacklevel=stacklevel + 1,
            )

    def spectrum(self, idx: np.ndarray) -> Spectrum:
        """The spectrum of the density matrix of the items ``idx``."""
        return _features_spectrum(self.Phi[idx]) if self.dual else _kernel_spectrum(self.block(idx), None)

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        """``[VS_q for the table orders, IntDiv, VS_q for PROFILE_QS]`` of the items ``idx``."""
        if self.dual:
            P = self.Phi[idx]
            div = _intdiv(_LINEAR, P)  # 1 - ||mean of the feature rows||^2, O(m d)
            spec = _features_spectrum(P)
        else:
            K = self.block(idx)
            div = _intdiv(_PRECOMPUTED, K)  # 1 - mean(K), before the spectrum overwrites K
            spec = _kernel_spectrum(K, None)
        vs = spec.profile(self.qs)
        return np.concatenate([vs[: self.n_table], [div], vs[self.n_table :]])


# ---------------------------------------------------------------------------------------------
# Magnitude
# ---------------------------------------------------------------------------------------------
def magnitude_grid(t_cut: float, t_ref: Optional[float], n_scales: int) -> np.ndarray:
    """Evenly spaced scales from 0 covering [0, t_cut] (and [0, t_ref]) with step <= shorter / (n_scales - 1).

    Without a reference this is exactly ``n_scales`` scales on [0, t_cut] (the paper's grid).
    """
    if t_ref is None or t_ref == t_cut:
        return np.linspace(0.0, t_cut, n_scales)
    short, long = sorted((t_cut, t_ref))
    h = short / (n_scales - 1)
    m = int(math.ceil(long / h - 1e-9)) + 1
    return np.arange(m) * h


class MagnitudeScores:
    """MagArea on [0, t_cut], the area on [0, t_ref] (for MagDiff) and Mag(t) on the grid, of a subset.

    Returns ``[MagArea, (area to t_ref,) Mag(t) for t in ts]``; counts the subsets with a
    singular evaluation and the most duplicates merged in one subset.
    """

    cost_power = 3

    def __init__(self, X, metric: str, ts: np.ndarray, t_cut: float, t_ref: Optional[float]):
        self.X = X
        self.metric = metric
        self.ts = ts
        self.t_cut = t_cut
        self.t_ref = t_ref
        self.n_singular = 0
        self.n_merged = 0

    def single_thread(self, m: int) -> bool:
        """Whether to run on one BLAS thread: up to SMALL_PROBLEM items.

        A factorisation that small gains little from threads, and on a busy machine their barriers
        cost tens of times the work (43 ms against 1.5 ms at m = 300 on 2 shared cores).
        """
        return m <= SMALL_PROBLEM

    def bounds(self, n: int) -> Tuple[np.ndarray, np.ndarray]:
        """Range of each output: MagArea >= 0; the rest unbounded (not used for intervals)."""
        k = 1 + (self.t_ref is not None) + self.ts.size
        low = np.full(k, -np.inf)
        low[0] = 0.0
        return low, np.full(k, np.inf)

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        """The areas and Mag(t) of the items ``idx``."""
        mag, singular, merged = _magnitude_curve(magnitude_rows(self.X, idx, self.metric), self.ts, self.metric)
        self.n_singular += int(singular)
        self.n_merged = max(self.n_merged, merged)
        out = [_area(self.ts, mag, self.t_cut)]
        if self.t_ref is not None:
            out.append(_area(self.ts, mag, self.t_ref))
        return np.concatenate([out, mag])


def convergence_scale_of(X, idx: np.ndarray, metric: str) -> float:
    """t_conv (Mag = 0.95 n) of the items ``idx`` of X."""
    return _convergence_scale(magnitude_rows(X, idx, metric), metric)


def _distinct(X) -> tuple:
    """``(rows, duplicates merged)``: dense rows deduplicated, CSR rows as they are.

    Exact duplicates of CSR rows come out at distance exactly 0 and are merged as twins by the
    magnitude compute, which counts them.
    """
    if sp.issparse(X):
        return X, 0
    rows, n_merged, _ = _merge_duplicates(X)
    return rows, n_merged


def _magnitude_curve(X, ts: np.ndarray, metric: str) -> Tuple[np.ndarray, bool, int]:
    """Mag(t) of rows X on the scales ``ts``; whether any evaluation was singular; duplicates merged."""
    rows, n_merged = _distinct(X)
    curve = _magnitude_values(rows, ts, metric)
    return np.asarray(curve.values, dtype=np.float64), bool(np.any(curve.singular)), n_merged + curve.n_merged


def _convergence_scale(X, metric: str) -> float:
    """t_conv (Mag = 0.95 n) of rows X."""
    return float(_convergence_scale_of(_distinct(X)[0], metric))


# ---------------------------------------------------------------------------------------------
# RND
# ---------------------------------------------------------------------------------------------
def rnd_of_subset(X: np.ndarray, *, params: dict, seed: int, index: int):
    """RND score of dense rows X, seeded from the comparison's seed and the group's index."""
    from ..rnd import rnd_score

    return rnd_score(X, rng=np.random.SeedSequence([seed, 7, index]).generate_state(1)[0].item(),
                     progress=None, **params)


def rnd_interval(run_scores: np.ndarray, level: float) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """(SE, low, high) of the mean RND over runs: Student-t interval; all None with a single run."""
    runs = run_scores.size
    if runs < 2:
        return None, None, None
    se = float(np.std(run_scores, ddof=1) / math.sqrt(runs))
    _, lo, hi = t_interval(run_scores, level)
    return se, lo, hi
