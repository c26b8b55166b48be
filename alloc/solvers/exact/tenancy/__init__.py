"""The tenancy model: HiveD's rules (Zhao et al., OSDI'20) as an integer model.

Tenants' cells, preemption, migration and elastic sizes are variables
(`alloc.solvers.exact.tenancy.model`); the model is solved through
`alloc.kernel` by `alloc.solvers.exact.tenancy.solve.solve_tenancy`, warm-started
from the buddy-cell engine (`alloc.engines.cells.engine`) and decoded back into
cells (`alloc.solvers.exact.tenancy.decode`).  The exact family runs it for
tenancy inputs and registers it as ``cpsat-tenancy``.

The restrictions the model may add to an instance are listed once
(`RESTRICTIONS`); a solution says which of them cut its instance
(``stats["restrictions"]``, empty when its bound is the instance's).
"""

#: what the tenancy model may restrict (`alloc.solvers.exact.tenancy.model.restrictions`)
RESTRICTIONS = ("guaranteed work first (throughput and its bound under the proven maximum of "
                "guaranteed GPUs, an elastic job counted at its smallest size)",
                "CPU/memory at the request",
                "a spread job's CPU and memory reserved per GPU, rounded up",
                "a running elastic job keeps its size when it moves")
