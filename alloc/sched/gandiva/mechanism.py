r"""Gandiva's scheduler over time (Xiao et al., OSDI'18, section 4) as a
mechanism of the one simulator, over any placement solver.

The simulator's session holds every job; the mechanism acts only through
the run's `Control` (every action checked by the session).  With the
``gandiva`` placement (Algorithm 1, `alloc.solvers.gandiva`) it gives the
solver two options, held by reference and updated between rounds: ``bound``
(job id -> the server a suspended job is time-sliced on; the solver counts
it in the server's height and affinity and never places it) and
``oversubscribe``.  With another placement solver (best fit, say) that
solver places the jobs GPUs are free for, and the mechanism binds the
others itself by Algorithm 1's step 4 (`GandivaMechanism._step4`: the least
loaded server of the job's affinity with enough GPUs, in arrival order);
a bound job is then held out of the rounds until its slice.  Either way
every waiting job is offered to each round (``candidates = "all"``), and a
job the order preempts (a preemptive order over a solver that allows it)
goes back to the queue, unbound.

Reactive mode (events).

* Arrival: the round places the job by Algorithm 1
  (`alloc.solvers.gandiva.reactive`); when no GPUs are free it is bound to
  a same-affinity server and waits, suspended, for its slice
  (over-subscription), else it is queued.
* Departure: the freed GPUs go first to jobs suspended on that server (in
  round-robin order); with migration, suspended jobs of other servers move
  onto GPUs still free (the cluster's height goes down) and spread jobs
  move onto one server; queued jobs are then placed by the round.
* Server failure: its jobs lose their GPUs; packed groups there split, and
  they are all placed again by the round.
* Server drain (no new placements there): its running jobs run on, while
  the jobs waiting bound to it queue again and are placed or bound anew by
  the round; no slice starts a suspended unit there and no job is bound
  there until it is open again.

Time-slicing (a timer every ``slice_s`` seconds, 60 by default): every unit
running at the boundary has had a slice and its virtual time advances; then
on each server the units (a job, or the jobs packed on one GPU) are chosen
by weighted round-robin (`alloc.sched.gandiva.slicing`); a running unit
not chosen is suspended -- ``Control.suspend``: it stops, holds no GPU,
keeps its progress and waits bound to its server -- and a chosen suspended
unit resumes on the server's free GPUs (``Control.place``).  A
higher-priority job is never suspended for a lower one.

Introspective mode (at each slice boundary, after the rotation):

* Packing, only while some server is over-subscribed: suspended 1-GPU jobs
  that have been profiled (they ran alone for ``profile_s``) and whose GPU
  utilisation alone is known (the workload's ``util`` column, 0..1), lowest
  utilisation first, each onto the GPU of lowest utilisation on its server
  that runs fewer than ``pack_limit`` jobs, all profiled and of the job's
  priority (a packed unit has one priority), whose GPU memory (the jobs'
  ``gpu_mem``, MiB) fits the GPU's (the server's ``gpu_mem``, else
  ``gpu_mem_capacity`` by GPU type, else the library's table,
  [alloc.resources.gpu_mem_capacity][]); never a set of jobs whose packing
  was undone before.  Packed jobs share the GPU in equal milli-GPU shares
  ($\lfloor 1000 / k \rfloor$ each for $k$ jobs), so the core's check holds
  them to the GPU's 1000 milli.  At the next boundary the packing is kept
  only if the jobs' measured rates, each over its rate alone, sum to more
  than 1 (what time-slicing gives them); otherwise it is undone (the first
  job keeps the GPU, the others are suspended).  When a server is no longer
  over-subscribed its packings split onto free GPUs.
* Migration (``migration=True``): suspended units of over-subscribed
  servers move onto GPUs free elsewhere (best fit, highest servers first),
  spread jobs onto one server, then lightly used servers are emptied
  (`alloc.sched.gandiva.defrag`), each move a ``Control.migrate`` (or a
  resume elsewhere) that the progress model charges as a migration.
* Grow-shrink (``grow_shrink=True``, elastic jobs): when nothing is queued
  or suspended and a server's GPUs have been free for ``grow_idle_s``, its
  elastic jobs grow, within the server, to the largest power of two their
  ``max_gpus`` and the free GPUs allow; a grown job shrinks back to its
  request as soon as an arriving job finds no free GPUs.

Costs are the progress model's: a resume after a suspension, a packing
change that moves a job, a migration, a resize (for the Gandiva data,
`alloc.sim.gandiva.progress`).  The mechanism marks a job's next start in
its ``state`` (``gandiva_cost``: ``"switch"`` or ``"migrate"``) where the
simulator's cause alone does not say which it is.

Units: seconds, GPUs, milli-GPU, MiB.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from ...errors import InputError
from ...gpukey import server_of
from ...model import MILLI
from ...resources import server_gpu_mem
from ..kinds import BaseMechanism
from .defrag import DEFRAG_THRESHOLD, defrag_moves, locality_moves
from .slicing import Unit, slice_choice

#: Default slice length (seconds): the paper's time-slicing interval.
SLICE_S = 60.0
#: The key of a job's ``state`` naming what its next start costs.
COST_KEY = "gandiva_cost"


@dataclass(frozen=True)
class _Base:
    """What the mechanism reads of a job at its arrival."""
    gpus: int
    priority: int
    weight: float
    gpu_mem: int | None
    min_gpus: int | None
    max_gpus: int | None
    gpu_types: tuple[str, ...] | None

    def allows(self, gpu_type: str | None) -> bool:
        return self.gpu_types is None or gpu_type in self.gpu_types


@dataclass
class _Job:
    """The mechanism's record of one job."""
    base: _Base
    seq: int
    util: float | None
    size: int
    milli: int = MILLI
    vt: float = 0.0
    home: str | None = None
    group: str | None = None
    ran: bool = False
    profiled: bool = False
    alone_since: float | None = None


