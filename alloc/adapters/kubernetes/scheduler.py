"""The scheduler's cycle: the cache into a Session round, the round into API calls.

See `alloc.adapters.kubernetes` for what is read and done; this module is
the loop's one class, `Scheduler`, and what a cycle reports, `Cycle`.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any, Callable, Mapping

from ...gpukey import GpuKey, gpu_key, server_of
from ...errors import InputError
from ...model import MILLI, Cluster, GpuShare, Job, Placement
from .cache import Cache
from .client import Api, ApiError, EventSink
from .translate import (GANG_ANNOTATION, GANG_SIZE_ANNOTATION, GPUS_ANNOTATION, Levels, PodView,
                        gang_problem, job_for, node_closed, node_server, split_gang)

if TYPE_CHECKING:
    from ...session import Session

#: What the adapter's jobs give an order policy: each pod's priority (not the
#: attained service, nor how long a job will run).
K8S_GIVES = frozenset({"priority"})
#: Binding attempts for one pod (the pod's ``spec.nodeName`` is read before each retry).
BIND_TRIES = 3
#: Jobs whose pods are bound at once (each gang's pods in turn).
BIND_THREADS = 16
#: Seconds between two FailedScheduling Events on one pod whose reason changed
#: (the first is told at once; bad input always at once).
RETELL_S = 60.0


@dataclass(frozen=True)
class Cycle:
    """What one cycle did.

    ``started`` / ``preempted`` / ``evicted`` / ``rolled_back``: alloc job ids
    (``namespace/pod`` for a pod, ``namespace/group`` for a gang);
    ``bound``: pod keys bound; ``waiting``: job ids left pending, with
    ``reasons``; ``problems``: bad input lines; ``errors``: failed calls.
    Times in seconds: ``wall_s`` the whole cycle, ``api_s`` the cycle's wait on
    the API server (its own calls, and the wall time of the parallel
    bindings), ``round_s`` the Session round (``alloc_s`` = wall minus API);
    ``cpu_s`` the CPU time of the cycle's own thread (on a loaded machine,
    alloc's work apart from the time it waited for a core).
    """
    number: int
    started: tuple = ()
    bound: tuple = ()
    preempted: tuple = ()
    evicted: tuple = ()
    rolled_back: tuple = ()
    waiting: tuple = ()
    reasons: dict = field(default_factory=dict)
    problems: tuple = ()
    errors: tuple = ()
    wall_s: float = 0.0
    api_s: float = 0.0
    api_calls: int = 0
    round_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def alloc_s(self) -> float:
        """Seconds outside the API server's calls."""
        return self.wall_s - self.api_s


@dataclass
class _Unit:
    """A job as the cluster has it: its pods, its shape, where it runs."""
    jid: str
    pods: list[PodView]
    job: Job
    placement: Placement | None = None
    pinned: bool = False          # not alloc's (another scheduler's, or terminating)
    priority: int = 0
    created: str = ""


