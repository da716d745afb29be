"""Runtime configuration: the memory budget and the process environment, in one place.

The memory budget is the one setting that decides whether an n x n matrix (a kernel, a
distance or a density matrix) may be allocated. Like ``sklearn.set_config(working_memory=...)``
it is global to the process, can be set temporarily with :func:`config_context`, and defaults
to half of the memory this process may really use: the smallest of the machine's physical
memory, the memory limit of its cgroup (v1 ``memory.limit_in_bytes`` or v2 ``memory.max``, the
process's own group and its ancestors) and the address-space and data-segment limits
(``RLIMIT_AS``, ``RLIMIT_DATA``, less what the process already uses of them), read once per
process (:func:`memory_limits`, :func:`budget_source` says which one applied).
``DIVERSITY_MEMORY_BUDGET`` in the environment (bytes, or with a suffix: ``4G``, ``512M``)
overrides the default.

:func:`configure_environment` sets the environment variables that must be in place before
heavy libraries load (torch's OpenMP wait policy, the offline switches of the Hugging Face
libraries); the app, the CLI and the featurizers call it. :func:`configure_browser` points
kaleido (figure export) at Debian's chromium when no Chrome is on the PATH.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import shutil
import threading
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from .exceptions import MemoryBudgetError

__all__ = [
    "get_config",
    "set_config",
    "config_context",
    "downloads_permitted",
    "set_downloads",
    "memory_budget",
    "memory_limits",
    "budget_source",
    "MemoryLimit",
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
_global: dict = {"memory_budget": None, "chunk_bytes": _DEFAULT_CHUNK_BYTES, "allow_downloads": False}
_local = threading.local()
#: Whether ``hf:`` featurizers may download a model, in a ``downloads_allowed`` / ``config_context``
#: block (None outside any: then ``_global["allow_downloads"]``). Read by :func:`downloads_permitted`.
_downloads: contextvars.ContextVar = contextvars.ContextVar("diversity_featurizer_downloads", default=None)


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


#: Where the cgroup file systems are mounted and where this process's groups are listed (tests
#: point these at fake trees).
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"
PROC_STATUS = "/proc/self/status"

#: Limits at or above this many bytes mean "no limit" (cgroup v1 writes 2**63 rounded to a page).
_UNLIMITED = 1 << 60


@dataclass(frozen=True)
class MemoryLimit:
    """One bound on the memory this process may use.

    Attributes
    ----------
    source : str
        ``"physical memory"``, ``"cgroup v2 memory.max"``, ``"cgroup v1 memory.limit_in_bytes"``,
        ``"RLIMIT_AS"`` or ``"RLIMIT_DATA"``.
    limit : int
        The bound in bytes.
    used : int
        What the process already uses of it (``VmSize`` for RLIMIT_AS, ``VmData`` for RLIMIT_DATA;
        0 for the others, which the whole machine or group shares).
    where : str
        The file or call it was read from.
    """

    source: str
    limit: int
    used: int = 0
    where: str = ""

    @property
    def available(self) -> int:
        """Bytes left under this bound (``limit - used``, at least 0)."""
        return max(0, self.limit - self.used)

    def describe(self) -> str:
        """``"RLIMIT_AS 2.5 GiB less 1.1 GiB in use"``."""
        text = f"{self.source} {format_bytes(self.limit)}"
        return text + (f" less {format_bytes(self.used)} in use" if self.used else "")


def _read_text(path: str) -> Optional[str]:
    try:
        with open(path) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _limit_value(text: Optional[str]) -> Optional[int]:
    """Bytes from a cgroup limit file (None for ``max``, a huge v1 value or garbage)."""
    if text is None:
        return None
    text = text.strip()
    if not text.isdigit():
        return None
    value = int(text)
    return value if 0 < value < _UNLIMITED else None


def _cgroup_limits(root: str, proc_cgroup: str) -> List[MemoryLimit]:
    """The tightest memory limit of this process's cgroup and its ancestors, v2 and v1.

    ``proc_cgroup`` lists the groups (``0::/a/b`` for v2, ``4:memory:/a/b`` for v1). Each group's
    folder under ``root`` and every ancestor up to ``root`` are read; in a container whose group
    folder is not visible the walk still reaches the mounted root.
    """
    text = _read_text(proc_cgroup) or ""
    found: List[MemoryLimit] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _hier, controllers, rel = parts
        if controllers == "":
            base, filename, source = root, "memory.max", "cgroup v2 memory.max"
        elif "memory" in controllers.split(","):
            base, filename, source = os.path.join(root, "memory"), "memory.limit_in_bytes", \
                "cgroup v1 memory.limit_in_bytes"
        else:
            continue
        best: Optional[Tuple[int, str]] = None
        rel_parts = [p for p in rel.strip().split("/") if p]
        for depth in range(len(rel_parts), -1, -1):
            path = os.path.join(base, *rel_parts[:depth], filename)
            value = _limit_value(_read_text(path))
            if value is not None and (best is None or value < best[0]):
                best = (value, path)
        if best is not None:
            found.append(MemoryLimit(source, best[0], 0, best[1]))
    return found


def _status_bytes(field: str, status: Optional[str]) -> int:
    """A ``kB`` field of ``/proc/self/status`` in bytes (0 when absent)."""
    m = re.search(rf"^{field}:\s*(\d+)\s*kB", status or "", flags=re.M)
    return int(m.group(1)) * 1024 if m else 0


def _rlimits(status_path: str) -> List[MemoryLimit]:
    """RLIMIT_AS and RLIMIT_DATA when set, with what this process already uses of each."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return []
    status = _read_text(status_path)
    found = []
    for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            soft, _hard = resource.getrlimit(which)
        except (ValueError, OSError):
            continue
        if soft == resource.RLIM_INFINITY or soft <= 0 or soft >= _UNLIMITED:
            continue
        found.append(MemoryLimit(name, int(soft), _status_bytes(field, status), f"getrlimit({name})"))
    return found


