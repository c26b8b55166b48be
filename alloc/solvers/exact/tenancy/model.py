r"""The tenancy model: allocation under HiveD tenancy as one
[`alloc.kernel.LinearModel`][alloc.kernel.model.LinearModel] (every constraint linear, every
variable
integer), built step by step by `build_model`.

Sets: servers s (GPUs G_s, CPU C_s, memory M_s, type t_s); *entries* k of
identical pending jobs (same shape, tenant, priority, weight, profile; n_k
members) -- an elastic job has one entry per size it may take (every size in
[min_gpus, max_gpus], sharing the group's members); running jobs r one by one;
tenants v with c[v,t,l] cells of size z[t,l]
([`alloc.tenancy.cell_size`][alloc.tenancy.cell_size]).

Variables (all integer):

    x[k,s] in 0..n_k     jobs of entry k placed whole on server s
    y[k,d] in 0..n_k     jobs of entry k spread over servers of domain d
                         (whole GPUs, >= 2, no locality or one above the
                         servers; d = the cluster, or one of its domains)
    U[P,s] in 0..G_s     GPUs of unit pool P on server s
    keep[r] in {0,1}     running job r stays exactly where it runs
    mv[r,s], ms[r,d]     running job r is re-placed on server s (its own
                         too) / spread over d (only when the call allows moves)
    Y[k], e[k,s]         an even spread's jobs placed and their parts on s
                         (`add_even`); M[r], m[r,s] a running one moved
                         (`add_even_move`)
    pre[r] = 1 - keep[r] - sum mv - sum ms - M[r]   (stopped)
    b[v,l,s] in 0..N_sl  v's level-l cells inside server s (counts);
    R[v,q] in {0,1}      v's cell at a level above the servers bound to
                         domain q (a rack, a block, ...)
    h[s], hv[v,s]        GPUs of s given to shared (milli < 1000) jobs,
                         all / v's guaranteed ones

A unit pool P = (tenant of a guaranteed job or none, CPU and memory per GPU
rounded up, allowed GPU types, domain) collects the GPUs of spread jobs:
sum_s U[P,s] = sum_{k in P} n_k y[k,d] (units are interchangeable, so a
spread job is decoded by carving runs out of its pool's units).

Constraints (usage u of a job on s: whole GPUs, shared milli, CPU, memory):

    whole GPUs on s (jobs, units) + h[s] <= G_s;  1000 h[s] >= shared milli on s
    CPU and memory on s <= C_s, M_s               (units: per GPU, rounded up)
    sum_s x[k,s] + sum_d y[k,d] <= n_k            (per group, over its sizes)
    sum_s b[v,l,s] + sum_q R[v,q] = c[v,t,l]      (every cell bound, WLOG)
    g[v,s] = sum_l z_l b[v,l,s] + G_s sum_{q ∋ s} R[v,q];   sum_v g[v,s] <= G_s
    v's guaranteed whole GPUs on s + hv[v,s] + (kept jobs inside v's cells) <= g[v,s]
    pre[r] <= sum of fresh placements, on servers r holds, of jobs that
              outrank r                                      (legal victims)
    sum mv + sum ms <= max_moves

plus the cover of kept guaranteed jobs by cell positions, the fragmentation of
switch / socket nodes by node-filling jobs and, without tenants, an order on
identical idle servers (see the step functions).  Sub-server packing is
relaxed to counts, so the model relaxes the instance except where
`restrictions` says otherwise.

Objective (scaled to integers by `SCALE`):

    sum v[k,s] x[k,s] + sum v^sp[k,d] y[k,d] + sum v_r keep[r]
      + sum (v[r,s] - c_mv) mv[r,s] + sum (v^sp - c_mv) ms[r,d] - c_pre sum pre[r]

with v[k,s] = weight * base * speed(t_s) * span(innermost level of s that
holds the job) (the objective's coefficient) and v^sp the best speed among
the domain's types times the best span factor across servers (a level above
the servers it may span, or the cluster).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from ....arrays import outer_levels
from ....model import CLUSTER, MILLI
from ....topology import climb, is_outer, preferred_weight, reachable_levels
from ....deadline import Deadline
from ....kernel import LinearModel
from ....objectives import job_sizes, scale_factor
from ....problem import Problem
from ....tenancy import cell_size, cell_tree, outranks, quotas
from . import RESTRICTIONS
from ....engines.cells.engine import current_assign, running_assign

#: objective coefficients are ``round(value * SCALE)``
SCALE = 10 ** 7
SPAN_LEVELS = ("switch", "socket", "server")


class OutOfTime(Exception):
    """The deadline passed while the model was being built."""


# ------------------------------------------------------------------ groups
def signature(job) -> tuple:
    """What makes two pending jobs interchangeable in the model."""
    return (job.gpus, job.gpu_milli, job.cpu, job.mem, job.gpu_types, job.locality,
            id(job.profile) if job.profile is not None else None, job.model, job.tenant,
            job.guaranteed, job.priority, job.weight, job.gpu_mem, job.min_gpus, job.max_gpus,
            job.gpus_per_server)


@dataclass(frozen=True)
class Groups:
    """Entries of the model: ``members[k]`` (job indices), ``size[k]`` (GPUs)
    and ``group[k]`` (entries of one group share its members)."""
    members: tuple[tuple[int, ...], ...]
    size: tuple[int, ...]
    group: tuple[int, ...]

    @property
    def K(self) -> int:
        """Number of entries (one per group and size)."""
        return len(self.size)


def group_jobs(jobs, pending) -> Groups:
    """Group identical pending jobs; one entry per (group, size)."""
    by_sig: dict[tuple, list[int]] = defaultdict(list)
    for j in pending:
        by_sig[signature(jobs[j])].append(j)
    members, size, group = [], [], []
    for g, ms in enumerate(by_sig.values()):
        for n in job_sizes(jobs[ms[0]]):
            members.append(tuple(ms))
            size.append(n)
            group.append(g)
    return Groups(tuple(members), tuple(size), tuple(group))


# ------------------------------------------------------------------ values
def best_span(p: Problem, j: int, s: int, n: int) -> float:
    """Largest span factor job j can get on server s with n GPUs: the best
    factor of a declared level (switch, socket, server) whose node on s holds
    them (1.0 for one GPU, no profile or an objective without span)."""
    prof = p.jobs[j].profile
    if prof is None or n < 2 or "span" not in p.objective.factors:
        return 1.0
    sv = p.cluster.servers[s]
    sizes = {"server": sv.gpus, "socket": sv.gpus // max(1, sv.sockets),
             "switch": sv.gpus // max(1, sv.sockets) // max(1, sv.switches_per_socket)}
    cands = [prof.span_factor(lv) for lv in SPAN_LEVELS if lv in p.levels and sizes[lv] >= n]
    return max(cands) if cands else prof.span_factor("server")


def value_on(p: Problem, j: int, s: int, n: int, span: float | None = None,
             option: int = 0) -> float:
    """Upper bound on job j's value on server s with n GPUs at one of its
    options (default the request; best span there, or ``span``):
    weight * grid(cpu / n, mem / n) * speed(t_s) * span * scale(n)."""
    job = p.jobs[j]
    sp = best_span(p, j, s, n) if span is None else span
    if n == job.gpus:
        return p.coef(j, option, s, span=sp)
    if "grid" not in p.objective.factors:
        return p.objective.coef(job, speed=p.speed(j, s) if n else 1.0, span=sp,
                                scale=scale_factor(job.profile, job, n), gpus=n)
    prof = job.profile
    opt = p.options[j][option]
    base = prof.grid_value(opt.cpu / n, opt.mem / n) if prof is not None and prof.has_grid \
        else 1.0
    return p.objective.coef(job, base, speed=p.speed(j, s), span=sp,
                            scale=scale_factor(prof, job, n), gpus=n)


def spread_span(p: Problem, j: int) -> float:
    """Best span factor of job j over several servers: a level above the
    servers it may span (its locality level or inside it) or the whole
    cluster."""
    prof = p.jobs[j].profile
    if prof is None or "span" not in p.objective.factors:
        return 1.0
    lv = [x for x in reachable_levels(p.cluster, p.jobs[j].locality)
          if is_outer(x) or x == CLUSTER]
    return max((prof.span_factor(x) for x in lv), default=1.0)


def fits_server(p: Problem, j: int, s: int, n: int, cpu: int | None = None,
                mem: int | None = None) -> bool:
    """Job j with n GPUs (its request's CPU and memory, or ``cpu`` and
    ``mem``) fits the empty server s."""
    job = p.jobs[j]
    opt = p.options[j][0]
    cpu = opt.cpu if cpu is None else cpu
    mem = opt.mem if mem is None else mem
    if not p.allowed[j, s] or cpu > p.srv_cpu[s] or mem > p.srv_mem[s]:
        return False
    if n > p.srv_gpus[s] or (job.gpus_per_server or n) < n:
        return False            # an even spread is never on one server alone
    if job.locality in ("switch", "socket"):
        sv = p.cluster.servers[s]
        per = sv.gpus // max(1, sv.sockets)
        if job.locality == "switch":
            per //= max(1, sv.switches_per_socket)
        if n > per:
            return False
    return True


def grid_cells(job) -> list[tuple[int, int, float]]:
    """``(CPU, memory, speed)`` per GPU of every grid point of the job's
    profile with a positive speed (none without a grid or for a CPU-only
    job).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.solvers.exact.tenancy.model import grid_cells
    >>> grid_cells(Job("cpu-only", 0, cpu=1000, mem=1000))
    []
    """
    prof = job.profile
    if prof is None or not prof.has_grid or not job.gpus:
        return []
    return [(c, m, float(prof.tput[a][b])) for a, c in enumerate(prof.cpu_per_gpu)
            for b, m in enumerate(prof.mem_per_gpu) if (prof.tput[a][b] or 0) > 0]


def spreadable(job, n: int) -> bool:
    """A job of n whole GPUs that may span servers any way (an even spread
    only evenly: `add_even`)."""
    return n >= 2 and job.gpu_milli >= MILLI and (job.locality is None or is_outer(job.locality)) \
        and not job.even_servers


# ------------------------------------------------------------------ the model
@dataclass
class Usage:
    """Terms ``(coefficient, column)`` of what jobs use on each server."""
    whole: dict = field(default_factory=lambda: defaultdict(list))    # s -> whole GPUs
    shared: dict = field(default_factory=lambda: defaultdict(list))   # s -> shared milli
    cpu: dict = field(default_factory=lambda: defaultdict(list))
    mem: dict = field(default_factory=lambda: defaultdict(list))
    gwhole: dict = field(default_factory=lambda: defaultdict(list))   # (v, s) -> whole GPUs
    gshared: dict = field(default_factory=lambda: defaultdict(list))  # (v, s) -> milli


class TenancyModel:
    """The model of one problem and its index maps (see the module notes).

    Attributes
    ----------
    m : LinearModel
        The model (phase-2 objective set by `build_model`).
    x, y, units, keep, mv, ms, pre, cells : dict
        Columns: ``x[(k, s)]``, ``y[(k, d)]``, ``units[(pool, s)]``,
        ``keep[r]``, ``mv[(r, s)]``, ``ms[(r, d)]``, ``pre[r]``,
        ``cells[(v, level, where)]`` (``where`` a server, or a rack node).
    obj, work : dict
        Phase-2 objective (scaled integers) and phase-1 terms (guaranteed
        GPUs) by column.
    fresh : dict
        Job -> columns meaning "placed afresh" (new or moved).
    where : dict
        Fresh column -> the servers its placement may use.
    """

    def __init__(self, p: Problem, pcost: float = 0.0, relaxed: bool = False):
        self.p = p
        self.relaxed = relaxed
        jobs = p.jobs
        self.running = [j for j in p.running if current_assign(p, j) is not None]
        run = set(self.running)
        self.pending = [j for j in range(p.J) if j not in run and j not in p.reasons]
        self.groups = group_jobs(jobs, self.pending)
        self.tree = cell_tree(p.cluster)
        self.q = quotas(p.cluster)
        self.tenants = sorted(self.q)
        self.lv = {x: i for i, x in enumerate(p.levels)}
        #: levels above the servers: their cells span servers (R[v,q])
        self.outer_lvls = frozenset(i for x, i in self.lv.items() if is_outer(x))
        self.migrate = p.moves_allowed
        self.mcost = float(p.move_cost or 0.0)
        self.pcost = float(pcost or 0.0)
        self.m = LinearModel("tenancy")
        self.use = Usage()
        self.x: dict = {}
        self.y: dict = {}
        self.units: dict = {}
        self.pool_of: dict = {}          # (k or ("r", r), d) -> pool
        self.pool_rows: dict = {}        # pool -> {column: coefficient} of its balance row
        self.keep: dict = {}
        self.mv: dict = {}
        self.ms: dict = {}
        self.pre: dict = {}
        self.cells: dict = {}
        self.cellg: dict = defaultdict(list)   # (v, s) -> (GPUs per unit, column)
        self.inside: dict = defaultdict(list)  # (v, s) -> (GPUs, column) of kept jobs in v's cells
        self.obj: dict = defaultdict(int)
        self.work: dict = defaultdict(int)
        self.fresh: dict = defaultdict(list)
        self.where: dict = {}            # fresh column -> the servers it may use
        self.units_exact = True
        #: even spreads: entry -> Y (its jobs placed), (entry, s) -> its parts on s;
        #: a running one moved: r -> its move, (r, s) -> its part on s
        self.even: dict = {}
        self.parts: dict = {}
        self.even_moves: dict = {}
        self.move_parts: dict = {}
        self.floor_row: int | None = None
        self.deadline: Deadline | None = None
        #: auxiliary columns that belong to one server (fixed with it in a neighbourhood search)
        self.aux: dict[int, list[int]] = defaultdict(list)
        self._plan_preferred()

    # ---------------------------------------------------------- preferred
    def _plan_preferred(self) -> None:
        """The weight of one level climbed by a job with a preferred level
        (`alloc.topology.preferred_weight`, below the objective's step) and
        the most the model's terms take off in all (``pref_slack``)."""
        p = self.p
        self.pref_w = 0.0
        self.pref_slack = 0.0
        most = []
        for j in self.pending + self.running:
            job = p.jobs[j]
            n = max(job_sizes(job)) if job.gpus else 0
            if job.preferred is None or n < 2:
                continue
            modes = self.modes(j)
            top = modes[-1] if spreadable(job, n) and modes else "server"
            most.append(climb(p.cluster, job.preferred, top))
        if any(most):
            step = p.objective.step(p.cluster, [p.jobs[j] for j in self.pending])
            w = preferred_weight(step, len(most), max(most))
            self.pref_w = max(w, 1.0 / SCALE)
            self.pref_slack = self.pref_w * sum(most)

    def modes(self, j: int) -> list[str]:
        """The levels job j may spread within, innermost first: from its
        preferred level (or the innermost level above the servers) up to its
        locality level or the cluster when it prefers a level; else only its
        locality level (above the servers) or the cluster."""
        p = self.p
        job = p.jobs[j]
        top = job.locality if is_outer(job.locality) else CLUSTER
        if job.preferred is None:
            return [top]
        outer = list(reversed(outer_levels(p.levels)))
        chain = outer[:outer.index(top) + 1] if top in outer else outer + [CLUSTER]
        first = job.preferred if job.preferred in chain else chain[0]
        return chain[chain.index(first):] if chain else [top]

    def penalty(self, j: int, level: str) -> float:
        """What job j loses in the model spanning ``level`` (levels climbed
        above its preferred level, times the weight)."""
        pref = self.p.jobs[j].preferred
        if not self.pref_w or pref is None:
            return 0.0
        return self.pref_w * climb(self.p.cluster, pref, level)

    # ---------------------------------------------------------- helpers
    def tick(self) -> None:
        """Raise `OutOfTime` when the build's deadline has passed."""
        if self.deadline is not None and self.deadline.expired():
            raise OutOfTime("building the model")

    def var(self, ub: float, lb: float = 0.0) -> int:
        """A new integer column with bounds ``[lb, ub]``; returns its index."""
        return self.m.add_var(lb, ub, integer=True)

    def value_of(self, val: float) -> int:
        """An objective value as the model's integer coefficient,
        ``round(val * SCALE)``."""
        return int(round(val * SCALE))

    def p_gpus(self, s: int) -> range:
        """Global indices of server s's GPUs."""
        f = int(self.p.gpu_first[s])
        return range(f, f + int(self.p.srv_gpus[s]))

    def request(self, j: int) -> tuple[int, int]:
        """(CPU, memory) the model reserves for job j: its request or, in the
        relaxed model, the smallest CPU and the smallest memory of any of its
        options (each may come from a different option) -- for an elastic
        job, of any grid point at its smallest size too (a point's CPU and
        memory are per GPU)."""
        opts = self.p.options[j]
        if self.relaxed:
            cells = grid_cells(self.p.jobs[j])
            lo = min(job_sizes(self.p.jobs[j]))
            return (min([o.cpu for o in opts] + [c * lo for c, _, _ in cells]),
                    min([o.mem for o in opts] + [m * lo for _, m, _ in cells]))
        return opts[0].cpu, opts[0].mem

    def fits(self, j: int, s: int, n: int) -> bool:
        """Job j with n GPUs fits the empty server s at what the model reserves."""
        return fits_server(self.p, j, s, n, *self.request(j))

    def value(self, j: int, s: int, n: int, span: float | None = None) -> float:
        """Job j's value on server s with n GPUs: at its request or, in the
        relaxed model, the best of its options -- and, at an elastic size,
        of the grid points at that size (each point's CPU and memory per GPU
        times n)."""
        opts = range(len(self.p.options[j])) if self.relaxed else (0,)
        best = max(value_on(self.p, j, s, n, span, option=o) for o in opts)
        job = self.p.jobs[j]
        if self.relaxed and n != job.gpus and "grid" in self.p.objective.factors:
            cells = grid_cells(job)
            if cells:
                sp = best_span(self.p, j, s, n) if span is None else span
                top = max(v for _, _, v in cells)
                best = max(best, self.p.objective.coef(
                    job, top, speed=self.p.speed(j, s), span=sp,
                    scale=scale_factor(job.profile, job, n), gpus=n))
        return best

    def tenant_types(self, v: str) -> set:
        """GPU types in which tenant v holds at least one cell."""
        return {t for (t, _), c in self.q.get(v, {}).items() if c}

    def guaranteed_ok(self, j: int, s: int) -> bool:
        """A guaranteed job may use server s only where its tenant has cells."""
        job = self.p.jobs[j]
        return not job.guaranteed or job.tenant is not None and \
            self.p.cluster.servers[s].gpu_type in self.tenant_types(job.tenant)

    def add_usage(self, j: int, s: int, n: int, col: int, coef: int = 1,
                  cpu: int | None = None, mem: int | None = None) -> None:
        """Usage of job j with n GPUs on server s when ``col`` is 1 (``coef``
        copies); CPU and memory default to its request."""
        rc, rm = self.request(j)
        if n:
            self.add_gpus(j, s, n * coef, col)
        self.use.cpu[s].append(((rc if cpu is None else cpu) * coef, col))
        self.use.mem[s].append(((rm if mem is None else mem) * coef, col))

    def add_gpus(self, j: int, s: int, n: int, col: int) -> None:
        """GPU usage of job j on server s when ``col`` is 1: n whole GPUs, or
        ``gpu_milli * n`` milli of shared GPUs (``gpu_milli < 1000``), also
        counted against its tenant when the job is guaranteed."""
        job = self.p.jobs[j]
        if job.gpu_milli >= MILLI:
            self.use.whole[s].append((n, col))
            if job.guaranteed:
                self.use.gwhole[(job.tenant, s)].append((n, col))
        else:
            self.use.shared[s].append((job.gpu_milli * n, col))
            if job.guaranteed:
                self.use.gshared[(job.tenant, s)].append((job.gpu_milli * n, col))

    def domains(self, j: int) -> dict:
        """Spread domains of job j: ``{None: servers}`` (the cluster), one per
        domain of its locality level when that is above the servers (keyed by
        domain id), and, for a job that prefers a level, one per domain of
        each level it may climb to (keyed ``(level, domain id)``; `modes`)."""
        p = self.p
        srv = [s for s in range(p.S) if p.srv_gpus[s] and p.allowed[j, s]
               and self.guaranteed_ok(j, s)]
        loc = p.jobs[j].locality
        modes = self.modes(j)
        out: dict = defaultdict(list)
        for lv in modes:
            if lv == CLUSTER:
                out[None] = srv
                continue
            dom = p.arrays.srv_domain[lv]
            for s in srv:
                out[int(dom[s]) if lv == loc or len(modes) == 1 else (lv, int(dom[s]))].append(s)
        return dict(out)

    def domain_level(self, j: int, d) -> str:
        """The level of job j's spread domain ``d`` (a key of `domains`)."""
        if d is None:
            return CLUSTER
        if isinstance(d, tuple):
            return d[0]
        return self.p.jobs[j].locality or CLUSTER

    def spread_key(self, j: int, servers) -> object:
        """The key of the innermost of job j's spread domains holding ``servers``."""
        p = self.p
        loc = p.jobs[j].locality
        modes = self.modes(j)
        for lv in modes:
            if lv == CLUSTER:
                return None
            ids = {int(p.arrays.srv_domain[lv][s]) for s in servers}
            if len(ids) == 1:
                d = ids.pop()
                return d if lv == loc or len(modes) == 1 else (lv, d)
        return None

    def pool(self, j: int, n: int, d) -> tuple:
        """The unit pool of job j spread on n GPUs over domain d: ``(tenant of
        a guaranteed job or None, ceil(cpu / n) millicores, ceil(mem / n) MiB,
        allowed GPU types, d)`` (rounded down in the relaxed model)."""
        job = self.p.jobs[j]
        cpu, mem = self.request(j)
        if self.relaxed:
            return (job.tenant if job.guaranteed else None, cpu // n, mem // n,
                    tuple(job.gpu_types), d)
        return (job.tenant if job.guaranteed else None, -(-cpu // n), -(-mem // n),
                tuple(job.gpu_types), d)

    def add_spread(self, j: int, n: int, d, servers, col: int, coef: int = 1) -> None:
        """``col`` jobs of n GPUs spread over ``servers`` draw n units each from their pool."""
        key = self.pool(j, n, d)
        cpu, mem = self.request(j)
        if key[1] * n != cpu or key[2] * n != mem:
            self.units_exact = False
        row = self.pool_rows.get(key)
        if row is None:
            row = self.pool_rows[key] = {}
            for s in servers:
                u = self.units[(key, s)] = self.var(int(self.p.srv_gpus[s]))
                row[u] = 1
                self.add_gpus(j, s, 1, u)
                self.use.cpu[s].append((key[1], u))
                self.use.mem[s].append((key[2], u))
        row[col] = row.get(col, 0) - n * coef


def build_model(p: Problem, pcost: float, deadline: Deadline,
                relaxed: bool = False) -> TenancyModel:
    """The tenancy model of ``p`` (module notes), step by step; raises
    `OutOfTime` when ``deadline`` passes.  ``relaxed``: every job
    reserves the smallest CPU and memory of its options, is worth the best
    of them, and a spread job's units round down -- a relaxation of the
    instance (its LP bounds the instance) that is never decoded."""
    tm = TenancyModel(p, pcost, relaxed)
    tm.deadline = deadline
    steps = (add_pending, add_running, add_victims, add_cells, add_cover, add_fragmentation,
             add_positions, add_capacity, add_symmetry, add_objective)
    for step in steps:
        if deadline is not None and deadline.expired():
            raise OutOfTime(step.__name__)
        step(tm)
    return tm


# ------------------------------------------------------------------ steps
def add_pending(tm: TenancyModel) -> None:
    """x[k,s] and y[k,d] for every entry, their usage and value; the member
    rows sum_s x + sum_d y <= n_k per group."""
    p, G = tm.p, tm.groups
    jobs = p.jobs
    by_group: dict[int, dict] = defaultdict(dict)
    n_members = {G.group[k]: len(G.members[k]) for k in range(G.K)}
    for k in range(G.K):
        tm.tick()
        j0, n, members = G.members[k][0], G.size[k], G.members[k]
        job = jobs[j0]
        if job.guaranteed and job.tenant not in tm.q:
            continue
        coef = {}                        # server class -> coefficient (None: does not fit)
        for s in range(p.S):
            c = int(p.server_class[s])
            if c not in coef:
                cpu, mem = tm.request(j0)
                if n == 0:
                    ok = cpu <= p.srv_cpu[s] and mem <= p.srv_mem[s]
                else:
                    ok = tm.fits(j0, s, n) and tm.guaranteed_ok(j0, s)
                coef[c] = tm.value_of(tm.value(j0, s, n) - (tm.penalty(j0, "server")
                                                            if n >= 2 else 0.0)) if ok else None
            if coef[c] is None:
                continue
            col = tm.x[(k, s)] = tm.var(len(members))
            tm.add_usage(j0, s, n, col)
            tm.obj[col] += coef[c]
            by_group[G.group[k]][col] = 1
            tm.where[col] = (s,)
            for j in members:
                tm.fresh[j].append(col)
        if job.even_servers and n == job.gpus:
            add_even(tm, k, by_group[G.group[k]])
        if not spreadable(job, n):
            continue
        for d, srv in tm.domains(j0).items():
            if sum(int(p.srv_gpus[s]) for s in srv) < n or len(srv) < 2:
                continue
            col = tm.y[(k, d)] = tm.var(len(members))
            tm.add_spread(j0, n, d, srv, col)
            best = max(srv, key=lambda s: (p.speed(j0, s), -s))
            tm.obj[col] += tm.value_of(tm.value(j0, best, n, span=spread_span(p, j0))
                                       - tm.penalty(j0, tm.domain_level(j0, d)))
            by_group[G.group[k]][col] = 1
            tm.where[col] = tuple(srv)
            for j in members:
                tm.fresh[j].append(col)
    for g, cols in by_group.items():
        if len(cols) > 1:
            tm.m.add_row(cols, hi=n_members[g])


def add_even(tm: TenancyModel, k: int, group_cols: dict) -> None:
    r"""The even spread of entry k (``gpus_per_server`` = q GPUs on each of
    P = ``gpus / q`` distinct servers): Y[k] in 0..n_k jobs placed and
    e[k,s] in 0..min(n_k, floor(G_s / q)) of their parts on server s, over
    the servers that can hold a part (q GPUs, an allowed type,
    $\lceil c / P \rceil$ CPU and $\lceil m / P \rceil$ memory; rounded down
    in the relaxed model):

        sum_s e[k,s] = P Y[k],    e[k,s] <= Y[k]

    A part uses q whole GPUs and its CPU and memory share on s.  The rows are
    exact: any e with these sums splits into Y[k] jobs of P parts on distinct
    servers (lay the parts out server by server and deal them round-robin to
    the jobs: a server has at most Y[k] parts, so no job gets two), which is
    how `alloc.solvers.exact.tenancy.decode` reads them.  The value of
    Y[k] is the job's best over the servers' types with the best span
    across servers (an upper bound; the decode recomputes it)."""
    p, G = tm.p, tm.groups
    j0, members = G.members[k][0], G.members[k]
    job = p.jobs[j0]
    parts = job.even_servers
    pc, pm, q, srv = even_part(tm, j0)
    if len(srv) < parts:
        return
    y = tm.even[k] = tm.var(len(members))
    balance = {y: -parts}
    for s in srv:
        e = tm.parts[(k, s)] = tm.var(min(len(members), int(p.srv_gpus[s]) // q))
        tm.aux[s].append(e)
        tm.add_gpus(j0, s, q, e)
        tm.use.cpu[s].append((pc, e))
        tm.use.mem[s].append((pm, e))
        tm.m.add_row({e: 1, y: -1}, hi=0)
        balance[e] = 1
    tm.m.add_row(balance, 0, 0)
    best = max(srv, key=lambda s: (p.speed(j0, s), -s))
    tm.obj[y] += tm.value_of(tm.value(j0, best, job.gpus, span=spread_span(p, j0)))
    group_cols[y] = 1
    tm.where[y] = tuple(srv)
    for j in members:
        tm.fresh[j].append(y)


def even_part(tm: TenancyModel, j: int) -> tuple[int, int, int, list[int]]:
    """(GPUs, CPU, memory) of one part of job j's even spread -- CPU and
    memory its share rounded up (down in the relaxed model; not exact when
    they do not divide) -- and the servers that can hold a part."""
    p = tm.p
    job = p.jobs[j]
    q, parts = job.gpus_per_server or job.gpus, job.even_servers
    cpu, mem = tm.request(j)
    if tm.relaxed:
        pc, pm = cpu // parts, mem // parts
    else:
        pc, pm = -(-cpu // parts), -(-mem // parts)
        if pc * parts != cpu or pm * parts != mem:
            tm.units_exact = False
    srv = [s for s in range(p.S) if p.srv_gpus[s] >= q and p.allowed[j, s]
           and pc <= p.srv_cpu[s] and pm <= p.srv_mem[s]]
    return pc, pm, q, srv


def add_even_move(tm: TenancyModel, r: int, row: dict) -> None:
    """A running even spread r re-placed (a move, when the call allows one):
    M[r] in {0,1} and its parts m[r,s] in {0,1} with sum_s m[r,s] = P M[r]
    (one part a server by construction), worth its value less the move cost;
    M[r] joins r's row keep + moves + pre = 1."""
    p = tm.p
    pc, pm, q, srv = even_part(tm, r)
    parts = p.jobs[r].even_servers
    if len(srv) < parts:
        return
    y = tm.even_moves[r] = tm.var(1)
    balance = {y: -parts}
    for s in srv:
        e = tm.move_parts[(r, s)] = tm.var(1)
        tm.aux[s].append(e)
        tm.add_gpus(r, s, q, e)
        tm.use.cpu[s].append((pc, e))
        tm.use.mem[s].append((pm, e))
        balance[e] = 1
    tm.m.add_row(balance, 0, 0)
    best = max(srv, key=lambda s: (p.speed(r, s), -s))
    tm.obj[y] += tm.value_of(tm.value(r, best, p.jobs[r].gpus, span=spread_span(p, r))
                             - tm.mcost)
    tm.fresh[r].append(y)
    tm.where[y] = tuple(srv)
    row[y] = 1


def add_running(tm: TenancyModel) -> None:
    """keep[r], the moves mv[r,s] / ms[r,d] (when allowed, and not for a job
    the core pinned) and pre[r] (0 for a job the core pinned): keep + sum mv
    + sum ms + pre = 1; a running elastic job keeps its size."""
    p = tm.p
    for r in tm.running:
        tm.tick()
        a = running_assign(p, r)
        job = p.jobs[r]
        k = tm.keep[r] = tm.var(1)
        per_srv: dict[int, int] = defaultdict(int)
        for g, _ in a.gpus:
            per_srv[int(p.gpu_server[g])] += 1
        for s, c in a.cpu:
            tm.use.cpu[s].append((c, k))
        for s, c in a.mem:
            tm.use.mem[s].append((c, k))
        for s, n in per_srv.items():
            tm.add_gpus(r, s, n, k)
        tm.obj[k] += tm.value_of(p.value_of(r, a))
        row = {k: 1}
        n_r = len(a.gpus)
        if tm.migrate and r not in p.pinned:
            # a move may also re-place the job on a server it runs on (other GPUs)
            for s in range(p.S):
                if not tm.fits(r, s, n_r) or not tm.guaranteed_ok(r, s):
                    continue
                col = tm.mv[(r, s)] = tm.var(1)
                tm.add_usage(r, s, n_r, col)
                tm.obj[col] += tm.value_of(tm.value(r, s, n_r) - tm.mcost)
                tm.fresh[r].append(col)
                tm.where[col] = (s,)
                row[col] = 1
            if spreadable(job, n_r):
                for d, srv in tm.domains(r).items():
                    if len(srv) < 2 or sum(int(p.srv_gpus[s]) for s in srv) < n_r:
                        continue
                    col = tm.ms[(r, d)] = tm.var(1)
                    tm.add_spread(r, n_r, d, srv, col)
                    best = max(srv, key=lambda s: (p.speed(r, s), -s))
                    tm.obj[col] += tm.value_of(
                        tm.value(r, best, n_r, span=spread_span(p, r)) - tm.mcost
                        - tm.penalty(r, tm.domain_level(r, d)))
                    tm.fresh[r].append(col)
                    tm.where[col] = tuple(srv)
                    row[col] = 1
            if job.even_servers:
                add_even_move(tm, r, row)
        # a job the core pinned is never stopped (nor moved)
        pr = tm.pre[r] = tm.var(0 if r in p.pinned else 1)
        row[pr] = 1
        tm.m.add_row(row, 1, 1)
        if tm.pcost:
            tm.obj[pr] -= tm.value_of(tm.pcost)
    for key, row in tm.pool_rows.items():
        tm.m.add_row(row, 0, 0)
    moves = list(tm.mv.values()) + list(tm.ms.values()) + list(tm.even_moves.values())
    if moves and p.max_moves is not None:
        tm.m.add_row({c: 1 for c in moves}, hi=int(p.max_moves))


def add_victims(tm: TenancyModel) -> None:
    """Legal victims (the core's one rule): pre[r] <= fresh placements of
    jobs that outrank r on servers r holds, summed per rank class
    (guaranteed, tenant, priority) and server in one auxiliary column each,
    so every row stays short.  A spread placement counts on every server of
    its domain (a relaxation the decode checks)."""
    p = tm.p
    jobs = p.jobs
    by_class: dict[tuple, dict] = defaultdict(lambda: defaultdict(dict))
    for i, cols in tm.fresh.items():
        ji = jobs[i]
        key = (ji.guaranteed, ji.tenant if ji.guaranteed else None, ji.priority)
        for c in cols:
            for s in tm.where[c]:
                by_class[key][s][c] = 1
    total: dict[tuple, dict[int, int]] = defaultdict(dict)
    for key, per_srv in by_class.items():
        for s, cols in per_srv.items():
            cs = tm.var(sum(tm.m.ub[c] for c in cols))
            row = dict(cols)
            row[cs] = -1
            tm.m.add_row(row, 0, 0)
            total[key][s] = cs
            tm.aux[s].append(cs)
    for r in tm.running:
        tm.tick()
        jr = jobs[r]
        held = p.servers_of(running_assign(p, r))
        terms: dict[int, float] = defaultdict(float)
        for key, per_srv in total.items():
            probe = replace(jr, guaranteed=key[0], tenant=key[1] if key[0] else None,
                            priority=key[2])
            if not outranks(probe, jr):
                continue
            for s in held & per_srv.keys():
                terms[per_srv[s]] += 1
        # r's own moves are in r's class, which never outranks r: they do not rescue it
        row = {c: -v for c, v in terms.items()}
        row[tm.pre[r]] = 1
        tm.m.add_row(row, hi=0)


def add_cells(tm: TenancyModel) -> None:
    """Cell counts: b[v,l,s] per server (identical cells aggregated) and
    R[v,q] per rack, with sum = c[v,t,l]; ``cellg[(v, s)]`` collects the GPUs
    they give v on s."""
    p, tree = tm.p, tm.tree
    per_srv: dict[tuple[int, int], int] = defaultdict(int)   # (s, lvl) -> nodes
    for n in range(tree.N):
        if tree.server[n] >= 0:
            per_srv[(tree.server[n], tree.level[n])] += 1
    for v, qv in sorted(tm.q.items()):
        for (t, lvl), c in sorted(qv.items()):
            if c == 0:
                continue
            row = {}
            if lvl in tm.outer_lvls:
                for n in tree.by_type_level.get((t, lvl), []):
                    col = tm.cells[(v, lvl, n)] = tm.var(1)
                    row[col] = 1
                    for s in sorted({int(p.gpu_server[g]) for g in tree.gpus[n]}):
                        tm.cellg[(v, s)].append((int(p.srv_gpus[s]), col))
            else:
                z = cell_size(tree, t, lvl)
                for s in range(p.S):
                    cnt = per_srv.get((s, lvl), 0)
                    if p.cluster.servers[s].gpu_type != t or not p.srv_gpus[s] or not cnt:
                        continue
                    col = tm.cells[(v, lvl, s)] = tm.var(min(cnt, c))
                    row[col] = 1
                    tm.cellg[(v, s)].append((z, col))
            tm.m.add_row(row, c, c)


def _kept_gpus(tm: TenancyModel, r: int) -> list[int]:
    return [g for g, _ in running_assign(tm.p, r).gpus]


def add_cover(tm: TenancyModel) -> None:
    """Kept guaranteed jobs pin cell positions: if v's kept jobs on s touch D
    level-l nodes (u[n] >= keep[r] for each node n job r touches), v's cells
    on s span at least D of them:

        sum_{cells of size z >= z_l} (z / z_l) b + sum_{smaller} b >= sum_n u[n]
    """
    p, tree, m = tm.p, tm.tree, tm.m
    server_lvl = tm.lv["server"]
    touch: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in tm.running:
        jr = p.jobs[r]
        if not jr.guaranteed or jr.tenant not in tm.q:
            continue
        for g in _kept_gpus(tm, r):
            s = int(p.gpu_server[g])
            for n in tree.anc[g]:
                if tree.server[n] >= 0 and tree.level[n] > server_lvl:
                    touch[(jr.tenant, s, tree.level[n])][n].append(tm.keep[r])
    for (v, s, lvl), nodes in sorted(touch.items()):
        cells = tm.cellg.get((v, s))
        if len(nodes) < 2 or not cells:
            continue
        sizes = {len(tree.gpus[n]) for n in nodes}
        if len(sizes) != 1:
            continue
        zl = sizes.pop()
        if any(size > zl and size % zl for size, _ in cells):
            continue
        row: dict[int, float] = defaultdict(float)
        for size, b in cells:
            row[b] += size // zl if size >= zl else 1
        for n, ks in sorted(nodes.items()):
            u = tm.var(1)
            tm.aux[s].append(u)
            for k in sorted(set(ks)):
                m.add_row({u: 1, k: -1}, lo=0)
            row[u] -= 1
        m.add_row(dict(row), lo=0)


def _node_filling(tm: TenancyModel, j: int, s: int, n: int) -> int:
    """GPUs of the switch / socket / server node job j fills on s (0: none)."""
    job = tm.p.jobs[j]
    if job.locality not in ("switch", "socket", "server") or job.gpu_milli < MILLI:
        return 0
    sv = tm.p.cluster.servers[s]
    z = sv.gpus
    if job.locality in ("socket", "switch"):
        z //= max(1, sv.sockets)
    if job.locality == "switch":
        z //= max(1, sv.switches_per_socket)
    return n if n == z else 0


def add_fragmentation(tm: TenancyModel) -> None:
    """A job confined to one switch / socket / server whose size is that
    node's fills g / z_L whole level-L nodes, none of which a kept running job
    may touch:

        sum_k (g_k / z_L) x[k,s] + #(level-L nodes of s touched by kept jobs) <= N_sL
    """
    tree, m = tm.tree, tm.m
    server_lvl = tm.lv["server"]
    nodes_at: dict[tuple[int, int], list[int]] = defaultdict(list)
    for n in range(tree.N):
        if tree.server[n] >= 0 and tree.level[n] > server_lvl \
                and tree.levels[tree.level[n]] in ("socket", "switch"):
            nodes_at[(tree.server[n], tree.level[n])].append(n)
    if not nodes_at:
        return
    touched: dict[int, set] = defaultdict(set)
    for r in tm.running:
        for g in _kept_gpus(tm, r):
            for n in tree.anc[g]:
                touched[n].add(r)
    filled: dict[int, list] = defaultdict(list)
    for (k, s), col in tm.x.items():
        z = _node_filling(tm, tm.groups.members[k][0], s, tm.groups.size[k])
        if z:
            filled[s].append((z, col))
    for (r, s), col in tm.mv.items():
        z = _node_filling(tm, r, s, len(_kept_gpus(tm, r)))
        if z:
            filled[s].append((z, col))
    for (s, lvl), ns in sorted(nodes_at.items()):
        zl = len(tree.gpus[ns[0]])
        terms = [(z // zl, col) for z, col in filled.get(s, []) if z >= zl and z % zl == 0]
        if not terms:
            continue
        us = []
        for n in ns:
            rs = sorted(touched.get(n, ()))
            if len(rs) == 1:
                us.append(tm.keep[rs[0]])
            elif rs:
                u = tm.var(1)
                tm.aux[s].append(u)
                for r in rs:
                    m.add_row({u: 1, tm.keep[r]: -1}, lo=0)
                us.append(u)
        if not us:
            continue
        row: dict[int, float] = defaultdict(float)
        for c, col in terms:
            row[col] += c
        for u in us:
            row[u] += 1
        m.add_row(dict(row), hi=len(ns))


def add_positions(tm: TenancyModel) -> None:
    """Positions of cells on servers with kept jobs: y[v,n] in {0,1} for the
    level-l nodes n of s, sum_n y[v,n] = b[v,l,s]; at most one cell (rack
    cells included) on each GPU; v's cells cover the GPUs of v's kept
    guaranteed jobs, sum_{cells of v on g} >= keep[r]; a kept whole-GPU job r
    (not v's guaranteed) with k_rn GPUs in n takes them from v's cell when
    both stay: w[v,n,r] >= y[v,n] + keep[r] - 1 (``inside[(v, s)]`` collects
    k_rn w[v,n,r] for the capacity rows)."""
    p, tree, m = tm.p, tm.tree, tm.m
    jobs = p.jobs
    pinned: dict[int, list] = defaultdict(list)
    for r in tm.running:
        by_s: dict[int, set] = defaultdict(set)
        for g in _kept_gpus(tm, r):
            by_s[int(p.gpu_server[g])].add(g)
        for s, gs in by_s.items():
            pinned[s].append((r, gs))
    rack_cells: dict[int, list] = defaultdict(list)      # s -> (v, column) of rack cells
    for (v, lvl, where), col in tm.cells.items():
        if lvl in tm.outer_lvls:
            for s in {int(p.gpu_server[g]) for g in tree.gpus[where]}:
                rack_cells[s].append((v, col))
    for s, rs in sorted(pinned.items()):
        tm.tick()
        on_gpu: dict[int, list] = defaultdict(list)      # g -> cell columns on g
        own: dict[tuple, list] = defaultdict(list)       # (v, g) -> v's cell columns on g
        for v, col in rack_cells.get(s, ()):
            for g in tm.p_gpus(s):
                on_gpu[g].append(col)
                own[(v, g)].append(col)
        for v in tm.tenants:
            if tm.use.gwhole.get((v, s)) or tm.use.gshared.get((v, s)):
                _place_cells(tm, s, v, rs, on_gpu, own)
        for g, cols in on_gpu.items():
            if len(cols) > 1:
                m.add_row({c: 1 for c in cols}, hi=1)
        for r, gs in rs:
            v = jobs[r].tenant
            if not jobs[r].guaranteed or v not in tm.q:
                continue
            for g in sorted(gs):
                row = {c: 1 for c in own.get((v, g), [])}
                row[tm.keep[r]] = row.get(tm.keep[r], 0) - 1
                m.add_row(row, lo=0)


def _place_cells(tm: TenancyModel, s: int, v: str, rs, on_gpu: dict, own: dict) -> None:
    """Position columns y[v,n] of v's per-server cells on s and the w columns
    of kept jobs inside them (see `add_positions`)."""
    p, tree, m = tm.p, tm.tree, tm.m
    jobs = p.jobs
    for lvl in sorted({lv for (v2, lv, where) in tm.cells
                       if v2 == v and where == s and lv not in tm.outer_lvls}):
        ys = {}
        for n in tree.by_type_level.get((p.cluster.servers[s].gpu_type, lvl), []):
            if tree.server[n] != s:
                continue
            yv = tm.var(1)
            tm.aux[s].append(yv)
            ys[yv] = 1
            for g in tree.gpus[n]:
                on_gpu[g].append(yv)
                own[(v, g)].append(yv)
            for r, gs in rs:
                k_ = len(gs & set(tree.gpus[n]))
                if k_ and jobs[r].gpu_milli >= MILLI and \
                        not (jobs[r].guaranteed and jobs[r].tenant == v):
                    w = tm.var(1)
                    tm.aux[s].append(w)
                    m.add_row({w: 1, yv: -1, tm.keep[r]: -1}, lo=-1)
                    tm.inside[(v, s)].append((k_, w))
        ys[tm.cells[(v, lvl, s)]] = -1
        m.add_row(ys, 0, 0)


def _terms(row: dict, terms, sign: float = 1.0) -> None:
    for c, col in terms:
        row[col] = row.get(col, 0) + sign * c


def add_capacity(tm: TenancyModel) -> None:
    """Per server: GPUs (whole + h[s]), shared milli (<= 1000 h[s]), CPU,
    memory, the cells' GPUs (<= G_s) and each tenant's guaranteed use inside
    its cells."""
    p, m, use = tm.p, tm.m, tm.use
    for s in range(p.S):
        tm.tick()
        G = int(p.srv_gpus[s])
        row: dict[int, float] = {}
        _terms(row, use.whole[s])
        if use.shared[s]:
            h = tm.var(G)
            tm.aux[s].append(h)
            row[h] = 1
            sh: dict[int, float] = {h: -MILLI}
            _terms(sh, use.shared[s])
            m.add_row(sh, hi=0)
        if row:
            m.add_row(row, hi=G)
        for terms, cap in ((use.cpu[s], p.srv_cpu[s]), (use.mem[s], p.srv_mem[s])):
            if terms:
                r: dict[int, float] = {}
                _terms(r, terms)
                m.add_row(r, hi=int(cap))
        allcells: dict[int, float] = {}
        for v in tm.tenants:
            cg = tm.cellg.get((v, s), [])
            _terms(allcells, cg)
            gw, gs = use.gwhole.get((v, s), []), use.gshared.get((v, s), [])
            if not gw and not gs:
                continue
            own: dict[int, float] = {}
            _terms(own, gw)
            _terms(own, tm.inside.get((v, s), []))
            if gs:
                hv = tm.var(G)
                tm.aux[s].append(hv)
                own[hv] = own.get(hv, 0) + 1
                r = {hv: -MILLI}
                _terms(r, gs)
                m.add_row(r, hi=0)
            _terms(own, cg, -1.0)
            m.add_row(own, hi=0)
        if allcells:
            m.add_row(allcells, hi=G)


def add_symmetry(tm: TenancyModel) -> None:
    """Without tenants: identical servers without running jobs are ordered by
    the GPUs their whole jobs take (cells make otherwise identical servers
    differ)."""
    p = tm.p
    if tm.q:
        return
    busy = {s for r in tm.running for s, _ in running_assign(p, r).cpu}
    load: dict[int, dict] = defaultdict(dict)
    for (k, s), col in tm.x.items():
        load[s][col] = tm.groups.size[k]
    for members in p.classes:
        free = [s for s in members if s not in busy]
        for a, b in zip(free, free[1:]):
            if load[a] and load[b]:
                row = dict(load[a])
                for col, c in load[b].items():
                    row[col] = row.get(col, 0) - c
                tm.m.add_row(row, lo=0)


def add_objective(tm: TenancyModel) -> None:
    """Phase 2's objective on the model; ``work`` holds phase 1's terms: the
    GPUs of placed guaranteed jobs (an elastic job at its smallest size, 1
    for a CPU-only job)."""
    p, G = tm.p, tm.groups
    jobs = p.jobs

    def work(j):
        return min(job_sizes(jobs[j])) or 1
    for (k, _), col in list(tm.x.items()) + list(tm.y.items()):
        j0 = G.members[k][0]
        if jobs[j0].guaranteed:
            tm.work[col] += work(j0)
    for r in tm.running:
        if jobs[r].guaranteed:
            tm.work[tm.keep[r]] += work(r)
    for (r, _), col in list(tm.mv.items()) + list(tm.ms.items()):
        if jobs[r].guaranteed:
            tm.work[col] += work(r)
    tm.m.set_objective({c: v for c, v in tm.obj.items() if v})


# ---------------------------------------------------------------- restrictions


def restrictions(tm: TenancyModel, floor: bool) -> list[str]:
    """The restrictions of `RESTRICTIONS` that cut this instance (empty:
    the model relaxes the instance, its bound is the instance's): the
    guaranteed-work floor, a job placed at its request that has another
    CPU/memory point the objective values or that asks less CPU or memory
    (a point that may fit where the request does not), spread CPU/memory
    that does not divide by the GPUs, a running elastic job that may move."""
    p = tm.p
    out = []
    if floor:
        out.append(RESTRICTIONS[0])
    movable = tm.pending + (tm.running if tm.migrate else [])
    if any(other_points_matter(p, j) for j in movable):
        out.append(RESTRICTIONS[1])
    if not tm.units_exact:
        out.append(RESTRICTIONS[2])
    if tm.migrate and any(p.jobs[r].elastic for r in tm.running):
        out.append(RESTRICTIONS[3])
    return out


def other_points_matter(p: Problem, j: int) -> bool:
    """Job j has a CPU/memory point besides its request that the objective
    values or that asks less CPU or less memory than the request -- for an
    elastic job, at any of its sizes too (a grid point's CPU and memory are
    per GPU: on ``n`` GPUs it asks ``n`` times them, so at a smaller size
    it may ask less than the request and fit where the request does not)."""
    req, *rest = p.options[j]
    job = p.jobs[j]
    if job.elastic:
        lo = min(job_sizes(job))
        cells = grid_cells(job)
        if cells and ("grid" in p.objective.factors or
                      any(c * lo < req.cpu or m * lo < req.mem for c, m, _ in cells)):
            return True
    if not rest:
        return False
    return "grid" in p.objective.factors or \
        any(o.cpu < req.cpu or o.mem < req.mem for o in rest)
