"""VendiScore: the Vendi score of everything seen since the last reset, batch by batch."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat
from torchmetrics.utilities.distributed import gather_all_tensors

from .._orders import check_q
from ..entropy import computation_eps
from ..exceptions import DiversityInputError
from ..kernels import get_kernel
from ..spectrum import _check_scale, _eigh, _finish, compute_spectrum

#: Kernels whose state is the d x d second-moment matrix (memory independent of n).
FEATURE_KERNELS = ("linear", "cosine")


def as_features(x, name: str = "features") -> torch.Tensor:
    """A detached 2-D floating tensor (one row per item), or a clear error.

    Values are not scanned here (a pass over every batch): NaN and infinite values are reported
    by ``compute``, which validates what it holds.
    """
    t = x.detach() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    if t.ndim == 1:
        t = t.unsqueeze(0)
    if t.ndim != 2:
        raise DiversityInputError(f"{name} must be a 2-D (batch, dim) tensor; got shape {tuple(t.shape)}.")
    if not t.is_floating_point():
        t = t.to(torch.float64)
    return t


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    """``x / ||x||`` row by row at any finite scale (float64; an all-zero row gives NaN, reported by ``compute``).

    Each row is first multiplied by the power of two that brings its largest entry into
    [0.5, 1) (exact), so rows of 1e160 or 1e-300 neither overflow nor underflow their squared
    norm: the same directions as :func:`~diversity_core.kernels.get_kernel`'s cosine feature map.
    """
    _, e = torch.frexp(x.abs().amax(dim=1, keepdim=True))
    half = torch.div(e, 2, rounding_mode="floor")
    x = torch.ldexp(torch.ldexp(x, -half), half - e)  # two steps: 2^-e alone overflows for subnormal rows
    return x / torch.linalg.vector_norm(x, dim=1, keepdim=True)


class VendiScore(Metric):
    r"""Vendi score of order q of every item seen since the last :meth:`reset`.

    .. math:: \mathrm{VS}_q = \exp(H_q(\lambda(C))),\qquad
              C = \frac{1}{\sum_i w_i} \sum_i w_i\, \phi(x_i)\phi(x_i)^T

    For the ``"linear"`` and ``"cosine"`` kernels (:math:`\phi(x) = x` and :math:`x/\lVert x\rVert`)
    the state is the d x d matrix :math:`\sum_i w_i \phi(x_i)\phi(x_i)^T` (float64) and the weight
    total, so memory does not grow with the number of items; its non-zero eigenvalues are those
    of the density matrix (the dual path of :func:`~diversity_core.spectrum.compute_spectrum`),
    and ``compute`` applies the same support threshold and order formula. Any other kernel keeps
    the features (up to ``max_samples``) and calls :func:`~diversity_core.vendi_score` on them.

    Parameters
    ----------
    kernel : str, default "cosine"
        A kernel name of :mod:`diversity_core.kernels`.
    q : float, "inf" or sequence of them, default 1.0
        The order(s); a sequence gives a tensor of scores.
    num_features : int, optional
        The feature dimension d, to allocate the feature kernels' state at once (and to refuse
        batches of another width from the first one). Optional: an empty state takes its size
        from the first batch, or from the other side when states are combined (Notes).
    max_samples : int, default 100000
        Items kept by the kernels without a d x d state; more raise an error.
    **kwargs
        Kernel parameters (e.g. ``sigma=1.0``) and torchmetrics' own options
        (``sync_on_compute``, ``process_group``, ...).

    Notes
    -----
    ``update`` costs one d x d product per batch (O(b d^2), on the features' device, in float64
    whatever their dtype: a float32 value is an exact float64 number, and a float32 product's
    round-off would hide most of the spectrum of an embedding), ``compute`` one d x d
    eigendecomposition with the float64 support threshold. Batched updates give the one-shot
    :func:`~diversity_core.vendi_score` to float64 round-off, for float32 and float64 features
    alike. The cosine kernel takes rows at any finite scale (1e160, 1e-300); the linear kernel's
    products must stay within float64 (values between about 1e-146 and 1e154), else ``compute``
    says so (rescaling X does not change its score). Weights are any finite non-negative numbers
    whose running total stays below 1.8e308.

    Without ``num_features`` the d x d state is empty (0 x 0) until the first batch tells d. An
    empty state counts as zeros of the other side's size wherever states are summed: in
    ``forward`` (the batch value, then the batch added to the running state), in
    ``merge_state`` (either metric may be empty) and in the distributed sync (a process that saw
    no batch first learns d from the others, at the cost of one gather of an integer). States of
    two different sizes d are an error.

    Examples
    --------
    >>> import torch
    >>> m = VendiScore(kernel="cosine", q=1.0)
    >>> m.update(torch.eye(3, dtype=torch.float64)); m.update(torch.eye(3, dtype=torch.float64))
    >>> round(float(m.compute()), 12)
    3.0
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        kernel: str = "cosine",
        q=1.0,
        *,
        num_features: Optional[int] = None,
        max_samples: int = 100_000,
        **kwargs,
    ):
        metric_options = {k: kwargs.pop(k) for k in list(kwargs) if k in _METRIC_OPTIONS}
        super().__init__(**metric_options)
        self.kernel = get_kernel(kernel, **kwargs)
        self.q = q
        self._qs = check_q(q)
        self.max_samples = int(max_samples)
        if self.max_samples < 2:
            raise DiversityInputError(f"max_samples must be at least 2; got {max_samples!r}.")
        self.constant_memory = self.kernel.name in FEATURE_KERNELS
        if num_features is not None and not (
            isinstance(num_features, (int, np.integer))
            and not isinstance(num_features, bool)
            and num_features > 0
        ):
            raise DiversityInputError(
                f"num_features must be a positive integer (the feature dimension d) or None; got {num_features!r}."
            )
        if self.constant_memory:
            d = 0 if num_features is None else int(num_features)
            self.add_state(
                "second_moment", default=torch.zeros((d, d), dtype=torch.float64), dist_reduce_fx="sum"
            )
            self.add_state("weight_total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
            # the largest |value| seen (NaN or inf when such values arrived): tells compute why a state
            # is not finite, without a per-batch scan and sync
            self.add_state("max_abs", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="max")
        else:
            self.add_state("features", default=[], dist_reduce_fx="cat")
            self.add_state("weights", default=[], dist_reduce_fx="cat")
        self.add_state("n_items", default=torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("n_weighted", default=torch.zeros((), dtype=torch.int64), dist_reduce_fx="sum")

    def update(self, features, weights=None) -> None:
        """Add a batch of items: ``features`` (batch, d), optional non-negative ``weights`` (batch,)."""
        x = as_features(features)
        w = None
        if weights is not None:
            w = torch.as_tensor(weights, dtype=torch.float64, device=x.device).reshape(-1)
            if w.shape[0] != x.shape[0] or not bool(torch.isfinite(w).all()) or bool((w < 0).any()):
                raise DiversityInputError(
                    f"weights must be {x.shape[0]} finite non-negative numbers, one per row of the batch."
                )
        if not self.constant_memory:
            if self.features and self.features[0].shape[1] != x.shape[1]:
                raise DiversityInputError(
                    f"features have {x.shape[1]} columns but earlier batches had {self.features[0].shape[1]}; "
                    "every batch must have the same feature dimension (reset the metric to change it)."
                )
            if int(self.n_items) + x.shape[0] > self.max_samples:
                raise DiversityInputError(
                    f"VendiScore with the {self.kernel.name} kernel keeps every feature vector, and more than "
                    f"max_samples={self.max_samples} arrived; use kernel='cosine' or 'linear' (memory independent "
                    "of n), raise max_samples, or reset more often."
                )
            self.features.append(x)
            self.weights.append(
                torch.ones(x.shape[0], dtype=torch.float64, device=x.device) if w is None else w
            )
            self._count(x, w)
            return
        # float32 values are exact float64 numbers: every product in float64 (issue 38)
        x = x.to(torch.float64)
        if x.shape[0]:
            # in place, NaN propagating (compute reports it); no copy when the state is on x's device
            self.max_abs.copy_(torch.maximum(self.max_abs, x.abs().amax().to(self.max_abs.device)))
        if self.kernel.name == "cosine":
            # an all-zero row gives NaN here, which compute reports (no per-batch scan or sync)
            x = _unit_rows(x)
        if w is not None:
            x = x * w.sqrt()[:, None]
        d = x.shape[1]
        if self.second_moment.numel() == 0:
            self.second_moment = torch.zeros((d, d), dtype=torch.float64, device=x.device)
        elif self.second_moment.shape[0] != d:
            raise DiversityInputError(
                f"features have {d} columns but earlier batches had {self.second_moment.shape[0]}."
            )
        self._count(x, w)
        self.second_moment.add_(x.T @ x)  # one float64 product, as the dual path's chunks
        if w is not None:  # unweighted: the total is the item count
            self.weight_total.add_(w.sum())

    def _matched_second_moment(self, other: torch.Tensor) -> torch.Tensor:
        """``other`` and this metric's d x d state at one size: an empty (0 x 0) side becomes zeros.

        Sets this metric's state to zeros when it is the empty one, and returns ``other`` (or zeros
        of this metric's size when ``other`` is the empty one).
        """
        mine = self.second_moment
        if mine.shape == other.shape:
            return other
        if other.numel() == 0:
            return torch.zeros_like(mine)
        if mine.numel() == 0:
            self.second_moment = torch.zeros_like(other, device=mine.device)
            return other
        raise DiversityInputError(
            f"cannot combine a VendiScore of {mine.shape[0]} features with one of {other.shape[0]}; update "
            "both with features of the same dimension."
        )

    def _reduce_states(self, incoming_state) -> None:
        """Add ``incoming_state`` to this state (``forward`` and ``merge_state``), empty states as zeros."""
        if self.constant_memory and "second_moment" in incoming_state:
            incoming_state = dict(incoming_state)
            incoming_state["second_moment"] = self._matched_second_moment(incoming_state["second_moment"])
        super()._reduce_states(incoming_state)

    def _sync_dist(self, dist_sync_fn=gather_all_tensors, process_group=None) -> None:
        """Sum the states of every process, after giving an empty (0 x 0) state the others' size d."""
        if self.constant_memory:
            size = torch.tensor([self.second_moment.shape[0]], dtype=torch.int64, device=self.n_items.device)
            sizes = {
                int(t.reshape(-1)[0]) for t in dist_sync_fn(size, group=process_group or self.process_group)
            }
            sizes.discard(0)
            if len(sizes) > 1:
                raise DiversityInputError(
                    f"the processes saw features of different dimensions ({sorted(sizes)}); every process must "
                    "update with features of the same dimension."
                )
            if sizes and self.second_moment.numel() == 0:
                d = sizes.pop()
                self.second_moment = torch.zeros((d, d), dtype=torch.float64, device=self.n_items.device)
        super()._sync_dist(dist_sync_fn, process_group=process_group)

    def _count(self, x, w) -> None:
        self.n_items.add_(x.shape[0])  # in place: no attribute assignment through nn.Module per batch
        if w is not None:
            self.n_weighted.add_(x.shape[0])

    def _weights_used(self) -> bool:
        n_weighted = int(self.n_weighted)
        if 0 < n_weighted < int(self.n_items):
            raise DiversityInputError(
                "weights were given for some batches only; give them for every batch or none."
            )
        return n_weighted > 0

    def compute(self) -> torch.Tensor:
        """The Vendi score(s) of the items seen (float64 tensor: a scalar, or one per order)."""
        n = int(self.n_items)
        if n < 1:
            raise DiversityInputError("VendiScore has seen no items; call update before compute.")
        weighted = self._weights_used()
        if self.constant_memory:
            total = float(self.weight_total) if weighted else float(n)
            if not math.isfinite(total):
                raise DiversityInputError(
                    f"the weights of the items seen sum to {total} (beyond double precision, 1.8e308); only "
                    "their ratios matter: divide them all by one constant (e.g. their largest) and reset the metric."
                )
            if not total > 0:
                raise DiversityInputError("the weights of the items seen are all zero.")
            if not math.isfinite(float(self.max_abs)):
                raise DiversityInputError(
                    "the features seen held NaN or infinite values; fix or drop those rows and reset the metric."
                )
            C = self.second_moment.detach().cpu().numpy() * (1.0 / total)
            if self.kernel.name == "cosine" and not np.isfinite(C).all():
                raise DiversityInputError(
                    "the features seen held NaN or infinite values, or all-zero rows (cosine similarity is "
                    "undefined for them); fix or drop those rows and reset the metric."
                )
            _check_scale(C)  # the products of finite features overflowed or underflowed: a clear error
            lam, _ = _eigh(C, 0, "cpu")
            spec = _finish(
                lam,
                None,
                n=n,
                method="dual",
                kernel=self.kernel.to_dict(),
                p=np.ones(1) if weighted else None,
                eps=computation_eps("float64"),
                device="cpu",
            )
            values = spec.vendi(self._qs.ravel())
        else:

            X = dim_zero_cat(self.features).cpu().numpy()
            w = dim_zero_cat(self.weights).cpu().numpy() if weighted else None
            values = compute_spectrum(X, kernel=self.kernel, weights=w).vendi(self._qs.ravel())
        out = torch.as_tensor(np.asarray(values, dtype=np.float64).reshape(self._qs.shape))
        return out.reshape(()) if np.ndim(self.q) == 0 and not isinstance(self.q, (list, tuple)) else out


#: torchmetrics.Metric's keyword options (the rest of ``**kwargs`` are kernel parameters).
_METRIC_OPTIONS = (
    "compute_on_cpu",
    "dist_sync_on_step",
    "process_group",
    "dist_sync_fn",
    "distributed_available_fn",
    "sync_on_compute",
    "compute_with_cache",
)
