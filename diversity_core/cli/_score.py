"""``diversity score FILE``: Vendi scores of chosen orders, IntDiv, per group."""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from ..exceptions import DiversityInputError
from ..kernels import KERNELS
from ..spectrum import DEVICES, METHODS
from . import warn_skipped
from ._guards import check_feature_scale, check_kernel_params

#: The values of ``--modality`` (what FILE holds; ``auto`` detects it from the content).
MODALITY_CHOICES = ("auto", "embeddings", "images", "text", "molecules")


def add_modality_argument(parser: argparse.ArgumentParser) -> None:
    """``--modality``: force how FILE is read (every command that loads data has it)."""
    parser.add_argument("--modality", default="auto", choices=MODALITY_CHOICES,
                        help="what FILE holds (default: auto, detected from the content; "
                             "`diversity inspect` shows what was detected)")

DEFAULT_QS = ("0", "0.5", "1", "2", "inf")


def _q_value(text: str) -> float:
    """argparse type for an order q: a number >= 0 or 'inf'."""
    try:
        q = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid order q {text!r}: use a number >= 0 or 'inf'") from None
    if math.isnan(q) or q < 0:
        raise argparse.ArgumentTypeError(f"invalid order q {text!r}: use a number >= 0 or 'inf'")
    return q


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
    X = featurize(dataset, args.featurizer, progress=_stderr_progress)
    check_feature_scale(X, str(args.file))
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


def _stderr_progress(done: int, total: int, message: str) -> None:
    """Progress lines on stderr."""
    print(f"\r{message} {done}/{total}", end="\n" if done >= total else "", file=sys.stderr, flush=True)


def _format_q(q: float) -> str:
    """Stable key for an order: '1', '0.5', 'inf'."""
    return "inf" if math.isinf(q) else f"{q:g}"


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
    return p


def score_rows(X, weights, groups, group_names, *, kernel, params, qs, method, device) -> list[dict]:
    """One result row for all items and one per group.

    The kernel is resolved once on all items (e.g. the median-distance bandwidth), and every
    group and IntDiv use that same kernel, so the groups' scores compare.
    """
    from ..baselines import intdiv
    from ..kernels import get_kernel
    from ..spectrum import compute_spectrum

    kern = get_kernel(kernel, **params)
    kern = kern.resolve(kern.validate(X))
    subsets = [("all", np.arange(X.shape[0]))]
    subsets += [(g, np.flatnonzero(groups == g)) for g in group_names]
    rows = []
    for name, idx in subsets:
        if idx.size < 2:
            raise DiversityInputError(f"group {name!r} has {idx.size} item(s); each group needs at least 2.")
        Xg = X[idx]
        wg = None if weights is None else weights[idx]
        spec = compute_spectrum(Xg, kernel=kern, weights=wg, method=method, device=device)
        rows.append({
            "group": name,
            "n": int(idx.size),
            "method": spec.method,
            "rank": spec.rank,
            "vendi": {_format_q(q): spec.vendi(q) for q in qs},
            "intdiv": intdiv(Xg, kernel=kern, weights=wg),
            "kernel": spec.kernel,
        })
    return rows


def run(args: argparse.Namespace) -> int:
    """Run ``diversity score``."""
    dataset, X, weights, default_kernel = load_for_cli(args)
    if args.kernel is None:
        args.kernel = default_kernel
    params = kernel_params(args)
    check_kernel_params(X, args.kernel, params)
    qs = list(dict.fromkeys(args.q))
    rows = score_rows(X, weights, dataset.groups, dataset.group_names(), kernel=args.kernel, params=params,
                      qs=qs, method=args.method, device=args.device)
    if args.format == "json":
        out = {
            "file": str(args.file),
            "n": int(X.shape[0]),
            "kernel": rows[0]["kernel"],
            "q": [_format_q(q) for q in qs],
            "weighted": weights is not None,
            "results": [{k: v for k, v in r.items() if k != "kernel"} for r in rows],
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    header = ["group", "n"] + [f"VS_{_format_q(q)}" for q in qs] + ["IntDiv", "method"]
    table = [[r["group"], str(r["n"])] + [f"{r['vendi'][_format_q(q)]:.6g}" for q in qs]
             + [f"{r['intdiv']:.4f}", r["method"]] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print(f"# {args.file}: kernel {rows[0]['kernel']}, {'weighted' if weights is not None else 'uniform weights'}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return 0
