"""Plumbing shared by the neural featurizers: thread counts, a prefetching thread, measured ETAs.

- :func:`import_torch` and :func:`omp_waits_passively`: torch imported after the process
  environment is set (OpenMP threads sleep between parallel regions), and whether they do,
  which decides the size of the featurizers' CPU passes.
- :func:`inference_threads` and :class:`torch_threads`: torch's intra-op threads for a forward
  pass, at most the cores this process may use (its CPU affinity), never more than the caller
  allowed (a worker's :class:`~diversity_core.workers.limit_threads`); set for the call and
  restored after it.
- :class:`Prefetch`: a background thread producing items (decoded, resized batches) into a
  small bounded queue while the caller runs the model; its errors are raised in the caller, and
  it stops when the caller stops (an error, a cancelled job's progress report).
- :class:`BatchProgress`: progress reports per batch whose detail is the time left, measured on
  the work itself (the first batch is the warm-up measurement), never a fixed rate.
- :func:`unreadable_weights`: the one-line error for a weights file that cannot be read safely
  (pickled objects, a broken safetensors or PyTorch file, an empty file), shared by ``hf:`` and
  ``inception:``.
"""

from __future__ import annotations

import math
import os
import queue
import sys
import threading
import time
from typing import Iterable, Iterator, Optional

from .._config import configure_environment
from .._optional import require
from .._progress import DETAIL_SEPARATOR, ProgressCallback, report
from ..exceptions import DiversityInputError

_passive_openmp: Optional[bool] = None  # set by import_torch, the first time


def _passive_in_environment() -> bool:
    return os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"


def import_torch(purpose: str):
    """torch, imported after :func:`~diversity_core._config.configure_environment`.

    The first call also records whether OpenMP's threads wait passively
    (:func:`omp_waits_passively`): they do when ``OMP_WAIT_POLICY=PASSIVE`` was set before
    this call (the app and the CLI set it at start-up) or when this call imports torch itself,
    after setting it.
    """
    global _passive_openmp
    if _passive_openmp is None:
        already_passive, fresh = _passive_in_environment(), "torch" not in sys.modules
        configure_environment()
        _passive_openmp = already_passive or (fresh and _passive_in_environment())
    return require("torch", purpose=purpose)


def omp_waits_passively() -> bool:
    """Whether OpenMP's threads sleep between parallel regions (``OMP_WAIT_POLICY=PASSIVE``).

    OpenMP reads the policy when torch is imported. Under the default policy threads spin for
    a while at every barrier: on a busy machine small passes, with many barriers per image,
    then cost more than large ones, so the featurizers pick their pass sizes by this policy.
    As recorded by :func:`import_torch`; before its first call, as the environment says.
    """
    return _passive_in_environment() if _passive_openmp is None else _passive_openmp


def inference_threads(torch) -> int:
    """Intra-op threads for a CPU forward pass: torch's current setting, at most the available cores.

    torch's default is the machine's physical cores, which can exceed the cores this process
    may run on (CPU affinity); a worker that limited torch to fewer threads keeps its limit.
    """
    from ..workers import available_cores

    return max(1, min(int(torch.get_num_threads()), available_cores()))


class torch_threads:
    """Context manager: torch's intra-op thread count set to ``n`` for the block, then restored.

    The setting is process-wide: two threads running models at once share it (the last one to
    leave restores the value it found).
    """

    def __init__(self, torch, n: int):
        self._torch = torch
        self.n = max(1, int(n))
        self._previous: Optional[int] = None

    def __enter__(self) -> torch_threads:
        self._previous = int(self._torch.get_num_threads())
        if self._previous != self.n:
            self._torch.set_num_threads(self.n)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None and self._torch.get_num_threads() != self._previous:
            self._torch.set_num_threads(self._previous)


_ITEM, _END, _ERROR = "item", "end", "error"


