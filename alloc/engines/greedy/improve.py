r"""Value-aware heuristics: ``greedy-upgrade`` and ``local-search``.

``greedy-upgrade``
    1. Every job gets its *cheapest good option*: the CPU/memory point with the
       smallest footprint ``cpu / C_max + mem / M_max`` among those at least as
       fast as its request (a job whose profile is flat in memory or CPU gives
       the surplus back).
    2. Jobs are placed by priority, then by value density ``v_j / f_j`` (``f_j``
       the job's dominant share of a server: GPUs, CPU or memory), best fit on
       one server -- least $\ell_s - 10^{-3} v_{js}$ with $\ell_s$
       the exact best-fit leftover (`alloc.engines.greedy.rules.best_fit`)
       and $v_{js}$ the job's value there, ties to the lowest index --
       spread over servers only when no server can take them; a job its
       cheapest good option does not fit anywhere is placed so at its request
       when that fits.
    3. Upgrade: on every server the options of its jobs are re-chosen exactly
       (a multiple-choice knapsack over the server's free CPU and memory,
       solved by dynamic programming over Pareto states), which spends leftover
       CPU and memory where the marginal gain is largest.
    4. Refill: an upgrade may move a job to a point of less CPU or memory
       than it had, so room that a job left out in step 2 needed may now be
       free: the jobs still left out are tried again in the order of step
       2, as there, and steps 3 and 4 repeat while an upgrade frees room and
       a job gets placed.  So no job is left out that step 2 would place in
       the room the answer leaves.

``local-search``
    Starts from ``greedy-upgrade`` (or a given solution) and repeats, until no
    move helps or time runs out: *insert* an unplaced job on a server, re-choosing
    that server's options (the job may take them from its neighbours); *swap*
    an unplaced job with a placed one of lower value on a server.  Then each job
    still left out that fits what is left (one of no value, which no move
    gains by) is placed there as in step 2.  A move for
    a job re-chooses or takes out only jobs ranked no higher than it (the
    caller's order, else priority): a job is never displaced, nor its room
    given away, for one ranked below it.  Identical
    jobs are tried once per pass.  Deterministic for a given input and seed.

Speed.  The best-fit server of step 2 comes from the server index (per job
shape and server class, the class's fullest server that can take it; classes
compared exactly).  A job's values, cheapest option and density depend only
on its profile, weight, GPU count, share and options, and are computed once
per such signature.  The knapsack of a server depends only on the server's
GPU type, its free CPU and memory and the signatures of its jobs (in index
order), and is solved once per such key; its Pareto filter keeps, per state,
the best value among the kept states of no more memory as a staircase
($O(n \log n)$ instead of $O(n^2)$).  Moves stop at the deadline
inside a pass over the servers too.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import Sequence

from ...deadline import Deadline
from ...model import MILLI
from ...problem import Assign, Problem, job_type_key, option_of
from .rules import best_candidate, fit_candidates
from .state import State

BEAM = 300
#: servers between two deadline checks inside one move
CHECK_EVERY = 64
#: margin of the gain bound that lets a move skip a server (float sums)
BOUND_SLACK = 1e-6


def footprint(problem: Problem, j: int, o: int) -> float:
    """``cpu / C_max + mem / M_max`` of job j's option o (largest server capacities)."""
    opt = problem.options[j][o]
    cmax = max(int(problem.srv_cpu.max()), 1)
    mmax = max(int(problem.srv_mem.max()), 1)
    return opt.cpu / cmax + opt.mem / mmax


def dominant(problem: Problem, j: int, o: int) -> float:
    """Job j's dominant share of the largest server at option o: GPUs, CPU or memory."""
    job = problem.jobs[j]
    opt = problem.options[j][o]
    gmax = max(int(problem.srv_gpus.max()), 1)
    cmax = max(int(problem.srv_cpu.max()), 1)
    mmax = max(int(problem.srv_mem.max()), 1)
    return max(job.gpus * job.gpu_milli / (MILLI * gmax), opt.cpu / cmax, opt.mem / mmax, 1e-6)


def cheap_option(problem: Problem, j: int) -> int:
    """The option of least `footprint` (then lowest index) among those
    at least as fast as the request."""
    opts = problem.options[j]
    req = opts[0].base
    cand = [o for o in range(len(opts)) if opts[o].base >= req - 1e-12]
    return min(cand, key=lambda o: (footprint(problem, j, o), o))


