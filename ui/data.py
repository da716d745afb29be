"""Loading datasets for the app and the working view (group filter + subsample) pages measure.

The loaded :class:`~diversity_core.data.Dataset` lives in ``st.session_state["dataset"]``. A
new source (demo, upload, local path) is loaded once; when loading fails the error is kept in
``st.session_state["load_error"]`` and shown, and the previous dataset stays loaded.

Reading files from the server is off unless the person starting the server names a data
folder: ``diversity app --data-dir DIR`` (or ``streamlit run app.py`` with the environment
variable :data:`DATA_DIR_ENV` set). Every typed or linked path then goes through
:func:`diversity_core.data.resolve_user_path` (inside that folder, or one refusal message for
everything else) before anything touches the file system; without a folder the "Local path"
source is hidden and every path is refused.

Uploads arrive as bytes; :func:`diversity_core.data.load_dataset` reads paths, so an upload is
written to a temporary file that keeps its name's suffix, loaded, and removed.

Pages work on a :class:`View`: the dataset after the sidebar's search (:func:`working_dataset`:
a substring, a SMARTS substructure, molecules regrouped by scaffold), restricted to the selected
groups and subsampled (seeded), then restricted to, or cleared of, the linked selection
(:class:`Selection`: rows of the loaded dataset picked on the Projection or Curate page).
``View.key`` names it in every cache (the dataset's content hash plus every filter), so no array
is hashed on a rerun.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import (
    DEFAULT_MAX_BYTES,
    DEMOS,
    Dataset,
    list_demos,
    load_dataset,
    load_demo,
    resolve_user_path,
)

from .cache import shared_cache
from .feedback import literal, plain
from .state import DEFAULT_DEMO, SOURCES

#: The environment variable naming the folder visitors may read from (unset: none).
DATA_DIR_ENV = "DIVERSITY_DATA_DIR"
#: The one size limit of an upload and of the loaders (Streamlit's ``server.maxUploadSize`` is
#: this in MiB: ``.streamlit/config.toml`` sets 1024 and ``diversity app`` passes it through).
MAX_UPLOAD_BYTES = DEFAULT_MAX_BYTES
LOCAL_SOURCE = "Local path"
#: Most files the data folder's picker lists (a folder of thousands is typed, not browsed).
PICKER_MAX = 500


def data_dir() -> Optional[Path]:
    """The data folder visitors may read from (``$DIVERSITY_DATA_DIR``), or None: reading is off."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value) if value else None


def sources() -> tuple:
    """The data sources the sidebar offers: "Local path" only when a data folder is set."""
    return SOURCES if data_dir() is not None else tuple(s for s in SOURCES if s != LOCAL_SOURCE)


def refuse_local_path(ss) -> None:
    """Before the sidebar: a link's or an old session's local path, with reading turned off, is
    refused (one message, nothing read) and the source falls back to the demo."""
    if ss.get("source") != LOCAL_SOURCE or data_dir() is not None:
        return
    path = (ss.get("path") or "").strip()
    try:
        resolve_user_path(path or ".", data_dir=None)
    except DiversityError as exc:
        ss["load_error"] = f"Could not load {path!r}: {exc}" if path else f"Could not load a local path: {exc}"
    ss["source"] = "Demo"
    ss["path"] = ""
    # the demo counts as tried, so loading it does not clear the refusal; the loaded dataset (the
    # default demo on a first run) stays
    ss["_source_tried"] = ("demo", ss.get("demo"))


def check_demo_link(ss) -> None:
    """A link naming a demo that does not exist: a warning (the name as literal text), first demo."""
    names = demo_names()
    if ss.get("source") == "Demo" and ss.get("demo") not in names:
        ss["link_error"] = (f"The link asks for a demo named {literal(repr(ss['demo']))}, which does not exist; "
                            f"showing **{names[0]}** instead. Demos: {', '.join(names)}.")
        ss["demo"] = names[0]


def folder_files() -> list:
    """Files and folders of the data folder a visitor may pick (relative paths, no hidden entries)."""
    root = data_dir()
    if root is None:
        return []
    try:
        base = root.resolve(strict=True)
        out = []
        for dirpath, dirnames, filenames in os.walk(base):  # links are not followed
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = Path(dirpath).relative_to(base)
            if rel.parts:
                out.append(rel.as_posix() + "/")
            out.extend((rel / f).as_posix() for f in sorted(filenames) if not f.startswith("."))
            if len(out) >= PICKER_MAX:
                return out[:PICKER_MAX]
        return out
    except OSError:
        return []


