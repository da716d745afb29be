"""Gaps left on issues 14, 15 and 16: the RND regime warning, Compare's magnitude replicates,
user strings as plain text, the detected group column, the weight filter."""

from __future__ import annotations

import inspect

from test_app import assert_clean, start

from diversity_core.compare import compare
from diversity_core.rnd import MIN_ITEMS, rnd_regime_warning

#: The opening words of every regime warning of the core.
REGIME = "RND may rank unstructured (i.i.d.) noise above structured data"


def _page(query: dict, page: str):
    at = start(query)
    at.switch_page(page).run()
    assert_clean(at)
    return at


def _regime_warnings(at) -> list:
    # literal text: the escaped message keeps its words, with backslashes before Markdown characters
    return [w.value.replace("\\", "") for w in at.warning if REGIME in w.value.replace("\\", "")]


# ------------------------------------------------------------------------------------------
# issue 14: the RND regime warning, before training and with the result
# ------------------------------------------------------------------------------------------
def test_rnd_page_warns_before_training_when_the_setting_is_unreliable():
    at = _page({"demo": "digits"}, "app_pages/5_rnd.py")
    # digits are 8 x 8 images: "auto" (no longer the default, issue 27) trains the small CNN,
    # a setting the core warns about
    at.selectbox(key="rnd_arch").set_value("auto").run()
    expected = rnd_regime_warning({"architecture": "cnn"}, input_shape=(8, 8))
    assert expected is not None
    assert _regime_warnings(at) == [expected]
    at.selectbox(key="rnd_arch").set_value("mlp").run()
    assert _regime_warnings(at) == []  # the MLP on 64 pixels, full batch, a small budget
    at.number_input(key="rnd_lr").set_value(0.5).run()
    assert len(_regime_warnings(at)) == 1 and "training budget" in _regime_warnings(at)[0]


def test_rnd_result_carries_its_reliability():
    at = _page({"demo": "digits", "group": ["all ten classes"]}, "app_pages/5_rnd.py")
    at.selectbox(key="rnd_arch").set_value("mlp")
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(4)
    at.number_input(key="rnd_last").set_value(2)
    at.number_input(key="rnd_runs").set_value(2)
    at.number_input(key="rnd_lr").set_value(0.5)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert any(m.label == "RND score" for m in at.metric)
    found = _regime_warnings(at)
    assert len(found) == 1 and "training budget" in found[0]


def test_compare_warns_when_rnd_is_in_the_unreliable_regime():
    assert _regime_warnings(_page({"demo": "text"}, "app_pages/7_compare.py")) == []  # no RND, no warning
    # the form's values count once submitted (or from a link): RND on from the link
    at = _page({"demo": "text", "cmp_rnd": "true"}, "app_pages/7_compare.py")
    found = _regime_warnings(at)
    assert len(found) == 1 and "input features" in found[0]


def test_compare_rnd_on_digits_trains_in_the_reliable_regime():
    """The former batches of 50 gave a training budget of 20 (noise above the digits): the
    comparison now trains with rnd_score's own batch, so its network and training draw no
    warning; only the size of its sets does (the equal n of every group: fewer than MIN_ITEMS)."""
    from ui import tasks

    at = _page({"demo": "digits", "n": "400", "seed": "0", "cmp_rnd": "true", "cmp_magnitude": "false",
                "cmp_qs": ["1"], "cmp_nsub": "2", "cmp_nres": "3"}, "app_pages/7_compare.py")
    assert at.checkbox(key="cmp_rnd").value is True
    (before,) = _regime_warnings(at)
    assert f"items (fewer than {MIN_ITEMS})" in before and "training budget" not in before
    at.button[0].click()  # the form's submit button
    at.run(timeout=600)
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    (after,) = _regime_warnings(at)  # the result's own warning, once
    outcomes = [o for o in tasks.store("compare", 8).values() if o.value.settings.get("rnd")]
    assert outcomes
    for settings in outcomes[-1].value.settings["rnd"]["settings"].values():
        assert settings["batch_size"] == settings["train_size"]
        assert after == rnd_regime_warning(settings) and f"a set of {settings['n_items']} items" in after
        # the sizes (the set's n and, since issue 41, the training split it allows) aside, nothing is flagged
        assert rnd_regime_warning(settings, sized=False) is None


