"""The final check trusts nothing the core keeps.

`violations()` recomputes every fact it asserts from the cluster, the jobs and
the allocation (`alloc.facts`).  Each test below corrupts one cache the core,
validation or a solver keeps -- on the cluster object, on a placement, in a
scheduler loop's carry, in a solver's kept state -- in the way that would hide
a fault from a check that read it, and shows that the check still finds the
fault: on an allocation built by hand (`violations`, and the partial check of
a loop, `alloc.recheck.violations_since`, with a record of its own), or end
to end, where the corrupted cache misleads the core into the fault and the
round fails with `SolverError` instead of returning it.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from alloc import (Allocation, Cell, Cluster, Goodput, GoodputType, GpuShare, Job, Placement,
                   Profile, Server, Session, Tenant, allocate, violations)
from alloc.arrays import cluster_arrays
from alloc.errors import SolverError
from alloc.objectives import goodput_rate
from alloc.problem.build import KEPT
from alloc.profiles import load_profile
from alloc.recheck import record, violations_since


def cluster(n=2, gpus=4, **kw):
    return Cluster(tuple(Server(f"s{i}", 24000, 512000, gpus, "V100") for i in range(n)), **kw)


def placement(job, gpus, cpu=None, mem=None, tput=1.0):
    sids = sorted({g.split("/")[0] for g in gpus})
    return Placement(job.id, tuple(GpuShare(g, job.gpu_milli) for g in gpus),
                     cpu or {sids[0]: job.cpu}, mem or {sids[0]: job.mem}, tput)


def both(c, jobs, alloc, want):
    """The full check and the partial one of a loop find ``want``."""
    bad = violations(c, jobs, alloc)
    assert any(want in b for b in bad), bad
    # the partial check, from a record of an allocation that passed before
    ok = Allocation((), tuple(j.id for j in jobs if j.current is None),
                    ) if not any(j.current for j in jobs) else None
    if ok is not None and not violations(c, jobs, ok):
        got, _ = violations_since(record(c, jobs, ok), c, jobs, alloc)
        assert any(want in b for b in got), got


# --------------------------------------------------------- the cluster's caches
def test_domain_ids_of_the_compile_step():
    c = cluster()
    job = Job("a", 2, cpu=2000, mem=2000, locality="server")
    arr = cluster_arrays(c)
    arr.domain["server"][:] = 0                   # every GPU in one server, says the cache
    arr.srv_domain.clear()
    alloc = Allocation((placement(job, ["s0/gpu0", "s1/gpu0"],
                                  {"s0": 1000, "s1": 1000}, {"s0": 1000, "s1": 1000}),))
    both(c, [job], alloc, "span 2 server nodes")


def test_the_models_own_gpu_index():
    c = cluster()
    job = Job("a", 1, cpu=2000, mem=2000)
    idx = dict(c.gpu_index)
    idx["s1/gpu0"] = idx["s0/gpu1"]               # s1's GPU read as one of s0's
    c.__dict__["gpu_index"] = idx
    alloc = Allocation((placement(job, ["s1/gpu0"], {"s0": 2000}, {"s0": 2000}),))
    both(c, [job], alloc, "holds none of its GPUs")


def test_span_levels_kept_for_throughputs():
    """The throughput the core reports comes from a corrupted span cache:
    the round fails rather than report it."""
    c = cluster(2, 2)
    c.__dict__["_span_domains"] = [(lv, [0] * 4) for lv in reversed(c.levels)]
    prof = load_profile("bert")                   # 0.44 across servers
    job = Job("a", 4, cpu=12000, mem=256000, model="bert", profile=prof)
    with pytest.raises(SolverError, match="reported throughput"):
        allocate(c, [job])
    p = placement(job, ["s0/gpu0", "s0/gpu1", "s1/gpu0", "s1/gpu1"], {"s0": 6000, "s1": 6000},
                  {"s0": 128000, "s1": 128000}, tput=1.0)
    both(c, [job], Allocation((p,)), "reported throughput")


def goodput_job():
    g = Goodput(128, 4096, {"T4": GoodputType((32, 1024), (0.02, 0.001, 0.2, 0.01, 0.05, 0.002,
                                                           1.5))}, grad=(1.0, 4.0))
    return Job("g", 1, cpu=2000, mem=2000, min_gpus=1, max_gpus=8,
               profile=Profile("m", goodput=g))


def goodput_placement(job, gpus, tput, batch, accum):
    return Placement.make(job.id, tuple(GpuShare(g, 1000) for g in gpus), {"s0": job.cpu},
                          {"s0": job.mem}, round(tput, 9), batch, accum)


def test_the_servers_kept_for_a_goodput_speed_up():
    """A goodput job's speed-up and batch depend on how many servers hold
    its GPUs: the check counts them itself, so a corrupted GPU -> server
    cache neither fails a valid placement nor passes one whose value and
    batch are those of one server."""
    c = Cluster(tuple(Server(f"s{i}", 24000, 512000, 4, "T4") for i in range(2)))
    job = goodput_job()
    gpus = ["s0/gpu0", "s0/gpu1", "s1/gpu0", "s1/gpu1"]
    two = goodput_rate(job, 4, ["T4"] * 4, 2)
    one = goodput_rate(job, 4, ["T4"] * 4, 1)
    assert one[0] > two[0] * 1.5 and one[1:] != two[1:]
    good = Allocation((goodput_placement(job, gpus, *two),))
    assert violations(c, [job], good) == []
    c.__dict__["gpu_server"] = (0,) * 8           # every GPU on s0, says the cache
    assert violations(c, [job], good) == []
    both(c, [job], Allocation((goodput_placement(job, gpus, *one),)), "reported throughput")
    both(c, [job], Allocation((goodput_placement(job, gpus, *one),)), "goodput's best")
    both(c, [job], Allocation((goodput_placement(job, gpus, two[0], *one[1:]),)), "batch")


def test_a_profiles_kept_grid_values():
    prof = load_profile("res50")
    c = cluster()
    job = Job("a", 1, cpu=500, mem=500, profile=prof)
    prof.__dict__.setdefault("_grid_memo", {})[(500.0, 500.0)] = 1.0     # the truth: 0
    assert prof.grid_value(500, 500) == 1.0
    both(c, [job], Allocation((placement(job, ["s0/gpu0"], tput=1.0),)), "reported throughput")
    prof.__dict__["_grid_memo"].clear()


def test_gpu_memory_capacities_kept_on_the_cluster():
    c = cluster()
    jobs = [Job(x, 1, cpu=100, mem=100, gpu_milli=500, gpu_mem=30000) for x in "ab"]
    c.__dict__["_gpu_mem_caps"] = tuple([10 ** 9] * 8)
    alloc = Allocation(tuple(placement(j, ["s0/gpu0"]) for j in jobs))
    assert any("GPU memory" in b for b in violations(c, jobs, alloc))


def test_the_cell_forest_and_the_bindings_kept_on_the_cluster():
    from alloc.tenancy import cell_tree
    ten = {"v": Tenant("v", (Cell("server", 1),))}
    c = cluster(2, 4, tenants=ten)
    jobs = [Job(x, 2, cpu=100, mem=100, tenant="v", guaranteed=True) for x in "ab"]
    # guaranteed jobs of one tenant with one server cell, on two servers
    alloc = Allocation((placement(jobs[0], ["s0/gpu0", "s0/gpu1"]),
                        placement(jobs[1], ["s1/gpu0", "s1/gpu1"])))
    tree = cell_tree(c)
    for n in range(tree.N):                       # every cell holds every GPU, says the cache
        tree.gpus[n] = list(range(8))
    used = frozenset({("v", frozenset({0, 1, 4, 5}))})
    c.__dict__["_bindings"] = {used: {"v": (tree.index["server:s0"],)}}
    bad = violations(c, jobs, alloc)
    assert any("tenant 'v'" in b or "binding" in b for b in bad), bad


# ------------------------------------------------------------ what validation keeps
def test_a_running_jobs_placement_is_checked_again():
    from alloc.memo import keep
    c = cluster()
    job = Job("r", 1, cpu=2000, mem=2000)
    bad = placement(job, ["s0/gpu0"], {"s1": 2000}, {"s1": 2000})
    job = replace(job, current=bad)
    keep(bad, "placement_ok", (c, job), True)            # "validation found nothing"
    keep(bad, "problems", (c, job), ([], True))         # "the last check found nothing"
    keep(bad, "throughput", (c, job), 1.0)
    assert any("holds none of its GPUs" in b for b in violations(c, [job], Allocation((bad,))))


# -------------------------------------------------------- a loop's carry, end to end
def session(solver="best-fit", n=2):
    s = Session(cluster(n, 4), solver=solver)
    for i in range(4):
        s.submit(Job(f"j{i}", 1, cpu=1000, mem=1000))
    s.step()
    s.step()              # the carry's last problem has them running
    return s


@pytest.mark.parametrize("solver", ["best-fit", "synergy-tune"])
def test_the_free_capacity_carried_to_the_next_round(solver):
    s = session(solver)
    prev = s._carry.problem
    prev.gpu_free[:] = 1000                       # every GPU free, says the carry
    for i in range(8):
        s.submit(Job(f"k{i}", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError, match="milli allocated"):
        s.step()


def test_the_placement_kept_for_a_running_job():
    from alloc.memo import entries
    s = session()
    jid = s.running[0]
    cur = s.jobs[jid].current
    store = entries(cur)
    kept = store["placement"]
    forged = replace(cur, gpus=(GpuShare("s1/gpu3", 1000),), cpu={"s1": 1000},
                     mem={"s1": 1000})
    store["placement"] = kept[:-1] + (forged,)
    s._carry.take(KEPT)                           # the round reads the memo, not the carry
    with pytest.raises(SolverError, match="moved"):
        s.step()


def test_the_placements_carried_from_the_last_round():
    """The placements of the running jobs kept in place, carried from the
    last round (`alloc.problem.build.KEPT`): a forged one misleads the core
    into an unlisted move, which the check finds."""
    s = session()
    stamp, jobs, kept = s._carry._states[KEPT]
    j, cur = next(iter(kept.items()))
    forged = replace(cur, gpus=(GpuShare("s1/gpu3", 1000),), cpu={"s1": 1000},
                     mem={"s1": 1000})
    s._carry._states[KEPT] = (stamp, jobs, {**kept, j: forged})
    s.submit(Job("k", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError, match="moved"):
        s.step()


def test_the_placement_kept_for_a_running_job_re_placed_from_scratch():
    """The same, in rounds that re-place every job from scratch (moves
    allowed): the partial check knows a placement again only by its value,
    so the forged one is examined and its unlisted move found."""
    from alloc.memo import entries
    s = Session(cluster(2, 4), solver="proportional", max_moves=None, move_cost=0.0)
    for i in range(4):
        s.submit(Job(f"j{i}", 1, cpu=1000, mem=1000))
    s.step()
    s.step()
    assert s._carry.checked is not None             # the next check is the partial one
    jid = s.running[0]
    cur = s.jobs[jid].current
    store = entries(cur)
    kept = store["placement"]
    forged = replace(cur, gpus=(GpuShare("s1/gpu3", 1000),), cpu={"s1": 1000},
                     mem={"s1": 1000})
    store["placement"] = kept[:-1] + (forged,)
    s._carry.take(KEPT)                           # the round reads the memo, not the carry
    s.submit(Job("k", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError, match="moved"):
        s.step()


def test_the_first_fit_round_kept_for_the_next():
    """A from-scratch first-fit round is reused by the next
    (`alloc.engines.greedy.scratch.Played`); one that puts every job on one
    GPU misleads the core into a placement the check refuses, and the round
    fails."""
    from alloc.engines.greedy.scratch import PLAYED, Played
    s = Session(cluster(2, 4), solver="proportional", max_moves=None, move_cost=0.0)
    for i in range(4):
        s.submit(Job(f"j{i}", 1, cpu=1000, mem=1000))
    s.step()
    s.submit(Job("k0", 1, cpu=1000, mem=1000))
    s.step()                                        # from scratch: kept for the next
    kept = s._carry._states[PLAYED]
    s._carry._states[PLAYED] = Played(kept.base, tuple(
        (key, o, ((0, 1000),), cpu, mem) for key, o, _, cpu, mem in kept.steps))
    s.submit(Job("k", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError, match="violation"):
        s.step()


def test_the_shares_kept_by_the_cluster_arrays():
    c = cluster()
    arr = cluster_arrays(c)
    for g in range(arr.G):
        arr.shares[(g, 1000)] = GpuShare("s0/gpu0", 1000)    # every share names GPU 0
    jobs = [Job(f"j{i}", 1, cpu=100, mem=100) for i in range(3)]
    with pytest.raises(SolverError, match="milli allocated"):
        allocate(c, jobs)


def test_a_solvers_kept_state():
    """fgd keeps its cluster state across rounds; one that forgot the running
    jobs places new ones on their GPUs."""
    s = session("fgd")
    from alloc.solvers.fgd import solvers as fgd
    state = s._carry._states[fgd._KEY].state
    prev = s._carry.problem
    for j, a in prev.fixed.items():
        for n, gpus, pod in fgd._parts(prev, prev.jobs[j], a):
            state.remove(n, gpus, pod)
    for i in range(8):
        s.submit(Job(f"k{i}", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError):
        s.step()


def test_the_models_cached_indices_in_the_partial_check():
    """The cluster's ``server_index`` (a cached property) swapped: the
    partial check of a loop compares each server's load with the capacity
    of the server it reads itself."""
    c = Cluster((Server("s0", 1000, 512000, 4, "V100"), Server("s1", 24000, 512000, 4, "V100")))
    c.__dict__["server_index"] = {"s0": 1, "s1": 0}
    c.__dict__["gpu_server"] = (1,) * 4 + (0,) * 4
    job = Job("a", 1, cpu=2000, mem=2000)
    both(c, [job], Allocation((placement(job, ["s0/gpu0"]),)), "server s0: CPU 2000 allocated")


def test_the_index_form_kept_for_a_running_job():
    """A running job's ``current`` placement in index form (kept on it by the
    core) names another GPU: the core places a new job on the GPU it holds,
    and the round fails rather than return that."""
    from alloc.memo import keep
    from alloc.problem import Assign
    c = cluster(1, 8)
    r = Job("r", 1, cpu=1000, mem=1000)
    r = replace(r, current=placement(r, ["s0/gpu0"]))
    keep(r.current, "assign", (c,), Assign(((7, 1000),), ((0, 1000),), ((0, 1000),)))
    jobs = [r] + [Job(f"n{i}", 1, cpu=1000, mem=1000) for i in range(7)]
    with pytest.raises(SolverError, match="milli allocated"):
        allocate(c, jobs)


def test_the_cell_engine_kept_by_hived():
    """hived keeps its cell engine across rounds; one that forgot the running
    jobs' GPUs places new jobs on them."""
    from alloc.engines.cells.kept import KEY
    s = session("hived")
    eng = s._carry._states[KEY].engine
    held = dict(eng.assign)
    for j in held:                                # their GPUs freed, their records kept
        eng.remove(j, release=False)
    eng.assign = held
    for i in range(2):
        s.submit(Job(f"k{i}", 1, cpu=1000, mem=1000))
    with pytest.raises(SolverError, match="milli allocated"):
        s.step()


def test_the_final_check_reads_no_cache_of_the_core():
    """The placements' cache is the core's own table (`alloc.memo`): the
    final check's modules do not import it."""
    import ast
    import alloc
    from pathlib import Path
    root = Path(alloc.__file__).parent
    for name in ("check.py", "facts.py"):
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert "memo" not in (node.module or ""), (name, node.module)

