r"""AntMan's global scheduler (Xiao et al., OSDI'20, §3.3, Algorithm 1).

State per GPU ``g``: free milli ``f_g``, GPU memory in use ``m_g`` of capacity
``cap_g``, compute in use ``c_g`` (milli-SM; `alloc.resources`), the jobs
*riding* it (opportunistic shares, milli 0) with their memory and compute
caps, and its utilisation ``u_g`` (``gpu_util`` measured over the last window,
else ``c_g / 1000``).  Running jobs are put back first, with their caps.

**Guaranteed jobs** (``guaranteed``: inside the tenant's quota), in rank order.
Job ``j`` of tenant ``v`` wanting ``n`` GPUs of ``gpu_milli`` each, memory
``D_mem`` and compute ``D_comp``:

1. quota, per GPU type ``t`` the tenant has cells of (in turn):
   ``held_vt + n <= quota_vt`` (GPUs of the tenant's cells of that type,
   `alloc.tenancy.quota_gpus`), else it waits, reserving (rule 4) at most
   the ``quota_vt - held_vt`` GPUs its quota has left;
2. ``findNodes(n, topo)``: GPUs of type ``t`` with ``f_g >= gpu_milli``
   (riders hold none), not reserved for another gang, where the job fits once
   the riders are capped to zero compute and shrunk (or, past their least
   memory, preempted: an opportunistic job never blocks a guaranteed one;
   when the free GPUs, CPU or memory are not enough, the opportunistic jobs
   on the servers of that type (holding GPUs, or only CPU and memory) stop
   too, lowest priority first and no more than the job
   needs, `stop_holders`):

       cap_g - m_g + sum_riders mem_r >= D_mem,
       1000 - c_g + sum_riders comp_r >= D_comp;

   all under one node of the job's locality level (one server by default:
   NVLink), the server with the fewest such GPUs first (best fit), GPUs where
   shrinking the riders is enough first, then the least rider load;
3. fits: place it and cap the riders *at once* (AntMan's local coordinator,
   `alloc.sched.antman.coordinator`, raises them again later): memory
   shrunk largest-first until the job's memory fits, compute scaled down so
   that the GPU's compute is not over-committed.  A rider whose least memory
   still does not fit is preempted (an opportunistic job; the tenancy rules);
4. otherwise the GPUs of the best partial server are *reserved* for the gang
   -- no more on a server than its CPU and memory hold the gang's share of,
   none where its servers never hold the gang (`reservable`), no more than
   the job asks and its quota has left, and only where its tenant's cells
   bind; an earlier reservation stays where opportunistic jobs took its
   GPUs since (``stats["reserved"]``, handed back by the caller as the
   ``reserved`` option, or kept by a session's carry from one round to the
   next when the option is not given): no guaranteed job of its tenant
   ranked below it takes them (the gang is not starved by the jobs behind
   it), opportunistic jobs may.  A round cut by its deadline reports the
   earlier reservation of every gang it did not decide, on the GPUs no
   guaranteed job took since.

**Opportunistic jobs** (everything else), in rank order.  ``minLoadNodes``: a
job that may ride (`alloc.resources.can_ride`) takes the ``n`` GPUs of
lowest utilisation with ``u_g < util_threshold`` (default 0.8, the paper's
M), its memory free (the coordinator may shrink it later, to its least
memory) and some compute left, under one node of its
locality level (one server for a gang of at most a server); its share has
milli 0, memory ``D_mem`` and compute ``min(D_comp, 1000 - c_g)``.  Any other job holds free milli on the least-loaded GPUs.

A CPU-only job, guaranteed or not, takes the first server whose CPU and
memory it fits: it holds no GPU, so no quota.

The tenancy invariant is kept by construction for cells at the GPU level and
checked with `alloc.tenancy.infer_binding` otherwise.  Running jobs whose caps
changed are listed in ``stats["resized"]`` (a cap change is not a restart).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from ...deadline import Deadline
from ...model import MILLI, GpuShare, Status
from ...problem import Assign, Problem, Solution
from ...resources import (can_ride, compute_demand, gpu_mem_caps, mem_demand, mem_floor,
                          share_compute, share_mem)
from ...tenancy import infer_binding, quota_gpus
from ...topology import is_outer


class State:
    """Per-GPU memory, compute, milli and riders of a compiled problem."""

    def __init__(self, p: Problem, gpu_util=None):
        self.p = p
        self.cap = np.array(gpu_mem_caps(p.cluster), dtype=np.int64)
        self.free = np.full(p.G, MILLI, dtype=np.int64)
        self.mem = np.zeros(p.G, dtype=np.int64)
        self.comp = np.zeros(p.G, dtype=np.int64)
        self.cpu = p.srv_cpu.copy()
        self.smem = p.srv_mem.copy()
        self.riders: list[dict[int, list[int]]] = [dict() for _ in range(p.G)]   # j -> [mem, comp]
        self.holders: list[set[int]] = [set() for _ in range(p.G)]
        self.on_server: list[set[int]] = [set() for _ in range(len(p.cluster.servers))]
        self.assign: dict[int, Assign] = {}
        self.gheld: dict[tuple, int] = defaultdict(int)     # (tenant, type) -> guaranteed GPUs
        self.measured = None
        if gpu_util:
            idx = p.cluster.gpu_index
            self.measured = {idx[g]: float(u) for g, u in gpu_util.items() if g in idx}

    def gpu_type(self, g: int) -> str | None:
        """The type of GPU g."""
        return self.p.cluster.servers[int(self.p.gpu_server[g])].gpu_type

    def util(self, g: int) -> float:
        """Utilisation of GPU g: measured, else the compute its shares hold."""
        if self.measured is not None and g in self.measured:
            return self.measured[g]
        return self.comp[g] / MILLI

    def utils(self) -> np.ndarray:
        """`util` of every GPU, as an array."""
        u = self.comp / MILLI
        if self.measured:
            u[list(self.measured)] = list(self.measured.values())
        return u

    def gpu_room(self, j: int, threshold: float) -> list[int]:
        """The GPUs, ascending, of the servers job j may use where it fits
        as `place_opportunistic` places it: riding (a job that may ride)
        below ``threshold`` utilisation with its GPU memory free and compute
        not full, else its milli share, GPU memory and compute free."""
        p, job = self.p, self.p.jobs[j]
        allowed = np.zeros(p.S, dtype=bool)
        allowed[p.allowed_servers(j)] = True
        ok = allowed[p.gpu_server]
        cap = self.cap
        # `mem_demand` of every GPU at once
        need = int(job.gpu_mem) if job.gpu_mem is not None else cap * job.gpu_milli // MILLI
        ok &= cap - self.mem >= need
        if can_ride(job):
            ok &= (self.utils() < threshold) & (self.comp < MILLI)
        else:
            ok &= (self.free >= job.gpu_milli) & (MILLI - self.comp >= compute_demand(job))
        return np.flatnonzero(ok).tolist()

    def place(self, j: int, a: Assign) -> None:
        """Put job j on ``a`` (the caller checked the room)."""
        job = self.p.jobs[j]
        for k, (g, m) in enumerate(a.gpus):
            mem, comp = a.caps[k] if a.caps else (None, None)
            sh = GpuShare("", m, mem, comp)
            mu, cu = share_mem(job, sh, int(self.cap[g])), share_compute(job, sh)
            self.free[g] -= m
            self.mem[g] += mu
            self.comp[g] += cu
            if m == 0:
                self.riders[g][j] = [mu, cu]
            else:
                self.holders[g].add(j)
        for s, v in a.cpu:
            self.cpu[s] -= v
            self.on_server[s].add(j)
        for s, v in a.mem:
            self.smem[s] -= v
        if job.guaranteed and job.tenant is not None:
            for g, _ in a.gpus:
                self.gheld[(job.tenant, self.gpu_type(g))] += 1
        self.assign[j] = a

    def remove(self, j: int) -> None:
        """Take job j off its GPUs."""
        a = self.assign.pop(j)
        job = self.p.jobs[j]
        for g, m in a.gpus:
            self.free[g] += m
            if m == 0:
                mu, cu = self.riders[g].pop(j)
            else:
                self.holders[g].discard(j)
                k = [x for x, _ in a.gpus].index(g)
                mem, comp = a.caps[k] if a.caps else (None, None)
                sh = GpuShare("", m, mem, comp)
                mu, cu = share_mem(job, sh, int(self.cap[g])), share_compute(job, sh)
            self.mem[g] -= mu
            self.comp[g] -= cu
        for s, v in a.cpu:
            self.cpu[s] += v
            self.on_server[s].discard(j)
        for s, v in a.mem:
            self.smem[s] += v
        if job.guaranteed and job.tenant is not None:
            for g, _ in a.gpus:
                self.gheld[(job.tenant, self.gpu_type(g))] -= 1

    def set_rider_caps(self, j: int, g: int, mem: int, comp: int) -> None:
        """New memory and compute caps of rider j on GPU g."""
        old = self.riders[g][j]
        self.mem[g] += mem - old[0]
        self.comp[g] += comp - old[1]
        old[0], old[1] = mem, comp

    def rider_assign(self, j: int) -> Assign:
        """Rider j's assignment with its current caps."""
        a = self.assign[j]
        return Assign(a.gpus, a.cpu, a.mem,
                      tuple((self.riders[g][j][0], self.riders[g][j][1]) for g, _ in a.gpus))


