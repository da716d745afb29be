"""Calibration of :func:`diversity_core.compare.compare` under the null (issue 14, defect 3).

Two groups are drawn from one Gaussian mixture, so every true difference is 0 and every
"resolved" verdict is a false one. Over ``--reps`` repetitions this measures, per score:

- the false-resolved rate (nominal ``1 - level``, 5 % at the default level) with its 95 %
  Wilson interval, and the coverage of the difference's interval (``1 -`` that rate);
- the SE ratio: the mean reported SE of the difference over the Monte Carlo standard deviation
  of the differences (1 is calibrated; above 1 conservative, below 1 anti-conservative), and
  the same ratio for one group's own estimate;
- the mean effective degrees of freedom of the pairwise intervals and their mean half-width.

Scenarios: ``equal`` (both groups hold exactly n items: spreads extrapolated with the power
law) and ``large`` (both hold ``--large`` items, default 5n: spectral spreads measured on
n-subsets, MagArea still extrapolated). MagDiff is measured with group ``a`` as the reference.
MagArea is computed with t_cut set by :func:`compare` (the median of the two groups' t_conv);
its interval is conditional on that t_cut, and both groups share it, so the null difference
is still 0.

The mixture: ``--components`` Gaussians in ``--d`` dimensions, means N(1, 1.5^2) per
coordinate and per-coordinate scales U(0.3, 1), fixed by ``--data-seed``; every repetition
draws fresh groups. Writes ``benchmarks/results/calibration.json``. Usage::

    python benchmarks/bench_calibration.py                      # 200 repetitions, both scenarios
    python benchmarks/bench_calibration.py --reps 30 --quick    # a quick look (spectral scores only)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from diversity_core.compare import compare  # noqa: E402

RESULTS = HERE / "results" / "calibration.json"


def mixture_sampler(d: int, components: int, seed: int):
    """A function ``draw(rng, n)`` sampling n items from one fixed Gaussian mixture."""
    g = np.random.default_rng(seed)
    means = g.normal(loc=1.0, scale=1.5, size=(components, d))
    scales = g.uniform(0.3, 1.0, size=(components, d))

    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        c = rng.integers(components, size=n)
        return means[c] + rng.normal(size=(n, d)) * scales[c]

    return draw


def population_t_cut(draw, n: int, seed: int) -> float:
    """The median convergence scale of 10 fresh n-samples (a t_cut that does not depend on the groups)."""
    from diversity_core.magnitude import convergence_scale

    rng = np.random.default_rng(seed + 1)
    return float(np.median([convergence_scale(draw(rng, n)) for _ in range(10)]))


def wilson(k: int, r: int, level: float = 0.95) -> tuple:
    """Wilson score interval of a binomial proportion k / r."""
    from scipy.special import ndtri

    z = float(ndtri(0.5 + level / 2))
    p = k / r
    centre = (p + z * z / (2 * r)) / (1 + z * z / r)
    half = z * math.sqrt(p * (1 - p) / r + z * z / (4 * r * r)) / (1 + z * z / r)
    return centre - half, centre + half


def simulate(draw, *, sizes, n, reps, seed, magnitude, compare_kw) -> dict:
    """Run the null simulation: ``reps`` comparisons of two groups of ``sizes`` items at n."""
    rng = np.random.default_rng(seed)
    rows = {}
    start, cpu = time.perf_counter(), time.process_time()
    for r in range(reps):
        groups = {"a": draw(rng, sizes[0]), "b": draw(rng, sizes[1])}
        cmp = compare(groups, n=n, rng=seed * 100_003 + r, magnitude=magnitude, size_curve=False,
                      reference="a" if magnitude else None, **compare_kw)
        for score in cmp.scores:
            if score == "MagDiff_rel":
                continue
            if score == "MagDiff":
                e = cmp.estimate("b", "MagDiff")
                lo, hi = e.confidence_interval
                diff, se, df, resolved = e.estimate, e.se, getattr(e, "df", None), not (lo <= 0 <= hi)
                half = 0.5 * (hi - lo)
                own = None
            else:
                p = cmp.pair(score, "a", "b")
                diff, se, df, resolved = p.difference, p.se, getattr(p, "df", None), p.resolved
                half = 0.5 * (p.confidence_interval.high - p.confidence_interval.low)
                own = cmp.estimate("b", score)
            row = rows.setdefault(score, {"diff": [], "se": [], "df": [], "resolved": [], "half": [],
                                          "est_b": [], "se_b": []})
            row["diff"].append(diff)
            row["se"].append(se)
            row["df"].append(math.inf if df is None else df)
            row["resolved"].append(bool(resolved))
            row["half"].append(half)
            if own is not None:
                row["est_b"].append(own.estimate)
                row["se_b"].append(own.se)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    out = {}
    for score, row in rows.items():
        k = int(np.sum(row["resolved"]))
        lo, hi = wilson(k, reps)
        diff = np.asarray(row["diff"])
        entry = {
            "false_resolved": k / reps,
            "false_resolved_ci": [lo, hi],
            "coverage": 1 - k / reps,
            "se_ratio": float(np.mean(row["se"]) / np.std(diff, ddof=1)),
            "mean_df": float(np.mean(np.minimum(row["df"], 1e6))),
            # the SE's own noise: observed sd of log SE against the one its degrees of freedom imply
            "sd_log_se": float(np.std(np.log(row["se"]), ddof=1)),
            "sd_log_se_from_df": float(math.sqrt(np.mean(1.0 / (2.0 * np.asarray(row["df"]))))),
            "mean_half_width": float(np.mean(row["half"])),
        }
        if row["est_b"]:
            entry["se_ratio_group"] = float(np.mean(row["se_b"]) / np.std(row["est_b"], ddof=1))
        out[score] = entry
    return {"scores": out, "wall_s": wall, "cpu_s": cpu}


def print_table(name: str, res: dict, level: float) -> None:
    """One line per score."""
    print(f"\n{name}: {res['wall_s']:.0f} s wall, {res['cpu_s']:.0f} s CPU")
    print(f"{'score':<9} {'false resolved':>15} {'(95% CI)':>16} {'coverage':>9} {'SE ratio':>9} "
          f"{'SE ratio b':>11} {'mean df':>8} {'sd log SE':>10} {'from df':>8}")
    for score, e in res["scores"].items():
        lo, hi = e["false_resolved_ci"]
        grp = e.get("se_ratio_group")
        print(f"{score:<9} {e['false_resolved']:>15.3f} {f'[{lo:.3f}, {hi:.3f}]':>16} {e['coverage']:>9.3f} "
              f"{e['se_ratio']:>9.3f} {'-' if grp is None else f'{grp:.3f}':>11} {e['mean_df']:>8.1f} "
              f"{e['sd_log_se']:>10.3f} {e['sd_log_se_from_df']:>8.3f}")
    print(f"(nominal false-resolved rate {1 - level:.3f})")


def main(argv=None) -> int:
    """Parse the options, run the scenarios, print and save the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="repetitions per scenario (default 200)")
    ap.add_argument("--n", type=int, default=300, help="the equal n (default 300)")
    ap.add_argument("--large", type=int, default=None, help="group size of the 'large' scenario (default 5n)")
    ap.add_argument("--scenarios", default="equal,large", help="comma-separated: equal, large")
    ap.add_argument("--quick", action="store_true", help="spectral scores only (no magnitude)")
    ap.add_argument("--d", type=int, default=8, help="dimension of the mixture (default 8)")
    ap.add_argument("--components", type=int, default=4, help="mixture components (default 4)")
    ap.add_argument("--data-seed", type=int, default=123)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--n-resamples", type=int, default=None, help="compare's n_resamples (default: its own)")
    ap.add_argument("--magnitude-replicates", type=int, default=None,
                    help="compare's magnitude_replicates (default: its own)")
    ap.add_argument("--n-scales", type=int, default=None, help="compare's n_scales (default: its own)")
    ap.add_argument("--fixed-t-cut", action="store_true",
                    help="hold MagArea's t_cut fixed (median t_conv of 10 fresh n-samples), so each group's own "
                    "MagArea interval can be checked too")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    kw = {"confidence_level": args.level}
    for name in ("n_resamples", "magnitude_replicates", "n_scales"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    draw = mixture_sampler(args.d, args.components, args.data_seed)
    if args.fixed_t_cut and not args.quick:
        kw["t_cut"] = population_t_cut(draw, args.n, args.data_seed)
    large = args.large or 5 * args.n
    plan = {"equal": (args.n, args.n), "large": (large, large)}
    load_before = os.getloadavg()[0]
    results = {}
    for i, name in enumerate(s.strip() for s in args.scenarios.split(",")):
        if name not in plan:
            ap.error(f"unknown scenario {name!r}; choose from {', '.join(plan)}")
        res = simulate(draw, sizes=plan[name], n=args.n, reps=args.reps, seed=args.seed + i,
                       magnitude=not args.quick, compare_kw=kw)
        res["group_sizes"] = list(plan[name])
        results[name] = res
        print_table(f"{name}: two groups of {plan[name][0]} items, n = {args.n}, {args.reps} repetitions",
                    res, args.level)
    out = {
        "benchmark": "calibration of compare() under the null",
        "settings": {**vars(args), "out": str(args.out), "compare_kwargs": kw,
                     "mixture": {"d": args.d, "components": args.components, "seed": args.data_seed}},
        "results": results,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}; load average {load_before:.1f} -> {out['load_average_after']:.1f} "
          f"on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
