"""The caller's names for jobs and GPUs, and the session's own.

The core names jobs by strings and GPUs ``"<server>/gpu<k>"``.  A scheduler
may name its jobs by any hashable value (Blox uses integers) and its GPUs by
its own keys (a global GPU index, ``(node, local index)``).  A session keeps
both directions:

* a job id that is a string is used as it is (ids starting with ``"~"`` are
  the session's own); any other hashable id gets an internal name
  ``"~id:<n>"``, kept while the job is in the session;
* GPU keys come from the ``gpu_keys`` the session was given: a mapping from
  the core's GPU names to the caller's keys, or a function of the name (a
  GPU the mapping does not list keeps its name).

Every change goes through a journal's ``record`` (see
`alloc.session.journal.Journal`), so a rolled-back batch of events
forgets the names it added.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping

from ..errors import InputError
from ..validate import short_repr

#: Internal names of jobs whose id is not a string start with this.
ID_PREFIX = "~id:"


class JobIds:
    """Caller job ids <-> the core's string ids."""

    def __init__(self) -> None:
        self.to_core: dict[Hashable, str] = {}
        self.to_caller: dict[str, Hashable] = {}
        self.next = 0

    @property
    def mapped(self) -> bool:
        """True when some job has an id that is not a string."""
        return bool(self.to_core)

    def core(self, jid: Any) -> str | None:
        """The core's id of a known caller id (None if unknown or unhashable)."""
        if isinstance(jid, str):
            return jid
        try:
            return self.to_core.get(jid)
        except TypeError:
            return None

    def caller(self, cid: str) -> Hashable:
        """The caller's id of a core id."""
        return self.to_caller.get(cid, cid)

    def add(self, jid: Any, where: str, record: Callable) -> str:
        """The core id for a new caller id (a new internal name for a
        non-string one)."""
        if isinstance(jid, str):
            return jid
        try:
            hash(jid)
        except TypeError:
            raise InputError(f"{where}.id: expected a string or another hashable value, got "
                             f"{short_repr(jid)}") from None
        if jid is None or isinstance(jid, float) and jid != jid:
            raise InputError(f"{where}.id: expected a job id, got {short_repr(jid)}")
        cid = f"{ID_PREFIX}{self.next}"
        self.next += 1
        self.to_core[jid], self.to_caller[cid] = cid, jid

        def undo():
            del self.to_core[jid], self.to_caller[cid]
            self.next -= 1
        record(undo)
        return cid

    def drop(self, cid: str, record: Callable) -> None:
        """Forget a job's internal name (it left the session)."""
        jid = self.to_caller.pop(cid, None)
        if jid is None:
            return
        del self.to_core[jid]

        def undo():
            self.to_core[jid], self.to_caller[cid] = cid, jid
        record(undo)


class GpuKeys:
    """The core's GPU names <-> the caller's GPU keys."""

    def __init__(self, keys: Mapping | Callable | None):
        if keys is not None and not (isinstance(keys, Mapping) or callable(keys)):
            raise InputError(f"gpu_keys: expected a mapping from GPU names to keys or a "
                             f"function of the name, got {short_repr(keys)}")
        self.keys = keys
        self.back: dict = {}

    def caller(self, name: str) -> Hashable:
        """The caller's key of a GPU name."""
        k = self.keys
        if k is None:
            return name
        key = k.get(name, name) if isinstance(k, Mapping) else k(name)
        self.back[key] = name
        return key

    def core(self, key: Any, gpu_ids, where: str) -> str:
        """The GPU name of a caller's key (a GPU name is taken as it is)."""
        name = self.back.get(key) if _hashable(key) else None
        if name is None and self.keys is not None:
            for g in gpu_ids:
                if self.caller(g) == key:
                    name = g
                    break
        if name is None and isinstance(key, str) and key in gpu_ids:
            name = key
        if name is None:
            raise InputError(f"{where}: unknown GPU {short_repr(key)}")
        return name


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


__all__ = ["GpuKeys", "ID_PREFIX", "JobIds"]
