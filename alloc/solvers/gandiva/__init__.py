"""Gandiva (Xiao et al., OSDI'18): the reactive placement of one round.

* ``gandiva`` -- the reactive mode's placement (Algorithm 1: same affinity,
  unallocated, relaxed, spread, over-subscribed, queued), carrying out the
  placements its scheduler plans ([alloc.solvers.gandiva.reactive][];
  server height and affinity in [alloc.solvers.gandiva.view][]).

Gandiva's scheduler over time -- time-slicing by suspend-resume,
introspective packing undone when it loses, migration, grow-shrink -- is a
mechanism of the scheduling layer ([alloc.sched.gandiva][]), run by the one
simulator with this solver as its placement.

The ``gandiva`` share policy of ``alloc shares`` is a different thing:
Gavel's stand-in for Gandiva's random pairing inside a time-share policy
(`alloc.shares.heuristics`).
"""
from ...options import Option
from ...registry import declare

SOLVERS = (
    declare("gandiva", "alloc.solvers.gandiva.reactive:solve_gandiva", objectives=(),
            capabilities=("sharing", "spread", "migration", "elastic"),
            options=(
                Option("oversubscribe", "bool", True,
                       "bind a job to a same-affinity server and time-slice it when no "
                       "GPUs are free (false: queue it)"),
                Option("bound", "mapping", None,
                       "job id -> server id: pending jobs time-sliced on a server "
                       "(suspended), counted in its height and affinity", nullable=True),
                Option("plan", "mapping", None,
                       "job id -> list of GPU ids: placements the scheduler decided "
                       "(resumes, packings; moves when the call allows them)", nullable=True),
            ),
            description="Gandiva's reactive placement: same affinity, unallocated, relaxed, "
                        "spread, then over-subscribe (time-slice) or queue"),
)
