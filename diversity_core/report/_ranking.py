"""The groups of a comparison ranked on one score, with the resolved steps between neighbours.

One place for the ranking text: the report's summary and the Compare page's presentation layout
both read it from :func:`ranking` (``A > B ≈ C``), instead of listing every resolved pair (8
groups have 28 pairs; the summary of issue 41 listed 22 of them per score).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from ..compare import Comparison
from ..exceptions import DiversityInputError

__all__ = ["STEP_LEGEND", "Ranking", "headline_score", "ranking"]

#: What the two signs between neighbours of a ranking mean.
STEP_LEGEND = ("'>' between neighbours: their difference is resolved (its interval excludes 0); "
               "'≈': it is not")


@dataclass(frozen=True)
class Ranking:
    """The groups with an estimate of one score, most to least diverse, and the steps between them.

    Attributes
    ----------
    score : str
    rows : tuple of (str, ScoreEstimate)
        ``(group, estimate)``, largest estimate first (groups without one, e.g. a MagDiff
        reference, are left out).
    steps : tuple of bool
        ``steps[i]``: whether ``rows[i]`` is resolved above ``rows[i + 1]``.
    resolved : tuple of (str, str)
        Every resolved pair as ``(higher, lower)``, in the comparison's order.
    n_pairs : int
        Pairs of groups compared on this score.
    level : float
        The confidence level of the intervals.
    """

    score: str
    rows: tuple
    steps: tuple
    resolved: tuple
    n_pairs: int
    level: float

    @property
    def groups(self) -> list:
        """The groups, most to least diverse."""
        return [g for g, _e in self.rows]

    @property
    def beyond_steps(self) -> list:
        """Resolved pairs with no resolved step between them in the ranking (``A ≈ B ≈ C`` but ``A > C``)."""
        place = {g: i for i, g in enumerate(self.groups)}
        out = []
        for hi, lo in self.resolved:
            a, b = sorted((place.get(hi, -1), place.get(lo, -1)))
            if a >= 0 and not any(self.steps[a:b]):
                out.append((hi, lo))
        return sorted(out, key=lambda pair: (place[pair[0]], place[pair[1]]))

    def text(self, name: Callable[[str], str] = str) -> str:
        """``"A > B ≈ C ≈ D; also B > D"``: the ranking with its steps (``name`` writes a group's name, e.g. escaped)."""
        if not self.rows:
            return ""
        parts = [name(self.rows[0][0])]
        for step, (g, _e) in zip(self.steps, self.rows[1:]):
            parts.append((" > " if step else " ≈ ") + name(g))
        below: dict = {}
        for hi, lo in self.beyond_steps:  # grouped by the higher group, in ranking order
            below.setdefault(hi, []).append(lo)
        also = "; ".join(f"{name(hi)} > {', '.join(name(lo) for lo in los)}" for hi, los in below.items())
        return "".join(parts) + (f"; also {also}" if also else "")

    def count_text(self) -> str:
        """``"3 of 28 pairs resolved at the 95% level"``."""
        return (f"{len(self.resolved)} of {self.n_pairs} pair{'' if self.n_pairs == 1 else 's'} resolved "
                f"at the {self.level:.0%} level")


def headline_score(cmp: Comparison) -> str:
    """The score a comparison leads with: VS at q = 1 when computed, else its first score."""
    return "VS_1" if "VS_1" in cmp.scores else cmp.scores[0]


def ranking(cmp: Comparison, score: Optional[str] = None) -> Ranking:
    """The groups of ``cmp`` ranked on ``score``, with the resolved steps between neighbours.

    Parameters
    ----------
    cmp : Comparison
    score : str, optional
        One of ``cmp.scores`` (default: :func:`headline_score`).

    Returns
    -------
    Ranking

    Raises
    ------
    DiversityInputError
        ``cmp`` is not a Comparison, or ``score`` is not one of its scores.
    """
    if not isinstance(cmp, Comparison):
        raise DiversityInputError(f"ranking needs a Comparison; got {type(cmp).__name__}.")
    score = headline_score(cmp) if score is None else score
    if score not in cmp.scores:
        raise DiversityInputError(f"score {score!r} is not in this comparison; choose one of: {', '.join(cmp.scores)}.")
    return _ranking(cmp, score)


def _ranking(cmp: Comparison, score: str) -> Ranking:
    found = {e.group: e for e in cmp.estimates if e.score == score and e.estimate is not None}
    rows = sorted(((g, found[g]) for g in cmp.groups if g in found), key=lambda r: r[1].estimate, reverse=True)
    pairs = [p for p in cmp.pairwise if p.score == score]
    verdict = {frozenset((p.group_a, p.group_b)): p for p in pairs}
    steps = []
    for (a, _ea), (b, _eb) in zip(rows, rows[1:]):
        p = verdict.get(frozenset((a, b)))
        steps.append(bool(p is not None and p.resolved and p.higher == a))
    resolved = tuple((p.higher, p.group_b if p.higher == p.group_a else p.group_a) for p in pairs if p.resolved)
    return Ranking(score=score, rows=tuple(rows), steps=tuple(steps), resolved=resolved, n_pairs=len(pairs),
                   level=float(cmp.confidence_level))
