"""Issue 43's target: the novelty report and the whole metric pack at n = 20,000 per set, d = 512, in one run.

Two sets of unit-norm float32 embeddings (the mixture of ``bench_metric_pack.py``; the generated
set's centres shifted), every default: :func:`diversity_core.novelty_report` (the feature route,
intervals, a null of 100 relabellings) then :func:`diversity_core.metric_pack` (every metric
that applies to embeddings, with intervals), under a 4 GB memory budget. Prints and writes
(``benchmarks/results/novelty_pack_target.json``) each part's wall-clock seconds, the CPU
seconds, the peak resident memory and the load average before and after. Target: <= 120 s on
2 cores within 4 GB.

Usage::

    python benchmarks/bench_novelty_pack_target.py [--n 20000] [--d 512]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "novelty_pack_target.json"
TARGET_S = 120.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=512)
    args = ap.parse_args(argv)
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    from bench_metric_pack import embeddings

    import diversity_core as dc

    R = embeddings(args.n, args.d, seed=0)
    G = embeddings(args.n, args.d, seed=1, shift=0.05)
    load_before = [round(x, 2) for x in os.getloadavg()]
    with dc.config_context(memory_budget="4G"):
        t0, c0 = time.perf_counter(), time.process_time()
        report = dc.novelty_report(G, R, rng=0)
        t1 = time.perf_counter()
        pack = dc.metric_pack(R, G, rng=0)
        t2, c2 = time.perf_counter(), time.process_time()
    out = {
        "n_per_set": args.n, "d": args.d, "novelty_s": round(t1 - t0, 1), "pack_s": round(t2 - t1, 1),
        "total_s": round(t2 - t0, 1), "cpu_s": round(c2 - c0, 1), "target_s": TARGET_S,
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()],
        "novelty_route": report.settings["method"], "pack_rows": len(pack.rows()),
    }
    print(f"novelty report {out['novelty_s']} s + metric pack {out['pack_s']} s = {out['total_s']} s "
          f"({out['total_s'] / TARGET_S:.2f} x the {TARGET_S:.0f} s target), peak RSS {out['peak_rss_gib']} GiB, "
          f"load {load_before} -> {out['load_after']}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
