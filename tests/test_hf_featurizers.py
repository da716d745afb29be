"""Featurizers from the user's own checkpoints (issue 25): ``hf:PATH`` and ``inception:FILE``.

Tiny random models are built here, saved to a temporary folder and loaded through the same code
as a user's; nothing is downloaded or shipped.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import diversity_core as dc  # noqa: E402
from diversity_core.data import load_dataset  # noqa: E402
from diversity_core.exceptions import DiversityInputError  # noqa: E402
from diversity_core.featurizers import (  # noqa: E402
    default_kernel,
    featurize,
    featurizer_version,
    get_featurizer,
    kernel_support,
    resolve_featurizer,
)
from diversity_core.featurizers.hf import hf_found_locally, pooled_output  # noqa: E402

TEXTS = ["the cat sat", "a dog", "the dog sat on a cat", "cat", "a cat and the dog sat", "dog dog dog"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "a", "sat", "on", "and"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny DINOv2 (pooler_output: the layer-normalised CLS token) and a tiny BERT saved without its
    pooler (mean over the mask), with an image processor and a tokenizer made from a vocabulary file."""
    root = tmp_path_factory.mktemp("hf-models")
    torch.manual_seed(0)
    vision = transformers.Dinov2Model(
        transformers.Dinov2Config(
            image_size=16,
            patch_size=8,
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            mlp_ratio=2,
        )
    )
    vision.save_pretrained(root / "dinov2")
    transformers.ViTImageProcessor(size={"height": 16, "width": 16}).save_pretrained(root / "dinov2")
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = transformers.BertTokenizer(
        vocab=str(root / "vocab.txt")
    )  # transformers 5: vocab= takes the file
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=len(VOCAB),
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=16,
            max_position_embeddings=32,
        ),
        add_pooling_layer=False,
    )
    bert.save_pretrained(root / "bert")
    tokenizer.save_pretrained(root / "bert")
    return root


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    rng = np.random.default_rng(25)
    a = rng.integers(0, 256, size=(7, 20, 20, 3), dtype=np.uint8)
    path = tmp_path_factory.mktemp("hf-images") / "images.npy"
    np.save(path, a)
    return a, path


def _direct_vision(folder, arrays):
    from PIL import Image

    net = transformers.AutoModel.from_pretrained(folder).eval()
    proc = transformers.AutoImageProcessor.from_pretrained(folder)
    with torch.no_grad():
        return np.vstack(
            [
                net(**proc(images=[Image.fromarray(a)], return_tensors="pt")).pooler_output.numpy()
                for a in arrays
            ]
        )


def _direct_text(folder, texts):
    net = transformers.AutoModel.from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    rows = []
    with torch.no_grad():
        for t in texts:  # one text at a time: no padding, the mean over every token
            rows.append(net(**tok([t], return_tensors="pt")).last_hidden_state[0].mean(0).numpy())
    return np.vstack(rows)


def test_vision_and_text_features_equal_the_model(models, images, tmp_path):
    arrays, path = images
    X = featurize(load_dataset(path), f"hf:{models / 'dinov2'}", batch_size=3)
    assert X.shape == (7, 8) and X.dtype == np.float32
    direct = _direct_vision(models / "dinov2", arrays)
    np.testing.assert_allclose(X, direct, rtol=1e-5, atol=1e-5)
    assert direct.std(axis=0).min() > 1e-2  # the images differ in these features: the check can fail

    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    ds = load_dataset(tmp_path / "t.txt")
    T = featurize(ds, f"hf:{models / 'bert'}", batch_size=4)  # padded batches: the mask keeps the mean exact
    direct = _direct_text(models / "bert", ds.items)
    np.testing.assert_allclose(T, direct, rtol=1e-5, atol=1e-5)
    assert len(set(map(tuple, direct.round(4)))) == len(TEXTS)  # the tokenizer tells the texts apart


def test_registry_handles_parameterised_names(models, images):
    name = f"hf:{models / 'dinov2'}"
    ds = load_dataset(images[1])
    assert resolve_featurizer(ds, name) == name and default_kernel(name) == "cosine"
    assert kernel_support(name, "tanimoto") is not None and kernel_support(name, "rbf") is None
    spec = get_featurizer(name)
    assert (spec.modality, spec.persist, spec.kernel) == ("images", True, "cosine")
    assert get_featurizer(f"hf:{models / 'bert'}").modality == "text"
    assert hf_found_locally(name) and not hf_found_locally(f"hf:{models / 'nothing'}")
    with pytest.raises(
        DiversityInputError,
        match="is for text, but 'images.npy' holds images; .*or hf:<folder> of a model that encodes images",
    ):
        featurize(ds, f"hf:{models / 'bert'}")
    with pytest.raises(DiversityInputError, match="unknown parameter"):
        featurize(ds, name, side=3)


