r"""Dominant Resource Fairness (Ghodsi et al., NSDI'11) by exact continuous
progressive filling.

Model
-----
Resources $r = 1..R$ with capacities $C_r \ge 0$; users
$i = 1..n$, each running identical *tasks* with the per-task demand
vector $d_i$ ($d_{ir} \ge 0$, any unit as long as it matches
$C_r$: GPUs, milli-cores, MiB, ...), a weight $w_i > 0$ and an
optional cap $k_i$ (the most tasks the user can use).  An allocation
gives user i $x_i \ge 0$ tasks (fractional), i.e. $x_i d_{ir}$
of resource r.  The dominant share of one task is
$s_i = \max_{r: C_r > 0} d_{ir} / C_r$ and the user's dominant share is
$D_i = x_i s_i$.

Weighted DRF equalises the *weighted* dominant shares $D_i / w_i$
subject to the capacities: progressive filling raises one level
$\lambda$ from 0 and keeps $D_i = w_i \lambda$ for every active
user, i.e. $x_i(\lambda) = \lambda w_i / s_i$.  A user is frozen (its
$x_i$ stays) when a resource it uses saturates
($\sum_j x_j d_{jr} = C_r$ with $d_{ir} > 0$) or when it reaches
its cap $x_i = k_i$.  A user that needs a resource of capacity 0 gets
nothing.

Events, no bisection
--------------------
Between two events every active user grows at $w_i / s_i$ tasks per
unit of $\lambda$, so resource r fills at
$\rho_r = \sum_{i\ \mathrm{active}} d_{ir} w_i / s_i$.  The next event is
the first of

$$
\Delta\lambda = \min\Big( \min_{r:\rho_r>0} \frac{C_r - u_r}{\rho_r},\;
                \min_{i\ \mathrm{active},\,k_i<\infty}
                \frac{(k_i - x_i)\,s_i}{w_i} \Big),
$$

with $u_r = \sum_j x_j d_{jr}$ the use so far: the level moves by
$\Delta\lambda$ exactly, the resources and users that reach their
limit are set exactly to it, and the users touching a saturated resource or
at their cap are frozen.  Each event costs $O(nR)$ and freezes at least
one user (a saturating resource has $\rho_r > 0$, so an active user
uses it), hence at most $n$ events.

Properties (tested in ``tests/test_drf_props.py``): *sharing incentive*
($x_i \ge (w_i/W)\min_r C_r/d_{ir}$, the tasks of the static split of
every resource by weight, $W = \sum_j w_j$, unless the user is capped),
*envy-freeness* (user i cannot run more tasks with user j's bundle scaled by
$w_i/w_j$), *Pareto efficiency* (every uncapped user uses a saturated
resource), *strategy-proofness* (misreporting $d_i$ never raises
$\min_r x'_i d'_{ir} / d_{ir}$, the tasks the user can really run)
and *weight monotonicity*.

Why it is not a policy of `alloc.shares.POLICIES`: a share policy
splits time over GPU *types* that substitute for each other (a job runs on
V100 *or* K80), while DRF's demand vectors are Leontief -- a task needs all
of $d_i$ at once.  Reading each type as a resource would make a job
demand GPUs of every type it can use at the same time, which no job does;
so DRF is this standalone function over explicit resources (CPU, memory,
GPUs of one type, ...), and the placement solver ``drf``
([`alloc.solvers.drf`][alloc.solvers.drf]) is its discrete form for whole jobs.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

#: Relative slack under which a resource counts as full or a user as capped.
TOL = 1e-12


def _arrays(capacities: Mapping[str, float], demands: Sequence[Mapping[str, float]],
            weights, caps) -> tuple:
    """Validated ``(C, D, w, k)`` arrays (``k`` is ``inf`` for no cap)."""
    names = list(capacities)
    idx = {r: a for a, r in enumerate(names)}
    C = np.array([float(capacities[r]) for r in names], dtype=float)
    for r, c in zip(names, C):
        if not math.isfinite(c) or c < 0:
            raise ValueError(f"capacities[{r!r}]: expected a finite number >= 0, got {c!r}")
    n = len(demands)
    D = np.zeros((n, len(names)))
    for i, d in enumerate(demands):
        for r, v in d.items():
            if r not in idx:
                raise ValueError(f"demands[{i}]: unknown resource {r!r}; resources: {names}")
            v = float(v)
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"demands[{i}][{r!r}]: expected a finite number >= 0, got {v!r}")
            D[i, idx[r]] = v
    w = np.ones(n) if weights is None else np.array([float(x) for x in weights])
    if len(w) != n or not all(math.isfinite(x) and x > 0 for x in w):
        raise ValueError(f"weights: expected {n} finite numbers > 0, got {weights!r}")
    k = np.full(n, math.inf)
    if caps is not None:
        if len(caps) != n:
            raise ValueError(f"caps: expected {n} entries, got {len(caps)}")
        for i, c in enumerate(caps):
            if c is not None:
                c = float(c)
                if math.isnan(c) or c < 0:
                    raise ValueError(f"caps[{i}]: expected a number >= 0 or None, got {c!r}")
                k[i] = c
    return C, D, w, k


def _start(C: np.ndarray, D: np.ndarray, k: np.ndarray) -> tuple:
    """Per-task dominant shares ``s``, the starting tasks ``x`` and the users
    that take part in the filling."""
    pos = C > 0
    blocked = (D[:, ~pos] > 0).any(axis=1)          # needs a resource of capacity 0
    s = np.zeros(len(D))
    if pos.any():
        s = (D[:, pos] / C[pos]).max(axis=1)
    x = np.zeros(len(D))
    free = ~blocked & (s == 0)                       # asks for nothing
    if (free & ~np.isfinite(k)).any():
        i = int(np.flatnonzero(free & ~np.isfinite(k))[0])
        raise ValueError(f"demands[{i}]: a user without a cap must demand some resource")
    x[free] = k[free]
    active = ~blocked & (s > 0) & (k > 0)
    return s, x, active


def drf_shares(capacities: Mapping[str, float], demands: Sequence[Mapping[str, float]],
               weights: Sequence[float] | None = None,
               caps: Sequence[float | None] | None = None) -> list[float]:
    r"""Tasks per user under weighted DRF, by exact progressive filling.

    Parameters
    ----------
    capacities : mapping of str to float
        $C_r$ of every resource (any unit; 0 allowed).
    demands : sequence of mapping of str to float
        Per user, the demand of one task $d_{ir}$ in the resources'
        units (absent resources: 0).
    weights : sequence of float, optional
        $w_i > 0$ (default 1 each).  Weighted DRF equalises
        $D_i / w_i$.
    caps : sequence of (float or None), optional
        The most tasks each user can use $k_i$ (None: no cap).

    Returns
    -------
    list of float
        $x_i$, the tasks of user i (fractional): the end of the
        progressive filling described in the module notes,
        $x_i = \lambda_i w_i / s_i$ with $\lambda_i$ the level at
        which user i was frozen.  A user that needs a resource of capacity 0
        gets 0; a user whose demand is all 0 gets its cap.

    Raises
    ------
    ValueError
        A negative or non-finite number, an unknown resource, a weight that
        is not positive, or an uncapped user that demands nothing.

    Examples
    --------
    The example of the DRF paper: 9 CPUs and 18 GB; user A's tasks need
    <1 CPU, 4 GB>, user B's <3 CPUs, 1 GB>.

    >>> drf_shares({"cpu": 9, "mem": 18}, [{"cpu": 1, "mem": 4}, {"cpu": 3, "mem": 1}])
    [3.0, 2.0]
    """
    C, D, w, k = _arrays(capacities, demands, weights, caps)
    s, x, active = _start(C, D, k)
    saturated = np.zeros(len(C), dtype=bool)
    while active.any():
        rate = np.where(active, w / np.where(s > 0, s, 1.0), 0.0)   # tasks per unit level
        rho = rate @ D                                               # resource per unit level
        used = x @ D
        room = np.maximum(C - used, 0.0)
        fills = (rho > 0) & ~saturated
        t_res = np.where(fills, room / np.where(fills, rho, 1.0), math.inf)
        capped = active & np.isfinite(k)
        t_cap = np.where(capped, (k - x) / np.where(capped, rate, 1.0), math.inf)
        step = min(t_res.min(initial=math.inf), t_cap.min(initial=math.inf))
        x = x + rate * step
        at_cap = capped & (t_cap <= step * (1 + TOL))
        x[at_cap] = k[at_cap]
        full = fills & (t_res <= step * (1 + TOL))
        saturated |= full
        active &= ~at_cap & ~(D[:, saturated] > 0).any(axis=1)
    return [float(v) for v in x]


__all__ = ["TOL", "drf_shares"]
