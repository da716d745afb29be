"""``diversity cache info|clear``: the on-disk result store (features, spectra) kept between runs.

``info`` shows the store's folder, its entries, the bytes they take, the bound, whether the
store is in use, its temporary files (writes under way, or left by writers that were killed) and
its key file; ``clear`` removes every entry and the temporary files of writers that are gone, and
says what it freed. The folder is the one every
other command uses: ``--cache-dir DIR`` (before or after the command), else ``DIVERSITY_CACHE_DIR``,
else the platform's user cache folder (see :mod:`diversity_core.store`).
"""

from __future__ import annotations

import argparse
import json

from .._config import format_bytes
from .._table import format_table

ACTIONS = ("info", "clear")
FORMATS = ("table", "json")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``cache``."""
    parser = subparsers.add_parser(
        "cache",
        help="show (info) or empty (clear) the result store kept between runs",
        description="The result store keeps expensive results (model features, spectra) on disk between "
        "runs, shared by the command line, the Python API and the app. 'info' shows its folder, entries, "
        "size, bound, temporary files and key file; 'clear' removes every entry and the temporary files of "
        "writers that were killed. --cache-dir DIR (or DIVERSITY_CACHE_DIR) chooses the "
        "folder, DIVERSITY_CACHE_MAX_BYTES (e.g. 2G) the bound, --no-cache (or DIVERSITY_NO_CACHE=1) "
        "turns it off for a run, DIVERSITY_CACHE_KEY_FILE names the key of a store shared by a team "
        "(see docs/security.md).",
    )
    parser.add_argument("action", choices=ACTIONS,
                        help="info: what the store holds; clear: remove every entry and leftover temporary files")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the store's state, or clear it."""
    from .. import store

    if args.action == "clear":
        removed = store.clear()
        if args.format == "json":
            print(json.dumps({"folder": removed.folder, "removed_entries": removed.entries,
                              "freed_bytes": removed.bytes + removed.temporary_bytes,
                              "removed_temporaries": removed.temporaries}, indent=2))
        else:
            temps = (f" and {removed.temporaries} temporary file{'' if removed.temporaries == 1 else 's'} of "
                     "stopped writers" if removed.temporaries else "")
            print(f"removed {removed.entries} entr{'y' if removed.entries == 1 else 'ies'}{temps}, freed "
                  f"{format_bytes(removed.bytes + removed.temporary_bytes)} from {removed.folder}")
        return 0
    state = store.info()
    if args.format == "json":
        print(json.dumps(state.to_dict(), indent=2))
        return 0
    print(format_table(["", ""], [
        ["folder", state.folder],
        ["entries", state.entries],
        ["size", f"{format_bytes(state.bytes)} ({state.bytes} bytes)"],
        ["bound", f"{format_bytes(state.max_bytes)} (least recently used entries are removed beyond it)"],
        ["in use", "yes" if state.enabled else "no (--no-cache or DIVERSITY_NO_CACHE)"],
        ["temporary", f"{state.temporaries} file{'' if state.temporaries == 1 else 's'}, "
                      f"{format_bytes(state.temporary_bytes)} (writes under way, or left by stopped writers: "
                      "`cache clear` removes those)"],
        ["key file", state.key_file],
    ], rule=False).strip("\n"))
    return 0
