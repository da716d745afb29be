"""When the RND score's headline ordering, structured data above unstructured noise, is unreliable.

The RND score is the normalised generalisation gap of a predictor distilling a random target
network (:func:`~diversity_core.rnd.rnd_score`). The paper ranks natural images far above
uniform noise (Fig. 7, ResNets on large images). That ordering is not a property of the score
alone: it holds only while the predictor learns the target's *learnable* structure and has not
yet memorised its training items, and only for networks that map i.i.d. noise to something
nearly predictable. ``docs/rnd.md`` records the experiments the thresholds below come from
(the digits demo against uniform noise of the same shape, 6-40 runs each; for the
principal-component rule, the text and molecule demos' features against the same features
shuffled across items, 40 runs each).

:func:`rnd_regime_warning` turns a setting into a message (or None) that a caller can show
before or after running the score; :attr:`~diversity_core.rnd.RNDResult.reliability` applies it
to a result's own settings.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

from ..exceptions import DiversityInputError

__all__ = ["rnd_regime_warning", "rnd_reliable_setting", "update_budget", "MLP_MAX_FEATURES", "SGD_MAX_BUDGET",
           "CONV_MIN_SIDE", "PCA_COMPONENTS", "MIN_ITEMS", "MIN_TRAIN_SIZE"]

#: Largest MLP input (features, or pixels of a flattened image) at which the digits scored above
#: uniform noise; with 1024 pixel features noise scored above them at every training length
#: tried, with 256 from about epoch 15.
MLP_MAX_FEATURES = 64

#: Largest SGD update budget ``epochs * steps per epoch * lr / (1 - momentum)`` at which the
#: MLP on the digits' 64 pixels kept the digits above noise (the curves cross near 14; the former
#: default, batches of 50, reached 20 and reversed the ordering).
SGD_MAX_BUDGET = 10.0

#: Smallest image side at which a convolutional network was not seen to reverse the ordering
#: (8 x 8 digits: the small CNN scores noise above them).
CONV_MIN_SIDE = 32

#: Principal components the MLP reads when wider items are reduced first (``rnd_score(...,
#: n_components=32)``), the only number the regime check accepts for a reduction: with 32 the
#: text demo's 18,448 n-gram features and the molecules' 2048 Morgan bits both scored above
#: noise of the same features (each feature shuffled across items), resolved at 30 and 50
#: epochs; with 16 the molecules' did not separate from it, with 64 the text's did not.
PCA_COMPONENTS = 32

#: Fewest items in a scored set at which the data separated from noise of the same features in
#: the regime study (40 runs, the reliable networks above): single groups of 500 molecules did;
#: groups of 250 molecules and 300 digits overlapped with their noise, and the text demo's groups
#: of 200 and 300 items scored *below* their shuffled features, inside the intervals. The pooled
#: demos (1,200-2,000 items) all separated.
MIN_ITEMS = 500

#: Fewest training items per run the paper used (100: its 128 x 128 GAN comparisons and
#: single-image GANs, Appendix A.2, and the training-split ablation, Fig. 11; its default is 200).
#: With too few training items "the generalization gap will be large for any dataset, diverse
#: or not" (Appendix A.4): a 527-item set trained on 10 items scored 0.818 (issue 41).
MIN_TRAIN_SIZE = 100

# rnd_score's defaults, for settings given in part (the app asks before running)
_DEFAULTS = {"architecture": "auto", "train_size": 200, "epochs": 50, "batch_size": None, "lr": 0.01,
             "momentum": 0.9, "optimizer": "sgd", "device": "cpu", "n_components": None}


def update_budget(*, epochs: int, train_size: int, batch_size: int, lr: float, momentum: float) -> float:
    r"""The SGD update budget :math:`U = E \lceil k / b \rceil \eta / (1 - \mu)` of one run.

    :math:`E` epochs of :math:`\lceil k/b \rceil` steps of size :math:`\eta` with momentum
    :math:`\mu` (whose steady-state step is :math:`\eta / (1 - \mu)`). How far the predictor
    gets is, to first order, a function of U alone: the digits' curves against noise cross at
    about the same U whether the steps come from more epochs or smaller batches.

    Examples
    --------
    >>> round(update_budget(epochs=50, train_size=200, batch_size=200, lr=0.01, momentum=0.9), 12)
    5.0
    """
    steps = math.ceil(train_size / batch_size)
    # a lone last item joins the previous batch (rnd's _batch_bounds): one step fewer
    if steps > 1 and train_size - (steps - 1) * batch_size == 1:
        steps -= 1
    return float(epochs * steps * lr / (1.0 - momentum))


def rnd_regime_warning(settings: Optional[Mapping[str, Any]] = None, input_shape: Optional[Sequence[int]] = None,
                       *, n_items: Optional[int] = None, sized: bool = True) -> Optional[str]:
    """A message when the setting is in a regime where RND may rank i.i.d. noise above structured data.

    Parameters
    ----------
    settings : mapping, optional
        :func:`~diversity_core.rnd.rnd_score` keyword arguments (``architecture``,
        ``train_size``, ``epochs``, ``batch_size``, ``lr``, ``momentum``, ``optimizer``,
        ``n_components``, ``device``), or an :class:`~diversity_core.rnd.RNDResult`'s
        ``settings``. Missing keys take rnd_score's defaults; ``"auto"`` and ``None`` are
        resolved as rnd_score does (on ``device``, default CPU).
    input_shape : sequence of int, optional
        The shape of one item: ``(d,)`` for features, ``(H, W)`` or ``(H, W, C)`` for images.
        Default ``settings["input_shape"]``.
    n_items : int, optional
        The number of items of the scored set (of the smallest, when several are scored alike).
        Default ``settings["n_items"]`` (an RNDResult's settings have it); None: not judged.
    sized : bool, default True
        Judge the sizes (the scored set's items and the training split) as well as the network
        and its training; False judges the network and its training only (what another network
        could fix).

    Returns
    -------
    str or None
        None when nothing is known to make the ordering unreliable; otherwise one message
        naming every reason (input size, architecture, training budget, optimizer) and what to
        do.

    Raises
    ------
    DiversityInputError
        No input shape (neither argument nor ``settings["input_shape"]``).

    Notes
    -----
    The rules and their evidence (``docs/rnd.md``; digits demo against uniform noise):

    - MLP on more than :data:`MLP_MAX_FEATURES` inputs: with 1024 pixel features noise scored
      above the digits at every epoch, batch size, lr and optimizer tried, with 256 from about
      epoch 15 of full-batch training;
    - MLP on principal components (``n_components``) other than :data:`PCA_COMPONENTS` (or
      all of them, when the items have fewer features): 32 kept the text and molecule demos'
      features above noise of the same features, 16 did not separate the molecules', 64 not
      the text's (the input-size rule above is then replaced by this one: the MLP reads the
      components, not the features);
    - MLP trained with SGD beyond an update budget (:func:`update_budget`) of
      :data:`SGD_MAX_BUDGET`: the predictor memorises, and noise overtakes the digits;
    - Adam: it memorises within a few epochs (noise far above the digits at lr 6e-4);
    - the small CNN (8 x 8: reversed; 32 x 32: no separation in a short test), and any
      convolutional network on images smaller than :data:`CONV_MIN_SIDE` pixels a side;
    - a set of fewer than :data:`MIN_ITEMS` items, whatever the network: single groups of a few
      hundred items (text, digits, molecules) did not separate from noise of the same features,
      groups of 500 molecules did;
    - a training split of fewer than :data:`MIN_TRAIN_SIZE` items (the paper's smallest): the
      generalisation gap is then large for any data, diverse or not (Appendix A.4 of the paper).

    None is no guarantee: the thresholds come from one data set. Scores of different settings
    are not comparable in any regime.

    Examples
    --------
    >>> rnd_regime_warning({}, input_shape=(64,)) is None
    True
    >>> "memorises" in rnd_regime_warning({"batch_size": 50}, input_shape=(64,))
    True
    >>> rnd_regime_warning({"architecture": "mlp", "n_components": 32}, input_shape=(2048,)) is None
    True
    >>> "300 items" in rnd_regime_warning({}, input_shape=(64,), n_items=300)
    True
    """
    s = dict(_DEFAULTS)
    s.update({k: v for k, v in (settings or {}).items() if v is not None})
    shape = input_shape if input_shape is not None else (settings or {}).get("input_shape")
    if shape is None or len(shape) == 0:
        raise DiversityInputError(
            "rnd_regime_warning needs the shape of one item: pass input_shape=(d,) for features or "
            "(H, W[, C]) for images, or settings with 'input_shape' (an RNDResult's settings have it)."
        )
    shape = tuple(int(v) for v in shape)
    arch = s["architecture"]
    if arch == "auto":
        arch = "mlp" if len(shape) == 1 else ("resnet18" if s["device"] == "cuda" else "cnn")
    batch = s["batch_size"] if (settings or {}).get("batch_size") is not None else (
        s["train_size"] if arch == "mlp" else min(50, s["train_size"]))
    reasons = []
    if arch == "mlp":
        d = math.prod(shape)
        k = s["n_components"]
        if k is not None and min(int(k), d) != min(PCA_COMPONENTS, d):
            reasons.append(
                f"an MLP on {min(int(k), d)} principal components (not {PCA_COMPONENTS}): with {PCA_COMPONENTS} the "
                "text and molecule demos' features scored above noise of the same features, with 16 the "
                "molecules' did not separate from it, with 64 the text's did not"
            )
        elif k is None and d > MLP_MAX_FEATURES:
            reasons.append(
                f"an MLP on {d} input features (more than {MLP_MAX_FEATURES}): on the digits' 1024 pixel features "
                "uniform noise scored above the digits at every epoch, batch size, learning rate and optimizer "
                f"tried, and on 256 features from about epoch 15 of full-batch training (reducing them to "
                f"{PCA_COMPONENTS} principal components keeps structured data above noise)"
            )
        if s["optimizer"] == "sgd":
            budget = update_budget(epochs=s["epochs"], train_size=s["train_size"], batch_size=batch, lr=s["lr"],
                                   momentum=s["momentum"])
            if budget > SGD_MAX_BUDGET * (1 + 1e-9):  # 1 - 0.9 is not exactly 0.1
                reasons.append(
                    f"the training budget epochs x steps per epoch x lr / (1 - momentum) = {budget:.3g} exceeds "
                    f"{SGD_MAX_BUDGET:g}: the predictor memorises its training split, and i.i.d. noise, of which "
                    "nothing memorised carries over, then scores highest (fewer epochs, larger batches or a "
                    "smaller lr keep it below)"
                )
    else:
        side = min(shape[:2]) if len(shape) >= 2 else shape[0]
        if arch == "cnn":
            reasons.append(
                "the small CNN: it ranked uniform noise above the digits on 8 x 8 images and did not separate "
                "them in a short test on 32 x 32 (the paper's ordering was found with ResNets on large natural "
                "images)"
            )
        elif side < CONV_MIN_SIDE:
            reasons.append(
                f"a convolutional network on {shape[0]} x {shape[1]} images: below {CONV_MIN_SIDE} pixels a side "
                "its pooling averages too few independent pixels to make noise predictable"
            )
    if s["optimizer"] == "adam":
        reasons.append("Adam: it memorises the training split within a few epochs (noise far above the digits)")
    n = n_items if n_items is not None else (settings or {}).get("n_items")
    if sized and n is not None and int(n) < MIN_ITEMS:
        reasons.append(
            f"a set of {int(n)} items (fewer than {MIN_ITEMS}): single groups of a few hundred items (the text "
            "demo's 200 and 300, the digits' 300, 250 molecules) did not separate from noise of the same features "
            f"at 40 runs with the reliable networks, groups of {MIN_ITEMS} molecules did (score the items pooled, "
            "or larger sets)"
        )
    if sized and int(s["train_size"]) < MIN_TRAIN_SIZE:
        reasons.append(
            f"a training split of {int(s['train_size'])} items (fewer than {MIN_TRAIN_SIZE}, the paper's smallest; "
            "its default is 200): with too few training items the generalisation gap is large for any data, "
            "diverse or not (Appendix A.4 of the paper)"
        )
    if not reasons:
        return None
    return (
        "RND may rank unstructured (i.i.d.) noise above structured data with this setting: "
        + "; ".join(reasons)
        + ". Compare data sets of one kind under one setting, and read a high score as variety the "
        "predictor cannot generalise, not necessarily meaningful diversity (docs/rnd.md)."
    )


def rnd_reliable_setting(settings: Optional[Mapping[str, Any]] = None, *, pixel_shape: Optional[Sequence[int]] = None,
                         feature_shape: Optional[Sequence[int]] = None, has_features: bool = False,
                         device: str = "cpu") -> Optional[dict]:
    """The first network and input for which :func:`rnd_regime_warning` finds nothing wrong, or None.

    A default that the regime study (``docs/rnd.md``) calls reliable: the app opens the RND
    page with it, and offers it with one click when a user's choice draws a warning.

    Parameters
    ----------
    settings : mapping, optional
        The other :func:`~diversity_core.rnd.rnd_score` keyword arguments (training length,
        batch, lr, ...); their ``architecture`` and ``n_components`` are replaced by each
        candidate's.
    pixel_shape : sequence of int, optional
        The shape of one image, ``(H, W)`` or ``(H, W, C)``, when the items are images.
    feature_shape : sequence of int, optional
        The shape of one item's features, ``(d,)``, when they are known.
    has_features : bool, default False
        The items have features whose width is not known yet (not computed): the MLP on their
        :data:`PCA_COMPONENTS` principal components is a candidate (it reads at most that many
        whatever the width). Implied by ``feature_shape``.
    device : {"cpu", "cuda"}, default "cpu"
        Where the network would train: ResNet-18 is a candidate only on a GPU.

    Returns
    -------
    dict or None
        ``{"architecture": ..., "input": "pixels" or "features", "n_components": k or None,
        "input_shape": ...}`` (``input_shape``: what the network reads, the components when
        ``n_components`` is set) for the first candidate without a warning, in this order: the
        MLP on the flattened pixels (the study's resolved setting on the 8 x 8 digits), the MLP
        on the features, the MLP on the features' :data:`PCA_COMPONENTS` principal components
        (resolved on the text and molecule demos' features), the MLP on the pixels' principal
        components, ResNet-18 on the pixels (GPU only; the rules do not flag it on images of 32
        pixels a side or more, but the paper's ordering was not reproduced here). None when no
        candidate is free of a warning (a training budget beyond the limit, say).

    Examples
    --------
    >>> rnd_reliable_setting(pixel_shape=(8, 8))["architecture"]
    'mlp'
    >>> rnd_reliable_setting(feature_shape=(2048,))["n_components"]
    32
    >>> rnd_reliable_setting({"epochs": 500}, feature_shape=(2048,)) is None
    True
    """
    base = {k: v for k, v in (settings or {}).items() if k not in ("architecture", "n_components")}
    candidates = []  # (architecture, input, n_components, the input's shape)
    if pixel_shape is not None:
        candidates.append(("mlp", "pixels", None, (math.prod(int(v) for v in pixel_shape),)))
    if feature_shape is not None:
        candidates.append(("mlp", "features", None, tuple(int(v) for v in feature_shape)))
    if feature_shape is not None or has_features:
        d = None if feature_shape is None else math.prod(int(v) for v in feature_shape)
        candidates.append(("mlp", "features", PCA_COMPONENTS, (d or PCA_COMPONENTS,)))
    if pixel_shape is not None:
        candidates.append(("mlp", "pixels", PCA_COMPONENTS, (math.prod(int(v) for v in pixel_shape),)))
    if pixel_shape is not None and device == "cuda":
        candidates.append(("resnet18", "pixels", None, tuple(int(v) for v in pixel_shape)))
    for arch, source, k, shape in candidates:
        trial = {**base, "architecture": arch, "device": device, "n_components": k}
        if rnd_regime_warning(trial, input_shape=shape, sized=False) is None:
            read = shape if k is None else (min(k, math.prod(shape)),)
            return {"architecture": arch, "input": source, "n_components": k, "input_shape": read}
    return None
