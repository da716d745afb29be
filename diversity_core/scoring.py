r"""Vendi scores and IntDiv of a dataset, overall and per group, on the exact path the policy picks.

:func:`score_groups` is the one per-group scoring function of the CLI (``diversity score``) and
the app (the Scores page's per-group table). The kernel is fixed once on all items (e.g. the
weighted median-distance bandwidth, as :func:`~diversity_core.spectrum.compute_spectrum` fixes
it), so that the groups' scores compare; each group then takes the exact path
:func:`~diversity_core.approx.plan_scores` picks for its size: the dense or dual spectrum (every
order from one eigendecomposition), the dual path streamed from a source, VS_2 alone by blocks
of K when only q = 2 is asked, or VS_inf (and VS_2) from the top eigenvalue by Lanczos when only
q = inf (or q = 2 and inf) is asked, past the measured crossovers or the dense limit. IntDiv comes
out of the same pass where it can (:math:`1 - \|\Phi^T p\|^2` from the dual moments, or the
blocked pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._orders import check_q, q_key
from ._progress import ProgressCallback
from ._validation import check_option, check_weights
from .approx._results import VendiBounds
from .approx.bounds import vendi_bounds
from .approx.plan import plan_scores
from .baselines import _intdiv
from .blocked import VS2Result, vendi_2_exact
from .exceptions import DiversityInputError
from .kernels import get_kernel
from .sources import RowSource, as_source
from .spectrum import Spectrum, _compute_spectrum, _resolve_from_source

__all__ = ["GroupScore", "score_groups", "SMALL_GROUPS"]

#: What :func:`score_groups` does with a group of fewer than 2 items.
SMALL_GROUPS = ("raise", "skip")


@dataclass(frozen=True)
class GroupScore:
    """The scores of one group (or of all items, group ``"all"``).

    Attributes
    ----------
    group : str
    n : int
        Items in the group.
    method : {"dense", "dual", "blocked", "lanczos"}
        The path: a spectrum (dense or dual), exact VS_2 by blocks, or exact VS_inf and VS_2 from the
        top eigenvalue by Lanczos (no spectrum).
    execution : {"in-memory", "streamed", "dask"}
    intdiv : float
        IntDiv under the same kernel.
    kernel : dict
        The resolved kernel (the same for every group).
    spectrum : Spectrum or None
        The group's spectrum (every order, O(n) each); None on the blocked path.
    blocked : VS2Result or None
        The blocked path's result (VS_2, and the bounds it implies on VS_inf).
    top : VendiBounds or None
        The Lanczos path's result: the top eigenvalue of rho (``top_eigenvalues[0]``, VS_inf = its
        inverse) within ``tolerance``, and the purity (VS_2 = its inverse).
    """

    group: str
    n: int
    method: str
    execution: str
    intdiv: float
    kernel: dict
    spectrum: Optional[Spectrum] = None
    blocked: Optional[VS2Result] = None
    top: Optional[VendiBounds] = None

    @property
    def rank(self) -> Optional[int]:
        """Eigenvalues in the support (VS_0), or None on the blocked and Lanczos paths."""
        return None if self.spectrum is None else self.spectrum.rank

    @property
    def vs_inf_bounds(self) -> Optional[tuple[float, float]]:
        """``(sqrt(VS_2), VS_2)`` around VS_inf on the blocked path, else None (VS_inf is exact)."""
        return None if self.blocked is None else (self.blocked.vs_inf_lower, self.blocked.vs_inf_upper)

    @property
    def vs_inf_interval(self) -> Optional[tuple[float, float]]:
        """On the Lanczos path the interval certain to hold VS_inf (the solver's tolerance), else None."""
        if self.top is None:
            return None
        low, high = self.top.bounds_at(np.inf)
        return float(low[0]), float(high[0])

    def vendi(self, q) -> float:
        """VS_q of the group; on the blocked path only q = 2 is known, on the Lanczos path q = 2 and inf."""
        if self.spectrum is not None:
            return self.spectrum.vendi(q)
        value = float(check_q(q).ravel()[0])
        if self.top is not None:
            if value == 2.0:
                return 1.0 / self.top.purity
            if value == np.inf:
                return 1.0 / float(self.top.top_eigenvalues[0])
            raise DiversityInputError(
                f"group {self.group!r} was scored from its top eigenvalue (Lanczos), which gives VS_inf and "
                f"VS_2 exactly and no other order; got q = {q_key(value)}. Ask for the other orders too (a "
                "spectrum)."
            )
        if value != 2.0:
            raise DiversityInputError(
                f"group {self.group!r} was scored by blocks, which give VS_2 exactly and no other order; got "
                f"q = {q_key(value)}. Ask for the other orders too (a spectrum), or raise the memory budget."
            )
        return self.blocked.vs2

    def to_dict(self, qs) -> dict[str, Any]:
        """JSON-ready row with VS_q at ``qs`` (keys :func:`~diversity_core._orders.q_key`)."""
        row = {"group": self.group, "n": self.n, "method": self.method, "execution": self.execution,
               "rank": self.rank, "vendi": {q_key(q): self.vendi(q) for q in np.atleast_1d(check_q(qs)).ravel()}}
        if self.blocked is not None:
            row["vs_inf_bounds"] = list(self.vs_inf_bounds)
        if self.top is not None:
            row["vs_inf_interval"] = list(self.vs_inf_interval)
        row.update(intdiv=self.intdiv, kernel=self.kernel)
        return row


def score_groups(
    X,
    groups=None,
    *,
    kernel="cosine",
    qs=None,
    weights=None,
    method: str = "auto",
    device: str = "cpu",
    include_all: bool = True,
    small_groups: str = "raise",
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> list[GroupScore]:
    r"""Vendi scores and IntDiv of all items and of each group, the kernel fixed once on all items.

    .. math:: \mathrm{VS}_q(G) = \exp H_q\big(\mathrm{eig}(\rho_G)\big), \qquad
              \rho_G = \mathrm{diag}(\sqrt{p_G})\, K_G\, \mathrm{diag}(\sqrt{p_G}), \qquad
              \mathrm{IntDiv}(G) = 1 - p_G^T K_G\, p_G

    with :math:`K_G` the kernel on the items of group G and :math:`p_G` their weights
    renormalised within the group.

    Parameters
    ----------
    X : array-like of shape (n, d), sparse matrix, RowSource, dask.array.Array or path
        Items. A source or a Dask array is streamed (all items together: no groups).
    groups : array-like of shape (n,), optional
        Each item's group label (compared as text); groups in order of first appearance.
    kernel : str or Kernel, default "cosine"
        Resolved once on all items (weighted), then shared by every group.
    qs : orders, optional
        The orders the caller will read; when they are all 2, a group of at least
        :data:`~diversity_core.approx.plan.BLOCKED_FROM` items (or beyond the dense limit) under a
        kernel without a usable dual path is scored by blocks (VS_2 only); when they are inf, or 2
        and inf, from its top eigenvalue by Lanczos from
        :data:`~diversity_core.approx.plan.LANCZOS_FROM` items (or beyond the dense limit). Default:
        every order (a spectrum per group).
    weights : array-like of shape (n,), optional
    method : {"auto", "dense", "dual"}, default "auto"
    device : {"cpu", "cuda", "auto"}, default "cpu"
    include_all : bool, default True
        Whether the first result is all items together (group ``"all"``).
    small_groups : {"raise", "skip"}, default "raise"
        A group of fewer than 2 items: a :class:`DiversityInputError`, or left out.
    progress : callable, optional
        ``progress(done, total, message)`` of each part's pass.
    **kernel_params
        e.g. ``sigma=0.5``.

    Returns
    -------
    list of GroupScore

    Raises
    ------
    DiversityInputError
        Bad data, weights or options; groups with a streamed source; a group of one item.
    MemoryBudgetError
        A group has no exact path within the memory budget (the message names the options).

    Notes
    -----
    Cost: the sum over the parts of their path's cost (dual O(n d^2), dense O(n^3), blocked
    O(n^2 d), Lanczos O(n^2 d) to form the operator and a few tens of O(n^2) products); the paths
    follow :func:`~diversity_core.approx.plan_scores`, one plan per group.

    Examples
    --------
    >>> import numpy as np
    >>> rows = score_groups(np.eye(4), ["a", "a", "b", "b"], qs=[1.0])
    >>> [(r.group, round(r.vendi(1.0), 9)) for r in rows]
    [('all', 4.0), ('a', 2.0), ('b', 2.0)]
    """
    check_option(small_groups, SMALL_GROUPS, "small_groups")
    check_option(method, ("auto", "dense", "dual"), "method")
    qs = None if qs is None else check_q(qs).ravel()
    kern = get_kernel(kernel, **kernel_params)
    # arrays (memmaps included) are read and may be split into groups; sources and Dask arrays stream
    source = None if isinstance(X, np.ndarray) else as_source(X)
    if isinstance(source, RowSource) and source.in_memory:
        X, source = source.read(), None
    if source is not None:
        if groups is not None:
            raise DiversityInputError("streamed or Dask data are scored all together; drop the groups, or load "
                                      "the rows into memory.")
        p = check_weights(weights, source.n)
        kern = _resolve_from_source(kern, source, p)
        return [_score_part("all", source, weights, kern, qs, method, device, progress, streamed=True)]
    X = kern.validate(X)
    n = X.shape[0]
    p = check_weights(weights, n)
    kern = kern.resolve(X, p)  # the weighted bandwidth of compute_spectrum, fixed for every group
    return _score_groups(X, groups, weights, kern, qs, method, device, include_all, small_groups, progress)


def _score_groups(X, groups, weights, kern, qs, method, device, include_all, small_groups, progress) -> list:
    """:func:`score_groups` on validated X and a resolved kernel."""
    n = X.shape[0]
    parts = [("all", np.arange(n))] if include_all else []
    if groups is not None:
        labels = np.asarray(groups).astype(str)
        if labels.shape != (n,):
            raise DiversityInputError(f"groups must hold one label per item ({n}); got shape {labels.shape}.")
        parts += [(g, np.flatnonzero(labels == g)) for g in dict.fromkeys(labels.tolist())]
    out = []
    for name, idx in parts:
        if idx.size < 2:
            if small_groups == "skip":
                continue
            raise DiversityInputError(f"group {name!r} has {idx.size} item(s); each group needs at least 2.")
        whole = idx.size == n
        # a precomputed K is indexed on both sides; features by their rows
        Xg = X if whole else (X[np.ix_(idx, idx)] if kern.name == "precomputed" else X[idx])
        wg = None if weights is None else (weights if whole else np.asarray(weights)[idx])
        out.append(_score_part(name, Xg, wg, kern, qs, method, device, progress, streamed=False))
    return out


def _score_part(name, X, weights, kern, qs, method, device, progress, *, streamed: bool) -> GroupScore:
    """One part's scores on the path of its plan (validated X or a source; resolved kernel)."""
    n, d = (X.n, X.d) if streamed else X.shape
    plan = plan_scores(n, d, kernel=kern, q=qs, weighted=weights is not None, method=method, streamed=streamed)
    if plan.path == "blocked":
        res = vendi_2_exact(X, kernel=kern, weights=weights, method="blocked", progress=progress)
        return GroupScore(group=name, n=res.n, method="blocked", execution=res.execution, intdiv=res.intdiv,
                          kernel=res.kernel, blocked=res)
    if plan.path == "lanczos":
        return _score_top(name, X, weights, kern, progress, streamed=streamed)
    # a feature-map kernel's IntDiv = 1 - ||Phi^T p||^2 comes out of the dual pass itself
    spec, moments = _compute_spectrum(X, kernel=kern, weights=weights, method=plan.method, n_eigenvectors=0,
                                      device=device, progress=progress, kernel_params={}, mean=kern.has_feature_map)
    if moments is not None and moments.mean is not None:
        value = 1.0 - float(moments.mean @ moments.mean)
    elif streamed:
        value = vendi_2_exact(X, kernel=kern, weights=weights, method="blocked").intdiv
    else:
        value = _intdiv(kern, X, check_weights(weights, n))
    return GroupScore(group=name, n=spec.n, method=spec.method, execution=spec.execution, intdiv=value,
                      kernel=spec.kernel, spectrum=spec)


def _score_top(name, X, weights, kern, progress, *, streamed: bool) -> GroupScore:
    """The Lanczos path: VS_inf from the top eigenvalue of rho, VS_2 from the same operator's purity.

    The operator is stored (float64, else float32) when it fits the memory budget, else recomputed
    by blocks at each product (:func:`~diversity_core.approx.vs_inf_exact`); rows of a source are
    read into memory first (the plan checked that they fit).
    """
    if streamed:
        X = kern.validate(X.read())
    n = X.shape[0]
    # VS_2 is the inverse of the purity the operator's construction gives (no further pass)
    top = vendi_bounds(X, kernel=kern, k=[1], q=[2.0, np.inf], weights=weights, method="lanczos", rng=0,
                       progress=progress)
    if top.k < 1:  # two items: Lanczos needs k < n - 1; the dense path is trivial here
        spec = _compute_spectrum(X, kernel=kern, weights=weights, method="dense", n_eigenvectors=0,
                                 device="cpu", progress=progress, kernel_params={})[0]
        return GroupScore(group=name, n=spec.n, method=spec.method, execution=spec.execution,
                          intdiv=_intdiv(kern, X, check_weights(weights, n)), kernel=spec.kernel,
                          spectrum=spec)
    return GroupScore(group=name, n=n, method="lanczos", execution="in-memory",
                      intdiv=_intdiv(kern, X, check_weights(weights, n)), kernel=top.kernel, top=top)
