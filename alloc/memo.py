"""What the core derives from a placement, kept on the placement.

A scheduler loop hands the core the same running jobs round after round:
the same [`Job`][alloc.model.Job] objects, whose ``current`` is the same
[`Placement`][alloc.model.Placement] object, on the same
[`Cluster`][alloc.model.Cluster] object.  What the core derives from a
placement (its index form, the placement it rebuilds from it, its own
checks) is a pure function of these frozen objects, so it is kept on the
placement and given back while the objects it was derived from are the same
ones -- identity, not equality, so that a hit costs no comparison.  A round
then does per-running-job work of a few dictionary lookups instead of
rebuilding and re-checking every placement.

The memo lives in the placement's ``__dict__`` under `SLOT`; it takes
no part in equality, hashing, pickling or copying.
"""
from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any, Callable

#: The attribute that holds an object's memo.
SLOT = "_memo"


def remembered(obj: Any, name: str, deps: tuple, make: Callable[[], Any]) -> Any:
    """``make()``, computed once per ``deps`` and kept on ``obj``.

    Parameters
    ----------
    obj : object
        A frozen object with a ``__dict__`` (a placement) that the value
        describes.
    name : str
        What is kept (one entry per name).
    deps : tuple
        The other objects the value depends on; the kept value is given back
        only while each of them is the very same object (``is``).
    make : callable
        Computes the value from ``obj`` and ``deps`` alone (a pure function
        of frozen objects).

    Returns
    -------
    object
        The kept or the new value.
    """
    hit = recall(obj, name, deps)
    if hit is not None:
        return hit
    value = make()
    keep(obj, name, deps, value)
    return value


def recall(obj: Any, name: str, deps: tuple) -> Any:
    """The value kept on ``obj`` under ``name`` for these very ``deps``, or None."""
    store = obj.__dict__.get(SLOT)
    if store is None:
        return None
    hit = store.get(name)
    if hit is None or len(hit) != len(deps) + 1:
        return None
    for a, b in zip(hit, deps):
        if a is not b:
            return None
    return hit[-1]


def recall2(obj: Any, name: str, a: Any, b: Any) -> Any:
    """`recall` for two dependencies ``(a, b)`` (the hot path of a scheduler
    loop: one call per running job and round)."""
    store = obj.__dict__.get(SLOT)
    if store is not None:
        hit = store.get(name)
        if hit is not None and len(hit) == 3 and hit[0] is a and hit[1] is b:
            return hit[2]
    return None


def keep(obj: Any, name: str, deps: tuple, value: Any) -> None:
    """Keep ``value`` (not None) on ``obj`` under ``name`` for ``deps``."""
    store = obj.__dict__.get(SLOT)
    if store is None:
        store = {}
        object.__setattr__(obj, SLOT, store)
    store[name] = (*deps, value)         # one tuple: the dependencies, then the value


def forget(obj: Any, name: str) -> None:
    """Drop what is kept on ``obj`` under ``name`` (nothing if none)."""
    store = obj.__dict__.get(SLOT)
    if store is not None:
        store.pop(name, None)


_FIELDS: list = []


def same_but_current(a: Any, b: Any) -> bool:
    """Two jobs equal in every field but ``current`` (the profile the same
    object): what the core derives for a job's placement alone does not read
    ``current``, so a job that started keeps what was derived for it while
    it waited."""
    if not _FIELDS:
        _FIELDS.append(attrgetter(*(f.name for f in fields(a)
                                    if f.name not in ("current", "profile"))))
    if a is b:
        return True
    get = _FIELDS[0]
    return a.profile is b.profile and get(a) == get(b)


def drop_all(obj: Any) -> None:
    """Drop everything kept on ``obj``.

    A kept value names the objects it was derived from, the job among them,
    and the job holds the placement as its ``current``: a cycle, which only
    the garbage collector frees.  A scheduler loop drops the memo of a
    placement that is no longer a live job's ``current`` (the job left, or
    runs elsewhere now), so that the job and what was derived for it are
    freed as soon as nothing else holds them."""
    obj.__dict__.pop(SLOT, None)


def without_memo(state: dict) -> dict:
    """An object's ``__dict__`` without its memo (for pickling and copying)."""
    return {k: v for k, v in state.items() if k != SLOT} if SLOT in state else state


__all__ = ["SLOT", "drop_all", "forget", "keep", "recall", "recall2", "remembered",
           "same_but_current", "without_memo"]
