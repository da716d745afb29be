"""Runtime configuration: the memory budget and the process environment, in one place.

The memory budget is the one setting that decides whether an n x n matrix (a kernel, a
distance or a density matrix) may be allocated. Like ``sklearn.set_config(working_memory=...)``
it is global to the process, can be set temporarily with :func:`config_context`, and defaults
to a share of the machine's physical memory. ``DIVERSITY_MEMORY_BUDGET`` in the environment
(bytes, or with a suffix: ``4G``, ``512M``) overrides the default.

:func:`configure_environment` sets the environment variables that must be in place before
heavy libraries load (torch's OpenMP wait policy, the offline switches of the Hugging Face
libraries); the app, the CLI and the featurizers call it. :func:`configure_browser` points
kaleido (figure export) at Debian's chromium when no Chrome is on the PATH.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import threading
from typing import Iterator, Optional

from .exceptions import MemoryBudgetError

__all__ = [
    "get_config",
    "set_config",
    "config_context",
    "memory_budget",
    "check_memory",
    "fits_memory",
    "chunk_rows",
    "configure_environment",
    "configure_browser",
    "parse_bytes",
    "format_bytes",
]

#: Share of physical memory the default budget may use for one allocation.
_DEFAULT_SHARE = 0.5
#: Default budget when the machine's memory cannot be read.
_FALLBACK_BUDGET = 4 << 30
#: Bytes a streamed chunk of rows may take (features of one chunk).
_DEFAULT_CHUNK_BYTES = 64 << 20

_lock = threading.Lock()
_global: dict = {"memory_budget": None, "chunk_bytes": _DEFAULT_CHUNK_BYTES}
_local = threading.local()


def parse_bytes(value) -> int:
    """Bytes from an int or a string such as ``"4G"``, ``"512M"``, ``"1.5GiB"``, ``"1000000"``."""
    if isinstance(value, bool):
        raise MemoryBudgetError(f"a memory size must be a number of bytes or e.g. '4G'; got {value!r}.")
    if isinstance(value, (int, float)):
        n = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(value))
        if m is None:
            raise MemoryBudgetError(
                f"a memory size must be a number of bytes or e.g. '4G', '512M'; got {value!r}."
            )
        n = float(m.group(1)) * (1 << (10 * "_KMGT".index(m.group(2).upper() or "_")))
    if not n > 0 or n != n or n == float("inf"):
        raise MemoryBudgetError(f"a memory size must be a positive number of bytes; got {value!r}.")
    return int(n)


def format_bytes(n: float) -> str:
    """A byte count for people: ``'4.66 GiB'``, ``'512 MiB'``."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= (1 << shift):
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{int(n)} B"


@functools.lru_cache(maxsize=1)
def _physical_memory() -> Optional[int]:
    """Total physical memory in bytes (cgroup limit when lower), or None when unknown (read once)."""
    total = None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and (total is None or int(text) < total):
            total = int(text)
    return total


def _default_budget() -> int:
    """The budget when none was set: ``DIVERSITY_MEMORY_BUDGET``, else half the physical memory."""
    env = os.environ.get("DIVERSITY_MEMORY_BUDGET")
    if env:
        return parse_bytes(env)
    total = _physical_memory()
    return int(total * _DEFAULT_SHARE) if total else _FALLBACK_BUDGET


def get_config() -> dict:
    """The current settings: ``memory_budget`` (bytes) and ``chunk_bytes`` (bytes per streamed chunk)."""
    cfg = dict(_global)
    cfg.update(getattr(_local, "overrides", {}))
    if cfg["memory_budget"] is None:
        cfg["memory_budget"] = _default_budget()
    return cfg


def set_config(*, memory_budget=None, chunk_bytes=None) -> None:
    """Set the process-wide settings.

    Parameters
    ----------
    memory_budget : int or str, optional
        Largest single allocation of an n x n matrix the core may make, in bytes or as
        ``"8G"``. Above it, ``method="auto"`` takes a path that needs no such matrix, and an
        explicit dense request raises :class:`~diversity_core.exceptions.MemoryBudgetError`.
    chunk_bytes : int or str, optional
        Bytes of features read and multiplied per streamed chunk.
    """
    with _lock:
        if memory_budget is not None:
            _global["memory_budget"] = parse_bytes(memory_budget)
        if chunk_bytes is not None:
            _global["chunk_bytes"] = parse_bytes(chunk_bytes)


@contextlib.contextmanager
def config_context(*, memory_budget=None, chunk_bytes=None) -> Iterator[None]:
    """Temporarily change the settings in this thread (``with config_context(memory_budget="1G"): ...``)."""
    old = dict(getattr(_local, "overrides", {}))
    new = dict(old)
    if memory_budget is not None:
        new["memory_budget"] = parse_bytes(memory_budget)
    if chunk_bytes is not None:
        new["chunk_bytes"] = parse_bytes(chunk_bytes)
    _local.overrides = new
    try:
        yield
    finally:
        _local.overrides = old


def memory_budget() -> int:
    """The current memory budget in bytes."""
    return int(get_config()["memory_budget"])


def check_memory(nbytes: float, *, what: str, hint: str = "") -> None:
    """Raise :class:`MemoryBudgetError` when ``nbytes`` exceeds the memory budget.

    ``what`` names the allocation ("the 25000 x 25000 kernel matrix"), ``hint`` the option
    that would work ("use method='auto'").
    """
    budget = memory_budget()
    if nbytes > budget:
        raise MemoryBudgetError(
            f"{what} needs {format_bytes(nbytes)}, over the memory budget of {format_bytes(budget)}. "
            + (hint + " " if hint else "")
            + "Raise the budget with diversity_core.set_config(memory_budget=...) or "
            "DIVERSITY_MEMORY_BUDGET if this machine has the memory."
        )


def fits_memory(nbytes: float) -> bool:
    """Whether an allocation of ``nbytes`` is within the memory budget."""
    return nbytes <= memory_budget()


def chunk_rows(n_columns: int, itemsize: int = 8, *, minimum: int = 64) -> int:
    """Rows per streamed chunk so that one chunk of ``n_columns`` values takes about ``chunk_bytes``."""
    per_row = max(1, int(n_columns) * int(itemsize))
    return max(minimum, int(get_config()["chunk_bytes"]) // per_row)


def configure_environment() -> None:
    """Set, unless already set, the environment the heavy libraries read when they load.

    - ``OMP_WAIT_POLICY=PASSIVE``: torch's OpenMP threads sleep instead of spinning between
      parallel regions; on a shared 2-core machine spinning made RND training 2x slower.
    - ``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``: the text models load from the
      installed package only; nothing is downloaded at run time.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


#: Where Debian's chromium package installs the browser kaleido drives for figure export.
CHROMIUM_PATH = "/usr/bin/chromium"
#: Executable names of Chrome/Chromium that kaleido's own browser lookup finds on PATH.
_CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def configure_browser(path: str = CHROMIUM_PATH) -> None:
    """Point kaleido at a Chromium through ``BROWSER_PATH`` when it would find none by itself.

    kaleido (PNG/SVG export of plotly figures) drives a Chrome or Chromium. It looks on PATH
    for the names in ``_CHROME_NAMES``; Debian installs its package as ``/usr/bin/chromium``,
    which that lookup can miss. Nothing changes when ``BROWSER_PATH`` is already set, when a
    Chrome is on PATH, or when ``path`` does not exist.
    """
    if os.environ.get("BROWSER_PATH"):
        return
    if any(shutil.which(name) for name in _CHROME_NAMES):
        return
    if os.path.isfile(path):
        os.environ["BROWSER_PATH"] = path


