"""The HTML report with the Compare page's reference role (issue 24, item 5)."""

import numpy as np
import pytest

pytest.importorskip("jinja2")
pytest.importorskip("plotly")

from diversity_core.compare import compare  # noqa: E402
from diversity_core.evaluation import evaluate  # noqa: E402
from diversity_core.report import report_html  # noqa: E402


def test_report_includes_the_reference_role_with_copies_flagged():
    rng = np.random.default_rng(0)
    R = rng.normal(size=(200, 6))
    T = rng.normal(size=(120, 6))
    G = np.vstack([rng.normal(size=(100, 6)) + 0.5, T[:30] + 1e-9])  # 30 near-copies of training items
    ev = evaluate(
        R,
        G,
        train=T,
        prompts=np.repeat(["a", "b"], 65),
        kid_subsets=5,
        kid_subset_size=50,
        magnitude=False,
        n_resamples=4,
        rng=0,
    )
    cmp = compare(
        {"real": R, "model <b>": G}, qs=[1.0], n=100, magnitude=False, n_subsamples=2, n_resamples=3, rng=0
    )
    html = report_html(cmp, evaluations={"model <b>": ev}, evaluation_reference="real")
    assert 'data-section="evaluation"' in html and "Against the reference real" in html
    assert 'id="fig-fidelity_diversity"' in html and 'id="fig-vendi_ratio"' in html
    assert "model &lt;b&gt;" in html and "model <b>" not in html.split("comparison-data")[0]
    section = html.split('data-section="evaluation"')[1].split("</section>")[0]
    for metric in (
        "precision",
        "coverage",
        "frechet_distance",
        "vendi_ratio",
        "memorized_fraction",
        "conditional_vendi",
    ):
        assert f"<td>{metric}</td>" in section
    # the closest pairs are the injected copies: ratio ~ 0, flagged; every flagged pair is listed
    top = ev.memorization.top_items(30)
    assert all(t["flagged"] and t["generated"] >= 100 for t in top)
    assert section.count("<td>yes</td>") == ev.memorization.n_flagged >= 30
    # above them the set-level figure against its baseline; each pair with its distance, similarity,
    # the training item's own nearest-neighbour distance, closest copy first
    pairs = section.split("Closest generated-training pairs")[1]
    assert ev.memorization.headline() in pairs and "against a baseline of" in pairs
    assert "<th>distance</th><th>similarity</th><th>its own NN distance</th><th>ratio</th>" in pairs
    rows = pairs.split("</table>")[0].split("<tr>")[2:]
    cells = [[c.split("</td>")[0] for c in r.split("<td>")[3:7]] for r in rows]
    assert [float(c[3]) for c in cells] == sorted(float(c[3]) for c in cells)
    assert all(float(c[1]) == pytest.approx(1.0, abs=1e-6) for c in cells[:30])  # the near-copies
    assert "Vendi score per prompt: model &lt;b&gt;" in section and "<td>a</td><td>65</td>" in section
    assert 'data-section="evaluation"' not in report_html(cmp)  # without evaluations: no section
    # the kernel distance shows its spread over subsets: mean ± sd
    kd = section.split("<td>kernel_distance</td>")[1].split("</tr>")[0]
    assert f"{ev.kernel_distance.mean:.4g} ± {ev.kernel_distance.std:.4g}" in kd


def test_report_shows_the_closest_pairs_as_items():
    from diversity_core.data import load_demo

    ds = load_demo("digits")
    X = ds.items.reshape(ds.n, -1).astype(np.float64)
    gen, train = ds.group_indices(ds.group_names()[1]), ds.group_indices(ds.group_names()[2])
    ev = evaluate(
        X[ds.group_indices(ds.group_names()[0])],
        X[gen],
        train=X[train],
        kid_subsets=2,
        kid_subset_size=50,
        magnitude=False,
        n_resamples=0,
        rng=0,
    )
    cmp = compare(
        {"a": X[:100], "b": X[100:200]},
        qs=[1.0],
        n=100,
        magnitude=False,
        n_subsamples=2,
        n_resamples=3,
        rng=0,
    )
    html = report_html(cmp, evaluations={"g": ev}, evaluation_items={"g": (ds, gen, train)})
    section = html.split('data-section="evaluation"')[1].split("</section>")[0]
    top = ev.memorization.top_items(10)
    assert section.count("data:image/png;base64") == 20  # a thumbnail per generated and training item
    assert str(ds.ids[int(train[top[0]["train"]])]) in section
