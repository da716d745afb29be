"""The Curate page under ``AppTest``: it runs on the digits demo, its item table has one row per
item, and the selection it offers for download is the core's ``select_diverse``."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from diversity_core.curation import find_duplicates, item_contributions, select_diverse
from diversity_core.data import list_demos, load_demo
from diversity_core.featurizers import featurize

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/8_curate.py"
N = 150
SEED = 1


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture
def downloads(monkeypatch):
    """The data of every ``st.download_button`` drawn, by key (the button itself still runs).

    Data given as a callable (written only on a click) is called here, as the click would;
    ``seen["deferred"]`` names those buttons.
    """
    seen: dict = {"deferred": set()}
    original = DeltaGenerator.download_button

    def record(self, label, data, *args, **kwargs):
        if callable(data):
            seen["deferred"].add(kwargs.get("key"))
        seen[kwargs.get("key")] = data() if callable(data) else data
        return original(self, label, data, *args, **kwargs)

    # buttons drawn in columns call the DeltaGenerator method, not st.download_button
    monkeypatch.setattr(DeltaGenerator, "download_button", record)
    return seen


def view_features():
    """The digits view the page works on (``n=N``, ``seed=SEED``) and its default features."""
    ds = load_demo("digits")
    idx = np.sort(np.random.default_rng(SEED).choice(ds.n, size=N, replace=False))
    sub = ds.subset(idx)
    return sub, featurize(sub)


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    """The one table drawn with ``column`` (st.dataframe elements carry no key in AppTest)."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def open_page(downloads) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": "digits", "n": str(N), "seed": str(SEED)})
    at.run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    return at


def test_curate_page_runs_and_matches_the_core(downloads):
    at = open_page(downloads)
    sub, X = view_features()
    kernel = at.session_state["kernel"] or "cosine"
    q = float(at.session_state["q"])
    assert at.title[0].value == "Curate"

    table = frame_with(at, "rarity")
    assert len(table) == N
    assert list(table["id"]) == [str(i) for i in sub.ids]
    contrib = item_contributions(X, kernel=kernel, q=q)
    col = [c for c in table.columns if c.startswith("contribution")][0]
    np.testing.assert_allclose(table[col].to_numpy(float), contrib.contribution(q), rtol=1e-9, atol=1e-12)
    dup = find_duplicates(X, kernel=kernel)
    assert table["duplicate group"].notna().sum() == dup.n_in_groups

    k, method = 17, "kcenter"
    at.slider(key="curate_k").set_value(k)
    at.radio(key="curate_method").set_value(method)
    at.number_input(key="curate_seed").set_value(3)
    at.run()
    assert_clean(at)
    csv = pd.read_csv(io.BytesIO(downloads["curate_csv"]))
    expected = select_diverse(X, k, kernel=kernel, method=method, rng=3)
    assert len(csv) == k
    assert list(csv["item"]) == expected.indices.tolist()
    assert list(csv["id"].astype(str)) == [str(sub.ids[i]) for i in expected.indices]
    assert list(csv["rank"]) == list(range(1, k + 1))
    shown = frame_with(at, "rank")
    assert list(shown["item"]) == expected.indices.tolist()
    # the curves of the three methods are drawn
    assert len(at.get("plotly_chart")) >= 1


def test_curate_page_greedy_default(downloads):
    at = open_page(downloads)
    _, X = view_features()
    kernel = at.session_state["kernel"] or "cosine"
    csv = pd.read_csv(io.BytesIO(downloads["curate_csv"]))
    expected = select_diverse(X, 50, kernel=kernel, method="greedy", rng=0)
    assert list(csv["item"]) == expected.indices.tolist()


@pytest.mark.parametrize("demo", list_demos())
def test_curate_page_runs_on_each_demo(demo, downloads):
    """Every demo (images, shapes, molecules under Tanimoto, text n-grams): no error, one row per item,
    a CSV download, and the file of the selected items (text lines, a SMILES file, a zip of PNGs)."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": demo, "n": "120", "seed": "1"})
    at.run()
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert len(frame_with(at, "rarity")) == 120
    assert len(pd.read_csv(io.BytesIO(downloads["curate_csv"]))) == 50
    items = downloads["curate_items"]
    assert "curate_items" in downloads["deferred"]  # the file is written on a click, not on every rerun
    if demo == "text":
        assert items.decode("utf-8").count("\n") == 50
    elif demo == "molecules":
        lines = items.decode("utf-8").splitlines()
        assert len(lines) == 50 and all("\t" in line for line in lines)
    else:  # images: a zip of 50 PNG files
        import zipfile

        with zipfile.ZipFile(io.BytesIO(items)) as zf:
            names = zf.namelist()
            assert len(names) == 50 and all(n.endswith(".png") for n in names)
            assert zf.read(names[0])[:8] == b"\x89PNG\r\n\x1a\n"