def _positive(name: str, v, *, integer: bool = False, allow_zero: bool = False) -> None:
    ok = (isinstance(v, int) if integer else isinstance(v, (int, float))) \
        and not isinstance(v, bool) and math.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        what = "an integer" if integer else "a number"
        raise InputError(f"{name}: expected {what} {'>= 0' if allow_zero else '> 0'}, got {v!r}")


class GandivaMechanism(BaseMechanism):
    """Gandiva's scheduler over time (see the module notes).

    Parameters
    ----------
    slice_s : float
        Time-slice length (seconds, > 0).
    oversubscribe : bool
        Over-subscribe and time-slice (False: a job waits for free GPUs).
    packing : bool
        Introspective packing.
    pack_limit : int
        Most jobs packed on one GPU (>= 1; 1: no packing).
    migration : bool
        Migrations: defragmentation, locality, suspended jobs to free GPUs.
    grow_shrink : bool
        Grow elastic jobs when the cluster is idle, shrink them on demand.
    gpu_mem_capacity : mapping of str to int, optional
        GPU memory (MiB) per GPU type, the packing limit, for servers that
        do not declare their ``gpu_mem``.
    profile_s : float, optional
        Seconds a job runs alone before it is profiled (default
        ``slice_s / 10``).
    grow_idle_s : float, optional
        Seconds a server's GPUs stay free before its jobs grow (default
        ``slice_s``).
    defrag_threshold : int
        Free GPUs at which a non-idle server is emptied.

    Attributes
    ----------
    counts : Counter
        ``started``, ``resumed``, ``suspensions``, ``oversubscribed``,
        ``queued``, ``packings``, ``packings_kept``, ``packings_undone``,
        ``unpacked``, ``migrations``, ``resizes``, ``lost``, ``missed``.
    kept : list of (float, int)
        Packings kept (made minus undone) after each change (Fig. 15).
    latency : list of float
        Seconds in the mechanism per event it handled (its rules and the
        checked actions it takes through `Control`).
    solver_s : list of float
        Seconds in the ``gandiva`` solver per round.

    Examples
    --------
    >>> from alloc import Cluster, Server
    >>> from alloc.sim import WorkloadJob, simulate
    >>> from alloc.sched.gandiva.mechanism import GandivaMechanism
    >>> cl = Cluster((Server("s0", cpu=12000, mem=65536, gpus=1),))
    >>> jobs = [WorkloadJob("a", 0.0, 1, duration_s=120.0),
    ...         WorkloadJob("b", 1.0, 1, duration_s=120.0)]
    >>> m = GandivaMechanism(packing=False)
    >>> res = simulate(cl, jobs, order="fifo:preemptive=false", placement="gandiva",
    ...                mechanism=m)
    >>> m.counts["suspensions"], [r["end_s"] for r in res.timeline()]
    (2, [180.0, 240.0])
    """

    candidates = "all"

    def __init__(self, slice_s: float = SLICE_S, oversubscribe: bool = True,
                 packing: bool = True, pack_limit: int = 2, migration: bool = False,
                 grow_shrink: bool = False, gpu_mem_capacity: Mapping[str, int] | None = None,
                 profile_s: float | None = None, grow_idle_s: float | None = None,
                 defrag_threshold: int = DEFRAG_THRESHOLD) -> None:
        _positive("slice_s", slice_s)
        _positive("pack_limit", pack_limit, integer=True)
        _positive("defrag_threshold", defrag_threshold, integer=True)
        for name, v in (("profile_s", profile_s), ("grow_idle_s", grow_idle_s)):
            if v is not None:
                _positive(name, v, allow_zero=True)
        for t, v in (gpu_mem_capacity or {}).items():
            _positive(f"gpu_mem_capacity[{t!r}]", v, integer=True)
        self.slice_s = float(slice_s)
        self.oversubscribe = bool(oversubscribe)
        self.packing = bool(packing) and pack_limit > 1 and self.oversubscribe
        self.pack_limit = pack_limit
        self.migration, self.grow_shrink = bool(migration), bool(grow_shrink)
        self.gpu_mem_capacity = dict(gpu_mem_capacity or {})
        self.profile_s = self.slice_s / 10 if profile_s is None else float(profile_s)
        self.grow_idle_s = self.slice_s if grow_idle_s is None else float(grow_idle_s)
        self.defrag_threshold = defrag_threshold
        self._bound: dict[str, str] = {}
        #: the ``gandiva`` placement's options, held by reference by the run's session
        self.placement_options = {"oversubscribe": self.oversubscribe, "bound": self._bound}
        #: the mechanism binds over-subscribed jobs itself (another placement)
        self._binds = False
        self._plan: dict[str, tuple[str, ...]] = {}
        self._intent: dict[str, str] = {}
        self._jobs: dict[str, _Job] = {}
        self._on: dict[str, set[str]] = {}
        self._spread: dict[str, dict[str, int]] = {}
        self._groups: dict[str, list[str]] = {}
        self._trials: dict[str, float] = {}
        self._failed: set[frozenset] = set()
        self._free_since: dict[str, float] = {}
        self._arrived: list[str] = []
        self._seq = 0
        self._gid = 0
        self._ctl: Any = None
        self._prog: Any = None
        self.now = 0.0
        self.counts: Counter = Counter()
        self.kept: list[tuple[float, int]] = []
        self.latency: list[float] = []
        self.solver_s: list[float] = []

    # ---------------------------------------------------------------- hooks
    def placement_options_for(self, solver: str) -> Mapping[str, Any]:
        """The options the run's placement ``solver`` gets: the bindings
        for ``gandiva``; none for another solver, which places the jobs it
        can while the mechanism binds the others itself (module notes)."""
        self._binds = solver != "gandiva"
        return {} if self._binds else self.placement_options

    def start(self, ctl: Any) -> None:
        """The first slice boundary; the servers."""
        self._binds = ctl.session.solver != "gandiva"
        self._ctl = ctl
        self._prog = ctl.ctx.progress
        self._on = {s.id: set() for s in ctl.cluster.servers}
        if self.oversubscribe:
            ctl.timer(self.slice_s, "slice", round=False)

    def on_event(self, event: Any, ctl: Any) -> None:
        """Arrivals, departures, failures and slice boundaries (module notes)."""
        t0 = time.perf_counter()
        self.now = event.at_s
        kind = event.kind
        if kind == "arrival":
            self._arrive(ctl.jobs[event.job])
        elif kind == "finish":
            self._finish(event.job)
        elif kind == "fail":
            self._fail(event.server)
        elif kind == "drain":
            self._drain(event.server)
        elif kind == "timer" and event.tag == "slice":
            self._tick()
            ctl.timer(event.at_s + self.slice_s, "slice", round=False)
        else:
            return
        self.latency.append(time.perf_counter() - t0)

    def after_step(self, result: Any, ctl: Any) -> None:
        """What the round did: jobs placed by Algorithm 1, jobs it bound."""
        st = result.allocation.stats.get("gandiva", {})
        self.solver_s.append(float(st.get("solve_s", 0.0)))
        self.counts["missed"] += len(st.get("missed", ()))
        for p in result.start:
            if p.job in self._jobs:
                self._started(p.job, p, {})
        for p in result.preempt:        # stopped by the order: queued again
            if p.job in self._jobs:
                self._forget(p.job, keep=True)
        bound = st.get("bound", {}) if not self._binds else self._step4(ctl)
        for jid, sid in bound.items():
            if jid in self._jobs:
                self._bound[jid] = sid
                self._settle(jid, {sid})
                self.counts["oversubscribed"] += 1
                if self._binds:
                    ctl.suspend(jid, hold=True)
        for jid in self._arrived:
            if jid in self._jobs and self._cur(jid) is None and jid not in self._bound:
                self.counts["queued"] += 1
        self._arrived = []

    def _step4(self, ctl: Any) -> dict[str, str]:
        """Algorithm 1's over-subscription, where the placement is another
        solver: each waiting whole-GPU job it left out, in arrival order, is
        bound to the least loaded server (height, then index) of affinity
        $g$ with at least $g$ GPUs of a type it allows; none: it stays
        queued."""
        if not self.oversubscribe:
            return {}
        out: dict[str, str] = {}
        servers = ctl.cluster.servers
        closed = ctl.closed
        for jid in sorted(self._jobs, key=lambda j: self._jobs[j].seq):
            rec, info = ctl.jobs.get(jid), self._jobs[jid]
            if (rec is None or rec.running or rec.held or jid in self._bound
                    or jid in self._plan or rec.gpus < 1 or rec.milli < MILLI):
                continue
            g = rec.gpus
            over = [k for k, s in enumerate(servers) if s.gpus >= g and s.id not in closed
                    and info.base.allows(s.gpu_type) and self._affinity(s.id) == g]
            if over:
                k = min(over, key=lambda k: (self.height(servers[k].id), k))
                out[jid] = servers[k].id
                self._settle(jid, {servers[k].id})     # counts in the next job's view
        return out

    def _affinity(self, sid: str) -> int:
        """The GPU count most jobs homed on a server have (ties: the larger;
        0: none), as Algorithm 1 reads it."""
        sizes = Counter(self._jobs[j].size for j in self._on.get(sid, ()))
        return max(sizes, key=lambda n: (sizes[n], n)) if sizes else 0

    # ---------------------------------------------------------------- views
    def _cur(self, jid: str):
        r = self._ctl.jobs.get(jid)
        return r.run.placement if r is not None and r.run is not None else None

    @property
    def suspended(self) -> tuple[str, ...]:
        """Jobs time-sliced on a server and not holding GPUs now."""
        return tuple(self._bound)

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Packed groups: id -> jobs sharing one GPU."""
        return {g: tuple(m) for g, m in self._groups.items()}

    def home(self, job_id: str) -> str | None:
        """The server a job is time-sliced on (None: queued, spread or gone)."""
        info = self._jobs.get(job_id)
        return info.home if info is not None else None

    def height(self, server_id: str) -> float:
        """Allocated GPUs (running and suspended jobs) over the server's GPUs."""
        srv = self._ctl.cluster.server(server_id)
        pinned = sum(self._spread_on(server_id).values())
        return (self._need(server_id) + pinned) / srv.gpus if srv.gpus else 0.0

    def units(self, server_id: str) -> list[Unit]:
        """The time-sliced units homed on a server."""
        seen: set[str] = set()
        out = []
        for jid in sorted(self._on.get(server_id, ()), key=lambda x: self._jobs[x].seq):
            if jid in seen:
                continue
            info = self._jobs[jid]
            members = self._groups[info.group] if info.group else [jid]
            seen.update(members)
            out.append(Unit(tuple(members), 1 if info.group else info.size,
                            max(self._jobs[m].base.priority for m in members), info.vt,
                            min(self._jobs[m].seq for m in members),
                            all(self._cur(m) is not None for m in members)))
        return out

    def over_subscribed(self) -> list[str]:
        """Servers whose time-sliced units need more GPUs than they have."""
        return [s.id for s in self._ctl.cluster.servers if self._cap(s.id) < self._need(s.id)]

    def _need(self, sid: str) -> int:
        """GPUs the units homed on a server need (a packed unit: 1)."""
        groups, n = set(), 0
        for jid in self._on.get(sid, ()):
            info = self._jobs[jid]
            if info.group is None:
                n += info.size
            elif info.group not in groups:
                groups.add(info.group)
                n += 1
        return n

    # --------------------------------------------------------------- events
    def _arrive(self, rec: Any) -> None:
        util = rec.extra.get("util") if rec.extra else None
        if util is not None and (isinstance(util, bool) or not isinstance(util, (int, float))
                                 or not 0.0 <= util <= 1.0):
            raise InputError(f"job {rec.id!r}: util: expected a number in 0..1, got {util!r}")
        f = rec.fields
        types = f.get("gpu_types")
        base = _Base(rec.gpus, int(rec.priority), float(f.get("weight", 1.0) or 1.0),
                     f.get("gpu_mem"), rec.min_gpus, rec.max_gpus,
                     None if types is None else ((types,) if isinstance(types, str)
                                                 else tuple(types)))
        self._jobs[rec.id] = _Job(base, self._seq, None if util is None else float(util),
                                  rec.gpus)
        self._seq += 1
        self._arrived.append(rec.id)
        if self.grow_shrink:
            self._shrink_for(base)
            self._flush()

    def _finish(self, jid: str) -> None:
        info = self._jobs.get(jid)
        if info is None:
            return
        servers = set(self._forget(jid))
        if info.group:
            servers |= self._leave_group(jid, info.group)
        self._fill(servers)
        if self.migration:
            self._rebalance()
        self._flush()

    def _fail(self, server_id: str) -> None:
        lost = set(self._on.get(server_id, ())) | {j for j, per in self._spread.items()
                                                   if server_id in per}
        for gid in {g for j in lost if (g := self._jobs[j].group) is not None}:
            for m in self._groups.pop(gid):
                self._trials.pop(gid, None)
                self._jobs[m].group = None
                self._jobs[m].milli = MILLI
                lost.add(m)
        for j in sorted(lost, key=lambda x: self._jobs[x].seq):
            self._ctl.suspend(j, hold=False, milli=self._jobs[j].milli)   # its own share again
            self._forget(j, keep=True)
        self._on.pop(server_id, None)
        self.counts["lost"] += len(lost)

    def _drain(self, server_id: str) -> None:
        """The jobs waiting bound to a drained server queue again (its
        running jobs run on)."""
        waiting = sorted((j for j, sid in self._bound.items() if sid == server_id),
                         key=lambda x: self._jobs[x].seq)
        for j in waiting:
            self._ctl.suspend(j, hold=False, milli=self._jobs[j].milli)
            self._forget(j, keep=True)

    def _tick(self) -> None:
        """A slice boundary: profile, judge packings, rotate, pack or split,
        migrate, grow -- each phase's placements made before the next."""
        now = self.now
        self._profile(now)
        self._charge()
        if self._trials and self._judge(self._measured()):
            self._flush()
        if self._rotate():
            self._flush()
        if self.packing and self._pack_or_split(now):
            self._flush()
        if self.migration and self._rebalance(defrag=True):
            self._flush()
        if self.grow_shrink and self._grow(now):
            self._flush()

    def _measured(self) -> dict[str, float]:
        """Each running packed job's rate over its rate alone (what profiling sees)."""
        out = {}
        for members in self._groups.values():
            for m in members:
                r = self._ctl.jobs.get(m)
                if r is not None and r.running:
                    alone = self._alone_rate(r)
                    out[m] = r.rate / alone if alone > 0 else 0.0
        return out

    def _alone_rate(self, rec: Any) -> float:
        f = getattr(self._prog, "alone_rate", None)
        if f is not None:
            return float(f(rec))
        from ...sim.progress import Run
        return float(self._prog.rate(rec, Run(gpus=rec.spec.gpus, milli=MILLI)))

    # ------------------------------------------------------- placements made
    def _flush(self) -> None:
        """Make the planned placements through `Control`: running jobs first
        (moves, new sizes, then new shares of the same GPUs), then waiting
        ones (resumes, packings), in arrival order."""
        if not self._plan:
            return
        plan, intent = dict(self._plan), dict(self._intent)
        self._plan.clear()
        self._intent = {}
        ctl = self._ctl
        seq = lambda j: self._jobs[j].seq  # noqa: E731
        moving, share, starting = [], [], []
        for j in sorted(plan, key=seq):
            cur = self._cur(j)
            if cur is None:
                starting.append(j)
            elif {g.gpu for g in cur.gpus} == set(plan[j]):
                share.append(j)
            else:
                moving.append(j)
        for j in moving + share:
            info = self._jobs[j]
            cur = self._cur(j)
            gpus = list(plan[j])
            same = {g.gpu for g in cur.gpus} == set(gpus)
            if same and cur.gpus[0].milli == info.milli:
                continue
            before = info.size
            why = intent.get(j)
            try:
                if not same and why is None:   # a packing change onto another GPU
                    ctl.jobs[j].state[COST_KEY] = "switch"
                if same or len(gpus) != len(cur.gpus) or cur.gpus[0].milli != info.milli:
                    ctl.place(j, gpus, milli=info.milli)
                else:
                    ctl.migrate(j, gpus)
            except InputError:
                ctl.jobs[j].state.pop(COST_KEY, None)
                self.counts["missed"] += 1
                continue
            p = self._cur(j)
            self._settle(j, _servers(p))
            info.size = len(p.gpus)
            if same:
                continue
            if why == "resize" or info.size != before:
                self.counts["resizes"] += 1
            elif why == "migrate":
                self.counts["migrations"] += 1
        for j in starting:
            rec = ctl.jobs.get(j)
            if rec is None:
                continue
            if intent.get(j) == "migrate":
                rec.state[COST_KEY] = "migrate"
            try:
                ctl.place(j, list(plan[j]), milli=self._jobs[j].milli)
            except InputError:
                rec.state.pop(COST_KEY, None)
                self.counts["missed"] += 1
                continue
            self._started(j, self._cur(j), intent)

    def _started(self, jid: str, p: Any, intent: Mapping[str, str]) -> None:
        """A waiting job holds GPUs now: its records brought in step."""
        info = self._jobs[jid]
        self._bound.pop(jid, None)
        self._settle(jid, _servers(p))
        kind = "resumed" if info.ran else "started"
        info.ran = True
        self.counts[kind] += 1
        if intent.get(jid) == "migrate":
            self.counts["migrations"] += 1
        info.alone_since = None if info.group else self.now

    def _settle(self, jid: str, servers: set[str]) -> None:
        """Record where a job now belongs: one server (its home), or spread."""
        info = self._jobs[jid]
        old = info.home
        if old is not None and (len(servers) != 1 or old not in servers):
            self._on.get(old, set()).discard(jid)
        self._spread.pop(jid, None)
        if len(servers) == 1:
            sid = next(iter(servers))
            if old != sid:
                others = [self._jobs[j].vt for j in self._on.get(sid, ()) if j != jid]
                info.vt = max(info.vt, min(others)) if others else info.vt
            info.home = sid
            self._on.setdefault(sid, set()).add(jid)
        else:
            info.home = None
            cur = self._cur(jid)
            per: dict[str, int] = {}
            for g in cur.gpus:
                s = server_of(g.gpu)
                per[s] = per.get(s, 0) + 1
            self._spread[jid] = per

    def _forget(self, jid: str, keep: bool = False) -> set[str]:
        """Drop a job from the server records (``keep``: it stays known,
        queued); returns the servers it was on."""
        info = self._jobs[jid]
        servers = set()
        if info.home is not None:
            self._on.get(info.home, set()).discard(jid)
            servers.add(info.home)
        servers |= set(self._spread.pop(jid, {}))
        self._bound.pop(jid, None)
        self._plan.pop(jid, None)
        info.home, info.alone_since = None, None
        if not keep:
            del self._jobs[jid]
        return servers

    def _wait_on(self, jid: str, sid: str, milli: int) -> None:
        """``jid`` stops (if it runs) and waits bound to server ``sid``, at
        ``milli`` of a GPU; held out of the rounds when the placement is not
        ``gandiva`` (which alone knows the bindings)."""
        self._ctl.suspend(jid, hold=self._binds, milli=milli)
        self._bound[jid] = sid

    def _suspend(self, jid: str, sid: str) -> None:
        """Stop a running job; it holds nothing and waits on its server."""
        self._wait_on(jid, sid, self._jobs[jid].milli)
        self._jobs[jid].alone_since = None
        self.counts["suspensions"] += 1

    # ------------------------------------------------------------- servers
    def _spread_on(self, sid: str) -> dict[str, int]:
        return {j: per[sid] for j, per in self._spread.items() if sid in per}

    def _cap(self, sid: str) -> int:
        """GPUs of a server that time-sliced jobs may use (spread jobs' aside)."""
        return self._ctl.cluster.server(sid).gpus - sum(self._spread_on(sid).values())

    def _free_gpus(self, sid: str) -> list[str]:
        """GPU names of a server that no running job holds and no plan
        takes, ascending."""
        held = {g for gpus in self._plan.values() for g in gpus}
        for jid in list(self._on.get(sid, ())) + list(self._spread_on(sid)):
            cur = self._cur(jid)
            if cur is not None:
                held.update(g.gpu for g in cur.gpus)
        cl = self._ctl.cluster
        if sid not in cl.server_index:
            return []
        return [g for g in cl.server(sid).gpu_ids() if g not in held]

    def _start_unit(self, u: Unit, gpus: list[str]) -> None:
        """Plan a suspended unit onto ``gpus`` (a packed unit: all on one)."""
        for m in u.jobs:
            self._plan[m] = tuple(gpus[:1]) if len(u.jobs) > 1 else tuple(gpus[:u.need])

    def _charge(self) -> None:
        """Every unit running at a slice boundary has had a slice: its
        virtual time advances by 1 / weight (a packed unit: its largest)."""
        done: set[str] = set()
        for jid, info in self._jobs.items():
            if info.home is None or jid in done or self._cur(jid) is None:
                continue
            members = self._groups[info.group] if info.group else (jid,)
            done.update(members)
            if all(self._cur(m) is not None for m in members):
                w = max(self._jobs[m].base.weight for m in members) or 1e-9
                for m in members:
                    self._jobs[m].vt = info.vt + 1.0 / w

    # --------------------------------------------------------- time-slicing
    def _rotate(self) -> bool:
        """Weighted round-robin on every server with suspended units."""
        changed = False
        waiting = {self._jobs[j].home for j in self._bound} - self._ctl.closed
        for sid in [s for s in self._on if s in waiting]:
            units = self.units(sid)
            chosen = slice_choice(units, self._cap(sid))
            ids = {u.jobs for u in chosen}
            for u in units:
                if u.running and u.jobs not in ids:
                    for m in u.jobs:
                        self._suspend(m, sid)
            free = self._free_gpus(sid)
            for u in chosen:
                if not u.running:
                    self._start_unit(u, free[:u.need])
                    free = free[u.need:]
            changed = True
        return changed

    def _fill(self, servers) -> None:
        """Free GPUs of ``servers`` to their suspended units, round-robin order."""
        for sid in servers:
            if sid not in self._on:
                continue
            free = self._free_gpus(sid)
            floor = None
            for u in sorted((u for u in self.units(sid) if not u.running), key=lambda x: x.key):
                if floor is not None and u.priority < floor:
                    break
                if u.need <= len(free):
                    self._start_unit(u, free[:u.need])
                    free = free[u.need:]
                elif floor is None:
                    floor = u.priority

    def _profile(self, now: float) -> None:
        for info in self._jobs.values():
            if not info.profiled and info.alone_since is not None \
                    and now - info.alone_since >= self.profile_s:
                info.profiled = True

    # --------------------------------------------------------------- packing
    def _judge(self, measured: Mapping[str, float]) -> bool:
        """Keep a packing whose jobs' rates over their rates alone sum to
        more than 1 (time-slicing's total); undo the others."""
        changed = False
        for gid in list(self._trials):
            members = self._groups.get(gid)
            if not members or not all(self._cur(m) is not None for m in members) \
                    or any(m not in measured for m in members):
                continue
            del self._trials[gid]
            if sum(float(measured[m]) for m in members) > 1.0:
                self.counts["packings_kept"] += 1
                continue
            self._failed.add(frozenset(members))
            self.counts["packings_undone"] += 1
            self._note_kept(-1)
            self._split(gid, undo=True)
            changed = True
        return changed

    def _note_kept(self, delta: int) -> None:
        last = self.kept[-1][1] if self.kept else 0
        if self.kept and self.kept[-1][0] == self.now:
            self.kept[-1] = (self.now, last + delta)
        else:
            self.kept.append((self.now, last + delta))

    def _split(self, gid: str, undo: bool) -> None:
        """A packed group apart: each job back to its own share; the first
        keeps the GPU; with ``undo`` the others are suspended, else they
        take free GPUs of the server while there are some."""
        members = self._groups.pop(gid)
        self._trials.pop(gid, None)
        cur = self._cur(members[0])
        sid = self._jobs[members[0]].home
        gpu = cur.gpus[0].gpu if cur is not None else None
        assert sid is not None, "a packed group's jobs are homed on its GPU's server"
        for m in members:
            self._jobs[m].group = None
            self._jobs[m].milli = MILLI
        if not undo:
            self.counts["unpacked"] += 1
        if gpu is None:
            for m in members:
                self._wait_on(m, sid, MILLI)
            return
        free = self._free_gpus(sid)
        for m in members[1:]:
            if not undo and free:
                self._plan[m] = (free.pop(0),)
            elif undo:
                self._suspend(m, sid)
            else:                        # no GPU free for it: it waits on its server
                self._wait_on(m, sid, MILLI)
        self._plan[members[0]] = (gpu,)

    def _leave_group(self, jid: str, gid: str) -> set[str]:
        """A packed job departs: the rest of its group shares its GPU anew."""
        members = self._groups[gid]
        members.remove(jid)
        self._trials.pop(gid, None)
        cur = self._cur(members[0])
        if len(members) == 1:
            self._groups.pop(gid)
            self._jobs[members[0]].group = None
        for m in members:
            self._jobs[m].milli = MILLI if len(members) == 1 else MILLI // len(members)
            if cur is not None:
                self._plan[m] = (cur.gpus[0].gpu,)
            elif (home := self._jobs[m].home) is not None:
                self._wait_on(m, home, self._jobs[m].milli)
        home = self._jobs[members[0]].home
        return {home} if home is not None else set()

    def _packable(self, jid: str) -> bool:
        info = self._jobs[jid]
        b = info.base
        return (info.group is None and info.profiled and info.util is not None and b.gpus == 1
                and info.size == 1 and info.milli == MILLI and b.gpu_mem is not None
                and not (b.min_gpus or b.max_gpus))

    def _targets(self, sid: str) -> list[tuple[str, list[str]]]:
        """GPUs of a server running a unit that may take one more job:
        ``(gpu, jobs on it)``."""
        out = []
        for u in self.units(sid):
            if not u.running or len(u.jobs) >= self.pack_limit:
                continue
            info = self._jobs[u.jobs[0]]
            if (info.group and info.group in self._trials) or not all(
                    self._packable(m) or self._jobs[m].group for m in u.jobs):
                continue
            out.append((self._cur(u.jobs[0]).gpus[0].gpu, list(u.jobs)))
        return out

    def _pack_or_split(self, now: float) -> bool:
        """Split packings where GPUs are free again; pack during overload."""
        over = set(self.over_subscribed())
        changed = False
        for gid, members in list(self._groups.items()):
            sid = self._jobs[members[0]].home
            if sid is not None and sid not in over and gid not in self._trials \
                    and self._free_gpus(sid):
                self._split(gid, undo=False)
                changed = True
        if not over:
            return changed
        used: set[str] = set()
        cands = sorted((j for j in self._bound if self._packable(j)),
                       key=lambda j: (self._jobs[j].util or 0.0, self._jobs[j].seq))
        targets = {sid: self._targets(sid) for sid in over}
        for c in cands:
            sid = self._jobs[c].home
            if sid is None:
                continue
            best = None
            prio = self._jobs[c].base.priority
            for gpu, members in targets.get(sid, ()):
                if gpu in used or frozenset(members + [c]) in self._failed \
                        or any(self._jobs[m].base.priority != prio for m in members) \
                        or not self._memory_fits(gpu, members + [c]):
                    continue
                u = sum(self._jobs[m].util or 0.0 for m in members)
                if best is None or u < best[0]:
                    best = (u, gpu, members)
            if best is not None:
                used.add(best[1])
                self._pack(best[2], c, best[1], now)
                changed = True
        return changed

    def _memory_fits(self, gpu: str, members: list[str]) -> bool:
        server = self._ctl.cluster.server(server_of(gpu))
        cap = server_gpu_mem(server, self.gpu_mem_capacity)
        return sum(self._jobs[m].base.gpu_mem or 0 for m in members) <= cap

    def _pack(self, members: list[str], guest: str, gpu: str, now: float) -> None:
        """Run ``guest`` on ``gpu`` beside ``members``, in equal shares."""
        gid = self._jobs[members[0]].group
        if gid is None:
            self._gid += 1
            gid = f"pack{self._gid}"
        new = members + [guest]
        self._groups[gid] = new
        vt = self._jobs[members[0]].vt
        for m in new:
            info = self._jobs[m]
            info.group, info.alone_since, info.vt = gid, None, vt
            info.milli = MILLI // len(new)
            self._plan[m] = (gpu,)
        self._trials[gid] = now
        self.counts["packings"] += 1
        self._note_kept(+1)

    # ------------------------------------------------------------- migration
    def _rebalance(self, defrag: bool = False) -> bool:
        """Suspended jobs onto GPUs free elsewhere, spread jobs onto one
        server, then (``defrag``) lightly used servers emptied."""
        cl = self._ctl.cluster
        free = {s.id: self._free_gpus(s.id) for s in cl.servers}
        planned = set(self._plan)
        changed = self._migrate_suspended(free, planned)
        ids = [s.id for s in cl.servers]
        index = {s: i for i, s in enumerate(ids)}
        spread = [(j, len(self._cur(j).gpus), {index[s]: n for s, n in per.items()})
                  for j, per in self._spread.items() if j not in planned]
        counts = [len(free[s]) for s in ids]
        for j, t in locality_moves(counts, spread, self._allowed(ids)):
            changed |= self._plan_move(j, ids[t], free)
        if not defrag:
            return changed
        on: dict[int, list[tuple[str, int]]] = {}
        blocked = set()
        for sid in ids:
            for u in self.units(sid):
                if len(u.jobs) > 1 or not u.running or u.jobs[0] in self._plan:
                    blocked.add(index[sid])
                else:
                    on.setdefault(index[sid], []).append((u.jobs[0], u.need))
        counts = [len(free[s]) for s in ids]
        for j, s, t in defrag_moves(counts, on, threshold=self.defrag_threshold,
                                    blocked=frozenset(blocked), allowed=self._allowed(ids)):
            changed |= self._plan_move(j, ids[t], free)
        return changed

    def _allowed(self, ids: list[str]):
        cl = self._ctl.cluster

        def ok(jid: str, t: int) -> bool:
            return self._jobs[jid].base.allows(cl.server(ids[t]).gpu_type)
        return ok

    def _plan_move(self, jid: str, to: str, free: dict[str, list[str]]) -> bool:
        cur = self._cur(jid)
        mine = [g.gpu for g in cur.gpus if g.gpu.startswith(to + "/")]
        need = len(cur.gpus) - len(mine)
        if len(free[to]) < need:
            return False
        gpus = mine + free[to][:need]
        free[to] = free[to][need:]
        for g in cur.gpus:
            s = server_of(g.gpu)
            if s != to:
                free[s].append(g.gpu)
        self._plan[jid] = tuple(gpus)
        self._intent[jid] = "migrate"
        return True

    def _migrate_suspended(self, free: dict[str, list[str]], planned: set) -> bool:
        """Suspended units of over-subscribed servers onto free GPUs of other
        servers (best fit), highest servers first."""
        changed = False
        cl = self._ctl.cluster
        for sid in sorted(self.over_subscribed(), key=lambda s: -self.height(s)):
            for u in sorted((u for u in self.units(sid) if not u.running), key=lambda x: x.key):
                if any(m in planned for m in u.jobs):
                    continue
                job = self._jobs[u.jobs[0]].base
                room = [t for t, f in free.items() if t != sid and len(f) >= u.need
                        and job.allows(cl.server(t).gpu_type)]
                if not room:
                    continue
                t = min(room, key=lambda x: (len(free[x]), x))
                self._start_unit(u, free[t][:u.need])
                free[t] = free[t][u.need:]
                for m in u.jobs:
                    self._intent[m] = "migrate"
                planned.update(u.jobs)
                changed = True
        return changed

    # ----------------------------------------------------------- grow-shrink
    def _grow(self, now: float) -> bool:
        """Elastic jobs grow into GPUs idle for ``grow_idle_s`` (nothing
        queued or suspended), within their server, to a power of two."""
        queued = any(r.id in self._jobs and not r.running and r.id not in self._bound
                     for r in self._ctl.jobs.values())
        if self._bound or queued:
            self._free_since.clear()
            return False
        changed = False
        for s in self._ctl.cluster.servers:
            free = self._free_gpus(s.id)
            if not free:
                self._free_since.pop(s.id, None)
                continue
            since = self._free_since.setdefault(s.id, now)
            if now - since < self.grow_idle_s:
                continue
            for u in sorted(self.units(s.id), key=lambda x: x.need):
                b = self._jobs[u.jobs[0]].base
                if len(u.jobs) > 1 or not u.running or not b.max_gpus or not free:
                    continue
                n = 1 << int(math.log2(min(b.max_gpus, u.need + len(free))))
                if n <= u.need:
                    continue
                cur = [g.gpu for g in self._cur(u.jobs[0]).gpus]
                self._plan[u.jobs[0]] = tuple(cur + free[:n - u.need])
                self._intent[u.jobs[0]] = "resize"
                free = free[n - u.need:]
                changed = True
        return changed

    def _shrink_for(self, job: _Base) -> None:
        """Grown jobs back to their request when ``job`` finds no free GPUs."""
        grown = [j for j, i in self._jobs.items() if i.size > i.base.gpus
                 and self._cur(j) is not None]
        if not grown:
            return
        free = {s.id: len(self._free_gpus(s.id)) for s in self._ctl.cluster.servers}
        for jid in sorted(grown, key=lambda j: self._jobs[j].base.gpus - self._jobs[j].size):
            if any(n >= job.gpus for n in free.values()):
                return
            info = self._jobs[jid]
            cur = [g.gpu for g in self._cur(jid).gpus]
            self._plan[jid] = tuple(cur[:info.base.gpus])
            self._intent[jid] = "resize"
            free[info.home] = free.get(info.home, 0) + info.size - info.base.gpus


