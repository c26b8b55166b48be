r"""Gavel's max-min fairness with space sharing, solved exactly at the size of
the job *classes* instead of the job pairs.

The job-level LP (Gavel, OSDI'20, section 3.1, with space sharing) has a
share $x_{ij}$ for job ``i`` alone on type ``j`` and $y_{\{i,i'\}j}$
for the pair $\{i, i'\}$ together on type ``j``:

$$
\max \lambda \ \text{s.t.}\
\kappa_i\Big(\sum_j T_{ij}x_{ij} + \sum_{i'}\sum_j R_{ii'j}\,y_{\{i,i'\}j}\Big) \ge \lambda,\quad
\sum_j x_{ij} + \sum_{i'}\sum_j y_{\{i,i'\}j} \le 1,\quad
\sum_i sf_i x_{ij} + \sum_{\{i,i'\}} sf\,y_{\{i,i'\}j} \le n_j,
$$

with $\kappa_i = sf_i/(w_i P_i)$ ($P_i = \sum_j T_{ij}n_j/N$, the
proportional throughput), i.e. maximise the smallest normalised share.  It
has $m(m-1)/2$ pair shares per type.

**Classes.**  Jobs of one configuration and one weight are interchangeable:
the same rates alone, the same co-located rates with every other job, the
same ``kappa``.  Averaging any feasible solution over the permutations of
each class is feasible and, the objective being concave and symmetric, no
worse; the leximin solution, unique in its values, is itself symmetric.  So
an optimum exists in which all members of a class get the same shares, and
the LP shrinks to one with a variable per (class, type) and per (class pair,
type): with ``C`` classes and ``k`` types, ``C k + C(C+1)k/2`` columns and
``2C + k`` rows, whatever ``m``.  With ``q_c`` members in class ``c``,
$X_{cj}$ its members' total time alone on ``j`` and $Z_{cdj}$ the total
time of (c, d) pairs on ``j`` (each pair counted once):

$$
\sum_j X_{cj} + \sum_{d \ne c}\sum_j Z_{cdj} + 2\sum_j Z_{ccj} \le q_c \ (V_c),\qquad
\sum_c sf_c X_{cj} + \sum_{c \le d} sf_c Z_{cdj} \le n_j \ (P_j),
$$
$$
\kappa_c\Big(\sum_j T_{cj}X_{cj} + \sum_{d\ne c}\sum_j R_{cdj}Z_{cdj}
+ \sum_j (R_{ccj} + R'_{ccj}) Z_{ccj}\Big) - q_c b_c\lambda \ge q_c f_c \ (U_c),
$$

($R_{cdj}$ the rate of the ``c`` member beside a ``d`` member; pairs within
a class need $q_c \ge 2$).  ``b_c = 1, f_c = 0`` for max-min; water-filling
rounds freeze classes at floors ``f_c``.

**Certificate.**  The class duals $(U, V, P)$ are a dual solution of the
*job-level* LP (every job of class ``c`` takes $u_i = U_c$, $v_i = V_c$;
each job-level column's dual constraint is its class column's).  They are
checked column by column, a violation is absorbed into ``V`` (which keeps
them feasible), and the bound is the job-level dual objective
$(\sum_c q_cV_c + \sum_j n_jP_j - \sum_c q_c f_c U_c) / \sum_c q_c b_c U_c$:
``optimal`` means this bound meets the level, a proof for the pair LP of
all ``m(m-1)/2`` pairs.

**Back to jobs.**  Each member of ``c`` gets $X_{cj}/q_c$ alone.  The
(c, d) pair time is split over actual job pairs by the north-west-corner
rule (every ``c`` member needs $\sum_j Z_{cdj}/q_c$ with ``d`` members,
every ``d`` member $\sum_j Z_{cdj}/q_d$): at most $q_c + q_d - 1$ job
pairs, each splitting its time over the types as $Z_{cd\cdot}$ does.
Within a class, the members pair in a ring ($q_c \ge 3$: each with its two
neighbours, $Z_{cc}/q_c$ per pair, so a member is first in one pair and
second in the other) or as the one pair ($q_c = 2$).  So at most
``O(C m)`` job pairs carry time, and every member of a class has the same
shares in total: the class values are the jobs' values, recomputed from the
job-level shares and checked by `alloc.shares.check.violations`.

Units: steps/s, GPUs, fractions of wall-clock time; normalised shares are
dimensionless.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from scipy import sparse

from ...deadline import Deadline
from ...errors import SolverError
from ...kernel import INF, LinearModel, solve
from ...model import Status
from ...shares import check
from .problem import PairedProblem

#: Water-filling keeps a frozen class this share below its level, so later
#: rounds stay feasible under the LP's tolerances (as `alloc.shares` does).
FREEZE_MARGIN = 1e-9
#: Relative gap between the level and the certified bound below which the
#: answer is ``optimal``.
GAP_TOL = 1e-7
#: HiGHS tolerances of every class LP (tight: the certificate is checked).
LP_OPTIONS: dict[str, Any] = {"primal_feasibility_tolerance": 1e-10,
                              "dual_feasibility_tolerance": 1e-10}
#: The inner policies a class LP solves.
INNER = ("water-filling", "max-min")


@dataclass(frozen=True, eq=False)
class PairedShares:
    """Job-level shares of a `PairedProblem`, checked.

    Attributes
    ----------
    problem : PairedProblem
    X : ndarray (m, k)
        Each job's time alone on each type.
    pa, pb : ndarray of int (P,)
        The job pairs that share GPUs for some time.
    Y : ndarray (P, k)
        Each pair's time together on each type.
    status : Status
        ``optimal`` when every LP was solved and the max-min level is
        certified; ``feasible`` otherwise (heuristics, stopped searches).
    bound : float or None
        A proven upper bound on the max-min level (None without one).
    wall_time_s : float
    stats : dict

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.classes import solve_classes
    >>> p = PairedProblem.build(("v100",), [1], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 1])
    >>> r = solve_classes(p)
    >>> r.status.value, round(r.objective, 6), len(r.pa)
    ('optimal', 0.75, 1)
    """
    problem: PairedProblem
    X: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    Y: np.ndarray
    status: Status
    bound: float | None = None
    wall_time_s: float = 0.0
    stats: dict = field(default_factory=dict)

    @cached_property
    def shares_problem(self):
        """The ``alloc.shares/1`` problem of these jobs with exactly the pairs
        that carry time (what the shares are checked against)."""
        return self.problem.to_shares(self.pa, self.pb)

    @cached_property
    def effective(self) -> np.ndarray:
        """Each job's effective throughput (steps/s), recomputed from the shares."""
        return check.effective(self.shares_problem, self.X, self.Y)

    @cached_property
    def normalized(self) -> np.ndarray:
        r"""Each job's normalised share $sf_i\,eff_i/(w_i P_i)$ (NaN: cannot run)."""
        return check.normalized_shares(self.shares_problem, self.effective)

    @property
    def objective(self) -> float | None:
        """The smallest normalised share of the jobs that can run (recomputed)."""
        vals = self.normalized[self.problem.served]
        return float(vals.min()) if len(vals) else None

    def violations(self) -> list[str]:
        """Every rule the shares break (`alloc.shares.check.violations`)."""
        return check.violations(self.shares_problem, self.X, self.Y)


