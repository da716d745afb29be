"""The FID Inception network from a weights file the user provides: ``inception:<weights file>``.

The network FID is defined with (Heusel et al. 2017; the TensorFlow graph of 2015-12-05, ported
to PyTorch by ``pytorch-fid``) is Inception v3 with four altered blocks: average pools that
leave the padding out of the mean (Mixed_5b-5d, 6b-6e, 7b) and a max pool in the last block
(Mixed_7c). :class:`FIDInception` builds that layout in plain torch, with the parameter names of
torchvision's ``Inception3`` (so ``pytorch-fid``'s ``pt_inception-2015-12-05-*.pth`` loads as is),
and :func:`inception_features` returns its 2048-d pool features, the features FID and the VS
paper's image scores are computed on.

The weights are read with ``torch.load(weights_only=True)`` (or ``safetensors``): tensors only,
never arbitrary pickled objects. No weights ship with the project or are downloaded.

Preprocessing (as ``pytorch-fid``): pixels scaled to [0, 1], grayscale repeated to RGB, each image
resized to 299 x 299 (bilinear, ``align_corners=False``), then mapped to [-1, 1]. The pool
features are non-negative (ReLU, then the global average); use the cosine kernel.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from .._progress import ProgressCallback
from ..exceptions import DiversityInputError
from ._runtime import (
    BatchProgress,
    Prefetch,
    import_torch,
    inference_threads,
    torch_threads,
    unreadable_weights,
)

__all__ = [
    "INCEPTION_DIM",
    "INCEPTION_SIZE",
    "build_fid_inception",
    "load_fid_inception",
    "inception_features",
    "inception_version",
]

#: Dimension of the pool features.
INCEPTION_DIM = 2048
#: The input side the network was trained at.
INCEPTION_SIZE = 299


def build_fid_inception():
    """The FID Inception v3 as a ``torch.nn.Module`` with random weights (eval mode).

    ``module(x)`` takes images in [-1, 1], shape (N, 3, 299, 299), and returns (N, 2048) pool
    features; ``module.fc`` (2048 -> 1008) is kept only so that the published weights load whole.
    """
    torch = import_torch("the FID Inception network")
    nn, F = torch.nn, torch.nn.functional

    class Conv(nn.Module):
        def __init__(self, cin, cout, kernel_size, stride=1, padding=0):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, kernel_size, stride=stride, padding=padding, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=0.001)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    def avg(x):
        return F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)

    class A(nn.Module):
        def __init__(self, cin, pool):
            super().__init__()
            self.branch1x1 = Conv(cin, 64, 1)
            self.branch5x5_1, self.branch5x5_2 = Conv(cin, 48, 1), Conv(48, 64, 5, padding=2)
            self.branch3x3dbl_1 = Conv(cin, 64, 1)
            self.branch3x3dbl_2, self.branch3x3dbl_3 = Conv(64, 96, 3, padding=1), Conv(96, 96, 3, padding=1)
            self.branch_pool = Conv(cin, pool, 1)

        def forward(self, x):
            return torch.cat(
                [
                    self.branch1x1(x),
                    self.branch5x5_2(self.branch5x5_1(x)),
                    self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                    self.branch_pool(avg(x)),
                ],
                1,
            )

    class B(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.branch3x3 = Conv(cin, 384, 3, stride=2)
            self.branch3x3dbl_1 = Conv(cin, 64, 1)
            self.branch3x3dbl_2, self.branch3x3dbl_3 = Conv(64, 96, 3, padding=1), Conv(96, 96, 3, stride=2)

        def forward(self, x):
            return torch.cat(
                [
                    self.branch3x3(x),
                    self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                    F.max_pool2d(x, 3, stride=2),
                ],
                1,
            )

    class C(nn.Module):
        def __init__(self, cin, c7):
            super().__init__()
            self.branch1x1 = Conv(cin, 192, 1)
            self.branch7x7_1 = Conv(cin, c7, 1)
            self.branch7x7_2 = Conv(c7, c7, (1, 7), padding=(0, 3))
            self.branch7x7_3 = Conv(c7, 192, (7, 1), padding=(3, 0))
            self.branch7x7dbl_1 = Conv(cin, c7, 1)
            self.branch7x7dbl_2 = Conv(c7, c7, (7, 1), padding=(3, 0))
            self.branch7x7dbl_3 = Conv(c7, c7, (1, 7), padding=(0, 3))
            self.branch7x7dbl_4 = Conv(c7, c7, (7, 1), padding=(3, 0))
            self.branch7x7dbl_5 = Conv(c7, 192, (1, 7), padding=(0, 3))
            self.branch_pool = Conv(cin, 192, 1)

        def forward(self, x):
            b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
            d = x
            for layer in (
                self.branch7x7dbl_1,
                self.branch7x7dbl_2,
                self.branch7x7dbl_3,
                self.branch7x7dbl_4,
                self.branch7x7dbl_5,
            ):
                d = layer(d)
            return torch.cat([self.branch1x1(x), b7, d, self.branch_pool(avg(x))], 1)

    class D(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.branch3x3_1, self.branch3x3_2 = Conv(cin, 192, 1), Conv(192, 320, 3, stride=2)
            self.branch7x7x3_1 = Conv(cin, 192, 1)
            self.branch7x7x3_2 = Conv(192, 192, (1, 7), padding=(0, 3))
            self.branch7x7x3_3 = Conv(192, 192, (7, 1), padding=(3, 0))
            self.branch7x7x3_4 = Conv(192, 192, 3, stride=2)

        def forward(self, x):
            b = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
            return torch.cat([self.branch3x3_2(self.branch3x3_1(x)), b, F.max_pool2d(x, 3, stride=2)], 1)

    class E(nn.Module):
        def __init__(self, cin, max_pool: bool):
            super().__init__()
            self.max_pool = max_pool
            self.branch1x1 = Conv(cin, 320, 1)
            self.branch3x3_1 = Conv(cin, 384, 1)
            self.branch3x3_2a = Conv(384, 384, (1, 3), padding=(0, 1))
            self.branch3x3_2b = Conv(384, 384, (3, 1), padding=(1, 0))
            self.branch3x3dbl_1 = Conv(cin, 448, 1)
            self.branch3x3dbl_2 = Conv(448, 384, 3, padding=1)
            self.branch3x3dbl_3a = Conv(384, 384, (1, 3), padding=(0, 1))
            self.branch3x3dbl_3b = Conv(384, 384, (3, 1), padding=(1, 0))
            self.branch_pool = Conv(cin, 192, 1)

        def forward(self, x):
            b3 = self.branch3x3_1(x)
            b3 = torch.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
            d = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
            d = torch.cat([self.branch3x3dbl_3a(d), self.branch3x3dbl_3b(d)], 1)
            pool = F.max_pool2d(x, 3, stride=1, padding=1) if self.max_pool else avg(x)
            return torch.cat([self.branch1x1(x), b3, d, self.branch_pool(pool)], 1)

    class FIDInception(nn.Module):
        def __init__(self):
            super().__init__()
            self.Conv2d_1a_3x3 = Conv(3, 32, 3, stride=2)
            self.Conv2d_2a_3x3 = Conv(32, 32, 3)
            self.Conv2d_2b_3x3 = Conv(32, 64, 3, padding=1)
            self.Conv2d_3b_1x1 = Conv(64, 80, 1)
            self.Conv2d_4a_3x3 = Conv(80, 192, 3)
            self.Mixed_5b, self.Mixed_5c, self.Mixed_5d = A(192, 32), A(256, 64), A(288, 64)
            self.Mixed_6a = B(288)
            self.Mixed_6b, self.Mixed_6c, self.Mixed_6d, self.Mixed_6e = (
                C(768, 128),
                C(768, 160),
                C(768, 160),
                C(768, 192),
            )
            self.Mixed_7a = D(768)
            self.Mixed_7b, self.Mixed_7c = E(1280, max_pool=False), E(2048, max_pool=True)
            self.fc = nn.Linear(INCEPTION_DIM, 1008)

        def forward(self, x):
            x = self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x)))
            x = F.max_pool2d(x, 3, stride=2)
            x = F.max_pool2d(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)), 3, stride=2)
            for name in ("5b", "5c", "5d", "6a", "6b", "6c", "6d", "6e", "7a", "7b", "7c"):
                x = getattr(self, f"Mixed_{name}")(x)
            return F.adaptive_avg_pool2d(x, 1).flatten(1)

    return FIDInception().eval()


#: What the weights file must be (the end of every message about a wrong one).
_LAYOUT = (
    "It must be the state dict of torchvision's Inception3 with the FID blocks, as pytorch-fid's "
    "pt_inception-2015-12-05 weights (.pth, or .safetensors)."
)


def _weights_path(path) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise DiversityInputError(
            f"FID Inception weights file {str(path)!r} was not found; give the path of the file (e.g. pytorch-fid's "
            "pt_inception-2015-12-05-6726825d.pth, downloaded once by you), as inception:PATH."
        )
    return p


def load_fid_inception(path):
    """:func:`build_fid_inception` with the weights read from ``path`` (tensors only, never unpickled objects).

    Raises
    ------
    DiversityInputError
        A missing or empty file; pickled objects other than tensors (``torch.load(weights_only=True)``
        refuses them); a broken safetensors or PyTorch file; one that is not a state dict of
        tensors, or whose tensors do not fit the layout (names the keys and shapes).
    """
    torch = import_torch("the FID Inception network")
    p = _weights_path(path)
    try:
        if p.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(p))
        else:
            state = torch.load(str(p), map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable or unsafe file: one message with its cause
        raise unreadable_weights(
            f"the FID Inception weights file {p}", exc, empty=p.stat().st_size == 0, fix=_LAYOUT,
        ) from None
    if not isinstance(state, dict):
        raise DiversityInputError(
            f"{p} does not hold a state dict (name -> tensor); got {type(state).__name__}. {_LAYOUT}"
        )
    others = sorted(str(k) for k, v in state.items() if not isinstance(v, torch.Tensor))
    if others:
        raise DiversityInputError(
            f"{p} holds {len(others)} entries that are not tensors (e.g. {others[:3]}); a state dict maps names "
            f"to tensors. {_LAYOUT}"
        )
    net = build_fid_inception()
    expected = net.state_dict()
    wrong = sorted(
        f"{k}: file {list(v.shape)}, network {list(expected[k].shape)}"
        for k, v in state.items()
        if k in expected and tuple(v.shape) != tuple(expected[k].shape)
    )
    if wrong:
        raise DiversityInputError(
            f"{p} does not fit the FID Inception layout: {len(wrong)} tensors have other shapes "
            f"(e.g. {'; '.join(wrong[:3])}). {_LAYOUT}"
        )
    try:
        missing, unexpected = net.load_state_dict(state, strict=False)
    except RuntimeError as exc:  # e.g. a complex tensor that cannot be copied into a real parameter
        raise DiversityInputError(f"{p} does not fit the FID Inception layout: {exc}. {_LAYOUT}") from None
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise DiversityInputError(
            f"{p} does not fit the FID Inception layout: {len(missing)} missing tensors (e.g. {missing[:3]}), "
            f"{len(unexpected)} unexpected (e.g. {unexpected[:3]}). {_LAYOUT}"
        )
    return net.eval()


def inception_version(path) -> str:
    """``"weights <size> <mtime>"`` of the weights file: part of the result store's key."""
    st = _weights_path(path).stat()
    h = hashlib.blake2b(
        f"{Path(path).expanduser().resolve()}|{st.st_size}|{st.st_mtime_ns}".encode(), digest_size=8
    )
    return f"weights {h.hexdigest()}"


