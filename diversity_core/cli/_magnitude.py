"""``diversity magnitude FILE``: t_conv, MagArea and the magnitude function, per group, MagDiff vs a reference."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .._config import memory_budget
from .._json import to_jsonable
from ..data import load_dataset
from ..exceptions import DiversityInputError
from ._guards import check_feature_scale
from ._progress import warn_skipped
from ._score import add_modality_argument


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity magnitude``."""
    from ..magnitude import METRICS

    p = subparsers.add_parser(
        "magnitude",
        help="magnitude function, convergence scale, MagArea and MagDiff",
        description=(
            "Metric-space magnitude of FILE: the convergence scale t_conv, MagArea and the magnitude "
            "function on n-scales evenly spaced scales. With --group-column every group is measured on a "
            "common interval [0, t_cut] (t_cut = median t_conv, or the reference's t_conv with --reference) "
            "and MagDiff is reported against the reference group."
        ),
    )
    p.add_argument("file", help="data file or folder (.npy .npz .csv .tsv .parquet, images, text, molecules)")
    p.add_argument("--metric", choices=METRICS, default="euclidean", metavar="METRIC",
                   help="distance (default euclidean): euclidean, cityblock, cosine, tanimoto/jaccard "
                        "(fingerprints), any scipy.spatial.distance name (minkowski, chebyshev, ...); "
                        "'precomputed' reads FILE as a distance matrix")
    p.add_argument("--p", type=float, default=None, help="exponent of --metric minkowski (default 2)")
    p.add_argument("--method", choices=("auto", "dense", "matrix-free"), default="auto",
                   help="dense matrices, or matrix-free conjugate gradients for sets whose n x n matrices "
                        "exceed the memory budget (default auto: dense while they fit)")
    p.add_argument("--n-scales", type=int, default=30, help="evenly spaced scales on [0, t_cut] (default 30)")
    p.add_argument("--fraction", type=float, default=0.95,
                   help="t_conv solves Mag(t_conv) = fraction * n (default 0.95)")
    p.add_argument("--t-cut", type=float, default=None, help="explicit end of the interval (default: t_conv rule)")
    p.add_argument("--group-column", default=None, help="column (or npz array) naming each item's group")
    p.add_argument("--reference", default=None, metavar="GROUP",
                   help="reference group: t_cut is its t_conv and MagDiff is measured against it")
    p.add_argument("--featurizer", default="default",
                   help="featurizer for non-embedding data (see `diversity inspect`)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    add_modality_argument(p)
    return p


def _progress(done: int, total: int, message: str) -> None:
    """Progress on stderr, redrawn in place (only on a terminal)."""
    if not sys.stderr.isatty():
        return
    end = "\n" if done >= total else ""
    print(f"\r{message} [{done}/{total}]\033[K", end=end, file=sys.stderr, flush=True)


def _load(args: argparse.Namespace):
    """Dataset and a dense float matrix (features, or D with --metric precomputed)."""
    from ..featurizers import dense_features, featurize

    dataset = load_dataset(args.file, modality=args.modality, group_column=args.group_column)
    warn_skipped(dataset)
    if args.metric == "precomputed":
        if dataset.features is None:
            raise DiversityInputError(f"--metric precomputed needs a numeric n x n matrix in {args.file}.")
        X = np.asarray(dataset.features, dtype=np.float64)
    else:
        X = featurize(dataset, args.featurizer, progress=_progress)
    # sparse features (n-gram counts) are densified while the float64 matrix fits the memory budget
    X = dense_features(X, max_entries=memory_budget() // 8, purpose="magnitude")
    check_feature_scale(X, str(args.file))
    return dataset, np.asarray(X, dtype=np.float64)


def _sets(dataset, X: np.ndarray, metric: str) -> dict:
    """{name: points (or distance sub-matrix)} for each group, or {"all": X}."""
    names = dataset.group_names()
    if not names:
        return {"all": X}
    groups = np.asarray([str(g) for g in dataset.groups])
    out = {}
    for g in names:
        idx = np.flatnonzero(groups == g)
        out[g] = X[np.ix_(idx, idx)] if metric == "precomputed" else X[idx]
    return out


def _num(v):
    """JSON number under the project's convention (NaN and None as null, infinities as "inf"/"-inf")."""
    return None if v is None else to_jsonable(float(v))


def result_rows(comp) -> list[dict]:
    """One JSON-ready entry per set, with stable keys."""
    rows = []
    for name in comp.names:
        f = comp.functions[name]
        role = "reference" if name == comp.reference else ("candidate" if comp.reference else "set")
        rows.append({
            "name": name,
            "role": role,
            "n": int(f.n_points),
            "n_distinct": int(f.n_distinct),
            "n_merged": int(f.n_merged),
            "t_conv": _num(comp.t_conv[name]),
            "mag_area": _num(comp.areas[name]),
            "mag_area_scaled": _num(comp.areas_scaled[name]),
            "mag_diff": _num(comp.mag_diff.get(name)),
            "mag_diff_scaled": _num(comp.mag_diff_scaled.get(name)),
            "mag_diff_relative": _num(comp.mag_diff_relative.get(name)),
            "mag_diff_absolute": _num(comp.mag_diff_absolute.get(name)),
            "max_rel_error": _num(f.max_rel_error),
            "method": f.method,
            "curve": {
                "t": [float(t) for t in f.ts],
                "magnitude": [_num(v) for v in f.values],
                "error": [_num(v) for v in f.errors],
                "ill_conditioned": [bool(v) for v in f.ill_conditioned],
                "singular": [bool(v) for v in f.singular],
                "exact": [bool(v) for v in f.exact],
            },
        })
    return rows


def _fmt(v, spec: str = ".6g") -> str:
    """A number for the table; ``None`` as ``-`` and the JSON convention's ``"inf"`` strings as they are."""
    if v is None:
        return "-"
    return v if isinstance(v, str) else format(v, spec)


def _print_table(args, comp, rows: list[dict]) -> None:
    print(f"# {args.file}: metric {args.metric}, {args.n_scales} scales on [0, t_cut], "
          f"t_cut = {comp.t_cut:.6g} ({comp.t_cut_rule})")
    header = ["set", "role", "n", "distinct", "t_conv", "MagArea", "MagArea/t_cut"]
    if comp.reference is not None:
        header += ["MagDiff", "MagDiff/t_cut", "MagDiff/ref"]
    table = []
    for r in rows:
        line = [r["name"], r["role"], str(r["n"]), str(r["n_distinct"]), _fmt(r["t_conv"]),
                _fmt(r["mag_area"]), _fmt(r["mag_area_scaled"])]
        if comp.reference is not None:
            line += [_fmt(r["mag_diff"]), _fmt(r["mag_diff_scaled"]), _fmt(r["mag_diff_relative"], ".4g")]
        table.append(line)
    _columns(header, table)
    print()
    curve_header = ["t"] + [f"Mag[{r['name']}]" for r in rows]
    curve = []
    for i, t in enumerate(rows[0]["curve"]["t"]):
        line = [f"{t:.6g}"]
        for r in rows:
            c = r["curve"]
            v = c["magnitude"][i]
            mark = " (singular)" if c["singular"][i] else (" (ill-conditioned)" if c["ill_conditioned"][i] else "")
            line.append(("nan" if v is None else f"{v:.10g}") + mark)
        curve.append(line)
    _columns(curve_header, curve)


def _columns(header: list, table: list) -> None:
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def run(args: argparse.Namespace) -> int:
    """Run ``diversity magnitude``."""
    from ..magnitude import compare_magnitude

    if args.reference is not None and args.group_column is None:
        raise DiversityInputError("--reference names a group; give --group-column too.")
    dataset, X = _load(args)
    sets = _sets(dataset, X, args.metric)
    if args.reference is not None and args.reference not in sets:
        raise DiversityInputError(
            f"--reference {args.reference!r} is not a group of {args.file}; groups: "
            f"{', '.join(repr(k) for k in sets)}."
        )
    comp = compare_magnitude(sets, reference=args.reference, t_cut=args.t_cut, n_scales=args.n_scales,
                             fraction=args.fraction, metric=args.metric, progress=_progress, p=args.p,
                             method=args.method)
    rows = result_rows(comp)
    for r in rows:
        c = r["curve"]
        bad = sum(c["ill_conditioned"]) + sum(c["singular"])
        if bad:
            print(f"warning: {r['name']}: {bad} of {len(c['t'])} scales are flagged ill-conditioned or "
                  "singular (see the curve)", file=sys.stderr)
    if args.format == "json":
        out = {
            "file": str(args.file),
            "metric": args.metric,
            "n_scales": int(args.n_scales),
            "fraction": float(args.fraction),
            "t_cut": float(comp.t_cut),
            "t_cut_rule": comp.t_cut_rule,
            "reference": comp.reference,
            "sets": rows,
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    _print_table(args, comp, rows)
    return 0
