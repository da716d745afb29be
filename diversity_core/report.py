"""A self-contained HTML report of a :class:`~diversity_core.compare.Comparison`, and figure export.

The report is one HTML file for meetings: it works offline and loads nothing from the network
(plotly.js is embedded once, inline; no external scripts, fonts or images; thumbnails and
molecule drawings are ``data:`` URIs). It holds

- the settings: data files and their content hashes, kernel, orders q, n and how it was chosen,
  seeds, replicate counts, magnitude scales, package version, and how the intervals were made;
- the table of every score with its interval, and the pairwise verdicts;
- figures: scores with intervals, pairwise differences, the q-profile overlay with bands, the
  magnitude-curve overlay, the spectra, the sample-size curves;
- a gallery per group (image thumbnails as base64 PNG, text snippets, molecule drawings as SVG);
- the comparison itself as JSON (``<script type="application/json" id="comparison-data">``),
  so the numbers can be reloaded with :meth:`Comparison.from_dict`.

Each figure has PNG and SVG buttons that render in the reader's browser
(``Plotly.downloadImage``, offline). From Python or the CLI, :func:`export_figure` writes PNG or
SVG with kaleido, which drives a Chrome/Chromium; when kaleido cannot find one on its own it is
pointed at ``/usr/bin/chromium`` (Debian's package) through ``BROWSER_PATH``. Without any
Chromium, export raises a :class:`~diversity_core.exceptions.DiversityError` that says so, and the
report's buttons remain the route to PNG/SVG.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .compare import Comparison
from .exceptions import DiversityError, DiversityInputError

__all__ = [
    "FIGURE_TITLES",
    "comparison_figures",
    "report_html",
    "write_report",
    "figure_bytes",
    "export_figure",
    "export_figures",
    "presentation_style",
]

#: The report's figures, in order, with their headings.
FIGURE_TITLES = {
    "scores": "Every score with its interval",
    "differences": "Pairwise differences",
    "q_profile": "q-profiles (VS_q against the order q)",
    "magnitude": "Magnitude functions Mag(t)",
    "spectra": "Spectra",
    "sample_size": "Sample-size curves",
}

#: Where Debian's chromium lives (used when kaleido finds no browser by itself).
CHROMIUM_PATH = "/usr/bin/chromium"

_FORMATS = ("png", "svg")


# ---------------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------------
def presentation_style(fig, *, font_size: int = 20):
    """Large type and taller panels for a projector (modifies and returns ``fig``)."""
    fig.update_layout(font={"size": font_size}, height=int((fig.layout.height or 450) * 1.25))
    fig.update_annotations(font_size=font_size)
    return fig


def comparison_figures(cmp: Comparison, *, presentation: bool = False) -> Dict[str, Any]:
    """The figures of a comparison, keyed as in :data:`FIGURE_TITLES` (absent when there is no data).

    Pure function of the comparison (builders from :mod:`diversity_core.figures`).
    """
    from .figures import (
        difference_figure,
        magnitude_figure,
        q_profile_bands_figure,
        sample_size_figure,
        score_bars_figure,
        spectra_overlay_figure,
    )

    figs: Dict[str, Any] = {}
    bars = {}
    for s in cmp.scores:
        rows = []
        for g in cmp.groups:
            e = _maybe_estimate(cmp, g, s)
            if e is not None and e.estimate is not None:
                rows.append((g, e.estimate, e.ci_low, e.ci_high))
        if rows:
            bars[s] = rows
    figs["scores"] = score_bars_figure(bars, groups=cmp.groups, title=f"Scores at n = {cmp.n} with "
                                       f"{cmp.level:.0%} intervals")
    diffs: Dict[str, list] = {}
    for p in cmp.pairwise:
        diffs.setdefault(p.score, []).append((f"{p.group_a} − {p.group_b}", p.difference, p.ci_low, p.ci_high,
                                              p.resolved))
    for s in cmp.scores:
        if s.startswith("MagDiff"):
            rows = [(f"{e.group} − {cmp.reference}", e.estimate, e.ci_low, e.ci_high,
                     bool(e.ci_low is not None and (e.ci_low > 0 or e.ci_high < 0)))
                    for e in cmp.estimates if e.score == s and e.role == "candidate"]
            if rows:
                diffs[s] = rows
    if diffs:
        figs["differences"] = difference_figure(diffs)
    if cmp.profiles:
        figs["q_profile"] = q_profile_bands_figure(
            {g: (p["q"], p["mean"], p["ci_low"], p["ci_high"]) for g, p in cmp.profiles.items()},
            n=cmp.n, title=f"q-profiles at n = {cmp.n} (bands: {cmp.level:.0%} intervals)",
        )
    if cmp.magnitude_curves:
        mag = cmp.settings.get("magnitude") or {}
        fig = magnitude_figure(
            {g: (c["t"], c["mag"]) for g, c in cmp.magnitude_curves.items()},
            t_conv=mag.get("t_conv"), t_cut=mag.get("t_cut"), sizes={g: cmp.n for g in cmp.magnitude_curves},
            title=f"Magnitude functions of one n-subset per group (n = {cmp.n})",
        )
        t_ref = mag.get("t_ref")
        if isinstance(t_ref, (int, float)) and math.isfinite(t_ref):
            fig.add_vline(x=float(t_ref), line={"color": "#D55E00", "dash": "dot", "width": 1.5},
                          annotation_text=f"t_ref = {t_ref:.3g} ({cmp.reference})", annotation_position="bottom right")
        figs["magnitude"] = fig
    if cmp.spectra:
        figs["spectra"] = spectra_overlay_figure(
            cmp.spectra, title=f"Leading eigenvalues of each group's density matrix (one n-subset, n = {cmp.n})")
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
                curves, n=cmp.n, title="Each score against the number of items (band: ± one sd of a fresh sample)")
    if presentation:
        for fig in figs.values():
            presentation_style(fig)
    return figs


def _maybe_estimate(cmp: Comparison, group: str, score: str):
    for e in cmp.estimates:
        if e.group == group and e.score == score:
            return e
    return None


# ---------------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------------
#: Executable names of Chrome/Chromium that kaleido's browser lookup also finds on PATH.
_CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def _ensure_browser() -> None:
    """Point kaleido at Debian's chromium (``BROWSER_PATH``) when no Chrome is on PATH."""
    if os.environ.get("BROWSER_PATH"):
        return
    if any(shutil.which(name) for name in _CHROME_NAMES):
        return
    if Path(CHROMIUM_PATH).is_file():
        os.environ["BROWSER_PATH"] = CHROMIUM_PATH


