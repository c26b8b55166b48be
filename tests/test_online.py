"""Online placement engine: policy scores on hand-built states, the
fragmentation measure, invariants after every placement, determinism, and the
registered solvers."""
import math

import numpy as np
import pytest

from alloc.solvers.fgd.engine import ClusterState, FragModel, Pod, place, sigmoid_score
from fgd_policies import make_policy, place_all


def state(cpu=(128000, 64000), ngpu=(8, 2), models=("V100", "T4"), fm=None):
    n = len(cpu)
    return ClusterState(list(cpu), [10**6] * n, list(ngpu), list(models), frag_model=fm)


def test_dotprod_score():
    st = state()
    pod = Pod(c=32000, mem=1, k=1, m=500)
    s = make_policy("dotprod").score(st, pod)
    exp0 = int(100 * (1 - 0.5 * ((128000 / 128000) * (32000 / 128000) + (8000 / 8000) * (500 / 8000))))
    exp1 = int(100 * (1 - 0.5 * ((64000 / 128000) * (32000 / 128000) + (2000 / 8000) * (500 / 8000))))
    assert list(s) == [exp0, exp1] == [84, 92]


def test_best_fit_score():
    st = state()
    pod = Pod(c=32000, mem=1, k=1, m=500)
    s = make_policy("best-fit").score(st, pod)
    # node0: 1 - (0.5*96000/128000 + 0.5*7500/8000) = 0.15625 -> 15
    # node1: 1 - (0.5*32000/128000 + 0.5*1500/8000) = 0.78125 -> 78
    assert list(s) == [15, 78]


def test_gpu_clustering_score():
    st = state(cpu=(128000,) * 4, ngpu=(8, 8, 8, 8), models=("V100",) * 4)
    share = Pod(1000, 1, 1, 500)
    whole = Pod(1000, 1, 1, 1000)
    place_on(st, 0, share, [0])          # node0 tags {share}
    place_on(st, 1, share, [0])
    place_on(st, 1, whole, [1])          # node1 tags {share, 1-gpu}
    place_on(st, 2, whole, [0])          # node2 tags {1-gpu}
    s = make_policy("gpu-clustering").score(st, share)
    base = [int(25 * (8000 - g) / 8000) for g in st.gsum]
    assert list(s) == [base[0] + 75, base[1] + 50, base[2] + 0, base[3] + 25]
    assert list(make_policy("gpu-clustering").score(st, Pod(1000, 1, 0, 0))) == [0] * 4


def place_on(st, n, pod, gpus):
    st.apply(n, gpus, pod)


def test_gpu_packing_score():
    st = state(cpu=(128000,) * 3, ngpu=(8, 2, 4), models=("V100",) * 3)
    place_on(st, 0, Pod(1000, 1, 1, 700), [3])    # node0: one GPU at 300 free
    place_on(st, 2, Pod(1000, 1, 1, 1000), [0])   # node2: 3 fully free of 4
    s = make_policy("gpu-packing").score(st, Pod(1000, 1, 1, 200))
    # node0: first fit in ascending f is the 300-free GPU: 100 - floor(30/10) = 97
    # node1: all free -> 33 - 2 = 31;  node2: fully free GPU chosen -> max(50-1, 33) = 49
    assert list(s) == [97, 31, 49]
    s2 = make_policy("gpu-packing").score(st, Pod(1000, 1, 2, 1000))
    assert list(s2) == [48, 31, 48]


def simple_fm():
    # two typical types: shared 500 m (p=0.5) and whole 1-GPU (p=0.5)
    return FragModel([1000, 1000], [500, 1000], [1, 1], [(), ()], [0.5, 0.5])


