"""Synergy GREEDY and TUNE (Mohan et al., OSDI'22).

Jobs arrive in the scheduler's rank order; every allocation is one round.

``synergy-greedy``
    For j in order: place j at ``ideal(j)`` (consolidated on the feasible
    server with the fewest free GPUs, else spread over the servers with the
    fewest free GPUs, CPU and memory split in proportion to GPUs); a job that
    does not fit is skipped.

``synergy-tune``
    Selection: walk the order and keep j while ``sum n_j * milli_j`` fits the
    free milli-GPUs (the scheduler's GPU-only admission).  Then, largest GPU
    demand first (stable):

    1. place at ``ideal(j)`` if it fits;
    2. else at ``fair(j)`` (the request);
    3. else pick target server(s) with free GPUs (one server with room, fewest
       free GPUs first; for a multi-GPU job also the cover of servers with the
       fewest free GPUs) and, on each, revert the jobs already placed there in
       this round to ``cap(p)`` -- least spread first, then most CPU per GPU,
       then most memory per GPU, then earliest in the order -- until j's fair
       share fits; then place j at ``fair(j)``.

    Every placed job's option satisfies ``b_jo >= b_j0``, so it runs at least at
    its GPU-proportional speed.  Running jobs kept in place are never reverted.

When the call allows moves (``max_moves=None``), the registered solvers
(`solve_greedy_moving`, `solve_tune_moving`, which declare ``migration``;
`solve_greedy` and `solve_tune` keep the running jobs) re-place every job
from scratch, running ones included, as Synergy's rounds do
(`alloc.engines.greedy.scratch`: a running job the answer puts where it
runs stays; one it puts elsewhere moves; an answer that would stop a running
job is dropped for the round as given).

On a compiled problem (`ProblemPacker`)
the feasible server with the fewest free GPUs comes from the server index
(`alloc.engines.greedy.index`), and step 3 visits, in the same order,
only the targets where reverting can change something: servers holding a job
placed this round above its capped option, and servers whose capacity grew
during this job's step 3 (a reverted job may span several servers).  Every
other target was left as it was, and the fair share fitted none of them.

In a loop whose rounds start from scratch, a round's first jobs are mostly
placed at their ideal option by the index alone (step 1).  That run is kept
in the loop's carry (`alloc.engines.greedy.scratch.Played`); the next round,
from the same empty cluster, reuses it while its jobs' shapes at their ideal
options are the same in order: the state each of them met depends only on
the shapes placed before it, so each one's placement is the one of the last
round, put in place at once (`ProblemPacker.put_all`), and TUNE goes on
from the first job that differs.
"""
from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Iterable

from ...deadline import Deadline
from ...problem import Problem, Solution, split
from ...engines.greedy.rules import rank_order
from ...engines.greedy.scratch import Played, back, base_of, from_scratch, kept, same_base
from ...engines.greedy.state import new_assign
from ...room import admit as room_admit
from .options import capped_option, ideal_option
from .packers import FastPacker, ProblemPacker


def greedy_core(P, order: Iterable[int], choose, deadline: Deadline) -> None:
    """Place each job at option ``choose(j)`` if it fits; skip it otherwise
    (stops at the deadline)."""
    if isinstance(P, FastPacker):
        P.greedy(order, choose)
        return
    for k, j in enumerate(order):
        if k % 64 == 0 and deadline.expired():
            return
        if P.free_milli() < P.need(j):
            continue
        o = choose(j)
        h = P.fit(j, o, mode="one")
        if h is None and P.n(j) >= 2:
            h = P.fit(j, o, mode="spread")
        if h is not None:
            P.place(j, o, h)


def admit(P, order: Iterable[int], free: int | None = None) -> list[int]:
    """The scheduler's GPU-only admission (`alloc.room.admit`): jobs in
    order while their GPUs fit the free GPU total (``free`` milli-GPU;
    default: the packer's now).  A job it does not admit is never placed,
    so a session holds such jobs out of its rounds (``admission="gpus"``,
    `alloc.session.room`)."""
    need = P.need
    return room_admit(((j, need(j)) for j in order),
                      P.free_milli() if free is None else free)


