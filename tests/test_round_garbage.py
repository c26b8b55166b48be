"""A scheduler loop's rounds leave no cyclic garbage of the library's: what a
round derived is freed when the next round replaces it, without the garbage
collector (whose full collections, at production scale, cost a whole
round)."""
import gc
import random

import pytest

from alloc import Cluster, Job, Server, Session


@pytest.mark.parametrize("solver", ["best-fit", "synergy-tune", "fgd", "hived"])
def test_rounds_leave_no_cyclic_garbage(solver):
    r = random.Random(3)
    cl = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100") for i in range(80)))
    s = Session(cl, solver=solver)
    k = 0

    def round_():
        nonlocal k
        evs = [{"type": "finish", "job": j} for j in s.running if r.random() < 0.2]
        for _ in range(30):
            k += 1
            n = r.choice((1, 1, 2, 4, 8))
            evs.append({"type": "submit", "job": Job(f"j{k}", n, cpu=3000 * n, mem=64000 * n,
                                                     model=r.choice(("res18", "bert")))})
        s.apply(evs)
        s.step()
    for _ in range(4):
        round_()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(4):
            round_()
        gc.collect()
        ours = [type(o).__qualname__ for o in gc.garbage
                if type(o).__module__.startswith("alloc.")]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
