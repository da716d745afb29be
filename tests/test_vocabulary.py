"""One name for the orders in diversity_core.approx (issue 39 item 8): ``q``, with ``qs`` a deprecated alias."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import diversity_core.approx as approx
from diversity_core._deprecation import UNSET
from diversity_core.exceptions import DiversityInputError


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
