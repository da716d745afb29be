"""DiversityCallback: compute and log diversity metrics every N training epochs (Lightning)."""

from __future__ import annotations

from typing import Callable, Mapping, Optional

from .._optional import require
from ..exceptions import DiversityInputError

_pl = require("lightning.pytorch", purpose="DiversityCallback")


class DiversityCallback(_pl.Callback):
    """Log diversity metrics every ``every_n_epochs`` training epochs.

    Parameters
    ----------
    metrics : mapping of str to Metric
        E.g. ``{"vendi": VendiScore()}``. They are moved to the module's device at the start.
    every_n_epochs : int, default 1
        Compute and log at the end of epochs 0-based ``N - 1, 2N - 1, ...``; the metrics are
        updated only during those epochs and reset after each.
    features : callable, optional
        ``features(pl_module, outputs, batch) -> Tensor`` run after each training batch of a
        logged epoch; its output updates every metric (``metric.update(features)``: a
        :class:`~diversity_core.metrics.VendiScore`). Without it the module updates the
        metrics itself (e.g. a PRDC with ``real=``) and the callback computes, logs and resets.

    Notes
    -----
    A metric returning a dict is logged as ``"<name>/<key>"``. Distributed runs: the metrics
    sync their states in ``compute`` (torchmetrics), so every process logs the global value.
    """

    def __init__(self, metrics: Mapping, *, every_n_epochs: int = 1, features: Optional[Callable] = None):
        super().__init__()
        if int(every_n_epochs) < 1:
            raise DiversityInputError(f"every_n_epochs must be a positive integer; got {every_n_epochs!r}.")
        if not metrics:
            raise DiversityInputError(
                "DiversityCallback needs at least one metric, e.g. {'vendi': VendiScore()}."
            )
        self.metrics = dict(metrics)
        self.every_n_epochs = int(every_n_epochs)
        self.features = features

    def _logged_epoch(self, trainer) -> bool:
        return (trainer.current_epoch + 1) % self.every_n_epochs == 0

    def on_fit_start(self, trainer, pl_module) -> None:
        for m in self.metrics.values():
            m.to(pl_module.device)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.features is None or not self._logged_epoch(trainer):
            return
        x = self.features(pl_module, outputs, batch)
        for m in self.metrics.values():
            m.update(x)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        if self._logged_epoch(trainer):
            values = {}
            for name, m in self.metrics.items():
                v = m.compute()
                items = v.items() if isinstance(v, dict) else [(None, v)]
                for key, value in items:
                    values[name if key is None else f"{name}/{key}"] = float(value)
            pl_module.log_dict(values, sync_dist=False)  # already global: the metrics synced in compute
        for m in self.metrics.values():
            m.reset()