def _picked() -> None:
    """The picker's choice becomes the path box's value (the box stays editable)."""
    ss = st.session_state
    choice = ss.get("_path_pick")
    if choice:
        ss["path"] = choice.rstrip("/")


def path_input(container) -> None:
    """The "Local path" source's controls: a picker of the data folder and a path box (key ``path``)."""
    files = folder_files()
    if files:
        container.selectbox(f"Files in the data folder ({len(files)})", files, index=None,
                            placeholder="pick a file or folder", key="_path_pick", on_change=_picked)
    container.text_input("Local path (inside the data folder)", key="path", placeholder="embeddings.npy",
                         help="A file or folder inside the data folder the server was started with; paths "
                              "outside it are refused.")


@dataclass(frozen=True)
class View:
    """The dataset pages measure: ``full`` restricted to ``indices`` (None: all of it)."""

    full: Dataset
    data: Dataset
    indices: Optional[np.ndarray]
    key: str
    description: str
    preprocess: tuple = ()  # (steps, n_components) applied to every representation's features
    loaded: Optional[Dataset] = None  # the dataset as loaded, when a search changed it (``full`` is the result)
    rows: Optional[np.ndarray] = None  # row in the loaded dataset of each item of ``data`` (None: the same rows)
    selection_note: str = ""  # why the linked selection was set aside on this view (empty: applied or none)

    @property
    def n(self) -> int:
        return self.data.n

    def loaded_rows(self, indices) -> np.ndarray:
        """Rows of the loaded dataset of the view's items at ``indices`` (0-based positions in ``data``)."""
        idx = np.asarray(indices, dtype=np.intp).reshape(-1)
        return idx.copy() if self.rows is None else self.rows[idx]

    @property
    def groups(self) -> list:
        return self.data.group_names()


def view_hash(view: View) -> str:
    """Cache key of a view (``hash_funcs`` of every cached wrapper)."""
    return view.key


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------
@shared_cache("data", spinner="Loading the demo dataset…")
def _demo(name: str) -> Dataset:
    return load_demo(name)


def demo_names() -> list:
    return list(list_demos())


def demo_titles() -> dict:
    return {name: DEMOS[name].title for name in list_demos()}


def _options(ss) -> dict:
    opts = {}
    for key in ("group_column", "weight_column", "text_column", "smiles_column"):
        value = (ss.get(key) or "").strip()
        if value:
            opts[key] = value
    return opts


@shared_cache("data", spinner="Reading the file…")
def _path(path: str, stamp: tuple, options: tuple, root: str) -> Dataset:
    return load_dataset(path, data_dir=root, **dict(options))


def load_path(path: str, options: dict, root: Optional[Path] = None) -> Dataset:
    """Load a file or folder inside the data folder (cached by path, modification time and size).

    ``path`` is resolved by :func:`~diversity_core.data.resolve_user_path` inside ``root`` (default:
    :func:`data_dir`) before anything else; with no data folder every path is refused.
    """
    root = data_dir() if root is None else root
    p = resolve_user_path(path, data_dir=root)  # refuses before any stat, listing or open
    try:
        st_ = p.stat()
        stamp = (st_.st_mtime_ns, st_.st_size)
    except OSError:
        stamp = (0, 0)  # load_dataset reports the problem with its own message
    files = group_files(p)
    if files:  # a folder of embedding files: one group per file
        stamp = tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in files)
        return _folder(str(p), stamp, tuple(sorted(options.items())), str(root))
    return _path(str(p), stamp, tuple(sorted(options.items())), str(root))


@shared_cache("data", spinner="Reading the files…")
def _folder(path: str, stamp: tuple, options: tuple, root: str) -> Dataset:
    files = group_files(Path(path))
    # every member is re-checked against the data folder (a link in it may lead out)
    parts = {f.stem: load_dataset(str(f), data_dir=root, **dict(options)) for f in files}
    return combine_as_groups(parts, name=Path(path).name, source=path)


