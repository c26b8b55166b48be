"""Fairness properties of the share policies, as hypothesis properties:
max-min bottlenecks, water-filling's leximin order, finish-time fairness
against the isolated share, tenant weights, weight monotonicity, feasibility."""
import numpy as np
from hypothesis import assume, given, settings, strategies as st

from alloc.kernel import LinearModel, solve
from alloc.model import Status
from alloc.shares import POLICIES, problem_from_dict, solve_shares
from alloc.shares import check
from alloc.shares.policies import FREEZE_MARGIN
from alloc.testing import water_filling_problems

TYPES = ("a", "b", "c")
PROPS = settings(max_examples=25, deadline=None)


def build(seed, m, k, sf2=False, pairs=0, tenants=0, t_le_c=False):
    rng = np.random.default_rng(seed)
    types = TYPES[:k]
    cap = {t: int(rng.integers(1, 4)) * (2 if sf2 else 1) for t in types}
    jobs = []
    for i in range(m):
        T = np.round(rng.uniform(0.1, 5.0, k) * (rng.random(k) > 0.25), 3)
        if not T.any():
            T[rng.integers(k)] = 1.0
        C = float(rng.uniform(0, 100))
        j = {"id": f"j{i}", "scale_factor": int(rng.choice([1, 2])) if sf2 else 1,
             "weight": float(np.round(rng.uniform(0.5, 3.0), 2)),
             "throughput": dict(zip(types, map(float, T))),
             "steps_remaining": float(rng.uniform(10, 1000)),
             "elapsed_s": float(rng.uniform(0, C)) if t_le_c else float(rng.uniform(0, 100)),
             "isolated_time_s": C}
        if tenants:
            j["tenant"] = f"t{i % tenants}"
        jobs.append(j)
    doc = {"format": "alloc.shares/1", "gpu_types": cap, "jobs": jobs}
    if pairs:
        out, seen = [], set()
        for _ in range(pairs):
            a, b = sorted(rng.choice(m, 2, replace=False))
            if (a, b) in seen or jobs[a]["scale_factor"] != jobs[b]["scale_factor"]:
                continue
            seen.add((a, b))
            f = rng.uniform(0.3, 0.9, size=(k, 2))
            out.append({"jobs": [f"j{a}", f"j{b}"], "throughput": {
                t: [jobs[a]["throughput"][t] * f[c, 0], jobs[b]["throughput"][t] * f[c, 1]]
                for c, t in enumerate(types)}})
        doc["pairs"] = out
    if tenants:
        doc["tenants"] = {f"t{t}": {"weight": float(rng.integers(1, 4))} for t in range(tenants)}
    return problem_from_dict(doc)


def value_lp(p, objective_job, floors):
    """max value_k over feasible shares with value_j >= floors[j] (NaN: no
    floor); values are normalised shares sf eff / (w P)."""
    T = p.runnable_throughput
    kappa = p.scale_factor / (p.weight * check.proportional_throughput(p))
    model = LinearModel("probe")
    X = {(i, j): model.add_var() for i in range(p.m) for j in range(p.k) if T[i, j] > 0}
    val = {i: {} for i in range(p.m)}
    for (i, j), x in X.items():
        val[i][x] = kappa[i] * T[i, j]
    model.set_objective(val[objective_job])
    for i in range(p.m):
        model.add_row({x: 1.0 for (ii, j), x in X.items() if ii == i}, hi=1.0)
        if not np.isnan(floors[i]):
            model.add_row(val[i], lo=floors[i])
    for j in range(p.k):
        model.add_row({x: p.scale_factor[i] for (i, jj), x in X.items() if jj == j}, hi=p.capacity[j])
    r = solve(model, "highs", time_limit=20, relax=True, primal_feasibility_tolerance=1e-10,
              dual_feasibility_tolerance=1e-10)
    return r.objective if r.status is Status.OPTIMAL else None


def values(p, r):
    return check.normalized_shares(p, r.effective)


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(2, 7), k=st.integers(1, 3))
def test_max_min_no_job_at_the_minimum_can_rise(seed, m, k):
    """Every job left at the minimum is a bottleneck: with everyone kept at the
    minimum, it cannot be raised."""
    p = build(seed, m, k)
    r = solve_shares(p, "max-min")
    lam = r.objective
    v = values(p, r)
    floors = np.full(p.m, lam * (1 - 1e-9))
    for i in np.flatnonzero(v <= lam * (1 + 1e-7)):
        best = value_lp(p, i, floors)
        # two LPs solved to HiGHS' feasibility tolerance: agree to ~1e-6 relative
        assert best <= lam * (1 + 1e-5) + 1e-9, (i, best, lam)
    # and the minimum itself cannot rise
    assert value_lp(p, int(np.argmin(v)), np.full(p.m, lam * (1 + 1e-5))) is None


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(2, 7), k=st.integers(1, 3))
def test_water_filling_no_job_can_rise_without_lowering_one_at_or_below(seed, m, k):
    """alloc.testing's water-filling check; a frozen job is kept at its
    round's level less FREEZE_MARGIN (relative), so the floors hold it at
    the level."""
    p = build(seed, m, k)
    r = solve_shares(p, "water-filling")
    assert not water_filling_problems(p, r.X, r.Y, margin=FREEZE_MARGIN)


