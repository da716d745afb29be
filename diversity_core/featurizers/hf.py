"""Featurizers from the user's own checkpoints: ``hf:<path-or-hub-id>`` through transformers.

A featurizer named ``hf:PATH`` embeds a dataset with the encoder saved in ``PATH`` (a folder
written by ``save_pretrained``, or a Hugging Face hub id already in the local cache): a vision
encoder (ViT, DINOv2, CLIP's vision tower, ...) for image datasets, a text encoder (BERT, CLIP's
text tower, ...) for text datasets; the config says which.

Loading is offline: ``local_files_only=True``, so a model that is neither a folder nor in the
user's Hugging Face cache is an error saying what to do; a download happens only with
``allow_download=True`` (the CLI's ``--allow-download``). A folder is read as it is; a hub id is
handed to transformers as the id, so that it reads the whole cached snapshot (and, with
``allow_download=True``, fetches the weights and preprocessing files missing from it).

A CLIP-style checkpoint holding both encoders in one shared space (``CLIPModel``: a config with a
``vision_config`` and a ``text_config``, whose towers transformers builds as
``...VisionModelWithProjection`` and ``...TextModelWithProjection``) is read one tower at a time:
as a featurizer its image tower with the projection (``image_embeds``, what
:func:`~diversity_core.search` ranks text queries against); ``tower="text"`` (:func:`hf_encoder`)
loads its text tower with the projection (``text_embeds``), the query side of a text search. The
other tower's weights are left unread, without a warning.

The network built is the class the config's ``architectures[0]`` names, when transformers has it
and it is an encoder (a base model such as ``Dinov2Model`` or ``BertModel``, or a
``...WithProjection`` model); a checkpoint saved from a task model (``...For...``, ``...Head...``)
or without ``architectures`` gets transformers' ``AutoModel``, its base encoder. Weights the
checkpoint lacks are an error (they would be random; a missing pooler excepted, see below);
weights it holds that the network does not use (a task head) give an :class:`UnusedWeightsWarning`.

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

No code from a model folder or the hub is ever run: every transformers loader is called with
``trust_remote_code=False`` (the config, the network, the image processor, the tokenizer), so a
checkpoint whose ``auto_map`` names its own Python classes is refused with a message, never
prompted about on a terminal. Weights are read by transformers' safe loaders; a pickled
``pytorch_model.bin`` holding more than tensors, a broken safetensors file and weights whose
shapes do not fit the config are each a :class:`~diversity_core.exceptions.DiversityInputError`
with one line saying what to do (the CLI's exit 2).

The result store's key (:func:`hf_version`) holds a hash of the model's ``config.json`` and the
sizes and modification times of its weight files, so re-saving a model gives new features.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from .._optional import require
from .._progress import ProgressCallback
from ..exceptions import DiversityInputError, UnusedWeightsWarning
from ._runtime import (
    BatchProgress,
    Prefetch,
    import_torch,
    inference_threads,
    is_refused_pickle,
    torch_threads,
    unreadable_weights,
)

__all__ = [
    "HF_PREFIX",
    "HFModel",
    "hf_model",
    "hf_features",
    "hf_encoder",
    "HFEncoder",
    "hf_version",
    "hf_found_locally",
    "pooled_output",
    "describe",
    "UnusedWeightsWarning",
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
    from_hub : bool, default False
        True when ``source`` is a hub id: transformers loads it by that id (the whole cached
        snapshot, and what is missing from it when downloads are allowed), not from ``folder``,
        which may hold only the files fetched so far.
    dual : bool, default False
        True for a CLIP-style checkpoint holding an image and a text encoder in one shared space:
        ``modality`` names the tower that is loaded (with its projection).
    """

    source: str
    folder: Path
    modality: str
    model_type: str
    from_hub: bool = False
    dual: bool = False

    @property
    def location(self) -> str:
        """What transformers' ``from_pretrained`` is given: the hub id, or the folder's path."""
        return self.source if self.from_hub else str(self.folder)


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


def _is_local_path(source: str) -> bool:
    return Path(source).expanduser().is_dir()


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


