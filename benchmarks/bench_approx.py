"""Vendi scores beyond the dense limit (issue 12): bounds and sketch estimates against exact values.

Sections (each runs in its own process, so its peak memory is its own):

- ``n10k``: n = 10,000 digit images (the 1797 scikit-learn digits, each shifted by up to 2 pixels:
  real images, 64 features), RBF with the median bandwidth. Exact ``eigvalsh`` of the dense
  matrix as truth; guaranteed bounds at k = 20 ... 200 (width at q = 0.5, 1, 2, inf); Nystrom
  (randomly pivoted Cholesky and uniform landmarks) and RFF estimates (error of each, interval);
  every time relative to the exact path.
- ``coverage``: many n = 2000 datasets (random subsets of the shifted digits at 0.5x, 1x and 2x the
  median bandwidth; Morgan fingerprints of enumerated molecule analogues for Tanimoto), each
  estimator with 5 replicates: how often its 95% interval covers the quantity it says it targets
  (``covers_target``: the full-sample VS_q for Nystrom, the sketch's own limit for random
  features, from 40 further replicates) and the exact full-sample VS_q (``covers``), and its mean
  relative error; plus whether both guaranteed bounds (Lanczos k = 50, Nystrom m = 400) contain
  the exact value at q = 0, 0.5, 1, 2, inf.
- ``rbf100k``: n = 100,000 (shifted digits plus pixel noise), RBF: every q with bounds or error
  bars under a 5-minute budget; peak memory.
- ``tanimoto100k``: n = 100,000 enumerated analogues of RDKit's bundled NCI molecules (one to two
  atoms added to each of 5000 parents), Morgan radius 2, 2048 bits, Tanimoto.

Run: ``python benchmarks/bench_approx.py [--sections n10k coverage rbf100k tanimoto100k]``;
writes each section to ``benchmarks/results/approx_<section>.json`` and gathers the latest of
every section in ``approx.json``. ``APPROX_CACHE=DIR`` reuses the n = 10,000
exact eigenvalues of an earlier run instead of timing the exact path again.
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

import numpy as np

from diversity_core._orders import q_key

RESULTS = Path(__file__).resolve().parent / "results"
QS = [0.5, 1.0, 2.0, float("inf")]
EST_QS = [1.0, 2.0, float("inf")]


def peak_rss_mb() -> float:
    """Peak resident memory of this process (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def shifted_digits(n: int, *, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """n digit images: the 1797 digits shifted by (dx, dy) in [-2, 2]^2, cycled, plus optional noise."""
    from sklearn.datasets import load_digits

    imgs = load_digits().images
    shifts = [(dx, dy) for dx in range(-2, 3) for dy in range(-2, 3)]
    rng = np.random.default_rng(seed)
    out = np.empty((n, 64))
    for i in range(n):
        img = imgs[i % len(imgs)]
        dx, dy = shifts[(i // len(imgs)) % len(shifts)]
        out[i] = np.roll(np.roll(img, dx, axis=1), dy, axis=0).ravel()
    if noise:
        out += rng.normal(scale=noise, size=out.shape)
    return out[rng.permutation(n)]


def molecule_analogues(n: int, *, seed: int = 0):
    """Morgan fingerprints (CSR, 0/1), all distinct, of n analogues of RDKit's NCI molecules."""
    import scipy.sparse as sp
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    from diversity_core.data.demos import rdkit_data_files

    RDLogger.DisableLog("rdApp.*")
    lines = rdkit_data_files()["nci"].read_text().splitlines()
    parents = [m for m in (Chem.MolFromSmiles(line.split()[0]) for line in lines if line.strip()) if m is not None]
    rng = np.random.default_rng(seed)
    elements = [6, 7, 8, 9, 17]
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    seen, indptr, indices = set(), [0], []
    while len(indptr) <= n:
        rw = Chem.RWMol(parents[int(rng.integers(len(parents)))])
        try:
            for _ in range(int(rng.integers(1, 3))):
                sites = [a.GetIdx() for a in rw.GetAtoms() if a.GetTotalNumHs() > 0]
                if not sites:
                    break
                site = sites[int(rng.integers(len(sites)))]
                new = rw.AddAtom(Chem.Atom(elements[int(rng.integers(len(elements)))]))
                rw.AddBond(site, new, Chem.BondType.SINGLE)
                Chem.SanitizeMol(rw)
            bits = tuple(gen.GetFingerprint(rw).GetOnBits())
        except Exception:
            continue
        # distinct fingerprints (analogues that differ only beyond radius 2 count once)
        if bits and bits not in seen:
            seen.add(bits)
            indices.extend(bits)
            indptr.append(len(indices))
    data = np.ones(len(indices))
    return sp.csr_matrix((data, np.asarray(indices), np.asarray(indptr)), shape=(n, 2048))


def rel(a, b) -> float:
    """Relative error of a against b."""
    return float(a / b - 1.0)


def run_estimates(X, kernel, exact, configs, seed, **kw):
    """Each estimator config: time, values, interval, relative error against exact (q >= 1)."""
    from diversity_core.approx import vendi_estimate

    out = []
    for name, params in configs:
        t0 = time.perf_counter()
        est = vendi_estimate(X, kernel=kernel, q=EST_QS, rng=seed, **params, **kw)
        row = {"name": name, "seconds": time.perf_counter() - t0, "settings": est.settings, "target": est.target}
        for q in EST_QS:
            key = q_key(q)
            lo, hi = est.interval(q)
            row[key] = {"value": est.vendi(q), "low": lo, "high": hi}
            if exact is not None:
                row[key]["rel_error"] = rel(est.vendi(q), exact[key])
                row[key]["covers"] = bool(lo <= exact[key] <= hi)
        out.append(row)
        print(name, json.dumps({k: v for k, v in row.items() if k not in ("settings", "target")}), flush=True)
    return out


def band_rows(b, qs, exact) -> dict:
    """Per order: the band of ``b``, its relative width and whether it contains the exact value."""
    rows = {}
    for q in qs:
        lo, hi = b.vendi(q)
        rows[q_key(q)] = {"low": lo, "high": hi, "width": hi / lo - 1.0, "contains": bool(lo <= exact[q_key(q)] <= hi)}
    return rows


def section_n10k(args) -> dict:
    from diversity_core.approx import iter_vendi_bounds, nystrom_bounds
    from diversity_core.spectrum import compute_spectrum

    X = shifted_digits(10_000)
    # APPROX_CACHE=DIR reuses the exact eigenvalues (and their time) of an earlier run; by default
    # the exact path is timed in this run
    cache_dir = os.environ.get("APPROX_CACHE")
    cache = Path(cache_dir) / "approx_n10k_exact.npz" if cache_dir else None
    if cache is not None and cache.exists():
        # the exact eigenvalues of an earlier run on the same data (the dense path takes minutes)
        from diversity_core.spectrum import spectrum_from_eigenvalues

        saved = np.load(cache)
        spec = spectrum_from_eigenvalues(saved["eigenvalues"], n=10_000)
        spec = type(spec)(**{**spec.__dict__, "kernel": {"name": "rbf", "sigma": float(saved["sigma"])}})
        t_exact = float(saved["seconds"])
    else:
        t0 = time.perf_counter()
        spec = compute_spectrum(X, kernel="rbf", method="dense")
        t_exact = time.perf_counter() - t0
        if cache is not None:
            np.savez(cache, eigenvalues=spec.eigenvalues, sigma=spec.kernel["sigma"], seconds=t_exact)
    sigma = spec.kernel["sigma"]
    exact = {q_key(q): float(spec.vendi(q)) for q in QS + [0.0]}
    print("exact", t_exact, exact, flush=True)
    steps = []
    t0 = time.perf_counter()
    for b in iter_vendi_bounds(X, kernel="rbf", sigma=sigma, ks=[20, 50, 100, 200], q=[0.0] + QS, rng=0):
        step = {"k": b.k, "seconds": time.perf_counter() - t0, "matrix": b.settings["matrix"],
                "tolerance": b.tolerance}
        step.update(band_rows(b, [0.0] + QS, exact))
        steps.append(step)
        print("bounds", json.dumps(step), flush=True)
    # guaranteed bounds from Nystrom sketches (Loewner order): no pass over K
    for m in (1000, 2000):
        t1 = time.perf_counter()
        b = nystrom_bounds(X, kernel="rbf", sigma=sigma, m=m, q=[0.0] + QS, rng=0)
        step = {"method": f"nystrom m={m}", "seconds": time.perf_counter() - t1,
                "captured_trace": b.settings["captured_trace"]}
        step.update(band_rows(b, [0.0] + QS, exact))
        steps.append(step)
        print("bounds", json.dumps(step), flush=True)
    configs = [
        ("nystrom m=1000 rpcholesky", {"method": "nystrom", "m": 1000, "replicates": 5}),
        ("nystrom m=1000 uniform", {"method": "nystrom", "m": 1000, "landmarks": "uniform", "replicates": 5}),
        ("rff D=1000 (2000 features)", {"method": "rff", "D": 1000, "replicates": 5}),
    ]
    est = run_estimates(X, "rbf", exact, configs, 0, sigma=sigma)
    for row in est:
        row["time_vs_exact"] = row["seconds"] / t_exact
    for step in steps:
        step["time_vs_exact"] = step["seconds"] / t_exact
    return {"n": 10_000, "d": 64, "kernel": spec.kernel, "exact_seconds": t_exact, "exact": exact,
            "bounds": steps, "estimates": est}


def section_coverage(args) -> dict:
    from diversity_core.approx import nystrom_bounds, vendi_bounds, vendi_estimate
    from diversity_core.spectrum import compute_spectrum

    rng = np.random.default_rng(1)
    pool = shifted_digits(20_000, seed=1)
    fps = molecule_analogues(6000, seed=1)
    trials = []
    for t in range(args.trials):
        for kind in ("rbf", "tanimoto"):
            if kind == "rbf":
                X = pool[rng.choice(pool.shape[0], 2000, replace=False)]
                from diversity_core.kernels import median_distance

                sigma = median_distance(X) * float(rng.choice([0.5, 1.0, 2.0]))
                kw = {"sigma": sigma}
                configs = [("nystrom", {"method": "nystrom", "m": 400, "replicates": 5}),
                           ("rff", {"method": "rff", "D": 400, "replicates": 5})]
            else:
                X = fps[rng.choice(fps.shape[0], 2000, replace=False)]
                kw = {}
                configs = [("nystrom", {"method": "nystrom", "m": 400, "replicates": 5}),
                           ("tanimoto_rf", {"method": "tanimoto_rf", "D": 800, "replicates": 5})]
            spec = compute_spectrum(X, kernel=kind, method="dense", **kw)
            exact = {q_key(q): float(spec.vendi(q)) for q in EST_QS}
            rows = run_estimates(X, kind, exact, configs, int(rng.integers(2**31)), **kw)
            for row, (_, params) in zip(rows, configs):
                # the quantity the interval says it covers: the sketch's own limit at this D or m
                # (Nystrom: with the tail rule), approximated by the mean of 40 further independent
                # replicates (its standard error is ~1/6 of the interval's)
                ref = vendi_estimate(X, kernel=kind, q=EST_QS, rng=int(rng.integers(2**31)),
                                     **(params | {"replicates": 40}), **kw)
                target = {q_key(q): float(ref.vendi(q)) for q in EST_QS}
                for key, q in zip(target, EST_QS):
                    row[key]["target"] = target[key]
                    row[key]["covers_target"] = bool(row[key]["low"] <= target[key] <= row[key]["high"])
                    g = ref.guaranteed(q)
                    if g is not None:
                        # Nystrom's guaranteed range (same sketches) must hold the full-sample value
                        row[key]["guaranteed"] = list(g)
                        row[key]["guaranteed_contains"] = bool(g[0] * (1 - 1e-9) <= exact[key] <= g[1] * (1 + 1e-9))
            # the guaranteed bounds, both ways of seeing the top of the spectrum, at every order
            every = {q_key(q): float(spec.vendi(q)) for q in [0.0, 0.5] + EST_QS}
            held = {}
            for how, b in (("lanczos k=50", vendi_bounds(X, kernel=kind, k=50, q=[0.0, 0.5] + EST_QS,
                                                         method="lanczos", rng=0, **kw)),
                           ("nystrom m=400", nystrom_bounds(X, kernel=kind, m=400, q=[0.0, 0.5] + EST_QS,
                                                            rng=0, **kw))):
                held[how] = {key: {"low": b.vendi(q)[0], "high": b.vendi(q)[1],
                                   "contains": bool(b.contains(q, every[key], rtol=1e-9))}
                             for key, q in zip(every, [0.0, 0.5] + EST_QS)}
            print("bounds", json.dumps(held), flush=True)
            trials.append({"trial": t, "kernel": kind, "kw": kw, "exact": exact, "estimates": rows, "bounds": held})
    summary = {}
    for kind, name in (("rbf", "nystrom"), ("rbf", "rff"), ("tanimoto", "nystrom"), ("tanimoto", "tanimoto_rf")):
        rows = [r for tr in trials if tr["kernel"] == kind for r in tr["estimates"] if r["name"] == name]
        summary[f"{kind}/{name}"] = {
            (key): {"coverage": float(np.mean([r[key]["covers"] for r in rows])),
                    "coverage_of_target": float(np.mean([r[key]["covers_target"] for r in rows])),
                    "guaranteed_contains": (float(np.mean([r[key]["guaranteed_contains"] for r in rows]))
                                            if "guaranteed" in rows[0][key] else None),
                    "mean_abs_rel_error": float(np.mean([abs(r[key]["rel_error"]) for r in rows])),
                    "mean_rel_error": float(np.mean([r[key]["rel_error"] for r in rows]))}
            for key in ("1", "2", "inf")
        } | {"trials": len(rows)}
    for how in ("lanczos k=50", "nystrom m=400"):
        checks = [c["contains"] for tr in trials for c in tr["bounds"][how].values()]
        summary[f"bounds {how}"] = {"checks": len(checks), "contained": int(sum(checks))}
    print(json.dumps(summary, indent=1), flush=True)
    return {"n": 2000, "trials": trials, "summary": summary}


def section_100k(kind: str, args) -> dict:
    from diversity_core.approx import vendi_bounds

    t_data = time.perf_counter()
    X = shifted_digits(100_000, noise=1.0) if kind == "rbf" else molecule_analogues(100_000)
    t_data = time.perf_counter() - t_data
    print("data", t_data, flush=True)
    kw = {}
    if kind == "rbf":
        from diversity_core.kernels import median_distance

        kw["sigma"] = median_distance(X)
    t0 = time.perf_counter()
    # method="auto": at this n not even the float32 matrix fits, so the bounds come from a Nystrom
    # sketch (eigenvalue lower bounds in the PSD order), without any pass over K
    b = vendi_bounds(X, kernel=kind, k=200, q=[0.0] + QS, time_budget=args.budget / 2, m=args.m, rng=0, **kw)
    t_bounds = time.perf_counter() - t0
    bounds = {q_key(q): list(b.vendi(q)) for q in [0.0] + QS}
    print("bounds", f"{t_bounds:.1f} s", b.settings, bounds, f"peak {peak_rss_mb():.0f} MiB", flush=True)
    if kind == "rbf":
        configs = [("rff D=1024", {"method": "rff", "D": 1024, "replicates": 3}),
                   ("nystrom m=1024", {"method": "nystrom", "m": 1024, "replicates": 3})]
    else:
        configs = [("tanimoto_rf D=1024", {"method": "tanimoto_rf", "D": 1024, "replicates": 3}),
                   ("nystrom m=1024", {"method": "nystrom", "m": 1024, "replicates": 3})]
    est = run_estimates(X, kind, None, configs, 0, **kw)
    total = t_bounds + sum(r["seconds"] for r in est)
    return {"n": 100_000, "kernel": kind, "data_seconds": t_data, "bounds_seconds": t_bounds, "bounds_k": b.k,
            "bounds_settings": b.settings, "bounds": bounds, "estimates": est, "total_seconds": total,
            "peak_rss_mb": peak_rss_mb()}


SECTIONS = {
    "n10k": section_n10k,
    "coverage": section_coverage,
    "rbf100k": lambda a: section_100k("rbf", a),
    "tanimoto100k": lambda a: section_100k("tanimoto", a),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS))
    parser.add_argument("--section", choices=list(SECTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=6, help="coverage: datasets per kernel")
    parser.add_argument("--budget", type=float, default=300.0, help="100k sections: seconds")
    parser.add_argument("--m", type=int, default=2000, help="100k sections: landmarks of the Nystrom bounds")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if args.section:
        t0, load = time.perf_counter(), os.getloadavg()
        out = SECTIONS[args.section](args)
        out["section_seconds"] = time.perf_counter() - t0
        out["load_average_start"], out["load_average_end"] = load, os.getloadavg()
        out["peak_rss_mb"] = peak_rss_mb()
        (RESULTS / f"approx_{args.section}.json").write_text(json.dumps(out, indent=1, default=float))
        return
    merged = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "load_average_start": os.getloadavg()}, "sections": {}}
    for name in args.sections:
        cmd = [sys.executable, __file__, "--section", name, "--trials", str(args.trials), "--budget", str(args.budget),
               "--m", str(args.m)]
        print(f"== {name}", flush=True)
        subprocess.run(cmd, check=False)
    # every section's latest results, this run's and earlier ones' (each records its own load average)
    for name in SECTIONS:
        path = RESULTS / f"approx_{name}.json"
        if path.exists():
            merged["sections"][name] = json.loads(path.read_text())
    merged["machine"]["load_average_end"] = os.getloadavg()
    (RESULTS / "approx.json").write_text(json.dumps(merged, indent=1, default=float))


if __name__ == "__main__":
    main()
