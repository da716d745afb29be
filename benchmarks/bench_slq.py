"""Full-sample Vendi scores by stochastic Lanczos quadrature (issue 23): coverage, and n = 20,000.

Sections (each runs in its own process, so its peak memory is its own):

- ``coverage``: many datasets of n = 2000-4000 (digit images at 0.5x, 1x and 2x the median
  bandwidth under rbf, and under laplacian; flat and clustered Gaussian embeddings; Morgan
  fingerprints of molecule analogues, or random fingerprints around prototypes without RDKit,
  under tanimoto; a third of them with random item weights), q in {0.5, 1, 2}: how often the
  nominal-95% SLQ interval contains the exact dense value (``eigvalsh``, the Spectrum's support
  rule), the relative half-width, the error, and the time of each path. A case is one
  (dataset, q).
- ``n20k``: 20,000 x 24 Gaussian embeddings, RBF at 0.4 x the median bandwidth (a flat
  spectrum): SLQ at q = 1 and 2 with the defaults but 96 probes in one batch, its wall time and peak RSS (a child process,
  ``os.wait4``), against the exact dense value. The truth (the dense path: 3.2 GB for K and
  minutes) is computed once with ``--truth`` and cached in ``results/slq_truth_n20k.json``.

- ``n100k``: 100,000 x 64 Gaussian embeddings, RBF at the median bandwidth, through the CLI as a
  user runs it (``diversity score X.npy --approx slq --dask local:2 --q 1 --rtol 0.05``): the wall
  time, VS_1 and its relative half-width, and the peak RSS of every process of the run (the CLI
  and each Dask worker, polled with psutil). Target: half-width <= 5% in <= 15 min, <= 1.5 GB a
  worker. There is no dense truth at this size (K alone is 80 GB).
- ``tanimoto100k``: Morgan fingerprints (2048 bits) of 100,000 distinct molecule analogues,
  Tanimoto kernel, ``vendi_slq(q=1, rtol=0.05)`` in one process: wall time (fingerprints apart),
  half-width, peak RSS. Target: half-width <= 5% in <= 15 min.

Run: ``python benchmarks/bench_slq.py [--sections coverage n20k n100k tanimoto100k] [--truth] [--datasets 40]``;
writes ``benchmarks/results/slq.json`` (the latest of every section) and prints the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
TRUTH = RESULTS / "slq_truth_n20k.json"
QS = [0.5, 1.0, 2.0]
N20K = {"n": 20000, "d": 24, "factor": 0.4, "seed": 0}
#: SLQ's settings at n = 20,000: the defaults, with the probes in one batch (one run of passes
#: over K serves them all; the per-pass cost is mostly the kernel's evaluation).
N20K_SLQ = {"probes": 96, "batch": 96}


def _load_avg() -> list:
    return [round(x, 2) for x in os.getloadavg()]


# ------------------------------------------------------------------------------------------
# datasets
# ------------------------------------------------------------------------------------------
def _digits(n: int, rng) -> np.ndarray:
    """n shifted digit images (64 features), a random subset (bench_approx's generator)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_approx import shifted_digits

    return shifted_digits(8000, seed=int(rng.integers(1000)))[:n]


def _fingerprints(n: int, rng):
    """Morgan fingerprints of molecule analogues (RDKit), else random bits around 60 prototypes."""
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_approx import molecule_analogues

        X = molecule_analogues(4 * n, seed=int(rng.integers(1000)))
        return X[np.sort(rng.choice(X.shape[0], size=n, replace=False))]
    except Exception:  # noqa: BLE001 - RDKit missing: a synthetic stand-in, said in the record
        import scipy.sparse as sp

        protos = rng.random((60, 1024)) < 0.04
        X = protos[rng.integers(0, 60, n)] ^ (rng.random((n, 1024)) < 0.01)
        return sp.csr_matrix(X.astype(np.float64))


def coverage_datasets(count: int, seed: int = 0):
    """``count`` (name, X, kernel params, weights) cases, cycling over the families."""
    from diversity_core.kernels import median_distance

    rng = np.random.default_rng(seed)
    families = ["rbf-digits-0.5", "rbf-digits-1", "rbf-digits-2", "rbf-gauss-flat", "rbf-gauss-clusters",
                "laplacian-digits-1", "tanimoto-fingerprints"]
    for i in range(count):
        fam = families[i % len(families)]
        n = int(rng.choice([2000, 2000, 2000, 3000, 4000]))
        weighted = i % 3 == 2
        if fam.startswith("rbf-digits") or fam.startswith("laplacian"):
            X = _digits(n, rng)
            kernel = "rbf" if fam.startswith("rbf") else "laplacian"
            factor = float(fam.rsplit("-", 1)[1])
            metric = "euclidean" if kernel == "rbf" else "cityblock"
            params = {"kernel": kernel, "sigma": factor * median_distance(X, metric=metric)}
        elif fam == "rbf-gauss-flat":
            X = rng.normal(size=(n, 24))
            params = {"kernel": "rbf", "sigma": 0.45 * median_distance(X)}
        elif fam == "rbf-gauss-clusters":
            centres = rng.normal(size=(int(rng.integers(10, 60)), 16)) * 3.0
            X = centres[rng.integers(0, centres.shape[0], n)] + rng.normal(size=(n, 16)) * 0.4
            params = {"kernel": "rbf", "sigma": median_distance(X)}
        else:
            X = _fingerprints(n, rng)
            params = {"kernel": "tanimoto"}
        w = rng.gamma(2.0, size=n) if weighted else None
        yield f"{fam}{'-weighted' if weighted else ''}-n{n}", X, params, w


# ------------------------------------------------------------------------------------------
# sections
# ------------------------------------------------------------------------------------------
def section_coverage(args) -> dict:
    import diversity_core as dc
    from diversity_core.approx import vendi_slq

    cases, datasets = [], []
    for k, (name, X, params, w) in enumerate(coverage_datasets(args.datasets, seed=args.seed)):
        t0 = time.perf_counter()
        with dc.config_context(memory_budget="8G"):
            spec = dc.compute_spectrum(X, weights=w, **params)
        exact_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        est = vendi_slq(X, q=QS, weights=w, rng=1000 + k, **params)
        slq_s = time.perf_counter() - t0
        row = {"dataset": name, "n": int(X.shape[0]), "exact_seconds": exact_s, "slq_seconds": slq_s,
               "x_exact": slq_s / exact_s, "probes": est.probes, "steps": est.steps, "k": est.k,
               "passes": est.settings["passes"], "precision": est.settings["precision"],
               "stopped": est.settings["stopped"], "load": _load_avg()}
        for q in QS:
            exact = float(spec.vendi(q))
            lo, hi = est.interval(q)
            case = {"dataset": name, "q": q, "exact": exact, "estimate": est.vendi(q), "low": lo, "high": hi,
                    "covers": bool(lo <= exact <= hi), "error": est.vendi(q) / exact - 1.0,
                    "half_width": est.relative_half_width(q)}
            cases.append(case)
            row[f"q{q:g}"] = case
        datasets.append(row)
        print(f"[{k + 1}/{args.datasets}] {name}: exact {exact_s:.1f} s, SLQ {slq_s:.1f} s "
              f"({est.probes} probes, {est.settings['passes']} passes); "
              + "; ".join(f"q={c['q']:g} {c['estimate']:.4g} vs {c['exact']:.4g} ({c['error']:+.2%}, "
                          f"hw {c['half_width']:.2%}, {'ok' if c['covers'] else 'MISS'})"
                          for c in cases[-len(QS):]), flush=True)
    cover = [c["covers"] for c in cases]
    hw1 = [c["half_width"] for c in cases if c["q"] == 1.0]
    summary = {"cases": len(cases), "covered": int(sum(cover)), "coverage": float(np.mean(cover)),
               "median_half_width_q1": float(np.median(hw1)),
               "by_q": {f"{q:g}": {"coverage": float(np.mean([c["covers"] for c in cases if c["q"] == q])),
                                   "median_half_width": float(np.median([c["half_width"] for c in cases
                                                                         if c["q"] == q])),
                                   "median_abs_error": float(np.median([abs(c["error"]) for c in cases
                                                                        if c["q"] == q]))} for q in QS},
               "median_x_exact": float(np.median([d["x_exact"] for d in datasets]))}
    print(f"coverage: {summary['covered']} of {summary['cases']} ({summary['coverage']:.1%}); median relative "
          f"half-width at q = 1: {summary['median_half_width_q1']:.2%}; median SLQ time / exact time "
          f"{summary['median_x_exact']:.2f}")
    return {"summary": summary, "datasets": datasets, "cases": cases}


def _n20k_data():
    from diversity_core.kernels import median_distance

    rng = np.random.default_rng(N20K["seed"])
    X = rng.normal(size=(N20K["n"], N20K["d"]))
    return X, N20K["factor"] * median_distance(X)


def child_truth() -> dict:
    """The dense truth at n = 20,000 (3.2 GB for K, eigvalsh)."""
    import diversity_core as dc

    X, sigma = _n20k_data()
    t0 = time.perf_counter()
    with dc.config_context(memory_budget="12G"):
        spec = dc.compute_spectrum(X, kernel="rbf", sigma=sigma, method="dense")
    return {"sigma": sigma, "seconds": time.perf_counter() - t0, "load": _load_avg(),
            "vendi": {f"{q:g}": float(spec.vendi(q)) for q in (0.5, 1.0, 2.0, float("inf"))}, **N20K}


def child_n20k() -> dict:
    """SLQ at n = 20,000 with the defaults (q = 1 and 2: float32 tiles)."""
    from diversity_core.approx import vendi_slq

    X, sigma = _n20k_data()
    load0 = _load_avg()
    t0 = time.perf_counter()
    est = vendi_slq(X, kernel="rbf", sigma=sigma, q=[1.0, 2.0], rng=0, **N20K_SLQ)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "load_before": load0, "load_after": _load_avg(), "sigma": sigma,
            "result": est.to_dict()}


