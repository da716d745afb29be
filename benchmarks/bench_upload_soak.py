"""The server's memory under many distinct uploads (issue 40, item 10): RSS must level off under the budget.

Each visitor who uploads a new file used to leave its dataset behind in the app's shared caches:
a working view or a search result that *is* the loaded dataset was counted as almost nothing
(its arrays were the call's argument, "held elsewhere"), so the byte-bounded pools never evicted
it, and every upload stayed, after its session had ended too. Forty distinct 1.8 MB CSVs took
the server from 0.29 to 1.55 GB under a 1 GiB budget.

The script runs the real app (``app.py`` and its pages) in this process through Streamlit's
``AppTest``, one ``AppTest`` per visitor session (no browser is needed: on this machine there is
no Chromium), and uploads ``--uploads`` distinct CSV files (``--rows`` x ``--cols`` floats and a
group column, about 1.8 MB each by default) spread over ``--sessions`` sessions, one after the
other, each on the default Scores page. Between sessions the finished session ends as the server
ends one (its session-scoped caches are released, which is what ``ui.cache`` listens to, and its
state is dropped). After every upload it samples

- ``rss_mib``: this process's resident memory (``VmRSS``), the server's;
- ``cache_mib``: the bytes the app's caches count (every pool of ``ui.cache`` and the core's
  feature cache);
- ``uploads_alive``: datasets loaded from uploads still alive in the process (every 10th upload
  and at each session's end; a walk of the whole heap);
- ``run_s``: the time of the upload's script run.

It prints every 10th point (and the last), the RSS at the end against the memory budget
(``--budget``, set as ``DIVERSITY_MEMORY_BUDGET``) and the growth over the second half of the last
session's uploads (MiB per upload: ~0 once the caches are full), and writes
``benchmarks/results/upload_soak.json``.

Run: ``python benchmarks/bench_upload_soak.py [--uploads 100] [--sessions 2] [--budget 1G]``
(100 uploads take about 8 minutes on the busy 2-core development machine, 40 about 3). A small
budget (``--budget 64M``: a 12.8 MiB "data" pool) shows the pools filling and RSS levelling off
within a session; results of 2026-12-02 in ``docs/team.md``.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
#: The session id of every AppTest run (streamlit.testing.v1.local_script_runner).
APPTEST_SESSION_ID = "test session id"


def rss_mib() -> float:
    """This process's resident memory in MiB (``VmRSS`` of ``/proc/self/status``)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def csv_bytes(index: int, rows: int, cols: int) -> bytes:
    """A distinct CSV upload: ``rows`` x ``cols`` normal floats (seeded by ``index``) and a group column."""
    import numpy as np

    rng = np.random.default_rng(1000 + index)
    X = rng.normal(size=(rows, cols))
    groups = np.array(["a", "b", "c"])[rng.integers(0, 3, size=rows)]
    out = io.StringIO()
    out.write(",".join([f"f{j}" for j in range(cols)] + ["group"]) + "\n")
    for row, g in zip(X, groups):
        out.write(",".join(f"{v:.15g}" for v in row) + f",{g}\n")
    return out.getvalue().encode()


def cache_mib() -> float:
    """Bytes the app's caches count: every ``ui.cache`` pool (tasks included) and the core's feature cache."""
    from diversity_core import featurizers
    from ui import cache

    total = sum(info["bytes"] for info in cache.cache_info().values())
    total += int(featurizers.cache_info()["bytes"])
    return total / 2**20


def uploads_alive() -> int:
    """Datasets loaded from uploads that are still alive in this process (a full walk of the heap)."""
    from diversity_core.data import Dataset

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Dataset) and o.source.startswith("upload:"))


