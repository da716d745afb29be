"""Issue 40, items 12 and 13: CSV exports that a spreadsheet cannot run, and counts and scales that
cannot run without end or print NaN (the kernel distance, the Frechet distance, ``evaluate``).

(Items 2 and 11, the checkpoints of ``hf:`` and ``inception:``, are tested in
tests/test_hf_featurizers.py.)
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from diversity_core._csv import csv_cell, csv_text, frame_csv, restore_cell
from diversity_core.exceptions import DiversityInputError

#: Cells a spreadsheet would run as formulas (OWASP "CSV Injection" examples).
HOSTILE = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd",
           "\t=1+2", "\r=1+2", "'=already quoted"]


def _cells(text: str) -> list:
    return list(csv.reader(io.StringIO(text)))


# ---------------------------------------------------------------------------------------------
# item 12: one CSV writer that neutralises formulas
# ---------------------------------------------------------------------------------------------
class TestCsvCells:
    @pytest.mark.parametrize("text", HOSTILE)
    def test_formula_cells_get_a_quote_and_read_back_exactly(self, text):
        cell = csv_cell(text)
        assert cell == "'" + text and restore_cell(cell) == text

    @pytest.mark.parametrize("value, cell", [(-1.5, "-1.5"), ("-1.5", "-1.5"), ("+3", "+3"), ("-2e-05", "-2e-05"),
                                             (np.float32(0.5), "0.5"), (np.int64(-4), -4), (None, ""),
                                             (True, True), ("plain", "plain"), ("it's", "it's"),
                                             ("a=b", "a=b"), (float("inf"), "inf")])
    def test_numbers_and_harmless_text_are_unchanged(self, value, cell):
        assert csv_cell(value) == cell
        assert restore_cell(str(cell)) == str(cell)

    def test_csv_text_and_frames(self):
        pd = pytest.importorskip("pandas")
        text = csv_text(["id", "x"], [[h, -1.5] for h in HOSTILE])
        rows = _cells(text)
        assert rows[0] == ["id", "x"] and all(r[0].startswith("'") and r[1] == "-1.5" for r in rows[1:])
        frame = pd.DataFrame({"id": HOSTILE, "x": [-1.5] * len(HOSTILE), "n": range(len(HOSTILE)),
                              "=col": ["ok"] * len(HOSTILE)})
        back = pd.read_csv(io.StringIO(frame_csv(frame)))
        assert list(back.columns) == ["id", "x", "n", "'=col"]
        assert back["id"].tolist() == ["'" + h for h in HOSTILE] and back["x"].tolist() == [-1.5] * len(HOSTILE)
        assert back["n"].dtype.kind == "i"


def test_comparison_csv_neutralises_group_names_and_reads_them_back():
    from diversity_core.compare import Comparison, compare

    rng = np.random.default_rng(0)
    names = ["=HYPERLINK(\"http://x\")", "@cmd"]
    cmp = compare({n: rng.normal(size=(12, 3)) for n in names}, magnitude=False, size_curve=False,
                  n_subsamples=3, rng=0)
    text = cmp.to_csv()
    groups = {r[0] for r in _cells(text)[1:]}
    assert groups == {"'" + n for n in names}
    assert Comparison.read_csv(text) == cmp.estimates


def test_curate_csv_outputs_neutralise_ids(tmp_path, capsys):
    from diversity_core.cli import main

    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    ids = [f"=cmd|' /C calc'!A{i}" if i % 2 else f"-{i}" for i in range(12)]
    lines = ["id,f1,f2,f3"] + [f"\"{i}\",{a},{b},{c}" for i, (a, b, c) in zip(ids, X)]
    (tmp_path / "emb.csv").write_text("\n".join(lines) + "\n")
    out, items = tmp_path / "sel.csv", tmp_path / "items.csv"
    assert main(["curate", str(tmp_path / "emb.csv"), "--select", "12", "--out", str(out),
                 "--items-out", str(items), "--format", "json"]) == 0
    capsys.readouterr()
    for path in (out, items):
        rows = _cells(path.read_text())
        col = rows[0].index("id")
        written = {r[col] for r in rows[1:]}
        assert written == {("'" + i) if i.startswith("=") else i for i in ids}  # "-4" is a number: kept


def test_memorisation_and_evaluation_csv_neutralise_ids():
    from diversity_core.evaluation import memorization

    rng = np.random.default_rng(2)
    T, G = rng.normal(size=(20, 3)), rng.normal(size=(4, 3))
    r = memorization(G, T)
    text = r.items_csv(generated_ids=HOSTILE[:4], train_ids=[f"+t{i}" for i in range(20)])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert sorted(int(row["generated"]) for row in rows) == [0, 1, 2, 3]
    for row in rows:  # whatever the rows' order
        i = int(row["generated"])
        assert row["generated_id"] == "'" + HOSTILE[i] and float(row["distance"]) == r.distance[i]
        assert row["nearest_train_id"] == f"'+t{r.nearest[i]}"


def test_app_selection_downloads_neutralise_ids():
    pytest.importorskip("streamlit")
    from types import SimpleNamespace

    from ui.data.selection import selection_csv

    data = SimpleNamespace(ids=HOSTILE[:3], groups=np.array(["=g", "g", "@g"]))
    view = SimpleNamespace(data=data, loaded_rows=lambda idx: list(idx))
    rows = _cells(selection_csv(view, [0, 1, 2]).decode("utf-8"))
    assert rows[0] == ["row", "id", "group"]
    assert [r[1] for r in rows[1:]] == ["'" + h for h in HOSTILE[:3]] and [r[2] for r in rows[1:]] == ["'=g", "g", "'@g"]


# ---------------------------------------------------------------------------------------------
# item 13: counts bounded by their work, scales that cannot give NaN
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sets():
    rng = np.random.default_rng(40)
    return rng.normal(size=(120, 5)), rng.normal(size=(100, 5)) * 1.3 + 0.5


class TestCounts:
    """A billion subsets or resamples used to run for days; now refused at once with the largest allowed."""

    def test_kernel_distance_subsets(self, sets):
        from diversity_core.evaluation import kernel_distance
        from diversity_core.evaluation._limits import MAX_WORK, kid_work

        R, G = sets
        largest = int(MAX_WORK // kid_work(100, 5, 3, 120, 100))
        with pytest.raises(DiversityInputError, match=rf"n_subsets = 1,000,000,000 would take about .* The largest "
                                                      rf"n_subsets allowed here is {largest:,}\."):
            kernel_distance(R, G, n_subsets=10**9, subset_size=100)
        assert kernel_distance(R, G, n_subsets=3, subset_size=50, rng=0).n_subsets == 3

    def test_frechet_resamples(self, sets):
        from diversity_core.evaluation import frechet_distance

        with pytest.raises(DiversityInputError, match=r"n_resamples = 1,000,000,000 would take .* largest n_resamples "
                                                      r"allowed here is [\d,]+\."):
            frechet_distance(*sets, n_resamples=10**9)

    @pytest.mark.parametrize("func, option", [("prdc", "n_resamples"), ("improved_precision_recall", "n_resamples"),
                                              ("vendi_ratio", "n_resamples"), ("vendi_ratio", "n_subsamples")])
    def test_every_interval_count(self, sets, func, option):
        import diversity_core.evaluation as ev

        with pytest.raises(DiversityInputError, match=rf"{option} = 1,000,000,000 would take .* largest {option} "
                                                      r"allowed here is [\d,]+\."):
            getattr(ev, func)(*sets, **{option: 10**9})

    @pytest.mark.parametrize("option, name", [("kid_subsets", "kid_subsets"), ("n_resamples", "n_resamples"),
                                              ("n_subsamples", "n_subsamples")])
    def test_evaluate_counts(self, sets, option, name):
        from diversity_core.evaluation import evaluate

        with pytest.raises(DiversityInputError, match=rf"{name} = 1,000,000,000 would take .* largest {name} "
                                                      r"allowed here is [\d,]+\."):
            evaluate(*sets, magnitude=False, **{option: 10**9})

    def test_cli_evaluate_exits_2_with_one_line(self, sets, tmp_path, capsys):
        from diversity_core.cli import main

        np.save(tmp_path / "r.npy", sets[0])
        np.save(tmp_path / "g.npy", sets[1])
        for flag in ("--kid-subsets", "--n-resamples"):
            assert main(["evaluate", str(tmp_path / "g.npy"), "--reference", str(tmp_path / "r.npy"),
                         "--no-magnitude", flag, "1000000000"]) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "1,000,000,000 would take" in err[0]

    def test_defaults_on_fid_sized_data_are_far_below_the_bound(self):
        """The bound leaves room: evaluate's defaults at N = M = 50,000, d = 2048 ask for ~1e12 each."""
        from diversity_core.evaluation._limits import MAX_WORK, evaluation_cost, interval_work, kid_work

        assert 100 * kid_work(1000, 2048, 3, 50_000, 50_000) < MAX_WORK / 50
        assert 16 * interval_work(50_000, 50_000, 2048, 2048, 20, evaluation_cost) < MAX_WORK / 50


