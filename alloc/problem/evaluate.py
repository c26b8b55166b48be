r"""The objective evaluated on a problem's indices, through the one formula
([`alloc.objectives.rate`][alloc.objectives.rate] for throughput, the
[`Objective`][alloc.objectives.Objective] for coefficients and bounds):

* ``coef(j, o, s)`` -- the objective's coefficient of job ``j`` at option
  ``o`` on server ``s``'s GPU type (span factor, elastic size);
* ``upper_coef(j)`` -- an upper bound over every option, type, span level
  and size;
* ``throughput_of(j, a)`` -- ``rate(job, n, cpu, mem, types, level)`` of the
  assignment ``a``, read from the index arrays;
* ``value_of(j, a)`` -- the job's real value placed as ``a``:
  ``weight * throughput`` (times the restart factor of a goodput job that
  moves), or the milli-GPU it holds, or 1, as the objective's factors say.
"""
from __future__ import annotations

from ..model import CLUSTER
from ..objectives import rate
from .assign import Assign
from .ranks import Ranking


class Evaluation(Ranking):
    """The objective on indices (see the module notes)."""

    def speed(self, j: int, s: int) -> float:
        """Relative speed of job j on server s's GPU type."""
        prof = self.jobs[j].profile
        return prof.speed(self.cluster.servers[s].gpu_type) if prof is not None else 1.0

    def coef(self, j: int, o: int, s: int | None = None, *, span: float = 1.0,
             n: int | None = None) -> float:
        """The objective's value of job j at option o on server s (GPU-type
        speed of s; ``span`` factor; ``n`` GPUs for an elastic size)."""
        job = self.jobs[j]
        speed = self.speed(j, s) if (s is not None and job.gpus) else 1.0
        scale = 1.0
        if n is not None and n != job.gpus:
            from ..objectives import scale_factor
            scale = scale_factor(job.profile, job, n)
        return self.objective.coef(job, self.options[j][o].base, speed=speed, span=span,
                                   scale=scale, gpus=n)

    def best_coef(self, j: int, o: int) -> float:
        """The best value of job j at option o over the GPU types it may use
        (in-server span factor 1)."""
        job = self.jobs[j]
        prof = job.profile
        speeds = [prof.speed(t) if prof is not None else 1.0
                  for t, ok in zip(self.types, self.type_ok[j]) if ok] if job.gpus else [1.0]
        return self.objective.coef(job, self.options[j][o].base, speed=max(speeds, default=1.0))

    def upper_coef(self, j: int) -> float:
        """An upper bound of job j's value over every option, server, span
        level and size (valid for every profile the API accepts)."""
        job = self.jobs[j]
        types = [self.types[t] for t in range(len(self.types)) if self.type_ok[j, t]]
        return self.objective.upper(self.cluster, job, [o.base for o in self.options[j]],
                                    types or [None])

    def value_of(self, j: int, a: Assign) -> float:
        """The objective's real value of job j placed as ``a`` -- the value of
        its [`placement`][alloc.problem.Problem.placement], computed on indices (no strings, no
        objects)."""
        job = self.jobs[j]
        obj = self.objective
        if "grid" not in obj.factors and "speed" not in obj.factors:
            if obj.factors:                                   # milli-GPU
                return float(sum(m for _, m in a.gpus))
            return 1.0
        v = job.weight * round(self.throughput_of(j, a), 9)
        prof = job.profile
        if prof is not None and prof.goodput is not None and job.current is not None \
                and prof.goodput.restart_factor < 1.0 and not a.same_as(self.current_assign(j)):
            v *= prof.goodput.restart_factor
        return v

    def throughput_of(self, j: int, a: Assign) -> float:
        """[`alloc.objectives.throughput`][alloc.objectives.throughput] of job j placed as ``a``,
on indices: the one formula ([`alloc.objectives.rate`][alloc.objectives.rate]) on the GPU
        types, the span level and the number of servers read from the index arrays."""
        job = self.jobs[j]
        n = len(a.gpus)
        cpu = sum(v for _, v in a.cpu)
        mem = sum(v for _, v in a.mem)
        if not n:
            return rate(job, 0, cpu, mem, (), None, servers=0)
        servers, gs = self.cluster.servers, self.gpu_server
        where = [gs[g] for g, _ in a.gpus]
        types = [servers[s].gpu_type for s in where]
        held = len(set(where)) if job.profile is not None and job.profile.goodput is not None \
            else None                                 # only a goodput job's speed reads it
        return rate(job, n, cpu, mem, types, self.span_level_of(a) if n > 1 else None,
                    servers=held)

    def span_level_of(self, a: Assign) -> str:
        """The innermost level one node of which holds all of ``a``'s GPUs."""
        gpus = [g for g, _ in a.gpus]
        for level in reversed(self.levels):
            dom = self.domain[level]
            d0 = dom[gpus[0]]
            if all(dom[g] == d0 for g in gpus[1:]):
                return level
        return CLUSTER
