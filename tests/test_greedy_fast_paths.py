"""The greedy state's and Synergy packer's short paths give what the long ones
give: numpy copies kept in step with the change log, assignments built by
their slots, exact near-tie comparison without fractions, a revert in place,
the whole-GPU finders' short catch-up."""
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from alloc.problem import Assign
from alloc.engines.greedy import rules as R, state as G
from alloc.engines.greedy.index import GPUS, WHOLE
from alloc.solvers.synergy.packers import ProblemPacker
from alloc.solvers.synergy.tune import _choices
from heuristic_instances import problems


def _random_steps(st_, problem, rnd, steps):
    jobs = list(problem.pending)
    for _ in range(steps):
        if st_.assign and rnd.random() < 0.3:
            st_.remove(rnd.choice(sorted(st_.assign)))
            continue
        free = [j for j in jobs if j not in st_.assign]
        if not free:
            continue
        j = rnd.choice(free)
        o = rnd.randrange(len(problem.options[j]))
        a = rnd.choice([R.first_fit, R.best_fit])(st_, j, o)
        if a is not None:
            st_.place(j, a, o)


@settings(max_examples=30, deadline=None)
@given(problems(max_servers=10, max_jobs=30), st.randoms(use_true_random=False))
def test_arrays_follow_the_lists(problem, rnd):
    st_ = G.State(problem)
    for _ in range(4):
        st_.arrays()                      # kept, then caught up from the log
        _random_steps(st_, problem, rnd, rnd.randrange(1, 8))
        arr = st_.arrays()
        for name, v in [("cpu", st_.cpu_l), ("mem", st_.mem_l), ("whole", st_.whole),
                        ("gsum", st_.gsum), ("share", st_.share), *st_.dmax.items()]:
            assert arr[name].tolist() == v, name
        assert st_.gfree.tolist() == st_.g_l
        assert st_.cpu.tolist() == st_.cpu_l and st_.mem.tolist() == st_.mem_l


@settings(max_examples=30, deadline=None)
@given(problems(max_servers=10, max_jobs=30), st.randoms(use_true_random=False))
def test_whole_finders_match_a_scan(problem, rnd):
    st_ = G.State(problem)
    shapes = [st_.shape(j, o) for j in problem.pending for o in range(len(problem.options[j]))]
    for _ in range(5):
        _random_steps(st_, problem, rnd, rnd.randrange(1, 10))
        for sh in shapes:
            ok = [s for s in range(st_.S) if st_.passes(sh, s)]
            for rule, key in ((GPUS, st_.gsum), (WHOLE, st_.whole)):
                want = min(ok, key=lambda s: (key[s], s)) if ok else None
                assert st_.finder(sh, rule).top() == want, rule


def test_assign_built_by_slots_is_an_assign():
    a = G.new_assign(((3, 1000), (4, 1000)), ((1, 4000),), ((1, 8192),))
    b = Assign(((3, 1000), (4, 1000)), ((1, 4000),), ((1, 8192),))
    assert type(a) is Assign and a == b and hash(a) == hash(b) and a.caps == ()
    assert repr(a) == repr(b)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(1, 12)), min_size=2, max_size=5))
def test_near_ties_compared_exactly(pairs):
    """Candidates with the same float score: the least exact n / D wins, then
    the lowest index (as the fraction comparison)."""
    class Lay:
        weights = [(0, 0, 0, D) for _, D in pairs]

    class State:
        lay = Lay()

    class Sh:
        c = m = k = q = 0

    cands = [(n, s, s) for s, (n, _) in enumerate(pairs)]
    want = min((Fraction(n, D), s) for s, (n, D) in enumerate(pairs))[1]
    assert R.best_candidate(State(), Sh(), cands) == want


@settings(max_examples=30, deadline=None)
@given(problems(max_servers=8, max_jobs=24), st.randoms(use_true_random=False))
def test_revert_in_place_is_remove_refit_place(problem, rnd):
    """`ProblemPacker.revert` leaves the packer as taking the job off, fitting
    it again at the capped option on the same GPUs and placing it (or
    putting it back) does."""
    packers = [ProblemPacker(problem), ProblemPacker(problem)]
    for P in packers:
        P.capped = _choices(P)[1]
    for j in problem.pending:
        o = rnd.randrange(len(problem.options[j]))
        a = packers[0].fit(j, o)
        if a is not None:
            for P in packers:
                P.place(j, o, a)
    placed = sorted(packers[0].st.assign)
    for j in (rnd.sample(placed, len(placed)) if placed else []):
        cap = packers[0].capped[j]
        packers[0].revert(j, cap)
        P = packers[1]
        old_o, old = P.remove(j)
        h = P.refit_same(j, cap, old)
        P.place(j, old_o if h is None else cap, old if h is None else h)
        a, b = packers
        assert a.st.assign == b.st.assign and a.st.option == b.st.option
        assert a.st.cpu_l == b.st.cpu_l and a.st.mem_l == b.st.mem_l
        assert a.soft == b.soft and a.free_milli() == b.free_milli()
        assert {s: set(v) for s, v in a._jobs_on.items() if v} == \
            {s: set(v) for s, v in b._jobs_on.items() if v}
        assert np.array_equal(a.st.gfree, b.st.gfree)


@settings(max_examples=40, deadline=None)
@given(problems(max_servers=8, max_jobs=24), st.randoms(use_true_random=False))
def test_a_remembered_failed_spread_is_what_the_walk_gives(problem, rnd):
    """`ProblemPacker.spread` over every server skips a walk that failed
    with no capacity grown since; the answer is the walk's, through
    placements and removals."""
    P, fresh = ProblemPacker(problem), ProblemPacker(problem)
    jobs = list(problem.pending)
    for _ in range(3 * len(jobs)):
        if P.st.assign and rnd.random() < 0.25:
            j = rnd.choice(sorted(P.st.assign))
            P.remove(j)
            fresh.remove(j)
            continue
        free = [j for j in jobs if j not in P.st.assign]
        if not free:
            break
        j = rnd.choice(free)
        o = rnd.randrange(len(problem.options[j]))
        fresh.st._spread_fail.clear()                    # the walk every time
        a = P.spread(j, o)
        assert a == fresh.spread(j, o)
        if a is None:
            a = P.fit(j, o, mode="one")
        if a is not None and rnd.random() < 0.7:
            P.place(j, o, a)
            fresh.place(j, o, a)


def test_a_failed_spread_is_tried_again_once_room_is_freed():
    from alloc import Cluster, Job, Server
    from alloc.problem import compile_problem
    cl = Cluster(tuple(Server(f"s{i}", 32000, 256000, 4, "V100") for i in range(2)))
    jobs = [Job("x", 3, cpu=3000, mem=3000), Job("y", 3, cpu=3000, mem=3000),
            Job("z", 4, cpu=4000, mem=4000)]
    P = ProblemPacker(compile_problem(cl, jobs, "gpus"))
    for j in (0, 1):
        P.place(j, 0, P.fit(j, 0, mode="one"))
    assert P.spread(2, 0) is None                # one free GPU on each server
    assert P.spread(2, 0) is None                # remembered
    P.remove(0)
    a = P.spread(2, 0)
    assert a is not None and len(a.gpus) == 4
