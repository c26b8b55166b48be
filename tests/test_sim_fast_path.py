"""The simulator's fast path against the checked path.

For ``proportional``, ``synergy-greedy`` and ``synergy-tune`` the round-based
simulator packs the runnable jobs on the Synergy package's fast round
(`alloc.solvers.synergy.fast_round`), reused from round to round, instead of
calling `allocate()`.  Every round of a generated run is solved again here
through `allocate()` with the same jobs in the same order on the empty
cluster: the same jobs must run, each with the same CPU, memory and number of
servers (what the simulated progress depends on).  All three are equal on
every round, under every order the runs use.
"""
from __future__ import annotations

import pytest

from alloc import allocate
from alloc.sim import ClusterSpec, SyntheticWorkload
from alloc.sim.engine import simulate
from alloc.sim import engine

SMALL = ClusterSpec(servers=2, gpus_per_server=8, cpu_per_server=24000, mem_per_server=512000)


def shape_of_plan(plan) -> dict:
    return {str(st.id): (c, m, len(parts)) for st, _, parts, c, m in plan}


def shape_of_allocation(cluster, alloc) -> dict:
    index = cluster.server_index
    return {p.job: (sum(p.cpu.values()), sum(p.mem.values()),
                    len({index[g.gpu.rsplit("/", 1)[0]] for g in p.gpus} | {index[s] for s in p.cpu}))
            for p in alloc.placements}


def run_checked(allocator, order, seed, n, monkeypatch, hours=3.0, spec=SMALL,
                split=(40, 40, 20), kind="multi") -> list[int]:
    """The placed jobs of every round of a run, each round checked."""
    fast = engine.Simulator._fast
    rounds = []

    def checked(self, ordered):
        plan = fast(self, ordered)
        alloc = allocate(self.cluster, [s.job for s in ordered], solver=self.allocator,
                         time_limit=60)
        assert shape_of_plan(plan) == shape_of_allocation(self.cluster, alloc)
        rounds.append(len(plan))
        return plan

    monkeypatch.setattr(engine.Simulator, "_fast", checked)
    jobs = SyntheticWorkload(12.0, split, kind, seed=seed).take(n)
    for j in jobs:
        j.work_s = min(j.work_s, hours * 3600.0)
    simulate(spec, jobs, order=order, allocator=allocator, check=True, incremental=False)
    return rounds


@pytest.mark.parametrize("allocator", ["proportional", "synergy-greedy", "synergy-tune"])
@pytest.mark.parametrize("order,seed", [("fifo", 1), ("las", 2), ("srtf", 3)])
def test_fast_path_equals_allocate(allocator, order, seed, monkeypatch):
    rounds = run_checked(allocator, order, seed, 40, monkeypatch)
    assert len(rounds) > 20 and max(rounds) >= 3     # busy rounds were compared


@pytest.mark.parametrize("allocator", ["synergy-greedy", "synergy-tune"])
def test_fast_path_equals_allocate_on_more_servers(allocator, monkeypatch):
    """Three servers, the split with more multi-GPU jobs: spreads and
    reclaiming over several servers (where the two paths once differed)."""
    spec = ClusterSpec(servers=3, gpus_per_server=8, cpu_per_server=24000, mem_per_server=512000)
    rounds = run_checked(allocator, "las", 2, 60, monkeypatch, spec=spec, split=(20, 70, 10))
    assert len(rounds) > 20 and max(rounds) >= 5


def test_the_simulator_has_a_fast_round_only_for_the_three():
    assert engine.Simulator(SMALL, [], allocator="synergy-tune").fast is not None
    assert engine.Simulator(SMALL, [], allocator="best-fit").fast is None
