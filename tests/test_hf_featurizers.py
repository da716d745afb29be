"""Featurizers from the user's own checkpoints (issue 25): ``hf:PATH`` and ``inception:FILE``.

Tiny random models are built here, saved to a temporary folder and loaded through the same code
as a user's; nothing is downloaded or shipped.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil

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
from diversity_core.featurizers.hf import (  # noqa: E402
    UnusedWeightsWarning,
    hf_found_locally,
    hf_model,
    pooled_output,
)

PROJECTION = 5
TEXTS = ["the cat sat", "a dog", "the dog sat on a cat", "cat", "a cat and the dog sat", "dog dog dog"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "a", "sat", "on", "and"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny DINOv2 (pooler_output: the layer-normalised CLS token) and a tiny BERT saved without its
    pooler (mean over the mask), with an image processor and a tokenizer made from a vocabulary file;
    tiny CLIP vision and text towers with their projections (image_embeds / text_embeds, of
    PROJECTION dimensions, not the hidden size 8)."""
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

    clip_vision = transformers.CLIPVisionModelWithProjection(
        transformers.CLIPVisionConfig(
            image_size=16,
            patch_size=8,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            projection_dim=PROJECTION,
        )
    )
    clip_vision.save_pretrained(root / "clip-vision")
    transformers.ViTImageProcessor(size={"height": 16, "width": 16}).save_pretrained(root / "clip-vision")
    clip_text = transformers.CLIPTextModelWithProjection(
        transformers.CLIPTextConfig(
            vocab_size=len(VOCAB),
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=32,
            projection_dim=PROJECTION,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,  # [SEP]: CLIP's pooled token is the first end-of-text token
        )
    )
    clip_text.save_pretrained(root / "clip-text")
    # CLIP's text model takes no token_type_ids: a tokenizer that returns only what it takes
    transformers.BertTokenizer(
        vocab=str(root / "vocab.txt"), model_input_names=["input_ids", "attention_mask"]
    ).save_pretrained(root / "clip-text")
    return root


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    rng = np.random.default_rng(25)
    a = rng.integers(0, 256, size=(7, 20, 20, 3), dtype=np.uint8)
    path = tmp_path_factory.mktemp("hf-images") / "images.npy"
    np.save(path, a)
    return a, path


def _direct_vision(folder, arrays, cls=None, field="pooler_output"):
    from PIL import Image

    net = (cls or transformers.AutoModel).from_pretrained(folder).eval()
    proc = transformers.AutoImageProcessor.from_pretrained(folder)
    with torch.no_grad():
        return np.vstack(
            [
                getattr(net(**proc(images=[Image.fromarray(a)], return_tensors="pt")), field).numpy()
                for a in arrays
            ]
        )


def _direct_text(folder, texts, cls=None, field=None):
    net = (cls or transformers.AutoModel).from_pretrained(folder).eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    rows = []
    with torch.no_grad():
        for t in texts:  # one text at a time: no padding; by default the mean over every token
            out = net(**tok([t], return_tensors="pt"))
            rows.append(
                out.last_hidden_state[0].mean(0).numpy() if field is None else getattr(out, field)[0].numpy()
            )
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


def test_clip_towers_with_projection_give_the_projected_embeddings(models, images, tmp_path):
    # config.architectures names CLIP*WithProjection; AutoModel alone would build the tower without
    # its projection and give the hidden-size pooler output instead of image_embeds / text_embeds
    arrays, path = images
    X = featurize(load_dataset(path), f"hf:{models / 'clip-vision'}", batch_size=3)
    direct = _direct_vision(
        models / "clip-vision", arrays, transformers.CLIPVisionModelWithProjection, "image_embeds"
    )
    assert X.shape == (7, PROJECTION) == direct.shape
    np.testing.assert_allclose(X, direct, rtol=1e-5, atol=1e-6)
    assert direct.std(axis=0).min() > 1e-3  # the images differ in these features: the check can fail

    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    ds = load_dataset(tmp_path / "t.txt")
    T = featurize(ds, f"hf:{models / 'clip-text'}", batch_size=4)  # padded batches, pooled at [SEP]
    direct = _direct_text(
        models / "clip-text", ds.items, transformers.CLIPTextModelWithProjection, "text_embeds"
    )
    assert T.shape == (len(TEXTS), PROJECTION) == direct.shape
    np.testing.assert_allclose(T, direct, rtol=1e-5, atol=1e-6)
    assert len(set(map(tuple, direct.round(4)))) == len(TEXTS)


