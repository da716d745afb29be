"""The metric pack of diversity_core.evaluation (issue 43 item 5): each metric against an oracle.

Every oracle is written here from the paper's formula or the reference implementation's code,
independently of the core (dense matrices, scipy/sklearn/nltk primitives), and must agree to
1e-10 relative in float64:

- RKE mode count: ``1 / mean(K**2)`` (``compute_rke_mc_frobenius_norm`` of renyi-kernel-entropy) and
  the identity RKE-MC = VS_2 (eigenvalues of K/n);
- truncated Vendi: the tail mass spread over the top t eigenvalues (``truncated_vendi.py``);
  TCE/TIE: ``t/2 log(2 pi e) + 1/2 sum log lambda_i`` of ``torch.cov`` (image-diversity 0.1.6);
- DCScore: trace of the row-softmax of the cosine matrix / tau (``calculate_dcscore_by_embedding``);
- CMMD: google-research ``cmmd/distance.py`` (means over all pairs) and the unbiased U-statistic;
- clipped density and coverage: the authors' ``ClippedDensityCoverage`` algorithm (sklearn
  neighbours, the log-space f values and ``searchsorted``); the unclipped coverage against ``prdc``;
- probabilistic precision and recall: the authors' ``compute_pprecision_precall``;
- lexical: gzip ratio, ``nltk.ngrams`` n-gram diversity, ``nltk`` sentence_bleu self-BLEU (method 1).
"""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.special import betaln, logsumexp, softmax

import diversity_core as dc
from diversity_core.evaluation import (
    clipped_density_coverage,
    cmmd,
    dcscore,
    lexical_diversity,
    probabilistic_precision_recall,
    rke_mode_count,
    truncated_entropy,
    truncated_vendi,
)
from diversity_core.exceptions import DiversityInputError

RTOL = 1e-10


def rel(a, b) -> float:
    """Relative difference |a - b| / |b| (0 for two zeros)."""
    a, b = float(a), float(b)
    return 0.0 if a == b else abs(a - b) / abs(b)


def rbf(X, Y, sigma):
    """Gaussian kernel from exact pairwise differences (scipy)."""
    return np.exp(-cdist(X, Y, "sqeuclidean") / (2.0 * sigma * sigma))


def clusters(rng, n_per=40, centres=5, d=8, spread=0.3, scale=4.0):
    """``centres`` Gaussian clusters of ``n_per`` items each."""
    C = rng.normal(scale=scale, size=(centres, d))
    return np.vstack([c + spread * rng.normal(size=(n_per, d)) for c in C])


def clip_like(rng, n, d=64, shift=0.0):
    """Unit-norm embeddings (CLIP-style), optionally shifted before normalising."""
    X = rng.normal(size=(n, d)) + shift
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# RKE mode count
# ---------------------------------------------------------------------------------------------
class TestRKE:
    @pytest.mark.parametrize("sigma", [0.5, 2.0, 8.0])
    def test_oracle_frobenius_formula(self, rng, sigma):
        X = clusters(rng)
        K = rbf(X, X, sigma)
        oracle = 1.0 / np.mean(K ** 2)  # 1 / ||K/n||_F^2, the paper's RKE-MC
        r = rke_mode_count(X, kernel="rbf", sigma=sigma, n_resamples=0)
        assert rel(r.mode_count.value, oracle) <= RTOL
        assert rel(r.entropy, -math.log(np.sum((K / X.shape[0]) ** 2))) <= RTOL

    def test_identity_to_vs2(self, rng):
        X = clusters(rng, d=6)
        r = rke_mode_count(X, kernel="rbf", sigma=1.5, n_resamples=0)
        lam = np.linalg.eigvalsh(rbf(X, X, 1.5) / X.shape[0])
        assert rel(r.mode_count.value, 1.0 / np.sum(lam ** 2)) <= RTOL
        assert rel(r.mode_count.value, dc.vendi_score(X, kernel="rbf", sigma=1.5, q=2)) <= RTOL

    def test_cosine_dual_route(self, rng):
        X = rng.normal(size=(120, 5))
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        r = rke_mode_count(X, kernel="cosine", n_resamples=0)
        assert r.method == "dual"
        assert rel(r.mode_count.value, 1.0 / np.mean((U @ U.T) ** 2)) <= RTOL

    def test_counts_separated_modes(self):
        X = np.repeat(np.eye(4) * 50.0, 6, axis=0)
        assert rke_mode_count(X, kernel="rbf", sigma=1.0, n_resamples=0).mode_count.value == pytest.approx(4.0, rel=1e-12)

    def test_median_bandwidth_fixed_once_and_interval(self, rng):
        X = clusters(rng, n_per=30)
        r = rke_mode_count(X, kernel="rbf", rng=0)
        assert r.kernel["sigma"] == pytest.approx(dc.median_distance(X))
        lo, hi = r.mode_count.confidence_interval
        assert r.mode_count.interval == "extrapolated" and lo <= r.mode_count.value <= hi

    def test_bad_kernel(self, rng):
        with pytest.raises(DiversityInputError, match="unknown kernel 'nope'"):
            rke_mode_count(rng.normal(size=(10, 2)), kernel="nope")