# ------------------------------------------------------------------------------------------
# issue 14: Compare's magnitude subsets per size follow the core
# ------------------------------------------------------------------------------------------
def test_compare_magnitude_replicates_default_is_the_cores():
    at = _page({"demo": "digits"}, "app_pages/7_compare.py")
    default = inspect.signature(compare).parameters["magnitude_replicates"].default
    assert default == 30
    assert at.number_input(key="cmp_nmag").value == default


# ------------------------------------------------------------------------------------------
# issue 15: group names as plain text on the Magnitude and Compare pages and in their charts
# ------------------------------------------------------------------------------------------
LINK = "<a href=http://evil>x</a>"  # no quotes or commas: one CSV field as it stands
MD = "[x](http://evil)"


def _upload_evil_groups(monkeypatch):
    import numpy as np

    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(5)
    names = [MD, LINK, "plain"]
    rows = ["a,b,c,group"] + [f"{x:.4f},{y:.4f},{z:.4f},{names[i % 3]}"
                              for i, (x, y, z) in enumerate(rng.normal(size=(90, 3)))]
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.text_input(key="group_column").input("group").run()
    at.sidebar.file_uploader(key="upload").upload("t.csv", "\n".join(rows).encode()).run()
    assert_clean(at)
    assert set(at.session_state["dataset"].group_names()) == {MD, LINK, "plain"}
    return at


def _markdown_texts(at) -> list:
    return [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.subheader]


def _assert_no_live_markup(at) -> None:
    import json
    import re

    live = re.compile(r"(?<!\\)\]\(http|(?<!\\)<a\b")  # escaped, they read "\](http" and "\<a"
    for text in _markdown_texts(at):
        assert not live.search(text), text
    for table in at.table:
        frame = table.value
        cells = [str(v) for v in frame.to_numpy().ravel()] + [str(c) for c in frame.columns] + \
            [str(i) for i in frame.index]
        assert not any(live.search(c) for c in cells), cells
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        figure = repr(json.loads(chart.proto.spec))  # the JSON writes "<" as \u003c
        assert not re.search(r"<a\b", figure), figure[:400]


def test_group_names_are_plain_text_on_magnitude_and_compare(monkeypatch):
    at = _upload_evil_groups(monkeypatch)
    at.switch_page("app_pages/4_magnitude.py").run()
    assert_clean(at)
    at.selectbox(key="mag_reference").set_value(MD).run()
    assert_clean(at)
    assert any("Largest MagArea" in c.value for c in at.caption)
    _assert_no_live_markup(at)
    for key, value in {"cmp_presentation": "true", "cmp_nsub": "2", "cmp_nres": "3", "cmp_nmag": "3",
                       "cmp_qs": ["1"]}.items():
        at.query_params[key] = value
    at.switch_page("app_pages/7_compare.py").run()
    assert_clean(at)
    assert any("most to least diverse" in s.value for s in at.subheader)
    # as typed, and no autolink: a word joiner (U+2060) breaks "http" (issue 26, item 14)
    assert any(m.value == "**\\[x\\](h\u2060ttp\\://evil)**" for m in at.markdown), [m.value for m in at.markdown]
    _assert_no_live_markup(at)


