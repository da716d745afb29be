"""Benchmark of generative-model evaluation (issue 24): agreement with references, and FID-sized timing.

Parts (each once in this process, in this order):

- ``agreement``: precision, recall, density and coverage (k = 5) and the improved precision and
  recall (k = 3, prdc's with the same k) against the ``prdc`` package and against an independent
  float64 brute-force computation (exact differences, ``scipy.spatial.distance.cdist``), on float32
  and float64 features; the Frechet distance against two independent float64 references: the
  eigenvalues of the non-symmetric product Sigma_R Sigma_G (``numpy.linalg.eigvals``) and
  ``scipy.linalg.sqrtm`` of it (FID code's route). Target: relative differences <= 1e-10.
- ``scale``: :func:`diversity_core.evaluation.evaluate` on N = M = 50,000 generated and reference
  items of d = 2,048 float32 features (FID-sized; rectified Gaussian mixtures like Inception pool
  features), memory budget 4 GB, MagDiff off (PRDC, improved P/R, FD, KD with 100 subsets of
  1,000, the Vendi ratio by the dual 2048 x 2048 path, and the intervals). Target: <= 5 min on
  2 cores. Peak resident memory is recorded.

Wall-clock seconds are recorded with the load average before and after each part: on a machine
shared with other jobs they inflate with the load. Writes ``benchmarks/results/evaluation.json``.
Usage::

    python benchmarks/bench_evaluation.py [--parts agreement scale] [--n 50000] [--d 2048]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "evaluation.json"
TARGET_S = 300.0
TOL = 1e-10


def load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def features(n: int, d: int, seed: int, shift: float = 0.0):
    """Rectified Gaussian-mixture features (non-negative, like CNN pool features), float32."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1234).standard_normal((50, d)).astype(np.float32)
    X = centres[rng.integers(50, size=n)] + rng.standard_normal((n, d), dtype=np.float32) + np.float32(shift)
    np.maximum(X, 0.0, out=X)
    return X


def _brute_prdc(R, G, k, strict):
    """Independent float64 PRDC from cdist distances (no shared code with the core)."""
    import numpy as np
    from scipy.spatial.distance import cdist

    R64, G64 = R.astype(np.float64), G.astype(np.float64)
    drr = cdist(R64, R64)
    dgg = cdist(G64, G64)
    drg = cdist(R64, G64)
    np.fill_diagonal(drr, np.inf)
    np.fill_diagonal(dgg, np.inf)
    rr = np.partition(drr, k - 1, axis=1)[:, k - 1]
    rg = np.partition(dgg, k - 1, axis=1)[:, k - 1]
    a = drg < rr[:, None] if strict else drg <= rr[:, None]
    b = drg < rg[None, :] if strict else drg <= rg[None, :]
    return np.array([a.any(axis=0).mean(), b.any(axis=1).mean(), a.sum() / (k * G.shape[0]), a.any(axis=1).mean()])