# ---------------------------------------------------------------------------------------------
# truncated Vendi and TCE/TIE
# ---------------------------------------------------------------------------------------------
def truncated_vendi_oracle(K, t, q):
    """The reference's ``_calculate_stats``: top t of eig(K/n), tail mass added evenly, Renyi entropy."""
    ev = np.sort(np.linalg.eigvalsh(K / K.shape[0]))[::-1]
    top = ev[:t] + (1.0 - ev[:t].sum()) / t
    if q == 1:
        return math.exp(-np.sum(top * np.log(top)))
    return math.exp(math.log(np.sum(top ** q)) / (1.0 - q))


class TestTruncatedVendi:
    @pytest.mark.parametrize("q", [1.0, 2.0, 0.5])
    @pytest.mark.parametrize("t", [3, 10, 40])
    def test_oracle_rbf(self, rng, t, q):
        X = clusters(rng, n_per=25)
        r = truncated_vendi(X, t=t, q=q, kernel="rbf", sigma=3.0, n_resamples=0)
        assert rel(r.value.value, truncated_vendi_oracle(rbf(X, X, 3.0), t, q)) <= RTOL
        assert r.t_used == t and np.isclose(r.eigenvalues.sum(), 1.0)

    def test_oracle_cosine_dual(self, rng):
        X = rng.normal(size=(200, 12))
        U = X / np.linalg.norm(X, axis=1, keepdims=True)
        r = truncated_vendi(X, t=5, n_resamples=0)
        assert rel(r.value.value, truncated_vendi_oracle(U @ U.T, 5, 1.0)) <= RTOL

    def test_no_truncation_at_or_above_rank(self, rng):
        X = rng.normal(size=(50, 4))
        r = truncated_vendi(X, t=100, n_resamples=0)
        assert r.t_used == 4 and rel(r.value.value, r.vendi) <= 1e-12

    def test_interval_within_range(self, rng):
        r = truncated_vendi(clusters(rng, n_per=30), t=8, kernel="rbf", rng=1)
        lo, hi = r.value.confidence_interval
        assert 1.0 <= lo <= r.value.value <= hi <= 8.0

    def test_bad_t(self, rng):
        with pytest.raises(DiversityInputError, match="t must be an integer >= 1"):
            truncated_vendi(rng.normal(size=(10, 2)), t=0)


def truncated_entropy_oracle(Z, t):
    """image-diversity 0.1.6 ``truncated_entropy`` on ``torch.cov(Z.T)`` (ddof = 1), top t eigenvalues."""
    lam = np.sort(np.linalg.eigvalsh(np.cov(Z.T)))[::-1][:t]
    return t * math.log(2 * math.pi * math.e) / 2 + 0.5 * np.sum(np.log(lam))


