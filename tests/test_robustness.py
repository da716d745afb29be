"""diversity_core.robustness: the groups' ranking under several representations and kernels, rank flips,
and the pixel-background check."""

from __future__ import annotations

import json

import numpy as np
import pytest

from diversity_core.compare import compare
from diversity_core.data import load_demo
from diversity_core.exceptions import DiversityInputError
from diversity_core.featurizers import featurize
from diversity_core.robustness import (
    DOMINANCE,
    RepresentationScores,
    RobustnessResult,
    _flips,
    background_dominance,
    default_kernels,
    representation_robustness,
)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(scope="module")
def icons():
    ds = load_demo("icons")
    return ds, featurize(ds, "pixels")


def two_groups(rng):
    """A spread group and a tight one: every kernel ranks them the same way."""
    spread = rng.normal(size=(40, 6))
    tight = rng.normal(size=(30, 6)) * 0.05 + np.array([3.0, 0, 0, 0, 0, 0])
    return np.vstack([spread, tight]), np.array(["spread"] * 40 + ["tight"] * 30)


def test_icons_demo_ranking_depends_on_the_kernel(icons):
    """The demo built for it: pixel cosine (dominated by the white background) reverses pixel RBF."""
    ds, X = icons
    result = representation_robustness(
        {"pixels": X}, ds.groups, images=ds.items, n_subsamples=10, n_resamples=10
    )
    assert [r.label for r in result.rows] == ["pixels · cosine", "pixels · rbf"]
    assert result.rows[0].ranking == (
        "A: 2 dark tiles",
        "C: 6 medium glyphs on white",
        "B: 24 small glyphs on white",
    )
    assert result.rows[1].ranking == tuple(reversed(result.rows[0].ranking))
    assert result.verdict == "depends" and len(result.flips) == 3 and all(f.resolved for f in result.flips)
    # one representation, two kernels: the headline says the kernel decides, not the representation
    assert result.depends_on == "kernel" and {f.differs for f in result.flips} == {"kernel"}
    assert result.summary().startswith("The ranking depends on the kernel: pixels · cosine ranks A: 2 dark")
    assert "(two kernels on the same pixels features; 3 of 3 pairs" in result.summary()
    assert result.n == min(result.group_sizes) == 200
    assert result.background.dominated
    assert set(result.background.dominated_groups) == {
        "B: 24 small glyphs on white",
        "C: 6 medium glyphs on white",
    }
    json.dumps(result.to_dict())  # JSON-ready


def test_estimates_are_those_of_compare_at_equal_n(rng):
    X, groups = two_groups(rng)
    result = representation_robustness(
        {"f": X}, groups, kernels=("cosine",), q=2, n_subsamples=8, n_resamples=6, rng=3
    )
    cmp = compare(
        {"spread": X[:40], "tight": X[40:]},
        kernel="cosine",
        qs=(2.0,),
        magnitude=False,
        size_curve=False,
        n_subsamples=8,
        n_resamples=6,
        rng=3,
    )
    for g in ("spread", "tight"):
        e = cmp.estimate(g, "VS_2")
        assert result.rows[0].estimates[g] == (e.estimate, *e.confidence_interval)
    assert result.n == 30 and result.group_sizes == (40, 30)


def test_stable_ranking_says_so(rng):
    X, groups = two_groups(rng)
    result = representation_robustness(
        {"a": X, "b": X * 2.0}, groups, kernels=("cosine", "rbf"), n_subsamples=5, n_resamples=5
    )
    assert len(result.rows) == 4 and result.flips == ()
    assert result.verdict == "stable"
    assert result.summary().startswith(
        "The ranking is the same under all 4 representations and kernels: spread > tight"
    )


def scores(rep, estimates, resolved=()):
    ranking = tuple(sorted(estimates, key=lambda g: -estimates[g]))
    return RepresentationScores(
        rep, "cosine", {g: (v, v - 0.1, v + 0.1) for g, v in estimates.items()}, ranking, dict(resolved)
    )


def test_flip_is_resolved_only_when_both_orders_are():
    one = scores("p", {"x": 2.0, "y": 1.0}, {("x", "y"): "x"})
    other = scores("n", {"x": 1.0, "y": 2.0})  # the reverse, within the intervals
    (flip,) = _flips(("x", "y"), [one, other])
    assert (flip.higher, flip.lower, flip.where_higher, flip.where_lower, flip.resolved) == (
        "x",
        "y",
        "p · cosine",
        "n · cosine",
        False,
    )
    resolved = scores("n", {"x": 1.0, "y": 2.0}, {("x", "y"): "y"})
    assert _flips(("x", "y"), [one, other, resolved])[0].resolved  # a resolved reversal is preferred
    assert _flips(("x", "y"), [one, one]) == ()