# ------------------------------------------------------------- guaranteed
def slack(st: State, j: int, g: int) -> tuple[int, int, int]:
    """Memory job j could have on GPU g once the riders are shrunk to their
    least memory, once they are gone, and compute once they are capped to 0."""
    jobs = st.p.jobs
    mem = int(st.cap[g] - st.mem[g])
    comp = MILLI - int(st.comp[g])
    gone = mem
    for r, (mu, cu) in st.riders[g].items():
        mem += mu - mem_floor(jobs[r], int(st.cap[g]))
        gone += mu
        comp += cu
    return mem, gone, comp


def guaranteed_gpus(st: State, j: int, taken: set, gpu_type: str) -> tuple[list[int], set]:
    """GPUs of type ``gpu_type`` where guaranteed job j fits (rule 2), riders
    preempted where shrinking them is not enough; and the GPUs that need it."""
    p = st.p
    job = p.jobs[j]
    out, hard = [], set()
    for s in p.allowed_servers(j):
        if p.cluster.servers[s].gpu_type != gpu_type:
            continue
        for g in range(int(p.gpu_first[s]), int(p.gpu_first[s] + p.srv_gpus[s])):
            if st.free[g] < job.gpu_milli or g in taken:
                continue
            mem, gone, comp = slack(st, j, g)
            need = mem_demand(job, int(st.cap[g]))
            if gone >= need and comp >= compute_demand(job):
                out.append(g)
                if mem < need:
                    hard.add(g)
    return out, hard


