"""The columns of the file the sidebar asks for, and the ones the loader detects (issue 41, item 7).

The detection is the core's (:func:`diversity_core.data.detect_columns`, the loader's own rule);
this module only finds the file (an upload through a temporary file, a path inside the data
folder) and keeps the answer per file in the session, so it is read once per file.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from diversity_core import DiversityError
from diversity_core.data import DetectedColumns, detect_columns

from .folder import LOCAL_SOURCE, data_dir
from .uploads import MAX_UPLOAD_BYTES

#: Session-state key of the last file's detected columns: ``(file key, DetectedColumns)``.
COLUMNS_KEY = "_columns_detected"


def file_key(spec) -> object:
    """The file part of :func:`~ui.data.loading.requested_source`'s answer (the column options left out)."""
    return None if spec is None else spec[:-1]


def _upload_columns(one) -> DetectedColumns:
    if getattr(one, "closed", False):
        return DetectedColumns()
    tmpdir = tempfile.mkdtemp(prefix="diversity-columns-")
    target = Path(tmpdir) / (Path(one.name).name or "upload")  # the name keeps its suffix (the format)
    try:
        if hasattr(one, "seek"):
            one.seek(0)
        with open(target, "wb") as fh:
            shutil.copyfileobj(one, fh, length=1 << 22)
        return detect_columns(str(target), max_bytes=MAX_UPLOAD_BYTES)
    finally:
        if hasattr(one, "seek"):
            one.seek(0)
        shutil.rmtree(tmpdir, ignore_errors=True)


def _detect(ss, upload) -> DetectedColumns:
    if ss["source"] == LOCAL_SOURCE:
        root = data_dir()
        path = (ss.get("path") or "").strip()
        return detect_columns(path, data_dir=root) if root is not None and path else DetectedColumns()
    uploads = upload if isinstance(upload, list) else [upload]
    found = [_upload_columns(u) for u in uploads if u is not None]
    if not found:
        return DetectedColumns()
    if len(found) == 1:
        return found[0]
    # several files, one group each: the columns they all have, the first file's detected roles
    common = tuple(c for c in found[0].columns if all(c in f.columns for f in found[1:]))
    first = found[0]
    return DetectedColumns(common, **{r: v for r, v in first.as_options().items()
                                      if v in common and r != "group_column"})


def file_columns(ss, spec, upload) -> DetectedColumns:
    """The requested file's columns and detected roles (empty when it has none or cannot be read).

    A file that cannot be read gives no columns here: loading it reports why.
    """
    key = file_key(spec)
    if key is None:
        return DetectedColumns()
    kept = ss.get(COLUMNS_KEY)
    if kept is not None and kept[0] == key:
        return kept[1]
    try:
        found = _detect(ss, upload)
    except (DiversityError, OSError, ValueError, MemoryError):
        found = DetectedColumns()
    ss[COLUMNS_KEY] = (key, found)
    return found
