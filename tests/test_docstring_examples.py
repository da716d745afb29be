"""Every ``Examples`` section in the core's docstrings runs and prints what it says (doctest)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import diversity_core

#: Modules that run a program when imported.
SKIP = {"diversity_core.cli.__main__", "diversity_core.__main__"}
#: Modules whose examples need optional packages (skipped without them; the reason names the extra).
NEEDS = {
    "diversity_core.compat.vendi_molecules": ("rdkit",),
    "diversity_core.data.search": ("rdkit",),
    "diversity_core.featurizers": ("PIL",),
    "diversity_core.featurizers._api": ("PIL",),
    "diversity_core.featurizers.images": ("PIL",),
    "diversity_core.featurizers.molecules": ("rdkit",),
    "diversity_core.rnd._api": ("torch",),
    "diversity_core.robustness": ("PIL",),
}


def _modules() -> list:
    names = [diversity_core.__name__]
    for info in pkgutil.walk_packages(diversity_core.__path__, prefix="diversity_core."):
        if info.name not in SKIP:
            names.append(info.name)
    return [pytest.param(n, marks=pytest.mark.requires(*NEEDS[n])) if n in NEEDS else n for n in sorted(names)]


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):  # each example sees a copy of its module's globals
        if test.filename and not test.filename.endswith(".py"):
            continue
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (output above)"
