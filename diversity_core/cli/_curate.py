"""``diversity curate FILE``: near-duplicates, top contributors, rarest items and a most-diverse subset.

For all items, and with ``--group-column`` for every group as well, the command prints the
near-duplicate groups with what they cost the scores, the items that add the most and the
least to ``VS_q``, the rarest items, and (with ``--select K``) a most-diverse subset of K
items. ``--out`` writes the selected items as CSV (``rank``, ``index``, ``id``; with groups a
``set`` column first); ``--duplicates-out`` the members of every near-duplicate group;
``--items-out`` every item's scores. ``index`` is the item's 0-based position among the loaded
items (the Python API's index); ``id`` the dataset's label of it: the file name of an image,
``row N`` / ``line N`` of a table (1-based, as the file's own numbering). The output paths are
checked before any work (none may be empty, a folder, or the input), and the CSV files of a run are
written in one :func:`~diversity_core._atomic.output_transaction`: each to a temporary file in its
folder, all renamed into place together at the end, or none when one cannot be written.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .._atomic import atomic_write, output_transaction
from .._csv import frame_csv
from .._json import dumps
from .._orders import format_q, q_key
from ..exceptions import DiversityInputError, MemoryBudgetError
from ..kernels import get_kernel
from ._guards import check_outputs
from ._inspect import add_data_arguments, dataset_from_args
from ._progress import TqdmProgress, warn_skipped
from ._score import _q_value, add_kernel_arguments, kernel_params

FORMATS = ("table", "json")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity curate``."""
    from ..curation.selection import METHODS, OBJECTIVES

    p = subparsers.add_parser(
        "curate",
        help="near-duplicates, per-item contributions, rare items, and a most-diverse subset",
        description=(
            "Curate FILE: near-duplicate groups (and VS_q and IntDiv without them), the items that add the "
            "most and the least to VS_q (leave-one-out), the rarest items (1 - mean similarity to the nearest "
            "neighbours) and, with --select K, the K items that keep the most diversity. With --group-column "
            "every group is curated too, under the kernel fixed on all items."
        ),
    )
    add_data_arguments(p)
    p.add_argument("--featurizer", default="default", help="featurizer for non-embedding data (see `diversity inspect`)")
    add_kernel_arguments(p)
    p.add_argument("--duplicates", type=float, default=None, metavar="THRESHOLD",
                   help="similarity threshold of near-duplicates (default: the kernel's, e.g. 0.99 for cosine)")
    p.add_argument("--eps", type=float, default=None,
                   help="near-duplicates by Euclidean distance <= EPS instead of a similarity threshold")
    p.add_argument("--select", type=int, default=None, metavar="K", help="choose K most-diverse items")
    p.add_argument("--method", choices=METHODS, default="greedy", help="selection method (default greedy)")
    p.add_argument("--objective", choices=OBJECTIVES, default="vs2",
                   help="greedy objective: vs2 (Vendi score of order 2) or logdet (DPP MAP) (default vs2)")
    p.add_argument("--q", type=_q_value, nargs="+", default=[1.0],
                   help="orders q of the contributions and scores (default 1; the first one is tabled)")
    p.add_argument("--top", type=int, default=10, help="items listed per table (default 10)")
    p.add_argument("--neighbors", type=int, default=10, help="nearest neighbours of the rarity score (default 10)")
    p.add_argument("--contributions", choices=("auto", "exact", "first_order"), default="auto",
                   help="leave-one-out exactly or to first order (default auto: exact when affordable)")
    p.add_argument("--search", choices=("auto", "exact", "approximate"), default="auto",
                   help="neighbour search of duplicates and rarity (default auto: exact up to 60,000 items)")
    p.add_argument("--rng", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", default=None, metavar="CSV", help="write the selected items as CSV: rank, index, id (needs --select)")
    p.add_argument("--duplicates-out", default=None, metavar="CSV", help="write the near-duplicate groups")
    p.add_argument("--items-out", default=None, metavar="CSV", help="write every item's scores")
    p.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    return p


def write_csv_atomic(frame, path) -> None:
    """Write a DataFrame as CSV atomically (:func:`~diversity_core._atomic.atomic_write`).

    Text cells are neutralised against spreadsheet formulas (:func:`~diversity_core._csv.frame_csv`).
    Inside an :func:`~diversity_core._atomic.output_transaction` the file is moved into place when
    the transaction ends.
    """
    atomic_write(path, frame_csv(frame))  # text cells that start like a formula get a quote


def _check_args(args) -> None:
    """Usage errors before any loading."""
    if args.top < 0:
        raise DiversityInputError(f"--top must be >= 0; got {args.top}.")
    if args.neighbors < 1:
        raise DiversityInputError(f"--neighbors must be >= 1; got {args.neighbors}.")
    if args.select is not None and args.select < 1:
        raise DiversityInputError(f"--select must be a positive number of items; got {args.select}.")
    if args.out is not None and args.select is None:
        raise DiversityInputError("--out writes the selected items; give --select K too.")
    if args.duplicates is not None and args.eps is not None:
        raise DiversityInputError("give either --duplicates THRESHOLD or --eps EPS, not both.")
    if args.rng < 0:
        raise DiversityInputError(f"--rng must be a non-negative seed; got {args.rng}.")
    check_outputs({"--out": args.out, "--duplicates-out": args.duplicates_out, "--items-out": args.items_out},
                  inputs=(args.file, args.embeddings))


def _curate_set(name, idx, X, weights, kern, args, ids, progress) -> dict:
    """Every curation result of one set of items (all, or one group)."""
    from ..curation import find_duplicates, item_contributions, rarity_scores, select_diverse

    n = idx.size
    if n < 2:
        raise DiversityInputError(f"set {name!r} has {n} item(s); curation needs at least 2.")
    Xs = X[idx]
    ws = None if weights is None else np.asarray(weights)[idx]
    qs = list(dict.fromkeys(args.q))
    if args.select is not None and args.select > n:
        raise DiversityInputError(f"--select {args.select} is more than the {n} items of {name!r}; choose k <= {n}.")
    dup = find_duplicates(Xs, kernel=kern, threshold=args.duplicates, eps=args.eps, weights=ws, method=args.search,
                          q=qs, rng=args.rng, progress=progress)
    try:
        contrib = item_contributions(Xs, kernel=kern, q=qs, weights=ws, method=args.contributions, progress=progress)
    except MemoryBudgetError as exc:
        print(f"warning: {name}: contributions skipped: {exc}", file=sys.stderr)
        contrib = None
    rarity = rarity_scores(Xs, kernel=kern, n_neighbors=min(args.neighbors, n - 1), method=args.search,
                           rng=args.rng, progress=progress)
    selection = None
    if args.select is not None:
        selection = select_diverse(Xs, args.select, kernel=kern, method=args.method, objective=args.objective, q=qs,
                                   rng=args.rng, progress=progress)
    return {"set": name, "idx": idx, "ids": [ids[i] for i in idx], "qs": qs, "duplicates": dup,
            "contributions": contrib, "rarity": rarity, "selection": selection}


def _item(res, local: int, **extra) -> dict:
    """Index among the loaded items (0-based) and id of a set's item."""
    return {"index": int(res["idx"][local]), "id": res["ids"][local], **extra}


def _set_json(res, top: int) -> dict:
    """JSON-ready summary of one set (stable keys)."""
    dup, contrib, rarity, sel = res["duplicates"], res["contributions"], res["rarity"], res["selection"]
    out = {"set": res["set"], "n": int(res["idx"].size)}
    d = dup.summary()
    d["groups"] = [
        {"group": g, "size": int(m.size), "representative": _item(res, int(r)),
         "members": [_item(res, int(i)) for i in m]}
        for g, (m, r) in enumerate(zip(dup.groups, dup.representatives))
    ]
    out["duplicates"] = d
    if contrib is None:
        out["contributions"] = None
    else:
        out["contributions"] = {
            "method": contrib.method,
            "vendi": {q_key(q): float(v) for q, v in zip(contrib.qs, contrib.vendi)},
            "top": {q_key(q): [_item(res, int(i), contribution=float(contrib.contribution(q)[i]))
                               for i in contrib.top(top, q=q)] for q in contrib.qs},
            "bottom": {q_key(q): [_item(res, int(i), contribution=float(contrib.contribution(q)[i]))
                                  for i in contrib.bottom(top, q=q)] for q in contrib.qs},
        }
    out["rarity"] = {
        "n_neighbors": rarity.n_neighbors,
        "method": rarity.method,
        "rarest": [_item(res, int(i), rarity=float(rarity.scores[i]),
                         nearest=_item(res, int(rarity.neighbors[i, 0])),
                         nearest_similarity=float(rarity.similarities[i, 0]))
                   for i in rarity.rarest(top)],
    }
    if sel is None:
        out["selection"] = None
    else:
        out["selection"] = {
            "method": sel.method,
            "objective": sel.objective,
            "k": sel.k,
            "items": [_item(res, int(i), rank=r + 1) for r, i in enumerate(sel.indices)],
            "vendi": {q_key(q): sel.vendi(q) for q in sel.qs},
            "curve": sel.to_dict()["curve"],
            "n_logdet": sel.n_logdet,
        }
    return out


def _columns(header: list, table: list, indent: str = "  ") -> None:
    """Print aligned columns."""
    if not table:
        return
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print(indent + "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for row in table:
        print(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())


def _short(text: str, width: int = 40) -> str:
    """An id cut to ``width`` characters."""
    return text if len(text) <= width else text[: width - 3] + "..."


def _print_set(res, args) -> None:
    """The table report of one set."""
    dup, contrib, rarity, sel = res["duplicates"], res["contributions"], res["rarity"], res["selection"]
    q0 = res["qs"][0]
    label = f"VS_{format_q(q0)}"
    top = args.top
    print(f"== {res['set']} ({res['idx'].size} items) ==")
    rule = f"similarity >= {dup.threshold:g}" if dup.criterion == "similarity" else f"distance <= {dup.threshold:g}"
    largest = max((g.size for g in dup.groups), default=0)
    print(f"near-duplicates ({rule}, {dup.method}): {dup.n_groups} groups, {dup.n_in_groups} items, "
          f"{dup.n_removable} removable (largest group: {largest})")
    if dup.vendi_original is not None:
        j = dup.qs.index(q0)
        a, b = dup.vendi_original[j], dup.vendi_deduplicated[j]
        print(f"  {label}: {a:.6g} -> {b:.6g} without duplicates ({b - a:+.4g})", end="")
    else:
        print(f"  {label}: not computed (the spectrum exceeds the memory budget)", end="")
    print(f"; IntDiv: {dup.intdiv_original:.4f} -> {dup.intdiv_deduplicated:.4f}")
    table = []
    for g, (m, r) in enumerate(zip(dup.groups[:top], dup.representatives[:top])):
        others = [i for i in m if i != r]
        shown = ", ".join(f"{res['idx'][i]}" for i in others[:5]) + (f", ... ({len(others)})" if len(others) > 5 else "")
        table.append([str(g), str(m.size), f"{res['idx'][r]} ({_short(res['ids'][r])})", shown])
    _columns(["group", "size", "keep index (id)", "remove indices"], table)
    if dup.n_groups > top:
        print(f"  ... and {dup.n_groups - top} more groups (--duplicates-out writes them all)")
    if contrib is None:
        print("contributions: skipped (see the warning)")
    else:
        how = "exact leave-one-out" if contrib.method == "exact" else "first-order leave-one-out"
        c = contrib.contribution(q0)
        for title, order in ((f"top contributors to {label} ({how}; {label} = {contrib.vendi[0]:.6g})",
                              contrib.top(top, q=q0)),
                             ("most redundant (lowest contribution)", contrib.bottom(top, q=q0))):
            print(title + ":")
            _columns(["index", "id", "contribution"],
                     [[str(res["idx"][i]), _short(res["ids"][i]), f"{c[i]:+.4g}"] for i in order])
    print(f"rarest items (1 - mean similarity to {rarity.n_neighbors} nearest neighbours, {rarity.method}):")
    _columns(["index", "id", "rarity", "nearest", "similarity"],
             [[str(res["idx"][i]), _short(res["ids"][i]), f"{rarity.scores[i]:.4f}",
               str(res["idx"][rarity.neighbors[i, 0]]), f"{rarity.similarities[i, 0]:.4f}"]
              for i in rarity.rarest(top)])
    if sel is not None:
        obj = f" ({sel.objective})" if sel.objective else ""
        print(f"selection: {sel.method}{obj}, k = {sel.k}: {label} = {sel.vendi(q0):.6g}, IntDiv = "
              f"{sel.curve_intdiv[-1]:.4f}")
        _columns(["rank", "index", "id"],
                 [[str(r + 1), str(res["idx"][i]), _short(res["ids"][i])] for r, i in enumerate(sel.indices[:top])])
        if sel.k > top:
            print(f"  ... and {sel.k - top} more (--out writes them all)")
    print()


def _selected_frame(results, grouped: bool):
    """The selected items of every set: set, rank, index, id."""
    import pandas as pd

    rows = []
    for res in results:
        sel = res["selection"]
        for r, i in enumerate(sel.indices):
            rows.append({"set": res["set"], "rank": r + 1, "index": int(res["idx"][i]), "id": res["ids"][i]})
    df = pd.DataFrame(rows, columns=["set", "rank", "index", "id"])
    return df if grouped else df.drop(columns="set")


def _duplicates_frame(results, grouped: bool):
    """Members of every near-duplicate group: set, group, size, index, id, representative."""
    import pandas as pd

    rows = []
    for res in results:
        dup = res["duplicates"]
        for g, (m, r) in enumerate(zip(dup.groups, dup.representatives)):
            for i in m:
                rows.append({"set": res["set"], "group": g, "size": int(m.size), "index": int(res["idx"][i]),
                             "id": res["ids"][i], "representative": bool(i == r)})
    df = pd.DataFrame(rows, columns=["set", "group", "size", "index", "id", "representative"])
    return df if grouped else df.drop(columns="set")


def _items_frame(results, grouped: bool):
    """Every item's scores in every set."""
    import pandas as pd

    frames = []
    for res in results:
        dup, contrib, rarity = res["duplicates"], res["contributions"], res["rarity"]
        df = pd.DataFrame({"set": res["set"], "index": res["idx"], "id": res["ids"]})
        if contrib is not None:
            for j, q in enumerate(contrib.qs):
                df[f"contribution_{q_key(q)}"] = contrib.values[:, j]
        df["rarity"] = rarity.scores
        df["duplicate_group"] = dup.labels
        df["keep"] = dup.keep
        if res["selection"] is not None:
            rank = np.zeros(res["idx"].size, dtype=np.int64)
            rank[res["selection"].indices] = np.arange(1, res["selection"].k + 1)
            df["selection_rank"] = rank
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    return df if grouped else df.drop(columns="set")


def run(args: argparse.Namespace) -> int:
    """Run ``diversity curate``."""
    from ..featurizers import default_kernel, featurize

    _check_args(args)
    dataset = dataset_from_args(args)
    warn_skipped(dataset)
    with TqdmProgress("features") as progress:
        X = featurize(dataset, args.featurizer, progress=progress)
    if args.kernel is None:
        args.kernel = default_kernel(args.featurizer, dataset=dataset)
    kern = get_kernel(args.kernel, **kernel_params(args))
    kern = kern.resolve(kern.validate(X))
    n = dataset.n
    sets = [("all", np.arange(n))]
    grouped = dataset.groups is not None
    if grouped:
        groups = np.asarray([str(g) for g in dataset.groups])
        sets += [(g, np.flatnonzero(groups == g)) for g in dataset.group_names()]
    results = []
    with TqdmProgress("curate") as progress:
        for name, idx in sets:
            results.append(_curate_set(name, idx, X, dataset.weights, kern, args, dataset.ids, progress))
    with output_transaction() as tx:  # all CSV files replaced together at the end, or none
        if args.out is not None:
            write_csv_atomic(_selected_frame(results, grouped), args.out)
        if args.duplicates_out is not None:
            write_csv_atomic(_duplicates_frame(results, grouped), args.duplicates_out)
        if args.items_out is not None:
            write_csv_atomic(_items_frame(results, grouped), args.items_out)
    written = tx.written
    if args.format == "json":
        out = {
            "file": str(args.file),
            "n": int(n),
            "kernel": kern.to_dict(),
            "weighted": dataset.weights is not None,
            "q": [q_key(q) for q in dict.fromkeys(args.q)],
            "results": [_set_json(res, args.top) for res in results],
            "written": [str(w) for w in written],
        }
        print(dumps(out, indent=2))
    else:
        weights = "weighted" if dataset.weights is not None else "uniform weights"
        print(f"# {args.file}: {n} items, kernel {kern.describe()}, {weights}, seed {args.rng}")
        print()
        for res in results:
            _print_set(res, args)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0

