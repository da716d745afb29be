r"""Per-item contributions to the Vendi scores: exact leave-one-out and its first-order form.

Both forms start from one eigendecomposition of the density matrix
:math:`\rho = \mathrm{diag}(\sqrt p) K \mathrm{diag}(\sqrt p) = \sum_j \lambda_j u_j u_j^T`
(dense path) or of its dual :math:`C = \Phi^T \mathrm{diag}(p) \Phi = \sum_j \lambda_j v_j v_j^T`
(features, no n x n matrix). Write :math:`z_{ij} = \sqrt{\lambda_j}\, u_{ij} = \sqrt{p_i}\, v_j^T \phi_i`
for item i's coordinates in the eigenbasis (the same numbers on both paths), and
:math:`s_i = \sum_j z_{ij}^2 = p_i k(x_i, x_i)` (its share of the trace).

Exact leave-one-out
    Removing item i and renormalising the other weights leaves the density matrix whose
    non-zero eigenvalues are those of :math:`(\Lambda - z_i z_i^T) / (1 - s_i)`: an r x r
    diagonal-minus-rank-one matrix (r = rank of rho). Cost O(n r^3) after the
    decomposition, O(r^2) memory per item.

First order
    Along the path :math:`p(t) = (p - t e_i)/(1 - t)`, :math:`t \in [0, p_i]`, that removes
    item i, first-order perturbation gives
    :math:`d\lambda_j/dt|_{t=0} \cdot p_i = s_i \lambda_j - z_{ij}^2`, and the contribution
    :math:`c_i = \mathrm{VS}_q(\text{all}) - \mathrm{VS}_q(\text{all but } i)` is, to first order,

    .. math::
        c_i^{(1)} = \mathrm{VS}_q \,\frac{q}{1-q}\Big(\frac{\sum_j \lambda_j^{q-1} z_{ij}^2}{\sum_j \lambda_j^q} - s_i\Big),
        \qquad
        c_i^{(1)} = \mathrm{VS}_1 \Big(-\sum_j z_{ij}^2 \log \lambda_j - s_i H_1\Big),
        \qquad
        c_i^{(1)} = \mathrm{VS}_\infty \Big(s_i - \frac{z_{i1}^2}{\lambda_1}\Big)

    for q not in {0, 1, inf}, q = 1 (H_1 the Shannon entropy of the eigenvalues) and q = inf
    (a repeated top eigenvalue gives :math:`\mathrm{VS}_\infty s_i`). O(n r) per order after the
    decomposition. The exact change differs by :math:`O(p_i^2)` (the second-order term of the
    same expansion), so on uniform weights the two agree to O(1/n^2) per item and rank items
    alike. The first-order contributions sum to zero over the items for every q > 0: they
    split the score into items above and below the average. For q = 0 (the rank) the
    derivative vanishes; both forms report 1 for items whose removal lowers the rank, the
    first-order one through the leverage :math:`h_i = \sum_j z_{ij}^2 / \lambda_j = 1`.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._config import check_memory, chunk_rows
from .._progress import ProgressCallback, report
from .._validation import check_option, check_weights
from ..entropy import support_tol, vendi_from_eigenvalues
from ..exceptions import DiversityInputError
from ..spectrum import Spectrum, compute_spectrum
from ._common import DEFAULT_QS, check_qs, one_blas_thread, prepare, readonly
from .results import ContributionResult

__all__ = ["item_contributions", "METHODS", "EXACT_BUDGET"]

METHODS = ("auto", "exact", "first_order")
SPECTRUM_METHODS = ("auto", "dense", "dual")

#: Largest n r^3 (the flops of the leave-one-out eigenvalue problems) ``method="auto"`` spends
#: on the exact form; beyond it the first-order form is used (a few seconds on one core).
EXACT_BUDGET = 2e10


def item_contributions(
    X,
    *,
    kernel="cosine",
    q=DEFAULT_QS,
    weights=None,
    method: str = "auto",
    spectrum_method: str = "auto",
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> ContributionResult:
    r"""Each item's contribution to ``VS_q``: how much the score drops when the item is removed.

    .. math:: c_i(q) = \mathrm{VS}_q(\text{all}) - \mathrm{VS}_q(\text{all but } i)

    with the remaining weights renormalised. Positive: the item adds diversity; negative:
    it is redundant (removing it raises the score, e.g. one of many near-copies).

    Parameters
    ----------
    X : array-like of shape (n, d), or (n, n) with ``kernel="precomputed"``
        Item features, or a kernel matrix.
    kernel : str or Kernel, default "cosine"
        See :func:`diversity_core.kernels.get_kernel`.
    q : float, "inf" or sequence, default (0.5, 1, 2, inf)
        Orders of the Vendi scores.
    weights : array-like of shape (n,), optional
        Item weights (renormalised to probabilities); default uniform.
    method : {"auto", "exact", "first_order"}, default "auto"
        ``"exact"``: leave-one-out from rank-one downdates of the eigendecomposition,
        O(n r^3) with r the rank (r <= d on the dual path). ``"first_order"``: the
        derivative along the item's weight, O(n r) per order. ``"auto"``: exact when
        ``n r^3 <= EXACT_BUDGET`` (2e10: n = 50,000 at d = 64, or n = 375 on the dense path), else first order.
    spectrum_method : {"auto", "dense", "dual"}, default "auto"
        Path of the one eigendecomposition (see :func:`~diversity_core.spectrum.compute_spectrum`);
        the dual path needs no n x n matrix.
    progress : callable, optional
        ``progress(done, total, message)``.
    **kernel_params
        Kernel parameters, e.g. ``sigma=1.0``.

    Returns
    -------
    ContributionResult

    Raises
    ------
    DiversityInputError
        Bad data, weights or options; fewer than two items with positive weight.
    MemoryBudgetError
        The dense path's n x n matrix and eigenvectors exceed the memory budget.

    Notes
    -----
    The formulas, and the relation between the two forms, are in the module docstring
    (:mod:`diversity_core.curation.contributions`) and ``docs/curation.md``. Both forms
    use the eigenvectors, so the dense path costs a full O(n^3) eigendecomposition and two
    n x n matrices; the dual path O(n d^2) and an n x d matrix.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])    # two copies and one other item
    >>> res = item_contributions(X, q=1, method="exact")
    >>> np.round(res.contribution(1), 3)    # VS_1 = 1.89; without a copy 2, without the third item 1
    array([-0.11, -0.11,  0.89])
    """
    check_option(method, METHODS, "method")
    check_option(spectrum_method, SPECTRUM_METHODS, "spectrum_method")
    qs = check_qs(q)
    kern, X = prepare(X, kernel, kernel_params)
    n, d = X.shape
    p = check_weights(weights, n)
    p_full = np.full(n, 1.0 / n) if p is None else p
    if np.count_nonzero(p_full) < 2:
        raise DiversityInputError(
            "leave-one-out contributions need at least two items with positive weight; "
            f"got {np.count_nonzero(p_full)}."
        )
    spec = _spectrum_with_vectors(X, kern, p, spectrum_method, progress)
    return _contributions(spec, p_full, qs, method, weighted=p is not None, progress=progress)


def _spectrum_with_vectors(X, kern, p, spectrum_method: str, progress) -> Spectrum:
    """The spectrum of X with every eigenvector of the support, within the memory budget."""
    n, d = X.shape
    path = spectrum_method
    if path == "auto":
        path = "dual" if (kern.has_feature_map and d < n) else "dense"
    if kern.name == "precomputed":
        path = "dense"
    if path == "dense":
        check_memory(
            2.0 * n * n * 8,
            what=f"the {n} x {n} kernel matrix and its eigenvectors",
            hint="A kernel with a feature map (cosine, linear, probability_product) takes the dual path "
            "with no n x n matrix.",
        )
    else:
        check_memory(2.0 * n * d * 8, what=f"the {n} x {d} eigenvector matrix")
    kwargs = {} if kern.name == "precomputed" else {"method": path}
    spec = compute_spectrum(X, kernel=kern, weights=p, n_eigenvectors=n, progress=progress, **kwargs)
    if spec.eigenvectors is None or spec.eigenvectors.shape[1] < spec.rank:
        # a feature map wider than X (a sum of kernels) can have a rank above d; the dense
        # path has every eigenvector
        check_memory(2.0 * n * n * 8, what=f"the {n} x {n} kernel matrix and its eigenvectors")
        spec = compute_spectrum(X, kernel=kern, weights=p, n_eigenvectors=n, method="dense", progress=progress)
    return spec


def _contributions(
    spec: Spectrum, p: np.ndarray, qs: tuple, method: str, *, weighted: bool,
    progress: Optional[ProgressCallback] = None,
) -> ContributionResult:
    """Contributions from a spectrum with eigenvectors and the normalised weights p; no validation."""
    lam_all = spec.eigenvalues
    r = spec.rank
    lam = np.asarray(lam_all[:r], dtype=np.float64)
    Z = spec.eigenvectors[:, :r] * np.sqrt(lam)
    # the precision the spectrum was formed in: recomputed spectra use its support rule
    eps = spec.eps
    vs = np.asarray(spec.profile(np.asarray(qs)), dtype=np.float64)
    n = Z.shape[0]
    if method == "auto":
        method = "exact" if n * float(r) ** 3 <= EXACT_BUDGET else "first_order"
    if method == "exact":
        # a recomputation on n - 1 items solves an (n-1)-sized dense or a d-sized dual problem
        m_after = n - 1 if spec.method == "dense" else lam_all.size
        values = _leave_one_out(Z, lam, p, qs, vs, eps, m_after, progress)
    else:
        values = _first_order(Z, lam, qs, vs, eps)
    values[p == 0] = 0.0  # an item of weight 0 changes nothing
    readonly(values, vs)
    return ContributionResult(
        values=values, qs=qs, vendi=vs, method=method, n=n, rank=r, spectrum_method=spec.method,
        kernel=spec.kernel, weighted=weighted,
    )


def _vendi_of(mu: np.ndarray, qs: tuple, eps: float, m: int) -> np.ndarray:
    """VS_q of raw eigenvalues by the Spectrum's rules: clip, normalise, drop the round-off, renormalise."""
    mu = np.maximum(mu, 0.0)
    mu = mu / mu.sum()
    support = mu[mu > support_tol(m, mu.max(), eps)]
    return vendi_from_eigenvalues(support / support.sum(), np.asarray(qs), normalized=True)


