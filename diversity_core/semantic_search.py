"""Finding items by meaning: text-to-image search and "find similar" (issue 42, item 9).

:func:`search` ranks the items of a :class:`~diversity_core.data.Dataset` by their cosine
similarity to a query, in one embedding space:

==========================  ==================================================================
query                       its embedding, and the items'
==========================  ==================================================================
a text (``"red car"``)      the text tower of a CLIP-style checkpoint (``model="hf:FOLDER"``);
                            the items by its image tower: both projected into the shared space
an image (array, PIL         the image tower of that checkpoint (or of any ``hf:`` vision
image, PNG/JPEG/WebP bytes)  encoder), the items likewise
an item (its index)         "find similar": that item's row of the items' features, which are
                            the checkpoint's image embeddings when ``model`` is given, else any
                            featurizer's (``featurizer=``, the dataset's own embeddings by default)
==========================  ==================================================================

The checkpoint is a folder saved with ``CLIPModel.save_pretrained`` (or a hub id already in the
local Hugging Face cache), loaded as the ``hf:`` featurizers load models
(:mod:`diversity_core.featurizers.hf`): offline, never running the model's own code, downloading
only with ``allow_download=True``. The items' image embeddings come from
``featurize(dataset, model)``, so they are computed once and kept in the feature cache and the
result store: a second search embeds only its query. The loaded query encoder is kept too
(:data:`ENCODERS_KEPT` of them).

The substring and SMARTS searches, which need no model, are :mod:`diversity_core.data.search`'s.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._display import NotebookDisplay, short_repr
from ._progress import ProgressCallback
from ._validation import check_scalar
from .exceptions import DiversityInputError

__all__ = ["search", "SearchResult", "query_kind", "ENCODERS_KEPT"]

#: Query encoders (a checkpoint's text or image tower) kept loaded in this process, least recently used out.
ENCODERS_KEPT = 2

_ENCODERS: OrderedDict = OrderedDict()
_ENCODERS_LOCK = threading.Lock()

#: What to do without a model, in every message that asks for one.
_HOW_TO_GET_A_MODEL = (
    "give model='hf:FOLDER' (the CLI's --model), a folder saved with CLIPModel.save_pretrained, e.g. once, "
    "where downloads are allowed: transformers.CLIPModel.from_pretrained('openai/clip-vit-base-patch32')"
    ".save_pretrained('clip') and CLIPProcessor.from_pretrained(...).save_pretrained('clip'); it needs "
    "pip install 'diversity-explorer[hf]'. Without a model, diversity_core.data.search finds items by "
    "substring (contains_any_mask) or SMARTS pattern (substructure_mask), and an item index finds similar "
    "items in any features."
)


@dataclass(frozen=True, repr=False)
class SearchResult(NotebookDisplay):
    """The items ranked by similarity to a query, best first.

    Attributes
    ----------
    query : str
        The query in words: ``'text "red car"'``, ``"item 12 ('cat_3.png')"``, ``"an image"``.
    kind : {"text", "image", "item"}
    indices : ndarray of shape (k,), int64
        Rows of the dataset, most similar first (read-only).
    ids : tuple of str
        Their ids.
    scores : ndarray of shape (k,), float64
        Their cosine similarities to the query, in [-1, 1], non-increasing (read-only).
    space : str
        The embedding space: ``"hf:FOLDER"`` or the featurizer's name.
    n_items : int
        The number of items ranked (the dataset's, less the query item for an item query).
    groups : tuple of str, optional
        The ranked items' groups, when the dataset has groups.
    """

    query: str
    kind: str
    indices: np.ndarray
    ids: tuple
    scores: np.ndarray
    space: str
    n_items: int
    groups: Optional[tuple] = None

    def __len__(self) -> int:
        return int(self.indices.size)

    def __repr__(self) -> str:
        top = ", ".join(f"{i} ({s:.3f})" for i, s in zip(self.indices[:3].tolist(), self.scores[:3].tolist()))
        more = ", ..." if len(self) > 3 else ""
        return short_repr(
            f"SearchResult({self.kind} query, top {len(self)} of {self.n_items} items)",
            [("query", self.query), ("space", self.space), ("best (index, cosine)", f"{top}{more}")],
        )

    def to_frame(self):
        """One row per ranked item: ``rank`` (1 = best), ``index``, ``id``, ``group`` (with groups), ``score``."""
        import pandas as pd

        frame = {"rank": np.arange(1, len(self) + 1), "index": self.indices, "id": list(self.ids)}
        if self.groups is not None:
            frame["group"] = list(self.groups)
        frame["score"] = self.scores
        return pd.DataFrame(frame)

    def to_dict(self) -> dict:
        """Plain values (JSON-ready)."""
        return {
            "query": self.query,
            "kind": self.kind,
            "space": self.space,
            "n_items": int(self.n_items),
            "results": [
                {"rank": r + 1, "index": int(i), "id": str(x), "score": float(s)}
                for r, (i, x, s) in enumerate(zip(self.indices.tolist(), self.ids, self.scores.tolist()))
            ],
        }


def query_kind(query: Any) -> str:
    """``"item"``, ``"text"`` or ``"image"``: how :func:`search` reads a query.

    An integer is an item index; a string a text; an array (H x W or H x W x C), a PIL image or
    bytes (a PNG, JPEG or WebP file's content) an image.

    Raises
    ------
    DiversityInputError
        Anything else (a bool, a float, an empty string, a list, ...).

    Examples
    --------
    >>> query_kind(3), query_kind("red car"), query_kind(b"\\x89PNG...")
    ('item', 'text', 'image')
    """
    if isinstance(query, (bool, np.bool_)):
        raise DiversityInputError(f"the query must be a text, an item index or an image; got {query!r}.")
    if isinstance(query, (int, np.integer)):
        return "item"
    if isinstance(query, str):
        if not query.strip():
            raise DiversityInputError("the text query is empty; type what to look for, e.g. 'a red car'.")
        return "text"
    if isinstance(query, (bytes, bytearray, memoryview, np.ndarray)):
        return "image"
    if type(query).__module__.startswith("PIL."):
        return "image"
    raise DiversityInputError(
        f"the query must be a text, an item index (int) or an image (an H x W x C uint8 array, a PIL image or "
        f"PNG/JPEG/WebP bytes); got {type(query).__name__}."
    )


def search(
    dataset,
    query,
    *,
    model: Optional[str] = None,
    featurizer: str = "default",
    top_k: Optional[int] = 10,
    allow_download: Optional[bool] = None,
    progress: Optional[ProgressCallback] = None,
) -> SearchResult:
    r"""Rank a dataset's items by their similarity to a text, an image or one of its items.

    .. math:: s_i = \frac{\langle e(q), x_i \rangle}{\|e(q)\| \, \|x_i\|}

    with :math:`e(q)` the query's embedding and :math:`x_i` item i's, in one space (the module
    docstring's table); the items are returned by decreasing :math:`s_i` (ties by row).

    Parameters
    ----------
    dataset : Dataset
        An image dataset for text and image queries; any dataset for an item query.
    query : str, int, ndarray, PIL image or bytes
        A text; an item's row (``"find similar"``; the item itself is left out of the ranking);
        or an image (:func:`query_kind`).
    model : str, optional
        ``"hf:FOLDER"``: a CLIP-style checkpoint holding an image and a text encoder (saved with
        ``CLIPModel.save_pretrained``), or a hub id in the local cache. Needed for text and image
        queries (an image query, like an item query, takes any vision encoder too); for an item
        query it sets the space (its image embeddings).
    featurizer : str, default "default"
        The items' features for an item query without ``model`` (:func:`~diversity_core.featurize`).
    top_k : int or None, default 10
        How many items to return (all of them with None); at most the number of items.
    allow_download : bool, optional
        Let transformers download a hub id missing from the local cache; default: the setting
        of :func:`~diversity_core.set_config` (off unless allowed).
    progress : callable, optional
        ``progress(done, total, message)`` while the items are embedded (not called when their
        embeddings are cached).

    Returns
    -------
    SearchResult

    Raises
    ------
    DiversityInputError
        A text or image query without ``model`` (the message says which folder to give and what
        to install); a checkpoint that is not found or does not hold both encoders; a text or
        image query on a dataset that is not images; an item index out of range; an empty
        query; undecodable image bytes; a query with no direction (all zero).
    MissingDependencyError
        torch or transformers is not installed (the message names the extra ``[hf]``).

    Notes
    -----
    Cost: embedding the items once (a forward pass of the image tower per item, then cached),
    one forward pass for the query, and O(n d) for the similarities, accumulated in float64.
    Items whose features are all zero have no direction and score 0.

    Examples
    --------
    >>> from diversity_core.data import load_demo
    >>> ds = load_demo("digits")
    >>> result = search(ds, 0, top_k=3)        # the 3 digits most like digit 0, in the default features
    >>> len(result), result.kind
    (3, 'item')
    """
    from .data import Dataset

    if not isinstance(dataset, Dataset):
        raise DiversityInputError(f"search needs a Dataset (load_dataset(...)); got {type(dataset).__name__}.")
    kind = query_kind(query)
    if top_k is not None:
        top_k = check_scalar(top_k, "top_k", int, min_val=1)
    if model is not None and (not isinstance(model, str) or not model.startswith("hf:")):
        raise DiversityInputError(
            f"model must be 'hf:' followed by a CLIP-style model folder; got {model!r}. " + _HOW_TO_GET_A_MODEL
        )
    if kind == "item":
        item = int(query)
        if not 0 <= item < dataset.n:
            raise DiversityInputError(
                f"item {item} is out of range: {dataset.name!r} has {dataset.n} items (rows 0 to {dataset.n - 1})."
            )
        if dataset.n < 2:
            raise DiversityInputError("find similar needs at least two items; the dataset has one.")
    else:
        if model is None:
            raise DiversityInputError(f"a {kind} query needs a model that embeds it: " + _HOW_TO_GET_A_MODEL)
        if dataset.modality != "images":
            raise DiversityInputError(
                f"{kind} queries rank images, but {dataset.name!r} holds {dataset.modality}; for a text or molecule "
                "dataset, find items with diversity_core.data.search (substring, SMARTS) or by an item index."
            )
    if kind == "image":
        query = _query_image(query)
    return _search(dataset, query, kind, model, featurizer, top_k, allow_download, progress)


def _query_image(query):
    """A PIL image from the query: bytes decoded safely (PNG, JPEG, WebP; size-checked), arrays as uint8."""
    if isinstance(query, (bytes, bytearray, memoryview)):
        from .data.images import decode_image

        return decode_image(bytes(query), "the query image")
    if isinstance(query, np.ndarray):
        from .data.images import array_to_uint8
        from .featurizers.images import _to_pil

        if query.ndim not in (2, 3):
            raise DiversityInputError(
                f"the query image must be an H x W or H x W x C array (C = 1, 3 or 4); got shape {query.shape}."
            )
        # the loaders' rules for pixel values (uint8, or floats in [0, 1] or [0, 255]), applied to one image
        return _to_pil(array_to_uint8(np.stack([query, query]), "the query image")[0])
    return query  # a PIL image


def _encoder(model: str, tower: str, allow: bool):
    """The loaded ``tower`` of ``model`` (kept: :data:`ENCODERS_KEPT`), reloaded when its weights change."""
    from .featurizers.hf import hf_encoder, hf_model, hf_version

    info = hf_model(model, allow_download=allow, tower=tower)
    key = (model, tower, hf_version(info))
    with _ENCODERS_LOCK:
        if key in _ENCODERS:
            _ENCODERS.move_to_end(key)
            return _ENCODERS[key]
    encoder = hf_encoder(model, tower=tower, allow_download=allow)
    with _ENCODERS_LOCK:
        _ENCODERS[key] = encoder
        while len(_ENCODERS) > ENCODERS_KEPT:
            _ENCODERS.popitem(last=False)
    return encoder


def _item_features(dataset, model, featurizer, tower: str, allow: bool, progress):
    """``(features, space)``: ``model``'s image embeddings, else ``featurizer``'s (from the caches when there).

    ``tower`` is the encoder the query needs besides the images' (``"text"``: a CLIP-style checkpoint).
    """
    from .featurizers import featurize, resolve_featurizer

    if model is None:
        name = resolve_featurizer(dataset, featurizer)
        return featurize(dataset, name, progress=progress, copy=False), name
    from .featurizers.hf import hf_model

    hf_model(model, allow_download=allow, tower=tower)  # refused before any embedding when it lacks that tower
    return featurize(dataset, model, progress=progress, copy=False, allow_download=allow), model


def _search(dataset, query, kind, model, featurizer, top_k, allow_download, progress) -> SearchResult:
    """Validated: embed, score, rank."""
    from ._config import downloads_permitted
    from .distances import _cosine_similarity, _row_norms

    allow = downloads_permitted() if allow_download is None else bool(allow_download)
    tower = "text" if kind == "text" else "images"
    X, space = _item_features(dataset, model, featurizer, tower, allow, progress)
    if kind == "item":
        row = X[int(query) : int(query) + 1]
        described = f"item {int(query)} ({dataset.ids[int(query)]!r})"
    else:
        row = _encoder(model, tower, allow).embed([query])
        described = f'text "{query.strip()}"' if kind == "text" else "an image"
    if row.shape[1] != X.shape[1]:
        raise DiversityInputError(
            f"the query's embedding has {row.shape[1]} dimensions and the items' {X.shape[1]}: {model!r} does not "
            "embed texts and images in one space. Use a CLIP-style checkpoint saved with CLIPModel.save_pretrained."
        )
    if not np.all(np.isfinite(row.toarray() if hasattr(row, "toarray") else row)) or float(_row_norms(row)[0]) == 0:
        raise DiversityInputError(f"the query ({described}) has no direction in {space!r}: its embedding is zero or "
                                  "not finite, so no similarity is defined.")
    scores = np.asarray(_cosine_similarity(X, row), dtype=np.float64)[:, 0]
    candidates = np.arange(dataset.n)
    if kind == "item":
        candidates = np.delete(candidates, int(query))
    order = candidates[np.argsort(-scores[candidates], kind="stable")]
    if top_k is not None:
        order = order[:top_k]
    indices, ranked = order.astype(np.int64), scores[order]
    indices.setflags(write=False)
    ranked.setflags(write=False)
    return SearchResult(
        query=described,
        kind=kind,
        indices=indices,
        ids=tuple(str(dataset.ids[i]) for i in indices),
        scores=ranked,
        space=space,
        n_items=int(candidates.size),
        groups=None if dataset.groups is None else tuple(str(dataset.groups[i]) for i in indices),
    )
