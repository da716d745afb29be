"""Speed of the Vendi core against the reference package and the BLAS/LAPACK floor.

Prints, for each case, our time, the floor's time (the unavoidable GEMM + eigvalsh of the
same size), the reference ``vendi_score`` package's time, and the ratios; writes every figure
to ``benchmarks/results/vendi.json``. Each time is the minimum over ``--repeat`` runs on the
same data, and the cases run one after another so the ratios share the machine's state.

Targets (issue 2, 2-core machine):
- dual path, n = 20000, d = 512, float32 and float64: <= 1.25x floor, not slower than score_dual;
- d > n (n = 1000, d = 2048): auto picks the n x n Gram matrix, <= 1.25x its floor;
- dense path, n = 4000, cosine kernel: <= 1.25x floor (kernel GEMM + one eigvalsh);
- a new q from a cached spectrum of n = 20000: < 1 ms; a 100-point q-profile: < 20 ms.

Run: ``python benchmarks/bench_vendi.py [--repeat 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import diversity_core as dc

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn, repeat: int) -> float:
    """Minimum wall time of ``fn()`` over ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def case_dual(n: int, d: int, dtype, repeat: int, vendi_pkg) -> dict:
    """Dual path: ours (cosine) vs X^T X + eigvalsh(d x d) vs vendi_score.score_dual."""
    X = np.random.default_rng(0).standard_normal((n, d)).astype(dtype)

    def floor():
        np.linalg.eigvalsh((X.T @ X).astype(np.float64))

    def ours():
        dc.compute_spectrum(X, kernel="cosine", method="auto").vendi(1.0)

    out = {"case": f"dual n={n} d={d} {np.dtype(dtype).name}", "ours_s": best_time(ours, repeat),
           "floor_s": best_time(floor, repeat)}
    if vendi_pkg is not None:
        out["reference_s"] = best_time(lambda: vendi_pkg.score_dual(X, q=1), repeat)
        out["value_ours"] = dc.compute_spectrum(X).vendi(1.0)
        out["value_reference"] = float(vendi_pkg.score_dual(X, q=1))
    out["method"] = dc.compute_spectrum(X).method
    return out


def case_wide(n: int, d: int, repeat: int, vendi_pkg) -> dict:
    """d > n: ours (auto -> n x n Gram) vs X X^T + eigvalsh(n x n) vs score_dual (d x d)."""
    X = np.random.default_rng(1).standard_normal((n, d))

    def floor():
        np.linalg.eigvalsh(X @ X.T)

    def ours():
        dc.compute_spectrum(X, kernel="cosine").vendi(1.0)

    out = {"case": f"wide n={n} d={d} float64", "ours_s": best_time(ours, repeat),
           "floor_s": best_time(floor, repeat), "method": dc.compute_spectrum(X).method}
    if vendi_pkg is not None:
        out["reference_s"] = best_time(lambda: vendi_pkg.score_dual(X, q=1), max(1, repeat - 1))
    return out


def case_dense(n: int, d: int, repeat: int, vendi_pkg) -> dict:
    """Dense path (n x n cosine kernel): ours vs kernel GEMM + eigvalsh(n x n) vs score_K."""
    X = np.random.default_rng(2).standard_normal((n, d))

    def floor():
        np.linalg.eigvalsh(X @ X.T)

    def ours():
        dc.compute_spectrum(X, kernel="cosine", method="dense").vendi(1.0)

    out = {"case": f"dense n={n} d={d} cosine", "ours_s": best_time(ours, repeat),
           "floor_s": best_time(floor, repeat), "method": "dense"}
    if vendi_pkg is not None:
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        out["reference_s"] = best_time(lambda: vendi_pkg.score_K(Xn @ Xn.T, q=1), 1)
    return out


def case_q_from_cache(n: int) -> dict:
    """A new q, and a 100-point q-profile, from a cached spectrum with n eigenvalues."""
    lam = np.random.default_rng(3).random(n) ** 4
    spec = dc.spectrum_from_eigenvalues(lam)
    qs = dc.default_q_grid(100)
    single = best_time(lambda: spec.vendi(1.7), 50)
    profile = best_time(lambda: spec.profile(qs), 10)
    return {"case": f"q from cached spectrum n={n}", "single_q_ms": 1e3 * single,
            "profile_100_ms": 1e3 * profile, "target_single_ms": 1.0, "target_profile_ms": 20.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = parser.parse_args()
    try:
        import vendi_score.vendi as vendi_pkg
    except ImportError:
        vendi_pkg = None
        print("vendi-score is not installed: reference ratios are skipped (pip install vendi-score)")
    from threadpoolctl import threadpool_info

    scale = 0.25 if args.quick else 1.0
    cases = []
    for dtype in (np.float32, np.float64):
        cases.append(case_dual(int(20000 * scale), 512, dtype, args.repeat, vendi_pkg))
    cases.append(case_wide(1000, 2048, args.repeat, vendi_pkg))
    cases.append(case_dense(int(4000 * scale), 256, max(1, args.repeat - 1), vendi_pkg))
    qcase = case_q_from_cache(20000)

    print(f"{'case':34s} {'ours s':>9s} {'floor s':>9s} {'ref s':>9s} {'ours/floor':>10s} {'ours/ref':>9s}  path")
    for c in cases:
        c["ratio_floor"] = c["ours_s"] / c["floor_s"]
        if "reference_s" in c:
            c["ratio_reference"] = c["ours_s"] / c["reference_s"]
        ref = f"{c['reference_s']:9.3f}" if "reference_s" in c else f"{'-':>9s}"
        rr = f"{c['ratio_reference']:9.2f}" if "ratio_reference" in c else f"{'-':>9s}"
        print(f"{c['case']:34s} {c['ours_s']:9.3f} {c['floor_s']:9.3f} {ref} {c['ratio_floor']:10.2f} {rr}  {c['method']}")
    print(f"{qcase['case']}: one q {qcase['single_q_ms']:.3f} ms (target < 1), "
          f"100-point profile {qcase['profile_100_ms']:.2f} ms (target < 20)")
    RESULTS.mkdir(exist_ok=True)
    meta = {
        "machine": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "numpy": np.__version__, "blas": [
            {k: i.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for i in threadpool_info()
        ],
        "repeat": args.repeat, "quick": args.quick,
    }
    (RESULTS / "vendi.json").write_text(json.dumps({"meta": meta, "cases": cases, "q_cache": qcase}, indent=2))
    print(f"wrote {RESULTS / 'vendi.json'}")


if __name__ == "__main__":
    main()