def load_upload(name: str, data, options: dict) -> Dataset:
    """Load uploaded content (bytes or a binary file object) through a temporary file."""
    if getattr(data, "closed", False):  # refused before and freed by discard_uploads
        raise DiversityError(f"the upload {name!r} was refused and freed; upload the file again.")
    tmpdir = tempfile.mkdtemp(prefix="diversity-upload-")
    target = Path(tmpdir) / (Path(name).name or "upload")  # the name keeps its suffix (the format)
    try:
        with open(target, "wb") as fh:
            if isinstance(data, (bytes, bytearray, memoryview)):
                fh.write(data)
            else:
                if hasattr(data, "seek"):
                    data.seek(0)
                shutil.copyfileobj(data, fh, length=1 << 22)
        ds = load_dataset(str(target), max_bytes=MAX_UPLOAD_BYTES, **options)
    except DiversityError as exc:  # name the upload, not the temporary file, in the message
        raise type(exc)(str(exc).replace(str(target), name)) from None
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    # the temporary path means nothing to the user: name the source after the upload
    return replace(ds, name=name, source=f"upload:{name}", content_hash=ds.content_hash)


#: Files a folder may hold to be read as one group per file (like ``diversity compare A.npy B.npy``).
GROUP_FILE_SUFFIXES = (".npy", ".parquet", ".csv", ".tsv", ".npz")


def combine_as_groups(parts: dict, name: str, source: str) -> Dataset:
    """One dataset whose groups are the given datasets (group name -> Dataset), in order.

    Every part must hold the same modality (and, with features, the same dimension); a part's own
    groups become ``"<part>: <group>"``.
    """
    names = list(parts)
    first = parts[names[0]]
    for g, d in parts.items():
        if d.modality != first.modality:
            raise DiversityError(f"{g!r} holds {d.modality} but {names[0]!r} holds {first.modality}; "
                                 "files combined as groups must hold the same kind of items.")
        if (d.features is None) != (first.features is None) or (
                d.features is not None and d.features.shape[1] != first.features.shape[1]):
            dims = [None if x.features is None else x.features.shape[1] for x in parts.values()]
            raise DiversityError(f"files combined as groups need features of one dimension; got {dims} "
                                 f"for {names}.")
    groups, ids, weights = [], [], []
    for g, d in parts.items():
        own = None if d.groups is None else np.asarray(d.groups).astype(str)
        groups.extend([g] * d.n if own is None else [f"{g}: {x}" for x in own])
        ids.extend(f"{g} · {i}" for i in d.ids)
        weights.append(np.ones(d.n) if d.weights is None else np.asarray(d.weights, dtype=float))
    features = None if first.features is None else np.concatenate([np.asarray(d.features) for d in parts.values()])
    if first.items is None:
        items = None
    elif isinstance(first.items, np.ndarray):
        shapes = {d.items.shape[1:] for d in parts.values()}
        if len(shapes) > 1:
            raise DiversityError(f"images combined as groups need one size; got {sorted(shapes)}.")
        items = np.concatenate([d.items for d in parts.values()])
    else:
        items = [x for d in parts.values() for x in d.items]
    any_weights = any(d.weights is not None for d in parts.values())
    skipped = tuple(sk for d in parts.values() for sk in d.skipped)
    return Dataset(name=name, modality=first.modality, items=items, features=features,
                   groups=np.asarray(groups, dtype=str), weights=np.concatenate(weights) if any_weights else None,
                   ids=ids, skipped=skipped, source=source)


def group_files(path: Path) -> list:
    """The files of a folder that hold one group each (empty when it is not such a folder)."""
    if not path.is_dir():
        return []
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
    if len(files) >= 2 and all(p.suffix.lower() in GROUP_FILE_SUFFIXES for p in files):
        return files
    return []


def load_uploads(uploads: list, options: dict) -> Dataset:
    """Several uploaded files as one dataset, one group per file (named after the file)."""
    parts = {}
    for up in uploads:
        parts[Path(up.name).stem or up.name] = load_upload(up.name, up, options)
    if len(parts) < len(uploads):
        raise DiversityError("two uploads have the same file name; rename one so each group has its own name.")
    names = ", ".join(up.name for up in uploads)
    return combine_as_groups(parts, name=f"{len(uploads)} files", source=f"upload:{names}")


def requested_source(ss, upload=None) -> Optional[tuple]:
    """A hashable description of the source the sidebar asks for (None: nothing to load)."""
    source = ss["source"]
    if source == "Demo":
        return ("demo", ss["demo"])
    if source == LOCAL_SOURCE:
        path = (ss.get("path") or "").strip()
        return ("path", path, tuple(sorted(_options(ss).items()))) if path else None
    if not upload:
        return None
    if isinstance(upload, list):
        if len(upload) == 1:
            upload = upload[0]
        else:
            return ("uploads", tuple(u.file_id for u in upload), tuple(u.name for u in upload),
                    tuple(sorted(_options(ss).items())))
    return ("upload", upload.file_id, upload.name, tuple(sorted(_options(ss).items())))


