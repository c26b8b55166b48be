"""Hypothesis strategies of small and medium inputs for the heuristics'
tests: several server classes (capacities, GPU types, sockets and switches),
CPU-only servers, racks, whole, shared and CPU-only jobs, GPU-type
restrictions, locality levels, profile grids, weights, priorities, running
jobs and explicit job orders."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import assume
from hypothesis import strategies as st

from alloc import Cluster, Job, Server, allocate, load_profile
from alloc.problem import compile_problem
from alloc.validate import model_problems

MODELS = ("res18", "bert", "res50", "alexnet", "gnmt", "transformer")
LEVELS = (("server", "gpu"), ("server", "socket", "gpu"), ("server", "switch", "gpu"),
          ("rack", "server", "socket", "switch", "gpu"), ("rack", "server", "gpu"))


@st.composite
def clusters(draw, max_servers: int = 12, min_servers: int = 1):
    """Clusters of a few server classes (some repeated many times)."""
    levels = draw(st.sampled_from(LEVELS))
    types = draw(st.sampled_from([("V100",), ("V100", "P100"), ("V100", "P100", "K80")]))
    kinds = []
    for _ in range(draw(st.integers(1, 3))):
        g = draw(st.sampled_from([0, 1, 2, 4, 8, 8]))
        kinds.append((g, draw(st.sampled_from([8000, 16000, 24000, 32000])),
                      draw(st.sampled_from([65536, 262144, 512000])),
                      draw(st.sampled_from(types)) if g else None,
                      draw(st.sampled_from([1, 2])) if g >= 2 else 1,
                      draw(st.sampled_from([1, 2])) if g >= 4 else 1))
    if all(k[0] == 0 for k in kinds):
        kinds[0] = (8,) + kinds[0][1:3] + (types[0], 2, 2)
    n = draw(st.integers(min_servers, max_servers))
    servers = []
    for i in range(n):
        g, cpu, mem, t, so, sw = kinds[draw(st.integers(0, len(kinds) - 1))]
        servers.append(Server(f"s{i:02d}", cpu, mem, g, t,
                              rack=f"r{i % 3}" if "rack" in levels else None,
                              sockets=so, switches_per_socket=sw))
    if not any(s.gpus for s in servers):
        servers[0] = replace(servers[0], gpus=8, gpu_type=types[0], sockets=2,
                             switches_per_socket=2)
    return Cluster(tuple(servers), levels)


@st.composite
def jobs_for(draw, cluster: Cluster, max_jobs: int = 40, min_jobs: int = 1):
    types = list(cluster.gpu_types)
    max_g = max(s.gpus for s in cluster.servers)
    inner = [lv for lv in ("socket", "switch", "rack") if lv in cluster.levels]
    out = []
    for k in range(draw(st.integers(min_jobs, max_jobs))):
        kind = draw(st.sampled_from(["whole", "whole", "whole", "share", "cpu"]))
        model = draw(st.sampled_from((None,) + MODELS))
        if kind == "cpu":
            g, milli = 0, 1000
        elif kind == "share":
            g, milli = 1, draw(st.sampled_from([100, 250, 500, 700]))
        else:
            g, milli = draw(st.sampled_from([1, 1, 2, 4, 8, max_g + 4])), 1000
        loc = None
        if g > 1:
            loc = draw(st.sampled_from([None, None, "server"] + inner))
        gt = tuple(draw(st.lists(st.sampled_from(types), max_size=2, unique=True))) if g else ()
        per = max(g, 1)
        out.append(Job(f"j{k:03d}", gpus=g, gpu_milli=milli,
                       cpu=per * draw(st.sampled_from([1000, 2000, 3000, 6000])),
                       mem=per * draw(st.sampled_from([16384, 32000, 64000])),
                       gpu_types=gt, locality=loc, model=model if g else None,
                       profile=load_profile(model) if (model and g) else None,
                       weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5])),
                       priority=draw(st.sampled_from([0, 0, 0, 1, 2]))))
    return out


@st.composite
def problems(draw, max_servers: int = 12, max_jobs: int = 40, min_servers: int = 1,
             min_jobs: int = 1):
    """A compiled problem: random cluster and jobs, some running (placed by
    first fit), an explicit order or not, one of the objectives."""
    cluster = draw(clusters(max_servers, min_servers))
    jobs = draw(jobs_for(cluster, max_jobs, min_jobs))
    if draw(st.sampled_from([True, True, False])):
        picked = draw(st.sets(st.integers(0, len(jobs) - 1), min_size=1))
        sub = [jobs[i] for i in sorted(picked)]
        if sub:
            a = allocate(cluster, sub, solver="proportional")
            placed = {p.job: replace(p, throughput=0.0) for p in a.placements}
            jobs = [replace(j, current=placed[j.id]) if j.id in placed else j for j in jobs]
    order = None
    if draw(st.booleans()):
        ids = [j.id for j in jobs]
        order = draw(st.permutations(ids))[:draw(st.integers(0, len(ids)))]
    objective = draw(st.sampled_from(["throughput", "throughput", "gpus", "jobs"]))
    assume(not model_problems(cluster, jobs))
    return compile_problem(cluster, jobs, objective, order=order)
