"""Featurizing: :func:`featurize`, :func:`featurize_together` and :func:`cached_features`.

A call is validated once (:func:`_run_plan`: the name, the modality, the parameters, the
packages), then served from the feature cache (:mod:`._cache`), the result store
(:mod:`diversity_core.store`, for ``persist=True`` featurizers) or the featurizer's runner.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

import numpy as np

from .._config import downloads_permitted
from .._progress import ProgressCallback
from ..exceptions import DiversityInputError
from ..store import get_store
from ._cache import FEATURE_CACHE
from ._keys import _cache_key, _store_key
from ._registry import Featurizer, get_featurizer, list_featurizers, resolve_featurizer


def _compute(spec: Featurizer, dataset, full: dict, progress):
    """Run a featurizer, or read its result back from the result store (and keep a new one there)."""
    store = get_store() if spec.persist else None
    if store is None:
        return spec.run(dataset, progress, **full)
    return store.get_or_compute(_store_key(spec, dataset, full), lambda: spec.run(dataset, progress, **full),
                                label=f"features {spec.name}, {dataset.n} items")


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
    return spec, full, _cache_key(name, spec, dataset, full)


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
    X = FEATURE_CACHE.get(key)
    store = get_store() if X is None and spec.persist else None
    if store is not None:
        X = store.get(_store_key(spec, dataset, full))
        if X is not None:
            FEATURE_CACHE.put(key, X)
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
    X = FEATURE_CACHE.get_or_compute(key, lambda: _compute(spec, dataset, full, progress))
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
