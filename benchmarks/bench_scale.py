"""Scale (issue 11): streamed, Dask and blocked computations against the in-memory floor, with peak memory.

Each case runs in a subprocess of its own; its peak resident memory is the child's
``ru_maxrss`` (``os.wait4``, the per-child form of ``getrusage(RUSAGE_CHILDREN)``), and its time
is measured inside the child around the computation only (data generation excluded). Ratios
are against the floor: one in-memory ``X.T @ X`` of the same data (numpy's BLAS, all threads).
Results go to ``benchmarks/results/scale.json``.

Cases and targets (2-core machine):

- ``npy``: every VS_q exact, cosine, of an n x d float32 ``.npy`` (default 1,000,000 x 512,
  2 GB) streamed from disk: <= 2x the floor, peak RSS < 1 GB;
- ``parquet``: the same rows as Parquet row groups (fixed-size list column): <= 3x the floor;
- ``dask``: the same ``.npy`` read by a LocalCluster of 2 worker processes: correct, overhead stated;
- ``rbf``: exact VS_2 of 100,000 x 64 with the RBF kernel (blocked): < 3 min, memory < 2 GB;
- ``tanimoto``: exact VS_2 of 100,000 2048-bit fingerprints (blocked): < 10 min;
- ``tanimoto-kernels``: one 2048 x 2048 block of Tanimoto counts by packed bits and popcount
  (``np.bitwise_count``) against the float32 BLAS product the blocked path uses.

The data files are created in a temporary folder (``--tmp``, default /tmp) and deleted after;
they are read warm (from the page cache, as just written), so the streamed cases measure the
computation and the reads, not the disk.

Run: ``python benchmarks/bench_scale.py [--n 1000000 --d 512] [--cases npy parquet ...]``;
``--quick`` runs every case at small sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# numpy and the project are imported in the children only: a child's ru_maxrss starts from its
# parent's resident memory at fork (Linux keeps it across exec), so the launcher stays small
RESULTS = Path(__file__).resolve().parent / "results"
CASES = ("floor", "npy", "parquet", "dask", "rbf", "tanimoto", "tanimoto-kernels")


# ---------------------------------------------------------------------------------------
# children: each prints one JSON line {"seconds": ..., ...}
# ---------------------------------------------------------------------------------------
def child_floor(a) -> dict:
    import numpy as np

    X = np.load(a.npy)  # the whole matrix in memory (not timed)
    best = min(_timed(lambda: X.T @ X) for _ in range(a.repeat))
    return {"seconds": best}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _all_orders(spec) -> dict:
    return {q: spec.vendi(q) for q in ("0", "0.5", "1", "2", "inf")}


def child_npy(a) -> dict:
    import diversity_core as dc

    out = {}
    out["seconds"] = min(_timed(lambda: out.update(spec=dc.compute_spectrum(a.npy, kernel="cosine")))
                         for _ in range(a.repeat))
    return {"seconds": out["seconds"], "vendi": _all_orders(out["spec"]), "execution": out["spec"].execution}


def child_parquet(a) -> dict:
    import diversity_core as dc

    out = {}
    out["seconds"] = min(_timed(lambda: out.update(spec=dc.compute_spectrum(a.parquet, kernel="cosine")))
                         for _ in range(a.repeat))
    return {"seconds": out["seconds"], "vendi": _all_orders(out["spec"]), "execution": out["spec"].execution}


def child_dask(a) -> dict:
    import resource

    from distributed import Client, LocalCluster

    import diversity_core as dc
    from diversity_core.sources import open_source

    t0 = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        startup = time.perf_counter() - t0
        t0 = time.perf_counter()
        client.run(lambda: __import__("diversity_core.spectrum"))  # workers import the core once
        warmup = time.perf_counter() - t0
        X = open_source(a.npy).to_dask()
        out = {}
        seconds = min(_timed(lambda: out.update(spec=dc.compute_spectrum(X, kernel="cosine")))
                      for _ in range(a.repeat))
        workers_kb = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return {"seconds": seconds, "startup_seconds": startup, "import_seconds": warmup, "vendi": _all_orders(out["spec"]),
            "execution": out["spec"].execution, "blocks": int(X.numblocks[0]),
            "worker_peak_rss_mb": [kb / 1024 for kb in workers_kb.values()]}


def child_rbf(a) -> dict:
    import numpy as np

    from diversity_core.blocked import vendi_2_exact

    X = np.random.default_rng(5).standard_normal((a.rbf_n, 64))
    out = {}
    seconds = _timed(lambda: out.update(res=vendi_2_exact(X, kernel="rbf")))
    res = out["res"]
    return {"seconds": seconds, "vs2": res.vs2, "vs_inf_bounds": [res.vs_inf_lower, res.vs_inf_upper],
            "sigma": res.kernel["sigma"]}


def _fingerprints(n: int, bits: int = 2048, density: float = 0.03):
    """Random fingerprints with about ``density`` of the bits set (Morgan r=2 sets ~2-3% of 2048)."""
    import numpy as np

    rng = np.random.default_rng(6)
    return (rng.random((n, bits), dtype=np.float32) < density).astype(np.uint8)


def child_tanimoto(a) -> dict:
    from diversity_core.blocked import vendi_2_exact

    B = _fingerprints(a.tanimoto_n)
    out = {}
    seconds = _timed(lambda: out.update(res=vendi_2_exact(B, kernel="tanimoto")))
    res = out["res"]
    return {"seconds": seconds, "vs2": res.vs2, "vs_inf_bounds": [res.vs_inf_lower, res.vs_inf_upper]}


def child_tanimoto_kernels(a) -> dict:
    """One b x b block of |a & b| counts: popcount on packed bits, float32 GEMM, CSR x dense."""
    import numpy as np
    import scipy.sparse as sp

    b = 2048
    B = _fingerprints(2 * b)
    A32, C32 = B[:b].astype(np.float32), B[b:].astype(np.float32)
    gemm = min(_timed(lambda: A32 @ C32.T) for _ in range(3))
    A_csr, Ct = sp.csr_matrix(A32), np.ascontiguousarray(C32.T)
    csr = min(_timed(lambda: A_csr @ Ct) for _ in range(3))
    packed_a = np.packbits(B[:b], axis=1).view(np.uint64)  # 32 words of 64 bits per fingerprint
    packed_c = np.packbits(B[b:], axis=1).view(np.uint64)

    def popcount():
        out = np.empty((b, b), dtype=np.uint16)
        for i in range(0, b, 64):  # 64 x b x 32 words at a time
            out[i : i + 64] = np.bitwise_count(packed_a[i : i + 64, None, :] & packed_c[None, :, :]).sum(
                axis=2, dtype=np.uint16)
        return out

    pop = min(_timed(popcount) for _ in range(2))
    exact = (A32 @ C32.T).astype(np.uint16)
    assert np.array_equal(popcount(), exact) and np.array_equal((A_csr @ Ct).astype(np.uint16), exact)
    return {"seconds": csr, "gemm_float32_s": gemm, "csr_dense_s": csr, "popcount_s": pop, "block": b,
            "density": float(B.mean())}


def child_make(a) -> dict:
    """An n x d float32 .npy and the same rows as Parquet (fixed-size list column), written in chunks."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, d, row_group = a.n, a.d, a.row_group
    rng = np.random.default_rng(0)
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False, "shape": (n, d)}
    schema = pa.schema([("embedding", pa.list_(pa.float32(), d))])
    with open(a.npy, "wb") as fh, pq.ParquetWriter(a.parquet, schema) as writer:
        np.lib.format.write_array_header_1_0(fh, header)
        for start in range(0, n, row_group):
            block = rng.standard_normal((min(row_group, n - start), d), dtype=np.float32)
            block += 0.5  # a shared direction, so the spectrum is not flat
            fh.write(block.tobytes())
            column = pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), d)
            writer.write_table(pa.table({"embedding": column}), row_group_size=row_group)
    return {"seconds": 0.0, "npy_gib": os.path.getsize(a.npy) / 2**30, "parquet_gib": os.path.getsize(a.parquet) / 2**30}


