"""100,000 images in Hugging Face Parquet shards streamed under 1 GB (issue 42, targets; items 4 and 8).

Builds ``--n`` rows (a ``--side`` x ``--side`` RGB PNG in the ``{bytes, path}`` image struct, a
``ClassLabel`` of 10 classes, the ``huggingface`` schema metadata ``datasets`` writes) into Hub-style
shards ``data/train-0000k-of-0000K.parquet`` of ``--per-shard`` rows with pyarrow (``datasets``
itself takes minutes to encode 100,000 images; the files are the same), once, in ``--folder``, then
loads them with ``load_dataset(folder)`` in a fresh process and reports its peak resident memory
(``VmHWM``), the memory after the imports, the thumbnails' bytes and the time.

Writes ``benchmarks/results/formats_hf_n<N>.json``.

Run: ``python benchmarks/bench_formats_hf.py [--n 100000] [--side 32]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
MIB = 1 << 20
CLASSES = [f"class {k}" for k in range(10)]


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build(folder: Path, n: int, side: int, per_shard: int) -> None:
    """Write the shards once (a marker file records what they hold)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    marker = folder / "built.json"
    spec = {"n": n, "side": side, "per_shard": per_shard}
    if marker.exists() and json.loads(marker.read_text()) == spec:
        return
    (folder / "data").mkdir(parents=True, exist_ok=True)
    for old in (folder / "data").glob("*.parquet"):
        old.unlink()
    features = {"image": {"_type": "Image"}, "label": {"names": CLASSES, "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    rng = np.random.default_rng(0)
    shards = -(-n // per_shard)
    t0 = time.perf_counter()
    for k in range(shards):
        rows = range(k * per_shard, min(n, (k + 1) * per_shard))
        blobs = []
        for _i in rows:
            small = rng.integers(16, 256, size=(4, 4, 3), dtype=np.uint8)
            buf = io.BytesIO()
            Image.fromarray(small).resize((side, side), Image.Resampling.NEAREST).save(buf, format="PNG")
            blobs.append(buf.getvalue())
        image = pa.StructArray.from_arrays([pa.array(blobs, pa.binary()), pa.array([None] * len(blobs), pa.string())],
                                           names=["bytes", "path"])
        table = pa.table({"image": image, "label": pa.array([i % 10 for i in rows], pa.int64())})
        table = table.replace_schema_metadata(meta)
        pq.write_table(table, folder / "data" / f"train-{k:05d}-of-{shards:05d}.parquet", row_group_size=1000)
    marker.write_text(json.dumps(spec))
    print(f"built {n} rows in {shards} shards in {time.perf_counter() - t0:.1f} s", file=sys.stderr)


def phase(folder: str) -> dict:
    """The load, in this (fresh) process."""
    from diversity_core.data import load_dataset

    base = _status_mib("VmRSS")
    t0 = time.perf_counter()
    ds = load_dataset(folder, max_bytes=4 << 30)
    return {"n": ds.n, "groups": len(ds.group_names()), "item_shape": list(ds.items.shape[1:]),
            "items_mib": ds.items.nbytes / MIB, "baseline_rss_mib": base, "load_s": time.perf_counter() - t0,
            "after_load_rss_mib": _status_mib("VmRSS"), "peak_rss_mib": _status_mib("VmHWM")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--side", type=int, default=32)
    parser.add_argument("--per-shard", type=int, default=25_000)
    parser.add_argument("--folder", default=None)
    parser.add_argument("--phase", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:  # a child: the load, its JSON on stdout
        print(json.dumps(phase(args.phase)))
        return
    folder = Path(args.folder or Path(tempfile.gettempdir()) / f"bench_formats_hf_{args.n}_{args.side}")
    t0 = time.perf_counter()
    build(folder, args.n, args.side, args.per_shard)
    build_s = time.perf_counter() - t0
    files_mib = sum(p.stat().st_size for p in (folder / "data").glob("*.parquet")) / MIB
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
               OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    res = subprocess.run([sys.executable, __file__, "--phase", str(folder)], capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"the load failed:\n{res.stderr[-3000:]}")
    row = json.loads(res.stdout.strip().splitlines()[-1])
    print(f"load n={row['n']:>7d} ({row['groups']} groups) peak RSS {row['peak_rss_mib']:7.1f} MiB "
          f"(baseline {row['baseline_rss_mib']:.1f}, thumbnails {row['items_mib']:.1f}, files {files_mib:.1f}) "
          f"in {row['load_s']:.1f} s")
    load = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"formats_hf_n{args.n}.json"
    out.write_text(json.dumps({"n": args.n, "side": args.side, "per_shard": args.per_shard, "files_mib": files_mib,
                               "build_s": build_s, "load": row, "under_1_gib": row["peak_rss_mib"] < 1024,
                               "load_average": load, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, indent=2) + "\n")
    print(f"wrote {out} (load average {load[0]:.1f} on {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