def test_headline_says_whether_the_representation_the_kernel_or_both_differ():
    """Issue 27 item 3: a flip between kernels on one representation is not a representation's."""

    def row(rep, kernel, estimates, resolved=True):
        ranking = tuple(sorted(estimates, key=lambda g: -estimates[g]))
        res = {("x", "y"): ranking[0]} if resolved else {}
        return RepresentationScores(rep, kernel, {g: (v, v - 0.1, v + 0.1) for g, v in estimates.items()}, ranking, res)

    def result(*rows):
        names = ("x", "y")
        return RobustnessResult(names, (30, 30), 30, 1.0, 0.95, rows, _flips(names, rows))

    up, down = {"x": 2.0, "y": 1.0}, {"x": 1.0, "y": 2.0}
    by_kernel = result(row("pixels", "cosine", up), row("pixels", "rbf", down))
    assert by_kernel.depends_on == "kernel" and by_kernel.flips[0].differs == "kernel"
    assert by_kernel.summary().startswith("The ranking depends on the kernel: pixels · cosine ranks x > y, pixels · rbf")
    assert "(two kernels on the same pixels features;" in by_kernel.summary()
    by_rep = result(row("pixels", "cosine", up), row("net", "cosine", down))
    assert by_rep.depends_on == "representation" and by_rep.flips[0].differs == "representation"
    assert by_rep.summary().startswith("The ranking depends on the representation: pixels · cosine ranks x > y")
    assert "(the same cosine kernel on two representations;" in by_rep.summary()
    # only rows differing in both reverse the order: both are named
    only_both = result(row("pixels", "cosine", up), row("net", "rbf", down))
    assert only_both.depends_on == "both" and only_both.flips[0].differs == "both"
    assert only_both.summary().startswith("The ranking depends on the representation and the kernel:")
    assert "(the representation and the kernel both differ;" in only_both.summary()
    # the kernel alone reverses the order (net · rbf agrees with pixels · rbf): the kernel
    kernel_alone = result(row("pixels", "cosine", up), row("pixels", "rbf", down), row("net", "rbf", down))
    assert kernel_alone.depends_on == "kernel"
    # a kernel flip and a representation flip: both
    mixed = result(row("pixels", "cosine", up), row("pixels", "rbf", down), row("net", "cosine", down))
    assert mixed.depends_on == "both"
    assert mixed.summary().startswith("The ranking depends on the representation and the kernel: pixels · cosine")
    # within the intervals: the same words, said of an unresolved change
    unresolved = result(row("pixels", "cosine", up), row("net", "cosine", down, resolved=False))
    assert unresolved.verdict == "unresolved" and unresolved.depends_on == "representation"
    assert unresolved.summary().startswith("The order of x and y changes with the representation (pixels · cosine")
    assert result(row("a", "cosine", up), row("b", "rbf", up)).depends_on is None
    assert by_kernel.to_dict()["flips"][0]["differs"] == "kernel"


def test_unresolved_flip_verdict(rng):
    """Two groups from one distribution: any reversal stays within the intervals."""
    X = rng.normal(size=(60, 8))
    groups = np.repeat(["a", "b"], 30)
    result = representation_robustness(
        {"f": X, "g": X**3}, groups, kernels=("cosine", "rbf"), n_subsamples=5, n_resamples=5
    )
    assert result.verdict in ("stable", "unresolved")
    assert not any(f.resolved for f in result.flips)


def test_bad_input_is_refused(rng):
    X, groups = two_groups(rng)
    with pytest.raises(DiversityInputError, match="at least one representation"):
        representation_robustness({}, groups)
    with pytest.raises(DiversityInputError, match="representation 'f' has 69 rows but groups has 70 entries"):
        representation_robustness({"f": X[:-1]}, groups)
    with pytest.raises(DiversityInputError, match="unknown kernel 'gauss' for 'f'; choose among"):
        representation_robustness({"f": X}, groups, kernels=("gauss",))
    with pytest.raises(DiversityInputError, match="confidence_level must be a number above 0.0 below 1.0"):
        representation_robustness({"f": X}, groups, confidence_level=1.0)


