"""The first servers, in a fixed order, that can take a whole-GPU job alone.

Without bound cells and guaranteed jobs, the engine's search for a
whole-GPU job of ``n`` GPUs visits the servers with ``n`` GPUs of the job's
types in a fixed order (those GPUs, then index) and keeps the first 8 where
``n`` GPUs are idle (in one node of the job's inner locality level) and
the job's CPU and memory are free (`Engine._pick_first`).  A
[`Firsts`][alloc.engines.cells.first.Firsts] keeps, for one such shape, a
heap of the positions in that order of the servers that pass, caught up
from the engine's log of changed servers when it is asked: a server that
changed is tested again and pushed when it passes; an entry that no longer
passes is dropped when it surfaces.  So a query costs the changes since the
last one plus ``O(8 log S)``, and answers what testing every server gives.
"""
from __future__ import annotations

from heapq import heappop, heappush

import numpy as np


class Firsts:
    """One shape's passing servers in order (see the module notes).

    Parameters
    ----------
    eng : Engine
        The engine (its ``idle``, ``cpu``, ``mem`` and change log ``touched``).
    order : numpy.ndarray
        The servers of the shape in search order.
    n, cpu, mem : int
        GPUs, CPU (milli-cores) and memory (MiB) the job needs on one server.
    locality : str or None
        The job's inner locality level (switch, socket) or None.
    """

    def __init__(self, eng, order: np.ndarray, n: int, cpu: int, mem: int,
                 locality: str | None):
        self.eng, self.n, self.cpu, self.mem, self.loc = eng, n, cpu, mem, locality
        self.order = order
        self.seq = order.tolist()
        self.pos_of = {s: k for k, s in enumerate(self.seq)}
        self.build()

    def build(self) -> None:
        """Every passing server, from the engine's arrays (numpy)."""
        eng, o = self.eng, self.order
        have = eng.idle_per_server(self.loc)
        ok = (have[o] >= self.n) & (eng.cpu[o] >= self.cpu) & (eng.mem[o] >= self.mem)
        self.heap = np.flatnonzero(ok).tolist()       # positions, ascending: a heap
        self.live = set(self.heap)
        self.epoch, self.seen = eng.touched_epoch, len(eng.touched)

    def passes(self, s: int) -> bool:
        """Can server s take the job alone now?"""
        eng = self.eng
        have = eng.idle.item(s) if self.loc is None else eng.have(s, self.loc)
        return have >= self.n and eng.cpu.item(s) >= self.cpu and eng.mem.item(s) >= self.mem

    def first(self, k: int = 8) -> list[int]:
        """The first ``k`` passing servers in order."""
        log = self.eng.touched
        if self.epoch != self.eng.touched_epoch:      # the log was cleared
            self.build()
        elif self.seen < len(log):
            pos_of, live, heap = self.pos_of, self.live, self.heap
            for s in set(log[self.seen:]):
                at = pos_of.get(s)
                if at is not None and at not in live and self.passes(s):
                    live.add(at)
                    heappush(heap, at)
            self.seen = len(log)
        out: list = []
        taken: list = []
        heap, live, order = self.heap, self.live, self.seq
        while heap and len(out) < k:
            at = heappop(heap)
            s = order[at]
            if self.passes(s):
                out.append(s)
                taken.append(at)
            else:
                live.discard(at)
        for at in taken:
            heappush(heap, at)
        return out


__all__ = ["Firsts"]
