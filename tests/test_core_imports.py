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
