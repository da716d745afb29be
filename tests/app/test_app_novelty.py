"""Compare page, reference role (issue 43, item 2): "What is new, what is missing" on a constructed table.

The reference ``real`` holds three clusters; ``model`` holds them plus a fourth, new one (ids
``new-*``); ``dropped`` holds two of them (``real``'s third cluster, ids ``c2-*``, is missing).
"""

from __future__ import annotations

import numpy as np
from test_app import assert_clean, start

D = 6


def _rows(rng, centre: int, n: int, prefix: str, group: str) -> list:
    c = 5.0 * np.eye(D)[centre]
    return [",".join(f"{v:.5f}" for v in c + 0.3 * rng.standard_normal(D)) + f",{prefix}-{i},{group}"
            for i in range(n)]


def _table() -> bytes:
    rng = np.random.default_rng(43)
    lines = [",".join(f"f{j}" for j in range(D)) + ",id,group"]
    for c in range(3):
        lines += _rows(rng, c, 40, f"c{c}", "real")
    for c in range(3):
        lines += _rows(rng, c, 30, f"m{c}", "model")
    lines += _rows(rng, 3, 30, "new", "model")
    for c in range(2):
        lines += _rows(rng, c, 45, f"d{c}", "dropped")
    return ("\n".join(lines) + "\n").encode()


def _compare_page(monkeypatch):
    import ui.data as uidata
    from ui import tasks

    tasks.clear_stores()  # the task stores live as long as the process: an earlier test's reports are in them

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("group").run()
    at.sidebar.file_uploader(key="upload").upload("pair.csv", _table()).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    return at


def _galleries(at) -> list:
    """The ids of each mode's gallery, in page order (embeddings: a table of ids with the loadings)."""
    return [list(d.value["id"]) for d in at.dataframe if {"id", "note"} <= set(d.value.columns)]


def _modes(at, role: str) -> list:
    """The heading line of each mode of ``role`` (``"Novel"`` or ``"Missing"``), in page order."""
    return [m.value for m in at.markdown if m.value.startswith(f"**{role} mode ")]


def test_the_new_cluster_is_the_top_novel_mode_and_the_dropped_one_the_top_missing_mode(monkeypatch):
    at = _compare_page(monkeypatch)
    assert at.selectbox(key="eval_reference").value == "real"
    # nothing runs on the page's first draw: a start button waits
    assert not _galleries(at) and at.button(key="run_novelty")
    at.button(key="run_novelty").click()
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    at.selectbox(key="novelty_group").set_value("model").run()
    assert_clean(at)
    galleries, novel = _galleries(at), _modes(at, "Novel")
    assert novel and "outside the null" in novel[0], novel
    # the top novel mode's items are the new cluster's, 8 of them by default
    assert len(galleries[0]) == 8 and all(i.startswith("new-") for i in galleries[0]), galleries[0]
    # KEN and RRKE with their intervals
    assert {m.label for m in at.metric} >= {"KEN (novel)", "KEN (missing)", "RRKE (order 0.5)"}
    assert any(c.value.count("[") == 1 for c in at.caption), [c.value for c in at.caption]
    # roles swapped: the group that dropped a cluster misses exactly it
    at.selectbox(key="novelty_group").set_value("dropped").run()
    at.slider(key="novelty_items").set_value(5).run()
    assert_clean(at)
    galleries, novel, missing = _galleries(at), _modes(at, "Novel"), _modes(at, "Missing")
    assert "outside the null" in missing[0], missing
    top_missing = galleries[len(novel)]
    assert len(top_missing) == 5 and all(i.startswith("c2-") for i in top_missing), top_missing


def test_the_comparison_report_carries_the_novel_and_missing_modes(monkeypatch):
    from ui import compare_ui

    seen = {}
    real = compare_ui.report_html

    def spy(cmp, **kwargs):
        seen.update(kwargs)
        return real(cmp, **kwargs)

    monkeypatch.setattr(compare_ui, "report_html", spy)
    at = _compare_page(monkeypatch)
    at.button(key="run_novelty").click()
    at.run(timeout=600)
    at.checkbox(key="cmp_magnitude").uncheck()
    at.multiselect(key="cmp_qs").set_value([1.0])
    at.number_input(key="cmp_nsub").set_value(2)
    at.number_input(key="cmp_nres").set_value(3)
    at.button(key="FormSubmitter:cmp_settings-Run comparison").click()
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    # no evaluation was run: the report has the novelty section alone, every generated group in it
    assert seen["evaluations"] is None and seen["evaluation_reference"] == "real"
    assert set(seen["novelty"]) == {"model", "dropped"} == set(seen["novelty_items"])
    ds, gen_rows, ref_rows = seen["novelty_items"]["model"]
    assert {ds.ids[i] for i in gen_rows} >= {f"new-{i}" for i in range(30)}
    assert all(ds.ids[i].startswith("c") for i in ref_rows)


def test_a_refusal_of_the_core_is_an_error_in_words_not_a_traceback(monkeypatch):
    import diversity_core.differential as differential
    from diversity_core.exceptions import DiversityInputError

    def refuse(*args, **kwargs):
        raise DiversityInputError("the sets need the same number of features; got 6 and 5. Use one featurizer.")

    at = _compare_page(monkeypatch)
    monkeypatch.setattr(differential, "novelty_report", refuse)
    at.button(key="run_novelty").click()
    at.run(timeout=600)
    assert_clean(at)
    assert any("same number of features" in e.value for e in at.error), [e.value for e in at.error]
    assert not _galleries(at) and not _modes(at, "Novel")