def ensure_dataset(upload=None) -> Optional[Dataset]:
    """Load the requested source when it changed; keep the previous dataset on failure.

    Returns the dataset that is now loaded (None only before the first success).
    """
    ss = st.session_state
    spec = requested_source(ss, upload)
    if spec is not None and spec != ss.get("_source_tried"):
        ss["_source_tried"] = spec
        try:
            if spec[0] == "demo":
                ds = _demo(spec[1])
            elif spec[0] == "path":
                ds = load_path(spec[1], dict(spec[2]))
            elif spec[0] == "uploads":
                ds = load_uploads(list(upload), dict(spec[3]))
            else:
                one = upload[0] if isinstance(upload, list) else upload
                ds = load_upload(one.name, one, dict(spec[3]))
        except DiversityError as exc:
            ss["load_error"] = plain(f"Could not load {_describe(spec)}: {exc}")
            discard_uploads(upload)
        except (OSError, ValueError, MemoryError) as exc:
            ss["load_error"] = f"Could not load {_describe(spec)}: {type(exc).__name__}: {exc}"
            discard_uploads(upload)
        else:
            ss["load_error"] = None
            ss["dataset"] = ds
    if ss.get("dataset") is None:
        ss["dataset"] = _demo(DEFAULT_DEMO)
    return ss["dataset"]


def discard_uploads(upload) -> None:
    """Free refused uploads now: drop them from Streamlit's upload store (which holds their bytes
    until the session ends, 2 minutes after the tab closes) and return the memory to the system.

    The file uploader still lists the file in the browser, but the next run finds no content for
    it, so nothing of a refused upload stays in the session.
    """
    if not upload:
        return
    files = upload if isinstance(upload, list) else [upload]
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is not None and ctx.uploaded_file_mgr is not None:
            for up in files:
                ctx.uploaded_file_mgr.remove_file(ctx.session_id, up.file_id)
    except (ImportError, AttributeError):  # another Streamlit: the session's end frees them
        pass
    for up in files:
        up.close()  # the UploadedFile's own copy of the bytes
    release_memory()


