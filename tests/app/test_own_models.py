"""The app's own-model field (issue 25): ``hf:FOLDER`` is checked, listed and measured like the core."""

from __future__ import annotations

import pytest
from test_app import assert_clean, headline, start

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "of", "and", "to", "in", "is", "it"]


def _tiny_text_model(folder):
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    torch.manual_seed(1)
    transformers.BertModel(
        transformers.BertConfig(
            vocab_size=len(VOCAB),
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=16,
            max_position_embeddings=64,
        ),
        add_pooling_layer=False,  # the mean over tokens: a random tiny pooler gives near-constant features
    ).save_pretrained(folder)
    transformers.BertTokenizer(vocab=str(folder / "vocab.txt")).save_pretrained(folder)


def test_an_own_hf_model_is_checked_listed_and_measured(tmp_path, monkeypatch):
    import diversity_core as dc
    from diversity_core.featurizers import featurize

    _tiny_text_model(tmp_path / "bert")
    monkeypatch.setenv(
        "DIVERSITY_DATA_DIR", str(tmp_path)
    )  # the app reads models inside the data folder only
    at = start({"demo": "text"})
    ds = at.session_state["dataset"]
    at.sidebar.text_input(key="own_model").input("hf:missing-folder").run()
    assert_clean(at)
    shown = [e.value.replace("\\", "") for e in at.error]  # as read: Markdown escapes dropped
    assert any("Cannot use 'hf:missing-folder'" in v and "data folder" in v for v in shown), shown
    at.sidebar.text_input(key="own_model").input("pixels").run()
    assert any("not a model of your own" in e.value for e in at.error)

    at.sidebar.text_input(key="own_model").input("hf:bert").run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    name = f"hf:{(tmp_path / 'bert').resolve()}"
    box = at.sidebar.selectbox(key="featurizer")
    assert box.value == name and name in box.options
    assert at.sidebar.selectbox(key="kernel").value == "cosine"
    X = featurize(ds, name)
    vs = dc.vendi_score(X, kernel="cosine")
    assert vs > 1.1  # features that tell the texts apart, so that the comparison can fail
    assert headline(at).value == f"{vs:.2f}"


def _tiny_vision_model(folder):
    torch.manual_seed(2)
    net = transformers.Dinov2Model(
        transformers.Dinov2Config(
            image_size=16,
            patch_size=8,
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            mlp_ratio=2,
            initializer_range=0.5,  # the default 0.02 gives a tiny random model near-constant CLS tokens
        )
    )
    net.save_pretrained(folder)
    transformers.ViTImageProcessor(size={"height": 16, "width": 16}).save_pretrained(folder)


def test_an_own_vision_model_scores_the_features_of_the_model_called_directly(tmp_path, monkeypatch):
    import numpy as np
    from PIL import Image

    import diversity_core as dc

    _tiny_vision_model(tmp_path / "dinov2")
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(tmp_path))
    at = start({"demo": "digits"})  # the whole demo: the headline is of every item of the dataset
    ds = at.session_state["dataset"]
    at.sidebar.text_input(key="own_model").input("hf:dinov2").run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    name = f"hf:{(tmp_path / 'dinov2').resolve()}"
    assert at.sidebar.selectbox(key="featurizer").value == name
    assert at.sidebar.selectbox(key="kernel").value == "cosine"

    # the model called directly on the dataset's images (grayscale 8 x 8 repeated to RGB), 100 at a time
    net = transformers.Dinov2Model.from_pretrained(tmp_path / "dinov2").eval()
    proc = transformers.AutoImageProcessor.from_pretrained(tmp_path / "dinov2")
    rgb = [Image.fromarray(a[:, :, 0]).convert("RGB") for a in ds.items]
    with torch.no_grad():
        X = np.vstack(
            [
                net(**proc(images=rgb[i : i + 100], return_tensors="pt")).pooler_output.numpy()
                for i in range(0, len(rgb), 100)
            ]
        )
    assert X.shape == (ds.n, 8)
    vs = dc.vendi_score(X, kernel="cosine")
    assert vs > 1.1  # features that tell the images apart, so that the comparison can fail
    assert headline(at).value == f"{vs:.2f}"


def test_a_model_folder_outside_the_data_folder_is_refused_however_it_is_written(tmp_path, monkeypatch):
    # "~/model" is a path, not a hub id: the data-folder rule applies to it like to any other path
    from diversity_core.exceptions import DiversityInputError
    from ui.compute import check_own_model

    home, data = tmp_path / "home", tmp_path / "data"
    data.mkdir()
    home.mkdir()
    _tiny_text_model(home / "model")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DIVERSITY_DATA_DIR", str(data))
    for typed in ("hf:~/model", f"hf:{home / 'model'}", "hf:../home/model"):
        with pytest.raises(DiversityInputError):
            check_own_model(typed)
    monkeypatch.delenv("DIVERSITY_DATA_DIR")
    with pytest.raises(DiversityInputError):  # reading server files turned off: no path at all
        check_own_model("hf:~/model")