def _run_child(name: str) -> tuple[dict, float]:
    """Run ``--child name`` in a subprocess; its JSON and its peak RSS (MiB, os.wait4)."""
    cmd = [sys.executable, __file__, "--child", name]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=dict(os.environ))
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"child {name} failed with status {status}")
    return json.loads(out), usage.ru_maxrss / 1024.0


def section_n20k(args) -> dict:
    if args.truth or not TRUTH.exists():
        truth, rss = _run_child("truth")
        truth["peak_rss_mb"] = rss
        TRUTH.write_text(json.dumps(truth, indent=2))
        print(f"truth (dense, n = 20000): {truth['seconds']:.0f} s, peak {rss:.0f} MiB, VS = {truth['vendi']}")
    truth = json.loads(TRUTH.read_text())
    run, rss = _run_child("n20k")
    res = run["result"]
    out = {"truth": truth, "slq": run, "peak_rss_mb": rss}
    for key in ("1", "2"):
        j = res["qs"].index(key)
        exact = truth["vendi"][key]
        value, lo, hi = res["value"][j], res["low"][j], res["high"][j]
        out[f"q{key}"] = {"exact": exact, "estimate": value, "low": lo, "high": hi, "error": value / exact - 1.0,
                          "covers": lo <= exact <= hi, "half_width": (hi - lo) / (2 * value)}
        print(f"n = 20000, q = {key}: SLQ {value:.5g} [{lo:.5g}, {hi:.5g}] vs exact {exact:.5g} "
              f"({value / exact - 1:+.2%}, covers: {lo <= exact <= hi})")
    print(f"SLQ wall {run['seconds']:.1f} s (x exact {run['seconds'] / truth['seconds']:.3f}), peak RSS {rss:.0f} MiB, "
          f"{res['probes']} probes, {res['settings']['passes']} passes, load {run['load_before']} -> "
          f"{run['load_after']}")
    return out