def choose(st: State, j: int, cands: list[int], key) -> list[int] | None:
    """n GPUs of ``cands`` under one node of the job's locality level (one
    server when it has none and a server holds n) whose servers have the
    job's CPU and memory, the node with the fewest candidates first, GPUs by
    ``key``; without locality (or inside one domain above the server, with such a
    locality), a gang no single server takes spreads over the servers with the most
    candidates, each taking no more GPUs than its CPU and memory hold their
    share of."""
    p = st.p
    job = p.jobs[j]
    n = job.gpus
    level = job.locality or "server"
    for gs in _nodes(st, job, cands, level):
        gpus = sorted(gs, key=key)[:n]
        if cpu_fits(st, p.make_assign(j, gpus, 0)):
            return gpus
        if n > 1 and is_outer(level):   # a domain's servers: spread inside it
            inside = _spread(st, j, gs, key)
            if inside is not None:
                return inside
    if job.locality is None and n > 1:
        return _spread(st, j, cands, key)
    return None


def _nodes(st: State, job, cands: list[int], level: str):
    """The candidates of `choose` grouped by their node of ``level`` (one
    group without such a level), each in the candidates' order, on servers with the job's
    CPU and memory share per GPU: the groups of at least the job's GPUs,
    fewest candidates first (then the lowest GPU), lazily."""
    p, n = st.p, job.gpus
    gs = np.asarray(cands, dtype=np.int64)
    srv = p.gpu_server[gs]
    gs = gs[(st.cpu[srv] >= -(-job.cpu // n)) & (st.smem[srv] >= -(-job.mem // n))]
    if not len(gs):
        return
    dom = p.domain[level][gs] if level in p.domain else np.zeros(len(gs), dtype=np.int64)
    by = np.argsort(dom, kind="stable")          # each node's GPUs together, in order
    gs = gs[by]
    _, start, count = np.unique(dom[by], return_index=True, return_counts=True)
    low = np.minimum.reduceat(gs, start)
    big = count >= n
    start, count, low = start[big], count[big], low[big]
    for k in np.lexsort((low, count)).tolist():
        a = int(start[k])
        yield gs[a:a + int(count[k])].tolist()


def _spread(st: State, j: int, cands: list[int], key) -> list[int] | None:
    """n GPUs of ``cands`` over several servers (see `choose`), or None."""
    p = st.p
    job = p.jobs[j]
    n = job.gpus
    per: dict[int, list[int]] = defaultdict(list)
    for g in cands:
        per[int(p.gpu_server[g])].append(g)
    take: list[int] = []
    for s in sorted(per, key=lambda s: (-len(per[s]), s)):
        most = min(len(per[s]), n - len(take),
                   int(st.cpu[s]) * n // job.cpu if job.cpu else n,
                   int(st.smem[s]) * n // job.mem if job.mem else n)
        take += sorted(per[s], key=key)[:max(0, most)]
        if len(take) == n:
            return take if cpu_fits(st, p.make_assign(j, take, 0)) else None
    return None


def cpu_fits(st: State, a: Assign) -> bool:
    """The assignment's CPU and memory fit its servers."""
    return all(st.cpu[s] >= v for s, v in a.cpu) and all(st.smem[s] >= v for s, v in a.mem)


def make_room(st: State, j: int, gpus: list[int], preempted: set) -> None:
    """Cap (or, past their least memory, preempt) the riders on job j's GPUs
    so that its memory and compute fit (rule 3)."""
    p = st.p
    job = p.jobs[j]
    for g in gpus:
        cap = int(st.cap[g])
        need = mem_demand(job, cap) - int(cap - st.mem[g])
        for r in sorted(st.riders[g], key=lambda r: (-st.riders[g][r][0], r)):
            if need <= 0:
                break
            mu, cu = st.riders[g][r]
            cut = min(need, mu - mem_floor(p.jobs[r], cap))
            if cut > 0:
                st.set_rider_caps(r, g, mu - cut, cu)
                need -= cut
        over = int(st.comp[g]) + compute_demand(job) - MILLI
        if over > 0 and st.riders[g]:
            have = sum(cu for _, cu in st.riders[g].values())
            keep = max(0, have - over)
            for r, (mu, cu) in sorted(st.riders[g].items()):
                new = cu * keep // have if have else 0
                st.set_rider_caps(r, g, mu, new)
        for r in sorted(st.riders[g], key=lambda r: (p.jobs[r].priority, r)):
            if int(st.cap[g] - st.mem[g]) >= mem_demand(job, cap):
                break
            if p.jobs[r].current is not None:
                preempted.add(r)
            st.remove(r)


def place_guaranteed(st: State, j: int, reserved: dict, preempted: set, stats: dict,
                     deadline: Deadline | None = None) -> bool:
    """Rules 1-4 for guaranteed job j, on each GPU type its tenant has cells
    of in turn; True when placed (the search for GPUs where the tenant's cells
    bind stops at ``deadline``)."""
    p = st.p
    job = p.jobs[j]
    if job.gpus == 0:                  # holds no GPU, so no quota: only CPU and memory
        return place_cpu_only(st, j)
    taken = {g for jid, gs in reserved.items() if _ahead(st, jid, j) for g in gs}
    mine = set(reserved.get(job.id, ()))
    best_part: list[int] = []
    for t in p.cluster.gpu_types:
        quota = quota_gpus(p.cluster, job.tenant, t) if job.tenant is not None else 0
        if not quota or not job.allows(t):
            continue
        room = quota - st.gheld[(job.tenant, t)]
        cands, hard = guaranteed_gpus(st, j, taken, t)
        load = lambda g: (g not in mine, g in hard, len(st.riders[g]),  # noqa: E731
                          int(st.comp[g]), g)
        gpus = bound_choice(st, j, cands, load, deadline) if room >= job.gpus else None
        if gpus is None and deadline is not None and deadline.expired():
            return False                       # out of time: it waits
        off: list[tuple[int, Assign]] = []
        if gpus is None and room >= job.gpus:
            gpus, off = stop_holders(st, j, taken, t, load, deadline)
        if gpus is not None:
            a = p.make_assign(j, gpus, 0)
            if cpu_fits(st, a):
                make_room(st, j, gpus, preempted)
                st.place(j, a)
                if _tenancy_ok(st):
                    preempted.update(r for r, _ in off if p.jobs[r].current is not None)
                    return True
                st.remove(j)
        for r, b in reversed(off):
            st.place(r, b)
        most = max(0, min(room, job.gpus))
        parts = [sorted(gs, key=load)[:most] for gs in partial(st, j, reservable(
            st, j, cands, t, load))] + [_still_reserved(st, mine - taken, t)[:most]]
        for gs in sorted(parts, key=len, reverse=True):     # the largest where its cells bind
            if len(gs) > len(best_part) and _tenancy_ok(st, j, gs):
                best_part = gs
                break
    if best_part:
        ids = p.cluster.gpu_ids
        stats.setdefault("reserved", {})[job.id] = [ids[g] for g in sorted(best_part)]
        reserved[job.id] = list(best_part)
    else:
        reserved.pop(job.id, None)
    return False


def _still_reserved(st: State, mine, gpu_type: str | None = None) -> list[int]:
    """The GPUs (of type ``gpu_type``; None: any) of an earlier reservation
    ``mine`` that no guaranteed job holds now (opportunistic jobs may have
    taken them)."""
    return [g for g in sorted(mine) if (gpu_type is None or st.gpu_type(g) == gpu_type)
            and not any(st.p.jobs[h].guaranteed for h in st.holders[g])]


def _ahead(st: State, jid: str, j: int) -> bool:
    """Job ``jid``'s reservation keeps guaranteed job j off its GPUs: it is
    another pending guaranteed job of j's tenant, ranked above j."""
    p = st.p
    k = p.job_index.get(jid)
    if k is None or k == j or k in p.fixed or k in st.assign:
        return False
    y, job = p.jobs[k], p.jobs[j]
    return y.guaranteed and y.tenant == job.tenant and int(p.rank[k]) < int(p.rank[j])


def bound_choice(st: State, j: int, cands: list[int], key,
                 deadline: Deadline | None = None) -> list[int] | None:
    """`choose` among ``cands`` where a binding of the tenants' cells holds
    guaranteed job j: a choice no binding holds rules out its servers and
    the choice is made again on the others; None when none is left (or out
    of ``deadline``)."""
    p = st.p
    gpus = choose(st, j, cands, key)
    gone: set[int] = set()
    while gpus is not None and not _tenancy_ok(st, j, gpus):
        if deadline is not None and deadline.expired():
            return None
        gone |= {int(p.gpu_server[g]) for g in gpus}
        rest = [g for g in cands if int(p.gpu_server[g]) not in gone]
        gpus = choose(st, j, rest, key) if rest else None
    return gpus


def stop_holders(st: State, j: int, taken: set, gpu_type: str, key,
                 deadline: Deadline | None = None):
    """Rule 2 when the free GPUs are not enough: the opportunistic jobs on
    the servers of ``gpu_type`` (holding GPUs, or only CPU and memory the
    guaranteed job needs; riders are capped instead, `make_room`) stop for
    guaranteed job j -- an opportunistic job never blocks a guaranteed one --
    lowest priority first (then the lowest ranked), until `bound_choice`
    finds the job's GPUs (where the tenant's cells may bind); then every one
    it fits without is put back (highest priority first).  Returns
    ``(gpus, stopped)`` -- the victims taken off the state,
    with their assignments (``(job, Assign)``) -- or ``(None, [])`` with the
    state unchanged."""
    p = st.p
    pinned = p.pinned
    holders = sorted({r for s in p.allowed_servers(j)
                      if p.cluster.servers[s].gpu_type == gpu_type
                      for r in st.on_server[int(s)]
                      if not p.jobs[r].guaranteed and r not in pinned
                      and not any(m == 0 for _, m in st.assign[r].gpus)},   # riders are capped
                     key=lambda r: (p.jobs[r].priority, -int(p.rank[r]), r))
    if not holders:
        return None, []
    off: list[tuple[int, Assign]] = []
    gpus = None
    for r in holders:
        off.append((r, st.assign[r]))
        st.remove(r)
        cands, _ = guaranteed_gpus(st, j, taken, gpu_type)
        gpus = bound_choice(st, j, cands, key, deadline)
        if gpus is not None:
            break
    if gpus is None:
        for r, a in reversed(off):
            st.place(r, a)
        return None, []
    for r, a in sorted(off, key=lambda ra: (-p.jobs[ra[0]].priority, int(p.rank[ra[0]]))):
        st.place(r, a)
        cands, _ = guaranteed_gpus(st, j, taken, gpu_type)
        again = bound_choice(st, j, cands, key, deadline)
        if again is None:
            st.remove(r)
        else:
            gpus = again
            off = [x for x in off if x[0] != r]
    return gpus, off


def reservable(st: State, j: int, cands: list[int], gpu_type: str, key) -> list[int]:
    """The candidates rule 4 may reserve for gang j (by ``key``): on each
    server no more GPUs than its CPU and memory, empty, hold the job's share
    of (the whole job's, for a job kept on one server), and none in a node of
    the job's reach (the cluster without locality, else one node of its
    level) whose servers of ``gpu_type`` never hold the job so: a
    reservation there would keep other guaranteed jobs out for nothing."""
    p = st.p
    job = p.jobs[j]
    n, level = job.gpus, job.locality
    spreads = n > 1 and (level is None or is_outer(level))
    cpu, mem = (-(-job.cpu // n), -(-job.mem // n)) if spreads else (job.cpu, job.mem)

    def most(s: int) -> int:
        held = min(int(p.srv_cpu[s]) // cpu if cpu else n, int(p.srv_mem[s]) // mem if mem else n)
        return min(int(p.srv_gpus[s]), held) if spreads else (int(p.srv_gpus[s]) if held else 0)

    def node(s: int) -> int:
        return s if not spreads else -1 if level is None else int(p.arrays.srv_domain[level][s])
    left = {int(s): most(int(s)) for s in p.allowed_servers(j)
            if p.cluster.servers[s].gpu_type == gpu_type}
    reach: dict[int, int] = defaultdict(int)
    for s, k in left.items():
        reach[node(s)] += k
    out = []
    for g in sorted(cands, key=key):
        s = int(p.gpu_server[g])
        if left.get(s, 0) > 0 and reach[node(s)] >= n:
            out.append(g)
            left[s] -= 1
    return out


def partial(st: State, j: int, cands: list[int]) -> list[list[int]]:
    """The candidates per node of the job's locality level, the node holding
    most first."""
    p = st.p
    level = p.jobs[j].locality or "server"
    if level not in p.domain:
        return []
    groups: dict[int, list[int]] = defaultdict(list)
    for g in cands:
        groups[int(p.domain[level][g])].append(g)
    return sorted(groups.values(), key=len, reverse=True)


def _tenancy_ok(st: State, j: int | None = None, gpus: Sequence[int] = ()) -> bool:
    """The tenancy invariant holds for the guaranteed jobs placed so far
    (and guaranteed job j on ``gpus``, when given)."""
    p = st.p
    cl = p.cluster
    if not cl.tenants or all(c.level == "gpu" for t in cl.tenants.values() for c in t.cells):
        return True
    used: dict[str, set] = defaultdict(set)
    for i, a in st.assign.items():
        job = p.jobs[i]
        if job.guaranteed and job.tenant is not None:
            used[job.tenant].update(g for g, _ in a.gpus)
    tenant = p.jobs[j].tenant if j is not None else None
    if tenant is not None:
        used[tenant].update(gpus)
    return infer_binding(cl, dict(used), exact=False) is not None


# ----------------------------------------------------------- opportunistic
def place_opportunistic(st: State, j: int, threshold: float) -> bool:
    """minLoadNodes for job j; True when placed."""
    p = st.p
    job = p.jobs[j]
    if job.gpus == 0:
        return place_cpu_only(st, j)
    ride = can_ride(job)
    cands = st.gpu_room(j, threshold)
    gpus = choose(st, j, cands, lambda g: (st.util(g), g))
    if gpus is None:
        return False
    a = p.make_assign(j, gpus, 0)
    if ride:
        caps = tuple((mem_demand(job, int(st.cap[g])), min(compute_demand(job),
                                                           MILLI - int(st.comp[g])))
                     for g, _ in a.gpus)
        a = Assign(tuple((g, 0) for g, _ in a.gpus), a.cpu, a.mem, caps)
    if not cpu_fits(st, a):
        return False
    st.place(j, a)
    return True


def place_cpu_only(st: State, j: int) -> bool:
    """A CPU-only job on the first server with room."""
    p = st.p
    opt = p.options[j][0]
    for s in range(p.S):
        if st.cpu[s] >= opt.cpu and st.smem[s] >= opt.mem:
            st.place(j, p.make_cpu_assign(j, s))
            return True
    return False


# -------------------------------------------------------------------- solve
#: The key of the reservations a scheduler loop's carry keeps between rounds.
_RESERVED = "antman.reserved"


def _kept_reservations(st: State, reserved: dict, stats: dict) -> None:
    """Out of time: the earlier reservation of every waiting guaranteed gang
    the round did not get to decide (not examined, or cut in its search)
    stays, in ``stats["reserved"]`` as a decided one (rule 4): the deadline
    ends the search, not the gang's claim."""
    p, ids = st.p, st.p.cluster.gpu_ids
    waiting = {p.jobs[j].id for j in p.pending if p.jobs[j].guaranteed and j not in st.assign}
    for jid, gs in reserved.items():
        if jid not in waiting or jid in stats.get("reserved", {}):
            continue
        left = _still_reserved(st, gs)
        if left:
            stats.setdefault("reserved", {})[jid] = [ids[g] for g in left]


def solve_antman(problem: Problem, *, deadline: Deadline, seed: int = 0,
                 util_threshold: float = 0.8, gpu_util=None, reserved=None) -> Solution:
    """The global scheduler on a compiled problem (module notes)."""
    p = problem
    st = State(p, gpu_util)
    for r in sorted(p.fixed, key=lambda r: (not p.jobs[r].guaranteed, r)):
        st.place(r, p.fixed[r])
    before = {r: st.rider_assign(r) for r in p.fixed if any(m == 0 for _, m in p.fixed[r].gpus)}
    gidx = p.cluster.gpu_index
    carry = getattr(p, "carry", None)
    kept = carry.take(_RESERVED) if carry is not None else None
    if reserved is None and kept is not None and kept[0] is p.cluster:
        reserved = kept[1]
    reserved = {k: [gidx[g] for g in v if g in gidx] for k, v in (reserved or {}).items()}
    preempted: set[int] = set()
    stats: dict = {}
    order = sorted(p.pending, key=lambda j: (not p.jobs[j].guaranteed, int(p.rank[j])))
    timed_out = False
    for j in order:
        if deadline.expired():
            timed_out = True
            break
        if p.jobs[j].guaranteed:
            if place_guaranteed(st, j, reserved, preempted, stats, deadline):
                reserved.pop(p.jobs[j].id, None)
        else:
            place_opportunistic(st, j, util_threshold)
    if timed_out or deadline.expired():
        _kept_reservations(st, reserved, stats)
    out = {}
    for j, a in st.assign.items():
        out[j] = st.rider_assign(j) if any(m == 0 for _, m in a.gpus) else a
    resized = sorted(p.jobs[r].id for r, a in before.items() if r in out and out[r] != a)
    if resized:
        stats["resized"] = resized
    if timed_out:
        stats["timed_out"] = True
    stats["riders"] = sum(1 for a in out.values() if any(m == 0 for _, m in a.gpus))
    if carry is not None:
        carry.keep(_RESERVED, (p.cluster, dict(stats.get("reserved", {}))))
    return Solution(out, Status.FEASIBLE, None, tuple(sorted(preempted)), stats)


__all__ = ["State", "solve_antman"]
