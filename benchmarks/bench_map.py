"""How fast the Projection map draws and answers hover (issue 27's targets: a 100,000-point map
painted within 3 s once its coordinates are ready, hover answering within 200 ms).

Writes 100,000 and 1,000,000 clustered embeddings to a temporary data folder, starts the app on a
free loopback port (``DIVERSITY_DATA_DIR`` pointing there), opens each map once so that its
features and PCA coordinates are computed and cached, then opens it again in a fresh tab and
measures, in Debian's headless Chromium (Playwright):

- ``paint_ms``: in a session already open, a click on "Projection" in the sidebar (from the
  Dataset page) to the map drawn with every point (the plotly figure holds the points and its
  WebGL canvas or SVG points exist), the coordinates being ready (cached): the page's script
  run, the figure's transfer and plotly's drawing;
- ``tab_paint_ms`` and ``tab_chart_ms``: the same from the navigation of a fresh tab (a new
  session: app.py, the sidebar and the data are set up first), to the map drawn and to the
  chart's element appearing, so ``tab_paint_ms - tab_chart_ms`` is plotly's own drawing;
- ``hover_ms``: for 20 points, the mouse event's time stamp to plotly's ``plotly_hover`` event
  (the hover box is drawn before it fires) and, on the digits demo, to the hover card shown.

Prints the figures with the load average they were measured under (the machine is often shared)
and writes ``benchmarks/results/map.json``.
Run: ``python benchmarks/bench_map.py [--quick]`` (``--quick``: the 100,000-point map only).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from diversity_core._config import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
ARGS = list(CHROMIUM_ARGS)
RUN_FINISHED = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
DRAWN = """(n) => { const g = document.querySelector('.js-plotly-plot');
  return !!g && !!g._fullData && g._fullData.reduce((s, t) => s + ((t.type || '').startsWith('scatter')
    ? (t.x || []).length : 0), 0) >= n && !!g.querySelector('canvas, .points'); }"""
CHART = "() => !!document.querySelector('.js-plotly-plot')"
#: The Projection page's title is shown.
ON_PROJECTION = """() => { const h = document.querySelector('[data-testid="stMain"] h1');
  return !!h && h.innerText.startsWith('Projection'); }"""
#: Client coordinates of the points of the first scatter trace at ``idx``.
PIXELS = """(idx) => { const g = document.querySelector('.js-plotly-plot');
  const t = g._fullData.find(t => (t.type || '').startsWith('scatter'));
  const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis, r = g.getBoundingClientRect();
  return idx.map(i => [r.left + xa._offset + xa.l2p(t.x[i]), r.top + ya._offset + ya.l2p(t.y[i])]); }"""
#: Record each mouse move's time stamp and the time of each plotly_hover event.
PROBE = """() => { const g = document.querySelector('.js-plotly-plot');
  window.__moves = []; window.__hovers = [];
  document.addEventListener('mousemove', e => window.__moves.push(e.timeStamp), true);
  g.on('plotly_hover', () => window.__hovers.push(performance.now())); }"""


def _clusters(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(12, 16)) * 4
    return (centres[rng.integers(0, 12, size=n)] + rng.normal(size=(n, 16))).astype(np.float32)


def _open(browser, url: str, n: int) -> dict:
    """Open ``url`` in a fresh tab; time the chart's element and its drawing from the navigation."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(600_000)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(CHART, polling=20)
    chart = time.perf_counter() - t0
    page.wait_for_function(DRAWN, arg=n, polling=20)
    paint = time.perf_counter() - t0
    page.wait_for_function(RUN_FINISHED, polling=50)
    return {"page": page, "chart_ms": 1e3 * chart, "paint_ms": 1e3 * paint}


