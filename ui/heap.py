"""The server process's heap: garbage collection that walks only what the sessions made.

A Streamlit server that has imported NumPy, SciPy, scikit-learn, pandas and plotly holds about
280,000 objects tracked by the garbage collector, nearly all of them modules, classes and functions
that live as long as the process. A full collection walks them all (0.18-0.2 s on the 2-core
development machine) and holds the GIL meanwhile, stalling every session. ``.streamlit/config.toml``
turns off Streamlit's collection after every run (``runner.postScriptGC``); :func:`settle` moves the
objects alive after the first page run into the collector's permanent generation
(:func:`gc.freeze`), so the collections Python still makes on its own walk only the objects made
since: the sessions' data, figures and caches. Reference counting frees those as before; only a
reference cycle that was already garbage at the freeze is kept, once.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_settled = False


def settle() -> bool:
    """Freeze the objects alive now into the permanent generation, once per process (``app.py``,
    after the first page run); True when this call froze them."""
    global _settled
    with _lock:
        if _settled:
            return False
        gc.freeze()
        _settled = True
        return True
