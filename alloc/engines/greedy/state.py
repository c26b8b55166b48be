r"""The greedy state: free CPU, memory and per-GPU milli while jobs are
placed one at a time, on top of the running jobs kept in place.

[`State`][alloc.engines.greedy.state.State] is what every greedy placement in
alloc builds on (the rules of `alloc.engines.greedy.rules`, value-aware
greedy and local search, Synergy's packers, DRF, Tiresias, the topology
descent).  GPUs inside a server are chosen to consolidate: the innermost
hierarchy node (switch, then socket) that fits, best fit among those; a
shared job takes the fullest GPU that still fits.  A whole-GPU job of
several GPUs that no single server holds may be spread over servers
(`State.try_spread`): the servers with the most usable GPUs first, inside
one domain of the innermost level above the servers that holds it.

Which server takes a job comes from the server index
(`alloc.engines.greedy.index`): per job shape, the servers that can take it,
ordered by the placement rule, caught up incrementally after each placement
(from the state's change logs) -- no scan of every server per job.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ...model import CLUSTER, MILLI, Status
from ...problem import Assign, Problem, Solution
from ...topology import is_outer
from .index import INNER_LEVELS, Finder, Shape, SpreadFinder, layout

#: change-log entries kept (beyond 8 per server) before the logs are dropped
LOG_LIMIT = 1_000_000


def _assign_maker():
    """A function building ``Assign(gpus, cpu, mem)`` (no caps) by setting its
    slots directly, without the frozen dataclass's checked ``__setattr__``
    per field (the same object; the plain constructor when `Assign` has
    other fields)."""
    from dataclasses import fields
    if tuple(f.name for f in fields(Assign)) != ("gpus", "cpu", "mem", "caps") or \
            not hasattr(Assign, "__slots__"):
        return Assign
    new = object.__new__
    set_g, set_c, set_m, set_k = (Assign.__dict__[f].__set__ for f in ("gpus", "cpu", "mem", "caps"))

    def make(gpus: tuple, cpu: tuple, mem: tuple) -> Assign:
        a = new(Assign)
        set_g(a, gpus)
        set_c(a, cpu)
        set_m(a, mem)
        set_k(a, ())
        return a
    return make


#: ``Assign(gpus, cpu, mem)``, built faster (see `_assign_maker`)
new_assign = _assign_maker()


class State:
    r"""Mutable free capacities for a problem: server CPU/memory, GPU milli.

    It starts from the capacities left by the running jobs kept in place
    (`Problem.fixed`); `assign` holds only what is placed on top.

    Parameters
    ----------
    problem : Problem

    Attributes
    ----------
    cpu_l, mem_l, g_l : list of int
        Free milli-cores and MiB per server, free milli-GPU per GPU (read
        them freely; change the state only through
        [`place`][alloc.engines.greedy.state.State.place],
        [`remove`][alloc.engines.greedy.state.State.remove] and
        `reassign`, which keep the index in step).
    cpu, mem, gfree : numpy.ndarray
        The same as numpy arrays, built from the lists when read (copies:
        writing to them changes nothing).
    whole, gsum, share : list of int
        Per server: whole free GPUs $W_s$, free milli-GPU
        $\sum_g f_g$, largest free share $Q_s$.
    dmax : dict of str to list of int
        Per declared inner level: whole free GPUs in the server's fullest node.
    assign, option : dict
        The assignments placed on top of the running jobs and their options.
    log, rlog : list of int
        Servers changed, in order (``rlog``: only capacity increases); the
        finders of `finder` catch up from them.
    """

    def __init__(self, problem: Problem):
        self.p = problem
        self.assign: dict[int, Assign] = {}
        self.option: dict[int, int] = {}
        self._setup(problem.free_cpu, problem.free_mem, problem.gpu_free)

    def _setup(self, cpu: np.ndarray, mem: np.ndarray, g: np.ndarray) -> None:
        p = self.p
        self.lay = lay = layout(p)
        self.S = p.S
        self.cpu_l = cpu.tolist()
        self.mem_l = mem.tolist()
        self.g_l = g.tolist()
        self.gsrv = lay.gpu_server
        self._first, self._ngpu, self._plain = lay.first, lay.ngpu, not lay.levels
        first = np.asarray(p.gpu_first, dtype=np.int64)
        n = np.asarray(p.srv_gpus, dtype=np.int64)
        csum = np.concatenate(([0], np.cumsum(g)))
        cwhole = np.concatenate(([0], np.cumsum(g == MILLI)))
        self.gsum = (csum[first + n] - csum[first]).tolist()
        self.whole = (cwhole[first + n] - cwhole[first]).tolist()
        share = np.zeros(p.S, dtype=np.int64)
        has = n > 0
        if has.any():
            share[has] = np.maximum.reduceat(g, first[has])
        self.share = share.tolist()
        self.dmax: dict[str, list[int]] = {}
        for level in lay.levels:
            dom = p.domain[level]
            cnt = np.bincount(dom, weights=(g == MILLI),
                              minlength=int(dom.max()) + 1 if len(dom) else 0)
            per = np.zeros(p.S, dtype=np.int64)
            if has.any():
                per[has] = np.maximum.reduceat(cnt[dom].astype(np.int64), first[has])
            self.dmax[level] = per.tolist()
        self.log: list[int] = []
        self.rlog: list[int] = []
        self.removals = 0
        self.version = 0
        self.shapes: dict[tuple, Shape] = {}
        self._raw: dict[tuple, Shape] = {}
        self._okmask: dict[tuple, tuple] = {}
        self._oktypes: dict[tuple, tuple] = {}
        self._buckets: list[list[set]] | None = None
        self._spread_fail: dict[tuple, int] = {}
        self._part_shapes: dict[int, Shape] = {}
        self._arrays: tuple[int, dict] | None = None
        self._gpu_array: tuple[int, np.ndarray] | None = None

    # ---------------------------------------------------------------- basics
    @property
    def cpu(self) -> np.ndarray:
        """Free milli-cores per server (a numpy copy of ``cpu_l``, read-only use)."""
        return self.arrays()["cpu"]

    @property
    def mem(self) -> np.ndarray:
        """Free MiB per server (a numpy copy of ``mem_l``, read-only use)."""
        return self.arrays()["mem"]

    @property
    def gfree(self) -> np.ndarray:
        """Free milli-GPU per GPU (a numpy copy of ``g_l``, read-only use)."""
        n = self.version
        if self._gpu_array is None or self._gpu_array[0] != n:
            self._gpu_array = (n, np.array(self.g_l, dtype=np.int64))
        return self._gpu_array[1]

    def copy(self) -> "State":
        """An independent copy (same problem; the finders are rebuilt on use)."""
        st = State.__new__(State)
        st.p = self.p
        st.assign, st.option = dict(self.assign), dict(self.option)
        st._setup(self.cpu, self.mem, self.gfree)
        return st

    def gpus_of(self, s: int) -> range:
        """Global indices of server s's GPUs."""
        first = self.lay.first[s]
        return range(first, first + self.lay.ngpu[s])

    def free_whole(self, s: int) -> list[int]:
        """Server s's whole free GPUs, ascending."""
        a = self.lay.first[s]
        gl = self.g_l
        return [g for g in range(a, a + self.lay.ngpu[s]) if gl[g] == MILLI]

    def place(self, j: int, a: Assign, option: int = 0):
        """Put job j at assignment ``a`` (option index ``option``); returns the
        servers whose capacity it changed."""
        touched = self._apply(a, -1)
        self.assign[j] = a
        self.option[j] = option
        return touched

    def put_all(self, placed: Sequence[tuple[int, Assign, int]]) -> None:
        """Put jobs at once on a state where nothing is placed yet:
        ``(job, assignment, option)`` each.  The free capacities less theirs
        and the server summaries computed again from them (as `copy` does):
        the state `place` one by one would leave, without its change logs
        (the finders are built on their next use)."""
        assert not self.assign and self.version == 0, "put_all on a state with placements"
        cl, ml, gl = list(self.cpu_l), list(self.mem_l), list(self.g_l)
        assign, option = self.assign, self.option
        for j, a, o in placed:
            for g, q in a.gpus:
                gl[g] -= q
            for s, c in a.cpu:
                cl[s] -= c
            for s, v in a.mem:
                ml[s] -= v
            assign[j] = a
            option[j] = o
        self._setup(np.array(cl, dtype=np.int64), np.array(ml, dtype=np.int64),
                    np.array(gl, dtype=np.int64))

    def remove(self, j: int) -> Assign:
        """Take job j out; returns its assignment."""
        a = self.assign.pop(j)
        self.option.pop(j, None)
        self.removals += 1
        self._apply(a, 1)
        return a

    def reassign(self, changes: Sequence[tuple[int, Assign, int]]) -> None:
        """Move placed jobs to new assignments at once: ``(job, assignment,
        option)`` each (e.g. new options on the same GPUs).  The net change
        per server and GPU is applied once; every server whose capacity
        changed is refreshed and logged once."""
        if len(changes) == 1 and self._resize(*changes[0]):
            return
        dc: dict[int, int] = {}
        dm: dict[int, int] = {}
        dg: dict[int, int] = {}
        for j, a, o in changes:
            old = self.assign[j]
            for s, v in old.cpu:
                dc[s] = dc.get(s, 0) + v
            for s, v in a.cpu:
                dc[s] = dc.get(s, 0) - v
            for s, v in old.mem:
                dm[s] = dm.get(s, 0) + v
            for s, v in a.mem:
                dm[s] = dm.get(s, 0) - v
            if old.gpus != a.gpus:
                for g, v in old.gpus:
                    dg[g] = dg.get(g, 0) + v
                for g, v in a.gpus:
                    dg[g] = dg.get(g, 0) - v
            self.assign[j] = a
            self.option[j] = o
        grew = False
        touched: set[int] = set()
        for s, v in dc.items():
            if v:
                self.cpu_l[s] += v
                touched.add(s)
                grew = grew or v > 0
        for s, v in dm.items():
            if v:
                self.mem_l[s] += v
                touched.add(s)
                grew = grew or v > 0
        gpu_srv = set()
        for g, v in dg.items():
            if v:
                self.g_l[g] += v
                gpu_srv.add(self.gsrv[g])
                grew = grew or v > 0
        for s in gpu_srv:
            self._refresh(s)
        for s in touched | gpu_srv:
            self.log.append(s)
            if grew:
                self.rlog.append(s)
        if grew:
            self.removals += 1
        self._changed()

    def _resize(self, j: int, a: Assign, option: int) -> bool:
        """`reassign` of one job to new CPU and memory on the same GPUs and
        single server; False (nothing done) for any other change."""
        old = self.assign[j]
        if old.gpus != a.gpus or len(old.cpu) != 1 or len(old.mem) != 1 or \
                len(a.cpu) != 1 or len(a.mem) != 1:
            return False
        (s, c0), (s1, m0), (s2, c1), (s3, m1) = old.cpu[0], old.mem[0], a.cpu[0], a.mem[0]
        if not s == s1 == s2 == s3:
            return False
        self.assign[j] = a
        self.option[j] = option
        dc, dm = c0 - c1, m0 - m1
        if dc or dm:
            self.cpu_l[s] += dc
            self.mem_l[s] += dm
            self.log.append(s)
            if dc > 0 or dm > 0:
                self.rlog.append(s)
                self.removals += 1
        self._changed()
        return True

    def _apply(self, a: Assign, sign: int):
        gl, gsrv = self.g_l, self.gsrv
        cpu, mem, gpus = a.cpu, a.mem, a.gpus
        if len(cpu) == 1 and len(mem) == 1:
            s, c = cpu[0]
            s2, m = mem[0]
            one = s == s2
            if one:
                for g, _ in gpus:
                    if gsrv[g] != s:
                        one = False
                        break
            if one:
                self.cpu_l[s] += sign * c
                self.mem_l[s] += sign * m
                if gpus:
                    self._shift(s, gpus, sign)
                self.log.append(s)
                if sign > 0:
                    self.rlog.append(s)
                self._changed()
                return (s,)
        touched = set()
        for g, q in gpus:
            gl[g] += sign * q
            touched.add(gsrv[g])
        cl = self.cpu_l
        for s, c in cpu:
            cl[s] += sign * c
            touched.add(s)
        ml = self.mem_l
        for s, m in mem:
            ml[s] += sign * m
            touched.add(s)
        for s in touched:
            self._refresh(s)
            self.log.append(s)
            if sign > 0:
                self.rlog.append(s)
        self._changed()
        return touched

    def _changed(self) -> None:
        """Count a change; drop the logs when they grow past a bound (every
        finder is rebuilt on its next query)."""
        self.version += 1
        if len(self.log) > LOG_LIMIT + 8 * self.S:
            for sh in self.shapes.values():
                for f in sh.finders.values():
                    f.pos = -1
            self.log.clear()
            self.rlog.clear()
            self._arrays = None

    def _shift(self, s: int, gpus, sign: int) -> None:
        """Add ``sign`` times the shares ``gpus`` (all on server s) to the free
        milli-GPU and update the server's summaries: as `_refresh`, the
        whole and summed counts by difference when no inner level is declared."""
        gl = self.g_l
        if self.lay.levels:
            for g, q in gpus:
                gl[g] += sign * q
            self._refresh(s)
            return
        dw = dq = 0
        for g, q in gpus:
            f = gl[g]
            if f == MILLI:
                dw -= 1
            f += sign * q
            gl[g] = f
            if f == MILLI:
                dw += 1
            dq += q
        w = self.whole[s]
        if dw:
            if self._buckets is not None:
                b = self._buckets[self.lay.cls[s]]
                b[w].discard(s)
                b[w + dw].add(s)
            w += dw
            self.whole[s] = w
        self.gsum[s] += sign * dq
        if w:
            self.share[s] = MILLI
        else:
            a = self.lay.first[s]
            self.share[s] = max(gl[a:a + self.lay.ngpu[s]])

    def _refresh(self, s: int) -> None:
        lay = self.lay
        n = lay.ngpu[s]
        if not n:
            return
        a = lay.first[s]
        gl = self.g_l[a:a + n]
        w = gl.count(MILLI)
        if self._buckets is not None and w != self.whole[s]:
            b = self._buckets[lay.cls[s]]
            b[self.whole[s]].discard(s)
            b[w].add(s)
        self.whole[s] = w
        self.gsum[s] = sum(gl)
        self.share[s] = max(gl)
        for level in lay.levels:
            best = 0
            for grp in lay.groups[level][lay.cls[s]]:
                k = 0
                for i in grp:
                    if gl[i] == MILLI:
                        k += 1
                if k > best:
                    best = k
            self.dmax[level][s] = best

    def solution(self, status: Status = Status.FEASIBLE, **stats) -> Solution:
        """The assignments placed so far as a [`Solution`][alloc.problem.Solution].

        The shapes' finders (which refer back to this state) are dropped: they
        are rebuilt on use, and a state whose cycle outlives the round would
        hold the problem, and every job in it, until a full collection."""
        for sh in self.shapes.values():
            sh.finders.clear()
        self.shapes.clear()
        self._raw.clear()
        return Solution(dict(self.assign), status, None, (), dict(stats))

    def value(self) -> float:
        """Objective value of the current assignment (model coefficients)."""
        p = self.p
        tot = 0.0
        for j, a in self.assign.items():
            s = a.cpu[0][0] if a.cpu else None
            tot += p.coef(j, self.option.get(j, 0), s)
        return tot

    # ----------------------------------------------------------------- index
    def arrays(self) -> dict:
        """numpy copies of the per-server free capacities (for building
        finders), kept in step with the change log: the servers changed
        since the last call are copied over, all of them only when many
        changed or the logs were dropped."""
        n = len(self.log)
        if self._arrays is not None and self._arrays[0] == n:
            return self._arrays[1]
        src = {"cpu": self.cpu_l, "mem": self.mem_l, "whole": self.whole, "gsum": self.gsum,
               "share": self.share, **self.dmax}
        if self._arrays is not None and 0 <= self._arrays[0] < n:
            chg = set(self.log[self._arrays[0]:n])
            if len(chg) <= self.S // 8:
                arr = self._arrays[1]
                idx = np.fromiter(chg, dtype=np.int64, count=len(chg))
                for name, v in src.items():
                    arr[name][idx] = [v[t] for t in chg]
                self._arrays = (n, arr)
                return arr
        arr = {name: np.array(v, dtype=np.int64) for name, v in src.items()}
        self._arrays = (n, arr)
        return arr

    def class_mask(self, j: int) -> tuple:
        """Per server class: may job j use it (its GPU type is allowed; every
        class for a CPU-only job)."""
        job = self.p.jobs[j]
        key = (job.gpus == 0, job.gpu_types)
        ok = self._okmask.get(key)
        if ok is None:
            types = self.p.types
            ok = tuple(job.gpus == 0 or (t >= 0 and job.allows(types[t]))
                       for _, _, _, t in self.lay.cap)
            self._okmask[key] = ok
        return ok

    def class_types(self, j: int) -> tuple[int, ...]:
        """The GPU type indices of the classes job j may use (`class_mask`),
        ascending."""
        job = self.p.jobs[j]
        key = (job.gpus == 0, job.gpu_types)
        ts = self._oktypes.get(key)
        if ts is None:
            ok, cap = self.class_mask(j), self.lay.cap
            ts = self._oktypes[key] = tuple(sorted({cap[c][3] for c in range(len(ok)) if ok[c]}))
        return ts

    def shape(self, j: int, option: int = 0) -> Shape:
        """The `alloc.engines.greedy.index.Shape` of job j at an option."""
        job = self.p.jobs[j]
        opt = self.p.options[j][option]
        raw = (job.gpus, job.gpu_milli, opt.cpu, opt.mem, job.locality, job.gpu_types,
               job.gpus_per_server)
        sh = self._raw.get(raw)
        if sh is None:
            ok = self.class_mask(j)
            loc = job.locality if (job.locality in self.lay.levels and job.gpus
                                   and job.gpu_milli == MILLI) else None
            key: tuple = (job.gpus, job.gpu_milli if job.gpus else MILLI, opt.cpu, opt.mem, loc,
                          ok)
            if job.even_servers:     # no server alone takes it: `try_spread` only
                ok = (False,) * len(ok)
                key = key[:-1] + (ok, ("even", job.gpus_per_server))
            sh = self.shapes.get(key)
            if sh is None:
                sh = Shape(key[0], key[1], opt.cpu, opt.mem, loc, ok, key)
                self.shapes[key] = sh
            self._raw[raw] = sh
        return sh

    def passes(self, sh: Shape, s: int) -> bool:
        """Can server s take a job of shape ``sh`` alone now?"""
        if not sh.ok[self.lay.cls[s]] or self.cpu_l[s] < sh.c or self.mem_l[s] < sh.m:
            return False
        k = sh.k
        if not k:
            return True
        if sh.q < MILLI:
            return self.share[s] >= sh.q
        if self.whole[s] < k:
            return False
        return sh.loc is None or self.dmax[sh.loc][s] >= k

    def finder(self, sh: Shape, rule: str, cls: int | None = None) -> Finder:
        """The `alloc.engines.greedy.index.Finder` of shape ``sh``
        under ``rule`` (one of `alloc.engines.greedy.index.RULES`;
        ``fit`` per server class ``cls``), built on first use."""
        f = sh.finders.get((rule, cls))
        if f is None:
            f = Finder(self, sh, rule, cls)
            sh.finders[(rule, cls)] = f
        return f

    # ------------------------------------------------------------ GPU choice
    def pick_gpus(self, sh: Shape, s: int) -> list[int] | None:
        """The GPUs a job of shape ``sh`` gets on server s (consolidated: the
        innermost node that fits, fewest free first; a share on the fullest
        GPU that fits), or None; ignores CPU and memory."""
        lay = self.lay
        a, n = lay.first[s], lay.ngpu[s]
        gl = self.g_l
        k = sh.k
        if sh.q < MILLI:
            best, best_free = None, MILLI + 1
            for g in range(a, a + n):
                f = gl[g]
                if sh.q <= f < best_free:
                    best, best_free = g, f
            return None if best is None else [best]
        free = [g for g in range(a, a + n) if gl[g] == MILLI]
        if len(free) < k:
            return None
        for level in lay.levels:
            fit = []
            for grp in lay.groups[level][lay.cls[s]]:
                gs = [a + i for i in grp if gl[a + i] == MILLI]
                if len(gs) >= k:
                    fit.append(gs)
            if fit:
                fit.sort(key=lambda gs: (len(gs), gs[0]))
                return fit[0][:k]
            if sh.loc == level:
                return None
        return free[:k]

    def gpus_on_server(self, j: int, s: int) -> list[int] | None:
        """GPUs for job j on server s alone (ignores CPU/memory), or None."""
        sh = self.shape(j, 0)
        if not sh.ok[self.lay.cls[s]]:
            return None
        if sh.k == 0:
            return []
        if sh.k > self.lay.ngpu[s]:
            return None
        return self.pick_gpus(sh, s)

    def fits_cpu(self, s: int, cpu: int, mem: int) -> bool:
        """Has server s ``cpu`` milli-cores and ``mem`` MiB free?"""
        return self.cpu_l[s] >= cpu and self.mem_l[s] >= mem

    def assign_on(self, j: int, s: int, sh: Shape) -> Assign:
        """Job j of shape ``sh`` on server s alone (s must pass the shape's
        test): its GPUs and all its CPU and memory there."""
        k = sh.k
        if not k:
            return new_assign((), ((s, sh.c),), ((s, sh.m),))
        q = sh.q
        if q == MILLI and self._plain:  # pick_gpus: the first k whole free GPUs
            gl, a = self.g_l, self._first[s]
            end = a + self._ngpu[s]
            g = gl.index(MILLI, a, end)
            if k == 1:
                return new_assign(((g, MILLI),), ((s, sh.c),), ((s, sh.m),))
            gpus = [(g, MILLI)]
            for _ in range(k - 1):
                g = gl.index(MILLI, g + 1, end)
                gpus.append((g, MILLI))
            return new_assign(tuple(gpus), ((s, sh.c),), ((s, sh.m),))
        picked = self.pick_gpus(sh, s)
        assert picked is not None, "assign_on a server that fails the shape's test"
        return new_assign(tuple((g, q) for g in sorted(picked)), ((s, sh.c),), ((s, sh.m),))

    def try_server(self, j: int, s: int, option: int = 0) -> Assign | None:
        """An assignment of job j on server s alone at the option, or None."""
        sh = self.shape(j, option)
        if not self.passes(sh, s):
            return None
        return self.assign_on(j, s, sh)

    # ----------------------------------------------------------------- spread
    def try_spread(self, j: int, option: int = 0,
                   servers: Sequence[int] | None = None) -> Assign | None:
        """Whole-GPU job j over several servers (most usable GPUs first, then
        lowest index), CPU and memory split in proportion to GPUs; honours a
        locality at a level above the servers (inside one of its domains,
        the first that holds it) and, with a preferred level, places it by
        Kueue's descent (`alloc.engines.greedy.descent`).  A server's usable
        GPUs are its whole free GPUs, at most as many as its free CPU and
        memory cover at the job's per-GPU share (rounded up).  An even
        spread (``gpus_per_server``) is `try_even`'s."""
        p = self.p
        job = p.jobs[j]
        if job.even_servers:
            return self.try_even(j, option, servers)
        if job.gpus < 2 or job.gpu_milli < MILLI or job.locality in ("server",) + INNER_LEVELS:
            return None
        if servers is None and job.preferred is not None and p.arrays.srv_domain:
            return self._spread_preferred(j, option)
        if servers is None and not is_outer(job.locality):
            return self._spread_indexed(j, option)
        if servers is None:
            return self._spread_domains(j, option)
        return self._spread_scan(j, option, servers)

    def try_even(self, j: int, option: int = 0,
                 servers: Sequence[int] | None = None) -> Assign | None:
        r"""An even spread of job j: $k$ = ``gpus_per_server`` whole GPUs on
        each of $n$ = ``gpus / k`` distinct servers (among ``servers`` when
        given), CPU and memory split evenly.  A server can hold a part when
        its type is allowed, it has $k$ whole free GPUs and
        $\lceil c / n \rceil$ milli-cores and $\lceil m / n \rceil$ MiB free
        ($c, m$: the option's CPU and memory).  The parts go to the $n$ such
        servers with the fewest whole free GPUs (ties: lowest index), so the
        spread fills servers already in use before it breaks whole ones;
        inside a server the part takes the innermost node that holds it
        (`pick_gpus`).  A failure is remembered until a capacity increases."""
        p = self.p
        job = p.jobs[j]
        k, n = job.gpus_per_server or job.gpus, job.even_servers
        opt = p.options[j][option]
        pc, pm = -(-opt.cpu // n), -(-opt.mem // n)
        ok, cls = self.class_mask(j), self.lay.cls
        key = ("even", k, n, pc, pm, ok)
        if servers is None and self.failed(key):
            return None
        whole, cpu, mem = self.whole, self.cpu_l, self.mem_l
        cand = sorted((whole[s], s) for s in (range(p.S) if servers is None else servers)
                      if ok[cls[s]] and whole[s] >= k and cpu[s] >= pc and mem[s] >= pm)
        if len(cand) < n:
            if servers is None:
                self.fail(key)
            return None
        part = self._part_shapes.get(k)
        if part is None:
            part = self._part_shapes[k] = Shape(k, MILLI, 0, 0, None, ok, ("part", k))
        gpus: list[int] = []
        for _, s in cand[:n]:
            got = self.pick_gpus(part, s)
            if got is None:             # k whole GPUs free there: never, kept for the types
                return None
            gpus += got
        a = p.make_assign(j, gpus, option)
        if all(cpu[s] >= c for s, c in a.cpu) and all(mem[s] >= m for s, m in a.mem):
            return a
        return None

    def _spread_domains(self, j: int, option: int) -> Assign | None:
        """`_spread_scan` over every server for a job whose locality is a
        level above the servers, on arrays: the domains in order of their
        first server that has CPU and memory free, those whose usable GPUs
        reach the job's tried in turn (most usable servers first, then
        index)."""
        p = self.p
        job = p.jobs[j]
        sh = self.shape(j, option)
        key = (sh.key, "domains", job.locality)
        if self.failed(key):
            return None
        arr = self.arrays()
        opt = p.options[j][option]
        pc, pm = -(-opt.cpu // job.gpus), -(-opt.mem // job.gpus)
        ok = np.asarray(sh.ok, dtype=bool)[self.lay.cls_array()]
        ok &= (arr["cpu"] > 0) & (arr["mem"] > 0)
        u = arr["whole"]
        if pc:
            u = np.minimum(u, arr["cpu"] // pc)
        if pm:
            u = np.minimum(u, arr["mem"] // pm)
        u = np.where(ok, u, 0)
        assert job.locality is not None
        dom = p.arrays.srv_domain[job.locality]
        D = int(dom.max()) + 1 if len(dom) else 0
        tot = np.bincount(dom, weights=u, minlength=D)
        cand = np.flatnonzero(ok)
        first = np.full(D, p.S, dtype=np.int64)
        np.minimum.at(first, dom[cand], cand)
        for d in sorted(np.flatnonzero(tot >= job.gpus).tolist(), key=lambda d: first[d]):
            members = np.flatnonzero((dom == d) & (u > 0))
            ordered = sorted(((int(s), int(u[s])) for s in members), key=lambda x: (-x[1], x[0]))
            a = self.take(j, option, ordered)
            if a is not None:
                return a
        self.fail(key)
        return None

    def _spread_preferred(self, j: int, option: int) -> Assign | None:
        """A preferred job by the descent: one node of its preferred level (or
        of the innermost level above the servers) if one holds it, else of
        the level above, ... up to its locality level or the cluster."""
        from .descent import domain_tree, preference_levels, tas_assign
        job = self.p.jobs[j]
        key = (self.shape(j, option).key, "preferred", job.locality, job.preferred)
        if self.failed(key):
            return None          # failed, and no capacity grew since (placements only take)
        levels = preference_levels(self.p, j)
        top = levels[-1]
        if top == CLUSTER:
            a = tas_assign(self, j, option, levels[0], required=False)
        else:
            a = tas_assign(self, j, option, levels[0], required=False,
                           top=domain_tree(self.p).index(top))
        if a is None:
            self.fail(key)
        return a

    def failed(self, key: tuple) -> bool:
        """True when a search under ``key`` failed (`fail`) and no capacity
        has grown since: placements only take, so it would fail again."""
        return self._spread_fail.get(key) == self.removals

    def fail(self, key: tuple) -> None:
        """Remember that a search under ``key`` failed on the state as it is."""
        self._spread_fail[key] = self.removals

    def usable(self, s: int, pc: int, pm: int) -> int:
        """Whole free GPUs of server s that its free CPU and memory cover at
        ``pc`` milli-cores and ``pm`` MiB per GPU."""
        u = self.whole[s]
        if pc:
            u = min(u, self.cpu_l[s] // pc)
        if pm:
            u = min(u, self.mem_l[s] // pm)
        return u

    def _spread_scan(self, j: int, option: int, servers) -> Assign | None:
        p = self.p
        job = p.jobs[j]
        sh = self.shape(j, option)
        cls = self.lay.cls
        cand = [s for s in (range(p.S) if servers is None else servers)
                if sh.ok[cls[s]] and self.cpu_l[s] > 0 and self.mem_l[s] > 0]
        if is_outer(job.locality):
            dom = p.arrays.srv_domain[job.locality]
            groups: dict[int, list[int]] = {}
            for s in cand:
                groups.setdefault(int(dom[s]), []).append(s)
            pools = list(groups.values())
        else:
            pools = [cand]
        opt = p.options[j][option]
        pc, pm = -(-opt.cpu // job.gpus), -(-opt.mem // job.gpus)
        for pool in pools:
            frees = sorted((-u, s) for s in pool if (u := self.usable(s, pc, pm)) > 0)
            a = self.take(j, option, [(s, -nu) for nu, s in frees])
            if a is not None:
                return a
        return None

    def take(self, j: int, option: int, ordered) -> Assign | None:
        """Take GPUs from ``ordered`` ``(server, usable)`` until the job has
        them all; the assignment if its CPU/memory split fits."""
        need, chosen = self.p.jobs[j].gpus, []
        for s, u in ordered:
            take = min(u, need)
            chosen.extend(self.free_whole(s)[:take])
            need -= take
            if need == 0:
                break
        if need:
            return None
        a = self.p.make_assign(j, chosen, option)
        if all(self.cpu_l[s] >= c for s, c in a.cpu) and all(self.mem_l[s] >= m for s, m in a.mem):
            return a
        return None

    def buckets(self) -> list[list[set]]:
        """Per class, the servers by whole free GPU count (kept up to date)."""
        if self._buckets is None:
            lay = self.lay
            self._buckets = [[set() for _ in range(cap[2] + 1)] for cap in lay.cap]
            for s in range(self.S):
                self._buckets[lay.cls[s]][self.whole[s]].add(s)
        return self._buckets

    def _spread_indexed(self, j: int, option: int) -> Assign | None:
        """`try_spread` over every server, from the shape's
        `alloc.engines.greedy.index.SpreadFinder` (most usable
        GPUs first, then index).  A failure is remembered until a capacity
        increases (placements only lower usable counts)."""
        sh = self.shape(j, option)
        key = (sh.key, "spread")
        if self.failed(key):
            return None
        f = sh.finders.get(("spread", None))
        if f is None:
            f = sh.finders[("spread", None)] = SpreadFinder(self, sh)
        need, ordered = self.p.jobs[j].gpus, []
        it = f.ordered()
        try:
            for s, u in it:
                ordered.append((s, u))
                need -= u
                if need <= 0:
                    break
        finally:
            it.close()
        if need > 0:
            self.fail(key)
            return None
        return self.take(j, option, ordered)


__all__ = ["INNER_LEVELS", "LOG_LIMIT", "State", "new_assign"]
