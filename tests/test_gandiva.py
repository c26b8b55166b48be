"""Gandiva: hand-worked cases of each mechanism on the one simulator --
reactive placement (Algorithm 1), time-slicing, priorities, packing and its
undoing, migration (defragmentation, locality), grow-shrink, failures --
the command line, the data file and the bench."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alloc import allocate, violations
from alloc.errors import InputError
from alloc.model import Cluster, GpuShare, Job, Placement, Server
from alloc.sched import BaseMechanism, get_policy
from alloc.sched.gandiva.defrag import defrag_moves, locality_moves
from alloc.sched.gandiva.mechanism import GandivaMechanism
from alloc.sched.gandiva.slicing import Unit, slice_choice
from alloc.sim import ServerEvent, WorkloadJob, simulate
from alloc.sim.gandiva import (GandivaProgress, gandiva_cluster, load_models, packing_workload,
                               workload_jobs)
from alloc.sim.gandiva.data import eta_from_table
from alloc.sim.progress import ProgressModel

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


def wjob(jid, at, g=1, dur=10_000.0, util=None, gpu_mem=1000, **kw):
    """A workload job: 1 core and 1 GiB per GPU, its GPU memory, its utilisation."""
    return WorkloadJob(jid, float(at), g, duration_s=dur,
                       extra={} if util is None else {"util": util},
                       fields={"cpu": 1000 * g, "mem": 1024 * g, "gpu_mem": gpu_mem}, **kw)


class Probe(BaseMechanism):
    """Records, after each slice boundary and each round, where jobs run."""

    def __init__(self):
        self.ticks = []
        self.last = {}

    def _now(self, ctl):
        return {j.id: sorted(g.gpu for g in j.run.placement.gpus)
                for j in ctl.jobs.values() if j.running}

    def on_event(self, event, ctl):
        if event.kind == "timer":
            self.ticks.append((event.at_s, self._now(ctl)))

    def after_step(self, result, ctl):
        self.last = self._now(ctl)


def run(cluster, jobs, until, progress=None, events=(), **kw):
    kw.setdefault("gpu_mem_capacity", MEM)
    m, probe = GandivaMechanism(**kw), Probe()
    res = simulate(cluster, jobs, order="fifo:preemptive=false", placement="gandiva",
                   mechanism=[m, probe], progress=progress, max_time_s=until, events=events)
    return m, probe, res


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
    jobs = [wjob(f"j{i}", i) for i in range(6)]
    m, probe, _ = run(servers(1), jobs, 6 * 60.0 + 1, packing=False)
    ran = dict.fromkeys((j.id for j in jobs), 0)
    for _, now in probe.ticks[:6]:
        assert len(now) == 4
        for j in now:
            ran[j] += 1
    assert set(ran.values()) == {4}                  # 4 slices of 6 each: 4 GPUs, 6 jobs
    assert m.counts["suspensions"] == 12 and m.counts["started"] + m.counts["resumed"] == 16


def test_unit_choice_never_suspends_higher_priority_for_lower():
    units = [Unit(("hi",), 4, 5, 9.0, 0, True), Unit(("lo1",), 1, 0, 0.0, 1, False),
             Unit(("mid",), 1, 5, 0.0, 2, False)]
    chosen = slice_choice(units, 4)
    assert [u.jobs for u in chosen] == [("mid",)]   # hi does not fit after mid; lo never runs


def test_lower_priority_job_waits_while_higher_ones_fill_the_server():
    jobs = [wjob("h1", 0, priority=5), wjob("h2", 0, priority=5), wjob("low", 1),
            wjob("h3", 301, priority=9)]                # outranks the running ones
    m, probe, _ = run(servers(1, gpus=2), jobs, 361.0, packing=False)
    for t, now in probe.ticks:
        assert "low" not in now
        if t < 300:
            assert set(now) == {"h1", "h2"}
    assert set(probe.ticks[-1][1]) in ({"h3", "h1"}, {"h3", "h2"})
    assert m.counts["suspensions"] == 1


# ------------------------------------------------------------------ packing
class Shared(ProgressModel):
    """Each job of a packed pair runs at ``f`` of its speed alone."""
    name = "shared"
    gives = frozenset({"duration"})

    def __init__(self, f):
        super().__init__()
        self.f = f

    def rate(self, job, run):
        return self.f if run.colocated else 1.0


def packed_pair(f, until=181.0):
    jobs = [wjob("a", 0, util=0.1), wjob("b", 1, util=0.2)]
    m, probe, res = run(servers(1, gpus=1), jobs, until, progress=Shared(f))
    t60, t120 = probe.ticks[0][1], probe.ticks[1][1]
    assert t60 == {"b": ["s0/gpu0"]}                  # b's turn; a finds no profiled host
    assert t120 == {"a": ["s0/gpu0"], "b": ["s0/gpu0"]}   # b, profiled now, packs onto a's GPU
    return m, probe, res


def test_packing_kept_when_it_beats_time_slicing():
    m, probe, _ = packed_pair(0.8)                   # 0.8 + 0.8 > 1
    assert m.counts["packings"] == m.counts["packings_kept"] == 1
    assert not m.counts["packings_undone"] and m.groups()
    assert m.kept == [(120.0, 1)]


def test_packing_undone_when_it_loses_and_not_tried_again():
    m, probe, _ = packed_pair(0.4, until=11 * 60.0 + 1)   # 0.4 + 0.4 <= 1
    assert m.counts["packings_undone"] == m.counts["packings"] == 1   # never packed again
    assert len(probe.ticks[2][1]) == 1 and not m.groups()
    assert m.kept == [(120.0, 1), (180.0, 0)]


def test_packed_jobs_hold_equal_shares_of_the_gpu():
    jobs = [wjob("a", 0, util=0.1), wjob("b", 1, util=0.2)]
    shares = []

    class Shares(BaseMechanism):
        def on_event(self, event, ctl):
            if event.kind == "timer":
                shares.append(sorted(j.run.milli for j in ctl.jobs.values() if j.running))
    m = GandivaMechanism(gpu_mem_capacity=MEM)
    simulate(servers(1, gpus=1), jobs, order="fifo:preemptive=false", placement="gandiva",
             mechanism=[m, Shares()], progress=Shared(0.8), max_time_s=121.0)
    assert shares == [[1000], [500, 500]]


def test_packing_only_where_gpu_memory_fits():
    jobs = [wjob("a", 0, util=0.1, gpu_mem=20000), wjob("b", 1, util=0.1, gpu_mem=8000)]
    m, _, _ = run(servers(1, gpus=1), jobs, 8 * 60.0 + 1)
    assert not m.counts["packings"]                   # 28,000 MiB > 24,576 MiB of a P40


def test_packing_reads_the_servers_gpu_memory():
    """A server's declared ``gpu_mem`` bounds packing; without a mapping the
    library's table gives the type's memory (a P40: 24,576 MiB)."""
    small = Cluster((Server("s0", 12000, 458752, 1, "P40", gpu_mem=8192),))
    jobs = [wjob("a", 0, util=0.1, gpu_mem=5000), wjob("b", 1, util=0.1, gpu_mem=5000)]
    m, _, _ = run(small, jobs, 8 * 60.0 + 1)
    assert not m.counts["packings"]                   # 10,000 > 8,192
    m, _, _ = run(servers(1, gpus=1), jobs, 8 * 60.0 + 1, gpu_mem_capacity=None)
    assert m.counts["packings"]                       # 10,000 <= 24,576


def test_no_packing_without_a_known_utilisation():
    jobs = [wjob("a", 0), wjob("b", 1)]               # no util column: never profiled for it
    m, _, _ = run(servers(1, gpus=1), jobs, 8 * 60.0 + 1)
    assert not m.counts["packings"] and m.counts["suspensions"]


# ---------------------------------------------------------------- migration
def test_defrag_empties_the_emptiest_busy_server():
    moves = defrag_moves([3, 1, 2], {0: [("x", 1)], 1: [("y", 3)], 2: [("z", 1), ("w", 1)]})
    assert moves == [("x", 0, 1)]                 # s0 (3 free) onto the fullest that holds it
    assert defrag_moves([3, 0], {0: [("x", 1)], 1: [("y", 4)]}) == []


def test_locality_brings_a_spread_job_onto_one_server():
    assert locality_moves([2, 0, 3], [("j", 4, {0: 2, 1: 2})]) == [("j", 0)]
    assert locality_moves([0, 1], [("j", 4, {0: 2, 1: 1})]) == []


def eight_then_four_leave(**kw):
    """a-d on s0, e-h on s1; b, c, d and h finish at 10 s."""
    jobs = [wjob(jid, k, dur=10.0 - k if jid in "bcdh" else 10_000.0)
            for k, jid in enumerate("abcdefgh")]
    return run(servers(2), jobs, 61.0, packing=False, **kw)


def test_migration_defragments_and_reports_the_move():
    m, probe, res = eight_then_four_leave(migration=True)
    assert probe.ticks[0][1]["a"][0].startswith("s1")  # s0 is idle again, free for a 4-GPU job
    assert m.counts["migrations"] == 1 and res.summary()["moves"] == 1


def test_no_migration_without_the_mechanism():
    m, probe, res = eight_then_four_leave(migration=False)
    assert probe.ticks[0][1]["a"][0].startswith("s0")
    assert not m.counts["migrations"] and res.summary()["moves"] == 0


# -------------------------------------------------------------- grow-shrink
def test_grow_when_idle_and_shrink_at_once_for_a_new_job():
    jobs = [wjob("el", 0, min_gpus=1, max_gpus=4), wjob("new", 130, 2)]
    m, probe, _ = run(servers(1), jobs, 131.0, grow_shrink=True, packing=False)
    assert len(probe.ticks[0][1]["el"]) == 1           # idle for less than a slice
    assert len(probe.ticks[1][1]["el"]) == 4
    assert m.counts["resizes"] == 2                    # grown, then shrunk for "new"
    assert len(probe.last["el"]) == 1 and len(probe.last["new"]) == 2


# ----------------------------------------------------------------- failures
def test_server_failure_places_its_jobs_again():
    jobs = [wjob(f"j{k}", k, dur=600.0) for k in range(6)]
    m, probe, res = run(servers(2), jobs, None, packing=False,
                        events=[ServerEvent(10.0, "fail", "s0")])
    assert m.counts["lost"] == 4 and res.summary()["unfinished"] == 0
    assert all(g[0].startswith("s1") for _, now in probe.ticks for g in now.values())


def test_failures_during_a_run_keep_every_job():
    ms = load_models()
    jobs = workload_jobs(packing_workload(ms, 24, hours=0.1, seed=5, minutes=(3.0, 6.0)), ms)
    m, _, res = run(gandiva_cluster(3), jobs, None, progress=GandivaProgress(ms),
                    events=[ServerEvent(120.0, "fail", "s001"), ServerEvent(200.0, "fail", "s002")])
    assert res.summary()["unfinished"] == 0


@pytest.mark.parametrize("placement", ["gandiva", "best-fit"])
def test_a_drained_server_releases_the_jobs_bound_to_it(placement):
    """Jobs waiting bound to a server that is drained queue again and run
    elsewhere; its running jobs run on; no slice starts a job there until it
    is open again."""
    cl = Cluster(tuple(Server(f"s{i}", cpu=8000, mem=64000, gpus=1) for i in range(2)))
    jobs = [WorkloadJob(f"j{k}", float(k), 1, duration_s=1000.0) for k in range(6)]
    m, probe = GandivaMechanism(packing=False), Probe()
    res = simulate(cl, jobs, order="fifo:preemptive=false", placement=placement,
                   mechanism=[m, probe], events=[ServerEvent(50.0, "drain", "s1"),
                                                 ServerEvent(2000.0, "undrain", "s1")])
    assert res.summary()["unfinished"] == 0
    on_s1 = [j for at, now in probe.ticks if 50.0 < at < 2000.0
             for j, gpus in now.items() if gpus[0].startswith("s1")]
    assert set(on_s1) <= {"j1"}                        # only what ran there at the drain
    rows = {r["id"]: r for r in res.timeline()}
    assert all(rows[j]["end_s"] is not None for j in rows)


# ------------------------------------------------------------ the stack
def test_registered_mechanisms_and_their_settings():
    assert get_policy("mechanism", "gandiva-packing").build().packing
    m = get_policy("mechanism", "gandiva").build(migration=True, slice_s=30.0)
    assert m.migration and m.slice_s == 30.0
    with pytest.raises(InputError, match="slice_s"):
        get_policy("mechanism", "gandiva").build(slice_s=0)


def test_the_gandiva_placement_needs_a_non_preemptive_order():
    with pytest.raises(InputError, match="order-preemption"):
        simulate(servers(1), [wjob("a", 0)], order="fifo", placement="gandiva",
                 mechanism="gandiva")


@pytest.mark.parametrize("placement", ["best-fit", "fgd"])
def test_the_mechanism_binds_and_slices_over_another_placement(placement):
    """Over another solver the mechanism binds the jobs it leaves out
    (Algorithm 1's step 4) and time-slices them as over ``gandiva``."""
    from alloc.sim import WorkloadJob
    cl = Cluster((Server("s0", cpu=12000, mem=65536, gpus=1),))
    out = {}
    for pl in ("gandiva", placement):
        jobs = [WorkloadJob(j, float(k), 1, duration_s=d)
                for k, (j, d) in enumerate((("a", 120.0), ("b", 120.0), ("c", 60.0)))]
        m = GandivaMechanism(packing=False)
        res = simulate(cl, jobs, order="fifo:preemptive=false", placement=pl, mechanism=m)
        out[pl] = (m.counts["oversubscribed"], m.counts["suspensions"],
                   [r["end_s"] for r in res.timeline()])
    assert out[placement] == out["gandiva"] == (2, 3, [180.0, 240.0, 300.0])


def cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "alloc", "simulate", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_simulate_stacks_the_mechanism_on_any_order_and_placement(tmp_path):
    w = tmp_path / "w.csv"
    w.write_text("id,arrival_s,gpus,duration_s\n" + "".join(
        f"j{i},{20 * i},{1 + i % 3},{600 + 120 * i}\n" for i in range(12)))
    p = cli(str(w), "--servers", "2", "--gpus-per-server", "4", "--order", "las",
            "--placement", "best-fit", "--mechanism", "gandiva", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["jobs"] == 12 and s["unfinished"] == 0 and s["suspensions"] > 0


def test_simulate_runs_the_mechanism_by_name(tmp_path):
    w = tmp_path / "w.csv"
    w.write_text("id,arrival_s,gpus,duration_s\n" + "".join(
        f"j{i},{i},1,{300 + 60 * i}\n" for i in range(5)))
    base = ["--servers", "1", "--gpus-per-server", "2", "--order", "fifo:preemptive=false"]
    p = cli(str(w), *base, "--placement", "gandiva", "--mechanism", "gandiva-slicing",
            "--out", str(tmp_path / "g"))
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert s["jobs"] == 5 and s["preemptions"] > 0
    p = cli(str(w), *base, "--placement", "gandiva:oversubscribe=false", "--out",
            str(tmp_path / "b"))
    assert p.returncode == 0, p.stderr
    b = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert b["preemptions"] == 0 and b["jobs"] == 5
    p = cli(str(w), "--servers", "1", "--gpus-per-server", "2", "--order", "fifo",
            "--placement", "gandiva", "--mechanism", "gandiva", "--out", str(tmp_path / "x"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "gandiva" in p.stderr


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
    jobs = workload_jobs(packing_workload(ms, 30, hours=0.2, seed=3, minutes=(3.0, 5.0)), ms)
    out = {}
    for over in (True, False):
        prog = GandivaProgress(ms)
        m, _, res = run(gandiva_cluster(2), jobs, None, progress=prog, oversubscribe=over)
        out[over] = (res.summary(), m, sum(prog.feedback.values()) / len(prog.feedback))
    (g, _, fg), (b, mb, fb) = out[True], out[False]
    assert g["unfinished"] == b["unfinished"] == 0
    assert fg < fb                                     # early feedback: time to 100 mini-batches
    assert mb.counts["suspensions"] == mb.counts["packings"] == 0 and b["preemptions"] == 0


def test_a_packed_pair_runs_at_the_tables_rates():
    """Two LSTMs packed on one GPU: each at half Table 1's packing rate."""
    ms = load_models()
    p = GandivaProgress(ms)
    from alloc.sim.progress import Run

    class J:
        id, model, state = "a", "LSTM", {}
        spec = WorkloadJob("a", 0.0, 1, duration_s=1.0)

        def peer(self, other):
            return type("O", (), {"model": "LSTM", "run": Run(gpus=1)})()
    r = p.rate(J(), Run(gpus=1, gpu_names=("s/gpu0",), colocated=("b",)))
    assert 2 * r == pytest.approx(53.0 / 63.8 * ms.models["LSTM"].rate_mbps)


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




# --------------------------------------------------- the simulator's hooks
def test_a_quiet_timer_calls_for_no_round():
    class Ticker(BaseMechanism):
        def __init__(self, quiet):
            self.quiet, self.fired = quiet, 0

        def start(self, ctl):
            ctl.timer(10.0, round=not self.quiet)

        def on_event(self, event, ctl):
            if event.kind == "timer":
                self.fired += 1
                ctl.timer(event.at_s + 10.0, round=not self.quiet)
    jobs = [WorkloadJob("a", 0.0, 1, duration_s=95.0)]
    rounds = {}
    for quiet in (True, False):
        t = Ticker(quiet)
        res = simulate(servers(1), jobs, mechanism=t)
        rounds[quiet] = res.summary()["rounds"]
        assert t.fired == 9
    assert rounds == {True: 1, False: 10}


def test_suspend_gives_a_waiting_job_its_share():
    seen = []

    class Halver(BaseMechanism):
        def on_event(self, event, ctl):
            if event.kind == "arrival" and event.job == "b":
                ctl.suspend("a", hold=False, milli=500)     # a waits, for half a GPU

        def after_step(self, result, ctl):
            seen.append(sorted((p.job, p.gpus[0].milli) for p in result.start))
    jobs = [WorkloadJob("a", 0.0, 1, duration_s=100.0), WorkloadJob("b", 10.0, 1,
                                                                    duration_s=100.0)]
    simulate(Cluster((Server("s0", 12000, 458752, 1, "P40"),)), jobs,
             order="fifo:preemptive=false", mechanism=Halver())
    assert seen[0] == [("a", 1000)] and ("a", 500) in seen[1]
    with pytest.raises(InputError, match="milli"):
        class Bad(Halver):
            def on_event(self, event, ctl):
                ctl.suspend(event.job, milli=0)
        simulate(servers(1), jobs, mechanism=Bad())
