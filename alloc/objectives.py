r"""Objectives: the one place that says what a placement is worth.

A job's throughput (1.0 = its speed at the GPU-proportional share on its
reference GPU type) on ``n`` GPUs with ``c`` milli-cores and ``m`` MiB in total is

$$
\mathrm{tput} = \mathrm{base}(c/n, m/n)\cdot \mathrm{speed}(\tau)\cdot
                \mathrm{span}(\ell)\cdot \mathrm{scale}(n)
$$

(a job whose profile has a goodput model runs at its goodput speed-up instead,
`alloc.goodput.value`, and a running one keeps its ``restart_factor`` of its
value when its placement changes) with ``base`` the profile's grid value per
GPU, ``speed`` the relative speed of
the slowest GPU type ``tau`` it got, ``span`` the factor of the innermost
hierarchy level ``ell`` one node of which holds all its GPUs (1 for one GPU), and
``scale`` its speed with ``n`` GPUs relative to the requested count (elastic
jobs).  An objective sums a value over the placed jobs (an unplaced job adds 0):

* ``throughput``: $w_j\cdot\mathrm{tput}_j$ (``w`` = the job's weight);
* ``gpus``: the milli-GPU the job holds, $n\cdot\mathrm{milli}_j$;
* ``jobs``: 1.

Solvers never test an objective's name: they ask the [`Objective`][alloc.objectives.Objective] for
a
placement's value ([`Objective.value`][alloc.objectives.Objective.value]), an option's coefficient
([`Objective.coef`][alloc.objectives.Objective.coef]), which factors matter (`Objective.factors`),
an honest upper bound of a job's value over every placement
([`Objective.upper`][alloc.objectives.Objective.upper]) and the objective's step
([`Objective.step`][alloc.objectives.Objective.step]).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterable, Sequence

from .model import Cluster, Job, Placement, Profile
from .topology import reachable_levels, span_level

#: The factors a job's value can depend on.
FACTORS = frozenset({"grid", "speed", "span", "scale", "size", "weight"})


# ----------------------------------------------------------------- throughput
def speed_product(base: float, speed: float = 1.0, span: float = 1.0, scale: float = 1.0) -> float:
    r"""The throughput product of the module notes,
    $\mathrm{base}\cdot\mathrm{speed}\cdot\mathrm{span}\cdot\mathrm{scale}$: the one
    place the factors combine ([`rate`][alloc.objectives.rate] and
    [`Objective.coef`][alloc.objectives.Objective.coef] both end here).

    Examples
    --------
    >>> round(speed_product(0.8, speed=1.5, span=0.9, scale=1.0), 6)
    1.08
    """
    return base * speed * span * scale


def scale_factor(profile: Profile | None, job: Job, n: int) -> float:
    """Speed with ``n`` GPUs relative to the requested count: the profile's
    speed-up ``scaling[n] / scaling[gpus]`` where both are given, else
    linear ``n / gpus`` (1 for the requested count)."""
    if n == job.gpus or job.gpus == 0:
        return 1.0
    if profile is not None and n in profile.scaling and job.gpus in profile.scaling:
        return float(profile.scaling[n]) / float(profile.scaling[job.gpus])
    return n / job.gpus


def rate(job: Job, n: int, cpu: float, mem: float, gpu_types: Iterable[str | None],
         level: str | None, *, grid: Callable[[Profile, float, float], float] | None = None,
         servers: int | None = None) -> float:
    r"""The one throughput formula (see the module notes): ``job``'s speed on
    ``n`` GPUs of the given types (the slowest counts) whose innermost
    common node is at ``level`` (read only when ``n > 1``), with ``cpu``
    milli-cores and ``mem`` MiB in total.  A job without a profile runs at
    1.0 (its elastic scale at another size), 0 when it asks for GPUs and
    gets none; a CPU-only placement runs at its grid value.

    Every evaluation of a placement's throughput -- the compile step's on
    indices, the final check's, the engines', the simulators' -- is this
    function on inputs each reads in its own representation.  ``grid``
    evaluates a profile's grid (default `Profile.grid_value`; the final
    check passes its own, uncached one).  A goodput job (its profile has a
    goodput model) runs at its goodput speed-up instead
    ([`goodput_rate`][alloc.objectives.goodput_rate]), which depends on the
    number of ``servers`` that hold its GPUs (required for it when
    ``n > 0``; every other job ignores it).

    Examples
    --------
    >>> from alloc import Job
    >>> from alloc.profiles import load_profile
    >>> job = Job("a", 2, cpu=6000, mem=128000, profile=load_profile("res50"))
    >>> round(rate(job, 2, 6000, 128000, ["V100", "V100"], "server"), 6)
    1.0
    >>> rate(Job("b", 2, cpu=1, mem=1), 0, 1, 1, [], None)
    0.0
    >>> from alloc import Goodput, GoodputType, Profile
    >>> g = Goodput(128, 4096, {"T4": GoodputType((32, 1024),
    ...             (0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5))}, grad=(1.0, 4.0))
    >>> gj = Job("g", 1, cpu=1, mem=1, profile=Profile("g", goodput=g))
    >>> round(rate(gj, 4, 1, 1, ["T4"] * 4, "server", servers=1), 3)
    2.281
    """
    prof = job.profile
    if prof is not None and prof.goodput is not None:
        return goodput_rate(job, n, gpu_types, servers)[0]
    if prof is None:
        return scale_factor(None, job, n) if n or job.gpus == 0 else 0.0
    per = max(n, 1)
    if prof.has_grid and n:
        base = prof.grid_value(cpu / per, mem / per) if grid is None else \
            grid(prof, cpu / per, mem / per)
    else:
        base = 1.0
    if not n:
        return base
    speed = min(prof.speed(t) for t in gpu_types)
    span = prof.span_factor(level) if n > 1 else 1.0
    return speed_product(base, speed, span, scale_factor(prof, job, n))


def throughput(cluster: Cluster, job: Job, gpu_ids: Iterable[str], cpu: int, mem: int) -> float:
    """Speed of ``job`` on the given GPUs with ``cpu`` milli-cores and ``mem``
    MiB in total: [`rate`][alloc.objectives.rate] on the GPUs' types, the
    level they span and the number of servers that hold them (see the module
    notes)."""
    gpu_ids = list(gpu_ids)
    n = len(gpu_ids)
    if not n:
        return rate(job, 0, cpu, mem, (), None, servers=0)
    idx, srv, servers = cluster.gpu_index, cluster.gpu_server, cluster.servers
    where = [srv[idx[g]] for g in gpu_ids]
    types = [servers[s].gpu_type for s in where]
    return rate(job, n, cpu, mem, types, span_level(cluster, gpu_ids) if n > 1 else None,
                servers=len(set(where)))


def goodput_rate(job: Job, n: int, gpu_types: Iterable[str | None], servers: int | None
                 ) -> tuple[float, int, int]:
    r"""``(throughput, batch, accum)`` of a goodput job on ``n`` GPUs of the
    given types (the slowest counts) held by ``servers`` servers: its goodput
    speed-up over its request on one server of its reference type, with the
    per-GPU batch and the accumulation steps that reach it
    ([`alloc.goodput.value`][alloc.goodput.value], $G^*_t(N, K) /
    G^*_{\mathrm{ref}}(1, \mathrm{gpus})$).  [`rate`][alloc.objectives.rate]
    is its first item; the final check recomputes all three.

    Examples
    --------
    >>> from alloc import Goodput, GoodputType, Job, Profile
    >>> g = Goodput(128, 4096, {"T4": GoodputType((32, 1024),
    ...             (0.02, 0.001, 0.2, 0.01, 0.05, 0.002, 1.5))}, grad=(1.0, 4.0))
    >>> gj = Job("g", 1, cpu=1, mem=1, profile=Profile("g", goodput=g))
    >>> tput, b, s = goodput_rate(gj, 4, ["T4"] * 4, 1)
    >>> round(tput, 3), b, s
    (2.281, 87, 0)
    """
    from .goodput.value import placement_speed
    prof = job.profile
    if prof is None or prof.goodput is None:
        raise ValueError(f"job {job.id!r} has no goodput model")
    if n <= 0:
        return 0.0, 0, 0
    if servers is None or servers <= 0:
        raise ValueError(f"goodput job {job.id!r}: the number of servers holding its {n} GPU(s) "
                         f"is needed, got {servers!r}")
    return placement_speed(prof.goodput, prof.reference_gpu, job.gpus, set(gpu_types), servers, n)


def goodput_speed(cluster: Cluster, job: Job, gpu_ids: Sequence[str]) -> tuple[float, int, int]:
    """``(throughput, batch, accum)`` of a goodput job on the given GPUs
    ([`goodput_rate`][alloc.objectives.goodput_rate] on their types and the
    number of servers that hold them)."""
    idx, srv, servers = cluster.gpu_index, cluster.gpu_server, cluster.servers
    where = [srv[idx[g]] for g in gpu_ids]
    return goodput_rate(job, len(where), [servers[s].gpu_type for s in where], len(set(where)))


def restart_kept(job: Job, placement: Placement) -> float:
    """The share of a goodput job's value it keeps on ``placement``: its
    ``restart_factor`` when it runs elsewhere now (a restart), else 1."""
    prof = job.profile
    if prof is None or prof.goodput is None or job.current is None \
            or prof.goodput.restart_factor >= 1.0 or placement.same_as(job.current):
        return 1.0
    return float(prof.goodput.restart_factor)


def job_sizes(job: Job) -> list[int]:
    """GPU counts the job may get: the request, or every size in
    ``[min_gpus, max_gpus]`` of an elastic job."""
    if not job.elastic or job.gpus == 0:
        return [job.gpus]
    lo = job.min_gpus if job.min_gpus is not None else job.gpus
    hi = job.max_gpus if job.max_gpus is not None else job.gpus
    return list(range(lo, hi + 1))


# ------------------------------------------------------------------ objective
@dataclass(frozen=True)
class Objective:
    """What a placement is worth (see the module notes).

    Attributes
    ----------
    name : str
        ``"throughput"``, ``"gpus"`` or ``"jobs"``.
    factors : frozenset of str
        The factors of `FACTORS` a job's value depends on (a solver may
        ignore the others, e.g. the CPU/memory grid for ``gpus``).
    description : str
        One line for listings.
    """
    name: str
    factors: frozenset[str]
    description: str

    def coef(self, job: Job, base: float = 1.0, *, speed: float = 1.0, span: float = 1.0,
             scale: float = 1.0, gpus: int | None = None) -> float:
        """Value of ``job`` placed with the given factors: grid value ``base``,
        GPU-type ``speed``, ``span`` factor, elastic ``scale`` and ``gpus``
        GPUs (default: the request)."""
        n = job.gpus if gpus is None else gpus
        if self.name == "throughput":
            return job.weight * speed_product(base, speed, span, scale)
        if self.name == "gpus":
            return float(n * job.gpu_milli)
        return 1.0

    def value(self, job: Job, placement: Placement | None) -> float:
        """Value of a placed job (0 when unplaced); the placement's
        ``throughput`` must be the recomputed one."""
        if placement is None:
            return 0.0
        if self.name == "throughput":
            return job.weight * placement.throughput * restart_kept(job, placement)
        if self.name == "gpus":
            return float(sum(g.milli for g in placement.gpus))
        return 1.0

    def total(self, jobs: Iterable[Job], placements: Iterable[Placement]) -> float:
        """Sum of [`value`][alloc.objectives.Objective.value] over the placements."""
        by_id = {j.id: j for j in jobs}
        return float(sum(self.value(by_id[p.job], p) for p in placements))

    def upper(self, cluster: Cluster, job: Job, bases: Sequence[float],
              gpu_types: Iterable[str | None]) -> float:
        """An upper bound of the job's value over every placement: the best
        grid value in ``bases``, the best speed over ``gpu_types`` (the types
        it may get), the best span factor over the levels its GPUs may span
        (1 for a one-GPU size) and the best elastic size."""
        prof = job.profile
        sizes = job_sizes(job)
        base = max(bases, default=1.0)
        types = list(gpu_types)
        if prof is not None and prof.goodput is not None and self.name == "throughput":
            from .goodput.value import upper
            return job.weight * upper(prof.goodput, prof.reference_gpu, job.gpus, sizes, types,
                                      len(cluster.servers))
        speed = max((prof.speed(t) if prof is not None else 1.0 for t in types), default=1.0)
        best = 0.0
        for n in sizes:
            span = 1.0
            if n > 1 and prof is not None:
                span = max(prof.span_factor(lv) for lv in reachable_levels(cluster, job.locality))
            # a CPU-only job runs at its base speed: no GPU type scales it
            best = max(best, self.coef(job, base, speed=speed if n else 1.0, span=span,
                                       scale=scale_factor(prof, job, n), gpus=n))
        return best

    def step(self, cluster: Cluster, jobs: Iterable[Job]) -> float | None:
        """A step ``delta > 0`` such that every solution's value is an integer
        multiple of it (None when no decimal step is found).

        A job's value is a product of factors; a product of values that are
        multiples of ``d_1, d_2, ...`` is a multiple of ``d_1 d_2 ...``, so a
        job's step is the product of the decimal steps of its possible factor
        values, and the objective's step is their gcd."""
        if self.name == "jobs":
            return 1.0
        step = Fraction(0)
        types = {s.gpu_type for s in cluster.servers}
        seen = set()
        for job in jobs:
            key = (id(job.profile), job.weight, job.gpus, job.gpu_milli, job.locality,
                   job.min_gpus, job.max_gpus)
            if key in seen:
                continue
            seen.add(key)
            js = self._job_step(cluster, job, types)
            if js is None:
                return None
            step = _gcd_fraction(step, js)
        return float(step) if step > 0 else None

    def _job_step(self, cluster: Cluster, job: Job, types: Iterable[str | None]) -> Fraction | None:
        if self.name == "gpus":
            return Fraction(job.gpu_milli if job.elastic else job.gpus * job.gpu_milli)
        prof = job.profile
        if prof is not None and prof.goodput is not None:
            return None
        factors = [[job.weight]]
        if prof is not None:
            base = [1.0]
            if prof.has_grid:
                base += [v for row in prof.tput for v in row if v is not None]
            factors.append(base)
            factors.append([1.0] + [prof.speed(t) for t in types])
            if job.gpus > 1 or (job.elastic and job.gpus):
                factors.append([1.0] + [prof.span_factor(lv)
                                        for lv in reachable_levels(cluster, job.locality)])
        if job.elastic and job.gpus:
            factors.append([scale_factor(prof, job, n) for n in job_sizes(job)])
        js = Fraction(1)
        for f in factors:
            d = decimal_step(f)
            if d is None:
                return None
            js *= d
        return js


