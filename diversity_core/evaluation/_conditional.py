r"""Diversity per prompt: within-prompt Vendi scores, and the conditional and information Vendi scores.

The scores of Jalali et al. (2024), at any order q.

With an item kernel :math:`K_X` and a prompt kernel :math:`K_T` on the same n (item, prompt)
pairs, both with unit diagonal, the kernel (matrix-based Renyi) entropy of order q is
:math:`H_q(K) = \frac{1}{1-q}\log\sum_i \lambda_i^q`, :math:`\lambda_i` the eigenvalues of
:math:`K / n` (the von Neumann entropy :math:`-\sum_i \lambda_i \log \lambda_i` at q = 1; so
:math:`\mathrm{VS}_q = \exp H_q`), and

.. math::

    H_q(X, T) = H_q(K_X \odot K_T),\qquad H_q(X \mid T) = H_q(X, T) - H_q(T),\qquad
    I_q(X; T) = H_q(X) + H_q(T) - H_q(X, T)

(the joint kernel is the Hadamard product; Jalali et al., Eqs. (6)-(8), at q = 1; other orders
use the same definitions with the matrix-based Renyi entropies of Sanchez Giraldo, Rao &
Principe 2015, which define the joint entropy of the normalised Hadamard product and the
conditional entropy and mutual information as these differences, for every order). The
conditional Vendi score :math:`\exp H_q(X\mid T)` is the diversity left
once the prompt is known (the *internal* diversity a model adds per prompt); the information
Vendi score :math:`\exp I_q(X;T)` the part explained by the prompts.

Prompt labels (categorical): :math:`K_T[i, j] = 1` when items i and j share a prompt, else 0.
Then :math:`K_X \odot K_T` is block-diagonal (one block per prompt), its spectrum is the union of
the blocks' spectra scaled by the prompts' shares :math:`p_t`, and the spectrum of :math:`K_T/n`
is the shares themselves, so

.. math:: H_q(X \mid T) = \frac{1}{1-q}\log\frac{\sum_t p_t^q\, e^{(1-q) H_q(X_t)}}{\sum_t p_t^q},
    \qquad H_1(X \mid T) = \sum_t p_t\, H_1(X_t)

with :math:`H_q(X_t)` the entropy of prompt t's items alone: every block takes the dual path, and
the entropies are taken on the union of the scaled spectra.
Prompt features: the n x n joint kernel (dense), or its explicit feature map (the row-wise
Kronecker product of both maps, dimension :math:`d_X d_T`) when that is smaller than n and the
dense kernel does not fit the memory budget.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .._config import check_memory, fits_memory
from .._orders import parse_q
from .._stats import t_interval
from .._validation import check_features, check_scalar
from ..entropy import vendi_from_eigenvalues
from ..exceptions import DiversityInputError
from ..kernels import get_kernel
from ..spectrum import compute_spectrum, spectrum_from_kernel
from ._results import ConditionalVendiResult, Estimate

__all__ = ["conditional_vendi"]


def _entropy(spec, q: float = 1.0) -> float:
    """Kernel entropy of order q (nats) of a spectrum: log VS_q (von Neumann at q = 1)."""
    return float(math.log(spec.vendi(q)))


def check_prompts(prompts, n: int):
    """``("labels", labels as str array)`` or ``("features", validated matrix)``."""
    arr = prompts if isinstance(prompts, np.ndarray) else np.asarray(prompts, dtype=object)
    if arr.ndim == 2 and arr.dtype != object:
        P = check_features(arr, name="prompts", min_samples=1)
        if P.shape[0] != n:
            raise DiversityInputError(f"prompts must have one row per item: expected {n}, got {P.shape[0]}.")
        return "features", P
    if arr.ndim != 1:
        raise DiversityInputError(
            f"prompts must be one label per item (1-D) or prompt features (2-D numeric); got shape {arr.shape}."
        )
    if arr.shape[0] != n:
        raise DiversityInputError(f"prompts must have one label per item: expected {n}, got {arr.shape[0]}.")
    labels = np.array([str(v) for v in arr.tolist()], dtype=object)
    return "labels", labels


def _by_labels(X, labels, kern, level, q):
    """Entropies and within-prompt scores for categorical prompts (block-diagonal joint kernel)."""
    n = X.shape[0]
    names, inverse, counts = np.unique(labels.astype(str), return_inverse=True, return_counts=True)
    p = counts / n
    h_blocks = np.empty(names.size)
    joint = []  # the joint spectrum: each block's support scaled by its prompt's share
    per_prompt = {}
    for t, name in enumerate(names):
        rows = np.flatnonzero(inverse == t)
        if rows.size == 1:
            h, support = 0.0, np.ones(1)
        else:
            spec = compute_spectrum(X[rows], kernel=kern)
            h, support = _entropy(spec, q), spec.support
        h_blocks[t] = h
        joint.append(p[t] * support)
        per_prompt[str(name)] = {"n": int(rows.size), "vendi": float(math.exp(h))}
    if q == 1.0:  # exactly: H(X|T) = sum_t p_t H(X_t), H(T) the Shannon entropy of the shares
        h_t = float(-(p * np.log(p)).sum())
        h_cond = float((p * h_blocks).sum())
        h_xt = h_cond + h_t
    else:
        h_t = float(math.log(vendi_from_eigenvalues(p, q, normalized=True)))
        h_xt = float(math.log(vendi_from_eigenvalues(np.concatenate(joint), q, normalized=True)))
        h_cond = h_xt - h_t
    vs = np.exp(h_blocks)
    if names.size >= 2:
        mean, lo, hi = t_interval(vs, level)
        se = float(vs.std(ddof=1) / math.sqrt(vs.size))
        within = Estimate(mean, se=se, ci_low=lo, ci_high=hi, df=float(vs.size - 1), level=level, interval="prompts")
    else:
        within = Estimate(float(vs[0]))
    return h_t, h_xt, h_cond, within, per_prompt, int(names.size)


def _joint_by_features(X, P, kern, pkern, q):
    """H_q(T) and H_q(X, T) for prompt features: dense joint kernel, or the Kronecker feature map."""
    n = X.shape[0]
    spec_t = compute_spectrum(P, kernel=pkern)
    h_t = _entropy(spec_t, q)
    dual_dim = None
    if kern.has_feature_map and pkern.has_feature_map:
        Fx = np.asarray(kern.features(X, check_input=False), dtype=np.float64)
        Ft = np.asarray(pkern.features(P, check_input=False), dtype=np.float64)
        dual_dim = Fx.shape[1] * Ft.shape[1]
    if dual_dim is not None and dual_dim < n and not fits_memory(2.0 * n * n * 8):
        check_memory(float(n) * dual_dim * 8, what=f"the {n} x {dual_dim} joint feature map",
                     hint="Give prompt labels instead of prompt features (exact, per prompt).")
        F = (Fx[:, :, None] * Ft[:, None, :]).reshape(n, dual_dim)
        h_xt = _entropy(compute_spectrum(F, kernel="linear"), q)
    else:
        check_memory(3.0 * n * n * 8, what=f"the {n} x {n} joint kernel of items and prompts",
                     hint="Give prompt labels instead of prompt features (exact, per prompt).")
        K = kern.gram(X, check_input=False)
        K *= pkern.gram(P, check_input=False)
        h_xt = _entropy(spectrum_from_kernel(K), q)
    return h_t, h_xt, spec_t.rank


def conditional_vendi(
    X,
    prompts,
    *,
    kernel="cosine",
    prompt_kernel="cosine",
    q: float = 1.0,
    confidence_level: float = 0.95,
    **kernel_params,
) -> ConditionalVendiResult:
    r"""Diversity given the prompt: conditional and information Vendi scores, and the within-prompt mean.

    .. math::

        \mathrm{VS}_q(X \mid T) = \exp\big(H_q(K_X \odot K_T) - H_q(K_T)\big),\qquad
        \mathrm{VS}_q(X; T) = \exp\big(H_q(K_X) + H_q(K_T) - H_q(K_X \odot K_T)\big)

    with :math:`H_q(K) = \frac{1}{1-q}\log\mathrm{tr}\,(K/n)^q` the kernel entropy of order q
    (the von Neumann entropy :math:`-\mathrm{tr}\,(K/n) \log (K/n)` at q = 1; Jalali et al. 2024,
    Eqs. (6)-(8); module docstring for the categorical case).

    Parameters
    ----------
    X : array-like of shape (n, d)
        The generated items.
    prompts : array-like of shape (n,) or (n, d_T)
        Each item's prompt or condition: labels (anything, compared as strings), or prompt
        features (then ``prompt_kernel`` compares them).
    kernel : str or Kernel, default "cosine"
        Item kernel (unit diagonal: cosine, rbf, laplacian, tanimoto, ...).
    prompt_kernel : str or Kernel, default "cosine"
        Kernel on prompt features (ignored for labels).
    q : float or "inf", default 1
        Order of every entropy and Vendi score (the within-prompt scores too).
    confidence_level : float, default 0.95
        Of the within-prompt mean's Student-t interval over prompts.
    **kernel_params
        Item kernel parameters.

    Returns
    -------
    ConditionalVendiResult

    Raises
    ------
    DiversityInputError
        Bad X, prompts of the wrong length or shape.
    MemoryBudgetError
        Prompt features whose joint kernel (n x n) and joint feature map both exceed the budget.

    Notes
    -----
    Identities (tested, at every order q): one prompt for all items gives
    :math:`H(X\mid T) = H(X)` and :math:`I = 0`; items determined by their prompts
    (:math:`K_X = K_T`, labels) give :math:`H(X\mid T) = 0`; distinct orthogonal prompts (one per
    item) give :math:`H(X, T) = H(T) = \log n`, so :math:`H(X\mid T) = 0` and :math:`I = H(X)`;
    independent prompts (every item under every prompt: the joint kernel is a Kronecker product,
    whose entropies add) give :math:`I = 0`.
    Cost (labels): one spectrum per prompt, O(n_t d^2) each with a feature map. The
    within-prompt mean depends on the prompts' sizes (the Vendi score grows with n): compare
    models on the same prompts with the same number of items per prompt.

    References
    ----------
    .. [1] M. Jalali, A. Ospanov, A. Gohari, F. Farnia, "Conditional Vendi Score: An
       Information-Theoretic Approach to Diversity Evaluation of Prompt-based Generative
       Models", 2024.
    .. [2] L. G. Sanchez Giraldo, M. Rao, J. C. Principe, "Measures of Entropy From Data Using
       Infinitely Divisible Kernels", IEEE Trans. Inf. Theory 61(1), 2015.

    Examples
    --------
    >>> import numpy as np
    >>> r = conditional_vendi(np.eye(4), ["a", "a", "b", "b"])
    >>> round(r.conditional_vendi, 6), round(r.information_vendi, 6)   # 2 items per prompt, 2 prompts
    (2.0, 2.0)
    """
    kern = get_kernel(kernel, **kernel_params)
    Xv = kern.validate(X)
    n = Xv.shape[0]
    kern = kern.resolve(Xv)
    level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                         include_boundaries="neither")
    qv = parse_q(q)
    kind, prompts_v = check_prompts(prompts, n)
    h_x = _entropy(compute_spectrum(Xv, kernel=kern), qv)
    within: Optional[Estimate]
    if kind == "labels":
        h_t, h_xt, h_cond, within, per_prompt, n_prompts = _by_labels(Xv, prompts_v, kern, level, qv)
        pname = "categorical"
    else:
        pkern = get_kernel(prompt_kernel)
        P = pkern.validate(prompts_v)
        pkern = pkern.resolve(P)
        h_t, h_xt, n_prompts = _joint_by_features(Xv, P, kern, pkern, qv)
        h_cond = h_xt - h_t
        within, per_prompt = None, {}
        pname = pkern.describe()
    mi = h_x + h_t - h_xt
    return ConditionalVendiResult(
        h_items=h_x, h_prompts=h_t, h_joint=h_xt, h_conditional=h_cond, mutual_information=mi,
        vendi=math.exp(h_x), conditional_vendi=math.exp(h_cond), information_vendi=math.exp(mi),
        within_prompt=within, per_prompt=per_prompt, n_prompts=n_prompts, prompt_kernel=pname, n=int(n),
        q=float(qv),
    )
