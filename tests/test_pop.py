"""POP (SOSP'21): the class-size LP against the job-level LP of every pair,
its certificate, the partition, the coalesced shares, Gandiva's pairing, the
policies in the registry, the bench's interface."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alloc.errors import InputError
from alloc.model import Status
from alloc.sched import get_policy
from alloc.sched.pop.classes import ClassLP, solve_classes
from alloc.sched.pop.gandiva import gandiva_pairing, random_pairs
from alloc.sched.pop.partition import partition, pop_shares, pop_solve, ratio_stats
from alloc.sched.pop.problem import PairedProblem, fig2_problem
from alloc.shares import solve_shares
from alloc.shares.check import effective

ROOT = Path(__file__).resolve().parents[1]


def random_problem(seed: int, m: int, M: int = 4, k: int = 2, gpus: int | None = None,
                   weights: bool = False, zero: float = 0.2) -> PairedProblem:
    """A random typed problem: M configurations, symmetric pair rates (some 0)."""
    rng = np.random.default_rng(seed)
    alone = rng.uniform(0.5, 5.0, size=(M, k))
    alone[rng.random((M, k)) < zero] = 0.0
    alone[alone.sum(axis=1) == 0, 0] = 1.0
    pair = np.zeros((M, M, k, 2))
    for c in range(M):
        for d in range(c, M):
            for j in range(k):
                if rng.random() < zero:
                    continue
                r = rng.uniform(0.3, 0.9, size=2) * np.array([alone[c, j], alone[d, j]])
                if c == d:
                    r[1] = r[0]
                pair[c, d, j] = r
                pair[d, c, j] = r[::-1]
    models = rng.integers(0, M, size=m)
    w = rng.choice([1.0, 2.0], size=m) if weights else None
    cap = [gpus if gpus is not None else max(m // 4, 1)] * k
    return PairedProblem(tuple(f"t{j}" for j in range(k)), np.array(cap, dtype=float),
                         tuple(f"m{c}" for c in range(M)), np.ones(M, dtype=int), alone, pair,
                         models, np.ones(m) if w is None else w, tuple(f"j{i}" for i in range(m)))


# ------------------------------------------------------------ exactness
@given(seed=st.integers(0, 10_000), m=st.integers(2, 14), weights=st.booleans())
def test_class_lp_equals_the_job_level_lp_of_every_pair(seed, m, weights):
    """The class-size max-min level is the job-level LP's, with every pair
    column (alloc.shares' max-min), and both are certified."""
    p = random_problem(seed, m, weights=weights)
    r = solve_classes(p, "max-min")
    ref = solve_shares(p.to_shares(), "max-min")
    assert r.status is Status.OPTIMAL and ref.status is Status.OPTIMAL
    assert r.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-9)
    assert r.objective <= r.bound + 1e-9
    assert ref.objective <= r.bound * (1 + 1e-7) + 1e-9     # the bound holds for the job LP
    assert r.violations() == []


@given(seed=st.integers(0, 10_000), m=st.integers(2, 12))
def test_leximin_values_are_the_job_level_water_filling(seed, m):
    """The leximin optimum is unique in its values: every job gets what the
    job-level water-filling gives it."""
    p = random_problem(seed, m, weights=True)
    r = solve_classes(p, "water-filling")
    ref = solve_shares(p.to_shares(), "water-filling")
    np.testing.assert_allclose(r.effective, ref.effective, rtol=1e-5, atol=1e-7)


def test_members_of_a_class_get_the_same_shares():
    p = random_problem(3, 40, M=3)
    r = solve_classes(p)
    for c in range(len(p.class_count)):
        vals = r.effective[p.job_class == c]
        assert np.ptp(vals) <= 1e-9 * max(1.0, vals.max())
    # few job pairs carry time: at most (q_c + q_d) per class pair and type mix
    assert len(r.pa) <= 2 * p.m * len(p.class_count)


