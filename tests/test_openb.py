"""openb loaders, workload construction, binning, and the bench entry point."""
import numpy as np
import pytest

from alloc.deadline import Deadline
from alloc.errors import InputError
from alloc.experiments.openb import (NodeTable, bench_main, bin_curve, build_workload, fisher_yates, load_nodes,
                         load_pods, openb_dir, run, sort_by_name, to_cluster, to_jobs,
                         typical_pods)

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn1,32000,65536,2,T4\nn0,64000,131072,4,V100\n"
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
        "p2,4000,8192,1,500,,LS\n"
        "p0,8000,8192,2,1000,V100|T4,LS\n"
        "p1,1000,1024,0,0,V100,BE\n"
        "p3,2000,2048,1,1000,T4,LS\n")


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_load_nodes_and_cluster(tmp_path):
    nodes = load_nodes(write(tmp_path, "nodes.csv", NODES))
    assert nodes.names == ["n1", "n0"] and list(nodes.gpus) == [2, 4]
    c = to_cluster(nodes)
    assert c.servers[1].id == "n0" and c.servers[1].gpu_type == "V100" and c.total_gpus == 6


def test_load_pods_and_jobs(tmp_path):
    pods = load_pods(write(tmp_path, "pods.csv", PODS))
    assert pods.types[1] == ("V100", "T4") and pods.types[2] == ()
    jobs = to_jobs(pods)
    assert jobs[0].id == "p2" and jobs[0].gpu_milli == 500 and jobs[0].gpus == 1
    assert jobs[1].gpu_types == ("V100", "T4") and jobs[2].gpus == 0


def test_pods_without_gpu_spec(tmp_path):
    pods = load_pods(write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                              "a,1,1,1,100\n"))
    assert pods.types == [()]


@pytest.mark.parametrize("text,line,col", [
    ("name,cpu_milli,memory_mib,num_gpu\na,1,1,1\n", 1, "gpu_milli"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,100\nb,x,1,1,100\n", 3, "cpu_milli"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,-5,1,100\n", 2, "memory_mib"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,2,500\n", 2, "gpu_milli"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,1500\n", 2, "gpu_milli"),
    ("name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1\n", 2, "num_gpu"),
])
def test_malformed_pods(tmp_path, text, line, col):
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(InputError) as e:
        load_pods(p)
    msg = str(e.value)
    assert "bad.csv" in msg and f":{line}:" in msg and col in msg and "\n" not in msg


def test_malformed_nodes(tmp_path):
    p = write(tmp_path, "n.csv", "sn,cpu_milli,memory_mib,gpu,model\na,1,1,1.5,T4\n")
    with pytest.raises(InputError, match=r"n\.csv:2: column 'gpu'"):
        load_nodes(p)


def test_fisher_yates_is_permutation_and_seeded():
    a = fisher_yates(50, np.random.default_rng(1))
    b = fisher_yates(50, np.random.default_rng(1))
    assert sorted(a) == list(range(50)) and list(a) == list(b)


def test_workload_tuning(tmp_path):
    nodes = load_nodes(write(tmp_path, "nodes.csv", NODES))
    pods = load_pods(write(tmp_path, "pods.csv", PODS))
    wl = build_workload(pods, nodes, 42, tune=1.3)
    W = wl.pods
    assert W.names == sorted(pods.names)
    g = W.k * W.m
    S = int(g[wl.order].sum())
    T = 1.3 * 6000
    assert S <= T and sorted(wl.order[:4]) == [0, 1, 2, 3]
    assert S + 1000 > T - 2000  # stopped near the target
    assert sorted(wl.rank) == [0, 1]
    # over target: random deletions until S <= T
    wl2 = build_workload(pods, nodes, 42, tune=0.5)
    assert int(g[wl2.order].sum()) <= 3000
    again = build_workload(pods, nodes, 42, tune=1.3)
    assert list(again.order) == list(wl.order) and list(again.rank) == list(wl.rank)


def test_typical_pods_order_and_popularity(tmp_path):
    pods = load_pods(write(tmp_path, "pods.csv", PODS + "p4,4000,1,1,500,,LS\n"))
    fm = typical_pods(sort_by_name(pods), threshold=0.95)
    assert fm.T == 4 and fm.p.sum() == pytest.approx(1)
    assert (fm.c[0], fm.m[0], fm.k[0]) == (4000, 500, 1) and fm.p[0] == pytest.approx(0.4)
    # ties on count go to the larger key: (8000, ...) before (2000, ...) before (1000, ...)
    assert list(fm.c[1:]) == [8000, 2000, 1000]


