"""Cached wrappers around the core, keyed by content (the view's key) and parameters.

- Features come from the core's one feature cache (:func:`diversity_core.featurizers.featurize`,
  bounded in bytes and shared by every session); the app keeps no copy of its own.
- :func:`ui.cache.shared_cache` (pools bounded in bytes, one computation per key) for spectra,
  per-group spectra, baselines, heatmap matrices and PCA maps (``"results"``) and preprocessed
  features (``"features"``): computed on demand with a spinner, shared by every session and page.
  A :class:`~ui.data.View` is hashed by its ``key`` (``hash_funcs``), never by its arrays.
- The heavy results a button starts (magnitude, RND, UMAP, kernel sweeps, comparisons) follow
  the pattern of :mod:`ui.tasks` (progress through the core's callback, stored by their inputs).

Moving q never reaches any of these: every VS_q comes from the cached spectrum in O(n).
"""

from __future__ import annotations

import contextlib
import re
import warnings
from pathlib import Path
from typing import Optional

import numpy as np
import scipy.sparse as sp
import streamlit as st

import diversity_core as dc
from diversity_core import format_q, store
from diversity_core.data import resolve_user_path
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import (
    cached_features,
    featurize,
    featurizer_version,
    get_featurizer,
    list_featurizers,
    resolve_featurizer,
)
from diversity_core.kernels import row_norms

from . import workers
from .cache import shared_cache
from .data import View, view_hash
from .data.folder import data_dir
from .feedback import literal, progress_bar

HASH = {View: view_hash}

#: Top eigenvectors kept with every spectrum (galleries, projection colours).
MAX_EIGENVECTORS = 10
#: Largest number of items drawn in the kernel heatmap (a seeded subsample beyond it).
HEATMAP_MAX = 400


# ------------------------------------------------------------------------------------------
# features
# ------------------------------------------------------------------------------------------
def featurizer_options(ds, own: Optional[dict] = None) -> list:
    """Featurizers usable on a dataset (installed, and ``embeddings`` only when it has them).

    ``own`` maps the user's own models (``hf:FOLDER``, ``inception:FILE``, see
    :func:`check_own_model`) to their modality: those of the dataset's modality are listed
    while they are still found on this machine.
    """
    out = []
    for f in list_featurizers(ds.modality):
        if f.name == "embeddings" and ds.features is None:
            continue
        if f.available():
            out.append(f.name)
    from diversity_core.featurizers.hf import hf_found_locally

    for name, modality in (own or {}).items():
        found = hf_found_locally(name) if name.startswith("hf:") else Path(name.split(":", 1)[1]).is_file()
        if modality == ds.modality and found:
            out.append(name)
    return out


def check_own_model(text: str) -> tuple:
    """``(featurizer name, modality)`` of a model the user typed (``hf:FOLDER`` or ``inception:FILE``).

    A folder or file must lie in the data folder (``$DIVERSITY_DATA_DIR``, as every path a
    visitor types) and is made absolute (the worker processes run elsewhere); a hub id must be in
    the local Hugging Face cache; nothing is downloaded. Raises :class:`~diversity_core.exceptions.DiversityInputError` saying what is wrong.
    """
    text = text.strip()
    prefix, _, rest = text.partition(":")
    if prefix not in ("hf", "inception"):
        raise DiversityInputError(
            f"{text!r} is not a model of your own; write hf: followed by a folder saved with save_pretrained "
            "(or a Hugging Face id already in the local cache), or inception: followed by an FID Inception "
            "weights file."
        )
    rest = rest.strip()
    from diversity_core.featurizers.hf import hf_found_locally

    # a hub id ("name" or "org/name": no "~", no leading "." or "/") already in the local cache is
    # taken as it is; anything else is a path, under the data-folder rule (a "~/..." folder with a
    # config.json must not pass as a hub id)
    hub_id = prefix == "hf" and re.fullmatch(r"[A-Za-z0-9_][\w.-]*(/[A-Za-z0-9_][\w.-]*)?", rest) is not None
    if not (hub_id and not Path(rest).exists() and hf_found_locally(text)):
        # the served app's path rule: a visitor reads only inside $DIVERSITY_DATA_DIR
        text = f"{prefix}:{resolve_user_path(rest, data_dir=data_dir())}"
    return text, get_featurizer(text).modality


