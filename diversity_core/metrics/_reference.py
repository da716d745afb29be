"""PRDC and Memorization: reference-based metrics whose state is the features seen, up to a cap."""

from __future__ import annotations

from typing import Dict, Optional

import torch
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from .._validation import check_scalar
from ..evaluation import memorization, prdc
from ..exceptions import DiversityInputError
from ._vendi import _METRIC_OPTIONS, as_features


def _kept(metric: Metric, state: str, x: torch.Tensor, max_samples: int, what: str) -> None:
    """Append ``x`` to the list state ``state``, refusing to hold more than ``max_samples`` rows."""
    held = sum(int(t.shape[0]) for t in getattr(metric, state))
    if held + x.shape[0] > max_samples:
        raise DiversityInputError(
            f"{type(metric).__name__} keeps the {what} features, and more than max_samples={max_samples} arrived; "
            "raise max_samples, update on a subsample, or reset more often."
        )
    getattr(metric, state).append(x)


def _numpy(states) -> Optional[object]:
    return dim_zero_cat(states).cpu().numpy() if len(states) else None


class PRDC(Metric):
    """Precision, recall, density and coverage (Naeem et al. 2020) of generated against real features.

    ``update(features, real=True)`` adds real items, ``update(features, real=False)`` generated
    ones (as torchmetrics' FID); ``compute`` returns the four values of
    :func:`~diversity_core.evaluation.prdc` (exact neighbours, no interval) on all of them.

    Parameters
    ----------
    k : int, default 5
        Neighbours of the k-NN radii: a whole number (``k=2.7`` is refused, not rounded).
    max_samples : int, default 50000
        Items kept per set; more raise an error (the k-NN search needs them all).
    nn_method : {"exact", "approximate", "auto"}, default "exact"
    **kwargs
        torchmetrics' own options (``sync_on_compute``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> m = PRDC(k=2)
    >>> x = torch.arange(12, dtype=torch.float64).reshape(6, 2)
    >>> m.update(x, real=True); m.update(x, real=False)
    >>> float(m.compute()["coverage"])
    1.0
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, k: int = 5, *, max_samples: int = 50_000, nn_method: str = "exact", **kwargs):
        super().__init__(**{k_: v for k_, v in kwargs.items() if k_ in _METRIC_OPTIONS})
        unknown = sorted(set(kwargs) - set(_METRIC_OPTIONS))
        if unknown:
            raise DiversityInputError(f"unknown option(s) {', '.join(unknown)} for PRDC.")
        self.k = check_scalar(k, "k", int, min_val=1)
        self.max_samples = check_scalar(max_samples, "max_samples", int, min_val=1)
        self.nn_method = nn_method
        self.add_state("real_features", default=[], dist_reduce_fx="cat")
        self.add_state("fake_features", default=[], dist_reduce_fx="cat")

    def update(self, features, real: bool) -> None:
        """Add a batch of real (``real=True``) or generated features, shape (batch, d)."""
        x = as_features(features)
        _kept(
            self,
            "real_features" if real else "fake_features",
            x,
            self.max_samples,
            "real" if real else "generated",
        )

    def compute(self) -> Dict[str, torch.Tensor]:
        """``{"precision", "recall", "density", "coverage"}`` as float64 scalar tensors."""
        R, G = _numpy(self.real_features), _numpy(self.fake_features)
        if R is None or G is None:
            raise DiversityInputError(
                "PRDC needs real and generated features; update with real=True and real=False."
            )
        res = prdc(R, G, k=self.k, nn_method=self.nn_method, n_resamples=0)
        return {
            name: torch.tensor(getattr(res, name).value, dtype=torch.float64)
            for name in ("precision", "recall", "density", "coverage")
        }


class Memorization(Metric):
    """Share of generated items flagged as copies of training items (Alaa et al.'s ratio, a calibrated threshold).

    ``update(generated, train=..., reference=...)``: any of the three sets per call;
    ``compute`` returns the values of :func:`~diversity_core.evaluation.memorization` on all
    of them (exact neighbours).

    Parameters
    ----------
    metric : {"euclidean", "cosine"}, default "euclidean"
    max_samples : int, default 50000
        Items kept per set; more raise an error.
    nn_method : {"exact", "approximate", "auto"}, default "exact"
    alpha : float in (0, 1), default 0.01
        The copy flag's false-positive rate on fresh real items, at most (its threshold is
        calibrated on held-out training items; :func:`~diversity_core.evaluation.memorization`).
    **kwargs
        torchmetrics' own options.

    Examples
    --------
    >>> import torch
    >>> train = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> m = Memorization()
    >>> m.update(train, train=train)  # generated items that are training items: all flagged
    >>> float(m.compute()["fraction_flagged"])
    1.0
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(
        self, metric: str = "euclidean", *, max_samples: int = 50_000, nn_method: str = "exact",
        alpha: float = 0.01, **kwargs
    ):
        super().__init__(**{k: v for k, v in kwargs.items() if k in _METRIC_OPTIONS})
        unknown = sorted(set(kwargs) - set(_METRIC_OPTIONS))
        if unknown:
            raise DiversityInputError(f"unknown option(s) {', '.join(unknown)} for Memorization.")
        self.metric, self.nn_method = metric, nn_method
        self.alpha = check_scalar(alpha, "alpha", float, min_val=0.0, max_val=1.0, include_boundaries="neither")
        self.max_samples = check_scalar(max_samples, "max_samples", int, min_val=1)
        for state in ("generated_features", "train_features", "reference_features"):
            self.add_state(state, default=[], dist_reduce_fx="cat")

    def update(self, generated=None, *, train=None, reference=None) -> None:
        """Add batches of generated, training and/or held-out reference features, shape (batch, d) each."""
        for what, x in (("generated", generated), ("train", train), ("reference", reference)):
            if x is not None:
                _kept(self, f"{what}_features", as_features(x, what), self.max_samples, what)

    def compute(self) -> Dict[str, torch.Tensor]:
        """``fraction_flagged``, ``authenticity`` (and ``baseline_fraction``, ``excess`` with a reference)."""
        G, T = _numpy(self.generated_features), _numpy(self.train_features)
        if G is None or T is None:
            raise DiversityInputError("Memorization needs generated and training features; update with both.")
        res = memorization(
            G, T, reference=_numpy(self.reference_features), metric=self.metric, nn_method=self.nn_method,
            alpha=self.alpha,
        )
        out = {"fraction_flagged": res.fraction_flagged.value, "authenticity": res.authenticity}
        if res.baseline_fraction is not None:
            out.update(baseline_fraction=res.baseline_fraction.value, excess=res.excess)
        return {k: torch.tensor(float(v), dtype=torch.float64) for k, v in out.items()}
