r"""``milp`` (PuLP -> HiGHS) and ``milp-cbc`` (PuLP -> CBC): the aggregated
pattern model of :mod:`alloc.solvers.exact.formulation` as a mixed-integer program.

Variables, constraints and objective are those of the formulation module:

.. math::

    \max \sum_{c,p} val_p z_{cp} + \sum_{t,o,k} v^{sp}_{tok} x_{tok}
    \quad\text{s.t.}\quad \sum_p z_{cp} \le n_c,\;
    \sum_{c,p,o} a_{p,(t,o)} z_{cp} + \sum_{o,k} x_{tok} \le N_t,\;
    g_t x_{tok} \le \sum_{c\in k,p} a_{p,unit(t,o)} z_{cp},\; z, x \in \mathbb{Z}_{\ge 0}

``z_cp`` counts the servers of class ``c`` loaded with pattern ``p`` (a
multiset of job-type/option items that fits one server), ``x_tok`` the jobs of
type ``t`` at option ``o`` spread over the servers of group ``k``.

* Symmetry: servers of a class and jobs of a type only appear as counts.
* Columns: heuristic solutions seed the pool; the LP relaxation (HiGHS through
  scipy, else GLOP) gives duals ``mu_c, pi_t, rho_tok``; the pricing problem
  of each class (a small MIP over item counts with the pattern rows: CPU,
  memory, GPUs per switch/socket/server, milli-GPU slots) is solved by the
  same MIP engine, and its proven bound gives the Lagrangian bound ``LP +
  sum_c n_c max(0, rc*_c)``.
* Bound: min(big-machine LP, Lagrangian / Gilmore-Gomory LP bound, the
  bound proven by the descending-target enumeration: every pattern with
  reduced cost >= T - LP, reduced-cost fixing and the cut value >= T),
  rounded down to the objective step when job values are decimal multiples.
* Integer master: the MIP over the pool, warm-started from the best heuristic
  (HiGHS: ``setSolution``; CBC: PuLP's ``warmStart``).
* Status honesty: HiGHS counts as proven only for model status ``kOptimal``
  with ``mip_rel_gap = 0``; CBC only when PuLP's ``sol_status`` is
  ``LpSolutionOptimal`` (CBC "Stopped on time" maps to integer-feasible, not
  optimal).  The final status is OPTIMAL only when the recomputed value reaches
  the bound.
* Decoding as in the formulation module (pattern layouts, index order).
"""
from __future__ import annotations

import math

from ...problem import Problem, Solution
from ...solve import register
from ..heuristics import improve  # noqa: F401  (registers the warm-start heuristics)
from .formulation import INF, Backend, LinearModel, LinearResult, solve_exact


