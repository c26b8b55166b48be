"""One HiveD round on the cell engine ([Engine][alloc.engines.cells.engine.Engine]):
the engine of the last round taken up or rebuilt (`alloc.engines.cells.kept`),
pending and homeless jobs placed in guaranteed-first rank order with
preemption by the tenancy rules, elastic jobs grown (the jobs still waiting
then try again on the free GPUs, stopping no one), and -- where the call
allows moves -- servers defragmented and jobs consolidated, every move
counted against the budget.

A job that cannot fit the room is decided at once (`_Unfit`): in a round
that allows no moves, until a job is placed over victims, no running job
leaves its GPUs, so the room (free milli per GPU, CPU and memory per
server) only shrinks as jobs are placed and grown.  A job of fixed size
(not elastic) that does not try victims (opportunistic, or a guaranteed
one at preemption level 0) and cannot fit the room as it is
(`alloc.room.Free.cannot_fit` at its request: its CPU and memory split in
proportion to its GPUs, as every placement of the engine splits them)
fits nowhere in it: the engine's own search, which would try every server
for it, is skipped, and the job waits as it would have.  One test per
shape (GPUs, milli per GPU, CPU and memory asked) on the room when the
shape is first met; a long queue of jobs that cannot fit costs a lookup
each."""
from __future__ import annotations

from typing import Sequence

from ...deadline import Deadline
from ...problem import Assign, Problem
from ...room import Free
from .engine import (Engine, _release_empty, _value, current_assign, elastic_sizes, job_value)
from .kept import keep, start

def run(p: Problem, *, preempt=True, colocate=True, grow=True, gpu_mem_capacity=None,
        deadline: Deadline) -> tuple[Engine, set, dict]:
    """One HiveD round on ``p`` (moves under the problem's allowance) before
    ``deadline``; returns the engine, the preempted running jobs and statistics."""
    jobs = p.jobs
    # the jobs not running: the placeable ones and those with a reason
    pending = list(p.pending) + [j for j in p.reasons if jobs[j].current is None]
    settings = (gpu_mem_capacity, colocate)
    eng, homeless = start(p, settings, deadline)
    mark = eng.checkpoint()          # the round's changes, journalled from here
    pk = p.prio_key
    order = sorted(pending + homeless, key=lambda j: (not jobs[j].guaranteed, pk[j], j))
    moves = _Moves(p)
    unfit = None if moves.allowed or not order else _Unfit(eng)
    if moves.allowed or not preempt or unfit is None:
        timed_out = _place_all(eng, order, 2 if preempt else 0, moves, deadline, unfit)
    else:
        timed_out, unfit = _place_sparing(eng, order, moves, deadline)
    if grow and not timed_out:
        # with no move allowed only the jobs placed now may grow
        timed_out = _grow(eng, moves, deadline,
                          None if moves.allowed else [j for j in order if jobs[j].current is None])
        waiting = [j for j in order if j not in eng.assign]
        if waiting and not timed_out:
            # a grow re-lays a job out and can free room: the jobs still
            # waiting try again on what is free, stopping no one
            timed_out = _place_all(eng, waiting, 0, moves, deadline, unfit)
    if moves.allowed and not timed_out:
        moved = len(moves.moved)
        _defragment(eng, order, moves, deadline)
        _consolidate(eng, moves, deadline)
        waiting = [j for j in order if j not in eng.assign]
        if waiting and len(moves.moved) > moved:
            # the moves may have freed room beside the jobs they served
            _place_all(eng, waiting, 0, moves, deadline)
    # a running job the round did not place again is where it runs
    log = eng._log if eng._log is not None else []
    touched = {op[1] for op in log[mark:] if op[0] == "place"}
    n_moves = sum(1 for j in touched if j in eng.assign and jobs[j].current is not None
                  and not _same(p, j, eng.assign[j]))
    # the running jobs not placed: the homeless and those the round took off
    off = {op[1] for op in log[mark:] if op[0] == "remove"}.union(homeless)
    preempted = {j for j in off if j in p.fixed and j not in eng.assign}
    stats = {"moves": n_moves}
    if deadline.expired():
        stats["timed_out"] = True
    if not homeless and mark == 0:
        keep(p, eng, settings)
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


class _Unfit:
    """``unfit(j, level)``: job j cannot be placed without victims in the
    room the round started with, and a round that has stopped and moved no
    one leaves no more room later (the module notes); one test per shape.
    ``off()`` once a job was placed over victims: the room may then grow,
    and the test answers False from then on."""

    def __init__(self, eng: Engine):
        self.eng = eng
        #: the room as the round starts (a grow may re-lay a job placed in
        #: the round elsewhere, so only this room bounds every later one)
        self.start = (eng.cpu.copy(), eng.mem.copy(), eng.gfree.copy())
        self.free: Free | None = None
        self.seen: dict[tuple, bool] = {}
        self.on = True

    def off(self) -> None:
        """Victims were taken: the room may grow; no job is ruled out now."""
        self.on = False

    def __call__(self, j: int, level: int) -> bool:
        if not self.on:
            return False
        eng = self.eng
        job = eng.job(j)
        if job.elastic or (level and job.guaranteed):
            return False
        opt = eng.p.options[j][0]
        key = (job.gpus, job.gpu_milli, opt.cpu, opt.mem)
        hit = self.seen.get(key)
        if hit is None:
            if self.free is None:
                self.free = Free(*self.start, eng.p.gpu_server)
            hit = self.seen[key] = self.free.cannot_fit(job, (opt,))
        return hit


