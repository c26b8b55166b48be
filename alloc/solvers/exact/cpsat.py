r"""``cpsat``: the aggregated pattern model of :mod:`alloc.solvers.exact.formulation`
solved with OR-Tools CP-SAT.

Formulation (see the formulation module for the full derivation): server
classes ``c`` (``n_c`` identical servers), job types ``t`` (``N_t`` identical
jobs), items (a job of a type at one CPU/memory option on one server, or one
GPU of a spread job) and patterns ``p`` (item multisets that fit one server:
CPU, memory, whole GPUs under one switch/socket for inner localities,
milli-GPU shares bin-packed into GPUs).

.. math::

    \max \sum_{c,p} val_p z_{cp} + \sum_{t,o,k} v^{sp}_{tok} x_{tok}
    \quad\text{s.t.}\quad \sum_p z_{cp} \le n_c,\;
    \sum_{c,p,o} a_{p,(t,o)} z_{cp} + \sum_{o,k} x_{tok} \le N_t,\;
    g_t x_{tok} \le \sum_{c\in k,p} a_{p,unit(t,o)} z_{cp},\; z, x \in \mathbb{Z}_{\ge 0}

* Symmetry: servers of a class and jobs of a type are never named in the
  model (``z`` and ``x`` are counts), so no permutation symmetry is left.
* Columns: the pool starts from the heuristic solutions (each server's load is
  a pattern); the pricing problem of each class (maximise ``sum_i (v_i -
  pi_i) a_i - mu_c`` over the pattern rows) is a small CP-SAT model solved to
  optimality with one worker; its proven bound makes ``LP + sum_c n_c
  max(0, rc*_c)`` a valid upper bound at every round.
* Bound: min(big-machine LP, Lagrangian / Gilmore-Gomory LP bound, the
  bound proven by the descending-target enumeration: every pattern with
  reduced cost >= T - LP, reduced-cost fixing and the cut value >= T),
  rounded down to the objective step when job values are decimal multiples.
* Integer master: CP-SAT with the warm start as a hint, deterministic
  single-worker search, ``random_seed = seed``, full LP linearization
  (``linearization_level = 2``) for masters up to 2,500 columns; decimal coefficients are scaled to exact
  integers (other fractional rows are widened by their rounding error).
* Decoding: pattern layouts give GPU offsets, copies go to the class's servers
  in index order, spread jobs take runs of unit slots; the result is checked
  and never worse than the warm start (best of ``proportional``,
  ``best-fit``, ``greedy-upgrade``, ``local-search``).
* Status: OPTIMAL only when the recomputed value reaches the bound.
"""
from __future__ import annotations

import math

from ...problem import Problem, Solution
from ...solve import register
from ..heuristics import improve  # noqa: F401  (registers the warm-start heuristics)
from .formulation import INF, Backend, LinearModel, LinearResult, solve_exact

SCALE = 10 ** 6
BIG = 10 ** 12


def _is_int(v: float) -> bool:
    return float(v).is_integer()


def decimal_scale(values, max_digits: int = 6) -> int | None:
    """Smallest ``10**k`` (``k <= max_digits``) making every value an integer
    (up to float noise), None when there is none."""
    vals = [float(v) for v in values]
    for k in range(max_digits + 1):
        s = 10 ** k
        if all(abs(v * s - round(v * s)) <= 1e-11 * max(1.0, abs(v * s)) for v in vals):
            return s
    return None


