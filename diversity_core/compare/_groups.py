"""Which groups a comparison at n items per group can keep, and the n that works by default.

Every group is scored at the same n (:func:`~diversity_core.compare.compare`), so a group of
fewer than n items cannot take part, and no group of fewer than
:data:`~diversity_core.compare.MIN_ITEMS` items can carry an interval. Real categorical data
(chemical classes, package sections) often hold singletons and many small groups: the rule here
leaves out the groups smaller than n, says which, and picks the n that keeps the most groups.
The Compare and Robustness pages and ``diversity compare`` all call :func:`groups_for_n`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ._api import MIN_ITEMS

__all__ = ["GroupChoice", "groups_for_n", "largest_n"]

#: Left-out groups named in :attr:`GroupChoice.note` (the rest are counted).
NOTE_NAMES = 20


@dataclass(frozen=True)
class GroupChoice:
    """The groups a comparison at ``n`` items per group keeps and leaves out.

    Attributes
    ----------
    n : int
        Items per group.
    kept : tuple of str
        The groups compared (at least 2), in the order given.
    left_out : dict of str to int
        The groups left out for having fewer than ``n`` items, with their sizes.
    rule : str
        How n was chosen, in words.
    """

    n: int
    kept: Tuple[str, ...]
    left_out: Dict[str, int] = field(default_factory=dict)
    rule: str = ""

    @property
    def note(self) -> Optional[str]:
        """One sentence naming the left-out groups (None when none is left out)."""
        if not self.left_out:
            return None
        items = list(self.left_out.items())
        shown = ", ".join(f"{g} ({v})" for g, v in items[:NOTE_NAMES])
        more = f" and {len(items) - NOTE_NAMES} more" if len(items) > NOTE_NAMES else ""
        groups = "group" if len(items) == 1 else "groups"
        return (f"Left out {len(items)} {groups} with fewer than n = {self.n} items (items in brackets): "
                f"{shown}{more}.")

    def to_dict(self) -> dict:
        return {"n": self.n, "kept": list(self.kept), "left_out": dict(self.left_out), "rule": self.rule}


def _sizes(sizes: Mapping[str, int]) -> Dict[str, int]:
    if not isinstance(sizes, Mapping) or not sizes:
        raise DiversityInputError("sizes must map each group's name to its number of items; got none.")
    return {str(g): check_scalar(v, f"size of group {g!r}", int, min_val=0) for g, v in sizes.items()}


def largest_n(sizes: Mapping[str, int], *, leave_out_smaller: bool = True) -> int:
    """The largest n at which at least two groups remain (all groups: the smallest's size).

    Examples
    --------
    >>> largest_n({"a": 1, "b": 40, "c": 25})
    25
    >>> largest_n({"a": 1, "b": 40, "c": 25}, leave_out_smaller=False)
    1
    """
    s = sorted(_sizes(sizes).values(), reverse=True)
    if len(s) < 2:
        raise DiversityInputError(f"a comparison needs at least 2 groups; got {len(s)}.")
    return s[1] if leave_out_smaller else s[-1]


def groups_for_n(sizes: Mapping[str, int], *, n: Optional[int] = None,
                 leave_out_smaller: bool = True) -> GroupChoice:
    """The groups kept for a comparison at n items per group, and the default n that works.

    With ``leave_out_smaller`` (the default) groups of fewer than n items are left out and
    named; the default n is the smallest size of at least
    :data:`~diversity_core.compare.MIN_ITEMS` (10) items among the groups, which keeps every
    group that can carry an interval. Without it every group is kept and the default n is the
    smallest group's size, which must then be at least ``MIN_ITEMS``.

    Parameters
    ----------
    sizes : mapping of str to int
        Items per group, in the order the groups are shown.
    n : int, optional
        Items per group; default as above.
    leave_out_smaller : bool, default True
        Leave out the groups of fewer than n items (else keep all and require n <= the smallest).

    Returns
    -------
    GroupChoice
        ``n``, the ``kept`` groups (at least 2) and the ``left_out`` ones with their sizes.

    Raises
    ------
    DiversityInputError
        Fewer than 2 groups of at least ``MIN_ITEMS`` items (or of at least n items); n below
        ``MIN_ITEMS``; without ``leave_out_smaller``, a group smaller than n or than ``MIN_ITEMS``
        (the message names them and the option that leaves them out).

    Examples
    --------
    >>> c = groups_for_n({"a": 1, "b": 40, "c": 3, "d": 12})
    >>> c.n, c.kept, c.left_out
    (12, ('b', 'd'), {'a': 1, 'c': 3})
    >>> groups_for_n({"a": 1, "b": 40, "c": 3, "d": 12}, n=11).left_out
    {'a': 1, 'c': 3}
    """
    s = _sizes(sizes)
    if len(s) < 2:
        raise DiversityInputError(f"a comparison needs at least 2 groups; got {len(s)}.")
    if not leave_out_smaller:
        return _keep_all(s, n)
    if n is None:
        usable = sorted(v for v in s.values() if v >= MIN_ITEMS)
        if len(usable) < 2:
            raise DiversityInputError(
                f"a comparison needs at least 2 groups of at least {MIN_ITEMS} items (to put an interval on their "
                f"scores); {_count(len(usable))} of these {len(s)} groups {'has' if len(usable) == 1 else 'have'} "
                f"that many (largest: {_largest(s)}). Merge small groups or add items."
            )
        n, rule = usable[0], f"the smallest group of at least {MIN_ITEMS} items"
    else:
        n = check_scalar(n, "n", int, min_val=MIN_ITEMS)
        rule = "given"
    kept = tuple(g for g, v in s.items() if v >= n)
    if len(kept) < 2:
        raise DiversityInputError(
            f"n={n} leaves {'no group' if not kept else '1 group (' + kept[0] + ')'} of at least {n} items; a comparison needs 2 (every "
            f"group is scored at the same n). Use n <= {largest_n(s)}."
        )
    return GroupChoice(n=n, kept=kept, left_out={g: v for g, v in s.items() if v < n}, rule=rule)


def _keep_all(s: Dict[str, int], n: Optional[int]) -> GroupChoice:
    small = {g: v for g, v in s.items() if v < MIN_ITEMS}
    if small:
        raise DiversityInputError(
            f"{len(small)} group{'s' if len(small) > 1 else ''} {'have' if len(small) > 1 else 'has'} fewer than "
            f"{MIN_ITEMS} items ({_listing(small)}); a comparison needs at least {MIN_ITEMS} per group. Leave out "
            "the groups smaller than n (the default)."
        )
    smallest = min(s.values())
    if n is None:
        return GroupChoice(n=smallest, kept=tuple(s), rule="the smallest group")
    n = check_scalar(n, "n", int, min_val=MIN_ITEMS)
    if n > smallest:
        small = {g: v for g, v in s.items() if v < n}
        raise DiversityInputError(
            f"n={n} exceeds {_listing(small)}; every group is scored at the same n, so use n <= {smallest} or "
            "leave out the groups smaller than n."
        )
    return GroupChoice(n=n, kept=tuple(s), rule="given")


def _count(k: int) -> str:
    return "none" if k == 0 else str(k)


def _largest(s: Dict[str, int]) -> str:
    return ", ".join(f"{g} ({v})" for g, v in sorted(s.items(), key=lambda kv: -kv[1])[:3])


def _listing(small: Dict[str, int]) -> str:
    items = list(small.items())
    shown = ", ".join(f"{g}: {v}" for g, v in items[:NOTE_NAMES])
    return shown + (f" and {len(items) - NOTE_NAMES} more" if len(items) > NOTE_NAMES else "")
