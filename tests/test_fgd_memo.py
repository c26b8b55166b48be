"""The few-node path of fgd's score index (scores remembered per pod kind and
node state, `alloc.solvers.fgd.engine._Cached.few`) equals the full numpy
computation, over generated rounds: pods leaving, a new target workload and
a new policy every round (as in a scheduler loop), shared, whole-GPU,
multi-GPU, CPU-only and model-restricted pods."""
import numpy as np
import pytest

from alloc.solvers.fgd.engine import ClusterState, FragModel, Pod, place, place_scan
from fgd_policies import make_policy
from test_fgd_index import pods_of


def state_of(seed, n, max_pods):
    rng = np.random.default_rng(seed)
    cpu = rng.choice([16000, 32000, 64000, 96000], n)
    gpus = rng.choice([0, 1, 2, 4, 8], n, p=[0.05, 0.1, 0.3, 0.2, 0.35])
    models = [str(m) for m in rng.choice(["T4", "V100", "G2"], n)]
    return ClusterState(cpu, rng.choice([65536, 262144], n), gpus, models,
                        rank=rng.permutation(n), max_pods=max_pods)


def full_values(state, policy, ix, pod):
    """Index values and GPUs of every node for ``pod``, computed afresh."""
    idx = np.arange(state.N)
    score, gpu = policy.node_scores(state, pod, idx)
    return ix.encode(score, state.feasible_at(pod, idx), idx), gpu


def assert_entries_equal_full(state, policy):
    ix = policy.index(state)
    for pod in list(ix.entries):
        _, ent = policy.entry(state, pod)      # brought up to date (few nodes: `few`)
        want, gpu = full_values(state, policy, ix, pod)
        got = ent.flat[ix.slot]
        assert np.array_equal(got, want), pod
        assert np.array_equal(ent.agg, ent.val.max(axis=1)), pod
        if ent.gpu is not None:
            ok = want >= 0
            assert np.array_equal(ent.gpu[ix.slot][ok], gpu[ok]), pod


@pytest.mark.parametrize("policy", ["fgd", "fgd-lookahead"])
@pytest.mark.parametrize("seed", [0, 1])
def test_rounds_equal_the_full_computation_and_the_scan(policy, seed):
    rng = np.random.default_rng(seed)
    max_pods = 7 if seed else 1 << 62
    a, b = state_of(seed + 20, 60, max_pods), state_of(seed + 20, 60, max_pods)
    live, few_calls = [], 0
    for _ in range(6):
        # pods leave (the loop's finishes and preemptions), then a new round
        for _ in range(int(rng.integers(0, len(live) // 2 + 1))):
            n, g, pod = live.pop(int(rng.integers(len(live))))
            a.remove(n, g, pod, untag=True)
            b.remove(n, g, pod, untag=True)
        arrivals = pods_of(rng, int(rng.integers(20, 60)))
        fm = FragModel.from_pods(arrivals)
        if policy == "fgd-lookahead":
            fm.typed_demand = {("T4",): 0.1}
        for st in (a, b):
            st.restart_log()
            st.set_frag_model(fm)
        pa, pb = make_policy(policy, seed), make_policy(policy, seed)
        real = pa.few

        def counted(*args):
            nonlocal few_calls
            few_calls += 1
            return real(*args)
        pa.few = counted
        for pod in arrivals:
            r = place(a, pa, pod)
            assert r == place_scan(b, pb, pod)
            if r is not None:
                live.append((r[0], list(r[1]), pod))
            if rng.random() < 0.1:
                assert_entries_equal_full(a, pa)
        assert_entries_equal_full(a, pa)
        assert np.array_equal(a.gfree, b.gfree) and np.array_equal(a.frag, b.frag)
    assert few_calls > 50
    assert any(len(m) for m in pa._memo.values())


def test_scores_do_not_depend_on_the_order_of_a_nodes_gpus():
    """The memo keys whole-GPU and CPU-only pods by a node's GPUs sorted (and
    its free CPU): the numpy scores of nodes whose GPUs are a permutation of
    each other agree, and the few-node path, which meets every key again,
    gives the numpy values and GPUs."""
    rng = np.random.default_rng(3)
    n = 48
    st = ClusterState([64000] * n, [262144] * n, [8] * n, ["V100"] * n)
    base = [int(x) for x in rng.choice([0, 190, 350, 530, 1000], 8)]
    pods = pods_of(rng, 80)
    st.set_frag_model(FragModel.from_pods(pods))
    for node in range(n):            # each node: the same free milli, permuted
        for i, f in enumerate(rng.permutation(base).tolist()):
            if f < 1000:
                st.apply(node, [i], Pod(0, 0, 1, 1000 - f))
        st.apply(node, [], Pod([0, 54000, 61000, 62500][node % 4], 0, 0, 0))
    assert len({st.gkey[i][1] for i in range(n)}) > 1
    assert len({st.gkey[i][2] for i in range(n)}) == 1
    for policy in ("fgd", "fgd-lookahead"):
        pol = make_policy(policy)
        ix = pol.index(st)
        for pod in pods:
            want, gpu = full_values(st, pol, ix, pod)
            if not pod.shared:
                score, _ = pol.node_scores(st, pod, np.arange(n))
                for r in range(4):   # the same free CPU: the same score
                    assert len(set(score[r::4].tolist())) == 1, (policy, pod)
            vals, gpus = pol.few(st, pod, ix.tie_l, list(range(n)))
            assert vals == want.tolist(), (policy, pod)
            ok = want >= 0
            assert [g for g, y in zip(gpus, ok) if y] == gpu[ok].tolist(), (policy, pod)
