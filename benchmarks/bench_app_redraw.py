"""How fast the app answers a change of q (issue 5's target: redraw within 300 ms on digits).

Starts ``streamlit run app.py`` on a free loopback port, opens the Scores page in Debian's
headless Chromium (Playwright), presses the q slider's arrow keys eight times and measures,
for each press, the time until the headline metric changes and until the script run has
finished (charts redrawn). Prints the figures and writes ``benchmarks/results/app_redraw.json``.

Run: ``python benchmarks/bench_app_redraw.py`` (needs /usr/bin/chromium and playwright).
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HEADLINE_CHANGED = """(before) => {
  const m = [...document.querySelectorAll('[data-testid=stMetricLabel]')]
    .find(e => e.innerText.includes('Vendi score (q ='));
  return m && m.innerText !== before;
}"""
RUN_FINISHED = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def main() -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_function(RUN_FINISHED, timeout=120_000)
            page.wait_for_timeout(2000)
            slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
            label = page.locator('[data-testid="stMetric"]', has_text="Vendi score (q =").first.locator(
                '[data-testid="stMetricLabel"]')
            headline, finished = [], []
            for i in range(8):
                before = label.inner_text()
                slider.focus()
                t0 = time.perf_counter()
                page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                page.wait_for_function(HEADLINE_CHANGED, arg=before, polling=10)
                headline.append(1e3 * (time.perf_counter() - t0))
                page.wait_for_function(RUN_FINISHED, polling=10)
                finished.append(1e3 * (time.perf_counter() - t0))
                page.wait_for_timeout(500)
            browser.close()
    finally:
        server.terminate()
    out = {"dataset": "digits demo (n = 1200)", "headline_ms": headline, "run_finished_ms": finished,
           "headline_median_ms": statistics.median(headline), "run_finished_median_ms": statistics.median(finished),
           "target_ms": 300}
    print(f"headline changed: median {out['headline_median_ms']:.0f} ms ({', '.join(f'{x:.0f}' for x in headline)})")
    print(f"run finished:     median {out['run_finished_median_ms']:.0f} ms (target for the redraw: 300 ms)")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "app_redraw.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
