"""``diversity search FILE --query TEXT --model hf:FOLDER``: the items ranked by similarity to a query.

The query is a text (``--query``, ranked against the images with a CLIP-style checkpoint's two
towers), an image file (``--image``, the same checkpoint's image tower) or one of the items
(``--item ROW``, "find similar": in the checkpoint's image embeddings, or without ``--model`` in
``--featurizer``'s features). Prints the ranking (rank, row, id, group, cosine) as a table or, with
``--format json``, as :meth:`diversity_core.semantic_search.SearchResult.to_dict`.
"""

from __future__ import annotations

import argparse
import json
import os

from .._table import format_table
from ..data import DEFAULT_MAX_BYTES, load_dataset
from ..exceptions import DiversityInputError
from ..semantic_search import search
from ._progress import TqdmProgress

FORMATS = ("table", "json")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``search``."""
    parser = subparsers.add_parser(
        "search",
        help="rank the items by similarity to a text, an image or one of them (CLIP-style hf: model)",
        description="Rank FILE's items by cosine similarity to a text (--query) or an image file (--image), "
        "embedded by a CLIP-style checkpoint (--model hf:FOLDER, a folder saved with CLIPModel.save_pretrained), "
        "or to one of its items (--item ROW: find similar, in the model's image embeddings or in --featurizer's "
        "features).",
    )
    parser.add_argument("file", metavar="FILE", help="an image folder or .zip, a data file, or demo:<name>")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--query", default=None, metavar="TEXT", help="a text to look for, e.g. 'a red car'")
    what.add_argument("--item", type=int, default=None, metavar="ROW",
                      help="find the items most similar to this one (its 0-based row)")
    what.add_argument("--image", default=None, metavar="IMAGE", help="a PNG, JPEG or WebP file to look for")
    parser.add_argument("--model", default=None, metavar="hf:FOLDER",
                        help="a CLIP-style checkpoint holding an image and a text encoder (needed for --query and "
                        "--image); loaded from the folder or the local Hugging Face cache only (--allow-download)")
    parser.add_argument("--featurizer", default="default",
                        help="features for --item without --model (default: the dataset's embeddings, else "
                        "pixels / ngram / morgan)")
    parser.add_argument("--top", type=int, default=10, metavar="N", help="how many items to print (default: 10)")
    parser.add_argument("--modality", default="auto", choices=("auto", "embeddings", "images", "text", "molecules"),
                        help="what FILE holds (default: auto)")
    parser.add_argument("--group-column", default=None, help="column/array/SD property with each item's group")
    parser.add_argument("--embeddings", default=None, help="companion embeddings file for images/text/molecules")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help=f"size limit of the input (and of --image) in bytes (default: {DEFAULT_MAX_BYTES})")
    parser.add_argument("--format", default="table", choices=FORMATS, help="output format (default: table)")
    return parser


def _image_bytes(path: str, max_bytes: int) -> bytes:
    """The bytes of the ``--image`` file, refused beyond ``max_bytes``."""
    if not os.path.isfile(path):
        raise DiversityInputError(f"--image {path!r} is not a file; give a PNG, JPEG or WebP file.")
    size = os.path.getsize(path)
    if size > max_bytes:
        raise DiversityInputError(f"--image {path!r} has {size} bytes, over the limit of {max_bytes} (--max-bytes).")
    with open(path, "rb") as fh:
        return fh.read(max_bytes + 1)


def run(args: argparse.Namespace) -> int:
    """Load FILE, rank its items against the query and print the ranking; exit code 0."""
    if args.top < 1:
        raise DiversityInputError(f"--top must be a positive integer; got {args.top}.")
    if args.query is not None and not args.query.strip():
        raise DiversityInputError("--query is empty; give the text to look for, e.g. --query 'a red car'.")
    query = args.query if args.query is not None else args.item
    if args.image is not None:
        query = _image_bytes(args.image, args.max_bytes)
    with TqdmProgress("loading") as progress:
        dataset = load_dataset(args.file, modality=args.modality, group_column=args.group_column,
                               embeddings=args.embeddings, max_bytes=args.max_bytes, progress=progress)
    with TqdmProgress("embedding") as progress:
        result = search(dataset, query, model=args.model, featurizer=args.featurizer, top_k=args.top,
                        progress=progress)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2, sort_keys=True))
        return 0
    print(f"{result.query}: the {len(result)} most similar of {result.n_items} items ({result.space})")
    header = ["rank", "row", "id"] + (["group"] if result.groups is not None else []) + ["cosine"]
    rows = [
        [r + 1, int(i), x] + ([result.groups[r]] if result.groups is not None else []) + [f"{s:.4f}"]
        for r, (i, x, s) in enumerate(zip(result.indices.tolist(), result.ids, result.scores.tolist()))
    ]
    print(format_table(header, rows))
    return 0
