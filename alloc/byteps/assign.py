r"""Spare CPU machines as BytePS summation servers: who gets them.

Input: data-parallel jobs ``i`` on ``n_i`` GPU machines with links of ``B_i``
Gbit/s, a communication share ``c_i``, a weight ``w_i`` and a base throughput
``v_i`` (its all-reduce speed, objective units); CPU machines ``s`` with spare
CPU ``C_s`` (milli-cores) and a NIC of ``N_s`` Gbit/s.

Rules.  A summation server of job ``i`` costs ``ss_cpu`` milli-cores (default
4000: "each CPU machine uses < 4 cores", BytePS Fig. 13) and ``B_i`` of its
machine's NIC (the machine must keep up with the job's links, §4.1); the
``k_i`` servers of a job are on ``k_i`` distinct machines; a machine serving
several jobs splits its NIC into equal slots of one link rate (it serves one
*tier* ``b`` of link rates), so it has ``q_s(b) = min(floor(C_s / ss_cpu),
floor(N_s / b))`` slots.  The objective is the total throughput

    sum_i w_i v_i r(n_i, k_i)

with ``r`` the speed-up of `alloc.byteps.model.speedup` (concave in ``k``,
``k_i <= n_i``).

**Exact** ([`exact`][alloc.byteps.assign.exact], a `alloc.kernel.LinearModel` solved by HiGHS).
Machines of equal ``(C, N)`` form classes ``c`` of ``m_c`` machines.

    y_cb  in Z, 0..m_c   machines of class c serving tier b,  sum_b y_cb <= m_c
    x_ic  in Z, 0..m_c   servers of job i on class c (tier b(i)),  x_ic <= y_c,b(i)
    sum_{i in b} x_ic <= q_c(b) y_cb
    sum_c x_ic = sum_k d_ik,  d_ik in [0, 1]  (k = 1..n_i)
    max  sum_i w_i v_i (r(n_i, 0) + sum_k (r(n_i, k) - r(n_i, k-1)) d_ik)

Concavity makes the ``d_ik`` fill in order, so the value is exact for integer
``x``.  Any integer solution is realised machine by machine (the ``y_cb``
machines of a tier take each job's ``x_ic`` servers round robin: no machine
gets two servers of one job or more than ``q`` servers), so the model is
exact, and HiGHS's bound is a bound of the problem.

**Greedy** ([`greedy`][alloc.byteps.assign.greedy]): repeatedly the server of largest marginal gain
``w_i v_i (r(n_i, k_i + 1) - r(n_i, k_i))``, on the machine (not already
serving the job, of its tier or unused) with the fewest slots left that fits.
"""
from __future__ import annotations

import heapq
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..errors import InputError
from ..model import Status
from .model import speedup

SS_CPU = 4000        # milli-cores per summation server (BytePS: < 4 cores)


@dataclass(frozen=True)
class CommJob:
    """A data-parallel job as the summation-server allocation sees it."""
    id: str
    n: int
    gbps: float
    comm_share: float
    weight: float = 1.0
    base: float = 1.0


@dataclass(frozen=True)
class CpuMachine:
    """A CPU machine: spare CPU (milli-cores) and NIC (Gbit/s)."""
    id: str
    cpu: int
    gbps: float


@dataclass(frozen=True)
class Assignment:
    """Summation servers per job (CPU machine ids), the total throughput,
    a proven bound (exact), status, wall time and statistics."""
    servers: Mapping[str, tuple[str, ...]]
    value: float
    bound: float | None = None
    status: Status = Status.FEASIBLE
    wall_s: float = 0.0
    stats: Mapping = field(default_factory=dict)

    def k(self, job_id: str) -> int:
        """Summation servers of a job."""
        return len(self.servers.get(job_id, ()))


def comm_share_of(profile) -> float:
    """A profile's communication share: its ``comm_share`` when declared,
    else ``1 - span(cluster)`` (the slowdown measured for the model spread
    over servers: the time spent communicating)."""
    if profile is None:
        return 0.0
    c = profile.meta.get("comm_share")
    return float(c) if c is not None else max(0.0, 1.0 - profile.span_factor("cluster"))


def from_job(job, n: int, gbps: float, base: float = 1.0) -> CommJob:
    """A `alloc.model.Job` spread over ``n`` GPU machines as a `CommJob`."""
    return CommJob(job.id, n, gbps, comm_share_of(job.profile), job.weight, base)


