r"""The aggregated configuration (pattern) model of the whole problem: the
engine of the exact family's ``cpsat``, ``milp`` and ``milp-cbc`` and of
``synergy-opt``.

A naive model with one variable per (job, server) grows with J x S and is
hopelessly symmetric: servers of one class are interchangeable and so are jobs
with the same shape and profile.  The engine removes both symmetries by
aggregation and solves a *configuration* (pattern) model, the classic
Gilmore-Gomory approach to cutting stock, by column generation.

Aggregation
-----------
* **Server classes** ``c`` (``Problem.classes``): identical capacity, GPU type,
  socket/switch shape and rack; ``n_c`` servers, capacities ``C_c, M_c, G_c``.
* **Job types** ``t``: jobs with the same GPU count ``g_t``, share
  ``milli_t``, option set (CPU/memory points with their base speed), allowed
  classes, locality, weight and profile factors (GPU-type speeds; span
  factors only of the levels the job can span, so profiles that differ only
  elsewhere merge); ``N_t`` jobs.
* **Items** of class ``c``: a *whole* item ``(t, o)`` is one job of type ``t``
  at option ``o`` on one server (uses ``cpu_o``, ``mem_o``, ``g_t`` whole GPUs
  under one node of its locality level, or ``milli_t`` of one shared GPU); a
  *unit* item ``(t, o)`` is one GPU of a job of a spreadable type (whole GPUs,
  ``g_t >= 2``, no locality or rack locality) with ``ceil(cpu_o / g_t)`` CPU
  and ``ceil(mem_o / g_t)`` memory on that server.  Spread jobs are counted by
  spread *groups* ``k`` (all allowed classes, or one rack).
* A **pattern** ``p`` of class ``c`` is an integer vector ``a_p`` of items that
  fits one server of ``c``: CPU and memory, whole GPUs of switch-level items
  inside one switch, of socket-level items inside one socket (the per-node
  capacity rows below are necessary and, since items of a level are free to
  use any GPU of their node, sufficient), shared items bin-packed into GPUs of
  at most 1000 milli.

Integer master (the model the backends solve)
---------------------------------------------
$$
\begin{aligned}
\max\ & \sum_{c,p} val_p\, z_{cp} + \sum_{t,o,k} v^{sp}_{tok}\, x_{tok} \\
\text{s.t. } & \sum_p z_{cp} \le n_c                    && (\mu_c)\\
& \sum_{c,p,o} a_{p,(t,o)}\, z_{cp} + \sum_{o,k} x_{tok} \le N_t   && (\pi_t)\\
& g_t\, x_{tok} - \sum_{c \in k, p} a_{p,unit(t,o)}\, z_{cp} \le 0  && (\rho_{tok})\\
& z_{cp}, x_{tok} \in \mathbb{Z}_{\ge 0}
\end{aligned}
$$

with ``val_p = sum_i a_{pi} v_{ic}`` where ``v`` is the job's objective
coefficient at the option on the class's GPU type (throughput:
``weight * base_o * speed_t(type) * max in-server span factor``) and
``v^sp`` the coefficient of a spread job (best GPU type of the group times the
best cross-server span factor).  Server symmetry is gone by construction
(``z`` counts servers, not names) and job symmetry too (types are counted).

LP bound and columns
--------------------
The LP relaxation is solved over a pool of columns (seeded with every
heuristic solution, cut into per-server patterns) and new columns are priced
per class by a small integer program (the *pricing* problem: the pattern
feasibility rows above with objective ``sum_i (v_i - pi_t(i) - rho(i)) a_i -
mu_c``), solved by the backend's own engine; beside each class's priced
column, a few patterns built greedily from the same coefficients (the items
of largest coefficient as seeds, the rest by coefficient per share of the
scarcest resource) join the pool when their reduced cost is positive
(`alloc.engines.configuration.master.greedy_patterns`): with a few
classes and hundreds of job types, one column a class a round converges
slowly.  At every round the Lagrangian
bound ``LP + sum_c n_c max(0, rc*_c)`` (``rc*_c`` = proven upper bound of the
class's pricing problem) is a valid upper bound; at convergence it equals the
Gilmore-Gomory LP bound.  The *big-machine* LP (each class pooled into one
machine, spread jobs with exact fractional CPU/memory per GPU) is computed
first and is always valid.  The reported bound is the smallest valid one.

The pattern model is exact (so its bounds are bounds of the real problem)
when a spread job's CPU and memory divide evenly over its GPUs (then the unit
reservation is its exact share; otherwise it is a restriction and only the
big-machine bound is reported).  Decoding a spread job picks ``g_t`` unit
slots of its group, which is always possible because slots are only counted.

Objective step
--------------
When every job value (weight x grid value x GPU-type speed x span factor x
elastic scale, or milli-GPUs) is a multiple of a decimal step ``delta``
(`objective_granularity`: each factor set's step after scaling by
``10**k``, ``k <= 6``, and their gcd), so is every solution's value, and
every bound rounds down to a multiple of ``delta`` (`tighten`).

Proof
-----
If the integer master reaches the (rounded) bound the solution is optimal.
Otherwise targets ``T`` descend from the rounded bound (steps ``delta``,
``2 delta``, ``4 delta``, ...).  With the duals ``y`` of the converged column
generation and ``L`` its Lagrangian bound (= LP), any integer solution has
``value = y.Az + sum_p rc_p z_p <= L - y.slack + sum_{rc_p < 0} rc_p z_p``,
so a solution worth ``>= T`` uses only patterns with ``rc_p >= T - L``, at
most ``(L - T) / -rc_p`` copies of each, and leaves row slack at most
``(L - T) / y_r``.  A depth-first search (O(1) fractional-knapsack pruning)
lists all such patterns; the master over them with these bounds and the cut
``value >= T`` is then exact: feasible means its optimum is the optimum,
infeasible means ``T - delta`` bounds the optimum.  When the search is cut
short, the best listed patterns by reduced cost still enrich the pool.

Price-and-dive
--------------
When the proof is out of reach (huge enumerations), `dive` fixes one
copy of the pattern the restricted LP uses most, shrinks the residual
problem (servers per class, jobs per type, spread unit slots), re-solves the
LP by column generation and repeats until the LP is integral, backtracking
over the few best patterns of a node while the rounded LP bound stays above
the target.

Rounding down
-------------
With thousands of servers per class (100k GPUs in three GPU types: about
4,000 servers a class) neither fixing one copy per dive node nor the integer
master over the pool gets far in the time, while the restricted LP is already
close to its bound.  After column generation's share -- and again after
more column generation when it has not converged -- `round_down` fixes
``floor(z*_cp)`` copies of every column of the LP's solution at once (rounding
down keeps every master row satisfied) and solves the small residual master
(a few servers per class, the jobs left) over the whole pool; the integer
master then starts from that answer.  Solutions of the heuristics worth less
than half the best do not seed the pool (their one-job patterns only slow
every LP).

Decoding
--------
Patterns carry a *layout*: the local GPU offsets of each item (found by a
first-fit-decreasing packing along the hierarchy, an exact feasibility model
when that fails).  ``z_cp`` copies are laid on the servers of class ``c`` in
index order; whole items take the type's jobs in priority order; the unit slots
of a spread group are cut into runs of ``g_t`` (same server first) for the
``x_tok`` spread jobs.  The decoded placement is checked against every server's
capacity before it is returned; the best heuristic is kept when the decoded
solution is not better.

Live state
----------
Running jobs are fixed: classes are built from what they leave of each server
(`alloc.engines.configuration.aggregate`), only the pending jobs form types, and
the fixed jobs' value is added to every bound.

The modules
-----------
* `alloc.engines.configuration.solve` -- the entry (`configuration`): the
  whole problem, or parts solved in parallel when it is large;
* `alloc.engines.configuration.driver` -- the phases within one deadline:
  warm start (every applicable heuristic, through the registry), bounds,
  column generation, rounding down, integer master, proof, dive, polish;
* `alloc.engines.configuration.aggregate` -- server classes, job types and
  items; `alloc.engines.configuration.patterns` -- patterns, their layouts
  and the pricing problem; `alloc.engines.configuration.master` -- the
  restricted master, its LP and column generation;
  `alloc.engines.configuration.bounds` -- the item and big-machine bounds;
  `alloc.engines.configuration.proof` -- the proof by pattern enumeration;
  `alloc.engines.configuration.dive` -- price-and-dive and rounding down;
  `alloc.engines.configuration.columns` -- solutions cut into columns and
  decoded back, checked and valued; `alloc.engines.configuration.carried`
  -- a scheduler loop's columns carried to the next round;
  `alloc.engines.configuration.partition` -- the partitioned driver;
  `alloc.engines.configuration.backend` -- the engine that solves the
  masters and pricing problems (HiGHS, CP-SAT or CBC through `alloc.kernel`).
"""
