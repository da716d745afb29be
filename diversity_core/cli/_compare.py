"""``diversity compare A.npy B.npy ...``: every score of several groups at one n, with intervals.

Each FILE is a group named after the file (its stem), or one FILE holds every group
(``--group-column model``, an image folder with sub-folders, ``demo:digits``). The table of
estimates with intervals and the pairwise verdicts go to stdout (``--format json`` prints the
saved comparison instead); ``--json``, ``--csv``, ``--out report.html`` and ``--figures DIR``
write files. Exit 2 on bad input.

The output paths are checked before any work (:func:`~._guards.check_outputs`: none may be empty,
a folder, or one of the input files), and every output of a run is written in one
:func:`~diversity_core._atomic.output_transaction`: all files are replaced together at the end, or,
when one cannot be written, none is.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

from .._atomic import output_transaction
from .._table import format_table
from ..data import Dataset, load_dataset
from ..exceptions import DiversityInputError
from ._guards import check_feature_scale, check_kernel_params, check_n_scales, check_outputs
from ._progress import TqdmProgress, warn_skipped
from ._score import _q_value, add_kernel_arguments, add_modality_argument, kernel_params

DEFAULT_QS = (0.5, 1.0, 2.0, math.inf)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity compare``."""
    p = subparsers.add_parser(
        "compare",
        help="compare groups (models, datasets) at one n, with intervals and a report",
        description="Score several groups at the same number of items n (default: the smallest group), "
        "with an interval for every score and, for every pair, whether the difference is resolved.",
    )
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="one file per group, or one file with --group-column (or demo:<name>)")
    p.add_argument("--group-column", default=None,
                   help="column (or npz array) naming each item's group, when one FILE holds every group")
    p.add_argument("--names", nargs="+", default=None, metavar="NAME",
                   help="group names for the files (default: the file stems)")
    p.add_argument("--featurizer", default="default", help="featurizer for non-embedding data")
    add_modality_argument(p)
    add_kernel_arguments(p)
    p.add_argument("--q", type=_q_value, nargs="+", default=list(DEFAULT_QS),
                   help="orders q of the Vendi scores (default 0.5 1 2 inf)")
    p.add_argument("--n", type=int, default=None,
                   help="items per group (default: the smallest group of at least 10 items)")
    p.add_argument("--leave-out-smaller", action=argparse.BooleanOptionalAction, default=True,
                   help="leave out (and name on stderr) the groups of fewer than n items (default); "
                        "--no-leave-out-smaller refuses them instead")
    p.add_argument("--reference", default=None, help="reference group of MagDiff (default: none)")
    p.add_argument("--confidence-level", "--level", dest="confidence_level", type=float, default=0.95,
                   help="confidence level of every interval (default 0.95; --level is its old name)")
    p.add_argument("--n-subsamples", type=int, default=100,
                   help="n-subsets averaged per group larger than n (default 100)")
    p.add_argument("--n-resamples", type=int, default=50, help="subsets per size of the sample-size curve (default 50)")
    p.add_argument("--no-magnitude", dest="magnitude", action="store_false", help="skip MagArea and MagDiff")
    p.add_argument("--metric", default="euclidean", choices=("euclidean", "cityblock", "cosine"),
                   help="distance for magnitude (default euclidean)")
    p.add_argument("--n-scales", type=int, default=30, help="scales of the magnitude integrals (default 30)")
    p.add_argument("--magnitude-replicates", type=int, default=30,
                   help="subsets per size for magnitude intervals (default 30)")
    p.add_argument("--t-cut", type=float, default=None,
                   help="upper end of MagArea's interval (default: median of the groups' t_conv)")
    p.add_argument("--rnd", action="store_true", help="also compute the RND score (slower)")
    p.add_argument("--no-size-curve", dest="size_curve", action="store_false",
                   help="skip the sample-size curves (only the sizes the intervals need)")
    p.add_argument("--rng", type=int, default=0, metavar="SEED", help="seed of every subset (default 0)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="stdout format")
    p.add_argument("--json", default=None, metavar="PATH", help="save the comparison as JSON")
    p.add_argument("--csv", default=None, metavar="PATH", help="save the table of estimates as CSV")
    p.add_argument("--out", default=None, metavar="REPORT.html", help="write the self-contained HTML report")
    p.add_argument("--figures", default=None, metavar="DIR", help="export every figure to DIR")
    p.add_argument("--figure-format", choices=("png", "svg"), default="png", help="format of --figures (default png)")
    return p


def _load_groups(args) -> tuple:
    """(groups for compare, datasets for the report galleries, default kernel)."""
    from ..featurizers import default_kernel

    files = args.files
    if args.names is not None and len(args.names) != len(files):
        raise DiversityInputError(
            f"--names gives {len(args.names)} name(s) for {len(files)} file(s); give one name per file."
        )
    if len(files) == 1:
        ds = load_dataset(files[0], modality=args.modality, group_column=args.group_column)
        warn_skipped(ds)
        names = ds.group_names()
        if len(names) < 2:
            detail = "no group column" if ds.groups is None else f"only the group {names[0]!r}"
            raise DiversityInputError(
                f"{files[0]} has {detail}; give two or more files (one per group), or one file with "
                "--group-column naming each item's group."
            )
        if args.names is not None:
            raise DiversityInputError("--names applies to one file per group; with one file the groups are named by its data.")
        return ds, {g: ds.select_group(g) for g in names}, default_kernel(args.featurizer, dataset=ds)
    if args.group_column is not None:
        raise DiversityInputError(
            "--group-column applies to one file holding every group; with several files each file is a group."
        )
    if args.names is None:
        _refuse_repeated_files(files)
        names = _names_for(files)
    else:
        names = list(args.names)
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise DiversityInputError(
                f"--names must be distinct; {', '.join(repr(n) for n in repeated)} is given more than once."
            )
    datasets = {}
    for name, path in zip(names, files):
        ds = load_dataset(path, modality=args.modality)
        warn_skipped(ds)
        datasets[name] = ds
    first = next(iter(datasets.values()))
    return datasets, datasets, default_kernel(args.featurizer, dataset=first)


def _keep_groups(args, groups, datasets) -> tuple:
    """The groups kept by the core's rule (:func:`~diversity_core.compare.groups_for_n`), and its n.

    Returns ``(groups for compare, datasets, n or None)``; the left-out groups are named on stderr.
    """
    from ..compare import groups_for_n

    sizes = {g: int(ds.n) for g, ds in datasets.items()}
    choice = groups_for_n(sizes, n=args.n, leave_out_smaller=args.leave_out_smaller)
    if not choice.left_out:
        return groups, datasets, args.n
    print(f"note: {choice.note}", file=sys.stderr)
    kept = {g: datasets[g] for g in choice.kept}
    if isinstance(groups, Dataset):  # one file holds every group: one Dataset of the kept groups' rows
        rows = np.sort(np.concatenate([groups.group_indices(g) for g in choice.kept]))
        return groups.subset(rows), kept, choice.n
    return kept, kept, choice.n


def _refuse_repeated_files(files) -> None:
    """Refuse the same file given twice without ``--names`` (it would be one group, not two)."""
    seen: dict = {}
    for f in files:
        key = str(f)
        if not key.startswith("demo:"):
            try:
                key = str(Path(key).expanduser().resolve())
            except (OSError, RuntimeError):  # a loop: the loader names it
                continue
        if key in seen:
            same = "the same file" if seen[key] == str(f) else f"the same file as {seen[key]}"
            raise DiversityInputError(
                f"{f} is given twice ({same}). To compare a file with itself, name the two groups: "
                f"--names A B."
            )
        seen[key] = str(f)


def _names_for(files) -> list:
    """Group names from file stems, made unique with the parent folder when stems repeat."""
    stems = [Path(f).stem if not str(f).startswith("demo:") else str(f) for f in files]
    if len(set(stems)) == len(stems):
        return stems
    names = [str(Path(f).with_suffix("")) for f in files]
    if len(set(names)) == len(names):
        return names
    return [f"{name} ({i + 1})" for i, name in enumerate(names)]


def _check_output_paths(args) -> None:
    """Refuse unusable output paths before any work (empty, a folder, an input file, one file twice)."""
    folders = {}
    if args.figures is not None:
        from ..report import FIGURE_TITLES

        folders["--figures"] = (args.figures, [f"{name}.{args.figure_format}" for name in FIGURE_TITLES])
    check_outputs({"--json": args.json, "--csv": args.csv, "--out": args.out}, inputs=args.files, folders=folders)


def _write_outputs(args, cmp, datasets) -> list:
    """Write every requested output in one transaction; returns the paths written."""
    # each output goes to a temporary file first; all are moved into place together at the end, so a
    # failed write (a full disk, ulimit -f) exits 2 and leaves every previous output unchanged
    with output_transaction() as tx:
        if args.json is not None:
            cmp.to_json(args.json)
        if args.csv is not None:
            cmp.to_csv(args.csv)
        if args.out is not None:
            from ..report import write_report

            write_report(cmp, args.out, datasets=datasets)
        if args.figures is not None:
            from ..report import export_figures

            export_figures(cmp, args.figures, format=args.figure_format)
    return tx.written


def run(args: argparse.Namespace) -> int:
    """Run ``diversity compare``."""
    from ..compare import compare

    for flag, value, low in (("--n-subsamples", args.n_subsamples, 1), ("--n-resamples", args.n_resamples, 3),
                             ("--magnitude-replicates", args.magnitude_replicates, 3)):
        if value < low:
            raise DiversityInputError(f"{flag} must be at least {low}; got {value}.")
    check_n_scales(args.n_scales, "--n-scales", 3)
    if args.rng < 0:
        raise DiversityInputError(f"--rng must be a non-negative seed; got {args.rng}.")
    _check_output_paths(args)
    groups, datasets, featurizer_kernel = _load_groups(args)
    groups, datasets, n = _keep_groups(args, groups, datasets)
    if args.kernel is None:
        args.kernel = featurizer_kernel
    for name, ds in datasets.items():  # features at hand (embeddings, companions): checked before any work
        if ds.features is not None:
            check_feature_scale(ds.features, f"group {name!r}")
            check_kernel_params(ds.features, args.kernel, kernel_params(args))
    sources = {g: {"file": ds.source or ds.name, "content_hash": ds.content_hash} for g, ds in datasets.items()}
    with TqdmProgress("compare") as progress:
        cmp = compare(
            groups,
            kernel=args.kernel,
            qs=list(dict.fromkeys(args.q)),
            reference=args.reference,
            n=n,
            n_subsamples=args.n_subsamples,
            n_resamples=args.n_resamples,
            confidence_level=args.confidence_level,
            magnitude=args.magnitude,
            metric=args.metric,
            n_scales=args.n_scales,
            magnitude_replicates=args.magnitude_replicates,
            t_cut=args.t_cut,
            rnd=args.rnd,
            size_curve=args.size_curve,
            featurizer=args.featurizer,
            sources=sources,
            rng=args.rng,
            progress=progress,
            **kernel_params(args),
        )
    written = _write_outputs(args, cmp, datasets)
    if args.format == "json":
        print(cmp.to_json())
    else:
        kernel = cmp.settings.get("kernel_description", "")
        print(f"# {len(cmp.groups)} groups compared at n = {cmp.n} items each ({cmp.settings.get('n_rule')}); "
              f"kernel {kernel}; {cmp.confidence_level:.0%} intervals; seed {cmp.settings.get('seed')}")
        if cmp.reference:
            print(f"# MagDiff reference: {cmp.reference}; candidates: "
                  f"{', '.join(g for g in cmp.groups if g != cmp.reference)}")
        estimates = cmp.table_rows()
        print(format_table(cmp.table_header(), [[r["score"], *(r[g] for g in cmp.groups)] for r in estimates]))
        print()
        print(f"# pairwise differences (resolved: the {cmp.confidence_level:.0%} interval excludes 0)")
        header = cmp.pairwise_header()
        print(format_table(header, [[r[h] for h in header] for r in cmp.pairwise_rows()]))
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0