def _check_format(fmt: str) -> str:
    fmt = str(fmt).lower().lstrip(".")
    if fmt not in _FORMATS:
        raise DiversityInputError(f"unknown figure format {fmt!r}; choose one of: 'png', 'svg'.")
    return fmt


def figure_bytes(fig, *, format: str = "png", width: Optional[int] = None, height: Optional[int] = None,
                 scale: float = 2.0) -> bytes:
    """A figure as PNG or SVG bytes, rendered by kaleido (Chromium, offline).

    Raises
    ------
    DiversityError
        No Chrome/Chromium could be started; install one (``apt-get install chromium``) or use
        the PNG/SVG buttons of the HTML report, which render in the browser.
    """
    fmt = _check_format(format)
    _ensure_browser()
    try:
        return fig.to_image(format=fmt, width=width or fig.layout.width or 1000,
                            height=height or fig.layout.height or 500, scale=scale if fmt == "png" else 1)
    except Exception as exc:  # kaleido raises several unrelated types when no browser starts
        raise DiversityError(
            f"could not render the figure as {fmt.upper()} with kaleido ({type(exc).__name__}: {exc}). It needs "
            "Chrome or Chromium: install one (Debian: apt-get install chromium) or set BROWSER_PATH; the HTML "
            "report's PNG/SVG buttons export figures in the browser instead."
        ) from None