def _physical() -> Optional[MemoryLimit]:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return MemoryLimit("physical memory", int(total), 0, "sysconf") if total > 0 else None


def memory_limits(*, cgroup_root: Optional[str] = None, proc_cgroup: Optional[str] = None,
                  status: Optional[str] = None) -> List[MemoryLimit]:
    """Every bound found on the memory this process may use, tightest first.

    Parameters
    ----------
    cgroup_root, proc_cgroup, status : str, optional
        Where to read the cgroup tree, this process's groups and its status (default
        :data:`CGROUP_ROOT`, :data:`PROC_CGROUP`, :data:`PROC_STATUS`; tests pass fake files).

    Returns
    -------
    list of MemoryLimit
        Sorted by :attr:`MemoryLimit.available`; empty when nothing can be read.

    Examples
    --------
    >>> [lim.source for lim in memory_limits()]  # doctest: +SKIP
    ['RLIMIT_AS', 'physical memory']
    """
    found = [lim for lim in [_physical()] if lim is not None]
    found += _cgroup_limits(cgroup_root or CGROUP_ROOT, proc_cgroup or PROC_CGROUP)
    found += _rlimits(status or PROC_STATUS)
    return sorted(found, key=lambda lim: lim.available)


@functools.lru_cache(maxsize=1)
def _derived_budget() -> Tuple[int, str]:
    """The default budget and the sentence saying where it came from (read once per process)."""
    limits = memory_limits()
    if not limits:
        return _FALLBACK_BUDGET, f"{format_bytes(_FALLBACK_BUDGET)} (the machine's memory could not be read)"
    tight, others = limits[0], limits[1:]
    budget = max(1, int(tight.available * _DEFAULT_SHARE))
    text = f"half of {tight.describe()}"
    if others:
        text += ", the tightest limit (others: " + "; ".join(lim.describe() for lim in others) + ")"
    return budget, text


def _physical_memory() -> Optional[int]:
    """Bytes of memory this process may use (the tightest bound of :func:`memory_limits`), or None."""
    limits = memory_limits()
    return limits[0].available if limits else None


def _default_budget() -> int:
    """The budget when none was set: ``DIVERSITY_MEMORY_BUDGET``, else half the memory the process may use."""
    env = os.environ.get("DIVERSITY_MEMORY_BUDGET")
    if env:
        return parse_bytes(env)
    return _derived_budget()[0]


def budget_source() -> str:
    """Where the current memory budget comes from, in words (``diversity inspect`` prints it).

    Examples
    --------
    >>> budget_source()  # doctest: +SKIP
    'half of RLIMIT_AS 2.5 GiB less 1.1 GiB in use, the tightest of: RLIMIT_AS ...; physical memory 23.4 GiB'
    """
    if getattr(_local, "overrides", {}).get("memory_budget") is not None:
        return "set for this block (config_context)"
    if _global["memory_budget"] is not None:
        return "set explicitly (--memory-budget or set_config)"
    if os.environ.get("DIVERSITY_MEMORY_BUDGET"):
        return "DIVERSITY_MEMORY_BUDGET"
    return _derived_budget()[1]


def downloads_permitted() -> bool:
    """Whether ``hf:`` featurizers may download a model now: the innermost block, else the process."""
    allowed = _downloads.get()
    return bool(_global["allow_downloads"] if allowed is None else allowed)


def set_downloads(allowed: bool) -> None:
    """Set the process-wide download permission (``diversity_core.set_config(allow_downloads=...)``)."""
    with _lock:
        _global["allow_downloads"] = bool(allowed)


def get_config() -> dict:
    """The current settings: ``memory_budget`` (bytes) and ``chunk_bytes`` (bytes per streamed chunk).

    :func:`diversity_core.get_config` adds the download permission and the result store's settings.
    """
    cfg = {"memory_budget": _global["memory_budget"], "chunk_bytes": _global["chunk_bytes"]}
    cfg.update(getattr(_local, "overrides", {}))
    if cfg["memory_budget"] is None:
        cfg["memory_budget"] = _default_budget()
    return cfg


def set_config(*, memory_budget=None, chunk_bytes=None) -> None:
    """Set the process-wide memory settings: ``memory_budget`` and ``chunk_bytes`` (bytes or ``"8G"``).

    The memory part of :func:`diversity_core.set_config`, which documents both and sets every
    other setting too (the result store, downloads); None leaves a setting as it is.
    """
    numbers = {}
    if memory_budget is not None:
        numbers["memory_budget"] = parse_bytes(memory_budget)
    if chunk_bytes is not None:
        numbers["chunk_bytes"] = parse_bytes(chunk_bytes)
    with _lock:
        _global.update(numbers)


@contextlib.contextmanager
def config_context(*, memory_budget=None, chunk_bytes=None) -> Iterator[None]:
    """Temporarily change the memory settings in this thread (``with config_context(memory_budget="1G"): ...``)."""
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
#: Launch flags of headless Chromium on this project's machines (DESIGN.md): the browser benchmarks use them.
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
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


