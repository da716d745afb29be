"""A small job while three sessions run heavy ones (issue 22): dense magnitude of 500 points.

The app's worker pool (:func:`diversity_core.workers.start_pool`, as ``diversity app`` starts
it: its default worker count, BLAS/OpenMP/torch threads per job limited to the cores' share)
runs

1. ``alone``: the magnitude curve of 500 points (``compare_magnitude``, dense path, every
   default), median of ``--repeats`` runs, nothing else running;
2. ``contended``: the same while three heavy jobs of other "sessions" run (each the magnitude of
   ``--heavy-n`` points, repeated until told to stop), median of ``--repeats`` runs.

and prints ``contended / alone`` (target <= 3). For the record it also times the old setting
(``--old``): the same four jobs as threads of one process with the default BLAS thread pools,
as the app ran them before issue 22. Writes ``benchmarks/results/contention.json``.

Usage: ``python benchmarks/bench_contention.py [--repeats 3] [--heavy-n 2500] [--old]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
RESULTS = HERE / "results" / "contention.json"
TARGET = 3.0


def small_job(progress):
    """The magnitude curve of 500 points (dense), timed on the worker."""
    from diversity_core.magnitude import compare_magnitude

    X = np.random.default_rng(0).normal(size=(500, 32))
    start = time.perf_counter()
    compare_magnitude({"a": X})
    return time.perf_counter() - start


def heavy_job(n: int, seconds: float):
    """A heavy session's job: magnitude curves of n points, repeated for about ``seconds``."""

    def fn(progress):
        from diversity_core.magnitude import compare_magnitude

        X = np.random.default_rng(1).normal(size=(n, 32))
        end = time.monotonic() + seconds
        rounds = 0
        while time.monotonic() < end:
            compare_magnitude({"a": X}, n_scales=8)
            rounds += 1
            progress(rounds, rounds + 1, "heavy")
        return rounds

    return fn


def wall(job) -> float:
    """Wall time of one submitted job, from submission to result."""
    start = time.perf_counter()
    job.result()
    return time.perf_counter() - start


def pooled(repeats: int, heavy_n: int) -> dict:
    from diversity_core.workers import start_pool

    pool = start_pool()
    try:
        pool.submit(small_job, label="warm-up").result()  # imports on every worker
        for _ in range(pool.workers()):
            pool.submit(small_job, label="warm-up").result()
        alone = [wall(pool.submit(small_job, label="alone")) for _ in range(repeats)]
        duration = 30.0 + 10.0 * repeats * statistics.median(alone)
        heavy = [pool.submit(heavy_job(heavy_n, duration), label=f"heavy {i}") for i in range(3)]
        deadline = time.monotonic() + 120
        while sum(1 for h in heavy if h.reports()) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)  # until the three heavy jobs are running
        time.sleep(2.0)
        contended = [wall(pool.submit(small_job, label="contended")) for _ in range(repeats)]
        for h in heavy:
            h.cancel()
        return {"workers": pool.workers(), "threads_per_job": pool.threads, "alone_s": alone,
                "contended_s": contended, "ratio": statistics.median(contended) / statistics.median(alone)}
    finally:
        pool.close()


def old_setting(repeats: int, heavy_n: int) -> dict:
    """The four jobs as threads of one process, default BLAS pools (the app before issue 22)."""
    alone = [small_job(None) for _ in range(repeats)]
    stop = threading.Event()

    def heavy():
        from diversity_core.magnitude import compare_magnitude

        X = np.random.default_rng(1).normal(size=(heavy_n, 32))
        while not stop.is_set():
            compare_magnitude({"a": X}, n_scales=8)

    threads = [threading.Thread(target=heavy, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(3.0)
    contended = [small_job(None) for _ in range(repeats)]
    stop.set()
    for t in threads:
        t.join()
    return {"alone_s": alone, "contended_s": contended,
            "ratio": statistics.median(contended) / statistics.median(alone)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--heavy-n", type=int, default=2500)
    parser.add_argument("--old", action="store_true", help="also time the old in-process setting")
    args = parser.parse_args()
    load = os.getloadavg()
    out = {"pool": pooled(args.repeats, args.heavy_n), "load_before": load, "cores": os.cpu_count(),
           "target_ratio": TARGET}
    if args.old:
        out["old"] = old_setting(args.repeats, args.heavy_n)
    out["load_after"] = os.getloadavg()
    p = out["pool"]
    print(f"dense magnitude of 500 points: alone {statistics.median(p['alone_s']):.2f} s, with three heavy jobs "
          f"{statistics.median(p['contended_s']):.2f} s: {p['ratio']:.2f}x (target <= {TARGET:.0f}x); "
          f"{p['workers']} workers x {p['threads_per_job']} thread(s). Load {load[0]:.2f} before.")
    if args.old:
        o = out["old"]
        print(f"old setting (threads of one process, default BLAS pools): alone {statistics.median(o['alone_s']):.2f} s, "
              f"contended {statistics.median(o['contended_s']):.2f} s: {o['ratio']:.2f}x")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2))
    return 0 if p["ratio"] <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
