"""Generative-model evaluation (issue 24): PRDC and improved P/R against ``prdc`` and a brute-force
reference, FD against mpmath and SciPy, KD against its definition, memorisation of injected copies,
the conditional-Vendi identities as properties, the quality-weighted Vendi score and greedy qVS
selection checked by brute force, the intervals and the ``diversity evaluate`` command."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from diversity_core.cli import main
from diversity_core.curation import select_diverse
from diversity_core.evaluation import (
    conditional_vendi,
    evaluate,
    frechet_distance,
    improved_precision_recall,
    kernel_distance,
    memorization,
    prdc,
    quality_weighted_vendi,
    vendi_ratio,
)
from diversity_core.evaluation._frechet import frechet_from_data_small, frechet_parts, moments
from diversity_core.evaluation._kid import mmd2_unbiased
from diversity_core.evaluation._prdc import neighbour_items, prdc_values
from diversity_core.exceptions import DiversityInputError, NumericalWarning
from diversity_core.vendi import vendi_score

EPS = np.finfo(np.float64).eps


# ---------------------------------------------------------------------------------------------
# a brute-force reference of the neighbour metrics (exact differences, float64)
# ---------------------------------------------------------------------------------------------
def _brute(R, G, k, strict):
    R, G = np.asarray(R, np.float64), np.asarray(G, np.float64)
    drr = np.sqrt(((R[:, None] - R[None]) ** 2).sum(-1))
    dgg = np.sqrt(((G[:, None] - G[None]) ** 2).sum(-1))
    drg = np.sqrt(((R[:, None] - G[None]) ** 2).sum(-1))
    np.fill_diagonal(drr, np.inf)
    np.fill_diagonal(dgg, np.inf)
    rad_r = np.sort(drr, axis=1)[:, k - 1]
    rad_g = np.sort(dgg, axis=1)[:, k - 1]
    inside = drg < rad_r[:, None] if strict else drg <= rad_r[:, None]
    inside_g = drg < rad_g[None, :] if strict else drg <= rad_g[None, :]
    return (inside.any(axis=0).mean(), inside_g.any(axis=1).mean(), inside.sum() / (k * G.shape[0]),
            inside.any(axis=1).mean())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, m, d", [(300, 250, 8), (400, 500, 64), (150, 150, 2)])
def test_prdc_matches_the_prdc_package(rng, dtype, n, m, d):
    prdc_pkg = pytest.importorskip("prdc", reason="the prdc package (test extra) is the oracle")
    R = rng.normal(size=(n, d)).astype(dtype)
    G = (rng.normal(size=(m, d)) * 1.2 + 0.3).astype(dtype)
    v = prdc_values(neighbour_items(R, G, 5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref5 = prdc_pkg.compute_prdc(R.astype(np.float64), G.astype(np.float64), 5)
        ref3 = prdc_pkg.compute_prdc(R.astype(np.float64), G.astype(np.float64), 3)
    want = [ref5["precision"], ref5["recall"], ref5["density"], ref5["coverage"], ref3["precision"], ref3["recall"]]
    np.testing.assert_allclose(v, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ties_follow_closed_balls(rng, dtype):
    # integer grid points: distances tie with radii all the time, so < and <= differ; issue 38
    # item 4: one tie rule, the closed ball (tests/test_nearest_neighbours.py: exact recounts)
    R = rng.integers(0, 4, size=(120, 3)).astype(dtype)
    G = rng.integers(0, 4, size=(100, 3)).astype(dtype)
    items = neighbour_items(R, G, 5, 3)
    v = prdc_values(items)
    np.testing.assert_allclose(v[:4], _brute(R, G, 5, strict=False), rtol=0, atol=1e-12)
    np.testing.assert_allclose(v[4:], _brute(R, G, 3, strict=False)[:2], rtol=0, atol=1e-12)


def test_far_from_the_origin_the_decisions_stay_exact(rng):
    # an offset of 1e4 on float32 data: the centring keeps the products accurate, and the few
    # ambiguous pairs are recomputed exactly
    R = (rng.normal(size=(300, 16)) + 1e4).astype(np.float32)
    G = (rng.normal(size=(200, 16)) + 1e4).astype(np.float32)
    np.testing.assert_allclose(prdc_values(neighbour_items(R, G, 5, 3))[:4], _brute(R, G, 5, True),
                               rtol=0, atol=1e-12)


def test_prdc_of_a_set_against_itself_and_a_far_set(rng):
    X = rng.normal(size=(200, 5))
    r = prdc(X, X, n_resamples=0)
    assert (r.precision.value, r.recall.value, r.coverage.value) == (1.0, 1.0, 1.0)
    assert r.nn_method == "exact" and r.precision_items.shape == (200,)
    far = improved_precision_recall(X, X + 1e3, n_resamples=0)
    assert far.precision.value == 0.0 and far.recall.value == 0.0
    with pytest.raises(ValueError):
        r.precision_items[0] = False


def test_prdc_validation(rng):
    X = rng.normal(size=(20, 3))
    with pytest.raises(DiversityInputError, match="same number of features"):
        prdc(X, rng.normal(size=(20, 4)))
    with pytest.raises(DiversityInputError, match="k = 20 needs more than 20 items"):
        prdc(X, X, k=20)
    with pytest.raises(DiversityInputError, match="unknown nn_method"):
        prdc(X, X, nn_method="fast")
    with pytest.raises(DiversityInputError, match="n_resamples must be 0"):
        prdc(X, X, n_resamples=2)
    with pytest.raises(DiversityInputError, match="NaN or infinite"):
        prdc(np.full((5, 3), np.nan), X)


def test_intervals_cover_the_estimate_and_respect_the_ranges(rng):
    R, G = rng.normal(size=(600, 6)), rng.normal(size=(500, 6)) * 1.2
    r = prdc(R, G, rng=0)
    for e in (r.precision, r.recall, r.density, r.coverage):
        lo, hi = e.confidence_interval
        assert e.interval == "extrapolated" and lo <= e.value <= hi and e.se > 0
    assert 0.0 <= r.coverage.confidence_interval.low and r.coverage.confidence_interval.high <= 1.0
    assert prdc(R, G, rng=0).precision == r.precision  # seeded: reproducible


# ---------------------------------------------------------------------------------------------
# Frechet distance
# ---------------------------------------------------------------------------------------------
def _mp_trace_sqrt(S1, S2, dps=50):
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = dps
    A, B = mp.matrix(S1.tolist()), mp.matrix(S2.tolist())
    w, V = mp.eigsy(A)
    H = V * mp.diag([mp.sqrt(max(x, 0)) for x in w]) * V.T
    ev, _ = mp.eigsy(H * B * H)
    return float(mp.fsum(mp.sqrt(max(x, 0)) for x in ev))


def test_frechet_matches_mpmath(rng):
    R = rng.normal(size=(60, 5)) @ rng.normal(size=(5, 5))
    G = rng.normal(size=(50, 5)) @ rng.normal(size=(5, 5)) + 0.5
    mr, mg = moments(R), moments(G)
    parts = frechet_parts(mr, mg)
    ts = _mp_trace_sqrt(mr.cov, mg.cov)
    want = float(((mr.mean - mg.mean) ** 2).sum() + np.trace(mr.cov) + np.trace(mg.cov) - 2 * ts)
    assert parts.trace_sqrt == pytest.approx(ts, rel=1e-13)
    assert parts.value == pytest.approx(want, rel=1e-12)
    # the primal route (nuclear norm of the centred cross product) gives the same number
    assert frechet_from_data_small(R[:4], G[:4]) == pytest.approx(
        frechet_parts(moments(R[:4]), moments(G[:4])).value, rel=1e-10)


def test_frechet_matches_scipy_sqrtm(rng):
    sla = pytest.importorskip("scipy.linalg")
    R, G = rng.normal(size=(400, 32)), rng.normal(size=(300, 32)) * 1.3 + 0.1
    mr, mg = moments(R), moments(G)
    ref = float(((mr.mean - mg.mean) ** 2).sum() + np.trace(mr.cov) + np.trace(mg.cov)
                - 2 * np.trace(sla.sqrtm(mr.cov @ mg.cov)).real)
    r = frechet_distance(R, G, n_resamples=0)
    assert r.value.value == pytest.approx(ref, rel=1e-10)
    assert not r.rank_deficient and r.rank_reference == 32


def test_frechet_rank_deficient_warns_and_routes_agree(rng):
    R, G = rng.normal(size=(20, 30)), rng.normal(size=(25, 30)) + 0.2
    with pytest.warns(NumericalWarning, match="rank-deficient"):
        r = frechet_distance(R, G, n_resamples=0)
    assert r.rank_deficient and r.rank_reference == 19 and r.rank_generated == 24
    assert r.value.value == pytest.approx(frechet_from_data_small(R, G), rel=1e-10)


def test_frechet_shift_is_the_squared_mean_difference(rng):
    X = rng.normal(size=(500, 3))
    assert frechet_distance(X, X + [2.0, 0, 0], n_resamples=0).value.value == pytest.approx(4.0, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# kernel distance
# ---------------------------------------------------------------------------------------------
def test_mmd_matches_its_definition(rng):
    X, Y = rng.normal(size=(7, 3)), rng.normal(size=(7, 3)) + 0.4
    k = lambda a, b: (a @ b / 3 + 1.0) ** 3  # noqa: E731
    m = 7
    xx = sum(k(X[i], X[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    yy = sum(k(Y[i], Y[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    xy = sum(k(X[i], Y[j]) for i in range(m) for j in range(m)) / m**2
    assert mmd2_unbiased(X, Y, gamma=1 / 3, coef0=1.0, degree=3) == pytest.approx(xx + yy - 2 * xy, rel=1e-12)


def test_kernel_distance_is_unbiased_near_zero_for_one_distribution(rng):
    X = rng.normal(size=(2000, 8))
    same = kernel_distance(X[:1000], X[1000:], n_subsets=30, subset_size=200, rng=0)
    far = kernel_distance(X[:1000], X[1000:] + 1.0, n_subsets=30, subset_size=200, rng=0)
    assert abs(same.mean) < 3 * same.std / math.sqrt(30) + 1e-12
    assert far.mean > 10 * same.std and far.values.shape == (30,)


# ---------------------------------------------------------------------------------------------
# Vendi scores: ratio, quality-weighted, greedy qVS selection
# ---------------------------------------------------------------------------------------------
def test_vendi_ratio_at_equal_n(rng):
    r = vendi_ratio(np.eye(4), np.eye(4)[[0, 0, 1, 1]], n_resamples=0)
    assert r.ratio.value == pytest.approx(0.5, abs=1e-12) and r.n == 4
    X = rng.normal(size=(300, 5))
    big = vendi_ratio(X[:100], X, n_resamples=0, rng=0)  # the larger set scored at n = 100
    assert big.n == 100 and big.ratio.value == pytest.approx(1.0, abs=0.05)


def test_quality_weighted_vendi():
    r = quality_weighted_vendi(np.eye(3), [1.0, 0.5, 0.0])
    assert r.qvs == pytest.approx(1.5, rel=1e-12) and r.vs == pytest.approx(3.0, rel=1e-12)
    with pytest.raises(DiversityInputError, match="non-negative"):
        quality_weighted_vendi(np.eye(3), [1.0, -0.5, 0.0])
    with pytest.raises(DiversityInputError, match="one score per item"):
        quality_weighted_vendi(np.eye(3), [1.0])


def _qvs2(K, q, idx):
    """qVS_2 of the items ``idx`` by brute force: mean quality x 1 / sum(eigenvalues^2 of K/m)."""
    idx = list(idx)
    lam = np.linalg.eigvalsh(K[np.ix_(idx, idx)] / len(idx))
    lam = lam / lam.sum()
    return float(np.mean(q[idx]) / np.sum(lam**2))


def test_greedy_qvs_selection_on_a_worked_example():
    # six items: a high-quality pair of near-duplicates (0, 1), two orthogonal mid-quality items
    # (2, 3), a diagonal item (4) and a poor but orthogonal one (5)
    X = np.array([[1, 0, 0, 0], [0.99, 0.141, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0.7, 0.7, 0, 0],
                  [0, 0, 0, 1]], dtype=np.float64)
    q = np.array([1.0, 0.98, 0.8, 0.7, 0.9, 0.1])
    K = X @ X.T / np.outer(np.linalg.norm(X, axis=1), np.linalg.norm(X, axis=1))
    sel = select_diverse(X, 3, objective="qvs2", quality=q, rng=0)
    order = [int(i) for i in sel.indices]
    # every step is the brute-force best extension, starting from the best singleton
    chosen = []
    for step in range(3):
        cands = [i for i in range(6) if i not in chosen]
        best = max(cands, key=lambda i: (_qvs2(K, q, chosen + [i]), -i))
        assert order[step] == best
        chosen.append(best)
    assert order == [0, 2, 3]
    # and on this example the greedy set is the best of all 20 three-item sets
    best_set = max(itertools.combinations(range(6), 3), key=lambda s: _qvs2(K, q, s))
    assert sorted(order) == sorted(best_set)
    assert _qvs2(K, q, order) == pytest.approx(0.8333333333 * 3, rel=1e-9)


def test_qvs_selection_validation(rng):
    X = rng.normal(size=(10, 3))
    with pytest.raises(DiversityInputError, match="needs quality"):
        select_diverse(X, 3, objective="qvs2")
    with pytest.raises(DiversityInputError, match="applies to objective='qvs2' only"):
        select_diverse(X, 3, quality=np.ones(10))


# ---------------------------------------------------------------------------------------------
# memorisation
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_injected_copies_are_found(rng, metric):
    T = rng.normal(size=(2000, 32)).astype(np.float32)
    fresh = rng.normal(size=(400, 32)).astype(np.float32)
    src = rng.choice(2000, 200, replace=False)
    copies = T[src] + rng.normal(scale=1e-4, size=(200, 32)).astype(np.float32)
    G = np.vstack([fresh, copies])
    r = memorization(G, T, reference=rng.normal(size=(500, 32)), metric=metric)
    injected = r.flagged[400:]
    assert injected.mean() >= 0.99
    np.testing.assert_array_equal(r.nearest[400:], src)
    assert r.excess > 0.1 and r.baseline_fraction.interval == "binomial"
    lo, hi = r.fraction_flagged.confidence_interval
    assert lo <= r.fraction_flagged.value <= hi
    assert {row["generated"] for row in r.top_items(200)} == set(range(400, 600))


def test_memorization_exact_copies_and_validation(rng):
    T = rng.normal(size=(50, 3))
    r = memorization(T[:5], T)
    assert r.n_flagged == 5 and list(r.nearest) == [0, 1, 2, 3, 4] and np.all(r.distance == 0)
    with pytest.raises(DiversityInputError, match="same number of features"):
        memorization(T[:, :2], T)
    with pytest.raises(DiversityInputError, match="unknown metric"):
        memorization(T, T, metric="manhattan")


# ---------------------------------------------------------------------------------------------
# conditional and information Vendi scores: the identities of Jalali et al. as properties
# ---------------------------------------------------------------------------------------------
SEEDS = st.integers(0, 2**31 - 1)


@given(seed=SEEDS, n=st.integers(3, 14), d=st.integers(1, 6))
def test_one_prompt_leaves_the_entropy_and_shares_nothing(seed, n, d):
    X = np.random.default_rng(seed).normal(size=(n, d))
    c = conditional_vendi(X, ["p"] * n)
    assert c.h_conditional == pytest.approx(c.h_items, abs=1e-9)
    assert c.mutual_information == pytest.approx(0.0, abs=1e-9)
    assert c.h_prompts == 0.0


@given(seed=SEEDS, n=st.integers(3, 14), n_prompts=st.integers(1, 5))
def test_items_determined_by_their_prompts_have_no_conditional_entropy(seed, n, n_prompts):
    labels = np.random.default_rng(seed).integers(0, n_prompts, size=n)
    X = np.eye(n_prompts)[labels]  # item kernel (cosine) = prompt kernel
    by_label = conditional_vendi(X, labels)
    by_feature = conditional_vendi(X, np.eye(n_prompts)[labels])  # the dense joint kernel
    for c in (by_label, by_feature):
        assert c.h_conditional == pytest.approx(0.0, abs=1e-9)
        assert c.mutual_information == pytest.approx(c.h_items, abs=1e-9)


@given(seed=SEEDS, n=st.integers(3, 14), d=st.integers(1, 6))
def test_distinct_orthogonal_prompts_explain_everything(seed, n, d):
    X = np.random.default_rng(seed).normal(size=(n, d))
    c = conditional_vendi(X, [f"p{i}" for i in range(n)])
    assert c.h_joint == pytest.approx(math.log(n), abs=1e-9)
    assert c.h_prompts == pytest.approx(math.log(n), abs=1e-12)
    assert c.h_conditional == pytest.approx(0.0, abs=1e-9)
    assert c.mutual_information == pytest.approx(c.h_items, abs=1e-9)


@given(seed=SEEDS, n=st.integers(3, 12), n_prompts=st.integers(1, 4), d=st.integers(1, 5))
def test_labels_match_the_dense_joint_kernel_and_bounds_hold(seed, n, n_prompts, d):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    labels = r.integers(0, n_prompts, size=n)
    a = conditional_vendi(X, labels)
    b = conditional_vendi(X, np.eye(n_prompts)[labels])
    assert a.h_joint == pytest.approx(b.h_joint, abs=1e-9)
    assert a.h_conditional == pytest.approx(b.h_conditional, abs=1e-9)
    # 0 <= H(X|T) <= H(X) and 0 <= I(X;T) <= min(H(X), H(T))
    assert -1e-9 <= a.h_conditional <= a.h_items + 1e-9
    assert -1e-9 <= a.mutual_information <= min(a.h_items, a.h_prompts) + 1e-9


def test_orthogonal_items_and_within_prompt_mean(rng):
    c = conditional_vendi(np.eye(6), ["a", "a", "a", "b", "b", "c"])
    p = np.array([3, 2, 1]) / 6
    assert c.mutual_information == pytest.approx(-(p * np.log(p)).sum(), abs=1e-12)  # I = H(T)
    assert c.per_prompt["a"] == {"n": 3, "vendi": pytest.approx(3.0)}
    assert c.within_prompt.value == pytest.approx(2.0) and c.within_prompt.interval == "prompts"
    X = rng.normal(size=(30, 4))
    assert conditional_vendi(X, ["x"] * 30).vendi == pytest.approx(vendi_score(X), rel=1e-12)
    with pytest.raises(DiversityInputError, match="one label per item"):
        conditional_vendi(X, ["x"] * 29)


# ---------------------------------------------------------------------------------------------
# evaluate and the CLI
# ---------------------------------------------------------------------------------------------
def test_evaluate_runs_every_part_and_serialises(rng, tmp_path):
    R, G = rng.normal(size=(300, 8)), rng.normal(size=(250, 8)) * 1.1
    T = rng.normal(size=(200, 8))
    prompts = rng.choice(["a", "b"], size=250)
    ev = evaluate(R, G, train=T, prompts=prompts, quality=rng.random(250), kid_subsets=10, kid_subset_size=100,
                  magnitude_n=100, rng=0)
    names = [r["metric"] for r in ev.table_rows()]
    for name in ("precision", "coverage", "improved_recall", "frechet_distance", "kernel_distance", "vendi_ratio",
                 "magdiff", "memorized_fraction", "conditional_vendi", "quality_vendi"):
        assert name in names
    # the shared pass gives the standalone functions' numbers
    assert ev.prdc.precision.value == prdc(R, G, n_resamples=0).precision.value
    assert ev.improved.recall.value == improved_precision_recall(R, G, n_resamples=0).recall.value
    assert ev.frechet.value.value == pytest.approx(frechet_distance(R, G, n_resamples=0).value.value, rel=1e-14)
    data = json.loads(ev.to_json(tmp_path / "e.json"))
    assert data["format"] == "diversity-evaluation/1" and data["settings"]["nn_method"] == "exact"
    assert data["prdc"]["precision"]["interval"] == "extrapolated"
    assert ev.to_csv().splitlines()[0] == "metric,value,se,sd,ci_low,ci_high,interval,note"


def test_cli_evaluate(rng, tmp_path, capsys):
    np.save(tmp_path / "real.npy", rng.normal(size=(200, 6)))
    np.save(tmp_path / "train.npy", rng.normal(size=(150, 6)))
    import pandas as pd

    df = pd.DataFrame(rng.normal(size=(120, 6)), columns=[f"f{i}" for i in range(6)])
    df["prompt"] = rng.choice(["cat", "dog"], size=120)
    df["quality"] = rng.random(120)
    df.to_csv(tmp_path / "gen.csv", index=False)
    out = [str(tmp_path / n) for n in ("e.json", "e.csv", "e.html")]
    code = main(["evaluate", str(tmp_path / "gen.csv"), "--reference", str(tmp_path / "real.npy"), "--train",
                 str(tmp_path / "train.npy"), "--prompt-column", "prompt", "--quality-column", "quality",
                 "--kid-subsets", "5", "--kid-subset-size", "50", "--magnitude-n", "60", "--json", out[0],
                 "--csv", out[1], "--out", out[2]])
    assert code == 0
    text = capsys.readouterr().out
    assert "precision" in text and "conditional_vendi" in text and "memorized_fraction" in text
    assert json.loads((tmp_path / "e.json").read_text())["n_generated"] == 120
    assert "<table>" in (tmp_path / "e.html").read_text()
    np.save(tmp_path / "bad.npy", rng.normal(size=(30, 4)))
    assert main(["evaluate", str(tmp_path / "bad.npy"), "--reference", str(tmp_path / "real.npy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "featurize both alike" in err[0]


@pytest.mark.parametrize("kind", ["float32", "grid", "duplicates"])
def test_within_set_search_by_the_upper_triangle_is_exact(rng, kind):
    from diversity_core import config_context
    from diversity_core.evaluation._neighbours import kth_smallest, prepare_pair

    X = {"float32": lambda: rng.normal(size=(500, 16)).astype(np.float32),
         "grid": lambda: rng.integers(0, 3, size=(400, 4)).astype(np.float64),  # ties everywhere: rows redone
         "duplicates": lambda: np.vstack([rng.normal(size=(200, 8))] * 2)}[kind]()
    (a,) = prepare_pair(X)
    with config_context(chunk_bytes=4096):  # blocks of 16 rows: the symmetric path
        values, nearest = kth_smallest(a, None, [1, 3, 5])
    D = ((X[:, None].astype(np.float64) - X[None].astype(np.float64)) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    np.testing.assert_allclose(values, np.sort(D, axis=1)[:, [0, 2, 4]], rtol=64 * EPS, atol=0)
    np.testing.assert_array_equal(D[np.arange(X.shape[0]), nearest], np.sort(D, axis=1)[:, 0])


# ---------------------------------------------------------------------------------------------
# review of issue 24: orders q, the independent-prompts identity, the Kronecker branch, intervals
# of unequal sets, the kernel distance's sd, the per-item memorisation table
# ---------------------------------------------------------------------------------------------
ORDERS = st.sampled_from([0.5, 1.0, 2.0, math.inf])


@given(seed=SEEDS, m=st.integers(2, 6), n_prompts=st.integers(2, 4), d=st.integers(1, 5), q=ORDERS)
def test_independent_prompts_share_no_information(seed, m, n_prompts, d, q):
    # a product design: the same m items under every prompt, so K_X o K_T is a Kronecker product
    # and the joint entropy is the sum of the two: I(X;T) = 0 at every order
    r = np.random.default_rng(seed)
    items = r.normal(size=(m, d))
    X = np.tile(items, (n_prompts, 1))
    labels = np.repeat(np.arange(n_prompts), m)
    P = r.normal(size=(n_prompts, 3))[labels]  # prompt features: any prompt kernel, still independent
    for prompts in (labels, P):
        c = conditional_vendi(X, prompts, q=q)
        assert c.mutual_information == pytest.approx(0.0, abs=1e-9)
        assert c.h_conditional == pytest.approx(c.h_items, abs=1e-9)
        assert c.information_vendi == pytest.approx(1.0, abs=1e-8)


@given(seed=SEEDS, n=st.integers(3, 12), n_prompts=st.integers(1, 4), d=st.integers(1, 5), q=ORDERS)
def test_identities_hold_at_every_order(seed, n, n_prompts, d, q):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    one = conditional_vendi(X, ["p"] * n, q=q)
    assert one.h_conditional == pytest.approx(one.h_items, abs=1e-9) and one.mutual_information == pytest.approx(0.0, abs=1e-9)
    assert one.vendi == pytest.approx(vendi_score(X, q=q), rel=1e-9) and one.q == q
    labels = r.integers(0, n_prompts, size=n)
    det = conditional_vendi(np.eye(n_prompts)[labels], labels, q=q)  # items determined by their prompts
    assert det.h_conditional == pytest.approx(0.0, abs=1e-9)
    assert det.mutual_information == pytest.approx(det.h_items, abs=1e-9)
    # labels (block spectra) and prompt features (the dense joint kernel) agree at every order
    a, b = conditional_vendi(X, labels, q=q), conditional_vendi(X, np.eye(n_prompts)[labels], q=q)
    assert a.h_joint == pytest.approx(b.h_joint, abs=1e-9) and a.h_prompts == pytest.approx(b.h_prompts, abs=1e-9)


def test_within_prompt_scores_follow_the_order():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    c = conditional_vendi(X, ["a"] * 3 + ["b"] * 3, q=2)
    # each prompt holds two identical items and one orthogonal: eigenvalues (2/3, 1/3), VS_2 = 1/(4/9 + 1/9)
    assert c.per_prompt["a"]["vendi"] == pytest.approx(1.8, rel=1e-12)
    assert c.within_prompt.value == pytest.approx(1.8, rel=1e-12)
    assert c.conditional_vendi == pytest.approx(1.8, rel=1e-12)  # both prompts alike: VS_2 of either


def test_evaluate_passes_its_order_to_the_prompt_scores(rng):
    R, G = rng.normal(size=(80, 5)), rng.normal(size=(60, 5))
    prompts = rng.choice(["a", "b", "c"], size=60)
    ev = evaluate(R, G, prompts=prompts, q=2, kid_subsets=0, magnitude=False, n_resamples=0, rng=0)
    ref = conditional_vendi(G, prompts, q=2)
    assert ev.conditional.q == 2.0 and ev.conditional.conditional_vendi == pytest.approx(ref.conditional_vendi, rel=1e-12)
    assert ev.conditional.conditional_vendi != pytest.approx(conditional_vendi(G, prompts).conditional_vendi, rel=1e-6)
    notes = {r["metric"]: r["note"] for r in ev.table_rows()}
    assert "H_2(X|T)" in notes["conditional_vendi"] and notes["within_prompt_vendi"].startswith("VS_2")


def test_kronecker_feature_map_matches_the_dense_joint_kernel(rng, monkeypatch):
    import diversity_core.evaluation._conditional as cond
    from diversity_core import config_context

    X = rng.normal(size=(300, 3))
    P = rng.normal(size=(300, 2)) + np.array([1.0, 0.0])  # prompt features (dual dimension 3 x 2 = 6 < n)
    dense = {q: conditional_vendi(X, P, q=q) for q in (1.0, 2.0)}
    seen = []
    real = cond.compute_spectrum

    def spy(Z, **kw):
        seen.append(np.shape(Z))
        return real(Z, **kw)

    monkeypatch.setattr(cond, "compute_spectrum", spy)
    with config_context(memory_budget="1M"):  # the 300 x 300 joint kernel (1.4 MB) does not fit
        small = {q: conditional_vendi(X, P, q=q) for q in (1.0, 2.0)}
    assert (300, 6) in seen  # the joint feature map took the place of the joint kernel
    for q in (1.0, 2.0):
        for name in ("h_joint", "h_conditional", "mutual_information", "h_prompts"):
            assert getattr(small[q], name) == pytest.approx(getattr(dense[q], name), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("n_r, n_g", [(2000, 50), (50, 2000)])
def test_intervals_are_sized_on_the_smaller_set(rng, n_r, n_g):
    from diversity_core.evaluation._intervals import fit_sizes_for

    M, sizes, reason = fit_sizes_for(n_r, n_g, 2048, 20)
    assert len(sizes) >= 2 and reason == ""
    for m in sizes:  # every subset pair holds at least 20 items of each set, at most half of each
        assert 20 <= min(m, m * n_r // n_g) and m <= n_g // 2
    R, G = rng.normal(size=(n_r, 4)), rng.normal(size=(n_g, 4)) * 1.1
    r = prdc(R, G, rng=0)
    for e in (r.precision, r.recall, r.density, r.coverage):
        lo, hi = e.confidence_interval
        assert e.interval == "extrapolated" and lo <= e.value <= hi and e.note == ""
    assert frechet_distance(R, G, rng=0).value.interval == "extrapolated"
    assert vendi_ratio(R, G, rng=0, n_subsamples=2).ratio.interval == "extrapolated"


def test_no_interval_says_why(rng):
    R, G = rng.normal(size=(2000, 4)), rng.normal(size=(30, 4))
    r = prdc(R, G, rng=0)
    assert r.precision.interval == "none" and r.precision.confidence_interval is None
    assert "generated set has 30 items" in r.precision.note and "more items" in r.precision.note
    assert r.to_dict()["precision"]["note"] == r.precision.note
    ev = evaluate(R, G, kid_subsets=0, magnitude=False, rng=0)
    assert any("no intervals" in n and "30 items" in n for n in ev.settings["notes"])
    assert "30 items" in ev.settings["interval"]["reason"]


def test_kernel_distance_row_shows_its_subset_sd(rng):
    R, G = rng.normal(size=(120, 4)), rng.normal(size=(100, 4)) + 0.5
    ev = evaluate(R, G, kid_subsets=6, kid_subset_size=40, magnitude=False, n_resamples=0, rng=0)
    row = next(r for r in ev.table_rows() if r["metric"] == "kernel_distance")
    assert row["sd"] == ev.kernel_distance.std > 0 and row["se"] is None and "±" in row["note"]
    line = next(ln for ln in ev.to_csv().splitlines() if ln.startswith("kernel_distance,"))
    assert line.split(",")[3] == repr(ev.kernel_distance.std)
    assert all(r["sd"] is None for r in ev.table_rows() if r["metric"] != "kernel_distance")


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_every_generated_item_has_its_row(rng, metric, tmp_path):
    import csv as csv_module

    T = rng.normal(size=(40, 3))
    G = np.vstack([T[:3] + 1e-9, rng.normal(size=(5, 3))])
    r = memorization(G, T, metric=metric)
    gen_ids = [f"g{i}" for i in range(8)]
    train_ids = [f"t{i}" for i in range(40)]
    text = r.items_csv(tmp_path / "items.csv", generated_ids=gen_ids, train_ids=train_ids, order="input")
    assert (tmp_path / "items.csv").read_text() == text
    rows = list(csv_module.DictReader(text.splitlines()))
    assert [row["generated_id"] for row in rows] == gen_ids and len(rows) == r.n_generated
    assert [row["nearest_train_id"] for row in rows[:3]] == ["t0", "t1", "t2"]
    assert [row["flagged"] for row in rows[:3]] == ["True"] * 3
    for row, i in zip(rows, range(8)):
        assert float(row["distance"]) == r.distance[i] and float(row["train_radius"]) == r.train_radius[i]
        # the cosine similarity of the two items' features, whatever the metric
        assert float(row["similarity"]) == pytest.approx(
            G[i] @ T[r.nearest[i]] / np.linalg.norm(G[i]) / np.linalg.norm(T[r.nearest[i]]), abs=1e-9)
    with pytest.raises(DiversityInputError, match="one id per item: expected 8, got 2"):
        r.items_csv(generated_ids=["a", "b"])
