"""The conformance suite every registered solver must pass.

:func:`check_solver` runs one solver on one input and returns what it got
wrong (empty list = conforms):

* the invariants of the design (no over-commit, gang, GPU type, locality,
  tenancy, running jobs kept unless moves are allowed; :func:`alloc.violations`);
* no input mutation; the same input and seed give the same output;
* honest status (a heuristic never claims ``optimal`` or ``infeasible``;
  every reported bound is at least the value; ``optimal`` only with a bound
  the value meets);
* the value recomputed from the placements;
* the deadline: the call returns within ``time_limit * 1.1 + 0.5`` s;
* an unknown option is refused with a ``ValueError`` naming it.

:func:`check_across` adds the cross-solver checks on one input: exact solvers
agree on a proven optimum and nobody beats it, every reported bound is at least
every solver's value, and an exact solver (solving the problem as given, or
one that reports the heuristics it ran) is never below a heuristic that
applies.  `instances` is a hypothesis strategy of small random inputs over
everything the API accepts: profiles with random grids, GPU speeds, span
factors and scaling curves; running jobs; elastic jobs; tenants with cells,
guaranteed and opportunistic jobs (hypothesis is needed only for it).

A third-party backend registered with :func:`alloc.register` runs the same
suite: ``check_solver("mine", cluster, jobs)``.
"""
from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Sequence

from .check import violations
from .errors import SolverError
from .model import MILLI, Allocation, Cluster, Job, Status
from .objectives import allocation_value
from .registry import get_solver, solvers
from .solve import allocate, needed_capabilities

TOL = 1e-6


def applicable_solvers(cluster: Cluster, jobs: Sequence[Job], *, exact: bool | None = None,
                       preempt: str | None = None):
    """Available solvers whose declared capabilities cover the input (and the
    preemption rule)."""
    need = needed_capabilities(cluster, jobs, preempt)
    return [n for n, s in solvers().items()
            if s.available and need <= s.capabilities and (exact is None or s.exact == exact)]


def check_solver(name: str, cluster: Cluster, jobs: Sequence[Job], *, objective="throughput",
                 seed: int = 0, time_limit: float = 5.0, max_moves: int | None = None,
                 move_cost: float | None = None, order: Sequence[str] | None = None,
                 preempt: str | None = None) -> tuple[list[str], Allocation | None]:
    """What solver ``name`` gets wrong on one input, and its allocation
    (``order`` and ``preempt`` as [allocate][alloc.allocate] takes them)."""
    info = get_solver(name)
    jobs = list(jobs)
    before = (copy.deepcopy(cluster), copy.deepcopy(jobs))
    kw = dict(solver=name, objective=objective, seed=seed, time_limit=time_limit,
              max_moves=max_moves, move_cost=move_cost, order=order, preempt=preempt)
    t0 = time.perf_counter()
    try:
        a = allocate(cluster, jobs, check=False, **kw)
    except SolverError as exc:
        return [f"{name}: raised {exc}"], None
    wall = time.perf_counter() - t0
    out: list[str] = []
    if wall > time_limit * 1.1 + 0.5:
        out.append(f"{name}: took {wall:.2f} s for a time limit of {time_limit} s")
    if (cluster, jobs) != before:
        out.append(f"{name}: mutated its input")
    allowed = None if (max_moves is None and move_cost is not None) else (max_moves or 0)
    out += [f"{name}: {v}" for v in violations(cluster, jobs, a, max_moves=allowed,
                                               order=order, preempt=preempt)]
    if preempt == "order":
        out += [f"{name}: {v}" for v in order_preemption_problems(jobs, a, order)]
    moves = (move_cost or 0.0) * len(a.moved)
    if abs(allocation_value(objective, jobs, a.placements) - moves - a.value) > TOL * max(1, abs(a.value)):
        out.append(f"{name}: value {a.value} is not the placement's value")
    out += _status_problems(name, info.exact, a)
    again = allocate(cluster, jobs, check=False, **kw)
    if _key(again) != _key(a) and not (info.exact and a.status is not Status.OPTIMAL):
        out.append(f"{name}: not deterministic for seed {seed}")
    try:
        allocate(cluster, jobs, check=False, solver=name, time_limit=time_limit,
                 no_such_option_=1)
        out.append(f"{name}: accepted an unknown option")
    except ValueError as exc:
        if "no_such_option_" not in str(exc):
            out.append(f"{name}: unknown option refused without naming it: {exc}")
    return out, a


