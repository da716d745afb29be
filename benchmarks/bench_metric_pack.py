"""Benchmark of the metric pack (issue 43 item 5): time and memory of every metric at n = 20,000, d = 512.

Two sets of n unit-norm float32 embeddings (CLIP-like: a Gaussian mixture of 50 centres, L2-normalised;
the generated set's centres shifted), d = 512. Each metric of :mod:`diversity_core.evaluation`'s
pack runs once with its default interval (16 subsets per size, subsets of at most 2,048 items),
then :func:`~diversity_core.evaluation.metric_pack` runs them all. Recorded per metric: wall-clock
and CPU seconds, the peak of traced allocations (``tracemalloc``: numpy's arrays included) and the
process's peak resident memory so far, with the load average before and after (the machine is
shared: times inflate with the load). Targets (issue 43): the pack in <= 2 minutes on 2 cores
within 4 GB at n = 20,000.

Writes ``benchmarks/results/metric_pack.json``. Usage::

    python benchmarks/bench_metric_pack.py [--n 20000] [--d 512] [--n-resamples 16] [--skip-pack] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "metric_pack.json"
TARGET_S = 120.0
TARGET_BYTES = 4 * 1024 ** 3


def load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def embeddings(n: int, d: int, seed: int, shift: float = 0.0):
    """Unit-norm float32 rows of a 50-centre Gaussian mixture (centres shifted by ``shift``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1234).standard_normal((50, d)).astype(np.float32) + np.float32(shift)
    X = centres[rng.integers(50, size=n)] + np.float32(0.7) * rng.standard_normal((n, d), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def measure(name: str, fn) -> dict:
    """Run ``fn`` once; wall and CPU seconds, traced peak bytes, peak RSS, load before and after."""
    before = load()
    tracemalloc.reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row = {"metric": name, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "traced_peak_bytes": int(peak),
           "rss_peak_bytes": int(rss), "load_before": before, "load_after": load(), "value": value}
    print(f"{name:34s} {wall:8.2f} s wall {cpu:8.2f} s CPU  traced peak {peak / 2**20:8.1f} MiB  "
          f"value {value}", flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--n-resamples", type=int, default=16)
    ap.add_argument("--skip-pack", action="store_true", help="time the metrics one by one only")
    ap.add_argument("--out", default=str(RESULTS), help=f"JSON written (default {RESULTS})")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    from diversity_core.evaluation import (
        clipped_density_coverage,
        cmmd,
        dcscore,
        lexical_diversity,
        metric_pack,
        probabilistic_precision_recall,
        rke_mode_count,
        truncated_entropy,
        truncated_vendi,
    )

    load_start = load()
    R = embeddings(args.n, args.d, seed=0)
    G = embeddings(args.n, args.d, seed=1, shift=0.05)
    words = ["the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "tree", "red", "big", "small"]
    import numpy as np

    rng = np.random.default_rng(2)
    texts = [" ".join(rng.choice(words, size=int(rng.integers(5, 25)))) for _ in range(args.n)]
    common = dict(n_resamples=args.n_resamples, rng=0)
    tracemalloc.start()
    rows = [
        measure("rke_mode_count (cosine, dual)", lambda: rke_mode_count(G, kernel="cosine", **common).mode_count.value),
        measure("truncated_vendi (cosine, t=100)", lambda: truncated_vendi(G, t=100, **common).value.value),
        measure("truncated_entropy (t=20)", lambda: truncated_entropy(G, t=20, **common).value.value),
        measure("dcscore (cosine, tau=1)", lambda: dcscore(G, **common).value.value),
        measure("cmmd (sigma=10, unbiased)", lambda: cmmd(R, G, **common).value.value),
        measure("clipped_density_coverage (k=5)",
                lambda: [e.value for e in (lambda r: (r.clipped_density, r.clipped_coverage))(
                    clipped_density_coverage(R, G, **common))]),
        measure("probabilistic_precision_recall",
                lambda: [e.value for e in (lambda r: (r.precision, r.recall))(
                    probabilistic_precision_recall(R, G, **common))]),
        measure("lexical_diversity (n texts)",
                lambda: [e.value for e in (lambda r: (r.compression_ratio, r.ngram_diversity, r.self_bleu))(
                    lexical_diversity(texts, **common))]),
    ]
    total = sum(r["wall_s"] for r in rows)
    print(f"{'sum of the metrics':34s} {total:8.2f} s wall", flush=True)
    if not args.skip_pack:
        rows.append(measure("metric_pack (all, both sets)",
                            lambda: len(metric_pack(R, G, texts_reference=texts, texts_generated=texts,
                                                    **common).rows())))
    out = {
        "n": args.n, "d": args.d, "n_resamples": args.n_resamples, "dtype": "float32",
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "load_at_start": load_start, "target_s": TARGET_S, "target_bytes": TARGET_BYTES, "sum_of_metrics_wall_s": round(total, 2),
        "rows": rows,
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=float) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