def release_memory() -> None:
    """Collect garbage and give freed heap pages back to the system (glibc ``malloc_trim``)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the allocator keeps its pages
        pass


def _describe(spec: tuple) -> str:
    if spec[0] == "demo":
        return f"the demo {spec[1]!r}"
    if spec[0] == "path":
        return repr(spec[1])
    if spec[0] == "uploads":
        return "the uploads " + ", ".join(repr(n) for n in spec[2])
    return f"the upload {spec[2]!r}"


# ------------------------------------------------------------------------------------------
# the search and the working view
# ------------------------------------------------------------------------------------------
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
        from .feedback import plain

        return Searched(full, plain(f"Search set aside: {exc}"))
    if int(keep.sum()) < MIN_MATCHES:
        return Searched(full, f"Search set aside: {int(keep.sum())} of {full.n} items match "
                              f"{search.describe()}; the scores need at least {MIN_MATCHES}.")
    if keep.all():
        return Searched(ds)
    rows = np.flatnonzero(keep)
    rows.setflags(write=False)
    return Searched(replace(ds.subset(keep), content_hash=""), rows=rows)


# ------------------------------------------------------------------------------------------
# the linked selection: items picked on one page, kept or dropped on every page
# ------------------------------------------------------------------------------------------
#: What a selection does to the view: keep only its rows, or drop them.
SELECTION_MODES = ("restrict", "exclude")
#: Session-state key of the selection in effect, and of one a link carried (bound on first use).
SELECTION_KEY = "selection"
SELECTION_LINK_KEY = "_selection_link"


@dataclass(frozen=True)
class Selection:
    """The linked selection: rows of the loaded dataset every page keeps (``restrict``) or drops (``exclude``).

    ``rows`` are 0-based row numbers of the dataset as loaded (before the search, group filter
    and subsample), sorted; ``dataset`` is that dataset's content hash, so a selection never
    applies to another dataset. The empty selection (``mode=""``) changes nothing.
    """

    mode: str = ""
    rows: tuple = ()
    dataset: str = ""

    @property
    def active(self) -> bool:
        """Whether the selection changes the view (an empty exclusion does not)."""
        return self.mode == "restrict" or (self.mode == "exclude" and bool(self.rows))

    @property
    def key(self) -> str:
        """A short digest naming the selection in cache keys."""
        digest = hashlib.blake2b(np.asarray(self.rows, dtype=np.int64).tobytes(), digest_size=8).hexdigest()
        return f"{self.mode}:{len(self.rows)}:{digest}:{self.dataset}"

    def summary(self) -> str:
        """The selection in words, as the sidebar shows it."""
        n = len(self.rows)
        noun = "item" if n == 1 else "items"
        return f"Restricted to {n} selected {noun}" if self.mode == "restrict" else f"{n} selected {noun} excluded"

    def describe(self, *, kept: int, dropped: int) -> str:
        """What the selection did to one view (for the view's description)."""
        if self.mode == "restrict":
            return f"restricted to {kept} selected item{'s' if kept != 1 else ''}"
        return f"{dropped} selected item{'s' if dropped != 1 else ''} excluded"

    def keeps(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask: which of the items at loaded ``rows`` the selection keeps."""
        inside = np.isin(np.asarray(rows, dtype=np.int64), np.asarray(self.rows, dtype=np.int64))
        return inside if self.mode == "restrict" else ~inside

    def combined(self, mode: str, rows) -> Selection:
        """This selection followed by "keep only ``rows``" or "drop ``rows``".

        The pages already show the view under this selection, so a new selection refines it:
        restricting twice keeps the intersection, excluding twice drops the union, and a mix
        keeps the restricted rows less the excluded ones.
        """
        if mode not in SELECTION_MODES:
            raise ValueError(f"selection mode must be one of {SELECTION_MODES}; got {mode!r}.")
        new = {int(r) for r in rows}
        old = set(self.rows)
        if not self.active:
            out_mode, out = mode, new
        elif self.mode == "restrict":
            out_mode, out = "restrict", (old & new if mode == "restrict" else old - new)
        else:
            out_mode, out = ("restrict", new - old) if mode == "restrict" else ("exclude", old | new)
        return Selection(mode=out_mode, rows=tuple(sorted(out)), dataset=self.dataset)


def current_selection() -> Selection:
    """The selection in effect on the loaded dataset (the empty one when none, or when it names another dataset).

    A selection a link carried (``sel=`` in the URL, read by :func:`ui.state.read_query_params`)
    is bound to the dataset loaded on the session's first run; rows beyond it are dropped.
    """
    ss = st.session_state
    ds = ss.get("dataset")
    if ds is None:
        return Selection()
    link = ss.pop(SELECTION_LINK_KEY, None)
    if link is not None and not ss.get("load_error"):  # rows of a source that failed to load name nothing here
        mode, rows = link
        rows = tuple(sorted({int(r) for r in rows if 0 <= int(r) < ds.n}))
        ss[SELECTION_KEY] = Selection(mode=mode, rows=rows, dataset=ds.content_hash) if rows else Selection()
    sel = ss.get(SELECTION_KEY)
    if not isinstance(sel, Selection) or sel.dataset != ds.content_hash:
        return Selection()
    return sel


def use_selection(mode: str, rows) -> None:
    """Apply "keep only" (``restrict``) or "drop" (``exclude``) the loaded ``rows`` on every page.

    Combined with the selection in effect (:meth:`Selection.combined`); meant as a button's
    ``on_click``, so the sidebar and the page of the same run see the new view.
    """
    ss = st.session_state
    base = current_selection()
    base = replace(base, dataset=ss["dataset"].content_hash)
    ss[SELECTION_KEY] = base.combined(mode, rows)


def clear_selection() -> None:
    """Every page measures the whole view again."""
    st.session_state[SELECTION_KEY] = Selection()
    st.session_state.pop(SELECTION_LINK_KEY, None)


def selection_buttons(view: View, indices, *, key: str, what: str = "these items",
                      modes: tuple = SELECTION_MODES) -> None:
    """Buttons that send the view's items at ``indices`` to every page: keep only them, or drop them.

    ``key`` prefixes the buttons' keys (one set per place they are drawn); ``what`` names the
    items in the buttons' help; ``modes`` picks the buttons (``("exclude",)``: only the drop).
    A button that would leave fewer than two items is disabled and says why.
    """
    idx = [int(i) for i in indices]
    if not idx:
        return
    rows = tuple(int(r) for r in view.loaded_rows(idx))
    n = len(rows)
    shown = [m for m in SELECTION_MODES if m in modes]
    cols = iter(st.columns([1] * len(shown) + [4 - len(shown)]))
    if "restrict" in shown:
        next(cols).button(f"Keep only these {n}", key=f"{key}_restrict", icon=":material/filter_alt:",
                          on_click=use_selection, args=("restrict", rows), disabled=n < MIN_MATCHES,
                          help=f"Measure only {what} on every page (the sidebar shows it and clears it)."
                               + (f" The scores need at least {MIN_MATCHES} items." if n < MIN_MATCHES else ""))
    if "exclude" in shown:
        too_many = n > view.n - MIN_MATCHES
        next(cols).button(f"Exclude these {n}", key=f"{key}_exclude", icon=":material/filter_alt_off:",
                          on_click=use_selection, args=("exclude", rows), disabled=too_many,
                          help=f"Measure every page without {what}: what happens to VS if they are dropped?"
                               + (f" The scores need at least {MIN_MATCHES} items left." if too_many else ""))
    next(cols).caption("Used on every page: the sidebar shows the selection in effect and clears it.")


def selection_csv(view: View, indices) -> bytes:
    """CSV of the view's items at ``indices``: ``row`` (in the loaded dataset), ``id`` (and ``group``)."""
    import pandas as pd

    idx = [int(i) for i in indices]
    table = pd.DataFrame({"row": view.loaded_rows(idx), "id": [view.data.ids[i] for i in idx]})
    if view.data.groups is not None:
        table["group"] = [str(view.data.groups[i]) for i in idx]
    return table.to_csv(index=False).encode("utf-8")


@shared_cache("data", hash_funcs={Dataset: lambda d: d.content_hash})
def _view(full: Dataset, groups: Optional[tuple], subsample: Optional[int], seed: int,
          preprocess: tuple = (), search: Search = Search(), loaded: Optional[Dataset] = None,
          selection: Selection = Selection(), _rows: Optional[np.ndarray] = None) -> View:
    # ``_rows`` (the search's rows of the loaded dataset) follows from ``loaded`` and ``search``
    idx = np.arange(full.n)
    parts = [search.describe()] if search.active and full is not loaded else []
    if groups is not None and full.groups is not None:
        keep = np.isin(np.asarray(full.groups).astype(str), np.asarray(groups, dtype=str))
        idx = idx[keep]
        parts.append(f"{len(groups)} of {len(full.group_names())} groups")
    if subsample is not None and subsample < idx.size:
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(idx, size=int(subsample), replace=False))
        parts.append(f"a random subsample of {subsample} (seed {seed})")
    # the linked selection comes last: "exclude these" drops exactly those items from what was on screen
    source_rows = np.arange(full.n) if _rows is None else np.asarray(_rows)
    note = ""
    if selection.active:
        keep = selection.keeps(source_rows[idx])
        kept = int(keep.sum())
        if kept < MIN_MATCHES:
            note = (f"Selection set aside: it leaves {kept} of the {idx.size} items on screen; the scores need at "
                    f"least {MIN_MATCHES}. Clear it, or change the groups or subsample.")
        elif kept < idx.size:
            parts.append(selection.describe(kept=kept, dropped=idx.size - kept))
            idx = idx[keep]
    applied = selection.key if selection.active and not note else ""
    if idx.size == full.n:
        data, indices = full, None
    else:
        data, indices = full.subset(idx), idx
    rows = None if indices is None and _rows is None else source_rows[idx]
    if rows is not None:
        rows.setflags(write=False)
    key_src = (f"{full.content_hash}|{groups}|{subsample if indices is not None else None}|{seed}|{preprocess}"
               f"|{applied}")
    key = hashlib.blake2b(key_src.encode(), digest_size=12).hexdigest()
    description = f"{full.name}: {data.n} items" + (f" ({', '.join(parts)})" if parts else "")
    return View(full=full, data=data, indices=indices, key=key, description=description, preprocess=preprocess,
                loaded=None if loaded is None or loaded is full else loaded, rows=rows, selection_note=note)


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


def current_view() -> View:
    """The working view of the loaded dataset under the sidebar's group filter and subsample."""
    from .state import settings

    loaded = st.session_state["dataset"]
    search = current_search()
    result = working_dataset(loaded, search)
    full = result.data
    s = settings()
    groups = s.groups
    if groups is not None and full.groups is not None:
        valid = set(full.group_names())
        groups = tuple(g for g in groups if g in valid) or None
    return _view(full, groups, s.subsample, s.seed, s.preprocess, search, loaded,
                 selection=current_selection(), _rows=result.rows)
