"""Compare page, reference role (issue 24, item 5): real data, a training set, the plane, copies, prompts."""

from __future__ import annotations

import numpy as np
import pytest
from test_app import assert_clean, start

from diversity_core.data import load_demo
from ui import evaluation_ui

REAL = "all ten classes"
COLLAPSE = "mode collapse (5 images + noise)"
DROPPING = "mode dropping (classes 0-2)"
GROUPS = load_demo("digits").group_names()


def _compare_page():
    at = start({"demo": "digits", "seed": "0"})
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    return at


def _evaluate(at, **choices):
    for key, value in choices.items():
        selects = ("eval_reference", "eval_train", "eval_prompt_column")
        widget = at.selectbox(key=key) if key in selects else at.toggle(key=key)
        widget.set_value(value)
    at.button(key="FormSubmitter:eval_form-Evaluate against the reference").click()
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    return at


def _metrics(at):
    frames = [d.value for d in at.dataframe if "metric" in d.value.columns]
    assert frames, "no metrics table"
    return frames[0].set_index("metric")


def test_reference_role_judges_each_group_with_intervals_and_shows_the_closest_training_pairs():
    at = _compare_page()
    assert at.selectbox(key="eval_reference").value == REAL  # the name that looks like real data
    at = _evaluate(at, eval_train=COLLAPSE, eval_intervals=True)
    table = _metrics(at)
    # every group but the reference and the training set is judged, each with intervals
    assert [c for c in table.columns if c != "note"] == [DROPPING, "imbalanced (class 9 at 1%)"]
    cell = table.loc["precision", DROPPING]
    assert "[" in cell, cell
    # mode dropping covers 3 classes of 10: its recall and coverage of the reference are low
    cov_drop = float(table.loc["coverage", DROPPING].split()[0])
    cov_imb = float(table.loc["coverage", "imbalanced (class 9 at 1%)"].split()[0])
    assert cov_drop < 0.6 < cov_imb
    assert "memorized_fraction" in table.index
    # the fidelity-diversity plane and the Vendi ratio, with error bars
    charts = at.get("plotly_chart")
    assert len(charts) >= 2
    assert "error_x" in charts[0].proto.spec and "arrayminus" in charts[0].proto.spec
    assert any("closest generated-training pairs" in h.value.lower() for h in at.subheader)
    # the set-level figure against its baseline heads each group's pairs, the calibrated rule under it
    shown = [m.value.replace("\\", "") for m in [*at.markdown, *at.caption]]  # Markdown escapes removed
    assert any("flagged as likely copies, against a baseline of" in v for v in shown), shown
    assert any(v.startswith("Flag: distance to the nearest training item <") for v in shown), shown


def test_other_groups_as_prompts_give_per_prompt_diversity():
    at = _compare_page()
    at = _evaluate(at, eval_prompts=True, eval_intervals=False)
    table = _metrics(at)
    assert list(table.columns)[0] == evaluation_ui.PROMPTED
    assert {"within_prompt_vendi", "conditional_vendi", "information_vendi"} <= set(table.index)
    assert any(h.value == "Diversity per prompt" for h in at.subheader)
    prompts = [d.value for d in at.dataframe if "prompt" in d.value.columns]
    assert prompts and set(prompts[0]["prompt"]) == set(GROUPS) - {REAL}


def test_training_set_equal_to_the_reference_is_refused_in_words():
    at = _compare_page()
    at.selectbox(key="eval_train").set_value(REAL)
    at.button(key="FormSubmitter:eval_form-Evaluate against the reference").click().run()
    assert_clean(at)
    assert any("training set must be another group" in e.value for e in at.error)


def test_the_comparison_report_is_built_with_the_reference_role(monkeypatch):
    from ui import compare_ui

    seen = {}
    real = compare_ui.report_html

    def spy(cmp, **kwargs):
        seen.update(kwargs)
        return real(cmp, **kwargs)

    monkeypatch.setattr(compare_ui, "report_html", spy)
    at = _evaluate(_compare_page(), eval_train=COLLAPSE, eval_intervals=False)
    at.checkbox(key="cmp_magnitude").uncheck()
    at.multiselect(key="cmp_qs").set_value([1.0])
    at.number_input(key="cmp_nsub").set_value(2)
    at.number_input(key="cmp_nres").set_value(3)
    at.button(key="FormSubmitter:cmp_settings-Run comparison").click()
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert set(seen["evaluations"]) == {DROPPING, "imbalanced (class 9 at 1%)"}
    assert seen["evaluation_reference"] == REAL
    assert set(seen["evaluation_items"]) == set(seen["evaluations"])