def _reclaim(P, s: int, need_c: int, need_m: int, capped: dict, exclude: int,
             rank: dict) -> None:
    key = P.reclaim_key
    peers = sorted((key(p) + (rank[p], p) for p in P.jobs_on(s) if p != exclude))
    for *_, p in peers:
        fc, fm = P.free(s)
        if fc >= need_c and fm >= need_m:
            return
        o = P.option(p)
        cap = capped[p]
        if o == cap:
            continue
        cur, new = P.opts[p][o], P.opts[p][cap]
        if new.cpu >= cur.cpu and new.mem >= cur.mem:
            continue  # reverting would free nothing
        P.revert(p, cap)


def _reclaim_and_fit(P, j: int, target, capped: dict, mode: str, rank: dict):
    fair = P.opts[j][0]
    if len(target) == 1:
        cs, ms = [fair.cpu], [fair.mem]
    else:
        ks = [k for _, k in target]
        cs, ms = split(fair.cpu, ks), split(fair.mem, ks)
    for (s, _), c, m in zip(target, cs, ms):
        _reclaim(P, s, c, m, capped, j, rank)
    return P.fit(j, 0, servers=[s for s, _ in target], mode=mode)


def tune_core(P, order: Iterable[int], ideal: dict, capped: dict,
              sort_by_gpus: bool = True, *, deadline: Deadline) -> dict:
    """Synergy-TUNE over a packer; returns counters of what happened.

    Consolidation comes first (the model files penalise spread jobs): ideal,
    fair, then fair after reclaiming on one server; only then, for a
    multi-GPU job, the same three steps spread over several servers.  Stops
    at the deadline (the jobs left are skipped)."""
    return _tune_core(P, order, ideal, capped, sort_by_gpus, deadline, None)[0]


def _tune_core(P, order: Iterable[int], ideal: dict, capped: dict, sort_by_gpus: bool,
               deadline: Deadline, before: Played | None) -> tuple[dict, Played | None]:
    """`tune_core`, and the run of its first jobs each placed at its ideal
    option on one server (the step a next round may reuse); on a
    `ProblemPacker` with nothing placed, the run ``before`` of the last
    round is reused while the shapes are the same (module notes)."""
    stats = {"ideal": 0, "fair": 0, "reclaimed": 0, "spread": 0, "skipped": 0}
    admitted = admit(P, order)
    rank = _Rank(admitted)
    sel = sorted(admitted, key=lambda j: -P.need(j)) if sort_by_gpus else admitted
    kept = isinstance(P, ProblemPacker)
    unfit = _unfit(P) if kept else None
    base = base_of(P.p) if kept else ()
    steps: list[tuple] = []
    k0 = 0
    if kept and before is not None and not P.st.assign and same_base(before.base, base):
        k0 = _reused(P, sel, ideal, before.steps, deadline)
        if k0 < 0:
            return {**stats, "skipped": len(sel), "stopped": "time limit"}, None
        steps += before.steps[:k0]
        stats["ideal"] += k0
    run = kept
    for k in range(k0, len(sel)):
        j = sel[k]
        if k % 32 == 0 and deadline.expired():
            stats["skipped"] += len(sel) - k
            return {**stats, "stopped": "time limit"}, None
        if unfit is not None and not P.nsoft and unfit.known(j):  # `_tune_one`'s first answer
            stats["skipped"] += 1
            run = False
            continue
        o = ideal[j]
        if run:                                    # `_tune_one`'s first step, noted
            h = P.fit(j, o, mode="one")
            if h is not None:
                P.place(j, o, h)
                stats["ideal"] += 1
                steps.append((P.st.shape(j, o).key, o, h.gpus, h.cpu, h.mem))
                continue
            run = False
        how = _tune_one(P, j, o, capped, rank, unfit)
        stats[how or "skipped"] += 1
        if how and P.nservers(j) > 1:
            stats["spread"] += 1
    return dict(stats), (Played(base, tuple(steps)) if kept else None)


