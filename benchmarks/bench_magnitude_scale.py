"""Benchmark of magnitude beyond the dense limit (issue 12): the matrix-free path at large n.

Runs ``magnitude_function(X)`` (t_conv and 30 scales) with ``method="auto"`` under a memory
budget (default 4 GB), so that the n x n matrices do not fit and the matrix-free path is taken,
on a Gaussian mixture (10 clusters, as ``bench_magnitude.py``) with n = 50,000 and d = 64 by
default. Records the wall and CPU time, the peak resident memory, the number of passes over the
distances, t_conv, the curve with its stated errors and methods, and the load average before
and after (the machine may be shared). With ``--check-n N`` it first compares the matrix-free
and the dense curves of an N-point set with float64 Cholesky solves (stated against true error).

Writes ``benchmarks/results/magnitude_scale.json`` (updated as it goes). Usage::

    python benchmarks/bench_magnitude_scale.py [--n 50000] [--d 64] [--budget 4G] [--check-n 5000 [--check-only]]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import scipy.linalg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_magnitude import gaussian_mixture, machine  # noqa: E402

from diversity_core._config import config_context  # noqa: E402
from diversity_core.magnitude import magnitude_function  # noqa: E402
from diversity_core.magnitude._free import _FreeSpace  # noqa: E402
from diversity_core.magnitude._metric import _euclidean  # noqa: E402

RESULTS = HERE / "results" / "magnitude_scale.json"


def _passes_counter():
    """Count the passes over the distances (wraps _FreeSpace._map)."""
    count = {"passes": 0}
    original = _FreeSpace._map

    def counted(self, fn):
        count["passes"] += 1
        return original(self, fn)

    _FreeSpace._map = counted
    return count


def _truth(X: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Mag(t) by float64 Cholesky with two steps of iterative refinement (the reference)."""
    D, _ = _euclidean(X)
    ones = np.ones(X.shape[0])
    values = np.ones(ts.size)
    for j, t in enumerate(ts):
        if t <= 0:
            continue
        Z = np.exp(-t * D)
        factor = scipy.linalg.cho_factor(Z)
        w = scipy.linalg.cho_solve(factor, ones)
        for _ in range(2):
            w += scipy.linalg.cho_solve(factor, ones - Z @ w)
        values[j] = w.sum() + w @ (ones - Z @ w)  # variational formula: error r^T Z^-1 r
    return values


def check(n: int, d: int, budget: str) -> dict:
    """Matrix-free and dense on n points against float64 Cholesky: the stated errors must cover the true ones."""
    X = gaussian_mixture(n, d, seed=11 + d)
    dense = magnitude_function(X, method="dense")
    with config_context(memory_budget=budget):
        start = time.perf_counter()
        free = magnitude_function(X, method="auto")
        seconds = time.perf_counter() - start
    out = {"n": n, "d": d, "method": free.method, "seconds": seconds,
           "t_conv_rel_diff": abs(free.t_conv - dense.t_conv) / dense.t_conv,
           "methods": dict(Counter(free.methods))}
    for name, func in (("free", free), ("dense", dense)):
        # each on its own grid: the two t_conv differ by ~1e-13, which moves Mag by ~1e-10 at the top
        truth = _truth(X, func.ts)
        slack = 4 * np.finfo(float).eps * truth  # rounding of the reference itself
        true = np.abs(func.values - truth)
        out[name] = {"max_true_rel_error": float(np.max(true[1:] / truth[1:])),
                     "max_stated_rel_error": float(func.max_rel_error),
                     "max_true_over_stated": float(np.max(true[1:] / (func.errors[1:] + slack[1:]))),
                     "stated_covers_truth": bool(np.all(true <= func.errors + slack))}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=50000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--budget", default="4G")
    parser.add_argument("--check-n", type=int, default=0)
    parser.add_argument("--check-only", action="store_true", help="only the --check-n comparison")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    out_path = Path(args.out)
    report = {"machine": machine(), "budget": args.budget, "check": None, "large": None}

    def save() -> None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(report, indent=2) + "\n")

    if args.check_n:
        # a budget below the dense path's 24 n^2 bytes forces the matrix-free one
        report["check"] = check(args.check_n, args.d, str(int(0.6 * 24 * args.check_n ** 2)))
        save()
        print(f"check n={args.check_n}: {report['check']}", flush=True)
        if args.check_only:
            return 0

    count = _passes_counter()
    X = gaussian_mixture(args.n, args.d, seed=7 + args.d)
    ticks = []

    def progress(done, total, message):
        ticks.append((time.perf_counter() - start, done, total, message))
        print(f"[{time.perf_counter() - start:8.1f}s] {done}/{total} {message}", file=sys.stderr, flush=True)

    load_start = os.getloadavg()
    start, cpu = time.perf_counter(), time.process_time()
    with config_context(memory_budget=args.budget):
        func = magnitude_function(X, progress=progress)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    rel = func.errors[1:] / func.values[1:]
    report["large"] = {
        "n": args.n, "d": args.d, "method": func.method, "seconds": seconds, "cpu_seconds": cpu_seconds,
        "t_conv_seconds": next((tk[0] for tk in ticks if tk[1] == 1), None),
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "passes_over_distances": count["passes"], "t_conv": func.t_conv,
        "ts": func.ts.tolist(), "values": func.values.tolist(), "errors": func.errors.tolist(),
        "max_stated_rel_error": float(np.max(rel)), "methods": dict(Counter(func.methods)),
        "exact": int(np.count_nonzero(func.exact)), "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    save()
    r = report["large"]
    print(f"n={args.n} d={args.d} {r['method']}: {seconds:.0f}s wall ({cpu_seconds:.0f}s cpu, t_conv at "
          f"{r['t_conv_seconds']:.0f}s), peak RSS {r['peak_rss_gb']:.2f} GB, {r['passes_over_distances']} passes, "
          f"max stated rel err {r['max_stated_rel_error']:.1e}, load {load_start[0]:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
