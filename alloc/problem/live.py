"""The live state of a problem: the running jobs fixed where they run, the
pending jobs and the reasons of those that cannot be placed, and the free
capacities the running jobs leave.

With the previous problem of a scheduler loop (`alloc.carry`), a job that is
the very same object keeps what was derived for it and the free capacities
follow from the old ones and the difference: ``free' = free + sum(gone) -
sum(new)`` (per server for CPU and memory, per GPU for milli-GPU); the
result equals a fresh compile.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from ..memo import keep, recall
from ..model import MILLI
from .assign import Assign, GridPoint
from .index import ProblemIndex
from .placeable import placeable_reason
from .points import pareto_options


def _take(problem: ProblemIndex, assigns: Iterable[Assign], sign: int) -> None:
    """Add ``sign`` times the assignments' GPU shares, CPU and memory to the
    problem's free capacities (-1 takes, +1 gives back): element by element
    for a few entries (a scheduler loop's round: what changed), vectorised
    for many."""
    gi, gv, ci, cv, mi, mv = [], [], [], [], [], []
    for a in assigns:
        for g, m in a.gpus:
            gi.append(g)
            gv.append(m)
        for s, v in a.cpu:
            ci.append(s)
            cv.append(v)
        for s, v in a.mem:
            mi.append(s)
            mv.append(v)
    for arr, idx, val in ((problem.gpu_free, gi, gv), (problem.free_cpu, ci, cv),
                          (problem.free_mem, mi, mv)):
        if len(idx) <= _FEW:
            for i, v in zip(idx, val):
                arr[i] += sign * v
        else:
            np.add.at(arr, np.asarray(idx, dtype=np.int64), sign * np.asarray(val, dtype=np.int64))


#: Entries up to which `_take` adds one by one (numpy's call costs more).
_FEW = 32


class LiveState(ProblemIndex):
    """The running jobs, the pending ones and the free capacities (see the
    module notes)."""

    def _set_live_state(self, previous: "LiveState | None" = None) -> None:
        """Options, running jobs fixed, pending jobs and reasons, free capacities.

        With ``previous`` (the last problem compiled with the carry, on this
        cluster) a job that is the very same object as there keeps what was
        derived for it, and the free capacities are the old ones with the
        running jobs gone given back and the new ones taken
        (`alloc.carry.Changes`); the result equals a fresh compile."""
        jobs, cluster = self.jobs, self.cluster
        self.fixed: dict[int, Assign] = {}
        self.reasons: dict[int, str] = {}
        self.options: list[tuple[GridPoint, ...]] = []
        fixed, reasons, options = self.fixed, self.reasons, self.options
        pending: list[int] = []
        added: list[int] = []
        kept: dict[int, int] = {}
        seen = cluster.__dict__.setdefault("_placeable", {})   # shape -> (profile, reason)
        if len(seen) > 4096:
            seen.clear()
        pidx = previous.job_index if previous is not None else {}
        pjobs = previous.jobs if previous is not None else ()
        pfixed = previous.fixed if previous is not None else {}
        preasons = previous.reasons if previous is not None else {}
        popts = previous.options if previous is not None else ()
        get_k, get_a, get_why = pidx.get, pfixed.get, preasons.get
        add_option, add_pending, current = options.append, pending.append, self.current_assign
        for j, job in enumerate(jobs):
            k = get_k(job.id)
            if k is not None and pjobs[k] is job:        # the very same job: what it had
                add_option(popts[k])
                if job.current is None:
                    why = get_why(k)
                else:
                    a = get_a(k)
                    if a is None:
                        fixed[j] = current(j)
                        added.append(j)
                    else:
                        fixed[j] = a
                        kept[j] = k
                    continue
            else:
                add_option(pareto_options(job))
                if job.current is not None:
                    fixed[j] = current(j)
                    added.append(j)
                    continue
                key = (id(job.profile), job.gpus, job.gpu_milli, job.cpu, job.mem, job.min_gpus,
                       job.max_gpus, job.gpu_types, job.locality)
                hit = seen.get(key)
                if hit is None or hit[0] is not job.profile:
                    hit = seen[key] = (job.profile, placeable_reason(cluster, job))
                why = hit[1]
            if why is None:
                add_pending(j)
            else:
                reasons[j] = why
        self.running = tuple(fixed)     # ascending: fixed is filled in job order
        self.pending = tuple(pending)
        if previous is None:
            self.changes = None
            self.free_cpu = self.srv_cpu.copy()
            self.free_mem = self.srv_mem.copy()
            self.gpu_free = np.full(self.G, MILLI, dtype=np.int64)
            _take(self, fixed.values(), -1)
            return
        gone = pfixed.keys() - kept.values() if len(kept) < len(pfixed) else ()
        removed = tuple((k, pjobs[k], pfixed[k]) for k in sorted(gone))
        from ..carry import Changes
        self.changes = Changes(previous.stamp, tuple(added), removed, kept)
        self.free_cpu = previous.free_cpu.copy()
        self.free_mem = previous.free_mem.copy()
        self.gpu_free = previous.gpu_free.copy()
        _take(self, [a for _, _, a in removed], 1)
        _take(self, [fixed[j] for j in added], -1)

    def current_assign(self, j: int) -> Assign:
        """The running job ``j``'s current placement in index form."""
        c = self.cluster
        cur = self.jobs[j].current
        assert cur is not None, "a running job"
        a: Assign | None = recall(cur, "assign", (c,))
        if a is None:
            caps = tuple((g.mem, g.compute) for g in cur.gpus)
            a = Assign(tuple((c.gpu_index[g.gpu], g.milli) for g in cur.gpus),
                       tuple(sorted((c.server_index[s], v) for s, v in cur.cpu.items())),
                       tuple(sorted((c.server_index[s], v) for s, v in cur.mem.items())),
                       caps if any(x != (None, None) for x in caps) else ())
            keep(cur, "assign", (c,), a)
        return a

    @property
    def moves_allowed(self) -> bool:
        """True when the call lets running jobs move."""
        return self.max_moves is None or self.max_moves > 0

    def servers_of(self, a: Assign) -> set[int]:
        """Server indices an assignment uses (its GPUs', CPU's and memory's)."""
        out = {s for s, _ in a.cpu} | {s for s, _ in a.mem}
        out.update(int(self.gpu_server[g]) for g, _ in a.gpus)
        return out
