r"""One compile step shared by every solver.

[`Problem`][alloc.problem.Problem] turns a cluster and its jobs into integer-indexed arrays:
servers ``s = 0..S-1`` (capacities ``C_s``, ``M_s``, ``G_s``, GPU type ``t_s``),
GPUs ``g = 0..G-1`` (server, domain id at each hierarchy level), jobs
``j = 0..J-1`` with their *options* (CPU/memory points: the request, or any
Pareto-optimal cell of the profile's grid) and the objective's coefficient of
job ``j`` at option ``o`` on a server of type ``t`` ([`Problem.coef`][alloc.problem.Problem.coef]).

Live state.  A job with ``current`` is *running*: it is in `Problem.fixed`
(its current assignment) and stays there unless the solver declares the
capability to move or stop it and the call allows it.  The capacities left
after the fixed jobs are `free_cpu`, `free_mem` (per server) and
`gpu_free` (milli per GPU).  `pending` lists the jobs a solver
places: not running and placeable on this cluster now; a well-formed job that
is not (its GPU type absent, wider than any server) is in `reasons`
with one line saying why, and stays unplaced.

Order.  `rank` orders the jobs: the caller's explicit ``order`` (a ranked
list of job ids, as LAS/FIFO/Tiresias schedulers produce), else priority
(highest first) then input order.  [`job_order`][alloc.problem.job_order] sorts by it.

Preemption.  ``preempt=None`` (the default): a solver that declares
``preemption`` may stop a running job where the tenancy rules allow it
([outranks][alloc.tenancy.outranks]).  ``preempt="order"``: the caller's order
decides instead (`order_rank`); the core stops the victims and places the
jobs they are stopped for before the solver runs ([alloc.preempt][]), and
those placements are `pinned` -- running for the solver, never moved or
stopped by it.

Solvers return a [`Solution`][alloc.problem.Solution] (job index ->
[`Assign`][alloc.problem.Assign]);
[`alloc.solve.allocate`][alloc.solve.allocate] turns it into an
[`Allocation`][alloc.model.Allocation],
recomputing throughput and value from the placement.

The package: `assign` (the index form: GridPoint, Assign, Solution),
`points` (a job's options), `placeable` (whether a job fits the empty
cluster), `index` (the attributes and masks), `live` (running jobs, pending
jobs, free capacities), `ranks` (ranks and the preemption rules),
`evaluate` (the objective on indices, through `alloc.objectives.rate`),
`build` (assignments and placements), `core` (the `Problem` and
`compile_problem`), `jobs` (job order and job types).
"""
from __future__ import annotations

from ..arrays import ClusterArrays, cluster_arrays
from ..deprecation import renamed
from ..model import MILLI
from .assign import Assign, GridPoint, Solution, add_assign, split
from .build import option_of
from .core import Problem, compile_problem
from .jobs import job_order, job_type_key, job_types
from .placeable import placeable_reason
from .points import pareto_options
from .ranks import order_ranks

__all__ = ["Assign", "ClusterArrays", "add_assign", "GridPoint", "Problem", "Solution",
           "cluster_arrays", "compile_problem", "job_order", "job_type_key", "order_ranks",
           "job_types", "option_of", "pareto_options", "placeable_reason", "split", "MILLI"]


__getattr__ = renamed(__name__, {"Option": "GridPoint"}, globals())