CHILDREN = {
    "floor": child_floor, "npy": child_npy, "parquet": child_parquet, "dask": child_dask, "rbf": child_rbf,
    "tanimoto": child_tanimoto, "tanimoto-kernels": child_tanimoto_kernels, "make": child_make,
}


# ---------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------
def run_case(name: str, args, npy: Path, parquet: Path) -> dict:
    """Run one case in a child process; return its JSON and its peak RSS in MB (``os.wait4``)."""
    cmd = [sys.executable, __file__, "--child", name, "--npy", str(npy), "--parquet", str(parquet),
           "--repeat", str(args.repeat), "--rbf-n", str(args.rbf_n), "--tanimoto-n", str(args.tanimoto_n),
           "--n", str(args.n), "--d", str(args.d), "--row-group", str(args.row_group)]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors)
        out = proc.stdout.read().decode()
        proc.stdout.close()
        # reap the child ourselves: wait4 returns its own rusage (ru_maxrss in KiB on Linux)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if proc.returncode != 0:
        return {"case": name, "error": err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"}
    result = json.loads(out.strip().splitlines()[-1])
    result["case"] = name
    result["peak_rss_mb"] = usage.ru_maxrss / 1024
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="rows of the streamed data (default 1,000,000)")
    parser.add_argument("--d", type=int, default=512, help="columns of the streamed data (default 512)")
    parser.add_argument("--row-group", type=int, default=65536, help="rows per Parquet row group")
    parser.add_argument("--rbf-n", type=int, default=100_000, help="rows of the RBF case (d = 64)")
    parser.add_argument("--tanimoto-n", type=int, default=100_000, help="fingerprints of the Tanimoto case")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per case (minimum kept)")
    parser.add_argument("--tmp", default=tempfile.gettempdir(), help="folder for the data files")
    parser.add_argument("--quick", action="store_true", help="small sizes everywhere (a smoke run)")
    parser.add_argument("--child", choices=CASES + ("make",), help=argparse.SUPPRESS)
    parser.add_argument("--npy", help=argparse.SUPPRESS)
    parser.add_argument("--parquet", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    if args.quick:
        args.n, args.rbf_n, args.tanimoto_n = 50_000, 5_000, 5_000
    folder = Path(tempfile.mkdtemp(prefix="bench_scale_", dir=args.tmp))
    try:
        t0 = time.perf_counter()
        npy, parquet = folder / "X.npy", folder / "X.parquet"
        made = run_case("make", args, npy, parquet)
        if "error" in made:
            raise SystemExit(f"could not write the data: {made['error']}")
        print(f"data: {args.n} x {args.d} float32, .npy {made['npy_gib']:.2f} GiB, "
              f".parquet {made['parquet_gib']:.2f} GiB, written in {time.perf_counter() - t0:.0f} s; "
              f"the launcher holds {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        results = []
        for name in args.cases:
            r = run_case(name, args, npy, parquet)
            results.append(r)
            if "error" in r:
                print(f"{name:18s} failed: {r['error']}")
            else:
                print(f"{name:18s} {r['seconds']:9.2f} s   peak RSS {r['peak_rss_mb']:8.0f} MB")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(results, args)


def report(results: list, args) -> None:
    """The table of ratios against the floor, and the JSON file."""
    by = {r["case"]: r for r in results if "error" not in r}
    floor = by.get("floor", {}).get("seconds")
    targets = {"npy": "<= 2x floor, RSS < 1 GB", "parquet": "<= 3x floor", "dask": "correct; overhead",
               "rbf": "< 180 s, memory < 2 GB", "tanimoto": "< 600 s", "floor": "X.T @ X in memory"}
    print(f"\n{'case':18s} {'time s':>9s} {'x floor':>8s} {'peak RSS MB':>12s}  target")
    for r in results:
        if "error" in r:
            continue
        same_data = floor and r["case"] in ("floor", "npy", "parquet", "dask")
        ratio = f"{r['seconds'] / floor:8.2f}" if same_data else f"{'-':>8s}"
        print(f"{r['case']:18s} {r['seconds']:9.2f} {ratio} {r['peak_rss_mb']:12.0f}  {targets.get(r['case'], '')}")
        if same_data:
            r["ratio_floor"] = r["seconds"] / floor
    if "npy" in by:
        for other in ("parquet", "dask"):
            if other in by:
                gap = max(abs(by[other]["vendi"][q] - by["npy"]["vendi"][q]) / by["npy"]["vendi"][q]
                          for q in by["npy"]["vendi"])
                by[other]["max_rel_diff_vs_npy"] = gap
                print(f"{other}: every VS_q within {gap:.1e} (relative) of the .npy result")
    if "dask" in by:
        d = by["dask"]
        print(f"dask: cluster start {d['startup_seconds']:.1f} s and import on the workers {d['import_seconds']:.1f} s "
              f"(not in the time); workers' peak RSS "
              f"{', '.join(f'{m:.0f}' for m in d['worker_peak_rss_mb'])} MB; {d['blocks']} blocks")
    if "tanimoto-kernels" in by:
        t = by["tanimoto-kernels"]
        print(f"tanimoto block {t['block']}x{t['block']}x2048 at density {t['density']:.3f}: float32 GEMM "
              f"{t['gemm_float32_s'] * 1e3:.0f} ms, CSR x dense {t['csr_dense_s'] * 1e3:.0f} ms, packed bits + "
              f"popcount {t['popcount_s'] * 1e3:.0f} ms")
    RESULTS.mkdir(exist_ok=True)
    meta = {"machine": platform.platform(), "cpus": os.cpu_count(),
            "n": args.n, "d": args.d, "row_group": args.row_group, "rbf_n": args.rbf_n,
            "tanimoto_n": args.tanimoto_n, "repeat": args.repeat, "quick": args.quick,
            "load_average": os.getloadavg()}
    (RESULTS / "scale.json").write_text(json.dumps({"meta": meta, "cases": results}, indent=2))
    print(f"wrote {RESULTS / 'scale.json'}")


if __name__ == "__main__":
    main()
