"""Issue 41 item 9 on the Curate page: every near-duplicate group can be seen and downloaded, the counts
take the right number ("1 group"), no text points at a table that is not there, and the page says what
the selected-items download holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_app import assert_clean, start

PAGE = "app_pages/8_curate.py"
GROUPS_PER_PAGE = 12


def _curate_with(monkeypatch, n_pairs: int, n_single: int = 40, d: int = 32):
    """The Curate page on an uploaded embedding table: ``n_pairs`` exact duplicate pairs among random rows."""
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(41)
    base = rng.normal(size=(n_pairs + n_single, d))
    rows = np.vstack([base, base[:n_pairs]])
    lines = [",".join(f"f{j}" for j in range(d))] + [",".join(f"{v:.6f}" for v in r) for r in rows]
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("table.csv", ("\n".join(lines) + "\n").encode()).run()
    assert_clean(at)
    at.switch_page(PAGE).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    return at


def _texts(at) -> list:
    return [e.value.replace("\\", "").replace("**", "") for e in (*at.markdown, *at.caption)]


def _group_captions(at) -> list:
    return [t for t in _texts(at) if t.startswith("Group ") and "the first is kept" in t]


def test_every_duplicate_group_can_be_seen_and_downloaded(monkeypatch):
    """Before: galleries of the first 12 groups only, a caption pointing at "the table above" that
    did not exist, and nothing to download the groups with."""
    at = _curate_with(monkeypatch, n_pairs=20)
    texts = _texts(at)
    assert any("20 groups hold 40 items" in t and "drops 20 items" in t for t in texts), texts
    assert not [t for t in texts if "table above" in t]
    table = [d.value for d in at.dataframe if "representative" in d.value.columns]
    assert len(table) == 1 and table[0]["duplicate group"].nunique() == 20 and len(table[0]) == 40
    csv = [b for b in at.get("download_button") if "Duplicate groups (CSV" in b.proto.label]
    assert len(csv) == 1 and "20 groups" in csv[0].proto.label
    assert _group_captions(at)[0].startswith("Group 0 ") and len(_group_captions(at)) == GROUPS_PER_PAGE
    page = at.selectbox(key="curate_dup_page")
    assert page.options == ["groups 1-12 of 20", "groups 13-20 of 20"]
    page.set_value(1).run()
    assert_clean(at)
    shown = _group_captions(at)
    assert len(shown) == 20 - GROUPS_PER_PAGE and shown[-1].startswith("Group 19 ")


def test_one_group_is_one_group_and_the_download_is_said(monkeypatch):
    """Before: "**1** groups hold **2** items"."""
    at = _curate_with(monkeypatch, n_pairs=1)
    texts = _texts(at)
    assert any("1 group holds 2 items" in t and "drops 1 item." in t for t in texts), texts
    assert not [t for t in texts if "1 groups" in t or "1 items" in t]
    assert not [s for s in at.selectbox if s.key == "curate_dup_page"]  # one page: no box to page with
    assert [c for c in _group_captions(at) if c.startswith("Group 0 · 2 items")]
    # embeddings have no item file: the page says the CSV is what there is
    assert any("Embeddings have no item file" in t for t in texts), texts


# ---------------------------------------------------------------------------------------------
# item 12: the presentation layout's headline is the core's ranking; its pairwise table has no raw index
# ---------------------------------------------------------------------------------------------
def test_presentation_ranks_with_the_cores_text_and_labels_its_pairwise_rows(monkeypatch):
    """Before: the resolved pairs' table showed the frame's row numbers (0, 2, 5, ...) as its index."""
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(3)
    lines = [",".join(f"f{j}" for j in range(6)) + ",group"]
    for k in range(4):
        for row in rng.normal(size=(40, 6)):
            row[k + 1:] = 0.0  # group k varies in k + 1 dimensions
            lines.append(",".join(f"{3 + v:.5f}" for v in row) + f",g{k}")
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("group").run()
    at.sidebar.file_uploader(key="upload").upload("table.csv", ("\n".join(lines) + "\n").encode()).run()
    assert_clean(at)
    for key, value in {"cmp_presentation": "true", "cmp_nsub": "2", "cmp_nres": "3", "cmp_nmag": "3",
                       "cmp_qs": ["1"]}.items():
        at.query_params[key] = value
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    texts = _texts(at)
    # the core's ranking text (ranking(cmp).text()): the four groups once each, most diverse first
    found = [t for t in texts if "pairs resolved at the 95% level on" in t]
    assert found and len(set(found)) == 1, found
    line = found[0]
    chain = line.split(" (")[0].split(";")[0]
    assert sorted(chain.replace(" ≈ ", " > ").split(" > ")) == ["g0", "g1", "g2", "g3"], line
    assert chain.startswith("g3") and chain.index("g2") < chain.index("g1") < chain.index("g0"), line
    tables = [t.value for t in at.table if "difference" in t.value.columns]
    assert tables, [list(t.value.columns) for t in at.table]
    for table in tables:
        assert table.index.name == "score" and not pd.api.types.is_integer_dtype(table.index)
