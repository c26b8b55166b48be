"""hived's kept engine equals the one rebuilt from the running jobs.

Every round of a session, the engine kept from the last round
(`alloc.engines.cells.kept`: the round's changes settled or rolled back,
the changes between the problems applied) must hold exactly what
`restore_running` builds from the new problem's running jobs: the same
placements, free milli, GPU memory, CPU, memory, idle counts, jobs on each
GPU, bound cells, buddy free lists and unbound virtual cells.  The rounds
are generated (`test_carry`'s workload: arrivals, finishes, failed jobs,
failed, drained and added servers, priorities, guaranteed jobs, preemption
by order, moves).
"""
from __future__ import annotations

import numpy as np
import pytest

from alloc import Server, Session
from alloc.deadline import Deadline
from alloc.engines.cells import kept
from alloc.engines.cells.engine import Engine, restore_running

from test_carry import Workload, cluster, events  # noqa: E402

ARRAYS = ("gfree", "gmem", "owner", "gguar", "cpu", "mem", "idle")
PLAIN = ("assign", "nbound", "bound", "bound_use", "unused", "guaranteed_uses")


def state(eng: Engine) -> dict:
    """What decides a round: every field of the engine's state."""
    out = {k: getattr(eng, k) for k in PLAIN}
    out["assign"] = dict(eng.assign)
    out["free_max"] = {k: v for k, v in eng.free_max.items() if v}
    out["on_gpu"] = list(eng.on_gpu)
    out["idle_dom"] = {k: v.tolist() for k, v in eng.idle_dom.items()}
    out.update((k, getattr(eng, k).tolist()) for k in ARRAYS)
    return out


def spy(monkeypatch) -> dict:
    """Check every successful advance against the rebuild; count the paths."""
    seen = {"advanced": 0, "settled": 0, "held": 0, "rolled back": 0}
    real_advance, real_settle = kept._advance, kept.settle

    def settle(eng, p):
        rolled = eng._log is not None and any(op[0] not in ("place", "remove")
                                              for op in eng._log)
        out = real_settle(eng, p)
        seen["rolled back" if rolled else "settled"] += 1
        seen["held"] += len(out[0])
        return out

    def advance(eng, p, deadline):
        ok = real_advance(eng, p, deadline)
        if ok:
            seen["advanced"] += 1
            fresh = Engine(p, None, eng.colocate)
            fresh.gcap = eng.gcap.copy()
            assert restore_running(fresh, p.running, Deadline.never()) == []
            assert eng._log is None and eng._marks == 0
            got, want = state(eng), state(fresh)
            for k in want:
                assert got[k] == want[k], k
            assert np.array_equal(eng.gcap, fresh.gcap)
        return ok
    monkeypatch.setattr(kept, "settle", settle)
    monkeypatch.setattr(kept, "_advance", advance)
    return seen


@pytest.mark.parametrize("tenants,order,moves", [(False, False, 0), (True, False, 0),
                                                 (False, True, 0), (True, False, 4)])
def test_kept_engine_equals_the_rebuild(tenants, order, moves, monkeypatch):
    seen = spy(monkeypatch)
    for seed in (5, 6):
        w = Workload(seed, False, tenants, True)
        s = Session(cluster(tenants=tenants), solver="hived",
                    preempt="order" if order else None, max_moves=moves)
        spare = [Server(f"z{seed}{i}", 24000, 512000, 8, "V100", "r9", 2, 2) for i in range(2)]
        for _ in range(20):
            s.apply(events(s, w, spare))
            if order:
                ids = list(s.jobs)
                s.set_order(sorted(ids, key=lambda j: (w.rng.randint(0, 5), j)))
            s.step()
    assert seen["advanced"] >= 15 and seen["settled"] >= 10 and seen["held"] >= 20, seen
    if tenants:
        assert seen["rolled back"] >= 1, seen
