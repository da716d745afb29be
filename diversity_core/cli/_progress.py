"""Progress on stderr for every sub-command, through tqdm.

The core reports progress as ``progress(done, total, message)`` calls
(:mod:`diversity_core._progress`); :class:`TqdmProgress` draws them as tqdm bars on stderr.
With ``stages=True`` (the default) each new stage starts a new bar, for work that runs in
named stages: a message ``"<stage> · <detail>"`` (:func:`~diversity_core._progress.split_message`)
keeps the stage's bar and shows the detail beside it (e.g. a featurizer's measured time left,
``"embedding images on the CPU (2 threads) · about 40 s left"``). With ``stages=False`` one bar
covers the whole job and the message is its postfix, for work whose message changes at every
step (RND's run and epoch). On a terminal the
bar redraws in place. ``disable=None`` (the default) draws nothing when stderr is not a terminal,
so logs and pipes get only results and one-line errors; ``disable=False`` always draws.
"""

from __future__ import annotations

import sys
from typing import Optional

from .._progress import split_message

__all__ = ["TqdmProgress", "warn_skipped"]


def warn_skipped(dataset) -> None:
    """On stderr: the first entries the loader skipped, and how many in all."""
    for item in dataset.skipped[:5]:
        print(f"warning: skipped {item.where}: {item.reason}", file=sys.stderr)
    if len(dataset.skipped) > 5:
        print(f"warning: {dataset.name}: skipped {len(dataset.skipped)} entries in all (see `diversity inspect`)",
              file=sys.stderr)


class TqdmProgress:
    """A progress callback drawing tqdm bars on stderr; a context manager closes the last bar."""

    def __init__(self, label: str = "", *, stages: bool = True, unit: str = "it", disable: Optional[bool] = None):
        self.label = label
        self.stages = stages
        self.unit = unit
        self.disable = disable
        self._bar = None
        self._message = None

    def __call__(self, done: int, total: int, message: str = "") -> None:
        if total <= 0:
            return
        stage, detail = split_message(message) if self.stages else (message, "")
        new_stage = self.stages and stage != self._message
        if self._bar is None or new_stage or total != self._bar.total:
            self.close()
            self._open(total, stage)
        if not self.stages or detail:
            self._bar.set_postfix_str(detail or message, refresh=False)
        self._bar.update(min(int(done), self._bar.total) - self._bar.n)
        if done >= total:
            self.close()

    def _open(self, total: int, message: str) -> None:
        """Start a bar of ``total`` steps for the stage ``message``."""
        from tqdm.auto import tqdm

        if self.stages and message:
            desc = f"{self.label}: {message}" if self.label else message
        else:
            desc = self.label
        self._bar = tqdm(
            total=int(total), desc=desc, unit=self.unit, file=sys.stderr, leave=not self.stages, disable=self.disable,
            mininterval=0.5 if sys.stderr.isatty() else 5.0, dynamic_ncols=True,
        )
        self._message = message

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
