"""Sessions as a state machine: random arrivals, finishes, failures, drains,
added servers, priorities, orders and rounds.  After every round the answer
passes :func:`alloc.violations` against the jobs as they were before it, no
job starts or moves onto a closed server, running jobs stay in place; a bad
event changes nothing."""
import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from alloc import Cell, Cluster, InputError, Job, Server, Session, Tenant, violations

SOLVERS = ["best-fit", "synergy-tune", "fgd", "hived", "proportional"]
MODELS = ["res18", "res50", "gnmt", "lstm", None]


class SessionMachine(RuleBasedStateMachine):
    @initialize(solver=st.sampled_from(SOLVERS), n=st.integers(2, 4),
                tenancy=st.booleans(), seed=st.integers(0, 10 ** 6))
    def start(self, solver, n, tenancy, seed):
        tenants = {}
        if tenancy and solver == "hived":
            tenants = {"vc": Tenant("vc", (Cell("server", 1),))}
        self.cluster = Cluster(tuple(Server(f"s{i}", 24000, 512000, 8, "V100")
                                     for i in range(n)), tenants=tenants)
        self.session = Session(self.cluster, solver=solver)
        self.rng = random.Random(seed)
        self.k = 0
        self.next_server = n

    def _new_job(self, n, share, model):
        self.k += 1
        if share:
            return Job(f"j{self.k}", 1, gpu_milli=self.rng.choice([250, 500]), cpu=1000,
                       mem=8000)
        kw = {}
        if self.session.cluster.tenants and self.rng.random() < 0.4:
            kw = {"tenant": "vc", "guaranteed": True, "priority": self.rng.randint(0, 3)}
        return Job(f"j{self.k}", n, cpu=3000 * n, mem=64000 * n, model=model, **kw)

    @rule(n=st.sampled_from([1, 1, 1, 2, 4, 8]), share=st.booleans(),
          model=st.sampled_from(MODELS), count=st.integers(1, 5))
    def submit(self, n, share, model, count):
        self.session.apply([{"type": "submit", "job": self._new_job(n, share, model)}
                            for _ in range(count)])

    @precondition(lambda self: self.session.jobs)
    @rule(data=st.data())
    def finish(self, data):
        jid = data.draw(st.sampled_from(sorted(self.session.jobs)))
        self.session.finish(jid)

    @precondition(lambda self: len(self.session.cluster.servers) > 1)
    @rule(data=st.data())
    def fail_server(self, data):
        open_ = [s.id for s in self.session.cluster.servers if s.id not in self.session.failed]
        if not open_:
            return
        sid = data.draw(st.sampled_from(open_))
        lost = self.session.fail_server(sid)
        assert all(self.session.jobs[j].current is None for j in lost)

    @rule(data=st.data())
    def drain(self, data):
        s = self.session
        open_ = [x.id for x in s.cluster.servers if x.id not in s.failed and x.id not in s.drained]
        if open_:
            s.drain_server(data.draw(st.sampled_from(open_)))
        elif s.drained:
            s.undrain_server(s.drained[0])

    @rule()
    def add_server(self):
        self.session.add_server(Server(f"s{self.next_server}", 24000, 512000, 8, "V100"))
        self.next_server += 1

    @precondition(lambda self: self.session.jobs)
    @rule(data=st.data(), reverse=st.booleans())
    def reorder(self, data, reverse):
        ids = list(self.session.jobs)
        if data.draw(st.booleans()):
            self.session.set_priority(data.draw(st.sampled_from(ids)),
                                      data.draw(st.integers(-1000, 1000)))
        else:
            self.session.set_order(list(reversed(ids)) if reverse else ids[: len(ids) // 2])

    @rule(kind=st.sampled_from(["finish", "fail_server", "submit_dup", "priority", "batch"]))
    def bad_event(self, kind):
        s = self.session
        before = s.to_dict()
        try:
            if kind == "finish":
                s.finish("nope")
            elif kind == "fail_server":
                s.fail_server("nope")
            elif kind == "submit_dup" and s.jobs:
                s.submit(Job(next(iter(s.jobs)), 1))
            elif kind == "priority" and s.jobs:
                s.set_priority(next(iter(s.jobs)), 10 ** 6)
            else:
                s.apply([{"type": "submit", "job": self._new_job(1, False, None)},
                         {"type": "finish", "job": "nope"}])
        except InputError as exc:
            assert "\n" not in str(exc)
        else:
            assert kind in ("submit_dup", "priority") and not s.jobs
        assert s.to_dict() == before

    @rule()
    def round(self):
        s = self.session
        before = dict(s.jobs)
        closed = set(s.drained) | set(s.failed)
        r = s.step()
        assert violations(s.cluster, list(before.values()), r.allocation, max_moves=0) == []
        for p in r.start + r.move:
            assert not (p.servers & closed), (p, closed)
        for p in r.allocation.placements:
            cur = before[p.job].current
            assert cur is None or p.same_as(cur)
        for p in r.start:
            assert s.jobs[p.job].current.same_as(p)
        for jid in r.stop:
            assert s.jobs[jid].current is None

    @invariant()
    def consistent(self):
        if hasattr(self, "session"):
            assert self.session._consistent()


TestSession = SessionMachine.TestCase
TestSession.settings = settings(max_examples=15, stateful_step_count=25, deadline=None,
                                suppress_health_check=list(HealthCheck))
