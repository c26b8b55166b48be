r"""Pollux's genetic search (NSGA-II), vectorised and seeded.

A solution is an integer matrix ``A[j, n]``: GPUs of job ``j`` on node ``n``
(one replica per GPU).  Its two objectives, both maximised:

* **fitness**, the power mean of the jobs' scaled speedups

  $$ F(A) = \Big(\frac{1}{J}\sum_j (S_j + 10^{-3})^p\Big)^{1/p},\quad p = -1, $$

  with $S_j = \mathrm{SP}_j(N_j, K_j)\cdot c_j\cdot r_j^{[A_j \ne A^0_j]}$:
  ``SP`` the job's speedup table (goodput over the goodput at its fair
  share), ``c`` the scale of a dominant share (``1/G x nodes``), ``r`` the
  restart factor, applied when the job's row differs from the current
  allocation ``A0``;
* **cluster utility**: over the active nodes' GPUs, the GPU-weighted mean of
  ``SP_j / K_j`` (it only shapes the Pareto front).

**Repair** (in order): (1) interference avoidance: on each node only the
first job (in job order) that spans two or more nodes keeps its GPUs;
(2) ``K_j <= Kmax_j``, the excess trimmed in a random order of the nodes,
and at most 16 nodes per job; (3) node capacity, earlier jobs first.

**Search**: NSGA-II (Deb et al. 2002) as pymoo 0.4 runs it: population 100,
100 generations (the first is the seeded population), binary tournaments by
Pareto dominance then crowding distance, offspring by one-point crossover
over job rows (probability 0.9) then mutation -- (1) 10 % of the rows reset
to ``A0``, (2) 10 % of the rows have each entry zeroed with probability
0.1, (3) each entry raised to a uniform value between itself and its node's
capacity with probability $p_1 + p_2 - p_1 p_2$, $p_1 = 1/J$ on nodes with a
free GPU and $p_2 = 1/(\text{jobs on the node})$ where the job already is
-- then repair and removal of duplicates, survival by rank and crowding.
The next round starts from this round's Pareto front (rows of jobs gone
dropped, new jobs empty).  The answer is the front member of best fitness.

All randomness comes from one ``numpy.random.Generator``.

Examples
--------
>>> import numpy as np
>>> from alloc.goodput.ga import GaInput, search
>>> sp = np.zeros((2, 3, 9)); sp[:, 1, 1:] = np.arange(1, 9) ** 0.8; sp[:, 2, 2:] = sp[:, 1, 2:] * 0.9
>>> inp = GaInput(sp, np.ones(2), np.zeros((2, 2), int), np.array([8, 8]), np.array([4, 4]))
>>> out = search(inp, np.random.default_rng(0))
>>> out.best.sum(axis=1).tolist(), bool(out.best.sum() <= 8)
([4, 4], True)
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

#: The power-mean exponent (more negative: fairer).
P_FAIR = -1.0
#: Added to every scaled speedup (an idle job weighs 1/EPS_SPEEDUP).
EPS_SPEEDUP = 1e-3
POP_SIZE = 100
GENERATIONS = 100
CROSSOVER_PROB = 0.9
MAX_NODES_PER_JOB = 16


@dataclass(frozen=True)
class GaInput:
    """One round's search problem.

    Attributes
    ----------
    speedup : ndarray (J, Nmax+1, Kmax+1)
        ``SP_j(n, k)``: speedup with ``k`` GPUs on ``n`` nodes (0 at ``k = 0``).
    restart : ndarray (J,)
        Restart factors ``r_j``.
    base : ndarray (J, S)
        The current allocation ``A0``.
    max_replicas : ndarray (J,)
        ``Kmax_j``.
    capacity : ndarray (S,)
        GPUs per node.
    scale : float
        ``c``: the speedup of one dominant share (default ``nodes / GPUs``).
    p : float
        The power-mean exponent.
    """
    speedup: np.ndarray
    restart: np.ndarray
    base: np.ndarray
    max_replicas: np.ndarray
    capacity: np.ndarray
    scale: float | None = None
    p: float = P_FAIR

    @property
    def c(self) -> float:
        """The scale of a dominant share."""
        if self.scale is not None:
            return self.scale
        return len(self.capacity) / max(1, int(self.capacity.sum()))


@dataclass(frozen=True)
class GaOutput:
    """The search's answer: the chosen allocation, its two objectives, the
    Pareto front (to seed the next round) and the generations run."""
    best: np.ndarray
    fitness: float
    utility: float
    front: np.ndarray
    generations: int


# ----------------------------------------------------------------- objectives
_ONES = np.uint64(0x0101010101010101)
_LOW = np.uint64(0x0101010101010101)


def row_stats(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and GPUs of every job row of int8 states (P, J, S) with ``S`` a
    multiple of 8 and entries below 16: each row read as 64-bit words, the
    bytes summed by one multiplication (a byte-wise horizontal sum)."""
    w = states.view(np.uint64)                                   # (P, J, S/8)
    with np.errstate(over="ignore"):
        kk = ((w * _ONES) >> np.uint64(56)).sum(axis=2, dtype=np.int16)
        y = (w | (w >> np.uint64(1)) | (w >> np.uint64(2)) | (w >> np.uint64(3))) & _LOW
        nn = ((y * _ONES) >> np.uint64(56)).sum(axis=2, dtype=np.int16)
    return nn, kk


