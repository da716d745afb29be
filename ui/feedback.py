"""Progress bars fed by the core's callbacks, and errors shown without tracebacks.

Messages can hold text a visitor controls (a file or group name, a path from a link, a
column name). Streamlit renders ``st.error``/``st.warning``/``st.caption`` as Markdown, so such
text could draw an image or a link inside the app's own message box. :func:`literal` escapes
every Markdown character of a string; :func:`show_error` and :func:`show_warning` show a
message as literal text, and every message with user data goes through one of them.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Callable, Iterator, Optional, TypeVar

import streamlit as st

from diversity_core import DiversityError, format_duration, split_message

from . import first_paint

T = TypeVar("T")

#: Seconds between two redraws of a progress bar (the core may report thousands of steps).
_MIN_INTERVAL = 0.1
#: A number in a progress message (``3``, ``0.25``, ``1e-3``): masked in a phase's label.
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


#: The core's API words in messages, said the app's way (keyword names, internal terms).
PLAIN_WORDS = (
    ("name it with group_column= if it holds groups", "enter it as the Group column (sidebar, Column options) if "
                                                      "it holds groups"),
    ("group_column=", "the Group column option"),
    ("weight_column=", "the Weight column option"),
    ("text_column=", "the Text column option"),
    ("smiles_column=", "the SMILES column option"),
    (" (the twin property)", ""),
    ("the twin property", "the rule that duplicates do not add diversity"),
)


#: Characters that start Markdown syntax anywhere in a line in Streamlit (CommonMark emphasis,
#: code, links and images (``[``/``]``: a ``(`` alone links nothing), raw HTML, GFM tables,
#: strikethrough and e-mail autolinks, ``$`` maths). Each is escaped with a backslash; ordinary
#: punctuation of names and messages (``.``, ``'``, ``-``, ``/``, ``(``, ``)``, a ``:`` between
#: spaces) is kept, so the raw message stays readable.
_INLINE = re.compile(r"([\\`*_{}\[\]<>#!|~$@])")
#: Streamlit's own syntax starts with a colon touching a word: colour and badge directives
#: (``:red[x]``, ``:blue-background[x]``, ``:small[x]``; a bare ``:red`` is a directive too, and
#: vanishes), emoji shortcodes (``:smile:``, ``:+1:``, whose plugin loads only when the source holds
#: an unescaped ``:word:``) and ``http://`` autolinks. Such a colon is escaped.
_COLON = re.compile(r"(?<=[\w+-]):|:(?=[\w+/-])")
#: ``:material/name:`` icons: Streamlit rewrites ``:material/`` in the raw source, before Markdown
#: reads escapes, so the ``/`` after it is escaped.
_MATERIAL = re.compile(r"(?<=:material)/")
#: Patterns Streamlit replaces in the text after Markdown has decoded every escape, so no
#: backslash can stop them: ``:streamlit:`` (the logo), ``:material_name:`` (an icon), the
#: arrows and signs ``->``, ``<-``, ``<->``, ``--``, ``>=``, ``<=``, ``~=`` between spaces, and
#: GFM's autolinks (``http://``, ``https://``, ``www.``, ``name@host.org``). An invisible word joiner
#: (U+2060) after their first character keeps each as typed.
_DECODED = re.compile(r":(?=streamlit:|material_)|(?:(?<=\s)|^)(?:<->|->|<-|--|>=|<=|~=)(?=\s|$)"
                      r"|(?i:h(?=ttps?://)|w(?=ww\.))|@(?=[-\w])")
#: ``www.`` autolinks: the dot after ``www`` is escaped.
_WWW = re.compile(r"(?i)(?<=www)\.")
#: Block syntax at the start of the text: a list item (``-``, ``+``, ``1.``, ``1)``), a setext rule.
_BLOCK = re.compile(r"^(\s*)([-+=]|\d+(?=[.)]))")


def literal(text) -> str:
    """``text`` escaped so that Markdown shows it character for character (links, images,
    emphasis, Streamlit's directives, icons, emoji shortcodes and maths become plain text; line
    breaks become spaces).

    Shown in Streamlit, the result reads as ``text`` (with word joiners, U+2060, inside the few
    patterns Streamlit replaces after decoding escapes, see :data:`_DECODED`); checked in a
    browser by ``tests/e2e/test_no_external_requests.py``.
    """
    flat = _DECODED.sub(lambda m: m[0][0] + "\u2060" + m[0][1:], " ".join(str(text).splitlines()))
    out = _COLON.sub(r"\\:", _WWW.sub(r"\\.", _INLINE.sub(r"\\\1", flat)))
    out = _MATERIAL.sub(r"\\/", out)
    match = _BLOCK.match(out)
    if match:
        lead, mark = match.groups()
        # a list marker or rule escaped; ``1.`` is written ``1\.``
        out = (lead + "\\" + mark + out[match.end():]) if not mark[0].isdigit() else (
            lead + mark + "\\" + out[match.end():])
    return out


def show_error(message: str, *, container=None, icon=None) -> None:
    """``st.error`` showing ``message`` as literal text (it may hold user data)."""
    (container or st).error(literal(message), icon=icon)


def show_warning(message: str, *, container=None, icon=None) -> None:
    """``st.warning`` showing ``message`` as literal text (it may hold user data)."""
    (container or st).warning(literal(message), icon=icon)


def plain(message: str) -> str:
    """A message of the core in the app's words (no keyword arguments, no internal terms)."""
    for word, said in PLAIN_WORDS:
        message = message.replace(word, said)
    return message