class TestTruncatedEntropy:
    @pytest.mark.parametrize("t", [1, 20, 50])
    def test_oracle_clip_like(self, rng, t):
        Z = clip_like(rng, 400, d=128)
        r = truncated_entropy(Z, t=t, n_resamples=0)
        assert rel(r.value.value, truncated_entropy_oracle(Z, t)) <= RTOL

    def test_float32_features(self, rng):
        Z = clip_like(rng, 300, d=64).astype(np.float32)
        r = truncated_entropy(Z, t=20, n_resamples=0)
        assert rel(r.value.value, truncated_entropy_oracle(Z.astype(np.float64), 20)) <= RTOL

    def test_scale_adds_t_log(self, rng):
        Z = rng.normal(size=(300, 10))
        a = truncated_entropy(Z, t=5, n_resamples=0).value.value
        b = truncated_entropy(2.0 * Z, t=5, n_resamples=0).value.value
        assert b - a == pytest.approx(5 * math.log(2.0), rel=1e-12)

    def test_interval(self, rng):
        r = truncated_entropy(rng.normal(size=(500, 16)), t=4, rng=0)
        lo, hi = r.value.confidence_interval
        assert lo <= r.value.value <= hi

    def test_rank_below_t(self, rng):
        Z = rng.normal(size=(100, 3)) @ rng.normal(size=(3, 10))
        with pytest.raises(DiversityInputError, match="Lower t to at most 3"):
            truncated_entropy(Z, t=5, n_resamples=0)

    def test_t_too_large(self, rng):
        with pytest.raises(DiversityInputError, match="need more than t items"):
            truncated_entropy(rng.normal(size=(10, 30)), t=10, n_resamples=0)


# ---------------------------------------------------------------------------------------------
# DCScore
# ---------------------------------------------------------------------------------------------
class TestDCScore:
    @pytest.mark.parametrize("tau", [1.0, 0.1, 0.02])
    def test_oracle_cosine(self, rng, tau):
        X = rng.normal(size=(150, 20))
        U = X / np.linalg.norm(X, axis=1, keepdims=True)  # sklearn preprocessing.normalize
        oracle = np.trace(softmax(U @ U.T / tau, axis=1))
        r = dcscore(X, tau=tau, n_resamples=0)
        assert rel(r.value.value, oracle) <= RTOL
        assert r.items.shape == (150,)

    def test_oracle_rbf_blocks(self, rng):
        X = clusters(rng, n_per=30)
        oracle = np.trace(softmax(rbf(X, X, 2.0) / 0.3, axis=1))
        with dc.config_context(chunk_bytes=16 * 150 * 8):  # several row blocks
            r = dcscore(X, kernel="rbf", sigma=2.0, tau=0.3, n_resamples=0)
        assert rel(r.value.value, oracle) <= RTOL

    def test_exact_values(self):
        assert dcscore(np.eye(5), n_resamples=0).value.value == pytest.approx(5 * math.e / (math.e + 4), rel=1e-14)
        assert dcscore(np.ones((4, 3)), n_resamples=0).value.value == pytest.approx(1.0, rel=1e-14)

    def test_bad_tau(self, rng):
        with pytest.raises(DiversityInputError, match="tau must be a number > 0"):
            dcscore(rng.normal(size=(10, 2)), tau=0.0)


# ---------------------------------------------------------------------------------------------
# CMMD
# ---------------------------------------------------------------------------------------------
def cmmd_reference(x, y, sigma=10.0, scale=1000.0):
    """google-research cmmd/distance.py ``mmd``: means over all pairs (diagonals included)."""
    x_sq = np.diag(x @ x.T)
    y_sq = np.diag(y @ y.T)
    gamma = 1 / (2 * sigma ** 2)
    k_xx = np.mean(np.exp(-gamma * (-2 * x @ x.T + x_sq[:, None] + x_sq[None, :])))
    k_xy = np.mean(np.exp(-gamma * (-2 * x @ y.T + x_sq[:, None] + y_sq[None, :])))
    k_yy = np.mean(np.exp(-gamma * (-2 * y @ y.T + y_sq[:, None] + y_sq[None, :])))
    return scale * (k_xx + k_yy - 2 * k_xy)


