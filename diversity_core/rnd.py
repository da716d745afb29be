"""The RND score: diversity measured by random network distillation.

A predictor network learns to imitate a frozen, randomly initialised target network on a random
training split of the data. On diverse data what the predictor learns on the training items
transfers poorly to the held-out items, so the normalised generalisation gap is large; on
repetitive data it is small. No similarity or kernel has to be chosen.

Public names: :func:`rnd_score`, :class:`RNDResult`, :data:`PAPER_PRESET`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ._progress import ProgressCallback, report
from ._validation import RandomLike, check_option, check_positive, check_random_state
from .exceptions import DiversityInputError, NumericalError

__all__ = ["rnd_score", "RNDResult", "PAPER_PRESET"]

#: Architectures :func:`rnd_score` accepts ("auto" picks one by a rule, see its docstring).
ARCHITECTURES = ("auto", "mlp", "cnn", "resnet18")
#: Optimisers :func:`rnd_score` accepts.
OPTIMIZERS = ("sgd", "adam")
#: Devices :func:`rnd_score` accepts.
DEVICES = ("auto", "cpu", "cuda")

#: The paper's settings (Appendix A.3 of [1] in :func:`rnd_score`): ResNet-18, SGD with momentum
#: 0.9, learning rate 0.01, 50 epochs averaged over the last 10, 40 runs, 200 training items.
#: ``rnd_score(images, **PAPER_PRESET)`` reproduces that protocol on pixel arrays.
PAPER_PRESET: Dict[str, Any] = {
    "architecture": "resnet18",
    "train_size": 200,
    "epochs": 50,
    "average_last": 10,
    "runs": 40,
    "lr": 0.01,
    "momentum": 0.9,
    "optimizer": "sgd",
}

# The MLP preset: two hidden ReLU layers of 256 units, 64 outputs (see the Notes of rnd_score).
_MLP_HIDDEN = 256
_MLP_DEPTH = 2
_MLP_OUT = 64
# The small CNN preset: (channels, stride) of its 3x3 conv-BN-ReLU layers, the side of the pooled
# grid kept before the linear head (2 keeps a coarse spatial layout), and its output size.
_CNN_LAYERS = ((16, 1), (32, 2), (64, 2))
_CNN_POOL = 2
_CNN_OUT = 64
# ResNet-18 keeps torchvision's default head of 1000 outputs.
_RESNET_OUT = 1000
# Upper bound on activations held at once while evaluating (floats), so memory stays bounded.
_EVAL_FLOATS = 1 << 25
# Largest dense matrix made from sparse features (entries).
_MAX_DENSE = 50_000_000


@dataclass(frozen=True)
class RNDResult:
    """The RND score of a dataset, with its spread over runs and the training curves.

    Attributes
    ----------
    score : float
        The RND score, Eq. (3) of the RND paper (see :func:`rnd_score`): the mean over runs
        of each run's average of ``RND_i`` over the last ``average_last`` epochs.
    ci_low, ci_high : float
        A 95 % Student-t confidence interval for the score over runs
        (``score -/+ t_{0.975, r-1} * s / sqrt(r)``); NaN when ``runs == 1``.
    run_scores : ndarray of shape (runs,)
        Each run's average of ``RND_i`` over the averaging window.
    curves : ndarray of shape (runs, epochs)
        ``RND_i`` after epoch ``i = 1..epochs`` of every run (column ``i - 1``).
    mse_train, mse_val : ndarray of shape (runs, epochs)
        ``MSE(T, P_i; S_t)`` and ``MSE(T, P_i; S_v)`` (Eq. (1) of the paper) after every epoch.
    settings : dict
        Every setting the score depends on, with ``"auto"`` choices resolved (architecture,
        device, batch size, number of items, input shape, ...). Scores are comparable only
        between results whose settings agree.
    """

    score: float
    ci_low: float
    ci_high: float
    run_scores: np.ndarray = field(repr=False)
    curves: np.ndarray = field(repr=False)
    mse_train: np.ndarray = field(repr=False)
    mse_val: np.ndarray = field(repr=False)
    settings: Dict[str, Any] = field(repr=False)

    @property
    def interval(self) -> Tuple[float, float]:
        """The 95 % confidence interval ``(ci_low, ci_high)``."""
        return (self.ci_low, self.ci_high)

    @property
    def std(self) -> float:
        """Standard deviation of the per-run scores (ddof=1; NaN for one run)."""
        r = self.run_scores.size
        return float(np.std(self.run_scores, ddof=1)) if r > 1 else math.nan

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys (JSON-serialisable; NaN stays a float NaN)."""
        return {
            "score": float(self.score),
            "ci_low": float(self.ci_low),
            "ci_high": float(self.ci_high),
            "std": self.std,
            "run_scores": self.run_scores.tolist(),
            "curves": self.curves.tolist(),
            "mse_train": self.mse_train.tolist(),
            "mse_val": self.mse_val.tolist(),
            "settings": dict(self.settings),
        }


