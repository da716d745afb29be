"""``diversity evaluate`` after the review of issue 24: the text column of a prompt/response table,
``--text-column``, ``--items`` (one row per generated item) and the kernel distance's ``± sd``."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from diversity_core.cli import main
from diversity_core.data import load_dataset

WORDS = ["red", "green", "blue", "small", "large", "round", "square", "fast", "slow", "bright", "dark", "old",
         "new", "soft", "hard", "warm", "cold", "tall", "short", "thin"]


def _responses(rng, n):
    return [" ".join(rng.choice(WORDS, size=5)) for _ in range(n)]


@pytest.fixture
def tables(tmp_path):
    rng = np.random.default_rng(0)
    prompts = np.repeat(["draw a cat", "draw a dog", "draw a bird"], 20)
    gen = pd.DataFrame({"prompt": prompts, "response": _responses(rng, 60)})
    gen.to_csv(tmp_path / "gen.csv", index=False)
    (tmp_path / "real.txt").write_text("\n".join(_responses(rng, 80)) + "\n")
    (tmp_path / "train.txt").write_text("\n".join(_responses(rng, 50) + list(gen.response[:5])) + "\n")
    return tmp_path


FAST = ["--kid-subsets", "4", "--kid-subset-size", "20", "--no-magnitude", "--n-resamples", "0"]


def test_texts_of_every_input_share_one_vocabulary(tables, capsys):
    # the n-gram vocabulary is built over all inputs: featurized alone, the reference file and
    # the generated table got columns of their own, and the command refused them
    from diversity_core.featurizers import featurize_together

    gen = load_dataset(tables / "gen.csv", group_column="prompt")
    real = load_dataset(tables / "real.txt")
    Xg, Xr = featurize_together([gen, real], "ngram")
    assert Xg.shape[1] == Xr.shape[1]
    same = real.items.index(real.items[0])
    both = load_dataset(tables / "real.txt").subset([same])
    Xg2, Xr2 = featurize_together([both, real], "ngram")
    assert abs(Xg2[0] - Xr2[same]).sum() == 0  # the same text, the same row
    code = main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--train",
                 str(tables / "train.txt"), "--prompt-column", "prompt", "--format", "json", *FAST])
    assert code == 0, capsys.readouterr().err
    data = json.loads(capsys.readouterr().out)
    # train.txt holds five generated responses: those items are their own nearest training items
    assert data["memorization"]["n_flagged"] >= 5


def test_the_prompt_column_is_never_the_text(tables):
    # the loader used to take the first name it knew, "prompt", as the text of every item
    ds = load_dataset(tables / "gen.csv", group_column="prompt")
    assert ds.items[0] == pd.read_csv(tables / "gen.csv").response[0]
    assert set(ds.group_names()) == {"draw a cat", "draw a dog", "draw a bird"}
    # a table of prompts and responses is read as its responses, with no column named
    assert load_dataset(tables / "gen.csv").items[:3] == list(pd.read_csv(tables / "gen.csv").response[:3])


def test_evaluate_scores_the_responses_per_prompt(tables, capsys):
    out = tables / "e.json"
    code = main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--prompt-column",
                 "prompt", "--json", str(out), *FAST])
    assert code == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    per_prompt = data["conditional"]["per_prompt"]
    assert set(per_prompt) == {"draw a cat", "draw a dog", "draw a bird"}
    # read as prompts, each prompt's 20 items would be one repeated text (Vendi score 1)
    assert all(p["n"] == 20 and p["vendi"] > 2 for p in per_prompt.values())


def test_text_column_names_the_items(tables, capsys):
    df = pd.read_csv(tables / "gen.csv").rename(columns={"prompt": "question", "response": "answer"})
    df["note"] = "x"  # another string column: the text can only be named
    df.to_csv(tables / "qa.csv", index=False)
    base = ["evaluate", str(tables / "qa.csv"), "--reference", str(tables / "real.txt"), "--prompt-column",
            "question", "--format", "json", *FAST]
    assert main(base) == 2
    assert "--text-column" in capsys.readouterr().err
    assert main([*base, "--text-column", "answer"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["sources"]["text_column"] == "answer"
    assert all(p["vendi"] > 2 for p in data["conditional"]["per_prompt"].values())


def test_items_writes_one_row_per_generated_item(tables, capsys):
    items, js = tables / "items.csv", tables / "e.json"
    code = main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--train",
                 str(tables / "train.txt"), "--prompt-column", "prompt", "--items", str(items), "--json", str(js),
                 *FAST])
    assert code == 0, capsys.readouterr().err
    assert f"wrote {items}" in capsys.readouterr().err
    rows = list(csv.DictReader(items.read_text().splitlines()))
    assert len(rows) == 60 and list(rows[0]) == ["generated", "generated_id", "nearest_train", "nearest_train_id",
                                                  "distance", "similarity", "train_radius", "ratio", "flagged"]
    gen_ids = load_dataset(tables / "gen.csv", group_column="prompt").ids
    train_ids = load_dataset(tables / "train.txt").ids
    assert sorted(r["generated_id"] for r in rows) == sorted(gen_ids)
    # closest copy first: by ratio, the flagged rows before the others
    ratios = [float(r["ratio"]) for r in rows]
    assert ratios == sorted(ratios)
    flags = [r["flagged"] == "True" for r in rows]
    assert flags == sorted(flags, reverse=True)
    # the five responses copied into the training set (its lines 51-55) are found, flagged and first,
    # each with its distance, similarity and the training item's own nearest-neighbour distance
    first = {int(r["generated"]): r for r in rows[:5]}
    assert set(first) == set(range(5))
    for i, r in first.items():
        assert r["generated_id"] == gen_ids[i] and r["nearest_train_id"] == train_ids[50 + i]
        assert float(r["distance"]) == 0.0 and float(r["similarity"]) == pytest.approx(1.0)
        assert float(r["train_radius"]) > 0 and r["flagged"] == "True"
    assert all(r["similarity"] != "" for r in rows)
    assert json.loads(js.read_text())["memorization"]["n_flagged"] == sum(flags)


def test_the_page_lists_the_flagged_pairs_closest_first_under_the_headline(tables, capsys):
    pytest.importorskip("jinja2")
    out = tables / "e.html"
    code = main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--train",
                 str(tables / "train.txt"), "--prompt-column", "prompt", "--memorization-alpha", "0.05", "--out",
                 str(out), *FAST])
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "# memorisation: " in printed and "against a baseline of" in printed and "# flag: " in printed
    page = out.read_text()
    section = page.split("<h2>Memorisation")[1].split("</table>")[0]
    # the headline: the set-level share against the reference's, the rule with its alpha
    assert "flagged as likely copies, against a baseline of" in section and "alpha = 5%" in section
    assert "<th>distance</th><th>similarity</th><th>its own NN distance</th>" in section
    rows = [r for r in section.split("<tr>")[2:]]
    cells = [[c.split("</td>")[0] for c in r.split('<td class="num">')[1:]] for r in rows]
    ratios = [float(c[5]) for c in cells]
    assert ratios == sorted(ratios) and len(rows) >= 10
    flagged = [("<td>yes</td>" in r) for r in rows]
    assert flagged[:5] == [True] * 5 and flagged == sorted(flagged, reverse=True)
    assert all(float(c[2]) == 0.0 and float(c[3]) == pytest.approx(1.0) and float(c[4]) > 0 for c in cells[:5])


def test_items_needs_a_training_set_and_writes_nothing_on_failure(tables, capsys):
    items = tables / "items.csv"
    assert main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--items",
                 str(items), *FAST]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--train" in err[0] and not items.exists()


def test_kernel_distance_shows_its_sd_in_the_table_and_the_page(tables, capsys):
    page = tables / "e.html"
    code = main(["evaluate", str(tables / "gen.csv"), "--reference", str(tables / "real.txt"), "--out", str(page),
                 *FAST])
    assert code == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("kernel_distance"))
    assert "±" in line
    html = page.read_text()
    cell = html.split("<td>kernel_distance</td>")[1].split("</td>")[0]
    assert "±" in cell


def test_agreement_ranks_reference_and_generated_under_every_metric(tmp_path, capsys):
    """Issue 43 item 6: ``--agreement`` ranks REAL and GENERATED under every metric, with the flips."""
    from diversity_core.agreement import metric_agreement

    rng = np.random.default_rng(1)
    real = rng.normal(size=(120, 6))
    # the generated set: half near-copies of one point, half wide spread (metrics of different orders disagree)
    gen = np.vstack([rng.normal(size=(60, 6)) * 0.01 + 3.0, rng.normal(size=(60, 6)) * 3.0])
    np.save(tmp_path / "real.npy", real)
    np.save(tmp_path / "gen.npy", gen)
    out = tmp_path / "e.json"
    code = main(["evaluate", str(tmp_path / "gen.npy"), "--reference", str(tmp_path / "real.npy"), "--agreement",
                 "VS_0.5", "VS_inf", "IntDiv", "--json", str(out), *FAST])
    printed = capsys.readouterr().out
    assert code == 0
    expected = metric_agreement({"reference": real, "generated": gen}, metrics=["VS_0.5", "VS_inf", "IntDiv"],
                                kernel="cosine", rng=0)
    assert "# which metrics agree" in printed and expected.summary() in printed
    saved = json.loads(out.read_text())["settings"]["agreement"]
    assert saved == json.loads(json.dumps(expected.to_dict()))
    assert main(["evaluate", str(tmp_path / "gen.npy"), "--reference", str(tmp_path / "real.npy"), "--agreement",
                 "nope", *FAST]) == 2
