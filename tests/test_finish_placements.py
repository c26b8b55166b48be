"""The placements of a round in one pass (`Problem.placements`) equal the
placement of each job built on its own and compared with where it runs.

A running job whose assignment is its ``fixed`` one takes its kept placement
and is not compared with ``current``; this must give what building every
placement and comparing it (``same_as``) gives, on generated rounds of a
session where jobs start, finish, move and are preempted, with running jobs
whose ``current`` placement lost its throughput (as
`Allocation.advance` leaves them).
"""
from __future__ import annotations

import random

import pytest

from alloc import Cluster, GpuShare, Job, Placement, Server, Session, allocate
from alloc.problem import Problem

MODELS = ("res18", "bert", "gnmt")


def _naive(problem, order, assign):
    out, moved = [], []
    for j in order:
        p = problem.placement(j, assign[j])
        out.append(p)
        cur = problem.jobs[j].current
        if cur is not None and not p.same_as(cur):
            moved.append(p.job)
    return out, moved


def _job(r: random.Random, k: int) -> Job:
    n = r.choice((1, 1, 1, 2, 4, 8))
    return Job(f"j{k}", n, cpu=3000 * n, mem=64000 * n, model=r.choice(MODELS),
               priority=r.choice((0, 0, 5)))


@pytest.mark.parametrize("solver,max_moves", [("best-fit", 0), ("hived", None),
                                              ("synergy-tune", 0), ("fgd", 0)])
def test_placements_in_one_pass_equal_each_built_alone(solver, max_moves, monkeypatch):
    real = Problem.placements
    checked = {"fast": 0, "rounds": 0, "moved": 0}

    def both(self, order, assign):
        got = real(self, order, assign)
        want = _naive(self, order, assign)
        assert got[0] == want[0] and got[1] == want[1]
        checked["rounds"] += 1
        checked["moved"] += len(got[1])
        checked["fast"] += sum(assign[j] is self.fixed.get(j) for j in order)
        return got
    monkeypatch.setattr(Problem, "placements", both)
    r = random.Random(7)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(8)))
    # 2-GPU jobs split over two servers: hived consolidates them when moves are allowed
    first = []
    for i in range(2):
        sa, sb = f"s{4 + i}", f"s{5 - i}"
        gpus = (GpuShare(f"{sa}/gpu{7 - 2 * i}", 1000), GpuShare(f"{sb}/gpu{6 - 2 * i}", 1000))
        first.append(Job(f"x{i}", 2, cpu=6000, mem=128000, model="bert", current=Placement(
            f"x{i}", gpus, {sa: 3000, sb: 3000}, {sa: 64000, sb: 64000})))
    first += [_job(r, k) for k in range(16)]
    a = allocate(cl, first, solver="best-fit")
    first = list(a.advance(first))                 # running, throughput cleared
    s = Session(cl, jobs=first, solver=solver, max_moves=max_moves,
                move_cost=None if max_moves == 0 else 0.01)
    k = len(first)
    for _ in range(15):
        done = [j for j in s.running if r.random() < 0.2]
        evs = [{"type": "finish", "job": j} for j in done]
        for _ in range(r.randint(0, 8)):
            k += 1
            evs.append({"type": "submit", "job": _job(r, k)})
        s.apply(evs)
        s.step()
    assert checked["rounds"] >= 15 and checked["fast"] > 0, checked
    if max_moves is None:
        assert checked["moved"] > 0, checked


def test_a_running_job_kept_in_place_is_not_moved():
    cl = Cluster((Server("s0", 24000, 512000, 8, "V100"),))
    jobs = [Job("a", 2, cpu=6000, mem=128000, model="res18")]
    a = allocate(cl, jobs, solver="best-fit")
    running = list(a.advance(jobs))
    assert running[0].current.throughput == 0.0
    b = allocate(cl, running, solver="best-fit")
    assert b.moved == () and b.placements[0].same_as(running[0].current)
    assert b.placements[0].throughput > 0.0
