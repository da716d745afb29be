"""The sidebar's search: a substring, a SMARTS substructure, scaffold groups, a weight range."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import Dataset

from ..cache import shared_cache


@dataclass(frozen=True)
class Search:
    """The sidebar's search: a substring in a column, a SMARTS pattern, scaffold groups (``top`` kept)."""

    column: str = "item"
    text: str = ""
    smarts: str = ""
    scaffolds: Optional[int] = None  # regroup molecules by their Bemis-Murcko scaffold, the top ones kept
    weights: tuple = (None, None)  # keep items whose weight lies in [low, high] (None: no bound)

    @property
    def active(self) -> bool:
        return bool(self.text or self.smarts or self.scaffolds) or self.weights != (None, None)

    def describe(self) -> str:
        """The search in words (for the view's description)."""
        parts = []
        if self.text:
            parts.append(f"{self.column} contains '{self.text}'")
        if self.smarts:
            parts.append(f"substructure {self.smarts}")
        if self.scaffolds:
            parts.append(f"grouped by scaffold (top {self.scaffolds})")
        if self.weights != (None, None):
            low, high = self.weights
            parts.append(f"weight in [{'-∞' if low is None else f'{low:g}'}, {'∞' if high is None else f'{high:g}'}]")
        return ", ".join(parts)


@dataclass(frozen=True)
class Searched:
    """The result of a search: the dataset pages measure, or the reason the search was set aside."""

    data: Dataset
    error: str = ""
    rows: Optional[np.ndarray] = None  # row in the searched dataset's source of each item (None: the same rows)


#: Fewest matching items a search may leave (every score needs two).
MIN_MATCHES = 2


@shared_cache("data", spinner="Searching the items…", hash_funcs={Dataset: lambda d: d.content_hash})
def working_dataset(full: Dataset, search: Search) -> Searched:
    """``full`` filtered by ``search`` (and regrouped by scaffold); ``full`` itself with an error on failure.

    The matching lives in :mod:`diversity_core.data.search`; an invalid SMARTS pattern, or a search
    that leaves fewer than two items, is reported and the search set aside.
    """
    from diversity_core.data import search as dsearch

    if not search.active:
        return Searched(full)
    try:
        ds = full
        if search.scaffolds:
            ds = replace(ds, groups=dsearch.scaffold_labels(ds, top=search.scaffolds), content_hash="")
        keep = np.ones(ds.n, dtype=bool)
        if search.text:
            keep &= dsearch.contains_mask(ds, search.text, column=search.column)
        if search.smarts:
            keep &= dsearch.substructure_mask(ds, search.smarts)
        if search.weights != (None, None) and ds.weights is not None:
            keep &= dsearch.range_mask(ds, low=search.weights[0], high=search.weights[1])
    except DiversityError as exc:
        from ..feedback import plain

        return Searched(full, plain(f"Search set aside: {exc}"))
    if int(keep.sum()) < MIN_MATCHES:
        return Searched(full, f"Search set aside: {int(keep.sum())} of {full.n} items match "
                              f"{search.describe()}; the scores need at least {MIN_MATCHES}.")
    if keep.all():
        return Searched(ds)
    rows = np.flatnonzero(keep)
    rows.setflags(write=False)
    return Searched(replace(ds.subset(keep), content_hash=""), rows=rows)

def current_search() -> Search:
    """The sidebar's search (its widgets' session-state keys, see :func:`ui.sidebar._search_section`)."""
    ss = st.session_state
    molecules = ss["dataset"].modality == "molecules"
    return Search(column=ss.get("search_col") or "item", text=(ss.get("search_text") or "").strip(),
                  smarts=(ss.get("search_smarts") or "").strip() if molecules else "",
                  scaffolds=int(ss.get("search_scaffold_top") or 8) if molecules and ss.get("search_scaffold") else None,
                  weights=_weight_range(ss))