class Scheduler:
    """A Kubernetes scheduler for the pods whose ``schedulerName`` is ours.

    Parameters
    ----------
    api : Api
        The API server (calls counted and timed).
    scheduler_name : str
        Pods with this ``spec.schedulerName`` are alloc's (default ``"alloc"``).
    solver : str
        A registered solver (default ``"best-fit"``).
    preempt : {"order", "never"}
        Preempt lower-ranked pods for higher-ranked waiting ones, or never.
    order : str
        A registered order policy (``alloc policies --kind order``), as
        ``NAME[:KEY=VALUE,...]``, whose needs a pod gives (its priority):
        ``priority`` (the default: highest first) or ``fifo`` (by creation
        time; not preemptive unless ``fifo:preemptive=true``), a plug-in's
        too.  Jobs another scheduler binds (pinned) come first; among jobs
        the order ranks alike (a key order's equal keys), running before
        waiting, then creation time; under an order that is not preemptive,
        running jobs come first (nothing is preempted).
    time_limit : float, optional
        Seconds per round.
    levels : Levels
        Topology levels above ``server`` and their node labels.
    decisions : path or file, optional
        One JSON line per action.
    grace_period : int, optional
        Seconds a preempted pod gets to stop (None: the pod's own).
    events : bool
        Record a ``Scheduled`` Event on each bound pod (Warnings and
        preemptions are always recorded).
    pipeline : bool
        Do not wait for a cycle's bindings: the next cycle takes its pods as
        bound (assumed) and reports the bindings that ended meanwhile (a
        failed one: its job forgotten, its pods waiting again).  False: each
        cycle waits for its bindings.
    log : file
        One line per problem and per failed call (default: stderr).
    """

    def __init__(self, api: Api, *, scheduler_name: str = "alloc", solver: str = "best-fit",
                 preempt: str = "order", order: str = "priority",
                 time_limit: float | None = None,
                 levels: Levels | None = None, decisions=None, grace_period: int | None = None,
                 options=None, events: bool = True, pipeline: bool = False,
                 log: IO | None = None):
        if preempt not in ("order", "never"):
            raise InputError(f"preempt: expected 'order' or 'never', got {preempt!r}")
        from ...sched.views import build_order, parse_spec
        name, params = parse_spec(order) if isinstance(order, str) else (order, {})
        if name == "fifo":
            params.setdefault("preemptive", False)
        try:
            self._policy, _ = build_order((name, params), K8S_GIVES)
        except InputError as exc:
            raise InputError(f"order: {exc}") from None
        self.order = order
        from ..settings import check_session_settings
        # checked now (a solver that cannot run here fails here, not in a cycle)
        self.settings: dict[str, Any] = check_session_settings(
            dict(solver=solver, time_limit=time_limit, options=options,
                 preempt="order" if preempt == "order" else None), "k8s")
        self.api = api
        self.name = scheduler_name
        self.cache = Cache(levels or Levels())
        self.grace_period, self.events = grace_period, events
        self.log = log if log is not None else sys.stderr
        self._decisions = decisions
        self._out: Any = None
        self.session: Session | None = None
        self.number = 0
        self._shape: dict[str, Job] = {}            # jid -> the job as submitted
        self._units: dict[str, _Unit] = {}           # this cycle's units
        self._last_units: dict[str, _Unit] = {}      # last cycle's
        self._order: list[str] = []                  # the order last given to the session
        self._told: dict[str, tuple[str, float]] = {}  # key -> last reason told, when
        self._logged: set[str] = set()               # problem lines logged once
        self._nominated: dict[str, set[str]] = {}    # preemptor jid -> victim pod keys
        self._gone: set[str] = set()                 # pod uids deleted by alloc
        self._servers: dict[str, Any] = {}
        self._types: set[str] = set()
        self._first = True                           # the first cycle rebuilds the state
        from concurrent.futures import ThreadPoolExecutor
        self._pool = ThreadPoolExecutor(BIND_THREADS, thread_name_prefix="alloc-bind")
        self.sink = EventSink(api, log=self._note)
        self.pipeline = pipeline
        self._inflight: list[tuple] = []             # (unit, plan, placement, future)
        self._async_errors: list[str] = []
        _warm_up(solver, self.settings["preempt"])

    @property
    def _live(self) -> Session:
        """The session (the first cycle that sees a node makes it)."""
        assert self.session is not None
        return self.session

    # ---------------------------------------------------------------- sync
    def feed(self, items) -> None:
        """Apply queue items of a `Watcher` (lists and events) to the cache."""
        for it in items:
            self.cache.apply(it)

    def relist(self) -> None:
        """Read every kind afresh (``--once``, and a restarted scheduler's first view)."""
        from .client import KINDS
        for kind in KINDS:
            items, _ = self.api.list(kind)
            self.cache.apply(("list", kind, items))

    def _say(self, line: str) -> str:
        print(f"alloc k8s: cycle {self.number}: {line}", file=self.log, flush=True)
        return line

    def _note(self, line: str) -> None:
        self._say(line)

    def _sync_nodes(self, errors: list) -> None:
        c = self.cache
        if not c.nodes_changed and self.session is not None:
            return
        c.nodes_changed = False
        servers, closed = {}, {}
        for name, node in sorted(c.nodes.items()):
            try:
                servers[name] = node_server(node, c.levels)
            except ValueError as exc:
                if str(exc) not in self._logged:
                    self._logged.add(str(exc))
                    errors.append(self._say(f"{exc}; node left out"))
                continue
            why = node_closed(node)
            if why:
                closed[name] = why
        self._types = {s.gpu_type for s in servers.values() if s.gpus and s.gpu_type}
        if self.session is None:
            if not servers:
                return
            from ...session import Session
            st = self.settings
            self.session = Session(Cluster(tuple(servers.values()), c.levels.names),
                                   solver=st["solver"], time_limit=st["time_limit"],
                                   preempt=st["preempt"], options=st["options"], name="k8s")
            self._servers = dict(servers)
        s = self._live
        have = {sv.id: sv for sv in s.cluster.servers}
        for name in list(have):
            if name not in servers or servers[name] != have[name]:
                if name not in s.failed:
                    for jid in s.fail_server(name):
                        self._forget_job(jid)
        have = {sv.id: sv for sv in s.cluster.servers}
        for name, srv in servers.items():
            if name not in have or name in s.failed:
                s.add_server(srv)
        self._servers = dict(servers)
        for name in set(closed) - set(s.drained) - set(s.failed):
            s.drain_server(name)
        for name in set(s.drained) - set(closed):
            s.undrain_server(name)

    def _forget_job(self, jid) -> None:
        s = self.session
        if s is not None and jid in s.jobs:
            s.finish(jid)             # which takes it out of the session's order:
            self._order = []          # the next sync gives the order again
        self._shape.pop(jid, None)

    def _units_now(self, acts: dict, problems: list, waiting: dict) -> dict[str, _Unit]:
        """The jobs the cluster has now (running ones with their placement)."""
        c = self.cache
        # the first cycle also reads the ended pods: a gang's size counts them
        views = [v for v in map(c.view, c.keys(ended=self._first)) if v is not None]
        units: dict[str, _Unit] = {}
        bound: dict[str, list[PodView]] = {}
        gangs: dict[str, list[PodView]] = {}
        members: dict[str, int] = {}          # ns/gang -> its pods still present, any phase
        for v in views:
            if v.gang and v.scheduler == self.name:
                g = f"{v.namespace}/{v.gang}"
                members[g] = members.get(g, 0) + 1
            if v.active:
                if v.node not in self._servers or v.node not in c.nodes:
                    if v.node not in c.nodes:
                        acts["evict"].append(v)
                    continue
                mine = v.scheduler == self.name and v.gang and not v.deleting
                bound.setdefault(f"{v.namespace}/{v.gang}" if mine else v.key, []).append(v)
        # a gang bound in part (a scheduler stopped between two bindings): rolled back
        # when the state is rebuilt, its pods waiting meanwhile
        partial = set()
        if self._first:
            for key, pods in bound.items():
                size = pods[0].gang_size
                if pods[0].gang and size and members.get(key, 0) < size:
                    partial.add(key)
                    acts["rollback"].append((key, pods))
        running_groups = {f"{p.namespace}/{p.group}" for k, pods in bound.items()
                          if k not in partial for p in pods if p.group}
        for v in views:
            if (v.scheduler != self.name or v.node is not None or v.deleting or v.ended
                    or v.uid in self._gone):
                continue
            if v.problem:
                problems.append((v, v.problem))
                continue
            if v.gpu_types and not set(v.gpu_types) & self._types:
                problems.append((v, f"pod {v.key}: no node has GPU type "
                                    f"{' or '.join(v.gpu_types)}"))
                continue
            grp = f"{v.namespace}/{v.group}" if v.group else None
            if grp is not None and grp in partial:
                waiting[v.key] = f"pod group {grp}: a gang bound in part is rolled back first"
            elif grp is not None and grp not in running_groups:
                gangs.setdefault(grp, []).append(v)
            else:
                old = self._units.get(v.key)
                units[v.key] = old if old is not None and old.placement is None and \
                    _same(old.pods, [v]) else _Unit(v.key, [v], job_for(v.key, [v]),
                                                    priority=v.priority, created=v.created)
        # gangs: all or nothing, once min-member pods exist
        for g, pods in gangs.items():
            pods.sort(key=lambda p: p.key)
            ns, name = g.split("/", 1)
            mm = c.min_member(ns, name)
            if mm is None:
                anns = {p.min_member for p in pods if p.min_member is not None}
                mm = max(anns) if anns else None
            if mm is None or mm < 1:
                why = (f"pod group {g}: no PodGroup object and no alloc.io/min-member annotation"
                       if mm is None else f"pod group {g}: spec.minMember must be positive")
                problems.extend((p, why) for p in pods)
                continue
            bad = gang_problem(pods, f"pod group {g}")
            if bad:
                problems.extend((p, bad) for p in pods)
                continue
            if len(pods) < mm:
                why = f"pod group {g}: min-member {mm} exceeds its {len(pods)} pods"
                problems.extend((p, why) for p in pods)
                pg = c.podgroups.get(g)
                if pg is not None and (self._told.get("pg:" + g) or ("",))[0] != why:
                    self._told["pg:" + g] = (why, time.monotonic())
                    self._event(pg, "PodGroup", "Warning", "FailedScheduling", why, [])
                continue
            units[g] = _Unit(g, pods, job_for(g, pods), priority=max(p.priority for p in pods),
                             created=min(p.created for p in pods))
        # running units, with their placements
        taken: dict[str, dict[int, int]] = {}
        later: list[tuple[str, list[PodView]]] = []
        for key, pods in bound.items():
            if key in partial:
                continue
            claimed = all(p.bound_gpus is not None and len(p.bound_gpus) == p.gpus for p in pods)
            if claimed:
                for p in pods:
                    for k in p.bound_gpus or ():
                        t = taken.setdefault(p.node or "", {})
                        t[k] = t.get(k, 0) + p.gpu_milli
            else:
                later.append((key, pods))
                continue
            old = self._units.get(key)
            if old is not None and old.placement is not None and _same(old.pods, pods):
                units[key] = old          # nothing changed: the very same unit as last cycle
            else:
                units[key] = self._running(key, pods, taken, False)
        for key, pods in later:
            units[key] = self._running(key, pods, taken, True)
        for jid, victims in list(self._nominated.items()):
            left = [k for k in victims if k in c.pods]
            if not left:
                del self._nominated[jid]
            elif jid in units and units[jid].placement is None:
                waiting[jid] = f"waiting for {len(left)} preempted pod(s) to end"
                del units[jid]
        return units

    def _running(self, key: str, pods: list[PodView], taken: dict, pick: bool) -> _Unit:
        """A running unit; ``pick``: GPUs not recorded on the pods are the
        lowest indices nobody holds."""
        gpus: list[GpuShare] = []
        cpu: dict[str, int] = {}
        mem: dict[str, int] = {}
        for p in pods:
            node = p.node or ""
            cpu[node] = cpu.get(node, 0) + p.cpu
            mem[node] = mem.get(node, 0) + p.mem
            if not p.gpus:
                continue
            if not pick:
                idx = list(p.bound_gpus or ())
            else:
                t = taken.setdefault(node, {})
                size = self._servers[node].gpus
                idx = [k for k in range(size) if t.get(k, 0) + p.gpu_milli <= MILLI][:p.gpus]
                for k in idx:
                    t[k] = t.get(k, 0) + p.gpu_milli
            gpus += [GpuShare(gpu_key(node, k), p.gpu_milli) for k in idx]
        mine = all(p.scheduler == self.name and not p.deleting for p in pods)
        job = job_for(key, pods) if mine else Job(
            key, sum(p.gpus for p in pods), pods[0].gpu_milli if len(pods) == 1 else MILLI,
            sum(p.cpu for p in pods), sum(p.mem for p in pods))
        if len(gpus) != job.gpus:       # more GPUs bound than the node has: keep what exists
            job = replace(job, gpus=len(gpus), gpu_milli=MILLI if len(gpus) != 1 else job.gpu_milli)
        return _Unit(key, pods, job, Placement(key, tuple(gpus), cpu, mem), pinned=not mine,
                     priority=max(p.priority for p in pods), created=min(p.created for p in pods))

    def _sync_session(self, units: dict[str, _Unit], errors: list) -> None:
        s = self._live
        for jid in [j for j in s.jobs if j not in units]:
            self._forget_job(jid)
        fix: dict[str, Placement] = {}
        last = self._last_units
        for jid, u in units.items():
            if last.get(jid) is u and jid in self._shape and jid in s.jobs and (
                    (s.jobs[jid].current is None) == (u.placement is None)):
                continue                  # the same unit as last cycle, in the same state
            old = self._shape.get(jid)
            cur = s.jobs[jid].current if jid in s.jobs else None
            if old is not None and old != u.job:
                self._forget_job(jid)
                old = None
            if old is None:
                job = u.job if u.placement is None else replace(u.job, current=u.placement)
                try:
                    s.submit(job, where=f"pod {u.pods[0].key}")
                except InputError as exc:
                    line = f"{exc}; left out"
                    if line not in self._logged:
                        self._logged.add(line)
                        errors.append(self._say(line))
                    continue
                self._shape[jid] = u.job
            elif u.placement is not None and (cur is None or not cur.same_as(u.placement)):
                fix[jid] = u.placement
            elif u.placement is None and cur is not None:
                s.stop(jid, requeue=True)      # a binding that did not happen
        if fix:
            running: dict[Any, Placement | None] = {j: None for j in s.running}
            running.update(fix)
            try:
                s.reconcile(running, where="k8s")
            except InputError as exc:
                errors.append(self._say(f"{exc}; not reconciled"))
        rank = self._ranks({jid: u for jid, u in units.items() if jid in s.jobs}, s.cluster)
        order = sorted(rank, key=rank.__getitem__)
        if order != self._order:
            s.set_order(order, where="k8s")
            self._order = order

    def _ranks(self, units: Mapping[str, "_Unit"], cluster: Cluster) -> dict[str, tuple]:
        """Each job's rank key, smallest first: pinned jobs, then (running
        jobs first under an order that is not preemptive) the registry
        order's rank, running before waiting among jobs it ranks alike, then
        creation time."""
        from ...sched.kinds import Context
        from ...sched.views import View, rank
        created = {c: float(k) for k, c in enumerate(sorted({u.created for u in units.values()}))}
        views = {jid: View(jid, created[u.created], u.job.gpus, priority=u.priority,
                           running=u.placement is not None) for jid, u in units.items()}
        pol = self._policy
        hold = not getattr(pol, "preemptive", False)
        ctx = Context(float(len(created)), self.number, cluster, views)
        key = getattr(pol, "key", None)
        if callable(key) and getattr(pol, "starvation_s", None) is None:
            pos = {jid: key(v, ctx) for jid, v in views.items()}
        else:
            ranked = rank(pol, list(views.values()), ctx.now_s, cluster, self.number)
            pos = {jid: k for k, jid in enumerate(ranked)}
        return {jid: (0 if u.pinned else 1, 0 if hold and u.placement is not None else 1,
                      pos[jid], 0 if u.placement is not None else 1, u.created, jid)
                for jid, u in units.items()}

    # --------------------------------------------------------------- cycle
    def cycle(self) -> Cycle:
        """One cycle: sync, one round, act.  API failures are reported, never raised."""
        t0 = time.perf_counter()
        self._cpu0 = time.thread_time()
        spent0, calls0 = self.api.thread_spent, self.api.total_calls
        self._binding_s = 0.0
        self.number += 1
        errors: list[str] = []
        try:
            self._sync_nodes(errors)
        except InputError as exc:
            self.cache.nodes_changed = True        # tried again next cycle
            errors.append(self._say(f"{exc}; nodes not updated"))
        if self.session is None:
            return self._report(t0, spent0, calls0, errors=errors + ["no nodes yet"])
        acts: dict[str, list] = {"evict": [], "rollback": []}
        problems: list[tuple[PodView, str]] = []
        waiting: dict[str, str] = {}
        done_started, done_bound = self._reap(errors)
        units = self._units_now(acts, problems, waiting)
        evicted = self._evict(acts["evict"], errors)
        rolled = self._rollback(acts["rollback"], errors)
        for jid in rolled:
            units.pop(jid, None)
        self._last_units, self._units = self._units, units
        self._sync_session(units, errors)
        r = self._live.step()
        preempted, held = self._preempt(r, errors)
        started, bound = self._start(r, held, waiting, errors)
        started, bound = done_started + started, done_bound + bound
        for v, why in problems:
            waiting[v.key] = why
        for jid in r.unplaced:
            if jid in units and jid not in waiting:
                waiting[jid] = r.reasons.get(jid) or "waiting for room"
        self._tell_waiting(waiting, {v.key for v, _ in problems})
        self._first = False
        return self._report(t0, spent0, calls0, started, bound, preempted, evicted, rolled,
                            waiting, tuple(w for _, w in problems), errors, r.latency_s)

    def _report(self, t0, spent0, calls0, started=(), bound=(), preempted=(), evicted=(),
                rolled=(), waiting=None, problems=(), errors=(), round_s=0.0) -> Cycle:
        waiting = waiting or {}
        return Cycle(self.number, tuple(started), tuple(bound), tuple(preempted), tuple(evicted),
                     tuple(rolled), tuple(waiting), dict(waiting), tuple(problems), tuple(errors),
                     time.perf_counter() - t0,
                     self.api.thread_spent - spent0 + getattr(self, "_binding_s", 0.0),
                     self.api.total_calls - calls0, round_s,
                     time.thread_time() - getattr(self, "_cpu0", time.thread_time()))

    # ---------------------------------------------------------------- acts
    def _try(self, fn: Callable[[], Any], errors: list) -> bool:
        try:
            fn()
            return True
        except ApiError as exc:
            errors.append(self._say(f"{exc}; retried next cycle"))
            return False

    def _delete(self, v: PodView, grace: int | None, errors: list) -> bool:
        ok = self._try(lambda: self.api.delete_pod(v.namespace, v.name, v.uid, grace), errors)
        if ok:
            self._gone.add(v.uid)
            self.cache.forget(v.key)
        return ok

    def _evict(self, pods: list[PodView], errors: list) -> list[str]:
        out = []
        for v in pods:
            if v.uid in self._gone or v.scheduler != self.name:
                continue
            why = f"node {v.node} is gone; pod {v.key} deleted"
            pod = self.cache.pods.get(v.key) or {}
            if self._delete(v, 0, errors):
                self._event(pod, "Pod", "Warning", "NodeDeleted", why, errors)
                self._decide("evict", v.key, {v.key: v.node}, reason=why)
                out.append(v.key)
        return out

    def _rollback(self, parts: list, errors: list) -> list[str]:
        out = []
        for key, pods in parts:
            why = (f"gang {key}: {len(pods)} of its {pods[0].gang_size} pods were bound; "
                   f"the bound ones are deleted (all or nothing)")
            ok = True
            for v in pods:
                pod = self.cache.pods.get(v.key) or {}
                if self._delete(v, 0, errors):
                    self._event(pod, "Pod", "Warning", "GangRollback", why, errors)
                else:
                    ok = False
            if ok:
                self._say(why)
                self._decide("rollback", key, {v.key: v.node for v in pods}, reason=why)
                out.append(key)
        return out

    def _preempt(self, r, errors: list) -> tuple[list, set]:
        """Delete the pods of each preempted job, with an Event saying why;
        the jobs they were stopped for wait until the pods are gone."""
        s = self._live
        out, held = [], set()
        for p in r.preempt:
            jid = p.job
            u = self._units.get(jid)
            if u is None:
                continue
            by = r.preempted_for.get(jid)
            bu = self._units.get(by)
            why = (f"preempted by alloc for {by} (priority {bu.priority if bu else '?'} over "
                   f"{u.priority})")
            ok = True
            for v in u.pods:
                pod = self.cache.pods.get(v.key) or {}
                if self._delete(v, self.grace_period, errors):
                    self._event(pod, "Pod", "Warning", "Preempted", why, errors)
                else:
                    ok = False
            self._decide("preempt", jid, {v.key: v.node for v in u.pods}, placement=p,
                         reason=why, by=by)
            self._forget_job(jid)
            out.append(jid)
            if by is not None:
                self._nominated.setdefault(by, set()).update(v.key for v in u.pods)
                held.add(by)
            if not ok:
                self._say(f"job {jid}: not every pod could be deleted")
        for jid in held:
            if jid in s.jobs and s.jobs[jid].current is not None:
                s.stop(jid, requeue=True)
        return out, held

    def _start(self, r, held: set, waiting: dict, errors: list) -> tuple[list, list]:
        """Bind the started jobs' pods (jobs in parallel, a gang's pods in
        turn, rolled back if one fails)."""
        s = self._live
        cap = {sv.id: (sv.cpu, sv.mem) for sv in s.cluster.servers}
        used: dict[str, list[int]] = {}
        for pl in r.allocation.placements:
            for n, v in pl.cpu.items():
                used.setdefault(n, [0, 0])[0] += v
            for n, v in pl.mem.items():
                used.setdefault(n, [0, 0])[1] += v
        todo: list[tuple[_Unit, dict, Placement]] = []
        for p in r.start:
            jid = p.job
            if jid in held:
                waiting[jid] = "waiting for the pods it preempted to end"
                continue
            u = self._units.get(jid)
            if u is None:
                continue
            if len(u.pods) == 1:
                v = u.pods[0]
                plan = {v.key: (_node(p), tuple(GpuKey.parse(g.gpu).gpu for g in p.gpus),
                                v.cpu, v.mem)}
                todo.append((u, plan, p))
                continue
            free = {n: (cap[n][0] - used.get(n, [0, 0])[0] + p.cpu.get(n, 0),
                        cap[n][1] - used.get(n, [0, 0])[1] + p.mem.get(n, 0))
                    for n in set(p.cpu) | {server_of(g.gpu) for g in p.gpus}}
            split = split_gang(p, u.pods, free)
            if split is None:
                s.stop(jid, requeue=True, hold=True)
                waiting[jid] = "its placement did not split into whole pods; placed anew next cycle"
                continue
            exact = _placement(jid, split, u.pods)
            if not exact.same_as(p):
                running: dict[Any, Placement | None] = {j: None for j in s.running}
                running[jid] = exact
                try:
                    s.reconcile(running, where="k8s")
                except InputError as exc:
                    errors.append(self._say(f"{exc}; gang {jid} placed anew"))
                    s.stop(jid, requeue=True, hold=True)
                    continue
            todo.append((u, split, exact))
        for u, plan, pl in todo:
            for v in u.pods:            # bound until told otherwise: the next cycle knows it
                self.cache.assume(v.key, v.uid, plan[v.key][0], _annotations(u, plan, v))
            self._inflight.append((u, plan, pl, self._pool.submit(
                self._bind_all, u, plan, self._async_errors)))
        if not self.pipeline:
            return self._reap(errors, wait=True)
        return [], []

    def _reap(self, errors: list, wait: bool = False) -> tuple[list, list]:
        """The bindings that ended (all of them with ``wait``): decisions for
        those that went through, the jobs of those that failed forgotten (their
        pods wait again)."""
        t0 = time.perf_counter()
        done: list[tuple] = []
        left: list[tuple] = []
        for item in self._inflight:
            (done if wait or item[3].done() else left).append(item)
        self._inflight = left
        results = [item[3].result() for item in done]
        if wait:
            self._binding_s += time.perf_counter() - t0   # the cycle waits on the API server
        while self._async_errors:
            errors.append(self._async_errors.pop(0))
        started, bound_keys = [], []
        for (u, plan, pl, _), rolled in zip(done, results):
            if rolled is None:
                started.append(u.jid)
                bound_keys += [v.key for v in u.pods]
                self._decide("start", u.jid, {k: v[0] for k, v in plan.items()}, placement=pl)
                continue
            for v in u.pods:
                self.cache.forget(v.key)
            if rolled:
                self._decide("rollback", u.jid, {k: plan[k][0] for k in rolled},
                             reason=f"gang {u.jid}: a binding failed; the pods bound are deleted")
            self._forget_job(u.jid)
        return started, bound_keys

    def _bind_all(self, u: _Unit, plan: dict, errors: list) -> list[str] | None:
        """Bind every pod of the unit (None), or delete those bound when one
        fails (the pod keys deleted).  Runs in a worker thread: no session change."""
        done: list[PodView] = []
        gang = len(u.pods) > 1
        for v in u.pods:
            node = plan[v.key][0]
            if self._bind(v, node, _annotations(u, plan, v), errors):
                done.append(v)
                continue
            if gang:
                why = (f"gang {u.jid}: binding pod {v.key} failed; the {len(done)} pods bound "
                       f"are deleted (all or nothing)")
                for b in done:
                    pod = self.cache.pods.get(b.key) or {}
                    if self._delete(b, 0, errors):
                        self._event(pod, "Pod", "Warning", "GangRollback", why, errors)
                self._say(why)
            return [b.key for b in done]
        if self.events:
            for v in u.pods:
                pod = self.cache.pods.get(v.key) or {}
                self._event(pod, "Pod", "Normal", "Scheduled",
                            f"Successfully assigned {v.key} to {plan[v.key][0]}"
                            + (f" (gang {u.jid})" if gang else ""), errors)
        return None

    def _bind(self, v: PodView, node: str, ann: dict, errors: list) -> bool:
        """One binding, retried with backoff; the pod's ``spec.nodeName`` is
        read before a retry, so that nothing is bound twice."""
        delay = 0.05
        for attempt in range(BIND_TRIES):
            if attempt:
                try:
                    now = self.api.get_pod(v.namespace, v.name)
                except ApiError as exc:
                    errors.append(self._say(str(exc)))
                    now = {}
                if now is None or (now.get("metadata") or {}).get("uid") != v.uid:
                    return False                      # the pod is gone
                bound_to = (now.get("spec") or {}).get("nodeName")
                if bound_to:
                    if bound_to == node:
                        self.cache.assume(v.key, v.uid, node, ann)
                        return True
                    errors.append(self._say(f"pod {v.key} is bound to {bound_to} already"))
                    return False
            try:
                self.api.bind(v.namespace, v.name, v.uid, node, ann)
                self.cache.assume(v.key, v.uid, node, ann)
                return True
            except ApiError as exc:
                if exc.status in (400, 403, 404, 422):
                    errors.append(self._say(f"{exc}; not retried"))
                    return False
                errors.append(self._say(f"{exc}; attempt {attempt + 1} of {BIND_TRIES}"))
                time.sleep(delay)
                delay *= 4
        return False

    def _tell_waiting(self, waiting: dict, bad: set) -> None:
        """A Warning Event per waiting pod whose reason changed (at most one
        each `RETELL_S` seconds, bad input at once); a log line per new
        problem (bad input)."""
        now = time.monotonic()
        for jid, why in waiting.items():
            u = self._units.get(jid)
            pods = u.pods if u is not None else []
            if not pods:
                v = self.cache.view(jid)
                pods = [v] if v is not None else []
            for v in pods:
                last = self._told.get(v.key)
                if last is not None and (last[0] == why or (
                        v.key not in bad and now - last[1] < RETELL_S)):
                    continue
                self._told[v.key] = (why, now)
                if v.key in bad and why not in self._logged:
                    self._logged.add(why)
                    self._say(why + "; the pod waits")
                pod = self.cache.pods.get(v.key)
                if pod is not None:
                    self._event(pod, "Pod", "Warning", "FailedScheduling", why, [])
        if len(self._told) > 4 * len(self.cache.pods) + 1000:
            live = set(self.cache.pods)
            self._told = {k: w for k, w in self._told.items() if k in live or k.startswith("pg:")}

    def _event(self, obj: dict, kind: str, etype: str, reason: str, msg: str, errors: list) -> None:
        """Queue an Event (written by the sink's thread; a failure is one log line)."""
        if obj:
            self.sink.put(obj, kind, etype, reason, msg)

    def _decide(self, action: str, jid: str, pods: dict, *, placement: Placement | None = None,
                reason: str | None = None, by: str | None = None) -> None:
        if self._decisions is None:
            return
        if self._out is None:
            self._out = self._decisions if hasattr(self._decisions, "write") else \
                open(self._decisions, "a")
        line: dict[str, Any] = {"cycle": self.number, "action": action, "job": jid,
                                "pods": pods, "nodes": sorted(set(pods.values()))}
        if placement is not None:
            gpus: dict[str, int] = {}
            for g in placement.gpus:
                n = server_of(g.gpu)
                gpus[n] = gpus.get(n, 0) + 1
            line["gpus"] = gpus
        if reason:
            line["reason"] = reason
        if by is not None:
            line["for"] = by
        self._out.write(json.dumps(line) + "\n")
        self._out.flush()

    def close(self) -> None:
        """Wait for the bindings in flight, write the Events still queued, stop
        the threads, close the decisions file (if this scheduler opened it)."""
        if self.session is not None:
            self._reap([], wait=True)
        self.sink.close()
        self._pool.shutdown(wait=True)
        if self._out is not None and self._out is not self._decisions:
            self._out.close()
        self._out = None


