"""The server process's own habits: no full collection after each run, preloaded first-page modules."""

from __future__ import annotations

import ast
import gc
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from diversity_core.workers import available_cores
from ui import heap, serve, workers

ROOT = Path(__file__).resolve().parents[2]


def test_no_full_collection_after_every_run():
    # Streamlit's gc.collect(2) after each run walks every imported module's objects (0.2 s here)
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


def _magic_expressions(source: str) -> list:
    """Lines Streamlit's magic would write: expression statements other than calls and docstrings."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            seq = getattr(node, field, None)
            if not isinstance(seq, list):
                continue
            for i, stmt in enumerate(seq):
                if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, (ast.Call, ast.Await, ast.Yield,
                                                                               ast.YieldFrom)):
                    continue
                docstring = (i == 0 and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
                             and isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)))
                if not docstring:
                    found.append(stmt.lineno)
    return found


def test_magic_is_off_and_no_page_needs_it():
    # magic rewrites each page's syntax tree on its first run in a server process; nothing uses it
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["magicEnabled"] is False
    assert _magic_expressions('"""doc"""\nimport x\nx\nf()\nif a:\n    a.b\n') == [3, 6]
    scripts = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py"))]
    assert len(scripts) == 10
    for script in scripts:
        assert _magic_expressions(script.read_text(encoding="utf-8")) == [], script.name


def test_settle_freezes_the_heap_once(monkeypatch):
    monkeypatch.setattr(heap, "_settled", False)
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    assert heap.settle() is True
    assert heap.settle() is False
    assert frozen == [1]


def test_the_app_settles_the_heap_after_its_page():
    lines = (ROOT / "app.py").read_text().splitlines()
    assert lines.index(next(x for x in lines if x.strip().startswith("current.run()"))) < lines.index(
        next(x for x in lines if x.startswith("heap.settle()")))


def test_preload_reads_the_scripts_own_imports(tmp_path):
    script = tmp_path / "app.py"
    script.write_text("import json\nfrom email import message\nfrom . import nothing\nx = 1\n"
                      "def f():\n    import csv\n")
    assert serve.imported_modules(script) == ["json", "email", "email.message"]
    assert serve.preload(script) == ["json", "email", "email.message"]


def test_preload_imports_the_first_page_modules_in_a_fresh_process():
    code = ("import sys; from pathlib import Path; from ui import serve; "
            "serve.preload(Path('app.py').resolve()); "
            "print(all(m in sys.modules for m in ('ui.sidebar', 'ui.compute', 'pandas', 'PIL.Image', "
            "'diversity_core.report.figures', 'plotly.graph_objects')), "
            "sys.modules['streamlit.delta_generator']._use_warning_has_been_displayed)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    # and the first element's REPL check (inspect.stack) is answered: this is `streamlit run`
    assert out.stdout.strip() == "True True", out.stderr[-2000:]


def test_preload_byte_compiles_sources_even_when_python_would_not(tmp_path, monkeypatch):
    # PYTHONDONTWRITEBYTECODE (this project's machines, many container images) stops imports writing
    # __pycache__; every server start would compile the app's and the core's sources again
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "sub" / "b.py").write_text("Y = 2\n")
    assert serve.compile_sources([pkg, tmp_path / "missing"]) == 0
    cached = sorted(p.name.split(".")[0] for p in pkg.rglob("__pycache__/*.pyc"))
    assert cached == ["a", "b"]
    stamp = {p: p.stat().st_mtime_ns for p in pkg.rglob("*.pyc")}
    assert serve.compile_sources([pkg]) == 0  # up to date: nothing is written again
    assert {p: p.stat().st_mtime_ns for p in pkg.rglob("*.pyc")} == stamp
    (pkg / "bad.py").write_text("def (:\n")
    assert serve.compile_sources([pkg]) == 1  # reported, not raised: the import shows the error later


def _blas_counts() -> set:
    from threadpoolctl import threadpool_info

    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_the_server_gives_its_own_threads_one_blas_thread_unless_the_user_set_one(monkeypatch):
    for name in (*serve.BLAS_VARIABLES, "DIVERSITY_JOB_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert serve.server_blas_threads() is True
    assert [os.environ[name] for name in serve.BLAS_VARIABLES] == ["1", "1"]
    assert int(os.environ["DIVERSITY_JOB_THREADS"]) == available_cores()
    # read once by the server's ui.workers and removed: worker processes it starts do not inherit it
    monkeypatch.setenv("DIVERSITY_JOB_THREADS", "3")
    assert workers._read_job_threads() == 3 and "DIVERSITY_JOB_THREADS" not in os.environ
    assert workers._read_job_threads() is None
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's count stays, and jobs are left alone
    monkeypatch.delenv("DIVERSITY_JOB_THREADS", raising=False)
    assert serve.server_blas_threads() is False
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4" and "DIVERSITY_JOB_THREADS" not in os.environ


def test_jobs_in_the_server_get_their_cores_and_leave_one_thread_in_either_order(monkeypatch):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        monkeypatch.setattr(workers, "JOB_THREADS", None)
        with workers.job_threads():  # not a server started by ui.serve: nothing changes
            assert _blas_counts() == {1}
        monkeypatch.setattr(workers, "JOB_THREADS", 2)
        first, second = workers.job_threads(), workers.job_threads()
        first.__enter__()
        assert _blas_counts() == {2}
        second.__enter__()
        first.__exit__(None, None, None)  # the first job ends while the second runs: it keeps its cores
        assert _blas_counts() == {2}
        second.__exit__(None, None, None)
        assert _blas_counts() == {1}


def test_large_results_computed_in_the_server_get_every_core(monkeypatch):
    from threadpoolctl import threadpool_limits

    from ui import compute

    monkeypatch.setattr(workers, "JOB_THREADS", 2)
    with threadpool_limits(limits=1, user_api="blas"):
        with compute._cores(compute.PARALLEL_FROM - 1):  # a small page: the server's one thread
            assert _blas_counts() == {1}
        with compute._cores(compute.PARALLEL_FROM):
            assert _blas_counts() == {2}
        assert _blas_counts() == {1}
