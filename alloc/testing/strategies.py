r"""Hypothesis strategies over the whole input space `allocate` accepts.

* `clusters` -- servers with and without GPUs, GPU types and GPU memory,
  hierarchies of any depth and names (`hierarchies`: levels above the
  servers named freely, the servers' domains; socket, switch, gpu inside
  them), tenants with
  guaranteed cells (repaired until the cluster can host them) and *users*
  (tenants without cells);
* `instances` -- a cluster and its jobs: whole and shared GPUs, CPU-only
  jobs, GPU types (one the cluster lacks included: such a job waits with a
  reason), every locality level and preferred level, shipped and random
  profiles (grids, GPU
  speeds, span factors, elastic scaling), priorities and weights, tenants'
  guaranteed and opportunistic jobs, users, elastic jobs, GPU memory and
  compute declarations, running jobs (``current`` from a valid placement
  made by a heuristic);
* `calls` -- an instance with the rest of a call: every objective, a seed,
  a move budget and a cost per move, the caller's order;
* `markets` -- capacities, demands, weights and caps for the continuous
  DRF (`alloc.shares.drf_shares`);
* `shares_problems` -- ``alloc.shares/1`` problems for the time-share
  policies (`alloc.shares.solve_shares`).

``capabilities`` limits an instance to what a solver handles (the members of
`alloc.registry.CAPABILITIES`); None draws everything.  Every drawn
instance is valid input, and `needed_capabilities` of it is within
``capabilities``.

This module needs hypothesis (the ``test`` extra: ``pip install alloc[test]``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Sequence

from hypothesis import assume
from hypothesis import strategies as st

from ..model import Cell, Cluster, Instance, Job, Profile, Server, Tenant, frozen_map
from ..objectives import OBJECTIVES
from ..registry import CAPABILITIES, get_solver, solvers

#: Shipped models the jobs draw from.
MODELS = ("res18", "bert", "alexnet", "res50")
#: Hierarchies drawn (outermost first).
LEVEL_SETS = (("server", "gpu"), ("rack", "server", "gpu"), ("server", "socket", "gpu"),
              ("server", "socket", "switch", "gpu"), ("rack", "server", "socket", "switch", "gpu"))
#: Names of levels above the servers drawn besides arbitrary text.
LEVEL_NAMES = ("zone", "block", "rack", "nvl72", "leaf", "spine", "pod", "Scalable Unit")
#: Heuristics that make running jobs' placements, in the order tried.
PLACERS = ("best-fit", "greedy-upgrade", "hived", "antman")
INNER = ("socket", "switch", "rack")
_RESERVED = ("cluster", "server", "socket", "switch", "gpu")


@dataclass(frozen=True)
class Call:
    """One `allocate` call but the solver: ``allocate(call.cluster,
    call.jobs, solver=name, **call.kwargs())``.

    Attributes
    ----------
    cluster : Cluster
    jobs : tuple of Job
    objective : str
    seed : int
    max_moves : int or None
    move_cost : float or None
    order : tuple of str or None
        The caller's order (job ids, highest rank first).
    preempt : {None, "order"}
        Preemption by the caller's order (inputs without tenants' guarantees).
    """
    cluster: Cluster
    jobs: tuple
    objective: str = "throughput"
    seed: int = 0
    max_moves: int | None = None
    move_cost: float | None = None
    order: tuple | None = None
    features: frozenset = field(default=frozenset(), compare=False)
    preempt: str | None = None

    def kwargs(self) -> dict:
        """The keyword arguments of `allocate` besides the solver."""
        return dict(objective=self.objective, seed=self.seed, max_moves=self.max_moves,
                    move_cost=self.move_cost, order=list(self.order) if self.order else None,
                    preempt=self.preempt)

    def instance(self, name: str = "drawn") -> Instance:
        """The cluster and jobs as an `Instance` (drawn profiles inline), for
        `alloc.dump_instance`: a failing call becomes a file."""
        models = {j.model: j.profile for j in self.jobs
                  if j.profile is not None and j.model not in MODELS}
        return Instance(name, self.cluster, self.jobs, models)


def features(cluster: Cluster, jobs: Sequence[Job], **call) -> frozenset:
    """What an input exercises: the capabilities it needs, and ``running``,
    ``moves``, ``order``, ``tenants``, ``users``, ``cpu-only``, ``profiles``,
    ``unplaceable-type``, each level of the cluster, the objective."""
    from ..solve import needed_capabilities
    out = set(needed_capabilities(cluster, jobs)) | {f"level:{lv}" for lv in cluster.levels}
    types = set(cluster.gpu_types)
    checks = {
        "running": any(j.current is not None for j in jobs),
        "moves": call.get("max_moves") is not None or call.get("move_cost") is not None,
        "order": call.get("order") is not None,
        "preempt-order": call.get("preempt") == "order",
        "tenants": any(t.cells for t in cluster.tenants.values()),
        "guaranteed": any(j.guaranteed for j in jobs),
        "users": any(j.tenant and not cluster.tenants[j.tenant].cells for j in jobs),
        "cpu-only": any(j.gpus == 0 for j in jobs),
        "profiles": any(j.profile is not None or j.model for j in jobs),
        "unplaceable-type": any(j.gpu_types and not set(j.gpu_types) & types for j in jobs),
        "gpu-mem-declared": any(j.gpu_mem is not None for j in jobs),
    }
    out |= {k for k, v in checks.items() if v}
    if call.get("objective"):
        out.add(f"objective:{call['objective']}")
    return frozenset(out)


def _caps(capabilities) -> frozenset:
    return frozenset(CAPABILITIES) if capabilities is None else frozenset(capabilities)


# ------------------------------------------------------------------ profiles
@st.composite
def profiles(draw, name: str = "p", gpu_types: Sequence[str] = ("V100", "P100"),
             levels: Sequence[str] = ("switch", "socket", "server", "rack", "cluster")
             ) -> Profile:
    """A random profile within the model schema: a CPU x memory grid (some
    cells infeasible), GPU speeds, span factors at some of ``levels``,
    elastic scaling."""
    dec = st.integers(1, 300).map(lambda k: k / 100)
    cpu = sorted(draw(st.sets(st.sampled_from([500, 1000, 2000, 3000, 4000, 6000]),
                              min_size=1, max_size=3)))
    mem = sorted(draw(st.sets(st.sampled_from([8192, 16384, 32768, 65536, 131072]),
                              min_size=1, max_size=3)))
    tput = tuple(tuple(draw(st.one_of(st.none(), dec)) for _ in mem) for _ in cpu)
    speed = {t: draw(dec) for t in gpu_types if draw(st.booleans())}
    spanned = draw(st.sets(st.sampled_from(list(levels))))
    span = {lv: draw(st.integers(20, 100).map(lambda k: k / 100)) for lv in sorted(spanned)}
    scaling = {1: 1.0, 2: draw(st.integers(100, 200).map(lambda k: k / 100))} \
        if draw(st.booleans()) else {}
    return Profile(name, tuple(cpu), tuple(mem), tput, frozen_map(speed), frozen_map(span),
                   frozen_map(scaling))


# ------------------------------------------------------------------ clusters
def _repair_tenants(cluster: Cluster, tenants: dict) -> dict:
    """Drop cells (last first) until the cluster can host the tenants."""
    from ..tenancy import tenant_problems
    tenants = dict(tenants)
    while tenant_problems(Cluster(cluster.servers, cluster.levels, tenants)):
        name = [n for n, t in tenants.items() if t.cells][-1]
        tenants[name] = Tenant(name, tenants[name].cells[:-1])
    return tenants


@st.composite
def tenants(draw, cluster: Cluster, users: bool = True) -> dict:
    """Tenants with guaranteed cells at any level of the cluster (``vc0``,
    ``vc1``) and users without cells (``user0``, ``user1``), repaired so
    that the cluster hosts every cell."""
    types = cluster.gpu_types
    out = {}
    for t in range(draw(st.integers(1, 2))):
        cells = tuple(Cell(draw(st.sampled_from(cluster.levels)), draw(st.integers(1, 2)),
                           draw(st.sampled_from(types)) if len(types) > 1 or draw(st.booleans())
                           else None)
                      for _ in range(draw(st.integers(1, 2))))
        out[f"vc{t}"] = Tenant(f"vc{t}", cells)
    for u in range(draw(st.integers(0, 2)) if users else 0):
        out[f"user{u}"] = Tenant(f"user{u}")
    return _repair_tenants(cluster, out)


@st.composite
def hierarchies(draw) -> tuple[str, ...]:
    """Levels of a cluster, outermost first: one of `LEVEL_SETS` (two draws
    in three), or 0-3 levels above the servers with any names (`LEVEL_NAMES`
    or drawn text), then ``server`` and some of ``socket``, ``switch``,
    ``gpu``."""
    if draw(st.integers(0, 2)):
        return draw(st.sampled_from(LEVEL_SETS))
    name = st.one_of(st.sampled_from(LEVEL_NAMES),
                     st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF),
                             min_size=1, max_size=8)).filter(lambda x: x not in _RESERVED)
    outer = draw(st.lists(name, min_size=0, max_size=3, unique=True))
    inside = draw(st.sampled_from([(), ("socket",), ("switch",), ("socket", "switch")]))
    gpu = ("gpu",) if inside or draw(st.integers(0, 4)) else ()
    return tuple(outer) + ("server",) + inside + gpu


@st.composite
def clusters(draw, max_servers: int = 3, *, capabilities=None) -> Cluster:
    """A cluster of 1..``max_servers`` servers (the first with GPUs) under
    levels of `hierarchies` (any depth and names), each server in one of
    two domains per level above it; tenants when ``capabilities`` has
    ``tenancy``."""
    from ..topology import is_outer
    caps = _caps(capabilities)
    levels = draw(hierarchies())
    outer = [lv for lv in levels if is_outer(lv) and lv != "rack"]
    servers = []
    for i in range(draw(st.integers(1, max_servers))):
        g = draw(st.sampled_from([2, 4, 8]) if i == 0 else st.sampled_from([0, 2, 4, 4, 8]))
        sockets = draw(st.sampled_from([1, 2])) if g and "socket" in levels else 1
        switches = draw(st.sampled_from([1, 2])) \
            if g and "switch" in levels and (g // sockets) % 2 == 0 else 1
        servers.append(Server(
            f"s{i}", draw(st.sampled_from([8000, 16000, 24000])),
            draw(st.sampled_from([65536, 262144, 524288])), g,
            draw(st.sampled_from(["V100", "P100"])) if g else None,
            rack=f"r{i % 2}" if "rack" in levels else None, sockets=sockets,
            switches_per_socket=switches,
            gpu_mem=draw(st.sampled_from([None, None, 16384, 24576])) if g else None,
            domains=frozen_map({lv: draw(st.sampled_from(["a", "b"])) for lv in outer})))
    cluster = Cluster(tuple(servers), levels)
    if "tenancy" in caps and draw(st.integers(0, 2)):
        cluster = replace(cluster, tenants=draw(tenants(cluster)))
    return cluster


# ---------------------------------------------------------------------- jobs
@st.composite
def _gpu_part(draw, cluster: Cluster, caps: frozenset) -> dict:
    """gpus, gpu_milli, locality, elastic bounds of a GPU job."""
    max_g = max(s.gpus for s in cluster.servers)
    if "sharing" in caps and draw(st.integers(0, 2)) == 0:
        return dict(gpus=1, gpu_milli=draw(st.sampled_from([100, 250, 500, 700])))
    g = draw(st.integers(1, min(8, max(max_g, cluster.total_gpus))))
    inner = [lv for lv in cluster.levels if lv not in ("server", "gpu")] \
        if "locality" in caps else []
    loc = draw(st.sampled_from([None, "server", *inner])) if g > 1 else None
    out = dict(gpus=g, locality=loc)
    if "preferred" in caps and g > 1 and draw(st.booleans()):
        out["preferred"] = draw(st.sampled_from(cluster.levels))
    if "elastic" in caps and g > 1 and draw(st.booleans()):
        out["min_gpus"] = draw(st.integers(1, g))
        out["max_gpus"] = draw(st.sampled_from([None, g, g + 2]))
    return out


@st.composite
def _memory_part(draw, job: Job, caps: frozenset) -> dict:
    """GPU memory and compute declarations (capabilities gpu-memory, gpu-compute)."""
    out = {}
    if "gpu-memory" in caps and draw(st.booleans()):
        out["gpu_mem"] = draw(st.sampled_from([2000, 6000, 9000, 12000]))
        if "gpu-compute" in caps and job.gpus == 1 and not job.guaranteed and draw(st.booleans()):
            out["gpu_compute"] = draw(st.sampled_from([100, 400, 900]))
            out["gpu_mem_min"] = draw(st.sampled_from([1000, out["gpu_mem"]]))
    return out


@st.composite
def jobs(draw, cluster: Cluster, k: int, *, capabilities=None, random_profiles: bool = True,
         models: Sequence[str] = MODELS) -> Job:
    """Job ``j<k>`` for ``cluster`` within ``capabilities``."""
    from ..profiles import load_profile
    caps = _caps(capabilities)
    types = list(cluster.gpu_types)
    kw: dict = {}
    if draw(st.integers(0, 4)) == 0:
        kw["gpus"] = 0
    else:
        kw.update(draw(_gpu_part(cluster, caps)))
        kw["gpu_types"] = tuple(draw(st.lists(st.sampled_from(types), max_size=1)))
        if draw(st.integers(0, 24)) == 0:
            kw["gpu_types"] = ("T4",)            # no server has it: waits with a reason
        if random_profiles and draw(st.integers(0, 2)) == 0:
            kw["model"] = f"p{k}"
            kw["profile"] = draw(profiles(f"p{k}", types,
                                          [lv for lv in cluster.levels if lv != "gpu"]
                                          + ["cluster"]))
        else:
            kw["model"] = draw(st.sampled_from([None, *models]))
            kw["profile"] = load_profile(kw["model"]) if kw["model"] else None
    per = max(kw["gpus"], 1)
    names = sorted(cluster.tenants)
    if "tenancy" in caps and names and draw(st.booleans()):
        kw["tenant"] = draw(st.sampled_from(names))
        kw["guaranteed"] = bool(cluster.tenants[kw["tenant"]].cells) and kw["gpus"] > 0 \
            and draw(st.integers(0, 2)) > 0
    job = Job(f"j{k}", cpu=per * draw(st.sampled_from([1000, 2000, 3000])),
              mem=per * draw(st.sampled_from([16384, 64000, 64000, 131072])),
              weight=draw(st.sampled_from([1.0, 1.0, 2.0, 0.5])),
              priority=draw(st.sampled_from([0, 0, 1, -1])), **kw)
    if job.gpus:
        job = replace(job, **draw(_memory_part(job, caps)))
    return job


@st.composite
def _running(draw, cluster: Cluster, jobs: list, caps: frozenset) -> list:
    """``jobs`` with some of them running where a heuristic placed them
    (unchanged when the placement would need a capability outside ``caps``)."""
    from ..errors import InputWarning, SolverError
    from ..solve import allocate, needed_capabilities
    picked = sorted(draw(st.sets(st.integers(0, len(jobs) - 1), min_size=1)))
    sub = [jobs[i] for i in picked]
    need = needed_capabilities(cluster, sub)
    reg = solvers()
    able = [n for n in PLACERS if n in reg and need <= reg[n].capabilities]
    if not able:
        return jobs
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputWarning)
            a = allocate(cluster, sub, solver=draw(st.sampled_from(able)), time_limit=5)
    except SolverError:            # the placer's own defect: its conformance test shows it
        return jobs
    out = list(a.advance(jobs))
    return out if needed_capabilities(cluster, out) <= caps else jobs


@st.composite
def instances(draw, max_servers: int = 3, max_jobs: int = 6, *, capabilities=None,
              running: bool = True, random_profiles: bool = True,
              models: Sequence[str] = MODELS) -> tuple[Cluster, tuple[Job, ...]]:
    """A valid ``(cluster, jobs)`` pair within ``capabilities`` (see the
    module notes); ``running``: some jobs may run already.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> from alloc import allocate, violations
    >>> from alloc.testing.strategies import instances
    >>> @settings(max_examples=5, deadline=None)
    ... @given(instances(capabilities={"sharing", "spread"}))
    ... def test_best_fit(inst):
    ...     cluster, jobs = inst
    ...     assert not violations(cluster, jobs, allocate(cluster, jobs, solver="best-fit"))
    >>> test_best_fit()
    """
    from ..solve import needed_capabilities
    from ..validate import model_problems
    caps = _caps(capabilities)
    cluster = draw(clusters(max_servers, capabilities=caps))
    out = [draw(jobs(cluster, k, capabilities=caps, random_profiles=random_profiles,
                     models=models)) for k in range(draw(st.integers(1, max_jobs)))]
    assume(not model_problems(cluster, out))
    if running and draw(st.integers(0, 2)):
        out = draw(_running(cluster, out, caps))
    assume(needed_capabilities(cluster, out) <= caps)
    return cluster, tuple(out)


@st.composite
def calls(draw, solver: str | None = None, *, capabilities=None, max_servers: int = 3,
          max_jobs: int = 6, running: bool = True, random_profiles: bool = True) -> Call:
    """A `Call`: an instance within the capabilities of ``solver`` (or
    ``capabilities``; None: everything), an objective, a seed, a move budget
    and cost when jobs run, sometimes the caller's order -- and then, on
    inputs without tenants' guarantees and for solvers with
    ``order-preemption``, sometimes preemption by it."""
    caps = get_solver(solver).capabilities if solver is not None else _caps(capabilities)
    cluster, js = draw(instances(max_servers, max_jobs, capabilities=caps, running=running,
                                 random_profiles=random_profiles))
    kw = dict(objective=draw(st.sampled_from(sorted(OBJECTIVES))),
              seed=draw(st.integers(0, 2 ** 16)))
    if any(j.current is not None for j in js) and draw(st.integers(0, 2)):
        kw["max_moves"] = draw(st.sampled_from([None, 0, 1, 3]))
        kw["move_cost"] = draw(st.sampled_from([None, 0.0, 0.25]))
    if draw(st.booleans()):
        ids = draw(st.permutations([j.id for j in js]))
        kw["order"] = tuple(ids[:draw(st.integers(1, len(ids)))])
        tenancy = cluster.tenants or any(j.guaranteed for j in js)
        if "order-preemption" in caps and not tenancy and draw(st.booleans()):
            kw["preempt"] = "order"
    return Call(cluster, js, features=features(cluster, js, **kw), **kw)


# ------------------------------------------------------------------- shares
@st.composite
def markets(draw, caps: bool = True, max_users: int = 6, resources: int | None = None):
    """``(capacities, demands, weights, caps)`` for `alloc.shares.drf_shares`:
    1-3 resources (``resources`` of them when given; one may have capacity
    0), 1..``max_users`` users, each demanding some resource the cluster
    has; ``caps=False``: no user is capped."""
    res = ("gpu", "cpu", "mem")[:resources or draw(st.integers(1, 3))]
    cap = {r: float(draw(st.sampled_from([0, 4, 8, 9, 18, 24, 100]))) for r in res}
    if not any(c > 0 for c in cap.values()):
        cap[res[0]] = 8.0
    n = draw(st.integers(1, max_users))
    demands = []
    for _ in range(n):
        d = {r: float(draw(st.integers(0, 6))) for r in res}
        if not any(v > 0 and cap[r] > 0 for r, v in d.items()):
            d[next(r for r in res if cap[r] > 0)] = 1.0
        demands.append(d)
    weights = [draw(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.0])) for _ in range(n)]
    kk = [draw(st.one_of(st.none(), st.sampled_from([0.5, 1.0, 2.0, 5.0]))) if caps else None
          for _ in range(n)]
    return cap, demands, weights, kk


@st.composite
def shares_problems(draw, max_jobs: int = 6, max_types: int = 3, *, scale_factors: bool = False,
                    tenants: bool = False, pairs: bool = False):
    """A `alloc.shares.SharesProblem`: GPU types with 1-3 GPUs each (doubled
    with ``scale_factors``), jobs with throughputs per type (some 0),
    weights, steps left, elapsed and isolated times; optionally tenants with
    weights and space-sharing pairs."""
    from ..shares import problem_from_dict
    types = ("a", "b", "c")[:draw(st.integers(1, max_types))]
    mult = 2 if scale_factors else 1
    cap = {t: draw(st.integers(1, 3)) * mult for t in types}
    rate = st.integers(0, 50).map(lambda k: k / 10)
    out = []
    for i in range(draw(st.integers(1, max_jobs))):
        thr = {t: draw(rate) for t in types}
        if not any(thr.values()):
            thr[types[0]] = 1.0
        iso = float(draw(st.integers(1, 100)))
        j = {"id": f"j{i}", "scale_factor": draw(st.sampled_from([1, mult])),
             "weight": draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])), "throughput": thr,
             "steps_remaining": float(draw(st.integers(10, 1000))),
             "elapsed_s": float(draw(st.integers(0, int(iso)))), "isolated_time_s": iso}
        if tenants:
            j["tenant"] = f"t{i % 2}"
        out.append(j)
    doc = {"format": "alloc.shares/1", "gpu_types": cap, "jobs": out}
    if tenants:
        doc["tenants"] = {f"t{t}": {"weight": float(draw(st.integers(1, 3)))} for t in range(2)}
    if pairs and len(out) > 1:
        a, b = draw(st.lists(st.integers(0, len(out) - 1), min_size=2, max_size=2, unique=True))
        if out[a]["scale_factor"] == out[b]["scale_factor"]:
            f = draw(st.integers(3, 9)) / 10
            doc["pairs"] = [{"jobs": [out[a]["id"], out[b]["id"]], "throughput": {
                t: [out[a]["throughput"][t] * f, out[b]["throughput"][t] * f] for t in types}}]
    return problem_from_dict(doc)


__all__ = ["Call", "LEVEL_NAMES", "LEVEL_SETS", "MODELS", "PLACERS", "calls", "clusters",
           "features", "hierarchies",
           "instances", "jobs", "markets", "profiles", "shares_problems", "tenants"]