def lex_geq(ours, other, tol=1e-7):
    for x, y in zip(np.sort(ours), np.sort(other)):
        if x > y + tol * max(1.0, abs(y)):
            return True
        if x < y - tol * max(1.0, abs(y)):
            return False
    return True


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(2, 7), k=st.integers(1, 3))
def test_water_filling_is_leximin_against_other_feasible_shares(seed, m, k):
    p = build(seed, m, k, sf2=seed % 2 == 0)
    ours = solve_shares(p, "water-filling")
    rng = np.random.default_rng(seed)
    others = [solve_shares(p, name).X for name in ("max-min", "max-sum", "isolated", "proportional", "fifo")]
    for _ in range(20):                       # random feasible mixes and perturbations
        a, b = others[rng.integers(len(others))], others[rng.integers(len(others))]
        t = rng.random()
        Z = np.clip(t * a + (1 - t) * b + rng.normal(0, 0.05, a.shape) * (ours.X > 0), 0, None)
        Z /= np.maximum(Z.sum(axis=1), 1)[:, None]
        use = p.scale_factor @ Z
        Z *= min(1.0, float(np.min(np.divide(p.capacity, use, out=np.full(p.k, np.inf), where=use > 0))))
        others.append(Z)
    v = values(p, ours)[p.served]
    for Z in others:
        assert not check.violations(p, Z)
        assert lex_geq(v, check.normalized_shares(p, check.effective(p, Z))[p.served])


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(1, 7), k=st.integers(1, 3))
def test_finish_time_fairness_never_worse_than_isolated(seed, m, k):
    """With t_i <= C_i the isolated share (always feasible) has rho_i <= 1, so
    the optimum does too."""
    p = build(seed, m, k, sf2=seed % 3 == 0, t_le_c=True)
    r = solve_shares(p, "finish-time-fairness")
    assert r.objective is None or r.objective <= 1 + 1e-9
    iso = check.isolated_shares(p)
    assert r.objective is None or r.objective <= np.nanmax(check.ftf_rho(p, check.effective(p, iso))) + 1e-9


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(4, 9), tenants=st.integers(2, 3),
       within=st.sampled_from(["fairness", "fifo"]))
def test_tenant_weights_respected_when_backlogged(seed, m, tenants, within):
    """One GPU type, more jobs than GPUs: while no job runs out of time, each
    tenant's aggregate normalised share is in proportion to its weight."""
    rng = np.random.default_rng(seed)
    W = rng.integers(1, 4, tenants).astype(float)
    jobs = [{"id": f"j{i}", "throughput": {"a": float(rng.uniform(0.5, 3))}, "tenant": f"t{i % tenants}",
             "elapsed_s": float(rng.uniform(0, 10)), "weight": float(rng.uniform(0.5, 2))} for i in range(m)]
    doc = {"format": "alloc.shares/1", "gpu_types": {"a": 1}, "jobs": jobs,
           "tenants": {f"t{t}": {"weight": W[t], "policy": within} for t in range(tenants)}}
    p = problem_from_dict(doc)
    r = solve_shares(p, "hierarchical")
    time = r.X.sum(axis=1)
    assume(not (time >= 1 - 1e-9).any())     # everyone backlogged
    agg = np.zeros(tenants)
    np.add.at(agg, np.arange(m) % tenants, check.normalized_shares(p, r.effective) * p.weight)
    np.testing.assert_allclose(agg / W, (agg / W).mean(), rtol=1e-6)


@PROPS
@given(seed=st.integers(0, 2 ** 31), m=st.integers(2, 6), k=st.integers(1, 3),
       factor=st.floats(1.1, 4.0))
def test_raising_a_weight_never_lowers_that_job(seed, m, k, factor):
    p = build(seed, m, k)
    job = seed % m
    doc = {"format": "alloc.shares/1", "gpu_types": dict(zip(p.gpu_types, map(int, p.capacity))),
           "jobs": [{"id": p.job_ids[i], "weight": float(p.weight[i]) * (factor if i == job else 1.0),
                     "throughput": dict(zip(p.gpu_types, map(float, p.throughput[i])))}
                    for i in range(p.m)]}
    q = problem_from_dict(doc)
    # max-min: the share the job is guaranteed, w_i * lambda*
    a, b = solve_shares(p, "max-min"), solve_shares(q, "max-min")
    assert q.weight[job] * b.objective >= p.weight[job] * a.objective * (1 - 1e-7)
    # water-filling: the job's effective throughput itself (the leximin values are unique)
    a, b = solve_shares(p, "water-filling"), solve_shares(q, "water-filling")
    assert b.effective[job] >= a.effective[job] * (1 - 1e-6) - 1e-9


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 31), m=st.integers(1, 7), k=st.integers(1, 3), pairs=st.integers(0, 6))
def test_every_policy_feasible(seed, m, k, pairs):
    p = build(seed, m, k, sf2=seed % 2 == 1, pairs=pairs if m > 1 else 0, tenants=2)
    for name in POLICIES:
        r = solve_shares(p, name, seed=seed)
        assert not check.violations(p, r.X, r.Y), name
        assert r.status is not Status.UNKNOWN, name
        if r.bound is not None and r.objective is not None:
            if name in ("makespan", "finish-time-fairness"):
                assert r.bound <= r.objective * (1 + 1e-7), name
            else:
                assert r.bound >= r.objective * (1 - 1e-7) - 1e-12, name
