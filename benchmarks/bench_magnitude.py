"""Benchmark of the magnitude pipeline (issue 3): ratios against magnipy and against the BLAS floor.

For n = 2000 Gaussian mixtures with d = 10 and d = 128, in one run on the same data:

- ours: the whole pipeline from the points, ``mag_area(X)`` = distances + t_conv + the 30-scale
  magnitude function + MagArea;
- floor: 30 float64 Cholesky factorisations (``scipy.linalg.cho_factor``) of a 2000 x 2000 Z_t,
  the cost of the 30 solves alone;
- magnipy 1.0.0: ``Magnipy(X).MagArea()`` from scratch, in its own venv (see ``magnipy_env.py``);

the three interleaved, best time of each (the machine may be shared), in wall time and in CPU
time (``time.process_time`` of all the process's threads: much less sensitive to other jobs);
- agreement: t_conv, MagArea, and Mag(t) on magnipy's own grid.

``--threads N`` limits the BLAS threads of ours, the floor and magnipy alike (``threadpoolctl``
here, ``OPENBLAS_NUM_THREADS`` for magnipy's process); on a loaded machine ``--threads 1`` gives
the most reproducible ratios. The load average is recorded before and after.

Targets: ours <= floor (ratio ours / floor <= 1), magnipy / ours >= 4, results equal to 1e-8.

``--large`` adds the n = 20000 run (d = 10): time, peak memory, the stated accuracy (a-posteriori
error estimates) and a check of the hardest scale against a float64 Cholesky solve.

Writes ``benchmarks/results/magnitude.json``. Usage::

    python benchmarks/bench_magnitude.py [--repeats 4] [--magnipy-repeats 2] [--threads N] [--large | --only-large]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg as sla
from scipy.integrate import trapezoid

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from diversity_core.magnitude import mag_area, magnitude_function  # noqa: E402

RESULTS = HERE / "results" / "magnitude.json"


def gaussian_mixture(n: int, d: int, seed: int, k: int = 10) -> np.ndarray:
    """``k`` Gaussian clusters (unit variance) with centres of spread 3 in R^d."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d)) * 3.0
    return centres[rng.integers(0, k, n)] + rng.normal(size=(n, d))


