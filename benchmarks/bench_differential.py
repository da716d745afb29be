"""Benchmark of the differential spectra (issue 43): novel and missing modes, KEN and RRKE at scale.

Parts, each in a process of its own (so that its peak resident memory is its own):

- ``features``: :func:`diversity_core.differential.novelty_report` on n = m = 20,000 items of
  d = 512 features under the cosine kernel (the exact feature route: two 512 x 512 covariances),
  both spectra, KEN both ways and RRKE of order 1/2, without intervals or null (``--permutations``
  and ``--resamples`` add them).
- ``rff``: the same under the rbf kernel by random Fourier features (1,024 frequencies, 2,048
  features; an estimate with the sketch's standard errors).
- ``full``: the feature route with everything ``diversity evaluate --novelty`` computes by default:
  intervals (16 resamples per size) and the null of 100 permutations.
- ``null``: the permutation null's cost per permutation on the feature route at the same sizes
  (``--null-permutations`` of them, timed, and the time of 100 extrapolated).

Targets: the spectra in <= 2 minutes within a 4 GB budget at n = 20,000 per set, d = 512 (issue 43),
and with random Fourier features at n = 200,000 per set in <= 10 minutes. ``--rff-n`` sets the rff
part's size; its cost is a + b n (the moments and the loadings are row sums; the 2D x 2D
eigenproblems do not grow with n), so it also runs at ``--rff-n-small`` items, fits a and b on the
two CPU times and wall times, and extrapolates to 200,000 (the JSON says so: ``scaled_down``).
Each run replaces the records of the parts it ran in the JSON and keeps the others.

Wall-clock and CPU seconds are recorded with the load average before and after: on a machine shared
with other jobs the wall-clock inflates with the load. Writes ``benchmarks/results/differential.json``.
Usage::

    python benchmarks/bench_differential.py [--parts features rff null] [--n 20000] [--d 512] [--rff-n 20000]
        [--rff-n-small 4000] [--null-permutations 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "differential.json"
TARGET_S = 120.0
TARGET_RFF_S = 600.0
TARGET_RFF_N = 200_000
BUDGET = "4G"


def load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def sets(n: int, d: int, seed: int):
    """R from 20 clusters; G from 19 of them plus a new one (5% of G): one novel and one missing mode."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = 3.0 * np.random.default_rng(1234).standard_normal((21, d)).astype(np.float32)
    R = centres[rng.integers(0, 20, n)] + rng.standard_normal((n, d), dtype=np.float32)
    lab = np.where(rng.random(n) < 0.05, 20, rng.integers(1, 20, n))
    G = centres[lab] + rng.standard_normal((n, d), dtype=np.float32)
    return G, R, lab