def order_preemption_problems(jobs: Sequence[Job], a: Allocation, order) -> list[str]:
    """What preemption by order got wrong beyond [violations][alloc.check.violations]
    (``stats["preempted_for"]`` names the job each victim was stopped for):
    a victim stopped for a job the order does not rank above it or that is
    not placed, and -- the lowest-ranked go first -- a victim stopped for a
    one-GPU job while a job ranked below the victim, on the same servers and
    holding at least as many whole GPUs, CPU and memory, kept running."""
    from .check import placement_servers
    rank = {j: k for k, j in enumerate(order or ())}
    by_id = {j.id: j for j in jobs}
    placed = {p.job: p for p in a.placements}
    out = []
    for v, b in (a.stats.get("preempted_for") or {}).items():
        if rank.get(b, len(rank)) >= rank.get(v, len(rank)):
            out.append(f"job {v!r} stopped for {b!r}, which the order does not rank above it")
        if b not in placed:
            out.append(f"job {v!r} stopped for {b!r}, which is not placed")
        cur = by_id[v].current
        for k, p in placed.items():
            o = by_id[k]
            if o.current is None or not p.same_as(o.current) or rank.get(k, len(rank)) <= \
                    rank.get(v, len(rank)):
                continue
            if placement_servers(p) == placement_servers(cur) and p.gpus and cur.gpus and \
                    len(p.gpus) >= len(cur.gpus) and o.gpu_milli == MILLI and \
                    p.total_cpu >= cur.total_cpu and p.total_mem >= cur.total_mem and \
                    by_id[b].gpus == 1 and by_id[b].gpu_milli == MILLI:
                out.append(f"job {v!r} stopped for {b!r} while {k!r}, ranked lower on the "
                           f"same server, kept running")
    return out


def _status_problems(name: str, exact: bool, a: Allocation) -> list[str]:
    out = []
    if not exact and a.status in (Status.OPTIMAL, Status.INFEASIBLE):
        out.append(f"{name}: a heuristic claimed {a.status.value}")
    if a.bound is not None and a.value > a.bound + TOL * max(1, abs(a.bound)):
        out.append(f"{name}: value {a.value} above its bound {a.bound}")
    if a.status is Status.OPTIMAL and a.bound is None:
        out.append(f"{name}: claims optimal without a bound")
    if a.status is Status.OPTIMAL and a.bound is not None and \
            a.value < a.bound - TOL * max(1, abs(a.bound)):
        out.append(f"{name}: claims optimal {a.value} below its bound {a.bound}")
    return out


def _key(a: Allocation):
    return (sorted((p.job, tuple(sorted((g.gpu, g.milli) for g in p.gpus)),
                    tuple(sorted(p.cpu.items())), tuple(sorted(p.mem.items())))
                   for p in a.placements), a.status)


def check_against_optimum(results: dict[str, Allocation], exact_names: Sequence[str]) -> list[str]:
    """Exact solvers that proved optimality agree; nobody beats a proven optimum."""
    out = []
    proven = {n: a.value for n, a in results.items()
              if n in exact_names and a.status is Status.OPTIMAL}
    if proven:
        ref_name, ref = max(proven.items(), key=lambda kv: kv[1])
        for n, v in proven.items():
            if abs(v - ref) > 1e-5 * max(1, abs(ref)):
                out.append(f"{n} proved {v} optimal but {ref_name} proved {ref}")
        for n, a in results.items():
            if a.value > ref + 1e-5 * max(1, abs(ref)):
                out.append(f"{n} found {a.value}, above the proven optimum {ref}")
    return out


