"""The goodput model, its fit, the traces and the simulated truth (the
shipped Pollux traces; no artifact needed)."""
import math

import numpy as np
import pytest

from alloc.errors import InputError
from alloc.goodput.fit import fit_perf_params
from alloc.goodput.model import (GradStats, Limits, PerfParams, best_batch, best_batch_many,
                                 efficiency, geometric, goodput, split_batch)
from alloc.goodput.traces import SPECS, load_traces, read_columns, read_traces
from alloc.goodput.truth import canonical, truth_of
from alloc.goodput.workload import read_workload, shipped_workload

THETA = PerfParams(0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5)
LIM = Limits(128, 4096, 32, 1024)


def test_efficiency_is_one_at_the_start_batch_and_falls():
    g = GradStats(1.0, 3.0)
    assert efficiency(g, 128, 128) == pytest.approx(1.0)
    e = efficiency(g, 128, np.array([256, 512, 1024]))
    assert np.all(np.diff(e) < 0)
    phi = g.noise_scale(128)
    assert e[0] == pytest.approx((phi + 128) / (phi + 256))


def test_goodput_is_throughput_times_efficiency():
    g = GradStats(2.0, 5.0)
    x = 4 * 100 * 2 / (0.02 + 0.001 * 100 + math.exp(
        math.log((0.02 + 0.1) ** 1.5 + (0.05 + 0.002 * 2) ** 1.5) / 1.5))
    assert goodput(THETA, g, 128, 1, 4, 100, 1) == pytest.approx(x * float(efficiency(g, 128, 800)))


def test_split_batch_rules():
    b, s = split_batch(4096, 2, 1024, 128)
    assert (int(b), int(s)) == (1024, 1)
    b, s = split_batch(200, 1, 1024, 128)          # one GPU above M0: at least one accumulation
    assert int(s) == 1 and int(b) == 100


def test_best_batch_stays_in_limits_and_is_the_best_of_its_grid():
    g = GradStats(1.0, 4.0)
    for n, k in [(1, 1), (1, 4), (2, 8), (4, 16)]:
        v, b, s = best_batch(THETA, g, LIM, n, k)
        assert LIM.local_lo <= b <= LIM.local_hi and k * b * (s + 1) <= LIM.max
        grid = geometric(np.array([max(LIM.init, LIM.local_lo * k)], float), LIM.max)[:, 0]
        bb, ss = split_batch(grid, k, LIM.local_hi, LIM.init)
        ok = (bb >= LIM.local_lo) & (bb <= LIM.local_hi)
        assert v == pytest.approx(float(np.max(goodput(THETA, g, 128, n, k, bb[ok], ss[ok]))))


def test_best_batch_many_equals_one_at_a_time():
    g = GradStats(1.5, 2.0)
    n, k = np.array([1, 1, 2, 3]), np.array([1, 4, 8, 12])
    th = np.array([THETA.as_array()] * 4)
    many = best_batch_many(th, np.full(4, 1.5), np.full(4, 2.0), np.full(4, 128), np.full(4, 4096),
                           np.full(4, 32), np.full(4, 1024), n, k)
    one = best_batch(THETA, g, LIM, n, k)
    for a, b in zip(many, one):
        assert np.allclose(a, b)


