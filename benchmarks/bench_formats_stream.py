"""100,000 WebDataset samples streamed under 1 GB (issue 42, targets): what a load costs, and what dominates.

Builds ``--n`` samples (a ``--side`` x ``--side`` RGB PNG and a ``.cls`` class each, 10 classes)
into shards of ``--per-shard`` samples with ``webdataset.ShardWriter``, once, in ``--folder``
(default: a folder under the system's temporary folder, reused by later runs), then measures in
fresh processes, one per phase, so each peak is the phase's own:

- ``load``: ``load_dataset("<folder>/bench-{000000..}.tar")``: the shards streamed one member at
  a time, the thumbnails copied into preallocated blocks (``data/_thumbnails.py``), one array;
- ``stream``: the load, then the default pixel features of the thumbnails computed block by block
  inside a :class:`~diversity_core.sources.RowSource` and VS_1 on the streamed dual path
  (Φᵀ Φ accumulated in float64, d x d): the whole pipeline without an n x d feature matrix;
- ``featurize``: the load, then ``featurize(ds, "pixels")`` (the n x d float64 matrix the CLI and
  the app build) and ``vendi_score`` on it, at ``--featurize-n`` items (its memory grows as
  n x d x 8 bytes; extrapolated to ``--n`` in the report).

Each phase reports the peak resident memory (``ru_maxrss``), the resident memory after the
imports (the baseline: numpy, Pillow, the core), the bytes of the thumbnails and features, and
the wall time. Writes ``benchmarks/results/formats_stream_n<N>.json``.

Run: ``python benchmarks/bench_formats_stream.py [--n 100000] [--side 32] [--featurize-n 20000]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 1 << 20


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _rss_peak_mib() -> float:
    """This process's peak resident memory: ``VmHWM`` (its own, reset by exec; ``ru_maxrss`` can carry
    the parent's peak across fork and exec), ``ru_maxrss`` where there is no ``/proc``."""
    try:
        return _status_mib("VmHWM")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_now_mib() -> float:
    return _status_mib("VmRSS")


