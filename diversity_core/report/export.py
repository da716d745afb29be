"""Figures as PNG or SVG files, rendered by kaleido (which drives a Chrome/Chromium, offline).

kaleido is optional (``pip install 'diversity-explorer[report]'``). When it finds no browser by
itself it is pointed at Debian's chromium (:func:`diversity_core._config.configure_browser`).
Without any Chromium, export raises a :class:`~diversity_core.exceptions.DiversityError` that
says so; the HTML report's PNG/SVG buttons, which render in the reader's browser, remain.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Union

from .._atomic import atomic_write, make_output_folder, output_transaction
from .._config import configure_browser
from .._optional import require
from ..exceptions import DiversityError, DiversityInputError
from .figures.comparison import comparison_figures

if TYPE_CHECKING:
    from ..compare import Comparison

__all__ = ["figure_bytes", "export_figure", "export_figures"]

_FORMATS = ("png", "svg")


def _check_format(fmt: str) -> str:
    """``"png"`` or ``"svg"`` from a format name or a file suffix (``".SVG"``)."""
    fmt = str(fmt).lower().lstrip(".")
    if fmt not in _FORMATS:
        raise DiversityInputError(f"unknown figure format {fmt!r}; choose one of: 'png', 'svg'.")
    return fmt


def _prepare_kaleido() -> None:
    """Import kaleido (naming the extra when it is missing) and make sure it can find a browser."""
    require("kaleido", purpose="PNG/SVG export of figures")
    configure_browser()


#: Tries of one figure's rendering. On a busy machine kaleido's page can be asked to draw before
#: its script has loaded ("ReferenceError: kaleido_scopes is not defined"); a new session a
#: moment later draws it. Errors that a retry cannot mend (no browser) are raised at once.
RENDER_ATTEMPTS = 3

#: Error types (by name: they come from kaleido's and choreographer's private modules) and
#: message fragments of kaleido's page not being ready yet.
_TRANSIENT_TYPES = ("JavascriptError", "KaleidoError", "DevtoolsProtocolError", "TimeoutError")
_TRANSIENT_TEXT = ("is not defined", "Target closed", "timed out")


def _transient(exc: BaseException) -> bool:
    """Whether a rendering error is kaleido's page not being ready, which a new session mends."""
    text = str(exc)
    return type(exc).__name__ in _TRANSIENT_TYPES or any(t in text for t in _TRANSIENT_TEXT)


def figure_bytes(fig, *, format: str = "png", width: Optional[int] = None, height: Optional[int] = None,
                 scale: float = 2.0) -> bytes:
    """A figure as PNG or SVG bytes, rendered by kaleido (Chromium, offline).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
    format : {"png", "svg"}, default "png"
    width, height : int, optional
        Size in CSS pixels; default the figure's own layout size, else 1000 x 500.
    scale : float, default 2.0
        Pixel density of a PNG (ignored for SVG).

    Returns
    -------
    bytes

    Raises
    ------
    DiversityInputError
        An unknown format.
    MissingDependencyError
        kaleido is not installed.
    DiversityError
        No Chrome/Chromium could be started; install one (``apt-get install chromium``) or use
        the PNG/SVG buttons of the HTML report, which render in the browser.
    """
    fmt = _check_format(format)
    _prepare_kaleido()
    size = dict(width=width or fig.layout.width or 1000, height=height or fig.layout.height or 500,
                scale=scale if fmt == "png" else 1)
    attempt = 1
    while True:
        try:
            return fig.to_image(format=fmt, **size)
        except Exception as exc:  # kaleido raises several unrelated types when no browser starts
            if attempt < RENDER_ATTEMPTS and _transient(exc):
                time.sleep(0.5 * attempt)  # a new kaleido session: the page gets time to load its script
                attempt += 1
                continue
            raise DiversityError(
                f"could not render the figure as {fmt.upper()} with kaleido ({type(exc).__name__}: {exc}). It "
                "needs Chrome or Chromium: install one (Debian: apt-get install chromium) or set BROWSER_PATH; the "
                "HTML report's PNG/SVG buttons export figures in the browser instead."
            ) from None


def export_figure(fig, path: Union[str, Path], *, format: Optional[str] = None, width: Optional[int] = None,
                  height: Optional[int] = None, scale: float = 2.0) -> Path:
    """Write one figure as PNG or SVG; returns the path.

    The format comes from ``format``, else from the suffix of ``path`` (PNG when it has none);
    the suffix is made to match it. Other parameters as in :func:`figure_bytes`. The file is
    written atomically: a failed write leaves a previous file whole.
    """
    path = Path(path)
    fmt = _check_format(format or path.suffix or "png")
    if path.suffix.lower() != f".{fmt}":
        path = path.with_suffix(f".{fmt}")
    atomic_write(path, figure_bytes(fig, format=fmt, width=width, height=height, scale=scale))
    return path


def export_figures(cmp: Comparison, directory: Union[str, Path], *, format: str = "png",
                   presentation: bool = False, scale: float = 2.0) -> List[Path]:
    """Every figure of the comparison as ``DIR/<name>.<format>``, in one kaleido session.

    Parameters
    ----------
    cmp : Comparison
    directory : str or Path
        Created when missing (and removed again when the export fails).
    format : {"png", "svg"}, default "png"
    presentation : bool, default False
        Large type (:func:`~diversity_core.report.presentation_style`).
    scale : float, default 2.0
        Pixel density of PNGs.

    Returns
    -------
    list of Path
        One file per figure, in the order of :data:`~diversity_core.report.FIGURE_TITLES`.

    Raises
    ------
    DiversityInputError
        ``directory`` is not a folder (a file, ``/dev/full``) or cannot be created, or a figure
        cannot be written; the message names the figure's path, and no previous figure changed.

    Notes
    -----
    The figures are written in one :func:`~diversity_core._atomic.output_transaction` (joining
    the caller's, as ``diversity compare`` does with its other outputs): every figure is rendered
    to a temporary file beside its destination, and the files replace the destinations only when
    all were written, so a failure (disk full, a file size limit) leaves every previous figure whole.
    """
    fmt = _check_format(format)
    directory = Path(directory)
    figs = comparison_figures(cmp, presentation=presentation)
    paths = [directory / f"{name}.{fmt}" for name in figs]
    _prepare_kaleido()
    pio = require("plotly.io", purpose="figure export")
    with output_transaction() as tx:
        make_output_folder(directory, what="the figures folder")
        temporaries = [tx.stage(p).tmp for p in paths]
        try:
            pio.write_images(list(figs.values()), temporaries, format=fmt,
                             width=[f.layout.width or 1000 for f in figs.values()],
                             height=[f.layout.height or 500 for f in figs.values()],
                             scale=scale if fmt == "png" else 1)
        except OSError:
            raise  # named after the figure's own path by the transaction
        except Exception:  # noqa: BLE001 - fall back to one figure at a time, with the clear error
            for fig, tmp in zip(figs.values(), temporaries):
                data = figure_bytes(fig, format=fmt, scale=scale)
                with open(tmp, "wb") as fh:
                    fh.write(data)
        # kaleido's batch can return without writing every file (seen on a loaded machine: one SVG of
        # six missing, no error): each one missing or empty is rendered again on its own
        for fig, tmp in zip(figs.values(), temporaries):
            if not os.path.exists(tmp) or os.path.getsize(tmp) == 0:
                data = figure_bytes(fig, format=fmt, scale=scale)
                with open(tmp, "wb") as fh:
                    fh.write(data)
    return paths

