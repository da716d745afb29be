"""How fast the app answers a change of q (issue 22's target: the headline within 150 ms median).

Starts the server as ``diversity app`` does (``python -m ui.serve app.py``) on a free loopback
port, opens the Scores page of the digits demo in Debian's headless Chromium (Playwright), waits
15 s after the first page (the worker pool starts then), presses the q slider's arrow keys twenty
times and measures, for each press, the time until the headline metric changes and until the
script run has finished (charts redrawn), and splits it by the websocket frames: key to the
browser's message, message to the server's first reply. Prints the figures and writes
``benchmarks/results/app_redraw.json``.

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

from diversity_core._config import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
ARGS = list(CHROMIUM_ARGS)
HEADLINE_CHANGED = """(before) => {
  const m = [...document.querySelectorAll('.dx-headline-label-text')]  // the headline's own (ui.live_q)
    .find(e => e.innerText.includes('Vendi score (q ='));
  return m && m.innerText !== before;
}"""
#: Presses of the q slider's arrow keys, alternating right and left.
PRESSES = 20
RUN_FINISHED = "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"


def main() -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "ui.serve", "app.py", "--server.headless", "true",
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
            # Time stamps of the websocket frames, to split each answer into the browser's part
            # (the widget's own delay before it sends, the redraw after the reply) and the server's.
            sent, received = [], []
            page.on("websocket", lambda ws: (
                ws.on("framesent", lambda _f: sent.append(time.perf_counter())),
                ws.on("framereceived", lambda _f: received.append(time.perf_counter()))))
            page.goto(url)
            page.wait_for_function(RUN_FINISHED, timeout=120_000)
            page.wait_for_timeout(15_000)  # the worker pool starts after the first page: not measured here
            slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
            label = page.locator(".dx-headline-label-text").first  # the headline's own markup (ui.live_q)
            metric = page.locator(".dx-headline").first
            headline, finished, to_send, replies, mismatches = [], [], [], [], []
            for i in range(PRESSES):
                before = label.inner_text()
                slider.focus()
                t0 = time.perf_counter()
                page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
                page.wait_for_function(HEADLINE_CHANGED, arg=before, polling=10)
                headline.append(1e3 * (time.perf_counter() - t0))
                shown = metric.inner_text()
                t_sent = next((t for t in sent if t >= t0), None)
                t_back = next((t for t in received if t_sent is not None and t >= t_sent), None)
                if t_sent is not None and t_back is not None:
                    to_send.append(1e3 * (t_sent - t0))
                    replies.append(1e3 * (t_back - t_sent))
                page.wait_for_function(RUN_FINISHED, polling=10)
                finished.append(1e3 * (time.perf_counter() - t0))
                # the headline drawn in the browser as q moved (ui.live_q) is the server's own
                page.wait_for_timeout(200)
                if metric.inner_text() != shown:
                    mismatches.append({"shown": shown, "server": metric.inner_text()})
                page.wait_for_timeout(500)
            browser.close()
    finally:
        server.terminate()
    out = {"dataset": "digits demo (n = 1200, the Scores page)", "headline_ms": headline, "run_finished_ms": finished,
           "headline_median_ms": statistics.median(headline), "run_finished_median_ms": statistics.median(finished),
           "target_ms": 150, "mismatches": mismatches,
           "key_to_frame_sent_ms": to_send, "frame_sent_to_first_reply_ms": replies,
           "key_to_frame_sent_median_ms": statistics.median(to_send) if to_send else None,
           "frame_sent_to_first_reply_median_ms": statistics.median(replies) if replies else None,
           "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    print(f"headline changed: median {out['headline_median_ms']:.0f} ms ({', '.join(f'{x:.0f}' for x in headline)})")
    print(f"run finished:     median {out['run_finished_median_ms']:.0f} ms")
    print(f"headline drawn in the browser that the server's run then changed: {len(mismatches)} of {PRESSES}")
    if to_send:
        print(f"key -> frame sent: median {out['key_to_frame_sent_median_ms']:.0f} ms; "
              f"frame sent -> first reply: median {out['frame_sent_to_first_reply_median_ms']:.0f} ms "
              f"(load {' '.join(out['loadavg'])})")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "app_redraw.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
