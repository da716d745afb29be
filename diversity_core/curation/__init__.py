"""Curation: from a diversity number to what to do about it.

Where things live
-----------------
contributions   :func:`item_contributions`: each item's contribution to VS_q, exact
                leave-one-out or its first-order form, dense or dual path
duplicates      :func:`find_duplicates`: near-duplicate groups (kernel threshold or distance),
                representatives, and VS_q / IntDiv with the duplicates removed
neighbours      :func:`nearest_items`: the k items most similar to a few items (a click on a map)
rarity          :func:`rarity_scores`: one minus the mean similarity to the k nearest neighbours
selection       :func:`select_diverse`, :func:`compare_selections`: most-diverse subsets of size
                k (greedy VS_2 or log-determinant, k-centre and random baselines) with their
                VS_q curves against k
results         the frozen result types, each with ``to_dict()`` and ``to_frame(ids=...)``

The formulas, costs and defaults are in ``docs/curation.md``.
"""

from .contributions import item_contributions
from .duplicates import DEFAULT_THRESHOLDS, default_threshold, find_duplicates
from .neighbours import Neighbours, nearest_items
from .rarity import rarity_scores
from .results import ContributionResult, DuplicateResult, RarityResult, SelectionComparison, SelectionResult
from .selection import compare_selections, select_diverse

__all__ = [
    "item_contributions",
    "find_duplicates",
    "default_threshold",
    "DEFAULT_THRESHOLDS",
    "rarity_scores",
    "nearest_items",
    "Neighbours",
    "select_diverse",
    "compare_selections",
    "ContributionResult",
    "DuplicateResult",
    "RarityResult",
    "SelectionResult",
    "SelectionComparison",
]