def cmmd_unbiased(x, y, sigma=10.0, scale=1000.0):
    """The U-statistic of Gretton et al. (Lemma 6) with the Gaussian kernel, times scale."""
    n, m = len(x), len(y)
    kxx, kyy, kxy = rbf(x, x, sigma), rbf(y, y, sigma), rbf(x, y, sigma)
    return scale * ((kxx.sum() - np.trace(kxx)) / (n * (n - 1)) + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
                    - 2 * kxy.mean())


class TestCMMD:
    def test_oracle_released_code(self, rng):
        X, Y = clip_like(rng, 150), clip_like(rng, 120, shift=0.3)
        r = cmmd(X, Y, estimator="biased", n_resamples=0)
        assert rel(r.value.value, cmmd_reference(X, Y)) <= RTOL

    def test_oracle_unbiased(self, rng):
        X, Y = clip_like(rng, 150), clip_like(rng, 120, shift=0.3)
        r = cmmd(X, Y, n_resamples=0)
        assert r.estimator == "unbiased"
        assert rel(r.value.value, cmmd_unbiased(X, Y)) <= RTOL

    def test_other_sigma_and_blocks(self, rng):
        X, Y = rng.normal(size=(1100, 6)), rng.normal(size=(300, 6)) + 0.5  # X: two blocks within itself
        with dc.config_context(chunk_bytes=100 * 300 * 8):  # across: blocks of 100 rows of X
            r = cmmd(X, Y, sigma=2.0, scale=1.0, n_resamples=0)
        assert rel(r.value.value, cmmd_unbiased(X, Y, 2.0, 1.0)) <= RTOL

    def test_unbiased_centred_on_zero_for_one_distribution(self):
        vals = [cmmd(clip_like(np.random.default_rng(s), 60, d=8), clip_like(np.random.default_rng(100 + s), 60, d=8),
                     sigma=0.5, n_resamples=0).value.value for s in range(30)]
        assert min(vals) < 0 < max(vals)

    def test_interval(self, rng):
        r = cmmd(clip_like(rng, 200, d=16), clip_like(rng, 200, d=16, shift=0.5), rng=0)
        lo, hi = r.value.confidence_interval
        assert lo <= r.value.value <= hi and r.value.interval == "extrapolated"

    def test_bad_options(self, rng):
        X = rng.normal(size=(10, 2))
        with pytest.raises(DiversityInputError, match="unknown estimator 'v'"):
            cmmd(X, X, estimator="v")
        with pytest.raises(DiversityInputError, match="sigma must be a number > 0"):
            cmmd(X, X, sigma=-1.0)
        with pytest.raises(DiversityInputError, match="same number of features"):
            cmmd(X, rng.normal(size=(10, 3)))


# ---------------------------------------------------------------------------------------------
# clipped density and coverage
# ---------------------------------------------------------------------------------------------
def clipped_reference(real, fake, K=5, can_exceed_one=False):
    """The algorithm of ClippedDensityCoverage (Salvy et al.), from sklearn neighbours and the f values."""
    from sklearn.neighbors import NearestNeighbors

    dist_r, idx_r = NearestNeighbors(n_neighbors=K + 1).fit(real).kneighbors(real)
    radius = dist_r[:, -1]
    clipped = np.clip(radius, 0, np.median(radius))
    mask = dist_r[:, 1:] <= clipped[:, None]
    real_count = np.bincount(idx_r[:, 1:][mask], minlength=len(real))
    D = cdist(real, fake)
    fake_count = (D <= clipped[:, None]).sum(axis=0)
    density = np.mean(np.clip(fake_count / K, 0, 1)) / np.mean(np.clip(real_count / K, 0, 1))
    if not can_exceed_one:
        density = min(density, 1.0)
    # coverage: K nearest fake distances per real item, strictly inside the (unclipped) radius
    near = np.sort(D, axis=1)[:, :K]
    y = np.mean(np.mean(near < radius[:, None], axis=1))
    N, M = len(real), len(fake)
    lf = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, M + N + 1)))])
    f = np.zeros(M + 1)
    for m in range(K, M + 1):
        j = np.arange(m + 1)
        with np.errstate(divide="ignore"):
            terms = (np.log(np.minimum(j, K)) + lf[m] - lf[j] - lf[m - j]
                     + lf[K + j - 1] + lf[N + m - K - j - 1] - lf[N + m - 1] - betaln(K, N - K))
        f[m] = np.exp(logsumexp(terms)) / K
    return density, np.searchsorted(f, y) / len(f), y


