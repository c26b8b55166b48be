"""Packing states for Synergy's allocators.

`ProblemPacker` works over a compiled [`Problem`][alloc.problem.Problem]
(GPU types, sharing, CPU-only jobs, running jobs kept in place) on the greedy
state and its server index (no scan of every server per job);
`FastPacker` over identical-GPU servers with whole-GPU jobs only (the
simulator's hot path: servers bucketed by free GPU count).  Both expose the
same methods to `alloc.solvers.synergy.tune`.
"""
from __future__ import annotations

from bisect import insort
from collections import defaultdict
from heapq import nsmallest
from typing import Iterable, Sequence

from ...model import MILLI
from ...problem import Assign, GridPoint, Problem, split
from ...topology import is_outer
from ...engines.greedy.state import INNER_LEVELS, State, new_assign
from ...engines.greedy.index import GPUS, WHOLE, Finder, Shape


#: the finder key of the ``gpus`` rule over every allowed class
_GPUS_ANY = (GPUS, None)


class ProblemPacker:
    """Packing state over a compiled [`Problem`][alloc.problem.Problem] (wraps the greedy
    [`State`][alloc.engines.greedy.state.State] and its server index; handles GPU types,
    sharing, CPU-only
    jobs).

    `fit` without a server list asks the index for the feasible server
    with the fewest free milli-GPU (``gpus`` rule).  When `capped` is
    set (Synergy TUNE), it counts per server the jobs placed here whose
    option could still be reverted to a cheaper one (`soft_targets`), and
    those jobs in all (`nsoft`)."""

    def __init__(self, problem: Problem):
        self.p = problem
        self.st = State(problem)
        self.opts = problem.options
        self._jobs_on: dict[int, set] = defaultdict(set)
        self._free_milli = int(problem.gpu_free.sum())
        self._caps: dict[tuple, list] = {}
        #: job -> the option TUNE may revert it to (None: no reverting)
        self.capped: dict | None = None
        #: per server, placed jobs whose option may still be reverted
        self.soft = [0] * problem.S
        #: placed jobs whose option may still be reverted
        self.nsoft = 0

    # sizes
    def need(self, j: int) -> int:
        """Milli-GPU job j asks for in total: its GPUs x milli per GPU."""
        return self.p.jobs[j].milli_total

    def free_milli(self) -> int:
        """Free milli-GPU over the whole cluster (kept up to date by
        [`place`][alloc.engines.greedy.state.State.place] and
        [`remove`][alloc.engines.greedy.state.State.remove])."""
        return self._free_milli

    def n(self, j: int) -> int:
        """GPUs job j asks for (0: CPU-only)."""
        return self.p.jobs[j].gpus

    def free(self, s: int) -> tuple[int, int]:
        """Free CPU (milli-cores) and memory (MiB) of server s."""
        return self.st.cpu_l[s], self.st.mem_l[s]

    def option(self, j: int) -> int:
        """Index of the option job j is placed at."""
        return self.st.option[j]

    def jobs_on(self, s: int):
        """Jobs placed through this packer with a part on server s."""
        return list(self._jobs_on[s])

    def servers_of(self, j: int) -> tuple[int, ...]:
        """The servers holding a part (CPU share) of job j."""
        return tuple(s for s, _ in self.st.assign[j].cpu)

    def nservers(self, j: int) -> int:
        """Number of servers job j is placed on (more than one: spread)."""
        return len(self.st.assign[j].cpu)

    def server_caps(self, j: int):
        """The distinct ``(gpus, cpu, mem)`` capacities of the servers job j may use."""
        ok = self.st.class_mask(j)
        caps = self._caps.get(ok)
        if caps is None:
            caps = sorted({(G, C, M) for (C, M, G, _), x in zip(self.st.lay.cap, ok) if x})
            self._caps[ok] = caps
        return caps

    def free_gpus(self, s: int) -> int:
        """Whole free GPUs (all 1000 milli free) of server s."""
        return self.st.whole[s]

    def room(self, j: int, s: int) -> bool:
        """True when server s alone has GPUs for job j (its GPU type, count and
        share; CPU and memory are not checked)."""
        return self.st.gpus_on_server(j, s) is not None

    # placement
    def fit(self, j: int, o: int, servers: Iterable[int] | None = None, mode: str = "any"):
        """Consolidated on the feasible server with the fewest free GPUs
        (``mode`` "one" or "any"), else spread ("spread" or "any")."""
        st = self.st
        if servers is None:
            if mode == "spread":
                return self.spread(j, o)
            sh = st.shape(j, o)
            f = sh.finders.get(_GPUS_ANY) or st.finder(sh, GPUS)
            s = f.top()
            if s is not None:
                return st.assign_on(j, s, sh)
            return None if mode == "one" else self.spread(j, o)
        cand = list(servers)
        if mode == "spread":
            return self.spread(j, o, servers=cand)
        sh = st.shape(j, o)
        best, best_key = None, None
        for s in cand:
            if not st.passes(sh, s):
                continue
            key = (st.gsum[s], s)
            if best_key is None or key < best_key:
                best, best_key = s, key
        if best is not None:
            return st.assign_on(j, best, sh)
        return None if mode == "one" else self.spread(j, o, servers=cand)

    def spread(self, j: int, o: int, servers: Sequence[int] | None = None) -> Assign | None:
        """Whole-GPU job j at option o over several servers, fewest whole free
        GPUs first (then index), as Synergy spreads a job.

        Each server gives ``min(free GPUs, GPUs still needed, free CPU //
        ceil(c / n), free memory // ceil(m / n))`` GPUs; the option's CPU and
        memory are split over the parts in proportion to their GPUs (largest
        remainder) and the spread fails if a part's share does not fit.  A
        locality above the servers keeps the job in one of its domains
        (`_spread_pools`); a server
        or finer locality, a fractional-GPU or a
        one-GPU job never spreads.  The same rule as `FastPacker.fit`."""
        p, st = self.p, self.st
        job = p.jobs[j]
        if job.gpus < 2 or job.gpu_milli < MILLI or job.locality in ("server",) + INNER_LEVELS:
            return None
        opt = p.options[j][o]
        pc, pm = -(-opt.cpu // job.gpus), -(-opt.mem // job.gpus)
        # over every server: a walk that ran out of usable GPUs runs out again
        # until some capacity grows
        key = (st.shape(j, o).key, "fewest") if servers is None and not is_outer(job.locality) \
            else None
        if key is not None and st.failed(key):
            return None
        for pool in self._spread_pools(j, servers):
            ordered, need = [], job.gpus
            for s in pool:
                u = st.usable(s, pc, pm)
                if u > 0 and st.cpu_l[s] > 0 and st.mem_l[s] > 0:
                    ordered.append((s, u))
                    need -= u
                    if need <= 0:
                        break
            if need > 0:
                if key is not None:
                    st.fail(key)
                continue
            a = st.take(j, o, ordered)
            if a is not None:
                return a
        return None

    def _spread_pools(self, j: int, servers: Sequence[int] | None):
        """The candidate servers of `spread`, each pool fewest whole free GPUs
        first (then index): one pool per domain under a locality above the
        servers (domains in order of their first server with free CPU and
        memory), else one;
        without a server list, lazily from the per-class free-GPU buckets."""
        p, st = self.p, self.st
        ok, cls, whole = st.class_mask(j), st.lay.cls, st.whole
        loc = p.jobs[j].locality
        if servers is None and not is_outer(loc):
            return [self._by_free_gpus(ok)]
        cand = [s for s in (range(p.S) if servers is None else servers)
                if ok[cls[s]] and st.cpu_l[s] > 0 and st.mem_l[s] > 0]
        groups: dict[object, list[int]] = {}
        dom = p.arrays.srv_domain[loc] if is_outer(loc) else None
        for s in cand:
            groups.setdefault(int(dom[s]) if dom is not None else None, []).append(s)
        return [sorted(g, key=lambda s: (whole[s], s)) for g in groups.values()]

    def _by_free_gpus(self, ok):
        """Every server of an allowed class with whole free GPUs, fewest first
        (then index), walking the free-GPU buckets one count at a time."""
        buckets = self.st.buckets()
        top = max((len(b) for c, b in enumerate(buckets) if ok[c]), default=0)
        for b in range(1, top):
            yield from sorted(s for c, x in enumerate(ok) if x and b < len(buckets[c])
                              for s in buckets[c][b])

    def _revertible(self, j: int, o: int) -> bool:
        if self.capped is None:
            return False
        cap = self.capped.get(j)
        if cap is None or cap == o:
            return False
        cur, new = self.opts[j][o], self.opts[j][cap]
        return not (new.cpu >= cur.cpu and new.mem >= cur.mem)

    def place(self, j: int, o: int, a: Assign) -> None:
        """Place job j at option o with assignment ``a``; the server job sets,
        the revertible counts (`soft`) and the free milli-GPU follow."""
        self.st.place(j, a, o)
        jobs_on = self._jobs_on
        if self.capped is not None and self._revertible(j, o):
            soft = self.soft
            self.nsoft += 1
            for s, _ in a.cpu:
                jobs_on[s].add(j)
                soft[s] += 1
        else:
            for s, _ in a.cpu:
                jobs_on[s].add(j)
        used = 0
        for _, m in a.gpus:
            used += m
        self._free_milli -= used

    def put_all(self, placed: Sequence[tuple[int, int, Assign]]) -> None:
        """Jobs placed at once on a packer where nothing is placed yet:
        ``(job, option, assignment)`` each, the packer left as `place` one
        by one would leave it (`State.put_all`)."""
        self.st.put_all([(j, a, o) for j, o, a in placed])
        jobs_on, soft, used = self._jobs_on, self.soft, 0
        for j, o, a in placed:
            revertible = self.capped is not None and self._revertible(j, o)
            self.nsoft += revertible
            for s, _ in a.cpu:
                jobs_on[s].add(j)
                if revertible:
                    soft[s] += 1
            for _, m in a.gpus:
                used += m
        self._free_milli -= used

    def remove(self, j: int) -> tuple[int, Assign]:
        """Take job j off; returns its option index and assignment (for
        [`place`][alloc.engines.greedy.state.State.place] to put it back)."""
        o = self.st.option[j]
        soft = self._revertible(j, o)
        self.nsoft -= soft
        a = self.st.remove(j)
        jobs_on = self._jobs_on
        for s, _ in a.cpu:
            jobs_on[s].discard(j)
            if soft:
                self.soft[s] -= 1
        freed = 0
        for _, m in a.gpus:
            freed += m
        self._free_milli += freed
        return o, a

    def refit_same(self, j: int, o: int, old: Assign):
        """Job j (removed) on the same GPUs/server at option o, or None."""
        a = self._same_place(j, o, old)
        st = self.st
        if all(st.cpu_l[s] >= c for s, c in a.cpu) and all(st.mem_l[s] >= m for s, m in a.mem):
            return a
        return None

    def _same_place(self, j: int, o: int, old: Assign) -> Assign:
        p = self.p
        if not old.gpus:
            return p.make_cpu_assign(j, old.cpu[0][0], o)
        if len(old.cpu) == 1:  # one server: all of the option there
            opt = p.options[j][o]
            s = old.cpu[0][0]
            q = p.jobs[j].gpu_milli
            gpus = old.gpus
            if len(gpus) != 1 or gpus[0][1] != q:
                gpus = tuple((g, q) for g in sorted(g for g, _ in gpus))
            return new_assign(gpus, ((s, opt.cpu),), ((s, opt.mem),))
        return p.make_assign(j, [g for g, _ in old.gpus], o)

    def revert(self, j: int, o: int) -> None:
        """Placed job j to option o on the same GPUs and servers (`refit_same`
        once its own CPU and memory are freed); left as it is when that does
        not fit."""
        st = self.st
        old = st.assign[j]
        a = self._same_place(j, o, old)
        cpu, mem = st.cpu_l, st.mem_l
        if len(old.cpu) == 1 and len(a.cpu) == 1 and len(old.mem) == 1 and len(a.mem) == 1:
            s = old.cpu[0][0]
            if cpu[s] + old.cpu[0][1] < a.cpu[0][1] or mem[s] + old.mem[0][1] < a.mem[0][1]:
                return
        else:
            fc: dict[int, int] = {}
            fm: dict[int, int] = {}
            for s, v in old.cpu:
                fc[s] = fc.get(s, 0) + v
            for s, v in old.mem:
                fm[s] = fm.get(s, 0) + v
            if not (all(cpu[s] + fc.get(s, 0) >= c for s, c in a.cpu)
                    and all(mem[s] + fm.get(s, 0) >= m for s, m in a.mem)):
                return
        old_o = st.option[j]
        was, now = self._revertible(j, old_o), self._revertible(j, o)
        self.nsoft += now - was
        st.reassign(((j, a, o),))
        jobs_on, soft = self._jobs_on, self.soft
        for s, _ in old.cpu:
            jobs_on[s].discard(j)
            soft[s] -= was
        for s, _ in a.cpu:
            jobs_on[s].add(j)
            soft[s] += now

    def per_gpu(self, j: int) -> tuple[float, float]:
        """CPU (milli-cores) and memory (MiB) per GPU of job j at its current
        option: the option's totals over ``max(1, GPUs)``."""
        o = self.opts[j][self.st.option[j]]
        n = max(1, self.p.jobs[j].gpus)
        return o.cpu / n, o.mem / n

    def reclaim_key(self, j: int) -> tuple[int, float, float]:
        """How early TUNE reverts placed job j: its server count, then minus
        its CPU and memory per GPU (`per_gpu`)."""
        st = self.st
        o = self.opts[j][st.option[j]]
        n = self.p.jobs[j].gpus or 1
        return len(st.assign[j].cpu), -(o.cpu / n), -(o.mem / n)

    def targets(self, j: int) -> list[list[tuple[int, int]]]:
        """Every reclaim target of job j: each server with GPU room, fewest
        whole free GPUs first (then index), and for a multi-GPU whole-GPU job
        without locality the cover of servers with the fewest free GPUs."""
        p, st = self.p, self.st
        n = max(1, p.jobs[j].gpus)
        ok, cls = st.class_mask(j), st.lay.cls
        singles = sorted((st.whole[s], s) for s in range(p.S) if ok[cls[s]] and self.room(j, s))
        out = [[(s, n)] for _, s in singles]
        cover = self.cover(j)
        if cover:
            out.append(cover)
        return out

    def cover(self, j: int) -> list[tuple[int, int]] | None:
        """For a multi-GPU whole-GPU job without locality: servers with free
        GPUs, fewest first (then index), until they hold its GPUs --
        ``[(server, GPUs taken)]`` -- else None."""
        job = self.p.jobs[j]
        if not (job.gpus >= 2 and job.gpu_milli == MILLI and job.locality is None):
            return None
        st = self.st
        lay = st.lay
        ok = st.class_mask(j)
        buckets = st.buckets()
        need, out = job.gpus, []
        for b in range(1, max((cap[2] for cap in lay.cap), default=0) + 1):
            pool = nsmallest(need, (s for c, x in enumerate(ok) if x and b < len(buckets[c])
                                    for s in buckets[c][b]))
            for s in pool:
                k = min(b, need)
                out.append((s, k))
                need -= k
                if need == 0:
                    return out
        return None

    def soft_targets(self, j: int):
        """The servers with GPU room for job j and a placed job whose option
        may still be reverted, fewest whole free GPUs first (then index),
        lazily (see `alloc.engines.greedy.index.Finder.ordered`)."""
        st = self.st
        sh = st.shape(j, 0)
        room = st.shapes.get(("room",) + sh.key)
        if room is None:
            room = Shape(sh.k, sh.q, -(1 << 62), -(1 << 62), sh.loc, sh.ok, ("room",) + sh.key)
            st.shapes[room.key] = room
        f = room.finders.get((WHOLE, "soft"))
        if f is None:
            f = Finder(st, room, WHOLE, flag=self.soft)
            room.finders[(WHOLE, "soft")] = f
        return f.ordered()


def spread_cover(order, need: int) -> list[tuple[int, int]] | None:
    """Servers taken in the given ``(free GPUs, server)`` order (fewest free
    first) until ``need`` GPUs are covered: ``[(server, gpus taken)]``, or None
    when they hold too few."""
    cover = []
    for f, s in order:
        if f <= 0:
            continue
        k = min(f, need)
        cover.append((s, k))
        need -= k
        if need == 0:
            return cover
    return None


class FastPacker:
    """Packing state over identical-GPU servers with whole-GPU jobs only (the
    simulator's hot path).  Jobs are registered with `add_job`."""

    def __init__(self, gpus: Sequence[int], cpu: Sequence[int], mem: Sequence[int],
                 span: bool = True):
        self.G, self.C, self.M = list(gpus), list(cpu), list(mem)
        self.S = len(self.G)
        self.fg, self.fc, self.fm = list(self.G), list(self.C), list(self.M)
        self.opts: dict[int, Sequence[GridPoint]] = {}
        self._n: dict[int, int] = {}
        self.parts: dict[int, tuple] = {}
        self.opt: dict[int, int] = {}
        self.on: list[set] = [set() for _ in range(self.S)]
        self._free_gpus = sum(self.G)
        # servers by free GPU count, each bucket in ascending server order
        self._maxg = max(self.G, default=0)
        self._buckets0 = [[s for s in range(self.S) if self.G[s] == g]
                          for g in range(self._maxg + 1)]
        self.bucket = [list(b) for b in self._buckets0]

    def reset(self) -> None:
        """Empty every server: free capacities back to full, no placements.
        Registered jobs and their options are kept."""
        self.fg, self.fc, self.fm = list(self.G), list(self.C), list(self.M)
        self.parts.clear()
        self.opt.clear()
        self.on = [set() for _ in range(self.S)]
        self._free_gpus = sum(self.G)
        self.bucket = [list(b) for b in self._buckets0]

    def _move(self, s: int, old: int, new: int) -> None:
        b = self.bucket
        b[old].remove(s)
        insort(b[new], s)

    def add_job(self, j: int, n: int, opts: Sequence[GridPoint]) -> None:
        """Register job j asking ``n`` whole GPUs, with its options ``opts``
        (CPU milli-cores and memory MiB totals for the whole job)."""
        self._n[j] = n
        self.opts[j] = opts

    def need(self, j: int) -> int:
        """Milli-GPU job j asks for: its GPUs x 1000."""
        return self._n[j] * MILLI

    def free_milli(self) -> int:
        """Free milli-GPU over the cluster: free GPUs x 1000."""
        return self._free_gpus * MILLI

    def n(self, j: int) -> int:
        """GPUs job j asks for."""
        return self._n[j]

    def free(self, s: int) -> tuple[int, int]:
        """Free CPU (milli-cores) and memory (MiB) of server s."""
        return self.fc[s], self.fm[s]

    def option(self, j: int) -> int:
        """Index of the option job j is placed at."""
        return self.opt[j]

    def jobs_on(self, s: int):
        """Jobs with a part on server s."""
        return list(self.on[s])

    def servers_of(self, j: int) -> tuple[int, ...]:
        """The servers holding a part of job j, in part order."""
        return tuple(p[0] for p in self.parts[j])

    def nservers(self, j: int) -> int:
        """Number of servers job j is placed on (more than one: spread)."""
        return len(self.parts[j])

    def server_caps(self, j: int):
        """The distinct ``(gpus, cpu, mem)`` server capacities (every job may
        use every server)."""
        return list({(g, c, m) for g, c, m in zip(self.G, self.C, self.M)})

    def fit(self, j: int, o: int, servers: Iterable[int] | None = None, mode: str = "any"):
        """Where job j fits at option o, without placing it.

        Parameters
        ----------
        j : int
            A registered job.
        o : int
            Index of the option in the job's options (its CPU and memory totals).
        servers : iterable of int, optional
            The candidate servers (default: every server).
        mode : str
            ``"one"``: on one server only; ``"spread"``: over several servers
            only; ``"any"``: one server, else spread.

        Returns
        -------
        tuple or None
            The parts ``((server, GPUs, CPU milli-cores, memory MiB), ...)``, or
            None when the job does not fit.  On one server the job takes the
            feasible server with the fewest free GPUs (at least its GPU count,
            ties to the lowest index) and all of its CPU and memory.  Spread
            (jobs of two GPUs or more) walks the servers with free GPUs, fewest
            first, taking from each ``min(free GPUs, GPUs still needed,
            free CPU // ceil(c / n), free memory // ceil(m / n))`` GPUs; the
            option's CPU ``c`` and memory ``m`` are then split over the parts in
            proportion to their GPUs (largest remainder), and the spread fails
            if a part's share does not fit its server."""
        n = self._n[j]
        op = self.opts[j][o]
        c, m = op.cpu, op.mem
        fg, fc, fm = self.fg, self.fc, self.fm
        if servers is None and mode != "spread":
            # best fit: fewest free GPUs, then lowest index (as the scan below)
            b = self.bucket
            for g in range(n, self._maxg + 1):
                for s in b[g]:
                    if fc[s] >= c and fm[s] >= m:
                        return ((s, n, c, m),)
            if mode == "one":
                return None
        cand = range(self.S) if servers is None else servers
        if mode != "spread" and servers is not None:
            best = -1
            bg = 1 << 30
            for s in cand:
                g = fg[s]
                if n <= g < bg and fc[s] >= c and fm[s] >= m:
                    best, bg = s, g
            if best >= 0:
                return ((best, n, c, m),)
            if mode == "one":
                return None
        if n < 2:
            return None
        pc, pm = -(-c // n), -(-m // n)
        order = sorted((fg[s], s) for s in cand if fg[s] > 0)
        chosen, need = [], n
        for g, s in order:
            k = min(g, need, fc[s] // pc if pc else g, fm[s] // pm if pm else g)
            if k > 0:
                chosen.append((s, k))
                need -= k
                if need == 0:
                    break
        if need:
            return None
        ks = [k for _, k in chosen]
        cs, ms = split(c, ks), split(m, ks)
        parts = tuple((s, k, cc, mm) for (s, k), cc, mm in zip(chosen, cs, ms))
        for s, k, cc, mm in parts:
            if fc[s] < cc or fm[s] < mm:
                return None
        return parts

    def place(self, j: int, o: int, parts) -> None:
        """Place job j at option o on ``parts`` (as returned by `fit`);
        the servers' free capacities and GPU buckets follow."""
        fg, b = self.fg, self.bucket
        for s, k, c, m in parts:
            g = fg[s]
            b[g].remove(s)
            insort(b[g - k], s)
            fg[s] = g - k
            self.fc[s] -= c
            self.fm[s] -= m
            self.on[s].add(j)
            self._free_gpus -= k
        self.parts[j] = parts
        self.opt[j] = o

    def greedy(self, order: Iterable[int], choose) -> None:
        """`greedy_core` on this packer (same result, fewer calls)."""
        n_of, opts, b, maxg = self._n, self.opts, self.bucket, self._maxg
        fc, fm = self.fc, self.fm
        for j in order:
            n = n_of[j]
            if self._free_gpus < n:
                continue
            o = choose(j)
            op = opts[j][o]
            c, m = op.cpu, op.mem
            h = None
            for g in range(n, maxg + 1):
                for s in b[g]:
                    if fc[s] >= c and fm[s] >= m:
                        h = ((s, n, c, m),)
                        break
                if h is not None:
                    break
            if h is None and n >= 2:
                h = self.fit(j, o, mode="spread")
            if h is not None:
                self.place(j, o, h)

    def remove(self, j: int):
        """Take job j off; returns its option index and parts (for
[`place`][alloc.engines.greedy.state.State.place]
        or `refit_same`)."""
        parts = self.parts.pop(j)
        o = self.opt.pop(j)
        for s, k, c, m in parts:
            self._move(s, self.fg[s], self.fg[s] + k)
            self.fg[s] += k
            self.fc[s] += c
            self.fm[s] += m
            self.on[s].discard(j)
            self._free_gpus += k
        return o, parts

    def refit_same(self, j: int, o: int, old):
        """Job j (removed) on the same servers and GPU counts as ``old`` at
        option o, its CPU and memory split over them in proportion to its GPUs
        (largest remainder); None when a server lacks the free CPU or memory."""
        op = self.opts[j][o]
        ks = [k for _, k, _, _ in old]
        cs, ms = split(op.cpu, ks), split(op.mem, ks)
        parts = tuple((s, k, c, m) for (s, k, _, _), c, m in zip(old, cs, ms))
        for s, k, c, m in parts:
            if self.fc[s] < c or self.fm[s] < m:
                return None
        return parts

    def revert(self, j: int, o: int) -> None:
        """Placed job j to option o on the same servers and GPU counts
        (`refit_same` once it is taken off); put back as it was when that
        does not fit."""
        old_o, old = self.remove(j)
        h = self.refit_same(j, o, old)
        if h is None:
            self.place(j, old_o, old)
        else:
            self.place(j, o, h)

    def per_gpu(self, j: int) -> tuple[float, float]:
        """CPU (milli-cores) and memory (MiB) per GPU of job j at its current
        option: the option's totals over its GPU count."""
        op = self.opts[j][self.opt[j]]
        n = self._n[j]
        return op.cpu / n, op.mem / n

    def reclaim_key(self, j: int) -> tuple[int, float, float]:
        """How early TUNE reverts placed job j: its server count, then minus
        its CPU and memory per GPU (`per_gpu`)."""
        op = self.opts[j][self.opt[j]]
        n = self._n[j]
        return len(self.parts[j]), -(op.cpu / n), -(op.mem / n)

    def targets(self, j: int) -> list[list[tuple[int, int]]]:
        """Every reclaim target of job j: each server with at least its GPU
        count free, fewest free GPUs first (then index), as ``[(server, n)]``,
        then for a job of two GPUs or more the cover of `spread_cover`
        over the servers with free GPUs, fewest first."""
        n = self._n[j]
        fg = self.fg
        order = sorted((fg[s], s) for s in range(self.S) if fg[s] > 0)
        out = [[(s, n)] for g, s in order if g >= n]
        if n >= 2:
            cover = spread_cover(order, n)
            if cover:
                out.append(cover)
        return out
