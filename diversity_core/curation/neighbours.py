"""The nearest neighbours of a few items under the kernel: what a click on a map opens."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._json import to_jsonable
from ..exceptions import DiversityInputError
from ._common import KernelRows, check_count, prepare, readonly

__all__ = ["nearest_items", "Neighbours"]


@dataclass(frozen=True)
class Neighbours:
    """The ``k`` items most similar to each query item, most similar first.

    Attributes
    ----------
    items : ndarray of shape (m,)
        The query items (rows of X).
    indices : ndarray of shape (m, k)
        ``indices[a]`` are the neighbours of ``items[a]`` (itself excluded).
    similarities : ndarray of shape (m, k)
        The kernel values ``k(x_items[a], x_indices[a, b])``.
    kernel : str
        The kernel's name.
    """

    items: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    similarities: np.ndarray = field(repr=False)
    kernel: str = ""

    def to_frame(self, ids=None):
        """One row per item and neighbour: ``item``, ``rank`` (1: most similar), ``neighbour``, ``similarity``.

        With ``ids`` (one per row of X) the table adds ``id`` and ``neighbour_id``.
        """
        import pandas as pd

        m, k = self.indices.shape
        table = pd.DataFrame(
            {
                "item": np.repeat(self.items, k),
                "rank": np.tile(np.arange(1, k + 1), m),
                "neighbour": self.indices.ravel(),
                "similarity": self.similarities.ravel(),
            }
        )
        if ids is not None:
            ids = np.asarray(ids, dtype=object)
            table.insert(1, "id", ids[table["item"].to_numpy()])
            table.insert(4, "neighbour_id", ids[table["neighbour"].to_numpy()])
        return table

    def to_dict(self) -> dict:
        """Plain-Python form with stable keys."""
        return to_jsonable(
            {
                "items": self.items,
                "indices": self.indices,
                "similarities": self.similarities,
                "kernel": self.kernel,
            }
        )


def nearest_items(X, items, *, k: int = 8, kernel="cosine", **kernel_params) -> Neighbours:
    """The ``k`` items most similar to each of ``items`` under the kernel, exactly.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d), or (n, n) with ``kernel="precomputed"``
    items : int or sequence of int
        Rows of X whose neighbours are wanted (``m`` of them).
    k : int, default 8
        Neighbours per item, at most ``n - 1`` (an item is not its own neighbour).
    kernel : str or Kernel, default "cosine"
    **kernel_params
        The kernel's parameters (e.g. ``bandwidth``).

    Returns
    -------
    Neighbours
        Sorted by decreasing similarity, ties by the smaller index.

    Raises
    ------
    DiversityInputError
        Bad features, an item outside ``[0, n)``, or ``k`` outside ``[1, n - 1]``.

    Notes
    -----
    One block of ``m`` kernel rows: O(m n d) time and O(m n) memory, so a click on a map of
    a million items answers in a fraction of a second. Exact copies of an item are its
    nearest neighbours (similarity 1 under a normalised kernel).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    >>> nearest_items(X, 0, k=1).indices.tolist()
    [[1]]
    """
    kern, X = prepare(X, kernel, kernel_params)
    n = int(X.shape[0])
    query = np.atleast_1d(np.asarray(items))
    if query.ndim != 1 or query.size == 0 or not np.issubdtype(query.dtype, np.integer):
        raise DiversityInputError(f"items must be one or more integer rows of X; got {items!r}.")
    if query.min() < 0 or query.max() >= n:
        bad = query[(query < 0) | (query >= n)]
        raise DiversityInputError(f"items must be rows of X in [0, {n}); got {bad[:5].tolist()}.")
    if n < 2:
        raise DiversityInputError(f"nearest_items needs at least 2 items; got {n}.")
    k = check_count(k, "k", low=1, high=n - 1, what="the number of other items")
    return _nearest(KernelRows(kern, X), query.astype(np.intp), k, getattr(kern, "name", str(kernel)))


def _nearest(rows: KernelRows, query: np.ndarray, k: int, name: str) -> Neighbours:
    S = rows.block(query)
    S[np.arange(query.size), query] = -np.inf  # an item is not its own neighbour
    n = S.shape[1]
    part = np.argpartition(S, n - k, axis=1)[:, n - k :]
    vals = np.take_along_axis(S, part, axis=1)
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    sim = np.take_along_axis(vals, order, axis=1)
    out = (query.copy(), idx, sim)
    readonly(*out)
    return Neighbours(*out, kernel=name)