class TestClippedDensityCoverage:
    @pytest.mark.parametrize("shift", [0.0, 0.7, 3.0])
    def test_oracle_authors_algorithm(self, rng, shift):
        R = rng.normal(size=(300, 6))
        G = rng.normal(size=(250, 6)) + shift
        G[:10] += 25.0  # outliers
        d_ref, c_ref, y_ref = clipped_reference(R, G)
        r = clipped_density_coverage(R, G, n_resamples=0)
        assert rel(r.clipped_density.value, d_ref) <= RTOL
        assert rel(r.coverage_raw, y_ref) <= RTOL
        assert r.clipped_coverage.value == c_ref  # a count over M + 1

    def test_can_exceed_one(self, rng):
        R = rng.normal(size=(200, 3))
        G = 0.3 * rng.normal(size=(200, 3))  # packed in the densest region
        d_ref, _, _ = clipped_reference(R, G, can_exceed_one=True)
        r = clipped_density_coverage(R, G, can_exceed_one=True, n_resamples=0)
        assert r.clipped_density.value > 1.0 and rel(r.clipped_density.value, d_ref) <= RTOL

    def test_unclipped_coverage_against_prdc(self, rng):
        prdc_pkg = pytest.importorskip("prdc")
        R, G = rng.normal(size=(200, 5)), rng.normal(size=(180, 5)) + 0.5
        r = clipped_density_coverage(R, G, k=5, n_resamples=0)
        ref = prdc_pkg.compute_prdc(real_features=R, fake_features=G, nearest_k=5)
        assert float(np.mean(r.coverage_items > 0)) == pytest.approx(ref["coverage"], rel=1e-12)

    def test_bad_sample_shares_read_linearly(self, rng):
        R = rng.normal(size=(400, 4))
        good = rng.normal(size=(400, 4))
        half = np.vstack([good[:200], rng.normal(size=(200, 4)) + 40.0])
        r = clipped_density_coverage(R, half, n_resamples=0)
        assert r.clipped_density.value == pytest.approx(0.5, abs=0.1)
        assert r.clipped_coverage.value == pytest.approx(0.5, abs=0.1)

    def test_interval(self, rng):
        r = clipped_density_coverage(rng.normal(size=(300, 4)), rng.normal(size=(300, 4)) + 0.5, rng=0)
        for e in (r.clipped_density, r.clipped_coverage):
            lo, hi = e.confidence_interval
            assert 0.0 <= lo <= e.value <= hi <= 1.0

    def test_k_too_large(self, rng):
        with pytest.raises(DiversityInputError, match="k = 10"):
            clipped_density_coverage(rng.normal(size=(8, 2)), rng.normal(size=(20, 2)), k=10)


# ---------------------------------------------------------------------------------------------
# probabilistic precision and recall
# ---------------------------------------------------------------------------------------------
def pp_pr_reference(real, fake, a=1.2, kth=4):
    """compute_pprecision_precall of Park & Kim (numpy branch), with exact pairwise distances."""
    d_rr, d_ff, d_rf = cdist(real, real), cdist(fake, fake), cdist(real, fake)

    def avg_knn(x):
        idx = np.argpartition(x, kth + 1, axis=-1)[..., : kth + 1]
        return np.mean(np.take_along_axis(x, idx, axis=-1).max(axis=-1))

    def psr(distance, k_nearest):
        f = 1 - distance / (a * k_nearest)
        f[distance >= a * k_nearest] = 0.0
        return np.prod(1.0 - f, axis=0)

    return np.mean(1.0 - psr(d_rf, avg_knn(d_rr))), np.mean(1.0 - psr(d_rf.T, avg_knn(d_ff)))


