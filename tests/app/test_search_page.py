"""Search and filter in the sidebar (issue 16, item 14): the matched items flow to every page,
as the group filter does, and the link keeps the search."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_app import assert_clean, headline, metric, start

import diversity_core as dc
from diversity_core.data import load_demo
from diversity_core.data.search import contains_mask, scaffold_labels, substructure_mask
from diversity_core.featurizers import featurize


def _vs(ds, kernel: str) -> float:
    return dc.compute_spectrum(featurize(ds), kernel=kernel).vendi(1.0)


def test_a_substring_filters_the_items_every_page_measures():
    text = load_demo("text")
    at = start({"demo": "text"})
    kernel = at.session_state["kernel"]
    assert headline(at).value == f"{_vs(text, kernel):.2f}"
    at.sidebar.text_input(key="search_text").input("dog").run()
    assert_clean(at)
    sub = text.subset(contains_mask(text, "dog"))
    assert sub.n == 98
    assert headline(at).value == f"{_vs(sub, kernel):.2f}"
    assert f"out of **n = {sub.n}**" in headline(at).caption
    assert any(f"{sub.n} of {text.n} items match" in c.value for c in at.sidebar.caption)
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    assert metric(at, "Items loaded").value == str(text.n)
    assert metric(at, "Items selected").value == str(sub.n)
    # the search of an id column, then none: everything again
    at.sidebar.selectbox(key="search_col").set_value("group").run()
    at.sidebar.text_input(key="search_text").input("level 3").run()
    assert metric(at, "Items selected").value == str(int(text.group_indices("captions: human-like (level 3)").size))
    at.sidebar.text_input(key="search_text").input("").run()
    assert metric(at, "Items selected").value == str(text.n)


def test_a_search_opens_from_a_link():
    at = start({"demo": "text", "search_text": "dog"})
    assert at.sidebar.text_input(key="search_text").value == "dog"
    assert "98 items" in at.caption[0].value


@pytest.fixture(scope="module")
def molecules():
    pytest.importorskip("rdkit")
    return load_demo("molecules")


def test_smarts_filter_and_scaffold_groups(molecules):
    at = start({"demo": "molecules", "n": "300", "seed": "0"})
    before = headline(at).value
    at.sidebar.text_input(key="search_smarts").input("c1ccccc1").run()
    assert_clean(at)
    matched = int(substructure_mask(molecules, "c1ccccc1").sum())
    assert any(f"{matched} of {molecules.n} items match" in c.value for c in at.sidebar.caption)
    assert "substructure c1ccccc1" in at.caption[0].value
    assert headline(at).value != before
    # an invalid pattern is named, and the search is set aside (the page still measures)
    at.sidebar.text_input(key="search_smarts").input("c1ccc(").run()
    assert_clean(at)
    assert any("'c1ccc(' is not a valid SMARTS pattern" in e.value for e in at.sidebar.error)
    assert headline(at).value == before
    at.sidebar.text_input(key="search_smarts").input("").run()
    at.sidebar.checkbox(key="search_scaffold").check().run()
    assert_clean(at)
    labels = scaffold_labels(molecules, top=8)
    regrouped = replace(molecules, groups=labels, content_hash="")
    assert at.sidebar.multiselect(key="group_select").options == regrouped.group_names()
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    assert metric(at, "Groups").value == str(len(regrouped.group_names()))
