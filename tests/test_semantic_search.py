"""Text-to-image search and "find similar" (issue 42, item 9): ``diversity_core.search`` and ``diversity search``.

A tiny random CLIP (both towers, a byte-level BPE tokenizer written here, an image processor) is
saved to a temporary folder and loaded through the same code as a user's folder; its rankings
are checked against the model called directly. Nothing is downloaded or shipped.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.cli import main
from diversity_core.data import Dataset, load_dataset
from diversity_core.exceptions import DiversityInputError
from diversity_core.semantic_search import SearchResult, query_kind

PROJECTION = 6
SIDE = 16
QUERIES = ["a red car", "blue sky", "green"]


def _tiny_clip_tokenizer_files(folder) -> dict:
    """A minimal byte-level BPE vocabulary (single letters, with and without the end-of-word mark), no merges."""
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return vocab


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A tiny CLIPModel (image and text towers projected to PROJECTION dimensions) with its processors."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("hf-clip") / "clip"
    folder.mkdir()
    vocab = _tiny_clip_tokenizer_files(folder)
    torch.manual_seed(42)
    config = transformers.CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        vision_config=dict(image_size=SIDE, patch_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                           num_attention_heads=2),
        projection_dim=PROJECTION,  # not the towers' own default (512): the dual config's size must be kept
    )
    transformers.CLIPModel(config).save_pretrained(folder)
    transformers.CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt")).save_pretrained(folder)
    transformers.CLIPImageProcessor(
        size={"shortest_edge": SIDE}, crop_size={"height": SIDE, "width": SIDE}
    ).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def image_folder(tmp_path_factory):
    """Twelve PNG images in two groups (sub-folders), and their pixel arrays in row order."""
    from PIL import Image

    root = tmp_path_factory.mktemp("search-images") / "images"
    rng = np.random.default_rng(42)
    arrays = {}
    for group, tint in (("red", (200, 30, 30)), ("blue", (30, 30, 200))):
        (root / group).mkdir(parents=True)
        for k in range(6):
            a = np.clip(rng.normal(tint, 60, size=(20, 20, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(a).save(root / group / f"{k}.png")
            arrays[f"{group}/{k}.png"] = a
    ds = load_dataset(root)
    return root, ds, np.stack([arrays[i] for i in ds.ids])


def _direct(folder, arrays, texts=()):
    """Image and text embeddings of the CLIPModel called directly (get_image_features / get_text_features)."""
    import torch
    import transformers
    from PIL import Image

    net = transformers.CLIPModel.from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    proc = transformers.AutoImageProcessor.from_pretrained(folder)

    def tensor(out):
        return (out if isinstance(out, torch.Tensor) else out.pooler_output).numpy().astype(np.float64)

    with torch.no_grad():
        images = tensor(net.get_image_features(**proc(images=[Image.fromarray(a) for a in arrays],
                                                       return_tensors="pt")))
        words = [tensor(net.get_text_features(**tok([t], return_tensors="pt")))[0] for t in texts]
    return images, np.array(words)


def _ranking(items, query):
    """Indices by decreasing cosine, and the cosines (the reference computation)."""
    items = items / np.linalg.norm(items, axis=1, keepdims=True)
    s = items @ (query / np.linalg.norm(query))
    return np.argsort(-s, kind="stable"), s


def _distinct(scores):
    gaps = np.diff(np.sort(scores))
    assert gaps.min() > 1e-4, "near-ties: the ranking check would not be meaningful"


# ------------------------------------------------------------------------------------------
# text, image and item queries against the model called directly
# ------------------------------------------------------------------------------------------
def test_text_queries_rank_the_images_as_the_model_called_directly(clip, image_folder):
    _, ds, arrays = image_folder
    images, texts = _direct(clip, arrays, QUERIES)
    for query, vector in zip(QUERIES, texts):
        order, s = _ranking(images, vector)
        _distinct(s)
        result = dc.search(ds, query, model=f"hf:{clip}", top_k=None)
        np.testing.assert_array_equal(result.indices, order)
        np.testing.assert_allclose(result.scores, s[order], atol=1e-5)
        assert result.ids == tuple(ds.ids[i] for i in order) and result.kind == "text"
        assert result.groups == tuple(ds.groups[i] for i in order)
    top = dc.search(ds, QUERIES[0], model=f"hf:{clip}", top_k=4)
    assert len(top) == 4 and top.n_items == ds.n


def test_a_second_search_embeds_only_its_query(clip, image_folder, monkeypatch):
    from diversity_core.featurizers import hf

    _, ds, _ = image_folder
    dc.search(ds, "first", model=f"hf:{clip}")
    sizes = []
    embed = hf.HFEncoder.embed

    def counting(self, items, **kw):
        items = list(items)
        sizes.append(len(items))
        return embed(self, items, **kw)

    monkeypatch.setattr(hf.HFEncoder, "embed", counting)
    dc.search(ds, "second query", model=f"hf:{clip}")
    assert sizes == [1]  # the images' embeddings came from the feature cache


def test_the_dual_checkpoint_as_a_featurizer_gives_the_projected_image_embeddings(clip, image_folder):
    _, ds, arrays = image_folder
    X = dc.featurize(ds, f"hf:{clip}")
    images, _ = _direct(clip, arrays)
    assert X.shape == (ds.n, PROJECTION)
    np.testing.assert_allclose(X, images, rtol=1e-5, atol=1e-6)


def test_an_image_query_as_array_or_bytes(clip, image_folder):
    from PIL import Image

    _, ds, arrays = image_folder
    images, _ = _direct(clip, arrays)
    rng = np.random.default_rng(7)
    query = rng.integers(0, 256, size=(24, 24, 3), dtype=np.uint8)
    q_direct, _ = _direct(clip, [query])
    order, s = _ranking(images, q_direct[0])
    result = dc.search(ds, query, model=f"hf:{clip}", top_k=None)
    np.testing.assert_array_equal(result.indices, order)
    np.testing.assert_allclose(result.scores, s[order], atol=1e-5)
    buf = io.BytesIO()
    Image.fromarray(query).save(buf, format="PNG")
    from_bytes = dc.search(ds, buf.getvalue(), model=f"hf:{clip}", top_k=None)
    np.testing.assert_array_equal(from_bytes.indices, order)
    assert from_bytes.kind == "image"
    # an item of the set as the query: itself first, at cosine 1
    same = dc.search(ds, arrays[5], model=f"hf:{clip}", top_k=2)
    assert same.indices[0] == 5 and same.scores[0] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(DiversityInputError, match="cannot be read as an image"):
        dc.search(ds, b"not an image", model=f"hf:{clip}")


def test_find_similar_in_the_models_space_leaves_the_item_out(clip, image_folder):
    _, ds, arrays = image_folder
    images, _ = _direct(clip, arrays)
    order, s = _ranking(images, images[3])
    order = order[order != 3]
    result = dc.search(ds, 3, model=f"hf:{clip}", top_k=None)
    np.testing.assert_array_equal(result.indices, order)
    np.testing.assert_allclose(result.scores, s[order], atol=1e-5)
    assert result.n_items == ds.n - 1 and "item 3" in result.query


def test_find_similar_needs_no_model():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 5))
    ds = Dataset("emb", "embeddings", X, X, None, None, [f"e{i}" for i in range(30)])
    result = dc.search(ds, 7, top_k=5)
    order, s = _ranking(X, X[7])
    order = order[order != 7][:5]
    np.testing.assert_array_equal(result.indices, order)
    np.testing.assert_allclose(result.scores, s[order], rtol=1e-12)
    assert result.space == "embeddings" and result.scores.dtype == np.float64
    # sparse features (the n-gram featurizer of a text set)
    text = dc.load_demo("text").subset(np.arange(60))
    F = dc.featurize(text, "ngram").toarray()
    order, s = _ranking(F, F[4])
    result = dc.search(text, 4, top_k=None)
    assert result.space == "ngram"
    assert 4 not in result.indices and sorted(result.indices) == sorted(set(range(60)) - {4})
    np.testing.assert_allclose(result.scores, s[result.indices], atol=1e-12)  # each item's own cosine ...
    np.testing.assert_allclose(result.scores, np.sort(np.delete(s, 4))[::-1], atol=1e-12)  # ... best first


# ------------------------------------------------------------------------------------------
# without a model, and bad input
# ------------------------------------------------------------------------------------------
def test_without_a_model_the_message_says_what_to_give_and_install(image_folder):
    _, ds, arrays = image_folder
    for query in ("a red car", arrays[0]):
        with pytest.raises(DiversityInputError, match=r"model='hf:FOLDER'.*CLIPModel\.save_pretrained.*\[hf\]"):
            dc.search(ds, query)
    with pytest.raises(DiversityInputError, match="was not found"):
        dc.search(ds, "a red car", model="hf:/no/such/clip")
    with pytest.raises(DiversityInputError, match="model must be 'hf:'"):
        dc.search(ds, "a red car", model="clip")
    # the substring search needs no model
    from diversity_core.data.search import contains_any_mask

    assert contains_any_mask(ds, "red").sum() == 6


def test_a_single_tower_is_refused_for_text(tmp_path, image_folder):
    transformers = pytest.importorskip("transformers")
    _, ds, arrays = image_folder
    pytest.importorskip("torch").manual_seed(3)
    tower = transformers.CLIPVisionModelWithProjection(transformers.CLIPVisionConfig(
        image_size=SIDE, patch_size=8, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
        num_attention_heads=2, projection_dim=4))
    tower.save_pretrained(tmp_path / "vision")
    transformers.CLIPImageProcessor(size={"shortest_edge": SIDE},
                                    crop_size={"height": SIDE, "width": SIDE}).save_pretrained(tmp_path / "vision")
    with pytest.raises(DiversityInputError, match="encodes images only.*CLIPModel.save_pretrained"):
        dc.search(ds, "a red car", model=f"hf:{tmp_path / 'vision'}")
    # an image or an item needs no text tower: any vision encoder ranks them in its own space
    X = dc.featurize(ds, f"hf:{tmp_path / 'vision'}").astype(np.float64)
    order, s = _ranking(X, X[2])
    _distinct(s)
    result = dc.search(ds, 2, model=f"hf:{tmp_path / 'vision'}", top_k=None)
    np.testing.assert_array_equal(result.indices, order[order != 2])
    assert dc.search(ds, arrays[2], model=f"hf:{tmp_path / 'vision'}", top_k=1).indices[0] == 2


def test_queries_are_checked(image_folder):
    _, ds, _ = image_folder
    assert [query_kind(q) for q in (3, np.int64(2), "x", b"..", np.zeros((4, 4)))] == [
        "item", "item", "text", "image", "image"]
    for bad, match in ((True, "text, an item index or an image"), (2.5, "got float"), ("  ", "empty"),
                       ([1, 2], "got list")):
        with pytest.raises(DiversityInputError, match=match):
            dc.search(ds, bad)
    with pytest.raises(DiversityInputError, match="item 12 is out of range.*rows 0 to 11"):
        dc.search(ds, 12)
    with pytest.raises(DiversityInputError, match="top_k"):
        dc.search(ds, 1, top_k=0)
    text = Dataset("t", "text", ["a", "b", "c"], None, None, None, ["1", "2", "3"])
    with pytest.raises(DiversityInputError, match="rank images, but 't' holds text"):
        dc.search(text, "a red car", model="hf:/anything")
    with pytest.raises(DiversityInputError, match="H x W or H x W x C"):
        dc.search(ds, np.zeros((2, 3, 4, 3)), model="hf:/anything")


def test_the_result_shows_itself_briefly():
    X = np.random.default_rng(0).normal(size=(500, 4))
    ds = Dataset("emb", "embeddings", X, X, None, None, [f"e{i}" for i in range(500)])
    result = dc.search(ds, 0, top_k=None)
    assert isinstance(result, SearchResult)
    text = repr(result)
    assert len(text.splitlines()) <= 10 and "top 499 of 499" in text and len(text) < 600
    frame = result.to_frame()
    assert list(frame.columns) == ["rank", "index", "id", "score"] and len(frame) == 499
    assert frame["score"].is_monotonic_decreasing and "<table" in result._repr_html_()
    assert result.to_dict()["results"][0]["index"] == int(result.indices[0])


# ------------------------------------------------------------------------------------------
# the CLI
# ------------------------------------------------------------------------------------------
def test_cli_search_prints_the_ranking(clip, image_folder, capsys):
    root, ds, arrays = image_folder
    images, texts = _direct(clip, arrays, ["a red car"])
    order, _ = _ranking(images, texts[0])
    assert main(["search", str(root), "--query", "a red car", "--model", f"hf:{clip}", "--top", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[3:]]
    assert [int(r[1]) for r in rows] == order[:3].tolist()
    assert [r[2] for r in rows] == [ds.ids[i] for i in order[:3]]
    assert main(["search", str(root), "--item", "0", "--format", "json", "--top", "2"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["kind"] == "item" and len(payload["results"]) == 2


@pytest.mark.parametrize("argv, match", [
    (["--query", "a red car"], "needs a model"),
    (["--item", "99"], "out of range"),
    (["--query", "x", "--top", "0"], "--top must be a positive integer"),
    (["--image", "/no/such.png", "--model", "hf:/x"], "is not a file"),
])
def test_cli_search_bad_input_exits_2_with_one_line(image_folder, capsys, argv, match):
    root, _, _ = image_folder
    assert main(["search", str(root), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("diversity: error:") and match in err and len(err.splitlines()) == 1
