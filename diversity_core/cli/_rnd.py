"""``diversity rnd FILE``: the RND score (random network distillation), per group."""

from __future__ import annotations

import argparse
import math
import sys
import time

from .._config import configure_environment
from .._json import dumps
from .._optional import require
from ..data import load_dataset
from ..exceptions import DiversityInputError
from ._guards import check_feature_scale, check_lr
from ._progress import TqdmProgress, warn_skipped
from ._score import add_modality_argument


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity rnd``."""
    from ..rnd import ARCHITECTURES, DEVICES, OPTIMIZERS

    p = subparsers.add_parser(
        "rnd",
        help="RND score: diversity by random network distillation",
        description=(
            "RND score of FILE: a predictor network learns to imitate a frozen random network on "
            "a random training split; the normalised gap between its validation and training errors, "
            "averaged over the last epochs and over runs, is the score (higher = more diverse). "
            "With --group-column every group is scored under the same settings and seed. Scores are "
            "comparable only under one setting (architecture, train size, epochs)."
        ),
    )
    p.add_argument("file", help="data file or folder (.npy .npz .csv .tsv .parquet, images, text, molecules)")
    p.add_argument("--train-size", type=int, default=None,
                   help="training items per run (default: the paper's 200, or n - 50 when the smallest scored set "
                        "has n < 250 items)")
    p.add_argument("--epochs", type=int, default=50, help="training epochs per run (default 50)")
    p.add_argument(
        "--average-last", type=int, default=10, help="average RND_i over this many final epochs (default 10)"
    )
    p.add_argument(
        "--runs", type=int, default=40, help="runs, each with a fresh split and networks (default 40)"
    )
    p.add_argument("--lr", type=float, default=0.01, help="learning rate (default 0.01)")
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="sgd", help="optimizer (default sgd)")
    p.add_argument(
        "--architecture",
        choices=ARCHITECTURES,
        default="auto",
        help="network: mlp for features, cnn or resnet18 for images (default auto)",
    )
    p.add_argument("--batch-size", type=int, default=None,
                   help="mini-batch size (default: the whole training split for the MLP, 50 for CNNs)")
    p.add_argument("--device", choices=DEVICES, default="auto", help="cpu, cuda, or auto (default)")
    p.add_argument(
        "--rng", type=int, default=0, metavar="SEED", help="random seed of splits and networks (default 0)"
    )
    # the option's name before it followed the API's ``rng`` (as in ``diversity compare``)
    p.add_argument(
        "--seed", dest="rng", type=int, action=_DeprecatedAlias, replacement="--rng", default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
    )
    p.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch CPU threads (default 0: torch's own choice); 1 is often fastest on a busy machine",
    )
    p.add_argument("--group-column", default=None, help="column (or npz array) naming each item's group")
    p.add_argument(
        "--featurizer",
        default="default",
        help="featurizer for non-embedding data with the mlp (see `diversity inspect`)",
    )
    p.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    add_modality_argument(p)
    return p


class _DeprecatedAlias(argparse.Action):
    """An old option name that still works and says, on stderr, which name replaced it."""

    def __init__(self, option_strings, dest, *, replacement: str, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"warning: {option_string} is deprecated; use {self.replacement}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _inputs(dataset, architecture: str, featurizer: str):
    """What to hand to :func:`rnd_score`: the Dataset itself, or features from a named featurizer."""
    if featurizer == "default" or architecture in ("cnn", "resnet18"):
        return dataset
    from ..featurizers import featurize
    from ..rnd._inputs import _densify

    return _densify(featurize(dataset, featurizer))


def _sets(dataset) -> dict:
    names = dataset.group_names()
    if not names:
        return {"all": dataset}
    return {name: dataset.select_group(name) for name in names}


def run(args: argparse.Namespace) -> int:
    """Run ``diversity rnd``."""
    # before torch is imported: OpenMP threads wait passively (spinning made RND training
    # several times slower on a shared machine); an explicit setting in the environment wins
    configure_environment()
    if args.threads < 0:
        raise DiversityInputError(
            f"--threads must be 0 (torch's default) or a positive number; got {args.threads}."
        )
    if args.rng < 0:
        raise DiversityInputError(f"--rng must be a non-negative seed; got {args.rng}.")
    check_lr(args.lr)
    if args.threads > 1024:
        raise DiversityInputError(f"--threads must be at most 1024; got {args.threads}.")
    from ..rnd import default_train_size, rnd_score, rnd_small_groups_warning

    if args.threads:
        require("torch", purpose="the RND score").set_num_threads(args.threads)

    dataset = load_dataset(args.file, modality=args.modality, group_column=args.group_column)
    warn_skipped(dataset)
    if dataset.features is not None:
        check_feature_scale(dataset.features, str(args.file))
    arch = args.architecture
    if args.featurizer != "default" and arch == "auto":
        arch = "mlp"
    sets = _sets(dataset)
    sizes = {name: len(subset) for name, subset in sets.items()}
    # every set under one training split: the paper's 200 when the smallest set allows it
    train_size = args.train_size if args.train_size is not None else default_train_size(sizes, per_group=True)
    small = rnd_small_groups_warning(sizes, per_group=True)
    if small:
        print(f"warning: {small}", file=sys.stderr)
    rows = []
    for name, subset in sets.items():
        start = time.perf_counter()
        data = _inputs(subset, arch, args.featurizer)
        bar = TqdmProgress(name, stages=False, unit="run-epoch", disable=False)
        try:
            res = rnd_score(
                data,
                train_size=train_size,
                epochs=args.epochs,
                average_last=args.average_last,
                runs=args.runs,
                lr=args.lr,
                momentum=args.momentum,
                optimizer=args.optimizer,
                architecture=arch,
                batch_size=args.batch_size,
                device=args.device,
                rng=args.rng,
                progress=bar,
            )
        except DiversityInputError as exc:
            if name == "all":
                raise
            raise DiversityInputError(f"group {name!r}: {exc}") from None
        finally:
            bar.close()
        rows.append((name, len(subset), res, time.perf_counter() - start))

    if args.format == "json":
        out = {
            "file": str(args.file),
            "group_column": args.group_column,
            "featurizer": args.featurizer,
            "sets": [
                {
                    "name": name,
                    "n": int(n),
                    "seconds": float(seconds),
                    **res.to_dict(),
                }
                for name, n, res, seconds in rows
            ],
        }
        print(dumps(out, indent=2))
        return 0

    s = rows[0][2].settings
    print(
        f"# {args.file}: RND score, {s['architecture']} on {s['device']}, {s['runs']} runs x {s['epochs']} "
        f"epochs (mean of the last {s['average_last']}), train {s['train_size']}, batch {s['batch_size']}, "
        f"{s['optimizer']} lr {s['lr']:g}, seed {args.rng}"
    )
    header = ["set", "n", "RND", "95% CI", "std", "seconds"]
    table = []
    for name, n, res, seconds in rows:
        lo, hi = res.confidence_interval
        ci = "-" if math.isnan(lo) else f"[{lo:.4f}, {hi:.4f}]"
        std = "-" if math.isnan(res.std) else f"{res.std:.4f}"
        table.append([str(name), str(n), f"{res.score:.4f}", ci, std, f"{seconds:.1f}"])
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0
