"""Issue 27 item 5: galleries and tables show the item itself, wrapped, with the id second.

Image cards keep the distinct end of a long id (cut in the middle, the whole id on hover), text
cards show the text's first lines, molecule cards the SMILES; Curate's table has a text column.
"""

from __future__ import annotations

import numpy as np
from test_app import assert_clean, start

from diversity_core.data import Dataset, load_demo
from ui.gallery import gallery_html, middle, snippet

LONG = "emoji_sets/apple/faces_and_people/crying_face_holding_back_tears.png"


def _html_blocks(at) -> list:
    return [e.proto.body for e in at.get("html")]


def test_image_cards_keep_the_end_of_long_names_and_the_whole_name_on_hover():
    images = np.zeros((2, 8, 8, 1), dtype=np.uint8)
    ds = Dataset(
        name="icons",
        modality="images",
        items=images,
        ids=[LONG, 'a <b>&amp; "quoted" name.png'],
        features=None,
        groups=None,
        weights=None,
    )
    out = gallery_html(ds, [0, 1])
    assert middle(LONG) in out and middle(LONG).endswith("holding_back_tears.png")
    assert middle(LONG).startswith("emoji_sets")  # cut in the middle, not from the left
    assert f'title="{LONG}"' in out  # the full name on hover
    assert "<b>" not in out and "&lt;b&gt;&amp;amp;" in out  # names are text, never markup
    assert out.count("<img ") == 2


def test_text_and_molecule_cards_show_the_item_itself():
    text = load_demo("text")
    out = gallery_html(text, [0])
    first = snippet(text.items[0])
    assert first[:60].replace("'", "&#x27;") in out and 'class="dx-text"' in out
    assert out.index('class="dx-text"') < out.index('class="dx-id"')  # the text first, the id second
    mols = load_demo("molecules")
    out = gallery_html(mols, [3])
    smiles = str(mols.items[3])
    assert f'<div class="dx-main">{smiles}</div>' in out
    assert out.index('class="dx-main"') < out.index('class="dx-id"')


def test_snippet_keeps_first_lines_and_cuts_between_words():
    assert snippet("first line\n\n  second   line ") == "first line\nsecond line"
    cut = snippet("word " * 200, 50)
    assert cut.endswith("…") and len(cut) <= 50 and "wor…" not in cut


def test_curate_table_of_a_text_set_has_the_text_before_the_id():
    at = start({"demo": "text", "n": "200", "seed": "0"})
    at.switch_page("app_pages/8_curate.py").run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "rarity" in d.value.columns)
    cols = list(table.columns)
    assert cols.index("text") < cols.index("id")
    text = load_demo("text")
    row = table.iloc[0]
    assert row["text"] == snippet(text.items[list(text.ids).index(row["id"])])
    # the galleries below it are cards with the texts
    assert any('class="dx-text"' in body for body in _html_blocks(at))


def test_curate_table_of_small_images_has_thumbnails():
    at = start({"demo": "digits", "n": "150", "seed": "1"})
    at.switch_page("app_pages/8_curate.py").run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "rarity" in d.value.columns)
    cols = list(table.columns)
    assert cols.index("image") < cols.index("id")
    assert table["image"].str.startswith("data:image/png;base64,").all()


def test_curate_table_of_molecules_has_the_smiles():
    at = start({"demo": "molecules", "n": "150", "seed": "0"})
    at.switch_page("app_pages/8_curate.py").run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "rarity" in d.value.columns)
    assert "SMILES" in table.columns and table["SMILES"].str.len().min() > 0
    assert any('class="dx-main"' in body for body in _html_blocks(at))


# ------------------------------------------------------------------------------------------
# item 7: q presets and pages from the keyboard (the keys themselves: tests/e2e/test_keyboard_browser.py)
# ------------------------------------------------------------------------------------------
def test_q_preset_buttons_carry_their_keys_and_set_q():
    at = start({"demo": "digits", "n": "200", "seed": "0"})
    presets = {b.key: b for b in at.sidebar.button if b.key and b.key.startswith("q_preset_")}
    assert set(presets) == {"q_preset_0", "q_preset_1", "q_preset_2", "q_preset_I"}
    presets["q_preset_I"].click().run()
    assert_clean(at)
    assert at.session_state["q"] == float("inf")
    at.run()  # a full run: the slider shows the preset
    assert at.sidebar.select_slider(key="q").value == float("inf")
    at.sidebar.button(key="q_preset_2").click().run()
    assert at.session_state["q"] == 2.0


def test_page_buttons_of_the_keyboard_help_open_their_pages():
    at = start({"demo": "digits", "n": "200", "seed": "0"})
    help_text = " ".join(m.value for m in at.sidebar.markdown)
    assert "q presets" in help_text and "Shift" in help_text
    at.sidebar.button(key="go_page_8").click().run()
    assert_clean(at)
    assert any(t.value == "Curate" for t in at.title)