def test_fragmentation_small_examples():
    fm = simple_fm()
    valid = np.array([[True, True]])
    ok = np.ones((1, 2), dtype=bool)
    # empty node: no fragment for either type
    assert fm.frag(np.array([8000]), np.array([[1000, 1000]]), valid, ok)[0] == 0
    # GPU0 at 300 free: 300 is a fragment for both types (300 < 500, < 1000)
    assert fm.frag(np.array([8000]), np.array([[300, 1000]]), valid, ok)[0] == pytest.approx(300)
    # GPU0 at 600: fragment only for the whole-GPU type
    assert fm.frag(np.array([8000]), np.array([[600, 1000]]), valid, ok)[0] == pytest.approx(300)
    # no CPU: everything is a fragment
    assert fm.frag(np.array([500]), np.array([[600, 1000]]), valid, ok)[0] == pytest.approx(1600)
    # CPU-only type: idle GPU is a fragment
    fm2 = FragModel([1000], [0], [0], [()], [1.0])
    assert fm2.frag(np.array([8000]), np.array([[600, 1000]]), valid, ok[:, :1])[0] == 1600
    # type excludes the model
    fm3 = FragModel([1000], [500], [1], [("A10",)], [1.0])
    st = ClusterState([8000], [100], [2], ["T4"], frag_model=fm3)
    assert st.frag[0] == 2000


def test_frag_shared_matches_direct():
    rng = np.random.default_rng(1)
    fm = FragModel([1000, 2000, 0, 500], [300, 810, 0, 1000], [1, 1, 0, 2],
                   [(), ("V100",), (), ()], [0.4, 0.3, 0.2, 0.1])
    gfree = rng.integers(0, 11, size=(20, 4)) * 100
    valid = np.ones((20, 4), dtype=bool)
    valid[:5, 2:] = False
    gfree[~valid] = 0
    cpu = rng.integers(0, 5, size=20) * 1000
    ok = fm.type_ok(["V100" if i % 2 else "T4" for i in range(20)])
    m, c = 200, 1000
    per = fm.frag_shared(cpu, gfree, valid, ok, c, m)
    for i in range(4):
        g2 = gfree.copy()
        g2[:, i] -= m
        direct = fm.frag(cpu - c, g2, valid, ok)
        sel = gfree[:, i] >= m
        assert np.allclose(per[sel, i], direct[sel])


def test_fgd_score_by_hand():
    fm = simple_fm()
    st = ClusterState([8000, 8000], [100, 100], [2, 2], ["X", "X"], frag_model=fm)
    st.apply(1, [0], Pod(1000, 1, 1, 500))   # node1 GPU0 at 500 free
    pod = Pod(1000, 1, 1, 500)
    pol = make_policy("fgd")
    score, gpu = pol.cached(st, pod)
    # node0: F 0 -> 250 (GPU at 500 is a fragment for the whole type): int(100*sig(-0.25))
    # node1 GPU0: F 250 -> 0: int(100*sig(0.25)); GPU1: F 250 -> 500
    assert score[0] == int(100 / (1 + math.exp(0.25))) == 43
    assert score[1] == int(100 / (1 + math.exp(-0.25))) == 56
    assert gpu[1] == 0
    n, gpus = pol.choose(st, pod, st.feasible(pod))
    assert (n, gpus) == (1, [0])


def test_sigmoid_truncation():
    assert list(sigmoid_score(np.array([0, 4600, 10000, -10000]))) == [50, 99, 99, 0]


def test_tie_goes_to_smallest_rank():
    st = ClusterState([1000] * 3, [10] * 3, [1] * 3, ["X"] * 3, rank=[2, 0, 1])
    pod = Pod(10, 1, 1, 1000)
    n, _ = make_policy("best-fit").choose(st, pod, st.feasible(pod))
    assert n == 1


def random_pods(rng, n):
    pods = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1:
            pods.append(Pod(int(rng.integers(1, 8)) * 1000, 1000, 0, 0))
        elif r < 0.6:
            pods.append(Pod(int(rng.integers(1, 8)) * 1000, 1000, 1,
                            int(rng.choice([100, 250, 500, 810]))))
        else:
            k = int(rng.choice([1, 2, 4, 8]))
            pods.append(Pod(k * 2000, 1000, k, 1000, ("V100",) if rng.random() < 0.2 else ()))
    return pods