def features(view: View, featurizer: str, *, show_progress: bool = True):
    """Features of the view's items, read-only, from the core's feature cache.

    With ``show_progress`` a miss shows a spinner (after half a second) and the featurizer's
    progress bar; a hit draws nothing.
    """
    name = resolve_featurizer(view.data, featurizer)
    if not show_progress:
        X = featurize(view.data, name, copy=False)
    else:
        # the featurizer's own messages carry the time left, measured on its first batches
        label = f"Computing {name} features for {view.n} items (computed once and kept; Cancel stops it)"
        with st.spinner(label), progress_bar(label) as bar:
            X = featurize(view.data, name, progress=bar, copy=False)
    return X if not view.preprocess else _preprocessed(view, name, X)


def features_at_hand(view: View, featurizer: str):
    """The view's features if they need no featurizer run (in the core's cache), else None."""
    name = resolve_featurizer(view.data, featurizer)
    X = cached_features(view.data, name)
    if X is None or not view.preprocess:
        return X
    return _preprocessed(view, name, X)


@shared_cache("features", spinner="Preprocessing the features…", hash_funcs=HASH)
def _preprocessed(view: View, name: str, _X):
    """The view's features after its preprocessing steps (read-only; keyed by the view's key)."""
    from diversity_core.preprocess import preprocess

    steps, k = view.preprocess
    out = preprocess(_X, steps=steps, n_components=k)
    if isinstance(out, np.ndarray):
        out.setflags(write=False)
    return out


def density(X) -> Optional[float]:
    """Share of stored entries of sparse features (None for dense ones): what the large-data plan reads."""
    return X.nnz / max(1, X.shape[0] * X.shape[1]) if sp.issparse(X) else None


def dense(X) -> np.ndarray:
    """A dense float array view of features (sparse n-gram features are densified)."""
    return X.toarray() if sp.issparse(X) else np.asarray(X)


# ------------------------------------------------------------------------------------------
# spectra and scores
# ------------------------------------------------------------------------------------------
#: Items from which a result computed here, in the server process, gets every core's BLAS thread
#: (``ui.workers.job_threads``; the server's own threads have one, ``ui.serve``). Below it one
#: thread is quick (2,000 x 2,000 eigenvalues: 1.17 s with one thread, 0.51 s with two,
#: 2026-11-29), and a second thread mostly waits for a core held by the browser or another session.
PARALLEL_FROM = 2000


def _cores(n: int):
    """The BLAS threads of a computation over ``n`` items: every core from :data:`PARALLEL_FROM`."""
    return workers.job_threads() if n >= PARALLEL_FROM else contextlib.nullcontext()