def _is_dual(config) -> bool:
    """Whether a config describes two encoders (images and text), as CLIP's does."""
    return getattr(config, "vision_config", None) is not None and getattr(config, "text_config", None) is not None


def _tower_classes(transformers, config) -> Optional[dict]:
    """``{"images": class, "text": class}``: the towers with projection of a dual checkpoint, or None.

    Named after ``architectures[0]`` (``CLIPModel`` -> ``CLIPVisionModelWithProjection`` and
    ``CLIPTextModelWithProjection``), or after the base model of the config's ``model_type``.
    """
    names = [a for a in (getattr(config, "architectures", None) or [])[:1] if isinstance(a, str)]
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    base = MODEL_MAPPING_NAMES.get(str(config.model_type))
    names += [base] if isinstance(base, str) else []
    for name in names:
        if not name.endswith("Model"):
            continue
        prefix = name[: -len("Model")]
        towers = {m: getattr(transformers, f"{prefix}{t}ModelWithProjection", None)
                  for m, t in (("images", "Vision"), ("text", "Text"))}
        if all(isinstance(c, type) and issubclass(c, transformers.PreTrainedModel) for c in towers.values()):
            return towers
    return None


def _modality(source: str, config, transformers, tower: Optional[str]) -> tuple:
    """``(modality, dual)`` of a checkpoint: the tower to load (``tower``, else the images of a dual one)."""
    if _is_dual(config):
        if _tower_classes(transformers, config) is None:
            raise DiversityInputError(
                f"the {config.model_type} checkpoint holds two encoders (images and text) that hf: cannot load one "
                "at a time; save the one you need with its projection, e.g. "
                "CLIPVisionModelWithProjection.from_pretrained(path).save_pretrained('clip-vision') (or "
                "CLIPTextModelWithProjection for texts), and use hf: with that folder."
            )
        return tower or "images", True
    modality = _config_kind(config)
    if tower is not None and tower != modality:
        raise DiversityInputError(
            f"model {source!r} encodes {modality} only, and {tower} are needed here; give a CLIP-style folder holding "
            "both encoders (saved with CLIPModel.save_pretrained: its image and text towers share one space)."
        )
    return modality, False


def _config_kind(config) -> str:
    """``"images"`` or ``"text"`` from the config of a single encoder."""
    if hasattr(config, "num_channels") and hasattr(config, "image_size"):
        return "images"
    if hasattr(config, "vocab_size"):
        return "text"
    raise DiversityInputError(
        f"cannot tell whether the {config.model_type} checkpoint encodes images or text (its config has neither "
        "num_channels/image_size nor vocab_size); hf: supports vision and text encoders."
    )


def _custom_code(source: str, where: str, classes=()) -> DiversityInputError:
    named = f" ({', '.join(sorted(map(str, classes))[:3])})" if classes else ""
    return DiversityInputError(
        f"model {source!r} needs its own Python code: the auto_map of its {where} names classes of the model's "
        f"files{named}, and hf: never runs code from a model folder or the hub (trust_remote_code=False). Use a "
        "checkpoint of an architecture transformers builds itself (saved with save_pretrained from a transformers "
        "class), or compute the features yourself and load them as embeddings."
    )


def _is_custom_code_error(exc: BaseException) -> bool:
    """Whether transformers refused to load because the checkpoint needs ``trust_remote_code=True``."""
    text = str(exc)
    return "trust_remote_code" in text or "custom code" in text


def _refuse_custom_code(source: str, folder: Path, transformers) -> None:
    """Refuse a folder whose config.json maps its model type to the folder's own code (``auto_map``).

    Read as JSON, before transformers sees it: a model type transformers builds itself loads its
    own classes whatever ``auto_map`` says (``trust_remote_code=False``), any other needs the code.
    """
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # transformers' own reading names the problem
    auto_map = config.get("auto_map") if isinstance(config, dict) else None
    if not auto_map:
        return
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if str(config.get("model_type", "")) not in CONFIG_MAPPING:
        classes = auto_map.values() if isinstance(auto_map, dict) else ()
        raise _custom_code(source, "config.json", [c if isinstance(c, str) else "/".join(map(str, c)) for c in classes])


