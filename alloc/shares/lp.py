r"""The share LPs written out in full, one row per job, solved by HiGHS through
[`alloc.kernel`][alloc.kernel] -- with space sharing (pairs) priced in by column
generation (the model stays loaded in HiGHS and each re-solve starts from the
last basis).  This is the path for problems with ``pairs``, and the plain
reference the structured solver of `alloc.shares.core` is tested
against.

Columns: ``X_ij`` (job ``i`` alone on ``sf_i`` GPUs of type ``j``) and
``Y_qj`` (pair ``q = (a, b)`` together on the same ``sf`` GPUs of type ``j``).

$$
\sum_j X_{ij} + \sum_{q \ni i}\sum_j Y_{qj} \le 1 \quad (v_i), \qquad
\sum_i sf_i X_{ij} + \sum_q sf_q Y_{qj} \le n_j \quad (p_j)
$$

*Requirement form*: $\max\lambda$ s.t.
$\sum_j a_{ij}X_{ij} + \sum_{q\ni i}\sum_j a^q_{ij} Y_{qj} \ge
b_i\lambda + c_i\ (u_i)$.  *Sum form*: $\max \sum_{ij} g_{ij}X_{ij} +
\sum_{qj}(g^q_{aj} + g^q_{bj})Y_{qj}$.

A pair column prices at $u_a a^q_{aj} + u_b a^q_{bj} - v_a - v_b -
sf_q p_j$ (requirement form; ``g`` and no ``u`` in the sum form); columns
with a positive price are added until none is left, so the answer is the
optimum over every pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from ..deadline import Deadline
from ..kernel import INF, LinearModel, session
from ..model import Status
from .core import LPResult

#: Pair columns added per pricing round, at most.
BATCH = 1000
#: A reduced cost above this (relative to the objective scale) prices a column in.
PRICE_TOL = 1e-9
MASTER_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True, eq=False)
class FullLP:
    """One share LP over jobs and pairs.

    Attributes
    ----------
    A : ndarray (m, k)
        Value per unit of time alone: ``a_ij`` (requirement form) or
        ``g_ij`` (sum form).
    w : ndarray (m,)
        GPUs per unit of time (scale factors).
    n : ndarray (k,)
        GPUs of each type.
    b, c : ndarray (m,) or None
        Requirement ``>= b_i lambda + c_i`` (None: sum form).
    pa, pb : ndarray of int (P,)
        The two jobs of each pair.
    PA : ndarray (P, k, 2)
        Value per unit of time of each member while the pair shares a type.
    """
    A: np.ndarray
    w: np.ndarray
    n: np.ndarray
    b: np.ndarray | None = None
    c: np.ndarray | None = None
    pa: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    pb: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    PA: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 2)))

    @property
    def requirement(self) -> bool:
        """True for the requirement form (``b`` given: maximise ``lambda``),
        False for the sum form (maximise total value)."""
        return self.b is not None


#: A full LP solve's result: the one share LP result type (``u`` is None in
#: the sum form; ``objective`` is ``lambda`` or the sum).
FullSolution = LPResult


def _requirements(lp: FullLP) -> tuple[np.ndarray, np.ndarray]:
    """``(b, c)`` of a requirement-form LP; zeros for the sum form."""
    m = lp.A.shape[0]
    return (lp.b if lp.b is not None else np.zeros(m),
            lp.c if lp.c is not None else np.zeros(m))


def _model(lp: FullLP):
    """The LP with every single column and no pair column yet."""
    m, k = lp.A.shape
    b, c = _requirements(lp)
    need = (b > 0) | (c > 0) if lp.requirement else np.ones(m, dtype=bool)
    xi, xj = np.nonzero(lp.A > 0)
    model = LinearModel("shares-full", maximize=True)
    lam = model.add_var(-INF, INF, obj=1.0) if lp.requirement else -1
    xcol = model.add_vars(len(xi), 0.0, INF, obj=None if lp.requirement else lp.A[xi, xj])
    ns = np.maximum(lp.n, 1e-300)                   # capacity rows scaled to O(1)
    rows, cols, vals = [xi, m + xj], [xcol, xcol], [np.ones(len(xi)), lp.w[xi] / ns[xj]]
    nrow = m + k
    lo, hi = [np.full(m + k, -INF)], [np.ones(m), lp.n / ns]
    if lp.requirement:
        r = m + k
        rows += [r + xi, r + np.arange(m)]
        cols += [xcol, np.full(m, lam)]
        vals += [lp.A[xi, xj], -b]
        nrow += m
        lo.append(np.where(need, c, -INF))
        hi.append(np.full(m, INF))
    M = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(nrow, model.n))
    model.add_rows(M, np.concatenate(lo), np.concatenate(hi))
    return model, (lam, xi, xj, xcol)


def _pair_columns(lp: FullLP, qcols: np.ndarray, nrow: int):
    """Costs and coefficients (one column each) of the pair columns ``qcols``
    (flat indices ``q * k + j``): both members' time and value rows, the
    type's capacity row once."""
    m, k = lp.A.shape
    qi, qj = qcols // k, qcols % k
    a, b = lp.pa[qi], lp.pb[qi]
    cols = np.arange(len(qcols))
    ns = np.maximum(lp.n, 1e-300)
    rows = [a, b, m + qj]
    vals = [np.ones(len(qi)), np.ones(len(qi)), lp.w[a] / ns[qj]]
    if lp.requirement:
        rows += [m + k + a, m + k + b]
        vals += [lp.PA[qi, qj, 0], lp.PA[qi, qj, 1]]
        obj = np.zeros(len(qi))
    else:
        obj = lp.PA[qi, qj].sum(axis=1)
    M = sparse.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.tile(cols, len(rows)))),
                          shape=(nrow, len(qcols)))
    return obj, M