class TestScales:
    @pytest.mark.parametrize("scale", [2.0**-400, 1e-100, 1e100, 2.0**400])
    def test_frechet_distance_is_scale_equivariant_everywhere(self, sets, scale):
        """FD(cR, cG) = c^2 FD(R, G): 1e100 used to fail in LAPACK, 1e-100 to give 7x the value."""
        import warnings

        from diversity_core.evaluation import frechet_distance

        R, G = sets
        base = frechet_distance(R, G, n_resamples=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = frechet_distance(R * scale, G * scale, n_resamples=0)
        for field in ("mean_term", "trace_reference", "trace_generated", "trace_sqrt"):
            assert getattr(res, field) / scale / scale == pytest.approx(getattr(base, field), rel=1e-12)
        assert res.value.value / scale / scale == pytest.approx(base.value.value, rel=1e-10)
        assert (res.rank_reference, res.rank_generated) == (base.rank_reference, base.rank_generated)

    def test_frechet_interval_is_rescaled_too(self, sets):
        from diversity_core.evaluation import frechet_distance

        R, G = sets
        base = frechet_distance(R, G, n_resamples=4, interval_size=64, rng=1)
        res = frechet_distance(R * 2.0**300, G * 2.0**300, n_resamples=4, interval_size=64, rng=1)
        assert base.value.confidence_interval is not None
        got = (res.value.value, res.value.se, *res.value.confidence_interval)
        want = (base.value.value, base.value.se, *base.value.confidence_interval)
        assert got == pytest.approx(tuple(w * 2.0**600 for w in want), rel=1e-9)

    def test_frechet_distance_beyond_float64_is_refused(self, sets):
        from diversity_core.evaluation import frechet_distance

        with pytest.raises(DiversityInputError, match=r"Frechet distance of these data is about .*beyond float64"):
            frechet_distance(sets[0] * 1e160, sets[1] * 1e160, n_resamples=0)

    @pytest.mark.parametrize("scale", [1e51, 1e100])
    def test_kernel_distance_overflow_is_refused_not_nan(self, sets, scale):
        from diversity_core.evaluation import kernel_distance

        with pytest.raises(DiversityInputError, match=r"polynomial kernel \(gamma x.y \+ coef0\)\^3 overflows float64"
                                                      r".*divide both sets by a constant.*kid_subsets=0"):
            kernel_distance(sets[0] * scale, sets[1] * scale, n_subsets=3, subset_size=50)

    def test_float32_products_that_would_overflow_run_in_float64(self, sets):
        """Features near 1e19 in float32: x.y overflows float32 (it gave NaN); float64 products are exact."""
        from diversity_core.evaluation import kernel_distance

        R, G = (x * 1e19 for x in sets)
        r64 = kernel_distance(R, G, n_subsets=4, subset_size=50, rng=0)
        r32 = kernel_distance(R.astype(np.float32), G.astype(np.float32), n_subsets=4, subset_size=50, rng=0)
        assert np.isfinite(r32.values).all() and r32.mean == pytest.approx(r64.mean, rel=1e-5)

    def test_evaluate_refuses_scales_it_cannot_compute(self, sets):
        from diversity_core.evaluation import evaluate

        with pytest.raises(DiversityInputError, match=r"kernel distance's polynomial kernel .* overflows"):
            evaluate(sets[0] * 1e51, sets[1] * 1e51, magnitude=False, n_resamples=0)
        with pytest.raises(DiversityInputError, match=r"feature values reach .*outside .*Frechet distance"):
            evaluate(sets[0] * 1e100, sets[1] * 1e100, magnitude=False, n_resamples=0, kid_subsets=0)

    def test_cli_evaluate_never_prints_nan(self, sets, tmp_path, capsys):
        from diversity_core.cli import main

        np.save(tmp_path / "r.npy", sets[0] * 1e51)
        np.save(tmp_path / "g.npy", sets[1] * 1e51)
        code = main(["evaluate", str(tmp_path / "g.npy"), "--reference", str(tmp_path / "r.npy"), "--no-magnitude",
                     "--n-resamples", "0"])
        out = capsys.readouterr()
        assert code == 2 and "nan" not in out.out and "overflows float64" in out.err
