"""Issue 41 items 3, 4 and 5 on the pages: RND's form follows the set it scores, Magnitude says when
groups differ in size and offers equal n, Compare opens on small categorical groups with a default
that runs and a list of the groups it leaves out."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from test_app import assert_clean, start

#: 30 chemical classes: 3 singletons, 14 classes under 10 items in all (the issue's molecules).
CLASSES = {f"class {i:02d}": size for i, size in enumerate(
    [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7]
    + [10, 11, 12, 14, 15, 18, 20, 22, 25, 30, 35, 40, 45, 50, 60, 80]
)}


def _upload(monkeypatch, sizes: dict, *, d: int = 6, seed: int = 41, query: dict | None = None):
    """An embedding table (``d`` numeric columns and a ``group`` column) with ``sizes`` rows per group."""
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(seed)
    lines = [",".join(f"f{j}" for j in range(d)) + ",group"]
    for g, n in sizes.items():
        for row in rng.normal(size=(n, d)):
            lines.append(",".join(f"{v:.5f}" for v in row) + f",{g}")
    at = start(query)
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("group").run()
    at.sidebar.file_uploader(key="upload").upload("table.csv", ("\n".join(lines) + "\n").encode()).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset"].group_names() == list(sizes)
    return at


def _texts(elements) -> list:
    return [e.value.replace("\\", "") for e in elements]


# ---------------------------------------------------------------------------------------------
# item 3: RND's training split
# ---------------------------------------------------------------------------------------------
def test_rnd_pooled_default_is_the_papers_split_and_per_group_warns_on_small_groups(monkeypatch):
    """Before: 29 training items of 1,129 pooled sprites (the smallest faction's 79 - 50), while the
    form quoted the paper's 200."""
    at = _upload(monkeypatch, {"faction a": 79, "faction b": 1050}, d=8)
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    assert at.checkbox(key="rnd_per_group").value is False
    assert at.number_input(key="rnd_train").value == 200
    assert any("Default here: the paper's 200 training items per run" in c for c in _texts(at.caption))
    assert not [w for w in _texts(at.warning) if "Too small for a meaningful RND score" in w]
    at.checkbox(key="rnd_per_group").check().run()
    assert_clean(at)
    assert at.number_input(key="rnd_train").value == 29  # the rule per group: one split that fits both
    (small,) = [w for w in _texts(at.warning) if "Too small for a meaningful RND score" in w]
    assert "faction a (79 items)" in small and "faction b" not in small
    assert any("a training split of 29 items (fewer than 100" in w for w in _texts(at.warning))
    assert any("29 training items per run, fewer than the paper's 200: its smallest group has 79 items" in c
               for c in _texts(at.caption))
    at.button(key="rnd_pool").click().run()  # back to all the items together: the paper's split again
    assert at.checkbox(key="rnd_per_group").value is False and at.number_input(key="rnd_train").value == 200


# ---------------------------------------------------------------------------------------------
# item 4: Magnitude on groups of different sizes
# ---------------------------------------------------------------------------------------------
def test_magnitude_says_groups_differ_in_size_and_offers_equal_n(monkeypatch):
    from ui import tasks

    at = _upload(monkeypatch, {"small": 79, "large": 150}, d=4)
    at.switch_page("app_pages/4_magnitude.py").run()
    assert_clean(at)
    (caveat,) = [w for w in _texts(at.warning) if "differ in size" in w]
    assert "(79 to 150 items)" in caveat and "not compared at equal n" in caveat and "Equal n" in caveat
    at.checkbox(key="mag_equal_n").check().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert not [w for w in _texts(at.warning) if "differ in size" in w]
    table = next(d.value for d in at.dataframe if "MagArea" in d.value.columns and "low" in d.value.columns)
    assert list(table["group"]) == ["small", "large"] and list(table["n"]) == [79, 79]
    assert (table["low"] <= table["MagArea"]).all() and (table["MagArea"] <= table["high"]).all()
    # the values are compare's own at that n (its subsampling engine, not a second one)
    from diversity_core.compare import Comparison

    (out,) = [o for o in tasks.store("magnitude").values() if isinstance(o.value, Comparison)]
    assert out.value.n == 79 and out.value.estimate("large", "MagArea").estimate == table["MagArea"].iloc[1]


# ---------------------------------------------------------------------------------------------
# item 5: Compare on many small categorical groups
# ---------------------------------------------------------------------------------------------
def test_compare_opens_on_small_classes_with_a_default_that_runs(monkeypatch):
    """Before: n opened at 1 (the singletons), then "needs at least 10 per group" until 14 groups
    were unticked by hand."""
    from ui import tasks

    query = {"cmp_magnitude": "false", "cmp_qs": ["1"], "cmp_nsub": "2", "cmp_nres": "3", "seed": "0"}
    at = _upload(monkeypatch, CLASSES, query=query)
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    assert at.number_input(key="cmp_n").value == 10
    assert at.checkbox(key="cmp_leave_out").value is True
    (note,) = [w for w in _texts(at.warning) if w.startswith("Left out")]
    assert note.startswith("Left out 14 groups with fewer than n = 10 items")
    assert all(f"{g} ({v})" in note for g, v in CLASSES.items() if v < 10)
    at.button[0].click()  # the form's submit button
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    from diversity_core.compare import groups_for_n

    outcomes = [o for o in tasks.store("compare", 8).values() if len(o.value.groups) == 16]
    cmp = outcomes[-1].value
    assert cmp.n == 10 and cmp.groups == groups_for_n(CLASSES).kept
    assert any(c.startswith("Left out 14 groups") for c in _texts(at.caption))  # beside the results too
    # unticking the option asks for what it needs, in one message
    at.checkbox(key="cmp_leave_out").uncheck()
    at.button[0].click()
    at.run()
    assert any("14 groups have fewer than 10 items" in e and "Leave out" in e for e in _texts(at.error))


def test_robustness_keeps_the_groups_compare_keeps():
    from diversity_core.compare import groups_for_n
    from ui import robustness_ui

    labels = np.repeat(list(CLASSES), list(CLASSES.values()))
    view = SimpleNamespace(data=SimpleNamespace(groups=labels))
    rows, left_out = robustness_ui.groups_used(view)
    choice = groups_for_n(CLASSES)
    assert left_out == sorted(choice.left_out)
    assert set(labels[rows]) == set(choice.kept)

