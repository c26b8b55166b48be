"""HiGHS engine (through ``highspy``): LPs with duals, MIPs with a proven bound.

A MIP counts as proven only for model status ``kOptimal`` with
``mip_rel_gap = 0``; a run stopped by the time limit with a solution is
``FEASIBLE`` with HiGHS's dual bound.  An LP stopped early has no solution and
no bound (``UNKNOWN``).

HiGHS's MIP presolve checks its time limit rarely: on pattern masters it took
0.6 s of a 0.2 s limit at 2,000 columns and 5.8 s of 2 s at 26,000 (about
0.3 ms a column on a loaded two-core machine).  A MIP is presolved only when
that cost, `PRESOLVE_SECONDS_PER_COLUMN` a column, stays within a
quarter of its time limit (the caller may still set ``presolve``).

Its sub-MIP heuristics (RINS and RENS) do not keep the time limit either: a
pattern master of 3,903 columns given 0.9 s ran 22 to 24 s in half the runs,
inside a sub-MIP at the root (``Max sub-MIP depth 1``), and 0.9 s in six runs
of six with both off.  They are off unless the caller sets them.
"""
from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import Status
from .model import INF, LinearModel
from .result import Result

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def _lp(model: LinearModel, integer: bool) -> Any:
    import highspy
    big = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = model.n, model.m
    lp.col_cost_ = model.objective_vector()
    lp.offset_ = float(model.obj_const)
    lp.col_lower_ = np.array([v if v > -INF else -big for v in model.lb], dtype=float)
    lp.col_upper_ = np.array([v if v < INF else big for v in model.ub], dtype=float)
    lp.row_lower_ = np.array([v if v > -INF else -big for v in model.row_lo], dtype=float)
    lp.row_upper_ = np.array([v if v < INF else big for v in model.row_hi], dtype=float)
    A = model.matrix().tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.sense_ = highspy.ObjSense.kMaximize if model.maximize else highspy.ObjSense.kMinimize
    if integer:
        kinds = highspy.HighsVarType
        lp.integrality_ = [kinds.kInteger if i else kinds.kContinuous for i in model.integer]
    return lp


#: a MIP whose largest objective coefficient exceeds this is solved with its
#: objective divided by a power of two (`solve_highs`)
COST_SCALE_ABOVE = 1e6


def cost_scale(model: LinearModel) -> float:
    """The power of two a MIP's objective is divided by for HiGHS: 1, or one
    that brings the largest coefficient to at most `COST_SCALE_ABOVE` / 1000.
    HiGHS answered a wrong optimum (25,000 where 26,000 is feasible, its dual
    bound at 25,000 too) on a tenancy model of 41 columns whose objective
    coefficients ran from 1e10 to 1.2e11, and the right one with the
    objective divided by 1,000 or more; the answer is the same model's.

    Examples
    --------
    >>> from alloc.kernel import LinearModel
    >>> from alloc.kernel.highs import cost_scale
    >>> m = LinearModel("x")
    >>> v = m.add_var(0, 1, integer=True)
    >>> m.set_objective({v: 1.2e11})
    >>> cost_scale(m)
    134217728.0
    """
    top = max((abs(v) for v in model.obj.values()), default=0.0)
    if top <= COST_SCALE_ABOVE:
        return 1.0
    return float(2.0 ** math.ceil(math.log2(top * 1000.0 / COST_SCALE_ABOVE)))


#: the MIP presolve's cost per column assumed by the rule above (seconds)
PRESOLVE_SECONDS_PER_COLUMN = 4e-4


def solve_highs(model: LinearModel, time_limit: float, *, seed: int = 0, relax: bool = False,
                mip_rel_gap: float = 0.0, **params: Any) -> Result:
    """Solve ``model`` with HiGHS within ``time_limit`` seconds."""
    import highspy
    t0 = time.perf_counter()
    integer = any(model.integer) and not relax
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed) % (2 ** 31 - 1))
    if integer:
        h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
        h.setOptionValue("mip_abs_gap", 1e-9)
    if integer:
        for k in ("mip_heuristic_run_rins", "mip_heuristic_run_rens"):
            if k not in params:
                h.setOptionValue(k, False)
    if integer and "presolve" not in params and \
            model.n * PRESOLVE_SECONDS_PER_COLUMN > 0.25 * float(time_limit):
        h.setOptionValue("presolve", "off")
    for k, v in params.items():
        h.setOptionValue(k, v)
    lp = _lp(model, integer)
    div = cost_scale(model) if integer else 1.0
    if div != 1.0:
        lp.col_cost_ = np.asarray(lp.col_cost_, dtype=float) / div
        lp.offset_ = float(lp.offset_) / div
        h.setOptionValue("mip_abs_gap", 1e-9 / div)
    h.passModel(lp)
    # the time limit covers building and passing the model too
    left = float(time_limit) - (time.perf_counter() - t0)
    if left <= 0:
        return Result(Status.UNKNOWN, stats={"engine": "highs", "wall": time.perf_counter() - t0,
                                             "timed_out": "build"})
    h.setOptionValue("time_limit", max(1e-3, left))
    if integer and model.hint:
        start = np.zeros(model.n)
        for col, val in model.hint.items():
            start[col] = val
        hint = highspy.HighsSolution()
        hint.col_value = start.tolist()
        hint.value_valid = True
        h.setSolution(hint)
    h.run()
    ms = h.getModelStatus()
    info = h.getInfo()
    stats = {"engine": "highs", "wall": time.perf_counter() - t0, "model_status": str(ms)}
    MS = highspy.HighsModelStatus
    if ms == MS.kInfeasible:
        return Result(Status.INFEASIBLE, stats=stats)
    has_sol = int(getattr(info, "primal_solution_status", 0)) == 2
    if not has_sol:
        return Result(Status.UNKNOWN, stats=stats)
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=float)
    if integer:
        ints = np.asarray(model.integer, dtype=bool)
        x[ints] = np.round(x[ints])
        stats["nodes"] = int(getattr(info, "mip_node_count", 0) or 0)
    obj = model.value(x)
    sense = 1.0 if model.maximize else -1.0
    if ms == MS.kOptimal:
        if integer:
            db = float(info.mip_dual_bound) * div
            bound = sense * max(sense * obj, sense * db) if np.isfinite(db) else obj
            bound += sense * 1e-7 * max(1.0, abs(bound))
            return Result(Status.OPTIMAL, x, obj, bound, stats=stats)
        return Result(Status.OPTIMAL, x, obj, obj, np.asarray(sol.row_dual, dtype=float),
                      np.asarray(sol.col_dual, dtype=float), stats)
    if integer:
        db = float(getattr(info, "mip_dual_bound", INF)) * div
        proven = db + sense * 1e-7 * max(1.0, abs(db)) if np.isfinite(db) else None
        return Result(Status.FEASIBLE, x, obj, proven, stats=stats)
    return Result(Status.UNKNOWN, stats=stats)



