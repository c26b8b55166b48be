"""The server index under random placements and removals: the per-server
summaries match a recount, every finder's answer matches a scan of every
server, and the State methods keep their meaning."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from alloc import Cluster, Job, Server
from alloc.model import MILLI
from alloc.problem import Assign, compile_problem
from alloc.engines.greedy import rules as R, state as G
from alloc.engines.greedy.index import FIRST, FIT, GPUS, WHOLE, Finder, fit_tops, leftover
from heuristic_instances import problems


def recount(st: G.State, s: int):
    """Whole free GPUs, free milli, largest share and fullest inner nodes of s."""
    p = st.p
    gl = [int(st.gfree[g]) for g in st.gpus_of(s)]
    out = [sum(f == MILLI for f in gl), sum(gl), max(gl, default=0)]
    for level in st.lay.levels:
        per: dict[int, int] = {}
        for g in st.gpus_of(s):
            per.setdefault(int(p.domain[level][g]), 0)
            per[int(p.domain[level][g])] += st.gfree[g] == MILLI
        out.append(max(per.values(), default=0))
    return out


def summaries(st: G.State, s: int):
    return [st.whole[s], st.gsum[s], st.share[s]] + [st.dmax[lv][s] for lv in st.lay.levels]


def scan(st: G.State, sh, rule: str):
    """The finder's answer by a scan of every server."""
    ok = [s for s in range(st.S) if st.passes(sh, s)]
    if not ok:
        return None
    if rule == FIRST:
        return ok[0]
    if rule == GPUS:
        return min(ok, key=lambda s: (st.gsum[s], s))
    if rule == WHOLE:
        return min(ok, key=lambda s: (st.whole[s], s))
    return min(ok, key=lambda s: (leftover(st.lay, s, _free_key(st, s), sh), s))


def _free_key(st, s):
    a, b, g, _ = st.lay.weights[st.lay.cls[s]]
    return a * st.cpu_l[s] + b * st.mem_l[s] + g * st.gsum[s]


