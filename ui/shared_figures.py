"""Figures built once per content and drawn by every session that asks for the same one.

The figure builders of :mod:`diversity_core.report.figures` make plotly figures, and plotly
validates every property it is given: a q-profile of five curves takes about 20 ms to build on
the development machine, and Streamlit's serialisation of a built figure another 5 ms (it copies
the validated objects). A q change on the Scores page draws three figures; ten people looking
at the same data at the same q would build the same thirty. :func:`figure` builds each once,
keeps its plotly JSON (a dict) in the ``drawings`` pool of :mod:`ui.cache` (shared by every
session, least recently used first out) under a digest of the builder and of everything it was
given, and returns for each call a new figure made from a copy of that JSON without validating
it again (``_validate=False``, as plotly itself sets its default template: the JSON came out of a
validated figure), about 1.5 ms in all.

The key is the content of the inputs, never a session: a session gets a shared figure only when
its own inputs would have built exactly that figure. Each caller gets its own figure object.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Callable, Optional

import numpy as np
import plotly.graph_objects as go

from diversity_core.store import array_digest

from .cache import pool

#: The figures kept: the ``drawings`` pool bounds them in bytes with the other drawings.
POOL = "drawings"


def _feed(h: Any, value: Any) -> None:
    """Add ``value`` to the digest ``h``: its type, then its content (arrays by their bytes)."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, np.ndarray):
        if value.dtype == object:
            h.update(f"nd:object:{value.shape};".encode())
            for item in value.flat:
                _feed(h, item)
        else:  # the result store's digest of dtype, shape and values
            h.update(f"nd:{array_digest(value)};".encode())
    elif isinstance(value, np.generic):
        _feed(h, value.item())
    elif isinstance(value, dict):
        h.update(f"dict:{len(value)};".encode())
        for k, v in value.items():  # insertion order: it is the order of curves and legends
            _feed(h, k)
            _feed(h, v)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}:{len(value)};".encode())
        for v in value:
            _feed(h, v)
    elif type(value).__module__.startswith("pandas") and hasattr(value, "to_numpy"):
        # a Series or an Index: its name and values (a DataFrame is not accepted: pass columns)
        h.update(f"pd:{type(value).__name__};".encode())
        _feed(h, getattr(value, "name", None))
        _feed(h, value.to_numpy())
    else:
        raise TypeError(f"cannot key a shared figure on a {type(value).__name__}")


def digest(*args: Any, **kwargs: Any) -> str:
    """A digest of positional and keyword arguments, by content (the key of a shared figure)."""
    h = hashlib.blake2b(digest_size=20)
    _feed(h, args)
    _feed(h, sorted(kwargs.items()))
    return h.hexdigest()


def _spec(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> dict:
    """The plotly JSON of ``builder(*args, **kwargs)``, from the pool or built (once) into it."""
    key = ("figure", builder.__module__, builder.__qualname__, digest(*args, **kwargs))
    # the pool hands out a shallow copy; callers get a deep one, so changing a figure leaves the pool's
    return copy.deepcopy(pool(POOL).get_or_compute(key, lambda: builder(*args, **kwargs).to_dict()))


def _unvalidated(spec: dict) -> Any:
    """A figure holding ``spec``, which came out of a validated figure (not validated again)."""
    return go.Figure(spec, _validate=False)


def figure(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``builder(*args, **kwargs)``, built once for every session with the same inputs.

    ``builder`` is a figure builder of :mod:`diversity_core.report.figures` (a pure function of
    its arguments); its arguments may be numbers, strings, numpy arrays, pandas Series and
    dicts, lists and tuples of them. Returns a new ``plotly.graph_objects.Figure`` equal to what
    the builder returns.
    """
    return _unvalidated(_spec(builder, *args, **kwargs))


def q_profile(profiles: Any, *, q: float, n: Optional[int] = None, **kwargs: Any) -> Any:
    """``q_profile_figure(profiles, q=q, n=n, **kwargs)``, its curves shared whatever q.

    The figure without q is built once per content; the chosen order's mark
    (:func:`~diversity_core.report.figures.q_profile_marker`) is added to a copy, so moving q
    to an order nobody drew yet builds nothing.
    """
    from diversity_core.report.figures import q_profile_figure, q_profile_marker

    spec = _spec(q_profile_figure, profiles, n=n, **kwargs)
    shape, label = q_profile_marker(q)
    layout = spec.setdefault("layout", {})
    layout.setdefault("shapes", []).append(shape)
    layout.setdefault("annotations", []).append(label)
    return _unvalidated(spec)
