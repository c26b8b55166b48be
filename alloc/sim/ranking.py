r"""Ranking the queue incrementally, for orders whose waiting jobs keep their
key (`alloc.sched.KeyOrder` with ``static = True``: FIFO, SRTF, LAS, DRF,
Tetris).

A waiting job's full key ``(not starving, key, arrival, id)`` does not
change while it waits, except when it starts starving (Synergy's rule):
`Queue` keeps the waiting jobs sorted by it (inserted when they start
waiting, removed when they run, leave or are held) and re-keys a job when it
crosses the starvation threshold (a heap of the times they do).  Each round
only the running jobs are keyed again; the ranking is the merge of the two
sorted lists: the one a full sort gives (keys are unique: they end with the
id), at a cost that follows the running jobs and what changed, not the
queue's length.

Examples
--------
>>> from types import SimpleNamespace as J
>>> from alloc import Cluster
>>> from alloc.sched import Context
>>> from alloc.sched.orders.basic import Fifo
>>> from alloc.sim.ranking import Queue
>>> q = Queue(Fifo())
>>> ctx = Context(10.0, 1, Cluster(()))
>>> jobs = [J(id="b", arrival_s=5.0, running=False, last_run_s=5.0),
...         J(id="a", arrival_s=1.0, running=True, last_run_s=10.0)]
>>> [j.id for j in q.rank(jobs, ctx)]
['a', 'b']
"""
from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from typing import Any, Sequence

from ..sched.kinds import Context, KeyOrder


def incremental(order: Any) -> bool:
    """True when ``order`` ranks by a static key with `KeyOrder`'s own ``rank``."""
    return (isinstance(order, KeyOrder) and bool(getattr(order, "static", False))
            and type(order).rank is KeyOrder.rank)


class Queue:
    """The waiting jobs of a static `KeyOrder`, kept sorted (module notes).

    Two ways to use it: `rank` with the whole pool each time (it finds what
    changed), or `touch` each job whose state changed and `ranked` with the
    running jobs only (``member(job)`` says whether a touched job waits in
    the queue), whose cost follows what changed."""

    def __init__(self, order: KeyOrder, member: Any = None, frozen_member: Any = None) -> None:
        self.order = order
        #: an order whose keys never change (``frozen``) keeps running jobs sorted too
        self.frozen = bool(getattr(order, "frozen", False)) and frozen_member is not None
        self.member = frozen_member if self.frozen else member
        #: (full key, id, job) of the waiting jobs, sorted (keys are unique:
        #: a comparison never reaches the job)
        self.sorted: list[tuple] = []
        self.keys: dict[str, tuple] = {}   # id -> full key
        self.jobs: dict[str, Any] = {}
        self.starve: list[tuple[float, str]] = []
        self.touched: dict[str, Any] = {}

    def touch(self, job: Any) -> None:
        """``job`` may have started or stopped waiting, or changed its key."""
        self.touched[job.id] = job

    def ranked(self, running: Sequence[Any], ctx: Context):
        """The running jobs and the queue, merged in rank order (an iterator of
        ``(key, id, job)``; the touched jobs brought up to date first)."""
        member, keys = self.member, self.keys
        for jid, job in self.touched.items():
            if jid in keys:
                self._drop(jid)
            if member(job):
                self._add(job, ctx)
        self.touched.clear()
        self._starving(ctx)
        if self.frozen or not running:
            return iter(self.sorted)
        full = self.order.full_key
        run = sorted((full(j, ctx), j.id, j) for j in running)
        return heapq.merge(run, self.sorted)

    def _starving(self, ctx: Context) -> None:
        h, keys = self.starve, self.keys
        while h and h[0][0] < ctx.now_s:
            _, jid = heapq.heappop(h)
            if jid in keys and keys[jid][0]:
                job = self.jobs[jid]
                self._drop(jid)
                self._add(job, ctx)

    def _add(self, job: Any, ctx: Context) -> None:
        k = self.order.full_key(job, ctx)
        insort(self.sorted, (k, job.id, job))
        self.keys[job.id] = k
        self.jobs[job.id] = job
        if k[0] and not job.running:
            at = self.order.starving_at(job)
            if at is not None:
                heapq.heappush(self.starve, (at, job.id))

    def _drop(self, jid: str) -> None:
        k = self.keys.pop(jid)
        del self.sorted[bisect_left(self.sorted, (k, jid))]
        del self.jobs[jid]

    def rank(self, pool: Sequence[Any], ctx: Context) -> list:
        """``pool`` in rank order (the ranking a full sort gives)."""
        full = self.order.full_key
        waiting = {j.id: j for j in pool if not j.running}
        keys = self.keys
        for jid in [x for x in keys if x not in waiting or waiting[x] is not self.jobs[x]]:
            self._drop(jid)
        for jid, job in waiting.items():
            if jid not in keys:
                self._add(job, ctx)
        self._starving(ctx)
        run = sorted((full(j, ctx), j.id, j) for j in pool if j.running)
        return [j for _, _, j in heapq.merge(run, self.sorted)]


__all__ = ["Queue", "incremental"]
