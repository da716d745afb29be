r"""The novelty spectrum: eigen-decomposition of :math:`C_X - \eta\, C_Y`, its modes and their galleries."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import scipy.linalg as sla

from .._validation import check_option, check_random_state, check_scalar
from ..evaluation._common import check_sets
from ..evaluation._vendi import resolve_kernel
from ..kernels import DEFAULT_KERNEL
from ._results import NoveltySpectrum, ken_from_eigenvalues
from ._routes import DEFAULT_FREQUENCIES, DEFAULT_REPLICATES, ROUTES, Factor, choose_route, make_factor

__all__ = ["novelty_spectrum", "missing_modes", "top_mode_items"]


def _check_common(X, Y, eta, method, n_frequencies, replicates):
    """Shared validation: the two sets (dense, same d), eta > 0, the route name, the sketch sizes."""
    X, Y = check_sets(X, Y, names=("X (candidate)", "Y (reference)"))
    eta = check_scalar(eta, "eta", float, min_val=0.0, include_boundaries="neither")
    check_option(method, ROUTES, "method")
    n_frequencies = check_scalar(n_frequencies, "n_frequencies", int, min_val=2)
    replicates = check_scalar(replicates, "replicates", int, min_val=2, max_val=n_frequencies)
    return X, Y, eta, n_frequencies, replicates


def _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng):
    """Validated sets, eta, the resolved kernel (fixed on both sets pooled) and the route's factor."""
    X, Y, eta, n_frequencies, replicates = _check_common(X, Y, eta, method, n_frequencies, replicates)
    gen = check_random_state(rng)
    kern = resolve_kernel(kernel, kernel_params, X, Y, rng=gen)
    route = choose_route(method, kern, X, Y)
    factor = make_factor(route, kern, X, Y, n_frequencies=n_frequencies, replicates=replicates, rng=gen)
    return X, Y, eta, kern, factor, gen


def novelty_spectrum(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    eta: float = 1.0,
    method: str = "auto",
    n_modes: int = 10,
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    confidence_level: float = 0.95,
    rng=None,
    **kernel_params,
) -> NoveltySpectrum:
    r"""The modes a candidate set X expresses more than :math:`\eta` times as often as a reference Y.

    .. math:: \Lambda_{X|\eta Y} = C_X - \eta\, C_Y, \qquad
              C_X = \tfrac1n \textstyle\sum_i \phi(x_i)\phi(x_i)^\top,\;
              C_Y = \tfrac1m \textstyle\sum_j \phi(y_j)\phi(y_j)^\top

    (the conditional kernel covariance of [1]): its positive eigenvalues are the *novel modes*; for a mixture of well-separated
    components, about :math:`\omega^X_i - \eta\,\omega^Y_i` for each component expressed more by X.
    Its non-zero eigenvalues are those of the (n + m) x (n + m) block matrix

    .. math:: \begin{pmatrix} K_{XX}/n & \sqrt{\eta}\,K_{XY}/\sqrt{nm} \\
              -\sqrt{\eta}\,K_{YX}/\sqrt{nm} & -\eta\,K_{YY}/m \end{pmatrix}

    of [1], computed here as :math:`F^\top \operatorname{diag}(s) F` with F rows of a factor of the
    pooled kernel (:mod:`~diversity_core.differential._routes`) and :math:`s = 1/n` on X, :math:`-\eta/m`
    on Y: a symmetric p x p problem, so no non-symmetric eigensolver is needed.

    Parameters
    ----------
    X : array-like of shape (n, d)
        The candidate (generated) items' features.
    Y : array-like of shape (m, d)
        The reference items' features (same d).
    kernel : str or Kernel, default "cosine"
        Its data-dependent parameters (the rbf median bandwidth) are fixed once on both sets pooled.
    eta : float > 0, default 1
        The novelty weight: modes X expresses more than eta times as often as Y.
    method : {"auto", "dense", "features", "rff"}, default "auto"
        The route: ``"features"`` (the kernel's feature map, exact, O((n + m) d^2)), ``"dense"`` (any
        kernel, exact, O((n + m)^3) time and 40 (n + m)^2 bytes, checked against the memory budget),
        ``"rff"`` (random Fourier features for rbf and laplacian: an estimate, O((n + m) D d + (n + m) D^2)).
        ``"auto"``: features when the feature map's dimension is below n + m, dense up to
        :data:`~diversity_core.differential._routes.DENSE_LIMIT` pooled items, then rff.
    n_modes : int, default 10
        Top eigenvectors whose item loadings are kept (for galleries and :func:`top_mode_items`).
    n_frequencies, replicates : int, default 1024 and 4
        rff only: D frequencies (2D features) and the frequency groups whose spread gives the sketch's
        standard errors.
    confidence_level : float, default 0.95
        rff only: level of the sketch's intervals.
    rng : int or Generator, optional
        Seed of the kernel's pooled sample and the Fourier frequencies.
    **kernel_params
        e.g. ``sigma=0.5`` for rbf.

    Returns
    -------
    NoveltySpectrum
        Every eigenvalue (descending), the top modes' loadings on both sets, shares, KEN
        (``.ken``), the route and whether exact.

    Raises
    ------
    DiversityInputError
        Bad sets or options; a route the kernel cannot take.
    MemoryBudgetError
        The dense route's matrices over the memory budget.

    Notes
    -----
    Loadings :math:`\langle\phi(x), v_j\rangle` are exact inner products with the unit eigenvector
    (the X-part of the block form's eigenvector, rescaled); each mode is signed so that its X loadings
    sum to a non-negative number, as in the reference code. On the rff route the t-intervals cover
    the sketch's random spread (frequencies split into ``replicates`` groups; each group's spectrum
    is an independent sketch of D / replicates frequencies, and the full sketch's error is taken as
    their standard deviation over :math:`\sqrt{\text{replicates}}`); the sketch's bias, of order 1/D,
    is not in them. The eigenvalues of the sketch differ from the exact ones by at most
    :math:`2\sqrt{1+\eta}\,\lVert \hat K_f - K_f\rVert_2^{1/2}` (Weyl on
    :math:`K_f^{1/2} D K_f^{1/2}`, with :math:`K_f` the block form's PSD part, trace 1 + eta),
    and :math:`\lVert \hat K_f - K_f\rVert_2 = O(\sqrt{\log(n+m)/D})` with high probability.

    References
    ----------
    [1] J. Zhang, C. T. Li, F. Farnia. An Interpretable Evaluation of Entropy-based Novelty of
        Generative Models. ICML 2024 (arXiv:2402.17287).
    [2] J. Zhang, M. Jalali, C. T. Li, F. Farnia. Identification of Novel Modes in Generative Models
        via Fourier-based Differential Clustering (FINC), 2024.

    Examples
    --------
    >>> import numpy as np
    >>> R = np.eye(4)[[0, 1, 0, 1]]                 # two modes
    >>> G = np.eye(4)[[0, 1, 2, 2]]                 # the same two, and a new one
    >>> spec = novelty_spectrum(G, R, kernel="linear")
    >>> round(float(spec.eigenvalues[0]), 6), [int(i) for i in spec.top_items(0, 2)]
    (0.5, [3, 2])
    """
    n_modes = check_scalar(n_modes, "n_modes", int, min_val=1)
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    X, Y, eta, kern, factor, _ = _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng)
    return _novelty(factor, 0, eta, n_modes, level, kern.to_dict())


