"""Aggregation: server classes, job types, items and spread groups.

Server classes survive live state: a server is described by what the running
jobs leave of it -- free CPU, free memory and the free milli of each GPU --
in a *canonical* GPU order (sockets, then switches inside them, sorted by the
free capacity they hold; GPUs by free milli), so servers that differ only in
where their running jobs sit fall in one class.  ``perm[s][k]`` maps canonical
offset ``k`` to server s's local GPU.  A GPU is *full* (1000 milli free:
usable by whole-GPU items and shared ones), *partial* (shared items only, up
to its free milli) or used up.

Job types are the pending jobs grouped by
[`alloc.problem.job_type_key`][alloc.problem.job_type_key].
An *item* of class ``c`` is either a *whole* item ``(t, o)`` -- one job of type
``t`` at option ``o`` on one server -- or a *unit* item -- one GPU of a job of a
spreadable type (whole GPUs, ``g_t >= 2``, no locality or one at a level above
the servers) with ``ceil(cpu_o / g_t)`` CPU and ``ceil(mem_o / g_t)`` memory on
that server.  Spread jobs are counted per spread *group*: the classes of one
domain of a level above the servers, or all allowed classes.

*Modes.*  A spreadable type spreads within one domain of its locality level
(or over the cluster).  When the level it spans matters -- the job prefers a
level (``Job.preferred``), or its profile's span factors differ between the
levels above the servers -- it has one *mode* per level it may span, from
its preferred level (or the innermost level above the servers) up to its
locality level or the cluster: mode ``l``'s groups are the domains of ``l``,
its units are items of their own (``Item.mode``), and a job spread in mode
``l`` is worth its best coefficient times the span factor of ``l``, less
``w * climb(P, l)`` for a preferred level ``P`` (`alloc.topology.climb`;
``w`` = `alloc.topology.preferred_weight`, below the objective's step over
the most levels all preferred jobs can climb).  A whole item of a job
preferring a level inside the server is charged ``w`` times the levels from
it up to the server.  Classes then keep servers of different domains of the
innermost level the modes use apart.  A job whose locality domains are
large beside it (`RELAX_FACTOR`) has its units pooled over the cluster and
is cut inside one domain when decoded (a relaxation, so the bound holds).
With more than `MODE_DOMAINS` domains
at that level the model is *coarse*: one mode per type, at its top level,
worth the best span factor it may reach there and charged the most levels
it may climb -- a relaxation of the objective the bound still covers.

The build looks at its deadline once per server class (and every 256
servers): on 256 servers with 2,000 jobs it makes 768,647 items in about
ten seconds, so under a short time limit it stops with `OutOfTime` and the
driver answers with what it has.  Classes and types come first and cost
little; `Aggregate.item_estimate` then says how many items the rest would
make (about `SECONDS_PER_ITEM` each), so the driver can leave a model it
cannot build in time to the heuristics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arrays import outer_levels
from ...deadline import Deadline
from ...model import CLUSTER, MILLI
from ...problem import Problem, job_types
from ...topology import climb, is_outer, preferred_weight, reachable_levels

INNER = ("switch", "socket")
#: seconds one item costs to build (768,647 items in 6 to 11 s on a loaded
#: two-core machine)
SECONDS_PER_ITEM = 1.2e-5


#: The most domains of the innermost level the modes use for a mode per
#: level: beyond, each job has one mode, at its locality level or the
#: cluster, worth its best span factor there and charged the most levels it
#: may climb (the bound holds; compaction then lowers the levels climbed).
MODE_DOMAINS = 32

#: A spread job whose locality domains all hold this many times its GPUs
#: has its units pooled over the cluster (`Aggregate.relaxed`).
RELAX_FACTOR = 8

#: The carry's key for the servers' canonical GPU orders (`Aggregate._shapes`).
SHAPES = "exact: canonical GPU orders"


class OutOfTime(Exception):
    """The deadline passed while the aggregate was being built."""


@dataclass
class JobType:
    """Interchangeable pending jobs (decode order: rank)."""
    index: int
    jobs: list[int]
    gpus: int
    milli: int
    locality: str | None
    options: tuple
    classes: tuple[int, ...]
    spreadable: bool
    rep: int
    #: levels it may spread within (modes), innermost first: levels above
    #: the servers or ``"cluster"``
    modes: tuple[str, ...] = (CLUSTER,)
    preferred: str | None = None
    #: its locality level when the model pools its units over the cluster
    #: (`Aggregate.relaxed`; decoding keeps each job in one domain)
    relaxed: str | None = None

    @property
    def count(self) -> int:
        """Number of jobs of the type."""
        return len(self.jobs)


@dataclass(frozen=True)
class Item:
    """One job (whole) or one GPU of a spread job (unit) on a server of a class."""
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
    mode: int = 0    # index of a unit's mode in its type's modes

    @property
    def key(self) -> tuple:
        """The item's identity in its class: (kind, type, option), and the
        mode of a unit beyond its type's first."""
        return (self.kind, self.t, self.o) if not self.mode else (self.kind, self.t, self.o,
                                                                  self.mode)


