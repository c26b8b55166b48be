r"""The exact family: ``cpsat``, ``milp`` and ``milp-cbc`` -- the aggregated
configuration (pattern) model of the whole problem solved with CP-SAT, HiGHS
or CBC -- and ``cpsat-tenancy``, the tenancy model.

The configuration model, its column generation, proof, dive and partitioned
driver are the engine `alloc.engines.configuration`, where the formulation
is written out; the family dispatches to it (`alloc.solvers.exact.solvers`)
and holds the tenancy model.  Every solver of the family is never below
the heuristics that apply to the input: they run first as its warm start
(through the registry, by name), and its answer is worth at least the best
of them.  The tenancy model starts from and decodes through HiveD's
buddy-cell engine (`alloc.engines.cells`); answers are polished by local
search and their preferred jobs compacted (`alloc.engines.greedy`).

Tenancy, elastic jobs and moves
-------------------------------
Inputs with tenants, guaranteed or opportunistic jobs, elastic jobs, or
running jobs the call lets move or a pending job may preempt (the tenancy
rules: [`alloc.tenancy.outranks`][alloc.tenancy.outranks]) are solved by the tenancy model
(`alloc.solvers.exact.tenancy.model`: cells, preemption, migration and elastic
sizes as variables) with the same engine; its restrictions are named in the
result and its ``optimal`` holds only when its proof covers the instance.

Registered solvers: ``cpsat`` (CP-SAT masters and pricing), ``milp`` (HiGHS),
``milp-cbc`` (CBC) -- all through [`alloc.kernel`][alloc.kernel] -- and ``cpsat-tenancy``,
the tenancy path (with CP-SAT) on every input that needs it and the
configuration model elsewhere.
"""
from ...options import Option
from ...registry import declare
from .tenancy import RESTRICTIONS

_CAPS = ("sharing", "grid", "locality", "preferred", "spread", "tenancy", "preemption", "migration",
         "colocation", "elastic", "order-preemption")
_TENANCY = (
    Option("preemption_cost", "float", 0.0, "objective units per preempted job (tenancy inputs)",
           minimum=0.0),
    Option("guaranteed_first", "bool", True, "tenancy inputs: first maximise the GPUs of placed "
           "guaranteed jobs, then the objective"),
)
_COMMON = (
    Option("warm_share", "float", 0.15, "share of the time limit for the heuristic warm start",
           minimum=0.0, maximum=1.0),
    Option("cg_share", "float", 0.45, "share of the time limit for column generation",
           minimum=0.0, maximum=1.0),
    Option("parts", "int", 0, "split into this many sub-problems solved in parallel, the bound "
           "kept on the whole problem (0: automatic, 1: never)", minimum=0),
    Option("executor", "str", "process", "how the parts run", choices=("process", "serial", "ray")),
    Option("ray_address", "str", None, "Ray cluster for the parts (executor 'ray'; default: "
           "a local Ray)", nullable=True),
) + _TENANCY
_WORKERS = Option("workers", "int", 1, "CP-SAT workers on large masters (1: deterministic)",
                  minimum=1)
_DETERMINISTIC = Option("deterministic", "bool", False,
                        "repeatable answers at the same limit: one CP-SAT worker on every "
                        "model, the seed fixed, each CP-SAT search stopped by its deterministic "
                        "work budget (the clock still bounds the call)")

SOLVERS = (
    declare("cpsat", "alloc.solvers.exact.solvers:solve_cpsat", exact=True, capabilities=_CAPS,
            options=_COMMON + (_WORKERS, _DETERMINISTIC), requires=("ortools",),
            description="CP-SAT on an aggregated pattern model (column generation, "
                        "warm-started, proven bound)"),
    declare("milp", "alloc.solvers.exact.solvers:solve_milp", exact=True, capabilities=_CAPS,
            options=_COMMON, requires=("highspy",),
            description="MILP (HiGHS) on an aggregated pattern model (column generation, "
                        "warm-started, proven bound)"),
    declare("milp-cbc", "alloc.solvers.exact.solvers:solve_cbc", exact=True, capabilities=_CAPS,
            options=_COMMON, requires=("pulp",),
            description="MILP (CBC through PuLP) on an aggregated pattern model"),
    declare("cpsat-tenancy", "alloc.solvers.exact.solvers:solve_cpsat_tenancy", exact=True,
            capabilities=("tenancy", "preemption", "migration", "locality", "preferred", "sharing",
                          "colocation", "elastic", "spread", "gpu-memory", "grid",
                          "order-preemption"),
            requires=("ortools",),
            options=_TENANCY + (
                Option("workers", "int", None, "CP-SAT workers (default: 1, deterministic)",
                       minimum=1, nullable=True),),
            restricts="; ".join(RESTRICTIONS),
            description="the tenancy model (kernel, CP-SAT) on tenancy inputs (the "
                        "configuration model elsewhere), never below the applicable heuristics"),
)
