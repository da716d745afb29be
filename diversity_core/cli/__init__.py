"""The ``diversity`` command line: ``score | inspect | magnitude | rnd | compare | curate | app``.

Each sub-command lives in its own module ``_<name>.py`` exposing ``add_parser(subparsers)``
and ``run(args) -> int``. Results go to stdout (a table, or ``--format json`` with stable keys);
progress and warnings go to stderr. Exit codes: 0 success, 2 bad input or usage (one line, no
traceback unless ``--debug``; every error of ours), 1 unexpected failure. ``--memory-budget SIZE``
(before or after the command) sets :func:`diversity_core.set_config`'s budget for the run; an
allocation over it is refused with exit 2 and a message naming the size, the budget and the options.
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

from .._config import parse_bytes, set_config
from ..exceptions import DiversityError, MemoryBudgetError

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = ("score", "inspect", "magnitude", "rnd", "compare", "curate", "app")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors exit 2 with one line."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"diversity: error: {message}\n")


def _memory_size(text: str) -> int:
    """Argparse type for a memory size: bytes, or a number with K/M/G/T (``4G``, ``512M``)."""
    try:
        return parse_bytes(text)
    except MemoryBudgetError:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: use bytes or e.g. 4G, 512M") from None


_BUDGET_HELP = ("memory budget: the largest n x n matrix the core may allocate, e.g. 4G "
                "(default: DIVERSITY_MEMORY_BUDGET, else half the physical memory)")


def build_parser() -> argparse.ArgumentParser:
    """Return the ``diversity`` argument parser with every available sub-command."""
    parser = _Parser(prog="diversity", description="Measure the diversity of a dataset.")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    parser.add_argument("--memory-budget", type=_memory_size, default=None, metavar="SIZE", help=_BUDGET_HELP)
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
        sub_parser.add_argument("--memory-budget", type=_memory_size, default=argparse.SUPPRESS, metavar="SIZE",
                                help=_BUDGET_HELP)
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
    if args.memory_budget is not None:
        set_config(memory_budget=args.memory_budget)
    if hasattr(signal, "SIGXFSZ") and _main_thread():
        # over a file size limit (ulimit -f) a write then fails with EFBIG, which the atomic
        # writers report (exit 2, previous file kept), instead of the signal killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        return int(args._run(args) or 0)
    except MemoryBudgetError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"diversity: error: {exc} On the command line: --memory-budget SIZE.", file=sys.stderr)
        return 2
    except (DiversityError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        # every error of ours (bad input, a missing extra, a computation the input makes impossible)
        # says what to do in one line: exit 2; exit 1 is kept for the unexpected
        if args.debug:
            traceback.print_exc()
        print(f"diversity: error: {exc}", file=sys.stderr)
        return 2
    except RecursionError:
        if args.debug:
            traceback.print_exc()
        print("diversity: error: the input is nested too deeply to process.", file=sys.stderr)
        return 2
    except MemoryError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"diversity: error: ran out of memory ({exc or 'allocation failed'}). Set --memory-budget to the "
              "memory this process may use (e.g. 4G) so that the core checks its allocations against it, or use "
              "a kernel with a feature map (cosine), which streams the rows.", file=sys.stderr)
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