def agreement(args) -> dict:
    import numpy as np
    import scipy.linalg as sla

    from diversity_core.evaluation._frechet import frechet_parts, moments
    from diversity_core.evaluation._prdc import neighbour_items, prdc_values

    out = {"prdc": [], "frechet": []}
    try:
        import prdc as prdc_pkg
    except ImportError:
        prdc_pkg = None
    for dtype in ("float32", "float64"):
        for n, m, d in ((3000, 2500, 64), (2000, 2000, 2048)):
            R = features(n, d, 1).astype(dtype)
            G = features(m, d, 2, shift=0.05).astype(dtype)
            t0 = time.perf_counter()
            ours = prdc_values(neighbour_items(R, G, 5, 3))
            t_ours = time.perf_counter() - t0
            brute = np.concatenate([_brute_prdc(R, G, 5, True), _brute_prdc(R, G, 3, False)[:2]])
            row = {"dtype": dtype, "n_reference": n, "n_generated": m, "d": d, "ours": ours.tolist(),
                   "max_rel_diff_brute": float(np.max(np.abs(ours - brute) / np.maximum(np.abs(brute), 1e-300))),
                   "seconds_ours": round(t_ours, 2)}
            if prdc_pkg is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    import contextlib
                    import io

                    with contextlib.redirect_stdout(io.StringIO()):
                        r5 = prdc_pkg.compute_prdc(R.astype(np.float64), G.astype(np.float64), 5)
                        r3 = prdc_pkg.compute_prdc(R.astype(np.float64), G.astype(np.float64), 3)
                pk = np.array([r5["precision"], r5["recall"], r5["density"], r5["coverage"], r3["precision"],
                               r3["recall"]])
                row["max_rel_diff_prdc"] = float(np.max(np.abs(ours - pk) / np.maximum(np.abs(pk), 1e-300)))
            out["prdc"].append(row)
            print("prdc", row, file=sys.stderr)
    for n, d in ((5000, 256), (10000, 2048)):
        R = features(n, d, 3).astype(np.float64)
        G = features(n, d, 4, shift=0.05).astype(np.float64)
        mr, mg = moments(R), moments(G)
        t0 = time.perf_counter()
        ours = frechet_parts(mr, mg)
        t_ours = time.perf_counter() - t0
        base = float(((mr.mean - mg.mean) ** 2).sum() + np.trace(mr.cov) + np.trace(mg.cov))
        ev = np.linalg.eigvals(mr.cov @ mg.cov)
        ref_eig = base - 2.0 * float(np.sqrt(np.clip(ev.real, 0, None)).sum())
        ref_sqrtm = base - 2.0 * float(np.trace(sla.sqrtm(mr.cov @ mg.cov)).real)
        row = {"n": n, "d": d, "fd": ours.value, "ref_eigvals": ref_eig, "ref_sqrtm": ref_sqrtm,
               "rel_diff_eigvals": abs(ours.value - ref_eig) / abs(ref_eig),
               "rel_diff_sqrtm": abs(ours.value - ref_sqrtm) / abs(ref_sqrtm), "seconds_trace_sqrt": round(t_ours, 2)}
        out["frechet"].append(row)
        print("frechet", row, file=sys.stderr)
    worst = max([r["max_rel_diff_brute"] for r in out["prdc"]] + [r.get("max_rel_diff_prdc", 0) for r in out["prdc"]]
                + [r["rel_diff_eigvals"] for r in out["frechet"]])
    out["worst_rel_diff"] = worst
    out["meets_target"] = bool(worst <= TOL)
    return out


def scale(args) -> dict:
    import numpy as np

    from diversity_core import set_config
    from diversity_core.evaluation import evaluate

    set_config(memory_budget="4G")
    R = features(args.n, args.d, 10)
    G = features(args.n, args.d, 11, shift=0.05)
    before = load()
    t0 = time.perf_counter()
    cpu0 = time.process_time()

    def progress(done, total, message):
        print(f"  [{time.perf_counter() - t0:7.1f} s] {message} {done}/{total}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = evaluate(R, G, magnitude=False, rng=0, progress=progress)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "n_reference": args.n, "n_generated": args.n, "d": args.d, "dtype": "float32", "memory_budget": "4G",
        "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "timings": ev.settings["timings"],
        "cpu_timings": ev.settings.get("cpu_timings"),
        "nn_method": ev.settings["nn_method"], "peak_rss_gb": round(peak / 2**30, 2),
        "load_before": before, "load_after": load(), "meets_target": bool(wall <= TARGET_S),
        "metrics": {r["metric"]: r["value"] for r in ev.table_rows()},
        "intervals": {r["metric"]: [r["ci_low"], r["ci_high"]] for r in ev.table_rows() if r["ci_low"] is not None},
        "input_bytes_gb": round(2 * R.nbytes / 2**30, 2), "n_threads": os.environ.get("OMP_NUM_THREADS"),
        "note": np.__version__,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["agreement", "scale"], choices=["agreement", "scale"])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=2048)
    args = ap.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    for part in args.parts:
        before = load()
        t0 = time.perf_counter()
        res = {"agreement": agreement, "scale": scale}[part](args)
        res.setdefault("load_before", before)
        res["load_after_part"] = load()
        res["part_seconds"] = round(time.perf_counter() - t0, 1)
        results[part if part != "scale" else f"scale_{args.n}x{args.d}"] = res
        print(json.dumps({part: res}, indent=1, default=str))
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
