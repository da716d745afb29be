"""The RND score: diversity measured by random network distillation.

A predictor network learns to imitate a frozen, randomly initialised target network on a random
training split of the data. On diverse data what the predictor learns on the training items
transfers poorly to the held-out items, so the normalised generalisation gap is large; on
repetitive data it is small. No similarity or kernel has to be chosen.

Public names: :func:`rnd_score`, :class:`RNDResult`, :data:`PAPER_PRESET`,
:func:`rnd_regime_warning` (when a setting may rank i.i.d. noise above structured data; also
``RNDResult.reliability``), :func:`rnd_reliable_setting` (a network and input it has no warning
for: the app's default), :func:`default_train_size` (the training split the scored set allows:
the paper's 200 when it fits) and :func:`rnd_small_groups_warning` (the groups too small for it).

Where things live
-----------------
_api       ``rnd_score`` (validation, then the private compute), ``PAPER_PRESET``
result     ``RNDResult``
_regime    ``rnd_regime_warning``, ``rnd_reliable_setting``, ``update_budget`` and their thresholds
           (``MLP_MAX_FEATURES``, ``PCA_COMPONENTS``, ...; evidence in docs/rnd.md)
_train_size ``default_train_size``, ``rnd_small_groups_warning``: the training split per scored set
_inputs    arrays, Datasets and sparse features to a standardised float32 array; devices
networks   the stacked MLP, the small CNN and ResNet-18
training   the training loops: all MLP runs at once, convolutional runs one by one

torch is optional (``pip install 'diversity-explorer[rnd]'``): it is imported when a score is
computed, never when this package is imported.
"""

from ._api import MIN_VALIDATION, PAPER_PRESET, rnd_score
from ._inputs import ARCHITECTURES, DEVICES, OPTIMIZERS  # noqa: F401 - the options, for the CLI
from ._regime import (  # noqa: F401 - update_budget and the thresholds, for the app
    MIN_ITEMS,
    MIN_TRAIN_SIZE,
    MLP_MAX_FEATURES,
    PCA_COMPONENTS,
    rnd_regime_warning,
    rnd_reliable_setting,
    update_budget,
)
from ._train_size import PAPER_TRAIN_SIZE, default_train_size, rnd_small_groups_warning  # noqa: F401
from .result import RNDResult

__all__ = ["rnd_score", "RNDResult", "PAPER_PRESET", "MIN_VALIDATION", "rnd_regime_warning", "rnd_reliable_setting",
           "default_train_size", "rnd_small_groups_warning"]
