"""The q headline redrawn in the browser the moment q moves, before the server's rerun arrives.

Moving q reruns the page's q views (:mod:`ui.fragments`), but the browser shows their result late:
on the Scores page (2-core machine, headless Chromium) a q change took 230 ms median from the
key to the changed headline, although the server drew it within 40 ms. A trace of the browser's
main thread shows where: each script run starts with two re-renders of the whole page (25-45 ms
each), every one of the run's ~20 messages renders the page again, and the headline's messages
wait behind them.

So the headline does not wait for them. The server sends, with the headline, its text for
**every** q of the slider, computed by the same Python as the headline itself
(:meth:`~diversity_core.spectrum.Spectrum.vendi` per option: O(n) each, a few ms for all). A
small ``st.components.v2`` script watches the sidebar's q slider and, when its value changes,
writes that q's texts into the headline metric and its caption at once. The server's rerun
follows with the same texts (and the charts); nothing is computed in the browser, only looked up.

The script changes the text of the nodes React drew, never the nodes themselves, so React's own
update of the same nodes (same text) lands cleanly.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from diversity_core._orders import format_q

#: The headline's label up to the order (``Vendi score (q = 1)``).
LABEL_PREFIX = "Vendi score (q = "

_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  const live = (window.__dxLiveQ = window.__dxLiveQ || {});
  live.data = data;  // the newest table: a rerun with other data replaces it
  live.current = data && data.current;  // the q the server drew: a slider set to it again changes nothing
  live.anchor = parentElement;  // where this page's headline is: another page's metrics are never written
  if (live.observer) return;
  const scope = () => {
    // the nearest block around this element that holds a metric (the headline's fragment)
    let el = live.anchor;
    if (!el || !el.isConnected) return null;
    while (el && el !== document.body) {
      if (el.querySelector && el.querySelector('[data-testid="stMetric"]')) return el;
      el = el.parentElement;
    }
    return null;
  };
  const textNode = (el) => {
    if (!el) return null;
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let node, last = null;
    while ((node = walk.nextNode())) if (node.nodeValue.trim()) last = node;
    return last;
  };
  const apply = (label) => {
    const d = live.data;
    const row = d && d.texts && d.texts[label];
    const root = scope();
    if (!row || !root) return;
    for (const metric of root.querySelectorAll('[data-testid="stMetric"]')) {
      const labelNode = textNode(metric.querySelector('[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"]'));
      if (!labelNode || !labelNode.nodeValue.startsWith(d.prefix)) continue;
      labelNode.nodeValue = d.prefix + label + ")";
      const valueNode = textNode(metric.querySelector('[data-testid="stMetricValue"]'));
      if (valueNode) valueNode.nodeValue = row[0];
      // the caption under the metric: its last text is the share of n
      const column = metric.closest('[data-testid="stColumn"]') || metric.parentElement;
      const caption = textNode(column && column.querySelector('[data-testid="stCaptionContainer"]'));
      if (caption && row[1] && /\(.*%\)/.test(caption.nodeValue)) caption.nodeValue = caption.nodeValue.replace(/\(.*%\)/, row[1]);
      window.__dxLiveQShown = label;  // what the tests and the benchmark read
    }
  };
  live.observer = new MutationObserver((records) => {
    for (const r of records) {
      const el = r.target;
      if (el.matches && el.matches('input[type="range"]') && el.getAttribute("aria-label") === (live.data && live.data.slider)) {
        const label = el.getAttribute("aria-valuetext");
        if (label === live.current) continue;  // redrawn at the q shown (a new run, new data): the server's text stands
        live.current = label;
        apply(label);
      }
    }
  });
  // the sidebar's slider may be drawn anew (another page): watch the whole document's ranges
  live.observer.observe(document.body, { subtree: true, attributes: true, attributeFilter: ["aria-valuetext"] });
}
"""

_COMPONENT = None


def live_headline(options: Sequence[float], value: Callable[[float], float], n: int, current: float, *,
                  slider: str = "Order q", key: str = "live_q") -> None:
    """Mount the script that redraws the q headline in the browser when the q slider moves.

    Parameters
    ----------
    options : sequence of float
        The q slider's options.
    value : callable
        ``value(q)``: the headline's number at order q (the page's own, e.g. ``spec.vendi``).
    n : int
        The number of items the share in the caption is of.
    current : float
        The q the page drew: the script writes nothing until the slider leaves it.
    slider : str
        The q slider's label.
    key : str
        The element's key.

    The headline must be an ``st.metric`` labelled ``Vendi score (q = <q>)`` with the value
    written ``f"{value:.2f}"``, and a caption in its column ending in ``(<share of n>)``.
    """
    global _COMPONENT
    if _COMPONENT is None:
        from streamlit.components.v2 import component

        _COMPONENT = component("diversity_live_q", js=_JS, isolate_styles=False)
    _COMPONENT(data={"prefix": LABEL_PREFIX, "slider": slider, "texts": headline_texts(options, value, n),
                     "current": format_q(float(current))}, key=key)


def headline_texts(options: Sequence[float], value: Callable[[float], float], n: Optional[int]) -> dict:
    """``{q label: [value text, share text]}`` for every option, as the headline writes them."""
    out = {}
    for q in options:
        v = float(value(float(q)))
        out[format_q(float(q))] = [f"{v:.2f}", f"({v / n:.1%})" if n else ""]
    return out
