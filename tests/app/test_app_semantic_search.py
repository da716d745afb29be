"""The Projection page's search by meaning (issue 42, item 9) under ``AppTest``.

A tiny random CLIP saved in the data folder is typed into the box; a text query shows the core's
best matches (``diversity_core.search``) as a gallery with their cosine similarities, in order, and
"Keep only these" selects them on every page; an item finds its most similar items. Without a
model the box says which checkpoint to give and what to install, and "find similar" still works in
the page's features.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import diversity_core as dc
from diversity_core.data import load_demo

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "app_pages/6_projection.py"
DEMO, N, SEED, TOP = "shapes", 60, 1, 8


def _tiny_clip(folder: Path) -> None:
    """A tiny CLIPModel with a byte-level BPE tokenizer of single letters and a CLIP image processor."""
    folder.mkdir(parents=True)
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    torch.manual_seed(5)
    transformers.CLIPModel(transformers.CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        vision_config=dict(image_size=16, patch_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                           num_attention_heads=2),
        projection_dim=6,
    )).save_pretrained(folder)
    transformers.CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    transformers.CLIPImageProcessor(size={"shortest_edge": 16},
                                    crop_size={"height": 16, "width": 16}).save_pretrained(folder)


def _start() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"demo": DEMO, "n": str(N), "seed": str(SEED)})
    at.run()
    at.switch_page(PAGE).run()
    _clean(at)
    return at


def _clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def _view():
    """The page's items: the demo's seeded subsample, and its rows in the loaded dataset."""
    ds = load_demo(DEMO)
    rows = np.sort(np.random.default_rng(SEED).choice(ds.n, size=N, replace=False))
    return ds.subset(rows), rows


def _gallery(at: AppTest, sub) -> tuple:
    """The ids shown in the meaning box's gallery, in order, and the cosines under them."""
    body = " ".join(h.proto.body for h in at.get("html") if "cos " in h.proto.body)
    cosines = [float(v) for v in re.findall(r"cos (-?\d+\.\d+)", body)]
    places = sorted((body.find(f">{html.escape(i)}<"), i) for i in sub.ids if f">{html.escape(i)}<" in body)
    return [i for _, i in places], cosines


def test_a_text_query_shows_the_cores_matches_and_selects_them(tmp_path, monkeypatch):
    _tiny_clip(tmp_path / "clip")
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(tmp_path))  # the app reads models inside the data folder only
    at = _start()
    at.radio(key="meaning_mode").set_value("Text").run()
    _clean(at)
    assert any("CLIPModel.save_pretrained" in i.value and "diversity-explorer[hf]" in i.value for i in at.info)

    at.text_input(key="meaning_model_text").input("hf:clip").run()
    _clean(at)
    name = f"hf:{(tmp_path / 'clip').resolve()}"
    assert at.selectbox(key="meaning_model").value == name
    assert at.selectbox(key="meaning_model").options == ["hf:clip"]  # named inside the data folder, no server path
    at.text_input(key="meaning_query").input("a red car").run()
    _clean(at)
    sub, rows = _view()
    expected = dc.search(sub, "a red car", model=name, top_k=TOP)
    shown, cosines = _gallery(at, sub)
    assert shown == list(expected.ids)  # the core's ranking, in its order
    np.testing.assert_allclose(cosines, expected.scores, atol=6e-4)  # shown with 3 decimals
    assert np.all(np.diff(expected.scores) < 0)  # distinct scores: the order can be checked
    assert any("in hf:clip's space" in m.value.replace("\\", "") for m in at.markdown)  # Markdown escapes dropped
    assert not any(str(tmp_path) in m.value for m in at.markdown)

    at.radio(key="meaning_mode").set_value("Similar to an item").run()
    at.number_input(key="meaning_item").set_value(3).run()
    _clean(at)
    similar = dc.search(sub, 3, model=name, top_k=TOP)
    assert _gallery(at, sub)[0] == list(similar.ids)

    at.radio(key="meaning_mode").set_value("Text").run()
    [keep] = [b for b in at.button if b.key == "proj_meaning_sel_restrict"]
    assert keep.label == f"Keep only these {TOP}"
    keep.click().run()
    _clean(at)
    from ui.data import SELECTION_KEY

    selection = at.session_state[SELECTION_KEY]
    assert selection.mode == "restrict" and selection.rows == tuple(sorted(rows[expected.indices].tolist()))


def test_without_a_model_an_item_finds_similar_items_in_the_pages_features(monkeypatch, tmp_path):
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(tmp_path))
    at = _start()
    at.text_input(key="meaning_model_text").input("hf:no-such-folder").run()
    assert any("Cannot use 'hf:no-such-folder'" in e.value.replace("\\", "") for e in at.error)
    at.text_input(key="meaning_model_text").input("").run()
    at.radio(key="meaning_mode").set_value("Similar to an item").run()
    at.number_input(key="meaning_item").set_value(5).run()
    _clean(at)
    sub, _ = _view()
    featurizer = at.session_state["featurizer"]
    expected = dc.search(sub, 5, featurizer=featurizer, top_k=TOP)
    shown, cosines = _gallery(at, sub)
    assert shown == list(expected.ids)
    np.testing.assert_allclose(cosines, expected.scores, atol=6e-4)
