r"""AlloX's experiment on alloc's simulator: the cluster, the workload with its
profiling runs, the progress model and the mechanism that applies a rule.

**Cluster.**  ``G`` GPU slots and ``C`` CPU-node slots.  Each slot is a
server with one device: type ``"gpu"`` (a GPU) or ``"cpu"`` (a node of
``cores`` cores, what a job running on CPUs takes whole); the core's
accounting of devices is the slot accounting, and the device type is the
resource kind a job runs on.

**Workload** (`workload`).  Each `FlexJob` is a job of one device; its true times, estimates, user and demands are
in ``extra``.  With profiling, four *probe* runs arrive with it (AlloX
measures each job briefly on both kinds before scheduling it): on a CPU node
for ``1 %`` and ``2 %`` of its CPU time and on a GPU for ``1 %`` and
``2 %`` of its GPU time, each at least one time unit and rounded up to
whole units (the AlloX simulator advances in unit steps).

**Progress** (`FlexProgress`).  A job on a device of kind ``k`` does
$1/p^k_j$ of its work per unit of time (a probe: $1/d$); a stopped job
keeps what it did and resumes at the rate of the kind it restarts on.  (Its
work is counted in units that keep whole times whole.)

**Decisions** (`FlexSizing`, a sizing policy).  At every decision instant
(an arrival or a completion) the policy gives each job the size it runs at
now -- one device of the kind chosen (``Size(1, gpu_type=kind)``) or none
(``Size(0)``: it waits) -- and the round's placement (best fit, every
placement checked by the session) puts the started jobs on free slots:

1. finished jobs and probes free their slot; a job joins its user's queue
   when every probe of every job that arrived at the same instant is done
   (the simulator profiles arrivals in groups; no profiling: at arrival);
2. probes waiting for a slot start first, round-robin over the users
   (each user's first waiting probe, then each user's second, ...);
3. the rule (`alloc.sched.allox.rules`) decides on what is left: the jobs
   it stops get ``Size(0)`` (they keep their progress), the jobs it starts
   one device of the kind it chose.

A user's fairness score is the sum of the fair values of its running jobs
(`fair_value`); its usage for DRF and equal shares counts its probes.
JCT is a job's finish less its arrival (profiling included).
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from ...errors import InputError
from ...model import Cluster, Server
from ...sim.jobs import WorkloadJob
from ...sim.progress import ProgressModel, Run
from ..kinds import Size
from .jobs import KINDS, FlexJob
from .rules import (ALLOX_TIMEOUT, Allox, Decision, Drf, DrfExt, EqualShare, Running, Sjf, Srpt,
                    View, fair_value)

#: Fractions of its time each probe runs, per kind (the AlloX simulator's).
PROBES = (0.01, 0.02)
#: Cores of a CPU node and the memory per slot (GB) in the AlloX simulator.
CORES_PER_NODE = 32.0
MEM_PER_SLOT = 64.0
#: What a probe holds while it runs: (cores, GPUs, GB of memory).
PROBE_USAGE = {"cpu": (32.0, 0.0, 16.0), "gpu": (0.0, 1.0, 12.0)}


def flex_cluster(gpus: int = 20, cpu_nodes: int = 20) -> Cluster:
    """``gpus`` GPU slots and ``cpu_nodes`` CPU-node slots, each a server with
    one device of type ``"gpu"`` or ``"cpu"``.

    Examples
    --------
    >>> from alloc.sched.allox.sim import flex_cluster
    >>> c = flex_cluster(2, 1)
    >>> [(s.id, s.gpu_type) for s in c.servers]
    [('g0', 'gpu'), ('g1', 'gpu'), ('c0', 'cpu')]
    """
    if not (isinstance(gpus, int) and isinstance(cpu_nodes, int) and gpus >= 0 and cpu_nodes >= 0
            and gpus + cpu_nodes > 0):
        raise InputError(f"cluster: expected slot counts >= 0 (not both 0), got {gpus}, {cpu_nodes}")
    servers = [Server(f"g{i}", cpu=32000, mem=65536, gpus=1, gpu_type="gpu") for i in range(gpus)]
    servers += [Server(f"c{i}", cpu=32000, mem=65536, gpus=1, gpu_type="cpu")
                for i in range(cpu_nodes)]
    return Cluster(tuple(servers))


def probe_time(job: FlexJob, kind: str, frac: float) -> float:
    """A probe's run time: ``frac`` of the job's true time on ``kind``, at
    least 1, rounded up to whole units."""
    return float(math.ceil(max(frac * job.time(kind), 1.0) - 1e-9))


def workload(jobs: Iterable[FlexJob], profiling: bool = True) -> list[WorkloadJob]:
    """The simulator's jobs: each `FlexJob` and, with ``profiling``, its four
    probes (ids ``"<id>~cpu1"``, ``"<id>~cpu2"``, ``"<id>~gpu1"``,
    ``"<id>~gpu2"``), sorted by arrival.

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.sim import workload
    >>> [w.id for w in workload([FlexJob("a", "u", 0.0, cpu_s=150.0, gpu_s=40.0)])]
    ['a', 'a~cpu1', 'a~cpu2', 'a~gpu1', 'a~gpu2']
    """
    out = []
    for j in jobs:
        out.append(WorkloadJob(j.id, float(j.arrival), 1, work=j.cpu_s * j.gpu_s, extra={
            "user": j.user, "cpu_s": j.cpu_s, "gpu_s": j.gpu_s, "cpu_est": j.cpu_est,
            "gpu_est": j.gpu_est, "cpu": j.cpu, "mem": j.mem, "gpu": j.gpu,
            "gpu_mem": j.gpu_mem}))
        if profiling:
            for kind in ("cpu", "gpu"):
                for n, frac in enumerate(PROBES, 1):
                    d = probe_time(j, kind, frac)
                    out.append(WorkloadJob(f"{j.id}~{kind}{n}", float(j.arrival), 1, work=d,
                                           extra={"probe_of": j.id, "user": j.user, "kind": kind,
                                                  "time": d}))
    out.sort(key=lambda w: w.arrival_s)
    return out


#: The ``extra`` fields a job of the AlloX experiment carries (a workload CSV's
#: columns beyond ``id,arrival_s,gpus,duration_s``; a probe carries
#: ``probe_of``, ``user``, ``kind`` and ``time`` instead).
JOB_FIELDS = ("user", "cpu_s", "gpu_s", "cpu_est", "gpu_est", "cpu", "mem", "gpu", "gpu_mem")


#: Columns of an AlloX workload CSV (the simulator's plain format and extras).
CSV_COLUMNS = ("id", "arrival_s", "gpus", "duration_s", "work", *JOB_FIELDS, "probe_of", "kind",
               "time")


def write_workload_csv(jobs: Iterable[FlexJob], path, profiling: bool = True) -> int:
    """Write `workload` as a CSV in the simulator's plain format (the AlloX
    fields as extra columns, blank where a row has none); the rows written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.sim import write_workload_csv
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "jobs.csv"
    >>> write_workload_csv([FlexJob("a", "u", 0.0, cpu_s=150.0, gpu_s=40.0)], f)
    5
    >>> f.read_text().splitlines()[1]
    'a,0.0,1,40.0,6000.0,u,150.0,40.0,150.0,40.0,32.0,0.0,1.0,0.0,,,'
    """
    import csv
    rows = workload(jobs, profiling)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            e = r.extra
            alone = float(e["time"]) if e.get("probe_of") else float(min(e["cpu_s"], e["gpu_s"]))
            w.writerow([r.id, r.arrival_s, r.gpus, alone, r.work,
                        *[e.get(k, "") for k in JOB_FIELDS],
                        e.get("probe_of", ""), e.get("kind", ""), e.get("time", "")])
    return len(rows)


def flex_job(w: Any) -> FlexJob:
    """The `FlexJob` of a workload job (its ``extra``).

    Raises
    ------
    InputError
        One line naming the job and the missing field.
    """
    e = w.extra
    missing = [k for k in JOB_FIELDS if e.get(k) in (None, "")]
    if missing:
        raise InputError(f"job {w.id!r}: {missing[0]}: expected a value (an AlloX job carries "
                         f"{', '.join(JOB_FIELDS)})")
    return FlexJob(w.id, str(e["user"]), float(w.arrival_s), float(e["cpu_s"]), float(e["gpu_s"]),
                   float(e["cpu_est"]), float(e["gpu_est"]), float(e["cpu"]), float(e["mem"]),
                   float(e["gpu"]), float(e["gpu_mem"]))


def _times(job: Any) -> tuple[float, ...]:
    """``(time,)`` of a probe, ``(cpu_s, gpu_s)`` of a job; InputError on one
    line when the workload does not give them (> 0)."""
    e = job.extra
    keys = ("time",) if e.get("probe_of") else ("cpu_s", "gpu_s")
    out = []
    for k in keys:
        v = e.get(k)
        try:
            x = float(v)            # type: ignore[arg-type]
        except (TypeError, ValueError):
            x = math.nan
        if not (x > 0 and math.isfinite(x)):
            raise InputError(f"job {job.id!r}: {k}: expected a value > 0 (an AlloX job carries "
                             f"{', '.join(JOB_FIELDS)}), got {v!r}")
        out.append(x)
    return tuple(out)


class FlexProgress(ProgressModel):
    """Progress of a job on the kind of device it runs on (see the module notes).

    A job's work is $p^{cpu}_j p^{gpu}_j$ units and it does $p^{cpu}_j$ of
    them per unit of time on a GPU and $p^{gpu}_j$ on a CPU node, so it
    takes exactly $p^{gpu}_j$ or $p^{cpu}_j$ (whole units stay whole: the
    AlloX simulator's instants are integers); a probe's work is its time, at
    rate 1 on its kind.

    Examples
    --------
    >>> from alloc.sched.allox.jobs import FlexJob
    >>> from alloc.sched.allox.sim import FlexProgress, workload
    >>> from alloc.sim.progress import Run
    >>> w = workload([FlexJob("a", "u", 0.0, cpu_s=100.0, gpu_s=25.0)], profiling=False)[0]
    >>> m = FlexProgress()
    >>> m.work(w) / m.rate(w, Run(gpus=1, gpu_type="cpu"))
    100.0
    """
    name = "flex"
    gives = frozenset({"duration"})

    def work(self, job: Any) -> float:
        """``cpu_s * gpu_s`` (a probe: its time)."""
        t = _times(job)
        return t[0] if len(t) == 1 else t[0] * t[1]

    def alone_s(self, job: Any) -> float | None:
        """Its time on the kind it runs faster on (a probe: its time)."""
        return min(_times(job))

    def rate(self, job: Any, run: Run) -> float:
        """Units per unit of time on the run's kind (0 on a device of another type)."""
        e = job.extra
        kind = run.gpu_type
        if kind not in KINDS:
            return 0.0
        if e.get("probe_of"):
            return 1.0 if kind == e.get("kind") else 0.0
        cpu_s, gpu_s = _times(job)
        return gpu_s if kind == "cpu" else cpu_s


#: The rules by name, with how each is built.
RULES = ("allox", "allox-plus", "sjf", "srpt", "drf", "drf-fifo", "drf-ext", "es")


def make_rule(name: str, *, alpha: float = 0.1, max_jobs: int = 50, timeout: float = ALLOX_TIMEOUT,
              beta: float | None = None, vector: bool = True):
    """A rule object of `alloc.sched.allox.rules` by name."""
    if name == "allox":
        return Allox(alpha, max_jobs)
    if name == "allox-plus":
        return Sjf(timeout)
    if name == "sjf":
        return Sjf()
    if name == "srpt":
        return Srpt()
    if name == "drf":
        return Drf()
    if name == "drf-fifo":
        return Drf(fifo=True, gpu_only=True)
    if name == "drf-ext":
        if beta is None:
            raise InputError("drf-ext: beta: expected the exchange rate (cores per GPU)")
        return DrfExt(beta)
    if name == "es":
        return EqualShare(vector=vector)
    raise InputError(f"rule: expected one of {', '.join(RULES)}, got {name!r}")


class FlexSizing:
    """The sizing policy of the AlloX experiment (see the module notes): each
    round it gives every job it starts now ``Size(1, gpu_type=kind)``, every
    other waiting job ``Size(0)`` (it waits), and keeps the running ones
    (``Size(0)`` for a job the rule stops); the round's placement puts the
    started jobs on free slots of their kind.

    Parameters
    ----------
    rule : object
        A rule with ``decide(View) -> Decision`` (`make_rule`).
    users : sequence of str, optional
        Every user, in tie-breaking order (default: as they appear).
    profiling : bool
        Jobs wait for their arrival group's probes (False: no probes are
        expected in the workload).
    gpus, cpu_nodes : int, optional
        Slots of each kind (default: the run's cluster's devices by type).
    """

    def __init__(self, rule: Any, users: Sequence[str] = (), profiling: bool = True) -> None:
        self.rule = rule
        self.users: list[str] = list(users)
        self.profiling = profiling
        self.capacity = (0.0, 0.0, 0.0)
        self.slots: dict[str, int] = {}
        self.running: dict[str, Running] = {}
        self.probe_running: dict[str, str] = {}            # probe id -> kind
        self.started: dict[str, str] = {}                  # id -> kind, this round
        self.queued: dict[str, list[FlexJob]] = {}
        self.done: dict[str, float] = {}
        self.score: dict[str, float] = {}
        self.held: dict[str, list[float]] = {}
        self.probes: dict[str, list[str]] = {}             # user -> waiting probe ids
        self.probe_kind: dict[str, str] = {}
        self.group_left: dict[float, int] = {}
        self.group: dict[float, list[FlexJob]] = {}
        self.jobs: dict[str, FlexJob] = {}
        self.seen: set[str] = set()
        self.order: dict[str, int] = {}                    # id -> arrival sequence
        self.fresh: list[str] = []
        self.decisions = 0

    # ------------------------------------------------------------ round
    def size(self, jobs: Sequence[Any], ctx: Any) -> dict[str, Size]:
        """Sizes of this round (see the class notes)."""
        if not self.slots:
            self._learn(ctx.cluster)
        now = ctx.now_s
        present = {j.id: j for j in jobs}
        self._settle(present, now)
        for j in jobs:
            if j.id not in self.seen:
                self._arrive(j)
        out: dict[str, Size] = {}
        free = dict(self.slots)
        for r in self.running.values():
            free[r.kind] -= 1
        for kind in self.probe_running.values():
            free[kind] -= 1
        self.started = {}
        for pid, kind in self._place_probes(free):
            out[pid] = Size(1, gpu_type=kind)
            self.started[pid] = kind
        view = View(now, dict(self.slots), free, self.queued, list(self.running.values()),
                    self.users, self.capacity, self.score, self.done,
                    {u: (h[0], h[1], h[2]) for u, h in self.held.items()})
        dec: Decision = self.rule.decide(view)
        self.decisions += 1
        for jid in dec.stops:
            self._stop(jid, now)
            out[jid] = Size(0)
        for jid, kind in dec.starts:
            self._start(jid, kind, now)
            out[jid] = Size(1, gpu_type=kind)
        for jid in self.fresh:            # arrivals wait until started (then keep Size(0))
            out.setdefault(jid, Size(0))
        self.fresh = []
        return {k: v for k, v in out.items() if k in present}

    # ---------------------------------------------------------- helpers
    def _learn(self, cluster: Cluster) -> None:
        for s in cluster.servers:
            if s.gpu_type in KINDS:
                self.slots[s.gpu_type] = self.slots.get(s.gpu_type, 0) + s.gpus
        g, c = self.slots.get("gpu", 0), self.slots.get("cpu", 0)
        self.capacity = (c * CORES_PER_NODE, float(g), (g + c) * MEM_PER_SLOT)

    def _user(self, u: str) -> None:
        if u not in self.queued:
            if u not in self.users:
                self.users.append(u)
            self.queued[u] = []
            self.score[u] = 0.0
            self.held[u] = [0.0, 0.0, 0.0]
            self.probes[u] = []

    def _arrive(self, rec: Any) -> None:
        self.seen.add(rec.id)
        self.fresh.append(rec.id)
        self.order[rec.id] = len(self.order)
        e = rec.extra
        if e.get("probe_of"):
            if e.get("user") in (None, "") or e.get("kind") not in KINDS:
                raise InputError(f"job {rec.id!r}: a probe of {e['probe_of']!r} carries its "
                                 f"user and kind ({', '.join(KINDS)}), got {e.get('user')!r} and "
                                 f"{e.get('kind')!r}")
            self._user(e["user"])
            self.probes[e["user"]].append(rec.id)
            self.probe_kind[rec.id] = e["kind"]
            return
        job = flex_job(rec)                   # one line naming a field the job lacks
        self._user(job.user)
        self.jobs[job.id] = job
        if self.profiling:
            t = job.arrival
            self.group.setdefault(t, []).append(job)
            self.group_left[t] = self.group_left.get(t, 0) + len(PROBES) * len(KINDS)
        else:
            self._enqueue(job)

    def _enqueue(self, job: FlexJob) -> None:
        """Into its user's queue, kept in arrival order (ties: as they arrived)."""
        q = self.queued[job.user]
        q.append(job)
        if len(q) > 1 and self.order[q[-2].id] > self.order[job.id]:
            q.sort(key=lambda j: self.order[j.id])

    def _settle(self, present: Mapping[str, Any], now: float) -> None:
        """Jobs and probes that left since the last round finished; the ones
        started last round must run now."""
        for jid, kind in self.started.items():
            rec = present.get(jid)
            if rec is not None and not rec.running:
                raise InputError(f"sizing: {jid!r} was started on a {kind} slot last round "
                                 f"but the placement did not run it")
        for pid in [p for p in self.probe_running if p not in present]:
            kind = self.probe_running.pop(pid)
            job = self.jobs[pid.split("~", 1)[0]]
            h = self.held[job.user]
            for i, x in enumerate(PROBE_USAGE[kind]):
                h[i] -= x
            t = job.arrival
            self.group_left[t] -= 1
            if self.group_left[t] == 0:
                del self.group_left[t]
                for j in self.group.pop(t):
                    self._enqueue(j)
            del self.probe_kind[pid]
        for jid in [j for j in self.running if j not in present]:
            r = self.running.pop(jid)
            self.score[r.job.user] -= fair_value(r.job, r.kind, self.capacity)
            self.done.pop(jid, None)
            del self.jobs[jid]

    def _place_probes(self, free: dict[str, int]) -> list[tuple[str, str]]:
        rnd = 0
        users = [u for u in self.users if self.probes.get(u)]
        placed: list[tuple[str, str]] = []
        while users and any(free.get(k, 0) > 0 for k in KINDS):
            more = False
            for u in users:
                q = self.probes[u]
                if rnd < len(q):
                    more = True
                    pid = q[rnd]
                    kind = self.probe_kind[pid]
                    if free.get(kind, 0) > 0:
                        free[kind] -= 1
                        placed.append((pid, kind))
                        self.probe_running[pid] = kind
                        h = self.held[u]
                        for i, x in enumerate(PROBE_USAGE[kind]):
                            h[i] += x
            if not more:
                break
            rnd += 1
        if placed:
            gone = {p for p, _ in placed}
            for u in users:
                self.probes[u] = [p for p in self.probes[u] if p not in gone]
        return placed

    def _start(self, jid: str, kind: str, now: float) -> None:
        job = self.jobs[jid]
        self.queued[job.user].remove(job)
        self.running[jid] = Running(job, kind, now, self.done.pop(jid, 0.0))
        self.score[job.user] += fair_value(job, kind, self.capacity)
        self.started[jid] = kind

    def _stop(self, jid: str, now: float) -> None:
        r = self.running.pop(jid)
        self.done[jid] = r.done_at(now)
        self.score[r.job.user] -= fair_value(r.job, r.kind, self.capacity)
        self._enqueue(r.job)


def mean_jct(timeline: Iterable[Mapping[str, Any]]) -> float:
    """Average JCT of the jobs of a timeline that are not probes."""
    vals = [r["end_s"] - r["arrival_s"] for r in timeline
            if "~" not in str(r["id"]) and r.get("end_s") is not None]
    return sum(vals) / len(vals) if vals else math.nan


__all__ = ["CORES_PER_NODE", "CSV_COLUMNS", "FlexProgress", "FlexSizing", "JOB_FIELDS",
           "MEM_PER_SLOT", "PROBES", "RULES", "flex_cluster", "flex_job", "make_rule", "mean_jct",
           "probe_time", "workload", "write_workload_csv"]


# ------------------------------------------------------------- factories
def _sizing(rule_name: str, profiling: bool, **kw: Any) -> FlexSizing:
    return FlexSizing(make_rule(rule_name, **kw), profiling=profiling)


def allox(alpha: float = 0.1, max_jobs: int = 50, profiling: bool = True) -> FlexSizing:
    """AlloX's scheduler (`alloc.sched.allox.rules.Allox`) as a sizing policy."""
    return _sizing("allox", profiling, alpha=alpha, max_jobs=max_jobs)


def allox_plus(timeout: float = ALLOX_TIMEOUT, profiling: bool = True) -> FlexSizing:
    """AlloX+: SJF over both kinds with a starvation guard."""
    return _sizing("allox-plus", profiling, timeout=timeout)


def sjf(profiling: bool = True) -> FlexSizing:
    """Shortest estimated (job, kind) first."""
    return _sizing("sjf", profiling)


def srpt(profiling: bool = True) -> FlexSizing:
    """Preemptive shortest remaining estimated time first."""
    return _sizing("srpt", profiling)


def drf(profiling: bool = True) -> FlexSizing:
    """DRF between users, each job on the kind it runs faster on."""
    return _sizing("drf", profiling)


def drf_fifo(profiling: bool = False) -> FlexSizing:
    """DRF with FIFO queues, every job on a GPU (no profiling)."""
    return _sizing("drf-fifo", profiling)


def drf_ext(beta: float, profiling: bool = True) -> FlexSizing:
    """DRF over virtual cores (``beta`` cores per GPU) and memory."""
    return _sizing("drf-ext", profiling, beta=beta)


def es(vector: bool = True, profiling: bool = True) -> FlexSizing:
    """Static equal shares per user."""
    return _sizing("es", profiling, vector=vector)