def one(part: str, n: int, d: int, permutations: int, resamples: int) -> dict:
    """Run one part in this process; returns its record."""
    import numpy as np

    import diversity_core as dc
    from diversity_core.differential import novelty_report

    dc.set_config(memory_budget=BUDGET)
    G, R, lab = sets(n, d, 0)
    kernel = "rbf" if part == "rff" else "cosine"
    t0, c0, l0 = time.perf_counter(), time.process_time(), load()
    method = "rff" if part == "rff" else "auto"  # at small n, auto would take the exact dense route
    rep = novelty_report(G, R, kernel=kernel, method=method, n_modes=3, n_permutations=permutations,
                         n_resamples=resamples, rng=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    top = rep.novel.top_items(0, 100)
    out = {
        "part": part, "n_per_set": n, "d": d, "kernel": kernel, "route": rep.settings["method"],
        "kind": rep.novel.kind, "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "load_before": l0, "load_after": load(), "timings": rep.settings["timings"],
        "n_permutations": permutations, "n_resamples": resamples,
        "ken": rep.ken.value, "ken_missing": rep.ken_missing.value, "rrke": rep.rrke.value,
        "top_novel_eigenvalue": float(rep.novel.eigenvalues[0]),
        "top_missing_eigenvalue": float(rep.missing.eigenvalues[0]),
        "top100_novel_items_in_new_cluster": float(np.mean(lab[top] == 20)),
        "settings": {k: v for k, v in rep.settings.items() if k != "timings"},
    }
    if rep.novel.eigenvalue_se is not None:
        out["top_novel_eigenvalue_se"] = float(rep.novel.eigenvalue_se[0])
        out["ken_sketch_se"] = rep.novel.ken_se
    if permutations:
        out["seconds_per_permutation"] = round(rep.settings["timings"]["null"] / permutations, 3)
        out["null_100_permutations_s_extrapolated"] = round(100 * out["seconds_per_permutation"], 1)
        out["novel_outside_null"] = rep.novel_null.outside.tolist()
    return out


def _run(part: str, n: int, d: int, permutations: int, resamples: int, env: dict):
    """One part in a fresh process (its own peak memory); its record, or None after printing its error."""
    cmd = [sys.executable, __file__, "--one", part, "--n", str(n), "--d", str(d), "--permutations",
           str(permutations), "--resamples", str(resamples)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print(res.stderr, file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", nargs="+", default=["features", "rff", "null"], choices=("features", "rff", "null", "full"))
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--rff-n", type=int, default=20_000)
    p.add_argument("--rff-n-small", type=int, default=4_000)
    p.add_argument("--permutations", type=int, default=0)
    p.add_argument("--resamples", type=int, default=0)
    p.add_argument("--null-permutations", type=int, default=10)
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.n, args.d, args.permutations, args.resamples)))
        return 0
    records = []
    if RESULTS.exists():  # keep the records of the parts not run now
        records = [r for r in json.loads(RESULTS.read_text()).get("records", []) if r["part"] not in args.parts]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2"),
           "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "2")}
    for part in args.parts:
        n = args.rff_n if part == "rff" else args.n
        perms = {"null": args.null_permutations, "full": 100}.get(part, args.permutations)
        resamples = 16 if part == "full" else args.resamples
        rec = _run(part, n, args.d, perms, resamples, env)
        if rec is None:
            return 1
        if part == "rff":
            small = _run(part, args.rff_n_small, args.d, perms, args.resamples, env)
            if small is None:
                return 1
            rec["small_run"] = {k: small[k] for k in ("n_per_set", "seconds", "cpu_seconds", "timings", "load_before")}
            for key in ("seconds", "cpu_seconds"):
                b = (rec[key] - small[key]) / (n - args.rff_n_small)
                a = rec[key] - b * n
                rec[f"{key}_extrapolated"] = round(a + b * TARGET_RFF_N, 1)
                rec[f"{key}_fixed_part"] = round(a, 2)
            rec["extrapolated_to_n"] = TARGET_RFF_N
            rec["seconds_extrapolated_linear_in_n"] = round(rec["seconds"] * TARGET_RFF_N / n, 1)
            rec["target_s"] = TARGET_RFF_S
            rec["scaled_down"] = n < TARGET_RFF_N
        else:
            rec["target_s"] = TARGET_S
        records.append(rec)
        print(f"{part}: n = {n} per set, {rec['route']} route, {rec['seconds']} s wall ({rec['cpu_seconds']} s CPU), "
              f"peak RSS {rec['peak_rss_bytes'] / 2**30:.2f} GiB, load {rec['load_before']} -> {rec['load_after']}; "
              f"top novel eigenvalue {rec['top_novel_eigenvalue']:.4f}, top 100 items in the new cluster: "
              f"{rec['top100_novel_items_in_new_cluster']:.0%}"
              + (f"; extrapolated to n = {TARGET_RFF_N}: {rec['seconds_extrapolated']} s wall, "
                 f"{rec['cpu_seconds_extrapolated']} s CPU" if part == "rff" else "")
              + (f"; {rec['seconds_per_permutation']} s per permutation" if part in ("null", "full") else ""))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
                                   "budget": BUDGET, "records": records}, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
