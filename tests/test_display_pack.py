"""The metric pack's results in a notebook (issue 42, item 1).

Every result of :func:`~diversity_core.evaluation.metric_pack` (the pack and each metric's own
result) printed as one line of 300-650 characters of nested ``Estimate(...)`` and
``ConfidenceInterval(...)`` reprs. Now: a repr of at most ten short lines with the headline
numbers and their intervals, ``_repr_html_`` with every user string escaped, a tidy ``to_frame()``
holding the object's own numbers, and for the pack a ``.plot()`` that is the report's score panels.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle

import numpy as np
import pytest

from diversity_core._display import FRAME_COLUMNS, MAX_LINE, MAX_REPR_LINES
from diversity_core.evaluation import (
    ClippedDensityCoverageResult,
    CMMDResult,
    DCScoreResult,
    LexicalDiversityResult,
    MetricPackResult,
    ProbabilisticPRResult,
    RKEResult,
    TruncatedEntropyResult,
    TruncatedVendiResult,
    metric_pack,
)

HOSTILE = '<script>alert("x")</script>'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"

#: Every per-metric result class: ``score`` of its ``to_frame()`` -> the field holding that number.
FRAME_FIELDS = {
    RKEResult: {"RKE mode count": "mode_count", "RKE entropy": "entropy"},
    TruncatedVendiResult: {"truncated Vendi": "value", "Vendi (untruncated)": "vendi", "tail mass": "tail_mass"},
    TruncatedEntropyResult: {"truncated entropy": "value"},
    DCScoreResult: {"DCScore": "value"},
    CMMDResult: {"CMMD": "value"},
    ClippedDensityCoverageResult: {"clipped density": "clipped_density", "clipped coverage": "clipped_coverage",
                                   "density ratio": "density_ratio", "raw coverage": "coverage_raw",
                                   "reference density": "reference_density", "median radius": "median_radius"},
    ProbabilisticPRResult: {"P-precision": "precision", "P-recall": "recall",
                            "radius reference": "radius_reference", "radius generated": "radius_generated"},
    LexicalDiversityResult: {"compression ratio": "compression_ratio", "n-gram diversity": "ngram_diversity",
                             "self-BLEU": "self_bleu"},
}


def _sets(seed: int = 0):
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(60, 24))
    G = rng.normal(size=(50, 24)) + 0.2
    words = ["cat", "dog", "bird", "fish", "tree", "car", "red", "blue", "fast", "slow"]
    texts_r = [" ".join(rng.choice(words, size=6)) for _ in range(60)]
    texts_g = [" ".join(rng.choice(words[:5], size=6)) for _ in range(50)]
    return R, G, texts_r, texts_g


@pytest.fixture(scope="module")
def pack():
    R, G, tr, tg = _sets()
    return metric_pack(R, G, texts_reference=tr, texts_generated=tg, t=10, entropy_t=5, rng=0, n_resamples=8)


@pytest.fixture(scope="module")
def pack_no_intervals():
    R, G, _, _ = _sets(1)
    return metric_pack(R, G, t=10, entropy_t=5, rng=0, n_resamples=0)


def _results(pack):
    """Every per-metric result of the pack (generated side and G vs R)."""
    return list(pack.generated.values()) + list(pack.pair.values())


def _bounded(obj, max_chars: int = 900) -> str:
    text = repr(obj)
    lines = text.splitlines()
    assert len(lines) <= MAX_REPR_LINES, text
    assert all(len(line) <= MAX_LINE for line in lines), text
    assert len(text) <= max_chars, (len(text), text)
    assert "Estimate(" not in text and "ConfidenceInterval(" not in text, text
    return text


def test_every_result_class_is_in_the_pack(pack):
    assert {type(r) for r in _results(pack)} == set(FRAME_FIELDS)


# ---------------------------------------------------------------------------------------------
# reprs
# ---------------------------------------------------------------------------------------------
def test_result_reprs_are_short_with_intervals(pack):
    for r in _results(pack):
        text = _bounded(r)
        assert text.splitlines()[0].startswith(type(r).__name__ + "(")
        assert "(estimate, 95%)" in text, text  # the headline number with its interval and level


def test_result_reprs_show_arrays_by_shape(pack):
    tv = pack.generated["truncated_vendi"]
    assert f"eigenvalues: array(shape=({tv.t_used},)" in repr(tv)
    clipped = pack.pair["clipped"]
    assert f"coverage_items: array(shape=({clipped.n_reference},)" in repr(clipped)


def _estimate(value: float):
    from diversity_core import ConfidenceInterval
    from diversity_core.evaluation import Estimate

    return Estimate(value, 0.1, confidence_interval=ConfidenceInterval(value - 0.2, value + 0.2, level=0.9),
                    interval="extrapolated")


def test_result_repr_bounded_with_a_long_kernel_and_many_items():
    r = RKEResult(mode_count=_estimate(3.0), entropy=1.1, n=10**6, kernel={"name": "rbf" * 60, "sigma": 1.5},
                  method="blocked")
    assert "(estimate, 90%)" in _bounded(r)
    items = np.arange(10**5, dtype=np.float64)
    d = DCScoreResult(value=_estimate(2.0), tau=1.0, n=items.size, kernel={"name": "cosine"}, items=items)
    assert "99999" not in _bounded(d)


def test_pack_repr_is_short(pack, pack_no_intervals):
    text = _bounded(pack)
    assert text.splitlines()[0] == "MetricPackResult(n=50, n_reference=60, n_generated=50, kernel=cosine(), 95% intervals)"
    rke_g, rke_r = pack.generated["rke"].mode_count, pack.reference["rke"].mode_count
    assert f"  RKE mode count: G {rke_g.text()}, R {rke_r.text()}" in text.splitlines()
    assert f"  CMMD (G vs R): {pack.pair['cmmd'].value.text()}" in text.splitlines()
    text = _bounded(pack_no_intervals)
    assert "skipped: lexical (no texts" in text and "intervals" not in text.splitlines()[0]


# ---------------------------------------------------------------------------------------------
# to_frame
# ---------------------------------------------------------------------------------------------
def _check_row(row, value, *, subsampled: bool = False) -> None:
    """A frame row holds ``value`` (an Estimate or a float) and its interval as the object has them."""
    if hasattr(value, "confidence_interval"):
        ci = value.confidence_interval
        assert row.value == value.value and row.se == value.se and row.method == value.interval
        if ci is not None:
            assert (row.low, row.high, row.level, row.kind) == (ci[0], ci[1], ci.level, "estimate")
        elif subsampled:  # a value on a random n-subset without an interval: an estimate without ends
            assert math.isnan(row.low) and math.isnan(row.high) and math.isnan(row.level)
            assert row.kind == "estimate"
        else:
            assert (row.low, row.high, row.level, row.kind) == (value.value, value.value, 1.0, "exact")
    else:
        assert (row.value, row.low, row.high, row.level, row.kind) == (value, value, value, 1.0, "exact")


def test_result_frames_hold_the_fields(pack, pack_no_intervals):
    for r in _results(pack) + _results(pack_no_intervals):
        frame = r.to_frame()
        standard = [c for c in FRAME_COLUMNS if c in frame.columns]
        assert list(frame.columns[:len(standard)]) == standard and "group" not in standard
        spec = FRAME_FIELDS[type(r)]
        assert set(frame.score) <= set(spec) and len(frame) == frame.score.nunique()
        for row in frame.itertuples():
            _check_row(row, getattr(r, spec[row.score]))
    tv = pack.generated["truncated_vendi"].to_frame()
    assert tv.q.tolist()[:2] == [1.0, 1.0] and math.isnan(tv.q.iloc[2])
    assert tv.t.tolist() == [10] * 3


def test_pack_frame_is_its_rows(pack):
    frame = pack.to_frame()
    assert isinstance(pack, MetricPackResult)
    assert list(frame.columns) == [c for c in FRAME_COLUMNS if c != "q"] + ["se", "method", "note"]
    rows = [r for r in pack.rows() if r["value"] is not None]
    assert len(frame) == len(rows) == 19
    for row, ref in zip(frame.itertuples(), rows):
        assert (row.group, row.score, row.value, row.low, row.high) == (
            ref["set"], ref["metric"], ref["value"], ref["ci_low"], ref["ci_high"])
        assert row.kind == "estimate" and row.level == 0.95
    assert set(frame.group) == {"generated", "reference", "G vs R"}


def test_pack_frame_kinds_without_intervals(pack_no_intervals):
    """No interval: exact on the sets as given; an estimate (no ends) for the larger set, scored on an n-subset."""
    p = pack_no_intervals
    frame = p.to_frame()
    assert p.n == p.n_generated < p.n_reference
    assert set(frame.loc[frame.group == "reference", "kind"]) == {"estimate"}
    assert set(frame.loc[frame.group != "reference", "kind"]) == {"exact"}
    for row in frame.itertuples():
        results = {"generated": p.generated, "reference": p.reference}.get(row.group)
        key, attr = {"RKE mode count": ("rke", "mode_count"), "truncated Vendi": ("truncated_vendi", "value"),
                     "truncated entropy (TCE/TIE)": ("truncated_entropy", "value"), "DCScore": ("dcscore", "value"),
                     "CMMD": ("cmmd", "value"), "clipped density": ("clipped", "clipped_density"),
                     "clipped coverage": ("clipped", "clipped_coverage"), "P-precision": ("probabilistic", "precision"),
                     "P-recall": ("probabilistic", "recall")}[row.score]
        _check_row(row, getattr((results or p.pair)[key], attr), subsampled=row.group == "reference")


# ---------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------
def test_result_html_is_a_table_with_escaped_text(pack):
    for r in _results(pack):
        html = r._repr_html_()
        assert html.startswith('<table class="diversity-result"')
        assert html.count("<tr>") == 1 + len(r.to_frame())
    hostile = dataclasses.replace(pack.generated["rke"], kernel={"name": HOSTILE})
    html = hostile._repr_html_()
    assert HOSTILE not in html and ESCAPED in html


def test_pack_html_escapes_kernel_and_skip_reasons(pack):
    hostile = dataclasses.replace(pack, kernel={"name": HOSTILE}, skipped={HOSTILE: f"because {HOSTILE}"})
    html = hostile._repr_html_()
    assert HOSTILE not in html
    assert html.count(ESCAPED) == 3  # the caption's kernel, the skipped metric and its reason
    assert html.count("<tr>") == 1 + len(pack.to_frame())


# ---------------------------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------------------------
def test_pack_plot_is_the_score_panels(pack):
    pytest.importorskip("plotly")
    from diversity_core.report.figures.colours import group_colours
    from diversity_core.report.figures.groups import score_bars_figure

    bars = {}
    for r in pack.rows():
        if r["value"] is not None:
            bars.setdefault(r["metric"], []).append((r["set"], r["value"], r["ci_low"], r["ci_high"]))
    roles = ["generated", "reference", "G vs R"]
    expected = score_bars_figure(bars, groups=roles, colours=group_colours(roles),
                                 title="The metric pack at n = 50 per set with 95% intervals")
    assert pack.plot().to_json() == expected.to_json()
    assert len(pack.plot().data) == 19


# ---------------------------------------------------------------------------------------------
# unchanged behaviour
# ---------------------------------------------------------------------------------------------
def test_equality_pickling_and_dicts_unchanged(pack):
    for r in _results(pack) + [pack]:
        assert dataclasses.is_dataclass(r)
        assert copy.copy(r) == r and dataclasses.replace(r) == r
        back = pickle.loads(pickle.dumps(r))
        assert back.to_dict() == r.to_dict() and repr(back) == repr(r)
    for r in (pack.generated["rke"], pack.pair["cmmd"], pack.generated["lexical"]):  # no array fields
        assert pickle.loads(pickle.dumps(r)) == r


# ---------------------------------------------------------------------------------------------
# differential spectra: NoveltySpectrum, ModeNull, NoveltyReport
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def novelty():
    from diversity_core.differential import novelty_report, novelty_spectrum

    rng = np.random.default_rng(2)
    G, R = rng.normal(size=(60, 6)), rng.normal(size=(50, 6)) + 0.3
    rep = novelty_report(G, R, kernel="rbf", sigma=2.0, n_permutations=19, n_resamples=4, rng=0)
    bare = novelty_report(G, R, kernel="cosine", n_permutations=0, n_resamples=0, rng=0)
    sketch = novelty_spectrum(G, R, kernel="rbf", sigma=2.0, method="rff", n_frequencies=256, n_modes=4, rng=0)
    return rep, bare, sketch


def test_novelty_reprs_are_short(novelty):
    rep, bare, sketch = novelty
    for obj in (rep, bare, rep.novel, rep.missing, sketch, rep.novel_null, rep.missing_null):
        _bounded(obj)
    assert f"eigenvalues: array(shape=({rep.novel.eigenvalues.size},)" in repr(rep.novel)
    assert f"null: array(shape=({rep.novel_null.n_permutations},)" in repr(rep.novel_null)
    assert f"KEN (novel): {rep.ken.value:.4g} [" in repr(rep) and "(estimate, 95%)" in repr(rep)
    assert "(estimate, 95%)" in repr(sketch).splitlines()[1]  # the sketch's KEN interval
    assert "no null computed" in repr(bare)


def _spectrum_checks(spec, frame) -> None:
    ken, mass = frame.iloc[0], frame.iloc[1]
    assert (ken.score, ken.value, mass.score, mass.value) == ("KEN", spec.ken, "positive mass", spec.positive_mass)
    modes = frame.iloc[2:]
    assert modes.score.eq("eigenvalue").all() and modes["mode"].tolist() == list(range(1, spec.n_modes + 1))
    assert modes.value.tolist() == spec.eigenvalues[: spec.n_modes].tolist()
    assert modes.share.tolist() == spec.shares.tolist()
    assert set(frame.kind) == {spec.kind} and set(frame.role) == {spec.role}
    if spec.exact:
        assert (frame.low == frame.value).all() and (frame.high == frame.value).all()
    else:
        assert (ken.low, ken.high, ken.level) == (*spec.ken_interval(), 0.95)
        assert math.isnan(mass.low)  # no interval for the positive mass: an estimate without ends
        for j, row in enumerate(modes.itertuples()):
            assert (row.low, row.high, row.se) == (*spec.eigenvalue_interval(j), spec.eigenvalue_se[j])


def test_novelty_spectrum_frames(novelty):
    rep, _, sketch = novelty
    for spec in (rep.novel, rep.missing, sketch):
        _spectrum_checks(spec, spec.to_frame())


def test_mode_null_frame(novelty):
    null = novelty[0].novel_null
    frame = null.to_frame()
    assert frame.value.tolist() == null.observed.tolist() and frame.p_value.tolist() == null.p_values.tolist()
    assert frame.outside.tolist() == null.outside.tolist() and set(frame.threshold) == {null.threshold}
    assert set(frame.kind) == {"exact"} and frame["mode"].tolist() == list(range(1, null.observed.size + 1))


def test_novelty_report_frame(novelty):
    rep, bare, _ = novelty
    frame = rep.to_frame()
    scores = frame.iloc[:3]
    assert scores.score.tolist() == ["KEN", "KEN", "RRKE"] and scores.role.tolist()[:2] == ["novel", "missing"]
    for row, est in zip(scores.itertuples(), (rep.ken, rep.ken_missing, rep.rrke)):
        assert (row.value, row.low, row.high, row.level, row.kind) == (est.value, *est.confidence_interval, 0.95,
                                                                       "estimate")
    modes = frame.iloc[3:]
    expected = [(role, m["mode"], m["eigenvalue"], m["share"], m["p_value"], m["outside_null"])
                for role in ("novel", "missing") for m in rep.modes(role, n_items=1)]
    assert list(zip(modes.role, modes["mode"], modes.value, modes.share, modes.p_value, modes.outside_null)) == expected
    plain = bare.to_frame()
    assert set(plain.kind) == {"exact"} and plain.note.iloc[0] == bare.ken.note != ""


def test_novelty_html_escapes_and_counts_rows(novelty):
    rep, _, sketch = novelty
    for obj in (rep, rep.novel, rep.novel_null):
        assert obj._repr_html_().count("<tr>") == 1 + len(obj.to_frame())
    html = dataclasses.replace(sketch, kernel={"name": HOSTILE})._repr_html_()
    assert HOSTILE not in html and ESCAPED in html


def test_novelty_report_plot_is_the_report_figure(novelty):
    pytest.importorskip("plotly")
    from diversity_core.report.figures.novelty import novelty_figure

    rep = novelty[0]
    assert rep.plot().to_json() == novelty_figure(rep).to_json()
    fig = rep.plot(generated=HOSTILE, reference="real")
    assert fig.to_json() == novelty_figure(rep, generated=HOSTILE, reference="real").to_json()
    assert "<script>" not in fig.layout.title.text and "&lt;script&gt;" in fig.layout.title.text


def test_novelty_results_keep_equality_and_pickling(novelty):
    rep, _, sketch = novelty
    for r in (rep, sketch, rep.novel_null):
        assert dataclasses.replace(r) == r
        back = pickle.loads(pickle.dumps(r))
        assert back.to_dict() == r.to_dict() and repr(back) == repr(r)
