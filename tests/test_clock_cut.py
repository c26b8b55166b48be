"""An answer says when the clock, not the input alone, shaped it."""
import warnings

from alloc import Cluster, Job, Server, allocate
from alloc.deadline import Deadline, watched


def test_watched_records_a_spent_deadline_only():
    with watched() as cut:
        assert Deadline.after(60).left() > 0 and not Deadline.after(60).expired()
    assert cut == [False]
    with watched() as cut:
        spent = Deadline.after(60).share(0.0)
        assert spent.left() == 0.0
    assert cut == [True]
    assert Deadline.after(60).share(0.0).expired()       # outside a block: nothing kept


def _call():
    cluster = Cluster(tuple(Server(f"s{i}", 16000, 131072, 4, "V100") for i in range(6)))
    jobs = [Job(f"j{i}", 1 + i % 4, cpu=1000 * (1 + i % 3), mem=8192) for i in range(40)]
    return cluster, jobs


def test_exact_call_with_time_reports_no_cut():
    c, jobs = _call()
    a = allocate(c, jobs, solver="milp", objective="jobs", time_limit=20)
    assert a.status.value == "optimal" and "clock_cut" not in a.stats


def test_exact_call_out_of_time_says_so():
    c, jobs = _call()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = allocate(c, jobs, solver="milp", objective="jobs", time_limit=0.01)
    assert a.stats.get("clock_cut") is True


def test_the_first_heuristics_run_to_three_quarters_of_the_time(monkeypatch):
    """The exact family's first heuristics (the strongest at scale among
    them) finish up to three quarters of the budget: one that needs 55-60 %
    of it to answer is not cut at half, while the model's phases, which
    start from its answer, keep the rest."""
    import time

    from alloc import registry
    from alloc.engines.configuration import driver
    limit, t_call = 2.0, [0.0]
    patient, caps = _patient(0.55, limit, t_call)
    monkeypatch.setattr(registry, "_EXTRA", dict(registry._EXTRA))
    registry.register("patient", patient, capabilities=caps)
    monkeypatch.setattr(driver, "warm_heuristics", lambda problem, need=None: (["patient"], []))
    c, jobs = _call()
    t_call[0] = time.perf_counter()
    a = allocate(c, jobs, solver="milp", objective="jobs", time_limit=limit)
    assert a.stats["heuristics"]["patient"] > 0


def _patient(share: float, limit: float, t_call: list):
    """A heuristic that answers as best fit does once ``share`` of the call
    has passed, if its deadline lets it wait that long; else nothing."""
    import time

    from alloc import registry
    from alloc.problem import Solution
    best_fit = registry.get_solver("best-fit")

    def patient(problem, *, deadline, seed=0):
        while time.perf_counter() < t_call[0] + share * limit:
            if deadline.expired():
                return Solution({})
            time.sleep(0.01)
        return best_fit.solve(problem, deadline=deadline, seed=seed)
    return patient, sorted(best_fit.capabilities)


