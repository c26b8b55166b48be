r"""POP (Narayanan et al., SOSP'21): partitioned optimisation of Gavel's
max-min fairness with space sharing, and Gandiva's pairing, its baseline.

* `alloc.sched.pop.problem`: the problem in typed form (jobs of a few model
  configurations; every two jobs of equal scale factor may share GPUs at
  their measured co-located rates) and POP's Fig. 2 instance.
* `alloc.sched.pop.classes`: the exact max-min (and leximin) optimum at the
  size of the job classes, with a certificate for the LP of every job pair.
* `alloc.sched.pop.partition`: POP: random or round-robin parts, each with
  ``1/k`` of every GPU type, solved in parallel, coalesced.
* `alloc.sched.pop.gandiva`: Gandiva's random pairing with equal time shares.
* `alloc.sched.pop.policy`: the share policies ``pop`` and ``gandiva-pairing``.

Examples
--------
>>> from alloc.sched import get_policy
>>> get_policy("shares", "pop").kind
'shares'
"""
from ...options import Option
from ..registry import declare

POLICIES = (
    declare("shares", "pop", "alloc.sched.pop.policy:Pop", needs=("throughput", "pairs"),
            params=(Option("k", "int", 1, "parts (1: the unpartitioned optimum)", minimum=1),
                    Option("partition", "str", "round-robin", "how jobs are split into parts",
                           choices=("round-robin", "random")),
                    Option("inner", "str", "water-filling", "the policy each part solves",
                           choices=("water-filling", "max-min")),
                    Option("parallel", "str", "process", "where the parts are solved",
                           choices=("process", "ray", "serial")),
                    Option("workers", "int", None, "worker processes (default: one per part)",
                           minimum=1, nullable=True),
                    Option("seed", "int", 0, "seed of the random partition"),
                    Option("time_limit", "float", 60.0, "seconds per call", minimum=1e-3)),
            summary="POP: max-min fairness with space sharing in k parts solved in parallel"),
    declare("shares", "gandiva-pairing", "alloc.sched.pop.policy:GandivaPairing",
            needs=("throughput", "pairs"),
            params=(Option("seed", "int", None, "seed of the pairing (default: the run's)",
                           nullable=True),),
            summary="Gandiva: random pairs of jobs, equal time for every unit, type-blind"),
)
