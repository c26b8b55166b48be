"""The greedy machinery: jobs placed one at a time on a state of free
capacities, a server index that answers "which server takes this job" without
a scan, and the rules built on them.

* `alloc.engines.greedy.index` -- the server index: per job shape, the
  servers that can take it, in a placement rule's order (first fit, best
  fit, fewest free GPUs, whole free GPUs), caught up after each placement;
* `alloc.engines.greedy.state` -- the greedy state (`State`: free CPU,
  memory and per-GPU milli on top of the running jobs), GPUs chosen inside
  a server to consolidate, jobs spread over servers;
* `alloc.engines.greedy.rules` -- first fit, best fit (the least normalised
  leftover, compared exactly), the pending jobs in rank order;
* `alloc.engines.greedy.improve` -- value-aware greedy placement with exact
  per-server option upgrades (a multiple-choice knapsack per server), and
  local search by insert and swap moves from any start;
* `alloc.engines.greedy.descent` -- Kueue's topology-aware descent over the
  operator's levels (a required level, a preferred one climbed);
* `alloc.engines.greedy.compact` -- preferred jobs moved into one node of
  their level at no loss of value (the last step of every solver that
  declares ``preferred``).

Users: the heuristics family, ``drf``, ``tiresias`` and ``yarn``, the ``tas``
family, Synergy's packers and ``synergy-tune``, and the configuration model's
warm start, partitioned driver and polish (`alloc.engines.configuration`).
"""