class TestProbabilisticPR:
    @pytest.mark.parametrize("shift", [0.0, 0.5, 2.0])
    def test_oracle_authors_code(self, rng, shift):
        R = rng.normal(size=(300, 8))
        G = rng.normal(size=(260, 8)) + shift
        p_ref, r_ref = pp_pr_reference(R, G)
        r = probabilistic_precision_recall(R, G, n_resamples=0)
        assert rel(r.precision.value, p_ref) <= RTOL
        assert rel(r.recall.value, r_ref) <= RTOL

    def test_oracle_other_parameters_and_blocks(self, rng):
        R, G = rng.normal(size=(1100, 4)), rng.normal(size=(200, 4)) * 1.5
        p_ref, r_ref = pp_pr_reference(R, G, a=2.0, kth=7)
        with dc.config_context(chunk_bytes=100 * 200 * 8):  # blocks of 100 reference rows
            r = probabilistic_precision_recall(R, G, k=7, a=2.0, n_resamples=0)
        assert rel(r.precision.value, p_ref) <= RTOL and rel(r.recall.value, r_ref) <= RTOL

    def test_interval(self, rng):
        r = probabilistic_precision_recall(rng.normal(size=(300, 4)), rng.normal(size=(300, 4)), rng=0)
        lo, hi = r.precision.confidence_interval
        assert 0.0 <= lo <= r.precision.value <= hi <= 1.0

    def test_bad_a(self, rng):
        X = rng.normal(size=(20, 2))
        with pytest.raises(DiversityInputError, match="a must be a number > 0"):
            probabilistic_precision_recall(X, X, a=0.0)


# ---------------------------------------------------------------------------------------------
# lexical diversity of texts
# ---------------------------------------------------------------------------------------------
def random_texts(rng, n=80):
    vocab = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far", "away", "a", "big", "red", "ball",
             "é", "naïve", "日本"]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 16)))) for _ in range(n)]
    return texts + ["zebra quokka", "the cat sat on the mat", "the cat sat on the mat"]


class TestLexical:
    def test_oracles(self, rng):
        nltk = pytest.importorskip("nltk")
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        texts = random_texts(rng)
        r = lexical_diversity(texts, n_resamples=0)
        raw = " ".join(texts).encode("utf-8")
        assert rel(r.compression_ratio.value, len(raw) / len(gzip.compress(raw))) <= RTOL
        words = " ".join(texts).split(" ")
        ngd = sum(len(set(nltk.ngrams(words, n))) / len(list(nltk.ngrams(words, n))) for n in range(1, 5))
        assert rel(r.ngram_diversity.value, ngd) <= RTOL
        sm = SmoothingFunction().method1
        sb = np.mean([sentence_bleu([t.split() for j, t in enumerate(texts) if j != i], texts[i].split(),
                                    smoothing_function=sm) for i in range(len(texts))])
        assert rel(r.self_bleu.value, sb) <= RTOL

    def test_duplicates_and_disjoint(self):
        r = lexical_diversity(["one two three four five", "one two three four five"], n_resamples=0)
        assert r.self_bleu.value == pytest.approx(1.0, rel=1e-14)
        r = lexical_diversity(["alpha beta", "gamma delta"], n_resamples=0)
        assert r.self_bleu.value == 0.0 and r.ngram_diversity.value == pytest.approx(4.0)

    def test_no_homogenization(self, rng):
        r = lexical_diversity(random_texts(rng, 20), homogenization=False, n_resamples=0)
        assert r.self_bleu is None

    def test_interval(self, rng):
        r = lexical_diversity(random_texts(rng, 200), rng=0)
        for e in (r.compression_ratio, r.ngram_diversity, r.self_bleu):
            lo, hi = e.confidence_interval
            assert lo <= e.value <= hi

    @pytest.mark.parametrize("bad, match", [
        ("just one string", "not a single string"),
        (["ok", 3], "must all be strings"),
        (["only one"], "at least 2 texts"),
        (5, "sequence of strings"),
    ])
    def test_bad_inputs(self, bad, match):
        with pytest.raises(DiversityInputError, match=match):
            lexical_diversity(bad, n_resamples=0)

    def test_too_few_words(self):
        with pytest.raises(DiversityInputError, match="at least 4 words"):
            lexical_diversity(["a", "b"], n_resamples=0)


