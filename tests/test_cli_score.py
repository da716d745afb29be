"""``diversity score`` through a subprocess: formats, options, and one-line errors with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import diversity_core as dc


def run_cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "diversity_core.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )


@pytest.fixture
def embeddings(tmp_path, rng):
    X = rng.standard_normal((120, 8))
    path = tmp_path / "emb.npy"
    np.save(path, X)
    return X, path


def test_npy_json_matches_api(embeddings):
    X, path = embeddings
    res = run_cli("score", path, "--q", "0", "1", "2", "inf", "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    spec = dc.compute_spectrum(X)
    assert out["q"] == ["0", "1", "2", "inf"]
    row = out["results"][0]
    assert row["group"] == "all" and row["n"] == 120
    for q in ["0", "1", "2", "inf"]:
        assert row["vendi"][q] == pytest.approx(spec.vendi(q), rel=1e-12)
    assert row["intdiv"] == pytest.approx(dc.intdiv(X), rel=1e-12)


def test_table_output(embeddings):
    _, path = embeddings
    res = run_cli("score", path)
    assert res.returncode == 0, res.stderr
    assert "VS_1" in res.stdout and "VS_inf" in res.stdout and "IntDiv" in res.stdout


def test_csv_with_groups_weights_and_kernel(tmp_path, rng):
    X = rng.standard_normal((60, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["model"] = ["A"] * 30 + ["B"] * 30
    df["w"] = rng.random(60) + 0.1
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    res = run_cli("score", path, "--group-column", "model", "--weights", "w", "--kernel", "rbf",
                  "--sigma", "1.5", "--q", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [r["group"] for r in out["results"]] == ["all", "A", "B"]
    assert out["kernel"] == {"name": "rbf", "sigma": 1.5}
    expected = dc.vendi_score(X[30:], kernel="rbf", sigma=1.5, q=2, weights=df["w"].to_numpy()[30:])
    assert out["results"][2]["vendi"]["2"] == pytest.approx(expected, rel=1e-12)


def test_weights_from_file(embeddings, tmp_path, rng):
    X, path = embeddings
    w = rng.random(120)
    np.savetxt(tmp_path / "w.txt", w)
    res = run_cli("score", path, "--weights", tmp_path / "w.txt", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)["results"][0]["vendi"]["1"]
    assert got == pytest.approx(dc.vendi_score(X, weights=w), rel=1e-12)


@pytest.mark.requires("pyarrow")
def test_parquet_and_npz(tmp_path, rng):
    X = rng.standard_normal((40, 4))
    pd.DataFrame(X, columns=list("abcd")).to_parquet(tmp_path / "x.parquet")
    np.savez(tmp_path / "x.npz", features=X)
    for name in ["x.parquet", "x.npz"]:
        res = run_cli("score", tmp_path / name, "--q", "1", "--format", "json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["results"][0]["vendi"]["1"] == pytest.approx(dc.vendi_score(X), rel=1e-10)


@pytest.mark.parametrize(
    "make, extra, match",
    [
        (lambda p: p.write_bytes(b"\x93NUMPY garbage"), (), "error"),
        (lambda p: np.save(p, np.array([[1.0, np.nan], [2.0, 3.0], [1.0, 1.0]])), (), "NaN"),
        (lambda p: np.save(p, np.ones((1, 3))), (), "at least 2"),
        (lambda p: np.save(p, np.eye(3)), ("--q", "-1"), "invalid order q"),
        (lambda p: np.save(p, np.eye(3)), ("--kernel", "gauss"), "invalid choice"),
        (lambda p: None, (), "no such file"),
    ],
    ids=["unreadable", "nan", "single-item", "bad-q", "bad-kernel", "missing"],
)
def test_errors_exit_2_with_one_line(tmp_path, make, extra, match):
    path = tmp_path / "bad.npy"
    make(path)
    res = run_cli("score", path, *extra)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert match.lower() in res.stderr.lower()
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) <= 2


def test_debug_shows_traceback(tmp_path):
    np.save(tmp_path / "one.npy", np.ones((1, 3)))
    res = run_cli("--debug", "score", tmp_path / "one.npy")
    assert res.returncode == 2
    assert "Traceback" in res.stderr


def test_console_script_installed():
    import shutil

    exe = shutil.which("diversity") or str(__import__("pathlib").Path(sys.executable).with_name("diversity"))
    res = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0
    assert "score" in res.stdout


def test_groups_share_the_bandwidth_fixed_on_all_items(tmp_path, rng):
    X = np.vstack([rng.standard_normal((30, 3)), 4 * rng.standard_normal((30, 3))])
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["model"] = ["A"] * 30 + ["B"] * 30
    df.to_csv(tmp_path / "d.csv", index=False)
    res = run_cli("score", tmp_path / "d.csv", "--group-column", "model", "--kernel", "rbf", "--q", "1",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    sigma = dc.median_distance(X)
    assert out["kernel"]["sigma"] == pytest.approx(sigma)
    assert out["results"][2]["vendi"]["1"] == pytest.approx(dc.vendi_score(X[30:], kernel="rbf", sigma=sigma), rel=1e-12)


@pytest.mark.parametrize("bounds_method", ["lanczos", "nystrom"])
def test_approx_bounds_contain_exact_and_say_how(embeddings, bounds_method):
    X, path = embeddings
    res = run_cli("score", path, "--kernel", "rbf", "--sigma", "2", "--approx", "bounds", "--bounds-method",
                  bounds_method, "--k", "20", "--m", "40", "--q", "0.5", "1", "2", "inf", "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["kind"] == "bounds" and out["settings"]["method"] == bounds_method
    spec = dc.compute_spectrum(X, kernel="rbf", sigma=2.0)
    for q, lo, hi in zip(out["qs"], out["low"], out["high"]):
        assert lo * (1 - 1e-9) <= spec.vendi(q) <= hi * (1 + 1e-9)
    table = run_cli("score", path, "--kernel", "rbf", "--sigma", "2", "--approx", "bounds", "--bounds-method",
                    bounds_method, "--k", "20", "--m", "40")
    assert table.returncode == 0, table.stderr
    assert ("Nystrom sketch (m = 40" in table.stdout) == (bounds_method == "nystrom")


def test_approx_estimate_drops_low_orders_with_a_note(embeddings):
    _, path = embeddings
    res = run_cli("score", path, "--kernel", "rbf", "--sigma", "2", "--approx", "rff", "--D", "64",
                  "--replicates", "3", "--q", "0.5", "1", "2")
    assert res.returncode == 0, res.stderr
    assert "q = 0.5 left out" in res.stderr and "rff estimate, 3 replicates" in res.stdout


def test_nystrom_estimate_prints_its_certain_range(embeddings):
    _, path = embeddings
    res = run_cli("score", path, "--kernel", "rbf", "--sigma", "2", "--approx", "nystrom", "--m", "30",
                  "--replicates", "2", "--q", "1", "2")
    assert res.returncode == 0, res.stderr
    assert "certain low" in res.stdout and "guaranteed range" in res.stdout


# ------------------------------------------------------------------------------------------
# issue 23 item 5: every sketch sized to --memory-budget (the core's plan_scores)
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def n4000(tmp_path_factory):
    X = np.random.default_rng(7).standard_normal((4000, 16))
    path = tmp_path_factory.mktemp("n4000") / "X.npy"
    np.save(path, X)
    return X, path


@pytest.mark.parametrize("budget, approx", [("20M", "nystrom"), ("40M", "nystrom"), ("60M", "nystrom"),
                                            ("20M", "rff"), ("40M", "auto")])
def test_sketches_are_sized_to_the_memory_budget_at_n_4000(n4000, budget, approx):
    from diversity_core._config import parse_bytes

    _, path = n4000
    res = run_cli("--memory-budget", budget, "score", path, "--kernel", "rbf", "--approx", approx,
                  "--replicates", "2", "--q", "1", "2", "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    plan = out["plan"]
    assert plan["budget"] == parse_bytes(budget) and plan["n"] == 4000
    if approx == "auto":
        # beyond the dense path (244 MiB): the SLQ estimate (issue 23), Nystrom bounds planned beside it
        assert plan["path"] == "slq" and out["method"] == "slq" and out["probes"] >= 2
        assert plan["slq"]["peak_bytes"] <= plan["budget"] and plan["bounds"]["m"] < 2000
        assert plan["bounds"]["peak_bytes"] <= plan["budget"]
    else:
        sketch = plan["sketch"]
        assert out["settings"]["m" if approx == "nystrom" else "D"] == sketch["size"] <= 1024
        assert sketch["peak_bytes"] <= plan["budget"] and sketch["sized"] in ("budget", "default")
    assert (plan["sketch"] or plan["bounds"])["sized"] == ("default" if budget == "60M" and approx == "nystrom"
                                                           else "budget")


def test_the_table_says_the_sketch_was_sized_to_the_budget(n4000):
    _, path = n4000
    res = run_cli("score", path, "--kernel", "rbf", "--approx", "nystrom", "--replicates", "2", "--q", "1",
                  "--memory-budget", "40M")
    assert res.returncode == 0, res.stderr
    assert "nystrom estimate (m = " in res.stdout and "the largest that fits the memory budget of 40 MiB" in res.stdout


@pytest.mark.parametrize("approx", ["nystrom", "rff", "bounds", "auto"])
def test_a_budget_too_small_for_any_sketch_names_the_knobs(n4000, approx):
    _, path = n4000
    res = run_cli("score", path, "--kernel", "rbf", "--approx", approx, "--memory-budget", "1M")
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    for knob in ("--m", "--D", "--memory-budget"):
        assert knob in res.stderr


def test_a_given_m_over_the_budget_is_refused_with_the_largest_that_fits(n4000):
    import re

    _, path = n4000
    res = run_cli("score", path, "--kernel", "rbf", "--approx", "nystrom", "--m", "2000", "--memory-budget", "40M")
    assert res.returncode == 2, (res.stdout, res.stderr)
    best = re.search(r"the largest m that fits is (\d+): use --m \1 or less", res.stderr)
    assert best is not None, res.stderr
    ok = run_cli("score", path, "--kernel", "rbf", "--approx", "nystrom", "--m", best.group(1), "--replicates", "2",
                 "--q", "1", "--memory-budget", "40M", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["settings"]["m"] == int(best.group(1))


def test_approx_auto_takes_the_exact_path_when_it_fits(embeddings):
    X, path = embeddings
    res = run_cli("score", path, "--kernel", "rbf", "--sigma", "2", "--approx", "auto", "--q", "1", "--format", "json")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)["results"][0]
    assert row["method"] == "dense"
    assert row["vendi"]["1"] == pytest.approx(dc.vendi_score(X, kernel="rbf", sigma=2.0), rel=1e-12)


def test_refusal_beyond_the_budget_names_the_estimate_that_works(tmp_path):
    """Issue 39 item 5: the refusal listed only bounds and the sketches (60-80% off on flat spectra)."""
    path = tmp_path / "big.npy"
    np.save(path, np.random.default_rng(0).normal(size=(3000, 8)))
    res = run_cli("score", str(path), "--kernel", "rbf", "--q", "1", "--memory-budget", "40M")
    assert res.returncode == 2
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1
    assert "--approx auto" in err and "--approx slq" in err
    assert err.index("--approx auto") < err.index("--approx bounds") < err.index("nystrom|rff")
