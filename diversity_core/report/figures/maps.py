"""Maps of the items at any size: the 2-D map (every point, or a density image under a sample) and the 3-D map.

Pure functions of a map's coordinates (:attr:`diversity_core.projection.Projection.coords`) and
plain per-item values, shared by the app's Projection page, the report and notebooks. Every
point carries its item (its row in ``coords``) as ``customdata``, a sampled point included, so
a click or a selection names items, not drawn rows.

- Up to any size the caller likes, :func:`map_figure` draws every point (WebGL above
  :data:`~diversity_core.report.figures.WEBGL_THRESHOLD` points, smaller and lighter markers
  above :data:`CROWDED`); given a ``sample`` it draws the items' density
  (:func:`diversity_core.projection.density_grid`, :data:`DENSITY_BINS` cells) as a grey image
  with only the sampled points on top (WebGL keeps ~20,000 points interactive).
- :func:`map_3d_figure` draws every point, or the sample only (WebGL's 3-D scatter has no
  density image and slows past ~10^5 points).
- ``highlight`` rings the items matching a search (at most :data:`HIGHLIGHT_MAX`);
  ``hover_box=False`` turns plotly's own hover box off, for a page that shows its own card.
- Above :data:`CROWDED` drawn points a map's figure is compacted for the browser (issue 41,
  item 13): float32 coordinates (binary in plotly's JSON) and the hover text all points share
  at their ends in the trace's template, 25 bytes of JSON a point instead of 73 at 100,000.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...exceptions import DiversityInputError
from ...projection import density_grid
from ._base import _go, escape_label
from .colours import series_colours
from .items import projection_figure, value_colour_scale

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["CROWDED", "DENSITY_BINS", "HIGHLIGHT_MAX", "NEIGHBOUR_RING", "map_3d_figure", "map_figure"]

#: Cells of the density image (x, y).
DENSITY_BINS = (480, 320)
#: Items matching a search ringed at most (the legend counts them all).
HIGHLIGHT_MAX = 50_000
#: Above this many points the 2-D map's markers are smaller and lighter (crowded regions stay readable),
#: and its figure is compacted for the browser (:func:`_compact`).
CROWDED = 20_000

_RING = {"color": "rgba(0,0,0,0)", "line": {"color": "#d62728", "width": 2}}
#: Colour of the rings around a clicked item's nearest neighbours (the search's rings are red).
NEIGHBOUR_RING = "#111111"


def map_figure(
    coords,
    *,
    color: Optional[Sequence] = None,
    categorical: Optional[bool] = None,
    hover: Optional[Sequence[str]] = None,
    color_title: str = "",
    axis_titles: Tuple[str, str] = ("dimension 1", "dimension 2"),
    title: Optional[str] = None,
    sample=None,
    highlight=None,
    neighbours=None,
    hover_box: bool = True,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """The 2-D map of the items: every point, or a density image with a sample of points on top.

    Parameters
    ----------
    coords : array-like of shape (n, 2) or wider
        The map's coordinates; the first two columns are drawn.
    color : sequence of length n, optional
        One group label per item (``categorical``: one trace per group, in
        :data:`~diversity_core.report.figures.PALETTE` order) or one number per item (a colour
        scale fitted to the values, :func:`~.items.value_colour_scale`: diverging around 0 only
        when they take both signs, e.g. an eigenvector's entries). None: one colour.
    categorical : bool, optional
        Whether ``color`` holds labels; None: labels unless ``color`` is numeric.
    hover : sequence of str, optional
        Plotly's hover text of each drawn point: ``n`` labels, or one per sampled item. Taken as
        markup (``<b>``, ``<br>``): escape the user text inside it. None: the item's row.
    color_title : str
        The colour's name in the legend, the colour bar and the hover box.
    axis_titles : (str, str)
        Titles of the x and y axes.
    title : str, optional
        The figure's title.
    sample : array-like of int, optional
        Items drawn as points over a density image of all ``n`` items (the density view of a
        large map; :data:`DENSITY_BINS` cells, log counts, each cell's count in its hover box).
        None: every item is a point.
    highlight : array-like of int, optional
        Items ringed in red (a search's matches; the first :data:`HIGHLIGHT_MAX` drawn, the legend
        counts all).
    neighbours : array-like of int, optional
        Items ringed in black above everything else, all of them (a clicked item's nearest
        neighbours, :data:`NEIGHBOUR_RING`); a selection's dimming leaves their rings as they are.
    hover_box : bool, default True
        False turns plotly's hover box off on the points (a page drawing its own hover card).
    colours : mapping group -> colour, optional
        Each group's colour (:func:`~.colours.group_colours` of the dataset's groups), so a group
        has its colour on every chart whichever groups the map (or its sample) shows.

    Returns
    -------
    plotly.graph_objects.Figure
        The points' traces (``scatter``, or ``scattergl`` above
        :data:`~diversity_core.report.figures.WEBGL_THRESHOLD` points and on a density view), each
        point's ``customdata`` its item; a density view's ``heatmap`` first; the highlight, then
        the neighbours, last.

    Raises
    ------
    DiversityInputError
        Coordinates that are not an n x 2 (or wider) array, ``color`` or ``hover`` of the wrong
        length, or ``sample``, ``highlight`` or ``neighbours`` naming items outside ``0 .. n - 1``.
    MissingDependencyError
        plotly is not installed (``pip install 'diversity-explorer[report]'``).

    Examples
    --------
    >>> fig = map_figure([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]], color=["a", "b", "a"])
    >>> [t.customdata.tolist() for t in fig.data]
    [[0, 2], [1]]
    """
    XY, sample, highlight = _check_map_inputs(coords, 2, color, hover, sample, highlight)
    near = _items(neighbours, XY.shape[0], "neighbours")
    fig = _map_figure(XY[:, :2], color=color, categorical=categorical, hover=hover, color_title=color_title,
                       axis_titles=axis_titles, title=title, sample=sample, highlight=highlight,
                       hover_box=hover_box, colours=colours)
    return _ring_neighbours(fig, _coordinates(XY[:, :2], sample is None and XY.shape[0] > CROWDED), near)


def map_3d_figure(
    coords,
    *,
    color: Optional[Sequence] = None,
    categorical: Optional[bool] = None,
    hover: Optional[Sequence[str]] = None,
    color_title: str = "",
    axis_titles: Sequence[str] = ("1", "2", "3"),
    title: Optional[str] = None,
    sample=None,
    highlight=None,
    neighbours=None,
    hover_box: bool = True,
    height: int = 640,
    colours: Optional[Mapping[str, str]] = None,
) -> go.Figure:
    """The 3-D map of the items in the 2-D map's colours (rotate with the mouse), every point or a sample.

    The arguments are :func:`map_figure`'s, with ``coords`` of shape (n, 3) (or wider; the first
    three columns are drawn) and three ``axis_titles``. With ``sample`` only those items are
    drawn (``hover``: one label per sampled item): WebGL's 3-D scatter has no density image and
    slows past ~10^5 points. Points are smaller and lighter from 10,000 drawn on (larger ones
    merge each cluster into one solid blob).

    Returns
    -------
    plotly.graph_objects.Figure
        ``scatter3d`` traces (one per group, or one with a colour scale), each point's
        ``customdata`` its item; the highlight, then the neighbours, last.

    Raises
    ------
    DiversityInputError
        As :func:`map_figure`, with coordinates of fewer than three columns.
    MissingDependencyError
        plotly is not installed.
    """
    XYZ, sample, highlight = _check_map_inputs(coords, 3, color, hover, sample, highlight)
    near = _items(neighbours, XYZ.shape[0], "neighbours")
    fig = _map_3d_figure(XYZ[:, :3], color=color, categorical=categorical, hover=hover, color_title=color_title,
                          axis_titles=tuple(axis_titles), title=title, sample=sample, highlight=highlight,
                          hover_box=hover_box, height=height, colours=colours)
    drawn = XYZ.shape[0] if sample is None else sample.size
    return _ring_neighbours(fig, _coordinates(XYZ[:, :3], drawn > CROWDED), near)


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
def _items(values, n: int, name: str) -> Optional[np.ndarray]:
    """``values`` as a 1-D array of item indices in ``0 .. n - 1`` (None stays None)."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise DiversityInputError(f"{name} must be a 1-D array of item indices (integers); got {a.dtype} "
                                  f"of shape {a.shape}.")
    if a.min() < 0 or a.max() >= n:
        raise DiversityInputError(f"{name} names items outside 0 .. {n - 1} (the map has {n} items); got "
                                  f"{int(a.min())} .. {int(a.max())}. Pass the items' rows in coords.")
    return a.astype(np.int64, copy=False)


