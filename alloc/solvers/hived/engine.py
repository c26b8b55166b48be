"""``hived``: HiveD buddy-cell allocation with priorities, preemption,
Gandiva-style migration and grow/shrink, and AntMan-style co-location.

State.  Every GPU g has free milli ``f_g``, GPU memory in use ``m_g`` (limit
``cap_g``, see `alloc.resources`; never over-committed) and an ``owner`` (the tenant whose bound
cell holds it, or none).  Physical cells form the forest of
:func:`alloc.tenancy.cell_tree`; ``free[t, l]`` is the set of maximal cells of
type t at level l holding no bound GPU (the buddy free lists) and
``unused[v, t, l]`` the tenant's virtual cells not yet bound.

Round.  (1) Running jobs (``current``) are put back where they run; the binding
of their tenants' cells is inferred (:func:`alloc.tenancy.infer_binding`:
minimal cover, then the exact cell-placing model, under the caller's deadline).  (2) Pending guaranteed jobs, by
rank (the caller's order, else priority: `alloc.problem.Problem.prio_key`),
then pending opportunistic jobs by rank.  A guaranteed job of tenant v that
needs n GPUs tries, in order:

    A0  GPUs of v's bound cells that are free;
    B0  binding a new cell of v (buddy allocation: a free cell of the level,
        else split the free cell of the innermost level above it; cells whose
        GPUs are all free first), repeated while v's free GPUs are too few;
    A1  v's bound GPUs, preempting opportunistic jobs on them;
    B1  binding a new cell, preempting opportunistic jobs in it;
    A2  v's bound GPUs, also preempting v's own lower-priority guaranteed jobs.

A cell whose last guaranteed job leaves is released and merged with free
buddies.  Binding by buddy order keeps sharing safety (HiveD's theorem); when a
cell is split out of order (the job did not fit the buddy cell) safety is
re-checked and the bind undone if it fails.  An opportunistic job takes
unbound GPUs first, then co-locates on a guaranteed job's GPU within the
remaining milli and GPU memory (AntMan), then idle GPUs of bound cells; it never
preempts.  Inside a server GPUs are chosen to consolidate (innermost switch /
socket that fits, smallest such group), so the profile's span factor
``span(level)`` is as high as the free GPUs allow; servers are chosen best fit
(fewest victims, then least normalised leftover CPU + memory + GPU).

Spreading.  A whole-GPU job of n >= 2 GPUs without locality (or with rack
locality) that no single server holds is spread over servers, in each of the
steps above (its tenant's bound GPUs, a new cell, opportunistic GPUs): the
servers with the most usable GPUs first (fewest servers), inside one rack
when a rack holds them (the smallest such rack), else over the cluster; its
CPU and memory split over the servers in proportion to their GPUs
(:meth:`alloc.problem.Problem.make_assign`).

Elastic jobs (``min_gpus``/``max_gpus``) are admitted at the smallest size
``min_gpus`` that fits (Gandiva shrink: admit more jobs), then, once every job
has been tried, grown to the size n <= max_gpus (or gpus; only the profile's
``scaling`` points when it has them) that maximises
``weight * scale(n)`` (:func:`alloc.objectives.scale_factor`) among those that
fit in free GPUs (Gandiva grow), and only when the job's real throughput on
the new GPUs (the profile's grid at its CPU and memory per GPU, GPU speed,
span, scaling) is higher than before; a running elastic job keeps its size
unless migration is on.

Migration (options ``migration_cost=c`` and/or ``max_moves=k``; off by
default).  Preemption victims are first re-placed elsewhere (a move) instead of
being stopped; then, for each job still unplaced, a server is defragmented by
moving at most two running jobs off it when ``value(job) - c * moves > 0``;
finally multi-GPU running jobs are re-consolidated when their throughput gain
exceeds c.  At most k moves (unbounded when only c is given).
``stats["moves"]`` counts jobs whose placement differs from ``current``.

Time.  Every step checks the caller's :class:`~alloc.deadline.Deadline`: out
of time, the round stops and returns the jobs placed so far (running jobs
stay where they run).

Trial moves (defragmentation, consolidation, the tenancy model's hints) open
a :meth:`Engine.checkpoint`; every change of the state (place, remove, bind,
unbind) is journalled while one is open and :meth:`Engine.rollback` undoes
them in reverse order.

Options: ``migration_cost``, ``max_moves``, ``preempt`` (default True),
``colocate`` (default True), ``grow`` (default True), ``gpu_mem_capacity``
(``{type: MiB}``).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from ...model import MILLI, Job, Status
from ...objectives import scale_factor
from ...problem import Assign, Problem, Solution
from ...deadline import Deadline
from ...resources import gpu_mem_caps as gpu_mem_caps_of, share_mem
from ...tenancy import (binding_keys, cell_size, cell_tree, infer_binding,
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
        self.on_gpu: list[dict[int, int]] = [dict() for _ in range(p.G)]
        self.gguar = np.zeros(p.G, dtype=np.int64)   # guaranteed jobs on each GPU
        self.nbound = [0] * tree.N
        self.bound: dict[str, set[int]] = {v: set() for v in self.tenants}
        self.bound_use: dict[int, int] = {}          # bound node -> guaranteed GPU-uses
        self.free_max: dict[tuple[str, int], set[int]] = defaultdict(set)
        for n in range(tree.N):
            if tree.parent[n] < 0:
                self.free_max[(tree.gtype[n], tree.level[n])].add(n)
        self.assign: dict[int, Assign] = {}
        self.size: dict[int, int] = {}
        self.colocate = colocate
        self.type_ok = np.zeros((p.J, len(p.types) + 1), dtype=bool)
        self.gpu_tix = np.array([p.srv_type[s] for s in p.gpu_server], dtype=np.int64) \
            if p.G else np.zeros(0, dtype=np.int64)
        self.jmem = [0] * p.J
        for j, job in enumerate(p.jobs):
            for ti, t in enumerate(p.types):
                self.type_ok[j, ti] = job.allows(t)
        self.first = p.gpu_first
        self.lv = {x: i for i, x in enumerate(p.levels)}
        #: when set, placements and new cells are confined to these servers
        self.only_servers: set[int] | None = None
        #: inverse operations since the outermost open checkpoint (None: none open)
        self._log: list | None = None
        self._marks = 0

    # ------------------------------------------------------------ journal
    def checkpoint(self) -> int:
        """Open a checkpoint; returns its mark for :meth:`rollback` / :meth:`keep`."""
        if self._log is None:
            self._log = []
        self._marks += 1
        return len(self._log)

    def rollback(self, mark: int) -> None:
        """Undo every change since the checkpoint ``mark`` and close it."""
        log, self._log = self._log, None
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
        :meth:`mem_of`."""
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

    def place(self, j: int, a: Assign) -> None:
        """Put job j on ``a`` (capacity is the caller's check)."""
        job = self.job(j)
        for k, (g, m) in enumerate(a.gpus):
            self.gfree[g] -= m
            self.gmem[g] += self.held_mem(j, a, k)
            self.on_gpu[g][j] = m
            if job.guaranteed:
                self.gguar[g] += 1
                n = self.cell_of(g)
                if n >= 0:
                    self.bound_use[n] = self.bound_use.get(n, 0) + 1
        for s, v in a.cpu:
            self.cpu[s] -= v
        for s, v in a.mem:
            self.mem[s] -= v
        self.assign[j] = a
        self.size[j] = len(a.gpus)
        if self._log is not None:
            self._log.append(("place", j))

    def remove(self, j: int, release: bool = True) -> Assign:
        """Take job j off its GPUs; ``release`` frees a bound cell left without
        guaranteed jobs."""
        a = self.assign.pop(j)
        if self._log is not None:
            self._log.append(("remove", j, a))
        self.size.pop(j, None)
        job = self.job(j)
        for k, (g, m) in enumerate(a.gpus):
            self.gfree[g] += m
            self.gmem[g] -= self.held_mem(j, a, k)
            self.on_gpu[g].pop(j, None)
            if job.guaranteed:
                self.gguar[g] -= 1
                n = self.cell_of(g)
                if n >= 0:
                    self.bound_use[n] -= 1
                    if release and self.bound_use[n] == 0:
                        self.unbind(n)
        for s, v in a.cpu:
            self.cpu[s] += v
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
        (:func:`alloc.tenancy.safety`)."""
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
    def victims_on(self, j: int, g: int, milli: int, level: int) -> list[int] | None:
        """Jobs to preempt on GPU g so that job j's share fits ([] = none), or
        None.  level 0: no victims; 1: opportunistic only; 2: any job j outranks."""
        mem = self.mem_of(j, g)
        free, mfree = int(self.gfree[g]), int(self.gcap[g] - self.gmem[g])
        if free >= milli and mfree >= mem:
            return []
        if level == 0:
            return None
        cands = [i for i in self.on_gpu[g] if i not in self.p.pinned and self.p.outranks(j, i)
                 and (level >= 2 or not self.job(i).guaranteed)]
        cands.sort(key=lambda i: (self.job(i).guaranteed, self.job(i).priority,
                                  self.job(i).weight, i))
        out = []
        for i in cands:
            if free >= milli and mfree >= mem:
                break
            out.append(i)
            free += self.on_gpu[g][i]
            mfree += self.mem_of(i, g)
        return out if free >= milli and mfree >= mem else None

    def room_ok(self, j: int, g: int, milli: int) -> bool:
        """GPU g has ``milli`` free and room for job j's GPU memory."""
        if self.gfree[g] < milli:
            return False
        return self.gcap[g] - self.gmem[g] >= self.mem_of(j, g)

    def pick_server(self, j: int, n: int, s: int, mask, level: int):
        """(gpus, victims) for n GPUs of job j on server s among mask, or None."""
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
        for g in rng:
            if mask is not None and not mask[g]:
                continue
            if level == 0:
                if self.room_ok(j, g, milli):
                    room[g] = []
            else:
                vic = self.victims_on(j, g, milli, level)
                if vic is not None:
                    room[g] = vic
        if len(room) < n:
            return None
        if n == 1 and milli < MILLI:
            g = min(room, key=lambda g: (len(room[g]), int(self.gfree[g]), g))
            chosen = [g]
        else:
            order = sorted(room, key=lambda g: (len(room[g]) > 0, g))
            chosen = None
            for lv in INNER:
                if lv not in self.lv:
                    continue
                dom = p.domain[lv]
                groups: dict[int, list[int]] = defaultdict(list)
                for g in order:
                    groups[int(dom[g])].append(g)
                fit = [gs for gs in groups.values() if len(gs) >= n]
                if fit:
                    fit.sort(key=lambda gs: (sum(len(room[g]) > 0 for g in gs[:n]), len(gs),
                                             gs[0]))
                    chosen = fit[0][:n]
                    break
                if job.locality == lv:
                    return None
            if chosen is None:
                chosen = order[:n]
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
                     and i not in self.p.pinned and self.p.outranks(j, i)
                     and (level >= 2 or not self.job(i).guaranteed)]
            extra.sort(key=lambda i: (self.job(i).guaranteed, self.job(i).priority, i))
            for i in extra:
                if fc >= cpu_need and fm >= mem_need:
                    break
                victims.add(i)
                fc += dict(self.assign[i].cpu).get(s, 0)
                fm += dict(self.assign[i].mem).get(s, 0)
            if fc < cpu_need or fm < mem_need:
                return None
        return chosen, victims

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
            rng = self.gpus_of(s)
            sc += (self.gfree[rng.start:rng.stop].sum()
                   - len(gpus) * self.job(j).gpu_milli) / (MILLI * p.srv_gpus[s])
        return float(sc)

    def pick(self, j: int, n: int, mask, level: int, servers=None):
        """Best placement (gpus, victims) of job j with n GPUs within mask."""
        p = self.p
        job = self.job(j)
        cnt = None                  # GPUs of mask per server (numpy, all servers)
        if mask is not None and n and p.G:
            cnt = self.per_server(mask)
        given = servers is not None
        if servers is None:
            if cnt is not None:
                servers = np.flatnonzero(cnt >= n).tolist()
            elif mask is not None and n:
                servers = []
            else:
                servers = [s for s in range(p.S) if p.allowed[j, s]]
        if self.only_servers is not None:
            servers = [s for s in servers if s in self.only_servers]
        best, best_key = None, None
        found = 0
        many = len(servers) > 64 and n
        if many:
            # large clusters: best fit among the tightest servers that fit
            arr = np.asarray(servers, dtype=np.int64)
            free = cnt[arr] if cnt is not None else p.srv_gpus[arr]
            servers = arr[np.lexsort((arr, free))].tolist()
        # servers where no n GPUs are free (in one node of the job's locality
        # level): pick_server would find nothing there without victims
        viable = self.viable(j, n, mask) if level == 0 and many else None
        for s in servers:
            if not p.allowed[j, s] or (viable is not None and not viable[s]):
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
        if n > 1 and job.gpu_milli == MILLI and job.locality in (None, "rack"):
            if not given:
                # no single server holds the job: every server with a GPU of the mask
                servers = np.flatnonzero(cnt > 0).tolist() if cnt is not None else \
                    [s for s in range(p.S) if p.allowed[j, s]]
                if self.only_servers is not None:
                    servers = [s for s in servers if s in self.only_servers]
            return self.pick_spread(j, n, mask, level, servers)
        return None

    def per_server(self, mask) -> np.ndarray:
        """Number of GPUs in ``mask`` on each server (an array over servers)."""
        first, srv = self.first_nonempty()
        out = np.zeros(self.p.S, dtype=np.int64)
        if len(srv):
            out[srv] = np.add.reduceat(mask.astype(np.int64), first)
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
            srv = [s for s in range(self.p.S) if self.p.srv_gpus[s] > 0]
            cache = self._fne = (np.array([self.first[s] for s in srv], dtype=np.int64), srv)
        return cache

    def pick_spread(self, j: int, n: int, mask, level: int, servers):
        """(gpus, victims) for n whole GPUs of job j over several of ``servers``
        (see the module notes), or None."""
        p = self.p
        job = self.job(j)
        opt = p.options[j][0]
        per_cpu = -(-opt.cpu // n)
        per_mem = -(-opt.mem // n)
        servers = [s for s in servers if p.allowed[j, s]]
        if level == 0 and p.G:
            room = self.gfree >= MILLI
            if mask is not None:
                room &= mask
            have = self.per_server(room)
            if not servers or int(have[servers].sum()) < n:
                return None
            servers = [s for s in servers if have[s] > 0]
        rows = []
        for s in servers:
            gs = []
            for g in self.gpus_of(s):
                if mask is not None and not mask[g]:
                    continue
                vic = [] if self.room_ok(j, g, MILLI) else (
                    self.victims_on(j, g, MILLI, level) if level else None)
                if vic is not None:
                    gs.append((len(vic) > 0, g, vic))
            gs.sort()
            cap_c = int(self.cpu[s] // per_cpu) if per_cpu else len(gs)
            cap_m = int(self.mem[s] // per_mem) if per_mem else len(gs)
            k = min(len(gs), cap_c, cap_m)
            if k > 0:
                rows.append((p.cluster.servers[s].rack or "", s, gs[:k]))
        pools: dict[tuple, list] = defaultdict(list)
        by_rack = "rack" in self.lv
        for rack, s, gs in rows:
            if by_rack:
                pools[(0, rack)].append((s, gs))
            if job.locality != "rack":
                pools[(1, "")].append((s, gs))
        # one rack first (the smallest that holds the job), then the cluster
        order = sorted(pools, key=lambda k: (k[0], sum(len(gs) for _, gs in pools[k]), k[1]))
        for key in order:
            pool = sorted(pools[key], key=lambda x: (-len(x[1]), x[0]))
            need, chosen, victims = n, [], set()
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

    # ------------------------------------------------------------ jobs
    def type_mask(self, j: int) -> np.ndarray:
        """Boolean array over GPUs: True where job j may use the GPU's type."""
        job = self.job(j)
        if not job.gpu_types:
            return np.ones(self.p.G, dtype=bool)
        ok = np.array([job.allows(t) for t in self.p.types] + [False], dtype=bool)
        return ok[self.gpu_tix]

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
        1) binding new cells (:meth:`bind_and_place`): the steps A0, B0, A1,
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
        tenant's free GPUs on the same servers) :meth:`pick` places j.
        ``prune`` skips, at level 0, cells with fewer than n GPUs with room."""
        job = self.job(j)
        vi = self.tid[job.tenant]
        for size, t, lvl in self.cell_levels(job.tenant, j):
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
        ``level`` is the preemption level (see :meth:`place_guaranteed`).
        Returns True when placed."""
        job = self.job(j)
        v = job.tenant
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
            if near:
                cands.sort(key=lambda x: int(self.p.gpu_server[self.tree.gpus[x[0]][0]]) not in near)
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

    def place_opportunistic(self, j: int, n: int) -> bool:
        """Place opportunistic job j on n GPUs without preempting: unbound GPUs
        first, then (co-location on, one shared GPU) GPUs of guaranteed jobs
        within their remaining milli and GPU memory, then GPUs without
        guaranteed jobs (idle GPUs of bound cells).  Returns True when
        placed."""
        job = self.job(j)
        tmask = self.type_mask(j)
        masks = [tmask & (self.owner < 0)]
        if self.colocate and n == 1 and job.gpu_milli < MILLI:
            masks.append(tmask & (self.gguar > 0))
        masks.append(tmask & (self.gguar == 0))
        for mask in masks:
            r = self.pick(j, n, mask, 0)
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
        if job.guaranteed:
            return self.place_guaranteed(j, n, level, preempted)
        return self.place_opportunistic(j, n)

    def sizes(self, j: int) -> list[int]:
        """GPU counts to try for job j, ascending: its elastic sizes from
        ``min_gpus`` (or ``gpus``) to ``gpus``; ``[0]`` for a CPU-only job."""
        job = self.job(j)
        lo = job.min_gpus if job.min_gpus is not None else job.gpus
        return elastic_sizes(job, lo, job.gpus) if job.gpus else [0]


def elastic_sizes(job: Job, lo: int, hi: int) -> list[int]:
    """Sizes in [lo, hi] an elastic job may take: the profile's scaling points
    plus the requested and minimum counts (every size without scaling data)."""
    prof = job.profile
    if prof is None or not prof.scaling:
        return list(range(lo, hi + 1))
    pts = {int(n) for n in prof.scaling} | {job.gpus, job.min_gpus or job.gpus}
    return sorted(n for n in pts if lo <= n <= hi)


def _value(p: Problem, j: int, n: int) -> float:
    job = p.jobs[j]
    return job.weight * scale_factor(job.profile, job, n)


def job_value(p: Problem, j: int, a: Assign) -> float:
    """Objective value of job j placed as ``a`` (the checker's formula)."""
    return p.value_of(j, a)


def current_assign(p: Problem, j: int) -> Assign | None:
    """Job j's running placement (``current``) in index form, or None when
    it is pending or its placement names a GPU or server the cluster lacks."""
    job = p.jobs[j]
    cur = job.current
    if cur is None:
        return None
    c = p.cluster
    try:
        gpus = tuple((c.gpu_index[g.gpu], g.milli) for g in cur.gpus)
        cpu = tuple((c.server_index[s], v) for s, v in cur.cpu.items())
        mem = tuple((c.server_index[s], v) for s, v in cur.mem.items())
    except KeyError:
        return None
    return Assign(gpus, cpu, mem)


def _guaranteed_gpus(eng: Engine) -> dict[str, set]:
    """GPUs held by the placed guaranteed jobs of each tenant."""
    jobs = eng.p.jobs
    used: dict[str, set] = defaultdict(set)
    for j, a in eng.assign.items():
        if jobs[j].guaranteed and jobs[j].tenant in eng.tid:
            used[jobs[j].tenant].update(g for g, _ in a.gpus)
    return used


def restore_running(eng: Engine, running: Sequence[int], deadline: Deadline | None = None
                    ) -> list[int]:
    """Put running jobs back on their current GPUs and bind their tenants'
    cells (:func:`alloc.tenancy.infer_binding` before ``deadline``); returns
    the jobs that could not stay.

    Validated input (:func:`alloc.validate.current_problems`) always stays:
    its running jobs fit together and a binding holds them (the one the
    validation found is cached on the cluster).  Otherwise -- a running state
    no binding explains, or none found in time -- the lowest-priority
    guaranteed jobs are stopped until one is found."""
    p = eng.p
    jobs = p.jobs
    homeless = []
    for j in sorted(running, key=lambda j: (not jobs[j].guaranteed, -jobs[j].priority, j)):
        a = current_assign(p, j)
        ok = a is not None and all(eng.gfree[g] >= m for g, m in a.gpus) and \
            all(eng.cpu[s] >= v for s, v in a.cpu) and all(eng.mem[s] >= v for s, v in a.mem)
        if ok:
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
    # re-register the guaranteed jobs against the inferred cells
    keep = {j: eng.assign[j] for j in list(eng.assign) if jobs[j].guaranteed}
    for j in keep:
        eng.remove(j, release=False)
    for v, nodes in binding.items():
        for n in nodes:
            eng.bind(n, v)
    for j, a in keep.items():
        eng.place(j, a)
    _release_empty(eng)
    return homeless


def run(p: Problem, *, preempt=True, colocate=True, grow=True, gpu_mem_capacity=None,
        deadline: Deadline | None = None) -> tuple[Engine, set, dict]:
    """One HiveD round on ``p`` (moves under the problem's allowance) before
    ``deadline``; returns the engine, the preempted running jobs and statistics."""
    deadline = deadline if deadline is not None else Deadline.never()
    eng = Engine(p, gpu_mem_capacity, colocate)
    jobs = p.jobs
    running = [j for j in range(p.J) if jobs[j].current is not None]
    pending = [j for j in range(p.J) if jobs[j].current is None]
    homeless = restore_running(eng, running, deadline)
    pk = p.prio_key
    order = sorted(pending + homeless, key=lambda j: (not jobs[j].guaranteed, pk[j], j))
    moves = _Moves(p)
    timed_out = _place_all(eng, order, 2 if preempt else 0, moves, deadline)
    if grow and not timed_out:
        timed_out = _grow(eng, moves, deadline)
    if moves.allowed and not timed_out:
        _defragment(eng, order, moves, deadline)
        _consolidate(eng, moves, deadline)
    n_moves = sum(1 for j in eng.assign if jobs[j].current is not None
                  and not _same(p, j, eng.assign[j]))
    preempted = {j for j in range(p.J) if j not in eng.assign and jobs[j].current is not None}
    stats = {"moves": n_moves}
    if deadline.expired():
        stats["timed_out"] = True
    return eng, preempted, stats


class _Moves:
    """The round's move allowance: budget, cost per move, jobs moved so far."""

    def __init__(self, p: Problem):
        self.allowed = p.moves_allowed
        self.budget = (p.max_moves if p.max_moves is not None else (1 << 30)) \
            if self.allowed else 0
        self.cost = float(p.move_cost or 0.0)
        self.moved: set[int] = set()

    def left(self, k: int = 1) -> bool:
        """True when k more moves fit the budget."""
        return len(self.moved) + k <= self.budget


def _place_all(eng: Engine, order, max_level: int, moves: _Moves, deadline: Deadline) -> bool:
    """Place the jobs in ``order`` (smallest elastic size first, victims only
    when no size fits without); re-home victims when moves are allowed.
    Returns True when the deadline stopped it."""
    preempted: set[int] = set()
    for j in order:
        if deadline.expired():
            return True
        for level in sorted({0, max_level}):
            placed = False
            for n in eng.sizes(j):
                before = set(preempted)
                if eng.try_place(j, n, level, preempted):
                    placed = True
                    newly = preempted - before
                    if moves.allowed and newly:
                        _rehome(eng, newly, preempted, moves)
                    break
            if placed:
                break
    return False


def _grow(eng: Engine, moves: _Moves, deadline: Deadline) -> bool:
    """Gandiva grow: each placed elastic job, highest rank first, takes the
    size of largest speed-up that fits free GPUs and raises its real
    throughput (a running one only within the move budget: growing moves
    it; a pinned one never).  Returns True when the deadline stopped it."""
    p = eng.p
    jobs = p.jobs
    for j in sorted(eng.assign, key=lambda j: (p.prio_key[j], j)):
        if deadline.expired():
            return True
        job = jobs[j]
        hi = job.max_gpus if job.max_gpus is not None else job.gpus
        running = job.current is not None and j not in moves.moved
        if not job.elastic or hi <= eng.size[j] or (running and not moves.left()) \
                or j in p.pinned:
            continue
        cur = eng.size[j]
        old = eng.assign[j]
        old_value = job_value(p, j, old)
        for n in sorted(elastic_sizes(job, cur + 1, hi), key=lambda n: (-_value(p, j, n), n)):
            if _value(p, j, n) <= _value(p, j, cur) + 1e-12:
                break
            eng.remove(j, release=False)
            if eng.try_place(j, n, 0, set()):
                if job_value(p, j, eng.assign[j]) > old_value + 1e-12:
                    _release_empty(eng)
                    if running:
                        moves.moved.add(j)
                    break
                # more GPUs but less throughput (e.g. CPU or memory per GPU
                # below the profile's grid): keep the old size
                eng.remove(j, release=False)
                eng.place(j, old)
                _release_empty(eng)
                continue
            eng.place(j, old)
    return False


def _same(p: Problem, j: int, a: Assign) -> bool:
    cur = current_assign(p, j)
    return cur is not None and sorted(cur.gpus) == sorted(a.gpus) and \
        {s for s, _ in cur.cpu} == {s for s, _ in a.cpu}


def _release_empty(eng: Engine) -> None:
    for n in [n for n, u in eng.bound_use.items() if u == 0]:
        eng.unbind(n)


def _rehome(eng: Engine, victims: set, preempted: set, moves: _Moves) -> None:
    """Re-place preemption victims elsewhere (a move) while the budget lasts."""
    for i in sorted(victims, key=lambda i: (-eng.job(i).priority, i)):
        if not moves.left() or i in eng.assign:
            continue
        for n in eng.sizes(i):
            if eng.try_place(i, n, 0, set()):
                preempted.discard(i)
                moves.moved.add(i)
                break


def _defragment(eng: Engine, order, moves: _Moves, deadline: Deadline) -> None:
    """For each job still unplaced, free one server for it by moving at most
    two running jobs elsewhere, when its value exceeds the moves' cost."""
    p = eng.p
    jobs = p.jobs
    for j in order:
        if deadline.expired():
            return
        if j in eng.assign or not moves.left():
            continue
        n = eng.sizes(j)[-1]
        if n == 0:
            continue
        gain = _value(p, j, n) * max(p.upper_coef(j), 1e-9)
        for s in range(p.S):
            if not p.allowed[j, s] or p.srv_gpus[s] < n:
                continue
            movers = sorted((i for i in eng.jobs_on_server(s) if i not in moves.moved
                             and jobs[i].current is not None and i not in p.pinned),
                            key=lambda i: (eng.size.get(i, 0), i))
            if _clear_server(eng, j, n, s, movers, moves, gain):
                break


def _clear_server(eng: Engine, j: int, n: int, s: int, movers, moves: _Moves,
                  gain: float) -> bool:
    """Move one or two of ``movers`` off server s so that job j fits there;
    True when done (the state keeps the moves)."""
    from itertools import combinations
    for k in (1, 2):
        if not moves.left(k) or gain - moves.cost * k <= 0:
            return False
        for combo in combinations(movers[:6], k):
            mark = eng.checkpoint()
            for i in combo:
                eng.remove(i)
            ok = eng.try_place(j, n, 0, set()) and s in {x for x, _ in eng.assign[j].cpu}
            ok = ok and all(_place_off(eng, i, s) for i in combo) and eng.safe()
            if ok:
                eng.keep(mark)
                moves.moved.update(combo)
                return True
            eng.rollback(mark)
    return False


def _place_off(eng: Engine, i: int, s: int) -> bool:
    """Place job i again (a guaranteed job in its cells, others off server s)."""
    p = eng.p
    srv = [x for x in range(p.S) if x != s]
    for m in eng.sizes(i):
        if p.jobs[i].guaranteed:
            if eng.place_guaranteed(i, m, 0, set()):
                return True
        elif m == 0:
            if eng.place_cpu_only(i):
                return True
        else:
            r = eng.pick(i, m, eng.type_mask(i), 0, servers=srv)
            if r is not None:
                eng.commit(i, m, r[0], r[1], set())
                return True
    return False


def _consolidate(eng: Engine, moves: _Moves, deadline: Deadline) -> None:
    """Re-place multi-GPU running jobs when their throughput gain exceeds the
    cost of a move."""
    p = eng.p
    jobs = p.jobs
    for j in sorted(list(eng.assign), key=lambda j: (-jobs[j].priority, j)):
        if deadline.expired():
            return
        if not moves.left() or j in moves.moved or jobs[j].current is None or eng.size[j] < 2 \
                or j in p.pinned:
            continue
        old = eng.assign[j]
        before = p.placement(j, old).throughput * jobs[j].weight
        mark = eng.checkpoint()
        eng.remove(j)
        if eng.try_place(j, len(old.gpus), 0, set()):
            after = p.placement(j, eng.assign[j]).throughput * jobs[j].weight
            if after - before > moves.cost + 1e-9 and eng.safe():
                eng.keep(mark)
                moves.moved.add(j)
                continue
        eng.rollback(mark)


def solve_hived(problem: Problem, *, deadline: Deadline, seed: int = 0, preempt: bool = True,
                colocate: bool = True, grow: bool = True, gpu_mem_capacity=None) -> Solution:
    """``hived`` (see the module notes); moves under the call's allowance;
    out of time it returns the jobs placed so far."""
    eng, preempted, stats = run(problem, preempt=preempt, colocate=colocate, grow=grow,
                                gpu_mem_capacity=gpu_mem_capacity, deadline=deadline)
    stats["binding"] = binding_keys(eng.tree, eng.bound)
    stats["preemptions"] = len(preempted)
    if gpu_mem_capacity:
        stats["gpu_mem_capacity"] = dict(gpu_mem_capacity)
    return Solution(dict(eng.assign), Status.FEASIBLE, None, tuple(sorted(preempted)), stats)
