"""Diversity metrics for the training loop, with the torchmetrics interface.

Each class is a :class:`torchmetrics.Metric`: ``update`` on every batch, ``compute`` when a
value is wanted, ``reset`` between epochs; states merge across processes through torchmetrics'
distributed sync (``dist_reduce_fx``), so the value under DDP equals the value of one process
that saw every batch. ``compute`` calls the project's one-shot functions, so a metric gives
exactly what :func:`~diversity_core.vendi_score`, :func:`~diversity_core.evaluation.prdc` and
:func:`~diversity_core.evaluation.memorization` give on all the features at once.

What lives where
----------------
_vendi          :class:`VendiScore`: for the linear and cosine kernels the state is the d x d
                second-moment matrix (memory independent of n); other kernels keep the
                features up to ``max_samples``
_reference      :class:`PRDC` and :class:`Memorization` (features kept up to ``max_samples``)
_callback       :class:`DiversityCallback`, a Lightning callback computing and logging metrics
                every N epochs (needs ``lightning``)

Needs ``torchmetrics`` (``pip install 'diversity-explorer[training]'``). See ``docs/training.md``.
"""

from .._optional import require

require("torchmetrics", purpose="the training-loop metrics of diversity_core.metrics")

from ._reference import PRDC, Memorization  # noqa: E402
from ._vendi import VendiScore  # noqa: E402


def __getattr__(name):
    if name == "DiversityCallback":  # imports lightning, only when asked for
        from ._callback import DiversityCallback

        return DiversityCallback
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["VendiScore", "PRDC", "Memorization", "DiversityCallback"]