@shared_cache("results", spinner="Computing the eigenvalue spectrum…", hash_funcs=HASH)
def _spectrum_and_notes(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> tuple:
    # kept on disk too (diversity_core.store): a restarted server, or another worker, reads the
    # finished spectrum instead of decomposing the matrix again; the key names the view's content
    name = resolve_featurizer(view.data, featurizer)
    k = min(MAX_EIGENVECTORS, view.n)
    key = {"result": "app-spectrum", "view": view.key, "featurizer": name,
           "featurizer_version": featurizer_version(name), "kernel": kernel,
           "params": [[p, repr(v)] for p, v in kernel_params], "eigenvectors": k}
    found = {}

    def compute_spectrum():
        X = features(view, featurizer, show_progress=False)
        with warnings.catch_warnings(record=True) as caught, _cores(view.n):
            warnings.simplefilter("always")
            spec = dc.compute_spectrum(X, kernel=kernel, weights=view.data.weights, n_eigenvectors=k,
                                       **dict(kernel_params))
        found["notes"] = list(dict.fromkeys(str(w.message) for w in caught
                                            if issubclass(w.category, dc.DiversityWarning)))
        return spec

    spec = store.get_or_compute(key, compute_spectrum, label="spectrum")
    notes = store.get_or_compute({**key, "part": "notes"}, lambda: {"notes": found.get("notes", [])},
                                 label="spectrum notes")
    return spec, list(notes["notes"])


def spectrum(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> dc.Spectrum:
    """The spectrum of the whole view, with its top eigenvectors (cached)."""
    return _spectrum_and_notes(view, featurizer, kernel, kernel_params)[0]


def spectrum_notes(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> list:
    """The core's warnings while computing that spectrum (e.g. a renormalised diagonal)."""
    return _spectrum_and_notes(view, featurizer, kernel, kernel_params)[1]


def resolved_kernel_params(spec: dc.Spectrum) -> dict:
    """The kernel parameters the spectrum used, data-dependent defaults (bandwidth) fixed."""
    return {k: v for k, v in spec.kernel.items() if k != "name" and v is not None}


@shared_cache("results", spinner="Computing the spectrum of each group…", hash_funcs=HASH)
def group_scores(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> dict:
    """Spectrum and IntDiv of each group of at least 2 items, by the core's per-group scoring (cached).

    :func:`diversity_core.scoring.score_groups`, as the CLI's ``diversity score``: the kernel fixed
    on the whole view (the same bandwidth for every group), each group on its exact path.
    """
    from diversity_core.scoring import score_groups

    ds = view.data
    if ds.groups is None:
        return {}
    X = features(view, featurizer, show_progress=False)
    with _cores(view.n):
        scores = score_groups(X, ds.groups, kernel=kernel, weights=ds.weights, include_all=False,
                              small_groups="skip", **dict(kernel_params))
    return {s.group: s for s in scores}


def group_spectra(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> dict:
    """Spectrum of each group (from :func:`group_scores`)."""
    return {g: s.spectrum for g, s in group_scores(view, featurizer, kernel, kernel_params).items()}


@shared_cache("results", spinner="Computing the baseline scores…", hash_funcs=HASH)
def baselines(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> dict:
    """IntDiv, average similarity, GMStds (dense features) and n-gram diversity (text).

    :func:`diversity_core.baseline_scores`, as the API: the core fixes the kernel's bandwidth (no
    spectrum is computed here, so the baselines show past the dense limit too) and GMStds is the
    core's (0 when a feature is constant). With constant features, ``gmstds_constant`` counts them
    and ``gmstds_nonconstant`` is the core's mean over the others, for the page's caption.
    """
    X = features(view, featurizer, show_progress=False)
    weights = view.data.weights
    with _cores(view.n):
        out = dict(dc.baseline_scores(X, kernel=kernel, weights=weights, **dict(kernel_params)))
    if "gmstds" in out:
        from diversity_core.baselines import constant_features, gmstds

        constant = constant_features(X, weights=weights)
        if constant:
            out["gmstds_constant"] = constant
            out["gmstds_nonconstant"] = gmstds(X, weights=weights, skip_constant=True)
    if view.data.modality == "text":
        from diversity_core.featurizers.text import ngram_diversity

        out["ngram_diversity"] = ngram_diversity(view.data.items)
    return out


def group_baselines(view: View, featurizer: str, kernel: str, kernel_params: tuple) -> dict:
    """IntDiv of each group (same kernel as the whole view; from :func:`group_scores`)."""
    return {g: s.intdiv for g, s in group_scores(view, featurizer, kernel, kernel_params).items()}


def score_rows(spec: dc.Spectrum, groups: dict, group_intdiv: dict, q: float) -> list:
    """Rows of the per-group table at order q (VS from the cached spectra, O(n) each)."""
    rows = []
    for name, s in groups.items():
        rows.append({
            "group": name,
            "items": s.n,
            f"VS (q = {format_q(q)})": s.vendi(q),
            "VS₁": s.vendi(1.0),
            "VS∞": s.vendi(np.inf),
            "VS / items": s.vendi(q) / s.n,
            "IntDiv": group_intdiv.get(name, np.nan),
        })
    return rows


def reading(vs: float, n: int, group_vs: dict, q_label: str, sizes: Optional[dict] = None,
            check=None) -> str:
    """One sentence that reads the headline: the items' effective number, and which group is most
    and least diverse when there are groups.

    A VS grows with the number of items, so groups of different sizes (``sizes``: group -> items)
    are not put side by side as a percentage: the sentence states both sizes and points to Compare,
    which scores every group at the same n (issue 27, item 4). Groups of one size get the gap.

    ``check`` (a :class:`ui.robustness_ui.RankingCheck`, for image groups): the representation
    check comes before any ranking (issue 41, item 1). While it has not run no group is named; when
    it finds the order depends on the representation or the kernel, the verdict and each ranking
    are stated instead of one; when the order holds, the sentence below says so.
    """
    head = f"**Reading:** the {n} items behave like **{vs:.1f}** distinct ones (VS at q = {q_label})"
    if len(group_vs) < 2:
        return head + "."
    if check is not None and check.result is None:
        return (head + ". The groups' order is not stated before it is checked under other representations and "
                f"kernels: image rankings often depend on them ({check.why}). **Check the ranking** below.")
    if check is not None and check.result.verdict == "depends":
        return head + f". **Rank flip.** {literal(check.result.summary())}"
    return _group_reading(head, group_vs, sizes) + _check_note(check)


def _check_note(check) -> str:
    """What the representation check adds to a stated ranking: that it holds, or where pairs swap."""
    if check is None:
        return ""
    result = check.result
    if result.verdict == "stable":
        return (f" The order holds under all {len(result.rows)} representations and kernels checked "
                f"(at n = {result.n}).")
    return " " + literal(result.summary())


def _group_reading(head: str, group_vs: dict, sizes: Optional[dict]) -> str:
    """The reading's group part: the highest and lowest group (with sizes when they differ)."""
    ranked = sorted(group_vs.items(), key=lambda kv: kv[1], reverse=True)
    (top, vtop), (low, vlow) = ranked[0], ranked[-1]

    # group names come from the data: literal text inside the sentence's Markdown
    if sizes and len({sizes[g] for g in group_vs}) > 1:
        return (head + f"; the highest group score is **{literal(top)}**'s ({vtop:.2f} of {sizes[top]:,} items), the "
                f"lowest **{literal(low)}**'s ({vlow:.2f} of {sizes[low]:,} items). The groups differ in size "
                f"({min(sizes.values()):,} to {max(sizes.values()):,} items) and a VS grows with the number of items, "
                "so these are not compared at equal n: **Compare** scores every group at the same n.")
    gap = 1.0 - vlow / vtop if vtop > 0 else 0.0
    each = f", {next(iter(sizes.values())):,} items each" if sizes else ""
    return (head + f"; the most diverse group is **{literal(top)}** ({vtop:.2f}), the least **{literal(low)}** "
            f"({vlow:.2f}, {gap:.0%} lower{each}).")


# ------------------------------------------------------------------------------------------
# kernel heatmap and PCA
# ------------------------------------------------------------------------------------------
@shared_cache("results", spinner="Computing the kernel matrix…", hash_funcs=HASH)
def heatmap(view: View, featurizer: str, kernel: str, kernel_params: tuple, sort: str,
            max_items: int = HEATMAP_MAX, seed: int = 0) -> dict:
    """Kernel matrix of at most ``max_items`` items, ordered by group or by the top eigenvector."""
    spec = spectrum(view, featurizer, kernel, kernel_params)
    top = spec.eigenvectors[:, 0] if spec.eigenvectors is not None else None
    return kernel_sample(view.data, features(view, featurizer, show_progress=False), top, sort,
                         {"kernel": kernel, **resolved_kernel_params(spec)}, max_items, seed)


def kernel_sample(ds, X, top: Optional[np.ndarray], sort: str, kernel_kwargs: dict, max_items: int,
                  seed: int) -> dict:
    """The kernel matrix of at most ``max_items`` seeded items, by group then ``top`` (descending), or by ``top``."""
    idx = np.arange(ds.n)
    sampled = ds.n > max_items
    if sampled:
        idx = np.sort(np.random.default_rng(seed).choice(ds.n, size=max_items, replace=False))
    t = top[idx] if top is not None else np.zeros(idx.size)
    if sort == "group" and ds.groups is not None:  # groups in order, each sorted by the top eigenvector
        rank = {g: i for i, g in enumerate(ds.group_names())}
        idx = idx[np.lexsort((-t, [rank[str(g)] for g in ds.groups[idx]]))]
    else:
        idx = idx[np.argsort(-t, kind="stable")]
    K = dc.kernel_matrix(X[idx], **kernel_kwargs)
    labels = None if ds.groups is None or sort != "group" else [str(g) for g in ds.groups[idx]]
    return {"K": K.astype(np.float32), "indices": idx, "labels": labels, "sampled": sampled}


@shared_cache("results", spinner="Computing the PCA map…", hash_funcs=HASH)
def pca(view: View, featurizer: str):
    from diversity_core.projection import project

    return project(features(view, featurizer, show_progress=False), method="pca", rng=0)


def umap_key(view: View, featurizer: str, metric: str, n_neighbors: int, min_dist: float) -> tuple:
    """The key of a UMAP map in the ``"umap"`` task store."""
    return (view.key, resolve_featurizer(view.data, featurizer), metric, int(n_neighbors), float(min_dist))


def umap_task(view: View, featurizer: str, metric: str, n_neighbors: int, min_dist: float):
    """``fn(progress)`` computing the UMAP map of the view (for :func:`ui.tasks.run`)."""
    from diversity_core.projection import project

    def fn(progress):
        X = features(view, featurizer, show_progress=False)
        return project(X, method="umap", metric=metric, n_neighbors=n_neighbors, min_dist=min_dist, rng=0,
                       progress=progress)

    return fn


@shared_cache("results", hash_funcs=HASH)
def scale_note(view: View, featurizer: str) -> Optional[str]:
    """The feature-scale warning of the view's features (None when their scales are comparable)."""
    from diversity_core.preprocess import scale_warning

    X = features(view, featurizer, show_progress=False)
    if sp.issparse(X):
        return None
    message = scale_warning(X)
    return None if message is None else message.replace("(preprocessing 'standardize')",
                                                        "(in the sidebar: Preprocess features, standardise)")  # shown as literal text


def norms(X) -> np.ndarray:
    """Euclidean norm of each row (the embeddings summary)."""
    return row_norms(X)


def feature_summary(X) -> dict:
    """Shape, dtype, sparsity and per-feature spread of a feature matrix (Dataset page)."""
    n, d = X.shape
    out: dict = {"items": n, "dimensions": d, "dtype": str(X.dtype)}
    if sp.issparse(X):
        out["non-zeros per item"] = float(X.nnz / max(n, 1))
        return out
    A = np.asarray(X, dtype=np.float64)
    std = A.std(axis=0)
    out["constant dimensions"] = int(np.count_nonzero(std == 0))
    out["mean per-dimension std"] = float(std.mean())
    return out


def optional_group_labels(view: View) -> Optional[np.ndarray]:
    return None if view.data.groups is None else np.asarray(view.data.groups).astype(str)


def hover_labels(ds, limit: int = 90) -> list:
    """Hover text of every item: its id and what it is (the sentence, the SMILES).

    Plotly hover boxes hold text only, so images and molecule drawings appear below the map for
    the points clicked or selected (the hover says so).
    """
    import html as _html

    def wrap(text: str) -> str:
        words, lines, line = str(text).split(), [], ""
        for w in words:
            if len(line) + len(w) + 1 > 48 and line:
                lines.append(line)
                line = w
            else:
                line = f"{line} {w}".strip()
            if sum(len(x) for x in lines) > limit:
                break
        lines.append(line)
        out = "<br>".join(_html.escape(x) for x in lines[:3])
        return out + ("…" if len(" ".join(words)) > sum(len(x) for x in lines[:3]) + 2 else "")

    out = []
    for i in range(ds.n):
        parts = [f"<b>{_html.escape(str(ds.ids[i]))}</b>"]  # the figure adds the colour's value (group)
        if ds.modality == "text":
            parts.append(wrap(ds.items[i]))
        elif ds.modality == "molecules":
            parts.append(_html.escape(str(ds.items[i])[:60]) + "<br><i>click: the drawing below</i>")
        elif ds.modality == "images":
            parts.append("<i>click: the image below</i>")
        out.append("<br>".join(parts))
    return out


def mark_selected(fig, selected: list):
    """Highlight ``selected`` items in a projection figure (each point's customdata is its item).

    Only the point traces (scatter, scattergl) carry items: a density view's heatmap keeps its
    counts in ``customdata`` and has no ``selectedpoints``.
    """
    if not selected:
        return fig
    chosen = set(int(i) for i in selected)
    for trace in fig.data:
        cd = trace.customdata
        if cd is None or trace.type not in ("scatter", "scattergl"):
            continue
        trace.selectedpoints = [j for j, v in enumerate(cd)
                                if int(v[0] if isinstance(v, (list, tuple, np.ndarray)) else v) in chosen]
    return fig


def selected_items(event) -> list:
    """Item indices of the points selected in a :func:`~diversity_core.report.figures.projection_figure`.

    Every point carries its item index as ``customdata`` (the point index within a trace is not
    the item index when each group is its own trace).
    """
    try:
        points = event.selection.points
    except (AttributeError, KeyError):
        return []
    out = []
    for p in points or []:
        value = p.get("customdata")
        if isinstance(value, (list, tuple)):
            value = value[0] if value else None
        if value is not None:
            out.append(int(value))
    return list(dict.fromkeys(out))
