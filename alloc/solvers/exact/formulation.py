r"""Aggregated exact formulation shared by the ``cpsat``, ``milp`` and
``milp-cbc`` backends.

A naive model with one variable per (job, server) grows with J x S and is
hopelessly symmetric: servers of one class are interchangeable and so are jobs
with the same shape and profile.  This module removes both symmetries by
aggregation and solves a *configuration* (pattern) model, the classic
Gilmore-Gomory approach to cutting stock, by column generation.

Aggregation
-----------
* **Server classes** ``c`` (``Problem.classes``): identical capacity, GPU type,
  socket/switch shape and rack; ``n_c`` servers, capacities ``C_c, M_c, G_c``.
* **Job types** ``t``: jobs with the same GPU count ``g_t``, share
  ``milli_t``, option set (CPU/memory points with their base speed), allowed
  classes, locality, weight and profile factors (GPU-type speeds; span
  factors only of the levels the job can span, so profiles that differ only
  elsewhere merge); ``N_t`` jobs.
* **Items** of class ``c``: a *whole* item ``(t, o)`` is one job of type ``t``
  at option ``o`` on one server (uses ``cpu_o``, ``mem_o``, ``g_t`` whole GPUs
  under one node of its locality level, or ``milli_t`` of one shared GPU); a
  *unit* item ``(t, o)`` is one GPU of a job of a spreadable type (whole GPUs,
  ``g_t >= 2``, no locality or rack locality) with ``ceil(cpu_o / g_t)`` CPU
  and ``ceil(mem_o / g_t)`` memory on that server.  Spread jobs are counted by
  spread *groups* ``k`` (all allowed classes, or one rack).
* A **pattern** ``p`` of class ``c`` is an integer vector ``a_p`` of items that
  fits one server of ``c``: CPU and memory, whole GPUs of switch-level items
  inside one switch, of socket-level items inside one socket (the per-node
  capacity rows below are necessary and, since items of a level are free to
  use any GPU of their node, sufficient), shared items bin-packed into GPUs of
  at most 1000 milli.

Integer master (the model the backends solve)
---------------------------------------------
.. math::

    \max\ & \sum_{c,p} val_p\, z_{cp} + \sum_{t,o,k} v^{sp}_{tok}\, x_{tok} \\
    \text{s.t. } & \sum_p z_{cp} \le n_c                    && (\mu_c)\\
    & \sum_{c,p,o} a_{p,(t,o)}\, z_{cp} + \sum_{o,k} x_{tok} \le N_t   && (\pi_t)\\
    & g_t\, x_{tok} - \sum_{c \in k, p} a_{p,unit(t,o)}\, z_{cp} \le 0  && (\rho_{tok})\\
    & z_{cp}, x_{tok} \in \mathbb{Z}_{\ge 0}

with ``val_p = sum_i a_{pi} v_{ic}`` where ``v`` is the job's objective
coefficient at the option on the class's GPU type (throughput:
``weight * base_o * speed_t(type) * max in-server span factor``) and
``v^sp`` the coefficient of a spread job (best GPU type of the group times the
best cross-server span factor).  Server symmetry is gone by construction
(``z`` counts servers, not names) and job symmetry too (types are counted).

LP bound and columns
--------------------
The LP relaxation is solved over a pool of columns (seeded with every
heuristic solution, cut into per-server patterns) and new columns are priced
per class by a small integer program (the *pricing* problem: the pattern
feasibility rows above with objective ``sum_i (v_i - pi_t(i) - rho(i)) a_i -
mu_c``), solved by the backend's own engine.  At every round the Lagrangian
bound ``LP + sum_c n_c max(0, rc*_c)`` (``rc*_c`` = proven upper bound of the
class's pricing problem) is a valid upper bound; at convergence it equals the
Gilmore-Gomory LP bound.  The *big-machine* LP (each class pooled into one
machine, spread jobs with exact fractional CPU/memory per GPU) is computed
first and is always valid.  The reported bound is the smallest valid one.

The pattern model is exact (so its bounds are bounds of the real problem)
when a spread job's CPU and memory divide evenly over its GPUs (then the unit
reservation is its exact share; otherwise it is a restriction and only the
big-machine bound is reported).  Decoding a spread job picks ``g_t`` unit
slots of its group, which is always possible because slots are only counted.

Objective step
--------------
When every job value (weight x grid value x GPU-type speed x span factor x
elastic scale, or milli-GPUs) is a multiple of a decimal step ``delta``
(:func:`objective_granularity`: each factor set's step after scaling by
``10**k``, ``k <= 6``, and their gcd), so is every solution's value, and
every bound rounds down to a multiple of ``delta`` (:func:`tighten`).

Proof
-----
If the integer master reaches the (rounded) bound the solution is optimal.
Otherwise targets ``T`` descend from the rounded bound (steps ``delta``,
``2 delta``, ``4 delta``, ...).  With the duals ``y`` of the converged column
generation and ``L`` its Lagrangian bound (= LP), any integer solution has
``value = y.Az + sum_p rc_p z_p <= L - y.slack + sum_{rc_p < 0} rc_p z_p``,
so a solution worth ``>= T`` uses only patterns with ``rc_p >= T - L``, at
most ``(L - T) / -rc_p`` copies of each, and leaves row slack at most
``(L - T) / y_r``.  A depth-first search (O(1) fractional-knapsack pruning)
lists all such patterns; the master over them with these bounds and the cut
``value >= T`` is then exact: feasible means its optimum is the optimum,
infeasible means ``T - delta`` bounds the optimum.  When the search is cut
short, the best listed patterns by reduced cost still enrich the pool.

Price-and-dive
--------------
When the proof is out of reach (huge enumerations), :func:`dive` fixes one
copy of the pattern the restricted LP uses most, shrinks the residual
problem (servers per class, jobs per type, spread unit slots), re-solves the
LP by column generation and repeats until the LP is integral, backtracking
over the few best patterns of a node while the rounded LP bound stays above
the target.

Decoding
--------
Patterns carry a *layout*: the local GPU offsets of each item (found by a
first-fit-decreasing packing along the hierarchy, an exact feasibility model
when that fails).  ``z_cp`` copies are laid on the servers of class ``c`` in
index order; whole items take the type's jobs in priority order; the unit slots
of a spread group are cut into runs of ``g_t`` (same server first) for the
``x_tok`` spread jobs.  The decoded placement is checked against every server's
capacity before it is returned; the best heuristic is kept when the decoded
solution is not better.

Extension hook
--------------
``extra_rows``: a sequence of :class:`MasterRow` adds linear rows to the
master whose coefficient on a pattern is the sum of per-item coefficients (and
a coefficient per spread variable); pricing subtracts their duals, so column
generation stays exact with them (e.g. a tenant's GPU quota).
"""
from __future__ import annotations

import math
import time
from fractions import Fraction
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ...model import MILLI, Status
from ...problem import Assign, Problem, Solution

INF = float("inf")
EPS = 1e-7
INNER = ("switch", "socket")


# =====================================================================
# A tiny solver-neutral linear model
# =====================================================================
class LinearModel:
    """Maximise ``obj . x + obj_const`` subject to ``lo <= row . x <= hi``;
    variables are bounded, integer unless stated."""

    def __init__(self, name: str = ""):
        self.name = name
        self.lb: list[float] = []
        self.ub: list[float] = []
        self.integer: list[bool] = []
        self.names: list[str] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []
        self.obj: dict[int, float] = {}
        self.obj_const = 0.0

    def var(self, lb: float, ub: float, integer: bool = True, name: str = "") -> int:
        self.lb.append(lb)
        self.ub.append(ub)
        self.integer.append(integer)
        self.names.append(name or f"v{len(self.names)}")
        return len(self.lb) - 1

    def add(self, coefs: dict[int, float], lo: float = -INF, hi: float = INF) -> int:
        coefs = {k: v for k, v in coefs.items() if v != 0}
        self.rows.append((coefs, lo, hi))
        return len(self.rows) - 1

    @property
    def n(self) -> int:
        return len(self.lb)

    def value(self, x: Sequence[float]) -> float:
        return self.obj_const + sum(c * x[i] for i, c in self.obj.items())


@dataclass
class LinearResult:
    status: str                      # "optimal", "feasible", "infeasible", "unknown"
    x: list[float] | None = None
    objective: float | None = None
    bound: float | None = None       # proven upper bound (maximisation)
    stats: dict = field(default_factory=dict)


class Backend:
    """What an exact backend provides: an integer solver for a
    :class:`LinearModel` (maximisation) reporting a proven bound."""
    name = "backend"

    def solve(self, model: LinearModel, *, time_limit: float, hint=None,
              seed: int = 0) -> LinearResult:  # pragma: no cover - interface
        raise NotImplementedError


# =====================================================================
# LP solving (master relaxation, big machine): scipy/HiGHS, else GLOP
# =====================================================================
def solve_lp(model: LinearModel) -> tuple[float, list[float], list[float]] | None:
    """Optimal LP value, primal values and row duals (dual >= 0 for a binding
    ``<=`` row of a maximisation).  None when the LP cannot be solved."""
    for fn in (_lp_highspy, _lp_scipy, _lp_glop):
        try:
            return fn(model)
        except ImportError:
            continue
    return None


