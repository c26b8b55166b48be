r"""The baselines of AntMan's trace experiment (Xiao et al., OSDI'20, §5.2) as
mechanisms on the simulator.  Each holds every job at its arrival and places
it itself, through ``Control.place`` (checked by the session), after every
event; a job's tenant is ``extra["tenant"]`` (``"A"``: its quota covers the
cluster, so its jobs are guaranteed; ``"B"``: no quota).  A gang runs inside
one server (NVLink).  A drained server (`Control.closed`) takes no new job:
its running jobs run on, and no job starts or is preempted for there.

* ``antman-yarn-cs`` -- YARN's capacity scheduler: GPUs are exclusive; tenant A's
  queue first, then B's, each in arrival order; a job takes the server with
  the fewest free GPUs that fit it (its first free GPUs); an A gang that
  does not fit *reserves* the free GPUs of the server closest to fitting (no
  later job of the round may use them).  With ``preempt`` (``antman-yarn-cs-preempt``),
  an A job that does not fit first stops B's jobs on the server needing the
  fewest victims (free GPUs first): they lose their progress and queue again.
* ``antman-packing`` -- Gandiva's packing as AntMan §5.2 describes it:
  every job, in arrival order, on the server whose ``n`` GPUs of lowest
  utilisation ($\sum_j u_j\,\mathrm{speed}_j$) with enough free GPU memory
  for its whole demand have the lowest total; uncoordinated speeds
  (`alloc.sched.antman.model`).  A packed job holds an opportunistic share
  (milli 0) of each of its GPUs with its whole GPU memory and no reserved
  compute (Gandiva reserves none: the interference model gives its speed),
  so the session checks each GPU's memory.

The run's progress model must be `alloc.sched.antman.model.AntManProgress`
with mode ``exclusive`` (YARN) or ``packed`` (Gandiva).
"""
from __future__ import annotations

from typing import Any

from ...errors import InputError
from ...gpukey import gpu_key
from ...model import GpuShare
from ..kinds import BaseMechanism
from .model import AntManProgress

class _Queue(BaseMechanism):
    """Jobs held at arrival, in a queue of arrival order."""
    mode = ""
    name = ""

    def __init__(self) -> None:
        self.queue: list[str] = []
        self.servers: list[list[str]] = []
        self.ids: list[str] = []
        self.index: dict[str, int] = {}

    def start(self, ctl: Any) -> None:
        """The cluster's GPUs by server; check the progress model."""
        prog = ctl.ctx.progress
        if not isinstance(prog, AntManProgress) or prog.mode != self.mode:
            raise InputError(f"{self.name}: the run's progress model must be "
                             f"AntManProgress({self.mode!r})")
        self.servers = [[gpu_key(s.id, k) for k in range(s.gpus)] for s in ctl.cluster.servers]
        self.ids = [s.id for s in ctl.cluster.servers]
        self.index = {g: k for k, g in enumerate(g for gs in self.servers for g in gs)}

    def on_event(self, event: Any, ctl: Any) -> None:
        """Hold an arriving job; it queues."""
        if event.kind == "arrival":
            ctl.suspend(event.job, hold=True)
            self.queue.append(event.job)

    def open(self, ctl: Any) -> list[list[str]]:
        """The GPUs of the servers open to new placements (not drained)."""
        closed = ctl.closed
        return [gs for sid, gs in zip(self.ids, self.servers) if sid not in closed]

    @staticmethod
    def on_gpus(ctl: Any) -> dict[str, set[str]]:
        """GPU name -> the running jobs on it."""
        out: dict[str, set[str]] = {}
        for r in ctl.jobs.values():
            if r.running and r.run is not None:
                for g in r.run.gpu_names:
                    out.setdefault(g, set()).add(r.id)
        return out

    def run(self, ctl: Any, jid: str, gpus: list[Any], on: dict[str, set[str]]) -> None:
        """Start queued job ``jid`` on ``gpus`` (names, or shares)."""
        ctl.place(jid, gpus)
        self.queue.remove(jid)
        for g in gpus:
            on.setdefault(getattr(g, "gpu", g), set()).add(jid)


