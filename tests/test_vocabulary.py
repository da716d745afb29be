"""One vocabulary (issue 39 item 8): ``q`` for the orders in diversity_core.approx (``qs`` a deprecated alias), and
one interval type, ``ConfidenceInterval``, on every estimate as ``.confidence_interval`` (the flat ``ci_low``/
``ci_high``/``level`` deprecated readers of it)."""

from __future__ import annotations

import copy
import inspect
import math
import pickle
import warnings
from dataclasses import replace

import numpy as np
import pytest

import diversity_core
import diversity_core.approx as approx
from diversity_core._deprecation import UNSET
from diversity_core._stats import ConfidenceInterval
from diversity_core.compare import Comparison, PairwiseDifference, ScoreEstimate
from diversity_core.evaluation import Estimate
from diversity_core.exceptions import DiversityInputError
from diversity_core.rnd import RNDResult


def _public_callables():
    """``(name, callable)`` for every public function of approx and the public methods of its classes."""
    for name in approx.__all__:
        obj = getattr(approx, name)
        if inspect.isclass(obj):
            # the dataclass constructors mirror the result attributes (``.qs`` stays): methods only
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and inspect.isfunction(member):
                    yield f"{name}.{attr}", member
        elif callable(obj):
            yield name, obj


def test_no_public_parameter_named_qs_except_the_deprecated_alias():
    offenders, aliases = [], []
    for name, fn in _public_callables():
        params = inspect.signature(fn).parameters
        if "qs" in params:
            (aliases if params["qs"].default is UNSET else offenders).append(name)
            assert "q" in params, f"{name}: the alias qs= without the new name q="
    assert not offenders, f"public parameters named qs (use q): {offenders}"
    # the walk saw the functions that took qs= before issue 39 (a walk that sees nothing cannot fail)
    assert {"vendi_bounds", "iter_vendi_bounds", "nystrom_bounds", "plan_scores", "bounds_from_eigenvalues",
            "bounds_from_lower_eigenvalues", "VendiBounds.bounds_at"} <= set(aliases)


X = np.random.default_rng(0).normal(size=(60, 3))


def _calls():
    """``(name, call with the given keyword, compare)``: each renamed function on a small case."""
    b = approx.vendi_bounds(X, kernel="rbf", sigma=1.0, k=5, q=[1.0, 2.0], rng=0)
    bands = lambda r: np.concatenate([r.low, r.high])  # noqa: E731
    pair = lambda r: np.concatenate(r)  # noqa: E731
    return [
        ("vendi_bounds", lambda kw: approx.vendi_bounds(X, kernel="rbf", sigma=1.0, k=5, rng=0, **kw), bands),
        ("iter_vendi_bounds",
         lambda kw: list(approx.iter_vendi_bounds(X, kernel="rbf", sigma=1.0, ks=[5], rng=0, **kw))[-1], bands),
        ("nystrom_bounds", lambda kw: approx.nystrom_bounds(X, kernel="rbf", sigma=1.0, m=20, rng=0, **kw), bands),
        ("plan_scores", lambda kw: approx.plan_scores(4000, 16, kernel="rbf", approx="auto", memory_budget="40M", **kw),
         lambda p: np.asarray(p.qs)),
        ("bounds_from_eigenvalues", lambda kw: approx.bounds_from_eigenvalues([0.5, 0.3], 5, **kw), pair),
        ("bounds_from_lower_eigenvalues", lambda kw: approx.bounds_from_lower_eigenvalues([0.5, 0.3], 5, **kw),
         pair),
        ("VendiBounds.bounds_at", lambda kw: b.bounds_at(**kw), pair),
    ]


