"""Model downloads: the context in which ``hf:`` featurizers may fetch a model missing from the local cache."""

from __future__ import annotations

import contextlib

from .._config import _downloads


@contextlib.contextmanager
def downloads_allowed(allowed: bool = True):
    """Context manager: ``hf:`` featurizers may download a model missing from the local cache.

    What the CLI's ``--allow-download`` sets for its run; in Python, ``featurize(...,
    allow_download=True)`` does the same for one call. Outside it, models load from a folder or
    the user's Hugging Face cache only. ``diversity_core.config_context(allow_downloads=...)``
    does the same, and ``diversity_core.set_config(allow_downloads=True)`` for the process.

    Examples
    --------
    >>> with downloads_allowed():
    ...     pass
    """
    token = _downloads.set(bool(allowed))
    try:
        yield
    finally:
        _downloads.reset(token)
