"""A cold start on a warm result store (issue 22): the server restarted, the same data, first render.

The script fills a result store once (a server of its own renders the Scores page of the
digits demo), then for each repetition restarts the server (a new ``python -m ui.serve app.py``
process, as ``diversity app`` starts it, on the same ``DIVERSITY_CACHE_DIR``: the in-memory
caches are empty, the features and spectra are on disk) and opens the page as soon as the server
answers its health check, in two browsers:

- ``returning``: a Chromium profile that has opened the app before (its HTTP cache holds the
  frontend's files, which Streamlit serves as immutable for a year), as a team member's browser
  after a server restart;
- ``first_visit``: a new browser context with an empty cache, as someone opening the app for
  the first time (the frontend's ~7 MB of JavaScript is downloaded and compiled).

``first_render_s`` runs from ``goto`` until the headline metric is shown and the run has
finished (no status widget; a session's first run stops after the headline, ``ui.first_paint``),
``charts_s`` until the page's q profile is drawn too; the server's own time of the held run and of
the full run after it comes from its run log (``DIVERSITY_RUN_LOG``).

The floor: in each repetition a server of a one-line page (``st.metric`` with the headline's
label, the app's Streamlit settings) is started and opened the same way, in both browsers. Its
first render is what Streamlit's frontend alone costs on this machine at that moment (it
downloads and compiles the same JavaScript), so ``app / floor`` is a figure that the machine's
speed moves much less than the seconds themselves.

``--clients-nice N`` runs the browsers (the app's and the floor's) at niceness N, their
autogroups too, as ``bench_sessions.py`` does: a visitor's browser runs on the visitor's
machine, not on the server's two cores, and a niced browser yields them to the server's run when
it has one. The default, 0, runs both on equal terms, as the browser tests do.

It prints medians over the repetitions beside the load average and writes
``benchmarks/results/cold_start.json`` (``cold_start_nice19.json`` with ``--clients-nice 19``).
Target (issue 22): first render <= 2 s.

Run: ``python benchmarks/bench_cold_start.py [--repeats 3] [--timeout 120] [--clients-nice 0]``
(needs /usr/bin/chromium and playwright, like the browser tests).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sessions import (  # noqa: E402
    ARGS,
    CHROMIUM,
    HEADLINE,
    RESULTS,
    ROOT,
    AutogroupNicer,
    niced_chromium,
    start_server,
)


def _first_runs(log: Path) -> tuple:
    """The server's time of the session's first two page runs in the run log (the held run and
    the full one, ``ui.first_paint``), each None when missing."""
    if not log.exists():
        return None, None
    pages = [json.loads(line) for line in log.read_text().splitlines()]
    pages = sorted((r for r in pages if r["what"] == "page"), key=lambda r: r["start"])
    held = [round(r["end"] - r["start"], 3) for r in pages if r.get("held")][:1] or [None]
    full = [round(r["end"] - r["start"], 3) for r in pages if not r.get("held")][:1] or [None]
    return held[0], full[0]


#: The page in full: its q profile (a plotly chart) drawn.
CHARTS = "() => !!document.querySelector('[data-testid=stPlotlyChart] .js-plotly-plot')"


#: The floor's page: the headline's metric alone.
FLOOR_APP = 'import streamlit as st\n\nst.metric("Vendi score (q = 1)", "1.00")\n'


def _floor_script(work: Path) -> Path:
    """The floor's one-line app, with the app's ``.streamlit/config.toml`` beside it."""
    folder = work / "floor"
    (folder / ".streamlit").mkdir(parents=True, exist_ok=True)
    (folder / ".streamlit" / "config.toml").write_text((ROOT / ".streamlit" / "config.toml").read_text())
    script = folder / "floor_app.py"
    script.write_text(FLOOR_APP)
    return script


@contextlib.contextmanager
def _served(log: Path, timeout_s: float, env: dict | None = None, script: Path | None = None):
    """A fresh server (the app, or ``script``: the floor) for the block; its URL. Stopped after it."""
    proc, url = start_server(log, timeout_s, env, script=script)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _open(pw, url: str, timeout_s: float, profile: Path | None, charts: bool = True,
          chromium: str = CHROMIUM) -> tuple[float, float]:
    """Seconds from ``goto`` to the drawn headline and to the drawn charts (when ``charts``), in a
    returning profile or a fresh context."""
    if profile is not None:
        context = pw.chromium.launch_persistent_context(str(profile), executable_path=chromium, args=ARGS,
                                                        headless=True, viewport={"width": 1400, "height": 1000})
        browser = None
    else:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.pages[0] if context.pages else context.new_page()
        t0 = time.perf_counter()
        page.goto(f"{url}/?demo=digits", timeout=timeout_s * 1000)
        page.wait_for_function(HEADLINE, arg="q = 1)", timeout=timeout_s * 1000, polling=50)
        first = time.perf_counter() - t0
        if not charts:
            return first, float("nan")
        page.wait_for_function(CHARTS, timeout=timeout_s * 1000, polling=50)
        return first, time.perf_counter() - t0
    finally:
        context.close()
        if browser is not None:
            browser.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per step")
    parser.add_argument("--clients-nice", type=int, default=0,
                        help="niceness of the browsers (0: as the server; 19: as on the visitors' own machines)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"bench_cold_start: Chromium not found at {CHROMIUM}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    RESULTS.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-cold-start-"))
    store, profile, floor_profile = work / "store", work / "profile", work / "floor-profile"
    floor_script = _floor_script(work)
    env = {"DIVERSITY_CACHE_DIR": str(store)}
    rows: dict = {"returning": [], "first_visit": []}
    chromium = niced_chromium(args.clients_nice, work)
    floor_log = RESULTS / "cold_start_floor.log"
    with sync_playwright() as pw, AutogroupNicer(args.clients_nice):
        # fill the store and the returning profiles' HTTP caches: one visit on a server of its own
        with _served(RESULTS / "cold_start_warmup.log", args.timeout, env) as url:
            _open(pw, url, args.timeout, profile, chromium=chromium)
        with _served(floor_log, args.timeout, script=floor_script) as url:
            _open(pw, url, args.timeout, floor_profile, charts=False, chromium=chromium)
        for rep in range(args.repeats):
            for kind in rows:
                log = work / f"runs-{kind}-{rep}.jsonl"
                load = os.getloadavg()[0]
                t_start = time.perf_counter()
                with _served(RESULTS / "cold_start_server.log", args.timeout,
                             {**env, "DIVERSITY_RUN_LOG": str(log)}) as url:
                    ready = time.perf_counter() - t_start
                    seconds, full = _open(pw, url, args.timeout, profile if kind == "returning" else None,
                                          chromium=chromium)
                held_run, full_run = _first_runs(log)
                # the floor, restarted and opened the same way, in the same kind of browser
                with _served(floor_log, args.timeout, script=floor_script) as url:
                    floor, _ = _open(pw, url, args.timeout, floor_profile if kind == "returning" else None,
                                     charts=False, chromium=chromium)
                row = {"first_render_s": round(seconds, 3), "charts_s": round(full, 3),
                       "floor_first_render_s": round(floor, 3),
                       "server_held_run_s": held_run, "server_full_run_s": full_run,
                       "server_ready_s": round(ready, 2), "load_before": round(load, 2)}
                rows[kind].append(row)
                print(f"{kind:>11} #{rep + 1}: first render {seconds:.2f} s (floor {floor:.2f} s), charts {full:.2f} s "
                      f"(server's held run {held_run} s, full run {full_run} s; server answered {ready:.1f} s after "
                      f"its start; load {load:.1f})", flush=True)
    report = {"cpus": os.cpu_count(), "target_first_render_s": 2.0, "clients_nice": args.clients_nice,
              "runs": rows, "median": {}}
    for kind, values in rows.items():
        report["median"][kind] = {
            "first_render_s": round(statistics.median(r["first_render_s"] for r in values), 3),
            "floor_first_render_s": round(statistics.median(r["floor_first_render_s"] for r in values), 3),
            "ratio_to_floor": round(statistics.median(r["first_render_s"] / r["floor_first_render_s"]
                                                      for r in values), 3),
            "charts_s": round(statistics.median(r["charts_s"] for r in values), 3),
            "server_held_run_s": round(statistics.median(r["server_held_run_s"] or float("nan") for r in values), 3),
            "server_full_run_s": round(statistics.median(r["server_full_run_s"] or float("nan") for r in values), 3),
        }
        m = report["median"][kind]
        print(f"{kind:>11}: first render median {m['first_render_s']} s (target <= 2 s; floor {m['floor_first_render_s']} s, "
              f"app / floor {m['ratio_to_floor']}), charts {m['charts_s']} s, "
              f"server's held run {m['server_held_run_s']} s, full run {m['server_full_run_s']} s", flush=True)
    out = RESULTS / ("cold_start.json" if args.clients_nice <= 0 else f"cold_start_nice{args.clients_nice}.json")
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
