"""Progress-callback plumbing shared by long computations."""

from __future__ import annotations

from typing import Callable, Optional

#: A progress callback receives ``(done, total, message)``; ``done`` runs from 0 to ``total``.
ProgressCallback = Callable[[int, int, str], None]

#: Separates a message's stage (what is being done, e.g. ``"embedding images"``) from its
#: detail (e.g. ``"about 40 s left"``): displays keep one bar per stage and show the detail.
DETAIL_SEPARATOR = " · "


def split_message(message: str) -> tuple:
    """``(stage, detail)`` of a progress message; ``detail`` is ``""`` when there is none.

    Examples
    --------
    >>> split_message("embedding images · about 40 s left")
    ('embedding images', 'about 40 s left')
    >>> split_message("reading images")
    ('reading images', '')
    """
    stage, _sep, detail = message.partition(DETAIL_SEPARATOR)
    return stage, detail


def report(progress: Optional[ProgressCallback], done: int, total: int, message: str = "") -> None:
    """Call ``progress(done, total, message)`` when a callback was given."""
    if progress is not None:
        progress(int(done), int(total), message)
