"""Progress-callback plumbing shared by long computations."""

from __future__ import annotations

from typing import Callable, Optional

#: A progress callback receives ``(done, total, message)``; ``done`` runs from 0 to ``total``.
ProgressCallback = Callable[[int, int, str], None]


def report(progress: Optional[ProgressCallback], done: int, total: int, message: str = "") -> None:
    """Call ``progress(done, total, message)`` when a callback was given."""
    if progress is not None:
        progress(int(done), int(total), message)