def validate(jobs: Sequence[CommJob], machines: Sequence[CpuMachine], ss_cpu: int = SS_CPU) -> None:
    """One-line [`InputError`][alloc.errors.InputError] naming the first bad field."""
    for i, j in enumerate(jobs):
        if not isinstance(j.n, int) or isinstance(j.n, bool) or j.n < 1:
            raise InputError(f"jobs[{i}].n: expected at least 1 GPU machine, got {j.n!r}")
        if not (isinstance(j.gbps, (int, float)) and math.isfinite(j.gbps) and j.gbps > 0):
            raise InputError(f"jobs[{i}].gbps: expected a bandwidth B > 0, got {j.gbps!r}")
        if not (isinstance(j.comm_share, (int, float)) and 0 <= j.comm_share < 1):
            raise InputError(f"jobs[{i}].comm_share: expected a share in [0, 1), got "
                             f"{j.comm_share!r}")
        if not (j.weight >= 0 and j.base >= 0):
            raise InputError(f"jobs[{i}].weight: expected weight and base >= 0")
    if len({j.id for j in jobs}) != len(jobs):
        raise InputError("jobs: duplicate job id")
    for s, m in enumerate(machines):
        if not isinstance(m.cpu, int) or m.cpu < 0:
            raise InputError(f"machines[{s}].cpu: expected milli-cores >= 0, got {m.cpu!r}")
        if not (isinstance(m.gbps, (int, float)) and m.gbps > 0):
            raise InputError(f"machines[{s}].gbps: expected a NIC bandwidth > 0, got {m.gbps!r}")
    if not isinstance(ss_cpu, int) or ss_cpu < 1:
        raise InputError(f"ss_cpu: expected milli-cores >= 1, got {ss_cpu!r}")


