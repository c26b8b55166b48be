r"""Decoding a solution of the tenancy model into placements.

The model counts cells and GPUs per server; a decode chooses the physical
cells and GPUs.  Both decoders place cells with the one cell-placing model of
[`alloc.tenancy.cell_placement_model`][alloc.tenancy.cell_placement_model].

**Exact, server by server** (`decode_exact`).  On each server s a small
model extends the cell-placing model of the model's counts c[v,l] on s (cells
y[v,n], covering the GPUs of kept guaranteed jobs, disjoint, none on a GPU of
a bound rack cell) with the whole-GPU jobs J_s the model put there, the kept
opportunistic jobs r on s that may give way (k[r] = 1: r stays) and GPU sets
z[j,S] in {0,1} (S a set of n_j free GPUs obeying j's locality):

$$
\sum_S z_{jS} \le 1,\quad
\sum_{j, S \ni g} z_{jS} + k_r \le 1 \ (g \in G_r),\quad
z_{jS} \le \sum_{n \ni g} y_{v_j n} \ (g \in S,\ j \text{ guaranteed of } v_j),

1 - k_r \le \sum \{z_{jS} : j \text{ outranks } r\},\qquad
\sum n_j z_{jS} + \sum |G_r| k_r \le \text{free GPUs} - \text{reserve},
$$

maximising $\sum val(j,S)\, z_{jS} + \sum w_r k_r$ (val: the real value
of the placement, span factor included).  Kept jobs, the chosen GPU sets,
the shared and CPU-only jobs on their model server, spread jobs on the
servers holding their pool's units, then every job left over anywhere, and
finally every other pending job that still fits (no victims) go through the
engine.

**Replay** (`decode_replay`).  Physical cells realising every count
(the cell-placing model over all servers, fewest busy GPUs) are bound, kept
jobs put back, then each placed job goes on its model server (spread jobs on
their units' servers) through the ``hived`` engine, a job that does not fit
there anywhere once every other job had its server.  Without such cells the
kept jobs are restored with an inferred binding and the counts bound next to
the tenant's cells (``"cells"``), or the engine binds cells itself in buddy
order (``"buddy"``).

A decoded state is polished (`polish`: a new multi-GPU job whose span
factor falls short of its server's best is re-placed where the engine gives
it more) and checked by the caller (`binding_ok`, `victims_ok`);
``misses`` counts model placements it did not realise.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations


from ....kernel import solve
from ....model import MILLI
from ....problem import Problem
from ....tenancy import CellRequest, cell_placement_model, check_binding, feasibility_engine
from ....topology import is_outer
from ....engines.cells.engine import (Engine, _release_empty, current_assign, job_value,
                                      restore_running, running_assign)
from .model import SCALE, TenancyModel, value_on
from .warm import LossAwareEngine, fits_at

#: largest number of candidate GPU sets of one job on one server in the exact decode
MAX_SETS = 256


def _val(xv, col) -> int:
    return int(round(float(xv[col])))


class Plan:
    """What a model solution ``xv`` places: ``on[s]`` (jobs put whole on
    server s), ``spread`` ((job, servers) pairs), ``size`` (job -> GPUs),
    ``kept`` (running jobs that stay), ``counts[s]`` ({(v, lvl): cells}),
    ``racks`` ([(node, tenant)] rack cells)."""

    def __init__(self, tm: TenancyModel, xv):
        G, p = tm.groups, tm.p
        self.on: dict[int, list[int]] = defaultdict(list)
        self.spread: list[tuple[int, set]] = []
        self.pool: dict[int, tuple] = {}             # spread job -> its unit pool
        self.units: dict[tuple, dict[int, int]] = defaultdict(dict)   # pool -> {s: units}
        self.size: dict[int, int] = {}
        taken: dict[int, int] = defaultdict(int)
        entries = sorted(tm.x.items()) + sorted(tm.y.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))
        for (k, where), col in entries:
            cnt = _val(xv, col)
            if not cnt:
                continue
            g = G.group[k]
            members = G.members[k][taken[g]:taken[g] + cnt]
            taken[g] += cnt
            self.size.update((j, G.size[k]) for j in members)
            if (k, where) in tm.x:
                self.on[where].extend(members)
            else:
                srv = self.unit_servers(tm, xv, members[0], G.size[k], where)
                self.spread.extend((j, srv) for j in members)
                self.pool.update((j, tm.pool(j, G.size[k], where)) for j in members)
        for (r, s), col in tm.mv.items():
            if _val(xv, col):
                self.on[s].append(r)
        for (r, d), col in tm.ms.items():
            if _val(xv, col):
                n = len(running_assign(p, r).gpus)
                self.spread.append((r, self.unit_servers(tm, xv, r, n, d)))
                self.pool[r] = tm.pool(r, n, d)
        for (key, s), col in tm.units.items():
            if _val(xv, col):
                self.units[key][s] = _val(xv, col)
        self.kept = [r for r in tm.running if _val(xv, tm.keep[r])]
        self.counts: dict[int, dict] = defaultdict(dict)
        self.racks: list[tuple[int, str]] = []
        for (v, lvl, where), col in tm.cells.items():
            c = _val(xv, col)
            if not c:
                continue
            if lvl in tm.outer_lvls:
                self.racks.append((where, v))
            else:
                self.counts[where][(v, lvl)] = c

    @staticmethod
    def unit_servers(tm: TenancyModel, xv, j: int, n: int, d) -> set:
        """Servers holding at least one unit, in solution ``xv``, of the pool of
        job j spread on n GPUs over domain d."""
        key = tm.pool(j, n, d)
        return {s for (k, s), col in tm.units.items() if k == key and _val(xv, col)}


def server_requests(eng: Engine, s: int, counts: dict) -> list[CellRequest]:
    """Cell requests of server s: ``counts[(v, lvl)]`` cells among its nodes."""
    tree = eng.tree
    gl = list(eng.gpus_of(s))
    if not gl:
        return []
    t = tree.gpu_type[gl[0]]
    out = []
    for (v, lvl), c in sorted(counts.items()):
        nodes = tuple(n for n in tree.by_type_level.get((t, lvl), []) if tree.server[n] == s)
        out.append(CellRequest(v, nodes, c))
    return out


def span_key(p: Problem, gpus) -> int:
    """Index of the innermost level whose node holds all of ``gpus``."""
    best = -1
    for i, lv in enumerate(p.levels):
        dom = p.domain.get(lv)
        if dom is None or lv == "gpu":
            continue
        if len({int(dom[g]) for g in gpus}) == 1:
            best = i
    return best


def server_plan(p: Problem, eng: Engine, s: int, counts, jobs_on, busy, optional, fixed, cover,
                reserve: int, vcache: dict, size: dict, deadline, units: dict | None = None):
    """The exact placement inside server s (module notes); ``reserve`` GPUs
    stay free for shared jobs and spread units, ``units[v]`` of them inside
    tenant v's cells, and for jobs with more than `MAX_SETS` GPU sets
    (the engine places them afterwards).  Returns ``([(node, tenant)], {job:
    GPUs}, {kept optional jobs})`` or None (infeasible or out of time)."""
    cm = cell_placement_model(eng.tree, server_requests(eng, s, counts), cover, fixed,
                              name=f"server-{s}")
    if cm is None:
        return None
    m, own = cm.model, cm.own
    jobs = p.jobs
    free = [g for g in eng.gpus_of(s) if g not in busy]
    units = units or {}
    room: dict[str, dict[int, float]] = {v: defaultdict(float) for v in units if units[v]}
    for v in room:
        for g in free:
            for c in own.get((g, v), []):
                room[v][c] += 1
    keep = {r: m.add_var(0, 1, integer=True, obj=round(w * SCALE))
            for r, (_, w) in optional.items()}
    total: dict[int, float] = {keep[r]: len(gs) for r, (gs, _) in optional.items()}
    use: dict[int, list[int]] = defaultdict(list)
    for r, (gs, _) in optional.items():
        for g in gs:
            use[g].append(keep[r])
    z, rescuers = {}, defaultdict(list)
    for j in jobs_on:
        k = size.get(j, jobs[j].gpus)
        if k > len(free):
            continue
        sets = _gpu_sets(p, eng, j, k, free, own, fixed)
        if sets is None:
            reserve += k        # too many GPU sets to list: the engine places it after
            continue
        cols = []
        for S in sets:
            key = (j, k, span_key(p, S))
            if key not in vcache:
                vcache[key] = job_value(p, j, p.make_assign(j, S, 0))
            b = z[(j, S)] = m.add_var(0, 1, integer=True, obj=round(vcache[key] * SCALE) + 1)
            cols.append(b)
            total[b] = k
            if jobs[j].guaranteed and jobs[j].tenant in room:
                room[jobs[j].tenant][b] = -k
            for g in S:
                use[g].append(b)
                tv = jobs[j].tenant if jobs[j].guaranteed else None
                if tv is not None and g not in fixed:
                    row = {c: -1 for c in own[(g, tv)]}
                    row[b] = 1
                    m.add_row(row, hi=0)
        if len(cols) > 1:
            m.add_row({c: 1 for c in cols}, hi=1)
        for r in optional:
            if p.outranks(j, r):
                rescuers[r].extend(cols)
    for g, cols in use.items():
        if len(cols) > 1:
            m.add_row({c: 1 for c in cols}, hi=1)
    for r, kr in keep.items():
        row = {c: 1 for c in rescuers.get(r, [])}
        row[kr] = 1
        m.add_row(row, lo=1)
    if reserve and total:
        m.add_row(total, hi=len(free) - reserve)
    for v, vrow in room.items():
        # v's spread units need free GPUs of v's cells that v's jobs leave
        m.add_row(dict(vrow), lo=units[v] - sum(1 for g in free if fixed.get(g) == v))
    res = solve(m, feasibility_engine(), deadline=deadline)
    x = res.x
    if x is None:               # no solution
        return None
    cells = sorted((n, v) for (v, n), c in cm.y.items() if x[c] > 0.5)
    placed = {j: list(S) for (j, S), c in z.items() if x[c] > 0.5}
    return cells, placed, {r for r, c in keep.items() if x[c] > 0.5}


def _gpu_sets(p: Problem, eng: Engine, j: int, k: int, free, own, fixed):
    """GPU sets of size k among ``free`` allowed for job j (locality, and a
    guaranteed job's tenant may own every GPU), or None when too many."""
    job = p.jobs[j]
    n_sets = 1
    for i in range(k):
        n_sets = n_sets * (len(free) - i) // (i + 1)
    if n_sets > MAX_SETS:
        return None
    loc = job.locality
    dom = p.domain.get(loc) if loc not in (None, "server") and not is_outer(loc) else None
    v = job.tenant if job.guaranteed else None
    out = []
    for S in combinations(free, k):
        if dom is not None and len({int(dom[g]) for g in S}) != 1:
            continue
        if v is not None and any(fixed.get(g, v) != v or (g not in fixed and not own.get((g, v)))
                                 for g in S):
            continue
        out.append(S)
    return out


def place_kept(p: Problem, eng: Engine, kept) -> list[int]:
    """Put kept running jobs back where they run (guaranteed first); returns
    those whose GPUs are no longer free."""
    homeless = []
    for r in sorted(kept, key=lambda r: (not p.jobs[r].guaranteed, r)):
        a = running_assign(p, r)
        if fits_at(eng, a, r):
            eng.place(r, a)
        else:
            homeless.append(r)
    return homeless


def _kept_layout(p: Problem, kept):
    """GPUs of kept jobs that stay put (``busy[s]``), kept opportunistic
    one-server jobs that may give way (``optional[s][r] = (GPUs, value)``) and
    the tenant each kept guaranteed job's GPUs must belong to (``cover``);
    None when two tenants' kept jobs share a GPU."""
    busy: dict[int, set[int]] = defaultdict(set)
    optional: dict[int, dict[int, tuple[list[int], float]]] = defaultdict(dict)
    cover: dict[int, str] = {}
    for r in kept:
        a = running_assign(p, r)
        srv = {int(p.gpu_server[g]) for g, _ in a.gpus}
        if not p.jobs[r].guaranteed and len(srv) == 1:
            optional[srv.pop()][r] = ([g for g, _ in a.gpus], p.value_of(r, a))
            continue
        for g, _ in a.gpus:
            busy[int(p.gpu_server[g])].add(g)
            if p.jobs[r].guaranteed:
                v = p.jobs[r].tenant
                assert v is not None, "a guaranteed job has a tenant"
                if cover.get(g, v) != v:
                    return None
                cover[g] = v
    return busy, optional, cover


def decode_exact(tm: TenancyModel, xv, deadline):
    """Server-by-server exact decode (module notes); returns (engine, misses)
    or None when some server's counts cannot be realised around the kept
    jobs or the deadline passes."""
    p = tm.p
    jobs = p.jobs
    plan = Plan(tm, xv)
    eng = LossAwareEngine(p)
    tree = eng.tree
    rack_owner: dict[int, str] = {}
    for n, v in plan.racks:
        eng.bind(n, v)
        rack_owner.update((g, v) for g in tree.gpus[n])
    layout = _kept_layout(p, plan.kept)
    if layout is None:
        return None
    busy, optional, cover = layout
    units: dict[int, dict] = defaultdict(lambda: defaultdict(int))   # s -> tenant -> units
    for (key, s), col in tm.units.items():
        units[s][key[0]] += _val(xv, col)
    vcache: dict = {}
    chosen: dict = {}
    later: list[tuple[int, set[int]]] = []
    stay = set(plan.kept)
    for s in sorted(set(plan.on) | set(plan.counts) | set(busy) | set(optional) | set(units)):
        if deadline.expired():
            return None
        on = plan.on.get(s, ())
        whole = [j for j in on if plan.size.get(j, jobs[j].gpus) and jobs[j].gpu_milli >= MILLI]
        milli = sum(jobs[j].gpu_milli * plan.size.get(j, jobs[j].gpus) for j in on
                    if jobs[j].gpus and jobs[j].gpu_milli < MILLI)
        on_s = units.get(s, {})
        r = server_plan(p, eng, s, plan.counts.get(s, {}), whole, busy[s], optional.get(s, {}),
                        {g: v for g, v in rack_owner.items() if int(p.gpu_server[g]) == s},
                        {g: v for g, v in cover.items() if int(p.gpu_server[g]) == s},
                        -(-milli // MILLI) + sum(on_s.values()), vcache, plan.size,
                        deadline.within(1.0), {v: c for v, c in on_s.items() if v is not None})
        if r is None:
            return None
        for n, v in r[0]:
            eng.bind(n, v)
        chosen.update(r[1])
        stay -= set(optional.get(s, {})) - r[2]
        later.extend((j, {s}) for j in on if j not in r[1])
    homeless = place_kept(p, eng, stay)
    missed = []
    for j, gs in sorted(chosen.items()):
        a = p.make_assign(j, gs, 0)
        if fits_at(eng, a, j):
            eng.place(j, a)
        else:
            missed.append(j)
    missed += _place_on(eng, later + carve_spread(eng, plan), plan.size)
    for j in missed + homeless:
        eng.try_place(j, plan.size.get(j, jobs[j].gpus), 0, set())
    fill_rest(eng)
    return eng, len(missed)


def _place_on(eng: Engine, queue, size: dict) -> list[int]:
    """Place each (job, servers) of ``queue`` on those servers (tightest jobs
    first); returns the jobs that did not fit there."""
    jobs = eng.p.jobs
    tight = {"switch": 0, "socket": 1, "server": 2}
    queue = sorted(queue, key=lambda js: (not jobs[js[0]].guaranteed, -jobs[js[0]].priority,
                                          tight.get(jobs[js[0]].locality or "", 3),
                                          -jobs[js[0]].gpus, js[0]))
    missed = []
    for j, srv in queue:
        ok = False
        if srv:
            eng.only_servers = set(srv)
            ok = eng.try_place(j, size.get(j, jobs[j].gpus), 0, set())
            eng.only_servers = None
        if not ok:
            missed.append(j)
    return missed


def carve_spread(eng: Engine, plan: Plan) -> list[tuple[int, set]]:
    """Place the plan's spread jobs on their pools' units: each job takes n
    units from the servers with the most units left (fewest servers), on
    free GPUs there (its tenant's for a guaranteed job, unbound ones first
    otherwise).  Returns the (job, servers) pairs it could not place."""
    p = eng.p
    jobs = p.jobs
    left = {key: dict(u) for key, u in plan.units.items()}
    out = []
    order = sorted(plan.spread, key=lambda js: (not jobs[js[0]].guaranteed,
                                                -jobs[js[0]].priority, js[0]))
    for j, srv in order:
        pool = plan.pool.get(j)
        units = left.get(pool, {}) if pool is not None else {}
        n = plan.size.get(j, len(running_assign(p, j).gpus) if jobs[j].current else jobs[j].gpus)
        tenant = jobs[j].tenant
        vi = (eng.tid.get(tenant, -2) if tenant is not None else -2) if jobs[j].guaranteed else None
        gpus: list[int] = []
        take: dict[int, int] = {}
        for s in sorted(units, key=lambda s: (-units[s], s)):
            if len(gpus) == n:
                break
            free = [g for g in eng.gpus_of(s) if eng.gfree[g] >= MILLI and eng.type_mask(j)[g]
                    and (vi is None or eng.owner[g] == vi)]
            free.sort(key=lambda g: (eng.owner[g] >= 0, g))
            k = min(units[s], n - len(gpus), len(free))
            gpus += free[:k]
            take[s] = k
        a = p.make_assign(j, gpus, 0) if len(gpus) == n else None
        if a is None or not fits_at(eng, a, j):
            out.append((j, srv))
            continue
        eng.place(j, a)
        for s, k in take.items():
            units[s] -= k
    return out


def fill_rest(eng: Engine) -> None:
    """Every other pending job that still fits, without victims (guaranteed
    first, then by value)."""
    p = eng.p
    jobs = p.jobs
    rest = [j for j in p.pending if j not in eng.assign]
    for j in sorted(rest, key=lambda j: (not jobs[j].guaranteed, -p.upper_coef(j), j)):
        eng.try_place(j, jobs[j].gpus, 0, set())


def physical_cells(tm: TenancyModel, plan: Plan, eng: Engine, deadline):
    """Physical cells realising every count of ``plan`` (the cell-placing
    model over all servers, covering the kept guaranteed jobs, fewest busy
    GPUs), as [(node, tenant)], or None."""
    p, tree = tm.p, tm.tree
    cover: dict[int, str] = {}
    busy: set[int] = set()
    for r in plan.kept:
        for g, _ in running_assign(p, r).gpus:
            busy.add(g)
            if p.jobs[r].guaranteed:
                v = p.jobs[r].tenant
                assert v is not None, "a guaranteed job has a tenant"
                cover[g] = v
    reqs = [CellRequest(v, (n,), 1) for n, v in plan.racks]
    for s, counts in sorted(plan.counts.items()):
        reqs += server_requests(eng, s, counts)
    cm = cell_placement_model(tree, reqs, cover, name="physical-cells")
    if cm is None:
        return None
    for (v, n), col in cm.y.items():
        cm.model.obj[col] = -float(sum(1 for g in tree.gpus[n] if g in busy))
    res = solve(cm.model, feasibility_engine(), deadline=deadline)
    x = res.x
    if x is None:               # no solution
        return None
    return sorted((n, v) for (v, n), col in cm.y.items() if x[col] > 0.5)


def bind_counts(tm: TenancyModel, plan: Plan, eng: Engine) -> None:
    """Bind the cells the plan counts (rack cells by node, others per server),
    outer levels first; inside a server next to the tenant's bound cells and
    over free GPUs first."""
    tree = eng.tree
    want = [(tree.level[n], n, v, 1) for n, v in plan.racks]
    want += [(lvl, s, v, c) for s, counts in plan.counts.items() for (v, lvl), c in counts.items()]
    for lvl, where, v, c in sorted(want, key=lambda w: (w[0], w[1], w[2])):
        if lvl in tm.outer_lvls:
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
                return (sum(1 for g in tree.gpus[n] if eng.gfree[g] < MILLI), -sib, n)
            eng.bind(min(ok, key=near), v)


def decode_replay(tm: TenancyModel, xv, mode: str, deadline):
    """Replay decode (module notes) with ``mode`` ``"cells"`` or ``"buddy"``;
    returns (engine, misses)."""
    p = tm.p
    jobs = p.jobs
    plan = Plan(tm, xv)
    eng = LossAwareEngine(p)
    cells = physical_cells(tm, plan, eng, deadline) if mode == "cells" else None
    if cells is not None:
        for n, v in cells:
            eng.bind(n, v)
        homeless = place_kept(p, eng, plan.kept)
    else:
        homeless = restore_running(eng, plan.kept, deadline)
        if mode == "cells":
            bind_counts(tm, plan, eng)
    queue = [(j, {s}) for s, js in plan.on.items() for j in js]
    missed = _place_on(eng, queue, plan.size)
    queue = carve_spread(eng, plan) + [(r, set()) for r in homeless]
    missed += _place_on(eng, queue, plan.size)
    # a job that did not fit its model server goes anywhere, once every other
    # job had its own server (so it takes no planned room)
    for j in missed:
        eng.try_place(j, plan.size.get(j, jobs[j].gpus), 0, set())
    if mode == "buddy":
        _release_empty(eng)
    fill_rest(eng)
    return eng, len(missed)


def polish(eng: Engine, deadline) -> int:
    """Re-place each new multi-GPU job whose span factor its server could
    better (anywhere the engine finds room, without victims), keeping a move
    only when the job's real value rises and sharing safety holds; returns
    the number of jobs re-placed."""
    p = eng.p
    jobs = p.jobs
    done = 0
    for j in sorted(eng.assign, key=lambda j: (-len(eng.assign[j].gpus), j)):
        if deadline.expired():
            break
        a = eng.assign[j]
        if jobs[j].current is not None or len(a.gpus) < 2 or jobs[j].gpu_milli < MILLI:
            continue
        before = p.value_of(j, a)
        srv = {s for s, _ in a.cpu}
        if len(srv) == 1 and before >= value_on(p, j, next(iter(srv)), len(a.gpus)) - 1e-12:
            continue                      # already at its best span there
        mark = eng.checkpoint()
        eng.remove(j)
        if eng.try_place(j, len(a.gpus), 0, set()) and \
                p.value_of(j, eng.assign[j]) > before + 1e-9 and eng.safe():
            eng.keep(mark)
            done += 1
        else:
            eng.rollback(mark)
    return done


def victims_ok(p: Problem, eng: Engine, running) -> bool:
    """Every running job left out is outranked by a job placed afresh on a
    server it held (the core's one victim rule, `Problem.stopped_for`)."""
    jobs = p.jobs
    fresh = [i for i, a in eng.assign.items() if jobs[i].current is None
             or not a.same_as(current_assign(p, i))]
    return all(p.stopped_for(r, eng.assign, fresh) for r in running if r not in eng.assign)


def binding_ok(p: Problem, eng: Engine) -> bool:
    """The engine's binding proves the tenancy invariant (cells, safety)."""
    used: dict[str, set] = defaultdict(set)
    for j, a in eng.assign.items():
        job = p.jobs[j]
        if job.guaranteed and job.tenant is not None:
            used[job.tenant].update(g for g, _ in a.gpus)
    return not check_binding(p.cluster, {v: sorted(ns) for v, ns in eng.bound.items()}, used)
