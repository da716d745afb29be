"""diversity_core.data.search: masks and labels over a Dataset (substring, range, SMARTS, scaffolds)."""

from __future__ import annotations

import numpy as np
import pytest

from diversity_core.data import Dataset
from diversity_core.data.search import (
    ACYCLIC,
    OTHER,
    UNPARSED,
    column_values,
    contains_mask,
    metadata_columns,
    range_mask,
    scaffold_labels,
    substructure_mask,
)
from diversity_core.exceptions import DiversityInputError


def _text() -> Dataset:
    return Dataset("t", "text", ["A red Dog", "a cat", "the dog barks", "Birds"], None,
                   np.array(["pets", "pets", "pets", "wild"]), np.array([1.0, 0.5, 2.0, 0.0]),
                   ["line 1", "line 2", "line 3", "line 4"])


def _molecules() -> Dataset:
    smiles = ["Cc1ccccc1", "Oc1ccccc1", "CCO", "O=C(O)c1ccc2ccccc2c1", "c1ccc(Cc2ccncc2)cc1", "CCN"]
    return Dataset("m", "molecules", smiles, None, None, None, [f"row {i}" for i in range(len(smiles))])


def test_columns_follow_what_the_dataset_holds():
    assert metadata_columns(_text()) == ("item", "id", "group", "weight")
    emb = Dataset("e", "embeddings", None, np.zeros((2, 3)), None, None, ["a", "b"])
    assert metadata_columns(emb) == ("id",)
    assert column_values(_text(), "group") == ["pets", "pets", "pets", "wild"]
    with pytest.raises(DiversityInputError, match=r"unknown column 'item'; choose one of: 'id'"):
        column_values(emb, "item")


def test_substring_is_case_insensitive_unless_asked():
    ds = _text()
    assert contains_mask(ds, "dog").tolist() == [True, False, True, False]
    assert contains_mask(ds, "dog", case=True).tolist() == [False, False, True, False]
    assert contains_mask(ds, "").all()
    assert contains_mask(ds, "WILD", column="group").tolist() == [False, False, False, True]
    assert contains_mask(ds, "line 2", column="id").tolist() == [False, True, False, False]
    with pytest.raises(DiversityInputError, match="holds numbers; filter it with range_mask"):
        contains_mask(ds, "1", column="weight")
    with pytest.raises(DiversityInputError, match="query must be a string; got int"):
        contains_mask(ds, 3)


def test_range_of_weights_is_closed_and_checked():
    ds = _text()
    assert range_mask(ds, low=0.5, high=1.0).tolist() == [True, True, False, False]
    assert range_mask(ds, high=0.0).tolist() == [False, False, False, True]
    with pytest.raises(DiversityInputError, match="low must not exceed high; got low=2 > high=1"):
        range_mask(ds, low=2, high=1)
    with pytest.raises(DiversityInputError, match="unknown numeric column 'weight'"):
        range_mask(_molecules())


def test_smarts_substructure_and_its_errors():
    pytest.importorskip("rdkit")
    ds = _molecules()
    assert substructure_mask(ds, "c1ccccc1").tolist() == [True, True, False, True, True, False]
    assert substructure_mask(ds, "[OX2H]").tolist() == [False, True, True, True, False, False]
    assert substructure_mask(ds, "n").tolist() == [False, False, False, False, True, False]
    with pytest.raises(DiversityInputError, match=r"'c1ccc\(' is not a valid SMARTS pattern"):
        substructure_mask(ds, "c1ccc(")
    with pytest.raises(DiversityInputError, match="non-empty string"):
        substructure_mask(ds, "  ")
    with pytest.raises(DiversityInputError, match="needs a molecules dataset; 't' holds text"):
        substructure_mask(_text(), "c")


def test_bemis_murcko_scaffolds_group_a_series():
    pytest.importorskip("rdkit")
    ds = _molecules()
    labels = scaffold_labels(ds)
    assert labels.tolist() == ["c1ccccc1", "c1ccccc1", ACYCLIC, "c1ccc2ccccc2c1", "c1ccc(Cc2ccncc2)cc1", ACYCLIC]
    top = scaffold_labels(ds, top=2)
    assert top.tolist() == ["c1ccccc1", "c1ccccc1", ACYCLIC, OTHER, OTHER, ACYCLIC]
    generic = scaffold_labels(ds, generic=True)
    assert generic[4] == "C1CCC(CC2CCCCC2)CC1"  # the pyridine ring becomes a generic six-ring
    bad = Dataset("b", "molecules", ["C1CC", "c1ccccc1"], None, None, None, ["1", "2"])
    assert scaffold_labels(bad).tolist() == [UNPARSED, "c1ccccc1"]
    with pytest.raises(DiversityInputError, match="top must be an integer >= 1"):
        scaffold_labels(ds, top=0)


def test_a_mask_and_labels_feed_the_dataset():
    from dataclasses import replace

    pytest.importorskip("rdkit")
    ds = _molecules()
    sub = ds.subset(substructure_mask(ds, "c1ccccc1"))
    assert sub.n == 4
    regrouped = replace(ds, groups=scaffold_labels(ds, top=2), content_hash="")
    assert regrouped.group_names()[:1] and regrouped.content_hash != ds.content_hash
