"""``diversity cache info|clear``: the on-disk result store (features, spectra) kept between runs.

``info`` shows the store's folder, its entries, the bytes they take, the bound and whether the
store is in use; ``clear`` removes every entry and says what it freed. The folder is the one every
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
        "size and bound; 'clear' removes every entry. --cache-dir DIR (or DIVERSITY_CACHE_DIR) chooses the "
        "folder, DIVERSITY_CACHE_MAX_BYTES (e.g. 2G) the bound, --no-cache (or DIVERSITY_NO_CACHE=1) "
        "turns it off for a run.",
    )
    parser.add_argument("action", choices=ACTIONS, help="info: what the store holds; clear: remove every entry")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default: table)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the store's state, or clear it."""
    from .. import store

    if args.action == "clear":
        removed = store.clear()
        if args.format == "json":
            print(json.dumps({"folder": removed.folder, "removed_entries": removed.entries,
                              "freed_bytes": removed.bytes}, indent=2))
        else:
            print(f"removed {removed.entries} entr{'y' if removed.entries == 1 else 'ies'}, freed "
                  f"{format_bytes(removed.bytes)} from {removed.folder}")
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
    ], rule=False).strip("\n"))
    return 0