def machine() -> dict:
    """What the numbers were measured on."""
    info = {"python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "cpus": os.cpu_count(), "platform": platform.platform()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        info["load_average_at_start"] = os.getloadavg()
    except OSError:
        pass
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [{k: p.get(k) for k in ("internal_api", "num_threads", "version")} for p in threadpool_info()]
    except ImportError:
        pass
    return info


THREADS = None  # BLAS threads (None: the libraries' default)


def _limited():
    """Context limiting the BLAS threads to ``THREADS`` (no-op by default)."""
    import contextlib

    if THREADS is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(THREADS, user_api="blas")


def time_ours(X: np.ndarray):
    """Wall and CPU seconds of ``mag_area(X)``."""
    with _limited():
        start, cpu = time.perf_counter(), time.process_time()
        res = mag_area(X)
        return time.perf_counter() - start, time.process_time() - cpu, res


def time_floor(X: np.ndarray, t: float, count: int = 30) -> tuple:
    """Wall and CPU seconds of ``count`` float64 Cholesky factorisations (and the two triangular solves) of Z_t."""
    from scipy.spatial.distance import cdist

    Z = np.exp(-t * cdist(X, X))
    ones = np.ones(X.shape[0])
    with _limited():
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            c = sla.cho_factor(Z, lower=True, check_finite=False)
            sla.cho_solve(c, ones, check_finite=False)
        return time.perf_counter() - start, time.process_time() - cpu


def run_magnipy(X: np.ndarray) -> dict:
    """``Magnipy(X).MagArea()`` from scratch in the magnipy venv."""
    env = dict(os.environ)
    if THREADS is not None:
        env.update(OPENBLAS_NUM_THREADS=str(THREADS), OMP_NUM_THREADS=str(THREADS), MKL_NUM_THREADS=str(THREADS))
    with tempfile.TemporaryDirectory() as tmp:
        xp, op = Path(tmp) / "X.npy", Path(tmp) / "out.json"
        np.save(xp, X)
        subprocess.run([sys.executable, str(HERE / "magnipy_env.py"), "bench", str(xp), str(op)], check=True, env=env)
        return json.loads(op.read_text())


def bench_n2000(d: int, repeats: int, magnipy_repeats: int) -> dict:
    """Ours, the floor and magnipy interleaved ``repeats`` times (magnipy ``magnipy_repeats``); best of each.

    The machine may be shared: interleaving and taking the best time of each measures all three
    under comparable load.
    """
    X = gaussian_mixture(2000, d, seed=1000 + d)
    ours_times, floor_times, mp_times = [], [], []
    ours_cpu, floor_cpu, mp_cpu = [], [], []
    loads = [os.getloadavg()[0]]
    res = mp = None
    for rep in range(repeats):
        t, c, res = time_ours(X)
        ours_times.append(t)
        ours_cpu.append(c)
        t, c = time_floor(X, res.t_cut / 2)
        floor_times.append(t)
        floor_cpu.append(c)
        if rep < magnipy_repeats:
            mp = run_magnipy(X)
            mp_times.append(mp["seconds"])
            mp_cpu.append(mp.get("cpu_seconds", float("nan")))
        loads.append(os.getloadavg()[0])
    func = res.function
    out = {
        "n": 2000, "d": d, "blas_threads": THREADS, "load_average_1min": loads,
        "ours_seconds": min(ours_times), "ours_all": ours_times,
        "ours_cpu_seconds": min(ours_cpu), "ours_cpu_all": ours_cpu,
        "floor_30_cholesky_seconds": min(floor_times), "floor_all": floor_times,
        "floor_cpu_seconds": min(floor_cpu),
        "ratio_ours_over_floor": min(ours_times) / min(floor_times),
        "ratio_ours_over_floor_cpu": min(ours_cpu) / min(floor_cpu),
        "t_conv": res.t_cut, "mag_area": res.area, "stated_max_rel_error": func.max_rel_error,
        "methods": dict(Counter(func.methods)),
    }
    if mp is not None:
        mine = magnitude_function(X, mp["ts"])
        out.update({
            "magnipy_seconds": min(mp_times), "magnipy_all": mp_times,
            "ratio_magnipy_over_ours": min(mp_times) / min(ours_times),
            "magnipy_cpu_seconds": min(mp_cpu), "magnipy_cpu_all": mp_cpu,
            "ratio_magnipy_over_ours_cpu": min(mp_cpu) / min(ours_cpu),
            "ratio_magnipy_over_floor": min(mp_times) / min(floor_times),
            "magnipy_t_conv": mp["t_conv"], "magnipy_mag_area": mp["mag_area"], "magnipy_jittered": mp["jittered"],
            "rel_diff_t_conv": abs(res.t_cut - mp["t_conv"]) / mp["t_conv"],
            "rel_diff_mag_area": abs(res.area - mp["mag_area"]) / mp["mag_area"],
            "max_rel_diff_mag_on_magnipy_grid": float(np.max(np.abs(mine.values - np.array(mp["magnitude"]))
                                                             / np.array(mp["magnitude"]))),
            # the same trapezoid on magnipy's own grid (its t_conv has TOMS 748's rtol=1e-5)
            "rel_diff_mag_area_on_magnipy_grid": abs(float(trapezoid(mine.values, mp["ts"])) - mp["mag_area"])
            / mp["mag_area"],
        })
    return out


def bench_large(n: int, d: int, on_partial=None) -> dict:
    """The n = 20000 pipeline: time, memory, stated accuracy, and a float64 check of the hardest scale."""
    X = gaussian_mixture(n, d, seed=7 + d)
    ticks = []

    def progress(done, total, message):
        ticks.append((time.perf_counter(), done, total, message))
        print(f"\r  [{done}/{total}] {message}\033[K", end="", file=sys.stderr, flush=True)

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mag_area(X, progress=progress)
    seconds = time.perf_counter() - start
    print(file=sys.stderr)
    func = res.function
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    t_conv_seconds = next((tk[0] - start for tk in ticks if tk[1] == 1), None)
    out = {
        "n": n, "d": d, "seconds": seconds, "t_conv_seconds": t_conv_seconds,
        "peak_rss_gb": peak_gb, "t_conv": res.t_cut, "mag_area": res.area,
        "stated_max_rel_error": func.max_rel_error,
        "stated_rel_errors": [float(e / v) for e, v in zip(func.errors[1:], func.values[1:])],
        "methods": dict(Counter(func.methods)),
        "warnings": [str(w.message) for w in caught],
    }
    if on_partial is not None:
        on_partial(out)
    # check the smallest positive scale (the worst conditioned) against a float64 Cholesky solve
    # (blocked above 1 GiB: the bundled OpenBLAS potrf crashed on 2 GB matrices)
    from diversity_core.magnitude._metric import _euclidean
    from diversity_core.magnitude._solvers import _cho_apply, _cholesky

    t1 = float(func.ts[1])
    Z, _ = _euclidean(X)
    np.multiply(Z, -t1, out=Z)
    np.exp(Z, out=Z)
    check_start = time.perf_counter()
    factor = _cholesky(Z, overwrite=True)
    reference = float(_cho_apply(factor, np.ones(n)).sum())
    check_seconds = time.perf_counter() - check_start
    del factor, Z
    out.update({
        "check_t": t1, "check_float64_cholesky_value": reference, "check_float64_cholesky_seconds": check_seconds,
        "check_rel_diff": abs(func.values[1] - reference) / reference,
    })
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--large", action="store_true", help="also run n = 20000 (several minutes)")
    parser.add_argument("--large-n", type=int, default=20000)
    parser.add_argument("--magnipy-repeats", type=int, default=2, help="0 skips magnipy")
    parser.add_argument("--only-large", action="store_true")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads for all three (default: all)")
    args = parser.parse_args(argv)
    global THREADS
    THREADS = args.threads

    report = {"machine": machine(), "n2000": [], "large": None}
    if RESULTS.exists():  # keep the part of an earlier run that is not repeated now
        try:
            previous = json.loads(RESULTS.read_text())
        except ValueError:
            previous = {}
        if args.only_large:
            report["n2000"] = previous.get("n2000", [])
        elif not args.large:
            report["large"] = previous.get("large")
    if not args.only_large:
        for d in (10, 128):
            r = bench_n2000(d, args.repeats, min(args.magnipy_repeats, args.repeats))
            report["n2000"].append(r)
            line = (f"n=2000 d={d:<3} threads={THREADS} load={max(r['load_average_1min']):.1f}  "
                    f"ours {r['ours_seconds']:.2f}s (cpu {r['ours_cpu_seconds']:.2f}s)  floor(30 chol64) "
                    f"{r['floor_30_cholesky_seconds']:.2f}s  ours/floor {r['ratio_ours_over_floor']:.2f} "
                    f"(cpu {r['ratio_ours_over_floor_cpu']:.2f})")
            if "magnipy_seconds" in r:
                line += (f"  magnipy {r['magnipy_seconds']:.1f}s (cpu {r['magnipy_cpu_seconds']:.1f}s)  magnipy/ours "
                         f"{r['ratio_magnipy_over_ours']:.1f}x (cpu {r['ratio_magnipy_over_ours_cpu']:.1f}x)"
                         f"  |dMagArea| {r['rel_diff_mag_area']:.1e}  |dt_conv| {r['rel_diff_t_conv']:.1e}"
                         f"  on magnipy's grid: |dMag| {r['max_rel_diff_mag_on_magnipy_grid']:.1e}"
                         f" |dMagArea| {r['rel_diff_mag_area_on_magnipy_grid']:.1e}")
            line += f"  stated err {r['stated_max_rel_error']:.1e}  {r['methods']}"
            print(line, flush=True)
    def save() -> None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    if args.large or args.only_large:
        def partial(r: dict) -> None:
            report["large"] = r
            save()

        r = bench_large(args.large_n, 10, on_partial=partial)
        report["large"] = r
        print(f"n={r['n']} d={r['d']}  pipeline {r['seconds']:.1f}s (t_conv {r['t_conv_seconds']:.1f}s)  "
              f"peak RSS {r['peak_rss_gb']:.1f} GB  stated max rel err {r['stated_max_rel_error']:.1e}  "
              f"check at t={r['check_t']:.4g}: rel diff {r['check_rel_diff']:.1e} vs float64 Cholesky "
              f"({r['check_float64_cholesky_seconds']:.1f}s)  {r['methods']}", flush=True)
    report["machine"]["load_average_at_end"] = os.getloadavg()
    save()
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