@pytest.mark.parametrize("policy", ["random", "dotprod", "gpu-clustering", "gpu-packing",
                                    "best-fit", "fgd", "fgd-lookahead"])
def test_invariants_and_determinism(policy):
    rng = np.random.default_rng(7)
    pods = random_pods(rng, 300)
    fm = FragModel.from_pods(pods)

    def fresh():
        return ClusterState([64000, 96000, 32000, 128000] * 3, [256000] * 12,
                            [8, 4, 2, 8] * 3, ["V100", "T4", "T4", "P100"] * 3,
                            rank=list(range(11, -1, -1)), frag_model=fm)

    st = fresh()
    pol = make_policy(policy, seed=3)
    results = []
    for pod in pods:
        before = st.gfree.copy()
        r = place(st, pol, pod)
        results.append(r)
        st.check()
        if r is not None and pod.k >= 1 and pod.m == 1000:
            n, gpus = r
            assert len(gpus) == pod.k and all(before[n, i] == 1000 for i in gpus)
        if r is not None and pod.types:
            assert st.models[r[0]] in pod.types
        assert np.allclose(st.frag, fm.frag(st.cpu_free, st.gfree, st.valid, st.type_ok))
    assert st.used == int((np.where(st.valid, 1000, 0) - st.gfree).sum())
    st2 = fresh()
    out2, _, _ = place_all(st2, make_policy(policy, seed=3), pods)
    assert out2 == results


def test_registered_solvers_through_allocate():
    from alloc.model import Cluster, Job, Server
    alloc_mod = pytest.importorskip("alloc.solve")
    pytest.importorskip("alloc.check")
    pytest.importorskip("alloc.validate")
    c = Cluster((Server("a", 8000, 16000, 2, "T4"), Server("b", 16000, 32000, 4, "V100"),
                 Server("c", 4000, 8000, 0)))
    jobs = [Job("j0", 1, 500, 1000, 1000), Job("j1", 2, 1000, 2000, 2000),
            Job("j2", 0, 1000, 1000, 100), Job("j3", 1, 300, 500, 500, gpu_types=("V100",)),
            Job("j4", 4, 1000, 1000, 1000)]
    for name in ["random", "dotprod", "gpu-clustering", "gpu-packing", "openb-best-fit", "fgd",
                 "fgd-lookahead"]:
        a = alloc_mod.allocate(c, jobs, solver=name, objective="gpus", seed=1)
        assert str(a.status) == "feasible"
        placed = {p.job: p for p in a.placements}
        assert "j4" in a.unplaced          # 4 whole GPUs: only b has 4, j1 took 2
        assert [g.gpu.split("/")[0] for g in placed["j3"].gpus] == ["b"]
        assert len(placed["j1"].gpus) == 2
        assert len({g.gpu.split("/")[0] for g in placed["j1"].gpus}) == 1


# ------------------------------------------------------------- fgd-lookahead
def test_lookahead_hand_computed_stranding():
    # one typical pod type: 4000 milli-cores + one whole GPU, so rho = 4.
    fm = FragModel([4000], [1000], [1], [()], [1.0])
    st = ClusterState([8000, 16000], [10**6] * 2, [2, 2], ["T4", "T4"], frag_model=fm)
    pod = Pod(3000, 10, 0, 0)
    # FGD: F stays 0 on both nodes (5000 and 13000 cores left >= 4000): tie, rank -> node 0.
    assert make_policy("fgd").choose(st, pod, st.feasible(pod))[0] == 0
    pol = make_policy("fgd-lookahead")
    # node 0: S goes 0 -> 2000 - 5000/4 = 750, score int(100*sigmoid(-0.5*750/1000)) = 40;
    # node 1: S stays 0 (13000/4 >= 2000), score 50.
    score, _ = pol.cached(st, pod)
    assert pol.rho == pytest.approx(4.0)
    assert list(score[:2]) == [40, 50]
    assert pol.choose(st, pod, st.feasible(pod))[0] == 1
    # lam = 0 with the coarse shared score is FGD
    assert make_policy("fgd-lookahead", lam=0.0, share_res=100).choose(
        st, pod, st.feasible(pod))[0] == 0


