"""The compute core must import and compute without Streamlit (the app is one client of many)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_core_imports_with_streamlit_blocked():
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "streamlit" or name.startswith("streamlit."):
                    raise ImportError("streamlit is blocked in this test")
                return None

        sys.meta_path.insert(0, Block())
        import pkgutil
        import diversity_core
        for mod in pkgutil.walk_packages(diversity_core.__path__, "diversity_core."):
            if not mod.name.endswith("__main__"):
                __import__(mod.name)
        import numpy as np
        print(diversity_core.vendi_score(np.eye(5)))
        assert not any(m == "streamlit" or m.startswith("streamlit.") for m in sys.modules)
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert abs(float(res.stdout.strip().splitlines()[-1]) - 5.0) < 1e-12


def test_public_api_is_documented():
    import diversity_core

    for name in diversity_core.__all__:
        obj = getattr(diversity_core, name)
        if callable(obj) and not isinstance(obj, type):
            assert obj.__doc__, f"{name} has no docstring"


#: Every optional dependency (an extra of the distribution), blocked to mimic ``pip install .`` alone.
OPTIONAL = ("streamlit", "torch", "rdkit", "PIL", "plotly", "jinja2", "kaleido", "umap", "pynndescent",
            "sentence_transformers", "dask", "distributed", "efficientnet_lite_pytorch")

BLOCKER = textwrap.dedent(
    f"""
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {OPTIONAL!r}:
                raise ImportError(f"{{name}} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    """
)


def test_core_and_cli_work_without_optional_dependencies(tmp_path):
    """The core alone (``pip install diversity-explorer``) scores and compares embeddings from the CLI."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, rng.normal(size=(60, 8)))
    np.save(b, rng.normal(size=(60, 8)) * [1, 1, 1, 1, 0, 0, 0, 0])
    for args in (["score", str(a)], ["compare", str(a), str(b), "--n-subsamples", "10", "--no-magnitude"]):
        code = BLOCKER + f"from diversity_core.cli import main\nsys.exit(main({args!r}))\n"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "VS_1" in res.stdout


def test_missing_extra_is_named(tmp_path):
    """Asking for an optional feature without its extra exits 2 naming the extra to install."""
    code = BLOCKER + "from diversity_core.cli import main\nsys.exit(main(['inspect', 'demo:molecules']))\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "diversity-explorer[molecules]" in res.stderr


# ---------------------------------------------------------------------------------------
# the import graph of the core: one way, down the layers
# ---------------------------------------------------------------------------------------
def _core_modules() -> dict:
    """``dotted name -> (path, is_package)`` for every module of ``diversity_core``."""
    import pathlib

    import diversity_core

    root = pathlib.Path(diversity_core.__file__).parent
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _import_graph(modules: dict) -> dict:
    """``module -> {imported core module: line}`` from every ``import``/``from`` statement, at any depth.

    Imports inside functions, classes and ``if TYPE_CHECKING:`` blocks count like module-level
    ones (a cycle hidden in a function is still a cycle). Relative imports are resolved; ``from
    .x import y`` is an edge to ``x.y`` when that is a module, else to ``x`` (its module or its
    ``__init__``).
    """
    import ast

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [known(a.name) for a in node.names if a.name.split(".")[0] == "diversity_core"]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != "diversity_core":
                    continue
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else known(source)
                           for a in node.names]
            for target in targets:
                if target and target != name:
                    edges.setdefault(target, node.lineno)
    return graph


def _find_cycle(graph: dict):
    """One cycle of the graph as a list of modules (first == last), or None (iterative DFS)."""
    state = {}  # 1: on the current path, 2: done
    for start in graph:
        if start in state:
            continue
        path, stack = [start], [iter(graph[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph.get(nxt, ())))
    return None


def test_import_graph_finds_cycles():
    """The checker itself: a cycle through a function-level import and a package ``__init__`` is found."""
    graph = {"p": {"p.a": 1}, "p.a": {"p.b": 3}, "p.b": {"p": 40}, "q": {"p.a": 2}}
    cycle = _find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"p", "p.a", "p.b"}
    assert _find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1, "b": 2}}) is None


def test_core_has_no_import_cycles():
    """Imports point one way, down the layers: no cycle, at module level or inside functions."""
    modules = _core_modules()
    graph = _import_graph(modules)
    assert len(graph) > 50 and "diversity_core.spectrum" in graph["diversity_core.vendi"]
    cycle = _find_cycle(graph)
    if cycle:
        steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle, cycle[1:])]
        raise AssertionError("import cycle in diversity_core:\n  " + "\n  ".join(steps))


def test_no_module_imports_its_own_package_api():
    """A package's ``__init__`` is its API map, re-exporting (eagerly or lazily) what lies below it.

    So a module that imports from an ancestor package's ``__init__`` closes a cycle even when the
    re-export is lazy (invisible to the graph above): it must import from the defining module.
    ``__main__`` (imported by nothing) may.
    """
    modules = _core_modules()
    graph = _import_graph(modules)
    bad = [f"{name} (line {line}) -> {target}"
           for name, edges in graph.items() if not name.endswith(".__main__")
           for target, line in edges.items() if modules[target][1] and name.startswith(target + ".")]
    assert not bad, "imports from a package's own __init__ (import from the defining module):\n  " + "\n  ".join(bad)