def _revisit(page, n: int) -> float:
    """Milliseconds from a click on "Projection" in the sidebar (coming from Dataset) to the map drawn."""
    nav = '[data-testid="stSidebarNavLink"]'
    page.locator(nav, has_text="Dataset").first.click()
    page.wait_for_function(f"() => !({ON_PROJECTION})()")
    page.wait_for_function(RUN_FINISHED, polling=50)
    page.wait_for_timeout(500)
    t0 = time.perf_counter()
    page.locator(nav, has_text="Projection").first.click()
    page.wait_for_function(f"(n) => ({ON_PROJECTION})() && ({DRAWN})(n)", arg=n, polling=20)
    out = 1e3 * (time.perf_counter() - t0)
    page.wait_for_function(RUN_FINISHED, polling=50)
    return out


def _hover(page, points: int = 20, card: bool = False) -> list:
    """Milliseconds from the mouse event to plotly_hover (or to the card shown) for ``points`` points."""
    page.evaluate(PROBE)
    n = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullData[0].x.length")
    idx = np.random.default_rng(1).choice(n, size=points, replace=False).tolist()
    out = []
    for x, y in page.evaluate(PIXELS, idx):
        page.mouse.move(x - 40, y - 40)
        page.wait_for_timeout(150)
        page.evaluate("() => { window.__moves = []; window.__hovers = []; }")
        page.mouse.move(x, y)
        if card:
            page.wait_for_function(
                "() => document.getElementById('dx-hover-card').style.display === 'block'", polling="raf"
            )
            t = page.evaluate("() => performance.now() - window.__moves[0]")
        else:
            page.wait_for_function("() => window.__hovers.length > 0", polling="raf", timeout=5_000)
            t = page.evaluate("() => window.__hovers[0] - window.__moves[0]")
        out.append(float(t))
    return out


def main(quick: bool = False) -> None:
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="bench_map_"))
    sizes = [100_000] if quick else [100_000, 1_000_000]
    for n in sizes:
        np.save(folder / f"map_{n}.npy", _clusters(n))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "DIVERSITY_DATA_DIR": str(folder),
        "HF_HUB_OFFLINE": "1",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    out: dict = {"maps": {}, "targets": {"paint_ms": 3000, "hover_ms": 200},
                 "loadavg_start": Path("/proc/loadavg").read_text().split()[:3]}
    print(f"load average at the start {' '.join(out['loadavg_start'])}", flush=True)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            cases = [(f"{url}/projection?path=map_{n}.npy", n, f"{n:,} embeddings", False) for n in sizes]
            cases.append((f"{url}/projection?demo=digits&n=1200", 1200, "digits demo (hover cards)", True))
            for link, n, name, card in cases:
                drawn = min(n, 20_000) if n > 200_000 else n  # a density view draws its sample
                warm = _open(browser, link, drawn)  # computes and caches the features and the map
                warm["page"].close()
                first = _open(browser, link, drawn)
                row = {
                    "n": n,
                    "cold_paint_ms": warm["paint_ms"],
                    "tab_chart_ms": first["chart_ms"],
                    "tab_paint_ms": first["paint_ms"],
                    "plotly_draw_ms": first["paint_ms"] - first["chart_ms"],
                    "paint_ms": _revisit(first["page"], drawn),
                }
                hover = _hover(first["page"], card=card)
                row.update(hover_ms=hover, hover_median_ms=statistics.median(hover), hover_max_ms=max(hover))
                first["page"].close()
                out["maps"][name] = row
                print(
                    f"{name}: painted {row['paint_ms']:.0f} ms after the click on Projection, the map cached "
                    f"(a fresh tab: {row['tab_paint_ms']:.0f} ms, chart element at {row['tab_chart_ms']:.0f} ms, "
                    f"plotly drawing {row['plotly_draw_ms']:.0f} ms; first visit {row['cold_paint_ms']:.0f} ms); "
                    f"hover median {row['hover_median_ms']:.0f} ms, max {row['hover_max_ms']:.0f} ms; "
                    f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}",
                    flush=True,
                )
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    out["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    print(f"load average {' '.join(out['loadavg'])}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "map.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
