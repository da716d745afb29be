"""Search and filter the items of a :class:`~diversity_core.data.Dataset`.

Pure functions that return a boolean mask (which items match) or one label per item (a new grouping).

=======================  =====================================================================
function                 what it returns
=======================  =====================================================================
metadata_columns         the columns a dataset can be searched by: ``item`` (text, SMILES),
                         ``id``, ``group``, ``weight``
column_values            one column as strings (``weight`` as numbers)
contains_mask            items whose column contains a substring (case-insensitive by default)
contains_any_mask        items whose text, SMILES, id or group contains a substring (any column)
range_mask               items whose numeric column lies in [low, high]
substructure_mask        molecules that contain a SMARTS pattern (RDKit)
scaffold_labels          each molecule's Bemis-Murcko scaffold (RDKit's ``MurckoScaffold``),
                         the rarest ones pooled, for grouping a set by its chemical series
=======================  =====================================================================

A mask selects with ``dataset.subset(mask)``; labels regroup with
``dataclasses.replace(dataset, groups=labels, content_hash="")``. RDKit is optional and
imported by the functions that need it (:func:`diversity_core._optional.require`).
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import numpy as np

from .._optional import require
from .._validation import check_option, check_scalar
from ..exceptions import DiversityInputError
from ._dataset import Dataset
from .molecules import quiet_rdkit

#: Label of the molecules whose scaffold is empty (no ring: the Bemis-Murcko framework of a chain).
ACYCLIC = "(no ring)"
#: Label of the scaffolds pooled by ``top=`` in :func:`scaffold_labels`.
OTHER = "(other scaffolds)"
#: Label of the items RDKit cannot parse.
UNPARSED = "(not parsed)"


def metadata_columns(dataset: Dataset) -> tuple:
    """The columns :func:`contains_mask` and :func:`range_mask` can search in ``dataset``.

    Parameters
    ----------
    dataset : Dataset

    Returns
    -------
    tuple of str
        ``"item"`` (the text, or the SMILES of molecules) for text and molecules, ``"id"``
        always, ``"group"`` with groups, ``"weight"`` with weights.

    Examples
    --------
    >>> ds = Dataset("d", "text", ["a", "b"], None, None, None, ["line 1", "line 2"])
    >>> metadata_columns(ds)
    ('item', 'id')
    """
    _check_dataset(dataset)
    return _columns(dataset)


def _columns(dataset: Dataset) -> tuple:
    """The searchable columns (unchecked)."""
    out = ["item"] if dataset.modality in ("text", "molecules") else []
    out.append("id")
    if dataset.groups is not None:
        out.append("group")
    if dataset.weights is not None:
        out.append("weight")
    return tuple(out)


def column_values(dataset: Dataset, column: str):
    """One searchable column: a list of str, or a float array for ``"weight"``.

    Parameters
    ----------
    dataset : Dataset
    column : str
        One of :func:`metadata_columns`.

    Returns
    -------
    list of str or ndarray of shape (n,)

    Raises
    ------
    DiversityInputError
        When the dataset has no such column (the message lists those it has).
    """
    _check_dataset(dataset)
    check_option(column, _columns(dataset), "column")
    return _values(dataset, column)


def _values(dataset: Dataset, column: str):
    """The column's values (unchecked)."""
    if column == "item":
        return [str(v) for v in dataset.items]
    if column == "id":
        return [str(v) for v in dataset.ids]
    if column == "group":
        return [str(v) for v in dataset.groups]
    return np.asarray(dataset.weights, dtype=np.float64)


def contains_mask(dataset: Dataset, query: str, *, column: str = "item", case: bool = False) -> np.ndarray:
    """Which items' ``column`` contains ``query`` as a substring.

    Parameters
    ----------
    dataset : Dataset
    query : str
        The substring; an empty query matches every item.
    column : str, default "item"
        One of :func:`metadata_columns` other than ``"weight"`` (text, SMILES, id or group).
    case : bool, default False
        Match case; by default ``"Dog"`` finds ``"dog"``.

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    DiversityInputError
        For an unknown column, or ``"weight"`` (numbers: use :func:`range_mask`).

    Examples
    --------
    >>> ds = Dataset("d", "text", ["A dog", "a cat"], None, None, None, ["1", "2"])
    >>> contains_mask(ds, "DOG").tolist()
    [True, False]
    """
    _check_search(dataset, query)
    check_option(column, _columns(dataset), "column")
    if column == "weight":
        raise DiversityInputError("the weight column holds numbers; filter it with range_mask(low=, high=).")
    return _contains(_values(dataset, column), query, case)


