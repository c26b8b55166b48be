r"""Policies that decide every job's GPUs each round and carry the decision out.

Pollux, Sia and the Sia simulator's Gavel choose, each round, the exact GPUs
of every job (or none).  On alloc's simulator such a policy is given as the
run's **sizing** *and* its **mechanism** (the same object):

* as the sizing, at the start of the round, it decides and gives each job
  its GPU count and type (`alloc.sched.Size`; 0: the job waits, and a running
  job given another size stops, a restart counted by the simulator);
* as the mechanism, before the round's placement, it puts each job on the
  GPUs it chose through the simulator's control (checked session events: a
  running job whose GPUs change is stopped and placed again), so the
  round's placement solver has nothing left to place.  A job the decision
  puts on a server closed to new placements (drained; `Context.closed`) is
  not placed there: the round's placement solver places it on the open
  servers at the size decided, or it waits.

Subclasses write `decide`.

Examples
--------
>>> from alloc.sched.pollux.decide import Decider
>>> Decider().plan
{}
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...gpukey import server_of
from ..kinds import BaseMechanism, Context, JobView, Size


class Decider(BaseMechanism):
    """Base of the deciding policies (module notes)."""

    def __init__(self) -> None:
        #: job id -> (GPU type, GPU names) of the round's decision
        self.plan: dict[str, tuple[str | None, list[str]]] = {}

    def decide(self, jobs: Sequence[JobView], ctx: Context
               ) -> Mapping[str, tuple[str | None, list[str]]]:
        """Job id -> (GPU type, GPU names) for the jobs that run this round."""
        raise NotImplementedError

    def progress(self, ctx: Context) -> Any:
        """The run's goodput progress model (an error naming the policy without one)."""
        prog = ctx.progress
        if prog is None or not hasattr(prog, "state"):
            raise ValueError(f"{type(self).__name__} needs the goodput progress model "
                             f"(alloc.goodput.progress.GoodputProgress)")
        return prog

    def size(self, jobs: Sequence[JobView], ctx: Context) -> Mapping[str, Size]:
        """Decide (`decide`) and give every job its size."""
        self.plan = dict(self.decide(jobs, ctx)) if jobs else {}
        out = {}
        for j in jobs:
            t, gpus = self.plan.get(j.id, (None, []))
            out[j.id] = Size(len(gpus), gpu_type=t if gpus else None)
        return out

    def before_step(self, ctl: Any) -> None:
        """Carry the decision out (module notes)."""
        plan = self.plan
        for jid, r in list(ctl.jobs.items()):
            if r.running:
                p = ctl.placement(jid)
                now = [g.gpu for g in p.gpus] if p is not None else []
                want = plan.get(jid, (None, []))[1]
                if want != now:
                    ctl.suspend(jid, hold=False)
        closed = ctl.closed
        for jid, (_, gpus) in plan.items():
            r = ctl.jobs.get(jid)
            if r is not None and gpus and not r.running and \
                    not any(server_of(g) in closed for g in gpus):
                ctl.place(jid, gpus)


__all__ = ["Decider"]