def missing_modes(
    X,
    Y,
    *,
    kernel=DEFAULT_KERNEL,
    eta: float = 1.0,
    method: str = "auto",
    n_modes: int = 10,
    n_frequencies: int = DEFAULT_FREQUENCIES,
    replicates: int = DEFAULT_REPLICATES,
    confidence_level: float = 0.95,
    rng=None,
    **kernel_params,
) -> NoveltySpectrum:
    r"""The modes the reference Y expresses more than :math:`\eta` times as often as the candidate X.

    The spectrum of :math:`C_Y - \eta\, C_X`: :func:`novelty_spectrum` with the roles swapped (same
    parameters, same routes and cost). The result's ``role`` is ``"missing"``, its modes belong to
    the reference (``top_items`` picks reference items by default), and ``loadings_generated`` /
    ``loadings_reference`` keep their names.

    Returns
    -------
    NoveltySpectrum

    Examples
    --------
    >>> import numpy as np
    >>> R = np.eye(3)[[0, 1, 2, 2]]                 # three modes
    >>> G = np.eye(3)[[0, 1, 0, 1]]                 # the third is missing
    >>> spec = missing_modes(G, R, kernel="linear")
    >>> round(float(spec.eigenvalues[0]), 6), sorted(int(i) for i in spec.top_items(0, 2))
    (0.5, [2, 3])
    """
    n_modes = check_scalar(n_modes, "n_modes", int, min_val=1)
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    X, Y, eta, kern, factor, _ = _prepare(X, Y, kernel, kernel_params, eta, method, n_frequencies, replicates, rng)
    return _novelty(factor, 1, eta, n_modes, level, kern.to_dict())


def top_mode_items(result: NoveltySpectrum, mode: int, k: int, *, side: Optional[str] = None) -> np.ndarray:
    """The ``k`` items that load most on mode ``mode``: the gallery of a novel or missing mode.

    The rule of the Spectrum page's galleries (:meth:`Spectrum.eigenvector_ends
    <diversity_core.spectrum.Spectrum.eigenvector_ends>`, the "largest entries" end), applied to the
    signed loadings :math:`\\langle\\phi(x), v_j\\rangle` of the owning set (the candidate's items for a
    novel mode, the reference's for a missing one; ``side="generated"`` or ``"reference"`` picks the
    other set's items that look most like the mode). At most half of the set's items are returned.

    Returns
    -------
    ndarray of int
        Row indices into that set, largest loading first.
    """
    if not isinstance(result, NoveltySpectrum):
        from ..exceptions import DiversityInputError

        raise DiversityInputError(f"result must be a NoveltySpectrum; got {type(result).__name__}.")
    k = check_scalar(k, "k", int, min_val=1)
    return result.top_items(int(mode), k, side=side)


