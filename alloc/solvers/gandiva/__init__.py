"""Gandiva (Xiao et al., OSDI'18): reactive placement and the scheduler loop.

* ``gandiva`` -- the reactive mode's placement (Algorithm 1: same affinity,
  unallocated, relaxed, spread, over-subscribed, queued), carrying out the
  placements its scheduler plans (resumes, packings, migrations, resizes)
  ([alloc.solvers.gandiva.reactive][]);
* [GandivaScheduler][alloc.solvers.gandiva.scheduler.GandivaScheduler] --
  the scheduler over time on a [Session][alloc.session.Session]:
  time-slicing by suspend-resume, introspective packing (undone when it
  loses to time-slicing), migration to defragment, grow-shrink.

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
                Option("defrag", "bool", False,
                       "with moves allowed: empty lightly used servers onto fuller ones "
                       "and bring spread jobs onto one server"),
                Option("defrag_threshold", "int", 3,
                       "free GPUs at which a non-idle server is emptied", minimum=1),
            ),
            description="Gandiva's reactive placement: same affinity, unallocated, relaxed, "
                        "spread, then over-subscribe (time-slice) or queue"),
)
