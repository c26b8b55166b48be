"""PipeSwitch: Table 3's costs, the scheduling-cycle experiment worked by hand,
the sharing decision (checked by the core), the shared-cluster run, and bad
input (one line naming the field, exit 2 from the bench script)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alloc import violations
from alloc.errors import InputError
from alloc.model import Cluster, Server
from alloc.pipeswitch import MECHANISMS, Service, Training, load_costs, share_gpus
from alloc.sim.pipeswitch import cycle_run, shared_run

ROOT = Path(__file__).resolve().parents[1]


def v100s(n):
    return Cluster(tuple(Server(f"p{i}", 8000, 62464, 1, "V100") for i in range(n)))


def test_table3_costs_are_read():
    c = load_costs()
    assert c.switch_s("V100", "ResNet152", "pipeswitch") == pytest.approx(0.00601)
    assert c.switch_s("V100", "Inception_v3", "stop_and_start") == pytest.approx(7.53607)
    assert c.switch_s("T4", "BERT_base", "mps") == pytest.approx(0.33825)
    assert c.batch_s("V100", "ResNet152") == pytest.approx(0.032)
    with pytest.raises(InputError, match="mechanism: expected one of"):
        c.switch_s("V100", "ResNet152", "cuda")


def test_cycle_run_by_hand():
    # PipeSwitch, T = 1 s: first batch at 6.01 + 32 ms, then one every 32 ms:
    # k batches while 0.00601 + 0.032 k < 1, i.e. 31; the ready model: 31 too
    p = cycle_run("pipeswitch", 1.0)
    assert p.throughput == pytest.approx(8 * 31 / 1.0) and p.utilisation == 1.0
    assert p.first_latency_ms == pytest.approx(38.01)
    # stop-and-start, T = 10 s: 6.4754 + 0.032 k < 10 -> k = 110 of 312
    s = cycle_run("stop_and_start", 10.0)
    assert s.throughput == pytest.approx(8 * 110 / 10.0)
    assert s.utilisation == pytest.approx(110 / 312)
    for T in (1, 2, 5):
        assert cycle_run("stop_and_start", T).utilisation == 0.0
        assert cycle_run("stop_and_start", T).lost_share == 1.0
    # MPS, T = 30 s: a first batch of 32 + 307 ms, then 80 ms each
    m = cycle_run("mps", 30.0)
    assert m.throughput == pytest.approx(8 * (1 + int((30 - 0.33902) / 0.08)) / 30, rel=1e-3)
    assert 0.35 < m.utilisation < 0.41
    with pytest.raises(InputError, match="cycle_s"):
        cycle_run("pipeswitch", -1)


def test_decision_shares_and_passes_the_check():
    cl = v100s(3)
    tr = [Training(f"t{i}", "ResNet152") for i in range(3)]
    sv = [Service("slow", "ResNet152", 2.0, 1000.0), Service("tight", "ResNet152", 5.0, 40.0)]
    d = share_gpus(cl, tr, sv, cycle_s=0.5)
    # tight: 0.5 - 0.08 + 0.006 + 0.032 s > 40 ms: a GPU of its own (t2 gives it up)
    assert d.services["tight"].gpu == "p2/gpu0" and not d.services["tight"].shared
    assert d.services["tight"].worst_ms == pytest.approx(32.0)
    assert d.waiting == ("t2",)
    # slow: w = 2 * 0.032 * 0.5 = 0.032 s; shares with t0 (best fit, first)
    slow = d.services["slow"]
    assert slow.shared and slow.window_s == pytest.approx(0.032)
    assert slow.worst_ms == pytest.approx(1e3 * (0.5 - 0.032 + 0.00601 + 0.032))
    g0 = next(g for g in d.gpus if g.services)
    assert g0.switch_s == pytest.approx(2 * 0.00601) and g0.train_switch_s == pytest.approx(0.00601)
    assert g0.training_share == pytest.approx((0.5 - 0.032 - 2 * 0.00601) / 0.5)
    assert not violations(cl, list(d.jobs), d.allocation)
    milli = {}
    for p in d.allocation.placements:
        for g in p.gpus:
            milli[g.gpu] = milli.get(g.gpu, 0) + g.milli
    assert max(milli.values()) <= 1000


def test_cycle_shorter_than_a_switch_is_refused():
    with pytest.raises(InputError, match=r"cycle_s: 0\.005 s is not longer than the switch cost"):
        share_gpus(v100s(1), [Training("t", "ResNet152")], [], cycle_s=0.005)
    with pytest.raises(InputError, match=r"services\[0\]\.model: no inference time"):
        share_gpus(v100s(1), [], [Service("s", "Inception_v3", 1.0, 100.0)], cycle_s=1.0)
    with pytest.raises(InputError, match=r"services\[0\]\.rate"):
        share_gpus(v100s(1), [], [Service("s", "ResNet152", -1.0, 100.0)], cycle_s=1.0)


def test_shared_run_accounts_switching_and_latency():
    cl = v100s(2)
    tr = [Training("t0", "ResNet152"), Training("t1", "ResNet152")]
    sv = [Service("a", "ResNet152", 4.0, 800.0)]
    d = share_gpus(cl, tr, sv, cycle_s=0.5)
    r = shared_run(d, {"a": 4.0}, horizon_s=300.0, seed=1)
    a = r.services["a"]
    assert a.requests > 1000 and a.mean_ms >= 32.0
    assert a.max_ms <= 1e3 * (0.5 + 0.00601 + 0.032) + 32.0 * 10
    # two switches in each cycle with a request: 1 - e^(-4 * 0.5) of the 600 cycles
    busy_cycles = 600 * (1 - math.exp(-2.0))
    assert r.switch_share == pytest.approx(busy_cycles * 2 * 0.00601 / 600.0, rel=0.1)
    assert r.training_share + r.inference_share + r.switch_share <= 1.0 + 1e-9
    assert r.training_share > 0.8


def run_bench(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "pipeswitch.py"), *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_bench_out_shape_and_bad_input(tmp_path):
    out = tmp_path / "f.json"
    p = run_bench("--out", str(out), "--md", "", "--plot", "", "--shared-cycles", "1",
                  "--horizon", "60")
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert set(doc) == {"T", *MECHANISMS} and doc["T"] == [1, 2, 5, 10, 30]
    assert all(0.0 <= u <= 1.0 for m in MECHANISMS for u in doc[m])
    bad = run_bench("--md", "", "--plot", "", "--shared-cycles", "0.004")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "cycle_s" in bad.stderr and "switch cost" in bad.stderr
    unknown = run_bench("--md", "", "--plot", "", "--model", "VGG19")
    assert unknown.returncode == 2 and "VGG19" in unknown.stderr
    assert unknown.stderr.count("\n") == 1


def test_switching_is_a_registered_mechanism_on_the_simulator():
    """The mechanism needs its decision and its own progress model; every
    request it places goes through the run's session."""
    from alloc.sched import get_policy
    from alloc.sched.pipeswitch.switching import Switching
    from alloc.sim import WorkloadJob, simulate
    with pytest.raises(InputError, match="decision"):
        get_policy("mechanism", "switching").build()
    cl = v100s(1)
    d = share_gpus(cl, [Training("t0", "ResNet152")], [Service("a", "ResNet152", 2.0, 800.0)],
                   cycle_s=0.5)
    mech = Switching(d, horizon_s=10.0)
    jobs = [WorkloadJob("t0", 0.0, 1, duration_s=1e6),
            WorkloadJob("a#0", 0.2, 1, duration_s=0.032, extra={"service": "a"})]
    with pytest.raises(InputError, match="progress model"):
        simulate(cl, jobs, mechanism=mech, round_s=100.0, max_time_s=100.0)
    mech = Switching(d, horizon_s=10.0)
    res = simulate(cl, jobs, mechanism=mech, progress=mech.progress, round_s=100.0,
                   max_time_s=100.0, window=(1, 1))
    s = d.services["a"].switch_s
    # the request waits for the cycle at 0.5 s, pays the switch, runs one batch
    assert res.jct()["a#0"] == pytest.approx(0.5 - 0.2 + s + 0.032)
    assert mech.switch == pytest.approx(2 * s)          # there and back