@pytest.mark.parametrize("case", range(7))
def test_qs_still_works_with_one_deprecation_warning(case):
    name, call, compare = _calls()[case]
    orders = [1.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = call({"q": orders})  # the new name: no warning at all
    with pytest.warns(DeprecationWarning) as record:
        old = call({"qs": orders})
    deprecations = [w for w in record if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, f"{name}: {[str(w.message) for w in deprecations]}"
    message = str(deprecations[0].message)
    assert "qs=" in message and "use q=" in message
    assert deprecations[0].filename == __file__, f"{name}: the warning should point at the caller's line"
    np.testing.assert_array_equal(compare(old), compare(new))
    with pytest.raises(DiversityInputError, match="not both"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            call({"q": orders, "qs": orders})


def test_band_functions_still_need_the_orders():
    with pytest.raises(DiversityInputError, match="orders q"):
        approx.bounds_from_eigenvalues([0.5, 0.3], 5)
    with pytest.raises(DiversityInputError, match="orders q"):
        approx.bounds_from_lower_eigenvalues([0.5, 0.3], 5)


def test_the_project_calls_the_new_name():
    """The internal callers of the renamed functions (dispatch, vs_inf_exact, the scoring policy, the CLI
    plan) raise no DeprecationWarning."""
    from diversity_core.cli._score import _plan
    from diversity_core.scoring import score_groups

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        approx.vendi_bounds(X, kernel="rbf", sigma=1.0, method="nystrom", m=20, q=[1.0], rng=0)
        approx.vs_inf_exact(X, kernel="rbf", sigma=1.0, rng=0)
        score_groups(X, kernel="rbf")
        args = type("Args", (), dict(kernel="rbf", method="auto", approx="auto", bounds_method="auto", m=None,
                                     D=None, k=None, probes=None, steps=None, sigma=None, gamma=None,
                                     degree=None, coef0=None))()
        _plan(args, X, 60, 3, [1.0], None, streamed=False)


# ---------------------------------------------------------------------------------------------
# one interval type on every estimate: ``.confidence_interval``, a ConfidenceInterval
# ---------------------------------------------------------------------------------------------
#: A comparison as the versions before the interval type wrote it (flat ci_low/ci_high, one row without df).
OLD_COMPARISON = {
    "format": "diversity-comparison/1", "groups": ["a", "b"], "group_sizes": [40, 30], "n": 30, "level": 0.9,
    "scores": ["VS_1"],
    "estimates": [
        {"group": "a", "score": "VS_1", "estimate": 5.0, "se": 0.2, "ci_low": 4.6, "ci_high": 5.4, "n": 30,
         "replicates": 10, "interval": "measured", "role": "", "gamma": None},
        {"group": "b", "score": "VS_1", "estimate": 3.0, "se": None, "ci_low": None, "ci_high": None, "n": 30,
         "replicates": 1, "interval": "none", "role": "", "gamma": None, "df": None},
    ],
    "pairwise": [{"score": "VS_1", "group_a": "a", "group_b": "b", "difference": 2.0, "se": 0.3, "ci_low": 1.5,
                  "ci_high": "inf", "resolved": True, "higher": "a"}],
    "curves": [], "profiles": {}, "magnitude_curves": {}, "spectra": {}, "settings": {},
}

#: The project's own deprecation warnings (diversity_core._deprecation.warn_renamed's wording).
OWN_DEPRECATION = r".* is deprecated; use "


def test_the_interval_type_is_public_and_unpacks_like_a_pair():
    from diversity_core.compare import ConfidenceInterval as from_compare

    assert diversity_core.ConfidenceInterval is ConfidenceInterval is from_compare
    assert "ConfidenceInterval" in diversity_core.__all__
    ci = ConfidenceInterval(0.9, 1.3, level=0.95)
    lo, hi = ci
    assert (lo, hi, ci.low, ci.high, ci.level, ci.kind) == (0.9, 1.3, 0.9, 1.3, 0.95, "estimate")
    assert ci == (0.9, 1.3) and ci[0] == 0.9 and len(ci) == 2 and type(ci)._fields == ("low", "high")
    np.testing.assert_array_equal(np.asarray(ci), [0.9, 1.3])
    for back in (pickle.loads(pickle.dumps(ci)), copy.deepcopy(ci), ci._replace(low=0.9)):
        assert back == ci and (back.level, back.kind) == (0.95, "estimate")
    b = ConfidenceInterval.bound(2.0, 3.0)
    assert (b.level, b.kind) == (1.0, "bound")
    arrays = ConfidenceInterval(np.zeros(3), np.ones(3), level=0.9)
    assert np.asarray(arrays).shape == (2, 3)
    with pytest.raises(AttributeError, match="read-only"):
        ci.level = 0.5
    with pytest.raises(DiversityInputError, match="kind must be one of"):
        ConfidenceInterval(0, 1, kind="guess")
    with pytest.raises(DiversityInputError, match=r"level must be in \(0, 1\]"):
        ConfidenceInterval(0, 1, level=95)
    with pytest.raises(DiversityInputError, match="level 1.0"):
        ConfidenceInterval(0, 1, level=0.9, kind="bound")


def _rnd_result(settings=None):
    curves = np.ones((3, 4))
    return RNDResult(0.5, 0.4, 0.6, [0.45, 0.5, 0.55], curves, curves, curves,
                     settings={"confidence": 0.95} if settings is None else settings)


def _estimates():
    """``(owner name, object, expected (low, high), level, flat names)`` of every estimate with a flat interval."""
    cmp = Comparison.from_dict(OLD_COMPARISON)
    return [
        ("ScoreEstimate", cmp.estimate("a", "VS_1"), (4.6, 5.4), 0.9, ("ci_low", "ci_high")),
        ("PairwiseDifference", cmp.pairwise[0], (1.5, math.inf), 0.9, ("ci_low", "ci_high")),
        ("Estimate", Estimate(0.3, se=0.1, ci_low=0.1, ci_high=0.5, df=math.inf, level=0.9, interval="binomial"),
         (0.1, 0.5), 0.9, ("ci_low", "ci_high", "level")),
        ("RNDResult", _rnd_result(), (0.4, 0.6), 0.95, ("ci_low", "ci_high", "interval")),
    ]


@pytest.mark.parametrize("case", range(4))
def test_every_estimate_has_its_interval_as_the_one_type(case):
    name, obj, ends, level, _ = _estimates()[case]
    ci = obj.confidence_interval
    assert isinstance(ci, ConfidenceInterval), name
    assert tuple(ci) == ends and ci.level == level and ci.kind == "estimate"


@pytest.mark.parametrize("case", range(4))
def test_the_flat_readers_still_work_with_a_deprecation_warning(case):
    name, obj, ends, level, flat = _estimates()[case]
    expected = {"ci_low": ends[0], "ci_high": ends[1], "level": level, "interval": ends}
    for attr in flat:
        with pytest.warns(DeprecationWarning, match=rf"{name}\.{attr} is deprecated; use {name}\.confidence_interval") as rec:
            assert getattr(obj, attr) == expected[attr]
        assert len(rec) == 1 and rec[0].filename == __file__, f"{name}.{attr}: the warning points at the caller"


def test_no_interval_is_none_and_the_flat_readers_say_none():
    e = Comparison.from_dict(OLD_COMPARISON).estimate("b", "VS_1")
    assert e.confidence_interval is None
    with pytest.warns(DeprecationWarning):
        assert e.ci_low is None and e.ci_high is None
    assert Estimate(1.0).confidence_interval is None


def test_saved_formats_and_constructors_are_unchanged(tmp_path):
    """Files written before the interval type load; to_dict, JSON and CSV keep the flat keys, in order."""
    cmp = Comparison.from_dict(OLD_COMPARISON)
    d = cmp.to_dict()
    assert [list(r) for r in d["estimates"]] == [
        ["group", "score", "estimate", "se", "ci_low", "ci_high", "n", "replicates", "interval", "role", "gamma",
         "df"]] * 2
    assert d["estimates"][0]["ci_low"] == 4.6 and d["estimates"][1]["ci_low"] is None
    assert d["pairwise"][0]["ci_high"] == "inf" and d["level"] == 0.9
    assert Comparison.from_json(cmp.to_json()) == cmp
    for table in ("estimates", "pairwise"):
        assert Comparison.read_csv(cmp.to_csv(table=table), table=table) == getattr(cmp, table)
    assert cmp.to_csv().splitlines()[0] == "group,score,estimate,se,ci_low,ci_high,n,replicates,interval,role,gamma,df"
    # the old positional and keyword constructors
    e = ScoreEstimate("a", "VS_1", 5.0, 0.2, 4.6, 5.4, 30, 10, "measured")
    assert e.confidence_interval == (4.6, 5.4) and e.to_dict()["ci_high"] == 5.4
    p = PairwiseDifference("VS_1", "a", "b", 2.0, 0.3, 1.5, 2.5, True, "a")
    assert p.confidence_interval == (1.5, 2.5)
    est = Estimate(0.3, 0.1, 0.1, 0.5, math.inf, 0.9, "binomial")
    assert est.to_dict() == {"value": 0.3, "se": 0.1, "ci_low": 0.1, "ci_high": 0.5, "df": "inf", "level": 0.9,
                             "interval": "binomial", "note": ""}
    r = _rnd_result()
    assert list(r.to_dict())[:3] == ["score", "ci_low", "ci_high"] and r.to_dict()["ci_low"] == 0.4
    # dataclasses.replace: other fields, the flat ends, or the interval itself
    assert replace(e, estimate=6.0).confidence_interval == (4.6, 5.4)
    assert replace(est, ci_low=0.2).confidence_interval == (0.2, 0.5)
    assert replace(est, ci_low=0.2).confidence_interval.level == 0.9
    assert replace(r, score=1.0).confidence_interval.level == 0.95
    assert replace(p, confidence_interval=ConfidenceInterval(1.0, 3.0)).to_dict()["ci_low"] == 1.0
    assert pickle.loads(pickle.dumps(cmp)) == cmp
    with pytest.raises(TypeError, match="missing required arguments: n, replicates, interval"):
        ScoreEstimate("a", "VS_1", 5.0, 0.2, 4.6, 5.4)
    # a flipped pair keeps its level
    assert cmp.pair("VS_1", "b", "a").confidence_interval == (-math.inf, -1.5)
    assert cmp.pair("VS_1", "b", "a").confidence_interval.level == 0.9


def test_the_per_order_intervals_say_what_they_are():
    """``.interval(q)`` of bounds: a guaranteed range (level 1, kind "bound"); of estimates: at their level."""
    b = approx.vendi_bounds(X, kernel="rbf", sigma=1.0, k=5, q=[1.0], rng=0)
    assert (b.interval(1.0).level, b.interval(1.0).kind) == (1.0, "bound")
    est = approx.vendi_estimate(X, kernel="rbf", sigma=1.0, method="nystrom", m=20, q=[1.0], replicates=3,
                                confidence_level=0.9, rng=0)
    assert (est.interval(1.0).level, est.interval(1.0).kind) == (0.9, "estimate")
    if est.guaranteed(1.0) is not None:
        assert est.guaranteed(1.0).kind == "bound"


def test_the_project_reads_the_new_attribute():
    """A comparison, an evaluation, their tables, the report and the CLI's table raise none of the project's
    deprecation warnings (every internal reader uses ``.confidence_interval``)."""
    from diversity_core.compare import compare
    from diversity_core.evaluation import evaluate
    from diversity_core.report import comparison_figures, report_html
    from diversity_core.report.figures.evaluation import evaluation_figures
    from diversity_core.robustness import _row

    rng = np.random.default_rng(0)
    groups = {"wide": rng.normal(size=(60, 4)), "narrow": 0.3 * rng.normal(size=(40, 4))}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=OWN_DEPRECATION, category=DeprecationWarning)
        cmp = compare(groups, reference="wide", rng=0, n_subsamples=4, n_resamples=4, magnitude_replicates=3,
                      n_scales=6)
        cmp.format_table(), cmp.format_pairwise(), cmp.table_rows(), cmp.pairwise_rows()
        cmp.to_csv(table="estimates"), cmp.to_csv(table="pairwise"), Comparison.from_json(cmp.to_json())
        cmp.pair(cmp.pairwise[0].score, cmp.pairwise[0].group_b, cmp.pairwise[0].group_a)
        _row(cmp, "features", "cosine", 1.0)
        R, G, T = rng.normal(size=(120, 4)), 1.2 * rng.normal(size=(100, 4)), rng.normal(size=(80, 4))
        ev = evaluate(R, G, train=T, prompts=rng.choice(["a", "b"], size=100), kid_subsets=4, kid_subset_size=30,
                      magnitude_n=40, rng=0)
        ev.table_rows(), ev.to_csv(), ev.to_json(), ev.memorization.headline()
        comparison_figures(cmp)
        evaluation_figures({"narrow": ev}, reference="wide")
        report_html(cmp, evaluations={"narrow": ev}, evaluation_reference="wide")
