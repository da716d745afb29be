"""Benchmark of the curation tools (issue 13) at n = 50,000 candidates.

Data: 50,000 items of 64 float64 features drawn around 200 Gaussian cluster centres (seed 0),
with 500 near-copies (tiny noise) of random items among them. Kernels: cosine (feature map,
dual path) and RBF (median-distance bandwidth, no feature map). Timed, each once in this
process, in this order:

- ``select``: :func:`select_diverse` with k = 1,000 for greedy VS_2, greedy log-determinant,
  k-centre and random, each including its 20-point ``VS_q`` curve. Target: under 60 s.
- ``contributions``: :func:`item_contributions` on the dual path (cosine), exact leave-one-out
  and first order.
- ``duplicates``: :func:`find_duplicates` exact (blocked) and approximate (pynndescent, the
  first call includes numba's compilation), without the scores.
- ``rarity``: :func:`rarity_scores` with 10 neighbours, exact and approximate.

A small selection runs first as a warm-up. Wall-clock and CPU seconds are recorded with the load average before and after each step:
on a machine shared with other jobs wall-clock times inflate with the load. Writes
``benchmarks/results/curation.json``. Usage::

    python benchmarks/bench_curation.py [--n 50000] [--d 64] [--k 1000] [--parts select contributions ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "curation.json"
TARGET_SELECT_S = 60.0
PARTS = ("select", "contributions", "duplicates", "rarity")


def make_data(n: int, d: int, seed: int = 0):
    """Clustered Gaussian data with 1 % near-copies appended in place of the last rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((200, d)) * 2.0
    X = centres[rng.integers(200, size=n)] + rng.standard_normal((n, d))
    m = n // 100
    src = rng.choice(n - m, size=m, replace=False)
    X[n - m:] = X[src] + 1e-3 * rng.standard_normal((m, d))
    return X


def timed(label: str, log: list, fn, *args, **kwargs) -> object:
    """Run ``fn(*args, **kwargs)`` once, print and record its wall and CPU seconds and the load around it."""
    load0 = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    row = {"step": label, "wall_s": round(time.perf_counter() - wall, 3),
           "cpu_s": round(time.process_time() - cpu, 3), "load_before": round(load0, 2),
           "load_after": round(os.getloadavg()[0], 2)}
    log.append(row)
    print(f"{label:<45} {row['wall_s']:>8.1f} s wall {row['cpu_s']:>8.1f} s cpu   load {row['load_before']:.1f}"
          f" -> {row['load_after']:.1f}", flush=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--d", type=int, default=64)
    parser.add_argument("--k", type=int, default=1_000)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    import numpy as np

    import diversity_core as dc

    X = make_data(args.n, args.d)
    log: list = []
    extra: dict = {}
    kernels = {"cosine": dc.get_kernel("cosine"), "rbf": dc.get_kernel("rbf").resolve(X)}
    # warm-up: BLAS thread pools and first-call allocations are not part of any step
    dc.select_diverse(X[:2000], 50, kernel=kernels["rbf"], objective="logdet", rng=0)
    if "select" in args.parts:
        for kname, kern in kernels.items():
            for method, objective in (("greedy", "vs2"), ("greedy", "logdet"), ("kcenter", "vs2"), ("random", "vs2")):
                label = f"select {kname} {method}" + (f" {objective}" if method == "greedy" else "") + f" k={args.k}"
                sel = timed(label, log, dc.select_diverse, X, args.k, kernel=kern, method=method,
                            objective=objective, rng=0)
                extra[label] = {"vs_1": sel.vendi(1), "vs_2": sel.vendi(2), "n_logdet": sel.n_logdet}
    if "contributions" in args.parts:
        for method in ("exact", "first_order"):
            res = timed(f"contributions cosine dual {method}", log, dc.item_contributions, X, kernel="cosine",
                        q=[0.5, 1, 2, "inf"], method=method)
            extra[f"contributions {method}"] = {"rank": res.rank, "vs_1": float(res.vendi[1])}
    if "duplicates" in args.parts:
        for kname, kern in kernels.items():
            dup = timed(f"duplicates {kname} exact", log, dc.find_duplicates, X, kernel=kern, method="exact",
                        scores=False)
            extra[f"duplicates {kname} exact"] = {"n_groups": dup.n_groups, "n_removable": dup.n_removable}
        for kname, kern in kernels.items():
            dup = timed(f"duplicates {kname} approximate", log, dc.find_duplicates, X, kernel=kern,
                        method="approximate", scores=False, rng=0)
            extra[f"duplicates {kname} approximate"] = {"n_groups": dup.n_groups, "n_removable": dup.n_removable}
    if "rarity" in args.parts:
        for method in ("exact", "approximate"):
            for kname, kern in kernels.items():
                r = timed(f"rarity {kname} {method}", log, dc.rarity_scores, X, kernel=kern, method=method, rng=0)
                extra[f"rarity {kname} {method}"] = {"rarest": r.rarest(5).tolist()}
    out = {
        "n": args.n, "d": args.d, "k": args.k,
        "data": "Gaussian clusters (200 centres), 1 % near-copies, float64, seed 0",
        "target_select_s": TARGET_SELECT_S,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__},
        "steps": log,
        "results": extra,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():
        # keep the steps of parts not rerun
        old = json.loads(args.out.read_text())
        if (old.get("n"), old.get("d"), old.get("k")) == (args.n, args.d, args.k):
            rerun = {row["step"] for row in log}
            out["steps"] = [r for r in old.get("steps", []) if r["step"] not in rerun] + log
            out["results"] = {**{k: v for k, v in old.get("results", {}).items() if k not in extra}, **extra}
    args.out.write_text(json.dumps(out, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