def _check_map_inputs(coords, dims: int, color, hover, sample, highlight) -> tuple:
    """``(coordinates, sample, highlight)`` checked against one another (see :func:`map_figure`)."""
    XY = np.asarray(coords, dtype=np.float64)
    if XY.ndim != 2 or XY.shape[1] < dims:
        raise DiversityInputError(f"map coordinates must be an n x {dims} array (wider: the first {dims} "
                                  f"columns are drawn); got shape {XY.shape}.")
    n = XY.shape[0]
    if color is not None and len(color) != n:
        raise DiversityInputError(f"color must give one value per item ({n}); got {len(color)}.")
    sample = _items(sample, n, "sample")
    drawn = n if sample is None else sample.size
    if hover is not None and len(hover) != drawn:
        raise DiversityInputError(f"hover must give one label per drawn point ({drawn}: "
                                  f"{'every item' if sample is None else 'the sample'}); got {len(hover)}.")
    return XY, sample, _items(highlight, n, "highlight")


# ------------------------------------------------------------------------------------------
# the figures
# ------------------------------------------------------------------------------------------
def _ring_neighbours(fig, coords: np.ndarray, near: Optional[np.ndarray]) -> go.Figure:
    """``fig`` with the items ``near`` ringed in :data:`NEIGHBOUR_RING` on top (2-D or 3-D ``coords``)."""
    if near is None or not near.size:
        return fig
    go = _go()
    name, line = f"neighbours ({near.size})", {"color": NEIGHBOUR_RING, "width": 2}
    if coords.shape[1] == 3:
        size = (fig.data[0].marker.size or 4) + 5 if fig.data else 9  # around the search's rings (size + 4)
        fig.add_trace(go.Scatter3d(x=coords[near, 0], y=coords[near, 1], z=coords[near, 2], mode="markers",
                                   name=name, marker={"size": size, "color": "rgba(0,0,0,0)", "line": line},
                                   customdata=near, hoverinfo="skip"))
        return fig
    # larger than the search's rings (both show), undimmed when a selection dims the other points
    fig.add_trace(go.Scattergl(x=coords[near, 0], y=coords[near, 1], mode="markers", name=name,
                               marker={"size": 14, "color": "rgba(0,0,0,0)", "line": line},
                               unselected={"marker": {"opacity": 1}}, customdata=near, hoverinfo="skip"))
    return fig


