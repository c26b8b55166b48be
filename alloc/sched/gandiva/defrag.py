r"""Gandiva's migration decisions (Xiao et al., OSDI'18, section 4.2.2), as
pure functions over server occupancy.

Defragmentation.  Among the servers that are not idle, take the one with the
most free GPUs (ties: the lowest index), provided it has at least
``threshold`` of them (the paper's experiments stop below 3 free GPUs out of
4).  Try to move every job on it to *other* non-idle servers that have fewer
free GPUs than it has, each job (largest first) to the fullest such server
that still holds it whole (no job is split over servers, so a move costs no
locality).  The server is emptied only if all its jobs find a place; either
way it is not taken again, and the loop goes on with the next one until no
candidate is left.  Every accepted move makes a source server idle, so the
loop ends after at most one pass over the servers.

Locality.  A job spread over several servers moves onto one server when one
can hold all its GPUs, counting the GPUs it already holds there as free for
it; best fit (the fullest such server), largest jobs first.
"""
from __future__ import annotations

from typing import Callable, Hashable, Mapping, Sequence, TypeVar

#: a job's key (the caller's: an index, an id)
K = TypeVar("K", bound=Hashable)

#: Free GPUs at which a non-idle server is emptied (the paper: 3 out of 4).
DEFRAG_THRESHOLD = 3


def defrag_moves(free: Sequence[int], jobs_on: Mapping[int, Sequence[tuple[K, int]]],
                 *, threshold: int = DEFRAG_THRESHOLD, blocked: frozenset = frozenset(),
                 allowed: Callable[[K, int], bool] | None = None
                 ) -> list[tuple[K, int, int]]:
    """Moves that empty lightly used servers onto fuller ones (see the module notes).

    Parameters
    ----------
    free : sequence of int
        Whole free GPUs per server index.
    jobs_on : mapping of int to sequence of (key, int)
        Per server, the movable jobs on it and their GPU counts.  A server
        with jobs that cannot move is in ``blocked`` (it may still receive).
    threshold : int
        A non-idle server is emptied only with at least this many free GPUs.
    blocked : frozenset of int
        Servers that are never emptied.
    allowed : callable, optional
        ``allowed(key, server)``: the job may run on that server (GPU type,
        CPU and memory); default: any.

    Returns
    -------
    list of (key, int, int)
        ``(job, from server, to server)``, in the order decided.
    """
    free = list(free)
    on = {s: list(v) for s, v in jobs_on.items() if v}
    busy = set(on) | set(blocked)
    ok = allowed or (lambda key, s: True)
    moves: list[tuple[K, int, int]] = []
    tried: set[int] = set()
    while True:
        src = [s for s in on if on[s] and s not in tried and s not in blocked
               and free[s] >= threshold]
        if not src:
            return moves
        s = max(src, key=lambda x: (free[x], -x))
        tried.add(s)
        trial = free[:]
        plan = []
        for key, k in sorted(on[s], key=lambda kv: -kv[1]):
            cands = [t for t in busy if t != s and trial[t] >= k and trial[t] < free[s]
                     and ok(key, t)]
            if not cands:
                break
            t = min(cands, key=lambda x: (trial[x], x))
            trial[t] -= k
            plan.append((key, k, t))
        if len(plan) < len(on[s]):
            continue
        for key, k, t in plan:
            moves.append((key, s, t))
            on.setdefault(t, []).append((key, k))
            trial[s] += k
        free = trial
        on[s] = []
        busy.discard(s)


def locality_moves(free: Sequence[int], spread: Sequence[tuple[K, int, Mapping[int, int]]],
                   allowed: Callable[[K, int], bool] | None = None
                   ) -> list[tuple[K, int]]:
    """Spread jobs moved onto one server (see the module notes).

    Parameters
    ----------
    free : sequence of int
        Whole free GPUs per server index.
    spread : sequence of (key, int, mapping)
        Jobs spread over servers: key, GPU count, GPUs held per server.
    allowed : callable, optional
        ``allowed(key, server)`` as for `defrag_moves`.

    Returns
    -------
    list of (key, int)
        ``(job, to server)``.
    """
    free = list(free)
    ok = allowed or (lambda key, s: True)
    out = []
    for key, k, held in sorted(spread, key=lambda x: -x[1]):
        cands = [t for t in range(len(free)) if free[t] + held.get(t, 0) >= k and ok(key, t)]
        if not cands:
            continue
        t = min(cands, key=lambda x: (free[x] + held.get(x, 0), x))
        for s, n in held.items():
            free[s] += n
        free[t] -= k
        out.append((key, t))
    return out


__all__ = ["DEFRAG_THRESHOLD", "defrag_moves", "locality_moves"]
