"""HiveD tenancy (Zhao et al., OSDI'20): tenants' guaranteed cells.

* ``hived`` -- buddy-cell allocation with priorities and preemption, Gandiva
  migration and grow/shrink, AntMan co-location (:mod:`alloc.solvers.hived.engine`);
* the tenancy model (:mod:`alloc.solvers.hived.model`), solved through
  :mod:`alloc.kernel` by :func:`alloc.solvers.hived.exact.solve_tenancy`; the exact
  family runs it for tenancy inputs and registers it as ``cpsat-tenancy``.

The restrictions the model may add to an instance are listed once
(:data:`RESTRICTIONS`); a solution says which of them cut its instance
(``stats["restrictions"]``, empty when its bound is the instance's).
"""
from ...options import Option
from ...registry import declare

#: what the tenancy model may restrict (:func:`alloc.solvers.hived.model.restrictions`)
RESTRICTIONS = ("guaranteed work first (throughput and its bound under the proven maximum of "
                "guaranteed GPUs, an elastic job counted at its smallest size)",
                "CPU/memory at the request",
                "a spread job's CPU and memory reserved per GPU, rounded up",
                "a running elastic job keeps its size when it moves")

_CAPS = ("tenancy", "preemption", "locality", "sharing", "spread", "elastic", "migration",
         "colocation", "gpu-memory", "order-preemption")

SOLVERS = (
    declare("hived", "alloc.solvers.hived.engine:solve_hived", capabilities=_CAPS,
            options=(
                Option("preempt", "bool", True, "guaranteed jobs may preempt (legal victims only)"),
                Option("colocate", "bool", True,
                       "opportunistic jobs may co-run on guaranteed jobs' GPUs"),
                Option("grow", "bool", True, "grow elastic jobs into free GPUs"),
                Option("gpu_mem_capacity", "mapping", None,
                       "GPU memory per GPU type in MiB (co-location limits)", nullable=True),
            ),
            description="HiveD buddy cells, priorities and preemption; Gandiva migration and "
                        "grow; AntMan co-location"),
)
