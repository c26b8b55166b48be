"""Warm starts of the tenancy model and the hints they give.

Three warm starts run on the ``hived`` engine before the model is built (so a
call out of time still has an answer): ``hived`` itself and two variants of
a value-aware greedy.  The greedy sets aside running jobs of value 0 (in the
second variant also opportunistic ones worth less than 0.15 per GPU) that a
pending job may legally preempt; places pending jobs guaranteed first by
value per GPU (a guaranteed job preempting opportunistic jobs only, so no
valuable guaranteed job is displaced), then opportunistic ones; and puts the
set-aside jobs back where they ran if their room is still free.  A new cell is
the candidate whose victims, then resident jobs, are worth least
(`LossAwareEngine`), where ``hived`` takes the first buddy candidate
that fits; and a job is spread over servers only when it is wider than every
server (a spread job is worth less and ties GPUs of several servers, which
the model's neighbourhood search then rarely undoes).

`hint_values` reads an engine state as model values: x / y / units for
the placed pending jobs, keep / moves for the running ones, and the cell
counts after every remaining virtual cell is bound in buddy order (which keeps
safety; undone afterwards through the engine's checkpoint).
"""
from __future__ import annotations

from collections import defaultdict

from ....deadline import Deadline
from ....model import MILLI
from ....problem import Problem
from ....engines.cells.round import run
from ....engines.cells.engine import (Engine, _release_empty, current_assign, restore_running,
                                      running_assign)
from .model import TenancyModel, fits_server, spread_span, spreadable, value_on

#: the second greedy variant also sets aside opportunistic jobs below this value per GPU
LOW_DENSITY = 0.15


class LossAwareEngine(Engine):
    """The hived engine choosing, when ``loss`` is set, the new cell whose
    victims, then whose resident jobs, lose the least value."""

    #: job -> value lost if it is preempted
    loss: dict | None = None
    #: spread jobs over servers even when one server could hold them (the
    #: greedy warm starts spread only jobs wider than every server)
    spread: bool = True

    def pick_spread(self, j, n, mask, level, servers):
        """As `Engine.pick_spread`; with ``spread`` off, None for a job of
        n GPUs that the largest server it may use could hold (only jobs
        wider than every such server are spread)."""
        if not self.spread and n <= self.widest(j):
            return None
        return super().pick_spread(j, n, mask, level, servers)

    def widest(self, j: int) -> int:
        """GPUs of the largest server job j may use."""
        cache = self.__dict__.setdefault("_widest", {})
        if j not in cache:
            srv = self.p.allowed_servers(j)
            cache[j] = int(self.p.srv_gpus[srv].max()) if len(srv) else 0
        return cache[j]

    def bind_and_place(self, j, n, tmask, level, preempted):
        """As `Engine.bind_and_place`; with ``loss`` set, first the new
        cell minimising (value lost by its victims, their number, value of
        the jobs resident in it, out of buddy order, size), bound if buddy
        order or sharing safety allows it, before the engine's own order."""
        if self.loss is None:
            return super().bind_and_place(j, n, tmask, level, preempted)
        v = self.job(j).tenant
        best = None
        for size, c, buddy_ok, r in self.cell_candidates(j, n, tmask, level, prune=False):
            inside = {i for g in self.tree.gpus[c] for i in self.jobs_on_gpu(g)}
            key = (sum(self.loss.get(i, 0.0) for i in r[1]), len(r[1]),
                   sum(self.loss.get(i, 0.0) for i in inside), not buddy_ok, size, c)
            if best is None or key < best[0]:
                best = (key, c, r, buddy_ok)
        if best is not None:
            _, c, r, buddy_ok = best
            self.bind(c, v)
            if buddy_ok or self.safe():
                self.commit(j, n, r[0], r[1], preempted)
                return True
            self.unbind(c)
        return super().bind_and_place(j, n, tmask, level, preempted)


def best_values(p: Problem, jobs_: list[int]) -> dict[int, float]:
    """An upper bound on each job's value at its request size (best server
    class, or spread)."""
    out = {}
    for j in jobs_:
        job = p.jobs[j]
        n = len(running_assign(p, j).gpus) if job.current is not None else job.gpus
        best, seen = 0.0, set()
        for s in range(p.S):
            c = int(p.server_class[s])
            if c in seen:
                continue
            seen.add(c)
            if fits_server(p, j, s, n):
                best = max(best, value_on(p, j, s, n))
        if spreadable(job, n):
            srv = [s for s in range(p.S) if p.allowed[j, s] and p.srv_gpus[s]]
            if srv:
                s = max(srv, key=lambda s: p.speed(j, s))
                best = max(best, value_on(p, j, s, n, span=spread_span(p, j)))
        out[j] = best
    return out


