r"""Gandiva's packing (Xiao et al., OSDI'18) as the baseline of POP's Fig. 2.

Gandiva packs jobs onto shared GPUs without knowing how well they share.
The rule, as Gavel's and POP's harnesses evaluate it on one static set of
jobs:

1. If the jobs ask for no more GPUs than the cluster has
   ($\sum_i sf_i \le \sum_j n_j$), nothing is packed: every job is a unit.
2. Otherwise jobs are paired at random: up to ``m`` times, two distinct
   unpaired jobs are drawn uniformly; if their scale factors are equal they
   become a pair (whatever their co-located rates: Gandiva learns a bad pair
   only by running it).  The jobs left over are units alone.
3. Time is split equally among the ``u`` units, blind to GPU types: a unit
   gets $n_j / u$ GPUs of every type ``j``, i.e. a share
   $n_j / (u\,sf)$ of each type, scaled down so that its shares sum to at
   most 1.

A job in a pair whose measured co-located rate is 0 on every type gets no
throughput at all (``zero_throughput_jobs``): POP's artifact counts 14 of
them at 512 jobs.  Gandiva's undo of a packing that slows its jobs down acts
only from the next scheduling round on, so it has no effect on one static
allocation.  The draws come from Python's `random.Random` seeded with
``seed``.

Units: fractions of wall-clock time; steps/s.
"""
from __future__ import annotations

import random
import time

import numpy as np

from ...model import Status
from .classes import PairedShares
from .problem import PairedProblem


def random_pairs(p: PairedProblem, seed: int = 0) -> list[tuple[int, int]]:
    """Gandiva's random pairs (step 2 of the module notes), in drawing order.

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.gandiva import random_pairs
    >>> p = PairedProblem.build(("v100",), [1], ("a",), [1], [[1.0]], {}, [0, 0, 0, 0])
    >>> sorted(x for q in random_pairs(p, seed=0) for x in q)
    [0, 1, 2, 3]
    """
    rng = random.Random(seed)
    sf = p.scale[p.job_model]
    free = [i for i in range(p.m) if p.served[i]]
    pairs = []
    for _ in range(len(free)):
        if len(free) < 2:
            break
        a, b = rng.sample(free, 2)
        if sf[a] != sf[b]:
            continue
        free.remove(a)
        free.remove(b)
        pairs.append((a, b))
    return pairs


def gandiva_pairing(p: PairedProblem, seed: int = 0) -> PairedShares:
    """Gandiva's shares of ``p`` (see the module notes), checked.

    Parameters
    ----------
    p : PairedProblem
    seed : int
        Seed of the random pairing.

    Returns
    -------
    PairedShares
        ``feasible`` (a heuristic); ``stats["units"]``, ``stats["pairs"]``.

    Examples
    --------
    >>> from alloc.sched.pop.problem import PairedProblem
    >>> from alloc.sched.pop.gandiva import gandiva_pairing
    >>> p = PairedProblem.build(("v100",), [1], ("a", "b"), [1, 1], [[4.0], [2.0]],
    ...                         {("a", "b"): {"v100": (3.0, 1.5)}}, [0, 1])
    >>> r = gandiva_pairing(p)
    >>> r.effective.round(3).tolist(), r.stats["pairs"]
    ([3.0, 1.5], 1)
    """
    t0 = time.perf_counter()
    sf = p.scale[p.job_model].astype(float)
    served = p.served
    packing = float(sf[served].sum()) > float(p.capacity.sum())
    pairs = random_pairs(p, seed) if packing else []
    paired = np.zeros(p.m, dtype=bool)
    for a, b in pairs:
        paired[a] = paired[b] = True
    singles = np.flatnonzero(served & ~paired)
    units = len(singles) + len(pairs)
    X = np.zeros((p.m, p.k))
    pa = np.array([a for a, _ in pairs], dtype=int)
    pb = np.array([b for _, b in pairs], dtype=int)
    Y = np.zeros((len(pairs), p.k))
    if units:
        share = p.capacity[None, :] / units
        X[singles] = share / sf[singles, None]
        if len(pairs):
            Y[:] = share / sf[pa, None]
        X /= np.maximum(X.sum(axis=1), 1.0)[:, None]
        Y /= np.maximum(Y.sum(axis=1), 1.0)[:, None]
    # no share on a type too small for the unit (the check's rule)
    X[(sf[:, None] > p.capacity[None, :])] = 0.0
    if len(pairs):
        Y[(sf[pa][:, None] > p.capacity[None, :])] = 0.0
    out = PairedShares(p, X, pa, pb, Y, Status.FEASIBLE, None, time.perf_counter() - t0,
                       {"units": units, "pairs": len(pairs), "packing": packing})
    bad = out.violations()
    if bad:
        from ...errors import SolverError
        raise SolverError(f"gandiva pairing breaks a rule: {bad[0]}")
    return out


__all__ = ["gandiva_pairing", "random_pairs"]
