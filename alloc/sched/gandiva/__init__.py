r"""Gandiva (Xiao et al., OSDI'18): its scheduler over time as mechanisms of
the one simulator, on the ``gandiva`` placement (the reactive mode's
Algorithm 1, `alloc.solvers.gandiva`) or any other (the mechanism then binds
the jobs the placement leaves out itself).

* `alloc.sched.gandiva.mechanism`: the rules over time -- time-slicing by
  suspend-resume (weighted round-robin per server), introspective packing
  undone when it loses to time-slicing, migration (defragmentation,
  locality, suspended jobs onto free GPUs), grow-shrink;
* `alloc.sched.gandiva.slicing`: the round-robin choice of one server;
* `alloc.sched.gandiva.defrag`: the migration decisions, pure functions of
  the servers' occupancy.

Registered mechanisms: ``gandiva`` (every mechanism, each switched by a
parameter), ``gandiva-slicing`` (time-slicing alone), ``gandiva-packing``
(time-slicing and packing: the paper's section 6.3) and
``gandiva-migration`` (time-slicing and migration: section 6.4).  Gandiva's
own stack is the placement ``gandiva`` under an order that does not preempt
(the mechanism suspends jobs itself); the paper's data (rates,
utilisations, packing interference, switch costs) are a progress model,
`alloc.sim.gandiva.progress`.

Examples
--------
>>> from alloc.sched import get_policy
>>> m = get_policy("mechanism", "gandiva-migration").build()
>>> m.migration, m.packing
(True, False)
"""
from ...options import Option
from ..registry import declare

_M = "alloc.sched.gandiva.mechanism"
_SLICE = Option("slice_s", "float", 60.0, "time-slice length (s)", minimum=1e-6)
_PROFILE = Option("profile_s", "float", None, "seconds a job runs alone before it is profiled "
                  "(default: slice_s / 10)", minimum=0.0, nullable=True)
_LIMIT = Option("pack_limit", "int", 2, "most jobs packed on one GPU", minimum=1)
_DEFRAG = Option("defrag_threshold", "int", 3, "free GPUs at which a non-idle server is "
                 "emptied", minimum=1)
_MEM = Option("gpu_mem_capacity", "mapping", None, "GPU memory (MiB) per GPU type, for servers "
              "that do not declare theirs (default: the library's table)", nullable=True)

POLICIES = (
    declare("mechanism", "gandiva", f"{_M}:gandiva",
            params=(_SLICE, Option("packing", "bool", True, "introspective packing"), _LIMIT,
                    Option("migration", "bool", False, "migration and defragmentation"),
                    Option("grow_shrink", "bool", False, "grow elastic jobs into idle GPUs"),
                    _PROFILE, Option("grow_idle_s", "float", None, "seconds GPUs stay idle "
                                     "before jobs grow (default: slice_s)", minimum=0.0,
                                     nullable=True), _DEFRAG, _MEM),
            summary="Gandiva: suspend-resume time-slicing, packing with undo, migration, "
                    "grow-shrink"),
    declare("mechanism", "gandiva-slicing", f"{_M}:slicing", params=(_SLICE,),
            summary="Gandiva's suspend-resume time-slicing alone"),
    declare("mechanism", "gandiva-packing", f"{_M}:packing",
            params=(_SLICE, _LIMIT, _PROFILE, _MEM),
            summary="Gandiva's time-slicing and introspective packing (section 6.3)"),
    declare("mechanism", "gandiva-migration", f"{_M}:migration", params=(_SLICE, _DEFRAG),
            summary="Gandiva's time-slicing and migration (section 6.4)"),
)