def test_certificate_is_a_bound_for_any_duals():
    """Any nonnegative duals give an upper bound on the level (weak duality
    after the repair), so the certificate cannot claim too little."""
    p = random_problem(5, 20)
    lp = ClassLP.of(p)
    r = solve_classes(p, "max-min")
    rng = np.random.default_rng(0)
    for _ in range(20):
        U, V, P = rng.random(lp.C), rng.random(lp.C), rng.random(lp.k)
        b = lp.served.astype(float)
        bound = lp.certificate(U, V, P, b, np.zeros(lp.C))
        assert bound is None or bound >= r.objective - 1e-9


def test_unserved_jobs_get_nothing():
    p = PairedProblem.build(("v100", "k80"), [2, 0], ("a", "b"), [1, 1], [[2.0, 0.0], [0.0, 1.0]],
                            {}, [0, 1, 0])
    r = solve_classes(p)
    assert r.effective[1] == 0 and not p.served[1]
    assert r.objective == pytest.approx(1.0)


# ------------------------------------------------------------ bad input
def test_bad_problems_name_the_field():
    with pytest.raises(InputError, match="capacity"):
        PairedProblem.build(("v100",), [-1], ("a",), [1], [[1.0]], {}, [0])
    with pytest.raises(InputError, match="job_model"):
        PairedProblem.build(("v100",), [1], ("a",), [1], [[1.0]], {}, [3])
    with pytest.raises(InputError, match="scale factors 1 and 2 differ"):
        PairedProblem.build(("v100",), [2], ("a", "b"), [1, 2], [[1.0], [1.0]],
                            {("a", "b"): {"v100": (1.0, 1.0)}}, [0, 1])
    with pytest.raises(InputError, match="unknown GPU type"):
        PairedProblem.build(("v100",), [2], ("a", "b"), [1, 1], [[1.0], [1.0]],
                            {("a", "b"): {"k80": (1.0, 1.0)}}, [0, 1])
    with pytest.raises(InputError, match="weight"):
        PairedProblem.build(("v100",), [2], ("a",), [1], [[1.0]], {}, [0], weight=[0.0])
    with pytest.raises(InputError, match="inner"):
        solve_classes(random_problem(0, 4), "leximax")
    with pytest.raises(InputError, match="k: expected"):
        partition(4, 0)
    with pytest.raises(InputError, match="partition"):
        partition(4, 2, "striped")


# ------------------------------------------------------------------ POP
def test_round_robin_is_job_index_mod_k_and_random_is_seeded():
    assert partition(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]
    a, b = partition(50, 4, "random", 1), partition(50, 4, "random", 1)
    assert a.tolist() == b.tolist() and set(a.tolist()) <= {0, 1, 2, 3}
    assert partition(50, 4, "random", 2).tolist() != a.tolist()


@pytest.mark.parametrize("how", ["round-robin", "random"])
def test_pop_parts_are_solved_on_their_share_of_the_cluster(how):
    p = random_problem(7, 48, M=5, gpus=13)
    r = pop_solve(p, 4, how=how, seed=3, parallel="serial")
    assert r.shares.violations() == [] and r.shares.status is Status.FEASIBLE
    # every part keeps to floor(13 / 4) = 3 GPUs of each type
    for i in range(4):
        idx = np.flatnonzero(r.parts == i)
        used = r.shares.X[idx].sum(axis=0)
        inside = np.isin(r.shares.pa, idx)
        assert np.isin(r.shares.pb[inside], idx).all()    # no pair across parts
        used += r.shares.Y[inside].sum(axis=0)
        assert (used <= 3 + 1e-6).all()
    # each part's level is its own exact optimum
    for i, level in enumerate(r.part_levels):
        idx = np.flatnonzero(r.parts == i)
        sub = solve_classes(p.subset(idx, np.floor(p.capacity / 4)))
        assert level == pytest.approx(sub.objective, rel=1e-9)
    assert r.runtime_s <= r.wall_s + 1e-9 or r.runtime_s >= 0


