"""Every number right (issue 38): the project's values against the reference implementations.

Each part computes one family of numbers on real collections the project ships (the digits,
icons, text and molecules demos, featurized offline) and on constructed cases with known
answers, compares them with a reference, and records the largest relative difference:

- ``float32``: VS_q (q = 0.5, 1, 2, inf) of float32 features against the same values in
  float64 (dense, dual and streamed paths), and against the ``vendi-score`` package on the
  float32 rows and on their float64 copy (``score_dual``, every order: the package's ``score_X``
  ignores q). Target 1e-6 between float32 and float64; the package counts every eigenvalue above
  zero, so at q < 1 it also counts round-off.
- ``defaults``: whether the default bounds, SLQ interval and sketch range contain the default
  exact VS_1 (issue 38 item 2's case and the digits).
- ``prdc``: precision, recall, density, coverage against the ``prdc`` package (exact path),
  the approximate neighbour path against the exact one (radius errors, recall of the k-NN
  sets, coverage), both at the origin and translated by 1e4 with a spread of 1e-3.
- ``ties``: density and coverage on n-gram features (many pairs exactly sqrt(2) apart) under
  two row orders, against a recount with the closed-ball rule in exact arithmetic
  (every float64 value as an exact integer multiple of 2**-1074).
- ``frechet``: FD against ``torchmetrics``' ``_compute_fid`` and a 40-digit mpmath reference on
  full-rank and n < d cases, and the known answer |c|^2 for G = R + c.
- ``kid``: KID with one subset of all items against ``torchmetrics``' ``poly_mmd``.
- ``bandwidth``: the rbf median bandwidth and VS_1 under five permutations of the rows.
- ``memorization``: the per-item flag's false-positive rate on held-out training items (fresh
  samples of the training distribution) and its recall of injected near-copies.

The magnitude curvature experiment (Table 1 of the magnitude paper) has its own script,
``bench_magnitude_curvature.py``. Writes ``benchmarks/results/fidelity.json``. Usage::

    python benchmarks/bench_fidelity.py [--parts float32 defaults prdc ties frechet kid bandwidth memorization]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
RESULTS = HERE / "results" / "fidelity.json"
QS = (0.5, 1.0, 2.0, np.inf)

import diversity_core as dc  # noqa: E402


def rel(a, b) -> float:
    a, b = float(a), float(b)
    return abs(a - b) / max(abs(b), 1e-300)


def load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def real_features() -> dict:
    """float32 feature sets of the demos (the featurizers run offline; skipped when an extra is missing)."""
    out = {}
    for demo, featurizer in (("digits", "pixels"), ("icons", "efficientnet_lite0"), ("text", "minilm")):
        try:
            F = np.asarray(dc.featurize(dc.load_demo(demo), featurizer))
        except Exception as exc:  # noqa: BLE001 - an optional model missing
            print(f"  {demo}/{featurizer} skipped: {exc}", file=sys.stderr)
            continue
        out[f"{demo}/{featurizer}"] = F.astype(np.float32)
    return out


# ---------------------------------------------------------------------------------------------
def part_float32() -> dict:
    import vendi_score.vendi as ref

    res = {}
    g = np.random.default_rng(0)
    sets = real_features()
    # a float32 embedding with a decaying spectrum (n > d and n < d)
    sets["decaying 1500x256"] = (g.normal(size=(1500, 256)) * np.logspace(0, -3, 256)).astype(np.float32)
    sets["decaying 300x512"] = (g.normal(size=(300, 512)) * np.logspace(0, -3, 512)).astype(np.float32)
    for name, X32 in sets.items():
        X64 = X32.astype(np.float64)
        row = {"n": X32.shape[0], "d": X32.shape[1]}
        for method in ("dense", "dual"):
            diffs = [rel(dc.vendi_score(X32, q=q, method=method), dc.vendi_score(X64, q=q, method=method))
                     for q in QS]
            row[f"{method}: float32 vs float64"] = max(diffs)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "x.npy"
            np.save(path, X32)
            with dc.config_context(chunk_bytes=256 * 1024):  # read in chunks (dual where d < n)
                streamed = dc.compute_spectrum(str(path))
            row["streamed float32 vs in-memory float64"] = max(
                rel(streamed.vendi(q), dc.vendi_score(X64, q=q)) for q in QS)
        ours = {q: dc.vendi_score(X32, q=q) for q in QS}
        # the package's score_X ignores q (it calls score_K with q=1) and takes "inf" as a string;
        # score_dual keeps every eigenvalue above 0, so at q < 1 it counts round-off eigenvalues
        theirs = {q: ref.score_dual(X32, q="inf" if q == np.inf else q) for q in QS}
        row["vs vendi-score package score_dual (float32 rows)"] = {str(q): rel(ours[q], theirs[q]) for q in QS}
        theirs64 = {q: ref.score_dual(X64, q="inf" if q == np.inf else q) for q in QS}
        row["vs vendi-score package score_dual (float64 copy)"] = {str(q): rel(ours[q], theirs64[q]) for q in QS}
        row["values"] = {str(q): ours[q] for q in QS}
        res[name] = row
        print(f"  {name}: {json.dumps(row, default=float)}", flush=True)
    return res


def part_defaults() -> dict:
    res = {}
    cases = {"offset gaussians 1500x16": np.random.default_rng(8).normal(size=(1500, 16)) + 1,
             "digits pixels": np.asarray(dc.featurize(dc.load_demo("digits"), "pixels"))}
    for name, X in cases.items():
        exact = dc.vendi_score(X, q=1.0)
        b = dc.vendi_bounds(X, q=[1.0])
        low, high = b.interval(1.0)
        s = dc.vendi_slq(X, q=[1.0], rng=0)
        e = dc.vendi_estimate(X, rng=0)
        j = int(np.flatnonzero(e.qs == 1.0)[0])
        res[name] = {"exact VS_1": exact, "bounds": [low, high], "bounds contain": bool(low <= exact <= high),
                     "slq": [float(s.low[0]), float(s.high[0])],
                     "slq covers": bool(s.low[0] <= exact <= s.high[0]),
                     "sketch guaranteed range contains": bool(e.guaranteed_low[j] <= exact <= e.guaranteed_high[j])}
        print(f"  {name}: {res[name]}", flush=True)
    return res


def _prdc_values(r) -> dict:
    return {k: float(getattr(r, k).value) for k in ("precision", "recall", "density", "coverage")}


def part_prdc() -> dict:
    import prdc as ref

    from diversity_core.evaluation import prdc

    res = {}
    F = np.asarray(dc.featurize(dc.load_demo("digits"), "pixels"))
    labels = np.asarray(dc.load_demo("digits").groups)
    groups = sorted(set(labels))
    R, G = F[labels == groups[0]], F[labels == groups[1]]
    ours = _prdc_values(prdc(R, G, k=5, nn_method="exact", n_resamples=0))
    theirs = ref.compute_prdc(R, G, nearest_k=5)
    # digits pixels are integers: many distances tie with radii, where the closed ball (ours) and
    # the package's open ball (<) differ by design; on continuous features they must agree
    res["digits (integer pixels, ties) exact vs prdc package"] = {k: rel(ours[k], theirs[k]) for k in ours}
    g0 = np.random.default_rng(2)
    Rc, Gc = g0.normal(size=(1500, 64)), g0.normal(size=(1500, 64)) + 0.2
    ours = _prdc_values(prdc(Rc, Gc, k=5, nn_method="exact", n_resamples=0))
    theirs = ref.compute_prdc(Rc, Gc, nearest_k=5)
    res["gaussians 1500x64 (no ties) exact vs prdc package"] = max(rel(ours[k], theirs[k]) for k in ours)
    g = np.random.default_rng(3)
    A, B = g.normal(size=(4000, 32)), g.normal(size=(4000, 32)) + 0.1
    for offset, spread in ((0.0, 1.0), (1e4, 1e-3)):
        Rs, Gs = offset + spread * A, offset + spread * B
        exact = _prdc_values(prdc(Rs, Gs, k=5, nn_method="exact", n_resamples=0))
        try:
            approx = _prdc_values(prdc(Rs, Gs, k=5, nn_method="approximate", n_resamples=0))
        except Exception as exc:  # noqa: BLE001 - the option's name
            approx = {"error": str(exc)}
        key = f"gaussians 4000x32 offset {offset:g} spread {spread:g}"
        res[key] = {"exact": exact, "approximate": approx,
                    "largest difference": max((abs(approx[k] - exact[k]) for k in exact if k in approx),
                                              default=None)}
        base = _prdc_values(prdc(A, B, k=5, nn_method="exact", n_resamples=0))
        res[key]["exact vs untranslated"] = max(abs(exact[k] - base[k]) for k in exact)
        print(f"  {key}: {res[key]}", flush=True)
    return res


#: Every float64 is an integer multiple of 2**-1074: scaled by 2**1074 it is an exact Python int.
_SCALE = 1074


def _exact_rows(X: np.ndarray) -> list:
    """Each row as {column: exact integer value x 2**1074} over its non-zero entries."""
    rows = []
    for r in X:
        nz = np.flatnonzero(r)
        rows.append({int(j): (Fraction(float(r[j])) * (1 << _SCALE)).numerator for j in nz})
    return rows


def _exact_sq(a: dict, b: dict) -> int:
    """||a - b||^2 x 2**2148, exactly (integers over the union of the non-zero columns)."""
    total = 0
    for j in a.keys() | b.keys():
        diff = a.get(j, 0) - b.get(j, 0)
        total += diff * diff
    return total


def part_ties() -> dict:
    """Density/coverage on n-gram features against a recount of the closed-ball rule on the true geometry.

    The n-gram rows' true squared norms are multiples of 1/4 (each n's block L2-normalised and
    scaled by 1/2; 1 for a text with 4-grams), so the true squared distance is
    |x|^2 + |y|^2 - 2 <x, y> with those norms, and documents sharing no n-gram are exactly
    sqrt(2) apart (their float dot product is exactly 0). The recount compares those true
    values (ties resolved exactly), where the stored rows' norms carry round-off that decides the
    ties at random. A second recount uses the stored float64 values as exact numbers (integer
    arithmetic), which is what round-off alone would give.
    """
    from diversity_core.evaluation import prdc

    texts = dc.load_demo("text")
    F = dc.featurize(texts, "ngram")
    F = F.toarray() if hasattr(F, "toarray") else np.asarray(F)
    R, G = F[:300].astype(np.float64), F[300:600].astype(np.float64)
    k = 5

    def closed_ball(D2_rr, D2_gr):
        D2_rr = D2_rr.copy()
        np.fill_diagonal(D2_rr, np.inf)
        radius = np.sort(D2_rr, axis=1)[:, k - 1]
        inside = D2_gr <= radius[None, :]
        return inside.sum() / (k * len(D2_gr)), inside.any(axis=0).mean(), int((D2_gr == radius[None, :]).sum())

    # true squared norms: a quarter per n whose block is non-empty (1 for texts with 4-grams)
    nr, ng = np.round(4 * (R * R).sum(1)) / 4, np.round(4 * (G * G).sum(1)) / 4
    true_density, true_coverage, ties = closed_ball(nr[:, None] + nr[None, :] - 2.0 * (R @ R.T),
                                                    ng[:, None] + nr[None, :] - 2.0 * (G @ R.T))
    out = {"items": [len(R), len(G)], "pairs tied with a radius (true geometry)": ties,
           "true density": true_density, "true coverage": true_coverage}
    used = np.flatnonzero((np.abs(R[:120]).sum(0) + np.abs(G[:100]).sum(0)) > 0)
    Re, Ge = _exact_rows(R[:120, used]), _exact_rows(G[:100, used])
    RR = np.array([[_exact_sq(a, b) for b in Re] for a in Re], dtype=object)
    GR = np.array([[_exact_sq(a, b) for b in Re] for a in Ge], dtype=object)
    np.fill_diagonal(RR, 1 << 4000)
    radius = [sorted(row)[k - 1] for row in RR]
    inside = np.array([[GR[i, j] <= radius[j] for j in range(len(Re))] for i in range(len(Ge))])
    stored = {"density": inside.sum() / (k * len(Ge)), "coverage": float(inside.any(axis=0).mean())}
    perm = np.random.default_rng(0).permutation(len(G))
    for label, (Rx, Gx) in {"order 1": (R, G), "order 2": (R[::-1], G[perm])}.items():
        v = _prdc_values(prdc(Rx, Gx, k=k, nn_method="exact", n_resamples=0))
        out[label] = {"density": v["density"], "coverage": v["coverage"],
                      "density error vs true": rel(v["density"], true_density),
                      "coverage error vs true": rel(v["coverage"], true_coverage)}
    # digits pixels are k / 255 for integer k: the true geometry is the integers' (exact squared
    # distances in int64, ties everywhere); the stored values carry the rounding of k / 255
    P = np.asarray(dc.featurize(dc.load_demo("digits"), "pixels"))
    Pi = np.round(P * 255).astype(np.int64)
    assert np.array_equal(Pi / 255.0, P), "digits pixels are k / 255"
    Ri, Gi = Pi[::2], Pi[1::2]
    sq = lambda A, B: ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)  # noqa: E731
    dens, cov, tied = closed_ball(sq(Ri, Ri).astype(np.float64), sq(Gi, Ri).astype(np.float64))
    v = _prdc_values(prdc(P[::2], P[1::2], k=k, nn_method="exact", n_resamples=0))
    out["digits pixels k/255"] = {"pairs tied with a radius": tied, "exact density": dens, "exact coverage": cov,
                                    "project density": v["density"], "project coverage": v["coverage"],
                                    "density error": rel(v["density"], dens), "coverage error": rel(v["coverage"], cov)}
    sub = _prdc_values(prdc(R[:120], G[:100], k=k, nn_method="exact", n_resamples=0))
    out["120 x 100 subset: stored values recounted exactly"] = stored
    out["120 x 100 subset: project"] = {"density": sub["density"], "coverage": sub["coverage"]}
    print(f"  {out}", flush=True)
    return out


def _mp_trace_sqrt(S1, S2) -> float:
    import mpmath as mp

    mp.mp.dps = 40
    A, B = mp.matrix(S1.tolist()), mp.matrix(S2.tolist())
    w, V = mp.eigsy(A)
    H = V * mp.diag([mp.sqrt(max(x, 0)) for x in w]) * V.T
    ev, _ = mp.eigsy(H * B * H)
    return float(mp.fsum(mp.sqrt(max(x, 0)) for x in ev))


def part_frechet() -> dict:
    import torch
    from torchmetrics.image.fid import _compute_fid

    from diversity_core.evaluation import frechet_distance
    from diversity_core.evaluation._frechet import moments

    res = {}
    g = np.random.default_rng(5)
    cases = {"full rank 600x24": (g.normal(size=(600, 24)) @ g.normal(size=(24, 24)),
                                  g.normal(size=(500, 24)) @ g.normal(size=(24, 24)) + 0.3)}
    for name, (R, G) in cases.items():
        ours = frechet_distance(R, G, n_resamples=0).value.value
        mr, mg = moments(R), moments(G)
        tm = float(_compute_fid(torch.as_tensor(mg.mean), torch.as_tensor(mg.cov), torch.as_tensor(mr.mean),
                                torch.as_tensor(mr.cov)))
        ts = _mp_trace_sqrt(mr.cov, mg.cov)
        mp_value = float(((mr.mean - mg.mean) ** 2).sum() + np.trace(mr.cov) + np.trace(mg.cov) - 2 * ts)
        res[name] = {"vs mpmath 40 digits": rel(ours, mp_value), "torchmetrics vs mpmath": rel(tm, mp_value)}
    for n, d, decay in ((200, 512, -8), (64, 2048, -10), (1000, 128, 0)):
        R = g.normal(size=(n, d)) * np.logspace(0, decay, d)
        c = g.normal(size=d)
        want = float(c @ c)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = frechet_distance(R, R + c, n_resamples=0).value.value
        mr, mg = moments(R), moments(R + c)
        tm = float(_compute_fid(torch.as_tensor(mg.mean), torch.as_tensor(mg.cov), torch.as_tensor(mr.mean),
                                torch.as_tensor(mr.cov)))
        res[f"shift n={n} d={d} scales 1e{decay}"] = {"ours vs |c|^2": rel(ours, want),
                                                      "torchmetrics vs |c|^2": rel(tm, want)}
    print(f"  {res}", flush=True)
    return res


def part_kid() -> dict:
    import torch
    from torchmetrics.image.kid import poly_mmd

    from diversity_core.evaluation import kernel_distance

    g = np.random.default_rng(6)
    res = {}
    for n, d in ((400, 64), (300, 2048)):
        R, G = np.abs(g.normal(size=(n, d))), np.abs(g.normal(size=(n, d))) * 1.1
        ours = kernel_distance(R, G, n_subsets=1, subset_size=n, rng=0).mean
        theirs = float(poly_mmd(torch.as_tensor(R), torch.as_tensor(G)))
        res[f"{n}x{d}"] = rel(ours, theirs)
    print(f"  {res}", flush=True)
    return res


def part_bandwidth() -> dict:
    from diversity_core.kernels import median_distance

    res = {}
    sets = {"digits pixels": np.asarray(dc.featurize(dc.load_demo("digits"), "pixels"))}
    g = np.random.default_rng(7)
    sets["two clusters 2500x12"] = np.vstack([g.normal(size=(1500, 12)), 3 + 0.3 * g.normal(size=(1000, 12))])
    for name, X in sets.items():
        perms = [np.arange(len(X))] + [g.permutation(len(X)) for _ in range(4)]
        sig = [median_distance(X[p]) for p in perms]
        vs = [dc.vendi_score(X[p], kernel="rbf", q=1.0) for p in perms]
        res[name] = {"sigma spread (relative)": (max(sig) - min(sig)) / min(sig),
                     "VS_1 spread (relative)": (max(vs) - min(vs)) / min(vs)}
    print(f"  {res}", flush=True)
    return res


def part_memorization() -> dict:
    """The per-item flag on fresh samples of the training distribution, and on injected near-copies."""
    from scipy.spatial import cKDTree

    from diversity_core.evaluation import memorization

    res = {}
    g = np.random.default_rng(11)
    sets = {"gaussians d=128": g.normal(size=(3000, 128)),
            "digits pixels (5.8% exact duplicates)": np.asarray(dc.featurize(dc.load_demo("digits"), "pixels"))}
    for name, X in sets.items():
        idx = g.permutation(len(X))
        half = len(X) // 2
        train, fresh = X[idx[:half]], X[idx[half:]]
        # injected near-copies: training items plus noise up to half the median training NN distance
        dist, _ = cKDTree(train).query(train, k=2)
        radius = 0.5 * float(np.median(dist[:, 1]))
        noise = g.normal(size=train[:300].shape)
        noise *= radius * g.uniform(0, 1, size=(300, 1)) / np.linalg.norm(noise, axis=1, keepdims=True)
        for alpha in (0.01, 0.05):
            r = memorization(fresh, train, alpha=alpha, rng=0)
            rc = memorization(train[:300] + noise, train, alpha=alpha, rng=0)
            res[f"{name}, alpha {alpha:g}"] = {
                "fresh items flagged": float(np.mean(r.flagged)), "held-out FPR": r.heldout_fpr.value,
                "threshold": r.threshold, "recall of near-copies": float(np.mean(rc.flagged)), "note": r.note}
    print(f"  {res}", flush=True)
    return res


PARTS = {"float32": part_float32, "defaults": part_defaults, "prdc": part_prdc, "ties": part_ties,
         "frechet": part_frechet, "kid": part_kid, "bandwidth": part_bandwidth,
         "memorization": part_memorization}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    args = ap.parse_args()
    # parts run alone update their entry; the others keep their last measurement
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    for part in args.parts:
        print(f"{part} (load {load()})", flush=True)
        start = time.perf_counter()
        try:
            out = PARTS[part]()
        except Exception as exc:  # noqa: BLE001 - one part's failure is recorded, the others run
            traceback.print_exc()
            out = {"error": f"{type(exc).__name__}: {exc}"}
        results[part] = {"result": out, "seconds": round(time.perf_counter() - start, 1), "load_after": load()}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1, default=float) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