def hf_model(name: str, *, allow_download: bool = False, tower: Optional[str] = None) -> HFModel:
    """The checkpoint ``hf:SOURCE`` names: its local folder and modality (reads its config only).

    Parameters
    ----------
    name : str
        ``"hf:"`` followed by a folder saved with ``save_pretrained`` or a hub id.
    allow_download : bool, default False
        Fetch a hub id missing from the local cache (its config now; the weights and the
        preprocessing files when :func:`hf_features` loads it by its id).
    tower : {"images", "text"}, optional
        The encoder needed: the tower of that name of a CLIP-style dual checkpoint, or a single
        encoder of that modality. Default: a single encoder's own modality, a dual one's images.

    Returns
    -------
    HFModel

    Raises
    ------
    DiversityInputError
        Not of the form ``hf:PATH``; a model not found locally (saying how to get it); a
        dual encoder whose towers transformers cannot build apart (saying how to save one); a
        single encoder of another modality than ``tower``; a config whose ``auto_map`` needs the
        model's own Python code (never run: ``trust_remote_code=False``).
    MissingDependencyError
        transformers is not installed (the message names the extra ``[hf]``).
    """
    source = _source_of(name)
    if tower is not None and tower not in ("images", "text"):
        raise DiversityInputError(f"tower must be 'images' or 'text'; got {tower!r}.")
    folder = _local_folder(source)
    if folder is None and not allow_download:
        raise _not_found(source)
    transformers = require("transformers", purpose="hf: featurizers")
    if folder is not None:
        _refuse_custom_code(source, folder, transformers)
    try:
        config = transformers.AutoConfig.from_pretrained(
            str(folder or source), local_files_only=folder is not None, trust_remote_code=False
        )
    except (OSError, ValueError) as exc:
        if _is_custom_code_error(exc):
            raise _custom_code(source, "config.json") from None
        raise DiversityInputError(f"could not read the config of model {source!r}: {exc}") from None
    if folder is None:
        folder = _local_folder(source)
        if folder is None:
            raise _not_found(source)
    modality, dual = _modality(source, config, transformers, tower)
    return HFModel(
        source=source,
        folder=folder,
        modality=modality,
        model_type=str(config.model_type),
        from_hub=not _is_local_path(source),
        dual=dual,
    )


def hf_version(model: HFModel) -> str:
    """``"config <hash>; weights <hash>"``: the model's config and the sizes and times of its weight files.

    Part of the result store's key: features computed with other weights are never reused. For a
    hub id the snapshot's folder name (the commit of the revision in the cache) is hashed too, so
    another revision is another key even before its weights are fetched.
    """
    config = (model.folder / "config.json").read_bytes()
    h = hashlib.blake2b(digest_size=16)
    if model.from_hub:
        h.update(f"revision|{model.folder.name}\n".encode("utf-8", "surrogatepass"))
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


def _is_encoder_class(name: str) -> bool:
    """Whether an ``architectures`` entry names an encoder whose output the pooling rule reads.

    Task models (``ViTForImageClassification``, ``BertForMaskedLM``, ``GPT2LMHeadModel``) return
    logits, not hidden states: their checkpoints are loaded into the base encoder instead.
    """
    return "For" not in name and "Head" not in name


def _model_class(transformers, config):
    """The class that builds the network for ``config``.

    ``config.architectures[0]`` when transformers has it and it is an encoder (module docstring),
    else ``AutoModel``.
    """
    for name in (getattr(config, "architectures", None) or [])[:1]:
        if not isinstance(name, str) or not _is_encoder_class(name):
            continue
        try:
            cls = getattr(transformers, name, None)
        except Exception:  # noqa: BLE001 - a class whose backend is missing: fall back to AutoModel
            cls = None
        if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
            return cls
    return transformers.AutoModel