def _map_figure(XY, *, color, categorical, hover, color_title, axis_titles, title, sample, highlight,
                hover_box, colours=None) -> go.Figure:
    go = _go()
    if sample is None:
        big = XY.shape[0] > CROWDED  # smaller, lighter points keep the crowded regions readable
        fig = projection_figure(XY, color=color, categorical=categorical, hover=hover, color_title=color_title,
                                axis_titles=axis_titles, title=title, marker_size=2.5 if big else None,
                                colours=colours)
        if big:
            fig.update_traces(marker_opacity=0.45)
            _compact(fig)
    else:
        fig = projection_figure(XY[sample], color=None if color is None else [color[i] for i in sample],
                                categorical=categorical, hover=hover, color_title=color_title,
                                axis_titles=axis_titles, title=title, webgl=True, marker_size=2.5,
                                colours=colours)
        for trace in fig.data:  # the sample's rows -> the items
            trace.customdata = sample[np.asarray(trace.customdata, dtype=np.int64)]
            trace.marker.opacity = 0.3
        grid = density_grid(XY, bins=DENSITY_BINS)
        fig.add_trace(go.Heatmap(
            x=grid.x_centres, y=grid.y_centres,
            z=np.where(grid.counts > 0, np.log10(np.maximum(grid.counts, 1)) + 1, np.nan),
            customdata=grid.counts, colorscale="Greys", zmin=0.5, showscale=False, name="density",
            hovertemplate="%{customdata} items here<extra></extra>", hoverongaps=False,
        ))
        fig.data = (fig.data[-1],) + tuple(fig.data[:-1])  # the image under the points
    if not hover_box:
        for trace in fig.data:
            if trace.type in ("scatter", "scattergl"):
                trace.hovertemplate = None
                trace.hoverinfo = "none"
    if highlight is not None and highlight.size:
        shown = highlight[:HIGHLIGHT_MAX]
        xy = _coordinates(XY[shown], sample is None and XY.shape[0] > CROWDED)  # as the points they ring
        fig.add_trace(go.Scattergl(x=xy[:, 0], y=xy[:, 1], mode="markers",
                                   name=f"matches ({highlight.size})", marker={"size": 11, **_RING},
                                   customdata=shown, hoverinfo="skip"))
    return fig


