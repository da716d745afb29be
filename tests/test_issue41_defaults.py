"""Issue 41 items 3 and 5: RND's training split follows the set that is scored; one rule for which
groups a comparison at n keeps, called by the Compare and Robustness pages and ``diversity compare``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from diversity_core.compare import MIN_ITEMS, groups_for_n, largest_n
from diversity_core.exceptions import DiversityInputError
from diversity_core.rnd import (
    MIN_TRAIN_SIZE,
    PAPER_PRESET,
    default_train_size,
    rnd_regime_warning,
    rnd_reliable_setting,
    rnd_small_groups_warning,
)

ROOT = Path(__file__).resolve().parents[1]

#: 30 chemical classes as the issue found them: 3 singletons, 14 classes under 10 items in all.
CLASSES = {f"class {i:02d}": size for i, size in enumerate(
    [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7]
    + [10, 11, 12, 14, 15, 18, 20, 22, 25, 30, 35, 40, 45, 50, 60, 80]
)}


# ---------------------------------------------------------------------------------------------
# item 3: RND's training split
# ---------------------------------------------------------------------------------------------
def test_pooled_scoring_takes_the_papers_split_of_the_pooled_set():
    """1,129 pooled sprites (smallest faction 79) got 29 training items; 527 molecules got 10."""
    assert default_train_size({"faction a": 79, "faction b": 1050}) == PAPER_PRESET["train_size"] == 200
    assert default_train_size({"small": 55, "rest": 472}) == 200  # the 527 molecules
    assert default_train_size(230) == 180  # one set: the rest keeps the 50 validation items
    assert default_train_size(40) == 10  # the floor (rnd_score then says the set is too small)


def test_per_group_scoring_takes_the_rule_per_group_and_warns_on_small_groups():
    sizes = {"faction a": 79, "faction b": 1050}
    assert default_train_size(sizes, per_group=True) == 29  # one split that fits every group
    msg = rnd_small_groups_warning(sizes)
    assert msg is not None and "faction a (79 items)" in msg and "faction b" not in msg
    assert f"at least {MIN_TRAIN_SIZE} training items" in msg
    assert rnd_small_groups_warning(sizes, per_group=False) is None  # pooled, 1,129 items
    assert rnd_small_groups_warning({"a": 150, "b": 900}) is None
    with pytest.raises(DiversityInputError, match="at least one set"):
        default_train_size({})


def test_a_small_training_split_draws_the_regime_warning_but_not_another_network():
    """10 training items scored 527 molecules 0.818 with no warning: the split is now judged."""
    msg = rnd_regime_warning({"architecture": "mlp", "train_size": 10}, input_shape=(32,), n_items=527)
    assert msg is not None and "a training split of 10 items (fewer than 100" in msg
    assert rnd_regime_warning({"architecture": "mlp", "train_size": 10}, input_shape=(32,), sized=False) is None
    assert rnd_regime_warning({"architecture": "mlp", "train_size": MIN_TRAIN_SIZE}, input_shape=(32,)) is None
    # the network offered does not depend on the split (no network fixes a small one)
    assert rnd_reliable_setting({"train_size": 10}, pixel_shape=(8, 8))["architecture"] == "mlp"


# ---------------------------------------------------------------------------------------------
# item 5: which groups a comparison keeps
# ---------------------------------------------------------------------------------------------
def test_the_default_n_keeps_every_group_that_can_carry_an_interval():
    choice = groups_for_n(CLASSES)
    assert MIN_ITEMS == 10 and choice.n == 10
    assert len(choice.kept) == 16 and len(choice.left_out) == 14
    assert choice.left_out["class 00"] == 1 and all(v < 10 for v in choice.left_out.values())
    assert choice.kept == tuple(g for g, v in CLASSES.items() if v >= 10)  # in the order given
    assert choice.note.startswith("Left out 14 groups with fewer than n = 10 items")
    assert "class 00 (1)" in choice.note and "class 13 (7)" in choice.note
    assert choice.to_dict()["left_out"] == choice.left_out


def test_a_given_n_leaves_out_the_smaller_groups_and_says_when_too_few_remain():
    choice = groups_for_n(CLASSES, n=40)
    assert choice.kept == ("class 25", "class 26", "class 27", "class 28", "class 29") and choice.rule == "given"
    assert largest_n(CLASSES) == 60
    with pytest.raises(DiversityInputError, match=r"n=70 leaves 1 group \(class 29\).*Use n <= 60"):
        groups_for_n(CLASSES, n=70)
    with pytest.raises(DiversityInputError, match="n must be"):
        groups_for_n(CLASSES, n=5)
    with pytest.raises(DiversityInputError, match="at least 2 groups of at least 10 items"):
        groups_for_n({"a": 3, "b": 40})


def test_keeping_every_group_names_the_small_ones_and_the_option():
    with pytest.raises(DiversityInputError, match=r"14 groups have fewer than 10 items \(class 00: 1, .*Leave out"):
        groups_for_n(CLASSES, leave_out_smaller=False)
    big = {g: v for g, v in CLASSES.items() if v >= 10}
    assert groups_for_n(big, leave_out_smaller=False).n == 10
    with pytest.raises(DiversityInputError, match="n=12 exceeds class 14: 10, class 15: 11"):
        groups_for_n(big, n=12, leave_out_smaller=False)


def _classes_csv(path: Path) -> Path:
    rng = np.random.default_rng(41)
    lines = ["f1,f2,f3,f4,chemical_class"]
    for g, size in CLASSES.items():
        for row in rng.normal(size=(size, 4)):
            lines.append(",".join(f"{v:.5f}" for v in row) + f",{g}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "diversity_core.cli", "compare", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_cli_compare_leaves_out_the_small_classes_and_names_them(tmp_path):
    """Before: exit 2, "group 'class 00' has 1 items; compare needs at least 10 per group"."""
    _classes_csv(tmp_path / "classes.csv")
    quick = ("--no-magnitude", "--no-size-curve", "--q", "1", "--n-subsamples", "2", "--n-resamples", "3")
    res = _cli("classes.csv", "--group-column", "chemical_class", *quick, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "16 groups compared at n = 10 items each" in res.stdout
    assert "note: Left out 14 groups with fewer than n = 10 items" in res.stderr and "class 00 (1)" in res.stderr
    strict = _cli("classes.csv", "--group-column", "chemical_class", "--no-leave-out-smaller", *quick, cwd=tmp_path)
    assert strict.returncode == 2 and "14 groups have fewer than 10 items" in strict.stderr


def test_cli_rnd_default_split_fits_the_set_and_warns(tmp_path):
    """Before: ``diversity rnd`` on 100 items stopped with "train_size=200 + 50 = 250, got 100 items"."""
    import json

    path = tmp_path / "small.npy"
    np.save(path, np.random.default_rng(0).normal(size=(100, 4)))
    res = subprocess.run([sys.executable, "-m", "diversity_core.cli", "rnd", str(path), "--runs", "2", "--epochs",
                          "2", "--average-last", "1", "--format", "json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    (only,) = json.loads(res.stdout)["sets"]
    assert only["settings"]["train_size"] == 50 == default_train_size(100)
    assert "Too small for a meaningful RND score: all (100 items)" in res.stderr
