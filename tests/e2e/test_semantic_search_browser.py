"""The Projection page's search by meaning in the real browser (issue 42, item 9).

A server whose data folder holds a tiny random CLIP (saved here; nothing is downloaded): the
checkpoint's folder is typed into the box, then a text query; the best matches appear as a gallery
with their cosine similarities, and "Keep only these" selects them on every page. The screenshot
lands in ``test-artifacts/text_search.png``.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import ARTIFACTS, _server
from test_browser import assert_no_traceback, open_page, wait_idle

pytestmark = pytest.mark.e2e

N, SEED, TOP = 120, 1, 8
SCREENSHOT = ARTIFACTS.parent / "text_search.png"


def _tiny_clip(folder) -> None:
    """A tiny CLIPModel with a byte-level BPE tokenizer of single letters and a CLIP image processor."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
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


@pytest.fixture(scope="module")
def clip_app_url(tmp_path_factory):
    """A server whose data folder holds the tiny CLIP (``hf:clip``)."""
    folder = tmp_path_factory.mktemp("clip-data")
    _tiny_clip(folder / "clip")
    before = os.environ.get("DIVERSITY_DATA_DIR")
    os.environ["DIVERSITY_DATA_DIR"] = str(folder)
    try:
        with _server("streamlit_text_search.log") as url:
            yield url
    finally:
        if before is None:
            os.environ.pop("DIVERSITY_DATA_DIR", None)
        else:
            os.environ["DIVERSITY_DATA_DIR"] = before


def _type(page, label: str, text: str) -> None:
    box = page.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Enter")
    wait_idle(page)


def test_text_search_shows_the_matches_and_selects_them(page, clip_app_url):
    open_page(page, f"{clip_app_url}/projection?demo=shapes&n={N}&seed={SEED}")
    page.get_by_text("Search by meaning: a text, an image, or similar to an item").click()
    page.get_by_text("Text and image queries need", exact=False).first.wait_for()
    assert "CLIPModel.save_pretrained" in page.locator('[data-testid="stMain"]').inner_text()
    _type(page, "CLIP model (hf:FOLDER)", "hf:clip")
    _type(page, "Look for", "a red circle")
    cards = page.locator(".dx-card", has_text="cos ")
    cards.first.wait_for(timeout=60_000)
    assert cards.count() == TOP
    assert_no_traceback(page)
    page.get_by_text("best matches", exact=False).first.scroll_into_view_if_needed()
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    page.get_by_role("button", name=f"Keep only these {TOP}").click()
    wait_idle(page)
    page.get_by_text(f"Restricted to {TOP} selected items", exact=False).first.wait_for(timeout=30_000)  # sidebar
    assert_no_traceback(page)
