"""Placements built from assignments: a job's GPUs, CPU and memory in index
form made into an [`Assign`][alloc.problem.Assign] (`make_assign`: CPU and
memory split over the servers in proportion to their GPUs), and an
assignment made into the [`Placement`][alloc.model.Placement] the answer
reports, throughput recomputed (`placement`, `placements`), a running job
kept where it runs reported by its own ``current`` placement.
"""
from __future__ import annotations

from typing import Sequence

from ..memo import forget, keep, recall, recall2, same_but_current
from ..model import GpuShare, Job, Placement
from ..objectives import throughput
from .assign import Assign, split
from .evaluate import Evaluation


#: The carry's key of the last round's placements of the running jobs kept
#: where they run: (the problem's stamp, {job index: job}, {job index: placement}).
KEPT = "problem.placements.kept"


class Building(Evaluation):
    """Assignments and placements (see the module notes)."""

    def make_assign(self, j: int, gpus: Sequence[int], option: int) -> Assign:
        """Job j on the given global GPU indices at an option, CPU and memory
        split over the servers in proportion to their GPUs."""
        job = self.jobs[j]
        opt = self.options[j][option]
        gpus = sorted(int(g) for g in gpus)
        per_server: dict[int, int] = {}
        for g in gpus:
            s = int(self.gpu_server[g])
            per_server[s] = per_server.get(s, 0) + 1
        servers = sorted(per_server)
        counts = [per_server[s] for s in servers]
        cpu = split(opt.cpu, counts)
        mem = split(opt.mem, counts)
        return Assign(tuple((g, job.gpu_milli) for g in gpus),
                      tuple(zip(servers, cpu)), tuple(zip(servers, mem)))

    def make_cpu_assign(self, j: int, server: int, option: int = 0) -> Assign:
        """A CPU-only job j on one server at an option."""
        opt = self.options[j][option]
        return Assign((), ((server, opt.cpu),), ((server, opt.mem),))

    def placement(self, j: int, a: Assign) -> Placement:
        """The [`Placement`][alloc.model.Placement] of job j, throughput recomputed
        (a running job kept where it runs: its ``current`` object itself when
        that is what the rebuilt placement equals, remembered on it)."""
        job = self.jobs[j]
        cur = job.current
        if cur is not None and (a is self.fixed.get(j) or a == self.current_assign(j)):
            p: Placement | None = recall2(cur, "placement", self.cluster, job)
            if p is None:
                p = self._rebuilt(job, cur, a)
                keep(cur, "placement", (self.cluster, job), p)
            return p
        p = self._build_placement(job, a)
        keep(p, "built", (self.cluster,), (job, a))
        return p

    def placements(self, order: Sequence[int], assign: dict[int, Assign]
                   ) -> tuple[list[Placement], list[str]]:
        """The placements of the jobs ``order`` at ``assign`` (each one's
        [`placement`][alloc.problem.Problem.placement]), and the ids of the
        running jobs among them placed elsewhere than they run (moved).

        A running job whose assignment is its ``fixed`` one (the very
        object) is where it runs: its ``fixed`` assignment is its current
        placement in index form, so the placement built from it has the same
        GPUs, shares, CPU and memory (``same_as`` holds) and is not compared
        again.  Its placement is the one this method gave last round for the
        very same job at the very same ``fixed`` assignment (a scheduler
        loop's carry: `Changes.kept` tells which), else the one kept on its
        ``current`` placement (`alloc.memo`) -- one lookup per running job
        and round.
        """
        jobs, fixed, cluster = self.jobs, self.fixed, self.cluster
        placement, out, moved = self.placement, [], []
        carry, ch = self.carry, self.changes
        last = carry.take(KEPT) if carry is not None else None
        was_job: dict[int, Job] = {}
        was: dict[int, Placement] = {}
        kept: dict[int, int] = {}
        if last is not None and ch is not None and last[0] == ch.since:
            was_job, was, kept = last[1], last[2], ch.kept
        now_job: dict[int, Job] = {}            # two maps, no pair per job: nothing for
        now: dict[int, Placement] = {}          # the collector to follow
        for j in order:
            a = assign[j]
            if a is fixed.get(j):
                job = jobs[j]
                k = kept.get(j, -1)
                if was_job.get(k) is job:
                    p = was[k]
                else:
                    p = recall2(job.current, "placement", cluster, job) or placement(j, a)
                out.append(p)
                now_job[j] = job
                now[j] = p
                continue
            p = placement(j, a)
            out.append(p)
            cur = jobs[j].current
            if cur is not None and not p.same_as(cur):
                moved.append(p.job)
        if carry is not None:
            carry.keep(KEPT, (self.stamp, now_job, now))
        return out, moved

    def _rebuilt(self, job: Job, cur: Placement, a: Assign) -> Placement:
        """The placement of running ``job`` on ``a`` (its current one in index
        form): ``cur`` itself when equal.  A placement this core built for
        the job while it waited (equal but for ``current``) from an equal
        assignment is what a rebuild gives, without rebuilding."""
        made = recall(cur, "built", (self.cluster,))
        if made is not None:
            forget(cur, "built")
            if made[1] == a and same_but_current(job, made[0]):
                return cur
        if cur.job == job.id:
            # ``a`` is ``cur`` in index form (`current_assign`): the placement
            # built from it has ``cur``'s GPUs in ``cur``'s order, its shares
            # and caps, CPU and memory, so it equals ``cur`` exactly when the
            # throughput recomputed from the same inputs is the reported one
            c = self.cluster
            tp = throughput(c, job, [g.gpu for g in cur.gpus], sum(cur.cpu.values()),
                            sum(cur.mem.values()))
            same = round(tp, 9) == cur.throughput
            if same and job.profile is not None and job.profile.goodput is not None:
                from ..objectives import goodput_speed
                same = goodput_speed(c, job, [g.gpu for g in cur.gpus])[1:] == \
                    (cur.batch, cur.accum)
            if same:
                return cur
        return self._build_placement(job, a)

    def _build_placement(self, job: Job, a: Assign) -> Placement:
        c = self.cluster
        ids, sids, shares = c.gpu_ids, self.arrays.server_ids, self.arrays.shares
        gids = [ids[g] for g, _ in a.gpus]
        cpu = {sids[s]: v for s, v in a.cpu}
        mem = {sids[s]: v for s, v in a.mem}
        tp = throughput(c, job, gids, sum(cpu.values()), sum(mem.values()))
        batch, accum = None, 0
        if job.profile is not None and job.profile.goodput is not None and gids:
            from ..objectives import goodput_speed
            _, batch, accum = goodput_speed(c, job, gids)
        gs = []
        for k, (g, m) in enumerate(a.gpus):
            if a.caps and a.caps[k] != (None, None):
                gs.append(GpuShare(ids[g], m, *a.caps[k]))
                continue
            sh = shares.get((g, m))
            if sh is None:
                sh = shares[(g, m)] = GpuShare(ids[g], m)
            gs.append(sh)
        return Placement.make(job.id, tuple(gs), cpu, mem, round(tp, 9), batch, accum)


def option_of(problem: Building, j: int, a: Assign) -> int:
    """Index of the option whose CPU and memory ``a`` gives job j (0 if none)."""
    cpu = sum(v for _, v in a.cpu)
    mem = sum(v for _, v in a.mem)
    for o, opt in enumerate(problem.options[j]):
        if opt.cpu == cpu and opt.mem == mem:
            return o
    return 0
