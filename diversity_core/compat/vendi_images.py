"""Equivalent of ``vendi_score.image_utils``: pixel and embedding Vendi scores of images.

Reached as ``vendi.image_utils`` (``from diversity_core.compat.vendi import image_utils``).
Pillow is optional (``pip install 'diversity-explorer[images]'``), torch too; both are imported
inside the functions that need them.

Differences from the package:

- :func:`pixel_vendi_score` honours ``resize`` (the package always resizes to 32) and takes ``q``.
- :func:`get_embeddings` and :func:`embedding_vendi_score` default to the offline EfficientNet-Lite0
  features of :func:`diversity_core.featurizers.images.efficientnet_features` (1280-d): the package
  downloads torchvision's Inception v3 weights, which cannot be fetched offline, so the default
  numbers differ. A caller's own torch model and transform are run as in the package.
- Left out: ``get_cifar10``, ``get_cifar100``, ``get_mnist`` (download data sets with torchvision),
  ``get_inception``, ``inception_transforms``, ``get_inception_embeddings`` (download Inception
  weights) and ``plot_images`` (matplotlib).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .._optional import require
from .._orders import check_q
from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ..featurizers.images import efficientnet_features
from ..spectrum import compute_spectrum
from .vendi_data import to_batches

__all__ = ["get_pixel_vectors", "pixel_vendi_score", "get_embeddings", "embedding_vendi_score"]

_PURPOSE = "image Vendi scores (diversity_core.compat.vendi.image_utils)"


def _check_images(images) -> list:
    """A non-empty list of PIL images (uint8 arrays H x W or H x W x C are converted)."""
    Image = require("PIL.Image", purpose=_PURPOSE)
    if isinstance(images, np.ndarray) and images.ndim in (3, 4) and images.dtype == np.uint8:
        images = list(images)
    images = list(images)
    if not images:
        raise DiversityInputError("images is empty; there is nothing to score.")
    out = []
    for i, img in enumerate(images):
        if isinstance(img, Image.Image):
            out.append(img)
            continue
        a = np.asarray(img)
        if a.dtype != np.uint8 or a.ndim not in (2, 3):
            raise DiversityInputError(
                f"image {i} must be a PIL image or a uint8 array H x W (x C); got {type(img).__name__} "
                f"of dtype {a.dtype} and shape {a.shape}."
            )
        out.append(Image.fromarray(a[:, :, 0] if a.ndim == 3 and a.shape[2] == 1 else a))
    return out


def _check_one_q(q) -> float:
    """One order q of the Vendi score."""
    qs = check_q(q)
    if qs.size != 1:
        raise DiversityInputError(f"q must be one order; got {qs.size}.")
    return float(qs.ravel()[0])


def get_pixel_vectors(images: Sequence, resize=32) -> np.ndarray:
    """Flattened pixel values (uint8) of each image, resized to ``resize`` x ``resize`` first.

    Parameters
    ----------
    images : sequence of PIL images or uint8 arrays
        All of one mode (and one size when ``resize`` is falsy).
    resize : int or None, default 32
        Side in pixels (Pillow's default resampling, as in the package); ``None`` or 0 keeps
        the size.

    Returns
    -------
    ndarray of shape (n, resize * resize * channels), uint8
    """
    images = _check_images(images)
    if resize:
        resize = check_scalar(resize, "resize", int, min_val=1, max_val=4096)
        images = [img.resize((resize, resize)) for img in images]
    vectors = [np.asarray(img).reshape(-1) for img in images]
    if len({v.size for v in vectors}) != 1:
        raise DiversityInputError("the images give pixel vectors of different lengths; give one mode and size.")
    return np.stack(vectors, axis=0)


def pixel_vendi_score(images: Sequence, resize=32, *, q=1) -> float:
    """Vendi score of order q of images under the cosine similarity of their pixel vectors.

    ``resize`` is honoured (the package ignores it and always uses 32). The dual path is taken
    when there are more images than pixel values (as the package's switch to ``score_dual``),
    with the same number either way. 1 for a single image.
    """
    q = _check_one_q(q)
    X = get_pixel_vectors(images, resize=resize)
    if X.shape[0] == 1:
        return 1.0
    return compute_spectrum(X, kernel="cosine").vendi(q)


def _to_tensor(img):
    """A C x H x W float tensor in [0, 1] from a PIL image (torchvision's ``ToTensor`` for 8-bit images)."""
    torch = require("torch", purpose=_PURPOSE)
    a = np.asarray(img, dtype=np.float32) / 255.0
    a = a[:, :, None] if a.ndim == 2 else a
    return torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))


def get_embeddings(images: Sequence, model=None, transform=None, batch_size=64, device="cpu") -> np.ndarray:
    """Image embeddings, shape (n, d).

    Parameters
    ----------
    images : sequence of PIL images or uint8 arrays
    model : torch.nn.Module, optional
        Run on batches of ``transform(img)`` (a list output is reduced to its first element).
        Default: the offline EfficientNet-Lite0 pooled features (d = 1280), not the package's
        Inception v3, which needs the network.
    transform : callable, optional
        PIL image -> C x H x W tensor for a caller's model; default: pixels scaled to [0, 1]
        (torchvision's ``ToTensor``).
    batch_size : int, default 64
    device : str or torch.device, default "cpu"
        Where a caller's model runs.

    Returns
    -------
    ndarray of shape (n, d)
    """
    images = _check_images(images)
    batch_size = check_scalar(batch_size, "batch_size", int, min_val=1)
    if model is None:
        if transform is not None:
            raise DiversityInputError("transform is for a caller's model; pass model= as well.")
        return np.asarray(efficientnet_features(images, batch_size=batch_size), dtype=np.float64)
    torch = require("torch", purpose=_PURPOSE)
    transform = _to_tensor if transform is None else transform
    device = torch.device(device) if isinstance(device, str) else device
    out = []
    for batch in to_batches(images, batch_size):
        x = torch.stack([transform(img) for img in batch], 0).to(device)
        with torch.no_grad():
            output = model(x)
        if isinstance(output, (list, tuple)):
            output = output[0]
        out.append(output.detach().to("cpu", dtype=torch.float64).numpy().reshape(len(batch), -1))
    return np.concatenate(out, axis=0)


def embedding_vendi_score(images: Sequence, batch_size=64, device="cpu", model=None, transform=None, *, q=1) -> float:
    """Vendi score of order q of image embeddings under the cosine kernel (:func:`get_embeddings`).

    The default model is EfficientNet-Lite0 (offline), not the package's Inception v3, so the
    default numbers differ from the package's. 1 for a single image.
    """
    q = _check_one_q(q)
    X = get_embeddings(images, model=model, transform=transform, batch_size=batch_size, device=device)
    if X.shape[0] == 1:
        return 1.0
    return compute_spectrum(X, kernel="cosine").vendi(q)