def evaluate(inp: GaInput, states: np.ndarray) -> np.ndarray:
    """``F`` (P, 2): minus fitness, minus cluster utility, of each state (P, J, S)."""
    P, J, S = states.shape
    N1, K1 = inp.speedup.shape[1], inp.speedup.shape[2]
    if S % 8 == 0 and states.dtype == np.int8 and states.flags.c_contiguous:
        nn, kk = row_stats(states)
        moved = (states.view(np.uint64) != inp.base.astype(np.int8).view(np.uint64)[None]
                 ).any(axis=2)
    else:
        nn = np.count_nonzero(states, axis=2)
        kk = states.sum(axis=2, dtype=np.int16)
        moved = (states != inp.base[None]).any(axis=2)
    nn, kk = np.minimum(nn, N1 - 1), np.minimum(kk, K1 - 1)
    sp = inp.speedup.reshape(-1)[(np.arange(J) * (N1 * K1))[None] + nn * K1 + kk]
    c = inp.c
    scaled = sp * np.where(moved, inp.restart[None] * c, c)
    p = inp.p
    if p == 0:
        mean = np.exp(np.log(np.maximum(scaled, EPS_SPEEDUP)).sum(axis=1) / max(J, 1))
    else:
        mean = (((scaled + EPS_SPEEDUP) ** p).sum(axis=1) / max(J, 1)) ** (1.0 / p)
    # utility: sum_j SP_j/K_j * K_j/total = sum of the placed jobs' SP over the active GPUs
    active = states.any(axis=1)
    total = active @ inp.capacity.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(total > 0, sp.sum(axis=1) / total, 0.0)
    return np.column_stack([-mean, -util])


