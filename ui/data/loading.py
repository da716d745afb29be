"""The source the sidebar asks for (a demo, an upload, a local path), loaded once.

The loaded :class:`~diversity_core.data.Dataset` lives in ``st.session_state["dataset"]``. A
new source is loaded once; when loading fails the error is kept in
``st.session_state["load_error"]`` and shown, and the previous dataset stays loaded.
"""

from __future__ import annotations

from typing import Optional

import streamlit as st

from diversity_core import DiversityError
from diversity_core.data import DEMOS, Dataset, list_demos, load_demo

from ..cache import shared_cache, track_session
from ..feedback import literal, plain
from ..state import DEFAULT_DEMO
from .folder import LOCAL_SOURCE, load_path
from .uploads import discard_uploads, load_upload, load_uploads


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
    if ss.get("source") == LOCAL_SOURCE and ss.get("coco_crops"):  # shown for a COCO folder only
        opts["coco_crops"] = True
    return opts

def check_demo_link(ss) -> None:
    """A link naming a demo that does not exist: a warning (the name as literal text), first demo."""
    names = demo_names()
    if ss.get("source") == "Demo" and ss.get("demo") not in names:
        ss["link_error"] = (f"The link asks for a demo named {literal(repr(ss['demo']))}, which does not exist; "
                            f"showing **{names[0]}** instead. Demos: {', '.join(names)}.")
        ss["demo"] = names[0]

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
    track_session()  # its end drops this session's dataset and what its uploads alone made (ui.cache)
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

def _describe(spec: tuple) -> str:
    if spec[0] == "demo":
        return f"the demo {spec[1]!r}"
    if spec[0] == "path":
        return repr(spec[1])
    if spec[0] == "uploads":
        return "the uploads " + ", ".join(repr(n) for n in spec[2])
    return f"the upload {spec[2]!r}"