def _load_failed(model: HFModel, what: str, exc: Exception, allow_download: bool) -> DiversityInputError:
    if not model.from_hub:
        return DiversityInputError(
            f"could not load model {model.source!r} and its {what} from {model.folder}: {exc}. Save both with "
            "save_pretrained into that folder."
        )
    if allow_download:
        return DiversityInputError(
            f"could not download model {model.source!r} and its {what} into the Hugging Face cache: {exc}. "
            "Check the hub id and the network, or give the path of a folder saved with save_pretrained."
        )
    return DiversityInputError(
        f"model {model.source!r} is only partly in the Hugging Face cache ({model.folder}): its weights or its "
        f"{what} are missing ({exc}). Let it download the rest once with --allow-download "
        "(allow_download=True in Python), or give the path of a folder saved with save_pretrained."
    )


def _mismatch(key) -> str:
    """``"name: checkpoint [8, 16], config [8, 32]"`` from transformers' ``(name, shape, shape)``."""
    if isinstance(key, tuple) and len(key) == 3:
        name, saved, built = key
        return f"{name}: checkpoint {list(saved)}, config {list(built)}"
    return str(key[0] if isinstance(key, tuple) else key)


def _weights_files(folder: Path) -> list:
    return sorted(f for f in folder.iterdir() if f.suffix in _WEIGHTS_SUFFIXES and f.is_file())


def _is_weights_error(exc: BaseException) -> bool:
    """Whether a loader's OSError/ValueError is about reading the weights' bytes (torch's refusal)."""
    return is_refused_pickle(exc) or "weights_only" in str(exc)


def _unreadable_weights(model: HFModel, exc: Exception) -> DiversityInputError:
    """The one-line error for weights that cannot be read safely (pickled objects, a broken file)."""
    files = _weights_files(model.folder)
    names = ", ".join(f.name for f in files[:3]) + (", ..." if len(files) > 3 else "")
    return unreadable_weights(
        f"the weights file of model {model.source!r} ({names or 'none found'})",
        exc,
        empty=bool(files) and any(f.stat().st_size == 0 for f in files),
        fix="Save the model again with save_pretrained (it writes model.safetensors), or download it again.",
    )


@contextlib.contextmanager
def _quiet(transformers):
    """Only transformers' errors logged while a checkpoint loads (its load report repeats our one-line errors)."""
    logging = transformers.utils.logging
    before = logging.get_verbosity()
    if before >= logging.ERROR:
        yield
        return
    logging.set_verbosity(logging.ERROR)
    try:
        yield
    finally:
        if logging.get_verbosity() == logging.ERROR:  # unless someone else changed it meanwhile
            logging.set_verbosity(before)


def _check_loading(model: HFModel, net, info) -> bool:
    """Refuse missing or mis-shaped weights, warn about unused ones; whether the pooler's weights were saved.

    The tower of a dual checkpoint leaves the other tower's weights unused, without a warning: only
    unused weights under the tower's own modules are reported.
    """
    cls = type(net).__name__
    mismatched = sorted(_mismatch(k) for k in info.get("mismatched_keys", ()) if k)
    if mismatched:
        raise DiversityInputError(
            f"model {model.source!r} has {len(mismatched)} weight tensors whose shapes do not fit the "
            f"{cls} its config describes (e.g. {'; '.join(mismatched[:3])}); save the config and the weights of "
            "the same model with save_pretrained."
        )
    missing = sorted(k for k in info.get("missing_keys", ()) if k)
    pooler = [k for k in missing if k.split(".")[0] == "pooler"]
    if len(missing) > len(pooler):
        others = [k for k in missing if k not in pooler]
        raise DiversityInputError(
            f"model {model.source!r} lacks {len(others)} weight tensors the {cls} needs (e.g. "
            f"{others[:3]}); they would be random. Save the whole model with save_pretrained."
        )
    unused = sorted(k for k in info.get("unexpected_keys", ()) if k)
    if model.dual:
        own = {name for name, _ in net.named_children()} | {name for name, _ in net.named_parameters(recurse=False)}
        unused = [k for k in unused if k.split(".")[0] in own]
    if unused:
        warnings.warn(
            f"model {model.source!r}: {len(unused)} weight tensors of the checkpoint are not used by the {cls} "
            f"built from its config (e.g. {unused[:3]}); the features are that {cls}'s pooled output. If those "
            "weights belong to the encoder (a projection), set the config's architectures to the class that "
            "uses them (e.g. CLIPVisionModelWithProjection) and save it again.",
            UnusedWeightsWarning,
            stacklevel=4,
        )
    return not pooler