# --------------------------------------------------------------------------------------------
# Validation and input preparation
# --------------------------------------------------------------------------------------------


def _check_int(value, name: str, *, minimum: int) -> int:
    """A whole number >= ``minimum`` (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise DiversityInputError(f"{name} must be a whole number >= {minimum}; got {value!r}.")
    value = int(value)
    if value < minimum:
        raise DiversityInputError(f"{name} must be a whole number >= {minimum}; got {value}.")
    return value


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
        from .featurizers import featurize

        features = featurize(data)
    from .featurizers import dense_features

    return dense_features(features, max_entries=_MAX_DENSE, purpose="an RND network")


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
    import torch

    check_option(device, DEVICES, "device")
    cuda = torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise DiversityInputError(
            "device='cuda' was asked for but torch sees no CUDA GPU (torch.cuda.is_available() is "
            "False); use device='cpu' or 'auto'."
        )
    if device == "auto":
        return "cuda" if cuda else "cpu"
    return device


def _resolve_architecture(architecture: str, ndim: int, device: str) -> str:
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


def _batch_bounds(train_size: int, batch_size: int):
    """(start, stop) of each mini-batch of an epoch; a lone last item joins the previous batch."""
    cuts = list(range(0, train_size, batch_size))
    if len(cuts) > 1 and train_size - cuts[-1] == 1:
        cuts.pop()
    cuts.append(train_size)
    return list(zip(cuts[:-1], cuts[1:]))


# --------------------------------------------------------------------------------------------
# The batched MLP path: every run's networks live in stacked weight tensors (runs, in, out)
# and train together with batched matrix products.
# --------------------------------------------------------------------------------------------


def _stacked_mlp(dims, generators, device):
    """Weights and biases of one MLP per generator, stacked along a leading runs axis.

    Kaiming (He) uniform weights for ReLU, W ~ U(-sqrt(6/fan_in), sqrt(6/fan_in)), which keep
    the activations' scale through the layers; biases as PyTorch's ``nn.Linear`` default,
    b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    """
    import torch

    params = []
    for fan_in, fan_out in zip(dims[:-1], dims[1:]):
        bound = 1.0 / math.sqrt(fan_in)
        wb = math.sqrt(6.0 / fan_in)  # Kaiming-uniform with the ReLU gain
        W = torch.stack([torch.empty(fan_in, fan_out).uniform_(-wb, wb, generator=g) for g in generators])
        b = torch.stack([torch.empty(1, fan_out).uniform_(-bound, bound, generator=g) for g in generators])
        params += [W.to(device), b.to(device)]
    return params


def _mlp_forward(params, X):
    """Stacked MLPs: X of shape (runs, m, d) -> (runs, m, out); run j uses the j-th weights."""
    import torch

    h = X
    last = len(params) // 2 - 1
    for layer in range(last + 1):
        W, b = params[2 * layer], params[2 * layer + 1]
        h = torch.baddbmm(b, h, W)
        if layer < last:
            h = torch.relu_(h) if not h.requires_grad else torch.relu(h)
    return h


def _emit_curves(on_epoch, mse_t: np.ndarray, mse_v: np.ndarray) -> None:
    """Call ``on_epoch`` with the RND_i curves so far (NaN where an epoch has not run yet)."""
    if on_epoch is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            on_epoch((mse_v - mse_t) / (mse_v + mse_t))


def _run_mlp(
    X, splits, batch_orders, init_gens, *, lr, momentum, optimizer, batch_size, device, progress, on_epoch
):
    import torch

    runs, n = len(splits), X.shape[0]
    epochs = len(batch_orders[0])
    train_size = splits[0][0].size
    dims = [X.shape[1]] + [_MLP_HIDDEN] * _MLP_DEPTH + [_MLP_OUT]
    target = _stacked_mlp(dims, init_gens, device)
    predictor = [p.requires_grad_() for p in _stacked_mlp(dims, init_gens, device)]
    Xd = torch.from_numpy(X).to(device)
    chunk = max(1, _EVAL_FLOATS // (runs * max(dims[1:])))
    with torch.inference_mode():
        Y = torch.cat(
            [_mlp_forward(target, Xd[a : a + chunk].expand(runs, -1, -1)) for a in range(0, n, chunk)], 1
        )
    is_train = torch.zeros(runs, n, dtype=torch.bool)
    for j, (tr, _) in enumerate(splits):
        is_train[j, torch.from_numpy(tr)] = True
    is_train = is_train.to(device)
    n_val = n - train_size
    train_idx = torch.from_numpy(np.stack([tr for tr, _ in splits])).to(device)  # (runs, k)
    X_train = Xd[train_idx]  # (runs, k, d), each run's own training items
    Y_train = Y[torch.arange(runs, device=device)[:, None], train_idx]  # (runs, k, out)
    opt = _make_optimizer(predictor, optimizer, lr, momentum)
    mse_t = torch.full((runs, epochs), math.nan, dtype=torch.float64, device=device)
    mse_v = torch.full((runs, epochs), math.nan, dtype=torch.float64, device=device)
    bounds = _batch_bounds(train_size, batch_size)
    total = runs * epochs
    for epoch in range(epochs):
        # Shuffle once per epoch (one gather), then the mini-batches are contiguous slices:
        # few, large operations keep the per-step overhead low.
        order = torch.from_numpy(np.stack([o[epoch] for o in batch_orders])).to(device)[..., None]
        xs = torch.gather(X_train, 1, order.expand(-1, -1, X_train.shape[2]))
        ys = torch.gather(Y_train, 1, order.expand(-1, -1, Y_train.shape[2]))
        for a, b in bounds:
            # Each run's loss is its own batch's MSELoss (mean over items and outputs). All runs
            # share the batch size, so the sum over runs is one summed squared error divided
            # by (batch x outputs); each parameter slice sees only its own run's loss.
            pred = _mlp_forward(predictor, xs[:, a:b])
            loss = torch.nn.functional.mse_loss(pred, ys[:, a:b], reduction="sum") / ((b - a) * ys.shape[2])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        with torch.inference_mode():
            sq_t = torch.zeros(runs, dtype=torch.float64, device=device)
            sq_v = torch.zeros(runs, dtype=torch.float64, device=device)
            for a in range(0, n, chunk):
                err = _mlp_forward(predictor, Xd[a : a + chunk].expand(runs, -1, -1)) - Y[:, a : a + chunk]
                err = err.square_().sum(-1, dtype=torch.float64)  # (runs, m)
                mask = is_train[:, a : a + chunk]
                sq_t += (err * mask).sum(1)
                sq_v += (err * ~mask).sum(1)
            mse_t[:, epoch] = sq_t / train_size
            mse_v[:, epoch] = sq_v / n_val
        report(progress, (epoch + 1) * runs, total, f"epoch {epoch + 1}/{epochs} of all {runs} runs")
        if on_epoch is not None:
            _emit_curves(on_epoch, mse_t.cpu().numpy(), mse_v.cpu().numpy())
    return mse_t.cpu().numpy(), mse_v.cpu().numpy()


def _make_optimizer(params, optimizer: str, lr: float, momentum: float):
    import torch

    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, foreach=True)
    return torch.optim.Adam(params, lr=lr, foreach=True)


# --------------------------------------------------------------------------------------------
# The image path: one pair of torch modules per run (small CNN or ResNet-18).
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _networks():
    """Define the convolutional networks (torch imported on first use only)."""
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        """3x3 conv-BatchNorm-ReLU layers, average pooling to a 2x2 grid, and a linear head."""

        def __init__(self, in_channels: int, out_features: int):
            super().__init__()
            layers, cin = [], in_channels
            for cout, stride in _CNN_LAYERS:
                layers += [
                    nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                    nn.BatchNorm2d(cout),
                    nn.ReLU(inplace=True),
                ]
                cin = cout
            self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(_CNN_POOL), nn.Flatten())
            self.head = nn.Linear(cin * _CNN_POOL * _CNN_POOL, out_features)

        def forward(self, x):
            return self.head(self.features(x))

    class BasicBlock(nn.Module):
        """ResNet basic block: two 3x3 conv-BN layers and an identity (or 1x1 projection) shortcut."""

        def __init__(self, cin: int, cout: int, stride: int):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = None
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.shortcut is None else self.shortcut(x)))

    class ResNet18(nn.Module):
        """ResNet-18 (He et al., 2016) as in torchvision: 7x7 stem, max-pool, 4 x 2 basic blocks."""

        def __init__(self, in_channels: int, out_features: int):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, stride=2, padding=1),
            )
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, out_features)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    return {"cnn": SmallCNN, "resnet18": ResNet18}


def _build_network(architecture: str, in_channels: int, generator, device: str):
    """A freshly initialised network drawn from ``generator`` (the global torch RNG is not used).

    The module is created on the meta device and its tensors are then materialised and filled
    here, so construction consumes no global random numbers. Convolutions are Kaiming-normal
    for ReLU (fan-in for the small CNN; fan-out for ResNet-18, torchvision's recipe), BatchNorm
    starts at weight 1 and bias 0, and linear layers use PyTorch's default uniform rule.
    """
    import torch
    from torch import nn

    cls = _networks()[architecture]
    out = _CNN_OUT if architecture == "cnn" else _RESNET_OUT
    with torch.device("meta"):
        net = cls(in_channels, out)
    net = net.to_empty(device="cpu")
    for module in net.modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            fan_in = module.weight[0].numel()
            if isinstance(module, nn.Conv2d):
                mode = "fan_out" if architecture == "resnet18" else "fan_in"
                nn.init.kaiming_normal_(module.weight, mode=mode, nonlinearity="relu", generator=generator)
            else:
                nn.init.kaiming_uniform_(module.weight, a=math.sqrt(5), generator=generator)
            if module.bias is not None:
                bound = 1.0 / math.sqrt(fan_in)
                nn.init.uniform_(module.bias, -bound, bound, generator=generator)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
            module.reset_running_stats()
    return net.to(device)


def _forward_chunks(net, X, chunk: int):
    import torch

    return torch.cat([net(X[a : a + chunk]) for a in range(0, X.shape[0], chunk)])


def _calibrate_batchnorm(net, X, chunk: int) -> None:
    """Set every BatchNorm's running statistics to their averages over the whole data set."""
    import torch
    from torch import nn

    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the chunks
    net.train()
    with torch.no_grad():
        for a in range(0, X.shape[0], chunk):
            if X.shape[0] - a > 1:
                net(X[a : a + chunk])
    for bn in bns:
        bn.momentum = 0.1


def _run_modules(
    X, splits, batch_orders, init_gens, *, architecture, lr, momentum, optimizer, batch_size, device, progress,
    on_epoch,
):
    import torch

    runs, n = len(splits), X.shape[0]
    epochs = len(batch_orders[0])
    Xd = torch.from_numpy(X).to(device)
    per_item = int(np.prod(X.shape[1:])) * 16  # rough activation floats alive per image
    chunk = int(np.clip(_EVAL_FLOATS // per_item, 2, 1024))
    mse_t = np.full((runs, epochs), np.nan)
    mse_v = np.full((runs, epochs), np.nan)
    bounds = _batch_bounds(splits[0][0].size, batch_size)
    total = runs * epochs
    for j in range(runs):
        target = _build_network(architecture, X.shape[1], init_gens[j], device)
        predictor = _build_network(architecture, X.shape[1], init_gens[j], device)
        # The target is a fixed function: its BatchNorm layers use statistics of the whole
        # data set, then it is frozen in eval mode.
        _calibrate_batchnorm(target, Xd, chunk)
        target.eval().requires_grad_(False)
        with torch.inference_mode():
            Y = _forward_chunks(target, Xd, chunk)
        Y = Y.clone()
        train = torch.from_numpy(splits[j][0]).to(device)
        is_train = torch.zeros(n, dtype=torch.bool, device=device)
        is_train[train] = True
        opt = _make_optimizer(list(predictor.parameters()), optimizer, lr, momentum)
        for epoch in range(epochs):
            predictor.train()
            order = torch.from_numpy(batch_orders[j][epoch]).to(device)
            for a, b in bounds:
                idx = train[order[a:b]]
                loss = (predictor(Xd[idx]) - Y[idx]).square().mean()  # torch.nn.MSELoss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            predictor.eval()
            with torch.inference_mode():
                err = (_forward_chunks(predictor, Xd, chunk) - Y).square().sum(1, dtype=torch.float64)
                mse_t[j, epoch] = float(err[is_train].mean())
                mse_v[j, epoch] = float(err[~is_train].mean())
            report(progress, j * epochs + epoch + 1, total, f"run {j + 1}/{runs}, epoch {epoch + 1}/{epochs}")
            _emit_curves(on_epoch, mse_t, mse_v)
    return mse_t, mse_v


# --------------------------------------------------------------------------------------------
# Public function
# --------------------------------------------------------------------------------------------


def rnd_score(
    data,
    *,
    train_size: int = 200,
    epochs: int = 50,
    average_last: int = 10,
    runs: int = 40,
    lr: float = 0.01,
    momentum: float = 0.9,
    optimizer: str = "sgd",
    architecture: str = "auto",
    batch_size: int = 50,
    device: str = "auto",
    rng: RandomLike = None,
    progress: Optional[ProgressCallback] = None,
    on_epoch: Optional[Callable[[np.ndarray], None]] = None,
) -> RNDResult:
    r"""RND score: the normalised generalisation gap of a predictor distilling a random network.

    Each run splits the data at random into a training set :math:`S_t` of ``train_size`` items
    and a validation set :math:`S_v` (the rest), draws a random target network :math:`T` (never
    trained) and a predictor :math:`P` of the same architecture, and trains :math:`P` on
    :math:`S_t` to reproduce :math:`T`'s outputs. After epoch :math:`i`

    .. math::

        \mathrm{MSE}(T, P; S) = \frac{1}{|S|} \sum_{x \in S} \lVert T(x) - P(x) \rVert_2^2,
        \qquad
        \mathrm{RND}_i = \frac{\mathrm{MSE}(T, P_i; S_v) - \mathrm{MSE}(T, P_i; S_t)}
                              {\mathrm{MSE}(T, P_i; S_v) + \mathrm{MSE}(T, P_i; S_t)},

    Eqs. (1) and (2) of [1], and the score is Eq. (3) of [1],

    .. math::

        \mathrm{RND}(S) = \mathbb{E}\Big[\frac{1}{n - n_0 + 1} \sum_{i=n_0}^{n} \mathrm{RND}_i\Big],

    estimated by the mean over ``runs`` runs, each with a fresh split and fresh networks.
    Symbols: :math:`n` = ``epochs``, :math:`n_0 = n -` ``average_last`` :math:`+ 1` (41 for the
    paper's "last 10 of 50"), :math:`P_i` the predictor after :math:`i` epochs. Higher means
    more diverse; the score lies in (-1, 1) and is about 0 for data with no variety.

    Parameters
    ----------
    data : array-like or Dataset
        Items x features ``(N, d)`` (embeddings, tabular data), or images as pixel arrays
        ``(N, H, W)`` or ``(N, H, W, C)`` (channels last, any numeric dtype). A
        :class:`diversity_core.data.Dataset` is accepted too: its pixels are used for image
        datasets with a convolutional architecture, its features (default featurizer when it
        has none) otherwise.
    train_size : int, default 200
        :math:`k = |S_t|`, the number of training items per run (paper: 200).
    epochs : int, default 50
        :math:`n`, training epochs per run (paper: 50).
    average_last : int, default 10
        Length of the averaging window: ``RND_i`` is averaged over epochs
        ``epochs - average_last + 1 .. epochs`` (paper: the last 10).
    runs : int, default 40
        :math:`r`, runs with a fresh split and fresh networks (paper: 40).
    lr : float, default 0.01
        Learning rate (paper: 0.01).
    momentum : float, default 0.9
        SGD momentum (paper: 0.9); ignored by Adam.
    optimizer : {"sgd", "adam"}, default "sgd"
        SGD with momentum (paper) or Adam (the paper's choice for text transformers).
    architecture : {"auto", "mlp", "cnn", "resnet18"}, default "auto"
        ``"mlp"``: two hidden ReLU layers of 256 units and 64 outputs, for features (images
        given to it are flattened). ``"cnn"``: a small CNN for images on a CPU (3x3
        convolutions with 16, 32, 64 channels and strides 1, 2, 2, each followed by BatchNorm
        and ReLU, average pooling to a 2x2 grid, a linear head with 64 outputs). ``"resnet18"``: ResNet-18 (1000 outputs,
        defined in this module, no torchvision), the paper's network. ``"auto"``: the MLP for
        2-D data; for images ResNet-18 when running on CUDA and the small CNN otherwise.
    batch_size : int, default 50
        Mini-batch size for training the predictor. The paper does not state one.
    device : {"auto", "cpu", "cuda"}, default "auto"
        ``"auto"`` uses CUDA when torch sees a GPU.
    rng : None, int or numpy.random.Generator
        Seed of the splits, batch orders and network initialisations.
    progress : callable, optional
        ``progress(done, total, message)`` with ``total = runs * epochs`` run-epochs.
    on_epoch : callable, optional
        ``on_epoch(curves)`` after every epoch, with the ``RND_i`` curves so far as an array
        of shape (runs, epochs), NaN where an epoch has not run yet (for live plots).

    Returns
    -------
    RNDResult
        ``score``, its 95 % interval over runs, per-run scores, the ``RND_i`` curves and the
        train/validation MSE curves, and the resolved settings.

    Raises
    ------
    DiversityInputError
        Bad parameters; fewer items than ``train_size + batch_size`` (the validation set must
        hold at least one batch); data whose items are all identical; an architecture that does
        not fit the data's shape; ``device="cuda"`` without a GPU.
    NumericalError
        Training diverged (non-finite losses); lower ``lr``.

    Notes
    -----
    Deviations from the paper's defaults ([1], Appendix A.3), and the choices it leaves open:

    - **Architecture (deviation).** The default for features is an MLP, not the paper's
      ResNet-18, which needs images and is slow on a CPU. ``rnd_score(images,
      **PAPER_PRESET)`` runs the paper's protocol with ResNet-18, and ``"auto"`` picks it for
      images on a GPU. Scores from different architectures, train sizes or epochs are not
      comparable ([1], A.3-A.4): compare datasets under one setting.
    - **Batch size** 50 (the paper does not give one). A lone last item joins the previous
      batch, so BatchNorm never sees a batch of one.
    - **Training loss** is ``torch.nn.MSELoss``: the squared error averaged over items *and*
      output coordinates, i.e. Eq. (1) divided by the output size. The paper does not say;
      with Eq. (1)'s sum over ResNet-18's 1000 outputs, SGD at the paper's lr 0.01 diverges,
      so the paper presumably used PyTorch's averaging loss. The reported MSEs follow
      Eq. (1); the constant factor cancels in ``RND_i``.
    - **Epoch indexing.** ``RND_i`` is measured after epoch ``i`` (Eq. (2): "after i epochs of
      training"); Algorithm 1 of [1] measures before each update, which shifts the window by
      one epoch.
    - **Normalisation.** Inputs are standardised per feature (MLP) or per channel (CNNs) with
      the mean and standard deviation of the data itself ([1], A.3); a constant feature or
      channel becomes zero. Multiplying the data by a constant therefore leaves the score
      unchanged (exactly, for the same seed).
    - **Initialisation.** The MLP uses Kaiming-uniform (He) weights: with PyTorch's default
      ``nn.Linear`` rule its activations shrink layer by layer, and at lr 0.01 the predictor
      hardly learns in 50 epochs, so every score collapses towards 0. The small CNN uses
      Kaiming-normal (fan-in) convolutions, ResNet-18 torchvision's recipe. Target and
      predictor are independent draws.
    - **BatchNorm in the target.** The CNNs' targets use BatchNorm statistics estimated once
      on the whole data set and then stay in eval mode, so :math:`T` is one fixed function.
      The predictor trains in train mode and is evaluated in eval mode.

    What the score responds to depends on the network and on how far training gets. With the
    MLP preset, uniform noise scores below structured digits, but training much longer (or
    with much smaller batches) lets the predictor memorise the training split, and then
    i.i.d. noise scores highest, since nothing memorised carries over to new noise items. On
    tiny images (8x8 digits) the small CNN also scores uniform noise above the digits, though
    it ranks 10 digit classes above 2. The paper's finding that noise scores low (Fig. 7) was
    made with ResNets on large natural images.

    Speed: all runs of the MLP train at once as stacked weight tensors with batched matrix
    products (the runs stay mathematically independent; SGD and Adam act elementwise). The
    target's outputs are computed once per run, validation and training MSEs come from one
    forward pass over all items under ``torch.inference_mode``, and no ``DataLoader`` is used.
    Cost per epoch is about ``runs * N`` forward passes plus ``runs * train_size`` training
    passes; memory is bounded by evaluating in chunks. Runs of the convolutional networks train
    one after the other. Torch's thread settings are left alone. On a machine shared with
    other busy processes, GNU OpenMP's default spin-waiting at barriers makes two threads
    several times slower than one; set ``OMP_WAIT_POLICY=PASSIVE`` in the environment before
    torch is imported (the ``diversity rnd`` command does), or use ``torch.set_num_threads(1)``.
    ``benchmarks/bench_rnd.py`` measures both. On a CPU, results are deterministic for a fixed seed (explicit
    ``torch.Generator`` and numpy generators; global seeds are never touched). CUDA kernels may
    differ in the last bits from one run to the next.

    References
    ----------
    .. [1] "A Flexible Measurement of Diversity in Datasets with Random Network Distillation"
       (Random Network Distillation as a diversity metric), Eqs. (1)-(3), Algorithm 1,
       Appendix A.3.

    Examples
    --------
    Per-feature standardisation makes the score blind to the data's units; doubling the data
    gives the very same score for the same seed:

    >>> import numpy as np
    >>> from diversity_core.rnd import rnd_score
    >>> X = np.random.default_rng(0).normal(size=(300, 8))
    >>> a = rnd_score(X, runs=2, epochs=3, average_last=2, rng=0)
    >>> b = rnd_score(2 * X, runs=2, epochs=3, average_last=2, rng=0)
    >>> a.score == b.score, a.curves.shape
    (True, (2, 3))
    """
    train_size = _check_int(train_size, "train_size", minimum=1)
    epochs = _check_int(epochs, "epochs", minimum=1)
    average_last = _check_int(average_last, "average_last", minimum=1)
    if average_last > epochs:
        raise DiversityInputError(f"average_last must be at most epochs ({epochs}); got {average_last}.")
    runs = _check_int(runs, "runs", minimum=1)
    batch_size = _check_int(batch_size, "batch_size", minimum=1)
    lr = check_positive(lr, "lr")
    momentum = check_positive(momentum, "momentum", allow_zero=True)
    if momentum >= 1:
        raise DiversityInputError(f"momentum must be in [0, 1); got {momentum}.")
    check_option(optimizer, OPTIMIZERS, "optimizer")
    check_option(architecture, ARCHITECTURES, "architecture")
    check_option(device, DEVICES, "device")
    generator = check_random_state(rng)

    X = _as_input_array(data, architecture)
    n = X.shape[0]
    if n < train_size + batch_size:
        raise DiversityInputError(
            f"RND needs more items than the training split plus one validation batch: "
            f"train_size={train_size} + batch_size={batch_size} = {train_size + batch_size}, "
            f"got {n} items. Lower train_size or batch_size, or add items."
        )
    flat = X.reshape(n, -1)
    if np.all(flat == flat[:1]):
        raise DiversityInputError(
            "data is constant: all items are identical, so there is no diversity to measure "
            "(the RND score would be 0 up to noise)."
        )

    dev = _resolve_device(device)
    arch = _resolve_architecture(architecture, X.ndim, dev)
    Xn = _normalise(X, arch)

    import torch

    # One independent stream per run, so run j is the same whatever the number of runs.
    base = int(generator.integers(2**63 - 1))
    children = np.random.SeedSequence(base).spawn(runs)
    splits, orders, init_gens = [], [], []
    for child in children:
        split_seed, init_seed = child.generate_state(2, dtype=np.uint64)
        run_rng = np.random.default_rng(int(split_seed))
        perm = run_rng.permutation(n)
        splits.append((np.sort(perm[:train_size]), np.sort(perm[train_size:])))
        orders.append(np.stack([run_rng.permutation(train_size) for _ in range(epochs)]))
        init_gens.append(torch.Generator().manual_seed(int(init_seed) & ((1 << 63) - 1)))

    report(progress, 0, runs * epochs, "starting")
    common = dict(
        lr=lr, momentum=momentum, optimizer=optimizer, batch_size=batch_size, device=dev, progress=progress,
        on_epoch=on_epoch,
    )
    if arch == "mlp":
        mse_t, mse_v = _run_mlp(Xn, splits, orders, init_gens, **common)
    else:
        mse_t, mse_v = _run_modules(Xn, splits, orders, init_gens, architecture=arch, **common)

    if not (np.isfinite(mse_t).all() and np.isfinite(mse_v).all()):
        raise NumericalError(f"training diverged (non-finite MSE) with lr={lr}; lower the learning rate.")
    denom = mse_v + mse_t
    if np.any(denom <= 0):
        raise NumericalError("the predictor matched the target exactly on every item; RND_i is 0/0.")
    curves = (mse_v - mse_t) / denom
    run_scores = curves[:, epochs - average_last :].mean(axis=1)
    score = float(run_scores.mean())
    if runs > 1:
        from scipy.special import stdtrit  # Student-t quantile (lighter than scipy.stats)

        half = float(stdtrit(runs - 1, 0.975) * run_scores.std(ddof=1) / math.sqrt(runs))
        ci_low, ci_high = score - half, score + half
    else:
        ci_low = ci_high = math.nan

    settings = {
        "train_size": train_size,
        "epochs": epochs,
        "average_last": average_last,
        "n0": epochs - average_last + 1,
        "runs": runs,
        "lr": lr,
        "momentum": momentum,
        "optimizer": optimizer,
        "architecture": arch,
        "batch_size": batch_size,
        "device": dev,
        "n_items": n,
        "input_shape": list(X.shape[1:]),
        "normalisation": "per feature" if arch == "mlp" else "per channel",
        "confidence": 0.95,
    }
    arrays = []
    for a in (run_scores, curves, mse_t, mse_v):
        a = np.array(a, dtype=np.float64)
        a.setflags(write=False)
        arrays.append(a)
    return RNDResult(score, ci_low, ci_high, *arrays, settings=settings)
