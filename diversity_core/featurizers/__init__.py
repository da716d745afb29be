"""Featurizers: turn a :class:`~diversity_core.data.Dataset` into features ready for a kernel.

What lives where
----------------
- :mod:`.images`: :func:`~.images.pixel_features` (native size up to 32 px, cosine) and
  :func:`~.images.efficientnet_features` (EfficientNet-Lite0, 1280-d, cosine).
- :mod:`.text`: :func:`~.text.ngram_features` (the n-gram overlap kernel as an explicit feature
  map, linear), :func:`~.text.minilm_embeddings` (all-MiniLM-L6-v2, 384-d, cosine),
  :func:`~.text.ngram_diversity` (baseline) and the documented :func:`~.text.tokenize`.
- :mod:`.molecules`: :func:`~.molecules.morgan_fingerprints` (radius 2, 2048 bits, Tanimoto),
  :func:`~.molecules.tanimoto_matrix`, :func:`~.molecules.draw_molecule` (SVG) and
  :func:`~.molecules.draw_molecule_png`.
- :mod:`.hf`: ``hf:<folder-or-hub-id>``, any transformers vision or text encoder the user has
  (DINOv2, CLIP towers, BERT, ...), loaded from the local folder or cache only unless
  ``allow_download=True``; pooled output, cosine.
- :mod:`.inception`: ``inception:<weights file>``, the FID Inception network (2048-d pool
  features) from a weights file the user provides, read with ``torch.load(weights_only=True)``.
- :mod:`._runtime`: what the neural featurizers share (threads, passes, prefetching, measured
  time left).

and the plumbing of every featurizer, one job per module (this ``__init__`` only re-exports):

- :mod:`._registry`: :class:`Featurizer`, the registry :data:`FEATURIZERS` (each featurizer's
  name, modality, parameters with their defaults, the packages it needs and the kernel it is meant
  for), :data:`PARAMETERISED` names (:func:`get_featurizer` builds their entry from the model
  found on this machine), :data:`DEFAULT_FEATURIZER`, :func:`list_featurizers`,
  :func:`resolve_featurizer` and :func:`default_kernel`.
- :mod:`._runners`: one runner per featurizer, ``(dataset, progress, **params) -> features``.
- :mod:`._downloads`: :func:`downloads_allowed`, the context in which ``hf:`` models may download.
- :mod:`._keys`: :func:`featurizer_version` (the featurizer's own version and the versions of the
  packages holding its code and weights; for a parameterised name a hash of its config and the
  size and modification time of its weights, so new weights give new keys), the result store's
  key and the feature cache's key.
- :mod:`._kernels`: :func:`kernel_support` (which kernels are defined on a featurizer's
  features; the app offers only those), :data:`KERNEL_NEEDS` and :func:`dense_features`.
- :mod:`._cache`: the feature cache, one process-wide
  :class:`~diversity_core._lru.MemoryCache` (the class the app's caches are made of): least
  recently used first out, bounded in bytes (:data:`CACHE_SHARE` of the memory budget, see
  :func:`cache_info`; :func:`clear_cache`), safe from several threads (the app's sessions), and
  computing a missing entry once even when several threads ask for it at the same time.
- :mod:`._api`: :func:`featurize` (validates the choice, runs it and keeps the result in the
  feature cache, keyed by the dataset's content hash and the parameters),
  :func:`featurize_together` and :func:`cached_features`.

The slow featurizers (EfficientNet-Lite0, MiniLM, Morgan, n-grams: ``persist=True``) also keep
their features in the on-disk result store (:mod:`diversity_core.store`), shared by the CLI, the
API and the app across runs. The key holds the dataset's content hash, the featurizer, its
parameters and :func:`featurizer_version`; for a featurizer that re-reads the full-resolution
files, also their sizes and modification times. ``DIVERSITY_NO_CACHE=1`` (or
``store.configured(enabled=False)``) keeps features in memory only.
"""

from __future__ import annotations

from ._api import cached_features, featurize, featurize_together
from ._cache import CACHE_SHARE, cache_info, clear_cache
from ._downloads import downloads_allowed
from ._kernels import KERNEL_NEEDS, dense_features, kernel_support
from ._keys import featurizer_version
from ._registry import (
    DEFAULT_FEATURIZER,
    FEATURIZERS,
    PARAMETERISED,
    Featurizer,
    default_kernel,
    get_featurizer,
    list_featurizers,
    resolve_featurizer,
)

__all__ = [
    "cached_features",
    "featurize_together",
    "Featurizer",
    "FEATURIZERS",
    "PARAMETERISED",
    "get_featurizer",
    "downloads_allowed",
    "DEFAULT_FEATURIZER",
    "list_featurizers",
    "resolve_featurizer",
    "default_kernel",
    "kernel_support",
    "KERNEL_NEEDS",
    "dense_features",
    "featurize",
    "clear_cache",
    "cache_info",
    "featurizer_version",
    "CACHE_SHARE",
]