def test_unused_weights_warn_and_task_heads_fall_back_to_the_encoder(models, images, tmp_path):
    arrays, path = images
    # a projection checkpoint whose config lost its architectures: AutoModel drops the projection, loudly
    folder = tmp_path / "clip-no-arch"
    shutil.copytree(models / "clip-vision", folder)
    config = json.loads((folder / "config.json").read_text())
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.warns(
        UnusedWeightsWarning, match=r"1 weight tensors .*not used by the CLIPVisionModel.*visual_projection"
    ):
        X = featurize(load_dataset(path), f"hf:{folder}")
    np.testing.assert_allclose(
        X, _direct_vision(folder, arrays, transformers.CLIPVisionModel), rtol=1e-5, atol=1e-6
    )

    # a task model (logits, no hidden states) is read as its base encoder, its head reported unused
    torch.manual_seed(2)
    transformers.Dinov2ForImageClassification(
        transformers.Dinov2Config(
            image_size=16,
            patch_size=8,
            hidden_size=8,
            num_hidden_layers=1,
            num_attention_heads=2,
            mlp_ratio=2,
            num_labels=3,
        )
    ).save_pretrained(tmp_path / "dinov2-cls")
    transformers.ViTImageProcessor(size={"height": 16, "width": 16}).save_pretrained(tmp_path / "dinov2-cls")
    with pytest.warns(UnusedWeightsWarning, match=r"not used by the Dinov2Model.*classifier"):
        X = featurize(load_dataset(path), f"hf:{tmp_path / 'dinov2-cls'}")
    np.testing.assert_allclose(X, _direct_vision(tmp_path / "dinov2-cls", arrays), rtol=1e-5, atol=1e-6)


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


# ------------------------------------------------------------------------------------------
# hub ids: a fake Hugging Face cache in a temporary folder, offline; nothing is downloaded

REVISION = "2525252525252525252525252525252525252525"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache (HF_HOME, HF_HUB_CACHE) with HF_HUB_OFFLINE=1.

    huggingface_hub reads these variables once, at import: its constants are set to them too.
    """
    from huggingface_hub import constants

    home = tmp_path / "hf-home"
    cache = home / "hub"
    cache.mkdir(parents=True)
    for var, value in (("HF_HOME", home), ("HF_HUB_CACHE", cache), ("HF_HUB_OFFLINE", "1")):
        monkeypatch.setenv(var, str(value))
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def _into_cache(cache, repo_id, folder, names=None):
    """Copy files of a saved model folder into the cache's layout for ``repo_id``:
    ``models--org--name/snapshots/<revision>/`` and ``refs/main`` naming the revision."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / REVISION
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(REVISION)
    copied = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and (names is None or f.name in names):
            shutil.copy2(f, snapshot / f.name)
            copied.append(f.name)
    return snapshot, copied


def test_a_hub_id_in_the_cache_loads_by_its_id(models, images, hub_cache, monkeypatch):
    arrays, path = images
    snapshot, _ = _into_cache(hub_cache, "tiny-org/dinov2", models / "dinov2")
    name = "hf:tiny-org/dinov2"
    assert hf_found_locally(name)
    model = hf_model(name)
    assert model.folder == snapshot and model.from_hub and model.location == "tiny-org/dinov2"
    seen = []
    real = transformers.Dinov2Model.from_pretrained.__func__

    def spy(cls, where, *args, **kwargs):
        seen.append((str(where), kwargs.get("local_files_only")))
        return real(cls, where, *args, **kwargs)

    monkeypatch.setattr(transformers.Dinov2Model, "from_pretrained", classmethod(spy))
    X = featurize(load_dataset(path), name, batch_size=4)
    assert seen == [("tiny-org/dinov2", True)]  # by its id, offline: the whole cached snapshot
    np.testing.assert_allclose(X, _direct_vision(models / "dinov2", arrays), rtol=1e-5, atol=1e-5)


