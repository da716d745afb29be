"""The server process's own habits: no full collection after each run, preloaded first-page modules."""

from __future__ import annotations

import gc
import subprocess
import sys
import tomllib
from pathlib import Path

from ui import heap, serve

ROOT = Path(__file__).resolve().parents[2]


def test_no_full_collection_after_every_run():
    # Streamlit's gc.collect(2) after each run walks every imported module's objects (0.2 s here)
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


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
