"""``diversity score FILE``: Vendi scores of chosen orders, IntDiv, per group.

Large embeddings are streamed, never loaded whole: a ``.npy`` or ``.parquet`` file of 64 MiB or
more, or a folder of ``.npy`` shards, goes through :mod:`diversity_core.sources` when no group
column is asked for (feature kernels take the streamed dual path; others read the rows when
they fit). ``--dask local[:N]`` starts a ``distributed.LocalCluster`` of N worker processes and
``--scheduler ADDRESS`` connects to a running ``dask scheduler``; the rows are then read by the
workers (which must see FILE at the same path) and only d x d sums travel back.

Which path runs, and the sizes of every sketch, come from the core's one policy
(:func:`diversity_core.approx.plan_scores`, the app's too); each group is scored by
:func:`diversity_core.scoring.score_groups`; beyond the exact paths the core carries the plan out
(:func:`diversity_core.approx.run_plan`, the app's too) and this module only prints. ``--approx
auto`` takes the exact path while it fits ``--memory-budget`` and beyond it the SLQ estimate of the
full-sample value for q > 0 (``--approx slq``, :func:`diversity_core.approx.vendi_slq`) with
guaranteed bounds for q = 0; a sketch's ``--m``/``--D`` default to the largest that fits, and a
size that does not fit is refused with the largest that does.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._config import chunk_rows, format_bytes
from .._optional import require
from .._orders import parse_q, q_key
from .._table import format_table
from ..data import load_dataset
from ..data._files import DEFAULT_MAX_BYTES, MMAP_THRESHOLD_BYTES, _npy_header, load_npy, read_text_file
from ..data._tables import check_weight_values
from ..data.embeddings import parquet_column
from ..exceptions import DiversityInputError
from ..kernels import KERNELS
from ..sources import NpySource, ParquetSource, ShardSource, check_workers_see
from ..spectrum import DEVICES, METHODS
from ._guards import check_feature_scale, check_kernel_params
from ._inspect import add_preprocess_arguments, preprocess_from_args
from ._progress import TqdmProgress, warn_skipped

#: The values of ``--modality`` (what FILE holds; ``auto`` detects it from the content).
MODALITY_CHOICES = ("auto", "embeddings", "images", "text", "molecules")


def add_modality_argument(parser: argparse.ArgumentParser) -> None:
    """``--modality``: force how FILE is read (every command that loads data has it)."""
    parser.add_argument("--modality", default="auto", choices=MODALITY_CHOICES,
                        help="what FILE holds (default: auto, detected from the content; "
                             "`diversity inspect` shows what was detected)")

DEFAULT_QS = ("0", "0.5", "1", "2", "inf")


def _q_value(text: str) -> float:
    """Argparse type for an order q (the core's parser: a number >= 0, 'inf' or '∞')."""
    try:
        return parse_q(text)
    except DiversityInputError:
        raise argparse.ArgumentTypeError(f"invalid order q {text!r}: use a number >= 0 or 'inf'") from None


def add_kernel_arguments(parser: argparse.ArgumentParser) -> None:
    """The kernel flags shared by the commands that build a kernel."""
    parser.add_argument("--kernel", default=None, choices=sorted(KERNELS),
                        help="similarity kernel (default: the featurizer's, cosine for embeddings)")
    parser.add_argument("--sigma", type=float, default=None, help="rbf/laplacian bandwidth (default: median distance)")
    parser.add_argument("--degree", type=int, default=None, help="polynomial degree (default 3)")
    parser.add_argument("--gamma", type=float, default=None, help="polynomial scale (default 1/d)")
    parser.add_argument("--coef0", type=float, default=None, help="polynomial offset (default 1)")


def kernel_params(args: argparse.Namespace) -> dict:
    """The kernel parameters given on the command line that apply to the chosen kernel."""
    names = {"rbf": ("sigma",), "laplacian": ("sigma",), "polynomial": ("degree", "gamma", "coef0")}
    return {k: getattr(args, k) for k in names.get(args.kernel, ()) if getattr(args, k) is not None}


def add_dataset_arguments(parser: argparse.ArgumentParser) -> None:
    """The data-loading flags shared by the commands that read a dataset."""
    parser.add_argument("file", help="data file or folder (.npy .npz .csv .tsv .parquet, images, text, molecules)")
    parser.add_argument("--group-column", default=None, help="column (or npz array) naming each item's group")
    parser.add_argument("--coco-crops", action="store_true",
                        help="a COCO folder: one item per annotated object (its box's crop), not per image")
    parser.add_argument("--weights", default=None, metavar="COLUMN_OR_FILE",
                        help="weight column of FILE, or a file with one weight per item (.npy, .csv, .txt)")
    parser.add_argument("--featurizer", default="default",
                        help="featurizer for non-embedding data (see `diversity inspect`), or a model of your own: "
                             "hf:MODEL-FOLDER, hf:HUB-ID in the local cache, inception:WEIGHTS-FILE")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    add_modality_argument(parser)
    add_preprocess_arguments(parser)


def load_for_cli(args: argparse.Namespace):
    """Load FILE with the group/weight options; returns (dataset, features, default kernel)."""
    from ..featurizers import default_kernel, featurize

    weights_file = None
    weight_column = None
    if args.weights is not None:
        if Path(args.weights).is_file():
            weights_file = Path(args.weights)
        else:
            weight_column = args.weights
    dataset = load_dataset(args.file, modality=getattr(args, "modality", "auto"),
                           group_column=args.group_column, weight_column=weight_column,
                           coco_crops=getattr(args, "coco_crops", False))
    warn_skipped(dataset)
    weights = dataset.weights
    if weights_file is not None:
        weights = _read_weights_file(weights_file, dataset.n)
    with TqdmProgress("features") as progress:
        X = featurize(dataset, args.featurizer, progress=progress)
    check_feature_scale(X, str(args.file))
    X = preprocess_from_args(args, X)
    return dataset, X, weights, default_kernel(args.featurizer, dataset=dataset)


def _read_weights_file(path: Path, n: int) -> np.ndarray:
    """One weight per item from .npy (no pickles), or a one-column text/csv file.

    Read with the loaders' limits (a regular file within the default size limit); a parse error
    names the row and column, never the text found there.
    """
    if path.suffix == ".npy":
        w = load_npy(path, DEFAULT_MAX_BYTES)
        if not np.issubdtype(w.dtype, np.number) or np.issubdtype(w.dtype, np.complexfloating):
            raise DiversityInputError(f"{path}: weights must be real numbers; got dtype {w.dtype}.")
    else:
        text = read_text_file(path, DEFAULT_MAX_BYTES)
        try:
            w = np.loadtxt(io.StringIO(text), delimiter="," if path.suffix == ".csv" else None, ndmin=1,
                           dtype=np.float64)
        except ValueError as exc:
            m = re.search(r"row (\d+), column (\d+)", str(exc))
            where = f" (row {int(m.group(1)) + 1}, column {m.group(2)})" if m else ""
            raise DiversityInputError(
                f"could not read weights from {path}{where}: expected one number per line."
            ) from None
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.size != n:
        raise DiversityInputError(f"{path} has {w.size} weights but the data has {n} items; give one per item.")
    return check_weight_values(w, lambda rows: "rows " + ", ".join(str(int(r) + 1) for r in rows[:5]),
                               str(path), "weights")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity score``."""
    p = subparsers.add_parser(
        "score",
        help="Vendi scores of chosen orders q, and IntDiv",
        description="Vendi scores VS_q (effective number of distinct items) of FILE, overall and per group.",
    )
    add_dataset_arguments(p)
    add_kernel_arguments(p)
    p.add_argument("--q", type=_q_value, nargs="+", default=[float(q) for q in DEFAULT_QS],
                   help="orders q (several allowed, 'inf' too; default 0 0.5 1 2 inf)")
    p.add_argument("--method", choices=METHODS, default="auto", help="spectrum path (default auto)")
    p.add_argument("--device", choices=DEVICES, default="cpu", help="cpu, cuda, or auto")
    approx = p.add_argument_group("beyond the dense limit (kernels without a feature map)")
    approx.add_argument("--approx", choices=("auto", "slq", "bounds", "nystrom", "rff", "tanimoto_rf"), default=None,
                        help="auto: the exact path when it fits the memory budget, else the SLQ estimate of the "
                             "full-sample VS_q for q > 0 (and guaranteed bounds for q = 0); slq: stochastic Lanczos "
                             "quadrature, an estimate of the full-sample value with an interval, any q > 0; bounds: "
                             "guaranteed bounds (Lanczos top-k, or a Nystrom sketch beyond the float32 matrix); "
                             "nystrom|rff|tanimoto_rf: a sketch estimate with error bars for q >= 1 "
                             "(diversity_core.approx). Sizes follow --memory-budget")
    approx.add_argument("--bounds-method", choices=("auto", "lanczos", "nystrom"), default="auto",
                        help="bounds: exact top-k eigenvalues (lanczos) or a Nystrom sketch's lower bounds in the "
                             "PSD order (nystrom: no pass over K); auto picks nystrom when not even the float32 "
                             "n x n matrix fits the memory budget")
    approx.add_argument("--k", type=int, default=None,
                        help="bounds: top eigenvalues, reached progressively (default 200, the steps that fit); "
                             "slq: dimension of the deflated head (default 512)")
    approx.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="bounds: stop the progression of k before this many seconds; slq: start no batch of "
                             "probes predicted to end after it")
    approx.add_argument("--probes", type=int, default=None,
                        help="slq: most Rademacher probes (default 64; fewer when --rtol is reached)")
    approx.add_argument("--steps", type=int, default=None, help="slq: most Lanczos steps per probe (default 30)")
    approx.add_argument("--rtol", type=float, default=0.01,
                        help="slq: stop adding probes once every relative half-width is below this (default 0.01)")
    approx.add_argument("--precision", choices=("auto", "float32", "float64"), default="auto",
                        help="slq: precision of the tiles of K (auto: float64 when an order below 1 is asked)")
    approx.add_argument("--m", type=int, default=None,
                        help="nystrom: landmarks (default: the largest that fits the memory budget, up to 1024 for "
                             "estimates and 2000 for bounds)")
    approx.add_argument("--D", type=int, default=None,
                        help="rff: frequencies (2D features); tanimoto_rf: hashes (default: the largest that fits "
                             "the memory budget, up to 1024)")
    approx.add_argument("--replicates", type=int, default=5, help="estimates: independent sketches (default 5)")
    approx.add_argument("--landmarks", choices=("rpcholesky", "greedy", "uniform"), default="rpcholesky",
                        help="nystrom: landmark rule (default rpcholesky)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run on a running Dask scheduler (e.g. tcp://10.0.0.5:8786); workers must see FILE")
    where.add_argument("--dask", type=_dask_local, default=None, metavar="local[:N]",
                       help="run on a local Dask cluster of N worker processes (default N: the CPU count)")
    return p


def _dask_local(text: str) -> int:
    """Argparse type for ``--dask``: ``local`` or ``local:N`` -> the number of workers."""
    m = re.fullmatch(r"local(?::(\d+))?", text.strip())
    if m is None or (m.group(1) is not None and int(m.group(1)) < 1):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: use local or local:N with N >= 1 workers")
    return int(m.group(1)) if m.group(1) else max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def dask_client(scheduler, n_local):
    """A ``distributed.Client`` on ``scheduler`` or on a LocalCluster of ``n_local`` processes (or None)."""
    if scheduler is None and n_local is None:
        yield None
        return

    distributed = require("distributed", purpose="--scheduler and --dask")
    cluster = None
    try:
        if scheduler is not None:
            # Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)
            client = distributed.Client(scheduler, timeout=require("dask").config.get(
                "distributed.comm.timeouts.connect"))
        else:
            from ..workers import local_cluster, thread_environment, threads_per_job

            # TLS on 127.0.0.1 with a key made for this run, no dashboard: no other local account can
            # submit work to it while the run lasts; each worker's BLAS/OpenMP pools sized to its
            # share of the cores (never oversubscribed)
            cluster = local_cluster(n_local, env=thread_environment(threads_per_job(n_local)))
            client = distributed.Client(cluster)
    except (OSError, TimeoutError, ValueError) as exc:
        from ..workers import unreachable

        if cluster is not None:
            cluster.close()
        raise unreachable(scheduler, exc, "or use --dask local") from None
    workers = len(client.scheduler_info().get("workers", {}))
    print(f"dask: {workers} worker(s) at {client.scheduler.address}", file=sys.stderr)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def streamed_source(args: argparse.Namespace):
    """A RowSource for FILE when it should be streamed, else None (the ordinary loaders read it).

    Streamed: a folder holding only ``.npy`` files (shards); a 2-D ``.npy`` or an embeddings
    ``.parquet`` of at least 64 MiB, or any size with Dask; never with a group column or a
    featurizer other than the embeddings themselves.
    """
    path = Path(args.file).expanduser()
    if args.group_column is not None or args.featurizer not in ("default", "embeddings") or not path.exists():
        return None
    if path.is_dir():
        files = [f for f in path.iterdir() if not f.name.startswith(".")]
        if files and all(f.suffix.lower() == ".npy" for f in files):
            return ShardSource(path)
        return None
    suffix = path.suffix.lower()
    large = path.stat().st_size >= MMAP_THRESHOLD_BYTES or args.scheduler is not None or args.dask is not None
    if not large or suffix not in (".npy", ".parquet", ".pq"):
        return None
    if suffix == ".npy":
        with open(path, "rb") as fh:
            shape, _fortran, _dtype = _npy_header(fh, str(path))
        return NpySource(path) if len(shape) == 2 else None
    weight_column = None if args.weights is None or Path(args.weights).is_file() else args.weights
    try:
        return ParquetSource(path, exclude=() if weight_column is None else (weight_column,))
    except DiversityInputError:
        return None  # not an embeddings table (text, SMILES): the loaders read it


def _source_weights(args: argparse.Namespace, source):
    """Weights for a streamed source: a file with one per item, or a Parquet column."""
    if args.weights is None:
        return None
    if Path(args.weights).is_file():
        return _read_weights_file(Path(args.weights), source.n)

    if not isinstance(source, ParquetSource):
        raise DiversityInputError(
            f"{args.file} has no columns, so there is no weight column {args.weights!r}; "
            "give a file with one weight per item (.npy, .csv, .txt)."
        )

    w = np.asarray(parquet_column(source.path, args.weights))
    if not np.issubdtype(w.dtype, np.number):
        raise DiversityInputError(f"{source.path}: the weight column {args.weights!r} is not numeric ({w.dtype}).")
    return w.astype(np.float64)


def run(args: argparse.Namespace) -> int:
    """Run ``diversity score``: the path of :func:`~diversity_core.approx.plan_scores`, per group."""
    from ..scoring import score_groups

    qs = list(dict.fromkeys(args.q))
    source = streamed_source(args)
    if args.approx not in (None, "auto"):
        return _run_approx(args, qs, source)
    with dask_client(args.scheduler, args.dask) as client:
        groups = None
        if source is not None:
            args.kernel = args.kernel or "cosine"
            weights = _source_weights(args, source)
            if client is not None:

                check_workers_see(client, source)  # a path a worker cannot see: exit 2 naming the worker
            X = source.to_dask() if client is not None else source
            n, d = source.n, source.d
        else:
            dataset, X, weights, default_kernel = load_for_cli(args)
            args.kernel = args.kernel or default_kernel
            check_kernel_params(X, args.kernel, kernel_params(args))
            (n, d), groups = X.shape, dataset.groups
            if client is not None:
                if dataset.group_names():
                    raise DiversityInputError(
                        "--scheduler/--dask score all items together; drop --group-column, or run without Dask."
                    )
                import dask.array as da


                X, groups = da.from_array(np.asarray(X), chunks=(chunk_rows(X.shape[1], X.dtype.itemsize), -1)), None
        if args.approx == "auto":
            plan = _plan(args, X, n, d, qs, weights, streamed=source is not None or client is not None)
            if not plan.exact:
                if groups is not None:
                    raise DiversityInputError(
                        f"n = {n} is beyond the exact paths ({plan.reason}), where --approx scores all items "
                        "together; drop --group-column, or raise --memory-budget."
                    )
                return _run_planned(args, plan, X, weights, qs, n)
        rows = score_groups(X, groups, kernel=args.kernel, qs=qs, weights=weights, method=args.method,
                            device=args.device, progress=TqdmProgress("score"), **kernel_params(args))
    return _print_rows(args, [r.to_dict(qs) for r in rows], n, weights, qs)


def _plan(args: argparse.Namespace, X, n: int, d: int, qs: list, weights, *, streamed: bool):
    """The core's policy for these data and flags, its messages naming the flags."""
    from ..approx.plan import CLI_NAMES, binary_features, plan_scores

    density = X.nnz / max(1, n * d) if sp.issparse(X) else None
    # MinHash features need 0/1 bits: count fingerprints take another sketch (as in the app)
    binary = binary_features(X) if args.kernel == "tanimoto" and args.approx in ("auto", "tanimoto_rf") else None
    return plan_scores(n, d, kernel=args.kernel, q=qs, weighted=weights is not None, method=args.method,
                       approx=args.approx, bounds_method=args.bounds_method, m=args.m, D=args.D, k=args.k,
                       probes=args.probes, steps=args.steps, streamed=streamed, density=density, binary=binary,
                       names=CLI_NAMES, **kernel_params(args))


def _print_rows(args: argparse.Namespace, rows: list, n: int, weights, qs) -> int:
    """The table or the JSON document on stdout."""
    if args.format == "json":
        out = {
            "file": str(args.file),
            "n": int(n),
            "kernel": rows[0]["kernel"],
            "q": [q_key(q) for q in qs],
            "weighted": weights is not None,
            "results": [{k: v for k, v in r.items() if k != "kernel"} for r in rows],
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    header = ["group", "n"] + [f"VS_{q_key(q)}" for q in qs] + ["IntDiv", "method"]
    table = [[r["group"], str(r["n"])] + [f"{r['vendi'][q_key(q)]:.6g}" for q in qs]
             + [f"{r['intdiv']:.4f}", r["method"] + ("" if r["execution"] == "in-memory" else f" ({r['execution']})")]
             for r in rows]
    print(f"# {args.file}: kernel {rows[0]['kernel']}, {'weighted' if weights is not None else 'uniform weights'}")
    print(format_table(header, table, rule=False))
    for r in rows:
        if "vs_inf_bounds" in r:
            low, high = r["vs_inf_bounds"]
            print(f"# {r['group']}: VS_2 exact by blocks; {low:.6g} <= VS_inf <= {high:.6g}")
    return 0


def _run_approx(args: argparse.Namespace, qs: list, source) -> int:
    """``--approx slq|bounds|nystrom|rff|tanimoto_rf``: that path, all items together, sized by the core's policy."""
    if args.approx == "slq" and (args.scheduler is not None or args.dask is not None):
        return _run_slq_on_dask(args, qs, source)
    if source is not None:
        X, weights = source, _source_weights(args, source)
        n, d = source.n, source.d
        args.kernel = args.kernel or "cosine"
    else:
        X, weights = _load_all_items(args)
        n, d = X.shape
    plan = _plan(args, X, n, d, qs, weights, streamed=source is not None)
    return _run_planned(args, plan, X, weights, qs, n)


def _load_all_items(args: argparse.Namespace) -> tuple:
    """``(X, weights)`` of FILE for the approximate paths, which score all items together; sets the default kernel."""
    dataset, X, weights, default_kernel = load_for_cli(args)
    if dataset.group_names():
        raise DiversityInputError("--approx scores all items together; drop --group-column.")
    args.kernel = args.kernel or default_kernel
    return X, weights


def _run_slq_on_dask(args: argparse.Namespace, qs: list, source) -> int:
    """``--approx slq --dask/--scheduler``: the tiles of K formed on the workers where the row blocks are."""
    with dask_client(args.scheduler, args.dask):
        if source is not None:
            X, weights = source.to_dask(), _source_weights(args, source)
            n, d = source.n, source.d
            args.kernel = args.kernel or "cosine"
        else:
            import dask.array as da


            X, weights = _load_all_items(args)
            n, d = X.shape
            X = da.from_array(np.asarray(X.toarray() if hasattr(X, "toarray") else X),
                              chunks=(max(2048, chunk_rows(d)), -1))
        plan = _plan(args, X, n, d, qs, weights, streamed=True)
        return _run_planned(args, plan, X, weights, qs, n)


def _run_planned(args: argparse.Namespace, plan, X, weights, qs: list, n: int) -> int:
    """SLQ, guaranteed bounds or a sketch estimate, carried out by the core (``run_plan``), printed as a table or JSON."""
    from ..approx.plan import CLI_NAMES
    from ..approx.run import run_plan_to_end

    device = {"cpu": "cpu", "cuda": "cuda", "auto": "auto"}[args.device]
    done = run_plan_to_end(X, plan, kernel=args.kernel, q=qs, weights=weights,
                           time_budget=args.time_budget, max_seconds=args.time_budget, replicates=args.replicates,
                           landmarks=args.landmarks, rtol=args.rtol, precision=args.precision, device=device,
                           names=CLI_NAMES, progress=TqdmProgress("score"), **kernel_params(args))
    budget = f", the largest that fits the memory budget of {format_bytes(plan.budget)}"
    res = done.bounds if plan.path == "bounds" else done.estimate
    extra = done.bounds if plan.path == "slq" else None
    kept = [q for q in qs if q in set(res.qs.tolist())]  # the orders the result took, in the order asked
    rows = [(q, res.interval(q)) for q in kept]
    if plan.path == "slq":
        if len(kept) < len(qs):
            print("note: q = 0 left out: SLQ estimates no rank (VS_0 counts eigenvalues above a threshold); use "
                  "--approx bounds for guaranteed bounds on it", file=sys.stderr)
        s = res.settings
        note = (f"SLQ, {res.probes} probes x up to {res.steps} Lanczos steps, deflated head k = {res.k}, "
                f"{s['precision']} tiles, {s['passes']} passes over K, {s['seconds']:.1f} s; interval: 95% "
                f"t-interval over the probes + quadrature and rounding bounds; stopped: {s['stopped']}; target: "
                f"{res.target}")
    elif plan.path == "bounds":
        s = res.settings
        if s["method"] == "nystrom":
            note = (f"guaranteed bounds from a Nystrom sketch (m = {s['m']} landmarks"
                    + (budget if plan.bounds.sized == "budget" else "") + f", {s['captured_trace']:.4g} of "
                    "the trace captured; its eigenvalues bound the true ones from below"
                    + ("; VS_2 exact" if s["exact_vs2"] else "") + ")")
        else:
            note = (f"guaranteed bounds from the top {res.k} eigenvalues ({s['matrix']} operator"
                    + (f"; stopped: {s['stopped']}" if s.get("stopped") else "") + ")")
    else:
        dropped = [q for q in qs if q not in kept]
        if dropped:
            print(f"note: q = {', '.join(q_key(q) for q in dropped)} left out: sketches are 10-90% off below "
                  "q = 1 (use --approx bounds)", file=sys.stderr)
        sketch = plan.sketch
        size = f" ({'m' if sketch.method == 'nystrom' else 'D'} = {sketch.size}{budget})" if sketch.sized == "budget" \
            else ""
        note = (f"{sketch.method} estimate{size}, {args.replicates} replicates, 95% t-interval; "
                f"target: {res.target}")
    if args.format == "json":
        out = {"file": str(args.file), "n": n, "weighted": weights is not None, **res.to_dict(),
               "plan": plan.to_dict()}
        if extra is not None:
            out["bounds"] = extra.to_dict()
        from .._json import dumps

        print(dumps(out, indent=2))
        return 0
    print(f"# {args.file}: kernel {res.kernel}, n = {n}; {note}")
    if plan.path == "slq":
        table = [[q_key(q), f"{res.vendi(q):.6g}", f"{low:.6g}", f"{high:.6g}", f"{res.relative_half_width(q):.2%}",
                  "SLQ estimate"] for q, (low, high) in rows]
        if extra is not None:
            table = [[q_key(q), "", f"{lo:.6g}", f"{hi:.6g}", "", "guaranteed bounds"]
                     for q, (lo, hi) in ((q, extra.interval(q)) for q in extra.qs)] + table
        print(format_table(["q", "estimate", "low", "high", "± rel", "kind"], table, rule=False))
    elif plan.path == "bounds":
        table = [[q_key(q), f"{low:.6g}", f"{high:.6g}", f"{high / low - 1:.3g}"] for q, (low, high) in rows]
        print(format_table(["q", "low", "high", "width"], table, rule=False))
    else:
        table = [[q_key(q), f"{res.vendi(q):.6g}", f"{low:.6g}", f"{high:.6g}"] for q, (low, high) in rows]
        header = ["q", "estimate", "low", "high"]
        if res.guaranteed_low is not None:
            # Nystrom: the same sketches bound the full-sample value with certainty
            header += ["certain low", "certain high"]
            table = [row + [f"{res.guaranteed(q)[0]:.6g}", f"{res.guaranteed(q)[1]:.6g}"]
                     for row, (q, _) in zip(table, rows)]
        print(format_table(header, table, rule=False))
    return 0
