"""Share policies: the structured solver against plain HiGHS LPs, every policy's
shares checked, exact makespan and finish-time fairness, the format and the
command line."""
import json
import subprocess
import sys

import numpy as np
import pytest

from alloc.deadline import Deadline
from alloc.errors import InputError, SolverError
from alloc.kernel import INF, LinearModel, solve
from alloc.model import Status
from alloc.shares import POLICIES, load_shares, problem_from_dict, problem_to_dict, solve_shares
from alloc.shares import check
from alloc.shares.core import RequirementLP, SumLP, solve_requirement, solve_sum
from alloc.shares.lp import FullLP, solve_full
from alloc.shares.policies import PolicySpec, Outcome

TYPES = ("v100", "p100", "k80")


def make_doc(m, seed=0, models=None, nper=None, mix=False, pairs=0, tenants=0, weights=False):
    """A random alloc.shares/1 document: jobs of ``models`` random profiles
    (None: every job its own), scale factors 1 or 1/2/4, optional pairs and
    tenants."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 4.0, size=(models or m, 3)) * np.array([2.5, 1.6, 1.0])
    jobs = []
    for i in range(m):
        row = base[rng.integers(len(base))] if models else base[i]
        sf = int(rng.choice([1, 2, 4])) if mix else 1
        j = {"id": f"j{i}", "scale_factor": sf, "throughput": dict(zip(TYPES, map(float, row * sf ** 0.8))),
             "steps_remaining": float(rng.uniform(1e3, 1e5)), "elapsed_s": float(rng.uniform(0, 500)),
             "isolated_time_s": float(rng.uniform(0, 500))}
        if weights:
            j["weight"] = float(rng.uniform(0.5, 2.0))
        if tenants:
            j["tenant"] = f"t{rng.integers(tenants)}"
        jobs.append(j)
    nper = nper or max(1, m // 5)
    doc = {"format": "alloc.shares/1", "gpu_types": {t: nper for t in TYPES}, "jobs": jobs}
    if pairs:
        seen, out = set(), []
        while len(out) < pairs:
            a, b = sorted(rng.choice(m, 2, replace=False))
            if (a, b) in seen or jobs[a]["scale_factor"] != jobs[b]["scale_factor"]:
                continue
            seen.add((a, b))
            f = rng.uniform(0.4, 0.9, size=(3, 2))
            out.append({"jobs": [f"j{a}", f"j{b}"], "throughput": {
                t: [jobs[a]["throughput"][t] * f[c, 0], jobs[b]["throughput"][t] * f[c, 1]]
                for c, t in enumerate(TYPES)}})
        doc["pairs"] = out
    if tenants:
        doc["tenants"] = {f"t{t}": {"weight": float(t + 1)} for t in range(tenants)}
    return doc


# ------------------------------------------------------------ plain LPs
def plain_requirement(p, value, kappa, b, pairs=True):
    """max lambda s.t. kappa_i * value_i(X, Y) >= b_i lambda, every column, one
    model: the reference for every requirement-form policy."""
    T = value["T"]
    model = LinearModel("plain")
    lam = model.add_var(-INF, INF, obj=1.0)
    X = {(i, j): model.add_var() for i in range(p.m) for j in range(p.k) if T[i, j] > 0}
    Y = {}
    a, bb, _ = check.pair_arrays(p)
    PT = value["PT"]
    if pairs:
        Y = {(q, j): model.add_var() for q in range(len(a)) for j in range(p.k) if PT[q, j].any()}
    val = {i: {} for i in range(p.m)}
    time = {i: {} for i in range(p.m)}
    cap = {j: {} for j in range(p.k)}
    for (i, j), x in X.items():
        val[i][x] = kappa[i] * T[i, j]
        time[i][x] = 1.0
        cap[j][x] = p.scale_factor[i]
    for (q, j), y in Y.items():
        val[a[q]][y] = kappa[a[q]] * PT[q, j, 0]
        val[bb[q]][y] = kappa[bb[q]] * PT[q, j, 1]
        time[a[q]][y] = time[bb[q]][y] = 1.0
        cap[j][y] = p.scale_factor[a[q]]
    for i in range(p.m):
        if b[i] > 0:
            model.add_row({**val[i], lam: -b[i]}, lo=0.0)
        model.add_row(time[i], hi=1.0)
    for j in range(p.k):
        model.add_row(cap[j], hi=p.capacity[j])
    r = solve(model, "highs", time_limit=60, relax=True)
    assert r.status is Status.OPTIMAL
    return r.objective


def aware(p):
    return {"T": p.runnable_throughput, "PT": check.pair_arrays(p)[2]}


def agnostic(p):
    T, PT = check.agnostic_throughputs(p)
    return {"T": T, "PT": PT}


def plain_max_min(p, agn=False, pairs=True):
    v = agnostic(p) if agn else aware(p)
    with np.errstate(divide="ignore"):
        kappa = p.scale_factor / (p.weight * check.proportional_throughput(p, v["T"]))
    return plain_requirement(p, v, kappa, p.served.astype(float), pairs)


# ---------------------------------------------------- structured vs plain
def random_requirement_lp(rng, m, k, profiles, kinds, nper):
    D = rng.uniform(0.1, 3.0, size=(profiles, k)) * (rng.random((profiles, k)) > 0.15)
    D[D.sum(axis=1) == 0, 0] = 1.0
    prof = rng.integers(profiles, size=m)
    kappa = rng.uniform(0.3, 3.0, m) if kinds != "uniform" else np.ones(m)
    w = rng.choice([1.0, 2.0, 4.0], m) if kinds == "mix" else np.ones(m)
    b = np.ones(m)
    c = np.zeros(m)
    if kinds == "floors":       # frozen jobs with floors they can meet (a water-filling round)
        frozen = rng.random(m) < 0.4
        b[frozen] = 0.0
        c[frozen] = 0.05 * kappa[frozen] * D[prof[frozen]].max(axis=1)
    return RequirementLP(D, prof, kappa, b, c, w, np.full(k, float(nper)))


@pytest.mark.parametrize("m,profiles,kinds,nper", [
    (40, 40, "uniform", 4), (300, 300, "weights", 30), (300, 8, "weights", 30), (400, 6, "uniform", 200),
    (400, 400, "mix", 25), (350, 12, "floors", 40), (250, 250, "floors", 10), (300, 5, "weights", 400)])
def test_requirement_core_equals_plain_lp(m, profiles, kinds, nper):
    rng = np.random.default_rng(m + profiles + nper)
    lp = random_requirement_lp(rng, m, 3, profiles, kinds, nper)
    res = solve_requirement(lp, Deadline.never())
    ref = solve_full(FullLP(lp.A(), lp.w, lp.n, lp.b, lp.c), Deadline.never())
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)
    assert res.bound == pytest.approx(res.objective, rel=1e-7)
    A = lp.A()
    assert ((A * res.X).sum(axis=1) >= lp.b * res.objective + lp.c - 1e-7).all()
    assert (res.X.sum(axis=1) <= 1 + 1e-7).all() and (lp.w @ res.X <= lp.n + 1e-6).all()


@pytest.mark.parametrize("m,classes,nper", [(50, 50, 5), (400, 400, 40), (400, 20, 60), (300, 300, 500)])
def test_sum_core_equals_plain_lp(m, classes, nper):
    rng = np.random.default_rng(m + classes)
    G = rng.uniform(0.1, 3.0, size=(classes, 3)) * (rng.random((classes, 3)) > 0.1)
    q = rng.integers(1, 5, classes).astype(float)
    w = rng.choice([1.0, 2.0], classes)
    lp = SumLP(G, q, w, np.full(3, float(nper)))
    res = solve_sum(lp, Deadline.never())
    # the plain LP: one member per row, every column
    rows = np.repeat(np.arange(classes), q.astype(int))
    ref = solve_full(FullLP(G[rows], w[rows], lp.n), Deadline.never())
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(ref.objective, rel=1e-8)


def test_structured_solver_uses_few_rows_at_scale():
    """10,000 jobs of 26 profiles: one small master, certified."""
    rng = np.random.default_rng(3)
    lp = random_requirement_lp(rng, 10000, 3, 26, "uniform", 1500)
    res = solve_requirement(lp, Deadline.never())
    assert res.status is Status.OPTIMAL and res.stats["explicit"] < 500


# ------------------------------------------------------- policies vs plain
@pytest.mark.parametrize("seed,kw", [(0, {}), (1, {"mix": True}), (2, {"models": 4, "weights": True}),
                                     (3, {"pairs": 40}), (4, {"pairs": 30, "mix": True})])
def test_max_min_equals_plain_lp(seed, kw):
    p = problem_from_dict(make_doc(24, seed, nper=3, **kw))
    for name, agn in (("max-min", False), ("max-min-agnostic", True)):
        r = solve_shares(p, name)
        assert r.status is Status.OPTIMAL
        assert r.objective == pytest.approx(plain_max_min(p, agn), rel=1e-7)
        assert r.bound >= r.objective - 1e-9


@pytest.mark.parametrize("seed,kw", [(0, {}), (1, {"mix": True, "models": 5}), (2, {"pairs": 40})])
def test_max_sum_and_makespan_equal_plain_lp(seed, kw):
    p = problem_from_dict(make_doc(20, seed, nper=3, **kw))
    r = solve_shares(p, "max-sum")
    v = aware(p)
    # max-sum as an LP: lambda is irrelevant; build the sum directly
    ref = solve_full(FullLP(v["T"], p.scale_factor, p.capacity, pa=check.pair_arrays(p)[0],
                            pb=check.pair_arrays(p)[1], PA=v["PT"]), Deadline.never(),
                     column_generation=False)
    assert r.status is Status.OPTIMAL and r.objective == pytest.approx(ref.objective, rel=1e-8)
    r = solve_shares(p, "makespan")
    lam = plain_requirement(p, v, 1.0 / p.steps_remaining, p.served.astype(float))
    assert r.status is Status.OPTIMAL and r.objective == pytest.approx(1.0 / lam, rel=1e-7)
    assert r.bound <= r.objective * (1 + 1e-9)


def ftf_bisection(p):
    """Reference finish-time fairness: bisection on rho, each step a plain LP."""
    live = p.served & (p.steps_remaining > 0)
    iso = (p.throughput * check.isolated_shares(p)).sum(axis=1)
    s, t = p.steps_remaining, p.elapsed_s
    D = p.isolated_time_s + s / np.where(iso > 0, iso, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = max(((t + s / p.runnable_throughput.max(axis=1)) / D)[live])
    hi = lo * 50
    v = aware(p)
    for _ in range(60):
        mid = (lo + hi) / 2
        if plain_requirement(p, v, (mid * D - t) / s, live.astype(float)) >= 1:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finish_time_fairness_exact(seed):
    p = problem_from_dict(make_doc(10, seed, nper=2, mix=seed == 1))
    r = solve_shares(p, "finish-time-fairness")
    assert r.status is Status.OPTIMAL
    assert r.objective == pytest.approx(ftf_bisection(p), rel=1e-9)
    assert r.bound <= r.objective * (1 + 1e-12)


def test_every_policy_returns_checked_shares():
    for kw in ({}, {"pairs": 30, "tenants": 2}, {"mix": True, "tenants": 3}):
        p = problem_from_dict(make_doc(30, 7, nper=3, **kw))
        for name in POLICIES:
            r = solve_shares(p, name, time_limit=30)
            assert not check.violations(p, r.X, r.Y), name
            assert r.status in (Status.OPTIMAL, Status.FEASIBLE), name
            np.testing.assert_allclose(r.effective, check.effective(p, r.X, r.Y))
            if name in ("isolated", "proportional", "fifo", "gandiva", "allox"):
                assert r.status is Status.FEASIBLE


def test_a_policy_bug_raises_never_returns(monkeypatch):
    p = problem_from_dict(make_doc(6, 0, nper=1))
    bad = PolicySpec(lambda p, d, s: Outcome(np.ones((p.m, p.k)), status=Status.OPTIMAL), "sum", {}, "bug")
    monkeypatch.setitem(POLICIES, "bug", bad)
    with pytest.raises(SolverError, match="infeasible shares"):
        solve_shares(p, "bug")


def test_time_limit_is_kept():
    import time
    p = problem_from_dict(make_doc(3000, 1, models=None, nper=300, weights=True))
    for name in ("max-min", "water-filling", "finish-time-fairness", "allox"):
        t0 = time.perf_counter()
        r = solve_shares(p, name, time_limit=0.05)
        assert time.perf_counter() - t0 < 0.05 * 1.1 + 0.5, name
        assert r.status in (Status.UNKNOWN, Status.FEASIBLE, Status.OPTIMAL)
        assert not check.violations(p, r.X, r.Y)


# ----------------------------------------------------------- heuristics
def test_fifo_gives_whole_gpus_in_arrival_order():
    doc = make_doc(8, 3, nper=1)
    for i, j in enumerate(doc["jobs"]):
        j["elapsed_s"] = float(100 - i)            # j0 arrived first
    p = problem_from_dict(doc)
    r = solve_shares(p, "fifo")
    assert set(np.unique(r.X)) <= {0.0, 1.0}
    assert r.X[:3].sum() == 3 and r.X[3:].sum() == 0          # 3 GPUs, first three jobs
    assert r.X[0].argmax() == np.argmax(p.throughput[0])      # the first gets its fastest type


def test_allox_single_gpu_runs_the_shortest_first():
    doc = {"format": "alloc.shares/1", "gpu_types": {"v100": 1}, "jobs": [
        {"id": f"j{i}", "throughput": {"v100": 1.0}, "steps_remaining": s}
        for i, s in enumerate([500.0, 100.0, 300.0])]}
    r = solve_shares(doc, "allox")
    assert r.shares["j1"]["v100"] == 1.0 and r.X.sum() == 1.0
    # matching cost = total completion time of SPT: 100 + 400 + 900
    assert r.stats["allox_total_completion_s"] == pytest.approx(1400.0)


def test_allox_and_gandiva_take_multi_gpu_jobs_on_an_oversubscribed_cluster():
    p = problem_from_dict(make_doc(40, 5, nper=2, mix=True, pairs=60))
    for name in ("allox", "gandiva"):
        r = solve_shares(p, name, seed=3)
        assert not check.violations(p, r.X, r.Y)
    assert np.array_equal(solve_shares(p, "gandiva", seed=3).Y, solve_shares(p, "gandiva", seed=3).Y)


# ----------------------------------------------------------- format, CLI
BAD = [
    (lambda d: d["jobs"][3]["throughput"].update(v100=-1), "jobs[3].throughput.v100: expected a value >= 0"),
    (lambda d: d["jobs"][1]["throughput"].update(v100=0, p100=0, k80=0), "jobs[1].throughput: expected a throughput > 0"),
    (lambda d: d["jobs"][0]["throughput"].update(a100=1.0), "jobs[0].throughput.a100: unknown GPU type"),
    (lambda d: d["jobs"][0].update(weight=0), "jobs[0].weight: expected a value > 0"),
    (lambda d: d["jobs"][0].update(weight=-2), "jobs[0].weight"),
    (lambda d: d["jobs"][0]["throughput"].update(v100=float("nan")), "NaN is not a JSON number"),
    (lambda d: d["jobs"][0]["throughput"].update(v100=1e300), "jobs[0].throughput.v100: expected a value <="),
    (lambda d: d.update(format="alloc.instance/1"), "format: expected one of ['alloc.shares/1']"),
    (lambda d: d.update(pairs=[{"jobs": ["j0", "zz"], "throughput": {"v100": [1, 1]}}]), "pairs[0].jobs[1]: unknown job 'zz'"),
    (lambda d: d.update(pairs=[{"jobs": ["j0", "j1"], "throughput": {"t4": [1, 1]}}]), "pairs[0].throughput.t4: unknown GPU type"),
    (lambda d: (d["jobs"][1].update(scale_factor=2), d.update(pairs=[{"jobs": ["j0", "j1"], "throughput": {"v100": [1, 1]}}])),
     "expected equal scale factors"),
    (lambda d: d["gpu_types"].update(v100=10 ** 9), "gpu_types.v100: expected a value <="),
    (lambda d: d["jobs"][0].update(colour="red"), "jobs[0]: unknown key 'colour'"),
]


@pytest.mark.parametrize("edit,message", BAD)
def test_bad_input_is_one_line_naming_the_field(tmp_path, edit, message):
    doc = make_doc(5, 0)
    edit(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        load_shares(path)
    assert str(e.value).startswith(str(path)) and message in str(e.value) and "\n" not in str(e.value)


def test_nan_in_a_python_dict_is_refused():
    doc = make_doc(3, 0)
    doc["jobs"][2]["steps_remaining"] = float("inf")
    with pytest.raises(InputError, match=r"jobs\[2\].steps_remaining: expected a finite number"):
        solve_shares(doc, "max-min")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "alloc", "shares", *args], capture_output=True, text=True)


def test_cli_solves_and_writes(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(make_doc(12, 1, nper=2, pairs=10)))
    out = tmp_path / "r.json"
    r = run_cli(str(path), "--policy", "max-min", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "alloc.shares-result/1" and doc["status"] == "optimal"
    assert any("+" in key for key in doc["shares"]) and len(doc["effective_throughput"]) == 12


@pytest.mark.parametrize("args,needle", [
    (["--policy", "best"], "valid policies: max-min"),
    (["--policy", "max-min", "--option", "speed=3"], "unknown option 'speed'"),
    (["--policy", "max-min", "--time-limit", "-1"], "time"),
    (["--policy", "hierarchical", "--option", "within=lifo"], "within"),
])
def test_cli_bad_options_exit_2(tmp_path, args, needle):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(make_doc(4, 0)))
    r = run_cli(str(path), *args)
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_malformed_and_nan_exit_2(tmp_path):
    for text, needle in (('{"format": ', "malformed JSON"),
                         ('{"format": "alloc.shares/1", "gpu_types": {"v100": 1}, '
                          '"jobs": [{"id": "a", "throughput": {"v100": Infinity}}]}', "Infinity")):
        path = tmp_path / "bad.json"
        path.write_text(text)
        r = run_cli(str(path), "--policy", "max-min")
        assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


def test_cli_help_documents_defaults():
    r = run_cli("--help")
    assert r.returncode == 0
    for flag in ("--policy", "--time-limit", "--seed", "--option", "--out"):
        assert flag in r.stdout
    assert r.stdout.count("default") >= 4


def test_problem_round_trips():
    doc = make_doc(9, 2, pairs=5, tenants=2, weights=True, mix=True)
    p = problem_from_dict(doc)
    q = problem_from_dict(problem_to_dict(p))
    assert q.job_ids == p.job_ids and np.array_equal(q.throughput, p.throughput)
    assert len(q.pairs) == 5 and q.tenants == p.tenants


def test_job_that_cannot_run_gets_nothing_with_a_reason():
    doc = make_doc(6, 0, nper=2)
    doc["jobs"][0]["scale_factor"] = 4
    r = solve_shares(doc, "max-min")
    assert r.X[0].sum() == 0 and "j0" in r.unserved and r.status is Status.OPTIMAL


def test_gavel_throughputs_at_scale(shared_dir):
    """Jobs of the models in Gavel's measured throughputs: max-min over 2,000
    jobs equals the plain LP (skips without the shared data)."""
    data = json.loads((shared_dir / "data" / "reference" / "gavel_throughputs.json").read_text())
    keys = [k for k in data["v100"] if k.endswith(", 1)")]
    rng = np.random.default_rng(0)
    jobs = [{"id": f"j{i}", "throughput": {t: data[t][keys[c]]["null"] for t in TYPES}}
            for i, c in enumerate(rng.integers(len(keys), size=2000))]
    p = problem_from_dict({"format": "alloc.shares/1", "gpu_types": {t: 300 for t in TYPES}, "jobs": jobs})
    r = solve_shares(p, "max-min")
    v = aware(p)
    kappa = p.scale_factor / (p.weight * check.proportional_throughput(p))
    ref = solve_full(FullLP(kappa[:, None] * v["T"], p.scale_factor, p.capacity, np.ones(p.m),
                            np.zeros(p.m)), Deadline.never(), params={"solver": "ipm"})
    assert r.status is Status.OPTIMAL and r.objective == pytest.approx(ref.objective, rel=1e-7)


def test_kernel_session_resolves_from_the_last_basis():
    """Columns added to a session and rows changed in place give the same
    optimum as a model built from scratch."""
    from scipy import sparse
    from alloc.kernel import session
    rng = np.random.default_rng(0)
    A = rng.uniform(0, 1, size=(6, 10))
    c = rng.uniform(1, 2, size=10)
    base = LinearModel("s")
    base.add_vars(5, 0.0, INF, obj=c[:5])
    base.add_rows(A[:, :5], -INF, np.ones(6))
    s = session(base)
    assert s.solve(5).status is Status.OPTIMAL
    s.add_columns(c[5:], 0.0, INF, sparse.csc_matrix(A[:, 5:]))
    s.set_row_bounds([0, 1], -INF, [0.5, 0.7])
    s.set_coefficients([2], [0], [0.0])
    warm = s.solve(5)
    A2 = A.copy()
    A2[2, 0] = 0.0
    fresh = LinearModel("f")
    fresh.add_vars(10, 0.0, INF, obj=c)
    fresh.add_rows(A2, -INF, np.array([0.5, 0.7, 1, 1, 1, 1]))
    ref = solve(fresh, "highs", time_limit=5, relax=True)
    assert warm.status is Status.OPTIMAL and warm.objective == pytest.approx(ref.objective, rel=1e-9)
