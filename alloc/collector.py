"""The cyclic garbage collector held off while the core answers a call.

A call of the core (`alloc.allocate`, a session's round) allocates many
short-lived objects, so CPython's cyclic collector runs again and again
during it, and each of its older-generation passes walks every tracked
object of the process: the caller's cluster and jobs, a loop's running
jobs and their placements.  None of that is the call's garbage.  The core
leaves no reference cycles behind (a placement's kept values are dropped
with it, `alloc.memo.drop_all`; a solver's state holds no cycle once it
returns), so what the call frees is freed by reference counting as it goes,
and the collector's passes during the call find nothing of the call's.

[`paused`][alloc.collector.paused] turns automatic collection off for the
duration of a call and back on at its end (only if it was on when the first
pause began: a caller that turned it off keeps it off).  Nested and
concurrent calls (threads of the HTTP service) share one count: the
collector comes back when the last of them ends.  The objects the call
made and kept are counted by the collector as usual, so the first
collection after the call examines them (the young generation only,
unless the usual thresholds ask for more).  `gc.collect()` works as
always.

Exact solvers build integer models for seconds, and some engines' models
leave cyclic garbage, so the core keeps the collector on around an exact
solver's call.  The configuration model's driver, whose CP-SAT models are
built without reference cycles (`alloc.kernel.cpsat`), pauses it for its
own solve (`alloc.engines.configuration.driver.solve_exact`).
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_LOCK = threading.Lock()
#: [calls inside a pause, whether the collector was on when the first began]
_STATE = [0, False]


@contextmanager
def paused(hold: bool = True) -> Iterator[None]:
    """Automatic cyclic collection off inside the block (see the module notes).

    Parameters
    ----------
    hold : bool
        False: the block runs with the collector as it is (the core passes
        False for exact solvers, whose models, built for many seconds, leave
        cyclic garbage that the collector should free as they go).

    Examples
    --------
    >>> import gc
    >>> from alloc.collector import paused
    >>> was = gc.isenabled()
    >>> with paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled() == was
    True
    """
    if not hold:
        yield
        return
    with _LOCK:
        if _STATE[0] == 0:
            _STATE[1] = gc.isenabled()
            gc.disable()
        _STATE[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _STATE[0] -= 1
            if _STATE[0] == 0 and _STATE[1]:
                gc.enable()


__all__ = ["paused"]
