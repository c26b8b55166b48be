"""One deadline, passed down to every solver and every inner phase.

A [`Deadline`][alloc.deadline.Deadline] is an absolute point on the monotonic clock
(`time.perf_counter`).  ``allocate(..., time_limit=T)`` makes one and
hands it to the solver; the solver hands *shares* of it to its phases (warm
start, bounds, pricing, proof, decode) and every phase stops when its share is
spent.  The final check gets what is left.

``time_limit=None`` means `DEFAULT_TIME_LIMIT` seconds, for every solver.
A time limit that is not a positive finite number is refused with one line.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

#: Seconds a call may take when ``time_limit`` is None (every solver).
DEFAULT_TIME_LIMIT = 60.0


def allowance(time_limit: float) -> float:
    """Wall-clock seconds a call with ``time_limit`` may take, everything
    included (the solver, the answer's placements and the final check):
    ``time_limit * 1.1 + 0.5``, the bound every solver keeps and the
    conformance suite, the fuzzer and the deadline bench check.

    Examples
    --------
    >>> from alloc.deadline import allowance
    >>> allowance(1.0)
    1.6
    """
    return time_limit * 1.1 + 0.5

#: The open `watched` record of the running call (None outside one).
_CUT: ContextVar[list[bool] | None] = ContextVar("alloc_clock_cut", default=None)


@contextmanager
def watched() -> Iterator[list[bool]]:
    """Record whether any phase ran out of its time within the block.

    Yields a one-element list whose item turns True as soon as a
    [`Deadline`][alloc.deadline.Deadline] checked inside the block is found
    spent (``left() == 0`` or ``expired()``): the clock, not the input alone,
    then shaped the answer, and a faster or quieter machine may answer
    otherwise.

    Examples
    --------
    >>> with watched() as cut:
    ...     Deadline.after(60).expired()
    False
    >>> cut[0]
    False
    """
    box = [False]
    token = _CUT.set(box)
    try:
        yield box
    finally:
        _CUT.reset(token)


def _spent() -> None:
    box = _CUT.get()
    if box is not None:
        box[0] = True


def check_time_limit(time_limit: float | None, what: str = "time_limit") -> float:
    """The time limit in seconds (the default for None); ``ValueError`` with one
    line when it is not a positive finite number."""
    if time_limit is None:
        return DEFAULT_TIME_LIMIT
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)):
        raise ValueError(f"{what}: expected a positive number of seconds, got {time_limit!r}")
    t = float(time_limit)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"{what}: expected a positive number of seconds, got {time_limit!r}")
    return t


@dataclass(frozen=True)
class Deadline:
    """An absolute end time ``end`` (seconds of `time.perf_counter`).

    Parameters
    ----------
    start, end : float
        Creation time and end time on the ``perf_counter`` clock.

    Examples
    --------
    >>> d = Deadline.after(2.0)
    >>> 0 < d.left() <= 2.0
    True
    >>> d.share(0.25).left() <= 0.5 + 1e-3
    True
    """
    start: float
    end: float

    @classmethod
    def after(cls, seconds: float | None) -> "Deadline":
        """A deadline ``seconds`` from now (`DEFAULT_TIME_LIMIT` for None)."""
        now = time.perf_counter()
        return cls(now, now + check_time_limit(seconds))

    @classmethod
    def never(cls) -> "Deadline":
        """A deadline that does not expire (for offline tools and tests)."""
        now = time.perf_counter()
        return cls(now, math.inf)

    def left(self) -> float:
        """Seconds left (0 when expired)."""
        left = self.end - time.perf_counter()
        if left > 0.0:
            return left
        _spent()
        return 0.0

    def expired(self, margin: float = 0.0) -> bool:
        """True when fewer than ``margin`` seconds are left."""
        if time.perf_counter() < self.end - margin:
            return False
        _spent()
        return True

    def elapsed(self) -> float:
        """Seconds since the deadline was made."""
        return time.perf_counter() - self.start

    @property
    def total(self) -> float:
        """The whole budget in seconds."""
        return self.end - self.start

    def share(self, fraction: float) -> "Deadline":
        """A sub-deadline ending after ``fraction`` of the time left (0..1)."""
        now = time.perf_counter()
        left = max(0.0, self.end - now)
        if math.isinf(left):
            return Deadline(now, math.inf)
        return Deadline(now, now + max(0.0, min(1.0, fraction)) * left)

    def within(self, seconds: float) -> "Deadline":
        """A sub-deadline ending after at most ``seconds`` (never later than this one)."""
        now = time.perf_counter()
        return Deadline(now, min(self.end, now + max(0.0, seconds)))

    def until(self, end: float) -> "Deadline":
        """A sub-deadline ending at the absolute time ``end`` or earlier."""
        return Deadline(time.perf_counter(), min(self.end, end))

    def reserve(self, seconds: float) -> "Deadline":
        """This deadline minus ``seconds`` kept back for a later phase."""
        now = time.perf_counter()
        return Deadline(now, max(now, self.end - max(0.0, seconds)))


__all__ = ["DEFAULT_TIME_LIMIT", "Deadline", "allowance", "check_time_limit", "watched"]