def export_figure(fig, path: Union[str, Path], *, format: Optional[str] = None, width: Optional[int] = None,
                  height: Optional[int] = None, scale: float = 2.0) -> Path:
    """Write one figure as PNG or SVG (format from the suffix when not given); returns the path."""
    path = Path(path)
    fmt = _check_format(format or path.suffix or "png")
    if path.suffix.lower() != f".{fmt}":
        path = path.with_suffix(f".{fmt}")
    path.write_bytes(figure_bytes(fig, format=fmt, width=width, height=height, scale=scale))
    return path


def export_figures(cmp: Comparison, directory: Union[str, Path], *, format: str = "png",
                   presentation: bool = False, scale: float = 2.0) -> List[Path]:
    """Every figure of the comparison as ``DIR/<name>.<format>``; one kaleido session for all."""
    fmt = _check_format(format)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    figs = comparison_figures(cmp, presentation=presentation)
    paths = [directory / f"{name}.{fmt}" for name in figs]
    _ensure_browser()
    import plotly.io as pio

    try:
        pio.write_images(list(figs.values()), paths, format=fmt,
                         width=[f.layout.width or 1000 for f in figs.values()],
                         height=[f.layout.height or 500 for f in figs.values()], scale=scale if fmt == "png" else 1)
    except Exception:  # noqa: BLE001 - fall back to one figure at a time, with the clear error
        for fig, path in zip(figs.values(), paths):
            export_figure(fig, path, format=fmt, scale=scale)
    return paths


# ---------------------------------------------------------------------------------------------
# galleries
# ---------------------------------------------------------------------------------------------
def _group_datasets(datasets, groups: Sequence[str]) -> Dict[str, Any]:
    """``{group: Dataset}`` from a mapping or from one Dataset with groups (missing groups skipped)."""
    if datasets is None:
        return {}
    from .data import Dataset

    if isinstance(datasets, Dataset):
        names = set(datasets.group_names())
        return {g: datasets.select_group(g) for g in groups if g in names}
    if isinstance(datasets, Mapping):
        return {g: datasets[g] for g in groups if g in datasets and isinstance(datasets[g], Dataset)}
    raise DiversityInputError(
        f"datasets must be a Dataset with groups or a dict group -> Dataset; got {type(datasets).__name__}."
    )


def _png_data_uri(img: np.ndarray, px: int = 96) -> str:
    from PIL import Image

    from .data.images import enlarge_thumbnail

    a = enlarge_thumbnail(img, px)
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(a.astype(np.uint8))).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _gallery_html(ds, k: int, seed: int) -> str:
    """Up to ``k`` items of one group (seeded random choice) in the form that suits their modality."""
    n = ds.n
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(n, size=min(k, n), replace=False))
    esc = html.escape
    if ds.modality == "images":
        cells = [f'<figure class="thumb"><img alt="{esc(ds.ids[i])}" src="{_png_data_uri(ds.items[i])}">'
                 f"<figcaption>{esc(_short(ds.ids[i], 24))}</figcaption></figure>" for i in idx]
        return '<div class="gallery">' + "".join(cells) + "</div>"
    if ds.modality == "molecules":
        from .featurizers.molecules import draw_molecule

        cells = []
        for i in idx:
            smiles = ds.items[i]
            try:
                src = _svg_data_uri(draw_molecule(smiles, size=160))
                body = f'<img alt="{esc(smiles)}" src="{src}">'
            except Exception:  # noqa: BLE001 - a molecule RDKit cannot draw is shown as text
                body = f"<code>{esc(smiles)}</code>"
            cells.append(f'<figure class="thumb mol">{body}<figcaption>{esc(_short(smiles, 40))}</figcaption></figure>')
        return '<div class="gallery">' + "".join(cells) + "</div>"
    if ds.modality == "text":
        items = "".join(f"<li>{esc(_short(' '.join(str(ds.items[i]).split()), 220))}</li>" for i in idx)
        return f'<ul class="snippets">{items}</ul>'
    return (f'<p class="note">{esc(ds.name)}: an embeddings file holds vectors only (no items to show); '
            f"{n} items of dimension {ds.features.shape[1]}.</p>")


