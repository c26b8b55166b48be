"""Synergy's per-job CPU/memory choices (Mohan et al., OSDI'22).

For job ``j`` with options ``o`` (CPU/memory points with grid speed ``b_jo``;
option 0 the request, its GPU-proportional share):

* ``ideal(j)`` -- the best case: ``argmax_o b_jo`` over the options that fit one
  server's per-GPU bound ``c_jo <= n_j * C_s / min(n_j, G_s)`` (same for
  memory), ties broken by the least ``c/C + m/M``;
* ``cap(j)`` -- the best option inside the fair box
  ``{o : c_jo <= c_j0, m_jo <= m_j0, b_jo >= b_j0}`` (always holds 0);
* the *fairness floor* keeps only options with ``b_jo >= b_j0``.
"""
from __future__ import annotations

import copy
from typing import Iterable, Sequence

from ...problem import GridPoint, Problem


def ideal_option(opts: Sequence[GridPoint], n: int, caps: Iterable[tuple[int, int, int]]) -> int:
    """Index of the best-case option: maximum speed among the options that fit
    one server's per-GPU bound (``caps``: (gpus, cpu, mem) of candidate
    servers), ties broken by least normalised resources."""
    caps = list(caps)
    if not caps or n == 0:
        return 0
    ref_c = max(c for _, c, _ in caps) or 1
    ref_m = max(m for _, _, m in caps) or 1

    def fits(o: GridPoint) -> bool:
        for g, c, m in caps:
            k = min(n, g) if g else n
            if k and o.cpu * k <= c * n and o.mem * k <= m * n:
                return True
        return False

    best, key = 0, None
    for i, o in enumerate(opts):
        if i and not fits(o):
            continue
        k = (-o.base, o.cpu / ref_c + o.mem / ref_m, i)
        if key is None or k < key:
            best, key = i, k
    return best


def capped_option(opts: Sequence[GridPoint]) -> int:
    """Best option inside the fair box (CPU and memory at most the request's,
    speed at least the request's); 0 when nothing beats the request."""
    r = opts[0]
    best, key = 0, (-r.base, r.cpu + r.mem, 0)
    for i, o in enumerate(opts):
        if o.cpu <= r.cpu and o.mem <= r.mem and o.base >= r.base - 1e-12:
            k = (-o.base, o.cpu + o.mem, i)
            if k < key:
                best, key = i, k
    return best


def floor_options(opts: Sequence[GridPoint]) -> tuple[GridPoint, ...]:
    """The request plus every option at least as fast (the fairness floor)."""
    r = opts[0]
    return (r,) + tuple(o for o in opts[1:] if o.base >= r.base - 1e-12)


def floor_problem(problem: Problem) -> Problem:
    """A shallow copy of ``problem`` whose option lists keep only options with
    speed >= the request's (option 0 stays the request)."""
    p = copy.copy(problem)
    p.options = [floor_options(o) for o in problem.options]
    return p