def _tree_rss(proc, peaks: dict) -> None:
    """Record the RSS (MiB) of ``proc`` and its descendants in ``peaks`` (pid -> (max MiB, command))."""
    import psutil

    try:
        family = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return
    for p in family:
        try:
            rss = p.memory_info().rss / 2**20
            cmd = " ".join(p.cmdline()[:6])
        except psutil.Error:
            continue
        old = peaks.get(p.pid, (0.0, cmd))
        peaks[p.pid] = (max(old[0], rss), cmd)


def section_n100k(args) -> dict:
    import tempfile

    import psutil

    rng = np.random.default_rng(0)
    folder = Path(tempfile.mkdtemp(prefix="bench-slq-100k-"))
    path = folder / "X.npy"
    np.save(path, rng.normal(size=(100_000, 64)))
    cmd = [sys.executable, "-m", "diversity_core.cli", "score", str(path), "--kernel", "rbf", "--approx", "slq",
           "--dask", "local:2", "--q", "1", "--rtol", "0.05", "--time-budget", "870", "--format", "json"]
    load0 = _load_avg()
    t0 = time.perf_counter()
    out_path, err_path = folder / "score.json", folder / "score.err"
    with out_path.open("wb") as out_fh, err_path.open("wb") as err_fh:
        proc = psutil.Popen(cmd, stdout=out_fh, stderr=err_fh)
        peaks: dict = {}
        while proc.poll() is None:
            _tree_rss(proc, peaks)
            time.sleep(0.5)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"diversity score failed ({proc.returncode}): {err_path.read_text()[-2000:]}")
    result = json.loads(out_path.read_text())
    workers = [mb for mb, c in peaks.values() if "distributed" in c or "spawn" in c or "multiprocessing" in c]
    out = {"command": " ".join(cmd[2:]), "seconds": seconds, "load_before": load0, "load_after": _load_avg(),
           "result": result, "peak_rss_mb": {str(pid): v for pid, v in peaks.items()},
           "peak_worker_rss_mb": max(workers) if workers else None}
    print(f"n = 100000 x 64 rbf, --dask local:2: {seconds:.0f} s (target <= 900 s); peak RSS per worker "
          f"{out['peak_worker_rss_mb']} MiB (target <= 1536); load {load0} -> {out['load_after']}")
    print(json.dumps(result)[:1500])
    return out


