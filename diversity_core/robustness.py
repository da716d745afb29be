r"""Conclusions tested against the representation: the groups' ranking under every representation and kernel.

A Vendi score is a statement about items *under a similarity*, and the similarity is two
choices: the representation (raw pixels, a network's features, n-grams, sentence embeddings,
fingerprints) and the kernel on it (cosine, RBF, ...). The kernel-sensitivity sweep
(:mod:`diversity_core.sensitivity`) moves only a kernel's bandwidth; this module moves both
choices and asks the question a reader of a ranking cares about: *does the order of the groups
survive?*

- :func:`representation_robustness` scores every group under every (representation, kernel)
  pair with :func:`diversity_core.compare.compare` (so every group at the same n, each score
  with its subsampling interval, every pair with its resolved/unresolved verdict), ranks the
  groups under each pair and lists the **rank flips**: two groups whose order reverses between
  two (representation, kernel) pairs. A flip is *resolved* when both orders are resolved (each
  difference's interval excludes 0); then the ranking depends on that choice,
  :attr:`RobustnessResult.verdict` says so and :attr:`RobustnessResult.depends_on` says on what:
  the representation (same kernel), the kernel (same representation) or both.
- :func:`background_dominance` detects what made raw pixels rank real emoji icons wrongly:
  under an inner-product kernel (cosine, linear) a constant non-black background that two images
  share adds to their similarity pixel by pixel, so when most of the pixels are background the
  score measures how much of each image is background, not what is drawn on it.

The background share
--------------------
With :math:`\hat x_i = x_i / \lVert x_i \rVert` the unit pixel vectors and :math:`m_i` the
0/1 mask of image i's background pixels (every channel within ``tolerance`` of its background
colour, the most common colour of its border), the share of the cosine similarity that
comes from background pixels two images share is

.. math::

    \beta = \frac{\sum_{i \ne j} \langle \hat x_i \odot m_i,\ \hat x_j \odot m_j \rangle}
                 {\sum_{i \ne j} \langle \hat x_i, \hat x_j \rangle},

in [0, 1] for non-negative pixels. :math:`\beta \ge` :data:`DOMINANCE` (one half: most of the
similarity is background) marks the pixel features as dominated. A black background gives
:math:`\beta = 0`: zeros add nothing to an inner product (they still shape an RBF kernel's
distances, but only through the drawn pixels).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = {"pixels": rng.normal(size=(60, 5))}
>>> groups = np.repeat(["a", "b"], 30)
>>> result = representation_robustness(X, groups, kernels=("cosine",), n_subsamples=5, n_resamples=5)
>>> result.verdict
'stable'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

from ._display import NotebookDisplay, frame_row, require_plotly, short_repr, tidy_frame
from ._json import to_jsonable
from ._orders import format_q, parse_q
from ._progress import DETAIL_SEPARATOR, ProgressCallback, report
from ._validation import check_random_state, check_scalar
from .exceptions import DiversityInputError

__all__ = [
    "RepresentationScores",
    "RankFlip",
    "RobustnessResult",
    "BackgroundReport",
    "representation_robustness",
    "background_dominance",
    "default_kernels",
    "DOMINANCE",
]

#: Share of the pixel similarity carried by a shared background above which it dominates.
DOMINANCE = 0.5
#: Images :func:`background_dominance` reads at most (a seeded sample beyond it).
BACKGROUND_SAMPLE = 400
#: Kernels tried on every representation besides its own (the bandwidth fixed on the pooled groups).
EXTRA_KERNELS = ("rbf",)


def default_kernels(representation: str) -> Tuple[str, ...]:
    """The kernels tried on a representation by default: the featurizer's own kernel and the RBF kernel.

    A name that is no registered featurizer (an embeddings file, say) gets the cosine kernel and
    the RBF kernel. Kernels that are undefined on the features (:func:`~diversity_core.featurizers.
    kernel_support`) are left out.

    Examples
    --------
    >>> default_kernels("pixels")
    ('cosine', 'rbf')
    >>> default_kernels("morgan")
    ('tanimoto', 'rbf')
    """
    from .featurizers import FEATURIZERS, kernel_support

    own = FEATURIZERS[representation].kernel if representation in FEATURIZERS else "cosine"
    out = tuple(dict.fromkeys((own, *EXTRA_KERNELS)))
    if representation in FEATURIZERS:
        out = tuple(k for k in out if kernel_support(representation, k) is None)
    return out


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RepresentationScores:
    """The groups' scores under one (representation, kernel) pair.

    Attributes
    ----------
    representation, kernel : str
    estimates : dict
        ``group -> (estimate, ci_low, ci_high)`` of VS_q at the equal n.
    ranking : tuple of str
        The groups from the highest estimate to the lowest.
    resolved : dict
        ``(group_a, group_b) -> higher group`` for the pairs whose difference is resolved
        (the key in ranking order of :attr:`RobustnessResult.groups`); unresolved pairs are absent.
    kernel_settings : dict
        The kernel as the comparison resolved it (the pooled RBF bandwidth, for instance).
    """

    representation: str
    kernel: str
    estimates: Dict[str, Tuple[float, float, float]]
    ranking: Tuple[str, ...]
    resolved: Dict[Tuple[str, str], str] = field(default_factory=dict)
    kernel_settings: Dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``"pixels · cosine"``."""
        return f"{self.representation} · {self.kernel}"

    def order(self, a: str, b: str) -> int:
        """+1 when ``a`` scores higher than ``b``, -1 when lower, 0 when equal."""
        return int(np.sign(self.estimates[a][0] - self.estimates[b][0]))

    def is_resolved(self, a: str, b: str) -> bool:
        """Whether the difference of ``a`` and ``b`` is resolved at the level."""
        return (a, b) in self.resolved or (b, a) in self.resolved

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys."""
        return {
            "representation": self.representation,
            "kernel": self.kernel,
            "estimates": {
                g: dict(zip(("estimate", "ci_low", "ci_high"), v)) for g, v in self.estimates.items()
            },
            "ranking": list(self.ranking),
            "resolved": [{"group_a": a, "group_b": b, "higher": h} for (a, b), h in self.resolved.items()],
            "kernel_settings": dict(self.kernel_settings),
        }


@dataclass(frozen=True)
class RankFlip:
    """Two groups whose order reverses between two (representation, kernel) pairs.

    ``higher`` scores above ``lower`` under ``where_higher`` and below it under ``where_lower``
    (labels ``"representation · kernel"``). ``resolved`` is True when both orders are resolved.
    ``differs`` says what changes between the two: ``"representation"`` (same kernel),
    ``"kernel"`` (same representation) or ``"both"``.
    """

    higher: str
    lower: str
    where_higher: str
    where_lower: str
    resolved: bool
    differs: str = "representation"

    def to_dict(self) -> Dict[str, Any]:
        """The fields as a dict."""
        return {
            "higher": self.higher,
            "lower": self.lower,
            "where_higher": self.where_higher,
            "where_lower": self.where_lower,
            "resolved": self.resolved,
            "differs": self.differs,
        }


@dataclass(frozen=True)
class BackgroundReport:
    """What :func:`background_dominance` found.

    Attributes
    ----------
    share : float
        :math:`\\beta`, the share of the mean pairwise cosine similarity of the pixel vectors that
        comes from background pixels both images share (0 for a black background).
    background_fraction : float
        Mean share of each image's pixels that are background.
    colour : tuple of int
        The most common background colour (0-255 per channel) of the images read.
    dominated : bool
        ``share >= DOMINANCE``, or, with groups, the share within some group (scores are computed
        within groups, so a group's own share is what bends its score).
    group_shares : dict
        ``group -> share`` within each group (when groups were given).
    sampled : int
        Images read.
    """

    share: float
    background_fraction: float
    colour: Tuple[int, ...]
    dominated: bool
    group_shares: Dict[str, float] = field(default_factory=dict)
    sampled: int = 0

    @property
    def dominated_groups(self) -> Tuple[str, ...]:
        """The groups whose own share is at least :data:`DOMINANCE`."""
        return tuple(g for g, v in self.group_shares.items() if v >= DOMINANCE)

    def message(self) -> str:
        """One or two sentences for a warning (or a note when not dominated)."""
        colour = ", ".join(map(str, self.colour))
        if not self.dominated:
            return (
                f"The background (colour {colour}) carries {self.share:.0%} of the pixel similarity: "
                "the pixel features are not dominated by it."
            )
        share = max([self.share, *self.group_shares.values()])
        where = ""
        if self.dominated_groups:
            where = " within " + ", ".join(self.dominated_groups)
        return (
            f"A constant background (colour {colour}, {self.background_fraction:.0%} of the pixels) carries up "
            f"to {share:.0%} of the cosine similarity between the images' pixels{where}: pixel scores mostly "
            "measure how much of each image is background, not what is drawn on it. Network features "
            "(efficientnet_lite0) read the content."
        )

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys."""
        return to_jsonable(
            {
                "share": self.share,
                "background_fraction": self.background_fraction,
                "colour": list(self.colour),
                "dominated": self.dominated,
                "group_shares": dict(self.group_shares),
                "sampled": self.sampled,
            }
        )


@dataclass(frozen=True, repr=False)
class RobustnessResult(NotebookDisplay):
    """The groups' ranking under several representations and kernels.

    Attributes
    ----------
    groups : tuple of str
    group_sizes : tuple of int
    n : int
        The equal number of items of every score.
    q : float
    confidence_level : float
    rows : tuple of RepresentationScores
        One per (representation, kernel) pair, in the order tried.
    flips : tuple of RankFlip
        One per pair of groups whose order changes (the resolved reversal when there is one).
    background : BackgroundReport or None
        The pixel-background check, when :func:`representation_robustness` was given images.
    """

    groups: Tuple[str, ...]
    group_sizes: Tuple[int, ...]
    n: int
    q: float
    confidence_level: float
    rows: Tuple[RepresentationScores, ...]
    flips: Tuple[RankFlip, ...] = ()
    background: Optional[BackgroundReport] = None

    @property
    def verdict(self) -> str:
        """``"depends"`` (a resolved flip), ``"unresolved"`` (flips inside the intervals) or ``"stable"``."""
        if any(f.resolved for f in self.flips):
            return "depends"
        return "unresolved" if self.flips else "stable"

    @property
    def depends_on(self) -> Optional[str]:
        """What the order of the groups depends on: ``"representation"``, ``"kernel"``, ``"both"`` or None.

        Read from every two rows between which some pair of groups reverses (with both orders
        resolved when any reversal is, see :attr:`verdict`): ``"kernel"`` when changing the kernel
        alone (same representation) reverses an order and changing the representation alone does
        not, ``"representation"`` the other way round, ``"both"`` when each alone does, or only
        rows differing in both choices reverse. None without a reversal.
        """
        resolved = self.verdict == "depends"
        kinds = set()
        for r1, r2 in combinations(self.rows, 2):
            for a, b in combinations(self.groups, 2):
                if r1.order(a, b) * r2.order(a, b) >= 0:
                    continue
                if resolved and not (r1.is_resolved(a, b) and r2.is_resolved(a, b)):
                    continue
                kinds.add(_differs(r1, r2))
        if not kinds:
            return None
        single = kinds - {"both"}  # a change of one choice alone that reverses an order says the most
        return single.pop() if len(single) == 1 else "both"

    def __repr__(self) -> str:
        fields = [(r.label, " > ".join(r.ranking)) for r in self.rows[:6]]
        if len(self.rows) > 6:
            fields.append(("more", f"{len(self.rows) - 6} more representations and kernels"))
        fields.append(("flips", f"{len(self.flips)} ({sum(f.resolved for f in self.flips)} resolved)"))
        title = (f"RobustnessResult(verdict={self.verdict!r}, groups={len(self.groups)}, n={self.n}, "
                 f"q={format_q(self.q)}, rows={len(self.rows)})")
        return short_repr(title, fields)

    def to_frame(self):
        """One row per (group, representation · kernel): VS_q with its interval, and the group's rank.

        Tidy frame (:mod:`diversity_core._display`) with the extra columns ``representation``,
        ``kernel`` and ``rank`` (1 = most diverse under that pair).
        """
        from ._stats import ConfidenceInterval

        rows = []
        for r in self.rows:
            for g in self.groups:
                est, lo, hi = r.estimates[g]
                ci = ConfidenceInterval(lo, hi, level=self.confidence_level, kind="estimate")
                rows.append(frame_row(f"VS_{format_q(self.q)}", est, ci, group=g, q=self.q,
                                      representation=r.representation, kernel=r.kernel,
                                      rank=r.ranking.index(g) + 1))
        return tidy_frame(rows)

    def plot(self, **kwargs):
        """The rank chart the Robustness page and the report draw (:func:`~diversity_core.report.figures.rank_figure`)."""
        require_plotly("RobustnessResult.plot()")
        from .report.figures import rank_figure

        return rank_figure(self, **kwargs)

    def summary(self) -> str:
        """The headline: whether the ranking depends on the representation, the kernel or both (plain text)."""
        qs = format_q(self.q)
        every = f"VS (q = {qs}) of every group at n = {self.n}"
        if len(self.rows) == 1:
            row = self.rows[0]
            return (
                f"Only one representation was scored ({row.label}: {' > '.join(row.ranking)}); "
                "add another to test the ranking."
            )
        if self.verdict == "stable":
            return (
                f"The ranking is the same under all {len(self.rows)} representations and kernels: "
                f"{' > '.join(self.rows[0].ranking)} ({every})."
            )
        on = {
            "representation": "the representation",
            "kernel": "the kernel",
            "both": "the representation and the kernel",
        }[self.depends_on]
        # the example named: a flip of the kind the headline names, resolved when the verdict is
        pool = [f for f in self.flips if f.resolved] or list(self.flips)
        flip = next((f for f in pool if f.differs == self.depends_on), pool[0])
        by_label = {r.label: r for r in self.rows}
        pairs = len(list(combinations(self.groups, 2)))
        resolved = sum(f.resolved for f in self.flips)
        between = _BETWEEN[flip.differs].format(
            rep=by_label[flip.where_higher].representation, kernel=by_label[flip.where_higher].kernel
        )
        if self.verdict == "depends":
            return (
                f"The ranking depends on {on}: {flip.where_higher} ranks "
                f"{' > '.join(by_label[flip.where_higher].ranking)}, {flip.where_lower} ranks "
                f"{' > '.join(by_label[flip.where_lower].ranking)} ({between}; {resolved} of {pairs} pairs of "
                f"groups reverse with both orders resolved at {self.confidence_level:.0%}; {every})."
            )
        return (
            f"The order of {flip.higher} and {flip.lower} changes with {on} "
            f"({flip.where_higher} and {flip.where_lower}: {between}), but within the intervals: no reversal is "
            f"resolved at {self.confidence_level:.0%} ({every})."
        )

    def table(self) -> list:
        """Long-format rows: representation, kernel, group, items, estimate, ci_low, ci_high, rank."""
        rows = []
        sizes = dict(zip(self.groups, self.group_sizes))
        for r in self.rows:
            for rank, g in enumerate(r.ranking, start=1):
                est, lo, hi = r.estimates[g]
                rows.append(
                    {
                        "representation": r.representation,
                        "kernel": r.kernel,
                        "group": g,
                        "items": sizes[g],
                        "estimate": est,
                        "ci_low": lo,
                        "ci_high": hi,
                        "rank": rank,
                    }
                )
        return rows

    def to_dict(self) -> Dict[str, Any]:
        """Plain-Python form with stable keys (JSON-ready through :mod:`diversity_core._json`)."""
        return to_jsonable(
            {
                "groups": list(self.groups),
                "group_sizes": list(self.group_sizes),
                "n": self.n,
                "q": self.q,
                "confidence_level": self.confidence_level,
                "verdict": self.verdict,
                "summary": self.summary(),
                "rows": [r.to_dict() for r in self.rows],
                "flips": [f.to_dict() for f in self.flips],
                "background": None if self.background is None else self.background.to_dict(),
            }
        )


# ---------------------------------------------------------------------------------------------
# the sweep over representations
# ---------------------------------------------------------------------------------------------
def representation_robustness(
    features: Mapping[str, Any],
    groups,
    *,
    kernels=None,
    q=1.0,
    n: Optional[int] = None,
    n_subsamples: int = 30,
    n_resamples: int = 20,
    confidence_level: float = 0.95,
    images=None,
    rng=0,
    progress: Optional[ProgressCallback] = None,
) -> RobustnessResult:
    """Score and rank the groups under every representation and kernel; flag the rank flips.

    Each (representation, kernel) pair is one :func:`~diversity_core.compare.compare` at the
    same n (Vendi score of order q only, no magnitude, no sample-size curve), so every estimate
    averages random n-subsets drawn without replacement and carries its subsampling interval,
    and every pair of groups its resolved/unresolved verdict.

    Parameters
    ----------
    features : dict name -> array-like of shape (N, d)
        One feature matrix per representation (e.g. ``{"pixels": ..., "efficientnet_lite0": ...}``),
        rows aligned with ``groups``. Dense or CSR.
    groups : array-like of shape (N,)
        The group of each item; at least 2 groups of at least 10 items.
    kernels : sequence of str or dict name -> sequence of str, optional
        The kernels tried on every representation, or per representation; default
        :func:`default_kernels` (the featurizer's own kernel and the RBF kernel).
    q : float, default 1.0
        The order of the Vendi score.
    n : int, optional
        The equal number of items; default the smallest group's size.
    n_subsamples, n_resamples : int, default 30, 20
        As :func:`~diversity_core.compare.compare` (fewer than its defaults: one comparison per pair).
    confidence_level : float, default 0.95
    images : ndarray of shape (N, H, W[, C]), optional
        The images behind pixel features: :func:`background_dominance` is then run on them.
    rng : int or numpy.random.Generator, default 0
        One seed for every comparison (the same subsets under every representation).
    progress : callable, optional
        ``progress(done, total, message)``, one step per (representation, kernel) pair.

    Returns
    -------
    RobustnessResult

    Raises
    ------
    DiversityInputError
        No representation, feature matrices of different lengths or not matching ``groups``,
        fewer than 2 groups, a group under 10 items, an unknown kernel (the comparison's checks).

    Notes
    -----
    Cost: one comparison per pair; a feature-map kernel (cosine, linear) on d < n features costs
    O(m d^2) per subset, a kernel without one (rbf) slices one N x N matrix per group and
    decomposes each m x m block (O(m^3)).
    """
    from .compare import compare

    if not features:
        raise DiversityInputError("features must name at least one representation; got none.")
    labels = np.asarray(groups).astype(str)
    features = {
        name: X if hasattr(X, "shape") else np.asarray(X, dtype=np.float64) for name, X in features.items()
    }
    for name, X in features.items():
        if X.shape[0] != labels.shape[0]:
            raise DiversityInputError(
                f"representation {name!r} has {X.shape[0]} rows but groups has {labels.shape[0]} entries; "
                "give every representation the same items, in the same order."
            )
    plan = _kernel_plan(features, kernels)
    q = parse_q(q)
    confidence_level = check_scalar(
        confidence_level, "confidence_level", min_val=0.0, max_val=1.0, include_boundaries="neither"
    )
    seed = int(rng) if isinstance(rng, (int, np.integer)) else int(check_random_state(rng).integers(2**31))
    names = tuple(dict.fromkeys(labels.tolist()))
    index = {g: np.flatnonzero(labels == g) for g in names}
    rows, comparison = [], None
    for step, (rep, kernel) in enumerate(plan):
        # one stage ("scoring the groups"), its detail the pair: a display keeps one phase for all pairs
        report(progress, step, len(plan), f"scoring the groups{DETAIL_SEPARATOR}{rep} · {kernel}")
        X = features[rep]
        comparison = compare(
            {g: X[idx] for g, idx in index.items()},
            kernel=kernel,
            qs=(q,),
            n=n,
            n_subsamples=n_subsamples,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            magnitude=False,
            size_curve=False,
            rng=seed,
        )
        rows.append(_row(comparison, rep, kernel, q))
    report(progress, len(plan), len(plan), "done")
    background = None
    if images is not None:
        background = background_dominance(images, groups=labels)
    return RobustnessResult(
        groups=names,
        group_sizes=tuple(int(index[g].size) for g in names),
        n=comparison.n,
        q=q,
        confidence_level=float(confidence_level),
        rows=tuple(rows),
        flips=_flips(names, rows),
        background=background,
    )


def _kernel_plan(features: Mapping[str, Any], kernels) -> list:
    """``[(representation, kernel), ...]`` in the order tried."""
    from .kernels import KERNELS

    plan = []
    for rep in features:
        if kernels is None:
            ks = default_kernels(rep)
        elif isinstance(kernels, Mapping):
            ks = tuple(kernels.get(rep, default_kernels(rep)))
        else:
            ks = tuple(kernels)
        for k in ks:
            if k not in KERNELS or k == "precomputed":
                valid = ", ".join(repr(name) for name in KERNELS if name != "precomputed")
                raise DiversityInputError(f"unknown kernel {k!r} for {rep!r}; choose among: {valid}.")
            plan.append((rep, k))
    return plan


def _row(comparison, rep: str, kernel: str, q: float) -> RepresentationScores:
    """One representation's estimates, ranking and resolved pairs, read from its comparison."""
    from .compare import score_name

    score = score_name(q)
    estimates = {
        e.group: tuple(np.nan if v is None else float(v)
                       for v in (e.estimate, *(e.confidence_interval or (None, None))))
        for e in comparison.estimates
        if e.score == score
    }
    ranking = tuple(sorted(estimates, key=lambda g: -estimates[g][0]))
    resolved = {
        (p.group_a, p.group_b): p.higher for p in comparison.pairwise if p.score == score and p.resolved
    }
    settings = (
        {k: v for k, v in comparison.settings.get("kernel", {}).items() if v is not None}
        if isinstance(comparison.settings.get("kernel"), dict)
        else {}
    )
    return RepresentationScores(
        representation=rep,
        kernel=kernel,
        estimates=estimates,
        ranking=ranking,
        resolved=resolved,
        kernel_settings=settings,
    )


#: How the headline says what two flipped rankings differ in.
_BETWEEN = {
    "representation": "the same {kernel} kernel on two representations",
    "kernel": "two kernels on the same {rep} features",
    "both": "the representation and the kernel both differ",
}


def _differs(r1: RepresentationScores, r2: RepresentationScores) -> str:
    """``"kernel"``, ``"representation"`` or ``"both"``: what changes from one row to the other."""
    if r1.representation == r2.representation:
        return "kernel"
    return "representation" if r1.kernel == r2.kernel else "both"


def _flips(names: Sequence[str], rows: Sequence[RepresentationScores], differs=_differs) -> Tuple[RankFlip, ...]:
    """One flip per pair of groups whose order changes: a resolved reversal when there is one.

    ``differs(r1, r2)`` names what changes between two rows (the metric agreement's rows pass their own).
    """
    flips = []
    for a, b in combinations(names, 2):
        found = None
        for r1, r2 in combinations(rows, 2):
            o1, o2 = r1.order(a, b), r2.order(a, b)
            if o1 * o2 >= 0:
                continue
            hi, lo = (a, b) if o1 > 0 else (b, a)
            flip = RankFlip(
                higher=hi,
                lower=lo,
                where_higher=r1.label,
                where_lower=r2.label,
                resolved=r1.is_resolved(a, b) and r2.is_resolved(a, b),
                differs=differs(r1, r2),
            )
            if found is None or (flip.resolved and not found.resolved):
                found = flip
            if found.resolved:
                break
        if found is not None:
            flips.append(found)
    return tuple(flips)


# ---------------------------------------------------------------------------------------------
# the background check
# ---------------------------------------------------------------------------------------------
def background_dominance(
    images, *, groups=None, tolerance: float = 0.04, side: int = 32, sample: int = BACKGROUND_SAMPLE, rng=0
) -> BackgroundReport:
    r"""How much of the pixel features' cosine similarity comes from a constant background.

    Each image's background colour is the most common colour of its border pixels (quantised to
    1/32); a pixel is background when every channel is within ``tolerance`` of it (values in
    [0, 1]); two images with different backgrounds share none. The share :math:`\beta` is defined in the module notes.

    Parameters
    ----------
    images : ndarray of shape (N, H, W) or (N, H, W, C), uint8
        ``Dataset.items`` of an image dataset.
    groups : array-like of shape (N,), optional
        Also report the share within each group.
    tolerance : float, default 0.04
        Largest difference from the background colour (per channel, in [0, 1]) of a background pixel.
    side : int, default 32
        Images are read as the ``pixels`` featurizer reads them (resized down to ``side``).
    sample : int, default 400
        Images read at most (a seeded sample; per group when groups are given).
    rng : int or numpy.random.Generator, default 0

    Returns
    -------
    BackgroundReport

    Examples
    --------
    >>> import numpy as np
    >>> white = np.full((20, 8, 8, 3), 255, dtype=np.uint8)
    >>> white[np.arange(20), np.arange(20) % 8, 2] = 0          # one dark pixel each
    >>> r = background_dominance(white)
    >>> r.colour, r.dominated
    ((255, 255, 255), True)
    """
    from .featurizers.images import pixel_features

    a = np.asarray(images)
    if a.ndim not in (3, 4) or a.shape[0] < 2:
        raise DiversityInputError(
            f"images must be an (N, H, W) or (N, H, W, C) array of at least 2 images; got shape {a.shape}."
        )
    gen = check_random_state(rng)
    labels = None if groups is None else np.asarray(groups).astype(str)
    if labels is not None and labels.shape != (a.shape[0],):
        raise DiversityInputError(
            f"groups must have one entry per image ({a.shape[0]}); got shape {labels.shape}."
        )
    if labels is None:
        pick = (
            np.arange(a.shape[0])
            if a.shape[0] <= sample
            else np.sort(gen.choice(a.shape[0], sample, replace=False))
        )
    else:
        parts = []
        for g in dict.fromkeys(labels.tolist()):
            idx = np.flatnonzero(labels == g)
            parts.append(idx if idx.size <= sample else np.sort(gen.choice(idx, sample, replace=False)))
        pick = np.sort(np.concatenate(parts))
    X = pixel_features(a[pick], side=side)
    channels = 1 if a.ndim == 3 else a.shape[3]
    h, w = a.shape[1:3]
    if X.shape[1] != h * w * channels:  # resized to side x side; kept at their own (maybe not square) size otherwise
        h = w = int(side)
    P = X.reshape(len(pick), h, w, channels)
    colours = _border_modes(P)  # each image's own background colour, (m, C)
    mask = np.all(np.abs(P - colours[:, None, None, :]) <= tolerance, axis=3)  # (m, s, s)
    values, counts = np.unique(colours, axis=0, return_counts=True)
    colour = values[np.argmax(counts)]
    M = np.repeat(mask[..., None], channels, axis=3).reshape(len(pick), -1)
    norms = np.linalg.norm(X, axis=1)
    norms[norms == 0] = 1.0
    U = X / norms[:, None]
    B = U * M
    share = _share(U, B)
    group_shares = {}
    if labels is not None:
        sub = labels[pick]
        for g in dict.fromkeys(sub.tolist()):
            rows = sub == g
            if rows.sum() >= 2:
                group_shares[g] = _share(U[rows], B[rows])
    return BackgroundReport(
        share=share,
        background_fraction=float(mask.mean()),
        colour=tuple(int(round(c * 255)) for c in colour),
        dominated=max([share, *group_shares.values()]) >= DOMINANCE,
        group_shares=group_shares,
        sampled=int(len(pick)),
    )


def _border_modes(P: np.ndarray) -> np.ndarray:
    """Each image's most common border colour (quantised to 1/32), as values in [0, 1]; shape (m, C)."""
    border = np.concatenate([P[:, 0], P[:, -1], P[:, 1:-1, 0], P[:, 1:-1, -1]], axis=1)  # (m, 4s - 4, C)
    q = np.round(border * 32).astype(np.int64)
    codes = np.sort((q * (33 ** np.arange(q.shape[2]))).sum(axis=2), axis=1)  # one integer per colour, sorted
    # every row at once (one np.unique per image cost 50 ms of a first page at 1,200 images):
    # in a sorted row, the length of the run so far peaks first at the end of the longest run,
    # the smallest code among equally long runs, as np.unique + argmax would pick
    pos = np.arange(codes.shape[1])
    new_run = np.ones(codes.shape, dtype=bool)
    new_run[:, 1:] = codes[:, 1:] != codes[:, :-1]
    run = pos - np.maximum.accumulate(np.where(new_run, pos, 0), axis=1) + 1
    code = codes[np.arange(codes.shape[0]), np.argmax(run, axis=1)]
    return ((code[:, None] // 33 ** np.arange(P.shape[3])) % 33) / 32.0


def _share(U: np.ndarray, B: np.ndarray) -> float:
    """:math:`\\beta`: off-diagonal sum of the background products over the off-diagonal sum of all."""
    su, sb = U.sum(axis=0), B.sum(axis=0)
    total = su @ su - np.einsum("ij,ij->", U, U)
    background = sb @ sb - np.einsum("ij,ij->", B, B)
    return float(np.clip(background / total, 0.0, 1.0)) if total > 0 else 0.0
