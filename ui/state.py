"""Shared settings: ``st.session_state`` keys, their defaults, and the URL query string.

Every setting of the sidebar lives under one session-state key (the sidebar widgets use the
same keys), so it survives page changes. The settings are mirrored in the query string on
every run (:func:`write_query_params`; for q also by the slider's callback, since moving q reruns
only fragments, see :mod:`ui.fragments`), and read back from it once, on a session's first
run (:func:`init_state`), so a copied link reopens the same dataset, representation, kernel,
order q, subsample and groups (the page is the URL's path).

Query-string keys: ``demo`` or ``path`` (the source; an upload cannot be restored from a
link), ``gcol``/``wcol``/``tcol``/``scol`` (column options of a local file), ``feat``,
``kernel``, ``sigma`` (absent: the median-distance default), ``degree``, ``q`` (a number or
``inf``), ``n`` and ``seed`` (subsample), ``group`` (repeated; absent: every group), ``prep``
(preprocessing steps, e.g. ``standardize,pca``), ``pca_k``, ``wmin``/``wmax`` (the weight range
of a dataset with item weights), and ``sel`` (the linked selection, ``restrict:3,17-20`` or
``exclude:...`` with 0-based rows of the loaded dataset; only when it holds at most
:data:`LINK_MAX_ROWS` rows, a larger one stays in the session and the sidebar says so).
Page widgets (:data:`KEEP`) add their own keys (``spectrum_k``, ``heatmap_sort``, ``cmp_qs``,
``cmp_presentation``, ...), written by Streamlit itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import streamlit as st

from diversity_core import format_q
from diversity_core import parse_q as core_parse_q
from diversity_core.exceptions import DiversityInputError

#: The orders the q control offers: 0, fractional values, the integers that matter, and inf.
Q_GRID: tuple = (
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0,
    5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 50.0, 100.0, math.inf,
)

#: Kernels offered in the sidebar (``precomputed`` needs a matrix, not features).
KERNEL_CHOICES = ("cosine", "linear", "rbf", "laplacian", "polynomial", "tanimoto", "probability_product")
#: Kernels with a bandwidth.
BANDWIDTH_KERNELS = ("rbf", "laplacian")

DEFAULT_DEMO = "digits"
SOURCES = ("Demo", "Upload", "Local path")

#: Session-state keys and defaults of the shared settings (the sidebar widgets' keys).
DEFAULTS: dict = {
    "source": "Demo",
    "demo": DEFAULT_DEMO,
    "path": "",
    "group_column": "",
    "weight_column": "",
    "text_column": "",
    "smiles_column": "",
    "featurizer": None,  # None: the dataset's default, resolved when the dataset is known
    "kernel": None,  # None: the featurizer's kernel
    "sigma_auto": True,
    "sigma": 1.0,
    "degree": 3,
    "q": 1.0,
    "subsample_on": False,
    "subsample_n": 500,
    "subsample_seed": 0,
    "groups": None,  # None: every group
    "pca_k": 10,
    "weight_min": None,  # weight-range filter (datasets with weights); None: no bound
    "weight_max": None,
}
#: The preprocessing steps' multiselect (not re-assigned on every run, see ui.sidebar).
PREP_KEY = "prep"

_URL_LOADED = "_url_loaded"

#: Largest linked selection written into the URL (more row numbers would make an unwieldy link).
LINK_MAX_ROWS = 200

#: Keyword arguments of every page widget (eigenvectors, heatmap sort, Compare's options,
#: presentation mode, ...): Streamlit keeps the value for the whole session, across page
#: changes (``persist_state``), and mirrors it in the URL under the widget's key (``bind``), so a
#: copied link reopens exactly what was on screen. A value equal to the widget's default is
#: left out of the URL; an invalid one in a link is ignored.
KEEP: dict = {"bind": "query-params", "persist_state": "session"}


@dataclass(frozen=True)
class Settings:
    """A snapshot of the shared settings, for pages and cached wrappers."""

    featurizer: str
    kernel: str
    kernel_params: tuple  # sorted (name, value) pairs, hashable for caches
    q: float
    subsample: Optional[int]
    seed: int
    groups: Optional[tuple]
    preprocess: tuple = ()  # (steps, n_components) or () for raw features

    @property
    def kernel_kwargs(self) -> dict:
        return dict(self.kernel_params)

    @property
    def q_label(self) -> str:
        return format_q(self.q)


def parse_q(text) -> Optional[float]:
    """An order from the URL or a widget (the core's parser); None when absent or invalid."""
    if text is None:
        return None
    try:
        return core_parse_q(text)
    except DiversityInputError:
        return None


def q_options(current: float) -> list:
    """The q grid, with ``current`` inserted when it is not on it (a value from a link)."""
    grid = list(Q_GRID)
    if current not in grid:
        grid.append(current)
        grid.sort()
    return grid


def _finite_float(text) -> Optional[float]:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _positive_float(text) -> Optional[float]:
    v = _finite_float(text)
    return v if v is not None and v > 0 else None


def _int_at_least(text, lo: int) -> Optional[int]:
    try:
        v = int(str(text))
    except (TypeError, ValueError):
        return None
    return v if v >= lo else None


def init_state() -> None:
    """Set every missing default; on a session's first run, apply the URL's settings."""
    ss = st.session_state
    for key, value in DEFAULTS.items():
        # Re-assigning a widget's key each run detaches it from Streamlit's widget cleanup, which
        # otherwise resets a sidebar widget (seen: the q slider fell back to its first option)
        # when st.navigation switches pages.
        ss[key] = ss[key] if key in ss else value
    if ss.get(_URL_LOADED):
        return
    ss[_URL_LOADED] = True
    read_query_params(st.query_params)


def read_query_params(params) -> None:
    """Apply the settings a URL carries; invalid values are ignored (defaults stay)."""
    ss = st.session_state
    if params.get("path"):
        ss["source"] = "Local path"
        ss["path"] = params["path"]
        for short, key in (("gcol", "group_column"), ("wcol", "weight_column"),
                           ("tcol", "text_column"), ("scol", "smiles_column")):
            if params.get(short):
                ss[key] = params[short]
    elif params.get("demo"):
        ss["source"] = "Demo"
        ss["demo"] = params["demo"]
    elif params.get("source") == "upload":
        ss["source"] = "Upload"
    if params.get("feat"):
        ss["featurizer"] = params["feat"]
    if params.get("kernel") in KERNEL_CHOICES:
        ss["kernel"] = params["kernel"]
    sigma = _positive_float(params.get("sigma"))
    if sigma is not None:
        ss["sigma_auto"] = False
        ss["sigma"] = sigma
    degree = _int_at_least(params.get("degree"), 1)
    if degree is not None:
        ss["degree"] = degree
    q = parse_q(params.get("q"))
    if q is not None:
        ss["q"] = q
    n = _int_at_least(params.get("n"), 2)
    if n is not None:
        ss["subsample_on"] = True
        ss["subsample_n"] = n
    seed = _int_at_least(params.get("seed"), 0)
    if seed is not None:
        ss["subsample_seed"] = seed
    if params.get("prep"):
        from diversity_core.preprocess import parse_steps

        try:
            ss["prep"] = list(parse_steps(params["prep"]))
        except ValueError:
            pass
    pca_k = _int_at_least(params.get("pca_k"), 1)
    if pca_k is not None:
        ss["pca_k"] = pca_k
    for short, key in (("wmin", "weight_min"), ("wmax", "weight_max")):
        bound = _finite_float(params.get(short))
        if bound is not None:
            ss[key] = bound
    groups = params.get_all("group") if hasattr(params, "get_all") else params.get("group")
    if groups:
        ss["groups"] = [groups] if isinstance(groups, str) else list(groups)
    selection = parse_selection(params.get("sel"))
    if selection is not None:
        ss["_selection_link"] = selection  # bound to the dataset once it is loaded (ui.data.current_selection)


def format_rows(rows) -> str:
    """Sorted row numbers as compact text, runs as ranges: ``(3, 17, 18, 19, 20)`` -> ``"3,17-20"``."""
    rows = sorted({int(r) for r in rows})
    parts, start = [], None
    for i, r in enumerate(rows):
        if start is None:
            start = r
        if i + 1 == len(rows) or rows[i + 1] != r + 1:
            parts.append(str(start) if start == r else f"{start}-{r}")
            start = None
    return ",".join(parts)


def parse_rows(text: str) -> Optional[tuple]:
    """The rows of :func:`format_rows`' text, sorted; None when the text is not such a list."""
    out: set = set()
    for part in str(text).split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            return None
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b - a > 100_000:
            return None
        out.update(range(a, b + 1))
    return tuple(sorted(out))


def parse_selection(text) -> Optional[tuple]:
    """``(mode, rows)`` of a link's ``sel`` value (``"exclude:3,17-20"``); None when absent or invalid."""
    if not text:
        return None
    mode, _, rows = str(text).partition(":")
    if mode not in ("restrict", "exclude"):
        return None
    parsed = parse_rows(rows)
    return None if not parsed else (mode, parsed)


def query_dict() -> dict:
    """The query string the current settings produce (values are str or list of str)."""
    ss = st.session_state
    out: dict = {}
    if ss["source"] == "Demo":
        out["demo"] = ss["demo"]
    elif ss["source"] == "Local path":
        if ss["path"]:
            out["path"] = ss["path"]
            for short, key in (("gcol", "group_column"), ("wcol", "weight_column"),
                               ("tcol", "text_column"), ("scol", "smiles_column")):
                if ss[key]:
                    out[short] = ss[key]
    else:
        out["source"] = "upload"
    if ss.get("featurizer"):
        out["feat"] = ss["featurizer"]
    if ss.get("kernel"):
        out["kernel"] = ss["kernel"]
        if ss["kernel"] in BANDWIDTH_KERNELS and not ss["sigma_auto"]:
            out["sigma"] = f"{float(ss['sigma']):g}"
        if ss["kernel"] == "polynomial":
            out["degree"] = str(int(ss["degree"]))
    out["q"] = "inf" if math.isinf(ss["q"]) else f"{float(ss['q']):g}"
    if ss["subsample_on"]:
        out["n"] = str(int(ss["subsample_n"]))
        out["seed"] = str(int(ss["subsample_seed"]))
    if ss.get("groups") is not None:
        out["group"] = list(ss["groups"])
    for short, key in (("wmin", "weight_min"), ("wmax", "weight_max")):
        if ss.get(key) is not None:
            out[short] = repr(float(ss[key]))
    if ss.get("prep"):
        out["prep"] = ",".join(ss["prep"])
        if "pca" in ss["prep"]:
            out["pca_k"] = str(int(ss["pca_k"]))
    selection = ss.get("selection")
    if getattr(selection, "active", False) and len(selection.rows) <= LINK_MAX_ROWS:
        out["sel"] = f"{selection.mode}:{format_rows(selection.rows)}"
    return out


#: Query-string keys this module owns (others, e.g. a page's own, are left alone).
QUERY_KEYS = ("demo", "path", "source", "gcol", "wcol", "tcol", "scol", "feat", "kernel", "sigma", "degree",
              "q", "n", "seed", "group", "prep", "pca_k", "wmin", "wmax", "sel")


def write_query_params() -> None:
    """Mirror the settings in the URL, touching only keys that changed."""
    want = query_dict()
    qp = st.query_params
    for key in QUERY_KEYS:
        if key not in want:
            if key in qp:
                del qp[key]
            continue
        value = want[key]
        have = qp.get_all(key) if isinstance(value, list) else qp.get(key)
        if have != value:
            qp[key] = value


def settings() -> Settings:
    """The current shared settings (after the sidebar has resolved featurizer and kernel)."""
    ss = st.session_state
    kernel = ss["kernel"] or "cosine"
    params: dict = {}
    if kernel in BANDWIDTH_KERNELS and not ss["sigma_auto"]:
        params["sigma"] = float(ss["sigma"])
    if kernel == "polynomial":
        params["degree"] = int(ss["degree"])
    return Settings(
        featurizer=ss["featurizer"] or "default",
        kernel=kernel,
        kernel_params=tuple(sorted(params.items())),
        q=float(ss["q"]),
        subsample=int(ss["subsample_n"]) if ss["subsample_on"] else None,
        seed=int(ss["subsample_seed"]),
        groups=None if ss.get("groups") is None else tuple(ss["groups"]),
        preprocess=preprocess_spec(),
    )


def preprocess_spec() -> tuple:
    """``(steps, n_components)`` of the sidebar's preprocessing; ``()`` for raw features."""
    ss = st.session_state
    steps = tuple(ss.get("prep") or ())
    if not steps:
        return ()
    return (steps, int(ss["pca_k"]) if "pca" in steps else None)
