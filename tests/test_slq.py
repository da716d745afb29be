"""Full-sample Vendi scores by stochastic Lanczos quadrature (diversity_core.approx.slq) and its blocked operator."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from diversity_core._json import dumps
from diversity_core.approx import VendiSLQ, iter_vendi_slq, kernel_operator, vendi_slq
from diversity_core.approx.slq._quadrature import quadrature_bracket, spectral_values
from diversity_core.exceptions import DiversityInputError
from diversity_core.kernels import get_kernel
from diversity_core.spectrum import compute_spectrum

EPS32 = float(np.finfo(np.float32).eps)


def _data(kind: str, n: int, rng) -> tuple:
    """Items and kernel parameters: Gaussian clusters (rbf, laplacian, ...) or sparse fingerprints (tanimoto)."""
    if kind == "tanimoto":
        return sp.csr_matrix((rng.random((n, 256)) < 0.06).astype(np.float64)), {}
    centres = rng.normal(size=(12, 6)) * 2.0
    X = centres[rng.integers(0, 12, n)] + rng.normal(size=(n, 6))
    return X, {"laplacian": {"sigma": 6.0}, "polynomial": {"degree": 2}}.get(kind, {})


# ------------------------------------------------------------------------------------------
# the blocked operator: K @ V for many vectors, every kernel
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rbf", "laplacian", "cosine", "tanimoto", "polynomial", "precomputed"])
@pytest.mark.parametrize("precision, tol", [("float32", 1e-6), ("float64", 1e-12)])
def test_blocked_operator_equals_k_times_v(kind, precision, tol, rng):
    X, params = _data(kind, 300, rng)
    kern = get_kernel("rbf" if kind == "precomputed" else kind, **params)
    K = kern.resolve(kern.validate(X)).gram(X)
    data = K if kind == "precomputed" else X
    op = kernel_operator(data, kernel=kind, precision=precision, tile=128, **params)   # 3 x 3 tiles, 6 formed
    V = rng.normal(size=(300, 7))
    got = op.kernel_matmat(V)
    assert np.linalg.norm(got - K @ V) <= tol * np.linalg.norm(K @ V)
    assert op.passes == 1 and op.columns == 7 and op.entry_rtol > 0
    assert op.backend == ("features" if kind == "cosine" else "numpy")


def test_weighted_operator_is_the_density_matrix(rng):
    X, _ = _data("rbf", 200, rng)
    w = rng.random(200)
    p = w / w.sum()
    kern = get_kernel("rbf").resolve(X, p)
    rho = np.sqrt(p)[:, None] * kern.gram(X) * np.sqrt(p)[None, :]
    op = kernel_operator(X, kernel="rbf", weights=w, precision="float64", tile=64)
    V = rng.normal(size=(200, 3))
    np.testing.assert_allclose(op.matmat(V), rho @ V, rtol=1e-10, atol=1e-14)
    assert op.kernel["sigma"] == pytest.approx(kern.sigma)    # the weighted median bandwidth, as the exact path


def test_precomputed_memmap_is_read_by_tiles(tmp_path, rng):
    X, _ = _data("rbf", 150, rng)
    K = 2.0 * get_kernel("rbf", sigma=3.0).gram(X)            # diagonal 2: rescaled with a warning
    path = tmp_path / "K.dat"
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=K.shape)
    mm[:] = K
    mm.flush()
    mm = np.memmap(path, dtype=np.float64, mode="r", shape=K.shape)
    with pytest.warns(UserWarning, match="diagonal is not 1"):
        op = kernel_operator(mm, kernel="precomputed", precision="float32", tile=64)
    V = rng.normal(size=(150, 4))
    assert np.linalg.norm(op.kernel_matmat(V) - 0.5 * K @ V) <= 1e-6 * np.linalg.norm(0.5 * K @ V)
    bad = np.array(K)
    bad[3, 140] += 1.0
    mm2 = np.memmap(tmp_path / "bad.dat", dtype=np.float64, mode="w+", shape=K.shape)
    mm2[:] = bad
    with pytest.warns(UserWarning), pytest.raises(DiversityInputError, match="symmetric"):
        kernel_operator(mm2, kernel="precomputed", tile=64).kernel_matmat(V)


@pytest.mark.parametrize("kind", ["rbf", "tanimoto", "laplacian"])
def test_torch_tiles_equal_numpy_tiles(kind, rng):
    pytest.importorskip("torch", reason="torch (the [rnd] extra)")
    X, params = _data(kind, 250, rng)
    V = rng.normal(size=(250, 5))
    ref = kernel_operator(X, kernel=kind, precision="float64", tile=100, **params).kernel_matmat(V)
    op = kernel_operator(X, kernel=kind, precision="float32", device="torch-cpu", tile=100, **params)
    assert op.backend == "torch"
    assert np.linalg.norm(op.kernel_matmat(V) - ref) <= 1e-6 * np.linalg.norm(ref)


def test_dask_row_blocks_equal_the_in_memory_product(rng):
    da = pytest.importorskip("dask.array", reason="dask (the [dask] extra)")
    distributed = pytest.importorskip("distributed", reason="distributed (the [dask] extra)")
    X, _ = _data("rbf", 240, rng)
    V = rng.normal(size=(240, 4))
    ref = kernel_operator(X, kernel="rbf", precision="float64").kernel_matmat(V)
    op = kernel_operator(da.from_array(X, chunks=(70, 6)), kernel="rbf", precision="float32")
    assert op.backend == "dask"
    assert np.linalg.norm(op.kernel_matmat(V) - ref) <= 1e-6 * np.linalg.norm(ref)
    # on a distributed client (in-process here), the whole estimate
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster):
        est = vendi_slq(da.from_array(X, chunks=(80, 6)), kernel="rbf", q=[1.0], k=32, probes=8, rng=0)
    assert est.settings["backend"] == "dask" and est.contains(1.0, compute_spectrum(X, kernel="rbf").vendi(1.0))
    # one chunk of all rows (as a reader sizes them) is cut into tiles: a tile never holds all of K
    op = kernel_operator(da.from_array(X, chunks=(240, 6)), kernel="rbf", precision="float32", tile=64)
    assert op.tile == 64
    assert np.linalg.norm(op.kernel_matmat(V) - ref) <= 1e-6 * np.linalg.norm(ref)


@pytest.mark.parametrize("backend", ["numpy", "torch-cpu", "dask"])
@pytest.mark.parametrize("kind", ["rbf", "tanimoto"])
def test_tile_products_are_summed_in_chunks(backend, kind, monkeypatch, rng):
    # a tile's product sums PRODUCT_CHUNK terms in float32, the partial sums in float64: with a
    # chunk shorter than the tile (40 of 128 rows: 3 full chunks and a short one) the product stays K @ V
    from diversity_core.approx import _operators

    if backend == "torch-cpu":
        pytest.importorskip("torch", reason="torch (the [rnd] extra)")
    monkeypatch.setattr(_operators, "PRODUCT_CHUNK", 40)
    X, params = _data(kind, 300, rng)
    kern = get_kernel(kind, **params)
    K = kern.resolve(kern.validate(X)).gram(X)
    V = rng.normal(size=(300, 5))
    if backend == "dask":
        da = pytest.importorskip("dask.array", reason="dask (the [dask] extra)")
        data = da.from_array(X.toarray() if sp.issparse(X) else X, chunks=(128, -1))
        op = kernel_operator(data, kernel=kind, precision="float32", **params)
    else:
        op = kernel_operator(X, kernel=kind, precision="float32", tile=128, device="cpu" if backend == "numpy"
                             else backend, **params)
    got = op.kernel_matmat(V)
    assert np.linalg.norm(got - K @ V) <= 1e-6 * np.linalg.norm(K @ V)
    # the stated rounding holds entry by entry: |error| <= entry_rtol (|K| |V|)
    assert np.all(np.abs(got - K @ V) <= op.entry_rtol * (np.abs(K) @ np.abs(V)))


def test_stated_rounding_holds_for_a_tile_longer_than_a_chunk(rng):
    # one 2500-row tile: its products sum 20 chunks of 128 float32 terms; the bound the operator
    # states (eps32 (2 + sqrt(128)) plus the exponent's) holds for every entry of K @ V
    X = rng.normal(size=(2500, 16))
    op = kernel_operator(X, kernel="rbf", precision="float32", tile=2500)
    K = get_kernel("rbf").resolve(X).gram(X)
    V = rng.normal(size=(2500, 3))
    err = np.abs(op.kernel_matmat(V) - K @ V)
    eps = np.finfo(np.float32).eps
    assert op.tile == 2500 and op.entry_rtol < eps * (2 + np.sqrt(128)) + 1e-5
    assert np.all(err <= op.entry_rtol * (np.abs(K) @ np.abs(V)))


def test_dask_blocks_are_read_and_validated_once(monkeypatch, rng):
    # each row block is validated and prepared once (persisted where it is), not once per tile and pass
    da = pytest.importorskip("dask.array", reason="dask (the [dask] extra)")
    from diversity_core.approx import _operators

    calls = []
    check = _operators._check_chunk
    monkeypatch.setattr(_operators, "_check_chunk", lambda *a, **k: calls.append(a[2]) or check(*a, **k))
    X, _ = _data("rbf", 240, rng)
    op = kernel_operator(da.from_array(X, chunks=(60, -1)), kernel="rbf", precision="float32")
    V = rng.normal(size=(240, 3))
    ref = kernel_operator(X, kernel="rbf", precision="float64").kernel_matmat(V)
    for _ in range(2):
        assert np.linalg.norm(op.kernel_matmat(V) - ref) <= 1e-6 * np.linalg.norm(ref)
    assert sorted(calls) == [0, 60, 120, 180]           # 4 blocks, each once, named by its first row


def test_time_budget_keeps_the_head_to_its_share(monkeypatch, rng):
    # with 0.1 s a pass and a 2 s budget the head (16 blocks asked) stops before 40% of it, and the
    # probes still get their Lanczos steps and an interval that holds the exact value
    import time as _time

    from diversity_core.approx._operators import KernelOperator

    product = KernelOperator.kernel_matmat

    def slow(self, V):
        _time.sleep(0.1)
        return product(self, V)

    monkeypatch.setattr(KernelOperator, "kernel_matmat", slow)
    X, _ = _data("rbf", 400, rng)
    est = vendi_slq(X, kernel="rbf", q=[1.0], k=256, block=16, probes=8, batch=8, steps=8, rtol=None,
                    max_seconds=2.0, rng=0)
    cut = est.settings["head_cut"]
    assert "40% of the time budget" in cut
    assert int(cut.rsplit(": ", 1)[1].split()[0]) <= 9 and est.steps >= 2
    assert est.contains(1.0, compute_spectrum(X, kernel="rbf").vendi(1.0))


# ------------------------------------------------------------------------------------------
# the quadrature: Gauss and Gauss-Radau bracket z^T f(A) z at every step
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q", [0.3, 0.5, 1.0, 1.5, 2.5, 7.0, 30.0])
def test_gauss_and_radau_rules_bracket_the_integral(q, rng):
    from diversity_core.approx.slq._quadrature import LanczosBatch

    for trial in range(6):
        n = 60
        lam = np.sort(rng.dirichlet(np.full(n, 0.3)))[::-1]
        lam[-10:] = 0.0                                        # rank deficient, as smooth kernels are
        U, _ = np.linalg.qr(rng.normal(size=(n, n)))
        A = (U * lam) @ U.T
        Z = rng.choice([-1.0, 1.0], size=(n, 4))
        exact = np.einsum("ij,ij->j", Z, (U * spectral_values(lam, [q])[0]) @ U.T @ Z)
        batch = LanczosBatch(Z, 12, rng)
        for m in range(1, 12):
            batch.advance(A @ batch.vectors())
            g, r = quadrature_bracket(batch.alpha[:, :m], batch.beta[:, :m], batch.weight, np.array([q]),
                                      upper=lam[0])
            lo, hi = np.minimum(g, r)[0], np.maximum(g, r)[0]
            slack = 1e-9 * np.abs(exact) + 1e-12
            assert np.all(lo <= exact + slack) and np.all(exact <= hi + slack), (trial, m)


# ------------------------------------------------------------------------------------------
# the estimate: the exact value inside its interval
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["rbf", "laplacian", "tanimoto"])
@pytest.mark.parametrize("weighted", [False, True])
def test_slq_interval_contains_the_exact_value(kind, weighted, rng):
    n = 600
    X, params = _data(kind, n, rng)
    w = rng.random(n) + 0.2 if weighted else None
    spec = compute_spectrum(X, kernel=kind, weights=w, **params)
    est = vendi_slq(X, kernel=kind, weights=w, q=[0.5, 1.0, 2.0, "inf"], k=64, block=16, probes=32, batch=16,
                    rng=7, **params)
    assert isinstance(est, VendiSLQ) and est.method == "slq" and est.kind == "estimate" and not est.exact
    assert est.target.startswith("estimate of the full-sample value")
    assert est.probes >= 16 and est.steps >= 2 and est.k == 64 and est.settings["passes"] >= est.steps
    for q in (0.5, 1.0, 2.0, np.inf):
        exact = spec.vendi(q)
        lo, hi = est.interval(q)
        assert lo <= exact <= hi, (q, exact, lo, hi)
        assert lo <= est.vendi(q) <= hi
    assert est.relative_half_width(1.0) < 0.1
    # the half-width's parts are stated, each non-negative; q = 2 quadrature is exact
    assert np.all(est.statistical >= 0) and np.all(est.quadrature >= 0) and np.all(est.rounding >= 0)
    assert est.quadrature[list(est.qs).index(2.0)] < 1e-12


def test_plain_hutchinson_and_an_exhausted_krylov_space(rng):
    X, _ = _data("rbf", 300, rng)
    spec = compute_spectrum(X, kernel="rbf")
    plain = vendi_slq(X, kernel="rbf", q=[1.0, 2.0], k=0, probes=48, rng=1)
    assert plain.k == 0 and all(plain.contains(q, spec.vendi(q)) for q in (1.0, 2.0))
    # a head as large as n spans everything: the head is exact and the probes see nothing
    full = vendi_slq(X, kernel="rbf", q=[0.5, 1.0, 2.0], k=300, block=100, probes=2, precision="float64", rng=1)
    assert full.settings["head_exhausted"]
    for q in (0.5, 1.0, 2.0):
        assert full.vendi(q) == pytest.approx(spec.vendi(q), rel=1e-6)


def test_identity_kernel_gives_n():
    # K = I: every Rademacher probe has g^T f(rho) g = n f(1/n) exactly
    est = vendi_slq(np.eye(6), kernel="rbf", sigma=0.01, q=[0.5, 1.0, 2.0, "inf"], k=0, rng=0)
    np.testing.assert_allclose(est.value, 6.0, rtol=1e-6)


def test_q0_is_refused_with_the_bounds_named(rng):
    X, _ = _data("rbf", 50, rng)
    with pytest.raises(DiversityInputError, match="rank of rho.*vendi_bounds.*--approx bounds"):
        vendi_slq(X, kernel="rbf", q=[0.0, 1.0])


@pytest.mark.parametrize("bad, match", [({"probes": 1}, "probes"), ({"steps": 1}, "steps"),
                                        ({"precision": "half"}, "precision"), ({"device": "tpu"}, "device")])
def test_bad_options_are_refused(bad, match, rng):
    X, _ = _data("rbf", 50, rng)
    with pytest.raises(DiversityInputError, match=match):
        vendi_slq(X, kernel="rbf", **bad)


def test_progressive_iteration_shrinks_the_interval_and_can_be_cancelled(rng):
    X, _ = _data("rbf", 500, rng)
    results = list(iter_vendi_slq(X, kernel="rbf", q=[1.0], k=32, block=16, probes=64, batch=8, rtol=None, rng=3))
    assert [r.probes for r in results] == [8, 16, 24, 32, 40, 48, 56, 64]
    assert results[-1].statistical[0] < results[0].statistical[0]
    assert results[-1].relative_half_width(1.0) < results[0].relative_half_width(1.0)
    assert results[-1].settings["stopped"] == "probes" and all(not r.settings["stopped"] for r in results[:-1])

    calls = []

    def cancel(done, total, message):
        calls.append(done)
        if len(calls) > 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        vendi_slq(X, kernel="rbf", q=[1.0], k=32, block=16, rng=3, progress=cancel)


def test_time_budget_counts_the_work_between_passes(monkeypatch, rng):
    # passes of 0.1 s, each followed by 0.3 s of the algorithm's own work: the run ends within its budget (give
    # or take 0.05 s of a busy machine; predicting from the passes alone overran it by up to 0.3 s)
    import time as _time

    from diversity_core.approx._operators import KernelOperator
    from diversity_core.approx.slq import _quadrature

    product, advance = KernelOperator.kernel_matmat, _quadrature.LanczosBatch.advance

    def slow_product(self, V):
        _time.sleep(0.1)
        return product(self, V)

    def slow_advance(self, W):
        if W.shape[0] == 400:                                    # the probes' steps (not those on the head's T)
            _time.sleep(0.3)
        return advance(self, W)

    X, _ = _data("rbf", 400, rng)
    vendi_slq(X, kernel="rbf", q=[1.0], k=32, block=16, probes=8, batch=8, rng=0)   # first-call imports apart
    monkeypatch.setattr(KernelOperator, "kernel_matmat", slow_product)
    monkeypatch.setattr(_quadrature.LanczosBatch, "advance", slow_advance)
    for budget in (1.5, 2.5):
        est = vendi_slq(X, kernel="rbf", q=[1.0], k=32, block=16, probes=4096, batch=8, steps=40, rtol=None,
                        max_seconds=budget, rng=0)
        assert est.settings["stopped"].startswith("time budget") and est.settings["seconds"] <= budget + 0.05


def test_rtol_and_time_budget_stop_the_progression(rng):
    X, _ = _data("rbf", 400, rng)
    loose = vendi_slq(X, kernel="rbf", q=[1.0, 2.0], k=32, block=16, probes=256, batch=8, rtol=0.2, rng=0)
    assert loose.probes < 256 and "rtol" in loose.settings["stopped"]
    quick = vendi_slq(X, kernel="rbf", q=[1.0], k=32, block=16, probes=4096, batch=8, rtol=None, max_seconds=0.5,
                      rng=0)
    assert quick.probes < 4096 and quick.settings["stopped"].startswith("time budget")


def test_result_to_dict_is_json(rng):
    X, _ = _data("rbf", 120, rng)
    est = vendi_slq(X, kernel="rbf", q=[1.0, "inf"], k=16, block=8, probes=4, rng=0)
    d = json.loads(dumps(est.to_dict()))
    assert d["method"] == "slq" and d["qs"] == ["1", "inf"] and d["probes"] == est.probes
    assert d["target"].startswith("estimate of the full-sample value")
    assert {"statistical", "quadrature", "rounding", "steps", "k", "settings"} <= set(d)


# ------------------------------------------------------------------------------------------
# the CLI
# ------------------------------------------------------------------------------------------
def test_cli_approx_slq_on_a_small_file(tmp_path, rng):
    X, _ = _data("rbf", 300, rng)
    path = tmp_path / "X.npy"
    np.save(path, X)
    res = subprocess.run([sys.executable, "-m", "diversity_core.cli", "score", str(path), "--kernel", "rbf",
                          "--approx", "slq", "--q", "0", "1", "2", "--probes", "16", "--k", "32", "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "q = 0 left out" in res.stderr and "--approx bounds" in res.stderr
    out = json.loads(res.stdout)
    assert out["method"] == "slq" and out["qs"] == ["1", "2"] and out["plan"]["path"] == "slq"
    spec = compute_spectrum(X, kernel="rbf")
    for q, lo, hi in zip((1.0, 2.0), out["low"], out["high"]):
        assert lo <= spec.vendi(q) <= hi
    table = subprocess.run([sys.executable, "-m", "diversity_core.cli", "score", str(path), "--kernel", "rbf",
                            "--approx", "slq", "--q", "1", "--probes", "8", "--k", "32"],
                           capture_output=True, text=True, timeout=300)
    assert table.returncode == 0, table.stderr
    assert "estimate of the full-sample value" in table.stdout and "SLQ" in table.stdout


# ------------------------------------------------------------------------------------------
# the policy: auto picks SLQ beyond the dense limit for q > 0
# ------------------------------------------------------------------------------------------
def test_auto_plan_picks_slq_for_positive_orders_sized_to_the_budget():
    from diversity_core.approx.plan import CLI_NAMES, plan_scores
    from diversity_core.exceptions import MemoryBudgetError

    p = plan_scores(20000, 24, kernel="rbf", approx="auto", q=[1.0, 2.0], memory_budget="1G")
    assert p.path == "slq" and p.slq.sized == "default" and p.slq.peak_bytes <= 2**30
    assert p.slq.kwargs() == {"k": 512, "block": 64, "probes": 64, "batch": 32, "steps": 30}
    assert p.bounds is not None and "SLQ estimate of the full-sample value" in p.reason
    assert plan_scores(20000, 24, kernel="rbf", approx="auto", q=[0.0], memory_budget="1G").path == "bounds"
    small = plan_scores(20000, 24, kernel="rbf", approx="slq", memory_budget="300M").slq
    assert small.sized == "budget" and small.k < 512 and small.peak_bytes <= 300 * 2**20
    with pytest.raises(MemoryBudgetError, match="--steps 400.*--memory-budget"):
        plan_scores(20000, 24, kernel="rbf", approx="slq", steps=400, memory_budget="300M", names=CLI_NAMES)


@pytest.mark.parametrize("dense", [False, True])
def test_float32_tanimoto_tiles_are_the_exact_similarity(dense, monkeypatch, rng):
    # fingerprints (bits, and counts) take float32 tiles: intersections exact, one rounding in the division
    from diversity_core.approx import _operators

    tiles = []
    tile = _operators._tanimoto_tile
    monkeypatch.setattr(_operators, "_tanimoto_tile", lambda *a: tiles.append(a[-1]) or tile(*a))
    X = sp.csr_matrix((rng.random((300, 256)) < 0.06) * rng.integers(1, 4, size=(300, 256)).astype(np.float64))
    X[7] = 0.0                                                   # an empty row: 1 with itself, 0 with others
    data = X.toarray() if dense else X
    op = kernel_operator(data, kernel="tanimoto", precision="float32", tile=128)
    K = get_kernel("tanimoto").gram(X)
    V = rng.normal(size=(300, 4))
    assert np.all(np.abs(op.kernel_matmat(V) - K @ V) <= op.entry_rtol * (np.abs(K) @ np.abs(V)))
    assert sorted(tiles) == [False, False, False, True, True, True]      # 3 x 3 blocks: 6 tiles formed, in float32
    # values float32 cannot hold exactly (non-integers) take the float64 path, still K @ V
    tiles.clear()
    frac = kernel_operator(0.5 * data, kernel="tanimoto", precision="float32", tile=128)
    assert np.linalg.norm(frac.kernel_matmat(V) - K @ V) <= 1e-6 * np.linalg.norm(K @ V) and not tiles


def test_tanimoto_intersections_in_int16_only_where_they_cannot_overflow(rng):
    # int16 CSR while every squared norm is <= 32767; a larger count takes float32; a tile of one
    # block of each kind (two Dask workers' blocks) is the exact similarity all the same
    from diversity_core.approx._operators import _tanimoto_parts, _tanimoto_tile
    from diversity_core.blocked import _columns_view

    X = sp.csr_matrix((rng.random((200, 300)) < 0.1) * rng.integers(1, 9, size=(200, 300)).astype(np.float64))
    big = X.copy().tolil()
    big[3, 5] = 182.0                                           # 182^2 = 33124 > 32767
    big = big.tocsr()
    small_rows, small_sq = _tanimoto_parts(get_kernel("tanimoto"), X)
    big_rows, big_sq = _tanimoto_parts(get_kernel("tanimoto"), big)
    assert small_rows.dtype == np.int16 and big_rows.dtype == np.float32
    assert _columns_view(X).T.flags["C_CONTIGUOUS"]            # the layout CSR x dense reads row by row
    K = get_kernel("tanimoto").gram(sp.vstack([X[:100], big[100:]]).tocsr())
    tol = 2 * np.finfo(np.float32).eps
    for rows_a, sq_a, rows_b, sq_b in [(small_rows, small_sq, big_rows, big_sq), (big_rows, big_sq, small_rows, small_sq)]:
        first = rows_a is small_rows
        T = _tanimoto_tile(rows_a[:100], sq_a[:100], rows_b[100:], sq_b[100:], False)
        want = K[:100, 100:] if first else get_kernel("tanimoto").gram(big[:100], X[100:])
        assert T.dtype == np.float32 and np.allclose(T, want, rtol=tol, atol=0)
    # the int16 sums themselves: the largest intersection, a row with itself, is exact
    T = _tanimoto_tile(small_rows, small_sq, small_rows, small_sq, False)
    assert np.allclose(T, get_kernel("tanimoto").gram(X), rtol=tol, atol=0) and np.allclose(np.diag(T), 1.0, rtol=tol)


def test_tanimoto_intersections_in_int8_for_at_most_127_bits(rng):
    # binary fingerprints with at most 127 bits set (Morgan's 2048 bits hold about 30 to 100) intersect in
    # int8: every partial sum is at most 127 (Cauchy-Schwarz); 128 bits in one row take int16. Tiles of
    # blocks of different kinds (Dask workers' blocks: int8 against int16, float32 or dense rows) are
    # the exact similarity, the sums of 127 bits included
    from diversity_core.approx._operators import _tanimoto_parts, _tanimoto_tile

    tan = get_kernel("tanimoto")
    bits = sp.csr_matrix((rng.random((160, 400)) < 0.2).astype(np.float64))
    full = bits.tolil()
    full[0, :] = 0.0
    full[0, :127] = 1.0                                          # |a|^2 = 127: the int8 limit, exact
    full[1, :] = 0.0
    full[1, :127] = 1.0
    full = full.tocsr()
    over = full.tolil()
    over[2, :] = 0.0
    over[2, :128] = 1.0                                          # 128 > 127
    over = over.tocsr()
    small, small_sq = _tanimoto_parts(tan, full)
    wide, wide_sq = _tanimoto_parts(tan, over)
    assert small.dtype == np.int8 and wide.dtype == np.int16
    counts = sp.csr_matrix(full.multiply(rng.integers(1, 200, size=full.shape)))   # squared norms above 32767
    floats, floats_sq = _tanimoto_parts(tan, counts)
    dense = np.asarray(rng.random((160, 400)) < 0.6, dtype=np.float64)            # mostly ones: dense rows
    dense_rows, dense_sq = _tanimoto_parts(tan, dense)
    assert floats.dtype == np.float32 and isinstance(dense_rows, np.ndarray) and dense_rows.dtype == np.float32
    tol = 2 * np.finfo(np.float32).eps
    T = _tanimoto_tile(small, small_sq, small, small_sq, False)
    assert T[0, 1] == 1.0 and np.allclose(T, tan.gram(full), rtol=tol, atol=0)
    for (ra, sa, xa), (rb, sb, xb) in [((small, small_sq, full), (wide, wide_sq, over)),
                                       ((wide, wide_sq, over), (small, small_sq, full)),
                                       ((small, small_sq, full), (floats, floats_sq, counts)),
                                       ((floats, floats_sq, counts), (small, small_sq, full)),
                                       ((dense_rows, dense_sq, dense), (small, small_sq, full)),
                                       ((small, small_sq, full), (dense_rows, dense_sq, dense))]:
        T = _tanimoto_tile(ra[:80], sa[:80], rb[80:], sb[80:], False)
        want = tan.gram(xa[:80], xb[80:])
        assert T.dtype == np.float32 and np.allclose(T, want, rtol=tol, atol=0), (ra.dtype, rb.dtype)


def test_head_stops_riding_on_the_passes_once_its_brackets_are_negligible(monkeypatch):
    # a spread spectrum (rbf at the root-d bandwidth in 12-d): the head's brackets are negligible after a few
    # steps, the probes' take 9; the head's continuation stops there, and the estimate and its half-width are
    # what a head riding to the end gives
    from diversity_core.approx.slq import _api

    Y = np.random.default_rng(0).normal(size=(1500, 12))
    kwargs = dict(kernel="rbf", sigma=np.sqrt(12.0), q=[1.0], k=128, probes=32, batch=32, rtol=0.001, rng=3)
    cut = vendi_slq(Y, **kwargs)
    monkeypatch.setattr(_api, "_HEAD_NEGLIGIBLE", 0.0)          # the head rides to the batch's last step
    full = vendi_slq(Y, **kwargs)
    steps = cut.settings["batches"][0]
    assert cut.settings["head_steps"] < steps <= full.settings["head_steps"]
    assert cut.settings["passes"] == full.settings["passes"] and cut.settings["columns"] < full.settings["columns"]
    # the head's bracket, a shorter one, moves the entropy by less than the stated quadrature part
    assert 0 < abs(np.log(cut.vendi(1.0)) - np.log(full.vendi(1.0))) <= cut.quadrature[0]
    half = lambda e: (e.high[0] - e.low[0]) / 2                 # noqa: E731
    assert half(cut) <= 1.02 * half(full)