def best_value(problem: Problem, j: int, o: int) -> float:
    """Job j's best coefficient at option o over the servers it may use (0 if none)."""
    servers: dict[int, int] = {}
    for s in problem.allowed_servers(j):
        servers.setdefault(int(problem.srv_type[s]), int(s))
    return max((problem.coef(j, o, s) for s in servers.values()), default=0.0)


class Tables:
    """What depends on a job only through its signature (profile, weight, GPU
    count, share, options): option values per GPU type, cheapest good option,
    value density.  Per call (keys hold object identities)."""

    def __init__(self, problem: Problem, st: State):
        self.p, self.st = problem, st
        lay = st.lay
        self.rep: dict[int, int] = {}
        for c, members in enumerate(lay.members):
            self.rep.setdefault(lay.cap[c][3], members[0])
        self._vals: dict[tuple, tuple] = {}
        self._cheap: dict[int, int] = {}
        self._dens: dict[tuple, float] = {}
        self._tkey: dict[tuple, tuple] = {}
        self._items: dict[tuple, tuple] = {}
        self._sig: dict[int, tuple] = {}
        self._ids: dict[tuple, int] = {}

    def sig(self, j: int) -> tuple:
        """The job's signature (what its values depend on)."""
        s = self._sig.get(j)
        if s is None:
            job = self.p.jobs[j]
            s = (id(job.profile), job.weight, job.gpus, job.gpu_milli, id(self.p.options[j]))
            self._sig[j] = s
        return s

    def vals(self, j: int, t: int) -> tuple:
        """``coef(j, o, s)`` for every option o on a server of GPU type index t."""
        key = (self.sig(j), t)
        v = self._vals.get(key)
        if v is None:
            s = self.rep[t]
            v = tuple(self.p.coef(j, o, s) for o in range(len(self.p.options[j])))
            self._vals[key] = v
        return v

    def value(self, j: int, o: int, s: int) -> float:
        """``coef(j, o, s)``."""
        return self.vals(j, self.st.lay.cap[self.st.lay.cls[s]][3])[o]

    def item(self, j: int, t: int) -> tuple:
        """What the knapsack of a server of GPU type index t sees of job j:
        ``(its options' (cpu, mem), their values)`` and a small id for it."""
        key = (self.sig(j), t)
        it = self._items.get(key)
        if it is None:
            body = (tuple((o.cpu, o.mem) for o in self.p.options[j]), self.vals(j, t))
            it = (body, self._ids.setdefault(body, len(self._ids)))
            self._items[key] = it
        return it

    def cheap(self, j: int) -> int:
        """`cheap_option` of job j."""
        opts = self.p.options[j]
        o = self._cheap.get(id(opts))
        if o is None:
            o = self._cheap[id(opts)] = cheap_option(self.p, j)
        return o

    def density(self, j: int, o: int) -> float:
        """Best value over the allowed servers divided by the dominant share."""
        job = self.p.jobs[j]
        key = (self.sig(j), o, job.gpu_types)
        d = self._dens.get(key)
        if d is None:
            best = max((self.vals(j, t)[o] for t in self.st.class_types(j)), default=0.0)
            d = best / dominant(self.p, j, o)
            self._dens[key] = d
        return d

    def type_key(self, j: int) -> tuple:
        """[`job_type_key`][alloc.problem.job_type_key] of job j (per job signature)."""
        job = self.p.jobs[j]
        key = (id(job.profile), job.gpus, job.gpu_milli, job.locality, id(self.p.options[j]),
               job.weight, job.gpu_types, job.min_gpus, job.max_gpus, job.tenant, job.guaranteed)
        k = self._tkey.get(key)
        if k is None:
            k = job_type_key(self.p, j)
            self._tkey[key] = k
        return k


