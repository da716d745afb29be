"""The self-contained HTML report of a :class:`~diversity_core.compare.Comparison`.

The report is one HTML file for meetings: it works offline and loads nothing from the network
(plotly.js is embedded once, inline; no external scripts, fonts or images; thumbnails and
molecule drawings are ``data:`` URIs). It holds

- the settings: data files and their content hashes, kernel, orders q, n and how it was chosen,
  seeds, replicate counts, magnitude scales, package version, and how the intervals were made;
- the table of every score with its interval, and the pairwise verdicts;
- figures: scores with intervals, pairwise differences, the q-profile overlay with bands, the
  magnitude-curve overlay, the spectra, the sample-size curves;
- a gallery per group (image thumbnails as base64 PNG, text snippets, molecule drawings as SVG);
- with novelty reports, what each generated group has that the reference lacks and what it misses
  (KEN, RRKE, the mode-share chart, each mode's items and its verdict against the null);
- the comparison itself as JSON (``<script type="application/json" id="comparison-data">``),
  so the numbers can be reloaded with :meth:`Comparison.from_dict`.

Each figure has PNG and SVG buttons that render in the reader's browser
(``Plotly.downloadImage``, offline); :mod:`diversity_core.report.export` writes PNG/SVG files.

The page is rendered from the Jinja2 template ``templates/report.html.j2`` with autoescaping
on: every name, path and setting is HTML-escaped by the template. Only two kinds of text are
inserted as they are (``|safe`` in the template): plotly's figure markup and the JSON data
block, whose ``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e``, ``\\u0026`` so that
no value can close the ``<script>`` element. jinja2 and plotly are optional
(``pip install 'diversity-explorer[report]'``) and imported when a report is made.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import io
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .._atomic import atomic_write
from .._json import dumps
from .._optional import require
from .._validation import check_scalar
from ..compare import Comparison
from ..exceptions import DiversityError, DiversityInputError
from .figures.comparison import FIGURE_TITLES, _maybe_estimate, comparison_figures

__all__ = ["report_html", "write_report"]

#: The template of the report (package data of ``diversity_core.report``).
TEMPLATE = "report.html.j2"

# Characters of JSON text that could end a <script> element or open a comment inside it,
# written as JSON \u escapes (the JSON value is unchanged).
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}


@functools.lru_cache(maxsize=1)
def _environment():
    """The Jinja2 environment of the report: package templates, autoescaping on, strict undefined."""
    jinja2 = require("jinja2", purpose="the HTML report")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("diversity_core.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _fmt
    return env


def _fmt(v, digits: int = 4) -> str:
    """A number for a table cell: 4 significant digits, ``–`` for a missing value."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _script_json(data: Any) -> str:
    """``data`` as compact JSON text that is safe inside a ``<script>`` element."""
    return dumps(data, separators=(",", ":")).translate(_SCRIPT_ESCAPES)


def _group_datasets(datasets, groups: Sequence[str]) -> Dict[str, Any]:
    """``{group: Dataset}`` from a mapping or from one Dataset with groups (missing groups skipped)."""
    if datasets is None:
        return {}
    from ..data import Dataset

    if isinstance(datasets, Dataset):
        names = set(datasets.group_names())
        return {g: datasets.select_group(g) for g in groups if g in names}
    if isinstance(datasets, Mapping):
        return {g: datasets[g] for g in groups if g in datasets and isinstance(datasets[g], Dataset)}
    raise DiversityInputError(
        f"datasets must be a Dataset with groups or a dict group -> Dataset; got {type(datasets).__name__}."
    )


