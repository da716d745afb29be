"""Featurizers from the user's own checkpoints: ``hf:<path-or-hub-id>`` through transformers.

A featurizer named ``hf:PATH`` embeds a dataset with the encoder saved in ``PATH`` (a folder
written by ``save_pretrained``, or a Hugging Face hub id already in the local cache): a vision
encoder (ViT, DINOv2, CLIP's vision tower, ...) for image datasets, a text encoder (BERT, CLIP's
text tower, ...) for text datasets; the config says which.

Loading is offline: ``local_files_only=True``, so a model that is neither a folder nor in the
user's Hugging Face cache is an error saying what to do; a download happens only with
``allow_download=True`` (the CLI's ``--allow-download``).

Pooling (one vector per item), first that applies:

1. ``image_embeds`` / ``text_embeds``: the projected embedding of a ``...WithProjection`` model
   (CLIP's shared image-text space);
2. ``pooler_output`` when the checkpoint has a pooler (DINOv2 and CLIP: the layer-normalised CLS
   token; BERT and ViT: their tanh-dense pooler, when its weights were saved: transformers
   would give a checkpoint without them a random pooler, which is never used);
3. otherwise the last hidden state: the CLS token (position 0) for vision, the mean over the
   attention mask for text.

Images are preprocessed by the checkpoint's own image processor (``preprocessor_config.json``,
grayscale repeated to RGB); texts by its tokenizer, padded per batch and truncated to the
model's maximum length. Use the cosine kernel (:func:`~diversity_core.featurizers.default_kernel`).

The result store's key (:func:`hf_version`) holds a hash of the model's ``config.json`` and the
sizes and modification times of its weight files, so re-saving a model gives new features.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from .._optional import require
from .._progress import ProgressCallback
from ..exceptions import DiversityInputError
from ._runtime import BatchProgress, Prefetch, import_torch, inference_threads, torch_threads

__all__ = [
    "HF_PREFIX",
    "HFModel",
    "hf_model",
    "hf_features",
    "hf_version",
    "hf_found_locally",
    "pooled_output",
    "describe",
]

#: The prefix of the featurizer names this module serves.
HF_PREFIX = "hf:"
_WEIGHTS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack")


@dataclass(frozen=True)
class HFModel:
    """A checkpoint found on this machine.

    Attributes
    ----------
    source : str
        What the user wrote after ``hf:`` (a folder or a hub id).
    folder : Path
        The local folder holding ``config.json`` (the hub cache's snapshot for a hub id).
    modality : {"images", "text"}
    model_type : str
        The config's ``model_type`` (e.g. ``"dinov2"``, ``"bert"``).
    """

    source: str
    folder: Path
    modality: str
    model_type: str


def _source_of(name: str) -> str:
    if not name.startswith(HF_PREFIX) or not name[len(HF_PREFIX) :].strip():
        raise DiversityInputError(
            f"featurizer {name!r} is not of the form hf:PATH; write hf: followed by a model folder "
            "(saved with save_pretrained) or a Hugging Face hub id, e.g. hf:./my-dinov2."
        )
    return name[len(HF_PREFIX) :].strip()


def _local_folder(source: str) -> Optional[Path]:
    """The folder holding ``config.json`` for ``source``, without any download (None if not here)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path.resolve() if (path / "config.json").is_file() else None
    if path.is_absolute() or source.startswith(".") or source.count("/") > 1:
        return None  # a path that is not there (a hub id is "name" or "org/name")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    try:
        found = try_to_load_from_cache(source, "config.json")
    except Exception:  # noqa: BLE001 - an id the hub library refuses is not in the cache
        return None
    return Path(found).parent if isinstance(found, str) else None


def hf_found_locally(name: str) -> bool:
    """Whether ``hf:SOURCE`` names a model on this machine (a folder with config.json, or the hub cache).

    Reads no weights and imports no model code: what the app checks before listing a model.

    Examples
    --------
    >>> hf_found_locally("hf:/no/such/folder")
    False
    """
    try:
        return _local_folder(_source_of(name)) is not None
    except DiversityInputError:
        return False


def _not_found(source: str) -> DiversityInputError:
    path = Path(source).expanduser()
    if path.is_dir():
        return DiversityInputError(
            f"{source!r} is a folder but holds no config.json; point hf: at the folder written by the model's "
            "save_pretrained (config.json and the weights)."
        )
    return DiversityInputError(
        f"model {source!r} was not found: no folder of that name exists, and it is not in the Hugging Face "
        "cache. Give the path of a folder saved with save_pretrained, or let it download once with "
        "--allow-download (allow_download=True in Python)."
    )


def _config_kind(config) -> str:
    """``"images"`` or ``"text"`` from a transformers config."""
    if (
        getattr(config, "vision_config", None) is not None
        and getattr(config, "text_config", None) is not None
    ):
        raise DiversityInputError(
            f"the {config.model_type} checkpoint holds two encoders (images and text); save the one you need, e.g. "
            "CLIPVisionModelWithProjection.from_pretrained(path).save_pretrained('clip-vision') (or "
            "CLIPTextModelWithProjection for texts), and use hf: with that folder."
        )
    if hasattr(config, "num_channels") and hasattr(config, "image_size"):
        return "images"
    if hasattr(config, "vocab_size"):
        return "text"
    raise DiversityInputError(
        f"cannot tell whether the {config.model_type} checkpoint encodes images or text (its config has neither "
        "num_channels/image_size nor vocab_size); hf: supports vision and text encoders."
    )


def hf_model(name: str, *, allow_download: bool = False) -> HFModel:
    """The checkpoint ``hf:SOURCE`` names: its local folder and modality (reads its config only).

    Parameters
    ----------
    name : str
        ``"hf:"`` followed by a folder saved with ``save_pretrained`` or a hub id.
    allow_download : bool, default False
        Fetch a hub id missing from the local cache (its config now, the weights when it runs).

    Returns
    -------
    HFModel

    Raises
    ------
    DiversityInputError
        Not of the form ``hf:PATH``; a model not found locally (saying how to get it); a
        dual encoder (saying how to save one tower).
    MissingDependencyError
        transformers is not installed (the message names the extra ``[hf]``).
    """
    source = _source_of(name)
    folder = _local_folder(source)
    if folder is None and not allow_download:
        raise _not_found(source)
    transformers = require("transformers", purpose="hf: featurizers")
    try:
        config = transformers.AutoConfig.from_pretrained(
            str(folder or source), local_files_only=folder is not None
        )
    except (OSError, ValueError) as exc:
        raise DiversityInputError(f"could not read the config of model {source!r}: {exc}") from None
    if folder is None:
        folder = _local_folder(source)
        if folder is None:
            raise _not_found(source)
    return HFModel(
        source=source, folder=folder, modality=_config_kind(config), model_type=str(config.model_type)
    )


def hf_version(model: HFModel) -> str:
    """``"config <hash>; weights <hash>"``: the model's config and the sizes and times of its weight files.

    Part of the result store's key: features computed with other weights are never reused.
    """
    config = (model.folder / "config.json").read_bytes()
    h = hashlib.blake2b(digest_size=16)
    for f in sorted(model.folder.iterdir()):
        if f.suffix in _WEIGHTS_SUFFIXES or f.name.endswith(".index.json"):
            st = f.stat()
            h.update(f"{f.name}|{st.st_size}|{st.st_mtime_ns}\n".encode("utf-8", "surrogatepass"))
    return f"config {hashlib.blake2b(config, digest_size=8).hexdigest()}; weights {h.hexdigest()}"


def pooled_output(output, attention_mask=None, *, modality: str, use_pooler: bool = True):
    """One vector per item from a transformers model output (the module docstring's pooling rule).

    Parameters
    ----------
    output : transformers ModelOutput
    attention_mask : torch.Tensor of shape (batch, tokens), optional
        The tokenizer's mask, for the mean over tokens of a text model without a pooler.
    modality : {"images", "text"}
    use_pooler : bool, default True
        False skips ``pooler_output`` (a checkpoint saved without its pooler's weights).

    Returns
    -------
    torch.Tensor of shape (batch, dim)
    """
    for field in ("image_embeds", "text_embeds") + (("pooler_output",) if use_pooler else ()):
        value = getattr(output, field, None)
        if value is not None:
            return value
    hidden = output.last_hidden_state
    if modality == "images" or attention_mask is None:
        return hidden[:, 0]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)