def test_version_follows_the_weights(models, tmp_path):
    import shutil

    folder = tmp_path / "dinov2"
    shutil.copytree(models / "dinov2", folder)
    before = featurizer_version(f"hf:{folder}")
    assert "transformers" in before and "config" in before
    st = (folder / "model.safetensors").stat()
    os.utime(folder / "model.safetensors", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert featurizer_version(f"hf:{folder}") != before


def test_missing_model_says_what_to_do(images, tmp_path):
    ds = load_dataset(images[1])
    with pytest.raises(DiversityInputError, match="not found: no folder of that name.*--allow-download"):
        featurize(ds, "hf:no-such-org/no-such-model-25")
    with pytest.raises(DiversityInputError, match="holds no config.json"):
        featurize(ds, f"hf:{tmp_path}")
    with pytest.raises(DiversityInputError, match="of the form hf:PATH"):
        featurize(ds, "hf:")


def test_pooling_falls_back_to_cls_for_vision():
    from types import SimpleNamespace

    h = torch.arange(24.0).reshape(2, 3, 4)
    out = SimpleNamespace(last_hidden_state=h, pooler_output=None)
    assert torch.equal(pooled_output(out, modality="images"), h[:, 0])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    np.testing.assert_allclose(pooled_output(out, mask, modality="text")[0], h[0, :2].mean(0))


def test_cli_featurizer_hf_and_the_store(models, images, tmp_path, capsys, monkeypatch):
    from diversity_core.cli import main
    from diversity_core.featurizers import clear_cache, hf

    arrays, path = images
    argv = [
        "--cache-dir",
        str(tmp_path / "store"),
        "score",
        str(path),
        "--featurizer",
        f"hf:{models / 'dinov2'}",
        "--q",
        "1",
        "2",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)["results"][0]
    spec = dc.compute_spectrum(_direct_vision(models / "dinov2", arrays))
    for q in ("1", "2"):
        assert row["vendi"][q] == pytest.approx(spec.vendi(float(q)), rel=1e-5)
    # a second run reads the features from the result store: the model is not run again
    clear_cache()

    def refuse(*args, **kwargs):
        raise AssertionError("the features were computed again instead of read from the store")

    monkeypatch.setattr(hf, "hf_features", refuse)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["vendi"] == row["vendi"]


def test_cli_missing_model_and_allow_download(images, monkeypatch, capsys):
    from diversity_core.cli import main
    from diversity_core.featurizers import hf

    path = images[1]
    assert main(["score", str(path), "--featurizer", "hf:no-such-org/no-such-model-25"]) == 2
    err = capsys.readouterr().err
    assert "--allow-download" in err and len(err.strip().splitlines()) == 1
    seen = []

    def fake_model(name, *, allow_download=False):
        seen.append(allow_download)
        raise DiversityInputError("stop here")

    monkeypatch.setattr(hf, "hf_model", fake_model)
    assert main(["score", str(path), "--allow-download", "--featurizer", "hf:org/model"]) == 2
    assert main(["score", str(path), "--featurizer", "hf:org/model"]) == 2
    assert seen == [True, False]


def _inception_weights(path):
    from diversity_core.featurizers.inception import build_fid_inception

    torch.manual_seed(3)
    net = build_fid_inception()
    for m in net.modules():  # random batch-norm statistics, so that every block matters
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    torch.save(net.state_dict(), path)
    return net


def test_inception_from_a_weights_file(images, tmp_path):
    from diversity_core.featurizers.inception import _prepare

    arrays, path = images
    net = _inception_weights(tmp_path / "fid.pth")
    X = featurize(load_dataset(path), f"inception:{tmp_path / 'fid.pth'}", batch_size=4)
    with torch.no_grad():
        direct = net(_prepare(torch, list(arrays))).numpy()
    assert X.shape == (7, 2048) and (X >= 0).all()
    np.testing.assert_allclose(X, direct, rtol=1e-4, atol=1e-5)
    torch.save({"conv.weight": torch.zeros(1)}, tmp_path / "wrong.pth")
    with pytest.raises(DiversityInputError, match="does not fit the FID Inception layout"):
        featurize(load_dataset(path), f"inception:{tmp_path / 'wrong.pth'}")
    torch.save({"w": object()}, tmp_path / "pickle.pth")  # not tensors: refused, never unpickled
    with pytest.raises(DiversityInputError, match="weights_only=True"):
        featurize(load_dataset(path), f"inception:{tmp_path / 'pickle.pth'}")
    with pytest.raises(DiversityInputError, match="was not found"):
        featurize(load_dataset(path), f"inception:{tmp_path / 'none.pth'}")
