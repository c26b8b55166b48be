"""Gandiva: hand-worked cases of each mechanism -- reactive placement
(Algorithm 1), time-slicing, priorities, packing and its undoing, migration
(defragmentation, locality), grow-shrink, failures -- and the data file."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alloc import allocate, violations
from alloc.errors import InputError
from alloc.model import Cluster, GpuShare, Job, Placement, Server
from alloc.sim.gandiva import gandiva_cluster, load_models, packing_workload, simulate
from alloc.sim.gandiva.data import eta_from_table
from alloc.solvers.gandiva.defrag import defrag_moves, locality_moves
from alloc.solvers.gandiva.scheduler import GandivaScheduler
from alloc.solvers.gandiva.slicing import Unit, slice_choice

MEM = {"P40": 24576, "P100": 16384}
ROOT = Path(__file__).resolve().parents[1]


def servers(n, gpus=4, kind="P40"):
    return Cluster(tuple(Server(f"s{i}", 12000, 458752, gpus, kind) for i in range(n)))


def job(jid, g=1, **kw):
    kw.setdefault("gpu_mem", 1000)
    return Job(jid, g, cpu=1000 * g, mem=1024 * g, **kw)


def running(jid, gpus, g=1):
    sid = gpus[0].split("/")[0]
    return Job(jid, g, cpu=1000 * g, mem=1024 * g,
               current=Placement(jid, tuple(GpuShare(x, 1000) for x in gpus),
                                 {sid: 1000 * g}, {sid: 1024 * g}, 1.0))


def on(sched, jid):
    p = sched.placement(jid)
    return None if p is None else sorted(g.gpu for g in p.gpus)


# ------------------------------------------------------------- Algorithm 1
def test_algorithm1_rules_in_order():
    cl = servers(3)
    jobs = [running("a", ["s0/gpu0"]), running("b", ["s1/gpu0"]), running("c", ["s1/gpu1"]),
            job("n1"), job("n2", 2), job("n3", 4), job("n4", 4), job("n5", 4)]
    a = allocate(cl, jobs, solver="gandiva")
    assert not violations(cl, jobs, a)
    at = {p.job: sorted(g.gpu for g in p.gpus) for p in a.placements}
    assert at["n1"] == ["s0/gpu1"]                 # same affinity, least loaded (s0 < s1)
    assert at["n2"] == ["s2/gpu0", "s2/gpu1"]      # an unallocated server
    # n3 (4 GPUs): no server has 4 free; s0 3 + s1 2 + s2 2 together: spread
    assert len(at["n3"]) == 4 and len({g.split("/")[0] for g in at["n3"]}) > 1
    rules = a.stats["gandiva"]["rules"]
    assert rules["same-affinity"] == 1 and rules["unallocated"] == 1 and rules["spread"] == 1
    # n4, n5: nothing free and no server of affinity 4: queued, not bound
    assert {"n4", "n5"} <= set(a.unplaced) and a.stats["gandiva"]["bound"] == {}


def test_over_subscription_binds_to_least_loaded_same_affinity_server():
    cl = servers(2, gpus=2)
    jobs = [running("a", ["s0/gpu0"]), running("b", ["s0/gpu1"]), running("c", ["s1/gpu0"]),
            running("d", ["s1/gpu1"]), job("e"), job("f")]
    a = allocate(cl, jobs, solver="gandiva", bound={"x": "s0"})   # unknown ids are ignored
    assert a.stats["gandiva"]["bound"] == {"e": "s0", "f": "s1"}
    assert {"e", "f"} <= set(a.unplaced)
    a = allocate(cl, jobs, solver="gandiva", bound={"e": "s0"})
    assert a.stats["gandiva"]["bound"] == {"f": "s1"}              # s0 holds e already
    a = allocate(cl, jobs, solver="gandiva", oversubscribe=False)
    assert a.stats["gandiva"]["bound"] == {} and a.stats["gandiva"]["rules"]["queued"] == 2


def test_plan_is_carried_out_and_missed_when_busy():
    cl = servers(1, gpus=2)
    jobs = [running("a", ["s0/gpu0"]), job("b"), job("c")]
    a = allocate(cl, jobs, solver="gandiva", plan={"b": ["s0/gpu1"], "c": ["s0/gpu0"]},
                 bound={"c": "s0"})
    assert a.placement("b").gpus[0].gpu == "s0/gpu1"
    assert a.stats["gandiva"]["missed"] == ["c"] and "c" in a.unplaced
    with pytest.raises(InputError, match=r"plan\['b'\]: unknown GPU"):
        allocate(cl, jobs, solver="gandiva", plan={"b": ["s9/gpu0"]})


# ------------------------------------------------------------- time-slicing
def test_round_robin_gives_each_job_its_share():
    g = GandivaScheduler(servers(1), gpu_mem_capacity=MEM, packing=False)
    for i in range(6):
        g.submit(job(f"j{i}"), now=float(i))
    assert set(g.suspended) == {"j4", "j5"}
    ran = dict.fromkeys((f"j{i}" for i in range(6)), 0)
    for t in range(1, 7):
        d = g.tick(60.0 * t)
        assert len(d.suspended) == len(d.resumed) + len(d.started) == 2
        for j in ran:
            if g.placement(j) is not None:
                ran[j] += 1
            else:
                assert j in g.suspended
    assert set(ran.values()) == {4}                  # 4 slices of 6 each: 4 GPUs, 6 jobs


def test_unit_choice_never_suspends_higher_priority_for_lower():
    units = [Unit(("hi",), 4, 5, 9.0, 0, True), Unit(("lo1",), 1, 0, 0.0, 1, False),
             Unit(("mid",), 1, 5, 0.0, 2, False)]
    chosen = slice_choice(units, 4)
    assert [u.jobs for u in chosen] == [("mid",)]   # hi does not fit after mid; lo never runs


def test_lower_priority_job_waits_while_higher_ones_fill_the_server():
    g = GandivaScheduler(servers(1, gpus=2), gpu_mem_capacity=MEM, packing=False)
    g.submit(job("h1", priority=5), 0.0)
    g.submit(job("h2", priority=5), 0.0)
    g.submit(job("low", priority=0), 1.0)
    for t in range(1, 5):
        d = g.tick(60.0 * t)
        assert not d.suspended and g.placement("low") is None
    g.submit(job("h3", priority=9), 300.0)          # outranks the running ones
    d = g.tick(360.0)
    assert g.placement("h3") is not None and len(d.suspended) == 1
    assert d.suspended[0] in ("h1", "h2")


# ------------------------------------------------------------------ packing
def packed_pair(measured):
    g = GandivaScheduler(servers(1, gpus=1), gpu_mem_capacity=MEM)
    g.submit(job("a"), 0.0, util=0.1)
    g.submit(job("b"), 1.0, util=0.2)
    d = g.tick(60.0)                              # b's turn; a (profiled) finds no profiled host
    assert d.suspended == ("a",) and not d.packed
    d = g.tick(120.0, {})                         # a's turn; b, profiled now, packs onto a's GPU
    assert d.packed == (("a", "b"),)
    p = [g.placement(j) for j in ("a", "b")]
    assert [x.gpus[0].gpu for x in p] == ["s0/gpu0", "s0/gpu0"]
    assert [x.gpus[0].milli for x in p] == [500, 500]
    return g, g.tick(180.0, {"a": measured, "b": measured})


def test_packing_kept_when_it_beats_time_slicing():
    g, d = packed_pair(0.8)                       # 0.8 + 0.8 > 1
    assert not d.undone and g.groups() and g.counts["packings_kept"] == 1


def test_packing_undone_when_it_loses_and_not_tried_again():
    g, d = packed_pair(0.4)                       # 0.4 + 0.4 <= 1
    assert d.undone == (("a", "b"),) and d.suspended == ("b",)
    assert not g.groups() and len(g.suspended) == 1
    for t in range(5, 12):
        assert not g.tick(60.0 * t).packed        # the same pair is never packed again


def test_packing_only_where_gpu_memory_fits():
    g = GandivaScheduler(servers(1, gpus=1), gpu_mem_capacity=MEM)
    g.submit(job("a", gpu_mem=20000), 0.0, util=0.1)
    g.submit(job("b", gpu_mem=8000), 1.0, util=0.1)
    for t in range(1, 8):
        assert not g.tick(60.0 * t, {}).packed    # 28,000 MiB > 24,576 MiB of a P40


# ---------------------------------------------------------------- migration
def test_defrag_empties_the_emptiest_busy_server():
    moves = defrag_moves([3, 1, 2], {0: [("x", 1)], 1: [("y", 3)], 2: [("z", 1), ("w", 1)]})
    assert moves == [("x", 0, 1)]                 # s0 (3 free) onto the fullest that holds it
    assert defrag_moves([3, 0], {0: [("x", 1)], 1: [("y", 4)]}) == []


def test_locality_brings_a_spread_job_onto_one_server():
    assert locality_moves([2, 0, 3], [("j", 4, {0: 2, 1: 2})]) == [("j", 0)]
    assert locality_moves([0, 1], [("j", 4, {0: 2, 1: 1})]) == []


def test_scheduler_migrates_with_moves_allowed_and_reports_it():
    g = GandivaScheduler(servers(2), gpu_mem_capacity=MEM, packing=False, migration=True)
    for k, jid in enumerate("abcdefgh"):          # a-d on s0, e-h on s1
        g.submit(job(jid), float(k))
    for jid in "bcdh":
        g.finish(jid, 10.0)                       # s0: a alone (3 free); s1: 1 free
    assert on(g, "a")[0].startswith("s0")
    d = g.tick(60.0)
    assert d.migrated == ("a",) and g.counts["migrations"] == 1
    assert on(g, "a")[0].startswith("s1")         # s0 is idle again, free for a 4-GPU job
    assert g.session.last.move[0].job == "a"      # the round lists the move


def test_no_migration_without_moves():
    g = GandivaScheduler(servers(3), gpu_mem_capacity=MEM, packing=False)
    for k, jid in enumerate("abcde"):
        g.submit(job(jid), float(k))
    for jid in "bcd":
        g.finish(jid, 10.0)
    before = {j: on(g, j) for j in "ae"}
    assert not g.tick(60.0).migrated and {j: on(g, j) for j in "ae"} == before


# -------------------------------------------------------------- grow-shrink
def test_grow_when_idle_and_shrink_at_once_for_a_new_job():
    g = GandivaScheduler(servers(1), gpu_mem_capacity=MEM, grow_shrink=True, packing=False)
    g.submit(job("el", 1, min_gpus=1, max_gpus=4), 0.0)
    assert not g.tick(60.0).resized               # idle for less than a slice
    d = g.tick(120.0)
    assert d.resized == (("el", 1, 4),) and len(on(g, "el")) == 4
    d = g.submit(job("new", 2), 130.0)
    assert d.resized == (("el", 4, 1),) and d.started == ("new",)
    assert len(on(g, "el")) == 1 and len(on(g, "new")) == 2


# ----------------------------------------------------------------- failures
def test_server_failure_places_its_jobs_again():
    g = GandivaScheduler(servers(2), gpu_mem_capacity=MEM, packing=False)
    for k in range(6):
        g.submit(job(f"j{k}"), float(k))
    lost_before = [j for j in g.session.jobs if (on(g, j) or [""])[0].startswith("s0")]
    d = g.fail_server("s0", 10.0)
    assert set(d.lost) == set(lost_before)
    assert all((on(g, j) or ["s1"])[0].startswith("s1") for j in g.session.jobs)
    assert len(g.cluster.servers) == 1


# --------------------------------------------------------------------- data
def test_table1_efficiencies_follow_from_the_table():
    ms = load_models()
    eta = eta_from_table(ms.models)
    assert eta["LSTM"] == pytest.approx(53.0 / 63.8 * 0.872, rel=1e-9)
    assert eta["VAE"] == pytest.approx(sum(eta[m] for m in ("RHN", "SCRNN", "MI-LSTM", "LSTM",
                                                             "ResNet-50", "ResNeXt-50")) / 6)
    f = ms.factors(["LSTM", "LSTM"])
    assert sum(f) == pytest.approx(53.0 / 63.8)   # two LSTMs: Table 1's packing rate


def test_bad_model_files_name_the_field(tmp_path):
    doc = json.loads((ROOT / "alloc" / "sim" / "data" / "gandiva_models.json").read_text())
    doc["table1"]["groups"][0]["models"].append("NoSuch")
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"table1\.groups\[0\]\.models: unknown model 'NoSuch'"):
        load_models(bad)
    doc["table1"]["groups"][0]["models"].pop()
    doc["table1"]["pairs"] = [{"models": ["VAE", "VAE"], "rates": [0.9, 0.9]}]
    bad.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"pairs: no throughput for the pair"):
        load_models(bad)


def test_small_run_end_to_end():
    ms = load_models()
    jobs = packing_workload(ms, 30, hours=0.2, seed=3, minutes=(3.0, 5.0))
    r = simulate(jobs, ms, gandiva_cluster(2), gpu_mem_capacity=MEM)
    b = simulate(jobs, ms, gandiva_cluster(2), mode="baseline", gpu_mem_capacity=MEM)
    assert r.summary["unfinished"] == b.summary["unfinished"] == 0
    assert r.summary["time_to_100_minibatches_s"] < b.summary["time_to_100_minibatches_s"]
    assert b.summary["suspensions"] == b.summary["packings"] == 0


# -------------------------------------------------------------------- bench
def run_bench(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "gandiva.py"), *args,
                           "--md", "", "--plot", "", "--workers", "1"],
                          capture_output=True, text=True, env=env, timeout=300)


def test_bench_out_has_the_contract_keys(tmp_path):
    out = tmp_path / "g.json"
    p = run_bench("--servers", "2", "--jobs", "20", "--hours", "0.1", "--seed", "1",
                  "--out", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert set(doc) == {"baseline", "gandiva"}
    for side in doc.values():
        assert {"gpu_util", "time_to_100_minibatches_s", "mean_jct_s", "makespan_s",
                "migrations", "suspensions", "packings", "packings_undone", "wall_s"} <= set(side)
        assert 0.0 <= side["gpu_util"] <= 1.0


@pytest.mark.parametrize("args,field", [
    (("--slice", "-60"), "--slice"),
    (("--switch-cost", "-1"), "--switch-cost"),
    (("--servers", "0"), "servers"),
])
def test_bench_bad_input_is_one_line_exit_2(args, field):
    p = run_bench(*args)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and field in p.stderr


def test_bench_bad_model_file_exit_2(tmp_path):
    doc = json.loads((ROOT / "alloc" / "sim" / "data" / "gandiva_models.json").read_text())
    doc["table1"]["pairs"] = [{"models": ["VAE", "LSTM"], "rates": [0.9, 0.5]}]
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(doc))
    p = run_bench("--models", str(bad))
    assert p.returncode == 2 and "no throughput for the pair" in p.stderr


def test_pair_rule_against_gavels_measured_pairs(shared_dir):
    from alloc.sim.gandiva.data import gavel_pair_check
    got = gavel_pair_check(shared_dir / "data" / "reference" / "gavel_throughputs.json")
    assert got["p100"]["pairs"] > 500 and got["p100"]["median"] < 0.1


def test_failures_during_a_run_keep_every_job():
    ms = load_models()
    jobs = packing_workload(ms, 24, hours=0.1, seed=5, minutes=(3.0, 6.0))
    r = simulate(jobs, ms, gandiva_cluster(3), gpu_mem_capacity=MEM,
                 failures=[(120.0, "s001"), (200.0, "s002")])
    assert r.summary["unfinished"] == 0


def test_a_running_job_submitted_stays_and_counts():
    g = GandivaScheduler(servers(1, gpus=2), gpu_mem_capacity=MEM, packing=False)
    g.submit(running("r", ["s0/gpu1"]), 0.0)
    g.submit(job("a"), 1.0)
    d = g.submit(job("b"), 2.0)
    assert on(g, "r") == ["s0/gpu1"] and on(g, "a") == ["s0/gpu0"]
    assert d.bound == {"b": "s0"} and g.height("s0") == 1.5
