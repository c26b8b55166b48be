"""``cpsat-tenancy``: a CP-SAT model of allocation under HiveD tenancy, with
preemption and migration terms.

Sets: servers s (GPUs G_s, CPU C_s, memory M_s, type t_s); *groups* k of
identical pending jobs (same shape, tenant, priority, weight, profile: n_k
members); running jobs r (``current`` set) one by one; tenants v with
``c[v,t,l]`` cells of size ``z[t,l]`` GPUs.  An elastic group
(``min_gpus``/``max_gpus``) has one copy k_n per size n it may take (the
profile's scaling points in [min, max], :func:`alloc.solvers.hived.engine.elastic_sizes`),
sharing its members: sum_{n,s} x[k_n,s] <= n_k; a copy uses n GPUs and its value
is weight * grid(cpu / n, mem / n) * speed * span(n) * scale(n).

Variables:

    x[k,s] in 0..n_k     jobs of group k placed on server s (one server each)
    keep[r] in {0,1}     running job r stays exactly where it runs
    mv[r,s] in {0,1}     running job r moves to server s != its own
                         (only with ``migration_cost``/``max_moves``)
    b[v,s,l] in 0..N_sl  v's level-l cells bound inside server s
                         (identical cells aggregated into counts)
    R[v,q] in {0,1}      v's rack cell bound to rack q
    h[s], hv[v,s]        GPUs of s given to shared (milli < 1000) jobs,
                         all / v's guaranteed ones

Constraints (u = usage of a job on s: GPUs n, milli n*m, CPU, memory):

    whole-GPU jobs' GPUs + h[s] <= G_s;  1000 h[s] >= shared milli on s
    CPU and memory of kept, moved and new jobs on s <= C_s, M_s
    sum_s x[k,s] <= n_k
    sum_s b[v,s,l] + (rack cells) = c[v,t,l]        (every cell bound, WLOG)
    cell GPUs of v on s:  g[v,s] = sum_l z_l b[v,s,l] + G_s sum_q R[v,q][s in q]
    sum_v g[v,s] <= G_s                  (cells disjoint; sizes divide, so they pack)
    v's guaranteed whole GPUs on s + hv[v,s] <= g[v,s];  1000 hv[v,s] >= v's shared milli
    positions where kept whole-GPU jobs sit (servers s holding one): y[v,n] in
    {0,1} for the level-l nodes n of s, sum_n y[v,n] = b[v,s,l], at most one
    cell on each GPU; w[v,n,r] >= y[v,n] + keep[r] - 1 for a kept job r (not
    v's guaranteed) with k_rn = |GPUs of r in n| > 0, and then
      v's guaranteed whole GPUs on s + hv[v,s] + sum k_rn w[v,n,r] <= g[v,s]
    (a kept job inside v's cell takes its GPUs from v's guaranteed jobs)
    keep[r] + sum_s mv[r,s] <= 1;  pre[r] = 1 - keep[r] - sum_s mv[r,s]
    pre[r] <= sum_{i outranks r} (new or moved i)      (legal victims only)
    sum_r sum_s mv[r,s] <= max_moves

Objective, lexicographic.  Phase 1 (``guaranteed_first``, default) maximises
the GPUs of placed guaranteed jobs, sum n_j [j guaranteed and placed] (an elastic
job counted at its smallest size, so phase 1 does not inflate sizes) -- the
HiveD guarantee: a tenant's jobs within its cells are served, preempting
opportunistic work -- and fixes it as a floor.  Phase 2 (scaled to integers,
S = 10^7):

    max sum_{k,s} v[k,s] x[k,s] + sum_r v_r keep[r] + sum_{r,s} v[r,s] mv[r,s]
        - preemption_cost * sum_r pre[r] - migration_cost * sum_{r,s} mv[r,s]

with v[k,s] = weight * base * speed(t_s) * span(innermost level of s holding
n_k GPUs) (throughput; ``gpus``/``jobs`` objectives use their coefficients)
and v_r the running placement's own value.  Symmetry: identical servers
without running jobs are ordered by the GPUs they give out.

Warm start and hint.  Two warm starts are built on the hived engine: ``hived``
itself and a value-aware greedy (one server per job; running jobs of value 0
-- in a second variant also opportunistic ones of value per GPU below 0.15 --
that a pending job may legally preempt are set aside; pending jobs go
guaranteed first by value per GPU (preempting opportunistic jobs only, so no
valuable guaranteed job is displaced), then opportunistic;
set-aside jobs return where they ran if their room is still free; a new cell
is the candidate whose victims, then resident jobs, are worth least, where
hived takes the first buddy candidate that fits).  The greedy
state, with every remaining virtual cell bound in buddy order, gives x, keep,
mv and the cell counts; CP-SAT completes it (hinted variables fixed) into a
full hint, and phase 2 gets the constraint objective >= the hint's objective.

Fragmentation: a job whose locality confines it to one switch / socket /
server and whose size is that node's fills it, i.e. g / z_L whole level-L
nodes (z_L <= its node size), none of which a kept running job may touch:

    sum_k (g_k / z_L) x[k,s] + #(level-L nodes of s touched by kept jobs) <= N_sL

(touched: u[n] >= keep[r] for each running r using a GPU of node n).

Search.  On large models (more than 100 jobs, 8+ servers) phase 2 gives a
quarter of its time to CP-SAT on the whole model and the rest to a
large-neighbourhood search: from the incumbent, the variables of all but
min(8, S/4) random servers (placements, kept jobs, moves, cell counts; rack
cells always) are fixed, the rest is re-solved with CP-SAT (at most 2 s, hinted
with the incumbent) and an improvement becomes the incumbent.  The last four
incumbents are decoded (best model value first) and the best decoded one kept
(the model value overrates a placement the decode misses).  The bound is the
whole-model solve's (and the LP's), never the search's.

Phase 1 is proven without search when the hint reaches the trivial bound
sum_v min(cell GPUs of v, guaranteed GPU demand of v) (+ CPU-only guaranteed
jobs).  If phase 1 is proven, phase 2 and its bound are *under phase 1's
constraint* (guaranteed work = its optimum): the reported bound is the bound of
the lexicographic problem, not of pure throughput.

Bound.  The LP relaxation of the model (every constraint linear; x, b, keep,
... continuous within their domains, including the phase-1 floor when proven)
solved with GLOP, and CP-SAT's own bound; the smaller is reported.

Running guaranteed jobs pin cell positions: if v's kept jobs on s touch D
distinct level-l nodes (u[n] >= keep[r] for each node n job r touches), then

    sum_{v's cells on s of size z >= z_l} (z / z_l) b + sum_{smaller} b >= sum_n u[n]

(a cover of D nodes needs cells spanning D of them).

Decoding, first server by server, exactly: on each server a small CP-SAT
model chooses the positions of the model's cells (y[v,n], counts as in the
model, covering the kept guaranteed jobs) and the GPU set of each whole-GPU job
the model put there (z[j,S], S obeying the job's locality and, for a
guaranteed job, inside its tenant's chosen cells), maximising the real value
of the placements (span factor included); a kept opportunistic job on that
server may give way (k[r] = 0) to a job placed there that outranks it.  Shared
and CPU-only jobs then go on their model server through the engine, jobs left
over anywhere, and every other pending job that still fits (no victims).

A second decode replays the model's choices through the ``hived`` engine.  First a
small CP-SAT model picks physical cells realising the model's counts
(y[v,n] in {0,1}, sum over v's level-l nodes of s = b[v,s,l], disjoint,
covering the kept guaranteed jobs' GPUs, fewest busy GPUs); they are bound
(every cell bound, so safety holds), kept jobs are put back, then each placed
job is put on its model server (consolidated GPUs); a job the engine cannot fit
there is tried anywhere once every other job had its server, else left
unplaced.  Without such cells the kept jobs
are restored with an inferred binding and the counts bound greedily; a third
decode lets the engine bind cells itself (buddy order); a decode whose binding
fails :func:`alloc.tenancy.check_binding`, or that stops a running job no
fresh placement outranks, is discarded.  The per-server
cell counts relax the physical positions of cells, so a decode can miss a
model placement (``stats["decode_misses"]``).  The answer
is the best of the decoded solution and the two warm starts by the (penalised)
objective, so it is never worse than ``hived``; ``optimal`` is claimed only
when CP-SAT proved both phases and the decoded placement realised every model
placement (``allocate()`` downgrades further if value < bound).  When the
chosen solution lies outside the model (hived spread a job over servers) no
bound is reported.

Restrictions (the solver is exact for the problem *with* them; ``restricts``):
guaranteed work first (phase 2 bound under phase 1's optimum); every job runs
on one server; CPU and memory at the request (no profile grid points); elastic
sizes among the profile's scaling points, and a running elastic job keeps its
size.  Sub-server packing (switch / socket cells and
locality, GPU sharing) is relaxed to the counts above, so the bound is valid.
With preemption or migration costs the model optimises the penalised
objective: the allocation's ``bound`` is then None (its ``value`` is the raw
throughput, which may exceed the penalised bound) and ``stats["penalised"]``,
``stats["penalised_bound"]`` and ``stats["raw_value"]`` report it.
"""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import replace

