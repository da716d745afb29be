"""Issue 41 items 9 and 12: the selected-items zip holds the original files under their own names, and
the report's summary leads with the ranked list and its resolved steps."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from diversity_core.data.export import items_file

pytestmark = pytest.mark.requires("PIL")


def _png(side: int, value: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((side, side, 3), value, dtype=np.uint8)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _zip_members(content: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_folder_images_are_exported_byte_for_byte_under_their_names(tmp_path):
    from diversity_core.data import load_dataset

    root = tmp_path / "sprites"
    files = {"a/one.png": _png(72, 10), "a/two.png": _png(72, 90), "b/one.png": _png(72, 200),
             "b/three.PNG": _png(72, 250)}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    ds = load_dataset(root)
    assert ds.items.shape[1] == 64  # the thumbnails are 64 px; the originals 72 px
    order = [ds.ids.index(r) for r in ("b/one.png", "a/one.png", "a/two.png", "b/three.PNG")]
    content, ext, _ = items_file(ds, order)
    got = _zip_members(content)
    assert ext == ".zip"
    assert got == {"one.png": files["b/one.png"], "one (2).png": files["a/one.png"],
                   "two.png": files["a/two.png"], "three.PNG": files["b/three.PNG"]}
    from diversity_core.data.export import items_file_note

    assert "original image files" in items_file_note(ds)


def test_zip_images_are_exported_byte_for_byte(tmp_path):
    from diversity_core.data import load_dataset

    path = tmp_path / "stamps.zip"
    files = {"stamps/x/cat.png": _png(72, 1), "stamps/y/dog.png": _png(72, 2), "stamps/y/emu.png": _png(72, 3)}
    with zipfile.ZipFile(path, "w") as zf:
        for rel, data in files.items():
            zf.writestr(rel, data)
    ds = load_dataset(path)
    content, _, _ = items_file(ds, [2, 0])
    assert _zip_members(content) == {"emu.png": files["stamps/y/emu.png"], "cat.png": files["stamps/x/cat.png"]}


def test_images_without_originals_never_double_the_extension(tmp_path):
    from diversity_core.data import Dataset

    pixels = np.stack([np.full((8, 8, 3), v, dtype=np.uint8) for v in (0, 100, 200)])
    ds = Dataset(name="mem", modality="images", items=pixels, features=None, groups=None, weights=None,
                 ids=["x/a.png", "y/a.png", "b.jpg"], source=str(tmp_path / "gone"))
    names = list(_zip_members(items_file(ds, [0, 1, 2])[0]))
    assert names == ["x_a.png", "y_a.png", "b.png"]
    from diversity_core.data.export import items_file_note

    assert "not available" in items_file_note(ds)
    twice = Dataset(name="mem", modality="images", items=pixels[:2], features=None, groups=None, weights=None,
                    ids=["a.png", "a.png (2)"])
    assert list(_zip_members(items_file(twice, [0, 1])[0])) == ["a.png", "a_2.png"]


def test_an_npy_array_is_exported_at_full_resolution(tmp_path):
    from PIL import Image

    from diversity_core.data import load_dataset

    arr = np.random.default_rng(0).integers(0, 255, size=(3, 80, 80, 3), dtype=np.uint8)
    np.save(tmp_path / "photos.npy", arr)
    ds = load_dataset(tmp_path / "photos.npy")
    assert ds.items.shape[1] == 64
    got = _zip_members(items_file(ds, [2, 0])[0])
    assert list(got) == ["row_3.png", "row_1.png"]
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(got["row_3.png"]))), arr[2])


def test_embeddings_say_what_is_exported():
    from diversity_core.data import Dataset
    from diversity_core.data.export import items_file_note

    ds = Dataset(name="e", modality="embeddings", items=None, features=np.eye(3), groups=None, weights=None,
                 ids=["a", "b", "c"])
    assert items_file(ds, [0]) is None and "CSV" in items_file_note(ds)


# ---------------------------------------------------------------------------------------------
# item 12: the report's summary leads with the ranked list and its resolved steps
# ---------------------------------------------------------------------------------------------
def _groups(n_groups: int = 8, n: int = 40, d: int = 10, seed: int = 12) -> dict:
    """Groups that vary along 1, 2, ... dimensions around one mean: diversity grows with the index."""
    rng = np.random.default_rng(seed)
    out = {}
    for k in range(n_groups):
        noise = np.zeros((n, d))
        noise[:, : k + 1] = rng.normal(size=(n, k + 1))
        out[f"set {k}"] = 3.0 + noise
    return out


@pytest.fixture(scope="module")
def eight():
    from diversity_core.compare import compare

    return compare(_groups(), qs=(1.0, 2.0), rng=0, n_subsamples=6, n_resamples=20, magnitude=False,
                   size_curve=False)


def test_ranking_orders_by_estimate_and_marks_resolved_neighbours(eight):
    from diversity_core.report import ranking

    r = ranking(eight)
    estimates = [e.estimate for _g, e in r.rows]
    assert r.score == "VS_1" and len(r.rows) == 8 and estimates == sorted(estimates, reverse=True)
    verdict = {frozenset((p.group_a, p.group_b)): p for p in eight.pairwise if p.score == "VS_1"}
    for step, (a, _), (b, _) in zip(r.steps, r.rows, r.rows[1:]):
        p = verdict[frozenset((a, b))]
        assert step == (p.resolved and p.higher == a)
    assert r.n_pairs == 28 and len(r.resolved) == sum(p.resolved for p in verdict.values())
    text = r.text()
    assert text.startswith(r.groups[0]) and text.count(" > ") + text.count(" ≈ ") >= 7
    assert all(text.count(g) >= 1 for g in r.groups)


def _summary_section(html: str) -> str:
    return html[html.index("<h2>Summary</h2>"):html.index("<h2>Scores</h2>")]


@pytest.mark.requires("plotly", "jinja2")
def test_report_summary_leads_with_the_ranked_list(eight):
    """Before: one line per score listing every resolved pair ("set 7 > set 0; set 7 > set 1; ...")."""
    import html as html_lib

    from diversity_core.report import report_html

    summary = _summary_section(report_html(eight))
    assert "<ol class=\"ranking\">" in summary, summary
    from diversity_core.report import ranking

    r = ranking(eight)
    ol = summary[summary.index("<ol"):summary.index("</ol>")]
    assert [ol.index(f"<b>{g}</b>") for g in r.groups] == sorted(ol.index(f"<b>{g}</b>") for g in r.groups)
    assert html_lib.escape(r.text(), quote=False) in summary
    # one ranking line per other score, each group named once in it (not every resolved pair)
    other = ranking(eight, "VS_2")
    (line,) = [li for li in summary.split("<li>") if li.startswith("<b>VS_2</b>")]
    assert html_lib.escape(other.text(), quote=False) in line
    assert line.count("&gt;") <= 7 + len(other.beyond_steps)
    if not other.beyond_steps:
        assert all(line.count(g) == 1 for g in other.groups)
    assert len(r.resolved) > 7  # the old summary listed more pairs than the ranking has steps
