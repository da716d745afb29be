"""Uploads: bytes the browser sent, read through a temporary file and freed when refused.

:func:`diversity_core.data.load_dataset` reads paths, so an upload is written to a temporary
file that keeps its name's suffix, loaded, and removed.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from diversity_core import DiversityError
from diversity_core.data import DEFAULT_MAX_BYTES, Dataset, load_dataset

from ..cache import register_private
from .file_groups import combine_as_groups

#: The one size limit of an upload and of the loaders (Streamlit's ``server.maxUploadSize`` is
#: this in MiB: ``.streamlit/config.toml`` sets 1024 and ``diversity app`` passes it through).
MAX_UPLOAD_BYTES = DEFAULT_MAX_BYTES


#: The ``source`` of every dataset loaded from uploads (``upload:NAME``).
UPLOAD_SOURCE = "upload:"


def from_upload(obj) -> bool:
    """Whether ``obj`` (a dataset, a search result, a working view) was made from an upload.

    What is computed from it serves the session that uploaded it: :func:`ui.cache.register_private`
    makes such cache entries go when that session ends.
    """
    for candidate in (obj, getattr(obj, "data", None), getattr(obj, "full", None), getattr(obj, "loaded", None)):
        source = getattr(candidate, "source", None)
        if isinstance(source, str) and source.startswith(UPLOAD_SOURCE):
            return True
    return False


register_private(from_upload)


def load_upload(name: str, data, options: dict) -> Dataset:
    """Load uploaded content (bytes or a binary file object) through a temporary file."""
    if getattr(data, "closed", False):  # refused before on this run (discard_uploads closed it)
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


def load_uploads(uploads: list, options: dict) -> Dataset:
    """Several uploaded files as one dataset, one group per file (named after the file)."""
    parts = {}
    for up in uploads:
        parts[Path(up.name).stem or up.name] = load_upload(up.name, up, options)
    if len(parts) < len(uploads):
        raise DiversityError("two uploads have the same file name; rename one so each group has its own name.")
    names = ", ".join(up.name for up in uploads)
    return combine_as_groups(parts, name=f"{len(uploads)} files", source=f"upload:{names}")


def discard_uploads(upload) -> None:
    """Let go of refused uploads: close the app's file objects and return freed memory to the system.

    What a failed load allocated (a half-parsed table, decoded images) is collected now. The
    bytes themselves stay in Streamlit's upload store, as every upload's do, until the visitor
    removes the file from the uploader (its x) or the session ends; Streamlit has no public API
    to drop them sooner. A later run that reads the upload again (new column options) gets a
    fresh file object from the store, so a refused file can be retried without uploading it again.
    """
    if not upload:
        return
    for up in upload if isinstance(upload, list) else [upload]:
        up.close()
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