def test_pop_with_one_part_is_the_exact_optimum():
    p = random_problem(2, 30)
    r = pop_solve(p, 1)
    ex = solve_classes(p)
    assert r.shares.status is Status.OPTIMAL
    np.testing.assert_allclose(r.shares.effective, ex.effective)


def test_processes_give_what_serial_gives():
    p = random_problem(4, 40)
    a = pop_solve(p, 3, parallel="serial")
    b = pop_solve(p, 3, parallel="process", workers=2)
    np.testing.assert_allclose(a.shares.effective, b.shares.effective, rtol=1e-9)


def test_pop_on_the_job_level_lp_matches_the_class_lp():
    p = random_problem(9, 24)
    sp = p.to_shares()
    X, Y, info = pop_shares(sp, 2, "water-filling", parallel="serial")
    a = pop_solve(p, 2, parallel="serial")
    np.testing.assert_allclose(effective(sp, X, Y), a.shares.effective, rtol=1e-5, atol=1e-7)
    assert info["part_status"] == ["optimal", "optimal"]


def test_ratio_stats_skip_jobs_without_an_exact_share():
    assert ratio_stats(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.0, 3.0])) == (0.75, 0.25)


# -------------------------------------------------------------- Gandiva
def test_gandiva_pairs_every_job_when_the_cluster_is_short():
    p = random_problem(1, 21, gpus=3)              # 21 jobs, 6 GPUs: packing
    pairs = random_pairs(p, seed=4)
    seen = [x for q in pairs for x in q]
    assert len(seen) == len(set(seen)) and len(pairs) == 10
    r = gandiva_pairing(p, seed=4)
    assert r.violations() == [] and r.stats["units"] == 11
    # equal time for every unit, on every type (blind to rates), <= 1 in all
    times = r.X.sum(axis=1)
    np.add.at(times, r.pa, r.Y.sum(axis=1))
    np.add.at(times, r.pb, r.Y.sum(axis=1))
    assert np.allclose(times, times[0]) and times[0] <= 1 + 1e-12
    assert r.stats["pairs"] == 10


def test_gandiva_does_not_pack_a_cluster_with_room():
    p = random_problem(1, 6, gpus=3)
    r = gandiva_pairing(p)
    assert r.stats["pairs"] == 0 and len(r.pa) == 0


# ------------------------------------------------------------ registry
def test_pop_and_gandiva_are_registered_share_policies():
    info = get_policy("shares", "pop")
    assert {"throughput", "pairs"} <= info.needs
    pol = info.build(k=2, parallel="serial")
    assert pol.k == 2
    with pytest.raises(InputError, match="partition"):
        info.build(partition="striped")
    assert get_policy("shares", "gandiva-pairing").kind == "shares"


def test_shares_protocol_reads_the_run_table():
    from types import SimpleNamespace

    from alloc import Cluster, Server
    from alloc.sched import Context
    p = random_problem(0, 6, M=3)
    table = SimpleNamespace(types=p.gpu_types, models=p.models, scale=p.scale, alone=p.alone,
                            pair=p.pair)
    progress = SimpleNamespace(table=table, model_row=lambda j: int(j.model[1:]))
    cluster = Cluster((Server("s0", cpu=8000, mem=64000, gpus=2, gpu_type="t0"),
                       Server("s1", cpu=8000, mem=64000, gpus=2, gpu_type="t1")))
    ctx = Context(0.0, 1, cluster)
    object.__setattr__(ctx, "progress", progress)
    jobs = [SimpleNamespace(id=f"j{i}", model=p.models[c]) for i, c in enumerate(p.job_model)]
    out = get_policy("shares", "pop").build(parallel="serial").shares(jobs, ctx)
    for jid in ("j0", "j5"):
        assert jid in out
    time = {j.id: sum(out[j.id].values()) for j in jobs}
    for key, row in out.items():
        if "+" in key:
            a, b = key.split("+")
            time[a] += sum(row.values())
            time[b] += sum(row.values())
    assert max(time.values()) <= 1 + 1e-6
    with pytest.raises(InputError, match="throughput table"):
        get_policy("shares", "pop").build().shares(jobs, Context(0.0, 1, cluster))


