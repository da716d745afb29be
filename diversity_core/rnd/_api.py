"""The public function of the RND score: validation, the per-run random streams, the score."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np

from .._progress import ProgressCallback, report
from .._stats import t_interval
from .._validation import RandomLike, check_option, check_positive, check_random_state, check_scalar
from ..exceptions import DiversityInputError, NumericalError
from ._inputs import (
    ARCHITECTURES,
    DEVICES,
    OPTIMIZERS,
    _as_input_array,
    _normalise,
    _resolve_architecture,
    _resolve_device,
)
from .networks import _torch
from .result import RNDResult
from .training import _run_mlp, _run_modules

__all__ = ["rnd_score", "PAPER_PRESET", "ARCHITECTURES", "OPTIMIZERS", "DEVICES", "CONV_BATCH", "MIN_VALIDATION"]

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

#: Confidence level of the interval over runs.
_LEVEL = 0.95

#: Mini-batch of the convolutional networks when ``batch_size`` is None (the MLP then trains on
#: its whole training split at once).
CONV_BATCH = 50
#: Validation items every run must keep when ``batch_size`` is None (the former default's batch).
MIN_VALIDATION = 50


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
    batch_size: Optional[int] = None,
    n_components: Optional[int] = None,
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
        defined in :mod:`diversity_core.rnd.networks`, no torchvision), the paper's network. ``"auto"``: the MLP for
        2-D data; for images ResNet-18 when running on CUDA and the small CNN otherwise.
    batch_size : int or None, default None
        Mini-batch size for training the predictor (the paper does not state one). ``None``:
        the whole training split for the MLP (one full-batch step per epoch; see the Notes) and
        50 for the convolutional networks.
    n_components : int or None, default None
        MLP only: its input is the data's top ``n_components`` principal components
        (:func:`diversity_core.preprocess.preprocess`'s ``"pca"`` step on the flattened items,
        fitted on all the items given, as the standardisation is), standardised like any input,
        instead of every feature. At most ``min(N, d)`` components are kept. ``None``: no
        reduction. :data:`~diversity_core.rnd._regime.PCA_COMPONENTS` (32) is the reduction the
        regime study (``docs/rnd.md``) found to keep text and molecule features above noise of
        the same features; on more than 64 features the MLP on all of them is outside the
        regime where structured data score above noise.
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
        Bad parameters; fewer items than ``train_size + batch_size`` for a given batch size (the
        validation set must hold at least one batch), or than ``train_size + 50`` with
        ``batch_size=None``; data whose items are all identical; an architecture that does not
        fit the data's shape; ``n_components`` with a convolutional network; ``device="cuda"``
        without a GPU.
    MemoryBudgetError
        Sparse features (n-gram counts of a text Dataset) whose dense form exceeds the memory
        budget (:func:`diversity_core.set_config`).
    NumericalError
        Training diverged (non-finite losses); lower ``lr``.
    MissingDependencyError
        torch is not installed (``pip install 'diversity-explorer[rnd]'``).

    Notes
    -----
    Deviations from the paper's defaults ([1], Appendix A.3), and the choices it leaves open:

    - **Architecture (deviation).** The default for features is an MLP, not the paper's
      ResNet-18, which needs images and is slow on a CPU. ``rnd_score(images,
      **PAPER_PRESET)`` runs the paper's protocol with ResNet-18, and ``"auto"`` picks it for
      images on a GPU. Scores from different architectures, train sizes or epochs are not
      comparable ([1], A.3-A.4): compare datasets under one setting.
    - **Batch size** (the paper does not give one): the whole training split for the MLP, 50
      for the convolutional networks. With the paper's lr 0.01 and momentum 0.9, batches of 50
      (4 steps per epoch) let the MLP memorise its training split within 50 epochs, and then
      i.i.d. uniform noise scores *above* structured data (digits: 0.414 against 0.400 over 40
      runs); one full-batch step per epoch keeps it in the regime where the digits score above
      the noise (0.160 [0.151, 0.169] against 0.141 [0.137, 0.145]). ``docs/rnd.md`` has the
      measurements. A lone last item joins the previous batch, so BatchNorm never sees a batch
      of one.
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
    MLP defaults on a few dozen features, uniform noise scores below structured digits, but
    training much longer (or with small batches, a larger lr, or Adam) lets the predictor
    memorise the training split, and then i.i.d. noise scores highest, since nothing memorised
    carries over to new noise items; with hundreds of input features (e.g. 1024 pixel
    features) noise scored above the digits at every training length tried. On tiny images
    (8x8 digits) the small CNN also scores uniform noise above the digits, though it ranks 10
    digit classes above 2. The paper's finding that noise scores low (Fig. 7) was made with
    ResNets on large natural images. :func:`rnd_regime_warning` (and
    :attr:`RNDResult.reliability`) say when a setting is in a regime where that ordering is
    unreliable.

    Speed: all runs of the MLP train at once as stacked weight tensors with batched matrix
    products (the runs stay mathematically independent; SGD and Adam act elementwise). The
    target's outputs are computed once per run, validation and training MSEs come from one
    forward pass over all items under ``torch.inference_mode``, and no ``DataLoader`` is used.
    Cost per epoch is about ``runs * N`` forward passes plus ``runs * train_size`` training
    passes; memory is bounded by evaluating in chunks. Runs of the convolutional networks train
    one after the other. Torch's thread settings are left alone. On a machine shared with
    other busy processes, GNU OpenMP's default spin-waiting at barriers makes two threads
    several times slower than one; set ``OMP_WAIT_POLICY=PASSIVE`` in the environment before
    torch is imported (:func:`diversity_core._config.configure_environment` does, and the
    ``diversity rnd`` command calls it), or use ``torch.set_num_threads(1)``.
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
    train_size = check_scalar(train_size, "train_size", int, min_val=1)
    epochs = check_scalar(epochs, "epochs", int, min_val=1)
    average_last = check_scalar(average_last, "average_last", int, min_val=1)
    if average_last > epochs:
        raise DiversityInputError(f"average_last must be at most epochs ({epochs}); got {average_last}.")
    runs = check_scalar(runs, "runs", int, min_val=1)
    if batch_size is not None:
        batch_size = check_scalar(batch_size, "batch_size", int, min_val=1)
    if n_components is not None:
        n_components = check_scalar(n_components, "n_components", int, min_val=1)
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
    if batch_size is not None and n < train_size + batch_size:
        raise DiversityInputError(
            f"RND needs more items than the training split plus one validation batch: "
            f"train_size={train_size} + batch_size={batch_size} = {train_size + batch_size}, "
            f"got {n} items. Lower train_size or batch_size, or add items."
        )
    if batch_size is None and n < train_size + MIN_VALIDATION:
        raise DiversityInputError(
            f"RND needs more items than the training split plus {MIN_VALIDATION} validation items: "
            f"train_size={train_size} + {MIN_VALIDATION} = {train_size + MIN_VALIDATION}, got {n} items. "
            "Lower train_size, or add items."
        )
    flat = X.reshape(n, -1)
    if np.all(flat == flat[:1]):
        raise DiversityInputError(
            "data is constant: all items are identical, so there is no diversity to measure "
            "(the RND score would be 0 up to noise)."
        )
    dev = _resolve_device(device)
    arch = _resolve_architecture(architecture, X.ndim, dev)
    if n_components is not None and arch != "mlp":
        raise DiversityInputError(
            f"n_components reduces the MLP's input; architecture {architecture!r} resolved to {arch!r}, which "
            "reads the image pixels. Use architecture='mlp', or leave n_components=None."
        )
    batch_size = resolve_batch_size(batch_size, arch, train_size)
    return _rnd_score(
        X, train_size=train_size, epochs=epochs, average_last=average_last, runs=runs, lr=lr, momentum=momentum,
        optimizer=optimizer, architecture=arch, batch_size=batch_size, device=dev, generator=generator,
        progress=progress, on_epoch=on_epoch, n_components=n_components,
    )


def _reduce(X: np.ndarray, n_components: int) -> np.ndarray:
    """The flattened items' scores on their top principal directions (the core's one PCA, on validated items)."""
    from ..preprocess import _preprocess

    return _preprocess(X.reshape(X.shape[0], -1).astype(np.float64), ("pca",), n_components)


def resolve_batch_size(batch_size: Optional[int], architecture: str, train_size: int) -> int:
    """The mini-batch size: as given, else the whole training split (MLP) or :data:`CONV_BATCH`."""
    if batch_size is not None:
        return int(batch_size)
    return int(train_size) if architecture == "mlp" else min(CONV_BATCH, int(train_size))


def _run_plan(n: int, train_size: int, epochs: int, runs: int, generator: np.random.Generator):
    """Each run's (train, validation) split, its batch orders and the torch generator of its networks.

    One independent stream per run (``SeedSequence.spawn``), so run j is the same whatever the
    number of runs.
    """
    torch = _torch()
    base = int(generator.integers(2**63 - 1))
    splits, orders, init_gens = [], [], []
    for child in np.random.SeedSequence(base).spawn(runs):
        split_seed, init_seed = child.generate_state(2, dtype=np.uint64)
        run_rng = np.random.default_rng(int(split_seed))
        perm = run_rng.permutation(n)
        splits.append((np.sort(perm[:train_size]), np.sort(perm[train_size:])))
        orders.append(np.stack([run_rng.permutation(train_size) for _ in range(epochs)]))
        init_gens.append(torch.Generator().manual_seed(int(init_seed) & ((1 << 63) - 1)))
    return splits, orders, init_gens


def _rnd_score(
    X: np.ndarray, *, train_size: int, epochs: int, average_last: int, runs: int, lr: float, momentum: float,
    optimizer: str, architecture: str, batch_size: int, device: str, generator: np.random.Generator,
    progress: Optional[ProgressCallback], on_epoch: Optional[Callable[[np.ndarray], None]],
    n_components: Optional[int] = None,
) -> RNDResult:
    """The RND score of validated items ``X`` with a resolved architecture and device (no checks)."""
    n = X.shape[0]
    Z = X
    if n_components is not None:
        Z = _reduce(X, n_components)
        n_components = Z.shape[1]  # at most min(n, d)
    Xn = _normalise(Z, architecture)
    splits, orders, init_gens = _run_plan(n, train_size, epochs, runs, generator)

    report(progress, 0, runs * epochs, "starting")
    common = dict(
        lr=lr, momentum=momentum, optimizer=optimizer, batch_size=batch_size, device=device, progress=progress,
        on_epoch=on_epoch,
    )
    if architecture == "mlp":
        mse_t, mse_v = _run_mlp(Xn, splits, orders, init_gens, **common)
    else:
        mse_t, mse_v = _run_modules(Xn, splits, orders, init_gens, architecture=architecture, **common)

    if not (np.isfinite(mse_t).all() and np.isfinite(mse_v).all()):
        raise NumericalError(f"training diverged (non-finite MSE) with lr={lr}; lower the learning rate.")
    denom = mse_v + mse_t
    if np.any(denom <= 0):
        raise NumericalError("the predictor matched the target exactly on every item; RND_i is 0/0.")
    curves = (mse_v - mse_t) / denom  # Eq. (2)
    run_scores = curves[:, epochs - average_last :].mean(axis=1)
    # Eq. (3): the mean over runs, with the Student-t interval t_{0.975, r-1} s / sqrt(r)
    score, ci_low, ci_high = t_interval(run_scores, _LEVEL)

    settings = {
        "train_size": train_size,
        "epochs": epochs,
        "average_last": average_last,
        "n0": epochs - average_last + 1,
        "runs": runs,
        "lr": lr,
        "momentum": momentum,
        "optimizer": optimizer,
        "architecture": architecture,
        "batch_size": batch_size,
        "device": device,
        "n_items": n,
        "input_shape": list(X.shape[1:]),
        "n_components": n_components,
        "normalisation": "per feature" if architecture == "mlp" else "per channel",
        "confidence": _LEVEL,
    }
    return RNDResult(score, ci_low, ci_high, run_scores, curves, mse_t, mse_v, settings=settings)
