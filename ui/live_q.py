"""The Scores q headline, drawn by its own component so that it changes the moment q moves.

Moving q reruns the page's q views (:mod:`ui.fragments`), but the browser shows their result late:
on the Scores page (2-core machine, headless Chromium) a q change took 230 ms median from the
key to the changed headline, although the server drew it within 40 ms. A trace of the browser's
main thread shows where: each script run starts with two re-renders of the whole page (25-45 ms
each), every one of the run's ~20 messages renders the page again, and the headline's messages
wait behind them.

So the headline does not wait for them. The server sends, with the headline, its text for
**every** q of the slider, computed by the same Python as the headline itself
(:meth:`~diversity_core.spectrum.Spectrum.vendi` per option: O(n) each, a few ms for all). A
small ``st.components.v2`` component draws the headline (label, value, help, caption) in its own
element from that table and, when the sidebar's q slider changes, draws that q's row at once. The
server's rerun follows with the same table; nothing is computed in the browser, only looked up.

The component writes only its own markup (classes ``dx-headline*``, styled by its own CSS); of the
page it reads only the q slider's ARIA attributes (``aria-label``, ``aria-valuetext``: the
slider's accessible name and value), never Streamlit's internal test ids.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from diversity_core import format_q

#: The headline's label up to the order (``Vendi score (q = 1)``).
LABEL_PREFIX = "Vendi score (q = "
#: The help on the headline's label; ``{q}`` is the order the headline shows.
HELP = "Effective number of distinct items at order q = {q}, out of n = {n}."
#: The caption under the value: plain text, then a bold part, then the share of n.
CAPTION = ("effective number of distinct items, out of ", "n = {n}")

# the type sizes of Streamlit's own metric and caption (rem: they follow the page's base size)
_CSS = r"""
.dx-headline { position: relative; }
.dx-headline-label { display: flex; align-items: center; gap: 0.25rem; min-height: 1.5rem;
  font-size: 0.875rem; line-height: 1.5; }
.dx-headline-help { display: inline-flex; align-items: center; justify-content: center; width: 1rem;
  height: 1rem; border: 1px solid currentColor; border-radius: 50%; font-size: 0.7rem; opacity: 0.6;
  cursor: help; position: relative; }
.dx-headline-help:hover, .dx-headline-help:focus-visible { opacity: 1; }
.dx-headline-help:hover::after, .dx-headline-help:focus-visible::after { content: attr(aria-label);
  position: absolute; left: 0; top: 1.4rem; z-index: 10; width: max-content; max-width: 18rem;
  padding: 0.4rem 0.6rem; border-radius: 0.4rem; font-size: 0.8rem; line-height: 1.4;
  background: var(--st-secondary-background-color, #f0f2f6); color: var(--st-text-color, inherit);
  box-shadow: 0 1px 4px rgba(0, 0, 0, 0.2); }
.dx-headline-value { font-size: 2.25rem; line-height: normal; padding-bottom: 0.25rem; overflow-wrap: normal; }
.dx-headline-caption { margin-top: 0.5rem; font-size: 0.875rem; opacity: 0.6; }
"""

_JS = r"""
export default function (component) {
  const { data, parentElement } = component;
  const live = (window.__dxLiveQ = window.__dxLiveQ || {});
  live.data = data;  // the newest table: a rerun with other data replaces it
  live.current = data && data.current;  // the q the server drew: a slider set to it again changes nothing
  // the component's own element: built once per mount, then only its texts change
  let box = parentElement.querySelector(".dx-headline");
  if (!box) {
    box = document.createElement("div");
    box.className = "dx-headline";
    box.setAttribute("role", "group");
    box.innerHTML = '<div class="dx-headline-label"><span class="dx-headline-label-text"></span>'
      + '<span class="dx-headline-help" tabindex="0" role="img">?</span></div>'
      + '<div class="dx-headline-value"></div><div class="dx-headline-caption"></div>';
    parentElement.appendChild(box);
  }
  live.box = box;
  const draw = (label) => {
    const d = live.data;
    const row = d && d.texts && d.texts[label];
    const el = live.box;
    if (!row || !el || !el.isConnected) return false;
    const text = d.prefix + label + ")";
    el.querySelector(".dx-headline-label-text").textContent = text;
    el.setAttribute("aria-label", text);
    el.querySelector(".dx-headline-help").setAttribute("aria-label", d.help.replace("{q}", label));
    el.querySelector(".dx-headline-value").textContent = row[0];
    const caption = el.querySelector(".dx-headline-caption");
    const bold = document.createElement("strong");
    bold.textContent = d.caption[1];
    caption.replaceChildren(d.caption[0], bold, row[1] ? " " + row[1] : "");
    window.__dxLiveQShown = label;  // what the tests and the benchmark read
    return true;
  };
  draw(live.current);
  if (live.observer) return;
  live.observer = new MutationObserver((records) => {
    for (const r of records) {
      const el = r.target;
      if (el.matches && el.matches('input[type="range"]') && el.getAttribute("aria-label") === (live.data && live.data.slider)) {
        const label = el.getAttribute("aria-valuetext");
        if (label === live.current) continue;  // redrawn at the q shown (a new run, new data): the server's text stands
        if (draw(label)) live.current = label;
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
    """Draw the q headline, which the browser redraws from a table of every q as the q slider moves.

    Parameters
    ----------
    options : sequence of float
        The q slider's options.
    value : callable
        ``value(q)``: the headline's number at order q (the page's own, e.g. ``spec.vendi``).
    n : int
        The number of items the share in the caption is of.
    current : float
        The q the page drew: the headline shows it until the slider leaves it.
    slider : str
        The q slider's label.
    key : str
        The element's key.

    The headline reads ``Vendi score (q = <q>)`` over the value written ``f"{value:.2f}"`` and the
    caption ``effective number of distinct items, out of n = <n> (<share of n>)``
    (:func:`headline_data`).
    """
    global _COMPONENT
    if _COMPONENT is None:
        from streamlit.components.v2 import component

        _COMPONENT = component("diversity_live_q", css=_CSS, js=_JS, isolate_styles=False)
    _COMPONENT(data=headline_data(options, value, n, current, slider=slider), key=key)


def headline_data(options: Sequence[float], value: Callable[[float], float], n: int, current: float, *,
                  slider: str = "Order q") -> dict:
    """What the headline component draws from: its texts for every q, and the q shown now."""
    return {"prefix": LABEL_PREFIX, "slider": slider, "current": format_q(float(current)),
            "texts": headline_texts([*options, current], value, n), "help": HELP.replace("{n}", str(n)),
            "caption": [CAPTION[0], CAPTION[1].format(n=n)]}


def headline_texts(options: Sequence[float], value: Callable[[float], float], n: Optional[int]) -> dict:
    """``{q label: [value text, share text]}`` for every option, as the headline writes them."""
    out = {}
    for q in options:
        v = float(value(float(q)))
        out[format_q(float(q))] = [f"{v:.2f}", f"({v / n:.1%})" if n else ""]
    return out