class Local:
    """A greedy `alloc.engines.greedy.state.State` plus the
    single-server jobs of every server.

    Parameters
    ----------
    problem : Problem
    assign : dict of int to Assign, optional
        Assignments to start from (their options recovered by
        [`option_of`][alloc.problem.option_of]).

    Attributes
    ----------
    st : State
    tab : Tables
    on : list of set of int
        Per server, the placed jobs that use only that server.
    home : dict of int to int or None
        Per placed job, its one server (None: spread).
    """

    def __init__(self, problem: Problem, assign: dict[int, Assign] | None = None):
        self.p = problem
        self.st = State(problem)
        self.tab = Tables(problem, self.st)
        self.on: list[set[int]] = [set() for _ in range(problem.S)]
        self.home: dict[int, int | None] = {}
        #: per server, what its single-server jobs would gain at their best
        #: options (an upper bound of what re-choosing them can add)
        self.slack = [0.0] * problem.S
        self._dp: dict[tuple, tuple | None] = {}
        for j, a in sorted((assign or {}).items()):
            self.place(j, a, option_of(problem, j, a))

    def servers_of(self, a: Assign) -> set[int]:
        """The servers ``a`` has CPU or GPUs on."""
        gsrv = self.st.gsrv
        return {s for s, _ in a.cpu} | {gsrv[g] for g, _ in a.gpus}

    def place(self, j: int, a: Assign, o: int):
        """Place job j at ``a`` (option o)."""
        touched = self.st.place(j, a, o)
        if len(touched) == 1:
            s = next(iter(touched))
        else:
            ss = self.servers_of(a)
            s = next(iter(ss)) if len(ss) == 1 else None
        self.home[j] = s
        if s is not None:
            self.on[s].add(j)
            self.slack[s] += self._room(j, o, s)

    def _room(self, j: int, o: int, s: int) -> float:
        vals = self.tab.vals(j, self.st.lay.cap[self.st.lay.cls[s]][3])
        return max(vals) - vals[o]

    def remove(self, j: int) -> Assign:
        """Take job j out; returns its assignment."""
        s = self.home.pop(j, None)
        if s is not None:
            self.on[s].discard(j)
            self.slack[s] -= self._room(j, self.st.option[j], s)
        return self.st.remove(j)

    def value(self, j: int, o: int, s: int) -> float:
        """The objective's coefficient of job j at option o on server s."""
        return self.tab.value(j, o, s)

    # ------------------------------------------------------------ options
    def reoptimize(self, s: int, jobs: Sequence[int], cpu_free: int, mem_free: int,
                   must: int | None = None):
        """Best options for ``jobs`` (all placed) on server s within the free
        CPU/memory: (value, {job: option}) or None.

        The knapsack sees the jobs in a canonical order -- by what it sees of
        each (options and values, `Tables.item`), then index -- so that
        servers of one GPU type with the same free capacity and the same
        jobs up to identical ones share one solution."""
        lay, tab = self.st.lay, self.tab
        t = lay.cap[lay.cls[s]][3]
        items = sorted((tab.item(j, t), j) for j in jobs)
        key = (t, cpu_free, mem_free, tuple(it[1] for it, _ in items))
        if key in self._dp:
            hit = self._dp[key]
        else:
            hit = _knapsack([it[0] for it, _ in items], cpu_free, mem_free)
            if len(self._dp) > 200_000:
                self._dp.clear()
            self._dp[key] = hit
        if hit is None:
            return None
        return hit[0], {j: o for (_, j), o in zip(items, hit[1])}

    def server_free(self, s: int, excluding: Sequence[int] = ()) -> tuple[int, int]:
        """Free CPU/memory of s if its single-server jobs ``excluding`` were gone."""
        c, m = self.st.cpu_l[s], self.st.mem_l[s]
        assign = self.st.assign
        for j in excluding:
            a = assign[j]
            for ss, v in a.cpu:
                if ss == s:
                    c += v
            for ss, v in a.mem:
                if ss == s:
                    m += v
        return c, m

    def upgrade_server(self, s: int) -> float:
        """Re-choose the options of server s's jobs (`reoptimize` over
        its CPU and memory) when that raises their value; returns the gain."""
        jobs = sorted(self.on[s])
        if not jobs:
            return 0.0
        cur = sum(self.value(j, self.st.option[j], s) for j in jobs)
        c, m = self.server_free(s, jobs)
        res = self.reoptimize(s, jobs, c, m)
        if res is None or res[0] <= cur + 1e-12:
            return 0.0
        changes = []
        for j in jobs:
            o = res[1][j]
            if o == self.st.option[j]:
                continue
            opt = self.p.options[j][o]
            q = self.p.jobs[j].gpu_milli
            gpus = tuple((g, q) for g in sorted(g for g, _ in self.st.assign[j].gpus))
            changes.append((j, Assign(gpus, ((s, opt.cpu),), ((s, opt.mem),)), o))
        self.st.reassign(changes)
        self.slack[s] = sum(self._room(j, self.st.option[j], s) for j in jobs)
        return res[0] - cur

    def solution(self) -> dict[int, Assign]:
        """The assignments placed (running jobs not included)."""
        return dict(self.st.assign)


