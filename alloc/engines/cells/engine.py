"""The buddy-cell engine: the mutable state of HiveD's rules over a compiled
problem, and the steps every round is made of.

[`Engine`][alloc.engines.cells.engine.Engine] holds each GPU's free milli,
GPU memory in use and owner, the servers' free CPU and memory, the tenants'
bound cells and the buddy free lists, and places, removes, binds and
unbinds with a journal for trial moves; `restore_running` puts the running
jobs back and binds their tenants' cells; `current_assign` is the one
translation of a running job's placement into index form.  The rules --
which GPUs a guaranteed or opportunistic job takes, and in what order --
are written out in the package's notes (`alloc.engines.cells`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Collection, Mapping, Sequence

import numpy as np

from ...arrays import outer_levels
from ...model import CLUSTER, MILLI, Job
from ...objectives import scale_factor
from ...problem import Assign, Problem
from ...deadline import Deadline
from ...resources import gpu_mem_caps as gpu_mem_caps_of, mem_demand, share_mem
from ...topology import is_outer
from ...tenancy import (cell_size, cell_tree, infer_binding,
                        job_gpu_mem, quotas, safety)

INNER = ("switch", "socket")


class Engine:
    """Mutable HiveD state over a compiled problem (see the module notes).

    Parameters
    ----------
    problem : Problem
        The compiled problem.
    gpu_mem_caps : mapping, optional
        GPU memory per GPU type in MiB (co-location limits).
    colocate : bool
        Opportunistic jobs may co-run on guaranteed jobs' GPUs.
    """

    #: search many servers for a whole-GPU job without victims in numpy
    #: (`_pick_first`; False: the plain loop over servers, the same answers)
    vectorised = True

    def __init__(self, problem: Problem, gpu_mem_caps=None, colocate: bool = True):
        p = self.p = problem
        c = p.cluster
        self.tree = tree = cell_tree(c)
        self.q = quotas(c)
        self.tenants = sorted(self.q)
        self.tid = {v: i for i, v in enumerate(self.tenants)}
        self.unused: dict[tuple[str, str, int], int] = {}
        for v, qv in self.q.items():
            for (t, lvl), n in qv.items():
                self.unused[(v, t, lvl)] = n
        self.cpu = p.srv_cpu.copy()
        self.mem = p.srv_mem.copy()
        self.gfree = np.full(p.G, MILLI, dtype=np.int64)
        self.gcap = np.array(gpu_mem_caps_of(c, gpu_mem_caps), dtype=np.int64)
        self.gmem = np.zeros(p.G, dtype=np.int64)
        self.owner = np.full(p.G, -1, dtype=np.int64)
        #: per GPU, the milli each job on it holds, by job id (ids stay the same
        #: from one problem to the next; see `alloc.engines.cells.kept`)
        self.on_gpu: list[dict[str, int]] = [dict() for _ in range(p.G)]
        self.gguar = np.zeros(p.G, dtype=np.int64)   # guaranteed jobs on each GPU
        self.nbound = [0] * tree.N
        self.bound: dict[str, set[int]] = {v: set() for v in self.tenants}
        self.bound_use: dict[int, int] = {}          # bound node -> guaranteed GPU-uses
        self.free_max: dict[tuple[str, int], set[int]] = defaultdict(set)
        for n in range(tree.N):
            if tree.parent[n] < 0:
                self.free_max[(tree.gtype[n], tree.level[n])].add(n)
        self.assign: dict[int, Assign] = {}
        self.colocate = colocate
        self.gpu_tix = np.array([p.srv_type[s] for s in p.gpu_server], dtype=np.int64) \
            if p.G else np.zeros(0, dtype=np.int64)
        self._allowed: dict[tuple, tuple] = {}
        self._typed: dict[tuple, tuple] = {}
        self._fit: dict[tuple, np.ndarray] = {}
        self.first = p.gpu_first
        self.lv = {x: i for i, x in enumerate(p.levels)}
        #: idle GPUs (nothing on them: all milli and no GPU memory in use) per
        #: server and per node of each inner level, kept by place and remove
        self.idle = p.srv_gpus.astype(np.int64)
        #: free milli per server (the sum of ``f_g`` over its GPUs), kept by
        #: place and remove; the server of each GPU
        self.srv_free = (p.srv_gpus.astype(np.int64) * MILLI).tolist()
        self._srv = p.gpu_server.tolist()
        self.idle_dom = {lv: np.bincount(p.domain[lv]).astype(np.int64)
                         for lv in INNER if lv in self.lv and p.G}
        self.guaranteed_uses = 0                     # sum of gguar
        #: servers whose idle GPUs, CPU or memory changed, in order (what the
        #: kept searches of `alloc.engines.cells.first` catch up from)
        self.touched: list[int] = []
        self.touched_epoch = 0
        self._firsts: dict[tuple, object] = {}
        #: when set, placements and new cells are confined to these servers
        self.only_servers: set[int] | None = None
        #: running jobs no job may stop (`alloc.engines.cells.spare`)
        self.spared: set[int] = set()
        #: inverse operations since the outermost open checkpoint (None: none open)
        self._log: list | None = None
        self._marks = 0

    # ------------------------------------------------------------ journal
    def checkpoint(self) -> int:
        """Open a checkpoint; returns its mark for `rollback` / `keep`."""
        if self._log is None:
            self._log = []
        self._marks += 1
        return len(self._log)

    def rollback(self, mark: int) -> None:
        """Undo every change since the checkpoint ``mark`` and close it."""
        log, self._log = self._log, None
        assert log is not None, "rollback without an open checkpoint"
        while len(log) > mark:
            op = log.pop()
            if op[0] == "place":
                self.remove(op[1], release=False)
            elif op[0] == "remove":
                self.place(op[1], op[2])
            elif op[0] == "bind":
                self.unbind(op[1])
            else:
                self.bind(op[1], op[2])
        self._log = log
        self.keep(mark)

    def keep(self, mark: int) -> None:
        """Close the checkpoint ``mark`` keeping its changes."""
        self._marks -= 1
        if self._marks == 0:
            self._log = None

    # ------------------------------------------------------------ basics
    @property
    def size(self) -> "_Sizes":
        """GPUs of each placed job (job index -> count), read from
        ``assign``."""
        return _Sizes(self.assign)

    def job(self, j: int) -> Job:
        """The job of index ``j``."""
        return self.p.jobs[j]

    def mem_of(self, j: int, g: int) -> int:
        """GPU memory (MiB) job j takes on GPU g: its declared per-GPU memory,
        else ``cap_g * gpu_milli / 1000``."""
        return job_gpu_mem(self.job(j), int(self.gcap[g]))

    def held_mem(self, j: int, a: Assign, k: int) -> int:
        """GPU memory (MiB) job j holds on the k-th GPU of ``a``: the share's
        own memory cap when ``a`` carries one (a running job), else
        `mem_of`."""
        g = a.gpus[k][0]
        if a.caps and a.caps[k][0] is not None:
            from ...model import GpuShare
            return share_mem(self.job(j), GpuShare("", a.gpus[k][1], a.caps[k][0]),
                             int(self.gcap[g]))
        return self.mem_of(j, g)

    def gpus_of(self, s: int) -> range:
        """Global indices of server s's GPUs (consecutive)."""
        f = int(self.first[s])
        return range(f, f + int(self.p.srv_gpus[s]))

    def _use(self, g: int, milli: int, mem: int) -> None:
        """Take ``milli`` and ``mem`` MiB of GPU g (negative: give them back),
        counting its server's free milli and its change of idleness."""
        gfree, gmem = self.gfree, self.gmem
        f, u = gfree.item(g), gmem.item(g)
        was = f == MILLI and u == 0
        f -= milli
        u += mem
        gfree[g] = f
        gmem[g] = u
        s = self._srv[g]
        self.srv_free[s] -= milli
        if was != (f == MILLI and u == 0):
            d = -1 if was else 1
            self.idle[s] += d
            self.touched.append(s)
            for lv, cnt in self.idle_dom.items():
                cnt[self.p.domain[lv][g]] += d

    def place(self, j: int, a: Assign) -> None:
        """Put job j on ``a`` (capacity is the caller's check)."""
        job = self.job(j)
        caps, gcap = a.caps, self.gcap
        for k, (g, m) in enumerate(a.gpus):
            self._use(g, m, self.held_mem(j, a, k) if caps else mem_demand(job, gcap.item(g)))
            self.on_gpu[g][job.id] = m
            if job.guaranteed:
                self.gguar[g] += 1
                self.guaranteed_uses += 1
                n = self.cell_of(g)
                if n >= 0:
                    self.bound_use[n] = self.bound_use.get(n, 0) + 1
        for s, v in a.cpu:
            self.cpu[s] -= v
            self.touched.append(s)
        for s, v in a.mem:
            self.mem[s] -= v
        self.assign[j] = a
        if self._log is not None:
            self._log.append(("place", j))

    def remove(self, j: int, release: bool = True) -> Assign:
        """Take job j off its GPUs; ``release`` frees a bound cell left without
        guaranteed jobs."""
        a = self.assign.pop(j)
        if self._log is not None:
            self._log.append(("remove", j, a))
        job = self.job(j)
        caps, gcap = a.caps, self.gcap
        for k, (g, m) in enumerate(a.gpus):
            self._use(g, -m, -(self.held_mem(j, a, k) if caps else mem_demand(job, gcap.item(g))))
            self.on_gpu[g].pop(job.id, None)
            if job.guaranteed:
                self.gguar[g] -= 1
                self.guaranteed_uses -= 1
                n = self.cell_of(g)
                if n >= 0:
                    self.bound_use[n] -= 1
                    if release and self.bound_use[n] == 0:
                        self.unbind(n)
        for s, v in a.cpu:
            self.cpu[s] += v
            self.touched.append(s)
        for s, v in a.mem:
            self.mem[s] += v
        return a

    # ------------------------------------------------------------ binding
    def cell_of(self, g: int) -> int:
        """The bound cell holding GPU g, or -1 when g lies in no tenant's bound
        cell."""
        v = self.owner[g]
        if v < 0:
            return -1
        for n in self.tree.anc[g]:
            if n in self.bound_use:
                return n
        return -1

    def bind(self, n: int, v: str) -> None:
        """Bind physical cell n to a virtual cell of tenant v (buddy split)."""
        tree = self.tree
        path = []
        x = n
        while x >= 0:
            path.append(x)
            x = tree.parent[x]
        path.reverse()                       # root .. n
        top = next(i for i, x in enumerate(path) if self.nbound[x] == 0)
        self.free_max[(tree.gtype[path[top]], tree.level[path[top]])].discard(path[top])
        for i in range(top, len(path) - 1):
            for ch in tree.children[path[i]]:
                if ch != path[i + 1]:
                    self.free_max[(tree.gtype[ch], tree.level[ch])].add(ch)
        sz = len(tree.gpus[n])
        for x in path:
            self.nbound[x] += sz
        vi = self.tid[v]
        for g in tree.gpus[n]:
            self.owner[g] = vi
        self.bound[v].add(n)
        self.bound_use[n] = 0
        self.unused[(v, tree.gtype[n], tree.level[n])] -= 1
        if self._log is not None:
            self._log.append(("bind", n))

    def unbind(self, n: int) -> None:
        """Release bound cell n (merged with free buddies)."""
        tree = self.tree
        v = self.tenants[self.owner[tree.gpus[n][0]]]
        for g in tree.gpus[n]:
            self.owner[g] = -1
        sz = len(tree.gpus[n])
        x = n
        while x >= 0:
            self.nbound[x] -= sz
            x = tree.parent[x]
        cur = n
        while tree.parent[cur] >= 0 and self.nbound[tree.parent[cur]] == 0:
            par = tree.parent[cur]
            for ch in tree.children[par]:
                self.free_max[(tree.gtype[ch], tree.level[ch])].discard(ch)
            cur = par
        self.free_max[(tree.gtype[cur], tree.level[cur])].add(cur)
        self.bound[v].discard(n)
        self.bound_use.pop(n, None)
        self.unused[(v, tree.gtype[n], tree.level[n])] += 1
        if self._log is not None:
            self._log.append(("unbind", n, v))

    def safe(self) -> bool:
        """Sharing safety of the current binding: every tenant's unbound virtual
        cells can still be bound on cells holding no bound GPU
        ([`alloc.tenancy.safety`][alloc.tenancy.safety])."""
        unused: dict[tuple[str, int], int] = defaultdict(int)
        for (v, t, lvl), c in self.unused.items():
            unused[(t, lvl)] += c
        return safety(self.tree, list(self.owner >= 0), unused).ok

    def descend(self, n: int, lvl: int) -> list[int]:
        """Cells at level ``lvl`` inside node n (n itself when at lvl)."""
        tree = self.tree
        out, stack = [], [n]
        while stack:
            x = stack.pop()
            if tree.level[x] == lvl:
                out.append(x)
            elif tree.level[x] < lvl:
                stack.extend(reversed(tree.children[x]))
        return out

    def buddy_candidates(self, t: str, lvl: int):
        """(cell, split_level, buddy_ok) for binding a cell at (t, lvl): free
        cells at lvl, then cells carved from free cells further out."""
        first = True
        for h in range(lvl, -1, -1):
            nodes = self.free_max.get((t, h))
            if not nodes:
                continue
            for top in sorted(nodes):
                for c in self.descend(top, lvl):
                    if self.only_servers is not None:
                        srv = {int(self.p.gpu_server[g]) for g in self.tree.gpus[c]}
                        if not srv <= self.only_servers:
                            continue
                    yield c, h, first
            first = False

    # ------------------------------------------------------------ GPU choice
    def victims_on(self, j: int, g: int, milli: int, level: int,
                   among: set | None = None) -> list[int] | None:
        """Jobs to preempt on GPU g so that job j's share fits ([] = none), or
        None.  level 0: no victims; 1: opportunistic only; 2: any job j
        outranks; only jobs of ``among`` when given; in `stop_order`."""
        mem = self.mem_of(j, g)
        free, mfree = int(self.gfree[g]), int(self.gcap[g] - self.gmem[g])
        if free >= milli and mfree >= mem:
            return []
        if level == 0:
            return None
        on = self.jobs_on_gpu(g)
        pinned, spared = self.p.pinned, self.spared
        cands = [i for i in on if i not in pinned and i not in spared and self.p.outranks(j, i)
                 and (level >= 2 or not self.job(i).guaranteed)
                 and (among is None or i in among)]
        cands.sort(key=self.stop_order)
        out = []
        for i in cands:
            if free >= milli and mfree >= mem:
                break
            out.append(i)
            free += on[i]
            mfree += self.mem_of(i, g)
        return out if free >= milli and mfree >= mem else None

    def stop_order(self, i: int) -> tuple:
        """The order victims are taken in: opportunistic jobs first, then
        lower priority, lower weight, then index."""
        job = self.job(i)
        return job.guaranteed, job.priority, job.weight, i

    def jobs_on_gpu(self, g: int) -> dict[int, int]:
        """The jobs on GPU g (job index -> milli it holds)."""
        idx = self.p.job_index
        return {idx[i]: m for i, m in self.on_gpu[g].items()}

    def allowed(self, j: int) -> tuple[np.ndarray, list[bool]]:
        """Servers job j may use (one of its GPU types; any for a CPU-only
        job), as a boolean array and a list (kept per GPU-type list)."""
        job = self.job(j)
        key = (job.gpus == 0, job.gpu_types)
        hit = self._allowed.get(key)
        if hit is None:
            p = self.p
            ok = np.array([job.gpus == 0 or job.allows(t) for t in p.types] + [job.gpus == 0],
                          dtype=bool)
            mask = ok[np.where(p.srv_type >= 0, p.srv_type, len(p.types))]
            hit = self._allowed[key] = (mask, mask.tolist())
        return hit

    def room_ok(self, j: int, g: int, milli: int) -> bool:
        """GPU g has ``milli`` free and room for job j's GPU memory."""
        if self.gfree.item(g) < milli:
            return False
        cap = self.gcap.item(g)
        return cap - self.gmem.item(g) >= mem_demand(self.job(j), cap)

    def whole_room(self, j: int, mask) -> np.ndarray:
        """(G,) bool: `room_ok` for a whole GPU (``MILLI`` free) of job j on
        every GPU, within ``mask`` (None: all), on the integer arrays at once."""
        job = self.job(j)
        need = (np.int64(job.gpu_mem) if job.gpu_mem is not None
                else self.gcap * job.gpu_milli // MILLI)
        ok = (self.gfree >= MILLI) & (self.gcap - self.gmem >= need)
        return ok & mask if mask is not None else ok

    def pick_server(self, j: int, n: int, s: int, mask, level: int,
                    among: set | None = None):
        """(gpus, victims) for n GPUs of job j on server s among mask, or None.

        With victims, no more than the job needs: the victims it still fits
        without on s are dropped (`fewer_victims`).  ``among``: only jobs of
        it may be victims (and none is dropped)."""
        p = self.p
        job = self.job(j)
        opt = p.options[j][0]
        milli = job.gpu_milli
        if n == 0:
            if self.cpu[s] >= opt.cpu and self.mem[s] >= opt.mem:
                return [], set()
            return None
        rng = self.gpus_of(s)
        if len(rng) < n:
            return None
        room: dict[int, list[int]] = {}
        if level == 0:
            a, b = rng.start, rng.stop
            free, used, cap = (x[a:b].tolist() for x in (self.gfree, self.gmem, self.gcap))
            ok = mask[a:b].tolist() if mask is not None else None
            for k in range(b - a):
                if (ok is None or ok[k]) and free[k] >= milli and \
                        cap[k] - used[k] >= mem_demand(job, cap[k]):
                    room[a + k] = []
        else:
            for g in rng:
                if mask is None or mask[g]:
                    vic = self.victims_on(j, g, milli, level, among)
                    if vic is not None:
                        room[g] = vic
        if len(room) < n:
            return None
        if n == 1 and milli < MILLI:
            g = min(room, key=lambda g: (len(room[g]), int(self.gfree[g]), g))
            chosen = [g]
        else:
            together = self._together(job, n, room)
            if together is None:
                return None
            chosen = together
        victims = set()
        for g in chosen:
            victims.update(room[g])
        cpu_need, mem_need = opt.cpu, opt.mem
        fc, fm = int(self.cpu[s]), int(self.mem[s])
        for i in victims:
            fc += dict(self.assign[i].cpu).get(s, 0)
            fm += dict(self.assign[i].mem).get(s, 0)
        if fc < cpu_need or fm < mem_need:
            if level == 0:
                return None
            extra = [i for i in self.jobs_on_server(s) if i not in victims
                     and i not in self.p.pinned and i not in self.spared
                     and self.p.outranks(j, i)
                     and (level >= 2 or not self.job(i).guaranteed)
                     and (among is None or i in among)]
            extra.sort(key=self.stop_order)
            for i in extra:
                if fc >= cpu_need and fm >= mem_need:
                    break
                victims.add(i)
                fc += dict(self.assign[i].cpu).get(s, 0)
                fm += dict(self.assign[i].mem).get(s, 0)
            if fc < cpu_need or fm < mem_need:
                return None
        if victims and among is None:
            return self.fewer_victims(
                chosen, victims, lambda keep: self.pick_server(j, n, s, mask, level, keep))
        return chosen, victims

    def fewer_victims(self, gpus, victims: set, search) -> tuple:
        """``(gpus, victims)`` with the victims the job still fits without
        dropped: each victim, the last in `stop_order` first (highest
        priority), is spared when ``search(among)`` -- the same search
        stopping only jobs of ``among``, the others -- places the job, whose
        GPUs are then the ones it chose among what they free.  A victim on
        several GPUs (a multi-GPU job) may free all the job needs alone,
        where GPUs chosen one by one would stop it and another."""
        for i in sorted(victims, key=self.stop_order, reverse=True):
            if i in victims:
                r = search(victims - {i})
                if r is not None:
                    gpus, victims = r
        return gpus, victims

    def _together(self, job: Job, n: int, room: Mapping[int, Collection[int]]) -> list[int] | None:
        """n of the GPUs of ``room`` (GPU -> its victims) on one server, those
        without victims first, then those whose victims stop first (the
        last of them in `stop_order`: opportunistic work before guaranteed,
        lower priority before higher), then by index: in the innermost
        switch, else socket, that holds n of them (fewest GPUs with victims,
        then the smallest such node, then the first); else the first n;
        None when the job's locality is such a level and no node of it
        holds n."""
        if any(len(v) for v in room.values()):
            last = {g: max(map(self.stop_order, v)) if len(v) else () for g, v in room.items()}
            order = sorted(room, key=lambda g: (len(room[g]) > 0, last[g], g))
        else:
            order = sorted(room)
        for lv in INNER:
            if lv not in self.lv:
                continue
            dom = self.p.domain[lv]
            groups: dict[int, list[int]] = defaultdict(list)
            for g in order:
                groups[int(dom[g])].append(g)
            fit = [gs for gs in groups.values() if len(gs) >= n]
            if fit:
                fit.sort(key=lambda gs: (sum(len(room[g]) > 0 for g in gs[:n]), len(gs), gs[0]))
                return fit[0][:n]
            if job.locality == lv:
                return None
        return order[:n]

    def jobs_on_server(self, s: int) -> list[int]:
        """Placed jobs holding CPU on server s, ascending."""
        return sorted(i for i, a in self.assign.items() if any(x == s for x, _ in a.cpu))

    def score(self, s: int, j: int, gpus: Sequence[int]) -> float:
        """Best-fit score of job j on server s with ``gpus`` (lower is tighter):
        the leftover fractions

            (cpu_s - cpu_j) / CPU_s + (mem_s - mem_j) / MEM_s
            + (sum of free milli on s - |gpus| * milli_j) / (1000 * GPUS_s)

        with lower-case the free and upper-case the total capacity of s
        (millicores, MiB, GPUs); the GPU term only on servers with GPUs."""
        p = self.p
        opt = p.options[j][0]
        sc = (self.cpu[s] - opt.cpu) / max(p.srv_cpu[s], 1) + \
             (self.mem[s] - opt.mem) / max(p.srv_mem[s], 1)
        if p.srv_gpus[s]:
            sc += (self.srv_free[s] - len(gpus) * self.job(j).gpu_milli) / \
                (MILLI * int(p.srv_gpus[s]))
        return float(sc)

    def pick(self, j: int, n: int, mask, level: int, servers=None, typed: bool = False):
        """Best placement (gpus, victims) of job j with n GPUs within mask
        (``typed``: the mask is the job's `type_mask`)."""
        p = self.p
        job = self.job(j)
        if job.even_servers:
            return self.pick_even(j, mask, servers)
        cnt = None                  # GPUs of mask per server (numpy, all servers)
        if mask is not None and n and p.G:
            cnt = self.typed(j)[1] if typed else self.per_server(mask)
        given = servers is not None
        if servers is None:
            if cnt is not None:
                servers = self._fitting(j, n) if typed else np.flatnonzero(cnt >= n)
                if self.only_servers is None and len(servers) > 64 and level == 0 \
                        and job.gpu_milli == MILLI and self.vectorised:
                    return self._pick_first(j, n, mask, cnt, servers, typed) or \
                        self._spread(j, n, mask, level, cnt, given)
                servers = servers.tolist()
            elif mask is not None and n:
                servers = []
            else:
                servers = np.flatnonzero(self.allowed(j)[0]).tolist()
        if self.only_servers is not None:
            servers = [s for s in servers if s in self.only_servers]
        best, best_key = None, None
        allowed = self.allowed(j)[1]
        found = 0
        many = len(servers) > 64 and n
        viable = None
        if many:
            # large clusters: best fit among the tightest servers that fit
            arr = np.asarray(servers, dtype=np.int64)
            free = cnt[arr] if cnt is not None else p.srv_gpus[arr]
            servers = arr[np.lexsort((arr, free))].tolist()
            # servers where no n GPUs are free (in one node of the job's
            # locality level): pick_server would find nothing there without victims
            viable = self.viable(j, n, mask) if level == 0 else None
        for s in servers:
            if not allowed[s] or (viable is not None and not viable[s]):
                continue
            r = self.pick_server(j, n, s, mask, level)
            if r is None:
                continue
            key = (len(r[1]), self.score(s, j, r[0]), s)
            if best_key is None or key < best_key:
                best, best_key = r, key
            if not r[1]:
                found += 1
                if found >= 8 and len(servers) > 64:
                    break
        if best is not None:
            return best
        return self._spread(j, n, mask, level, cnt, given, servers)

    def _spread(self, j: int, n: int, mask, level: int, cnt, given: bool, servers=None):
        """`pick_spread` when the job may spread (over ``servers``, or
        every server with a GPU of the mask), else None."""
        job = self.job(j)
        if n > 1 and job.gpu_milli == MILLI and (job.locality is None or is_outer(job.locality)):
            if not given:
                # no single server holds the job: every server with a GPU of the mask
                servers = np.flatnonzero(cnt > 0).tolist() if cnt is not None else \
                    np.flatnonzero(self.allowed(j)[0]).tolist()
                if self.only_servers is not None:
                    servers = [s for s in servers if s in self.only_servers]
            return self.pick_spread(j, n, mask, level, servers)
        return None

    def _pick_first(self, j: int, n: int, mask, cnt: np.ndarray, servers, typed: bool = False):
        """The loop of `pick` without victims for a whole-GPU job on many
        servers, in numpy: the servers where `pick_server` succeeds
        (n GPUs of the mask with a whole GPU and its memory free, in one node
        of the job's inner locality level, the CPU and memory free), the
        first 8 in the order (GPUs of the mask, index), the best
        `score` of those (then index)."""
        p, job = self.p, self.job(j)
        opt = p.options[j][0]
        if typed and job.gpu_mem is None:
            # room: the idle GPUs of its type; the order is fixed, so the
            # first 8 are found in growing slices of it
            c = self._firsts_of(j, n, opt).first(8)
            if not c:
                return None
        else:
            have = self._room(j, n, mask)
            arr = servers
            ok = (have[arr] >= n) & self.allowed(j)[0][arr] & (self.cpu[arr] >= opt.cpu) \
                & (self.mem[arr] >= opt.mem)
            cand = arr[ok]
            if not len(cand):
                return None
            key = cnt[cand] * p.S + cand
            if len(cand) > 8:
                key = key[np.argpartition(key, 7)[:8]]
            c = (np.sort(key) % p.S).tolist()       # the first 8 in the loop's order
        # the best score() of those (the same arithmetic on exact integers), then index
        best, best_key = None, None
        cpu, mem, free, srv_cpu, srv_mem, srv_gpus = \
            self.cpu, self.mem, self.srv_free, p.srv_cpu, p.srv_mem, p.srv_gpus
        for s in c:
            sc = (cpu.item(s) - opt.cpu) / max(srv_cpu.item(s), 1) + \
                (mem.item(s) - opt.mem) / max(srv_mem.item(s), 1)
            sc += (free[s] - n * job.gpu_milli) / (MILLI * srv_gpus.item(s))
            if best_key is None or (sc, s) < best_key:
                best, best_key = s, (sc, s)
        assert best is not None     # c is not empty
        if typed and job.gpu_mem is None:
            # pick_server's room on it: its idle GPUs (the type is the server's)
            a, b = int(self.first[best]), int(self.first[best] + p.srv_gpus[best])
            free, used = self.gfree[a:b].tolist(), self.gmem[a:b].tolist()
            room = {a + k: () for k in range(b - a) if free[k] == MILLI and not used[k]}
            gpus = self._together(job, n, room)
            assert gpus is not None, "the kept search disagrees with pick_server"
            return gpus, set()
        r = self.pick_server(j, n, best, mask, 0)
        assert r is not None and not r[1], "the vectorised test disagrees with pick_server"
        return r

    def _room(self, j: int, n: int, mask) -> np.ndarray:
        """Per server, the GPUs of ``mask`` where whole-GPU job j fits alone
        (all milli and its GPU memory free), in the fullest node of its inner
        locality level when it has one."""
        p, job = self.p, self.job(j)
        need = np.full(p.G, job.gpu_mem) if job.gpu_mem is not None else self.gcap
        room = mask & (self.gfree >= MILLI) & (self.gcap - self.gmem >= need)
        if job.locality in INNER and job.locality in self.lv:
            dom = p.domain[job.locality]
            per_dom = np.bincount(dom, weights=room, minlength=int(dom.max()) + 1)
            first, srv = self.first_nonempty()
            have = np.zeros(p.S)
            if len(srv):
                have[srv] = np.maximum.reduceat(per_dom[dom], first)
            return have
        return self.per_server(room)

    def idle_per_server(self, locality: str | None) -> np.ndarray:
        """Idle GPUs per server ([`idle`][alloc.solvers.gandiva.view.ServerView.idle]), or in its
fullest node of
        ``locality`` when that is an inner level of the cluster."""
        if locality not in self.idle_dom:
            return self.idle
        first, srv = self.first_nonempty()
        have = np.zeros(self.p.S, dtype=np.int64)
        if len(srv):
            starts = self.p.domain[locality][first]
            have[srv] = np.maximum.reduceat(self.idle_dom[locality], starts)
        return have

    def per_server(self, mask) -> np.ndarray:
        """Number of GPUs in ``mask`` on each server (an array over servers)."""
        first, srv = self.first_nonempty()
        if len(srv) == self.p.S:
            return np.add.reduceat(mask, first, dtype=np.int64)
        out = np.zeros(self.p.S, dtype=np.int64)
        if len(srv):
            out[srv] = np.add.reduceat(mask, first, dtype=np.int64)
        return out

    def viable(self, j: int, n: int, mask) -> np.ndarray | None:
        """Servers with n whole GPUs of ``mask`` free, all in one node of the
        job's locality level when that is a switch or socket (None: not
        decided here, e.g. for shared GPUs)."""
        job = self.job(j)
        if mask is None or not n or job.gpu_milli < MILLI or not self.p.G:
            return None
        room = mask & (self.gfree >= MILLI)
        if job.locality in INNER and job.locality in self.lv:
            dom = self.p.domain[job.locality]
            per_dom = np.bincount(dom, weights=room, minlength=int(dom.max()) + 1)
            first, srv = self.first_nonempty()
            best = np.zeros(self.p.S)
            if len(srv):
                best[srv] = np.maximum.reduceat(per_dom[dom], first)
            return best >= n
        return self.per_server(room) >= n

    def first_nonempty(self):
        """``(first GPU index, server)`` arrays over the servers that have GPUs
        (cached), the segments of per-server reductions over GPUs."""
        cache = getattr(self, "_fne", None)
        if cache is None:
            srv = np.flatnonzero(self.p.srv_gpus > 0)
            cache = self._fne = (np.asarray(self.first, dtype=np.int64)[srv], srv)
        return cache

    def pick_spread(self, j: int, n: int, mask, level: int, servers):
        """(gpus, victims) for n whole GPUs of job j over several of ``servers``
        (see the module notes), or None; with victims, no more than it needs
        (`fewer_victims`)."""
        r = self._spread_over(j, n, mask, level, servers)
        if r is None or not r[1]:
            return r
        return self.fewer_victims(
            r[0], r[1], lambda keep: self._spread_over(j, n, mask, level, servers, keep))

    def _spread_over(self, j: int, n: int, mask, level: int, servers, among=None):
        """`pick_spread` without dropping victims; only jobs of ``among``
        (when given) may be victims."""
        p = self.p
        job = self.job(j)
        opt = p.options[j][0]
        per_cpu = -(-opt.cpu // n)
        per_mem = -(-opt.mem // n)
        allowed = self.allowed(j)[1]
        servers = [s for s in servers if allowed[s]]
        if level == 0 and p.G:
            room = self.gfree >= MILLI
            if mask is not None:
                room &= mask
            have = self.per_server(room)
            if not servers or int(have[servers].sum()) < n:
                return None
            servers = [s for s in servers if have[s] > 0]
        free = self.whole_room(j, mask).tolist() if level == 0 else None
        rows = []
        for s in servers:
            gs: list[tuple[bool, int, list]]
            if free is not None:                # no victims: the GPUs free for it, in order
                gs = [(False, g, []) for g in self.gpus_of(s) if free[g]]
            else:
                gs = []
                for g in self.gpus_of(s):
                    if mask is not None and not mask[g]:
                        continue
                    vic = [] if self.room_ok(j, g, MILLI) else \
                        self.victims_on(j, g, MILLI, level, among)
                    if vic is not None:
                        gs.append((len(vic) > 0, g, vic))
                gs.sort()
            cap_c = int(self.cpu[s] // per_cpu) if per_cpu else len(gs)
            cap_m = int(self.mem[s] // per_mem) if per_mem else len(gs)
            k = min(len(gs), cap_c, cap_m)
            if k > 0:
                rows.append((s, gs[:k]))
        # one domain of the innermost level above the servers first (the
        # smallest that holds the job), then of the next level up, ..., then
        # the cluster; with a locality above the servers, its domains only
        doms = self.spread_levels(job)
        pools: dict[tuple, list] = defaultdict(list)
        for s, gs in rows:
            for k, (lv, dom) in enumerate(doms):
                pools[(k, lv, int(dom[s]) if dom is not None else -1)].append((s, gs))
        order = sorted(pools, key=lambda k: (k[0], sum(len(gs) for _, gs in pools[k]), k[2]))
        for key in order:
            pool = sorted(pools[key], key=lambda x: (-len(x[1]), x[0]))
            need, victims = n, set()
            chosen: list[int] = []
            for s, gs in pool:
                take = gs[:need]
                chosen.extend(g for _, g, _ in take)
                for _, _, vic in take:
                    victims.update(vic)
                need -= len(take)
                if need == 0:
                    break
            if need:
                continue
            a = p.make_assign(j, chosen, 0)
            if all(self.cpu[s] >= c for s, c in a.cpu) and all(self.mem[s] >= m for s, m in a.mem):
                return chosen, victims
        return None

    def spread_levels(self, job) -> list[tuple[str, np.ndarray | None]]:
        """The levels a spread job's servers are pooled by, innermost first:
        ``(level, each server's domain id)``, the cluster last (ids None);
        only its locality level when that is above the servers."""
        arr = self.p.arrays
        if is_outer(job.locality):
            return [(job.locality, arr.srv_domain[job.locality])]
        outer = list(reversed(outer_levels(self.p.levels)))
        return [(lv, arr.srv_domain[lv]) for lv in outer] + [(CLUSTER, None)]

    # ------------------------------------------------------------ jobs
    def type_mask(self, j: int) -> np.ndarray:
        """Boolean array over GPUs: True where job j may use the GPU's type
        (read-only, kept per GPU-type list)."""
        return self.typed(j)[0]

    def _firsts_of(self, j: int, n: int, opt):
        """The kept search (`alloc.engines.cells.first.Firsts`) of job j's
        shape: its types, n GPUs, its CPU and memory, its inner locality."""
        from .first import Firsts
        job = self.job(j)
        loc = job.locality if job.locality in self.idle_dom else None
        key = (job.gpu_types, n, opt.cpu, opt.mem, loc)
        if len(self.touched) > 8 * self.p.S + 100_000:
            self.touched.clear()                   # every kept search rebuilds
            self.touched_epoch += 1
        f = self._firsts.get(key)
        if f is None:
            f = self._firsts[key] = Firsts(self, self._ordered(j, n), n, opt.cpu, opt.mem, loc)
        return f

    def have(self, s: int, locality: str | None) -> int:
        """Idle GPUs of server s, or in its fullest node of ``locality`` (an
        inner level of the cluster)."""
        if locality not in self.idle_dom:
            return int(self.idle[s])
        dom = self.p.domain[locality]
        a = int(self.first[s])
        k = int(self.p.srv_gpus[s])
        if not k:
            return 0
        return int(self.idle_dom[locality][dom[a]:dom[a + k - 1] + 1].max())

    def _ordered(self, j: int, n: int) -> np.ndarray:
        """`_fitting` in `pick`'s order: GPUs of the job's types,
        then index (kept)."""
        key = (self.job(j).gpu_types, n, "order")
        hit = self._fit.get(key)
        if hit is None:
            srv = self._fitting(j, n)
            cnt = self.typed(j)[1][srv]
            hit = self._fit[key] = srv[np.argsort(cnt * self.p.S + srv, kind="stable")]
            hit.flags.writeable = False
        return hit

    def _fitting(self, j: int, n: int) -> np.ndarray:
        """Servers with at least n GPUs of job j's types (kept per type list)."""
        key = (self.job(j).gpu_types, n)
        hit = self._fit.get(key)
        if hit is None:
            hit = self._fit[key] = np.flatnonzero(self.typed(j)[1] >= n)
            hit.flags.writeable = False
        return hit

    def typed(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(`type_mask`, its GPUs per server), kept per GPU-type list."""
        job = self.job(j)
        hit = self._typed.get(job.gpu_types)
        if hit is None:
            if not job.gpu_types:
                mask = np.ones(self.p.G, dtype=bool)
            else:
                ok = np.array([job.allows(t) for t in self.p.types] + [False], dtype=bool)
                mask = ok[self.gpu_tix]
            mask.flags.writeable = False
            cnt = self.per_server(mask)
            cnt.flags.writeable = False
            hit = self._typed[job.gpu_types] = (mask, cnt)
        return hit

    def commit(self, j: int, n: int, gpus, victims, preempted: set) -> None:
        """Preempt ``victims`` (removed, added to ``preempted``) and place job j
        on ``gpus`` at its first option, CPU and memory split over the
        servers in proportion to their GPUs; cells left without guaranteed
        jobs by the preemption are released."""
        for i in sorted(victims):
            if i in self.assign:
                self.remove(i, release=False)
                preempted.add(i)
        self.place(j, self.p.make_assign(j, gpus, 0))
        if victims:
            _release_empty(self)

    def place_cpu_only(self, j: int) -> bool:
        """Place a job that needs no GPU on the server where its CPU and memory
        fit best: servers without GPUs first, then the least normalised
        leftover CPU + memory.  Returns True when placed."""
        p = self.p
        opt = p.options[j][0]
        best, key = None, None
        for s in range(p.S):
            if self.cpu[s] >= opt.cpu and self.mem[s] >= opt.mem:
                k = (p.srv_gpus[s] > 0, (self.cpu[s] - opt.cpu) / max(p.srv_cpu[s], 1)
                     + (self.mem[s] - opt.mem) / max(p.srv_mem[s], 1), s)
                if key is None or k < key:
                    best, key = s, k
        if best is None:
            return False
        self.place(j, p.make_cpu_assign(j, best, 0))
        return True

    def place_guaranteed(self, j: int, n: int, max_level: int, preempted: set) -> bool:
        """Place guaranteed job j on n GPUs in its tenant's cells.

        For each preemption level up to ``max_level`` (0: none; 1:
        opportunistic victims; 2: also the tenant's own lower-priority
        guaranteed jobs) it tries the tenant's bound GPUs, then (levels 0 and
        1) binding new cells (`bind_and_place`): the steps A0, B0, A1,
        B1, A2 of the module notes.

        Parameters
        ----------
        j : int
            Job index.
        n : int
            GPUs to give it.
        max_level : int
            Highest preemption level allowed (0, 1 or 2).
        preempted : set
            Running jobs preempted so far; victims are added to it.

        Returns
        -------
        bool
            True when placed; False also for a job of an unknown tenant.
        """
        job = self.job(j)
        v = job.tenant
        if v not in self.tid:
            return False
        tmask = self.type_mask(j)
        vi = self.tid[v]
        for level in range(max_level + 1):
            owned = tmask & (self.owner == vi)
            r = self.pick(j, n, owned, level)
            if r is not None:
                self.commit(j, n, r[0], r[1], preempted)
                return True
            if level == 2:
                break
            if self.bind_and_place(j, n, tmask, level, preempted):
                return True
        return False

    def cell_levels(self, v: str, j: int):
        """(size, type, level) of v's unbound virtual cells usable by job j."""
        out = []
        for (vv, t, lvl), c in self.unused.items():
            if vv == v and c > 0 and self.job(j).allows(t):
                size = cell_size(self.tree, t, lvl)
                if size:
                    out.append((size, t, lvl))
        return sorted(out, key=lambda x: (x[0], x[1], -x[2]))

    def cell_candidates(self, j: int, n: int, tmask, level: int, prune: bool = True):
        """Yield (size, cell, buddy_ok, (gpus, victims)) for each free cell of
        job j's tenant, at a level that holds n GPUs, in which (with the
        tenant's free GPUs on the same servers) `pick` places j.
        ``prune`` skips, at level 0, cells with fewer than n GPUs with room."""
        job = self.job(j)
        v = job.tenant
        assert v is not None, "a tenant's job"
        vi = self.tid[v]
        for size, t, lvl in self.cell_levels(v, j):
            if size < n:
                continue
            for c, h, buddy_ok in self.buddy_candidates(t, lvl):
                cg = self.tree.gpus[c]
                if prune and level == 0 and \
                        sum(1 for g in cg if self.room_ok(j, g, job.gpu_milli)) < n:
                    continue
                mask = tmask & (self.owner == vi)
                mask[cg] = tmask[cg]
                srv = sorted({int(self.p.gpu_server[g]) for g in cg})
                r = self.pick(j, n, mask, level, servers=srv)
                if r is not None:
                    yield size, c, buddy_ok, r

    def bind_and_place(self, j: int, n: int, tmask, level: int, preempted: set) -> bool:
        """Place job j by binding new cells of its tenant (steps B0 / B1).

        First one free cell that holds the job (with the tenant's free GPUs
        on the same servers), in buddy order, a cell split out of order only
        if sharing safety still holds; then, for a multi-GPU job larger than
        any unbound cell, several cells bound one by one (near the tenant's
        free GPUs first) until its GPUs of the allowed types (``tmask``)
        hold the job.  Cells bound for a placement that fails are released.
        ``level`` is the preemption level (see
        [`place_guaranteed`][alloc.solvers.antman.scheduler.place_guaranteed]).
        Returns True when placed."""
        job = self.job(j)
        v = job.tenant
        assert v is not None, "a tenant's job"
        vi = self.tid[v]
        # one new cell that holds the job (with v's free GPUs on the same servers)
        for _size, c, buddy_ok, r in self.cell_candidates(j, n, tmask, level):
            self.bind(c, v)
            if not buddy_ok and not self.safe():
                self.unbind(c)
                continue
            self.commit(j, n, r[0], r[1], preempted)
            return True
        # several cells (a job larger than any unbound cell of v), near v's free GPUs
        if n <= 1:
            return False
        new = []
        while True:
            owned = tmask & (self.owner == vi)
            have = int(owned.sum())
            if have >= n:
                r = self.pick(j, n, owned, level)
                if r is not None:
                    self.commit(j, n, r[0], r[1], preempted)
                    return True
            lv = self.cell_levels(v, j)
            if not lv:
                break
            need = n - have
            big = [x for x in lv if x[0] >= need]
            size, t, lvl = big[0] if big else lv[-1]
            got = None
            near = {int(self.p.gpu_server[g]) for g in np.flatnonzero(owned)
                    if self.room_ok(j, int(g), job.gpu_milli)}
            cands = list(self.buddy_candidates(t, lvl))
            holds = self._holds_whole(j)
            cands.sort(key=lambda x: (holds[int(self.p.gpu_server[self.tree.gpus[x[0]][0]])],
                                      int(self.p.gpu_server[self.tree.gpus[x[0]][0]]) not in near))
            for c, h, buddy_ok in cands:
                self.bind(c, v)
                if buddy_ok or self.safe():
                    got = c
                    break
                self.unbind(c)
            if got is None:
                break
            new.append(got)
        for c in new:
            if self.bound_use.get(c, 0) == 0 and c in self.bound_use:
                self.unbind(c)
        return False

    def _holds_whole(self, j: int) -> np.ndarray:
        """Per server, how far it is from holding job j's CPU and memory
        whole at the option the engine places it at (``options[j][0]``, as
        `pick` does; another point of its grid does not count): 0 in what is
        free now, 1 once emptied, 2 never -- the order in which cells are
        bound for a job larger than each cell (the servers its GPUs can go
        to first)."""
        p = self.p
        o = p.options[j][0]
        now = (self.cpu >= o.cpu) & (self.mem >= o.mem)
        ever = (p.srv_cpu >= o.cpu) & (p.srv_mem >= o.mem)
        return np.where(now, 0, np.where(ever, 1, 2))

    def place_opportunistic(self, j: int, n: int) -> bool:
        """Place opportunistic job j on n GPUs without preempting: unbound GPUs
        first, then (co-location on, one shared GPU) GPUs of guaranteed jobs
        within their remaining milli and GPU memory, then GPUs without
        guaranteed jobs (idle GPUs of bound cells).  Returns True when
        placed."""
        job = self.job(j)
        tmask = self.type_mask(j)
        if not self.bound_use and not self.guaranteed_uses:
            # no bound cell and no guaranteed job: each mask below is the
            # type mask (or, for co-location, empty), so one search decides
            r = self.pick(j, n, tmask, 0, typed=True)
            if r is not None:
                self.commit(j, n, r[0], r[1], set())
            return r is not None
        masks = [lambda: tmask & (self.owner < 0)]
        if self.colocate and n == 1 and job.gpu_milli < MILLI:
            masks.append(lambda: tmask & (self.gguar > 0))
        masks.append(lambda: tmask & (self.gguar == 0))
        for mask in masks:
            r = self.pick(j, n, mask(), 0)
            if r is not None:
                self.commit(j, n, r[0], r[1], set())
                return True
        return False

    def try_place(self, j: int, n: int, level: int, preempted: set) -> bool:
        """Place job j on n GPUs: CPU-only when n is 0, else guaranteed (up to
        preemption ``level``, victims added to ``preempted``) or
        opportunistic.  Returns True when placed."""
        job = self.job(j)
        if n == 0:
            return self.place_cpu_only(j)
        if job.even_servers:
            return self.place_even(j)
        if job.guaranteed:
            return self.place_guaranteed(j, n, level, preempted)
        return self.place_opportunistic(j, n)

    def place_even(self, j: int) -> bool:
        """Place an even spread (`pick_even`) without preempting; True when
        placed."""
        r = self.pick_even(j, self.type_mask(j))
        if r is None:
            return False
        self.commit(j, self.job(j).gpus, r[0], (), set())
        return True

    def pick_even(self, j: int, mask, servers=None):
        r"""An even spread of job j (``gpus_per_server`` = k GPUs on each of
        ``parts`` servers; never a tenant's job) on GPUs of ``mask`` (among
        ``servers`` and ``only_servers`` when set), as `pick` answers:
        ``(gpus, [])`` or None.  The servers with k GPUs of the mask the job
        fits on alone (its GPU memory free) and $\lceil c / parts \rceil$
        milli-cores and $\lceil m / parts \rceil$ MiB free, fewest such GPUs
        first (then index); the lowest-index such GPUs on each."""
        p, job = self.p, self.job(j)
        k, parts = job.gpus_per_server or job.gpus, job.even_servers
        opt = p.options[j][0]
        pc, pm = -(-opt.cpu // parts), -(-opt.mem // parts)
        need = np.full(p.G, job.gpu_mem) if job.gpu_mem is not None else self.gcap
        room = self.type_mask(j) & (self.gfree >= MILLI) & (self.gcap - self.gmem >= need)
        if mask is not None:
            room = room & mask
        have = self.per_server(room)
        pool = range(p.S) if servers is None else servers
        cand = sorted((int(have[s]), s) for s in pool
                      if have[s] >= k and self.cpu[s] >= pc and self.mem[s] >= pm
                      and (self.only_servers is None or s in self.only_servers))
        if len(cand) < parts:
            return None
        gpus: list[int] = []
        for _, s in cand[:parts]:
            gpus += [g for g in self.gpus_of(s) if room[g]][:k]
        return gpus, []

    def sizes(self, j: int) -> list[int]:
        """GPU counts to try for job j, ascending: its elastic sizes from
        ``min_gpus`` (or ``gpus``) to ``gpus``; ``[0]`` for a CPU-only job."""
        job = self.job(j)
        lo = job.min_gpus if job.min_gpus is not None else job.gpus
        return elastic_sizes(job, lo, job.gpus) if job.gpus else [0]


class _Sizes:
    """The GPU count of each placed job: a read-only view of an engine's
    assignments."""
    __slots__ = ("assign",)

    def __init__(self, assign: dict):
        self.assign = assign

    def __getitem__(self, j: int) -> int:
        return len(self.assign[j].gpus)

    def __contains__(self, j: int) -> bool:
        return j in self.assign

    def __len__(self) -> int:
        return len(self.assign)

    def get(self, j: int, default=None):
        """The count of job j, or ``default`` when it is not placed."""
        a = self.assign.get(j)
        return default if a is None else len(a.gpus)


def elastic_sizes(job: Job, lo: int, hi: int) -> list[int]:
    """Sizes in [lo, hi] an elastic job may take: the profile's scaling points
    plus the requested and minimum counts (every size without scaling data)."""
    prof = job.profile
    if prof is None or not prof.scaling:
        return list(range(lo, hi + 1))
    pts = {int(n) for n in prof.scaling} | {job.gpus, job.min_gpus or job.gpus}
    return sorted(n for n in pts if lo <= n <= hi)


def _value(p: Problem, j: int, n: int) -> float:
    """The objective's coefficient of job j at size n with every other factor
    at 1 ([`Objective.coef`][alloc.objectives.Objective.coef] with the elastic
    ``scale(n)``): what ranks an elastic job's sizes before its real value on
    the GPUs it gets is computed."""
    job = p.jobs[j]
    return p.objective.coef(job, scale=scale_factor(job.profile, job, n), gpus=n)


def job_value(p: Problem, j: int, a: Assign) -> float:
    """Objective value of job j placed as ``a`` (the checker's formula)."""
    return p.value_of(j, a)


def current_assign(p: Problem, j: int) -> Assign | None:
    """Job j's running placement (``current``) in index form, or None when it
    is pending or its placement names a GPU or server the cluster lacks: the
    problem's one translation, `Problem.current_assign` (servers in index
    order, every CPU/memory entry kept, zero ones too, and the shares' GPU
    memory and compute caps), the very object the problem keeps when equal."""
    if p.jobs[j].current is None:
        return None
    try:
        a = p.current_assign(j)
    except KeyError:
        return None
    kept = p.fixed.get(j)            # the problem's own, when equal (the core then knows it)
    return kept if kept == a else a



def running_assign(p: Problem, j: int) -> Assign:
    """`current_assign` of a running job known to have one (a job the call
    keeps, e.g. the tenancy model's running jobs): never None.

    Examples
    --------
    >>> from alloc.model import Cluster, GpuShare, Job, Placement, Server
    >>> from alloc.problem import compile_problem
    >>> c = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="V100"),))
    >>> cur = Placement("r", (GpuShare("s0/gpu1", 1000),), {"s0": 1000}, {"s0": 1000})
    >>> p = compile_problem(c, [Job("r", 1, cpu=1000, mem=1000, current=cur)], "throughput")
    >>> [g for g, _ in running_assign(p, 0).gpus]
    [1]
    """
    a = current_assign(p, j)
    assert a is not None, f"running job {p.jobs[j].id!r} has no placement on this problem"
    return a

def _guaranteed_gpus(eng: Engine) -> dict[str, set]:
    """GPUs held by the placed guaranteed jobs of each tenant."""
    jobs = eng.p.jobs
    used: dict[str, set] = defaultdict(set)
    for j, a in eng.assign.items():
        v = jobs[j].tenant
        if jobs[j].guaranteed and v is not None and v in eng.tid:
            used[v].update(g for g, _ in a.gpus)
    return used


def restore_running(eng: Engine, running: Sequence[int], deadline: Deadline) -> list[int]:
    """Put running jobs back on their current GPUs and bind their tenants'
    cells ([`alloc.tenancy.infer_binding`][alloc.tenancy.infer_binding] before ``deadline``);
    returns
    the jobs that could not stay.

    Validated input ([`alloc.validate.current_problems`][alloc.validate.current_problems]) always
    stays:
    its running jobs fit together and a binding holds them (the one the
    validation found is cached on the cluster).  Otherwise -- a running state
    no binding explains, or none found in time -- the lowest-priority
    guaranteed jobs are stopped until one is found."""
    p = eng.p
    jobs = p.jobs
    homeless = []
    for j in sorted(running, key=lambda j: (not jobs[j].guaranteed, -jobs[j].priority, j)):
        a = current_assign(p, j)
        if a is not None and all(eng.gfree[g] >= m for g, m in a.gpus) and \
                all(eng.cpu[s] >= v for s, v in a.cpu) and all(eng.mem[s] >= v for s, v in a.mem):
            eng.place(j, a)
        else:
            homeless.append(j)
    used = _guaranteed_gpus(eng)
    binding = infer_binding(p.cluster, used, deadline=deadline) if used else {}
    while binding is None:
        cand = [j for j in eng.assign if jobs[j].guaranteed and jobs[j].tenant in eng.tid]
        if not cand:
            binding = {}
            break
        j = min(cand, key=lambda j: (jobs[j].priority, -j))
        eng.remove(j, release=False)
        homeless.append(j)
        used = _guaranteed_gpus(eng)
        binding = infer_binding(p.cluster, used, exact=False) if used else {}
    rebind(eng, binding)
    return homeless


def rebind(eng: Engine, binding: dict) -> None:
    """Bind exactly the cells of ``binding`` (``{tenant: nodes}``) and
    register the placed guaranteed jobs against them; cells left without
    guaranteed jobs are released."""
    jobs = eng.p.jobs
    keep = {j: eng.assign[j] for j in list(eng.assign) if jobs[j].guaranteed}
    for j in keep:
        eng.remove(j, release=False)
    for n in list(eng.bound_use):
        eng.unbind(n)
    for v, nodes in binding.items():
        for n in nodes:
            eng.bind(n, v)
    for j, a in keep.items():
        eng.place(j, a)
    _release_empty(eng)

def _release_empty(eng: Engine) -> None:
    for n in [n for n, u in eng.bound_use.items() if u == 0]:
        eng.unbind(n)
