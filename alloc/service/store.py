"""Sessions held by the service: one lock per session.

Requests to one session run one at a time (its lock); requests to different
sessions run in parallel.  The store's own lock guards only the id table.
"""
from __future__ import annotations

import secrets
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

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


class SessionStore:
    """Sessions by id (at most ``max_sessions`` at once)."""

    def __init__(self, max_sessions: int = 256):
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}

    def add(self, session: Session) -> str:
        """Keep ``session``; returns its new id."""
        with self._lock:
            if len(self._entries) >= self.max_sessions:
                raise TooManySessions(f"too many sessions ({self.max_sessions}); delete one "
                                      f"first")
            sid = secrets.token_urlsafe(9)
            self._entries[sid] = Entry(sid, session)
            return sid

    def ids(self) -> list[str]:
        """Ids of the sessions, oldest first."""
        with self._lock:
            return list(self._entries)

    def _entry(self, sid: str) -> Entry:
        with self._lock:
            e = self._entries.get(sid)
        if e is None:
            raise UnknownSession(f"unknown session {sid[:64]!r}")
        return e

    @contextmanager
    def use(self, sid: str) -> Iterator[Session]:
        """The session ``sid``, locked for the duration of the block."""
        e = self._entry(sid)
        with e.lock:
            if e.closed:
                raise UnknownSession(f"unknown session {sid[:64]!r}")
            yield e.session

    def delete(self, sid: str) -> None:
        """Forget session ``sid`` (waits for a request using it to finish)."""
        e = self._entry(sid)
        with e.lock:
            if e.closed:
                raise UnknownSession(f"unknown session {sid[:64]!r}")
            e.closed = True
            with self._lock:
                self._entries.pop(sid, None)


__all__ = ["Entry", "SessionStore", "TooManySessions", "UnknownSession"]