def _coordinates(XY: np.ndarray, compact: bool) -> np.ndarray:
    """The coordinates a trace draws: float32 on a compacted map (:func:`_compact`), else as given."""
    return XY.astype(np.float32) if compact else XY


def _compact(fig) -> None:
    """Shrink the point traces of a crowded map for the browser (issue 41, item 13), drawing the same map.

    Measured on the 100,000-point map (``benchmarks/bench_map_paint.py``): its figure's JSON was
    73 bytes a point, 60% of it the hover texts, and Streamlit's chart parses it, writes it out
    and parses it again (its theme) before plotly draws. So the coordinates travel as float32
    (plotly sends numpy arrays as binary, 4 bytes a value instead of 8; ~1e-7 relative, far below
    a pixel, and boxes and lassos are resolved on the caller's coordinates), and the text every
    point's hover text shares at its start and end (``<b>row`` ... ``</b>``) moves into the trace's
    ``hovertemplate``: the hover box shows the same text. The 3-D map's traces likewise
    (``scatter3d``, ``z`` included).
    """
    for trace in fig.data:
        if trace.type not in ("scatter", "scattergl", "scatter3d"):
            continue
        trace.x, trace.y = np.asarray(trace.x, dtype=np.float32), np.asarray(trace.y, dtype=np.float32)
        if trace.type == "scatter3d":
            trace.z = np.asarray(trace.z, dtype=np.float32)
        template = trace.hovertemplate
        if trace.text is None or not isinstance(template, str) or template.count("%{text}") != 1:
            continue
        texts = np.asarray(trace.text, dtype=str).tolist()
        head, tail = _shared_ends(texts)
        if head or tail:
            trace.text = np.asarray([t[len(head):len(t) - len(tail)] for t in texts], dtype=str)
            trace.hovertemplate = template.replace("%{text}", head + "%{text}" + tail)


