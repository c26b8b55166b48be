"""HiveD tenancy (Zhao et al., OSDI'20): tenants' guaranteed cells.

* ``hived`` -- buddy-cell allocation with priorities and preemption, Gandiva
  migration and grow/shrink, AntMan co-location: one round of the buddy-cell
  engine, `alloc.engines.cells`, whose notes write out the rules (the engine
  is shared: the core keeps a tenant's guarantee for every solver with it,
  ``drf`` places tenants' jobs with it and the tenancy model warm-starts
  from it).

Its option ``tenancy_preempt`` (guaranteed jobs may stop opportunistic
ones and lower-priority jobs of their tenant, as the tenancy rules allow) was
called ``preempt``, a name `allocate(preempt=...)` uses for the caller's
preemption by order; ``preempt`` stays one release as a deprecated alias
(`alloc.deprecation.warn_renamed_option`, one warning per process).

The tenancy model, the exact formulation of the same rules, belongs to the
exact family (`alloc.solvers.exact.tenancy`), which registers it as
``cpsat-tenancy`` and runs it for tenancy inputs.
"""
from ...options import Option
from ...registry import declare

_CAPS = ("tenancy", "preemption", "locality", "sharing", "spread", "elastic", "migration",
         "colocation", "gpu-memory", "order-preemption", "guarantee")

SOLVERS = (
    declare("hived", "alloc.solvers.hived.solvers:solve_hived", capabilities=_CAPS,
            ignores_unfit=True,
            options=(
                Option("tenancy_preempt", "bool", True,
                       "guaranteed jobs may preempt (legal victims only)"),
                Option("preempt", "bool", None,
                       "deprecated alias of tenancy_preempt (goes in the next release)",
                       nullable=True),
                Option("colocate", "bool", True,
                       "opportunistic jobs may co-run on guaranteed jobs' GPUs"),
                Option("grow", "bool", True, "grow elastic jobs into free GPUs"),
                Option("gpu_mem_capacity", "mapping", None,
                       "GPU memory per GPU type in MiB (co-location limits)", nullable=True),
            ),
            description="HiveD buddy cells, priorities and preemption; Gandiva migration and "
                        "grow; AntMan co-location"),
)
