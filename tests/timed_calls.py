"""Deadline checks for the tests: a call keeps its deadline when it returns
within `alloc.deadline.allowance` (``limit * 1.1 + 0.5`` seconds of
wall-clock time, what `alloc.testing.conformance` checks on every solver).

A late call is timed again, up to ``tries`` times in all, and the check
fails only when every call is late.  A solver that overruns its deadline
does so on every call of the same input (the phases and their clock checks
are the same); a call made late once by the machine -- another process
holding the cores, a pause of the host -- is on time when timed again.
The walls of every call are in the failure's message, with the answer's
phase times where the solver reports them."""
from __future__ import annotations

import time
from typing import Any, Callable

from alloc.deadline import allowance


def _phases(answer: Any) -> dict:
    stats = getattr(answer, "stats", None) or {}
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()
            if k.startswith("t_") or k in ("model", "timed_out", "stopped")}


def timed(call: Callable[[], Any], limit: float, tries: int = 3) -> tuple[Any, list[str]]:
    """Run ``call`` until one run is within `allowance` (at most ``tries``
    runs); return its answer and, when every run was late, one line per run
    with its wall and phases (empty when a run was on time)."""
    late = []
    for _ in range(tries):
        t0 = time.perf_counter()
        answer = call()
        wall = time.perf_counter() - t0
        if wall <= allowance(limit):
            return answer, []
        late.append(f"{wall:.2f} s for a limit of {limit} s: {_phases(answer)}")
    return answer, late
