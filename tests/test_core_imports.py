"""The compute core must import and compute without Streamlit (the app is one client of many)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_core_imports_with_streamlit_blocked():
    code = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "streamlit" or name.startswith("streamlit."):
                    raise ImportError("streamlit is blocked in this test")
                return None

        sys.meta_path.insert(0, Block())
        import pkgutil
        import diversity_core
        for mod in pkgutil.walk_packages(diversity_core.__path__, "diversity_core."):
            if not mod.name.endswith("__main__"):
                __import__(mod.name)
        import numpy as np
        print(diversity_core.vendi_score(np.eye(5)))
        assert not any(m == "streamlit" or m.startswith("streamlit.") for m in sys.modules)
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert abs(float(res.stdout.strip().splitlines()[-1]) - 5.0) < 1e-12


def test_public_api_is_documented():
    import diversity_core

    for name in diversity_core.__all__:
        obj = getattr(diversity_core, name)
        if callable(obj) and not isinstance(obj, type):
            assert obj.__doc__, f"{name} has no docstring"


#: Every optional dependency (an extra of the distribution), blocked to mimic ``pip install .`` alone.
OPTIONAL = ("streamlit", "torch", "rdkit", "PIL", "plotly", "jinja2", "kaleido", "umap", "pynndescent",
            "sentence_transformers", "dask", "distributed", "efficientnet_lite_pytorch")

BLOCKER = textwrap.dedent(
    f"""
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {OPTIONAL!r}:
                raise ImportError(f"{{name}} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    """
)


def test_core_and_cli_work_without_optional_dependencies(tmp_path):
    """The core alone (``pip install diversity-explorer``) scores and compares embeddings from the CLI."""
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, rng.normal(size=(60, 8)))
    np.save(b, rng.normal(size=(60, 8)) * [1, 1, 1, 1, 0, 0, 0, 0])
    for args in (["score", str(a)], ["compare", str(a), str(b), "--n-subsamples", "10", "--no-magnitude"]):
        code = BLOCKER + f"from diversity_core.cli import main\nsys.exit(main({args!r}))\n"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "VS_1" in res.stdout


def test_missing_extra_is_named(tmp_path):
    """Asking for an optional feature without its extra exits 2 naming the extra to install."""
    code = BLOCKER + "from diversity_core.cli import main\nsys.exit(main(['inspect', 'demo:molecules']))\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2, res.stderr
    assert "diversity-explorer[molecules]" in res.stderr
