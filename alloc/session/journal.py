"""An undo journal: the events between two rounds are applied atomically.

Every change a [`Session`][alloc.session.Session] makes to its state goes through
`Journal.record`, which keeps a function restoring the previous value.
`Journal.transaction` runs a batch of events; when one fails, the
recorded functions run in reverse order and the state is what it was before
the batch (an O(changes) rollback, nothing is copied up front).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


class Journal:
    """Undo functions of the current transaction (none outside one)."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] | None = None

    @property
    def active(self) -> bool:
        """True inside `transaction`."""
        return self._undo is not None

    def record(self, undo: Callable[[], None]) -> None:
        """Remember how to restore one change (ignored outside a transaction)."""
        if self._undo is not None:
            self._undo.append(undo)

    @contextmanager
    def transaction(self, after_rollback: Callable[[], None] | None = None) -> Iterator[None]:
        """All changes made inside, or none of them.

        Parameters
        ----------
        after_rollback : callable, optional
            Runs once after a rollback (to restore orders that re-insertion
            into a dict does not keep).

        Nested transactions join the outer one.
        """
        if self._undo is not None:
            yield
            return
        self._undo = []
        try:
            yield
        except BaseException:
            undo, self._undo = self._undo, None
            for fn in reversed(undo):
                fn()
            if undo and after_rollback is not None:
                after_rollback()
            raise
        self._undo = None


__all__ = ["Journal"]