def check_across(results: dict[str, Allocation]) -> list[str]:
    """The cross-solver checks on one input (see the module notes)."""
    reg = solvers()
    exact = [n for n in results if reg[n].solves_problem_as_given]
    out = check_against_optimum(results, exact)
    for n, a in results.items():
        if a.bound is None:
            continue
        for m, b in results.items():
            if b.value > a.bound + 1e-5 * max(1.0, abs(a.bound)):
                out.append(f"{m} found {b.value}, above {n}'s bound {a.bound}")
    heur = {n: a for n, a in results.items() if not reg[n].exact}
    # exact solvers that say which heuristics they ran promise to be above them
    exact = exact + [n for n, a in results.items() if reg[n].exact and n not in exact
                     and "heuristics" in a.stats]
    for n in exact:
        for m, b in heur.items():
            if results[n].value < b.value - 1e-5 * max(1.0, abs(b.value)):
                out.append(f"exact {n} returned {results[n].value}, below heuristic {m}'s "
                           f"{b.value}")
    return out


# ------------------------------------------------------------------ strategy
def _profiles(st, gpu_types):
    """Hypothesis strategy of profiles within the model schema."""
    from .model import Profile, frozen_map

    dec = st.integers(1, 300).map(lambda k: k / 100)

    @st.composite
    def build(draw, name):
        cpu = sorted(draw(st.sets(st.sampled_from([500, 1000, 2000, 3000, 4000, 6000]),
                                  min_size=1, max_size=3)))
        mem = sorted(draw(st.sets(st.sampled_from([8192, 16384, 32768, 65536, 131072]),
                                  min_size=1, max_size=3)))
        tput = tuple(tuple(draw(st.one_of(st.none(), dec)) for _ in mem) for _ in cpu)
        speed = {t: draw(dec) for t in gpu_types if draw(st.booleans())}
        levels = draw(st.sets(st.sampled_from(["socket", "server", "rack", "cluster"])))
        span = {lv: draw(st.integers(20, 100).map(lambda k: k / 100)) for lv in levels}
        scaling = {1: 1.0, 2: draw(st.integers(100, 200).map(lambda k: k / 100))} \
            if draw(st.booleans()) else {}
        return Profile(name, tuple(cpu), tuple(mem), tput, frozen_map(speed), frozen_map(span),
                       frozen_map(scaling))
    return build


def instances(max_servers: int = 3, max_jobs: int = 6, models: Sequence[str] = ("res18", "bert",
              "alexnet", "res50"), tenancy: bool = False, running: bool = False,
              random_profiles: bool = False, elastic: bool = False):
    """Hypothesis strategy of small (cluster, jobs) pairs: whole and shared
    GPUs, CPU-only jobs, GPU types, locality levels, profile grids from
    ``models/`` or random ones, running jobs (``current`` from a valid
    placement), elastic jobs, tenants (half the draws when ``tenancy``)."""
    from hypothesis import assume
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        cluster = draw(_clusters(st, max_servers))
        types = list(cluster.gpu_types)
        prof = _profiles(st, types)
        max_g = max(s.gpus for s in cluster.servers)
        jobs = [draw(_job(st, k, cluster, types, max_g, models, prof, random_profiles, elastic))
                for k in range(draw(st.integers(1, max_jobs)))]
        from .validate import model_problems
        if tenancy and draw(st.booleans()):
            cluster, jobs = draw(_tenants(st, cluster, jobs))
        assume(not model_problems(cluster, jobs))
        if running:
            jobs = _make_running(cluster, jobs, draw(st.sets(st.integers(0, len(jobs) - 1))))
        return cluster, jobs

    return build()