def test_bin_curve():
    arrived = np.array([0, 100, 100, 250, 400])
    vals = np.array([0.0, 1.0, 3.0, 5.0, 7.0])
    out = bin_curve(arrived, vals, capacity=10000)
    # ratio: 0, 1, 1, 2 (2.5 half to even), 4
    assert out[0] == 0.0 and out[1] == 2.0 and out[2] == 5.0 and out[3] == pytest.approx(6.0)
    assert out[4] == 7.0 and out[5] == 7.0 and out[6] is None


def test_bench_main_small(tmp_path, capsys):
    n = write(tmp_path, "nodes.csv", NODES)
    p = write(tmp_path, "pods.csv", PODS)
    out = tmp_path / "c.csv"
    frag = tmp_path / "f.csv"
    rc = bench_main(["--pods", str(p), "--nodes", str(n), "--policy", "fgd,best-fit,fgd-lookahead",
                     "--seeds", "1,2", "--out", str(out), "--frag-out", str(frag)])
    assert rc == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("workload,sc_policy,tune,seed,total_gpus,0,1,2")
    assert lines[0].endswith(",130") and len(lines) == 7 and lines[1].startswith("pods,fgd,1.3,1,6,")
    assert frag.exists() and (tmp_path / "f_ratio.csv").exists()


