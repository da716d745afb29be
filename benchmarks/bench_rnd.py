"""Benchmark of the RND score (issue 6): the digits demo with the default MLP preset on the CPU.

Data: sklearn's digits (n = 1797, 64 features). Settings: ``rnd_score`` defaults (MLP 64 -> 256
-> 256 -> 64, 200 training items, batch 50, SGD lr 0.01 momentum 0.9) with 10 runs x 50 epochs.

For torch's default thread count, then ``torch.set_num_threads(1)`` and ``(2)``:

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
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402

from diversity_core.rnd import rnd_score  # noqa: E402

RESULTS = HERE / "results" / "rnd.json"
TARGET_S = 20.0


def machine() -> dict:
    """What the numbers were measured on."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "torch_default_threads": torch.get_num_threads(),
    }


def timed(X: np.ndarray, runs: int, epochs: int) -> dict:
    """One call: wall and CPU seconds, and the score."""
    wall, cpu = time.perf_counter(), time.process_time()
    res = rnd_score(X, runs=runs, epochs=epochs, rng=0, device="cpu")
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "score": res.score,
        "ci": [res.ci_low, res.ci_high],
    }


def bench(X: np.ndarray, threads, repeats: int, runs: int, epochs: int, first: bool) -> dict:
    if threads is not None:
        torch.set_num_threads(threads)
    load_before = os.getloadavg()[0]
    cold = timed(X, runs, epochs) if first else None
    warm = [timed(X, runs, epochs) for _ in range(repeats)]
    walls = [w["wall_s"] for w in warm]
    median = statistics.median(walls)
    return {
        "threads": torch.get_num_threads(),
        "cold_s": None if cold is None else cold["wall_s"],
        "warm_best_s": min(walls),
        "warm_median_s": median,
        "warm_all_s": walls,
        "warm_cpu_s": [w["cpu_s"] for w in warm],
        "per_epoch_ms": 1e3 * median / epochs,
        "per_run_epoch_ms": 1e3 * median / (epochs * runs),
        "score": warm[-1]["score"],
        "ci": warm[-1]["ci"],
        "meets_target": median < TARGET_S,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=50)
    args = parser.parse_args()

    from sklearn.datasets import load_digits

    X = load_digits().data
    info = machine()
    rows = {
        "default": bench(X, None, args.repeats, args.runs, args.epochs, first=True),
        "threads_1": bench(X, 1, args.repeats, args.runs, args.epochs, first=False),
        "threads_2": bench(X, 2, args.repeats, args.runs, args.epochs, first=False),
    }
    out = {
        "benchmark": "rnd_score on sklearn digits (1797 x 64), default MLP preset",
        "runs": args.runs,
        "epochs": args.epochs,
        "repeats": args.repeats,
        "target_s": TARGET_S,
        "machine": info,
        "results": rows,
    }
    print(f"RND score, digits {X.shape[0]} x {X.shape[1]}, MLP, {args.runs} runs x {args.epochs} epochs")
    print(
        f"{'threads':>8} {'cold s':>8} {'best s':>8} {'median s':>9} {'ms/epoch':>9} {'ms/run-epoch':>13} "
        f"{'cpu s':>7} {'load':>5} {'< 20 s':>7}  score"
    )
    for row in rows.values():
        cold = "-" if row["cold_s"] is None else f"{row['cold_s']:.2f}"
        print(
            f"{row['threads']:>8} {cold:>8} {row['warm_best_s']:>8.2f} {row['warm_median_s']:>9.2f} "
            f"{row['per_epoch_ms']:>9.1f} {row['per_run_epoch_ms']:>13.2f} {statistics.median(row['warm_cpu_s']):>7.2f} "
            f"{row['load_average_before']:>5.1f} {str(row['meets_target']):>7}  {row['score']:.4f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
