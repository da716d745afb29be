"""Issue 41, item 7 on the sidebar: the column options belong to the file they were set for; the
next file starts from what the loader detects in it (before: "no column named 'section'")."""

from __future__ import annotations

import numpy as np
from test_app import assert_clean, start


def _csv(group: str, names: list, *, d: int = 4, per: int = 12, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    lines = [",".join(f"f{j}" for j in range(d)) + f",{group}"]
    for g in names:
        for row in rng.normal(size=(per, d)):
            lines.append(",".join(f"{v:.5f}" for v in row) + f",{g}")
    return ("\n".join(lines) + "\n").encode()


def test_a_second_file_does_not_inherit_the_first_files_columns(monkeypatch):
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("section").run()
    at.sidebar.file_uploader(key="upload").upload("packages.csv", _csv("section", ["net", "math"])).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert sorted(at.session_state["dataset"].group_names()) == ["math", "net"]

    at.sidebar.file_uploader(key="upload").upload("sprites.csv", _csv("faction", ["elves", "orcs", "dwarves"],
                                                                       seed=1)).run()
    assert_clean(at)
    errors = [e.value for e in at.error]
    assert not any("no column named" in e for e in errors), errors
    assert not at.session_state.get("load_error")
    assert at.session_state["group_column"] == ""  # reset with the file
    assert sorted(at.session_state["dataset"].group_names()) == ["dwarves", "elves", "orcs"]  # detected
    boxes = {b.label: b for b in at.sidebar.selectbox if b.label.endswith("column")}
    assert set(boxes) == {"Group column", "Weight column", "Text column", "SMILES column"}  # before: text boxes
    assert boxes["Group column"].options == ["f0", "f1", "f2", "f3", "faction"]  # this file's own columns
    assert boxes["Group column"].value == "faction"  # preselected: the detected one
    assert boxes["Weight column"].value == "none" and "faction" in boxes["Weight column"].options


def test_first_file_boxes_offer_its_columns_and_a_choice_reloads(monkeypatch):
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    rows = ["f0,f1,w,section"] + [f"{1 + i % 7 / 7:.3f},{1 + i % 5 / 5:.3f},{1 + i % 3},{'net' if i % 2 else 'math'}"
                                   for i in range(24)]
    at.sidebar.file_uploader(key="upload").upload("packages.csv", ("\n".join(rows) + "\n").encode()).run()
    assert_clean(at)
    group = next(b for b in at.sidebar.selectbox if b.label == "Group column")
    assert group.value == "section" and "none" not in group.options
    weight = next(b for b in at.sidebar.selectbox if b.label == "Weight column")
    assert weight.value == "none"
    weight.set_value("w").run()  # a choice from the offered columns loads the file with it
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["weight_column"] == "w"
    assert at.session_state["dataset"].weights is not None
    assert next(b for b in at.sidebar.selectbox if b.label == "Weight column").value == "w"