def slots(machine: CpuMachine, tier: float, ss_cpu: int = SS_CPU) -> int:
    """Summation servers of link rate ``tier`` one machine can run."""
    return min(machine.cpu // ss_cpu, int(machine.gbps // tier + 1e-9))


def gains(job: CommJob) -> list[float]:
    """Marginal weighted gains of the job's 1st, 2nd, ... summation server."""
    w = job.weight * job.base
    if job.n <= 2 or w == 0 or job.comm_share == 0:
        return []
    r = [speedup(job.n, k, job.comm_share) for k in range(job.n + 1)]
    return [w * (r[k] - r[k - 1]) for k in range(1, job.n + 1)]


def total(jobs: Sequence[CommJob], servers: Mapping[str, Sequence[str]]) -> float:
    """Total throughput ``sum_i w_i v_i r(n_i, k_i)`` of an assignment."""
    return sum(j.weight * j.base * speedup(j.n, len(servers.get(j.id, ())), j.comm_share)
               for j in jobs)


def problems(jobs: Sequence[CommJob], machines: Sequence[CpuMachine],
             servers: Mapping[str, Sequence[str]], ss_cpu: int = SS_CPU) -> list[str]:
    """What an assignment breaks: unknown ids, two servers of a job on one
    machine, a machine over its CPU or NIC or serving two link rates."""
    out = []
    by_m = {m.id: m for m in machines}
    by_j = {j.id: j for j in jobs}
    cpu: dict[str, int] = defaultdict(int)
    bw: dict[str, float] = defaultdict(float)
    tiers: dict[str, set] = defaultdict(set)
    for jid, ms in servers.items():
        if jid not in by_j:
            out.append(f"job {jid!r}: unknown")
            continue
        if len(set(ms)) != len(ms):
            out.append(f"job {jid!r}: two summation servers on one machine")
        for m in ms:
            if m not in by_m:
                out.append(f"job {jid!r}: unknown machine {m!r}")
                continue
            cpu[m] += ss_cpu
            bw[m] += by_j[jid].gbps
            tiers[m].add(by_j[jid].gbps)
    for m, v in cpu.items():
        if v > by_m[m].cpu:
            out.append(f"machine {m}: {v} milli-cores of summation servers, spare {by_m[m].cpu}")
        if bw[m] > by_m[m].gbps + 1e-9:
            out.append(f"machine {m}: {bw[m]:g} Gbit/s of summation servers, NIC {by_m[m].gbps:g}")
        if len(tiers[m]) > 1:
            out.append(f"machine {m}: serves link rates {sorted(tiers[m])}, one allowed")
    return out


# ------------------------------------------------------------------ greedy
def greedy(jobs: Sequence[CommJob], machines: Sequence[CpuMachine], *,
           ss_cpu: int = SS_CPU) -> Assignment:
    """The greedy rule of the module notes."""
    t0 = time.perf_counter()
    validate(jobs, machines, ss_cpu)
    cpu = {m.id: m.cpu for m in machines}
    bw = {m.id: float(m.gbps) for m in machines}
    tier: dict[str, float] = {}
    by_tier: dict[float, list[str]] = defaultdict(list)
    unused = sorted((m.id for m in machines), key=lambda x: (cpu[x], bw[x], x))
    servers: dict[str, list[str]] = defaultdict(list)
    heap: list[tuple] = []
    g = {j.id: gains(j) for j in jobs}
    by_id = {j.id: j for j in jobs}
    for j in jobs:
        if g[j.id]:
            heapq.heappush(heap, (-g[j.id][0], j.id))
    while heap:
        neg, jid = heapq.heappop(heap)
        job = by_id[jid]
        have = set(servers[jid])
        fits = [m for m in by_tier[job.gbps]
                if m not in have and cpu[m] >= ss_cpu and bw[m] >= job.gbps - 1e-9]
        if not fits:
            fits = [m for m in unused if cpu[m] >= ss_cpu and bw[m] >= job.gbps - 1e-9][:1]
        if not fits:
            continue
        m = min(fits, key=lambda x: (min(cpu[x] // ss_cpu, bw[x] // job.gbps), x))
        if m not in tier:
            tier[m] = job.gbps
            by_tier[job.gbps].append(m)
            unused.remove(m)
        cpu[m] -= ss_cpu
        bw[m] -= job.gbps
        servers[jid].append(m)
        k = len(servers[jid])
        if k < len(g[jid]):
            heapq.heappush(heap, (-g[jid][k], jid))
    out = {j: tuple(ms) for j, ms in servers.items() if ms}
    return Assignment(out, total(jobs, out), None, Status.FEASIBLE, time.perf_counter() - t0,
                      {"rule": "greedy"})


# ------------------------------------------------------------------- exact
def classes(machines: Sequence[CpuMachine]) -> list[tuple[tuple[int, float], list[str]]]:
    """Machines of equal (spare CPU, NIC), in a stable order."""
    out: dict[tuple[int, float], list[str]] = {}
    for m in machines:
        out.setdefault((m.cpu, float(m.gbps)), []).append(m.id)
    return sorted(out.items())


def exact(jobs: Sequence[CommJob], machines: Sequence[CpuMachine], *, ss_cpu: int = SS_CPU,
          time_limit: float = 10.0, gap: float = 1e-4) -> Assignment:
    """The exact model of the module notes (HiGHS; never below
[`greedy`][alloc.byteps.assign.greedy],
    whose answer is its start)."""
    from ..kernel import LinearModel, solve
    t0 = time.perf_counter()
    validate(jobs, machines, ss_cpu)
    warm = greedy(jobs, machines, ss_cpu=ss_cpu)
    cls = classes(machines)
    m = LinearModel("byteps-summation")
    y = tier_vars(m, cls, sorted({j.gbps for j in jobs}), ss_cpu)
    load: dict[Any, dict] = defaultdict(dict)
    x: dict[Any, int] = {}
    dcols: dict[str, list[int]] = {}
    const = 0.0
    for j in jobs:
        gs = gains(j)
        const += j.weight * j.base * speedup(j.n, 0, j.comm_share) if j.n >= 1 else 0.0
        if not gs:
            continue
        cols = server_cols(m, cls, y, j, len(gs), x, load)
        if not cols:
            continue
        d = [m.add_var(0, 1, obj=gk) for gk in gs]
        m.add_row({**cols, **{dk: -1 for dk in d}}, 0, 0)
        dcols[j.id] = d
    slot_rows(m, y, load)
    m.obj_const = const
    m.hint = start(warm, jobs, cls, y, x, dcols)
    res = solve(m, "highs", time_limit=max(0.1, time_limit - (time.perf_counter() - t0)),
                mip_rel_gap=gap)
    if res.objective is None or not res.has_solution or res.objective < warm.value - 1e-9:
        st = Status.FEASIBLE
        return Assignment(warm.servers, warm.value, res.bound if res.bound is not None else None,
                          st, time.perf_counter() - t0, {"rule": "exact", "source": "greedy",
                                                         "model": res.status.value})
    servers = decode(jobs, cls, y, x, res.x)
    value = total(jobs, servers)
    bound = res.bound
    status = Status.OPTIMAL if bound is not None and value >= bound - 1e-6 * max(1, bound) \
        else Status.FEASIBLE
    return Assignment(servers, value, bound, status, time.perf_counter() - t0,
                      {"rule": "exact", "source": "model", "model": res.status.value,
                       "columns": m.n, "rows": m.m})


def tier_vars(m, cls, tiers, ss_cpu: int) -> dict:
    """``y[(c, b)] = (column, q)``: machines of class c serving tier b (at most
    the class's machines in all), with q slots each."""
    y = {}
    for c, ((cpu, nic), ids) in enumerate(cls):
        row = {}
        for b in tiers:
            q = slots(CpuMachine("", cpu, nic), b, ss_cpu)
            if q > 0:
                y[(c, b)] = (m.add_var(0, len(ids), integer=True), q)
                row[y[(c, b)][0]] = 1
        if row:
            m.add_row(row, hi=len(ids))
    return y


def server_cols(m, cls, y, job, most: int, x: dict, load: dict) -> dict:
    """The job's server counts per class (``x[(job, c)] <= y[(c, b)]``, at
    most ``most``), added to ``load``; returns them as ``{column: 1}``."""
    cols = {}
    for c, (_, ids) in enumerate(cls):
        if (c, job.gbps) not in y:
            continue
        v = m.add_var(0, min(len(ids), most), integer=True)
        x[(job.id, c)] = v
        cols[v] = 1
        m.add_row({v: 1, y[(c, job.gbps)][0]: -1}, hi=0)
        load[(c, job.gbps)][v] = 1
    return cols


def slot_rows(m, y, load) -> None:
    """``sum_{i in b} x_ic <= q_c(b) y_cb`` for every class and tier."""
    for key, row in load.items():
        col, q = y[key]
        m.add_row({**row, col: -q}, hi=0)


def start(warm: Assignment, jobs, cls, y, x, dcols) -> dict[int, float]:
    """The greedy answer as a start of the exact model."""
    cls_of = {mid: c for c, (_, ids) in enumerate(cls) for mid in ids}
    by_id = {j.id: j for j in jobs}
    hint: dict[int, float] = {col: 0.0 for col, _ in y.values()}
    hint.update({v: 0.0 for v in x.values()})
    seen = set()
    for jid, ms in warm.servers.items():
        b = by_id[jid].gbps
        for mid in ms:
            c = cls_of[mid]
            hint[x[(jid, c)]] += 1
            if (mid, b) not in seen:
                seen.add((mid, b))
                hint[y[(c, b)][0]] += 1
    for jid, d in dcols.items():
        k = len(warm.servers.get(jid, ()))
        for t, col in enumerate(d):
            hint[col] = 1.0 if t < k else 0.0
    return hint


def decode(jobs, cls, y, x, sol) -> dict[str, tuple[str, ...]]:
    """Machines for the model's counts: per class, ``y_cb`` machines per tier,
    each job's ``x_ic`` servers round robin over them."""
    out: dict[str, list[str]] = defaultdict(list)
    for c, (_, ids) in enumerate(cls):
        start = 0
        for b in sorted({k[1] for k in y if k[0] == c}):
            col, q = y[(c, b)]
            n = int(round(sol[col]))
            pool = ids[start:start + n]
            start += n
            if not pool:
                continue
            ptr = 0
            for j in sorted((j for j in jobs if j.gbps == b and (j.id, c) in x), key=lambda j: j.id):
                cnt = int(round(sol[x[(j.id, c)]]))
                for _ in range(cnt):
                    out[j.id].append(pool[ptr % len(pool)])
                    ptr += 1
    return {j: tuple(ms) for j, ms in out.items()}


__all__ = ["Assignment", "CommJob", "CpuMachine", "SS_CPU", "classes", "comm_share_of",
           "decode", "exact", "from_job",
           "gains", "greedy", "problems", "slots", "total", "validate"]