# ------------------------------------------------------------------ the LP
@dataclass(frozen=True, eq=False)
class ClassLP:
    """The class-level LP's data (see the module notes).

    Attributes
    ----------
    q, sf, kappa : ndarray (C,)
        Members, scale factor and ``kappa`` of each class.
    served : ndarray of bool (C,)
        Classes that can run somewhere.
    n : ndarray (k,)
        GPUs of each type.
    ac, aj, aval : ndarray
        Alone columns: class, type and rate.
    pc, pd, pj : ndarray
        Pair columns: the two classes (``pc <= pd``) and the type.
    pval : ndarray (Q, 2)
        Rates of the ``pc`` and ``pd`` member (for ``pc == pd`` both are
        the class's; their sum is what the class's members get).
    """
    q: np.ndarray
    sf: np.ndarray
    kappa: np.ndarray
    served: np.ndarray
    n: np.ndarray
    ac: np.ndarray
    aj: np.ndarray
    aval: np.ndarray
    pc: np.ndarray
    pd: np.ndarray
    pj: np.ndarray
    pval: np.ndarray

    @property
    def C(self) -> int:
        """Number of classes."""
        return len(self.q)

    @property
    def k(self) -> int:
        """Number of GPU types."""
        return len(self.n)

    @classmethod
    def of(cls, p: PairedProblem) -> "ClassLP":
        """The class LP of a problem."""
        cm = p.class_model
        q = p.class_count.astype(float)
        sf = p.scale[cm].astype(float)
        A = p.runnable_alone[cm]
        Pc = A @ p.capacity / max(float(p.capacity.sum()), 1e-300)
        served = (A > 0).any(axis=1)
        kappa = np.where(served, sf / (p.class_weight * np.where(Pc > 0, Pc, 1.0)), 1.0)
        ac, aj = np.nonzero(A > 0)
        R = p.runnable_pair[cm][:, cm]
        C = len(cm)
        cc, dd = np.triu_indices(C)
        Rq = R[cc, dd]                                       # (pairs, k, 2)
        ok = Rq.any(axis=2) & ((cc != dd) | (q[cc] >= 2))[:, None]
        ok &= (served[cc] & served[dd])[:, None]
        qi, pj = np.nonzero(ok)
        return cls(q, sf, kappa, served, p.capacity.astype(float), ac, aj, A[ac, aj],
                   cc[qi], dd[qi], pj, Rq[qi, pj])

    def model(self, b: np.ndarray, f: np.ndarray) -> LinearModel:
        """``max lambda`` with requirements ``b_c lambda + f_c`` per member
        (classes with ``b_c = f_c = 0`` have none)."""
        C, k = self.C, self.k
        na, npr = len(self.ac), len(self.pc)
        model = LinearModel("pop-classes", maximize=True)
        model.add_var(-INF, INF, obj=1.0)                    # lambda, column 0
        model.add_vars(na + npr, 0.0, INF)
        a_cols = 1 + np.arange(na)
        p_cols = 1 + na + np.arange(npr)
        same = self.pc == self.pd
        # time rows 0..C-1, capacity rows C..C+k-1, requirement rows C+k..2C+k-1
        rows = [self.ac, self.pc, self.pd[~same], C + self.aj, C + self.pj,
                C + k + self.ac, C + k + self.pc, C + k + self.pd[~same], C + k + np.arange(C)]
        cols = [a_cols, p_cols, p_cols[~same], a_cols, p_cols,
                a_cols, p_cols, p_cols[~same], np.zeros(C, dtype=int)]
        vals = [np.ones(na), np.where(same, 2.0, 1.0), np.ones(int((~same).sum())),
                self.sf[self.ac], self.sf[self.pc],
                self.kappa[self.ac] * self.aval,
                self.kappa[self.pc] * np.where(same, self.pval.sum(axis=1), self.pval[:, 0]),
                self.kappa[self.pd[~same]] * self.pval[~same, 1],
                -self.q * b]
        M = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(2 * C + k, model.n))
        need = self.served & ((b > 0) | (f > 0))
        lo = np.concatenate([np.full(C + k, -INF), np.where(need, self.q * f, -INF)])
        hi = np.concatenate([self.q, self.n, np.full(C, INF)])
        model.add_rows(M, lo, hi)
        return model

    def certificate(self, U: np.ndarray, V: np.ndarray, P: np.ndarray, b: np.ndarray,
                    f: np.ndarray) -> float | None:
        r"""The job-level dual bound of duals ``(U, V, P)`` made feasible (see
        the module notes); None when they certify nothing."""
        U, V, P = np.maximum(U, 0.0), np.maximum(V, 0.0).copy(), np.maximum(P, 0.0)
        s = float(np.sum(self.q * b * U))
        if not s > 0:
            return None
        viol_a = self.kappa[self.ac] * self.aval * U[self.ac] - V[self.ac] - self.sf[self.ac] * P[self.aj]
        np.maximum.at(V, self.ac, V[self.ac] + np.maximum(viol_a, 0.0))
        same = self.pc == self.pd
        gain = np.where(same, self.kappa[self.pc] * self.pval.sum(axis=1) * U[self.pc],
                        self.kappa[self.pc] * self.pval[:, 0] * U[self.pc]
                        + self.kappa[self.pd] * self.pval[:, 1] * U[self.pd])
        viol_p = gain - np.where(same, 2 * V[self.pc], V[self.pc] + V[self.pd]) - self.sf[self.pc] * P[self.pj]
        np.maximum.at(V, self.pc, V[self.pc] + np.maximum(viol_p, 0.0) / np.where(same, 2.0, 1.0))
        return float((np.sum(self.q * V) + self.n @ P - np.sum(self.q * f * U)) / s)


