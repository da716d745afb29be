"""Every setting of the core in one place: ``diversity_core.set_config`` / ``config_context`` / ``get_config``.

Three kinds of setting, each kept where it is used:

- the memory budget and the streamed chunk size (:mod:`diversity_core._config`, the bottom layer:
  every module may read them);
- the result store's folder, bound, use and shared key file (:func:`diversity_core.store.configure`,
  :func:`~diversity_core.store.configured`, over the ``DIVERSITY_CACHE_*`` variables);
- whether ``hf:`` featurizers may download a missing model (default no;
  :func:`diversity_core.featurizers.downloads_allowed`, the CLI's ``--allow-download``).

This module sits above all three and delegates to them, so there is one way to set everything;
the older entry points (``store.configure``, ``store.configured``, ``featurizers.downloads_allowed``)
stay as documented aliases of their parts (the CLI and the app still use them). It is not in
``_config`` because the store imports ``_config``: the store is imported here inside the
functions, so ``import diversity_core`` and ``diversity_core.set_config`` stay cheap.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from . import _config

__all__ = ["set_config", "get_config", "config_context"]

#: ``set_config`` / ``config_context`` keyword -> the store's own keyword (:func:`diversity_core.store.configure`).
_STORE_KEYS = {"store_folder": "folder", "store_max_bytes": "max_bytes", "store_enabled": "enabled",
               "store_key_file": "key_file"}


def _store_options(**options) -> dict:
    return {_STORE_KEYS[key]: value for key, value in options.items() if value is not None}


def get_config() -> dict:
    """The current settings, everything :func:`set_config` sets.

    Returns
    -------
    dict
        ``memory_budget`` (bytes), ``chunk_bytes`` (bytes per streamed chunk), ``allow_downloads``
        (whether ``hf:`` featurizers may download a missing model) and the result store's
        ``store_folder``, ``store_max_bytes``, ``store_enabled`` and ``store_key_file``
        (:func:`diversity_core.store.settings`: API settings over the ``DIVERSITY_CACHE_*`` variables).
    """
    from . import store

    cfg = _config.get_config()
    cfg["allow_downloads"] = _config.downloads_permitted()
    chosen = store.settings()
    cfg.update({key: chosen[option] for key, option in _STORE_KEYS.items()})
    return cfg


def set_config(*, memory_budget=None, chunk_bytes=None, allow_downloads=None, store_folder=None,
               store_max_bytes=None, store_enabled=None, store_key_file=None) -> None:
    """Set the process-wide settings (None leaves a setting as it is).

    Parameters
    ----------
    memory_budget : int or str, optional
        Largest single allocation of an n x n matrix the core may make, in bytes or as
        ``"8G"``. Above it, ``method="auto"`` takes a path that needs no such matrix, and an
        explicit dense request raises :class:`~diversity_core.exceptions.MemoryBudgetError`.
        Also ``DIVERSITY_MEMORY_BUDGET``.
    chunk_bytes : int or str, optional
        Bytes of features read and multiplied per streamed chunk.
    allow_downloads : bool, optional
        Whether ``hf:`` featurizers may download a model missing from the local cache (default
        False, as the CLI without ``--allow-download``). A ``downloads_allowed`` or
        ``config_context`` block, or a call's ``allow_download=``, wins over it.
    store_folder, store_max_bytes, store_enabled, store_key_file : optional
        The result store's folder, bound (bytes or ``"2G"``), use and shared key file, as
        :func:`diversity_core.store.configure` takes them (over the ``DIVERSITY_CACHE_*`` variables).

    Raises
    ------
    DiversityInputError
        When a size is not a size or a store setting is invalid; nothing is set then.

    Examples
    --------
    >>> import diversity_core as dc
    >>> dc.set_config(memory_budget="8G", store_enabled=True)  # doctest: +SKIP
    """
    store_options = _store_options(store_folder=store_folder, store_max_bytes=store_max_bytes,
                                   store_enabled=store_enabled, store_key_file=store_key_file)
    for value in (memory_budget, chunk_bytes):
        if value is not None:
            _config.parse_bytes(value)  # checked before anything is set
    if store_options:
        from . import store

        store.configure(**store_options)  # validates before it sets
    _config.set_config(memory_budget=memory_budget, chunk_bytes=chunk_bytes)
    if allow_downloads is not None:
        _config.set_downloads(allow_downloads)


@contextlib.contextmanager
def config_context(*, memory_budget=None, chunk_bytes=None, allow_downloads=None, store_folder=None,
                   store_max_bytes=None, store_enabled=None, store_key_file=None) -> Iterator[None]:
    """Change the settings for a block, in this thread (``with config_context(memory_budget="1G"): ...``).

    Takes what :func:`set_config` takes. The memory settings go through the core's thread-local
    overrides, the store's through :func:`diversity_core.store.configured` and ``allow_downloads``
    through the context variable of :func:`diversity_core.featurizers.downloads_allowed`.
    """
    store_options = _store_options(store_folder=store_folder, store_max_bytes=store_max_bytes,
                                   store_enabled=store_enabled, store_key_file=store_key_file)
    with contextlib.ExitStack() as stack:
        if store_options:
            from . import store

            stack.enter_context(store.configured(**store_options))
        stack.enter_context(_config.config_context(memory_budget=memory_budget, chunk_bytes=chunk_bytes))
        if allow_downloads is not None:
            token = _config._downloads.set(bool(allow_downloads))
            stack.callback(_config._downloads.reset, token)
        yield
