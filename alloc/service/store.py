"""Sessions held by the service: one lock per session.

Requests to one session run one at a time (its lock); requests to different
sessions run in parallel.  The store's own lock guards only the id table.

A session not used for ``idle_s`` seconds (no request naming it) expires: it
is dropped the next time the store is asked to add or list sessions, and a
later request naming it gets "unknown session ... (expired ...)".  A session
in use never expires.
"""
from __future__ import annotations

import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..session import Session


class UnknownSession(LookupError):
    """No session has this id (never created, or deleted)."""


class TooManySessions(RuntimeError):
    """The store is full."""


@dataclass
class Entry:
    """A session, its lock and bookkeeping."""
    id: str
    session: Session
    lock: threading.Lock = field(default_factory=threading.Lock)
    created: float = field(default_factory=time.time)
    closed: bool = False
    used: float = 0.0  # the store's clock at the last request naming it
    ranker: Any = None  # ranks the jobs with an order policy before each round


class SessionStore:
    """Sessions by id (at most ``max_sessions`` at once; idle ones expire).

    Parameters
    ----------
    max_sessions : int
        Sessions held at once; one more is refused (`TooManySessions`).
    idle_s : float or None
        Seconds without a request after which a session expires (None: never).
    clock : callable
        Monotonic seconds (`time.monotonic`; a test may pass its own).
    """

    def __init__(self, max_sessions: int = 256, idle_s: float | None = 3600.0,
                 clock=time.monotonic):
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._expired: dict[str, None] = {}  # recent expired ids, for the message

    def add(self, session: Session, ranker: Any = None) -> str:
        """Keep ``session`` (and the `alloc.sched.views.Ranker` of its order
        policy, if any); returns its new id."""
        with self._lock:
            self._expire()
            if len(self._entries) >= self.max_sessions:
                raise TooManySessions(f"too many sessions ({self.max_sessions}); delete one "
                                      f"first")
            sid = secrets.token_urlsafe(9)
            self._entries[sid] = Entry(sid, session, used=self._clock(), ranker=ranker)
            return sid

    def ids(self) -> list[str]:
        """Ids of the sessions, oldest first."""
        with self._lock:
            self._expire()
            return list(self._entries)

    def _expire(self) -> None:
        """Drop the sessions idle for over ``idle_s`` (the store's lock held)."""
        if self.idle_s is None:
            return
        now = self._clock()
        for sid, e in list(self._entries.items()):
            if now - e.used > self.idle_s and e.lock.acquire(blocking=False):
                try:
                    e.closed = True
                    del self._entries[sid]
                    self._expired[sid] = None
                finally:
                    e.lock.release()
        while len(self._expired) > 4 * self.max_sessions:
            self._expired.pop(next(iter(self._expired)))

    def _unknown(self, sid: str) -> UnknownSession:
        why = f" (expired after {self.idle_s:g} s idle)" if sid in self._expired else ""
        return UnknownSession(f"unknown session {sid[:64]!r}{why}")

    def _entry(self, sid: str) -> Entry:
        with self._lock:
            e = self._entries.get(sid)
            if e is not None and self.idle_s is not None and \
                    self._clock() - e.used > self.idle_s:
                self._expire()
                e = self._entries.get(sid)
        if e is None:
            raise self._unknown(sid)
        return e

    @contextmanager
    def use(self, sid: str) -> Iterator[Session]:
        """The session ``sid``, locked for the duration of the block."""
        e = self._entry(sid)
        with e.lock:
            if e.closed:
                raise self._unknown(sid)
            try:
                yield e.session
            finally:
                e.used = self._clock()

    def ranker(self, sid: str) -> Any:
        """The ranker of session ``sid`` (None: the caller's order)."""
        return self._entry(sid).ranker

    def delete(self, sid: str) -> None:
        """Forget session ``sid`` (waits for a request using it to finish)."""
        e = self._entry(sid)
        with e.lock:
            if e.closed:
                raise self._unknown(sid)
            e.closed = True
            with self._lock:
                self._entries.pop(sid, None)


__all__ = ["Entry", "SessionStore", "TooManySessions", "UnknownSession"]