def _png_data_uri(img: np.ndarray, px: int = 96) -> str:
    """An image as a ``data:`` URI of a PNG enlarged to about ``px`` pixels (nearest neighbour)."""
    Image = require("PIL.Image", purpose="image thumbnails in the report")

    from ..data.images import enlarge_thumbnail

    a = enlarge_thumbnail(img, px)
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(a.astype(np.uint8))).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _svg_data_uri(svg: str) -> str:
    """An SVG drawing as a base64 ``data:`` URI."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _settings_rows(cmp: Comparison, generated: str) -> List[tuple]:
    """(name, text) rows of the Settings table: everything needed to rerun the comparison."""
    st = cmp.settings
    rows = [
        ("package", f"{st.get('package', 'diversity_core')} {st.get('version', '')}"),
        ("generated", generated),
        ("groups", ", ".join(f"{g} ({size} items)" for g, size in zip(cmp.groups, cmp.group_sizes))),
        ("equal n", f"{cmp.n} items per group ({st.get('n_rule', '')})"),
        ("kernel", f"{st.get('kernel_description', '')}; fixed once on the pooled groups"),
        ("spectrum path", ", ".join(f"{g}: {v}" for g, v in (st.get("spectrum_path") or {}).items())),
        ("orders q", ", ".join(str(q) for q in st.get("q", []))),
        ("level", f"{cmp.confidence_level:.0%} per interval and per pair"),
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


def _gallery(ds, k: int, seed: int) -> Dict[str, Any]:
    """Up to ``k`` items of one group (seeded random choice) in the form that suits their modality."""
    n = ds.n
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.choice(n, size=min(k, n), replace=False))
    if ds.modality == "images":
        cells = [{"alt": str(ds.ids[i]), "src": _png_data_uri(ds.items[i]), "caption": _short(ds.ids[i], 24)}
                 for i in idx]
        return {"kind": "images", "cells": cells}
    if ds.modality == "molecules":
        from ..featurizers.molecules import draw_molecule

        cells = []
        for i in idx:
            smiles = str(ds.items[i])
            try:
                src = _svg_data_uri(draw_molecule(smiles, size=160))
            except Exception:  # noqa: BLE001 - a molecule RDKit cannot draw is shown as text
                src = None
            cells.append({"smiles": smiles, "src": src, "caption": _short(smiles, 40)})
        return {"kind": "molecules", "cells": cells}
    if ds.modality == "text":
        return {"kind": "text", "snippets": [_short(" ".join(str(ds.items[i]).split()), 220) for i in idx]}
    return {"kind": "vectors", "name": ds.name, "n": n, "dim": ds.features.shape[1]}


def _summary(cmp: Comparison) -> Dict[str, Any]:
    """The summary: the headline score's ranked list, then one ranking line per other score with pairs.

    Every ranking and its text come from :func:`~diversity_core.report.ranking` (the
    presentation layout's too): the groups in order with the resolved steps between neighbours,
    not every resolved pair.
    """
    from ._ranking import STEP_LEGEND, headline_score, ranking

    lead = headline_score(cmp)
    others = [ranking(cmp, s) for s in cmp.scores if s != lead and any(p.score == s for p in cmp.pairwise)]
    return {"lead": ranking(cmp, lead), "others": others, "legend": STEP_LEGEND}


def _score_rows(cmp: Comparison) -> List[Dict[str, Any]]:
    """The cells of the scores table: one row per score, one cell per group."""
    rows = []
    for s in cmp.scores:
        cells = []
        for g in cmp.groups:
            e = _maybe_estimate(cmp, g, s)
            if e is None or e.estimate is None:
                cells.append({"kind": "missing"})
            elif e.role == "reference":
                cells.append({"kind": "reference"})
            else:
                lo, hi = e.confidence_interval or (None, None)
                cells.append({"kind": "value", "estimate": e.estimate, "ci_low": lo, "ci_high": hi,
                              "interval": e.interval, "replicates": e.replicates})
        rows.append({"score": s, "cells": cells})
    return rows


def _figure_sections(figs: Mapping[str, Any], *, titles: Optional[Mapping[str, str]] = None,
                     plotlyjs: bool = True) -> List[Dict[str, Any]]:
    """Each figure's heading, div id and plotly markup; plotly.js goes inline into the first one only.

    ``titles``: headings of figures beyond the comparison's and the evaluation's; ``plotlyjs``:
    False when an earlier figure of the page carries plotly.js already.
    """
    from .figures.evaluation import EVALUATION_TITLES

    titles = {**EVALUATION_TITLES, **FIGURE_TITLES, **(titles or {})}
    sections = []
    for i, (name, fig) in enumerate(figs.items()):
        div_id = f"fig-{name}"
        body = fig.to_html(full_html=False, include_plotlyjs=plotlyjs and i == 0, div_id=div_id,
                           config={"displaylogo": False, "responsive": True,
                                   "toImageButtonOptions": {"filename": name, "scale": 2}})
        sections.append({"name": name, "div_id": div_id, "title": titles.get(name, name), "body": body})
    return sections


def _item_cell(ds, i: int) -> Dict[str, Any]:
    """One item of a closest-pair row: a thumbnail (images, molecules) or a snippet, and its id."""
    cell: Dict[str, Any] = {"id": _short(ds.ids[i], 40), "src": None, "text": ""}
    if ds.modality == "images":
        cell["src"] = _png_data_uri(ds.items[i], px=64)
    elif ds.modality in ("text", "molecules"):
        cell["text"] = _short(" ".join(str(ds.items[i]).split()), 160)
    return cell


def _evaluation_section(evaluations: Optional[Mapping[str, Any]], reference: Optional[str],
                        items: Optional[Mapping[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """The rows of the report's "against the reference" section (None without evaluations).

    ``items``: ``{group: (dataset, generated rows, training rows)}``, the dataset rows behind the
    positions of the closest pairs (their thumbnails or snippets join the table).
    """
    if not evaluations:
        return None
    groups = list(evaluations)
    per_group = {g: {r["metric"]: r for r in evaluations[g].table_rows()} for g in groups}
    metrics = list(dict.fromkeys(m for g in groups for m in per_group[g]))
    rows = []
    for m in metrics:
        cells = []
        for g in groups:
            r = per_group[g].get(m)
            if r is None:
                cells.append({"value": "", "ci": ""})
                continue
            ci = f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if r["ci_low"] is not None else ""
            # the kernel distance's spread over its subsets: value ± sd (not an interval)
            sd = f" ± {_fmt(r['sd'])}" if r.get("sd") is not None else ""
            cells.append({"value": _fmt(r["value"]) + sd, "ci": ci})
        note = next((per_group[g][m]["note"] for g in groups if m in per_group[g]), "")
        rows.append({"metric": m, "cells": cells, "note": note})
    pairs = []
    for g in groups:
        mem = evaluations[g].memorization
        if mem is not None:
            # every flagged pair (they come first), up to 50, and at least the ten closest
            closest = [{**t, "generated_item": None, "train_item": None}
                       for t in mem.top_items(min(max(10, mem.n_flagged), 50))]
            if items and g in items:
                ds, gen_rows, train_rows = items[g]
                for t in closest:
                    t["generated_item"] = _item_cell(ds, int(gen_rows[t["generated"]]))
                    t["train_item"] = _item_cell(ds, int(train_rows[t["train"]]))
            pairs.append({"group": g, "rule": mem.rule(), "headline": mem.headline(), "note": mem.note,
                          "closest": closest, "n_generated": mem.n_generated})
    prompts = []
    for g in groups:
        cond = evaluations[g].conditional
        if cond is not None and cond.per_prompt:
            prompts.append({"group": g, "rows": [(str(name), int(p["n"]), _fmt(float(p["vendi"])))
                                                 for name, p in cond.per_prompt.items()]})
    nn = sorted({str(evaluations[g].settings.get("nn_method")) for g in groups})
    return {"reference": reference or "", "groups": groups, "rows": rows, "pairs": pairs, "prompts": prompts,
            "nn_method": ", ".join(nn)}


def _novelty_section(novelty: Optional[Mapping[str, Any]], reference: Optional[str],
                     items: Optional[Mapping[str, Any]], plotlyjs: bool) -> Optional[Dict[str, Any]]:
    """The report's "What is new, what is missing" section (None without novelty reports; issue 43).

    ``novelty``: ``{generated group: NoveltyReport}`` against ``reference``; ``items``:
    ``{group: (dataset, generated rows, reference rows)}``, the dataset rows behind each set's
    positions (the modes' items are then shown as thumbnails or snippets with their ids).
    ``plotlyjs``: whether the first figure carries plotly.js (no figure came before it).
    """
    if not novelty:
        return None
    from .figures.novelty import novelty_figure

    ref = reference or "reference"
    figs = {f"novelty-{i + 1}": novelty_figure(r, generated=g, reference=ref)
            for i, (g, r) in enumerate(novelty.items())}
    sections = _figure_sections(figs, titles={f"novelty-{i + 1}": f"Mode shares: {g}"
                                              for i, g in enumerate(novelty)}, plotlyjs=plotlyjs)
    groups = []
    for (g, rep), fig in zip(novelty.items(), sections):
        ds, gen_rows, ref_rows = items[g] if items and g in items else (None, None, None)
        roles = []
        for role in ("novel", "missing"):
            spec = rep.novel if role == "novel" else rep.missing
            rows = gen_rows if spec.owner == "generated" else ref_rows
            modes = []
            for m in rep.modes(role, n_items=8):
                cells = ([_item_cell(ds, int(rows[i])) for i in m["items"]] if ds is not None
                         else [{"id": f"#{i}", "src": None, "text": ""} for i in m["items"]])
                verdict = ("no null computed" if m["outside_null"] is None
                           else "outside the null" if m["outside_null"] else "within noise")
                modes.append({"mode": m["mode"], "share": f"{m['share']:.1%}", "eigenvalue": _fmt(m["eigenvalue"]),
                              "verdict": verdict, "outside": bool(m["outside_null"]),
                              "p_value": None if m["p_value"] is None else _fmt(m["p_value"], 3), "cells": cells})
            roles.append({"role": role, "owner": g if spec.owner == "generated" else ref, "modes": modes})
        s = rep.settings
        scores = [(name, e.text(), e.interval) for name, e in (("KEN (novel: what it adds)", rep.ken),
                                                                  ("KEN (missing: what it lacks)", rep.ken_missing),
                                                                  (f"RRKE (order {s['rrke_order']:g})", rep.rrke))]
        null = rep.novel_null
        groups.append({"group": g, "scores": scores, "roles": roles, "figure": fig,
                       "settings": f"{s['kernel_description']} · {s['method']} route ({s['kind']}) · "
                                   f"{s['n_generated']} generated vs {s['n_reference']} reference items · "
                                   f"{s['confidence_level']:.0%} intervals · "
                                   + (f"null from {null.n_permutations} label permutations" if null is not None
                                      else "no permutation null")})
    return {"reference": ref, "groups": groups}


def report_html(
    cmp: Comparison,
    *,
    datasets=None,
    title: Optional[str] = None,
    gallery_items: int = 12,
    presentation: bool = False,
    evaluations: Optional[Mapping[str, Any]] = None,
    evaluation_reference: Optional[str] = None,
    evaluation_items: Optional[Mapping[str, Any]] = None,
    novelty: Optional[Mapping[str, Any]] = None,
    novelty_items: Optional[Mapping[str, Any]] = None,
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
    evaluations : dict group -> EvaluationResult, optional
        Generated groups evaluated against one reference group (the Compare page's reference
        role): their metrics with intervals, the fidelity-diversity plane, the Vendi ratio, the
        closest generated-training pairs and the per-prompt scores when computed.
    evaluation_reference : str, optional
        The reference group's name, for the headings (of the novelty section too).
    evaluation_items : dict group -> (Dataset, generated rows, training rows), optional
        The dataset rows of each evaluated group's generated items and of the training items, in
        the order the evaluation saw them: the closest pairs are then shown as items
        (thumbnails, snippets and ids), not only as positions.
    novelty : dict group -> NoveltyReport, optional
        Generated groups' novel and missing modes against the reference
        (:func:`~diversity_core.differential.novelty_report`): KEN both ways and RRKE with their
        intervals, the mode-share chart (:func:`~diversity_core.report.figures.novelty.novelty_figure`)
        and, per mode, its share, its verdict against the permutation null and its top items.
    novelty_items : dict group -> (Dataset, generated rows, reference rows), optional
        The dataset rows of each group's generated items and of the reference items, in the order
        the novelty report saw them: each mode's items are then shown as thumbnails or snippets.

    Returns
    -------
    str
        The HTML document. Every name and setting in it is escaped; the comparison is embedded
        as JSON in ``<script type="application/json" id="comparison-data">``.

    Raises
    ------
    DiversityInputError
        ``cmp`` is not a Comparison, or ``datasets`` is neither a Dataset nor a mapping.
    MissingDependencyError
        jinja2 or plotly is not installed (``pip install 'diversity-explorer[report]'``).
    """
    if not isinstance(cmp, Comparison):
        raise DiversityInputError(f"report_html needs a Comparison; got {type(cmp).__name__}.")
    gallery_items = check_scalar(gallery_items, "gallery_items", int, min_val=0)
    galleries = _group_datasets(datasets, cmp.groups)
    template = _environment().get_template(TEMPLATE)
    figures = dict(comparison_figures(cmp, presentation=presentation))
    if evaluations:
        from .figures.evaluation import evaluation_figures

        figures.update(evaluation_figures(evaluations, reference=evaluation_reference))
    generated = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    seed = int(cmp.settings.get("seed") or 0)
    text = template.render(
        title=title or "Diversity comparison: " + " vs ".join(cmp.groups),
        presentation=bool(presentation),
        cmp=cmp,
        level=f"{cmp.confidence_level:.0%}",
        kernel_description=str(cmp.settings.get("kernel_description", "")),
        generated=generated,
        summary=_summary(cmp),
        groups=list(zip(cmp.groups, cmp.group_sizes)),
        score_rows=_score_rows(cmp),
        figures=_figure_sections(figures),
        evaluation=_evaluation_section(evaluations, evaluation_reference, evaluation_items),
        novelty=_novelty_section(novelty, evaluation_reference, novelty_items, plotlyjs=not figures),
        galleries=[(g, _gallery(galleries[g], gallery_items, seed + i))
                   for i, g in enumerate(cmp.groups) if g in galleries],
        settings_rows=_settings_rows(cmp, generated),
        interval_description=str(cmp.settings.get("interval_description", "")),
        data_json=_script_json(cmp.to_dict()),
    )
    return _strip_external_references(text)


def _strip_external_references(text: str) -> str:
    """Guard: the report must not reference external stylesheets, scripts or fonts."""
    if re.search(r"<(script|link)[^>]+(src|href)\s*=\s*[\"']https?://", text, flags=re.I):
        raise DiversityError("internal error: the report would load an external resource.")
    return text


def write_report(cmp: Comparison, path: Union[str, Path], **kwargs) -> Path:
    """Write :func:`report_html` to ``path`` (UTF-8); returns the path.

    ``kwargs`` are those of :func:`report_html`. The folder must exist. The file is written
    atomically (:func:`~diversity_core._atomic.atomic_write`): a failed write raises
    :class:`~diversity_core.exceptions.DiversityInputError` and leaves a previous report whole.
    """
    path = Path(path)
    if path.is_dir():
        raise DiversityInputError(f"{path} is a folder; give a file name such as report.html.")
    if not path.parent.exists():
        raise DiversityInputError(f"{path.parent} does not exist; create the folder first.")
    atomic_write(path, report_html(cmp, **kwargs))
    return path
