r"""Drop-in replacement for the ``vendi_score`` package (version 0.0.3): one import line to switch.

``from vendi_score import vendi`` becomes ``from diversity_core.compat import vendi``; every
function keeps the package's name, argument names and defaults, and the Vendi scores come from
the project's core (:mod:`diversity_core.spectrum` for the eigenvalues,
:func:`diversity_core.entropy.vendi_from_eigenvalues` for the score of order q). The package's
helper modules are attributes of this one, as in the package::

    from diversity_core.compat.vendi import text_utils, molecule_utils, data_utils, image_utils

The Vendi score of order q of a kernel matrix K with item probabilities p is

.. math:: \mathrm{VS}_q(K, p) = \exp\Big(\frac{1}{1-q} \log \sum_i \lambda_i^q\Big),
          \qquad \lambda = \mathrm{eig}\big(\mathrm{diag}(\sqrt p)\, K\, \mathrm{diag}(\sqrt p)\big)

(Eq. (1) of [1]; orders q of [2]), where K has unit diagonal, so the eigenvalues sum to 1.

Where the package is wrong, these functions are right, and the numbers differ:

- q = 0 and q < 1: the package keeps round-off eigenvalues (about 1e-17) of a rank-deficient
  K, so its VS_0 counts them (n instead of the rank) and VS_q for q < 1 is inflated; here the
  eigenvalues at or below the support threshold ``m * eps * max(eigenvalue)`` are zero.
- ``score_X`` ignores q in the package (always VS_1); here it honours q.
- ``q=float('inf')`` gives NaN in the package (only the string ``'inf'`` works); both work here.
- A kernel whose diagonal is not 1 (``normalize=False``): the package's eigenvalues then sum to
  ``trace(K) / n`` instead of 1 and its number is not a Vendi score. Here K is rescaled to
  :math:`K_{ij} / \sqrt{K_{ii} K_{jj}}` with a :class:`~diversity_core.exceptions.KernelDiagonalWarning`
  (``normalize=True`` rescales silently, as in the package).
- A sparse K: the package takes the six largest eigenvalues of ``scipy.sparse.linalg.eigsh``
  (and fails for n <= 6); here the full spectrum of the densified matrix is used.
- Weights p are renormalised to sum 1 (the package uses them as given).
- ``intdiv_X`` and ``intdiv`` raise ``TypeError`` / ``NameError`` in the package; they work here.
- All-zero feature rows, NaN, a negative order or a matrix that is not PSD raise
  :class:`~diversity_core.exceptions.DiversityInputError` (the package returns NaN or a number).

A single sample scores 1, as in the package (the project's own API refuses fewer than two).

References
----------
.. [1] D. Friedman and A. B. Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
   Learning", TMLR 2023.
.. [2] A. P. Pasarkar and A. B. Dieng, "Cousins of the Vendi Score: A Family of Similarity-Based
   Diversity Metrics for Science and Machine Learning", 2023.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from .._orders import check_q
from .._validation import check_features, check_kernel_matrix, check_scalar, check_weights
from ..baselines import intdiv as _core_intdiv
from ..entropy import support_tol, vendi_from_eigenvalues
from ..exceptions import DiversityInputError
from ..kernels import kernel_matrix, normalize_diagonal, row_norms
from ..spectrum import compute_spectrum, spectrum_from_kernel
from . import vendi_data as data_utils
from . import vendi_images as image_utils
from . import vendi_molecules as molecule_utils
from . import vendi_text as text_utils

__all__ = [
    "score",
    "score_K",
    "score_X",
    "score_dual",
    "intdiv_K",
    "intdiv_X",
    "intdiv",
    "normalize_K",
    "weight_K",
    "entropy_q",
    "text_utils",
    "molecule_utils",
    "data_utils",
    "image_utils",
]


# ---------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------
def _check_one_q(q) -> float:
    """One order q >= 0 (a number, ``'inf'`` or ``float('inf')``) as a float."""
    qs = check_q(q)
    if qs.size != 1:
        raise DiversityInputError(f"q must be one order; got {qs.size} ({q!r}). Call the function once per order.")
    return float(qs.ravel()[0])


def _check_kernel(K, *, min_samples: int = 1) -> np.ndarray:
    """A dense, finite, symmetric float64 kernel matrix with a positive diagonal (sparse input densified)."""
    if sp.issparse(K):
        K = K.toarray()
    return check_kernel_matrix(K, min_samples=min_samples)


def _n_items(X) -> int:
    """Number of rows of an array-like, sparse matrix or sequence."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(X)


