"""The conformance suite every registered solver must pass.

:func:`check_solver` runs one solver on one input and returns what it got
wrong (empty list = conforms): the invariants of the design (no over-commit,
gang, GPU type, locality, tenancy; checked by :func:`alloc.violations`), no
input mutation, determinism for a seed, honest status (a heuristic never claims
``optimal`` or ``infeasible``; an exact solver has ``value <= bound``), and the
value recomputed from the placement.  :func:`check_against_optimum` adds the
cross-solver checks: exact solvers agree on a proven optimum and no solver
beats it.  :func:`instances` is a hypothesis strategy of small random inputs
(hypothesis is needed only for it).

A third-party backend registered with :func:`alloc.register` can run the same
suite: ``check_solver("mine", cluster, jobs)``.
"""
from __future__ import annotations

import copy
from typing import Sequence

from .check import violations
from .errors import SolverError
from .model import Allocation, Cluster, Job, Status
from .objectives import allocation_value
from .solve import allocate, get_solver, needed_capabilities, solvers

TOL = 1e-6


def applicable_solvers(cluster: Cluster, jobs: Sequence[Job], *, exact: bool | None = None):
    """Available solvers whose declared capabilities cover the input."""
    need = needed_capabilities(cluster, jobs)
    return [n for n, s in solvers().items()
            if s.available and need <= s.capabilities and (exact is None or s.exact == exact)]


def check_solver(name: str, cluster: Cluster, jobs: Sequence[Job], *, objective="throughput",
                 seed: int = 0, time_limit: float = 5.0) -> tuple[list[str], Allocation | None]:
    info = get_solver(name)
    jobs = list(jobs)
    before = (copy.deepcopy(cluster), copy.deepcopy(jobs))
    out: list[str] = []
    try:
        a = allocate(cluster, jobs, solver=name, objective=objective, seed=seed,
                     time_limit=time_limit, check=False)
    except SolverError as exc:
        return [f"{name}: raised {exc}"], None
    if (cluster, jobs) != before:
        out.append(f"{name}: mutated its input")
    bad = violations(cluster, jobs, a)
    out += [f"{name}: {v}" for v in bad]
    if abs(allocation_value(objective, jobs, a.placements) - a.value) > TOL * max(1, abs(a.value)):
        out.append(f"{name}: value {a.value} is not the placement's value")
    if not info.exact and a.status in (Status.OPTIMAL, Status.INFEASIBLE):
        out.append(f"{name}: a heuristic claimed {a.status.value}")
    if a.bound is not None and a.value > a.bound + TOL * max(1, abs(a.bound)):
        out.append(f"{name}: value {a.value} above its bound {a.bound}")
    if a.status is Status.OPTIMAL and a.bound is None:
        out.append(f"{name}: claims optimal without a bound")
    again = allocate(cluster, jobs, solver=name, objective=objective, seed=seed,
                     time_limit=time_limit, check=False)
    if _key(again) != _key(a) and not (info.exact and a.status is not Status.OPTIMAL):
        out.append(f"{name}: not deterministic for seed {seed}")
    return out, a


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


# ------------------------------------------------------------------ strategy
def instances(max_servers: int = 3, max_jobs: int = 6, models: Sequence[str] = ("res18", "bert",
              "alexnet", "res50"), tenancy: bool = False):
    """Hypothesis strategy of small (cluster, jobs) pairs: whole and shared
    GPUs, CPU-only jobs, GPU types, locality levels, profile grids."""
    from hypothesis import strategies as st

    from .model import Server
    from .profiles import load_model

    @st.composite
    def build(draw):
        deep = draw(st.booleans())
        levels = ("rack", "server", "socket", "gpu") if deep else ("server", "gpu")
        n = draw(st.integers(1, max_servers))
        servers = []
        for i in range(n):
            g = draw(st.sampled_from([0, 2, 4, 4, 8]) if i else st.sampled_from([2, 4, 8]))
            servers.append(Server(f"s{i}", draw(st.sampled_from([8000, 16000, 24000])),
                                  draw(st.sampled_from([65536, 262144, 524288])), g,
                                  draw(st.sampled_from(["V100", "P100"])) if g else None,
                                  rack=f"r{i % 2}" if deep else None,
                                  sockets=2 if deep and g else 1))
        cluster = Cluster(tuple(servers), levels)
        types = list(cluster.gpu_types)
        max_g = max(s.gpus for s in servers)
        jobs = []
        for k in range(draw(st.integers(1, max_jobs))):
            kind = draw(st.sampled_from(["whole", "whole", "share", "cpu"]))
            model = None
            if kind == "cpu":
                g, milli = 0, 1000
            elif kind == "share":
                g, milli = 1, draw(st.sampled_from([100, 250, 500, 700]))
            else:
                g, milli = draw(st.integers(1, max_g)), 1000
                model = draw(st.sampled_from([None, *models]))
            loc = None
            if g > 1 and milli == 1000:
                loc = draw(st.sampled_from([None, "server"] + (["socket", "rack"] if deep else [])))
            gt = tuple(draw(st.lists(st.sampled_from(types), max_size=1, unique=True))) if g else ()
            per = max(g, 1)
            jobs.append(Job(f"j{k}", gpus=g, gpu_milli=milli,
                            cpu=per * draw(st.sampled_from([1000, 2000, 3000])),
                            mem=per * draw(st.sampled_from([16384, 64000])),
                            gpu_types=gt, locality=loc, model=model,
                            profile=load_model(model) if model else None,
                            weight=draw(st.sampled_from([1.0, 1.0, 2.0]))))
        from .validate import model_problems
        if model_problems(cluster, jobs):
            from hypothesis import assume
            assume(False)
        return cluster, jobs

    return build()
