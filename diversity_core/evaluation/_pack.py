"""The whole metric pack in one call: what ``diversity evaluate --pack`` prints and a caller can tabulate.

The policy (which metrics, on which sets, at which n) lives here, so the CLI and the app share it:

- reference-free metrics (RKE mode count, truncated Vendi, TCE, DCScore, lexical diversity) on
  the generated and the reference set, both at n = the smaller size (the larger set scored on one
  random n-subset: these scores grow with n), under ONE kernel whose data-dependent parameters
  (the rbf bandwidth) are fixed on both sets pooled;
- two-set metrics (CMMD, clipped density and coverage, probabilistic precision and recall) of the
  generated set against the reference, on all items;
- a metric whose input does not suit it (TCE on fewer features than t, lexical diversity without
  texts) is skipped with the reason, never silently.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .._display import NotebookDisplay, format_kernel, short_repr
from .._json import to_jsonable
from .._validation import check_random_state
from ..exceptions import DiversityInputError
from ._clipped import clipped_density_coverage
from ._cmmd import cmmd
from ._common import check_interval_options, check_sets
from ._dcscore import dcscore
from ._lexical import check_texts, lexical_diversity
from ._pack_results import _estimate_row
from ._probabilistic import probabilistic_precision_recall
from ._rke import rke_mode_count
from ._truncated import truncated_entropy, truncated_vendi
from ._vendi import resolve_kernel

__all__ = ["metric_pack", "MetricPackResult"]

#: (row label, result key, attribute) of every value the table shows, per role.
_ONE_SET_ROWS = (("RKE mode count", "rke", "mode_count"), ("truncated Vendi", "truncated_vendi", "value"),
                 ("truncated entropy (TCE/TIE)", "truncated_entropy", "value"), ("DCScore", "dcscore", "value"),
                 ("compression ratio", "lexical", "compression_ratio"),
                 ("n-gram diversity", "lexical", "ngram_diversity"), ("self-BLEU", "lexical", "self_bleu"))
_PAIR_ROWS = (("CMMD", "cmmd", "value"), ("clipped density", "clipped", "clipped_density"),
              ("clipped coverage", "clipped", "clipped_coverage"), ("P-precision", "probabilistic", "precision"),
              ("P-recall", "probabilistic", "recall"))
#: The groups of :meth:`MetricPackResult.to_frame` and its figure, in order.
_ROLES = ("generated", "reference", "G vs R")


@dataclass(frozen=True, repr=False)
class MetricPackResult(NotebookDisplay):
    """Every metric of the pack for one generated set against a reference.

    Attributes
    ----------
    generated, reference : dict
        Metric key (``"rke"``, ``"truncated_vendi"``, ``"truncated_entropy"``, ``"dcscore"``,
        ``"lexical"``) -> its result, for each set at ``n`` items.
    pair : dict
        ``"cmmd"``, ``"clipped"``, ``"probabilistic"`` -> the result of G against R (all items).
    skipped : dict
        Metric key -> why it was not computed.
    n : int
        Items per set of the reference-free metrics.
    n_reference, n_generated : int
    kernel : dict
        The kernel of the reference-free kernel metrics, resolved on both sets pooled.
    """

    generated: Dict[str, Any]
    reference: Dict[str, Any]
    pair: Dict[str, Any]
    skipped: Dict[str, str]
    n: int
    n_reference: int
    n_generated: int
    kernel: Dict[str, Any] = field(default_factory=dict)

    def rows(self) -> List[Dict[str, Any]]:
        """One row per value: ``metric``, ``set`` (generated, reference or "G vs R"), ``value``, ``ci_low``, ``ci_high``, ``note``."""
        out = []

        def add(label, role, est):
            lo, hi = est.confidence_interval or (None, None)
            out.append({"metric": label, "set": role, "value": est.value, "ci_low": lo, "ci_high": hi,
                        "note": est.note})

        for label, key, attr in _ONE_SET_ROWS:
            for role, results in (("generated", self.generated), ("reference", self.reference)):
                est = getattr(results[key], attr) if key in results else None
                if est is not None:
                    add(label, role, est)
        for label, key, attr in _PAIR_ROWS:
            if key in self.pair:
                add(label, "G vs R", getattr(self.pair[key], attr))
        for key, why in self.skipped.items():
            out.append({"metric": key, "set": "", "value": None, "ci_low": None, "ci_high": None,
                        "note": f"skipped: {why}"})
        return out

    def to_dict(self) -> Dict[str, Any]:
        """Every result's ``to_dict()``, the skips and the sizes (JSON-ready)."""
        return to_jsonable({
            "generated": {k: v.to_dict() for k, v in self.generated.items()},
            "reference": {k: v.to_dict() for k, v in self.reference.items()},
            "pair": {k: v.to_dict() for k, v in self.pair.items()},
            "skipped": dict(self.skipped), "n": self.n, "n_reference": self.n_reference,
            "n_generated": self.n_generated, "kernel": self.kernel,
        })

    # -- notebook display ------------------------------------------------------------------------
    def _estimates(self):
        """``(label, role, Estimate)`` of every value :meth:`rows` shows, in its order (skips left out)."""
        for label, key, attr in _ONE_SET_ROWS:
            for role, results in (("generated", self.generated), ("reference", self.reference)):
                est = getattr(results[key], attr) if key in results else None
                if est is not None:
                    yield label, role, est
        for label, key, attr in _PAIR_ROWS:
            if key in self.pair:
                yield label, "G vs R", getattr(self.pair[key], attr)

    def _level(self) -> Optional[float]:
        """The level of the intervals (the first one recorded), None when there is none."""
        for _, _, est in self._estimates():
            ci = est.confidence_interval
            if ci is not None and ci.level is not None:
                return float(ci.level)
        return None

    def __repr__(self) -> str:
        """At most ten lines: the sizes, each metric's value for G and R (or G vs R) with its interval, the skips."""
        def text(est) -> str:
            return "-" if est is None else est.text()

        def of(results, key, attr):
            return getattr(results[key], attr) if key in results else None

        fields_ = []
        for label, key, attr in _ONE_SET_ROWS[:4]:
            if key in self.generated or key in self.reference:
                fields_.append((label, f"G {text(of(self.generated, key, attr))}, "
                                       f"R {text(of(self.reference, key, attr))}"))
        if "lexical" in self.generated or "lexical" in self.reference:
            vals = {role: " / ".join("-" if of(res, "lexical", a) is None else f"{of(res, 'lexical', a).value:.4g}"
                                     for a in ("compression_ratio", "ngram_diversity", "self_bleu"))
                    for role, res in (("G", self.generated), ("R", self.reference))}
            fields_.append(("compression / n-gram div. / self-BLEU", f"G {vals['G']}, R {vals['R']}"))
        pair = {label: getattr(self.pair[key], attr) for label, key, attr in _PAIR_ROWS if key in self.pair}
        if "CMMD" in pair:
            fields_.append(("CMMD (G vs R)", text(pair["CMMD"])))
        for name, a, b in (("clipped density / coverage", "clipped density", "clipped coverage"),
                           ("P-precision / P-recall", "P-precision", "P-recall")):
            if a in pair:
                fields_.append((name, f"{text(pair[a])} / {text(pair.get(b))}"))
        if self.skipped:
            fields_.append(("skipped", "; ".join(f"{k} ({v})" for k, v in self.skipped.items())))
        level = self._level()
        tail = "" if level is None else f", {level:.0%} intervals"
        return short_repr(f"MetricPackResult(n={self.n}, n_reference={self.n_reference}, "
                          f"n_generated={self.n_generated}, kernel={format_kernel(self.kernel)}{tail})", fields_)

    def _frame_rows(self) -> List[Dict[str, Any]]:
        subsampled = {"generated": self.n < self.n_generated, "reference": self.n < self.n_reference, "G vs R": False}
        return [_estimate_row(label, est, group=role, estimate=subsampled[role])
                for label, role, est in self._estimates()]

    def to_frame(self):
        """A tidy pandas DataFrame: one row per metric and set (the values of :meth:`rows`, skips left out).

        Columns of :mod:`diversity_core._display`: ``group`` (``"generated"``, ``"reference"``,
        or ``"G vs R"`` for the two-set metrics), ``score`` (the metric's label), ``value``,
        ``low``, ``high``, ``level``, ``kind`` (``"estimate"`` with an interval, and for a set
        scored on a random n-subset without one; ``"exact"`` otherwise), then ``se``, ``method``
        (how the interval was made) and ``note``. :attr:`skipped` says what was not computed.
        """
        from .._display import tidy_frame

        return tidy_frame(self._frame_rows())

    def _repr_html_(self) -> str:
        """The table of :meth:`to_frame`, then the skipped metrics and why (all text escaped)."""
        from .._display import html_table

        out = html_table(self.to_frame(), caption=self._display_caption())
        if self.skipped:
            out += "<p><em>skipped:</em> " + "; ".join(f"{html.escape(str(k))}: {html.escape(str(v))}"
                                                      for k, v in self.skipped.items()) + "</p>"
        return out

    def plot(self):
        """One bar panel per metric, a bar per set (or G vs R) with its interval.

        The figure is :func:`~diversity_core.report.figures.groups.score_bars_figure`, the score
        panels the report and the app draw for a comparison, over the rows of :meth:`to_frame`.
        """
        from .._display import require_plotly

        require_plotly("MetricPackResult.plot()")
        from ..report.figures.colours import group_colours
        from ..report.figures.groups import score_bars_figure

        bars: Dict[str, list] = {}
        for row in self._frame_rows():
            ends = [None if np.isnan(row[e]) else row[e] for e in ("low", "high")]
            bars.setdefault(row["score"], []).append((row["group"], row["value"], *ends))
        level = self._level()
        tail = "" if level is None else f" with {level:.0%} intervals"
        return score_bars_figure(bars, groups=[g for g in _ROLES if any(r[0] == g for v in bars.values() for r in v)],
                                 colours=group_colours(_ROLES),
                                 title=f"The metric pack at n = {self.n} per set{tail}")


