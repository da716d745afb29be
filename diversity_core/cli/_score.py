"""``diversity score FILE``: Vendi scores of chosen orders, IntDiv, per group.

Large embeddings are streamed, never loaded whole: a ``.npy`` or ``.parquet`` file of 64 MiB or
more, or a folder of ``.npy`` shards, goes through :mod:`diversity_core.sources` when no group
column is asked for (feature kernels take the streamed dual path; others read the rows when
they fit). ``--dask local[:N]`` starts a ``distributed.LocalCluster`` of N worker processes and
``--scheduler ADDRESS`` connects to a running ``dask scheduler``; the rows are then read by the
workers (which must see FILE at the same path) and only d x d sums travel back.
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

from .._orders import parse_q, q_key
from .._table import format_table
from ..exceptions import DiversityInputError
from ..kernels import KERNELS
from ..spectrum import DEVICES, METHODS
from . import warn_skipped
from ._guards import check_feature_scale, check_kernel_params
from ._inspect import add_preprocess_arguments, preprocess_from_args
from ._progress import TqdmProgress

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
    parser.add_argument("--weights", default=None, metavar="COLUMN_OR_FILE",
                        help="weight column of FILE, or a file with one weight per item (.npy, .csv, .txt)")
    parser.add_argument("--featurizer", default="default", help="featurizer for non-embedding data (see `diversity inspect`)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    add_modality_argument(parser)
    add_preprocess_arguments(parser)


def load_for_cli(args: argparse.Namespace):
    """Load FILE with the group/weight options; returns (dataset, features, default kernel)."""
    from ..data import load_dataset
    from ..featurizers import default_kernel, featurize

    weights_file = None
    weight_column = None
    if args.weights is not None:
        if Path(args.weights).is_file():
            weights_file = Path(args.weights)
        else:
            weight_column = args.weights
    dataset = load_dataset(args.file, modality=getattr(args, "modality", "auto"),
                           group_column=args.group_column, weight_column=weight_column)
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
    from ..data._files import DEFAULT_MAX_BYTES, load_npy, read_text_file
    from ..data._tables import check_weight_values

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
    approx.add_argument("--approx", choices=("bounds", "nystrom", "rff", "tanimoto_rf"), default=None,
                        help="guaranteed bounds on every VS_q (Lanczos top-k, or a Nystrom sketch beyond the "
                             "float32 matrix), or a sketch estimate with error bars for q >= 1 (diversity_core.approx)")
    approx.add_argument("--bounds-method", choices=("auto", "lanczos", "nystrom"), default="auto",
                        help="bounds: exact top-k eigenvalues (lanczos) or a Nystrom sketch's lower bounds in the "
                             "PSD order (nystrom: no pass over K); auto picks nystrom when not even the float32 "
                             "n x n matrix fits the memory budget")
    approx.add_argument("--k", type=int, default=200, help="bounds: top eigenvalues, reached progressively (200)")
    approx.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                        help="bounds: stop the progression of k before this many seconds")
    approx.add_argument("--m", type=int, default=None,
                        help="nystrom: landmarks (default 1024 for estimates, 2000 for bounds)")
    approx.add_argument("--D", type=int, default=None, help="rff: frequencies (2D features); tanimoto_rf: hashes")
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
    from .._optional import require

    distributed = require("distributed", purpose="--scheduler and --dask")
    cluster = None
    try:
        if scheduler is not None:
            # Dask's own connect timeout (distributed.comm.timeouts.connect, 30 s unless configured)
            client = distributed.Client(scheduler, timeout=require("dask").config.get(
                "distributed.comm.timeouts.connect"))
        else:
            cluster = distributed.LocalCluster(n_workers=n_local, threads_per_worker=1, processes=True,
                                               dashboard_address=None)
            client = distributed.Client(cluster)
    except (OSError, TimeoutError, ValueError) as exc:
        if cluster is not None:
            cluster.close()
        where = f"the Dask scheduler at {scheduler}" if scheduler else "a local Dask cluster"
        raise DiversityInputError(
            f"cannot reach {where} ({type(exc).__name__}: {exc}); start one with `dask scheduler` and "
            "`dask worker ADDRESS`, or use --dask local."
        ) from None
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
    from ..data._files import MMAP_THRESHOLD_BYTES
    from ..sources import NpySource, ParquetSource, ShardSource

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
            from ..data._files import _npy_header

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
    from ..sources import ParquetSource

    if not isinstance(source, ParquetSource):
        raise DiversityInputError(
            f"{args.file} has no columns, so there is no weight column {args.weights!r}; "
            "give a file with one weight per item (.npy, .csv, .txt)."
        )
    from ..data.embeddings import parquet_column

    w = np.asarray(parquet_column(source.path, args.weights))
    if not np.issubdtype(w.dtype, np.number):
        raise DiversityInputError(f"{source.path}: the weight column {args.weights!r} is not numeric ({w.dtype}).")
    return w.astype(np.float64)


def _blocked_vs2_only(kern, n: int, qs, method: str) -> bool:
    """Whether only VS_2 is asked for a kernel without features whose dense matrices do not fit."""
    from .._config import fits_memory
    from ..spectrum import _dense_bytes

    return (method == "auto" and not kern.has_feature_map and all(q == 2.0 for q in qs)
            and not fits_memory(_dense_bytes(n, 0)))


def _blocked_row(name, X, weights, kern, qs) -> dict:
    """A result row from the exact blocked VS_2 (no spectrum, so no rank), with the VS_inf bounds."""
    from ..blocked import vendi_2_exact

    res = vendi_2_exact(X, kernel=kern, weights=weights, method="blocked", progress=TqdmProgress("score"))
    return {
        "group": name,
        "n": res.n,
        "method": "blocked",
        "execution": res.execution,
        "rank": None,
        "vendi": {q_key(q): res.vs2 for q in qs},
        "vs_inf_bounds": [res.vs_inf_lower, res.vs_inf_upper],
        "intdiv": res.intdiv,
        "kernel": res.kernel,
    }


def score_rows(X, weights, groups, group_names, *, kernel, params, qs, method, device) -> list[dict]:
    """One result row for all items and one per group.

    The kernel is resolved once on all items (e.g. the median-distance bandwidth), and every
    group and IntDiv use that same kernel, so the groups' scores compare. X may be a Dask
    array (no groups then): its spectrum is reduced on the current Dask client.
    """
    from ..baselines import intdiv
    from ..kernels import get_kernel
    from ..sources import is_dask_array
    from ..spectrum import _compute_spectrum, compute_spectrum

    kern = get_kernel(kernel, **params)
    if is_dask_array(X):
        return [_source_row("all", X, weights, kern, qs, method, device)]
    kern = kern.resolve(kern.validate(X))
    subsets = [("all", np.arange(X.shape[0]))]
    subsets += [(g, np.flatnonzero(groups == g)) for g in group_names]
    rows = []
    for name, idx in subsets:
        if idx.size < 2:
            raise DiversityInputError(f"group {name!r} has {idx.size} item(s); each group needs at least 2.")
        Xg = X[idx]
        wg = None if weights is None else weights[idx]
        if _blocked_vs2_only(kern, idx.size, qs, method):
            rows.append(_blocked_row(name, Xg, wg, kern, qs))
            continue
        if kern.has_feature_map:
            # IntDiv = 1 - ||Phi^T p||^2 comes out of the dual pass itself
            spec, moments = _compute_spectrum(Xg, kernel=kern, weights=wg, method=method, n_eigenvectors=0,
                                              device=device, progress=None, kernel_params={}, mean=True)
        else:
            spec, moments = compute_spectrum(Xg, kernel=kern, weights=wg, method=method, device=device), None
        rows.append({
            "group": name,
            "n": int(idx.size),
            "method": spec.method,
            "execution": spec.execution,
            "rank": spec.rank,
            "vendi": {q_key(q): spec.vendi(q) for q in qs},
            "intdiv": (1.0 - float(moments.mean @ moments.mean)) if moments is not None
            else intdiv(Xg, kernel=kern, weights=wg),
            "kernel": spec.kernel,
        })
    return rows


def _source_row(name, X, weights, kern, qs, method, device) -> dict:
    """The result row of streamed or Dask data: one pass gives the spectrum and IntDiv."""
    from ..sources import as_source
    from ..spectrum import _compute_spectrum

    source = as_source(X)
    if _blocked_vs2_only(kern, source.n, qs, method):
        return _blocked_row(name, source, weights, kern, qs)
    spec, moments = _compute_spectrum(X, kernel=kern, weights=weights, method=method, n_eigenvectors=0,
                                      device=device, progress=TqdmProgress("score"), kernel_params={}, mean=True)
    if moments is None or moments.mean is None:
        from ..blocked import vendi_2_exact

        value = vendi_2_exact(source, kernel=kern, weights=weights, method="blocked").intdiv
    else:
        value = 1.0 - float(moments.mean @ moments.mean)
    return {
        "group": name,
        "n": spec.n,
        "method": spec.method,
        "execution": spec.execution,
        "rank": spec.rank,
        "vendi": {q_key(q): spec.vendi(q) for q in qs},
        "intdiv": value,
        "kernel": spec.kernel,
    }


def run(args: argparse.Namespace) -> int:
    """Run ``diversity score``."""
    qs = list(dict.fromkeys(args.q))
    if args.approx is not None:
        return _run_approx(args, qs)
    source = streamed_source(args)
    with dask_client(args.scheduler, args.dask) as client:
        if source is not None:
            from ..kernels import get_kernel

            if args.kernel is None:
                args.kernel = "cosine"
            weights = _source_weights(args, source)
            X = source.to_dask() if client is not None else source
            rows = [_source_row("all", X, weights, get_kernel(args.kernel, **kernel_params(args)), qs,
                                args.method, args.device)]
            n = source.n
        else:
            dataset, X, weights, default_kernel = load_for_cli(args)
            if args.kernel is None:
                args.kernel = default_kernel
            check_kernel_params(X, args.kernel, kernel_params(args))
            n = int(X.shape[0])
            groups, names = dataset.groups, dataset.group_names()
            if client is not None:
                if names:
                    raise DiversityInputError(
                        "--scheduler/--dask score all items together; drop --group-column, or run without Dask."
                    )
                import dask.array as da

                from .._config import chunk_rows

                X = da.from_array(np.asarray(X), chunks=(chunk_rows(X.shape[1], X.dtype.itemsize), -1))
            rows = score_rows(X, weights, groups, names, kernel=args.kernel, params=kernel_params(args),
                              qs=qs, method=args.method, device=args.device)
    return _print_rows(args, rows, n, weights, qs)


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


def _run_approx(args: argparse.Namespace, qs: list) -> int:
    """``--approx``: guaranteed bounds or sketch estimates of every requested order, all items together."""
    from ..approx import vendi_bounds, vendi_estimate

    source = streamed_source(args)
    if source is not None:
        X, weights = source, _source_weights(args, source)
        n = source.n
        args.kernel = args.kernel or "cosine"
    else:
        dataset, X, weights, default_kernel = load_for_cli(args)
        if dataset.group_names():
            raise DiversityInputError("--approx scores all items together; drop --group-column.")
        args.kernel = args.kernel or default_kernel
        n = int(X.shape[0])
    params = kernel_params(args)
    if args.approx == "bounds":
        extra = {} if args.m is None else {"m": args.m}
        res = vendi_bounds(X, kernel=args.kernel, k=args.k, qs=qs, weights=weights, time_budget=args.time_budget,
                           method=args.bounds_method, progress=TqdmProgress("score"), **extra, **params)
        rows = [(q, res.vendi(q)) for q in qs]
        s = res.settings
        if s["method"] == "nystrom":
            note = (f"guaranteed bounds from a Nystrom sketch (m = {s['m']} landmarks, {s['captured_trace']:.4g} of "
                    "the trace captured; its eigenvalues bound the true ones from below"
                    + ("; VS_2 exact" if s["exact_vs2"] else "") + ")")
        else:
            note = (f"guaranteed bounds from the top {res.k} eigenvalues ({s['matrix']} operator"
                    + (f"; stopped: {s['stopped']}" if s.get("stopped") else "") + ")")
    else:
        kept = [q for q in qs if q >= 1]
        dropped = [q for q in qs if q < 1]
        if dropped:
            print(f"note: q = {', '.join(q_key(q) for q in dropped)} left out: sketches are 10-90% off below "
                  "q = 1 (use --approx bounds)", file=sys.stderr)
        if not kept:
            raise DiversityInputError("--approx estimates need an order q >= 1; below 1 use --approx bounds.")
        res = vendi_estimate(X, kernel=args.kernel, method=args.approx, q=kept, m=args.m, D=args.D,
                             replicates=args.replicates, landmarks=args.landmarks, weights=weights,
                             progress=TqdmProgress("score"), **params)
        rows = [(q, res.interval(q)) for q in kept]
        note = f"{args.approx} estimate, {args.replicates} replicates, 95% t-interval; target: {res.target}"
    if args.format == "json":
        out = {"file": str(args.file), "n": n, "weighted": weights is not None, **res.to_dict()}
        from .._json import dumps

        print(dumps(out, indent=2))
        return 0
    print(f"# {args.file}: kernel {res.kernel}, n = {n}; {note}")
    if args.approx == "bounds":
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