class PulpBackend(Backend):
    """A :class:`LinearModel` through PuLP with HiGHS or CBC."""

    def __init__(self, engine: str = "highs"):
        self.engine = engine
        self.name = f"pulp-{engine}"

    def _solver(self, time_limit: float, seed: int, start):
        import pulp
        tl = max(0.01, float(time_limit))
        if self.engine == "cbc":
            return pulp.PULP_CBC_CMD(msg=False, timeLimit=tl, gapRel=0.0,
                                     warmStart=start is not None), "cbc"
        try:
            import highspy  # noqa: F401
        except ImportError:
            return pulp.HiGHS_CMD(msg=False, timeLimit=tl, gapRel=0.0), "highs-cmd"
        return _highs_with_start(pulp)(msg=False, timeLimit=tl, gapRel=0.0, gapAbs=1e-9,
                                        random_seed=int(seed), start=start), "highs"

    def solve(self, model: LinearModel, *, time_limit: float, hint=None,
              seed: int = 0) -> LinearResult:
        import pulp
        prob = pulp.LpProblem(model.name or "m", pulp.LpMaximize)
        xs = [pulp.LpVariable(f"x{i}", lowBound=lb if lb > -INF else None,
                              upBound=ub if ub < INF else None,
                              cat=pulp.LpInteger if integer else pulp.LpContinuous)
              for i, (lb, ub, integer) in enumerate(zip(model.lb, model.ub, model.integer))]
        prob += pulp.lpSum(v * xs[k] for k, v in sorted(model.obj.items())) + model.obj_const
        for r, (coefs, lo, hi) in enumerate(model.rows):
            if not coefs:
                continue
            expr = pulp.lpSum(v * xs[k] for k, v in coefs.items())
            if lo == hi:
                prob += (expr == hi), f"r{r}"
            else:
                if hi < INF:
                    prob += (expr <= hi), f"r{r}u"
                if lo > -INF:
                    prob += (expr >= lo), f"r{r}l"
        start = None
        if hint is not None:
            start = [float(v) for v in hint]
            for x, v in zip(xs, hint):
                x.setInitialValue(v)
        solver, kind = self._solver(time_limit, seed, start)
        try:
            prob.solve(solver)
        except pulp.PulpSolverError as exc:
            return LinearResult("unknown", stats={"error": str(exc)})
        stats = {"engine": kind}
        sol_ok = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
        bound = None
        status = "unknown"
        if kind == "highs":
            import highspy
            h = prob.solverModel
            ms = h.getModelStatus()
            info = h.getInfo()
            stats["nodes"] = int(getattr(info, "mip_node_count", 0) or 0)
            if ms == highspy.HighsModelStatus.kOptimal:
                status = "optimal"
            elif ms == highspy.HighsModelStatus.kInfeasible:
                return LinearResult("infeasible", stats=stats)
            elif sol_ok:
                status = "feasible"
            # PuLP hands HiGHS the negated objective (minimisation); its
            # constant may or may not reach HiGHS: measure the offset
            db = getattr(info, "mip_dual_bound", None)
            if (db is not None and math.isfinite(db) and any(model.integer) and sol_ok
                    and status != "unknown"):
                xv = [float(v.varValue or 0.0) for v in xs]
                delta = model.value(xv) + float(info.objective_function_value)
                bound = -db + delta
        else:
            if prob.sol_status == pulp.LpSolutionOptimal:
                status = "optimal"
            elif prob.status == pulp.LpStatusInfeasible:
                return LinearResult("infeasible", stats=stats)
            elif sol_ok:
                status = "feasible"
        if status == "unknown" or not sol_ok:
            return LinearResult("unknown", bound=bound, stats=stats)
        x = [float(v.varValue or 0.0) for v in xs]
        x = [round(v) if model.integer[i] else v for i, v in enumerate(x)]
        obj = model.value(x)
        if status == "optimal":
            bound = obj if bound is None else max(bound, obj)
        if bound is not None:
            bound += 1e-7 * max(1.0, abs(bound))
        return LinearResult(status, x, obj, bound, stats)


_HIGHS_CLS = None


def _highs_with_start(pulp):
    """pulp.HiGHS that hands a start solution to HiGHS before it runs."""
    global _HIGHS_CLS
    if _HIGHS_CLS is not None:
        return _HIGHS_CLS

    class HiGHSStart(pulp.HiGHS):
        def __init__(self, *args, start=None, **kw):
            super().__init__(*args, **kw)
            self.start = start

        def callSolver(self, lp):
            if self.start is not None:
                import highspy
                sol = highspy.HighsSolution()
                vals = [0.0] * len(lp.variables())
                for var in lp.variables():
                    k = int(var.name[1:])
                    if k < len(self.start):
                        vals[var.index] = self.start[k]
                sol.col_value = vals
                sol.value_valid = True
                lp.solverModel.setSolution(sol)
            lp.solverModel.run()

    _HIGHS_CLS = HiGHSStart
    return HiGHSStart


CAPS = ("sharing", "grid", "locality", "spread")


@register("milp", exact=True, capabilities=CAPS, requires=("pulp",),
          description="MILP (PuLP -> HiGHS) on an aggregated pattern model "
                      "(column generation, warm-started, proven bound)")
def solve(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    """Exact solver: HiGHS on server-class patterns x job types."""
    return solve_exact(problem, PulpBackend("highs"), time_limit=time_limit, seed=seed, **options)


@register("milp-cbc", exact=True, capabilities=CAPS, requires=("pulp",),
          description="MILP (PuLP -> CBC) on an aggregated pattern model")
def solve_cbc(problem: Problem, *, time_limit=None, seed=0, **options) -> Solution:
    """Exact solver: CBC on server-class patterns x job types."""
    return solve_exact(problem, PulpBackend("cbc"), time_limit=time_limit, seed=seed, **options)
