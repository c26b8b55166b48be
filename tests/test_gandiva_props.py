"""Gandiva's invariants, as properties over generated workloads: after every
event of a simulation the cluster's placement passes ``violations()``; a
suspended job holds no GPU; no GPU runs more jobs than the packing limit;
packed jobs fit the GPU's memory; no job is suspended for a lower-priority
one; jobs move only when moves are allowed, and every move is reported; the
same seed gives the same run."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc import violations
from alloc.model import Allocation
from alloc.sim.gandiva import SimJob, gandiva_cluster, load_models
from alloc.sim.gandiva.engine import GandivaSim

MODELS = load_models()
MEM = {"P40": 24576, "P100": 16384}
TIMING = ("wall_s", "cpu_s", "decision_ms_median", "decision_ms_p95", "checked_ms_median",
          "checked_ms_p95")


@st.composite
def workloads(draw):
    n = draw(st.integers(5, 12))
    names = sorted(MODELS.models)
    jobs = []
    for i in range(n):
        m = draw(st.sampled_from(names))
        jobs.append(SimJob(f"j{i:02d}", m, draw(st.sampled_from(MODELS.models[m].gpus)),
                           float(draw(st.integers(0, 300))), float(draw(st.integers(120, 1500))),
                           priority=draw(st.sampled_from([0, 0, 1]))))
    jobs.sort(key=lambda j: (j.arrival, j.id))
    servers = draw(st.integers(1, 3))
    return jobs, servers, draw(st.sampled_from([2, 3])), draw(st.booleans())


class Audit:
    """Checks the invariants after each event; remembers placements."""

    def __init__(self, limit: int):
        self.limit = limit
        self.before: dict = {}
        self.events = 0

    def __call__(self, sim, dec):
        self.events += 1
        sched = sim.sched
        jobs = sched.session.jobs
        now = {j: job.current for j, job in jobs.items() if job.current is not None}
        alloc = Allocation(tuple(now.values()), tuple(j for j in jobs if j not in now))
        assert not violations(sched.cluster, list(jobs.values()), alloc)
        for j in sched.suspended:                        # a suspended job holds nothing
            assert jobs[j].current is None
        per_gpu: dict = {}
        for j, p in now.items():
            for g in p.gpus:
                per_gpu.setdefault(g.gpu, []).append(j)
        for gpu, js in per_gpu.items():
            assert len(js) <= self.limit
            if len(js) > 1:                              # packing only where memory fits
                kind = sched.cluster.server(gpu.split("/")[0]).gpu_type
                assert sum(jobs[j].gpu_mem for j in js) <= MEM[kind]
        undone = {j for grp in dec.undone for j in grp}
        came = set(dec.started) | set(dec.resumed)
        for v in set(dec.suspended) - undone:            # never for a lower-priority job
            home = sched.home(v)
            for a in came:
                if sched.home(a) == home:
                    assert jobs[a].priority >= jobs[v].priority, (v, a)
        moved = {j for j, p in now.items() if j in self.before and self.before[j] is not None
                 and not p.same_as(self.before[j]) and jobs[j].gpu_milli == self.milli.get(j)}
        reported = set(dec.migrated) | {r[0] for r in dec.resized}
        restarted = (set(dec.suspended) | {j for g in dec.packed + dec.undone + dec.unpacked
                                           for j in g}) & set(dec.resumed)
        assert moved <= reported | restarted, moved - reported   # every move is reported
        if not (sim.sched.migration or sim.sched.grow_shrink):
            assert not reported
        self.before = dict(now)
        self.milli = {j: jobs[j].gpu_milli for j in now}

    milli: dict = {}


def run(jobs, servers, limit, migration, seed=0):
    audit = Audit(limit)
    sim = GandivaSim(jobs, MODELS, gandiva_cluster(servers), mode="gandiva", pack_limit=limit,
                     migration=migration, gpu_mem_capacity=MEM, audit=audit)
    res = sim.run()
    assert res.summary["unfinished"] == 0 and audit.events >= len(jobs)
    return res


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_invariants_hold_after_every_event(w):
    run(*w)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_same_seed_same_run(w):
    a, b = run(*w), run(*w)
    strip = lambda s: {k: v for k, v in s.items() if k not in TIMING}   # noqa: E731
    assert strip(a.summary) == strip(b.summary) and a.util == b.util
