"""Inputs of the RND score: arrays, Datasets and sparse features to a standardised float32 array."""

from __future__ import annotations

import numpy as np

from .._config import check_memory
from .._validation import check_option
from ..exceptions import DiversityInputError
from .networks import _torch

#: Architectures :func:`rnd_score` accepts ("auto" picks one by a rule, see its docstring).
ARCHITECTURES = ("auto", "mlp", "cnn", "resnet18")
#: Optimisers :func:`rnd_score` accepts.
OPTIMIZERS = ("sgd", "adam")
#: Devices :func:`rnd_score` accepts.
DEVICES = ("auto", "cpu", "cuda")


def _densify(X) -> np.ndarray:
    """Features as a dense array; sparse ones (n-gram counts) only when they fit the memory budget."""
    if hasattr(X, "toarray"):
        n, d = X.shape
        # the networks standardise the features in float64 (8 bytes per entry) before float32
        check_memory(
            8.0 * n * d,
            what=f"the dense {n} x {d} features for an RND network",
            hint="Use dense embeddings (e.g. the 'minilm' featurizer) instead.",
        )
        X = X.toarray()
    return np.asarray(X)


def _dataset_array(data, architecture: str) -> np.ndarray:
    """Pick pixels or features from a :class:`diversity_core.data.Dataset`-like object.

    Images go to the convolutional networks as pixels (the paper's setting). For the MLP the
    dataset's own features are used when it has them (companion embeddings); otherwise image
    pixels are flattened, and text or molecules get the default featurizer's features.
    """
    modality = getattr(data, "modality", None)
    items = getattr(data, "items", None)
    has_pixels = modality == "images" and items is not None
    if architecture in ("cnn", "resnet18") or (architecture == "auto" and has_pixels):
        if not has_pixels:
            raise DiversityInputError(
                f"architecture={architecture!r} needs images given as pixels; this dataset's "
                f"modality is {modality!r}. Use architecture='mlp' on its features."
            )
        return np.asarray(items)
    features = getattr(data, "features", None)
    if features is None:
        if has_pixels:
            return np.asarray(items)
        from ..featurizers import featurize

        features = featurize(data)
    return _densify(features)


def _as_input_array(data, architecture: str) -> np.ndarray:
    """Return a numeric ndarray of items (N, d) or images (N, H, W[, C])."""
    if hasattr(data, "modality") and not isinstance(data, np.ndarray):
        data = _dataset_array(data, architecture)
    if hasattr(data, "detach") and hasattr(data, "cpu"):  # a torch tensor
        data = data.detach().cpu().numpy()
    try:
        X = np.asarray(data)
    except (TypeError, ValueError) as exc:
        raise DiversityInputError(f"data must be a rectangular numeric array; {exc}") from None
    if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise DiversityInputError(
            f"data must be numeric; got dtype {X.dtype}. Convert or drop non-numeric columns."
        )
    if X.ndim not in (2, 3, 4):
        raise DiversityInputError(
            f"data must be items x features (2-D) or images N x H x W or N x H x W x C; got shape {X.shape}."
        )
    if X.ndim == 4 and X.shape[-1] > 4 and X.shape[1] <= 4:
        raise DiversityInputError(
            f"4-D images must be channels-last (N x H x W x C); shape {X.shape} looks channels-first. "
            "Pass np.moveaxis(images, 1, -1)."
        )
    if X.size and not np.isfinite(X).all():
        bad = ~np.isfinite(X.reshape(X.shape[0], -1)).all(axis=1)
        rows = ", ".join(str(int(r)) for r in np.flatnonzero(bad)[:5])
        raise DiversityInputError(
            f"data contains NaN or infinite values ({int(bad.sum())} items, e.g. rows {rows}); "
            "remove or impute them."
        )
    return X


def _resolve_device(device: str) -> str:
    """``"cpu"`` or ``"cuda"``: ``"auto"`` picks CUDA when torch sees a GPU."""
    check_option(device, DEVICES, "device")
    cuda = _torch().cuda.is_available()
    if device == "cuda" and not cuda:
        raise DiversityInputError(
            "device='cuda' was asked for but torch sees no CUDA GPU (torch.cuda.is_available() is "
            "False); use device='cpu' or 'auto'."
        )
    if device == "auto":
        return "cuda" if cuda else "cpu"
    return device


def _resolve_architecture(architecture: str, ndim: int, device: str) -> str:
    """The network for data of ``ndim`` dimensions: the MLP for features, a CNN for images."""
    check_option(architecture, ARCHITECTURES, "architecture")
    if architecture == "auto":
        if ndim == 2:
            return "mlp"
        return "resnet18" if device == "cuda" else "cnn"
    if architecture in ("cnn", "resnet18") and ndim == 2:
        raise DiversityInputError(
            f"architecture={architecture!r} needs images (N x H x W or N x H x W x C); got a 2-D "
            "items x features matrix. Use architecture='mlp' for features."
        )
    return architecture


def _normalise(X: np.ndarray, architecture: str) -> np.ndarray:
    """Mean 0, std 1 per feature (MLP) or per channel (CNN), estimated from the data itself.

    Returns float32, features as (N, d) and images as (N, C, H, W). Features or channels with
    zero spread become all zeros (they carry no information; dividing by 0 is avoided).
    """
    X = X.astype(np.float64, copy=False)
    if architecture == "mlp":
        X = X.reshape(X.shape[0], -1)
        mean = X.mean(axis=0)
        std = X.std(axis=0)
        std[std == 0] = 1.0
        return ((X - mean) / std).astype(np.float32)
    if X.ndim == 3:
        X = X[..., None]
    X = np.moveaxis(X, -1, 1)  # N, C, H, W
    mean = X.mean(axis=(0, 2, 3), keepdims=True)
    std = X.std(axis=(0, 2, 3), keepdims=True)
    std[std == 0] = 1.0
    return np.ascontiguousarray((X - mean) / std, dtype=np.float32)