# ---------------------------------------------------------------------------------------------
# review of issue 24: a prompt column of the table, the per-item download, KD's sd, checks first
# ---------------------------------------------------------------------------------------------
WORDS = ["red", "green", "blue", "small", "large", "round", "square", "fast", "slow", "bright", "dark", "old"]
PROMPTS = ["draw a cat", "draw a dog", "draw a bird"]


def _table(groups: dict) -> bytes:
    """A CSV of model, prompt, response rows: ``groups`` maps a model to its number of rows."""
    rng = np.random.default_rng(4)
    lines = ["model,prompt,response"]
    for model, n in groups.items():
        for i in range(n):
            lines.append(f"{model},{PROMPTS[i % 3]},{' '.join(rng.choice(WORDS, size=6))}")
    return "\n".join(lines).encode()


def _uploaded_compare_page(monkeypatch, groups: dict):
    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("model").run()
    at.sidebar.file_uploader(key="upload").upload("runs.csv", _table(groups)).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    return at


@pytest.fixture
def downloads(monkeypatch):
    """The data of every ``st.download_button`` drawn, by key."""
    import streamlit

    seen = {}
    original = streamlit.download_button

    def record(label, data, *args, **kwargs):
        seen[kwargs.get("key")] = data() if callable(data) else data  # a callable: written on the click
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", record)
    return seen


def test_a_prompt_column_gives_each_generated_group_its_per_prompt_diversity(monkeypatch, downloads):
    at = _uploaded_compare_page(monkeypatch, {"real data": 45, "model a": 45, "model b": 45, "train": 30})
    # the table's columns that can name prompts: "prompt" (the group and text columns are in use)
    assert at.selectbox(key="eval_prompt_column").options == [evaluation_ui.NONE, "prompt"]
    at = _evaluate(at, eval_reference="real data", eval_train="train", eval_prompt_column="prompt",
                   eval_intervals=False)
    table = _metrics(at)
    assert [c for c in table.columns if c != "note"] == ["model a", "model b"]  # each group, not pooled
    for group in ("model a", "model b"):
        assert "conditional_vendi" in table.index and table.loc["conditional_vendi", group]
        assert "±" in table.loc["kernel_distance", group]  # KD: mean ± subset sd
    prompts = [d.value for d in at.dataframe if "prompt" in d.value.columns]
    assert len(prompts) == 2 and all(set(p["prompt"]) == set(PROMPTS) for p in prompts)
    assert all(list(p["items"]) == [15, 15, 15] for p in prompts)
    # every generated item's nearest training item, as CSV, per group
    rows = downloads["eval_items_0"].splitlines()
    assert rows[0].startswith("generated,generated_id,nearest_train,nearest_train_id,distance")
    assert len(rows) == 1 + 45 and "eval_items_1" in downloads


def test_a_one_item_training_set_is_refused_before_any_work(monkeypatch):
    from ui import tasks

    at = _uploaded_compare_page(monkeypatch, {"real data": 30, "model a": 30, "train": 1})
    started = []
    monkeypatch.setattr(tasks, "run", lambda *a, **k: started.append(a))
    at.selectbox(key="eval_reference").set_value("real data")
    at.selectbox(key="eval_train").set_value("train")
    at.button(key="FormSubmitter:eval_form-Evaluate against the reference").click().run()
    assert_clean(at)
    assert any("training set" in e.value and "at least 3" in e.value for e in at.error), [e.value for e in at.error]
    assert not started


def test_prompt_column_and_groups_as_prompts_are_not_both_taken(monkeypatch):
    from ui import tasks

    at = _uploaded_compare_page(monkeypatch, {"real data": 30, "model a": 30, "model b": 30})
    started = []
    monkeypatch.setattr(tasks, "run", lambda *a, **k: started.append(a))
    at.selectbox(key="eval_prompt_column").set_value("prompt")
    at.toggle(key="eval_prompts").set_value(True)
    at.button(key="FormSubmitter:eval_form-Evaluate against the reference").click().run()
    assert_clean(at)
    assert any("one source of prompts" in e.value for e in at.error) and not started
