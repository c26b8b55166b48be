r"""The placement rules on the greedy state: first fit, best fit, the pending
jobs in rank order.

* `first_fit` -- job j at an option on the lowest-index server that can
  take it alone (the server index's ``FIRST`` rule), else spread over
  servers (`State.try_spread`);
* `best_fit` -- job j on the server left fullest: the least normalised
  leftover $\ell_s = \sum_{r \in \{cpu, mem, gpu\}} (\mathrm{free}_{rs} -
  \mathrm{use}_r) / \mathrm{cap}_{rs}$, compared exactly (ties: lowest
  index), found per server class by the index's ``FIT`` rule and then
  compared across classes (`fit_candidates`, `best_candidate`);
* `rank_order` -- the pending jobs in the caller's order
  (`alloc.problem.job_order`), then by a key of the rule's own.

The heuristics family's ``proportional`` and ``best-fit`` are these rules
over the pending jobs (`alloc.solvers.heuristics.greedy`); ``drf``,
``tiresias``, the ``tas`` family and the partitioned exact driver use them
too.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Iterable, Sequence

from ...deadline import Deadline
from ...model import MILLI
from ...problem import Assign, Problem
from .index import FIRST, FIT, Shape, fit_tops, leftover
from .state import State

#: Allowed classes from which a shape's best fit may come from one pass over
#: the servers instead of its per-class finders (one query each): below it a
#: shape's few finders cost little to build and answer in microseconds.
FIT_SCAN_CLASSES = 16
#: Uses of such a shape answered by the pass before its finders are built
#: (they then answer from the change log)...
FIT_SCANS = 2
#: ...and for good when its classes times this reach the servers: the
#: finders' queries, one per class, would cost more than the pass.
FIT_SCAN_SERVERS = 64


def first_fit(state: State, j: int, option: int = 0,
              servers: Iterable[int] | None = None) -> Assign | None:
    """Job j at an option on the lowest-index server that can take it alone
    (among ``servers`` when given), else spread (`State.try_spread`).

    Returns
    -------
    Assign or None
        Not placed in ``state``."""
    if servers is not None:
        for s in servers:
            a = state.try_server(j, s, option)
            if a is not None:
                return a
        return state.try_spread(j, option)
    sh = state.shape(j, option)
    f = sh.finders.get((FIRST, None)) or state.finder(sh, FIRST)
    top = f.top()
    if top is not None:
        return state.assign_on(j, top, sh)
    return state.try_spread(j, option)


def leftover_score(state: State, s: int, a: Assign) -> float:
    r"""Normalised free capacity of server s left after ``a``:
    $\sum_r (\mathrm{free}_r - \mathrm{use}_r) / \mathrm{cap}_r$ over CPU,
    memory and (on a GPU server) milli-GPU, in floating point."""
    p = state.p
    c = sum(v for _, v in a.cpu)
    m = sum(v for _, v in a.mem)
    g = sum(v for _, v in a.gpus)
    score = (state.cpu_l[s] - c) / max(int(p.srv_cpu[s]), 1) \
        + (state.mem_l[s] - m) / max(int(p.srv_mem[s]), 1)
    if p.srv_gpus[s]:
        score += (state.gsum[s] - g) / (MILLI * int(p.srv_gpus[s]))
    return float(score)


def fit_candidates(state: State, sh: Shape) -> list[tuple[int, int, int]]:
    """Per allowed class, the best-fit server for shape ``sh``:
    ``[(free key, server, class)]`` (see `fit_score`): from the shape's
    per-class finders, or from one pass over the servers
    (`alloc.engines.greedy.index.fit_tops`, the same answer) for a shape of
    many classes (`FIT_SCAN_CLASSES`) without finders: in its first
    `FIT_SCANS` uses, and in every use where its classes are many for the
    servers (`FIT_SCAN_SERVERS`).  A cluster of many server classes would
    otherwise build a finder per class for jobs whose shape comes once."""
    n = len(sh.classes)
    if not n:
        return []
    if n >= FIT_SCAN_CLASSES and (FIT, sh.classes[0]) not in sh.finders and (
            sh.scans < FIT_SCANS or n * FIT_SCAN_SERVERS >= state.S):
        tops = fit_tops(state, sh)
        if tops is not None:
            sh.scans += 1
            return tops
    out = []
    S = state.S
    for c in sh.classes:
        f = sh.finders.get((FIT, c)) or state.finder(sh, FIT, c)
        s = f.top()
        if s is not None:
            out.append((f.heap[0] // S, s, c))
    return out


def fit_score(state: State, sh: Shape, cand: tuple[int, int, int]) -> Fraction:
    """The exact best-fit leftover of a `fit_candidates` entry."""
    return leftover(state.lay, cand[1], cand[0], sh)


def best_candidate(state: State, sh: Shape, cands, minus=None) -> int:
    r"""The server of the least exact ``leftover - minus(server)`` among
    `fit_candidates` entries (ties: lowest index); ``minus`` gives a
    float (None: 0).

    Scores are compared in floating point first (a quotient of integers and
    a difference, each correctly rounded: error below $10^{-15}$ of the
    scores' size); only candidates within $10^{-9}$ of the least are
    compared exactly."""
    lay = state.lay
    approx = []
    for free_key, s, c in cands:
        a, b, g, D = lay.weights[c]
        n = free_key - (a * sh.c + b * sh.m + g * sh.k * sh.q)
        e = minus(s) if minus is not None else 0.0
        approx.append((n / D - e, s, n, D, e))
    lo = min(x[0] for x in approx)
    close = [x for x in approx if x[0] <= lo + 1e-9 * max(1.0, abs(lo))]
    if len(close) == 1:
        return close[0][1]
    if minus is None:  # n / D exactly: cross-multiplied (every D > 0)
        bn, bD, bs = close[0][2], close[0][3], close[0][1]
        for _, s, n, D, _ in close[1:]:
            if n * bD < bn * D or (n * bD == bn * D and s < bs):
                bn, bD, bs = n, D, s
        return bs
    return min((Fraction(n, D) - Fraction(e), s) for _, s, n, D, e in close)[1]


def best_fit(state: State, j: int, option: int = 0) -> Assign | None:
    r"""Job j at an option on the server left fullest, else spread.

    The server minimises the leftover
    $\ell_s = \sum_{r \in \{cpu, mem, gpu\}} (\mathrm{free}_{rs} -
    \mathrm{use}_r) / \mathrm{cap}_{rs}$ (no GPU term on a server without
    GPUs), compared exactly; ties go to the lowest index.  Per server class
    the index gives the class's best server; classes are then compared.

    Returns
    -------
    Assign or None
        Not placed in ``state``."""
    sh = state.shape(j, option)
    cands = fit_candidates(state, sh)
    if len(cands) == 1:
        return state.assign_on(j, cands[0][1], sh)
    if cands:
        return state.assign_on(j, best_candidate(state, sh, cands), sh)
    return state.try_spread(j, option)


def place_in_order(st: State, order: Sequence[int], pick, deadline: Deadline) -> bool:
    """Place each job of ``order`` where ``pick(state, j)`` says (skip when
    None); stops at the deadline.  Returns False when it ran out of time."""
    for k, j in enumerate(order):
        if k % 64 == 0 and deadline.expired():
            return False
        a = pick(st, j)
        if a is not None:
            st.place(j, a, 0)
    return True


def rank_order(problem: Problem, key=None) -> list[int]:
    """[`job_order`][alloc.problem.job_order] of the pending jobs with a tuple
    ``key`` (default: the index), sorted without a call per comparison."""
    pk = problem.prio_key
    if key is None:
        return sorted(problem.pending, key=pk.__getitem__)  # stable: index within rank
    return [t[-1] for t in sorted((pk[j],) + key(j) for j in problem.pending)]


__all__ = ["best_candidate", "best_fit", "first_fit", "fit_candidates", "fit_score",
           "leftover_score", "place_in_order", "rank_order"]
