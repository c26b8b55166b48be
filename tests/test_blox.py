"""alloc as Blox's placement policy, on Blox-shaped inputs built here (Blox is
not on a package registry): integer ids, GPU_IDs, no GPU types, the LAS order;
with preemption by order the same jobs launch and stop as with Blox's default
placement on 1-GPU jobs."""
import random
from types import SimpleNamespace

import pytest

from alloc import InputError
from alloc.registry import solvers
from alloc.adapters.blox import AllocPlacement


def blox_cluster(nodes: int, per: int) -> SimpleNamespace:
    rows = [{"GPU_ID": n * per + k, "GPU_UUID": f"u{n}-{k}", "Local_GPU_ID": k, "Node_ID": n,
             "IP_addr": f"10.0.0.{n}", "IN_USE": False, "JOB_IDS": None}
            for n in range(nodes) for k in range(per)]
    return SimpleNamespace(server_map={n: {"numGPUs": per, "ipaddr": f"10.0.0.{n}"}
                                       for n in range(nodes)}, gpu_df=rows)


def las_order(active: dict) -> list:
    """Blox's LAS ranking: (job_priority, attained service), as sorted pairs."""
    return sorted(active.items(), key=lambda kv: (kv[1]["job_priority"],
                                                  kv[1]["tracked_metrics"]["attained_service"],
                                                  kv[0]))


def default_placement(active: dict, order: list, rows: list) -> tuple[list, dict]:
    """Blox's default placement, restated: walk the order; a waiting job takes
    free GPUs node by node; when none are left, running jobs are suspended
    from the bottom of the order (only those below it) until it fits; the
    walk stops at the first job that cannot be placed."""
    free = {r["GPU_ID"]: r["Node_ID"] for r in rows if r["JOB_IDS"] is None}
    held = {}
    for r in rows:
        if r["JOB_IDS"] is not None:
            held.setdefault(r["JOB_IDS"], []).append(r["GPU_ID"])
    running = {j for j, d in active.items() if d["is_running"]}
    stop, launch = [], {}
    ids = [j for j, _ in order]
    for i, jid in enumerate(ids):
        if jid in running:
            continue
        need = active[jid]["num_GPUs"]
        found = _scatter(free, need)
        below = [j for j in reversed(ids[i + 1:])]
        while found is None and below:
            v = below.pop(0)
            if v in running:
                running.discard(v)
                stop.append(v)
                for g in held.pop(v, []):
                    free[g] = next(r["Node_ID"] for r in rows if r["GPU_ID"] == g)
                found = _scatter(free, need)
        if found is None:
            break
        launch[jid] = found
        for g in found:
            free.pop(g)
    return stop, launch


def _scatter(free: dict, need: int):
    by_node = {}
    for g, n in sorted(free.items(), key=lambda kv: (kv[1], kv[0])):
        by_node.setdefault(n, []).append(g)
    got = []
    for gs in by_node.values():
        got += gs[:need - len(got)]
        if len(got) == need:
            return got
    return None


def apply(active, rows, stop, launch):
    for j in stop:
        active[j]["is_running"] = False
        for r in rows:
            if r["JOB_IDS"] == j:
                r["JOB_IDS"], r["IN_USE"] = None, False
    for j, gs in launch.items():
        active[j]["is_running"] = True
        for r in rows:
            if r["GPU_ID"] in gs:
                assert r["JOB_IDS"] is None, "a GPU given twice"
                r["JOB_IDS"], r["IN_USE"] = j, True


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_decisions_as_blox_default_placement_on_one_gpu_jobs(seed):
    rng = random.Random(seed)
    mine, theirs = blox_cluster(4, 4), blox_cluster(4, 4)
    a_jobs, b_jobs = {}, {}
    policy = AllocPlacement(solver="best-fit")
    next_id, preemptions = 0, 0
    for rnd in range(40):
        for _ in range(rng.randint(0, 5)):
            for d in (a_jobs, b_jobs):
                d[next_id] = {"num_GPUs": 1, "is_running": False, "job_priority": 999,
                              "tracked_metrics": {"attained_service": 0}}
            next_id += 1
        done = [j for j in a_jobs if a_jobs[j]["is_running"] and rng.random() < 0.15]
        for d, st in ((a_jobs, mine), (b_jobs, theirs)):
            for j in done:
                apply(d, st.gpu_df, [j], {})
                del d[j]
        order = las_order(a_jobs)
        assert [j for j, _ in order] == [j for j, _ in las_order(b_jobs)]
        stop, launch = policy.place(SimpleNamespace(active_jobs=a_jobs), mine,
                                    {"job_order": order})
        b_stop, b_launch = default_placement(b_jobs, las_order(b_jobs), theirs.gpu_df)
        assert sorted(stop) == sorted(b_stop), rnd
        assert sorted(launch) == sorted(b_launch), rnd
        preemptions += len(stop)
        apply(a_jobs, mine.gpu_df, stop, launch)
        apply(b_jobs, theirs.gpu_df, b_stop, b_launch)
        for d in (a_jobs, b_jobs):          # attained service grows while running
            for j, job in d.items():
                if job["is_running"]:
                    job["tracked_metrics"]["attained_service"] += 300
    assert preemptions > 0