def test_lookahead_equals_fgd_without_stranding_term():
    rng = np.random.default_rng(11)
    pods = random_pods(rng, 200)
    fm = FragModel.from_pods(pods)

    def fresh():
        return ClusterState([64000, 96000, 32000, 128000] * 2, [256000] * 8, [8, 4, 2, 8] * 2,
                            ["V100", "T4", "T4", "P100"] * 2, frag_model=fm)
    a, _, _ = place_all(fresh(), make_policy("fgd"), pods)
    b, _, _ = place_all(fresh(), make_policy("fgd-lookahead", lam=0.0, share_res=100,
                                            reserve=0.0, mu=0.0), pods)
    assert a == b


def _move_case():
    rng = np.random.default_rng(8)   # a sequence where a move places a pod
    pods = random_pods(rng, 250)
    fm = FragModel.from_pods(pods)
    spec = ([64000, 32000, 32000] * 2, [256000] * 6, [4, 2, 2] * 2, ["V100", "T4", "T4"] * 2)

    def fresh():
        return ClusterState(*spec, frag_model=fm)
    return pods, fm, spec, fresh


@pytest.mark.parametrize("budget", [0, 3, 50])
def test_bounded_moves(budget):
    from alloc.solvers.fgd.engine import MoveSimulator
    pods, _, _, fresh = _move_case()
    st = fresh()
    sim = MoveSimulator(st, make_policy("fgd-lookahead"), budget)
    out, used, moves = [], [], []
    for pod in pods:
        out.append(sim.place(pod))
        used.append(st.used)
        moves.append(sim.moves)
    moves = np.array(moves)
    st.check()
    assert moves[-1] <= budget and (np.diff(moves) >= 0).all()
    assert st.used == int((np.where(st.valid, 1000, 0) - st.gfree).sum()) == used[-1]
    assert ((st.cpu_free >= 0) & (st.cpu_free <= st.cpu_cap)).all()
    assert ((st.mem_free >= 0) & (st.mem_free <= st.mem_cap)).all()
    base_out, base_used, _ = place_all(fresh(), make_policy("fgd-lookahead"), pods)
    if budget == 0:
        assert out == base_out and list(used) == list(base_used)
    else:
        # a move is made only for a pod that fits nowhere as things stand: the
        # runs agree until the first move, which places a pod the plain run left out
        assert moves[-1] > 0
        k = int(np.argmax(moves > 0))
        assert out[:k] == base_out[:k] and list(used[:k]) == list(base_used[:k])
        assert base_out[k] is None and out[k] is not None


@pytest.mark.parametrize("budget", [0, 3])
def test_bounded_moves_on_the_simulator_follow_the_rule(budget):
    """The simulator's run with `PodMoves` (each move and placement through
    the session) places, moves and measures as the rule applied alone."""
    from alloc.experiments.openb import NodeTable, PodMoves, pod_placements, pod_simulator
    from alloc.solvers.fgd.engine import MoveSimulator
    pods, fm, spec, fresh = _move_case()
    st = fresh()
    rule = MoveSimulator(st, make_policy("fgd-lookahead"), budget)
    want = [rule.place(p) for p in pods]
    nodes = NodeTable([f"n{i}" for i in range(6)], *map(np.array, spec[:3]), spec[3])
    mover = PodMoves(pods, nodes.names, fresh(), make_policy("fgd-lookahead"), budget)
    res = pod_simulator(pods, nodes, np.arange(6), fm, "fgd-lookahead", 0, moves=mover).run()
    got = pod_placements(res, len(pods), nodes.names, "fgd-lookahead")
    assert [g is None for g in got] == [w is None for w in want]
    assert mover.moves[-1] == rule.moves == res.stats["moves"]
    assert mover.used[-1] == st.used and mover.frag[-1] == pytest.approx(st.frag.sum())
    assert got == [rule.where.get(i) and (rule.where[i][0], sorted(rule.where[i][1]))
                   for i in range(len(pods))]