def test_bench_main_bad_input(tmp_path, capsys):
    n = write(tmp_path, "nodes.csv", NODES)
    p = write(tmp_path, "pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1,1,1,x\n")
    assert bench_main(["--pods", str(p), "--nodes", str(n)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pods.csv:2" in err[0] and "gpu_milli" in err[0]
    assert bench_main(["--pods", str(p), "--nodes", str(n), "--policy", "nope"]) == 2


def test_shared_trace_dotprod_run():
    d = openb_dir()
    if not (d / "openb_pod_list_default.csv").exists():
        pytest.skip("shared openb traces not available")
    nodes = load_nodes(d / "openb_node_list_gpu_node.csv")
    pods = load_pods(d / "openb_pod_list_default.csv")
    assert len(nodes) == 1213 and int(nodes.gpus.sum()) == 6212
    fm = typical_pods(sort_by_name(pods))
    assert fm.T == 35 and fm.p[0] == pytest.approx(0.135, abs=1e-3)
    # a quarter of the nodes (every 4th) keeps the run short; the workload is
    # tuned to 1.3 x their capacity by random deletions
    sub = NodeTable([nodes.names[i] for i in range(0, len(nodes), 4)], nodes.cpu[::4],
                    nodes.mem[::4], nodes.gpus[::4], nodes.model[::4])
    r = run(pods, sub, "dotprod", 42, fm=fm)
    assert r.frag[0] == pytest.approx(13.9, abs=1.5)
    assert 85.0 < r.alloc[100] < 94.0


# -------------------------------------------------------------- upper bound
def _brute_force(pods, cpu, mem, ngpu):
    """Best allocation over every placement of every subset (tiny cases)."""
    import itertools
    opts = []
    for p in pods:
        o = [None]
        for n in range(len(cpu)):
            if p.k == 1:
                o += [(n, (i,)) for i in range(ngpu[n])]
            elif p.k > 1:
                o += [(n, c) for c in itertools.combinations(range(ngpu[n]), p.k)]
        opts.append(o)
    best = 0
    for choice in itertools.product(*opts):
        c = list(cpu)
        m = list(mem)
        g = [[1000] * k for k in ngpu]
        ok, val = True, 0
        for p, ch in zip(pods, choice):
            if ch is None:
                continue
            n, gs = ch
            c[n] -= p.c
            m[n] -= p.mem
            for i in gs:
                if p.k > 1 and g[n][i] < 1000:
                    ok = False
                g[n][i] -= p.m
            val += p.g
        if ok and min(c) >= 0 and min(m) >= 0 and all(v >= 0 for x in g for v in x):
            best = max(best, val)
    return best


def test_bound_equals_brute_force_on_tiny_cases():
    from alloc.solvers.fgd.engine import Pod
    from alloc.experiments.openb_bound import upper_bound
    rng = np.random.default_rng(3)
    for _ in range(6):
        pods = []
        for _ in range(6):
            r = rng.random()
            if r < 0.5:
                pods.append(Pod(int(rng.integers(1, 5)) * 1000, 100, 1,
                                int(rng.choice([200, 300, 450, 600, 700]))))
            elif r < 0.85:
                pods.append(Pod(int(rng.integers(1, 5)) * 1000, 100, 1, 1000))
            else:
                pods.append(Pod(2000, 100, 2, 1000))
        cpu, mem, ngpu = [6000, 9000], [1000, 1000], [2, 2]
        res = upper_bound(pods, cpu, mem, ngpu, ["A", "B"], deadline=Deadline.after(60))
        assert res.bound == pytest.approx(_brute_force(pods, cpu, mem, ngpu))


def test_bound_above_every_policy():
    from alloc.solvers.fgd.engine import ClusterState, FragModel, Pod
    from fgd_policies import make_policy, place_all
    from alloc.experiments.openb_bound import upper_bound
    rng = np.random.default_rng(9)
    pods = []
    for _ in range(220):
        r = rng.random()
        if r < 0.5:
            pods.append(Pod(int(rng.integers(1, 9)) * 1000, 1000, 1,
                            int(rng.choice([230, 320, 470, 650, 810]))))
        elif r < 0.85:
            pods.append(Pod(int(rng.integers(1, 13)) * 1000, 1000, 1, 1000))
        elif r < 0.95:
            pods.append(Pod(8000, 1000, 0, 0))
        else:
            pods.append(Pod(16000, 1000, 4, 1000, ("V100",)))
    cpu, mem = [64000, 96000, 32000, 16000] * 4, [256000] * 16
    ngpu, models = [4, 8, 2, 2] * 4, ["V100", "T4", "T4", "P100"] * 4
    fm = FragModel.from_pods(pods)
    bound = upper_bound(pods, cpu, mem, ngpu, models, deadline=Deadline.after(10))
    lp = upper_bound(pods, cpu, mem, ngpu, models, integer=False, deadline=Deadline.after(60))
    assert bound.bound <= lp.bound + 1e-6 and bound.bound <= bound.demand
    for pol in ["random", "dotprod", "gpu-clustering", "gpu-packing", "best-fit", "fgd",
                "fgd-lookahead"]:
        st = ClusterState(cpu, mem, ngpu, models, frag_model=fm)
        _, used, _ = place_all(st, make_policy(pol, seed=1), pods)
        assert used.max() <= bound.bound + 1e-6


def test_arrived_prefix():
    from alloc.solvers.fgd.engine import Pod
    from alloc.experiments.openb_bound import arrived_prefix
    pods = [Pod(0, 0, 1, 500)] * 5
    # capacity 2000: ratios 25, 50, 75, 100, 125
    assert arrived_prefix(pods, 2000, 100) == 4 and arrived_prefix(pods, 2000, 60) == 2


def _min_bins_brute(shares):
    """Fewest bins of 1000 for ``shares`` by trying every assignment."""
    best = len(shares)

    def go(i, bins):
        nonlocal best
        if len(bins) >= best:
            return
        if i == len(shares):
            best = len(bins)
            return
        for b in range(len(bins)):
            if bins[b] + shares[i] <= 1000:
                bins[b] += shares[i]
                go(i + 1, bins)
                bins[b] -= shares[i]
        go(i + 1, bins + [shares[i]])
    go(0, [])
    return best


def test_min_share_gpus_is_a_lower_bound_and_tight_on_small_cases():
    from alloc.experiments.openb_bound import min_share_gpus
    assert min_share_gpus([]) == 0
    assert min_share_gpus([810] * 5 + [160] * 3 + [500] * 3) == 7
    assert min_share_gpus([600, 600, 600]) == 3          # no two fit together
    rng = np.random.default_rng(4)
    for _ in range(20):
        shares = [int(m) for m in rng.choice([110, 230, 320, 470, 650, 810], size=8)]
        lb, opt = min_share_gpus(shares), _min_bins_brute(sorted(shares, reverse=True))
        assert lb <= opt and lb >= -(-sum(shares) // 1000)
        assert opt - lb <= 1


def test_saturation_no_policy_places_the_prefix_after_it():
    from alloc.solvers.fgd.engine import ClusterState, FragModel, Pod
    from fgd_policies import make_policy, place_all
    from alloc.experiments.openb_bound import saturation
    rng = np.random.default_rng(8)
    pods = [Pod(1000, 10, 1, int(rng.choice([230, 470, 650, 810, 1000]))) for _ in range(60)]
    n = saturation(pods, 24)
    assert 0 < n < len(pods)
    fm = FragModel.from_pods(pods)
    for pol in ["best-fit", "fgd", "fgd-lookahead"]:
        st = ClusterState([10**6] * 3, [10**6] * 3, [8] * 3, ["A"] * 3, frag_model=fm)
        placed, _, _ = place_all(st, make_policy(pol), pods)
        first_fail = next(i for i, r in enumerate(placed) if r is None)
        assert first_fail <= n               # arrival n + 1 (index n) at the latest


def test_bound_honours_its_time_limit():
    import time as _time

    from alloc.deadline import Deadline
    from alloc.experiments.openb_bound import upper_bound
    from alloc.solvers.fgd.engine import Pod
    rng = np.random.default_rng(3)
    n = 300
    cpu = rng.choice([32000, 64000, 96000], n)
    mem = rng.choice([131072, 262144], n) + rng.integers(0, 50, n) * 1024
    gpus = rng.choice([2, 4, 8], n)
    models = [str(x) for x in rng.choice(["A", "B", "C"], n)]
    pods = [Pod(int(rng.integers(1, 16)) * 1000, int(rng.integers(1, 64)) * 1024, 1,
                int(rng.choice([130, 230, 320, 470, 650, 810, 1000]))) for _ in range(3000)]
    t = _time.perf_counter()
    r = upper_bound(pods, cpu, mem, gpus, models, deadline=Deadline.after(0.5))
    assert _time.perf_counter() - t < 0.5 * 1.1 + 0.5
    assert r.bound >= r.value or np.isnan(r.value)
    assert r.bound <= r.demand
    # an expired deadline gives the trivial bound at once, never a wrong one
    dl = Deadline.after(0.001)
    _time.sleep(0.01)
    r0 = upper_bound(pods, cpu, mem, gpus, models, deadline=dl)
    assert r0.status == "time limit" and r0.bound == min(r0.demand, int(gpus.sum()) * 1000)


def test_a_registered_solver_runs_the_experiment(tmp_path, monkeypatch):
    """A solver the registry resolves places the pods one per round; the
    curves are measured as for FGD's own policies."""
    from alloc import registry
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    fn = "alloc.solvers.heuristics.greedy:solve_proportional"
    registry.register("mine", fn, capabilities=["sharing"])
    n = write(tmp_path, "nodes.csv", NODES)
    p = write(tmp_path, "pods.csv", PODS)
    nodes, pods = load_nodes(n), load_pods(p)
    fgd = run(pods, nodes, "fgd", 1)
    for policy in ("hived", "mine"):
        r = run(pods, nodes, policy, 1, time_limit=2.0)
        assert r.policy == policy and r.attempted == fgd.attempted
        assert 0 < r.placed <= r.attempted
        curve = [v for v in r.alloc if v is not None]
        assert curve == sorted(curve) and curve[-1] <= 100.0
    out = tmp_path / "c.csv"
    assert bench_main(["--pods", str(p), "--nodes", str(n), "--policy", "fgd,mine",
                       "--seeds", "1", "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 3


def test_a_solver_that_refuses_the_trace(tmp_path, capsys):
    """A ``module:function`` solver declares no capability: shared pods are
    refused in one line (exit 2)."""
    n = write(tmp_path, "nodes.csv", NODES)
    p = write(tmp_path, "pods.csv", PODS)
    fn = "alloc.solvers.heuristics.greedy:solve_proportional"
    assert bench_main(["--pods", str(p), "--nodes", str(n), "--policy", fn]) == 2
    err = capsys.readouterr().err
    assert err.count("alloc bench openb:") == 1 and "does not support sharing" in err


def test_a_registered_solver_without_moves(tmp_path):
    nodes = load_nodes(write(tmp_path, "nodes.csv", NODES))
    pods = load_pods(write(tmp_path, "pods.csv", PODS))
    with pytest.raises(InputError, match="moves"):
        run(pods, nodes, "hived", 1, max_moves=2)