def _reused(P: ProblemPacker, sel: list[int], ideal: dict, old: tuple, deadline: Deadline
            ) -> int:
    """How many of the first jobs of ``sel`` take the ideal placements of
    the last round's run ``old`` (their shapes at their ideal options are
    the ones in order), put in place at once; -1 when the deadline passed."""
    st, k = P.st, 0
    m = min(len(old), len(sel))
    shape = st.shape
    while k < m:
        if k % 32 == 0 and deadline.expired():
            return -1
        j = sel[k]
        o = ideal[j]
        step = old[k]
        if step[1] != o or shape(j, o).key != step[0]:
            break
        k += 1
    if k:
        P.put_all([(j, step[1], new_assign(*step[2:])) for j, step in zip(sel, old[:k])])
    return k


class _Unfit:
    """``unfit(j)``: job j cannot fit the room the packer's problem starts
    with (`alloc.room.Free.cannot_fit` over its options), one test per
    shape.  Steps 1-3 place it at one of its options, its CPU and memory
    split in proportion to its GPUs, in a room that placing and reverting
    jobs of this call never make larger: none of them places such a job.
    Step 3 still reverts the jobs on its targets before it tries the fair
    share, so such a job is skipped at once only while no job placed in
    this call may be reverted (``ProblemPacker.nsoft`` is 0); otherwise it
    goes through the steps, which revert and leave it unplaced.
    ``known(j)``: True when j's shape was already found unfit (one lookup,
    no test), so even the ideal step need not be tried."""

    def __init__(self, P: "ProblemPacker"):
        self.p, self.opts = P.p, P.opts
        self.free: Any = None
        self.seen: dict[tuple, tuple] = {}

    def _key(self, j: int) -> tuple:
        job = self.p.jobs[j]
        return (id(self.opts[j]), job.gpus, job.gpu_milli)

    def known(self, j: int) -> bool:
        """True when j's shape is known not to fit (nothing is computed)."""
        hit = self.seen.get(self._key(j))
        return hit is not None and hit[0] is self.opts[j] and hit[1]

    def __call__(self, j: int) -> bool:
        from ...room import Free
        key, opts = self._key(j), self.opts[j]
        hit = self.seen.get(key)
        if hit is None or hit[0] is not opts:
            if self.free is None:
                self.free = Free.of_problem(self.p)
            hit = self.seen[key] = (opts, self.free.cannot_fit(self.p.jobs[j], opts))
        return hit[1]


def _unfit(P: "ProblemPacker") -> _Unfit:
    """The `_Unfit` test of the packer's problem."""
    return _Unfit(P)


class _Rank(dict):
    """Each admitted job's position in the order, built when a tie between
    peers first asks for one (most rounds never reclaim)."""

    def __init__(self, admitted: list[int]):
        super().__init__()
        self.admitted = admitted

    def __missing__(self, j: int) -> int:
        self.update((x, k) for k, x in enumerate(self.admitted))
        return dict.__getitem__(self, j)


def _tune_one(P, j: int, o: int, capped: dict, rank: dict, unfit=None) -> str | None:
    """Place one admitted job: ideal, fair, or fair after reclaiming; returns
    how (``"ideal"``, ``"fair"``, ``"reclaimed"``) or None.  ``unfit(j)``:
    True when the job cannot fit the room the call started with
    (`alloc.room`), so that none of the steps can place it; it is then
    skipped at once when no placed job may be reverted either, so that step
    3 would change nothing (`_Unfit`; ``unfit.known`` is asked first: a
    shape already found unfit costs one lookup)."""
    if unfit is not None and not P.nsoft and unfit.known(j):
        return None
    h = P.fit(j, o, mode="one")  # the common case: ideal on one server
    if h is not None:
        P.place(j, o, h)
        return "ideal"
    if unfit is not None and not P.nsoft and unfit(j):
        return None
    for mode in (("one", "spread") if P.n(j) >= 2 else ("one",)):
        if mode != "one":  # ideal on one server did not fit just above
            h = P.fit(j, o, mode=mode)
            if h is not None:
                P.place(j, o, h)
                return "ideal"
        if o != 0:
            h = P.fit(j, 0, mode=mode)
            if h is not None:
                P.place(j, 0, h)
                return "fair"
        targets = _targets(P, j, mode)
        try:
            for target in targets:
                h = _reclaim_and_fit(P, j, target, capped, mode, rank)
                if h is not None:
                    P.place(j, 0, h)
                    return "reclaimed"
        finally:
            targets.close()
    return None


