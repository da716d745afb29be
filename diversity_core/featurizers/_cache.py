"""The feature cache: one process-wide :class:`~diversity_core._lru.MemoryCache` of computed features.

:func:`~diversity_core.featurizers.featurize` keeps every cached featurizer's result there, keyed
by the dataset's content hash and the parameters (:func:`~._keys._cache_key`): least recently used
first out, bounded in bytes (:data:`CACHE_SHARE` of the memory budget, every buffer once), safe
from several threads (the app's sessions), computing a missing entry once whoever asks.
"""

from __future__ import annotations

from .._lru import MemoryCache

#: Share of the memory budget (:func:`~diversity_core._config.memory_budget`) the feature cache may hold.
CACHE_SHARE = 0.25

#: The process's feature cache.
FEATURE_CACHE = MemoryCache("features", CACHE_SHARE)


def cache_info() -> dict:
    """The feature cache's state: ``entries``, ``bytes`` held and ``limit_bytes``.

    The limit is :data:`CACHE_SHARE` of the memory budget; the least recently used feature
    matrices are dropped first when a new one would exceed it.
    """
    return FEATURE_CACHE.info()


def clear_cache() -> None:
    """Forget cached features."""
    FEATURE_CACHE.clear()
