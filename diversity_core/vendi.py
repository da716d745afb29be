"""Vendi scores of every order q (Friedman & Dieng 2023; Pasarkar & Dieng, "Cousins of the Vendi Score").

The Vendi score of order q is the exponential of the Renyi entropy of order q of the
eigenvalues of the density matrix (:mod:`diversity_core.spectrum`). The spectrum is computed
once; each order then costs O(m) on the m cached eigenvalues.

This module also provides equivalents of the ``vendi_score`` package's functions (``score``,
``score_K``, ``score_X``, ``score_dual``) with its argument order and this project's names: the
item probabilities are ``weights`` (the package's ``p=`` still works, with a DeprecationWarning;
:mod:`diversity_core.compat.vendi` is the drop-in that keeps every name of the package). Where
that package is wrong, these are right and say so.

:func:`vendi_2_exact` (from :mod:`diversity_core.blocked`) gives VS_2 exactly for any kernel
without a spectrum, by blocks of K, with the bounds it implies on VS_inf.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from ._deprecation import UNSET, renamed_argument
from ._progress import ProgressCallback
from ._validation import check_q, check_weights
from .approx.bounds import vs_inf_exact
from .approx.plan import plan_scores
from .blocked import VS2Result, vendi_2_exact
from .entropy import default_q_grid, vendi_from_eigenvalues
from .exceptions import DiversityInputError, MemoryBudgetError
from .kernels import get_kernel
from .sources import as_source
from .spectrum import Spectrum, compute_spectrum, spectrum_from_kernel

__all__ = [
    "vendi_from_eigenvalues",
    "vendi_score",
    "vendi_2_exact",
    "VS2Result",
    "q_profile",
    "default_q_grid",
    "score",
    "score_K",
    "score_X",
    "score_dual",
]

def vendi_score(
    X,
    *,
    kernel="cosine",
    q=1.0,
    weights=None,
    method: str = "auto",
    device: str = "cpu",
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> float:
    r"""Vendi score of order q of the items X under a kernel.

    .. math:: \mathrm{VS}_q(X) = \exp(H_q(\lambda(\rho))),\quad
              \rho = \mathrm{diag}(\sqrt p) K \mathrm{diag}(\sqrt p)

    The effective number of distinct items: n when all items are dissimilar, 1 when all
    are identical (Theorem 3.1 of the VS paper).

    Parameters
    ----------
    X : array-like of shape (n, d), RowSource, dask.array.Array, path, or (n, n) with ``kernel="precomputed"``
        Files and Dask arrays are streamed (see :func:`~diversity_core.spectrum.compute_spectrum`).
    kernel : str or Kernel, default "cosine"
    q : float or "inf", default 1.0
    weights : array-like of shape (n,), optional
    method : {"auto", "dense", "dual"}
    device : {"cpu", "cuda", "auto"}
    progress : callable, optional
    **kernel_params
        e.g. ``sigma=0.5`` for the rbf kernel.

    Returns
    -------
    float

    Notes
    -----
    Computes a :class:`~diversity_core.spectrum.Spectrum` (dual O(n d^2), dense O(n^3)); to
    score several orders, compute the spectrum once and call ``spectrum.vendi(q)``. For q = 2 or
    q = inf with ``method="auto"`` on the CPU, the cheapest exact path of
    :func:`~diversity_core.approx.plan_scores` is taken instead where the plan picks one without
    a spectrum (from its measured crossovers, or past the dense limit): VS_2 by blocks of K
    (:func:`vendi_2_exact`, O(n^2 d)) or VS_inf from the top eigenvalue by Lanczos
    (:func:`~diversity_core.approx.vs_inf_exact`, within its stated tolerance).

    Examples
    --------
    >>> import numpy as np
    >>> round(vendi_score(np.eye(4), q=2), 12)
    4.0
    """
    if np.ndim(q) != 0:
        raise DiversityInputError("vendi_score takes one order q; use q_profile for several.")
    if method == "auto" and device == "cpu":
        value = _without_spectrum(X, kernel, q, weights, progress, kernel_params)
        if value is not None:
            return value
    try:
        spec = compute_spectrum(
            X, kernel=kernel, weights=weights, method=method, device=device, progress=progress, **kernel_params
        )
    except MemoryBudgetError as exc:
        if method != "auto":
            raise
        return _beyond_dense(X, kernel, q, weights, progress, kernel_params, exc)
    return spec.vendi(q)


def _without_spectrum(X, kernel, q, weights, progress, kernel_params) -> Optional[float]:
    """VS_2 or VS_inf of in-memory items on the plan's exact path without a spectrum, else None.

    The plan's rule (:func:`~diversity_core.approx.plan_scores`): blocks of K for q = 2, Lanczos for
    q = inf, from the measured crossovers or past the dense limit; the kernel is resolved as
    ``compute_spectrum`` resolves it (the weighted bandwidth), so the value is the same one.
    """
    order = float(check_q(q).ravel()[0])
    if order not in (2.0, np.inf) or as_source(X) is not None:
        return None
    kern = get_kernel(kernel, **kernel_params)
    try:
        shape = np.shape(X)
    except ValueError:  # ragged rows
        return None
    if len(shape) != 2 or min(shape) < 1:
        return None  # the spectrum's validation says what is wrong
    plan = plan_scores(shape[0], shape[1], kernel=kern, q=[order], weighted=weights is not None)
    if plan.path not in ("blocked", "lanczos"):
        return None
    X = kern.validate(X)
    kern = kern.resolve(X, check_weights(weights, X.shape[0]))
    if plan.path == "blocked":
        return vendi_2_exact(X, kernel=kern, weights=weights, method="blocked", progress=progress).vs2
    return vs_inf_exact(X, kernel=kern, weights=weights, rng=0, progress=progress)


def _beyond_dense(X, kernel, q, weights, progress, kernel_params, error: MemoryBudgetError) -> float:
    """method='auto' past the dense budget: the exact paths that need no n x n float64 matrix.

    VS_2 by blocks of K and VS_inf by Lanczos are exact; any other order can only be bounded or
    estimated, so the budget error is raised again with the way to those (a float is never an estimate).
    """
    order = check_q(q).ravel()[0]
    if order == 2:
        return vendi_2_exact(X, kernel=kernel, weights=weights, progress=progress, **kernel_params).vs2
    if np.isinf(order):
        return vs_inf_exact(X, kernel=kernel, weights=weights, progress=progress, **kernel_params)
    raise error


def q_profile(X_or_spectrum, qs=None, **spectrum_params) -> tuple[np.ndarray, np.ndarray]:
    """Vendi scores over many orders: ``(qs, VS_q)``, non-increasing in q.

    Accepts a :class:`Spectrum` (no recomputation, O(m) per order) or data plus the
    arguments of :func:`~diversity_core.spectrum.compute_spectrum`.
    """
    spec = (
        X_or_spectrum
        if isinstance(X_or_spectrum, Spectrum)
        else compute_spectrum(X_or_spectrum, **spectrum_params)
    )
    qs = default_q_grid() if qs is None else check_q(qs)
    return qs, spec.profile(qs)


# ---------------------------------------------------------------------------------------
# Equivalents of the vendi_score package (its argument order, this project's names)
# ---------------------------------------------------------------------------------------
def _compat_q(q):
    """The package writes infinity as the string 'inf'; accept it and float('inf')."""
    return np.inf if isinstance(q, str) and q.strip().lower() == "inf" else q


def score_K(K, q=1, weights=None, normalize: bool = False, *, p=UNSET) -> float:
    r"""Vendi score of order q of a kernel matrix K (``vendi_score.score_K``).

    .. math:: \mathrm{VS}_q = \exp H_q\big(\lambda(\mathrm{diag}(\sqrt w) K \mathrm{diag}(\sqrt w))\big)

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric PSD similarity matrix.
    q : float or "inf", default 1
    weights : array-like of shape (n,), optional
        Item probabilities (renormalised); default uniform. The package calls them ``p``;
        ``p=`` still works here with a DeprecationWarning.
    normalize : bool, default False
        Rescale K to unit diagonal first.

    Returns
    -------
    float

    Notes
    -----
    Dense eigendecomposition, O(n^3). Differences from the package: a non-unit diagonal with
    ``normalize=False`` is rescaled with a warning (the package's eigenvalues then no longer sum
    to 1 and its score is not a Vendi score); eigenvalues below the support threshold are
    dropped, so q < 1 is not inflated by round-off; q may be ``float('inf')`` as well as ``'inf'``.

    Examples
    --------
    >>> round(score_K(np.eye(3), q=2), 12)
    3.0
    """
    weights = renamed_argument(weights, p, new="weights", old="p")
    return spectrum_from_kernel(K, weights=weights).vendi(_compat_q(q))


def score_X(X, q=1, weights=None, normalize: bool = True, *, p=UNSET) -> float:
    """Vendi score of order q with the linear kernel ``X X^T`` (``vendi_score.score_X``).

    ``normalize=True`` (default) normalises the rows first, i.e. the cosine kernel.
    ``weights`` are item probabilities (the package's ``p``; ``p=`` still works with a
    DeprecationWarning). The package's ``score_X`` ignores q and always returns VS_1; this one
    honours q. Cost: the dual path O(n d^2) when d < n, else dense O(n^3).
    """
    weights = renamed_argument(weights, p, new="weights", old="p")
    kernel = "cosine" if normalize else "linear"
    return compute_spectrum(X, kernel=kernel, weights=weights, method="auto").vendi(_compat_q(q))


def score_dual(X, q=1, normalize: bool = True) -> float:
    """Vendi score via the d x d covariance ``X^T X / n`` (``vendi_score.score_dual``).

    Equal to :func:`score_X` (same non-zero eigenvalues). The package keeps round-off
    eigenvalues (all > 0), which inflates VS_q for q < 1; here they are dropped.
    """
    kernel = "cosine" if normalize else "linear"
    return compute_spectrum(X, kernel=kernel, method="dual").vendi(_compat_q(q))


def score(samples: Sequence, k: Callable, q=1, weights=None, normalize: bool = False, *, p=UNSET) -> float:
    """Vendi score of arbitrary samples under a similarity function ``k(a, b)`` (``vendi_score.score``).

    Evaluates k on the n(n+1)/2 pairs (as the package does), then :func:`score_K`. ``weights``
    are item probabilities (the package's ``p``; ``p=`` still works with a DeprecationWarning).
    """
    weights = renamed_argument(weights, p, new="weights", old="p")
    n = len(samples)
    if n < 2:
        raise DiversityInputError(f"score needs at least 2 samples; got {n}.")
    K = np.empty((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i, n):
            K[i, j] = K[j, i] = float(k(samples[i], samples[j]))
    if normalize:
        d = np.sqrt(np.diagonal(K))
        K = K / np.outer(d, d)
    return score_K(K, q=q, weights=weights)