def _load(model: HFModel, torch, allow_download: bool):
    transformers = require("transformers", purpose="hf: featurizers")
    where, offline = model.location, not allow_download
    what = "image processor (preprocessor_config.json)" if model.modality == "images" else "tokenizer"
    safe = {"local_files_only": offline, "trust_remote_code": False}  # never the checkpoint's own code
    try:
        with _quiet(transformers):
            config = transformers.AutoConfig.from_pretrained(where, **safe)
            cls = _model_class(transformers, config)
            if model.dual:
                cls, config = _tower_classes(transformers, config)[model.modality], _tower_config(config, model)
            try:
                # mismatched shapes are reported in info (then refused by _check_loading), not raised
                net, info = cls.from_pretrained(
                    where, config=config, output_loading_info=True, ignore_mismatched_sizes=True, **safe
                )
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - a weights file that cannot be read safely: one message
                if isinstance(exc, (OSError, ValueError)) and not _is_weights_error(exc):
                    raise  # a missing file or a config problem: _load_failed below says what to do
                raise _unreadable_weights(model, exc) from None
            if model.modality == "images":
                prep = transformers.AutoImageProcessor.from_pretrained(where, **safe)
            else:
                prep = transformers.AutoTokenizer.from_pretrained(where, **safe)
    except DiversityInputError:
        raise
    except (OSError, ValueError) as exc:
        if _is_custom_code_error(exc):
            raise _custom_code(model.source, f"{what} or config") from None
        raise _load_failed(model, what, exc, allow_download) from None
    use_pooler = _check_loading(model, net, info)
    return net.eval(), prep, use_pooler