def _check_single_row(X, normalize: bool) -> None:
    """Validate a one-row feature matrix (the score of one sample is 1, if the row is usable)."""
    X = check_features(X, min_samples=1, allow_sparse=True)
    if normalize and not row_norms(X)[0] > 0:
        raise DiversityInputError(
            "cosine similarity is undefined for an all-zero row; drop it or use normalize=False."
        )


def _pairwise_matrix(samples: Sequence, k: Callable) -> np.ndarray:
    """K_ij = k(samples[i], samples[j]) on the n(n+1)/2 pairs i <= j, mirrored."""
    if not callable(k):
        raise DiversityInputError(f"k must be a similarity function k(a, b) -> float; got {type(k).__name__}.")
    n = len(samples)
    if n == 0:
        raise DiversityInputError("samples is empty; there is nothing to score.")
    K = np.empty((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(i, n):
            K[i, j] = K[j, i] = float(k(samples[i], samples[j]))
    if not np.isfinite(K).all():
        bad = np.argwhere(~np.isfinite(K))[0]
        raise DiversityInputError(
            f"k returned a non-finite similarity for samples {bad[0]} and {bad[1]}; k must return finite numbers."
        )
    return K


# ---------------------------------------------------------------------------------------
# matrices and entropies
# ---------------------------------------------------------------------------------------
def weight_K(K, p=None) -> np.ndarray:
    r"""The density matrix :math:`\mathrm{diag}(\sqrt p)\, K\, \mathrm{diag}(\sqrt p)` (``K / n`` when p is None).

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric kernel matrix with a positive diagonal (sparse input is densified).
    p : array-like of shape (n,), optional
        Item probabilities; renormalised to sum 1 (the package uses them as given).

    Returns
    -------
    ndarray of shape (n, n)
        A new matrix; K is not modified.

    Examples
    --------
    >>> weight_K(np.eye(2)).tolist()
    [[0.5, 0.0], [0.0, 0.5]]
    """
    K = _check_kernel(K)
    w = check_weights(p, K.shape[0])
    if w is None:
        return K / K.shape[0]
    s = np.sqrt(w)
    return K * np.outer(s, s)


def normalize_K(K) -> np.ndarray:
    r"""K rescaled to unit diagonal: :math:`K_{ij} / \sqrt{K_{ii} K_{jj}}`.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric kernel matrix (sparse input is densified).

    Returns
    -------
    ndarray of shape (n, n)
        A new matrix with ones on its diagonal; PSD when K is.

    Raises
    ------
    DiversityInputError
        A diagonal entry is not positive (the package returns NaN/inf there).

    Examples
    --------
    >>> normalize_K([[4.0, 2.0], [2.0, 1.0]]).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    K = _check_kernel(K)
    return np.array(normalize_diagonal(K, warn=False), dtype=np.float64)


def entropy_q(p, q=1) -> float:
    r"""Renyi entropy of order q of a probability vector (natural logarithm).

    .. math:: H_q(p) = \frac{1}{1-q}\log\sum_{i: p_i > 0} p_i^q,\quad
              H_1 = -\sum_i p_i \log p_i,\quad H_\infty = -\log\max_i p_i

    The logarithm of :func:`~diversity_core.entropy.vendi_from_eigenvalues` (the one home of
    the formula): ``exp(entropy_q(eigenvalues, q))`` is the Vendi score of order q.

    Parameters
    ----------
    p : array-like of shape (m,)
        Non-negative values; renormalised to sum 1 (the package applies the formula to p as
        given). Negative values of round-off size (at most ``m * eps * max|p|``) are set to 0,
        as eigenvalues from ``eigvalsh`` have them; larger negative values raise.
    q : float or "inf", default 1
        Order in [0, inf]; ``'inf'`` and ``float('inf')`` both mean the min-entropy (the
        package returns NaN for ``float('inf')``).

    Returns
    -------
    float

    Notes
    -----
    Every positive entry counts, however small: the values are taken as a distribution, not as
    eigenvalues with round-off (:func:`score_K` removes those before the entropy).

    Examples
    --------
    >>> round(entropy_q([0.5, 0.5], q=2), 12) == round(math.log(2), 12)
    True
    """
    q = _check_one_q(q)
    try:
        lam = np.asarray(p, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise DiversityInputError("p must be an array of numbers.") from None
    if lam.size == 0 or not np.isfinite(lam).all():
        raise DiversityInputError("p must be a non-empty array of finite numbers.")
    lmin = float(lam.min())
    if lmin < 0:
        # the support rule's round-off size: eigvalsh returns zeros as +/- m eps max|lambda|
        tol = support_tol(lam.size, float(np.abs(lam).max()))
        if lmin < -tol:
            raise DiversityInputError(
                f"p must be non-negative; its smallest entry is {lmin:.3g}, beyond round-off. "
                "Pass probabilities or the eigenvalues of a PSD density matrix."
            )
        lam = np.maximum(lam, 0.0)
    return math.log(vendi_from_eigenvalues(lam, q))


# ---------------------------------------------------------------------------------------
# Vendi scores
# ---------------------------------------------------------------------------------------
def score_K(K, q=1, p=None, normalize=False) -> float:
    r"""Vendi score of order q of a kernel matrix K.

    .. math:: \mathrm{VS}_q = \exp H_q\big(\mathrm{eig}(\mathrm{diag}(\sqrt p) K \mathrm{diag}(\sqrt p))\big)

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric PSD similarity matrix, ideally with ``K_ii = 1``; dense or sparse.
    q : float or "inf", default 1
        Order in [0, inf].
    p : array-like of shape (n,), optional
        Item probabilities (renormalised to sum 1); default uniform.
    normalize : bool, default False
        Rescale K to unit diagonal first (:func:`normalize_K`).

    Returns
    -------
    float
        Between 1 and n; 1 for a single sample.

    Raises
    ------
    DiversityInputError
        K not square, not symmetric, not finite, a non-positive diagonal, or not PSD beyond
        round-off.

    Warns
    -----
    KernelDiagonalWarning
        ``normalize=False`` and ``K_ii != 1``: K is rescaled to unit diagonal anyway. The
        package keeps K, so its eigenvalues sum to ``trace(K) / n`` and its number differs.

    Notes
    -----
    Dense eigendecomposition, O(n^3). Differences from the package: eigenvalues at or below
    ``n * eps * max(eigenvalue)`` are round-off and excluded, so VS_0 is the numerical rank
    (the package counts round-off eigenvalues) and q < 1 is not inflated; a sparse K uses its
    full spectrum (the package keeps six eigenvalues); ``float('inf')`` works as an order.

    Examples
    --------
    >>> K = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> round(score_K(K), 4)          # the package's README: 2.1573
    2.1573
    """
    q = _check_one_q(q)
    K = _check_kernel(K)
    if K.shape[0] == 1:
        check_weights(p, 1)
        return 1.0
    if normalize:
        K = normalize_diagonal(K, warn=False)
    return spectrum_from_kernel(K, weights=p).vendi(q)


def score_X(X, q=1, p=None, normalize=True) -> float:
    r"""Vendi score of order q with the linear kernel on the rows of X (cosine when normalised).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
        Features.
    q : float or "inf", default 1
        Order in [0, inf]. The package ignores q here and always returns VS_1; this honours it.
    p : array-like of shape (n,), optional
        Item probabilities (renormalised to sum 1); default uniform.
    normalize : bool, default True
        Normalise the rows to unit length first (the cosine kernel).

    Returns
    -------
    float

    Raises
    ------
    DiversityInputError
        An all-zero row with ``normalize=True`` (the package returns a wrong number), NaN.

    Warns
    -----
    KernelDiagonalWarning
        ``normalize=False`` with rows that are not unit length: the eigenvalues are
        renormalised to sum 1.

    Notes
    -----
    The exact dual path ``X^T diag(p) X`` (O(n d^2)) when d < n, the n x n kernel (O(n^3))
    otherwise; both give the same eigenvalues. Round-off eigenvalues are excluded (see
    :func:`score_K`).

    Examples
    --------
    >>> round(score_X(np.eye(3), q=2), 12)
    3.0
    """
    q = _check_one_q(q)
    if _n_items(X) == 1:
        _check_single_row(X, normalize)
        check_weights(p, 1)
        return 1.0
    return compute_spectrum(X, kernel="cosine" if normalize else "linear", weights=p).vendi(q)


def score_dual(X, q=1, normalize=True) -> float:
    r"""Vendi score of order q from the d x d covariance :math:`X^T X / n` (cosine when normalised).

    Its non-zero eigenvalues are those of ``X X^T / n``, so this equals :func:`score_X` with
    uniform weights.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)
    q : float or "inf", default 1
    normalize : bool, default True
        Normalise the rows to unit length first.

    Returns
    -------
    float

    Notes
    -----
    O(n d^2 + d^3). The package keeps every positive eigenvalue of the covariance, round-off
    included, which inflates VS_q for q < 1 when the features are rank-deficient; here they
    are excluded.

    Examples
    --------
    >>> X = np.array([[100, 0], [99, 1], [1, 99], [0, 100]])
    >>> round(score_dual(X), 4)
    1.9999
    """
    q = _check_one_q(q)
    if _n_items(X) == 1:
        _check_single_row(X, normalize)
        return 1.0
    return compute_spectrum(X, kernel="cosine" if normalize else "linear", method="dual").vendi(q)


def score(samples, k, q=1, p=None, normalize=False) -> float:
    r"""Vendi score of order q of any samples under a similarity function ``k(a, b)``.

    Parameters
    ----------
    samples : sequence of length n
        Anything ``k`` accepts.
    k : callable
        Symmetric similarity with ``k(x, x) = 1``; evaluated on the n(n+1)/2 pairs.
    q : float or "inf", default 1
    p : array-like of shape (n,), optional
        Item probabilities (renormalised to sum 1).
    normalize : bool, default False
        Rescale the kernel matrix to unit diagonal first.

    Returns
    -------
    float

    Notes
    -----
    n(n+1)/2 Python calls of ``k``, then :func:`score_K` (same differences from the package).

    Examples
    --------
    >>> samples = [0, 0, 10, 10, 20, 20]
    >>> k = lambda a, b: np.exp(-np.abs(a - b))
    >>> round(score(samples, k), 4)   # the package's README: 2.9999
    3.0
    """
    q = _check_one_q(q)
    return score_K(_pairwise_matrix(samples, k), q=q, p=p, normalize=normalize)


# ---------------------------------------------------------------------------------------
# internal diversity (IntDiv)
# ---------------------------------------------------------------------------------------
def _check_power(q) -> float:
    """The elementwise power q of IntDiv: a finite number > 0."""
    return check_scalar(q, "q", float, min_val=0.0, include_boundaries="neither")


def intdiv_K(K, q=1, p=None) -> float:
    r"""Internal diversity of a kernel matrix: :math:`1 - \sum_{ij} p_i p_j K_{ij}^q`.

    Parameters
    ----------
    K : array-like of shape (n, n)
        Symmetric similarity matrix with a positive diagonal.
    q : float, default 1
        Elementwise power of K (> 0). As in the package, no root is taken: MOSES's
        :math:`\mathrm{IntDiv}_q = 1 - (\sum_{ij} p_i p_j K_{ij}^q)^{1/q}` equals
        ``1 - (1 - intdiv_K(K, q)) ** (1 / q)``.
    p : array-like of shape (n,), optional
        Item probabilities (renormalised to sum 1; the package uses them as given).

    Returns
    -------
    float
        0 for a single sample or identical samples.

    Raises
    ------
    DiversityInputError
        Negative similarities with a non-integer q (the package returns NaN).

    Warns
    -----
    KernelDiagonalWarning
        ``K_ii != 1``: K is rescaled to unit diagonal (the package keeps it).

    Notes
    -----
    O(n^2), by :func:`diversity_core.baselines.intdiv` on the precomputed matrix ``K ** q``.

    Examples
    --------
    >>> intdiv_K(np.eye(4))
    0.75
    """
    q = _check_power(q)
    K = _check_kernel(K)
    if q != 1:
        if q != int(q) and np.any(K < 0):
            raise DiversityInputError(
                f"K has negative similarities, so K ** {q:g} is undefined; use an integer q or a non-negative K."
            )
        K = np.power(K, q)
    if K.shape[0] == 1:
        check_weights(p, 1)
        return 0.0
    return _core_intdiv(K, kernel="precomputed", weights=p)


def intdiv_X(X, q=1, p=None, normalize=True) -> float:
    r"""Internal diversity with the linear kernel on the rows of X (cosine when normalised).

    :math:`1 - \sum_{ij} p_i p_j K_{ij}^q` with :math:`K = X X^T`. The package's ``intdiv_X``
    raises ``TypeError`` (it calls ``intdiv`` with the wrong arguments); this computes what it
    means to.

    Parameters
    ----------
    X : array-like of shape (n, d)
    q : float, default 1
        Elementwise power of K (see :func:`intdiv_K`).
    p : array-like of shape (n,), optional
    normalize : bool, default True
        Normalise the rows to unit length first.

    Returns
    -------
    float

    Notes
    -----
    O(n d) when q = 1 and ``normalize=True`` (:math:`1 - \|X^T p\|^2` on unit rows), else O(n^2 d).
    With ``normalize=False`` and rows that are not unit length, K is rescaled to unit diagonal
    with a warning (see :func:`intdiv_K`).

    Examples
    --------
    >>> intdiv_X(np.eye(4))
    0.75
    """
    q = _check_power(q)
    kernel = "cosine" if normalize else "linear"
    if _n_items(X) == 1:
        _check_single_row(X, normalize)
        check_weights(p, 1)
        return 0.0
    if q == 1 and normalize:
        return _core_intdiv(X, kernel="cosine", weights=p)
    return intdiv_K(kernel_matrix(X, kernel=kernel), q=q, p=p)


def intdiv(elems, k, q=1, p=None) -> float:
    r"""Internal diversity of any samples under a similarity function ``k(a, b)``.

    The package's ``intdiv`` raises ``NameError``; this evaluates k on the n(n+1)/2 pairs and
    calls :func:`intdiv_K`.

    Parameters
    ----------
    elems : sequence of length n
    k : callable
        Symmetric similarity with ``k(x, x) = 1``.
    q : float, default 1
    p : array-like of shape (n,), optional

    Returns
    -------
    float

    Examples
    --------
    >>> intdiv([0, 1, 2, 3], lambda a, b: float(a == b))
    0.75
    """
    q = _check_power(q)
    return intdiv_K(_pairwise_matrix(elems, k), q=q, p=p)
