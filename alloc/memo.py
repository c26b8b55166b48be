"""What the core derives from a placement, kept by the core beside it.

A scheduler loop hands the core the same running jobs round after round:
the same [`Job`][alloc.model.Job] objects, whose ``current`` is the same
[`Placement`][alloc.model.Placement] object, on the same
[`Cluster`][alloc.model.Cluster] object.  What the core derives from a
placement (its index form, the placement it rebuilds from it) is a pure
function of these frozen objects, so it is kept and given back while the
objects it was derived from are the same ones -- identity, not equality,
so that a hit costs no comparison.  A round then does per-running-job work
of a few dictionary lookups instead of rebuilding every placement.

The cache is the core's own: one table, ``{id(placement): (a weak reference
to it, {name: (weak references to the dependencies..., value)})}``.  The
placement stays a plain value (nothing is written on it); an entry goes
when its placement is freed (the weak reference's callback), and holds its
dependencies weakly, so it keeps nothing alive.  The final check
([`alloc.check`][alloc.check]) never reads it.
"""
from __future__ import annotations

import weakref
from dataclasses import fields
from operator import attrgetter
from typing import Any, Callable

#: ``{id(obj): (weak reference to obj, {name: (weak refs of the deps..., value)})}``
_TABLE: dict[int, tuple[weakref.ref[Any], dict[str, tuple[Any, ...]]]] = {}
#: Stands for the placement itself as a kept value (a strong reference to
#: it from the table would keep it alive).
_SELF = object()


def _gone(key: int) -> Callable[[weakref.ref[Any]], None]:
    """The callback of the weak reference kept under ``key``: the entry goes
    with its object."""
    def gone(ref: weakref.ref[Any]) -> None:
        hit = _TABLE.get(key)
        if hit is not None and hit[0] is ref:
            del _TABLE[key]
    return gone


def entries(obj: Any) -> dict[str, tuple[Any, ...]] | None:
    """What is kept for ``obj`` (``{name: (weak refs of the deps..., value)}``),
    or None: for tests that corrupt the cache."""
    hit = _TABLE.get(id(obj))
    if hit is None or hit[0]() is not obj:
        return None
    return hit[1]


def remembered(obj: Any, name: str, deps: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """``make()``, computed once per ``deps`` and kept for ``obj``.

    Parameters
    ----------
    obj : object
        A frozen object that supports weak references (a placement) that the
        value describes.
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

    Examples
    --------
    >>> from alloc import Placement
    >>> p, dep = Placement("a"), Placement("b")
    >>> remembered(p, "n", (dep,), lambda: 1), remembered(p, "n", (dep,), lambda: 2)
    (1, 1)
    >>> remembered(p, "n", (Placement("b"),), lambda: 3)     # another object: made again
    3
    """
    hit = recall(obj, name, deps)
    if hit is not None:
        return hit
    value = make()
    keep(obj, name, deps, value)
    return value


def recall(obj: Any, name: str, deps: tuple[Any, ...]) -> Any:
    """The value kept for ``obj`` under ``name`` for these very ``deps``, or None."""
    store = entries(obj)
    if store is None:
        return None
    hit = store.get(name)
    if hit is None or len(hit) != len(deps) + 1:
        return None
    for a, b in zip(hit, deps):
        if a() is not b:
            return None
    v = hit[-1]
    return obj if v is _SELF else v


def recall2(obj: Any, name: str, a: Any, b: Any) -> Any:
    """`recall` for two dependencies ``(a, b)`` (the hot path of a scheduler
    loop: one call per running job and round).  An entry under ``id(obj)``
    is ``obj``'s: the weak reference's callback removes it when ``obj`` is
    freed, before its id can be reused."""
    hit = _TABLE.get(id(obj))
    if hit is not None:
        kept = hit[1].get(name)
        if kept is not None and len(kept) == 3 and kept[0]() is a and kept[1]() is b:
            v = kept[2]
            return obj if v is _SELF else v
    return None


def keep(obj: Any, name: str, deps: tuple[Any, ...], value: Any) -> None:
    """Keep ``value`` (not None) for ``obj`` under ``name`` for ``deps``."""
    key = id(obj)
    hit = _TABLE.get(key)
    if hit is None or hit[0]() is not obj:
        ref = weakref.ref(obj, _gone(key))
        hit = _TABLE[key] = (ref, {})
    hit[1][name] = (*map(weakref.ref, deps), _SELF if value is obj else value)


def forget(obj: Any, name: str) -> None:
    """Drop what is kept for ``obj`` under ``name`` (nothing if none)."""
    store = entries(obj)
    if store is not None:
        store.pop(name, None)


_FIELDS: list[Any] = []


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
    return bool(a.profile is b.profile and get(a) == get(b))


def drop_all(obj: Any) -> None:
    """Drop everything kept for ``obj`` (a scheduler loop drops what it kept
    for a placement that is no longer a live job's ``current``: the values
    it holds go at once)."""
    hit = _TABLE.get(id(obj))
    if hit is not None and hit[0]() is obj:
        del _TABLE[id(obj)]


__all__ = ["drop_all", "entries", "forget", "keep", "recall", "recall2", "remembered",
           "same_but_current"]