# ------------------------------------------------------------------------------------------
# issue 16 item 13: a string group column is found and named on the Dataset page
# ------------------------------------------------------------------------------------------
def test_detected_group_column_is_used_and_named(monkeypatch):
    import numpy as np

    import ui.data as uidata

    monkeypatch.delenv(uidata.DATA_DIR_ENV, raising=False)
    rng = np.random.default_rng(6)
    rows = ["a,b,c,target"] + [f"{x:.4f},{y:.4f},{z:.4f},{'class_' + 'ABC'[i % 3]}"
                               for i, (x, y, z) in enumerate(rng.normal(size=(30, 3)))]
    at = start()
    at.sidebar.radio(key="source").set_value("Upload").run()
    at.sidebar.file_uploader(key="upload").upload("wine.csv", "\n".join(rows).encode()).run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset"].group_names() == ["class_A", "class_B", "class_C"]
    at.switch_page("app_pages/1_dataset.py").run()
    assert_clean(at)
    said = [c.value.replace("\\", "") for c in at.caption if c.value.startswith("Read as:")]
    assert len(said) == 1 and "groups from column 'target' (detected" in said[0], said
    assert "group_column=" not in said[0]  # the app's words: the Group column option


# ------------------------------------------------------------------------------------------
# issue 16: a weight-range filter for datasets with item weights, on every page and in the link
# ------------------------------------------------------------------------------------------
def _weighted_table(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    df = pd.DataFrame(rng.normal(size=(60, 4)), columns=["a", "b", "c", "d"])
    df["w"] = np.arange(60) % 6 + 1.0  # weights 1..6, ten items each
    df["group"] = ["left", "right"] * 30
    df.to_csv(tmp_path / "w.csv", index=False)
    return df


def test_weight_range_filters_every_page_and_lives_in_the_link(tmp_path, monkeypatch):
    import diversity_core as dc
    import ui.data as uidata

    monkeypatch.setenv(uidata.DATA_DIR_ENV, str(tmp_path))
    df = _weighted_table(tmp_path)
    at = start({"path": "w.csv", "wcol": "w"})
    assert not at.error, [e.value for e in at.error]
    assert at.session_state["dataset"].weights is not None
    at.sidebar.number_input(key="weight_min").set_value(2.0).run()
    at.sidebar.number_input(key="weight_max").set_value(4.0).run()
    assert_clean(at)
    assert at.query_params["wmin"] == "2.0" and at.query_params["wmax"] == "4.0"
    kept = df[(df.w >= 2) & (df.w <= 4)]
    expected = dc.compute_spectrum(kept[["a", "b", "c", "d"]].to_numpy(), kernel="cosine",
                                   weights=kept["w"].to_numpy()).vendi(1.0)
    table = at.dataframe[0].value
    assert int(table["items"].sum()) == len(kept) == 30
    from test_app import headline

    assert float(headline(at).value) == float(f"{expected:.2f}")
    for page in ("app_pages/1_dataset.py", "app_pages/7_compare.py"):
        at.switch_page(page).run()
        assert_clean(at)
        assert any("30 items (weight in [2, 4])" in c.value.replace("\\", "") for c in at.caption), \
            [c.value for c in at.caption]
    # a copied link reopens the same filter
    again = start({"path": "w.csv", "wcol": "w", "wmin": "2.0", "wmax": "4.0"})
    assert again.sidebar.number_input(key="weight_min").value == 2.0
    assert int(again.dataframe[0].value["items"].sum()) == 30


def test_rnd_page_does_not_compute_features_to_warn(monkeypatch):
    # the warning before training reads the features at hand; a featurizer run (minutes for
    # MiniLM) starts only with "Run RND"
    import diversity_core.featurizers as featurizers

    at = _page({"demo": "text"}, "app_pages/1_dataset.py")
    monkeypatch.setenv("DIVERSITY_NO_CACHE", "1")  # no features at hand in the on-disk store either
    featurizers.clear_cache()
    runs = []
    cache = featurizers._cache.FEATURE_CACHE
    original = cache.get_or_compute
    monkeypatch.setattr(cache, "get_or_compute", lambda key, compute: runs.append(key) or original(key, compute))
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    assert runs == [] and _regime_warnings(at) == []