def _prices(lp: FullLP, sol, m: int, k: int):
    d = sol.duals
    v = np.maximum(d[:m], 0.0)
    p = np.maximum(d[m:m + k], 0.0) / np.maximum(lp.n, 1e-300)
    u = np.maximum(-d[m + k:2 * m + k], 0.0) if lp.requirement else None
    return u, v, p


def _reduced(lp: FullLP, u, v, p) -> np.ndarray:
    """Reduced cost of every pair column, shape (P, k) (``-inf`` where the
    pair cannot run)."""
    val = lp.PA[:, :, 0], lp.PA[:, :, 1]
    if lp.requirement:
        gain = u[lp.pa, None] * val[0] + u[lp.pb, None] * val[1]
    else:
        gain = val[0] + val[1]
    rc = gain - v[lp.pa, None] - v[lp.pb, None] - lp.w[lp.pa, None] * p[None, :]
    return np.where((val[0] > 0) | (val[1] > 0), rc, -np.inf)


class FullSolver:
    """A `FullLP` kept loaded in one [`alloc.kernel.session`][alloc.kernel.session]:
    priced pair columns are appended (re-solved by primal simplex from the
    last basis) and, between water-filling rounds, the requirements change
    in place (`set_requirements`, re-solved by dual simplex), so pair
    columns priced in one round serve the next.

    Parameters
    ----------
    lp : FullLP
    column_generation : bool
        Price pair columns in (default); False puts every pair column in
        the LP at once (the plain reference).
    params : dict, optional
        HiGHS options of every solve (e.g. ``{"solver": "ipm"}``).
    """

    def __init__(self, lp: FullLP, column_generation: bool = True, params: dict | None = None):
        self.lp = lp
        self.cg = column_generation
        self.model, self.maps = _model(lp)
        self.params = params or {}
        warm = {} if self.params else {"presolve": "off"}
        self.session = session(self.model, **(dict(MASTER_OPTIONS) | warm | self.params))
        P = len(lp.pa)
        allq = (np.flatnonzero(((lp.PA[:, :, 0] > 0) | (lp.PA[:, :, 1] > 0)).ravel())
                if P else np.zeros(0, dtype=int))
        self.qcols = np.zeros(0, dtype=int)
        self.ycol = np.zeros(0, dtype=int)
        self.pending = allq if (P and not column_generation) else np.zeros(0, dtype=int)
        self.strategy: dict[str, Any] = {}

    def set_requirements(self, b: np.ndarray, c: np.ndarray) -> None:
        """New requirements ``>= b_i lambda + c_i`` for the next solve (a job
        with ``b_i = c_i = 0`` has none)."""
        lp = self.lp
        m, k = lp.A.shape
        lam = self.maps[0]
        rows = m + k + np.arange(m)
        need = (b > 0) | (c > 0)
        old_b, old_c = _requirements(lp)
        changed = np.flatnonzero(b != old_b)
        self.session.set_coefficients(rows[changed], np.full(len(changed), lam), -b[changed])
        old_lo = np.where((old_b > 0) | (old_c > 0), old_c, -INF)
        lo = np.where(need, c, -INF)
        moved = np.flatnonzero(lo != old_lo)
        self.session.set_row_bounds(rows[moved], lo[moved], INF)
        self.lp = FullLP(lp.A, lp.w, lp.n, b, c, lp.pa, lp.pb, lp.PA)
        self.strategy = {} if self.params else {"simplex_strategy": 1}

    def solve(self, deadline: Deadline) -> FullSolution:
        """Solve to optimality over every pair column (see the module notes),
        every HiGHS call on the time left before ``deadline``."""
        lp = self.lp
        m, k = lp.A.shape
        P = len(lp.pa)
        rounds = 0
        while True:
            if len(self.pending):
                obj, M = _pair_columns(lp, self.pending, self.model.m)
                self.ycol = np.concatenate([self.ycol, self.session.add_columns(obj, 0.0, INF, M)])
                self.qcols = np.concatenate([self.qcols, self.pending])
                self.pending = np.zeros(0, dtype=int)
                if not self.params:
                    self.strategy = {"simplex_strategy": 4}
            rounds += 1
            sol = (self.session.solve(deadline.left(), **self.strategy)
                   if deadline.left() > 1e-3 else None)
            stats = {"rounds": rounds, "pair_columns": len(self.qcols)}
            if sol is None or sol.status is not Status.OPTIMAL:
                st = sol.status if sol is not None and sol.status is Status.INFEASIBLE else Status.UNKNOWN
                return FullSolution(st, stats=stats)
            assert sol.x is not None and sol.objective is not None   # an optimal LP has both
            u, v, p = _prices(lp, sol, m, k)
            if P and self.cg:
                rc = _reduced(lp, u, v, p).ravel()
                rc[self.qcols] = -np.inf
                new = np.flatnonzero(rc > PRICE_TOL * max(1.0, abs(float(sol.objective))))
                if len(new) > BATCH:
                    new = new[np.argpartition(-rc[new], BATCH)[:BATCH]]
                if len(new):
                    self.pending = new
                    continue
            lam, xi, xj, xcol = self.maps
            X = np.zeros((m, k))
            X[xi, xj] = sol.x[xcol]
            Y = np.zeros((P, k))
            Y[self.qcols // k, self.qcols % k] = sol.x[self.ycol]
            obj = float(sol.x[lam]) if lp.requirement else float(sol.objective)
            return FullSolution(Status.OPTIMAL, np.maximum(X, 0), np.maximum(Y, 0), obj, obj, u, v, p,
                                stats)


def solve_full(lp: FullLP, deadline: Deadline, column_generation: bool = True,
               params: dict | None = None) -> FullSolution:
    """Solve a `FullLP` to optimality with HiGHS (one
    `FullSolver`).

    Parameters
    ----------
    lp : FullLP
    deadline : Deadline
        Every HiGHS call gets the time left on it.
    column_generation : bool
        Price pair columns in (default); False puts every pair column in
        the one LP (the plain reference).
    params : dict, optional
        HiGHS options (e.g. ``{"solver": "ipm"}``).

    Returns
    -------
    FullSolution
        ``OPTIMAL`` when HiGHS solved the LP and no pair column prices in.
    """
    return FullSolver(lp, column_generation, params).solve(deadline)


__all__ = ["FullLP", "FullSolution", "FullSolver", "solve_full"]
