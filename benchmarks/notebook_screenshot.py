"""A screenshot of the quickstart notebook's rendered outputs (issue 42, targets).

    python benchmarks/notebook_screenshot.py [--notebook docs/notebooks/quickstart.ipynb]
                                             [--out test-artifacts/notebook.png]

1. Runs the notebook in a fresh kernel of this interpreter (``execute`` of
   ``tests/test_notebooks.py``: the kernel spec in a temporary folder, nothing installed), with
   plotly's renderer ``plotly_mimetype+notebook``: each figure comes out both as plotly's JSON
   and as HTML, and the first one carries plotly.js itself, so the page draws offline.
2. Converts the executed notebook to HTML with nbconvert (``jupyter nbconvert --to html``'s
   exporter, template "lab"); writes it beside the PNG (``notebook.html``).
3. Opens the HTML in Debian's headless Chromium through Playwright, with the browser tests'
   launch flags (``tests/e2e/conftest.py``) and every request that is not to a local file
   refused (the template's require.js and MathJax links fail, as they would offline), waits
   until every figure has drawn, and writes a full-page PNG.

Prints what it found (cells, figures drawn, HTML tables) as JSON on stdout; exits 1 when a figure
did not draw. Not a benchmark: no timing (``dev.py bench`` runs only ``bench_*.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "quickstart.ipynb"
OUT = ROOT / "test-artifacts" / "notebook.png"
#: plotly's renderer for the run: the JSON of the figure (for Jupyter) and its HTML (for nbconvert),
#: plotly.js embedded once by the first figure ("notebook" is the not-connected, offline variant).
RENDERER = "plotly_mimetype+notebook"


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def render_html(notebook: Path, folder: Path) -> tuple[str, dict]:
    """Execute ``notebook`` and convert it to HTML; return the page and counts of its outputs."""
    from nbconvert import HTMLExporter

    runner = _module(ROOT / "tests" / "test_notebooks.py", "_notebook_runner")
    nb = runner.execute(notebook, folder, env={"PLOTLY_RENDERER": RENDERER})
    outputs = [o for c in runner.code_cells(nb) for o in c.outputs]
    counts = {
        "code_cells": len(runner.code_cells(nb)),
        "errors": sum(o.output_type == "error" for o in outputs),
        "plotly_figures": sum(runner.PLOTLY in o.get("data", {}) for o in outputs),
        "html_outputs": sum("text/html" in o.get("data", {}) for o in outputs),
    }
    page, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    counts["html_bytes"] = len(page.encode())
    counts["html_tables"] = len(re.findall(r"<table", page))
    return page, counts


def screenshot(html_path: Path, png_path: Path, n_figures: int, *, width: int = 1400) -> int:
    """Full-page PNG of the HTML file in headless Chromium; returns the number of figures drawn."""
    from playwright.sync_api import sync_playwright

    e2e = _module(ROOT / "tests" / "e2e" / "conftest.py", "_e2e_conftest")
    if not Path(e2e.CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {e2e.CHROMIUM}; install Debian's 'chromium' package.")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=e2e.CHROMIUM, args=e2e.LAUNCH_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                       else route.abort())
            page.goto(html_path.resolve().as_uri(), wait_until="load")
            drawn = "document.querySelectorAll('.js-plotly-plot').length"  # the class Plotly.newPlot adds
            try:
                page.wait_for_function(f"{drawn} >= {n_figures}", timeout=30_000)
            except Exception:  # noqa: BLE001 - reported below, the screenshot is still taken
                pass
            page.wait_for_timeout(500)  # let the last figure finish its transitions
            n_drawn = page.evaluate(drawn)
            png_path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(png_path), full_page=True)
        finally:
            browser.close()
    return int(n_drawn)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", type=Path, default=NOTEBOOK)
    parser.add_argument("--out", type=Path, default=OUT, help="the PNG (the HTML is written beside it)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        page, counts = render_html(args.notebook, Path(tmp))
    html_path = args.out.with_suffix(".html")
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(page, encoding="utf-8")
    counts["figures_drawn"] = screenshot(html_path, args.out, counts["plotly_figures"])
    counts["png"] = str(args.out)
    print(json.dumps(counts, indent=1))
    return 0 if counts["figures_drawn"] >= counts["plotly_figures"] and not counts["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
