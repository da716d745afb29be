"""The RND training split a scored set allows: the paper's 200 items when it fits, and which groups are too small.

The paper trains every run on k = 200 items (Appendix A.3 of the RND paper) and validates on the
rest; :func:`~diversity_core.rnd.rnd_score` keeps at least
:data:`~diversity_core.rnd.MIN_VALIDATION` items for validation. The rule here applies that to
the set that is actually scored: all the items when they are scored pooled, each group when
groups are scored on their own (then one k that fits every group, the smallest's: scores are
comparable only under one setting).
"""

from __future__ import annotations

from typing import Mapping, Optional

from .._validation import check_scalar
from ..exceptions import DiversityInputError
from ._api import MIN_VALIDATION, PAPER_PRESET
from ._regime import MIN_TRAIN_SIZE

__all__ = ["default_train_size", "rnd_small_groups_warning", "PAPER_TRAIN_SIZE", "TRAIN_FLOOR"]

#: The paper's training split ("Training number: 200", Appendix A.3).
PAPER_TRAIN_SIZE: int = int(PAPER_PRESET["train_size"])
#: The fewest training items the default ever proposes (a set too small for it fails in rnd_score).
TRAIN_FLOOR = 10


def _sizes(sizes) -> dict:
    """``{name: items}`` from a mapping, or ``{"all": n}`` from one number of items."""
    if isinstance(sizes, Mapping):
        out = {str(k): check_scalar(v, f"size of group {k!r}", int, min_val=0) for k, v in sizes.items()}
    else:
        out = {"all": check_scalar(sizes, "n_items", int, min_val=0)}
    if not out:
        raise DiversityInputError("sizes must name at least one set of items; got none.")
    return out


def default_train_size(sizes, *, per_group: bool = False) -> int:
    r"""Training items per RND run for the set that is scored: the paper's 200 when it fits.

    .. math::

        k = \max\bigl(10, \min(200, n - 50)\bigr)

    with :math:`n` the items of the scored set: all the items (``per_group=False``, the pooled
    set) or the smallest group (``per_group=True``: every group scored under one k, since RND
    scores are comparable only under one setting). 200 is the paper's training number
    (Appendix A.3 of [1]); 50 is :data:`~diversity_core.rnd.MIN_VALIDATION`, the validation
    items :func:`~diversity_core.rnd.rnd_score` keeps.

    Parameters
    ----------
    sizes : int or mapping of str to int
        The number of items of one set, or the items per group.
    per_group : bool, default False
        Groups scored on their own (the smallest group sets k) or pooled (their sum does).

    Returns
    -------
    int
        k, at least 10 (a set of fewer than 60 items cannot be scored with it: rnd_score says so).

    Raises
    ------
    DiversityInputError
        No sizes, or a negative or non-integer size.

    Notes
    -----
    Below :data:`~diversity_core.rnd.MIN_TRAIN_SIZE` (100, the paper's smallest split) the gap
    is large for any data ([1], Appendix A.4): :func:`rnd_small_groups_warning` names the groups
    where that happens, and :func:`~diversity_core.rnd.rnd_regime_warning` flags such a k.

    References
    ----------
    .. [1] "A Flexible Measurement of Diversity in Datasets with Random Network Distillation",
       Appendix A.3 (training number 200) and A.4 (training/validation split).

    Examples
    --------
    >>> default_train_size({"a": 79, "b": 1050})  # pooled: 1,129 items
    200
    >>> default_train_size({"a": 79, "b": 1050}, per_group=True)  # the smallest group's 79
    29
    """
    n = _sizes(sizes)
    scored = min(n.values()) if per_group else sum(n.values())
    return _train_size(scored)


def _train_size(n: int) -> int:
    return int(max(TRAIN_FLOOR, min(PAPER_TRAIN_SIZE, n - MIN_VALIDATION)))


def rnd_small_groups_warning(sizes, *, per_group: bool = True) -> Optional[str]:
    """A message naming the scored sets too small for a meaningful RND score, or None.

    A set is too small when it cannot hold :data:`~diversity_core.rnd.MIN_TRAIN_SIZE` training
    items (the paper's smallest split) plus :data:`~diversity_core.rnd.MIN_VALIDATION`
    validation items: with fewer training items the generalisation gap is large "for any
    dataset, diverse or not" (Appendix A.4 of the RND paper), so the score says little about
    diversity.

    Parameters
    ----------
    sizes : int or mapping of str to int
        The number of items of one set, or the items per group.
    per_group : bool, default True
        Judge each group (scored on its own) or their pooled sum.

    Returns
    -------
    str or None

    Examples
    --------
    >>> rnd_small_groups_warning({"a": 79, "b": 1050}, per_group=False) is None
    True
    >>> "a (79 items)" in rnd_small_groups_warning({"a": 79, "b": 1050})
    True
    """
    n = _sizes(sizes)
    need = MIN_TRAIN_SIZE + MIN_VALIDATION
    if not per_group:
        n = {"all the items": sum(n.values())}
    small = {g: v for g, v in n.items() if v < need}
    if not small:
        return None
    shown = ", ".join(f"{g} ({v} items)" for g, v in list(small.items())[:12])
    more = f" and {len(small) - 12} more" if len(small) > 12 else ""
    k = _train_size(min(n.values()))
    return (
        f"Too small for a meaningful RND score: {shown}{more}. A run needs at least {MIN_TRAIN_SIZE} training "
        f"items (the paper's smallest split; it uses {PAPER_TRAIN_SIZE}) and {MIN_VALIDATION} validation items, "
        f"{need} in all; with fewer training items (here {k}) the generalisation gap is large for any data, "
        "diverse or not. Score the items pooled, or leave the small groups out."
    )