def _shared_ends(texts: list) -> Tuple[str, str]:
    """The longest start and end all ``texts`` share, cut to split no markup tag or entity.

    They do not overlap in the shortest text and hold none of plotly's template characters.
    """
    if not texts:
        return "", ""
    head = os.path.commonprefix(texts)
    tail = os.path.commonprefix([t[::-1] for t in texts])[::-1]
    room = min(len(t) for t in texts) - len(head)  # the shortest text holds both
    tail = tail[len(tail) - min(len(tail), room):]
    cut = min([len(head)] + [head.find(c) for c in "%{}" if c in head])  # no template syntax
    head = head[:cut]
    opened = max(head.rfind("<"), head.rfind("&"))
    if opened > max(head.rfind(">"), head.rfind(";")):  # ends inside a tag or an entity
        head = head[:opened]
    cut = max([-1] + [tail.rfind(c) for c in "%{}" if c in tail])
    tail = tail[cut + 1:]
    opens = [i for i in (tail.find("<"), tail.find("&")) if i >= 0]
    before = tail[:min(opens) if opens else len(tail)]
    closed = max(before.rfind(">"), before.rfind(";"))
    return head, tail[closed + 1:]  # not from inside a tag or an entity


def _map_3d_figure(XYZ, *, color, categorical, hover, color_title, axis_titles, title, sample, highlight,
                   hover_box, height, colours=None) -> go.Figure:
    go = _go()
    items = np.arange(XYZ.shape[0]) if sample is None else sample
    drawn = XYZ[items]
    n = drawn.shape[0]
    # small, lighter points from 10,000 on (a density view's 20,000-point sample included): larger
    # ones merged each cluster into one solid blob (looked at on a 1,000,000-item map)
    size = 2 if n >= 10_000 else 3 if n > 2000 else 4
    opacity = 0.5 if n >= 10_000 else 0.8
    if color is not None and categorical is None:
        categorical = not np.issubdtype(np.asarray(color).dtype, np.number)
    fig = go.Figure()
    text = None if hover is None else np.asarray(hover, dtype=object)
    prefix = "%{text}<br>" if text is not None else "item %{customdata}<br>"
    if color is None or categorical:
        raw = ["all items"] * n if color is None else [str(color[i]) for i in items]
        labels = np.asarray([escape_label(x) for x in raw])
        order = dict.fromkeys(raw)  # first appearance, as the labels
        palette = series_colours(list(order), colours)
        for g, label in enumerate(escape_label(x) for x in order):
            sel = labels == label
            fig.add_trace(go.Scatter3d(
                x=drawn[sel, 0], y=drawn[sel, 1], z=drawn[sel, 2], mode="markers", name=label,
                marker={"size": size, "opacity": opacity, "color": palette[g]}, customdata=items[sel],
                text=None if text is None else text[sel], hovertemplate=prefix + f"{label}<extra></extra>",
            ))
    else:
        values = np.asarray(color, dtype=np.float64)
        fig.add_trace(go.Scatter3d(
            x=drawn[:, 0], y=drawn[:, 1], z=drawn[:, 2], mode="markers", name=color_title,
            marker={"size": size, "color": values[items], **value_colour_scale(values),
                    "colorbar": {"title": color_title}},
            customdata=items, text=text,
            hovertemplate=prefix + f"{color_title} = " + "%{marker.color:.3g}<extra></extra>",
        ))
    if not hover_box:
        fig.update_traces(hovertemplate=None, hoverinfo="none")
    if highlight is not None and highlight.size:
        shown = highlight[:HIGHLIGHT_MAX]
        fig.add_trace(go.Scatter3d(x=XYZ[shown, 0], y=XYZ[shown, 1], z=XYZ[shown, 2], mode="markers",
                                   name=f"matches ({highlight.size})", marker={"size": size + 4, **_RING},
                                   customdata=shown, hoverinfo="skip"))
    if n > CROWDED:
        _compact(fig)  # the rings above included
    fig.update_layout(
        title=title,
        height=height,
        margin=dict(l=0, r=0, t=50, b=0),
        scene=dict(xaxis_title=axis_titles[0], yaxis_title=axis_titles[1],
                   zaxis_title=axis_titles[2] if len(axis_titles) > 2 else "3"),
    )
    return fig
