"""The app imports the core through public names only (issue 39, item 8).

``app.py``, ``app_pages/`` and ``ui/`` are read with :mod:`ast`: an import from a private core
module (``diversity_core._orders``, ``diversity_core.rnd._api``) or of a private name
(``from diversity_core import _orders``) fails the test. The private modules stay importable
(the CLI and the core use them); the app reaches what it needs through ``diversity_core``'s
public names, which are the same objects.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (file relative to the root, module) pairs allowed to import private core names, each with its reason
#: (none left: the robustness page's rank chart moved to ``diversity_core.report.figures.rank_figure``).
ALLOWED: set[tuple[str, str]] = set()


def _app_files() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]
    return [f for f in files if f.is_file()]


def _private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def private_core_imports(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for every import of a private core module or name in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "diversity_core" and _private(alias.name):
                    found.append((node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "diversity_core":
                continue
            if _private(node.module):
                found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names if a.name.startswith("_"))
    return found


def test_the_checker_sees_every_form():
    """Guard against a checker that cannot fail: each private form is caught, public ones are not."""
    src = (
        "from diversity_core._orders import format_q\n"
        "from diversity_core import _orders\n"
        "import diversity_core._config\n"
        "def f():\n"
        "    from diversity_core.rnd._api import MIN_VALIDATION\n"
        "from diversity_core import format_q, store\n"
        "from diversity_core.rnd import MIN_VALIDATION\n"
        "from . import _local_helper\n"
    )
    assert [line for line, _ in private_core_imports(src)] == [1, 2, 3, 5]


def test_the_app_imports_no_private_core_name():
    bad = []
    for path in _app_files():
        rel = path.relative_to(ROOT).as_posix()
        for line, what in private_core_imports(path.read_text(encoding="utf-8")):
            if not any(rel == f and (what == m or what.startswith(m + ".")) for f, m in ALLOWED):
                bad.append(f"{rel}:{line}: {what}")
    assert not bad, "import these through a public name (diversity_core's __all__):\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("public", "module", "name"),
    [
        ("format_q", "diversity_core._orders", "format_q"),
        ("parse_q", "diversity_core._orders", "parse_q"),
        ("q_key", "diversity_core._orders", "q_key"),
        ("frame_csv", "diversity_core._csv", "frame_csv"),
        ("memory_budget", "diversity_core._config", "memory_budget"),
        ("format_bytes", "diversity_core._config", "format_bytes"),
        ("configure_environment", "diversity_core._config", "configure_environment"),
        ("DETAIL_SEPARATOR", "diversity_core._progress", "DETAIL_SEPARATOR"),
        ("split_message", "diversity_core._progress", "split_message"),
        ("check_weights", "diversity_core._validation", "check_weights"),
        ("compute_once", "diversity_core._inflight", "compute_once"),
        ("MISSING", "diversity_core._inflight", "MISSING"),
        ("format_duration", "diversity_core.featurizers._runtime", "format_duration"),
    ],
)
def test_public_names_are_the_private_objects(public, module, name):
    """The public name and the old private path give the same object (nothing was moved)."""
    import importlib

    import diversity_core

    assert public in diversity_core.__all__
    assert getattr(diversity_core, public) is getattr(importlib.import_module(module), name)


def test_subpackage_constants_are_public():
    from diversity_core.data import TABLE_EXTENSIONS
    from diversity_core.data._tables import TABLE_EXTENSIONS as private_tables
    from diversity_core.rnd import MIN_VALIDATION
    from diversity_core.rnd._api import MIN_VALIDATION as private_min

    assert TABLE_EXTENSIONS is private_tables and MIN_VALIDATION == private_min