def _leave_one_out(Z, lam, p, qs, vs, eps, m_after, progress) -> np.ndarray:
    """Exact VS_q(all) - VS_q(all but i): eigenvalues of Lambda - z_i z_i^T for every item, in batches."""
    n, r = Z.shape
    out = np.zeros((n, len(qs)))
    batch = max(1, chunk_rows(r * r, 8, minimum=1))
    base = np.diag(lam)
    with one_blas_thread():
        _loo_batches(Z, base, p, qs, vs, eps, m_after, batch, out, progress)
    return out


def _loo_batches(Z, base, p, qs, vs, eps, m_after, batch, out, progress) -> None:
    """Fill ``out`` batch by batch with VS_q(all) - VS_q(all but i)."""
    n = Z.shape[0]
    for start in range(0, n, batch):
        Zb = Z[start:start + batch]
        M = base[None, :, :] - Zb[:, :, None] * Zb[:, None, :]
        mus = np.linalg.eigvalsh(M)
        for a in range(Zb.shape[0]):
            i = start + a
            if p[i] > 0:
                out[i] = vs - _vendi_of(mus[a], qs, eps, m_after)
        report(progress, min(n, start + batch), n, "leave-one-out spectra")


def _first_order(Z, lam, qs, vs, eps) -> np.ndarray:
    """First-order contributions (module docstring), O(n r) per order."""
    W = Z * Z
    s = W.sum(axis=1)
    log_lam = np.log(lam)
    out = np.empty((Z.shape[0], len(qs)))
    for j, q in enumerate(qs):
        if q == 0:
            # the rank drops exactly when the item alone spans a direction: leverage h_i = 1
            h = (W / lam).sum(axis=1)
            out[:, j] = (h >= 1.0 - math.sqrt(eps)).astype(np.float64)
        elif q == 1:
            H = -float(np.dot(lam, log_lam))
            out[:, j] = vs[j] * (-(W @ log_lam) - s * H)
        elif math.isinf(q):
            repeated = lam.size > 1 and lam[1] >= lam[0] * (1.0 - 1e-9)
            # a repeated top eigenvalue: removing an item cannot lower every copy of it at once
            out[:, j] = vs[j] * s if repeated else vs[j] * (s - W[:, 0] / lam[0])
        else:
            lq = np.exp(q * log_lam)
            out[:, j] = vs[j] * q / (1.0 - q) * ((W @ (lq / lam)) / lq.sum() - s)
    return out
