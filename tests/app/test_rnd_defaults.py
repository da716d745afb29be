"""Issue 27 item 8: the RND page opens with a setting the regime study calls reliable.

On the digits demo (8 x 8 images) "auto" trains the small CNN, which ranked uniform noise above
the digits; the default is now the MLP on the 64 flattened pixels (docs/rnd.md: resolved). Wider
items (text's n-grams, molecules' fingerprints, larger images) open on the MLP on their 32
principal components, which the study resolved on the text and molecule demos. A setting the
user chooses keeps its warning, with the reliable one a click away.
"""

from __future__ import annotations

import pytest
from test_app import assert_clean, start

from diversity_core.rnd import rnd_regime_warning, rnd_reliable_setting
from diversity_core.rnd._regime import MIN_ITEMS, PCA_COMPONENTS

REGIME = "RND may rank unstructured (i.i.d.) noise above structured data"


def _regime_warnings(at) -> list:
    return [w.value.replace("\\", "") for w in at.warning if REGIME in w.value.replace("\\", "")]


def test_reliable_setting_follows_the_regime_rules():
    assert rnd_reliable_setting(pixel_shape=(8, 8)) == {
        "architecture": "mlp",
        "input": "pixels",
        "n_components": None,
        "input_shape": (64,),
    }
    # too many inputs for the MLP, the small CNN never trusted: the pixels' principal components
    assert rnd_reliable_setting(pixel_shape=(32, 32)) == {
        "architecture": "mlp",
        "input": "pixels",
        "n_components": PCA_COMPONENTS,
        "input_shape": (PCA_COMPONENTS,),
    }
    # a setting the study resolved comes before ResNet-18, which it never reproduced
    assert rnd_reliable_setting(pixel_shape=(32, 32, 3), device="cuda")["n_components"] == PCA_COMPONENTS
    assert rnd_reliable_setting(feature_shape=(48,))["input"] == "features"
    assert rnd_reliable_setting(feature_shape=(48,))["n_components"] is None
    # text's n-grams, molecules' fingerprints, a network's features: their principal components
    for width in (18448, 2048, 1280, 384):
        rec = rnd_reliable_setting(feature_shape=(width,))
        assert (rec["input"], rec["n_components"], rec["input_shape"]) == ("features", PCA_COMPONENTS,
                                                                            (PCA_COMPONENTS,))
        assert rnd_regime_warning({"architecture": "mlp", "n_components": PCA_COMPONENTS}, input_shape=(width,)) is None
    # features not computed yet: their principal components still qualify (at most 32 inputs)
    assert rnd_reliable_setting(has_features=True)["n_components"] == PCA_COMPONENTS
    assert rnd_reliable_setting() is None
    # a training budget over the threshold makes every MLP unreliable
    assert rnd_reliable_setting({"epochs": 200}, pixel_shape=(8, 8)) is None
    assert rnd_reliable_setting({"epochs": 200}, feature_shape=(2048,), has_features=True) is None
    assert rnd_regime_warning({"architecture": "mlp"}, input_shape=(64,)) is None


def test_digits_demo_opens_the_rnd_page_without_a_regime_warning():
    at = start({"demo": "digits"})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    assert at.selectbox(key="rnd_arch").value == "mlp_pixels"
    assert _regime_warnings(at) == []
    assert not [b for b in at.button if b.key == "rnd_use_reliable"]


def test_a_chosen_unreliable_setting_warns_and_offers_the_reliable_one():
    at = start({"demo": "digits"})
    at.switch_page("app_pages/5_rnd.py").run()
    at.selectbox(key="rnd_arch").set_value("auto").run()
    assert _regime_warnings(at) == [rnd_regime_warning({"architecture": "cnn"}, input_shape=(8, 8))]
    at.number_input(key="rnd_epochs").set_value(300).run()  # also over the training budget for the MLP
    at.button(key="rnd_use_reliable").click().run()
    assert_clean(at)
    assert at.selectbox(key="rnd_arch").value == "mlp_pixels"
    assert at.number_input(key="rnd_epochs").value == 30
    assert _regime_warnings(at) == []


