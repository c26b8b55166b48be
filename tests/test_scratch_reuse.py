"""Rounds from scratch with the last round's answer reused
(`alloc.engines.greedy.scratch.first_fit_all`, TUNE's run of ideal
placements) place every job exactly as a fresh call does, whatever the last
round was."""
from __future__ import annotations

import copy
import random

import pytest

from alloc import Cluster, Job, Server, Session, allocate
from alloc.deadline import Deadline
from alloc.engines.greedy.rules import first_fit
from alloc.engines.greedy.scratch import PLAYED, first_fit_all
from alloc.engines.greedy.state import State
from alloc.problem import compile_problem

MODELS = ("res18", "bert", "gnmt", "res50")
SHAPES = ((1, 1000, 3000, 64000), (1, 1000, 6000, 32000), (2, 1000, 6000, 128000),
          (1, 500, 1000, 8000), (4, 1000, 12000, 256000), (0, 1000, 2000, 2000))


def plain(p, order):
    st = State(p)
    for j in order:
        a = first_fit(st, j, 0)
        if a is not None:
            st.place(j, a, 0)
    return st.assign


def test_reuse_places_as_first_fit_does():
    rng = random.Random(3)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(5)))
    played, reused = None, 0
    for _ in range(60):
        n = rng.randint(5, 40)
        jobs = [Job(f"j{k}", g, gpu_milli=q, cpu=c, mem=m)
                for k, (g, q, c, m) in enumerate(rng.choice(SHAPES[:2]) if rng.random() < 0.8
                                                 else rng.choice(SHAPES) for _ in range(n))]
        p = compile_problem(cl, jobs)
        order = list(range(n))
        rng.shuffle(order)
        st = State(p)
        before = played
        stats, played = first_fit_all(st, order, Deadline.never(), before)
        assert stats == {} and played is not None
        assert st.assign == plain(p, order)
        reused += before is not None and len(before.steps) > 0 and len(played.steps) > 0
        # and the state it leaves takes the next job as the plain one does
        extra = compile_problem(cl, jobs + [Job("x", 2, cpu=6000, mem=64000)])
        st2 = State(extra)
        first_fit_all(st2, order + [n], Deadline.never(), played)
        assert st2.assign == plain(extra, order + [n])
    assert reused >= 20


def test_a_session_keeps_the_round_for_the_next():
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(2)))
    s = Session(cl, solver="proportional", max_moves=None, move_cost=0.0)
    for i in range(6):
        s.submit(Job(f"j{i}", 1, cpu=3000, mem=64000))
    s.step()
    s.submit(Job("k", 1, cpu=3000, mem=64000))
    s.step()
    kept = s._carry._states[PLAYED]
    assert len(kept.steps) == 7


@pytest.mark.parametrize("solver", ["proportional", "synergy-tune"])
def test_rounds_from_scratch_equal_fresh_calls(solver):
    """A loop whose rounds re-place every job (moves allowed) reuses the last
    round's run; every round equals a fresh call on copies of its input."""
    from alloc.engines.greedy import scratch
    from alloc.solvers.synergy import tune
    key = scratch.PLAYED if solver == "proportional" else tune.PLAYED
    rng = random.Random(7)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(3)))
    s = Session(cl, solver=solver, max_moves=None, move_cost=0.0)
    k, reused, reclaimed = 0, 0, 0
    for _ in range(30):
        for j in [j for j in s.running if rng.random() < 0.15]:
            s.finish(j)
        for _ in range(rng.randint(0, 8)):
            k += 1
            n = rng.choice((1, 1, 1, 2))
            s.submit(Job(f"j{k}", n, cpu=3000 * n, mem=64000 * n, model=rng.choice(MODELS)))
        before = s._carry._states.get(key)
        jobs, order = copy.deepcopy(list(s.jobs.values())), list(s.order or ())
        got = s.step().allocation
        want = allocate(copy.deepcopy(cl), jobs, solver=solver, order=order or None,
                        max_moves=None, move_cost=0.0)
        assert (got.placements, got.unplaced, got.moved, got.value) == \
            (want.placements, want.unplaced, want.moved, want.value)
        reused += before is not None and len(before.steps) > 0
        reclaimed += got.stats.get("reclaimed", 0) > 0
    assert reused >= 15, reused
    assert solver == "proportional" or reclaimed >= 5, reclaimed      # TUNE reverted jobs
