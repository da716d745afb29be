"""Tests of diversity_core.report: the self-contained HTML report and PNG/SVG figure export.

The browser test opens the report in Debian's headless Chromium (DESIGN §4) with every request
that is not a ``file:`` or ``data:`` URL blocked, and checks that each plotly figure rendered.
Like the other browser tests it fails, not skips, when Chromium is missing (``dev.py test``
installs it).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import diversity_core
from diversity_core.compare import Comparison, compare
from diversity_core.data import Dataset
from diversity_core.exceptions import DiversityInputError
from diversity_core.report import (
    FIGURE_TITLES,
    comparison_figures,
    export_figure,
    export_figures,
    report_html,
    write_report,
)

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NASTY = "<script>alert('x')</script> & co"


def _images(rng, n, classes):
    """Little 8x8 grey images of a few blob positions (one blob per class)."""
    imgs = np.zeros((n, 8, 8, 1), dtype=np.uint8)
    for i in range(n):
        c = classes[i % len(classes)]
        r, col = divmod(c, 3)
        imgs[i, 2 * r:2 * r + 3, 2 * col:2 * col + 3, 0] = 200
        imgs[i] = np.clip(imgs[i] + rng.integers(0, 40, size=(8, 8, 1)), 0, 255)
    return imgs


@pytest.fixture(scope="module")
def image_groups():
    """Two image groups (one with fewer blob positions) as Datasets with items."""
    rng = np.random.default_rng(1)
    out = {}
    for name, classes, n in (("many shapes", list(range(9)), 90), (NASTY, [0, 4], 70)):
        imgs = _images(rng, n, classes)
        out[name] = Dataset(name=name, modality="images", items=imgs,
                            features=imgs.reshape(n, -1).astype(np.float64) + 1.0, groups=None, weights=None,
                            ids=[f"img{i}.png" for i in range(n)], source=f"/data/{name}")
    return out


@pytest.fixture(scope="module")
def cmp(image_groups):
    return compare(image_groups, reference="many shapes", rng=2, n_subsamples=10, n_resamples=8,
                   magnitude_replicates=4, n_scales=10)


@pytest.fixture(scope="module")
def report_path(cmp, image_groups, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_report(cmp, path, datasets=image_groups, gallery_items=6)
    return path


@pytest.mark.requires("plotly", "jinja2")
def test_report_is_self_contained(report_path):
    text = report_path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    # no external scripts, styles, fonts or images (checked in the markup, outside the inline
    # scripts, whose code mentions URLs it never loads here); plotly.js embedded exactly once
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "<script></script>", text, flags=re.S)
    assert not re.search(r"<script[^>]+src=", markup)
    assert not re.search(r"<link\b", markup)
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", markup)
    assert "@import" not in markup and "@font-face" not in markup and "url(" not in markup
    assert text.count("plotly.js v") == 1 or text.count("* plotly.js") == 1
    assert len(re.findall(r"Plotly\.newPlot\(", text)) == len(FIGURE_TITLES)


@pytest.mark.requires("plotly", "jinja2")
def test_report_states_the_settings(cmp, report_path):
    text = report_path.read_text(encoding="utf-8")
    st = cmp.settings
    for needle in (diversity_core.__version__, str(st["seed"]), st["kernel_description"], "0.5, 1.0, 2.0, inf",
                   f"{cmp.n} items per group", st["sources"]["many shapes"]["dataset_hash"],
                   st["sources"]["many shapes"]["features_hash"], "/data/many shapes", "t_cut", "MagDiff roles",
                   "without replacement"):
        assert needle in text, needle
    assert "reference many shapes" in text


@pytest.mark.requires("plotly", "jinja2")
def test_report_tables_and_embedded_data(cmp, report_path):
    text = report_path.read_text(encoding="utf-8")
    e = cmp.estimate("many shapes", "VS_1")
    lo, hi = e.confidence_interval
    assert f"{e.estimate:.4g}" in text and f"[{lo:.4g}, {hi:.4g}]" in text
    assert "resolved: many shapes higher" in text
    blob = re.search(r'<script type="application/json" id="comparison-data">(.*?)</script>', text, re.S).group(1)
    assert Comparison.from_dict(json.loads(blob)) == cmp


@pytest.mark.requires("plotly", "jinja2")
def test_report_escapes_names(report_path):
    text = report_path.read_text(encoding="utf-8")
    assert NASTY not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co" in text  # markupsafe's entities


@pytest.mark.requires("plotly", "jinja2")
def test_galleries(cmp, report_path):
    text = report_path.read_text(encoding="utf-8")
    assert len(re.findall(r'<figure class="thumb"><img alt="[^"]*" src="data:image/png;base64,', text)) == 12
    words = Dataset(name="t", modality="text", items=[f"sentence number {i} <b>" for i in range(30)], features=None,
                    groups=None, weights=None, ids=[str(i) for i in range(30)])
    mols = Dataset(name="m", modality="molecules", items=["CCO", "c1ccccc1", "CC(=O)O", "CCN"] * 5, features=None,
                   groups=None, weights=None, ids=[str(i) for i in range(20)])
    html = report_html(cmp, datasets={"many shapes": words, NASTY: mols}, gallery_items=4)
    assert html.count("<li>sentence number") == 4 and "&lt;b&gt;" in html
    assert len(re.findall(r'<figure class="thumb mol"><img alt="[^"]*" src="data:image/svg\+xml;base64,', html)) == 4
    emb = Dataset(name="e", modality="embeddings", items=None, features=np.ones((20, 3)), groups=None, weights=None,
                  ids=[str(i) for i in range(20)])
    assert "holds vectors only" in report_html(cmp, datasets={"many shapes": emb})


@pytest.mark.requires("plotly", "jinja2")
def test_figures_and_presentation(cmp):
    figs = comparison_figures(cmp)
    assert list(figs) == list(FIGURE_TITLES)
    assert all(len(f.data) > 0 for f in figs.values())
    big = comparison_figures(cmp, presentation=True)
    assert big["scores"].layout.font.size == 20
    assert big["scores"].layout.height > figs["scores"].layout.height
    assert 'class="presentation"' in report_html(cmp, presentation=True)
    no_mag = compare({"a": np.random.default_rng(0).normal(size=(30, 4)) + 1,
                      "b": np.random.default_rng(1).normal(size=(30, 4)) + 1}, rng=0, magnitude=False,
                     size_curve=False)
    assert "magnitude" not in comparison_figures(no_mag)


@pytest.mark.requires("plotly", "jinja2")
def test_write_report_errors(cmp, tmp_path):
    with pytest.raises(DiversityInputError, match="is a folder"):
        write_report(cmp, tmp_path)
    with pytest.raises(DiversityInputError, match="does not exist"):
        write_report(cmp, tmp_path / "no" / "r.html")
    with pytest.raises(DiversityInputError, match="needs a Comparison"):
        report_html({"n": 3})
    with pytest.raises(DiversityInputError, match="unknown figure format 'jpg'"):
        export_figure(comparison_figures(cmp)["scores"], tmp_path / "x.jpg")


@pytest.mark.requires("plotly", "jinja2")
def test_report_renders_every_figure_offline(report_path):
    """Headless Chromium, no network: every plotly figure of the report is drawn."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's 'chromium' package (dev.py test does).")
    from playwright.sync_api import sync_playwright

    blocked, errors = [], []

    def only_local(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", only_local)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(report_path.as_uri(), wait_until="load")
            expected = len(FIGURE_TITLES)
            page.wait_for_function(
                "n => Array.from(document.querySelectorAll('section.figure .js-plotly-plot'))"
                ".filter(gd => gd._fullLayout && gd.querySelector('.main-svg')).length === n",
                arg=expected, timeout=60_000,
            )
            state = page.evaluate(
                """() => Array.from(document.querySelectorAll('section.figure')).map(s => {
                    const gd = s.querySelector('.js-plotly-plot');
                    return {name: s.dataset.figure, traces: gd.data.length,
                            drawn: gd.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
                            width: gd.getBoundingClientRect().width, height: gd.getBoundingClientRect().height};
                })"""
            )
            assert page.evaluate("typeof Plotly.downloadImage") == "function"
            images = page.evaluate(
                "Array.from(document.querySelectorAll('.gallery img')).filter(i => i.complete && i.naturalWidth > 0).length")
        finally:
            browser.close()
    assert [s["name"] for s in state] == list(FIGURE_TITLES)
    for s in state:
        assert s["traces"] > 0 and s["drawn"] > 0, s
        assert s["width"] > 300 and s["height"] > 200, s
    assert images == 12
    assert errors == []
    assert blocked == []


@pytest.mark.requires("plotly", "jinja2", "kaleido")
def test_export_png_and_svg(cmp, tmp_path):
    """kaleido renders PNG and SVG offline (pointed at Debian's chromium when needed)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's 'chromium' package (dev.py test does).")
    paths = export_figures(cmp, tmp_path / "figs", format="svg")
    assert [p.name for p in paths] == [f"{k}.svg" for k in FIGURE_TITLES]
    assert all(p.read_text(encoding="utf-8").lstrip().startswith("<svg") for p in paths)
    png = export_figure(comparison_figures(cmp)["q_profile"], tmp_path / "q.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------
# Escaping: names are text, never markup, and cannot close the JSON <script> block
# --------------------------------------------------------------------------------------------
IMG_TAG = "<img src=x onerror=alert(1)>"
SCRIPT_CLOSE = "x</script><script>alert(2)</script>"


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each <script> element by id."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.scripts, self._script = [], {}, None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs).get("id") or f"script-{len(self.scripts)}"
            self.scripts[self._script] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is not None:
            self.scripts[self._script] += data


@pytest.fixture(scope="module")
def hostile_cmp():
    """A comparison whose group names are an HTML tag and a closing </script>."""
    rng = np.random.default_rng(5)
    return compare({IMG_TAG: rng.normal(size=(30, 4)) + 1, SCRIPT_CLOSE: rng.normal(size=(30, 4)) + 2}, rng=0,
                   magnitude=False, size_curve=False)


@pytest.mark.requires("plotly", "jinja2")
def test_hostile_group_names_are_escaped_text(hostile_cmp):
    text = report_html(hostile_cmp, title=f"{IMG_TAG} report")
    assert IMG_TAG not in text and "<img src=x" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text  # shown as text in the headings and tables
    parser = _Tags()
    parser.feed(text)
    assert not any("onerror" in attrs for _, attrs in parser.tags)
    assert [tag for tag, _ in parser.tags].count("img") == 0


@pytest.mark.requires("plotly", "jinja2")
def test_script_close_in_a_group_name_stays_inside_the_json_block(hostile_cmp):
    text = report_html(hostile_cmp)
    assert "alert(2)</script>" not in text
    # every </script> in the page closes a <script> the report opened itself
    assert text.count("</script>") == len(re.findall(r"<script\b", text))
    parser = _Tags()
    parser.feed(text)
    data = json.loads(parser.scripts["comparison-data"])
    assert data["groups"] == [IMG_TAG, SCRIPT_CLOSE]
    assert Comparison.from_dict(data) == hostile_cmp
    # no script element was injected: each one holds the report's own code (plotly.js, one newPlot
    # per figure with the names as escaped JSON strings, the download buttons) or the data
    assert len(parser.scripts) == len(re.findall(r"<script\b", text))
    assert all(body.strip() != "alert(2)" for body in parser.scripts.values())


def test_json_block_escapes_markup_characters():
    from diversity_core.report.html import _script_json

    text = _script_json({"name": "</script><!-- & -->", "x": math.inf})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"name": "</script><!-- & -->", "x": "inf"}


def test_missing_jinja2_names_the_extra(cmp, monkeypatch):
    from diversity_core.exceptions import MissingDependencyError
    from diversity_core.report.html import _environment

    _environment.cache_clear()
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 now raises ImportError
    try:
        with pytest.raises(MissingDependencyError, match=r"jinja2 is needed for the HTML report.*\[report\]"):
            report_html(cmp)
    finally:
        _environment.cache_clear()


def test_template_is_package_data():
    from importlib.resources import files

    assert files("diversity_core.report").joinpath("templates", "report.html.j2").is_file()


def test_importing_the_core_does_not_import_optional_libraries():
    """plotly, jinja2, kaleido and torch load only when a figure, a report or an RND score is made."""
    code = (
        "import sys\n"
        "import diversity_core, diversity_core.report, diversity_core.report.figures\n"
        "import diversity_core.rnd\n"
        "heavy = ('plotly', 'jinja2', 'kaleido', 'torch')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in heavy}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(Path(diversity_core.__file__).parents[1])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"



def test_figure_bytes_retries_kaleido_page_not_ready(monkeypatch):
    """Issue 39 item 12: under load kaleido's page may be asked to draw before its script loaded.

    ``figure_bytes`` retries that error in a new session instead of failing the export; an error
    a retry cannot mend is raised at once (one call).
    """
    import plotly.graph_objects as go

    from diversity_core.exceptions import DiversityError
    from diversity_core.report import export

    class JavascriptError(RuntimeError):
        pass

    calls = []

    def flaky(self, **kw):
        calls.append(kw)
        if len(calls) == 1:
            raise JavascriptError("{'type': 'object', 'subtype': 'error', 'description': "
                                  "'ReferenceError: kaleido_scopes is not defined'}")
        return b"\x89PNG\r\n\x1a\n"

    monkeypatch.setattr(export, "_prepare_kaleido", lambda: None)
    monkeypatch.setattr(export.time, "sleep", lambda s: None)
    monkeypatch.setattr(go.Figure, "to_image", flaky)
    assert export.figure_bytes(go.Figure(), format="png").startswith(b"\x89PNG")
    assert len(calls) == 2

    calls.clear()

    def no_browser(self, **kw):
        calls.append(kw)
        raise FileNotFoundError("no chrome")

    monkeypatch.setattr(go.Figure, "to_image", no_browser)
    with pytest.raises(DiversityError, match="needs Chrome or Chromium"):
        export.figure_bytes(go.Figure(), format="png")
    assert len(calls) == 1


@pytest.mark.requires("plotly", "jinja2", "kaleido")
def test_export_renders_again_a_figure_the_batch_left_unwritten(cmp, tmp_path, monkeypatch):
    """kaleido's batch call may return without one file (seen in CI under load): that figure is made alone."""
    import plotly.io as pio

    from diversity_core.report import export as export_module

    def batch_missing_one(figs, paths, **kwargs):
        for p in paths[1:]:
            Path(p).write_text("<svg>batch</svg>")

    monkeypatch.setattr(pio, "write_images", batch_missing_one)
    monkeypatch.setattr(export_module, "figure_bytes", lambda fig, **kw: b"<svg>alone</svg>")
    paths = export_figures(cmp, tmp_path / "figs", format="svg")
    assert [p.read_text() for p in paths] == ["<svg>alone</svg>"] + ["<svg>batch</svg>"] * (len(paths) - 1)
