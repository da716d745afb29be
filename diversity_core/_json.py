"""One JSON convention for every ``to_dict``: infinities as strings, NaN as null.

JSON has no infinity or NaN. Every result writes ``inf``/``-inf`` as the strings
``"inf"``/``"-inf"`` (an order q = inf, an unbounded interval) and a missing or undefined
number as ``null``; :func:`from_json_float` reads such a number back. numpy scalars and arrays
become Python numbers and lists, tuples become lists; :func:`dumps` writes the result and refuses
a bare NaN or infinity that escaped the conversion.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

import numpy as np

__all__ = ["to_jsonable", "from_json_float", "dumps"]


def to_jsonable(obj: Any) -> Any:
    """``obj`` as JSON-native types under the project's convention (see the module docstring)."""
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    return obj


def from_json_float(v: Any) -> float:
    """A float written by :func:`to_jsonable`: ``"inf"``/``"-inf"`` and ``None`` (NaN) back to floats."""
    if v is None:
        return math.nan
    if v == "inf":
        return math.inf
    if v == "-inf":
        return -math.inf
    return float(v)


def dumps(obj: Any, **kwargs) -> str:
    """``json.dumps`` of :func:`to_jsonable` output, refusing bare NaN/inf."""
    return json.dumps(to_jsonable(obj), allow_nan=False, **kwargs)