def greedy(p: Problem, running, pending, vbest: dict, pcost: float, dens: float,
           deadline: Deadline):
    """The value-aware greedy (module notes); returns (engine, preempted) or
    None when a victim would be illegal or the deadline passes."""
    jobs = p.jobs
    pend = set(pending)
    cur = {r: p.value_of(r, running_assign(p, r)) for r in running}
    drop = [r for r in running if not pcost
            and (cur[r] <= 1e-12 or (not jobs[r].guaranteed
                                     and cur[r] / max(jobs[r].gpus, 1) < dens))
            and any(p.outranks(i, r) for i in pend)]

    def key(j):
        job = jobs[j]
        v = vbest.get(j, 0.0)
        cls = (0 if job.guaranteed else 2) + (1 if v <= 1e-12 else 0)
        return (cls, -v / max(job.gpus * job.gpu_milli / MILLI, 0.05), -job.priority, j)
    for _ in range(4):
        eng = LossAwareEngine(p)
        eng.spread = False
        eng.loss = {r: cur[r] for r in running}
        eng.loss.update({j: vbest.get(j, 0.0) for j in pending})
        dropped = set(drop)
        homeless = restore_running(eng, [r for r in running if r not in dropped], deadline)
        for j in sorted(list(pending) + homeless, key=key):
            if deadline.expired():
                return None
            if not eng.try_place(j, jobs[j].gpus, 0, set()) and jobs[j].guaranteed:
                eng.try_place(j, jobs[j].gpus, 1, set())   # opportunistic victims only
        for r in drop:
            a = running_assign(p, r)
            if fits_at(eng, a, r):
                eng.place(r, a)
        _release_empty(eng)
        fresh = [i for i in eng.assign if i in pend or i in homeless]
        bad = [r for r in running if r not in eng.assign
               and not p.stopped_for(r, eng.assign, fresh)]
        if not bad:
            return eng, {r for r in running if r not in eng.assign}
        drop = [r for r in drop if r not in bad]
    return None


def fits_at(eng: Engine, a, j: int) -> bool:
    """Job j's assignment ``a`` fits the engine's free GPUs (milli and GPU
    memory), CPU and memory."""
    return all(eng.gfree[g] >= mi and eng.gcap[g] - eng.gmem[g] >= eng.held_mem(j, a, k)
               for k, (g, mi) in enumerate(a.gpus)) and \
        all(eng.cpu[s] >= v for s, v in a.cpu) and all(eng.mem[s] >= v for s, v in a.mem)


#: shares of the time left for hived (which normally needs far less) and for each greedy variant
HIVED_SHARE, GREEDY_SHARE = 0.8, 0.25


def warm_starts(p: Problem, running, pending, pcost: float, deadline: Deadline
                ) -> tuple[list, bool]:
    """``([(name, engine, preempted)], timed_out)``: hived, then the two
    greedy variants, each with a share of the deadline (a variant out of
    time is skipped; none runs when hived itself ran out of time)."""
    heng, hpre, hstats = run(p, deadline=deadline.share(HIVED_SHARE))
    out = [("hived", heng, set(hpre))]
    if hstats.get("timed_out"):
        return out, True
    vbest = best_values(p, list(pending) + list(running))
    for dens in (0.0, LOW_DENSITY):
        g = greedy(p, running, pending, vbest, pcost, dens, deadline.share(GREEDY_SHARE))
        if g is not None:
            out.append(("greedy", g[0], g[1]))
    return out, False


def hint_values(tm: TenancyModel, eng: Engine) -> dict[int, float]:
    """Model values of an engine state (module notes): ``{column: value}``."""
    p, G = tm.p, tm.groups
    entry = {}
    for k in range(G.K):
        for j in G.members[k]:
            entry[(j, G.size[k])] = k
    hints: dict[int, float] = {c: 0 for c in list(tm.x.values()) + list(tm.y.values())
                               + list(tm.units.values()) + list(tm.mv.values())
                               + list(tm.ms.values())}
    for j, a in eng.assign.items():
        if p.jobs[j].current is not None:
            continue
        kind = entry.get((j, len(a.gpus)))
        if kind is not None:
            _hint_placement(tm, hints, j, a, x_col=lambda s: tm.x.get((kind, s)),
                            y_col=lambda d: tm.y.get((kind, d)))
    for r, col in tm.keep.items():
        now = eng.assign.get(r)
        cur = current_assign(p, r)
        stays = now is not None and now.same_as(cur)
        hints[col] = int(stays)
        if now is not None and not stays:
            _hint_placement(tm, hints, r, now, x_col=lambda s: tm.mv.get((r, s)),
                            y_col=lambda d: tm.ms.get((r, d)))
    hints.update(_cell_counts(tm, eng))
    return hints


def _hint_placement(tm: TenancyModel, hints: dict, j: int, a, x_col, y_col) -> None:
    """Count job j placed as ``a``: on one server (``x_col(s)``), or spread
    (``y_col(d)`` and its pool's units)."""
    p = tm.p
    srv = sorted({s for s, _ in a.cpu})
    if len(srv) == 1 and x_col(srv[0]) is not None:
        hints[x_col(srv[0])] += 1
        return
    d = tm.spread_key(j, srv)
    col = y_col(d)
    if col is None:
        return
    hints[col] += 1
    key = tm.pool(j, len(a.gpus), d)
    for g, _ in a.gpus:
        u = tm.units.get((key, int(p.gpu_server[g])))
        if u is not None:
            hints[u] += 1


def _cell_counts(tm: TenancyModel, eng: Engine) -> dict[int, float]:
    """Cell counts of the engine's binding with every remaining virtual cell
    bound in buddy order (undone afterwards)."""
    tree = eng.tree
    mark = eng.checkpoint()
    for (v, t, lvl), c in sorted(eng.unused.items()):
        for _ in range(c):
            cand = next(iter(eng.buddy_candidates(t, lvl)), None)
            if cand is None:
                break
            eng.bind(cand[0], v)
    cc: dict[tuple, int] = defaultdict(int)
    for v, nodes in eng.bound.items():
        for n in nodes:
            lvl = tree.level[n]
            cc[(v, lvl, n) if lvl in tm.outer_lvls else (v, lvl, tree.server[n])] += 1
    eng.rollback(mark)
    return {col: cc.get(key, 0) for key, col in tm.cells.items()}
