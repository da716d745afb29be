"""The memorisation flag: calibrated false-positive rate, recall of near-copies, the pairs shown (issues 38.8, 41.2).

Alaa et al.'s rule (distance < the training item's own nearest-neighbour distance) flagged 10-52 %
of fresh real items; the calibrated flag must flag at most alpha of them (plus a binomial margin)
and still find near-copies with noise up to half the median training nearest-neighbour distance.
"""

import numpy as np
import pytest

from diversity_core.evaluation import evaluate, memorization
from diversity_core.exceptions import DiversityInputError


def _median_nn(T: np.ndarray) -> float:
    sq = np.einsum("ij,ij->i", T, T)
    D = sq[:, None] + sq[None, :] - 2.0 * (T @ T.T)
    np.fill_diagonal(D, np.inf)
    return float(np.median(np.sqrt(np.maximum(D.min(axis=1), 0.0))))


def _near_copies(T: np.ndarray, n: int, rng) -> tuple:
    """n training items plus noise of norm up to half the median training NN distance (random direction)."""
    src = rng.choice(T.shape[0], n, replace=False)
    u = rng.normal(size=(n, T.shape[1]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    norms = rng.uniform(0.0, 0.5, size=(n, 1)) * _median_nn(T)
    norms[: n // 5] = 0.5 * _median_nn(T)  # a fifth at exactly half the median
    return T[src] + norms * u, src


def _digits() -> np.ndarray:
    from diversity_core.data.demos import _digits_arrays

    images, _ = _digits_arrays()
    return images.reshape(images.shape[0], -1)


def _check(T, F, rng, seed, *, alpha=0.01):
    """(fresh items' false-positive rate, near-copies' recall, the result on the fresh items)."""
    fresh = memorization(F, T, rng=seed, alpha=alpha)
    C, src = _near_copies(T, 300, rng)
    copies = memorization(C, T, rng=seed, alpha=alpha)
    return fresh.fraction_flagged.value, copies.fraction_flagged.value, fresh


def _binomial_margin(alpha: float, n: int) -> float:
    """Three standard deviations of a share of n items at alpha, plus the calibration's own spread."""
    return 3.0 * np.sqrt(alpha * (1 - alpha) / n) + 0.005


def test_gaussians_d128_flag_at_most_alpha_of_fresh_items_and_find_near_copies():
    fprs = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        T, F = rng.normal(size=(2000, 128)), rng.normal(size=(2000, 128))
        fpr, recall, res = _check(T, F, rng, seed)
        # Alaa's rule flagged about 15 % of these fresh items
        assert fpr <= 0.01 + _binomial_margin(0.01, 2000)
        assert res.heldout_fpr.value <= 0.01 + _binomial_margin(0.01, res.n_check)
        assert recall >= 0.95
        assert res.alpha == 0.01 and res.fpr_bound <= 0.01 and 0 < res.threshold <= 1 and res.note == ""
        fprs.append(fpr)
    assert np.mean(fprs) <= 0.01 + _binomial_margin(0.01, 6000)


def test_digits_flag_at_most_alpha_of_fresh_items_and_find_near_copies():
    X = _digits()
    fprs = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        perm = rng.permutation(X.shape[0])
        T, F = X[perm[:1200]], X[perm[1200:]]
        fpr, recall, res = _check(T, F, rng, seed)
        # Alaa's rule flagged about 46 % of these fresh digits
        assert fpr <= 0.01 + _binomial_margin(0.01, F.shape[0])
        assert recall >= 0.95
        fprs.append(fpr)
    assert np.mean(fprs) <= 0.01 + _binomial_margin(0.01, 3 * 597)


def test_a_larger_alpha_flags_more_and_stays_under_it():
    rng = np.random.default_rng(5)
    T, F = rng.normal(size=(1000, 32)), rng.normal(size=(3000, 32))
    low, high = memorization(F, T, alpha=0.01), memorization(F, T, alpha=0.1)
    assert high.threshold > low.threshold and high.n_flagged > low.n_flagged
    assert high.fraction_flagged.value <= 0.1 + _binomial_margin(0.1, 3000)
    assert high.fpr_bound <= 0.1


def test_flagged_pairs_carry_distance_similarity_and_own_radius_closest_first():
    rng = np.random.default_rng(1)
    T = rng.normal(size=(600, 16))
    C, src = _near_copies(T, 40, rng)
    G = np.vstack([rng.normal(size=(100, 16)), C])
    r = memorization(G, T)
    pairs = r.flagged_items()
    assert len(pairs) == r.n_flagged >= 40
    assert {p["generated"] for p in pairs} >= set(range(100, 140))
    ratios = [p["ratio"] for p in pairs]
    assert ratios == sorted(ratios) and all(p["flagged"] for p in pairs)
    for p in pairs:
        g, t = G[p["generated"]], T[p["train"]]
        assert p["distance"] == pytest.approx(np.linalg.norm(g - t), rel=1e-9)
        assert p["similarity"] == pytest.approx(g @ t / np.linalg.norm(g) / np.linalg.norm(t), abs=1e-9)
        others = np.delete(T, p["train"], axis=0)
        assert p["train_radius"] == pytest.approx(np.linalg.norm(others - t, axis=1).min(), rel=1e-9)
        assert p["ratio"] == pytest.approx(p["distance"] / max(p["train_radius"], r.median_radius), rel=1e-12)
    # the table: closest copies first, then the unflagged items
    rows = r.item_rows()
    assert [row["generated"] for row in rows[: len(pairs)]] == [p["generated"] for p in pairs]
    assert [row["ratio"] for row in rows] == sorted(row["ratio"] for row in rows)
    assert r.top_items(3) == pairs[:3]


def test_the_headline_is_the_set_level_figure_against_its_baseline():
    rng = np.random.default_rng(2)
    T, R = rng.normal(size=(800, 32)), rng.normal(size=(500, 32))
    C, _ = _near_copies(T, 100, rng)
    G = np.vstack([rng.normal(size=(300, 32)), C])
    r = memorization(G, T, reference=R)
    assert r.baseline_fraction.value <= 0.01 + _binomial_margin(0.01, 500)
    assert r.excess == pytest.approx(r.fraction_flagged.value - r.baseline_fraction.value)
    text = r.headline()
    assert text.startswith(f"{100 * r.fraction_flagged.value:.1f}% [")
    assert "of 400 generated items flagged" in text and "against a baseline of" in text
    assert f"excess {100 * r.excess:+.1f} points" in text and f"of {r.n_check}" in text
    assert f"{r.threshold:.4g}" in r.rule() and "alpha = 1%" in r.rule()
    d = r.to_dict()
    assert {"alpha", "threshold", "median_radius", "fpr_bound", "heldout_fpr", "n_calibration", "n_check"} <= set(d)


def test_the_split_does_not_depend_on_the_order_of_the_training_items():
    rng = np.random.default_rng(3)
    T, G = rng.normal(size=(500, 24)), rng.normal(size=(200, 24))
    perm = rng.permutation(500)
    a, b = memorization(G, T, rng=7), memorization(G, T[perm], rng=7)
    assert a.threshold == b.threshold and a.heldout_fpr == b.heldout_fpr
    np.testing.assert_array_equal(a.flagged, b.flagged)
    np.testing.assert_array_equal(perm[b.nearest], a.nearest)
    # another key, another split (the k-th smallest score of another half)
    assert any(memorization(G, T, rng=key).threshold != a.threshold for key in (8, 9, 10))


def test_too_few_calibration_items_and_exact_duplicates_are_stated():
    rng = np.random.default_rng(4)
    T = rng.normal(size=(60, 8))
    r = memorization(T[:3] + 1e-9, T)
    assert r.n_flagged == 3 and r.fpr_bound == pytest.approx(1 / 31) and "1/31" in r.note
    # binary features where fresh items often repeat a training item exactly: no flag possible
    B = (rng.random(size=(400, 6)) < 0.5).astype(float)
    d = memorization(B[:20], B)
    assert d.threshold == 0 and d.n_flagged == 0 and "exact duplicate" in d.note


def test_memorization_options_are_checked():
    T = np.random.default_rng(0).normal(size=(50, 3))
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(DiversityInputError, match="alpha"):
            memorization(T, T, alpha=bad)
    with pytest.raises(DiversityInputError, match="calibration_fraction"):
        memorization(T, T, calibration_fraction=1.0)
    with pytest.raises(DiversityInputError, match="at least 3"):
        memorization(T[:2], T[:2])


def test_evaluate_passes_alpha_and_reports_the_heldout_rate():
    rng = np.random.default_rng(6)
    R, T = rng.normal(size=(300, 8)), rng.normal(size=(400, 8))
    G = np.vstack([rng.normal(size=(200, 8)), T[:20] + 1e-6])
    ev = evaluate(R, G, train=T, memorization_alpha=0.05, kid_subsets=0, magnitude=False, n_resamples=0, rng=0)
    assert ev.memorization.alpha == 0.05 and ev.settings["memorization_alpha"] == 0.05
    assert ev.settings["memorization_rule"] == ev.memorization.rule()
    rows = {r["metric"]: r for r in ev.table_rows()}
    assert rows["memorized_heldout_fpr"]["value"] == ev.memorization.heldout_fpr.value
    assert "alpha = 0.05" in rows["memorized_fraction"]["note"]
    with pytest.raises(DiversityInputError, match="memorization_alpha"):
        evaluate(R, G, train=T, memorization_alpha=2.0, kid_subsets=0, magnitude=False, n_resamples=0)


def test_the_training_metric_takes_alpha():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchmetrics")
    from diversity_core.metrics import Memorization

    rng = np.random.default_rng(7)
    T, G = rng.normal(size=(300, 8)), rng.normal(size=(100, 8))
    m = Memorization(alpha=0.2)
    m.update(torch.from_numpy(G), train=torch.from_numpy(T))
    want = memorization(G, T, alpha=0.2, nn_method="exact").fraction_flagged.value
    assert float(m.compute()["fraction_flagged"]) == pytest.approx(want)
    assert want > memorization(G, T, nn_method="exact").fraction_flagged.value
    with pytest.raises(DiversityInputError, match="alpha"):
        Memorization(alpha=0)