def build(folder: Path, n: int, side: int, per_shard: int) -> str:
    """Write the shards once (a marker file records what they hold); return the brace pattern."""
    import numpy as np
    import webdataset as wds
    from PIL import Image

    shards = -(-n // per_shard)
    pattern = str(folder / f"bench-{{000000..{shards - 1:06d}}}.tar")
    marker = folder / "built.json"
    spec = {"n": n, "side": side, "per_shard": per_shard}
    if marker.exists() and json.loads(marker.read_text()) == spec:
        return pattern
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("bench-*.tar"):
        old.unlink()
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    with wds.ShardWriter(str(folder / "bench-%06d.tar"), maxcount=per_shard, verbose=0) as sink:
        for i in range(n):
            # a 4 x 4 random colour pattern enlarged to side x side: varied, compressible, never black
            small = rng.integers(16, 256, size=(4, 4, 3), dtype=np.uint8)
            img = Image.fromarray(small).resize((side, side), Image.Resampling.NEAREST)
            buf = io.BytesIO()
            img.save(buf, format="PNG")
            sink.write({"__key__": f"s{i:07d}", "png": buf.getvalue(), "cls": i % 10})
    marker.write_text(json.dumps(spec))
    print(f"built {n} samples in {shards} shards in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return pattern


def phase(name: str, pattern: str, featurize_n: int) -> dict:
    """One phase in this (fresh) process."""
    import numpy as np

    import diversity_core as dc
    from diversity_core.data import load_dataset
    from diversity_core.featurizers import featurize
    from diversity_core.featurizers.images import pixel_features
    from diversity_core.sources import RowSource

    base = _rss_now_mib()
    t0 = time.perf_counter()
    ds = load_dataset(pattern, max_bytes=4 << 30)
    t_load = time.perf_counter() - t0
    out = {"phase": name, "n": ds.n, "groups": len(ds.group_names()), "item_shape": list(ds.items.shape[1:]),
           "items_mib": ds.items.nbytes / MIB, "baseline_rss_mib": base, "load_s": t_load,
           "after_load_rss_mib": _rss_now_mib()}
    if name == "stream":

        class PixelSource(RowSource):
            """The default pixel features of the thumbnails, computed one block of rows at a time."""

            def __init__(self, items):
                self.items, self.n = items, items.shape[0]
                self.d = int(np.prod(items.shape[1:]))
                self.dtype, self.name = np.dtype(np.float64), "pixels"

            def _chunks(self, bounds):
                for start, stop in bounds:
                    yield start, pixel_features(self.items[start:stop])

        t1 = time.perf_counter()
        spec = dc.compute_spectrum(PixelSource(ds.items), kernel="cosine", method="dual")
        out.update(score_s=time.perf_counter() - t1, vs1=float(spec.vendi(1.0)), features_mib=0.0)
    elif name == "featurize":
        sub = ds.subset(np.arange(min(featurize_n, ds.n)))
        del ds
        t1 = time.perf_counter()
        X = featurize(sub, "pixels")
        out["features_mib"] = X.nbytes / MIB
        out["featurized_n"] = int(X.shape[0])
        out["vs1"] = float(dc.vendi_score(X, kernel="cosine", q=1.0))
        out["score_s"] = time.perf_counter() - t1
    out["peak_rss_mib"] = _rss_peak_mib()
    out["total_s"] = time.perf_counter() - t0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--side", type=int, default=32)
    parser.add_argument("--per-shard", type=int, default=10_000)
    parser.add_argument("--featurize-n", type=int, default=20_000)
    parser.add_argument("--phases", default="load,stream,featurize")
    parser.add_argument("--folder", default=None)
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pattern", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:  # a child: one phase, its JSON on stdout
        print(json.dumps(phase(args.phase, args.pattern, args.featurize_n)))
        return
    folder = Path(args.folder or Path(tempfile.gettempdir()) / f"bench_formats_stream_{args.n}_{args.side}")
    t0 = time.perf_counter()
    pattern = build(folder, args.n, args.side, args.per_shard)
    build_s = time.perf_counter() - t0
    shard_mib = sum(p.stat().st_size for p in folder.glob("bench-*.tar")) / MIB
    rows = []
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
               OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    for name in args.phases.split(","):
        res = subprocess.run([sys.executable, __file__, "--phase", name, "--pattern", pattern,
                              "--featurize-n", str(args.featurize_n)], capture_output=True, text=True, env=env)
        if res.returncode != 0:
            raise SystemExit(f"phase {name} failed:\n{res.stderr[-3000:]}")
        row = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{name:10s} n={row['n']:>7d} peak RSS {row['peak_rss_mib']:7.1f} MiB (baseline {row['baseline_rss_mib']:.1f}, "
              f"thumbnails {row['items_mib']:.1f}, features {row.get('features_mib', 0):.1f}) "
              f"load {row['load_s']:.1f} s, total {row['total_s']:.1f} s")
    feat = next((r for r in rows if r["phase"] == "featurize"), None)
    extrapolated = None
    if feat is not None:
        per_item = feat["features_mib"] / feat["featurized_n"]
        extrapolated = {"features_mib_at_n": per_item * args.n,
                        "note": "featurize('pixels') holds an n x d float64 matrix: d = side*side*3 = "
                                f"{args.side * args.side * 3}, {per_item * MIB:.0f} bytes per item"}
        print(f"featurize at n={args.n}: the feature matrix alone would take {per_item * args.n:.0f} MiB")
    load = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"formats_stream_n{args.n}.json"
    out.write_text(json.dumps({"n": args.n, "side": args.side, "per_shard": args.per_shard, "shards_mib": shard_mib,
                               "build_s": build_s, "phases": rows, "featurize_extrapolated": extrapolated,
                               "load_average": load, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, indent=2) + "\n")
    print(f"wrote {out} (load average {load[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