def test_lazy_top_level_exports():
    for name in ("rke_mode_count", "truncated_vendi", "truncated_entropy", "dcscore", "cmmd",
                 "clipped_density_coverage", "probabilistic_precision_recall", "lexical_diversity"):
        assert name in dc.__all__
        assert getattr(dc, name) is getattr(dc.evaluation, name)


# ---------------------------------------------------------------------------------------------
# the whole pack, and `diversity evaluate --pack`
# ---------------------------------------------------------------------------------------------
def test_metric_pack_rows_and_shared_kernel(rng):
    from diversity_core.evaluation import metric_pack

    R, G = rng.normal(size=(120, 24)), rng.normal(size=(90, 24)) + 0.3
    texts_r = [f"item {i} of the reference set" for i in range(120)]
    texts_g = [f"generated text number {i % 7}" for i in range(90)]
    p = metric_pack(R, G, texts_reference=texts_r, texts_generated=texts_g, kernel="rbf", n_resamples=0, rng=0)
    assert p.n == 90 and p.skipped == {}
    assert p.generated["rke"].kernel == p.reference["rke"].kernel == p.kernel  # one bandwidth for both sets
    metrics = {(r["metric"], r["set"]) for r in p.rows()}
    assert ("self-BLEU", "generated") in metrics and ("CMMD", "G vs R") in metrics
    # each value is the metric's own function on the same input
    assert p.pair["cmmd"].value.value == pytest.approx(cmmd(R, G, n_resamples=0).value.value, rel=1e-12)
    assert p.generated["lexical"].self_bleu.value == pytest.approx(
        lexical_diversity(texts_g, n_resamples=0).self_bleu.value, rel=1e-12)


def test_metric_pack_skips_with_reasons(rng):
    from diversity_core.evaluation import metric_pack

    p = metric_pack(rng.normal(size=(60, 5)), rng.normal(size=(60, 5)), n_resamples=0)
    assert "need more than t items and at least t features" in p.skipped["truncated_entropy"]
    assert "no texts" in p.skipped["lexical"]
    assert any(r["note"].startswith("skipped:") for r in p.rows())
    with pytest.raises(DiversityInputError, match="one text per item"):
        metric_pack(rng.normal(size=(10, 3)), rng.normal(size=(10, 3)), texts_reference=["a"] * 9,
                    texts_generated=["b"] * 10)


def test_cli_evaluate_pack(tmp_path, rng, capsys):
    import json

    from diversity_core.cli import main

    np.save(tmp_path / "real.npy", rng.normal(size=(80, 24)))
    np.save(tmp_path / "gen.npy", rng.normal(size=(70, 24)) + 0.2)
    base = ["evaluate", str(tmp_path / "gen.npy"), "--reference", str(tmp_path / "real.npy"), "--kid-subsets", "2",
            "--kid-subset-size", "20", "--no-magnitude", "--n-resamples", "0"]
    assert main([*base, "--pack"]) == 0
    out = capsys.readouterr().out
    assert "# metric pack" in out and "RKE mode count" in out and "clipped coverage" in out
    assert main([*base, "--pack", "--format", "json"]) == 0
    pack = json.loads(capsys.readouterr().out)["settings"]["pack"]
    assert pack["n"] == 70 and "cmmd" in pack["pair"]
    assert main(base) == 0
    assert "# metric pack" not in capsys.readouterr().out
