"""`diversity compare` on one text table, every default (issue 22): 8 groups x 150 short quotes.

The table is made here, offline and seeded: 8 "models" each write 150 short sentences from a
shared vocabulary, each model with its own topic words and its own amount of repetition (so the
groups really differ in diversity). The command is the one a user types,

    diversity compare quotes.csv --group-column model --out report.html --json report.json

with every default (featurizer, kernel, orders, subsets, magnitude), run in a fresh process
with an empty result store (``--cache-dir`` a new temporary folder), timed end to end. With
``--profile`` it also writes a cProfile of the same run and prints its top functions.

Target: <= 60 s in all on a quiet 2-core machine (962 s before issue 22). Writes
``benchmarks/results/compare.json``. Usage::

    python benchmarks/bench_compare.py [--groups 8] [--per-group 150] [--profile]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "compare.json"
TARGET_S = 60.0

COMMON = ("the a of and to in is it that was for on are with as be at this have from or one had by but not "
          "what all were we when your can said there use an each which she do how their if will up other about "
          "out many then them these so some her would make like him into time has look two more write go see "
          "number no way could people my than first water been call who oil its now find long down day did get "
          "come made may part").split()
TOPICS = ("ocean river rain storm cloud", "market price trade money bank", "music song dance rhythm band",
          "garden flower tree seed leaf", "engine wheel road speed car", "star planet orbit moon light",
          "bread cheese soup kitchen salt", "law court judge vote right", "cat dog horse bird fish",
          "code bug test build server")


def quotes(groups: int, per_group: int, seed: int = 0) -> list:
    """``(model, text)`` rows: each model draws from the common words and its own topic, some repeat."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(groups):
        topic = TOPICS[g % len(TOPICS)].split()
        repeat = 0.05 + 0.6 * g / max(groups - 1, 1)  # later models repeat themselves more
        said: list = []
        for _ in range(per_group):
            if said and rng.random() < repeat:
                text = said[rng.integers(len(said))]
            else:
                k = int(rng.integers(6, 14))
                words = [topic[rng.integers(len(topic))] if rng.random() < 0.3 else COMMON[rng.integers(len(COMMON))]
                         for _ in range(k)]
                text = " ".join(words).capitalize() + "."
                said.append(text)
            rows.append((f"model_{g}", text))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--per-group", type=int, default=150)
    parser.add_argument("--profile", action="store_true", help="also profile the run (cProfile) and print the top")
    args = parser.parse_args()
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        table = tmp / "quotes.csv"
        with open(table, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["model", "text"])
            w.writerows(quotes(args.groups, args.per_group))
        cmd = [sys.executable, "-m", "diversity_core.cli", "compare", str(table), "--group-column", "model",
               "--out", str(tmp / "report.html"), "--json", str(tmp / "report.json"),
               "--cache-dir", str(tmp / "store")]
        if args.profile:
            cmd = [sys.executable, "-m", "cProfile", "-o", str(tmp / "profile.out"), *cmd[1:]]
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        report = json.loads((tmp / "report.json").read_text())
        top = []
        if args.profile:
            stats = pstats.Stats(str(tmp / "profile.out"))
            stats.sort_stats("cumulative")
            total = stats.total_tt
            for func, (_, _, tt, ct, _) in sorted(stats.stats.items(), key=lambda kv: -kv[1][3])[:25]:
                top.append({"function": f"{Path(func[0]).name}:{func[1]}({func[2]})", "cumulative_s": round(ct, 2),
                            "own_s": round(tt, 2), "share": round(ct / total, 3) if total else None})
    out = {
        "groups": args.groups, "per_group": args.per_group, "wall_s": round(wall, 2), "target_s": TARGET_S,
        "ratio_to_target": round(wall / TARGET_S, 3), "before_issue_22_s": 962.0,
        "scores": report.get("scores"), "load_before": load, "load_after": os.getloadavg(),
        "machine": platform.processor() or platform.machine(), "cores": os.cpu_count(), "profile_top": top,
    }
    print(f"diversity compare, {args.groups} groups x {args.per_group} texts, every default: {wall:.1f} s "
          f"(target {TARGET_S:.0f} s: {wall / TARGET_S:.2f}x; before issue 22: 962 s). Load {load[0]:.2f} before.")
    for row in top[:15]:
        print(f"  {row['cumulative_s']:8.2f} s cum {row['own_s']:8.2f} s own  {row['function']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2))
    return 0 if wall <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