def _place_sparing(eng: Engine, order, moves: _Moves, deadline: Deadline) -> tuple[bool, _Unfit]:
    """`_place_all` with victims and no move allowed, its victims as few as
    the jobs of the pass together need (`alloc.engines.cells.spare`);
    returns whether the deadline stopped it and the pass's `_Unfit`."""
    from .spare import fewest_stops
    last: dict = {}

    def place() -> set[int]:
        preempted: set[int] = set()
        last["served"], last["unfit"] = set(), _Unfit(eng)
        last["timed_out"] = _place_all(eng, order, 2, moves, deadline, last["unfit"],
                                       preempted, last["served"])
        return {r for r in preempted if r in eng.p.fixed}

    fewest_stops(eng, place, lambda: last["served"], deadline)
    return last["timed_out"], last["unfit"]


def _place_all(eng: Engine, order, max_level: int, moves: _Moves, deadline: Deadline,
               unfit: _Unfit | None = None, preempted: set[int] | None = None,
               served: set[int] | None = None) -> bool:
    """Place the jobs in ``order`` (smallest elastic size first, victims only
    when no size fits without); re-home victims when moves are allowed
    (after each stop, every victim not yet placed again).
    ``unfit`` rules out at once the jobs that cannot fit (`_Unfit`); the
    jobs stopped are added to ``preempted`` and the jobs placed over them
    to ``served``, when given.  Returns True when the deadline stopped it."""
    preempted = set() if preempted is None else preempted
    for j in order:
        if deadline.expired():
            return True
        if unfit is not None:
            if preempted:
                unfit.off()
            elif unfit(j, max_level):
                continue
        for level in sorted({0, max_level}):
            placed = False
            for n in eng.sizes(j):
                before = set(preempted)
                if eng.try_place(j, n, level, preempted):
                    placed = True
                    newly = preempted - before
                    if newly and served is not None:
                        served.add(j)
                    if moves.allowed and newly:
                        # the new victims' room may hold an earlier one too
                        _rehome(eng, {i for i in preempted if i not in eng.assign},
                                preempted, moves)
                    break
            if placed:
                break
    return False


def _grow(eng: Engine, moves: _Moves, deadline: Deadline, jobs_: Sequence[int] | None = None) -> bool:
    """Gandiva grow: each placed elastic job (of ``jobs_`` when given), highest
    rank first, takes the size of largest speed-up that fits free GPUs and
    raises its real throughput (a running one only within the move budget:
    growing moves it; a pinned one never).  Returns True when the deadline
    stopped it."""
    p = eng.p
    jobs = p.jobs
    cands = [j for j in (eng.assign if jobs_ is None else jobs_)
             if jobs[j].elastic and j in eng.assign]
    for j in sorted(cands, key=lambda j: (p.prio_key[j], j)):
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
    """Running job j left as it runs: ``a`` is `Assign.same_as` its current
    placement (the rule `finish()` counts moves by)."""
    return a.same_as(current_assign(p, j))


def _rehome(eng: Engine, victims: set, preempted: set, moves: _Moves) -> None:
    """Re-place preemption victims elsewhere (a move) while the budget lasts:
    in free room, and a guaranteed one -- whose tenant's cells are its due
    -- else over opportunistic work there (HiveD's level 1), those jobs
    then re-placed in free room the same way."""
    for i in sorted(victims, key=lambda i: (-eng.job(i).priority, i)):
        if not moves.left() or i in eng.assign:
            continue
        for level in ((0, 1) if eng.job(i).guaranteed else (0,)):
            before = set(preempted)
            if any(eng.try_place(i, n, level, preempted) for n in eng.sizes(i)):
                preempted.discard(i)
                moves.moved.add(i)
                if preempted - before:
                    _rehome(eng, preempted - before, preempted, moves)
                break


def _defragment(eng: Engine, order, moves: _Moves, deadline: Deadline) -> None:
    """For each job still unplaced, free one server for it by moving at most
    two running jobs elsewhere, when its value exceeds the moves' cost -- a
    job that fits the room earlier moves freed is placed there first,
    stopping and moving no one."""
    p = eng.p
    jobs = p.jobs
    freed = len(moves.moved)
    for at, j in enumerate(order):
        if deadline.expired():
            return
        if j in eng.assign:
            continue
        if len(moves.moved) > freed:
            _place_all(eng, [j], 0, moves, deadline)
            if j in eng.assign:
                continue
        if not moves.left():
            continue
        n = eng.sizes(j)[-1]
        if n == 0:
            continue
        gain = max(p.upper_coef(j), 1e-9)      # the most the job can be worth placed
        allowed = eng.allowed(j)[1]
        for s in range(p.S):
            if not allowed[s] or p.srv_gpus[s] < n:
                continue
            movers = sorted((i for i in eng.jobs_on_server(s) if i not in moves.moved
                             and jobs[i].current is not None and i not in p.pinned),
                            key=lambda i: (eng.size.get(i, 0), i))
            if _clear_server(eng, j, n, s, movers, moves, gain):
                _first_dibs(eng, j, [h for h in order[:at] if h not in eng.assign], moves,
                            deadline)
                break


def _first_dibs(eng: Engine, j: int, higher: list[int], moves: _Moves,
                deadline: Deadline) -> None:
    """The room moves freed for job j goes first to the jobs ranked above it
    still waiting (``higher``): j is taken out, they are placed where they
    now fit, and j goes back where it still fits (else it waits); when none
    of them fits, j keeps its place."""
    if not higher:
        return
    mark = eng.checkpoint()
    eng.remove(j)
    _place_all(eng, higher, 0, moves, deadline)
    if not any(h in eng.assign for h in higher):
        eng.rollback(mark)
        return
    eng.keep(mark)
    _place_all(eng, [j], 0, moves, deadline)


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
