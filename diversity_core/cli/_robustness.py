"""``diversity robustness FILE``: the groups' ranking under several representations and kernels.

Every (representation, kernel) pair scores every group at the same n with an interval
(:func:`diversity_core.robustness.representation_robustness`); the first line says whether the
ranking depends on the representation, the table lists each group's rank, score and interval,
and image data get the pixel-background check. ``FILE`` may be ``demo:<name>``
(``diversity robustness demo:icons`` shows a rank flip).
"""

from __future__ import annotations

import argparse
import sys

from .._json import dumps
from .._orders import format_q, parse_q
from .._table import format_table
from ..exceptions import DiversityInputError
from ._inspect import add_data_arguments, dataset_from_args
from ._progress import TqdmProgress


def _q_value(text: str) -> float:
    try:
        return parse_q(text)
    except DiversityInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``robustness``."""
    p = subparsers.add_parser(
        "robustness",
        help="does the groups' ranking depend on the representation? every representation and kernel, at one n",
        description="Score every group of FILE under each representation (featurizer) and kernel, at the same n "
        "with intervals, and say whether the groups' ranking changes between them.",
    )
    add_data_arguments(p)
    p.add_argument(
        "--featurizers",
        nargs="+",
        default=None,
        metavar="NAME",
        help="representations to test (default: the dataset's default one; e.g. pixels efficientnet_lite0)",
    )
    p.add_argument(
        "--kernels",
        nargs="+",
        default=None,
        metavar="KERNEL",
        help="kernels tried on every representation (default: its own kernel and rbf)",
    )
    p.add_argument("--q", type=_q_value, default=1.0, help="order of the Vendi score (default 1)")
    p.add_argument("--n", type=int, default=None, help="items per group (default: the smallest group's size)")
    p.add_argument(
        "--confidence-level", type=float, default=0.95, help="level of every interval (default 0.95)"
    )
    p.add_argument(
        "--n-subsamples", type=int, default=30, help="random n-subsets averaged per estimate (default 30)"
    )
    p.add_argument("--n-resamples", type=int, default=20, help="subsets per size for the spread (default 20)")
    p.add_argument("--rng", type=int, default=0, metavar="SEED", help="seed of every subset (default 0)")
    p.add_argument(
        "--metrics",
        nargs="*",
        default=None,
        metavar="METRIC",
        help="rank the groups under every metric instead (issue 43): VS_<q>, IntDiv, RKE_MC, tVS, TCE, DCScore, "
        "MagArea, compression_ratio, ngram_diversity, self_BLEU; alone: the default metrics. One kernel: the "
        "first of --kernels, default the first featurizer's own",
    )
    p.add_argument("--format", choices=("table", "json"), default="table", help="stdout format")
    return p


def _run_metrics(args: argparse.Namespace, ds, features: dict) -> int:
    """``--metrics``: the groups' ranking under every metric (and featurizer), the flips with their intervals."""
    from ..agreement import metric_agreement
    from ..featurizers import FEATURIZERS

    first = next(iter(features))
    kernel = args.kernels[0] if args.kernels else (FEATURIZERS[first].kernel if first in FEATURIZERS else "cosine")
    texts = None
    if ds.modality == "text":
        texts = {g: [str(ds.items[i]) for i in ds.group_indices(g)] for g in ds.group_names()}
    with TqdmProgress("metrics") as progress:
        result = metric_agreement(
            {g: features[first][ds.group_indices(g)] for g in ds.group_names()},
            metrics=args.metrics or None,
            representations={r: {g: X[ds.group_indices(g)] for g in ds.group_names()}
                             for r, X in features.items() if r != first},
            representation=first,
            texts=texts,
            kernel=kernel,
            n=args.n,
            n_subsamples=args.n_subsamples,
            n_resamples=args.n_resamples,
            confidence_level=args.confidence_level,
            rng=args.rng,
            progress=progress,
        )
    if args.format == "json":
        sys.stdout.write(dumps(result.to_dict()) + "\n")
        return 0
    sys.stdout.write(agreement_text(result) + "\n")
    return 0


def agreement_text(result) -> str:
    """A metric agreement as the CLI prints it: the verdict, the table with intervals, the flips.

    Used by ``diversity robustness --metrics`` and ``diversity evaluate --agreement``.
    """
    rows = [
        (r["label"], r["rank"], r["group"], f"{r['estimate']:.4g}", f"[{r['ci_low']:.4g}, {r['ci_high']:.4g}]",
         "higher" if r["higher_is_better"] else "lower")
        for r in result.table()
    ]
    lines = [result.summary(), "", format_table(
        ("metric", "rank", "group", "value", f"{result.confidence_level:.0%} interval", "more diverse"), rows)]
    if result.flips:
        lines += ["", "Rank flips:"] + [f"  {line}" for line in result.flip_lines()]
    lines += [f"skipped {m}: {why}" for m, why in result.skipped.items()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``diversity robustness``."""
    from ..featurizers import featurize, resolve_featurizer
    from ..robustness import representation_robustness

    ds = dataset_from_args(args)
    if ds.groups is None:
        raise DiversityInputError(f"{ds.name!r} has no groups; name the group column with --group-column.")
    names = args.featurizers or [resolve_featurizer(ds, "default")]
    features = {}
    for name in names:
        with TqdmProgress(f"{name} features") as progress:
            features[name] = featurize(ds, name, progress=progress, copy=False)
    if args.metrics is not None:
        return _run_metrics(args, ds, features)
    with TqdmProgress("comparisons") as progress:
        result = representation_robustness(
            features,
            ds.groups,
            kernels=args.kernels,
            q=args.q,
            n=args.n,
            n_subsamples=args.n_subsamples,
            n_resamples=args.n_resamples,
            confidence_level=args.confidence_level,
            rng=args.rng,
            progress=progress,
            images=ds.items if ds.modality == "images" else None,
        )
    if args.format == "json":
        sys.stdout.write(dumps(result.to_dict()) + "\n")
        return 0
    lines = [result.summary(), ""]
    rows = [
        (
            r["representation"],
            r["kernel"],
            r["rank"],
            r["group"],
            r["items"],
            f"{r['estimate']:.3f}",
            f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]",
        )
        for r in result.table()
    ]
    lines.append(
        format_table(
            (
                "representation",
                "kernel",
                "rank",
                "group",
                "items",
                f"VS_{format_q(result.q)}",
                f"{result.confidence_level:.0%} interval",
            ),
            rows,
        )
    )
    if result.background is not None:
        lines += ["", result.background.message()]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