def decimal_step(values: Iterable[float], max_digits: int = 6) -> Fraction | None:
    """Largest ``d = g / 10**k`` (``k <= max_digits``) with every value an
    integer multiple of ``d``; ``Fraction(0)`` when all values are 0; None when
    some value has more than ``max_digits`` decimals."""
    vals = [abs(float(v)) for v in values]
    for k in range(max_digits + 1):
        scale = 10 ** k
        ints = []
        for v in vals:
            x = v * scale
            r = round(x)
            if abs(x - r) > 1e-9 * max(1.0, x):
                break
            ints.append(int(r))
        else:
            g = 0
            for n in ints:
                g = math.gcd(g, n)
            return Fraction(g, scale)
    return None


def _gcd_fraction(a: Fraction, b: Fraction) -> Fraction:
    if a == 0:
        return b
    if b == 0:
        return a
    den = a.denominator * b.denominator // math.gcd(a.denominator, b.denominator)
    return Fraction(math.gcd(int(a * den), int(b * den)), den)


def tighten(bound: float | None, step: float | None) -> float | None:
    """Round a bound down to a multiple of ``step`` (every solution value is
    one; a small tolerance keeps float noise from cutting a real value)."""
    if bound is None or not step:
        return bound
    q = bound / step
    return math.floor(q + 1e-4 + 1e-9 * abs(q)) * step