def child_tanimoto100k() -> dict:
    """SLQ on the Tanimoto kernel of 100,000 Morgan fingerprints (q = 1, rtol = 0.05)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_approx import molecule_analogues

    from diversity_core.approx import vendi_slq

    t0 = time.perf_counter()
    X = molecule_analogues(100_000, seed=0)
    fp_seconds = time.perf_counter() - t0
    load0 = _load_avg()
    t0 = time.perf_counter()
    est = vendi_slq(X, kernel="tanimoto", q=[1.0], rng=0, rtol=0.05, max_seconds=900)
    return {"fingerprint_seconds": fp_seconds, "seconds": time.perf_counter() - t0, "load_before": load0,
            "load_after": _load_avg(), "nnz_per_row": X.nnz / X.shape[0], "result": est.to_dict()}


def section_tanimoto100k(args) -> dict:
    run, rss = _run_child("tanimoto100k")
    res = run["result"]
    j = res["qs"].index("1")
    value, lo, hi = res["value"][j], res["low"][j], res["high"][j]
    out = {**run, "peak_rss_mb": rss, "estimate": value, "low": lo, "high": hi,
           "half_width": (hi - lo) / (2 * value)}
    print(f"tanimoto, 100000 Morgan fingerprints: VS_1 {value:.5g} [{lo:.5g}, {hi:.5g}], relative half-width "
          f"{out['half_width']:.2%} (target <= 5%) in {run['seconds']:.0f} s (target <= 900 s; fingerprints "
          f"{run['fingerprint_seconds']:.0f} s apart), peak RSS {rss:.0f} MiB, {res['probes']} probes, "
          f"load {run['load_before']} -> {run['load_after']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sections", nargs="+", default=["coverage", "n20k"],
                    choices=["coverage", "n20k", "n100k", "tanimoto100k"])
    ap.add_argument("--datasets", type=int, default=40, help="coverage: datasets (3 cases each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--truth", action="store_true", help="n20k: recompute the dense truth")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps({"truth": child_truth, "n20k": child_n20k, "tanimoto100k": child_tanimoto100k}[args.child]()))
        return
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "slq.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    for name in args.sections:
        t0 = time.perf_counter()
        load = _load_avg()
        body = {"coverage": section_coverage, "n20k": section_n20k, "n100k": section_n100k,
                "tanimoto100k": section_tanimoto100k}[name](args)
        doc[name] = {"machine": platform.platform(), "cpus": os.cpu_count(), "load_before": load,
                     "load_after": _load_avg(), "seconds": time.perf_counter() - t0, **body}
        path.write_text(json.dumps(doc, indent=1, default=float))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