@dataclass(frozen=True, eq=False)
class _Round:
    """One class LP solved: level, values, duals."""
    level: float
    x: np.ndarray
    U: np.ndarray
    bound: float | None
    optimal: bool


def _solve_round(lp: ClassLP, b: np.ndarray, f: np.ndarray, deadline: Deadline) -> _Round | None:
    model = lp.model(b, f)
    sol = solve(model, "highs", deadline=deadline, relax=True, **LP_OPTIONS)
    if sol.x is None or sol.duals is None or sol.status is not Status.OPTIMAL:
        if sol.status is Status.INFEASIBLE:
            raise SolverError("class LP infeasible: a frozen floor cannot be kept")
        return None
    C, k = lp.C, lp.k
    d = sol.duals
    V, P, U = d[:C], d[C:C + k], -d[C + k:]
    return _Round(float(sol.x[0]), np.maximum(sol.x, 0.0), np.maximum(U, 0.0),
                  lp.certificate(U, V, P, b, f), True)


def solve_classes(p: PairedProblem, inner: str = "water-filling",
                  deadline: Deadline | None = None) -> PairedShares:
    r"""Max-min fairness with space sharing of ``p``, exactly, at class size.

    ``inner="max-min"``: one LP, $\max\lambda$ (Gavel's policy; which of
    its optima is returned is the LP's vertex).  ``"water-filling"``: the
    leximin refinement -- after each LP the classes whose requirement row
    has a positive dual are frozen at the level (complementary slackness:
    they cannot rise) and the rest are raised again, until every class is
    frozen (at most ``C`` LPs).  Its values are unique, so every member's
    share is the optimum's, not a solver's choice.

    Parameters
    ----------
    p : PairedProblem
    inner : {"water-filling", "max-min"}
    deadline : Deadline, optional
        Every LP gets the time left on it (default 60 s); a water-filling
        stopped by it returns its last round, ``feasible``.

    Returns
    -------
    PairedShares
        Checked job-level shares; ``bound`` certifies the max-min level of
        the job-level LP with every pair.

    Raises
    ------
    SolverError
        Shares that break a rule (never returned).

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.classes import solve_classes
    >>> p = PairedProblem.build(("v100", "k80"), [2, 2], ("a", "b"), [1, 1],
    ...                         [[4.0, 1.0], [2.0, 1.5]], {("a", "b"): {"v100": (3.0, 1.5)}},
    ...                         [0, 0, 1, 1])
    >>> r = solve_classes(p)
    >>> r.status.value, r.objective <= r.bound + 1e-9, r.violations()
    ('optimal', True, [])
    """
    t0 = time.perf_counter()
    if inner not in INNER:
        from ...errors import InputError
        raise InputError(f"inner: expected one of {', '.join(INNER)}, got {inner!r}")
    deadline = deadline or Deadline.after(None)
    lp = ClassLP.of(p)
    C = lp.C
    active = lp.served.copy()
    floor = np.zeros(C)
    first: _Round | None = None
    last: _Round | None = None
    rounds, exact = 0, True
    while active.any():
        b = active.astype(float)
        f = np.where(~active & lp.served, floor * (1 - FREEZE_MARGIN), 0.0)
        r = _solve_round(lp, b, f, deadline)
        if r is None:
            exact = False
            break
        rounds += 1
        first = first or r
        last = r
        if inner == "max-min":
            break
        umax = float(r.U[active].max(initial=0.0))
        freeze = active & (r.U > 1e-9 * umax) if umax > 0 else active.copy()
        floor[freeze] = r.level
        active &= ~freeze
        if deadline.expired() and active.any():
            exact = False
            break
    stats = {"classes": C, "columns": 1 + len(lp.ac) + len(lp.pc), "rounds": rounds,
             "inner": inner}
    if last is None or first is None:
        pa0, pb0, Y0 = _no_pairs(p)
        return _finish(p, np.zeros((p.m, p.k)), pa0, pb0, Y0, Status.UNKNOWN, None, t0, stats)
    X, pa, pb, Y = disaggregate(p, lp, last.x)
    certified = first.bound is not None and first.bound - first.level <= GAP_TOL * max(1.0, abs(first.level))
    status = Status.OPTIMAL if exact and certified else Status.FEASIBLE
    return _finish(p, X, pa, pb, Y, status, first.bound, t0, stats | {"level": first.level})