@dataclass
class Pattern:
    """Items that fit one server of class ``cls`` with their GPU offsets."""
    cls: int
    counts: tuple[tuple[int, int], ...]              # (item index in class, count)
    layout: tuple[tuple[int, tuple[int, ...]], ...]  # (item index, canonical GPU offsets)
    value: float


def canonical_gpus(problem: Problem, s: int) -> tuple[list[int], tuple]:
    """Server s's local GPUs in canonical order, and the shape key (free milli
    per canonical GPU, its switch and socket ids) that defines the class."""
    srv = problem.cluster.servers[s]
    first = int(problem.gpu_first[s])
    free = [int(problem.gpu_free[first + k]) for k in range(srv.gpus)]
    lv = problem.levels
    so = [srv.gpu_domain(k, "socket") if "socket" in lv else "" for k in range(srv.gpus)]
    sw = [srv.gpu_domain(k, "switch") if "switch" in lv else so[k] for k in range(srv.gpus)]
    sw_sig: dict[str, list] = {}
    for k in range(srv.gpus):
        sw_sig.setdefault(sw[k], []).append(free[k])
    sw_key = {d: tuple(sorted(v, reverse=True)) for d, v in sw_sig.items()}
    so_sw: dict[str, dict] = {}
    for k in range(srv.gpus):
        so_sw.setdefault(so[k], {})[sw[k]] = sw_key[sw[k]]
    so_key = {d: tuple(sorted(v.values())) for d, v in so_sw.items()}
    order = sorted(range(srv.gpus), key=lambda k: (so_key[so[k]], so[k], sw_key[sw[k]], sw[k],
                                                    -free[k], k))
    so_id: dict[str, int] = {}
    sw_id: dict[str, int] = {}
    shape = tuple((free[k], so_id.setdefault(so[k], len(so_id)), sw_id.setdefault(sw[k], len(sw_id)))
                  for k in order)
    return order, shape


