"""The one-new-job round (alloc.session.fast) gives the full round's answer."""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

from alloc import Cluster, Job, Server, Session
from alloc.errors import InputError

SOLVERS = ["fgd", "openb-best-fit", "fgd-lookahead", "random", "dotprod", "gpu-clustering",
           "gpu-packing"]


def _cluster(rng: random.Random) -> Cluster:
    out = []
    for i in range(rng.randint(2, 6)):
        g = rng.choice([0, 1, 2, 4, 8])
        out.append(Server(f"s{i}", cpu=rng.choice([8000, 16000, 32000]),
                          mem=rng.choice([32000, 64000]), gpus=g,
                          gpu_type=rng.choice(["V100", "T4"]) if g else None))
    return Cluster(tuple(out))


def _job(rng: random.Random, i: int) -> Job:
    k = rng.choice([0, 1, 1, 1, 2, 4])
    milli = rng.choice([250, 500, 810, 1000]) if k == 1 else 1000
    types = rng.choice([(), (), ("V100",), ("T4",)]) if k else ()
    return Job(f"j{i}", gpus=k, gpu_milli=milli, cpu=rng.choice([500, 1000, 4000, 9000]),
               mem=rng.choice([1000, 4000, 20000]), gpu_types=types)


def _same(a, b) -> None:
    """Two round results equal but for their latency."""
    assert [p for p in a.start] == [p for p in b.start]
    assert (a.unplaced, a.reasons, a.move, a.preempt) == (b.unplaced, b.reasons, b.move, b.preempt)
    x, y = a.allocation, b.allocation
    assert replace(x, wall_time_s=0.0) == replace(y, wall_time_s=0.0)


#: a target workload (typical pods) for the solvers' ``target`` option
TARGET = {"c": [1000, 4000, 500], "m": [500, 1000, 810], "k": [1, 2, 1],
          "types": [[], [], ["T4"]], "p": [0.5, 0.3, 0.2], "typed_demand": [[["T4"], 0.1]]}


def _run(solver: str, seed: int, target=None) -> int:
    """A random sequence of events through both paths; the rounds the fast one took."""
    rng = random.Random(seed)
    cl = _cluster(rng)
    opts = {"target": target} if target is not None else None
    fast = Session(cl, solver=solver, seed=seed, options=opts)
    full = Session(cl, solver=solver, seed=seed, options=opts)
    used = 0
    n = 0
    for _ in range(40):
        r = rng.random()
        events: list = []
        if r < 0.75:
            events.append(("submit", _job(rng, n)))
            n += 1
        elif r < 0.85:
            events += [("submit", _job(rng, n)), ("submit", _job(rng, n + 1))]
            n += 2
        elif r < 0.95 and fast.running:
            events.append(("finish", rng.choice(sorted(fast.running))))
        for kind, arg in events:
            for s in (fast, full):
                try:
                    s.submit(arg) if kind == "submit" else s.finish(arg)
                except InputError:
                    pass
        full._fast_mark = None          # always the full round
        a, b = fast.step(), full.step()
        _same(a, b)
        used += bool(a.timings.get("one_job"))
        if rng.random() < 0.8:          # the FGD protocol: a pod not placed is dropped
            for jid in a.unplaced:
                fast.stop(jid)
                full.stop(jid)
    return used


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("target", [None, TARGET])
def test_fast_round_equals_full_round(solver, target):
    used = sum(_run(solver, seed, target) for seed in range(6))
    assert used > 20                    # the fast path was taken


def test_fast_round_not_taken_after_a_change():
    cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=3),))
    s = Session(cl, solver="fgd")
    s.submit(Job("a", 1, cpu=1000, mem=1000))
    s.step()
    s.submit(Job("b", 1, cpu=1000, mem=1000))
    assert s.step().timings.get("one_job")
    s.finish("a")
    s.submit(Job("c", 1, cpu=1000, mem=1000))
    assert not s.step().timings.get("one_job")       # a completion: a full round
    s.submit(Job("d", 1, cpu=1000, mem=1000))
    s.submit(Job("e", 1, cpu=1000, mem=1000))
    r = s.step()
    assert not r.timings.get("one_job") and r.unplaced == ("e",)   # two waiting
    s.submit(Job("f", 1, cpu=1000, mem=1000))
    assert not s.step().timings.get("one_job")       # "e" still waits


def test_fast_round_not_for_a_solver_without_it():
    cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2),))
    s = Session(cl, solver="best-fit")
    for i in range(3):
        s.submit(Job(f"j{i}", 1, cpu=1000, mem=1000))
        assert not s.step().timings.get("one_job")


@pytest.mark.parametrize("solver", ["fgd", "openb-best-fit"])
def test_fast_round_after_a_drained_round(solver):
    cl = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2), Server("s1", cpu=8000, mem=64000,
                                                                     gpus=2)))
    fast, full = Session(cl, solver=solver), Session(cl, solver=solver)
    for s in (fast, full):
        s.submit(Job("a", 1, cpu=1000, mem=1000))
        s.step()
        s.drain_server("s0")
        s.submit(Job("b", 1, gpu_milli=500, cpu=1000, mem=1000))
        s.step()
        s.undrain_server("s0")
    for i in range(4):
        for s in (fast, full):
            s.submit(Job(f"c{i}", 1, gpu_milli=500, cpu=1000, mem=1000))
        full._fast_mark = None
        _same(fast.step(), full.step())