def _no_pairs(p: PairedProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros((0, p.k))


def _finish(p, X, pa, pb, Y, status, bound, t0, stats) -> PairedShares:
    out = PairedShares(p, X, pa, pb, Y, status, bound, time.perf_counter() - t0, stats)
    bad = out.violations()
    if bad:
        raise SolverError(f"class LP shares break a rule: {bad[0]}"
                          + (f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""))
    obj = out.objective
    if status is Status.OPTIMAL and obj is not None and bound is not None and \
            obj > bound + 1e-6 * max(1.0, abs(bound)):
        raise SolverError(f"class LP: recomputed level {obj:.12g} above its bound {bound:.12g}")
    return PairedShares(p, X, pa, pb, Y, status, bound, time.perf_counter() - t0, stats)


def disaggregate(p: PairedProblem, lp: ClassLP, x: np.ndarray):
    """Job-level shares ``(X, pa, pb, Y)`` of a class LP solution ``x``
    (see the module notes: north-west corner between classes, a ring
    within one)."""
    na = len(lp.ac)
    Xc = np.zeros((lp.C, lp.k))
    Xc[lp.ac, lp.aj] = x[1:1 + na]
    cls = p.job_class
    X = Xc[cls] / lp.q[cls][:, None]
    Z = np.zeros((lp.C, lp.C, lp.k))
    Z[lp.pc, lp.pd, lp.pj] = x[1 + na:]
    members = [np.flatnonzero(cls == c) for c in range(lp.C)]
    pa: list[int] = []
    pb: list[int] = []
    Y: list[np.ndarray] = []
    tot = Z.sum(axis=2)
    scale = max(float(tot.max(initial=0.0)), 1.0)
    for c, d in zip(*np.nonzero(tot > 1e-13 * scale)):
        split = Z[c, d] / tot[c, d]
        if c == d:
            _ring(members[c], tot[c, d], split, pa, pb, Y)
        else:
            _corner(members[c], members[d], tot[c, d], split, pa, pb, Y)
    if not pa:
        return (X, *_no_pairs(p))
    return X, np.array(pa), np.array(pb), np.array(Y)


def _ring(mem: np.ndarray, total: float, split: np.ndarray, pa, pb, Y) -> None:
    """Pairs within one class: a ring of ``q >= 3`` pairs of ``total/q``
    each, or the one pair of two members."""
    q = len(mem)
    if q == 2:
        pa.append(int(mem[0]))
        pb.append(int(mem[1]))
        Y.append(total * split)
        return
    for i in range(q):
        pa.append(int(mem[i]))
        pb.append(int(mem[(i + 1) % q]))
        Y.append(total / q * split)


def _corner(A: np.ndarray, B: np.ndarray, total: float, split: np.ndarray, pa, pb, Y) -> None:
    """Pairs between two classes by the north-west-corner rule: each member
    of ``A`` supplies ``total/|A|``, each of ``B`` takes ``total/|B|``."""
    sa, sb = total / len(A), total / len(B)
    i = j = 0
    ra, rb = sa, sb
    eps = 1e-12 * total
    while i < len(A) and j < len(B):
        t = min(ra, rb)
        if t > eps:
            pa.append(int(A[i]))
            pb.append(int(B[j]))
            Y.append(t * split)
        ra -= t
        rb -= t
        if ra <= eps:
            i, ra = i + 1, sa
        if rb <= eps:
            j, rb = j + 1, sb


__all__ = ["ClassLP", "FREEZE_MARGIN", "INNER", "PairedShares", "disaggregate", "solve_classes"]