def _short(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------
_CSS = """
:root { --fg: #1b1b1b; --muted: #5b5b5b; --line: #d9d9d9; --accent: #0072B2; --good: #1a7f37; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--fg); margin: 0 auto; max-width: 1200px; padding: 24px 32px 64px; line-height: 1.45; }
body.presentation { max-width: none; font-size: 20px; padding: 24px 48px; }
h1 { font-size: 1.8em; margin-bottom: 0.2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid var(--line); }
.sub { color: var(--muted); margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0 1em; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f4f6f8; }
td.num { text-align: right; white-space: nowrap; }
.ci { color: var(--muted); }
.yes { color: var(--good); font-weight: 600; } .no { color: var(--muted); }
.settings td:first-child { color: var(--muted); white-space: nowrap; }
.figure { margin: 1em 0 2em; } .figure .tools { text-align: right; }
.figure button { font: inherit; font-size: 0.85em; margin-left: 6px; padding: 2px 10px; border: 1px solid var(--line);
                 background: #fff; border-radius: 4px; cursor: pointer; }
.gallery { display: flex; flex-wrap: wrap; gap: 8px; }
.thumb { margin: 0; text-align: center; font-size: 0.75em; color: var(--muted); }
.thumb img { display: block; image-rendering: pixelated; border: 1px solid var(--line); max-width: 120px; }
.thumb.mol img { image-rendering: auto; width: 160px; }
.snippets li { margin-bottom: 4px; } .note { color: var(--muted); }
code { font-size: 0.9em; }
"""

_BUTTONS_JS = """
function diversityDownload(id, fmt, name) {
  var gd = document.getElementById(id);
  Plotly.downloadImage(gd, {format: fmt, filename: name, width: gd.offsetWidth, height: gd.offsetHeight, scale: fmt === 'png' ? 2 : 1});
}
"""


def _fmt(v, digits: int = 4) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _scores_table(cmp: Comparison) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(g)}<br><span class='ci'>N = {size}</span></th>"
                   for g, size in zip(cmp.groups, cmp.group_sizes))
    rows = []
    for s in cmp.scores:
        cells = []
        for g in cmp.groups:
            e = _maybe_estimate(cmp, g, s)
            if e is None or e.estimate is None:
                cells.append("<td class='num'>–</td>")
            elif e.role == "reference":
                cells.append("<td class='num'><em>reference</em></td>")
            else:
                ci = "" if e.ci_low is None else f" <span class='ci'>[{_fmt(e.ci_low)}, {_fmt(e.ci_high)}]</span>"
                cells.append(f"<td class='num' title='{esc(e.interval)} interval, {e.replicates} subset(s)'>"
                             f"{_fmt(e.estimate)}{ci}</td>")
        rows.append(f"<tr><th>{esc(s)}</th>{''.join(cells)}</tr>")
    return f"<table class='scores'><tr><th>score</th>{head}</tr>{''.join(rows)}</table>"


def _pairwise_table(cmp: Comparison) -> str:
    esc = html.escape
    rows = []
    for p in cmp.pairwise:
        verdict = (f"<span class='yes'>resolved: {esc(str(p.higher))} higher</span>" if p.resolved
                   else "<span class='no'>not resolved</span>")
        ci = "–" if p.ci_low is None else f"[{_fmt(p.ci_low)}, {_fmt(p.ci_high)}]"
        rows.append(f"<tr><td>{esc(p.score)}</td><td>{esc(p.group_a)} − {esc(p.group_b)}</td>"
                    f"<td class='num'>{_fmt(p.difference)}</td><td class='num'>{ci}</td><td>{verdict}</td></tr>")
    return ("<table class='pairwise'><tr><th>score</th><th>pair</th><th>difference</th>"
            f"<th>{cmp.level:.0%} interval</th><th>verdict</th></tr>{''.join(rows)}</table>")