def _tower_config(config, model: HFModel):
    """The config of a dual checkpoint's tower ``model.modality``, with the checkpoint's projection size.

    A tower's own config defaults its ``projection_dim`` (512 for CLIP), which need not be the size
    the dual model was saved with (the dual config's ``projection_dim``).
    """
    import copy

    sub = copy.deepcopy(config.vision_config if model.modality == "images" else config.text_config)
    if getattr(config, "projection_dim", None) is not None:
        sub.projection_dim = config.projection_dim
    return sub


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
    tower: Optional[str] = None,
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
        Let transformers download what a hub id is missing from the local cache (the config, the
        weights, the image processor or tokenizer).
    progress : callable, optional
        ``progress(done, total, message)`` per batch, with the time left.
    n_items : int, optional
        The number of items when ``items`` has no ``len`` (for the progress).
    tower : {"images", "text"}, optional
        The encoder to run (:func:`hf_model`): the text tower of a CLIP-style dual checkpoint
        with ``"text"``; by default a single encoder, or a dual checkpoint's image tower.

    Returns
    -------
    ndarray of shape (N, dim), float32
        The pooled output (module docstring), as calling the model directly gives.

    Raises
    ------
    DiversityInputError
        See :func:`hf_model`; an empty input; a checkpoint without its image processor or
        tokenizer, or lacking weights its network needs (a hub id only partly in the cache: the
        message names ``--allow-download``); one that needs its own Python code (never run);
        weights holding pickled objects, a broken safetensors or PyTorch file, or weights whose
        shapes do not fit the config (named with both shapes).

    Warns
    -----
    UnusedWeightsWarning
        The checkpoint holds weights the network does not use (e.g. a classification head).
    """
    if int(batch_size) < 1:
        raise DiversityInputError(f"batch_size must be a positive integer; got {batch_size!r}.")
    encoder = hf_encoder(name, tower=tower, allow_download=allow_download)
    return encoder.embed(items, batch_size=batch_size, progress=progress, n_items=n_items)


class HFEncoder:
    """A checkpoint's encoder loaded once (its network, its image processor or tokenizer) to embed items.

    Made by :func:`hf_encoder`; :meth:`embed` is what :func:`hf_features` runs. Keeping one lets a
    caller embed many small inputs (one search query at a time) without loading the model again.
    """

    def __init__(self, model: HFModel, net, prep, use_pooler: bool, torch) -> None:
        self.model, self._net, self._prep, self._use_pooler, self._torch = model, net, prep, use_pooler, torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        net.to(self.device)

    def __repr__(self) -> str:
        return f"HFEncoder({self.model.model_type} {self.model.modality} encoder from {self.model.folder})"

    def _prepare(self):
        prep = self._prep
        if self.model.modality == "images":

            def prepare(batch: Sequence):
                return dict(prep(images=[_rgb(x) for x in batch], return_tensors="pt"))

            return prepare
        limit = min(
            int(getattr(prep, "model_max_length", 512) or 512),
            int(getattr(self._net.config, "max_position_embeddings", 512) or 512),
        )

        def prepare(batch: Sequence):
            return dict(
                prep([str(t) for t in batch], padding=True, truncation=True, max_length=limit, return_tensors="pt")
            )

        return prepare

    def embed(self, items: Iterable, *, batch_size: int = 32, progress: Optional[ProgressCallback] = None,
              n_items: Optional[int] = None) -> np.ndarray:
        """Pooled features of ``items`` (images or texts, as the encoder's modality), float32, one row each.

        Parameters and result as :func:`hf_features`.
        """
        if int(batch_size) < 1:
            raise DiversityInputError(f"batch_size must be a positive integer; got {batch_size!r}.")
        torch, model, net, device = self._torch, self.model, self._net, self.device
        total = n_items if n_items is not None else (len(items) if hasattr(items, "__len__") else 0)
        where = "the GPU" if device == "cuda" else f"the CPU ({inference_threads(torch)} threads)"
        stage = BatchProgress(progress, total, f"embedding {model.modality} with {model.model_type} on {where}")
        stage.start()
        out, done = [], 0
        with (
            torch_threads(torch, inference_threads(torch)),
            torch.inference_mode(),
            Prefetch(_batches(items, int(batch_size), self._prepare())) as batches,
        ):
            for rows, inputs in batches:
                inputs = {k: v.to(device) for k, v in inputs.items()}
                pooled = pooled_output(
                    net(**inputs), inputs.get("attention_mask"), modality=model.modality, use_pooler=self._use_pooler
                )
                out.append(pooled.float().cpu().numpy())
                done += rows
                stage.update(min(done, total) if total else done)
        if not out:
            raise DiversityInputError("there are no items to featurize.")
        return np.ascontiguousarray(np.concatenate(out, axis=0), dtype=np.float32)


def hf_encoder(name: str, *, tower: Optional[str] = None, allow_download: bool = False) -> HFEncoder:
    """The encoder of the checkpoint ``hf:SOURCE``, loaded (offline unless ``allow_download``).

    Parameters
    ----------
    name : str
        ``"hf:"`` followed by a model folder or a cached hub id (:func:`hf_model`).
    tower : {"images", "text"}, optional
        See :func:`hf_model`: ``"text"`` loads a CLIP-style checkpoint's text tower (with its projection).
    allow_download : bool, default False
        As for :func:`hf_features`.

    Returns
    -------
    HFEncoder

    Raises
    ------
    DiversityInputError
        As :func:`hf_features`.
    """
    model = hf_model(name, allow_download=allow_download, tower=tower)
    torch = import_torch("hf: featurizers")
    net, prep, use_pooler = _load(model, torch, allow_download)
    return HFEncoder(model, net, prep, use_pooler, torch)


def describe(model: HFModel) -> str:
    """One line for the registry and the app's help text."""
    kind = "vision" if model.modality == "images" else "text"
    if model.dual:
        return (f"{model.model_type} image-text model from {model.folder}: its {kind} tower's projected embeddings "
                "(docs/checkpoints.md), cosine kernel.")
    return f"{model.model_type} {kind} encoder from {model.folder}: pooled output (docs/checkpoints.md), cosine kernel."