def _targets(P, j: int, mode: str):
    """The reclaim targets of job j for ``mode`` in the order of
    ``P.targets(j)`` (one server each for "one", the cover for "spread").

    Over the server index (`ProblemPacker.soft_targets`) only targets
    where reclaiming can change something are visited: fair did not fit on
    any single server just before, so a target whose placed jobs cannot be
    reverted and whose capacity has not grown since is left as it is and
    cannot take the job."""
    if not isinstance(P, ProblemPacker) or P.capped is None:
        yield from (t for t in P.targets(j) if (len(t) == 1) == (mode == "one"))
        return
    cover = P.cover(j)
    if mode == "spread":
        if cover and len(cover) > 1:
            yield cover
        return
    st = P.st
    n = max(1, P.n(j))
    ok, cls, whole = st.class_mask(j), st.lay.cls, st.whole
    stream = P.soft_targets(j)
    try:
        mark = len(st.rlog)
        grown: list[tuple[int, int]] = []
        last: tuple[int, int] | None = None
        head = next(stream, None)
        while True:
            if len(st.rlog) > mark:
                for t in set(st.rlog[mark:]):
                    if ok[cls[t]] and P.room(j, t):
                        heappush(grown, (whole[t], t))
                mark = len(st.rlog)
            while head is not None and last is not None and (whole[head], head) <= last:
                head = next(stream, None)
            while grown and last is not None and grown[0] <= last:
                heappop(grown)
            if head is None and not grown:
                break
            if grown and (head is None or grown[0] < (whole[head], head)):
                last = heappop(grown)
            else:
                assert head is not None
                last = (whole[head], head)
                head = next(stream, None)
            yield [(last[1], n)]
    finally:
        stream.close()
    if cover and len(cover) == 1:
        yield cover


# ------------------------------------------------------- registered solvers
#: (option list id, GPUs, server capacities) -> (option list, ideal, capped),
#: kept from call to call (a scheduler loop's jobs share their option lists)
_CHOICES: dict[tuple, tuple] = {}


class _Choice(dict):
    """One of a pending job's two choices (``which``: 0 ideal, 1 capped),
    found when first asked for (a round with a long queue admits few of its
    jobs; the choices of the rest are never needed).  ``get`` answers None
    for a job that is not pending, as a dict of the pending jobs would."""

    def __init__(self, shared: "_Choices", which: int):
        super().__init__()
        self.shared, self.which = shared, which

    def __missing__(self, j: int) -> int:
        if self.shared is None or j not in self.shared.pending:
            raise KeyError(j)
        both = self.shared.both(j)
        return both[self.which]

    def get(self, j, default=None):  # type: ignore[override]
        """The job's choice, or ``default`` when it is not pending."""
        try:
            return self[j]
        except KeyError:
            return default