def contains_any_mask(dataset: Dataset, query: str, *, columns: Optional[tuple] = None,
                      case: bool = False) -> np.ndarray:
    """Which items contain ``query`` in any of ``columns`` (a search over everything that is text).

    Parameters
    ----------
    dataset : Dataset
    query : str
        The substring; an empty (or blank) query matches no item.
    columns : tuple of str, optional
        Columns of :func:`metadata_columns` searched; by default every text column the
        dataset has (``"item"`` for text and molecules, ``"id"``, ``"group"``).
    case : bool, default False
        Match case.

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    DiversityInputError
        For an unknown column, ``"weight"``, or a query that is not a string.

    Notes
    -----
    Unlike :func:`contains_mask`, a blank query selects nothing: it is the search of a
    "highlight" box, where nothing typed means nothing to highlight. O(n) per column.

    Examples
    --------
    >>> ds = Dataset("d", "text", ["A dog", "a cat"], None, None, None, ["dogs.txt", "2"])
    >>> contains_any_mask(ds, "DOG").tolist(), contains_any_mask(ds, "cat", columns=("id",)).tolist()
    ([True, False], [False, False])
    """
    _check_search(dataset, query)
    text_columns = tuple(c for c in _columns(dataset) if c != "weight")
    if columns is None:
        columns = text_columns
    for column in columns:
        check_option(column, text_columns, "text column")
    query = query.strip()
    hit = np.zeros(dataset.n, dtype=bool)
    if not query:
        return hit
    for column in dict.fromkeys(columns):
        hit |= _contains(_values(dataset, column), query, case)
    return hit


def _check_search(dataset, query) -> None:
    """The checks every substring search makes: a dataset, and a query that is a string."""
    _check_dataset(dataset)
    if not isinstance(query, str):
        raise DiversityInputError(f"query must be a string; got {type(query).__name__}.")


def _contains(values: list, query: str, case: bool) -> np.ndarray:
    """Substring test of every value (casefold unless ``case``)."""
    if not query:
        return np.ones(len(values), dtype=bool)
    if case:
        return np.fromiter((query in v for v in values), dtype=bool, count=len(values))
    q = query.casefold()
    return np.fromiter((q in v.casefold() for v in values), dtype=bool, count=len(values))


def range_mask(dataset: Dataset, column: str = "weight", *, low: Optional[float] = None,
               high: Optional[float] = None) -> np.ndarray:
    """Which items' numeric ``column`` lies in ``[low, high]`` (a missing bound is open).

    Parameters
    ----------
    dataset : Dataset
    column : {"weight"}, default "weight"
    low, high : float, optional

    Returns
    -------
    ndarray of bool, shape (n,)

    Raises
    ------
    DiversityInputError
        When the dataset has no weights, or ``low > high``.
    """
    _check_dataset(dataset)
    check_option(column, tuple(c for c in _columns(dataset) if c == "weight"), "numeric column")
    if low is not None:
        low = check_scalar(low, "low", float)
    if high is not None:
        high = check_scalar(high, "high", float)
    if low is not None and high is not None and low > high:
        raise DiversityInputError(f"low must not exceed high; got low={low:g} > high={high:g}.")
    v = _values(dataset, column)
    keep = np.ones(v.shape, dtype=bool)
    if low is not None:
        keep &= v >= low
    if high is not None:
        keep &= v <= high
    return keep


def substructure_mask(dataset: Dataset, smarts: str) -> np.ndarray:
    """Which molecules contain the substructure ``smarts`` (RDKit's ``HasSubstructMatch``).

    Parameters
    ----------
    dataset : Dataset
        A molecules dataset (items are SMILES).
    smarts : str
        A SMARTS pattern, e.g. ``"c1ccccc1"`` (a benzene ring) or ``"[NX3;H2]"`` (a primary amine).

    Returns
    -------
    ndarray of bool, shape (n,)
        False for items RDKit cannot parse.

    Raises
    ------
    DiversityInputError
        When the dataset does not hold molecules, or the pattern is not valid SMARTS (the message
        names it).
    MissingDependencyError
        Without RDKit.

    Notes
    -----
    Cost: one SMILES parse and one substructure search per molecule (about 10^4 molecules per
    second).

    Examples
    --------
    >>> ds = Dataset("m", "molecules", ["CCO", "c1ccccc1O"], None, None, None, ["1", "2"])
    >>> substructure_mask(ds, "c1ccccc1").tolist()
    [False, True]
    """
    _check_dataset(dataset)
    _check_molecules(dataset, "a substructure search")
    if not isinstance(smarts, str) or not smarts.strip():
        raise DiversityInputError(f"the SMARTS pattern must be a non-empty string; got {smarts!r}.")
    Chem = require("rdkit.Chem", purpose="substructure search")

    with quiet_rdkit():
        pattern = Chem.MolFromSmarts(smarts.strip())
    if pattern is None:
        raise DiversityInputError(
            f"{smarts!r} is not a valid SMARTS pattern; write atoms in brackets or as SMILES, e.g. 'c1ccccc1' "
            "(benzene) or '[OX2H]' (a hydroxyl)."
        )
    return _substructure(dataset.items, pattern)