def error_message(what: str, exc: BaseException) -> str:
    """One line for the user: the core's own message, or the exception's type for others."""
    if isinstance(exc, DiversityError):
        return plain(f"{what}: {exc}")
    if isinstance(exc, MemoryError):
        return f"{what}: not enough memory. Subsample the data in the sidebar and try again."
    return f"{what} failed ({type(exc).__name__}): {exc}"


def attempt(fn: Callable[[], T], what: str) -> Optional[T]:
    """Run ``fn``; on an error show its message as literal text (no traceback) and return None."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - every failure must reach the user as a message
        show_error(error_message(what, exc))
        return None


def require(fn: Callable[[], T], what: str) -> T:
    """Like :func:`attempt`, but stop the page after showing the error."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        show_error(error_message(what, exc))
        first_paint.stop()  # st.stop(); a held first run still gets the rerun that draws its sidebar
        raise  # unreachable: st.stop raises


# ------------------------------------------------------------------------------------------
# the time left: one estimator for the progress bars and the background jobs
# ------------------------------------------------------------------------------------------
#: Seconds of measured work before the time left is estimated.
MEASURE_S = 2.0


def phase_label(message: str) -> str:
    """The stage of a progress message with its numbers masked: what stays the same within one phase.

    The stage is the message before :data:`~diversity_core._progress.DETAIL_SEPARATOR`.

    Examples
    --------
    >>> phase_label("run 3/10, epoch 7/30")
    'run #/#, epoch #/#'
    >>> phase_label("efficientnet_lite0 features · embedding images · about 40 s left")
    'efficientnet_lite# features'
    """
    stage = split_message(str(message))[0]
    return _NUMBER.sub("#", stage)


def phase(total: float, message: str) -> tuple:
    """The phase a report belongs to: its total together with its stage (:func:`phase_label`).

    A job may report several phases (features computed first, then comparisons, each with its
    own total; UMAP's import, its neighbour graph, then its epochs); when either changes, a new
    phase starts, whose steps are measured on their own.
    """
    return float(total), phase_label(message)


def time_left(origin: tuple, now: float, done: float, total: float, measure_s: float = MEASURE_S) -> Optional[float]:
    """Seconds left at the throughput measured since the phase's first report, or None.

    ``origin = (time, done)`` of that first report. None until a step of the phase has been
    measured (``done`` grew since its first report) over at least ``measure_s`` seconds, and
    once the phase is complete.

    Examples
    --------
    >>> time_left((100.0, 50), 104.0, 150, 200)  # 100 steps in 4 s, 50 to go
    2.0
    >>> time_left((100.0, 50), 101.0, 60, 200) is None  # under 2 s of measured work
    True
    """
    t0, done0 = origin
    if now - t0 < measure_s or done <= done0 or total <= 0 or done >= total:
        return None
    return (now - t0) / (done - done0) * (total - done)