def _weight_range(ss) -> tuple:
    """The sidebar's weight range ``(low, high)`` when the dataset has weights, else ``(None, None)``."""
    if ss["dataset"].weights is None:
        return (None, None)
    return tuple(None if ss.get(k) is None else float(ss[k]) for k in ("weight_min", "weight_max"))


def searched() -> Searched:
    """The loaded dataset after the sidebar's search."""
    return working_dataset(st.session_state["dataset"], current_search())


# ------------------------------------------------------------------------------------------
# search by meaning: a text, an image or an item (issue 42, item 9)
# ------------------------------------------------------------------------------------------
#: The box's ways to ask, and their session-state keys.
MEANING_MODES = ("Text", "Image", "Similar to an item")
#: The CLIP-style models the box found (``hf:FOLDER`` names, in the order they were given).
CLIP_MODELS_KEY = "meaning_models"
#: The box's widgets keep their values while another mode is shown (not in the URL: a model is a server path).
_PERSIST = {"persist_state": "session"}
#: Matches shown in the gallery, at most.
MEANING_TOP = (8, 16, 32, 64)
#: What to do without a model, in the box.
NO_CLIP_MODEL = (
    "Text and image queries need a CLIP-style checkpoint holding an image and a text encoder: a folder saved with "
    "`CLIPModel.save_pretrained` (and `CLIPProcessor.save_pretrained`), inside the data folder, typed above as "
    "`hf:FOLDER`; nothing is downloaded (docs/checkpoints.md, *Finding items by meaning*). It needs "
    "`pip install 'diversity-explorer[hf]'` (torch, transformers). Without one, *Similar to an item* ranks the "
    "items in this page's features, and the sidebar's **Search and filter** (and the map's **Highlight**) finds "
    "items by substring or SMARTS pattern."
)


def shown_model(name: str) -> str:
    """A model as visitors see it: ``hf:`` and its folder relative to the data folder, never a server path."""
    from .folder import shown_source

    if not name.startswith("hf:"):
        return name
    return "hf:" + shown_source(name[len("hf:"):]).removeprefix("data folder: ")


def clip_model(name: str) -> bool:
    """Whether ``hf:FOLDER`` is a CLIP-style checkpoint found on this machine (both towers; nothing loaded)."""
    from diversity_core.featurizers.hf import hf_model

    try:
        return hf_model(name, tower="text").dual
    except Exception:  # noqa: BLE001 - a model that cannot be read is not offered
        return False


def clip_models() -> list:
    """The CLIP-style models at hand: typed into the box, or given as the sidebar's own models."""
    ss = st.session_state
    names = list(ss.get(CLIP_MODELS_KEY, [])) + [
        n for n, modality in (ss.get("own_models") or {}).items() if n.startswith("hf:") and modality == "images"
    ]
    return [n for n in dict.fromkeys(names) if clip_model(n)]


def _add_clip_model(text: str, box) -> bool:
    """Check a typed ``hf:FOLDER`` (the data-folder rule of every path a visitor types) and offer it."""
    from diversity_core.featurizers.hf import hf_model

    from ..compute import check_own_model
    from ..feedback import error_message, literal

    try:
        name, _ = check_own_model(text if text.startswith("hf:") else f"hf:{text}")
        hf_model(name, tower="text")  # both towers, or the message saying what to give
    except DiversityError as exc:
        box.error(literal(error_message(f"Cannot use {text!r}", exc)))
        return False
    models = st.session_state.setdefault(CLIP_MODELS_KEY, [])
    if name not in models:
        models.append(name)
    st.session_state["meaning_model"] = name
    return True


def _image_query(box):
    """The uploaded query image's bytes, or None."""
    upload = box.file_uploader("Query image", type=["png", "jpg", "jpeg", "webp"], key="meaning_image",
                               help="Rank the images by their similarity to this one (the model's image tower).")
    return None if upload is None else upload.getvalue()


@shared_cache("results", spinner="Searching…", hash_funcs={Dataset: lambda d: d.content_hash})
def ranked(data: Dataset, query, model: Optional[str], featurizer: str, top_k: int):
    """:func:`diversity_core.search` of ``query`` in ``data`` (a :class:`~diversity_core.SearchResult`)."""
    from diversity_core import search

    return search(data, query, model=model, featurizer=featurizer, top_k=top_k)


