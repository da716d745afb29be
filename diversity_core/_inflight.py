"""One computation per key in flight: the caches of the core and of the app share this rule.

Threads asking for a missing key while another computes it wait for that result instead of
computing it again. When the first computation fails with an error, the waiting threads raise
the same error (a second try would fail the same way); when it is stopped otherwise
(``KeyboardInterrupt``, a Streamlit rerun), the next waiting thread computes. A thread that
asks again for the key it is computing (a re-entrant call) computes rather than deadlocks.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Hashable, Optional

#: What ``lookup`` returns on a miss (None can be a cached value).
MISSING = object()


class Flight:
    """A computation in progress: the thread computing it, then its value or its exception."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.value: Any = None
        self.error: Optional[BaseException] = None


def compute_once(key: Hashable, lock: threading.Lock, flights: dict, lookup: Callable[[], Any],
                 compute: Callable[[], Any], store: Callable[[Any], None]) -> Any:
    """The value of ``key``: ``lookup()`` (under ``lock``), else ``compute()`` once, then ``store(value)``.

    ``flights`` maps the keys being computed to their :class:`Flight` (guarded by ``lock``);
    ``lookup`` returns :data:`MISSING` on a miss.
    """
    while True:
        with lock:
            value = lookup()
            if value is not MISSING:
                return value
            flight = flights.get(key)
            leader = flight is None
            if leader:
                flight = flights[key] = Flight()
        if leader:
            break
        if flight.owner == threading.get_ident():  # a re-entrant call: computing beats a deadlock
            return compute()
        flight.done.wait()
        if flight.error is None:
            return flight.value
        if isinstance(flight.error, Exception):
            raise flight.error
        # the first thread was stopped (a rerun or Cancel): the next one in line computes
    try:
        value = compute()
        store(value)
        flight.value = value
        return value
    except BaseException as exc:
        flight.error = exc
        raise
    finally:
        with lock:
            if flights.get(key) is flight:
                del flights[key]
        flight.done.set()