def _class_tops(st, sh):
    """Each allowed class's ``fit`` finder's top, as `fit_tops` gives them."""
    out = []
    for c in sh.classes:
        f = Finder(st, sh, FIT, c)
        s = f.top()
        if s is not None:
            out.append((f.heap[0] // st.S, s, c))
    return out


def _fit_answer(st, sh):
    cands = R.fit_candidates(st, sh)
    if not cands:
        return None
    return min((R.fit_score(st, sh, c), c[1]) for c in cands)[1]


@settings(max_examples=60)
@given(problems(max_servers=10, max_jobs=30), st.randoms(use_true_random=False))
def test_index_matches_a_scan_under_random_changes(problem, rnd):
    st_ = G.State(problem)
    jobs = list(problem.pending)
    shapes = {st_.shape(j, o).key: st_.shape(j, o) for j in jobs
              for o in range(len(problem.options[j]))}
    for step in range(3 * len(jobs)):
        if st_.assign and rnd.random() < 0.3:
            st_.remove(rnd.choice(sorted(st_.assign)))
        else:
            free = [j for j in jobs if j not in st_.assign]
            if not free:
                continue
            j = rnd.choice(free)
            o = rnd.randrange(len(problem.options[j]))
            pick = rnd.choice([R.first_fit, R.best_fit])
            a = pick(st_, j, o)
            if a is not None:
                st_.place(j, a, o)
        if step % 5:
            continue
        for s in range(problem.S):
            assert summaries(st_, s) == recount(st_, s)
        for sh in shapes.values():
            for rule in (FIRST, GPUS):
                assert st_.finder(sh, rule).top() == scan(st_, sh, rule), rule
            assert _fit_answer(st_, sh) == scan(st_, sh, FIT)
            assert fit_tops(st_, sh) == _class_tops(st_, sh)


@settings(max_examples=40)
@given(problems(max_servers=10, max_jobs=30), st.randoms(use_true_random=False))
def test_indexed_spread_matches_the_scan(problem, rnd):
    st_ = G.State(problem)
    for j in problem.pending:
        if rnd.random() < 0.5:
            a = R.first_fit(st_, j, 0)
            if a is not None:
                st_.place(j, a, 0)
    for j in problem.pending:
        if problem.jobs[j].locality == "rack":
            continue
        for o in range(len(problem.options[j])):
            got = st_.try_spread(j, o)
            want = st_._spread_scan(j, o, None) if problem.jobs[j].gpus >= 2 \
                and problem.jobs[j].gpu_milli == MILLI \
                and problem.jobs[j].locality not in ("server", "socket", "switch") else None
            assert got == want


def test_reassign_and_copy_keep_the_index():
    cl = Cluster(tuple(Server(f"s{i}", 16000, 65536, 4, "V100") for i in range(3)))
    jobs = [Job(f"j{k}", gpus=1, cpu=2000, mem=8192) for k in range(6)]
    p = compile_problem(cl, jobs)
    st_ = G.State(p)
    for j in range(6):
        st_.place(j, R.first_fit(st_, j, 0), 0)
    assert [st_.whole[s] for s in range(3)] == [0, 2, 4]
    sh = st_.shape(0, 0)
    f = st_.finder(sh, GPUS)
    assert f.top() == 1                      # fewest free milli-GPU that fits
    # a bigger CPU share on server 1 for both of its jobs: nothing else fits there
    new = [(j, Assign(st_.assign[j].gpus, ((1, 7500),), ((1, 8192),)), 0) for j in (4, 5)]
    st_.reassign(new)
    assert st_.cpu_l[1] == 1000 and int(st_.cpu[1]) == 1000
    assert f.top() == 2 and st_.finder(sh, FIRST).top() == 2
    cp = st_.copy()
    cp.remove(4)
    assert cp.finder(cp.shape(0, 0), FIRST).top() == 1
    assert st_.finder(sh, FIRST).top() == 2  # the original is untouched


def test_state_methods_keep_their_meaning():
    cl = Cluster((Server("a", 8000, 65536, 4, "V100", sockets=2),
                  Server("b", 8000, 65536, 4, "P100", sockets=2),
                  Server("c", 8000, 65536, 0)), levels=("server", "socket", "gpu"))
    jobs = [Job("x", gpus=2, cpu=1000, mem=1, gpu_types=("P100",), locality="socket"),
            Job("y", gpus=1, gpu_milli=300, cpu=1000, mem=1),
            Job("z", gpus=0, cpu=8000, mem=1)]
    p = compile_problem(cl, jobs)
    st_ = G.State(p)
    assert st_.gpus_on_server(0, 0) is None          # wrong GPU type
    assert st_.gpus_on_server(0, 1) == [4, 5]        # one socket of b
    assert st_.gpus_on_server(2, 2) == []            # CPU-only job anywhere
    assert st_.try_server(2, 0) is not None and st_.fits_cpu(2, 8000, 1)
    a = st_.try_server(1, 0)
    st_.place(1, a, 0)
    assert st_.free_whole(0) == [1, 2, 3] and st_.share[0] == MILLI
    y2 = Job("y2", gpus=1, gpu_milli=700, cpu=1000, mem=1)
    p2 = compile_problem(cl, jobs + [y2])
    st2 = G.State(p2)
    st2.place(1, a, 0)
    assert st2.gpus_on_server(3, 0) == [0]           # the fullest GPU that fits
    assert st2.try_spread(0, 0) is None              # socket locality never spreads
    sol = st_.solution()
    assert sol.assign == {1: a} and st_.value() > 0
    st_.remove(1)
    assert st_.free_whole(0) == [0, 1, 2, 3] and not st_.assign


def test_finders_survive_dropping_the_logs(monkeypatch):
    monkeypatch.setattr(G, "LOG_LIMIT", 5)
    cl = Cluster(tuple(Server(f"s{i}", 16000, 65536, 2, "V100") for i in range(4)))
    jobs = [Job(f"j{k}", gpus=1, cpu=1000, mem=1) for k in range(8)]
    p = compile_problem(cl, jobs)
    st_ = G.State(p)
    rnd = random.Random(3)
    for _ in range(200):
        j = rnd.randrange(8)
        if j in st_.assign:
            st_.remove(j)
        else:
            a = R.best_fit(st_, j, 0)
            if a is not None:
                st_.place(j, a, 0)
        sh = st_.shape(0, 0)
        assert len(st_.log) <= 5 + 8 * 4 + 2
        assert st_.finder(sh, FIRST).top() == scan(st_, sh, FIRST)
        assert st_.finder(sh, GPUS).top() == scan(st_, sh, GPUS)
        assert _fit_answer(st_, sh) == scan(st_, sh, FIT)


def test_soft_targets_follow_whole_free_gpus():
    from alloc.solvers.synergy.packers import ProblemPacker
    cl = Cluster(tuple(Server(f"s{i}", 16000, 65536, 4, "V100") for i in range(4)))
    jobs = [Job(f"j{k}", gpus=1, cpu=1000, mem=1) for k in range(6)]
    p = compile_problem(cl, jobs)
    P = ProblemPacker(p)
    P.capped = {j: 0 for j in range(6)}
    P.soft[2] = P.soft[3] = 1                       # as if they held revertible jobs
    for j, s in ((0, 3), (1, 3), (2, 2)):
        P.place(j, 0, P.st.try_server(j, s, 0))
    got = list(P.soft_targets(5))
    assert got == [3, 2]                             # 2 whole free GPUs before 3
    f = Finder(P.st, P.st.shape(5, 0), WHOLE)
    assert f.top() == 3 and list(f.ordered()) == [3, 2, 0, 1]
    assert f.top() == 3                              # entries put back


def _many_classes(seed: int):
    """40 servers of about 30 classes and 120 jobs of varied CPU and memory."""
    rng = random.Random(seed)
    cl = Cluster(tuple(Server(f"s{i}", rng.choice((16, 24, 32, 64)) * 1000,
                              rng.choice((128, 256, 512)) * 1000, rng.choice((2, 4, 8)),
                              rng.choice(("V100", "K80"))) for i in range(40)))
    jobs = [Job(f"j{k}", gpus=g, cpu=rng.randint(1, 12) * 1000 * g,
                mem=rng.randint(1, 12) * 8000 * g,
                gpu_types=(rng.choice(("V100", "K80")),) if rng.random() < 0.2 else ())
            for k, g in enumerate(rng.choices((1, 2, 4, 8), (70, 10, 15, 5), k=120))]
    return compile_problem(cl, jobs, "gpus")


def _best_fits(problem):
    st_ = G.State(problem)
    out = []
    for j in problem.pending:
        a = R.best_fit(st_, j, 0)
        if a is not None:
            st_.place(j, a, 0)
        out.append(None if a is None else (a.gpus, a.cpu, a.mem))
    return out


def test_best_fit_by_one_pass_equals_the_class_finders(monkeypatch):
    for seed in range(3):
        problem = _many_classes(seed)
        assert len(G.State(problem).lay.cap) >= R.FIT_SCAN_CLASSES
        scanned = _best_fits(problem)
        monkeypatch.setattr(R, "FIT_SCAN_CLASSES", 10 ** 9)       # the finders only
        assert _best_fits(problem) == scanned
        monkeypatch.undo()