def _substructure(smiles: list, pattern) -> np.ndarray:
    """``HasSubstructMatch`` of every parsed SMILES (False when it does not parse)."""
    Chem = require("rdkit.Chem", purpose="substructure search")

    out = np.zeros(len(smiles), dtype=bool)
    with quiet_rdkit():
        for i, s in enumerate(smiles):
            mol = Chem.MolFromSmiles(str(s))
            out[i] = mol is not None and mol.HasSubstructMatch(pattern)
    return out


def scaffold_labels(dataset: Dataset, *, generic: bool = False, top: Optional[int] = None) -> np.ndarray:
    """Each molecule's Bemis-Murcko scaffold, as a SMILES label (for grouping by chemical series).

    The scaffold keeps the ring systems and the linkers between them and drops the side chains
    (Bemis & Murcko, J. Med. Chem. 1996), by RDKit's ``MurckoScaffold``.

    Parameters
    ----------
    dataset : Dataset
        A molecules dataset.
    generic : bool, default False
        Use the generic framework (every atom carbon, every bond single), which pools scaffolds
        differing only in heteroatoms or bond orders.
    top : int, optional
        Keep the ``top`` most frequent scaffolds (ties broken by first appearance) and label the
        rest :data:`OTHER`.

    Returns
    -------
    ndarray of str, shape (n,)
        The scaffold SMILES; :data:`ACYCLIC` for molecules without a ring, :data:`UNPARSED` for
        items RDKit cannot parse.

    Raises
    ------
    DiversityInputError
        When the dataset does not hold molecules, or ``top < 1``.
    MissingDependencyError
        Without RDKit.

    Examples
    --------
    >>> ds = Dataset("m", "molecules", ["Cc1ccccc1", "Oc1ccccc1", "CCO"], None, None, None, ["1", "2", "3"])
    >>> scaffold_labels(ds).tolist()
    ['c1ccccc1', 'c1ccccc1', '(no ring)']
    """
    _check_dataset(dataset)
    _check_molecules(dataset, "scaffold grouping")
    if top is not None:
        top = check_scalar(top, "top", int, min_val=1)
    labels = _scaffolds(dataset.items, bool(generic))
    if top is not None:
        # Counter.most_common keeps first-appearance order among equal counts
        kept = {s for s, _ in Counter(labels).most_common(top)}
        labels = [s if s in kept else OTHER for s in labels]
    return np.asarray(labels, dtype=str)


def _scaffolds(smiles: list, generic: bool) -> list:
    """Bemis-Murcko scaffold SMILES of every item (unchecked)."""
    Chem = require("rdkit.Chem", purpose="scaffold grouping")
    MurckoScaffold = require("rdkit.Chem.Scaffolds.MurckoScaffold", purpose="scaffold grouping")

    out = []
    with quiet_rdkit():
        for s in smiles:
            mol = Chem.MolFromSmiles(str(s))
            if mol is None:
                out.append(UNPARSED)
                continue
            core = MurckoScaffold.GetScaffoldForMol(mol)
            if generic and core.GetNumAtoms():
                core = MurckoScaffold.MakeScaffoldGeneric(core)
            out.append(Chem.MolToSmiles(core) if core.GetNumAtoms() else ACYCLIC)
    return out


def _check_dataset(dataset) -> None:
    """A Dataset, or an error saying what arrived."""
    if not isinstance(dataset, Dataset):
        raise DiversityInputError(f"expected a Dataset; got {type(dataset).__name__}.")


def _check_molecules(dataset: Dataset, what: str) -> None:
    """A molecules dataset, or an error naming its modality."""
    if dataset.modality != "molecules":
        raise DiversityInputError(f"{what} needs a molecules dataset; {dataset.name!r} holds {dataset.modality}.")