def _embed_items(data: Dataset, model: str) -> bool:
    """The items' embeddings by ``model``, computed once with a progress bar (later searches read the cache)."""
    from diversity_core.featurizers import cached_features, featurize

    from ..feedback import progress_bar

    if cached_features(data, model) is not None:
        return True
    label = f"Embedding {data.n} images with {model} (once; later searches embed only the query)"
    with st.spinner(label), progress_bar(label) as bar:
        featurize(data, model, progress=bar, copy=False)
    return True


def meaning_box(view, featurizer: str, *, key: str = "meaning") -> None:
    """Search by meaning: a text or an uploaded image (a CLIP-style model), or an item ("find similar").

    The best matches are drawn as a gallery with their cosine similarity, and can be kept or dropped
    on every page (:func:`~ui.data.selection.selection_buttons`). Without a model the box says which
    checkpoint to give and what to install; items are still found by similarity in ``featurizer``'s
    features, and by substring or SMARTS in the sidebar. The ranking is the core's
    (:func:`diversity_core.search`).
    """
    from ..feedback import attempt, literal
    from ..gallery import show_items
    from .selection import selection_buttons

    data = view.data
    ss = st.session_state
    images = data.modality == "images"
    models = clip_models() if images else []
    box = st.expander("Search by meaning: a text, an image, or similar to an item", icon=":material/image_search:",
                      expanded=bool(ss.get("meaning_query") or ss.get("meaning_image")))
    modes = MEANING_MODES if images else MEANING_MODES[2:]
    c1, c2, c3 = box.columns([2, 3, 1])
    mode = c1.radio("Query", modes, key="meaning_mode", **_PERSIST)
    top_k = c3.selectbox("Matches", MEANING_TOP, key="meaning_top", **_PERSIST)
    if images:
        typed = c2.text_input("CLIP model (hf:FOLDER)", key="meaning_model_text", placeholder="hf:clip-vit-base-patch32", **_PERSIST,
                              help="A folder saved with CLIPModel.save_pretrained, inside the data folder (or a "
                                   "Hugging Face id already in the local cache); nothing is downloaded.").strip()
        if typed and typed not in (ss.get("meaning_model_typed"), *models) and _add_clip_model(typed, box):
            ss["meaning_model_typed"] = typed
            models = clip_models()
        if models and ss.get("meaning_model") not in models:
            ss["meaning_model"] = models[0]
        model = c2.selectbox("Model", models, key="meaning_model", format_func=shown_model,
                             **_PERSIST) if models else None
    else:
        model = None
    if mode != MEANING_MODES[2] and model is None:
        box.info(NO_CLIP_MODEL)
        return
    if mode == "Text":
        query = box.text_input("Look for", key="meaning_query", placeholder="a red car, a smiling face, …",
                               **_PERSIST).strip()
    elif mode == "Image":
        query = _image_query(box)
    else:
        row = box.number_input(f"Item (row 0 to {data.n - 1} of the items measured)", min_value=0,
                               max_value=max(0, data.n - 1), value=None, step=1, placeholder="a row", key="meaning_item",
                               **_PERSIST)
        query = None if row is None else int(row)
    if query is None or query == "":
        return
    space = shown_model(model) if model else featurizer
    with box:
        if model is not None and attempt(lambda: _embed_items(data, model), "Embedding the images") is None:
            return
        result = attempt(lambda: ranked(data, query, model, featurizer, int(top_k)), "Search")
        if result is None:
            return
        st.markdown(f"**{len(result)} best matches** for {literal(result.query)} of {result.n_items:,} items, in "
                    f"{literal(space)}'s space (cosine similarity under each):")
        show_items(data, result.indices.tolist(), columns=8, notes=[f"cos {s:.3f}" for s in result.scores])
        selection_buttons(view, result.indices.tolist(), key=f"{key}_sel", what="the best matches")