def test_a_hub_id_missing_or_partly_cached_says_allow_download(models, images, hub_cache):
    ds = load_dataset(images[1])
    with pytest.raises(DiversityInputError, match="not in the Hugging Face cache.*--allow-download"):
        featurize(ds, "hf:tiny-org/dinov2")
    # only the config was fetched (what hf_model's allow_download fetches first): the weights are missing
    _into_cache(hub_cache, "tiny-org/dinov2", models / "dinov2", names={"config.json"})
    assert hf_found_locally("hf:tiny-org/dinov2")
    with pytest.raises(
        DiversityInputError,
        match=r"'tiny-org/dinov2' is only partly in the Hugging Face cache.*--allow-download",
    ):
        featurize(ds, "hf:tiny-org/dinov2")


def test_allow_download_fetches_the_weights_not_only_the_config(models, images, hub_cache, monkeypatch):
    # a fake hub: transformers' two download functions copy from a local folder into the cache
    from huggingface_hub.errors import EntryNotFoundError

    remote, fetched = models / "dinov2", []

    def download(repo_id, filename, *, subfolder=None, cache_dir=None, **kwargs):
        assert repo_id == "tiny-org/dinov2" and not subfolder
        if not (remote / filename).is_file():
            raise EntryNotFoundError(f"{repo_id} has no file {filename}")
        snapshot, copied = _into_cache(hub_cache, repo_id, remote, names={filename})
        fetched.extend(copied)
        return str(snapshot / filename)

    def snapshot_download(repo_id, *, allow_patterns=(), **kwargs):
        names = {f.name for f in remote.iterdir() if any(fnmatch.fnmatch(f.name, p) for p in allow_patterns)}
        snapshot, copied = _into_cache(hub_cache, repo_id, remote, names=names)
        fetched.extend(copied)
        return str(snapshot)

    monkeypatch.setattr(transformers.utils.hub, "hf_hub_download", download)
    monkeypatch.setattr(transformers.utils.hub, "snapshot_download", snapshot_download)
    arrays, path = images
    X = featurize(load_dataset(path), "hf:tiny-org/dinov2", allow_download=True)
    assert {"config.json", "model.safetensors", "preprocessor_config.json"} <= set(fetched)
    np.testing.assert_allclose(X, _direct_vision(models / "dinov2", arrays), rtol=1e-5, atol=1e-5)
    n = len(fetched)
    featurize(load_dataset(path), "hf:tiny-org/dinov2", batch_size=5)  # now offline, from the cache
    assert len(fetched) == n


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


def test_cli_featurizer_hf_text_model(models, tmp_path, capsys):
    from diversity_core.cli import main

    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n")
    argv = [
        "--cache-dir",
        str(tmp_path / "store"),
        "score",
        str(tmp_path / "t.txt"),
        "--featurizer",
        f"hf:{models / 'bert'}",
        "--q",
        "1",
        "2",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)["results"][0]
    spec = dc.compute_spectrum(_direct_text(models / "bert", load_dataset(tmp_path / "t.txt").items))
    assert spec.vendi(1.0) > 1.1  # features that tell the texts apart: the comparison can fail
    for q in ("1", "2"):
        assert row["vendi"][q] == pytest.approx(spec.vendi(float(q)), rel=1e-5)


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


# ------------------------------------------------------------------------------------------
# issue 40, items 2 and 11: no code from a model folder; broken checkpoints are one-line errors


def _copy(models, tmp_path, name="dinov2"):
    folder = tmp_path / name
    shutil.copytree(models / "dinov2", folder)
    return folder


def _safetensors_parts(folder):
    import struct

    raw = (folder / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _rewrite_header(folder, change):
    import struct

    header, data = _safetensors_parts(folder)
    key = next(k for k in sorted(header) if k != "__metadata__" and len(header[k]["shape"]) == 2)
    header[key] = change(dict(header[key]))
    text = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + data)


class _Runs:
    """A pickled object that, if unpickled, would leave a file behind (it never is)."""

    marker = None

    def __reduce__(self):
        return (shutil.copyfile, (__file__, str(self.marker)))


