"""Should network features be the default for images? The ranking under pixels and EfficientNet-Lite0.

For each built-in image demo: the time to compute EfficientNet-Lite0 features (from the result
store when they are there: pass ``--no-cache`` to time the model), the pixel-background share
(:func:`diversity_core.robustness.background_dominance`) and its time, and the groups' ranking
under pixels and EfficientNet with the cosine and RBF kernels
(:func:`diversity_core.robustness.representation_robustness`), with the verdict. The figures
are recorded in ``docs/comparisons.md`` ("Does the ranking survive another representation?").
Writes ``benchmarks/results/robustness.json``. Usage::

    python benchmarks/bench_robustness.py                 # icons, digits, shapes
    python benchmarks/bench_robustness.py --demos icons --no-cache
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "robustness.json"


def run(name: str) -> dict:
    """One demo's figures."""
    from diversity_core.data import load_demo
    from diversity_core.featurizers import featurize
    from diversity_core.robustness import background_dominance, representation_robustness

    ds = load_demo(name)
    t = time.perf_counter()
    network = featurize(ds, "efficientnet_lite0")
    t_network = time.perf_counter() - t
    t = time.perf_counter()
    background = background_dominance(ds.items, groups=ds.groups)
    t_background = time.perf_counter() - t
    t = time.perf_counter()
    result = representation_robustness(
        {"pixels": featurize(ds, "pixels"), "efficientnet_lite0": network}, ds.groups
    )
    return {
        "items": ds.n,
        "efficientnet_s": t_network,
        "background_s": t_background,
        "robustness_s": time.perf_counter() - t,
        "background": background.to_dict(),
        "verdict": result.verdict,
        "summary": result.summary(),
        "rankings": {r.label: list(r.ranking) for r in result.rows},
    }


def main() -> None:
    """Parse the options, run the demos, print and save the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demos", nargs="+", default=["icons", "digits", "shapes"])
    ap.add_argument(
        "--no-cache", action="store_true", help="time the model instead of reading the result store"
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    if args.no_cache:
        os.environ["DIVERSITY_NO_CACHE"] = "1"
    results = {}
    for name in args.demos:
        res = results[name] = run(name)
        print(
            f"{name}: {res['items']} images; EfficientNet {res['efficientnet_s']:.1f} s; background share "
            f"{res['background']['share']:.2f} (max within a group "
            f"{max(res['background']['group_shares'].values()):.2f}, {res['background_s'] * 1000:.0f} ms); "
            f"verdict {res['verdict']}"
        )
        for label, ranking in res["rankings"].items():
            print(f"    {label:30s} {' > '.join(ranking)}")
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    print("load average:", " ".join(load))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"load_average": load, "results": results}, indent=2))


if __name__ == "__main__":
    main()
