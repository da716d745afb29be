"""Benchmark of the RND score (issue 6): the digits demo with the default MLP preset on the CPU.

Data: sklearn's digits (n = 1797, 64 features). Settings: ``rnd_score`` defaults (MLP 64 -> 256
-> 256 -> 64, 200 training items, batch 50, SGD lr 0.01 momentum 0.9) with 10 runs x 50 epochs.

Each configuration runs in a fresh Python process (OpenMP reads its environment when torch is
imported): torch's default thread count, ``torch.set_num_threads(1)`` and ``(2)``, each with
OpenMP's default wait policy and with ``OMP_WAIT_POLICY=PASSIVE``. GNU OpenMP's default spins
while waiting at barriers, which on a machine shared with other processes makes two threads
several times slower; passive waiting avoids that. For each configuration:

- cold: the first call in the process (one-time costs such as lazy imports, not torch's import);
- warm: the best and the median of ``--repeats`` further calls;
- per epoch: warm median / 50 (one epoch of all 10 runs) and per run-epoch: / 500;
- CPU seconds of the warm calls, and the load average, because other processes on a shared
  machine inflate wall-clock times.

Target: warm time under 20 s on a 2-core CPU. Writes ``benchmarks/results/rnd.json``. Usage::

    python benchmarks/bench_rnd.py [--repeats 3] [--runs 10] [--epochs 50]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "rnd.json"
TARGET_S = 20.0


def worker(threads: int, repeats: int, runs: int, epochs: int) -> dict:
    """Time ``rnd_score`` in this process (torch imported here, after the environment is set)."""
    sys.path.insert(0, str(HERE.parent))
    import numpy as np
    import torch
    from sklearn.datasets import load_digits

    from diversity_core.rnd import rnd_score

    if threads > 0:
        torch.set_num_threads(threads)
    X = load_digits().data

    def timed() -> dict:
        wall, cpu = time.perf_counter(), time.process_time()
        res = rnd_score(X, runs=runs, epochs=epochs, rng=0, device="cpu")
        return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "res": res}

    load_before = os.getloadavg()[0]
    cold = timed()
    warm = [timed() for _ in range(repeats)]
    walls = [w["wall_s"] for w in warm]
    median = statistics.median(walls)
    res = warm[-1]["res"]
    return {
        "threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        "cold_s": cold["wall_s"],
        "warm_best_s": min(walls),
        "warm_median_s": median,
        "warm_all_s": walls,
        "warm_cpu_s": [w["cpu_s"] for w in warm],
        "per_epoch_ms": 1e3 * median / epochs,
        "per_run_epoch_ms": 1e3 * median / (epochs * runs),
        "score": res.score,
        "ci": [res.confidence_interval.low, res.confidence_interval.high],
        "meets_target": median < TARGET_S,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


def run_config(threads: int, passive: bool, args) -> dict:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if passive:
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "--threads",
        str(threads),
        "--repeats",
        str(args.repeats),
        "--runs",
        str(args.runs),
        "--epochs",
        str(args.epochs),
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.threads, args.repeats, args.runs, args.epochs)))
        return 0

    rows = {}
    for passive in (False, True):
        for threads, name in ((0, "default"), (1, "threads_1"), (2, "threads_2")):
            key = f"{name}{'_passive' if passive else ''}"
            rows[key] = run_config(threads, passive, args)
            print(f"  done {key}", file=sys.stderr, flush=True)
    out = {
        "benchmark": "rnd_score on sklearn digits (1797 x 64), default MLP preset",
        "runs": args.runs,
        "epochs": args.epochs,
        "repeats": args.repeats,
        "target_s": TARGET_S,
        "machine": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "results": rows,
    }
    print(f"RND score, digits 1797 x 64, MLP, {args.runs} runs x {args.epochs} epochs (seconds)")
    print(
        f"{'config':<20} {'threads':>7} {'cold':>6} {'best':>6} {'median':>7} {'ms/epoch':>9} "
        f"{'ms/run-epoch':>12} {'cpu':>6} {'load':>5} {'<20 s':>6}  score"
    )
    for key, row in rows.items():
        print(
            f"{key:<20} {row['threads']:>7} {row['cold_s']:>6.2f} {row['warm_best_s']:>6.2f} "
            f"{row['warm_median_s']:>7.2f} {row['per_epoch_ms']:>9.1f} {row['per_run_epoch_ms']:>12.2f} "
            f"{statistics.median(row['warm_cpu_s']):>6.2f} {row['load_average_before']:>5.1f} "
            f"{str(row['meets_target']):>6}  {row['score']:.4f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
