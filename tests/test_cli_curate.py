"""``diversity curate`` through a subprocess: tables, JSON, the CSV files, groups, and one-line errors."""

from __future__ import annotations

import importlib.util
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


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """200 embeddings with 5 injected near-copies (rows 200-204 copy rows 0, 10, 20, 30, 40)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((200, 12))
    X = np.vstack([X, X[[0, 10, 20, 30, 40]] + 1e-4 * rng.standard_normal((5, 12))])
    path = tmp_path_factory.mktemp("curate") / "emb.npy"
    np.save(path, X)
    return X, path


def test_json_matches_the_api(data, tmp_path):
    X, path = data
    out = tmp_path / "selected.csv"
    res = run_cli("curate", path, "--select", "20", "--out", out, "--q", "1", "2", "--top", "5", "--rng", "3",
                  "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["n"] == 205 and doc["kernel"] == {"name": "cosine"} and doc["q"] == ["1", "2"]
    (r,) = doc["results"]
    assert r["set"] == "all" and r["n"] == 205
    dup = dc.find_duplicates(X, q=[1, 2])
    assert r["duplicates"]["n_groups"] == dup.n_groups == 5 and r["duplicates"]["n_removable"] == 5
    assert [[m["index"] for m in g["members"]] for g in r["duplicates"]["groups"]] == [g.tolist() for g in dup.groups]
    assert r["duplicates"]["vendi_deduplicated"]["1"] == pytest.approx(dup.vendi_deduplicated[0])
    contrib = dc.item_contributions(X, q=[1, 2])
    assert [t["index"] for t in r["contributions"]["top"]["1"]] == contrib.top(5, q=1).tolist()
    assert r["contributions"]["method"] == "exact"
    rarity = dc.rarity_scores(X)
    assert [t["index"] for t in r["rarity"]["rarest"]] == rarity.rarest(5).tolist()
    sel = dc.select_diverse(X, 20, q=[1, 2], rng=3)
    assert [t["index"] for t in r["selection"]["items"]] == sel.indices.tolist()
    assert r["selection"]["vendi"]["2"] == pytest.approx(sel.vendi(2))
    csv = pd.read_csv(out)
    assert list(csv.columns) == ["rank", "index", "id"]
    assert csv["index"].tolist() == sel.indices.tolist() and csv["rank"].tolist() == list(range(1, 21))
    assert csv["id"][0] == f"row {sel.indices[0] + 1}"
    assert doc["written"] == [str(out)]


def test_table_output_and_all_files(data, tmp_path):
    _, path = data
    res = run_cli("curate", path, "--select", "10", "--method", "kcenter", "--out", tmp_path / "sel.csv",
                  "--duplicates-out", tmp_path / "dups.csv", "--items-out", tmp_path / "items.csv", "--top", "3")
    assert res.returncode == 0, res.stderr
    for text in ("near-duplicates (similarity >= 0.99, exact): 5 groups, 10 items, 5 removable",
                 "without duplicates", "top contributors to VS_1", "most redundant", "rarest items",
                 "selection: kcenter, k = 10"):
        assert text in res.stdout, text
    dups = pd.read_csv(tmp_path / "dups.csv")
    assert list(dups.columns) == ["group", "size", "index", "id", "representative"]
    assert sorted(dups["index"]) == [0, 10, 20, 30, 40, 200, 201, 202, 203, 204]
    assert dups["representative"].sum() == 5
    items = pd.read_csv(tmp_path / "items.csv")
    assert list(items.columns) == ["index", "id", "contribution_1", "rarity", "duplicate_group", "keep",
                                   "selection_rank"]
    assert len(items) == 205 and (items["selection_rank"] > 0).sum() == 10 and (~items["keep"]).sum() == 5
    assert "wrote" in res.stderr


def test_groups_are_curated_each(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 4))
    df = pd.DataFrame(X, columns=list("abcd"))
    df["model"] = ["A"] * 40 + ["B"] * 40
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "sel.csv"
    res = run_cli("curate", tmp_path / "d.csv", "--group-column", "model", "--kernel", "rbf", "--select", "5",
                  "--out", out, "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [r["set"] for r in doc["results"]] == ["all", "A", "B"]
    sigma = dc.median_distance(X)
    assert doc["kernel"] == {"name": "rbf", "sigma": pytest.approx(sigma)}
    sel_b = dc.select_diverse(X[40:], 5, kernel="rbf", sigma=sigma, rng=0)
    assert [t["index"] for t in doc["results"][2]["selection"]["items"]] == (sel_b.indices + 40).tolist()
    csv = pd.read_csv(out)
    assert list(csv.columns) == ["set", "rank", "index", "id"] and csv["set"].tolist() == ["all"] * 5 + ["A"] * 5 + ["B"] * 5
    assert csv[csv["set"] == "B"]["index"].tolist() == (sel_b.indices + 40).tolist()
    assert csv["id"].str.startswith("row ").all()


@pytest.mark.skipif(importlib.util.find_spec("PIL") is None, reason="pillow is not installed")
def test_image_folder_ids_are_file_names(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(2)
    folder = tmp_path / "imgs"
    folder.mkdir()
    for i in range(12):
        Image.fromarray(rng.integers(0, 255, size=(16, 16, 3), dtype=np.uint8)).save(folder / f"img_{i:02d}.png")
    Image.open(folder / "img_03.png").save(folder / "copy_of_03.png")
    out = tmp_path / "sel.csv"
    res = run_cli("curate", folder, "--select", "4", "--out", out, "--format", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    (group,) = doc["results"][0]["duplicates"]["groups"]
    assert sorted(m["id"] for m in group["members"]) == ["copy_of_03.png", "img_03.png"]
    assert pd.read_csv(out)["id"].str.endswith(".png").all()


def test_atomic_write_replaces_and_leaves_no_temporary_file(data, tmp_path):
    _, path = data
    out = tmp_path / "sel.csv"
    out.write_text("old content\n")
    res = run_cli("curate", path, "--select", "3", "--out", out)
    assert res.returncode == 0, res.stderr
    assert pd.read_csv(out).shape == (3, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sel.csv"]


@pytest.mark.parametrize(
    "extra, match",
    [(("--select", "500"), "more than the 205 items"),
     (("--duplicates", "1.5"), "threshold must lie in the cosine kernel's range"),
     (("--out", "x.csv"), "give --select"),
     (("--select", "0"), "--select must be a positive"),
     (("--duplicates", "0.9", "--eps", "1"), "not both"),
     (("--neighbors", "0"), "--neighbors"),
     (("--method", "dpp"), "invalid choice"),
     (("--select", "3", "--out", "/nonexistent/dir/sel.csv"), "does not exist")],
    ids=["k>n", "threshold", "out-without-select", "k=0", "both", "neighbors", "method", "out-folder"],
)
def test_errors_exit_2_with_one_line(data, extra, match):
    _, path = data
    res = run_cli("curate", path, *extra)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert match.lower() in res.stderr.lower()
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) <= 2


def test_missing_file_exits_2(tmp_path):
    res = run_cli("curate", tmp_path / "nothing.npy")
    assert res.returncode == 2 and "Traceback" not in res.stderr


def test_listed_in_help():
    res = run_cli("--help")
    assert res.returncode == 0 and "curate" in res.stdout