class HighsSession:
    """An LP kept inside HiGHS between solves, for column generation: columns
    are added to the loaded model and each [`solve`][alloc.kernel.solve] starts from the last
    optimal basis (the new columns enter at their lower bound), instead of
    rebuilding the model and solving from scratch.

    Parameters
    ----------
    model : LinearModel
        The starting LP (integrality is ignored); it is not modified.
    **params
        HiGHS options (e.g. ``dual_feasibility_tolerance=1e-10``).
    """

    def __init__(self, model: LinearModel, **params: Any) -> None:
        import highspy
        self._highspy = highspy
        self.maximize = model.maximize
        self.obj_const = float(model.obj_const)
        self.n, self.m = model.n, model.m
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        for k, v in params.items():
            self.h.setOptionValue(k, v)
        self.h.passModel(_lp(model, False))
        self._cost = list(model.objective_vector())

    def add_columns(self, obj: ArrayLike, lb: ArrayLike, ub: ArrayLike, matrix: Any) -> np.ndarray:
        """Append columns: costs ``obj``, bounds ``lb``/``ub`` and their
        coefficients as a sparse matrix with one row per model row.  Returns
        the new column indices."""
        from scipy import sparse
        A = sparse.csc_matrix(matrix)
        count = A.shape[1]
        big = self._highspy.kHighsInf
        lo = np.broadcast_to(np.asarray(lb, dtype=float), (count,))
        hi = np.broadcast_to(np.asarray(ub, dtype=float), (count,))
        c = np.broadcast_to(np.asarray(obj, dtype=float), (count,))
        self.h.addCols(count, c, np.where(lo > -INF, lo, -big), np.where(hi < INF, hi, big), A.nnz,
                       A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data.astype(float))
        self._cost.extend(c.tolist())
        first = self.n
        self.n += count
        return np.arange(first, self.n)

    def set_row_bounds(self, rows: ArrayLike, lo: ArrayLike, hi: ArrayLike) -> None:
        """Change the bounds of ``rows`` (arrays; infinite values allowed)."""
        big = self._highspy.kHighsInf
        r_a = np.asarray(rows, dtype=np.int64)
        lo_a = np.broadcast_to(np.asarray(lo, dtype=float), r_a.shape)
        hi_a = np.broadcast_to(np.asarray(hi, dtype=float), r_a.shape)
        for r, a, b in zip(r_a.tolist(), np.where(lo_a > -INF, lo_a, -big).tolist(),
                           np.where(hi_a < INF, hi_a, big).tolist()):
            self.h.changeRowBounds(int(r), float(a), float(b))

    def set_coefficients(self, rows: ArrayLike, cols: ArrayLike, values: ArrayLike) -> None:
        """Set matrix entries ``A[rows[t], cols[t]] = values[t]`` (0 removes one)."""
        for r, c, v in zip(np.asarray(rows).tolist(), np.asarray(cols).tolist(),
                           np.asarray(values, dtype=float).tolist()):
            self.h.changeCoeff(int(r), int(c), float(v))

    def solve(self, time_limit: float, **options: Any) -> Result:
        """Re-solve from the last basis within ``time_limit`` seconds (HiGHS
        ``options`` set first, e.g. ``simplex_strategy=4`` for primal simplex
        after adding columns): an ``OPTIMAL`` result carries row duals and
        reduced costs (as `solve_highs` does for an LP), anything else
        no solution."""
        t0 = time.perf_counter()
        for k, v in options.items():
            self.h.setOptionValue(k, v)
        self.h.setOptionValue("time_limit", max(1e-3, float(time_limit)))
        self.h.run()
        ms = self.h.getModelStatus()
        stats = {"engine": "highs", "wall": time.perf_counter() - t0, "model_status": str(ms),
                 "columns": self.n}
        MS = self._highspy.HighsModelStatus
        if ms == MS.kInfeasible:
            return Result(Status.INFEASIBLE, stats=stats)
        if ms != MS.kOptimal:
            return Result(Status.UNKNOWN, stats=stats)
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value, dtype=float)
        obj = self.obj_const + float(np.dot(self._cost, x))
        return Result(Status.OPTIMAL, x, obj, obj, np.asarray(sol.row_dual, dtype=float),
                      np.asarray(sol.col_dual, dtype=float), stats)


__all__ = ["HighsSession", "solve_highs"]