class Aggregate:
    """Job types, server classes, items and spread groups of a problem."""

    def __init__(self, problem: Problem, deadline: Deadline, items: bool = True):
        self.p = problem
        self.deadline = deadline
        self._plan_modes()
        self._build_classes()
        self._tick()
        self._build_types()
        self._tick()
        if items:
            self._build_items()

    # ---------------------------------------------------------------- modes
    def _plan_modes(self) -> None:
        """Each pending job's modes (see the module notes), the weight of a
        level climbed, and the innermost level the modes use."""
        p = self.p
        outer = list(reversed(outer_levels(p.levels)))        # innermost first
        self.pref_weight = 0.0
        self.pref_slack = 0.0
        self.coarse = False
        self._modes: dict[tuple, tuple[str, ...]] = {}
        self._least: dict[str, int] = {}
        used = self._used_levels(outer)
        lv = next((x for x in outer if x in used), None)
        if lv is not None and int(p.arrays.srv_domain[lv].max()) + 1 > MODE_DOMAINS:
            # too many domains for a mode per level: one mode per job, at its top
            self.coarse = True
            self._modes.clear()
            used = self._used_levels(outer)
        climbs = []
        for j in p.pending:
            job = p.jobs[j]
            if job.preferred is not None and job.gpus >= 2:
                m = self.modes_of(job, outer)
                top = m[-1] if self._spreads(job) else "server"
                climbs.append(climb(p.cluster, job.preferred, top))
        if any(climbs):
            step = p.objective.step(p.cluster, [p.jobs[j] for j in p.pending])
            self.pref_weight = preferred_weight(step, len(climbs), max(climbs))
            self.pref_slack = self.pref_weight * sum(climbs)
        #: the innermost level above the servers the modes use (None: none)
        self.place_level = next((lv for lv in outer if lv in used), None)

    def relaxed(self, job) -> bool:
        """A spread job whose locality is a level above the servers every
        domain of which holds at least `RELAX_FACTOR` times its GPUs: the
        model pools its units over the cluster (a relaxation: the bound
        holds) and decoding cuts each job inside one domain (a domain loses
        fewer than its GPUs' worth of units)."""
        loc = job.locality
        if not is_outer(loc) or job.gpus < 2 or job.gpu_milli < MILLI:
            return False
        least = self._least.get(loc)
        if least is None:
            arr = self.p.arrays
            tot = np.bincount(arr.srv_domain[loc], weights=self.p.srv_gpus)
            least = self._least[loc] = int(tot.min()) if len(tot) else 0
        return least >= RELAX_FACTOR * job.gpus

    def _used_levels(self, outer: list[str]) -> set[str]:
        """The levels above the servers the pending jobs' modes use."""
        used: set[str] = set()
        for j in self.p.pending:
            m = self.modes_of(self.p.jobs[j], outer)
            if len(m) > 1 or m[0] != CLUSTER:
                used.update(x for x in m if x != CLUSTER)
        return used

    @staticmethod
    def _spreads(job) -> bool:
        return job.gpus >= 2 and job.gpu_milli == MILLI and \
            (job.locality is None or is_outer(job.locality))

    def modes_of(self, job, outer: list[str] | None = None) -> tuple[str, ...]:
        """The levels a spreadable job may spread within (its modes),
        innermost first."""
        p = self.p
        if outer is None:
            outer = list(reversed(outer_levels(p.levels)))
        relaxed = self.relaxed(job)
        key = (job.locality, job.preferred, id(job.profile), relaxed)
        hit = self._modes.get(key)
        if hit is not None:
            return hit
        if relaxed:
            single: tuple[str, ...] = (CLUSTER,)
            self._modes[key] = single
            return single
        top = job.locality if is_outer(job.locality) else CLUSTER
        chain = (outer[:outer.index(top) + 1] if top in outer else outer + [CLUSTER]) \
            if outer else [CLUSTER]
        prof = job.profile
        spans = "span" in p.objective.factors and prof is not None and \
            len({prof.span_factor(lv) for lv in chain}) > 1
        pref = job.preferred
        if self.coarse:
            modes = [top]         # charged the most levels it may climb (`penalty`)
        elif spans:
            modes = chain
        elif pref is not None and any(climb(p.cluster, pref, lv) != climb(p.cluster, pref, top)
                                      for lv in chain):
            first = pref if pref in chain else chain[0]
            modes = chain[chain.index(first):]
        else:
            modes = [top]
        out = self._modes[key] = tuple(modes)
        return out

    @property
    def item_estimate(self) -> int:
        """Items the build would make (`estimate_items` without a cap)."""
        return self.estimate_items()

    def estimate_items(self, cap: float = float("inf")) -> int:
        """Items the build would make: every type's options whose CPU and
        memory fit a server of a class it may use (a whole item also needs
        the class's GPUs to fit it, `_gpu_fit`; a unit item one free GPU and
        only its per-GPU share) -- the tests `_build_items` makes, on arrays,
        without building the items.  The count stops once it passes ``cap``."""
        cap_a = np.asarray(self.cap, dtype=np.int64).reshape(-1, 3)
        fit = self._gpu_fit_table()
        n = 0
        for t in self.types:
            cls = np.asarray(t.classes, dtype=np.int64)
            if not len(cls) or not t.options:
                continue
            C, M, G = cap_a[cls, 0][:, None], cap_a[cls, 1][:, None], cap_a[cls, 2][:, None]
            cpu = np.array([o.cpu for o in t.options], dtype=np.int64)[None, :]
            mem = np.array([o.mem for o in t.options], dtype=np.int64)[None, :]
            n += int(((cpu <= C) & (mem <= M) & fit(t)[cls][:, None]).sum())
            if t.spreadable:
                g = t.gpus
                n += len(t.modes) * int(((-(-cpu // g) <= C) & (-(-mem // g) <= M)
                                         & (G >= 1)).sum())
            if n > cap:
                break
        return n

    def _gpu_fit_table(self):
        """`_gpu_fit` of a type on every class at once: a function of the type
        returning a boolean array over the classes."""
        G = np.array([len(f) for f in self.full], dtype=np.int64)
        part = np.array([max((f for _, f in p), default=0) for p in self.partial], dtype=np.int64)
        sw = np.array([max(x, default=0) for x in self.sw_cap], dtype=np.int64)
        so = np.array([max(x, default=0) for x in self.so_cap], dtype=np.int64)
        by_level = {"switch": sw, "socket": so, "server": G}

        def fit(t: JobType) -> np.ndarray:
            if t.gpus == 0:
                return np.ones(self.K, dtype=bool)
            if t.milli < MILLI:
                return (G >= 1) | (part >= t.milli)
            if t.locality == "gpu":
                return (G >= 1) & (t.gpus == 1)
            return t.gpus <= by_level[self._level(t)]
        return fit

    def build_items(self, deadline: Deadline) -> None:
        """The items (see the module notes), before ``deadline``."""
        self.deadline = deadline
        self._build_items()

    def _tick(self) -> None:
        """Raise `OutOfTime` when the build's deadline has passed."""
        if self.deadline.expired():
            raise OutOfTime("building the aggregate")

    # -------------------------------------------------------------- classes
    def _build_classes(self) -> None:
        p = self.p
        groups: dict[tuple, list[int]] = {}
        self.perm, shapes = self._shapes()
        cpu, mem = p.free_cpu.tolist(), p.free_mem.tolist()
        # servers of different domains of the innermost level the modes use
        # are not interchangeable (the domain names those above it)
        place = p.arrays.srv_domain[self.place_level].tolist() \
            if self.place_level is not None else [None] * p.S
        for s, sv in enumerate(p.cluster.servers):
            key = (cpu[s], mem[s], sv.gpu_type if sv.gpus else None, place[s], shapes[s])
            groups.setdefault(key, []).append(s)
        self.class_keys = list(groups)
        self.classes = list(groups.values())
        self.K = len(self.classes)
        self.rep_server = [m[0] for m in self.classes]
        self.n_c = [len(m) for m in self.classes]
        self.class_of = [0] * p.S
        for c, members in enumerate(self.classes):
            for s in members:
                self.class_of[s] = c
        self.free: list[list[int]] = []
        self.full: list[list[int]] = []
        self.partial: list[list[tuple[int, int]]] = []
        self.so_of, self.sw_of, self.so_cap, self.sw_cap = [], [], [], []
        self.n_so, self.n_sw, self.sw_socket, self.cap = [], [], [], []
        for c, s in enumerate(self.rep_server):
            shape = shapes[s]
            free = [f for f, _, _ in shape]
            self.free.append(free)
            self.full.append([k for k, f in enumerate(free) if f >= MILLI])
            self.partial.append([(k, f) for k, f in enumerate(free) if 0 < f < MILLI])
            so = [x for _, x, _ in shape]
            sw = [x for _, _, x in shape]
            self.so_of.append(so)
            self.sw_of.append(sw)
            n_so, n_sw = (max(so) + 1 if so else 0), (max(sw) + 1 if sw else 0)
            self.n_so.append(n_so)
            self.n_sw.append(n_sw)
            self.so_cap.append([sum(1 for k in range(len(free)) if so[k] == d and free[k] >= MILLI)
                                for d in range(n_so)])
            self.sw_cap.append([sum(1 for k in range(len(free)) if sw[k] == d and free[k] >= MILLI)
                                for d in range(n_sw)])
            sock = {}
            for k, d in enumerate(sw):
                sock[d] = so[k]
            self.sw_socket.append([sock[d] for d in range(n_sw)])
            self.cap.append((int(p.free_cpu[s]), int(p.free_mem[s]), len(self.full[c])))

    def _shapes(self) -> tuple[list, list]:
        """`canonical_gpus` of every server: (orders, shapes).  In a
        scheduler loop (a problem compiled with a carry) they are kept across
        rounds on the same cluster, and only the servers whose GPUs' free
        milli changed since the last round are computed again (a few percent
        of them; 1,000 servers took 20-60 ms of a 1 s round)."""
        p = self.p
        carry = p.carry
        kept = carry.take(SHAPES) if carry is not None else None
        if kept is not None and kept[0] is p.cluster and len(kept[1]) == p.G:
            orders, shapes = list(kept[2]), list(kept[3])
            diff = np.flatnonzero(kept[1] != p.gpu_free)
            todo = np.unique(p.gpu_server[diff]).tolist()
        else:
            orders, shapes = [[]] * p.S, [()] * p.S
            todo = range(p.S)
        for k, s in enumerate(todo):
            if k % 256 == 255:
                self._tick()
            orders[s], shapes[s] = canonical_gpus(p, s)
        if carry is not None:
            carry.keep(SHAPES, (p.cluster, p.gpu_free.copy(), orders, shapes))
        return orders, shapes

    def gpu_of(self, s: int, offset: int) -> int:
        """Global GPU index of canonical ``offset`` on server s."""
        return int(self.p.gpu_first[s]) + self.perm[s][offset]

    def offset_of(self, s: int, g: int) -> int:
        """Canonical offset of global GPU g on server s."""
        return self.perm[s].index(g - int(self.p.gpu_first[s]))

    def shared_capacity(self, c: int) -> int:
        """Milli a shared item can use on a server of class c."""
        return len(self.full[c]) * MILLI + sum(f for _, f in self.partial[c])

    # ---------------------------------------------------------------- types
    def _build_types(self) -> None:
        p = self.p
        self.types: list[JobType] = []
        self.type_of: dict[int, int] = {}
        # the GPU type column of each class's server (type_ok's last: no GPUs),
        # not the J x S ``allowed`` matrix (1.25 GB at 100k jobs x 12,500 servers)
        tix = np.where(p.srv_type >= 0, p.srv_type, len(p.types))[list(self.rep_server)]
        every = tuple(range(len(tix)))
        for k, js in enumerate(job_types(p)):
            if k % 64 == 63:
                self._tick()
            job = p.jobs[js[0]]
            classes = tuple(np.flatnonzero(p.type_ok[js[0]][tix]).tolist()) if job.gpus else every
            spread = self._spreads(job)
            t = JobType(len(self.types), js, job.gpus, job.gpu_milli, job.locality,
                        p.options[js[0]], classes, spread, js[0],
                        self.modes_of(job) if spread else (CLUSTER,), job.preferred,
                        job.locality if spread and self.relaxed(job) else None)
            for j in js:
                self.type_of[j] = t.index
            self.types.append(t)

    # ---------------------------------------------------------------- items
    def span_in(self, t: JobType) -> float:
        """Best span factor of a multi-GPU job inside one server."""
        prof = self.p.jobs[t.rep].profile
        if "span" not in self.p.objective.factors or t.gpus < 2 or prof is None:
            return 1.0
        lv = [x for x in ("server", "socket", "switch") if x in self.p.levels] or ["server"]
        return max(prof.span_factor(x) for x in lv)

    def span_out(self, t: JobType, mode: int | None = None) -> float:
        """Span factor of a job spread over several servers in ``mode`` (a
        level's factor), or the best over the levels above the servers it
        may span (None: a type of one mode)."""
        p = self.p
        prof = p.jobs[t.rep].profile
        if "span" not in p.objective.factors or prof is None:
            return 1.0
        if mode is not None and len(t.modes) > 1:
            return prof.span_factor(t.modes[mode])
        lv = [x for x in reachable_levels(p.cluster, t.locality) if is_outer(x) or x == CLUSTER]
        return max((prof.span_factor(x) for x in lv), default=1.0)

    def penalty(self, t: JobType, level: str) -> float:
        """What type t's job loses in the model spanning ``level`` (its
        preferred level's levels climbed times the weight)."""
        if not self.pref_weight or t.preferred is None:
            return 0.0
        return self.pref_weight * climb(self.p.cluster, t.preferred, level)

    def _level(self, t: JobType) -> str:
        if t.locality in INNER and t.locality in self.p.levels:
            return t.locality
        return "server"

    def _groups(self) -> None:
        p = self.p
        self.groups: list[tuple[int, tuple[int, ...]]] = []
        #: per group: its mode index and (level, domain id) (domain None: the cluster)
        self.group_place: list[tuple[int, str, int | None]] = []
        self.group_of: dict[tuple, int] = {}
        for t in self.types:
            if not t.spreadable:
                continue
            for m, lv in enumerate(t.modes):
                parts: dict[int | None, list[int]]
                if lv == CLUSTER:
                    parts = {None: list(t.classes)}
                else:
                    dom = p.arrays.srv_domain[lv]
                    parts = {}
                    for c in t.classes:
                        parts.setdefault(int(dom[self.rep_server[c]]), []).append(c)
                for d, part in parts.items():
                    gid = len(self.groups)
                    self.groups.append((t.index, tuple(part)))
                    self.group_place.append((m, lv, d))
                    for c in part:
                        self.group_of[(t.index, m, c)] = gid

    def _gpu_fit(self, c: int, t: JobType) -> bool:
        G = len(self.full[c])
        lvl = self._level(t)
        if t.gpus == 0:
            return True
        if t.milli < MILLI:
            return G >= 1 or any(f >= t.milli for _, f in self.partial[c])
        if t.locality == "gpu":
            return t.gpus == 1 and G >= 1
        if lvl == "switch":
            return t.gpus <= max(self.sw_cap[c], default=0)
        if lvl == "socket":
            return t.gpus <= max(self.so_cap[c], default=0)
        return t.gpus <= G

    def _coef(self, t: JobType, o: int, s: int, span: float = 1.0) -> float:
        """``Problem.coef`` of type t's jobs at option o on server s, computed
        once per GPU type of the server (the only way the server enters a
        job's value: its GPU type's speed) and span factor."""
        key = (t.index, o, self.p.cluster.servers[s].gpu_type, span)
        v = self._coefs.get(key)
        if v is None:
            v = self._coefs[key] = self.p.coef(t.rep, o, s, span=span)
        return v

    def _build_items(self) -> None:
        self._groups()
        self.items: list[list[Item]] = [[] for _ in range(self.K)]
        self.item_index: list[dict[tuple, int]] = [dict() for _ in range(self.K)]
        self.exact_units = True
        self._coefs: dict[tuple, float] = {}
        # the types each class may hold, in type order
        by_class: list[list[JobType]] = [[] for _ in range(self.K)]
        for t in self.types:
            for c in t.classes:
                by_class[c].append(t)
        for c in range(self.K):
            self._tick()
            for t in by_class[c]:
                self._class_items(c, t)
        self.spread_vars: list[tuple[int, int, int, float]] = []
        servers = self.p.cluster.servers
        for gid, (ti, cls) in enumerate(self.groups):
            t = self.types[ti]
            m, lv, _ = self.group_place[gid]
            if sum(self.n_c[c] * len(self.full[c]) for c in cls) < t.gpus:
                continue        # the domain's free GPUs cannot hold one job of the type
            key = ("unit", ti) if not m else None
            # one server of each GPU type among the group's classes
            reps = list({servers[self.rep_server[c]].gpu_type: self.rep_server[c]
                         for c in cls}.values())
            for o in range(len(t.options)):
                ik = key + (o,) if key else ("unit", ti, o, m)
                if not any(ik in self.item_index[c] for c in cls):
                    continue
                best = max(self._coef(t, o, s) for s in reps)
                span = self.span_out(t, m if len(t.modes) > 1 else None)
                self.spread_vars.append((ti, o, gid, best * span - self.penalty(t, lv)))

    def _class_items(self, c: int, t: JobType) -> None:
        """The items of type t on class c (whole and unit, every option)."""
        C, M, G = self.cap[c]
        s = self.rep_server[c]
        gfit = self._gpu_fit(c, t)
        span = self.span_in(t) if gfit else 1.0
        level = self._level(t)
        cost = self.penalty(t, level) if t.gpus >= 2 else 0.0
        for o, opt in enumerate(t.options):
            if gfit and opt.cpu <= C and opt.mem <= M:
                self._add_item(c, Item("whole", t.index, o, opt.cpu, opt.mem,
                                       t.gpus if t.milli == MILLI else 0,
                                       t.milli if (t.milli < MILLI and t.gpus) else 0,
                                       level, self._coef(t, o, s, span) - cost))
            if t.spreadable and G >= 1:
                uc, um = -(-opt.cpu // t.gpus), -(-opt.mem // t.gpus)
                if uc * t.gpus != opt.cpu or um * t.gpus != opt.mem:
                    self.exact_units = False
                if uc <= C and um <= M:
                    for m in range(len(t.modes)):
                        self._add_item(c, Item("unit", t.index, o, uc, um, 1, 0, "server",
                                               0.0, self.group_of[(t.index, m, c)], m))

    def _add_item(self, c: int, it: Item) -> None:
        self.item_index[c][it.key] = len(self.items[c])
        self.items[c].append(it)

    def item_ub(self, c: int, i: int) -> int:
        """Most copies of item i one server of class c can hold."""
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
            ub = min(ub, G * (MILLI // it.milli) + sum(f // it.milli for _, f in self.partial[c]))
        return max(ub, 0)


__all__ = ["Aggregate", "INNER", "Item", "JobType", "MODE_DOMAINS", "OutOfTime", "Pattern",
           "RELAX_FACTOR", "SECONDS_PER_ITEM", "canonical_gpus"]