def set_colwise_matrix(lp, row_coefs: Sequence[dict], ncol: int) -> None:
    """Give a ``highspy.HighsLp`` its constraint matrix, column-wise, from one
    ``{column: coefficient}`` dict per row."""
    import highspy
    cols: list[list[tuple[int, float]]] = [[] for _ in range(ncol)]
    for r, coefs in enumerate(row_coefs):
        for k, v in coefs.items():
            cols[k].append((r, v))
    start, index, value = [0], [], []
    for col in cols:
        for r, v in col:
            index.append(r)
            value.append(v)
        start.append(len(index))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(value, dtype=float)


def _lp_highspy(model: LinearModel):
    import highspy
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    n, m = model.n, len(model.rows)
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.array([model.obj.get(i, 0.0) for i in range(n)], dtype=float)
    big = highspy.kHighsInf
    lp.col_lower_ = np.array([v if v > -INF else -big for v in model.lb], dtype=float)
    lp.col_upper_ = np.array([v if v < INF else big for v in model.ub], dtype=float)
    lp.row_lower_ = np.array([lo if lo > -INF else -big for _, lo, _ in model.rows], dtype=float)
    lp.row_upper_ = np.array([hi if hi < INF else big for _, _, hi in model.rows], dtype=float)
    set_colwise_matrix(lp, [coefs for coefs, _, _ in model.rows], n)
    lp.sense_ = highspy.ObjSense.kMaximize
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    sol = h.getSolution()
    obj = h.getInfo().objective_function_value
    # HiGHS reports duals of the maximisation with the sign of d obj / d rhs
    return float(obj) + model.obj_const, list(sol.col_value), [float(d) for d in sol.row_dual]


def _lp_scipy(model: LinearModel):
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix
    n = model.n
    c = np.zeros(n)
    for i, v in model.obj.items():
        c[i] = -v
    ub_rows, ub_b, ub_sign, eq_rows, eq_b = [], [], [], [], []
    rmap = []  # (kind, index, sign)
    for coefs, lo, hi in model.rows:
        if lo == hi:
            rmap.append(("eq", len(eq_rows), 1.0))
            eq_rows.append(coefs)
            eq_b.append(hi)
            continue
        entry = []
        if hi < INF:
            entry.append(("ub", len(ub_rows), 1.0))
            ub_rows.append(coefs)
            ub_b.append(hi)
        if lo > -INF:
            entry.append(("ub", len(ub_rows), -1.0))
            ub_rows.append({k: -v for k, v in coefs.items()})
            ub_b.append(-lo)
        rmap.append(entry[0] if len(entry) == 1 else ("pair", entry, 1.0))

    def mat(rows):
        if not rows:
            return None
        data, ri, ci = [], [], []
        for r, coefs in enumerate(rows):
            for k, v in coefs.items():
                ri.append(r)
                ci.append(k)
                data.append(v)
        return csr_matrix((data, (ri, ci)), shape=(len(rows), n))

    res = linprog(c, A_ub=mat(ub_rows), b_ub=ub_b or None, A_eq=mat(eq_rows),
                  b_eq=eq_b or None, bounds=list(zip(model.lb, model.ub)), method="highs")
    if res.status != 0:
        return None
    ub_d = -np.asarray(res.ineqlin.marginals) if ub_rows else np.zeros(0)
    eq_d = -np.asarray(res.eqlin.marginals) if eq_rows else np.zeros(0)
    duals = []
    for e in rmap:
        if e[0] == "eq":
            duals.append(float(eq_d[e[1]]))
        elif e[0] == "ub":
            duals.append(float(ub_d[e[1]]) * e[2])
        elif e[0] == "pair":
            duals.append(sum(float(ub_d[i]) * s for _, i, s in e[1]))
        else:
            duals.append(0.0)
    return float(-res.fun + model.obj_const), list(map(float, res.x)), duals


def _lp_glop(model: LinearModel):
    from ortools.linear_solver import pywraplp
    s = pywraplp.Solver.CreateSolver("GLOP")
    xs = [s.NumVar(lb, ub if ub < INF else s.infinity(), f"x{i}")
          for i, (lb, ub) in enumerate(zip(model.lb, model.ub))]
    cons = []
    for coefs, lo, hi in model.rows:
        ct = s.Constraint(lo if lo > -INF else -s.infinity(), hi if hi < INF else s.infinity())
        for k, v in coefs.items():
            ct.SetCoefficient(xs[k], v)
        cons.append(ct)
    obj = s.Objective()
    for i, v in model.obj.items():
        obj.SetCoefficient(xs[i], v)
    obj.SetMaximization()
    if s.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return (obj.Value() + model.obj_const, [x.solution_value() for x in xs],
            [ct.dual_value() for ct in cons])


# =====================================================================
# Aggregation
# =====================================================================
@dataclass
class JobType:
    index: int
    jobs: list[int]               # job indices, decode order (priority, index)
    gpus: int
    milli: int
    locality: str | None
    options: tuple                # Option objects of the representative job
    classes: tuple[int, ...]      # allowed classes
    spreadable: bool
    rep: int

    @property
    def count(self) -> int:
        return len(self.jobs)


@dataclass(frozen=True)
class Item:
    kind: str        # "whole" or "unit"
    t: int           # job type
    o: int           # option index
    cpu: int
    mem: int
    gpus: int        # whole GPUs taken (0 for a shared or CPU-only item)
    milli: int       # share of one GPU for a shared item, else 0
    level: str       # "switch", "socket" or "server": node holding its GPUs
    value: float     # objective coefficient (0 for a unit)
    group: int = -1  # spread group of a unit

    @property
    def key(self) -> tuple:
        return (self.kind, self.t, self.o)


@dataclass
class Pattern:
    cls: int
    counts: tuple[tuple[int, int], ...]          # (item index in class, count)
    layout: tuple[tuple[int, tuple[int, ...]], ...]  # (item index, local GPU offsets)
    value: float


@dataclass(frozen=True)
class MasterRow:
    """An extra linear row of the master: ``lo <= sum_{c,p} (sum_i a_pi *
    item_coef(c, item)) z_cp + sum x_tok * x_coef(t, o, k) <= hi``."""
    item_coef: Callable[[int, Item], float]
    x_coef: Callable[[int, int, int], float] = lambda t, o, k: 0.0
    lo: float = -INF
    hi: float = INF