def _servers(p) -> set[str]:
    """The servers a placement uses."""
    return {server_of(g.gpu) for g in p.gpus} or set(p.cpu)


def gandiva(slice_s: float = SLICE_S, packing: bool = True, pack_limit: int = 2,
            migration: bool = False, grow_shrink: bool = False, profile_s: float | None = None,
            grow_idle_s: float | None = None, defrag_threshold: int = DEFRAG_THRESHOLD,
            gpu_mem_capacity: Mapping[str, int] | None = None) -> GandivaMechanism:
    """Gandiva with time-slicing and the mechanisms asked for (the factory of
    the registered ``gandiva``).

    Examples
    --------
    >>> from alloc.sched.gandiva.mechanism import gandiva
    >>> m = gandiva(migration=True, packing=False)
    >>> m.migration, m.packing, m.placement_options["oversubscribe"]
    (True, False, True)
    """
    return GandivaMechanism(slice_s=slice_s, packing=packing, pack_limit=pack_limit,
                            migration=migration, grow_shrink=grow_shrink, profile_s=profile_s,
                            grow_idle_s=grow_idle_s, defrag_threshold=defrag_threshold,
                            gpu_mem_capacity=gpu_mem_capacity)


def packing(slice_s: float = SLICE_S, pack_limit: int = 2, profile_s: float | None = None,
            gpu_mem_capacity: Mapping[str, int] | None = None) -> GandivaMechanism:
    """Section 6.3's Gandiva: time-slicing and introspective packing.

    Examples
    --------
    >>> from alloc.sched.gandiva.mechanism import packing
    >>> packing(pack_limit=3).pack_limit
    3
    """
    return gandiva(slice_s, packing=True, pack_limit=pack_limit, profile_s=profile_s,
                   gpu_mem_capacity=gpu_mem_capacity)


def migration(slice_s: float = SLICE_S, defrag_threshold: int = DEFRAG_THRESHOLD
              ) -> GandivaMechanism:
    """Section 6.4's Gandiva: time-slicing and migration, no packing.

    Examples
    --------
    >>> from alloc.sched.gandiva.mechanism import migration
    >>> m = migration()
    >>> m.migration, m.packing
    (True, False)
    """
    return gandiva(slice_s, packing=False, migration=True, defrag_threshold=defrag_threshold)


def slicing(slice_s: float = SLICE_S) -> GandivaMechanism:
    """Time-slicing alone (suspend-resume over-subscription).

    Examples
    --------
    >>> from alloc.sched.gandiva.mechanism import slicing
    >>> slicing(30.0).slice_s
    30.0
    """
    return gandiva(slice_s, packing=False)


__all__ = ["COST_KEY", "GandivaMechanism", "SLICE_S", "gandiva", "migration", "packing",
           "slicing"]