def _settings_rows(cmp: Comparison, generated: str) -> List[tuple]:
    st = cmp.settings
    rows = [
        ("package", f"{st.get('package', 'diversity_core')} {st.get('version', '')}"),
        ("generated", generated),
        ("groups", ", ".join(f"{g} ({size} items)" for g, size in zip(cmp.groups, cmp.group_sizes))),
        ("equal n", f"{cmp.n} items per group ({st.get('n_rule', '')})"),
        ("kernel", f"{st.get('kernel_description', '')}; fixed once on the pooled groups"),
        ("spectrum path", ", ".join(f"{g}: {v}" for g, v in (st.get("spectrum_path") or {}).items())),
        ("orders q", ", ".join(str(q) for q in st.get("q", []))),
        ("level", f"{cmp.level:.0%} per interval and per pair"),
        ("seed", f"{st.get('seed')} ({st.get('seed_rule', '')})"),
        ("subsets", f"{st.get('n_subsamples')} n-subsets averaged per group larger than n; "
                    f"{st.get('n_resamples')} subsets per size of the sample-size curves"),
        ("interval method", ", ".join(f"{g}: {m}" for g, m in (st.get("interval_method") or {}).items())),
    ]
    for g, src in (st.get("sources") or {}).items():
        bits = [f"{k}: {v}" for k, v in src.items()]
        rows.append((f"data · {g}", "; ".join(bits)))
    mag = st.get("magnitude")
    if mag:
        rows.append(("magnitude", f"metric {mag.get('metric')}; t_cut = {_fmt(mag.get('t_cut'))} "
                     f"({mag.get('t_cut_rule')}); {mag.get('n_scales')} scales"))
        rows.append(("t_conv", ", ".join(f"{g}: {_fmt(v)}" for g, v in (mag.get("t_conv") or {}).items())))
        if mag.get("t_ref") is not None:
            roles = st.get("roles") or {}
            cands = ", ".join(g for g, r in roles.items() if r == "candidate")
            rows.append(("MagDiff roles", f"reference {cmp.reference} (t_ref = {_fmt(mag.get('t_ref'))}); "
                         f"candidates {cands}"))
        rows.append(("magnitude intervals", str(mag.get("estimate_rule", ""))))
        merged = {g: v for g, v in (mag.get("duplicates_merged") or {}).items() if v}
        if merged:
            rows.append(("duplicates merged", ", ".join(f"{g}: up to {v} per subset" for g, v in merged.items())
                         + " (magnitude counts distinct points)"))
        singular = {g: v for g, v in (mag.get("singular_evaluations") or {}).items() if v}
        if singular:
            rows.append(("singular magnitude", ", ".join(f"{g}: {v} subsets" for g, v in singular.items())
                         + " had a numerically singular scale (their areas are missing)"))
    rnd = st.get("rnd")
    if rnd:
        first = next(iter((rnd.get("settings") or {}).values()), {})
        keys = ("architecture", "runs", "epochs", "train_size", "lr", "optimizer")
        rows.append(("RND", ", ".join(f"{k} {first.get(k)}" for k in keys) + "; " + str(rnd.get("interval_rule", ""))))
    return rows


