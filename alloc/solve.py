"""``allocate()`` and the solver registry.

A solver is a plain function ``solve(problem, *, time_limit, seed, **options)
-> Solution`` registered under a name with the capabilities it declares.  The
registry derives its lists (exact solvers, heuristics, available ones) from
those declarations.  ``allocate`` validates its input once, compiles it,
dispatches, recomputes the value from the placement, keeps the status honest and
checks the result with :func:`alloc.check.violations` before returning it.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .errors import SolverError, SolverUnavailable
from .model import Allocation, Cluster, Job, Status

#: What a solver may declare it handles.
CAPABILITIES = frozenset({
    "sharing",      # milli-GPU jobs sharing a GPU
    "grid",         # chooses CPU/memory points from a profile grid
    "locality",     # locality levels below server (socket, switch) and rack
    "spread",       # multi-GPU jobs spanning several servers
    "tenancy",      # tenants, guaranteed cells, opportunistic jobs
    "preemption",   # may preempt running jobs (``current``)
    "elastic",      # picks a GPU count in [min_gpus, max_gpus]
    "migration",    # migration-aware objective terms
    "colocation",   # opportunistic jobs on GPUs held by guaranteed jobs
})


@dataclass(frozen=True)
class SolverInfo:
    name: str
    solve: Callable
    exact: bool = False
    capabilities: frozenset = frozenset()
    requires: tuple[str, ...] = ()   # importable modules the backend needs
    description: str = ""
    #: constraints the solver adds to the allocation problem (e.g. a fairness
    #: floor); an exact solver's optimum is then optimal for that restricted
    #: problem only.  Empty: it solves the problem as given.
    restricts: str = ""

    @property
    def solves_problem_as_given(self) -> bool:
        return self.exact and not self.restricts

    def unavailable_reason(self) -> str | None:
        for mod in self.requires:
            try:
                importlib.import_module(mod)
            except Exception as exc:  # pragma: no cover - depends on the machine
                return f"needs {mod} ({type(exc).__name__}: {exc})"
        return None

    @property
    def available(self) -> bool:
        return self.unavailable_reason() is None


_REGISTRY: dict[str, SolverInfo] = {}
_LOADED = False

#: Modules that register solvers when imported.
SOLVER_MODULES = (
    "alloc.solvers.heuristics.greedy",
    "alloc.solvers.exact.cpsat",
    "alloc.solvers.exact.milp",
    "alloc.solvers.synergy.allocators",
    "alloc.solvers.fgd.solvers",
    "alloc.solvers.hived.engine",
)


def register(name: str, *, exact: bool = False, capabilities: Sequence[str] = (),
             requires: Sequence[str] = (), description: str = "", restricts: str = ""):
    """Decorator registering ``fn`` as solver ``name``."""
    unknown = set(capabilities) - CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; valid: {sorted(CAPABILITIES)}")

    def deco(fn):
        _REGISTRY[name] = SolverInfo(name, fn, exact, frozenset(capabilities), tuple(requires),
                                     description or (fn.__doc__ or "").strip().split("\n")[0],
                                     restricts)
        return fn
    return deco


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for mod in SOLVER_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def solvers() -> dict[str, SolverInfo]:
    """All registered solvers by name."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def exact_solvers(available_only: bool = True) -> list[str]:
    return [n for n, s in solvers().items() if s.exact and (s.available or not available_only)]


def heuristic_solvers(available_only: bool = True) -> list[str]:
    return [n for n, s in solvers().items() if not s.exact and (s.available or not available_only)]


def get_solver(name: str) -> SolverInfo:
    reg = solvers()
    if name not in reg:
        raise ValueError(f"unknown solver {name!r}; valid solvers: {', '.join(reg)}")
    return reg[name]


def needed_capabilities(cluster: Cluster, jobs: Sequence[Job]) -> frozenset:
    """Capabilities a solver must have to handle this input correctly."""
    need = set()
    inner = {"socket", "switch"}
    for j in jobs:
        if j.gpus == 1 and j.gpu_milli < 1000:
            need.add("sharing")
        if j.locality in inner or j.locality == "rack":
            need.add("locality")
        if j.tenant is not None or j.guaranteed:
            need.add("tenancy")
        if j.elastic:
            need.add("elastic")
    if cluster.tenants:
        need.add("tenancy")
    return frozenset(need)


def allocate(cluster: Cluster, jobs: Sequence[Job], *, solver: str = "best-fit",
             objective: str = "throughput", time_limit: float | None = None, seed: int = 0,
             instance: str = "", check: bool = True, **options) -> Allocation:
    """Place ``jobs`` on ``cluster`` with the named solver.

    Returns an :class:`~alloc.model.Allocation` whose value is recomputed from
    its placements and which has passed :func:`~alloc.check.violations`.
    """
    from .check import violations
    from .problem import compile_problem
    from .validate import validate_model

    info = get_solver(solver)
    reason = info.unavailable_reason()
    if reason:
        raise SolverUnavailable(f"solver {solver!r} is unavailable: {reason}")
    jobs = tuple(jobs)
    validate_model(cluster, jobs)
    missing = needed_capabilities(cluster, jobs) - info.capabilities
    if missing:
        able = [n for n, s in solvers().items() if missing <= s.capabilities]
        raise SolverError(f"solver {solver!r} does not support {', '.join(sorted(missing))} "
                          f"which this input needs; solvers that do: {', '.join(able) or 'none'}")
    problem = compile_problem(cluster, jobs, objective, instance)
    t0 = time.perf_counter()
    sol = info.solve(problem, time_limit=time_limit, seed=seed, **options)
    wall = time.perf_counter() - t0
    alloc = problem.to_allocation(sol, solver=solver, wall_time_s=wall)
    alloc = honest_status(alloc, exact=info.exact)
    if check:
        bad = violations(cluster, jobs, alloc)
        if bad:
            raise SolverError(f"solver {solver!r} returned an allocation with "
                              f"{len(bad)} violation(s): {bad[0]}")
    return alloc


def honest_status(alloc: Allocation, *, exact: bool) -> Allocation:
    """Heuristics never claim OPTIMAL or INFEASIBLE; an exact solver claims
    OPTIMAL only when the recomputed value meets its bound."""
    from dataclasses import replace
    st = alloc.status
    if not exact and st in (Status.OPTIMAL, Status.INFEASIBLE):
        st = Status.FEASIBLE
    if st is Status.OPTIMAL:
        if alloc.bound is None or alloc.value < alloc.bound - 1e-6 * max(1.0, abs(alloc.bound)):
            st = Status.FEASIBLE
    if st is Status.UNKNOWN and alloc.placements:
        st = Status.FEASIBLE
    return replace(alloc, status=st) if st is not alloc.status else alloc
