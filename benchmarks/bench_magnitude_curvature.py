"""Table 1 of the magnitude paper (issue 38, item 7): MagArea predicts the curvature of a disk.

Limbeck et al. (NeurIPS 2024), Sec. 4.1: point clouds on unit disks of constant curvature
K in [-2, 2] (following Turkes et al. 2022), MagArea as a single feature, curvature predicted by
piecewise linear and quantile regression under 5-fold cross-validation: MSE 0.05 +- 0.03
(piecewise linear) and 0.10 +- 0.05 (quantile).

Each disk is ``--points`` points drawn uniformly by area on the disk of geodesic radius 1
(``diversity_core.magnitude._curvature``), with geodesic distances (``metric="precomputed"``).
MagArea is computed with the interval rules compared here:

- ``median t_conv``: the paper's rule for comparing several spaces without a reference
  (Sec. 3.4: t_cut = the median of their convergence scales), the default of
  ``compare_magnitude`` / ``mag_diff_matrix``, of ``diversity magnitude`` with groups and of the
  app's Magnitude page (magnipy 1.0.0's ``Diversipy``, ``q=0.5``, does the same);
- ``own t_conv``: each disk on its own ``[0, t_conv]``, the default of ``mag_area`` for one set
  (magnipy's ``Magnipy(X).MagArea()``): areas on different intervals, not comparable;
- ``t_cut = c``: one given common interval (``--t-cuts``).

For each rule: the Pearson correlation of MagArea with K, and the cross-validated MSE (5 folds,
shuffled, ``--repeats`` times; mean and standard deviation over the folds) of linear least
squares, of a two-piece linear fit (one hinge at the training fold's median MagArea) and of
median (quantile 0.5) regression, all on the single standardised feature.

Writes ``benchmarks/results/magnitude_curvature.json``. Usage::

    python benchmarks/bench_magnitude_curvature.py [--disks 100] [--points 500] [--seed 0]
        [--t-cuts 2.5 10 20] [--repeats 10] [--out PATH]

The full run (100 disks of 500 points) takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from diversity_core.magnitude import compare_magnitude, mag_area  # noqa: E402
from diversity_core.magnitude._curvature import _curvature_disk  # noqa: E402

RESULTS = HERE / "results" / "magnitude_curvature.json"
#: Table 1 of the paper: MagArea with piecewise linear and with quantile regression (mean, sd).
PAPER = {"piecewise_linear": (0.05, 0.03), "quantile": (0.10, 0.05)}


def disks(n_disks: int, n_points: int, seed: int) -> tuple:
    """``(curvatures, {name: D})``: K uniform on [-2, 2], one disk of ``n_points`` per K."""
    rng = np.random.default_rng(seed)
    ks = rng.uniform(-2.0, 2.0, n_disks)
    return ks, {f"disk{i:03d}": _curvature_disk(float(k), n_points, rng) for i, k in enumerate(ks)}


def _design(x: np.ndarray, knot) -> np.ndarray:
    cols = [np.ones_like(x), x]
    if knot is not None:
        cols.append(np.maximum(x - knot, 0.0))
    return np.column_stack(cols)


def _fit_predict(model: str, x_tr, y_tr, x_te):
    if model == "quantile":
        from sklearn.linear_model import QuantileRegressor

        reg = QuantileRegressor(quantile=0.5, alpha=0.0, solver="highs").fit(x_tr[:, None], y_tr)
        return reg.predict(x_te[:, None])
    knot = float(np.median(x_tr)) if model == "piecewise_linear" else None
    coef = np.linalg.lstsq(_design(x_tr, knot), y_tr, rcond=None)[0]
    return _design(x_te, knot) @ coef


def cv_mse(x: np.ndarray, y: np.ndarray, model: str, repeats: int, folds: int = 5, seed: int = 0) -> dict:
    """Mean and sd of the per-fold test MSE of predicting y from the single feature x."""
    x = (x - x.mean()) / x.std()
    rng = np.random.default_rng(seed)
    errs = []
    for _ in range(repeats):
        order = rng.permutation(x.size)
        for test in np.array_split(order, folds):
            train = np.setdiff1d(order, test)
            pred = _fit_predict(model, x[train], y[train], x[test])
            errs.append(float(np.mean((pred - y[test]) ** 2)))
    return {"mse": float(np.mean(errs)), "sd": float(np.std(errs))}


def evaluate(areas: np.ndarray, ks: np.ndarray, repeats: int) -> dict:
    """Correlation with K and the three regressions' CV MSE."""
    out = {"pearson_r": float(np.corrcoef(areas, ks)[0, 1])}
    for model in ("linear", "piecewise_linear", "quantile"):
        out[model] = cv_mse(areas, ks, model, repeats)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--disks", type=int, default=100)
    parser.add_argument("--points", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--t-cuts", type=float, nargs="*", default=[2.5, 10.0, 20.0])
    parser.add_argument("--repeats", type=int, default=10, help="repeats of the 5-fold split")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"JSON output (default {RESULTS})")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    load = [os.getloadavg()[0]]
    ks, sets = disks(args.disks, args.points, args.seed)
    names = list(sets)
    rules: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        comp = compare_magnitude(sets, metric="precomputed")  # the default: median t_conv
        t_conv = np.array([comp.t_conv[k] for k in names])
        rules["median t_conv"] = (comp.t_cut, np.array([comp.areas[k] for k in names]))
        own = np.array([mag_area(sets[k], metric="precomputed", t_cut=comp.t_conv[k]).area for k in names])
        rules["own t_conv"] = (None, own)
        for c in args.t_cuts:
            fixed = compare_magnitude(sets, metric="precomputed", t_cut=c)
            rules[f"t_cut = {c:g}"] = (c, np.array([fixed.areas[k] for k in names]))
    load.append(os.getloadavg()[0])

    report = {
        "disks": args.disks, "points": args.points, "seed": args.seed, "repeats": args.repeats,
        "t_conv": {"median": float(np.median(t_conv)), "min": float(t_conv.min()), "max": float(t_conv.max())},
        "paper_table1": {k: {"mse": m, "sd": s} for k, (m, s) in PAPER.items()},
        "rules": {}, "seconds": None, "load_average_1min": load,
    }
    print(f"{args.disks} disks of {args.points} points, K ~ U[-2, 2] (seed {args.seed}); t_conv median "
          f"{np.median(t_conv):.4g} (range {t_conv.min():.4g} - {t_conv.max():.4g})")
    print(f"{'interval rule':<26}{'t_cut':>9}{'r(MagArea, K)':>15}{'linear':>16}{'piecewise lin.':>16}"
          f"{'quantile':>16}")
    for rule, (t_cut, areas) in rules.items():
        res = evaluate(areas, ks, args.repeats)
        res["t_cut"] = t_cut
        report["rules"][rule] = res
        cells = [f"{res[m]['mse']:.4f} ± {res[m]['sd']:.3f}" for m in ("linear", "piecewise_linear", "quantile")]
        shown = "per disk" if t_cut is None else f"{t_cut:.4g}"
        print(f"{rule:<26}{shown:>9}{res['pearson_r']:>15.3f}" + "".join(f"{c:>16}" for c in cells))
    print(f"{'paper (Table 1)':<26}{'':>9}{'':>15}{'-':>16}{'0.05 ± 0.03':>16}{'0.10 ± 0.05':>16}")
    report["seconds"] = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{report['seconds']:.0f} s, load {load[0]:.1f} -> {load[-1]:.1f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