def _knapsack(items, cpu_free: int, mem_free: int):
    """Multiple-choice knapsack over (CPU, memory): ``items`` lists per job its
    options ``[(cpu, mem)]`` and their values; (best value, option per job) or
    None.  Pareto states in (cpu, mem, value), at most `BEAM` kept per
    job; ties: the first state reached, then the greatest choice tuple.
    A state ``(c, m)`` is keyed ``c * (mem_free + 1) + m``."""
    K = mem_free + 1
    states = [(0, (0.0, ()))]
    for opts, vals in items:
        ops = [(oc * K + om, oc, om, vals[o], (o,)) for o, (oc, om) in enumerate(opts)]
        nxt: dict[int, tuple[float, tuple]] = {}
        get = nxt.get
        for key, (v, ch) in states:
            c = key // K
            m = key - c * K
            for dk, oc, om, ov, o1 in ops:
                if c + oc > cpu_free or m + om > mem_free:
                    continue
                k2 = key + dk
                v2 = v + ov
                old = get(k2)
                if old is None or v2 > old[0] + 1e-12:
                    nxt[k2] = (v2, ch + o1)
        if not nxt:
            return None
        states = _pareto(nxt, K)
    return max(st[1] for st in states)


def _pareto(states: dict, K: int) -> list:
    """Drop states dominated in (cpu, mem, value) -- a kept state of no more
    CPU and memory at least as good (within 1e-12) -- keep at most BEAM.

    States are visited by (cpu, mem) (their keys); the kept ones of no more
    CPU are all earlier, and the best value among those of no more memory is
    read off a staircase (memory ascending, value strictly ascending)."""
    kept: list = []
    sm: list[int] = []
    sv: list[float] = []
    for kv in sorted(states.items()):
        m = kv[0] % K
        v = kv[1][0]
        i = bisect_right(sm, m)
        if i and sv[i - 1] >= v - 1e-12:
            continue
        kept.append(kv)
        k = i
        n = len(sv)
        while k < n and sv[k] <= v:
            k += 1
        sm[i:k] = [m]
        sv[i:k] = [v]
    if len(kept) > BEAM:
        kept.sort(key=lambda kv: -kv[1][0])
        kept = kept[:BEAM]
    return kept


def _fast_order(problem: Problem, key) -> list[int]:
    """[`job_order`][alloc.problem.job_order] with a tuple key, without a call per comparison."""
    pk = problem.prio_key
    return [t[-1] for t in sorted((pk[j],) + key(j) for j in problem.pending)]


def greedy_upgrade(problem: Problem, deadline: Deadline) -> Local:
    """Cheapest good option, value-density order, best fit; then per-server
    option upgrades (see the module notes).  Stops placing at the deadline."""
    loc = Local(problem)
    if deadline is not None and deadline.expired():
        return loc
    tab = loc.tab
    jobs = problem.jobs
    opt = {j: tab.cheap(j) for j in problem.pending}
    dens = {j: tab.density(j, opt[j]) for j in opt}
    order = _fast_order(problem, lambda j: (-dens[j], -jobs[j].gpus, j))
    for k, j in enumerate(order):
        if deadline is not None and k % 32 == 0 and deadline.expired():
            break
        place_any(loc, j, opt[j])
    while upgrade_all(loc, deadline) and refill(loc, order, opt, deadline):
        pass
    return loc


def refill(loc: Local, order: Sequence[int], opt: dict[int, int], deadline: Deadline) -> bool:
    """`place_any` every job of ``order`` not placed yet, at its option in
    ``opt`` (step 4 of the module notes); True when one was placed.  Stops
    at the deadline."""
    placed = False
    for k, j in enumerate([j for j in order if j not in loc.st.assign]):
        if deadline is not None and k % 32 == 0 and deadline.expired():
            break
        placed = place_any(loc, j, opt[j]) or placed
    return placed


def place_any(loc: Local, j: int, o: int) -> bool:
    """Job j at its cheapest good option ``o`` (`place_best`), else at its
    request (option 0) where that alone fits: a job is not left out for
    want of room at a cheaper point; True when placed."""
    return place_best(loc, j, o) or (o != 0 and place_best(loc, j, 0))


