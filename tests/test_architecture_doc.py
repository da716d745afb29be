"""docs/architecture.md stays true to the tree (issue 39 item 11)."""

from __future__ import annotations

import re
from pathlib import Path

import diversity_core

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"


def _core_parts() -> set:
    """Every package and top-level module of the core (``__init__`` aside)."""
    core = Path(diversity_core.__file__).parent
    parts = {p.stem for p in core.glob("*.py") if p.stem != "__init__"}
    parts |= {p.parent.name for p in core.glob("*/__init__.py")}
    return parts


def _table_names() -> set:
    """The module and package names in the module column of the core's table."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## The core, package by package")
    end = text.index("\n## ", start + 1)
    names = set()
    for line in text[start:end].splitlines():
        cells = line.split("|")
        if len(cells) > 3 and not set(cells[2].strip()) <= {"-"}:
            names |= {n.rstrip("/") for n in re.findall(r"`([\w./]+)`", cells[2])}
    return names


def test_every_core_module_and_package_is_in_the_table():
    missing = _core_parts() - {n.split("/")[0] for n in _table_names()}
    assert not missing, f"docs/architecture.md's table lacks: {sorted(missing)}"


def test_the_table_names_nothing_that_is_gone():
    core = Path(diversity_core.__file__).parent
    stale = {n for n in _table_names()
             if not ((core / f"{n}.py").exists() or (core / n / "__init__.py").exists())}
    assert not stale, f"docs/architecture.md's table names modules that do not exist: {sorted(stale)}"


def _only_re_exports(init: Path) -> bool:
    """Whether a package's ``__init__`` holds nothing but its docstring, imports and ``__all__``."""
    import ast

    for i, node in enumerate(ast.parse(init.read_text(encoding="utf-8")).body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and all(
                isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        return False
    return True


def test_the_packages_said_to_only_re_export_do_and_the_others_do_not():
    """"Most ``__init__`` files only re-export (...)": true of each package named, of no other (issue 39 item 6)."""
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    listed = re.search(r"Most `__init__` files only re-export \(([^)]*)\)", text)
    assert listed, "docs/architecture.md no longer says which __init__ files only re-export"
    said = set(re.findall(r"`(\w+)`", listed.group(1)))
    core = Path(diversity_core.__file__).parent
    actual = {p.parent.name for p in core.glob("*/__init__.py") if _only_re_exports(p)}
    assert said == actual, f"listed but not only re-exporting: {sorted(said - actual)}; " \
                           f"only re-exporting but not listed: {sorted(actual - said)}"