def _json_script(data: Any) -> str:
    text = json.dumps(data, allow_nan=False, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\!--")
    return f'<script type="application/json" id="comparison-data">{text}</script>'


def report_html(
    cmp: Comparison,
    *,
    datasets=None,
    title: Optional[str] = None,
    gallery_items: int = 12,
    presentation: bool = False,
) -> str:
    """The report as one HTML string (self-contained, offline).

    Parameters
    ----------
    cmp : Comparison
    datasets : Dataset or dict group -> Dataset, optional
        The items behind the groups, for the galleries (images, text, molecules).
    title : str, optional
        Heading (default: "Diversity comparison: A vs B vs ...").
    gallery_items : int, default 12
        Items per group in each gallery (a seeded random choice).
    presentation : bool, default False
        Wide layout and large type.
    """
    if not isinstance(cmp, Comparison):
        raise DiversityInputError(f"report_html needs a Comparison; got {type(cmp).__name__}.")
    esc = html.escape
    generated = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = title or "Diversity comparison: " + " vs ".join(cmp.groups)
    figs = comparison_figures(cmp, presentation=presentation)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>",
        f'<body class="{"presentation" if presentation else "standard"}">',
        f"<h1>{esc(title)}</h1>",
        f"<p class='sub'>{len(cmp.groups)} groups at n = {cmp.n} items each · {esc(cmp.settings.get('kernel_description', ''))}"
        f" · {cmp.level:.0%} intervals · generated {esc(generated)}</p>",
        "<h2>Summary</h2>",
        _summary_html(cmp),
        "<h2>Scores</h2>",
        "<p>Every score at the equal n, with its interval in brackets.</p>",
        _scores_table(cmp),
        "<h2>Pairwise differences</h2>",
        _pairwise_table(cmp),
    ]
    first = True
    for name, fig in figs.items():
        div_id = f"fig-{name}"
        body = fig.to_html(full_html=False, include_plotlyjs=bool(first), div_id=div_id,
                           config={"displaylogo": False, "responsive": True,
                                   "toImageButtonOptions": {"filename": name, "scale": 2}})
        if first:
            parts.append(f"<script>{_BUTTONS_JS}</script>")
        first = False
        parts.append(
            f"<section class='figure' data-figure='{name}'><h2>{esc(FIGURE_TITLES.get(name, name))}</h2>"
            f"<div class='tools'><button onclick=\"diversityDownload('{div_id}', 'png', '{name}')\">PNG</button>"
            f"<button onclick=\"diversityDownload('{div_id}', 'svg', '{name}')\">SVG</button></div>{body}</section>"
        )
    galleries = _group_datasets(datasets, cmp.groups)
    if galleries:
        seed = int(cmp.settings.get("seed") or 0)
        parts.append("<h2>Galleries</h2><p>A random choice of items from each group (seeded).</p>")
        for i, g in enumerate(cmp.groups):
            if g in galleries:
                parts.append(f"<h3>{esc(g)}</h3>{_gallery_html(galleries[g], gallery_items, seed + i)}")
    parts += [
        "<h2>Settings</h2>",
        "<table class='settings'>"
        + "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(v))}</td></tr>" for k, v in _settings_rows(cmp, generated))
        + "</table>",
        "<h2>How the intervals were made</h2>",
        f"<p>{esc(str(cmp.settings.get('interval_description', '')))}</p>",
        _json_script(cmp.to_dict()),
        "</body></html>",
    ]
    text = "\n".join(p for p in parts if p)
    return _strip_external_references(text)


def _summary_html(cmp: Comparison) -> str:
    """One line per score: the resolved pairs, or that none are resolved."""
    esc = html.escape
    items = []
    for s in cmp.scores:
        pairs = [p for p in cmp.pairwise if p.score == s]
        if not pairs:
            continue
        resolved = [p for p in pairs if p.resolved]
        if resolved:
            text = "; ".join(f"{esc(p.higher)} > {esc(p.group_b if p.higher == p.group_a else p.group_a)}"
                             for p in resolved)
            items.append(f"<li><b>{esc(s)}</b>: {text} <span class='ci'>({len(resolved)} of {len(pairs)} pairs "
                         "resolved)</span></li>")
        else:
            items.append(f"<li><b>{esc(s)}</b>: <span class='no'>no pair resolved</span></li>")
    return f"<ul>{''.join(items)}</ul>"


def _strip_external_references(text: str) -> str:
    """Guard: the report must not reference external stylesheets, scripts or fonts."""
    if re.search(r"<(script|link)[^>]+(src|href)\s*=\s*[\"']https?://", text, flags=re.I):
        raise DiversityError("internal error: the report would load an external resource.")
    return text


def write_report(cmp: Comparison, path: Union[str, Path], **kwargs) -> Path:
    """Write :func:`report_html` to ``path`` (UTF-8); returns the path."""
    path = Path(path)
    if path.is_dir():
        raise DiversityInputError(f"{path} is a folder; give a file name such as report.html.")
    if not path.parent.exists():
        raise DiversityInputError(f"{path.parent} does not exist; create the folder first.")
    path.write_text(report_html(cmp, **kwargs), encoding="utf-8")
    return path