def time_left_text(seconds: float) -> str:
    """The time left in words: ``a few seconds left`` (under 8 s) or ``about 2.5 min left``."""
    return "a few seconds left" if seconds < 8 else f"about {format_duration(seconds)} left"


class PhaseClock:
    """The time so far and the time left of one job's reports: the app's one estimator.

    Fed every report (:meth:`report`), in order; the time so far counts from the first report,
    the time left from the current :func:`phase`'s first report (:func:`time_left`), so the steps
    of one phase never price another's, and the warm-up before a phase's first report (imports,
    a model's loading) never counts. Used by :class:`ProgressBar` and by
    :class:`ui.workers.BackgroundJob`.
    """

    def __init__(self):
        self.start: Optional[float] = None  # the first report: the time so far counts from it
        self.origin: Optional[tuple] = None  # (time, done) of the phase's first report
        self.phase: Optional[tuple] = None  # the current phase (:func:`phase`)

    def report(self, done: float, total: float, message: str, now: float) -> None:
        """A report that arrived at ``now`` (a new phase moves the throughput's origin to it)."""
        if self.start is None:
            self.start = now
        current = phase(total, message)
        if current != self.phase:
            self.phase, self.origin = current, (now, done)

    def elapsed(self, now: float) -> float:
        """Seconds since the first report (0 before it)."""
        return 0.0 if self.start is None else now - self.start

    def left(self, done: float, total: float, now: float) -> Optional[float]:
        """Seconds left of the current phase at ``done`` of ``total`` (None until measurable)."""
        return None if self.origin is None else time_left(self.origin, now, done, total)


class ProgressBar:
    """A ``progress(done, total, message)`` callback drawing an ``st.progress`` bar.

    The bar takes its place on the page when created (an empty placeholder) and appears at the
    first report, so work that reports nothing (a cache hit) draws nothing. Its text is the
    task's label, what the core says it is doing, the time so far and the time left, both from
    the app's one estimator (:class:`PhaseClock`, shared with the background jobs of
    :mod:`ui.workers`); a message that already says the time left (the featurizers'
    :class:`~diversity_core.featurizers._runtime.BatchProgress` measures it the same way) gets
    no second estimate.
    """

    #: Seconds of measured work before the time left is estimated.
    MEASURE_S = MEASURE_S

    def __init__(self, label: str, container=None):
        self.label = label
        self._slot = (container or st).empty()
        self._bar = None
        self._last = 0.0
        self._clock = PhaseClock()

    def _eta(self, done: int, total: int, now: float, message: str = "") -> str:
        """Elapsed time and the time left of the current phase (:class:`PhaseClock`)."""
        self._clock.report(done, total, message, now)
        elapsed = self._clock.elapsed(now)
        left = self._clock.left(done, total, now)
        if left is None:
            return f" · {_duration(elapsed)} so far" if elapsed >= MEASURE_S and done < total else ""
        return f" · {_duration(elapsed)} so far, {time_left_text(left)}"

    def __call__(self, done: int, total: int, message: str = "") -> None:
        now = time.monotonic()
        if self._bar is not None and done < total and now - self._last < _MIN_INTERVAL:
            return
        self._last = now
        frac = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
        # a message that already says the time left (the featurizers measure it) gets no second estimate
        eta = self._eta(done, total, now, message)
        text = (f"{self.label} — {message}" if message else self.label) + ("" if " left" in message else eta)
        if self._bar is None:
            self._bar = self._slot.progress(frac, text=text)
        else:
            self._bar.progress(frac, text=text)

    def empty(self) -> None:
        self._slot.empty()
        self._bar = None


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


@contextlib.contextmanager
def progress_bar(label: str, container=None) -> Iterator[ProgressBar]:
    """A progress bar that disappears when the work is done (or fails)."""
    bar = ProgressBar(label, container)
    try:
        yield bar
    finally:
        bar.empty()
