"""Where exact VS_inf from the top eigenvalue (Lanczos) beats the dense spectrum (issue 39 item 4).

For n items of dimension d = 384 under the rbf and cosine kernels, times the two exact ways to
VS_inf = 1 / lambda_max that ``score_groups`` and the CLI choose between:

- dense: the n x n kernel matrix and its full eigendecomposition (``compute_spectrum(method="dense")``),
  O(n^2 d + n^3);
- lanczos: the kernel operator and its top eigenvalue by Lanczos (``approx.vs_inf_exact``), O(n^2 d)
  to form the operator plus a few tens of O(n^2) products;

and, for cosine, the dual path (O(n d^2), the plan's choice when d < n) for reference. The data
are clustered like embeddings (20 centres, noise of a third of their spread); one more case at
n = 2,000 has two equal, distant clusters, whose two top eigenvalues nearly coincide (cosine: 0.499
and 0.491), the slow case for Lanczos (``--near-tie-n 0`` skips it). Prints the ratios
and the agreement of the values (relative to the Lanczos tolerance), and writes
``benchmarks/results/vs_inf_path.json``; the crossover is the smallest n from which Lanczos is
faster at every larger n measured. One BLAS thread (set before numpy loads); the machine's load
average is recorded before and after, since the machine is shared.

Run: ``python benchmarks/bench_vs_inf_path.py [--sizes 250 500 1000 2000 4000] [--repeat 2]``
(about 2 minutes on one quiet core with the defaults).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import diversity_core as dc  # noqa: E402
from diversity_core.approx import vendi_bounds  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn, repeat: int):
    """``(value, seconds)``: the last value and the minimum wall time over ``repeat`` calls."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return value, best


def clustered(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n points around 20 Gaussian centres in d dimensions (noise a third of the centres' spread)."""
    g = np.random.default_rng(seed)
    centres = g.standard_normal((20, d))
    return centres[g.integers(0, 20, n)] + g.standard_normal((n, d)) / 3.0


def near_tie(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n points in two equal, distant clusters: the two top eigenvalues of rho nearly coincide."""
    g = np.random.default_rng(seed)
    centres = 10.0 * g.standard_normal((2, d))
    return centres[np.arange(n) % 2] + g.standard_normal((n, d))


def case(n: int, d: int, kernel: str, repeat: int, data: str = "clustered") -> dict:
    X = clustered(n, d) if data == "clustered" else near_tie(n, d)
    reps = repeat if n <= 1000 else 1
    dense, t_dense = timed(lambda: dc.compute_spectrum(X, kernel=kernel, method="dense").vendi(np.inf), reps)
    def top():
        return vendi_bounds(X, kernel=kernel, k=[1], q=[np.inf], method="lanczos", rng=0)

    b, t_lanczos = timed(top, reps)
    lanczos = 1.0 / float(b.top_eigenvalues[0])
    out = {"n": n, "d": d, "kernel": kernel, "data": data, "dense_s": t_dense, "lanczos_s": t_lanczos,
           "dense_over_lanczos": t_dense / t_lanczos, "vs_inf_dense": dense, "vs_inf_lanczos": lanczos,
           "rel_diff": abs(lanczos - dense) / dense, "lanczos_tolerance": b.tolerance,
           "lambda_max": float(b.top_eigenvalues[0]), "storage": b.settings["matrix"]}
    if kernel == "cosine" and d < n:
        _, out["dual_s"] = timed(lambda: dc.compute_spectrum(X, kernel=kernel, method="dual").vendi(np.inf),
                                 reps)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000, 4000])
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--kernels", nargs="+", default=["rbf", "cosine"])
    parser.add_argument("--repeat", type=int, default=2, help="runs per case up to n = 1000 (one above)")
    parser.add_argument("--near-tie-n", type=int, default=2000, help="n of the near-tie case (0: none)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    start = time.perf_counter()
    rows = []
    cases = [(kernel, n, "clustered") for kernel in args.kernels for n in args.sizes]
    cases += [(kernel, args.near_tie_n, "near-tie") for kernel in args.kernels if args.near_tie_n]
    for kernel, n, data in cases:
        r = case(n, args.d, kernel, args.repeat, data)
        rows.append(r)
        dual = f"  dual {r['dual_s']:.3f} s" if "dual_s" in r else ""
        print(f"{kernel:7s} {data:9s} n={n:5d}: dense {r['dense_s']:.3f} s  lanczos {r['lanczos_s']:.3f} s "
              f"({r['storage']})  dense/lanczos {r['dense_over_lanczos']:.2f}{dual}  "
              f"|diff|/VS {r['rel_diff']:.1e} "
              f"(tol/lambda_max {r['lanczos_tolerance'] / r['lambda_max']:.1e})",
              flush=True)
    crossover = {}
    for kernel in args.kernels:
        ks = [r for r in rows if r["kernel"] == kernel and r["data"] == "clustered"]
        faster = [r["dense_over_lanczos"] > 1.0 for r in ks]
        first = next((i for i in range(len(ks)) if all(faster[i:])), None)
        crossover[kernel] = None if first is None else ks[first]["n"]
    out = {"rows": rows, "crossover_n": crossover, "seconds": time.perf_counter() - start,
           "load_before": list(load_before), "load_after": list(os.getloadavg()), "threads": 1,
           "machine": platform.platform(), "cpus": os.cpu_count()}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "vs_inf_path.json").write_text(json.dumps(out, indent=2))
    print(f"crossover (Lanczos faster from): {crossover}; "
          f"load {load_before[0]:.1f} -> {out['load_after'][0]:.1f}; "
          f"{out['seconds']:.0f} s")


if __name__ == "__main__":
    main()