def test_multi_gpu_jobs_consolidated_moves_and_a_new_node():
    cl = blox_cluster(2, 4)
    active = {10: {"num_GPUs": 4, "is_running": False, "placement_preference": "consolidated"},
              11: {"num_GPUs": 2, "is_running": False},
              12: {"num_GPUs": 6, "is_running": False}}
    policy = AllocPlacement(solver="cpsat" if solvers()["cpsat"].available else "milp",
                            time_limit=5)
    stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl,
                                {"job_order": [(10, {}), (11, {}), (12, {})]})
    assert not stop and set(launch) == {10, 11}
    assert len({g // 4 for g in launch[10]}) == 1
    apply(active, cl.gpu_df, stop, launch)
    # job 12 now ranks first: it needs 6 GPUs; the lowest-ranked job (10, 4 GPUs)
    # stops for it, and the 2 free GPUs do the rest (11 keeps running)
    stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl,
                                {"job_order": [12, 11, 10]})
    assert stop == [10] and list(launch) == [12] and len(launch[12]) == 6
    apply(active, cl.gpu_df, stop, launch)
    # a new node joins; job 10 fits there
    cl.gpu_df += [{"GPU_ID": 8 + k, "Local_GPU_ID": k, "Node_ID": 2, "IN_USE": False,
                   "JOB_IDS": None} for k in range(4)]
    stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl,
                                {"job_order": [12, 10, 11]})
    assert not stop and launch == {10: [8, 9, 10, 11]}


def test_bad_blox_input_is_one_line():
    policy = AllocPlacement()
    cl = SimpleNamespace(server_map={}, gpu_df=[{"GPU_ID": 0, "Node_ID": 0}])
    with pytest.raises(InputError, match="missing column 'Local_GPU_ID'"):
        policy.place(SimpleNamespace(active_jobs={}), cl, {"job_order": []})
    policy = AllocPlacement()
    with pytest.raises(InputError, match="missing column 'num_GPUs'"):
        policy.place(SimpleNamespace(active_jobs={1: {"is_running": False}}),
                     blox_cluster(1, 2), {"job_order": []})


def test_a_pandas_gpu_df():
    pd = pytest.importorskip("pandas")
    cl = blox_cluster(2, 2)
    cl.gpu_df = pd.DataFrame(cl.gpu_df)
    active = {0: {"num_GPUs": 1, "is_running": False}, 1: {"num_GPUs": 2, "is_running": False}}
    stop, launch = AllocPlacement().place(SimpleNamespace(active_jobs=active), cl,
                                          {"job_order": [(1, {}), (0, {})]})
    assert not stop and sorted(launch) == [0, 1]


# ------------------------------------------------ settings pass through
def test_objective_and_every_session_setting_pass_through():
    p = AllocPlacement(solver="milp", objective="jobs", time_limit=3, seed=5, move_cost=0.5,
                       max_moves=1)
    p.place(SimpleNamespace(active_jobs={0: {"num_GPUs": 1, "is_running": False}}),
            blox_cluster(1, 2), {"job_order": [0]})
    s = p.session
    assert (s.solver, s.objective, s.time_limit, s.seed, s.move_cost, s.max_moves) == \
        ("milp", "jobs", 3, 5, 0.5, 1)
    assert p.last.allocation.objective == "jobs"


@pytest.mark.parametrize("kw,msg", [
    (dict(solvr="best-fit"), "unknown session setting 'solvr'"),
    (dict(objective="nope"), "unknown objective 'nope'"),
    (dict(solver="best-fit", options={"x": 1}), "unknown option 'x'"),
    (dict(gpu_keys={}), "'gpu_keys' is the adapter's own"),
    (dict(reconcile="sometimes"), "reconcile: expected one of changes, full"),
    (dict(solver="nope"), "unknown solver 'nope'"),
])
def test_bad_settings_fail_when_the_policy_is_made(kw, msg):
    with pytest.raises(InputError, match=msg):
        AllocPlacement(**kw)


