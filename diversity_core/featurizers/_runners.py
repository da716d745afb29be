"""The runners: one function per featurizer, ``(dataset, progress, **params) -> features``.

Each reads what its featurizer needs from the :class:`~diversity_core.data.Dataset` (the items,
or the full-resolution files when the image featurizers can re-read them) and calls the
featurizer's module (:mod:`.images`, :mod:`.text`, :mod:`.molecules`, :mod:`.hf`,
:mod:`.inception`), imported when it runs. The registry (:mod:`._registry`) names them.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import DiversityInputError


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

