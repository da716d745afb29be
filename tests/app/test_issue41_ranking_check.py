"""Issue 41, item 1: the Scores page states an image ranking only with the representation check's verdict.

Measured (``benchmarks/image_default_evidence.py``): on two real emoji sets pixels and a network's
features reverse 14 and 10 of 36 pairs of categories, both orders resolved; on handwritten digits
they agree. So the pixel view keeps its speed, and the reading says what the check found before
any ranking.
"""

from __future__ import annotations

from types import SimpleNamespace

from streamlit.testing.v1 import AppTest
from test_app import APP, assert_clean

from ui.compute import reading
from ui.robustness_ui import UNCHECKED_WHY


def _page(demo: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params.update({"demo": demo, **params})
    at.run()
    assert_clean(at)
    return at


def _reading(at: AppTest) -> str:
    (text,) = [m.value for m in at.markdown if m.value.startswith("**Reading:**")]
    return text


def _check(verdict: str, summary: str = "S", rows: int = 4, n: int = 50):
    result = SimpleNamespace(verdict=verdict, summary=lambda: summary, rows=(None,) * rows, n=n)
    return SimpleNamespace(result=result, why=UNCHECKED_WHY)


def test_reading_names_no_group_before_the_check_and_the_flip_after():
    groups = {"a": 4.0, "b": 1.0}
    sizes = {"a": 300, "b": 300}
    unchecked = reading(10.0, 600, groups, "1", sizes=sizes, check=SimpleNamespace(result=None, why=UNCHECKED_WHY))
    assert "not stated before it is checked" in unchecked and "**a**" not in unchecked and "**b**" not in unchecked
    flip = reading(10.0, 600, groups, "1", sizes=sizes, check=_check("depends", "The ranking depends on X"))
    assert "**Rank flip.** The ranking depends on X" in flip and "most diverse" not in flip
    stable = reading(10.0, 600, groups, "1", sizes=sizes, check=_check("stable"))
    assert "the most diverse group is **a**" in stable
    assert stable.endswith("The order holds under all 4 representations and kernels checked (at n = 50).")
    inside = reading(10.0, 600, groups, "1", sizes=sizes, check=_check("unresolved", "The order of a and b changes"))
    assert "the most diverse group is **a**" in inside and inside.endswith("The order of a and b changes")
    # no check (text, molecules, one group): as before
    assert reading(10.0, 600, groups, "1", sizes=sizes) == reading(10.0, 600, groups, "1", sizes=sizes, check=None)


def test_default_image_demo_withholds_the_ranking_until_checked():
    at = _page("digits")
    text = _reading(at)
    assert "not stated before it is checked" in text and "most diverse group" not in text
    assert at.button(key="scores_check").label == "Check the ranking"


def test_check_on_white_background_glyphs_states_the_flip_not_a_ranking():
    # pixels of glyphs on white (the icons demo, subsampled so that the network's features take seconds)
    at = _page("icons", n="150", seed="1")
    at.switch_page("app_pages/2_scores.py").run()
    assert_clean(at)
    assert "most diverse group" not in _reading(at)
    at.button(key="scores_check").click().run()
    assert_clean(at)
    text = _reading(at)
    assert "**Rank flip.**" in text and "The ranking depends on" in text, text
    assert "most diverse group" not in text
    assert not [b for b in at.button if b.key == "scores_check"]  # the check is done: no button left
    # the Robustness page's default test is the same one: its result is there without running again
    at.switch_page("app_pages/9_robustness.py").run()
    assert_clean(at)
    assert [d for d in at.dataframe if "representation · kernel" in d.value.columns]
