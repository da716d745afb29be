"""Hill numbers of a probability vector: the Vendi score of order q from eigenvalues.

The maths every Vendi score ends in, below both :mod:`diversity_core.spectrum` (which caches
eigenvalues) and :mod:`diversity_core.vendi` (the public scores): the exponential of the
Renyi entropy of order q of the eigenvalues of a density matrix.

It also holds the one rule that decides which eigenvalues count (:func:`support_tol`, the
support threshold ``m * eps * max``, like scikit-learn's single PSD tolerance in
``utils/validation.py``, with ``eps`` of the computation, :func:`computation_eps`) and the default grid of orders (:func:`default_q_grid`): the spectrum,
the bounds and sketches of :mod:`diversity_core.approx`, the per-item contributions, the
comparisons and :mod:`diversity_core.compat.vendi` all call these rather than restating them.
"""

from __future__ import annotations

import numpy as np

from ._orders import check_q
from .exceptions import DiversityInputError

__all__ = ["vendi_from_eigenvalues", "support_tol", "computation_eps", "default_q_grid"]

#: Machine epsilon of float64, the precision every exact density matrix is computed in.
EPS64 = float(np.finfo(np.float64).eps)

#: The arithmetics a matrix can be computed in (:func:`computation_eps`).
PRECISIONS = ("float64", "float32")

#: Below this distance from 1 the Renyi entropy is evaluated with log1p/expm1 (no cancellation).
_NEAR_ONE = 0.5


def computation_eps(precision: str = "float64", *, entry_rtol: float = 0.0) -> float:
    """The ``eps`` of the support rule for a matrix COMPUTED in ``precision`` arithmetic.

    The threshold follows the arithmetic that formed and decomposed the matrix, never the
    dtype the data arrived in: a float32 value is an exact float64 number, and every exact path
    of the core (dense, dual in memory, streamed, Dask, GPU, :class:`~diversity_core.metrics.VendiScore`,
    the comparisons) converts float32 rows to float64 block by block and multiplies them in
    float64, so float32 data get float64's eps, exactly as their float64 copy does (a float32
    eps dropped 845 of 1,120 real eigenvalues of EfficientNet features, issue 38). A path that
    really multiplies in float32 states the relative error of its matrix entries as
    ``entry_rtol`` (a float32 product of t terms errs by about ``eps32 (2 + sqrt(t))``, see
    ``approx._operators._gemm_rtol``); its threshold uses the larger of the two.

    Parameters
    ----------
    precision : {"float64", "float32"}, default "float64"
        The arithmetic of the computation (a string, so that a data dtype cannot be passed by
        mistake).
    entry_rtol : float, default 0
        Stated relative error of the matrix's entries, when larger than the arithmetic's eps.

    Returns
    -------
    float
        ``max(finfo(precision).eps, entry_rtol)``.

    Examples
    --------
    >>> computation_eps() == EPS64
    True
    """
    if not isinstance(precision, str) or precision not in PRECISIONS:
        raise DiversityInputError(
            f"precision is the arithmetic a matrix was computed in, one of {PRECISIONS}; got {precision!r}. "
            "It is not the data's dtype: float32 data converted to float64 and multiplied in float64 is a "
            "'float64' computation."
        )
    rtol = float(entry_rtol)
    if not (np.isfinite(rtol) and rtol >= 0):
        raise DiversityInputError(f"entry_rtol must be a finite number >= 0; got {entry_rtol!r}.")
    return max(float(np.finfo(precision).eps), rtol)


def support_tol(m: int, largest: float, eps: float = EPS64) -> float:
    r"""The support threshold: eigenvalues at or below it are round-off and count as zero.

    .. math:: \tau = m\, \varepsilon\, \lambda_{\max}

    the rank rule of ``numpy.linalg.matrix_rank`` (and LAPACK's ``rcond`` default): an
    eigensolver on an m x m symmetric matrix returns every eigenvalue to within about
    :math:`m \varepsilon \lVert M \rVert_2` (backward stability), so smaller values cannot be told
    from zero. Every VS_q sums over the eigenvalues above it; for q < 1 a round-off eigenvalue
    counted would inflate the sum (VS_0 would count them all).

    Parameters
    ----------
    m : int
        Order of the matrix that was decomposed (n dense, d dual, the sketch's size, ...).
    largest : float
        Its largest eigenvalue (or an upper bound on it, which gives a threshold at least as high).
    eps : float, default float64's
        Relative round-off of the computation that formed and decomposed the matrix
        (:func:`computation_eps`): float64's on every exact path, whatever the data's dtype.

    Returns
    -------
    float

    Notes
    -----
    q = 0 is the count of eigenvalues above the threshold: the numerical rank of the values as
    stored. float32 data and their float64 copy are the same values computed alike, so they get
    the same rank; it is not the rank of the data before they were rounded to float32 (rounding a
    rank-r matrix makes it full rank, with eigenvalues near ``eps32^2`` of the largest that
    usually, not always, fall below ``m eps64``), and it jumps when an eigenvalue crosses the
    threshold. Every q > 0 is continuous in the eigenvalues.

    O(1). The one statement of the rule: :class:`~diversity_core.spectrum.Spectrum`, the bounds
    and sketches of :mod:`diversity_core.approx`, the leave-one-out contributions and
    :mod:`diversity_core.compat.vendi` all call it.

    Examples
    --------
    >>> support_tol(4, 0.5) == 4 * 0.5 * 2.0**-52
    True
    """
    return m * eps * largest


