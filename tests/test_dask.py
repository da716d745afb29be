"""Dask (issue 11): a real distributed.LocalCluster (2 worker processes, loopback) gives the in-memory results."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import diversity_core as dc
from diversity_core.blocked import vendi_2_exact
from diversity_core.exceptions import DiversityInputError
from diversity_core.sources import open_source

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """Two worker processes on 127.0.0.1, one thread each."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def same_spectrum(a, b, rtol=1e-10):
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=0, atol=rtol * b.eigenvalues[0])
    for q in (0.5, 1.0, 2.0, np.inf):
        assert a.vendi(q) == pytest.approx(b.vendi(q), rel=rtol)


def test_dask_array_on_the_cluster_equals_in_memory(client, rng):
    X = rng.standard_normal((2003, 9))
    w = rng.random(2003)
    D = da.from_array(X, chunks=(250, 4))  # row blocks that do not divide n, columns split too
    spec = dc.compute_spectrum(D, weights=w, n_eigenvectors=3)
    ref = dc.compute_spectrum(X, weights=w, n_eigenvectors=3)
    assert spec.execution == "dask" and spec.method == "dual"
    same_spectrum(spec, ref)
    np.testing.assert_allclose(np.abs(spec.eigenvectors), np.abs(ref.eigenvectors), atol=1e-10)
    assert dc.vendi_score(D, q=2) == pytest.approx(dc.vendi_score(X, q=2), rel=1e-10)
    res = vendi_2_exact(D, weights=w)
    assert res.execution == "dask" and res.vs2 == pytest.approx(ref.vendi(2), rel=1e-10)


def test_workers_read_the_files(client, rng, tmp_path):
    pa = pytest.importorskip("pyarrow", reason="Parquet files need pyarrow (extra [parquet])")
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet files need pyarrow (extra [parquet])")
    X = rng.standard_normal((1500, 6))
    np.save(tmp_path / "x.npy", X)
    pq.write_table(pa.table({"e": pa.array(list(X), type=pa.list_(pa.float64()))}), tmp_path / "x.parquet",
                   row_group_size=400)
    ref = dc.compute_spectrum(X)
    for name in ("x.npy", "x.parquet"):
        D = open_source(tmp_path / name).to_dask(rows=333)
        same_spectrum(dc.compute_spectrum(D), ref)


def test_block_errors_come_back_as_input_errors(client, rng):
    X = rng.standard_normal((600, 3))
    X[450, 1] = np.inf
    with pytest.raises(DiversityInputError, match="rows 451 "):
        dc.compute_spectrum(da.from_array(X, chunks=(200, 3)))


def test_threaded_scheduler_without_a_client(rng):
    import dask

    X = rng.standard_normal((500, 4))
    D = da.from_array(X, chunks=(128, 4))
    with dask.config.set(scheduler="threads"):  # Dask's local scheduler, even beside the module's client
        spec = dc.compute_spectrum(D)
    same_spectrum(spec, dc.compute_spectrum(X))


def test_cli_scheduler_address(client, rng, tmp_path):
    X = rng.standard_normal((400, 5))
    np.save(tmp_path / "x.npy", X)
    res = subprocess.run(
        [sys.executable, "-m", "diversity_core.cli", "score", str(tmp_path / "x.npy"), "--scheduler",
         client.scheduler.address, "--q", "1", "2", "--format", "json"],
        capture_output=True, text=True, timeout=300,
    )
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["results"][0]
    assert row["execution"] == "dask"
    assert row["vendi"]["1"] == pytest.approx(dc.vendi_score(X), rel=1e-10)
    assert row["intdiv"] == pytest.approx(dc.intdiv(X), rel=1e-10)


def test_cli_unreachable_scheduler_exits_2(tmp_path):
    np.save(tmp_path / "x.npy", np.eye(3))
    res = subprocess.run(
        [sys.executable, "-m", "diversity_core.cli", "score", str(tmp_path / "x.npy"), "--scheduler",
         "tcp://127.0.0.1:9"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"},
    )
    assert res.returncode == 2, res.stderr
    assert "cannot reach the Dask scheduler" in res.stderr and "Traceback" not in res.stderr
