"""Issue 39 item 10: the Scores headline is its own component's markup (``ui.live_q``), and it
looks and reads like the metrics beside it, in headless Chromium.

This test reads Streamlit's metric DOM (by test id) only to compare against it: a Streamlit
upgrade that changes the metric's type shows here as a headline out of step with its neighbours.
"""

from __future__ import annotations

import pytest
from test_browser import assert_no_traceback, headline, open_page

pytestmark = pytest.mark.e2e

#: The computed type of the headline's parts and of the first neighbouring metric's.
STYLES = """() => {
  const size = (el) => el && getComputedStyle(el).fontSize;
  const box = document.querySelector('.dx-headline');
  const metric = document.querySelector('[data-testid="stMetric"]');
  return {
    value: size(box.querySelector('.dx-headline-value')),
    label: size(box.querySelector('.dx-headline-label-text')),
    metricValue: size(metric.querySelector('[data-testid="stMetricValue"]')),
    top: box.querySelector('.dx-headline-value').getBoundingClientRect().top,
    metricTop: metric.querySelector('[data-testid="stMetricValue"]').getBoundingClientRect().top,
    lineHeight: getComputedStyle(box.querySelector('.dx-headline-value')).lineHeight,
    metricLineHeight: getComputedStyle(metric.querySelector('[data-testid="stMetricValue"]')).lineHeight,
    metricLabel: size(metric.querySelector('[data-testid="stMetricLabel"] p')
                      || metric.querySelector('[data-testid="stMetricLabel"]')),
  };
}"""


def test_headline_is_its_own_and_sized_like_the_metrics(page, app_url, artifacts):
    open_page(page, f"{app_url}/?demo=digits&q=2")
    label, value = headline(page)
    assert label == "Vendi score (q = 2)" and float(value) > 1
    box = page.locator(".dx-headline").first
    assert "out of n = 1200 (" in box.locator(".dx-headline-caption").inner_text()
    # the same type sizes as Streamlit's own metrics beside it
    sizes = page.evaluate(STYLES)
    assert sizes["value"] == sizes["metricValue"] and sizes["label"] == sizes["metricLabel"], sizes
    assert sizes["lineHeight"] == sizes["metricLineHeight"], sizes
    assert abs(sizes["top"] - sizes["metricTop"]) <= 1, sizes  # the values on one line
    # the help is reachable from the keyboard, and names the order shown
    helper = box.locator(".dx-headline-help")
    helper.focus()
    assert page.evaluate("() => document.activeElement.classList.contains('dx-headline-help')")
    assert helper.get_attribute("aria-label") == (
        "Effective number of distinct items at order q = 2, out of n = 1200.")
    page.screenshot(path=str(artifacts / "live_q_headline.png"))
    assert_no_traceback(page)
