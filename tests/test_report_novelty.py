"""The HTML report's "What is new, what is missing" section (issue 43, item 2) and its figure."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("plotly")

from diversity_core.compare import compare  # noqa: E402
from diversity_core.data import Dataset  # noqa: E402
from diversity_core.differential import novelty_report  # noqa: E402
from diversity_core.report import report_html  # noqa: E402
from diversity_core.report.figures.novelty import novelty_figure  # noqa: E402

#: A generated group's name and an item id that would be live markup if not escaped.
EVIL = "model <img src=x onerror=alert(1)>"
EVIL_ID = "new <script>alert(2)</script>"


def _pair():
    """R: three clusters on orthogonal axes; G: R's clusters plus a fourth, new one (rows 90-119 of G)."""
    rng = np.random.default_rng(3)
    d = 6
    centres = 5.0 * np.eye(d)[:4]
    R = np.vstack([c + 0.3 * rng.standard_normal((40, d)) for c in centres[:3]])
    G = np.vstack([c + 0.3 * rng.standard_normal((30, d)) for c in centres[:4]])
    return G, R


@pytest.fixture(scope="module")
def setup():
    G, R = _pair()
    rep = novelty_report(G, R, kernel="rbf", n_modes=3, n_permutations=39, n_resamples=4, rng=0)
    texts = [f"ref item {i}" for i in range(len(R))] + [f"gen item {i}" for i in range(len(G))]
    ids = [f"r{i}" for i in range(len(R))] + [f"g{i}" for i in range(90)] + [f"{EVIL_ID} {i}" for i in range(30)]
    ds = Dataset(name="pair", modality="text", items=texts, features=None, ids=ids, weights=None,
                 groups=np.array(["real"] * len(R) + [EVIL] * len(G), dtype=object))
    cmp = compare({"real": R, EVIL: G}, qs=[1.0], n=100, magnitude=False, n_subsamples=2, n_resamples=3,
                  size_curve=False, rng=0)
    items = {EVIL: (ds, np.arange(len(R), len(R) + len(G)), np.arange(len(R)))}
    return rep, cmp, items


def _section(html: str) -> str:
    return html.split('data-section="novelty"')[1].split("</section>\n{% endif %}")[0].split("<h2>Galleries")[0]


def test_the_section_shows_the_new_cluster_as_the_top_novel_mode_with_escaped_names(setup):
    rep, cmp, items = setup
    html = report_html(cmp, evaluation_reference="real", novelty={EVIL: rep}, novelty_items=items)
    assert 'data-section="novelty"' in html
    section = _section(html)
    assert "What is new, what is missing (against real)" in section
    # the user strings are text: the group name in the heading and the figure, the ids in the galleries
    assert EVIL not in html.split("comparison-data")[0] and "<script>alert(2)" not in html
    assert "<h3>model &lt;img src=x onerror=alert(1)&gt;</h3>" in section
    assert "new &lt;script&gt;alert(2)&lt;/script&gt;" in section
    # KEN both ways and RRKE, each with its interval
    assert rep.ken.text() in section and rep.ken_missing.text() in section and rep.rrke.text() in section
    # the top novel mode's items are the new cluster's (rows 90-119 of G, ids "new ..."), outside the null
    novel1 = section.split('data-role="novel" data-mode="1"')[1].split('data-mode="2"')[0]
    assert '<span class="yes">outside the null</span>' in novel1
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", novel1)
    assert len(captions) == 8 and all(c.startswith("new &lt;script&gt;") for c in captions), captions
    # the missing modes' items are reference items (R's clusters, each a larger share of R than of G)
    missing = section.split('data-role="missing" data-mode="1"')[1]
    assert all(re.fullmatch(r"r\d+", c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", missing))
    # the mode-share chart, with its download buttons; plotly.js is loaded once in the page
    assert 'id="fig-novelty-1"' in section and "diversityDownload('fig-novelty-1', 'png'" in section
    assert html.count("Plotly.newPlot") >= 1 and html.count("* plotly.js v") <= 1
    # without novelty reports: no section
    assert 'data-section="novelty"' not in report_html(cmp)


def test_without_items_the_modes_show_positions(setup):
    rep, cmp, _ = setup
    section = _section(report_html(cmp, evaluation_reference="real", novelty={"model": rep}))
    novel1 = section.split('data-role="novel" data-mode="1"')[1].split('data-mode="2"')[0]
    positions = [int(c[1:]) for c in re.findall(r"<figcaption>(.*?)</figcaption>", novel1)]
    assert positions and all(90 <= p < 120 for p in positions)


def test_the_figure_draws_each_role_marked_by_its_verdict(setup):
    rep, _, _ = setup
    fig = novelty_figure(rep, generated=EVIL, reference="real")
    novel, missing = fig.data
    assert list(novel.x) == [f"novel {m['mode']}" for m in rep.modes("novel")]
    np.testing.assert_allclose(novel.y, [m["share"] for m in rep.modes("novel")])
    assert novel.marker.opacity[0] == 1.0  # the new cluster: outside the null, solid
    assert all(o < 1 for o, m in zip(missing.marker.opacity, rep.modes("missing")) if not m["outside_null"])
    assert "<img" not in fig.layout.title.text and "&lt;img" in fig.layout.title.text