def default_q_grid(n_points: int = 100) -> np.ndarray:
    """A log-spaced grid of orders from 0.01 to 100 with 0, 1 and inf added (sorted).

    O(n_points). The default orders of every q-profile (:func:`~diversity_core.vendi.q_profile`,
    the bounds of :mod:`diversity_core.approx`).

    Examples
    --------
    >>> g = default_q_grid(10)
    >>> float(g[0]), float(g[-1]), bool(1.0 in g)
    (0.0, inf, True)
    """
    grid = np.geomspace(0.01, 100.0, num=max(n_points - 3, 2))
    return np.unique(np.concatenate([[0.0, 1.0, np.inf], grid]))


def _vendi_orders(lam: np.ndarray, log_lam: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """VS_q of a positive probability vector for every order in ``qs`` (vectorised, O(m) each).

    q = 0 and q = inf are exact (a count and 1 / max); q = 1 is the Shannon form.
    """
    qs = np.asarray(qs, dtype=np.float64)
    out = np.empty(qs.shape, dtype=np.float64)
    out[qs == 0] = lam.size
    out[np.isinf(qs)] = 1.0 / lam.max()
    # elementwise sums rather than BLAS dot/gemv: for vectors this short, BLAS thread start-up
    # costs more than the arithmetic (a threaded ddot measured 20 ms on a busy 2-core machine).
    out[qs == 1] = np.exp(-(lam * log_lam).sum())
    s = qs - 1.0
    near = (np.abs(s) < _NEAR_ONE) & (qs != 1)
    if near.any():
        # log sum lam^q = log(1 + sum lam (e^{s log lam} - 1)); every term has the sign of -s
        # (log lam <= 0), so the sum has no cancellation and log1p/expm1 keep full precision
        # as q -> 1, where the textbook formula loses ~log10(1/|q-1|) digits.
        sn = s[near]
        B = np.expm1(np.outer(sn, log_lam))
        B *= lam
        out[near] = np.exp(-np.log1p(B.sum(axis=1)) / sn)
    far = ~near & (qs != 0) & (qs != 1) & np.isfinite(qs)
    if far.any():
        # log-sum-exp shifted by the largest term q * max(log lam): no overflow or underflow
        # even at q = 1e6.
        qf = qs[far]
        top = qf * log_lam.max()
        A = np.outer(qf, log_lam)
        A -= top[:, None]
        np.exp(A, out=A)
        out[far] = np.exp((top + np.log(A.sum(axis=1))) / (1.0 - qf))
    return out


def vendi_from_eigenvalues(eigenvalues, q=1.0, *, normalized: bool = False):
    r"""Vendi score of order q from eigenvalues of a density matrix.

    .. math::
        \mathrm{VS}_q = \exp\Big(\frac{1}{1-q} \log \sum_i \lambda_i^q\Big),\quad
        \mathrm{VS}_1 = \exp\Big(-\sum_i \lambda_i \log \lambda_i\Big),\quad
        \mathrm{VS}_\infty = \frac{1}{\max_i \lambda_i},\quad
        \mathrm{VS}_0 = \#\{i : \lambda_i > 0\}

    (Eq. (3) of Pasarkar & Dieng; q = 1 is Eq. (2) of the VS paper), summing over the support.

    Parameters
    ----------
    eigenvalues : array-like
        Non-negative eigenvalues (zeros are outside the support). Unless ``normalized``,
        they are divided by their sum first.
    q : float, "inf" or sequence of them
        Order(s) in [0, inf].
    normalized : bool, default False
        Skip the validation and renormalisation (the caller guarantees a probability vector
        of positive entries, as :class:`~diversity_core.spectrum.Spectrum` does).

    Returns
    -------
    float, or ndarray when q is a sequence.

    Notes
    -----
    O(m) per order. Near q = 1 the entropy is computed as
    :math:`-\log(1 + \sum_i \lambda_i\, \mathrm{expm1}((q-1)\log\lambda_i)) / (q-1)`, which
    has no cancellation; far from 1 it uses a log-sum-exp (no overflow or underflow at
    q = 1e6). Round-off eigenvalues must be removed first (the Spectrum's support
    threshold): for q < 1 they would inflate the sum.

    Examples
    --------
    >>> vendi_from_eigenvalues([0.25, 0.25, 0.25, 0.25], q=2)
    4.0
    """
    qs = check_q(q)
    lam = np.asarray(eigenvalues, dtype=np.float64).ravel()
    if not normalized:
        if lam.size == 0 or not np.isfinite(lam).all() or np.any(lam < 0):
            raise DiversityInputError("eigenvalues must be a non-empty array of finite non-negative numbers.")
        total = lam.sum()
        if total <= 0:
            raise DiversityInputError("eigenvalues sum to zero; there is no distribution to score.")
        lam = lam[lam > 0] / total
    out = _vendi_orders(lam, np.log(lam), qs.ravel())
    if np.ndim(q) == 0 and not isinstance(q, (list, tuple)):
        return float(out[0])
    return out.reshape(qs.shape)
