"""Progress on stderr for every sub-command, through tqdm.

The core reports progress as ``progress(done, total, message)`` calls
(:mod:`diversity_core._progress`); :class:`TqdmProgress` turns them into one tqdm bar per
stage (a new message starts a new bar). On a terminal the bar redraws in place; in a log it
prints a line at most every few seconds.
"""

from __future__ import annotations

import sys
from typing import Optional

__all__ = ["TqdmProgress"]


class TqdmProgress:
    """A progress callback drawing tqdm bars on stderr; use it as a context manager to close the last bar."""

    def __init__(self, label: str = "", *, disable: Optional[bool] = None):
        self.label = label
        self.disable = disable
        self._bar = None
        self._message = None

    def __call__(self, done: int, total: int, message: str = "") -> None:
        from tqdm.auto import tqdm

        if self._bar is None or message != self._message or total != self._bar.total:
            self.close()
            desc = f"{self.label}: {message}" if self.label and message else (self.label or message)
            self._bar = tqdm(
                total=max(int(total), 1), desc=desc, file=sys.stderr, leave=False, disable=self.disable,
                mininterval=0.5 if sys.stderr.isatty() else 5.0, dynamic_ncols=True,
            )
            self._message = message
        self._bar.n = min(int(done), self._bar.total)
        self._bar.refresh()
        if done >= total:
            self.close()

    def close(self) -> None:
        """Close the current bar, if any."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._message = None

    def __enter__(self) -> TqdmProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