# ------------------------------------------- reconcile follows what changed
def run_las(policy, seed, rounds=30, drift=0.3):
    """LAS rounds of 1, 2 and 4-GPU jobs with arrivals, completions and (with
    probability ``drift``) a job Blox suspends by itself; the decisions."""
    rng = random.Random(seed)
    cl, active, out, nid = blox_cluster(4, 4), {}, [], 0
    for rnd in range(rounds):
        for _ in range(rng.randint(0, 3)):
            active[nid] = {"num_GPUs": rng.choice([1, 1, 2, 4]), "is_running": False,
                           "job_priority": 999, "tracked_metrics": {"attained_service": 0}}
            nid += 1
        running = sorted(j for j in active if active[j]["is_running"])
        for j in running:
            if rng.random() < 0.15:
                apply(active, cl.gpu_df, [j], {})
                del active[j]
        running = sorted(j for j in active if active[j]["is_running"])
        if running and rng.random() < drift:
            apply(active, cl.gpu_df, [rng.choice(running)], {})      # not the policy's doing
        stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl,
                                    {"job_order": las_order(active)})
        out.append((sorted(stop), sorted(launch.items())))
        apply(active, cl.gpu_df, stop, launch)
        for job in active.values():
            if job["is_running"]:
                job["tracked_metrics"]["attained_service"] += 300 * job["num_GPUs"]
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_reconciling_what_changed_decides_as_a_full_reconcile(seed):
    changes, full = AllocPlacement(), AllocPlacement(reconcile="full")
    assert run_las(changes, seed) == run_las(full, seed)
    assert changes.session._consistent() and full.session._consistent()
    assert sorted(changes.session.running) == sorted(full.session.running)


def test_only_the_jobs_blox_changed_are_reconciled():
    p = AllocPlacement()
    cl = blox_cluster(2, 4)
    active = {j: {"num_GPUs": 2, "is_running": False} for j in range(4)}
    stop, launch = p.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [0, 1, 2, 3]})
    apply(active, cl.gpu_df, stop, launch)
    p.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [0, 1, 2, 3]})
    assert p.last_reconciled is None                 # Blox did what it was told
    apply(active, cl.gpu_df, [2], {})                # Blox suspends job 2 itself
    stop, launch = p.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [0, 1, 2, 3]})
    assert p.last_reconciled.stopped == (2,) and not p.last_reconciled.started
    assert launch == {2: [4, 5]} or 2 in launch
    apply(active, cl.gpu_df, stop, launch)
    p.reconcile_all()                                # one full statement on request
    p.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [0, 1, 2, 3]})
    assert p.last_reconciled is not None and not p.last_reconciled.stopped


def test_a_partial_reconcile_leaves_the_other_jobs_alone():
    from alloc import Cluster, Job, Server, Session
    s = Session(Cluster((Server("s0", 8000, 8000, 4),)), solver="best-fit")
    for j in "abc":
        s.submit(Job(j, 1))
    s.step()
    gpus = {j: [g.gpu for g in s.jobs[j].current.gpus] for j in "abc"}
    r = s.reconcile({}, stopped=["a"])
    assert r.stopped == ("a",) and s.jobs["b"].current is not None
    r = s.reconcile({"a": ["s0/gpu3"]}, stopped=[])
    assert r.started == ("a",) and s.jobs["c"].current is not None and gpus
    with pytest.raises(InputError, match="listed as running too"):
        s.reconcile({"a": ["s0/gpu3"]}, stopped=["a"])
    with pytest.raises(InputError, match="listed twice"):
        s.reconcile({}, stopped=["b", "b"])
    with pytest.raises(InputError, match="expected a list of job ids"):
        s.reconcile({}, stopped="b")


def test_the_preemption_step_may_prefer_a_packed_placement():
    """preempt_packed passes through: a waiting 4-GPU job stops the two jobs
    of one node (rather than the two lowest-ranked, one on each node) to run
    on one node."""
    def decide(**kw):
        cl = blox_cluster(2, 4)
        active = {j: {"num_GPUs": 2, "is_running": False} for j in range(4)}
        p = AllocPlacement(**kw)
        stop, launch = p.place(SimpleNamespace(active_jobs=active), cl,
                               {"job_order": [0, 1, 2, 3]})
        apply(active, cl.gpu_df, stop, launch)
        assert launch == {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6, 7]}
        active[4] = {"num_GPUs": 4, "is_running": False}
        return p.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [4, 0, 2, 1, 3]})
    assert decide() == ([1, 3], {4: [2, 3, 6, 7]})                  # lowest-ranked, spread
    assert decide(preempt_packed=True) == ([2, 3], {4: [4, 5, 6, 7]})   # one node


def test_an_order_from_the_registry_instead_of_blox_job_order():
    """With order="las" the adapter ranks by the GPU-seconds each job held on
    Blox's clock, whatever Blox's job_order says; srtf is refused."""
    cl = blox_cluster(1, 2)
    cl.time = 0.0
    active = {1: {"num_GPUs": 2, "is_running": False, "submit_time": 0.0}}
    policy = AllocPlacement(order="las")
    stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [1]})
    assert launch == {1: [0, 1]}
    apply(active, cl.gpu_df, stop, launch)
    cl.time = 300.0                     # job 1 has held 2 GPUs for 300 s
    active[2] = {"num_GPUs": 2, "is_running": False, "submit_time": 250.0}
    stop, launch = policy.place(SimpleNamespace(active_jobs=active), cl, {"job_order": [1, 2]})
    assert stop == [1] and launch == {2: [0, 1]}
    with pytest.raises(InputError, match="order policy 'srtf' needs duration"):
        AllocPlacement(order="srtf")
