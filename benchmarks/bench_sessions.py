"""How the app serves several visitors at once (issue 15, item 9): first render and a change of q.

For each number of sessions N (default 1, 5, 10) the script starts a fresh ``streamlit run
app.py`` on a free 127.0.0.1 port (cold caches: the first visitors share the work through the
``st.cache_data``/``st.cache_resource`` caches and their per-key compute locks), opens N
headless Chromium pages (Playwright, one browser context each: N Streamlit sessions) on the
Scores page of the digits demo at the same moment, and measures per session

- ``first_render_s``: from ``goto`` until the headline metric is shown and the run finished;
- ``q_change_s``: from pressing the q slider's right arrow until the headline shows the new q.

It prints the median and maximum per N beside the load average of the machine (other jobs
slow the figures down), and writes ``benchmarks/results/sessions.json``. Every wait is bounded
(``--timeout`` seconds per session and step); a session that runs out counts as a failure.

Ten headless browsers saturate a 2-core machine by themselves, so they run at the lowest CPU
priority (``--clients-nice``, 19 by default: visitors' browsers are on their own machines; the
niceness is also set on the browsers' autogroups, see :func:`niced_chromium`) and the
server also measures its own time per script run (issue 22): it runs with ``DIVERSITY_RUN_LOG`` (``ui.runlog``), and for
each session the script prints the server time of its first full run (``first render run``) and
of the runs that drew the new q (``q change run``: from the first to the last fragment or page
run of that session whose q is not 1), as the 50th and 95th percentiles over sessions. The
result store is warm (``DIVERSITY_CACHE_DIR``: one folder for the whole benchmark, filled by
a warm-up session on a server of its own), the in-memory caches of each new server are cold,
and the server has its worker processes (``DIVERSITY_WORKERS=auto``) and is started as
``diversity app`` starts it (``python -m ui.serve app.py``).

Run: ``python benchmarks/bench_sessions.py [--sessions 1 5 10] [--timeout 180] [--clients-nice 19]``
(needs /usr/bin/chromium and playwright, like the browser tests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Optional

from diversity_core._config import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# the launch flags of tests/e2e/conftest.py
ARGS = list(CHROMIUM_ARGS)
HEADLINE = """(want) => {
  const m = [...document.querySelectorAll('.dx-headline-label-text, [data-testid=stMetricLabel]')]
    .find(e => e.innerText.includes('Vendi score (q ='));
  return !!m && m.innerText.includes(want) && !document.querySelector('[data-testid="stStatusWidget"]');
}"""


#: The headline names another q than 1 and the run has finished.
Q_MOVED = """() => {
  const m = [...document.querySelectorAll('.dx-headline-label-text, [data-testid=stMetricLabel]')]
    .find(e => e.innerText.includes('Vendi score (q ='));
  return !!m && !m.innerText.includes('q = 1)') && !document.querySelector('[data-testid="stStatusWidget"]');
}"""


#: The q slider's keyboard handle has the focus.
FOCUSED = """() => document.activeElement && document.activeElement.getAttribute('aria-label') === 'Order q'"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(log: Path, timeout: float, env: Optional[dict] = None, *,
                 script: Optional[Path] = None) -> tuple:
    """A fresh app server on 127.0.0.1 (``python -m ui.serve app.py``, as ``diversity app`` starts it;
    ``script``: ``streamlit run script`` in its folder instead); returns (process, url) once it answers."""
    port = _free_port()
    start = ["-m", "ui.serve", "app.py"] if script is None else ["-m", "streamlit", "run", script.name]
    proc = subprocess.Popen(
        [sys.executable, *start, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1"],
        cwd=ROOT if script is None else script.parent, stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "DIVERSITY_WORKERS": "auto", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"streamlit did not answer within {timeout:.0f} s; see {log}")


async def one_session(browser, url: str, timeout_ms: float, start: asyncio.Event) -> dict:
    """Open the Scores page, wait for the headline; then move q one step and wait again."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    out: dict = {"first_render_s": None, "q_change_s": None, "error": None}
    try:
        page = await context.new_page()
        await start.wait()
        t0 = time.perf_counter()
        # the Scores page is the default page: its address is the root (``/vendi`` opens a
        # "Page not found" dialog that takes the keyboard focus from the slider)
        await page.goto(f"{url}/?demo=digits", timeout=timeout_ms)
        await page.wait_for_function(HEADLINE, arg="q = 1)", timeout=timeout_ms, polling=100)
        out["first_render_s"] = time.perf_counter() - t0
        # as benchmarks/bench_app_redraw.py: let the page settle (the URL is rewritten after the first
        # run), then focus the q slider's keyboard handle and press once
        await page.wait_for_timeout(2000)
        slider = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"] input[type="range"]').first
        await slider.focus(timeout=timeout_ms)
        if not await page.evaluate(FOCUSED):
            raise RuntimeError("the q slider did not take the keyboard focus (a dialog open?)")
        t0 = time.perf_counter()
        await page.keyboard.press("ArrowRight")  # q = 1 -> the next order on the grid
        await page.wait_for_function(Q_MOVED, timeout=timeout_ms, polling=50)
        out["q_change_s"] = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - a timed-out session is a result, not a crash
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    finally:
        await context.close()
    return out


def niced_chromium(nice: int, folder: Path) -> str:
    """A launcher that runs Chromium at niceness ``nice`` (0: Chromium itself).

    Playwright starts the browser in a session of its own, and Chromium's zygotes start more
    sessions; with the kernel's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``)
    each session is a scheduling group of its own whose weight a process's niceness does not
    change, so ten niced browsers still took ten shares of the CPU against the server's one. The
    launcher therefore sets its session's autogroup niceness too; :class:`AutogroupNicer` does
    the same for the sessions the zygotes start.
    """
    if nice <= 0:
        return CHROMIUM
    wrapper = folder / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\necho {int(nice)} > /proc/self/autogroup 2>/dev/null\n'
                       f'exec nice -n {int(nice)} "{CHROMIUM}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _descendants(root: int) -> list:
    """The PIDs of every process below ``root`` (Linux ``/proc``)."""
    children: dict = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


class AutogroupNicer:
    """While open, give every autogroup below this process the niceness ``nice`` (every 0.1 s).

    The browsers' scheduling groups (see :func:`niced_chromium`) then yield to the server's, as
    browsers on the visitors' own machines would. ``self.groups`` holds the groups it set; the
    server and this script's own group are left as they are. Without ``/proc/*/autogroup``
    (autogroups off, or not Linux) it does nothing. A thread sweeps, so it serves both a ``with``
    (synchronous Playwright) and an ``async with``.
    """

    def __init__(self, nice: int):
        self.nice, self.groups, self._stop = int(nice), set(), threading.Event()
        self._thread = None

    def _sweep(self) -> None:
        own = _autogroup(os.getpid())
        for pid in _descendants(os.getpid()):
            group = _autogroup(pid)
            if group is None or group == own or group in self.groups:
                continue
            try:
                Path(f"/proc/{pid}/autogroup").write_text(str(self.nice))
                self.groups.add(group)
            except OSError:
                pass

    def _loop(self) -> None:
        while True:
            self._sweep()
            if self._stop.wait(0.1):
                return

    def __enter__(self):
        if self.nice > 0 and Path(f"/proc/{os.getpid()}/autogroup").exists():
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    async def __aenter__(self):
        return self.__enter__()

    async def __aexit__(self, *exc):
        self.__exit__(*exc)


def _autogroup(pid: int) -> Optional[str]:
    """The autogroup of a process (``/autogroup-N``), or None."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().split()[0]
    except (OSError, IndexError):
        return None


async def run_sessions(n: int, url: str, timeout_s: float, chromium: str = CHROMIUM, nice: int = 0) -> list:
    """N concurrent sessions against one server; their per-session figures."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw, AutogroupNicer(nice):
        browser = await pw.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        try:
            start = asyncio.Event()
            # a hard cap per session over its two bounded steps (a hung browser call cannot hold the run)
            cap = 2 * timeout_s + 60

            async def capped():
                try:
                    return await asyncio.wait_for(one_session(browser, url, timeout_s * 1000, start), cap)
                except TimeoutError:
                    return {"first_render_s": None, "q_change_s": None, "error": f"session over {cap:.0f} s"}

            tasks = [asyncio.create_task(capped()) for _ in range(n)]
            await asyncio.sleep(1.0)  # every context open before the clock starts
            start.set()
            return await asyncio.gather(*tasks)
        finally:
            await browser.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _summary(values: list) -> dict:
    ok = [v for v in values if v is not None]
    if not ok:
        return {"median": None, "max": None, "n": 0}
    return {"median": round(statistics.median(ok), 3), "max": round(max(ok), 3), "n": len(ok)}


def _p95(values: list) -> Optional[float]:
    """The 95th percentile (nearest rank) of the values, or None."""
    ok = sorted(v for v in values if v is not None)
    if not ok:
        return None
    return ok[min(len(ok) - 1, max(0, math.ceil(0.95 * len(ok)) - 1))]


def server_runs(log: Path) -> dict:
    """Per session, from the run log: the server's time of the run that drew its first render (the held
    run, ``ui.first_paint``, when there is one), of its first full run, and of its q change."""
    runs: dict = {}
    if log.exists():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            runs.setdefault(r["session"], []).append(r)
    first, full, qchange = [], [], []
    for rows in runs.values():
        rows.sort(key=lambda r: r["start"])
        pages = [r for r in rows if r["what"] == "page"]
        if pages:
            first.append(pages[0]["end"] - pages[0]["start"])
        whole = [r for r in pages if not r.get("held")]
        if whole:
            full.append(whole[0]["end"] - whole[0]["start"])
        moved = [r for r in rows if r.get("q") not in (None, "1.0", "1")]
        if moved:
            qchange.append(max(r["end"] for r in moved) - min(r["start"] for r in moved))
    return {"sessions": len(runs),
            "first_render_run_s": {"p50": _round(_median(first)), "p95": _round(_p95(first)), "n": len(first)},
            "first_full_run_s": {"p50": _round(_median(full)), "p95": _round(_p95(full)), "n": len(full)},
            "q_change_run_s": {"p50": _round(_median(qchange)), "p95": _round(_p95(qchange)), "n": len(qchange)}}


def _median(values: list) -> Optional[float]:
    return statistics.median(values) if values else None


def _round(v: Optional[float]) -> Optional[float]:
    return None if v is None else round(v, 3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 5, 10])
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per session and step")
    parser.add_argument("--out", default="sessions.json", help="file name under benchmarks/results/")
    parser.add_argument("--label", default="", help="a note kept in the JSON (e.g. 'before', 'after')")
    parser.add_argument("--clients-nice", type=int, default=19,
                        help="niceness of the browsers (0: same priority as the server)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"bench_sessions: Chromium not found at {CHROMIUM}", file=sys.stderr)
        return 2
    RESULTS.mkdir(exist_ok=True)
    report = {"label": args.label, "cpus": os.cpu_count(), "timeout_s": args.timeout,
              "clients_nice": args.clients_nice, "runs": []}
    store = Path(tempfile.mkdtemp(prefix="bench-sessions-store-"))
    chromium = niced_chromium(args.clients_nice, store)
    env = {"DIVERSITY_CACHE_DIR": str(store)}
    # warm the result store once (features, spectra), on a server of its own
    proc, url = start_server(RESULTS / "sessions_warmup.log", args.timeout, env)
    try:
        asyncio.run(run_sessions(1, url, args.timeout))
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    for n in args.sessions:
        load_before = os.getloadavg()
        run_log = RESULTS / f"sessions_{n}.runs.jsonl"
        run_log.unlink(missing_ok=True)
        proc, url = start_server(RESULTS / f"sessions_{n}.log", args.timeout,
                                 {**env, "DIVERSITY_RUN_LOG": str(run_log)})
        cpu0 = _cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        try:
            sessions = asyncio.run(run_sessions(n, url, args.timeout, chromium, args.clients_nice))
            wall = time.perf_counter() - t0
            cpu = _cpu_seconds(proc.pid) - cpu0
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        load_after = os.getloadavg()
        first = _summary([s["first_render_s"] for s in sessions])
        qch = _summary([s["q_change_s"] for s in sessions])
        errors = [s["error"] for s in sessions if s["error"]]
        server = server_runs(run_log)
        report["runs"].append({"sessions": n, "first_render_s": first, "q_change_s": qch, "errors": errors,
                               "server": server,
                               "wall_s": round(wall, 2), "server_cpu_s": round(cpu, 2),
                               "loadavg_before": [round(x, 2) for x in load_before],
                               "loadavg_after": [round(x, 2) for x in load_after], "per_session": sessions})
        print(f"{n:>3} sessions: first render median {first['median']} s, max {first['max']} s · "
              f"q change median {qch['median']} s, max {qch['max']} s · failures {len(errors)} · "
              f"server CPU {cpu:.1f} s in {wall:.1f} s · "
              f"load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
        fr, fu, qc = server["first_render_run_s"], server["first_full_run_s"], server["q_change_run_s"]
        print(f"      server time per run: first render p50 {fr['p50']} s, p95 {fr['p95']} s (target <= 1.5 s) · "
              f"first full run p50 {fu['p50']} s, p95 {fu['p95']} s · "
              f"q change p50 {qc['p50']} s, p95 {qc['p95']} s (target <= 0.1 s) · {server['sessions']} sessions logged",
              flush=True)
        for error in dict.fromkeys(errors):
            print(f"      failure: {error}", flush=True)
    out = RESULTS / Path(args.out).name
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
