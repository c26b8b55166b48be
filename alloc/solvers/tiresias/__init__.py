"""The placements of the Tiresias experiment (Gu et al., NSDI'19).

* ``yarn`` -- YARN-CS's consolidated placement: a job of n GPUs on one server
  when n fits a server, else on whole idle servers plus one for the rest
  (the fewest servers), jobs in the caller's order; strict by default (the
  first job that cannot be placed stops the round: head-of-line blocking,
  YARN-CS), ``skip=True`` lets later jobs jump it (Best-effort);
* ``tiresias`` -- Tiresias' profile-based placement: a job whose model's
  tensor-size skew exceeds ``packlimit`` is consolidated as by ``yarn``, the
  others take free GPUs where they leave the least fragmentation; jobs that
  do not fit are skipped (`alloc.solvers.tiresias.place`).

Both place on the greedy engine's state in rank order
(`alloc.engines.greedy`).
"""
from ...options import Option
from ...registry import declare

_CAPS = ("sharing", "locality", "spread", "order-preemption")

SOLVERS = (
    declare("yarn", "alloc.solvers.tiresias.place:solve_yarn", objectives=(),
            capabilities=_CAPS,
            options=(Option("skip", "bool", False,
                            "let a later job jump one that cannot be consolidated now "
                            "(Best-effort); false: stop at it (YARN-CS)"),),
            description="YARN-CS consolidated placement: one server, else whole idle servers; "
                        "in order, stopping at the first job that does not fit"),
    declare("tiresias", "alloc.solvers.tiresias.place:solve_tiresias", objectives=(),
            capabilities=_CAPS,
            options=(Option("packlimit", "float", 0.5,
                            "consolidate the jobs whose model's skew (largest tensor ratio) "
                            "exceeds this; 1 consolidates none (GPU counting)",
                            minimum=0.0, maximum=1.0),
                     Option("skewed", "any", None,
                            "ids of jobs to consolidate whatever their model (the profiler's "
                            "verdict for models alloc has no profile of)", nullable=True)),
            description="Tiresias profile-based placement: skewed models consolidated, the "
                        "rest where they leave the least fragmentation; in order, skipping"),
)