def place_best(loc: Local, j: int, o: int) -> bool:
    """Job j at option o on the best-fit server that takes it (step 2 of the
    module notes: least leftover less $10^{-3}$ its value there), else
    spread; True when placed."""
    st = loc.st
    sh = st.shape(j, o)
    cands = fit_candidates(st, sh)
    best: Assign | None
    if len(cands) == 1:
        best = st.assign_on(j, cands[0][1], sh)
    elif cands:
        s = best_candidate(st, sh, cands, _value_bonus(loc, j, o))
        best = st.assign_on(j, s, sh)
    else:
        best = st.try_spread(j, o)
    if best is None:
        return False
    loc.place(j, best, o)
    return True


def _value_bonus(loc: Local, j: int, o: int):
    """``s -> 1e-3 * value(j, o, s)``, read once per GPU type (the value
    depends on the server only through it)."""
    lay, tab = loc.st.lay, loc.tab
    cap, cls = lay.cap, lay.cls
    memo: dict[int, float] = {}

    def bonus(s: int) -> float:
        t = cap[cls[s]][3]
        v = memo.get(t)
        if v is None:
            v = memo[t] = 1e-3 * tab.vals(j, t)[o]
        return v
    return bonus


def upgrade_all(loc: Local, deadline: Deadline) -> bool:
    """`Local.upgrade_server` on every server that holds a placed job;
    True when some server's free CPU or memory grew (a job moved to a point
    of less of it).  Stops at the deadline."""
    st, freed = loc.st, False
    for k, s in enumerate([s for s in range(loc.p.S) if loc.on[s]]):
        if deadline is not None and k % 16 == 0 and deadline.expired():
            break
        c, m = st.cpu_l[s], st.mem_l[s]
        if loc.upgrade_server(s) and (st.cpu_l[s] > c or st.mem_l[s] > m):
            freed = True
    return freed


def local_search(problem: Problem, start: dict[int, Assign] | None = None, *,
                 deadline: Deadline, seed: int = 0) -> dict[int, Assign]:
    """Insert/swap moves with per-server option re-optimisation, from
    ``greedy-upgrade`` or ``start``, until no move helps or the deadline."""
    loc = greedy_upgrade(problem, deadline) if start is None else Local(problem, start)
    if start is not None:
        upgrade_all(loc, deadline)
    if deadline.expired():
        return loc.solution()
    tab = loc.tab
    kinds: dict[tuple, int] = {}
    dens = {j: tab.density(j, tab.cheap(j)) for j in problem.pending}
    order = _fast_order(problem, lambda j: (-dens[j], j))
    improved = True
    while improved and not deadline.expired():
        improved = False
        failed: set[int] = set()
        for j in [j for j in order if j not in loc.st.assign]:
            if deadline.expired():
                break
            kind = kinds.setdefault(tab.type_key(j), len(kinds))
            if kind in failed:
                continue
            if try_insert(loc, j, deadline) or try_swap(loc, j, deadline):
                improved = True
            else:
                failed.add(kind)
    # a job the moves left out (one of no value, say) that fits what is left
    # is placed there, moving no one: the answer leaves no job out beside room
    for j in [j for j in order if j not in loc.st.assign]:
        if deadline.expired():
            break
        place_any(loc, j, tab.cheap(j))
    return loc.solution()


def _below(loc: Local, j: int, s: int) -> list[int]:
    """Server s's single-server jobs ranked no higher than j: the ones a move
    for j may re-choose or take out.  The jobs ranked above j keep their
    options, so a move for j never frees room that an unplaced job ranked
    above j could use for j to take."""
    pk = loc.p.prio_key
    return sorted(k for k in loc.on[s] if pk[k] >= pk[j])


def _server_value(loc: Local, s: int, jobs) -> float:
    return sum(loc.value(k, loc.st.option[k], s) for k in jobs)


def _allowed(loc: Local, j: int):
    """The servers job j may use, ascending."""
    ok = loc.st.class_mask(j)
    if all(ok):
        return range(loc.p.S)
    cls = loc.st.lay.cls
    return [s for s in range(loc.p.S) if ok[cls[s]]]


