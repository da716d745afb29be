"""The networks of the RND score: a stacked MLP, a small CNN and ResNet-18 (torch, imported on use).

The MLP is kept as plain stacked weight tensors of shape (runs, in, out), so that every run's
network trains at once with batched matrix products (:mod:`.training`). The convolutional
networks are ``torch.nn.Module`` classes, defined on first use so that importing this module
does not import torch.
"""

from __future__ import annotations

import functools
import math

from .._optional import require

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


def _torch():
    """The torch module, or a MissingDependencyError naming the ``rnd`` extra."""
    return require("torch", purpose="the RND score")


def _mlp_dims(n_features: int) -> list:
    """Layer widths of the MLP preset for ``n_features`` inputs."""
    return [n_features] + [_MLP_HIDDEN] * _MLP_DEPTH + [_MLP_OUT]


def _stacked_mlp(dims, generators, device):
    """Weights and biases of one MLP per generator, stacked along a leading runs axis.

    Kaiming (He) uniform weights for ReLU, W ~ U(-sqrt(6/fan_in), sqrt(6/fan_in)), which keep
    the activations' scale through the layers; biases as PyTorch's ``nn.Linear`` default,
    b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
    """
    torch = _torch()
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
    torch = _torch()
    h = X
    last = len(params) // 2 - 1
    for layer in range(last + 1):
        W, b = params[2 * layer], params[2 * layer + 1]
        h = torch.baddbmm(b, h, W)
        if layer < last:
            h = torch.relu_(h) if not h.requires_grad else torch.relu(h)
    return h


@functools.lru_cache(maxsize=1)
def _networks():
    """Define the convolutional networks (torch imported on first use only)."""
    torch = _torch()
    nn = torch.nn

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
    torch = _torch()
    nn = torch.nn
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