def test_cpu_move_by_hand():
    from alloc.solvers.fgd.engine import MoveSimulator
    fm = FragModel([1000], [1000], [1], [()], [1.0])
    y, x, p = Pod(9000, 10, 0, 0), Pod(6000, 10, 0, 0), Pod(4000, 10, 1, 1000)
    for budget, placed in [(0, False), (1, True)]:
        # A: 8000 cores + 1 GPU (rank 0), B: 10000 cores, C: 7000 cores (no GPUs)
        st = ClusterState([8000, 10000, 7000], [10**6] * 3, [1, 0, 0], ["T4", "", ""],
                          rank=[0, 1, 2], frag_model=fm)
        sim = MoveSimulator(st, make_policy("fgd-lookahead"), budget)
        assert sim.place(y)[0] == 1          # only B has 9000 cores
        assert sim.place(x)[0] == 0          # tie between A and C, rank -> A
        r = sim.place(p)                     # A's GPU is free but 2000 cores are left
        st.check()
        if placed:
            assert r == (0, [0]) and sim.moves == 1 and sim.where[1][0] == 2
            assert st.cpu_free.tolist() == [4000, 1000, 1000] and st.used == 1000
        else:
            assert r is None and sim.moves == 0 and st.used == 0


def test_typed_demand_counts_every_model_restricted_pod():
    pods = ([Pod(1000, 1, 1, 500, ("T4",))] * 2 + [Pod(1000, 1, 2, 1000, ("V100", "T4"))]
            + [Pod(1000, 1, 1, 1000)] * 3 + [Pod(4000, 1, 0, 0)])
    fm = FragModel.from_pods(pods, threshold=0.5)
    # GPU milli: 1000 (T4) + 2000 (V100|T4) + 3000 untyped = 6000
    assert fm.typed_demand == {("T4",): pytest.approx(1 / 6), ("V100", "T4"): pytest.approx(1 / 3)}


def test_typed_usage_follows_apply_and_remove():
    st = state()
    typed, untyped = Pod(1000, 1, 1, 400, ("T4",)), Pod(1000, 1, 1, 300)
    st.apply(1, [0], typed)
    st.apply(1, [1], untyped)
    assert st.typed_used.tolist() == [0, 400]
    st.remove(1, [0], typed)
    assert st.typed_used.tolist() == [0, 0]


def reserve_state():
    # node 0: two T4 (rank 0, wins FGD's ties); node 1: four G2.  A quarter of the
    # workload's GPU milli is restricted to T4: R_T4 = 1.3 * 6000 * 0.25 = 1950.
    fm = FragModel([1000], [1000], [1], [()], [1.0], typed_demand={("T4",): 0.25})
    return ClusterState([64000, 64000], [10**6] * 2, [2, 4], ["T4", "G2"], frag_model=fm)


def test_reservation_keeps_unrestricted_pods_off_reserved_models():
    st, pod = reserve_state(), Pod(1000, 1, 1, 1000)
    pol = make_policy("fgd-lookahead")
    _, r = pol.reservation(st)
    assert sorted(r.tolist()) == [0.0, pytest.approx(1950.0)]
    # without the reservation both nodes score alike and rank 0 (T4) wins
    assert make_policy("fgd-lookahead", reserve=0.0).choose(st, pod, st.feasible(pod))[0] == 0
    assert pol.choose(st, pod, st.feasible(pod))[0] == 1
    # a T4-restricted pod still goes to T4
    assert pol.choose(st, Pod(1000, 1, 1, 1000, ("T4",)), st.feasible(pod))[0] == 0