def test_no_model_yet_gives_the_start_batch():
    _, b, s = best_batch(None, None, LIM, 1, 4)
    assert (b, s) == (128 // 4, 0)


def test_fit_recovers_a_model_and_keeps_its_priors():
    pts = [(1, 1, 64), (1, 2, 64), (1, 4, 128), (2, 8, 64), (3, 12, 100)]
    from alloc.goodput.model import compute_time, iteration_time
    step = [float(iteration_time(THETA, n, k, b, 0)) for n, k, b in pts]
    sync = [s - float(compute_time(THETA, b)) for s, (_, _, b) in zip(step, pts)]
    p = fit_perf_params(*zip(*pts), step, sync)
    pred = [float(iteration_time(p, n, k, b, 0)) for n, k, b in pts]
    start = [float(iteration_time(np.array([0.1, 0.01] * 3 + [1.001]), n, k, b, 0))
             for n, k, b in pts]
    err = np.abs(np.log(pred) - np.log(step)).mean()
    assert err < 0.15 < np.abs(np.log(start) - np.log(step)).mean()   # regularised, not exact
    one = fit_perf_params([1], [1], [64], [0.1], [0.001])     # one point: alpha_c pinned
    assert one.alpha_c == pytest.approx(0.099 / 2)
    assert one.alpha_n >= 1.1 * one.alpha_r - 1e-12           # prior of untried scales
    assert one.beta_n == pytest.approx(max(1e-8, 1.1 * one.beta_r))


def test_a_fit_given_no_points_is_one_line():
    with pytest.raises(InputError, match="needs at least one measured point"):
        fit_perf_params([], [], [], [], [], where="job 'x'")
    with pytest.raises(InputError, match="step_time > sync_time"):
        fit_perf_params([1], [1], [8], [0.1], [0.2])


def test_traces_match_the_protocols_table():
    t = load_traces("cifar10")
    assert (t.limits, t.max_epochs) == (Limits(128, 4096, 32, 1024), 100)
    assert load_traces("yolov3").limits.local_hi == 8          # the Pollux artifact's cap
    assert set(SPECS) == {"cifar10", "ncf", "deepspeech2", "bert", "yolov3", "imagenet"}


def test_truth_lookups():
    t = truth_of("cifar10")
    assert canonical((4, 0, 1, 2)) == (1, 2, 4)
    assert t.step_sync((4,), 128) == t.step_sync((4, 0), 128)
    assert t.step_sync((2, 4), 64) == t.step_sync((4, 2), 64)    # rotations are one placement
    q, v = t.grad_stats(128, 0)
    q2, v2 = t.grad_stats(192, 0)                                # linear between 128 and 256
    q3, v3 = t.grad_stats(256, 0)
    assert q2 == pytest.approx((q + q3) / 2) and v2 == pytest.approx((v + v3) / 2)
    assert t.progress_at(0) == 0 and t.progress_at(2) > t.progress_at(1)


def _csv(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_bad_trace_cells_are_one_line(tmp_path):
    with pytest.raises(InputError, match=r"^t.csv: missing column 'sync_time'"):
        read_columns(_csv(tmp_path, "t.csv", "placement,local_bsz,step_time\n1,8,0.1\n"),
                     ("placement", "local_bsz", "step_time", "sync_time"), text=("placement",))
    with pytest.raises(InputError, match=r"t2.csv: row 2: column 'step_time': expected a number"):
        read_columns(_csv(tmp_path, "t2.csv", "local_bsz,step_time\n8,0.1\n16,fast\n"),
                     ("local_bsz", "step_time"))


def test_a_model_folder_with_a_bad_file_is_one_line(tmp_path):
    d = tmp_path / "traces" / "cifar10"
    d.mkdir(parents=True)
    _csv(d, "placements.csv", "placement,local_bsz,step_time,sync_time\n1,8,0.1,x\n")
    _csv(d, "scalability.csv", "num_nodes,num_replicas,local_bsz,step_time,sync_time\n")
    with pytest.raises(InputError, match="placements.csv: row 1: column 'sync_time'"):
        read_traces(tmp_path / "traces", "cifar10")


def test_workloads(tmp_path):
    jobs = read_workload(shipped_workload("workload-6"))
    assert len(jobs) == 160 and jobs[0].model == "cifar10"
    bad = _csv(tmp_path, "w.csv", "name,time,application,num_replicas,batch_size\n"
                                  "a,0,cifar10,1,128\nb,5,gpt5,1,8\n")
    with pytest.raises(InputError, match="w.csv: row 2: column 'application': unknown model"):
        read_workload(bad)
    bad = _csv(tmp_path, "w2.csv", "name,time,application,batch_size\na,0,cifar10,128\n")
    with pytest.raises(InputError, match="w2.csv: missing column 'num_replicas'"):
        read_workload(bad)