def _tenants(st, cluster: Cluster, jobs: list[Job]):
    """One or two tenants with server or GPU cells of the cluster's types;
    each GPU job joins one at random, guaranteed or opportunistic."""
    from .model import Cell, Tenant, frozen_map

    @st.composite
    def build(draw):
        types = sorted({s.gpu_type for s in cluster.servers if s.gpus})
        names = [f"vc{v}" for v in range(draw(st.integers(1, 2)))]
        tenants = {v: Tenant(v, (Cell(draw(st.sampled_from(["server", "gpu"])),
                                      draw(st.integers(1, 2)), draw(st.sampled_from(types))),))
                   for v in names}
        out = []
        for j in jobs:
            if j.gpus and draw(st.booleans()):
                j = replace(j, tenant=draw(st.sampled_from(names)), guaranteed=draw(st.booleans()))
            out.append(j)
        return replace(cluster, tenants=frozen_map(tenants)), out
    return build()


def _clusters(st, max_servers):
    from .model import Server

    @st.composite
    def build(draw):
        deep = draw(st.booleans())
        levels = ("rack", "server", "socket", "gpu") if deep else ("server", "gpu")
        servers = []
        for i in range(draw(st.integers(1, max_servers))):
            g = draw(st.sampled_from([0, 2, 4, 4, 8]) if i else st.sampled_from([2, 4, 8]))
            servers.append(Server(f"s{i}", draw(st.sampled_from([8000, 16000, 24000])),
                                  draw(st.sampled_from([65536, 262144, 524288])), g,
                                  draw(st.sampled_from(["V100", "P100"])) if g else None,
                                  rack=f"r{i % 2}" if deep else None,
                                  sockets=2 if deep and g else 1))
        return Cluster(tuple(servers), levels)
    return build()


def _job(st, k, cluster, types, max_g, models, prof, random_profiles, elastic):
    from .profiles import load_model

    @st.composite
    def build(draw):
        kind = draw(st.sampled_from(["whole", "whole", "share", "cpu"]))
        model = profile = None
        if kind == "cpu":
            g, milli = 0, 1000
        elif kind == "share":
            g, milli = 1, draw(st.sampled_from([100, 250, 500, 700]))
        else:
            g, milli = draw(st.integers(1, max_g)), 1000
            if random_profiles and draw(st.booleans()):
                model = f"p{k}"
                profile = draw(prof(model))
            else:
                model = draw(st.sampled_from([None, *models]))
                profile = load_model(model) if model else None
        loc = None
        if g > 1 and milli == 1000:
            deep = "socket" in cluster.levels
            loc = draw(st.sampled_from([None, "server"] + (["socket", "rack"] if deep else [])))
        gt = tuple(draw(st.lists(st.sampled_from(types), max_size=1, unique=True))) if g else ()
        per = max(g, 1)
        lo = draw(st.integers(1, g)) if elastic and g > 1 and draw(st.booleans()) else None
        return Job(f"j{k}", gpus=g, gpu_milli=milli,
                   cpu=per * draw(st.sampled_from([1000, 2000, 3000])),
                   mem=per * draw(st.sampled_from([16384, 64000])),
                   gpu_types=gt, locality=loc, model=model, profile=profile,
                   weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5])),
                   priority=draw(st.sampled_from([0, 0, 1])), min_gpus=lo)
    return build()


def _make_running(cluster: Cluster, jobs: list[Job], picked) -> list[Job]:
    """``jobs`` with those of ``picked`` that a greedy placement fits running there."""
    sub = [jobs[i] for i in sorted(picked) if not jobs[i].elastic]
    if not sub:
        return jobs
    a = allocate(cluster, sub, solver="best-fit" if not cluster.tenants else "hived")
    placed = {p.job: replace(p, throughput=0.0) for p in a.placements}
    return [replace(j, current=placed[j.id]) if j.id in placed else j for j in jobs]


__all__ = ["applicable_solvers", "check_across", "check_against_optimum", "check_solver",
           "instances", "order_preemption_problems"]