def _load(model: HFModel, torch, allow_download: bool):
    transformers = require("transformers", purpose="hf: featurizers")
    where = str(model.folder)
    try:
        net, info = transformers.AutoModel.from_pretrained(
            where, local_files_only=not allow_download, output_loading_info=True
        )
        if model.modality == "images":
            prep = transformers.AutoImageProcessor.from_pretrained(where, local_files_only=not allow_download)
        else:
            prep = transformers.AutoTokenizer.from_pretrained(where, local_files_only=not allow_download)
    except (OSError, ValueError) as exc:
        what = "image processor (preprocessor_config.json)" if model.modality == "images" else "tokenizer"
        raise DiversityInputError(
            f"could not load model {model.source!r} and its {what} from {where}: {exc}. Save both with "
            "save_pretrained into that folder."
        ) from None
    missing = [k for k in info.get("missing_keys", ()) if k]
    pooler = [k for k in missing if k.split(".")[0] == "pooler"]
    if len(missing) > len(pooler):
        others = [k for k in missing if k not in pooler]
        raise DiversityInputError(
            f"model {model.source!r} lacks {len(others)} weight tensors the {type(net).__name__} needs (e.g. "
            f"{others[:3]}); they would be random. Save the whole model with save_pretrained."
        )
    return net.eval(), prep, not pooler


