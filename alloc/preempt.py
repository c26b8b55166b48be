r"""Preemption by the caller's order: which running jobs stop, and for whom.

Under ``preempt="order"`` the caller's order (a ranked list of job ids,
highest first, as LAS, FIFO, SRTF or Tiresias produce) decides who may stop
whom, and the core decides it once, the same for every solver, before the
solver runs.  The rule ([outranks][alloc.tenancy.outranks] with the order):

* a running job ``r`` is stopped only for a waiting job ``p`` that the order
  lists above it and that cannot otherwise be placed now;
* ``p`` is placed on a server ``r`` held (a stopped job frees room for the
  job it is stopped for, not for anyone);
* the lowest-ranked go first, as few as possible: among the placements of
  ``p``, the one whose highest-ranked victim ranks lowest, and on it no
  victim that ``p`` does not need;
* a stopped job is not placed again in the same call.

Walk.  Let ``F`` be what the running jobs leave free (milli-GPU per GPU,
CPU and memory per server).  For each waiting job ``p`` the order lists, by
rank, while some running job ranks below it:

1. if ``p`` fits ``F`` (at any of its CPU/memory options, its smallest size
   if elastic, spread over servers if need be), its room is set aside in
   ``F`` (the solver places it -- or, where it fits only so as the solver
   does not place jobs, at another grid point or spread, the order's repair
   `kept_order` does; the reservation only keeps a lower-ranked job from
   counting on that room);
2. else let ``F_t`` be ``F`` plus everything held by the running jobs ranked
   ``t`` or lower (``t > rank(p)``).  ``p`` fits ``F_t`` for ``t`` small
   enough or not at all; the largest such ``t*`` is found by taking the
   running jobs one by one from the lowest rank up and testing, after each,
   the servers it held (``p`` alone on one of them) and, for a gang that may
   spread, the GPUs usable over the cluster (or its locality domain): only what the
   last job freed can make ``p`` fit.  The job ``v*`` of rank ``t*`` is the
   highest-ranked job any placement of ``p`` must stop, and it is stopped.
   ``p`` is placed on a server of ``v*`` (or, spread, on the servers with the
   most usable GPUs, the victims' first): jobs ranked ``t*`` or lower there
   are stopped lowest-ranked first until ``p`` fits, then every victim ``p``
   still fits without is kept running (highest-ranked first).  An even
   spread (``gpus_per_server``) is a gang that never fits one server alone:
   its test counts the servers that can hold one part (``k`` whole GPUs and
   its share of CPU and memory), and its parts go to the victims' servers
   first, then to those with the fewest whole free GPUs.  Where GPU memory
   or compute may bind, a GPU counts, in every test and placement, only
   when the victims stopped leave it one share of ``p``'s;
3. else, when the room step 1 set aside for a job ``k`` ranked above ``p``
   lies on a server where a running job ranked below ``p`` runs (or, for a
   gang that may spread, a server with a whole free GPU), ``k``'s
   room may move (it is the solver's to place ``k`` as it likes): ``p`` is
   tried again, by 1 and then by 2, with ``k``'s room given back, and ``k``
   then set aside again in what is left (the victims' room that ``p`` does
   not take counted as held); failing both, ``k`` is set aside first, in
   the free room and the room of the victims 2 finds for ``p`` (``k`` ranks
   above every one of them), and ``p`` placed in what is left, by 1 and
   then by 2 (more victims where it needs them), each victim that both
   still fit without kept running, highest-ranked first; the
   first ``k`` for which both fit moves;
4. else ``p`` waits.

With ``preempt_packed`` (an option of `allocate` and `Session`; off by
default) a gang that may spread and needs victims is first placed on one
server: step 2 is run over the servers alone (every running job ranked
below ``p`` a candidate, ``t*`` the rank at which one server first holds
it), and only when no server can hold it so is it spread over its
victims' servers as above.  Spread placements cost a gang its span factor;
a scheduler whose jobs prefer one server (Blox's consolidation) asks for it.

A job that preempts costs one test per job taken (a server's GPUs, or one
vector over the servers for a gang); a job that fits costs one vectorised
test.  A job shape that found no room (or no victims) is not tried again
until a stop leaves room beside what its beneficiary took.

The jobs placed in step 2 are *pinned*: the solver sees them running where
the walk put them and may neither move nor stop them
([Problem][alloc.problem.Problem] ``pinned``); the victims are not in the
solver's problem at all.  Everything else is the solver's, on what is left:
exact solvers prove their bound and optimum for that problem.

Scope: clusters without tenants' guarantees (with tenants, preemption
follows the tenancy rules; ``allocate`` refuses ``preempt="order"`` there).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import chain

import numpy as np

from .deadline import Deadline
from .model import MILLI, Allocation
from .problem import Assign, Problem, add_assign
from .topology import is_outer

#: the preemption rules ``allocate(preempt=...)`` takes
PREEMPT_RULES = (None, "order")
INNER = ("switch", "socket")


@dataclass(frozen=True)
class Plan:
    """What the walk decided: ``victims`` (running job index -> the index of
    the job it is stopped for), ``pinned`` (job index -> its assignment) and
    ``reserved`` (job index -> the room step 1 set aside for it)."""
    victims: dict = field(default_factory=dict)
    pinned: dict = field(default_factory=dict)
    reserved: dict = field(default_factory=dict)


class GpuLeft:
    """GPU memory (MiB) and compute (milli) left per GPU (`alloc.resources`),
    for a walk on input where they may bind; `job` names the job whose
    shares the room is asked for."""

    def __init__(self, p: Problem, holding: dict):
        from .resources import gpu_mem_caps
        self.p = p
        self.caps = np.asarray(gpu_mem_caps(p.cluster), dtype=np.int64)
        self.mem = self.caps.copy()
        self.comp = np.full(p.G, MILLI, dtype=np.int64)
        self.need = (np.zeros(p.G, dtype=np.int64), 0)
        for r, a in holding.items():
            self.take(r, a, -1)

    def shares(self, j: int, a: Assign):
        """``(GPU, memory, compute)`` of each share of job j in ``a``."""
        job = self.p.jobs[j]
        for k, (g, m) in enumerate(a.gpus):
            mem, comp = a.caps[k] if a.caps else (None, None)
            if mem is None:
                mem = job.gpu_mem if job.gpu_mem is not None else int(self.caps[g]) * m // MILLI
            if comp is None:
                comp = job.gpu_compute if job.gpu_compute is not None else m
            yield g, int(mem), int(comp)

    def take(self, j: int, a: Assign, sign: int) -> None:
        """Add (``sign`` 1) or take (-1) job j's shares' memory and compute."""
        for g, mem, comp in self.shares(j, a):
            self.mem[g] += sign * mem
            self.comp[g] += sign * comp

    def fits(self, j: int, a: Assign) -> bool:
        """Job j's shares in ``a`` fit the memory and compute left."""
        return all(self.mem[g] >= mem and self.comp[g] >= comp
                   for g, mem, comp in self.shares(j, a))

    def job(self, j: int) -> None:
        """The job whose shares the room is asked for next (by index)."""
        self.need_of(self.p.jobs[j])

    def need_of(self, job) -> None:
        """The job whose shares the room is asked for next."""
        mem = np.full(self.p.G, job.gpu_mem, dtype=np.int64) if job.gpu_mem is not None else \
            self.caps * job.gpu_milli // MILLI
        self.need = (mem, job.gpu_compute if job.gpu_compute is not None else job.gpu_milli)

    def room(self, stopped=()) -> np.ndarray:
        """Per GPU: the memory and compute of one share of the job are left
        (with the running jobs ``stopped`` stopped)."""
        mem, comp = self.mem, self.comp
        if stopped:
            mem, comp = mem.copy(), comp.copy()
            for v in stopped:
                for g, vm, vc in self.shares(v, self.p.fixed[v]):
                    mem[g] += vm
                    comp[g] += vc
        return (mem >= self.need[0]) & (comp >= self.need[1])