def try_insert(loc: Local, j: int, deadline: Deadline) -> bool:
    """Insert unplaced job j on the server (lowest index among the best)
    where re-choosing that server's options gains most; False when no
    server gains or the deadline passes first."""
    best = None
    top, slack = _best_values(loc, j), loc.slack
    lay = loc.st.lay
    for n, s in enumerate(_allowed(loc, j)):
        if deadline is not None and n % CHECK_EVERY == 0 and n and deadline.expired():
            return False
        if best is not None and slack[s] + top[lay.cap[lay.cls[s]][3]] < best[0] - BOUND_SLACK:
            continue  # cannot gain more than the best so far
        gpus = loc.st.gpus_on_server(j, s)
        if gpus is None:
            continue
        jobs = _below(loc, j, s)
        c, m = loc.server_free(s, jobs)
        res = loc.reoptimize(s, jobs + [j], c, m)
        if res is None:
            continue
        gain = res[0] - _server_value(loc, s, jobs)
        if gain > 1e-9 and (best is None or gain > best[0] + 1e-12):
            best = (gain, s, jobs, res[1], gpus)
    if best is None:
        return False
    _, s, jobs, choice, gpus = best
    _apply(loc, s, jobs, choice, {j: gpus})
    return True


def try_swap(loc: Local, j: int, deadline: Deadline) -> bool:
    """Swap unplaced job j with a single-server job of lower value, ranked
    no higher than j, where re-choosing that server's options gains most;
    False when no swap gains or the deadline passes first."""
    p = loc.p
    best = None
    oj = max(range(len(p.options[j])), key=lambda o: p.options[j][o].base)
    vj = max((loc.tab.vals(j, t)[oj] for t in _types(loc, j)), default=0.0)
    top, slack = _best_values(loc, j), loc.slack
    lay = loc.st.lay
    for n, s in enumerate(_allowed(loc, j)):
        if deadline is not None and n % CHECK_EVERY == 0 and n and deadline.expired():
            return False
        if not loc.on[s] or (best is not None and slack[s] + top[lay.cap[lay.cls[s]][3]]
                             < best[0] - BOUND_SLACK):
            continue  # nothing to swap, or cannot gain more than the best so far
        jobs = _below(loc, j, s)
        cur = _server_value(loc, s, jobs)
        for v in jobs:
            if loc.value(v, loc.st.option[v], s) >= vj - 1e-12:
                continue
            gpus = _gpus_without(loc, j, s, v)
            rest = [k for k in jobs if k != v]
            res = None
            if gpus is not None:
                c, m = loc.server_free(s, jobs)  # v's share counted free
                res = loc.reoptimize(s, rest + [j], c, m)
            if res is None:
                continue
            gain = res[0] - cur
            if gain > 1e-9 and (best is None or gain > best[0] + 1e-12):
                best = (gain, s, v, rest, res[1], gpus)
    if best is None:
        return False
    _, s, v, rest, choice, gpus = best
    loc.remove(v)
    _apply(loc, s, rest, choice, {j: gpus})
    return True


def _best_values(loc: Local, j: int) -> dict[int, float]:
    """Per GPU type index job j may use, its best value there over options."""
    return {t: max(loc.tab.vals(j, t)) for t in _types(loc, j)}


def loc_option(loc: Local, j: int, a: Assign) -> int:
    """[`option_of`][alloc.problem.option_of] job j's assignment ``a``."""
    return option_of(loc.p, j, a)


def _gpus_without(loc: Local, j: int, s: int, v: int) -> list[int] | None:
    """The GPUs job j would get on server s were job v not there."""
    gl = loc.st.g_l
    held = loc.st.assign[v].gpus
    for g, q in held:
        gl[g] += q
    try:
        return loc.st.gpus_on_server(j, s)
    finally:
        for g, q in held:
            gl[g] -= q


def _types(loc: Local, j: int) -> list[int]:
    """GPU type indices of the classes job j may use."""
    return list(loc.st.class_types(j))


def _apply(loc: Local, s: int, jobs, choice, new_gpus):
    p = loc.p
    gp = {k: [g for g, _ in loc.st.assign[k].gpus] for k in jobs}
    gp.update(new_gpus)
    for k in jobs:
        loc.remove(k)
    for k, o in sorted(choice.items()):
        na = p.make_cpu_assign(k, s, o) if p.jobs[k].gpus == 0 else p.make_assign(k, gp[k], o)
        loc.place(k, na, o)
