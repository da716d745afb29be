"""One colour per group, the same on every chart: :func:`group_colours`.

A group's colour follows its position in the dataset's group list, not the charts' own order,
so a chart that shows some of the groups (or the pooled set first) colours each group as every
other chart does. The pooled series (:data:`POOLED_LABEL`, "all selected items") has a neutral
colour of its own that no group takes. Beyond :data:`~._base.PALETTE` the colours are generated
(hues spaced by the golden angle, three lightness levels), all distinct.
"""

from __future__ import annotations

import colorsys
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from ...exceptions import DiversityInputError
from ._base import PALETTE

#: The label of the pooled series (every selected item together) on the app's charts.
POOLED_LABEL = "all selected items"
#: Its colour: a neutral dark grey that is neither in :data:`PALETTE` nor generated.
POOLED_COLOUR = "#4D4D4D"

_GOLDEN = 0.6180339887498949
_LIGHTNESS = (0.42, 0.58, 0.32)


def _extra_colour(k: int) -> str:
    """The k-th generated colour (k = 0, 1, ...): golden-angle hues at three lightness levels."""
    h = (0.07 + k * _GOLDEN) % 1.0
    r, g, b = colorsys.hls_to_rgb(h, _LIGHTNESS[(k // 7) % len(_LIGHTNESS)], 0.75 - 0.1 * ((k // 21) % 3))
    return f"#{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"


def _colour_sequence() -> Iterable[str]:
    """The palette, then generated colours, never the pooled colour and never one twice."""
    seen = {POOLED_COLOUR}
    for c in PALETTE:
        if c not in seen:
            seen.add(c)
            yield c
    k = 0
    while True:
        c = _extra_colour(k)
        k += 1
        if c not in seen:
            seen.add(c)
            yield c


def _group_colours(names: Sequence[str], pooled: str) -> Dict[str, str]:
    out = {pooled: POOLED_COLOUR}
    seq = _colour_sequence()
    for name in names:
        if name != pooled and name not in out:
            out[name] = next(seq)
    return out


def group_colours(names: Sequence[str], *, pooled: str = POOLED_LABEL) -> Dict[str, str]:
    """Map every group of a dataset to its colour, the same on every chart.

    Parameters
    ----------
    names : sequence of str
        Every group of the dataset, in the dataset's order (``Dataset.group_names()``), not
        only those a chart shows: the i-th group takes the i-th colour, so a subset of the
        groups keeps its colours.
    pooled : str
        The label of the pooled series, mapped to :data:`POOLED_COLOUR`, which no group takes.

    Returns
    -------
    dict
        Group name -> ``"#RRGGBB"``: :data:`PALETTE` in order, then generated colours, all
        distinct however many groups there are; ``pooled`` is included.

    Raises
    ------
    DiversityInputError
        When ``names`` is a single string rather than a sequence of names.

    Examples
    --------
    >>> c = group_colours(["a", "b", "c"])
    >>> c["b"] == group_colours(["a", "b"])["b"], c["all selected items"]
    (True, '#4D4D4D')
    """
    if isinstance(names, (str, bytes)):
        raise DiversityInputError("group_colours takes the list of group names, not one name; "
                                  "pass dataset.group_names().")
    return _group_colours([str(n) for n in names], str(pooled))


def series_colours(labels: Sequence, colours: Optional[Mapping[str, str]] = None) -> List[str]:
    """The colour of each series of one chart: ``colours`` where it names the label.

    A label ``colours`` does not name takes the first colour of the sequence that no other
    series of the chart has (the pooled label its neutral colour), so no two series of a chart
    share one; without ``colours`` the chart's own order decides, as :func:`group_colours` would.
    """
    labels = [str(x) for x in labels]
    given = {} if colours is None else {str(k): v for k, v in colours.items()}
    used = {given[x] for x in labels if x in given}
    seq = (c for c in _colour_sequence() if c not in used)
    out: Dict[str, str] = {}
    for x in labels:
        if x in out:
            continue
        if x in given:
            out[x] = given[x]
        elif x == POOLED_LABEL and POOLED_COLOUR not in used:
            out[x] = POOLED_COLOUR
        else:
            out[x] = next(seq)
    return [out[x] for x in labels]