def _at_n(X: np.ndarray, texts: Optional[List[str]], n: int, gen: np.random.Generator):
    """X (and its texts) at n items: itself, or one random n-subset (sorted indices)."""
    if X.shape[0] == n:
        return X, texts
    idx = np.sort(gen.choice(X.shape[0], n, replace=False))
    return X[idx], None if texts is None else [texts[i] for i in idx]


def _set_metrics(X, texts, kern, t, entropy_t, tau, gen, common: dict, skipped: Dict[str, str]) -> Dict[str, Any]:
    """The reference-free metrics of one set (a metric its input does not suit goes to ``skipped``)."""
    jobs = {
        "rke": lambda: rke_mode_count(X, kernel=kern, rng=gen, **common),
        "truncated_vendi": lambda: truncated_vendi(X, t=t, kernel=kern, rng=gen, **common),
        "truncated_entropy": lambda: truncated_entropy(X, t=entropy_t, rng=gen, **common),
        "dcscore": lambda: dcscore(X, kernel=kern, tau=tau, rng=gen, **common),
    }
    if texts is not None:
        jobs["lexical"] = lambda: lexical_diversity(texts, rng=gen, **common)
    out: Dict[str, Any] = {}
    for name, job in jobs.items():
        try:
            out[name] = job()
        except DiversityInputError as exc:
            skipped.setdefault(name, str(exc))
    return out