# ------------------------------------------------------------- Fig. 2
def test_fig2_on_gavel_table(shared_dir):
    """On Gavel's measured rates at 64 jobs: the class LP's level is the
    job-level LP's, POP-2 stays close, Gandiva far below."""
    from alloc.sim.gavel import ThroughputTable
    table = ThroughputTable.load(shared_dir / "data" / "reference" / "gavel_throughputs.json")
    p = fig2_problem(table, 64, seed=1)
    assert p.capacity.tolist() == [16.0, 16.0, 16.0] and len(p.models) == 26
    ex = solve_classes(p)
    ref = solve_shares(p.to_shares(), "max-min")
    assert ex.status is Status.OPTIMAL and ex.objective == pytest.approx(ref.objective, rel=1e-7)
    r = pop_solve(p, 2, parallel="serial")
    mean, _ = ratio_stats(r.shares.effective, ex.effective)
    assert 0.95 <= mean <= 1.0 + 1e-9
    g, _ = ratio_stats(gandiva_pairing(p, 1).effective, ex.effective)
    assert g < 0.8


def test_bench_interface(shared_dir, tmp_path):
    out = tmp_path / "pop.json"
    env = {"ALLOC_SHARED": str(shared_dir), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(ROOT / "bench" / "pop.py"), "--jobs", "64", "--seed", "1",
                    "--k", "2", "--parallel", "serial", "--out", str(out)],
                   check=True, env=env, capture_output=True, timeout=120)
    doc = json.loads(out.read_text())
    for key in ("exact_s", "pop_s", "mean_ratio", "std_ratio", "gandiva_ratio",
                "zero_throughput_jobs"):
        assert key in doc
    assert doc["exact_status"] == "optimal" and 0.9 < doc["mean_ratio"] <= 1 + 1e-9


def test_bench_without_the_data_is_one_line(tmp_path):
    env = {"ALLOC_SHARED": str(tmp_path), "PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "pop.py"), "--jobs", "8"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "gavel_throughputs" in r.stderr


def test_pop_is_a_shares_policy_of_the_simulator(shared_dir):
    """POP and Gandiva's pairing drive Gavel's round mechanism on the one
    simulator: every job finishes, pairs included."""
    import random

    from alloc import Cluster, Server
    from alloc.sim import WorkloadJob, simulate
    from alloc.sim.gavel import ThroughputTable
    from alloc.sim.progress import GavelTable
    table = ThroughputTable.load(shared_dir / "data" / "reference" / "gavel_throughputs.json")
    cl = Cluster(tuple(Server(f"{t}{i}", cpu=32000, mem=256000, gpus=2, gpu_type=t)
                       for t in ("v100", "p100", "k80") for i in range(2)))
    rng = random.Random(3)
    jobs = [WorkloadJob(f"j{i}", 60.0 * i, 1, duration_s=rng.uniform(600, 1800),
                        model=table.models[rng.randrange(len(table.models))]) for i in range(16)]
    for shares in (("pop", {"k": 2, "parallel": "serial"}), ("gandiva-pairing", {"seed": 1})):
        res = simulate(cl, jobs, shares=shares, progress=GavelTable(table), round_s=360.0,
                       repack=True)
        tl = list(res.timeline())
        assert len(tl) == 16 and all(r["end_s"] is not None for r in tl)


@given(seed=st.integers(0, 10_000), m=st.integers(4, 30), k=st.integers(1, 4))
def test_no_heuristic_beats_the_certified_bound(seed, m, k):
    """POP's parts and Gandiva's pairs are feasible for the whole problem,
    so their smallest normalised share never exceeds the exact bound."""
    p = random_problem(seed, m, gpus=max(m // 3, 1))
    ex = solve_classes(p, "max-min")
    for r in (pop_solve(p, k, parallel="serial").shares, gandiva_pairing(p, seed)):
        assert r.violations() == []
        if r.objective is not None:
            assert r.objective <= ex.bound * (1 + 1e-7) + 1e-9
