"""Ranking and preemption rules: each job's rank (the caller's order, else
priority highest first, then input order), who may stop whom
([outranks][alloc.tenancy.outranks], or the order under
``preempt="order"``), the rule the final check applies to a stopped job
(`stopped_for`), and whether preemption can happen at all in a problem
(`preemption_possible`, linear in the jobs).
"""
from __future__ import annotations

from functools import cached_property
from typing import Any, Iterable, Sequence

import numpy as np

from .assign import Assign
from .live import LiveState


def order_ranks(order: Sequence[str] | None) -> dict[str, int] | None:
    """``{job id: position}`` of a ranked list of job ids (highest first), or None."""
    if order is None:
        return None
    return {jid: k for k, jid in enumerate(order)}


def _by_priority(neg: list[int]) -> list[int]:
    """Job indices by priority, highest first (``neg``: each one's negated
    priority), input order among equals (a stable sort)."""
    if not neg or min(neg) == max(neg):
        return list(range(len(neg)))
    return sorted(range(len(neg)), key=neg.__getitem__)


class Ranking(LiveState):
    """Ranks and the preemption rules (see the module notes)."""

    def _set_rank(self, order: Sequence[str] | None) -> None:
        jobs, J = self.jobs, self.J
        neg = [-j.priority for j in jobs]
        if order is None:
            self.explicit_order = False
            self.prio_key = neg
            ranked = _by_priority(neg)
        else:
            self.explicit_order = True
            pos = self.order_rank
            assert pos is not None          # an order was given
            get = pos.get
            at: list[Any] = [get(j.id) for j in jobs]   # place in the order, or None
            if None not in at:
                ranked = sorted(range(J), key=at.__getitem__)
            else:
                ranked = sorted((j for j in range(J) if at[j] is not None), key=at.__getitem__)
                ranked += [j for j in _by_priority(neg) if at[j] is None]
        self.rank = np.empty(J, dtype=np.int64)
        self.rank[np.asarray(ranked, dtype=np.int64)] = np.arange(J, dtype=np.int64)
        if order is not None:
            self.prio_key = self.rank.tolist()       # the job's place in ``ranked``

    def outranks(self, a: int, b: int) -> bool:
        """May job ``a`` stop running job ``b`` under this call's rule
        ([outranks][alloc.tenancy.outranks], by the order under ``preempt="order"``)?"""
        from ..tenancy import outranks
        rank = self.order_rank if self.preempt == "order" else None
        return outranks(self.jobs[a], self.jobs[b], rank)

    def stopped_for(self, r: int, assign: dict[int, Assign], fresh: Iterable[int]) -> bool:
        """Running job ``r`` may be stopped: a job of ``fresh`` outranks it
        (`outranks`) and is placed (``assign[i]``) on a server ``r`` held --
        the rule [violations][alloc.check.violations] checks."""
        held = None
        for i in fresh:
            if i == r or not self.outranks(i, r):
                continue
            if held is None:
                held = self.servers_of(self.current_assign(r))
            if held & self.servers_of(assign[i]):
                return True
        return False

    @cached_property
    def preemption_possible(self) -> bool:
        """True when the tenancy rules let some pending job stop a running one
        ([`alloc.tenancy.outranks`][alloc.tenancy.outranks]: a guaranteed job over an opportunistic
        one or over a lower-priority guaranteed job of its tenant; an
        opportunistic job over a lower-priority opportunistic one).  Linear in
        the jobs: the highest pending priority of each kind against the lowest
        running one."""
        if not self.running:
            return False
        if len({j.priority for j in self.jobs}) == 1 and \
                not any(self.jobs[j].guaranteed for j in self.pending):
            return False        # one priority and nothing guaranteed waits: nobody outranks
        low_opp: int | None = None
        low_gua: dict[str | None, int] = {}
        for r in self.running:
            job = self.jobs[r]
            if job.guaranteed:
                low_gua[job.tenant] = min(low_gua.get(job.tenant, job.priority), job.priority)
            else:
                low_opp = job.priority if low_opp is None else min(low_opp, job.priority)
        for j in self.pending:
            job = self.jobs[j]
            if job.guaranteed and (low_opp is not None or job.priority > low_gua.get(
                    job.tenant, job.priority)):
                return True
            if not job.guaranteed and low_opp is not None and job.priority > low_opp:
                return True
        return False