def _rgb(img):
    from .images import _to_pil

    return _to_pil(img).convert("RGB")


def _batches(items: Iterable, batch_size: int, prepare):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == batch_size:
            yield len(batch), prepare(batch)
            batch = []
    if batch:
        yield len(batch), prepare(batch)


def hf_features(
    items: Iterable,
    name: str,
    *,
    batch_size: int = 32,
    allow_download: bool = False,
    progress: Optional[ProgressCallback] = None,
    n_items: Optional[int] = None,
) -> np.ndarray:
    """Pooled features of images or texts from the checkpoint ``hf:SOURCE``, float32, one row per item.

    Parameters
    ----------
    items : iterable
        Images (uint8 arrays H x W (x C), or PIL images) for a vision encoder; strings for a
        text encoder.
    name : str
        ``"hf:"`` followed by a model folder or a cached hub id (:func:`hf_model`).
    batch_size : int, default 32
        Items per forward pass.
    allow_download : bool, default False
        Let transformers download what is missing from the local cache.
    progress : callable, optional
        ``progress(done, total, message)`` per batch, with the time left.
    n_items : int, optional
        The number of items when ``items`` has no ``len`` (for the progress).

    Returns
    -------
    ndarray of shape (N, dim), float32
        The pooled output (module docstring), as calling the model directly gives.

    Raises
    ------
    DiversityInputError
        See :func:`hf_model`; an empty input; a checkpoint without its image processor or
        tokenizer.
    """
    if int(batch_size) < 1:
        raise DiversityInputError(f"batch_size must be a positive integer; got {batch_size!r}.")
    model = hf_model(name, allow_download=allow_download)
    torch = import_torch("hf: featurizers")
    net, prep, use_pooler = _load(model, torch, allow_download)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    net.to(device)
    total = n_items if n_items is not None else (len(items) if hasattr(items, "__len__") else 0)
    if model.modality == "images":

        def prepare(batch: Sequence):
            return dict(prep(images=[_rgb(x) for x in batch], return_tensors="pt"))
    else:
        limit = min(
            int(getattr(prep, "model_max_length", 512) or 512),
            int(getattr(net.config, "max_position_embeddings", 512) or 512),
        )

        def prepare(batch: Sequence):
            return dict(
                prep(
                    [str(t) for t in batch],
                    padding=True,
                    truncation=True,
                    max_length=limit,
                    return_tensors="pt",
                )
            )

    where = "the GPU" if device == "cuda" else f"the CPU ({inference_threads(torch)} threads)"
    stage = BatchProgress(progress, total, f"embedding {model.modality} with {model.model_type} on {where}")
    stage.start()
    out, done = [], 0
    with (
        torch_threads(torch, inference_threads(torch)),
        torch.inference_mode(),
        Prefetch(_batches(items, int(batch_size), prepare)) as batches,
    ):
        for rows, inputs in batches:
            inputs = {k: v.to(device) for k, v in inputs.items()}
            pooled = pooled_output(
                net(**inputs), inputs.get("attention_mask"), modality=model.modality, use_pooler=use_pooler
            )
            out.append(pooled.float().cpu().numpy())
            done += rows
            stage.update(min(done, total) if total else done)
    if not out:
        raise DiversityInputError("there are no items to featurize.")
    return np.ascontiguousarray(np.concatenate(out, axis=0), dtype=np.float32)


def describe(model: HFModel) -> str:
    """One line for the registry and the app's help text."""
    kind = "vision" if model.modality == "images" else "text"
    return f"{model.model_type} {kind} encoder from {model.folder}: pooled output (docs/checkpoints.md), cosine kernel."