def _prepare(torch, batch):
    F = torch.nn.functional
    out = []
    for img in batch:
        a = np.asarray(img.convert("RGB") if hasattr(img, "convert") else img)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.shape[-1] == 1:
            a = np.repeat(a, 3, axis=-1)
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32) / 255.0).permute(2, 0, 1)[None]
        out.append(
            F.interpolate(t, size=(INCEPTION_SIZE, INCEPTION_SIZE), mode="bilinear", align_corners=False)
        )
    return 2.0 * torch.cat(out) - 1.0


def inception_features(
    images: Iterable,
    weights,
    *,
    batch_size: int = 32,
    progress: Optional[ProgressCallback] = None,
    n_images: Optional[int] = None,
) -> np.ndarray:
    """FID Inception pool features of images, shape (N, 2048), float32 (non-negative).

    Parameters
    ----------
    images : iterable of uint8 arrays H x W (x C) or PIL images
    weights : str or path
        The weights file (:func:`load_fid_inception`).
    batch_size : int, default 32
    progress : callable, optional
        ``progress(done, total, message)`` per batch, with the time left.
    n_images : int, optional
        The number of images when ``images`` has no ``len``.

    Returns
    -------
    ndarray of shape (N, 2048), float32
    """
    if int(batch_size) < 1:
        raise DiversityInputError(f"batch_size must be a positive integer; got {batch_size!r}.")
    torch = import_torch("the FID Inception network")
    net = load_fid_inception(weights)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    net.to(device)
    total = n_images if n_images is not None else (len(images) if hasattr(images, "__len__") else 0)

    def batches():
        batch = []
        for img in images:
            batch.append(img)
            if len(batch) == int(batch_size):
                yield len(batch), _prepare(torch, batch)
                batch = []
        if batch:
            yield len(batch), _prepare(torch, batch)

    where = "the GPU" if device == "cuda" else f"the CPU ({inference_threads(torch)} threads)"
    stage = BatchProgress(progress, total, f"embedding images with FID Inception on {where}")
    stage.start()
    out, done = [], 0
    with torch_threads(torch, inference_threads(torch)), torch.inference_mode(), Prefetch(batches()) as it:
        for rows, x in it:
            out.append(net(x.to(device)).float().cpu().numpy())
            done += rows
            stage.update(min(done, total) if total else done)
    if not out:
        raise DiversityInputError("there are no images to featurize.")
    return np.ascontiguousarray(np.concatenate(out), dtype=np.float32)
