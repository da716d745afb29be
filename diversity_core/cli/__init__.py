"""The ``diversity`` command line: ``score | magnitude | rnd | compare | inspect | app``.

Each sub-command lives in its own module ``_<name>.py`` exposing ``add_parser(subparsers)``
and ``run(args) -> int``. Results go to stdout (a table, or ``--format json`` with stable keys);
progress and warnings go to stderr. Exit codes: 0 success, 2 bad input or usage (one line, no
traceback unless ``--debug``), 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import traceback
import warnings
from typing import Optional, Sequence

from ..exceptions import DiversityError, DiversityInputError, MissingDependencyError

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("score", "inspect", "magnitude", "rnd", "compare", "app")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors exit 2 with one line."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"diversity: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """Return the ``diversity`` argument parser with every available sub-command."""
    parser = _Parser(prog="diversity", description="Measure the diversity of a dataset.")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"{__name__}._{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}._{name}":
                raise
            continue
        sub_parser = module.add_parser(sub)
        sub_parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                help="show a traceback on errors")
        sub_parser.set_defaults(_run=module.run)
    return parser


def warn_skipped(dataset) -> None:
    """On stderr: the first entries the loader skipped, and how many in all."""
    for item in dataset.skipped[:5]:
        print(f"warning: skipped {item.where}: {item.reason}", file=sys.stderr)
    if len(dataset.skipped) > 5:
        print(f"warning: {dataset.name}: skipped {len(dataset.skipped)} entries in all (see `diversity inspect`)",
              file=sys.stderr)


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """One-line warnings on stderr."""
    return f"warning: {message}\n"


def _main_thread() -> bool:
    """Signal handlers can only be set from the main thread."""
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``diversity`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = _format_warning
    if hasattr(signal, "SIGXFSZ") and _main_thread():
        # over a file size limit (ulimit -f) a write then fails with EFBIG, which the atomic
        # writers report (exit 2, previous file kept), instead of the signal killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        return int(args._run(args) or 0)
    except (DiversityInputError, MissingDependencyError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"diversity: error: {exc}", file=sys.stderr)
        return 2
    except DiversityError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"diversity: error: {exc}", file=sys.stderr)
        return 1
    except RecursionError:
        if args.debug:
            traceback.print_exc()
        print("diversity: error: the input is nested too deeply to process.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("diversity: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader closed the pipe (``diversity inspect f | head``): stop quietly, as Unix tools do;
        # point stdout at /dev/null so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # unexpected: say so, with the traceback on request
        if args.debug:
            traceback.print_exc()
        print(f"diversity: unexpected error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