# ---------------------------------------------------------------------------------------
# private compute
# ---------------------------------------------------------------------------------------
def _difference(factor: Factor, own: int, eta: float, moments=None) -> tuple:
    """``(Lambda, C_own)``: the p x p matrix C_own - eta C_other (symmetrised) and C_own."""
    C0, C1 = moments if moments is not None else (factor.moments(0), factor.moments(1))
    C_own, C_other = (C0, C1) if own == 0 else (C1, C0)
    L = C_own - eta * C_other
    return 0.5 * (L + L.T), C_own


def _top_modes(L: np.ndarray, k: int) -> tuple:
    """``(all eigenvalues descending, the top-k unit eigenvectors)`` of a symmetric p x p matrix.

    Every eigenvalue without vectors (KEN needs the positive ones), then only the k top vectors
    (LAPACK's MRRR driver on the same tridiagonal form): about a third of a full decomposition's work.
    """
    p = L.shape[0]
    w = sla.eigvalsh(L, check_finite=False)[::-1]
    k = min(k, p)
    _, V = sla.eigh(L, subset_by_index=[p - k, p - 1], driver="evr", check_finite=False)
    return w, np.ascontiguousarray(V[:, ::-1])


def _novelty(factor: Factor, own: int, eta: float, n_modes: int, level: float, kernel: dict,
             moments=None) -> NoveltySpectrum:
    """The spectrum of C_own - eta C_other on a factor, its top loadings and, for a sketch, replicate errors."""
    return _novelties(factor, (own,), eta, n_modes, level, kernel, moments)[0]


def _novelties(factor: Factor, owns: tuple, eta: float, n_modes: int, level: float, kernel: dict,
               moments=None) -> list:
    """:func:`_novelty` for each role in ``owns``, the loadings of all in one pass over each set's rows."""
    if moments is None:
        moments = (factor.moments(0), factor.moments(1))
    parts = []
    for own in owns:
        L, C_own = _difference(factor, own, eta, moments)
        w, V = _top_modes(L, n_modes)
        parts.append((own, L, C_own, w, V))
    Vall = np.hstack([V for *_, V in parts])
    loads = (factor.project(0, Vall), factor.project(1, Vall))
    n, m = factor.sizes()
    out, col = [], 0
    for own, L, C_own, w, V in parts:
        k = V.shape[1]
        own_load = loads[own][:, col:col + k].copy()
        other_load = loads[1 - own][:, col:col + k].copy()
        col += k
        flip = own_load.sum(axis=0) < 0
        own_load[:, flip] *= -1.0
        other_load[:, flip] *= -1.0
        gen_load, ref_load = (own_load, other_load) if own == 0 else (other_load, own_load)
        eig_se = ken_se = df = None
        settings = dict(factor.settings)
        if not factor.exact:
            eig_se, ken_se, df = _sketch_errors(L, factor.settings["n_frequencies"], factor.settings["replicates"], k)
        settings.update({"n_generated": int(n), "n_reference": int(m)})
        out.append(NoveltySpectrum(
            eigenvalues=_ro(w), loadings_generated=_ro(gen_load), loadings_reference=_ro(ref_load),
            role="novel" if own == 0 else "missing", eta=float(eta), method=factor.route, exact=factor.exact,
            mass=float(np.trace(C_own)), dim=int(w.size), kernel=kernel,
            eigenvalue_se=None if eig_se is None else _ro(eig_se), ken_se=ken_se, df=df, confidence_level=level,
            settings=settings,
        ))
    return out


def _sketch_errors(L: np.ndarray, D: int, r: int, k: int) -> tuple:
    """Standard errors of the top-k eigenvalues and of KEN from r disjoint groups of the D frequencies.

    The sketch's columns are ``[cos(x W), sin(x W)] / sqrt(D)``; group g's frequencies J_g give the
    independent sketch with D/r frequencies whose difference matrix is ``(D/|J_g|) L[I_g, I_g]``
    (I_g = J_g and D + J_g). The full sketch averages the groups' kernels, so its error is estimated
    as the groups' standard deviation over sqrt(r) (r - 1 degrees of freedom).
    """
    groups = np.array_split(np.arange(D), r)
    tops = np.full((r, k), np.nan)
    kens = np.empty(r)
    for g, J in enumerate(groups):
        idx = np.concatenate([J, D + J])
        Lg = (D / J.size) * L[np.ix_(idx, idx)]
        wg = sla.eigvalsh(Lg, check_finite=False)[::-1]
        kk = min(k, wg.size)
        tops[g, :kk] = wg[:kk]
        kens[g] = ken_from_eigenvalues(wg, wg.size)
    eig_se = np.full(k, np.nan)
    ok = np.isfinite(tops).sum(axis=0) >= 2  # a group of few frequencies has fewer than k eigenvalues
    eig_se[ok] = np.nanstd(tops[:, ok], axis=0, ddof=1) / math.sqrt(r)
    return eig_se, float(kens.std(ddof=1) / math.sqrt(r)), float(r - 1)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a