def _warm_up(solver: str, preempt: str | None) -> None:
    """One round on a one-node cluster, so that the first cycle does not pay
    for importing the session, the core and the solver."""
    from ...session import Session
    from ...model import Server
    s = Session(Cluster((Server("warm", cpu=1000, mem=1000, gpus=1, gpu_type="gpu"),)),
                solver=solver, preempt=preempt, name="warm-up")
    s.submit(Job("warm", 1, cpu=100, mem=100))
    s.step()


def _annotations(u: _Unit, plan: dict, v: PodView) -> dict[str, str]:
    """What the Binding sets on the pod: its GPU indices; a gang's name and size."""
    ann = {GPUS_ANNOTATION: ",".join(map(str, plan[v.key][1]))}
    if len(u.pods) > 1:
        ann[GANG_ANNOTATION] = u.jid.split("/", 1)[1]
        ann[GANG_SIZE_ANNOTATION] = str(len(u.pods))
    return ann


def _same(a: list[PodView], b: list[PodView]) -> bool:
    """The same pod views (objects: a view is remade when its pod changes)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _node(p: Placement) -> str:
    for g in p.gpus:
        return server_of(g.gpu)
    return next(iter(p.cpu))


def _placement(jid: str, plan: dict, pods: list[PodView]) -> Placement:
    by = {v.key: v for v in pods}
    gpus: list[GpuShare] = []
    cpu: dict[str, int] = {}
    mem: dict[str, int] = {}
    for key, (node, idx, c, m) in sorted(plan.items()):
        gpus += [GpuShare(gpu_key(node, k), by[key].gpu_milli) for k in idx]
        cpu[node] = cpu.get(node, 0) + c
        mem[node] = mem.get(node, 0) + m
    return Placement(jid, tuple(gpus), cpu, mem)


__all__ = ["BIND_THREADS", "BIND_TRIES", "Cycle", "K8S_GIVES", "RETELL_S", "Scheduler"]
