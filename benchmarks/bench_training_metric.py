"""Benchmark of the training-loop Vendi metric (issue 25): its overhead on an epoch of a small CPU run.

A small MLP (784 -> 512 -> 256 -> 128 -> 10, the 128-d layer being the embedding) trains on random
MNIST-sized data on the CPU, batch 256. Epochs alternate between a plain epoch and one that also
calls ``VendiScore.update`` (cosine kernel) on every batch's 128-d embeddings and ``compute`` once
at the end of the epoch; the overhead is the median epoch time with the metric over the median
without, minus 1, and (less exposed to other jobs' load) the median time spent inside the metric's
calls over the median plain epoch. Target: both <= 5%.

Also checked: the metric's value equals the one-shot ``dc.vendi_score`` of the last epoch's
embeddings (relative difference printed).

Wall-clock seconds are recorded with the load average before and after: on a machine shared with
other jobs they inflate with the load (alternating the two kinds of epoch keeps the comparison
fair). Writes ``benchmarks/results/training_metric.json``. Usage::

    python benchmarks/bench_training_metric.py [--n 8192] [--epochs 6] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "training_metric.json"
TARGET = 0.05


def load() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192, help="training items per epoch")
    parser.add_argument("--epochs", type=int, default=6, help="epochs of each kind (alternating)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()

    import numpy as np
    import torch

    import diversity_core as dc
    from diversity_core.metrics import VendiScore

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    X = torch.randn(args.n, 784)
    y = torch.randint(0, 10, (args.n,))
    embed = torch.nn.Sequential(
        torch.nn.Linear(784, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 128),
        torch.nn.ReLU(),
    )
    head = torch.nn.Linear(128, 10)
    opt = torch.optim.SGD([*embed.parameters(), *head.parameters()], lr=0.01, momentum=0.9)
    metric = VendiScore(kernel="cosine", num_features=128)

    def epoch(with_metric: bool):
        start = time.perf_counter()
        last, inside = [], 0.0
        for xb, yb in zip(X.split(args.batch), y.split(args.batch)):
            z = embed(xb)
            loss = torch.nn.functional.cross_entropy(head(z), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if with_metric:
                t = time.perf_counter()
                metric.update(z)
                inside += time.perf_counter() - t
                last.append(z.detach())
        t = time.perf_counter()
        value = float(metric.compute()) if with_metric else None
        inside += time.perf_counter() - t
        seconds = time.perf_counter() - start
        if with_metric:
            metric.reset()
        return seconds, value, last, inside

    load_before = load()
    epoch(False)  # warm-up of both kinds
    epoch(True)
    plain, with_metric, spent, check = [], [], [], None
    for _ in range(args.epochs):
        plain.append(epoch(False)[0])
        seconds, value, last, inside = epoch(True)
        with_metric.append(seconds)
        spent.append(inside)
        Z = torch.cat(last).double().numpy()  # the one-shot score of the same float32 embeddings
        check = (value, dc.vendi_score(torch.cat(last).numpy()), dc.vendi_score(Z))
    overhead = statistics.median(with_metric) / statistics.median(plain) - 1.0
    # the metric's own time (update on every batch + one compute) over the plain epoch: the same
    # ratio, measured on the metric's calls only, so less exposed to other jobs' load
    share = statistics.median(spent) / statistics.median(plain)
    rel = abs(check[0] - check[1]) / check[1]
    out = {
        "n": args.n,
        "batch": args.batch,
        "d": 128,
        "threads": args.threads,
        "epochs": args.epochs,
        "plain_epoch_s": [round(s, 4) for s in plain],
        "metric_epoch_s": [round(s, 4) for s in with_metric],
        "median_plain_s": round(statistics.median(plain), 4),
        "median_metric_s": round(statistics.median(with_metric), 4),
        "overhead": round(overhead, 4),
        "metric_s": [round(s, 5) for s in spent],
        "metric_share": round(share, 4),
        "target": TARGET,
        "meets_target": max(overhead, share) <= TARGET,
        "vendi_metric": check[0],
        "vendi_one_shot": check[1],
        "relative_difference": rel,
        "load_before": load_before,
        "load_after": load(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }
    print(
        f"epoch without the metric: {out['median_plain_s']:.3f} s, with update every batch + compute: "
        f"{out['median_metric_s']:.3f} s (medians of {args.epochs})"
    )
    print(
        f"overhead ratio: {overhead:+.2%} of an epoch (epoch times); the metric's own calls: {share:.2%} "
        f"(target <= {TARGET:.0%}: {'met' if out['meets_target'] else 'NOT met'})"
    )
    print(
        f"VS_1 metric {check[0]:.10g} vs one-shot {check[1]:.10g}: relative difference {rel:.2e} (float32 features)"
    )
    print(f"load average before {load_before}, after {out['load_after']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
