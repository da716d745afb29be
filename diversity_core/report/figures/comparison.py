"""The figures of a :class:`~diversity_core.compare.Comparison`, as the report and the Compare page show them."""

from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional

from ._base import escape_label
from .colours import group_colours
from .curves import magnitude_figure
from .groups import (
    difference_figure,
    q_profile_bands_figure,
    sample_size_figure,
    score_bars_figure,
    spectra_overlay_figure,
)

#: A :class:`~diversity_core.compare.Comparison`; not imported, not even for type checking: the comparison
#: draws itself with these figures (``Comparison.plot``), and the import graph stays without a cycle.
Comparison = Any

__all__ = ["FIGURE_TITLES", "comparison_figures", "presentation_style"]

#: The report's figures, in order, with their headings.
FIGURE_TITLES = {
    "scores": "Every score with its interval",
    "differences": "Pairwise differences",
    "q_profile": "q-profiles (VS_q against the order q)",
    "magnitude": "Magnitude functions Mag(t)",
    "spectra": "Spectra",
    "sample_size": "Sample-size curves",
}


def presentation_style(fig, *, font_size: int = 20):
    """Large type and taller panels for a projector (modifies and returns ``fig``)."""
    fig.update_layout(font={"size": font_size}, height=int((fig.layout.height or 450) * 1.25))
    fig.update_annotations(font_size=font_size)
    return fig


def comparison_figures(cmp: Comparison, *, presentation: bool = False,
                       colours: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The figures of a comparison, keyed as in :data:`FIGURE_TITLES` (absent when there is no data).

    Pure function of the comparison (builders from :mod:`diversity_core.report.figures`).
    ``colours`` maps each group to its colour (:func:`~.colours.group_colours` of the dataset's
    groups); without it the comparison's own groups, in order, decide, the same on every figure.
    """
    if colours is None:
        colours = group_colours(cmp.groups)
    figs: Dict[str, Any] = {}
    bars = {}
    for s in cmp.scores:
        rows = []
        for g in cmp.groups:
            e = _maybe_estimate(cmp, g, s)
            if e is not None and e.estimate is not None:
                rows.append((g, e.estimate, *_ends(e)))
        if rows:
            bars[s] = rows
    figs["scores"] = score_bars_figure(bars, groups=cmp.groups, colours=colours, title=f"Scores at n = {cmp.n} with "
                                       f"{cmp.confidence_level:.0%} intervals")
    diffs: Dict[str, list] = {}
    for p in cmp.pairwise:
        diffs.setdefault(p.score, []).append((f"{p.group_a} − {p.group_b}", p.difference, *_ends(p), p.resolved))
    for s in cmp.scores:
        if s.startswith("MagDiff"):
            rows = [(f"{e.group} − {cmp.reference}", e.estimate, *_ends(e), _excludes_zero(e))
                    for e in cmp.estimates if e.score == s and e.role == "candidate"]
            if rows:
                diffs[s] = rows
    if diffs:
        figs["differences"] = difference_figure(diffs)
    if cmp.profiles:
        figs["q_profile"] = q_profile_bands_figure(
            {g: (p["q"], p["mean"], p["ci_low"], p["ci_high"]) for g, p in cmp.profiles.items()},
            n=cmp.n, colours=colours, title=f"q-profiles at n = {cmp.n} (bands: {cmp.confidence_level:.0%} intervals)",
        )
    if cmp.magnitude_curves:
        mag = cmp.settings.get("magnitude") or {}
        fig = magnitude_figure(
            {g: (c["t"], c["mag"]) for g, c in cmp.magnitude_curves.items()},
            t_conv=mag.get("t_conv"), t_cut=mag.get("t_cut"), sizes={g: cmp.n for g in cmp.magnitude_curves},
            title=f"Magnitude functions of one n-subset per group (n = {cmp.n})", colours=colours,
        )
        t_ref = mag.get("t_ref")
        if isinstance(t_ref, (int, float)) and math.isfinite(t_ref):
            fig.add_vline(x=float(t_ref), line={"color": "#D55E00", "dash": "dot", "width": 1.5},
                          annotation_text=f"t_ref = {t_ref:.3g} ({escape_label(cmp.reference)})", annotation_position="bottom right")
        figs["magnitude"] = fig
    if cmp.spectra:
        figs["spectra"] = spectra_overlay_figure(
            cmp.spectra, colours=colours, title=f"Leading eigenvalues of each group's density matrix (one n-subset, n = {cmp.n})")
    if cmp.curves:
        curves: Dict[str, Dict[str, tuple]] = {}
        for s in cmp.scores:
            per = {}
            for g in cmp.groups:
                pts = cmp.curve(g, s)
                if pts:
                    per[g] = ([p.size for p in pts], [p.mean for p in pts], [p.sd for p in pts])
            if per:
                curves[s] = per
        if curves:
            figs["sample_size"] = sample_size_figure(
                curves, n=cmp.n, colours=colours, title="Each score against the number of items (band: ± one sd of a fresh sample)")
    if presentation:
        for fig in figs.values():
            presentation_style(fig)
    return figs


def _maybe_estimate(cmp: Comparison, group: str, score: str):
    """The estimate of ``score`` for ``group``, or None when the comparison has none."""
    for e in cmp.estimates:
        if e.group == group and e.score == score:
            return e
    return None


def _ends(row) -> tuple:
    """``(low, high)`` of a row's interval, ``(None, None)`` without one."""
    return tuple(row.confidence_interval or (None, None))


def _excludes_zero(row) -> bool:
    """Whether a row's interval lies wholly on one side of 0 (False without an interval)."""
    lo, hi = _ends(row)
    return bool(lo is not None and (lo > 0 or hi < 0))
