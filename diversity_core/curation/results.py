"""Result types of the curation tools: frozen dataclasses with ``to_dict()`` and per-item tables.

Every array is read-only. Tables are pandas DataFrames (``to_frame(ids=...)``) with one row
per item and an ``item`` column holding the row number in the data; pass the dataset's ids
(file names, ``"row 3"``, ...) to add an ``id`` column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from .._display import frame_row, html_table, require_plotly, short_repr, tidy_frame
from .._json import to_jsonable
from .._orders import parse_q, q_key
from ..exceptions import DiversityInputError
from ._common import ids_column

__all__ = ["ContributionResult", "DuplicateResult", "RarityResult", "SelectionResult", "SelectionComparison"]


def _q_index(qs: tuple, q) -> int:
    """Position of order q in ``qs``, or an error listing the computed ones."""
    value = parse_q(q)
    for i, v in enumerate(qs):
        if v == value:
            return i
    raise DiversityInputError(
        f"order q={q_key(value)} was not computed; computed: {', '.join(q_key(v) for v in qs)}."
    )


def _default_q(qs: tuple, q):
    """The order a display uses: ``q`` when given, else 1 when computed, else the first computed."""
    if q is not None:
        return qs[_q_index(qs, q)]
    return 1.0 if 1.0 in qs else qs[0]


def _vendi_text(qs: tuple, values) -> str:
    """``VS_1 12.3, VS_inf 4.5`` for the orders computed (``-`` when not computed)."""
    if values is None:
        return "-"
    return ", ".join(f"VS_{q_key(q)} {float(v):.4g}" for q, v in zip(qs, values))


def _items_text(idx, values) -> str:
    """``17 (0.12), 3 (0.1), ...``: a few items with their values."""
    return ", ".join(f"{int(i)} ({float(values[i]):.3g})" for i in idx)


def _summary_html(rows: list, caption: str) -> str:
    """The compact HTML table of a result's headline numbers (the per-item table is ``to_frame``)."""
    return html_table(tidy_frame(rows), caption=caption)


def _frame(columns: dict, ids, *, n: int):
    """A DataFrame from columns, with an ``id`` column after ``item`` when ids are given."""
    import pandas as pd

    labels = ids_column(ids, n)
    if labels is not None:
        items = columns["item"]
        out = {"item": items, "id": [labels[i] for i in items]}
        out.update({k: v for k, v in columns.items() if k != "item"})
        columns = out
    return pd.DataFrame(columns)


