r"""Every metric of every set in one tidy table, at equal n, with intervals (issue 42, item 2).

:func:`metrics_table` is the notebook's one-call summary, in the manner of seqme's
``compute_metrics`` and cleanlab's issue tables: a dict of feature arrays (or a
:class:`~diversity_core.data.Dataset` with groups) in, one tidy pandas DataFrame out, one row per
set and metric. It computes nothing itself: it checks the request, picks the equal n with
:func:`~diversity_core.compare.groups_for_n` and runs :func:`~diversity_core.compare.compare`,
whose subsampling engine gives every value and interval (Vendi scores of every order q, IntDiv,
MagArea, MagDiff and, on request, RND), so a value here is exactly the comparison's estimate for
the same seed. The result, :class:`MetricsTable`, adds which set is best per metric, a pandas
``.style`` that highlights it and a ``.plot()`` (the comparison's score panels, the best set
named in each panel's title).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._display import NotebookDisplay, format_interval, frame_row, require_plotly, short_repr, tidy_frame
from ._orders import parse_q
from ._progress import ProgressCallback
from ._validation import RandomLike
from .compare._api import MIN_ITEMS, compare
from .compare._groups import groups_for_n
from .compare._results import Comparison, score_name
from .exceptions import DiversityInputError

__all__ = ["metrics_table", "MetricsTable", "METRICS", "DEFAULT_METRICS"]

#: The metrics besides the Vendi scores ``VS_<q>`` (any order q), with what a higher value means.
#: Every one is "higher = more diverse"; ``higher_is_better`` in the table says so per row.
METRICS: Dict[str, str] = {
    "IntDiv": "internal diversity 1 - mean kernel similarity (higher: more diverse)",
    "MagArea": "area under the magnitude function to the shared t_cut (higher: more diverse)",
    "MagDiff": "MagArea to t_ref minus the reference's (higher: more diverse than the reference; needs reference=)",
    "MagDiff_rel": "MagDiff divided by the reference's area (higher: more diverse; needs reference=)",
    "RND": "the RND score (random network distillation; torch; higher: more diverse)",
}

#: What :func:`metrics_table` computes when ``metrics`` is not given.
DEFAULT_METRICS = ("VS_1", "VS_inf", "IntDiv", "MagArea")

#: Whether a higher value is the better (more diverse) one, per metric family.
_HIGHER_IS_BETTER = {"VS": True, "IntDiv": True, "MagArea": True, "MagDiff": True, "MagDiff_rel": True, "RND": True}


def metrics_table(
    sets,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    kernel="cosine",
    n: Optional[int] = None,
    reference: Optional[str] = None,
    leave_out_smaller: bool = False,
    confidence_level: float = 0.95,
    n_subsamples: int = 100,
    n_resamples: int = 50,
    metric: str = "euclidean",
    n_scales: int = 30,
    magnitude_replicates: int = 30,
    rnd_params: Optional[Mapping[str, Any]] = None,
    featurizer: str = "default",
    rng: RandomLike = None,
    progress: Optional[ProgressCallback] = None,
    **kernel_params,
) -> MetricsTable:
    r"""Every requested metric of every set at the same n, with intervals, as one tidy table.

    The values and intervals are those of :func:`~diversity_core.compare.compare` (which this
    calls once): each set is scored at the same number of items n on random n-subsets drawn
    without replacement, with a Student-t interval from the subsampling engine (see
    :mod:`diversity_core.compare`). Vendi scores :math:`VS_q = \exp H_q(K/n)` (Eq. (1) of [1],
    orders of [2]), IntDiv :math:`= 1 - \frac{1}{n^2}\sum_{ij}K_{ij}`, MagArea and MagDiff
    (Sec. 3 of [3]) and the RND score [4].

    Parameters
    ----------
    sets : dict name -> array-like of shape (N_s, d), or Dataset
        The sets' features (dense or CSR), one entry per set (values may be Datasets, featurized
        with ``featurizer``), or one :class:`~diversity_core.data.Dataset` with groups (one set
        per group). At least 2 sets of at least 10 items, all of one dimension d.
    metrics : sequence of str, default ("VS_1", "VS_inf", "IntDiv", "MagArea")
        ``"VS_<q>"`` for the Vendi score of any order q (``"VS_0.5"``, ``"VS_2"``, ``"VS_inf"``),
        and any of :data:`METRICS`: ``"IntDiv"``, ``"MagArea"``, ``"MagDiff"``, ``"MagDiff_rel"``
        (both need ``reference``), ``"RND"`` (torch; minutes with the paper's settings:
        ``rnd_params`` makes it lighter). Names are matched without regard to case.
    kernel : str, Kernel or None, default "cosine"
        The similarity of the Vendi scores and IntDiv, fixed once on the pooled sets (None: the
        featurizer's kernel, for Dataset input).
    n : int, optional
        The equal number of items; default the smallest set's size (with ``leave_out_smaller``,
        the smallest of at least 10 items).
    reference : str, optional
        The reference set of MagDiff.
    leave_out_smaller : bool, default False
        Leave out the sets smaller than n (named in :attr:`MetricsTable.left_out`) instead of
        raising.
    confidence_level : float, default 0.95
        Level of every interval.
    n_subsamples, n_resamples, metric, n_scales, magnitude_replicates, rnd_params, featurizer, rng, progress
        As in :func:`~diversity_core.compare.compare` (``rng``: an int seed makes the table
        reproducible; the same seed gives the comparison's exact values).
    **kernel_params
        Kernel parameters (``sigma=...`` for rbf).

    Returns
    -------
    MetricsTable
        ``.frame`` (also ``to_frame()``): one row per set and metric with the columns ``group``
        (the set), ``score``, ``q`` (Vendi scores), ``value``, ``low``, ``high``, ``level``,
        ``kind`` (``"estimate"``; ``"exact"`` for the reference's MagDiff of 0), then ``se``,
        ``n``, ``method`` (how the interval was made), ``higher_is_better`` and ``best``.
        ``.best``: the best set per metric; ``.style``: the wide table with the best set
        highlighted; ``.plot()``: a plotly figure; ``.comparison``: the underlying Comparison.

    Raises
    ------
    DiversityInputError
        An unknown metric name (the message lists the valid ones), MagDiff without a reference,
        fewer than 2 sets, a set of fewer than 10 items or smaller than n (without
        ``leave_out_smaller``), sets of different feature dimensions, bad parameters.

    Notes
    -----
    Cost: that of one :func:`~diversity_core.compare.compare` without the sample-size curves.
    The spectral metrics (every VS_q and IntDiv) share one spectrum per subset: O(n d^2) per
    subset on the dual path (cosine, linear kernels with d < N), O(n^3) otherwise, times
    ``n_subsamples`` plus the extrapolation's subsets, per set: 2.6 s per set at n = 500,
    d = 64 with the defaults, measured on a busy shared 2-core machine (load 8-10). MagArea and
    MagDiff add ``n_scales`` factorisations of an m x m matrix for each of
    ``4 * magnitude_replicates`` subsets (m <= n/2) and one at n, per set: about 2 s more per
    set there. RND trains ``runs`` pairs of networks per set. Only the families asked for
    are computed (no magnitude without MagArea/MagDiff, no RND without RND).

    References
    ----------
    .. [1] Friedman & Dieng, "The Vendi Score: A Diversity Evaluation Metric for Machine
       Learning", TMLR 2023.
    .. [2] Pasarkar & Dieng, "Cousins of the Vendi Score".
    .. [3] Limbeck, Andreeva, Sarkar & Rieck, "Metric Space Magnitude for Evaluating the
       Diversity of Latent Representations".
    .. [4] "A Flexible Measurement of Diversity in Datasets with Random Network Distillation".

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> t = metrics_table({"wide": rng.normal(size=(60, 8)), "narrow": 0.1 * rng.normal(size=(60, 8)) + 1},
    ...                   metrics=["VS_1", "IntDiv"], n_subsamples=10, rng=0)
    >>> t.best["IntDiv"], sorted(set(t.frame["n"]))
    ('wide', [60])
    """
    request = _validate(sets, metrics=metrics, n=n, reference=reference, leave_out_smaller=leave_out_smaller)
    return _compute(
        request, kernel=kernel, confidence_level=confidence_level, n_subsamples=n_subsamples,
        n_resamples=n_resamples, metric=metric, n_scales=n_scales, magnitude_replicates=magnitude_replicates,
        rnd_params=rnd_params, featurizer=featurizer, rng=rng, progress=progress, kernel_params=kernel_params,
    )


# ---------------------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MetricsTable(NotebookDisplay):
    """Every metric of every set at equal n: the tidy table, the best set per metric, a style and a plot.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per set and metric (columns in :func:`metrics_table`); :meth:`to_frame` gives a copy.
    sets : tuple of str
        The sets compared, in input order (left-out ones excluded).
    metrics : tuple of str
        The metrics, in the order asked for (canonical names: ``"VS_1"``, ``"IntDiv"``, ...).
    n : int
        The equal number of items every value was computed on.
    confidence_level : float
    higher_is_better : dict of str to bool
        Per metric: whether the larger value is the better (more diverse) one.
    best : dict of str to str or None
        Per metric: the set with the best value (None when no set has one).
    resolved : dict of str to bool or None
        Per metric: whether the best set's lead over every other set is resolved at the level
        (its pairwise differences' intervals exclude 0); None for MagDiff (a difference already).
    left_out : dict of str to int
        Sets left out for having fewer than n items (``leave_out_smaller=True``), with their sizes.
    comparison : Comparison
        The comparison the values come from (its ``pairwise`` verdicts, ``settings``, figures).
    """

    frame: Any = field(repr=False)
    sets: Tuple[str, ...]
    metrics: Tuple[str, ...]
    n: int
    confidence_level: float
    higher_is_better: Dict[str, bool]
    best: Dict[str, Optional[str]]
    resolved: Dict[str, Optional[bool]]
    left_out: Dict[str, int] = field(default_factory=dict)
    comparison: Optional[Comparison] = field(default=None, repr=False)

    def __repr__(self) -> str:
        fields_ = [("sets", ", ".join(self.sets)), ("metrics", ", ".join(self.metrics))]
        for m in self.metrics[:5]:
            b = self.best.get(m)
            verdict = "" if self.resolved.get(m) is None else (" (resolved)" if self.resolved[m] else " (unresolved)")
            fields_.append((f"best {m}", "-" if b is None else f"{b}: {self._text(b, m)}{verdict}"))
        if len(self.metrics) > 5:
            fields_.append(("more", f"{len(self.metrics) - 5} more metrics in .frame"))
        if self.left_out:
            fields_.append(("left out", ", ".join(f"{g} ({v})" for g, v in self.left_out.items())))
        return short_repr(f"MetricsTable({len(self.sets)} sets x {len(self.metrics)} metrics, n={self.n}, "
                          f"level={self.confidence_level:g})", fields_)

    def _repr_html_(self) -> str:
        """The wide table (sets by metrics, ``value [low, high]``), the best set's cell starred; names escaped."""
        from ._display import html_table

        table = self.wide()
        for m in self.metrics:
            b = self.best.get(m)
            if b is not None:
                table.loc[b, m] = table.loc[b, m] + " ★"
        table = table.reset_index()
        direction = ("higher is better for every metric" if all(self.higher_is_better.values())
                     else "see .higher_is_better")
        caption = f"{len(self.sets)} sets at n = {self.n}, {self.confidence_level:.0%} intervals; ★ best ({direction})"
        return html_table(table, caption=caption)

    def _text(self, group: str, metric: str) -> str:
        row = self._row(group, metric)
        if row is None:
            return "-"
        if row["kind"] == "exact" or math.isnan(row["low"]):
            return format_interval(row["value"], kind=row["kind"])
        return format_interval(row["value"], (row["low"], row["high"]), kind=f"{self.confidence_level:.0%}")

    def _row(self, group: str, metric: str):
        sel = self.frame[(self.frame["group"] == group) & (self.frame["score"] == metric)]
        return None if sel.empty else sel.iloc[0]

    def to_frame(self):
        """The tidy table (a copy): one row per set and metric."""
        return self.frame.copy()

    def wide(self):
        """Sets (rows) by metrics (columns): ``value [low, high]`` strings, as :attr:`style` shows them."""
        import pandas as pd

        cells = {m: [self._cell(g, m) for g in self.sets] for m in self.metrics}
        return pd.DataFrame(cells, index=pd.Index(self.sets, name="set"), columns=list(self.metrics))

    def _cell(self, group: str, metric: str) -> str:
        row = self._row(group, metric)
        if row is None or math.isnan(row["value"]):
            return "-"
        if math.isnan(row["low"]) or row["kind"] == "exact":
            return f"{row['value']:.4g}"
        return f"{row['value']:.4g} [{row['low']:.4g}, {row['high']:.4g}]"

    @property
    def style(self):
        """The wide table as a pandas Styler: the best set of each metric in bold on a green ground.

        Column titles carry the direction (``↑``: higher is better); the caption says it in words.
        Set names are escaped (``format_index(escape="html")``). Needs jinja2 (pandas' Styler).
        """
        from ._optional import require

        require("jinja2", purpose="MetricsTable.style (pandas' Styler)")
        table = self.wide()
        arrows = {m: "↑" if self.higher_is_better[m] else "↓" for m in self.metrics}
        table.columns = [f"{m} {arrows[m]}" for m in self.metrics]

        def highlight(frame):
            out = np.full(frame.shape, "", dtype=object)
            for j, m in enumerate(self.metrics):
                b = self.best.get(m)
                if b is not None:
                    i = self.sets.index(b)
                    strong = self.resolved.get(m) is not False
                    out[i, j] = "font-weight: bold; background-color: " + ("#c7e9c0" if strong else "#edf8e9")
            return out

        direction = ("higher is better for every metric" if all(self.higher_is_better.values()) else
                     "; ".join(f"{m}: {'higher' if v else 'lower'} is better" for m, v in self.higher_is_better.items()))
        caption = (f"{len(self.sets)} sets at n = {self.n}, {self.confidence_level:.0%} intervals; {direction} "
                   "(↑); best set highlighted (pale: its lead is not resolved)")
        return (table.style.format(escape="html").format_index(escape="html", axis=0)
                .format_index(escape="html", axis=1).apply(highlight, axis=None).set_caption(caption))

    def plot(self):
        """The sets' values with their intervals, one panel per metric, the best set named in each title.

        The panels are :func:`~diversity_core.report.figures.score_bars_figure`, the figure of
        the comparison's scores that the app and the report draw, restricted to these metrics.
        """
        require_plotly("MetricsTable.plot()")
        from .report.figures._base import escape_label
        from .report.figures.colours import group_colours
        from .report.figures.groups import score_bars_figure

        bars = {}
        for m in self.metrics:
            rows = []
            for g in self.sets:
                row = self._row(g, m)
                if row is not None and not math.isnan(row["value"]):
                    rows.append((g, float(row["value"]), _none(row["low"]), _none(row["high"])))
            if rows:
                bars[m] = rows
        fig = score_bars_figure(bars, groups=self.sets, colours=group_colours(self.sets),
                                title=f"Every metric at n = {self.n} with {self.confidence_level:.0%} intervals "
                                "(best set in each title)")
        titles = {m: self._panel_title(m, escape_label) for m in bars}
        for ann in fig.layout.annotations:
            if ann.text in titles:
                ann.text = titles[ann.text]
        return fig

    def _panel_title(self, metric: str, escape) -> str:
        b = self.best.get(metric)
        arrow = "↑" if self.higher_is_better[metric] else "↓"
        if b is None:
            return f"{metric} {arrow}"
        mark = "" if self.resolved.get(metric) is None else ("" if self.resolved[metric] else " (unresolved)")
        return f"{metric} {arrow} best: <b>{escape(b)}</b>{mark}"


def _none(v) -> Optional[float]:
    v = float(v)
    return None if math.isnan(v) else v


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Request:
    """The checked request: the sets to score, the canonical metrics, n and the left-out sets."""

    sets: Any
    names: Tuple[str, ...]
    metrics: Tuple[str, ...]
    qs: Tuple[float, ...]
    n: int
    reference: Optional[str]
    left_out: Dict[str, int]


def _canonical_metric(name) -> Tuple[str, Optional[float]]:
    """``(canonical name, q)`` of one requested metric (q for Vendi scores), or an error listing the valid ones."""
    if isinstance(name, str):
        text = name.strip()
        for known in METRICS:
            if text.lower() == known.lower():
                return known, None
        if text.lower().startswith("vs_"):
            try:
                q = parse_q(text[3:])
            except DiversityInputError:
                pass
            else:
                return score_name(q), q
    raise DiversityInputError(
        f"unknown metric {name!r}; choose 'VS_<q>' for the Vendi score of order q (e.g. 'VS_1', 'VS_0.5', "
        f"'VS_inf') or one of: {', '.join(map(repr, METRICS))}."
    )


def _shape(X) -> tuple:
    """The shape of a feature matrix, without converting it."""
    shape = getattr(X, "shape", None)
    return tuple(shape) if shape is not None else np.shape(X)


def _validate(sets, *, metrics, n, reference, leave_out_smaller) -> _Request:
    """Check the metric names, the sets' sizes and dimensions and n; raise with the fix on the first problem."""
    from .data import Dataset

    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        requested = list(metrics)
    except TypeError:
        raise DiversityInputError(f"metrics must be a list of metric names; got {type(metrics).__name__}.") from None
    if not requested:
        raise DiversityInputError("metrics must name at least one metric (e.g. ['VS_1', 'IntDiv']).")
    canon: Dict[str, Optional[float]] = {}
    for m in requested:
        name, q = _canonical_metric(m)
        canon.setdefault(name, q)
    names_m = tuple(canon)
    if any(m.startswith("MagDiff") for m in names_m) and reference is None:
        raise DiversityInputError("MagDiff is measured against a reference set: pass reference=<set name>.")

    if isinstance(sets, Dataset):
        groups = sets.group_names()
        sizes = {g: int(sets.group_indices(g).size) for g in groups}
        dims: Dict[str, int] = {}
    elif isinstance(sets, Mapping):
        sizes, dims = {}, {}
        for key, X in sets.items():
            if isinstance(X, Dataset):
                sizes[str(key)] = X.n
                continue
            shape = _shape(X)
            if len(shape) != 2:
                raise DiversityInputError(
                    f"set {str(key)!r} must be a 2-D array of features (items x dimensions); got shape {shape}."
                )
            sizes[str(key)], dims[str(key)] = int(shape[0]), int(shape[1])
        if len(sizes) != len(sets):
            raise DiversityInputError("two sets have the same name once converted to text; give each a distinct name.")
    else:
        raise DiversityInputError(
            f"sets must be a dict name -> feature array or a Dataset with groups; got {type(sets).__name__}."
        )
    if len(sizes) < 2:
        raise DiversityInputError(
            f"metrics_table compares at least 2 sets (the best per metric); got {len(sizes)}. "
            "Pass a dict with two or more sets, or a Dataset with two or more groups."
        )
    if len(set(dims.values())) > 1:
        detail = ", ".join(f"{g}: {d}" for g, d in dims.items())
        raise DiversityInputError(
            f"the sets must share one feature space; their feature dimensions differ ({detail}). "
            "Featurize every set with the same featurizer."
        )
    small = {g: v for g, v in sizes.items() if v < MIN_ITEMS}
    if small and not leave_out_smaller:
        listing = ", ".join(f"{g!r} ({v} items)" for g, v in small.items())
        raise DiversityInputError(
            f"every set needs at least {MIN_ITEMS} items for an interval at equal n; too small: {listing}. "
            "Add items, or pass leave_out_smaller=True to leave those sets out."
        )
    if n is not None and not leave_out_smaller:
        short = {g: v for g, v in sizes.items() if v < n}
        if short:
            listing = ", ".join(f"{g!r} ({v} items)" for g, v in short.items())
            raise DiversityInputError(
                f"n={n} exceeds {listing}; every set is scored at the same n, so use n <= {min(sizes.values())} "
                "or pass leave_out_smaller=True."
            )
    choice = groups_for_n(sizes, n=n, leave_out_smaller=leave_out_smaller)
    if reference is not None and str(reference) not in choice.kept:
        raise DiversityInputError(
            f"unknown reference set {reference!r}; choose one of: {', '.join(map(repr, choice.kept))}."
        )
    if choice.left_out:
        if isinstance(sets, Dataset):
            sets = {g: sets.select_group(g) for g in choice.kept}
        else:
            sets = {str(k): v for k, v in sets.items() if str(k) in choice.kept}
    qs = tuple(q for q in canon.values() if q is not None)
    return _Request(sets=sets, names=tuple(choice.kept), metrics=names_m, qs=qs, n=choice.n,
                    reference=None if reference is None else str(reference), left_out=dict(choice.left_out))


# ---------------------------------------------------------------------------------------------
# compute
# ---------------------------------------------------------------------------------------------
def _compute(req: _Request, *, kernel, confidence_level, n_subsamples, n_resamples, metric, n_scales,
             magnitude_replicates, rnd_params, featurizer, rng, progress, kernel_params) -> MetricsTable:
    """One comparison of the requested families (no sample-size curves), read into the table."""
    magnitude = any(m.startswith("Mag") for m in req.metrics)
    cmp = compare(
        req.sets, kernel=kernel, qs=req.qs or (1.0,), reference=req.reference, n=req.n,
        n_subsamples=n_subsamples, n_resamples=n_resamples, confidence_level=confidence_level,
        magnitude=magnitude, metric=metric, n_scales=n_scales, magnitude_replicates=magnitude_replicates,
        rnd="RND" in req.metrics, rnd_params=rnd_params, size_curve=False, featurizer=featurizer, rng=rng,
        progress=progress, **kernel_params,
    )
    return table_of(cmp, req.metrics, left_out=req.left_out)


def _family(metric: str) -> str:
    return "VS" if metric.startswith("VS_") else metric


def table_of(cmp: Comparison, metrics: Optional[Sequence[str]] = None, *,
             left_out: Optional[Mapping[str, int]] = None) -> MetricsTable:
    """The :class:`MetricsTable` of a finished comparison (every score, or ``metrics``), no recomputation."""
    metrics = tuple(cmp.scores if metrics is None else metrics)
    higher = {m: _HIGHER_IS_BETTER[_family(m)] for m in metrics}
    best: Dict[str, Optional[str]] = {}
    resolved: Dict[str, Optional[bool]] = {}
    for m in metrics:
        values = {e.group: e.estimate for e in cmp.estimates if e.score == m and e.estimate is not None}
        if not values:
            best[m], resolved[m] = None, None
            continue
        pick = max if higher[m] else min
        b = pick(values, key=values.get)
        best[m] = b
        resolved[m] = None if m.startswith("MagDiff") else _lead_resolved(cmp, m, b, higher[m])
    rows = []
    for e in cmp.estimates:
        if e.score not in metrics:
            continue
        q = parse_q(e.score[3:]) if e.score.startswith("VS_") else None
        exact = e.role == "reference" and e.score.startswith("MagDiff")
        interval = None if exact or e.confidence_interval is None else e.confidence_interval
        rows.append(frame_row(e.score, e.estimate, interval, group=e.group, q=q,
                              kind="exact" if exact else "estimate", se=e.se, n=e.n, method=e.interval,
                              higher_is_better=higher[e.score], best=best[e.score] == e.group))
    order = {m: i for i, m in enumerate(metrics)}
    rows.sort(key=lambda r: (cmp.groups.index(r["group"]), order[r["score"]]))
    frame = tidy_frame(rows)
    return MetricsTable(frame=frame, sets=tuple(cmp.groups), metrics=metrics, n=cmp.n,
                        confidence_level=cmp.confidence_level, higher_is_better=higher, best=best,
                        resolved=resolved, left_out=dict(left_out or {}), comparison=cmp)


def _lead_resolved(cmp: Comparison, metric: str, best: str, higher: bool) -> bool:
    """Whether ``best`` beats every other set on ``metric`` with a resolved pairwise difference."""
    for g in cmp.groups:
        if g == best:
            continue
        try:
            p = cmp.pair(metric, best, g)
        except DiversityInputError:
            return False
        if not p.resolved or p.difference is None or (p.difference > 0) != higher:
            return False
    return True