class Aggregate:
    """Job types, server classes, items and spread groups of a problem."""

    def __init__(self, problem: Problem):
        p = self.p = problem
        self.classes = [list(m) for m in p.classes]
        self.K = len(self.classes)
        self.rep_server = [m[0] for m in self.classes]
        self.n_c = [len(m) for m in self.classes]
        self.cap = [(int(p.srv_cpu[s]), int(p.srv_mem[s]), int(p.srv_gpus[s]))
                    for s in self.rep_server]
        self._build_types()
        self._build_structure()
        self._build_items()

    # ---------------------------------------------------------------- types
    def _type_key(self, j: int) -> tuple:
        p = self.p
        job = p.jobs[j]
        opts = tuple((o.cpu, o.mem, round(o.base, 12)) for o in p.options[j])
        allowed = tuple(bool(p.allowed[j, s]) for s in self.rep_server)
        speeds = tuple(round(p.speed(j, s), 12) for s in self.rep_server)
        prof = job.profile
        # only the span factors of the levels the job can span matter (jobs
        # whose profiles differ elsewhere are interchangeable)
        span = ()
        if prof is not None and (job.gpus > 1 or job.elastic):
            span = tuple(round(prof.span_factor(lv), 12) for lv in _span_levels(p, job))
        if job.elastic:
            span += (job.min_gpus, job.max_gpus,
                     tuple(sorted(prof.scaling.items())) if prof is not None else ())
        return (job.gpus, job.gpu_milli, job.locality, opts, job.weight, allowed, speeds,
                span, job.tenant, job.guaranteed)

    def _build_types(self):
        p = self.p
        groups: dict[tuple, list[int]] = {}
        for j in range(p.J):
            groups.setdefault(self._type_key(j), []).append(j)
        self.types: list[JobType] = []
        self.type_of = [0] * p.J
        for key, js in groups.items():
            js = sorted(js, key=lambda j: (-p.jobs[j].priority, j))
            job = p.jobs[js[0]]
            classes = tuple(c for c, s in enumerate(self.rep_server) if p.allowed[js[0], s])
            spread = (job.gpus >= 2 and job.gpu_milli == MILLI
                      and job.locality in (None, "rack", "cluster"))
            t = JobType(len(self.types), js, job.gpus, job.gpu_milli, job.locality,
                        p.options[js[0]], classes, spread, js[0])
            for j in js:
                self.type_of[j] = t.index
            self.types.append(t)

    # ------------------------------------------------------------ structure
    def _build_structure(self):
        """Local GPU offset -> switch / socket index, per class."""
        p = self.p
        self.sw_of, self.so_of, self.sw_cap, self.so_cap, self.n_sw, self.n_so = [], [], [], [], [], []
        for c, s in enumerate(self.rep_server):
            srv = p.cluster.servers[s]
            G = srv.gpus
            so, sw = [], []
            names_so: dict[str, int] = {}
            names_sw: dict[str, int] = {}
            for k in range(G):
                so.append(names_so.setdefault(srv.gpu_domain(k, "socket"), len(names_so)))
                sw.append(names_sw.setdefault(srv.gpu_domain(k, "switch"), len(names_sw)))
            self.so_of.append(so)
            self.sw_of.append(sw)
            self.n_so.append(len(names_so))
            self.n_sw.append(len(names_sw))
            self.so_cap.append([so.count(i) for i in range(len(names_so))])
            self.sw_cap.append([sw.count(i) for i in range(len(names_sw))])
        # switch -> socket
        self.sw_socket = []
        for c in range(self.K):
            m = {}
            for k, d in enumerate(self.sw_of[c]):
                m[d] = self.so_of[c][k]
            self.sw_socket.append([m[d] for d in range(self.n_sw[c])])

    # ---------------------------------------------------------------- items
    def span_in(self, t: JobType) -> float:
        """Best span factor of a multi-GPU job inside one server."""
        p = self.p
        prof = p.jobs[t.rep].profile
        if p.objective != "throughput" or t.gpus < 2 or prof is None:
            return 1.0
        lv = [x for x in ("server", "socket", "switch") if x in p.levels] or ["server"]
        return max(prof.span_factor(x) for x in lv)

    def span_out(self, t: JobType) -> float:
        """Best span factor of a job spread over several servers."""
        p = self.p
        prof = p.jobs[t.rep].profile
        if p.objective != "throughput" or prof is None:
            return 1.0
        lv = ["rack"] if "rack" in p.levels else []
        if t.locality != "rack":
            lv.append("cluster")
        return max(prof.span_factor(x) for x in lv)

    def _level(self, t: JobType) -> str:
        if t.locality in INNER and t.locality in self.p.levels:
            return t.locality
        return "server"

    def _build_items(self):
        p = self.p
        self.items: list[list[Item]] = [[] for _ in range(self.K)]
        self.item_index: list[dict[tuple, int]] = [dict() for _ in range(self.K)]
        # spread groups: (type, rack or None) -> group id, classes
        self.groups: list[tuple[int, tuple[int, ...]]] = []
        group_of: dict[tuple[int, int], int] = {}   # (t, c) -> group
        for t in self.types:
            if not t.spreadable:
                continue
            if t.locality == "rack" and "rack" in p.levels:
                racks: dict[str, list[int]] = {}
                for c in t.classes:
                    racks.setdefault(p.cluster.servers[self.rep_server[c]].rack or "", []).append(c)
                parts = list(racks.values())
            else:
                parts = [list(t.classes)]
            for part in parts:
                gid = len(self.groups)
                self.groups.append((t.index, tuple(part)))
                for c in part:
                    group_of[(t.index, c)] = gid
        self.group_of = group_of
        self.exact_units = True
        for c in range(self.K):
            C, M, G = self.cap[c]
            s = self.rep_server[c]
            for t in self.types:
                if c not in t.classes:
                    continue
                lvl = self._level(t)
                if t.gpus == 0:
                    gfit = True
                elif t.milli < MILLI:
                    gfit = G >= 1
                elif t.locality == "gpu":
                    gfit = t.gpus == 1 and G >= 1
                elif lvl == "switch":
                    gfit = t.gpus <= max(self.sw_cap[c], default=0)
                elif lvl == "socket":
                    gfit = t.gpus <= max(self.so_cap[c], default=0)
                else:
                    gfit = t.gpus <= G
                for o, opt in enumerate(t.options):
                    if gfit and opt.cpu <= C and opt.mem <= M:
                        v = p.coef(t.rep, o, s) * self.span_in(t)
                        it = Item("whole", t.index, o, opt.cpu, opt.mem,
                                  t.gpus if t.milli == MILLI else 0,
                                  t.milli if (t.milli < MILLI and t.gpus) else 0, lvl, v)
                        self._add_item(c, it)
                    if t.spreadable and G >= 1:
                        uc, um = -(-opt.cpu // t.gpus), -(-opt.mem // t.gpus)
                        if uc * t.gpus != opt.cpu or um * t.gpus != opt.mem:
                            self.exact_units = False
                        if uc <= C and um <= M:
                            self._add_item(c, Item("unit", t.index, o, uc, um, 1, 0, "server",
                                                   0.0, group_of[(t.index, c)]))
        # spread variables (t, o, group) with their value
        self.spread_vars: list[tuple[int, int, int, float]] = []
        for gid, (ti, cls) in enumerate(self.groups):
            t = self.types[ti]
            for o in range(len(t.options)):
                if not any(("unit", ti, o) in self.item_index[c] for c in cls):
                    continue
                best = max(p.coef(t.rep, o, self.rep_server[c]) for c in cls)
                self.spread_vars.append((ti, o, gid, best * self.span_out(t)))

    def _add_item(self, c: int, it: Item):
        self.item_index[c][it.key] = len(self.items[c])
        self.items[c].append(it)

    def item_ub(self, c: int, i: int) -> int:
        it = self.items[c][i]
        C, M, G = self.cap[c]
        t = self.types[it.t]
        ub = t.count if it.kind == "whole" else t.count * t.gpus
        if it.cpu:
            ub = min(ub, C // it.cpu)
        if it.mem:
            ub = min(ub, M // it.mem)
        if it.gpus:
            ub = min(ub, G // it.gpus)
        if it.milli:
            ub = min(ub, G * MILLI // it.milli)
        return max(ub, 0)

    # =============================================================
    # pattern feasibility rows (pricing, enumeration, layout checks)
    # =============================================================
    def server_rows(self, model: LinearModel, c: int, a: dict[int, int],
                    aux: bool = True) -> dict:
        """Add the rows saying the items ``a`` (item -> model var) fit one server
        of class ``c``.  With ``aux=False`` only the resource rows (a
        relaxation) are added.  Returns the auxiliary variables."""
        C, M, G = self.cap[c]
        items = self.items[c]
        model.add({v: items[i].cpu for i, v in a.items()}, hi=C)
        model.add({v: items[i].mem for i, v in a.items()}, hi=M)
        whole = {v: items[i].gpus for i, v in a.items() if items[i].gpus}
        shared = [i for i in a if items[i].milli]
        info: dict = {"slots": [], "sw": {}, "so": {}}
        if not aux:
            row = {v: g * MILLI for v, g in whole.items()}
            for i in shared:
                row[a[i]] = items[i].milli
            model.add(row, hi=G * MILLI)
            return info
        # shared GPUs: slots k, u_k = slot in use, b[i,k] items of kind i on it
        K = 0
        if shared:
            K = min(G, sum(self.item_ub(c, i) for i in shared))
        us = []
        for k in range(K):
            u = model.var(0, 1, name=f"u{k}")
            us.append(u)
            row = {u: -MILLI}
            for i in shared:
                b = model.var(0, self.item_ub(c, i), name=f"b{i}_{k}")
                info["slots"].append((i, k, b))
                row[b] = items[i].milli
            model.add(row, hi=0)
            if k:
                model.add({us[k - 1]: 1, u: -1}, lo=0)
        for i in shared:
            row = {a[i]: -1}
            for (ii, k, b) in info["slots"]:
                if ii == i:
                    row[b] = 1
            model.add(row, lo=0, hi=0)
        row = dict(whole)
        for u in us:
            row[u] = 1
        model.add(row, hi=G)
        # inner locality: switch items r[i,d], socket items q[i,s]
        sw_items = [i for i in a if items[i].gpus and items[i].level == "switch"]
        so_items = [i for i in a if items[i].gpus and items[i].level == "socket"]
        if sw_items or so_items:
            so_rows = [dict() for _ in range(self.n_so[c])]
            for i in sw_items:
                row = {a[i]: -1}
                for d in range(self.n_sw[c]):
                    r = model.var(0, self.item_ub(c, i), name=f"r{i}_{d}")
                    info["sw"][(i, d)] = r
                    row[r] = 1
                model.add(row, lo=0, hi=0)
            for d in range(self.n_sw[c]):
                row = {info["sw"][(i, d)]: items[i].gpus for i in sw_items}
                if row:
                    model.add(row, hi=self.sw_cap[c][d])
                for i in sw_items:
                    so_rows[self.sw_socket[c][d]][info["sw"][(i, d)]] = items[i].gpus
            for i in so_items:
                row = {a[i]: -1}
                for s_ in range(self.n_so[c]):
                    q = model.var(0, self.item_ub(c, i), name=f"q{i}_{s_}")
                    info["so"][(i, s_)] = q
                    row[q] = 1
                    so_rows[s_][q] = items[i].gpus
                model.add(row, lo=0, hi=0)
            for s_ in range(self.n_so[c]):
                if so_rows[s_]:
                    model.add(so_rows[s_], hi=self.so_cap[c][s_])
        return info

    # =============================================================
    # layouts: local GPU offsets for a multiset of items on one server
    # =============================================================
    def layout(self, c: int, counts: dict[int, int],
               backend: Backend | None = None) -> tuple | None:
        """Concrete offsets for ``counts`` on a server of class ``c`` (None
        when they do not fit)."""
        items = self.items[c]
        C, M, G = self.cap[c]
        if sum(items[i].cpu * n for i, n in counts.items()) > C:
            return None
        if sum(items[i].mem * n for i, n in counts.items()) > M:
            return None
        lay = self._layout_ffd(c, counts)
        if lay is None and backend is not None:
            lay = self._layout_exact(c, counts, backend)
        return lay

    def _layout_ffd(self, c: int, counts: dict[int, int]):
        items = self.items[c]
        G = self.cap[c][2]
        sw_of, so_of = self.sw_of[c], self.so_of[c]
        free = [True] * G
        out = []
        seq = sorted(((i, n) for i, n in counts.items() if n > 0),
                     key=lambda t: ({"switch": 0, "socket": 1, "server": 2}[items[t[0]].level],
                                    items[t[0]].milli > 0, -items[t[0]].gpus,
                                    -items[t[0]].milli, t[0]))
        shared_load: dict[int, int] = {}
        for i, n in seq:
            it = items[i]
            for _ in range(n):
                if it.gpus == 0 and it.milli == 0:
                    out.append((i, ()))
                    continue
                if it.milli:
                    cand = [(MILLI - ld, g) for g, ld in shared_load.items() if ld + it.milli <= MILLI]
                    if cand:
                        g = min(cand)[1]
                    else:
                        fr = [g for g in range(G) if free[g]]
                        if not fr:
                            return None
                        g = fr[-1]   # shared GPUs from the top, keep low offsets whole
                        free[g] = False
                        shared_load[g] = 0
                    shared_load[g] += it.milli
                    out.append((i, (g,)))
                    continue
                k = it.gpus
                if it.level == "switch":
                    doms = sw_of
                elif it.level == "socket":
                    doms = so_of
                else:
                    doms = None
                chosen = None
                if doms is not None:
                    by: dict[int, list[int]] = {}
                    for g in range(G):
                        if free[g]:
                            by.setdefault(doms[g], []).append(g)
                    fit = sorted((len(v), v[0], v) for v in by.values() if len(v) >= k)
                    if fit:
                        chosen = fit[0][2][:k]
                else:
                    # consolidate: best-fitting switch, then socket, else anywhere
                    for dom in (sw_of, so_of):
                        by = {}
                        for g in range(G):
                            if free[g]:
                                by.setdefault(dom[g], []).append(g)
                        fit = sorted((len(v), v[0], v) for v in by.values() if len(v) >= k)
                        if fit:
                            chosen = fit[0][2][:k]
                            break
                    if chosen is None:
                        fr = [g for g in range(G) if free[g]]
                        if len(fr) >= k:
                            chosen = fr[:k]
                if chosen is None:
                    return None
                for g in chosen:
                    free[g] = False
                out.append((i, tuple(chosen)))
        return tuple(out)

    def _layout_exact(self, c: int, counts: dict[int, int], backend: Backend):
        m = LinearModel("layout")
        a = {}
        for i, n in counts.items():
            if n:
                a[i] = m.var(n, n, name=f"a{i}")
        info = self.server_rows(m, c, a)
        res = backend.solve(m, time_limit=2.0)
        if res.x is None:
            return None
        x = [int(round(v)) for v in res.x]
        items = self.items[c]
        G = self.cap[c][2]
        free = [True] * G
        out = []
        # switch items into their switches, socket items into their sockets
        for key, dom_of in (("sw", self.sw_of[c]), ("so", self.so_of[c])):
            for (i, d), r in sorted(info[key].items()):
                for _ in range(x[r]):
                    gs = [g for g in range(G) if free[g] and dom_of[g] == d][:items[i].gpus]
                    if len(gs) < items[i].gpus:
                        return None
                    for g in gs:
                        free[g] = False
                    out.append((i, tuple(gs)))
        slot_gpu: dict[int, int] = {}
        for (i, k, b) in info["slots"]:
            for _ in range(x[b]):
                if k not in slot_gpu:
                    fr = [g for g in range(G) if free[g]]
                    if not fr:
                        return None
                    slot_gpu[k] = fr[-1]
                    free[fr[-1]] = False
                out.append((i, (slot_gpu[k],)))
        for i, n in counts.items():
            it = items[i]
            if it.milli or (it.gpus and it.level != "server"):
                continue
            for _ in range(n):
                if not it.gpus:
                    out.append((i, ()))
                    continue
                fr = [g for g in range(G) if free[g]][:it.gpus]
                if len(fr) < it.gpus:
                    return None
                for g in fr:
                    free[g] = False
                out.append((i, tuple(fr)))
        return tuple(out)

    def make_pattern(self, c: int, counts: dict[int, int], layout=None,
                     backend: Backend | None = None) -> Pattern | None:
        counts = {i: n for i, n in counts.items() if n > 0}
        if layout is None:
            layout = self.layout(c, counts, backend)
            if layout is None:
                return None
        val = sum(self.items[c][i].value * n for i, n in counts.items())
        return Pattern(c, tuple(sorted(counts.items())), tuple(layout), val)


# =====================================================================
# Conversions between concrete solutions and the aggregate
# =====================================================================
def option_of(problem: Problem, j: int, a: Assign) -> int:
    cpu = sum(v for _, v in a.cpu)
    mem = sum(v for _, v in a.mem)
    for o, opt in enumerate(problem.options[j]):
        if opt.cpu == cpu and opt.mem == mem:
            return o
    return 0


def solution_to_columns(agg: Aggregate, sol: Solution):
    """Per-server patterns (with the solution's own layout) and spread counts
    of a concrete solution.  Returns (patterns per server, x counts) or None
    pieces that do not map (dropped)."""
    p = agg.p
    per_server: dict[int, dict[int, int]] = {}
    lay: dict[int, list] = {}
    xcount: dict[tuple[int, int, int], int] = {}
    for j, a in sol.assign.items():
        t = agg.type_of[j]
        o = option_of(p, j, a)
        servers = sorted({s for s, _ in a.cpu} | {int(p.gpu_server[g]) for g, _ in a.gpus})
        if len(servers) == 1:
            s = servers[0]
            c = int(p.server_class[s])
            i = agg.item_index[c].get(("whole", t, o))
            if i is None:
                continue
            per_server.setdefault(s, {})
            per_server[s][i] = per_server[s].get(i, 0) + 1
            first = int(p.gpu_first[s])
            lay.setdefault(s, []).append((i, tuple(g - first for g, _ in a.gpus)))
        else:
            units = []
            ok = True
            for g, _ in a.gpus:
                s = int(p.gpu_server[g])
                c = int(p.server_class[s])
                i = agg.item_index[c].get(("unit", t, o))
                if i is None:
                    ok = False
                    break
                units.append((s, i, g - int(p.gpu_first[s])))
            if not ok:
                continue
            gid = agg.items[int(p.server_class[units[0][0]])][units[0][1]].group
            if any(agg.items[int(p.server_class[s])][i].group != gid for s, i, _ in units):
                continue
            for s, i, off in units:
                per_server.setdefault(s, {})
                per_server[s][i] = per_server[s].get(i, 0) + 1
                lay.setdefault(s, []).append((i, (off,)))
            xcount[(t, o, gid)] = xcount.get((t, o, gid), 0) + 1
    pats: dict[int, Pattern] = {}
    for s, counts in per_server.items():
        c = int(p.server_class[s])
        C, M, _ = agg.cap[c]
        items = agg.items[c]
        if (sum(items[i].cpu * n for i, n in counts.items()) > C
                or sum(items[i].mem * n for i, n in counts.items()) > M):
            return None  # rounding of spread shares: unusable as columns
        pats[s] = agg.make_pattern(c, counts, tuple(lay[s]))
    return pats, xcount


def decode(agg: Aggregate, z: dict[tuple[int, int], int], pool: list[list[Pattern]],
           x: dict[tuple[int, int, int], int]) -> dict[int, Assign]:
    """Concrete assignments from pattern counts ``z[(c, p)]`` and spread job
    counts ``x[(t, o, group)]``."""
    p = agg.p
    queue = {t.index: list(t.jobs) for t in agg.types}
    out: dict[int, Assign] = {}
    units: dict[tuple[int, int, int], list[tuple[int, int]]] = {}
    for c in range(agg.K):
        servers = iter(agg.classes[c])
        for pi in sorted(k for (cc, k) in z if cc == c):
            for _ in range(z[(c, pi)]):
                s = next(servers, None)
                if s is None:
                    raise ValueError("more patterns than servers")
                pat = pool[c][pi]
                first = int(p.gpu_first[s])
                for i, offs in pat.layout:
                    it = agg.items[c][i]
                    if it.kind == "unit":
                        units.setdefault((it.t, it.o, it.group), []).append((s, first + offs[0]))
                        continue
                    if not queue[it.t]:
                        continue
                    j = queue[it.t].pop(0)
                    if p.jobs[j].gpus == 0:
                        out[j] = p.make_cpu_assign(j, s, it.o)
                    else:
                        out[j] = p.make_assign(j, [first + k for k in offs], it.o)
    for (t, o, gid), n in sorted(x.items()):
        slots = sorted(units.get((t, o, gid), []))
        g = agg.types[t].gpus
        for r in range(n):
            if (r + 1) * g > len(slots) or not queue[t]:
                break
            j = queue[t].pop(0)
            out[j] = p.make_assign(j, [gg for _, gg in slots[r * g:(r + 1) * g]], o)
    return out


def check_assign(problem: Problem, assign: dict[int, Assign]) -> bool:
    """Capacities hold (CPU, memory per server; milli per GPU)."""
    cpu = problem.srv_cpu.copy()
    mem = problem.srv_mem.copy()
    gfree = np.full(problem.G, MILLI, dtype=np.int64)
    for a in assign.values():
        for s, v in a.cpu:
            cpu[s] -= v
        for s, v in a.mem:
            mem[s] -= v
        for g, m in a.gpus:
            gfree[g] -= m
    return bool((cpu >= 0).all() and (mem >= 0).all() and (gfree >= 0).all())


def true_value(problem: Problem, assign: dict[int, Assign]) -> float:
    """Objective value recomputed from the placement (as ``allocate`` does)."""
    from ...objectives import allocation_value
    pls = [problem.placement(j, a) for j, a in assign.items()]
    return float(allocation_value(problem.objective, problem.jobs, pls))


# =====================================================================
# Warm start: best registered heuristic (+ the improver)
# =====================================================================
WARM_HEURISTICS = ("proportional", "best-fit", "greedy-upgrade", "local-search")


def warm_start(problem: Problem, deadline: float, seed: int = 0,
               names: Sequence[str] = WARM_HEURISTICS):
    """Run the cheap heuristics; return (best assign, its value, all
    solutions, per-heuristic values)."""
    from ...solve import solvers
    reg = solvers()
    sols, values = [], {}
    best, best_v = {}, 0.0
    for name in names:
        if name not in reg or time.perf_counter() > deadline:
            continue
        kw = {}
        if name == "local-search":
            kw["start"] = best
        left = max(0.05, deadline - time.perf_counter())
        try:
            sol = reg[name].solve(problem, time_limit=left, seed=seed, **kw)
        except Exception:  # a heuristic failing must not sink the exact solver
            continue
        if not check_assign(problem, sol.assign):
            continue
        v = true_value(problem, sol.assign)
        values[name] = v
        sols.append(sol.assign)
        if v > best_v + 1e-12:
            best, best_v = dict(sol.assign), v
    return best, best_v, sols, values


# =====================================================================
# Bounds
# =====================================================================
def big_machine_bound(agg: Aggregate, extra_rows: Sequence[MasterRow] = ()) -> float | None:
    """LP of the problem with each class pooled into one machine (always a
    valid upper bound; spread GPUs use their exact fractional share)."""
    p = agg.p
    m = LinearModel("big-machine")
    type_rows: dict[int, dict[int, float]] = {t.index: {} for t in agg.types}
    link: dict[tuple[int, int, int], dict[int, float]] = {}
    for c in range(agg.K):
        C, M, G = agg.cap[c]
        n = agg.n_c[c]
        rc, rm, rg = {}, {}, {}
        for i, it in enumerate(agg.items[c]):
            t = agg.types[it.t]
            if it.kind == "whole":
                v = m.var(0, min(t.count, agg.item_ub(c, i) * n), integer=False)
                m.obj[v] = it.value
                type_rows[it.t][v] = 1
                rc[v], rm[v] = it.cpu, it.mem
                rg[v] = it.gpus + it.milli / MILLI
            else:
                v = m.var(0, t.count * t.gpus, integer=False)
                opt = t.options[it.o]
                rc[v], rm[v], rg[v] = opt.cpu / t.gpus, opt.mem / t.gpus, 1
                link.setdefault((it.t, it.o, it.group), {})[v] = -1
        m.add(rc, hi=C * n)
        m.add(rm, hi=M * n)
        m.add(rg, hi=G * n)
    for (t, o, gid, val) in agg.spread_vars:
        v = m.var(0, agg.types[t].count, integer=False)
        m.obj[v] = val
        type_rows[t][v] = 1
        row = link.setdefault((t, o, gid), {})
        row[v] = agg.types[t].gpus
    for t, row in type_rows.items():
        if row:
            m.add(row, hi=agg.types[t].count)
    for row in link.values():
        m.add(row, hi=0)
    # extra rows cannot be expressed on pooled items exactly; ignoring them
    # only loosens the bound.
    res = solve_lp(m)
    return None if res is None else res[0]


# =====================================================================
# Master problem and column generation
# =====================================================================
class Master:
    """The pattern master over a column pool."""

    def __init__(self, agg: Aggregate, extra_rows: Sequence[MasterRow] = ()):
        self.agg = agg
        self.pool: list[list[Pattern]] = [[] for _ in range(agg.K)]
        self.keys: list[set] = [set() for _ in range(agg.K)]
        self.extra = list(extra_rows)
        # residual capacities (the dive fixes patterns and shrinks them)
        self.n_cap = list(agg.n_c)
        self.t_cap = [t.count for t in agg.types]
        self.link_cap: dict[tuple[int, int, int], int] = {}

    def copies_ub(self, c: int, pat: Pattern) -> int:
        """Copies of ``pat`` the residual capacities admit."""
        ub = self.n_cap[c]
        for i, n in pat.counts:
            it = self.agg.items[c][i]
            if it.kind == "whole":
                ub = min(ub, self.t_cap[it.t] // n)
        return max(ub, 0)

    def add(self, pat: Pattern | None) -> bool:
        if pat is None:
            return False
        key = pat.counts
        if key in self.keys[pat.cls]:
            return False
        self.keys[pat.cls].add(key)
        self.pool[pat.cls].append(pat)
        return True

    @property
    def size(self) -> int:
        return sum(len(x) for x in self.pool)

    def build(self, integer: bool) -> tuple[LinearModel, dict, dict, dict]:
        agg = self.agg
        m = LinearModel("master")
        zv: dict[tuple[int, int], int] = {}
        xv: dict[tuple[int, int, int], int] = {}
        rows: dict[tuple, int] = {}
        type_row: dict[int, dict[int, float]] = {t.index: {} for t in agg.types}
        link: dict[tuple[int, int, int], dict[int, float]] = {}
        extra = [dict() for _ in self.extra]
        for c in range(agg.K):
            crow = {}
            for pi, pat in enumerate(self.pool[c]):
                # a pattern the residual jobs cannot fill is dropped; in the
                # LP other bounds are left to the rows (duals on variable
                # bounds would hide columns from the pricing, which only
                # knows the rows)
                ub = (self.n_cap[c] if integer else INF) if self.copies_ub(c, pat) else 0
                v = m.var(0, ub, integer, f"z{c}_{pi}")
                zv[(c, pi)] = v
                m.obj[v] = pat.value
                crow[v] = 1
                for i, n in pat.counts:
                    it = agg.items[c][i]
                    if it.kind == "whole":
                        type_row[it.t][v] = type_row[it.t].get(v, 0) + n
                    else:
                        r = link.setdefault((it.t, it.o, it.group), {})
                        r[v] = r.get(v, 0) - n
                    for e, row in zip(self.extra, extra):
                        coef = e.item_coef(c, it)
                        if coef:
                            row[v] = row.get(v, 0) + coef * n
            if crow:
                rows[("class", c)] = m.add(crow, hi=self.n_cap[c])
        for (t, o, gid, val) in agg.spread_vars:
            v = m.var(0, self.t_cap[t] if integer else INF, integer, f"x{t}_{o}_{gid}")
            xv[(t, o, gid)] = v
            m.obj[v] = val
            type_row[t][v] = 1
            link.setdefault((t, o, gid), {})[v] = agg.types[t].gpus
            for e, row in zip(self.extra, extra):
                coef = e.x_coef(t, o, gid)
                if coef:
                    row[v] = coef
        for t, row in type_row.items():
            if row:
                rows[("type", t)] = m.add(row, hi=self.t_cap[t])
        for key, row in link.items():
            rows[("link",) + key] = m.add(row, hi=self.link_cap.get(key, 0))
        for e, (ex, row) in enumerate(zip(self.extra, extra)):
            rows[("extra", e)] = m.add(row, lo=ex.lo, hi=ex.hi)
        return m, zv, xv, rows

    def pricing_model(self, c: int, duals: dict, min_coef: float = EPS):
        """Pricing problem of class ``c``: (model, item->var) or None when no
        item has a coefficient above ``min_coef``."""
        agg = self.agg
        m = LinearModel(f"pricing{c}")
        a = {}
        for i, it in enumerate(agg.items[c]):
            if it.kind == "whole":
                coef = it.value - duals.get(("type", it.t), 0.0)
            else:
                coef = duals.get(("link", it.t, it.o, it.group), 0.0)
            for e, ex in enumerate(self.extra):
                coef -= duals.get(("extra", e), 0.0) * ex.item_coef(c, it)
            ub = min(agg.item_ub(c, i), self.t_cap[it.t] * (1 if it.kind == "whole"
                                                              else agg.types[it.t].gpus))
            if coef > min_coef and ub > 0:
                v = m.var(0, ub, name=f"a{i}")
                a[i] = v
                m.obj[v] = coef
        if not a:
            return None, a
        m.obj_const = -duals.get(("class", c), 0.0)
        return m, a


@dataclass
class CGResult:
    lp: float | None = None
    bound: float | None = None       # Lagrangian bound (valid if agg.exact_units)
    rounds: int = 0
    converged: bool = False
    duals: dict = field(default_factory=dict)
    pricing_calls: int = 0
    primal: list = field(default_factory=list)   # LP values of the last round
    zv: dict = field(default_factory=dict)
    xv: dict = field(default_factory=dict)


def column_generation(master: Master, backend: Backend, deadline: float,
                      max_rounds: int = 10000) -> CGResult:
    agg = master.agg
    out = CGResult()
    while out.rounds < max_rounds:
        out.rounds += 1
        m, zv, xv, rows = master.build(integer=False)
        res = solve_lp(m)
        if res is None:
            break
        lp, primal, duals_list = res
        duals = {k: duals_list[r] for k, r in rows.items()}
        out.lp, out.duals = lp, duals
        out.primal, out.zv, out.xv = primal, zv, xv
        added, lag, lag_ok = 0, lp, True
        for c in range(agg.K):
            if time.perf_counter() > deadline:
                lag_ok = False
                break
            pm, a = master.pricing_model(c, duals)
            if pm is None:
                continue
            agg.server_rows(pm, c, a)
            left = deadline - time.perf_counter()
            r = backend.solve(pm, time_limit=max(0.05, min(left, 10.0)))
            out.pricing_calls += 1
            if r.bound is None:
                lag_ok = False
            else:
                lag += master.n_cap[c] * max(0.0, r.bound)
            if r.x is not None and (r.objective or 0) > 1e-6:
                counts = {i: int(round(r.x[v])) for i, v in a.items()}
                if master.add(agg.make_pattern(c, counts, backend=backend)):
                    added += 1
        if lag_ok and (out.bound is None or lag < out.bound):
            out.bound = lag
        if added == 0:
            out.converged = lag_ok
            break
        if time.perf_counter() > deadline:
            break
    return out


def solve_master_ip(master: Master, backend: Backend, time_limit: float, seed: int,
                    hint_z: dict | None = None, hint_x: dict | None = None):
    """Integer master over the pool: (status, z, x, value, bound)."""
    m, zv, xv, _ = master.build(integer=True)
    hint = None
    if hint_z is not None:
        hint = [0] * m.n
        for k, n in hint_z.items():
            if k in zv:
                hint[zv[k]] = n
        for k, n in (hint_x or {}).items():
            if k in xv:
                hint[xv[k]] = n
    res = backend.solve(m, time_limit=time_limit, hint=hint, seed=seed)
    if res.x is None:
        return res.status, None, None, None, res.bound, res.stats
    z = {k: int(round(res.x[v])) for k, v in zv.items() if round(res.x[v]) > 0}
    x = {k: int(round(res.x[v])) for k, v in xv.items() if round(res.x[v]) > 0}
    return res.status, z, x, res.objective, res.bound, res.stats


def hint_from(master: Master, cols) -> tuple[dict, dict]:
    """Pool indices of a converted heuristic solution."""
    pats, xcount = cols
    z: dict[tuple[int, int], int] = {}
    for s, pat in pats.items():
        c = pat.cls
        for pi, q in enumerate(master.pool[c]):
            if q.counts == pat.counts:
                z[(c, pi)] = z.get((c, pi), 0) + 1
                break
    return z, dict(xcount)


# =====================================================================
# The driver shared by the backends
# =====================================================================
def _decimal_step(values, max_digits: int = 6) -> Fraction | None:
    """Largest ``d = g / 10**k`` (``k <= max_digits``) with every value an
    integer multiple of ``d``; ``Fraction(0)`` when all values are 0; None when
    some value has more than ``max_digits`` decimals."""
    vals = [abs(float(v)) for v in values]
    for k in range(max_digits + 1):
        scale = 10 ** k
        ints = []
        for v in vals:
            x = v * scale
            r = round(x)
            if abs(x - r) > 1e-9 * max(1.0, x):
                break
            ints.append(int(r))
        else:
            g = 0
            for n in ints:
                g = math.gcd(g, n)
            return Fraction(g, scale)
    return None


def _gcd_fraction(a: Fraction, b: Fraction) -> Fraction:
    if a == 0:
        return b
    if b == 0:
        return a
    den = a.denominator * b.denominator // math.gcd(a.denominator, b.denominator)
    return Fraction(math.gcd(int(a * den), int(b * den)), den)


def objective_granularity(problem: Problem) -> float | None:
    """A step ``delta > 0`` such that the value of every solution is an
    integer multiple of ``delta`` (None when no such decimal step is found).

    A job's value is ``weight * base * speed * span * scale`` (throughput) or
    its milli-GPUs / 1 (``gpus`` / ``jobs``); a product of factors that are
    multiples of ``d_1, d_2, ...`` is a multiple of ``d_1 d_2 ...``, so each
    job's step is the product of the decimal steps of its possible factor
    values, and the problem's step is their gcd."""
    if problem.objective == "jobs":
        return 1.0
    step = Fraction(0)
    types = {s.gpu_type for s in problem.cluster.servers}
    for job in problem.jobs:
        if problem.objective == "gpus":
            js = Fraction(job.gpu_milli if job.elastic else job.gpus * job.gpu_milli)
        else:
            prof = job.profile
            factors = [[job.weight]]
            if prof is not None:
                base = [1.0]
                if prof.has_grid:
                    base += [v for row in prof.tput for v in row if v is not None]
                factors.append(base)
                factors.append([1.0] + [prof.speed(t) for t in types])
                if job.gpus > 1 or (job.elastic and job.gpus):
                    factors.append([1.0] + [prof.span_factor(lv)
                                            for lv in _span_levels(problem, job)])
            if job.elastic and job.gpus:
                lo = job.min_gpus or 1
                hi = job.max_gpus or job.gpus
                sc = []
                for n in range(max(1, lo), max(hi, job.gpus) + 1):
                    if prof is not None and n in prof.scaling and job.gpus in prof.scaling:
                        sc.append(float(prof.scaling[n]) / float(prof.scaling[job.gpus]))
                    else:
                        sc.append(n / job.gpus)
                factors.append(sc)
            js = Fraction(1)
            for f in factors:
                d = _decimal_step(f)
                if d is None:
                    return None
                js *= d
        step = _gcd_fraction(step, js)
    if step <= 0:
        return None
    return float(step)


def _span_levels(problem: Problem, job) -> list[str]:
    """Levels a multi-GPU job's GPUs can span (its locality level and the
    levels inside it; every level and ``cluster`` without locality)."""
    levels = list(problem.cluster.levels)
    if job.locality in levels:
        return levels[levels.index(job.locality):]
    return levels + ["cluster"]


def tighten(bound: float | None, delta: float | None) -> float | None:
    """Every solution value is a multiple of ``delta``: the bound rounds down
    to one (a small tolerance keeps float noise from cutting a real value)."""
    if bound is None or not delta:
        return bound
    q = bound / delta
    return math.floor(q + 1e-4 + 1e-9 * abs(q)) * delta


def solve_exact(problem: Problem, backend: Backend, *, time_limit: float | None = None,
                seed: int = 0, extra_rows: Sequence[MasterRow] = (),
                warm_share: float = 0.15, cg_share: float = 0.45, **options) -> Solution:
    """Warm start, bounds, column generation, integer master, decode, proof."""
    t0 = time.perf_counter()
    limit = 60.0 if time_limit is None else max(0.01, float(time_limit))
    deadline = t0 + limit
    stats: dict = {"backend": backend.name}

    def left() -> float:
        return deadline - time.perf_counter()

    # 1. warm start ---------------------------------------------------------
    best, best_v, heur_sols, hv = warm_start(problem, t0 + max(0.02, warm_share * limit), seed)
    stats["warm_start"] = best_v
    stats["t_warm"] = time.perf_counter() - t0
    stats["heuristics"] = hv
    best_src = "warm start"
    if problem.J == 0:
        return Solution({}, Status.OPTIMAL, 0.0, (), stats)

    # 2. aggregate + big machine bound --------------------------------------
    agg = Aggregate(problem)
    stats.update(types=len(agg.types), classes=agg.K,
                 items=sum(len(x) for x in agg.items), exact_units=agg.exact_units)
    # always computed (cheap), even past the deadline: the reported bound
    bounds = [sum(problem.upper_coef(j) for j in range(problem.J))]
    bm = big_machine_bound(agg, extra_rows)
    if bm is not None:
        stats["lp_bound"] = bm
        bounds.append(bm)
    bound = min(bounds) if bounds else None
    delta = objective_granularity(problem)
    stats["objective_step"] = delta

    def done(value: float, bnd: float | None) -> bool:
        if bnd is None:
            return False
        return value >= tighten(bnd, delta) - 1e-6 * max(1.0, abs(bnd))

    # 3. master seeded with heuristic columns -------------------------------
    master = Master(agg, extra_rows)

    def seed_columns(sol):
        """Add the patterns of a solution to the master; returns its columns."""
        cols = solution_to_columns(agg, Solution(sol))
        if cols is not None:
            for pat in cols[0].values():
                master.add(pat)
        return cols

    for sol in heur_sols:
        seed_columns(sol)
    warm_cols = seed_columns(best) if best else None

    def offer(z, pool, x, src: str, value_key: str | None = None,
              error_key: str = "decode_error") -> None:
        """Decode a master solution; keep it when valid and better."""
        nonlocal best, best_v, best_src
        cand = decode(agg, z, pool, x)
        if not check_assign(problem, cand):
            stats[error_key] = True
            return
        v = true_value(problem, cand)
        if value_key:
            stats[value_key] = v
        if v > best_v + 1e-9:
            best, best_v, best_src = cand, v, src

    # 4. column generation ---------------------------------------------------
    if not done(best_v, bound) and left() > 0.05:
        cg = column_generation(master, backend, t0 + (warm_share + cg_share) * limit)
        stats["t_cg"] = time.perf_counter() - t0
        stats.update(cg_rounds=cg.rounds, cg_converged=cg.converged, cg_lp=cg.lp,
                     columns=master.size, pricing_calls=cg.pricing_calls)
        if cg.bound is not None and agg.exact_units and not extra_rows_unbounded(extra_rows):
            stats["cg_bound"] = cg.bound
            bounds.append(cg.bound)
    else:
        cg = CGResult()
    bound = min(bounds) if bounds else None

    # 5. integer master -----------------------------------------------------
    if not done(best_v, bound) and left() > 0.05 and master.size:
        hz, hx = hint_from(master, warm_cols) if warm_cols else (None, None)
        # converged: a short run (the enumeration below is the proof engine)
        budget = min(0.4 * left(), 0.1 * limit) if cg.converged else 0.9 * left()
        st, z, x, obj, ipb, ipstats = solve_master_ip(master, backend, max(0.05, budget),
                                                     seed, hz, hx)
        stats["master_status"] = st
        stats.update({f"master_{k}": v for k, v in ipstats.items()})
        if z is not None:
            offer(z, master.pool, x, "master", "master_value")
        stats["t_master"] = time.perf_counter() - t0
        # 6. reduced-cost enumeration with descending targets (the proof)
        if not done(best_v, bound) and cg.converged and left() > 0.1:
            best_cols = seed_columns(best)
            z2, x2, val2, pool2, enum_bound = enumerate_and_solve(
                agg, master, backend, cg, best_v, deadline - 0.15 * limit, seed, stats,
                hint=best_cols, delta=delta, top=tighten(bound, delta),
                ip_deadline=deadline - 0.05 * limit)
            stats["t_enum"] = time.perf_counter() - t0
            if z2 is not None:
                offer(z2, pool2, x2, "enumeration")
            if enum_bound is not None and agg.exact_units:
                # no solution is better than the enumerated masters allow
                bounds.append(max(enum_bound, best_v))
                bound = min(bounds)
        # 7. price-and-dive towards the (rounded) bound
        if cg.lp is not None and not done(best_v, bound) and left() > 0.1 and not master.extra:
            target = best_v + (delta or 1e-6 * max(1.0, abs(best_v)))
            dv = dive(master, backend, time.perf_counter() + 0.5 * left(),
                      target, delta, stats, goal=tighten(bound, delta), width=2)
            stats["t_dive"] = time.perf_counter() - t0
            if dv is not None:
                stats["dive_value"] = dv.value
                offer(dv.z, master.pool, dv.x, "dive", "dive_true", "dive_decode_error")
    bound = min(bounds) if bounds else None
    if left() > 0.05 and not done(best_v, bound):
        best, best_v, best_src = polish(problem, best, best_v, best_src, deadline,
                                        0.5 * left(), seed)

    if bound is not None:
        bound = max(tighten(bound, delta), best_v) if done(best_v, bound) else tighten(bound, delta)
    status = Status.OPTIMAL if done(best_v, bound) else Status.FEASIBLE
    stats["source"] = best_src
    stats["time_s"] = time.perf_counter() - t0
    if bound is not None:
        stats["gap"] = max(0.0, (bound - best_v) / max(abs(bound), 1e-9))
    return Solution(best, status, bound, (), stats)


def polish(problem, best, best_v, src, deadline, budget, seed):
    """Local search from the best solution; keeps it unless strictly better."""
    from ..heuristics.improve import local_search
    pol = local_search(problem, best, deadline=min(deadline, time.perf_counter() + budget),
                       seed=seed)
    if check_assign(problem, pol):
        v = true_value(problem, pol)
        if v > best_v + 1e-9:
            return pol, v, "polish"
    return best, best_v, src


def extra_rows_unbounded(extra_rows) -> bool:
    return False


def enumerate_patterns(agg: Aggregate, master: Master, c: int, duals: dict, gap: float,
                       deadline: float, limit: int):
    """Every item multiset of class ``c`` within the CPU, memory and GPU
    capacity whose reduced cost is ``>= -gap`` (depth-first search with a
    fractional-knapsack bound).  Returns (list of count dicts, complete)."""
    items = agg.items[c]
    C, M, G = agg.cap[c]
    caps = (C, M, G * MILLI)
    coef = []
    for i, it in enumerate(items):
        if it.kind == "whole":
            v = it.value - duals.get(("type", it.t), 0.0)
        else:
            v = duals.get(("link", it.t, it.o, it.group), 0.0)
        for e, ex in enumerate(master.extra):
            v -= duals.get(("extra", e), 0.0) * ex.item_coef(c, it)
        coef.append(v)
    order = [i for i in sorted(range(len(items)), key=lambda i: (-coef[i], i))
             if agg.item_ub(c, i) > 0]
    size = [(items[i].cpu, items[i].mem, items[i].gpus * MILLI + items[i].milli) for i in order]
    cf = [coef[i] for i in order]
    ub = [agg.item_ub(c, i) for i in order]
    n = len(order)
    base = -duals.get(("class", c), 0.0)
    floor_ = -gap
    out: list[dict[int, int]] = []
    state = {"complete": True, "nodes": 0}
    counts = [0] * n

    # suffix data for an O(1) optimistic bound: the positive items left,
    # their total at the upper bounds and their best value per unit of
    # each resource (items are sorted by coefficient, so the positive ones
    # come first)
    npos = sum(1 for v in cf if v > 0)
    suf_tot = [0.0] * (n + 1)
    suf_ratio = [[0.0, 0.0, 0.0] for _ in range(n + 1)]
    for q in range(npos - 1, -1, -1):
        suf_tot[q] = suf_tot[q + 1] + cf[q] * ub[q]
        r_next = suf_ratio[q + 1]
        suf_ratio[q] = [max(r_next[r], cf[q] / size[q][r]) if size[q][r] else INF
                        for r in range(3)]
    for q in range(npos, n + 1):
        suf_tot[q] = 0.0

    def optimistic(k: int, rem) -> float:
        if k >= npos:
            return 0.0
        ratio = suf_ratio[k]
        return min(suf_tot[k], ratio[0] * rem[0], ratio[1] * rem[1], ratio[2] * rem[2])

    lim = floor_ - 1e-9

    def dfs(k: int, val: float, rem):
        if not state["complete"]:
            return
        state["nodes"] += 1
        if state["nodes"] % 4096 == 0 and time.perf_counter() > deadline:
            state["complete"] = False
            return
        if k == n:
            out.append({order[q]: counts[q] for q in range(n) if counts[q]})
            if len(out) > limit:
                state["complete"] = False
            return
        sz = size[k]
        top = ub[k]
        for r in range(3):
            if sz[r]:
                top = min(top, rem[r] // sz[r])
        c_k = cf[k]
        if c_k <= 0:
            # only non-positive items are left: more copies only lower the value
            for a in range(0, top + 1):
                v = val + c_k * a
                if v < lim:
                    break
                counts[k] = a
                dfs(k + 1, v, (rem[0] - a * sz[0], rem[1] - a * sz[1], rem[2] - a * sz[2]))
                if not state["complete"]:
                    break
            counts[k] = 0
            return
        for a in range(top, -1, -1):
            r2 = (rem[0] - a * sz[0], rem[1] - a * sz[1], rem[2] - a * sz[2])
            v = val + c_k * a
            if v + optimistic(k + 1, r2) < lim:
                continue
            counts[k] = a
            dfs(k + 1, v, r2)
            if not state["complete"]:
                break
        counts[k] = 0

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * n + 100))
    try:
        dfs(0, base, caps)
    finally:
        sys.setrecursionlimit(old)
    return out, state["complete"]


def enumerate_and_solve(agg: Aggregate, master: Master, backend: Backend, cg: CGResult,
                        incumbent: float, deadline: float, seed: int, stats: dict,
                        limit: int = 20000, keep: int = 3000, hint=None,
                        delta: float | None = None, top: float | None = None,
                        ip_deadline: float | None = None):
    """Reduced-cost enumeration with descending targets.

    For a target ``T``, every pattern of a solution worth ``>= T`` has
    reduced cost ``>= T - LP`` (LP duals of a converged column generation),
    so the master over the enumerated patterns (plus the pool) contains every
    such solution: if its optimum ``V`` is ``>= T`` it is the optimum; if it
    is below ``T`` nothing reaches ``T`` and ``T - delta`` bounds the
    optimum.  Targets start at ``top`` (the bound rounded to the objective
    step ``delta``) and go down by ``delta``, ``2 delta``, ``4 delta``, ...
    (a feasible round is the optimum, an infeasible one lowers the bound)
    until the incumbent is reached (a single target ``incumbent + epsilon``
    without a step).

    Returns (z, x, value, pool, bound): the best master solution over the
    pool ``pool`` (None when none was solved) and the proven bound (None when
    no target was settled).  When an enumeration is cut short the ``keep``
    best patterns by reduced cost still enrich the pool (price-and-branch)."""
    # value(z) <= y.b + sum_{rc<0} rc_p z_p + sum_c n_c max(0, rc*_c): the
    # Lagrangian bound is the reference (equal to the LP at convergence)
    lp = cg.bound if cg.bound is not None else (cg.lp or 0.0)
    tol = 1e-6 * max(1.0, abs(incumbent))
    if delta:
        T = top if top is not None else tighten(lp, delta)
        T = min(T, tighten(lp, delta))
    else:
        T = incumbent + tol
    best_z = best_x = best_pool = None
    best_val = incumbent
    step = delta or 0.0
    proven_bound = None
    rounds = 0
    while T > best_val + 0.5 * (delta or tol) and time.perf_counter() < deadline - 0.05:
        rounds += 1
        gap = max(lp - T, 0.0) + tol
        complete_all = True
        sub = Master(agg, master.extra)
        for c in range(agg.K):
            for pat in master.pool[c]:
                if sum(_coef(agg, master, c, cg.duals, i) * n for i, n in pat.counts) \
                        - cg.duals.get(("class", c), 0.0) >= -gap:
                    sub.add(pat)
        n_enum = 0
        for c in range(agg.K):
            left = deadline - time.perf_counter()
            if left < 0.05:
                return _enum_out(best_z, best_x, best_val, master, proven_bound, stats, rounds,
                                 best_pool)
            pats, complete = enumerate_patterns(agg, master, c, cg.duals, gap,
                                                time.perf_counter() + 0.4 * left / (agg.K - c),
                                                limit)
            n_enum += len(pats)
            complete_all &= complete
            if not complete:
                def rc(counts):
                    return sum(_coef(agg, master, c, cg.duals, i) * n for i, n in counts.items())
                pats = sorted(pats, key=lambda d: -rc(d))[:keep]
            for counts in pats:
                if not counts:
                    continue
                key = tuple(sorted(counts.items()))
                if key in sub.keys[c]:
                    continue
                if key in master.keys[c]:
                    pat = next(q for q in master.pool[c] if q.counts == key)
                else:
                    pat = agg.make_pattern(c, counts, backend=backend)
                    if pat is None:    # resources fit but GPUs do not
                        continue
                    master.add(pat)
                sub.add(pat)
        stats["enumerated"] = stats.get("enumerated", 0) + n_enum
        stats["enumeration"] = "complete" if complete_all else "incomplete"
        stats["columns"] = master.size
        left = deadline - time.perf_counter()
        if left < 0.05:
            break
        t_ip = time.perf_counter()
        if ip_deadline is not None:
            left = max(left, ip_deadline - t_ip)
        if not complete_all:
            # no proof possible: the master over the enriched pool, for a
            # better solution (price-and-branch)
            hz, hx = hint_from(master, hint) if hint else (None, None)
            st, z, x, obj, _, _ = solve_master_ip(master, backend, left, seed, hz, hx)
            stats["enum_master_status"] = st
            if z is not None and obj > best_val + 1e-9:
                best_z, best_x, best_val, best_pool = z, x, obj, master.pool
                stats["enum_value"] = obj
            break
        st, z, x, obj = solve_target_ip(sub, backend, cg.duals, lp, T - tol, left, seed)
        stats["enum_master_status"] = st
        stats.setdefault("enum_log", []).append(
            (round(T, 9), sub.size, st, round(time.perf_counter() - t_ip, 3)))
        stats["enum_rounds"] = rounds
        if z is not None:
            if obj > best_val + 1e-9:
                best_z, best_x, best_val, best_pool = z, x, obj, sub.pool
                stats["enum_value"] = obj
            if complete_all and st == "optimal":
                proven_bound = obj          # every solution >= T is in sub: the optimum
            break
        if not (complete_all and st == "infeasible"):
            break                           # out of time or incomplete: no proof
        # nothing reaches T: T - delta bounds the optimum
        if not delta:
            proven_bound = max(T, best_val)
            break
        proven_bound = T - delta
        if proven_bound <= best_val + 0.5 * delta:
            proven_bound = max(proven_bound, best_val)
            break
        # geometric steps: a feasible round is the optimum, so overshooting
        # costs one larger enumeration, not a wrong answer
        T = max(tighten(T - step, delta), best_val + delta)
        step *= 2
    return _enum_out(best_z, best_x, best_val, master, proven_bound, stats, rounds, best_pool)


def solve_target_ip(sub: Master, backend: Backend, duals: dict, lp: float, target: float,
                    time_limit: float, seed: int):
    """The master over ``sub`` restricted to solutions worth ``>= target``,
    with reduced-cost tightening from the LP duals ``duals`` (optimum
    ``lp``): for any solution, ``value = y.(A z) + sum_v rc_v z_v <= lp -
    y.slack + sum_v rc_v z_v``, so a solution worth ``>= target`` has
    ``z_v <= gap / -rc_v`` for ``rc_v < 0`` and ``slack_r <= gap / y_r`` for
    ``y_r > 0`` (``gap = lp - target``).  Returns (status, z, x, value)."""
    m, zv, xv, rows = sub.build(integer=True)
    gap = max(lp - target, 0.0) + 1e-9 * max(1.0, abs(lp))
    y = [0.0] * len(m.rows)
    for key, r in rows.items():
        y[r] = duals.get(key, 0.0)
    rc = dict(m.obj)
    for r, (coefs, lo, hi) in enumerate(m.rows):
        if y[r]:
            for v, a in coefs.items():
                rc[v] = rc.get(v, 0.0) - y[r] * a
    for v, r_ in rc.items():
        if r_ < -1e-12 and m.ub[v] < INF:
            m.ub[v] = min(m.ub[v], math.floor(gap / -r_ + 1e-9))
    for key, r in rows.items():
        coefs, lo, hi = m.rows[r]
        if key[0] != "extra" and y[r] > 1e-12 and hi < INF:
            m.rows[r] = (coefs, max(lo, hi - math.floor(gap / y[r] + 1e-9)), hi)
    m.add(dict(m.obj), lo=target - m.obj_const)
    res = backend.solve(m, time_limit=time_limit, seed=seed)
    if res.x is None:
        return res.status, None, None, None
    z = {k: int(round(res.x[v])) for k, v in zv.items() if round(res.x[v]) > 0}
    x = {k: int(round(res.x[v])) for k, v in xv.items() if round(res.x[v]) > 0}
    return res.status, z, x, res.objective


def _enum_out(z, x, val, master, bound, stats, rounds, pool=None):
    stats["enum_rounds"] = rounds
    if bound is not None:
        stats["enum_bound"] = bound
    return z, x, val, pool, bound


def _coef(agg: Aggregate, master: Master, c: int, duals: dict, i: int) -> float:
    it = agg.items[c][i]
    if it.kind == "whole":
        v = it.value - duals.get(("type", it.t), 0.0)
    else:
        v = duals.get(("link", it.t, it.o, it.group), 0.0)
    for e, ex in enumerate(master.extra):
        v -= duals.get(("extra", e), 0.0) * ex.item_coef(c, it)
    return v



# =====================================================================
# Diving column generation (price-and-dive primal heuristic)
# =====================================================================
@dataclass
class DiveResult:
    z: dict                 # (c, pool index) -> copies
    x: dict                 # (t, o, group) -> spread jobs
    value: float            # master value of (z, x)
    steps: int = 0
    complete: bool = False  # every LP column integral at the end


def dive(master: Master, backend: Backend, deadline: float, target: float | None = None,
         delta: float | None = None, stats: dict | None = None, goal: float | None = None,
         width: int = 3) -> DiveResult | None:
    """Price-and-dive with backtracking: solve the restricted LP by column
    generation, fix (round up) one copy of a pattern the LP uses, shrink the
    residual problem (servers per class, jobs per type, unit slots per spread
    group) and repeat until the LP is integral.

    The children of a node fix one copy of each of its ``width`` patterns
    with the largest LP values (depth first, largest first).  A node whose
    LP bound, rounded down to the objective step ``delta``, is below
    ``target`` (raised to the best dive value plus ``delta`` as solutions are
    found) is cut off.  The search stops at the deadline or when a solution
    reaches ``goal`` (the rounded bound: nothing better exists).  New columns
    stay in the pool (they help the integer master); the residual capacities
    are restored.  Returns the best integral LP solution found."""
    agg = master.agg
    saved = (list(master.n_cap), list(master.t_cap), dict(master.link_cap))
    spread_value = {(t, o, g): v for (t, o, g, v) in agg.spread_vars}
    state = {"best": None, "target": target, "nodes": 0, "stop": False}

    def tol(v: float) -> float:
        return 1e-9 * max(1.0, abs(v))

    def apply(c: int, pi: int, n: int):
        pat = master.pool[c][pi]
        master.n_cap[c] -= n
        for i, q in pat.counts:
            it = agg.items[c][i]
            if it.kind == "whole":
                master.t_cap[it.t] -= n * q
            else:
                key = (it.t, it.o, it.group)
                master.link_cap[key] = master.link_cap.get(key, 0) + n * q

    def node(fixed: dict, fixed_value: float):
        if state["stop"] or time.perf_counter() > deadline:
            state["stop"] = True
            return
        state["nodes"] += 1
        cg = column_generation(master, backend, deadline)
        if cg.lp is None or not cg.primal:
            return
        total = fixed_value + cg.lp
        tgt = state["target"]
        if tgt is not None and tighten(total, delta) < tgt - tol(tgt):
            return
        zs = {k: cg.primal[v] for k, v in cg.zv.items() if cg.primal[v] > 1e-6}
        frac = {k: v for k, v in zs.items() if abs(v - round(v)) > 1e-6}
        if not frac:
            z = dict(fixed)
            for k, v in zs.items():
                z[k] = z.get(k, 0) + int(round(v))
            x = {k: int(math.floor(cg.primal[v] + 1e-6)) for k, v in cg.xv.items()
                 if cg.primal[v] > 1e-6}
            x = {k: n for k, n in x.items() if n > 0}
            val = sum(master.pool[c][pi].value * n for (c, pi), n in z.items())
            val += sum(spread_value[k] * n for k, n in x.items())
            if state["best"] is None or val > state["best"].value + tol(val):
                state["best"] = DiveResult(z, x, val, state["nodes"], True)
                step = delta or 1e-6 * max(1.0, abs(val))
                state["target"] = max(tgt if tgt is not None else -INF, val + step)
                if goal is not None and val >= goal - 1e-6 * max(1.0, abs(goal)):
                    state["stop"] = True
            return
        order = sorted(zs, key=lambda k: (-zs[k], k))[:width]
        snap = (list(master.n_cap), list(master.t_cap), dict(master.link_cap))
        for (c, pi) in order:
            if state["stop"]:
                return
            pat = master.pool[c][pi]
            if master.copies_ub(c, pat) <= 0:
                continue
            apply(c, pi, 1)
            f2 = dict(fixed)
            f2[(c, pi)] = f2.get((c, pi), 0) + 1
            node(f2, fixed_value + pat.value)
            master.n_cap, master.t_cap, master.link_cap = (list(snap[0]), list(snap[1]),
                                                           dict(snap[2]))

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * sum(agg.n_c) + 200))
    try:
        node({}, 0.0)
    finally:
        sys.setrecursionlimit(old)
        master.n_cap, master.t_cap, master.link_cap = saved
    if stats is not None:
        stats["dive_nodes"] = stats.get("dive_nodes", 0) + state["nodes"]
    return state["best"]
