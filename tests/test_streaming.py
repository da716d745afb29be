"""Streamed dual path (issue 11): chunks from memory, .npy, memmaps, Parquet and shards equal the in-memory result."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import diversity_core as dc
from diversity_core._config import config_context
from diversity_core.exceptions import DiversityInputError, MemoryBudgetError
from diversity_core.featurizers.text import ngram_features
from diversity_core.kernels import get_kernel
from diversity_core.sources import (
    ArraySource,
    NpySource,
    ParquetSource,
    ShardSource,
    as_source,
    chunk_bounds,
    open_source,
)
from diversity_core.streaming import _array_chunks, _dual_moments

N, D = 1001, 7
#: chunk_bytes giving 64-row chunks (the minimum), which do not divide N
SMALL_CHUNKS = "1K"


def _feature_kernels():
    return {
        "linear": get_kernel("linear"),
        "cosine": get_kernel("cosine"),
        "probability_product": get_kernel("probability_product"),
        "sum": 0.3 * get_kernel("cosine") + 0.7 * get_kernel("linear"),
    }


def _data(rng, name):
    X = rng.standard_normal((N, D))
    if name == "probability_product":
        X = np.exp(X)
        X /= X.sum(axis=1, keepdims=True)
    return X


def assert_same_spectrum(a, b, rtol=1e-10):
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=0, atol=rtol * b.eigenvalues[0])
    for q in (0.5, 1.0, 2.0, np.inf):
        assert a.vendi(q) == pytest.approx(b.vendi(q), rel=rtol)


@pytest.mark.filterwarnings("ignore::diversity_core.KernelDiagonalWarning")  # linear: unit diagonal not asked for
@pytest.mark.parametrize("name", list(_feature_kernels()))
@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
def test_chunked_equals_one_product_for_every_feature_kernel(rng, tmp_path, name, weighted):
    X = _data(rng, name)
    w = rng.random(N) if weighted else None
    kern = _feature_kernels()[name]
    with config_context(chunk_bytes="1G"):
        ref = dc.compute_spectrum(X, kernel=kern, weights=w, n_eigenvectors=2)
    np.save(tmp_path / "X.npy", X)
    with config_context(chunk_bytes=SMALL_CHUNKS):
        in_memory = dc.compute_spectrum(X, kernel=kern, weights=w, n_eigenvectors=2)
        streamed = dc.compute_spectrum(tmp_path / "X.npy", kernel=kern, weights=w, n_eigenvectors=2)
    assert streamed.method == "dual" and streamed.execution == "streamed" and streamed.exact
    assert in_memory.execution == "in-memory"
    for spec in (in_memory, streamed):
        assert_same_spectrum(spec, ref)
        np.testing.assert_allclose(np.abs(spec.eigenvectors), np.abs(ref.eigenvectors), atol=1e-10)


@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
def test_sparse_ngram_features_chunked(rng, weighted):
    words = ["red", "green", "blue", "cat", "dog", "runs", "sleeps", "fast"]
    texts = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(400)]
    F = ngram_features(texts, n=2)
    assert sp.issparse(F) and F.shape[1] < F.shape[0]
    w = rng.random(len(texts)) if weighted else None
    dense = dc.compute_spectrum(F.toarray(), kernel="linear", weights=w, method="dense")
    with config_context(chunk_bytes=SMALL_CHUNKS):
        assert len(list(_array_chunks(F))) > 1
        chunked = dc.compute_spectrum(F, kernel="linear", weights=w)
    assert chunked.method == "dual"
    assert chunked.vendi(1.0) == pytest.approx(dense.vendi(1.0), rel=1e-10)
    assert chunked.vendi(2.0) == pytest.approx(dense.vendi(2.0), rel=1e-10)


def test_chunk_bounds_never_leave_one_row():
    for n in range(2, 40):
        for rows in range(1, 12):
            bounds = chunk_bounds(n, rows)
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
            assert all(stop - start >= 2 for start, stop in bounds) or rows == 1


def test_float32_chunks_accumulate_in_float64(rng):
    # issue 38: a float32 chunk is converted to float64 (exact) before its product, so the sums, and
    # the support threshold (float64's eps), are those of the float64 copy
    X = rng.standard_normal((1000, 5)).astype(np.float32)
    kern = get_kernel("linear")
    rows = 97
    moments = _dual_moments(_array_chunks(X, rows), kern, None, n=1000, d=5, validate=False)
    assert moments.gram.dtype == np.float64
    assert moments.eps == np.finfo(np.float64).eps
    expected = np.zeros((5, 5))
    for start, stop in chunk_bounds(1000, rows):
        block = X[start:stop].astype(np.float64)
        expected += block.T @ block  # each chunk in double, summed in double
    np.testing.assert_array_equal(moments.gram, expected * (1.0 / 1000))


def test_memmap_never_loaded_whole(rng, tmp_path):
    X = rng.standard_normal((20000, 16))  # 2.4 MiB on disk
    path = tmp_path / "big.npy"
    np.save(path, X)
    ref = dc.compute_spectrum(X)
    mm = np.load(path, mmap_mode="r")
    assert isinstance(as_source(mm), NpySource)
    with config_context(memory_budget="1M", chunk_bytes="64K"):
        with pytest.raises(MemoryBudgetError, match="reading all 20000 x 16"):
            open_source(path).read()
        tracemalloc.start()
        try:
            spec = dc.compute_spectrum(mm)
            spec_path = dc.compute_spectrum(str(path))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 1 << 20, f"peak traced allocation {peak} bytes for a {X.nbytes}-byte file"
    assert spec.execution == spec_path.execution == "streamed"
    assert_same_spectrum(spec, ref)
    assert_same_spectrum(spec_path, ref)


def test_budget_refusal_names_size_budget_and_options(rng):
    X = rng.standard_normal((300, 4))
    with config_context(memory_budget="100K"):
        with pytest.raises(MemoryBudgetError) as err:
            dc.compute_spectrum(X, kernel="rbf")
        message = str(err.value)
        for part in ("n = 300", "1.37 MiB", "100 KiB", "cosine", "vendi_2_exact", "set_config"):
            assert part in message, message
        with pytest.raises(MemoryBudgetError, match="dense spectrum of n = 300"):
            dc.compute_spectrum(X, kernel="cosine", method="dense")
        with pytest.raises(MemoryBudgetError, match="300 x 300 rbf kernel matrix"):
            dc.kernel_matrix(X, kernel="rbf")
        # the feature path needs no n x n matrix, whatever the budget
        assert dc.compute_spectrum(X, kernel="cosine").method == "dual"


def test_auto_takes_dense_within_the_budget(rng):
    X = rng.standard_normal((50, 80))
    assert dc.compute_spectrum(X).method == "dense"
    with config_context(memory_budget="10K"), pytest.raises(MemoryBudgetError, match="n = 50"):
        dc.compute_spectrum(X)


@pytest.fixture
def pa():
    """pyarrow, or skip the test."""
    return pytest.importorskip("pyarrow", reason="Parquet files need pyarrow (extra [parquet])")


def _write_parquet(path, table, row_group_size):
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=row_group_size)


@pytest.mark.parametrize("layout", ["list", "fixed_size_list", "columns"])
def test_parquet_row_groups(rng, tmp_path, layout, pa):
    X = rng.standard_normal((N, D))
    ids = pa.array([f"item{i}" for i in range(N)])
    if layout == "list":
        table = pa.table({"id": ids, "embedding": pa.array(list(X), type=pa.list_(pa.float64()))})
    elif layout == "fixed_size_list":
        table = pa.table({"embedding": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), D), "id": ids})
    else:
        table = pa.table({"id": ids, **{f"f{j}": X[:, j] for j in range(D)}})
    _write_parquet(tmp_path / "x.parquet", table, row_group_size=300)
    source = open_source(tmp_path / "x.parquet")
    assert isinstance(source, ParquetSource) and source.shape == (N, D)
    assert source.layout.row_groups == (300, 300, 300, 101)
    w = rng.random(N)
    with config_context(chunk_bytes=SMALL_CHUNKS):
        spec = dc.compute_spectrum(source, weights=w)
        np.testing.assert_array_equal(source.take([0, 299, 300, 1000]), X[[0, 299, 300, 1000]])
    assert_same_spectrum(spec, dc.compute_spectrum(X, weights=w))


def test_parquet_float32_columns_stay_float32(rng, tmp_path, pa):
    X = rng.standard_normal((200, 3)).astype(np.float32)
    _write_parquet(tmp_path / "x.parquet", pa.table({f"c{j}": X[:, j] for j in range(3)}), 64)
    source = open_source(tmp_path / "x.parquet")
    assert source.dtype == np.float32
    assert dc.compute_spectrum(source).vendi(1) == pytest.approx(dc.compute_spectrum(X).vendi(1), rel=1e-6)


def test_parquet_errors(tmp_path, pa):
    table = pa.table({"emb": pa.array([[1.0, 2.0], [3.0], [4.0, 5.0]], type=pa.list_(pa.float64()))})
    _write_parquet(tmp_path / "ragged.parquet", table, 2)
    with pytest.raises(DiversityInputError, match="row 2 has a vector of length 1"):
        dc.compute_spectrum(tmp_path / "ragged.parquet")
    _write_parquet(tmp_path / "text.parquet", pa.table({"a": [1.0, 2.0], "b": ["x", "y"]}), 2)
    with pytest.raises(DiversityInputError, match="column 'b' is not numeric"):
        open_source(tmp_path / "text.parquet")


def test_shards_in_name_order(rng, tmp_path):
    X = rng.standard_normal((N, D))
    folder = tmp_path / "shards"
    folder.mkdir()
    cuts = [0, 1, 1, 400, 401, 1001]  # a one-row shard and an empty one
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        np.save(folder / f"part-{i:04d}.npy", X[a:b])
    source = open_source(folder)
    assert isinstance(source, ShardSource) and source.shape == (N, D)
    w = rng.random(N)
    with config_context(chunk_bytes=SMALL_CHUNKS):
        spec = dc.compute_spectrum(folder, weights=w, n_eigenvectors=1)
        np.testing.assert_array_equal(source.take([0, 1, 400, 1000]), X[[0, 1, 400, 1000]])
        np.testing.assert_array_equal(np.vstack([b.copy() for _, b in source.chunks(100, start=150)]), X[150:])
    ref = dc.compute_spectrum(X, weights=w, n_eigenvectors=1)
    assert_same_spectrum(spec, ref)
    np.testing.assert_allclose(np.abs(spec.eigenvectors), np.abs(ref.eigenvectors), atol=1e-10)


def test_shards_must_agree(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    np.save(folder / "a.npy", np.ones((3, 4)))
    np.save(folder / "b.npy", np.ones((3, 5)))
    with pytest.raises(DiversityInputError, match="same columns"):
        open_source(folder)


def test_streamed_errors_name_absolute_rows(rng, tmp_path):
    X = rng.standard_normal((500, 4))
    X[321, 2] = np.nan
    np.save(tmp_path / "nan.npy", X)
    with config_context(chunk_bytes=SMALL_CHUNKS), pytest.raises(DiversityInputError, match="rows 322 "):
        dc.compute_spectrum(tmp_path / "nan.npy")
    np.save(tmp_path / "f.npy", np.asfortranarray(rng.standard_normal((10, 3))))
    with pytest.raises(DiversityInputError, match="Fortran order"):
        open_source(tmp_path / "f.npy")
    np.save(tmp_path / "3d.npy", np.ones((2, 3, 4)))
    with pytest.raises(DiversityInputError, match="2-D"):
        open_source(tmp_path / "3d.npy")
    (tmp_path / "x.csv").write_text("a\n1\n")
    with pytest.raises(DiversityInputError, match="cannot stream"):
        open_source(tmp_path / "x.csv")


def test_rbf_from_a_source_uses_the_in_memory_bandwidth(rng, tmp_path):
    X = rng.standard_normal((1500, 3))
    np.save(tmp_path / "x.npy", X)
    spec = dc.compute_spectrum(tmp_path / "x.npy", kernel="rbf", method="dense")
    ref = dc.compute_spectrum(X, kernel="rbf")
    assert spec.kernel == ref.kernel
    assert spec.vendi(1) == pytest.approx(ref.vendi(1), rel=1e-10)


def test_array_source_is_read_in_memory(rng):
    X = rng.standard_normal((100, 3))
    spec = dc.compute_spectrum(ArraySource(X))
    assert spec.execution == "in-memory"
    assert spec.vendi(1) == pytest.approx(dc.compute_spectrum(X).vendi(1), rel=1e-12)


def test_to_dict_says_what_it_is(rng, tmp_path):
    np.save(tmp_path / "x.npy", rng.standard_normal((50, 3)))
    d = json.loads(json.dumps(dc.compute_spectrum(tmp_path / "x.npy").to_dict()))
    assert d["exact"] is True and d["execution"] == "streamed" and d["method"] == "dual"


# --- the command line -----------------------------------------------------------------------
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "diversity_core.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_cli_streams_a_folder_of_shards(rng, tmp_path):
    X = rng.standard_normal((300, 6))
    folder = tmp_path / "shards"
    folder.mkdir()
    for i in range(3):
        np.save(folder / f"part-{i}.npy", X[100 * i : 100 * (i + 1)])
    w = rng.random(300)
    np.save(tmp_path / "w.npy", w)
    res = run_cli("score", folder, "--weights", tmp_path / "w.npy", "--q", "1", "2", "--format", "json",
                  "--memory-budget", "512M")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["results"][0]
    assert row["execution"] == "streamed" and row["n"] == 300
    assert row["vendi"]["1"] == pytest.approx(dc.vendi_score(X, weights=w), rel=1e-10)
    assert row["intdiv"] == pytest.approx(dc.intdiv(X, weights=w), rel=1e-10)


@pytest.mark.parametrize(
    "extra, match",
    [
        (("--memory-budget", "lots"), "invalid size"),
        (("--dask", "remote"), "local:N"),
        (("--dask", "local:0"), "local:N"),
        (("--kernel", "rbf", "--memory-budget", "10K"), "--memory-budget SIZE"),
    ],
    ids=["budget", "dask", "dask-zero", "over-budget"],
)
def test_cli_bad_values_exit_2_with_one_line(rng, tmp_path, extra, match):
    np.save(tmp_path / "x.npy", rng.standard_normal((200, 3)))
    res = run_cli("score", tmp_path / "x.npy", *extra)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert match in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_cli_blocked_vs2_when_only_q2_is_asked(rng, tmp_path):
    X = rng.standard_normal((200, 3))
    np.save(tmp_path / "x.npy", X)
    res = run_cli("score", tmp_path / "x.npy", "--kernel", "rbf", "--q", "2", "--memory-budget", "100K",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["results"][0]
    assert row["method"] == "blocked"
    assert row["vendi"]["2"] == pytest.approx(dc.vendi_score(X, kernel="rbf", q=2), rel=1e-10)
    low, high = row["vs_inf_bounds"]
    assert low <= dc.vendi_score(X, kernel="rbf", q="inf") <= high