def metric_pack(
    reference,
    generated,
    *,
    texts_reference: Optional[Sequence[str]] = None,
    texts_generated: Optional[Sequence[str]] = None,
    kernel="cosine",
    t: int = 100,
    entropy_t: int = 20,
    tau: float = 1.0,
    k: int = 5,
    confidence_level: float = 0.95,
    n_resamples: int = 16,
    interval_size: int = 2048,
    rng=None,
    **kernel_params,
) -> MetricPackResult:
    """Every metric of the pack for generated items against a reference (module docstring for the policy).

    Parameters
    ----------
    reference, generated : array-like of shape (N, d) and (M, d)
        Features of both sets, by one featurizer.
    texts_reference, texts_generated : sequence of str, optional
        The items' texts (one per row), for the lexical scores; without both they are skipped.
    kernel : str or Kernel, default "cosine"
        Kernel of RKE-MC, truncated Vendi and DCScore (parameters fixed on both sets pooled).
    t : int, default 100
        Eigenvalues of the truncated Vendi score.
    entropy_t : int, default 20
        Eigenvalues of TCE/TIE (the ``image-diversity`` default).
    tau : float, default 1
        DCScore's temperature.
    k : int, default 5
        Neighbours of the clipped density and coverage (P-precision/recall keep the paper's k = 4).
    confidence_level, n_resamples, interval_size, rng
        As :func:`~diversity_core.evaluation.prdc`, for every metric.
    **kernel_params

    Returns
    -------
    MetricPackResult

    Raises
    ------
    DiversityInputError
        Bad features, different d, texts not one per item, bad options.

    Notes
    -----
    Cost: the sum of the metrics' costs; the quadratic ones (DCScore, CMMD, the k-NN metrics)
    dominate: about 10 products of n x n x d at n = N = M (``benchmarks/bench_metric_pack.py``).
    """
    R, G = check_sets(reference, generated)
    level, n_resamples, interval_size = check_interval_options(confidence_level, n_resamples, interval_size)
    gen = check_random_state(rng)
    texts = {}
    for role, tx, X in (("reference", texts_reference, R), ("generated", texts_generated, G)):
        if tx is not None:
            tx = check_texts(tx)
            if len(tx) != X.shape[0]:
                raise DiversityInputError(f"texts_{role} must hold one text per item: expected {X.shape[0]}, "
                                          f"got {len(tx)}.")
        texts[role] = tx
    common = dict(confidence_level=level, n_resamples=n_resamples, interval_size=interval_size)
    kern = resolve_kernel(kernel, kernel_params, R, G, rng=gen)
    n = min(R.shape[0], G.shape[0])
    skipped: Dict[str, str] = {}
    both_texts = texts["reference"] is not None and texts["generated"] is not None
    if not both_texts:
        skipped["lexical"] = "no texts for both sets (the lexical scores need the items' texts)"
    per_set: Dict[str, Dict[str, Any]] = {}
    for role, X in (("generated", G), ("reference", R)):
        Xn, tn = _at_n(X, texts[role], n, gen)
        per_set[role] = _set_metrics(Xn, tn if both_texts else None, kern, t, entropy_t, tau, gen, common, skipped)
    pair: Dict[str, Any] = {}
    pair_jobs = {
        "cmmd": lambda: cmmd(R, G, rng=gen, **common),
        "clipped": lambda: clipped_density_coverage(R, G, k=k, rng=gen, **common),
        "probabilistic": lambda: probabilistic_precision_recall(R, G, rng=gen, **common),
    }
    for name, job in pair_jobs.items():
        try:
            pair[name] = job()
        except DiversityInputError as exc:
            skipped[name] = str(exc)
    return MetricPackResult(generated=per_set["generated"], reference=per_set["reference"], pair=pair,
                            skipped=skipped, n=int(n), n_reference=int(R.shape[0]), n_generated=int(G.shape[0]),
                            kernel=kern.to_dict())