@pytest.mark.parametrize("demo", ["text", "molecules"])
def test_text_and_molecules_open_on_the_principal_components_without_a_warning(demo):
    """Issue 27 item 8: wider features no longer open on "auto" beside its own regime warning."""
    at = start({"demo": demo})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    assert at.selectbox(key="rnd_arch").value == "mlp_pca"
    assert _regime_warnings(at) == []
    assert not [b for b in at.button if b.key == "rnd_use_reliable"]
    # the MLP on all the features is the user's choice: it warns, and the reliable setting is one click away
    compute_features(demo)
    at.selectbox(key="rnd_arch").set_value("mlp").run()
    (found,) = _regime_warnings(at)
    assert "input features (more than 64)" in found
    at.button(key="rnd_use_reliable").click().run()
    assert at.selectbox(key="rnd_arch").value == "mlp_pca"
    assert _regime_warnings(at) == []


def compute_features(demo: str) -> None:
    """Put the demo's default features in the core's cache (the page reads their width from it)."""
    from diversity_core.data import load_demo
    from diversity_core.featurizers import featurize

    featurize(load_demo(demo))


def test_a_run_on_the_principal_components_reduces_the_features():
    from ui import tasks

    tasks.clear_stores()  # the task stores live as long as the process: earlier tests' RND runs are in them
    at = start({"demo": "text", "group": ["captions: human-like (level 3)"]})
    at.switch_page("app_pages/5_rnd.py").run()
    at.number_input(key="rnd_train").set_value(100)
    at.number_input(key="rnd_epochs").set_value(4)
    at.number_input(key="rnd_last").set_value(2)
    at.number_input(key="rnd_runs").set_value(2)
    at.button(key="rnd_run").click().run()
    assert_clean(at)
    assert any(m.label == "RND score" for m in at.metric)
    (out,) = [o for o in tasks.store("rnd").values() if "results" in o.value]
    (result,) = out.value["results"].values()
    assert result.settings["n_components"] == PCA_COMPONENTS and result.settings["input_shape"][0] > 1000
    # the network on the components is in the regime; the one group's size is not (its own warning)
    assert _regime_warnings(at) == [result.reliability]
    assert f"a set of {result.settings['n_items']} items (fewer than {MIN_ITEMS})" in result.reliability
    assert "principal components (not" not in result.reliability and "training budget" not in result.reliability


def test_small_groups_open_pooled_and_per_group_offers_pooling():
    """The digits' groups have 300 items (fewer than MIN_ITEMS): the page opens on all 1,200 items
    together, without a warning; ticking "Per group" warns about the size and offers pooling back."""
    at = start({"demo": "digits"})
    at.switch_page("app_pages/5_rnd.py").run()
    assert at.checkbox(key="rnd_per_group").value is False
    assert _regime_warnings(at) == []
    at.checkbox(key="rnd_per_group").check().run()
    (found,) = _regime_warnings(at)
    assert f"a set of 300 items (fewer than {MIN_ITEMS})" in found and "small CNN" not in found
    assert not [b for b in at.button if b.key == "rnd_use_reliable"]  # the network is not the reason
    (pool,) = [b for b in at.button if b.key == "rnd_pool"]
    assert pool.label == "Score all 1200 items together"
    pool.click().run()
    assert at.checkbox(key="rnd_per_group").value is False and _regime_warnings(at) == []


def test_large_groups_open_per_group(monkeypatch):
    from diversity_core import rnd
    from ui import rnd_ui

    monkeypatch.setattr(rnd_ui, "MIN_ITEMS", 300)  # the digits' groups are then large enough
    monkeypatch.setattr(rnd._regime, "MIN_ITEMS", 300)
    at = start({"demo": "digits"})
    at.switch_page("app_pages/5_rnd.py").run()
    assert at.checkbox(key="rnd_per_group").value is True and _regime_warnings(at) == []