class CpSatBackend(Backend):
    """CP-SAT engine for :class:`LinearModel` (all variables integer)."""
    name = "cpsat"

    def __init__(self, workers: int = 1):
        # one worker: deterministic for a seed (interleaved multi-worker
        # search was much slower on these models)
        self.workers = workers
        self._obj_scale = 1
        from ortools.sat.python import cp_model  # noqa: F401  (load before highspy)

    def _build(self, model: LinearModel):
        from ortools.sat.python import cp_model
        m = cp_model.CpModel()
        xs = []
        for lb, ub, integer, name in zip(model.lb, model.ub, model.integer, model.names):
            if not integer:
                raise ValueError("CP-SAT needs integer variables")
            xs.append(m.new_int_var(int(math.ceil(lb - 1e-9)),
                                    int(math.floor(ub + 1e-9)) if ub < INF else BIG, name))
        for coefs, lo, hi in model.rows:
            if not coefs:
                continue
            sc = decimal_scale(coefs.values())
            if sc is not None:
                # decimal coefficients: an exact integer row after scaling
                items = [(xs[k], int(round(v * sc))) for k, v in coefs.items()]
                lo_ = int(math.ceil(lo * sc - 1e-6)) if lo > -INF else -BIG * 1000
                hi_ = int(math.floor(hi * sc + 1e-6)) if hi < INF else BIG * 1000
            else:
                # scale a fractional row; widen it by the rounding error so the
                # scaled row admits every solution of the real one
                items = [(xs[k], int(round(v * SCALE))) for k, v in coefs.items()]
                err = sum(0.5 * max(abs(model.lb[k]), abs(min(model.ub[k], BIG)))
                          for k in coefs) + 1
                lo_ = int(math.floor(lo * SCALE - err)) if lo > -INF else -BIG * 1000
                hi_ = int(math.ceil(hi * SCALE + err)) if hi < INF else BIG * 1000
            expr = sum(v * x for x, v in items)
            m.add_linear_constraint(expr, lo_, hi_)
        if model.obj:
            ks = sorted(model.obj)
            sc = decimal_scale(model.obj[k] for k in ks)
            if sc is not None:
                m.maximize(sum(int(round(model.obj[k] * sc)) * xs[k] for k in ks))
                self._obj_scale = sc
            else:
                m.maximize(sum(model.obj[k] * xs[k] for k in ks))
                self._obj_scale = 1
        return m, xs

    def _params(self, solver, time_limit: float, seed: int, workers: int):
        solver.parameters.max_time_in_seconds = max(0.01, float(time_limit))
        solver.parameters.random_seed = int(seed)
        if workers <= 1:
            solver.parameters.num_workers = 1
        else:
            solver.parameters.num_workers = workers
            solver.parameters.interleave_search = True

    def solve(self, model: LinearModel, *, time_limit: float, hint=None,
              seed: int = 0) -> LinearResult:
        from ortools.sat.python import cp_model
        m, xs = self._build(model)
        big = model.n > 2000 or hint is not None
        if hint is not None:
            for x, v in zip(xs, hint):
                m.add_hint(x, int(v))
        solver = cp_model.CpSolver()
        self._params(solver, time_limit, seed, self.workers if big else 1)
        if model.name == "master" and model.n <= 2500:
            # small pattern masters (the proof's): the full LP relaxation
            # proves (and finds) far faster than the default linearization;
            # on big pools it costs more than it gains
            solver.parameters.linearization_level = 2
        st = solver.solve(m)
        stats = {"branches": solver.num_branches, "conflicts": solver.num_conflicts,
                 "wall": solver.wall_time}
        if st == cp_model.OPTIMAL:
            status = "optimal"
        elif st == cp_model.FEASIBLE:
            status = "feasible"
        elif st == cp_model.INFEASIBLE:
            return LinearResult("infeasible", stats=stats)
        else:
            return LinearResult("unknown", bound=None, stats=stats)
        x = [solver.value(v) for v in xs]
        obj = model.value(x)
        bound = (solver.best_objective_bound / self._obj_scale + model.obj_const) \
            if model.obj else obj
        if status == "optimal":
            bound = max(bound, obj)
        # CP-SAT's float objective is solved up to a relative 1e-9 tolerance
        bound += 1e-9 * max(1.0, abs(bound))
        return LinearResult(status, x, obj, bound, stats)


@register("cpsat", exact=True, capabilities=("sharing", "grid", "locality", "spread"),
          requires=("ortools",),
          description="CP-SAT on an aggregated pattern model (column generation, "
                      "warm-started, proven bound)")
def solve(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    """Exact solver: CP-SAT on server-class patterns x job types."""
    return solve_exact(problem, CpSatBackend(), time_limit=time_limit, seed=seed, **options)
