"""Equivalent of ``vendi_score.data_utils``: examples, groups, batches and mode-dropping groups.

Reached as ``vendi.data_utils`` (``from diversity_core.compat.vendi import data_utils``).

Difference from the package: :func:`mode_dropping_groups` draws from a ``numpy`` generator
passed as ``rng`` (never the global ``random`` state), gives the remainder of ``N`` to distinct
categories (group sizes differ by at most one; the package may give one category several extra
items), and raises a clear error when a category has too few examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

from .._validation import check_random_state, check_scalar
from ..exceptions import DiversityInputError

__all__ = ["Example", "Group", "to_batches", "mode_dropping_groups"]


@dataclass
class Example:
    """One item: the raw object ``x``, its named ``features`` and ``labels``."""

    x: Any
    features: Dict[str, Any] = field(default_factory=dict)
    labels: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    """A named list of examples with per-feature results (kernels ``Ks``, weights ``ws``, scores ``vs``)."""

    name: str = ""
    examples: List[Example] = field(default_factory=list)
    metrics: Dict[str, Any] = field(default_factory=dict)
    features: Dict[str, Any] = field(default_factory=dict)
    Ks: Dict[str, Any] = field(default_factory=dict)
    ws: Dict[str, Any] = field(default_factory=dict)
    vs: Dict[str, Any] = field(default_factory=dict)


def to_batches(lst: Sequence, batch_size: int) -> list:
    """Consecutive slices of ``lst`` of length ``batch_size`` (the last one may be shorter).

    Examples
    --------
    >>> to_batches([1, 2, 3, 4, 5], 2)
    [[1, 2], [3, 4], [5]]
    """
    batch_size = check_scalar(batch_size, "batch_size", int, min_val=1)
    return [lst[i : i + batch_size] for i in range(0, len(lst), batch_size)]


def mode_dropping_groups(label_to_examples, categories, N, *, rng=None) -> list:
    """Groups of N examples covering 1, 2, ..., len(categories) categories (the VS paper's mode dropping).

    Group i (named ``i``, an int as in the package) draws ``N // i`` examples without
    replacement from each of the first i categories, and one more from ``N % i`` of them chosen
    at random, so it holds exactly N examples. A diversity metric should grow with i.

    Parameters
    ----------
    label_to_examples : mapping
        Category -> sequence of examples.
    categories : sequence
        The categories, in the order they are added.
    N : int
        Examples per group (>= 1).
    rng : None, int or numpy.random.Generator, optional
        Source of randomness (keyword-only; the package uses the global ``random`` module).

    Returns
    -------
    list of Group
        ``len(categories)`` groups.

    Raises
    ------
    DiversityInputError
        A category is missing from ``label_to_examples`` or has fewer examples than a group
        needs from it.

    Examples
    --------
    >>> groups = mode_dropping_groups({"a": list(range(10)), "b": list(range(10, 20))}, ["a", "b"], 4, rng=0)
    >>> [(g.name, len(g.examples)) for g in groups]
    [(1, 4), (2, 4)]
    """
    N = check_scalar(N, "N", int, min_val=1)
    gen = check_random_state(rng)
    categories = list(categories)
    if not categories:
        raise DiversityInputError("categories is empty; give at least one category.")
    missing = [c for c in categories if c not in label_to_examples]
    if missing:
        raise DiversityInputError(
            f"categories {missing[:5]!r} are not keys of label_to_examples; "
            f"its keys are {list(label_to_examples)[:10]!r}."
        )
    groups = []
    for i in range(1, len(categories) + 1):
        sizes = [N // i] * i
        for j in gen.choice(i, size=N - sum(sizes), replace=False):
            sizes[int(j)] += 1
        group = Group(i, [])
        for size, cat in zip(sizes, categories):
            pool = list(label_to_examples[cat])
            if size > len(pool):
                raise DiversityInputError(
                    f"group {i} needs {size} examples of category {cat!r}, which has only {len(pool)}; "
                    "lower N or add examples."
                )
            group.examples += [pool[int(k)] for k in gen.choice(len(pool), size=size, replace=False)]
        groups.append(group)
    return groups