@dataclass(frozen=True)
class ContributionResult:
    """Each item's contribution to the Vendi scores: ``VS_q(all) - VS_q(all but i)``.

    Attributes
    ----------
    values : ndarray of shape (n, len(qs))
        Column j holds every item's contribution to ``VS_{qs[j]}``: positive for items that
        add diversity (removing them lowers the score), negative for redundant ones.
    qs : tuple of float
        The orders q.
    vendi : ndarray of shape (len(qs),)
        ``VS_q`` of all items.
    method : {"exact", "first_order"}
        Exact leave-one-out, or its first-order form (see :func:`item_contributions`).
    n : int
        Number of items.
    rank : int
        Number of eigenvalues in the support of the density matrix.
    spectrum_method : {"dense", "dual"}
        The path of the spectrum the contributions were computed from.
    kernel : dict
        The resolved kernel.
    weighted : bool
        Whether non-uniform weights were used.
    """

    values: np.ndarray = field(repr=False)
    qs: tuple
    vendi: np.ndarray
    method: str
    n: int
    rank: int
    spectrum_method: str
    kernel: dict = field(default_factory=dict)
    weighted: bool = False

    def contribution(self, q=1.0) -> np.ndarray:
        """Every item's contribution to ``VS_q``, shape (n,)."""
        return self.values[:, _q_index(self.qs, q)]

    def top(self, m: int = 10, *, q=1.0) -> np.ndarray:
        """Indices of the ``m`` items adding the most to ``VS_q`` (largest first, ties by index)."""
        c = self.contribution(q)
        return np.lexsort((np.arange(c.size), -c))[: max(0, int(m))]

    def bottom(self, m: int = 10, *, q=1.0) -> np.ndarray:
        """Indices of the ``m`` most redundant items (smallest contribution first, ties by index)."""
        c = self.contribution(q)
        return np.lexsort((np.arange(c.size), c))[: max(0, int(m))]

    def __repr__(self) -> str:
        q = _default_q(self.qs, None)
        c = self.contribution(q)
        return short_repr(f"ContributionResult(n={self.n}, method={self.method!r}, {len(self.qs)} orders)", [
            ("VS_q of all items", _vendi_text(self.qs, self.vendi)),
            (f"most adding to VS_{q_key(q)}", _items_text(self.top(3, q=q), c)),
            (f"most redundant for VS_{q_key(q)}", _items_text(self.bottom(3, q=q), c)),
            ("rank", self.rank), ("spectrum", self.spectrum_method),
            ("per item", "to_frame(ids=...): one row per item"),
        ])

    def summary_frame(self):
        """The headline numbers as a tidy frame (exact): ``vendi`` of all items, largest and smallest contribution.

        One row of each per order q.
        """
        rows = []
        for j, q in enumerate(self.qs):
            rows.append(frame_row("vendi", self.vendi[j], q=q))
            rows.append(frame_row("contribution_max", float(np.max(self.values[:, j])) if self.n else math.nan, q=q))
            rows.append(frame_row("contribution_min", float(np.min(self.values[:, j])) if self.n else math.nan, q=q))
        return tidy_frame(rows)

    def _repr_html_(self) -> str:
        return html_table(self.summary_frame(), caption=repr(self).splitlines()[0])

    def plot(self, q=None):
        """The items' contributions to ``VS_q`` as a histogram (the core's ``histogram_figure``).

        ``q`` defaults to 1 when computed, else the first order.
        """
        require_plotly("ContributionResult.plot()")
        from ..report.figures.items import histogram_figure

        q = _default_q(self.qs, q)
        return histogram_figure(self.contribution(q), x_title=f"contribution to VS_{q_key(q)} (VS minus VS without the item)",
                                title=f"Contributions of {self.n} items ({self.method})")

    def to_frame(self, ids: Optional[Sequence] = None):
        """One row per item: ``item``, optional ``id``, then ``contribution_<q>`` for every order."""
        cols: dict = {"item": np.arange(self.n)}
        for j, q in enumerate(self.qs):
            cols[f"contribution_{q_key(q)}"] = self.values[:, j]
        return _frame(cols, ids, n=self.n)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with stable keys (orders as ``"1"``, ``"inf"``)."""
        return to_jsonable({
            "n": self.n,
            "method": self.method,
            "q": [q_key(q) for q in self.qs],
            "vendi": {q_key(q): v for q, v in zip(self.qs, self.vendi)},
            "contributions": {q_key(q): self.values[:, j] for j, q in enumerate(self.qs)},
            "rank": self.rank,
            "spectrum_method": self.spectrum_method,
            "kernel": self.kernel,
            "weighted": self.weighted,
        })


@dataclass(frozen=True)
class DuplicateResult:
    """Near-duplicate groups: connected components of the pairs closer than a threshold.

    Attributes
    ----------
    n : int
        Number of items.
    criterion : {"similarity", "distance"}
        Pairs with kernel similarity ``>= threshold``, or Euclidean distance ``<= threshold``.
    threshold : float
        The similarity threshold or the distance eps.
    method : {"exact", "approximate"}
        Exact blocked search, or candidates from a nearest-neighbour index checked exactly.
    pairs : ndarray of shape (m, 2)
        The pairs found (i < j), sorted; with ``method="approximate"`` only pairs among each
        item's nearest candidates (the groups are still complete when every duplicate is
        among some member's candidates).
    pair_values : ndarray of shape (m,)
        Similarity (or distance) of each pair.
    labels : ndarray of shape (n,)
        Group number of each item, -1 for items without a near-duplicate. Groups are
        numbered by decreasing size, then by their smallest item.
    groups : tuple of ndarray
        The members of each group, ascending.
    representatives : ndarray of shape (n_groups,)
        The member kept for each group: the one most similar to the others in total (the
        medoid; smallest sum of distances for ``criterion="distance"``), ties to the smaller index.
    keep : ndarray of shape (n,) of bool
        Items kept when duplicates are removed: every representative and every item in no group.
    qs : tuple of float
        Orders of the scores below.
    vendi_original, vendi_deduplicated : ndarray of shape (len(qs),) or None
        ``VS_q`` of all items and of the kept items (weights renormalised); ``None`` when the
        spectrum needs a dense matrix beyond the memory budget or ``scores=False``.
    intdiv_original, intdiv_deduplicated : float or None
        IntDiv of all items and of the kept items.
    kernel : dict
        The resolved kernel (used for similarities, representatives and scores).
    n_neighbors : int or None
        Candidates per item of the approximate search.
    """

    n: int
    criterion: str
    threshold: float
    method: str
    pairs: np.ndarray = field(repr=False)
    pair_values: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    groups: tuple = field(repr=False)
    representatives: np.ndarray = field(repr=False)
    keep: np.ndarray = field(repr=False)
    qs: tuple = ()
    vendi_original: Optional[np.ndarray] = None
    vendi_deduplicated: Optional[np.ndarray] = None
    intdiv_original: Optional[float] = None
    intdiv_deduplicated: Optional[float] = None
    kernel: dict = field(default_factory=dict)
    n_neighbors: Optional[int] = None

    @property
    def n_groups(self) -> int:
        """Number of near-duplicate groups."""
        return len(self.groups)

    def group_of(self, item: int) -> np.ndarray:
        """The members of ``item``'s near-duplicate group, ascending (empty when it has none).

        Examples
        --------
        ``result.group_of(i).size`` is the size of item ``i``'s group (0: no near-duplicate).
        """
        item = int(item)
        if not -self.n <= item < self.n:
            raise DiversityInputError(f"item must be in [0, {self.n}); got {item}.")
        label = int(self.labels[item])
        return self.groups[label] if label >= 0 else np.zeros(0, dtype=np.intp)

    @property
    def n_in_groups(self) -> int:
        """Number of items that have at least one near-duplicate."""
        return int(sum(g.size for g in self.groups))

    @property
    def n_removable(self) -> int:
        """Number of items removed by deduplication (group members other than the representatives)."""
        return int(self.n - np.count_nonzero(self.keep))

    @property
    def removable(self) -> np.ndarray:
        """Indices of the items deduplication removes, ascending."""
        return np.flatnonzero(~self.keep)

    def vendi_change(self, q=1.0) -> float:
        """``VS_q`` without duplicates minus ``VS_q`` of all items (NaN when the scores were not computed)."""
        if self.vendi_original is None or self.vendi_deduplicated is None:
            return math.nan
        j = _q_index(self.qs, q)
        return float(self.vendi_deduplicated[j] - self.vendi_original[j])

    def __repr__(self) -> str:
        sizes = [int(g.size) for g in self.groups]
        rel = ">=" if self.criterion == "similarity" else "<="
        return short_repr(f"DuplicateResult(n={self.n}, {self.n_groups} groups, {self.n_removable} removable)", [
            ("rule", f"{self.criterion} {rel} {self.threshold:g} ({self.method})"),
            ("items in groups", self.n_in_groups), ("largest group", max(sizes) if sizes else 0),
            ("pairs", int(self.pairs.shape[0])),
            ("VS_q original", _vendi_text(self.qs, self.vendi_original)),
            ("VS_q deduplicated", _vendi_text(self.qs, self.vendi_deduplicated)),
            ("per item", "to_frame(ids=...): one row per item in a group"),
        ])

    def summary_frame(self):
        """The headline numbers as a tidy frame (exact): ``vendi`` per order q, ``intdiv``, ``removable``.

        ``group`` is ``"original"`` (every item) or ``"deduplicated"`` (the kept ones).
        """
        rows = []
        for label, vs, div in (("original", self.vendi_original, self.intdiv_original),
                               ("deduplicated", self.vendi_deduplicated, self.intdiv_deduplicated)):
            if vs is not None:
                rows += [frame_row("vendi", v, group=label, q=q) for q, v in zip(self.qs, vs)]
            if div is not None:
                rows.append(frame_row("intdiv", div, group=label))
        rows.append(frame_row("removable", self.n_removable, group="deduplicated"))
        return tidy_frame(rows)

    def _repr_html_(self) -> str:
        return html_table(self.summary_frame(), caption=repr(self).splitlines()[0])

    def plot(self, max_groups: int = 40):
        """The near-duplicate groups' sizes, largest first (the core's ``bar_figure``; at most ``max_groups``)."""
        require_plotly("DuplicateResult.plot()")
        from ..report.figures.items import bar_figure

        shown = range(min(self.n_groups, int(max_groups)))
        more = f" (largest {len(shown)} of {self.n_groups})" if self.n_groups > len(shown) else ""
        return bar_figure([f"group {g}" for g in shown], [int(self.groups[g].size) for g in shown], y_title="items",
                          title=f"Near-duplicate groups{more}: {self.n_removable} items removable")

    def to_frame(self, ids: Optional[Sequence] = None):
        """One row per item in a duplicate group.

        Columns ``item``, ``id``, ``group``, ``size``, ``representative``, and ``max_similarity``
        (``min_distance`` with ``criterion="distance"``): its closest pair.
        """
        items = np.flatnonzero(self.labels >= 0)
        items = items[np.lexsort((items, self.labels[items]))]
        best = np.full(self.n, np.nan)
        if self.pairs.size:
            reduce = np.fmin if self.criterion == "distance" else np.fmax
            for col in (0, 1):
                reduce.at(best, self.pairs[:, col], self.pair_values)
        sizes = np.array([g.size for g in self.groups], dtype=np.intp)
        rep = np.zeros(self.n, dtype=bool)
        rep[self.representatives] = True
        cols = {
            "item": items,
            "group": self.labels[items],
            "size": sizes[self.labels[items]] if items.size else np.zeros(0, dtype=np.intp),
            "representative": rep[items],
            "max_similarity" if self.criterion == "similarity" else "min_distance": best[items],
        }
        return _frame(cols, ids, n=self.n)

    def summary(self) -> dict[str, Any]:
        """Counts and scores without the per-item lists (JSON-ready)."""
        sizes = [int(g.size) for g in self.groups]
        return to_jsonable({
            "n": self.n,
            "criterion": self.criterion,
            "threshold": self.threshold,
            "method": self.method,
            "n_groups": self.n_groups,
            "n_in_groups": self.n_in_groups,
            "n_removable": self.n_removable,
            "largest_group": max(sizes) if sizes else 0,
            "n_pairs": int(self.pairs.shape[0]),
            "q": [q_key(q) for q in self.qs],
            "vendi_original": None if self.vendi_original is None
            else {q_key(q): v for q, v in zip(self.qs, self.vendi_original)},
            "vendi_deduplicated": None if self.vendi_deduplicated is None
            else {q_key(q): v for q, v in zip(self.qs, self.vendi_deduplicated)},
            "intdiv_original": self.intdiv_original,
            "intdiv_deduplicated": self.intdiv_deduplicated,
            "kernel": self.kernel,
            "n_neighbors": self.n_neighbors,
        })

    def to_dict(self) -> dict[str, Any]:
        """:meth:`summary` plus every group (members, representative) and the pairs."""
        out = self.summary()
        out["groups"] = [
            {"group": g, "size": int(m.size), "representative": int(r), "members": m.tolist()}
            for g, (m, r) in enumerate(zip(self.groups, self.representatives))
        ]
        out["pairs"] = self.pairs.tolist()
        out["pair_values"] = to_jsonable(self.pair_values)
        return out


@dataclass(frozen=True)
class RarityResult:
    """How unusual each item is: one minus its mean similarity to its nearest neighbours.

    Attributes
    ----------
    scores : ndarray of shape (n,)
        ``1 - mean_{j in kNN(i)} k(x_i, x_j)``: 0 for an item with k exact copies, near 1
        (or above, for kernels with negative values) for an outlier.
    neighbors : ndarray of shape (n, n_neighbors)
        The nearest neighbours of each item, most similar first.
    similarities : ndarray of shape (n, n_neighbors)
        Their kernel similarities.
    n_neighbors : int
    method : {"exact", "approximate"}
    kernel : dict
    """

    scores: np.ndarray = field(repr=False)
    neighbors: np.ndarray = field(repr=False)
    similarities: np.ndarray = field(repr=False)
    n_neighbors: int
    method: str
    kernel: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Number of items."""
        return int(self.scores.size)

    def rarest(self, m: int = 10) -> np.ndarray:
        """Indices of the ``m`` rarest items (highest score first, ties by index)."""
        return np.lexsort((np.arange(self.n), -self.scores))[: max(0, int(m))]

    def most_typical(self, m: int = 10) -> np.ndarray:
        """Indices of the ``m`` most typical items (lowest score first, ties by index)."""
        return np.lexsort((np.arange(self.n), self.scores))[: max(0, int(m))]

    def __repr__(self) -> str:
        s = self.scores
        med = float(np.median(s)) if s.size else math.nan
        return short_repr(f"RarityResult(n={self.n}, n_neighbors={self.n_neighbors}, method={self.method!r})", [
            ("rarest", _items_text(self.rarest(3), s)), ("most typical", _items_text(self.most_typical(3), s)),
            ("median rarity", med), ("per item", "to_frame(ids=...): one row per item"),
        ])

    def summary_frame(self):
        """The headline numbers as a tidy frame: the mean, median and largest rarity (exact)."""
        s = self.scores
        stats = (("rarity_mean", np.mean), ("rarity_median", np.median), ("rarity_max", np.max))
        return tidy_frame([frame_row(name, float(f(s)) if s.size else math.nan) for name, f in stats])

    def _repr_html_(self) -> str:
        return html_table(self.summary_frame(), caption=repr(self).splitlines()[0])

    def plot(self):
        """The items' rarity as a histogram (the core's ``histogram_figure``)."""
        require_plotly("RarityResult.plot()")
        from ..report.figures.items import histogram_figure

        return histogram_figure(self.scores, x_title=f"rarity (1 - mean similarity to the {self.n_neighbors} nearest)",
                                title=f"Rarity of {self.n} items")

    def to_frame(self, ids: Optional[Sequence] = None):
        """One row per item: ``item``, ``id``, ``rarity``, ``mean_similarity``, ``nearest``, ``nearest_similarity``."""
        cols = {
            "item": np.arange(self.n),
            "rarity": self.scores,
            "mean_similarity": 1.0 - self.scores,
            "nearest": self.neighbors[:, 0],
            "nearest_similarity": self.similarities[:, 0],
        }
        return _frame(cols, ids, n=self.n)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with stable keys."""
        return to_jsonable({
            "n": self.n,
            "n_neighbors": self.n_neighbors,
            "method": self.method,
            "kernel": self.kernel,
            "scores": self.scores,
            "neighbors": self.neighbors,
            "similarities": self.similarities,
        })


@dataclass(frozen=True)
class SelectionResult:
    """A subset of k items chosen for diversity, in selection order, with its score curve.

    Attributes
    ----------
    indices : ndarray of shape (k,)
        The chosen items in the order they were chosen: every prefix is the method's choice
        for that size.
    method : {"greedy", "kcenter", "random"}
    objective : {"vs2", "logdet"} or None
        The greedy objective (None for the baselines).
    n : int
        Number of candidates.
    qs : tuple of float
        Orders of the curve.
    curve_k : ndarray of shape (m,)
        Subset sizes the curve was evaluated at (about ``n_points`` from 1 to k).
    curve_vendi : ndarray of shape (m, len(qs))
        ``VS_q`` of the first ``curve_k[i]`` chosen items (uniform weights).
    curve_intdiv : ndarray of shape (m,)
        IntDiv of the same prefixes.
    n_logdet : int or None
        With ``objective="logdet"``: the number of items chosen by the log-determinant rule
        before every remaining item lay in the span of the chosen ones (the kernel's rank),
        after which the VS_2 rule chose the rest. None otherwise.
    kernel : dict
    """

    indices: np.ndarray
    method: str
    objective: Optional[str]
    n: int
    qs: tuple
    curve_k: np.ndarray = field(repr=False)
    curve_vendi: np.ndarray = field(repr=False)
    curve_intdiv: np.ndarray = field(repr=False)
    n_logdet: Optional[int] = None
    kernel: dict = field(default_factory=dict)

    @property
    def k(self) -> int:
        """Number of items chosen."""
        return int(self.indices.size)

    def curve(self, q=1.0) -> np.ndarray:
        """``VS_q`` of the prefixes at ``curve_k``."""
        return self.curve_vendi[:, _q_index(self.qs, q)]

    def vendi(self, q=1.0) -> float:
        """``VS_q`` of the whole selection."""
        return float(self.curve(q)[-1])

    def __repr__(self) -> str:
        last = self.curve_vendi[-1] if self.curve_vendi.shape[0] else None
        how = self.method + (f", {self.objective}" if self.objective else "")
        return short_repr(f"SelectionResult(k={self.k} of n={self.n}, method={how!r})", [
            ("indices", self.indices), ("VS_q of the selection", _vendi_text(self.qs, last)),
            ("IntDiv", float(self.curve_intdiv[-1]) if self.curve_intdiv.size else None),
            ("n_logdet", self.n_logdet), ("per item", "to_frame(ids=...); the curve: curve_frame()"),
        ])

    def summary_frame(self):
        """The headline numbers as a tidy frame: ``vendi`` per order and ``intdiv`` of the k chosen items (exact)."""
        rows = []
        if self.curve_vendi.shape[0]:
            rows = [frame_row("vendi", v, q=q, k=self.k) for q, v in zip(self.qs, self.curve_vendi[-1])]
            rows.append(frame_row("intdiv", self.curve_intdiv[-1], k=self.k))
        return tidy_frame(rows)

    def _repr_html_(self) -> str:
        return html_table(self.summary_frame(), caption=repr(self).splitlines()[0])

    def plot(self, q=None):
        """VS_q of the first k chosen items against k: the Curate page's figure, for this one method.

        ``q`` defaults to 1 when computed, else the first order.
        """
        require_plotly("SelectionResult.plot()")
        from ..report.figures.curation import selection_figure

        return selection_figure({self.method: self}, _default_q(self.qs, q))

    def to_frame(self, ids: Optional[Sequence] = None):
        """One row per chosen item: ``rank`` (1 = chosen first), ``item``, ``id``."""
        cols = {"item": self.indices, "rank": np.arange(1, self.k + 1)}
        df = _frame(cols, ids, n=self.n)
        return df[["rank"] + [c for c in df.columns if c != "rank"]]

    def curve_frame(self):
        """The curve as a table: ``k``, ``VS_<q>`` for every order, ``intdiv``."""
        import pandas as pd

        cols: dict = {"k": self.curve_k}
        for j, q in enumerate(self.qs):
            cols[f"VS_{q_key(q)}"] = self.curve_vendi[:, j]
        cols["intdiv"] = self.curve_intdiv
        return pd.DataFrame(cols)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with stable keys."""
        return to_jsonable({
            "method": self.method,
            "objective": self.objective,
            "n": self.n,
            "k": self.k,
            "indices": self.indices,
            "q": [q_key(q) for q in self.qs],
            "curve": {
                "k": self.curve_k,
                "vendi": {q_key(q): self.curve_vendi[:, j] for j, q in enumerate(self.qs)},
                "intdiv": self.curve_intdiv,
            },
            "n_logdet": self.n_logdet,
            "kernel": self.kernel,
        })


@dataclass(frozen=True)
class SelectionComparison:
    """Selections of the same size by several methods, on the same grid of sizes.

    Attributes
    ----------
    selections : dict of str to SelectionResult
        One selection per method, in the order asked for.
    """

    selections: dict

    @property
    def methods(self) -> list[str]:
        """The methods compared."""
        return list(self.selections)

    def __repr__(self) -> str:
        fields_ = []
        for name, sel in list(self.selections.items())[:7]:
            last = sel.curve_vendi[-1] if sel.curve_vendi.shape[0] else None
            fields_.append((name, f"k={sel.k}: {_vendi_text(sel.qs, last)}"))
        fields_.append(("curves", "to_frame(): k, q, vendi, intdiv per method"))
        return short_repr(f"SelectionComparison({len(self.selections)} methods: {', '.join(self.methods)})", fields_)

    def summary_frame(self):
        """The headline numbers as a tidy frame (exact): ``vendi`` per order and ``intdiv`` of each selection.

        ``group`` is the method.
        """
        rows = []
        for name, sel in self.selections.items():
            if sel.curve_vendi.shape[0]:
                rows += [frame_row("vendi", v, group=name, q=q, k=sel.k) for q, v in zip(sel.qs, sel.curve_vendi[-1])]
                rows.append(frame_row("intdiv", sel.curve_intdiv[-1], group=name, k=sel.k))
        return tidy_frame(rows)

    def _repr_html_(self) -> str:
        return html_table(self.summary_frame(), caption=repr(self).splitlines()[0])

    def plot(self, q=None):
        """VS_q of every method's first k items against k: the figure the Curate page draws.

        ``q`` defaults to 1 when computed, else the first order.
        """
        require_plotly("SelectionComparison.plot()")
        from ..report.figures.curation import selection_figure

        qs = next(iter(self.selections.values())).qs if self.selections else (1.0,)
        return selection_figure(self.selections, _default_q(qs, q))

    def to_frame(self):
        """The curves in long form: ``method``, ``k``, ``q``, ``vendi``, ``intdiv``."""
        import pandas as pd

        rows = []
        for name, sel in self.selections.items():
            for i, k in enumerate(sel.curve_k):
                for j, q in enumerate(sel.qs):
                    rows.append({"method": name, "k": int(k), "q": q_key(q), "vendi": float(sel.curve_vendi[i, j]),
                                 "intdiv": float(sel.curve_intdiv[i])})
        return pd.DataFrame(rows, columns=["method", "k", "q", "vendi", "intdiv"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: every selection's :meth:`SelectionResult.to_dict`."""
        return {name: sel.to_dict() for name, sel in self.selections.items()}
