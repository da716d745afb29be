r"""Which metrics agree: the groups' ranking under every diversity metric, with rank flips (issue 43, item 6).

A ranking of groups by "diversity" is a statement under a metric as much as under a
representation: the Vendi score of order 0.5 counts rare directions, the order infinity only the
largest mode, IntDiv the mean similarity, DCScore how well each item is told apart from its
neighbours. :func:`metric_agreement` scores every group under every metric (and every
representation given) at the same n, ranks the groups under each, and lists the **rank flips**:
two groups whose order reverses between two metrics. It computes nothing of its own:

- the metrics of :func:`~diversity_core.compare.compare` (``VS_<q>``, IntDiv, MagArea, RND)
  come from ONE comparison per representation (random n-subsets, subsampling intervals,
  pairwise verdicts);
- the reference-free metrics of the pack (:mod:`diversity_core.evaluation`: the RKE mode count,
  the truncated Vendi score, TCE, DCScore, and for texts the compression ratio, n-gram diversity
  and self-BLEU) are computed by their own functions on one random n-subset of each group (the same
  subset under every representation), each with its subsampling interval; two groups' difference
  is resolved by the comparison's own rule (:func:`diversity_core.compare._api._pairwise`: the two
  SEs in quadrature, Welch-Satterthwaite degrees of freedom, resolved when the interval of the
  difference excludes 0).

Every kernel metric uses one kernel, its data-dependent parameters (the rbf bandwidth) fixed on
all groups pooled, so a flip is the metric's doing, not the kernel's. Rows share the interface of
:class:`~diversity_core.robustness.RepresentationScores`, and the flips are found by the
Robustness test's own :func:`~diversity_core.robustness._flips`; a flip is *resolved* when both
orders are.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> sets = {"a": rng.normal(size=(40, 6)), "b": rng.normal(size=(40, 6))}
>>> res = metric_agreement(sets, metrics=["VS_1", "IntDiv"], n_subsamples=5, n_resamples=5, rng=0)
>>> res.metrics, res.verdict in ("stable", "unresolved", "depends")
(('VS_1', 'IntDiv'), True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._display import NotebookDisplay, frame_row, html_table, require_plotly, short_repr, tidy_frame
from ._json import to_jsonable
from ._orders import parse_q
from ._progress import DETAIL_SEPARATOR, ProgressCallback, report
from ._stats import ConfidenceInterval
from ._validation import check_random_state, check_scalar
from .exceptions import DiversityInputError
from .robustness import RankFlip, RepresentationScores, _flips

__all__ = ["metric_agreement", "MetricAgreement", "MetricScores", "AGREEMENT_METRICS", "DEFAULT_METRICS"]

#: The pack's reference-free metrics: name -> (what it is, higher is more diverse, needs texts).
PACK_METRICS: Dict[str, Tuple[str, bool, bool]] = {
    "RKE_MC": ("RKE mode count 1/||K/n||_F^2 (Jalali et al. 2023; = VS_2)", True, False),
    "tVS": ("t-truncated Vendi score (Ospanov & Farnia 2024)", True, False),
    "TCE": ("truncated Gaussian entropy of the top covariance eigenvalues (image-diversity)", True, False),
    "DCScore": ("trace of the row-softmax of K / tau (Zhu et al. 2025)", True, False),
    "compression_ratio": ("gzip compression ratio of the texts (lower: more diverse)", False, True),
    "ngram_diversity": ("distinct n-grams over n-grams, n = 1..4", True, True),
    "self_BLEU": ("mean BLEU-4 of each text against the others (lower: more diverse)", False, True),
}
#: The comparison's metrics besides ``VS_<q>`` (MagDiff needs a reference: not a ranking of groups).
COMPARE_METRICS: Dict[str, str] = {
    "IntDiv": "internal diversity 1 - mean kernel similarity",
    "MagArea": "area under the magnitude function (slow: opt-in)",
    "RND": "random network distillation score (torch; slow: opt-in)",
}
#: Every metric name :func:`metric_agreement` takes, besides ``VS_<q>`` for any order q.
AGREEMENT_METRICS: Tuple[str, ...] = (*COMPARE_METRICS, *PACK_METRICS)
#: The default: the reference-free metrics that apply to features (texts add the lexical ones).
DEFAULT_METRICS: Tuple[str, ...] = ("VS_0.5", "VS_1", "VS_inf", "IntDiv", "RKE_MC", "tVS", "DCScore")
#: The lexical metrics added to the default when the groups' texts are known.
TEXT_METRICS: Tuple[str, ...] = ("compression_ratio", "ngram_diversity", "self_BLEU")
#: The representation name of the lexical rows (they read the texts, not a feature matrix).
TEXTS = "texts"


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricScores(RepresentationScores):
    """The groups' values under one metric (on one representation), ranked from the most diverse.

    The interface of :class:`~diversity_core.robustness.RepresentationScores` (``label``,
    ``order``, ``is_resolved``, ``estimates``, ``ranking``, ``resolved``); ``kernel`` is the
    kernel's name. ``order`` and ``ranking`` follow the metric's direction (for self-BLEU and the
    compression ratio a lower value is the more diverse), and ``resolved`` maps a pair to its more
    diverse group.

    Attributes
    ----------
    metric : str
        ``"VS_1"``, ``"IntDiv"``, ``"DCScore"``, ...
    name : str
        The row's label: the metric, with `` · representation`` when several were scored.
    higher_is_better : bool
    differences : dict
        ``(group_a, group_b) -> (a - b, low, high)``: the difference of the values with its
        interval (NaN when none could be made), for every pair in :attr:`MetricAgreement.groups` order.
    source : str
        ``"compare"`` (one comparison's estimates) or ``"pack"`` (the metric's own function on one
        n-subset per group).
    """

    metric: str = ""
    name: str = ""
    higher_is_better: bool = True
    differences: Dict[Tuple[str, str], Tuple[float, float, float]] = field(default_factory=dict)
    source: str = "compare"

    @property
    def label(self) -> str:
        """The metric, or ``"VS_1 · pixels"`` when several representations were scored."""
        return self.name or self.metric

    def order(self, a: str, b: str) -> int:
        """+1 when ``a`` is the more diverse of the two under this metric, -1 when ``b`` is, 0 on a tie or no value."""
        diff = self.estimates[a][0] - self.estimates[b][0]
        if not math.isfinite(diff):
            return 0
        return int(np.sign(diff if self.higher_is_better else -diff))

    def difference(self, a: str, b: str) -> Tuple[float, float, float]:
        """``(a - b, low, high)`` in the metric's units (the stored pair, turned round when needed)."""
        if (a, b) in self.differences:
            return self.differences[(a, b)]
        d, lo, hi = self.differences.get((b, a), (math.nan, math.nan, math.nan))
        return (-d, -hi, -lo)

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys."""
        out = super().to_dict()
        out.update({
            "metric": self.metric,
            "label": self.label,
            "higher_is_better": self.higher_is_better,
            "source": self.source,
            "differences": [{"group_a": a, "group_b": b, "difference": v[0], "ci_low": v[1], "ci_high": v[2]}
                            for (a, b), v in self.differences.items()],
        })
        return out


@dataclass(frozen=True, eq=False)
class MetricAgreement(NotebookDisplay):
    """The groups' ranking under several metrics (and representations), with the rank flips between them.

    Attributes
    ----------
    groups : tuple of str
    group_sizes : tuple of int
    n : int
        The equal number of items of every value.
    confidence_level : float
    metrics : tuple of str
        The metrics computed, in the order asked for.
    representations : tuple of str
    rows : tuple of MetricScores
        One per (metric, representation), in that order.
    flips : tuple of RankFlip
        One per pair of groups whose order changes between two rows (the resolved reversal when
        there is one); ``differs`` is ``"metric"``, ``"representation"`` or ``"both"``.
    kernel : dict
        The kernel of every kernel metric, as resolved on the pooled groups (first representation).
    skipped : dict
        ``metric -> why`` for the metrics that could not be computed on these inputs.
    """

    groups: Tuple[str, ...]
    group_sizes: Tuple[int, ...]
    n: int
    confidence_level: float
    metrics: Tuple[str, ...]
    representations: Tuple[str, ...]
    rows: Tuple[MetricScores, ...]
    flips: Tuple[RankFlip, ...] = ()
    kernel: Dict[str, Any] = field(default_factory=dict)
    skipped: Dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """``"depends"`` (a resolved flip), ``"unresolved"`` (flips inside the intervals) or ``"stable"``."""
        if any(f.resolved for f in self.flips):
            return "depends"
        return "unresolved" if self.flips else "stable"

    @property
    def depends_on(self) -> Optional[str]:
        """``"metric"``, ``"representation"`` or ``"both"``: what the flips named by :attr:`verdict` change; None without one."""
        pool = [f for f in self.flips if f.resolved] if self.verdict == "depends" else list(self.flips)
        kinds = {f.differs for f in pool}
        if not kinds:
            return None
        single = kinds - {"both"}
        return single.pop() if len(single) == 1 else "both"

    def row(self, label: str) -> MetricScores:
        """The row of a label (``"VS_1"`` or ``"VS_1 · pixels"``)."""
        for r in self.rows:
            if r.label == label:
                return r
        raise DiversityInputError(f"no row {label!r}; the rows are: {', '.join(r.label for r in self.rows)}.")

    def _under(self) -> str:
        reps = len([r for r in self.representations if r != TEXTS])
        what = f"{len(self.rows)} metrics" if reps <= 1 else f"{len(self.rows)} metrics and representations"
        return what

    def summary(self) -> str:
        """The headline: whether the groups' ranking depends on the metric (plain text)."""
        every = f"every group at n = {self.n}, {self.confidence_level:.0%} intervals"
        if len(self.rows) == 1:
            r = self.rows[0]
            return f"Only one metric was computed ({r.label}: {' > '.join(r.ranking)}); add another to test the ranking."
        if self.verdict == "stable":
            return (f"The ranking is the same under all {self._under()}: {' > '.join(self.rows[0].ranking)} "
                    f"({every}).")
        on = {"metric": "the metric", "representation": "the representation",
              "both": "the metric and the representation"}[self.depends_on]
        pool = [f for f in self.flips if f.resolved] or list(self.flips)
        flip = next((f for f in pool if f.differs == self.depends_on), pool[0])
        hi, lo = self.row(flip.where_higher), self.row(flip.where_lower)
        pairs = len(list(combinations(self.groups, 2)))
        if self.verdict == "depends":
            resolved = sum(f.resolved for f in self.flips)
            return (f"The ranking depends on {on}: {hi.label} ranks {' > '.join(hi.ranking)}, {lo.label} ranks "
                    f"{' > '.join(lo.ranking)} ({resolved} of {pairs} pairs of groups reverse between some two "
                    f"metrics with both orders resolved; {every}).")
        return (f"The order of {flip.higher} and {flip.lower} changes with {on} ({hi.label} and {lo.label}), but "
                f"within the intervals: no reversal is resolved at {self.confidence_level:.0%} ({every}).")

    def flip_lines(self) -> List[str]:
        """One sentence per flip, with the two differences and their intervals (what the CLI and the app list)."""
        out = []
        for f in self.flips:
            a, b = f.higher, f.lower
            parts = []
            for where in (f.where_higher, f.where_lower):
                d, lo, hi = self.row(where).difference(a, b)
                parts.append(f"{where}: {a} - {b} = {_num(d)} [{_num(lo)}, {_num(hi)}]")
            state = "both orders resolved" if f.resolved else "within the intervals"
            out.append(f"{a} above {b} under {f.where_higher}, below it under {f.where_lower} ({state}; "
                       f"{'; '.join(parts)})")
        return out

    def table(self) -> List[Dict[str, Any]]:
        """Long-format rows: metric, representation, group, estimate, ci_low, ci_high, rank."""
        rows = []
        for r in self.rows:
            for rank, g in enumerate(r.ranking, start=1):
                est, lo, hi = r.estimates[g]
                rows.append({"metric": r.metric, "representation": r.representation, "label": r.label,
                             "group": g, "estimate": est, "ci_low": lo, "ci_high": hi, "rank": rank,
                             "higher_is_better": r.higher_is_better})
        return rows

    def wide(self):
        """Rows (metric [· representation]) by groups: ``#rank value [low, high]`` strings."""
        import pandas as pd

        cells = []
        for r in self.rows:
            row = {"metric": r.label + ("" if r.higher_is_better else " ↓")}
            for g in self.groups:
                est, lo, hi = r.estimates[g]
                rank = f"#{r.ranking.index(g) + 1} "
                row[g] = rank + ("-" if not math.isfinite(est) else
                                 f"{est:.4g}" + (f" [{lo:.4g}, {hi:.4g}]" if math.isfinite(lo) else ""))
            cells.append(row)
        return pd.DataFrame(cells, columns=["metric", *self.groups])

    def to_frame(self):
        """The tidy frame: one row per metric, representation and group.

        The columns of :mod:`diversity_core._display`, then ``representation``, ``rank``,
        ``higher_is_better`` and ``n``.
        """
        rows = []
        for r in self.rows:
            q = parse_q(r.metric[3:]) if r.metric.startswith("VS_") else None
            for g in self.groups:
                est, lo, hi = r.estimates[g]
                interval = (ConfidenceInterval(lo, hi, level=self.confidence_level)
                            if math.isfinite(lo) and math.isfinite(hi) else None)
                rows.append(frame_row(r.metric, est, interval, group=g, q=q, kind="estimate",
                                      representation=r.representation, rank=r.ranking.index(g) + 1,
                                      higher_is_better=r.higher_is_better, n=self.n))
        return tidy_frame(rows)

    def __repr__(self) -> str:
        fields_ = [("verdict", self.verdict + ("" if self.depends_on is None else f" (on {self.depends_on})")),
                   ("groups", ", ".join(f"{g} ({s})" for g, s in zip(self.groups, self.group_sizes))),
                   ("metrics", ", ".join(self.metrics))]
        if len(self.representations) > 1:
            fields_.append(("representations", ", ".join(self.representations)))
        for r in self.rows[:3]:
            fields_.append((r.label, " > ".join(r.ranking)))
        if len(self.rows) > 3:
            fields_.append(("more", f"{len(self.rows) - 3} more rows in .to_frame()"))
        fields_.append(("flips", f"{len(self.flips)} ({sum(f.resolved for f in self.flips)} resolved)"))
        if self.skipped:
            fields_.append(("skipped", ", ".join(self.skipped)))
        return short_repr(f"MetricAgreement({len(self.groups)} groups x {len(self.rows)} rows, n={self.n}, "
                          f"level={self.confidence_level:g})", fields_)

    def _repr_html_(self) -> str:
        """The headline as the caption, the wide table (rank, value and interval per group), then the flips."""
        import html

        out = html_table(self.wide(), caption=self.summary())
        if self.flips:
            out += "<p><b>Rank flips</b></p><ul>" + "".join(f"<li>{html.escape(line)}</li>"
                                                             for line in self.flip_lines()) + "</ul>"
        return out

    def plot(self, *, colours: Optional[Mapping[str, str]] = None):
        """The groups' ranks under every metric (crossing lines are flips): the Robustness page's rank figure."""
        require_plotly("MetricAgreement.plot()")
        from .report.figures.robustness import rank_figure

        return rank_figure(self, colours=colours,
                           title=f"Ranking of the groups under every metric at n = {self.n}")

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys (JSON-ready)."""
        return to_jsonable({
            "groups": list(self.groups), "group_sizes": list(self.group_sizes), "n": self.n,
            "confidence_level": self.confidence_level, "metrics": list(self.metrics),
            "representations": list(self.representations), "verdict": self.verdict,
            "depends_on": self.depends_on, "summary": self.summary(), "kernel": dict(self.kernel),
            "rows": [r.to_dict() for r in self.rows], "flips": [f.to_dict() for f in self.flips],
            "flip_details": self.flip_lines(), "skipped": dict(self.skipped),
        })


def _num(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.3g}"


def _differs(r1: MetricScores, r2: MetricScores) -> str:
    """``"metric"``, ``"representation"`` or ``"both"``: what changes from one row to the other."""
    if r1.metric == r2.metric:
        return "representation"
    if r1.representation == r2.representation or TEXTS in (r1.representation, r2.representation):
        return "metric"
    return "both"


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
def canonical_metric(name) -> str:
    """The canonical name of one metric (``"vs_1"`` -> ``"VS_1"``, ``"dcscore"`` -> ``"DCScore"``), or an error."""
    from .compare import score_name

    if isinstance(name, str):
        text = name.strip()
        for known in AGREEMENT_METRICS:
            if text.lower() == known.lower():
                return known
        if text.lower().startswith("vs_"):
            try:
                return score_name(parse_q(text[3:]))
            except DiversityInputError:
                pass
    raise DiversityInputError(
        f"unknown metric {name!r}; choose 'VS_<q>' (e.g. 'VS_0.5', 'VS_1', 'VS_inf') or one of: "
        f"{', '.join(map(repr, AGREEMENT_METRICS))}."
    )


def _as_matrix(X, what: str):
    X = X if hasattr(X, "shape") else np.asarray(X, dtype=np.float64)
    if len(X.shape) != 2:
        raise DiversityInputError(f"{what} must be a 2-D array of features (items x dimensions); got shape {X.shape}.")
    return X


def _inputs(sets, representations, representation, featurizer, texts):
    """``({representation: {group: X}}, {group: texts or None}, group names)`` from the accepted inputs."""
    from .data import Dataset

    reps: Dict[str, Dict[str, Any]] = {}
    if isinstance(sets, Dataset):
        if sets.groups is None or len(sets.group_names()) < 2:
            raise DiversityInputError(
                f"dataset {sets.name!r} needs a group column with at least 2 groups (the ranking is of its groups).")
        from .featurizers import featurize, resolve_featurizer

        names = sets.group_names()
        index = {g: sets.group_indices(g) for g in names}
        first = representation or resolve_featurizer(sets, featurizer)
        X = featurize(sets, featurizer, copy=False)
        reps[first] = {g: X[idx] for g, idx in index.items()}
        extra = representations or {}
        if isinstance(extra, (list, tuple)):
            extra = {name: featurize(sets, name, copy=False) for name in extra if name != first}
        if not isinstance(extra, Mapping):
            raise DiversityInputError("representations must be a list of featurizer names or a dict name -> features.")
        for rep, F in extra.items():
            F = _as_matrix(F, f"representation {rep!r}")
            if F.shape[0] != sets.n:
                raise DiversityInputError(
                    f"representation {rep!r} has {F.shape[0]} rows but the dataset has {sets.n} items; give "
                    "every representation the dataset's items, in its order.")
            reps[str(rep)] = {g: F[idx] for g, idx in index.items()}
        if texts is None and sets.modality == "text":
            items = list(sets.items)
            texts = {g: [str(items[i]) for i in idx] for g, idx in index.items()}
    elif isinstance(sets, Mapping):
        if any(isinstance(v, Dataset) for v in sets.values()):
            raise DiversityInputError("pass one Dataset with groups, or a dict group -> feature array (not Datasets).")
        names = [str(k) for k in sets]
        if len(set(names)) != len(names):
            raise DiversityInputError("two groups have the same name once converted to text; give each a distinct name.")
        reps[representation or "features"] = {str(k): _as_matrix(v, f"group {str(k)!r}") for k, v in sets.items()}
        for rep, per in (representations or {}).items():
            if not isinstance(per, Mapping) or {str(k) for k in per} != set(names):
                raise DiversityInputError(
                    f"representation {rep!r} must be a dict with the same groups as the first argument "
                    f"({', '.join(names)}).")
            reps[str(rep)] = {str(k): _as_matrix(v, f"group {str(k)!r} of {rep!r}") for k, v in per.items()}
    else:
        raise DiversityInputError(
            f"sets must be a dict group -> feature array or a Dataset with groups; got {type(sets).__name__}.")
    if len(names) < 2:
        raise DiversityInputError(f"the ranking needs at least 2 groups; got {len(names)}.")
    for rep, per in reps.items():
        dims = {g: X.shape[1] for g, X in per.items()}
        if len(set(dims.values())) > 1:
            raise DiversityInputError(f"the groups of {rep!r} must share one feature space; dimensions differ "
                                      f"({', '.join(f'{g}: {d}' for g, d in dims.items())}).")
        sizes = {g: X.shape[0] for g, X in per.items()}
        first_sizes = {g: x.shape[0] for g, x in next(iter(reps.values())).items()}
        if sizes != first_sizes:
            raise DiversityInputError(f"representation {rep!r} must hold the same items as the first one "
                                      f"(sizes {sizes} vs {first_sizes}).")
    if texts is not None:
        if not isinstance(texts, Mapping) or {str(k) for k in texts} != set(names):
            raise DiversityInputError(f"texts must be a dict with one list of texts per group ({', '.join(names)}).")
        texts = {str(k): list(v) for k, v in texts.items()}
        sizes = {g: X.shape[0] for g, X in next(iter(reps.values())).items()}
        for g, tx in texts.items():
            if len(tx) != sizes[g]:
                raise DiversityInputError(f"texts of group {g!r} must hold one text per item: expected {sizes[g]}, "
                                          f"got {len(tx)}.")
    return reps, texts, tuple(names)


# ---------------------------------------------------------------------------------------------
# the sweep over metrics
# ---------------------------------------------------------------------------------------------
def metric_agreement(
    sets,
    *,
    metrics: Optional[Sequence[str]] = None,
    representations=None,
    representation: Optional[str] = None,
    texts: Optional[Mapping[str, Sequence[str]]] = None,
    kernel="cosine",
    n: Optional[int] = None,
    n_subsamples: int = 30,
    n_resamples: int = 20,
    confidence_level: float = 0.95,
    t: int = 100,
    entropy_t: int = 20,
    tau: float = 1.0,
    interval_size: int = 2048,
    featurizer: str = "default",
    rng=0,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> MetricAgreement:
    """Rank the groups under every metric (and representation) at the same n; flag the rank flips.

    Parameters
    ----------
    sets : dict group -> array-like of shape (N_g, d), or Dataset
        The groups' features (dense or CSR), or a :class:`~diversity_core.data.Dataset` with a
        group column (featurized with ``featurizer``; a text dataset's items are its texts).
        At least 2 groups of at least 10 items.
    metrics : sequence of str, optional
        ``"VS_<q>"`` (any order q), ``"IntDiv"``, ``"MagArea"``, ``"RND"`` (one
        :func:`~diversity_core.compare.compare` per representation) and the pack's
        ``"RKE_MC"``, ``"tVS"``, ``"TCE"``, ``"DCScore"``, ``"compression_ratio"``,
        ``"ngram_diversity"``, ``"self_BLEU"`` (the last three need texts). Default
        :data:`DEFAULT_METRICS`, plus the three lexical ones when texts are known. Case-insensitive.
    representations : list of str or dict, optional
        More representations of the same items, each ranked under every feature metric: for a
        Dataset a list of featurizer names or a dict name -> (N, d) array aligned with its items;
        for a dict of groups a dict name -> {group: array} with the same groups and sizes.
    representation : str, optional
        The name of the first argument's features (default ``"features"``, or the featurizer's name).
    texts : dict group -> list of str, optional
        The items' texts (one per row), for the lexical metrics.
    kernel : str or Kernel, default "cosine"
        The one kernel of every kernel metric, its parameters fixed on all groups pooled.
    n : int, optional
        Items per group; default the smallest group's size.
    n_subsamples, n_resamples : int, default 30, 20
        The comparison's n-subsets per estimate and subsets per size of every spread (the pack's
        intervals use ``n_resamples`` too).
    confidence_level : float, default 0.95
    t, entropy_t, tau : default 100, 20, 1.0
        The truncated Vendi score's eigenvalues, TCE's, DCScore's temperature.
    interval_size : int, default 2048
        Largest subset the pack's intervals measure their spread on.
    featurizer : str, default "default"
        For a Dataset: its first representation.
    rng : int or Generator, default 0
        One seed for every comparison and every subset (the same under every representation).
    progress : callable, optional
        ``progress(done, total, message)``, one step per representation and pack metric.
    **kernel_params
        Kernel parameters (``sigma=...`` for rbf).

    Returns
    -------
    MetricAgreement

    Raises
    ------
    DiversityInputError
        An unknown metric (the message lists them), fewer than 2 groups, a group under 10 items
        or under n, representations with other items, texts not one per item, a lexical metric
        asked for without texts, bad options.

    Notes
    -----
    Cost: one comparison per representation (the Robustness test's cost per pair) plus each pack
    metric on every group's n-subset with its interval (DCScore O(n^2 d), the spectral ones one
    spectrum, a few dozen more evaluations on smaller subsets for the interval). A pack metric that
    does not apply to the features (TCE on fewer than ``entropy_t`` dimensions, sparse features) is
    skipped and named in :attr:`MetricAgreement.skipped`.
    """
    from .compare import groups_for_n

    reps, texts, names = _inputs(sets, representations, representation, featurizer, texts)
    if metrics is None:
        metrics = DEFAULT_METRICS + (TEXT_METRICS if texts is not None else ())
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = tuple(dict.fromkeys(canonical_metric(m) for m in metrics))
    if not metrics:
        raise DiversityInputError("metrics must name at least one metric (e.g. ['VS_1', 'IntDiv']).")
    lexical = [m for m in metrics if m in PACK_METRICS and PACK_METRICS[m][2]]
    if lexical and texts is None:
        raise DiversityInputError(f"{', '.join(lexical)} read the items' texts: pass texts={{group: [...]}} or a "
                                  "text Dataset, or leave those metrics out.")
    confidence_level = check_scalar(confidence_level, "confidence_level", float, min_val=0.0, max_val=1.0,
                                    include_boundaries="neither")
    for value, label in ((n_subsamples, "n_subsamples"), (n_resamples, "n_resamples")):
        check_scalar(value, label, int, min_val=3)
    sizes = {g: int(X.shape[0]) for g, X in next(iter(reps.values())).items()}
    choice = groups_for_n(sizes, n=n, leave_out_smaller=False)
    seed = int(rng) if isinstance(rng, (int, np.integer)) else int(check_random_state(rng).integers(2**31))
    return _compute(reps, texts, names, sizes, metrics, n=choice.n, kernel=kernel, kernel_params=kernel_params,
                    n_subsamples=n_subsamples, n_resamples=n_resamples, level=float(confidence_level), t=t,
                    entropy_t=entropy_t, tau=tau, interval_size=interval_size, seed=seed, progress=progress)


def _compute(reps, texts, names, sizes, metrics, *, n, kernel, kernel_params, n_subsamples, n_resamples, level,
             t, entropy_t, tau, interval_size, seed, progress) -> MetricAgreement:
    """Every row: a comparison per representation, the pack metrics on one n-subset per group; then the flips."""
    from .compare import compare
    from .kernels import get_kernel

    compare_metrics = [m for m in metrics if m not in PACK_METRICS]
    feature_pack = [m for m in metrics if m in PACK_METRICS and not PACK_METRICS[m][2]]
    text_pack = [m for m in metrics if m in PACK_METRICS and PACK_METRICS[m][2]]
    gen = np.random.default_rng(seed)
    # one n-subset per group, the same items under every representation and for the texts
    subsets = {g: (np.arange(sizes[g]) if sizes[g] == n else np.sort(gen.choice(sizes[g], n, replace=False)))
               for g in names}
    several = len(reps) > 1
    steps = len(reps) * (1 + len(feature_pack)) + len(text_pack)
    done = 0
    rows: Dict[Tuple[str, str], MetricScores] = {}
    skipped: Dict[str, str] = {}
    kernel_used: Dict[str, Any] = {}
    for rep, per in reps.items():
        kern = _pooled_kernel(get_kernel(kernel, **kernel_params), per)
        kernel_used = kernel_used or kern.to_dict()
        report(progress, done, steps, f"scoring the groups{DETAIL_SEPARATOR}{rep}")
        if compare_metrics:
            qs = tuple(parse_q(m[3:]) for m in compare_metrics if m.startswith("VS_"))
            cmp = compare(per, kernel=kern, qs=qs or (1.0,), n=n, n_subsamples=n_subsamples,
                          n_resamples=n_resamples, confidence_level=level,
                          magnitude="MagArea" in compare_metrics, rnd="RND" in compare_metrics,
                          size_curve=False, rng=seed)
            for m in compare_metrics:
                rows[(m, rep)] = _with_kernel(_compare_row(cmp, m, rep, names, several), kern.to_dict())
        done += 1
        common = dict(confidence_level=level, n_resamples=n_resamples, interval_size=interval_size)
        for m in feature_pack:
            report(progress, done, steps, f"{m}{DETAIL_SEPARATOR}{rep}")
            run = _PACK_RUNNERS[m]
            try:
                ests = {g: run(per[g][subsets[g]], kern=kern, t=t, entropy_t=entropy_t, tau=tau,
                               rng=np.random.default_rng(seed), common=common) for g in names}
            except DiversityInputError as exc:
                skipped.setdefault(m, str(exc))
            else:
                rows[(m, rep)] = _with_kernel(_pack_row(ests, m, rep, names, level, n, several),
                                              {"name": "gaussian"} if m == "TCE" else kern.to_dict())
            done += 1
    if text_pack:  # one lexical_diversity per group gives the three
        report(progress, done, steps, f"lexical diversity{DETAIL_SEPARATOR}{TEXTS}")
        common = dict(confidence_level=level, n_resamples=n_resamples, interval_size=interval_size)
        try:
            lex = {g: _lexical([texts[g][i] for i in subsets[g]], "self_BLEU" in text_pack,
                               np.random.default_rng(seed), common) for g in names}
        except DiversityInputError as exc:
            skipped.update({m: str(exc) for m in text_pack})
        else:
            for m in text_pack:
                ests = {g: getattr(lex[g], _LEXICAL[m]) for g in names}
                rows[(m, TEXTS)] = _pack_row(ests, m, TEXTS, names, level, n, several)
        done += len(text_pack)
    report(progress, steps, steps, "done")
    ordered = tuple(rows[(m, rep)] for m in metrics for rep in (*reps, TEXTS) if (m, rep) in rows)
    if not ordered:
        raise DiversityInputError("no metric could be computed on these inputs: "
                                  + "; ".join(f"{m}: {why}" for m, why in skipped.items()))
    return MetricAgreement(
        groups=names, group_sizes=tuple(sizes[g] for g in names), n=int(n), confidence_level=level,
        metrics=tuple(m for m in metrics if any(r.metric == m for r in ordered)),
        representations=tuple(dict.fromkeys(r.representation for r in ordered)), rows=ordered,
        flips=_flips(names, ordered, differs=_differs), kernel=kernel_used, skipped=skipped,
    )


def _pooled_kernel(kern, per: Mapping[str, Any]):
    """The kernel with its data-dependent parameters fixed on all groups pooled (the comparison's own rule)."""
    import scipy.sparse as sp

    X = list(per.values())
    pooled = sp.vstack([sp.csr_matrix(x) for x in X]) if any(sp.issparse(x) for x in X) else np.concatenate(X)
    return kern.resolve(kern.validate(pooled))


def _ranking(estimates: Mapping[str, tuple], higher: bool) -> Tuple[str, ...]:
    """The groups from the most diverse to the least (groups without a value last, in input order)."""
    sign = -1.0 if higher else 1.0
    return tuple(sorted(estimates, key=lambda g: (not math.isfinite(estimates[g][0]), sign * estimates[g][0]
                                                  if math.isfinite(estimates[g][0]) else 0.0)))


def _row(metric, rep, names, estimates, pairwise, higher, several, source) -> MetricScores:
    """A row from its estimates and the comparison-shaped pairwise differences (``PairwiseDifference``)."""
    resolved, differences = {}, {}
    for p in pairwise:
        if p.score != metric:
            continue
        lo, hi = p.confidence_interval or (None, None)
        differences[(p.group_a, p.group_b)] = tuple(math.nan if v is None else float(v)
                                                    for v in (p.difference, lo, hi))
        if p.resolved and p.higher is not None:
            other = p.group_b if p.higher == p.group_a else p.group_a
            resolved[(p.group_a, p.group_b)] = p.higher if higher else other
    return MetricScores(representation=rep, kernel="", estimates=estimates, ranking=_ranking(estimates, higher),
                        resolved=resolved, metric=metric, name=f"{metric} · {rep}" if several and rep != TEXTS
                        else metric, higher_is_better=higher, differences=differences, source=source)


def _compare_row(cmp, metric: str, rep: str, names, several: bool) -> MetricScores:
    """One metric's row, read from the comparison (its estimates, intervals and pairwise verdicts)."""
    estimates = {g: (math.nan, math.nan, math.nan) for g in names}
    for e in cmp.estimates:
        if e.score == metric:
            lo, hi = e.confidence_interval or (None, None)
            estimates[e.group] = tuple(math.nan if v is None else float(v) for v in (e.estimate, lo, hi))
    return _row(metric, rep, names, estimates, cmp.pairwise, True, several, "compare")


def _with_kernel(row: MetricScores, kern: Mapping[str, Any]) -> MetricScores:
    from dataclasses import replace

    return replace(row, kernel=str(kern.get("name", "")),
                   kernel_settings={k: v for k, v in kern.items() if v is not None})


def _pack_row(ests: Mapping[str, Any], metric: str, rep: str, names, level: float, n: int,
              several: bool) -> MetricScores:
    """One pack metric's row: its estimates, and the pairwise verdicts by the comparison's own rule."""
    from .compare._api import _pairwise
    from .compare._results import ScoreEstimate

    rows = {g: {metric: ScoreEstimate(g, metric, float(e.value), e.se, n=n, replicates=1, interval=e.interval,
                                      df=e.df, confidence_interval=e.confidence_interval)}
            for g, e in ests.items()}
    estimates = {}
    for g in names:
        lo, hi = ests[g].confidence_interval or (None, None)
        estimates[g] = tuple(math.nan if v is None else float(v) for v in (ests[g].value, lo, hi))
    pairwise = _pairwise(names, (metric,), rows, level)
    return _row(metric, rep, names, estimates, pairwise, PACK_METRICS[metric][1], several, "pack")


def _rke(X, *, kern, rng, common, **_):
    from .evaluation import rke_mode_count

    return rke_mode_count(X, kernel=kern, rng=rng, **common).mode_count


def _tvs(X, *, kern, t, rng, common, **_):
    from .evaluation import truncated_vendi

    return truncated_vendi(X, t=t, kernel=kern, rng=rng, **common).value


def _tce(X, *, entropy_t, rng, common, **_):
    from .evaluation import truncated_entropy

    return truncated_entropy(X, t=entropy_t, rng=rng, **common).value


def _dcscore(X, *, kern, tau, rng, common, **_):
    from .evaluation import dcscore

    return dcscore(X, kernel=kern, tau=tau, rng=rng, **common).value


def _lexical(texts: List[str], homogenization: bool, rng, common):
    from .evaluation import lexical_diversity

    return lexical_diversity(texts, homogenization=homogenization, rng=rng, **common)


#: The lexical metrics' attributes of :class:`~diversity_core.evaluation.LexicalDiversityResult`.
_LEXICAL = {"compression_ratio": "compression_ratio", "ngram_diversity": "ngram_diversity", "self_BLEU": "self_bleu"}


#: The pack's feature metrics: name -> ``fn(X, kern=, t=, entropy_t=, tau=, rng=, common=) -> Estimate``.
_PACK_RUNNERS: Dict[str, Callable[..., Any]] = {"RKE_MC": _rke, "tVS": _tvs, "TCE": _tce, "DCScore": _dcscore}
