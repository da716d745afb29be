"""A light core (issue 21, item 9): ``import diversity_core`` and ``diversity --help`` load nothing heavy.

The public names of :mod:`diversity_core` are imported on first use (PEP 562), and the CLI builds
its parser without importing the sub-commands, so both load none of :data:`HEAVY`. What is
checked is ``sys.modules`` in a fresh interpreter, not wall time (a loaded machine would make a
time limit flaky); ``python -X importtime -c "import diversity_core"`` shows what an import costs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

#: Modules that take a noticeable time to import, loaded only by the functions that use them.
HEAVY = ("sklearn", "pandas", "pyarrow", "torch", "rdkit", "scipy.sparse.linalg", "streamlit", "plotly", "dask")


def _loaded_after(code: str) -> list[str]:
    """The modules of :data:`HEAVY` in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return [m for m in res.stdout.strip().splitlines()[-1].split(",") if m] if res.stdout.strip() else []


def test_import_loads_nothing_heavy():
    assert _loaded_after("import diversity_core") == []


def test_help_loads_nothing_heavy():
    code = textwrap.dedent(
        """
        import contextlib, io
        from diversity_core.cli import main
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                main(["--help"])
            except SystemExit as exc:
                assert exc.code == 0, exc.code
        assert "score" in out.getvalue() and "curate" in out.getvalue()
        """
    )
    assert _loaded_after(code) == []


def test_public_names_still_resolve():
    """Lazy attributes: ``__all__``, ``dir()`` and ``from diversity_core import X`` work as before."""
    import diversity_core as dc

    assert set(dc.__all__) <= set(dir(dc))
    for name in dc.__all__:
        assert getattr(dc, name) is not None
    from diversity_core import Spectrum, compute_spectrum, vendi_score  # noqa: F401

    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        dc.not_a_name  # noqa: B018


def test_a_function_keeps_its_name_over_its_subpackage():
    """``diversity_core.compare`` is the function even when the subpackage was imported first."""
    code = textwrap.dedent(
        """
        import diversity_core.compare._api
        import diversity_core as dc
        assert callable(dc.compare) and not isinstance(dc.compare, type(dc)), dc.compare
        from diversity_core.compare import Comparison
        assert dc.Comparison is Comparison
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_submodules_are_attributes():
    import diversity_core as dc

    assert dc.magnitude.__name__ == "diversity_core.magnitude"
    assert dc.kernels.__name__ == "diversity_core.kernels"
    assert {"kernels", "spectrum", "magnitude", "data"} <= set(dir(dc))


def test_sub_command_help_lines_match_their_modules():
    """``diversity --help`` lists each sub-command with the help line its own parser gives."""
    from diversity_core.cli import COMMANDS, build_parser

    full = next(a for a in build_parser()._actions if a.dest == "command")
    stub = next(a for a in build_parser(())._actions if a.dest == "command")
    helps = {a.dest: a.help for a in full._choices_actions}
    assert helps == {a.dest: a.help for a in stub._choices_actions} == COMMANDS


def test_sub_command_is_found_past_option_values():
    """A global option's value that is also a command name (a folder called ``cache``) is not the command."""
    from diversity_core.cli import _chosen_command

    assert _chosen_command(["--cache-dir", "cache", "inspect", "x.npy"]) == ("inspect",)
    assert _chosen_command(["--memory-budget", "4G", "score", "--help"]) == ("score",)


def test_parquet_without_pyarrow_names_the_extra(tmp_path):
    """Reading a Parquet file without pyarrow raises MissingDependencyError naming ``[parquet]``.

    In a fresh interpreter with pyarrow blocked, so that no module of this session sees it missing.
    """
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")
    code = textwrap.dedent(
        f"""
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pyarrow":
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

        sys.meta_path.insert(0, Block())
        from diversity_core import load_dataset
        from diversity_core.exceptions import MissingDependencyError
        try:
            load_dataset({str(path)!r})
        except MissingDependencyError as exc:
            print(exc)
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "pip install 'diversity-explorer[parquet]'" in res.stdout
