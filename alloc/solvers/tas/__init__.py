"""Topology-aware placement as deployed schedulers do it: the baselines the
operator's graph is measured against (`bench/topology.py`).

* ``kueue-tas`` -- Kueue's topology-aware scheduling (its default
  ``BestFit`` profile): a required level (``locality``) is one domain of it
  or nothing; a preferred level climbs up until one domain holds the job;
  a job asking neither is spread over the nodes, most free first;
* ``slurm-topology`` -- Slurm's ``topology/tree`` and ``topology/block``
  selection: every job goes to the lowest level that holds it (one node,
  else one leaf switch or base block, else one above ...), best fit;
  ``locality`` is Slurm's ``--switches=1`` / one segment (a required level).

Both place jobs one at a time in rank order and take, below the level they
chose, the fewest domains at every level (`alloc.solvers.tas.solvers`: Kueue's
descent is the greedy engine's, `alloc.engines.greedy.descent`, on its state); a
job on a share of one GPU, or without GPUs, goes where alloc's best fit puts
it (neither scheduler places GPU shares).
"""
from ...registry import declare

_CAPS = ("sharing", "locality", "preferred", "spread", "order-preemption")

SOLVERS = (
    declare("kueue-tas", "alloc.solvers.tas.solvers:solve_kueue", objectives=(),
            capabilities=_CAPS,
            description="Kueue's topology-aware scheduling (BestFit): required level or "
                        "nothing, preferred level climbing up, rank order"),
    declare("slurm-topology", "alloc.solvers.tas.solvers:solve_slurm", objectives=(),
            capabilities=_CAPS,
            description="Slurm's topology/tree and topology/block selection: the lowest "
                        "level that holds the job, best fit, rank order"),
)