def _pickled_bin(folder):
    (folder / "model.safetensors").unlink()
    obj = _Runs()
    _Runs.marker = folder / "RAN"
    torch.save({"embeddings.cls_token": obj}, folder / "pytorch_model.bin")


def _config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


BROKEN = {
    "pickled pytorch_model.bin": (_pickled_bin, r"\(pytorch_model.bin\) holds pickled Python objects besides "
                                                r"tensors: refused, never unpickled \(torch.load\(weights_only=True\)\)"),
    "empty safetensors": (lambda f: (f / "model.safetensors").write_bytes(b""),
                          r"\(model.safetensors\) is empty \(0 bytes\)\. Save the model again with save_pretrained"),
    "truncated safetensors": (
        lambda f: (f / "model.safetensors").write_bytes((f / "model.safetensors").read_bytes()[:300]),
        r"is not a valid safetensors file \(.*\): it is truncated, damaged"),
    "random bytes": (lambda f: (f / "model.safetensors").write_bytes(np.random.default_rng(0).bytes(200)),
                     r"not a valid safetensors file \(.*header too large\)"),
    "header not JSON": (lambda f: (f / "model.safetensors").write_bytes(
        (10).to_bytes(8, "little") + b"{not json}" + _safetensors_parts(f)[1]), r"not a valid safetensors file"),
    "offsets past the end": (lambda f: _rewrite_header(f, lambda t: {**t, "data_offsets": [0, 10**9]}),
                             r"not a valid safetensors file \(.*offset"),
    "unknown dtype": (lambda f: _rewrite_header(f, lambda t: {**t, "dtype": "Q99"}),
                      r"not a valid safetensors file \(.*Q99"),
    "hidden size of the config": (lambda f: _config(f, hidden_size=16),
                                  r"has 25 weight tensors whose shapes do not fit the Dinov2Model its config describes "
                                  r"\(e\.g\. embeddings\.cls_token: checkpoint \[1, 1, 8\], config \[1, 1, 16\]"),
    "mlp size of the config": (lambda f: _config(f, mlp_ratio=4),
                               r"has 3 weight tensors whose shapes do not fit.*fc1\.bias: checkpoint \[16\], "
                               r"config \[32\]"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_checkpoints_are_one_line_input_errors(case, models, images, tmp_path):
    """Nine checkpoints that used to raise UnpicklingError, SafetensorError or RuntimeError (exit 1)."""
    folder = _copy(models, tmp_path)
    make, message = BROKEN[case]
    make(folder)
    with pytest.raises(DiversityInputError, match=message) as err:
        featurize(load_dataset(images[1]), f"hf:{folder}")
    assert "\n" not in str(err.value)
    assert not (folder / "RAN").exists()


def test_cli_broken_checkpoint_exits_2_with_one_line(models, images, tmp_path, capsys):
    from diversity_core.cli import main

    folder = _copy(models, tmp_path)
    _config(folder, mlp_ratio=4)
    assert main(["--cache-dir", str(tmp_path / "store"), "score", str(images[1]), "--featurizer", f"hf:{folder}"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "Loading weights" not in line]
    assert len(err) == 1 and "shapes do not fit" in err[0]  # transformers' load report is not repeated


def _custom_code_folder(models, tmp_path):
    """A checkpoint whose config maps an unknown model type to Python in the folder, which leaves a file if run."""
    folder = _copy(models, tmp_path, "custom")
    _config(folder, model_type="custom-net-40", architectures=["CustomNet"],
            auto_map={"AutoConfig": "custom_net.CustomConfig", "AutoModel": "custom_net.CustomNet"})
    (folder / "custom_net.py").write_text(
        "import pathlib\n"
        "pathlib.Path(__file__).with_name('RAN').write_text('the folder code ran')\n"
        "from transformers import PretrainedConfig, PreTrainedModel\n"
        "class CustomConfig(PretrainedConfig):\n    model_type = 'custom-net-40'\n"
        "class CustomNet(PreTrainedModel):\n    config_class = CustomConfig\n"
    )
    return folder


@pytest.fixture
def answer_yes(monkeypatch):
    """transformers asks 'Do you wish to run the custom code? [y/N]' on a terminal: the user says y."""
    import builtins

    asked = []

    def yes(prompt=""):
        asked.append(prompt)
        return "y"

    monkeypatch.setattr(builtins, "input", yes)
    return asked


def test_a_folder_needing_its_own_code_is_refused_and_never_run(models, images, tmp_path, answer_yes):
    folder = _custom_code_folder(models, tmp_path)
    for call in (lambda: hf_model(f"hf:{folder}"), lambda: featurize(load_dataset(images[1]), f"hf:{folder}")):
        with pytest.raises(DiversityInputError, match=r"needs its own Python code: the auto_map of its config.json "
                                                      r"names .*custom_net.CustomNet.*trust_remote_code=False"):
            call()
    assert not (folder / "RAN").exists() and answer_yes == []


def test_transformers_itself_is_told_never_to_run_code(models, images, tmp_path, answer_yes, monkeypatch):
    """Past our reading of config.json (a hub id, a file transformers reads that we do not), every
    loader gets trust_remote_code=False: transformers refuses, it does not ask."""
    from diversity_core.featurizers import hf

    monkeypatch.setattr(hf, "_refuse_custom_code", lambda *args: None)
    folder = _custom_code_folder(models, tmp_path)
    with pytest.raises(DiversityInputError, match=r"needs its own Python code.*trust_remote_code=False"):
        hf_model(f"hf:{folder}")
    assert not (folder / "RAN").exists() and answer_yes == []
    seen = []
    for cls in (transformers.AutoConfig, transformers.Dinov2Model, transformers.AutoImageProcessor):
        real = cls.from_pretrained.__func__

        def spy(c, *args, _real=real, **kwargs):
            seen.append((c.__name__, kwargs.get("trust_remote_code")))
            return _real(c, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    hf.hf_features(list(images[0]), f"hf:{models / 'dinov2'}")  # not featurize: its cache would skip the load
    assert {name for name, _ in seen} >= {"AutoConfig", "Dinov2Model", "AutoImageProcessor"}
    assert all(trust is False for _, trust in seen)


INCEPTION_BROKEN = {
    "empty.pth": (lambda p: p.write_bytes(b""), r"fid\.pth is empty \(0 bytes\)\. It must be the state dict"),
    "empty.safetensors": (lambda p: p.write_bytes(b""), r"is empty \(0 bytes\)"),
    "random.safetensors": (lambda p: p.write_bytes(np.random.default_rng(1).bytes(100)),
                           r"is not a valid safetensors file \(.*header too large\)"),
    "random.pth": (lambda p: p.write_bytes(b"\x80\x02" + np.random.default_rng(2).bytes(100)),
                   r"is not a readable PyTorch weights file \(.*\): it is truncated"),
    "shape.pth": (lambda p: torch.save({"Conv2d_1a_3x3.conv.weight": torch.zeros(1, 2, 3, 3)}, p),
                  r"1 tensors have other shapes \(e\.g\. Conv2d_1a_3x3\.conv\.weight: file \[1, 2, 3, 3\], "
                  r"network \[32, 3, 3, 3\]\)"),
    "number.pth": (lambda p: torch.save({"Conv2d_1a_3x3.conv.weight": 3}, p),
                   r"holds 1 entries that are not tensors \(e\.g\. \['Conv2d_1a_3x3\.conv\.weight'\]\)"),
}


@pytest.mark.parametrize("case", sorted(INCEPTION_BROKEN))
def test_inception_broken_weights_say_what_is_wrong(case, images, tmp_path):
    """A .safetensors file is not blamed on torch.load; an empty file has a reason; shapes do not crash."""
    suffix = case.split(".")[1]
    path = tmp_path / f"fid.{suffix}"
    make, message = INCEPTION_BROKEN[case]
    make(path)
    with pytest.raises(DiversityInputError, match=message) as err:
        featurize(load_dataset(images[1]), f"inception:{path}")
    text = str(err.value)
    assert "\n" not in text and text.rstrip()[-1] == "."
    if suffix == "safetensors":
        assert "torch.load" not in text
