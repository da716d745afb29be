"""Issue 27 item 8: the RND page opens with a setting the regime study calls reliable.

On the digits demo (8 x 8 images) "auto" trains the small CNN, which ranked uniform noise above
the digits; the default is now the MLP on the 64 flattened pixels (docs/rnd.md: resolved). A
setting the user chooses keeps its warning, with the reliable one a click away.
"""

from __future__ import annotations

from test_app import assert_clean, start

from diversity_core.rnd import rnd_regime_warning, rnd_reliable_setting

REGIME = "RND may rank unstructured (i.i.d.) noise above structured data"


def _regime_warnings(at) -> list:
    return [w.value.replace("\\", "") for w in at.warning if REGIME in w.value.replace("\\", "")]


def test_reliable_setting_follows_the_regime_rules():
    assert rnd_reliable_setting(pixel_shape=(8, 8)) == {
        "architecture": "mlp",
        "input": "pixels",
        "input_shape": (64,),
    }
    # too many inputs for the MLP, and the small CNN is never trusted: nothing on a CPU
    assert rnd_reliable_setting(pixel_shape=(32, 32)) is None
    assert rnd_reliable_setting(pixel_shape=(32, 32, 3), device="cuda")["architecture"] == "resnet18"
    assert rnd_reliable_setting(feature_shape=(48,))["input"] == "features"
    # a training budget over the threshold makes even the 64 pixels unreliable
    assert rnd_reliable_setting({"epochs": 200}, pixel_shape=(8, 8)) is None
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


def test_text_demo_says_no_offered_network_is_known_reliable():
    at = start({"demo": "text"})
    at.switch_page("app_pages/5_rnd.py").run()
    assert_clean(at)
    assert at.selectbox(key="rnd_arch").value == "auto"
    assert not [b for b in at.button if b.key == "rnd_use_reliable"]