class _Walk:
    """Free capacity and the running jobs' holdings, as arrays."""

    def __init__(self, p: Problem):
        self.p = p
        self.gfree = p.gpu_free.astype(np.int64).copy()
        self.cfree = p.free_cpu.astype(np.int64).copy()
        self.mfree = p.free_mem.astype(np.int64).copy()
        self.gsrv = p.gpu_server
        self.whole = np.bincount(self.gsrv[self.gfree >= MILLI], minlength=p.S)
        self.rank = p.rank
        self.alive = np.zeros(p.J, dtype=bool)
        self.alive[list(p.fixed)] = True
        #: running jobs, lowest-ranked first
        self.by_rank = sorted(p.fixed, key=lambda r: -int(p.rank[r]))
        self._on_server: dict[int, list[int]] | None = None
        self.masks: dict = {}
        #: bumped whenever stopping jobs leaves room beside what their beneficiary took
        self.version = 0
        self.failed: dict = {}      # job shape -> version when it last failed
        self.full: dict = {}        # job shape -> version when it last found no room
        #: a gang may spread over servers; every grid point is offered
        self.may_spread, self.grid = True, True
        #: a gang that needs victims goes on one server when any can hold it
        #: (`Problem.preempt_packed`)
        self.packed = bool(getattr(p, "preempt_packed", False))
        #: GPU memory and compute left per GPU (`track`), or None: not watched
        self.res: GpuLeft | None = None

    @property
    def on_server(self) -> dict[int, list[int]]:
        """Running jobs by server index (built on first use)."""
        if self._on_server is None:
            self._on_server = {}
            for r in self.p.fixed:
                for s in self.p.servers_of(self.p.fixed[r]):
                    self._on_server.setdefault(s, []).append(r)
        return self._on_server

    # ------------------------------------------------------------ job shape
    def shape(self, j: int) -> tuple:
        """(GPUs, milli, [(cpu, mem)], locality, allowed-server mask) of job j;
        an even spread's locality is ``("even", k, parts)`` (`_even`)."""
        p = self.p
        job = p.jobs[j]
        n = job.min_gpus if job.elastic and job.min_gpus is not None else job.gpus
        opts = tuple(dict.fromkeys((o.cpu, o.mem) for o in p.options[j]))
        if not self.grid:
            opts = opts[:1]
        key = tuple(bool(x) for x in p.type_ok[j]) if n else None
        mask = self.masks.get(key)
        if mask is None:
            mask = np.zeros(p.S, dtype=bool)
            mask[p.allowed_servers(j)] = True
            self.masks[key] = mask
        loc = ("even", job.gpus_per_server, job.even_servers) if job.even_servers \
            else job.locality
        return n, job.gpu_milli, opts, loc, mask

    # --------------------------------------------------------------- tests
    def servers_ok(self, sh, gf, cf, mf, whole=None) -> list:
        """Per option: the mask of servers that hold the job alone."""
        p = self.p
        n, q, opts, loc, mask = sh
        if _even(sh):
            return [np.zeros(p.S, dtype=bool) for _ in opts]     # never one server alone
        out = []
        if n and q >= MILLI:
            w = self.open(gf, q)
            if self.res is not None:
                whole = None
            if loc in INNER:
                dom = p.domain[loc]
                cnt = np.bincount(dom[w], minlength=int(dom.max()) + 1)
                gpu_ok = (cnt >= n)[dom]
                srv_gpu = np.zeros(p.S, dtype=bool)
                srv_gpu[self.gsrv[gpu_ok]] = True
            else:
                ws = whole if whole is not None else np.bincount(self.gsrv[w], minlength=p.S)
                srv_gpu = ws >= n
        elif n:
            srv_gpu = np.zeros(p.S, dtype=bool)
            srv_gpu[self.gsrv[self.open(gf, q)]] = True
        else:
            srv_gpu = mask
        base = mask & srv_gpu
        for c, m in opts:
            out.append(base & (cf >= c) & (mf >= m))
        return out

    def racks(self, level: str = "rack") -> np.ndarray:
        """Each server's domain id at ``level`` (a level above the servers)."""
        return self.p.arrays.srv_domain[level]

    def open(self, gf, q: int, room=None) -> np.ndarray:
        """Per GPU: it takes one share of ``q`` milli (with `res`, on the
        walk's own free arrays, its GPU memory and compute too; on others,
        where ``room``, the per-GPU mask of the memory and compute left for
        them, says so)."""
        ok = gf >= min(q, MILLI)
        if room is None and self.res is not None and gf is self.gfree:
            room = self.res.room()
        return ok if room is None else ok & room

    def usable(self, gf, cf, mf, mask, n, c, m, even=None, room=None) -> np.ndarray:
        """Whole GPUs each server can give a spread gang of n (CPU and memory
        per GPU rounded up, so that any split in proportion to GPUs fits;
        GPU memory and compute as `open` counts them); for an even spread
        (``even = (k, parts)``) 1 where a server can hold one part (k whole
        GPUs, its share of CPU and memory rounded up), else 0."""
        w = self.whole if gf is self.gfree and self.res is None and room is None else \
            np.bincount(self.gsrv[self.open(gf, MILLI, room)], minlength=self.p.S)
        if even:
            k, parts = even
            ok = mask & (w >= k) & (cf >= -(-c // parts)) & (mf >= -(-m // parts))
            return ok.astype(np.int64)
        cper, mper = -(-c // n), -(-m // n)
        use = w.copy()
        if cper:
            use = np.minimum(use, cf // cper)
        if mper:
            use = np.minimum(use, mf // mper)
        return np.where(mask, use, 0)

    def commit(self, j: int, a: Assign) -> None:
        """Set job j's assignment aside in the free capacity."""
        self._apply(a, -1)
        if self.res is not None and j >= 0:
            self.res.take(j, a, -1)

    def stop(self, r: int) -> None:
        """Running job r is stopped: what it held is free."""
        self.alive[r] = False
        self._apply(self.p.fixed[r], 1)

    def replace(self, victims: list[int], a: Assign) -> None:
        """Stop ``victims`` and set ``a`` aside; bump `version` when that
        leaves more room anywhere than there was (a job that found none
        before may find some now)."""
        p = self.p
        touched = set(p.servers_of(a))
        for v in victims:
            touched |= p.servers_of(p.fixed[v])
        gs = [g for x in touched for g in range(int(p.gpu_first[x]),
                                                int(p.gpu_first[x]) + int(p.srv_gpus[x]))]
        xs = sorted(touched)
        before = (self.gfree[gs].copy(), self.cfree[xs].copy(), self.mfree[xs].copy())
        for v in victims:
            self.stop(v)
        self.commit(-1, a)
        after = (self.gfree[gs], self.cfree[xs], self.mfree[xs])
        if any((y > x).any() for x, y in zip(before, after)):
            self.version += 1

    def save(self) -> tuple:
        """The free capacity (and GPU memory and compute left), to `restore`."""
        res = self.res
        return (self.gfree.copy(), self.cfree.copy(), self.mfree.copy(), self.whole.copy(),
                None if res is None else (res.mem.copy(), res.comp.copy(), res.need))

    def restore(self, saved: tuple) -> None:
        """Put back the free capacity `save` returned."""
        gf, cf, mf, whole, left = saved
        self.gfree, self.cfree, self.mfree, self.whole = gf.copy(), cf.copy(), mf.copy(), \
            whole.copy()
        if left is not None and self.res is not None:
            self.res.mem, self.res.comp, self.res.need = left[0].copy(), left[1].copy(), left[2]

    def _apply(self, a: Assign, sign: int) -> None:
        add_assign(a, self.gfree, self.cfree, self.mfree, sign)
        for s in {int(self.gsrv[g]) for g, _ in a.gpus}:
            f = int(self.p.gpu_first[s])
            self.whole[s] = int((self.gfree[f:f + int(self.p.srv_gpus[s])] >= MILLI).sum())

    # ------------------------------------------------------------ placing
    def gpus_on(self, s: int, sh, gf, room=None) -> list[int] | None:
        """GPUs of server s for the job (``gf``: free milli by GPU index, an
        array or a mapping over s's GPUs; ``room``: which of them have the
        job's GPU memory and compute, when not the walk's own): the tightest
        node of the innermost declared level that holds a gang, the tightest
        GPU for a share."""
        p = self.p
        n, q, _, loc, _ = sh
        if not n:
            return []
        f = int(p.gpu_first[s])
        gs = range(f, f + int(p.srv_gpus[s]))
        if room is None and self.res is not None and gf is self.gfree:
            room = self.res.room()
        if q < MILLI:
            ok = [g for g in gs if gf[g] >= q and (room is None or room[g])]
            return [min(ok, key=lambda g: (gf[g], g))] if ok else None
        free = [g for g in gs if gf[g] >= MILLI and (room is None or room[g])]
        if len(free) < n:
            return None
        for lv in INNER:
            if lv not in p.levels:
                continue
            groups: dict[int, list[int]] = {}
            for g in free:
                groups.setdefault(int(p.domain[lv][g]), []).append(g)
            fit = [v for v in groups.values() if len(v) >= n]
            if fit:
                return min(fit, key=lambda v: (len(v), v[0]))[:n]
            if loc == lv:
                return None
        return free[:n]

    def assign_on(self, j: int, s: int, sh, o: int, gf, room=None) -> Assign | None:
        """Job j alone on server s at option o, or None."""
        gpus = self.gpus_on(s, sh, gf, room)
        if gpus is None:
            return None
        if not sh[0]:
            return self.p.make_cpu_assign(j, s, o)
        return self.p.make_assign(j, gpus, o)

    def place_free(self, j: int, sh) -> Assign | None:
        """Job j in the free capacity (the fullest server that holds it, else
        a spread gang), or None."""
        for o, ok in enumerate(self.servers_ok(sh, self.gfree, self.cfree, self.mfree,
                                               self.whole)):
            cand = np.flatnonzero(ok)
            if len(cand):
                s = int(cand[np.argmin(self.whole[cand] * self.p.S + cand)])
                a = self.assign_on(j, s, sh, o, self.gfree)
                if a is not None:
                    return a
        return self.spread(j, sh, self.gfree, self.cfree, self.mfree, ())

    def spread(self, j: int, sh, gf, cf, mf, first, room=None) -> Assign | None:
        """A gang spread over servers (``first``: servers to use before the
        others; then the most usable GPUs; ``room`` as for `open`), or None."""
        n, q, opts, loc, mask = sh
        if _even(sh):
            return self.even(j, sh, gf, cf, mf, first, room)
        if n < 2 or q < MILLI or not (loc is None or is_outer(loc)) or not self.may_spread:
            return None
        p = self.p
        ok = self.open(gf, MILLI, room)
        for o, (c, m) in enumerate(opts):
            use = self.usable(gf, cf, mf, mask, n, c, m, room=room)
            if is_outer(loc):
                rack = self.racks(loc)
                tot = np.bincount(rack, use)
                good = np.flatnonzero(tot >= n)
                if not len(good):
                    continue
                pref = [int(rack[s]) for s in first if tot[rack[s]] >= n]
                use = np.where(rack == (pref[0] if pref else good[0]), use, 0)
            elif use.sum() < n:
                continue
            firsts = [s for s in dict.fromkeys(first) if use[s] > 0]
            some = np.flatnonzero(use > 0)
            rest = (int(s) for s in some[np.argsort(-use[some], kind="stable")]
                    if s not in firsts)
            gpus: list[int] = []
            for s in chain(firsts, rest):
                k = min(int(use[s]), n - len(gpus))
                f = int(p.gpu_first[s])
                gpus += [g for g in range(f, f + int(p.srv_gpus[s])) if ok[g]][:k]
                if len(gpus) == n:
                    return p.make_assign(j, gpus, o)
        return None

    def even(self, j: int, sh, gf, cf, mf, first, room=None) -> Assign | None:
        """An even spread (``gpus_per_server`` GPUs on each of ``parts``
        servers): the servers of ``first`` that can hold a part, then those
        with the fewest whole free GPUs (lowest index first); inside each,
        the tightest node that holds the part (`gpus_on`); ``room`` as for
        `open`; or None."""
        k, parts = _even(sh) or (0, 0)
        n, q, opts, loc, mask = sh
        p = self.p
        w = self.whole if gf is self.gfree and self.res is None and room is None else \
            np.bincount(self.gsrv[self.open(gf, MILLI, room)], minlength=p.S)
        part = (k, MILLI, opts, None, mask)
        for o, (c, m) in enumerate(opts):
            use = self.usable(gf, cf, mf, mask, n, c, m, (k, parts), room)
            if use.sum() < parts:
                continue
            firsts = [s for s in dict.fromkeys(first) if use[s]]
            rest = sorted((int(s) for s in np.flatnonzero(use) if s not in firsts),
                          key=lambda s: (int(w[s]), s))
            gpus: list[int] = []
            for s in (firsts + rest)[:parts]:
                gpus += self.gpus_on(s, part, gf, room) or []
            if len(gpus) == n:
                return p.make_assign(j, gpus, o)
        return None

    # ------------------------------------------------------------ victims
    def local(self, s: int, victims) -> tuple[dict, int, int]:
        """Free milli of server s's GPUs, its CPU and memory with ``victims`` stopped."""
        p = self.p
        f = int(p.gpu_first[s])
        gf = {g: int(self.gfree[g]) for g in range(f, f + int(p.srv_gpus[s]))}
        c, m = int(self.cfree[s]), int(self.mfree[s])
        for v in victims:
            a = p.fixed[v]
            for g, mi in a.gpus:
                if g in gf:
                    gf[g] += mi
            c += dict(a.cpu).get(s, 0)
            m += dict(a.mem).get(s, 0)
        return gf, c, m

    def try_server(self, j: int, s: int, sh, victims, build: bool = False):
        """Whether job j fits alone on server s with ``victims`` stopped (its
        assignment with ``build``), else None."""
        if not sh[4][s] or _even(sh):
            return None
        gf, c, m = self.local(s, victims)
        room = self.local_room(s, victims)
        for o, (oc, om) in enumerate(sh[2]):
            if oc <= c and om <= m:
                gpus = self.gpus_on(s, sh, gf, room)
                if gpus is not None:
                    return self.assign_on(j, s, sh, o, gf, room) if build else True
        return None

    def local_room(self, s: int, victims) -> dict | None:
        """Per GPU of server s: one share of the job's GPU memory and compute
        is left with ``victims`` stopped (None: they are not watched)."""
        res = self.res
        if res is None:
            return None
        p = self.p
        f = int(p.gpu_first[s])
        gs = range(f, f + int(p.srv_gpus[s]))
        mem = {g: int(res.mem[g]) for g in gs}
        comp = {g: int(res.comp[g]) for g in gs}
        for v in victims:
            for g, vm, vc in res.shares(v, p.fixed[v]):
                if g in mem:
                    mem[g] += vm
                    comp[g] += vc
        need_mem, need_comp = res.need
        return {g: mem[g] >= need_mem[g] and comp[g] >= need_comp for g in gs}

    def on_server_victims(self, j: int, s: int, sh, t: int):
        """Victims on server s (ranked t or lower, lowest first, then pruned
        highest first) and job j's assignment there, or None."""
        cands = sorted((r for r in self.on_server.get(s, ()) if self.alive[r]
                        and self.rank[r] >= t), key=lambda r: -self.rank[r])
        victims: list[int] = []
        for r in cands:
            victims.append(r)
            if self.try_server(j, s, sh, victims) is not None:
                break
        else:
            return None
        for r in sorted(victims, key=lambda r: self.rank[r]):
            rest = [v for v in victims if v != r]
            if self.try_server(j, s, sh, rest) is not None:
                victims = rest
        return victims, self.try_server(j, s, sh, victims, build=True)

    def usable_on(self, s: int, sh, victims, c: int, m: int) -> int:
        """Whole GPUs server s gives a spread gang with ``victims`` stopped
        (CPU and memory per GPU rounded up, as in `usable`)."""
        n, _, _, _, mask = sh
        if not mask[s]:
            return 0
        gf, cf, mf = self.local(s, victims)
        room = self.local_room(s, victims)
        w = sum(1 for g, x in gf.items() if x >= MILLI and (room is None or room[g]))
        even = _even(sh)
        if even:
            k, parts = even
            return int(w >= k and cf >= -(-c // parts) and mf >= -(-m // parts))
        cper, mper = -(-c // n), -(-m // n)
        return min(w, cf // cper if cper else w, mf // mper if mper else w)

    def spread_victims(self, j: int, sh, cands, c: int, m: int):
        """Victims for a spread gang (``cands`` lowest-ranked first, until it
        fits; then every one it fits without is kept, highest-ranked first)
        and its assignment, or None."""
        on: dict[int, list[int]]       # server -> the candidates on it
        p, n = self.p, sh[0]
        even = _even(sh)
        use = self.usable(self.gfree, self.cfree, self.mfree, sh[4], n, c, m, even)
        total, on = int(use.sum()), {}
        need = even[1] if even else n

        def enough():
            if not even and is_outer(sh[3]):
                return bool((np.bincount(self.racks(sh[3]), use) >= n).any())
            return total >= need
        held = {r: self.p.servers_of(p.fixed[r]) for r in cands}

        def gain(r, sign):
            nonlocal total
            for x in held[r]:
                vs = on.setdefault(x, [])
                if sign > 0:
                    vs.append(r)
                else:
                    vs.remove(r)
                u = self.usable_on(x, sh, vs, c, m)
                total += u - int(use[x])
                use[x] = u
        victims = []
        for r in cands:
            victims.append(r)
            gain(r, 1)
            if enough():
                break
        else:
            return None
        for r in sorted(victims, key=lambda r: self.rank[r]):
            gain(r, -1)
            if enough():
                victims.remove(r)
            else:
                gain(r, 1)
        gf, cf, mf = self.gfree.copy(), self.cfree.copy(), self.mfree.copy()
        for r in victims:
            add_assign(p.fixed[r], gf, cf, mf)
        first = [x for r in victims for x in sorted(held[r])]
        room = self.res.room(victims) if self.res is not None else None
        a = self.spread(j, sh, gf, cf, mf, first, room)
        return None if a is None else (victims, a)

    def with_victims(self, j: int, sh):
        """Stop the fewest lowest-ranked running jobs so that job j fits (module
        notes); returns (victims, assignment) or None.

        Running jobs are taken lowest-ranked first; after each, the servers it
        held are tested (the job alone on one of them) and, for a gang that
        may spread, the whole GPUs usable over the cluster (or a rack); the
        first test that passes fixes ``t*``, the rank of the last job taken.
        With `packed` a gang that may spread is first tried on one server
        only, over every running job ranked below it; it spreads only when no
        server can hold it so."""
        if self.packed:
            if _gang(sh) and self.may_spread and not _even(sh):
                got = self._with_victims(j, sh, False)
                if got is not None:
                    return got
        return self._with_victims(j, sh, self.may_spread)

    def _with_victims(self, j: int, sh, may_spread: bool):
        p, rj = self.p, self.rank[j]
        on: dict[int, list[int]] = {}
        n, q, opts, loc, mask = sh
        even = _even(sh)
        spread = (_gang(sh) or bool(even)) and may_spread
        need = even[1] if even else n
        use = [self.usable(self.gfree, self.cfree, self.mfree, mask, n, c, m, even)
               for c, m in opts] if spread else []
        cands = []
        for r in self.by_rank:
            if self.rank[r] <= rj:
                break
            if not self.alive[r]:
                continue
            cands.append(r)
            servers = sorted(p.servers_of(p.fixed[r]))
            for x in servers:
                on.setdefault(x, []).append(r)
            hit = [x for x in servers if self.try_server(j, x, sh, on[x]) is not None]
            if hit:
                got = [self.on_server_victims(j, x, sh, int(self.rank[r])) for x in hit]
                got = [g for g in got if g is not None]
                if got:
                    return min(got, key=lambda g: len(g[0]))
            for o, (c, m) in enumerate(opts if spread else ()):
                for x in servers:
                    use[o][x] = self.usable_on(x, sh, on[x], c, m)
                tot = np.bincount(self.racks(loc), use[o]).max() \
                    if not even and is_outer(loc) else use[o].sum()
                if tot >= need:
                    got = self.spread_victims(j, sh, cands, c, m)
                    if got is not None:
                        return got
        return None

def _even(sh) -> tuple[int, int] | None:
    """``(gpus_per_server, parts)`` of an even spread's shape, else None."""
    loc = sh[3]
    return (loc[1], loc[2]) if isinstance(loc, tuple) else None


def _gang(sh) -> bool:
    """A shape of two whole GPUs or more whose locality lies above the
    servers (or none): a gang that may spread over servers, as an even
    spread does."""
    n, q, _, loc, _ = sh
    return n >= 2 and q >= MILLI and (loc is None or is_outer(loc))


def plan(problem: Problem, deadline: Deadline) -> Plan:
    """The walk of the module notes on a compiled problem (``preempt="order"``);
    out of time it returns what it decided so far."""
    p = problem
    rank = p.order_rank
    if p.preempt != "order" or not rank or not p.fixed:
        return Plan()
    from .resources import needs
    w = _Walk(p)
    w.alive[list(p.pinned)] = False       # a pinned job is never stopped
    if not w.alive.any():
        return Plan()
    if needs(p.cluster, p.jobs) & {"gpu-memory", "gpu-compute"}:
        w.res = GpuLeft(p, dict(p.fixed))
    victims: dict[int, int] = {}
    pinned: dict[int, Assign] = {}
    reserved: dict[int, Assign] = {}
    lowest = int(w.rank[w.alive].max())
    listed = sorted((j for j in p.pending if p.jobs[j].id in rank), key=lambda j: w.rank[j])
    for j in listed:
        if w.rank[j] >= lowest or deadline.expired():
            break
        sh = w.shape(j)
        key = sh[:4] + (id(sh[4]),)
        if w.res is not None:
            w.res.job(j)
            key += (p.jobs[j].gpu_mem, p.jobs[j].gpu_compute)
        if w.full.get(key) != w.version:
            a = w.place_free(j, sh)
            if a is not None:
                w.commit(j, a)
                reserved[j] = a
                continue
            w.full[key] = w.version       # no room until a stop leaves some
        if w.failed.get(key) == w.version:
            continue                      # the same shape failed since then
        got = w.with_victims(j, sh)
        if got is None and reserved:
            got = _moving_reserved(w, j, sh, reserved, deadline)
        if got is None:
            w.failed[key] = w.version
            continue
        stopped, a = got
        if not stopped:                   # it fits once the room set aside has moved
            w.commit(j, a)
            reserved[j] = a
            continue
        if w.res is not None and not _shares_fit(w.res, p, stopped, j, a):
            w.failed[key] = w.version     # the victims' GPUs lack its GPU memory or compute
            continue
        w.replace(stopped, a)
        victims.update(dict.fromkeys(stopped, j))
        pinned[j] = a
        if w.alive.any():
            lowest = int(w.rank[w.alive].max())
        else:
            break
    return Plan(victims, pinned, reserved)


def _moving_reserved(w: _Walk, j: int, sh, reserved: dict,
                     deadline: Deadline) -> tuple[list, Assign] | None:
    """Job j found no room, with or without victims, beside the room step 1
    set aside for the jobs ranked above it (``reserved``).  That room is the
    solver's to place them in as it likes, so j is tried again with one of
    them moved: the room of a job ``k`` set aside on a server that j could
    take (one that a running job ranked below j holds, or, for a gang that
    may spread, one with a whole free GPU) given back, j placed
    in the free room if it fits there and ``k`` after it, else j with the
    fewest lowest-ranked victims (`_Walk.with_victims`) and ``k`` after it
    (the victims' room that j does not take counted as held: a stopped job
    frees room only for the job it is stopped for), else ``k`` first and j
    after it with those victims stopped (`_above_first`).  The first ``k``
    that lets both fit has its new room in ``reserved`` and ``(victims,
    assignment)`` is returned, j's own not yet applied; else (or at the
    deadline) the walk is as it was and None is returned."""
    p = w.p
    near = {x for r in w.by_rank if w.alive[r] and w.rank[r] > w.rank[j]
            for x in p.servers_of(p.fixed[r])}
    if w.may_spread and (_gang(sh) or _even(sh)):
        near |= {int(x) for x in np.flatnonzero(w.whole)}   # a gang takes free GPUs too
    cands = [k for k, a in reserved.items() if not near.isdisjoint(p.servers_of(a))]
    if not cands or not _hope(w, j, sh, {k: reserved[k] for k in cands}):
        return None
    for k in cands:
        if deadline.expired():
            break
        saved = w.save()
        for find in (lambda: _then(w, j, k, _free(w, j, sh)),
                     lambda: _then(w, j, k, w.with_victims(j, sh)),
                     lambda: _above_first(w, j, sh, k)):
            w.restore(saved)
            _give_back(w, k, reserved[k])
            got = find()
            if got is not None:
                victims, a, b = got
                w.restore(saved)
                _give_back(w, k, reserved[k])
                w.commit(k, b)
                if w.res is not None:
                    w.res.job(j)
                reserved[k] = b
                w.version += 1                # the room has a new shape
                return victims, a
        w.restore(saved)
    return None


def _then(w: _Walk, j: int, k: int, got) -> tuple[list, Assign, Assign] | None:
    """``(victims, j's assignment, k's)`` with k's room found after j's
    (`_again`), or None."""
    b = None if got is None else _again(w, j, k, *got)
    return None if b is None else (got[0], got[1], b)


def _above_first(w: _Walk, j: int, sh, k: int) -> tuple[list, Assign, Assign] | None:
    """Step 3's last try, with ``k``'s room given back: the victims
    `_Walk.with_victims` finds for j stopped, ``k`` (ranked above j, so
    above every victim) set aside first in the free room and the victims'
    room, then j in what is left, with more victims ranked below j where it
    needs them; victims that both still fit without are kept running,
    highest-ranked first.  Returns ``(victims, j's assignment, k's)`` -- j
    may need the room ``k`` held, ``k`` the room the victims leave beside
    j -- or None; the walk's free capacity is left changed (the caller
    restores it)."""
    got = w.with_victims(j, sh)
    if got is None:
        return None
    saved = w.save()
    best = _k_then_j(w, j, sh, k, list(got[0]), saved, more=True)
    if best is None:
        return None
    for v in sorted(best[0], key=lambda x: int(w.rank[x])):
        again = _k_then_j(w, j, sh, k, [x for x in best[0] if x != v], saved)
        if again is not None:
            best = again
    return best


def _k_then_j(w: _Walk, j: int, sh, k: int, victims: list, saved: tuple,
              more: bool = False) -> tuple[list, Assign, Assign] | None:
    """From ``saved`` with ``victims`` stopped: job k in the free capacity,
    then job j in what is left (with ``more``, stopping running jobs ranked
    below j as `_Walk.with_victims` does, where it must), as ``(victims,
    j's assignment, k's)``, or None."""
    p, res = w.p, w.res
    w.restore(saved)
    try:
        for v in victims:
            w.stop(v)
            if res is not None:
                res.take(v, p.fixed[v], 1)
        if res is not None:
            res.job(k)
        b = w.place_free(k, w.shape(k))
        if b is None or p.throughput_of(k, b) <= 0:
            return None
        w.commit(k, b)
        if res is not None:
            res.job(j)
        a = w.place_free(j, sh)
        if a is not None or not more:
            return None if a is None else (victims, a, b)
        got = w.with_victims(j, sh)
        return None if got is None else (victims + list(got[0]), got[1], b)
    finally:
        w.alive[victims] = True           # stopped for the trial only


def _free(w: _Walk, j: int, sh) -> tuple[list, Assign] | None:
    """Job j in the free capacity, as ``(no victims, assignment)``, or None."""
    a = w.place_free(j, sh)
    return None if a is None else ([], a)


def _give_back(w: _Walk, k: int, a: Assign) -> None:
    """The room job k was set aside in ``a`` is free again."""
    w._apply(a, 1)
    if w.res is not None:
        w.res.take(k, a, 1)


def _hope(w: _Walk, j: int, sh, rooms: dict) -> bool:
    """Job j fits, with or without victims, once every room of ``rooms``
    (job index -> `Assign`) is given back: else moving any one of them
    cannot make it fit.  The walk is left as it was."""
    saved = w.save()
    for k, a in rooms.items():
        _give_back(w, k, a)
    ok = w.place_free(j, sh) is not None or w.with_victims(j, sh) is not None
    w.restore(saved)
    return ok


def _again(w: _Walk, j: int, k: int, victims: list, a: Assign) -> Assign | None:
    """Job k's room in the free capacity once ``victims`` stop and job j
    takes ``a``, the victims' room that ``a`` does not take held back (and
    their GPU memory and compute); the walk's free capacity is left changed
    (the caller restores it)."""
    p, res = w.p, w.res
    gv, cv, mv = np.zeros_like(w.gfree), np.zeros_like(w.cfree), np.zeros_like(w.mfree)
    for v in victims:
        add_assign(p.fixed[v], gv, cv, mv, 1)
    ga, ca, ma = np.zeros_like(w.gfree), np.zeros_like(w.cfree), np.zeros_like(w.mfree)
    add_assign(a, ga, ca, ma, 1)
    w.gfree = w.gfree - np.maximum(ga - gv, 0)
    w.cfree = w.cfree - np.maximum(ca - cv, 0)
    w.mfree = w.mfree - np.maximum(ma - mv, 0)
    w.whole = np.bincount(w.gsrv[w.gfree >= MILLI], minlength=p.S)
    if res is not None:
        res.take(j, a, -1)
        res.job(k)
    b = w.place_free(k, w.shape(k))
    return b if b is not None and p.throughput_of(k, b) > 0 else None


def _shares_fit(res: GpuLeft, p: Problem, stopped, j: int, a: Assign) -> bool:
    """With ``stopped`` stopped, job j's shares in ``a`` fit the GPU memory
    and compute left: then both are taken into ``res`` (True); else ``res``
    is as it was (False)."""
    for v in stopped:
        res.take(v, p.fixed[v], 1)
    if res.fits(j, a):
        res.take(j, a, -1)
        return True
    for v in stopped:
        res.take(v, p.fixed[v], -1)
    return False


def kept_order(problem: Problem, assign: dict, *, spread: bool = True, grid: bool = False,
               stops: bool = False, deadline: Deadline | None = None) -> dict:
    """An answer that keeps the order (the backfill rule of the module
    notes): ``assign`` (a solver's, job index -> `Assign`, running jobs as
    the solver left them) walked down the ranks.

    With ``R`` what the running jobs hold, each pending job ``x`` by rank
    either keeps its place in ``assign`` when that still fits beside ``R``
    and the jobs ranked above it, or -- when the solver left it out, or a
    job ranked above took its room -- goes where it fits there (the fullest
    server that holds it, else a spread gang when ``spread``; at its
    request -- what "fits" means for the order: the grid's other points are
    a solver's freedom, not a job's claim -- or any grid point when
    ``grid``), else waits.  A job the order lists above a running job is
    the exception: the walk of `plan` let it claim any grid point and a
    spread before stopping anyone, and it goes there when the solver's own
    way leaves it out.  So a job waits
    only when it does not fit in what the running jobs and the jobs ranked
    above it leave, and an answer that keeps the order is returned as it
    is.  A job the solver left out that would run at throughput 0 where it
    fits (its profile has no positive point there) has no claim on the room
    and stays out, as the order check reads it
    (`alloc.testing.order_problems`).  Running jobs stay as ``assign`` has them (where they run unless
    the solver moved them; one it leaves out is stopped when the solver
    ``stops`` running jobs -- never one the core pinned -- else where it
    runs).  Where GPU memory or
    compute may bind (`alloc.resources.needs`) the walk counts them too.
    Out of ``deadline`` the rest of the answer is taken as far as it fits.
    When the walk still leaves a job out that ranks above one it places
    and the solver moved running jobs, it is walked again with the moves
    undone (each such job where it runs), and that walk is taken when the
    highest-ranked job it leaves out ranks lower (the ranks left out
    compared in order): a move is the solver's choice, a job's rank is
    not.  It is taken whatever it leaves out when the order's walk, run
    again on the layout the moves made (the jobs it pinned counted as work
    of their rank), would stop a job: the moves made room that a job
    ranked above running or pinned work takes by stopping lower-ranked
    work, which the walk before the solver could not see (it picks victims
    on the layout as given, and moves nothing).  When the solver moved
    jobs and a job the walk pinned ranks below a job left out, the walk
    again puts each job it set room aside for in that room first, and is
    taken when it leaves out the same jobs: the walk found the job left out
    no room beside those rooms, while the solver's arrangement of them (and
    its moves) may give it room that the pinned job holds.  The solver
    keeps time for this repair (`alloc.solve.repair_reserve`).

    The jobs the order's walk (`plan`) set room aside for hold a claim on
    that room: it fits beside the running jobs, the pinned ones and the
    room set aside for the others, a job pinned below it took what they
    left, and the walk stopped no running job ranked below it only because
    that room was there.  When the walk above leaves such a job waiting (a
    job ranked above it took its room where the solver put it, say), or
    the answer leaves one out, it is walked again with each of them placed
    in the room set aside for it first; so it is, too, when a job the order
    lists above a running job waits and the answer does not keep to that
    room (the walk found that job no room, victims included, beside it).

    Examples
    --------
    >>> from alloc import Cluster, Job, Placement, GpuShare, Server
    >>> from alloc.problem import compile_problem
    >>> from alloc.preempt import kept_order
    >>> c = Cluster((Server("s0", 8000, 8000, 4, "V100"),))
    >>> r = Placement("r", (GpuShare("s0/gpu0", 1000), GpuShare("s0/gpu1", 1000)),
    ...               {"s0": 100}, {"s0": 100})
    >>> jobs = [Job("r", 2, cpu=100, mem=100, current=r), Job("a", 2, cpu=100, mem=100),
    ...         Job("b", 1, cpu=100, mem=100), Job("c", 1, cpu=100, mem=100)]
    >>> p = compile_problem(c, jobs, order=["r", "a", "b", "c"], preempt="order")
    >>> bc = {2: p.make_assign(2, [2], 0), 3: p.make_assign(3, [3], 0)}
    >>> sorted(p.jobs[j].id for j in kept_order(p, bc) if j not in p.fixed)
    ['a']
    """
    p = problem
    if not p.pending:
        return assign
    out, claims = assign, {}
    if not _in_order(p, assign, stops, spread, grid) or _claims(p, assign, stops):
        out = _walk_down(p, assign, {}, spread, grid, stops, deadline)
        claims = _claims(p, out, stops)
        if claims:
            out = _walk_down(p, assign, claims, spread, grid, stops, deadline)
    moved = {r: a for r, a in p.fixed.items() if r in assign and not assign[r].same_as(a)}
    if not moved or (deadline is not None and deadline.expired()):
        return out
    # the solver's moves may have taken the room of a job ranked above one
    # placed, or opened room that a job ranked above running work would take
    # by stopping lower-ranked jobs; and where a job the walk pinned ranks
    # below one left out, the solver's arrangement of the room set aside
    # with its moves may have left that job room the walk never saw: walked
    # again on the walk's own layout (the moves undone, the room set aside
    # preferred)
    pinned_below = _pinned_passed_over(p, out)
    opened = _moves_open_victims(p, out, stops, deadline, pinned_below)
    if opened or _passed_over(p, out):
        prefer = _held(p) if pinned_below else claims
        again = _walk_down(p, {**assign, **moved}, prefer, spread, grid, stops, deadline)
        before, after = _waiting(p, out), _waiting(p, again)
        if opened or after > before or (pinned_below and after == before):
            out = again
    return out


def _held(p: Problem) -> dict:
    """The room the order's walk set aside for the jobs that run there at a
    positive throughput."""
    return {j: a for j, a in p.reserved.items() if p.throughput_of(j, a) > 0}


def _pinned_passed_over(p: Problem, out: dict) -> bool:
    """A pending job ``out`` leaves out ranks above a job the order's walk
    pinned."""
    if not p.pinned:
        return False
    low = max(int(p.rank[j]) for j in p.pinned)
    return any(int(p.rank[j]) < low for j in p.pending if j not in out)


def _moves_open_victims(p: Problem, out: dict, stops: bool, deadline: Deadline | None,
                        pinned_below: bool) -> bool:
    """The order's walk (`plan`), run on the layout ``out`` leaves the
    running jobs in, would stop a running job: the solver's moves made room
    where a job the order lists above running work fits once lower-ranked
    jobs stop, which the walk before the solver (on the layout as given)
    could not find.  The jobs the walk pinned count here as what they are in
    the caller's call, work placed at their rank, which a job ranked above
    them may take the room of.  Only when ``out`` leaves out a job ranked
    above running work, or above pinned work (``pinned_below``,
    `_pinned_passed_over`)."""
    if p.order_rank is None or not (pinned_below or _waits_above_running(p, out, stops)):
        return False
    q = object.__new__(Problem)
    q.__dict__.update(p.__dict__)
    q.fixed = {r: out.get(r, a) for r, a in p.fixed.items() if r in out or not stops
               or r in p.pinned}
    q.running = tuple(sorted(q.fixed))
    q.preempt, q.pinned = "order", frozenset()
    q.gpu_free, q.free_cpu, q.free_mem = p.gpu_free.copy(), p.free_cpu.copy(), p.free_mem.copy()
    for r, a in p.fixed.items():
        b = q.fixed.get(r)
        if b is not a:
            add_assign(a, q.gpu_free, q.free_cpu, q.free_mem, 1)
            if b is not None:
                add_assign(b, q.gpu_free, q.free_cpu, q.free_mem, -1)
    return bool(plan(q, deadline if deadline is not None else Deadline.never()).victims)


def _passed_over(p: Problem, out: dict) -> bool:
    """A pending job ``out`` leaves out ranks above one it places (a job the
    order's walk pinned was waiting in the caller's call: it counts as
    placed work of its rank)."""
    rank = p.rank
    low = max((int(rank[j]) for j in p.pending if j in out), default=-1)
    low = max([low] + [int(rank[j]) for j in p.pinned])
    return any(int(rank[j]) < low for j in p.pending if j not in out)


def _waiting(p: Problem, out: dict) -> list[int]:
    """The ranks of the pending jobs ``out`` leaves out, ascending: of two
    answers, the one with the larger list serves the ranks better (the
    highest-ranked job it leaves out ranks lower)."""
    return sorted(int(p.rank[j]) for j in p.pending if j not in out)


def _claims(p: Problem, out: dict, stops: bool) -> dict:
    """The room the order's walk set aside (`Plan.reserved`) for the jobs
    that run there at a positive throughput, when ``out`` does not keep to
    it and either leaves such a job out or leaves out a job the order lists
    above a running job it keeps (the walk found that job no room, victims
    included, beside the room set aside); else empty (nothing to walk
    again).  A running job ``out`` leaves out is stopped when ``stops``,
    else kept where it runs."""
    if all(j in out and out[j].same_as(a) for j, a in p.reserved.items()):
        return {}
    held = _held(p)
    return held if any(j not in out for j in held) or _waits_above_running(p, out, stops) \
        else {}


def _waits_above_running(p: Problem, out: dict, stops: bool) -> bool:
    """``out`` leaves out a job the order lists above a running job it keeps."""
    rank, listed = p.rank, p.order_rank or {}
    low = max((int(rank[r]) for r in p.fixed if (r in out or not stops) and r not in p.pinned),
              default=-1)
    return any(j not in out and int(rank[j]) < low and p.jobs[j].id in listed
               for j in p.pending)


def _walk_down(p: Problem, assign: dict, prefer: dict, spread: bool, grid: bool, stops: bool,
               deadline: Deadline | None) -> dict:
    """The walk of `kept_order`: each pending job by rank at its place in
    ``prefer`` or else in ``assign`` where that fits, else where it fits."""
    from .resources import needs
    w = _Walk(p)
    w.may_spread, w.grid = spread, grid
    out = {}
    for r, a in p.fixed.items():
        b = assign.get(r)
        if b is None and stops and r not in p.pinned:      # a pinned job is never stopped
            w._apply(a, 1)
            continue
        out[r] = a if b is None else b
        if b is not None and b is not a and not b.same_as(a):
            w._apply(a, 1)
            w._apply(b, -1)
    if needs(p.cluster, p.jobs) & {"gpu-memory", "gpu-compute"}:
        w.res = GpuLeft(p, out)
    tried: dict = {}                    # shape -> found no room (the room only shrinks)
    gf, cf, mf = w.gfree, w.cfree, w.mfree
    low_run = max((int(w.rank[r]) for r in out), default=-1)    # the walk's pins among them

    for j in sorted(p.pending, key=lambda j: w.rank[j]):
        if w.res is not None:
            w.res.job(j)
        got = next((a for a in (prefer.get(j), assign.get(j)) if a is not None
                    and _fits(a, gf, cf, mf) and (w.res is None or w.res.fits(j, a))), None)
        if got is not None:
            w.commit(j, got)
            out[j] = got
            continue
        if deadline is not None and deadline.expired():
            continue
        sh = w.shape(j)
        key = sh[:4] + (id(sh[4]),)
        if w.res is not None:
            key += (p.jobs[j].gpu_mem, p.jobs[j].gpu_compute)
        if key in tried:
            continue
        b = w.place_free(j, sh)
        if b is None and low_run > int(w.rank[j]) and _may_claim(p, j, spread, grid):
            b = _as_the_walk(w, j)
        if b is None:
            tried[key] = True
            continue
        if p.throughput_of(j, b) <= 0:
            continue            # it would run at throughput 0 there: no claim on the room
        w.commit(j, b)
        out[j] = b
    return out


def _as_the_walk(w: _Walk, j: int) -> Assign | None:
    """Job j in the walk's free capacity at any point of its grid (its
    request first), spread over servers if need be: the fallback of
    `kept_order` for a job whose request fits nowhere the solver places.
    The order's walk (`plan`) lets a job the order ranks above a running
    job claim any grid point and a spread before it stops anyone, so a job
    it set aside so is placed there rather than left waiting behind the
    lower-ranked work that holds its room."""
    grid, spread = w.grid, w.may_spread
    w.grid = w.may_spread = True
    try:
        return w.place_free(j, w.shape(j))
    finally:
        w.grid, w.may_spread = grid, spread


def _may_claim(p: Problem, j: int, spread: bool, grid: bool) -> bool:
    """Job j is listed in the order and the walk of `plan` may have set it
    aside where the solver does not place jobs: at another grid point than
    its request (``grid`` False), or spread over servers (``spread``
    False)."""
    if p.order_rank is None or p.jobs[j].id not in p.order_rank:
        return False
    if not grid and len(p.options[j]) > 1:
        return True
    job = p.jobs[j]
    return not spread and (job.gpus >= 2 and job.gpu_milli >= MILLI
                           and (job.locality is None or is_outer(job.locality))
                           or bool(job.even_servers))


def _in_order(p: Problem, assign: dict, stops: bool, spread: bool = True,
              grid: bool = True) -> bool:
    """The answer keeps the order on its face: no running job left out where
    that stops it, every pending job it places ranks above every one it
    leaves out (nothing lower-ranked took room), and no job left out that
    may claim room the solver does not place jobs in (`_may_claim`) ranks
    above a running job -- the walk would change nothing.  The jobs the
    order's walk pinned (`plan`) count as placed work of their rank
    (`_passed_over`).  Cheap: two passes over the pending jobs."""
    if stops and any(r not in assign and r not in p.pinned for r in p.fixed):
        return False
    if _passed_over(p, assign):
        return False
    rank = p.rank
    high_claim = None
    for j in p.pending:
        r = int(rank[j])
        if j not in assign and (high_claim is None or r < high_claim) \
                and _may_claim(p, j, spread, grid):
            high_claim = r
    return high_claim is None or not p.fixed or high_claim >= max(int(rank[r]) for r in p.fixed)


def _fits(a: Assign, gf, cf, mf) -> bool:
    """Assignment ``a`` fits the free milli, CPU and memory arrays."""
    return all(gf[g] >= m for g, m in a.gpus) and all(cf[s] >= v for s, v in a.cpu) and \
        all(mf[s] >= v for s, v in a.mem)


def reduced(problem: Problem, plan: Plan) -> Problem:
    """The problem the solver gets: the victims gone, the pinned jobs running
    where the walk put them, priorities set aside (the order ranks the jobs,
    and nothing may stop anything now), the room the walk set aside as its
    ``reserved`` (for `kept_order`)."""
    out = problem.reduced(set(plan.victims), plan.pinned)
    out.reserved = {out.job_index[problem.jobs[j].id]: a for j, a in plan.reserved.items()}
    return out


def lifted(problem: Problem, plan, alloc: Allocation, why=None) -> Allocation:
    """The allocation of the reduced problem, told for the caller's problem:
    the victims preempted (and unplaced, ``why(problem, victim, job)`` their
    reason), the pinned jobs started (not moved), ``stats["preempted_for"]``
    naming the job each victim was stopped for.  ``plan`` has ``victims``
    and ``pinned`` (a `Plan`, or the guarantee's)."""
    p = problem
    ids = {j: p.jobs[j].id for j in plan.victims}
    started = {p.jobs[j].id for j in plan.pinned}
    moved = tuple(j for j in alloc.moved if j not in started)
    # the same placements: the value finish() recomputed stands (pinned jobs never move)
    value = alloc.value - (p.move_cost or 0.0) * (len(moved) - len(alloc.moved))
    unplaced = set(alloc.unplaced) | set(ids.values())
    stats = dict(alloc.stats)
    stats["preempted_for"] = {ids[v]: p.jobs[b].id for v, b in sorted(plan.victims.items())}
    reasons = dict(alloc.reasons)
    reasons.update((ids[v], why(p, v, b) if why is not None else
                    f"preempted: stopped for {p.jobs[b].id!r}, which the order ranks above it "
                    f"and which could not otherwise be placed")
                   for v, b in plan.victims.items())
    return replace(alloc, unplaced=tuple(j.id for j in p.jobs if j.id in unplaced),
                   preempted=alloc.preempted + tuple(ids[v] for v in sorted(ids)),
                   moved=moved, value=value, stats=stats, reasons=reasons)


__all__ = ["GpuLeft", "PREEMPT_RULES", "Plan", "kept_order", "lifted", "plan", "reduced"]