def test_default_kernels():
    assert default_kernels("pixels") == ("cosine", "rbf")
    assert default_kernels("ngram") == ("linear", "rbf")
    assert default_kernels("morgan") == ("tanimoto", "rbf")
    assert default_kernels("my embeddings") == ("cosine", "rbf")


# ---------------------------------------------------------------------------------------------
# the background check
# ---------------------------------------------------------------------------------------------
def glyphs(background: int, rng, n: int = 30, side: int = 16) -> np.ndarray:
    """Images of one background with a random 4 x 4 coloured square each."""
    a = np.full((n, side, side, 3), background, dtype=np.uint8)
    for i in range(n):
        x, y = rng.integers(1, side - 5, size=2)
        a[i, y : y + 4, x : x + 4] = rng.integers(0, 200, size=3)
    return a


def test_share_matches_its_definition(rng):
    """beta = sum over pairs i != j of <x_i m_i, x_j m_j> / sum of <x_i, x_j> (unit rows), by brute force."""
    a = glyphs(255, rng, n=12)
    report = background_dominance(a)
    U = a.reshape(12, -1).astype(float) / 255
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    m = np.all(a.astype(float) / 255 >= 1 - 0.04, axis=3)
    B = U * np.repeat(m[..., None], 3, axis=3).reshape(12, -1)
    off = ~np.eye(12, dtype=bool)
    expected = (B @ B.T)[off].sum() / (U @ U.T)[off].sum()
    assert report.share == pytest.approx(expected, rel=1e-12)
    assert report.colour == (255, 255, 255) and report.dominated and report.share > DOMINANCE
    assert report.background_fraction == pytest.approx(m.mean())


def test_border_modes_pick_each_images_most_common_colour_and_the_smallest_on_ties(rng):
    """The vectorised mode equals one np.unique per image; ties go to the smallest colour code."""
    from diversity_core.robustness import _border_modes

    # few colours on a 6 x 6 border (20 pixels), so equal counts occur often
    P = rng.integers(0, 3, size=(400, 6, 6, 3)) / 32.0
    P[0] = 0.0  # one colour on the whole border
    P[1, :, :, :] = 1 / 32  # a tie: 10 pixels of (2/32, 0, 0) against 10 of (1/32, 1/32, 1/32)
    P[1, 0, :] = P[1, 1:-1, 0] = (2 / 32, 0, 0)  # the top row and the left column: 6 + 4 of 20
    got = _border_modes(P)
    border = np.concatenate([P[:, 0], P[:, -1], P[:, 1:-1, 0], P[:, 1:-1, -1]], axis=1)
    codes = (np.round(border * 32).astype(np.int64) * 33 ** np.arange(3)).sum(axis=2)
    for i in range(len(P)):
        values, counts = np.unique(codes[i], return_counts=True)
        mode = values[np.argmax(counts)]
        assert np.array_equal(got[i], (mode // 33 ** np.arange(3)) % 33 / 32.0), i
    assert np.array_equal(got[0], [0, 0, 0])
    assert np.array_equal(got[1], [2 / 32, 0, 0])  # code 2 < 1 + 33 + 33**2


def test_black_background_adds_nothing_to_cosine(rng):
    report = background_dominance(glyphs(0, rng))
    assert report.colour == (0, 0, 0) and report.share == 0.0 and not report.dominated
    assert "not dominated" in report.message()


def test_group_shares_and_the_dominated_group(rng):
    a = np.concatenate([glyphs(255, rng), glyphs(0, rng)])
    report = background_dominance(a, groups=["white"] * 30 + ["black"] * 30)
    assert report.group_shares["black"] == 0.0 and report.group_shares["white"] > DOMINANCE
    assert report.dominated_groups == ("white",) and "within white" in report.message()
    with pytest.raises(DiversityInputError, match=r"groups must have one entry per image \(60\)"):
        background_dominance(a, groups=["x"])
    with pytest.raises(DiversityInputError, match="at least 2 images"):
        background_dominance(a[:1])


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------
def test_cli_json_and_bad_kernel(capsys):
    from diversity_core.cli import main

    assert (
        main(["robustness", "demo:icons", "--format", "json", "--n-subsamples", "10", "--n-resamples", "10"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "depends" and out["summary"].startswith("The ranking depends on the kernel")
    assert {f["differs"] for f in out["flips"]} == {"kernel"}
    assert [r["kernel"] for r in out["rows"]] == ["cosine", "rbf"] and out["background"]["dominated"] is True
    assert main(["robustness", "demo:icons", "--kernels", "gauss"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("diversity: error: unknown kernel 'gauss' for 'pixels'; choose among:")