class Prefetch:
    """Iterate over ``items`` produced in a background thread, ``depth`` items ahead.

    Use as a context manager; iterating yields the items in order. An exception raised while
    producing is raised by the iteration; leaving the block early (an error in the caller)
    stops the producer, closes the producing iterator and waits for the thread to end.

    Parameters
    ----------
    items : iterable
        Consumed in the background thread only (e.g. a generator that reads and decodes files;
        Pillow and numpy release the GIL while decoding, resizing and converting).
    depth : int, default 2
        Items produced ahead of the consumer (each one held in memory).
    """

    def __init__(self, items: Iterable, *, depth: int = 2, name: str = "diversity-prefetch"):
        self._items = items
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, int(depth)))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)

    def _put(self, entry) -> bool:
        """Queue ``entry`` unless the consumer left; False when it did."""
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        it = iter(self._items)
        try:
            for item in it:
                if not self._put((_ITEM, item)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            self._put((_ERROR, exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> Prefetch:
        self._thread.start()
        return self

    def __iter__(self) -> Iterator:
        while True:
            kind, value = self._queue.get()
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            yield value

    def __exit__(self, *exc) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:  # unblock a producer waiting on a full queue
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.1)


def format_duration(seconds: float) -> str:
    """A rounded duration for an estimate: ``"5 s"``, ``"40 s"``, ``"2.5 min"``, ``"1.3 h"``.

    Examples
    --------
    >>> format_duration(0.2), format_duration(42), format_duration(150), format_duration(6000)
    ('5 s', '45 s', '2.5 min', '1.7 h')
    """
    s = max(0.0, float(seconds))
    if s < 90:
        return f"{max(5, 5 * math.ceil(s / 5)):.0f} s"
    if s < 90 * 60:
        minutes = math.ceil(s / 30) / 2
        return f"{minutes:g} min"
    return f"{s / 3600:.1f} h"


class BatchProgress:
    """Progress reports per batch for a stage, with the time left measured on the batches done.

    The first batch is the warm-up measurement: until a second batch ends, the time left is
    extrapolated from it (it includes one-time costs, so the first estimate errs long); after
    that, from the batches since the warm-up. The rate is per item, or per unit of ``work``
    when items differ in cost (characters of texts sorted longest first). Messages read
    ``"<stage> · about 40 s left"`` (``"a few seconds left"`` under 8 s); the last one
    ``"<stage> · done in 41.3 s"`` (the separator is
    :data:`~diversity_core._progress.DETAIL_SEPARATOR`).

    Parameters
    ----------
    progress : callable or None
        ``progress(done, total, message)``.
    total : int
        Items in the whole stage.
    stage : str
        What is being done, e.g. ``"embedding images on the CPU (2 threads)"``.
    work : float, optional
        The stage's total cost in some unit (default: ``total``, one unit per item); then
        :meth:`update` receives the work done too.
    """

    def __init__(self, progress: Optional[ProgressCallback], total: int, stage: str, *, work: Optional[float] = None):
        self.progress = progress
        self.total = int(total)
        self.stage = stage
        self.work = float(self.total if work is None else work)
        self._start: Optional[float] = None
        self._warm: Optional[tuple] = None  # (time, work done) when the warm-up batch ended
        self.warmup_seconds: Optional[float] = None

    def start(self) -> None:
        """Start the clock; report 0 done while the first batch is measured."""
        self._start = time.perf_counter()
        report(self.progress, 0, self.total, f"{self.stage}{DETAIL_SEPARATOR}timing the first batch")

    def seconds_left(self, work_done: float, now: float) -> Optional[float]:
        """Estimated seconds until all the work is done, from the measured rate (None before any batch)."""
        if self._warm is None or work_done <= 0:
            return None
        t_warm, w_warm = self._warm
        if work_done > w_warm and now > t_warm:
            rate = (now - t_warm) / (work_done - w_warm)
        else:
            rate = (t_warm - self._start) / w_warm
        return rate * max(0.0, self.work - work_done)

    def update(self, done: int, work_done: Optional[float] = None) -> None:
        """Report ``done`` items finished (``work_done`` units of work, default ``done``), with the time left."""
        now = time.perf_counter()
        work_done = float(done if work_done is None else work_done)
        if self._start is None:
            self._start = now
        if self._warm is None and work_done > 0:
            self._warm = (now, work_done)
            self.warmup_seconds = now - self._start
        if done >= self.total:
            elapsed = now - self._start
            detail = f"done in {elapsed:.1f} s" if elapsed < 90 else f"done in {elapsed / 60:.1f} min"
        else:
            left = self.seconds_left(work_done, now)
            if left is None:
                detail = "timing the first batch"
            else:
                detail = "a few seconds left" if left < 8 else f"about {format_duration(left)} left"
        report(self.progress, done, self.total, f"{self.stage}{DETAIL_SEPARATOR}{detail}")


def _first_line(exc: BaseException, limit: int = 160) -> str:
    """The first non-blank line of an exception's message (cut at ``limit``), else its type's name."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    line = line if len(line) <= limit else line[: limit - 3] + "..."
    return line or type(exc).__name__


def is_refused_pickle(exc: BaseException) -> bool:
    """Whether ``torch.load(weights_only=True)`` refused a pickled object (a class or function: a GLOBAL)."""
    text = str(exc)
    return type(exc).__name__ == "UnpicklingError" and "global" in text.lower()


def unreadable_weights(what: str, exc: BaseException, *, empty: bool = False, fix: str) -> DiversityInputError:
    """The one-line error for weights that cannot be read safely, with its actual cause.

    Parameters
    ----------
    what : str
        The weights named for the user, e.g. ``"the weights file fid.pth"``.
    exc : exception
        What the reader raised (torch's ``UnpicklingError``, safetensors' ``SafetensorError``,
        ``EOFError``, torch's zip reader's ``RuntimeError``, ...).
    empty : bool, default False
        The file has no bytes at all (its reader's message is then blank or cryptic).
    fix : str
        What to do, one sentence (e.g. "Save the model again with save_pretrained.").

    Returns
    -------
    DiversityInputError
    """
    if empty:
        return DiversityInputError(f"{what} is empty (0 bytes). {fix}")
    if is_refused_pickle(exc):
        return DiversityInputError(
            f"{what} holds pickled Python objects besides tensors: refused, never unpickled "
            f"(torch.load(weights_only=True)). {fix}"
        )
    if type(exc).__name__ == "SafetensorError":
        return DiversityInputError(
            f"{what} is not a valid safetensors file ({_first_line(exc)}): it is truncated, damaged or in "
            f"another format. {fix}"
        )
    # torch's own first line for invalid pickle data is about its weights_only default, not the file
    cause = "invalid pickle data" if type(exc).__name__ == "UnpicklingError" else (
        f"{type(exc).__name__}: {_first_line(exc)}")
    return DiversityInputError(
        f"{what} is not a readable PyTorch weights file ({cause}): it is truncated, damaged or in another "
        f"format. {fix}"
    )
