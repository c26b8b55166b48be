"""The engines: the placement machinery the solver families build on, each
in a package named for what it is.

An engine declares no solvers and imports no family (`alloc.solvers`); a
family imports the engines it runs on and names them in its own notes, so
that a reader goes from a family to its algorithm in one step.  The rules
are `docs/design.md`'s ("What may import what"), and `tests/test_layout.py`
holds the code to them.

* `alloc.engines.cells` -- HiveD's buddy-cell engine: tenants' cells bound
  by buddy allocation, priorities and preemption, migration, elastic
  sizes and co-location, one round of it, and the engine kept across a
  scheduler loop's rounds (``hived``; ``drf`` on tenancy inputs; the
  guarantee the core keeps for every solver; the tenancy model's warm
  starts and decoding);
* `alloc.engines.configuration` -- the aggregated configuration (pattern)
  model of the whole problem, solved by column generation, an integer
  master, a proof by pattern enumeration, a dive and a partitioned driver,
  through `alloc.kernel` (the exact family's ``cpsat``, ``milp`` and
  ``milp-cbc``; ``synergy-opt``);
* `alloc.engines.greedy` -- the greedy machinery: the server index, the
  greedy state and its placement rules (first fit, best fit, rank order),
  value-aware greedy and local search, Kueue's topology descent and the
  compaction of preferred jobs (the heuristics, ``drf``, ``tiresias``, the
  ``tas`` family, Synergy's packers, the configuration model's warm start
  and polish).
"""
