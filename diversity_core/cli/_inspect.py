"""``diversity inspect FILE``: what was loaded, per group, and what was skipped and why.

``FILE`` may also be ``demo:<name>`` (``demo:digits``, ``demo:molecules``, ...). The report ends
with the memory budget and the limit it was derived from (physical memory, the cgroup's limit,
``RLIMIT_AS``/``RLIMIT_DATA``, ``DIVERSITY_MEMORY_BUDGET`` or ``--memory-budget``). The data flags
here (:func:`add_data_arguments`, :func:`dataset_from_args`, and :func:`preprocess_from_args`
for ``--preprocess``/``--n-components``) are shared by the other sub-commands that read a
dataset.
"""

from __future__ import annotations

import argparse
import json
import warnings

from .._config import budget_source, format_bytes, memory_budget
from .._table import format_table
from ..data import DEFAULT_MAX_BYTES, Dataset, load_dataset
from ..exceptions import DiversityWarning
from ..preprocess import PREPROCESS_STEPS, parse_steps, preprocess, scale_warning
from ._progress import TqdmProgress

FORMATS = ("table", "json")


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``FILE`` and the :func:`~diversity_core.data.load_dataset` options, in kebab-case."""
    parser.add_argument("file", metavar="FILE", help="a data file, an image folder or .zip, or demo:<name>")
    parser.add_argument(
        "--modality",
        default="auto",
        choices=("auto", "embeddings", "images", "text", "molecules"),
        help="what FILE holds (default: auto)",
    )
    parser.add_argument(
        "--group-column", default=None, help="column/array/SD property with each item's group"
    )
    parser.add_argument("--weight-column", default=None, help="column/array/SD property with item weights")
    parser.add_argument(
        "--coco-crops", action="store_true",
        help="a COCO folder: one item per annotated object (its box's crop), not per image",
    )
    parser.add_argument("--text-column", default=None, help="column holding the text of a table")
    parser.add_argument("--smiles-column", default=None, help="column holding the SMILES of a table")
    parser.add_argument(
        "--embeddings", default=None, help="companion embeddings file for images/text/molecules"
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        help=f"size limit of the input in bytes (default: {DEFAULT_MAX_BYTES})",
    )
    add_preprocess_arguments(parser)


def add_preprocess_arguments(parser: argparse.ArgumentParser) -> None:
    """``--preprocess STEPS`` and ``--n-components K`` (see :func:`preprocess_from_args`)."""
    parser.add_argument(
        "--preprocess",
        default=None,
        metavar="STEPS",
        help="preprocess the features before the kernel, comma-separated steps in "
        f"{', '.join(PREPROCESS_STEPS)} (applied in that order), e.g. standardize or standardize,pca",
    )
    parser.add_argument(
        "--n-components", type=int, default=None, help="dimensions kept by the pca preprocessing step"
    )


def preprocess_from_args(args: argparse.Namespace, X):
    """``X`` after the ``--preprocess`` steps (unchanged without them).

    Without steps, warns when the raw feature scales differ by orders of magnitude.
    """
    steps = parse_steps(getattr(args, "preprocess", None))
    if not steps:
        message = scale_warning(X)
        if message:
            warnings.warn(message.replace("(preprocessing 'standardize')", "(--preprocess standardize)"),
                          DiversityWarning, stacklevel=2)
        return X
    return preprocess(X, steps=steps, n_components=getattr(args, "n_components", None))


def dataset_from_args(args: argparse.Namespace) -> Dataset:
    """Load the dataset named by the flags of :func:`add_data_arguments`."""
    with TqdmProgress("loading") as progress:
        return load_dataset(
            args.file,
            modality=args.modality,
            group_column=args.group_column,
            weight_column=args.weight_column,
            text_column=args.text_column,
            smiles_column=args.smiles_column,
            embeddings=args.embeddings,
            max_bytes=args.max_bytes,
            progress=progress,
            coco_crops=getattr(args, "coco_crops", False),
        )


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``inspect``."""
    parser = subparsers.add_parser(
        "inspect",
        help="show what a data file holds, per group, and what was skipped",
        description="Load FILE as the other commands would and print what was loaded, per group, "
        "and every entry that was skipped, with the reason.",
    )
    add_data_arguments(parser)
    parser.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    parser.add_argument("--max-examples", type=int, default=10, help="skipped entries to list (default: 10)")
    return parser


def format_summary(summary: dict) -> str:
    """Plain-text report of :meth:`Dataset.summary`."""
    lines = [
        f"name:      {summary['name']}",
        f"source:    {summary['source']}",
        f"modality:  {summary['modality']}",
        f"items:     {summary['n_items']}",
    ]
    if summary.get("detected"):
        lines.insert(3, f"detected:  {summary['detected']}")
    if summary["n_features"] is not None:
        lines.append(f"features:  {summary['n_features']} per item")
    if summary["item_shape"] is not None:
        lines.append(f"thumbnail: {' x '.join(str(s) for s in summary['item_shape'])}")
    lines.append(f"hash:      {summary['content_hash']}")
    groups = summary["groups"]
    weights = summary["weights"]
    header = ["group", "items"] + (["weight sum"] if weights else [])
    rows = [[g, c] + ([f"{weights[g]:.4g}"] if weights else []) for g, c in groups.items()]
    lines += ["", format_table(header, rows)]
    skipped = summary["skipped"]
    lines.append("")
    if skipped["count"] == 0:
        lines.append("skipped:   none")
    else:
        reasons = ", ".join(f"{r}: {c}" for r, c in skipped["reasons"].items())
        lines.append(f"skipped:   {skipped['count']} ({reasons})")
        for ex in skipped["examples"]:
            lines.append(f"  {ex['where']}: {ex['reason']}")
        if skipped["count"] > len(skipped["examples"]):
            lines.append(f"  ... and {skipped['count'] - len(skipped['examples'])} more")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Load ``args.file`` and print its summary; exit code 0."""
    dataset = dataset_from_args(args)
    parse_steps(args.preprocess)  # a bad step is a usage error, even without features to apply it to
    if dataset.features is not None:
        preprocess_from_args(args, dataset.features)
    summary = dataset.summary(max_examples=max(0, args.max_examples))
    budget = memory_budget()
    if args.format == "json":
        summary["memory_budget"] = {"bytes": budget, "source": budget_source()}
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(format_summary(summary))
        print(f"\nbudget:    {format_bytes(budget)} of memory per allocation: {budget_source()}")
    return 0