class _Choices:
    """The memo behind `_choices`: (option list id, GPUs, allowed GPU types)
    -> (ideal, capped), filled job by job."""

    def __init__(self, P: ProblemPacker):
        self.P, self.p = P, P.p
        self.pending = frozenset(P.p.pending)
        self.memo: dict[tuple, tuple[int, int]] = {}
        self.ideal, self.capped = _Choice(self, 0), _Choice(self, 1)

    def close(self) -> None:
        """Break the cycle between the two dicts and this memo (a problem's
        jobs are then freed without the collector); asking for a job not
        found yet raises KeyError from then on."""
        self.ideal.shared = self.capped.shared = None  # type: ignore[assignment]

    def both(self, j: int) -> tuple[int, int]:
        """Job j's ideal and capped option, stored in both dicts."""
        opts, job = self.p.options[j], self.p.jobs[j]
        n = job.gpus
        key = (id(opts), n, job.gpu_types)
        both = self.memo.get(key)
        if both is None:
            caps = tuple(self.P.server_caps(j))
            hit = _CHOICES.get((id(opts), n, caps))
            if hit is None or hit[0] is not opts:
                if len(_CHOICES) > 4096:
                    _CHOICES.clear()
                hit = _CHOICES[(id(opts), n, caps)] = (
                    opts, ideal_option(opts, n, caps), capped_option(opts))
            both = self.memo[key] = hit[1:]
        dict.__setitem__(self.ideal, j, both[0])
        dict.__setitem__(self.capped, j, both[1])
        return both


def _choices(P: ProblemPacker) -> tuple[dict, dict]:
    """Every pending job's ideal and capped option (computed once per option
    list, GPU count and allowed server capacities), each found when first
    asked for."""
    c = _Choices(P)
    return c.ideal, c.capped


def _scratch_first(problem: Problem, solve) -> Solution:
    """``solve`` on the problem from scratch when the call allows moves
    (`alloc.engines.greedy.scratch`), else (or when that answer would stop a
    running job) on the problem as given, its running jobs kept where they
    run (`alloc.engines.greedy.scratch.kept`: the solvers declare
    ``migration``, so they answer for the running jobs too)."""
    scratch = from_scratch(problem)
    if scratch is not None:
        out = back(problem, scratch, solve(scratch))
        if out is not None:
            return out
    return kept(problem, solve(problem))


def _greedy(p: Problem, deadline: Deadline) -> Solution:
    P = ProblemPacker(p)
    c = _Choices(P)
    try:
        greedy_core(P, rank_order(p), c.ideal.__getitem__, deadline)
    finally:
        c.close()
    return P.st.solution()


#: The carry's key of the last from-scratch round's run of ideal placements.
PLAYED = "synergy.tune.ideal-run"


def _tune(p: Problem, deadline: Deadline, sort_by_gpus: bool, carry=None) -> Solution:
    """TUNE on ``p``; with ``carry`` (a from-scratch round of a loop), the
    last round's run of ideal placements reused and this one's kept."""
    P = ProblemPacker(p)
    c = _Choices(P)
    P.capped = c.capped
    try:
        stats, played = _tune_core(P, rank_order(p), c.ideal, c.capped, sort_by_gpus,
                                   deadline, carry.take(PLAYED) if carry is not None else None)
    finally:
        c.close()
    if carry is not None and played is not None:
        carry.keep(PLAYED, played)
    return P.st.solution(**stats)


def solve_greedy(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """GREEDY with the running jobs where they run (see the module notes)."""
    return _greedy(problem, deadline)


def solve_greedy_moving(problem: Problem, *, deadline: Deadline, seed: int = 0) -> Solution:
    """``synergy-greedy`` (declares ``migration``): GREEDY from scratch when
    the call allows any number of moves, else `solve_greedy`."""
    return _scratch_first(problem, lambda p: _greedy(p, deadline))


def solve_tune(problem: Problem, *, deadline: Deadline, seed: int = 0,
               sort_by_gpus: bool = True) -> Solution:
    """TUNE with the running jobs where they run (see the module notes)."""
    return _tune(problem, deadline, sort_by_gpus)


def solve_tune_moving(problem: Problem, *, deadline: Deadline, seed: int = 0,
                      sort_by_gpus: bool = True) -> Solution:
    """``synergy-tune`` (declares ``migration``): TUNE from scratch when the
    call allows any number of moves, else `solve_tune`."""
    carry = problem.carry
    return _scratch_first(problem, lambda p: _tune(p, deadline, sort_by_gpus,
                                                   carry if p is not problem else None))


__all__ = ["admit", "greedy_core", "solve_greedy", "solve_greedy_moving", "solve_tune",
           "solve_tune_moving", "tune_core"]