THROUGHPUT = Objective("throughput", frozenset({"grid", "speed", "span", "scale", "weight"}),
                       "sum of weight x throughput of the placed jobs")
GPUS = Objective("gpus", frozenset({"size"}), "milli-GPU allocated")
JOBS = Objective("jobs", frozenset(), "number of jobs placed")

#: Objectives by name.
#: The objective of a call that names none.
DEFAULT_OBJECTIVE = "throughput"

OBJECTIVES: dict[str, Objective] = {o.name: o for o in (THROUGHPUT, GPUS, JOBS)}


def get_objective(name: str | Objective) -> Objective:
    """The objective called ``name``; ``ValueError`` listing the valid ones."""
    if isinstance(name, Objective):
        return name
    obj = OBJECTIVES.get(name)
    if obj is None:
        raise ValueError(f"unknown objective {name!r}; valid objectives: {', '.join(OBJECTIVES)}")
    return obj


def check_objective(name: str) -> str:
    """``name`` if it is an objective, else ``ValueError`` listing the valid ones."""
    return get_objective(name).name


def allocation_value(objective: str | Objective, jobs: Sequence[Job],
                     placements: Iterable[Placement]) -> float:
    """The objective's value of a set of placements."""
    return get_objective(objective).total(jobs, placements)


def placement_value(objective: str | Objective, job: Job, p: Placement | None) -> float:
    """The objective's value of one job's placement (0 when unplaced)."""
    return get_objective(objective).value(job, p)


__all__ = ["FACTORS", "GPUS", "JOBS", "OBJECTIVES", "THROUGHPUT", "Objective",
           "allocation_value", "check_objective", "decimal_step", "get_objective",
           "goodput_rate", "goodput_speed", "job_sizes", "placement_value", "rate",
           "restart_kept", "scale_factor", "span_level", "speed_product", "tighten", "throughput"]