# --------------------------------------------------------------------- repair
def repair(inp: GaInput, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The three repair rules (module notes) on states (P, J, S)."""
    states = states.copy()
    P, J, S = states.shape
    # (1) one multi-node job per node, the first in job order
    fast = S % 8 == 0 and states.dtype == np.int8 and states.flags.c_contiguous
    if fast:
        nn, kk = row_stats(states)
    else:
        nn = np.count_nonzero(states, axis=2)
        kk = states.sum(axis=2, dtype=np.int16)
    multi = nn > 1
    if multi.any():
        mask = (states > 0) & multi[:, :, None]
        states[mask.cumsum(axis=1, dtype=np.int16) > 1] = 0
        kk = states.sum(axis=2, dtype=np.int16)
    # (2) at most Kmax GPUs (excess trimmed in a random node order), 16 nodes
    over = kk > inp.max_replicas[None]
    if S > MAX_NODES_PER_JOB:
        over |= np.count_nonzero(states, axis=2) > MAX_NODES_PER_JOB
    pi, ji = np.nonzero(over)
    if len(pi):
        rows = states[pi, ji]                                          # (R, S)
        shuffle = np.argsort(rng.random(rows.shape), axis=1)
        r = np.arange(len(pi))[:, None]
        rows = rows[r, shuffle]
        cap = np.minimum(rows.cumsum(axis=1), inp.max_replicas[ji][:, None])
        rows = cap.copy()
        rows[:, 1:] -= cap[:, :-1]
        if S > MAX_NODES_PER_JOB:
            rows[(rows > 0).cumsum(axis=1) > MAX_NODES_PER_JOB] = 0
        out = np.empty_like(rows)
        out[r, shuffle] = rows
        states[pi, ji] = out
    # (3) node capacity, earlier jobs first
    load = states.sum(axis=1, dtype=np.int16)
    pi = np.flatnonzero((load > inp.capacity[None]).any(axis=1))
    if len(pi):
        c = np.cumsum(states[pi], axis=1, dtype=np.int16)
        np.minimum(c, inp.capacity.astype(np.int16)[None, None], out=c)
        c[:, 1:] -= c[:, :-1].copy()
        states[pi] = c
    return states


# ------------------------------------------------------------------ variation
def crossover(parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One-point crossover over job rows: parents (2, M, J, S) -> children (2M, J, S)."""
    _, M, J, _ = parents.shape
    points = rng.integers(J, size=(M, 1)) if J else np.zeros((M, 1), int)
    mask = (np.arange(J)[None] < points)[:, :, None]
    a, b = parents
    swap = mask & np.asarray(rng.random(M) < CROSSOVER_PROB)[:, None, None]
    return np.concatenate([np.where(swap, b, a), np.where(swap, a, b)])


def mutate(inp: GaInput, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The three mutations (module notes) on states (P, J, S)."""
    P, J, S = states.shape
    states = states.copy()
    reset = rng.random((P, J)) < 0.1
    if reset.any():
        states[reset] = inp.base[np.nonzero(reset)[1]]
    rows = np.nonzero(rng.random((P, J)) < 0.1)
    if len(rows[0]):
        sub = states[rows]
        sub[rng.random(sub.shape) < 0.1] = 0
        states[rows] = sub
    cap = inp.capacity.astype(states.dtype)
    free = cap[None] - states.sum(axis=1, dtype=states.dtype)             # (P, S)
    pi, ni = np.nonzero(free >= 1)
    if len(pi):
        sub = states[pi, :, ni]                                           # (C, J)
        present = sub > 0
        cnt = np.maximum(present.sum(axis=1, keepdims=True), 1)
        p1 = 1.0 / max(J, 1)
        thr = p1 + present * ((1.0 - p1) / cnt)
        ci, ji = np.nonzero(rng.random(sub.shape) < thr)
        if len(ci):
            cur = sub[ci, ji]
            top = cap[ni[ci]]
            cur = np.minimum(cur, top)
            states[pi[ci], ji, ni[ci]] = cur + (rng.random(len(cur)) * (top - cur + 1)
                                                ).astype(states.dtype)
    return states


# ----------------------------------------------------------------- selection
def _dominates(Fa: np.ndarray, Fb: np.ndarray) -> np.ndarray:
    """Row-wise: ``Fa[i]`` Pareto-dominates ``Fb[i]`` (minimisation)."""
    return np.asarray((Fa <= Fb).all(axis=1) & (Fa < Fb).any(axis=1))


def front_ranks(F: np.ndarray) -> np.ndarray:
    """Front of every point in Pareto non-dominated sorting (minimisation,
    two objectives; 0 best).

    In lexicographic order a point is dominated by an earlier one iff that
    one's second objective is at most its own (equal points excepted, which
    share their front): each point joins the first front whose least second
    objective so far is above its own, and those least values rise with the
    front (a patience sort)."""
    n = len(F)
    rank = np.zeros(n, dtype=int)
    if n == 0:
        return rank
    order = np.lexsort((F[:, 1], F[:, 0]))
    f0, f1 = F[order, 0].tolist(), F[order, 1].tolist()
    lows: list[float] = []
    out = [0] * n
    prev, r = None, 0
    for i in range(n):
        key = (f0[i], f1[i])
        if key != prev:
            v = f1[i]
            r = bisect_right(lows, v)
            if r == len(lows):
                lows.append(v)
            else:
                lows[r] = v
            prev = key
        out[i] = r
    rank[order] = out
    return rank


def nondominated_fronts(F: np.ndarray, n_stop: int | None = None) -> list[np.ndarray]:
    """Fronts of Pareto non-dominated sorting (minimisation, two objectives),
    best first, each in index order, stopping once ``n_stop`` points are
    ranked (`front_ranks`)."""
    rank = front_ranks(F)
    if len(rank) == 0:
        return []
    order = np.argsort(rank, kind="stable")
    counts = np.bincount(rank)
    fronts = np.split(order, np.cumsum(counts)[:-1])
    if n_stop is not None:
        k = int(np.searchsorted(np.cumsum(counts), n_stop)) + 1
        fronts = fronts[:k]
    return fronts


def crowding(F: np.ndarray) -> np.ndarray:
    """Crowding distance of the points of one front (see `crowding_fronts`)."""
    return crowding_fronts(F, np.zeros(len(F), int))


def crowding_fronts(F: np.ndarray, front: np.ndarray) -> np.ndarray:
    """Crowding distance of every point within its front (``front[i]`` its
    index), as pymoo computes it front by front: a point equal to an earlier
    one of its front gets 0; a front of at most two distinct points gives
    them infinity; otherwise, per objective, the gap between a point's two
    neighbours over the front's range (infinity at the ends), averaged over
    the objectives."""
    n, m = F.shape
    out = np.zeros(n)
    if n == 0:
        return out
    lex = np.lexsort((np.arange(n), F[:, 1], F[:, 0], front))
    Fs, fs = F[lex], front[lex]
    dup = np.zeros(n, bool)
    dup[1:] = (fs[1:] == fs[:-1]) & (Fs[1:, 0] == Fs[:-1, 0]) & (Fs[1:, 1] == Fs[:-1, 1])
    keep = lex[~dup]                                   # unique points, grouped by front
    fk = front[keep]
    sizes = np.bincount(front)
    if m == 2 and len(keep) > 1:
        total = _crowding_2d(F[keep], fk)
        if total is not None:
            out[keep] = total / m
            out[sizes[front] <= 2] = np.inf
            return out
    total = np.zeros(len(keep))
    for k in range(m):
        o = np.lexsort((keep, F[keep, k], fk))
        v, f = F[keep[o], k], fk[o]
        first = np.ones(len(o), bool)
        first[1:] = f[1:] != f[:-1]
        last = np.ones(len(o), bool)
        last[:-1] = f[1:] != f[:-1]
        lo = np.full(len(o), -np.inf)
        hi = np.full(len(o), np.inf)
        lo[~first] = v[:-1][~first[1:]]
        hi[~last] = v[1:][~last[:-1]]
        vmax = np.maximum.reduceat(v, np.flatnonzero(first))
        vmin = np.minimum.reduceat(v, np.flatnonzero(first))
        norm = (vmax - vmin)[np.cumsum(first) - 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            d = np.where(norm > 0, (v - lo) / norm, 0.0) + np.where(norm > 0, (hi - v) / norm, 0.0)
        d = np.where(np.isnan(d), 0.0, d)
        contrib = np.empty(len(o))
        contrib[o] = d
        total += contrib
    out[keep] = total / m
    out[sizes[front] <= 2] = np.inf
    return out


def _crowding_2d(Fk: np.ndarray, fk: np.ndarray) -> np.ndarray | None:
    """`crowding_fronts`' sum over two objectives of distinct points sorted by
    front then first objective, when within each front the second objective
    falls as the first rises (true of Pareto fronts): then one order serves
    both objectives, the second read backwards.  None otherwise."""
    v0, v1 = Fk[:, 0], Fk[:, 1]
    first = np.ones(len(fk), bool)
    first[1:] = fk[1:] != fk[:-1]
    if not (first[1:] | (v1[1:] < v1[:-1])).all():
        return None
    last = np.empty_like(first)
    last[:-1] = first[1:]
    last[-1] = True
    starts = np.flatnonzero(first)
    ends = np.flatnonzero(last)
    # neighbours in the first objective's order (infinite at a front's ends)
    lo0 = np.empty_like(v0)
    hi0 = np.empty_like(v0)
    lo0[1:], hi0[:-1] = v0[:-1], v0[1:]
    lo0[first], hi0[last] = -np.inf, np.inf
    lo1 = np.empty_like(v1)
    hi1 = np.empty_like(v1)
    lo1[:-1], hi1[1:] = v1[1:], v1[:-1]
    lo1[last], hi1[first] = -np.inf, np.inf
    n0 = np.repeat(v0[ends] - v0[starts], ends - starts + 1)
    n1 = np.repeat(v1[starts] - v1[ends], ends - starts + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d0 = np.where(n0 > 0, (v0 - lo0) / n0, 0.0) + np.where(n0 > 0, (hi0 - v0) / n0, 0.0)
        d1 = np.where(n1 > 0, (v1 - lo1) / n1, 0.0) + np.where(n1 > 0, (hi1 - v1) / n1, 0.0)
    d0[np.isnan(d0)] = 0.0
    d1[np.isnan(d1)] = 0.0
    return 0.0 + d0 + d1


def survive(F: np.ndarray, n: int, rng: np.random.Generator
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-and-crowding survival: indices kept, their ranks and crowding."""
    all_ranks = front_ranks(F)
    idx = np.argsort(all_ranks, kind="stable")
    rank = all_ranks[idx]
    if len(idx) > n:                                   # whole fronts up to the n-th point
        idx = idx[rank <= rank[n - 1]] if n > 0 else idx[rank == rank[0]]
        rank = all_ranks[idx]
    cd = crowding_fronts(F[idx], rank)
    if len(idx) > n:
        split = rank == rank[-1]
        head = int((~split).sum())
        tail = np.flatnonzero(split)
        perm = rng.permutation(len(tail))
        order = tail[perm[np.argsort(-cd[tail][perm], kind="stable")]][:n - head]
        sel = np.concatenate([np.arange(head), order])
        idx, rank, cd = idx[sel], rank[sel], cd[sel]
    return idx, rank, cd


def tournament(F: np.ndarray, crowd: np.ndarray, n_select: int, rng: np.random.Generator
               ) -> np.ndarray:
    """Binary tournaments (dominance, then crowding, then a coin): (n_select, 2) parents."""
    n = len(F)
    need = n_select * 2 * 2
    perms = np.concatenate([rng.permutation(n) for _ in range(math.ceil(need / n))])[:need]
    a, b = perms[0::2], perms[1::2]
    a_dom, b_dom = _dominates(F[a], F[b]), _dominates(F[b], F[a])
    ca, cb = crowd[a], crowd[b]
    coin = rng.random(len(a)) < 0.5
    a_wins = a_dom | (~b_dom & ((ca > cb) | ((ca == cb) & coin)))
    return np.where(a_wins, a, b).reshape(n_select, 2)


def _hashes(states: np.ndarray, weights: np.ndarray) -> list[int]:
    """A 64-bit hash of each state: its bytes read as 64-bit words, times
    random odd weights, summed with wrap-around."""
    flat = np.ascontiguousarray(states).reshape(len(states), -1).view(np.uint64)
    with np.errstate(over="ignore"):
        return (flat * weights[:flat.shape[1]]).sum(axis=1, dtype=np.uint64).tolist()


def _unique_new(cand: np.ndarray, seen: set, weights: np.ndarray) -> np.ndarray:
    keep = []
    add = seen.add
    for i, h in enumerate(_hashes(cand, weights)):
        if h not in seen:
            add(h)
            keep.append(i)
    return cand[keep]


def search(inp: GaInput, rng: np.random.Generator, seeds: np.ndarray | None = None, *,
           pop_size: int = POP_SIZE, generations: int = GENERATIONS,
           deadline: float | None = None) -> GaOutput:
    """Run the search (module notes) from ``seeds`` (P0, J, S), default ``A0``.

    ``deadline`` (a `time.perf_counter` value) stops it after the generation
    in progress.  Offspring are drawn in batches larger than the number
    still wanted by the share of duplicates seen so far, and the first
    unique ones are kept: the same in distribution as drawing batch after
    batch (the children of a batch are independent draws), in fewer calls.
    """
    import time
    S0 = inp.base.shape[1]
    pad = (-S0) % 8
    base = np.pad(inp.base, ((0, 0), (0, pad))).astype(np.int8)
    cap = np.pad(inp.capacity, (0, pad))
    inp = GaInput(inp.speedup, inp.restart, base, inp.max_replicas, cap,
                  inp.c, inp.p)
    if seeds is not None and len(seeds):
        seeds = np.pad(seeds, ((0, 0), (0, 0), (0, pad)))
    pop = (seeds if seeds is not None and len(seeds) else base[None]).astype(np.int8)
    pop = repair(inp, pop, rng).astype(np.int8)
    weights = np.random.default_rng(0x9E3779B9).integers(1, 2 ** 63, size=base.size,
                                                            dtype=np.uint64) | np.uint64(1)
    seen: set = set()
    pop = _unique_new(pop, seen, weights)
    F = evaluate(inp, pop)
    idx, rank, crowd = survive(F, len(pop), rng)
    pop, F = pop[idx], F[idx]
    gen, dup_rate = 1, 0.0
    while gen < generations:
        if deadline is not None and time.perf_counter() > deadline:
            break
        off_parts, n_off, tries = [], 0, 0
        while n_off < pop_size and tries <= 100:
            remaining = pop_size - n_off
            want = min(8 * pop_size,
                       math.ceil(1.15 * remaining / max(0.125, 1.0 - dup_rate)) + 2)
            parents = tournament(F, crowd, math.ceil(want / 2), rng)
            children = crossover(pop[parents.T], rng)
            children = mutate(inp, children, rng)
            children = repair(inp, children, rng).astype(np.int8)
            fresh = _unique_new(children, seen, weights)
            dup_rate = 0.5 * dup_rate + 0.5 * (1.0 - len(fresh) / len(children))
            fresh = fresh[:remaining]
            if len(fresh):
                off_parts.append(fresh)
                n_off += len(fresh)
            tries += 1
        if not off_parts:
            break
        off = np.concatenate(off_parts)
        pop = np.concatenate([pop, off])
        F = np.concatenate([F, evaluate(inp, off)])
        idx, rank, crowd = survive(F, pop_size, rng)
        pop, F = pop[idx], F[idx]
        seen = set(_hashes(pop, weights))
        gen += 1
    front = rank == 0
    fpop, fF = pop[front][:, :, :S0], F[front]
    best = int(np.argmin(fF[:, 0]))
    return GaOutput(fpop[best].astype(int), float(-fF[best, 0]), float(-fF[best, 1]),
                    np.ascontiguousarray(fpop, dtype=np.int8), gen)


def adapt_seeds(front: np.ndarray, old_jobs: list, new_jobs: list) -> np.ndarray:
    """Last round's front for this round's jobs: rows of jobs gone dropped,
    new jobs empty (nodes unchanged)."""
    pos = {k: i for i, k in enumerate(old_jobs)}
    out = np.zeros((len(front), len(new_jobs), front.shape[2]), dtype=np.int16)
    for i, k in enumerate(new_jobs):
        if k in pos:
            out[:, i] = front[:, pos[k]]
    return out


__all__ = ["CROSSOVER_PROB", "EPS_SPEEDUP", "GENERATIONS", "GaInput", "GaOutput", "POP_SIZE",
           "P_FAIR", "adapt_seeds", "crossover", "crowding", "evaluate", "mutate",
           "crowding_fronts", "front_ranks", "nondominated_fronts", "repair", "search", "survive",
           "tournament"]
