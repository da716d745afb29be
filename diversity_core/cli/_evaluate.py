"""``diversity evaluate GENERATED --reference REAL``: fidelity, diversity, distances and copies of generated items.

Loads the generated items (with an optional text, prompt and quality column), the reference
(real items) and an optional training set, featurizes them alike, and prints one table of every
metric of :func:`diversity_core.evaluation.evaluate` with its interval (``--format json``: the
result's JSON). ``--json``, ``--csv``, ``--items`` (one row per generated item, closest copies
first: its nearest training item, distance, similarity, that item's radius, ratio and flag) and ``--out report.html`` write files, all in one
:func:`~diversity_core._atomic.output_transaction` (all replaced together, or none). The output
paths are checked before any work. Exit 2 with one line on bad input.
"""

from __future__ import annotations

import argparse
import sys

from .._atomic import atomic_write, output_transaction
from .._optional import require
from .._table import format_table
from ..data import load_dataset
from ..exceptions import DiversityInputError
from ._guards import check_feature_scale, check_outputs
from ._progress import TqdmProgress, warn_skipped
from ._robustness import agreement_text
from ._score import _q_value, add_kernel_arguments, add_modality_argument, kernel_params

HELP = "evaluate generated items against real ones: PRDC, FD, KD, Vendi ratio, copies, per prompt"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``diversity evaluate``."""
    p = subparsers.add_parser(
        "evaluate", help=HELP,
        description="Evaluate generated items against a reference set of real items: precision, recall, "
        "density, coverage, improved precision/recall, Frechet and kernel distances, the Vendi score "
        "relative to the reference and MagDiff; with --train, memorised items; with --prompt-column, "
        "diversity per prompt; with --quality-column, the quality-weighted Vendi score.",
    )
    p.add_argument("generated", metavar="GENERATED", help="generated items (features, images, text or molecules)")
    p.add_argument("--reference", required=True, metavar="REAL", help="real items, featurized like GENERATED")
    p.add_argument("--train", default=None, metavar="TRAIN", help="the model's training items (memorisation)")
    p.add_argument("--prompt-column", default=None, metavar="COL",
                   help="column (or npz array) of GENERATED naming each item's prompt or condition")
    # named as in `diversity inspect` (add_data_arguments)
    p.add_argument("--text-column", default=None, metavar="COL",
                   help="column holding the text of GENERATED when it is a table (default: found by name, "
                        "never the prompt or quality column)")
    p.add_argument("--quality-column", default=None, metavar="COL",
                   help="column (or npz array) of GENERATED with each item's non-negative quality score")
    p.add_argument("--featurizer", default="default", help="featurizer for non-embedding data")
    add_modality_argument(p)
    add_kernel_arguments(p)
    p.add_argument("--q", type=_q_value, default=1.0, help="order q of the Vendi scores (default 1)")
    p.add_argument("--k", type=int, default=5, help="neighbours of precision/recall/density/coverage (default 5)")
    p.add_argument("--k-improved", type=int, default=3, help="neighbours of the improved precision/recall (default 3)")
    p.add_argument("--nn-method", choices=("auto", "exact", "approximate"), default="auto",
                   help="nearest-neighbour search (default auto: exact within the memory budget)")
    p.add_argument("--kid-subsets", type=int, default=100, help="subsets of the kernel distance (default 100; 0 skips)")
    p.add_argument("--kid-subset-size", type=int, default=1000, help="items per kernel-distance subset (default 1000)")
    p.add_argument("--no-magnitude", dest="magnitude", action="store_false", help="skip MagDiff")
    p.add_argument("--magnitude-n", type=int, default=1000, help="items per set for MagDiff (default 1000)")
    p.add_argument("--memorization-metric", choices=("euclidean", "cosine"), default="euclidean",
                   help="distance of the memorisation test (default euclidean)")
    p.add_argument("--memorization-alpha", type=float, default=0.01, metavar="ALPHA",
                   help="false-positive rate of the copy flag on fresh real items, at most: its threshold is "
                        "calibrated on held-out training items (default 0.01)")
    p.add_argument("--confidence-level", type=float, default=0.95, help="level of every interval (default 0.95)")
    p.add_argument("--n-resamples", type=int, default=16, help="subsets per size for the intervals (default 16; 0: none)")
    p.add_argument("--interval-size", type=int, default=2048, help="largest subset of the intervals (default 2048)")
    p.add_argument("--novelty", action="store_true",
                   help="also what GENERATED has that REAL lacks and what it misses: KEN both ways, RRKE, the top "
                        "novel and missing modes with their shares, top items and whether they are outside the "
                        "label-permutation null (diversity_core.differential.novelty_report)")
    p.add_argument("--novelty-eta", type=float, default=1.0, metavar="ETA",
                   help="with --novelty: modes expressed more than ETA times as often as in the other set (default 1)")
    p.add_argument("--novelty-modes", type=int, default=3, help="with --novelty: modes shown each way (default 3)")
    p.add_argument("--novelty-permutations", type=int, default=100,
                   help="with --novelty: label permutations of the null (default 100; 0: none)")
    p.add_argument("--novelty-method", choices=("auto", "dense", "features", "rff"), default="auto",
                   help="with --novelty: the route (default auto: the kernel's features, dense, then random Fourier "
                        "features)")
    p.add_argument("--pack", action="store_true",
                   help="also the metric pack: RKE mode count, truncated Vendi, TCE/TIE, DCScore (and with texts the "
                        "lexical scores) of each set at equal n; CMMD, clipped density/coverage and probabilistic "
                        "precision/recall of GENERATED against REAL (diversity_core.evaluation.metric_pack)")
    p.add_argument("--agreement", nargs="*", default=None, metavar="METRIC",
                   help="rank REAL and GENERATED under every metric (diversity_core.metric_agreement) and flag where "
                        "the order flips, with intervals at equal n: does 'less diverse than the reference' depend on "
                        "the metric? Names as in `diversity robustness --metrics`; alone: the default metrics")
    p.add_argument("--rng", type=int, default=0, metavar="SEED", help="seed of every random choice (default 0)")
    p.add_argument("--format", choices=("table", "json"), default="table", help="stdout format")
    p.add_argument("--json", default=None, metavar="PATH", help="save the result as JSON")
    p.add_argument("--csv", default=None, metavar="PATH", help="save the table of metrics as CSV")
    p.add_argument("--items", default=None, metavar="FILE.csv",
                   help="with --train: save one row per generated item, closest copies first (id, nearest "
                        "training item and its id, distance, similarity, that item's own nearest-neighbour "
                        "radius, ratio, flagged) as CSV")
    p.add_argument("--out", default=None, metavar="REPORT.html", help="write a self-contained HTML page")
    return p


def _load(path: str, args, *, group_column=None, weight_column=None, text_column=None, modality=None):
    """One input as a dataset (its skipped items reported)."""
    ds = load_dataset(path, modality=modality or args.modality, group_column=group_column,
                      weight_column=weight_column, text_column=text_column)
    warn_skipped(ds)
    return ds


def _features(datasets: list, paths: list, args) -> list:
    """The inputs' features with ``--featurizer``, in one feature space.

    The n-gram vocabulary of texts is built over every input
    (:func:`~diversity_core.featurizers.featurize_together`).
    """
    from ..featurizers import featurize_together

    with TqdmProgress("features") as progress:
        out = featurize_together(datasets, args.featurizer, progress=progress)
    dense = []
    for X, path in zip(out, paths):
        if hasattr(X, "toarray"):
            X = X.toarray()
        check_feature_scale(X, str(path))
        dense.append(X)
    return dense


def run(args: argparse.Namespace) -> int:
    """Run ``diversity evaluate``."""
    from ..evaluation import evaluate

    if args.rng < 0:
        raise DiversityInputError(f"--rng must be a non-negative seed; got {args.rng}.")
    if args.items is not None and args.train is None:
        raise DiversityInputError("--items writes each generated item's nearest training item; give --train TRAIN too.")
    check_outputs({"--json": args.json, "--csv": args.csv, "--items": args.items, "--out": args.out},
                  inputs=[a for a in (args.generated, args.reference, args.train) if a])
    if args.novelty:
        _check_novelty_args(args)
    ref_ds = _load(args.reference, args)
    # GENERATED is read as the same kind of data as REAL: a table of embeddings with a text prompt
    # column would otherwise be detected as text, a table of texts without a known column name as embeddings
    like = ref_ds.modality if args.modality == "auto" else None
    gen_ds = _load(args.generated, args, group_column=args.prompt_column, weight_column=args.quality_column,
                   text_column=args.text_column, modality=like)
    train_ds = None if args.train is None else _load(args.train, args, modality=like)
    inputs = [(ref_ds, args.reference), (gen_ds, args.generated)] + [(train_ds, args.train)] * (train_ds is not None)
    R, G, *rest = _features([ds for ds, _ in inputs], [p for _, p in inputs], args)
    T = rest[0] if rest else None
    if R.shape[1] != G.shape[1]:
        raise DiversityInputError(
            f"{args.reference} has {R.shape[1]} features and {args.generated} has {G.shape[1]}; featurize both alike."
        )
    if args.kernel is None:
        args.kernel = "cosine"
    with TqdmProgress("evaluate") as progress:
        ev = evaluate(
            R, G, train=T, prompts=gen_ds.groups, quality=gen_ds.weights, k=args.k, k_improved=args.k_improved,
            kernel=args.kernel, q=args.q, nn_method=args.nn_method, kid_subsets=args.kid_subsets,
            kid_subset_size=args.kid_subset_size, magnitude=args.magnitude, magnitude_n=args.magnitude_n,
            memorization_metric=args.memorization_metric, memorization_alpha=args.memorization_alpha,
            confidence_level=args.confidence_level,
            n_resamples=args.n_resamples, interval_size=args.interval_size, rng=args.rng, progress=progress,
            **kernel_params(args),
        )
    ev.settings["sources"] = {"generated": args.generated, "reference": args.reference, "train": args.train,
                              "prompt_column": args.prompt_column, "quality_column": args.quality_column,
                              "text_column": args.text_column}
    novelty = _novelty(args, R, G) if args.novelty else None
    if novelty is not None:
        ev.settings["novelty"] = novelty.to_dict(n_items=NOVELTY_ITEMS, generated_ids=gen_ds.ids,
                                                 reference_ids=ref_ds.ids)
    pack = _pack(args, R, G, ref_ds, gen_ds) if args.pack else None
    if pack is not None:
        ev.settings["pack"] = pack.to_dict()
    agreement = _agreement(args, R, G, ref_ds, gen_ds) if args.agreement is not None else None
    if agreement is not None:
        ev.settings["agreement"] = agreement.to_dict()
    written = _write_outputs(args, ev, gen_ids=gen_ds.ids, train_ids=None if train_ds is None else train_ds.ids)
    if args.format == "json":
        print(ev.to_json())
    else:
        _print_table(ev)
        if pack is not None:
            _print_pack(pack)
        if novelty is not None:
            _print_novelty(ev.settings["novelty"])
        if agreement is not None:
            print("# which metrics agree: reference and generated ranked under every metric")
            print(agreement_text(agreement))
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _pack(args, R, G, ref_ds, gen_ds):
    """The metric pack of ``--pack`` (the evaluation's kernel, interval settings and seed; texts when read as text)."""
    from ..evaluation import metric_pack

    def texts(ds):
        return list(ds.items) if ds.modality == "text" and ds.items is not None else None

    return metric_pack(R, G, texts_reference=texts(ref_ds), texts_generated=texts(gen_ds), kernel=args.kernel,
                       k=args.k, confidence_level=args.confidence_level, n_resamples=args.n_resamples,
                       interval_size=args.interval_size, rng=args.rng, **kernel_params(args))


def _agreement(args, R, G, ref_ds, gen_ds):
    """``--agreement``: the two sets ranked under every metric at equal n (texts when read as text)."""
    from ..agreement import metric_agreement

    texts = None
    if ref_ds.modality == "text" and gen_ds.modality == "text":
        texts = {"reference": [str(t) for t in ref_ds.items], "generated": [str(t) for t in gen_ds.items]}
    return metric_agreement({"reference": R, "generated": G}, metrics=args.agreement or None, texts=texts,
                            kernel=args.kernel, confidence_level=args.confidence_level, interval_size=args.interval_size,
                            rng=args.rng, **kernel_params(args))


def _print_pack(pack) -> None:
    """The ``--pack`` section after the metrics table: one row per metric and set."""
    print(f"# metric pack: reference-free metrics at n = {pack.n} items per set, kernel {pack.kernel.get('name')}; "
          f"two-set metrics of {pack.n_generated} generated against {pack.n_reference} reference items")
    rows = [[r["metric"], r["set"], _cell(r["value"]), _cell(r["ci_low"]), _cell(r["ci_high"]), r["note"]]
            for r in pack.rows()]
    print(format_table(["metric", "set", "value", "ci_low", "ci_high", "note"], rows))


#: Top items listed per novel or missing mode.
NOVELTY_ITEMS = 5


def _check_novelty_args(args) -> None:
    """The ``--novelty-*`` values checked before any work (named by their flags)."""
    if not args.novelty_eta > 0:
        raise DiversityInputError(f"--novelty-eta must be a number > 0; got {args.novelty_eta}.")
    if args.novelty_modes < 1:
        raise DiversityInputError(f"--novelty-modes must be at least 1; got {args.novelty_modes}.")
    if args.novelty_permutations < 0:
        raise DiversityInputError(f"--novelty-permutations must be 0 (no null) or more; got {args.novelty_permutations}.")


def _novelty(args, R, G):
    """The novelty report of ``--novelty`` (G against R, the evaluation's kernel and interval settings)."""
    from ..differential import novelty_report

    return novelty_report(G, R, kernel=args.kernel, eta=args.novelty_eta, method=args.novelty_method,
                          n_modes=args.novelty_modes, n_permutations=args.novelty_permutations,
                          confidence_level=args.confidence_level, n_resamples=args.n_resamples,
                          interval_size=args.interval_size, rng=args.rng, **kernel_params(args))


def _print_novelty(nov: dict) -> None:
    """The ``--novelty`` section after the metrics table: scores, then each novel and missing mode."""
    s = nov["settings"]
    print(f"# novelty: {s['method']} route ({s['kind']}), kernel {s['kernel_description']}, eta = {s['eta']:g}; "
          f"null of {s['n_permutations']} label permutations at level {s['confidence_level']:g}")
    rows = [[name, _cell(e["value"]), _cell(e["ci_low"]), _cell(e["ci_high"]), e["note"]]
            for name, e in (("KEN (generated | reference)", nov["ken"]), ("KEN (reference | generated)", nov["ken_missing"]),
                            (f"RRKE order {s['rrke_order']:g}", nov["rrke"]))]
    print(format_table(["score", "value", "ci_low", "ci_high", "note"], rows))
    for role, what in (("novel", "generated has, reference lacks"), ("missing", "reference has, generated lacks")):
        modes = nov[f"{role}_modes"]
        print(f"# {role} modes ({what}): {len(modes) or 'none'}")
        rows = [[m["mode"], _cell(m["eigenvalue"]), f"{m['share']:.1%}",
                 "" if m["outside_null"] is None else ("outside" if m["outside_null"] else "within noise"),
                 ", ".join(m["ids"])] for m in modes]
        if rows:
            print(format_table(["mode", "eigenvalue", "share", "null", "top items"], rows))
        null = nov[f"{role}_null"]
        if null is not None and null["note"]:
            print(f"warning: {role} null: {null['note']}", file=sys.stderr)


def _cell(v) -> str:
    """A number for the table (4 significant digits), blank for missing."""
    if v is None:
        return ""
    return f"{float(v):.4g}"


def _value(row) -> str:
    """A row's value, with ``± sd`` where the row has a spread (the kernel distance's subset sd)."""
    return _cell(row["value"]) + ("" if row.get("sd") is None else f" ± {_cell(row['sd'])}")


def _print_table(ev) -> None:
    """The metrics table on stdout, with a header line of the settings."""
    s = ev.settings
    level = s["confidence_level"]
    print(f"# {ev.n_generated} generated vs {ev.n_reference} reference items, d = {ev.d}; neighbours: "
          f"{s['nn_method']} search; kernel {s['kernel_description']}; {level:.0%} intervals; seed {s['seed']}")
    rows = [[r["metric"], _value(r), _cell(r["ci_low"]), _cell(r["ci_high"]), r["note"]] for r in ev.table_rows()]
    print(format_table(["metric", "value", "ci_low", "ci_high", "note"], rows))
    if ev.memorization is not None:
        print(f"# memorisation: {ev.memorization.headline()}")
        print(f"# flag: {ev.memorization.rule()}")
    for note in s.get("notes", []):
        print(f"warning: {note}", file=sys.stderr)


def _write_outputs(args, ev, *, gen_ids=None, train_ids=None) -> list:
    """JSON, CSV, the per-item CSV and HTML in one transaction; returns the paths written."""
    with output_transaction() as tx:
        if args.json is not None:
            ev.to_json(args.json)
        if args.csv is not None:
            ev.to_csv(args.csv)
        if args.items is not None:
            ev.memorization.items_csv(args.items, generated_ids=gen_ids, train_ids=train_ids)
        if args.out is not None:
            atomic_write(args.out, render_html(ev))
    return tx.written


#: Most generated-training pairs on the HTML page (every flagged one up to this; the CSV of --items has all).
PAGE_PAIRS = 200

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Evaluation: {{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { padding: .25rem .75rem; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { color: #555; font-size: .9rem; }
</style></head><body>
<h1>Evaluation of {{ title }}</h1>
<p>{{ ev.n_generated }} generated items against {{ ev.n_reference }} reference items, d = {{ ev.d }};
neighbours by {{ s.nn_method }} search; kernel {{ s.kernel_description }}; {{ (100 * s.confidence_level) | round(1) }} % intervals.</p>
<h2>Metrics</h2>
<table><tr><th>metric</th><th>value</th><th>interval</th><th>how</th><th>note</th></tr>
{% for r in rows %}<tr><td>{{ r.metric }}</td><td class="num">{{ r.value }}</td><td class="num">{{ r.ci }}</td>
<td>{{ r.interval }}</td><td>{{ r.note }}</td></tr>
{% endfor %}</table>
{% if memo %}<h2>Memorisation: generated items closest to the training set</h2>
<p class="headline">{{ memo.headline }}</p>
<p class="note">Flag: {{ memo.rule }}.{% if memo.note %} {{ memo.note }}{% endif %} Rows: the closest {{ memo.shown }} of
{{ ev.n_generated }} generated items, closest copy first: every flagged one (up to {{ page_pairs }}) and at least ten; --items writes them all.</p>
<table><tr><th>generated</th><th>nearest training item</th><th>distance</th><th>similarity</th><th>its own NN distance</th>
<th>ratio</th><th>flagged</th></tr>
{% for c in memo.pairs %}<tr><td class="num">{{ c.generated }}</td><td class="num">{{ c.train }}</td><td class="num">{{ c.distance }}</td>
<td class="num">{{ c.similarity }}</td><td class="num">{{ c.train_radius }}</td><td class="num">{{ c.ratio }}</td>
<td>{{ "yes" if c.flagged else "no" }}</td></tr>
{% endfor %}</table>{% endif %}
{% if prompts %}<h2>Vendi score per prompt</h2>
<table><tr><th>prompt</th><th>items</th><th>Vendi score</th></tr>
{% for name, p in prompts %}<tr><td>{{ name }}</td><td class="num">{{ p.n }}</td><td class="num">{{ p.vendi }}</td></tr>
{% endfor %}</table>{% endif %}
<h2>Settings</h2>
<table>{% for k, v in settings %}<tr><th>{{ k }}</th><td>{{ v }}</td></tr>{% endfor %}</table>
<p class="note">Formulas, papers and pitfalls of every metric: docs/evaluation.md.</p>
</body></html>
"""


def render_html(ev) -> str:
    """A self-contained HTML page of an :class:`~diversity_core.evaluation.EvaluationResult` (Jinja2, autoescaped)."""
    jinja2 = require("jinja2", purpose="the HTML page of `diversity evaluate --out`")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    rows = []
    for r in ev.table_rows():
        ci = "" if r["ci_low"] is None else f"[{_cell(r['ci_low'])}, {_cell(r['ci_high'])}]"
        rows.append({"metric": r["metric"], "value": _value(r), "ci": ci, "interval": r["interval"],
                     "note": r["note"]})
    memo = None
    if ev.memorization is not None:
        m = ev.memorization
        # the flagged items come first in this order: all of them (up to PAGE_PAIRS), at least ten rows
        pairs = m.top_items(min(max(10, m.n_flagged), PAGE_PAIRS))
        memo = {"headline": m.headline(), "rule": m.rule(), "note": m.note, "shown": len(pairs),
                "pairs": [{**c, **{k: _cell(c[k]) for k in ("distance", "similarity", "train_radius", "ratio")}}
                          for c in pairs]}
    prompts = []
    if ev.conditional is not None:
        prompts = [(name, {"n": p["n"], "vendi": _cell(p["vendi"])}) for name, p in ev.conditional.per_prompt.items()]
    keep = ("k", "k_improved", "q", "nn_method", "n_resamples", "interval_size", "kid_subsets", "kid_subset_size",
            "magnitude_n", "memorization_rule", "memorization_alpha", "timings", "sources")
    settings = [(k, ev.settings[k]) for k in keep if k in ev.settings]
    title = str(ev.settings.get("sources", {}).get("generated") or "generated items")
    return env.from_string(_TEMPLATE).render(ev=ev, s=ev.settings, rows=rows, memo=memo, page_pairs=PAGE_PAIRS, prompts=prompts,
                                             settings=settings, title=title)