from ...model import MILLI, Status
from ...objectives import scale_factor, throughput
from ...problem import Problem, Solution
from ...tenancy import binding_keys, outranks, quota_gpus
from .engine import (Engine, _release_empty, current_assign, elastic_sizes, job_value,
                    restore_running)

SCALE = 10 ** 7
SPAN_LEVELS = ("switch", "socket", "server")


def _signature(job):
    return (job.gpus, job.gpu_milli, job.cpu, job.mem, job.gpu_types, job.locality,
            id(job.profile) if job.profile is not None else None, job.model, job.tenant,
            job.guaranteed, job.priority, job.weight, job.gpu_mem, job.min_gpus, job.max_gpus)


def _sizes(job) -> list[int]:
    """GPU counts the model offers a job: its request, or for an elastic job
    the sizes :func:`alloc.solvers.hived.engine.elastic_sizes` allows."""
    if not job.elastic or not job.gpus:
        return [job.gpus]
    lo = job.min_gpus if job.min_gpus is not None else job.gpus
    hi = job.max_gpus if job.max_gpus is not None else job.gpus
    return elastic_sizes(job, lo, hi)


def _best_span(p: Problem, j: int, s: int, n: int | None = None) -> float:
    """Largest span factor job j can get on server s with n GPUs (default its
    request): the best factor of a declared level (switch, socket, server)
    whose node on s holds them (an upper bound; 1.0 for one GPU, no profile or
    another objective)."""
    job = p.jobs[j]
    prof = job.profile
    n = job.gpus if n is None else n
    if prof is None or n < 2 or "span" not in p.objective.factors:
        return 1.0
    sv = p.cluster.servers[s]
    sizes = {"server": sv.gpus, "socket": sv.gpus // max(1, sv.sockets),
             "switch": sv.gpus // max(1, sv.sockets) // max(1, sv.switches_per_socket)}
    cands = [prof.span_factor(lv) for lv in SPAN_LEVELS
             if lv in p.levels and sizes[lv] >= n]
    return max(cands) if cands else prof.span_factor("server")


def _value(p: Problem, j: int, s: int, n: int | None = None) -> float:
    """Upper bound on job j's value on server s with n GPUs (default its
    request).  For another size n (elastic jobs) the throughput is
    weight * grid(cpu / n, mem / n) * speed(t_s) * span * scale(n)
    (:func:`alloc.objectives.throughput` at the best span)."""
    job = p.jobs[j]
    if n is None or n == job.gpus:
        return p.coef(j, 0, s) * _best_span(p, j, s)
    if "grid" not in p.objective.factors:
        return p.objective.coef(job, gpus=n)
    prof = job.profile
    opt = p.options[j][0]
    base = prof.grid_value(opt.cpu / n, opt.mem / n) if prof is not None and prof.has_grid \
        else 1.0
    speed = p.speed(j, s) if prof is not None else 1.0
    return job.weight * base * speed * _best_span(p, j, s, n) * scale_factor(prof, job, n)


def _fits_server(p: Problem, j: int, s: int, n: int | None = None) -> bool:
    job = p.jobs[j]
    opt = p.options[j][0]
    n = job.gpus if n is None else n
    if not p.allowed[j, s] or opt.cpu > p.srv_cpu[s] or opt.mem > p.srv_mem[s]:
        return False
    if n > p.srv_gpus[s]:
        return False
    if job.locality == "switch" or job.locality == "socket":
        sv = p.cluster.servers[s]
        per = sv.gpus // max(1, sv.sockets)
        if job.locality == "switch":
            per //= max(1, sv.switches_per_socket)
        if n > per:
            return False
    return True


class _OneServerEngine(Engine):
    """The hived engine without multi-server spreading (the model's restriction)."""

    #: job -> value lost if it is preempted (set by the greedy warm start)
    loss: dict | None = None

    def pick_spread(self, j, n, mask, level, servers):
        return None

    def bind_and_place(self, j, n, tmask, level, preempted):
        """With known losses: bind the candidate cell whose victims, then whose
        resident jobs, lose the least value (hived takes the first that fits)."""
        if self.loss is None:
            return super().bind_and_place(j, n, tmask, level, preempted)
        v = self.job(j).tenant
        best = None
        for size, c, buddy_ok, r in self.cell_candidates(j, n, tmask, level, prune=False):
            inside = {i for g in self.tree.gpus[c] for i in self.on_gpu[g]}
            key = (sum(self.loss.get(i, 0.0) for i in r[1]), len(r[1]),
                   sum(self.loss.get(i, 0.0) for i in inside), not buddy_ok, size, c)
            if best is None or key < best[0]:
                best = (key, c, r, buddy_ok)
        if best is not None:
            _, c, r, buddy_ok = best
            self.bind(c, v)
            if buddy_ok or self.safe():
                self.commit(j, n, r[0], r[1], preempted)
                return True
            self.unbind(c)
        return super().bind_and_place(j, n, tmask, level, preempted)


def _current_value(p: Problem, r: int) -> float:
    """Objective value of running job r at its current placement."""
    job = p.jobs[r]
    a = current_assign(p, r)
    return p.value_of(r, a)


def _fits_at(eng: Engine, a) -> bool:
    return all(eng.gfree[g] >= mi for g, mi in a.gpus) and \
        all(eng.cpu[s] >= v for s, v in a.cpu) and all(eng.mem[s] >= v for s, v in a.mem)


def _place_kept(p: Problem, eng: Engine, kept) -> list:
    """Put kept running jobs back where they run (guaranteed first); returns
    those whose GPUs are no longer free."""
    homeless = []
    for r in sorted(kept, key=lambda r: (not p.jobs[r].guaranteed, r)):
        a = current_assign(p, r)
        if _fits_at(eng, a):
            eng.place(r, a)
        else:
            homeless.append(r)
    return homeless


def _greedy(p: Problem, running, pending, vbest, pcost: float, dens: float = 0.0):
    """Value-aware warm start on the hived engine (one server per job): running
    jobs of no value that some pending job may legally preempt are set aside,
    pending jobs go guaranteed first by value per GPU, then the set-aside jobs
    return where they ran if their room is still free.  Returns (engine,
    preempted) or None when a victim would be illegal."""
    jobs = p.jobs
    pend = set(pending)
    cur = {r: _current_value(p, r) for r in running}
    drop = [r for r in running if not pcost
            and (cur[r] <= 1e-12 or (not jobs[r].guaranteed
                                     and cur[r] / max(jobs[r].gpus, 1) < dens))
            and any(outranks(jobs[i], jobs[r]) for i in pend)]
    for _ in range(4):
        eng = _OneServerEngine(p)
        eng.loss = {r: cur[r] for r in running}
        eng.loss.update({j: vbest.get(j, 0.0) for j in pending})
        dropped = set(drop)
        homeless = restore_running(eng, [r for r in running if r not in dropped])

        def key(j):
            job = jobs[j]
            v = vbest.get(j, 0.0)
            cls = (0 if job.guaranteed else 2) + (1 if v <= 1e-12 else 0)
            return (cls, -v / max(job.gpus * job.gpu_milli / MILLI, 0.05), -job.priority, j)
        for j in sorted(list(pending) + homeless, key=key):
            if not eng.try_place(j, jobs[j].gpus, 0, set()) and jobs[j].guaranteed:
                eng.try_place(j, jobs[j].gpus, 1, set())   # opportunistic victims only
        for r in drop:
            a = current_assign(p, r)
            if _fits_at(eng, a):
                eng.place(r, a)
        _release_empty(eng)
        fresh = [i for i in eng.assign if i in pend or i in homeless]
        bad = [r for r in running if r not in eng.assign
               and not any(outranks(jobs[i], jobs[r]) for i in fresh if i != r)]
        if not bad:
            preempted = {r for r in running if r not in eng.assign}
            return eng, preempted
        drop = [r for r in drop if r not in bad]
    return None


def _hints(p, eng, glist, gsize, x, keep, mv, cellvar, rack_lvl):
    """Model values of an engine state (every remaining virtual cell bound in
    buddy order, which keeps safety): {var: value} for x, keep, mv, cells."""
    import copy
    counts = defaultdict(int)
    gindex = {}
    for gi, members in enumerate(glist):
        for j in members:
            gindex[(j, gsize[gi])] = gi
    for j, a in eng.assign.items():
        gi = gindex.get((j, len(a.gpus)))
        if gi is not None:
            srv = {s for s, _ in a.cpu}
            if len(srv) == 1:
                counts[(gi, srv.pop())] += 1
    hints = {}
    for key, v in x.items():
        hints[v] = counts.get(key, 0)
    for r, v in keep.items():
        a = eng.assign.get(r)
        hints[v] = int(a is not None and sorted(a.gpus) == sorted(current_assign(p, r).gpus))
    for v in mv.values():
        hints[v] = 0
    full = copy.copy(eng)
    full.__dict__.update({k: copy.deepcopy(v) for k, v in eng.__dict__.items()
                          if k in ("nbound", "bound", "bound_use", "free_max", "unused", "owner")})
    for (v, t, lvl), c in sorted(full.unused.items()):
        for _ in range(c):
            cand = next(iter(full.buddy_candidates(t, lvl)), None)
            if cand is None:
                break
            full.bind(cand[0], v)
    cc = defaultdict(int)
    tree = full.tree
    for v, nodes in full.bound.items():
        for n in nodes:
            lvl = tree.level[n]
            key = (v, lvl, n) if lvl == rack_lvl else (v, lvl, tree.server[n])
            cc[key] += 1
    for key, var in cellvar.items():
        hints[var] = cc.get(key, 0)
    return hints


def solve_cpsat_tenancy(problem: Problem, *, deadline, seed=0, preemption_cost=0.0,
                        guaranteed_first=True, workers=None) -> Solution:
    import time
    from ortools.sat.python import cp_model
    t_start = time.perf_counter()
    time_limit = max(0.01, deadline.left())
    migration_cost = problem.move_cost
    max_moves = problem.max_moves
    p = problem
    jobs = p.jobs
    eng0 = Engine(p)
    tree = eng0.tree
    q = eng0.q
    migrate = migration_cost is not None or (max_moves or 0) > 0
    mcost = float(migration_cost or 0.0)
    pcost = float(preemption_cost or 0.0)
    m = cp_model.CpModel()

    running = [j for j in range(p.J) if jobs[j].current is not None
               and current_assign(p, j) is not None]
    pending = [j for j in range(p.J) if j not in set(running)]
    groups: dict[tuple, list[int]] = defaultdict(list)
    for j in pending:
        groups[_signature(jobs[j])].append(j)
    # one entry per (group, size): glist[gi] its members, gsize[gi] the GPU
    # count, gset[gi] the group (entries of one group share its members)
    glist, gsize, gset = [], [], []
    for k_, members in enumerate(groups.values()):
        for n_ in _sizes(jobs[members[0]]):
            glist.append(members)
            gsize.append(n_)
            gset.append(k_)

    # usage containers per server: (coef var/expr) lists
    whole = defaultdict(list)      # whole GPUs
    shared = defaultdict(list)     # milli of shared jobs
    cpu = defaultdict(list)
    mem = defaultdict(list)
    gwhole = defaultdict(list)     # (v, s) -> guaranteed whole GPUs
    gshared = defaultdict(list)    # (v, s) -> guaranteed shared milli
    obj = []
    newplaced: dict[int, list] = defaultdict(list)   # job -> vars meaning "placed fresh"
    x: dict[tuple[int, int], object] = {}

    def add_gpu_usage(j, s, n, var):
        """n GPUs of job j on server s when ``var`` is 1: whole or shared,
        and under its tenant when guaranteed."""
        job = jobs[j]
        if job.gpu_milli >= MILLI:
            whole[s].append((n, var))
            if job.guaranteed:
                gwhole[(job.tenant, s)].append((n, var))
        else:
            shared[s].append((job.gpu_milli * n, var))
            if job.guaranteed:
                gshared[(job.tenant, s)].append((job.gpu_milli * n, var))

    def add_usage(j, s, var, n_gpus=None):
        n = jobs[j].gpus if n_gpus is None else n_gpus
        opt = p.options[j][0]
        if n:
            add_gpu_usage(j, s, n, var)
        cpu[s].append((opt.cpu, var))
        mem[s].append((opt.mem, var))

    for gi, members in enumerate(glist):
        j0 = members[0]
        job = jobs[j0]
        n_ = gsize[gi]
        if job.guaranteed and job.tenant not in q:
            continue
        for s in range(p.S):
            if n_ == 0:
                if p.options[j0][0].cpu > p.srv_cpu[s] or p.options[j0][0].mem > p.srv_mem[s]:
                    continue
            elif not _fits_server(p, j0, s, n_):
                continue
            if job.guaranteed and not any(t == p.cluster.servers[s].gpu_type and c
                                          for (t, _), c in q[job.tenant].items()):
                continue
            v = m.NewIntVar(0, len(members), f"x{gi}_{s}")
            x[(gi, s)] = v
            add_usage(j0, s, v, n_)
            obj.append((round(_value(p, j0, s, n_) * SCALE), v))
            for j in members:
                newplaced[j].append(v)

    by_set = defaultdict(list)
    for (gi, s), v in x.items():
        by_set[gset[gi]].append(v)
    n_members = {k_: len(members) for k_, members in zip(gset, glist)}
    for k_, vs in by_set.items():
        if len(vs) > 1:
            m.Add(sum(vs) <= n_members[k_])

    keep: dict[int, object] = {}
    mv: dict[tuple[int, int], object] = {}
    pre: dict[int, object] = {}
    for r in running:
        a = current_assign(p, r)
        k = m.NewBoolVar(f"keep{r}")
        keep[r] = k
        job = jobs[r]
        gsrv = defaultdict(int)
        for g, mi in a.gpus:
            gsrv[int(p.gpu_server[g])] += 1
        for s, c in a.cpu:
            cpu[s].append((c, k))
        for s, c in a.mem:
            mem[s].append((c, k))
        for s, n in gsrv.items():
            add_gpu_usage(r, s, n, k)
        val = p.value_of(r, a)
        obj.append((round(val * SCALE), k))
        moves = []
        n_r = len(a.gpus)          # a running elastic job keeps its size
        if migrate and job.gpus:
            own = {s for s, _ in a.cpu}
            for s in range(p.S):
                if s in own or not _fits_server(p, r, s, n_r):
                    continue
                if job.guaranteed and not any(t == p.cluster.servers[s].gpu_type and c
                                              for (t, _), c in q.get(job.tenant, {}).items()):
                    continue
                v = m.NewBoolVar(f"mv{r}_{s}")
                mv[(r, s)] = v
                moves.append(v)
                add_usage(r, s, v, n_r)
                obj.append((round((_value(p, r, s, n_r) - mcost) * SCALE), v))
                newplaced[r].append(v)
        pr = m.NewBoolVar(f"pre{r}")
        pre[r] = pr
        m.Add(k + sum(moves) + pr == 1)
        if pcost:
            obj.append((-round(pcost * SCALE), pr))
    # legal victims: pre[r] <= fresh placements of jobs that outrank r, summed per
    # rank class (guaranteed, tenant, priority) so each constraint stays short
    by_class: dict[tuple, list] = defaultdict(list)
    for i, vs in newplaced.items():
        ji = jobs[i]
        by_class[(ji.guaranteed, ji.tenant if ji.guaranteed else None, ji.priority)].extend(
            (i, v) for v in vs)
    class_sum = {}
    for key, ivs in by_class.items():
        cs = m.NewIntVar(0, len(ivs) * max(1, p.J), "")
        m.Add(cs == sum(v for _, v in ivs))
        class_sum[key] = (cs, {i for i, _ in ivs})
    for r in running:
        jr = jobs[r]
        terms = []
        for (g, t, prio), (cs, members) in class_sum.items():
            rep = next(iter(members))
            probe = replace(jobs[rep], priority=prio)
            if outranks(probe, jr):
                if members == {r}:
                    continue
                terms.append(cs if r not in members else cs - sum(
                    v for i, v in by_class[(g, t, prio)] if i == r))
        if terms:
            m.Add(pre[r] <= sum(terms))
        else:
            m.Add(pre[r] == 0)
    if migrate and max_moves is not None:
        m.Add(sum(mv.values()) <= int(max_moves))

    # cells
    lv_index = {x_: i for i, x_ in enumerate(p.levels)}
    srv_nodes = defaultdict(int)   # (s, lvl) -> number of nodes at lvl in s
    for n in range(tree.N):
        if tree.server[n] >= 0:
            srv_nodes[(tree.server[n], tree.level[n])] += 1
    cellg: dict[tuple[str, int], list] = defaultdict(list)
    cellvar: dict[tuple, object] = {}
    rack_lvl = lv_index.get("rack")
    for v, qv in q.items():
        for (t, lvl), c in qv.items():
            if c == 0:
                continue
            terms = []
            if lvl == rack_lvl:
                for n in tree.by_type_level.get((t, lvl), []):
                    rb = m.NewBoolVar("")
                    cellvar[(v, lvl, n)] = rb
                    terms.append(rb)
                    for s in {int(p.gpu_server[g]) for g in tree.gpus[n]}:
                        cellg[(v, s)].append((int(p.srv_gpus[s]), rb))
            else:
                for s in range(p.S):
                    if p.cluster.servers[s].gpu_type != t or not p.srv_gpus[s]:
                        continue
                    cnt = srv_nodes.get((s, lvl), 0)
                    if not cnt:
                        continue
                    b = m.NewIntVar(0, min(cnt, c), "")
                    cellvar[(v, lvl, s)] = b
                    terms.append(b)
                    size = len(tree.gpus[tree.by_type_level[(t, lvl)][0]])
                    cellg[(v, s)].append((size, b))
            m.Add(sum(terms) == c)

    # cover of running guaranteed jobs: if v's kept jobs on s touch D level-l
    # nodes, v's cells on s must span at least D of them (a cell of z GPUs >= the
    # node size z_l spans z / z_l nodes, a smaller one lies in one node)
    touch: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in running:
        jr = jobs[r]
        if not jr.guaranteed or jr.tenant not in q:
            continue
        for g, _ in current_assign(p, r).gpus:
            s = int(p.gpu_server[g])
            for n in tree.anc[g]:
                if tree.server[n] >= 0 and tree.level[n] > lv_index["server"]:
                    touch[(jr.tenant, s, tree.level[n])][n].append(keep[r])
    for (v, s, lvl), nodes in sorted(touch.items()):
        cells = cellg.get((v, s))
        if len(nodes) < 2 or not cells:
            continue
        zl = {len(tree.gpus[n]) for n in nodes}
        if len(zl) != 1:
            continue
        zl = zl.pop()
        if any(size > zl and size % zl for size, _ in cells):
            continue
        us = []
        for n, ks in sorted(nodes.items()):
            u = m.NewBoolVar("")
            for k in sorted(set(ks), key=lambda k: k.Index()):
                m.Add(u >= k)
            us.append(u)
        m.Add(sum((size // zl if size >= zl else 1) * b for size, b in cells) >= sum(us))
    # fragmentation: a job that must lie in one level-M node and is exactly its
    # size fills that node, i.e. g / z_L whole level-L nodes (z_L <= z_M); no
    # kept running job may touch them:
    #   sum_k (g_k / z_L) x[k,s] + #(level-L nodes of s a kept job touches) <= N_sL
    nodes_at = defaultdict(list)           # (s, lvl) -> nodes
    for n in range(tree.N):
        if tree.server[n] >= 0 and tree.level[n] > lv_index["server"] \
                and p.levels[tree.level[n]] in ("socket", "switch"):
            nodes_at[(tree.server[n], tree.level[n])].append(n)
    if nodes_at:
        touched = defaultdict(set)          # node -> running jobs using a GPU in it
        for r in running:
            for g, _ in current_assign(p, r).gpus:
                for n in tree.anc[g]:
                    touched[n].add(r)

        def whole_size(j, s, n):
            job = jobs[j]
            if job.locality not in ("switch", "socket", "server") or job.gpu_milli < MILLI:
                return 0
            sv = p.cluster.servers[s]
            z = sv.gpus
            if job.locality in ("socket", "switch"):
                z //= max(1, sv.sockets)
            if job.locality == "switch":
                z //= max(1, sv.switches_per_socket)
            return n if n == z else 0
        filled = defaultdict(list)           # s -> (g, var) of node-filling jobs
        for (gi, s), v in x.items():
            z = whole_size(glist[gi][0], s, gsize[gi])
            if z:
                filled[s].append((z, v))
        for (r, s), v in mv.items():
            z = whole_size(r, s, len(current_assign(p, r).gpus))
            if z:
                filled[s].append((z, v))
        for (s, lvl), ns in sorted(nodes_at.items()):
            zl = len(tree.gpus[ns[0]])
            terms = [(z // zl, v) for z, v in filled.get(s, []) if z >= zl and z % zl == 0]
            if not terms:
                continue
            us = []
            for n in ns:
                rs = sorted(touched.get(n, ()))
                if len(rs) == 1:
                    us.append(keep[rs[0]])
                elif rs:
                    u = m.NewBoolVar("")
                    for r in rs:
                        m.Add(u >= keep[r])
                    us.append(u)
            if not us:
                continue
            m.Add(sum(c * v for c, v in terms) + sum(us) <= len(ns))
    tenants = sorted(q)
    # positions of cells on servers with kept whole-GPU jobs: y[v,n] in {0,1}
    # for the level-l nodes n of s, sum_n y[v,n] = b[v,s,l], at most one cell
    # on each GPU; a kept job r (not v's guaranteed) on GPUs G_r takes
    # |G_r ∩ n| GPUs of v's cell n when both stay: w[v,n,r] >= y[v,n] + keep[r] - 1
    pinned = defaultdict(list)          # s -> (r, GPUs of r on s) of kept whole-GPU jobs
    for r in running:
        if jobs[r].gpu_milli >= MILLI:
            by_s = defaultdict(set)
            for g, _ in current_assign(p, r).gpus:
                by_s[int(p.gpu_server[g])].add(g)
            for s, gs in by_s.items():
                pinned[s].append((r, gs))
    inside = defaultdict(list)          # (v, s) -> (GPUs, w) taken inside v's cells
    for s, rs in sorted(pinned.items()):
        cover_g = defaultdict(list)
        for v in tenants:
            if not gwhole.get((v, s)) and not gshared.get((v, s)):
                continue
            for (v2, lvl, where), b in cellvar.items():
                if v2 != v or lvl == rack_lvl or where != s:
                    continue
                ys = []
                for n in tree.by_type_level.get((p.cluster.servers[s].gpu_type, lvl), []):
                    if tree.server[n] != s:
                        continue
                    yv = m.NewBoolVar("")
                    ys.append(yv)
                    for g in tree.gpus[n]:
                        cover_g[g].append(yv)
                    for r, gs in rs:
                        k_ = len(gs & set(tree.gpus[n]))
                        if k_ and not (jobs[r].guaranteed and jobs[r].tenant == v):
                            w = m.NewBoolVar("")
                            m.Add(w >= yv + keep[r] - 1)
                            inside[(v, s)].append((k_, w))
                m.Add(sum(ys) == b)
        for g, ys in cover_g.items():
            if len(ys) > 1:
                m.Add(sum(ys) <= 1)
    for s in range(p.S):
        G = int(p.srv_gpus[s])
        h = m.NewIntVar(0, G, "")
        m.Add(sum(c * v for c, v in whole[s]) + h <= G)
        if shared[s]:
            m.Add(sum(c * v for c, v in shared[s]) <= MILLI * h)
        m.Add(sum(c * v for c, v in cpu[s]) <= int(p.srv_cpu[s]))
        m.Add(sum(c * v for c, v in mem[s]) <= int(p.srv_mem[s]))
        cg_all = []
        for v in tenants:
            cg = sum(c * b for c, b in cellg.get((v, s), []))
            if cellg.get((v, s)):
                cg_all.extend(cellg[(v, s)])
            gw = gwhole.get((v, s), [])
            gs = gshared.get((v, s), [])
            if not gw and not gs:
                continue
            hv = m.NewIntVar(0, G, "")
            if gs:
                m.Add(sum(c * y for c, y in gs) <= MILLI * hv)
            m.Add(sum(c * y for c, y in gw) + hv + sum(c * w for c, w in inside.get((v, s), []))
                  <= (cg if cellg.get((v, s)) else 0))
        if cg_all:
            m.Add(sum(c * b for c, b in cg_all) <= G)
    # symmetry: identical servers without running jobs, ordered by GPUs given out
    # (only without tenants: cells make otherwise identical servers differ)
    if not q:
        busy = {s for r in running for s, _ in current_assign(p, r).cpu}
        load = defaultdict(list)
        for (gi, s), v in x.items():
            load[s].append((gsize[gi], v))
        for members in p.classes:
            free = [s for s in members if s not in busy]
            for a_, b_ in zip(free, free[1:]):
                if load[a_] and load[b_]:
                    m.Add(sum(c * v for c, v in load[a_]) >= sum(c * v for c, v in load[b_]))

    # ------------------------------------------------------------ warm starts
    import time
    from .engine import run
    limit = float(time_limit if time_limit is not None else 30.0)
    vbest: dict[int, float] = {}
    for (gi, s) in x:
        j0 = glist[gi][0]
        val = _value(p, j0, s, gsize[gi])
        for j in glist[gi]:
            vbest[j] = max(vbest.get(j, 0.0), val)
    for r in running:
        n_r = len(current_assign(p, r).gpus)
        vbest[r] = max([_value(p, r, s, n_r) for s in range(p.S)
                        if _fits_server(p, r, s, n_r)] or [0.0])
    gwt = {j: (jobs[j].gpus or 1) if jobs[j].guaranteed else 0 for j in range(p.J)}

    def evaluate(assign, preempted_):
        raw = sum(p.value_of(j, a_) for j, a_ in assign.items())
        mvs = sum(1 for r in running if r in assign
                  and sorted(assign[r].gpus) != sorted(current_assign(p, r).gpus))
        pen = raw - pcost * len(preempted_) - mcost * mvs
        # compared by the (penalised) objective first, guaranteed work breaks ties
        return (round(pen, 9), sum(gwt[j] for j in assign)), raw

    heng, hpre, _ = run(p)
    cands = [("hived", heng, set(hpre))]
    # two greedy variants: set aside running jobs of value 0 only, or also the
    # opportunistic ones of low value per GPU (below 0.15)
    gr = None
    for dens in (0.0, 0.15):
        g_ = _greedy(p, running, pending, vbest, pcost, dens)
        if g_ is not None:
            cands.append(("greedy", g_[0], g_[1]))
            if gr is None or evaluate(g_[0].assign, g_[1])[0] > evaluate(gr[0].assign, gr[1])[0]:
                gr = g_
    scored = [(evaluate(e.assign, pr)[0], -i, name, e, pr) for i, (name, e, pr) in enumerate(cands)]
    scored.sort(reverse=True)
    warm_key, _, warm_name, warm_eng, warm_pre = scored[0]
    hint_eng = gr[0] if gr is not None else heng
    hints = _hints(p, hint_eng, glist, gsize, x, keep, mv, cellvar, rack_lvl)

    solver = cp_model.CpSolver()
    # one worker by default: deterministic for a seed; more workers interleave
    solver.parameters.num_workers = int(workers or 1)
    if (workers or 1) > 1:
        solver.parameters.interleave_search = True
    solver.parameters.random_seed = int(seed)
    # probing and symmetry detection cost seconds on large models for little gain here
    solver.parameters.cp_model_probing_level = 0
    solver.parameters.symmetry_level = 0

    # complete the hint: fix the hinted variables and let CP-SAT fill in the rest
    for var, val in hints.items():
        m.AddHint(var, val)
    full_hint = None
    fx = cp_model.CpSolver()
    fx.parameters.fix_variables_to_their_hinted_value = True
    fx.parameters.num_workers = 1
    fx.parameters.cp_model_probing_level = 0
    fx.parameters.max_time_in_seconds = max(1.0, limit / 10)
    if fx.Solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        full_hint = list(fx.ResponseProto().solution)

    def set_hint(values):
        m.ClearHints()
        proto = m.Proto()
        proto.solution_hint.vars.extend(range(len(values)))
        proto.solution_hint.values.extend(int(v_) for v_ in values)

    def value_of(terms, values):
        return sum(c * (values[v_.Index()] if values is not None else hints.get(v_, 0))
                   for c, v_ in terms)

    if full_hint is not None:
        set_hint(full_hint)
    phase1_optimal = True
    floor = None
    floor_ct = -1
    # guaranteed work of a job: its GPUs (an elastic job's smallest size), 1 if none
    work = {j: min(_sizes(jobs[j])) or 1 for j in range(p.J)}
    gterms = [(work[glist[gi][0]], v) for (gi, s), v in x.items()
              if jobs[glist[gi][0]].guaranteed]
    gterms += [(work[r], keep[r]) for r in running if jobs[r].guaranteed]
    gterms += [(work[r], v) for (r, s), v in mv.items() if jobs[r].guaranteed]
    if guaranteed_first and gterms:
        # phase 1: as much guaranteed work as the cells allow (HiveD's guarantee).
        # Trivial bound: per tenant, min(its cell GPUs, its guaranteed GPU demand).
        dem = defaultdict(int)
        cpu_only = 0
        modelled = {j for gi_s in x for j in glist[gi_s[0]]} | set(running)
        for j in modelled:
            if jobs[j].guaranteed:
                if jobs[j].gpus:
                    dem[jobs[j].tenant] += work[j]
                else:
                    cpu_only += 1
        ub1 = cpu_only + sum(min(dem[v], sum(quota_gpus(p.cluster, v, t)
                                             for t in {t for (t, _) in q.get(v, {})}))
                             for v in dem)
        h1 = value_of(gterms, full_hint) if full_hint is not None else -1
        if h1 >= ub1:
            floor = h1
        else:
            m.Maximize(sum(c * v for c, v in gterms))
            solver.parameters.max_time_in_seconds = max(
                0.5, (limit - (time.perf_counter() - t_start)) / 3)
            st1 = solver.Solve(m)
            if st1 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                floor = int(round(solver.ObjectiveValue()))
                phase1_optimal = st1 == cp_model.OPTIMAL
                full_hint = list(solver.ResponseProto().solution)
                set_hint(full_hint)
            else:
                phase1_optimal = st1 != cp_model.UNKNOWN
        if floor is not None:
            floor_ct = len(m.Proto().constraints)
            m.Add(sum(c * v for c, v in gterms) >= floor)
    m.Maximize(sum(c * v for c, v in obj))
    if full_hint is not None:
        # never below the warm start
        m.Add(sum(c * v for c, v in obj) >= value_of(obj, full_hint))
    lp_bound = _lp_bound(m, skip={floor_ct} if not phase1_optimal else set(),
                         time_limit=max(1.0, limit / 6))
    # leave time to decode (twice) and compare
    reserve = max(1.0, 0.1 * limit) if p.J > 100 else 0.2
    # on large models part of the time goes to a neighbourhood search
    lns = p.J > 100 and p.S >= 8
    left = limit - reserve - (time.perf_counter() - t_start)
    solver.parameters.max_time_in_seconds = max(left * (0.25 if lns else 1.0), 0.5)
    solver.parameters.relative_gap_limit = 1e-4
    st = solver.Solve(m)
    stats_lns = {}
    sols = [solver]
    if lns and st == cp_model.FEASIBLE:
        found = _neighbourhood_search(m, solver, x, keep, mv, cellvar, rack_lvl, p,
                                      t_start + limit - reserve, seed)
        stats_lns["lns_improvements"] = len(found) - 1
        # the model value overrates some placements (decode misses): the last
        # few incumbents are decoded, best model value first
        sols = [_Values(solver, v_, o_) for v_, o_ in reversed(found[-4:])]
        solver = sols[0]
    stats = {"cp_status": solver.StatusName(st), "groups": len(glist), "warm": warm_name,
             "lp_bound": lp_bound, "phase1_proven": phase1_optimal and floor is not None,
             **stats_lns}
    if st == cp_model.INFEASIBLE and full_hint is None and not running and not hints:
        return Solution({}, Status.INFEASIBLE, None, (), stats)
    best = None
    cp_bound = None
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        cp_bound = solver.BestObjectiveBound() / SCALE + 0.5 * p.J / SCALE
        stats["model_objective"] = solver.ObjectiveValue() / SCALE
        took = 0.0
        for si, sol_ in enumerate(sols):
            now = time.perf_counter()
            if si and (now - t_start > limit - 0.3 * reserve
                       or now + took - t_start > limit - 0.1 * reserve):
                break
            if best is not None and best[4][0] >= sol_.ObjectiveValue() / SCALE - 1e-9:
                break     # no decode of this incumbent can beat the best one
            for cv in ("exact", cellvar, None):
                if cv == "exact":
                    r_ = _decode_exact(p, sol_, running, glist, gsize, gset, x, keep, mv,
                                       cellvar, rack_lvl, t_start + limit - 0.1 * reserve)
                    if r_ is None:
                        continue
                    eng, lost = r_
                else:
                    eng, lost = _decode(p, sol_, running, glist, gsize, gset, x, keep, mv, cv,
                                        rack_lvl)
                if not _binding_ok(p, eng) or not _victims_ok(p, eng, running):
                    continue
                preempted = {r for r in running if r not in eng.assign}
                key, _ = evaluate(eng.assign, preempted)
                if key >= warm_key and (best is None or key > best[4]):
                    best = ("cpsat", eng, preempted, lost == 0 and st == cp_model.OPTIMAL, key)
                    stats["decode_misses"] = lost
                if lost == 0:
                    break
            took = time.perf_counter() - now
        if best is not None:
            best = best[:4]
    elif st == cp_model.INFEASIBLE:
        stats["cp_note"] = "model infeasible under the warm-start floor"
    if best is None:
        best = (warm_name, warm_eng, warm_pre, False)
    name, eng, preempted, proven = best
    key, raw = evaluate(eng.assign, preempted)
    # the bound: phase 2 under phase 1's floor (valid when phase 1 is proven)
    bounds = [b_ for b_ in (lp_bound, cp_bound if phase1_optimal else None) if b_ is not None]
    bnd = min(bounds) if bounds else None
    penalised = bool(pcost) or bool(mcost)
    if bnd is not None and not penalised and raw > bnd + 1e-6 * max(1.0, abs(bnd)):
        # the chosen solution lies outside the model (hived spread a job over
        # servers): no model bound covers it
        bnd = None
    status = Status.OPTIMAL if (proven and not penalised and phase1_optimal) else Status.FEASIBLE
    stats.update({"binding": binding_keys(eng.tree, eng.bound), "source": name,
                  "moves": sum(1 for r in running if r in eng.assign
                               and sorted(eng.assign[r].gpus)
                               != sorted(current_assign(p, r).gpus)),
                  "preemptions": len(preempted), "raw_value": raw})
    if penalised:
        stats["penalised"] = key[0]
        stats["penalised_bound"] = bnd
        bnd = None
    stats["covers_instance"] = _covers_instance(p, floor is not None)
    return Solution(dict(eng.assign), status, bnd, tuple(sorted(preempted)), stats)


def _covers_instance(p: Problem, lexicographic: bool) -> bool:
    """True when the model's restrictions remove nothing from this instance:
    no guaranteed-work floor, no job that could spread over servers, no
    CPU/memory point other than the request that the objective values, every
    elastic size a scaling point, no running elastic job."""
    from ...objectives import job_sizes
    if lexicographic:
        return False
    grid = "grid" in p.objective.factors
    for j in p.pending:
        job = p.jobs[j]
        if job.gpus >= 2 and job.gpu_milli == MILLI and job.locality in (None, "rack"):
            return False
        if grid and len(p.options[j]) > 1:
            return False
        if job.elastic and set(_sizes(job)) != set(job_sizes(job)):
            return False
    return not any(p.jobs[r].elastic for r in p.running)


class _Values:
    """A solver's bound with other variable values (the search's best)."""

    def __init__(self, solver, values, objective):
        self._solver = solver
        self._values = values
        self._objective = objective

    def Value(self, var):
        return self._values[var.Index()]

    def ObjectiveValue(self):
        return self._objective

    def BestObjectiveBound(self):
        return self._solver.BestObjectiveBound()

    def StatusName(self, st):
        return self._solver.StatusName(st)


def _neighbourhood_search(m, solver, x, keep, mv, cellvar, rack_lvl, p, deadline, seed):
    """Large-neighbourhood search from the solver's solution: all but a few
    random servers (their placements, kept jobs, moves and cells; rack cells
    always) fixed, the rest re-solved with CP-SAT from the incumbent, an
    improvement kept.  Returns the incumbents [(values, objective)], the
    solver's first."""
    import random
    import time
    from ortools.sat.python import cp_model
    best = list(solver.ResponseProto().solution)
    proto0 = m.Proto()
    o = proto0.objective

    def objective(vals):
        return sum(c * vals[v] for v, c in zip(o.vars, o.coeffs))   # minimised form
    best_obj = objective(best)

    def value(o_):
        return (o_ + o.offset) * (o.scaling_factor or 1.0)
    found = [(best, value(best_obj))]
    per_srv = defaultdict(list)
    for (gi, s), v in x.items():
        per_srv[s].append(v.Index())
    for r, k in keep.items():
        for s, _ in current_assign(p, r).cpu:
            per_srv[s].append(k.Index())
    for (r, s), v in mv.items():
        per_srv[s].append(v.Index())
    for (v, lvl, where), var in cellvar.items():
        if lvl != rack_lvl:
            per_srv[where].append(var.Index())
    fixable = set()
    for idx in per_srv.values():
        fixable.update(idx)
    for (v, lvl, where), var in cellvar.items():
        if lvl == rack_lvl:
            fixable.add(var.Index())
    rng = random.Random(seed)
    servers = sorted(per_srv)
    size = max(2, min(len(servers) // 4, 8))
    while deadline - time.perf_counter() > 0.3:
        free = set()
        for s in rng.sample(servers, min(size, len(servers))):
            free.update(per_srv[s])
        mm = m.clone()
        pr = mm.Proto()
        for i in fixable - free:
            dom = pr.variables[i].domain
            if len(dom) == 2:
                dom[0] = best[i]
                dom[1] = best[i]
        mm.ClearHints()
        pr.solution_hint.vars.extend(range(len(best)))
        pr.solution_hint.values.extend(int(v_) for v_ in best)
        sub = cp_model.CpSolver()
        sub.parameters.num_workers = 1
        sub.parameters.random_seed = rng.randrange(1 << 30)
        sub.parameters.cp_model_probing_level = 0
        sub.parameters.symmetry_level = 0
        sub.parameters.max_time_in_seconds = max(0.1, min(2.0, deadline - time.perf_counter()))
        if sub.Solve(mm) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            vals = list(sub.ResponseProto().solution)
            ov = objective(vals)
            if ov < best_obj:
                best, best_obj = vals, ov
                found.append((best, value(ov)))
    return found


def _bind_model_cells(eng: Engine, solver, cellvar, rack_lvl) -> None:
    """Bind the cells the model counts (rack cells by node, others per server),
    outer levels first; inside a server the cells packed next to v's bound ones
    and over free GPUs first."""
    tree = eng.tree
    want = []
    for (v, lvl, where), var in cellvar.items():
        c = solver.Value(var)
        if c:
            want.append((lvl, where, v, c))
    want.sort(key=lambda w: (w[0], w[1], w[2]))
    for lvl, where, v, c in want:
        if lvl == rack_lvl:
            cands = [where]
            have = int(where in eng.bound[v])
        else:
            cands = [n for (t, lv), ns in tree.by_type_level.items() if lv == lvl
                     for n in ns if tree.server[n] == where]
            have = sum(1 for n in eng.bound[v] if tree.level[n] == lvl and tree.server[n] == where)
        vi = eng.tid[v]
        for _ in range(c - have):
            ok = [n for n in cands if all(eng.owner[g] < 0 for g in tree.gpus[n])
                  and eng.unused.get((v, tree.gtype[n], lvl), 0) > 0]
            if not ok:
                break

            def near(n):
                par = tree.parent[n]
                sib = sum(1 for g in tree.gpus[par] if eng.owner[g] == vi) if par >= 0 else 0
                busy = sum(1 for g in tree.gpus[n] if eng.gfree[g] < MILLI)
                return (busy, -sib, n)
            eng.bind(min(ok, key=near), v)


def _physical_cells(p, eng, solver, cellvar, rack_lvl, kept):
    """Physical cells realising the model's counts: y[v,n] in {0,1} with
    sum over v's level-l nodes on server s = b[v,s,l] (rack cells as chosen),
    disjoint (each GPU in at most one chosen cell) and covering the GPUs of the
    kept guaranteed jobs of v; among those, cells over free GPUs first.
    Returns [(node, tenant)] or None."""
    from ortools.sat.python import cp_model
    tree = eng.tree
    jobs = p.jobs
    need = defaultdict(set)          # tenant -> GPUs of its kept guaranteed jobs
    busy = set()
    for r in kept:
        for g, _ in current_assign(p, r).gpus:
            busy.add(g)
            if jobs[r].guaranteed:
                need[jobs[r].tenant].add(g)
    m = cp_model.CpModel()
    y = {}
    per_gpu = defaultdict(list)
    cover = defaultdict(list)
    other = {g: v for v, gs in need.items() for g in gs}
    groups = defaultdict(list)
    for (v, lvl, where), var in cellvar.items():
        c = solver.Value(var)
        if lvl == rack_lvl:
            nodes = [where]
        else:
            nodes = [n for (t, lv), ns in tree.by_type_level.items() if lv == lvl
                     for n in ns if tree.server[n] == where]
        for n in nodes:
            if any(other.get(g, v) != v for g in tree.gpus[n]):
                continue
            b = y.get((v, n))
            if b is None:
                b = y[(v, n)] = m.NewBoolVar("")
                for g in tree.gpus[n]:
                    per_gpu[g].append(b)
                    if other.get(g) == v:
                        cover[(v, g)].append(b)
            groups[(v, lvl, where)].append(b)
        if len(groups[(v, lvl, where)]) < c:
            return None
        m.Add(sum(groups[(v, lvl, where)]) == c)
    for bs in per_gpu.values():
        if len(bs) > 1:
            m.AddAtMostOne(bs)
    for v, gs in need.items():
        for g in gs:
            if not cover.get((v, g)):
                return None
            m.AddBoolOr(cover[(v, g)])
    m.Minimize(sum(sum(1 for g in tree.gpus[n] if g in busy) * b for (v, n), b in y.items()))
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = 5.0
    if s.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return sorted((n, v) for (v, n), b in y.items() if s.Value(b))


def _decode(p, solver, running, glist, gsize, gset, x, keep, mv, cellvar=None,
            rack_lvl=None):
    """Replay the model's choices through the hived engine; returns (engine, misses)."""
    jobs = p.jobs
    eng = _OneServerEngine(p)
    kept = [r for r in running if solver.Value(keep[r])]
    cells = _physical_cells(p, eng, solver, cellvar, rack_lvl, kept) \
        if cellvar is not None else None
    if cells is not None:
        # the model's cells, placed to cover the kept guaranteed jobs, then the
        # kept jobs (every cell bound: safety holds trivially)
        for n, v in cells:
            eng.bind(n, v)
        homeless = _place_kept(p, eng, kept)
    else:
        homeless = restore_running(eng, kept)
        if cellvar is not None:
            _bind_model_cells(eng, solver, cellvar, rack_lvl)
    plan = []
    for (gi, s), v in x.items():
        cnt = solver.Value(v)
        if cnt:
            plan.append((gi, s, cnt))
    queue = []
    taken = defaultdict(int)
    size = {}
    for gi, s, cnt in sorted(plan):
        members = glist[gi]
        for j in members[taken[gset[gi]]:taken[gset[gi]] + cnt]:
            size[j] = gsize[gi]
            queue.append((j, s))
        taken[gset[gi]] += cnt
    for (r, s), v in mv.items():
        if solver.Value(v):
            queue.append((r, s))
    for r in homeless:
        queue.append((r, None))
    tight = {"switch": 0, "socket": 1, "server": 2}
    queue.sort(key=lambda js: (not jobs[js[0]].guaranteed, -jobs[js[0]].priority,
                               tight.get(jobs[js[0]].locality or "", 3), -jobs[js[0]].gpus,
                               js[0]))
    lost = 0
    missed = []
    for j, s in queue:
        n = size.get(j, jobs[j].gpus)
        ok = False
        if s is not None:
            eng.only_servers = {s}
            ok = eng.try_place(j, n, 0, set())
            eng.only_servers = None
        if not ok:
            lost += 1
            missed.append(j)
    # a job the engine could not fit on its model server goes anywhere, once
    # every other job had its own server (so it takes no planned room)
    for j in missed:
        eng.try_place(j, size.get(j, jobs[j].gpus), 0, set())

    if cellvar is None:
        _release_empty(eng)
    return eng, lost


#: largest number of candidate GPU sets of one job on one server in the exact decode
_MAX_SETS = 256


def _span_key(p: Problem, gpus) -> int:
    """Index of the innermost level whose node holds all of ``gpus``."""
    best = -1
    for i, lv in enumerate(p.levels):
        dom = p.domain.get(lv)
        if dom is None or lv == "gpu":
            continue
        if len({int(dom[g]) for g in gpus}) == 1:
            best = i
    return best




def _server_plan(p, eng, s, counts, jobs_on, busy, optional, own_fixed, cover, reserve,
                 vcache, size=None, time_limit=1.0):
    """Exact placement inside server s of the jobs the model put there.

    Given the model's cell counts c[v,l] on s, the GPUs of the kept running
    jobs that stay put (``busy``; ``cover[g] = v`` when a kept guaranteed job
    of v uses g), kept opportunistic jobs r that may give way (``optional``:
    r -> (GPUs G_r, value w_r)) and the whole-GPU jobs J_s the model placed on
    s, choose cells y[v,n] in {0,1} (n a level-l node of s), k[r] in {0,1}
    (r stays) and GPU sets z[j,S] in {0,1} (S a set of n_j GPUs obeying j's
    locality):

        sum_{n at l} y[v,n] = c[v,l];   sum_{v, n ∋ g} y[v,n] <= 1     (disjoint cells)
        o[g,v] = sum_{n ∋ g} y[v,n];    o[g,cover[g]] = 1
        sum_S z[j,S] <= 1;  sum_{j,S ∋ g} z[j,S] + k[r] <= 1  (g in G_r; 0 on busy g)
        z[j,S] <= o[g,v_j]  for g in S, j guaranteed of tenant v_j
        1 - k[r] <= sum {z[j,S] : j outranks r}            (legal victims only)
        sum n_j z[j,S] + sum |G_r| k[r] <= free GPUs - reserve  (room for shared jobs)

    maximising sum val(j,S) z[j,S] + sum w_r k[r], val the placement's real
    value (its span factor).  Returns ([(node, tenant)], {job: GPUs}, {r kept})
    or None (infeasible, or too many GPU sets to list)."""
    from itertools import combinations
    from ortools.sat.python import cp_model
    tree = eng.tree
    jobs = p.jobs
    gl = list(eng.gpus_of(s))
    m = cp_model.CpModel()
    y = {}
    on_gpu = defaultdict(list)          # g -> [(v, var)]
    for (v, lvl), c in sorted(counts.items()):
        nodes = [n for n in tree.by_type_level.get((tree.gpu_type[gl[0]], lvl), [])
                 if tree.server[n] == s] if gl else []
        vs = []
        for n in nodes:
            if any(cover.get(g, v) != v or g in own_fixed for g in tree.gpus[n]):
                continue
            b = m.NewBoolVar("")
            y[(v, n)] = b
            vs.append(b)
            for g in tree.gpus[n]:
                on_gpu[g].append((v, b))
        if len(vs) < c:
            return None
        m.Add(sum(vs) == c)
    own = {}
    for g in gl:
        lits = [b for _, b in on_gpu[g]]
        if len(lits) > 1:
            m.AddAtMostOne(lits)
        for v in {v for v, _ in on_gpu[g]}:
            own[(g, v)] = [b for v2, b in on_gpu[g] if v2 == v]
        if g in cover:
            if g in own_fixed:
                if own_fixed[g] != cover[g]:
                    return None
            elif not own.get((g, cover[g])):
                return None
            else:
                m.AddBoolOr(own[(g, cover[g])])
    free = [g for g in gl if g not in busy]
    keep = {r: m.NewBoolVar("") for r in optional}
    held = defaultdict(list)            # g -> keep vars of optional jobs on g
    for r, (gs, _) in optional.items():
        for g in gs:
            held[g].append(keep[r])
    use = defaultdict(list)
    z = {}
    obj = [(round(w * SCALE), keep[r]) for r, (_, w) in optional.items()]
    total = [(len(gs), keep[r]) for r, (gs, _) in optional.items()]
    rescuers = defaultdict(list)        # r -> z of jobs that outrank r
    for j in jobs_on:
        job = jobs[j]
        k = (size or {}).get(j, job.gpus)
        if k > len(free):
            continue
        n_sets = 1
        for i in range(k):
            n_sets = n_sets * (len(free) - i) // (i + 1)
        if n_sets > _MAX_SETS:
            return None
        loc = job.locality
        dom = p.domain.get(loc) if loc not in (None, "rack", "server") else None
        v = job.tenant if job.guaranteed else None
        lits = []
        for S in combinations(free, k):
            if dom is not None and len({int(dom[g]) for g in S}) != 1:
                continue
            if v is not None and any(own_fixed.get(g, v) != v or
                                     (g not in own_fixed and not own.get((g, v))) for g in S):
                continue
            key = (j, k, _span_key(p, S))
            val = vcache.get(key)
            if val is None:
                val = vcache[key] = job_value(p, j, p.make_assign(j, S, 0))
            b = m.NewBoolVar("")
            z[(j, S)] = b
            lits.append(b)
            for g in S:
                use[g].append(b)
                if v is not None and g not in own_fixed:
                    m.AddBoolOr(own[(g, v)]).OnlyEnforceIf(b)
            obj.append((round(val * SCALE) + 1, b))
            total.append((k, b))
        if len(lits) > 1:
            m.AddAtMostOne(lits)
        for r in optional:
            if outranks(job, jobs[r]):
                rescuers[r].extend(lits)
    for g in set(use) | set(held):
        for kr in held.get(g, ()):
            m.Add(sum(use.get(g, ())) + kr <= 1)
        if not held.get(g) and len(use[g]) > 1:
            m.AddAtMostOne(use[g])
    for r, kr in keep.items():
        if rescuers.get(r):
            m.AddBoolOr(rescuers[r] + [kr])
        else:
            m.Add(kr == 1)
    if reserve and total:
        m.Add(sum(c * b for c, b in total) <= len(free) - reserve)
    m.Maximize(sum(c * b for c, b in obj))
    sv = cp_model.CpSolver()
    sv.parameters.num_workers = 1
    sv.parameters.max_time_in_seconds = time_limit
    if sv.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    cells = sorted((n, v) for (v, n), b in y.items() if sv.Value(b))
    placed = {j: list(S) for (j, S), b in z.items() if sv.Value(b)}
    return cells, placed, {r for r, kr in keep.items() if sv.Value(kr)}


def _decode_exact(p, solver, running, glist, gsize, gset, x, keep, mv, cellvar, rack_lvl,
                  deadline=float("inf")):
    """Decode server by server with :func:`_server_plan`: the model's cells on
    each server and its whole-GPU jobs' GPUs chosen together (rack cells as
    the model bound them; a kept opportunistic job on one server may give way
    to a job that outranks it), then kept jobs, planned jobs, shared and
    CPU-only jobs on their model server through the engine; a job left over is
    tried anywhere; finally every other pending job that still fits (no
    victims).  Returns (engine, misses) or None when some server's counts
    cannot be realised around the kept jobs (or the deadline passes)."""
    import time
    jobs = p.jobs
    eng = _OneServerEngine(p)
    tree = eng.tree
    kept = [r for r in running if solver.Value(keep[r])]
    counts = defaultdict(dict)
    rack_owner = {}
    for (v, lvl, where), var in cellvar.items():
        c = solver.Value(var)
        if not c:
            continue
        if lvl == rack_lvl:
            eng.bind(where, v)
            for g in tree.gpus[where]:
                rack_owner[g] = v
        else:
            counts[where][(v, lvl)] = c
    busy = defaultdict(set)
    optional = defaultdict(dict)
    cover = {}
    for r in kept:
        a = current_assign(p, r)
        srv = {int(p.gpu_server[g]) for g, _ in a.gpus}
        if not jobs[r].guaranteed and len(srv) == 1:
            optional[srv.pop()][r] = ([g for g, _ in a.gpus], _current_value(p, r))
            continue
        for g, _ in a.gpus:
            busy[int(p.gpu_server[g])].add(g)
            if jobs[r].guaranteed:
                if cover.get(g, jobs[r].tenant) != jobs[r].tenant:
                    return None
                cover[g] = jobs[r].tenant
    plan = defaultdict(list)           # s -> jobs the model put there
    taken = defaultdict(int)
    size = {}
    for (gi, s), var in sorted(x.items()):
        cnt = solver.Value(var)
        if cnt:
            members = glist[gi][taken[gset[gi]]:taken[gset[gi]] + cnt]
            plan[s].extend(members)
            size.update((j, gsize[gi]) for j in members)
            taken[gset[gi]] += cnt
    for (r, s), var in mv.items():
        if solver.Value(var):
            plan[s].append(r)
    vcache: dict = {}
    chosen = {}
    later = []
    stay = set(kept)
    for s in sorted(set(plan) | set(counts) | set(busy) | set(optional)):
        whole = [j for j in plan.get(s, ()) if size.get(j, jobs[j].gpus)
                 and jobs[j].gpu_milli >= MILLI]
        milli = sum(jobs[j].gpu_milli * size.get(j, jobs[j].gpus) for j in plan.get(s, ())
                    if jobs[j].gpus and jobs[j].gpu_milli < MILLI)
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        r = _server_plan(p, eng, s, counts.get(s, {}), whole, busy[s], optional.get(s, {}),
                         {g: v for g, v in rack_owner.items() if int(p.gpu_server[g]) == s},
                         {g: v for g, v in cover.items() if int(p.gpu_server[g]) == s},
                         -(-milli // MILLI), vcache, size, min(1.0, left))
        if r is None:
            return None
        for n, v in r[0]:
            eng.bind(n, v)
        chosen.update(r[1])
        stay -= set(optional.get(s, {})) - r[2]
        later.extend((j, s) for j in plan.get(s, ()) if j not in r[1])
    homeless = _place_kept(p, eng, stay)
    missed = []
    for j, gs in sorted(chosen.items()):
        a = p.make_assign(j, gs, 0)
        if _fits_at(eng, a):
            eng.place(j, a)
        else:
            missed.append(j)
    for j, s in later:
        eng.only_servers = {s}
        ok = eng.try_place(j, size.get(j, jobs[j].gpus), 0, set())
        eng.only_servers = None
        if not ok:
            missed.append(j)
    for j in missed + homeless:
        eng.try_place(j, size.get(j, jobs[j].gpus), 0, set())
    rest = [j for j in range(p.J) if j not in eng.assign and jobs[j].current is None]
    for j in sorted(rest, key=lambda j: (not jobs[j].guaranteed, -p.upper_coef(j), j)):
        eng.try_place(j, jobs[j].gpus, 0, set())
    return eng, len(missed)


def _victims_ok(p: Problem, eng: Engine, running) -> bool:
    """Every running job left out is outranked by a job placed afresh."""
    jobs = p.jobs
    fresh = [i for i, a in eng.assign.items() if jobs[i].current is None
             or sorted(a.gpus) != sorted(current_assign(p, i).gpus)]
    return all(any(outranks(jobs[i], jobs[r]) for i in fresh if i != r)
               for r in running if r not in eng.assign)


def _binding_ok(p: Problem, eng: Engine) -> bool:
    """The engine's binding proves the tenancy invariant (cells, safety)."""
    from ...tenancy import check_binding
    used: dict[str, set] = defaultdict(set)
    for j, a in eng.assign.items():
        job = p.jobs[j]
        if job.guaranteed and job.tenant is not None:
            used[job.tenant].update(g for g, _ in a.gpus)
    return not check_binding(p.cluster, {v: sorted(ns) for v, ns in eng.bound.items()}, used)


def _lp_bound(m, skip=(), time_limit=5.0):
    """Objective bound of the LP relaxation of model ``m`` (every constraint is
    linear), solved with GLOP; constraints indexed in ``skip`` are left out.
    None if the LP does not solve to optimality."""
    from ortools.linear_solver import pywraplp
    proto = m.Proto()
    lp = pywraplp.Solver.CreateSolver("GLOP")
    if lp is None:
        return None
    lp.SetTimeLimit(int(time_limit * 1000))
    inf = lp.infinity()

    def dom(d):
        d = list(d)
        lo, hi = d[0], d[-1]
        big = 1 << 60
        return (-inf if lo <= -big else float(lo)), (inf if hi >= big else float(hi))
    xs = []
    for v in proto.variables:
        lo, hi = dom(v.domain)
        xs.append(lp.NumVar(lo, hi, ""))
    for i, ct in enumerate(proto.constraints):
        if i in skip:
            continue
        if not ct.has_linear() or len(ct.enforcement_literal):
            return None
        lin = ct.linear
        lo, hi = dom(lin.domain)
        shift = 0.0
        coefs = defaultdict(float)
        for var, c in zip(lin.vars, lin.coeffs):
            if var >= 0:
                coefs[var] += c
            else:   # negated reference: not(x) = 1 - x
                coefs[-var - 1] -= c
                shift += c
        row = lp.RowConstraint(lo - shift, hi - shift, "")
        for var, c in coefs.items():
            row.SetCoefficient(xs[var], float(c))
    o = proto.objective
    if any(v_ < 0 for v_ in o.vars):
        return None
    obj = lp.Objective()
    for var, c in zip(o.vars, o.coeffs):
        obj.SetCoefficient(xs[var], float(c))
    obj.SetMinimization()     # the proto stores a minimisation, scaled back below
    rs = lp.Solve()
    if rs != pywraplp.Solver.OPTIMAL:
        return None
    val = (obj.Value() + o.offset) * (o.scaling_factor or 1.0)
    if (o.scaling_factor or 1.0) > 0:
        return None          # a minimisation: the LP gives no upper bound
    val /= SCALE
    return val + 1e-6 * max(1.0, abs(val))