def end_session(at) -> None:
    """End an AppTest session as the server ends a disconnected one: release its session-scoped caches."""
    from streamlit.runtime.caching import clear_session_resource_cache

    # AppTest runs every session under one id; the server calls this when a session disconnects
    clear_session_resource_cache(APPTEST_SESSION_ID)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--uploads", type=int, default=100)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--cols", type=int, default=32)
    parser.add_argument("--budget", default="1G", help="DIVERSITY_MEMORY_BUDGET of the server (default 1G)")
    parser.add_argument("--out", default=str(RESULTS / "upload_soak.json"))
    args = parser.parse_args()

    os.environ["DIVERSITY_MEMORY_BUDGET"] = args.budget
    os.environ.setdefault("DIVERSITY_WORKERS", "off")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # a result store of its own: the user's store is neither read (warm spectra) nor filled
    os.environ.setdefault("DIVERSITY_CACHE_DIR", tempfile.mkdtemp(prefix="upload-soak-store-"))
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    from streamlit.testing.v1 import AppTest

    from diversity_core._config import format_bytes, memory_budget

    budget = memory_budget()
    per_session = -(-args.uploads // args.sessions)
    points = []
    start_rss = None
    index = 0
    for session in range(args.sessions):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        if not [r for r in at.sidebar.radio if r.key == "source"]:
            at.run()  # a session's first Scores run holds the sidebar (ui.first_paint): the next draws it
        if start_rss is None:
            start_rss = rss_mib()
            points.append({"upload": 0, "session": session, "rss_mib": start_rss, "cache_mib": cache_mib(),
                           "run_s": None})
        at.sidebar.radio(key="source").set_value("Upload").run()
        for _ in range(min(per_session, args.uploads - index)):
            index += 1
            body = csv_bytes(index, args.rows, args.cols)
            t0 = time.perf_counter()
            at.sidebar.file_uploader(key="upload").upload(f"soak_{index:03d}.csv", body).run()
            run_s = time.perf_counter() - t0
            if at.exception:
                raise RuntimeError(f"upload {index}: {at.exception[0].value}")
            ds = at.session_state["dataset"]
            if ds.name != f"soak_{index:03d}.csv":
                raise RuntimeError(f"upload {index} was not loaded ({ds.name}): {[e.value for e in at.error]}")
            points.append({"upload": index, "session": session, "rss_mib": rss_mib(), "cache_mib": cache_mib(),
                           "run_s": run_s, "upload_mib": len(body) / 2**20,
                           "uploads_alive": uploads_alive() if index % 10 == 0 else None})
        end_session(at)
        del at
        gc.collect()
        points.append({"upload": index, "session": session, "ended": True, "rss_mib": rss_mib(),
                       "cache_mib": cache_mib(), "run_s": None, "uploads_alive": uploads_alive()})

    print(f"{args.uploads} distinct CSV uploads ({points[1]['upload_mib']:.1f} MiB each) over {args.sessions} "
          f"sessions, memory budget {format_bytes(budget)}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'upload':>6} {'session':>7} {'RSS MiB':>8} {'caches MiB':>10} {'uploads alive':>13} {'run s':>6}")
    for p in points:
        if p.get("ended") or p["upload"] % 10 == 0 or p is points[-1]:
            run = "" if p["run_s"] is None else f"{p['run_s']:.2f}"
            alive = "" if p.get("uploads_alive") is None else str(p["uploads_alive"])
            tag = " (session ended)" if p.get("ended") else ""
            print(f"{p['upload']:>6} {p['session']:>7} {p['rss_mib']:>8.0f} {p['cache_mib']:>10.1f} {alive:>13} "
                  f"{run:>6}{tag}")
    uploads = [p for p in points if p["run_s"] is not None]
    # the growth once the caches are full: over the last half of the last session's uploads
    last = [p for p in uploads if p["session"] == uploads[-1]["session"]]
    tail = last[len(last) // 2:]
    slope = (tail[-1]["rss_mib"] - tail[0]["rss_mib"]) / max(1, tail[-1]["upload"] - tail[0]["upload"])
    peak = max(p["rss_mib"] for p in points)
    grown = peak - start_rss
    print(f"RSS: {start_rss:.0f} MiB at the start, {points[-1]['rss_mib']:.0f} MiB at the end, {peak:.0f} MiB at "
          f"most ({grown:.0f} MiB above the start, {grown / (budget / 2**20):.2f} of the budget); last session's "
          f"second half: {slope:+.2f} MiB per upload; run time {uploads[0]['run_s']:.2f} s first, {uploads[-1]['run_s']:.2f} s last")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "uploads": args.uploads, "sessions": args.sessions, "rows": args.rows, "cols": args.cols,
        "budget_bytes": budget, "load_average": os.getloadavg()[0], "start_rss_mib": start_rss,
        "end_rss_mib": points[-1]["rss_mib"], "peak_rss_mib": peak, "last_session_second_half_mib_per_upload": slope,
        "points": points,
    }, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
