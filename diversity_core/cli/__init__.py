"""The ``diversity`` command line: ``score | inspect | magnitude | rnd | compare | curate | evaluate | search | app | cache``.

Each sub-command lives in its own module ``_<name>.py`` exposing ``add_parser(subparsers)``
and ``run(args) -> int``, and is listed with its help line in :data:`COMMANDS`; only the module of
the sub-command that runs is imported (``diversity --help`` imports none). Results go to stdout (a
table, or ``--format json`` with stable keys); progress and warnings go to stderr. Exit codes: 0
success, 2 bad input or usage (one line, no traceback unless ``--debug``; every error of ours), 1
unexpected failure. ``--memory-budget SIZE``
(before or after the command) sets :func:`diversity_core.set_config`'s budget for the run; an
allocation over it is refused with exit 2 and a message naming the size, the budget and the options.
``--cache-dir DIR`` and ``--no-cache`` (before or after the command) move or turn off the on-disk
result store (:mod:`diversity_core.store`) for the run; ``diversity cache info|clear`` shows or empties it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import traceback
import warnings
from typing import Iterable, Optional, Sequence

from .._config import parse_bytes, set_config
from ..exceptions import DiversityError, MemoryBudgetError
from ._progress import warn_skipped  # noqa: F401 - kept importable here; sub-commands import it from _progress

#: Sub-commands, in the order ``--help`` lists them, with their one-line help. Each lives in module
#: ``_<name>.py`` (``add_parser(subparsers)`` and ``run(args)``), imported only when it is the one that
#: runs, so ``diversity --help`` loads none of them. A new sub-command is one line here and its module.
COMMANDS: dict[str, str] = {
    "score": "Vendi scores of chosen orders q, and IntDiv",
    "inspect": "show what a data file holds, per group, and what was skipped",
    "magnitude": "magnitude function, convergence scale, MagArea and MagDiff",
    "rnd": "RND score: diversity by random network distillation",
    "compare": "compare groups (models, datasets) at one n, with intervals and a report",
    "curate": "near-duplicates, per-item contributions, rare items, and a most-diverse subset",
    "robustness": "does the groups' ranking depend on the representation? every representation and kernel, at one n",
    "evaluate": "evaluate generated items against real ones: PRDC, FD, KD, Vendi ratio, copies, per prompt",
    "search": "rank the items by similarity to a text, an image or one of them (CLIP-style hf: model)",
    "app": "serve the browser app (server files readable only inside --data-dir)",
    "cache": "show (info) or empty (clear) the result store kept between runs",
}


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


def _command_module(name: str):
    """The module of sub-command ``name``, or None when this installation lacks it."""
    try:
        return importlib.import_module(f"{__name__}._{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}._{name}":
            raise
        return None


_CACHE_DIR_HELP = ("folder of the result store that keeps model features and spectra between runs "
                   "(default: DIVERSITY_CACHE_DIR, else the user cache folder; see `diversity cache info`)")
_NO_CACHE_HELP = "neither read nor write the result store for this run (also DIVERSITY_NO_CACHE=1)"
_ALLOW_DOWNLOAD_HELP = ("let --featurizer hf:HUB-ID download a model missing from the local Hugging Face cache "
                        "(without it, models load from a folder or the cache only)")


def _store_settings(args: argparse.Namespace):
    """A context applying ``--cache-dir`` / ``--no-cache`` to the result store for the run."""
    if args.cache_dir is None and not args.no_cache:
        return contextlib.nullcontext()
    from ..store import configured

    if args.cache_dir is not None and os.path.exists(args.cache_dir) and not os.path.isdir(args.cache_dir):
        raise DiversityError(f"--cache-dir {args.cache_dir!r} is a file; give a folder (it is created if missing).")
    return configured(folder=args.cache_dir, enabled=False if args.no_cache else None)


def _download_settings(args: argparse.Namespace):
    """A context letting ``hf:`` featurizers download a model missing from the local cache (``--allow-download``)."""
    if not getattr(args, "allow_download", False):
        return contextlib.nullcontext()
    from ..featurizers import downloads_allowed

    return downloads_allowed()


def build_parser(commands: Optional[Iterable[str]] = None) -> argparse.ArgumentParser:
    """Return the ``diversity`` argument parser.

    Parameters
    ----------
    commands : iterable of str, optional
        The sub-commands whose own parsers (flags, help) are built; each of the others is listed by
        name and help line only, without importing its module. Default: all of them.
    """
    full = set(COMMANDS if commands is None else commands)
    parser = _Parser(prog="diversity", description="Measure the diversity of a dataset.")
    parser.add_argument("--debug", action="store_true", help="show a traceback on errors")
    parser.add_argument("--memory-budget", type=_memory_size, default=None, metavar="SIZE", help=_BUDGET_HELP)
    parser.add_argument("--cache-dir", default=None, metavar="DIR", help=_CACHE_DIR_HELP)
    parser.add_argument("--no-cache", action="store_true", help=_NO_CACHE_HELP)
    parser.add_argument("--allow-download", action="store_true", help=_ALLOW_DOWNLOAD_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, help_line in COMMANDS.items():
        if name not in full:
            # listed by ``--help``; without -h of its own, so that a first parse (``_chosen_command``)
            # leaves ``diversity NAME --help`` to the sub-command's real parser
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        module = _command_module(name)
        if module is None:
            continue
        sub_parser = module.add_parser(sub)
        sub_parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                help="show a traceback on errors")
        sub_parser.add_argument("--memory-budget", type=_memory_size, default=argparse.SUPPRESS, metavar="SIZE",
                                help=_BUDGET_HELP)
        sub_parser.add_argument("--cache-dir", default=argparse.SUPPRESS, metavar="DIR", help=_CACHE_DIR_HELP)
        sub_parser.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS, help=_NO_CACHE_HELP)
        sub_parser.add_argument("--allow-download", action="store_true", default=argparse.SUPPRESS,
                                help=_ALLOW_DOWNLOAD_HELP)
        sub_parser.set_defaults(_run=module.run)
    return parser


def _chosen_command(argv: Sequence[str]) -> tuple:
    """The sub-command ``argv`` names, as a 1-tuple, from a first parse that imports no sub-command.

    The parser itself tells an option's value (``--cache-dir cache``) from the command. Usage errors
    of the global options, ``diversity``, ``diversity --help`` and unknown commands end here.
    """
    args, _ = build_parser(()).parse_known_args(argv)
    return (args.command,)


def _format_warning(message, category, filename, lineno, line=None) -> str:
    """One-line warnings on stderr."""
    return f"warning: {message}\n"


def _main_thread() -> bool:
    """Signal handlers can only be set from the main thread."""
    return threading.current_thread() is threading.main_thread()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``diversity`` command; returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_chosen_command(argv))
    args = parser.parse_args(argv)
    warnings.formatwarning = _format_warning
    if args.memory_budget is not None:
        set_config(memory_budget=args.memory_budget)
    if hasattr(signal, "SIGXFSZ") and _main_thread():
        # over a file size limit (ulimit -f) a write then fails with EFBIG, which the atomic
        # writers report (exit 2, previous file kept), instead of the signal killing the process
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        with _store_settings(args), _download_settings(args):
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