class YarnCS(_Queue):
    """YARN's capacity scheduler, optionally with preemption (module notes).

    Parameters
    ----------
    preempt : bool
        A's jobs stop B's when they do not fit.

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> get_policy("mechanism", "antman-yarn-cs-preempt").build().preempt
    True
    """
    mode = "exclusive"

    def __init__(self, preempt: bool = False) -> None:
        super().__init__()
        self.preempt = bool(preempt)
        self.name = "antman-yarn-cs-preempt" if preempt else "antman-yarn-cs"

    def before_step(self, ctl: Any) -> None:
        """The capacity scheduler's pass over the queue (module notes)."""
        on = self.on_gpus(ctl)
        taken: set[str] = set()
        jobs = ctl.jobs
        servers = self.open(ctl)
        for tenant in ("A", "B"):
            for jid in [x for x in self.queue if jobs[x].extra.get("tenant") == tenant]:
                n = jobs[jid].gpus
                free = [[g for g in gs if not on.get(g) and g not in taken] for gs in servers]
                fit = [s for s in range(len(free)) if len(free[s]) >= n]
                if fit:
                    s = min(fit, key=lambda s: (len(free[s]), s))
                    self.run(ctl, jid, free[s][:n], on)
                    continue
                if tenant == "B":
                    continue
                if self.preempt and self._preempt_for(ctl, jid, n, taken, on, servers):
                    continue
                if not free:
                    continue
                s = max(range(len(free)), key=lambda s: (len(free[s]), -s))
                taken.update(free[s][:n])

    def _preempt_for(self, ctl: Any, jid: str, n: int, taken: set[str],
                     on: dict[str, set[str]], servers: list[list[str]]) -> bool:
        jobs = ctl.jobs
        best = None
        for gs in servers:
            gs = [g for g in gs if g not in taken]
            victims = {j for g in gs for j in on.get(g, ()) if jobs[j].extra.get("tenant") == "B"}
            usable = [g for g in gs if not on.get(g) or on[g] <= victims]
            if len(usable) >= n:
                order = sorted(usable, key=lambda g: (bool(on.get(g)), self.index[g]))
                need: set[str] = set()
                for g in order[:n]:
                    need |= on.get(g, set())
                if best is None or len(need) < len(best[1]):
                    best = (order[:n], need)
        if best is None:
            return False
        for v in sorted(best[1]):
            ctl.suspend(v, hold=True)
            for g in list(on):
                on[g].discard(v)
            self.queue.append(v)
            self.queue.sort(key=lambda x: (jobs[x].arrival_s, x))
        self.run(ctl, jid, best[0], on)
        return True


class GandivaPacking(_Queue):
    """Gandiva's packing as AntMan §5.2 describes it (module notes).

    Examples
    --------
    >>> from alloc.sched import get_policy
    >>> get_policy("mechanism", "antman-packing").build().mode
    'packed'
    """
    mode = "packed"
    name = "antman-packing"

    def before_step(self, ctl: Any) -> None:
        """Each queued job, in arrival order, where it packs best."""
        jobs = ctl.jobs
        on = self.on_gpus(ctl)
        caps = {gpu_key(s.id, k): int(s.gpu_mem or 0) for s in ctl.cluster.servers
                for k in range(s.gpus)}

        def util(g: str) -> float:
            return sum(float(jobs[j].extra["u"]) * jobs[j].rate for j in on.get(g, ()))

        servers = self.open(ctl)
        for jid in list(self.queue):
            rec = jobs[jid]
            mem = int(rec.extra["mem_mib"])
            best = None
            for server in servers:
                gs = [g for g in server
                      if caps[g] - sum(int(jobs[j].extra["mem_mib"]) for j in on.get(g, ()))
                      >= mem]
                if len(gs) < rec.gpus:
                    continue
                gs = sorted(gs, key=lambda g: (util(g), self.index[g]))[:rec.gpus]
                load = sum(util(g) for g in gs)
                if best is None or load < best[0]:
                    best = (load, gs)
            if best is not None:
                self.run(ctl, jid, [GpuShare(g, 0, mem, 0) for g in best[1]], on)


def yarn_cs(preempt: bool = False) -> YarnCS:
    """A `YarnCS` mechanism (the registered factory)."""
    return YarnCS(preempt)


def yarn_cs_preempt() -> YarnCS:
    """A `YarnCS` mechanism that preempts (the registered factory)."""
    return YarnCS(True)


def gandiva_packing() -> GandivaPacking:
    """A `GandivaPacking` mechanism (the registered factory)."""
    return GandivaPacking()


__all__ = ["GandivaPacking", "YarnCS", "gandiva_packing", "yarn_cs", "yarn_cs_preempt"]
