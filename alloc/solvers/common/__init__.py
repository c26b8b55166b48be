"""Shared solver machinery: what more than one family builds on.

This package is not a family: it declares no solvers.  Every family may
import it; it imports no family (the rule `docs/design.md` states and
`tests/test_layout.py` enforces).

* `alloc.solvers.common.index` -- the server index: per job shape, the servers
  that can take it, in the order of a placement rule, caught up after each
  placement;
* `alloc.solvers.common.greedy` -- the greedy state (`State`: free CPU, memory
  and per-GPU milli while jobs are placed one at a time) and the placement
  rules on it (first fit, best fit, the pending jobs in rank order);
* `alloc.solvers.common.improve` -- value-aware greedy placement with exact
  per-server option upgrades, and local search from any start (the
  ``greedy-upgrade`` and ``local-search`` heuristics, and the exact family's
  warm start);
* `alloc.solvers.common.cells` -- the buddy-cell engine of HiveD's rules
  (tenants' cells, priorities, preemption, migration, co-location; ``hived``,
  ``drf`` on tenancy inputs, the tenancy model's warm starts) and the one
  translation of a running job's placement into index form it uses;
* `alloc.solvers.common.configuration` -- the aggregated configuration model
  (column generation, proof by pattern enumeration, the partitioned driver),
  solved through `alloc.kernel` (the exact family's solvers and
  ``synergy-opt``).
"""