def test_reservation_never_refuses_a_pod_that_fits():
    st, pod = reserve_state(), Pod(1000, 1, 1, 1000)
    pol = make_policy("fgd-lookahead")
    for _ in range(4):                       # fill the G2 node
        place(st, pol, pod)
    assert st.gsum.tolist() == [2000, 0]
    assert place(st, pol, pod)[0] == 0       # only the reserved T4 node fits: placed there
    # once restricted pods have used their share, the model is open again
    st2 = reserve_state()
    st2.apply(0, [0], Pod(1000, 1, 1, 1000, ("T4",)))
    st2.typed_used[0] = 1950
    assert pol.__class__().choose(st2, pod, st2.feasible(pod))[0] == 0


def test_share_prices_and_reduced_costs_by_hand():
    from alloc.solvers.fgd.engine import share_prices
    # one 810 per GPU, two 470 per GPU: y_810 = 1, y_470 = 1/2, and V(1000) = 1
    y, V = share_prices([470, 810], [0.5, 0.5], deadline=None)
    assert y.tolist() == pytest.approx([0.5, 1.0]) and V[1000] == pytest.approx(1.0)
    assert V[530] == pytest.approx(0.5) and V[900] == pytest.approx(1.0) and V[469] == 0
    fm = FragModel([1000, 1000], [810, 470], [1, 1], [(), ()], [0.5, 0.5])
    pol = make_policy("fgd-lookahead")
    rc = pol.reduced_cost(fm, np.array([1000, 530, 900]), 470)
    # fresh GPU: 1 - V(530) - 1/2 = 0; the 530 hole: 1/2 - 0 - 1/2 = 0;
    # the 900 hole would lose its 810: V(900) - V(430) - 1/2 = 1/2
    assert rc.tolist() == pytest.approx([0.0, 0.0, 0.5])
    # the policy keeps the 900 hole for an 810 pod
    st = ClusterState([64000, 64000], [10**6] * 2, [1, 1], ["A", "A"], frag_model=fm)
    st.apply(0, [0], Pod(1000, 1, 1, 100))              # node 0: 900 free
    st.apply(1, [0], Pod(1000, 1, 1, 470))              # node 1: 530 free
    pod = Pod(1000, 1, 1, 470)
    assert pol.choose(st, pod, st.feasible(pod))[0] == 1


def test_share_prices_with_a_filler_size():
    from alloc.solvers.fgd.engine import share_prices
    # fewer 160s than 810s, and 810 + 160 fit one GPU: some 810s sit alone, so
    # an 810 pays a whole GPU and the 160 is free (complementary slackness)
    y, V = share_prices([160, 810], [0.2, 0.5], deadline=None)
    assert y.tolist() == pytest.approx([0.0, 1.0]) and V[1000] == pytest.approx(1.0)


@pytest.mark.parametrize("opt", [{"reserve": -1}, {"mu": "x"}, {"lam": float("nan")},
                                 {"share_res": 0}])
def test_lookahead_rejects_bad_options(opt):
    with pytest.raises(ValueError, match=f"option '{next(iter(opt))}'"):
        make_policy("fgd-lookahead", **opt)


def test_share_prices_stop_at_the_deadline():
    """Past the deadline no LP runs: zero prices, which switch the reduced
    cost off; with time the prices are the LP's."""
    from alloc.deadline import Deadline
    from alloc.solvers.fgd.engine import share_prices
    y, V = share_prices([470, 810], [0.5, 0.5], deadline=Deadline.after(60).share(0.0))
    assert not y.any() and not V.any()
    y, _ = share_prices([470, 810], [0.5, 0.5], deadline=Deadline.after(60))
    assert y.tolist() == share_prices([470, 810], [0.5, 0.5], deadline=None)[0].tolist()
    assert y.any()
